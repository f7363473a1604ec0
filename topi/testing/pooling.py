"""Numpy reference of adaptive pooling (TVM's ``topi.testing.adaptive_pool``)."""
from __future__ import annotations

import numpy as np


def adaptive_pool(np_data, out_size, pool_type, layout):
    """Adaptive max or average pooling of ``np_data`` over its ``D``/``H``/``W``
    axes (those of ``layout`` present) to ``out_size``: output ``o`` of an axis of
    size ``n`` pools the input elements ``floor(o * n / out)`` up to
    ``ceil((o + 1) * n / out)`` (exclusive)."""
    out_size = (out_size,) if isinstance(out_size, int) else tuple(out_size)
    axes = [layout.index(a) for a in "DHW" if a in layout]
    if len(axes) != len(out_size):
        raise ValueError(f"adaptive_pool: layout {layout!r} and output size {out_size} do not match")
    shape = list(np_data.shape)
    for ax, o in zip(axes, out_size):
        shape[ax] = o
    out = np.zeros(shape, np.float64)
    reduce = np.max if pool_type == "max" else np.mean
    for pos in np.ndindex(*out_size):
        index = [slice(None)] * np_data.ndim
        for ax, o, n_out in zip(axes, pos, out_size):
            n = np_data.shape[ax]
            index[ax] = slice(o * n // n_out, -(-(o + 1) * n // n_out))
        window = np_data[tuple(index)].astype(np.float64)
        target = [slice(None)] * np_data.ndim
        for ax, o in zip(axes, pos):
            target[ax] = o
        out[tuple(target)] = reduce(window, axis=tuple(axes))
    if np.dtype(np_data.dtype).kind in "iu" and pool_type == "avg":
        return np.trunc(out).astype(np_data.dtype)
    return out.astype(np_data.dtype)
