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

#: the tag of :func:`group_conv2d_transpose_nchw` with more than one group
GROUP_CONV2D_TRANSPOSE_NCHW = "group_conv2d_transpose_nchw"


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
    return _transpose(what, Input, Filter, strides, padding, out_dtype, output_padding, 1, name,
                      CONV2D_TRANSPOSE_NCHW)


def group_conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding, groups, name="Out"):
    """Grouped transposed convolution of NCHW ``data`` (TVM's argument order).

    Parameters
    ----------
    data : Tensor
        ``[batch, in_channel, in_height, in_width]``
    kernel : Tensor
        ``[in_channel, num_filter // groups, filter_height, filter_width]`` (IOHW):
        the input channels of group ``g`` (``g * in_channel // groups`` on) make the
        output channels of group ``g`` (``g * num_filter // groups`` on).
    stride : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
    out_dtype : str or None
        Accumulation and output dtype (``data``'s when None).
    output_padding : int or (int, int)
    groups : int
        With 1, this is :func:`conv2d_transpose_nchw` (its tag too, as TVM's).

    Returns
    -------
    Tensor
        ``[batch, num_filter, out_height, out_width]`` (sizes as
        :func:`conv2d_transpose_nchw`'s), tagged ``group_conv2d_transpose_nchw``.

    Raises
    ------
    TopiError
        When ``groups`` does not divide the input channels, the kernel's first axis
        is not the input's channels, ``output_padding`` is not below the stride,
        a pad is negative or removes the whole output.
    """
    what = describe_call("group_conv2d_transpose_nchw", data, kernel, f"groups={groups!r}")
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise TopiError(f"{what}: groups={groups!r} must be an int >= 1")
    if groups == 1:
        return _transpose(what, data, kernel, stride, padding, out_dtype, output_padding, 1, name,
                          CONV2D_TRANSPOSE_NCHW)
    return _transpose(what, data, kernel, stride, padding, out_dtype, output_padding, groups, name,
                      GROUP_CONV2D_TRANSPOSE_NCHW)


def _transpose(what, Input, Filter, strides, padding, out_dtype, output_padding, groups, name, op_tag):
    check_tensors(what, 4, data=Input, kernel=Filter)
    N, C, H, W = Input.shape
    FC, CO, KH, KW = Filter.shape
    if groups > 1 and _const(C) is not None and _const(C) % groups:
        raise TopiError(f"{what}: groups={groups} does not divide the {_const(C)} input channels")
    if _const(C) is not None and _const(FC) is not None and _const(C) != _const(FC):
        if groups == 1:
            raise TopiError(f"{what}: the input has {_const(C)} channels but the filter expects {_const(FC)}; the "
                            f"filter must be [in_channel, num_filter, kh, kw] (IOHW)")
        raise TopiError(f"{what}: the input has {_const(C)} channels but the filter expects {_const(FC)}; the "
                        f"filter must be [in_channel, num_filter // groups, kh, kw] (IOHW)")
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
    per_group_in = simplify(C // groups)
    rc = te.reduce_axis((0, per_group_in), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")

    def body(n, f, y, x):
        if groups == 1:
            channel, m = rc, f
        else:
            channel, m = f // CO * per_group_in + rc, f % CO
        return te.sum(_op.cast(out_dtype, spread[n, channel, y + ry, x + rx])
                      * _op.cast(out_dtype, Filter[channel, m, KH - 1 - ry, KW - 1 - rx]), axis=[rc, ry, rx])

    return te.compute((N, simplify(CO * groups), OH, OW), body, name=name, tag=op_tag,
                      attrs={"strides": [sh, sw], "output_padding": [oph, opw], "groups": groups})
