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
