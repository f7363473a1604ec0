"""Reductions over axes of a tensor (TVM's ``topi.reduction``): sum, max, min, prod,
all, any (tagged :data:`~.tag.COMM_REDUCE`) and argmax, argmin
(:data:`~.tag.COMM_REDUCE_IDX`); and tecc's additions ``mean``, ``variance`` and
``std`` (TVM has them in Relay only), each a reduction followed by an element-wise
stage (tagged :data:`~.tag.ELEMWISE`) that the reduction schedules compute in the
same kernel.

Every reduction takes ``axis`` (an int, a tuple of ints -- negative ones count from
the end -- or None for all axes) and ``keepdims``.  The reduction stages carry
``attrs["axis"]``, the reduced axes of the input (non-negative, sorted), which the
schedules read, and ``attrs["ndim"]``, the input's rank.

Accumulation happens in the input's dtype, as in TVM (numpy's ``sum`` of int8 gives
int64; tecc's gives int8).  ``max`` and ``min`` of floating-point data start from
-inf / +inf (TVM starts from the lowest / highest finite value): the maximum of an
empty set or of a row of -inf is -inf, as in numpy and ONNX.
"""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir import dtype as _dt
from ..tir import op as _op
from . import tag
from .utils import TopiError, get_const_tuple, normalize_axis, prod as _prod, ravel_index


def normalize_tensor_axis(data, axis, what) -> int:
    """``axis`` of the tensor ``data`` in ``[0, ndim)`` (a negative one counts from
    the end).

    Raises
    ------
    TopiError
        When it is out of range: the message names the operator ``what``, the
        tensor, the axis and the shape.
    """
    ndim = len(data.shape)
    try:
        return normalize_axis(axis, ndim, f"{what}({data.name!r})")
    except TopiError:
        raise TopiError(f"{what}({data.name!r}): axis {axis} is out of range for a tensor of rank {ndim} "
                        f"(shape {_shape(data)}); use an axis in [{-ndim}, {ndim - 1}]") from None


def _shape(data) -> tuple:
    return get_const_tuple(data.shape)


def _reduce_axes(data, axis, what) -> list:
    ndim = len(data.shape)
    if axis is None:
        return list(range(ndim))
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    result = [normalize_tensor_axis(data, x, what) for x in axes]
    if len(set(result)) != len(result):
        raise TopiError(f"{what}({data.name!r}): axis {tuple(axes)} names an axis twice (shape {_shape(data)})")
    return sorted(result)


def _plan(data, axis, keepdims, what):
    """``(out_shape, axes, reduce_axes, index)``: the output shape, the reduced
    axes, their te.reduce_axis, and ``index(out_indices)`` -> the indices into
    ``data``."""
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {data!r}")
    axes = _reduce_axes(data, axis, what)
    rvs = [te.reduce_axis((0, data.shape[k]), name=f"k{k}") for k in axes]
    kept = [k for k in range(len(data.shape)) if k not in axes]
    if keepdims:
        out_shape = tuple(1 if k in axes else data.shape[k] for k in range(len(data.shape)))
    else:
        out_shape = tuple(data.shape[k] for k in kept)

    def index(out_idx):
        idx = [None] * len(data.shape)
        for k, rv in zip(axes, rvs):
            idx[k] = rv.var
        if keepdims:
            for k in kept:
                idx[k] = out_idx[k]
        else:
            for k, v in zip(kept, out_idx):
                idx[k] = v
        return idx

    return out_shape, axes, rvs, index


def _make_reduce(name, reducer, doc, cast_bool=False):
    def op(data, axis=None, keepdims=False, atleast1d=False):
        out_shape, axes, rvs, index = _plan(data, axis, keepdims, name)
        as_1d = atleast1d and not out_shape  # a rank-0 result given shape (1,)

        def f(*i):
            value = data(*index(() if as_1d else i))
            if cast_bool:
                value = _op.cast("bool", value)
            if not rvs:
                return value
            return reducer(value, axis=rvs)

        return te.compute((1,) if as_1d else out_shape, f, name=f"T_{name}", tag=tag.COMM_REDUCE,
                          attrs={"axis": axes, "ndim": len(data.shape)})

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"The {doc} of ``data`` over ``axis``.\n\n    Parameters\n    ----------\n"
                  "    data : Tensor\n    axis : int or tuple of int, optional\n"
                  "        The axes to reduce (negative ones count from the end); all when None.\n"
                  "    keepdims : bool\n        Keep the reduced axes, with size 1.\n"
                  "    atleast1d : bool\n        Give shape ``(1,)`` instead of a rank-0 tensor.\n\n"
                  "    Returns\n    -------\n    Tensor\n        tagged ``comm_reduce``.\n    ")
    return op


_all = te.comm_reducer(lambda x, y: _op.logical_and(x, y), lambda t: _op.const(True, "bool"), name="all")
_any = te.comm_reducer(lambda x, y: _op.logical_or(x, y), lambda t: _op.const(False, "bool"), name="any")

def _extreme(sign):
    """The identity of a max (``sign`` -1) or min (``sign`` +1) reduction: -inf or
    +inf for floating-point types, so that a row that is all -inf (or empty) gives
    -inf as numpy and ONNX do; the lowest or highest value for integers."""

    def identity(t):
        if _dt.is_float(t):
            return _op.const(sign * float("inf"), t)
        return _op.min_value(t) if sign < 0 else _op.max_value(t)

    return identity


#: te.max / te.min start from the lowest / highest *finite* float (TVM's choice);
#: the reductions here start from -inf / +inf instead
_max = te.comm_reducer(lambda x, y: _op.max(x, y), _extreme(-1), name="max")
_min = te.comm_reducer(lambda x, y: _op.min(x, y), _extreme(1), name="min")

sum = _make_reduce("sum", te.sum, "sum")  # noqa: A001  (TVM's name)
max = _make_reduce("max", _max, "maximum")  # noqa: A001
min = _make_reduce("min", _min, "minimum")  # noqa: A001
prod = _make_reduce("prod", te.prod, "product")
all = _make_reduce("all", _all, "logical and", cast_bool=True)  # noqa: A001
any = _make_reduce("any", _any, "logical or", cast_bool=True)  # noqa: A001


def _arg_reducer(better, name, last):
    """A tuple reducer over ``(index, value)`` keeping the better value and, on ties,
    the first index (the last one with ``last``).  The identity's index loses every
    tie, so that a row of values equal to the identity's value still gives a real
    index."""

    def fcombine(x, y):
        wins_tie = x[0] > y[0] if last else x[0] < y[0]
        take_x = _op.logical_or(better(x[1], y[1]), _op.logical_and(x[1] == y[1], wins_tie))
        return _op.select(take_x, x[0], y[0]), _op.select(take_x, x[1], y[1])

    def fidentity(t_idx, t_val):
        if _dt.is_float(t_val):
            worst = _op.const(float("-inf") if better is _gt else float("inf"), t_val)
        else:
            worst = _op.min_value(t_val) if better is _gt else _op.max_value(t_val)
        return _op.const(-1 if last else _dt.max_value(t_idx), t_idx), worst

    return te.comm_reducer(fcombine, fidentity, name=name + ("_last" if last else ""))


def _gt(a, b):
    return a > b


def _lt(a, b):
    return a < b


_ARG_REDUCERS = {(name, last): _arg_reducer(better, name, last)
                 for name, better in (("argmax", _gt), ("argmin", _lt)) for last in (False, True)}


def _make_arg(name, doc):
    def op(data, axis=None, keepdims=False, select_last_index=False):
        out_shape, axes, rvs, index = _plan(data, axis, keepdims, name)
        reducer = _ARG_REDUCERS[(name, bool(select_last_index))]

        if not rvs:  # no axis reduced (axis=()): every element is its own maximum
            return te.compute(out_shape, lambda *i: _op.const(0, "int32"), name=f"T_{name}",
                              tag=tag.COMM_REDUCE_IDX)

        def f(*i):
            idx = ravel_index([rv.var for rv in rvs], [data.shape[k] for k in axes])
            return reducer((_op.cast("int32", idx), data(*index(i))), axis=rvs)

        idx, _ = te.compute(out_shape, f, name=f"T_{name}_red_temp", tag=tag.COMM_REDUCE_IDX,
                            attrs={"axis": axes, "ndim": len(data.shape)})
        # the index alone, as a stage of its own (an output must be a whole operation)
        return te.compute(out_shape, lambda *i: idx(*i), name=f"T_{name}", tag=tag.COMM_REDUCE_IDX)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"The index of the {doc} of ``data`` over ``axis``.\n\n"
                  "    Parameters\n    ----------\n    data : Tensor\n    axis : int or tuple of int, optional\n"
                  "        The axes to reduce; all when None.  With several, the index is the row-major\n"
                  "        index within the reduced axes (``np.argmax`` of the reduced axes flattened).\n"
                  "    keepdims : bool\n        Keep the reduced axes, with size 1.\n"
                  "    select_last_index : bool\n        On ties, the last index instead of the first.\n\n"
                  "    Returns\n    -------\n    Tensor\n        of int32, tagged ``comm_reduce_idx``.\n    ")
    return op


argmax = _make_arg("argmax", "maximum")
argmin = _make_arg("argmin", "minimum")


def _count(data, axes):
    """The number of elements reduced over ``axes`` (an int or an expression)."""
    n = _prod([data.shape[k] for k in axes])
    return n if isinstance(n, int) else _op.convert(n)


def _divide_by(t, n, dtype, name, tag_=tag.ELEMWISE):
    """``t / n`` element-wise (truncating for integers), in ``dtype``."""
    return te.compute(t.shape, lambda *i: _op.div(t(*i), _op.cast(dtype, n)), name=name, tag=tag_)


def _check_numeric(data, what):
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {data!r}")
    if _dt.is_bool(data.dtype):
        raise TopiError(f"{what}({data.name!r}): expected a numeric tensor, got dtype bool; cast it first")


def mean(data, axis=None, keepdims=False):
    """The mean of ``data`` over ``axis``: the :func:`sum` (``T_sum``), then divided
    by the number of elements reduced (``T_mean``, element-wise).

    For an integer tensor, the division truncates (as Relay's ``mean``).

    Parameters
    ----------
    data : Tensor
    axis : int or tuple of int, optional
        The axes to reduce; all when None.
    keepdims : bool

    Returns
    -------
    Tensor
        tagged ``elemwise`` (a reduction's epilogue).
    """
    _check_numeric(data, "mean")
    axes = _reduce_axes(data, axis, "mean")
    total = sum(data, axis=axes, keepdims=keepdims)
    return _divide_by(total, _count(data, axes), data.dtype, "T_mean")


def variance(data, axis=None, keepdims=False, unbiased=False):
    """The variance of ``data`` over ``axis``: the mean of the squared deviations
    from the mean (divided by ``n - 1`` instead of ``n`` with ``unbiased``).

    Stages: ``T_sum`` (reduction), ``T_mean`` (element-wise), ``T_sqdev_sum``
    (reduction of the squared deviations), ``T_variance`` (element-wise).

    Parameters
    ----------
    data : Tensor
        Of a float dtype.
    axis : int or tuple of int, optional
    keepdims : bool
    unbiased : bool
        Bessel's correction (numpy's ``ddof=1``).

    Returns
    -------
    Tensor
    """
    return _variance(data, axis, keepdims, unbiased, "variance")


def _variance(data, axis, keepdims, unbiased, what):
    _check_numeric(data, what)
    if not _dt.is_float(data.dtype):
        raise TopiError(f"{what}({data.name!r}): expected a float tensor, got dtype {data.dtype}; cast it first")
    out_shape, axes, rvs, index = _plan(data, axis, keepdims, what)
    mu = mean(data, axis=axes, keepdims=keepdims)

    def sqdev(*i):
        d = data(*index(i)) - mu(*i)
        return te.sum(d * d, axis=rvs) if rvs else d * d

    ss = te.compute(out_shape, sqdev, name="T_sqdev_sum", tag=tag.COMM_REDUCE,
                    attrs={"axis": axes, "ndim": len(data.shape)})
    n = _count(data, axes)
    return _divide_by(ss, n - 1 if unbiased else n, data.dtype, "T_variance")


def std(data, axis=None, keepdims=False, unbiased=False):
    """The standard deviation of ``data`` over ``axis``: ``sqrt`` of
    :func:`variance` (same arguments).

    Returns
    -------
    Tensor
    """
    var = _variance(data, axis, keepdims, unbiased, "std")
    return te.compute(var.shape, lambda *i: _op.sqrt(var(*i)), name="T_std", tag=tag.ELEMWISE)
