"""Converters of reductions, and of data movement, scans, sorting and scatters."""
from __future__ import annotations

import numpy as np

from .common import _normalize_axis, _prod
from .convert_shape import _axes_of


# --- reductions ------------------------------------------------------------------------------
def _reduce_axes(ctx, node, inputs, rank):
    """(axis tuple or None for all, keepdims) of a Reduce* node; ``False`` for axis
    means the node is a no-op (noop_with_empty_axes)."""
    attr_until = 13 if node.op_type == "ReduceSum" else 18
    axes = _axes_of(ctx, node, inputs, attr_until)
    keepdims = node.flag("keepdims", 1)
    if not axes:
        if node.flag("noop_with_empty_axes", 0):
            return False, keepdims
        return None, keepdims
    return tuple(sorted({_normalize_axis(a, rank, node, "axes entry") for a in axes})), keepdims


def _reduce(op_name, pre=None, post=None):
    def convert(ctx, node, inputs):
        x = inputs[0]
        axis, keepdims = _reduce_axes(ctx, node, inputs, ctx.rank(x))
        if axis is False:
            return x
        if op_name in ("max", "min") and ctx.dtype_of(x) == "bool":
            # bool (opset 20): the max / min of 0s and 1s, as bool again
            out = ctx.call(op_name, ctx.cast(x, "uint8"), axis=axis, keepdims=keepdims)
            return ctx.cast(out, "bool")
        if pre == "square":
            x = ctx.call("multiply", x, x)
        elif pre == "abs":
            x = ctx.call("abs", x)
        out = ctx.call(op_name, x, axis=axis, keepdims=keepdims)
        if post == "sqrt":
            out = ctx.call("sqrt", out)
        elif post == "log":
            out = ctx.call("log", out)
        return out

    return convert


def _reduce_log_sum_exp(ctx, node, inputs):
    x = inputs[0]
    axis, keepdims = _reduce_axes(ctx, node, inputs, ctx.rank(x))
    if axis is False:
        return x
    if not ctx.dtype_of(x).startswith(("float", "bfloat")):
        node.fail(f"the input is {ctx.dtype_of(x)}; tecc computes ReduceLogSumExp of floating-point tensors: Cast "
                  "it to float32 first")
    # log(sum(exp(x - m))) + m with m the maximum (no overflow); an m of +-inf (a row of -inf, or empty) is
    # replaced by 0 so that the row gives log(sum(exp(x))) itself (-inf for an empty row)
    m = ctx.call("max", x, axis=axis, keepdims=True)
    m = ctx.call("where", ctx.call("isfinite", m), m, ctx.scalar(0, x))
    total = ctx.call("sum", ctx.call("exp", ctx.call("subtract", x, m)), axis=axis, keepdims=keepdims)
    if not keepdims:
        m = ctx.reshape(m, ctx.shape(total))
    return ctx.call("add", ctx.call("log", total), m)


def _arg(op_name):
    def convert(ctx, node, inputs):
        x = inputs[0]
        axis = _normalize_axis(node.attr("axis", 0), ctx.rank(x), node)
        last = node.flag("select_last_index", 0)
        out = ctx.call(op_name, x, axis=(axis,), keepdims=node.flag("keepdims", 1),
                       select_last_index=True if last else None)
        return ctx.cast(out, "int64")

    return convert


# --- data movement, scans, sorting, scatters ------------------------------------------------
def _block_size(node):
    bs = node.required("blocksize")
    if int(bs) < 1:
        node.fail(f"blocksize {bs} must be >= 1")
    return int(bs)


def _four_d(ctx, node, x):
    if ctx.rank(x) != 4:
        node.fail(f"the input has shape {ctx.shape(x)}; {node.op_type} takes a 4-D NCHW tensor")


def _blocks(op):
    """DepthToSpace, and SpaceToDepth (its ``mode`` from SpaceToDepth-28 on)."""
    def convert(ctx, node, inputs):
        x = inputs[0]
        _four_d(ctx, node, x)
        mode = node.attr("mode", "DCR")
        if mode not in ("DCR", "CRD"):
            node.fail(f"mode {mode!r} is not DCR or CRD")
        return ctx.call(op, x, block_size=_block_size(node), mode=mode)

    return convert


_depth_to_space = _blocks("nn.depth_to_space")
_space_to_depth = _blocks("nn.space_to_depth")


def _cumsum(ctx, node, inputs):
    """CumSum, and CumProd-26 (the same attributes: ``exclusive``, ``reverse``)."""
    x, axis_in = inputs
    if ctx.rank(x) == 0:
        node.fail(f"the input is a scalar; {node.op_type} needs an axis")
    axis = np.asarray(ctx.value(axis_in, "axis (input 1)")).reshape(-1)
    if axis.size != 1:
        node.fail(f"axis (input 1) must hold one integer, got {axis.tolist()}")
    axis = _normalize_axis(axis[0], ctx.rank(x), node)
    reverse = node.flag("reverse", 0)
    if reverse:
        x = ctx.call("reverse", x, axis=axis)
    op = "cumprod" if node.op_type == "CumProd" else "cumsum"
    out = ctx.call(op, x, axis=axis, exclusive=node.flag("exclusive", 0))
    return ctx.call("reverse", out, axis=axis) if reverse else out


def _topk(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    if not xs:
        node.fail("the input is a scalar; TopK needs an axis")
    axis = _normalize_axis(node.attr("axis", -1), len(xs), node)
    if node.opset < 10:
        k = int(node.required("k"))
    else:
        given = np.asarray(ctx.value(inputs[1], "K (input 1)")).reshape(-1)
        if given.size != 1:
            node.fail(f"K (input 1) must hold one integer, got {given.tolist()}")
        k = int(given[0])
    if not 0 <= k <= xs[axis]:
        node.fail(f"K = {k} must be in [0, {xs[axis]}] (the size of axis {axis} of the input {xs})")
    if ctx.dtype_of(x) == "bool":
        node.fail("the input is bool; TopK takes numbers")
    if k == 0:  # no elements: empty values and indices
        shape = xs[:axis] + (0,) + xs[axis + 1:]
        return [ctx.empty(shape, ctx.dtype_of(x)), ctx.empty(shape, "int64")]
    # sorted=0 lets the order be anything: the sorted order is one
    out = ctx.call("topk", x, k=k, axis=axis, ret_type="both", is_ascend=not node.flag("largest", 1),
                   dtype="int64")
    return [ctx.item(out, 0), ctx.item(out, 1)]


def _trilu(ctx, node, inputs):
    x = inputs[0]
    if ctx.rank(x) < 2:
        node.fail(f"the input has shape {ctx.shape(x)}; Trilu takes matrices (rank 2 or more)")
    k = ctx.optional_input(inputs, 1)
    if k is None:
        k = ctx.const(0, "int64")
    elif ctx.is_const(k):
        value = np.asarray(ctx.value(k, "k (input 1)")).reshape(-1)
        if value.size != 1:
            node.fail(f"k (input 1) must hold one integer, got {value.tolist()}")
        k = ctx.const(value[0], "int64")
    return ctx.call("trilu", x, k, upper=node.flag("upper", 1))


#: ONNX's reduction attribute of the scatters -> tecc's
_SCATTER_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _scatter_reduction(node):
    reduction = node.attr("reduction", "none")
    if reduction not in _SCATTER_REDUCTIONS:
        node.fail(f"reduction {reduction!r} is not one of {', '.join(_SCATTER_REDUCTIONS)}")
    return _SCATTER_REDUCTIONS[reduction]


def _scatter_elements(ctx, node, inputs):
    data, indices, updates = inputs
    axis = _normalize_axis(node.attr("axis", 0), ctx.rank(data), node)
    return ctx.call("scatter_elements", data, indices, ctx.cast(updates, ctx.dtype_of(data)), axis=axis,
                    reduction=_scatter_reduction(node))


def _scatter_nd(ctx, node, inputs):
    data, indices, updates = inputs
    ishape = ctx.shape(indices)
    if not ishape:
        node.fail("indices is a scalar; it needs a last axis holding the index tuples")
    # ONNX keeps the index tuples along the last axis, the graph operator along the first
    rank = len(ishape)
    if rank > 1:
        indices = ctx.call("transpose", indices, axes=(rank - 1,) + tuple(range(rank - 1)))
    return ctx.call("scatter_nd", data, indices, ctx.cast(updates, ctx.dtype_of(data)),
                    mode=_scatter_reduction(node))


def _one_hot(ctx, node, inputs):
    indices, depth, values = inputs
    depth = np.asarray(ctx.value(depth, "depth (input 1)")).reshape(-1)
    if depth.size != 1:
        node.fail(f"depth (input 1) must hold one number, got {depth.tolist()}")
    depth = int(depth[0])
    if depth < 1:
        node.fail(f"depth {depth} must be >= 1")
    vshape = ctx.shape(values)
    if _prod(vshape) != 2 or len(vshape) != 1:
        node.fail(f"values (input 2) must be the 2 numbers [off_value, on_value], got shape {vshape}")
    if ctx.dtype_of(indices) not in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        indices = ctx.cast(indices, "int64")  # ONNX casts non-integer indices to int64
    ndim = ctx.rank(indices)
    axis = int(node.attr("axis", -1))
    if not -ndim - 1 <= axis <= ndim:
        node.fail(f"axis {axis} is out of range for indices of rank {ndim} (valid: {-ndim - 1}..{ndim})")
    axis = axis + ndim + 1 if axis < 0 else axis
    if ctx.dtype_of(indices).startswith("int"):
        # a negative index counts from the end of the depth
        shifted = ctx.call("add", indices, ctx.scalar(depth, indices))
        indices = ctx.call("where", ctx.call("less", indices, ctx.scalar(0, indices)), shifted, indices)
    if ctx.is_const(values):
        off, on = (ctx.const(v, ctx.dtype_of(values)) for v in ctx.value(values, "values (input 2)"))
    else:
        off, on = (ctx.reshape(ctx.call("strided_slice", values, begin=(i,), end=(i + 1,)), ()) for i in (0, 1))
    return ctx.call("one_hot", indices, on, off, depth=depth, axis=axis, dtype=ctx.dtype_of(values))


# --- operators whose output shape depends on values --------------------------------------
# tecc compiles static shapes, so the values that decide the shape must be known when
# compiling (a constant, an initializer, a shape computation); the ONNX backend binds a
# graph input such a value comes from at the first run (the error names it)
def _shape_deciding(ctx, node, x, what):
    return np.asarray(ctx.value(x, f"{what}, whose values decide the output's shape,"))


def _non_zero(ctx, node, inputs):
    x = _shape_deciding(ctx, node, inputs[0], "X (input 0)")
    if x.ndim == 0:
        return ctx.const(np.zeros((0, int(x != 0)), "int64"), "int64")
    return ctx.const(np.stack(np.nonzero(x)).astype("int64").reshape(x.ndim, -1), "int64")


def _compress(ctx, node, inputs):
    # the selected slices, gathered by constant positions; the data may be computed at run time
    x = inputs[0]
    cond = _shape_deciding(ctx, node, inputs[1], "condition (input 1)").reshape(-1).astype(bool)
    axis = node.attr("axis", None)
    if axis is None:
        x = ctx.reshape(x, (_prod(ctx.shape(x)),))
        axis = 0
    axis = _normalize_axis(int(axis), ctx.rank(x), node)
    n = ctx.shape(x)[axis]
    if cond.size > n:
        node.fail(f"the condition has {cond.size} values for an axis of {n}; it may have at most as many")
    picked = np.nonzero(cond)[0]
    return ctx.call("take", x, ctx.const(picked.astype("int64"), "int64"), axis=axis)


def _unique(ctx, node, inputs):
    # every output is decided by the input's values: all constants
    x = _shape_deciding(ctx, node, inputs[0], "X (input 0)")
    axis = node.attr("axis", None)
    flat = axis is None
    if flat:
        x, axis = x.reshape(-1), 0
    else:
        axis = _normalize_axis(int(axis), x.ndim, node)
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                          axis=None if flat else axis)
    inverse = np.asarray(inverse).reshape(-1)
    if not node.flag("sorted", 1):  # in the order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, counts, inverse = first[order], counts[order], rank[inverse]
        y = np.take(x, first, axis=axis)
    outs = [ctx.const(y, ctx.dtype_of(inputs[0]))] + [ctx.const(a.astype("int64"), "int64")
                                                      for a in (first, inverse, counts)]
    return outs[:max(1, len(node.outputs))]
