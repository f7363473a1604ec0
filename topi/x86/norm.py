"""Normalizations on CPUs: layer/instance/group norm, batch norm, LRN.

``schedule_layer_norm`` (also instance and group norm)
    The rows (the axes that share a mean) spread over the cores; a row's sum and
    sum of squares computed right before its elements, which are written in one
    loop vectorized along the row (an element-wise op after the norm included).
    When the innermost axis is normalized, the sums accumulate in vector lanes
    (``rfactor``), then add their lanes.
``schedule_batch_norm``
    Injective outputs vectorized and parallel; in training, the per-channel sums
    spread over the cores.
``schedule_lrn``
    The window sums of a row computed right before it, vectorized along the last
    axis; rows spread over the cores.
"""
from __future__ import annotations

from ... import te
from ..generic.default import new_schedule
from ..generic.norm import find_lrn, find_norm, norm_parts, rows_and_elements
from ..nn.batch_norm import SUM_TAG as BN_SUM_TAG
from ..nn.local_response_norm import SQR_SUM_TAG
from ..schedule_registry import register_schedule
from ..utils import fuse_all, fuse_axes, get_const_tuple
from .injective import schedule_injective, schedule_injective_from_existing
from .utils import vector_lanes, vector_width


def _vectorize_inner(s, t, axis, dtype):
    """Split ``axis`` of ``t`` by the vector width and vectorize the inner part."""
    lanes = vector_lanes(dtype)
    if lanes > 1:
        _, inner = s[t].split(axis, factor=lanes)
        s[t].vectorize(inner)


@register_schedule(("layer_norm", "instance_norm", "group_norm"), "cpu")
def schedule_layer_norm(outs):
    """The CPU schedule of ``layer_norm``, ``instance_norm`` and ``group_norm`` (and
    of an element-wise op after them).

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    norm, out = find_norm(s, outs, "schedule_layer_norm")
    _, _, _, sums = norm_parts(norm)
    rows, _, elements = rows_and_elements(s, out, norm)
    row = fuse_axes(s, out, rows)
    inner = fuse_axes(s, out, elements)
    if row is not None:
        s[out].parallel(row)
    _vectorize_inner(s, out, inner, out.dtype)
    if norm is not out.op and norm in s.outputs:
        # the normalization is an output too: its own loop, the sums before both
        schedule_injective_from_existing(s, norm.output(0))
        for t in sums:
            s[t].parallel(fuse_all(s, t))
    elif row is not None:
        axes = norm_parts(norm)[0]
        for t in sums:
            rf = _rfactor_sum(s, t, axes, len(out.shape))
            if rf is not None:
                s[rf].compute_at(s[out], row)
            s[t].compute_at(s[out], row)
    return s


def _rfactor_sum(s, t, axes, ndim):
    """Sum ``t`` (over ``axes`` of ``ndim``-D data) with partial sums in vector lanes
    -- its innermost reduction axis split by 16, 8 or 4 and factored out -- when
    that axis is the data's innermost one; the partial sums' stage (vectorized,
    each lane summing every ``width``-th element), or None."""
    if not axes or axes[-1] != ndim - 1:
        return None
    k = t.op.reduce_axis[-1]
    width = vector_width(get_const_tuple([k.dom.extent])[0], min_vectors=2)
    if width == 1:
        return None
    _, ki = s[t].split(k, factor=width)
    rf = s.rfactor(t, ki, factor_axis=len(t.op.axis))
    lane = s[rf].op.axis[-1]
    s[rf].reorder(*s[rf].op.reduce_axis, lane)
    s[rf].vectorize(lane)
    return rf


schedule_instance_norm = schedule_layer_norm
schedule_group_norm = schedule_layer_norm


@register_schedule(BN_SUM_TAG, "cpu")
def schedule_batch_norm(outs):
    """The CPU schedule of ``batch_norm``'s outputs (``[out, moving_mean,
    moving_var]``, or any of them): each output one vectorized, parallel loop; in
    training the per-channel sums spread over the cores.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    s = schedule_injective(outs)
    for stage in s.stages:
        if isinstance(stage.op, te.ComputeOp) and stage.op.tag == BN_SUM_TAG:
            (c,) = stage.op.axis
            stage.parallel(c)
    return s


@register_schedule(SQR_SUM_TAG, "cpu")
def schedule_lrn(outs):
    """The CPU schedule of ``lrn`` (and of an element-wise op after it).

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    sqr, out = find_lrn(s, outs)
    axes = list(s[out].op.axis)
    row = fuse_axes(s, out, axes[:-1])
    _vectorize_inner(s, out, axes[-1], out.dtype)
    if row is not None:
        s[out].parallel(row)
        s[sqr].compute_at(s[out], row)
    last = s[sqr].op.axis[-1]
    (r,) = s[sqr].op.reduce_axis
    s[sqr].reorder(r, last)
    _vectorize_inner(s, sqr, last, sqr.dtype)
    return s
