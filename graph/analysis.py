"""Questions about graph expressions: :func:`structural_equal`, the comparison
pass tests use to check a rewritten graph against the one expected."""
from __future__ import annotations

import numpy as np

from .ir import Call, Constant, Function, Module, Tuple, TupleGetItem, Var


def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    """Whether two graph expressions compute the same thing the same way.

    Calls must have the same operator (or structurally equal functions), equal
    attributes and equal operands; constants equal dtype, shape and values; a
    function's parameters are matched by position.  Free variables must be the same
    objects, unless ``map_free_vars`` (then they are matched by first use, one to
    one, with equal types).  Sharing counts: a node used twice on one side must be
    matched by one node used twice on the other.

    Two modules are equal when they hold the same function names, each pair
    structurally equal, and equal attributes.  Spans (the source node a call came
    from) are not compared.

    Parameters
    ----------
    lhs, rhs : Expr or Module
    map_free_vars : bool

    Returns
    -------
    bool
    """
    return _Equal(map_free_vars).eq(lhs, rhs)


class _Equal:
    def __init__(self, map_free_vars):
        self.map_free_vars = map_free_vars
        self.pairs = {}     # lhs node -> rhs node matched so far
        self.reverse = {}   # rhs node -> lhs node

    def eq(self, a, b) -> bool:
        if a in self.pairs or b in self.reverse:
            return self.pairs.get(a) is b
        if type(a) is not type(b):
            return False
        ok = self._eq(a, b)
        if ok:
            self.pairs[a] = b
            self.reverse[b] = a
        return ok

    def _eq(self, a, b) -> bool:
        if isinstance(a, Var):
            if a is b:
                return True
            return self.map_free_vars and a.type_annotation == b.type_annotation
        if isinstance(a, Constant):
            return (a.data.dtype == b.data.dtype and a.data.shape == b.data.shape
                    and bool(np.array_equal(a.data, b.data, equal_nan=a.data.dtype.kind == "f")))
        if isinstance(a, Call):
            if isinstance(a.op, Function) or isinstance(b.op, Function):
                if not (isinstance(a.op, Function) and isinstance(b.op, Function) and self.eq(a.op, b.op)):
                    return False
            elif a.op is not b.op:
                return False
            return a.attrs == b.attrs and self._all(a.args, b.args)
        if isinstance(a, Tuple):
            return self._all(a.fields, b.fields)
        if isinstance(a, TupleGetItem):
            return a.index == b.index and self.eq(a.tuple_value, b.tuple_value)
        if isinstance(a, Module):
            return (a.attrs == b.attrs and sorted(a.functions) == sorted(b.functions)
                    and all(self.eq(a.functions[name], b.functions[name]) for name in a.functions))
        if isinstance(a, Function):
            if len(a.params) != len(b.params) or a.attrs != b.attrs:
                return False
            for p, q in zip(a.params, b.params):
                if p.type_annotation != q.type_annotation:
                    return False
                if p in self.pairs or q in self.reverse:
                    if self.pairs.get(p) is not q:
                        return False
                self.pairs[p] = q
                self.reverse[q] = p
            return self.eq(a.body, b.body)
        raise TypeError(f"structural_equal: not a graph node: {type(a).__name__}")

    def _all(self, xs, ys) -> bool:
        return len(xs) == len(ys) and all(self.eq(x, y) for x, y in zip(xs, ys))


__all__ = ["structural_equal"]
