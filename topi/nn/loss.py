"""Losses (TVM's ``topi.nn.nll_loss``)."""
from __future__ import annotations

from ... import te
from ...tir import op as _op
from .. import tag
from ..reduction import sum as _sum
from ..utils import TopiError


def nll_loss(predictions, targets, weights, reduction="mean", ignore_index=-100):
    """The negative log likelihood loss of ``predictions`` (log-probabilities) at the
    classes ``targets`` (TVM's; PyTorch's ``nll_loss``).

    Parameters
    ----------
    predictions : Tensor
        ``[C]`` or ``[N, C, d1, ...]``: a log-probability per class.
    targets : Tensor
        ``[]`` or ``[N, d1, ...]``, integer: each element's class.
    weights : Tensor
        ``[C]``: each class's weight.
    reduction : str
        ``"mean"`` (the weighted mean over the elements not ignored), ``"sum"`` or
        ``"none"`` (one loss per element).
    ignore_index : int
        A target class whose elements count nothing (loss 0, weight 0).

    Returns
    -------
    Tensor
        ``-predictions[n, targets[n, d...], d...] * weights[targets[n, d...]]``, reduced
        as ``reduction`` says (a scalar for "mean" and "sum").
    """
    what = f"nll_loss(predictions {predictions.name!r} {tuple(predictions.shape)})"
    if reduction not in ("mean", "sum", "none"):
        raise TopiError(f"{what}: reduction {reduction!r} must be 'mean', 'sum' or 'none'")
    one_element = len(predictions.shape) == 1
    if one_element:  # [C] with a scalar target: read as one element of a batch
        if len(targets.shape) != 0:
            raise TopiError(f"{what}: a 1-D prediction takes a scalar target, got shape {tuple(targets.shape)}")
        predictions = te.compute((1,) + tuple(predictions.shape), lambda n, c: predictions[c], name="predictions2d")
        targets = te.compute((1,), lambda n: targets(), name="targets1d")
    elif tuple(targets.shape) != (predictions.shape[0],) + tuple(predictions.shape[2:]):
        raise TopiError(f"{what}: targets {tuple(targets.shape)} must be the predictions' shape without the class "
                        "axis 1")
    if len(weights.shape) != 1:
        raise TopiError(f"{what}: weights {tuple(weights.shape)} must be 1-D, one per class")
    dtype = predictions.dtype

    def counted(*index):
        return targets(*index) != _op.cast(targets.dtype, ignore_index)

    def loss(*index):
        t = targets(*index)
        value = -predictions(index[0], t, *index[1:]) * weights(t)
        return _op.if_then_else(counted(*index), value, _op.const(0, dtype))

    losses = te.compute(tuple(targets.shape), loss, name="nll_loss", tag=tag.ELEMWISE)
    if reduction == "none":
        return te.compute((), lambda: losses[0], name="nll_loss_scalar") if one_element else losses
    total = _sum(losses, axis=None)
    if reduction == "sum":
        return total
    weight = te.compute(tuple(targets.shape),
                        lambda *index: _op.if_then_else(counted(*index), weights(targets(*index)), _op.const(0, dtype)),
                        name="nll_loss_weight", tag=tag.ELEMWISE)
    return te.compute((), lambda: total() / _sum(weight, axis=None)(), name="nll_loss_mean")
