"""2-D convolution (TVM's ``topi.nn.conv2d``): direct NCHW and NHWC computes, their
padded input a stage of its own."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import expr as E
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, simplify
from .pad import pad
from .utils import get_pad_tuple, pair


def _check(data, kernel, what):
    for role, x in (("data", data), ("kernel", kernel)):
        if not isinstance(x, te.Tensor):
            raise TeccTypeError(f"{what}: {role} must be a tensor, got {x!r}")
        if len(x.shape) != 4:
            raise TopiError(f"{what}: {role} {x.name!r} has shape {tuple(x.shape)}; it must be 4-D")


def _window(stride, padding, dilation, kh, kw, what):
    sh, sw = pair(stride, f"{what}: stride")
    dh, dw = pair(dilation, f"{what}: dilation")
    dkh = simplify((kh - 1) * dh + 1)  # the dilated window
    dkw = simplify((kw - 1) * dw + 1)
    top, left, bottom, right = get_pad_tuple(padding, (dkh, dkw))
    return (sh, sw), (dh, dw), (top, left, bottom, right), (dkh, dkw)


def _tap(o, s, r, d):
    """``o * s + r * d`` with the unit factors left out."""
    first = o if isinstance(s, int) and s == 1 else o * s
    second = r if isinstance(d, int) and d == 1 else r * d
    return first + second


def conv2d_nchw(Input, Filter, stride=1, padding=0, dilation=1, out_dtype=None, name="Out"):
    """Direct convolution of NCHW ``Input`` with an OIHW ``Filter``.

    Parameters
    ----------
    Input : Tensor
        ``[batch, in_channel, in_height, in_width]``
    Filter : Tensor
        ``[num_filter, in_channel, filter_height, filter_width]``
    stride : int or (int, int)
    padding : int, (int, int), (int, int, int, int) or "SAME" / "VALID"
    dilation : int or (int, int)
    out_dtype : str, optional
        The accumulation and output dtype (``Input``'s by default).
    name : str

    Returns
    -------
    Tensor
        ``[batch, num_filter, out_height, out_width]``, tagged ``conv2d_nchw``; the
        padded input is the stage ``Pad`` (tagged ``injective,pad``).
    """
    what = f"conv2d_nchw({getattr(Input, 'name', Input)!r}, {getattr(Filter, 'name', Filter)!r})"
    _check(Input, Filter, what)
    N, CI, H, W = Input.shape
    CO, CIK, KH, KW = Filter.shape
    if isinstance(CI, E.IntImm) and isinstance(CIK, E.IntImm) and CI.value != CIK.value:
        raise TopiError(f"{what}: the input has {CI} channels but the filter expects {CIK}; "
                        "the filter must be [num_filter, in_channel, kh, kw]")
    (sh, sw), (dh, dw), (top, left, bottom, right), (dkh, dkw) = _window(stride, padding, dilation, KH, KW, what)
    OH = simplify((H + top + bottom - dkh) // sh + 1)
    OW = simplify((W + left + right - dkw) // sw + 1)
    out_dtype = out_dtype or Input.dtype
    padded = pad(Input, (0, 0, top, left), (0, 0, bottom, right), name="Pad")
    rc = te.reduce_axis((0, CI), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    return te.compute((N, CO, OH, OW), lambda n, f, y, x: te.sum(
        _op.cast(out_dtype, padded[n, rc, _tap(y, sh, ry, dh), _tap(x, sw, rx, dw)])
        * _op.cast(out_dtype, Filter[f, rc, ry, rx]), axis=[rc, ry, rx]), name=name, tag=tag.CONV2D_NCHW)


def conv2d_nhwc(Input, Filter, stride=1, padding=0, dilation=1, out_dtype=None, name="Out"):
    """Direct convolution of NHWC ``Input`` with an HWIO ``Filter``
    (``[filter_height, filter_width, in_channel, num_filter]``); tagged
    ``conv2d_nhwc``."""
    what = f"conv2d_nhwc({getattr(Input, 'name', Input)!r}, {getattr(Filter, 'name', Filter)!r})"
    _check(Input, Filter, what)
    N, H, W, CI = Input.shape
    KH, KW, _, CO = Filter.shape
    (sh, sw), (dh, dw), (top, left, bottom, right), (dkh, dkw) = _window(stride, padding, dilation, KH, KW, what)
    OH = simplify((H + top + bottom - dkh) // sh + 1)
    OW = simplify((W + left + right - dkw) // sw + 1)
    out_dtype = out_dtype or Input.dtype
    padded = pad(Input, (0, top, left, 0), (0, bottom, right, 0), name="Pad")
    rc = te.reduce_axis((0, CI), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    return te.compute((N, OH, OW, CO), lambda n, y, x, f: te.sum(
        _op.cast(out_dtype, padded[n, _tap(y, sh, ry, dh), _tap(x, sw, rx, dw), rc])
        * _op.cast(out_dtype, Filter[ry, rx, rc, f]), axis=[rc, ry, rx]), name=name, tag="conv2d_nhwc")


def conv2d(input, filter, strides, padding, dilation, data_layout="NCHW",  # noqa: A002  (TVM's names)
           kernel_layout="", out_dtype=None):
    """2-D convolution in ``data_layout`` ``"NCHW"`` (OIHW filter) or ``"NHWC"``
    (HWIO filter)."""
    if data_layout == "NCHW":
        return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype)
    if data_layout == "NHWC":
        return conv2d_nhwc(input, filter, strides, padding, dilation, out_dtype)
    raise TopiError(f"conv2d: data_layout {data_layout!r} is not supported; use 'NCHW' or 'NHWC'")


def pad_nchw(data, pad_width, name="Pad"):
    """``data`` (NCHW) with ``pad_width`` zeros on each side of H and W."""
    return pad(data, (0, 0, pad_width, pad_width), name=name)
