"""Numpy references of sort, argsort, topk (stable; NaN largest) and of the scans
(cumsum, cumprod)."""
from __future__ import annotations

import numpy as np


def _dense_rank(x):
    """Ranks of a 1-D array in which equal values share one rank and NaNs rank
    above every number."""
    if x.dtype.kind == "f":
        _, inv = np.unique(x, return_inverse=True, equal_nan=True)
    else:
        _, inv = np.unique(x, return_inverse=True)
    return inv.reshape(-1)


def _descending(data, axis):
    """The stable descending permutation along ``axis`` (NaN first)."""
    moved = np.moveaxis(data, axis, -1)
    out = np.empty(moved.shape, dtype=np.int64)
    for idx in np.ndindex(*moved.shape[:-1]):
        out[idx] = np.argsort(-_dense_rank(moved[idx]), kind="stable")
    return np.moveaxis(out, -1, axis)


def argsort_python(data, axis=-1, is_ascend=True, dtype="float32", valid_count=None):
    """The positions sorting ``data`` along ``axis`` (stable, NaN largest); with
    ``valid_count`` only each row's first ``valid_count`` elements are sorted and
    the rest of the positions are given in order (int32 then, as TVM)."""
    data = np.asarray(data)
    axis = axis % data.ndim
    if valid_count is None:
        if is_ascend:
            return np.argsort(data, axis=axis, kind="stable").astype(dtype)
        return _descending(data, axis).astype(dtype)
    moved = np.moveaxis(data, axis, -1)
    counts = np.asarray(valid_count).reshape(moved.shape[:-1])
    out = np.tile(np.arange(moved.shape[-1]), moved.shape[:-1] + (1,))
    for idx in np.ndindex(*moved.shape[:-1]):
        c = int(min(max(counts[idx], 0), moved.shape[-1]))
        out[idx][:c] = argsort_python(moved[idx][:c], 0, is_ascend, "int64")
    return np.moveaxis(out, -1, axis).astype("int32")


def sort_python(data, axis=-1, is_ascend=True):
    """``data`` sorted along ``axis`` (NaN largest)."""
    data = np.asarray(data)
    order = argsort_python(data, axis, is_ascend, "int64")
    return np.take_along_axis(data, order, axis=axis)


def topk_python(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int64"):
    """The first ``k`` of the stable sort along ``axis`` (``k < 1``: all):
    ``[values, indices]``, or one of them per ``ret_type``."""
    data = np.asarray(data)
    axis = axis % data.ndim
    n = data.shape[axis]
    k = n if k < 1 else k
    order = np.take(argsort_python(data, axis, is_ascend, "int64"), np.arange(k), axis=axis)
    values = np.take_along_axis(data, order, axis=axis)
    indices = order.astype(dtype)
    return {"both": [values, indices], "values": values, "indices": indices}[ret_type]


def _scan(np_fn, identity, data, axis, dtype, exclusive):
    data = np.asarray(data)
    dtype = dtype or data.dtype
    if axis is None:
        data, axis = data.reshape(-1), 0
    out = np_fn(data.astype(np.float64) if np.dtype(dtype).kind == "f" else data.astype(dtype), axis=axis)
    if exclusive:
        shifted = np.full_like(out, identity)
        src = [slice(None)] * out.ndim
        dst = [slice(None)] * out.ndim
        src[axis], dst[axis] = slice(0, -1), slice(1, None)
        shifted[tuple(dst)] = out[tuple(src)]
        out = shifted
    return out.astype(dtype)


def cumsum_python(data, axis=None, dtype=None, exclusive=False):
    """numpy's ``cumsum`` (float64 accumulation for float dtypes); ``exclusive``
    shifts it by one (the first element 0)."""
    return _scan(np.cumsum, 0, data, axis, dtype, exclusive)


def cumprod_python(data, axis=None, dtype=None, exclusive=False):
    """numpy's ``cumprod``; ``exclusive`` shifts it by one (the first element 1)."""
    return _scan(np.cumprod, 1, data, axis, dtype, exclusive)
