"""Numpy references of the matrix products (TVM's ``topi.testing.dense`` and
``topi.testing.batch_matmul``, and tecc's ``matmul_broadcast_python``).

Floating-point products accumulate in float64, integer ones in int64; the result is
cast to ``out_dtype`` (the first operand's dtype by default).
"""
from __future__ import annotations

import numpy as np


def _wide(x):
    return x.astype(np.int64) if np.dtype(x.dtype).kind in "iu" else x.astype(np.float64)


def dense(x, y, bias, use_bias=False, use_relu=False, out_dtype=None):
    """``x @ y.T`` (``x`` ``[M, K]``, ``y`` ``[N, K]``), plus ``bias`` (``[N]``)
    with ``use_bias``, through a ReLU with ``use_relu``."""
    dtype = x.dtype if out_dtype is None else out_dtype
    out = _wide(x) @ _wide(y).T
    if use_bias:
        out = out + _wide(bias)
    if use_relu:
        out = np.maximum(out, 0)
    return out.astype(dtype)


def batch_matmul(x, y, out_dtype=None, trans_x=False, trans_y=True):
    """``x[b] @ y[b].T`` over the batch (TVM's default: ``y`` is ``[batch, N, K]``);
    ``trans_x``/``trans_y`` say which operands are stored transposed, and a batch of
    1 broadcasts against the other."""
    dtype = x.dtype if out_dtype is None else out_dtype
    xx = _wide(x).transpose(0, 2, 1) if trans_x else _wide(x)
    yy = _wide(y).transpose(0, 2, 1) if trans_y else _wide(y)
    return np.matmul(xx, yy).astype(dtype)


def matmul_broadcast_python(a, b, out_dtype=None):
    """``numpy.matmul(a, b)`` (1-D operands, batch dimensions broadcast) in a wide
    dtype, cast to ``out_dtype``."""
    dtype = a.dtype if out_dtype is None else out_dtype
    return np.asarray(np.matmul(_wide(a), _wide(b))).astype(dtype)
