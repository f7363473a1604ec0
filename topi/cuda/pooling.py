"""Pooling on CUDA: by default one thread per output element, its window reduced
serially in a register; consecutive threads take consecutive output elements
(coalesced writes, and reads along the innermost axis).

Tuning
------
The schedule is a template with knobs, registered for the tuner with these tasks
(compute -> task; each compute is :mod:`tecc.topi.nn`'s, with its signature):

=========================  ======================
:func:`pool1d`             ``"pool1d.cuda"``
:func:`pool2d`             ``"pool2d.cuda"``
:func:`pool3d`             ``"pool3d.cuda"``
:func:`adaptive_pool`      ``"adaptive_pool.cuda"``
:func:`global_pool`        ``"global_pool.cuda"``
=========================  ======================

TVM had no AutoTVM templates for pooling: the names are tecc's, in TVM's
``<operator>.<target>`` form (the reductions of :mod:`.reduction` are
``"reduce.cuda"``).  :func:`schedule_pool` and :func:`schedule_adaptive_pool`
schedule the outputs of these computes with the config dispatched for their
workload, and those of the plain :mod:`tecc.topi.nn` computes with a fallback
config (or the one of an enclosing ``ApplyConfig``).  The knobs:

``out_thread``
    output elements per block (the threads per block when each thread reduces its
    own window).
``reduce_thread``
    threads sharing one output element's window (``threadIdx.x``, combined by a
    cross-thread reduction; the elements of a block then on ``threadIdx.y``); 1:
    each thread reduces its window alone.  Above 1 only for windows of a constant
    size (not the varying windows of an adaptive pool; a global pool's are
    constant).
``auto_unroll_max_step``
    unroll every loop nest of at most this many steps (a window's taps) inside the
    kernel (0: none).

The fallback config is the default schedule: ``reduce_thread`` 1, ``out_thread``
256 (fewer when the target allows fewer threads per block), no unroll.
"""
from __future__ import annotations

from ...tuner.task.space import InstantiationError
from ..generic.default import new_schedule
from ..nn.pooling import POOL_REDUCTIONS
from ..pool_tasks import register_pool_computes, register_pool_schedules
from ..reduce_plan import elements, reduce_extent
from ..schedule_registry import register_schedule
from ..utils import find_anchors, inline_padding
from .injective import schedule_injective_from_existing
from .reduction import define_reduce_knobs, reduce_knobs, schedule_cross_thread
from .utils import max_threads


def _window(pools):
    """The largest number of elements a window of ``pools`` holds (an int), or None
    when one of them varies (an adaptive pool's) or is not static."""
    sizes = [reduce_extent(op) for op in pools]
    return None if any(k is None for k in sizes) else max(sizes)


def _pool_template(cfg, outs, layout="NCHW", what="schedule_pool"):
    """The pooling template: the padding inlined, the pools under ``outs[0]``
    scheduled with the knobs of ``cfg`` (the module's docs)."""
    outs, s = new_schedule(outs)
    out = outs[0]
    pools = find_anchors(s, out, POOL_REDUCTIONS, what, "a pooling output")
    window = _window(pools)
    # (windows that vary: as if of one element, so that reduce_thread offers 1 only)
    define_reduce_knobs(cfg, window if window is not None else 1, elements(out), (1, max_threads(256)))
    num_x, num_y, unroll = reduce_knobs(cfg, what)
    for op in pools:
        inline_padding(s, op)
    if num_x > 1:
        if window is None:
            raise InstantiationError(f"{what}: knob 'reduce_thread' = {num_x} but the windows of "
                                     f"{[op.name for op in pools]} vary in size (an adaptive pool); use 1")
        schedule_cross_thread(s, out, [op.output(0) for op in pools], num_x, num_y, unroll)
        return s
    for op in pools:
        if op is not out.op:
            s[op].set_scope("local")
    schedule_injective_from_existing(s, out, num_thread=num_y, vector=1)
    if unroll:
        s[out].pragma(s[out].leaf_iter_vars[0], "auto_unroll_max_step", unroll)
    thread = s[out].leaf_iter_vars[-1]
    for op in pools:
        if op is not out.op:
            s[op].compute_at(s[out], thread)
    return s


# ---------------------------------------------------------------------------------------
# the tunable tasks
# ---------------------------------------------------------------------------------------
pool1d, pool2d, pool3d, adaptive_pool, global_pool = register_pool_computes("cuda")
_schedule = register_pool_schedules("cuda", _pool_template)


@register_schedule(("pool", "adaptive_pool"), "cuda")
def schedule_pool(outs, layout="NCHW"):
    """The CUDA schedule of ``pool1d/2d/3d`` (and of element-wise ops after it;
    ``adaptive_pool`` and ``global_pool`` too): the padding inlined, by default one
    thread per output element, the window sums of an average kept in a register.
    Tunable (the module's docs): the config dispatched for the workload of
    :func:`pool2d` & co., else a fallback config.

    Parameters
    ----------
    outs : Tensor or list of Tensor
    layout : str
        Not needed (any layout is scheduled alike); TVM's signature.

    Returns
    -------
    Schedule

    Raises
    ------
    InstantiationError
        When a tuned config's knobs are out of range.
    """
    return _schedule(outs, layout, "schedule_pool")


def schedule_adaptive_pool(outs, layout="NCHW"):
    """The CUDA schedule of ``adaptive_pool`` and ``global_pool`` (and of
    element-wise ops after them): :func:`schedule_pool`'s, by default one thread per
    output element, each reducing its window (of a size that varies with the
    element)."""
    return _schedule(outs, layout, "schedule_adaptive_pool")
