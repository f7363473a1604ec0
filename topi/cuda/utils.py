"""Helpers of the CUDA schedules."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...target import Target


def check_multiple(what, value, factor):
    """Raise unless ``value`` is a multiple of ``factor`` (a tile size)."""
    if value % factor:
        raise ScheduleError(f"{what}={value} must be a multiple of {factor} for this schedule")


def input_tagged(t, tag):
    """The input tensor of ``t``'s stage whose op carries ``tag``."""
    for x in t.op.input_tensors:
        if getattr(x.op, "tag", "") == tag:
            return x
    raise ScheduleError(f"stage {t.op.name!r} reads no tensor tagged {tag!r}; it is not the output this "
                        "schedule expects")


def max_threads(default=256) -> int:
    """Threads per block for a one-dimensional schedule: ``default``, capped by the
    current target's ``max_num_threads`` when it sets one."""
    target = Target.current(allow_none=True)
    limit = target.attrs.get("max_num_threads") if target is not None else None
    return min(default, int(limit)) if limit else default


def pow2_at_least(n, cap) -> int:
    """The smallest power of two that is at least ``n``, at most ``cap``."""
    p = 1
    while p < n and p < cap:
        p *= 2
    return p


def bind_blocks_threads(stage, axis, num_thread):
    """Split ``axis`` of ``stage`` by ``num_thread`` and bind the outer loop to
    ``blockIdx.x``, the inner to ``threadIdx.x``: ``(bx, tx)``."""
    bx, tx = stage.split(axis, factor=num_thread)
    stage.bind(bx, te.thread_axis("blockIdx.x"))
    stage.bind(tx, te.thread_axis("threadIdx.x"))
    return bx, tx


def bind_reduce_axes(stage, num_thread, thread_x):
    """Fuse the reduction axes of ``stage`` and spread them over ``num_thread``
    threads of ``thread_x`` (a cross-thread reduction)."""
    rk = list(stage.op.reduce_axis)
    kk = rk[0] if len(rk) == 1 else stage.fuse(*rk)
    _, ki = stage.split(kk, factor=num_thread)
    stage.bind(ki, thread_x)
