"""The GPU-semantics emulator: CUDA kernels run, and are checked, on the CPU.

Every kernel of a CUDA module is rewritten for block-at-a-time execution
(:mod:`.split`: the threads of a block run in loops split at the barriers, per-thread
state that crosses a barrier gets a slot per thread), printed as C (:mod:`.codegen`)
and compiled into one shared library whose function ``<kernel>(params...)`` runs the
kernel's whole grid, the blocks in parallel (OpenMP).  The module runs its launch
plans through :class:`tecc.runtime.cuda_module.EmulatedLauncher` on that library --
the same plan executor as on a GPU.

Checking mode (:class:`GPUChecker`, behind ``CUDAModule.check`` and
``shared_memory_report``) runs the same plan through a checking launcher: a few
blocks of every launch run with every access checked (:mod:`.check`) to find
out-of-bounds accesses, races on shared and global memory and reads of
uninitialized shared memory -- compiled, in a second library whose kernels are
instrumented (:mod:`.check_codegen`) -- and for ``shared_memory_report``
interpreted, counting bank conflicts (:mod:`.bank_conflicts`); the whole launch
then runs in the emulator's library so that later kernels see real data.

>>> emu = Emulation(kernels)                # kernels: the module's device PrimFuncs
>>> emu.library_path()                      # compiled on first use, then cached
"""
from __future__ import annotations

import threading
import warnings

import numpy as np

from ...runtime import dtypes
from ...runtime.cuda_module import EmulatedLauncher
from ...runtime.launch import run_plan
from ..check import FindingLog, StopCheck
from ..compiler import compile_c
from .bank_conflicts import BankCounter, SharedAccessStat
from .check import CompiledChecks, InterpretedCheckWarning, interpret_launch, pick_blocks
from .codegen import CodeGenSim, emulation_source
from .split import SimError, SimKernel, split_kernel

__all__ = ["Emulation", "GPUChecker", "InterpretedCheckWarning", "SimError", "SimKernel", "SharedAccessStat",
           "CodeGenSim", "emulation_source", "split_kernel"]


class Emulation:
    """The emulator's library for the kernels of one module (built once, on demand).

    Parameters
    ----------
    kernels : list of PrimFunc
        Device functions as the CUDA pipeline leaves them.
    """

    def __init__(self, kernels):
        self.kernels = list(kernels)
        self._sims = None
        self._source = None
        self._path = None
        self._checks = None
        self._lock = threading.Lock()
        self._checks_lock = threading.Lock()

    def sims(self) -> dict:
        """Kernel name -> :class:`SimKernel` (raises :class:`SimError` for a kernel the
        emulator cannot run, such as a barrier under thread-dependent control flow)."""
        with self._lock:
            if self._sims is None:
                self._sims = {k.name: split_kernel(k) for k in self.kernels}
        return self._sims

    def source(self) -> str:
        """The C source of the library (for inspection)."""
        if self._source is None:
            self._source = emulation_source(self.sims().values())
        return self._source

    def library_path(self) -> str:
        """The compiled library (from the compile cache when it was built before)."""
        if self._path is None:
            source = self.source()
            name = "gpuemu_" + (self.kernels[0].name if self.kernels else "empty")
            self._path = compile_c(source, "c", name)
        return self._path

    def checks(self) -> CompiledChecks:
        """The compiled checker of the kernels (its C printed on first use, compiled on
        its first check)."""
        with self._checks_lock:
            if self._checks is None:
                self._checks = CompiledChecks(self.sims())
        return self._checks


class _CheckingLauncher:
    """A launcher (see :mod:`tecc.runtime.launch`) that checks a few blocks of every
    launch, then runs the launch in the emulator.  The blocks run compiled, or
    interpreted when bank conflicts are counted (``banks``) or ``interpret(kernel
    name)`` is true."""

    def __init__(self, emulation: Emulation, log: FindingLog, max_blocks, max_threads, banks, interpret):
        self.emulation = emulation
        self.sims = emulation.sims()
        self._run = None
        self.log = log
        self.max_blocks = max_blocks
        self.max_threads = max_threads
        self.banks = banks
        self.interpret = interpret

    def alloc(self, dtype, count):
        return np.zeros((count,), dtype=dtypes.storage(dtype))

    def address(self, arr) -> int:
        return arr.ctypes.data

    def launch(self, spec, grid, block, args) -> None:
        sim = self.sims[spec.name]
        nblocks = grid[0] * grid[1] * grid[2]
        threads = block[0] * block[1] * block[2]
        blocks = pick_blocks(nblocks, self.max_blocks, threads, self.max_threads)
        if self.banks is None and not self.interpret(spec.name):
            out_of_bounds = self.emulation.checks().check_launch(sim, list(args), grid, block, blocks, self.log)
        else:
            out_of_bounds = interpret_launch(sim, list(args), grid, block, blocks, self.log, self.banks)
        if self.log.full():
            raise StopCheck()
        if not out_of_bounds:  # an out-of-bounds launch would corrupt memory in C
            if self._run is None:
                self._run = EmulatedLauncher(self.emulation.library_path())
            self._run.launch(spec, grid, block, args)


class GPUChecker:
    """The checker a CUDA module gets from ``build_cuda`` (see ``CUDAModule.check``).

    Attributes
    ----------
    interpreted : dict
        Kernel name -> why ``check`` interprets it instead of running it compiled
        (filled as kernels are checked; each is warned about once, with an
        :class:`InterpretedCheckWarning`).
    """

    def __init__(self, plans: dict, kernels: dict, emulation: Emulation):
        self.plans = plans
        self.kernels = kernels
        self.emulation = emulation
        self.interpreted = {}

    def _interpret(self, name: str) -> bool:
        """Must kernel ``name`` be interpreted?  Records and warns the first time."""
        checks = self.emulation.checks()
        if checks.handles(name):
            return False
        if name not in self.interpreted:
            reason = checks.refused[name]
            self.interpreted[name] = reason
            warnings.warn(f"{reason}: the compiled checker cannot follow that, so the kernel is checked by the "
                          "TIR interpreter (slow: check it on small shapes)", InterpretedCheckWarning, stacklevel=2)
        return True

    def check(self, name: str, copies: dict, values: dict, arrays=None, max_blocks=3, max_threads=None,
              max_findings: int = 5, bank_report: bool = False, interpret: bool = False, **_options):
        """Findings of a checking run of function ``name`` on ``copies`` (host arrays by
        parameter index); with ``bank_report``, the bank-conflict statistics instead.
        ``interpret`` checks every kernel with the reference interpreter (slow: for
        differential tests of the compiled checker)."""
        log = FindingLog(max_findings)
        banks = BankCounter() if bank_report else None
        which = (lambda _name: True) if interpret else self._interpret
        launcher = _CheckingLauncher(self.emulation, log, max_blocks, max_threads, banks, which)
        try:
            run_plan(self.plans[name], self.kernels, copies, values, launcher)
        except StopCheck:
            pass
        if not bank_report:
            return list(log.findings)
        if log.findings:
            raise SimError("the kernels have problems to fix before their bank conflicts mean anything:\n"
                           + "\n".join(str(f) for f in log.findings))
        return banks.stats()
