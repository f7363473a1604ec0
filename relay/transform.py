"""TVM's ``relay.transform``: the graph passes as pass objects
(:mod:`tecc.graph.transform`), gated by ``tecc.transform.PassContext(opt_level=...)``::

    mod = relay.transform.InferType()(mod)
    mod = relay.transform.FuseOps(fuse_opt_level=2)(mod)

The names load on first use, so ``import tecc.relay`` stays light.
"""
import importlib

#: Relay name -> (module, attribute)
_NAMES = {
    "InferType": ("tecc.graph.transform", "InferType"),
    "FuseOps": ("tecc.graph.transform", "FuseOps"),
    "FoldConstant": ("tecc.graph.transform", "FoldConstant"),
    "SimplifyInference": ("tecc.graph.transform", "SimplifyInference"),
    "FoldScaleAxis": ("tecc.graph.transform", "FoldScaleAxis"),
    "DeadCodeElimination": ("tecc.graph.transform", "DeadCodeElimination"),
    "EliminateCommonSubexpr": ("tecc.graph.transform", "EliminateCommonSubexpr"),
    "AlterOpLayout": ("tecc.graph.transform", "AlterOpLayout"),
    "CombineParallelDense": ("tecc.graph.transform", "CombineParallelDense"),
    "ConvertLayout": ("tecc.graph.transform", "ConvertLayout"),
    "ToMixedPrecision": ("tecc.graph.transform", "ToMixedPrecision"),
    "Sequential": ("tecc.graph.transform", "Sequential"),
    "function_pass": ("tecc.graph.transform.passes", "function_pass"),
    "PassContext": ("tecc.transform", "PassContext"),
}

__all__ = sorted(_NAMES)


def __getattr__(name):
    entry = _NAMES.get(name)
    if entry is None:
        raise AttributeError(f"module 'tecc.relay.transform' has no attribute {name!r}; it has {__all__}")
    value = getattr(importlib.import_module(entry[0]), entry[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
