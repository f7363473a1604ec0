"""TVM's ``tvm.contrib.cuda_graph.cuda_graph_executor``: run a built model as one CUDA graph.

A model of many small kernels spends much of its time in the host's launches (tecc's
launch plan is Python, as torch's eager dispatch is).  Captured once, the whole model
replays with one launch::

    from tecc.contrib.cuda_graph import cuda_graph_executor
    m = cuda_graph_executor.create(lib.get_graph_json(), lib.get_lib(), tecc.cuda(0))
    m.set_input(**lib.get_params())
    m.set_input("data", x)
    m.run()            # the first run captures the graph, later runs replay it
    y = m.get_output(0).numpy()

The work is done by :meth:`tecc.runtime.graph_executor.GraphExecutor.capture_cuda_graph`
and :meth:`~tecc.runtime.graph_executor.GraphExecutor.run_cuda_graph`; this module
gives them TVM's names.  A GPU is needed: without one the capture is refused with a
message (use ``graph_executor`` there).
"""
from __future__ import annotations

from ...runtime.graph_executor import GraphExecutor
from ..graph_executor import GraphModule


def create(graph_json_str, libmod, device) -> "GraphModuleCudaGraph":
    """A :class:`GraphModuleCudaGraph` running ``graph_json_str`` with the kernels of
    ``libmod`` on ``device`` (a CUDA device, or a list of one); params are given with
    ``set_input(**params)``, as for :func:`tecc.contrib.graph_executor.create`."""
    return GraphModuleCudaGraph(GraphExecutor(graph_json_str, libmod, device))


class GraphModuleCudaGraph(GraphModule):
    """A :class:`~tecc.contrib.graph_executor.GraphModule` whose :meth:`run` captures
    the model into a CUDA graph the first time and replays it after."""

    def __init__(self, module):
        super().__init__(module)
        self._cuda_graph_captured = False

    def capture_cuda_graph(self) -> None:
        """Run the model once, then record its kernel calls into one CUDA graph."""
        self.module.capture_cuda_graph()
        self._cuda_graph_captured = True

    def run_cuda_graph(self) -> None:
        """Replay the captured graph."""
        self.module.run_cuda_graph()

    def run(self, **input_dict) -> None:
        """Set ``input_dict`` (by name), then capture (first call) or replay the graph."""
        if input_dict:
            self.set_input(**input_dict)
        if not self._cuda_graph_captured:
            self.capture_cuda_graph()
        else:
            self.run_cuda_graph()
