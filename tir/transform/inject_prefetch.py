"""Turn the scopes of ``Stage.prefetch`` into prefetches of cache lines (TVM's
InjectPrefetch).

te lowering leaves ``AttrStmt(data, "prefetch_scope", offset)`` at the top of the body
of the loop ``v`` the prefetch was attached to.  This pass replaces it by prefetches
of the lines of the buffer the body will read at iteration ``v + offset``: each flat
index of the buffer in the body, with ``v`` replaced by ``v + offset`` and the loops
inside the body relaxed over their ranges, spans an interval; their hull, from its
lowest element, is covered line by line.  An inner loop that moves every index by
the same step of a cache line or more (the rows of a 2-D region) is not relaxed but
enumerated: each of its rows is covered on its own, as TVM prefetches the rows of a
multi-dimensional region, instead of every line between them::

    for rci in 0..32:                              for rci in 0..32:
      // attr [kernel] prefetch_scope = 32    ->     for l in 0..2 (unrolled):
      for oci in 0..32 (vectorized):                   prefetch(kernel[base + (rci + 32)*32 + l*16])
        ... kernel[base + rci*32 + oci] ...          for oci in 0..32 (vectorized):
                                                       ... kernel[base + rci*32 + oci] ...

The address is computed on the flattened buffer, so an offset beyond the loop's
extent reaches the memory after it (a reduction's next chunk): a prefetch reads
nothing and never faults, so an address past the end of the buffer is harmless.

A scope is dropped (the body kept as it is) where the region is not a constant
number of elements (a symbolic extent inside), takes more than :data:`MAX_LINES`
lines, or depends on a value computed inside the body; a prefetch is only a hint.

Runs after ``flatten`` and ``simplify`` (1-D indices, the loops still whole); on GPU
targets (``emit=False``) the scopes are dropped: CUDA has no use for a CPU cache hint.
"""
from __future__ import annotations

import math

from .. import dtype as _dt
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..arith.analyzer import Analyzer
from ..arith.int_set import IntervalSet, eval_set
from ..functor import IRMutator, collect_vars, post_order_visit, substitute

#: bytes of a cache line
CACHE_LINE = 64
#: at most this many lines are prefetched for one scope per iteration
MAX_LINES = 64


def _bound_vars(node):
    """``({loop var: For}, {other vars bound below node})``."""
    loops, others = {}, set()

    def visit(n):
        if isinstance(n, S.For):
            loops[n.loop_var] = n
        elif isinstance(n, (S.LetStmt, E.Let)):
            others.add(n.var)

    post_order_visit(node, visit)
    return loops, others


def _range_of(loop):
    """The values ``loop``'s variable takes."""
    return IntervalSet(loop.min, E.Add(loop.min, E.Sub(loop.extent, E.IntImm(loop.extent.dtype, 1))))


def _spans(index):
    """The scalar ends of an index: itself, or a ramp's first and last lanes."""
    if isinstance(index, E.Ramp):
        last = E.Add(index.base, E.Mul(index.stride, E.IntImm(index.stride.dtype, index.lanes - 1)))
        return [index.base, last]
    return [index]


def _step(e, v, ana):
    """How much ``e`` grows when ``v`` grows by one: an int, or None when that is
    not a constant (``e`` is not linear in ``v``)."""
    d = ana.simplify(substitute(e, {v: E.Add(v, E.IntImm(v.dtype, 1))}) - e)
    return int(d.value) if isinstance(d, E.IntImm) else None


def _hull(ends, doms, ana):
    """``(lowest, elements)`` of the interval hull of ``ends`` over ``doms``, or None
    when its size is not a constant."""
    ref, lo_off, hi_off = None, 0, 0
    for e in ends:
        s = eval_set(e, doms, ana)
        if not s.is_bounded():
            return None
        if ref is None:
            ref = s.min_value
        d_lo, d_hi = ana.simplify(s.min_value - ref), ana.simplify(s.max_value - ref)
        if not (isinstance(d_lo, E.IntImm) and isinstance(d_hi, E.IntImm)):
            return None
        lo_off, hi_off = min(lo_off, int(d_lo.value)), max(hi_off, int(d_hi.value))
    return (ana.simplify(ref + lo_off) if lo_off else ref), hi_off - lo_off + 1


def _prefetches(body, data, loop_var, offset, ana):
    """The prefetch statement for what the body reads of the buffer behind ``data``
    at iteration ``loop_var + offset``, or None (see the module docs)."""
    loads = []
    post_order_visit(body, lambda n: loads.append(n) if isinstance(n, E.BufferLoad) and n.buffer.data is data
                     else None)
    if not loads or any(len(ld.indices) != 1 for ld in loads):
        return None
    loops, others = _bound_vars(body)
    if any(collect_vars(ld.indices[0]) & others for ld in loads):
        return None
    buf = loads[0].buffer
    line = max(1, CACHE_LINE // max(1, _dt.parse(buf.dtype).bytes))
    shift = E.Cast(loop_var.dtype, offset) if offset.dtype != loop_var.dtype else offset
    ends = [substitute(e, {loop_var: E.Add(loop_var, shift)}) for ld in loads for e in _spans(ld.indices[0])]
    # rows: inner loops that move every end by the same constant of a line or more are
    # enumerated (a line loop per row); the others are relaxed into the row's interval
    rows = []
    for v, loop in loops.items():
        steps = {_step(e, v, ana) for e in ends}
        if len(steps) == 1 and None not in steps and abs(next(iter(steps))) >= line \
                and isinstance(loop.extent, E.IntImm):
            rows.append(loop)
    relaxed = {v: _range_of(f) for v, f in loops.items() if f not in rows}
    found = _hull(ends, relaxed, ana)
    if found is None and rows:  # fall back to the whole hull
        rows = []
        relaxed = {v: _range_of(f) for v, f in loops.items()}
        found = _hull(ends, relaxed, ana)
    if found is None:
        return None
    start, elements = found
    per_row = -(-elements // line)
    if per_row * math.prod(int(loop.extent.value) for loop in rows) > MAX_LINES:
        return None
    itype = start.dtype
    lv = E.Var("prefetch_line", itype)
    at = start if per_row == 1 else E.Add(start, E.Mul(lv, E.IntImm(itype, line)))
    fresh = {loop.loop_var: E.Var(f"prefetch_{loop.loop_var.name}", loop.loop_var.dtype) for loop in rows}
    stmt = S.Evaluate(E.Call("int32", keys.PREFETCH, (E.BufferLoad(buf, (ana.simplify(substitute(at, fresh)),)),)))
    if per_row > 1:
        stmt = S.For(lv, E.IntImm(itype, 0), E.IntImm(itype, per_row), S.ForKind.UNROLLED, stmt)
    for loop in reversed(rows):
        stmt = S.For(fresh[loop.loop_var], loop.min, loop.extent, S.ForKind.UNROLLED, stmt)
    return stmt


class _Inject(IRMutator):
    def __init__(self, emit):
        self.emit = emit
        self.loops = []
        self.ana = Analyzer()

    def visit_For(self, s):
        self.loops.append(s)
        try:
            return self.generic_visit(s)
        finally:
            self.loops.pop()

    def visit_AttrStmt(self, s):
        if s.attr_key != keys.PREFETCH_SCOPE:
            return self.generic_visit(s)
        body = self.visit(s.body)
        if not self.emit or not self.loops:
            return body
        pre = _prefetches(body, s.node, self.loops[-1].loop_var, s.value, self.ana)
        return body if pre is None else S.seq(pre, body)


def inject_prefetch(func: S.PrimFunc, emit: bool = True) -> S.PrimFunc:
    """Replace the prefetch scopes of ``func`` by prefetches (``emit``) or drop
    them; returns ``func`` itself when it has none."""
    return func.with_body(_Inject(emit).visit(func.body))


__all__ = ["CACHE_LINE", "MAX_LINES", "inject_prefetch"]
