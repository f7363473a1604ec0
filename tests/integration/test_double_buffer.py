"""Double buffering end to end: a double-buffered stage built for the CPU, and the
classic GPU GEMM schedules with ``double_buffer()`` built for sm_80/sm_90 and run
with CUDA semantics on the CPU (race checker included).  The pass itself is tested
in tir/transform/test_inject_double_buffer.py, its barriers in test_thread_sync.py."""
import numpy as np

import tecc
from tecc import te, tir
from tecc.tir.stmt import Allocate, For, seq
from tecc.tir.transform.thread_sync import is_storage_sync
from tecc.topi import cuda as K
from tecc.topi.testing import matmul_python
from irhelpers import build_all_arches, count_syncs, cuda_module, find_loop, quiet_call

RNG = np.random.default_rng(3)


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
# the classic GPU GEMM with double_buffer
# ----------------------------------------------------------------------------

def _kernel(mod):
    kernels = [f for _, f in mod.items() if f.attrs.get("tecc.kernel")]
    assert len(kernels) == 1
    return kernels[0]


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
    mod = build_all_arches(s, args)
    src = mod.imported_modules[0].get_source()
    assert src.count("__syncthreads()") == 2
    a, b, out = _rand((M, K_)), _rand((K_, N)), np.zeros((M, N), "float32")
    quiet_call(mod, a, b, out)
    np.testing.assert_allclose(out, matmul_python(a, b), rtol=1e-4, atol=1e-3)


def test_sgemm_double_buffer_has_no_races():
    M, N, K_ = 32, 32, 24     # 4x4 threads, 2x2 virtual threads, 3 k tiles
    s, args = K.sgemm(M, N, K_, block=32, thread_tile=4, k_tile=8, double_buffer=True)
    mod = tecc.lower(s, args, name="gemm", target="cuda")
    kern = _kernel(mod)
    host = mod["gemm"]
    a, b, out = _rand((M, K_)), _rand((K_, N)), np.zeros((M, N), "float32")
    built = cuda_module(host, {kern.name: kern})
    assert built.check(a, b, out, max_blocks=1) == []
    quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, matmul_python(a, b), rtol=1e-4, atol=1e-4)
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
    built = build_all_arches(s, args)
    a, b, out = _rand((n, n)), _rand((n, n)), np.zeros((n, n), "float32")
    quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, matmul_python(a, b, transpose_b=True), rtol=1e-4, atol=1e-3)


def test_classic_tvm_gemm_double_buffer_has_no_races():
    n = 16   # 4x4 threads, 4x4 outputs per thread, 16 steps of k
    s, args = K.classic_gemm_tvm(n, scale=4, num_thread=4)
    mod = tecc.lower(s, args, name="gemm", target="cuda")
    kern = _kernel(mod)
    a, b, out = _rand((n, n)), _rand((n, n)), np.zeros((n, n), "float32")
    built = cuda_module(mod["gemm"], {kern.name: kern})
    assert built.check(a, b, out, max_blocks=1) == []
    quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, matmul_python(a, b, transpose_b=True), rtol=1e-4, atol=1e-4)


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
    quiet_call(built, a, b, out)
    np.testing.assert_allclose(out, matmul_python(a, b, transpose_b=True), rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------
# random double-buffered products: partial tiles, guards, both prefetches
# ----------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schedgen import bind_2d  # noqa: E402


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_double_buffered_products_match_numpy_without_races(data):
    """C = A @ B on random sizes (tiles that do not divide them: guarded fetches and
    partial reduction slices), a shared tile of A, of B or of both double-buffered,
    each prefetched directly or through registers, fetched by the block's threads
    (vectors or scalars): the emulator's race checker finds nothing and the product
    is numpy's."""
    M, N, K_ = (data.draw(st.integers(3, 40), label=x) for x in "MNK")
    ty, tx = data.draw(st.sampled_from([2, 4, 8]), label="ty"), data.draw(st.sampled_from([2, 4, 8]), label="tx")
    kt = data.draw(st.integers(1, 7), label="k tile")
    A, B = te.placeholder((M, K_), name="A"), te.placeholder((K_, N), name="B")
    k = te.reduce_axis((0, K_), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    by, yi = s[C].split(C.op.axis[0], factor=ty)
    bx, xi = s[C].split(C.op.axis[1], factor=tx)
    s[C].reorder(by, bx, yi, xi)
    thread_y, thread_x = bind_2d(s[C], by, bx, yi, xi, ty, tx)
    s[CC].compute_at(s[C], xi)
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=kt)
    for name, T in (("A", A), ("B", B)):
        how = data.draw(st.sampled_from(["none", "direct", "registers"]), label=f"{name} buffering")
        TT = s.cache_read(T, "shared", [CC])
        s[TT].compute_at(s[CC], ko)
        fused = s[TT].fuse(*s[TT].op.axis)
        if data.draw(st.booleans(), label=f"{name} vector fetch") and (ty * tx) > 1:
            fused, lanes = s[TT].split(fused, factor=2)
            s[TT].vectorize(lanes)
        rest, x = s[TT].split(fused, factor=tx)
        _, y = s[TT].split(rest, factor=ty)
        s[TT].bind(y, thread_y)
        s[TT].bind(x, thread_x)
        if how != "none":
            s[TT].double_buffer(register_prefetch=how == "registers")
    mod = tecc.build(s, [A, B, C], target="cuda")
    a, b = RNG.standard_normal((M, K_)).astype("float32"), RNG.standard_normal((K_, N)).astype("float32")
    out = np.zeros((M, N), "float32")
    assert mod.check(a, b, out, max_blocks=2) == []
    quiet_call(mod, a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_double_buffering_a_loop_of_one_iteration_does_nothing():
    """A reduction of one k-slice has nothing to overlap: the stage stays single (it
    had raised: the loop of one iteration is simplified away and the scope landed in
    the thread-bound loop around it)."""
    A, B = te.placeholder((4, 6), name="A"), te.placeholder((6, 4), name="B")
    k = te.reduce_axis((0, 6), name="k")
    C = te.compute((4, 4), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(C.op.axis[1], te.thread_axis("threadIdx.x"))
    s[CC].compute_at(s[C], C.op.axis[1])
    ko, _ = s[CC].split(s[CC].op.reduce_axis[0], factor=6)
    BB = s.cache_read(B, "shared", [CC])
    s[BB].compute_at(s[CC], ko)
    _, tx = s[BB].split(s[BB].fuse(*s[BB].op.axis), factor=4)
    s[BB].bind(tx, te.thread_axis("threadIdx.x"))
    s[BB].double_buffer(register_prefetch=True)
    mod = tecc.build(s, [A, B, C], target="cuda")
    assert "prefetch" not in mod.imported_modules[0].get_source()
    a, b, out = RNG.standard_normal((4, 6)).astype("float32"), RNG.standard_normal((6, 4)).astype("float32"), \
        np.zeros((4, 4), "float32")
    assert mod.check(a, b, out) == []
    quiet_call(mod, a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
