"""Reductions over axes of a tensor (TVM's ``topi.reduction``): sum, max, min, prod,
all, any (tagged :data:`~.tag.COMM_REDUCE`) and argmax, argmin
(:data:`~.tag.COMM_REDUCE_IDX`)."""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir import op as _op
from . import tag
from .utils import TopiError, normalize_axis, ravel_index


def _reduce_axes(data, axis, what) -> list:
    ndim = len(data.shape)
    if axis is None:
        return list(range(ndim))
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    result = [normalize_axis(x, ndim, f"{what}({data.name!r})") for x in axes]
    if len(set(result)) != len(result):
        raise TopiError(f"{what}({data.name!r}): axis {tuple(axes)} names an axis twice")
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
        out_shape, _, rvs, index = _plan(data, axis, keepdims, name)
        as_1d = atleast1d and not out_shape  # a rank-0 result given shape (1,)

        def f(*i):
            value = data(*index(() if as_1d else i))
            if cast_bool:
                value = _op.cast("bool", value)
            if not rvs:
                return value
            return reducer(value, axis=rvs)

        return te.compute((1,) if as_1d else out_shape, f, name=f"T_{name}", tag=tag.COMM_REDUCE)

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

sum = _make_reduce("sum", te.sum, "sum")  # noqa: A001  (TVM's name)
max = _make_reduce("max", te.max, "maximum")  # noqa: A001
min = _make_reduce("min", te.min, "minimum")  # noqa: A001
prod = _make_reduce("prod", te.prod, "product")
all = _make_reduce("all", _all, "logical and", cast_bool=True)  # noqa: A001
any = _make_reduce("any", _any, "logical or", cast_bool=True)  # noqa: A001


def _arg_reducer(better, name):
    """A tuple reducer over ``(index, value)`` keeping the better value, the first
    index on ties."""

    def fcombine(x, y):
        take_x = _op.logical_or(better(x[1], y[1]), _op.logical_and(x[1] == y[1], x[0] < y[0]))
        return _op.select(take_x, x[0], y[0]), _op.select(take_x, x[1], y[1])

    def fidentity(t_idx, t_val):
        worst = _op.min_value(t_val) if name == "argmax" else _op.max_value(t_val)
        return _op.const(-1, t_idx), worst

    return te.comm_reducer(fcombine, fidentity, name=name)


_argmax = _arg_reducer(lambda a, b: a > b, "argmax")
_argmin = _arg_reducer(lambda a, b: a < b, "argmin")


def _make_arg(name, reducer, doc):
    def op(data, axis=None, keepdims=False, select_last_index=False):
        if select_last_index:
            raise TopiError(f"{name}({getattr(data, 'name', data)!r}): select_last_index=True is not supported; "
                            "reverse the axis first")
        out_shape, axes, rvs, index = _plan(data, axis, keepdims, name)

        def f(*i):
            idx = ravel_index([rv.var for rv in rvs], [data.shape[k] for k in axes])
            return reducer((_op.cast("int32", idx), data(*index(i))), axis=rvs)

        idx, _ = te.compute(out_shape, f, name=f"T_{name}_red_temp", tag=tag.COMM_REDUCE_IDX)
        # the index alone, as a stage of its own (an output must be a whole operation)
        return te.compute(out_shape, lambda *i: idx(*i), name=f"T_{name}", tag=tag.COMM_REDUCE_IDX)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"The index of the {doc} of ``data`` over ``axis`` (the first one on ties; the "
                  "row-major index within the reduced axes when there are several).\n\n"
                  "    Returns\n    -------\n    Tensor\n        of int32.\n    ")
    return op


argmax = _make_arg("argmax", _argmax, "maximum")
argmin = _make_arg("argmin", _argmin, "minimum")
