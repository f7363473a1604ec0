"""Converters of element-wise operators, casts, constants and shapes.

A converter is ``fn(ctx, node, inputs) -> Expr`` (or a list, one per output):
``ctx`` is the importer (:class:`.importer._Importer`), ``node`` an
:class:`.common.OnnxNode`."""
from __future__ import annotations

import math

import numpy as np

from ....runtime.dtypes import storage_float
from ...ir import Constant
from .common import _FOLD_LIMIT, _np_dtype, _prod
from .convert_random import dropout_training


def _unary(op_name):
    def convert(ctx, node, inputs):
        return ctx.call(op_name, inputs[0])

    return convert


def _binary(op_name):
    def convert(ctx, node, inputs):
        return ctx.call(op_name, inputs[0], inputs[1])

    return convert


def _div(ctx, node, inputs):
    return ctx.call("divide", inputs[0], inputs[1])


def _pow(ctx, node, inputs):
    base, exponent = inputs
    return ctx.call("power", base, ctx.cast(exponent, ctx.dtype_of(base)))


def _mod(ctx, node, inputs):
    x, y = inputs[0], inputs[1]
    if node.attr("fmod", 0):
        return ctx.call("trunc_mod", x, y)
    if not ctx.dtype_of(x).startswith(("float", "bfloat")):
        return ctx.call("floor_mod", x, y)
    # Mod-28's fmod=0 on floats (undefined before; numpy's mod): the remainder of the truncated
    # division moved into y's sign, a zero taking y's sign -- where x - floor(x / y) * y would give
    # NaN for an infinite y and a finite x (-3 mod inf is inf, 3 mod -inf is -inf)
    r = ctx.call("trunc_mod", x, y)
    zero = ctx.scalar(0, r)
    y_negative = ctx.call("less", y, zero)
    moved = ctx.call("where", ctx.call("not_equal", y_negative, ctx.call("less", r, zero)), ctx.call("add", r, y), r)
    signed_zero = ctx.call("where", y_negative, ctx.call("negative", ctx.call("abs", r)), ctx.call("abs", r))
    return ctx.call("where", ctx.call("equal", r, zero), signed_zero, moved)


def _variadic(op_name, mean=False):
    def convert(ctx, node, inputs):
        ops = [x for x in inputs if x is not None]
        if not ops:
            node.fail("needs at least one input")
        out = ops[0]
        for x in ops[1:]:
            out = ctx.call(op_name, out, x)
        if mean and len(ops) > 1:
            out = ctx.call("divide", out, ctx.scalar(len(ops), out))
        return out

    return convert


def _identity(ctx, node, inputs):
    return inputs[0]


def _dropout(ctx, node, inputs):
    # inference (or training with a ratio of 0): the input passes through, every element kept;
    # training: elements dropped at random (.convert_random)
    x = inputs[0]
    training = ctx.optional_input(inputs, 2)
    if ctx.scalar_value(training, "training_mode (input 2)", bool, default=False):
        given = ctx.optional_input(inputs, 1)
        ratio = ctx.scalar_value(given, "ratio (input 1)", float, default=0.5)
        if ratio != 0.0:
            return dropout_training(ctx, node, x, ratio)
    mask = Constant(np.ones(ctx.shape(x), dtype=bool))
    return [x, mask]


def _saturates(node, to: str) -> bool:
    """Whether Cast/CastLike ``node`` saturates its conversion to ``to``: ``saturate``
    (1 unless set, from opset 19) applies to the 8-bit floats with a sign (the 4-bit
    float, which has no infinity or NaN, saturates anyway)."""
    fmt = storage_float(to)
    return fmt is not None and fmt.bits == 8 and fmt.signed and node.flag("saturate", 1)


def _cast(ctx, node, inputs):
    to = _np_dtype(node.required("to"), node.where)
    if to == "float8_e8m0fnu":
        return _to_e8m0(ctx, node, inputs[0])
    return ctx.cast(inputs[0], to, saturate=_saturates(node, to))


def _to_e8m0(ctx, node, x):
    """Cast-24 to the 8-bit exponent type, as ONNX defines it: the exponent field of
    the value as float32 (its sign dropped; 0 and the subnormals have exponent 0),
    rounded by the mantissa as ``round_mode`` says -- ``up`` (the default) to the
    next power of two unless exact, ``down`` truncating, ``nearest`` on the
    mantissa's guard, round and sticky bits -- and, with ``saturate``, not past
    the largest exponent; NaN and infinity give NaN (all bits set).  Written with
    integer operators on the bits, so every target computes it the same."""
    mode = node.attr("round_mode", "up")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("up", "down", "nearest"):
        node.fail(f"round_mode {mode!r} must be 'up', 'down' or 'nearest'")
    saturate = node.flag("saturate", 1)
    u32 = "uint32"

    def const(v):
        return ctx.const(np.array(v, u32), u32)

    def bit(mask):
        return ctx.call("not_equal", ctx.call("bitwise_and", bits, const(mask)), const(0))

    bits = ctx.call("reinterpret", ctx.cast(x, "float32"), dtype=u32)
    exponent = ctx.call("bitwise_and", ctx.call("right_shift", bits, const(23)), const(0xFF))
    special = ctx.call("equal", exponent, const(0xFF))
    if mode == "up":
        round_up = bit(0x7FFFFF)
    elif mode == "nearest":
        lsb = ctx.call("greater", exponent, const(0))
        rest = ctx.call("logical_or", ctx.call("logical_or", bit(0x200000), bit(0x1FFFFF)), lsb)
        round_up = ctx.call("logical_and", bit(0x400000), rest)
    else:
        round_up = None
    if round_up is not None:
        if saturate:  # the largest exponent stays
            round_up = ctx.call("logical_and", round_up, ctx.call("not_equal", exponent, const(0xFE)))
        exponent = ctx.call("add", exponent, ctx.cast(round_up, u32))
    exponent = ctx.call("where", special, const(0xFF), exponent)
    return ctx.call("reinterpret", ctx.cast(exponent, "uint8"), dtype="float8_e8m0fnu")


def _bitcast(ctx, node, inputs):
    """BitCast-26: the bits read as ``to``, of the same width.  A bool has one byte
    holding 0 or 1 in ONNX's and numpy's layout, so bool to (u)int8 and back is the
    conversion (``x != 0`` the other way: a byte other than 0 or 1 is no bool)."""
    x = inputs[0]
    src = np.dtype(ctx.dtype_of(x))
    dst = np.dtype(_np_dtype(node.required("to"), node.where))
    if src.itemsize != dst.itemsize:
        node.fail(f"'to' is {dst} ({dst.itemsize * 8} bits), the input is {src} ({src.itemsize * 8} bits): "
                  "BitCast keeps the width")
    if src == dst:
        return x
    if np.bool_ in (src.type, dst.type):
        return ctx.cast(x, dst)
    return ctx.call("reinterpret", x, dtype=str(dst))


def _cast_like(ctx, node, inputs):
    to = ctx.dtype_of(inputs[1])
    if to == "float8_e8m0fnu":
        return _to_e8m0(ctx, node, inputs[0])
    return ctx.cast(inputs[0], to, saturate=_saturates(node, to))


def _constant(ctx, node, inputs):
    attrs = node.attrs
    if "value" in attrs:
        arr = np.asarray(attrs["value"])
    elif "value_float" in attrs:
        arr = np.asarray(attrs["value_float"], dtype="float32")
    elif "value_floats" in attrs:
        arr = np.asarray(attrs["value_floats"], dtype="float32")
    elif "value_int" in attrs:
        arr = np.asarray(attrs["value_int"], dtype="int64")
    elif "value_ints" in attrs:
        arr = np.asarray(attrs["value_ints"], dtype="int64")
    else:
        node.fail(f"only tensor, float and int values are supported (it sets {sorted(attrs)})")
    if arr.dtype.kind not in "biuf":
        node.fail(f"a constant of dtype {arr.dtype} is not supported")
    return Constant(arr)


def _constant_of_shape(ctx, node, inputs):
    shape = ctx.value(inputs[0], "the shape (input 0)").astype("int64").reshape(-1)
    value = node.attr("value")
    value = np.zeros((1,), "float32") if value is None else np.asarray(value).reshape(-1)
    if np.any(shape < 0):
        node.fail(f"the shape {tuple(shape)} has a negative dimension")
    if value.size != 1:
        node.fail(f"value has {value.size} elements; it must be a one-element tensor")
    shape = tuple(int(d) for d in shape)
    if _prod(shape) > _FOLD_LIMIT:  # the graph fills it (a constant this large would be held in the params)
        return ctx.call_unfolded("full", Constant(value.reshape(())), shape=shape, dtype=str(value.dtype))
    return Constant(np.full(shape, value[0], dtype=value.dtype))


def _shape(ctx, node, inputs):
    shape = np.asarray(ctx.shape(inputs[0]), dtype="int64")
    rank = len(shape)
    start, end = node.attr("start", 0), node.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return Constant(shape[start:end])


def _size(ctx, node, inputs):
    return Constant(np.asarray(_prod(ctx.shape(inputs[0])), dtype="int64"))


def _range(ctx, node, inputs):
    start, limit, delta = (ctx.scalar_value(x, what) for x, what in zip(inputs, ("start (input 0)", "limit (input 1)",
                                                                                 "delta (input 2)")))
    if delta == 0:
        node.fail("delta is 0")
    n = max(int(math.ceil((limit - start) / delta)), 0)
    return Constant((start + np.arange(n) * delta).astype(np.asarray(ctx.value(inputs[0], "start (input 0)")).dtype))
