"""Checking mode of the GPU emulator: out-of-bounds accesses, races, uninitialized reads.

A kernel split by :func:`.split.split_kernel` runs a few of its blocks, one after the
other, on copies of the arguments, the threads of a block phase by phase between
barriers -- the schedule of the compiled emulator -- with every access checked:

* Every access of every buffer (global, shared, local) is checked against the buffer's
  extent; an out-of-bounds access is reported (and skipped: a load gives 0).
* For every element of a shared buffer the checker remembers which thread wrote it and
  which threads read it since the last barrier (the current *epoch*).  A thread that
  reads or writes an element another thread wrote in the same epoch, or writes an
  element another thread read in the same epoch, races: on a GPU the result depends on
  the order in which warps run.  A barrier starts a new epoch.
* The same holds for the elements of the global buffers a kernel writes, with one more
  rule: blocks are not ordered within a launch, so a block that reads or writes an
  element another block wrote (or writes one another block read) races whatever the
  barriers.  Only the checked blocks are compared.
* A thread that reads an element of a shared buffer that no thread of its block has
  written yet reads garbage (shared memory is not zeroed): an *uninitialized* read,
  typically a cooperative fetch that does not cover the whole tile.

Two implementations keep these rules, with the same findings and messages:

* :class:`CompiledChecks` (what ``CUDAModule.check`` uses): the kernels printed as C by
  :class:`.check_codegen.CodeGenCheck`, the emulator's C with every access calling a
  checking helper, compiled once per module; it runs at the speed of C (a 256^3 SGEMM's
  three checked blocks take a fraction of a second).
* :class:`CheckInterpreter`: the reference TIR interpreter
  (:mod:`tecc.tir.analysis.interp`) with the same checks, slow (Python per element) but
  open to instrumentation: ``shared_memory_report`` counts bank conflicts through it
  (:mod:`.bank_conflicts`), and it checks the kernels the compiled checker refuses
  (:func:`.check_codegen.uncheckable_reason`; the reason is recorded and warned about).

The messages are built by the functions below, for both.
"""
from __future__ import annotations

import ctypes
import operator
import threading

import numpy as np

from ...runtime import dtypes
from ...runtime.module import last_error, load_library
from ...tir import dtype as _dt
from ...tir.printer import to_text
from ...tir import expr as E
from ...tir import keys
from ...tir.analysis import written_data
from ...tir.analysis.interp import InterpError, Interpreter, numpy_dtype as _np_dtype, to_value as _convert
from ..check import Finding, FindingLog, StopCheck
from ..compiler import compile_c
from .check_codegen import (ASSERT_FAILED, DONE, FAILED, KINDS, RECORD_SIZE, STOPPED, CheckIO, check_source)
from .split import SimError, SimKernel, is_barrier


class InterpretedCheckWarning(UserWarning):
    """``CUDAModule.check`` interprets a kernel the compiled checker refused (slow)."""


#: operators whose result keeps the operands' type when both have the same one
_FAST_OPS = {E.Add: operator.add, E.Sub: operator.sub, E.Mul: operator.mul}
_SAME_TYPE_RESULT = (int, np.float32, np.float64)


# ----------------------------------------------------------------------------
# the messages
# ----------------------------------------------------------------------------
def _where(block, thread) -> str:
    return f"block {block}" + (f", thread {thread}" if thread else "")


def out_of_bounds_message(kernel: str, buf, write: bool, block, thread, index: int, bound: int) -> str:
    verb = "write" if write else "read"
    return (f"out-of-bounds {verb} of {buf.scope} buffer '{buf.name}' in kernel "
            f"'{kernel}', {_where(block, thread)}: index {index} is outside [0, {bound})")


def _race_hint(write: bool, what: str) -> str:
    """Why two threads' accesses race, and what usually fixes it."""
    if write and what == "wrote":
        return ("too: the element is written by several threads (does every thread run the whole copy? bind the "
                "copy's loops to threadIdx, a cooperative fetch, so that each element is written once)")
    return "with no barrier in between (missing __syncthreads()?)"


def shared_race_message(kernel: str, buf, block, thread, write: bool, index: int, other, what: str) -> str:
    """``other`` (a thread of the same block) ``what`` ("wrote" or "read") the element."""
    return (f"race on shared buffer '{buf.name}' in kernel '{kernel}', block {block}: "
            f"thread {thread} {'writes' if write else 'reads'} {buf.name}[{index}], which thread {other} {what} "
            f"{_race_hint(write, what)}")


def global_race_message(kernel: str, buf, block, thread, write: bool, index: int, other, other_block,
                        what: str) -> str:
    """``other`` (a thread of ``other_block``, None for the same block) ``what`` the element."""
    verb = "writes" if write else "reads"
    if other_block is not None:
        why = (f"which thread {other} of block {other_block} {what}; the blocks of a launch "
               "run in no fixed order (two blocks touch the same output: a reduction "
               "split across blocks, or tiles that overlap?)")
    else:
        why = f"which thread {other} {what} {_race_hint(write, what)}"
    return (f"race on global buffer '{buf.name}' in kernel '{kernel}': thread {thread} of "
            f"block {block} {verb} {buf.name}[{index}], {why}")


def uninitialized_message(kernel: str, buf, block, thread, index: int) -> str:
    return (f"uninitialized read of shared buffer '{buf.name}' in kernel '{kernel}', "
            f"block {block}: thread {thread} reads {buf.name}[{index}], which no thread of the "
            "block has written (shared memory starts with garbage: does the cooperative "
            "fetch cover the whole tile?)")


def assertion_message(kernel: str, block, thread, message) -> str:
    return f"kernel {kernel}: assertion failed in {_where(block, thread)}: {message}"


# ----------------------------------------------------------------------------
# the interpreter
# ----------------------------------------------------------------------------
class _Shadow:
    """Per element of one shared buffer: the writer and (up to two) readers this epoch
    (thread numbers, -1 for none), and whether any thread wrote it since the block
    began.  Python lists: element access is the hot path."""

    def __init__(self, size):
        self.size = size
        self.written = bytearray(size)
        self.reset()

    def reset(self):
        self.writer = [-1] * self.size
        self.reader0 = [-1] * self.size
        self.reader1 = [-1] * self.size


class _GlobalShadow:
    """Per touched element of a global buffer the kernel writes: the last writer and
    up to two readers, each as ``(block, thread, epoch)`` (dicts: a launch's checked
    blocks touch a small part of a large buffer)."""

    def __init__(self):
        self.writer = {}
        self.readers = {}


def _unordered(rec, b, t, epoch) -> bool:
    """True if access ``rec`` and one by thread ``t`` of block ``b`` in ``epoch`` are
    not ordered: other block, or other thread of the block with no barrier between."""
    return rec[0] != b or (rec[1] != t and rec[2] == epoch)


class CheckInterpreter(Interpreter):
    """The reference interpreter with bounds checks on every access and race
    detection on shared buffers, running the thread loops of a :class:`SimKernel`."""

    def __init__(self, sim: SimKernel, grid_dims, block_dims, log: FindingLog, banks=None):
        super().__init__()
        self.banks = banks      # a bank_conflicts.BankCounter, or None
        self.sim = sim
        self.grid_dims = grid_dims
        self.block_dims = block_dims
        self.log = log
        self.bounds = {}        # data Var -> number of elements
        self.rows = {}          # data Var of a per-thread copy [threads, n] -> n
        self.shadows = {}       # data Var of a shared buffer -> _Shadow
        self.pending_uninit = {}  # (shadow, index) -> read of a never-written shared element
        self.global_shadows = {}  # data Var of a global buffer the kernel writes -> _GlobalShadow
        self.epoch = 0          # barriers passed so far (all checked blocks)
        self.block_number = -1
        self.cur_tid = None
        self.block = ()
        self.out_of_bounds = False  # any out-of-bounds access, reported or not

    # -- running ---------------------------------------------------------------
    def run_block(self, b: int) -> None:
        self.block = self.sim.block_coords(b, self.grid_dims)
        self.block_number = b
        self.epoch += 1
        self.env[self.sim.bid] = b
        try:
            self.visit(self.sim.block_body)
        finally:
            self._flush_uninitialized()
            if self.banks is not None:
                self.banks.end_block()

    def thread(self):
        if self.cur_tid is None:
            return ()
        return self.sim.thread_coords(self.cur_tid, self.block_dims)

    def visit_For(self, s):
        if s.loop_var is not self.sim.tid:
            return Interpreter.visit_For(self, s)
        n = self.visit(s.extent)
        for t in range(n):
            self.cur_tid = t
            self.env[s.loop_var] = t
            self.visit(s.body)
        self.cur_tid = None
        self.env.pop(s.loop_var, None)

    def visit_Evaluate(self, s):
        if is_barrier(s):
            for shadow in self.shadows.values():
                shadow.reset()
            self._flush_uninitialized()
            if self.banks is not None:
                self.banks.flush()
            self.epoch += 1
            return
        Interpreter.visit_Evaluate(self, s)

    def visit_AssertStmt(self, s):
        if not self.visit(s.condition):
            raise SimError(assertion_message(self.sim.name, self.block, self.thread(), s.message))
        self.visit(s.body)

    def visit_Allocate(self, s):
        buf = s.buffer
        size = self.allocation_size(buf)
        data = buf.data
        self.mem[data] = np.zeros(size, dtype=_np_dtype(buf.dtype))
        self.bounds[data] = size
        if data in self.sim.expanded:
            self.rows[data] = size // self.visit(buf.shape[0])
        if buf.scope == "shared":
            self.shadows[data] = _Shadow(size)
        try:
            self.visit(s.body)
        finally:
            del self.mem[data]
            self.bounds.pop(data, None)
            self.rows.pop(data, None)
            self.shadows.pop(data, None)

    # -- arithmetic fast path (the checker runs every thread) --------------------
    def visit_BinaryOp(self, e):
        fn = _FAST_OPS.get(type(e))
        if fn is None:
            return Interpreter.visit_BinaryOp(self, e)
        a, b = self.visit(e.a), self.visit(e.b)
        ta = type(a)
        if ta is type(b) and ta in _SAME_TYPE_RESULT:
            return fn(a, b)
        return _convert(fn(a, b), e.dtype)

    # -- accesses ----------------------------------------------------------------
    def visit_BufferLoad(self, e):
        off = self._access(e, e.buffer, e.indices, write=False)
        if off is None:
            lanes = _dt.lanes(e.dtype)
            zero = np.zeros(lanes, dtype=_np_dtype(e.dtype))
            return zero if lanes > 1 else zero[0].item()
        arr = self.mem[e.buffer.data]
        if isinstance(off, np.ndarray):
            return arr[off].copy()
        return arr[off]

    def visit_BufferStore(self, s):
        value = self.visit(s.value)
        off = self._access(s, s.buffer, s.indices, write=True)
        if off is None:
            return
        arr = self.mem[s.buffer.data]
        arr[off] = value

    def _access(self, node, buf, indices, write):
        """Flat offset(s) of an access after the checks, or None if out of bounds."""
        vals = [self.index_value(i) for i in indices]
        data = buf.data
        bound = self.bounds.get(data)
        if bound is None:
            raise SimError(f"kernel {self.sim.name}: buffer {buf.name!r} has no storage")
        row = self.rows.get(data)
        if row is not None:
            # a per-thread copy [threads, n]: check the thread's own index against n
            own = vals[1]
            if type(own) is int:
                if not 0 <= own < row:
                    return self._out_of_bounds(own, row, node, self.sim.expanded[data], write)
                off = vals[0] * row + own
            else:
                own = np.asarray(own, dtype=np.int64)
                bad = own[(own < 0) | (own >= row)]
                if bad.size:
                    return self._out_of_bounds(int(bad[0]), row, node, self.sim.expanded[data], write)
                off = vals[0] * row + own
        else:
            off = vals[0] if len(vals) == 1 else self.flat_offset(buf, vals)
            if type(off) is int:
                if not 0 <= off < bound:
                    return self._out_of_bounds(off, bound, node, buf, write)
            else:
                off = np.asarray(off, dtype=np.int64)
                bad = off[(off < 0) | (off >= bound)]
                if bad.size:
                    return self._out_of_bounds(int(bad[0]), bound, node, buf, write)
        if self.cur_tid is None:
            return off
        shadow, track = self.shadows.get(data), self._race
        if shadow is None:
            shadow, track = self.global_shadows.get(data), self._global_race
        if shadow is not None:
            lanes = (off,) if type(off) is int else off.reshape(-1).tolist()
            for lane in lanes:
                track(shadow, lane, node, buf, write)
            if self.banks is not None and track == self._race:
                self.banks.record(self.sim.name, node, self.sim.origin.get(node, node), buf, write,
                                  self.cur_tid, lanes)
        return off

    def _reportable(self, kind, node):
        """``(statement of the original kernel, key)`` of a finding of ``kind`` at
        ``node``; the key is None when the log would not keep it (one finding per
        statement and kind) -- ask before building the message."""
        original = self.sim.origin.get(node, node)
        key = (kind, self.sim.name, id(original))
        return original, (key if self.log.wants(kind, key) else None)

    def _out_of_bounds(self, index, bound, node, buf, write):
        self.out_of_bounds = True
        original, key = self._reportable("out_of_bounds", node)
        if key is None:
            return None
        msg = out_of_bounds_message(self.sim.name, buf, write, self.block, self.thread(), index, bound)
        self.log.add(Finding("out_of_bounds", buf.name, index, msg, to_text(original),
                             self.sim.name, self.block, self.thread()), key)
        return None

    def _race(self, shadow, i, node, buf, write):
        t = self.cur_tid
        if write:
            shadow.written[i] = 1
            # written later in the same epoch by another thread: a race, reported below
            self.pending_uninit.pop((shadow, i), None)
        elif not shadow.written[i]:
            self.pending_uninit.setdefault((shadow, i), (i, node, buf, self.thread()))
        writer = shadow.writer[i]
        other, what = None, None
        if writer >= 0 and writer != t:
            other, what = writer, "wrote"
        elif write:
            r0, r1 = shadow.reader0[i], shadow.reader1[i]
            if r0 >= 0 and r0 != t:
                other, what = r0, "read"
            elif r1 >= 0 and r1 != t:
                other, what = r1, "read"
        if write:
            shadow.writer[i] = t
        elif shadow.reader0[i] < 0:
            shadow.reader0[i] = t
        elif shadow.reader0[i] != t and shadow.reader1[i] < 0:
            shadow.reader1[i] = t
        if other is None:
            return
        original, key = self._reportable("race", node)
        if key is None:
            return
        me = self.thread()
        them = self.sim.thread_coords(other, self.block_dims)
        msg = shared_race_message(self.sim.name, buf, self.block, me, write, i, them, what)
        self.log.add(Finding("race", buf.name, i, msg, to_text(original), self.sim.name, self.block, me), key)

    def _global_race(self, shadow, i, node, buf, write):
        b, t, epoch = self.block_number, self.cur_tid, self.epoch
        me_rec = (b, t, epoch)
        writer = shadow.writer.get(i)
        other, what = None, None
        if writer is not None and _unordered(writer, b, t, epoch):
            other, what = writer, "wrote"
        readers = shadow.readers.get(i)
        if write:
            if other is None and readers:
                other = next((r for r in readers if _unordered(r, b, t, epoch)), None)
                what = "read"
            shadow.writer[i] = me_rec
        elif readers is None:
            shadow.readers[i] = [me_rec]
        else:
            same = next((k for k, r in enumerate(readers) if r[0] == b and r[1] == t), None)
            if same is not None:
                readers[same] = me_rec      # a thread's own earlier read is ordered before
            else:
                if len(readers) == 2:
                    readers.pop(0)
                readers.append(me_rec)
        if other is None:
            return
        original, key = self._reportable("race", node)
        if key is None:
            return
        me = self.thread()
        them = self.sim.thread_coords(other[1], self.block_dims)
        them_block = self.sim.block_coords(other[0], self.grid_dims) if other[0] != b else None
        msg = global_race_message(self.sim.name, buf, self.block, me, write, i, them, them_block, what)
        self.log.add(Finding("race", buf.name, i, msg, to_text(original), self.sim.name, self.block, me), key)

    def _flush_uninitialized(self):
        """Report the reads of never-written shared elements of the epoch that ends
        (an element another thread wrote later in the epoch is a race instead)."""
        pending, self.pending_uninit = self.pending_uninit, {}
        for i, node, buf, me in pending.values():
            self._uninitialized(i, node, buf, me)

    def _uninitialized(self, i, node, buf, me):
        original, key = self._reportable("uninitialized", node)
        if key is None:
            return
        msg = uninitialized_message(self.sim.name, buf, self.block, me, i)
        self.log.add(Finding("uninitialized", buf.name, i, msg, to_text(original), self.sim.name,
                             self.block, me), key)


def pick_blocks(nblocks: int, max_blocks, threads_per_block: int, max_threads) -> list:
    """Linear numbers of the blocks to check: the first and the last; from three on, the
    first two (neighbours, for races between blocks), then spread out to the last."""
    k = nblocks if max_blocks is None else min(nblocks, max(1, int(max_blocks)))
    if max_threads is not None:
        k = min(k, max(1, int(max_threads) // max(1, threads_per_block)))
    if k >= nblocks:
        return list(range(nblocks))
    if k == 1:
        return [0]
    if k == 2:
        return [0, nblocks - 1]
    return sorted({0} | {round(1 + j * (nblocks - 2) / (k - 2)) for j in range(k - 1)})


def _copies(sim: SimKernel, values: list) -> list:
    """``values`` with each array replaced by a flat copy (the checked blocks write there)."""
    return [np.array(v, copy=True).reshape(-1) if p in sim.func.buffer_map else v
            for p, v in zip(sim.func.params, values)]


def param_bounds(sim: SimKernel, values: list) -> dict:
    """Elements of each buffer parameter an access may touch (parameter number ->
    int): its shape's size, computed from the scalar arguments, within the array
    passed; the array's size where the shape uses a size the kernel does not receive."""
    it = Interpreter()
    func = sim.func
    for p, v in zip(func.params, values):
        if p not in func.buffer_map:
            it.env[p] = v
    bounds = {}
    for k, (p, v) in enumerate(zip(func.params, values)):
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        size = 1
        try:
            for extent in buf.shape:
                size *= it.visit(extent)
        except InterpError:  # a size the kernel does not receive: the array passed bounds it
            size = v.size
        bounds[k] = min(size, v.size)
    return bounds


def interpret_launch(sim: SimKernel, values: list, grid_dims, block_dims, blocks,
                     log: FindingLog, banks=None) -> bool:
    """Interpret ``blocks`` of one launch on copies of the arrays, recording findings
    (and with ``banks``, a :class:`.bank_conflicts.BankCounter`, the shared accesses).

    ``values`` holds one value per kernel parameter (an array for a buffer, an int for
    a scalar); the arrays are copied, so the caller's data is untouched.  After a block
    that produced new findings only the last block is still interpreted: the middle
    ones would repeat them, the last may add problems of its own (the edges).
    Returns True if an out-of-bounds access happened (reported or beyond the log's
    limit).
    """
    it = CheckInterpreter(sim, grid_dims, block_dims, log, banks)
    func = sim.func
    written = written_data(sim.block_body)
    values = _copies(sim, values)
    bounds = param_bounds(sim, values)
    for k, (p, v) in enumerate(zip(func.params, values)):
        buf = func.buffer_map.get(p)
        if buf is None:
            it.env[p] = v
            continue
        it.env[p] = p
        it.mem[buf.data] = v
        it.bounds[buf.data] = bounds[k]
        if buf.data in written:
            it.global_shadows[buf.data] = _GlobalShadow()
    try:
        todo = list(blocks)
        while todo:
            found = len(log.findings)
            it.run_block(todo.pop(0))
            if len(log.findings) > found and len(todo) > 1:
                todo = todo[-1:]  # the middle blocks would repeat these; the last may add its edges
    except StopCheck:
        pass
    except InterpError as err:
        raise SimError(f"kernel {sim.name}: the checking interpreter failed in block "
                       f"{it.block}: {err}") from None
    return it.out_of_bounds


# ----------------------------------------------------------------------------
# the compiled checker
# ----------------------------------------------------------------------------
class _KernelCheck:
    """The check function of one kernel and the tables that read its records."""

    def __init__(self, lib, sim: SimKernel, sites):
        self.sim = sim
        self.sites = sites
        # one finding per statement of the original kernel: sites of one statement share a key
        self.keys = []
        index = {}
        site_key = []
        for site in sites.sites:
            original = sim.origin.get(site.node, site.node)
            k = index.get(id(original))
            if k is None:
                k = index[id(original)] = len(self.keys)
                self.keys.append(original)
            site_key.append(k)
        self.site_key = np.asarray(site_key or [0], dtype=np.int32)
        self.fn = getattr(lib, f"tecc_check_{sim.name}")
        self.fn.restype = ctypes.c_int32
        self.fn.argtypes = [ctypes.c_void_p if p in sim.func.buffer_map else dtypes.ctype(p.dtype)
                            for p in sim.func.params] + [ctypes.POINTER(CheckIO)]

    def key(self, kind: str, original) -> tuple:
        """The finding log's key of a finding (the interpreter's: kind, kernel, statement)."""
        return (kind, self.sim.name, id(original))

    def finding(self, record, grid_dims, block_dims):
        """The :class:`Finding` of one record, and its log key."""
        kind_code, site_number, b, t, index, detail, other_block, what = (int(x) for x in record)
        kind = KINDS[kind_code]
        sim = self.sim
        site = self.sites.sites[site_number]
        original = sim.origin.get(site.node, site.node)
        buf = site.buffer
        block = sim.block_coords(b, grid_dims)
        thread = sim.thread_coords(t, block_dims) if t >= 0 else ()
        if kind == "out_of_bounds":
            msg = out_of_bounds_message(sim.name, buf, site.write, block, thread, index, detail)
        elif kind == "uninitialized":
            msg = uninitialized_message(sim.name, buf, block, thread, index)
        else:
            them = sim.thread_coords(detail, block_dims)
            what_text = "read" if what else "wrote"
            if site.buffer.scope == keys.SHARED:
                msg = shared_race_message(sim.name, buf, block, thread, site.write, index, them, what_text)
            else:
                them_block = sim.block_coords(other_block, grid_dims) if other_block != b else None
                msg = global_race_message(sim.name, buf, block, thread, site.write, index, them, them_block,
                                          what_text)
        finding = Finding(kind, buf.name, index, msg, to_text(original), sim.name, block, thread)
        return finding, self.key(kind, original)


class CompiledChecks:
    """The compiled checker of a module's kernels (see the module docs): the C is
    printed when it is made, compiled (through the compile cache) on first use.

    Parameters
    ----------
    sims : dict
        Kernel name -> :class:`SimKernel`.

    Attributes
    ----------
    refused : dict
        Kernel name -> why the compiled checker cannot check it (the checker
        interprets those kernels).
    """

    def __init__(self, sims: dict):
        self.sims = dict(sims)
        self._source, self._sites, self.refused = check_source(self.sims.values())
        self._lib = None
        self._kernels = None
        self._lock = threading.Lock()

    def source(self) -> str:
        """The C source of the checking library (for inspection)."""
        return self._source

    def handles(self, name: str) -> bool:
        """True if kernel ``name`` is checked compiled (not refused)."""
        return name in self._sites

    def _kernel(self, name: str) -> _KernelCheck:
        with self._lock:
            if self._kernels is None:
                first = next(iter(self._sites), "empty")
                # -O1: on code that calls a helper at every access it runs as fast as -O3
                # and compiles in a third of the time
                self._lib = load_library(compile_c(self._source, "c", "gpucheck_" + first, optimize=1))
                self._kernels = {n: _KernelCheck(self._lib, self.sims[n], sites) for n, sites in self._sites.items()}
        return self._kernels[name]

    def check_launch(self, sim: SimKernel, values: list, grid_dims, block_dims, blocks, log: FindingLog) -> bool:
        """:func:`interpret_launch`, compiled: check ``blocks`` of one launch on copies of
        the arrays, adding the same findings to ``log`` in the same order; True if an
        access was out of bounds.  Raises :class:`SimError` when an assertion of the
        kernel fails (naming the block and thread) or the run fails."""
        kernel = self._kernel(sim.name)
        values = _copies(sim, values)
        bounds = np.zeros(max(1, len(values)), dtype=np.int64)
        for k, n in param_bounds(sim, values).items():
            bounds[k] = n
        block_list = np.asarray(blocks, dtype=np.int64)
        nkeys = len(kernel.keys)
        seen = np.zeros(max(1, len(KINDS) * nkeys), dtype=np.uint8)
        for j, kind in enumerate(KINDS):
            for k, original in enumerate(kernel.keys):
                seen[j * nkeys + k] = log.seen(kernel.key(kind, original))
        records = np.zeros((max(1, len(KINDS) * log.limit), RECORD_SIZE), dtype=np.int64)
        io = CheckIO(blocks=block_list.ctypes.data, nblocks=len(block_list), bounds=bounds.ctypes.data,
                     site_key=kernel.site_key.ctypes.data, nkeys=nkeys, seen=seen.ctypes.data,
                     counts=(ctypes.c_int64 * 3)(*(log.count(kind) for kind in KINDS)), limit=log.limit,
                     records=records.ctypes.data)
        args = [v.ctypes.data if p in sim.func.buffer_map else v for p, v in zip(sim.func.params, values)]
        code = kernel.fn(*args, ctypes.byref(io))
        try:
            for record in records[:io.nrecords]:
                log.add(*kernel.finding(record, grid_dims, block_dims))
        except StopCheck:
            pass
        if code == ASSERT_FAILED:
            block = sim.block_coords(io.failed_block, grid_dims)
            thread = sim.thread_coords(io.failed_thread, block_dims) if io.failed_thread >= 0 else ()
            raise SimError(assertion_message(sim.name, block, thread, kernel.sites.asserts[io.failed_assert]))
        if code == FAILED:
            raise SimError(f"kernel {sim.name}: the checking run failed: {last_error(self._lib)}")
        assert code in (DONE, STOPPED), f"check function of {sim.name} returned {code}"
        return bool(io.out_of_bounds)
