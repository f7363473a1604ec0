"""Batch normalization (TVM's ``topi.nn.batch_norm``).

In inference (``training=False``) the output is one broadcast stage
(``T_batch_norm``, tagged ``broadcast,batch_norm``) over the moving statistics.  In
training the statistics of the batch are two reductions per channel, ``BNSum`` (the
sum) and ``BNVarSum`` (the sum of squared deviations from the mean, a second pass;
both tagged ``batch_norm_sum``), read by the output and by the updated moving
statistics.
"""
from __future__ import annotations

from ... import te
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, get_const_tuple, normalize_axis
from .dense import check_tensor, describe
from .layer_norm import accumulation_dtype

#: the output's tag
BATCH_NORM_TAG = tag.compose(tag.BROADCAST, "batch_norm")
#: the tag of the per-channel reductions (training)
SUM_TAG = "batch_norm_sum"


def _cast(x, dtype):
    return x if x.dtype == dtype else _op.cast(dtype, x)


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=None, epsilon=None, center=None, scale=None,
               training=None, momentum=None):
    """Batch normalization of ``data`` per channel (the index along ``axis``).

    Parameters
    ----------
    data : Tensor
    gamma, beta, moving_mean, moving_var : Tensor
        1-D, one entry per channel.
    axis : int, optional
        The channel axis (1 by default).
    epsilon : float, optional
        Added to the variance (1e-5 by default).
    center : bool, optional
        Add ``beta`` (True by default).
    scale : bool, optional
        Multiply by ``gamma`` (True by default).
    training : bool, optional
        Normalize with the batch's own mean and variance (over every axis but
        ``axis``) and update the moving statistics (False by default: inference,
        with the moving statistics).
    momentum : float, optional
        The weight of the batch's statistics in the update (0.1 by default).

    Returns
    -------
    list of Tensor
        ``[out, moving_mean, moving_var]``: the normalized data, and the moving
        statistics -- updated in training (``(1 - momentum) * old + momentum *
        batch``, the batch's variance the biased one), copies of the inputs
        otherwise.

    Raises
    ------
    TopiError
        When ``axis`` is out of range, a parameter is not 1-D of the channel count,
        or ``momentum`` is not in [0, 1].
    """
    what = "batch_norm"
    axis = 1 if axis is None else axis
    epsilon = 1e-5 if epsilon is None else epsilon
    center = True if center is None else center
    scale = True if scale is None else scale
    training = False if training is None else training
    momentum = 0.1 if momentum is None else momentum
    check_tensor(data, "data", what)
    ndim = len(data.shape)
    if ndim == 0:
        raise TopiError(f"{what}: data {data.name!r} is a scalar (rank 0); it needs a channel axis")
    axis = normalize_axis(axis, ndim, f"{what}({describe(data, 'data')})")
    channels = get_const_tuple([data.shape[axis]])[0]
    for role, t in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean), ("moving_var", moving_var)):
        check_tensor(t, role, what, 1)
        n = get_const_tuple(t.shape)[0]
        if isinstance(n, int) and isinstance(channels, int) and n != channels:
            raise TopiError(f"{what}: {describe(t, role)} has {n} entries but {describe(data, 'data')} has "
                            f"{channels} channels along axis {axis}")
    if not isinstance(epsilon, (int, float)) or epsilon < 0:
        raise TopiError(f"{what}: epsilon must be a non-negative number, got {epsilon!r}")
    if not 0 <= momentum <= 1:
        raise TopiError(f"{what}: momentum {momentum} is not in [0, 1]")
    acc = accumulation_dtype(data.dtype)
    eps = _op.const(epsilon, acc)

    if training:
        mean, var = _batch_statistics(data, axis, acc)
    else:
        def mean(c):
            return _cast(moving_mean[c], acc)

        def var(c):
            return _cast(moving_var[c], acc)

    def norm(*idx):
        c = idx[axis]
        v = (_cast(data(*idx), acc) - mean(c)) / te.sqrt(var(c) + eps)
        if scale:
            v = v * _cast(gamma[c], acc)
        if center:
            v = v + _cast(beta[c], acc)
        return _cast(v, data.dtype)

    out = te.compute(data.shape, norm, name="T_batch_norm", tag=BATCH_NORM_TAG, attrs={"axis": axis})
    if not training:
        # the moving statistics unchanged (copies: an output is never an input)
        new_mean = te.compute(moving_mean.shape, lambda c: moving_mean[c], name="T_moving_mean", tag=tag.ELEMWISE)
        new_var = te.compute(moving_var.shape, lambda c: moving_var[c], name="T_moving_var", tag=tag.ELEMWISE)
        return [out, new_mean, new_var]
    keep = _op.const(1.0 - momentum, acc)
    take = _op.const(momentum, acc)
    new_mean = te.compute(moving_mean.shape,
                          lambda c: _cast(keep * _cast(moving_mean[c], acc) + take * mean(c), moving_mean.dtype),
                          name="T_moving_mean", tag=tag.BROADCAST)
    new_var = te.compute(moving_var.shape,
                         lambda c: _cast(keep * _cast(moving_var[c], acc) + take * var(c), moving_var.dtype),
                         name="T_moving_var", tag=tag.BROADCAST)
    return [out, new_mean, new_var]


def _batch_statistics(data, axis, acc):
    """``(mean(c), var(c))``: the batch's mean and (biased) variance per channel,
    from two reductions over every axis but ``axis`` (``BNSum``, ``BNVarSum``)."""
    ndim = len(data.shape)
    others = [d for d in range(ndim) if d != axis]
    if not others:  # 1-D data: each channel is one value
        return (lambda c: _cast(data[c], acc)), (lambda c: _op.const(0.0, acc))
    count = 1
    for d in others:
        count = count * data.shape[d]
    count = get_const_tuple([count])[0]
    inv_n = _op.const(1.0 / count, acc) if isinstance(count, int) else \
        _op.div(_op.const(1.0, acc), _op.cast(acc, count))

    def at(c, red):
        idx = list(red)
        idx.insert(axis, c)
        return _cast(data(*idx), acc)

    r1 = [te.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in others]
    total = te.compute((data.shape[axis],), lambda c: te.sum(at(c, r1), axis=r1), name="BNSum", tag=SUM_TAG)
    r2 = [te.reduce_axis((0, data.shape[d]), name=f"k{d}_") for d in others]

    def deviations(c):
        v = at(c, r2) - total[c] * inv_n
        return te.sum(v * v, axis=r2)

    var_sum = te.compute((data.shape[axis],), deviations, name="BNVarSum", tag=SUM_TAG)
    return (lambda c: total[c] * inv_n), (lambda c: var_sum[c] * inv_n)
