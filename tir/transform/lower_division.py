"""The ``lower_division`` pass: floor division and modulo of indices that are known
to be non-negative become C's truncating ``/`` and ``%``.

TIR's integer ``//`` and ``%`` round toward minus infinity (Python's and TVM's
``floordiv``/``floormod``), which C has no operator for: the printers call small
helpers for them.  Where the dividend is proven ``>= 0`` and the divisor ``> 0`` --
almost every index: loop variables, thread indices, their sums and products -- both
roundings agree, and plain ``/`` and ``%`` let the C compiler hoist, strength-reduce
and vectorize the index arithmetic (a helper call inside an inner loop stopped GCC
fusing multiply-adds in a grouped convolution, about 4x slower).

What is known where an expression sits is what the simplifier knows: loop ranges,
thread extents, ``if`` conditions, ``let`` values.  Division by a power of two is left
alone: the printers already turn it into a shift or a mask, right for any sign.
"""
from __future__ import annotations

from dataclasses import replace

from .. import expr as E
from .. import keys
from .. import stmt as S
from ..functor import IRMutator
from .simplify import analyzer_for


def _pow2(b) -> bool:
    return isinstance(b, E.IntImm) and b.value > 0 and (b.value & (b.value - 1)) == 0


class _Lower(IRMutator):
    def __init__(self, ana):
        self.ana = ana

    def _truncating(self, e, cls):
        a, b = self.visit(e.a), self.visit(e.b)
        dt = e.dtype
        if (dt.startswith("int") and "x" not in dt and not _pow2(b)
                and self.ana.can_prove(E.GE(a, E.IntImm(dt, 0))) and self.ana.can_prove(E.GT(b, E.IntImm(dt, 0)))):
            return cls(a, b)
        if a is e.a and b is e.b:
            return e
        return type(e)(a, b)

    def visit_FloorDiv(self, e):
        return self._truncating(e, E.Div)

    def visit_FloorMod(self, e):
        return self._truncating(e, E.Mod)

    def visit_For(self, s):
        with self.ana.bind_scope(s.loop_var, E.Range(s.min, s.extent)):
            body = self.visit(s.body)
        return s if body is s.body else replace(s, body=body)

    def visit_AttrStmt(self, s):
        if s.attr_key == keys.THREAD_EXTENT and isinstance(s.node, E.IterVar):
            with self.ana.bind_scope(s.node.var, E.Range(E.IntImm(s.value.dtype, 0), s.value)):
                body = self.visit(s.body)
        else:
            body = self.visit(s.body)
        return s if body is s.body else replace(s, body=body)

    def visit_IfThenElse(self, s):
        cond = self.visit(s.condition)
        with self.ana.constraint_scope(s.condition):
            then_case = self.visit(s.then_case)
        else_case = self.visit(s.else_case) if s.else_case is not None else None
        if cond is s.condition and then_case is s.then_case and else_case is s.else_case:
            return s
        return S.IfThenElse(cond, then_case, else_case)

    def visit_LetStmt(self, s):
        value = self.visit(s.value)
        with self.ana._let_scope(s.var, s.value):
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return S.LetStmt(s.var, value, body)


def lower_division(func):
    """The pass over a :class:`PrimFunc` (see the module docs); ``func`` itself if
    nothing changed."""
    body = _Lower(analyzer_for(func)).visit(func.body)
    return func if body is func.body else replace(func, body=body)
