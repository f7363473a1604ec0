"""Padding a tensor (TVM's ``topi.nn.pad`` and ``topi.nn.mirror_pad``), and with
copies of its edge (``edge_pad``).

ONNX's ``Pad`` modes map onto them as

============  =====================================================
ONNX mode     tecc
============  =====================================================
``constant``  ``pad(data, before, after, pad_value=value)``
``reflect``   ``mirror_pad(data, before, after, mode="REFLECT")``
``edge``      ``edge_pad(data, before, after)``
============  =====================================================

(numpy's ``np.pad`` modes ``constant``, ``reflect``, ``symmetric`` -- that is
``mirror_pad(..., mode="SYMMETRIC")`` -- and ``edge`` alike.)  Negative pads, which
ONNX reads as cropping, are an error here: crop with ``strided_slice`` first.
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, equal_const_int, get_const_tuple, simplify


def _pads(data, pad_before, pad_after, what):
    """``(before, after)`` checked: one entry per axis, none negative."""
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {data!r}")
    ndim = len(data.shape)
    pad_after = pad_before if pad_after is None else pad_after
    pad_before, pad_after = list(pad_before), list(pad_after)
    for name, p in (("pad_before", pad_before), ("pad_after", pad_after)):
        if len(p) != ndim:
            raise TopiError(f"{what}({data.name!r} {tuple(data.shape)}): {name} has {len(p)} entries but the tensor "
                            f"has rank {ndim}; give one per axis")
        for k, v in enumerate(get_const_tuple(p)):
            if isinstance(v, int) and v < 0:
                raise TopiError(f"{what}({data.name!r} {tuple(data.shape)}): {name}[{k}] is {v}; padding must be "
                                ">= 0 (crop with strided_slice)")
    return pad_before, pad_after


def _padded_shape(data, pad_before, pad_after):
    return tuple(simplify(d + b + a) for d, b, a in zip(data.shape, pad_before, pad_after))


def _untouched(before, after):
    return equal_const_int(before, 0) and equal_const_int(after, 0)


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput", attrs=None):
    """``data`` with ``pad_before[k]`` elements of ``pad_value`` before and
    ``pad_after[k]`` after it along every axis ``k``.

    Parameters
    ----------
    data : Tensor
    pad_before : list of int or expression
        One entry per axis of ``data``, none negative.
    pad_after : list of int or expression, optional
        One entry per axis; ``pad_before`` when None.
    pad_value : number or expression
    name : str

    Returns
    -------
    Tensor
        tagged ``"injective,pad"``; where nothing is padded it reads ``data``
        directly (no condition).

    Raises
    ------
    TopiError
        When a list does not have one entry per axis, or a pad is negative.
    """
    pad_before, pad_after = _pads(data, pad_before, pad_after, "pad")
    ndim = len(data.shape)
    out_shape = _padded_shape(data, pad_before, pad_after)
    value = _op.cast(data.dtype, pad_value)

    def f(*i):
        conds, idx = [], []
        for k in range(ndim):
            before, after = pad_before[k], pad_after[k]
            if _untouched(before, after):
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


def mirror_pad(data, pad_before, pad_after=None, mode="SYMMETRIC", name="MirrorPadInput"):
    """``data`` padded with its mirror image along every axis.

    Parameters
    ----------
    data : Tensor
    pad_before, pad_after : list of int
        One entry per axis (``pad_after`` is ``pad_before`` when None).
    mode : {"SYMMETRIC", "REFLECT"}
        ``SYMMETRIC`` repeats the edge element (``[a b c] -> b a | a b c | c b``,
        numpy's ``symmetric``); ``REFLECT`` does not (``c b | a b c | b a``, numpy's
        ``reflect``, ONNX's ``reflect``).

    Raises
    ------
    TopiError
        On an unknown mode, a negative pad, or a pad longer than the axis can mirror
        (its size for ``SYMMETRIC``, its size - 1 for ``REFLECT``).
    """
    pad_before, pad_after = _pads(data, pad_before, pad_after, "mirror_pad")
    if mode not in ("SYMMETRIC", "REFLECT"):
        raise TopiError(f"mirror_pad({data.name!r}): mode {mode!r} is not 'SYMMETRIC' or 'REFLECT'")
    shift = 1 if mode == "SYMMETRIC" else 0
    shape = get_const_tuple(data.shape)
    for k, (b, a, n) in enumerate(zip(get_const_tuple(pad_before), get_const_tuple(pad_after), shape)):
        if isinstance(n, int) and any(isinstance(p, int) and p > n - 1 + shift for p in (b, a)):
            raise TopiError(f"mirror_pad({data.name!r} {tuple(data.shape)}): axis {k} of size {n} cannot be padded "
                            f"by ({b}, {a}) in mode {mode}; at most {n - 1 + shift} per side")

    def f(*i):
        idx = []
        for k in range(len(shape)):
            before, after = pad_before[k], pad_after[k]
            if _untouched(before, after):
                idx.append(i[k])
                continue
            x = i[k] - before
            n = data.shape[k]
            x = _op.select(x < 0, -x - shift, x)
            x = _op.select(x >= n, 2 * n - 2 - x + shift, x)
            idx.append(x)
        return data(*idx)

    return te.compute(_padded_shape(data, pad_before, pad_after), f, name=name,
                      tag=tag.compose(tag.INJECTIVE, tag.PAD))


def edge_pad(data, pad_before, pad_after=None, name="EdgePadInput"):
    """``data`` padded with copies of its first and last elements along every axis
    (numpy's and ONNX's ``edge`` mode: ``[a b c] -> a a | a b c | c c``)."""
    pad_before, pad_after = _pads(data, pad_before, pad_after, "edge_pad")

    def f(*i):
        idx = []
        for k in range(len(data.shape)):
            before, after = pad_before[k], pad_after[k]
            if _untouched(before, after):
                idx.append(i[k])
                continue
            x = i[k] - before if not equal_const_int(before, 0) else i[k]
            idx.append(_op.min(_op.max(x, 0), data.shape[k] - 1))
        return data(*idx)

    return te.compute(_padded_shape(data, pad_before, pad_after), f, name=name,
                      tag=tag.compose(tag.INJECTIVE, tag.PAD))

