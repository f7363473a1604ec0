"""Pooling on CPUs: the output's rows spread over the cores.

When the window slides along the innermost axis (``NCHW``, ``NCW``...) with a
stride of 1 or 2 and the row's length is a multiple of 4, 8 or 16, a vector of
outputs along that axis is reduced in registers (``cache_write`` to ``local``), the
window loops (unrolled when small) outside the vector lanes: each tap is one vector
load (stride 2: two loads and a shuffle) and one vector max/add.  The padding's
conditions go out of the main part of the loops through ``loop_partition``.  With
another stride or length, each output element's window is reduced in a register,
element by element.  When the window does not touch the innermost axis (``NHWC``)
the innermost output axis is vectorized with the window loops outside it."""
from __future__ import annotations

from ...errors import ScheduleError
from ...tir.arith import Analyzer
from ...tir.expr import IntImm, ProducerLoad
from ...tir.functor import post_order_visit, substitute, uses_var
from ..generic.default import new_schedule
from ..nn.pooling import POOL_REDUCTIONS
from ..schedule_registry import register_schedule
from ..utils import find_anchors, fuse_axes, get_const_tuple, inline_padding
from .utils import vector_width


def _split_rows(s, t):
    """Fuse all of ``t``'s data axes but the innermost into one loop; ``(row,
    inner)`` (row None for a 1-D stage)."""
    axes = list(s[t].op.axis)
    return fuse_axes(s, t, axes[:-1]), axes[-1]


def _vectorize_inner(s, t, row, inner, reduce_axes=()):
    """Split ``inner`` by the widest vector dividing it (16, 8 or 4), put
    ``reduce_axes`` between the halves and vectorize the inner half."""
    width = vector_width(get_const_tuple(t.shape)[-1])
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


def _unroll_window(s, t):
    """Unroll the window loops of ``t``'s stage: all of them when their extents are
    constant and multiply to at most :data:`UNROLL_TAPS`, else the innermost one
    when constant and at most 8."""
    rvs = list(s[t].op.reduce_axis)
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


def _schedule_window_inner(s, pool, out):
    """The window sliding along the innermost axis: a vector of outputs (or one
    output) reduced in registers right before it is written; rows in parallel."""
    if pool.op is out.op:
        acc = s.cache_write(pool, "local")
    else:
        acc = pool
    row, inner = _split_rows(s, out)
    if row is not None:
        s[out].parallel(row)
    width = vector_width(get_const_tuple(out.shape)[-1])
    if width > 1 and _inner_stride(pool) in (1, 2) and _window_outside_lanes(pool):
        outer, lanes = s[out].split(inner, factor=width)
        s[out].vectorize(lanes)
        s[acc].compute_at(s[out], outer)
        axes = list(s[acc].op.axis)
        s[acc].reorder(*axes[:-1], *s[acc].op.reduce_axis, axes[-1])
        s[acc].vectorize(axes[-1])
    else:
        s[acc].compute_at(s[out], inner)
    _unroll_window(s, acc)


def _schedule_window(s, pool, out):
    """The stage reducing the windows (``pool``, a tensor): at the output's row
    (when it is not the output), its innermost axis vectorized with the window
    loops outside -- where the window does not depend on that axis."""
    rvs = list(pool.op.reduce_axis)
    movable = _window_outside_lanes(pool)
    if pool.op is out.op:
        row, inner = _split_rows(s, pool)
        if movable:
            _vectorize_inner(s, pool, row, inner, rvs)
        if row is not None:
            s[pool].parallel(row)
        return
    row, inner = _split_rows(s, out)
    if row is not None:
        s[out].parallel(row)
    _vectorize_inner(s, out, row, inner)
    s[pool].compute_at(s[out], row if row is not None else inner)
    if movable and row is not None:
        _vectorize_inner(s, pool, None, pool.op.axis[-1], rvs)


def _schedule(outs, what):
    outs, s = new_schedule(outs)
    out = outs[0]
    found = find_anchors(s, out, POOL_REDUCTIONS, what, "a pooling output")
    if len(found) > 1:
        raise ScheduleError(f"{what}: {out.op.name!r} reads {len(found)} pooling stages; schedule one at a time")
    inline_padding(s, found[0])
    pool = found[0].output(0)
    if _window_along_inner(pool):
        _schedule_window_inner(s, pool, out)
    else:
        _schedule_window(s, pool, out)
    return s


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
