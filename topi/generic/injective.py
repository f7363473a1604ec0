"""Generic (CPU) schedules of element-wise, broadcast and injective operators."""
from __future__ import annotations

from ... import te
from ...te.schedule import AutoInlineInjective
from ..schedule_registry import register_schedule
from .default import check_cpu_target, fuse_all, outputs_of


def schedule_injective_from_existing(sch, out):
    """Fuse the axes of ``out`` in an existing schedule; ``sch`` back."""
    fuse_all(sch, out)
    return sch


@register_schedule(("elemwise", "broadcast", "injective"), "generic")
def schedule_injective(outs):
    """Inline every injective stage and fuse the output's axes (one loop).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s).

    Returns
    -------
    Schedule
    """
    check_cpu_target("schedule_injective")
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    AutoInlineInjective(s)
    for t in outs:
        schedule_injective_from_existing(s, t)
    return s


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
