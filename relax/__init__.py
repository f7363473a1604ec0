"""TVM's Relax names for tecc's model layer (:mod:`tecc.graph`): the flow of Relax's
``nn.Module`` export, a pipeline, ``tvm.compile`` and the virtual machine::

    from tecc import relax
    from tecc.relax.frontend import nn

    mod, param_spec = MyModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    mod = relax.get_pipeline("zero")(mod)
    ex = tecc.compile(mod, tecc.target.Target("llvm"))
    vm = relax.VirtualMachine(ex, tecc.cpu())
    out = vm["forward"](x, *params)

A thin facade: the module is a :class:`tecc.graph.Module`, the pipeline tecc's graph
passes, the executable one graph executor per function.
"""
from .vm import Executable, VirtualMachine, compile, get_pipeline  # noqa: F401,A004
from . import frontend  # noqa: F401

__all__ = ["Executable", "VirtualMachine", "compile", "frontend", "get_pipeline"]
