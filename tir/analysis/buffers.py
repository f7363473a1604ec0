"""Questions about buffers: their layout, who reads and writes them, how much memory
each scope holds.

Layout
    :func:`buffer_strides`, :func:`buffer_size` and :func:`flat_index` are the one
    definition of how a multi-dimensional access maps to element offsets (row-major,
    or the explicit strides ``storage_align`` sets, plus ``elem_offset``).
    Flattening, the C printer and the reference interpreter all use them.

Accesses
    :func:`buffers_written` and :func:`buffers_read` list buffers in the order of
    their first store/load; :func:`allocations` the buffers allocated below a node;
    :func:`passed_data` the buffers handed to packed functions (which count as
    written: :func:`written_data`).

Storage
    :func:`storage_bytes` sums the constant sizes of the allocations of one scope
    (shared memory per block, local memory per thread).

A buffer whose dtype has lanes (``float32x4``: a promoted register slot) holds whole
vectors; its element count is in vectors (``tir.dtype.parse(dtype).bytes`` counts all lanes).
"""
from __future__ import annotations

from .. import dtype as _dt
from .. import expr as E
from .. import op as _op
from .. import keys
from .. import stmt as S
from ..functor import IRVisitor, post_order_visit, pre_order_visit


def _is_const(e, value) -> bool:
    return isinstance(e, E.IntImm) and e.value == value


def _mul(a, b):
    if _is_const(a, 1):
        return b
    if _is_const(b, 1):
        return a
    return _op.mul(a, b)


def _add(a, b):
    if a is None or _is_const(a, 0):
        return b
    if _is_const(b, 0):
        return a
    return _op.add(a, b)


# ----------------------------------------------------------------------------
# layout
# ----------------------------------------------------------------------------
def buffer_strides(buf: S.Buffer) -> tuple:
    """The strides (in elements) of ``buf``: explicit ones, else row-major."""
    if buf.strides:
        assert len(buf.strides) == len(buf.shape), f"buffer {buf.name}: strides and shape differ in rank"
        return tuple(_op.convert(s) for s in buf.strides)
    strides = []
    acc = _op.convert(1)
    for extent in reversed(buf.shape):
        strides.append(acc)
        acc = _mul(acc, _op.convert(extent))
    return tuple(reversed(strides))


def buffer_size(buf: S.Buffer):
    """Number of elements of storage that ``buf`` needs (an expression)."""
    if not buf.shape:
        return _op.convert(1)
    if buf.strides:
        return _mul(_op.convert(buf.strides[0]), _op.convert(buf.shape[0]))
    size = _op.convert(1)
    for extent in buf.shape:
        size = _mul(size, _op.convert(extent))
    return size


def const_size(buf: S.Buffer):
    """:func:`buffer_size` as an int, or None when it is symbolic."""
    return E.const_int_value(buffer_size(buf))


def is_flat(buf: S.Buffer) -> bool:
    """True when ``buf`` is 1-D with unit stride and no offset (nothing to flatten)."""
    if len(buf.shape) != 1:
        return False
    if buf.elem_offset is not None and not _is_const(buf.elem_offset, 0):
        return False
    return not buf.strides or _is_const(_op.convert(buf.strides[0]), 1)


def flat_index(buf: S.Buffer, indices):
    """The element offset of ``buf[indices]``: ``sum(index * stride) + elem_offset``.

    One index may be a vector (a ``Ramp`` stays a ramp; the other terms are
    broadcast to its lanes).  The sum is built plainly, for ``simplify`` to tidy.
    """
    assert len(indices) == len(buf.shape), (
        f"access of buffer {buf.name} with {len(indices)} indices, but it has {len(buf.shape)} dimensions")
    if is_flat(buf):
        return indices[0]
    index = None
    vector = None
    for idx, stride in zip(indices, buffer_strides(buf)):
        if _dt.lanes(idx.dtype) > 1:
            assert vector is None, f"access of buffer {buf.name} with two vector indices"
            vector = _vector_mul(idx, stride)
        else:
            index = _add(index, _mul(idx, stride))
    if buf.elem_offset is not None:
        index = _add(index, buf.elem_offset)
    if vector is None:
        return index if index is not None else _op.convert(0)
    if index is None or _is_const(index, 0):
        return vector
    if isinstance(vector, E.Ramp):  # contiguous lanes stay contiguous
        return E.Ramp(_add(index, vector.base), vector.stride, vector.lanes)
    return E.Add(vector, E.Broadcast(index, vector.lanes))


def _vector_mul(idx, stride):
    if _is_const(stride, 1):
        return idx
    if isinstance(idx, E.Ramp):
        return E.Ramp(_mul(idx.base, stride), _mul(idx.stride, stride), idx.lanes)
    return E.Mul(idx, E.Broadcast(stride, _dt.lanes(idx.dtype)))


# ----------------------------------------------------------------------------
# accesses
# ----------------------------------------------------------------------------
def _in_scopes(buf, scopes) -> bool:
    """``scopes`` None means every scope; an empty scope counts as global."""
    return scopes is None or (buf.scope or "global") in scopes


def _accessed(node, access, scopes) -> list:
    found = {}

    def visit(n):
        if isinstance(n, access) and n.buffer.data not in found and _in_scopes(n.buffer, scopes):
            found[n.buffer.data] = n.buffer

    post_order_visit(node, visit)
    return list(found.values())


def buffers_written(node, scopes=None) -> list:
    """The buffers stored to below ``node`` (of the given scopes), by first store."""
    return _accessed(node, S.BufferStore, scopes)


def buffers_read(node, scopes=None) -> list:
    """The buffers loaded from below ``node`` (of the given scopes), by first load."""
    return _accessed(node, E.BufferLoad, scopes)


def passed_data(node) -> set:
    """The data variables of the buffers passed to packed functions below ``node``
    (``tir.call_packed(name, buf)``: the callee may read and write them)."""
    found = set()

    def visit(n):
        if isinstance(n, E.Call) and n.op == keys.STACK_MAKE_ARRAY and n.args and isinstance(n.args[0], E.Var):
            found.add(n.args[0])

    post_order_visit(node, visit)
    return found


def written_by_address(node) -> set:
    """The data variables of the buffers whose address is taken for writing below
    ``node`` (``Buffer.access_ptr("w")``: an external callee stores through it)."""
    found = set()

    def visit(n):
        if (isinstance(n, E.Call) and n.op == keys.ACCESS_PTR and isinstance(n.args[1], E.Var)
                and isinstance(n.args[4], E.IntImm) and n.args[4].value & S.Buffer.WRITE):
            found.add(n.args[1])

    post_order_visit(node, visit)
    return found


def written_data(node) -> set:
    """The data variables of every buffer stored to below ``node``, of those passed
    to packed functions (which may write them) and of those handed out by address
    for writing."""
    return {b.data for b in buffers_written(node)} | passed_data(node) | written_by_address(node)


def written_params(func: S.PrimFunc) -> set:
    """Indices of the buffer parameters of ``func`` that its body stores to."""
    data = written_data(func.body)
    return {i for i, p in enumerate(func.params)
            if p in func.buffer_map and (func.buffer_map[p].data in data or p in data)}


class _Allocations(IRVisitor):
    def __init__(self, scopes):
        self.scopes = scopes
        self.found = []

    def visit_Allocate(self, s):
        if _in_scopes(s.buffer, self.scopes):
            self.found.append(s.buffer)
        self.generic_visit(s)


def allocations(node, scopes=None) -> list:
    """The buffers allocated below ``node`` (of the given scopes), in program order
    (an allocation before the ones it encloses)."""
    v = _Allocations(scopes)
    v.visit(node)
    return v.found


def storage_bytes(node, scope: str) -> int:
    """Bytes of all allocations of ``scope`` below ``node`` (``node`` may be a
    PrimFunc).  Every one must have a constant size.

    Raises
    ------
    ValueError
        Naming the buffer whose size is symbolic.
    """
    body = node.body if isinstance(node, S.PrimFunc) else node
    total = 0
    for buf in allocations(body, (scope,)):
        n = const_size(buf)
        if n is None:
            raise ValueError(f"the {scope} buffer {buf.name!r} has the symbolic size {buffer_size(buf)}")
        total += n * _dt.parse(buf.dtype).bytes
    return total


def dtypes_used(node) -> set:
    """The element dtypes (``"float16"``, ``"int32"``...) of every value, variable and
    buffer below ``node`` (a PrimFunc includes its parameters' buffers)."""
    found = set()
    roots = [node]
    if isinstance(node, S.PrimFunc):
        roots = [node.body]
        found.update(_dt.element(b.dtype) for b in node.buffer_map.values())
        found.update(_dt.element(p.dtype) for p in node.params if p not in node.buffer_map)

    def visit(n):
        if isinstance(n, E.PrimExpr):
            found.add(_dt.element(n.dtype))
        if isinstance(n, (E.BufferLoad, S.BufferStore, S.Allocate)):
            found.add(_dt.element(n.buffer.dtype))
        elif isinstance(n, (S.LetStmt, E.Let)):
            found.add(_dt.element(n.var.dtype))

    for root in roots:
        post_order_visit(root, visit)
    return found


class Uses:
    """What a statement touches, gathered in one walk (:func:`uses`).

    ``read``/``written``/``allocated`` map a buffer's data variable to the buffer
    (in order of first use); ``vars`` holds every variable read, in expressions and
    in the shapes, strides and offsets of those buffers.
    """

    def __init__(self):
        self.read = {}
        self.written = {}
        self.allocated = {}
        self.vars = set()


class _Uses(IRVisitor):
    def __init__(self):
        self.out = Uses()

    def visit_Var(self, v):
        self.out.vars.add(v)

    def visit_BufferLoad(self, e):
        self.out.read.setdefault(e.buffer.data, e.buffer)
        self.generic_visit(e)

    def visit_BufferStore(self, s):
        self.out.written.setdefault(s.buffer.data, s.buffer)
        self.generic_visit(s)

    def visit_Allocate(self, s):
        self.out.allocated.setdefault(s.buffer.data, s.buffer)
        self.generic_visit(s)


def uses(node) -> Uses:
    """The buffers ``node`` reads, writes and allocates and the variables it reads."""
    v = _Uses()
    v.visit(node)
    out = v.out
    for buf in list(out.read.values()) + list(out.written.values()) + list(out.allocated.values()):
        for e in tuple(buf.shape) + tuple(buf.strides) + (buf.elem_offset,):
            if isinstance(e, E.PrimExpr):
                v.visit(e)
    return out


def vars_used(node) -> set:
    """Every variable read below ``node``: in its expressions, and in the shapes,
    strides and offsets of the buffers allocated or accessed there."""
    return uses(node).vars


#: the pragmas whose value is code to compile beside the function and link with it
#: (TVM's ``s[C].pragma(axis, "import_llvm", code)``; tecc's ``"import_c"`` too)
IMPORT_PRAGMAS = {"pragma_import_c": "c", "pragma_import_llvm": "llvm"}


def imported_code(node) -> list:
    """``[(kind, code)]`` of the ``import_c`` / ``import_llvm`` pragmas on the loops
    below ``node``, each once, outer loops first (``kind`` is ``"c"`` or ``"llvm"``):
    where two define one function, the later -- inner -- one is linked (as TVM
    links imports in that order, each overriding)."""
    found = []

    def visit(n):
        if isinstance(n, S.For):
            for key, value in n.annotations:
                if key in IMPORT_PRAGMAS and isinstance(value, E.StringImm):
                    item = (IMPORT_PRAGMAS[key], value.value)
                    if item not in found:
                        found.append(item)

    pre_order_visit(node, visit)
    return found

