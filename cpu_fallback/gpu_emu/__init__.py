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
blocks of every launch are interpreted (:mod:`.check`) to find out-of-bounds
accesses, races on shared and global memory and reads of uninitialized shared
memory, and bank conflicts are counted (:mod:`.bank_conflicts`); the whole launch
then runs in the library so that later kernels see real data.

>>> emu = Emulation(kernels)                # kernels: the module's device PrimFuncs
>>> emu.library_path()                      # compiled on first use, then cached
"""
from __future__ import annotations

import threading

import numpy as np

from ...runtime import dtypes
from ...runtime.cuda_module import EmulatedLauncher
from ...runtime.launch import run_plan
from ..check import FindingLog, StopCheck
from ..compiler import compile_c
from .bank_conflicts import BankCounter, SharedAccessStat
from .check import check_launch, pick_blocks
from .codegen import CodeGenSim, emulation_source
from .split import SimError, SimKernel, split_kernel

__all__ = ["Emulation", "GPUChecker", "SimError", "SimKernel", "SharedAccessStat", "CodeGenSim",
           "emulation_source", "split_kernel"]


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
        self._lock = threading.Lock()

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


class _CheckingLauncher:
    """A launcher (see :mod:`tecc.runtime.launch`) that interprets a few blocks of
    every launch with every check on, then runs the launch in the emulator."""

    def __init__(self, emulation: Emulation, log: FindingLog, max_blocks, max_threads, banks=None):
        self.sims = emulation.sims()
        self.run = EmulatedLauncher(emulation.library_path())
        self.log = log
        self.max_blocks = max_blocks
        self.max_threads = max_threads
        self.banks = banks

    def alloc(self, dtype, count):
        return np.zeros((count,), dtype=dtypes.storage(dtype))

    def address(self, arr) -> int:
        return arr.ctypes.data

    def launch(self, spec, grid, block, args) -> None:
        sim = self.sims[spec.name]
        nblocks = grid[0] * grid[1] * grid[2]
        threads = block[0] * block[1] * block[2]
        blocks = pick_blocks(nblocks, self.max_blocks, threads, self.max_threads)
        out_of_bounds = check_launch(sim, list(args), grid, block, blocks, self.log, self.banks)
        if self.log.full():
            raise StopCheck()
        if not out_of_bounds:  # an out-of-bounds launch would corrupt memory in C
            self.run.launch(spec, grid, block, args)


class GPUChecker:
    """The checker a CUDA module gets from ``build_cuda`` (see ``CUDAModule.check``)."""

    def __init__(self, plans: dict, kernels: dict, emulation: Emulation):
        self.plans = plans
        self.kernels = kernels
        self.emulation = emulation

    def check(self, name: str, copies: dict, values: dict, arrays=None, max_blocks=3, max_threads=None,
              max_findings: int = 5, bank_report: bool = False, **_options):
        """Findings of a checking run of function ``name`` on ``copies`` (host arrays by
        parameter index); with ``bank_report``, the bank-conflict statistics instead."""
        log = FindingLog(max_findings)
        banks = BankCounter() if bank_report else None
        launcher = _CheckingLauncher(self.emulation, log, max_blocks, max_threads, banks)
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
