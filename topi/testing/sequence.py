"""Numpy references of trilu, reverse_sequence, sequence_mask (TVM's name) and
meshgrid."""
from __future__ import annotations

import numpy as np


def trilu_python(data, k, upper):
    """numpy's ``triu`` (``upper``) or ``tril`` over the last two axes."""
    return np.triu(data, int(k)) if upper else np.tril(data, int(k))


def reverse_sequence_python(a, seq_lengths, seq_axis=1, batch_axis=0):
    """The first ``seq_lengths[b]`` elements (clamped to ``[1, n]``) of each batch
    slice reversed along ``seq_axis``."""
    a = np.asarray(a)
    out = a.copy()
    n = a.shape[seq_axis]
    for b, length in enumerate(np.asarray(seq_lengths).reshape(-1)):
        length = int(min(max(length, 1), n))
        src = [slice(None)] * a.ndim
        src[batch_axis] = b
        src[seq_axis] = slice(0, length)
        dst = list(src)
        rev = a[tuple(src)]
        # seq_axis shifts down by one once the batch axis is indexed away
        sa = seq_axis - (1 if batch_axis < seq_axis else 0)
        out[tuple(dst)] = np.flip(rev, axis=sa)
    return out


def sequence_mask(data, valid_length, mask_value, axis):
    """TVM's ``topi.testing.sequence_mask``: elements at or past each batch's
    length along ``axis`` (0 or 1) set to ``mask_value``."""
    data = np.asarray(data)
    max_length = data.shape[axis]
    batch = data.shape[1 - axis]
    shape = [1] * data.ndim
    shape[axis], shape[1 - axis] = max_length, batch
    steps = np.arange(max_length).reshape([max_length if k == axis else 1 for k in range(data.ndim)])
    lengths = np.asarray(valid_length).reshape([batch if k == 1 - axis else 1 for k in range(data.ndim)])
    return np.where(steps < lengths, data, np.asarray(mask_value, data.dtype)).astype(data.dtype)


def meshgrid_python(a_tuple, indexing):
    """numpy's ``meshgrid`` (rank-0 inputs as one element)."""
    return np.meshgrid(*[np.asarray(a).reshape(-1) for a in a_tuple], indexing=indexing)
