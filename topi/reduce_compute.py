"""The compute behind the tunable reduction tasks ("reduce.cuda", "reduce.x86").

A task is rebuilt from its workload, so one compute has to stand for every
reduction of :mod:`.reduction`: :func:`reduce_by_type` takes the reduction's name
(``reduce_type``) as an ordinary argument and calls that reduction.
"""
from __future__ import annotations

import itertools

from ..tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from . import reduction
from .reduce_plan import schedule_reduce_chain
from .utils import TopiError

#: the reductions a tunable reduction task can compute, by name
REDUCE_TYPES = {
    "sum": reduction.sum, "max": reduction.max, "min": reduction.min, "prod": reduction.prod,
    "all": reduction.all, "any": reduction.any, "argmax": reduction.argmax, "argmin": reduction.argmin,
    "mean": reduction.mean, "variance": reduction.variance, "std": reduction.std,
}


def reduce_by_type(data, axis=None, keepdims=False, reduce_type="sum", what="reduce"):
    """``topi.<reduce_type>(data, axis, keepdims)``.

    Raises
    ------
    TopiError
        When ``reduce_type`` is not one of :data:`REDUCE_TYPES`.
    """
    f = REDUCE_TYPES.get(reduce_type)
    if f is None:
        raise TopiError(f"{what}({getattr(data, 'name', data)!r}): reduce_type {reduce_type!r} is not one of "
                        f"{sorted(REDUCE_TYPES)}")
    return f(data, axis, keepdims)


def register_reduce_compute(key):
    """``reduce(cfg, data, axis=None, keepdims=False, reduce_type="sum")``: the
    compute of the tunable task ``"reduce.<key>"`` (``key`` "cuda" or "x86"), which
    users call without ``cfg`` as ``topi.<key>.reduce``."""

    def reduce(cfg, data, axis=None, keepdims=False, reduce_type="sum"):  # noqa: A001
        return reduce_by_type(data, axis, keepdims, reduce_type, f"topi.{key}.reduce")

    reduce.__doc__ = (f"""A reduction of :mod:`tecc.topi.reduction` by name (``reduce_type``: ``"sum"``,
    ``"max"``, ``"argmax"``, ``"mean"``... :data:`~tecc.topi.reduce_compute.REDUCE_TYPES`)
    over ``axis`` -- the compute of the tunable task ``"reduce.{key}"``; schedule it
    with ``schedule_reduce``.

    Raises
    ------
    TopiError
        On an unknown ``reduce_type`` (and the reduction's own errors).
    """)
    return register_topi_compute(f"reduce.{key}")(reduce)


def register_reduce_schedule(key, schedule_one, schedule_injective):
    """``(template, task_schedule)`` of the tunable task ``"reduce.<key>"``: the
    template ``template(cfg, outs)`` schedules the chain of reductions of ``outs``,
    ``schedule_one(cfg, s, plan, out, number)`` each reduction (numbered from 0, so
    that each gets knobs of its own) and ``schedule_injective(s, out)`` every other
    output; ``task_schedule(outs)`` is the template registered for the task."""

    def template(cfg, outs):
        numbers = itertools.count()
        return schedule_reduce_chain(outs, lambda s, plan, out: schedule_one(cfg, s, plan, out, next(numbers)),
                                     schedule_injective)

    template.__doc__ = f"""The template of "reduce.{key}": ``schedule_reduce`` with ``cfg``."""
    return template, register_topi_schedule(f"reduce.{key}")(template)
