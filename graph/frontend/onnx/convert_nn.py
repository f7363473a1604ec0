"""Converters of neural-network operators: convolutions, pooling, normalizations,
activations, softmax, matrix products."""
from __future__ import annotations

import math

import numpy as np

from ....einsum_equation import parse_equation
from ...ir import Constant, GraphError
from ...ops.transform import einsum_plan, einsum_steps
from .common import _axis_slice, _normalize_axis, _np_dtype, _prod


# --- neural-network operators ----------------------------------------------------------
def _auto_pads(node, in_sizes, kernel, strides, dilations):
    """(begins, ends) of the spatial padding, from ``pads`` or ``auto_pad``."""
    n = len(in_sizes)
    auto = node.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto == "NOTSET":
        pads = list(node.attr("pads", [0] * (2 * n)))
        if len(pads) != 2 * n:
            node.fail(f"pads {pads} should have {2 * n} values (begin and end of each spatial axis)")
        return pads[:n], pads[n:]
    if auto == "VALID":
        return [0] * n, [0] * n
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        node.fail(f"auto_pad {auto!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else big)
        ends.append(big if auto == "SAME_UPPER" else small)
    return begins, ends


def _spatial_rank(ctx, node, x, what, volumes=False):
    """The spatial axes of ``x`` (N, C, then 1 or 2 of them; 3 where ``volumes``)."""
    nsp = ctx.rank(x) - 2
    if nsp not in ((1, 2, 3) if volumes else (1, 2)):
        forms = "1-D, 2-D and 3-D (NCW, NCHW, NCDHW)" if volumes else "1-D and 2-D (NCW, NCHW)"
        node.fail(f"{what} over {nsp} spatial dimension(s) is not supported; tecc converts the {forms} forms")
    return nsp


def _as_2d(ctx, x):
    """An NCW tensor as NC1W."""
    s = ctx.shape(x)
    return ctx.reshape(x, s[:2] + (1,) + s[2:])


def _from_2d(ctx, y):
    s = ctx.shape(y)
    return ctx.reshape(y, s[:2] + s[3:])


def _accumulator(ctx, x):
    """The ``out_dtype`` of a product of ``x`` (MatMul, Gemm, Conv): float32 for
    float16 operands -- the sums are kept in float32 and rounded to float16 once, at
    the end, as onnxruntime and ONNX's reference do -- else None (the operands')."""
    return "float32" if ctx.dtype_of(x) == "float16" else None


def _conv(ctx, node, inputs, out_dtype=None):
    """Conv (and the integer convolutions' product: ``out_dtype`` "int32" for int32
    data and 8-bit weights)."""
    x, w = inputs[0], inputs[1]
    bias = ctx.optional_input(inputs, 2)
    acc, dtype = out_dtype or _accumulator(ctx, x), out_dtype or ctx.dtype_of(x)
    nsp = _spatial_rank(ctx, node, x, "Conv", volumes=True)
    xs, ws = ctx.shape(x), ctx.shape(w)
    if len(ws) != len(xs):
        node.fail(f"the weight {ws} should have the rank of the data {xs}")
    kernel = list(node.attr("kernel_shape", ws[2:]))
    strides = list(node.attr("strides", [1] * nsp))
    dilations = list(node.attr("dilations", [1] * nsp))
    groups = int(node.attr("group", 1))
    begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
    if nsp == 1:
        x, w = _as_2d(ctx, x), _as_2d(ctx, w)
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        begins, ends = [0] + begins, [0] + ends
    if nsp == 3:
        out = ctx.call("nn.conv3d", x, w, strides=tuple(strides), padding=tuple(begins + ends),
                       dilation=tuple(dilations), groups=groups, channels=ws[0], kernel_size=tuple(kernel),
                       out_dtype=acc)
    else:
        out = ctx.call("nn.conv2d", x, w, strides=tuple(strides), padding=(begins[0], begins[1], ends[0], ends[1]),
                       dilation=tuple(dilations), groups=groups, channels=ws[0], kernel_size=tuple(kernel),
                       out_dtype=acc)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, ctx.cast(bias, ctx.dtype_of(out)), axis=1)
    out = ctx.cast(out, dtype)
    return _from_2d(ctx, out) if nsp == 1 else out


def _conv_transpose(ctx, node, inputs):
    x, w = inputs[0], inputs[1]
    bias = ctx.optional_input(inputs, 2)
    acc, dtype = _accumulator(ctx, x), ctx.dtype_of(x)
    nsp = _spatial_rank(ctx, node, x, "ConvTranspose", volumes=int(node.attr("group", 1)) == 1)
    xs, ws = ctx.shape(x), ctx.shape(w)
    groups = int(node.attr("group", 1))
    kernel = list(node.attr("kernel_shape", ws[2:]))
    strides = list(node.attr("strides", [1] * nsp))
    dilations = list(node.attr("dilations", [1] * nsp))
    out_pad = list(node.attr("output_padding", [0] * nsp))
    output_shape = node.attr("output_shape")
    auto = node.attr("auto_pad", "NOTSET") or "NOTSET"
    if output_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        # the padding that gives the requested output size
        targets = list(output_shape)[-nsp:] if output_shape is not None else [xs[2 + i] * strides[i]
                                                                              for i in range(nsp)]
        begins, ends = [], []
        for i in range(nsp):
            total = strides[i] * (xs[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - targets[i]
            if total < 0 and out_pad[i] - total < strides[i]:
                # a size a little larger (by less than the stride, as a convolution of that
                # size gives this input): zeros at the end, as output_padding gives them
                out_pad[i], total = out_pad[i] - total, 0
            if total < 0:
                natural = targets[i] + total
                node.fail(f"output_shape {tuple(output_shape)} is larger than the transposed convolution gives: "
                          f"spatial axis {i} can be {natural} to {natural - out_pad[i] + strides[i] - 1} (the "
                          f"output padding at most the stride less one), not {targets[i]}")
            # the spec puts the larger half first unless auto_pad is SAME_UPPER
            small, big = total // 2, total - total // 2
            upper = auto == "SAME_UPPER"
            begins.append(small if upper else big)
            ends.append(big if upper else small)
    else:
        begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
    if nsp == 1:
        x, w = _as_2d(ctx, x), _as_2d(ctx, w)
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        begins, ends, out_pad = [0] + begins, [0] + ends, [0] + out_pad
    if nsp == 3:
        out = ctx.call("nn.conv3d_transpose", x, w, strides=tuple(strides), padding=tuple(begins + ends),
                       dilation=tuple(dilations), channels=ws[1], kernel_size=tuple(kernel),
                       output_padding=tuple(out_pad), out_dtype=acc)
    else:
        out = ctx.call("nn.conv2d_transpose", x, w, strides=tuple(strides),
                       padding=(begins[0], begins[1], ends[0], ends[1]), dilation=tuple(dilations), groups=groups,
                       channels=ws[1] * groups, kernel_size=tuple(kernel), output_padding=tuple(out_pad),
                       out_dtype=acc)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, ctx.cast(bias, ctx.dtype_of(out)), axis=1)
    out = ctx.cast(out, dtype)
    return _from_2d(ctx, out) if nsp == 1 else out


def _pool(kind):
    def convert(ctx, node, inputs):
        x = inputs[0]
        want_indices = kind == "max" and len(node.outputs) > 1 and bool(node.outputs[1])
        nsp = _spatial_rank(ctx, node, x, f"{node.op_type}", volumes=not want_indices)
        xs = ctx.shape(x)
        kernel = list(node.required("kernel_shape"))
        strides = list(node.attr("strides", [1] * nsp))
        dilations = list(node.attr("dilations", [1] * nsp))
        begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
        ceil_mode = node.flag("ceil_mode", 0)
        if nsp == 3:
            common = dict(pool_size=tuple(kernel), strides=tuple(strides), padding=tuple(begins + ends),
                          dilation=tuple(dilations), ceil_mode=ceil_mode)
            if kind == "max":
                return ctx.call("nn.max_pool3d", x, **common)
            return ctx.call("nn.avg_pool3d", x, count_include_pad=node.flag("count_include_pad", 0), **common)
        if nsp == 1:
            x = _as_2d(ctx, x)
            kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
            begins, ends = [0] + begins, [0] + ends
        common = dict(pool_size=tuple(kernel), strides=tuple(strides), padding=(begins[0], begins[1], ends[0],
                                                                                 ends[1]), ceil_mode=ceil_mode)
        if any(d != 1 for d in dilations):
            common["dilation"] = tuple(dilations)
        if kind == "max":
            out = ctx.call("nn.max_pool2d", x, **common)
        else:
            out = ctx.call("nn.avg_pool2d", x, count_include_pad=node.flag("count_include_pad", 0), **common)
        if not want_indices:
            return _from_2d(ctx, out) if nsp == 1 else out
        order = int(node.attr("storage_order", 0))
        indices = _max_pool_indices(ctx, x, ctx.shape(out)[2:], kernel, strides, dilations, begins, order)
        return [_from_2d(ctx, out), _from_2d(ctx, indices)] if nsp == 1 else [out, indices]

    return convert


def _max_pool_indices(ctx, x, out_hw, kernel, strides, dilations, begins, storage_order):
    """MaxPool's ``Indices`` output for the 2-D max pool of ``x`` (N, C, H, W): where
    each maximum is, as an index into ``x`` flattened (row-major, or with
    ``storage_order=1`` column-major within each image; the batch and channel offsets
    included, as onnxruntime computes them).  The first maximum of a window in
    row-major order wins a tie.

    Built of graph operators: every tap of the window is a strided slice of the
    input padded with the lowest value, the taps are stacked, ``argmax`` picks the
    tap, and the tap's row and column give the input position."""
    n, c, h, w = ctx.shape(x)
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = out_hw, kernel, strides, dilations
    dtype = ctx.dtype_of(x)
    lowest = float("-inf") if np.dtype(dtype).kind == "f" else int(np.iinfo(dtype).min)
    # the rows and columns every window reads, padded past the end where ceil_mode
    # lets the last window overhang
    reach = [(oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1]
    after = [max(0, reach[0] - begins[0] - h), max(0, reach[1] - begins[1] - w)]
    padded = ctx.call("nn.pad", x, pad_width=((0, 0), (0, 0), (begins[0], after[0]), (begins[1], after[1])),
                      pad_value=lowest, pad_mode="constant")
    taps = []
    for i in range(kh):
        for j in range(kw):
            tap = ctx.call("strided_slice", padded, begin=(0, 0, i * dh, j * dw),
                           end=(n, c, i * dh + (oh - 1) * sh + 1, j * dw + (ow - 1) * sw + 1), strides=(1, 1, sh, sw))
            taps.append(ctx.reshape(tap, (1, n, c, oh, ow)))
    stacked = taps[0] if len(taps) == 1 else ctx.call("concatenate", ctx.tuple(taps), axis=0)
    tap = ctx.cast(ctx.call("argmax", stacked, axis=(0,), keepdims=False), "int64")
    # the tap's row and column, and the window's first row and column, in the input
    row = ctx.call("add", ctx.const(np.arange(oh).reshape(1, 1, oh, 1) * sh - begins[0], "int64"),
                   ctx.call("multiply", ctx.call("floor_divide", tap, ctx.const(np.array(kw), "int64")),
                            ctx.const(np.array(dh), "int64")))
    col = ctx.call("add", ctx.const(np.arange(ow).reshape(1, 1, 1, ow) * sw - begins[1], "int64"),
                   ctx.call("multiply", ctx.call("floor_mod", tap, ctx.const(np.array(kw), "int64")),
                            ctx.const(np.array(dw), "int64")))
    if storage_order:
        within = ctx.call("add", row, ctx.call("multiply", col, ctx.const(np.array(h), "int64")))
    else:
        within = ctx.call("add", ctx.call("multiply", row, ctx.const(np.array(w), "int64")), col)
    image = ctx.const(np.arange(n * c).reshape(n, c, 1, 1) * (h * w), "int64")
    return ctx.call("add", within, image)


def _global_pool(kind):
    def convert(ctx, node, inputs):
        x = inputs[0]
        rank = ctx.rank(x)
        if rank < 3:
            node.fail(f"the input has rank {rank}; it needs a batch, a channel and spatial axes")
        if rank == 4:
            return ctx.call(f"nn.global_{kind}_pool2d", x)
        return ctx.call("mean" if kind == "avg" else "max", x, axis=tuple(range(2, rank)), keepdims=True)

    return convert


def _batch_norm(ctx, node, inputs):
    x, scale, bias, mean, var = inputs[:5]
    eps = float(node.attr("epsilon", 1e-5))
    if not node.flag("training_mode", 0):
        return ctx.item(ctx.call("nn.batch_norm", x, scale, bias, mean, var, axis=1, epsilon=eps), 0)
    # training (BatchNormalization-14 on): normalized by the batch's own statistics over
    # every axis but the channels (the biased variance), and the running statistics
    # moved towards them: running = given * momentum + batch * (1 - momentum)
    xs = ctx.shape(x)
    if len(xs) < 2:
        node.fail(f"the input has shape {xs}; it needs a batch and a channel axis")
    axes = (0,) + tuple(range(2, len(xs)))
    stash = "float64" if ctx.dtype_of(x) == "float64" else "float32"
    xf = ctx.cast(x, stash)
    batch_mean = ctx.call("mean", xf, axis=axes, keepdims=True)
    centered = ctx.call("subtract", xf, batch_mean)
    batch_var = ctx.call("mean", ctx.call("multiply", centered, centered), axis=axes)
    batch_mean = ctx.reshape(batch_mean, (xs[1],))
    y = ctx.item(ctx.call("nn.batch_norm", xf, ctx.cast(scale, stash), ctx.cast(bias, stash),
                          batch_mean, batch_var, axis=1, epsilon=eps), 0)
    outs = [ctx.cast(y, ctx.dtype_of(x))]
    momentum = float(node.attr("momentum", 0.9))
    for given, batch in ((mean, batch_mean), (var, batch_var)):
        moved = ctx.call("add", ctx.call("multiply", ctx.cast(given, stash), ctx.const(np.array(momentum), stash)),
                         ctx.call("multiply", batch, ctx.const(np.array(1.0 - momentum), stash)))
        outs.append(ctx.cast(moved, ctx.dtype_of(given)))
    return outs[:max(1, len(node.outputs))]


def _instance_norm(ctx, node, inputs):
    x, scale, bias = inputs
    return ctx.call("nn.instance_norm", x, scale, bias, axis=1, epsilon=float(node.attr("epsilon", 1e-5)))


def _to_normalized(ctx, node, t, shape, what):
    """Scale or bias ``t`` broadcast to the normalized axes' ``shape`` (the spec's
    unidirectional broadcast: a scalar scale serves every element)."""
    ts = tuple(ctx.shape(t))
    if ts == tuple(shape):
        return t
    try:
        if len(ts) > len(shape) or tuple(np.broadcast_shapes(ts, shape)) != tuple(shape):
            raise ValueError
    except ValueError:
        node.fail(f"{what} has shape {list(ts)}; it must broadcast to the normalized axes' shape {list(shape)}")
    return ctx.call("broadcast_to", t, shape=tuple(shape))


def _layer_norm(ctx, node, inputs):
    x, scale = inputs[0], inputs[1]
    bias = ctx.optional_input(inputs, 2)
    xs = ctx.shape(x)
    rank = len(xs)
    axis = _normalize_axis(node.attr("axis", -1), rank, node)
    eps = float(node.attr("epsilon", 1e-5))
    inner = _prod(xs[axis:])
    if bias is None:
        bias = ctx.const(np.zeros(xs[axis:]), ctx.dtype_of(x))
    scale, bias = (_to_normalized(ctx, node, t, xs[axis:], what) for t, what in ((scale, "Scale (input 1)"),
                                                                                  (bias, "B (input 2)")))
    scale, bias = ctx.reshape(scale, (inner,)), ctx.reshape(bias, (inner,))
    flat = ctx.reshape(x, xs[:axis] + (inner,))
    out = ctx.reshape(ctx.call("nn.layer_norm", flat, scale, bias, axis=-1, epsilon=eps), xs)
    if not any(node.outputs[1:3]):
        return out
    # the training outputs, where the model reads them: the mean and the reciprocal
    # of the standard deviation over the normalized axes, kept as axes of size 1, in
    # stash_type (float32 unless set)
    stash = _np_dtype(int(node.attr("stash_type", 1)), node.where)
    mean, inv = norm_statistics(ctx, flat, (axis,), eps, stash)
    stats = xs[:axis] + (1,) * (rank - axis)
    return [out, ctx.reshape(mean, stats), ctx.reshape(inv, stats)]


def norm_statistics(ctx, x, axes, eps, stash="float32", rms=False):
    """``(mean, 1 / sqrt(variance + eps))`` of ``x`` over ``axes``, kept as axes of size
    1, computed in ``stash``; with ``rms``, ``(None, 1 / sqrt(mean(x * x) + eps))`` (the
    statistics of LayerNormalization's training outputs, RMSNormalization and
    onnxruntime's skip normalizations)."""
    xf = ctx.cast(x, stash)
    mean = None
    if rms:
        spread = ctx.call("mean", ctx.call("multiply", xf, xf), axis=tuple(axes), keepdims=True)
    else:
        mean = ctx.call("mean", xf, axis=tuple(axes), keepdims=True)
        centered = ctx.call("subtract", xf, mean)
        spread = ctx.call("mean", ctx.call("multiply", centered, centered), axis=tuple(axes), keepdims=True)
    return mean, ctx.call("rsqrt", ctx.call("add", spread, ctx.const(np.array(eps), stash)))


def _rms_norm(ctx, node, inputs):
    """RMSNormalization-23: ``x / sqrt(mean(x * x over axes [axis, rank)) + epsilon)
    * scale``, the statistics in ``stash_type`` (float32 unless set), the
    normalized value cast back to ``x``'s dtype before the scale."""
    x, scale = inputs
    xs = ctx.shape(x)
    rank = len(xs)
    axis = _normalize_axis(node.attr("axis", -1), rank, node)
    stash = _np_dtype(int(node.attr("stash_type", 1)), node.where)
    return rms_normalized(ctx, x, range(axis, rank), float(node.attr("epsilon", 1e-5)), scale, stash)


def rms_normalized(ctx, x, axes, eps, scale, stash="float32"):
    """``x / sqrt(mean(x * x over axes) + eps) * scale``, the statistics in ``stash``,
    the normalized value cast back to ``x``'s dtype before the scale (RMSNormalization,
    onnxruntime's SkipSimplifiedLayerNormalization)."""
    _, inv = norm_statistics(ctx, x, axes, eps, stash, rms=True)
    normalized = ctx.cast(ctx.call("multiply", ctx.cast(x, stash), inv), ctx.dtype_of(x))
    return ctx.call("multiply", normalized, scale)


def _rotary_embedding(ctx, node, inputs):
    """RotaryEmbedding-23: rotary position embeddings of ``x`` -- [batch, heads,
    seq, head] or [batch, seq, heads * head] with ``num_heads`` -- from the cos and
    sin caches ([batch, seq, dim / 2], or [max positions, dim / 2] read at
    ``position_ids``): the first ``rotary_embedding_dim`` channels of each head
    (all when 0), taken as two halves or (``interleaved``) as even/odd pairs
    ``(x1, x2)``, become ``(cos x1 - sin x2, sin x1 + cos x2)``; the rest pass.
    Position ids are read at run time: one past the caches reads their last row
    (clamped, as a kernel cannot raise), where ONNX leaves it undefined."""
    x, cos, sin = inputs[0], inputs[1], inputs[2]
    positions = ctx.optional_input(inputs, 3)
    xs = ctx.shape(x)
    if len(xs) == 4:
        batch, heads, seq, head = xs
        x4 = ctx.call("transpose", x, axes=(0, 2, 1, 3))  # [batch, seq, heads, head]
    elif len(xs) == 3:
        heads = int(node.attr("num_heads", 0))
        if heads <= 0 or xs[2] % heads:
            node.fail(f"a 3-D input {list(xs)} needs num_heads dividing its last dimension (got {heads})")
        batch, seq, head = xs[0], xs[1], xs[2] // heads
        x4 = ctx.reshape(x, (batch, seq, heads, head))
    else:
        node.fail(f"the input must be 3-D or 4-D, got shape {list(xs)}")
    dim = int(node.attr("rotary_embedding_dim", 0)) or head
    if dim % 2 or dim > head:
        node.fail(f"rotary_embedding_dim {dim} must be even and at most the head size {head}")
    half = dim // 2
    if positions is not None:
        cos = ctx.call("take", cos, positions, axis=0, mode="clip")
        sin = ctx.call("take", sin, positions, axis=0, mode="clip")
    for name, cache in (("cos_cache", cos), ("sin_cache", sin)):
        if tuple(ctx.shape(cache)) != (batch, seq, half):
            node.fail(f"{name} gives shape {list(ctx.shape(cache))} per position; [batch, seq, rotary_embedding_dim / "
                      f"2] = {[batch, seq, half]} is needed")
    cos, sin = (ctx.reshape(c, (batch, seq, 1, half)) for c in (cos, sin))
    rotated = _axis_slice(ctx, x4, 3, 0, dim) if dim < head else x4
    if node.flag("interleaved", 0):
        pairs = ctx.reshape(rotated, (batch, seq, heads, half, 2))
        x1, x2 = (ctx.reshape(_axis_slice(ctx, pairs, 4, i, i + 1), (batch, seq, heads, half)) for i in (0, 1))
    else:
        x1, x2 = _axis_slice(ctx, rotated, 3, 0, half), _axis_slice(ctx, rotated, 3, half, dim)
    real = ctx.call("subtract", ctx.call("multiply", cos, x1), ctx.call("multiply", sin, x2))
    imag = ctx.call("add", ctx.call("multiply", sin, x1), ctx.call("multiply", cos, x2))
    if node.flag("interleaved", 0):
        five = (batch, seq, heads, half, 1)
        out = ctx.reshape(ctx.call("concatenate", ctx.tuple([ctx.reshape(real, five), ctx.reshape(imag, five)]),
                                   axis=4), (batch, seq, heads, dim))
    else:
        out = ctx.call("concatenate", ctx.tuple([real, imag]), axis=3)
    if dim < head:
        out = ctx.call("concatenate", ctx.tuple([out, _axis_slice(ctx, x4, 3, dim, head)]), axis=3)
    return ctx.call("transpose", out, axes=(0, 2, 1, 3)) if len(xs) == 4 else ctx.reshape(out, xs)


def _swish(ctx, node, inputs):
    """Swish-24: ``x * sigmoid(alpha * x)``."""
    x = inputs[0]
    alpha = float(node.attr("alpha", 1.0))
    scaled = x if alpha == 1.0 else ctx.call("multiply", ctx.scalar(alpha, x), x)
    return ctx.call("multiply", x, ctx.call("sigmoid", scaled))


def _lrn(ctx, node, inputs):
    return ctx.call("nn.lrn", inputs[0], size=int(node.required("size")), axis=1,
                    alpha=float(node.attr("alpha", 1e-4)), beta=float(node.attr("beta", 0.75)),
                    bias=float(node.attr("bias", 1.0)))


def _leaky_relu(ctx, node, inputs):
    return ctx.call("nn.leaky_relu", inputs[0], alpha=float(node.attr("alpha", 0.01)))


def _prelu(ctx, node, inputs):
    x, slope = inputs
    xs, ss = ctx.shape(x), ctx.shape(slope)
    channels = xs[1] if len(xs) > 1 else None
    per_channel = (channels is not None and _prod(ss) == channels and len(ss) <= len(xs) - 1
                   and (len(ss) == 1 or all(d == 1 for d in ss[1:]) and ss[0] == channels))
    if per_channel:
        return ctx.call("nn.prelu", x, ctx.reshape(slope, (channels,)), axis=1)
    # any other broadcastable slope: relu(x) + slope * min(x, 0)
    zero = ctx.scalar(0, x)
    return ctx.call("add", ctx.call("nn.relu", x), ctx.call("multiply", slope, ctx.call("minimum", x, zero)))


def _clip_between(ctx, x, lo, hi):
    """``x`` clamped to [lo, hi] (constants, either may be None)."""
    if lo is not None and hi is not None:
        return ctx.call("clip", x, a_min=float(lo), a_max=float(hi))
    if lo is not None:
        return ctx.call("maximum", x, ctx.scalar(lo, x))
    if hi is not None:
        return ctx.call("minimum", x, ctx.scalar(hi, x))
    return x


def _clip(ctx, node, inputs):
    x = inputs[0]
    if node.opset < 11:
        return _clip_between(ctx, x, node.attr("min"), node.attr("max"))
    lo, hi = ctx.optional_input(inputs, 1), ctx.optional_input(inputs, 2)
    if (lo is None or ctx.is_const(lo)) and (hi is None or ctx.is_const(hi)):
        lo = ctx.scalar_value(lo, "min (input 1)")
        hi = ctx.scalar_value(hi, "max (input 2)")
        return _clip_between(ctx, x, lo, hi)
    # bounds computed at run time: maximum / minimum with the 0-d tensors
    if lo is not None:
        x = ctx.call("maximum", x, lo)
    if hi is not None:
        x = ctx.call("minimum", x, hi)
    return x


def hard_sigmoid_of(ctx, x, alpha, beta):
    scaled = ctx.call("add", ctx.call("multiply", x, ctx.scalar(alpha, x)), ctx.scalar(beta, x))
    return ctx.call("clip", scaled, a_min=0.0, a_max=1.0)


def _hard_sigmoid(ctx, node, inputs):
    return hard_sigmoid_of(ctx, inputs[0], float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5)))


def _hard_swish(ctx, node, inputs):
    x = inputs[0]
    return ctx.call("multiply", x, hard_sigmoid_of(ctx, x, 1.0 / 6.0, 0.5))


def elu_of(ctx, x, alpha):
    """max(x, 0) + alpha * (exp(min(x, 0)) - 1)."""
    zero, one = ctx.scalar(0, x), ctx.scalar(1, x)
    neg = ctx.call("subtract", ctx.call("exp", ctx.call("minimum", x, zero)), one)
    return ctx.call("add", ctx.call("nn.relu", x), ctx.call("multiply", ctx.scalar(alpha, x), neg))


def _elu(ctx, node, inputs):
    return elu_of(ctx, inputs[0], float(node.attr("alpha", 1.0)))


def _selu(ctx, node, inputs):
    x = inputs[0]
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    return ctx.call("multiply", ctx.scalar(gamma, x), elu_of(ctx, x, alpha))


def softplus_of(ctx, x):
    """log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)): no overflow for large x."""
    tail = ctx.call("exp", ctx.call("negative", ctx.call("abs", x)))
    return ctx.call("add", ctx.call("nn.relu", x), ctx.call("log", ctx.call("add", tail, ctx.scalar(1, x))))


def _softplus(ctx, node, inputs):
    return softplus_of(ctx, inputs[0])


def _mish(ctx, node, inputs):
    x = inputs[0]
    return ctx.call("multiply", x, ctx.call("tanh", softplus_of(ctx, x)))


def _celu(ctx, node, inputs):
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) == elu(x / alpha) scaled by alpha on the negative side
    x = inputs[0]
    alpha = float(node.attr("alpha", 1.0))
    if alpha == 0:
        node.fail("alpha is 0; CELU divides by alpha: give a nonzero alpha")
    zero, one = ctx.scalar(0, x), ctx.scalar(1, x)
    scaled = ctx.call("divide", ctx.call("minimum", x, zero), ctx.scalar(alpha, x))
    neg = ctx.call("multiply", ctx.scalar(alpha, x), ctx.call("subtract", ctx.call("exp", scaled), one))
    return ctx.call("add", ctx.call("nn.relu", x), neg)


def thresholded_relu_of(ctx, x, alpha):
    """``x`` where ``x > alpha``, else 0."""
    return ctx.call("where", ctx.call("greater", x, ctx.scalar(alpha, x)), x, ctx.scalar(0, x))


def _thresholded_relu(ctx, node, inputs):
    return thresholded_relu_of(ctx, inputs[0], float(node.attr("alpha", 1.0)))


def softsign_of(ctx, x):
    """``x / (1 + |x|)``."""
    return ctx.call("divide", x, ctx.call("add", ctx.call("abs", x), ctx.scalar(1, x)))


def _softsign(ctx, node, inputs):
    return softsign_of(ctx, inputs[0])


def _gelu(ctx, node, inputs):
    return gelu_of(ctx, inputs[0], approximate=node.attr("approximate", "none") == "tanh")


def gelu_of(ctx, x, approximate=False):
    """``0.5 x (1 + erf(x / sqrt(2)))``, or with ``approximate`` its tanh form (ONNX's
    Gelu; onnxruntime's Gelu and FastGelu)."""
    half, one = ctx.scalar(0.5, x), ctx.scalar(1, x)
    if approximate:
        cube = ctx.call("multiply", ctx.call("multiply", x, x), x)
        inner = ctx.call("add", x, ctx.call("multiply", ctx.scalar(0.044715, x), cube))
        t = ctx.call("tanh", ctx.call("multiply", ctx.scalar(math.sqrt(2 / math.pi), x), inner))
    else:
        t = ctx.call("erf", ctx.call("multiply", x, ctx.scalar(1 / math.sqrt(2), x)))
    return ctx.call("multiply", ctx.call("multiply", half, x), ctx.call("add", one, t))


def _softmax(op_name):
    def convert(ctx, node, inputs):
        x = inputs[0]
        xs = ctx.shape(x)
        rank = len(xs)
        dtype = ctx.dtype_of(x)
        if dtype == "float16":
            x = ctx.cast(x, "float32")  # the exponentials summed in float32, the result rounded once
        if node.opset >= 13:
            out = ctx.call(op_name, x, axis=_normalize_axis(node.attr("axis", -1), rank, node))
        else:
            # before opset 13: the input is read as 2-D [prod(shape[:axis]), prod(shape[axis:])]
            axis = _normalize_axis(node.attr("axis", 1), rank, node)
            if axis == rank - 1:
                out = ctx.call(op_name, x, axis=axis)
            else:
                flat = ctx.reshape(x, (_prod(xs[:axis]), _prod(xs[axis:])))
                out = ctx.reshape(ctx.call(op_name, flat, axis=1), xs)
        return ctx.cast(out, dtype)

    return convert


def _matmul(ctx, node, inputs):
    a, b = inputs
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    if not a_shape or not b_shape:
        node.fail("MatMul of a scalar (rank-0) operand")
    squeeze_m, squeeze_n = len(a_shape) == 1, len(b_shape) == 1
    if squeeze_m:
        a = ctx.reshape(a, (1,) + a_shape)
    if squeeze_n:
        b = ctx.reshape(b, b_shape + (1,))
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        node.fail(f"the operands' shapes {a_shape} and {b_shape} do not multiply (inner sizes {k} and {k2})")
    acc, dtype = _accumulator(ctx, a), ctx.dtype_of(a)
    if len(b_shape) == 2:
        # (..., M, K) x (K, N): one dense over the flattened leading axes
        flat = ctx.reshape(a, (_prod(a_shape[:-1]), k))
        out = ctx.call("nn.dense", flat, ctx.call("transpose", b, axes=(1, 0)), units=n, out_dtype=acc)
        out_shape = a_shape[:-1] + (n,)
        out = ctx.reshape(out, out_shape)
    else:
        try:
            batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
        except ValueError:
            node.fail(f"the batch axes of {a_shape} and {b_shape} do not broadcast")
        nb = _prod(batch)
        if a_shape[:-2] != batch:
            a = ctx.call("broadcast_to", a, shape=batch + (m, k))
        if b_shape[:-2] != batch:
            b = ctx.call("broadcast_to", b, shape=batch + (k, n))
        a3, b3 = ctx.reshape(a, (nb, m, k)), ctx.reshape(b, (nb, k, n))
        out = ctx.call("nn.batch_matmul", a3, b3, transpose_a=False, transpose_b=False, out_dtype=acc)
        out_shape = batch + (m, n)
        out = ctx.reshape(out, out_shape)
    out = ctx.cast(out, dtype)
    if squeeze_m or squeeze_n:
        final = out_shape[:-2] + (() if squeeze_m else (m,)) + (() if squeeze_n else (n,))
        out = ctx.reshape(out, final)
    return out


def _gemm(ctx, node, inputs):
    a, b = inputs[0], inputs[1]
    c = ctx.optional_input(inputs, 2)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if ctx.rank(a) != 2 or ctx.rank(b) != 2:
        node.fail(f"Gemm takes 2-D A and B, got shapes {ctx.shape(a)} and {ctx.shape(b)}")
    if node.flag("transA", 0):
        a = ctx.call("transpose", a, axes=(1, 0))
    if not node.flag("transB", 0):
        b = ctx.call("transpose", b, axes=(1, 0))  # dense takes the weight as (N, K)
    n = ctx.shape(b)[0]
    acc, dtype = _accumulator(ctx, a), ctx.dtype_of(a)
    out = ctx.call("nn.dense", a, b, units=n, out_dtype=acc)
    if alpha != 1.0:
        out = ctx.call("multiply", out, ctx.scalar(alpha, out))
    if c is not None:
        c = ctx.cast(c, ctx.dtype_of(out))
        if beta != 1.0:
            c = ctx.call("multiply", c, ctx.scalar(beta, c))
        cs = ctx.shape(c)
        if cs in ((n,), (1, n)):
            out = ctx.call("nn.bias_add", out, ctx.reshape(c, (n,)), axis=1)
        else:
            out = ctx.call("add", out, c)
    return ctx.cast(out, dtype)


def _einsum(ctx, node, inputs):
    """One einsum call, or -- for a form no single product computes (``"ij,jk,km->im"``,
    ``"ij,kl->ik"``), without ``...`` or diagonals -- a chain of them
    (:func:`~tecc.graph.ops.transform.einsum_steps`), each its own kernel."""
    equation = str(node.required("equation"))
    try:
        terms, output, broadcast = parse_equation(equation, [len(ctx.shape(x)) for x in inputs], GraphError)
    except GraphError:
        terms, broadcast = [], True
    if broadcast or any(len(set(term)) != len(term) for term in terms) or _one_step(terms, output):
        return ctx.call("einsum", ctx.tuple(inputs), equation=equation)  # its type check names what it refuses
    results = []
    for sources, step_terms, out in einsum_steps("einsum", terms, output):
        operands = [inputs[i] if i >= 0 else results[-1 - i] for i in sources]
        results.append(ctx.call("einsum", ctx.tuple(operands), equation=",".join(step_terms) + "->" + out))
    return results[-1]


def _one_step(terms, output) -> bool:
    try:
        einsum_plan("einsum", terms, output)
    except GraphError:
        return False
    return True


def _col2im(ctx, node, inputs):
    """Col2Im-18 (torch's ``nn.Fold``, in 1, 2 or 3 spatial dimensions): the columns
    of sliding blocks summed back into an image.  Each column holds one block's
    ``C x k1 x k2...`` values; adding them at their places is a transposed
    convolution over the grid of blocks, one channel at a time (the channels
    folded into the batch), whose weight picks kernel position ``(k1, k2...)`` from
    input row ``k1*k2... + ...`` (a one-hot weight)."""
    x, image_in, block_in = inputs
    image = [int(v) for v in np.asarray(ctx.value(image_in, "image_shape (input 1)")).reshape(-1)]
    block = [int(v) for v in np.asarray(ctx.value(block_in, "block_shape (input 2)")).reshape(-1)]
    nsp = len(image)
    if len(block) != nsp or not 1 <= nsp <= 3:
        node.fail(f"image_shape {image} and block_shape {block}: tecc folds 1, 2 or 3 spatial dimensions, the same "
                  "number in both")
    xs = ctx.shape(x)
    if len(xs) != 3:
        node.fail(f"the input has shape {list(xs)}; Col2Im reads [N, C*prod(block_shape), L]")
    dilations = list(node.attr("dilations", [1] * nsp))
    strides = list(node.attr("strides", [1] * nsp))
    pads = list(node.attr("pads", [0] * 2 * nsp))
    if len(dilations) != nsp or len(strides) != nsp or len(pads) != 2 * nsp:
        node.fail(f"dilations {dilations}, strides {strides} and pads {pads} must have {nsp}, {nsp} and {2 * nsp} "
                  "values")
    if min(block) < 1 or min(strides) < 1 or min(dilations) < 1 or min(pads) < 0:
        node.fail(f"block_shape {block}, strides {strides} and dilations {dilations} must be positive, pads "
                  f"{pads} not negative")
    ksize = int(np.prod(block))
    if xs[1] % ksize:
        node.fail(f"the input's {xs[1]} rows are not a whole number of {'x'.join(map(str, block))} blocks")
    channels = xs[1] // ksize
    grid = [(image[i] + pads[i] + pads[i + nsp] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1
            for i in range(nsp)]
    if min(grid) < 1 or int(np.prod(grid)) != xs[2]:
        node.fail(f"the input has {xs[2]} blocks, but image_shape {image}, block_shape {block}, pads {pads}, "
                  f"strides {strides} and dilations {dilations} give {'x'.join(map(str, grid))}")
    # the image's rows and columns past the last block's reach stay zero: output padding
    out_pad = [image[i] + pads[i] + pads[i + nsp]
               - ((grid[i] - 1) * strides[i] + dilations[i] * (block[i] - 1) + 1) for i in range(nsp)]
    if any(p >= max(s, d) for p, s, d in zip(out_pad, strides, dilations)):
        node.fail(f"image_shape {image} leaves {out_pad} rows and columns after the last block; at most the "
                  "stride less one")
    dtype = ctx.dtype_of(x)
    begins, ends = pads[:nsp], pads[nsp:]
    kernel = list(block)
    if nsp == 1:  # as 2-D, with a unit axis first
        grid, kernel, strides, dilations = [1] + grid, [1] + kernel, [1] + strides, [1] + dilations
        begins, ends, out_pad = [0] + begins, [0] + ends, [0] + out_pad
    weight = Constant(np.eye(ksize, dtype=dtype).reshape([ksize, 1] + kernel))
    grid_x = ctx.reshape(x, [xs[0] * channels, ksize] + grid)
    op = "nn.conv3d_transpose" if nsp == 3 else "nn.conv2d_transpose"
    padding = tuple(begins + ends)
    out = ctx.call(op, grid_x, weight, strides=tuple(strides), padding=padding, dilation=tuple(dilations), channels=1,
                   kernel_size=tuple(kernel), output_padding=tuple(out_pad), out_dtype=dtype)
    return ctx.reshape(out, [xs[0], channels] + image)

