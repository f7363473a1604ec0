"""Numpy references of the operators of :mod:`tecc.topi.nn` (float64 accumulation),
the oracles of the tests and of tuning."""
from __future__ import annotations

import numpy as np


def matmul_python(a, b, transpose_b=False):
    b = b.T if transpose_b else b
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype)


def batch_matmul_python(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def conv2d_nchw_python(data, kernel, stride=1, padding=0, dilation=1):
    """Direct convolution of NCHW ``data`` with an OIHW ``kernel``."""
    N, _, H, W = data.shape
    CO, _, KH, KW = kernel.shape
    OH = (H + 2 * padding - dilation * (KH - 1) - 1) // stride + 1
    OW = (W + 2 * padding - dilation * (KW - 1) - 1) // stride + 1
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    out = np.zeros((N, CO, OH, OW), np.float64)
    for kh in range(KH):
        for kw in range(KW):
            patch = padded[:, :, kh * dilation: kh * dilation + stride * (OH - 1) + 1: stride,
                           kw * dilation: kw * dilation + stride * (OW - 1) + 1: stride]
            out += np.einsum("nchw,oc->nohw", patch, kernel[:, :, kh, kw].astype(np.float64))
    return out.astype(data.dtype)


def softmax_python(x):
    """Softmax over the last axis."""
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def layer_norm_python(x, gamma, beta, epsilon=1e-5):
    """Layer normalization over the last axis."""
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = x64.var(axis=-1, keepdims=True)
    return ((x64 - mean) / np.sqrt(var + epsilon) * gamma + beta).astype(x.dtype)


def bias_relu_python(x, bias):
    return np.maximum(x + bias, 0).astype(x.dtype)


def scale_bias_relu_add_python(x, scale, bias, residual):
    shape = [1] * x.ndim
    shape[1] = -1
    return (np.maximum(x * scale.reshape(shape) + bias.reshape(shape), 0) + residual).astype(x.dtype)
