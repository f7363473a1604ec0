"""Numpy references of the image resizes (TVM's ``topi.testing.resize1d_python`` /
``resize2d_python``) and of ``topi.nn.upsampling``.

Written independently of the TE computes: every resized axis gets an
interpolation matrix ``M`` (``[out, in]``: the weight of each input pixel in each
output pixel), built in float64 -- and, for nearest neighbour, from exact
fractions -- and the image is multiplied by the matrices of its axes one after the
other (every method is separable).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_EPSILON = 1e-5


def _coordinate(x, size_in, size_out, mode, start, end, exact):
    """The input coordinate of output index ``x`` (a Fraction when ``exact``)."""
    num = Fraction if exact else float
    i, o = num(size_in), num(size_out)
    if mode == "half_pixel":
        return (x + num(1) / 2) * i / o - num(1) / 2
    if mode == "pytorch_half_pixel":
        return (x + num(1) / 2) * i / o - num(1) / 2 if size_out > 1 else num(0)
    if mode == "tf_half_pixel_for_nn":
        return (x + num(1) / 2) * i / o
    if mode == "asymmetric":
        return x * i / o
    if mode == "align_corners":
        return x * (i - 1) / (o - 1) if size_out > 1 else num(0)
    if mode == "tf_crop_and_resize":
        if size_out > 1:
            return start * (size_in - 1) + x * (end - start) * (size_in - 1) / (size_out - 1)
        return 0.5 * (start + end) * (size_in - 1)
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def _round(q, rounding, exact):
    if rounding == "round":
        return int(math.copysign(math.floor(abs(q) + Fraction(1, 2) if exact else abs(q) + 0.5), q))
    if rounding == "round_prefer_floor":
        return math.ceil(q - (Fraction(1, 2) if exact else 0.5))
    if rounding == "round_prefer_ceil":
        return math.floor(q + (Fraction(1, 2) if exact else 0.5))
    if rounding == "floor":
        return math.floor(q) if exact else math.floor(q + _EPSILON)
    if rounding == "ceil":
        return math.ceil(q) if exact else math.ceil(q - _EPSILON)
    raise ValueError(f"unknown rounding_method {rounding!r}")


def _cubic(t, alpha):
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 from the floor."""
    def kernel(d):
        d = abs(d)
        if d <= 1:
            return (alpha + 2) * d ** 3 - (alpha + 3) * d ** 2 + 1
        if d < 2:
            return alpha * d ** 3 - 5 * alpha * d ** 2 + 8 * alpha * d - 4 * alpha
        return 0.0

    return [kernel(t + 1), kernel(t), kernel(1 - t), kernel(2 - t)]


def _axis_matrix(size_in, size_out, method, mode, rounding, start, end, alpha, exclude):
    """``(M, outside)``: the ``[size_out, size_in]`` interpolation matrix of one axis
    and, per output index, whether ``tf_crop_and_resize`` extrapolates there."""
    m = np.zeros((size_out, size_in))
    outside = np.zeros(size_out, bool)
    for x in range(size_out):
        exact = method == "nearest_neighbor" and mode != "tf_crop_and_resize"
        c = _coordinate(x, size_in, size_out, mode, start, end, exact)
        if mode == "tf_crop_and_resize":
            outside[x] = c < 0 or c > size_in - 1
        if method == "nearest_neighbor":
            m[x, min(max(_round(c, rounding, exact), 0), size_in - 1)] = 1.0
            continue
        base = math.floor(c)
        t = float(c) - base
        if method == "linear":
            taps, weights = [base, base + 1], [1.0 - t, t]
        else:
            taps = [base - 1, base, base + 1, base + 2]
            weights = _cubic(t, alpha)
            if exclude:
                weights = [w if 0 <= j < size_in else 0.0 for j, w in zip(taps, weights)]
                total = sum(weights)
                weights = [w / total for w in weights]
        for j, w in zip(taps, weights):
            m[x, min(max(j, 0), size_in - 1)] += w
    return m, outside


def _resize_nc(data, sizes, method, mode, rounding, roi, alpha, exclude, extrapolation_value):
    """Resize the trailing ``len(sizes)`` axes of ``data`` (channels-first)."""
    k = len(sizes)
    method = method.lower()
    if method not in ("nearest_neighbor", "linear", "cubic"):
        raise ValueError(f"unknown method {method!r}")
    if not rounding:
        rounding = "round" if mode == "align_corners" else "floor"
    roi = list(roi) if roi is not None else [0.0] * (2 * k)
    out = data.astype(np.float64)
    mask = np.zeros(sizes, bool)
    for a in range(k):
        axis = data.ndim - k + a
        m, outside = _axis_matrix(data.shape[axis], sizes[a], method, mode, rounding, float(roi[a]),
                                  float(roi[a + k]), alpha, exclude)
        out = np.moveaxis(np.tensordot(out, m, axes=([axis], [1])), -1, axis)
        shape = [1] * k
        shape[a] = sizes[a]
        mask = mask | outside.reshape(shape)
    if mode == "tf_crop_and_resize":
        out = np.where(mask, extrapolation_value, out)
    return out


def _channels_first(data, layout):
    """``(data moved to channels-first, the inverse)``."""
    if layout in ("NCW", "NCHW", "NCDHW"):
        return data, lambda x: x
    if layout in ("NWC", "NHWC", "NDHWC"):
        order = [0, data.ndim - 1] + list(range(1, data.ndim - 1))
        back = [0] + list(range(2, data.ndim)) + [1]
        return data.transpose(order), lambda x: x.transpose(back)
    raise ValueError(f"unsupported layout {layout!r}")


def _sizes(shape, scale, size, k):
    if size is not None:
        return [int(s) for s in size]
    if not isinstance(scale, (list, tuple)):
        scale = (scale,) * k
    return [int(round(n * s)) for n, s in zip(shape, scale)]


def _cast(out, dtype):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.trunc(out), info.min, info.max).astype(dtype)
    return out.astype(dtype)


def resize2d_python(data, scale, layout="NCHW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners", rounding_method="", size=None, roi=None,
                    bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None):
    """Resize the height and width of ``data`` (numpy reference of
    :func:`tecc.topi.image.resize2d`).

    Parameters
    ----------
    data : numpy.ndarray
        ``[batch, channel, height, width]`` (``"NCHW"``) or ``[batch, height,
        width, channel]`` (``"NHWC"``).
    scale : float or (float, float)
        The output size is ``round(in * scale)`` per axis (TVM's form); ignored
        when ``size`` is given.
    layout, method, coordinate_transformation_mode, rounding_method : str
        As the compute's; ``rounding_method=""`` picks the mode's default.
    size : (int, int), optional
        ``(out_height, out_width)``.
    roi : list of 4 floats, optional
        ``[start_h, start_w, end_h, end_w]`` for ``tf_crop_and_resize``.
    bicubic_alpha, bicubic_exclude, extrapolation_value
        As the compute's.
    out_dtype : str, optional
        The data's dtype by default (integers truncated, as the compute's cast).

    Returns
    -------
    numpy.ndarray
    """
    nc, back = _channels_first(np.asarray(data), layout)
    sizes = _sizes(nc.shape[2:], scale, size, 2)
    out = _resize_nc(nc, sizes, method, coordinate_transformation_mode, rounding_method, roi, bicubic_alpha,
                     bicubic_exclude, extrapolation_value)
    return back(_cast(out, out_dtype or data.dtype))


def resize1d_python(data, scale, layout="NCW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners", rounding_method="", size=None, roi=None,
                    bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None):
    """Resize the width of NCW or NWC ``data`` (numpy reference of
    :func:`tecc.topi.image.resize1d`); the arguments as :func:`resize2d_python`'s,
    ``scale`` a float or ``(float,)``, ``size`` ``(out_width,)``, ``roi``
    ``[start_w, end_w]``."""
    nc, back = _channels_first(np.asarray(data), layout)
    sizes = _sizes(nc.shape[2:], scale, size, 1)
    out = _resize_nc(nc, sizes, method, coordinate_transformation_mode, rounding_method, roi, bicubic_alpha,
                     bicubic_exclude, extrapolation_value)
    return back(_cast(out, out_dtype or data.dtype))


def resize3d_python(data, scale, layout="NCDHW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners", rounding_method="", size=None, roi=None,
                    bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None):
    """Resize the depth, height and width of NCDHW or NDHWC ``data`` (numpy reference
    of :func:`tecc.topi.image.resize3d`); the arguments as :func:`resize2d_python`'s,
    ``scale`` a float or 3 floats, ``size`` ``(out_depth, out_height, out_width)``,
    ``roi`` the three starts then the three ends."""
    nc, back = _channels_first(np.asarray(data), layout)
    sizes = _sizes(nc.shape[2:], scale, size, 3)
    out = _resize_nc(nc, sizes, method, coordinate_transformation_mode, rounding_method, roi, bicubic_alpha,
                     bicubic_exclude, extrapolation_value)
    return back(_cast(out, out_dtype or data.dtype))


def upsampling_python(data, scale, layout="NCHW", method="nearest_neighbor", align_corners=False):
    """Numpy reference of :func:`tecc.topi.nn.upsampling`: ``data`` resized to
    ``round(in * scale)`` per axis, ``align_corners`` or ``asymmetric`` coordinates.

    Parameters
    ----------
    data : numpy.ndarray
        NCHW or NHWC.
    scale : (float, float)
        ``(scale_h, scale_w)``.
    method : str
        ``"nearest_neighbor"``, ``"bilinear"`` (or ``"linear"``), ``"bicubic"`` (or
        ``"cubic"``).
    align_corners : bool
    """
    method = method[2:] if method.startswith("bi") else method
    mode = "align_corners" if align_corners else "asymmetric"
    return resize2d_python(data, scale, layout, method, mode)
