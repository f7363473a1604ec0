"""TVM's ``tvm.contrib.graph_executor``: :class:`GraphModule` and :func:`create`.

Classic TVM code runs a built model through this wrapper::

    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tecc.cpu(0)))
    m.set_input("data", x)
    m.run()
    y = m.get_output(0).numpy()

The work is done by :class:`tecc.runtime.graph_executor.GraphExecutor`; this module
only gives it TVM's names.
"""
from __future__ import annotations

from ..errors import TeccError
from ..runtime.graph_executor import GraphExecutor


def create(graph_json_str, libmod, device) -> "GraphModule":
    """A :class:`GraphModule` running ``graph_json_str`` with the kernels of ``libmod``.

    Parameters
    ----------
    graph_json_str : str
        The graph JSON (``factory.get_graph_json()``).
    libmod : runtime.Module
        The kernel module (``factory.get_lib()``).
    device : Device or list of one Device
        Where to run.

    Returns
    -------
    GraphModule
        Params are not set: give them with ``set_input(**params)`` or
        ``load_params``.
    """
    return GraphModule(GraphExecutor(graph_json_str, libmod, device))


class GraphModule:
    """TVM's wrapper of a graph executor (``GraphModule(factory["default"](dev))``).

    Parameters
    ----------
    module : GraphExecutor
        What ``factory["default"](dev)`` returns.
    """

    def __init__(self, module):
        if not isinstance(module, GraphExecutor):
            raise TeccError(f"GraphModule wraps the executor that factory['default'](dev) returns, got "
                            f"{type(module).__name__}; write graph_executor.GraphModule(lib['default'](dev))")
        self.module = module

    def set_input(self, key=None, value=None, **params) -> None:
        """Set input ``key`` (name or index) to ``value``, and inputs by name from
        ``params``; a wrong shape or dtype, or an unknown name, raises."""
        self.module.set_input(key, value, **params)

    def run(self, **input_dict) -> None:
        """Set ``input_dict`` (if given) and run the model."""
        self.module.run(**input_dict)

    def get_num_outputs(self) -> int:
        """The number of outputs."""
        return self.module.get_num_outputs()

    def get_num_inputs(self) -> int:
        """The number of user inputs (params not counted)."""
        return self.module.get_num_inputs()

    def get_input(self, index, out=None):
        """Input ``index`` (an index or a name); copied into ``out`` when given."""
        return self.module.get_input(index, out)

    def get_input_index(self, name: str) -> int:
        """The index of input ``name``, -1 when there is none."""
        return self.module.get_input_index(name)

    def get_input_info(self):
        """``(shape_dict, dtype_dict)`` of the user inputs."""
        return self.module.get_input_info()

    def get_output(self, index: int, out=None):
        """Output ``index`` (an NDArray); copied into ``out`` when given."""
        return self.module.get_output(index, out)

    def load_params(self, params_bytes) -> None:
        """Set params from ``.npz`` bytes (``runtime.graph_executor.save_param_dict``)."""
        self.module.load_params(params_bytes)

    def __getitem__(self, key: str):
        """The executor's function ``key`` (``"run"``, ``"set_input"``...)."""
        return self.module[key]

    def profile(self, repeat: int = 5, number: int = 1):
        """Each kernel call timed on its own (TVM's debug executor): a
        :class:`~tecc.runtime.graph_executor.GraphProfile` (see
        :meth:`GraphExecutor.profile <tecc.runtime.graph_executor.GraphExecutor.profile>`)."""
        return self.module.profile(repeat, number)

    def benchmark(self, device, func_name: str = "run", repeat: int = 5, number: int = 5, min_repeat_ms=None,
                  end_to_end: bool = False, **kwargs):
        """Time the model: ``repeat`` samples of the mean of ``number`` runs.

        Parameters
        ----------
        device : Device
            The executor's device.
        func_name : str
            ``"run"``.
        repeat, number : int
        min_repeat_ms : float, optional
            Grow ``number`` until a sample lasts at least this long.
        end_to_end : bool
            Count copying inputs in and outputs out as well.
        **kwargs
            Inputs by name, set before timing.

        Returns
        -------
        ProfileResult
            ``mean``, ``median``, ``std``, ``min``, ``max``, ``results`` (seconds).
        """
        return self.module.benchmark(device, func_name, repeat, number, min_repeat_ms, end_to_end, **kwargs)

    def __repr__(self) -> str:
        return f"<tecc.contrib.graph_executor.GraphModule of {self.module!r}>"


__all__ = ["GraphModule", "create"]
