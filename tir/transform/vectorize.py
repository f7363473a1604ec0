"""Loop vectorization.

A ``For`` of kind ``VECTORIZED`` with a constant extent ``L`` becomes straight-line
vector code: the loop variable becomes ``Ramp(min, 1, L)``, expressions that do not
depend on it stay scalar (and are ``Broadcast`` where they meet a vector), loads and
stores take ``Ramp`` indices.  ``x + ramp`` and ``ramp * c`` stay ramps, so an
index such as ``i*64 + v`` becomes ``ramp(i*64, 1, L)``.

The loop is left alone (still ``VECTORIZED``, so the backend emits a SIMD
pragma) when the body is anything but a sequence of stores and lets over
vectorizable expressions: an inner loop, an ``if``, an allocation, an unknown
call, a lazy ``if_then_else`` whose condition depends on the loop variable (one
whose condition does not chooses between whole vectors), vectors of a narrow type
(bfloat16, the 8- and 4-bit floats, int4...) other than copies (a store of a load:
the backends compute those types one lane at a time, and move their vectors as
bits only), an index that
is neither scalar nor a ramp (a gather), a store whose index does not depend on
the loop variable, or a written buffer that is accessed at two different
indices (a loop-carried dependence).  The last two rules make each lane touch
only its own elements of every written buffer, which is what makes running the
lanes together equal to running the iterations in order.

A loop whose extent is not a power of two becomes vectors whose widths are the
powers of two that sum to it (6 lanes: 4 then 2; no machine has 6-lane vectors, and
the C compiler would emulate one through memory).

Vectors are kept no wider than the target's registers (``max_vector_bytes``; the C
compiler keeps such vectors in registers, wider ones spill): a longer loop is cut
into chunks of a register's lanes, written out one after another when there are at
most :data:`MAX_UNROLLED_CHUNKS` of them and as a serial loop over chunks otherwise,
and the lanes left over (less than a register) as narrower whole vectors.
"""
from __future__ import annotations

from .. import dtype as _dt
from .. import expr as E
from .. import op as _op
from .. import stmt as S
from ..functor import IRMutator
from ..structural import structural_equal

MAX_LANES = 64
#: up to this many chunks of a long vectorized loop are written out in sequence
MAX_UNROLLED_CHUNKS = 16

#: pure intrinsics that apply lane-wise
_LANEWISE_CALLS = frozenset(_op.UNARY_MATH + _op.BINARY_MATH + _op.PREDICATES + (
    "abs", "popcount", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "shift_left", "shift_right"))


class _CannotVectorize(Exception):
    """Raised inside the rewriter; the loop is then kept as it is."""


def _is_int(e, value=None):
    return isinstance(e, E.IntImm) and (value is None or e.value == value)


def _add(a, b):
    if _is_int(a, 0):
        return b
    if _is_int(b, 0):
        return a
    return _op.add(a, b)


def _sub(a, b):
    if _is_int(b, 0):
        return a
    return _op.sub(a, b)


def _mul(a, b):
    if _is_int(a, 1):
        return b
    if _is_int(b, 1):
        return a
    return _op.mul(a, b)


def _lanes(e):
    return _dt.lanes(e.dtype)


class _Vectorizer(IRMutator):
    """Rewrites the body of one vectorized loop; raises _CannotVectorize."""

    def __init__(self, var, ramp, lanes):
        self.var = var
        self.lanes = lanes
        self.vmap = {var: ramp}
        self.stores = {}  # data Var of a written buffer -> its (vector) indices

    def bcast(self, e):
        if _lanes(e) == self.lanes:
            return e
        if _lanes(e) != 1:
            raise _CannotVectorize(f"mixed vector widths at {e}")
        return E.Broadcast(e, self.lanes)

    # leaves -----------------------------------------------------------------
    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def visit_Ramp(self, e):
        raise _CannotVectorize("already vectorized")

    def visit_Broadcast(self, e):
        raise _CannotVectorize("already vectorized")

    # arithmetic -------------------------------------------------------------
    def visit_BinaryOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            return e
        va, vb = _lanes(a) > 1, _lanes(b) > 1
        if not va and not vb:
            return type(e)(a, b)
        cls = type(e)
        ra, rb = isinstance(a, E.Ramp), isinstance(b, E.Ramp)
        # keep affine index arithmetic in ramp form
        if cls is E.Add:
            if ra and rb:
                return E.Ramp(_add(a.base, b.base), _add(a.stride, b.stride), self.lanes)
            if ra and not vb:
                return E.Ramp(_add(a.base, b), a.stride, self.lanes)
            if rb and not va:
                return E.Ramp(_add(a, b.base), b.stride, self.lanes)
        if cls is E.Sub:
            if ra and rb:
                return E.Ramp(_sub(a.base, b.base), _sub(a.stride, b.stride), self.lanes)
            if ra and not vb:
                return E.Ramp(_sub(a.base, b), a.stride, self.lanes)
        if cls is E.Mul:
            if ra and not vb:
                return E.Ramp(_mul(a.base, b), _mul(a.stride, b), self.lanes)
            if rb and not va:
                return E.Ramp(_mul(a, b.base), _mul(a, b.stride), self.lanes)
        return cls(self.bcast(a), self.bcast(b))

    def visit_CmpOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            return e
        if _lanes(a) == 1 and _lanes(b) == 1:
            return type(e)(a, b)
        return type(e)(self.bcast(a), self.bcast(b))

    def visit_And(self, e):
        return self.visit_CmpOp(e)

    def visit_Or(self, e):
        return self.visit_CmpOp(e)

    def visit_Select(self, e):
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        if max(_lanes(c), _lanes(t), _lanes(f)) == 1:
            return E.Select(c, t, f)
        return E.Select(self.bcast(c), self.bcast(t), self.bcast(f))

    def visit_Cast(self, e):
        v = self.visit(e.value)
        if v is e.value:
            return e
        if _lanes(v) == 1:
            return E.Cast(e.dtype, v)
        return E.Cast(_dt.with_lanes(e.dtype, self.lanes), v)

    def visit_Call(self, e):
        args = tuple(self.visit(a) for a in e.args)
        if all(a is b for a, b in zip(args, e.args)):
            return e
        if all(_lanes(a) == 1 for a in args):
            return E.Call(e.dtype, e.op, args)
        if e.op == "if_then_else" and _lanes(args[0]) == 1:
            # a condition the same for every lane: one branch chooses between whole vectors
            return E.Call(_dt.with_lanes(e.dtype, self.lanes), e.op,
                          (args[0], self.bcast(args[1]), self.bcast(args[2])))
        if e.op not in _LANEWISE_CALLS:
            # if_then_else with a condition per lane is lazy per lane, likely() is a
            # branch hint, others unknown
            raise _CannotVectorize(f"call {e.op} depends on the vectorized variable")
        return E.Call(_dt.with_lanes(e.dtype, self.lanes), e.op, tuple(self.bcast(a) for a in args))

    def visit_Let(self, e):
        value = self.visit(e.value)
        if _lanes(value) > 1:
            nv = E.Var(e.var.name, value.dtype)
            self.vmap[e.var] = nv
            return E.Let(nv, value, self.visit(e.body))
        body = self.visit(e.body)
        if value is e.value and body is e.body:
            return e
        return E.Let(e.var, value, body)

    def visit_Reduce(self, e):
        raise _CannotVectorize("reduce")

    def visit_ProducerLoad(self, e):
        raise _CannotVectorize("producer load")

    # memory -----------------------------------------------------------------
    def indices(self, indices):
        out = tuple(self.visit(i) for i in indices)
        for i in out:
            if _lanes(i) > 1 and not isinstance(i, E.Ramp):
                raise _CannotVectorize(f"gather index {i}")
        return out

    def visit_BufferLoad(self, e):
        indices = self.indices(e.indices)
        if all(a is b for a, b in zip(indices, e.indices)):
            return e
        return E.BufferLoad(e.buffer, indices)

    def visit_BufferStore(self, s):
        value = self.visit(s.value)
        indices = self.indices(s.indices)
        # each lane must write its own element: some index is a ramp with a
        # nonzero constant stride
        if not any(isinstance(i, E.Ramp) and _is_int(i.stride) and i.stride.value != 0 for i in indices):
            raise _CannotVectorize(f"store to {s.buffer.name} does not depend on the lane")
        prev = self.stores.setdefault(s.buffer.data, [])
        if not any(structural_equal(p, indices) for p in prev):
            if not all(_disjoint(p, indices) for p in prev):
                raise _CannotVectorize(f"{s.buffer.name} is written at two overlapping places")
            prev.append(indices)
        return S.BufferStore(s.buffer, self.bcast(value), indices)

    def visit_LetStmt(self, s):
        value = self.visit(s.value)
        if _lanes(value) > 1:
            nv = E.Var(s.var.name, value.dtype)
            self.vmap[s.var] = nv
            return S.LetStmt(nv, value, self.visit(s.body))
        return S.LetStmt(s.var, value, self.visit(s.body))

    def visit_SeqStmt(self, s):
        return S.SeqStmt(tuple(self.visit(x) for x in s.seq))

    def visit_Evaluate(self, s):
        if isinstance(s.value, E.IntImm):
            return s
        raise _CannotVectorize("evaluate with side effects")

    def visit_Stmt(self, s):
        raise _CannotVectorize(f"{type(s).__name__} in a vectorized loop")


def _disjoint(a, b) -> bool:
    """True if the 1-D vector indices ``a`` and ``b`` can never touch the same element:
    ramps of one constant stride whose bases differ by at least all their lanes."""
    if len(a) != 1 or len(b) != 1 or not isinstance(a[0], E.Ramp) or not isinstance(b[0], E.Ramp):
        return False
    ra, rb = a[0], b[0]
    if ra.lanes != rb.lanes or not (_is_int(ra.stride) and _is_int(rb.stride)):
        return False
    if ra.stride.value != rb.stride.value or ra.stride.value == 0:
        return False
    from ..arith import Analyzer
    d = Analyzer().simplify(rb.base - ra.base)
    return _is_int(d) and abs(d.value) >= ra.lanes * abs(ra.stride.value)


class _CheckAccesses:
    """Every access of a written buffer must use one of the stores' indices, or touch
    none of the elements they write (so no lane reads another lane's element)."""

    def __init__(self, stores):
        self.stores = stores

    def check(self, stmt):
        from ..functor import post_order_visit

        bad = []

        def visit(n):
            if isinstance(n, (E.BufferLoad, S.BufferStore)):
                stores = self.stores.get(n.buffer.data)
                if stores is not None and not any(structural_equal(w, n.indices) for w in stores) \
                        and not all(_disjoint(w, n.indices) for w in stores):
                    bad.append(n)

        post_order_visit(stmt, visit)
        return not bad


def _vectorize_body(loop: S.For, lanes: int, base):
    ramp = E.Ramp(base, _op.const(1, loop.loop_var.dtype), lanes)
    v = _Vectorizer(loop.loop_var, ramp, lanes)
    body = v.visit(loop.body)
    if not _CheckAccesses(v.stores).check(body):
        raise _CannotVectorize("loop-carried dependence through a written buffer")
    if not _narrow_vectors_are_copies(body):
        raise _CannotVectorize("vector arithmetic of a narrow type (bfloat16, float8, int4...)")
    return body


def _narrow_vectors_are_copies(body) -> bool:
    """Whether every vector of a narrow type in ``body`` is a load stored as it is (a
    copy).  Those types compute one lane at a time in the backends (a storage float
    as float32): their vectors move bits (a store of a load), nothing else."""
    from ..functor import post_order_visit

    copied, vectors = set(), []

    def visit(n):
        if isinstance(n, S.BufferStore) and isinstance(n.value, E.BufferLoad):
            copied.add(id(n.value))
        elif isinstance(n, E.PrimExpr) and _dt.lanes(n.dtype) > 1 and _dt.parse(n.dtype).is_narrow:
            vectors.append(id(n))

    post_order_visit(body, visit)
    return all(v in copied for v in vectors)


def _register_lanes(limit: int) -> int:
    """The widest power of two of at most ``limit`` (and :data:`MAX_LANES`) lanes."""
    lanes = 1
    while lanes * 2 <= min(limit, MAX_LANES):
        lanes *= 2
    return lanes


def _pow2_pieces(loop: S.For, extent: int, start: int) -> list:
    """``extent`` lanes from ``start`` as vectors of decreasing powers of two (6: 4 then
    2; 7: 4, 2 and a scalar iteration), each a whole vector."""
    from ..functor import substitute

    parts = []
    for width in (1 << b for b in range(extent.bit_length() - 1, -1, -1)):
        if extent & width:
            base = _add(loop.min, _op.const(start, loop.min.dtype))
            if width == 1:
                parts.append(substitute(loop.body, {loop.loop_var: base}))
            else:
                parts.append(_vectorize_body(loop, width, base))
            start += width
    return parts


def _element_bytes(stmt) -> int:
    """The widest element accessed in ``stmt`` (bytes), at least 1."""
    from ..functor import post_order_visit

    widest = [1]

    def visit(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)):
            widest[0] = max(widest[0], _dt.parse(n.buffer.dtype).element_of().bytes)

    post_order_visit(stmt, visit)
    return widest[0]


def vectorize_loop(loop: S.For, max_vector_bytes: int = 64) -> S.Stmt:
    """Vectorize one ``VECTORIZED`` loop, or return it unchanged if it cannot be.

    ``max_vector_bytes`` bounds the width of one vector (the target's register).
    """
    if not isinstance(loop.extent, E.IntImm) or loop.extent.value < 1:
        return loop
    extent = loop.extent.value
    limit = max(1, max_vector_bytes // _element_bytes(loop.body))
    try:
        if extent == 1:
            from ..functor import substitute
            return substitute(loop.body, {loop.loop_var: loop.min})
        lanes = _register_lanes(limit)
        if extent <= lanes:
            if extent & (extent - 1) == 0:
                return _vectorize_body(loop, extent, loop.min)
            # 6 lanes are no machine's vector: 4 + 2 (7: 4 + 2 + 1), each a whole vector
            return S.seq(*_pow2_pieces(loop, extent, 0))
        if lanes < 2:
            return loop
        # registers' worth of lanes, then the rest as narrower whole vectors (28 floats
        # in 8-lane registers: 8, 8, 8 and 4)
        chunks, rest = divmod(extent, lanes)
        tail = _pow2_pieces(loop, rest, chunks * lanes) if rest else []
        if chunks <= MAX_UNROLLED_CHUNKS:
            return S.seq(*[_vectorize_body(loop, lanes, _add(loop.min, _op.const(c * lanes, loop.min.dtype)))
                           for c in range(chunks)], *tail)
        outer = E.Var(loop.loop_var.name + ".outer", loop.loop_var.dtype)
        base = _add(loop.min, _mul(outer, _op.const(lanes, outer.dtype)))
        body = _vectorize_body(loop, lanes, base)
        return S.seq(S.For(outer, _op.const(0, outer.dtype), _op.const(chunks, outer.dtype),
                           S.ForKind.SERIAL, body), *tail)
    except _CannotVectorize:
        return loop


class _VectorizeLoops(IRMutator):
    def __init__(self, max_vector_bytes):
        self.max_vector_bytes = max_vector_bytes

    def visit_For(self, s):
        new = self.generic_visit(s)
        if new.kind is S.ForKind.VECTORIZED:
            return vectorize_loop(new, self.max_vector_bytes)
        return new


def vectorize_stmt(stmt: S.Stmt, max_vector_bytes: int = 64) -> S.Stmt:
    """Vectorize the ``VECTORIZED`` loops below ``stmt`` (see the module docs)."""
    return _VectorizeLoops(max_vector_bytes).visit(stmt)


def vectorize(func: S.PrimFunc, max_vector_bytes: int = 64) -> S.PrimFunc:
    """Turn ``VECTORIZED`` loops of ``func`` into Ramp/Broadcast vector code.

    Parameters
    ----------
    func : PrimFunc
        The function (usually flattened and simplified).
    max_vector_bytes : int
        The widest vector to build, in bytes (64 for AVX-512, 32 for AVX2, 16 for SSE/NEON).

    Returns
    -------
    PrimFunc
        Loops that cannot be vectorized safely stay ``VECTORIZED`` loops.
    """
    return func.with_body(vectorize_stmt(func.body, max_vector_bytes))

