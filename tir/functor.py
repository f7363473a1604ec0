"""The one visitor and mutator base of the IR.

Dispatch is by node class: ``visit_Add`` handles :class:`Add`; a class with no
method of its own falls back along its MRO (``visit_Var`` also handles
:class:`SizeVar`, ``visit_BinaryOp`` handles every binary operator) and finally to the
generic default, which recurses into the children the node declared.  The table is
built once per visitor class.  Visiting something that is not an IR node raises.

:class:`IRMutator` returns the very same object when nothing below a node changed,
so "unchanged" is an identity check (``new is old``).
"""
from __future__ import annotations

from dataclasses import replace

from .node import NODE_CLASSES, Node

_REGISTERED = NODE_CLASSES  # filled as node modules are imported


def _children(node):
    return type(node)._children


def _table(cls) -> dict:
    """The dispatch table of visitor class ``cls`` (node class -> method), kept on
    the class itself: it lives as long as the class (a visitor class defined inside
    a function is collected with its table)."""
    table = cls.__dict__.get("_dispatch_table")
    if table is None:
        table = {}
        cls._dispatch_table = table
    return table


class IRVisitor:
    """Walks expressions and statements; override ``visit_<Class>`` methods."""

    def visit(self, node):
        table = _table(type(self))
        fn = table.get(type(node))
        if fn is None:
            fn = table[type(node)] = self._resolve(type(node))
        return fn(self, node)

    def _resolve(self, cls):
        if not (isinstance(cls, type) and issubclass(cls, Node)):
            raise TypeError(f"{type(self).__name__} cannot visit a {cls.__name__}: not an IR node")
        for base in cls.__mro__:
            fn = getattr(type(self), "visit_" + base.__name__, None)
            if fn is not None:
                return fn
            if base is Node:
                break
        if cls not in _REGISTERED:
            raise TypeError(f"{type(self).__name__} has no visit_{cls.__name__} and {cls.__name__} "
                            "is not a registered IR node with children to recurse into")
        return type(self).generic_visit

    def generic_visit(self, node):
        for name in _children(node):
            value = getattr(node, name)
            if value is None:
                continue
            if isinstance(value, tuple):
                for v in value:
                    if isinstance(v, Node):
                        self.visit(v)
            else:
                self.visit(value)


class IRMutator(IRVisitor):
    """Rebuilds the IR bottom-up; returns the same object where nothing changed."""

    def visit(self, node):
        table = _table(type(self))
        fn = table.get(type(node))
        if fn is None:
            fn = table[type(node)] = self._resolve(type(node))
        return fn(self, node)

    def generic_visit(self, node):
        changes = None
        for name in _children(node):
            value = getattr(node, name)
            if value is None:
                continue
            if isinstance(value, tuple):
                new_items = None
                for i, v in enumerate(value):
                    if isinstance(v, Node):
                        nv = self.visit(v)
                        if nv is not v:
                            if new_items is None:
                                new_items = list(value)
                            new_items[i] = nv
                if new_items is not None:
                    if changes is None:
                        changes = {}
                    changes[name] = tuple(new_items)
            else:
                nv = self.visit(value)
                if nv is not value:
                    if changes is None:
                        changes = {}
                    changes[name] = nv
        if changes is None:
            return node
        return replace(node, **changes)


class _PostOrder(IRVisitor):
    def __init__(self, fn):
        self.fn = fn

    def generic_visit(self, node):
        IRVisitor.generic_visit(self, node)
        self.fn(node)


def post_order_visit(node, fn):
    """Call ``fn`` on every node below ``node`` (children first)."""
    _PostOrder(fn).visit(node)


class _PreOrder(IRVisitor):
    def __init__(self, fn):
        self.fn = fn

    def generic_visit(self, node):
        if self.fn(node) is not False:
            IRVisitor.generic_visit(self, node)


def pre_order_visit(node, fn):
    """Call ``fn`` on every node below ``node`` (parents first); where ``fn``
    returns False, the node's children are skipped."""
    _PreOrder(fn).visit(node)


class _Substitute(IRMutator):
    def __init__(self, vmap):
        self.vmap = vmap
        self.memo = {}  # combiners and reduction axes already rewritten (shared by tuple reductions)

    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def visit_Reduce(self, r):
        # a reduction also refers to variables outside its children: in the combiner's
        # expressions and in the domains of its axes (an extent may be a loop variable)
        from .expr import CommReducer, IterVar, Range

        new = self.generic_visit(r)
        comb = self.memo.get(id(r.combiner))
        if comb is None:
            c = r.combiner
            result = tuple(self.visit(x) for x in c.result)
            ident = tuple(self.visit(x) for x in c.identity_element)
            same = all(a is b for a, b in zip(result + ident, c.result + c.identity_element))
            comb = self.memo[id(r.combiner)] = c if same else CommReducer(c.lhs, c.rhs, result, ident)
        axis = []
        for iv in r.axis:
            niv = self.memo.get(id(iv))
            if niv is None:
                lo, ext = self.visit(iv.dom.min), self.visit(iv.dom.extent)
                niv = iv if lo is iv.dom.min and ext is iv.dom.extent else IterVar(
                    Range(lo, ext), iv.var, iv.iter_type, iv.thread_tag)
                self.memo[id(iv)] = niv
            axis.append(niv)
        if comb is r.combiner and all(a is b for a, b in zip(axis, r.axis)):
            return new
        return replace(new, combiner=comb, axis=tuple(axis))


def substitute(node, vmap):
    """Replace variables by expressions (``vmap``: Var -> PrimExpr).

    Binding sites (loop and let variables) are never replaced.  ``node`` may be a
    tuple or list of nodes: they are rewritten together, so reductions that shared
    a combiner or an axis still share them.
    """
    if not vmap:
        return node
    sub = _Substitute(vmap)
    if isinstance(node, (tuple, list)):
        return tuple(sub.visit(n) for n in node)
    return sub.visit(node)


class _Transform(IRMutator):
    def __init__(self, preorder, postorder, only):
        self.pre, self.post, self.only = preorder, postorder, only

    def visit(self, node):
        applies = self.only is None or isinstance(node, self.only)
        if applies and self.pre is not None:
            r = self.pre(node)
            if r is not None:
                return r
        new = IRMutator.visit(self, node)
        if applies and self.post is not None:
            r = self.post(new)
            if r is not None:
                return r
        return new


def ir_transform(node, preorder=None, postorder=None, only=None):
    """Rewrite ``node``: ``preorder(n)`` may return a replacement (no recursion
    then); ``postorder(n)`` sees rebuilt children and may return a replacement.
    ``only`` limits both to instances of the given classes."""
    return _Transform(preorder, postorder, only).visit(node)


class _FindVar(IRVisitor):
    def __init__(self, pred):
        self.pred = pred
        self.found = False

    def visit_Var(self, v):
        if not self.found and self.pred(v):
            self.found = True


def uses_var(node, pred) -> bool:
    """True if any :class:`Var` below ``node`` satisfies ``pred``."""
    finder = _FindVar(pred)
    finder.visit(node)
    return finder.found


class _CollectVars(IRVisitor):
    def __init__(self):
        self.out = set()

    def visit_Var(self, v):
        self.out.add(v)


def collect_vars(node) -> set:
    """All variables read below ``node``."""
    collector = _CollectVars()
    collector.visit(node)
    return collector.out
