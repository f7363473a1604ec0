"""The default schedule: every stage at the root, in order (and what the generic
schedules share)."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...target import Target
from ...te.schedule import AutoInlineInjective


def outputs_of(outs) -> list:
    """``outs`` as a list of tensors (a single tensor accepted)."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    if not outs or not all(isinstance(t, te.Tensor) for t in outs):
        raise ScheduleError(f"a schedule expects the output tensor(s) of the operator, got {outs!r}")
    return outs


def check_cpu_target(what: str):
    """Raise if the current target is a GPU: a generic (CPU) schedule would give
    kernels with no thread bindings."""
    target = Target.current(allow_none=True)
    if target is not None and "gpu" in target.keys:
        raise ScheduleError(f"topi.generic.{what} is a CPU schedule but the current target is {target}; "
                            f"use topi.cuda.{what} (or topi.testing's dispatch) for GPUs")


def fuse_all(s, t):
    """Fuse the data axes of ``t``'s stage into one (rank-0 stages are left
    alone); the fused axis, or None."""
    axes = list(s[t].op.axis)
    if not axes:
        return None
    return s[t].fuse(*axes) if len(axes) > 1 else axes[0]


def default_schedule(outs, auto_inline: bool, what="default_schedule"):
    """A schedule of ``outs`` with every stage at the root; with ``auto_inline``
    the injective stages are inlined and the first output's axes fused."""
    check_cpu_target(what)
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    if auto_inline:
        AutoInlineInjective(s)
        fuse_all(s, outs[0])
    return s
