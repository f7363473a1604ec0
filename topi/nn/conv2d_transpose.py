"""Transposed 2-D convolution (TVM's ``topi.nn.conv2d_transpose``; the gradient of
conv2d with respect to its data, sometimes called deconvolution).

It is computed as a direct convolution, stride 1, of the input spread ``stride``
apart (zeros between) and padded by ``kernel - 1 - padding``, with the filter
flipped: one stage (``DilatePad``, tagged ``injective,pad``) makes the spread and
padded input, the convolution reads the filter flipped in place.
"""
from __future__ import annotations

from ... import te
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, equal_const_int, simplify
from .conv2d import CONV2D_TRANSPOSE_NCHW, _const, check_tensors, describe_call, pad_tuple, spatial_tuple


def _dilate_pad(data, strides, before, after, name="DilatePad"):
    """``data`` (NCHW) with ``stride - 1`` zeros between neighbours along H and W,
    then ``before``/``after`` zeros around them (a negative pad crops)."""
    N, C, H, W = data.shape
    sizes = (H, W)
    shape = [N, C] + [simplify((sizes[a] - 1) * strides[a] + 1 + before[a] + after[a]) for a in range(2)]

    def body(n, c, y, x):
        conds, src = [], []
        for a, i in enumerate((y, x)):
            j = i - before[a] if not equal_const_int(before[a], 0) else i
            s = strides[a]
            if _const(before[a]) is None or _const(before[a]) > 0:
                conds.append(j >= 0)
            conds.append(j < (sizes[a] - 1) * s + 1)
            if equal_const_int(s, 1):
                src.append(j)
            else:
                conds.append(j % s == 0)
                src.append(j // s)
        return _op.if_then_else(_op.all(*conds), data[n, c, src[0], src[1]], _op.cast(data.dtype, 0))

    return te.compute(tuple(shape), body, name=name, tag=tag.compose(tag.INJECTIVE, tag.PAD))


def conv2d_transpose_nchw(Input, Filter, strides, padding, out_dtype=None, output_padding=(0, 0), name="Out"):
    """Transposed convolution of NCHW ``Input``.

    Parameters
    ----------
    Input : Tensor
        ``[batch, in_channel, in_height, in_width]``
    Filter : Tensor
        ``[in_channel, num_filter, filter_height, filter_width]`` (IOHW, the layout
        of the forward convolution's filter whose gradient this is)
    strides : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
        The forward convolution's padding: removed from the output's borders.
    out_dtype : str, optional
        Accumulation and output dtype (``Input``'s by default).
    output_padding : int or (int, int)
        Extra rows and columns at the bottom and right (each below its stride),
        which pick among the input sizes a strided forward convolution maps to the
        same output size.

    Returns
    -------
    Tensor
        ``[batch, num_filter, (in_height - 1) * stride_h - top - bottom +
        filter_height + output_padding_h, ...]``, tagged ``conv2d_transpose_nchw``.
    """
    what = describe_call("conv2d_transpose_nchw", Input, Filter)
    check_tensors(what, 4, data=Input, kernel=Filter)
    N, C, H, W = Input.shape
    FC, CO, KH, KW = Filter.shape
    if _const(C) is not None and _const(FC) is not None and _const(C) != _const(FC):
        raise TopiError(f"{what}: the input has {_const(C)} channels but the filter expects {_const(FC)}; the "
                        f"filter must be [in_channel, num_filter, kh, kw] (IOHW)")
    sh, sw = spatial_tuple(strides, 2, what, "strides", 1)
    oph, opw = spatial_tuple(output_padding, 2, what, "output_padding", 0)
    for o, s, letter in ((oph, sh, "H"), (opw, sw, "W")):
        if _const(o) is not None and _const(s) is not None and _const(o) >= _const(s):
            raise TopiError(f"{what}: output_padding {output_padding!r} must be smaller than the strides "
                            f"{strides!r} (along {letter})")
    (top, left), (bottom, right) = pad_tuple(padding, (KH, KW), what)
    before = (simplify(KH - 1 - top), simplify(KW - 1 - left))
    after = (simplify(KH - 1 - bottom + oph), simplify(KW - 1 - right + opw))
    OH = simplify((H - 1) * sh - top - bottom + KH + oph)
    OW = simplify((W - 1) * sw - left - right + KW + opw)
    for letter, o in (("H", OH), ("W", OW)):
        if _const(o) is not None and _const(o) < 1:
            raise TopiError(f"{what}: padding {padding!r} removes the whole output along {letter} "
                            f"(size {_const(o)})")
    out_dtype = out_dtype or Input.dtype
    spread = _dilate_pad(Input, (sh, sw), before, after)
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    return te.compute((N, CO, OH, OW), lambda n, f, y, x: te.sum(
        _op.cast(out_dtype, spread[n, rc, y + ry, x + rx])
        * _op.cast(out_dtype, Filter[rc, f, KH - 1 - ry, KW - 1 - rx]), axis=[rc, ry, rx]),
        name=name, tag=CONV2D_TRANSPOSE_NCHW, attrs={"strides": [sh, sw], "output_padding": [oph, opw]})
