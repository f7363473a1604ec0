"""Storage flattening: every buffer access becomes one-dimensional.

Each multi-dimensional :class:`Buffer` met in the body gets one flat twin
``Buffer(name, dtype, (size,), data, scope)`` that shares the original's ``data``
handle variable, so a backend finds the same pointer under both.  ``A[i, j]``
becomes ``A_flat[i*s0 + j*s1 + elem_offset]`` where the strides ``s`` are the
buffer's explicit ``strides`` (set by ``storage_align``) or row-major ones.

Choices
-------
* ``PrimFunc.buffer_map`` keeps the ORIGINAL multi-dimensional buffers: the
  runtime checks argument shapes against them.  The body refers only to the flat
  twins, whose ``data`` is the same handle variable, so nothing else records the
  mapping.
* ``Allocate(buf)`` becomes ``Allocate(flat)`` with ``size = prod(shape)`` or,
  with explicit strides, ``strides[0] * shape[0]``.
* Buffers that are already 1-D with unit stride and no offset are left alone.
* The index is built as a plain sum of products; the ``simplify`` pass that
  follows in the pipeline tidies it.
"""
from __future__ import annotations

from dataclasses import replace

from .. import expr as E
from .. import stmt as S
from ..analysis.buffers import buffer_size, flat_index, is_flat
from ..functor import IRMutator


class _Flatten(IRMutator):
    def __init__(self):
        self.flat = {}  # original Buffer -> flat Buffer

    def flat_buffer(self, buf):
        if is_flat(buf):
            return buf
        f = self.flat.get(buf)
        if f is None:
            f = S.Buffer(buf.name, buf.dtype, (buffer_size(buf),), buf.data, buf.scope, (), None, buf.align)
            self.flat[buf] = f
        return f

    def visit_BufferLoad(self, e):
        indices = tuple(self.visit(i) for i in e.indices)
        buf = self.flat_buffer(e.buffer)
        if buf is e.buffer:
            if all(a is b for a, b in zip(indices, e.indices)):
                return e
            return E.BufferLoad(buf, indices)
        return E.BufferLoad(buf, (flat_index(e.buffer, indices),))

    def visit_BufferStore(self, s):
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        buf = self.flat_buffer(s.buffer)
        if buf is s.buffer:
            if value is s.value and all(a is b for a, b in zip(indices, s.indices)):
                return s
            return S.BufferStore(buf, value, indices)
        return S.BufferStore(buf, value, (flat_index(s.buffer, indices),))

    def visit_Allocate(self, s):
        body = self.visit(s.body)
        buf = self.flat_buffer(s.buffer)
        if buf is s.buffer and body is s.body:
            return s
        return S.Allocate(buf, body)

    def visit_AttrStmt(self, s):
        new = self.generic_visit(s)
        if isinstance(s.node, S.Buffer):
            buf = self.flat_buffer(s.node)
            if buf is not s.node:
                new = replace(new, node=buf)
        return new


def flatten_stmt(stmt: S.Stmt) -> S.Stmt:
    """Flatten every buffer access below ``stmt`` (see the module docs)."""
    return _Flatten().visit(stmt)


def flatten(func: S.PrimFunc) -> S.PrimFunc:
    """Make every buffer access in ``func`` one-dimensional.

    Parameters
    ----------
    func : PrimFunc
        A function with multi-dimensional ``BufferLoad``/``BufferStore``.

    Returns
    -------
    PrimFunc
        The function whose body uses 1-D buffers sharing the original ``data``
        variables; ``buffer_map`` still holds the original argument buffers.
    """
    return func.with_body(flatten_stmt(func.body))
