"""Depthwise 2-D convolution (TVM's ``topi.nn.depthwise_conv2d``): each input
channel convolved with its own ``channel_multiplier`` filters."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import dtype as _dt
from ...tir import op as _op
from .conv2d import DEPTHWISE_CONV2D_NCHW, _const, _scaled, check_tensors, describe_call, pad_tuple, spatial_tuple
from .pad import pad
from ..utils import TopiError, simplify


def _window(H, W, KH, KW, stride, padding, dilation, what):
    """``(sh, sw, dh, dw, (top, left), (bottom, right), OH, OW)``: the strides,
    dilations, padding and output size of a depthwise window over an ``H x W`` input.

    Raises
    ------
    TopiError
        When the dilated kernel is larger than the padded input.
    """
    (sh, sw) = spatial_tuple(stride, 2, what, "stride", 1)
    (dh, dw) = spatial_tuple(dilation, 2, what, "dilation", 1)
    dkh, dkw = simplify((KH - 1) * dh + 1), simplify((KW - 1) * dw + 1)
    (top, left), (bottom, right) = pad_tuple(padding, (dkh, dkw), what)
    PH, PW = simplify(H + top + bottom), simplify(W + left + right)
    for letter, p, kk in (("H", PH, dkh), ("W", PW, dkw)):
        if _const(p) is not None and _const(kk) is not None and _const(kk) > _const(p):
            raise TopiError(f"{what}: the kernel (dilated: {_const(kk)} along {letter}) is larger than the padded "
                            f"input ({_const(p)} along {letter}, padding {padding!r})")
    OH = simplify((PH - dkh) // sh + 1)
    OW = simplify((PW - dkw) // sw + 1)
    return sh, sw, dh, dw, (top, left), (bottom, right), OH, OW


def depthwise_conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None, name="Out"):
    """Depthwise convolution of NCHW ``Input``.

    Parameters
    ----------
    Input : Tensor
        ``[batch, in_channel, in_height, in_width]``
    Filter : Tensor
        ``[in_channel, channel_multiplier, filter_height, filter_width]``
    stride, dilation : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
    out_dtype : str, optional
        Accumulation and output dtype (``Input``'s by default).
    name : str

    Returns
    -------
    Tensor
        ``[batch, in_channel * channel_multiplier, out_height, out_width]``: output
        channel ``c`` is input channel ``c // channel_multiplier`` convolved with
        ``Filter[c // channel_multiplier, c % channel_multiplier]``; tagged
        ``depthwise_conv2d_nchw``, its padded input the stage ``Pad``.
    """
    what = describe_call("depthwise_conv2d_nchw", Input, Filter)
    check_tensors(what, 4, data=Input, kernel=Filter)
    N, C, H, W = Input.shape
    FC, M, KH, KW = Filter.shape
    if _const(C) is not None and _const(FC) is not None and _const(C) != _const(FC):
        raise TopiError(f"{what}: the input has {_const(C)} channels but the filter has {_const(FC)}; the filter "
                        f"must be [in_channel, channel_multiplier, kh, kw]")
    sh, sw, dh, dw, (top, left), (bottom, right), OH, OW = _window(H, W, KH, KW, stride, padding, dilation, what)
    out_dtype = out_dtype or Input.dtype
    padded = pad(Input, (0, 0, top, left), (0, 0, bottom, right), name="Pad")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    one = _const(M) == 1

    def body(n, c, y, x):
        src = c if one else c // M
        mult = 0 if one else c % M
        row, col = _scaled(y, sh) + _scaled(ry, dh), _scaled(x, sw) + _scaled(rx, dw)
        return te.sum(_op.cast(out_dtype, padded[n, src, row, col]) * _op.cast(out_dtype, Filter[src, mult, ry, rx]),
                      axis=[ry, rx])

    return te.compute((N, simplify(C * M), OH, OW), body, name=name, tag=DEPTHWISE_CONV2D_NCHW,
                      attrs={"strides": [sh, sw], "dilation": [dh, dw]})


#: the tag of :func:`depthwise_conv2d_nhwc`
DEPTHWISE_CONV2D_NHWC = "depthwise_conv2d_nhwc"

#: the kernel layouts of :func:`depthwise_conv2d_nhwc`: where the input channel
#: (``C``) and the channel multiplier (``M``) sit after ``filter_height, filter_width``
_NHWC_KERNEL_LAYOUTS = {"HWOI": "CM", "HWIO": "MC"}


def _is_dtype(text) -> bool:
    try:
        _dt.parse(text)
    except TeccTypeError:
        return False
    return True


def depthwise_conv2d_nhwc(Input, Filter, stride, padding, dilation, kernel_layout="HWOI", out_dtype=None,
                          name="DepthwiseConv2d"):
    """Depthwise convolution of NHWC ``Input``.

    Parameters
    ----------
    Input : Tensor
        ``[batch, in_height, in_width, in_channel]``
    Filter : Tensor
        ``[filter_height, filter_width, in_channel, channel_multiplier]`` with
        ``kernel_layout="HWOI"`` (the default, TVM's), or ``[filter_height,
        filter_width, channel_multiplier, in_channel]`` with ``"HWIO"``.
    stride, dilation : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
    kernel_layout : str
        ``"HWOI"`` or ``"HWIO"``.  A dtype here (TVM's tests pass ``out_dtype`` sixth,
        where TVM reads anything but ``"HWIO"`` as ``"HWOI"``) is taken as
        ``out_dtype`` with the default layout.
    out_dtype : str, optional
        Accumulation and output dtype (``Input``'s by default).
    name : str

    Returns
    -------
    Tensor
        ``[batch, out_height, out_width, in_channel * channel_multiplier]``: output
        channel ``c`` is input channel ``c // channel_multiplier`` convolved with its
        filter ``c % channel_multiplier``; tagged ``depthwise_conv2d_nhwc``, its
        padded input the stage ``Pad``.

    Raises
    ------
    TopiError
        For an unknown ``kernel_layout``, a filter whose channels are not the
        input's, a stride or dilation below 1, a negative pad, a kernel larger than
        the padded input.
    """
    what = describe_call("depthwise_conv2d_nhwc", Input, Filter)
    if kernel_layout not in _NHWC_KERNEL_LAYOUTS and out_dtype is None and isinstance(kernel_layout, str) \
            and _is_dtype(kernel_layout):
        kernel_layout, out_dtype = "HWOI", kernel_layout
    if kernel_layout not in _NHWC_KERNEL_LAYOUTS:
        raise TopiError(f"{what}: kernel_layout {kernel_layout!r} is not supported; use 'HWOI' ([kh, kw, "
                        "in_channel, channel_multiplier]) or 'HWIO' ([kh, kw, channel_multiplier, in_channel])")
    check_tensors(what, 4, data=Input, kernel=Filter)
    N, H, W, C = Input.shape
    KH, KW = Filter.shape[0], Filter.shape[1]
    order = _NHWC_KERNEL_LAYOUTS[kernel_layout]
    FC, M = Filter.shape[2 + order.index("C")], Filter.shape[2 + order.index("M")]
    if _const(C) is not None and _const(FC) is not None and _const(C) != _const(FC):
        raise TopiError(f"{what}: the input has {_const(C)} channels but the filter ({kernel_layout}) has "
                        f"{_const(FC)}")
    sh, sw, dh, dw, (top, left), (bottom, right), OH, OW = _window(H, W, KH, KW, stride, padding, dilation, what)
    out_dtype = out_dtype or Input.dtype
    padded = pad(Input, (0, top, left, 0), (0, bottom, right, 0), name="Pad")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    one = _const(M) == 1

    def body(n, y, x, c):
        src = c if one else c // M
        mult = 0 if one else c % M
        row, col = _scaled(y, sh) + _scaled(ry, dh), _scaled(x, sw) + _scaled(rx, dw)
        tap = (ry, rx, src, mult) if order == "CM" else (ry, rx, mult, src)
        return te.sum(_op.cast(out_dtype, padded[n, row, col, src]) * _op.cast(out_dtype, Filter[tap]),
                      axis=[ry, rx])

    return te.compute((N, OH, OW, simplify(C * M)), body, name=name, tag=DEPTHWISE_CONV2D_NHWC,
                      attrs={"strides": [sh, sw], "dilation": [dh, dw], "kernel_layout": kernel_layout})
