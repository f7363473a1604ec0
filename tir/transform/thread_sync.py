"""Insert ``__syncthreads()`` barriers around shared-memory hazards.

Runs on device functions of the kernel contract (flattened; the thread index of a
tag is the Var of its ``thread_extent`` IterVar).  The barrier is
``Evaluate(Call("int32", "tvm_storage_sync", (StringImm("shared"),)))``.

Only buffers of scope ``"shared"`` matter: ``"local"`` memory is private to a
thread and ``__syncthreads`` says nothing useful about global memory.

Method (a linear scan, as TVM's storage-sync planner)
-----------------------------------------------------
Every statement is summarised by the shared accesses it may make before its
first barrier (``head``), those after its last barrier (``tail``) and whether
every path through it executes a barrier.  A sequence is scanned left to right
keeping the accesses made since the last barrier; a barrier goes before the
first statement whose ``head`` reads a buffer written since then (RAW) or writes
one read since then (WAR).  Write-after-write is not a hazard here (as in TVM).

A loop first plans its body on its own, then checks the loop-carried case: the
body's ``tail`` (end of iteration ``i``) against its ``head`` (start of
iteration ``i + 1``).  On a conflict a barrier goes at the END of the body, so
the tiled GEMM loop becomes ``for ko { write AS; sync; read AS; sync }``.
An expression evaluated before a body (a let value, a uniform condition, loop
bounds) that races with the start of the body gets a barrier at that start.

Never inside divergent code: an ``if`` whose condition depends on a thread
index (or on per-thread ``local`` memory), a loop whose bounds do, ``while``
loops and vectorized or parallel loops are treated as single statements -- a
needed barrier goes before them, none inside.  A hazard entirely inside such a
statement cannot be fixed with ``__syncthreads``; it is left as it is (the
GPU-semantics checker reports such races).

The analysis is deliberately conservative: any read and write of the same
shared buffer by different statements counts as a conflict, whatever the
indices.

Double buffering (TVM's rule)
-----------------------------
Stores under ``AttrStmt(data, "double_buffer_write", ...)`` (made by
:mod:`.inject_double_buffer`) fill the slot of a two-slot buffer that the
current loop iteration does not read.  Such a store and a read of the same
buffer in the same iteration, in either order, are no conflict (TVM's rule covers
the store before the read; a prefetch through registers stores after the
iteration's reads); across iterations (the loop-carried check) it is an ordinary
write.  So the pipelined GEMM loop ``for ko { prefetch next slot; read this slot }``
-- or ``for ko { load next tile; read this slot; store next slot }`` -- gets a single
barrier, at the end of its body, plus one between the prologue fetch and the loop.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import expr as E
from .. import keys
from .. import stmt as S
from ..analysis.buffers import allocations
from ..functor import IRVisitor
from .inject_double_buffer import WRITE_KEY as DB_WRITE_KEY

SYNC_OP = keys.STORAGE_SYNC


def storage_sync(scope: str = "shared") -> S.Evaluate:
    """The barrier statement ``tvm_storage_sync(scope)`` (``__syncthreads()`` for shared)."""
    return S.Evaluate(E.Call("int32", SYNC_OP, (E.StringImm(scope),)))


def is_storage_sync(stmt) -> bool:
    """True if ``stmt`` is a ``tvm_storage_sync("shared")`` barrier."""
    if not isinstance(stmt, S.Evaluate):
        return False
    call = stmt.value
    return (isinstance(call, E.Call) and call.op == SYNC_OP and len(call.args) == 1
            and isinstance(call.args[0], E.StringImm) and call.args[0].value == "shared")


def _is_shared(buf) -> bool:
    return buf.scope.startswith("shared")


# ----------------------------------------------------------------------------
# access summaries
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Access:
    """Shared buffers (by data Var) read and written; ``db_writes``: written into the
    other slot of a double buffer (see the module docs)."""

    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    db_writes: frozenset = frozenset()

    def empty(self) -> bool:
        return not self.reads and not self.writes and not self.db_writes

    def __or__(self, other):
        if other.empty():
            return self
        if self.empty():
            return other
        return _Access(self.reads | other.reads, self.writes | other.writes, self.db_writes | other.db_writes)

    def conflicts_with(self, later, loop_carried: bool = False) -> bool:
        """True if ``later`` (after this, with no barrier between) races with it.

        ``loop_carried``: ``later`` runs in the next iteration of a loop, where a
        double-buffer write lands in the slot that is then read."""
        if self.writes & later.reads or self.reads & later.writes:
            return True
        return loop_carried and bool(self.db_writes & later.reads or self.reads & later.db_writes)


_NONE = _Access()


@dataclass(frozen=True)
class _Summary:
    """``head``: accesses before the first barrier; ``tail``: after the last;
    ``barrier``: every path runs at least one barrier."""

    head: _Access
    tail: _Access
    barrier: bool


_EMPTY = _Summary(_NONE, _NONE, False)
_BARRIER = _Summary(_NONE, _NONE, True)


def _leaf(acc: _Access) -> _Summary:
    return _Summary(acc, acc, False)


def _then(a: _Summary, b: _Summary) -> _Summary:
    """The summary of ``a`` followed by ``b``."""
    head = a.head if a.barrier else a.head | b.head
    tail = b.tail if b.barrier else a.tail | b.tail
    return _Summary(head, tail, a.barrier or b.barrier)


def _sync_first(own: _Access, body, sb: _Summary):
    """Put a barrier at the start of ``body`` if it races with ``own``, the accesses of
    the expression evaluated just before it (a let value, a condition, loop bounds)."""
    if not own.conflicts_with(sb.head):
        return body, sb
    return S.seq(storage_sync(), body), _then(_BARRIER, sb)


class _CollectAccess(IRVisitor):
    def __init__(self, db_scopes=(), shared_vars=frozenset()):
        self.reads = set()
        self.writes = set()
        self.db_writes = set()
        self.db_scopes = list(db_scopes)  # data Vars inside their double_buffer_write attribute
        self.shared_vars = shared_vars    # data Vars of the shared allocations (for access_ptr)

    def visit_BufferLoad(self, e):
        if _is_shared(e.buffer):
            self.reads.add(e.buffer.data)
        self.generic_visit(e)

    def visit_BufferStore(self, s):
        if _is_shared(s.buffer):
            if s.buffer.data in self.db_scopes:
                self.db_writes.add(s.buffer.data)
            else:
                self.writes.add(s.buffer.data)
        self.generic_visit(s)

    def visit_Call(self, e):
        # an address handed to an intrinsic (a tensor-core load or store reads or
        # writes the region): tvm_access_ptr(type, data, offset, extent, mask)
        if e.op == keys.ACCESS_PTR and e.args[1] in self.shared_vars:
            mask = E.const_int_value(e.args[4])
            if mask is None or mask & 1:
                self.reads.add(e.args[1])
            if mask is None or mask & 2:
                (self.db_writes if e.args[1] in self.db_scopes else self.writes).add(e.args[1])
        self.generic_visit(e)

    def visit_AttrStmt(self, s):
        if s.attr_key != DB_WRITE_KEY:
            return self.generic_visit(s)
        self.db_scopes.append(s.node)
        self.generic_visit(s)
        self.db_scopes.pop()


def _accesses(*nodes, db_scopes=(), shared_vars=frozenset()) -> _Access:
    c = _CollectAccess(db_scopes, shared_vars)
    for n in nodes:
        if n is not None:
            c.visit(n)
    if not c.reads and not c.writes and not c.db_writes:
        return _NONE
    return _Access(frozenset(c.reads), frozenset(c.writes), frozenset(c.db_writes))


# ----------------------------------------------------------------------------
# thread dependence
# ----------------------------------------------------------------------------

class _ThreadDependence(IRVisitor):
    """Does an expression vary between the threads of one block?"""

    def __init__(self, tainted):
        self.tainted = tainted
        self.found = False

    def visit_Var(self, v):
        if v in self.tainted or v.name.startswith("threadIdx."):
            self.found = True

    def visit_BufferLoad(self, e):
        if e.buffer.scope in ("local", "warp"):
            self.found = True  # per-thread memory: its content may differ per thread
        self.generic_visit(e)


# ----------------------------------------------------------------------------
# the planner
# ----------------------------------------------------------------------------

class _Planner:
    def __init__(self, thread_vars=(), shared_vars=frozenset()):
        self.tainted = set(thread_vars)  # thread indices and values derived from them
        self.shared_vars = shared_vars   # data Vars of the shared allocations
        self.db_scopes = []              # buffers (data Vars) inside their double_buffer_write attribute

    def accesses(self, *nodes) -> _Access:
        return _accesses(*nodes, db_scopes=self.db_scopes, shared_vars=self.shared_vars)

    def depends_on_thread(self, *exprs) -> bool:
        finder = _ThreadDependence(self.tainted)
        for e in exprs:
            if e is not None:
                finder.visit(e)
        return finder.found

    # statements ----------------------------------------------------------------
    def plan(self, s):
        """Return ``(new_stmt, summary)``."""
        if is_storage_sync(s):
            return s, _BARRIER
        if isinstance(s, S.SeqStmt):
            return self.plan_seq(s)
        if isinstance(s, S.For):
            return self.plan_for(s)
        if isinstance(s, S.IfThenElse):
            return self.plan_if(s)
        if isinstance(s, S.LetStmt):
            if self.depends_on_thread(s.value):
                self.tainted.add(s.var)
            return self.plan_wrapper(s, s.value)
        if isinstance(s, S.AttrStmt):
            node = s.node
            if (s.attr_key == keys.THREAD_EXTENT and isinstance(node, E.IterVar)
                    and node.thread_tag.startswith("threadIdx")):
                self.tainted.add(node.var)
            if s.attr_key == DB_WRITE_KEY:
                self.db_scopes.append(node)
                try:
                    return self.plan_wrapper(s, s.value)
                finally:
                    self.db_scopes.pop()
            return self.plan_wrapper(s, s.value)
        if isinstance(s, S.AssertStmt):
            return self.plan_wrapper(s, s.condition)
        if isinstance(s, S.Allocate):
            return self.plan_wrapper(s, None)
        # BufferStore, Evaluate, While: single statements
        return s, _leaf(self.accesses(s))

    def plan_wrapper(self, s, own_expr):
        """A statement whose expression ``own_expr`` runs once before ``body``."""
        own = self.accesses(own_expr)
        body, sb = self.plan(s.body)
        body, sb = _sync_first(own, body, sb)
        return (s if body is s.body else replace(s, body=body)), _then(_leaf(own), sb)

    def plan_seq(self, s):
        out = []
        summary = _EMPTY
        changed = False
        for x in s.seq:
            nx, sx = self.plan(x)
            changed = changed or nx is not x
            if summary.tail.conflicts_with(sx.head):
                out.append(storage_sync())
                summary = _then(summary, _BARRIER)
                changed = True
            out.append(nx)
            summary = _then(summary, sx)
        if not changed:
            return s, summary
        return S.SeqStmt(tuple(out)), summary

    def plan_for(self, s):
        bounds = self.accesses(s.min, s.extent)
        tag = s.thread_binding.thread_tag if s.thread_binding is not None else ""
        if s.kind is S.ForKind.THREAD_BINDING and tag.startswith(("threadIdx", "blockIdx")):
            # a thread loop before host/device splitting stands for the threads
            # themselves, as a thread_extent attribute does: not a loop to sync across
            if tag.startswith("threadIdx"):
                self.tainted.add(s.loop_var)
            return self.plan_wrapper(s, None)
        divergent = (self.depends_on_thread(s.min, s.extent)
                     or s.kind in (S.ForKind.VECTORIZED, S.ForKind.PARALLEL))
        if divergent:
            self.tainted.add(s.loop_var)
            return s, _leaf(bounds | self.accesses(s.body))
        body, sb = self.plan(s.body)
        single_trip = isinstance(s.extent, E.IntImm) and s.extent.value <= 1
        if not single_trip and sb.tail.conflicts_with(sb.head, loop_carried=True):
            # loop-carried hazard: the end of iteration i races with the start of i + 1
            body = S.seq(body, storage_sync())
            sb = _then(sb, _BARRIER)
        body, sb = _sync_first(bounds, body, sb)
        runs = isinstance(s.extent, E.IntImm) and s.extent.value >= 1
        summary = _Summary(sb.head, sb.tail, sb.barrier and runs)
        summary = _then(_leaf(bounds), summary)
        return (s if body is s.body else replace(s, body=body)), summary

    def plan_if(self, s):
        own = self.accesses(s.condition)
        cond = _leaf(own)
        if self.depends_on_thread(s.condition):
            return s, _then(cond, _leaf(self.accesses(s.then_case, s.else_case)))
        then_case, st = _sync_first(own, *self.plan(s.then_case))
        if s.else_case is not None:
            else_case, se = _sync_first(own, *self.plan(s.else_case))
        else:
            else_case, se = None, _EMPTY
        both = _Summary(st.head | se.head, st.tail | se.tail, st.barrier and se.barrier)
        if then_case is s.then_case and else_case is s.else_case:
            new = s
        else:
            new = replace(s, then_case=then_case, else_case=else_case)
        return new, _then(cond, both)


def insert_thread_sync_stmt(stmt: S.Stmt, thread_vars=()) -> S.Stmt:
    """Insert shared-memory barriers below ``stmt`` (see the module docs).

    Parameters
    ----------
    stmt : Stmt
        A device statement.  Thread indices are found from the ``thread_extent``
        attributes inside it and from Vars named ``threadIdx.*``.
    thread_vars : iterable of Var, optional
        Further variables that differ between the threads of a block (thread
        indices bound outside ``stmt``).

    Returns
    -------
    Stmt
        ``stmt`` itself when no barrier was needed.
    """
    shared = frozenset(b.data for b in allocations(stmt) if _is_shared(b))
    new, _ = _Planner(thread_vars, shared).plan(stmt)
    return new


def insert_thread_sync(kernel: S.PrimFunc) -> S.PrimFunc:
    """Insert ``__syncthreads()`` barriers where threads of a block race on shared memory.

    A barrier goes before a statement that reads a shared buffer written since the
    last barrier (RAW) or writes one read since then (WAR), including the hazards
    carried from the end of a loop body to its next iteration (the barrier then
    goes at the end of the body).  No barrier is placed inside code whose control
    flow depends on the thread index.

    Parameters
    ----------
    kernel : PrimFunc
        A device function of the kernel contract (flattened buffers,
        ``thread_extent`` attributes).

    Returns
    -------
    PrimFunc
        ``kernel`` itself when no barrier was needed.
    """
    return kernel.with_body(insert_thread_sync_stmt(kernel.body))


__all__ = ["insert_thread_sync", "insert_thread_sync_stmt", "is_storage_sync", "storage_sync"]
