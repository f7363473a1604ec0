"""Turn the scopes of ``Stage.prefetch`` into prefetches of cache lines (TVM's
InjectPrefetch).

te lowering leaves ``AttrStmt(data, "prefetch_scope", offset)`` at the top of the body
of the loop ``v`` the prefetch was attached to.  This pass replaces it by prefetches
of the lines of the buffer the body will read at iteration ``v + offset``: each flat
index of the buffer in the body, with the loops inside the body relaxed over their
ranges and ``v`` replaced by ``v + offset``, spans an interval; their hull, from its
lowest element, is covered line by line::

    for rci in 0..32:                              for rci in 0..32:
      // attr [kernel] prefetch_scope = 32    ->     for l in 0..2 (unrolled):
      for oci in 0..32 (vectorized):                   prefetch(kernel[base + (rci + 32)*32 + l*16])
        ... kernel[base + rci*32 + oci] ...          for oci in 0..32 (vectorized):
                                                       ... kernel[base + rci*32 + oci] ...

The address is computed on the flattened buffer, so an offset beyond the loop's
extent reaches the memory after it (a reduction's next chunk): a prefetch reads
nothing and never faults, so an address past the end of the buffer is harmless.

A scope is dropped (the body kept as it is) where the region is not a constant
number of elements (a symbolic extent inside), spans more than :data:`MAX_LINES`
lines, or depends on a value computed inside the body; a prefetch is only a hint.

Runs after ``flatten`` and ``simplify`` (1-D indices, the loops still whole); on GPU
targets (``emit=False``) the scopes are dropped: CUDA has no use for a CPU cache hint.
"""
from __future__ import annotations

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
    """``({loop var: IntervalSet}, {other vars bound below node})``."""
    loops, others = {}, set()

    def visit(n):
        if isinstance(n, S.For):
            loops[n.loop_var] = IntervalSet(n.min, E.Add(n.min, E.Sub(n.extent, E.IntImm(n.extent.dtype, 1))))
        elif isinstance(n, (S.LetStmt, E.Let)):
            others.add(n.var)

    post_order_visit(node, visit)
    return loops, others


def _region(body, data, loop_var, offset, ana):
    """``(buffer, lowest index, elements)`` the body reads of the buffer behind
    ``data`` at iteration ``loop_var + offset``, or None (see the module docs)."""
    loads = []
    post_order_visit(body, lambda n: loads.append(n) if isinstance(n, E.BufferLoad) and n.buffer.data is data
                     else None)
    if not loads or any(len(ld.indices) != 1 for ld in loads):
        return None
    loops, others = _bound_vars(body)
    shifted = {loop_var: E.Add(loop_var, E.Cast(loop_var.dtype, offset) if offset.dtype != loop_var.dtype
                               else offset)}
    ref, lo_off, hi_off = None, None, None
    for ld in loads:
        index = ld.indices[0]
        if collect_vars(index) & others:
            return None
        spans = [index]
        if isinstance(index, E.Ramp):
            last = E.Add(index.base, E.Mul(index.stride, E.IntImm(index.stride.dtype, index.lanes - 1)))
            spans = [index.base, last]
        for e in spans:
            s = eval_set(substitute(e, shifted), loops, ana)
            if not s.is_bounded():
                return None
            lo, hi = s.min_value, s.max_value
            if ref is None:
                ref, lo_off, hi_off = lo, 0, 0
            d_lo, d_hi = ana.simplify(lo - ref), ana.simplify(hi - ref)
            if not (isinstance(d_lo, E.IntImm) and isinstance(d_hi, E.IntImm)):
                return None
            lo_off, hi_off = min(lo_off, int(d_lo.value)), max(hi_off, int(d_hi.value))
    start = ana.simplify(ref + lo_off) if lo_off else ref
    return loads[0].buffer, start, hi_off - lo_off + 1


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
        found = _region(body, s.node, self.loops[-1].loop_var, s.value, self.ana)
        if found is None:
            return body
        buf, start, elements = found
        line = max(1, CACHE_LINE // max(1, _dt.parse(buf.dtype).bytes))
        lines = -(-elements // line)
        if lines > MAX_LINES:
            return body
        itype = start.dtype

        def fetch(at):
            return S.Evaluate(E.Call("int32", keys.PREFETCH, (E.BufferLoad(buf, (at,)),)))

        if lines == 1:
            pre = fetch(start)
        else:
            lv = E.Var("prefetch_line", itype)
            pre = S.For(lv, E.IntImm(itype, 0), E.IntImm(itype, lines), S.ForKind.UNROLLED,
                        fetch(self.ana.simplify(start + lv * line)))
        return S.seq(pre, body)


def inject_prefetch(func: S.PrimFunc, emit: bool = True) -> S.PrimFunc:
    """Replace the prefetch scopes of ``func`` by prefetches (``emit``) or drop
    them; returns ``func`` itself when it has none."""
    return func.with_body(_Inject(emit).visit(func.body))


__all__ = ["CACHE_LINE", "MAX_LINES", "inject_prefetch"]
