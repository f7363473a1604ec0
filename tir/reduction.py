"""Commutative reducers: ``tir.comm_reducer``, ``sum``, ``max``, ``min`` and ``prod`` (TVM's
``tvm.tir.comm_reducer``...; ``te`` exports the same objects as ``te.sum``...)."""
from __future__ import annotations

from ..errors import TeccTypeError
from . import expr as E
from . import op as _op
from .op import convert


def comm_reducer(fcombine, fidentity, name="reduce"):
    """Make a reducer from ``fcombine(x, y)`` and ``fidentity(*dtypes)``.

    For a tuple reduction (e.g. argmax), ``fcombine`` takes and returns tuples and
    the reducer is called with a tuple of expressions::

        argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
        T_idx, T_val = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k))

    Called with two plain expressions and no axis, a reducer combines them
    element-wise (``te.max(x, 0.0)``).
    """

    def reducer(expr, *args, **kwargs):
        by_keyword = "axis" in kwargs
        params = dict(zip(("axis", "where", "init"), args))
        for key, value in kwargs.items():
            if key not in ("axis", "where", "init") or key in params:
                raise TeccTypeError(f"te.{name}() got an unexpected or repeated argument {key!r}")
            params[key] = value
        axis, where, init = params.get("axis"), params.get("where"), params.get("init")
        if axis is None:
            raise TeccTypeError(f"te.{name} needs axis=<reduce_axis> (or two expressions to combine)")
        if isinstance(axis, E.IterVar) or (isinstance(axis, (list, tuple)) and axis
                                           and all(isinstance(a, E.IterVar) for a in axis)):
            return _make_reduce(fcombine, fidentity, name, expr, axis, where, init)
        if by_keyword:
            what = getattr(axis, "name", None) or repr(axis)
            raise TeccTypeError(
                f"te.{name}: axis={what!r} is not a reduce axis (a loop variable of the compute, or an "
                f"expression); reduce over an axis made with te.reduce_axis, e.g. k = te.reduce_axis((0, n), "
                f"name='k'); te.{name}(A[i, k], axis=k)")
        # element-wise use: te.max(a, b)
        a, b = _op.match_types(expr, axis)
        return _combine(fcombine, a, b)

    reducer.__name__ = name
    reducer.__doc__ = f"Reduce with ``{name}`` over ``axis`` (optionally ``where`` a condition holds)."
    return reducer


def _combine(fcombine, a, b):
    return convert(fcombine(a, b))


def _make_reduce(fcombine, fidentity, name, expr, axis, where, init):
    if isinstance(axis, E.IterVar):
        axis = [axis]
    axis = tuple(axis)
    for iv in axis:
        if not isinstance(iv, E.IterVar) or iv.iter_type != E.IterVarType.COMM_REDUCE:
            raise TeccTypeError(f"te.{name}: axis {iv!r} is not a reduce axis; make it with te.reduce_axis")
    tuple_input = isinstance(expr, (tuple, list))
    exprs = tuple(convert(e) for e in (expr if tuple_input else (expr,)))
    dtypes = [e.dtype for e in exprs]
    lhs = tuple(E.Var(f"x{i}" if tuple_input else "x", t) for i, t in enumerate(dtypes))
    rhs = tuple(E.Var(f"y{i}" if tuple_input else "y", t) for i, t in enumerate(dtypes))
    if tuple_input:
        result = fcombine(lhs, rhs)
        identity = fidentity(*dtypes)
    else:
        result = (fcombine(lhs[0], rhs[0]),)
        identity = (fidentity(dtypes[0]),)
    result = tuple(convert(r) for r in result)
    identity = tuple(_op.cast(t, convert(i)) for i, t in zip(identity, dtypes))
    if len(result) != len(exprs) or len(identity) != len(exprs):
        raise TeccTypeError(f"reducer {name!r}: fcombine/fidentity must return {len(exprs)} value(s)")
    combiner = E.CommReducer(lhs, rhs, result, identity)
    cond = _op.const(True) if where is None else _op._as_bool(where)
    if init is not None:
        inits = tuple(convert(i) for i in (init if isinstance(init, (tuple, list)) else (init,)))
        inits = tuple(_op.cast(t, i) for i, t in zip(inits, dtypes))
    else:
        inits = ()
    reduces = tuple(E.Reduce(combiner, exprs, axis, cond, i, inits) for i in range(len(exprs)))
    return reduces if tuple_input else reduces[0]


def _add(x, y):
    """``x + y``; for booleans ``x or y``, as numpy adds them (``a.sum(dtype=bool)`` is
    ``a.any()``)."""
    return _op.logical_or(x, y) if x.dtype == "bool" else x + y


def _multiply(x, y):
    """``x * y``; for booleans ``x and y``, as numpy multiplies them."""
    return _op.logical_and(x, y) if x.dtype == "bool" else x * y


sum = comm_reducer(_add, lambda t: _op.const(0, t), name="sum")  # noqa: A001
max = comm_reducer(lambda x, y: _op.max(x, y), lambda t: _op.min_value(t), name="max")  # noqa: A001
min = comm_reducer(lambda x, y: _op.min(x, y), lambda t: _op.max_value(t), name="min")  # noqa: A001
prod = comm_reducer(_multiply, lambda t: _op.const(1, t), name="prod")
