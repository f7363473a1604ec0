"""Spreading a tensor's elements apart (TVM's ``topi.nn.dilate``): the input of a
transposed convolution, and how a filter is dilated by hand."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, equal_const_int, simplify


def dilate(data, strides, dilation_value=0.0, name="DilatedInput"):
    """``data`` with ``strides[k] - 1`` copies of ``dilation_value`` between
    neighbours along every axis ``k``.

    Parameters
    ----------
    data : Tensor
    strides : list of int
        One per axis; 1 leaves the axis alone.
    dilation_value : number
    name : str

    Returns
    -------
    Tensor
        ``(size - 1) * stride + 1`` along each axis, tagged ``injective,dilate``.
    """
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"dilate: expected a tensor, got {data!r}")
    ndim = len(data.shape)
    if len(strides) != ndim:
        raise TopiError(f"dilate({data.name!r}): strides {tuple(strides)} has {len(strides)} entries but the tensor "
                        f"has shape {tuple(data.shape)}; give one per axis")
    for s in strides:
        if isinstance(s, int) and s < 1:
            raise TopiError(f"dilate({data.name!r}): strides {tuple(strides)} must be at least 1")
    out_shape = tuple(simplify((data.shape[k] - 1) * strides[k] + 1) for k in range(ndim))

    def f(*i):
        conds, src = [], []
        for k in range(ndim):
            if equal_const_int(strides[k], 1):
                src.append(i[k])
            else:
                conds.append(i[k] % strides[k] == 0)
                src.append(i[k] // strides[k])
        if not conds:
            return data(*src)
        return _op.if_then_else(_op.all(*conds), data(*src), _op.cast(data.dtype, dilation_value))

    return te.compute(out_shape, f, name=name, tag=tag.compose(tag.INJECTIVE, "dilate"))
