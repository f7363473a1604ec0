"""Double buffering: fetch the next tile of a loop while the current one is used.

Lowering marks a stage scheduled with ``s[T].double_buffer()`` where it is
attached (``compute_at``) to a loop::

    for (ko, 0, n) {
      // attr [S] double_buffer_scope = 1
      allocate S[size]
      fetch(ko)            // the stores that fill S
      rest(ko)             // what reads S (possibly further double-buffered stages)
    }

This pass gives ``S`` two slots of ``size`` elements, allocated outside the loop,
and turns the loop into a pipeline::

    allocate S[2 * size]
    fetch(0) into slot 0                          // prologue (guarded if n may be 0)
    for (ko, 0, n) {
      if (ko + 1 < n) {
        // attr [S] double_buffer_write = 1
        fetch(ko + 1) into slot (ko + 1) % 2      // prefetch the next tile
      }
      rest(ko) reading slot ko % 2
    }

With ``register_prefetch`` (the scope's value is 2) the prefetch is split, as
CUTLASS's main loops do: each thread loads its share of the next tile into
registers at the top of the iteration and stores it into the free slot at the end::

    for (ko, 0, n) {
      fetch(min(ko + 1, n - 1)) into registers R        // loads issued...
      rest(ko) reading slot ko % 2                      // ...computation runs meanwhile
      // attr [S] double_buffer_write = 1
      R into slot (ko + 1) % 2                          // the last iteration: its own tile
    }                                                   //   again, into a slot nobody reads

A direct prefetch stores each loaded value right away, so the thread waits for the
global load before it computes (ptxas does not move the shared-memory stores past
the reads of the other slot of the same array).  Neither half has a condition:
ptxas sinks loads under the condition of their stores, or schedules predicated ones
late, next to the stores.  The split applies to a fetch made of
constant-extent loops (serial, unrolled, vectorized; thread-bound ones stay) and
``if``s around one store per statement, staging at most :data:`MAX_STAGED` elements
per thread; any other fetch is prefetched directly.

Several double-buffered stages attached to the same loop (the scopes come nested:
``AA`` then ``BB``) share the prologue and the prefetch ``if``.  A scope need not
open the loop body: after another stage attached to the same loop, its prefetch
stays where its fetch was, as long as it runs once per iteration (reached through
sequences and allocations only) and its fetch reads nothing the loop computes.
The ``double_buffer_write`` attribute tells barrier insertion (:mod:`.thread_sync`)
that those stores go to the slot the same iteration does not read, so the GEMM
loop needs one ``__syncthreads`` per iteration (at its end) instead of two.

Runs on flattened functions (1-D buffers), before virtual threads are injected
and loops unrolled, while each scope still sits in the loop it belongs to.

A ``double_buffer_scope`` the pass cannot pipeline (under a condition, in a
vectorized, parallel or thread-bound loop, or whose fetch depends on the same
iteration) raises :class:`~tecc.errors.LoweringError` naming the stage.
"""
from __future__ import annotations

from dataclasses import replace

from ...errors import LoweringError
from .. import expr as E
from .. import op as _op
from .. import dtype as _dt
from .. import keys
from .. import stmt as S
from ..functor import IRMutator, IRVisitor, post_order_visit, substitute
from ..analysis.buffers import buffer_size
from ..stmt import decl_buffer
from .simplify import simplify_stmt
from .unroll import copy_with_fresh_bindings

SCOPE_KEY = keys.DOUBLE_BUFFER_SCOPE
WRITE_KEY = keys.DOUBLE_BUFFER_WRITE

#: loop kinds a double-buffered stage may be attached to
_PIPELINE_KINDS = (S.ForKind.SERIAL, S.ForKind.UNROLLED)

#: most elements one thread stages in registers for the ``register_prefetch`` of one
#: stage (a 128x16 float tile over 256 threads is 8); a larger fetch is prefetched directly
MAX_STAGED = 64

_HINT = ("double_buffer applies to a stage computed (compute_at) directly inside a serial loop, "
         "e.g. the outer reduction loop of a tiled GEMM: s[AA].compute_at(s[CC], ko)")


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

class _Touches(IRVisitor):
    """Which buffers (by data Var) a statement reads and writes."""

    def __init__(self):
        self.reads = set()
        self.writes = set()

    def visit_BufferLoad(self, e):
        self.reads.add(e.buffer.data)
        self.generic_visit(e)

    def visit_BufferStore(self, s):
        self.writes.add(s.buffer.data)
        self.generic_visit(s)


def _touches(stmt):
    t = _Touches()
    t.visit(stmt)
    return t


def _shift(index, offset):
    if offset is None:
        return index
    if isinstance(index, E.Ramp):
        return E.Ramp(_op.add(index.base, offset), index.stride, index.lanes)
    if isinstance(index, E.Broadcast):
        return E.Broadcast(_op.add(index.value, offset), index.lanes)
    return _op.add(index, offset)


class _Retarget(IRMutator):
    """Point the accesses of double-buffered buffers at one slot of their twice-as-large twin
    (leaving alone what is under an attribute ``skip_key``)."""

    def __init__(self, slots, skip_key=None):
        self.slots = slots  # data Var -> (new Buffer, element offset of the slot or None)
        self.skip_key = skip_key

    def visit_AttrStmt(self, s):
        if s.attr_key == self.skip_key:
            return s
        return self.generic_visit(s)

    def visit_BufferLoad(self, e):
        new = self.generic_visit(e)
        slot = self.slots.get(e.buffer.data)
        if slot is None:
            return new
        buf, offset = slot
        return E.BufferLoad(buf, (_shift(new.indices[0], offset),))

    def visit_BufferStore(self, s):
        new = self.generic_visit(s)
        slot = self.slots.get(s.buffer.data)
        if slot is None:
            return new
        buf, offset = slot
        return S.BufferStore(buf, new.value, (_shift(new.indices[0], offset),))


def _loop_kind_name(loop):
    if loop.kind is S.ForKind.THREAD_BINDING and loop.thread_binding is not None:
        return f"bound to {loop.thread_binding.thread_tag}"
    return {S.ForKind.VECTORIZED: "vectorized", S.ForKind.PARALLEL: "parallel"}.get(loop.kind, str(loop.kind))


class _Stage:
    """One double-buffered stage of a loop: its buffers (one per output) and the
    statements filling them."""

    def __init__(self, bufs, fetch, registers=False):
        self.bufs = bufs
        self.fetch = fetch
        self.registers = registers  # register_prefetch asked for
        self.staging = []           # the register buffers of a split prefetch
        self.name = ", ".join(b.name for b in bufs)
        self.data = {b.data for b in bufs}
        self.sizes = {}
        self.twins = {}
        for b in bufs:
            size = buffer_size(b)
            self.sizes[b.data] = size
            self.twins[b.data] = replace(b, shape=(_op.mul(_op.const(2, size.dtype), size),))

    def slots(self, slot):
        """Retargeting map to slot ``slot`` (an expression; None: slot 0)."""
        return {d: (self.twins[d], None if slot is None else _op.mul(slot, self.sizes[d])) for d in self.data}


# ----------------------------------------------------------------------------
# the pass
# ----------------------------------------------------------------------------

class _Loop:
    """The loop being pipelined: iteration bounds and slot expressions."""

    def __init__(self, loop):
        self.loop = loop
        ko = loop.loop_var
        two = _op.const(2, ko.dtype)
        from_zero = E.is_const_int(loop.min, 0)
        self.end = loop.extent if from_zero else _op.add(loop.min, loop.extent)
        self.next = _op.add(ko, _op.const(1, ko.dtype))
        # the slot iteration i reads: (i - min) % 2
        self.read_slot = _op.floormod(ko if from_zero else _op.sub(ko, loop.min), two)
        self.write_slot = _op.floormod(self.next if from_zero else _op.sub(self.next, loop.min), two)
        self.has_next = E.LT(self.next, self.end)   # one object: adjacent prefetches merge on it
        # the next iteration, or the last one from the last: always one the loop runs
        self.clamped_next = _op.min(self.next, _op.sub(self.end, _op.const(1, ko.dtype)))


class _InjectDoubleBuffer(IRMutator):
    def __init__(self):
        self.loops = []  # enclosing For nodes, outermost first

    def visit_For(self, s):
        self.loops.append(s)
        lp = _Loop(s)
        try:
            stages = []
            body = self.per_iteration(s.body, lp, stages, frozenset())
        finally:
            self.loops.pop()
        if not stages:
            return s if body is s.body else replace(s, body=body)
        return self.pipeline(lp, stages, body)

    def visit_AttrStmt(self, s):
        if s.attr_key != SCOPE_KEY:
            return self.generic_visit(s)
        # a scope that per_iteration did not reach: not run once per iteration of a loop
        name = getattr(s.node, "name", "?")
        if self.loops:
            where = (f"it is computed under a condition or a let inside loop "
                     f"{self.loops[-1].loop_var.name!r}, not once per iteration")
        else:
            where = "it is not inside any loop"
        raise LoweringError(f"stage {name!r} is double-buffered (double_buffer) but {where}; {_HINT}")

    # ---------------------------------------------------------------------
    def per_iteration(self, stmt, lp, stages, allocs):
        """Rewrite the statements of ``lp``'s body that run once per iteration
        (reached through sequences and allocations): every double-buffer scope
        becomes the prefetch of its next tile, and its stage joins ``stages``.
        ``allocs``: buffers allocated on the way from the loop (data Vars)."""
        if isinstance(stmt, S.SeqStmt):
            new = [self.per_iteration(x, lp, stages, allocs) for x in stmt.seq]
            if all(a is b for a, b in zip(new, stmt.seq)):
                return stmt
            return S.seq(*new)
        if isinstance(stmt, S.Allocate):
            body = self.per_iteration(stmt.body, lp, stages, allocs | {stmt.buffer.data})
            return stmt if body is stmt.body else replace(stmt, body=body)
        if isinstance(stmt, S.AttrStmt) and stmt.attr_key == SCOPE_KEY:
            stage, rest = self.peel(stmt, lp, allocs)
            stages.append(stage)
            ko = lp.loop.loop_var
            split = _split_through_registers(stage.fetch) if stage.registers else None
            loads = None
            if split is None:
                fetch = substitute(stage.fetch, {ko: lp.next})
            else:
                loads, fetch, stage.staging = split
                # no condition: the last iteration loads its own tile again and stores it
                # into the free slot, which nothing reads after the loop.  ptxas sinks a
                # load under the condition of its store, or schedules a predicated one
                # late, right before the store (seen in the SASS of the SGEMM, sm_90)
                loads = simplify_stmt(substitute(loads, {ko: lp.clamped_next}))
                fetch = substitute(fetch, {ko: lp.clamped_next})
            fetch = simplify_stmt(_Retarget(stage.slots(lp.write_slot)).visit(fetch))
            for b in reversed(stage.bufs):
                fetch = S.AttrStmt(b.data, WRITE_KEY, _op.const(1, "int32"), fetch)
            rest = self.per_iteration(rest, lp, stages, allocs | stage.data)
            if loads is not None:  # loads first, the stores into the free slot last
                return S.seq(loads, rest, fetch)
            return S.seq(S.IfThenElse(lp.has_next, fetch), rest)
        return self.visit(stmt)

    def peel(self, scope, lp, allocs):
        """One double-buffered stage at ``scope``: ``(_Stage, rest)``."""
        loop = lp.loop
        # a scope per output buffer, then their allocations
        marked = []
        cur = scope
        while isinstance(cur, S.AttrStmt) and cur.attr_key == SCOPE_KEY:
            marked.append(cur.node)
            cur = cur.body
        bufs = []
        while isinstance(cur, S.Allocate) and cur.buffer.data in marked:
            bufs.append(cur.buffer)
            cur = cur.body
        assert len(bufs) == len(marked), "double_buffer_scope must wrap the allocations of its buffers"
        for b in bufs:
            assert len(b.shape) == 1, f"inject_double_buffer runs after flatten; {b.name} is not 1-D"
        stage = _Stage(bufs, None, registers=E.const_int_value(scope.value) == 2)
        if loop.kind not in _PIPELINE_KINDS:
            raise LoweringError(
                f"stage {stage.name!r} is double-buffered (double_buffer) but is computed inside loop "
                f"{loop.loop_var.name!r}, which is {_loop_kind_name(loop)}; {_HINT}")
        body = cur.seq if isinstance(cur, S.SeqStmt) else (cur,)
        # the fetch: the leading statements that store into the stage's buffers
        k = 0
        while k < len(body) and stage.data & _touches(body[k]).writes:
            k += 1
        if k == 0:
            raise LoweringError(f"stage {stage.name!r} is double-buffered but nothing in loop "
                                f"{loop.loop_var.name!r} fills it; {_HINT}")
        stage.fetch = self.visit(S.seq(*body[:k]))
        rest = S.seq(*body[k:])
        if stage.data & _touches(rest).writes:
            raise LoweringError(f"stage {stage.name!r} is double-buffered but is written again after its "
                                f"fetch in loop {loop.loop_var.name!r}; the next tile would be overwritten")
        used = _touches(stage.fetch)
        inner = (used.reads | used.writes) & allocs
        if inner:
            names = sorted(_buffer_names(scope.body, inner) or ["?"])
            raise LoweringError(
                f"double-buffered stage {stage.name!r} uses {', '.join(repr(n) for n in names)}, which loop "
                f"{loop.loop_var.name!r} computes in the same iteration, so its next tile cannot be fetched "
                f"ahead; double-buffer the stages it reads from instead, or compute them outside the loop")
        return stage, rest

    def pipeline(self, lp, stages, body):
        loop = lp.loop
        ko = loop.loop_var
        # the fetches may only read what the loop leaves alone
        written = _writes_outside_prefetch(body)
        for st in stages:
            clash = _touches(st.fetch).reads & written
            if clash:
                raise LoweringError(
                    f"double-buffered stage {st.name!r} reads a buffer that loop {loop.loop_var.name!r} "
                    "writes, so its next tile cannot be fetched ahead of the iteration that needs it")
        # reads of the current tile go to slot (ko - min) % 2
        reads = {}
        for st in stages:
            reads.update(st.slots(lp.read_slot))
        body = _Retarget(reads, skip_key=WRITE_KEY).visit(body)
        for st in stages:
            for reg in st.staging:  # registers live for one iteration: allocated in the body
                body = S.Allocate(reg, body)
        body = _merge_prefetches(body, lp.has_next)
        # prologue: the first tile into slot 0
        prologue = []
        for st in stages:
            fetch0 = copy_with_fresh_bindings(st.fetch, {ko: loop.min})
            prologue.append(_Retarget(st.slots(None)).visit(fetch0))
        prologue = simplify_stmt(S.seq(*prologue))
        extent = E.const_int_value(loop.extent)
        if extent is None:
            prologue = S.IfThenElse(E.LT(loop.min, lp.end), prologue)
        elif extent <= 0:
            prologue = None
        stmt = S.seq(prologue, replace(loop, body=body))
        for st in reversed(stages):
            for b in reversed(st.bufs):
                stmt = S.Allocate(st.twins[b.data], stmt)
        return stmt


def _nest(stmt):
    """``(levels, store)`` of a perfect nest -- loops and else-less ``if``s around
    one store -- or None."""
    levels = []
    while True:
        if isinstance(stmt, S.BufferStore):
            return levels, stmt
        if isinstance(stmt, S.For):
            levels.append(stmt)
            stmt = stmt.body
        elif isinstance(stmt, S.IfThenElse) and stmt.else_case is None:
            levels.append(stmt)
            stmt = stmt.then_case
        else:
            return None


def _rebuild(levels, leaf, unroll=False):
    """The nest ``levels`` around ``leaf``; with ``unroll`` its serial loops unrolled."""
    body = leaf
    for level in reversed(levels):
        if isinstance(level, S.For):
            kind = S.ForKind.UNROLLED if unroll and level.kind is S.ForKind.SERIAL else level.kind
            body = replace(level, kind=kind, body=body)
        else:
            body = replace(level, then_case=body)
    return body


_STAGED_KINDS = (S.ForKind.SERIAL, S.ForKind.UNROLLED, S.ForKind.VECTORIZED)


def _split_through_registers(fetch):
    """``(loads, stores, registers)`` of a prefetch (already retargeted to the
    free slot) split through registers: per statement of ``fetch``, the nest with
    its store's value kept in a local buffer (its serial loops unrolled, so the
    buffer's indices become constants: registers), and the same nest storing from
    that buffer.  None when a statement is not a perfect nest of constant-extent
    loops, or the fetch stages more than :data:`MAX_STAGED` elements per thread."""
    loads, stores, registers = [], [], []
    staged = 0
    for stmt in (fetch.seq if isinstance(fetch, S.SeqStmt) else (fetch,)):
        nest = _nest(stmt)
        if nest is None:
            return None
        levels, store = nest
        if len(store.indices) != 1 or _dt.lanes(store.value.dtype) != 1:
            return None
        index, size = _op.const(0, "int32"), 1
        for level in reversed(levels):
            if not isinstance(level, S.For) or level.kind is S.ForKind.THREAD_BINDING:
                continue
            extent = E.const_int_value(level.extent)
            if level.kind not in _STAGED_KINDS or extent is None or not E.is_const_int(level.min, 0):
                return None
            index = _op.add(index, _op.mul(level.loop_var, _op.const(size, "int32")))
            size *= extent
        staged += size
        if staged > MAX_STAGED:
            return None
        reg = decl_buffer((size,), store.buffer.dtype, f"{store.buffer.name}.prefetch", scope="local")
        registers.append(reg)
        loads.append(_rebuild(levels, S.BufferStore(reg, store.value, (index,)), unroll=True))
        kept = S.BufferStore(store.buffer, E.BufferLoad(reg, (index,)), store.indices)
        stores.append(copy_with_fresh_bindings(_rebuild(levels, kept, unroll=True)))
    return simplify_stmt(S.seq(*loads)), simplify_stmt(S.seq(*stores)), registers


def _buffer_names(stmt, datas):
    names = set()

    def f(n):
        if isinstance(n, (S.BufferStore, E.BufferLoad, S.Allocate)) and n.buffer.data in datas:
            names.add(n.buffer.name)

    post_order_visit(stmt, f)
    return names


class _WritesOutsidePrefetch(_Touches):
    def visit_AttrStmt(self, s):
        if s.attr_key != WRITE_KEY:
            self.generic_visit(s)


def _writes_outside_prefetch(stmt):
    t = _WritesOutsidePrefetch()
    t.visit(stmt)
    return t.writes


def _merge_prefetches(stmt, cond):
    """Adjacent prefetches ``if (cond) ...`` of one loop body become one ``if``."""
    if isinstance(stmt, S.Allocate):
        body = _merge_prefetches(stmt.body, cond)
        return stmt if body is stmt.body else replace(stmt, body=body)
    if not isinstance(stmt, S.SeqStmt):
        return stmt
    out = []
    changed = False
    for x in stmt.seq:
        x2 = _merge_prefetches(x, cond)
        changed = changed or x2 is not x
        prev = out[-1] if out else None
        if (isinstance(x2, S.IfThenElse) and x2.condition is cond and isinstance(prev, S.IfThenElse)
                and prev.condition is cond and prev.else_case is None and x2.else_case is None):
            out[-1] = S.IfThenElse(cond, S.seq(prev.then_case, x2.then_case))
            changed = True
        else:
            out.append(x2)
    return S.seq(*out) if changed else stmt


def inject_double_buffer_stmt(stmt: S.Stmt) -> S.Stmt:
    """Pipeline the double-buffered stages below ``stmt`` (see the module docs)."""
    return _InjectDoubleBuffer().visit(stmt)


def inject_double_buffer(func: S.PrimFunc) -> S.PrimFunc:
    """Turn every ``double_buffer_scope`` of ``func`` into a two-slot pipeline over its loop.

    Parameters
    ----------
    func : PrimFunc
        A flattened function, as lowering marks it: a stage scheduled with
        ``double_buffer()`` is an ``AttrStmt(data, "double_buffer_scope", 1,
        Allocate(buf, seq(fetch, rest)))`` forming the body of the loop it is
        attached to.

    Returns
    -------
    PrimFunc
        ``func`` itself when nothing is double-buffered; otherwise the buffers
        have two slots, the first tile is fetched before the loop, each
        iteration prefetches the next tile (stores wrapped in a
        ``double_buffer_write`` attribute) and reads the current one.

    Raises
    ------
    LoweringError
        If a double-buffered stage is not the first thing computed in a serial
        (or unrolled) loop, or its fetch depends on another double-buffered
        stage of the same loop.
    """
    return func.with_body(inject_double_buffer_stmt(func.body))


__all__ = ["SCOPE_KEY", "WRITE_KEY", "inject_double_buffer", "inject_double_buffer_stmt"]
