"""Keep small local buffers in registers: one register slot per place accessed.

A ``local`` buffer of constant size (at most :data:`MAX_BYTES`) whose every access
is at a constant place -- a constant index, or a ``Ramp`` with a constant base and
stride 1 -- is replaced by one buffer of scope ``"register"`` per place::

    allocate C.local[16] (local)            allocate C.local_0: float32x8 (register)
    C.local[ramp(0, 1, 8)] = ...       ->   allocate C.local_8: float32x8 (register)
    C.local[ramp(8, 1, 8)] = ...            C.local_0[0] = ...;  C.local_8[0] = ...

A register buffer holds one value (the place's lanes make its dtype: ``float32x8``)
and is always accessed at index 0.  Printers declare it as one variable, so the C
compiler keeps an accumulator tile in registers instead of a stack array it may not
promote.

Left in memory: ``bfloat16`` buffers (stored as raw bits), buffers whose address is
used other than by loads and stores or that are accessed through an alias of another
element type, buffers accessed at a computed index, at more
than :data:`MAX_SLOTS` places, or at overlapping places of different widths.

Runs last in the CPU pipeline and before ``verify_gpu`` in the kernel pipeline: after
unrolling and vectorizing, which make the indices constant.

**Within a loop** (``in_loops=True``, the CPU pipeline): a local buffer left in memory
whose accesses inside a serial loop are all at ``base + constant`` -- one ``base``
that the loop does not change, constants that make places as above -- gets register
slots for that loop only: each slot the loop reads is loaded before it, each slot it
writes is stored back after it::

    for rci in 0..32:                              C.local_r0 = C.local[y * 224 + ramp(0, 1, 16)]
      C.local[y*224 + ramp(0, 1, 16)] += ...  ->   for rci in 0..32:
                                                     C.local_r0 += ...
                                                   C.local[y*224 + ramp(0, 1, 16)] = C.local_r0

This is the accumulator plane of a chunked CPU convolution (a row of the plane per
pass of the reduction's inner loop).  GCC keeps such accumulators in registers only
when nothing else in the loop disturbs its store motion (a software prefetch did:
the tile went back to memory, 30% slower); as variables they stay there, and its
register allocation no longer shuffles them between registers each iteration
(2026-11-28, AVX-512, 7x7 512->2048: 14 FMAs with 6-22 register moves -> none).
The outermost qualifying loop is taken (fewest loads and stores); a loop containing
a parallel or thread-bound loop is not (its threads would share the variables).
GPU kernels keep their local arrays: ptxas does this itself, and the register
pressure it would add is untested on a GPU.
"""
from __future__ import annotations

from .. import dtype as _dt
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..analysis.buffers import const_size
from ..functor import IRMutator, collect_vars, post_order_visit
from ..structural import structural_equal

#: at most this many register slots replace one buffer
MAX_SLOTS = 64
#: only buffers up to this many bytes are considered
MAX_BYTES = 64 * 1024


def _place(index):
    """``(base, lanes)`` of a constant index, else None."""
    if isinstance(index, E.IntImm):
        return (int(index.value), 1)
    if isinstance(index, E.Ramp) and isinstance(index.base, E.IntImm) and E.is_const_int(index.stride, 1):
        return (int(index.base.value), index.lanes)
    return None


def _places(alloc: S.Allocate):
    """The sorted places at which the body of ``alloc`` accesses its buffer, or None
    when the buffer must stay in memory."""
    buf = alloc.buffer
    places = set()
    ok = [True]

    def visit(node):
        if not ok[0]:
            return
        if isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer.data is buf.data:
            # an alias of another element type counts its places in other units
            same = node.buffer.dtype == buf.dtype
            place = _place(node.indices[0]) if len(node.indices) == 1 and same else None
            if place is None:
                ok[0] = False
            else:
                places.add(place)
        elif isinstance(node, E.Var) and node is buf.data:
            ok[0] = False  # the address itself is used

    post_order_visit(alloc.body, visit)
    if not ok[0] or not places or len(places) > MAX_SLOTS:
        return None
    spans = sorted(places)
    for (b0, n0), (b1, _) in zip(spans, spans[1:]):
        if b0 + n0 > b1:
            return None  # overlapping accesses of different widths
    return spans


def _promotable(buf: S.Buffer) -> bool:
    if buf.scope != keys.LOCAL or len(buf.shape) != 1 or _dt.parse(buf.dtype).is_narrow:
        return False
    if _dt.lanes(buf.dtype) > 1:
        return False
    n = const_size(buf)
    return n is not None and n * _dt.parse(buf.dtype).bytes <= MAX_BYTES


def _register(buf: S.Buffer, lanes: int, name: str) -> S.Buffer:
    """A register slot ``name`` for ``lanes`` elements of ``buf``."""
    dtype = buf.dtype if lanes == 1 else _dt.with_lanes(buf.dtype, lanes)
    return S.Buffer(name, dtype, (E.IntImm("int32", 1),), E.Var(name, "handle"), keys.REGISTER)


class _ToSlots(IRMutator):
    """Accesses of the promoted buffers -> their register slots (index 0); a place
    is ``(constant offset, lanes)`` of the index (:func:`_split_offset`)."""

    def __init__(self, regs=None):
        self.regs = regs if regs is not None else {}  # data Var -> {(offset, lanes): register Buffer}

    def _slot(self, buf, indices):
        slots = self.regs.get(buf.data)
        if slots is None:
            return None
        index = indices[0]
        lanes = 1
        if isinstance(index, E.Ramp):
            index, lanes = index.base, index.lanes
        return slots[(_split_offset(index)[1], lanes)]

    def visit_BufferLoad(self, e):
        reg = self._slot(e.buffer, e.indices)
        if reg is None:
            return self.generic_visit(e)
        return E.BufferLoad(reg, (E.IntImm("int32", 0),))

    def visit_BufferStore(self, s):
        reg = self._slot(s.buffer, s.indices)
        if reg is None:
            return self.generic_visit(s)
        value = self.visit(s.value)
        lanes = _dt.lanes(reg.dtype)
        if _dt.lanes(value.dtype) != lanes:
            value = E.Broadcast(value, lanes)
        return S.BufferStore(reg, value, (E.IntImm("int32", 0),))


class _Promote(_ToSlots):
    """Whole buffers accessed at constant places only."""

    def visit_Allocate(self, s):
        buf = s.buffer
        spans = _places(s) if _promotable(buf) else None
        if spans is None:
            return self.generic_visit(s)
        regs = {(base, lanes): _register(buf, lanes, f"{buf.name}_{base}") for base, lanes in spans}
        self.regs[buf.data] = regs
        body = self.visit(s.body)
        del self.regs[buf.data]
        for reg in reversed(list(regs.values())):
            body = S.Allocate(reg, body)
        return body


# ---------------------------------------------------------------------------------
# slots within a loop
# ---------------------------------------------------------------------------------
def _split_offset(index):
    """``(base, offset)`` with ``index == base + offset``, ``offset`` a constant and
    ``base`` None for a constant index."""
    offset = 0
    while True:
        if isinstance(index, E.IntImm):
            return None, offset + int(index.value)
        if isinstance(index, E.Add) and isinstance(index.b, E.IntImm):
            index, offset = index.a, offset + int(index.b.value)
        elif isinstance(index, E.Add) and isinstance(index.a, E.IntImm):
            index, offset = index.b, offset + int(index.a.value)
        elif isinstance(index, E.Sub) and isinstance(index.b, E.IntImm):
            index, offset = index.a, offset - int(index.b.value)
        else:
            return index, offset


def _bound_inside(node) -> set:
    """The variables bound below ``node`` (loop and let variables)."""
    found = set()

    def visit(n):
        if isinstance(n, S.For):
            found.add(n.loop_var)
        elif isinstance(n, (S.LetStmt, E.Let)):
            found.add(n.var)

    post_order_visit(node, visit)
    return found


def _has_threads(node) -> bool:
    found = [False]

    def visit(n):
        if isinstance(n, S.For) and n.kind in (S.ForKind.PARALLEL, S.ForKind.THREAD_BINDING):
            found[0] = True
        elif isinstance(n, S.AttrStmt) and n.attr_key in (keys.THREAD_EXTENT, keys.VIRTUAL_THREAD):
            found[0] = True

    post_order_visit(node, visit)
    return found[0]


def _loop_slots(loop: S.For, buf: S.Buffer):
    """``(base, spans, read, written)`` of ``buf`` in ``loop`` when every access of
    the body is at ``base + place`` for one loop-invariant ``base`` (see the module
    docs), else None; ``read`` and ``written`` are the places the body reads / writes."""
    bases, read, written = [], set(), set()
    ok = [True]

    def visit(node):
        if not ok[0]:
            return
        if isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer.data is buf.data:
            index = node.indices[0] if len(node.indices) == 1 and node.buffer.dtype == buf.dtype else None
            lanes = 1
            if isinstance(index, E.Ramp):
                if not E.is_const_int(index.stride, 1):
                    ok[0] = False
                    return
                index, lanes = index.base, index.lanes
            if index is None:
                ok[0] = False
                return
            base, offset = _split_offset(index)
            bases.append(base)
            (read if isinstance(node, E.BufferLoad) else written).add((offset, lanes))
        elif isinstance(node, E.Var) and node is buf.data:
            ok[0] = False

    post_order_visit(loop.body, visit)
    if not ok[0] or not bases:
        return None
    base = bases[0]
    if base is None:
        if any(b is not None for b in bases):
            return None
    else:
        if any(b is None or not structural_equal(b, base) for b in bases[1:]):
            return None
        inside = _bound_inside(loop.body) | {loop.loop_var}
        loads = []
        post_order_visit(base, lambda n: loads.append(n) if isinstance(n, E.BufferLoad) else None)
        if loads or collect_vars(base) & inside:
            return None
    spans = sorted(read | written)
    if len(spans) > MAX_SLOTS:
        return None
    for (b0, n0), (b1, _) in zip(spans, spans[1:]):
        if b0 + n0 > b1:
            return None
    return base, spans, read, written


class _PromoteInLoops(IRMutator):
    """Register slots for the local buffers left in memory, loop by loop."""

    def __init__(self):
        self.candidates = {}  # data Var -> Buffer, of the local buffers allocated around the visit

    def visit_Allocate(self, s):
        buf = s.buffer
        if (buf.scope != keys.LOCAL or len(buf.shape) != 1 or _dt.lanes(buf.dtype) > 1
                or _dt.parse(buf.dtype).is_narrow):
            return self.generic_visit(s)
        self.candidates[s.buffer.data] = s.buffer
        try:
            return self.generic_visit(s)
        finally:
            del self.candidates[s.buffer.data]

    def visit_For(self, s):
        if s.kind != S.ForKind.SERIAL or not self.candidates or _has_threads(s.body):
            return self.generic_visit(s)
        found = {}
        for data, buf in self.candidates.items():
            slots = _loop_slots(s, buf)
            if slots is not None:
                found[data] = (buf, slots)
        if not found:
            return self.generic_visit(s)
        pre, post, allocs, regs = [], [], [], {}
        for data, (buf, (base, spans, read, written)) in found.items():
            itype = base.dtype if base is not None else "int32"
            regs[data] = {}
            for offset, lanes in spans:
                reg = _register(buf, lanes, f"{buf.name}_r{offset}")
                regs[data][(offset, lanes)] = reg
                allocs.append(reg)
                at = E.IntImm(itype, offset) if base is None else (
                    base if offset == 0 else E.Add(base, E.IntImm(itype, offset)))
                index = (at if lanes == 1 else E.Ramp(at, E.IntImm(itype, 1), lanes),)
                zero = (E.IntImm("int32", 0),)
                if (offset, lanes) in read:
                    pre.append(S.BufferStore(reg, E.BufferLoad(buf, index), zero))
                if (offset, lanes) in written:
                    post.append(S.BufferStore(buf, E.BufferLoad(reg, zero), index))
        saved = {d: self.candidates.pop(d) for d in found}
        try:
            body = _ToSlots(regs).visit(s.body)
            body = self.visit(body)  # the other candidates, in the loops inside
        finally:
            self.candidates.update(saved)
        stmt = S.seq(*pre, S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_binding, s.annotations),
                     *post)
        for reg in reversed(allocs):
            stmt = S.Allocate(reg, stmt)
        return stmt


def promote_local_registers(func: S.PrimFunc, in_loops: bool = False) -> S.PrimFunc:
    """Replace the promotable local buffers of ``func`` by register slots, and with
    ``in_loops`` those left in memory by slots within the loops that allow it (see
    the module docs); returns ``func`` itself when nothing is promotable."""
    body = _Promote().visit(func.body)
    if in_loops:
        body = _PromoteInLoops().visit(body)
    return func.with_body(body)


__all__ = ["MAX_BYTES", "MAX_SLOTS", "promote_local_registers"]
