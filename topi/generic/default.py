"""The default schedule: every stage at the root, in order (and what the generic
schedules share)."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...target import Target
from ...te.schedule import AutoInlineInjective
from ..utils import fuse_all


def outputs_of(outs) -> list:
    """``outs`` as a list of tensors (a single tensor accepted)."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    if not outs or not all(isinstance(t, te.Tensor) for t in outs):
        raise ScheduleError(f"a schedule expects the output tensor(s) of the operator, got {outs!r}")
    return outs


def new_schedule(outs) -> tuple:
    """``(outs, s)``: ``outs`` as a list of tensors (:func:`outputs_of`) and a new
    schedule of their operations."""
    outs = outputs_of(outs)
    return outs, te.create_schedule([t.op for t in outs])


def check_cpu_target(what: str):
    """Raise if the current target is a GPU: a generic (CPU) schedule would give
    kernels with no thread bindings."""
    target = Target.current(allow_none=True)
    if target is not None and "gpu" in target.keys:
        raise ScheduleError(f"topi.generic.{what} is a CPU schedule but the current target is {target}; "
                            f"use topi.cuda.{what} (or topi.testing's dispatch) for GPUs")


def default_schedule(outs, auto_inline: bool, what="default_schedule"):
    """A schedule of ``outs`` with every stage at the root; with ``auto_inline``
    the injective stages are inlined and the first output's axes fused."""
    check_cpu_target(what)
    outs, s = new_schedule(outs)
    if auto_inline:
        AutoInlineInjective(s)
        fuse_all(s, outs[0])
    return s


def named_default_schedule(name, auto_inline, doc):
    """:func:`default_schedule` as the public schedule ``name(outs)`` with the
    docstring ``doc``."""

    def schedule(outs):
        return default_schedule(outs, auto_inline, name)

    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = doc
    return schedule


def schedule_injective_outputs(outs, schedule_from_existing):
    """A new schedule of ``outs`` with every injective stage that is not an output
    inlined and ``schedule_from_existing(s, t)`` applied to each output ``t`` (the
    injective schedule of every target)."""
    outs, s = new_schedule(outs)
    AutoInlineInjective(s)
    for t in outs:
        schedule_from_existing(s, t)
    return s
