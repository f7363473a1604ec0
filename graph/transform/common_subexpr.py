"""Common subexpression elimination: one node per distinct computation.

Two calls are the same computation when they call the same operator with equal
attributes on the same operands (the same nodes, after their own operands were
merged); tuples and tuple accesses likewise.  Constants are merged when their
dtype, shape and bytes agree.  Walking operands first, each node is replaced by the
first equal one seen.  Calls of OPAQUE operators are kept apart (they may have
effects a copy would lose).
"""
from __future__ import annotations

from ..ir import GraphRewriter, Module
from ..op import Op, OpPattern


class _Merge(GraphRewriter):
    def __init__(self, fskip=None):
        super().__init__()
        self.table = {}
        self.fskip = fskip

    def _canon(self, key, node):
        found = self.table.get(key)
        if found is not None:
            return found
        self.table[key] = node
        return node

    def visit_Constant(self, node):
        key = ("const", str(node.data.dtype), node.data.shape, node.data.tobytes())
        return self._canon(key, node)

    def visit_Call(self, node):
        new = self.generic_visit(node)
        if not isinstance(new.op, Op) or new.op.pattern == OpPattern.OPAQUE:
            return new
        if self.fskip is not None and self.fskip(new):
            return new
        key = ("call", new.op, new.attrs, tuple(id(a) for a in new.args))
        return self._canon(key, new)

    def visit_Tuple(self, node):
        new = self.generic_visit(node)
        return self._canon(("tuple", tuple(id(f) for f in new.fields)), new)

    def visit_TupleGetItem(self, node):
        new = self.generic_visit(node)
        return self._canon(("get", id(new.tuple_value), new.index), new)


def eliminate_common_subexpr(mod: Module, fskip=None) -> Module:
    """Merge nodes that compute the same value (see the module's docstring).

    Parameters
    ----------
    mod : tecc.graph.Module
    fskip : callable, optional
        ``fskip(call) -> bool``: True keeps that call out of the merging.

    Returns
    -------
    tecc.graph.Module
        The same module when no two nodes were equal.
    """
    return mod.map_functions(lambda fn: _Merge(fskip).visit(fn), primitive=True)


__all__ = ["eliminate_common_subexpr"]
