"""Remove statements that do nothing.

* ``Evaluate`` of a constant, and such parts of a :class:`SeqStmt`;
* loops, allocations, lets and attributes whose body does nothing;
* ``IfThenElse`` with a constant condition (the taken branch stays) or with two
  empty branches;
* loops whose extent is the constant 0 (or negative).

A ``SeqStmt`` left with one statement becomes that statement.
"""
from __future__ import annotations

from dataclasses import replace

from .. import expr as E
from .. import stmt as S
from ..functor import IRMutator


def _no_op():
    return S.Evaluate(E.IntImm("int32", 0))


def _is_no_op(s) -> bool:
    return s is None or S.is_no_op(s)


class _RemoveNoOp(IRMutator):
    def visit_SeqStmt(self, s):
        parts = []
        changed = False
        for x in s.seq:
            nx = self.visit(x)
            changed = changed or nx is not x
            if _is_no_op(nx):
                changed = True
                continue
            if isinstance(nx, S.SeqStmt):
                parts.extend(nx.seq)
                changed = True
            else:
                parts.append(nx)
        if not changed:
            return s
        if not parts:
            return _no_op()
        if len(parts) == 1:
            return parts[0]
        return S.SeqStmt(tuple(parts))

    def visit_For(self, s):
        if isinstance(s.extent, E.IntImm) and s.extent.value <= 0:
            return _no_op()
        new = self.generic_visit(s)
        if _is_no_op(new.body):
            return _no_op()
        return new

    def visit_Allocate(self, s):
        new = self.generic_visit(s)
        return _no_op() if _is_no_op(new.body) else new

    def visit_LetStmt(self, s):
        new = self.generic_visit(s)
        return _no_op() if _is_no_op(new.body) else new

    def visit_AttrStmt(self, s):
        new = self.generic_visit(s)
        return _no_op() if _is_no_op(new.body) else new

    def visit_IfThenElse(self, s):
        new = self.generic_visit(s)
        cond = new.condition
        if isinstance(cond, E.Call) and cond.op == "likely" and isinstance(cond.args[0], E.IntImm):
            cond = cond.args[0]
        if isinstance(cond, E.IntImm):
            taken = new.then_case if cond.value else new.else_case
            return _no_op() if taken is None else taken
        then_empty = _is_no_op(new.then_case)
        else_empty = _is_no_op(new.else_case)
        if then_empty and else_empty:
            return _no_op()
        if else_empty and new.else_case is not None:
            return replace(new, else_case=None)
        return new


def remove_no_op_stmt(stmt: S.Stmt) -> S.Stmt:
    """Remove no-op statements from ``stmt`` (see the module docs)."""
    return _RemoveNoOp().visit(stmt)


def remove_no_op(func: S.PrimFunc) -> S.PrimFunc:
    """Remove no-op statements from the body of ``func``.

    Parameters
    ----------
    func : PrimFunc
        The function to clean up.

    Returns
    -------
    PrimFunc
        ``func`` itself when nothing was removed.
    """
    return func.with_body(remove_no_op_stmt(func.body))
