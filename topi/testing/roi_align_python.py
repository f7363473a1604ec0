"""Numpy reference of ``topi.vision.roi_align_nchw`` (TVM's
``topi.testing.roi_align_nchw_python``), written point by point from the
definition in :mod:`tecc.topi.vision.roi_align`: the coordinates in float32
(float64 for float64 data or ROIs) in the order the TE compute uses, the pixels
weighted in that precision, the sums of a bin in float64.  As the compute, an
adaptive grid has at most ``ceil((H + 1) / pooled_h)`` x ``ceil((W + 1) /
pooled_w)`` points (the largest grid of a region inside the sampling range)."""
from __future__ import annotations

import math

import numpy as np

#: TVM's other spellings of the modes
_MODES = {b"avg": "avg", 0: "avg", b"max": "max", 1: "max", b"onnx_max": "onnx_max"}


def _point(image, y, x, mode, fd):
    """The values of the point (y, x) of ``image`` [C, H, W] over the channels: the
    bilinear value, or for ``onnx_max`` the largest weighted pixel term."""
    _, height, width = image.shape
    if y < -1 or y > height or x < -1 or x > width:
        return np.zeros(image.shape[0], fd)
    y = min(max(y, fd(0)), fd(height - 1))
    x = min(max(x, fd(0)), fd(width - 1))
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
    ly, lx = y - fd(y0), x - fd(x0)
    hy, hx = fd(1) - ly, fd(1) - lx
    terms = [hy * hx * image[:, y0, x0], hy * lx * image[:, y0, x1], ly * hx * image[:, y1, x0],
             ly * lx * image[:, y1, x1]]
    if mode == "onnx_max":
        return np.maximum(np.maximum(terms[0], terms[1]), np.maximum(terms[2], terms[3]))
    return terms[0] + terms[1] + terms[2] + terms[3]


def roi_align_nchw_python(a_np, rois_np, pooled_size, spatial_scale, sample_ratio, mode="avg", aligned=False):
    """ROI Align of the NCHW feature map ``a_np`` over the regions ``rois_np``.

    Parameters
    ----------
    a_np : numpy.ndarray
        ``[batch, channel, height, width]``.
    rois_np : numpy.ndarray
        ``[num_roi, 5]``: ``batch_index, x1, y1, x2, y2`` of each region.
    pooled_size : int or (int, int)
    spatial_scale : float
    sample_ratio : int
        Points per bin and axis; ``<= 0``: adaptive.
    mode : str
        ``"avg"``, ``"max"`` or ``"onnx_max"`` (TVM's ``b"avg"`` or 0, ``b"max"`` or 1
        too).
    aligned : bool
        The regions shifted by -0.5 pixel, sub-pixel sizes kept.

    Returns
    -------
    numpy.ndarray
        ``[num_roi, channel, pooled_h, pooled_w]`` of ``a_np``'s dtype.
    """
    mode = mode if isinstance(mode, str) else _MODES[mode]
    fd = np.float64 if np.float64 in (a_np.dtype, rois_np.dtype) else np.float32
    _, channels, height, width = a_np.shape
    pooled_h, pooled_w = (pooled_size, pooled_size) if isinstance(pooled_size, int) else pooled_size
    bound_h, bound_w = math.ceil((height + 1) / pooled_h), math.ceil((width + 1) / pooled_w)
    offset = fd(0.5 if aligned else 0.0)
    out = np.zeros((len(rois_np), channels, pooled_h, pooled_w))
    for i, roi in enumerate(np.asarray(rois_np)):
        image = a_np[int(roi[0])].astype(fd)
        x1, y1, x2, y2 = (fd(v) * fd(spatial_scale) - offset for v in roi[1:])
        roi_w, roi_h = x2 - x1, y2 - y1
        if not aligned:
            roi_w, roi_h = max(roi_w, fd(1)), max(roi_h, fd(1))
        bin_h, bin_w = roi_h / fd(pooled_h), roi_w / fd(pooled_w)
        if sample_ratio > 0:
            grid_h = grid_w = int(sample_ratio)
        else:
            grid_h = int(min(max(np.ceil(roi_h / fd(pooled_h)), 0), bound_h))
            grid_w = int(min(max(np.ceil(roi_w / fd(pooled_w)), 0), bound_w))
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                values = []
                for iy in range(grid_h):
                    y = y1 + fd(ph) * bin_h + (fd(iy) + fd(0.5)) * bin_h / fd(max(grid_h, 1))
                    for ix in range(grid_w):
                        x = x1 + fd(pw) * bin_w + (fd(ix) + fd(0.5)) * bin_w / fd(max(grid_w, 1))
                        values.append(_point(image, y, x, mode, fd).astype(np.float64))
                if not values:
                    continue  # a bin without points is 0
                if mode == "avg":
                    out[i, :, ph, pw] = np.sum(values, axis=0) / max(grid_h * grid_w, 1)
                else:
                    out[i, :, ph, pw] = np.max(values, axis=0)
    return out.astype(a_np.dtype)
