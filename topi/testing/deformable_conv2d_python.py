"""Numpy reference of ``topi.nn.deformable_conv2d_nchw`` (TVM's
``topi.testing.deformable_conv2d_nchw_python``), written from the definition: every
tap's sampling point is computed in the offsets' dtype (as the TE compute does, so
that a point on the image's edge falls on the same side of it), the bilinear
interpolation and the sums in float64."""
from __future__ import annotations

import numpy as np

from ..nn.utils import get_pad_tuple


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def _bilinear(image, ys, xs, partial_edges):
    """``image`` (``[C, H, W]``) sampled at the points ``(ys, xs)`` (each ``[P]``):
    ``[C, P]``; the pixels outside the image read 0, and every tap of a point outside
    ``[0, H) x [0, W)`` (``(-1, H) x (-1, W)`` with ``partial_edges``) too."""
    _, height, width = image.shape
    low = -1.0 if partial_edges else 0.0
    if partial_edges:
        inside = (ys > low) & (ys < height) & (xs > low) & (xs < width)
    else:
        inside = (ys >= low) & (ys < height) & (xs >= low) & (xs < width)
    y0, x0 = np.floor(ys), np.floor(xs)
    dy, dx = ys - y0, xs - x0
    out = np.zeros((image.shape[0], len(ys)))
    for yy, wy in ((y0, 1.0 - dy), (y0 + 1, dy)):
        for xx, wx in ((x0, 1.0 - dx), (x0 + 1, dx)):
            ok = inside & (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
            rows, cols = yy[ok].astype(np.int64), xx[ok].astype(np.int64)
            out[:, ok] += image[:, rows, cols] * (wy * wx)[ok]
    return out


def deformable_conv2d_nchw_python(a_np, offset_np, w_np, stride, padding, dilation, deformable_groups, groups,
                                  mask=None, partial_edges=False):
    """Deformable 2-D convolution in NCHW.

    Parameters
    ----------
    a_np : numpy.ndarray
        ``[batch, in_channel, in_height, in_width]``.
    offset_np : numpy.ndarray
        ``[batch, deformable_groups * filter_height * filter_width * 2, out_height,
        out_width]``: (y, x) of each tap, per deformable group.
    w_np : numpy.ndarray
        ``[num_filter, in_channel // groups, filter_height, filter_width]``.
    stride, dilation : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
        Only the top and left pads move the taps.
    deformable_groups, groups : int
    mask : numpy.ndarray, optional
        ``[batch, deformable_groups * filter_height * filter_width, out_height,
        out_width]``: each sample's factor (DCNv2).
    partial_edges : bool
        A point less than a pixel outside the image reads the edge pixels it
        overlaps (ONNX, torchvision) rather than 0 (TVM).

    Returns
    -------
    numpy.ndarray
        ``[batch, num_filter, out_height, out_width]``, of ``a_np``'s dtype.
    """
    batch, in_channel, _, _ = a_np.shape
    num_filter, per_group_in, kernel_h, kernel_w = w_np.shape
    out_h, out_w = offset_np.shape[2:]
    stride_h, stride_w = _pair(stride)
    dilation_h, dilation_w = _pair(dilation)
    pad_top, pad_left, _, _ = get_pad_tuple(padding, ((kernel_h - 1) * dilation_h + 1,
                                                      (kernel_w - 1) * dilation_w + 1))
    fd = np.float64 if np.float64 in (a_np.dtype, offset_np.dtype) else np.float32
    per_dgroup = in_channel // deformable_groups
    offsets = offset_np.reshape(batch, deformable_groups, kernel_h, kernel_w, 2, out_h, out_w)
    scales = None if mask is None else np.asarray(mask, np.float64).reshape(
        batch, deformable_groups, kernel_h, kernel_w, out_h, out_w)
    rows = np.arange(out_h)[:, None] * stride_h - pad_top
    cols = np.arange(out_w)[None, :] * stride_w - pad_left
    samples = np.zeros((batch, in_channel, kernel_h, kernel_w, out_h, out_w))
    for n in range(batch):
        for g in range(deformable_groups):
            image = a_np[n, g * per_dgroup:(g + 1) * per_dgroup].astype(np.float64)
            for i in range(kernel_h):
                for j in range(kernel_w):
                    ys = (rows + i * dilation_h).astype(fd) + offsets[n, g, i, j, 0].astype(fd)
                    xs = (cols + j * dilation_w).astype(fd) + offsets[n, g, i, j, 1].astype(fd)
                    values = _bilinear(image, ys.astype(np.float64).reshape(-1), xs.astype(np.float64).reshape(-1),
                                       partial_edges).reshape(per_dgroup, out_h, out_w)
                    if scales is not None:
                        values = values * scales[n, g, i, j]
                    samples[n, g * per_dgroup:(g + 1) * per_dgroup, i, j] = values
    # the TE compute keeps the samples in the data's dtype
    samples = samples.astype(a_np.dtype).astype(np.float64)
    out = np.zeros((batch, num_filter, out_h, out_w))
    per_group_out = num_filter // groups
    for g in range(groups):
        chunk = samples[:, g * per_group_in:(g + 1) * per_group_in]
        filters = w_np[g * per_group_out:(g + 1) * per_group_out].astype(np.float64)
        out[:, g * per_group_out:(g + 1) * per_group_out] = np.einsum("ncijyx,fcij->nfyx", chunk, filters)
    return out.astype(a_np.dtype)
