"""Run CUDA-scheduled TIR on the CPU with CUDA semantics, and check it.

:func:`run_kernels` executes a host plan (a host PrimFunc and its device functions,
see ``notes/GPU.md``) on numpy arrays: workspaces are allocated, scalars bound, and
every ``tecc.launch`` runs its kernel for the whole grid through compiled C in which
each block's threads run in loops split at the barriers
(:mod:`.gpu_sim_codegen`).  Blocks are independent and run in parallel (OpenMP).

:func:`check_kernels` runs the same plan in checking mode: a few blocks of every
launch are interpreted (:mod:`.gpu_check`) to find out-of-bounds accesses, races on
shared and global memory and reads of uninitialized shared memory; the launch then runs in C so that later kernels see real data.

>>> run_kernels(host, {"add_kernel0": kernel}, [a, b, c])
>>> for f in check_kernels(host, kernels, [a, b, c]):
...     print(f)
"""
from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict

import numpy as np

from ..errors import RuntimeArgError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.arith import EvalError, evaluate
from ..tir.printer import to_text
from ..tir.analysis.interp import numpy_dtype as _np_dtype
from .compiler import compile_c, load_library
from .bank_conflicts import BankCounter, SharedAccessStat
from .gpu_check import Finding, FindingLog, check_launch, pick_blocks
from .gpu_sim_codegen import SimError, SimKernel, generate_sim_c, split_kernel

__all__ = ["run_kernels", "check_kernels", "shared_bank_report", "SimError", "Finding",
           "SharedAccessStat", "simulated_source"]

#: CUDA limits checked at every launch (a real GPU refuses larger launches)
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)

_CTYPES = {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


# ----------------------------------------------------------------------------
# compiled kernels, memoized per process
# ----------------------------------------------------------------------------
class _CompiledKernel:
    """One kernel split at its barriers, printed as C, compiled and loaded."""

    def __init__(self, func: S.PrimFunc):
        self.sim = split_kernel(func)
        self.source = generate_sim_c(self.sim)
        self._fn = None
        self._lib = None
        self._lock = threading.Lock()

    def function(self):
        with self._lock:
            if self._fn is None:
                path = compile_c(self.source, "c", "gpusim_" + self.sim.name)
                lib = load_library(path)
                fn = getattr(lib, self.sim.name)
                fn.restype = ctypes.c_int32
                argtypes = []
                for p in self.sim.func.params:
                    if p in self.sim.func.buffer_map or _dt.parse(p.dtype).is_handle:
                        argtypes.append(ctypes.c_void_p)
                    else:
                        argtypes.append(_CTYPES[p.dtype])
                fn.argtypes = argtypes
                lib.tecc_get_last_error.restype = ctypes.c_char_p
                self._lib, self._fn = lib, fn
        return self._fn

    def run(self, values: list) -> None:
        fn = self.function()
        cargs = []
        for p, v in zip(self.sim.func.params, values):
            if p in self.sim.func.buffer_map:
                cargs.append(ctypes.c_void_p(v.ctypes.data))
            else:
                cargs.append(v)
        if fn(*cargs) != 0:
            msg = self._lib.tecc_get_last_error().decode("utf-8", "replace")
            raise SimError(f"kernel {self.sim.name} failed: {msg}")


_CACHE_SIZE = 256
_cache: OrderedDict = OrderedDict()   # id(func) -> (func, _CompiledKernel)
_cache_lock = threading.Lock()


def _compiled(func: S.PrimFunc) -> _CompiledKernel:
    key = id(func)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is func:
            _cache.move_to_end(key)
            return hit[1]
    kernel = _CompiledKernel(func)  # outside the lock: splitting may raise SimError
    with _cache_lock:
        _cache[key] = (func, kernel)  # the func is kept alive, so its id stays unique
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return kernel


def simulated_source(func: S.PrimFunc) -> str:
    """The C source that runs device function ``func`` on the CPU (for inspection)."""
    return _compiled(func).source


# ----------------------------------------------------------------------------
# the host plan
# ----------------------------------------------------------------------------
def _eval_int(expr, env, what):
    try:
        return evaluate(expr, env)
    except EvalError as err:
        raise SimError(f"cannot evaluate {what} `{to_text(expr)}`: {err}") from None


class _HostPlan:
    """Walks a host function: workspaces, lets, asserts and launches."""

    def __init__(self, host: S.PrimFunc, kernels: dict, args: list, launch):
        self.host = host
        self.kernels = kernels
        self.launch_fn = launch
        self.env = {}     # scalar Var -> int
        self.arrays = {}  # handle Var (param or data) -> flat numpy array
        self._bind_args(list(args))

    def _bind_args(self, args):
        host = self.host
        buffers = [p for p in host.params if p in host.buffer_map]
        scalars = [p for p in host.params if p not in host.buffer_map]
        if len(args) < len(buffers) or len(args) > len(host.params):
            raise RuntimeArgError(
                f"{host.name} takes {len(buffers)} arrays and {len(scalars)} scalars "
                f"({', '.join(p.name for p in host.params)}), got {len(args)} arguments")
        arrays, ints = args[:len(buffers)], args[len(buffers):]
        for p, value in zip(scalars, ints):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise RuntimeArgError(f"{host.name}: scalar argument {p.name} must be an int, "
                                      f"got {type(value).__name__}")
            self.env[p] = int(value)
        for p, arr in zip(buffers, arrays):
            buf = host.buffer_map[p]
            if not isinstance(arr, np.ndarray):
                raise RuntimeArgError(f"{host.name}: argument {buf.name} must be a numpy array, "
                                      f"got {type(arr).__name__}")
            if not arr.flags.c_contiguous:
                raise RuntimeArgError(f"{host.name}: argument {buf.name} must be C-contiguous "
                                      "(use numpy.ascontiguousarray)")
            if arr.dtype != _np_dtype(buf.dtype):
                raise RuntimeArgError(f"{host.name}: argument {buf.name} has dtype {arr.dtype}, "
                                      f"expected {buf.dtype}")
            # symbolic dims not passed as ints are read off the arrays
            if arr.ndim == len(buf.shape):
                for extent, n in zip(buf.shape, arr.shape):
                    if isinstance(extent, E.Var) and extent not in self.env:
                        self.env[extent] = int(n)
            flat = arr.reshape(-1)
            self.arrays[p] = flat
            self.arrays[buf.data] = flat
        for p in scalars:
            if p not in self.env:
                raise RuntimeArgError(f"{host.name}: no value for the scalar parameter {p.name}")
        for p, arr in zip(buffers, arrays):
            buf = host.buffer_map[p]
            size = 1
            for extent in buf.shape:
                size *= _eval_int(extent, self.env, f"the shape of {buf.name}")
            if arr.size != size:
                shape = ", ".join(to_text(x) for x in buf.shape)
                raise RuntimeArgError(f"{host.name}: argument {buf.name} has shape {arr.shape}, "
                                      f"expected [{shape}] ({size} elements)")

    def run(self):
        self.visit(self.host.body)

    def visit(self, s):
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                self.visit(x)
        elif isinstance(s, S.LetStmt):
            self.env[s.var] = _eval_int(s.value, self.env, f"the host value of {s.var.name}")
            self.visit(s.body)
        elif isinstance(s, S.AssertStmt):
            if not _eval_int(s.condition, self.env, "a host assertion"):
                raise RuntimeArgError(f"{self.host.name}: {s.message}")
            self.visit(s.body)
        elif isinstance(s, S.Allocate):
            buf = s.buffer
            size = 1
            for extent in buf.shape:
                size *= _eval_int(extent, self.env, f"the size of workspace {buf.name}")
            self.arrays[buf.data] = np.zeros(size, dtype=_np_dtype(buf.dtype))
            self.visit(s.body)
            del self.arrays[buf.data]
        elif isinstance(s, S.IfThenElse):
            if _eval_int(s.condition, self.env, "a host condition"):
                self.visit(s.then_case)
            elif s.else_case is not None:
                self.visit(s.else_case)
        elif isinstance(s, S.For):
            lo = _eval_int(s.min, self.env, "a host loop start")
            n = _eval_int(s.extent, self.env, "a host loop extent")
            for i in range(lo, lo + n):
                self.env[s.loop_var] = i
                self.visit(s.body)
            self.env.pop(s.loop_var, None)
        elif isinstance(s, S.AttrStmt):
            self.visit(s.body)
        elif isinstance(s, S.Evaluate):
            value = s.value
            if isinstance(value, E.Call) and value.op == "tecc.launch":
                self.launch(value)
            elif not isinstance(value, (E.IntImm, E.FloatImm)):
                raise SimError(f"host function {self.host.name}: cannot run `{to_text(s)}`")
        else:
            raise SimError(f"host function {self.host.name}: unexpected {type(s).__name__} in "
                           f"the host plan: {to_text(s).splitlines()[0]}")

    def launch(self, call):
        name_imm, *exprs = call.args
        name = name_imm.value
        func = self.kernels.get(name)
        if func is None:
            raise SimError(f"host function {self.host.name} launches {name!r}, which is not among "
                           f"the kernels ({', '.join(sorted(self.kernels)) or 'none'})")
        if len(exprs) != len(func.params):
            raise SimError(f"launch of {name}: {len(exprs)} arguments for {len(func.params)} "
                           "parameters")
        values = []
        scalar_env = {}
        for p, arg in zip(func.params, exprs):
            buf = func.buffer_map.get(p)
            if buf is None:
                v = _eval_int(arg, self.env, f"argument {p.name} of {name}")
                scalar_env[p] = v
                values.append(v)
                continue
            arr = self.arrays.get(arg) if isinstance(arg, E.Var) else None
            if arr is None:
                raise SimError(f"launch of {name}: argument {p.name} is `{to_text(arg)}`, not a "
                               "host buffer or workspace")
            if arr.dtype != _np_dtype(buf.dtype):
                raise SimError(f"launch of {name}: buffer {buf.name} is {buf.dtype} in the kernel "
                               f"but the array passed is {arr.dtype}")
            values.append(arr)
        # a kernel's buffer must fit in the array passed (else C would overrun it)
        for p, v in zip(func.params, values):
            buf = func.buffer_map.get(p)
            if buf is None:
                continue
            size = 1
            for extent in buf.shape:
                size *= _eval_int(extent, scalar_env, f"the size of {buf.name} in {name}")
            if size > v.size:
                raise SimError(f"launch of {name}: the kernel sees {buf.name} as {size} elements "
                               f"but the array passed holds {v.size}")
        self.launch_fn(func, values, scalar_env)


def _launch_dims(sim: SimKernel, scalar_env: dict):
    """Concrete (grid, block) dims of a launch, checked against CUDA's limits."""
    grid = tuple(_eval_int(g, scalar_env, f"a grid extent of {sim.name}") for g in sim.grid)
    block = tuple(_eval_int(b, scalar_env, f"a block extent of {sim.name}") for b in sim.block)
    for axis, (g, b) in enumerate(zip(grid, block)):
        xyz = "xyz"[axis]
        if g < 1 or g > MAX_GRID_DIMS[axis]:
            raise SimError(f"launch of {sim.name}: blockIdx.{xyz} extent {g} is outside "
                           f"[1, {MAX_GRID_DIMS[axis]}] (an invalid CUDA launch configuration)")
        if b < 1 or b > MAX_BLOCK_DIMS[axis]:
            raise SimError(f"launch of {sim.name}: threadIdx.{xyz} extent {b} is outside "
                           f"[1, {MAX_BLOCK_DIMS[axis]}] (an invalid CUDA launch configuration)")
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise SimError(f"launch of {sim.name}: {threads} threads per block; CUDA allows at most "
                       f"{MAX_THREADS_PER_BLOCK}")
    return grid, block


# ----------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------
def run_kernels(host_func: S.PrimFunc, kernels: dict, args: list) -> None:
    """Run a host plan and its kernels on the CPU with CUDA semantics.

    Parameters
    ----------
    host_func : PrimFunc
        The host function (``attrs["tecc.host"]``): workspaces, lets, asserts and
        ``tecc.launch`` calls.
    kernels : dict
        Kernel name -> device PrimFunc.
    args : list
        C-contiguous numpy arrays for the host's buffer parameters (in order), then
        Python ints for its scalar parameters.  Outputs are written in place.

    Raises
    ------
    SimError
        Undefined behaviour the simulator can see before running (a barrier under
        thread-dependent control flow, an invalid launch configuration) or a failed
        assertion inside a kernel.
    RuntimeArgError
        Wrong arguments (count, dtype, shape, contiguity).
    """
    def launch(func, values, scalar_env):
        kernel = _compiled(func)
        _launch_dims(kernel.sim, scalar_env)
        kernel.run(values)

    _HostPlan(host_func, kernels, args, launch).run()


def check_kernels(host_func: S.PrimFunc, kernels: dict, args: list, max_threads_checked=None,
                  max_blocks: int = 3, max_findings: int = 5, banks=None) -> list:
    """Run a host plan in checking mode: out-of-bounds accesses, races, uninitialized reads.

    Every launch interprets a few of its blocks (the first two, then spread out to the
    last) on copies of the arrays, with every access bounds-checked, the readers and
    writers of every element of shared memory and of the global buffers the kernel
    writes tracked between barriers and across blocks, and reads of shared elements
    that no thread wrote reported.  The whole launch then
    runs through the compiled simulator (so later kernels see real data) unless an
    out-of-bounds access was found; then it is skipped.  Blocks that were not
    interpreted are not checked: an out-of-bounds access only they make still reaches
    the C run (as it would reach the GPU).  Races between blocks are found only among
    the interpreted ones; races between launches cannot happen (launches are ordered).

    Parameters
    ----------
    host_func, kernels, args
        As for :func:`run_kernels`.
    max_threads_checked : int, optional
        At most this many threads interpreted per launch (whole blocks, at least one).
    max_blocks : int or None
        At most this many blocks interpreted per launch (None: all).
    max_findings : int
        Stop after this many findings of each kind (one per offending statement).
    banks : bank_conflicts.BankCounter, optional
        Also count the wavefronts of every warp-wide shared access (see
        :func:`shared_bank_report`).

    Returns
    -------
    list of Finding
        Empty when nothing was found.
    """
    log = FindingLog(max_findings)

    def launch(func, values, scalar_env):
        kernel = _compiled(func)
        grid, block = _launch_dims(kernel.sim, scalar_env)
        nblocks = grid[0] * grid[1] * grid[2]
        threads = block[0] * block[1] * block[2]
        blocks = pick_blocks(nblocks, max_blocks, threads, max_threads_checked)
        out_of_bounds = check_launch(kernel.sim, values, grid, block, blocks, log, banks)
        if log.full():
            raise _PlanDone()
        if not out_of_bounds:
            kernel.run(values)

    try:
        _HostPlan(host_func, kernels, args, launch).run()
    except _PlanDone:
        pass
    return list(log.findings)


def shared_bank_report(host_func: S.PrimFunc, kernels: dict, args: list, max_blocks: int = 1) -> list:
    """Shared-memory bank conflicts of a host plan, per load and store statement.

    Runs :func:`check_kernels` on ``max_blocks`` blocks of every launch, rebuilding
    each warp-wide shared access and counting the wavefronts it takes (see
    :mod:`.bank_conflicts`).  Problems the check finds are raised, since a kernel
    that races or reads out of bounds has no meaningful bank behaviour.

    Returns
    -------
    list of SharedAccessStat
        One per shared load/store statement, the worst conflict first.
    """
    banks = BankCounter()
    findings = check_kernels(host_func, kernels, args, max_blocks=max_blocks, banks=banks)
    if findings:
        raise SimError("the kernels have problems to fix before their bank conflicts mean anything:\n"
                       + "\n".join(str(f) for f in findings))
    return banks.stats()


class _PlanDone(Exception):
    """check_kernels found enough of every kind of problem."""
