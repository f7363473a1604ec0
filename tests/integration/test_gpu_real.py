"""Tests that need a real GPU (marked ``gpu``; skipped cleanly without one).

They run every hand-written schedule on the device against CuPy, the zero-copy
DLPack path from torch, dynamic shared memory above 48 KiB, export/load without NVRTC,
and the race-free double-buffered GEMM.
"""
import numpy as np
import pytest

import tecc
from tecc import te
from tecc.topi import cuda as K

pytestmark = pytest.mark.gpu


def _cp():
    import cupy as cp
    return cp


def _rand(cp, *shape):
    return cp.asarray(np.random.default_rng(3).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("double_buffer,a_kmajor", [(False, False), (True, False), (True, True)])
def test_sgemm_sizes_on_gpu(double_buffer, a_kmajor):
    cp = _cp()
    for n in (256, 512):
        s, args = K.sgemm(n, n, n, block=64, thread_tile=4, k_tile=8, double_buffer=double_buffer,
                          a_kmajor=a_kmajor)
        mod = tecc.build(s, args, target="cuda")
        a, b = _rand(cp, n, n), _rand(cp, n, n)
        c = cp.zeros((n, n), "float32")
        mod(a, b, c)
        cp.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)


def test_classic_tvm_gemm_on_gpu():
    cp = _cp()
    s, args = K.classic_gemm_tvm(256)
    mod = tecc.build(s, args, target="cuda")
    a, b = _rand(cp, 256, 256), _rand(cp, 256, 256)
    c = cp.zeros((256, 256), "float32")
    mod(a, b, c)
    cp.testing.assert_allclose(c, a @ b.T, rtol=1e-3, atol=1e-3)


def test_norms_and_fused_kernels_on_gpu():
    cp = _cp()
    m, n = 64, 1000
    s, args = K.softmax_rows(m, n, num_thread=128)
    mod = tecc.build(s, args, target="cuda")
    x = _rand(cp, m, n)
    out = cp.zeros((m, n), "float32")
    mod(x, out)
    e = cp.exp(x - x.max(axis=1, keepdims=True))
    cp.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)

    s, args = K.layernorm_rows(m, n, num_thread=96)  # a partial last warp
    mod = tecc.build(s, args, target="cuda")
    g, b = _rand(cp, n), _rand(cp, n)
    out = cp.zeros((m, n), "float32")
    mod(x, g, b, out)
    ref = (x - x.mean(axis=1, keepdims=True)) / cp.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * g + b
    cp.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)

    s, args = K.matmul_bias_relu(128, 128, 64)
    mod = tecc.build(s, args, target="cuda")
    a, w, bias = _rand(cp, 128, 64), _rand(cp, 64, 128), _rand(cp, 128)
    d = cp.zeros((128, 128), "float32")
    mod(a, w, bias, d)
    cp.testing.assert_allclose(d, cp.maximum(a @ w + bias, 0), rtol=1e-3, atol=1e-3)


def test_torch_tensors_zero_copy():
    torch = pytest.importorskip("torch")
    n = 4096
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=256)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    mod = tecc.build(s, [A, B], target="cuda")
    a = torch.randn(n, device="cuda")
    b = torch.empty(n, device="cuda")
    mod(a, b)
    torch.cuda.synchronize()
    assert torch.allclose(b, a * 3)


def test_dynamic_shared_memory_above_48k(tmp_path):
    cp = _cp()
    n = 16 * 1024  # 64 KiB of float32 staged in shared memory by one block
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[n - 1 - i], name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    bo, bi = s[B].split(B.op.axis[0], nparts=1)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    _, t = s[B].split(bi, factor=256)
    tx = te.thread_axis((0, 256), "threadIdx.x")
    s[B].bind(t, tx)
    s[AS].compute_at(s[B], bo)
    _, ta = s[AS].split(AS.op.axis[0], factor=256)
    s[AS].bind(ta, tx)
    mod = tecc.build(s, [A, B], target="cuda")
    a = _rand(cp, n)
    b = cp.zeros(n, "float32")
    mod(a, b)
    cp.testing.assert_allclose(b, a[::-1])
    path = tmp_path / "rev.tecc"
    mod.export_library(str(path))
    loaded = tecc.runtime.load_module(str(path))
    b2 = cp.zeros(n, "float32")
    loaded(a, b2)
    cp.testing.assert_allclose(b2, a[::-1])


def test_driver_agrees_with_ptxas_report_and_check_takes_gpu_arrays():
    cp = _cp()
    n = 128
    s, args = K.sgemm(n, n, n, block=64, thread_tile=4, k_tile=8, a_kmajor=True, double_buffer=True)
    mod = tecc.build(s, args, target="cuda")
    a, b = _rand(cp, n, n), _rand(cp, n, n)
    c = cp.zeros((n, n), "float32")
    mod(a, b, c)
    for name, res in mod.kernel_resources.items():
        fn = mod._gpu_function(mod.kernels[name])
        from cupy.cuda import driver
        regs = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_NUM_REGS, fn.ptr)
        local = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn.ptr)
        smem = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn.ptr)
        assert regs == res.registers and smem == res.static_shared_bytes, (name, regs, smem, res)
        assert local == res.stack_bytes
    # the checking mode and the bank report accept cupy arrays (copied to the host)
    assert mod.check(a, b, cp.zeros((n, n), "float32")) == []
    assert mod.shared_memory_report(a, b, cp.zeros((n, n), "float32"))


def test_time_evaluator_measures_the_kernel_not_the_host_launch_path():
    # a 4096-element kernel runs for a few microseconds; the Python launch path takes
    # longer, so events around back-to-back launches would time the host without the
    # stream hold (runtime/timing.py)
    import time

    cp = _cp()
    n = 4096
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=256)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    mod = tecc.build(s, [A, B], target="cuda")
    a, b = _rand(cp, n), cp.empty(n, "float32")
    mod(a, b)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(200):
        mod(a, b)
    host_per_call = (time.perf_counter() - start) / 200
    cp.cuda.Device().synchronize()
    timed = mod.time_evaluator(mod.entry_name, tecc.cuda(0), number=200, repeat=5)(a, b)
    assert timed.min < 0.5 * host_per_call, (timed.results, host_per_call)
    flushed = mod.time_evaluator(mod.entry_name, tecc.cuda(0), number=20, repeat=3, flush_l2=True)(a, b)
    assert 0 < flushed.min < host_per_call + 1e-3, flushed.results
