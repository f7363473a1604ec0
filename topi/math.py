"""Element-wise math on tensors (TVM's ``topi.math``): ``exp``, ``tanh``, ``sigmoid``,
``abs``, ... each a new tensor of the input's shape tagged
:data:`~.tag.ELEMWISE`, named ``T_<op>``.

Semantics worth knowing:

* ``round`` rounds halves to even (``round(2.5) == 2``, ``round(-0.5) == -0``) on
  every target, like numpy's ``np.round`` and ONNX's ``Round``.  (TVM's own
  ``round`` does this on CPUs, through LLVM's ``nearbyint``, but rounds halves away
  from zero on CUDA, through ``roundf``; tecc prints ``nearbyint`` for both.)
* ``sign`` gives -1, 0 or 1 in the input's dtype (0 for -0.0).
* the transcendental functions (``exp``, ``log``, ``erf``...) of an integer tensor
  are computed in float32 and give float32.
"""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir import dtype as _dt
from ..tir import op as _op
from . import tag
from .utils import TopiError


def _check_tensor(x, name):
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"topi.{name}: expected a tensor, got {x!r}; for an expression use te.{name}")


def _make_unary(name, fexpr, doc):
    def op(x):
        _check_tensor(x, name)
        return te.compute(x.shape, lambda *i: fexpr(x(*i)), name=f"T_{name}", tag=tag.ELEMWISE)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"``{doc}`` of every element of ``x``.\n\n    Parameters\n    ----------\n    x : Tensor\n\n"
                  "    Returns\n    -------\n    Tensor\n        of ``x``'s shape and dtype.\n    ")
    return op


def _sign(v):
    zero = _op.const(0, v.dtype)
    return _op.select(v > zero, _op.const(1, v.dtype), _op.select(v < zero, _op.const(-1, v.dtype), zero))


identity = _make_unary("identity", lambda v: v, "x")
negative = _make_unary("negative", _op.neg, "-x")
exp = _make_unary("exp", _op.exp, "exp(x)")
erf = _make_unary("erf", _op.erf, "erf(x)")
tanh = _make_unary("tanh", _op.tanh, "tanh(x)")
tan = _make_unary("tan", _op.tan, "tan(x)")
cos = _make_unary("cos", _op.cos, "cos(x)")
cosh = _make_unary("cosh", _op.cosh, "cosh(x)")
sin = _make_unary("sin", _op.sin, "sin(x)")
sinh = _make_unary("sinh", _op.sinh, "sinh(x)")
acos = _make_unary("acos", _op.acos, "acos(x)")
asin = _make_unary("asin", _op.asin, "asin(x)")
atan = _make_unary("atan", _op.atan, "atan(x)")
floor = _make_unary("floor", _op.floor, "floor(x)")
ceil = _make_unary("ceil", _op.ceil, "ceil(x)")
trunc = _make_unary("trunc", _op.trunc, "trunc(x)")
round = _make_unary("round", _op.round, "round(x) (halves to even)")  # noqa: A001  (TVM's name)
sign = _make_unary("sign", _sign, "sign(x) (-1, 0 or 1)")
abs = _make_unary("abs", _op.abs, "|x|")  # noqa: A001  (TVM's name)
isnan = _make_unary("isnan", _op.isnan, "isnan(x)")
isfinite = _make_unary("isfinite", _op.isfinite, "isfinite(x)")
isinf = _make_unary("isinf", _op.isinf, "isinf(x)")
log = _make_unary("log", _op.log, "log(x)")
log2 = _make_unary("log2", _op.log2, "log2(x)")
log10 = _make_unary("log10", _op.log10, "log10(x)")
sqrt = _make_unary("sqrt", _op.sqrt, "sqrt(x)")
rsqrt = _make_unary("rsqrt", _op.rsqrt, "1 / sqrt(x)")
sigmoid = _make_unary("sigmoid", _op.sigmoid, "1 / (1 + exp(-x))")


def _reciprocal(v):
    return _op.div(_op.const(1, v.dtype), v)


def _asinh(v):  # log(x + sqrt(x^2 + 1)), odd: computed on |x| for accuracy when x < 0
    a = _op.abs(v)
    r = _op.log(a + _op.sqrt(a * a + _op.const(1, v.dtype)))
    return _op.select(v < _op.const(0, v.dtype), -r, r)


def _acosh(v):  # log(x + sqrt(x^2 - 1)), x >= 1
    return _op.log(v + _op.sqrt(v * v - _op.const(1, v.dtype)))


def _atanh(v):  # log((1 + x) / (1 - x)) / 2, |x| < 1
    one = _op.const(1, v.dtype)
    return _op.log((one + v) / (one - v)) * _op.const(0.5, v.dtype)


reciprocal = _make_unary("reciprocal", _reciprocal, "1 / x")
asinh = _make_unary("asinh", _asinh, "asinh(x)")
acosh = _make_unary("acosh", _acosh, "acosh(x)")
atanh = _make_unary("atanh", _atanh, "atanh(x)")
fast_exp = exp
fast_tanh = tanh
fast_erf = erf


def clip(x, a_min, a_max):
    """Every element of ``x`` clamped to ``[a_min, a_max]``.

    Parameters
    ----------
    x : Tensor
    a_min, a_max : number or expression
        Converted to ``x``'s dtype.

    Returns
    -------
    Tensor

    Raises
    ------
    TopiError
        When both bounds are numbers and ``a_min > a_max``.
    """
    _check_tensor(x, "clip")
    if isinstance(a_min, (int, float)) and isinstance(a_max, (int, float)) and a_min > a_max:
        raise TopiError(f"clip({x.name!r} {tuple(x.shape)}): a_min={a_min} is greater than a_max={a_max}")

    def f(*i):
        lo = _op.cast(x.dtype, a_min)
        hi = _op.cast(x.dtype, a_max)
        return _op.max(_op.min(x(*i), hi), lo)

    return te.compute(x.shape, f, name="T_clip", tag=tag.ELEMWISE)


def cast(x, dtype, span=None, saturate=False):
    """``x`` converted to ``dtype``: a tensor element-wise, or an expression or
    number as an expression.

    A conversion to an 8- or 4-bit float rounds to nearest, ties to even; a value
    past the format's largest finite one becomes infinity, or NaN where the format
    has none (numpy's, ml_dtypes' and torch's conversion).  ``saturate=True`` makes
    such values, infinities included, the largest finite value of their sign
    instead, NaN staying NaN (ONNX's Cast with ``saturate=1``, CUDA's
    ``__NV_SATFINITE``); it applies to the signed storage floats."""
    dtype = _dt.canonical(dtype)
    fmt = _dt.parse(dtype).float_format
    if saturate and (fmt is None or not fmt.signed):
        raise TopiError(f"cast(..., {dtype!r}, saturate=True): saturation applies to the signed 8- and 4-bit "
                        f"floats (float8_e4m3fn, float8_e5m2, float4_e2m1fn...), not to {dtype}")

    def convert(v):
        if saturate:  # clamped where it is finite (a NaN compares false)
            v = v if _dt.is_float(v.dtype) else _op.cast("float32", v)
            top = _op.const(fmt.max, v.dtype)
            v = _op.if_then_else(v > top, top, _op.if_then_else(v < -top, -top, v))
        return _op.cast(dtype, v)

    if isinstance(x, te.Tensor):
        return te.compute(x.shape, lambda *i: convert(x(*i)), name="T_cast", tag=tag.ELEMWISE)
    return convert(_op.const(x) if saturate and isinstance(x, (int, float)) else x)


def reinterpret(x, dtype):
    """The bits of every element of ``x`` read as ``dtype`` (of the same width)."""
    _check_tensor(x, "reinterpret")
    return te.compute(x.shape, lambda *i: _op.reinterpret(dtype, x(*i)), name="T_reinterpret", tag=tag.ELEMWISE)
