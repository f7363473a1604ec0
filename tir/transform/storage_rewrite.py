"""Storage reuse: a buffer takes over the memory of one that is dead by then.

The allocations of one scope form a *spine*: ``Allocate(X, seq(s0, s1,
Allocate(Y, seq(s2, s3))))`` (lowering allocates each intermediate tensor around
what follows its producer; directly nested allocations count too).  Along a spine
the statements ``s0, s1, s2, s3`` run in order, and each buffer is live from the
first to the last of them that touches it.  Visiting the buffers by first use,
``Y`` reuses the memory of an earlier ``X`` when

* ``X``'s last statement comes before ``Y``'s first one,
* both have the same scope, dtype and constant size, and
* both are only loaded and stored (never passed by address, never named by an
  attribute such as ``double_buffer_scope``).

``Y``'s allocation is then removed and its accesses use ``X``'s data variable, so
the printers name ``X``; ``Y``'s accesses all lie inside ``X``'s allocation, which
encloses the rest of the spine.  Nothing else is merged (no packing of differently
sized buffers, no reuse across loop iterations); a function with no such pair is
returned unchanged.  Barriers between the last use of ``X`` and the first of ``Y``
in shared memory are ``thread_sync``'s job, which runs later.
"""
from __future__ import annotations

from dataclasses import replace

from .. import expr as E
from .. import stmt as S
from ..analysis.buffers import const_size
from ..functor import IRMutator, IRVisitor


class _Uses(IRVisitor):
    """Data variables loaded/stored in a node, and those used any other way."""

    def __init__(self):
        self.accessed = set()
        self.other = set()

    def visit_Var(self, v):
        self.other.add(v)

    def visit_BufferLoad(self, e):
        self.accessed.add(e.buffer.data)
        self.generic_visit(e)

    def visit_BufferStore(self, s):
        self.accessed.add(s.buffer.data)
        self.generic_visit(s)

    def visit_AttrStmt(self, s):
        node = s.node
        if isinstance(node, S.Buffer):
            self.other.add(node.data)
        elif isinstance(node, E.Var):
            self.other.add(node)
        self.generic_visit(s)


def _uses(node):
    u = _Uses()
    u.visit(node)
    return u


class _Rename(IRMutator):
    """Accesses of the buffers whose data is a key of ``dmap`` use the mapped data."""

    def __init__(self, dmap):
        self.dmap = dmap
        self.bmap = {}

    def buffer(self, b):
        data = self.dmap.get(b.data)
        if data is None:
            return b
        nb = self.bmap.get(b)
        if nb is None:
            nb = self.bmap[b] = replace(b, data=data)
        return nb

    def visit_BufferLoad(self, e):
        new = self.generic_visit(e)
        buf = self.buffer(e.buffer)
        return new if buf is e.buffer else replace(new, buffer=buf)

    def visit_BufferStore(self, s):
        new = self.generic_visit(s)
        buf = self.buffer(s.buffer)
        return new if buf is s.buffer else replace(new, buffer=buf)


def _plan(chain, items):
    """``{data of Y: data of X}`` for the buffers of ``chain`` that reuse an earlier one."""
    uses = [_uses(item) for item in items]
    other = set().union(*(u.other for u in uses))
    live = {}
    for buf in chain:
        idx = [i for i, u in enumerate(uses) if buf.data in u.accessed]
        if idx and buf.data not in other and const_size(buf) is not None:
            live[buf.data] = (idx[0], idx[-1], buf)
    slots = []  # [representative buffer, last statement]
    dmap = {}
    for data, (first, last, buf) in sorted(live.items(), key=lambda kv: kv[1][0]):
        key = (buf.scope, buf.dtype, const_size(buf))
        for slot in slots:
            rep = slot[0]
            if (rep.scope, rep.dtype, const_size(rep)) == key and slot[1] < first:
                dmap[data] = rep.data
                slot[1] = last
                break
        else:
            slots.append([buf, last])
    return dmap


def _spine_step(node):
    """``(allocated buffer or None, statements run here, next spine node or None)``."""
    if isinstance(node, S.Allocate):
        return node.buffer, (), node.body
    if isinstance(node, S.SeqStmt) and node.seq and isinstance(node.seq[-1], S.Allocate):
        return None, node.seq[:-1], node.seq[-1]
    return None, (node.seq if isinstance(node, S.SeqStmt) else (node,)), None


class _StorageRewrite(IRMutator):
    def visit_Allocate(self, s):
        chain, items = [], []
        node = s
        while node is not None:
            buf, run, node = _spine_step(node)
            if buf is not None:
                chain.append(buf)
            items.extend(self.visit(x) for x in run)  # inner spines first
        dmap = _plan(chain, items)
        rest = iter(items)
        new = self.rebuild(s, dmap, rest)
        if dmap:
            new = _Rename(dmap).visit(new)
        return new

    def rebuild(self, node, dmap, items):
        """The spine from ``node`` with the rewritten ``items`` and without the
        allocations of the buffers in ``dmap``."""
        if isinstance(node, S.Allocate):
            body = self.rebuild(node.body, dmap, items)
            if node.buffer.data in dmap:
                return body
            return node if body is node.body else S.Allocate(node.buffer, body)
        if isinstance(node, S.SeqStmt) and node.seq and isinstance(node.seq[-1], S.Allocate):
            head = [next(items) for _ in node.seq[:-1]]
            last = self.rebuild(node.seq[-1], dmap, items)
            if last is node.seq[-1] and all(a is b for a, b in zip(head, node.seq)):
                return node
            return S.SeqStmt(tuple(head) + (last,))
        if isinstance(node, S.SeqStmt):
            new = [next(items) for _ in node.seq]
            return node if all(a is b for a, b in zip(new, node.seq)) else S.SeqStmt(tuple(new))
        return next(items)


def storage_rewrite_stmt(stmt: S.Stmt) -> S.Stmt:
    """Reuse dead buffers' memory below ``stmt`` (see the module docs)."""
    return _StorageRewrite().visit(stmt)


def storage_rewrite(func: S.PrimFunc) -> S.PrimFunc:
    """Let buffers of ``func`` reuse the memory of buffers dead by then.

    Returns
    -------
    PrimFunc
        ``func`` itself when no buffer can take over another's memory.
    """
    return func.with_body(storage_rewrite_stmt(func.body))
