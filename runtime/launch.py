"""Launch plans: the host side of a CUDA module as plain data, and the one executor.

Building a CUDA module turns each host function into a :class:`LaunchPlan`: a list
of steps (allocate a workspace, bind a value, check a condition, launch a kernel)
whose sizes, scalar arguments and grid and block extents are small
:ref:`formulas <formulas>` over the function's scalar parameters.  Everything a
launch needs that the IR knows -- the order of the kernel's arguments, the
alignment vector accesses need, the dynamic shared memory -- is decided when the
module is built and stored in the plan or in a :class:`KernelSpec`.  Plans are
written into exported modules as JSON; running one needs no compiler and no IR.

:func:`run_plan` executes a plan through a *launcher*: the real GPU launcher (CuPy),
the GPU-semantics emulator on the CPU, or the emulator's checking mode.  A launcher
has these methods::

    alloc(dtype, count)      -> a new array (a workspace)
    address(array)           -> the array's base address (alignment checks)
    launch(spec, grid, block, args)
                             -> run kernel ``spec.name``; ``args``: arrays and ints
    prepare(spec, grid, block, args)   (optional)
                             -> a function of no arguments that makes that launch,
                                with everything it converts converted once

:func:`freeze_plan` resolves a plan once for arguments that never change (the graph
executor's buffers): the steps run, workspaces are allocated, and what is left is the
launches, each prepared by the launcher.  A plan's steps read only the scalar
arguments and the arrays' addresses, never their contents, so the frozen launches
are exactly what :func:`run_plan` would do on every later call.

.. _formulas:

Formulas
    An int, ``{"arg": i}`` (scalar parameter ``i`` of the function), ``{"let": k}``
    (the value bound by the ``k``-th ``Let`` step) or a list ``[op, operand, ...]``
    with ``op`` one of ``+ - * floordiv floormod div mod min max < <= == != > >=
    and or not select``.  ``div``/``mod`` truncate toward zero, ``floordiv``/
    ``floormod`` round down.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field

from ..errors import KernelError, TeccError

#: what every CUDA launch must respect (a GPU refuses larger launches)
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)

_AXES = "xyz"


# ----------------------------------------------------------------------------
# formulas
# ----------------------------------------------------------------------------
def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_mod(a, b):
    return a - b * _trunc_div(a, b)


_BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "floordiv": operator.floordiv,
    "floormod": operator.mod, "div": _trunc_div, "mod": _trunc_mod, "min": min, "max": max,
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
    ">=": operator.ge, "and": lambda a, b: bool(a) and bool(b), "or": lambda a, b: bool(a) or bool(b),
}
_TEXT = {"floordiv": "//", "floormod": "%", "div": "/", "mod": "rem", "and": "&&", "or": "||"}


def evaluate(formula, env: dict) -> int:
    """The value of ``formula`` where ``env`` maps ``("arg", i)``/``("let", k)`` to ints."""
    if isinstance(formula, bool):
        return int(formula)
    if isinstance(formula, int):
        return formula
    if isinstance(formula, dict):
        ((kind, index),) = formula.items()
        return env[(kind, index)]
    op, *operands = formula
    values = [evaluate(x, env) for x in operands]
    if op == "not":
        return int(not values[0])
    if op == "select":
        return values[1] if values[0] else values[2]
    if op in ("div", "mod", "floordiv", "floormod") and values[1] == 0:
        raise KernelError(f"division by zero in the launch formula {formula_text(formula)}")
    return int(_BINARY[op](*values))


def formula_text(formula, names=None) -> str:
    """``formula`` as readable text; ``names`` maps ``("arg", i)`` to parameter names."""
    names = names or {}
    if isinstance(formula, int):
        return str(formula)
    if isinstance(formula, dict):
        ((kind, index),) = formula.items()
        return names.get((kind, index), f"{kind}{index}")
    op, *operands = formula
    parts = [formula_text(x, names) for x in operands]
    if op == "not":
        return f"!{parts[0]}"
    if op == "select":
        return f"({parts[0]} ? {parts[1]} : {parts[2]})"
    if op in ("min", "max"):
        return f"{op}({parts[0]}, {parts[1]})"
    return f"({parts[0]} {_TEXT.get(op, op)} {parts[1]})"


# ----------------------------------------------------------------------------
# plans
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelSpec:
    """What launching one kernel needs: its parameters (``("buffer", dtype)`` or
    ``("scalar", dtype)``), the dynamic shared memory it asks for, and the alignment
    in bytes its vector accesses need of each buffer parameter (by index)."""

    name: str
    params: tuple
    dynamic_shared_bytes: int = 0
    param_align: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "params": [list(p) for p in self.params],
                "dynamic_shared_bytes": self.dynamic_shared_bytes,
                "param_align": {str(k): v for k, v in self.param_align.items()}}

    @staticmethod
    def from_json(d: dict) -> "KernelSpec":
        return KernelSpec(d["name"], tuple(tuple(p) for p in d["params"]), int(d["dynamic_shared_bytes"]),
                          {int(k): int(v) for k, v in d["param_align"].items()})


@dataclass(frozen=True)
class Alloc:
    """Workspace ``slot``: ``count`` elements of ``dtype`` (a global intermediate)."""

    slot: int
    name: str
    dtype: str
    count: object


@dataclass(frozen=True)
class Let:
    """Bind ``value`` to ``{"let": slot}``."""

    slot: int
    name: str
    value: object


@dataclass(frozen=True)
class Assert:
    """Stop the call with ``message`` unless ``condition`` holds."""

    condition: object
    message: str


@dataclass(frozen=True)
class Launch:
    """Launch ``kernel`` on a ``grid`` of blocks of ``block`` threads (formulas, x y z).

    ``args`` follow the kernel's parameters: ``{"arg": i}`` (buffer parameter ``i``
    of the function), ``{"workspace": k}``, or ``{"scalar": formula}``.
    """

    kernel: str
    args: tuple
    grid: tuple
    block: tuple


@dataclass(frozen=True)
class Loop:
    """Run ``body`` (steps) for ``{"let": slot}`` = start, start + 1, ... (``extent``
    times): a serial loop of the host around kernel launches, e.g. the time steps of
    a scan."""

    slot: int
    name: str
    start: object
    extent: object
    body: tuple


_STEPS = {"alloc": Alloc, "let": Let, "assert": Assert, "launch": Launch, "loop": Loop}


def _steps_to_json(steps) -> list:
    out = []
    for s in steps:
        kind = next(k for k, cls in _STEPS.items() if isinstance(s, cls))
        fields = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(s).items()}
        if kind == "loop":
            fields["body"] = _steps_to_json(s.body)
        out.append({"step": kind, **fields})
    return out


def _steps_from_json(items) -> tuple:
    steps = []
    for s in items:
        s = dict(s)
        kind = s.pop("step")
        if kind == "loop":
            s["body"] = _steps_from_json(s["body"])
        cls = _STEPS[kind]
        steps.append(cls(**{k: (tuple(v) if k in ("args", "grid", "block") else v) for k, v in s.items()}))
    return tuple(steps)


def _all_steps(steps):
    for s in steps:
        yield s
        if isinstance(s, Loop):
            yield from _all_steps(s.body)


@dataclass(frozen=True)
class LaunchPlan:
    """The steps of one host function, and the names of its scalar parameters (for
    messages)."""

    name: str
    steps: tuple
    arg_names: tuple = ()

    def to_json(self) -> dict:
        return {"name": self.name, "steps": _steps_to_json(self.steps), "arg_names": list(self.arg_names)}

    @staticmethod
    def from_json(d: dict) -> "LaunchPlan":
        return LaunchPlan(d["name"], _steps_from_json(d["steps"]), tuple(d.get("arg_names", ())))

    def _names(self) -> dict:
        names = {("arg", i): n for i, n in enumerate(self.arg_names)}
        names.update({("let", s.slot): s.name for s in _all_steps(self.steps) if isinstance(s, (Let, Loop))})
        return names

    def text(self) -> str:
        """The plan as readable lines (``get_source()`` of a CUDA module)."""
        names = self._names()
        ws = {s.slot: s.name for s in _all_steps(self.steps) if isinstance(s, Alloc)}
        lines = [f"plan {self.name}({', '.join(self.arg_names)}):"]
        self._text(self.steps, names, ws, lines, "  ")
        return "\n".join(lines)

    def _text(self, steps, names, ws, lines, pad) -> None:
        for s in steps:
            if isinstance(s, Alloc):
                lines.append(f"{pad}{s.name} = workspace({s.dtype}, {formula_text(s.count, names)})")
            elif isinstance(s, Let):
                lines.append(f"{pad}{s.name} = {formula_text(s.value, names)}")
            elif isinstance(s, Assert):
                lines.append(f"{pad}assert {formula_text(s.condition, names)}, {s.message!r}")
            elif isinstance(s, Loop):
                start = formula_text(s.start, names)
                lines.append(f"{pad}for {s.name} in range({start}, {start} + {formula_text(s.extent, names)}):")
                self._text(s.body, names, ws, lines, pad + "  ")
            else:
                args = []
                for a in s.args:
                    ((kind, value),) = a.items()
                    if kind == "arg":
                        args.append(self.arg_names[value])
                    elif kind == "workspace":
                        args.append(ws[value])
                    else:
                        args.append(formula_text(value, names))
                dims = ", ".join(formula_text(x, names) for x in s.grid)
                threads = ", ".join(formula_text(x, names) for x in s.block)
                lines.append(f"{pad}launch {s.kernel}<<<({dims}), ({threads})>>>({', '.join(args)})")


# ----------------------------------------------------------------------------
# the executor
# ----------------------------------------------------------------------------
def launch_dims(plan: LaunchPlan, step: Launch, env: dict):
    """``(grid, block)`` of a launch step, checked against CUDA's launch limits."""
    names = plan._names()
    grid = tuple(evaluate(g, env) for g in step.grid)
    block = tuple(evaluate(b, env) for b in step.block)
    for axis, (g, b) in enumerate(zip(grid, block)):
        xyz = _AXES[axis]
        if g < 1 or g > MAX_GRID_DIMS[axis]:
            hint = " (an empty input?)" if g < 1 else ""
            raise KernelError(
                f"{plan.name}: launch of kernel {step.kernel}: blockIdx.{xyz} extent {g} (from "
                f"{formula_text(step.grid[axis], names)}) is outside [1, {MAX_GRID_DIMS[axis]}]{hint}")
        if b < 1 or b > MAX_BLOCK_DIMS[axis]:
            raise KernelError(
                f"{plan.name}: launch of kernel {step.kernel}: threadIdx.{xyz} extent {b} (from "
                f"{formula_text(step.block[axis], names)}) is outside [1, {MAX_BLOCK_DIMS[axis]}]")
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise KernelError(f"{plan.name}: launch of kernel {step.kernel}: {threads} threads per block; CUDA "
                          f"allows at most {MAX_THREADS_PER_BLOCK}")
    return grid, block


def run_plan(plan: LaunchPlan, kernels: dict, arrays: dict, values: dict, launcher) -> None:
    """Run ``plan`` with ``launcher``.

    Parameters
    ----------
    plan : LaunchPlan
    kernels : dict
        Kernel name -> :class:`KernelSpec`.
    arrays : dict
        Buffer parameter index -> array (as the launcher wants them).
    values : dict
        Scalar parameter index -> int.
    launcher
        See the module docs.
    """
    for spec, grid, block, args in resolve_launches(plan, kernels, arrays, values, launcher):
        launcher.launch(spec, grid, block, args)


def freeze_plan(plan: LaunchPlan, kernels: dict, arrays: dict, values: dict, launcher) -> tuple:
    """The launches of ``plan`` for arguments that stay the same from call to call,
    resolved once: a tuple of functions of no arguments, one per launch in order (the
    launcher's ``prepare``, else its ``launch`` bound to the arguments).  The plan's
    workspaces are allocated here, once; its checks run here (a failing one raises
    now).  Arguments as for :func:`run_plan`."""
    prepare = getattr(launcher, "prepare", None) or (lambda *launch: functools.partial(launcher.launch, *launch))
    return tuple(prepare(*launch) for launch in resolve_launches(plan, kernels, arrays, values, launcher))


def resolve_launches(plan: LaunchPlan, kernels: dict, arrays: dict, values: dict, launcher):
    """Yield ``(spec, grid, block, args)`` for each launch of ``plan`` in order,
    running the steps before it (allocations through ``launcher``, bindings, checks,
    loops) as the iteration reaches them.  Arguments as for :func:`run_plan`."""
    env = {("arg", i): v for i, v in values.items()}
    yield from _launches(plan, plan.steps, kernels, arrays, env, {}, launcher)


def _launches(plan, steps, kernels, arrays, env, workspaces, launcher):
    for step in steps:
        if isinstance(step, Loop):
            start, extent = evaluate(step.start, env), evaluate(step.extent, env)
            for t in range(start, start + extent):
                env[("let", step.slot)] = t
                yield from _launches(plan, step.body, kernels, arrays, env, workspaces, launcher)
        elif isinstance(step, Alloc):
            workspaces[step.slot] = launcher.alloc(step.dtype, max(1, evaluate(step.count, env)))
        elif isinstance(step, Let):
            env[("let", step.slot)] = evaluate(step.value, env)
        elif isinstance(step, Assert):
            if not evaluate(step.condition, env):
                raise KernelError(f"{plan.name} failed: {step.message}")
        else:
            spec = kernels.get(step.kernel)
            if spec is None:
                raise TeccError(f"{plan.name} launches {step.kernel!r}, which is not among the module's "
                                f"kernels {sorted(kernels)}")
            grid, block = launch_dims(plan, step, env)
            args = []
            for k, arg in enumerate(step.args):
                ((kind, value),) = arg.items()
                if kind == "scalar":
                    args.append(evaluate(value, env))
                    continue
                arr = arrays[value] if kind == "arg" else workspaces[value]
                align = spec.param_align.get(k, 1)
                if align > 1 and launcher.address(arr) % align:
                    raise KernelError(
                        f"{plan.name}: kernel {spec.name} loads its parameter {k} with {align}-byte vector "
                        f"accesses, but the array passed is not {align}-byte aligned (an offset view?); "
                        "pass a freshly allocated array")
                args.append(arr)
            yield spec, grid, block, args


__all__ = ["Alloc", "Assert", "KernelSpec", "Launch", "LaunchPlan", "Let", "Loop", "evaluate", "formula_text",
           "freeze_plan", "launch_dims", "resolve_launches", "run_plan", "MAX_THREADS_PER_BLOCK", "MAX_BLOCK_DIMS",
           "MAX_GRID_DIMS"]
