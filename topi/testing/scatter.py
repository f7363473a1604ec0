"""Numpy references of scatter_elements and scatter_nd: the updates applied one by
one in the row-major order of the indices (negative indices from the end, indices
still out of range dropped), as every target of topi does."""
from __future__ import annotations

import numpy as np

_COMBINE = {
    "update": lambda o, u: u,
    "add": lambda o, u: o + u,
    "mul": lambda o, u: o * u,
    "min": np.minimum,
    "max": np.maximum,
}


def _wrap(i, n):
    i = int(i)
    i = i + n if i < 0 else i
    return i if 0 <= i < n else None


def scatter_elements_python(data, indices, updates, axis=0, reduction="update"):
    """ONNX's ``ScatterElements`` (TVM's ``scatter_elements``)."""
    out = np.array(data, copy=True)
    axis = axis % out.ndim
    combine = _COMBINE[reduction]
    for pos in np.ndindex(*np.shape(indices)):
        i = _wrap(indices[pos], out.shape[axis])
        if i is None:
            continue
        dst = pos[:axis] + (i,) + pos[axis + 1:]
        out[dst] = combine(out[dst], updates[pos])
    return out


def scatter_nd_python(data, indices, updates, mode="update"):
    """TVM's ``scatter_nd`` (index tuples along the first axis of ``indices``)."""
    out = np.array(data, copy=True)
    indices = np.asarray(indices)
    m = indices.shape[0]
    combine = _COMBINE[mode]
    for y in np.ndindex(*indices.shape[1:]):
        idx = [_wrap(indices[(k,) + y], out.shape[k]) for k in range(m)]
        if any(i is None for i in idx):
            continue
        out[tuple(idx)] = combine(out[tuple(idx)], updates[y])
    return out
