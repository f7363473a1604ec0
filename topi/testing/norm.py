"""Numpy references of the normalizations (TVM's names): ``instance_norm_python``,
``group_norm_python``, ``batch_norm``, ``lrn_python`` (``layer_norm_python`` is in
:mod:`.nn`).  All compute in float64 and return the data's dtype."""
from __future__ import annotations

import numpy as np


def _affine(result, gamma, beta, shape):
    if gamma is not None:
        result = result * np.asarray(gamma, np.float64).reshape(shape)
    if beta is not None:
        result = result + np.asarray(beta, np.float64).reshape(shape)
    return result


def _over_axes(data, gamma, beta, axis, epsilon):
    x = data.astype(np.float64)
    axes = tuple(a % x.ndim for a in ((axis,) if np.isscalar(axis) else axis))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    shape = [x.shape[d] if d in axes else 1 for d in range(x.ndim)]
    return _affine((x - mean) / np.sqrt(var + epsilon), gamma, beta, shape).astype(data.dtype)


def instance_norm_python(data, gamma, beta, axis, epsilon=1e-5):
    """Normalization over ``axis`` (an int or a tuple), ``gamma`` and ``beta``
    shaped like those axes (TVM's instance_norm)."""
    return _over_axes(data, gamma, beta, axis, epsilon)


def group_norm_python(data, gamma, beta, num_groups, channel_axis, axes, epsilon=1e-5):
    """The channels (``channel_axis``) in ``num_groups`` groups, each normalized over
    its channels and ``axes``; ``gamma`` and ``beta`` per channel."""
    x = data.astype(np.float64)
    ndim = x.ndim
    ch = channel_axis % ndim
    grouped_shape = list(x.shape)
    grouped_shape[ch:ch + 1] = [num_groups, x.shape[ch] // num_groups]
    g = x.reshape(grouped_shape)
    red = tuple([ch + 1] + [a % ndim + (1 if a % ndim > ch else 0) for a in axes])
    g = (g - g.mean(axis=red, keepdims=True)) / np.sqrt(g.var(axis=red, keepdims=True) + epsilon)
    shape = [1] * ndim
    shape[ch] = x.shape[ch]
    return _affine(g.reshape(x.shape), gamma, beta, shape).astype(data.dtype)


def batch_norm(x, gamma, beta, moving_mean, moving_var, axis, epsilon, center, scale, training, momentum):
    """``[out, moving_mean, moving_var]`` of batch normalization along the channel
    ``axis``: in training with the batch's statistics (over the other axes) and
    the moving ones updated, otherwise with the moving ones (returned unchanged)."""
    x64 = x.astype(np.float64)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    if training:
        others = tuple(d for d in range(x.ndim) if d != axis)
        mean = x64.mean(axis=others)
        var = x64.var(axis=others)
    else:
        mean = moving_mean.astype(np.float64)
        var = moving_var.astype(np.float64)
    out = (x64 - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + epsilon)
    out = _affine(out, gamma if scale else None, beta if center else None, shape)
    if training:
        new_mean = (1 - momentum) * moving_mean.astype(np.float64) + momentum * mean
        new_var = (1 - momentum) * moving_var.astype(np.float64) + momentum * var
        return [out.astype(x.dtype), new_mean.astype(moving_mean.dtype), new_var.astype(moving_var.dtype)]
    return [out.astype(x.dtype), moving_mean, moving_var]


def lrn_python(a_np, size, axis, bias, alpha, beta):
    """Local response normalization along the channel ``axis``: each element divided
    by ``(bias + alpha / size * s) ** beta``, ``s`` the sum of squares over the
    ``size`` channels centred on its own (those inside the tensor).  Note TVM's
    argument order: bias, then alpha, then beta."""
    x = a_np.astype(np.float64)
    axis = axis % x.ndim
    half = size // 2
    sq = np.moveaxis(x * x, axis, 0)
    padded = np.concatenate([np.zeros((half,) + sq.shape[1:]), sq, np.zeros((half,) + sq.shape[1:])])
    window = sum(padded[r:r + sq.shape[0]] for r in range(size))
    window = np.moveaxis(window, 0, axis)
    return (x / np.power(bias + alpha / size * window, beta)).astype(a_np.dtype)
