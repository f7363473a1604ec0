"""Structural equality of IR trees.

Two trees are equal when they have the same node classes and field values.
Variables and buffers are equal when they correspond: a binding site (loop
variable, let variable, allocated buffer, function parameter) maps the left object to
the right one for the scope below it.  Free variables must be the same object unless
``map_free_vars=True``, in which case the first occurrence pairs them.
"""
from __future__ import annotations

from dataclasses import fields
from enum import Enum

from . import expr as E
from . import stmt as S
from .node import Node


class _Eq:
    def __init__(self, map_free_vars):
        self.map_free = map_free_vars
        self.lr = {}
        self.rl = {}
        self.path = []

    def bind(self, a, b):
        if a in self.lr or b in self.rl:
            return self.lr.get(a) is b
        self.lr[a] = b
        self.rl[b] = a
        return True

    def var(self, a, b):
        if a is b and a not in self.lr:
            return True
        m = self.lr.get(a)
        if m is not None:
            return m is b
        if self.map_free and b not in self.rl:
            return self.bind(a, b)
        return False

    def buffer(self, a, b):
        m = self.lr.get(a)
        if m is not None:
            return m is b
        if a is b:
            return True
        if b in self.rl:
            return False
        if not (a.dtype == b.dtype and a.scope == b.scope and len(a.shape) == len(b.shape)):
            return False
        self.lr[a] = b
        self.rl[b] = a
        if a.data is not b.data and not self.bind(a.data, b.data):
            return False
        return self.eq(a.shape, b.shape)

    def eq(self, a, b) -> bool:
        if a is b:
            return True
        if isinstance(a, (tuple, list)):
            if not isinstance(b, (tuple, list)) or len(a) != len(b):
                return False
            return all(self.eq(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return isinstance(b, dict) and a.keys() == b.keys() and all(self.eq(a[k], b[k]) for k in a)
        if type(a) is not type(b):
            return False
        if isinstance(a, E.Var):
            return a.dtype == b.dtype and self.var(a, b)
        if isinstance(a, S.Buffer):
            return self.buffer(a, b)
        if isinstance(a, S.For):
            return (self.eq(a.min, b.min) and self.eq(a.extent, b.extent) and a.kind == b.kind
                    and self.bind(a.loop_var, b.loop_var) and self.eq(a.annotations, b.annotations)
                    and self.eq(a.thread_binding, b.thread_binding) and self.eq(a.body, b.body))
        if isinstance(a, (S.LetStmt, E.Let)):
            return self.eq(a.value, b.value) and self.bind(a.var, b.var) and self.eq(a.body, b.body)
        if isinstance(a, S.Allocate):
            return self.buffer(a.buffer, b.buffer) and self.eq(a.body, b.body)
        if isinstance(a, E.IterVar):
            if a.iter_type != b.iter_type or a.thread_tag != b.thread_tag or not self.eq(a.dom, b.dom):
                return False
            if a.var in self.lr or a.var is b.var:
                return self.var(a.var, b.var)
            return self.bind(a.var, b.var)
        if isinstance(a, E.CommReducer):  # lhs and rhs are the combiner's own definitions
            if len(a.lhs) != len(b.lhs) or len(a.rhs) != len(b.rhs):
                return False
            return (all(x.dtype == y.dtype and self.bind(x, y) for x, y in zip(a.lhs + a.rhs, b.lhs + b.rhs))
                    and self.eq(a.result, b.result) and self.eq(a.identity_element, b.identity_element))
        if isinstance(a, E.Reduce):  # the reduction axes are defined here: bind them before the source
            return (a.value_index == b.value_index and self.eq(a.combiner, b.combiner)
                    and self.eq(a.axis, b.axis) and self.eq(a.source, b.source)
                    and self.eq(a.condition, b.condition) and self.eq(a.init, b.init))
        if isinstance(a, S.PrimFunc):
            if len(a.params) != len(b.params):
                return False
            for p, q in zip(a.params, b.params):
                if not self.bind(p, q):
                    return False
                ba, bb = a.buffer_map.get(p), b.buffer_map.get(q)
                if (ba is None) != (bb is None) or (ba is not None and not self.buffer(ba, bb)):
                    return False
            return self.eq(a.body, b.body)
        if isinstance(a, Node) or isinstance(a, E.Range):
            for f in fields(a):
                if not self.eq(getattr(a, f.name), getattr(b, f.name)):
                    return False
            return True
        if isinstance(a, Enum):
            return a is b
        if isinstance(a, float) and isinstance(b, float):
            return a == b or (a != a and b != b)
        return a == b


def structural_equal(a, b, map_free_vars: bool = False) -> bool:
    """True if ``a`` and ``b`` have the same structure (see the module docs).  A
    Python number compares as the constant TVM converts it to (``int`` to an int32
    ``IntImm``, ``float`` to a float32 ``FloatImm``)."""
    a, b = _as_node(a), _as_node(b)
    return _Eq(map_free_vars).eq(a, b)


def _as_node(x):
    if isinstance(x, (bool, int, float)) and not isinstance(x, E.PrimExpr):
        from .op import convert
        return convert(x)
    return x


def assert_structural_equal(a, b, map_free_vars: bool = False):
    """Raise ``AssertionError`` showing both trees if they differ."""
    if not structural_equal(a, b, map_free_vars):
        from .printer import to_text
        raise AssertionError(
            "IR trees differ\n--- left ---\n" + to_text(a) + "\n--- right ---\n" + to_text(b))


def structural_hash(node) -> int:
    """A hash consistent with :func:`structural_equal` (variables hashed by name)."""
    from .printer import to_text
    return hash(to_text(node))
