"""The inject_double_buffer pass (tir/transform/inject_double_buffer.py): a stage in a
``double_buffer_scope`` gets two slots, a prologue fetch and a prefetch of the next
iteration (before/expected IR, interpreter equivalence), and an error for each place
where double buffering cannot apply."""
import importlib

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


def scope(b, body, mode=1):
    """``b`` allocated around ``body`` and marked double-buffered (as lowering does;
    ``mode`` 2: ``register_prefetch``)."""
    return AttrStmt(b.data, "double_buffer_scope", c(mode), Allocate(b, body))


# ----------------------------------------------------------------------------
# the pass on a small hand-built loop
# ----------------------------------------------------------------------------

def _tiled_copy(n=None, mode=1, fetch=None):
    """``for ko { S[i] = A[ko*4 + i]; B[ko*4 + j] = S[j] * 2 }`` with S double-buffered
    (``mode`` 2: through registers); ``n`` tiles (a Var when None); ``fetch(S, A, ko)``
    another fetch."""
    A, B, S = buf1d("A", 64), buf1d("B", 64), buf1d("S", 4, scope="local")
    ext = var("n") if n is None else c(n)
    ko, i, j = var("ko"), var("i"), var("j")
    fetch = loop(i, 4, BufferStore(S, A[ko * 4 + i], (i,))) if fetch is None else fetch(S, A, ko)
    rest = loop(j, 4, BufferStore(B, S[j] * 2.0, (ko * 4 + j,)))
    body = For(ko, c(0), ext, ForKind.SERIAL, scope(S, seq(fetch, rest), mode))
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
# register_prefetch: the prefetch split into loads at the top, stores at the end
# ----------------------------------------------------------------------------

def _run_both(f, g, n):
    a = RNG.standard_normal(64).astype("float32")
    out_f, out_g = np.zeros(64, "float32"), np.zeros(64, "float32")
    run_prim_func(f, a, out_f, *([n] if n is not None else []))
    run_prim_func(g, a, out_g, *([n] if n is not None else []))
    np.testing.assert_array_equal(out_f, out_g)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 16])
def test_register_prefetch_loads_first_and_stores_last(n):
    f, (A, B, S, ext) = _tiled_copy(mode=2)
    g = inject_double_buffer(f)
    verify_well_formed(g, require_flat=True)
    body = find_loop(g.body, "ko").body
    # the staging registers live for one iteration
    assert isinstance(body, Allocate) and body.buffer.scope == "local" and body.buffer.shape[0].value == 4
    loads, rest, stores = body.body.seq
    # no condition on either half: the last iteration loads and stores its own tile again
    assert isinstance(loads, For) and loads.kind is ForKind.UNROLLED
    assert isinstance(loads.body, BufferStore) and loads.body.buffer is body.buffer
    assert isinstance(rest, For) and rest.loop_var.name == "j"
    assert isinstance(stores, AttrStmt) and stores.attr_key == "double_buffer_write"
    assert stores.body.kind is ForKind.UNROLLED and stores.body.body.value.buffer is body.buffer
    _run_both(f, g, n)


def test_register_prefetch_of_a_fetch_that_is_no_perfect_nest_is_direct():
    def two_stores(S, A, ko):
        i = var("i")
        return loop(i, 2, seq(BufferStore(S, A[ko * 4 + i], (i,)), BufferStore(S, A[ko * 4 + i + 2], (i + 2,))))

    f, _ = _tiled_copy(mode=2, fetch=two_stores)
    g = inject_double_buffer(f)
    prefetch = find_loop(g.body, "ko").body.seq[0]
    assert isinstance(prefetch, IfThenElse) and prefetch.then_case.attr_key == "double_buffer_write"
    _run_both(f, g, 5)


def test_register_prefetch_of_a_large_fetch_is_direct():
    idb = importlib.import_module("tecc.tir.transform.inject_double_buffer")

    A, B = buf1d("A", 1024), buf1d("B", 1024)
    S = buf1d("S", idb.MAX_STAGED + 1, scope="local")
    ko, i, j = var("ko"), var("i"), var("j")
    size = idb.MAX_STAGED + 1
    fetch = loop(i, size, BufferStore(S, A[ko * size + i], (i,)))
    rest = loop(j, size, BufferStore(B, S[j], (ko * size + j,)))
    f = lowered_func("big", [A, B], loop(ko, 3, scope(S, seq(fetch, rest), mode=2)))
    g = inject_double_buffer(f)
    assert isinstance(find_loop(g.body, "ko").body.seq[0], IfThenElse)


def test_register_prefetch_keeps_thread_bound_loops_and_stages_the_rest():
    """A cooperative fetch: ``for r { threadIdx.x { vectorized v { S[...] = A[...] } } }``
    stages ``r x v`` elements a thread, whatever the thread count."""
    from irhelpers import thread_iv

    A, B = buf1d("A", 256), buf1d("B", 256)
    S = buf1d("S", 64, scope="shared")
    tx = thread_iv("threadIdx.x", 8)
    ko, r, v, j = var("ko"), var("r"), var("v"), var("j")
    idx = r * 32 + tx.var * 4 + v
    fetch = loop(r, 2, For(tx.var, c(0), c(8), ForKind.THREAD_BINDING,
                           loop(v, 4, BufferStore(S, A[ko * 64 + idx], (idx,)), kind=ForKind.VECTORIZED), tx))
    rest = loop(j, 64, BufferStore(B, S[j], (ko * 64 + j,)))
    f = lowered_func("coop", [A, B], loop(ko, 4, scope(S, seq(fetch, rest), mode=2)))
    g = inject_double_buffer(f)
    body = find_loop(g.body, "ko").body
    assert isinstance(body, Allocate) and body.buffer.shape[0].value == 2 * 4
    kinds = []
    tir.post_order_visit(body.body.seq[0], lambda x: kinds.append(x.kind) if isinstance(x, For) else None)
    assert sorted(k.name for k in kinds) == ["THREAD_BINDING", "UNROLLED", "VECTORIZED"]


def test_register_prefetch_through_te_builds_the_same_product():
    """``s[T].double_buffer(register_prefetch=True)`` on a CUDA GEMM: one barrier an
    iteration, no race (the emulator's checker), the product of numpy."""
    from tecc.topi.cuda import gemm

    s, args = gemm.sgemm(64, 64, 48, block=32, thread_tile=2, k_tile=8, double_buffer=True, a_kmajor=True,
                         register_prefetch=True)
    mod = tecc.build(s, args, "cuda -arch=sm_90")
    src = mod.imported_modules[0].get_source()
    assert src.count("__syncthreads()") == 2 and "prefetch" in src
    a, b = RNG.standard_normal((64, 48)).astype("float32"), RNG.standard_normal((48, 64)).astype("float32")
    out = np.zeros((64, 64), "float32")
    assert mod.check(a, b, out, max_blocks=2) == []
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_register_prefetch_takes_a_bool():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(tecc.errors.ScheduleError, match=r"double_buffer\(register_prefetch=...\) takes True or "
                                                         r"False, got 'yes'"):
        s[B].double_buffer(register_prefetch="yes")


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
