"""The graph passes as pass objects of tecc's one pass engine (TVM's
``relay.transform``), and the graph pipeline :func:`build` runs.

Each pass object maps a :class:`tecc.graph.Module` to a module (the same object when
it changed nothing).  Calling one honours the current
:class:`~tecc.transform.PassContext`:

* it runs only when its ``opt_level`` is at most the context's, unless the context's
  ``required_pass`` names it; ``disabled_pass`` turns it off (tecc's name,
  ``"fold_constant"``, or TVM's, ``"FoldConstant"``);
* the config key ``"graph.print_after"`` (``"graph.print_before"``) -- a list of pass
  names or ``"all"`` -- prints the module after (before) those passes, with
  ``(unchanged)`` when the pass returned its input; ``"graph.timing"`` prints the time
  of each.  The printing and timing are the TIR pipeline's engine
  (:func:`tecc.tir.transform.pipeline.run_passes`), shared.

Example::

    seq = Sequential([InferType(), SimplifyInference(), FoldConstant(), FuseOps()])
    with tecc.transform.PassContext(opt_level=3, config={"graph.print_after": ["fuse_ops"]}):
        mod = seq(mod)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import TeccTypeError
from ...tir.transform.pipeline import Pass, PassConfigError, PassContext, run_passes
from ..ir import Function, GraphError, Module
from ..ops._util import target_keys
from .alter_op_layout import alter_op_layout
from .combine_parallel_dense import MIN_BRANCHES, combine_parallel_dense
from .common_subexpr import eliminate_common_subexpr
from .convert_layout import convert_layout
from .dead_code import dead_code_elimination
from .fold_constant import fold_constant
from .fold_scale_axis import fold_scale_axis
from .fuse_ops import MAX_FUSED_OPS, fuse_ops
from .infer_type import infer_type
from .mixed_precision import MIXED_TYPES, to_mixed_precision
from .simplify_inference import simplify_inference
from .sink_reshape import sink_reshape

#: tecc's graph pass name -> TVM's
TVM_NAMES = {
    "infer_type": "InferType",
    "simplify_inference": "SimplifyInference",
    "fold_constant": "FoldConstant",
    "fold_scale_axis": "FoldScaleAxis",
    "dead_code_elimination": "DeadCodeElimination",
    "eliminate_common_subexpr": "EliminateCommonSubexpr",
    "fuse_ops": "FuseOps",
    "alter_op_layout": "AlterOpLayout",
    "combine_parallel_dense": "CombineParallelDense",
    "sink_reshape": "SinkReshape",
    "convert_layout": "ConvertLayout",
    "to_mixed_precision": "ToMixedPrecision",
}


@dataclass(frozen=True)
class GraphPassOptions:
    """What the engine reads of the context for a graph pass run (the graph
    counterpart of :class:`~tecc.tir.transform.pipeline.PassOptions`)."""

    print_after: tuple = ()
    print_before: tuple = ()
    timing: bool = False
    verify: bool = False  # the TIR verifier does not apply to graphs


def _names(ctx, key):
    value = ctx.config.get(key, ())
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TeccTypeError(f"PassContext config {key!r} must be graph pass names or 'all', got {value!r}")
    known = set(TVM_NAMES) | {"all"}
    for v in value:
        if v not in known:
            raise PassConfigError(f"PassContext config {key!r} names the unknown graph pass {v!r}; graph passes: "
                                  f"{sorted(known)}")
    return tuple(value)


def graph_pass_options(ctx: PassContext | None = None) -> GraphPassOptions:
    """The :class:`GraphPassOptions` of ``ctx`` (the current context by default)."""
    ctx = ctx if ctx is not None else PassContext.current()
    timing = ctx.config.get("graph.timing", False)
    if not isinstance(timing, bool):
        raise TeccTypeError(f"PassContext config 'graph.timing' must be a bool, got {timing!r}")
    return GraphPassOptions(_names(ctx, "graph.print_after"), _names(ctx, "graph.print_before"), timing)


def _graph_module(pass_name, mod) -> Module:
    if isinstance(mod, Module):
        return mod
    raise TeccTypeError(f"graph pass {pass_name!r} maps a tecc.graph.Module to a Module, got a "
                        f"{type(mod).__name__}; wrap a function with tecc.graph.Module.from_expr(func)")


def _enabled(ctx: PassContext, name: str, opt_level: int) -> bool:
    names = (name, TVM_NAMES.get(name))
    if any(n in ctx.required_pass for n in names):
        return True
    if any(n in ctx.disabled_pass for n in names):
        return False
    return opt_level <= ctx.opt_level


class GraphPass(Pass):
    """A graph pass: ``p(mod) -> mod`` over :class:`tecc.graph.Module`.

    Parameters
    ----------
    name : str
        tecc's name (``"fold_constant"``), used by ``graph.print_after`` and
        ``disabled_pass``.
    fn : callable
        ``fn(mod) -> mod``.
    opt_level : int
        The least ``PassContext.opt_level`` at which it runs.
    """

    __slots__ = ("name", "fn", "opt_level")
    #: what ``tecc.transform.Sequential`` tells graph passes from TIR passes by
    graph_pass = True

    def __init__(self, name: str, fn: Callable, opt_level: int = 0):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "opt_level", opt_level)

    def __call__(self, mod, options=None):
        mod = _graph_module(self.name, mod)
        if options is None:
            # called on its own: through the engine, so printing and timing apply
            return run_passes(mod, [self], graph_pass_options())
        if not _enabled(PassContext.current(), self.name, self.opt_level):
            return mod
        new = self.fn(mod)
        if not isinstance(new, Module):
            raise TeccTypeError(f"graph pass {self.name!r} returned a {type(new).__name__}, not a tecc.graph.Module")
        return new

    @property
    def info(self):
        from ...tir.transform.passes import PassInfo  # noqa: PLC0415

        return PassInfo(self.opt_level, TVM_NAMES.get(self.name, self.name))

    def __repr__(self):
        return f"GraphPass({self.name!r}, opt_level={self.opt_level})"


class Sequential(Pass):
    """Graph passes run in order as one pass (TVM's ``transform.Sequential`` over
    Relay passes).  Each keeps its own opt_level gate; the context's
    ``disabled_pass`` and ``graph.print_after`` apply to each."""

    __slots__ = ("passes", "opt_level", "name")
    graph_pass = True

    def __init__(self, passes=None, opt_level=0, name="sequential", required=None):
        passes = list(passes or ())
        for i, p in enumerate(passes):
            if not isinstance(p, (GraphPass, Sequential)) and getattr(p, "graph_pass", False) is not None:
                raise TeccTypeError(f"graph Sequential {name!r}: entry {i} is a {type(p).__name__}, not a graph pass "
                                    "(relay.transform.FoldConstant() and the like)")
        object.__setattr__(self, "passes", passes)
        object.__setattr__(self, "opt_level", opt_level)
        object.__setattr__(self, "name", name)

    def __call__(self, mod, options=None):
        mod = _graph_module(self.name, mod)
        if options is None:
            # called on its own: through the engine, so instruments see the sequence too
            return run_passes(mod, [self], graph_pass_options())
        if not _enabled(PassContext.current(), self.name, self.opt_level):
            return mod
        return run_passes(mod, self.passes, options)

    def __repr__(self):
        return f"Sequential({self.name!r}, [{', '.join(p.name for p in self.passes)}])"


def function_pass(pass_func=None, opt_level=None, name=None, required=None):
    """Make a graph pass from ``pass_func(func, mod, ctx) -> func``, applied to each
    graph function of a module (TVM's ``relay.transform.function_pass``).

    Usable as ``function_pass(f)``, ``@function_pass`` or ``@function_pass(opt_level=1)``;
    on a class with a ``transform_function(self, func, mod, ctx)`` method it gives a
    class whose instances are passes, named after the class.  ``ctx`` is the current
    PassContext; the pass runs when ``opt_level`` (default 0) is at most the
    context's.  Fused (primitive) functions are kernels already and are left alone.
    """
    from ...tir.transform.passes import _decorator  # noqa: PLC0415 -- the one decorator of both layers

    del required

    def make(fn, pass_name):
        call = fn.transform_function if hasattr(fn, "transform_function") else fn

        def run(mod):
            ctx = PassContext.current()

            def rewrite(func):
                new = call(func, mod, ctx)
                if not isinstance(new, Function):
                    raise TeccTypeError(f"function pass {pass_name!r} returned a {type(new).__name__}; it must "
                                        "return a graph Function (relay.Function)")
                return new

            return mod.map_functions(rewrite)

        return GraphPass(pass_name, run, opt_level or 0)

    return _decorator("function_pass", pass_func, name, make)


# ---------------------------------------------------------------------------------------
# the constructors (TVM's names)
# ---------------------------------------------------------------------------------------
def _typed(fn):
    """``fn`` with types inferred on its input and output."""

    def run(mod):
        return infer_type(fn(infer_type(mod)))

    return run


def InferType():  # noqa: N802 -- TVM's names
    """Infer the type of every node (records ``checked_type``; the module is unchanged)."""
    return GraphPass("infer_type", infer_type, 0)


def SimplifyInference():  # noqa: N802
    """``batch_norm`` -> per-channel multiply and add, ``dropout`` removed (opt_level 0)."""
    return GraphPass("simplify_inference", _typed(simplify_inference), 0)


def FoldConstant():  # noqa: N802
    """Precompute every value that depends on constants only (opt_level 2)."""
    return GraphPass("fold_constant", _typed(fold_constant), 2)


def SinkReshape():  # noqa: N802
    """Move reshapes below the element-wise operators after them, so those fuse into
    the kernel before the reshape (opt_level 3; see :mod:`.sink_reshape`)."""
    return GraphPass("sink_reshape", _typed(sink_reshape), 3)


def FoldScaleAxis():  # noqa: N802
    """Fold per-output-channel scales and shifts after conv2d / dense into its
    weight and a bias (opt_level 3)."""
    return GraphPass("fold_scale_axis", _typed(fold_scale_axis), 3)


def AlterOpLayout():  # noqa: N802
    """On a CPU target (``Target.current()``), run each NCHW convolution in channel
    blocks (``nn.contrib_conv2d_NCHWc``) and keep that layout between the operators
    that take it (opt_level 3; see :mod:`.alter_op_layout`)."""
    return GraphPass("alter_op_layout", _typed(alter_op_layout), 3)


def ConvertLayout(desired_layouts):  # noqa: N802
    """Run the convolutions in ``desired_layouts`` (``{"nn.conv2d": ["NHWC", "HWIO"]}``)
    and keep their values so while the operators after them can take it (opt_level 3;
    see :mod:`.convert_layout`).  The layouts are checked here."""
    from .convert_layout import _check_desired  # noqa: PLC0415

    _check_desired(desired_layouts)
    return GraphPass("convert_layout", _typed(lambda mod: convert_layout(mod, desired_layouts)), 3)


def CombineParallelDense(min_num_branches=MIN_BRANCHES, to_batch=False):  # noqa: N802
    """Combine the dense calls that read one input with constant weights into one
    dense and slices of its output (opt_level 4, as in TVM: not part of
    :data:`GRAPH_PIPELINE`; see :mod:`.combine_parallel_dense`).  TVM's arguments:
    ``min_num_branches`` (the fewest calls combined) and ``to_batch`` (TVM's
    batch_matmul form; tecc concatenates the weights instead, and refuses True).

    The default pipeline runs it on GPU targets only (:data:`GRAPH_PIPELINE`, opt
    level 3), where each kernel launch of a small model costs about as much as its
    work and the slices fuse into the products that read them (``fuse_ops``'
    ``fuse_inputs``): an attention's query, key and value projections are one kernel
    there.  On CPUs it did not pay: on the project's 2-core AVX2 VM (2026-11-28) the
    decoder layer of ``benchmarks/models_cpu.py`` took 2.391 ms combined against
    2.382 ms separate (medians of 15 interleaved rounds; the combined 128 x 256 x
    768 and 128 x 256 x 2048 products ran at 134 and 128 GFLOP/s, the separate ones
    at 125-135): the products are bound by their register tile, not by the number
    of tasks.  Run it explicitly (after ``EliminateCommonSubexpr``, which makes a
    shared input one node) to compare on other machines."""
    if to_batch:
        raise GraphError("CombineParallelDense(to_batch=True) is not supported: tecc combines the weights into one "
                         "dense; pass to_batch=False")
    if isinstance(min_num_branches, bool) or not isinstance(min_num_branches, int) or min_num_branches < 2:
        raise GraphError(f"CombineParallelDense: min_num_branches must be an int of at least 2, got "
                         f"{min_num_branches!r}")
    return GraphPass("combine_parallel_dense",
                     _typed(lambda mod: combine_parallel_dense(mod, min_num_branches)), 4)


def ToMixedPrecision(mixed_precision_type="float16", missing_op_mode=1):  # noqa: N802
    """Compute a float32 model in ``mixed_precision_type`` (``"float16"`` or
    ``"bfloat16"``), its products on tensor cores, every sum in float32 (opt_level 0;
    see :mod:`.mixed_precision`).  The config key
    ``"relay.ToMixedPrecision.keep_orig_output_dtype"`` casts the outputs back to
    float32.  ``missing_op_mode`` is TVM's (0, 1 or 2); every tecc operator takes
    both types, so none is missing."""
    if missing_op_mode not in (0, 1, 2):
        raise GraphError(f"ToMixedPrecision: missing_op_mode must be 0, 1 or 2 (TVM's), got {missing_op_mode!r}")
    if mixed_precision_type not in MIXED_TYPES:
        raise GraphError(f"ToMixedPrecision: mixed_precision_type must be one of {', '.join(map(repr, MIXED_TYPES))}, "
                         f"got {mixed_precision_type!r}")

    def run(mod):
        ctx = PassContext.current()
        keep = bool(ctx.config.get("relay.ToMixedPrecision.keep_orig_output_dtype", False)) if ctx else False
        return to_mixed_precision(mod, mixed_precision_type, keep)

    return GraphPass("to_mixed_precision", run, 0)


def _combine_parallel_dense_on_gpus():
    """:func:`CombineParallelDense` as the default pipeline runs it: at opt_level 3,
    on GPU targets only (``Target.current()``; see its docstring for why)."""
    def run(mod):
        return combine_parallel_dense(mod, MIN_BRANCHES) if "gpu" in target_keys() else mod

    return GraphPass("combine_parallel_dense", _typed(run), 3)


def DeadCodeElimination(inline_once=False, ignore_impurity=False):  # noqa: N802
    """Remove what no output depends on (opt_level 1)."""
    return GraphPass("dead_code_elimination", _typed(dead_code_elimination), 1)


def EliminateCommonSubexpr(fskip=None):  # noqa: N802
    """Merge equal computations (opt_level 3).  ``fskip(call) -> bool`` keeps a call
    out of the merging."""
    if fskip is not None and not callable(fskip):
        raise TeccTypeError(f"EliminateCommonSubexpr: fskip must be a function of a call, got {fskip!r}")
    return GraphPass("eliminate_common_subexpr", _typed(lambda mod: eliminate_common_subexpr(mod, fskip)), 3)


def FuseOps(fuse_opt_level=-1, max_depth=MAX_FUSED_OPS):  # noqa: N802
    """Group operators into fused kernels (runs at every opt_level; with
    ``fuse_opt_level=-1`` the context's opt_level says how much: 0 fuses nothing)."""
    if not isinstance(fuse_opt_level, int):
        raise GraphError(f"FuseOps: fuse_opt_level must be an int, got {fuse_opt_level!r}")

    def run(mod):
        level = fuse_opt_level if fuse_opt_level >= 0 else PassContext.current().opt_level
        return fuse_ops(mod, level, max_depth)

    return GraphPass("fuse_ops", run, 0)


# ---------------------------------------------------------------------------------------
# the pipeline of a model build
# ---------------------------------------------------------------------------------------
GRAPH_PIPELINE = [
    InferType(),                 # first: every pass below reads the operands' types
    SimplifyInference(),         # batch_norm -> multiply/add before the passes that fold those; dropout gone
    FoldConstant(),              # opt 2: weight transforms, the per-channel scale/shift batch norm left,
                                 # shape subgraphs; before FoldScaleAxis, which needs them as constants
    SinkReshape(),               # opt 3: a bias/activation after a dense's reshape back moves next to the
                                 # dense; after folding (its operands are constants then), before
                                 # FoldScaleAxis, which makes that bias a bias_add of the dense
    FoldScaleAxis(),             # opt 3: per-channel multiply/add after conv2d/dense into its weight and bias
    FoldConstant(),              # opt 2: the weight * scale products FoldScaleAxis made
    AlterOpLayout(),             # opt 3, CPU targets: conv2d in channel blocks (NCHWc); it takes constant
                                 # NCHW weights, so after FoldScaleAxis and the folding of its products
    FoldConstant(),              # opt 2: the weights AlterOpLayout re-lays out
    EliminateCommonSubexpr(),    # opt 3: after folding, so equal folded constants merge too
    _combine_parallel_dense_on_gpus(),  # opt 3, GPU targets: the dense calls of one input (q, k, v) as one;
                                 # after EliminateCommonSubexpr, which makes their shared input one node
    DeadCodeElimination(),       # opt 1: drops what the rewrites above left unused
    FuseOps(),                   # last: groups what remains into kernels (no fusion at opt_level 0)
]


def optimize(mod: Module) -> Module:
    """Run :data:`GRAPH_PIPELINE` under the current PassContext."""
    return run_passes(_graph_module("optimize", mod), GRAPH_PIPELINE, graph_pass_options())


__all__ = [
    "AlterOpLayout", "CombineParallelDense", "ConvertLayout", "DeadCodeElimination", "EliminateCommonSubexpr", "FoldConstant", "FoldScaleAxis", "FuseOps", "GRAPH_PIPELINE",
    "GraphPass", "GraphPassOptions", "InferType", "function_pass", "Sequential", "SimplifyInference", "SinkReshape", "TVM_NAMES", "graph_pass_options",
    "optimize", "ToMixedPrecision",
]
