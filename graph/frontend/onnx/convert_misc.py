"""Converters of element tests, bitwise operators, losses, windows, quantization,
and the small compositions (normalizations, unpooling, grids, DFT)."""
from __future__ import annotations

import numpy as np

from .common import _axis_slice, _normalize_axis, _np_dtype, _prod
from .convert_nn import _as_2d, _auto_pads, _from_2d, _spatial_rank


# --- element tests, bitwise, and small compositions ---------------------------------------
def _is_inf(ctx, node, inputs):
    x = inputs[0]
    neg, pos = node.flag("detect_negative", 1), node.flag("detect_positive", 1)
    inf = ctx.call("isinf", x)
    if neg and pos:
        return inf
    if not (neg or pos):
        return ctx.call("logical_and", inf, ctx.const(np.zeros((), bool), "bool"))
    side = ctx.call("greater" if pos else "less", x, ctx.scalar(0, x))
    return ctx.call("logical_and", inf, side)


def _bit_shift(ctx, node, inputs):
    direction = node.required("direction")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    if direction not in ("LEFT", "RIGHT"):
        node.fail(f"direction {direction!r} must be 'LEFT' or 'RIGHT'")
    x, shift = inputs
    dtype = ctx.dtype_of(x)
    if not dtype.startswith(("int", "uint")):
        node.fail(f"the input is {dtype}; BitShift shifts integers")
    bits = int(np.dtype(dtype).itemsize * 8)
    # a shift outside [0, bits) shifts every bit out (ONNX; C leaves it undefined): 0, or
    # for a right shift of a negative number, -1
    outside = ctx.call("logical_or", ctx.call("less", shift, ctx.scalar(0, shift)),
                       ctx.call("greater_equal", shift, ctx.scalar(bits, shift)))
    safe = ctx.call("where", outside, ctx.scalar(0, shift), shift)
    shifted = ctx.call("left_shift" if direction == "LEFT" else "right_shift", x, safe)
    fill = ctx.scalar(0, x)
    if direction == "RIGHT" and dtype.startswith("int"):
        fill = ctx.call("where", ctx.call("less", x, ctx.scalar(0, x)), ctx.scalar(-1, x), fill)
    return ctx.call("where", outside, fill, shifted)


def _shrink(ctx, node, inputs):
    # x - bias above lambd, x + bias below -lambd, 0 between
    x = inputs[0]
    bias, lambd = float(node.attr("bias", 0.0)), float(node.attr("lambd", 0.5))
    zero = ctx.scalar(0, x)
    low = ctx.call("where", ctx.call("less", x, ctx.scalar(-lambd, x)), ctx.call("add", x, ctx.scalar(bias, x)),
                   zero)
    return ctx.call("where", ctx.call("greater", x, ctx.scalar(lambd, x)),
                    ctx.call("subtract", x, ctx.scalar(bias, x)), low)


def _hardmax(ctx, node, inputs):
    # 1 at the first maximum along the axis, 0 elsewhere; before opset 13 the input is
    # seen as a 2-D matrix (the axes before ``axis`` by those from it)
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    if node.opset < 13:
        axis = _normalize_axis(node.attr("axis", 1), rank, node)
        flat = ctx.reshape(x, (_prod(xs[:axis]), _prod(xs[axis:])))
        return ctx.reshape(_one_at_max(ctx, flat, 1), xs)
    return _one_at_max(ctx, x, _normalize_axis(node.attr("axis", -1), rank, node))


def _one_at_max(ctx, x, axis):
    xs = ctx.shape(x)
    first = ctx.call("argmax", x, axis=(axis,), keepdims=True)
    positions = ctx.call("arange", start=0, stop=xs[axis], step=1, dtype="int32")
    positions = ctx.reshape(positions, tuple(xs[axis] if d == axis else 1 for d in range(len(xs))))
    return ctx.cast(ctx.call("equal", positions, first), ctx.dtype_of(x))


def _eye_like(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    if len(xs) != 2:
        node.fail(f"the input has rank {len(xs)}; EyeLike takes a 2-D tensor")
    dtype = node.attr("dtype")
    dtype = ctx.dtype_of(x) if dtype is None else _np_dtype(int(dtype), node.where)
    return ctx.const(np.eye(xs[0], xs[1], k=int(node.attr("k", 0))), dtype)


def _gather_nd(ctx, node, inputs):
    # ONNX keeps the index tuples along indices' last axis, tecc's gather_nd along the first;
    # a negative index counts from the end of its axis
    data, indices = inputs
    ds, ist = ctx.shape(data), ctx.shape(indices)
    batch_dims = int(node.attr("batch_dims", 0))
    if not ist or batch_dims < 0 or batch_dims >= min(len(ds), len(ist)):
        node.fail(f"batch_dims {batch_dims} must be below the ranks of data {len(ds)} and indices {len(ist)}")
    m = ist[-1]
    if batch_dims + m > len(ds):
        node.fail(f"index tuples of {m} after {batch_dims} batch dimension(s) exceed data's rank {len(ds)}")
    indices = ctx.cast(indices, "int64")
    dims = ctx.const(np.asarray(ds[batch_dims:batch_dims + m], dtype=np.int64), "int64")
    wrapped = ctx.call("add", indices, dims)
    indices = ctx.call("where", ctx.call("less", indices, ctx.scalar(0, indices)), wrapped, indices)
    r = len(ist)
    front = ctx.call("transpose", indices, axes=(r - 1,) + tuple(range(r - 1)))
    return ctx.call("gather_nd", data, front, batch_dims=batch_dims)


def _lp_normalization(ctx, node, inputs):
    x = inputs[0]
    axis = _normalize_axis(node.attr("axis", -1), ctx.rank(x), node)
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        node.fail(f"p = {p}; LpNormalization takes p = 1 or 2")
    if p == 1:
        norm = ctx.call("sum", ctx.call("abs", x), axis=(axis,), keepdims=True)
    else:
        norm = ctx.call("sqrt", ctx.call("sum", ctx.call("multiply", x, x), axis=(axis,), keepdims=True))
    # a zero vector stays zero (ONNX), not 0 / 0
    zero = ctx.scalar(0, x)
    is_zero = ctx.call("equal", norm, zero)
    return ctx.call("where", is_zero, zero, ctx.call("divide", x, ctx.call("where", is_zero, ctx.scalar(1, x), norm)))


def _mean_variance_normalization(ctx, node, inputs):
    # (x - mean) / (sqrt(variance) + 1e-9) over ``axes``: ONNX's function body adds its
    # epsilon to the standard deviation, not to the variance (where it is added inside
    # the root, two values 2e-4 apart normalize to 0.991 instead of 1.0).  The variance
    # is the mean square of the centered values, the body's E[x^2] - E[x]^2 without its
    # cancellation
    x = inputs[0]
    rank = ctx.rank(x)
    axes = tuple(sorted({_normalize_axis(a, rank, node, "axes entry") for a in node.attr("axes", [0, 2, 3])}))
    mean = ctx.call("mean", x, axis=axes, keepdims=True)
    centered = ctx.call("subtract", x, mean)
    var = ctx.call("mean", ctx.call("multiply", centered, centered), axis=axes, keepdims=True)
    return ctx.call("divide", centered, ctx.call("add", ctx.call("sqrt", var), ctx.scalar(1e-9, x)))


def _group_norm(ctx, node, inputs):
    # opset 18: scale and bias per group; opset 21: per channel
    x, scale, bias = inputs
    xs = ctx.shape(x)
    if len(xs) < 3:
        node.fail(f"the input has rank {len(xs)}; it needs a batch, channels and spatial axes")
    groups = int(node.required("num_groups"))
    channels = xs[1]
    if groups < 1 or channels % groups:
        node.fail(f"num_groups {groups} must divide the {channels} channels")
    eps = float(node.attr("epsilon", 1e-5))
    grouped = ctx.reshape(x, (xs[0], groups, _prod(xs[1:]) // groups))
    mean = ctx.call("mean", grouped, axis=(2,), keepdims=True)
    centered = ctx.call("subtract", grouped, mean)
    var = ctx.call("mean", ctx.call("multiply", centered, centered), axis=(2,), keepdims=True)
    normed = ctx.call("divide", centered, ctx.call("sqrt", ctx.call("add", var, ctx.scalar(eps, x))))
    normed = ctx.reshape(normed, xs)
    per = ctx.shape(scale)[0] if ctx.rank(scale) == 1 else None
    if per == groups and groups != channels:
        # a value per group: repeated over the group's channels
        scale, bias = (ctx.reshape(ctx.call("broadcast_to", ctx.reshape(t, (groups, 1)),
                                            shape=(groups, channels // groups)), (channels,)) for t in (scale, bias))
    elif per != channels:
        node.fail(f"scale and bias must hold {channels} (opset 21) or {groups} (opset 18) values, got shape "
                  f"{ctx.shape(scale)}")
    shape = (channels,) + (1,) * (len(xs) - 2)
    return ctx.call("add", ctx.call("multiply", normed, ctx.reshape(scale, shape)), ctx.reshape(bias, shape))


def _lp_pool(ctx, node, inputs):
    # (sum over the window of |x|^p)^(1/p): a pooling of |x|^p that counts the padding, times
    # the window's size
    x = inputs[0]
    p = int(node.attr("p", 2))
    if p < 1:
        node.fail(f"p = {p} must be >= 1")
    nsp = _spatial_rank(ctx, node, x, "LpPool", volumes=True)
    xs = ctx.shape(x)
    kernel = list(node.required("kernel_shape"))
    strides = list(node.attr("strides", [1] * nsp))
    dilations = list(node.attr("dilations", [1] * nsp))
    begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
    powered = ctx.call("abs", x) if p == 1 else ctx.call("power", ctx.call("abs", x), ctx.scalar(p, x))
    if nsp == 1:
        powered = _as_2d(ctx, powered)
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        begins, ends = [0] + begins, [0] + ends
    pads = tuple(begins + ends) if nsp == 3 else (begins[0], begins[1], ends[0], ends[1])
    common = dict(pool_size=tuple(kernel), strides=tuple(strides), padding=pads,
                  ceil_mode=node.flag("ceil_mode", 0))
    if any(d != 1 for d in dilations):
        common["dilation"] = tuple(dilations)
    pooled = ctx.call("nn.avg_pool3d" if nsp == 3 else "nn.avg_pool2d", powered, count_include_pad=True, **common)
    summed = ctx.call("multiply", pooled, ctx.scalar(float(_prod(kernel)), x))
    out = summed if p == 1 else ctx.call("power", summed, ctx.scalar(1.0 / p, x))
    return _from_2d(ctx, out) if nsp == 1 else out


def _nll_loss_of(ctx, node, log_prob, target, weight):
    """NegativeLogLikelihoodLoss of ``log_prob`` ``[N, C, d...]`` at the classes
    ``target`` ``[N, d...]``: ``-log_prob[n, target, d...] * weight[target]``, 0 where
    ``target`` is ``ignore_index``, then ``reduction`` ("none", "sum" or "mean": the
    sum over the sum of the weights counted)."""
    ps, ts = ctx.shape(log_prob), ctx.shape(target)
    if len(ps) < 2 or tuple(ts) != (ps[0],) + tuple(ps[2:]):
        node.fail(f"the input has shape {ps} and the target {ts}; the target must be the input's shape without "
                  "its class axis 1")
    reduction = node.attr("reduction", "mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction not in ("none", "sum", "mean"):
        node.fail(f"reduction {reduction!r} must be 'none', 'sum' or 'mean'")
    target = ctx.cast(target, "int64")
    ignore = node.attr("ignore_index")
    valid = None
    if ignore is not None:
        valid = ctx.call("not_equal", target, ctx.scalar(int(ignore), target))
        target = ctx.call("where", valid, target, ctx.scalar(0, target))
    picked = ctx.call("gather", log_prob, ctx.call("expand_dims", target, axis=1), axis=1)
    picked = ctx.call("squeeze", picked, axis=(1,))
    dtype = ctx.dtype_of(log_prob)
    w = ctx.call("take", weight, target, axis=0, mode="clip") if weight is not None else None
    if valid is not None:
        counted = ctx.cast(valid, dtype)
        w = counted if w is None else ctx.call("multiply", w, counted)
    loss = ctx.call("negative", picked if w is None else ctx.call("multiply", picked, w))
    if reduction == "none":
        return loss
    axes = tuple(range(len(ts)))
    total = ctx.call("sum", loss, axis=axes)
    if reduction == "sum":
        return total
    if w is None:
        return ctx.call("divide", total, ctx.scalar(float(_prod(ts)), total))
    return ctx.call("divide", total, ctx.call("sum", w, axis=axes))


def _nll_loss(ctx, node, inputs):
    return _nll_loss_of(ctx, node, inputs[0], inputs[1], ctx.optional_input(inputs, 2))


def _softmax_cross_entropy_loss(ctx, node, inputs):
    # NegativeLogLikelihoodLoss of log_softmax over the classes; output 1 is the log_softmax
    scores = inputs[0]
    log_prob = ctx.call("nn.log_softmax", scores, axis=1)
    loss = _nll_loss_of(ctx, node, log_prob, inputs[1], ctx.optional_input(inputs, 2))
    return [loss, log_prob]


def _window(kind):
    """Hann, Hamming and Blackman windows of ``size`` points (a value known when
    compiling): the output is a constant."""
    def convert(ctx, node, inputs):
        size = np.asarray(ctx.value(inputs[0], "size (input 0)")).reshape(-1)
        if size.size != 1 or int(size[0]) < 1:
            node.fail(f"size (input 0) must be one positive integer, got {size.tolist()}")
        n = int(size[0])
        periodic = node.flag("periodic", 1)
        denom = n if periodic else n - 1
        k = np.arange(n, dtype=np.float64)
        phase = 2 * np.pi * k / denom if denom > 0 else np.zeros(n)
        if kind == "hann":
            w = 0.5 - 0.5 * np.cos(phase)
        elif kind == "hamming":
            w = 25 / 46 - (1 - 25 / 46) * np.cos(phase)
        else:
            w = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
        return ctx.const(w, _np_dtype(int(node.attr("output_datatype", 1)), node.where))

    return convert


def _center_crop_pad(ctx, node, inputs):
    x, shape_in = inputs
    xs = ctx.shape(x)
    rank = len(xs)
    target = [int(v) for v in np.asarray(ctx.value(shape_in, "shape (input 1)")).reshape(-1)]
    axes = node.attr("axes")
    axes = list(range(rank)) if axes is None else [_normalize_axis(a, rank, node, "axes entry") for a in axes]
    if len(target) != len(axes):
        node.fail(f"shape (input 1) has {len(target)} sizes for {len(axes)} axes")
    begin, end = [0] * rank, list(xs)
    width = [[0, 0] for _ in range(rank)]
    for a, t in zip(axes, target):
        if t < 1:
            node.fail(f"the target size {t} of axis {a} must be positive")
        if t < xs[a]:       # crop, centered (the extra element on the end side)
            begin[a] = (xs[a] - t) // 2
            end[a] = begin[a] + t
        elif t > xs[a]:     # pad with zeros, centered
            width[a] = [(t - xs[a]) // 2, t - xs[a] - (t - xs[a]) // 2]
    out = x
    if begin != [0] * rank or end != list(xs):
        out = ctx.call("strided_slice", out, begin=tuple(begin), end=tuple(end), strides=(1,) * rank)
    if any(w != [0, 0] for w in width):
        out = ctx.call("nn.pad", out, pad_width=tuple(tuple(w) for w in width), pad_value=0.0, pad_mode="constant")
    return out


def _reverse_sequence(ctx, node, inputs):
    # along time_axis, each batch entry's first sequence_lens[b] steps reversed:
    # out[t] = x[lens - 1 - t] for t < lens, else x[t] (the lengths may come at run time)
    x, lens = inputs
    xs = ctx.shape(x)
    rank = len(xs)
    if rank < 2:
        node.fail(f"the input has rank {rank}; it needs a batch and a time axis")
    batch_axis = _normalize_axis(node.attr("batch_axis", 1), rank, node, "batch_axis")
    time_axis = _normalize_axis(node.attr("time_axis", 0), rank, node, "time_axis")
    if batch_axis == time_axis:
        node.fail(f"batch_axis and time_axis are both {batch_axis}")
    lens = ctx.cast(lens, "int64")
    steps = ctx.call("arange", start=0, stop=xs[time_axis], step=1, dtype="int64")
    steps = ctx.reshape(steps, tuple(xs[time_axis] if d == time_axis else 1 for d in range(rank)))
    lens = ctx.reshape(lens, tuple(xs[batch_axis] if d == batch_axis else 1 for d in range(rank)))
    flipped = ctx.call("subtract", ctx.call("subtract", lens, ctx.scalar(1, lens)), steps)
    index = ctx.call("where", ctx.call("less", steps, lens), flipped, steps)
    index = ctx.call("broadcast_to", index, shape=tuple(xs))
    return ctx.call("gather", x, index, axis=time_axis)


def _max_unpool(ctx, node, inputs):
    """Zeros of the output shape with ``x`` written at the flat positions ``indices``
    gives (MaxPool's Indices output: flattened over the whole tensor).

    The output shape is ``output_shape`` (input 2) where the model gives it, else the
    one the kernel, strides and pads imply.  The indices count in the output shape
    itself, as onnxruntime and torch's ``max_unpool2d`` read them: that is what makes
    an odd-sized input pooled with its indices unpool to its own size.  (ONNX's
    reference implementation, and its conformance case
    ``test_maxunpool_export_with_output_shape``, count them in the implied shape and
    pad that; onnx/onnx#2398 and onnxruntime's PR #2193 explain why the runtimes do
    not.)"""
    x, indices = inputs[0], inputs[1]
    xs = ctx.shape(x)
    nsp = len(xs) - 2
    if nsp < 1:
        node.fail(f"the input has rank {len(xs)}; it needs a batch, a channel and spatial axes")
    kernel = list(node.required("kernel_shape"))
    strides = list(node.attr("strides", [1] * nsp))
    pads = list(node.attr("pads", [0] * (2 * nsp)))
    shape = tuple(xs[:2]) + tuple((xs[2 + i] - 1) * strides[i] - pads[i] - pads[i + nsp] + kernel[i]
                                  for i in range(nsp))
    given = ctx.optional_input(inputs, 2)
    if given is not None:
        want = tuple(int(v) for v in np.asarray(ctx.value(given, "output_shape (input 2)")).reshape(-1))
        if len(want) != len(xs) or want[:2] != shape[:2] or any(w < 1 for w in want):
            node.fail(f"output_shape {list(want)} must keep the batch and channels {list(shape[:2])} and have "
                      f"{nsp} positive spatial size(s)")
        shape = want
    zeros = ctx.const(np.zeros((_prod(shape),)), ctx.dtype_of(x))
    flat = ctx.call("scatter_elements", zeros, ctx.reshape(ctx.cast(indices, "int64"), (_prod(xs),)),
                    ctx.reshape(x, (_prod(xs),)), axis=0, reduction="update")
    return ctx.reshape(flat, shape)


def _affine_grid(ctx, node, inputs):
    # theta [N, k, k+1] applied to the normalized coordinates of every output point:
    # image.affine_grid's [N, k, (D,) H, W], its coordinates moved last: [N, (D,) H, W, k]
    theta, size = inputs
    sizes = [int(v) for v in np.asarray(ctx.value(size, "size (input 1)")).reshape(-1)]
    if len(sizes) not in (4, 5):
        node.fail(f"size {sizes} must be [N, C, H, W] or [N, C, D, H, W]")
    spatial = sizes[2:]
    k = len(spatial)
    ts = ctx.shape(theta)
    if tuple(ts) != (sizes[0], k, k + 1):
        node.fail(f"theta has shape {ts}; for size {sizes} it must be {(sizes[0], k, k + 1)}")
    grid = ctx.call("image.affine_grid", theta, target_shape=tuple(spatial),
                    align_corners=node.flag("align_corners", 0))
    return ctx.call("transpose", grid, axes=(0,) + tuple(range(2, k + 2)) + (1,))


def _grid_sample(ctx, node, inputs):
    # x [N, C, (D,) H, W] sampled at grid [N, (Do,) Ho, Wo, k] (x, y(, z) in [-1, 1]): one
    # image.grid_sample, whose grid holds the k coordinates on axis 1
    x, grid = inputs
    xs, gs = ctx.shape(x), ctx.shape(grid)
    k = len(xs) - 2
    if k not in (2, 3) or len(gs) != k + 2 or gs[-1] != k or gs[0] != xs[0]:
        node.fail(f"input {xs} and grid {gs}: tecc samples inputs [N, C, H, W] at grids [N, Ho, Wo, 2] and inputs "
                  "[N, C, D, H, W] at grids [N, Do, Ho, Wo, 3]")
    mode = node.attr("mode", "linear" if node.opset >= 20 else "bilinear")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    method = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)  # opset 20 renamed the modes
    if method not in ("bilinear", "nearest", "bicubic"):
        node.fail(f"mode {mode!r} must be 'linear' ('bilinear' before opset 20), 'nearest' or 'cubic' ('bicubic')")
    if method == "bicubic" and k != 2:
        node.fail("cubic sampling of a 3-D input is not supported; tecc samples 3-D inputs 'linear' or 'nearest'")
    padding = node.attr("padding_mode", "zeros")
    padding = padding.decode() if isinstance(padding, bytes) else str(padding)
    if padding not in ("zeros", "border", "reflection"):
        node.fail(f"padding_mode {padding!r} must be 'zeros', 'border' or 'reflection'")
    points = ctx.call("transpose", grid, axes=(0, k + 1) + tuple(range(1, k + 1)))
    return ctx.call("image.grid_sample", x, points, method=method, layout="NCHW" if k == 2 else "NCDHW",
                    padding_mode=padding, align_corners=node.flag("align_corners", 0))


def _det(ctx, node, inputs):
    # the graph's det: Gaussian elimination with partial pivoting, one extern kernel
    xs = ctx.shape(inputs[0])
    if len(xs) < 2 or xs[-1] != xs[-2]:
        node.fail(f"the input has shape {xs}; Det takes square matrices in its last two axes ([..., M, M])")
    return ctx.call("det", inputs[0])


def _spectral_dtype(ctx, x) -> str:
    """The dtype a DFT of ``x`` computes in: float64 for float64 signals (their
    digits kept), float32 otherwise (float16 and bfloat16 too: the sums of products
    need float32's)."""
    return "float64" if ctx.dtype_of(x) == "float64" else "float32"


def _complex_product(ctx, real, imag, cos_m, sin_m):
    """The real and imaginary parts of the rows ``real + i imag`` ([M, n]; ``imag``
    None for a real signal) times the constant matrix ``cos_m + i sin_m``
    ([bins, n], transposed) -- a DFT's (the sign of the sine, and any scale,
    folded into the matrices): ``(a + ib)(c + is) = (ac - bs) + i(as + bc)``, in
    ``real``'s dtype."""
    bins = int(cos_m.shape[0])
    dtype = ctx.dtype_of(real)
    cos_c, sin_c = ctx.const(cos_m, dtype), ctx.const(sin_m, dtype)
    out_r = ctx.call("nn.dense", real, cos_c, units=bins)
    out_i = ctx.call("nn.dense", real, sin_c, units=bins)
    if imag is not None:
        out_r = ctx.call("subtract", out_r, ctx.call("nn.dense", imag, sin_c, units=bins))
        out_i = ctx.call("add", out_i, ctx.call("nn.dense", imag, cos_c, units=bins))
    return out_r, out_i


def _stft(ctx, node, inputs):
    # frames of the signal [B, S, 1 or 2] gathered by a constant index ([frames, L]),
    # times the window (an input: a run-time tensor), then the DFT of each frame as
    # products with constant cosine and sine matrices -> [B, frames, bins, 2]
    x, step = inputs[0], inputs[1]
    xs = ctx.shape(x)
    if len(xs) != 3 or xs[-1] not in (1, 2):
        node.fail(f"the signal has shape {xs}; it must be [batch, signal_length, 1] (real) or "
                  "[batch, signal_length, 2] (real, imaginary)")
    batch, length, parts = xs
    step = ctx.scalar_value(step, "frame_step (input 1)", int)
    window = ctx.optional_input(inputs, 2)
    given = ctx.optional_input(inputs, 3)
    frame = ctx.scalar_value(given, "frame_length (input 3)", int)
    if window is not None:
        ws = ctx.shape(window)
        if len(ws) != 1:
            node.fail(f"the window has shape {ws}; it must be 1-D")
        if frame is not None and frame != ws[0]:
            node.fail(f"the window has {ws[0]} samples and frame_length is {frame}: they must be equal")
        frame = ws[0]
    frame = length if frame is None else frame
    if step < 1 or not 1 <= frame <= length:
        node.fail(f"frame_step {step} and frame_length {frame} over a signal of {length} samples: frame_step must "
                  "be positive and frame_length from 1 to the signal's length")
    onesided = node.flag("onesided", 1)
    if onesided and parts == 2:
        node.fail("onesided=1 with a complex signal: a complex signal's spectrum is not symmetric; set onesided=0")
    frames = (length - frame) // step + 1
    index = np.arange(frames)[:, None] * step + np.arange(frame)[None, :]       # [frames, L]
    dtype = _spectral_dtype(ctx, x)
    taken = ctx.call("take", ctx.cast(x, dtype), ctx.const(index, "int32"), axis=1)  # [B, frames, L, parts]
    if window is not None:
        taken = ctx.call("multiply", taken, ctx.reshape(ctx.cast(window, dtype), (1, 1, frame, 1)))
    rows = batch * frames
    flat = ctx.reshape(taken, (rows, frame, parts))
    real = ctx.reshape(_axis_slice(ctx, flat, 2, 0, 1), (rows, frame))
    imag = ctx.reshape(_axis_slice(ctx, flat, 2, 1, 2), (rows, frame)) if parts == 2 else None
    bins = frame // 2 + 1 if onesided else frame
    theta = 2 * np.pi * np.arange(bins)[:, None] * np.arange(frame)[None, :] / frame
    out_r, out_i = _complex_product(ctx, real, imag, np.cos(theta), -np.sin(theta))
    stacked = ctx.call("concatenate", ctx.tuple([ctx.reshape(p, (rows, bins, 1)) for p in (out_r, out_i)]), axis=2)
    return ctx.cast(ctx.reshape(stacked, (batch, frames, bins, 2)), ctx.dtype_of(x))


def mel_weight_matrix(num_mel_bins: int, dft_length: int, sample_rate: int, lower_edge_hertz: float,
                      upper_edge_hertz: float) -> np.ndarray:
    """ONNX MelWeightMatrix's [dft_length // 2 + 1, num_mel_bins] float64 matrix:
    triangular filters peaking at 1, their edges ``num_mel_bins + 2`` points
    evenly spaced on the mel scale ``2595 log10(1 + f / 700)`` from the lower to
    the upper edge, each point rounded down to a spectrum bin
    (``(dft_length + 1) f // sample_rate``)."""
    points = np.arange(num_mel_bins + 2)
    low, high = (2595 * np.log1p(hz / 700) / np.log(10) for hz in (lower_edge_hertz, upper_edge_hertz))
    hertz = 700 * np.expm1((points * (high - low) / points.shape[0] + low) / 2595 * np.log(10))
    edges = (((dft_length + 1) * hertz) // sample_rate).astype(np.int64)
    out = np.zeros((dft_length // 2 + 1, num_mel_bins))
    for i in range(num_mel_bins):
        left, center, right = (int(e) for e in edges[i:i + 3])
        if center == left:
            out[center, i] = 1.0
        else:
            j = np.arange(left, center + 1)
            out[j, i] = (j - left) / (center - left)
        if right > center:
            j = np.arange(center, right)
            out[j, i] = (right - j) / (right - center)
    return out


def _mel_weight_matrix(ctx, node, inputs):
    # every operand is a scalar known when compiling: the matrix is a constant
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    values = [ctx.scalar_value(v, f"{n} (input {i})") for i, (n, v) in enumerate(zip(names, inputs))]
    bins, length, rate = (int(v) for v in values[:3])
    low, high = float(values[3]), float(values[4])
    if bins < 1 or length < 1 or rate < 1:
        node.fail(f"num_mel_bins {bins}, dft_length {length} and sample_rate {rate} must be positive")
    if not 0 <= low < high <= rate / 2:
        node.fail(f"lower_edge_hertz {low} and upper_edge_hertz {high} must satisfy 0 <= lower < upper <= "
                  f"sample_rate / 2 ({rate / 2})")
    out = mel_weight_matrix(bins, length, rate, low, high)
    return ctx.const(out, _np_dtype(int(node.attr("output_datatype", 1)), node.where))


def _dft(ctx, node, inputs):
    # the discrete Fourier transform along ``axis`` as products with constant cosine and
    # sine matrices (its length is static); the last axis holds [real] or [real, imag]
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    if rank < 2 or xs[-1] not in (1, 2):
        node.fail(f"the signal has shape {xs}; its last axis must hold 1 (real) or 2 (real, imaginary) values")
    if node.opset >= 20:
        given = ctx.optional_input(inputs, 2)
        axis = ctx.scalar_value(given, "axis (input 2)", int, default=-2)
    else:
        axis = int(node.attr("axis", 1))
    axis = _normalize_axis(axis, rank, node)
    if axis == rank - 1:
        node.fail("axis is the last axis, which holds the real and imaginary parts")
    inverse, onesided = node.flag("inverse", 0), node.flag("onesided", 0)
    n = xs[axis]
    length = ctx.optional_input(inputs, 1)
    if length is not None:
        want = ctx.scalar_value(length, "dft_length (input 1)", int)
        if not (inverse and onesided) and want != n:
            node.fail(f"dft_length {want} differs from the signal's {n} samples; pad or slice the signal first")
    complex_in = xs[-1] == 2
    perm = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    moved = ctx.call("transpose", x, axes=tuple(perm)) if perm != list(range(rank)) else x
    outer = tuple(xs[d] for d in perm[:-2])
    dtype = _spectral_dtype(ctx, x)
    flat = ctx.reshape(ctx.cast(moved, dtype), (_prod(outer), n, xs[-1]))
    real = ctx.reshape(_axis_slice(ctx, flat, 2, 0, 1), (_prod(outer), n))
    imag = ctx.reshape(_axis_slice(ctx, flat, 2, 1, 2), (_prod(outer), n)) if complex_in else None
    if inverse and onesided:
        # irfft: the Hermitian spectrum's missing bins mirror the given ones; a real output
        size = 2 * (n - 1) if length is None else want
        k = np.arange(n)[:, None]
        t = np.arange(size)[None, :]
        weight = np.where((k == 0) | (2 * k == size), 1.0, 2.0) / size
        theta = 2 * np.pi * k * t / size
        cos_m, sin_m = (weight * np.cos(theta)).T, (weight * np.sin(theta)).T  # [size, n]
        out = ctx.call("nn.dense", real, ctx.const(cos_m, dtype), units=size)
        if imag is not None:
            out = ctx.call("subtract", out, ctx.call("nn.dense", imag, ctx.const(sin_m, dtype), units=size))
        parts, bins = [out], size
    else:
        bins = n // 2 + 1 if onesided else n
        k = np.arange(bins)[:, None]
        theta = 2 * np.pi * k * np.arange(n)[None, :] / n      # [bins, n]
        sign, scale = (1.0, 1.0 / n) if inverse else (-1.0, 1.0)
        parts = list(_complex_product(ctx, real, imag, scale * np.cos(theta), scale * sign * np.sin(theta)))
    stacked = ctx.call("concatenate", ctx.tuple([ctx.reshape(p, (_prod(outer), bins, 1)) for p in parts]), axis=2) \
        if len(parts) > 1 else ctx.reshape(parts[0], (_prod(outer), bins, 1))
    out = ctx.reshape(stacked, outer + (bins, len(parts)))
    inv = [0] * rank
    for i, d in enumerate(perm):
        inv[d] = i
    out = ctx.call("transpose", out, axes=tuple(inv)) if perm != list(range(rank)) else out
    return ctx.cast(out, ctx.dtype_of(x))
