"""The vectorize pass (tir/transform/vectorize.py): vectorized loops become ramps and
broadcasts, long ones are cut to the register width, and what it cannot vectorize
is left as it was."""
import numpy as np
import pytest

from tecc import tir
from tecc.tir import SeqStmt, expr as E
from tecc.tir import stmt as S
from tecc.tir.analysis import verify_well_formed
from tecc.tir.stmt import BufferStore, For, ForKind, IfThenElse
from tecc.tir.transform import vectorize
from irhelpers import assert_same_results, buf, loop, lowered_func, run_interp, var

c = tir.const
RNG = np.random.default_rng(0)


def test_vectorize_elementwise():
    A, B = buf("A", (8,)), buf("B", (8,))
    i = var("i")
    f = lowered_func("f", [A, B], loop(i, 8, BufferStore(B, A[i] * 2.0 + 1.0, (i,)), ForKind.VECTORIZED))
    g = vectorize(f)
    r = E.Ramp(c(0), c(1), 8)
    want = BufferStore(B, E.Add(E.Mul(E.BufferLoad(A, (r,)), E.Broadcast(c(2.0), 8)), E.Broadcast(c(1.0), 8)), (r,))
    tir.assert_structural_equal(g.body, want)
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(8, dtype=np.float32), np.zeros(8, np.float32))


def test_vectorize_reduction_pattern():
    A, B, C = buf("A", (4, 6)), buf("B", (6, 8)), buf("C", (4, 8))
    i, k, j = var("i"), var("k"), var("j")
    upd = BufferStore(C, C[i, j] + A[i, k] * B[k, j], (i, j))
    f = lowered_func("f", [A, B, C], loop(i, 4, loop(k, 6, loop(j, 8, upd, ForKind.VECTORIZED))))
    g = vectorize(f)
    r = E.Ramp(c(0), c(1), 8)
    want_upd = BufferStore(C, E.Add(E.BufferLoad(C, (i, r)), E.Mul(E.Broadcast(A[i, k], 8), E.BufferLoad(B, (k, r)))),
                           (i, r))
    tir.assert_structural_equal(g.body, loop(i, 4, loop(k, 6, want_upd)))
    a, b = RNG.random((4, 6), dtype=np.float32), RNG.random((6, 8), dtype=np.float32)
    _, _, out = run_interp(g, a, b, np.zeros((4, 8), np.float32))
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


def test_vectorize_flat_index_ramp_and_min():
    A = buf("A", (64,))
    i, j = var("i"), var("j")
    f = lowered_func("f", [A], loop(i, 4, loop(j, 8, BufferStore(A, A[i * 16 + j + 4] + 1.0, (i * 16 + j + 4,)),
                                                ForKind.VECTORIZED, min=2)))
    g = vectorize(f)
    store = g.body.body
    assert isinstance(store, BufferStore) and isinstance(store.indices[0], E.Ramp)
    assert store.indices[0].lanes == 8
    assert_same_results(f, g, RNG.random(64, dtype=np.float32))


@pytest.mark.parametrize("case", ["inner_loop", "if", "dependence", "scalar_store", "gather", "if_then_else"])
def test_vectorize_leaves_what_it_cannot_handle(case):
    A, B = buf("A", (32,)), buf("B", (32,))
    i, k = var("i"), var("k")
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
    f = lowered_func("f", [A, B], loop(i, 8, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert g is f
    assert g.body.kind is ForKind.VECTORIZED


def test_vectorize_long_loop_is_chunked():
    A, B = buf("A", (128,)), buf("B", (128,))
    i = var("i")
    f = lowered_func("f", [A, B], loop(i, 128, BufferStore(B, A[i] + 1.0, (i,)), ForKind.VECTORIZED))
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


@pytest.mark.parametrize("extent,widths", [(28, [8, 8, 8, 4]), (21, [8, 8, 4, 1]), (6 + 17 * 8, None)])
def test_vectorize_long_loop_keeps_register_width_with_a_narrower_tail(extent, widths):
    # 28 float32 lanes in 32-byte registers: three 8-lane vectors and one of 4 (not
    # seven of 4); a loop of more chunks than are written out keeps its tail after it
    A, B = buf("A", (extent,)), buf("B", (extent,))
    i = var("i")
    f = lowered_func("f", [A, B], loop(i, extent, BufferStore(B, A[i] + 1.0, (i,)), ForKind.VECTORIZED))
    g = vectorize(f, max_vector_bytes=32)
    if widths is not None:
        assert [st.indices[0].lanes if st.indices[0].dtype != "int32" else 1 for st in g.body.seq] == widths
    else:
        main, *tail = g.body.seq
        assert isinstance(main, For) and main.extent.value == 17 and main.body.indices[0].lanes == 8
        assert [st.indices[0].lanes for st in tail] == [4, 2]
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(extent, dtype=np.float32), np.zeros(extent, np.float32))


def test_vectorize_let_and_cast():
    A, B = buf("A", (8,), "int32"), buf("B", (8,))
    i, t = var("i"), var("t")
    body = S.LetStmt(t, A[i] * 2, BufferStore(B, tir.cast("float32", t) + 0.5, (i,)))
    f = lowered_func("f", [A, B], loop(i, 8, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert isinstance(g.body, S.LetStmt) and g.body.var.dtype == "int32x8"
    verify_well_formed(g)
    assert_same_results(f, g, np.arange(8, dtype=np.int32), np.zeros(8, np.float32))


def test_vectorize_two_stores_at_disjoint_places_of_one_buffer():
    # b[i] = a[i]; b[i + 4] = a[i + 8]  -- the two lane ranges never meet
    A, B = buf("A", (16,)), buf("B", (8,))
    i = var("i")
    body = SeqStmt((BufferStore(B, A[i], (i,)), BufferStore(B, A[i + 8], (i + 4,))))
    f = lowered_func("f", [A, B], loop(i, 4, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert isinstance(g.body, SeqStmt) and all(st.indices[0].lanes == 4 for st in g.body.seq)
    assert_same_results(f, g, RNG.random(16, dtype=np.float32), np.zeros(8, np.float32))


def test_vectorize_refuses_overlapping_stores_of_one_buffer():
    # b[i] = a[i]; b[i + 2] = a[i + 8]  -- lane 2 of the first meets lane 0 of the second
    A, B = buf("A", (16,)), buf("B", (8,))
    i = var("i")
    body = SeqStmt((BufferStore(B, A[i], (i,)), BufferStore(B, A[i + 8], (i + 2,))))
    f = lowered_func("f", [A, B], loop(i, 4, body, ForKind.VECTORIZED))
    g = vectorize(f)
    assert g is f


def test_extent_that_is_not_a_power_of_two_becomes_power_of_two_vectors():
    A, B = buf("A", (7,)), buf("B", (7,))
    i = var("i")
    f = lowered_func("f", [A, B], loop(i, 7, BufferStore(B, A[i] * 2.0, (i,)), ForKind.VECTORIZED))
    g = vectorize(f)

    def store(base, lanes):
        if lanes == 1:
            return BufferStore(B, A[c(base)] * 2.0, (c(base),))
        r = E.Ramp(c(base), c(1), lanes)
        return BufferStore(B, E.Mul(E.BufferLoad(A, (r,)), E.Broadcast(c(2.0), lanes)), (r,))

    tir.assert_structural_equal(g.body, SeqStmt((store(0, 4), store(4, 2), store(6, 1))))
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(7, dtype=np.float32), np.zeros(7, np.float32))


def test_bfloat16_copies_vectorize_and_bfloat16_arithmetic_stays_a_loop():
    """The backends compute bfloat16 as float32 lane by lane: a bfloat16 vector may
    only be moved (a store of a load, printed as a copy of its bits); a loop that
    computes bfloat16 values, or casts to or from them, is left as it is."""
    A, B, F = buf("A", (8,), "bfloat16"), buf("B", (8,), "bfloat16"), buf("F", (8,))
    i = var("i")
    copy = lowered_func("f", [A, B], loop(i, 8, BufferStore(B, A[i], (i,)), ForKind.VECTORIZED))
    r = E.Ramp(c(0), c(1), 8)
    tir.assert_structural_equal(vectorize(copy).body, BufferStore(B, E.BufferLoad(A, (r,)), (r,)))
    for body in (BufferStore(B, A[i] + A[i], (i,)),                  # bfloat16 arithmetic
                 BufferStore(F, A[i].astype("float32"), (i,)),       # a bfloat16 load cast to float32
                 BufferStore(B, F[i].astype("bfloat16"), (i,)),      # float32 rounded to bfloat16
                 BufferStore(B, c(0.0, "bfloat16"), (i,))):          # a bfloat16 constant broadcast
        f = lowered_func("f", [A, B, F], loop(i, 8, body, ForKind.VECTORIZED))
        g = vectorize(f)
        assert g is f and g.body.kind is ForKind.VECTORIZED
