"""te.tag_scope: the tag of every te.compute made inside it (a context manager and
a decorator); scopes do not nest."""
import pytest

from tecc import te
from tecc.te.tag import TagScopeError


def test_with_tags_computes_inside_only():
    A = te.placeholder((4,), name="A")
    with te.tag_scope(tag="gemm"):
        B = te.compute((4,), lambda i: A[i] * 2)
        assert te.tag.TagScope.get_current().tag == "gemm"
    C = te.compute((4,), lambda i: A[i] + 1)
    assert B.op.tag == "gemm" and C.op.tag == ""
    assert te.tag.TagScope.get_current() is None


def test_decorator_and_nesting():
    A = te.placeholder((4,), name="A")

    @te.tag_scope(tag="conv")
    def make(x):
        """doc kept"""
        return te.compute(x.shape, lambda i: x[i] + 1)

    assert make(A).op.tag == "conv" and make.__doc__ == "doc kept"
    with pytest.raises(ValueError, match=r"tag_scope\('conv'\) inside tag_scope\('outer'\): tag scopes do not nest"):
        with te.tag_scope(tag="outer"):
            make(A)
    assert te.tag.TagScope.get_current() is None  # left cleanly after the error


def test_an_explicit_tag_inside_a_scope_is_an_error():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TagScopeError, match="compute 'B': tag='x' given inside tag_scope\\('y'\\)"):
        with te.tag_scope("y"):
            te.compute((4,), lambda i: A[i], name="B", tag="x")
