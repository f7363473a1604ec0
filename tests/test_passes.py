"""Per-pass tests: before/expected IR with structural equality, and differential runs
of the IR before and after each pass with the reference interpreter."""
import numpy as np
import pytest

from tecc import tir
from tecc.tir import SeqStmt, expr as E
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, Buffer, BufferStore, Evaluate, For, ForKind, IfThenElse, PrimFunc, seq
from tecc.tir.analysis import run_prim_func, verify_well_formed
from tecc.tir.transform import (
    flatten, loop_partition, remove_no_op, unroll, vectorize,
)
from tecc.tir.analysis.interp import InterpError

c = tir.const


def v(name, dtype="int32"):
    return tir.Var(name, dtype)


def loop(var, extent, body, kind=ForKind.SERIAL, mn=0, annotations=()):
    return For(var, tir.convert(mn), tir.convert(extent), kind, body, None, tuple(annotations))


def buf(name, shape, dtype="float32", scope="global", strides=()):
    b = tir.decl_buffer(shape, dtype, name, scope)
    if strides:
        b = Buffer(b.name, b.dtype, b.shape, b.data, scope, tuple(tir.convert(s) for s in strides))
    return b


def mkfunc(buffers, body, scalars=()):
    params = tuple(b.data for b in buffers) + tuple(scalars)
    return PrimFunc(params, body, {b.data: b for b in buffers}, {"global_symbol": "f"})


def flat_of(b, size):
    return Buffer(b.name, b.dtype, (tir.convert(size),), b.data, b.scope)


def nop():
    return Evaluate(c(0))


def run(func, *arrays):
    arrays = [np.array(a, copy=True) for a in arrays]
    run_prim_func(func, *arrays)
    return arrays


def assert_same_results(f, g, *arrays):
    want = run(f, *arrays)
    got = run(g, *arrays)
    for w, o in zip(want, got):
        np.testing.assert_allclose(o, w, rtol=1e-6)


RNG = np.random.default_rng(0)


# ----------------------------------------------------------------------------
# interpreter
# ----------------------------------------------------------------------------

def _matmul(n=8):
    A, B, C = buf("A", (n, n)), buf("B", (n, n)), buf("C", (n, n))
    i, j, k = v("i"), v("j"), v("k")
    body = loop(i, n, loop(j, n, seq(
        BufferStore(C, c(0.0), (i, j)),
        loop(k, n, BufferStore(C, C[i, j] + A[i, k] * B[k, j], (i, j))))))
    return mkfunc([A, B, C], body)


def test_interpreter_matches_numpy():
    f = _matmul()
    a, b = RNG.random((8, 8), dtype=np.float32), RNG.random((8, 8), dtype=np.float32)
    _, _, out = run(f, a, b, np.zeros((8, 8), np.float32))
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


def test_interpreter_reports_out_of_bounds():
    A = buf("A", (4,))
    i = v("i")
    f = mkfunc([A], loop(i, 5, BufferStore(A, c(1.0), (i,))))
    with pytest.raises(InterpError, match="out-of-bounds"):
        run(f, np.zeros(4, np.float32))


def test_interpreter_symbolic_shape_and_vectors():
    n = v("n")
    A, B = buf("A", (n,)), buf("B", (n,))
    i = v("i")
    f = mkfunc([A, B], loop(i, n // 4, BufferStore(
        B, E.BufferLoad(A, (E.Ramp(i * 4, c(1), 4),)) * E.Broadcast(c(3.0), 4), (E.Ramp(i * 4, c(1), 4),))), [n])
    a = RNG.random(12, dtype=np.float32)
    _, out = run(f, a, np.zeros(12, np.float32))
    np.testing.assert_allclose(out, a * 3)


# ----------------------------------------------------------------------------
# flatten
# ----------------------------------------------------------------------------

def test_flatten_row_major():
    A, B = buf("A", (16, 8)), buf("B", (16, 8))
    i, j = v("i"), v("j")
    f = mkfunc([A, B], loop(i, 16, loop(j, 8, BufferStore(B, A[i, j] * 2.0, (i, j)))))
    g = flatten(f)
    Af, Bf = flat_of(A, 128), flat_of(B, 128)
    want = loop(i, 16, loop(j, 8, BufferStore(Bf, E.BufferLoad(Af, (i * 8 + j,)) * 2.0, (i * 8 + j,))))
    tir.assert_structural_equal(g, PrimFunc(f.params, want, f.buffer_map, f.attrs))
    # the argument buffers keep their shapes, the body's buffers share their data vars
    assert g.buffer_map[A.data] is A
    assert g.body.body.body.buffer.data is B.data
    verify_well_formed(g, require_flat=True)


def test_flatten_symbolic_shape_and_strided_allocate():
    n, m = v("n"), v("m")
    A, B = buf("A", (n, m)), buf("B", (n, m))
    T = buf("T", (4, 5), scope="local", strides=(8, 1))
    i, j = v("i"), v("j")
    body = loop(i, n, Allocate(T, seq(
        loop(j, 4, BufferStore(T, A[i, j], (j, c(1)))),
        loop(j, 4, BufferStore(B, T[j, c(1)], (i, j))))))
    f = mkfunc([A, B], body, [n, m])
    g = flatten(f)
    Af, Bf, Tf = flat_of(A, n * m), flat_of(B, n * m), flat_of(T, 32)
    want = loop(i, n, Allocate(Tf, seq(
        loop(j, 4, BufferStore(Tf, E.BufferLoad(Af, (i * m + j,)), (j * 8 + 1,))),
        loop(j, 4, BufferStore(Bf, E.BufferLoad(Tf, (j * 8 + 1,)), (i * m + j,))))))
    tir.assert_structural_equal(g.body, want)
    verify_well_formed(g, require_flat=True)
    a = RNG.random((3, 4), dtype=np.float32)
    assert_same_results(f, g, a, np.zeros((3, 4), np.float32))


def test_flatten_leaves_flat_function_unchanged():
    A = buf("A", (8,))
    i = v("i")
    f = mkfunc([A], loop(i, 8, BufferStore(A, c(1.0), (i,))))
    assert flatten(f) is f


# ----------------------------------------------------------------------------
# remove_no_op
# ----------------------------------------------------------------------------

def test_remove_no_op():
    A = buf("A", (8,))
    i, j = v("i"), v("j")
    store = BufferStore(A, c(1.0), (i,))
    body = S.SeqStmt((
        loop(j, 4, nop()),                                        # empty loop
        IfThenElse(c(True), store, BufferStore(A, c(2.0), (c(0),))),  # constant condition
        IfThenElse(i < 3, nop()),                                 # empty if
        loop(j, 0, BufferStore(A, c(3.0), (j,))),                 # zero extent
        Allocate(buf("T", (4,)), nop()),                          # unused allocation
    ))
    f = mkfunc([A], loop(i, 8, body))
    tir.assert_structural_equal(remove_no_op(f).body, loop(i, 8, store))
    g = mkfunc([A], loop(i, 8, store))
    assert remove_no_op(g) is g


# ----------------------------------------------------------------------------
# unroll
# ----------------------------------------------------------------------------

def test_unroll_small_loop():
    A = buf("A", (4,), "int32")
    i = v("i")
    f = mkfunc([A], loop(i, 4, BufferStore(A, i * 3, (i,)), ForKind.UNROLLED))
    g = unroll(f, 16)
    want = seq(*[BufferStore(A, E.Mul(c(k), c(3)), (c(k),)) for k in range(4)])
    tir.assert_structural_equal(g.body, want)
    assert_same_results(f, g, np.zeros(4, np.int32))


def test_unroll_nested_and_fresh_inner_vars():
    A = buf("A", (4, 8), "int32")
    i, j, k = v("i"), v("j"), v("k")
    inner = loop(k, 8, BufferStore(A, i * 10 + j + k, (i * 2 + j, k)))  # serial: stays a loop
    f = mkfunc([A], loop(i, 2, loop(j, 2, inner, ForKind.UNROLLED), ForKind.UNROLLED))
    g = unroll(f, 16)
    assert isinstance(g.body, S.SeqStmt) and len(g.body.seq) == 4
    loop_vars = [s.loop_var for s in g.body.seq]
    assert len(set(loop_vars)) == 4  # each copy binds its own variable
    verify_well_formed(g)
    assert_same_results(f, g, np.zeros((4, 8), np.int32))


def test_unroll_large_or_symbolic_keeps_pragma():
    A = buf("A", (64,), "int32")
    n, i = v("n"), v("i")
    body = BufferStore(A, i, (i,))
    f = mkfunc([A], loop(i, 32, body, ForKind.UNROLLED))
    g = unroll(f, 16)
    tir.assert_structural_equal(g.body, loop(i, 32, body, ForKind.UNROLLED, annotations=[("pragma_unroll", 32)]))
    assert unroll(g, 16) is g  # idempotent
    h = mkfunc([A], loop(i, n, body, ForKind.UNROLLED), [n])
    assert unroll(h, 16).body.annotations == (("pragma_unroll", n),)
    assert unroll(f, 32).body is not None and isinstance(unroll(f, 32).body, S.SeqStmt)


def test_auto_unroll_max_step():
    A = buf("A", (4, 4), "int32")
    i, j = v("i"), v("j")
    f = mkfunc([A], loop(i, 4, loop(j, 2, BufferStore(A, i + j, (i, j))),
                         annotations=[("pragma_auto_unroll_max_step", 8)]))
    g = unroll(f, 16)
    assert isinstance(g.body, S.SeqStmt) and len(g.body.seq) == 8
    assert not any(isinstance(s, For) for s in g.body.seq)
    assert_same_results(f, g, np.zeros((4, 4), np.int32))
    small = mkfunc([A], loop(i, 4, loop(j, 2, BufferStore(A, i + j, (i, j))),
                             annotations=[("pragma_auto_unroll_max_step", 4)]))
    h = unroll(small, 16)
    assert isinstance(h.body, For) and h.body.annotations == ()  # outer kept, inner unrolled
    assert isinstance(h.body.body, S.SeqStmt)


# ----------------------------------------------------------------------------
# vectorize
# ----------------------------------------------------------------------------

def test_vectorize_elementwise():
    A, B = buf("A", (8,)), buf("B", (8,))
    i = v("i")
    f = mkfunc([A, B], loop(i, 8, BufferStore(B, A[i] * 2.0 + 1.0, (i,)), ForKind.VECTORIZED))
    g = vectorize(f)
    r = E.Ramp(c(0), c(1), 8)
    want = BufferStore(B, E.Add(E.Mul(E.BufferLoad(A, (r,)), E.Broadcast(c(2.0), 8)), E.Broadcast(c(1.0), 8)), (r,))
    tir.assert_structural_equal(g.body, want)
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(8, dtype=np.float32), np.zeros(8, np.float32))


def test_vectorize_reduction_pattern():
    A, B, C = buf("A", (4, 6)), buf("B", (6, 8)), buf("C", (4, 8))
    i, k, j = v("i"), v("k"), v("j")
    upd = BufferStore(C, C[i, j] + A[i, k] * B[k, j], (i, j))
    f = mkfunc([A, B, C], loop(i, 4, loop(k, 6, loop(j, 8, upd, ForKind.VECTORIZED))))
    g = vectorize(f)
    r = E.Ramp(c(0), c(1), 8)
    want_upd = BufferStore(C, E.Add(E.BufferLoad(C, (i, r)), E.Mul(E.Broadcast(A[i, k], 8), E.BufferLoad(B, (k, r)))), (i, r))
    tir.assert_structural_equal(g.body, loop(i, 4, loop(k, 6, want_upd)))
    a, b = RNG.random((4, 6), dtype=np.float32), RNG.random((6, 8), dtype=np.float32)
    _, _, out = run(g, a, b, np.zeros((4, 8), np.float32))
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


def test_vectorize_flat_index_ramp_and_min():
    A = buf("A", (64,))
    i, j = v("i"), v("j")
    f = mkfunc([A], loop(i, 4, loop(j, 8, BufferStore(A, A[i * 16 + j + 4] + 1.0, (i * 16 + j + 4,)),
                                    ForKind.VECTORIZED, mn=2)))
    g = vectorize(f)
    store = g.body.body
    assert isinstance(store, BufferStore) and isinstance(store.indices[0], E.Ramp)
    assert store.indices[0].lanes == 8
    assert_same_results(f, g, RNG.random(64, dtype=np.float32))


@pytest.mark.parametrize("case", ["inner_loop", "if", "dependence", "scalar_store", "gather", "if_then_else"])
def test_vectorize_leaves_what_it_cannot_handle(case):
    A, B = buf("A", (32,)), buf("B", (32,))
    i, k = v("i"), v("k")
    if case == "inner_loop":
        body = loop(k, 2, BufferStore(B, A[i], (i,)))
    elif case == "if":
        body = IfThenElse(i < 3, BufferStore(B, A[i], (i,)))
    elif case == "dependence":
        body = BufferStore(A, A[i] * 2.0, (i + 1,))
    elif case == "scalar_store":
        body = BufferStore(B, B[c(0)] + A[i], (c(0),))
    elif case == "gather":
        body = BufferStore(B, A[i // 2], (i,))
    else:
        body = BufferStore(B, tir.if_then_else(i < 4, A[i], c(0.0)), (i,))
    f = mkfunc([A, B], loop(i, 8, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert g is f
    assert g.body.kind is ForKind.VECTORIZED


def test_vectorize_long_loop_is_chunked():
    A, B = buf("A", (128,)), buf("B", (128,))
    i = v("i")
    f = mkfunc([A, B], loop(i, 128, BufferStore(B, A[i] + 1.0, (i,)), ForKind.VECTORIZED))
    # 64-byte registers hold 16 float32 lanes: 8 chunks, written out in sequence
    g = vectorize(f, max_vector_bytes=64)
    assert isinstance(g.body, SeqStmt) and len(g.body.seq) == 8
    assert all(st.indices[0].lanes == 16 for st in g.body.seq)
    assert g.body.seq[1].indices[0].base.value == 16
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(128, dtype=np.float32), np.zeros(128, np.float32))
    # 16-byte registers: 32 chunks of 4 lanes are too many to write out, so a loop
    h = vectorize(f, max_vector_bytes=16)
    assert isinstance(h.body, For) and h.body.kind is ForKind.SERIAL and h.body.extent.value == 32
    assert h.body.body.indices[0].lanes == 4
    assert_same_results(f, h, RNG.random(128, dtype=np.float32), np.zeros(128, np.float32))


def test_vectorize_let_and_cast():
    A, B = buf("A", (8,), "int32"), buf("B", (8,))
    i, t = v("i"), v("t")
    body = S.LetStmt(t, A[i] * 2, BufferStore(B, tir.cast("float32", t) + 0.5, (i,)))
    f = mkfunc([A, B], loop(i, 8, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert isinstance(g.body, S.LetStmt) and g.body.var.dtype == "int32x8"
    verify_well_formed(g)
    assert_same_results(f, g, np.arange(8, dtype=np.int32), np.zeros(8, np.float32))


# ----------------------------------------------------------------------------
# loop_partition
# ----------------------------------------------------------------------------

def _split_guarded(N, f=4, symbolic=False):
    n = tir.SizeVar("n") if symbolic else None
    size = n if symbolic else N
    A, B = buf("A", (size,)), buf("B", (size,))
    io, ii = v("io"), v("ii")
    idx = io * f + ii
    guarded = IfThenElse(tir.likely(idx < size), BufferStore(B, A[idx] + 1.0, (idx,)))
    extent = (size + (f - 1)) // f
    return mkfunc([A, B], loop(io, extent, loop(ii, f, guarded)), [n] if symbolic else ()), (A, B, io, ii)


def test_loop_partition_constant_split():
    f, (A, B, io, ii) = _split_guarded(10)
    g = loop_partition(f)
    ii2 = v("ii")
    tail_idx = E.Add(E.Mul(c(2), c(4)), ii2)
    want = seq(
        loop(io, 2, loop(ii, 4, BufferStore(B, A[io * 4 + ii] + 1.0, (io * 4 + ii,)))),
        loop(ii2, 2, BufferStore(B, E.BufferLoad(A, (tail_idx,)) + 1.0, (tail_idx,))),
    )
    tir.assert_structural_equal(g.body, want)
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(10, dtype=np.float32), np.zeros(10, np.float32))


@pytest.mark.parametrize("N", [1, 3, 4, 7, 8, 13])
def test_loop_partition_symbolic_split_is_exact(N):
    f, _ = _split_guarded(None, f=4, symbolic=True)
    g = loop_partition(f)
    assert g is not f
    verify_well_formed(g)
    # the first piece is the main loop, free of the guard
    main = g.body.seq[0] if isinstance(g.body, S.SeqStmt) else g.body
    found = []
    tir.post_order_visit(main, lambda x: found.append(x) if isinstance(x, IfThenElse) else None)
    assert not found
    assert_same_results(f, g, RNG.random(N, dtype=np.float32), np.zeros(N, np.float32))


def test_loop_partition_lower_and_upper_guard():
    A, B = buf("A", (12,)), buf("B", (10,))
    x = v("x")
    cond = tir.all(x >= 2, x < 8)
    f = mkfunc([A, B], loop(x, 10, IfThenElse(tir.likely(cond), BufferStore(B, A[x + 2], (x,)),
                                              BufferStore(B, c(0.0), (x,)))))
    g = loop_partition(f)
    assert isinstance(g.body, S.SeqStmt) and len(g.body.seq) == 3
    head, main, tail = g.body.seq
    assert isinstance(main.body, BufferStore) and (main.min.value, main.extent.value) == (2, 6)
    assert isinstance(head.body, BufferStore) and isinstance(tail.body, BufferStore)  # else branches
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(12, dtype=np.float32), np.ones(10, np.float32))


def test_loop_partition_leaves_nonlinear_guard():
    A = buf("A", (16,))
    x = v("x")
    f = mkfunc([A], loop(x, 16, IfThenElse(tir.likely(x * x < 10), BufferStore(A, c(1.0), (x,)))))
    assert loop_partition(f) is f


def test_loop_partition_then_vectorize():
    f, _ = _split_guarded(30, f=8)
    io = f.body.loop_var
    g0 = f.with_body(loop(io, f.body.extent, replace_kind(f.body.body, ForKind.VECTORIZED)))
    g = vectorize(loop_partition(g0))
    main = g.body.seq[0]
    assert isinstance(main.body, BufferStore) and main.body.indices[0].lanes == 8
    assert_same_results(g0, g, RNG.random(30, dtype=np.float32), np.zeros(30, np.float32))


def replace_kind(for_stmt, kind):
    from dataclasses import replace
    return replace(for_stmt, kind=kind)


# ----------------------------------------------------------------------------
# verify
# ----------------------------------------------------------------------------

def test_verify_accepts_lowered_function():
    verify_well_formed(_matmul())


def test_verify_undefined_variable():
    A = buf("A", (8,))
    i, j = v("i"), v("j")
    f = mkfunc([A], loop(i, 8, BufferStore(A, c(1.0), (j,))))
    with pytest.raises(AssertionError, match="'j' is used but not defined") as err:
        verify_well_formed(f)
    assert "A[j] = 1f" in str(err.value)  # the IR around the bad node


def test_verify_double_binding_and_dtype_and_flatness():
    A = buf("A", (8, 8))
    i = v("i")
    f = mkfunc([A], loop(i, 8, loop(i, 8, BufferStore(A, c(1.0), (i, i)))))
    with pytest.raises(AssertionError, match="bound again"):
        verify_well_formed(f)
    j = v("j")
    g = mkfunc([A], loop(i, 8, loop(j, 8, BufferStore(A, c(1), (i, j)))))
    with pytest.raises(AssertionError, match="dtype int32"):
        verify_well_formed(g)
    h = mkfunc([A], loop(i, 8, loop(j, 8, BufferStore(A, c(1.0), (i, j)))))
    verify_well_formed(h)
    with pytest.raises(AssertionError, match="dimensions after flattening"):
        verify_well_formed(h, require_flat=True)
    verify_well_formed(flatten(h), require_flat=True)
    bad_ext = mkfunc([A], loop(i, c(8.0), BufferStore(A, c(1.0), (i, i))))
    with pytest.raises(AssertionError, match="not a scalar integer"):
        verify_well_formed(bad_ext)


def test_vectorize_two_stores_at_disjoint_places_of_one_buffer():
    # b[i] = a[i]; b[i + 4] = a[i + 8]  -- the two lane ranges never meet
    A, B = buf("A", (16,)), buf("B", (8,))
    i = v("i")
    body = SeqStmt((BufferStore(B, A[i], (i,)), BufferStore(B, A[i + 8], (i + 4,))))
    f = mkfunc([A, B], loop(i, 4, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert isinstance(g.body, SeqStmt) and all(st.indices[0].lanes == 4 for st in g.body.seq)
    assert_same_results(f, g, RNG.random(16, dtype=np.float32), np.zeros(8, np.float32))


def test_vectorize_refuses_overlapping_stores_of_one_buffer():
    # b[i] = a[i]; b[i + 2] = a[i + 8]  -- lane 2 of the first meets lane 0 of the second
    A, B = buf("A", (16,)), buf("B", (8,))
    i = v("i")
    body = SeqStmt((BufferStore(B, A[i], (i,)), BufferStore(B, A[i + 8], (i + 2,))))
    f = mkfunc([A, B], loop(i, 4, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert g is f
