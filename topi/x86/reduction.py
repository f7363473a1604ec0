"""Reductions and softmax on CPUs: the output's rows spread over the cores."""
from __future__ import annotations

from .. import tag
from ..generic.default import new_schedule
from ..reduce_plan import elements, schedule_reduce_chain
from ..schedule_registry import register_schedule
from ..utils import find_anchors, fuse_axes, fuse_rows, get_const_int, get_const_tuple
from .injective import schedule_injective_from_existing
from .utils import vector_width


#: less work than this (output elements times reduced elements) runs on one core
PARALLEL_MIN_WORK = 1 << 15
#: the vector width (float32 lanes of AVX2) of the kept innermost axis
VECTOR = 8


def _schedule_chain(s, plan, out):
    """``out`` (a reduction, or the anchor of a fused chain) as one loop nest: its
    outer axes fused and parallel, its innermost axis split by :data:`VECTOR` and
    vectorized when every reduction keeps the input's innermost axis; each
    reduction computed at the parallel loop with its reduction loops outside its
    innermost (vector) axis."""
    st = s[out]
    axes = list(st.op.axis)
    shape = get_const_tuple(out.shape)
    inner_ok = (axes and plan.innermost_kept() and isinstance(shape[-1], int) and shape[-1] >= VECTOR)
    if not axes:  # a rank-0 output: a loop of extent 1 to compute the reductions at
        outer, vec = (st.fuse() if not out.op.reduce_axis else None), None
    elif inner_ok:
        io, vec = st.split(axes[-1], factor=VECTOR)
        outer = fuse_axes(s, out, axes[:-1] + [io])
    else:
        outer, vec = fuse_axes(s, out, axes), None
    k = plan.reduce_extent()
    n = elements(out)
    if outer is not None and axes and (k is None or n is None or n * k >= PARALLEL_MIN_WORK):
        st.parallel(outer)
    if out.op.reduce_axis and vec is not None:
        # the reduction loops outside the vector lanes: lanes of neighbouring outputs
        st.reorder(outer, *st.op.reduce_axis, vec)
    if vec is not None:
        st.vectorize(vec)
    for R in plan.reductions:
        if R.op is out.op:
            continue
        if outer is None:  # a rank-0 reduction as the output: the others stay at the root
            continue
        s[R].compute_at(st, outer)
        if vec is not None:
            r_axes = list(s[R].op.axis)
            s[R].reorder(*r_axes[:-1], *s[R].op.reduce_axis, r_axes[-1])
            s[R].vectorize(r_axes[-1])


@register_schedule("comm_reduce", "cpu")
def schedule_reduce(outs):
    """The CPU schedule of a reduction (``topi.sum``, ``max``, ``argmax``, ``mean``,
    ``variance``...) and of the element-wise stages around it.

    Stages before the reduction are inlined.  When the outputs are one tensor of
    the reductions' shape (the reduction itself, or an element-wise op of it),
    everything is one loop nest: the output's elements spread over the cores, each
    reduction computed right before the elements that need it; when the input's
    innermost axis is kept (a column sum), 8 neighbouring outputs are reduced
    together in vector lanes.  Otherwise each reduction and each other output get a
    loop nest of their own.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    return schedule_reduce_chain(outs, _schedule_chain, schedule_injective_from_existing)


@register_schedule(("softmax_output", "log_softmax_output"), "cpu")
def schedule_softmax(outs):
    """The CPU schedule of ``softmax`` / ``log_softmax`` (and of an element-wise op
    after it): the rows spread over the cores, each row's maximum, exponentials and
    sum computed right before its outputs.

    When the axis is the innermost one and its size a multiple of 4 (at least 8), every pass
    over a row is vectorized: the exponentials and the outputs along the row, and
    the maximum and the sum through :meth:`~tecc.te.Schedule.rfactor` -- partial
    results kept in vector lanes (16, 8 or 4, the widest dividing the row), then
    one short reduction of the lanes.  (The lanes add in another order than one
    sequential loop: the sum may differ in its last bits.)

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    out = outs[0]
    for op in find_anchors(s, out, (tag.SOFTMAX_OUTPUT, tag.LOG_SOFTMAX_OUTPUT), "schedule_softmax", "a softmax"):
        sm_out = op.output(0)
        ndim = len(sm_out.shape)
        axis = get_const_int(op.attrs.get("axis", ndim - 1))
        if op is not out.op:
            s[sm_out].compute_inline()
        row, j = fuse_rows(s, out, axis)
        size = get_const_tuple(sm_out.shape)[axis]
        width = vector_width(size, min_vectors=2) if axis == ndim - 1 else 1
        if width > 1:
            _, lanes = s[out].split(j, factor=width)
            s[out].vectorize(lanes)
        if row is not None:
            s[out].parallel(row)
        for t in _softmax_stages(sm_out):
            if width > 1:
                _vectorize_softmax_stage(s, t, width, s[out] if row is not None else None, row)
            elif row is not None:
                s[t].compute_at(s[out], row)
    return s


def _vectorize_softmax_stage(s, t, width, out_stage, row):
    """``t`` (a stage of a softmax along its innermost axis) vectorized by ``width``
    (and its partial reductions, for the maximum and the sum), all computed at
    ``row`` of ``out_stage`` (when not None: else at the root)."""
    if t.op.reduce_axis:
        (k,) = t.op.reduce_axis
        _, ki = s[t].split(k, factor=width)
        rf = s.rfactor(t, ki, factor_axis=len(t.op.axis))
        lane = s[rf].op.axis[-1]
        s[rf].reorder(*s[rf].op.reduce_axis, lane)
        s[rf].vectorize(lane)
        stages = [rf, t]
    else:
        _, lanes = s[t].split(t.op.axis[-1], factor=width)
        s[t].vectorize(lanes)
        stages = [t]
    if out_stage is not None:
        for st in stages:
            s[st].compute_at(out_stage, row)


def _softmax_stages(sm_out):
    """The maximum, exponential and sum stages a softmax output reads."""
    found, todo = [], list(sm_out.op.input_tensors)
    while todo:
        t = todo.pop()
        if t.op.tag in ("softmax_max", "softmax_exp", "softmax_sum") and t not in found:
            found.append(t)
            todo.extend(t.op.input_tensors)
    return found
