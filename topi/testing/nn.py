"""Numpy references of the operators of :mod:`tecc.topi.nn` (float64 accumulation),
the oracles of the tests and of tuning."""
from __future__ import annotations

import numpy as np

from .conv import conv2d_nchw_python  # noqa: F401  (it lives with the other convolutions)


def matmul_python(a, b, transpose_b=False):
    b = b.T if transpose_b else b
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype)


def batch_matmul_python(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def softmax_python(a_np, axis=1):
    """Softmax of ``a_np`` along ``axis`` (1 by default, as TVM's reference)."""
    e = np.exp(a_np.astype(np.float64) - a_np.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(a_np.dtype)


def log_softmax_python(a_np, axis=1):
    """Log-softmax of ``a_np`` along ``axis`` (1 by default)."""
    x = a_np.astype(np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(a_np.dtype)


def layer_norm_python(data, gamma, beta, axis=-1, epsilon=1e-5):
    """Layer normalization over ``axis`` (an int or a tuple; the last axis by
    default), ``gamma`` and ``beta`` (None allowed) shaped like those axes."""
    x64 = data.astype(np.float64)
    axes = tuple(a % x64.ndim for a in ((axis,) if np.isscalar(axis) else axis))
    mean = x64.mean(axis=axes, keepdims=True)
    var = x64.var(axis=axes, keepdims=True)
    out = (x64 - mean) / np.sqrt(var + epsilon)
    shape = [x64.shape[d] if d in axes else 1 for d in range(x64.ndim)]
    if gamma is not None:
        out = out * np.asarray(gamma, np.float64).reshape(shape)
    if beta is not None:
        out = out + np.asarray(beta, np.float64).reshape(shape)
    return out.astype(data.dtype)


def bias_relu_python(x, bias):
    return np.maximum(x + bias, 0).astype(x.dtype)


def scale_bias_relu_add_python(x, scale, bias, residual):
    shape = [1] * x.ndim
    shape[1] = -1
    return (np.maximum(x * scale.reshape(shape) + bias.reshape(shape), 0) + residual).astype(x.dtype)


def nll_loss(predictions, targets, weights, reduction="mean", ignore_index=-100):
    """Numpy reference of :func:`tecc.topi.nn.nll_loss` (TVM's ``topi.testing.nll_loss``),
    element by element."""
    predictions, targets, weights = np.asarray(predictions), np.asarray(targets), np.asarray(weights)
    scalar = predictions.ndim == 1  # [C] and a scalar target: one element
    if scalar:
        predictions, targets = predictions[None], targets.reshape(1)
    losses = np.zeros(targets.shape, predictions.dtype)
    picked = np.zeros(targets.shape, predictions.dtype)
    for index in np.ndindex(*targets.shape):
        t = int(targets[index])
        if t == ignore_index:
            continue
        picked[index] = weights[t]
        losses[index] = -predictions[(index[0], t) + index[1:]] * weights[t]
    if reduction == "sum":
        return np.array(losses.sum(), predictions.dtype)
    if reduction == "mean":
        return np.array(losses.sum() / picked.sum(), predictions.dtype)
    return losses.reshape(()) if scalar else losses


def relu_python(x):
    return np.maximum(x, 0).astype(x.dtype)


def dense_python(data, weight, bias=None):
    """``data @ weight.T (+ bias)`` in float64."""
    out = data.astype(np.float64) @ weight.astype(np.float64).T
    if bias is not None:
        out = out + bias
    return out.astype(data.dtype)


def _channels_first(data, layout):
    """``data`` as N, C, spatial... and the permutation back (None when it already is)."""
    if layout is None or layout.index("C") == 1:
        return data, None
    order = [layout.index("N"), layout.index("C")] + [k for k, a in enumerate(layout) if a not in "NC"]
    return data.transpose(order), np.argsort(order)


def poolnd_python(np_data, kernel, strides, dilation, padding_before, padding_after, pool_type,
                  count_include_pad=True, ceil_mode=False, dtype="float32", layout=None):
    """Max or average pooling of ``np_data`` over its spatial axes (those after N and
    C in ``layout``; NC first when it is None), computed window by window."""
    data, back = _channels_first(np.asarray(np_data), layout)
    spatial = data.shape[2:]
    k = len(spatial)
    padded_sizes, out_sizes = [], []
    for d in range(k):
        total = spatial[d] + padding_before[d] + padding_after[d]
        window = (kernel[d] - 1) * dilation[d] + 1
        extra = strides[d] - 1 if ceil_mode else 0
        padded_sizes.append(total)
        n = (total + extra - window) // strides[d] + 1
        if ceil_mode and (n - 1) * strides[d] >= spatial[d] + padding_before[d]:
            n -= 1  # no window starts in the right padding (ONNX's and PyTorch's rule)
        out_sizes.append(n)
    big = [s + (strides[d] if ceil_mode else 0) + (kernel[d] - 1) * dilation[d] for d, s in enumerate(padded_sizes)]
    padded = np.full(data.shape[:2] + tuple(big), np.nan, np.float64)
    inner = tuple(slice(padding_before[d], padding_before[d] + spatial[d]) for d in range(k))
    padded[(slice(None), slice(None)) + inner] = data
    out = np.zeros(data.shape[:2] + tuple(out_sizes), np.float64)
    for pos in np.ndindex(*out_sizes):
        taps = [pos[d] * strides[d] + np.arange(kernel[d]) * dilation[d] for d in range(k)]
        window = padded[(slice(None), slice(None)) + np.ix_(*taps)].reshape(data.shape[:2] + (-1,))
        if pool_type == "max":
            # padding is the dtype's lowest value (a window of padding only gives it, as topi)
            lowest = np.finfo(dtype).min if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min
            value = np.where(np.isnan(window), lowest, window).max(axis=-1)
        elif pool_type == "avg":
            total = np.nansum(window, axis=-1)
            if count_include_pad:
                inside = np.prod([(t < padded_sizes[d]).sum() for d, t in enumerate(taps)])
                value = total / max(inside, 1)
            else:
                value = total / np.maximum((~np.isnan(window)).sum(axis=-1), 1)
        else:
            raise ValueError(f"pool_type {pool_type!r} is not 'max' or 'avg'")
        out[(slice(None), slice(None)) + pos] = value
    if back is not None:
        out = out.transpose(back)
    return out.astype(dtype)
