"""Generic (CPU) schedules of element-wise, broadcast and injective operators."""
from __future__ import annotations

from ..schedule_registry import register_schedule
from ..utils import fuse_all
from .default import check_cpu_target, schedule_injective_outputs


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
    return schedule_injective_outputs(outs, schedule_injective_from_existing)


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
