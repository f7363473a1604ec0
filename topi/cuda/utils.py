"""Helpers of the CUDA schedules."""
from __future__ import annotations

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
