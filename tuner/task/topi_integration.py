"""Tunable operators of topi (AutoTVM's ``autotvm.task.topi_integration``).

An operator whose schedule has knobs registers its compute and its schedule under
one task name::

    @autotvm.register_topi_compute("conv2d_nchw.cuda")
    def conv2d_nchw(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
        ...                                 # may define knobs that shape the compute

    @autotvm.register_topi_schedule("conv2d_nchw.cuda")
    def schedule_conv2d_nchw(cfg, outs):
        ...                                 # defines and applies the knobs

Users call both without ``cfg``: ``C = conv2d_nchw(data, kernel, 1, 1, 1)`` and
``s = schedule_conv2d_nchw([C])``.  The compute's wrapper computes the workload from
its arguments, asks the dispatch context for that workload's config, and records the
workload in the output's ``attrs["workload"]``; the schedule's wrapper finds the
workload there and asks for the same config.  So with no tuning both see the same
:class:`~.space.FallbackConfigEntity`, under ``ApplyConfig`` both see the chosen
point, and a tuning task can rebuild the operator from its workload alone.
"""
from __future__ import annotations

import functools
import inspect

from .dispatcher import DispatchContext
from .space import FallbackConfigEntity
from .task import (
    TemplateError, _current_target, _register_task_compute, _register_task_schedule, _template_of, args_to_workload,
)


def _bind_positional(func, args, kwargs, task_name):
    """``args`` and ``kwargs`` as one positional tuple in ``func``'s order (``cfg``
    excluded), defaults filled in: the workload of a call does not depend on how
    it was spelled."""
    if not kwargs:
        return tuple(args)
    params = list(inspect.signature(func).parameters.values())[1:]
    try:
        bound = inspect.Signature(params).bind(*args, **kwargs)
    except TypeError as e:
        raise TemplateError(f"{task_name}: {e}") from None
    bound.apply_defaults()
    return tuple(bound.arguments[p.name] for p in params if p.kind not in (p.VAR_KEYWORD,))


def dispatched_config(task_name: str, args) -> tuple:
    """``(cfg, workload)``: the workload of calling task ``task_name`` on ``args`` and
    the config the current dispatch context gives it under the current target (a
    tuned one, or the fallback) -- what a registered compute is called with."""
    workload = args_to_workload(args, task_name)
    return DispatchContext.current.query(_current_target(), workload), workload


def register_topi_compute(task_name: str, func=None, canonical=None):
    """Register ``func(cfg, *args)`` as the compute of tunable task ``task_name``;
    the returned function is called without ``cfg``.  ``canonical`` (optional) maps
    the serialized arguments to the one form the task's workloads keep, so that
    equal calls written differently (padding ``1`` and ``(1, 1, 1, 1)``) share their
    tuning records."""

    def register(topi_compute):
        _register_task_compute(task_name, _WithConfigInEffect(topi_compute))
        if canonical is not None:
            _template_of(task_name).fcanonical = canonical

        @functools.wraps(topi_compute)
        def wrapper(*args, **kwargs):
            args = _bind_positional(topi_compute, args, kwargs, task_name)
            cfg, workload = dispatched_config(task_name, args)
            outs = topi_compute(cfg, *args)
            for t in (outs if isinstance(outs, (list, tuple)) else [outs]):
                attrs = getattr(t.op, "attrs", None)
                if attrs is not None:
                    attrs["workload"] = workload
            return outs

        wrapper.task_name = task_name
        return wrapper

    return register(func) if func is not None else register


class _WithConfigInEffect:
    """A registered compute or schedule as a task calls it: with the config of the
    dispatch context in effect (``ApplyConfig`` around the call), no workload lookup."""

    def __init__(self, f):
        self.f = f
        functools.update_wrapper(self, f)

    def __call__(self, *args, **kwargs):
        cfg = DispatchContext.current.query(_current_target(), None)
        return self.f(cfg, *args, **kwargs)


def get_workload(outs, task_name=None):
    """The workload recorded on ``outs`` (or on a stage they read) by a registered
    compute; with ``task_name``, only one of that task.  None when there is none."""
    from ...te.tensor import PlaceholderOp  # noqa: PLC0415

    seen = set()
    stack = [t.op for t in outs]
    while stack:
        op = stack.pop()
        if op in seen or isinstance(op, PlaceholderOp):
            continue
        seen.add(op)
        wl = (getattr(op, "attrs", None) or {}).get("workload")
        if wl is not None and (task_name is None or wl[0] == task_name):
            return wl
        stack.extend(t.op for t in op.input_tensors)
    return None


def register_topi_schedule(task_name: str, func=None):
    """Register ``func(cfg, outs)`` as the schedule of tunable task ``task_name``;
    the returned function is called as ``schedule(outs)``."""

    def register(topi_schedule):
        _register_task_schedule(task_name, _WithConfigInEffect(topi_schedule))

        @functools.wraps(topi_schedule)
        def wrapper(outs, *args, **kwargs):
            from ...te.tensor import Tensor  # noqa: PLC0415

            outs = [outs] if isinstance(outs, Tensor) else list(outs)
            workload = get_workload(outs, task_name)
            if workload is None:
                raise TemplateError(
                    f"schedule of {task_name!r}: none of the outputs (or the stages they read) was computed by "
                    f"the compute registered as {task_name!r}; use that compute (it records the workload)")
            cfg = DispatchContext.current.query(_current_target(), workload)
            return topi_schedule(cfg, outs, *args, **kwargs)

        wrapper.task_name = task_name
        return wrapper

    return register(func) if func is not None else register


__all__ = ["FallbackConfigEntity", "get_workload", "register_topi_compute", "register_topi_schedule"]
