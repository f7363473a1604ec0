"""TVM's generic pass infrastructure (``tvm.transform``), over tecc's one pass engine.

A pass maps an :class:`~tecc.tir.IRModule` to an IRModule: ``new_mod = p(mod)``.
The passes themselves are TIR passes (``tecc.tir.transform.Simplify()`` and the
like); this module holds what composes and configures them::

    seq = tecc.transform.Sequential([tir.transform.StorageFlatten(64), tir.transform.Simplify()])
    with tecc.transform.PassContext(config={"tir.print_after": ["simplify"]}):
        mod = seq(mod)

Everything here is defined in :mod:`tecc.tir.transform` (tecc has one IR, so one
engine); this module is the name TVM programs import.
"""
from .tir.transform.pipeline import FunctionPass, ModulePass, Pass, PassConfigError, PassContext
from .tir.transform.passes import PassInfo, Sequential, module_pass

__all__ = ["FunctionPass", "ModulePass", "Pass", "PassConfigError", "PassContext", "PassInfo", "Sequential",
           "module_pass"]
