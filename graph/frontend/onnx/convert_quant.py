"""Converters of quantized operators: QuantizeLinear and DequantizeLinear (the QDQ
format), DynamicQuantizeLinear, and the integer products MatMulInteger, ConvInteger,
QLinearMatMul and QLinearConv (the operator format onnxruntime's quantization tools
write).

The integer products are computed in int32 (each operand minus its zero point, as
onnxruntime does), then requantized as onnxruntime requantizes: the int32 sums times
the float32 multiplier ``a_scale * b_scale / y_scale``, rounded half to even, plus the
output's zero point, saturated to its type."""
from __future__ import annotations

import numpy as np

from ....runtime.dtypes import int_range, storage_float
from ...ir import Constant
from .common import _normalize_axis, _np_dtype, _prod
from .convert_nn import _conv, _matmul


def _quant_params(ctx, node, x, scale, zero_point, what):
    """``scale`` and ``zero_point`` shaped to broadcast against ``x`` along ``axis``
    (a scalar: per tensor; 1-D: per axis; ``block_size`` B > 0: blocked, one value
    per B consecutive elements along the axis, gathered to ``x``'s shape)."""
    block = int(node.attr("block_size", 0))
    if block:
        return _blocked_params(ctx, node, x, scale, zero_point, block, what)
    rank = ctx.rank(x)
    ss = ctx.shape(scale)
    if len(ss) == 0 or _prod(ss) == 1 and len(ss) <= 1:
        shape = ()
    elif len(ss) == 1:
        axis = _normalize_axis(node.attr("axis", 1), rank, node)
        if ss[0] != ctx.shape(x)[axis]:
            node.fail(f"{what} has {ss[0]} values for axis {axis} of size {ctx.shape(x)[axis]}")
        shape = tuple(ss[0] if d == axis else 1 for d in range(rank))
    else:
        node.fail(f"{what} has shape {ss}; tecc quantizes per tensor (a scalar) or per axis (1-D)")
    scale = ctx.reshape(scale, shape)
    if zero_point is not None:
        zero_point = ctx.reshape(zero_point, shape)
    return scale, zero_point


def _blocked_params(ctx, node, x, scale, zero_point, block, what):
    """Blocked quantization's ``scale`` and ``zero_point``: of ``x``'s shape but
    ``ceil(D / block)`` along ``axis`` (of size D); each gathered to ``x``'s shape
    (element ``i`` along the axis reads entry ``i // block``), which fusion computes
    inside the (de)quantizing kernel."""
    if block < 0:
        node.fail(f"block_size is {block}; it must be positive (or 0: per tensor or per axis)")
    rank = ctx.rank(x)
    axis = _normalize_axis(node.attr("axis", 1), rank, node)
    xs, ss = ctx.shape(x), ctx.shape(scale)
    want = tuple(-(-d // block) if k == axis else d for k, d in enumerate(xs))
    if tuple(ss) != want:
        node.fail(f"{what} has shape {tuple(ss)}; blocked quantization of {tuple(xs)} in blocks of {block} along "
                  f"axis {axis} needs shape {want}")
    # left to the build: folded on a CPU, gathered inside the product's kernel on a GPU
    index = ctx.const(np.arange(xs[axis]) // block, "int32")
    scale = ctx.call_unfolded("take", scale, index, axis=axis)
    if zero_point is not None:
        if tuple(ctx.shape(zero_point)) != want:
            node.fail(f"the zero point has shape {tuple(ctx.shape(zero_point))}; it must have the scale's, {want}")
        zero_point = ctx.call_unfolded("take", zero_point, index, axis=axis)
    return scale, zero_point


def _dequantize_linear(ctx, node, inputs):
    x, scale = inputs[0], inputs[1]
    zero_point = ctx.optional_input(inputs, 2)
    out_dtype = ctx.dtype_of(inputs[1])
    if node.attr("output_dtype"):
        out_dtype = _np_dtype(int(node.attr("output_dtype")), node.where)
    scale, zero_point = _quant_params(ctx, node, x, scale, zero_point, "x_scale (input 1)")
    # (x - zero_point) * scale, in float32, then in the scale's type (or output_dtype)
    xf = ctx.cast(x, "float32")
    if zero_point is not None:
        xf = ctx.call("subtract", xf, ctx.cast(zero_point, "float32"))
    return ctx.cast(ctx.call("multiply", xf, ctx.cast(scale, "float32")), out_dtype)


#: the integer types QuantizeLinear writes (int4, uint4, int2 and uint2 too: their
#: ranges are runtime.dtypes'), and the 8- and 4-bit floats
_QUANT_INTS = ("uint8", "int8", "uint16", "int16", "int32", "uint4", "int4", "uint2", "int2")


def _quantize_linear(ctx, node, inputs):
    # an integer type: saturate(round_half_to_even(x / scale) + zero_point); an 8- or
    # 4-bit float: the cast of x / scale + zero_point, saturated unless saturate=0 (a
    # 4-bit float saturates anyway); in the zero point's type (uint8 without one, or
    # output_dtype)
    x, scale = inputs[0], inputs[1]
    zero_point = ctx.optional_input(inputs, 2)
    scale, zero_point = _quant_params(ctx, node, x, scale, zero_point, "y_scale (input 1)")
    out_dtype = ctx.dtype_of(zero_point) if zero_point is not None else "uint8"
    if node.attr("output_dtype"):
        out_dtype = _np_dtype(int(node.attr("output_dtype")), node.where)
    fmt = storage_float(out_dtype)
    if out_dtype not in _QUANT_INTS and (fmt is None or fmt.bits == 16 or not fmt.signed):
        node.fail(f"quantizing to {out_dtype} is not supported; tecc quantizes to {', '.join(_QUANT_INTS)} and the "
                  f"8- and 4-bit floats float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, "
                  f"float4_e2m1fn")
    xf = ctx.cast(x, "float32")
    q = ctx.call("divide", xf, ctx.cast(scale, "float32"))
    if fmt is not None:
        if zero_point is not None:
            q = ctx.call("add", q, ctx.cast(zero_point, "float32"))
        return ctx.cast(q, out_dtype, saturate=fmt.bits == 8 and node.flag("saturate", 1))
    lo, hi = int_range(out_dtype)
    q = ctx.call("round", q)
    if zero_point is not None:
        q = ctx.call("add", q, ctx.cast(zero_point, "float32"))
    return ctx.cast(ctx.call("clip", q, a_min=float(lo), a_max=float(hi)), out_dtype)


def _minus_zero_point(ctx, node, x, zero_point, size, shape, what):
    """``x - zero_point`` in int32 (the zero point as :func:`_along` reads it)."""
    xi = ctx.cast(x, "int32")
    if zero_point is None:
        return xi
    return ctx.call("subtract", xi, _along(ctx, node, zero_point, "int32", size, shape, what))


def _along(ctx, node, value, dtype, size, shape, what):
    """``value`` -- a scalar, or 1-D with ``size`` entries (one per row, column or
    channel) -- in ``dtype``, shaped to broadcast (``shape`` for the 1-D one)."""
    return ctx.reshape(ctx.cast(value, dtype), _per_row_or_column(ctx, node, value, size, shape, what))


def _per_row_or_column(ctx, node, value, size, shape, what):
    """The shape a scalar or a 1-D ``value`` of ``size`` entries takes to broadcast
    (``shape`` for the 1-D one)."""
    vs = ctx.shape(value)
    if _prod(vs) == 1 and len(vs) <= 1:
        return ()
    if len(vs) == 1 and vs[0] == size:
        return shape
    node.fail(f"{what} has shape {list(vs)}; it must be a scalar or hold {size} values")


def _rows_columns(ctx, a, b) -> tuple:
    """The rows of ``a`` and the columns of ``b`` in their product (1 for a vector)."""
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    return (a_shape[-2] if len(a_shape) >= 2 else 1), (b_shape[-1] if len(b_shape) >= 2 else 1)


def _integer_matmul(ctx, node, a, a_zero, b, b_zero):
    """``(a - a_zero) x (b - b_zero)`` in int32 (MatMulInteger): the zero points per
    tensor, or a's per row and b's per column."""
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    if len(a_shape) < 1 or len(b_shape) < 1:
        node.fail("MatMulInteger of a scalar (rank-0) operand")
    m, n = _rows_columns(ctx, a, b)
    ai = _minus_zero_point(ctx, node, a, a_zero, m, (m, 1), "a_zero_point (input 2)")
    if len(b_shape) == 2 and len(a_shape) >= 2:
        # a 2-D weight stays 8-bit in the parameters (the dense widens it as it reads):
        # sum_k a'(b - zb) = sum_k a' b - zb sum_k a'
        k = a_shape[-1]
        if b_shape[0] != k:
            node.fail(f"the operands' shapes {a_shape} and {b_shape} do not multiply (inner sizes {k} and "
                      f"{b_shape[0]})")
        flat = ctx.reshape(ai, (_prod(a_shape[:-1]), k))
        acc = ctx.call("nn.dense", flat, ctx.call("transpose", b, axes=(1, 0)), units=n, out_dtype="int32")
        if b_zero is not None:
            zb = _along(ctx, node, b_zero, "int32", n, (n,), "b_zero_point (input 3)")
            acc = ctx.call("subtract", acc, ctx.call("multiply", ctx.call("sum", flat, axis=(1,), keepdims=True), zb))
        return ctx.reshape(acc, a_shape[:-1] + (n,))
    bi = _minus_zero_point(ctx, node, b, b_zero, n, (n,), "b_zero_point (input 3)")
    return _matmul(ctx, node, [ai, bi])


def _integer_conv(ctx, node, x, x_zero, w, w_zero):
    """``conv(x - x_zero, w - w_zero)`` in int32 (ConvInteger): x's zero point per
    tensor, w's per tensor or per output channel; the padding reads x's zero point.

    The weight stays 8-bit (the convolution widens it as it reads it): its zero point
    comes off afterwards, as ``zw[f]`` times the sum of ``x - x_zero`` over filter
    ``f``'s window and its group's channels -- a convolution of the same shape with a
    kernel of ones, one output channel per group."""
    ws = ctx.shape(w)
    xi = _minus_zero_point(ctx, node, x, x_zero, 1, (), "x_zero_point (input 2)")
    acc = _conv(ctx, node, [xi, w], out_dtype="int32")
    if w_zero is None or _is_zero_constant(w_zero):
        return acc  # symmetric weights (zero point 0)
    groups = int(node.attr("group", 1))
    ones = ctx.const(np.ones((groups,) + tuple(ws[1:])), "uint8")
    window = _conv(ctx, node, [xi, ones], out_dtype="int32")  # (N, groups, ...): one sum per group
    if groups > 1 or ws[0] > 1:
        per_filter = np.arange(ws[0]) // (ws[0] // groups)  # the group of each filter
        window = ctx.call("take", window, ctx.const(per_filter, "int64"), axis=1)
    zw = _along(ctx, node, w_zero, "int32", ws[0], (ws[0],) + (1,) * (len(ws) - 2), "w_zero_point (input 3)")
    return ctx.call("subtract", acc, ctx.call("multiply", window, zw))


def _is_zero_constant(value) -> bool:
    return isinstance(value, Constant) and not np.any(value.data)


def _matmul_integer(ctx, node, inputs):
    return _integer_matmul(ctx, node, inputs[0], ctx.optional_input(inputs, 2), inputs[1],
                           ctx.optional_input(inputs, 3))


def _conv_integer(ctx, node, inputs):
    return _integer_conv(ctx, node, inputs[0], ctx.optional_input(inputs, 2), inputs[1],
                         ctx.optional_input(inputs, 3))


def _requantize(ctx, node, acc, multiplier, zero_point):
    """``saturate(round_half_to_even(acc * multiplier) + zero_point)`` in the zero
    point's type (onnxruntime's requantization of int32 sums); the output is quantized
    per tensor."""
    if _prod(ctx.shape(zero_point)) != 1:
        node.fail(f"y_zero_point has shape {list(ctx.shape(zero_point))}; tecc quantizes the output per tensor "
                  "(a scalar)")
    zero_point = ctx.reshape(zero_point, ())
    out_dtype = ctx.dtype_of(zero_point)
    if out_dtype not in ("uint8", "int8"):
        node.fail(f"the output zero point is {out_dtype}; QLinear operators produce uint8 or int8")
    lo, hi = int_range(out_dtype)
    scaled = ctx.call("round", ctx.call("multiply", ctx.cast(acc, "float32"), multiplier))
    shifted = ctx.call("add", scaled, ctx.cast(zero_point, "float32"))
    return ctx.cast(ctx.call("clip", shifted, a_min=float(lo), a_max=float(hi)), out_dtype)


def _scalar_of(ctx, node, value, what):
    if _prod(ctx.shape(value)) != 1:
        node.fail(f"{what} must be a scalar (per-tensor quantization), got shape {list(ctx.shape(value))}")
    return ctx.reshape(ctx.cast(value, "float32"), ())


def _qlinear_matmul(ctx, node, inputs):
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = inputs[:8]
    acc = _integer_matmul(ctx, node, a, a_zero, b, b_zero)
    m, n = _rows_columns(ctx, a, b)
    sa = _along(ctx, node, a_scale, "float32", m, (m, 1), "a_scale (input 1)")
    sb = _along(ctx, node, b_scale, "float32", n, (n,), "b_scale (input 4)")
    multiplier = ctx.call("divide", ctx.call("multiply", sa, sb), _scalar_of(ctx, node, y_scale, "y_scale (input 6)"))
    return _requantize(ctx, node, acc, multiplier, y_zero)


def _qlinear_conv(ctx, node, inputs):
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = inputs[:8]
    bias = ctx.optional_input(inputs, 8)
    acc = _integer_conv(ctx, node, x, x_zero, w, w_zero)
    out_rank = len(ctx.shape(acc))
    channels = ctx.shape(w)[0]
    per_channel = (channels,) + (1,) * (out_rank - 2)
    if bias is not None:
        acc = ctx.call("add", acc, ctx.reshape(ctx.cast(bias, "int32"), per_channel))
    sw = _along(ctx, node, w_scale, "float32", channels, per_channel, "w_scale (input 4)")
    multiplier = ctx.call("divide", ctx.call("multiply", _scalar_of(ctx, node, x_scale, "x_scale (input 1)"), sw),
                          _scalar_of(ctx, node, y_scale, "y_scale (input 6)"))
    return _requantize(ctx, node, acc, multiplier, y_zero)


def _dynamic_quantize_linear(ctx, node, inputs):
    """uint8 quantization with the scale and zero point of the tensor's own range
    (which is widened to hold 0): ``scale = (max - min) / 255`` (1 for a range of
    one value, as onnxruntime takes it), ``zero_point = round(saturate(-min /
    scale))``; the outputs are the quantized tensor, the scale and the zero point."""
    x = ctx.cast(inputs[0], "float32")
    rank = ctx.rank(x)
    axes = tuple(range(rank))
    zero = ctx.const(np.array(0.0), "float32")
    lo = ctx.call("minimum", ctx.call("min", x, axis=axes, keepdims=False), zero) if rank else \
        ctx.call("minimum", x, zero)
    hi = ctx.call("maximum", ctx.call("max", x, axis=axes, keepdims=False), zero) if rank else \
        ctx.call("maximum", x, zero)
    span = ctx.call("subtract", hi, lo)
    scale = ctx.call("where", ctx.call("equal", span, zero), ctx.const(np.array(1.0), "float32"),
                     ctx.call("divide", span, ctx.const(np.array(255.0), "float32")))
    zp = ctx.call("round", ctx.call("clip", ctx.call("negative", ctx.call("divide", lo, scale)), a_min=0.0,
                                    a_max=255.0))
    q = ctx.call("add", ctx.call("round", ctx.call("divide", x, scale)), zp)
    y = ctx.cast(ctx.call("clip", q, a_min=0.0, a_max=255.0), "uint8")
    return [y, scale, ctx.cast(zp, "uint8")]
