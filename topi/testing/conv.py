"""Numpy references of the convolutions (TVM's ``topi.testing`` names): direct sums
over the kernel's taps, accumulated in float64 (int64 for integer inputs), each an
oracle written independently of the TE computes it checks."""
from __future__ import annotations

import numpy as np


def _ints(value, k, what):
    if isinstance(value, (list, tuple)):
        if len(value) != k:
            raise ValueError(f"{what} {value!r} must have {k} entries")
        return tuple(int(v) for v in value)
    return (int(value),) * k


def _pads(padding, dilated_kernel):
    """``(before, after)`` per spatial axis: an int, ``k`` ints (both sides), ``2 k``
    ints (befores then afters), ``"VALID"`` or ``"SAME"`` (the extra pad, if odd,
    before)."""
    k = len(dilated_kernel)
    if isinstance(padding, str):
        if padding == "VALID":
            return (0,) * k, (0,) * k
        if padding == "SAME":
            total = [d - 1 for d in dilated_kernel]
            return tuple(t - t // 2 for t in total), tuple(t // 2 for t in total)
        raise ValueError(f"padding {padding!r} is not 'SAME' or 'VALID'")
    if isinstance(padding, (list, tuple)):
        if len(padding) == k:
            return tuple(padding), tuple(padding)
        if len(padding) == 2 * k:
            return tuple(padding[:k]), tuple(padding[k:])
        raise ValueError(f"padding {padding!r} must have {k} or {2 * k} entries")
    return (int(padding),) * k, (int(padding),) * k


def _acc_dtype(dtype):
    return np.int64 if np.dtype(dtype).kind in "iub" else np.float64


def _conv_nc(a_np, w_np, stride, padding, dilation, groups, out_dtype):
    """Convolution of channels-first ``a_np`` ``[N, C, *spatial]`` with ``w_np``
    ``[O, C // groups, *kernel]``, any number of spatial axes."""
    k = a_np.ndim - 2
    N, C = a_np.shape[:2]
    O, CIG = w_np.shape[:2]
    strides = _ints(stride, k, "stride")
    dilations = _ints(dilation, k, "dilation")
    kernel = w_np.shape[2:]
    before, after = _pads(padding, [(kk - 1) * d + 1 for kk, d in zip(kernel, dilations)])
    if C != CIG * groups or O % groups:
        raise ValueError(f"{C} input channels, {O} filters and a kernel of shape {w_np.shape} do not make "
                         f"{groups} group(s)")
    acc = _acc_dtype(a_np.dtype)
    padded = np.pad(a_np.astype(acc), [(0, 0), (0, 0)] + list(zip(before, after)))
    out_sizes = [(padded.shape[2 + i] - (kernel[i] - 1) * dilations[i] - 1) // strides[i] + 1 for i in range(k)]
    out = np.zeros((N, O) + tuple(out_sizes), acc)
    per_group = O // groups
    for g in range(groups):
        cin = slice(g * CIG, (g + 1) * CIG)
        cout = slice(g * per_group, (g + 1) * per_group)
        for tap in np.ndindex(*kernel):
            window = tuple(slice(t * d, t * d + s * (o - 1) + 1, s)
                           for t, d, s, o in zip(tap, dilations, strides, out_sizes))
            patch = padded[(slice(None), cin) + window]  # [N, CIG, *out]
            weight = w_np[(cout, slice(None)) + tap].astype(acc)  # [per_group, CIG]
            out[:, cout] += np.tensordot(weight, patch, axes=([1], [1])).swapaxes(0, 1)
    return out.astype(out_dtype or a_np.dtype)


def conv2d_nchw_python(a_np, w_np, stride=1, padding=0, groups=1, dilation=1, out_dtype=None):
    """Direct convolution of NCHW ``a_np`` with an OIHW ``w_np``.

    Parameters
    ----------
    a_np : numpy.ndarray
        ``[batch, in_channel, in_height, in_width]``
    w_np : numpy.ndarray
        ``[num_filter, in_channel // groups, filter_height, filter_width]``
    stride, dilation : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right), "SAME" or "VALID"
    groups : int
        The channels split into ``groups`` independent groups (TVM's fifth
        argument; ``dilation`` is tecc's addition, pass it by name).
    out_dtype : str, optional
        The result's dtype (``a_np``'s by default).

    Returns
    -------
    numpy.ndarray
        ``[batch, num_filter, out_height, out_width]``
    """
    return _conv_nc(a_np, w_np, stride, padding, dilation, groups, out_dtype)


def conv2d_nhwc_python(a_np, w_np, stride=1, padding=0, groups=1, dilation=1, out_dtype=None):
    """Direct convolution of NHWC ``a_np`` with an HWIO ``w_np``
    (``[filter_height, filter_width, in_channel // groups, num_filter]``); the
    result is NHWC."""
    out = _conv_nc(a_np.transpose(0, 3, 1, 2), w_np.transpose(3, 2, 0, 1), stride, padding, dilation, groups,
                   out_dtype)
    return out.transpose(0, 2, 3, 1)


def conv3d_ncdhw_python(a_np, w_np, stride, padding, groups=1, dilation=1, out_dtype=None):
    """Direct 3-D convolution of NCDHW ``a_np`` with an OIDHW ``w_np``
    (``[num_filter, in_channel // groups, filter_depth, filter_height,
    filter_width]``); ``padding`` an int, 3 ints, 6 ints (befores then afters),
    "SAME" or "VALID"."""
    return _conv_nc(a_np, w_np, stride, padding, dilation, groups, out_dtype)


def conv3d_ndhwc_python(a_np, w_np, stride, padding, groups=1, dilation=1, out_dtype=None):
    """Direct 3-D convolution of NDHWC ``a_np`` with a DHWIO ``w_np``; the result is
    NDHWC."""
    out = _conv_nc(a_np.transpose(0, 4, 1, 2, 3), w_np.transpose(4, 3, 0, 1, 2), stride, padding, dilation, groups,
                   out_dtype)
    return out.transpose(0, 2, 3, 4, 1)


def depthwise_conv2d_python_nchw(input_np, filter_np, stride, padding, dilation=1, out_dtype=None):
    """Depthwise convolution of NCHW ``input_np`` with ``filter_np``
    ``[in_channel, channel_multiplier, filter_height, filter_width]``: output channel
    ``c * channel_multiplier + m`` is input channel ``c`` convolved with
    ``filter_np[c, m]``."""
    C, M, KH, KW = filter_np.shape
    if input_np.shape[1] != C:
        raise ValueError(f"input {input_np.shape} and filter {filter_np.shape} differ in channels")
    return _conv_nc(input_np, filter_np.reshape(C * M, 1, KH, KW), stride, padding, dilation, C, out_dtype)


def depthwise_conv2d_python_nhwc(input_np, filter_np, stride, padding, dilation=1, out_dtype=None,
                                 kernel_layout="HWOI"):
    """Depthwise convolution of NHWC ``input_np`` with ``filter_np`` ``[filter_height,
    filter_width, in_channel, channel_multiplier]`` (``kernel_layout="HWOI"``, TVM's;
    ``"HWIO"``: ``[filter_height, filter_width, channel_multiplier, in_channel]``):
    output channel ``c * channel_multiplier + m`` is input channel ``c`` convolved with
    ``filter_np[:, :, c, m]``; the result is NHWC."""
    if kernel_layout == "HWIO":
        filter_np = filter_np.transpose(0, 1, 3, 2)
    elif kernel_layout != "HWOI":
        raise ValueError(f"kernel_layout {kernel_layout!r} is not 'HWOI' or 'HWIO'")
    out = depthwise_conv2d_python_nchw(input_np.transpose(0, 3, 1, 2), filter_np.transpose(2, 3, 0, 1), stride,
                                       padding, dilation, out_dtype)
    return out.transpose(0, 2, 3, 1)


def conv1d_ncw_python(a_np, w_np, stride, padding, dilation=1, out_dtype=None):
    """1-D convolution of NCW ``a_np`` with an OIW ``w_np``; ``padding`` an int,
    ``(left, right)``, "SAME" or "VALID"."""
    return _conv_nc(a_np, w_np, stride, padding, dilation, 1, out_dtype)


def group_conv1d_ncw_python(a_np, w_np, stride, padding, dilation, groups, out_dtype=None):
    """Grouped :func:`conv1d_ncw_python` (``w_np`` of ``in_channel // groups`` input
    channels)."""
    return _conv_nc(a_np, w_np, stride, padding, dilation, groups, out_dtype)


def conv2d_transpose_nchw_python(a_np, w_np, stride, padding, output_padding=0, groups=1, out_dtype=None):
    """Transposed convolution of NCHW ``a_np`` with an IOHW ``w_np``
    (``[in_channel, num_filter // groups, filter_height, filter_width]``), by
    scattering: every input pixel adds its value times the filter into the
    output window it maps to; then ``padding`` is cut from the borders and
    ``output_padding`` rows and columns are added at the bottom and right.

    Returns
    -------
    numpy.ndarray
        ``[batch, num_filter, (in_height - 1) * stride_h - top - bottom +
        filter_height + output_padding_h, ...]``
    """
    N, C, H, W = a_np.shape
    CI, OG, KH, KW = w_np.shape
    sh, sw = _ints(stride, 2, "stride")
    oph, opw = _ints(output_padding, 2, "output_padding")
    if oph >= sh or opw >= sw:
        raise ValueError(f"output_padding {output_padding!r} must be smaller than the stride {stride!r}")
    if CI != C or C % groups:
        raise ValueError(f"input {a_np.shape} and filter {w_np.shape} do not make {groups} group(s)")
    (top, left), (bottom, right) = _pads(padding, (KH, KW))
    acc = _acc_dtype(a_np.dtype)
    full = np.zeros((N, OG * groups, (H - 1) * sh + KH + oph, (W - 1) * sw + KW + opw), acc)
    cig = C // groups
    for g in range(groups):
        cin = slice(g * cig, (g + 1) * cig)
        cout = slice(g * OG, (g + 1) * OG)
        for kh in range(KH):
            for kw in range(KW):
                # [N, OG, H, W]: every input pixel's contribution through tap (kh, kw)
                part = np.tensordot(a_np[:, cin].astype(acc), w_np[cin, :, kh, kw].astype(acc), axes=([1], [0]))
                full[:, cout, kh: kh + (H - 1) * sh + 1: sh, kw: kw + (W - 1) * sw + 1: sw] += \
                    part.transpose(0, 3, 1, 2)
    OH = full.shape[2] - top - bottom
    OW = full.shape[3] - left - right
    return full[:, :, top: top + OH, left: left + OW].astype(out_dtype or a_np.dtype)


def conv3d_transpose_ncdhw_python(a_np, w_np, stride, padding, output_padding=0):
    """Transposed 3-D convolution of NCDHW ``a_np`` with an IODHW ``w_np`` (``[in_channel,
    num_filter, filter_depth, filter_height, filter_width]``), by scattering each
    input voxel's value times the filter into the output window it maps to, then
    cutting ``padding`` from the borders (``output_padding`` adds planes, rows and
    columns at the back, bottom and right)."""
    N, C, *sizes = a_np.shape
    CI, CO, *kernel = w_np.shape
    strides = _ints(stride, 3, "stride")
    extra = _ints(output_padding, 3, "output_padding")
    if CI != C:
        raise ValueError(f"input {a_np.shape} and filter {w_np.shape}: the filter must be IODHW")
    if any(o >= s for o, s in zip(extra, strides)):
        raise ValueError(f"output_padding {output_padding!r} must be smaller than the stride {stride!r}")
    before, after = _pads(padding, kernel)
    acc = _acc_dtype(a_np.dtype)
    full = np.zeros((N, CO) + tuple((n - 1) * s + k + o for n, s, k, o in zip(sizes, strides, kernel, extra)), acc)
    for tap in np.ndindex(*kernel):
        part = np.tensordot(a_np.astype(acc), w_np[(slice(None), slice(None)) + tap].astype(acc), axes=([1], [0]))
        window = tuple(slice(t, t + (n - 1) * s + 1, s) for t, n, s in zip(tap, sizes, strides))
        full[(slice(None), slice(None)) + window] += np.moveaxis(part, -1, 1)
    cut = tuple(slice(b, full.shape[2 + i] - a) for i, (b, a) in enumerate(zip(before, after)))
    return full[(slice(None), slice(None)) + cut].astype(a_np.dtype)


def dilate_python(input_np, strides, dilation_value=0.0, out_dtype=None):
    """``input_np`` with ``strides[k] - 1`` copies of ``dilation_value`` between
    neighbours along every axis ``k`` (TVM's ``topi.testing.dilate_python``; a filter
    dilated this way convolves as the filter with ``dilation=strides``)."""
    if len(strides) != input_np.ndim:
        raise ValueError(f"strides {strides!r} need one entry per axis of an array of shape {input_np.shape}")
    shape = tuple((n - 1) * s + 1 for n, s in zip(input_np.shape, strides))
    out = np.full(shape, dilation_value, dtype=out_dtype or input_np.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = input_np
    return out
