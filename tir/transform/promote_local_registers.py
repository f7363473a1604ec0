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
used other than by loads and stores, buffers accessed at a computed index, at more
than :data:`MAX_SLOTS` places, or at overlapping places of different widths.

Runs last in the CPU pipeline and before ``verify_gpu`` in the kernel pipeline: after
unrolling and vectorizing, which make the indices constant.
"""
from __future__ import annotations

from .. import dtype as _dt
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..analysis.buffers import const_size
from ..functor import IRMutator, post_order_visit

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
            place = _place(node.indices[0]) if len(node.indices) == 1 else None
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
    if buf.scope != keys.LOCAL or len(buf.shape) != 1 or _dt.parse(buf.dtype).code == "bfloat":
        return False
    if _dt.lanes(buf.dtype) > 1:
        return False
    n = const_size(buf)
    return n is not None and n * _dt.parse(buf.dtype).bytes <= MAX_BYTES


class _Promote(IRMutator):
    def __init__(self):
        self.slots = {}  # data Var of a promoted buffer -> {(base, lanes): register Buffer}

    def visit_Allocate(self, s):
        buf = s.buffer
        spans = _places(s) if _promotable(buf) else None
        if spans is None:
            return self.generic_visit(s)
        regs = {}
        for base, lanes in spans:
            dtype = buf.dtype if lanes == 1 else _dt.with_lanes(buf.dtype, lanes)
            name = f"{buf.name}_{base}"
            regs[(base, lanes)] = S.Buffer(name, dtype, (E.IntImm("int32", 1),), E.Var(name, "handle"),
                                           keys.REGISTER)
        self.slots[buf.data] = regs
        body = self.visit(s.body)
        del self.slots[buf.data]
        for reg in reversed(list(regs.values())):
            body = S.Allocate(reg, body)
        return body

    def _slot(self, buf, indices):
        regs = self.slots.get(buf.data)
        if regs is None:
            return None
        return regs[_place(indices[0])]

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


def promote_local_registers(func: S.PrimFunc) -> S.PrimFunc:
    """Replace the promotable local buffers of ``func`` by register slots (see the
    module docs); returns ``func`` itself when none is promotable."""
    return func.with_body(_Promote().visit(func.body))


__all__ = ["MAX_BYTES", "MAX_SLOTS", "promote_local_registers"]
