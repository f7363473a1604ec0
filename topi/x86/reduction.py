"""Reductions and softmax on CPUs: the output's rows spread over the cores.

Tuning
------
:func:`schedule_reduce` is a template with knobs, registered for the tuner as the
task ``"reduce.x86"`` with the compute :func:`reduce` (``reduce(data, axis=None,
keepdims=False, reduce_type="sum")``, any reduction of :mod:`tecc.topi.reduction`
by name).  TVM had no AutoTVM template for reductions: the name is tecc's, in
TVM's ``<operator>.<target>`` form (``"reduce.cuda"`` on CUDA).  The knobs, per
loop nest of the chain (the first one's unsuffixed, the ``i``-th's with the suffix
``_i``):

``vec``
    vector lanes along the innermost axis: when every reduction keeps the input's
    innermost axis (a column sum), that many neighbouring outputs reduced together
    in the lanes of a vector; when the innermost axis is reduced (a row sum), the
    reduction split into that many partial results kept in vector lanes
    (``rfactor``), added up at the end (a divisor of the axis' length; the sum then
    adds in another order than one loop).  1: no vectors.
``parallel_axes``
    how many of the output's outer loops (the innermost one's vector split
    excluded) are fused into the loop spread over the cores; 0: one core.
``auto_unroll_max_step``
    unroll every loop nest of at most this many steps inside (0: none).

The fallback config is the default schedule of :func:`schedule_reduce`.
"""
from __future__ import annotations

from ...tuner.task.space import InstantiationError, OtherOptionEntity
from .. import tag
from ..generic.default import new_schedule, outputs_of
from ..reduce_compute import register_reduce_compute, register_reduce_schedule
from ..reduce_plan import elements
from ..schedule_registry import register_schedule
from ..tunable import knob_int, knob_name, schedule_either
from ..utils import find_anchors, fuse_axes, fuse_rows, get_const_int, get_const_tuple
from .injective import schedule_injective_from_existing
from .utils import vector_width


#: less work than this (output elements times reduced elements) runs on one core
PARALLEL_MIN_WORK = 1 << 15
#: the vector width (float32 lanes of AVX2) of the kept innermost axis
VECTOR = 8
#: the choices of ``vec`` (1 and those that fit the axis)
VECTORS = (1, 4, 8, 16)
#: the choices of ``auto_unroll_max_step``
UNROLL_STEPS = (0, 16, 64)


def _innermost_reduced(op) -> bool:
    """True if the reduction ``op`` (a topi reduction, with ``attrs["axis"]`` and
    ``attrs["ndim"]``) reduces its input's innermost axis (its last reduction axis)."""
    attrs = op.attrs
    if "axis" not in attrs or "ndim" not in attrs or attrs["axis"] is None:
        return False
    return get_const_int(attrs["ndim"]) - 1 in [get_const_int(a) for a in attrs["axis"]]


def _row_lanes_ok(plan):
    """The length of the innermost reduced axis that every reduction of ``plan``
    shares when each can be split into vector lanes there (``rfactor``), else None."""
    lengths = set()
    for R in plan.reductions:
        if not _innermost_reduced(R.op) or R.dtype == "bool":
            return None
        n = get_const_tuple([R.op.reduce_axis[-1].dom.extent])[0]
        if not isinstance(n, int):
            return None
        lengths.add(n)
    return lengths.pop() if len(lengths) == 1 else None


def _define_knobs(cfg, plan, out, kernel):
    """Define the knobs of one loop nest (``out`` and ``plan.reductions``);
    ``(mode, rank)``: ``mode`` ``"kept"`` (vectors across outputs along the kept
    innermost axis), ``"rows"`` (vector lanes of partial results along the reduced
    innermost axis) or None (no vectors)."""
    shape = get_const_tuple(out.shape)
    rank = len(shape)
    inner = shape[-1] if rank else None
    row_len = _row_lanes_ok(plan)
    if rank and plan.innermost_kept() and isinstance(inner, int):
        mode, vecs = "kept", [v for v in VECTORS if v <= inner]
    elif row_len is not None:
        mode, vecs = "rows", [v for v in VECTORS if row_len % v == 0]
    else:
        mode, vecs = None, [1]
    cfg.define_knob(knob_name("vec", kernel), vecs)
    cfg.define_knob(knob_name("parallel_axes", kernel), list(range(rank + 1)))
    cfg.define_knob(knob_name("auto_unroll_max_step", kernel), list(UNROLL_STEPS))
    if cfg.is_fallback:
        k, n = plan.reduce_extent(), elements(out)
        parallel = rank and (k is None or n is None or n * k >= PARALLEL_MIN_WORK)
        cfg[knob_name("vec", kernel)] = OtherOptionEntity(VECTOR if mode == "kept" and inner >= VECTOR else 1)
        cfg[knob_name("parallel_axes", kernel)] = OtherOptionEntity(rank if parallel else 0)
        cfg[knob_name("auto_unroll_max_step", kernel)] = OtherOptionEntity(0)
    return mode, rank, row_len


def _schedule_chain(cfg, s, plan, out, kernel=0, what="schedule_reduce"):
    """``out`` (a reduction, or the anchor of a fused chain) as one loop nest, with
    the knobs of ``cfg`` for ``kernel``: the leading ``parallel_axes`` of its outer
    loops fused and parallel, the others fused inside; the innermost axis split by
    ``vec`` and vectorized when every reduction keeps the input's innermost axis,
    or each reduction's innermost axis split into ``vec`` lanes of partial results
    otherwise; each reduction computed at the innermost outer loop with its
    reduction loops outside its vector lanes."""
    mode, rank, row_len = _define_knobs(cfg, plan, out, kernel)
    vec = knob_int(cfg, knob_name("vec", kernel), what, 1)
    par = knob_int(cfg, knob_name("parallel_axes", kernel), what, 0, rank, "the output's rank")
    unroll = knob_int(cfg, knob_name("auto_unroll_max_step", kernel), what, 0)
    if vec > 1 and mode is None:
        raise InstantiationError(f"{what}: knob 'vec' = {vec} but {out.op.name!r} has no innermost axis to "
                                 "vectorize (the input's innermost axis is not kept by every reduction nor "
                                 "reduced by all alike); use 1")
    if vec > 1 and mode == "rows" and row_len % vec:
        raise InstantiationError(f"{what}: knob 'vec' = {vec} does not divide the innermost reduced axis "
                                 f"({row_len} elements)")
    st = s[out]
    factored = []
    if mode == "rows" and vec > 1:
        # first, while the reductions' loops are untouched: partial results in lanes
        for R in plan.reductions:
            _, ki = s[R].split(s[R].op.reduce_axis[-1], factor=vec)
            rf = s.rfactor(R, ki, factor_axis=len(R.op.axis))
            factored.append(rf[0] if isinstance(rf, (list, tuple)) else rf)
    axes = list(st.op.axis)
    vec_axis = None
    if not axes:  # a rank-0 output: a loop of extent 1 to compute the reductions at
        loops = [] if out.op.reduce_axis else [st.fuse()]
    elif mode == "kept" and vec > 1:
        io, vec_axis = st.split(axes[-1], factor=vec)
        loops = axes[:-1] + [io]
    else:
        loops = axes
    head = fuse_axes(s, out, loops[:par]) if axes else None
    tail = fuse_axes(s, out, loops[par:]) if axes else (loops[0] if loops else None)
    attach = tail if tail is not None else head
    if head is not None:
        st.parallel(head)
    if unroll and attach is not None:
        st.pragma(head if head is not None else tail, "auto_unroll_max_step", unroll)
    if out.op.reduce_axis and vec_axis is not None:
        # the reduction loops outside the vector lanes: lanes of neighbouring outputs
        st.reorder(*[x for x in (head, tail) if x is not None], *st.op.reduce_axis, vec_axis)
    if vec_axis is not None:
        st.vectorize(vec_axis)
    for R in plan.reductions:
        if R.op is out.op or attach is None:  # (a rank-0 reduction as the output: the others at the root)
            continue
        s[R].compute_at(st, attach)
        if vec_axis is not None:
            r_axes = list(s[R].op.axis)
            s[R].reorder(*r_axes[:-1], *s[R].op.reduce_axis, r_axes[-1])
            s[R].vectorize(r_axes[-1])
    for RF in factored:
        if attach is not None:
            s[RF].compute_at(st, attach)
        lane = s[RF].op.axis[-1]
        s[RF].reorder(*s[RF].op.reduce_axis, lane)
        s[RF].vectorize(lane)


reduce = register_reduce_compute("x86")  # noqa: A001


_reduce_template, _schedule_reduce_task = register_reduce_schedule(
    "x86", _schedule_chain, schedule_injective_from_existing)


@register_schedule("comm_reduce", "cpu")
def schedule_reduce(outs):
    """The CPU schedule of a reduction (``topi.sum``, ``max``, ``argmax``, ``mean``,
    ``variance``...) and of the element-wise stages around it: the template of the
    task ``"reduce.x86"`` with the config dispatched for the workload :func:`reduce`
    recorded, or, for the outputs of the plain computes, with a fallback config (or
    the one of an enclosing ``ApplyConfig``).

    Stages before the reduction are inlined.  When the outputs are one tensor of
    the reductions' shape (the reduction itself, or an element-wise op of it),
    everything is one loop nest: the output's elements spread over the cores, each
    reduction computed right before the elements that need it; when the input's
    innermost axis is kept (a column sum), 8 neighbouring outputs are reduced
    together in vector lanes.  Otherwise each reduction and each other output get a
    loop nest of their own.  (That is the fallback config; a tuned one chooses the
    vectors, the parallel loop and the unrolling: the module's docs.)

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule

    Raises
    ------
    InstantiationError
        When a tuned config's knobs are out of range.
    """
    return schedule_either(outputs_of(outs), "reduce.x86", _schedule_reduce_task, _reduce_template)


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
