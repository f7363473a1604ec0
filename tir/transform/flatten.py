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
* A parameter buffer whose layout is symbolic (``tir.decl_buffer(...,
  offset_factor=8)`` gives an ``elem_offset`` variable, ``strides=[te.var("ld"),
  1]`` a stride variable) gets the layout of the arrays tecc passes: the address of
  their first element, compact row-major.  Its ``elem_offset`` variable becomes 0
  and its stride variables the row-major strides, everywhere in the body (unless
  the variable is itself a parameter).  Constant strides that are not row-major
  cannot be passed and are an error.  A variable in a parameter's shape that is not
  a parameter (``n`` of a hand-written function over ``decl_buffer((n,))``) becomes
  a trailing scalar parameter, as ``te`` lowering makes it: the runtime binds it
  from the array's shape.
"""
from __future__ import annotations

from dataclasses import replace

from ...errors import LoweringError
from .. import expr as E
from .. import op as _op
from .. import stmt as S
from ..analysis.buffers import buffer_strides, flat_index, is_flat
from ..functor import IRMutator, collect_vars, substitute


class _Flatten(IRMutator):
    def __init__(self):
        self.flat = {}  # original Buffer -> flat Buffer

    def flat_buffer(self, buf):
        if is_flat(buf):
            return buf
        f = self.flat.get(buf)
        if f is None:
            f = buf.get_flattened_buffer()
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
    body = flatten_stmt(func.body)
    layout = _param_layout(func)
    if layout:
        body = substitute(body, layout)
    sizes = _shape_params(func)
    if sizes:
        return replace(func, params=func.params + tuple(sizes), body=body)
    return func.with_body(body)


def _shape_params(func: S.PrimFunc) -> list:
    """The variables in the shapes of ``func``'s parameter buffers that are not
    parameters, in parameter order (see the module docs)."""
    params = set(func.params)
    out = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        for extent in buf.shape:
            for v in sorted(collect_vars(extent), key=lambda v: v.name):
                if v not in params and v not in out:
                    out.append(v)
    return out


def _param_layout(func: S.PrimFunc) -> dict:
    """``{layout variable: value}`` for the parameter buffers of ``func`` (see the
    module docs)."""
    params = set(func.params)
    vmap = {}
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        off = buf.elem_offset
        if isinstance(off, E.Var) and off not in params:
            vmap[off] = E.IntImm(off.dtype, 0)
        if not buf.strides:
            continue
        compact = buffer_strides(S.Buffer(buf.name, buf.dtype, buf.shape, buf.data))
        for d, (given, want) in enumerate(zip(buf.strides, compact)):
            if isinstance(given, E.Var):
                if given not in params and given not in vmap:
                    vmap[given] = _op.cast(given.dtype, want)
            elif isinstance(given, E.IntImm) and isinstance(want, E.IntImm) and given.value != want.value:
                raise LoweringError(
                    f"function {func.name!r}: parameter buffer {buf.name!r} has stride {given.value} in dimension "
                    f"{d}, but tecc passes arrays compact (stride {want.value} there); declare the parameter "
                    "without strides and index it accordingly, or copy into a strided buffer inside the function")
    return vmap
