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

Several double-buffered stages attached to the same loop (the scopes come nested:
``AA`` then ``BB``) share the prologue and the prefetch ``if``.  The
``double_buffer_write`` attribute tells barrier insertion (:mod:`.thread_sync`)
that those stores go to the slot the same iteration does not read, so the loop
needs one ``__syncthreads`` per iteration (at its end) instead of two.

Runs on flattened functions (1-D buffers), before virtual threads are injected:
the fetch does not depend on a virtual thread, so it stays a single copy.

Anything else carrying a ``double_buffer_scope`` is a schedule the pass cannot
pipeline; it raises :class:`~tecc.errors.LoweringError` naming the stage.
"""
from __future__ import annotations

from dataclasses import replace

from ...errors import LoweringError
from .. import expr as E
from .. import op as _op
from .. import stmt as S
from ..functor import IRMutator, IRVisitor, substitute
from .flatten import buffer_size
from .simplify import simplify_stmt
from .unroll import copy_with_fresh_bindings

SCOPE_KEY = "double_buffer_scope"
WRITE_KEY = "double_buffer_write"

#: loop kinds a double-buffered stage may be attached to
_PIPELINE_KINDS = (S.ForKind.SERIAL, S.ForKind.UNROLLED)

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
    """Point the accesses of double-buffered buffers at one slot of their twice-as-large twin."""

    def __init__(self, slots):
        self.slots = slots  # data Var -> (new Buffer, element offset of the slot or None)

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
    """One double-buffered stage of a loop: its buffer and the statements filling it."""

    def __init__(self, buf, fetch):
        self.buf = buf
        self.fetch = fetch
        self.size = buffer_size(buf)
        self.twin = replace(buf, shape=(_op.mul(_op.const(2, self.size.dtype), self.size),))


# ----------------------------------------------------------------------------
# the pass
# ----------------------------------------------------------------------------

class _InjectDoubleBuffer(IRMutator):
    def __init__(self):
        self.loops = []  # enclosing For nodes, outermost first

    def visit_For(self, s):
        if not (isinstance(s.body, S.AttrStmt) and s.body.attr_key == SCOPE_KEY):
            self.loops.append(s)
            try:
                return self.generic_visit(s)
            finally:
                self.loops.pop()
        stages, rest = self.peel(s)
        if s.kind not in _PIPELINE_KINDS:
            names = ", ".join(repr(st.buf.name) for st in stages)
            raise LoweringError(
                f"stage {names} is double-buffered (double_buffer) but is computed inside loop "
                f"{s.loop_var.name!r}, which is {_loop_kind_name(s)}; {_HINT}")
        self.loops.append(s)
        try:
            rest = self.visit(rest)
            for st in stages:
                st.fetch = self.visit(st.fetch)
        finally:
            self.loops.pop()
        return self.pipeline(s, stages, rest)

    def visit_AttrStmt(self, s):
        if s.attr_key != SCOPE_KEY:
            return self.generic_visit(s)
        name = s.body.buffer.name if isinstance(s.body, S.Allocate) else getattr(s.node, "name", "?")
        if self.loops:
            where = (f"it is not the first thing computed in loop {self.loops[-1].loop_var.name!r} "
                     "(another stage attached to that loop comes before it; only double-buffered "
                     "stages may precede it)")
        else:
            where = "it is not inside any loop"
        raise LoweringError(f"stage {name!r} is double-buffered (double_buffer) but {where}; {_HINT}")

    # ---------------------------------------------------------------------
    def peel(self, loop):
        """The chain of double-buffer scopes at the top of ``loop``'s body:
        ``([_Stage, ...], rest)``."""
        stages = []
        cur = loop.body
        while isinstance(cur, S.AttrStmt) and cur.attr_key == SCOPE_KEY:
            alloc = cur.body
            assert isinstance(alloc, S.Allocate) and alloc.buffer.data is cur.node, (
                "double_buffer_scope must wrap the allocation of its buffer")
            buf = alloc.buffer
            assert len(buf.shape) == 1, f"inject_double_buffer runs after flatten; {buf.name} is not 1-D"
            body = alloc.body.seq if isinstance(alloc.body, S.SeqStmt) else (alloc.body,)
            # the fetch: the leading statements that store into the buffer
            k = 0
            while k < len(body) and buf.data in _touches(body[k]).writes:
                k += 1
            if k == 0:
                raise LoweringError(f"stage {buf.name!r} is double-buffered but nothing at the top of loop "
                                    f"{loop.loop_var.name!r} fills it; {_HINT}")
            fetch = S.seq(*body[:k])
            rest = S.seq(*body[k:])
            if buf.data in _touches(rest).writes:
                raise LoweringError(f"stage {buf.name!r} is double-buffered but is written again after its "
                                    f"fetch in loop {loop.loop_var.name!r}; the next tile would be overwritten")
            used = _touches(fetch)
            for earlier in stages:
                if earlier.buf.data in used.reads or earlier.buf.data in used.writes:
                    raise LoweringError(
                        f"double-buffered stage {buf.name!r} reads double-buffered stage {earlier.buf.name!r} "
                        f"of the same loop {loop.loop_var.name!r}; only one of them can be double-buffered")
            stages.append(_Stage(buf, fetch))
            cur = rest
        return stages, cur

    def pipeline(self, loop, stages, rest):
        ko = loop.loop_var
        dtype = ko.dtype
        one = _op.const(1, dtype)
        two = _op.const(2, dtype)
        from_zero = E.is_const_int(loop.min, 0)
        end = loop.extent if from_zero else _op.add(loop.min, loop.extent)

        def slot(i):
            """Which of the two slots iteration ``i`` reads."""
            return _op.floormod(i if from_zero else _op.sub(i, loop.min), two)

        # prologue: the first tile into slot 0
        first = {st.buf.data: (st.twin, None) for st in stages}
        prologue = []
        for st in stages:
            fetch0 = copy_with_fresh_bindings(st.fetch, {ko: loop.min})
            prologue.append(_Retarget(first).visit(fetch0))
        prologue = simplify_stmt(S.seq(*prologue))
        extent = E.const_int_value(loop.extent)
        if extent is None:
            prologue = S.IfThenElse(E.LT(loop.min, end), prologue)
        elif extent <= 0:
            prologue = None
        # prefetch of the next tile into the other slot
        nxt = _op.add(ko, one)
        write_slot = slot(nxt)
        read_slot = slot(ko)
        prefetch = []
        for st in stages:
            slots = {st.buf.data: (st.twin, _op.mul(write_slot, st.size))}
            fetch = simplify_stmt(_Retarget(slots).visit(substitute(st.fetch, {ko: nxt})))
            prefetch.append(S.AttrStmt(st.buf.data, WRITE_KEY, _op.const(1, "int32"), fetch))
        prefetch = S.IfThenElse(E.LT(nxt, end), S.seq(*prefetch))
        reads = {st.buf.data: (st.twin, _op.mul(read_slot, st.size)) for st in stages}
        body = S.seq(prefetch, _Retarget(reads).visit(rest))
        stmt = S.seq(prologue, replace(loop, body=body))
        for st in reversed(stages):
            stmt = S.Allocate(st.twin, stmt)
        return stmt


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
