"""Templates and their workloads (the registry half of AutoTVM's ``autotvm.task.task``).

A *workload* names what a template is asked to schedule: the task name and the
arguments, with each tensor written as ``("TENSOR", shape, dtype)`` so that the
workload is plain data (hashable, printable, JSON in tuning records).  Templates
register under their task name: :func:`template` for a function that returns
``(schedule, args)``, :func:`register_topi_compute`/:func:`register_topi_schedule`
(in :mod:`.topi_integration`) for an operator whose compute and schedule are
separate.
"""
from __future__ import annotations

from ...errors import TeccError
from .dispatcher import ApplyConfig, DispatchContext


class TemplateError(TeccError, ValueError):
    """A template registered or called wrongly."""


class TaskTemplate:
    """What is registered under a task name: a template function (``fcustomized``),
    or an operator's compute and schedule (``fcompute``, ``fschedule``)."""

    def __init__(self):
        self.fcompute = None
        self.fschedule = None
        self.fcustomized = None

    def __call__(self, *args, **kwargs):
        """Build ``(schedule, args)`` for ``args`` with the config in effect."""
        args = deserialize_args(args)
        if self.fcustomized is not None:
            return self.fcustomized(*args, **kwargs)
        if self.fcompute is None or self.fschedule is None:
            raise TemplateError("this task has a compute but no schedule registered (or the reverse)")
        outs = self.fcompute(*args, **kwargs)
        outs = [outs] if not isinstance(outs, (list, tuple)) else list(outs)
        s = self.fschedule(outs)
        tensors = [a for a in args if _is_tensor(a)]
        return s, tensors + outs


#: task name -> TaskTemplate
TASK_TABLE: dict = {}


def _is_tensor(x) -> bool:
    from ...te.tensor import Tensor  # noqa: PLC0415

    return isinstance(x, Tensor)


def serialize_args(args) -> tuple:
    """``args`` as plain data: a tensor becomes ``("TENSOR", shape, dtype)``, lists
    become tuples, IR constants Python numbers."""
    from ...tir import expr as E  # noqa: PLC0415

    def one(x):
        if _is_tensor(x):
            shape = tuple(one(d) for d in x.shape)
            return ("TENSOR", shape, str(x.dtype))
        if isinstance(x, (list, tuple)):
            return tuple(one(a) for a in x)
        if isinstance(x, E.IntImm):
            return int(x.value)
        if isinstance(x, E.FloatImm):
            return float(x.value)
        if isinstance(x, E.StringImm):
            return x.value
        if isinstance(x, E.Var):
            raise TemplateError(f"a workload needs constant arguments; {x.name!r} is a variable")
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TemplateError(f"cannot put an argument of type {type(x).__name__} into a workload: "
                            "use tensors, numbers, strings, None or tuples of them")

    return tuple(one(a) for a in args)


def deserialize_args(args) -> list:
    """The inverse of :func:`serialize_args`: ``("TENSOR", shape, dtype)`` becomes a
    placeholder."""
    from ... import te  # noqa: PLC0415

    out = []
    for x in args:
        if isinstance(x, tuple) and len(x) == 3 and x[0] == "TENSOR":
            out.append(te.placeholder(x[1], dtype=x[2]))
        else:
            out.append(x)
    return out


def args_to_workload(args, task_name: str) -> tuple:
    """The workload of calling task ``task_name`` on ``args``."""
    return (task_name,) + serialize_args(args)


def _template_of(task_name) -> TaskTemplate:
    return TASK_TABLE.setdefault(task_name, TaskTemplate())


def _register_task_compute(name, func):
    tmpl = _template_of(name)
    if tmpl.fcompute is not None and tmpl.fcompute is not func:
        raise TemplateError(f"compute of task {name!r} is registered twice")
    tmpl.fcompute = func


def _register_task_schedule(name, func):
    tmpl = _template_of(name)
    if tmpl.fschedule is not None and tmpl.fschedule is not func:
        raise TemplateError(f"schedule of task {name!r} is registered twice")
    tmpl.fschedule = func


def template(task_name: str, func=None):
    """Register ``func(*args) -> (schedule, args)`` as the template of task
    ``task_name``; inside, ``autotvm.get_config()`` is the config to follow."""

    def register(f):
        tmpl = _template_of(task_name)
        if tmpl.fcustomized is not None and tmpl.fcustomized is not f:
            raise TemplateError(f"template {task_name!r} is registered twice")
        tmpl.fcustomized = f

        def wrapper(*args, **kwargs):
            if kwargs:
                raise TemplateError(f"template {task_name!r}: pass its arguments by position (they form the "
                                    "workload)")
            workload = args_to_workload(args, task_name)
            target = _current_target()
            cfg = DispatchContext.current.query(target, workload)
            with ApplyConfig(cfg):  # get_config() inside is this workload's config
                return f(*args)

        wrapper.__name__ = getattr(f, "__name__", task_name)
        wrapper.__doc__ = f.__doc__
        wrapper.task_name = task_name
        return wrapper

    return register(func) if func is not None else register


def _current_target():
    from ...target import Target  # noqa: PLC0415

    return Target.current(allow_none=True)


def get_config():
    """The config the template being built should follow (inside
    ``with ApplyConfig(...)`` or a tuning run, the chosen point; otherwise the
    workload's fallback)."""
    return DispatchContext.current.query(_current_target(), None)
