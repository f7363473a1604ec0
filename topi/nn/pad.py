"""Padding a tensor with a constant (TVM's ``topi.nn.pad``)."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, equal_const_int, simplify


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput", attrs=None):
    """``data`` with ``pad_before[k]`` elements of ``pad_value`` before and
    ``pad_after[k]`` after it along every axis ``k``.

    Parameters
    ----------
    data : Tensor
    pad_before : list of int or expression
        One entry per axis of ``data``.
    pad_after : list of int or expression, optional
        One entry per axis; ``pad_before`` when None.
    pad_value : number or expression
    name : str

    Returns
    -------
    Tensor
        tagged ``"injective,pad"``; where nothing is padded it reads ``data``
        directly (no condition).
    """
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"pad: expected a tensor, got {data!r}")
    ndim = len(data.shape)
    pad_after = pad_before if pad_after is None else pad_after
    for what, p in (("pad_before", pad_before), ("pad_after", pad_after)):
        if len(p) != ndim:
            raise TopiError(f"pad({data.name!r}): {what} has {len(p)} entries but the tensor has rank {ndim}; "
                            "give one per axis")
    out_shape = tuple(simplify(d + b + a) for d, b, a in zip(data.shape, pad_before, pad_after))
    value = _op.cast(data.dtype, pad_value)

    def f(*i):
        conds, idx = [], []
        for k in range(ndim):
            before, after = pad_before[k], pad_after[k]
            if equal_const_int(before, 0) and equal_const_int(after, 0):
                idx.append(i[k])
                continue
            if not equal_const_int(before, 0):
                conds.append(i[k] >= before)
            if not equal_const_int(after, 0):
                conds.append(i[k] < data.shape[k] + before)
            idx.append(i[k] - before if not equal_const_int(before, 0) else i[k])
        if not conds:
            return data(*idx)
        return _op.if_then_else(_op.all(*conds), data(*idx), value)

    return te.compute(out_shape, f, name=name, tag=tag.compose(tag.INJECTIVE, tag.PAD), attrs=attrs)
