"""Virtual threads: remove ``vthread`` loops by interleaving their iterations.

A ``For`` of kind ``THREAD_BINDING`` whose thread tag starts with ``"vthread"`` (or
``"cthread"``) runs its body for ``vt`` in ``[0, n)``.  The loop disappears:

* a statement that does not depend on ``vt`` is emitted once (hoisted);
* a sequence is processed element by element;
* a loop whose bounds, an ``if`` whose condition, a ``let`` whose value (and an
  attribute or assert whose value) do not depend on ``vt`` gets ``vt`` pushed
  inside it;
* a ``local`` allocation inside the vthread body that ``vt``-dependent code
  writes is expanded ``n``-fold when ``vt`` is pushed into its scope: virtual
  thread ``k`` uses elements ``[k*size, (k+1)*size)``;
* any other statement that depends on ``vt`` is replicated ``n`` times with ``vt``
  replaced by ``0 .. n-1`` (copies after the first get fresh bound variables).

"Depends on ``vt``" is closed under data flow (TVM's touched-variable analysis):
a let variable or loop variable computed from ``vt``, or a buffer stored to with
a ``vt``-dependent index or value or under ``vt``-dependent control, is itself
dependent, and so is every statement that reads it.

Shared allocations are never expanded: lowering already sized them for all
virtual threads.  The result equals running the vthread loop serially as long
as the statements hoisted out (those not depending on ``vt``) are idempotent,
which holds for what lowering produces (e.g. the cooperative fetch of a shared
tile).  Nested vthread loops are removed innermost first.
"""
from __future__ import annotations

from dataclasses import replace

from ...errors import LoweringError
from .. import expr as E
from .. import op as _op
from .. import stmt as S
from ..functor import IRMutator, IRVisitor
from ..analysis.buffers import buffer_size
from .unroll import copy_with_fresh_bindings

VTHREAD_PREFIXES = ("vthread", "cthread")


def is_vthread_loop(s) -> bool:
    """True if ``s`` is a ``For`` bound to a virtual thread axis."""
    return (isinstance(s, S.For) and s.kind is S.ForKind.THREAD_BINDING and s.thread_binding is not None
            and s.thread_binding.thread_tag.startswith(VTHREAD_PREFIXES))


# ----------------------------------------------------------------------------
# dependence on the virtual thread
# ----------------------------------------------------------------------------

class _Uses(IRVisitor):
    """Does a node read a touched variable or access a touched buffer?"""

    def __init__(self, vars_, bufs):
        self.vars = vars_
        self.bufs = bufs
        self.found = False

    def visit(self, node):
        if not self.found:
            IRVisitor.visit(self, node)

    def visit_Var(self, v):
        if v in self.vars:
            self.found = True

    def visit_BufferLoad(self, e):
        if e.buffer.data in self.bufs:
            self.found = True
        self.generic_visit(e)

    def visit_BufferStore(self, s):
        if s.buffer.data in self.bufs:
            self.found = True
        self.generic_visit(s)

    def visit_Allocate(self, s):
        for extent in s.buffer.shape:
            self.visit(extent)
        self.visit(s.body)


def _uses(vars_, bufs, *nodes) -> bool:
    u = _Uses(vars_, bufs)
    for n in nodes:
        if n is not None:
            u.visit(n)
    return u.found


class _Touch(IRVisitor):
    """One round of the touched analysis: grows ``vars`` and ``bufs``."""

    def __init__(self, vars_, bufs):
        self.vars = vars_
        self.bufs = bufs
        self.control = 0  # number of enclosing vt-dependent conditions
        self.grew = False

    def dep(self, *nodes):
        return _uses(self.vars, self.bufs, *nodes)

    def add_var(self, v):
        if v not in self.vars:
            self.vars.add(v)
            self.grew = True

    def controlled(self, dependent, body):
        self.control += dependent
        self.visit(body)
        self.control -= dependent

    def visit_BufferStore(self, s):
        if s.buffer.data not in self.bufs and (self.control or self.dep(s.value, *s.indices)):
            self.bufs.add(s.buffer.data)
            self.grew = True
        self.generic_visit(s)

    def visit_LetStmt(self, s):
        if self.dep(s.value):
            self.add_var(s.var)
        self.visit(s.value)
        self.visit(s.body)

    def visit_Let(self, e):
        if self.dep(e.value):
            self.add_var(e.var)
        self.generic_visit(e)

    def visit_For(self, s):
        dependent = self.dep(s.min, s.extent)
        if dependent:
            self.add_var(s.loop_var)
        self.controlled(int(dependent), s.body)

    def visit_IfThenElse(self, s):
        dependent = int(self.dep(s.condition))
        self.controlled(dependent, s.then_case)
        if s.else_case is not None:
            self.controlled(dependent, s.else_case)

    def visit_While(self, s):
        self.controlled(int(self.dep(s.condition)), s.body)


def _touched(loop_var, body):
    vars_, bufs = {loop_var}, set()
    while True:
        t = _Touch(vars_, bufs)
        t.visit(body)
        if not t.grew:
            return vars_, bufs


# ----------------------------------------------------------------------------
# specialising one virtual thread
# ----------------------------------------------------------------------------

def _shift(index, offset):
    if isinstance(index, E.Ramp):
        return E.Ramp(_op.add(index.base, offset), index.stride, index.lanes)
    if isinstance(index, E.Broadcast):
        return E.Broadcast(_op.add(index.value, offset), index.lanes)
    return _op.add(index, offset)


class _Specialize(IRMutator):
    """Replace ``vt`` by a constant and move expanded buffers to the copy's slice."""

    def __init__(self, var, value, k, expanded):
        self.var = var
        self.value = value
        self.k = k
        self.expanded = expanded  # data Var -> (new Buffer, size of one copy)

    def visit_Var(self, v):
        return self.value if v is self.var else v

    def indices(self, buf, indices):
        new_buf, size = self.expanded[buf.data]
        if len(buf.shape) != 1:
            return new_buf, (_op.const(self.k, "int32"),) + tuple(indices)
        if self.k == 0:
            return new_buf, tuple(indices)
        offset = _op.mul(_op.const(self.k, size.dtype), size)
        return new_buf, (_shift(indices[0], offset),)

    def visit_BufferLoad(self, e):
        new = self.generic_visit(e)
        if e.buffer.data not in self.expanded:
            return new
        buf, indices = self.indices(e.buffer, new.indices)
        return E.BufferLoad(buf, indices)

    def visit_BufferStore(self, s):
        new = self.generic_visit(s)
        if s.buffer.data not in self.expanded:
            return new
        buf, indices = self.indices(s.buffer, new.indices)
        return S.BufferStore(buf, new.value, indices)


def _expand(buf, n):
    """The buffer holding ``n`` copies of ``buf`` and the size of one copy."""
    size = buffer_size(buf)
    if len(buf.shape) == 1:
        shape = (_op.mul(_op.const(n, size.dtype), size),)
        strides = ()
    else:
        shape = (_op.const(n, "int32"),) + tuple(buf.shape)
        strides = (_op.mul(buf.strides[0], buf.shape[0]),) + tuple(buf.strides) if buf.strides else ()
    return replace(buf, shape=shape, strides=strides), size


class _Injector:
    def __init__(self, loop):
        if not isinstance(loop.extent, E.IntImm):
            tag = loop.thread_binding.thread_tag
            raise LoweringError(
                f"the axis {loop.loop_var.name!r} bound to the virtual thread {tag!r} has the non-constant "
                f"extent {loop.extent}; split it by a constant factor before binding it to {tag!r}")
        self.loop = loop
        self.n = loop.extent.value
        self.vars, self.bufs = _touched(loop.loop_var, loop.body)
        self.expanded = {}

    def dep(self, *nodes):
        return _uses(self.vars, self.bufs, *nodes)

    def inject(self, s):
        if not self.dep(s):
            return s  # the same for every virtual thread: emitted once
        if isinstance(s, S.SeqStmt):
            return S.seq(*[self.inject(x) for x in s.seq])
        if isinstance(s, S.For) and not self.dep(s.min, s.extent):
            return replace(s, body=self.inject(s.body))
        if isinstance(s, S.IfThenElse) and not self.dep(s.condition):
            else_case = self.inject(s.else_case) if s.else_case is not None else None
            return replace(s, then_case=self.inject(s.then_case), else_case=else_case)
        if isinstance(s, S.LetStmt) and not self.dep(s.value):
            return replace(s, body=self.inject(s.body))
        if isinstance(s, S.AttrStmt) and not self.dep(s.value) and not isinstance(s.node, S.Buffer):
            return replace(s, body=self.inject(s.body))
        if isinstance(s, S.AssertStmt) and not self.dep(s.condition):
            return replace(s, body=self.inject(s.body))
        if isinstance(s, S.Allocate) and not self.dep(*s.buffer.shape):
            return self.inject_allocate(s)
        return self.replicate(s)

    def inject_allocate(self, s):
        buf = s.buffer
        if buf.scope == "local" and buf.data in self.bufs:
            new_buf, size = _expand(buf, self.n)
            self.expanded[buf.data] = (new_buf, size)
            return S.Allocate(new_buf, self.inject(s.body))
        return replace(s, body=self.inject(s.body))

    def replicate(self, s):
        copies = []
        for k in range(self.n):
            value = _op.add(self.loop.min, _op.const(k, self.loop.loop_var.dtype))
            copy = _Specialize(self.loop.loop_var, value, k, self.expanded).visit(s)
            if k > 0:
                copy = copy_with_fresh_bindings(copy)
            copies.append(copy)
        return S.seq(*copies)


class _InjectVirtualThread(IRMutator):
    def visit_For(self, s):
        new = self.generic_visit(s)  # inner vthread loops first
        if not is_vthread_loop(new):
            return new
        return _Injector(new).inject(new.body)


def inject_virtual_thread_stmt(stmt: S.Stmt) -> S.Stmt:
    """Remove the virtual-thread loops below ``stmt`` (see the module docs)."""
    return _InjectVirtualThread().visit(stmt)


def inject_virtual_thread(func: S.PrimFunc) -> S.PrimFunc:
    """Replace every virtual-thread loop of ``func`` by interleaved straight-line copies.

    Parameters
    ----------
    func : PrimFunc
        The flattened function, before host/device splitting; virtual threads are
        ``For`` loops of kind ``THREAD_BINDING`` tagged ``vthread*`` or ``cthread*``.

    Returns
    -------
    PrimFunc
        The function without virtual-thread loops (``func`` itself if it had
        none); ``local`` buffers written per virtual thread are expanded.

    Raises
    ------
    LoweringError
        If a virtual-thread axis has a non-constant extent.
    """
    return func.with_body(inject_virtual_thread_stmt(func.body))


__all__ = ["inject_virtual_thread", "inject_virtual_thread_stmt", "is_vthread_loop"]
