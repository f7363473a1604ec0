"""Code generation for the host side: a split GPU function becomes a launch plan.

``split_host_device`` leaves, for each GPU function, a host function whose body is
workspace allocations, lets, asserts and ``tecc.launch`` calls.  Instead of printing
it as host C, tecc turns it into a :class:`~tecc.runtime.launch.LaunchPlan`: plain
data the runtime executes with no compiler and no IR.  Everything the IR knows that
a launch needs is decided here, once:

* each launch's grid and block extents: the kernel's ``thread_extent`` values with
  the kernel's scalar parameters replaced by the launch's arguments -- formulas over
  the host function's scalar parameters;
* the order and kind of each kernel's arguments, and which of the host function's
  buffers some kernel writes (the runtime copies those back from the GPU).

:func:`kernel_spec` adds what the CUDA printer decided (dynamic shared memory, the
alignment of vector-loaded parameters).
"""
from __future__ import annotations

from ..errors import CompileError
from ..runtime.launch import Alloc, Assert, KernelSpec, Launch, LaunchPlan, Let, Loop
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import keys
from ..tir import stmt as S
from ..tir.analysis import buffer_size, launch_dims, thread_extents, written_params
from ..tir.functor import substitute
from ..tir.printer import to_text

_BINARY = {
    E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Div: "div",
    E.Mod: "mod", E.Min: "min", E.Max: "max", E.LT: "<", E.LE: "<=", E.EQ: "==", E.NE: "!=", E.GT: ">",
    E.GE: ">=", E.And: "and", E.Or: "or",
}


def _integral(dtype) -> bool:
    d = _dt.parse(dtype)
    return d.lanes == 1 and (d.is_integer or d.is_bool)


def formula(expr, env: dict, where: str):
    """The launch-plan formula of integer expression ``expr`` (``env``: Var ->
    ``{"arg": i}`` or ``{"let": k}``)."""
    if isinstance(expr, E.IntImm):
        return int(expr.value)
    if isinstance(expr, E.Var):
        ref = env.get(expr)
        if ref is None or "workspace" in ref:
            raise CompileError(f"{where}: the value {expr.name!r} is not a scalar parameter or let of the host "
                               "function")
        return ref
    op = _BINARY.get(type(expr))
    if op is not None:
        return [op, formula(expr.a, env, where), formula(expr.b, env, where)]
    if isinstance(expr, E.Not):
        return ["not", formula(expr.a, env, where)]
    if isinstance(expr, E.Select):
        return ["select", formula(expr.condition, env, where), formula(expr.true_value, env, where),
                formula(expr.false_value, env, where)]
    if isinstance(expr, E.Cast) and _integral(expr.dtype) and _integral(expr.value.dtype):
        return formula(expr.value, env, where)
    if isinstance(expr, E.Call) and expr.op == "likely":
        return formula(expr.args[0], env, where)
    raise CompileError(f"{where}: the host side computes `{to_text(expr)}`, which a launch plan cannot hold "
                       "(integer arithmetic over the scalar parameters only)")


def kernel_spec(kernel: S.PrimFunc, printed: dict) -> KernelSpec:
    """The :class:`KernelSpec` of ``kernel``; ``printed`` is its entry of
    ``CodeGenCUDA.kernel_info``."""
    params = tuple(("buffer", kernel.buffer_map[p].dtype) if p in kernel.buffer_map else ("scalar", p.dtype)
                   for p in kernel.params)
    return KernelSpec(kernel.name, params, int(printed.get("dynamic_shared_bytes", 0)),
                      {int(k): int(v) for k, v in printed.get("param_align", {}).items()})


class _PlanBuilder:
    def __init__(self, host: S.PrimFunc, kernels: dict):
        self.host = host
        self.kernels = kernels
        self.env = {}        # Var -> {"arg": i} | {"let": k} | {"workspace": k}
        self.buffers = {}    # data Var / param Var -> ("arg", i) or ("workspace", k)
        self.steps = []
        self.written = set()
        self.lets = 0
        self.workspaces = 0
        for i, p in enumerate(host.params):
            buf = host.buffer_map.get(p)
            if buf is None:
                self.env[p] = {"arg": i}
            else:
                self.buffers[p] = self.buffers[buf.data] = ("arg", i)

    def where(self) -> str:
        return f"host function {self.host.name!r}"

    def visit(self, s) -> None:
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                self.visit(x)
        elif isinstance(s, S.Allocate):
            buf = s.buffer
            if (buf.scope or keys.GLOBAL) != keys.GLOBAL:
                raise CompileError(f"{self.where()}: buffer {buf.name!r} in {buf.scope!r} memory is allocated "
                                   "outside any kernel")
            k = self.workspaces
            self.workspaces += 1
            self.steps.append(Alloc(k, buf.name, buf.dtype, formula(buffer_size(buf), self.env, self.where())))
            self.buffers[buf.data] = ("workspace", k)
            self.visit(s.body)
        elif isinstance(s, S.LetStmt):
            k = self.lets
            self.lets += 1
            self.steps.append(Let(k, s.var.name, formula(s.value, self.env, self.where())))
            self.env[s.var] = {"let": k}
            self.visit(s.body)
        elif isinstance(s, S.AssertStmt):
            self.steps.append(Assert(formula(s.condition, self.env, self.where()), s.message))
            self.visit(s.body)
        elif isinstance(s, S.For) and s.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED):
            # a serial loop around launches (the time steps of a scan)
            k = self.lets
            self.lets += 1
            start = formula(s.min, self.env, self.where())
            extent = formula(s.extent, self.env, self.where())
            self.env[s.loop_var] = {"let": k}
            outer, self.steps = self.steps, []
            self.visit(s.body)
            body, self.steps = tuple(self.steps), outer
            self.steps.append(Loop(k, s.loop_var.name, start, extent, body))
        elif isinstance(s, S.AttrStmt):
            self.visit(s.body)
        elif isinstance(s, S.Evaluate):
            value = s.value
            if isinstance(value, E.Call) and value.op == keys.LAUNCH:
                self.launch(value)
            elif isinstance(value, E.Call) and value.op == keys.CALL_PACKED:
                name = value.args[0].value if value.args and isinstance(value.args[0], E.StringImm) else "?"
                raise CompileError(
                    f"{self.where()}: calls the packed function {name!r} outside any kernel, but the host side "
                    "of a CUDA module is a launch plan (allocations and kernel launches); call it from a "
                    "function built for 'llvm' or 'c'")
            elif not isinstance(value, (E.IntImm, E.FloatImm)):
                raise CompileError(f"{self.where()}: cannot run `{to_text(s)}` on the host")
        else:
            raise CompileError(f"{self.where()}: a {type(s).__name__} at host level "
                               f"({to_text(s).splitlines()[0]}); the host side only allocates workspaces and "
                               "launches kernels")

    def launch(self, call) -> None:
        name_imm, *exprs = call.args
        name = name_imm.value
        kernel = self.kernels.get(name)
        if kernel is None:
            raise CompileError(f"{self.where()} launches {name!r}, which is not among the kernels "
                               f"{sorted(self.kernels)}")
        if len(exprs) != len(kernel.params):
            raise CompileError(f"{self.where()}: the launch of {name} passes {len(exprs)} arguments for "
                               f"{len(kernel.params)} parameters")
        stored = written_params(kernel)
        args, scalars = [], {}
        for k, (param, arg) in enumerate(zip(kernel.params, exprs)):
            if param not in kernel.buffer_map:
                scalars[param] = arg
                args.append({"scalar": formula(arg, self.env, f"{self.where()}, launch of {name}")})
                continue
            ref = self.buffers.get(arg) if isinstance(arg, E.Var) else None
            if ref is None:
                raise CompileError(f"{self.where()}: the launch of {name} passes `{to_text(arg)}` for the buffer "
                                   f"{kernel.buffer_map[param].name!r}; it must be a buffer or workspace")
            kind, index = ref
            args.append({kind: index})
            if kind == "arg" and k in stored:
                self.written.add(index)
        grid, block = launch_dims(thread_extents(kernel))
        where = f"{self.where()}, launch of {name}"
        grid = tuple(formula(substitute(g, scalars), self.env, where) for g in grid)
        block = tuple(formula(substitute(b, scalars), self.env, where) for b in block)
        self.steps.append(Launch(name, tuple(args), grid, block))


def build_plan(host: S.PrimFunc, kernels: dict):
    """``(LaunchPlan, written)``: the plan of ``host`` and the indices of its buffer
    parameters that some kernel writes.

    Raises
    ------
    CompileError
        When the host function does something a plan cannot hold (a loop, a float
        computation, a launch of an unknown kernel).
    """
    builder = _PlanBuilder(host, kernels)
    builder.visit(host.body)
    names = tuple(p.name for p in host.params)
    return LaunchPlan(host.name, tuple(builder.steps), names), builder.written
