"""Numpy reference of ``topi.image.crop_and_resize`` (TVM's
``topi.testing.crop_and_resize_python``), written from TensorFlow's definition box
by box: the coordinates are computed in float32 (float64 for float64 images or
boxes) in the order the TE compute uses, so that a point on an image's edge falls
on the same side of it; the pixels are interpolated in float64."""
from __future__ import annotations

import math

import numpy as np


def _coordinates(lo, hi, size, crop, fd):
    """The image coordinate of every output position along one axis."""
    last = fd(size - 1)
    if crop == 1:
        return [fd(0.5) * (lo + hi) * last]
    scale = last * (hi - lo) / fd(crop - 1)
    return [lo * last + scale * fd(p) for p in range(crop)]


def crop_and_resize_python(image, boxes, box_indices, crop_size, layout, method="bilinear", extrapolation_value=0):
    """Crop ``boxes`` (``[y1, x1, y2, x2]``, normalized) out of the images
    ``box_indices`` and resize each to ``crop_size``.

    Parameters
    ----------
    image : numpy.ndarray
        ``[N, H, W, C]`` (``layout="NHWC"``) or ``[N, C, H, W]`` (``"NCHW"``).
    boxes : numpy.ndarray
        ``[num_boxes, 4]``.
    box_indices : numpy.ndarray
        ``[num_boxes]``.
    crop_size : (int, int)
    layout : str
    method : str
        ``"bilinear"`` or ``"nearest_neighbor"`` (halves rounded up).
    extrapolation_value : float
        The value of output pixels whose point lies outside the image (None: 0).

    Returns
    -------
    numpy.ndarray
        ``[num_boxes, crop_h, crop_w, C]`` or ``[num_boxes, C, crop_h, crop_w]``, of
        ``image``'s dtype.
    """
    nhwc = image if layout == "NHWC" else image.transpose(0, 2, 3, 1)
    fd = np.float64 if np.float64 in (image.dtype, boxes.dtype) else np.float32
    extrapolation_value = 0.0 if extrapolation_value is None else extrapolation_value
    _, height, width, channels = nhwc.shape
    crop_h, crop_w = crop_size
    out = np.zeros((len(boxes), crop_h, crop_w, channels))
    for b, box in enumerate(np.asarray(boxes, fd)):
        picture = nhwc[int(box_indices[b])].astype(np.float64)
        rows = _coordinates(box[0], box[2], height, crop_h, fd)
        cols = _coordinates(box[1], box[3], width, crop_w, fd)
        for y, in_y in enumerate(rows):
            for x, in_x in enumerate(cols):
                if not (0 <= in_y <= height - 1 and 0 <= in_x <= width - 1):
                    out[b, y, x] = extrapolation_value
                elif method == "nearest_neighbor":
                    out[b, y, x] = picture[math.floor(in_y + fd(0.5)), math.floor(in_x + fd(0.5))]
                else:
                    top, left = math.floor(in_y), math.floor(in_x)
                    bottom, right = min(top + 1, height - 1), min(left + 1, width - 1)
                    ty, tx = float(in_y) - top, float(in_x) - left
                    upper = picture[top, left] + (picture[top, right] - picture[top, left]) * tx
                    lower = picture[bottom, left] + (picture[bottom, right] - picture[bottom, left]) * tx
                    out[b, y, x] = upper + (lower - upper) * ty
    out = out if layout == "NHWC" else out.transpose(0, 3, 1, 2)
    return out.astype(image.dtype)
