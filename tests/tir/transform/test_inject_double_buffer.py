"""The inject_double_buffer pass (tir/transform/inject_double_buffer.py): a stage in a
``double_buffer_scope`` gets two slots, a prologue fetch and a prefetch of the next
iteration (before/expected IR, interpreter equivalence), and an error for each place
where double buffering cannot apply."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import LoweringError
from tecc.tir import expr as E
from tecc.tir.analysis import run_prim_func, verify_well_formed
from tecc.tir.stmt import Allocate, AttrStmt, BufferStore, For, ForKind, IfThenElse, seq
from tecc.tir.transform.inject_double_buffer import inject_double_buffer
from irhelpers import buf1d, db_write, find_loop, loop, lowered_func, var

c = tir.const
RNG = np.random.default_rng(3)


def scope(b, body):
    """``b`` allocated around ``body`` and marked double-buffered (as lowering does)."""
    return AttrStmt(b.data, "double_buffer_scope", c(1), Allocate(b, body))


# ----------------------------------------------------------------------------
# the pass on a small hand-built loop
# ----------------------------------------------------------------------------

def _tiled_copy(n=None):
    """``for ko { S[i] = A[ko*4 + i]; B[ko*4 + j] = S[j] * 2 }`` with S double-buffered;
    ``n`` tiles (a Var when None)."""
    A, B, S = buf1d("A", 64), buf1d("B", 64), buf1d("S", 4, scope="local")
    ext = var("n") if n is None else c(n)
    ko, i, j = var("ko"), var("i"), var("j")
    fetch = loop(i, 4, BufferStore(S, A[ko * 4 + i], (i,)))
    rest = loop(j, 4, BufferStore(B, S[j] * 2.0, (ko * 4 + j,)))
    body = For(ko, c(0), ext, ForKind.SERIAL, scope(S, seq(fetch, rest)))
    args = [A, B] + ([ext] if n is None else [])
    return lowered_func("tiled_copy", args, body), (A, B, S, ext)


def test_pass_structure_symbolic_extent():
    f, (A, B, S, n) = _tiled_copy()
    g = inject_double_buffer(f)
    S2 = S.__class__(S.name, S.dtype, (c(8),), S.data, S.scope)
    ko, i0, i1, j = var("ko"), var("i"), var("i"), var("j")
    want = Allocate(S2, seq(
        IfThenElse(E.LT(c(0), n), loop(i0, 4, BufferStore(S2, A[i0], (i0,)))),    # prologue, slot 0
        For(ko, c(0), n, ForKind.SERIAL, seq(
            IfThenElse(E.LT(ko + 1, n), db_write(S, loop(
                i1, 4, BufferStore(S2, A[ko * 4 + i1 + 4], (tir.floormod(ko + 1, 2) * 4 + i1,))))),
            loop(j, 4, BufferStore(B, S2[j + tir.floormod(ko, 2) * 4] * 2.0, (ko * 4 + j,))),
        )),
    ))
    tir.assert_structural_equal(g.body, want)
    verify_well_formed(g, require_flat=True)


def test_pass_constant_extent_has_no_prologue_guard_and_nothing_to_do_returns_input():
    f, _ = _tiled_copy(n=5)
    g = inject_double_buffer(f)
    assert isinstance(g.body, Allocate) and g.body.buffer.shape[0].value == 8
    first = g.body.body.seq[0]
    assert isinstance(first, For)  # the prologue fetch, unguarded
    h = inject_double_buffer(g)
    assert h is g   # no double_buffer_scope left


@pytest.mark.parametrize("n", [0, 1, 2, 5, 16])
def test_pass_matches_interpreter(n):
    f, _ = _tiled_copy()
    g = inject_double_buffer(f)
    a = RNG.standard_normal(64).astype("float32")
    out_f, out_g = np.zeros(64, "float32"), np.zeros(64, "float32")
    run_prim_func(f, a, out_f, n)
    run_prim_func(g, a, out_g, n)
    np.testing.assert_array_equal(out_f, out_g)
    np.testing.assert_array_equal(out_g[:4 * n], a[:4 * n] * 2)


def test_pass_two_nested_stages_share_prologue_and_prefetch():
    A, B, C = buf1d("A", 64), buf1d("B", 64), buf1d("C", 16)
    SA, SB = buf1d("SA", 4, scope="local"), buf1d("SB", 4, scope="local")
    ko, i, j, k = var("ko"), var("i"), var("j"), var("k")
    fa = loop(i, 4, BufferStore(SA, A[ko * 4 + i], (i,)))
    fb = loop(j, 4, BufferStore(SB, B[ko * 4 + j], (j,)))
    use = loop(k, 4, BufferStore(C, C[ko] + SA[k] * SB[3 - k], (ko,)))
    body = loop(ko, 16, scope(SA, seq(fa, scope(SB, seq(fb, use)))))
    f = lowered_func("dot", [A, B, C], body)
    g = inject_double_buffer(f)
    # two doubled allocations outside the loop, prologue of both, one prefetch `if`
    assert isinstance(g.body, Allocate) and isinstance(g.body.body, Allocate)
    assert [b.buffer.shape[0].value for b in (g.body, g.body.body)] == [8, 8]
    pro_a, pro_b, the_loop = g.body.body.body.seq
    assert isinstance(the_loop, For)
    prefetch, rest = the_loop.body.seq
    assert isinstance(prefetch, IfThenElse)
    assert [s.node for s in prefetch.then_case.seq] == [SA.data, SB.data]
    verify_well_formed(g, require_flat=True)
    a, b = RNG.standard_normal(64).astype("float32"), RNG.standard_normal(64).astype("float32")
    out_f, out_g = np.zeros(16, "float32"), np.zeros(16, "float32")
    run_prim_func(f, a, b, out_f)
    run_prim_func(g, a, b, out_g)
    np.testing.assert_allclose(out_g, out_f, rtol=1e-6)


def _after_another_stage(fetch_reads_x):
    """``for ko { X[0] = ko; <S double-buffered: S[i] = A[ko*4 + i] (+ X[0])>; B[..] = S[j] + X[0] }``."""
    A, B = buf1d("A", 64), buf1d("B", 64)
    S, X = buf1d("S", 4, scope="local"), buf1d("X", 1, scope="local")
    ko, i, j = var("ko"), var("i"), var("j")
    value = A[ko * 4 + i] + X[0] if fetch_reads_x else A[ko * 4 + i]
    fetch = loop(i, 4, BufferStore(S, value, (i,)))
    rest = loop(j, 4, BufferStore(B, S[j] + X[0], (ko * 4 + j,)))
    body = Allocate(X, seq(BufferStore(X, tir.Cast("float32", ko), (c(0),)), scope(S, seq(fetch, rest))))
    return lowered_func("f", [A, B], loop(ko, 16, body)), S


def test_pass_scope_after_another_stage_of_the_loop():
    f, S = _after_another_stage(fetch_reads_x=False)
    g = inject_double_buffer(f)
    the_loop = find_loop(g.body, "ko")
    x_alloc = the_loop.body
    assert isinstance(x_alloc, Allocate) and x_alloc.buffer.name == "X"
    x_store, prefetch, rest = x_alloc.body.seq       # the prefetch stays where the fetch was
    assert isinstance(prefetch, IfThenElse) and prefetch.then_case.attr_key == "double_buffer_write"
    verify_well_formed(g, require_flat=True)
    a = RNG.standard_normal(64).astype("float32")
    out_f, out_g = np.zeros(64, "float32"), np.zeros(64, "float32")
    run_prim_func(f, a, out_f)
    run_prim_func(g, a, out_g)
    np.testing.assert_array_equal(out_f, out_g)


# ----------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------

def test_error_scope_under_a_vectorized_loop():
    f, (A, B, S, n) = _tiled_copy(n=4)
    bad = f.with_body(f.body.__class__(f.body.loop_var, f.body.min, f.body.extent, ForKind.VECTORIZED, f.body.body))
    with pytest.raises(LoweringError, match=r"'S'.*double-buffered.*'ko'.*vectorized.*serial loop"):
        inject_double_buffer(bad)


def test_error_fetch_reads_a_stage_of_the_same_iteration():
    f, S = _after_another_stage(fetch_reads_x=True)
    with pytest.raises(LoweringError, match=r"'S' uses 'X', which loop 'ko' computes in the same iteration"):
        inject_double_buffer(f)


def test_error_scope_under_a_condition():
    f, (A, B, S, n) = _tiled_copy(n=4)
    guarded = IfThenElse(E.LT(f.body.loop_var, c(3)), f.body.body)
    bad = f.with_body(f.body.__class__(f.body.loop_var, f.body.min, f.body.extent, ForKind.SERIAL, guarded))
    with pytest.raises(LoweringError, match=r"'S' is double-buffered.*under a condition.*'ko'.*serial loop"):
        inject_double_buffer(bad)


def test_error_double_buffer_at_a_thread_bound_loop():
    n = 64
    A = te.placeholder((n,), name="A")
    AA = te.compute((n,), lambda i: A[i] * 2, name="AA")
    B = te.compute((n,), lambda i: AA[i] + 1, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[B], tx)
    s[AA].double_buffer()
    with pytest.raises(LoweringError, match=r"'AA'.*double-buffered.*threadIdx.x.*serial loop"):
        tecc.lower(s, [A, B])
