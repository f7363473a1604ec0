"""Converters of shape and layout operators: reshape, transpose, concat, split,
slice, gather, squeeze, expand, tile, where, pad."""
from __future__ import annotations

import numpy as np

from ...ir import Constant, Tuple
from .common import _normalize_axis, _prod


# --- shape and layout operators -----------------------------------------------------------
def _flatten(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axis = int(node.attr("axis", 1))
    axis = axis + len(xs) if axis < 0 else axis
    if not 0 <= axis <= len(xs):
        node.fail(f"axis {node.attr('axis')} is out of range for rank {len(xs)}")
    return ctx.reshape(x, (_prod(xs[:axis]), _prod(xs[axis:])))


def _reshape(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    target = [int(d) for d in ctx.value(inputs[1], "the shape (input 1)").reshape(-1)]
    allowzero = node.flag("allowzero", 0)
    out, infer_at = [], None
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if i >= len(xs):
                node.fail(f"shape {tuple(target)} copies dimension {i} (0) of an input of rank {len(xs)}")
            out.append(xs[i])
        elif d == -1:
            if infer_at is not None:
                node.fail(f"shape {tuple(target)} has more than one -1")
            infer_at = i
            out.append(1)
        elif d < 0:
            node.fail(f"shape {tuple(target)} has a negative dimension {d}")
        else:
            out.append(d)
    size = _prod(xs)
    if infer_at is not None:
        rest = _prod(out)
        if rest == 0 or size % rest:
            node.fail(f"cannot reshape {xs} into {tuple(target)}")
        out[infer_at] = size // rest
    if _prod(out) != size:
        node.fail(f"cannot reshape {xs} ({size} elements) into {tuple(out)} ({_prod(out)} elements)")
    if size == 0:  # (the graph's reshape reads a 0 in newshape as "copy this axis", as TVM's does)
        return ctx.empty(tuple(out), ctx.dtype_of(x))
    return ctx.reshape(x, out)


def _transpose(ctx, node, inputs):
    x = inputs[0]
    rank = ctx.rank(x)
    perm = tuple(int(p) for p in node.attr("perm", list(range(rank))[::-1]))
    if sorted(perm) != list(range(rank)):
        node.fail(f"perm {perm} is not a permutation of the {rank} axes")
    if perm == tuple(range(rank)):
        return x
    return ctx.call("transpose", x, axes=perm)


def _concat(ctx, node, inputs):
    parts = [x for x in inputs if x is not None]
    axis = _normalize_axis(node.required("axis"), ctx.rank(parts[0]), node)
    parts = [x for x in parts if ctx.shape(x)[axis] != 0] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    return ctx.call("concatenate", ctx.tuple(parts), axis=axis)


def _split(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axis = _normalize_axis(node.attr("axis", 0), len(xs), node)
    dim = xs[axis]
    if node.opset >= 13:
        given = ctx.optional_input(inputs, 1)
        sizes = None if given is None else [int(s) for s in ctx.value(given, "split (input 1)").reshape(-1)]
    else:
        sizes = node.attr("split")
        sizes = None if sizes is None else [int(s) for s in sizes]
    if sizes is None:
        num = int(node.attr("num_outputs", len(node.outputs)))
        chunk = -(-dim // num)
        sizes = [chunk] * (num - 1) + [dim - chunk * (num - 1)]
    if sum(sizes) != dim or any(s < 0 for s in sizes):
        node.fail(f"split sizes {sizes} do not divide axis {axis} of size {dim}")
    if len(sizes) != len(node.outputs):
        node.fail(f"{len(sizes)} split sizes {sizes} for {len(node.outputs)} outputs")
    filled = [s for s in sizes if s]  # an empty piece is an empty constant (ctx.empty)
    if len(filled) <= 1:
        pieces = [x] if filled else []
    else:
        sections = len(filled) if len(set(filled)) == 1 else tuple(int(i) for i in np.cumsum(filled)[:-1])
        out = _split_call(ctx, x, sections, axis, filled)
        pieces = [ctx.item(out, i) for i in range(len(filled))]
    pieces.reverse()
    return [pieces.pop() if s else ctx.empty(xs[:axis] + (0,) + xs[axis + 1:], ctx.dtype_of(x)) for s in sizes]


def _split_call(ctx, x, sections, axis, sizes):
    if isinstance(x, Constant):
        cuts = np.cumsum(sizes)[:-1]
        return Tuple([Constant(np.array(p, order="C")) for p in np.split(x.data, cuts, axis=axis)])
    return ctx.call("split", x, indices_or_sections=sections, axis=axis)


def _slice(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    if node.opset < 10:
        starts, ends = node.required("starts"), node.required("ends")
        axes = node.attr("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = ctx.value(inputs[1], "starts (input 1)").reshape(-1).tolist()
        ends = ctx.value(inputs[2], "ends (input 2)").reshape(-1).tolist()
        axes_in, steps_in = ctx.optional_input(inputs, 3), ctx.optional_input(inputs, 4)
        axes = list(range(len(starts))) if axes_in is None else ctx.value(axes_in, "axes (input 3)").reshape(
            -1).tolist()
        steps = [1] * len(starts) if steps_in is None else ctx.value(steps_in, "steps (input 4)").reshape(-1).tolist()
    if not len(starts) == len(ends) == len(axes) == len(steps):
        node.fail(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    picks = {}
    for a, s, e, st in zip(axes, starts, ends, steps):
        a = _normalize_axis(a, rank, node, "axis")
        if int(st) == 0:
            node.fail(f"step 0 on axis {a}")
        picks[a] = (s, e, st, slice(int(s), int(e), int(st)).indices(xs[a]))
    if isinstance(x, Constant):
        # a shape computation (torch's flatten slices Shape(x)[0:0] to concatenate): numpy's,
        # where an empty piece is an ordinary value
        data = x.data
        for a, (_, _, _, bounds) in picks.items():
            data = np.take(data, list(range(*bounds)), axis=a)
        return Constant(np.ascontiguousarray(data))
    begin, end, stride = [0] * rank, list(xs), [1] * rank
    reversed_axes = {}
    for a, (s, e, st, (start, stop, step)) in picks.items():
        count = len(range(start, stop, step))
        if count == 0:
            return ctx.empty(tuple(len(range(*picks[i][3])) if i in picks else d for i, d in enumerate(xs)),
                             ctx.dtype_of(x))
        if step > 0:
            begin[a], end[a], stride[a] = start, start + (count - 1) * step + 1, step
        else:
            reversed_axes[a] = list(range(start, stop, step))
    out = x
    if begin != [0] * rank or end != list(xs) or stride != [1] * rank:
        out = ctx.call("strided_slice", out, begin=tuple(begin), end=tuple(end), strides=tuple(stride))
    for a, picks in sorted(reversed_axes.items()):
        out = ctx.call("take", out, ctx.const(picks, "int64"), axis=a, mode="clip")
    return out


def _from_the_end(ctx, idx, size):
    """Constant ``indices`` (int64) with the negative ones read from the end of an axis
    of ``size``: ``(given, wrapped)``."""
    vals = ctx.value(idx, "indices").astype("int64")
    return vals, np.where(vals < 0, vals + size, vals)


def _gather(ctx, node, inputs):
    data, idx = inputs
    ds = ctx.shape(data)
    axis = _normalize_axis(node.attr("axis", 0), len(ds), node)
    if ctx.is_const(idx):
        vals, fixed = _from_the_end(ctx, idx, ds[axis])
        if np.any((fixed < 0) | (fixed >= ds[axis])):
            node.fail(f"indices {vals.reshape(-1)[:8].tolist()} are out of range for axis {axis} of size {ds[axis]}")
        return ctx.call("take", data, Constant(fixed), axis=axis, mode="clip")
    # indices computed at run time: "wrap" reads a negative index from the end, as ONNX says
    return ctx.call("take", data, idx, axis=axis, mode="wrap")


def _gather_elements(ctx, node, inputs):
    data, idx = inputs
    ds = ctx.shape(data)
    axis = _normalize_axis(node.attr("axis", 0), len(ds), node)
    if ctx.is_const(idx):
        idx = Constant(_from_the_end(ctx, idx, ds[axis])[1])
    return ctx.call("gather", data, idx, axis=axis)


def _axes_of(ctx, node, inputs, attr_until):
    """The ``axes`` of Squeeze / Unsqueeze / reductions: an attribute before opset
    ``attr_until``, input 1 from it on (None when not given)."""
    if node.opset < attr_until:
        axes = node.attr("axes")
    else:
        given = ctx.optional_input(inputs, 1)
        axes = None if given is None else ctx.value(given, "axes (input 1)").reshape(-1).tolist()
    return None if axes is None else [int(a) for a in axes]


def _unsqueeze(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axes = _axes_of(ctx, node, inputs, 13)
    if not axes:
        node.fail("axes are required")
    out_rank = len(xs) + len(axes)
    axes = sorted(_normalize_axis(a, out_rank, node, "axes entry") for a in axes)
    if len(set(axes)) != len(axes):
        node.fail(f"axes {axes} repeat an axis")
    dims = iter(xs)
    shape = [1 if i in axes else next(dims) for i in range(out_rank)]
    return ctx.reshape(x, shape)


def _squeeze(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axes = _axes_of(ctx, node, inputs, 13)
    if axes is None or not len(axes):  # empty axes squeeze every axis of size 1 too, as in onnxruntime
        axes = [i for i, d in enumerate(xs) if d == 1]
    axes = {_normalize_axis(a, len(xs), node, "axes entry") for a in axes}
    for a in sorted(axes):
        if xs[a] != 1:
            node.fail(f"axis {a} has size {xs[a]}, not 1: it cannot be squeezed")
    return ctx.reshape(x, [d for i, d in enumerate(xs) if i not in axes])


def _expand(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    target = tuple(int(d) for d in ctx.value(inputs[1], "the shape (input 1)").reshape(-1))
    try:
        out = tuple(np.broadcast_shapes(xs, target))
    except ValueError:
        node.fail(f"the input's shape {xs} does not broadcast to {target}")
    if out == xs:
        return x
    return ctx.call("broadcast_to", x, shape=out)


def _tile(ctx, node, inputs):
    x = inputs[0]
    reps = tuple(int(r) for r in ctx.value(inputs[1], "repeats (input 1)").reshape(-1))
    if len(reps) != ctx.rank(x):
        node.fail(f"repeats {reps} should have one entry per axis of the rank-{ctx.rank(x)} input")
    if all(r == 1 for r in reps):
        return x
    return ctx.call("tile", x, reps=reps)


def _where(ctx, node, inputs):
    cond, x, y = inputs
    return ctx.call("where", ctx.cast(cond, "bool"), x, y)


def _pad(ctx, node, inputs):
    x = inputs[0]
    rank = ctx.rank(x)
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        node.fail(f"mode {mode!r} is not one of constant, reflect, edge, wrap")
    if node.opset < 11:
        pads = list(node.attr("pads", node.attr("paddings", [])))
        value = float(node.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = [int(p) for p in ctx.value(inputs[1], "pads (input 1)").reshape(-1)]
        cv = ctx.optional_input(inputs, 2)
        value = ctx.scalar_value(cv, "constant_value (input 2)", float, default=0.0)
        ax = ctx.optional_input(inputs, 3)
        axes = list(range(rank)) if ax is None else [
            _normalize_axis(a, rank, node, "axes entry") for a in ctx.value(ax, "axes (input 3)").reshape(-1)]
    n = len(axes)
    if len(pads) != 2 * n:
        node.fail(f"pads {pads} should have {2 * n} values (begins, then ends)")
    width = [[0, 0] for _ in range(rank)]
    for i, a in enumerate(axes):
        width[a] = [int(pads[i]), int(pads[i + n])]
    shape = ctx.shape(x)
    if any(p < 0 for w in width for p in w):
        # a negative pad crops: cut those first, then pad the rest
        begin = [max(0, -w[0]) for w in width]
        end = [d - max(0, -w[1]) for d, w in zip(shape, width)]
        if any(b >= e for b, e in zip(begin, end)):
            node.fail(f"pads {pads} crop axis {next(i for i, (b, e) in enumerate(zip(begin, end)) if b >= e)} of "
                      f"{tuple(shape)} to nothing; tecc crops to one element at least: give pads that keep one")
        x = ctx.call("strided_slice", x, begin=tuple(begin), end=tuple(end), strides=(1,) * rank)
        shape = ctx.shape(x)
        width = [[max(0, p) for p in w] for w in width]
    if all(p == 0 for w in width for p in w):
        return x
    if mode == "wrap":
        # each padded axis gathered at (i - before) mod n: the input repeated around itself
        for a, (before, after) in enumerate(width):
            if before or after:
                n = shape[a]
                index = (np.arange(-before, n + after) % n).astype("int64")
                x = ctx.call("take", x, ctx.const(index, "int64"), axis=a)
        return x
    return ctx.call("nn.pad", x, pad_width=tuple(tuple(w) for w in width), pad_value=value, pad_mode=mode)


def _tensor_scatter(ctx, node, inputs):
    """TensorScatter-24, a KV cache's update: ``update``'s ``sequence_length`` rows
    written into ``past_cache`` along ``axis`` from each batch entry's
    ``write_indices`` on (0 when not given; modulo the cache's length in
    ``circular`` mode), the rest of the cache kept.  Built of gathers: cache row
    ``s`` of entry ``b`` reads update row ``s - write_indices[b]`` where that lies in
    ``[0, sequence_length)``; in ``linear`` mode rows past the cache's end are not
    written."""
    past, update = inputs[0], inputs[1]
    indices = ctx.optional_input(inputs, 2)
    ps, us = ctx.shape(past), ctx.shape(update)
    rank = len(ps)
    if rank < 2 or len(us) != rank:
        node.fail(f"past_cache {list(ps)} and update {list(us)} must have one rank of at least 2")
    if not all(isinstance(d, (int, np.integer)) for d in tuple(ps) + tuple(us)):
        node.fail(f"past_cache {list(ps)} and update {list(us)} need static shapes; bind the symbolic "
                  "dimensions with from_onnx(..., shape={...})")
    axis = _normalize_axis(node.attr("axis", -2), rank, node)
    if axis == 0:
        node.fail("axis 0 is the batch axis; the sequence axis comes after it")
    mode = node.attr("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("linear", "circular"):
        node.fail(f"mode {mode!r} is not linear or circular")
    if any(a != b for i, (a, b) in enumerate(zip(ps, us)) if i != axis) or us[axis] > ps[axis]:
        node.fail(f"update {list(us)} must have past_cache's shape {list(ps)} but along axis {axis}, "
                  "and at most its length there")
    if ctx.dtype_of(past) != ctx.dtype_of(update):
        node.fail(f"past_cache is {ctx.dtype_of(past)} and update {ctx.dtype_of(update)}: one dtype")
    batch, length, seq = ps[0], ps[axis], us[axis]
    if seq == 0:
        return past  # nothing to write
    if indices is None:
        start = ctx.const(np.zeros((batch, 1)), "int64")
    else:
        if ctx.shape(indices) != (batch,):
            node.fail(f"write_indices has shape {list(ctx.shape(indices))}; it holds one index per batch entry "
                      f"({batch})")
        start = ctx.reshape(ctx.cast(indices, "int64"), (batch, 1))
    rel = ctx.call("subtract", ctx.const(np.arange(length)[None, :], "int64"), start)  # [batch, length]
    if mode == "circular":
        rel = ctx.call("floor_mod", rel, ctx.const(length, "int64"))
    written = ctx.call("logical_and", ctx.call("greater_equal", rel, ctx.const(0, "int64")),
                       ctx.call("less", rel, ctx.const(seq, "int64")))
    row = [batch] + [1] * (rank - 1)
    row[axis] = length
    rel = ctx.reshape(ctx.call("clip", rel, a_min=0, a_max=seq - 1), tuple(row))
    read = ctx.call("gather", update, ctx.call("broadcast_to", rel, shape=tuple(ps)), axis=axis)
    return ctx.call("where", ctx.reshape(written, tuple(row)), read, past)

