"""Building expressions: constants, dtype promotion, arithmetic and intrinsics.

Every Python operator on an expression lands here.  Python numbers are converted to
constants of the other operand's dtype (``A[i] * 2.0`` stays float32); mixing an
integer and a float expression casts the integer; mixing integer widths widens.

Intrinsics are :class:`~tecc.tir.expr.Call` nodes with these ``op`` names:

==================  =====================================================
``exp`` ...         unary float math: exp exp2 exp10 log log2 log10 log1p sqrt rsqrt
                    sin cos tan asin acos atan sinh cosh tanh sigmoid erf
                    floor ceil trunc round nearbyint fabs isnan isinf isfinite
``pow fmod atan2``  binary float math
``abs``             absolute value of any numeric type
``if_then_else``    lazy select: only the chosen side is evaluated
``likely``          a branch hint on a condition
``bitwise_*``       and, or, xor, not; ``shift_left``, ``shift_right``
``popcount``        set bits of an integer
``reinterpret``     ``(value)``: the bits of ``value`` as the call's dtype (same width)
``call_extern``     ``(name, args...)``: a call of the C / CUDA function ``name``
                    (``call_pure_extern``: one without side effects)
``tir.tvm_call_packed``
                    ``(name, args...)``: a call of the function registered as
                    ``name``, from CPU code (see :func:`call_packed`)
``tecc.warp_shuffle_down``
                    ``(value, delta)``: a GPU warp exchange; each lane gets ``value``
                    of lane ``lane + delta`` of its warp (its own ``value`` where that
                    is past lane 31).  Every lane of the warp must execute it (mask
                    0xffffffff, width 32), so it only appears as the whole value of a
                    ``LetStmt`` outside thread-dependent control flow.  Scalar bool,
                    integer (up to 64 bits) and float (16/32/64 bits) values.
                    CUDA: ``__shfl_down_sync``; the CPU GPU-semantics path runs it as
                    an exchange through shared scratch between two barriers.
==================  =====================================================
"""
from __future__ import annotations

import enum

import builtins
import math
import numbers

import numpy as np

from ..errors import TeccTypeError
from . import dtype as _dt
from . import expr as _e
from .keys import (
    CALL_EXTERN, CALL_PACKED, CALL_PURE_EXTERN, REINTERPRET, STACK_MAKE_ARRAY, STACK_MAKE_SHAPE, STORAGE_SYNC,
    WMMA_FILL, WMMA_LOAD, WMMA_MMA, WMMA_STORE,
    WARP_SHUFFLE_DOWN,
)
from .expr import (
    Add, And, BinaryOp, Broadcast, Call, Cast, Div, EQ, FloatImm, FloorDiv, FloorMod, GE,
    GT, IntImm, IterVar, LE, LT, Max, Min, Mod, Mul, NE, Not, Or, PrimExpr, Select, Sub,
)

UNARY_MATH = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "floor", "ceil",
    "trunc", "round", "nearbyint", "fabs",
)
BINARY_MATH = ("pow", "fmod", "atan2", "hypot", "copysign")
PREDICATES = ("isnan", "isinf", "isfinite")


# ----------------------------------------------------------------------------
# constants and conversion
# ----------------------------------------------------------------------------

def const(value, dtype=None):
    """A constant; ``dtype`` defaults to int32 / float32 / bool by Python type."""
    if isinstance(value, PrimExpr):
        return value if dtype is None else cast(dtype, value)
    if isinstance(value, (np.generic,)):
        if dtype is None:
            dtype = _dt.canonical(value.dtype)
        value = value.item()
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, numbers.Integral):
            dtype = "int32" if -2**31 <= value < 2**31 else "int64"
        elif isinstance(value, numbers.Real):
            dtype = "float32"
        else:
            raise TeccTypeError(f"cannot make a constant of {value!r} ({type(value).__name__})")
    dtype = _dt.canonical(dtype)
    d = _dt.parse(dtype)
    if d.lanes > 1:
        return Broadcast(const(value, str(d.element_of())), d.lanes)
    if d.is_float:
        return FloatImm(dtype, float(value))
    if d.is_bool:
        return IntImm("bool", int(bool(value)))
    if not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TeccTypeError(f"constant {value!r} does not fit integer dtype {dtype}")
    return IntImm(dtype, int(value))


def convert(value, dtype_hint=None):
    """Turn a Python value (number, IterVar, lazy ``==``) into an expression."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, _e.EqualOp):
        return value.asobject()
    if isinstance(value, (bool, np.bool_)):
        return const(bool(value), "bool")
    if isinstance(value, (numbers.Integral, np.integer)):
        if dtype_hint is not None and not _dt.is_bool(dtype_hint):
            return const(int(value), _dt.element(dtype_hint))
        return const(int(value))
    if isinstance(value, (numbers.Real, np.floating)):
        if dtype_hint is not None and _dt.is_float(dtype_hint):
            return const(float(value), _dt.element(dtype_hint))
        return const(float(value), "float32")
    if hasattr(value, "asobject"):
        return value.asobject()
    raise TeccTypeError(
        f"cannot use {value!r} (a {type(value).__name__}) in a tensor expression; "
        "expected a number, an expression or a tensor element such as A[i]")


def _broadcast_to(e, lanes):
    if _dt.lanes(e.dtype) == lanes:
        return e
    if _dt.lanes(e.dtype) == 1:
        return Broadcast(e, lanes)
    raise TeccTypeError(f"cannot combine vectors of {_dt.lanes(e.dtype)} and {lanes} lanes")


def match_types(a, b):
    """Convert both operands and bring them to one dtype (TVM's rules)."""
    if not isinstance(a, PrimExpr):
        b = convert(b)
        a = convert(a, b.dtype)
    elif not isinstance(b, PrimExpr):
        b = convert(b, a.dtype)
    if a.dtype == b.dtype:
        return a, b
    da, db = _dt.parse(a.dtype), _dt.parse(b.dtype)
    lanes = builtins.max(da.lanes, db.lanes)
    if da.lanes != db.lanes:
        a, b = _broadcast_to(a, lanes), _broadcast_to(b, lanes)
        da, db = _dt.parse(a.dtype), _dt.parse(b.dtype)
        if a.dtype == b.dtype:
            return a, b
    ea, eb = da.element_of(), db.element_of()
    if ea.is_float and not eb.is_float:
        return a, cast(str(ea.with_lanes(lanes)), b)
    if eb.is_float and not ea.is_float:
        return cast(str(eb.with_lanes(lanes)), a), b
    if ea.is_float and eb.is_float:
        t = ea if ea.bits >= eb.bits else eb
        return cast(str(t.with_lanes(lanes)), a), cast(str(t.with_lanes(lanes)), b)
    if ea.is_bool:
        return cast(str(eb.with_lanes(lanes)), a), b
    if eb.is_bool:
        return a, cast(str(ea.with_lanes(lanes)), b)
    # integers of different width or signedness: widen to the larger, prefer signed
    if ea.bits != eb.bits:
        t = ea if ea.bits > eb.bits else eb
    else:
        t = ea if ea.is_int else eb
    t = str(t.with_lanes(lanes))
    return cast(t, a), cast(t, b)


def cast(dtype, value):
    """Cast ``value`` to ``dtype`` (a no-op if it already has it)."""
    value = convert(value)
    dtype = _dt.canonical(dtype)
    if value.dtype == dtype:
        return value
    if isinstance(value, IntImm) and _dt.lanes(dtype) == 1:
        d = _dt.parse(dtype)
        if d.is_float:
            return FloatImm(dtype, float(value.value))
        if d.is_bool:
            return IntImm("bool", int(value.value != 0))
        return IntImm(dtype, _wrap_int(value.value, d))
    if isinstance(value, FloatImm) and _dt.lanes(dtype) == 1:
        d = _dt.parse(dtype)
        if d.is_float:
            return FloatImm(dtype, value.value)
        if d.is_bool:
            return IntImm("bool", int(value.value != 0))
        if math.isfinite(value.value):
            return IntImm(dtype, _wrap_int(int(value.value), d))
    if _dt.lanes(dtype) != _dt.lanes(value.dtype) and _dt.lanes(value.dtype) == 1:
        return Broadcast(cast(_dt.element(dtype), value), _dt.lanes(dtype))
    return Cast(dtype, value)


def _wrap_int(v, d):
    bits = d.bits
    v &= (1 << bits) - 1
    if d.is_int and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _const_value(e):
    if isinstance(e, (IntImm, FloatImm)):
        return e.value
    return None


# ----------------------------------------------------------------------------
# arithmetic (folds constants, nothing more: the simplifier does the rest)
# ----------------------------------------------------------------------------

def _fold(cls, a, b):
    va, vb = _const_value(a), _const_value(b)
    if va is None or vb is None or a.dtype != b.dtype:
        return None
    d = _dt.parse(a.dtype)
    if d.is_bool:
        return None
    is_int = not d.is_float
    if cls is Add:
        r = va + vb
    elif cls is Sub:
        r = va - vb
    elif cls is Mul:
        r = va * vb
    elif cls is Min:
        r = builtins.min(va, vb)
    elif cls is Max:
        r = builtins.max(va, vb)
    elif vb == 0:
        return None  # leave x/0 to the program: the simplifier reports it
    elif cls is FloorDiv:
        r = va // vb if is_int else math.floor(va / vb)
    elif cls is FloorMod:
        r = va % vb if is_int else va - math.floor(va / vb) * vb
    elif cls is Div:
        r = int(va / vb) if is_int else va / vb
        if is_int:
            r = builtins.abs(va) // builtins.abs(vb) * (1 if (va >= 0) == (vb >= 0) else -1)
    elif cls is Mod:
        r = math.fmod(va, vb) if not is_int else va - (builtins.abs(va) // builtins.abs(vb) * (1 if (va >= 0) == (vb >= 0) else -1)) * vb
    else:
        return None
    if is_int:
        return IntImm(a.dtype, _wrap_int(int(r), d))
    return FloatImm(a.dtype, float(r))


def _arith(cls, a, b):
    a, b = match_types(a, b)
    if _dt.is_bool(a.dtype) and cls in (Add, Sub, Mul, Div, FloorDiv, FloorMod, Mod):
        raise TeccTypeError(f"arithmetic on booleans ({a} and {b}); cast them first")
    folded = _fold(cls, a, b)
    if folded is not None:
        return folded
    return cls(a, b)


def add(a, b):
    return _arith(Add, a, b)


def sub(a, b):
    return _arith(Sub, a, b)


def mul(a, b):
    return _arith(Mul, a, b)


def div(a, b):
    """``a / b``: true division for floats, truncating division for integers."""
    return _arith(Div, a, b)


def truncdiv(a, b):
    """Integer division rounding toward zero (C's ``/``)."""
    return _arith(Div, a, b)


def truncmod(a, b):
    """Remainder of :func:`truncdiv` (C's ``%``; takes the sign of ``a``)."""
    return _arith(Mod, a, b)


def floordiv(a, b):
    """Division rounding toward minus infinity (``a // b``); for floats ``floor(a / b)``."""
    a, b = match_types(a, b)
    if _dt.is_float(a.dtype):
        return call("floor", div(a, b))
    return _arith(FloorDiv, a, b)


def floormod(a, b):
    """Remainder of :func:`floordiv` (``a % b``; takes the sign of ``b``)."""
    a, b = match_types(a, b)
    if _dt.is_float(a.dtype):
        return sub(a, mul(floordiv(a, b), b))
    return _arith(FloorMod, a, b)


#: TVM's names for floor division and modulo of indices
indexdiv = floordiv
indexmod = floormod


def min(a, b):  # noqa: A001 - TVM's name
    return _arith(Min, a, b)


def max(a, b):  # noqa: A001 - TVM's name
    return _arith(Max, a, b)


def neg(a):
    a = convert(a)
    if isinstance(a, IntImm):
        return IntImm(a.dtype, -a.value)
    if isinstance(a, FloatImm):
        return FloatImm(a.dtype, -a.value)
    return sub(const(0, a.dtype) if _dt.lanes(a.dtype) == 1 else const(0, a.dtype), a)


def _cmp(cls, a, b):
    a, b = match_types(a, b)
    va, vb = _const_value(a), _const_value(b)
    if va is not None and vb is not None:
        r = {EQ: va == vb, NE: va != vb, LT: va < vb, LE: va <= vb, GT: va > vb, GE: va >= vb}[cls]
        return IntImm("bool", int(r))
    return cls(a, b)


def eq(a, b):
    return _cmp(EQ, a, b)


def ne(a, b):
    return _cmp(NE, a, b)


def lt(a, b):
    return _cmp(LT, a, b)


def le(a, b):
    return _cmp(LE, a, b)


def gt(a, b):
    return _cmp(GT, a, b)


def ge(a, b):
    return _cmp(GE, a, b)


def _as_bool(x):
    x = convert(x)
    if not _dt.is_bool(x.dtype):
        raise TeccTypeError(f"expected a boolean condition, got `{x}` of dtype {x.dtype}; compare it, e.g. `x != 0`")
    return x


def logical_and(a, b):
    """``a && b`` of two boolean expressions (folds constants)."""
    a, b = _as_bool(a), _as_bool(b)
    if isinstance(a, IntImm):
        return b if a.value else a
    if isinstance(b, IntImm):
        return a if b.value else b
    return And(a, b)


def logical_or(a, b):
    """``a || b`` of two boolean expressions (folds constants)."""
    a, b = _as_bool(a), _as_bool(b)
    if isinstance(a, IntImm):
        return a if a.value else b
    if isinstance(b, IntImm):
        return b if b.value else a
    return Or(a, b)


def logical_not(a):
    """``!a`` of a boolean expression (folds constants)."""
    a = _as_bool(a)
    if isinstance(a, IntImm):
        return IntImm("bool", 1 - a.value)
    return Not(a)


def all(*conds):  # noqa: A001 - TVM's name
    """Logical and of all conditions (``tir.all(a, b, c)``)."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        return const(True, "bool")
    r = _as_bool(conds[0])
    for c in conds[1:]:
        r = logical_and(r, c)
    return r


def any(*conds):  # noqa: A001 - TVM's name
    """Logical or of all conditions (``tir.any(a, b, c)``)."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        return const(False, "bool")
    r = _as_bool(conds[0])
    for c in conds[1:]:
        r = logical_or(r, c)
    return r


def _bitwise(name, a, b):
    a, b = match_types(a, b)
    if _dt.is_bool(a.dtype):
        return {"bitwise_and": logical_and, "bitwise_or": logical_or}.get(name, lambda x, y: call(name, x, y))(a, b)
    if not _dt.is_integer(a.dtype):
        raise TeccTypeError(f"{name} needs integer operands, got {a.dtype}")
    return Call(a.dtype, name, (a, b))


def bitwise_and(a, b):
    return _bitwise("bitwise_and", a, b)


def bitwise_or(a, b):
    return _bitwise("bitwise_or", a, b)


def bitwise_xor(a, b):
    a, b = match_types(a, b)
    return Call(a.dtype, "bitwise_xor", (a, b))


def bitwise_not(a):
    a = convert(a)
    if _dt.is_bool(a.dtype):
        return logical_not(a)
    return Call(a.dtype, "bitwise_not", (a,))


def shift_left(a, b):
    a, b = match_types(a, b)
    return Call(a.dtype, "shift_left", (a, b))


def shift_right(a, b):
    a, b = match_types(a, b)
    return Call(a.dtype, "shift_right", (a, b))


# ----------------------------------------------------------------------------
# selection and intrinsics
# ----------------------------------------------------------------------------

def select(cond, true_value, false_value):
    """Eager select: both values are evaluated (use if_then_else to guard loads)."""
    cond = _as_bool(cond)
    t, f = match_types(true_value, false_value)
    return Select(cond, t, f)


Select_ = select


def if_then_else(cond, t, f):
    """Lazy select: only the taken side is evaluated, so it may guard a load."""
    cond = _as_bool(cond)
    t, f = match_types(t, f)
    if isinstance(cond, IntImm):
        return t if cond.value else f
    return Call(t.dtype, "if_then_else", (cond, t, f))


def warp_shuffle_down(value, delta):
    """``value`` of the lane ``delta`` above this one in the warp (a warp shuffle).

    Parameters
    ----------
    value : PrimExpr
        A scalar value of this thread.
    delta : int or PrimExpr
        The lane offset (int32).

    Returns
    -------
    Call
        ``Call(value.dtype, "tecc.warp_shuffle_down", (value, delta))``; bind it to a
        ``LetStmt`` executed by every lane of the warp.
    """
    value = convert(value)
    if _dt.lanes(value.dtype) != 1:
        raise TeccTypeError(f"warp_shuffle_down takes a scalar value, got {value.dtype}")
    delta = convert(delta, "int32")
    if not _dt.is_integer(delta.dtype):
        raise TeccTypeError(f"warp_shuffle_down takes an integer delta, got {delta.dtype}")
    return Call(value.dtype, WARP_SHUFFLE_DOWN, (value, cast("int32", delta)))


def likely(cond):
    """Mark ``cond`` as usually true (a branch hint; loop partitioning splits on it)."""
    cond = _as_bool(cond)
    if isinstance(cond, IntImm):
        return cond
    return Call("bool", "likely", (cond,))


def call(name, *args):
    """Call a float math intrinsic by name (see the module docs for the list)."""
    args = tuple(convert(a) for a in args)
    if name in UNARY_MATH or name in PREDICATES:
        if len(args) != 1:
            raise TeccTypeError(f"{name} takes one argument, got {len(args)}")
        (x,) = args
        if not _dt.is_float(x.dtype):
            x = cast("float32" if _dt.lanes(x.dtype) == 1 else _dt.with_lanes("float32", _dt.lanes(x.dtype)), x)
        rtype = x.dtype if name not in PREDICATES else ("bool" if _dt.lanes(x.dtype) == 1 else f"boolx{_dt.lanes(x.dtype)}")
        return Call(rtype, name, (x,))
    if name in BINARY_MATH:
        if len(args) != 2:
            raise TeccTypeError(f"{name} takes two arguments, got {len(args)}")
        a, b = match_types(*args)
        if not _dt.is_float(a.dtype):
            a, b = cast("float32", a), cast("float32", b)
        return Call(a.dtype, name, (a, b))
    raise TeccTypeError(f"unknown intrinsic {name!r}")


def _unary(name):
    def f(x):
        return call(name, x)
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` of a float expression."
    return f


exp = _unary("exp")
exp2 = _unary("exp2")
exp10 = _unary("exp10")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
round = _unary("round")  # noqa: A001
nearbyint = _unary("nearbyint")
def _float_test(name, for_integers):
    """A predicate of floats (``isnan``...); of an integer or a bool, whose values are
    all finite numbers, the constant ``for_integers`` (the C and CUDA functions take
    floats only)."""
    def f(x):
        x = convert(x)
        if not _dt.is_float(x.dtype):
            return const(for_integers, "bool")
        return call(name, x)
    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` (bool); of integers, {for_integers}."
    return f


isnan = _float_test("isnan", False)
isinf = _float_test("isinf", False)
isfinite = _float_test("isfinite", True)


def power(x, y):
    """``x`` to the power ``y`` (float math)."""
    return call("pow", x, y)


pow = power  # noqa: A001  (TVM spells it both ways)


def fmod(x, y):
    """Float remainder with the sign of ``x`` (C's ``fmod``)."""
    return call("fmod", x, y)


def atan2(x, y):
    """The arc tangent of ``x / y`` using both signs for the quadrant (C's ``atan2``)."""
    return call("atan2", x, y)


def abs(x):  # noqa: A001
    """Absolute value of any numeric expression."""
    x = convert(x)
    if isinstance(x, IntImm):
        return IntImm(x.dtype, -x.value if x.value < 0 else x.value)
    if isinstance(x, FloatImm):
        return FloatImm(x.dtype, math.fabs(x.value))
    if _dt.parse(x.dtype).is_uint or _dt.is_bool(x.dtype):
        return x
    return Call(x.dtype, "abs", (x,))


def popcount(x):
    """Number of set bits of an integer expression."""
    x = convert(x)
    return Call(x.dtype, "popcount", (x,))


#: the largest finite value of each float type (TVM's max_value of a float)
_FLOAT_MAX = {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}
_BFLOAT16_MAX = 3.3895313892515355e38


def _finite_max(dtype):
    d = _dt.parse(dtype)
    return _BFLOAT16_MAX if str(d.element_of()).startswith("bfloat") else _FLOAT_MAX[d.bits]


def min_value(dtype):
    """The smallest value of ``dtype``; for a float, the lowest *finite* one (as TVM:
    ``-3.4028235e38`` for float32).  :func:`infinity` gives the infinities."""
    if _dt.parse(dtype).is_float:
        return const(-_finite_max(dtype), dtype)
    return const(_dt.min_value(dtype), dtype)


def max_value(dtype):
    """The largest value of ``dtype``; for a float, the largest finite one (as TVM)."""
    if _dt.parse(dtype).is_float:
        return const(_finite_max(dtype), dtype)
    return const(_dt.max_value(dtype), dtype)


def infinity(dtype):
    """Positive infinity of a float ``dtype``."""
    return const(math.inf, dtype)


# ----------------------------------------------------------------------------
# bit casts, calls of named functions and TVM's call_intrin
# ----------------------------------------------------------------------------

def reinterpret(dtype, value):
    """The bits of ``value`` read as ``dtype`` (a bit cast, C's ``memcpy`` between
    two types; TVM's ``tir.reinterpret``).

    ``dtype`` must have the element width and lane count of ``value``:
    ``reinterpret("float32", i)`` for an ``int32`` ``i``, ``reinterpret("uint16", h)``
    for a ``float16`` ``h``.

    Raises
    ------
    TeccTypeError
        If the widths or lane counts differ, or for ``bool`` and ``handle``.
    """
    value = convert(value)
    dtype = _dt.canonical(dtype)
    src, dst = _dt.parse(value.dtype), _dt.parse(dtype)
    if src == dst:
        return value
    for d in (src, dst):
        if d.is_bool or d.is_handle:
            raise TeccTypeError(f"reinterpret({dtype!r}, {value.dtype} value): {d} values have no bit pattern to "
                                "reinterpret; cast them instead (tir.Cast / astype)")
    if src.bits != dst.bits or src.lanes != dst.lanes:
        raise TeccTypeError(
            f"reinterpret({dtype!r}, {value.dtype} value): a bit cast keeps the width and the lanes, but "
            f"{value.dtype} is {src.lanes} x {src.bits} bits and {dtype} {dst.lanes} x {dst.bits} bits; "
            f"use a {src.bits}-bit dtype with {src.lanes} lane(s)")
    return Call(dtype, REINTERPRET, (value,))


def _extern_args(what: str, args):
    out = []
    for a in args:
        if isinstance(a, str):
            out.append(_e.StringImm(a))
        elif hasattr(a, "data") and hasattr(a, "shape") and hasattr(a, "scope") and not isinstance(a, PrimExpr):
            raise TeccTypeError(f"{what}: the buffer {getattr(a, 'name', a)!r} is not a value; pass its address "
                                f"({getattr(a, 'name', 'buf')}.data) or one element")
        else:
            out.append(convert(a))
    return tuple(out)


def _extern(op: str, what: str, dtype, func_name, args):
    if not isinstance(func_name, str) or not func_name:
        raise TeccTypeError(f"{what} needs the function's name (a str) after the dtype, got {func_name!r}")
    # TVM writes dtype "" (or "void") for a function called for its effect
    dtype = "handle" if dtype in ("", "void", None) else _dt.canonical(dtype)
    return Call(dtype, op, (_e.StringImm(func_name),) + _extern_args(f"{what}({func_name!r})", args))


def call_extern(dtype, func_name, *args, span=None):
    """A call of the external C (or CUDA device) function ``func_name`` returning
    ``dtype`` (``""``: called for its effect).  The function must be visible to the
    generated code: a C library function (``"sqrtf"``), a CUDA builtin, or one
    declared by the source it is linked with."""
    return _extern(CALL_EXTERN, "call_extern", dtype, func_name, args)


def call_pure_extern(dtype, func_name, *args, span=None):
    """:func:`call_extern` of a function without side effects."""
    return _extern(CALL_PURE_EXTERN, "call_pure_extern", dtype, func_name, args)


def _pack_buffer(buf):
    """A buffer argument of a packed call: its address, shape, strides and dtype."""
    shape = Call("handle", STACK_MAKE_SHAPE, tuple(convert(x) for x in buf.shape))
    strides = Call("handle", STACK_MAKE_SHAPE, tuple(convert(x) for x in buf.strides)) if buf.strides \
        else IntImm("int32", 0)
    offset = buf.elem_offset if buf.elem_offset is not None else IntImm("int32", 0)
    zero = const(0, _dt.element(buf.dtype))
    return Call("handle", STACK_MAKE_ARRAY, (buf.data, shape, strides, IntImm("int32", len(buf.shape)), zero,
                                             convert(offset)))


def call_packed(*args, span=None):
    """Call the function registered under ``args[0]`` (``tecc.register_func``) with
    the other arguments, from compiled CPU code (TVM's ``tir.call_packed``).

    A :class:`~tecc.tir.Buffer` argument arrives as a ``tecc.nd.NDArray`` viewing the
    buffer's memory during the call (writing it writes the buffer); an integer or
    float expression as a Python ``int``/``float``; a string as ``str``.  The call's
    value (``int32``) is what the function returns when that is a number, else 0.
    The name is looked up when compiled code first calls it, so the function may
    be registered after building; a CUDA kernel cannot call one.
    """
    if not args or not isinstance(args[0], str) or not args[0]:
        raise TeccTypeError(f"call_packed needs the registered function's name (a str) first, got "
                            f"{args[0] if args else 'nothing'!r}")
    from .stmt import Buffer

    packed = []
    for a in args[1:]:
        if isinstance(a, Buffer):
            packed.append(_pack_buffer(a))
        elif isinstance(a, str):
            packed.append(_e.StringImm(a))
        else:
            try:
                packed.append(convert(a))
            except TeccTypeError:
                raise TeccTypeError(
                    f"call_packed({args[0]!r}): cannot pass {a!r} ({type(a).__name__}); pass buffers, "
                    "expressions, numbers or strings") from None
    return Call("int32", CALL_PACKED, (_e.StringImm(args[0]),) + tuple(packed))


def _math_intrinsic(name):
    def make(dtype, *args):
        args = [convert(a) for a in args]
        d = _dt.parse(dtype)
        if name not in PREDICATES and d.is_float:
            # integer arguments are computed in the requested float type
            args = [cast(dtype, a) if _dt.is_integer(a.dtype) or _dt.is_bool(a.dtype) else a for a in args]
        return call(name, *args)
    return make


def _plain(fn):
    return lambda dtype, *args: fn(*args)


#: TVM op name without "tir." -> builder(dtype, *args) of the tecc expression
_INTRINSICS = {name: _math_intrinsic(name) for name in UNARY_MATH + BINARY_MATH + PREDICATES}
_INTRINSICS.update({
    "reinterpret": lambda dtype, value: reinterpret(dtype, value),
    "abs": _plain(lambda x: abs(x)),
    "popcount": _plain(lambda x: popcount(x)),
    "bitwise_and": _plain(lambda a, b: bitwise_and(a, b)),
    "bitwise_or": _plain(lambda a, b: bitwise_or(a, b)),
    "bitwise_xor": _plain(lambda a, b: bitwise_xor(a, b)),
    "bitwise_not": _plain(lambda a: bitwise_not(a)),
    "shift_left": _plain(lambda a, b: shift_left(a, b)),
    "shift_right": _plain(lambda a, b: shift_right(a, b)),
    "if_then_else": _plain(lambda c, t, f: if_then_else(c, t, f)),
    "likely": _plain(lambda c: likely(c)),
    "call_extern": lambda dtype, name, *args: call_extern(dtype, name, *args),
    "call_pure_extern": lambda dtype, name, *args: call_pure_extern(dtype, name, *args),
    "tvm_call_packed": _plain(lambda *args: call_packed(*args)),
    "tvm_storage_sync": _plain(lambda scope: storage_sync_call(scope)),
    "tvm_fill_fragment": _plain(lambda *args: wmma_call(WMMA_FILL, args)),
    "tvm_load_matrix_sync": _plain(lambda *args: wmma_call(WMMA_LOAD, args)),
    "tvm_mma_sync": _plain(lambda *args: wmma_call(WMMA_MMA, args)),
    "tvm_store_matrix_sync": _plain(lambda *args: wmma_call(WMMA_STORE, args)),
})

#: the fragment shapes (m, n, k) of float16 inputs that CUDA's wmma offers
WMMA_SHAPES = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
_WMMA_ARGS = {WMMA_FILL: ("fragment", "m", "n", "k", "index", "value"),
              WMMA_LOAD: ("fragment", "m", "n", "k", "index", "pointer", "stride", "layout"),
              WMMA_STORE: ("fragment", "m", "n", "k", "index", "pointer", "stride", "layout"),
              WMMA_MMA: ("d", "d_index", "a", "a_index", "b", "b_index", "c", "c_index")}


def wmma_call(op, args) -> "_e.Call":
    """A tensor-core intrinsic as TVM's tensorize intrinsics write it (``call_intrin(
    "handle", "tir.tvm_load_matrix_sync", frag.data, 16, 16, 16, frag.elem_offset // 256,
    src.access_ptr("r"), 16, "row_major")``).  The fragment arguments are the data of
    ``wmma.*`` buffers, the indices count fragments (m*n elements) into them; the
    checks here are the ones that need no context: argument count, the shape among
    :data:`WMMA_SHAPES`, the layout's name."""
    names = _WMMA_ARGS[op]
    if len(args) != len(names):
        raise TeccTypeError(f"{op}: takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
    out = []
    for name, a in zip(names, args):
        if name == "layout":
            text = a.value if isinstance(a, _e.StringImm) else a
            if text not in ("row_major", "col_major"):
                raise TeccTypeError(f"{op}: layout must be 'row_major' or 'col_major', got {text!r}")
            out.append(_e.StringImm(text))
            continue
        e = convert(a)
        if name in ("fragment", "d", "a", "b", "c", "pointer") and e.dtype != "handle":
            raise TeccTypeError(f"{op}: argument {name!r} must be a buffer's data or access_ptr (a handle), got "
                                f"{e} ({e.dtype})")
        out.append(e)
    if op != WMMA_MMA:
        shape = tuple(_e.const_int_value(x) for x in out[1:4])
        if shape not in WMMA_SHAPES:
            raise TeccTypeError(f"{op}: the fragment shape m, n, k = {', '.join(map(str, out[1:4]))} is not one "
                                f"wmma has; use one of {', '.join('x'.join(map(str, s)) for s in WMMA_SHAPES)}")
    return _e.Call("handle", op, tuple(out))


def tvm_fill_fragment(fragment, m, n, k, index, value):
    """``tvm_fill_fragment``: every element of fragment ``index`` of ``fragment`` (a
    ``wmma.accumulator`` buffer's data) becomes ``value`` (:func:`wmma_call`)."""
    return wmma_call(WMMA_FILL, (fragment, m, n, k, index, value))


def tvm_load_matrix_sync(fragment, m, n, k, index, buffer_ptr, stride, layout):
    """``tvm_load_matrix_sync``: fragment ``index`` of ``fragment`` loaded from
    ``buffer_ptr`` (an ``access_ptr``), rows ``stride`` elements apart, ``layout``
    ``"row_major"`` or ``"col_major"``."""
    return wmma_call(WMMA_LOAD, (fragment, m, n, k, index, buffer_ptr, stride, layout))


def tvm_mma_sync(fragment_d, index_d, fragment_a, index_a, fragment_b, index_b, fragment_c, index_c):
    """``tvm_mma_sync``: ``d = a x b + c`` on fragments (each with its index)."""
    return wmma_call(WMMA_MMA, (fragment_d, index_d, fragment_a, index_a, fragment_b, index_b, fragment_c, index_c))


def tvm_store_matrix_sync(fragment, m, n, k, index, buffer_ptr, stride, layout):
    """``tvm_store_matrix_sync``: accumulator fragment ``index`` stored to
    ``buffer_ptr``, rows ``stride`` elements apart."""
    return wmma_call(WMMA_STORE, (fragment, m, n, k, index, buffer_ptr, stride, layout))


def storage_sync_call(scope) -> "_e.Call":
    """The barrier ``tvm_storage_sync(scope)`` as TVM's kernels write it in IR builder
    code (``ib.emit(call_intrin("int32", "tir.tvm_storage_sync", "shared"))``):
    ``__syncthreads()``.  Only ``"shared"`` (a block-wide barrier) exists in tecc."""
    text = scope.value if isinstance(scope, _e.StringImm) else scope
    if text != "shared":
        raise TeccTypeError(f"tvm_storage_sync({text!r}): tecc has the block-wide barrier "
                            "tvm_storage_sync(\"shared\") (__syncthreads) only; a grid-wide sync (\"global\") "
                            "needs a second kernel launch")
    return _e.Call("int32", STORAGE_SYNC, (_e.StringImm("shared"),))


class CallEffectKind(enum.IntEnum):
    """What a call does besides giving a value (TVM's ``tir.CallEffectKind``), the
    value of an intrinsic's ``"TCallEffectKind"`` attribute."""

    ExprAnnotation = 0
    Pure = 1
    ReadState = 2
    UpdateState = 3
    Opaque = 4
    SpecialCallArg = 5
    Embedded = 6
    ControlJump = 7


#: attributes registered for intrinsics (TVM's ``ir.register_op_attr``): bare name
#: (``"mylog"``) -> {attribute key: value}
OP_ATTRS: dict = {}
#: lowering rules (TVM's ``ir.register_intrin_lowering``): (bare name, target key) ->
#: (level, rule); the ``lower_intrin`` pass applies them
INTRIN_LOWERING: dict = {}


def _bare(op_name) -> str:
    if not isinstance(op_name, str) or not op_name:
        raise TeccTypeError(f"an intrinsic's name is a str such as 'tir.exp', got {op_name!r}")
    return op_name[4:] if op_name.startswith("tir.") else op_name


def register_op_attr(op_name, attr_key, value=None, level=10):
    """Record ``attr_key`` = ``value`` for intrinsic ``op_name`` (TVM's
    ``ir.register_op_attr``; a decorator when ``value`` is None).  Registering any
    attribute (e.g. ``"TCallEffectKind"``) declares a new intrinsic that
    :func:`call_intrin` then accepts; a lowering rule gives it its code."""
    name = _bare(op_name)

    def register(v):
        OP_ATTRS.setdefault(name, {})[attr_key] = v
        return v

    return register(value) if value is not None else register


def register_intrin_lowering(op_name, target="default", *, f=None, level=10):
    """Register ``f(call) -> expr`` as how intrinsic ``op_name`` is lowered for
    ``target`` (``"cuda"``, ``"llvm"``/``"c"``, or ``"default"`` for any) --
    TVM's ``ir.register_intrin_lowering``; a decorator when ``f`` is None.  The
    rule of the highest ``level`` wins; returning the call unchanged (or None)
    keeps it.  The ``lower_intrin`` pass of each pipeline applies the rules."""
    name = _bare(op_name)
    if not isinstance(target, str) or not target:
        raise TeccTypeError(f"register_intrin_lowering({op_name!r}): target must be a name such as 'cuda', "
                            f"'llvm' or 'default', got {target!r}")

    def register(fn):
        if not callable(fn):
            raise TeccTypeError(f"register_intrin_lowering({op_name!r}): f must be a function of the call, got "
                                f"{fn!r}")
        have = INTRIN_LOWERING.get((name, target))
        if have is None or level >= have[0]:
            INTRIN_LOWERING[(name, target)] = (level, fn)
        return fn

    return register(f) if f is not None else register


def call_intrin(dtype, func_name, *args, span=None):
    """An intrinsic by TVM's op name: ``call_intrin("float32", "tir.floor", x)``.

    ``func_name`` is ``"tir.<name>"`` (or ``"<name>"``) for the math functions
    (``exp``, ``sqrt``, ``floor``, ``ceil``, ``round``, ``trunc``, ``pow``...),
    ``reinterpret``, ``abs``, ``popcount``, the ``bitwise_*``/``shift_*``
    operations, ``if_then_else``, ``likely``, ``call_extern``,
    ``call_pure_extern`` and ``tvm_call_packed``.  Integer arguments of a float
    math function are converted to ``dtype``.

    Raises
    ------
    TeccTypeError
        For an op tecc does not know, or when ``dtype`` is not the type the op
        gives for these arguments.
    """
    if not isinstance(func_name, str):
        raise TeccTypeError(f"call_intrin: the op name must be a str such as 'tir.exp', got {func_name!r}")
    name = func_name[4:] if func_name.startswith("tir.") else func_name
    make = _INTRINSICS.get(name)
    if make is None and (name in OP_ATTRS or name in {key[0] for key in INTRIN_LOWERING}):  # (any is tir.any here)
        # an intrinsic the user declared (register_op_attr / register_intrin_lowering)
        return Call("handle" if dtype in ("", "void", None) else _dt.canonical(dtype), name,
                    tuple(convert(a) for a in args))
    if make is None:
        known = ", ".join(f"tir.{n}" for n in sorted(_INTRINSICS))
        raise TeccTypeError(f"call_intrin: unknown op {func_name!r}; tecc has {known}, and the ones declared with "
                            "tecc.ir.register_op_attr")
    want = "handle" if dtype in ("", "void", None) else _dt.canonical(dtype)
    try:
        result = make(dtype, *args)
    except TeccTypeError as err:
        raise TeccTypeError(f"call_intrin({dtype!r}, {func_name!r}): {err}") from None
    except TypeError as err:  # a builder given too many or too few arguments
        raise TeccTypeError(f"call_intrin({dtype!r}, {func_name!r}): wrong number of arguments ({len(args)}): "
                            f"{err}") from None
    if name != "tvm_call_packed" and result.dtype != want:
        raise TeccTypeError(
            f"call_intrin({dtype!r}, {func_name!r}): the op gives {result.dtype} for arguments of dtype "
            f"{', '.join(convert(a).dtype if not isinstance(a, str) else 'str' for a in args)}; pass "
            f"dtype={result.dtype!r} or cast the arguments to {want}")
    return result


_e._op = __import__(__name__, fromlist=["_"])
BinaryOp = BinaryOp
