"""Pooling on CPUs: the output's rows spread over the cores.

When the window slides along the innermost axis (``NCHW``, ``NCW``...) with a
stride of 1 or 2 and the row's length is a multiple of 4, 8 or 16, a vector of
outputs along that axis is reduced in registers (``cache_write`` to ``local``), the
window loops (unrolled when small) outside the vector lanes: each tap is one vector
load (stride 2: two loads and a shuffle) and one vector max/add.  The padding's
conditions go out of the main part of the loops through ``loop_partition``.  With
another stride or length, each output element's window is reduced in a register,
element by element.  When the window does not touch the innermost axis (``NHWC``,
the channel blocks ``NCHW16c``) a vector of outputs along it (the channels) is
reduced in registers the same way, the window loops outside the lanes (ResNet-50's
3x3/2 max pool in ``NCHW16c``: 0.89 ms accumulating in memory, 0.15 ms in registers,
one thread, 2026-11-27).

Tuning
------
The schedule is a template with knobs, registered for the tuner with the tasks
``"pool1d.x86"``, ``"pool2d.x86"``, ``"pool3d.x86"``, ``"adaptive_pool.x86"`` and
``"global_pool.x86"`` (the computes :func:`pool1d` & co., :mod:`tecc.topi.nn`'s with
their signatures; TVM had no AutoTVM template for pooling, the names are tecc's in
TVM's ``<operator>.<target>`` form, as ``"pool2d.cuda"``).  The knobs:

``vec``
    outputs along the innermost axis per vector (1: none; else a width dividing
    the axis, where vectors are possible at all).
``parallel``
    1: the rows (every output axis but the innermost, fused) spread over the cores.
``unroll_window``
    1: the window loops unrolled when small (:func:`_unroll_window`).

The fallback config is the default schedule described above."""
from __future__ import annotations

from ...errors import ScheduleError
from ...tuner.task.space import InstantiationError, OtherOptionEntity
from ...tir.arith import Analyzer
from ...tir.expr import IntImm, ProducerLoad
from ...tir.functor import post_order_visit, substitute, uses_var
from ..generic.default import new_schedule
from ..nn.pooling import POOL_REDUCTIONS
from ..pool_tasks import register_pool_computes, register_pool_schedules
from ..schedule_registry import register_schedule
from ..utils import find_anchors, fuse_axes, get_const_tuple, inline_padding
from ..tunable import knob_int
from .utils import VECTOR_WIDTHS, vector_width


def _split_rows(s, t):
    """Fuse all of ``t``'s data axes but the innermost into one loop; ``(row,
    inner)`` (row None for a 1-D stage)."""
    axes = list(s[t].op.axis)
    return fuse_axes(s, t, axes[:-1]), axes[-1]


def _vectorize_inner(s, t, row, inner, reduce_axes=(), width=None):
    """Split ``inner`` by ``width`` (default: the widest vector dividing it, 16, 8 or
    4), put ``reduce_axes`` between the halves and vectorize the inner half."""
    width = vector_width(get_const_tuple(t.shape)[-1]) if width is None else width
    if width == 1:
        return
    outer, lanes = s[t].split(inner, factor=width)
    order = ([row] if row is not None else []) + [outer] + list(reduce_axes) + [lanes]
    s[t].reorder(*order)
    s[t].vectorize(lanes)


#: window loops with at most this many taps (constant extents) are fully unrolled
UNROLL_TAPS = 32


def _window_along_inner(pool):
    """Whether a read of ``pool``'s input has a window (reduction) variable in its
    innermost index."""
    rvars = [rv.var for rv in pool.op.reduce_axis]
    found = []

    def visit(node):
        if isinstance(node, ProducerLoad) and node.indices:
            if uses_var(node.indices[-1], lambda v: any(v is r for r in rvars)):
                found.append(node)

    for body in pool.op.body:
        post_order_visit(body, visit)
    return bool(found)


def _unroll_window(s, t, enabled=True):
    """Unroll the window loops of ``t``'s stage: all of them when their extents are
    constant and multiply to at most :data:`UNROLL_TAPS`, else the innermost one
    when constant and at most 8 (nothing when not ``enabled``)."""
    rvs = list(s[t].op.reduce_axis) if enabled else []
    extents = get_const_tuple([rv.dom.extent for rv in rvs])
    if not rvs or not isinstance(extents[-1], int):
        return
    taps = 1
    for e in extents:
        taps = taps * e if isinstance(e, int) else None
        if taps is None:
            break
    if taps is not None and taps <= UNROLL_TAPS:
        for rv in rvs:
            s[t].unroll(rv)
    elif extents[-1] <= 8:
        s[t].unroll(rvs[-1])


def _inner_stride(pool):
    """The step of the innermost input index per step of the output's innermost axis
    (the pooling stride along it), or None when it is not one constant."""
    var = pool.op.axis[-1].var
    steps = set()

    def visit(node):
        if isinstance(node, ProducerLoad) and node.indices:
            idx = node.indices[-1]
            step = Analyzer().simplify(substitute(idx, {var: var + 1}) - idx)
            steps.add(step.value if isinstance(step, IntImm) else None)

    for body in pool.op.body:
        post_order_visit(body, visit)
    return steps.pop() if len(steps) == 1 else None


def _window_outside_lanes(pool) -> bool:
    """Whether the window's extents do not depend on the innermost output axis (so the
    window loops can go outside a vector of outputs along it; adaptive pools' do)."""
    inner_var = pool.op.axis[-1].var
    return not any(uses_var(rv.dom.extent, lambda v: v is inner_var) for rv in pool.op.reduce_axis)


def _vector_choices(extent):
    """1 and the vector widths that divide ``extent``."""
    return [1] + [v for v in sorted(VECTOR_WIDTHS) if isinstance(extent, int) and extent % v == 0]


def _define_knobs(cfg, pool, out, along_inner):
    """The knobs (module docs) and, for a fallback config, the default schedule's
    values; ``(vec, parallel, unroll)``.  ``along_inner``: the window slides along the
    innermost axis (:func:`_window_along_inner`)."""
    inner = get_const_tuple(out.shape)[-1]
    if along_inner:
        ok = _inner_stride(pool) in (1, 2) and _window_outside_lanes(pool)
    else:
        ok = pool.op is not out.op or _window_outside_lanes(pool)
    vecs = _vector_choices(inner) if ok else [1]
    cfg.define_knob("vec", vecs)
    cfg.define_knob("parallel", [1, 0])
    cfg.define_knob("unroll_window", [1, 0])
    if cfg.is_fallback:
        cfg["vec"] = OtherOptionEntity(vector_width(inner) if ok else 1)
        cfg["parallel"] = OtherOptionEntity(1)
        cfg["unroll_window"] = OtherOptionEntity(1)
    vec = knob_int(cfg, "vec", "schedule_pool", 1)
    if vec not in vecs:
        raise InstantiationError(f"schedule_pool: knob 'vec' = {vec} is not one of {vecs} for {out.op.name!r} "
                                 f"(innermost axis {inner})")
    return vec, knob_int(cfg, "parallel", "schedule_pool", 0, 1), knob_int(cfg, "unroll_window", "schedule_pool", 0, 1)


def _schedule_window_inner(s, pool, out, vec, parallel, unroll):
    """The window sliding along the innermost axis: ``vec`` outputs along it (a
    vector, or one output) reduced in registers right before they are written;
    rows in parallel."""
    if pool.op is out.op:
        acc = s.cache_write(pool, "local")
    else:
        acc = pool
    row, inner = _split_rows(s, out)
    if row is not None and parallel:
        s[out].parallel(row)
    if vec > 1:
        outer, lanes = s[out].split(inner, factor=vec)
        s[out].vectorize(lanes)
        s[acc].compute_at(s[out], outer)
        axes = list(s[acc].op.axis)
        s[acc].reorder(*axes[:-1], *s[acc].op.reduce_axis, axes[-1])
        s[acc].vectorize(axes[-1])
    else:
        s[acc].compute_at(s[out], inner)
    _unroll_window(s, acc, unroll)


def _schedule_window(s, pool, out, vec, parallel):
    """The stage reducing the windows (``pool``, a tensor): at the output's row
    (when it is not the output), its innermost axis vectorized by ``vec`` with the
    window loops outside -- where the window does not depend on that axis."""
    rvs = list(pool.op.reduce_axis)
    movable = _window_outside_lanes(pool)
    if pool.op is out.op:
        row, inner = _split_rows(s, pool)
        if movable:
            _vectorize_inner(s, pool, row, inner, rvs, vec)
        if row is not None and parallel:
            s[pool].parallel(row)
        return
    row, inner = _split_rows(s, out)
    if row is not None and parallel:
        s[out].parallel(row)
    _vectorize_inner(s, out, row, inner, width=vec)
    s[pool].compute_at(s[out], row if row is not None else inner)
    if movable and row is not None:
        _vectorize_inner(s, pool, None, pool.op.axis[-1], rvs, vec)


def _pool_template(cfg, outs, what="schedule_pool"):
    outs, s = new_schedule(outs)
    out = outs[0]
    found = find_anchors(s, out, POOL_REDUCTIONS, what, "a pooling output")
    if len(found) > 1:
        raise ScheduleError(f"{what}: {out.op.name!r} reads {len(found)} pooling stages; schedule one at a time")
    inline_padding(s, found[0])
    pool = found[0].output(0)
    along_inner = _window_along_inner(pool)
    vec, parallel, unroll = _define_knobs(cfg, pool, out, along_inner)
    if along_inner or (vec > 1 and _window_outside_lanes(pool)):
        # a vector of outputs along the innermost axis reduced in registers: the
        # window slides along it (NCHW), or it is the channels (NHWC, NCHW16c)
        _schedule_window_inner(s, pool, out, vec, parallel, unroll)
    else:
        _schedule_window(s, pool, out, vec, parallel)
    return s


# ---------------------------------------------------------------------------------------
# the tunable tasks
# ---------------------------------------------------------------------------------------
pool1d, pool2d, pool3d, adaptive_pool, global_pool = register_pool_computes("x86")
_schedule_task = register_pool_schedules("x86", lambda cfg, outs, layout, what: _pool_template(cfg, outs, what))


def _schedule(outs, what):
    return _schedule_task(outs, "NCHW", what)


@register_schedule(("pool", "adaptive_pool"), "cpu")
def schedule_pool(outs, layout="NCHW"):
    """The CPU schedule of ``pool1d/2d/3d``, ``global_pool`` and ``adaptive_pool``
    (and of element-wise ops after them): the padding inlined, the output's rows
    (every axis but the innermost, fused) in parallel.  When the window slides
    along the innermost axis, each element's window is reduced in a register (its
    loops unrolled when at most :data:`UNROLL_TAPS` taps); otherwise the
    innermost axis is vectorized by 16, 8 or 4 when its size allows, the window
    loops outside it.

    Parameters
    ----------
    outs : Tensor or list of Tensor
    layout : str
        Not needed (read from the compute); TVM's signature.

    Returns
    -------
    Schedule
    """
    return _schedule(outs, "schedule_pool")


def schedule_adaptive_pool(outs, layout="NCHW"):
    """The CPU schedule of ``adaptive_pool`` and ``global_pool`` (and of
    ``pool2d``): :func:`schedule_pool`; the window loops stay inside the innermost
    axis when the window depends on it (``W`` innermost)."""
    return _schedule(outs, "schedule_adaptive_pool")
