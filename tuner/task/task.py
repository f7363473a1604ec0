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

import sys

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
        self.fcanonical = None  # serialized args -> the form the workload keeps (optional)

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


def canonical_args(task_name: str, args: tuple) -> tuple:
    """Serialized ``args`` of task ``task_name`` in the one form its workload keeps
    them (a convolution's padding ``1`` or ``(1, 1)`` as ``(1, 1, 1, 1)``, as a
    model's layer has it), when the task registered such a form
    (``register_topi_compute(..., canonical=)``); else as they are."""
    tmpl = TASK_TABLE.get(task_name)
    canonical = tmpl.fcanonical if tmpl is not None else None
    return tuple(canonical(args)) if canonical is not None else args


def args_to_workload(args, task_name: str) -> tuple:
    """The workload of calling task ``task_name`` on ``args``."""
    return (task_name,) + canonical_args(task_name, serialize_args(args))


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


# ---------------------------------------------------------------------------------
# tasks
# ---------------------------------------------------------------------------------
class Task:
    """A tuning task: one template applied to one workload on one target.

    Attributes
    ----------
    name : str
        The template's task name.
    args : tuple
        The workload's arguments as plain data (tensors as ``("TENSOR", shape, dtype)``).
    target, target_host : Target
    config_space : ConfigSpace
        The knobs the template defines for these arguments (set by :func:`create`).
    flop : float
        Floating-point operations of one run: the template's ``cfg.add_flop`` count,
        else what :func:`compute_flop` counts in the compute.
    """

    def __init__(self, name, args, target=None, target_host=None):
        self.name = name
        self.args = canonical_args(name, serialize_args(args))
        self.kwargs = {}
        self.func = TASK_TABLE.get(name)  # None for a task read from records whose template is not imported
        self.target = _as_target(target) if target is not None else None
        self.target_host = _as_target(target_host) if target_host is not None else None
        self.config_space = None
        self.flop = None

    @property
    def workload(self) -> tuple:
        """``(name, *args)``: what records and dispatch contexts key configs by."""
        return (self.name,) + self.args

    def instantiate(self, config):
        """``(schedule, tensors)`` of the template under ``config`` (a point of the
        space), built for this task's target."""
        from ...target import Target  # noqa: PLC0415

        if self.func is None:
            self.func = TASK_TABLE.get(self.name)
            if self.func is None:
                raise TemplateError(_unregistered(self.name))
        config.flop = 0
        with ApplyConfig(config):
            if self.target is not None:
                with Target(self.target):
                    sch, arg_bufs = self.func(*self.args)
            else:
                sch, arg_bufs = self.func(*self.args)
        if not config.valid():
            from .space import InstantiationError  # noqa: PLC0415

            raise InstantiationError("; ".join(config.errors))
        return sch, arg_bufs

    # a task crosses to worker processes by value: the template is found again by name
    def __getstate__(self):
        return {"name": self.name, "args": self.args, "kwargs": self.kwargs, "config_space": self.config_space,
                "flop": self.flop, "target": str(self.target) if self.target is not None else None,
                "target_host": str(self.target_host) if self.target_host is not None else None}

    def __setstate__(self, state):
        self.name, self.args, self.kwargs = state["name"], state["args"], state["kwargs"]
        self.func = TASK_TABLE.get(self.name)
        self.config_space, self.flop = state["config_space"], state["flop"]
        self.target = _as_target(state["target"]) if state["target"] is not None else None
        self.target_host = _as_target(state["target_host"]) if state["target_host"] is not None else None

    def __repr__(self):
        return (f"Task(func_name={self.name}, args={self.args!r}, kwargs={self.kwargs}, "
                f"workload={self.workload!r})")


#: the target suffixes of topi's task names ("conv2d_nchw.cuda", "dense_pack.x86")
_TOPI_SUFFIXES = ("cuda", "x86", "generic", "cpu", "arm_cpu", "gpu")


def _unregistered(name) -> str:
    if "." in name and name.rsplit(".", 1)[1] in _TOPI_SUFFIXES and "tecc.topi" not in sys.modules:
        return (f"no template is registered as {name!r}: topi's tasks are registered when tecc.topi is "
                "imported; add `from tecc import topi` before creating the task")
    return (f"no template is registered as {name!r}; register one with @autotvm.template({name!r}) (or "
            "autotvm.register_topi_compute/_schedule), or import the module that defines it")


def _as_target(target):
    from ...target import Target  # noqa: PLC0415

    if isinstance(target, Target):
        return target
    try:
        return Target(target)
    except Exception as e:  # noqa: BLE001 -- re-raised with the task's words
        raise TemplateError(f"unknown target {target!r}: {e}") from None


def create(task_name, args, target, target_host=None):
    """The task of template ``task_name`` on ``args`` for ``target``, with its config
    space (collected by running the template once) and its flop count.

    Raises
    ------
    TemplateError
        If no template is registered as ``task_name``, the target is unknown, or the
        template raised while its knobs were collected (the message says which).
    """
    from ...target import Target  # noqa: PLC0415
    from .space import ConfigSpace  # noqa: PLC0415

    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    if task_name not in TASK_TABLE:
        raise TemplateError(_unregistered(task_name))
    task = Task(task_name, args, target=target, target_host=target_host)
    if task.target is None:
        raise TemplateError(f"autotvm.task.create({task_name!r}): give a target (\"llvm\" or \"cuda\")")
    space = ConfigSpace()
    space.code_hash = None
    from .space import InstantiationError  # noqa: PLC0415

    try:
        with ApplyConfig(space), Target(task.target):
            sch, arg_bufs = task.func(*task.args)
    except InstantiationError as e:  # a knob that cannot be defined: no space at all
        raise TemplateError(f"template {task_name!r}, workload {task.workload!r}: {e}") from e
    except TeccError:
        raise
    except Exception as e:  # noqa: BLE001 -- the user's template failed; say where
        raise TemplateError(f"template {task_name!r} raised {type(e).__name__} while its knobs were collected "
                            f"for workload {task.workload!r}: {e}") from e
    for name, knob in space.space_map.items():
        if len(knob) == 0:
            raise TemplateError(f"template {task_name!r}: knob {name!r} has no values; give it at least one "
                                "candidate")
    task.config_space = space
    task.flop = space.flop or compute_flop(sch)
    return task


# ---------------------------------------------------------------------------------
# flop counting
# ---------------------------------------------------------------------------------
def compute_flop(sch) -> float:
    """Floating-point operations of the computes of ``sch``: per compute, its output
    points times the reduction's points times the arithmetic of its body (a
    reduction's combiner counts once per point).  Integer arithmetic and index
    expressions count nothing.  0 when there is no float arithmetic."""
    from ...te.tensor import ComputeOp  # noqa: PLC0415
    from ...tir import expr as E  # noqa: PLC0415

    arith = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Max, E.Min)
    compare = (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE)

    def is_float(e) -> bool:
        return str(getattr(e, "dtype", "")).startswith(("float", "bfloat"))

    def count(e) -> int:
        if isinstance(e, E.Reduce):
            body = sum(count(s) for s in e.source)
            combiner = sum(count(r) for r in e.combiner.result)
            return body + max(combiner, 1 if any(is_float(s) for s in e.source) else 0)
        if isinstance(e, arith):
            return (1 if is_float(e) else 0) + count(e.a) + count(e.b)
        if isinstance(e, compare):
            return (1 if is_float(e.a) else 0) + count(e.a) + count(e.b)
        if isinstance(e, E.Select):
            return count(e.condition) + count(e.true_value) + count(e.false_value)
        if isinstance(e, E.Cast):
            return count(e.value)
        if isinstance(e, E.Call):
            return (1 if is_float(e) else 0) + sum(count(a) for a in e.args)
        if isinstance(e, E.ProducerLoad):
            return 0
        return 0

    total = 0.0
    for stage in sch.stages:
        op = stage.op
        if not isinstance(op, ComputeOp):
            continue
        points = 1
        for iv in op.axis:
            ext = E.const_int_value(iv.dom.extent)
            if ext is None:
                raise TemplateError(f"compute_flop: stage {op.name!r} has a symbolic extent; count the flops "
                                    "in the template with cfg.add_flop(...)")
            points *= ext
        per_point = 0
        for body in op.body:
            if isinstance(body, E.Reduce):
                rpoints = 1
                for iv in body.axis:
                    rpoints *= E.const_int_value(iv.dom.extent) or 0
                per_point += rpoints * count(body)
            else:
                per_point += count(body)
        total += points * per_point
    return float(total)
