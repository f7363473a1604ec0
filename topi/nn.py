"""Tensor-expression computes of neural-network operators (what, not how).

Every function takes tensors and returns the output tensor; intermediate stages
carry a ``tag`` so that a schedule finds them from the output
(``out.op.input_tensors``).  Schedules live beside, per target: :mod:`.cuda`,
:mod:`.x86`.  Numpy references: :mod:`.testing`.
"""
from __future__ import annotations

from .. import te
from ..tir import op as _op


def matmul(A, B, transpose_b=False, name="C"):
    """``C[i, j] = sum_k A[i, k] * B[k, j]`` (``B[j, k]`` with ``transpose_b``)."""
    K = A.shape[1]
    k = te.reduce_axis((0, K), name="k")
    if transpose_b:
        return te.compute((A.shape[0], B.shape[0]), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k),
                          name=name, tag="matmul")
    return te.compute((A.shape[0], B.shape[1]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k),
                      name=name, tag="matmul")


def batch_matmul(A, B, name="C"):
    """``C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]``."""
    k = te.reduce_axis((0, A.shape[2]), name="k")
    return te.compute((A.shape[0], A.shape[1], B.shape[2]),
                      lambda b, i, j: te.sum(A[b, i, k] * B[b, k, j], axis=k), name=name, tag="batch_matmul")


def pad_nchw(data, pad, name="Pad"):
    """``data`` (NCHW) with ``pad`` zeros on each side of H and W."""
    N, C, H, W = data.shape
    return te.compute((N, C, H + 2 * pad, W + 2 * pad), lambda n, c, y, x: _op.if_then_else(
        _op.all(y >= pad, y < H + pad, x >= pad, x < W + pad), data[n, c, y - pad, x - pad],
        _op.const(0, data.dtype)), name=name, tag="injective,pad")


def conv2d_nchw(data, kernel, stride=1, padding=0, name="Out"):
    """Direct 2-D convolution, NCHW data and OIHW kernel (the padded input is the
    stage ``Pad``, tagged ``pad``)."""
    N, _, H, W = data.shape
    CO, CI, KH, KW = kernel.shape
    OH = (H + 2 * padding - KH) // stride + 1
    OW = (W + 2 * padding - KW) // stride + 1
    padded = pad_nchw(data, padding)
    rc = te.reduce_axis((0, CI), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    return te.compute((N, CO, OH, OW), lambda n, f, y, x: te.sum(
        padded[n, rc, y * stride + ry, x * stride + rx] * kernel[f, rc, ry, rx], axis=[rc, ry, rx]),
        name=name, tag="conv2d_nchw")


def softmax(x, name="Out"):
    """Softmax over the last axis of a 2-D tensor: the row maximum ``Mx``, the
    exponentials ``Ex`` (tagged ``softmax_exp``) and their sum ``Sm``."""
    M, N = x.shape
    k1 = te.reduce_axis((0, N), name="k1")
    k2 = te.reduce_axis((0, N), name="k2")
    mx = te.compute((M,), lambda i: te.max(x[i, k1], axis=k1), name="Mx", tag="softmax_max")
    ex = te.compute((M, N), lambda i, j: te.exp(x[i, j] - mx[i]), name="Ex", tag="softmax_exp")
    sm = te.compute((M,), lambda i: te.sum(ex[i, k2], axis=k2), name="Sm", tag="softmax_sum")
    return te.compute((M, N), lambda i, j: ex[i, j] / sm[i], name=name, tag="softmax_output")


def layer_norm(x, gamma, beta, epsilon=1e-5, name="Out"):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last axis of a 2-D
    tensor, from the row sums ``Sum`` and ``SqSum``."""
    M, N = x.shape
    k1 = te.reduce_axis((0, N), name="k1")
    k2 = te.reduce_axis((0, N), name="k2")
    total = te.compute((M,), lambda i: te.sum(x[i, k1], axis=k1), name="Sum", tag="layer_norm_sum")
    squares = te.compute((M,), lambda i: te.sum(x[i, k2] * x[i, k2], axis=k2), name="SqSum",
                         tag="layer_norm_sum")
    inv_n = 1.0 / N

    def norm(i, j):
        mean = total[i] * inv_n
        var = squares[i] * inv_n - mean * mean
        return (x[i, j] - mean) * te.rsqrt(var + epsilon) * gamma[j] + beta[j]

    return te.compute((M, N), norm, name=name, tag="layer_norm")


def bias_relu(x, bias, name="D"):
    """``max(x[i, j] + bias[j], 0)`` (a matmul's epilogue)."""
    return te.compute(x.shape, lambda i, j: te.max(x[i, j] + bias[j], _op.const(0, x.dtype)), name=name,
                      tag="injective")


def scale_bias_relu_add(x, scale, bias, residual, name="Out"):
    """``relu(x * scale[c] + bias[c]) + residual`` with per-channel (axis 1) ``scale``
    and ``bias``: the stages ``T1`` and ``T2`` are meant to be inlined."""
    t1 = te.compute(x.shape, lambda *i: x(*i) * scale[i[1]] + bias[i[1]], name="T1", tag="injective")
    t2 = te.compute(x.shape, lambda *i: te.max(t1(*i), _op.const(0, x.dtype)), name="T2", tag="injective")
    return te.compute(x.shape, lambda *i: t2(*i) + residual(*i), name=name, tag="injective")
