"""Loop unrolling.

* A loop of kind ``UNROLLED`` whose extent is a constant ``<= max_extent`` is
  replaced by copies of its body, the loop variable replaced by ``min + k`` in
  copy ``k``.  Inner unrolled loops are unrolled first, so nests multiply out.
* A larger or symbolic ``UNROLLED`` loop stays a loop of kind ``UNROLLED`` with
  the annotation ``("pragma_unroll", extent)`` so the backend emits
  ``#pragma unroll``.
* A loop annotated ``("pragma_auto_unroll_max_step", n)`` (the schedule's
  ``pragma(axis, "auto_unroll_max_step", n)``) unrolls, inside it, every serial
  loop nest of constant extents whose total number of steps is at most ``n``;
  ``auto_max_step`` does the same across the whole function (TVM's
  ``PassContext(config={"tir.UnrollLoop": {"auto_max_step": n}})``).

Each copy after the first gets fresh loop, let and allocation variables, so no
variable is bound twice in the result.
"""
from __future__ import annotations

from dataclasses import replace

from .. import expr as E
from .. import op as _op
from .. import keys
from .. import stmt as S
from ..functor import IRMutator

AUTO_UNROLL_KEY = "pragma_auto_unroll_max_step"
UNROLL_KEY = "pragma_unroll"


class _FreshBindings(IRMutator):
    """Copy a statement, giving every variable and buffer it binds a fresh twin."""

    def __init__(self):
        self.vmap = {}
        self.bmap = {}

    def fresh_var(self, v):
        nv = type(v)(v.name, v.dtype)
        self.vmap[v] = nv
        return nv

    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def buffer(self, b):
        nb = self.bmap.get(b)
        if nb is not None:
            return nb
        data = self.vmap.get(b.data, b.data)
        shape = tuple(self.visit(x) if isinstance(x, E.PrimExpr) else x for x in b.shape)
        if data is b.data and all(x is y for x, y in zip(shape, b.shape)):
            return b
        nb = replace(b, data=data, shape=shape)
        self.bmap[b] = nb
        return nb

    def visit_For(self, s):
        mn, ext = self.visit(s.min), self.visit(s.extent)
        v = self.fresh_var(s.loop_var)
        return replace(s, loop_var=v, min=mn, extent=ext, body=self.visit(s.body))

    def visit_LetStmt(self, s):
        value = self.visit(s.value)
        v = self.fresh_var(s.var)
        return replace(s, var=v, value=value, body=self.visit(s.body))

    def visit_Let(self, e):
        value = self.visit(e.value)
        v = self.fresh_var(e.var)
        return replace(e, var=v, value=value, body=self.visit(e.body))

    def visit_Allocate(self, s):
        self.fresh_var(s.buffer.data)
        buf = self.buffer(s.buffer)
        return S.Allocate(buf, self.visit(s.body))

    def visit_BufferLoad(self, e):
        return E.BufferLoad(self.buffer(e.buffer), tuple(self.visit(i) for i in e.indices))

    def visit_BufferStore(self, s):
        return S.BufferStore(self.buffer(s.buffer), self.visit(s.value), tuple(self.visit(i) for i in s.indices))

    def visit_AttrStmt(self, s):
        node = s.node
        if isinstance(node, E.IterVar) and keys.is_thread_attr(s.attr_key):
            node = replace(node, var=self.fresh_var(node.var))
        elif isinstance(node, S.Buffer):
            node = self.buffer(node)
        elif isinstance(node, E.Var):
            node = self.vmap.get(node, node)
        return replace(s, node=node, value=self.visit(s.value), body=self.visit(s.body))


def copy_with_fresh_bindings(stmt: S.Stmt, vmap=None) -> S.Stmt:
    """Copy ``stmt`` with fresh loop/let/allocation variables, replacing free
    variables by ``vmap`` (``Var -> PrimExpr``) on the way.

    Used where a body is duplicated (unrolling, loop partitioning) so that no
    variable ends up bound twice.
    """
    m = _FreshBindings()
    if vmap:
        m.vmap.update(vmap)
    return m.visit(stmt)


def _substituted(body, var, value, fresh):
    if fresh:
        return copy_with_fresh_bindings(body, {var: value})
    from ..functor import substitute
    return substitute(body, {var: value})


def unroll_loop(loop: S.For) -> S.Stmt:
    """Replace ``loop`` (with a constant extent) by copies of its body."""
    assert isinstance(loop.extent, E.IntImm), "unroll_loop needs a constant extent"
    copies = []
    for k in range(loop.extent.value):
        value = _op.add(loop.min, _op.const(k, loop.loop_var.dtype))
        copies.append(_substituted(loop.body, loop.loop_var, value, fresh=k > 0))
    return S.seq(*copies)


def _steps(s) -> int | None:
    """Upper bound of the number of statements ``s`` executes, or None if some
    loop in it has a symbolic extent (or it contains a loop we must keep)."""
    if isinstance(s, S.For):
        if not isinstance(s.extent, E.IntImm) or s.kind in (S.ForKind.THREAD_BINDING, S.ForKind.PARALLEL):
            return None
        inner = _steps(s.body)
        return None if inner is None else s.extent.value * inner
    if isinstance(s, S.SeqStmt):
        total = 0
        for x in s.seq:
            n = _steps(x)
            if n is None:
                return None
            total += n
        return total
    if isinstance(s, (S.LetStmt, S.AttrStmt, S.AssertStmt, S.Allocate)):
        if isinstance(s, S.AttrStmt) and keys.is_thread_attr(s.attr_key):
            return None
        return _steps(s.body)
    if isinstance(s, S.IfThenElse):
        a = _steps(s.then_case)
        b = _steps(s.else_case) if s.else_case is not None else 0
        return None if a is None or b is None else max(a, b)
    if isinstance(s, S.While):
        return None
    return 1


class _Unroll(IRMutator):
    def __init__(self, max_extent, auto_max_step=0):
        self.max_extent = max_extent
        self.auto_max_step = auto_max_step  # the function's, or inside a loop with pragma_auto_unroll_max_step

    def visit_For(self, s):
        auto = s.annotation(AUTO_UNROLL_KEY)
        saved = self.auto_max_step
        if auto is not None:
            self.auto_max_step = int(auto)
        try:
            new = self.generic_visit(s)
        finally:
            self.auto_max_step = saved
        if auto is not None:
            new = replace(new, annotations=tuple((k, v) for k, v in new.annotations if k != AUTO_UNROLL_KEY))
        const_extent = isinstance(new.extent, E.IntImm)
        if new.kind is S.ForKind.UNROLLED:
            if const_extent and new.extent.value <= self.max_extent:
                return unroll_loop(new)
            if new.annotation(UNROLL_KEY) is None:
                value = new.extent.value if const_extent else new.extent
                new = replace(new, annotations=new.annotations + ((UNROLL_KEY, value),))
            return new
        max_step = int(auto) if auto is not None else self.auto_max_step
        if new.kind is S.ForKind.SERIAL and max_step > 0 and const_extent:
            steps = _steps(new)
            if steps is not None and steps <= max_step:
                return unroll_loop(new)
        return new


def unroll_stmt(stmt: S.Stmt, max_extent: int = 16, auto_max_step: int = 0) -> S.Stmt:
    """Unroll the loops below ``stmt`` (see the module docs)."""
    return _Unroll(max_extent, auto_max_step).visit(stmt)


def unroll(func: S.PrimFunc, max_extent: int = 16, auto_max_step: int = 0) -> S.PrimFunc:
    """Unroll ``UNROLLED`` loops of ``func`` with a constant extent ``<= max_extent``.

    Parameters
    ----------
    func : PrimFunc
        The function.
    max_extent : int
        Largest extent unrolled explicitly; longer or symbolic unrolled loops keep
        their loop with a ``("pragma_unroll", extent)`` annotation.
    auto_max_step : int
        Serial loops of at most this many statements in all are unrolled across
        the whole function, as under ``pragma_auto_unroll_max_step`` (0: only
        where that pragma is).

    Returns
    -------
    PrimFunc
        ``func`` itself when no loop changed.
    """
    return func.with_body(unroll_stmt(func.body, max_extent, auto_max_step))
