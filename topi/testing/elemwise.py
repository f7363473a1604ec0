"""Numpy references of topi's element-wise operators, activations and reductions
that are not one numpy call (computed in float64, returned in the input's dtype).

The one-call ones are not repeated here: ``np.exp``, ``np.round`` (halves to even,
as ``topi.round``), ``np.fmod`` (``topi.fmod``, and ``topi.mod`` of integers),
``np.mod`` (``topi.floor_mod``), ``np.where``, ``np.mean``, ``np.var(ddof=...)``.
"""
from __future__ import annotations

import math

import numpy as np


def _f64(x):
    return np.asarray(x).astype(np.float64)


def erf_python(x):
    """``erf`` element-wise (numpy has none; ``math.erf`` per element)."""
    return np.vectorize(math.erf, otypes=[np.float64])(_f64(x)).astype(np.asarray(x).dtype)


def sigmoid_python(x):
    """``1 / (1 + exp(-x))``."""
    return (1.0 / (1.0 + np.exp(-_f64(x)))).astype(x.dtype)


def leaky_relu_python(x, alpha):
    """``x`` where positive, ``alpha * x`` elsewhere."""
    v = _f64(x)
    return np.where(v > 0, v, alpha * v).astype(x.dtype)


def prelu_python(x, slope, axis=1):
    """``x`` where positive, ``slope[c] * x`` elsewhere, ``c`` the index along ``axis``."""
    shape = [1] * x.ndim
    shape[axis] = -1
    v = _f64(x)
    return np.where(v > 0, v, v * _f64(slope).reshape(shape)).astype(x.dtype)


def gelu_python(x, approximate="none"):
    """GELU: ``x * Phi(x)`` (``"none"``, with erf) or its tanh approximation."""
    v = _f64(x)
    if approximate == "tanh":
        out = 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))
    else:
        out = 0.5 * v * (1.0 + erf_python(v / math.sqrt(2.0)))
    return out.astype(x.dtype)


def hardsigmoid_python(x, alpha=0.2, beta=0.5):
    """``clip(alpha * x + beta, 0, 1)``."""
    return np.clip(alpha * _f64(x) + beta, 0.0, 1.0).astype(x.dtype)


def hardswish_python(x):
    """``x * clip(x + 3, 0, 6) / 6``."""
    v = _f64(x)
    return (v * np.clip(v + 3.0, 0.0, 6.0) / 6.0).astype(x.dtype)


def elu_python(x, alpha=1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    v = _f64(x)
    return np.where(v > 0, v, alpha * np.expm1(np.minimum(v, 0.0))).astype(x.dtype)


def selu_python(x, alpha=1.6732632423543772, gamma=1.0507009873554805):
    """``gamma * elu(x, alpha)``."""
    return (gamma * _f64(elu_python(_f64(x), alpha))).astype(x.dtype)


def softplus_python(x, beta=1.0):
    """``log(1 + exp(beta * x)) / beta``."""
    return (np.logaddexp(0.0, beta * _f64(x)) / beta).astype(x.dtype)


def mish_python(x):
    """``x * tanh(softplus(x))``."""
    v = _f64(x)
    return (v * np.tanh(np.logaddexp(0.0, v))).astype(x.dtype)


def divide_python(a, b):
    """``topi.divide``: true division of floats, truncating division of integers
    (C's ``/``), in ``a``'s dtype."""
    a, b = np.asarray(a), np.asarray(b)
    if np.issubdtype(a.dtype, np.integer):
        return np.trunc(_f64(a) / _f64(b)).astype(a.dtype)
    return (a / b).astype(a.dtype)


def _reduced(a, axis):
    """``a`` with the axes ``axis`` moved last and flattened into one, and the
    shape of the kept axes."""
    ndim = a.ndim
    axes = list(range(ndim)) if axis is None else [x % ndim for x in np.atleast_1d(axis)]
    kept = [k for k in range(ndim) if k not in axes]
    moved = np.transpose(a, kept + sorted(axes))
    return moved.reshape([a.shape[k] for k in kept] + [-1]), axes


def _arg(a, axis, keepdims, select_last_index, fn):
    flat, axes = _reduced(a, axis)
    if select_last_index:
        idx = flat.shape[-1] - 1 - fn(flat[..., ::-1], axis=-1)
    else:
        idx = fn(flat, axis=-1)
    idx = np.asarray(idx).astype("int32")
    if keepdims:
        idx = idx.reshape([1 if k in axes else a.shape[k] for k in range(a.ndim)])
    return idx


def argmax_python(a, axis=None, keepdims=False, select_last_index=False):
    """``topi.argmax``: the index of the maximum over ``axis`` (an int, a tuple --
    the row-major index within the reduced axes -- or None), with ``keepdims`` and,
    on ties, the last index when ``select_last_index``."""
    return _arg(a, axis, keepdims, select_last_index, np.argmax)


def argmin_python(a, axis=None, keepdims=False, select_last_index=False):
    """``topi.argmin`` (as :func:`argmax_python`)."""
    return _arg(a, axis, keepdims, select_last_index, np.argmin)
