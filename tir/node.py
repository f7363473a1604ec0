"""Base of every IR node.

Nodes are frozen dataclasses with slots.  Each node class declares which of its fields
are *children* (sub-expressions or sub-statements, possibly tuples of them) through the
``_children`` class attribute; the generic visitor and mutator in :mod:`.functor` walk
exactly those fields, so adding a node means declaring its children once.

Fields that *bind* a variable (a loop variable, a let variable) are deliberately not
children: a substitution must never turn a binding site into an arbitrary expression.
"""
from __future__ import annotations

from typing import ClassVar

#: every concrete node class, by class object, filled by :func:`ir_node`
NODE_CLASSES: list = []


class Node:
    """Base of IR nodes.  Hash and equality are by identity; use
    :func:`tecc.tir.structural_equal` to compare structure."""

    __slots__ = ()
    _children: ClassVar[tuple] = ()

    def __repr__(self) -> str:  # pragma: no cover - thin wrapper
        from .printer import to_text
        return to_text(self)

    def __str__(self) -> str:
        return repr(self)  # a subclass's own __repr__ (CommReducer's, say)

    def same_as(self, other) -> bool:
        return self is other

    def script(self) -> str:
        from .printer import to_text
        return to_text(self)

    def _repr_html_(self) -> str:
        """The text form, highlighted (Jupyter)."""
        from .. import display
        return display.code_html(str(self), "tir")


def ir_node(children=()):
    """Class decorator: declare ``children`` field names and register the class."""

    def wrap(cls):
        cls._children = tuple(children)
        NODE_CLASSES.append(cls)
        return cls

    return wrap
