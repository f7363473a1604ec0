"""The ``simplify`` pass: simplify every expression of a function with what is known
where it sits.

Inside ``for (i, min, extent)`` the analyzer knows ``min <= i < min + extent``; inside
``if (c)`` (or ``if (likely(c))``) it knows ``c`` and in the else-branch ``!c``; inside
``let x = v`` it knows the bounds of ``x``; inside ``attr [threadIdx.x] thread_extent = n``
it knows ``0 <= threadIdx.x < n``.  With that:

* ``if`` statements whose condition is proven true or false are replaced by the branch
  taken (or removed);
* loops with extent 0 are removed, loops with extent 1 become their body with the loop
  variable replaced by ``min`` (not thread-bound loops: they define the launch);
* ``Evaluate(constant)`` no-ops are dropped from sequences, asserts proven true removed;
* a statement that does not change is returned as the same object.
"""
from __future__ import annotations

from dataclasses import replace

from .. import expr as E
from .. import keys
from .. import stmt as S
from ..arith import POS_INF, Analyzer, IntervalSet
from ..functor import IRMutator, substitute, uses_var


def _no_op():
    return S.Evaluate(E.IntImm("int32", 0))


class StmtSimplifier(IRMutator):
    """Statement walker feeding loop ranges and conditions to an Analyzer."""

    def __init__(self, analyzer):
        self.ana = analyzer

    # every expression goes to the analyzer
    def visit_PrimExpr(self, e):
        return self.ana.simplify(e)

    def visit_For(self, s):
        lo = self.ana.simplify(s.min)
        extent = self.ana.simplify(s.extent)
        if type(extent) is E.IntImm and extent.value <= 0:
            return _no_op()  # for (i, m, 0) { body } -> no-op
        if (type(extent) is E.IntImm and extent.value == 1 and s.kind is not S.ForKind.THREAD_BINDING):
            # for (i, m, 1) { body } -> body[i := m]
            return self.visit(substitute(s.body, {s.loop_var: lo}))
        with self.ana.bind_scope(s.loop_var, E.Range(lo, extent)):
            body = self.visit(s.body)
        if S.is_no_op(body) and s.kind is not S.ForKind.THREAD_BINDING:
            return _no_op()
        if lo is s.min and extent is s.extent and body is s.body:
            return s
        return replace(s, min=lo, extent=extent, body=body)

    def visit_IfThenElse(self, s):
        cond = self.ana.simplify(s.condition)
        if type(cond) is E.IntImm:
            # if (True) a else b -> a;  if (False) a else b -> b
            if cond.value:
                return self.visit(s.then_case)
            return self.visit(s.else_case) if s.else_case is not None else _no_op()
        with self.ana.constraint_scope(cond):
            then_case = self.visit(s.then_case)
        else_case = s.else_case
        if else_case is not None:
            with self.ana.constraint_scope(E.Not(_strip_likely(cond))):
                else_case = self.visit(else_case)
            if S.is_no_op(else_case):
                else_case = None
        if S.is_no_op(then_case) and else_case is None:
            return _no_op()
        if cond is s.condition and then_case is s.then_case and else_case is s.else_case:
            return s
        return S.IfThenElse(cond, then_case, else_case)

    def visit_LetStmt(self, s):
        value = self.ana.simplify(s.value)
        if type(value) in (E.IntImm, E.FloatImm) or isinstance(value, E.Var):
            # let x = c; body -> body[x := c]   (constants and variables are free to copy)
            return self.visit(substitute(s.body, {s.var: value}))
        with self.ana._let_scope(s.var, value):
            body = self.visit(s.body)
        if not uses_var(body, lambda v: v is s.var):
            return body  # the value is pure, so an unused let can go
        if value is s.value and body is s.body:
            return s
        return S.LetStmt(s.var, value, body)

    def visit_AttrStmt(self, s):
        value = self.ana.simplify(s.value)
        node = s.node
        if s.attr_key == keys.THREAD_EXTENT and isinstance(node, E.IterVar):
            with self.ana.bind_scope(node.var, E.Range(E.IntImm(value.dtype, 0), value)):
                body = self.visit(s.body)
        else:
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return replace(s, value=value, body=body)

    def visit_AssertStmt(self, s):
        cond = self.ana.simplify(s.condition)
        if type(cond) is E.IntImm and cond.value:
            return self.visit(s.body)  # assert(True) -> nothing
        body = self.visit(s.body)
        if cond is s.condition and body is s.body:
            return s
        return replace(s, condition=cond, body=body)

    def visit_Evaluate(self, s):
        v = self.ana.simplify(s.value)
        if type(v) in (E.IntImm, E.FloatImm) and not (type(s.value) is E.IntImm):
            return _no_op()  # evaluating a constant does nothing
        return s if v is s.value else S.Evaluate(v)

    def visit_SeqStmt(self, s):
        items = [self.visit(x) for x in s.seq]
        if all(a is b for a, b in zip(items, s.seq)) and not any(S.is_no_op(x) for x in items):
            return s
        return S.seq(*items)

    def visit_Allocate(self, s):
        body = self.visit(s.body)
        if S.is_no_op(body):
            return body
        return s if body is s.body else replace(s, body=body)


def _strip_likely(cond):
    if type(cond) is E.Call and cond.op == "likely":
        return cond.args[0]
    return cond


def simplify_stmt(stmt, analyzer=None):
    """Simplify a statement and every expression in it.

    Parameters
    ----------
    stmt : Stmt
        The statement.
    analyzer : Analyzer, optional
        Carries facts known around ``stmt`` (bound variables); a fresh one by default.

    Returns
    -------
    Stmt
        The simplified statement, the same object if nothing changed.
    """
    return StmtSimplifier(analyzer or Analyzer()).visit(stmt)


def simplify(func):
    """The simplify pass over a :class:`PrimFunc` (see the module docs).

    Symbolic shape variables (``SizeVar`` parameters and variables used as a buffer
    dimension) are known to be non-negative.

    Parameters
    ----------
    func : PrimFunc

    Returns
    -------
    PrimFunc
        ``func`` itself if nothing changed.
    """
    return func.with_body(simplify_stmt(func.body, analyzer_for(func)))


def analyzer_for(func) -> Analyzer:
    """An analyzer that knows what ``func``'s signature says: SizeVar parameters are
    ``>= 0`` (the analyzer's own rule), and so is a variable that is itself the
    extent of a buffer dimension."""
    ana = Analyzer()
    for buf in func.buffer_map.values():
        for dim in buf.shape:
            if isinstance(dim, E.Var) and not isinstance(dim, E.SizeVar):
                ana.bind(dim, IntervalSet(E.IntImm(dim.dtype, 0), POS_INF), allow_override=True)
    return ana
