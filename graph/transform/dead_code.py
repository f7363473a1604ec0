"""Dead-code elimination: drop the values nothing computes the model's output from.

A graph is a DAG reached from each function's body, so an unused *call* is already
gone; what remains to remove are unused tuple fields fetched only through
``TupleGetItem`` of a literal :class:`~tecc.graph.ir.Tuple` (``(a, b).0`` is ``a``),
and, in ``main``, nothing else.  The pass also drops functions of the module that
``main`` does not reach (helpers left by a frontend).
"""
from __future__ import annotations

from ..ir import Function, GraphRewriter, Module, Tuple, TupleGetItem, post_order_visit


class TupleAccessFolder(GraphRewriter):
    """``Tuple(f0, f1, ...).k`` -> ``fk`` (the other fields become dead); fused
    functions are left as they are.  Passes that make tuples subclass it."""

    def visit_TupleGetItem(self, node):
        value = self.visit(node.tuple_value)
        if isinstance(value, Tuple):
            return value.fields[node.index]
        return node if value is node.tuple_value else TupleGetItem(value, node.index, node.span)


def dead_code_elimination(mod: Module) -> Module:
    """Remove values that do not reach the output of any kept function.

    Parameters
    ----------
    mod : tecc.graph.Module

    Returns
    -------
    tecc.graph.Module
        The same module when nothing was dead.
    """
    out = mod.map_functions(lambda fn: TupleAccessFolder().visit(fn), primitive=True)
    if "main" in out and len(out) > 1:
        used = set()
        post_order_visit(out["main"], lambda n: used.add(n) if isinstance(n, Function) else None)
        keep = {name: fn for name, fn in out.items() if name == "main" or fn in used}
        if len(keep) != len(out):
            out = Module(keep, out.attrs)
    return out


__all__ = ["dead_code_elimination"]
