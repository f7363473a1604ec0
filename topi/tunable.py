"""Running a tunable schedule template on outputs that no registered compute made.

A schedule registered with ``register_topi_schedule`` finds its config through the
workload that the registered compute recorded on the output; the output of a plain
:mod:`.nn` compute (``topi.nn.dense``) has none.  The tecc entry points
(``topi.cuda.schedule_dense``, ``topi.x86.schedule_batch_matmul``...) accept both:
the registered schedule when the workload is there, the template with a fresh
fallback config (or the config of an enclosing ``ApplyConfig``) otherwise.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..tuner.task.dispatcher import DispatchContext, FallbackContext
from ..tuner.task.space import FallbackConfigEntity, InstantiationError
from ..tuner.task.topi_integration import get_workload
from .generic.default import new_schedule
from .utils import find_anchors, get_const_tuple


def has_workload(outs, task_name) -> bool:
    """True when ``outs`` (or a stage they read) carry a workload of ``task_name``."""
    return get_workload(outs, task_name) is not None


def config_without_workload():
    """The config for a template applied to outputs without a workload: the one of
    an enclosing ``ApplyConfig`` (a tuning run), else a fresh fallback (never one
    shared between workloads)."""
    ctx = DispatchContext.current
    if isinstance(ctx, FallbackContext):
        return FallbackConfigEntity()
    from ..target import Target  # noqa: PLC0415

    return ctx.query(Target.current(allow_none=True), None)


def schedule_either(outs, task_name, registered, template):
    """``registered(outs)`` when ``outs`` carry ``task_name``'s workload, else
    ``template(cfg, outs)`` with :func:`config_without_workload`."""
    if has_workload(outs, task_name):
        return registered(outs)
    return template(config_without_workload(), outs)


def schedule_anchor(outs, anchor_tags, what, apply, epilogue=None):
    """A schedule of ``outs``: the injective stages inlined, ``apply(s, op, out)``
    called on the first operation tagged one of ``anchor_tags`` (``out`` the first
    output, which must be that operation or an element-wise op of it).

    With ``epilogue`` (the target's ``schedule_injective_from_existing``), an output
    of another shape -- the product reshaped, as an einsum that keeps several axes of
    an operand is -- is a loop nest of its own: the product is scheduled by ``apply``
    as its own stage, then ``epilogue(s, out)``.

    Raises
    ------
    ScheduleError
        When there is no such operation, or (without ``epilogue``) the output's
        shape is not its shape.
    """
    outs, s = new_schedule(outs)
    out = outs[0]
    op = find_anchors(s, out, anchor_tags, what, f"a {' / '.join(anchor_tags)}")[0]
    if op is not out.op and get_const_tuple(op.output(0).shape) != get_const_tuple(out.shape):
        if epilogue is None:
            raise ScheduleError(f"{what}: the output {out.op.name!r} {get_const_tuple(out.shape)} is not an "
                                f"element-wise op of {op.name!r} {get_const_tuple(op.output(0).shape)}; "
                                "schedule the product as its own output")
        apply(s, op, op.output(0))
        epilogue(s, out)
        return s
    apply(s, op, out)
    return s


def knob_name(name, kernel):
    """The name of knob ``name`` for kernel (or loop nest) number ``kernel`` of a
    template that schedules several: ``name`` for the first, ``name_<kernel>`` after."""
    return name if kernel == 0 else f"{name}_{kernel}"


def knob_int(cfg, name, what, low=1, high=None, limit_what=None):
    """The value of the knob ``name`` of ``cfg``, checked: an int in ``[low, high]``
    (``high`` None: no upper bound; ``limit_what`` says where ``high`` comes from).

    Raises
    ------
    InstantiationError
        When ``cfg`` has no such knob, or its value is not such an int; the message
        names the template ``what``, the knob, the value and what was expected.
    """
    if name not in cfg:
        raise InstantiationError(f"{what}: the config has no knob {name!r}: it is a config of another template "
                                 "or workload")
    value = getattr(cfg[name], "val", cfg[name])
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)
    if not ok:
        expected = f"an int >= {low}" if high is None else f"an int in [{low}, {high}]"
        if limit_what and high is not None:
            expected += f" ({limit_what})"
        raise InstantiationError(f"{what}: knob {name!r} = {value!r} is not valid; expected {expected}")
    return value
