"""Numpy references of ``topi.image.grid_sample`` and ``topi.image.affine_grid``
(TVM's ``topi.testing.grid_sample_python`` and ``affine_grid_python``).

Written from the definition, point by point in float64, independently of the TE
compute: the normalized coordinate is mapped to a pixel coordinate; for nearest and
bilinear sampling, where it lies outside the image's extent the padding mode moves
it (``border``: clamped to the pixels, ``reflection``: reflected back into the
extent); then the method reads the pixels around it, each read padded on its own
(``zeros``: 0 outside the image, ``border``: the index clamped, ``reflection``: the
index reflected) -- the way PyTorch and onnxruntime define ``GridSample`` (bicubic
pads the taps only).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .resize_python import _cubic  # Keys' kernel, the same as the resizes'

_LAYOUTS = {"NCHW": 2, "NCDHW": 3}
#: the cubic convolution coefficient of ONNX's and PyTorch's bicubic sampling
_BICUBIC_ALPHA = -0.75


def _extent(size, align_corners):
    """The image's extent along an axis: pixel centres or pixel edges."""
    return (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)


def _reflect(v, lo, hi):
    """``v`` reflected at ``lo`` and ``hi`` until it lies between them."""
    span = hi - lo
    if span <= 0:
        return lo
    if v < lo:
        flips, rest = divmod(lo - v, span)
        return lo + rest if flips % 2 == 0 else hi - rest
    if v > hi:
        flips, rest = divmod(v - hi, span)
        return hi - rest if flips % 2 == 0 else lo + rest
    return v


def _pad_coordinate(v, size, padding_mode, align_corners):
    lo, hi = _extent(size, align_corners)
    if lo <= v <= hi or padding_mode == "zeros":
        return v
    if padding_mode == "border":
        return min(max(v, 0.0), size - 1.0)
    return _reflect(v, lo, hi)


def _pixel(image, index, padding_mode, align_corners):
    """``image[:, *index]`` (every channel) with the index padded; None for a pixel
    outside the image under zeros padding."""
    where = []
    for i, size in zip(index, image.shape[1:]):
        if padding_mode == "zeros":
            if not 0 <= i < size:
                return None
        elif padding_mode == "border":
            i = min(max(i, 0), size - 1)
        else:
            i = int(_reflect(float(i), *_extent(size, align_corners)))
            i = min(max(i, 0), size - 1)
        where.append(i)
    return image[(slice(None),) + tuple(where)]


def affine_grid_python(data, target_shape, align_corners=True):
    """The grid of the affine matrices ``data`` (``[N, 2, 3]``, or ``[N, 3, 4]`` over a
    ``(D, H, W)`` target) over a ``target_shape`` ``(H, W)`` image: ``[N, 2, H, W]``,
    x then y (then z), each transform applied to the normalized pixel coordinates
    (-1 and 1 at the corner pixels' centres, 0 along an axis of one pixel; without
    ``align_corners``, at their outer edges), in float64."""
    def axis(n):
        if align_corners:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        return (2.0 * np.arange(n) + 1.0) / n - 1.0

    mesh = np.meshgrid(*[axis(n) for n in target_shape], indexing="ij")
    points = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)])  # [x, y(, z), 1]
    grid = np.asarray(data, np.float64) @ points  # [N, k, pixels]
    return grid.reshape(len(data), len(target_shape), *target_shape).astype(data.dtype)


def grid_sample_python(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros", align_corners=True):
    """Sample ``data`` at the points of ``grid``.

    Parameters
    ----------
    data : numpy.ndarray
        ``[N, C, H, W]`` or ``[N, C, D, H, W]``.
    grid : numpy.ndarray
        ``[N, 2, Ho, Wo]`` (x, y) or ``[N, 3, Do, Ho, Wo]`` (x, y, z), normalized.
    method, layout, padding_mode, align_corners
        As ``topi.image.grid_sample``'s.

    Returns
    -------
    numpy.ndarray
        ``[N, C, Ho, Wo]`` (``[N, C, Do, Ho, Wo]``) of ``data``'s dtype.
    """
    k = _LAYOUTS[layout]
    sizes = data.shape[2:]
    n_batch, channels = data.shape[:2]
    out_spatial = grid.shape[2:]
    out = np.zeros((n_batch, channels) + out_spatial, dtype="float64")
    for n in range(n_batch):
        image = data[n].astype("float64")
        for pos in itertools.product(*[range(s) for s in out_spatial]):
            coords = []
            for a, size in enumerate(sizes):
                g = float(grid[(n, k - 1 - a) + pos])  # the grid holds x first: the data's axes reversed
                v = (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2
                if method == "nearest":
                    v = float(np.rint(v))  # halves to even
                if method != "bicubic":
                    v = _pad_coordinate(v, size, padding_mode, align_corners)
                coords.append(v)
            if method == "nearest":
                taps = [[(int(v), 1.0)] for v in coords]
            elif method == "bilinear":
                taps = [[(math.floor(v), 1.0 - (v - math.floor(v))), (math.floor(v) + 1, v - math.floor(v))]
                        for v in coords]
            else:
                taps = [list(zip(range(math.floor(v) - 1, math.floor(v) + 3),
                                 _cubic(v - math.floor(v), _BICUBIC_ALPHA))) for v in coords]
            value = np.zeros(channels)
            for combo in itertools.product(*taps):
                weight = np.prod([w for _, w in combo])
                pixel = _pixel(image, [i for i, _ in combo], padding_mode, align_corners)
                if pixel is not None:
                    value += weight * pixel
            out[(n, slice(None)) + pos] = value
    return out.astype(data.dtype)
