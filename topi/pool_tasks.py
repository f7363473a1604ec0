"""The tunable pooling tasks, one set per target: ``pool1d.<key>``, ``pool2d.<key>``,
``pool3d.<key>``, ``adaptive_pool.<key>`` and ``global_pool.<key>`` (``key`` "cuda" or
"x86").  Each compute is :mod:`tecc.topi.nn`'s of the same name, with its signature;
each target's schedule module gives the template (TVM had no AutoTVM template for
pooling: the names are tecc's, in TVM's ``<operator>.<target>`` form)."""
from __future__ import annotations

from ..tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from . import nn
from .generic.default import outputs_of
from .tunable import config_without_workload, has_workload

#: the tasks' operators, and the schedule entry point (its name in messages) of each
OPERATORS = {"pool1d": "schedule_pool", "pool2d": "schedule_pool", "pool3d": "schedule_pool",
             "adaptive_pool": "schedule_adaptive_pool", "global_pool": "schedule_adaptive_pool"}


def register_pool_computes(key):
    """The five computes, registered as the tasks of target ``key``; returns
    ``(pool1d, pool2d, pool3d, adaptive_pool, global_pool)``."""

    def pool1d(cfg, data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCW",
               count_include_pad=True):
        return nn.pool1d(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad)

    def pool2d(cfg, data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCHW",
               count_include_pad=True):
        return nn.pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad)

    def pool3d(cfg, data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCDHW",
               count_include_pad=True):
        return nn.pool3d(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad)

    def adaptive_pool(cfg, data, output_size, pool_type, layout="NCHW"):
        return nn.adaptive_pool(data, output_size, pool_type, layout)

    def global_pool(cfg, data, pool_type, layout="NCHW"):
        return nn.global_pool(data, pool_type, layout)

    out = []
    for fn in (pool1d, pool2d, pool3d, adaptive_pool, global_pool):
        fn.__doc__ = (f":func:`tecc.topi.nn.{fn.__name__}`, tunable as ``\"{fn.__name__}.{key}\"`` "
                      f"(:func:`{OPERATORS[fn.__name__]}`).")
        out.append(register_topi_compute(f"{fn.__name__}.{key}")(fn))
    return tuple(out)


def register_pool_schedules(key, template):
    """The template ``template(cfg, outs, layout, what)`` registered as the schedule of
    each task of ``key``; returns ``schedule(outs, layout, what)``: the registered
    schedule of the task whose workload ``outs`` carry, else the template with
    :func:`~tecc.topi.tunable.config_without_workload`."""
    registered = {}
    for op, what in OPERATORS.items():
        def task_schedule(cfg, outs, layout="NCHW", _what=what):
            return template(cfg, outs, layout, _what)

        task_schedule.__name__ = what
        registered[f"{op}.{key}"] = register_topi_schedule(f"{op}.{key}")(task_schedule)

    def schedule(outs, layout, what):
        outs = outputs_of(outs)
        for name, fn in registered.items():
            if has_workload(outs, name):
                return fn(outs, layout)
        return template(config_without_workload(), outs, layout, what)

    schedule.tasks = registered
    return schedule
