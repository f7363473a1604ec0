"""Double buffering: the inject_double_buffer pass (before/expected IR, interpreter
equivalence, errors), the barrier rule for double-buffer writes in thread_sync, and
the classic GPU GEMM schedules with ``double_buffer()`` built for sm_80/sm_90 and run
with CUDA semantics on the CPU (race checker included)."""
import warnings

import numpy as np
import pytest

import tecc
from tecc import te, tir
from irhelpers import cuda_module
from tecc.topi import cuda as K
from tecc.errors import LoweringError
from tecc.tir import expr as E
from tecc.tir.stmt import Allocate, AttrStmt, BufferStore, For, ForKind, IfThenElse, PrimFunc, seq
from tecc.tir.analysis import run_prim_func, verify_well_formed
from tecc.tir.transform.inject_double_buffer import inject_double_buffer
from tecc.tir.transform.thread_sync import insert_thread_sync, is_storage_sync, storage_sync

c = tir.const
RNG = np.random.default_rng(3)
SYNC = storage_sync()


def v(name, dtype="int32"):
    return tir.Var(name, dtype)


def loop(var, extent, body, kind=ForKind.SERIAL):
    return For(var, c(0), tir.convert(extent), kind, body)


def buf(name, size, dtype="float32", scope="global"):
    return tir.decl_buffer((size,), dtype, name, scope)


def scope(b, body):
    return AttrStmt(b.data, "double_buffer_scope", c(1), Allocate(b, body))


def db_write(b, body):
    return AttrStmt(b.data, "double_buffer_write", c(1), body)


def count_syncs(stmt):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if is_storage_sync(n) else None)
    return len(found)


def find_loop(stmt, name):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, For) and n.loop_var.name == name else None)
    assert len(found) == 1, f"{len(found)} loops named {name}"
    return found[0]


# ----------------------------------------------------------------------------
# the pass on a small hand-built loop
# ----------------------------------------------------------------------------

def _tiled_copy(n=None):
    """``for ko { S[i] = A[ko*4 + i]; B[ko*4 + j] = S[j] * 2 }`` with S double-buffered;
    ``n`` tiles (a Var when None)."""
    A, B, S = buf("A", 64), buf("B", 64), buf("S", 4, scope="local")
    ext = v("n") if n is None else c(n)
    ko, i, j = v("ko"), v("i"), v("j")
    fetch = loop(i, 4, BufferStore(S, A[ko * 4 + i], (i,)))
    rest = loop(j, 4, BufferStore(B, S[j] * 2.0, (ko * 4 + j,)))
    body = For(ko, c(0), ext, ForKind.SERIAL, scope(S, seq(fetch, rest)))
    params = (A.data, B.data) + ((ext,) if n is None else ())
    return PrimFunc(params, body, {A.data: A, B.data: B}, {"global_symbol": "tiled_copy"}), (A, B, S, ext)


def test_pass_structure_symbolic_extent():
    f, (A, B, S, n) = _tiled_copy()
    g = inject_double_buffer(f)
    S2 = S.__class__(S.name, S.dtype, (c(8),), S.data, S.scope)
    ko, i0, i1, j = v("ko"), v("i"), v("i"), v("j")
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
    A, B, C = buf("A", 64), buf("B", 64), buf("C", 16)
    SA, SB = buf("SA", 4, scope="local"), buf("SB", 4, scope="local")
    ko, i, j, k = v("ko"), v("i"), v("j"), v("k")
    fa = loop(i, 4, BufferStore(SA, A[ko * 4 + i], (i,)))
    fb = loop(j, 4, BufferStore(SB, B[ko * 4 + j], (j,)))
    use = loop(k, 4, BufferStore(C, C[ko] + SA[k] * SB[3 - k], (ko,)))
    body = loop(ko, 16, scope(SA, seq(fa, scope(SB, seq(fb, use)))))
    f = PrimFunc((A.data, B.data, C.data), body, {b.data: b for b in (A, B, C)}, {"global_symbol": "dot"})
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


# ----------------------------------------------------------------------------
# the pass: errors
# ----------------------------------------------------------------------------

def test_error_scope_under_a_vectorized_loop():
    f, (A, B, S, n) = _tiled_copy(n=4)
    bad = f.with_body(f.body.__class__(f.body.loop_var, f.body.min, f.body.extent, ForKind.VECTORIZED, f.body.body))
    with pytest.raises(LoweringError, match=r"'S'.*double-buffered.*'ko'.*vectorized.*serial loop"):
        inject_double_buffer(bad)


def _after_another_stage(fetch_reads_x):
    """``for ko { X[0] = ko; <S double-buffered: S[i] = A[ko*4 + i] (+ X[0])>; B[..] = S[j] + X[0] }``."""
    A, B = buf("A", 64), buf("B", 64)
    S, X = buf("S", 4, scope="local"), buf("X", 1, scope="local")
    ko, i, j = v("ko"), v("i"), v("j")
    value = A[ko * 4 + i] + X[0] if fetch_reads_x else A[ko * 4 + i]
    fetch = loop(i, 4, BufferStore(S, value, (i,)))
    rest = loop(j, 4, BufferStore(B, S[j] + X[0], (ko * 4 + j,)))
    body = Allocate(X, seq(BufferStore(X, tir.Cast("float32", ko), (c(0),)), scope(S, seq(fetch, rest))))
    f = PrimFunc((A.data, B.data), loop(ko, 16, body), {A.data: A, B.data: B}, {"global_symbol": "f"})
    return f, S


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


def test_error_double_buffer_at_root():
    A = te.placeholder((16,), name="A")
    AA = te.compute((16,), lambda i: A[i] * 2, name="AA")
    B = te.compute((16,), lambda i: AA[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[AA].double_buffer()
    with pytest.raises(LoweringError, match=r"'AA' is double-buffered.*computed at root.*compute_at"):
        tecc.lower(s, [A, B])


# ----------------------------------------------------------------------------
# on the CPU: a double-buffered stage stays correct
# ----------------------------------------------------------------------------

def test_cpu_build_with_double_buffer():
    n, tile = 64, 8
    A = te.placeholder((n,), name="A")
    AA = te.compute((n,), lambda i: A[i] * 2, name="AA")
    B = te.compute((n,), lambda i: AA[i] + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=tile)
    s[AA].compute_at(s[B], xo)
    s[AA].double_buffer()
    text = str(tecc.lower(s, [A, B]))
    assert "double_buffer_write" in text
    f = tecc.build(s, [A, B], target="c")
    a, b = RNG.standard_normal(n).astype("float32"), np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


# ----------------------------------------------------------------------------
# thread_sync: double-buffer writes
# ----------------------------------------------------------------------------

def _pipelined(with_syncs, marked=True):
    """The shape inject_double_buffer produces, in a 16-thread block:
    ``AS[0] <- tile 0; for ko { if ko+1<4: AS[other] <- tile ko+1; CL += AS[this] }``."""
    A, C = buf("A", 256), buf("C", 16)
    AS, CL = buf("AS", 32, scope="shared"), buf("CL", 1, scope="local")
    tx = E.IterVar(E.Range(c(0), c(16)), v("threadIdx.x"), E.IterVarType.THREAD_INDEX, "threadIdx.x")
    t = tx.var
    ko, k = v("ko"), v("k")
    prologue = BufferStore(AS, A[t], (t,))
    prefetch = BufferStore(AS, A[(ko + 1) * 16 + t], (tir.floormod(ko + 1, 2) * 16 + t,))
    if marked:
        prefetch = db_write(AS, prefetch)
    compute = loop(k, 16, BufferStore(CL, CL[0] + AS[tir.floormod(ko, 2) * 16 + k], (c(0),)))
    body = seq(IfThenElse(E.LT(ko + 1, c(4)), prefetch), compute, SYNC if with_syncs else None)
    stmt = AttrStmt(tx, "thread_extent", c(16), Allocate(AS, Allocate(CL, seq(
        BufferStore(CL, c(0.0), (c(0),)),
        prologue,
        SYNC if with_syncs else None,
        loop(ko, 4, body),
        BufferStore(C, CL[0], (t,))))))
    return PrimFunc((A.data, C.data), stmt, {A.data: A, C.data: C}, {"global_symbol": "k", "tecc.kernel": True})


def test_sync_one_barrier_per_iteration_with_double_buffer_writes():
    f = _pipelined(with_syncs=False)
    g = insert_thread_sync(f)
    tir.assert_structural_equal(g, _pipelined(with_syncs=True))
    assert insert_thread_sync(g) is g


def test_sync_unmarked_prefetch_needs_two_barriers_per_iteration():
    g = insert_thread_sync(_pipelined(with_syncs=False, marked=False))
    assert count_syncs(find_loop(g.body, "ko").body) == 2


def test_sync_double_buffer_write_is_a_write_across_iterations():
    # for ko { db-write AS; read AS }: no barrier inside one iteration, but the read of
    # iteration ko and the write of ko + 1 (and the write of ko and the read of ko + 1) race
    AS, B = buf("AS", 32, scope="shared"), buf("B", 64)
    tx = E.IterVar(E.Range(c(0), c(16)), v("threadIdx.x"), E.IterVarType.THREAD_INDEX, "threadIdx.x")
    ko = v("ko")
    write = db_write(AS, BufferStore(AS, c(1.0), (tir.floormod(ko + 1, 2) * 16 + tx.var,)))
    read = BufferStore(B, AS[tir.floormod(ko, 2) * 16 + 15 - tx.var], (ko * 16 + tx.var,))
    stmt = AttrStmt(tx, "thread_extent", c(16), Allocate(AS, loop(ko, 4, seq(write, read))))
    f = PrimFunc((B.data,), stmt, {B.data: B}, {"global_symbol": "k", "tecc.kernel": True})
    g = insert_thread_sync(f)
    want = AttrStmt(tx, "thread_extent", c(16), Allocate(AS, loop(ko, 4, seq(write, read, SYNC))))
    tir.assert_structural_equal(g.body, want)
    # a read before the double-buffer write in the same iteration still conflicts
    stmt2 = AttrStmt(tx, "thread_extent", c(16), Allocate(AS, loop(ko, 4, seq(read, write))))
    g2 = insert_thread_sync(f.with_body(stmt2))
    assert count_syncs(find_loop(g2.body, "ko").body) == 2


# ----------------------------------------------------------------------------
# the classic GPU GEMM with double_buffer
# ----------------------------------------------------------------------------

def _quiet_call(mod, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod(*arrays)


def _kernel(mod):
    kernels = [f for _, f in mod.items() if f.attrs.get("tecc.kernel")]
    assert len(kernels) == 1
    return kernels[0]


def _build_both_arches(s, args):
    mods = {arch: tecc.build(s, args, target=f"cuda -arch={arch}") for arch in ("sm_80", "sm_90")}
    for arch, mod in mods.items():
        assert mod.cubin[:4] == b"\x7fELF", f"no cubin for {arch}"
    return mods["sm_90"]


def _rand(shape):
    return RNG.standard_normal([int(d) for d in shape]).astype("float32")


def test_sgemm_double_buffer_one_sync_per_k_tile():
    M = N = K_ = 128
    s, args = K.sgemm(M, N, K_, block=64, thread_tile=4, k_tile=8, double_buffer=True)
    kern = _kernel(tecc.lower(s, args, name="gemm", target="cuda"))
    k_loop = find_loop(kern.body, "k.outer")
    assert count_syncs(k_loop.body) == 1
    assert is_storage_sync(k_loop.body.seq[-1])      # at the end of the iteration
    assert count_syncs(kern.body) == 2                # plus one after the prologue
    shared = {}
    tir.post_order_visit(kern.body, lambda n: shared.setdefault(n.buffer.name, n.buffer.shape[0].value)
                         if isinstance(n, Allocate) and n.buffer.scope == "shared" else None)
    assert shared == {"A.shared": 2 * 64 * 8, "B.shared": 2 * 8 * 64}
    assert tir.analysis.storage_bytes(kern, "shared") == 4 * 2 * 2 * 64 * 8
    # the same schedule without double buffering: two barriers per k tile
    s1, args1 = K.sgemm(M, N, K_, block=64, thread_tile=4, k_tile=8)
    kern1 = _kernel(tecc.lower(s1, args1, name="gemm", target="cuda"))
    assert count_syncs(find_loop(kern1.body, "k.outer").body) == 2


def test_sgemm_double_buffer_builds_and_runs():
    M = N = K_ = 256
    s, args = K.sgemm(M, N, K_, block=64, thread_tile=4, k_tile=8, double_buffer=True)
    mod = _build_both_arches(s, args)
    src = mod.imported_modules[0].get_source()
    assert src.count("__syncthreads()") == 2
    a, b, out = _rand((M, K_)), _rand((K_, N)), np.zeros((M, N), "float32")
    _quiet_call(mod, a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)


def test_sgemm_double_buffer_has_no_races():
    M, N, K_ = 32, 32, 24     # 4x4 threads, 2x2 virtual threads, 3 k tiles
    s, args = K.sgemm(M, N, K_, block=32, thread_tile=4, k_tile=8, double_buffer=True)
    mod = tecc.lower(s, args, name="gemm", target="cuda")
    kern = _kernel(mod)
    host = mod["gemm"]
    a, b, out = _rand((M, K_)), _rand((K_, N)), np.zeros((M, N), "float32")
    built = cuda_module(host, {kern.name: kern})
    assert built.check(a, b, out, max_blocks=1) == []
    _quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    # the oracle sees the barrier matters: drop the one at the end of the k loop
    k_loop = find_loop(kern.body, "k.outer")
    no_sync = k_loop.__class__(k_loop.loop_var, k_loop.min, k_loop.extent, k_loop.kind,
                               seq(*k_loop.body.seq[:-1]), k_loop.thread_binding, k_loop.annotations)
    broken = kern.with_body(tir.ir_transform(kern.body, lambda n: no_sync if n is k_loop else None, None,
                                             only=(For,)))
    findings = cuda_module(host, {kern.name: broken}).check(a, b, np.zeros((M, N), "float32"), max_blocks=1)
    assert any(f.kind == "race" for f in findings)


def test_classic_tvm_gemm_double_buffer():
    # TVM's test_gemm schedule (8x8 threads, 64x64 outputs per block), n = 128
    n = 128
    s, args = K.classic_gemm_tvm(n)
    kern = _kernel(tecc.lower(s, args, name="gemm", target="cuda"))
    assert count_syncs(find_loop(kern.body, "k").body) == 1
    built = _build_both_arches(s, args)
    a, b, out = _rand((n, n)), _rand((n, n)), np.zeros((n, n), "float32")
    _quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, a @ b.T, rtol=1e-4, atol=1e-3)


def test_classic_tvm_gemm_double_buffer_has_no_races():
    n = 16   # 4x4 threads, 4x4 outputs per thread, 16 steps of k
    s, args = K.classic_gemm_tvm(n, scale=4, num_thread=4)
    mod = tecc.lower(s, args, name="gemm", target="cuda")
    kern = _kernel(mod)
    a, b, out = _rand((n, n)), _rand((n, n)), np.zeros((n, n), "float32")
    built = cuda_module(mod["gemm"], {kern.name: kern})
    assert built.check(a, b, out, max_blocks=1) == []
    _quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, a @ b.T, rtol=1e-4, atol=1e-4)


def test_classic_tvm_gemm_only_b_double_buffered():
    # A's tile is fetched in the loop as usual, B's ahead: still race-free and correct
    n = 16
    s, args = K.classic_gemm_tvm(n, scale=4, num_thread=4, double_buffer=False)
    next(st for st in s.stages if st.op.name == "B.shared").double_buffer()
    mod = tecc.lower(s, args, name="gemm", target="cuda")
    kern = _kernel(mod)
    k_loop = find_loop(kern.body, "k")
    assert count_syncs(k_loop.body) == 2
    assert "double_buffer_write" in str(kern)
    a, b, out = _rand((n, n)), _rand((n, n)), np.zeros((n, n), "float32")
    built = cuda_module(mod["gemm"], {kern.name: kern})
    assert built.check(a, b, out, max_blocks=1) == []
    _quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, a @ b.T, rtol=1e-4, atol=1e-4)
