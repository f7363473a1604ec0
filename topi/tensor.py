"""Tensors of constants and sums of tensors (TVM's ``topi.tensor``)."""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir import dtype as _dt
from ..tir import op as _op
from . import tag


def full(shape, dtype, fill_value):
    """A tensor of ``shape`` and ``dtype`` holding ``fill_value`` everywhere.

    Parameters
    ----------
    shape : tuple of int or expression
    dtype : str
    fill_value : number or expression

    Returns
    -------
    Tensor
        tagged :data:`~.tag.ELEMWISE`, named ``T_full``.
    """
    dtype = _dt.canonical(dtype)
    value = _op.cast(dtype, fill_value)
    return te.compute(shape, lambda *i: value, name="T_full", tag=tag.ELEMWISE)


def full_like(x, fill_value):
    """A tensor of ``x``'s shape and dtype holding ``fill_value`` everywhere."""
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"full_like: expected a tensor, got {x!r}")
    value = _op.cast(x.dtype, fill_value)
    return te.compute(x.shape, lambda *i: value, name="T_full_like", tag=tag.ELEMWISE)


def elemwise_sum(xs):
    """The element-wise sum of tensors of one shape."""
    xs = list(xs)
    if not xs:
        raise TeccTypeError("elemwise_sum: needs at least one tensor")

    def f(*i):
        total = xs[0](*i)
        for x in xs[1:]:
            total = total + x(*i)
        return total

    return te.compute(xs[0].shape, f, name="T_elemwise_sum", tag=tag.ELEMWISE)
