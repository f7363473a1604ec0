"""Checking mode: run a compiled function's IR on copies of the arguments and report
what is wrong, instead of crashing or silently corrupting memory.

:class:`Finding` and :class:`FindingLog` are shared by both checkers: this module's
:class:`CPUChecker` (``mod.check(*args)`` of a CPU module) and the GPU checker of
:mod:`.gpu_emu.check` (races, uninitialized shared memory, out-of-bounds accesses
per thread).

The CPU checker interprets the function exactly as the C printer receives it
(after the whole CPU pipeline) with the reference interpreter of
:mod:`tecc.tir.analysis.interp`, and reports

* every access outside its buffer -- an argument (its array's size) or an
  allocation -- naming the buffer, the index, the bound and the statement (the
  access is skipped: a load gives 0), and
* an output argument that shares memory with another argument: the function
  would read values it already overwrote.

Interpreting is slow (Python per element): check on small shapes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runtime import packed_func
from ..runtime.device import cpu
from ..runtime.ndarray import NDArray
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import keys
from ..tir import stmt as S
from ..tir.analysis import written_data
from ..tir.analysis.interp import Interpreter, numpy_dtype, to_value
from ..tir.printer import to_text


@dataclass(frozen=True)
class Finding:
    """One problem found by a checker.

    Attributes
    ----------
    kind : str
        ``"out_of_bounds"``, ``"alias"``, ``"race"`` or ``"uninitialized"``.
    buffer : str
        Name of the buffer accessed.
    index : int
        The element index accessed (of the original, per-thread buffer for locals).
    message : str
        A sentence naming the function or kernel, the buffer, index and bound (and
        for a GPU kernel the block and thread).
    statement : str
        The offending BufferLoad or BufferStore, as printed TIR.
    kernel : str
        The function's or kernel's name.
    block, thread : tuple
        ``(x, y, z)`` of the block and of the thread that made the access (GPU only).
    """

    kind: str
    buffer: str
    index: int
    message: str
    statement: str
    kernel: str = ""
    block: tuple = ()
    thread: tuple = ()

    def __str__(self):
        return f"{self.message}\n    at: {self.statement}"


class StopCheck(Exception):
    """Enough findings of every kind: stop interpreting."""


class FindingLog:
    """Findings of one check, at most ``limit`` of each kind, one per statement."""

    def __init__(self, limit: int = 5, kinds=("race", "out_of_bounds", "uninitialized")):
        self.limit = limit
        self.kinds = tuple(kinds)
        self.findings = []
        self._seen = set()
        self._count = dict.fromkeys(self.kinds, 0)

    def wants(self, kind: str, key) -> bool:
        """Would a finding of ``kind`` under ``key`` be kept?  (Ask before building
        its message: formatting is the expensive part of a finding.)"""
        return not self.full(kind) and key not in self._seen

    def seen(self, key) -> bool:
        """Was a finding under ``key`` kept already?"""
        return key in self._seen

    def full(self, kind=None) -> bool:
        if kind is not None:
            return self._count[kind] >= self.limit
        return all(self._count[k] >= self.limit for k in self.kinds)

    def add(self, finding: Finding, key) -> None:
        if self.full(finding.kind) or key in self._seen:
            return
        self._seen.add(key)
        self._count[finding.kind] += 1
        self.findings.append(finding)
        if self.full():
            raise StopCheck()

    def count(self, kind: str) -> int:
        return self._count[kind]


class _BoundsInterpreter(Interpreter):
    """The reference interpreter with every access checked against its buffer."""

    def __init__(self, func: S.PrimFunc, log: FindingLog):
        super().__init__()
        self.func = func
        self.log = log

    def _in_bounds(self, node, buf, off) -> bool:
        arr = self.mem.get(buf.data)
        o = np.asarray(off)
        if arr is not None and (not o.size or (o.min() >= 0 and o.max() < arr.size)):
            return True
        size = "no storage" if arr is None else f"{arr.size // _dt.lanes(buf.dtype)} elements"
        index = int(o.min()) if o.size and o.min() < 0 else int(o.max()) if o.size else 0
        msg = (f"out-of-bounds access in {self.func.name!r}: {buf.name}[{index}] is outside the buffer "
               f"({size}); check the split factors and guards of the stage writing or reading {buf.name!r}")
        self.log.add(Finding("out_of_bounds", buf.name, index, msg, to_text(node), self.func.name),
                     ("out_of_bounds", id(node)))
        return False

    def visit_BufferLoad(self, e):
        off = self.offset(e.buffer, e.indices)
        if not self._in_bounds(e, e.buffer, off):
            lanes = _dt.lanes(e.dtype)
            zero = numpy_dtype(e.dtype).type(0)
            return zero if lanes == 1 else np.zeros(lanes, dtype=numpy_dtype(e.dtype))
        return super().visit_BufferLoad(e)

    def visit_BufferStore(self, s):
        off = self.offset(s.buffer, s.indices)
        if self._in_bounds(s, s.buffer, off):
            super().visit_BufferStore(s)

    def visit_Call(self, e):
        if e.op != keys.CALL_PACKED:
            return super().visit_Call(e)
        # a packed function runs as in compiled code, on views of the checked copies
        args = []
        for a in e.args[1:]:
            if isinstance(a, E.Call) and a.op == keys.STACK_MAKE_ARRAY:
                view = self._packed_array(e, a)
                if view is None:  # out of bounds: reported, the call is skipped
                    return to_value(0, e.dtype)
                args.append(view)
            elif isinstance(a, E.StringImm):
                args.append(a.value)
            else:
                v = self.visit(a)
                args.append(float(v) if _dt.is_float(a.dtype) else int(v))
        result = packed_func.get_global_func(e.args[0].value)(*args)
        is_number = isinstance(result, (int, float, np.integer, np.floating)) and not isinstance(result, bool)
        return to_value(result if is_number else 0, e.dtype)

    def _packed_array(self, call, a):
        """An NDArray viewing the elements a packed call passes, or None (after a
        finding) when they are not all inside the buffer."""
        data, shape, strides, _ndim, zero, offset = a.args
        flat = self.mem.get(data)
        dims = [int(self.visit(x)) for x in shape.args]
        steps = [int(self.visit(x)) for x in strides.args] if isinstance(strides, E.Call) and strides.args else None
        off = int(self.visit(offset))
        count = int(np.prod(dims, dtype=np.int64))
        span = (1 + sum((n - 1) * st for n, st in zip(dims, steps)) if count else 0) if steps else count
        name = getattr(data, "name", "buffer")
        if flat is None or off < 0 or off + span > flat.size:
            size = "no storage" if flat is None else f"{flat.size} elements"
            msg = (f"out-of-bounds access in {self.func.name!r}: the packed call {to_text(call)} passes "
                   f"{name}[{off}:{off + span}], outside the buffer ({size})")
            self.log.add(Finding("out_of_bounds", name, off + span - 1, msg, to_text(call), self.func.name),
                         ("out_of_bounds", id(call)))
            return None
        part = flat[off:off + span]
        if steps:
            view = np.lib.stride_tricks.as_strided(part, dims, [st * part.itemsize for st in steps])
        else:
            view = part.reshape(dims)
        # a storage float's own allocations hold float32 values in the interpreter, its arguments their bits
        dtype = zero.dtype if not _dt.parse(zero.dtype).is_storage_float or view.dtype != np.float32 else "float32"
        return NDArray(view, dtype, cpu(0))


class CPUChecker:
    """The checker a CPU module gets from ``build_c``: ``functions`` maps a name to
    the PrimFunc the C printer received."""

    def __init__(self, functions: dict):
        self.functions = dict(functions)

    def check(self, name: str, copies: dict, values: dict, arrays=None, max_findings: int = 5, **_options):
        """Findings of one checking run of function ``name`` (see the module docs).

        ``copies`` are host copies of the array arguments (param index -> array),
        ``values`` the scalar arguments, ``arrays`` the caller's own arrays (for the
        aliasing check); the caller's data is not touched.
        """
        func = self.functions[name]
        log = FindingLog(max_findings, ("alias", "out_of_bounds"))
        try:
            self._aliases(func, arrays if arrays is not None else copies, log)
            self._run(func, copies, values, log)
        except StopCheck:
            pass
        return list(log.findings)

    def _aliases(self, func, arrays, log) -> None:
        written = written_data(func.body)
        params = [(i, p, func.buffer_map[p]) for i, p in enumerate(func.params) if p in func.buffer_map]
        for i, p, buf in params:
            if buf.data not in written:
                continue
            for j, q, other in params:
                if j == i or not np.shares_memory(arrays[i], arrays[j]):
                    continue
                msg = (f"{func.name!r}: argument {i} ({buf.name!r}) is written and shares memory with argument "
                       f"{j} ({other.name!r}); the function may read values it already overwrote -- pass a "
                       f"separate array for {buf.name!r}")
                log.add(Finding("alias", buf.name, 0, msg, f"{buf.name} and {other.name}", func.name),
                        ("alias", min(i, j), max(i, j)))

    def _run(self, func, copies, values, log) -> None:
        it = _BoundsInterpreter(func, log)
        for i, p in enumerate(func.params):
            buf = func.buffer_map.get(p)
            if buf is None:
                it.env[p] = values[i]
                continue
            it.env[p] = p
            it.mem[buf.data] = copies[i].reshape(-1)
        it.visit(func.body)
