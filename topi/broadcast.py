"""Element-wise binary operators with numpy broadcasting (TVM's ``topi.broadcast``).

Each operator takes two operands, each a :class:`~tecc.te.Tensor`, an expression or a
Python number:

* tensor op tensor -- the shapes broadcast as in numpy (aligned at the last axis; a
  dimension 1 stretches; rank-0 tensors are scalars); the result is tagged
  :data:`~.tag.BROADCAST`;
* tensor op scalar (or scalar op tensor) -- the result has the tensor's shape and is
  tagged :data:`~.tag.ELEMWISE`;
* scalar op scalar -- the expression itself (no tensor).

Symbolic dimensions broadcast too: where it cannot be decided when the operator is
built whether a dimension is 1, the index into that input is chosen at run time.

Division and remainder (``divide``, ``floor_divide``, ``mod`` and ``floor_mod`` as in TVM):

================  ================================  ====================================
operator          integers                          floats
================  ================================  ====================================
``divide``        truncating (C's ``/``)            true division
``floor_divide``  floor (numpy's ``//``)            ``floor(a / b)``
``trunc_divide``  truncating                        ``trunc(a / b)``
``mod``           sign of ``lhs`` (C's ``%``)       C's ``fmod`` (sign of ``lhs``)
``floor_mod``     sign of ``rhs`` (numpy's ``%``)   ``a - floor(a / b) * b``
``fmod``          as ``mod``                        C's ``fmod`` (numpy's ``np.fmod``)
================  ================================  ====================================

``power`` of integers stays an integer (computed in float64 and truncated, exact
while the result fits); the logical operators take any dtype (non-zero is true) and
give ``bool``; :func:`where` broadcasts its three operands.
"""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import op as _op
from ..tir.arith import Analyzer
from . import tag
from .utils import TopiError, equal_const_int


def _dims_equal(a, b) -> bool:
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm):
        return a.value == b.value
    return a is b or Analyzer().can_prove_equal(a, b)


def _describe(x) -> str:
    return f"{x.name!r} {tuple(x.shape)}" if isinstance(x, te.Tensor) else repr(x)


def broadcast_shape(shape_a, shape_b, what="broadcast"):
    """The shape that ``shape_a`` and ``shape_b`` broadcast to (numpy's rules).

    A symbolic dimension against a constant ``c != 1`` gives ``c``; two symbolic
    dimensions that cannot be proved equal give their maximum (each must be 1 or
    equal to the other when the operator runs).

    Raises
    ------
    TopiError
        When two constant dimensions differ and neither is 1.
    """
    a = [_op.convert(d) for d in shape_a]
    b = [_op.convert(d) for d in shape_b]
    n = max(len(a), len(b))
    a = [_op.const(1, "int32")] * (n - len(a)) + a
    b = [_op.const(1, "int32")] * (n - len(b)) + b
    out = []
    for axis, (da, db) in enumerate(zip(a, b)):
        if _dims_equal(da, db):
            out.append(da)
        elif equal_const_int(da, 1):
            out.append(db)
        elif equal_const_int(db, 1):
            out.append(da)
        elif isinstance(da, E.IntImm) and isinstance(db, E.IntImm):
            raise TopiError(
                f"{what}: shapes {tuple(shape_a)} and {tuple(shape_b)} do not broadcast: axis {axis} (counted in "
                f"the broadcast shape) has sizes {da.value} and {db.value}; sizes must be equal or 1 -- "
                "reshape or broadcast_to one operand first")
        elif isinstance(da, E.IntImm):
            out.append(da)
        elif isinstance(db, E.IntImm):
            out.append(db)
        else:
            out.append(_op.max(da, db))
    return tuple(out)


def _broadcast_index(tensor, out_shape, indices):
    """The indices into ``tensor`` of the output element at ``indices`` (the last
    ``tensor.ndim`` of them, a stretched dimension read at 0)."""
    shape = tensor.shape
    lead = len(out_shape) - len(shape)
    result = []
    for k, d in enumerate(shape):
        i, o = indices[lead + k], out_shape[lead + k]
        if _dims_equal(d, o):
            result.append(i)
        elif equal_const_int(d, 1):
            result.append(_op.const(0, i.dtype))
        else:
            # d is symbolic: 1 (stretched) or the output's size, known only at run time
            result.append(_op.select(d == 1, _op.const(0, i.dtype), i))
    return result


def _is_operand(x) -> bool:
    return isinstance(x, (te.Tensor, E.PrimExpr, int, float)) or hasattr(x, "dtype") and hasattr(x, "item")


def _binary(lhs, rhs, fexpr, name):
    """``fexpr`` applied element-wise, with the broadcasting rules of the module."""
    what = f"topi.{name}"
    for x in (lhs, rhs):
        if not _is_operand(x):
            raise TeccTypeError(f"{what}: operands must be tensors, expressions or numbers, got {x!r}")
    lt, rt = isinstance(lhs, te.Tensor), isinstance(rhs, te.Tensor)
    if lt and rt:
        out_shape = broadcast_shape(lhs.shape, rhs.shape,
                                    f"{what}({_describe(lhs)}, {_describe(rhs)})")

        def fcompute(*i):
            return fexpr(lhs(*_broadcast_index(lhs, out_shape, i)), rhs(*_broadcast_index(rhs, out_shape, i)))

        return te.compute(out_shape, fcompute, name=f"T_{name}", tag=tag.BROADCAST)
    if lt:
        return te.compute(lhs.shape, lambda *i: fexpr(lhs(*i), rhs), name=f"T_{name}", tag=tag.ELEMWISE)
    if rt:
        return te.compute(rhs.shape, lambda *i: fexpr(lhs, rhs(*i)), name=f"T_{name}", tag=tag.ELEMWISE)
    return fexpr(lhs, rhs)


def broadcast_to(data, shape):
    """``data`` broadcast to ``shape`` (numpy's rules; ``data``'s shape must
    broadcast to exactly ``shape``).

    Parameters
    ----------
    data : Tensor
    shape : tuple of int or expression

    Returns
    -------
    Tensor
        tagged :data:`~.tag.BROADCAST`.
    """
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"broadcast_to: data must be a tensor, got {data!r}")
    target = tuple(_op.convert(d) for d in shape)
    what = f"broadcast_to({_describe(data)}, {tuple(shape)})"
    out = broadcast_shape(data.shape, target, what)
    if len(out) != len(target) or not all(_dims_equal(a, b) for a, b in zip(out, target)):
        raise TopiError(f"{what}: the tensor's shape does not broadcast to {tuple(shape)}")
    return te.compute(target, lambda *i: data(*_broadcast_index(data, target, i)), name="T_broadcast_to",
                      tag=tag.BROADCAST)


def _doc(law):
    return (f"``{law}`` element-wise, with broadcasting (see :mod:`tecc.topi.broadcast`).\n\n"
            "    Parameters\n    ----------\n    lhs, rhs : Tensor, expression or number\n\n"
            "    Returns\n    -------\n    Tensor, or an expression when neither operand is a tensor\n    ")


def _make(name, fexpr, law):
    def op(lhs, rhs):
        return _binary(lhs, rhs, fexpr, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = _doc(law)
    return op


def _power(a, b):
    a, b = _op.match_types(a, b)
    if _dt.is_float(a.dtype):
        return _op.power(a, b)
    return _op.cast(a.dtype, _op.power(_op.cast("float64", a), _op.cast("float64", b)))


def _fmod(a, b):
    a, b = _op.match_types(a, b)
    if _dt.is_float(a.dtype):
        return _op.fmod(a, b)
    return _op.truncmod(a, b)


def _truth(v):
    """``v`` as a bool (non-zero is true)."""
    v = _op.convert(v)
    return v if _dt.is_bool(v.dtype) else _op.ne(v, _op.const(0, v.dtype))


def _trunc_divide(a, b):
    a, b = _op.match_types(a, b)
    if _dt.is_float(a.dtype):
        return _op.trunc(_op.div(a, b))
    return _op.truncdiv(a, b)


add = _make("add", _op.add, "lhs + rhs")
subtract = _make("subtract", _op.sub, "lhs - rhs")
multiply = _make("multiply", _op.mul, "lhs * rhs")
divide = _make("divide", _op.div, "lhs / rhs (truncating for integers)")
floor_divide = _make("floor_divide", _op.floordiv, "floor(lhs / rhs)")
trunc_divide = _make("trunc_divide", _trunc_divide, "trunc(lhs / rhs)")
mod = _make("mod", _fmod, "lhs - trunc(lhs / rhs) * rhs (sign of lhs; C's fmod for floats)")
fmod = _make("fmod", _fmod, "fmod(lhs, rhs) (sign of lhs; C's % for integers)")
trunc_mod = _make("trunc_mod", _fmod, "lhs - trunc(lhs / rhs) * rhs (sign of lhs)")
floor_mod = _make("floor_mod", _op.floormod, "lhs - floor(lhs / rhs) * rhs (sign of rhs)")
maximum = _make("maximum", _op.max, "max(lhs, rhs)")
minimum = _make("minimum", _op.min, "min(lhs, rhs)")
power = _make("power", _power, "lhs ** rhs")
pow = power  # noqa: A001  (te.pow's spelling)
left_shift = _make("left_shift", _op.shift_left, "lhs << rhs")
right_shift = _make("right_shift", _op.shift_right, "lhs >> rhs")
greater = _make("greater", _op.gt, "lhs > rhs")
less = _make("less", _op.lt, "lhs < rhs")
equal = _make("equal", _op.eq, "lhs == rhs")
not_equal = _make("not_equal", _op.ne, "lhs != rhs")
greater_equal = _make("greater_equal", _op.ge, "lhs >= rhs")
less_equal = _make("less_equal", _op.le, "lhs <= rhs")
logical_and = _make("logical_and", lambda a, b: _op.logical_and(_truth(a), _truth(b)), "lhs && rhs")
logical_or = _make("logical_or", lambda a, b: _op.logical_or(_truth(a), _truth(b)), "lhs || rhs")
logical_xor = _make("logical_xor", lambda a, b: _op.ne(_truth(a), _truth(b)), "lhs xor rhs")
bitwise_and = _make("bitwise_and", _op.bitwise_and, "lhs & rhs")
bitwise_or = _make("bitwise_or", _op.bitwise_or, "lhs | rhs")
bitwise_xor = _make("bitwise_xor", _op.bitwise_xor, "lhs ^ rhs")


def logical_not(data):
    """``!data`` element-wise (non-zero is true; tagged :data:`~.tag.ELEMWISE`)."""
    if isinstance(data, te.Tensor):
        return te.compute(data.shape, lambda *i: _op.logical_not(_truth(data(*i))), name="T_logical_not",
                          tag=tag.ELEMWISE)
    return _op.logical_not(_truth(data))


def bitwise_not(data):
    """``~data`` element-wise (tagged :data:`~.tag.ELEMWISE`)."""
    if isinstance(data, te.Tensor):
        return te.compute(data.shape, lambda *i: _op.bitwise_not(data(*i)), name="T_bitwise_not", tag=tag.ELEMWISE)
    return _op.bitwise_not(data)


def where(condition, x, y):
    """``x`` where ``condition`` is true (non-zero), ``y`` elsewhere; the three
    operands broadcast together (numpy's ``np.where``).

    Parameters
    ----------
    condition : Tensor, expression or number
        Of any dtype.
    x, y : Tensor, expression or number
        Of the same dtype when both are tensors; a number takes the other's dtype.

    Returns
    -------
    Tensor
        Of the broadcast shape, tagged :data:`~.tag.BROADCAST` (an expression when no
        operand is a tensor).

    Raises
    ------
    TopiError
        When the shapes do not broadcast, or ``x`` and ``y`` are tensors of
        different dtypes.
    """
    for v in (condition, x, y):
        if not _is_operand(v):
            raise TeccTypeError(f"topi.where: operands must be tensors, expressions or numbers, got {v!r}")
    what = f"topi.where(condition {_describe(condition)}, x {_describe(x)}, y {_describe(y)})"
    tensors = [v for v in (condition, x, y) if isinstance(v, te.Tensor)]
    xd = x.dtype if isinstance(x, (te.Tensor, E.PrimExpr)) else None
    yd = y.dtype if isinstance(y, (te.Tensor, E.PrimExpr)) else None
    if xd is not None and yd is not None and xd != yd:
        raise TopiError(f"{what}: x and y have different dtypes, {xd} and {yd}; cast one of them (topi.cast)")
    dtype = xd or yd

    def value(v, indices, out_shape):
        if isinstance(v, te.Tensor):
            return v(*_broadcast_index(v, out_shape, indices))
        return _op.const(v, dtype) if dtype is not None and isinstance(v, (int, float)) else _op.convert(v)

    if not tensors:
        return _op.select(_truth(condition), value(x, (), ()), value(y, (), ()))
    out_shape = ()
    for t in tensors:
        out_shape = broadcast_shape(out_shape, t.shape, what)

    def fcompute(*i):
        return _op.select(_truth(value(condition, i, out_shape)), value(x, i, out_shape), value(y, i, out_shape))

    return te.compute(out_shape, fcompute, name="T_where", tag=tag.BROADCAST)
