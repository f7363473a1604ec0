"""Pooling on CPUs: the output's rows spread over the cores, each row's windows
reduced with the innermost output axis vectorized (the window loops outside it)."""
from __future__ import annotations

from ...errors import ScheduleError
from ...tir.functor import uses_var
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


def _schedule_window(s, pool, out):
    """The stage reducing the windows (``pool``, a tensor): at the output's row
    (when it is not the output), its innermost axis vectorized with the window
    loops outside -- where the window does not depend on that axis."""
    inner_var = pool.op.axis[-1].var
    rvs = list(pool.op.reduce_axis)
    movable = not any(uses_var(rv.dom.extent, lambda v: v is inner_var) for rv in rvs)
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
    _schedule_window(s, found[0].output(0), out)
    return s


@register_schedule(("pool", "adaptive_pool"), "cpu")
def schedule_pool(outs, layout="NCHW"):
    """The CPU schedule of ``pool1d/2d/3d``, ``global_pool`` and ``adaptive_pool``
    (and of element-wise ops after them): the padding inlined, the output's rows
    (every axis but the innermost, fused) in parallel, the innermost axis
    vectorized by 16, 8 or 4 when its size allows, the window loops outside it.

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
