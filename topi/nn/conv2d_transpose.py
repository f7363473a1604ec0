"""Transposed 2-D and 3-D convolutions (TVM's ``topi.nn.conv2d_transpose`` and
``conv3d_transpose``; the gradient of a convolution with respect to its data,
sometimes called deconvolution).

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
#: the tag of :func:`conv3d_transpose_ncdhw`
CONV3D_TRANSPOSE_NCDHW = "conv3d_transpose_ncdhw"


def _dilate_pad(data, strides, before, after, name="DilatePad"):
    """``data`` (channels first, then its spatial axes) with ``stride - 1`` zeros
    between neighbours along each spatial axis, then ``before``/``after`` zeros
    around them (a negative pad crops)."""
    N, C = data.shape[:2]
    sizes = tuple(data.shape[2:])
    k = len(sizes)
    shape = [N, C] + [simplify((sizes[a] - 1) * strides[a] + 1 + before[a] + after[a]) for a in range(k)]

    def body(n, c, *spatial):
        conds, src = [], []
        for a, i in enumerate(spatial):
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
        return _op.if_then_else(_op.all(*conds), data[(n, c, *src)], _op.cast(data.dtype, 0))

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


def conv3d_transpose_ncdhw(Input, Filter, strides, padding, out_dtype=None, output_padding=(0, 0, 0), name="Out"):
    """Transposed 3-D convolution of NCDHW ``Input`` (TVM's argument order).

    Parameters
    ----------
    Input : Tensor
        ``[batch, in_channel, in_depth, in_height, in_width]``
    Filter : Tensor
        ``[in_channel, num_filter, filter_depth, filter_height, filter_width]`` (IODHW)
    strides : int or 3 ints
    padding : int, 3 ints, 6 ints (front, top, left, back, bottom, right) or "SAME" / "VALID"
        The forward convolution's padding: removed from the output's borders.
    out_dtype : str, optional
    output_padding : int or 3 ints
        Extra planes, rows and columns at the back, bottom and right (each below its
        stride).

    Returns
    -------
    Tensor
        ``[batch, num_filter, out_depth, out_height, out_width]``, tagged
        ``conv3d_transpose_ncdhw``.
    """
    what = describe_call("conv3d_transpose_ncdhw", Input, Filter)
    return _transpose(what, Input, Filter, strides, padding, out_dtype, output_padding, 1, name,
                      CONV3D_TRANSPOSE_NCDHW, spatial=3)


def _transpose(what, Input, Filter, strides, padding, out_dtype, output_padding, groups, name, op_tag, spatial=2):
    check_tensors(what, spatial + 2, data=Input, kernel=Filter)
    N, C = Input.shape[:2]
    sizes = tuple(Input.shape[2:])
    FC, CO = Filter.shape[:2]
    ksizes = tuple(Filter.shape[2:])
    letters = "DHW"[3 - spatial:]
    layout = "IO" + letters
    if groups > 1 and _const(C) is not None and _const(C) % groups:
        raise TopiError(f"{what}: groups={groups} does not divide the {_const(C)} input channels")
    if _const(C) is not None and _const(FC) is not None and _const(C) != _const(FC):
        dims = ", ".join(f"k{letter.lower()}" for letter in letters)
        if groups == 1:
            raise TopiError(f"{what}: the input has {_const(C)} channels but the filter expects {_const(FC)}; the "
                            f"filter must be [in_channel, num_filter, {dims}] ({layout})")
        raise TopiError(f"{what}: the input has {_const(C)} channels but the filter expects {_const(FC)}; the "
                        f"filter must be [in_channel, num_filter // groups, {dims}] ({layout})")
    steps = spatial_tuple(strides, spatial, what, "strides", 1)
    extra = spatial_tuple(output_padding, spatial, what, "output_padding", 0)
    for o, st, letter in zip(extra, steps, letters):
        if _const(o) is not None and _const(st) is not None and _const(o) >= _const(st):
            raise TopiError(f"{what}: output_padding {output_padding!r} must be smaller than the strides "
                            f"{strides!r} (along {letter})")
    first, last = pad_tuple(padding, ksizes, what)
    before = tuple(simplify(kk - 1 - p) for kk, p in zip(ksizes, first))
    after = tuple(simplify(kk - 1 - p + o) for kk, p, o in zip(ksizes, last, extra))
    out_sizes = tuple(simplify((n - 1) * st - a - b + kk + o)
                      for n, st, a, b, kk, o in zip(sizes, steps, first, last, ksizes, extra))
    for letter, o in zip(letters, out_sizes):
        if _const(o) is not None and _const(o) < 1:
            raise TopiError(f"{what}: padding {padding!r} removes the whole output along {letter} "
                            f"(size {_const(o)})")
    out_dtype = out_dtype or Input.dtype
    spread = _dilate_pad(Input, steps, before, after)
    per_group_in = simplify(C // groups)
    rc = te.reduce_axis((0, per_group_in), name="rc")
    rs = [te.reduce_axis((0, kk), name={"D": "rz", "H": "ry", "W": "rx"}[letter])
          for kk, letter in zip(ksizes, letters)]

    def body(n, f, *pos):
        if groups == 1:
            channel, m = rc, f
        else:
            channel, m = f // CO * per_group_in + rc, f % CO
        taps = [p + r for p, r in zip(pos, rs)]
        flipped = [kk - 1 - r for kk, r in zip(ksizes, rs)]
        return te.sum(_op.cast(out_dtype, spread[(n, channel, *taps)])
                      * _op.cast(out_dtype, Filter[(channel, m, *flipped)]), axis=[rc, *rs])

    return te.compute((N, simplify(CO * groups), *out_sizes), body, name=name, tag=op_tag,
                      attrs={"strides": list(steps), "output_padding": list(extra), "groups": groups})
