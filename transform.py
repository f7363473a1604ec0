"""TVM's generic pass infrastructure (``tvm.transform``), over tecc's one pass engine.

A pass maps an :class:`~tecc.tir.IRModule` to an IRModule: ``new_mod = p(mod)``.
The passes themselves are TIR passes (``tecc.tir.transform.Simplify()`` and the
like); this module holds what composes and configures them::

    seq = tecc.transform.Sequential([tir.transform.StorageFlatten(64), tir.transform.Simplify()])
    with tecc.transform.PassContext(config={"tir.print_after": ["simplify"]}):
        mod = seq(mod)

Everything here is defined in :mod:`tecc.tir.transform` (one pass engine, which the
graph passes of :mod:`tecc.graph.transform` run through too); this module is the
name TVM programs import.  ``Sequential`` composes either kind.
"""
from .errors import TeccTypeError
from .tir.transform import passes as _tir_passes
from .tir.transform.pipeline import FunctionPass, ModulePass, Pass, PassConfigError, PassContext
from .tir.transform.passes import PassInfo, PrintIR, module_pass


def Sequential(passes=None, opt_level=0, name="sequential", required=None):  # noqa: N802 -- TVM's name
    """Passes run in order as one pass (TVM's ``transform.Sequential``).

    TIR passes (``tir.transform.Simplify()``...) give a
    :class:`tecc.tir.transform.Sequential`; graph passes, as TVM programs compose
    Relay passes (``tvm.transform.Sequential([relay.transform.FoldConstant(),
    relay.transform.FuseOps()])``), give a :class:`tecc.graph.transform.Sequential`.

    Raises
    ------
    TeccTypeError
        When the list mixes graph passes and TIR passes (they map different
        modules: run them as two sequences).
    """
    passes = list(passes or ())
    kinds = [getattr(p, "graph_pass", False) for p in passes]  # None: either kind (PrintIR)
    graph = [k for k in kinds if k is not None]
    if graph and all(graph):
        from .graph.transform.passes import Sequential as GraphSequential  # noqa: PLC0415

        return GraphSequential(passes, opt_level, name, required)
    if any(graph):
        kinds = ", ".join(f"{getattr(p, 'name', type(p).__name__)} ({'graph' if g else 'tir'})"
                          for p, g in zip(passes, kinds) if g is not None)
        raise TeccTypeError(f"Sequential {name!r} mixes graph passes and TIR passes ({kinds}); a graph pass maps "
                            "a tecc.graph.Module and a TIR pass an IRModule: run them as two Sequentials")
    return _tir_passes.Sequential(passes, opt_level, name, required)


__all__ = ["FunctionPass", "ModulePass", "Pass", "PassConfigError", "PassContext", "PassInfo", "PrintIR", "Sequential",
           "module_pass"]
