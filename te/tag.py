"""Tag scopes (TVM's ``te.tag_scope``): every ``te.compute`` made inside one gets its tag.

Used as a context manager or as a decorator of a function that builds computes::

    with te.tag_scope(tag="gemm"):
        C = te.compute(...)            # C.op.tag == "gemm"

    @te.tag_scope(tag="conv")
    def compute_conv(data, weight):
        return te.compute(...)         # tagged "conv"

Scopes do not nest, and a compute inside one must not pass its own ``tag``: both
raise ``ValueError`` (as in TVM).
"""
from __future__ import annotations

import functools
import threading

from ..errors import TeccError

_state = threading.local()


class TagScopeError(TeccError, ValueError):
    """Nested tag scopes, or a compute given its own tag inside one."""


class TagScope:
    """The scope of one tag: a context manager, and a decorator (see the module)."""

    def __init__(self, tag: str):
        if not isinstance(tag, str):
            raise TypeError(f"tag_scope: tag must be a string, got {tag!r}")
        self.tag = tag

    @staticmethod
    def get_current():
        """The innermost active :class:`TagScope`, or None."""
        return getattr(_state, "current", None)

    def __enter__(self):
        current = TagScope.get_current()
        if current is not None:
            raise TagScopeError(f"tag_scope({self.tag!r}) inside tag_scope({current.tag!r}): tag scopes do not "
                                "nest; tag the inner computes explicitly (te.compute(..., tag=...)) instead")
        _state.current = self
        return self

    def __exit__(self, *exc):
        _state.current = None
        return False

    def __call__(self, fdecl):
        @functools.wraps(fdecl)
        def tagged(*args, **kwargs):
            with self:
                return fdecl(*args, **kwargs)

        return tagged


def tag_scope(tag: str) -> TagScope:
    """The scope of ``tag``: every ``te.compute`` inside it gets ``tag``.

    Parameters
    ----------
    tag : str

    Returns
    -------
    TagScope
        A context manager, and a decorator.
    """
    return TagScope(tag)


def resolve(tag: str, name: str) -> str:
    """The tag a compute named ``name`` given ``tag`` gets: the current scope's, if
    any (then ``tag`` must be empty)."""
    current = TagScope.get_current()
    if current is None:
        return tag
    if tag:
        raise TagScopeError(f"compute {name!r}: tag={tag!r} given inside tag_scope({current.tag!r}); nested tags are "
                            "not supported -- drop one of them")
    return current.tag
