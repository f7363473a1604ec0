"""The hand-written GPU schedules: lowered, compiled to cubin for sm_80 and sm_90 by
NVRTC, and run with CUDA semantics (on the CPU here; on the GPU where there is one),
each checked against numpy."""
import warnings

import numpy as np
import pytest

import tecc
from tecc import te
from tecc.topi import cuda as K
from tecc.topi.testing import (
    batch_matmul_python, bias_relu_python, conv2d_nchw_python, layer_norm_python, matmul_python,
    scale_bias_relu_add_python, softmax_python,
)
from irhelpers import build_all_arches

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def run(mod, *arrays):
    """Check the module (no race, out-of-bounds or uninitialized read in the first
    blocks, its arguments untouched), then run it."""
    before = [a.copy() for a in arrays]
    findings = mod.check(*arrays)
    assert findings == [], "\n".join(str(f) for f in findings)
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod(*arrays)
    return arrays


def test_vector_add_bind():
    n = 1000
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    mod = build_all_arches(s, [A, B, C])
    src = mod.imported_modules[0].get_source()
    assert '__global__' in src and "threadIdx.x" in src
    a, b, c = rand(n), rand(n), np.zeros(n, "float32")
    run(mod, a, b, c)
    np.testing.assert_allclose(c, a + b)


def test_sgemm_classic_schedule():
    M, N, Kd = 128, 64, 32
    s, args = K.sgemm(M, N, Kd, block=64, thread_tile=4, k_tile=8)
    mod = build_all_arches(s, args)
    src = mod.imported_modules[0].get_source()
    assert "__shared__" in src and "__syncthreads()" in src
    a, b, c = rand(M, Kd), rand(Kd, N), np.zeros((M, N), "float32")
    run(mod, a, b, c)
    np.testing.assert_allclose(c, matmul_python(a, b), rtol=1e-4, atol=1e-4)


def test_sgemm_kmajor_a_tile_double_buffered():
    M, N, Kd = 128, 64, 32
    s, args = K.sgemm(M, N, Kd, a_kmajor=True, double_buffer=True)
    mod = build_all_arches(s, args)
    src = mod.imported_modules[0].get_source()
    # the transposed A tile and B's slice both reach registers as float4 loads
    assert "tecc_load_aligned_float32x4(A_T +" in src and "tecc_load_aligned_float32x4(B_shared +" in src
    a, b, c = rand(M, Kd), rand(Kd, N), np.zeros((M, N), "float32")
    run(mod, a, b, c)
    np.testing.assert_allclose(c, matmul_python(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_sgemm_benchmark_configs_keep_their_tiles_in_registers(arch):
    """ptxas's report (no GPU needed): the thread tiles the benchmark relies on fit in
    registers with no spill; an 8x8 tile in each of 2x2 vthreads (256 accumulators
    per thread) cannot, and the report says so."""
    for block, tile, ktile, kmajor, dbuf in [(64, 4, 8, False, False), (128, 4, 8, False, False),
                                             (128, 4, 16, False, False), (64, 4, 8, True, True),
                                             (128, 4, 8, True, False), (128, 4, 16, True, True)]:
        s, args = K.sgemm(1024, 1024, 1024, block, tile, ktile, a_kmajor=kmajor, double_buffer=dbuf)
        mod = tecc.build(s, args, target=f"cuda -arch={arch}")
        (res,) = mod.kernel_resources.values()
        assert not res.spills and res.stack_bytes == 0, (block, tile, ktile, kmajor, dbuf, res)
        assert res.static_shared_bytes > 0 and res.registers <= 255
    s, args = K.sgemm(1024, 1024, 1024, 128, 8, 8)
    (res,) = tecc.build(s, args, target=f"cuda -arch={arch}").kernel_resources.values()
    assert res.spills and res.registers == 255


def test_matmul_bias_relu_fused():
    M, N, Kd = 64, 64, 16
    s, args = K.matmul_bias_relu(M, N, Kd)
    mod = build_all_arches(s, args)
    assert len([k for k in mod.kernel_names]) == 1
    a, b, bias, d = rand(M, Kd), rand(Kd, N), rand(N), np.zeros((M, N), "float32")
    run(mod, a, b, bias, d)
    np.testing.assert_allclose(d, bias_relu_python(matmul_python(a, b), bias), rtol=1e-4, atol=1e-4)


def test_batch_matmul():
    s, args = K.batch_matmul(3, 32, 64, 24)
    mod = build_all_arches(s, args)
    a, b, c = rand(3, 32, 24), rand(3, 24, 64), np.zeros((3, 32, 64), "float32")
    run(mod, a, b, c)
    np.testing.assert_allclose(c, batch_matmul_python(a, b), rtol=1e-4, atol=1e-4)


def test_conv2d_nchw():
    N, CI, H, W, CO, KH, KW = 1, 3, 16, 16, 8, 3, 3
    s, args = K.conv2d_nchw(N, CI, H, W, CO, KH, KW, stride=1, pad=1)
    mod = build_all_arches(s, args)
    d, w = rand(N, CI, H, W), rand(CO, CI, KH, KW)
    out = np.zeros((N, CO, H, W), "float32")
    run(mod, d, w, out)
    np.testing.assert_allclose(out, conv2d_nchw_python(d, w, stride=1, padding=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [300, 128])
def test_softmax_rows(n):
    M = 4
    s, args = K.softmax_rows(M, n, num_thread=64)
    mod = build_all_arches(s, args)
    a, out = rand(M, n), np.zeros((M, n), "float32")
    run(mod, a, out)
    np.testing.assert_allclose(out, softmax_python(a), rtol=1e-5, atol=1e-6)


def test_layernorm_rows():
    M, N = 3, 200
    s, args = K.layernorm_rows(M, N, num_thread=32)
    mod = build_all_arches(s, args)
    x, g, b, out = rand(M, N), rand(N), rand(N), np.zeros((M, N), "float32")
    run(mod, x, g, b, out)
    np.testing.assert_allclose(out, layer_norm_python(x, g, b), rtol=1e-4, atol=1e-4)


def test_fused_elementwise_one_kernel():
    shape = (2, 4, 6, 8)
    s, args = K.fused_elementwise(shape, num_thread=32)
    mod = build_all_arches(s, args)
    assert len(mod.kernel_names) == 1
    a, sc, bi, r = rand(*shape), rand(4), rand(4), rand(*shape)
    out = np.zeros(shape, "float32")
    run(mod, a, sc, bi, r, out)
    np.testing.assert_allclose(out, scale_bias_relu_add_python(a, sc, bi, r), rtol=1e-5, atol=1e-6)


def test_rfactor_cross_thread_sum():
    m, n = 5, 37
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=16)
    BF = s.rfactor(B, ki)
    s[B].bind(s[B].op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis((0, 16), "threadIdx.x"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    mod = build_all_arches(s, [A, B])
    a, b = rand(m, n), np.zeros(m, "float32")
    run(mod, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_cross_thread_argmax_tuple_reduction():
    def fcombine(x, y):
        lhs = tecc.tir.Select(x[1] >= y[1], x[0], y[0])
        rhs = tecc.tir.Select(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (tecc.tir.const(-1, t0), te.min_value(t1)), name="argmax")
    m, n = 3, 50
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val")
    k = te.reduce_axis((0, n), name="k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(k, factor=32)
    s[T0].bind(T0.op.axis[0], te.thread_axis("blockIdx.x"))
    s[T0].bind(ki, te.thread_axis((0, 32), "threadIdx.x"))
    mod = build_all_arches(s, [idx, val, T0, T1])
    v = rand(m, n)
    ix = np.tile(np.arange(n, dtype="int32"), (m, 1))
    o0, o1 = np.zeros(m, "int32"), np.zeros(m, "float32")
    run(mod, ix, v, o0, o1)
    np.testing.assert_array_equal(o0, v.argmax(axis=1))
    np.testing.assert_allclose(o1, v.max(axis=1))


@pytest.mark.gpu
def test_sgemm_on_gpu_matches_cupy():
    import cupy as cp

    M = N = Kd = 256
    s, args = K.sgemm(M, N, Kd)
    mod = tecc.build(s, args, target="cuda")
    a, b = cp.asarray(rand(M, Kd)), cp.asarray(rand(Kd, N))
    c = cp.zeros((M, N), "float32")
    mod(a, b, c)
    cp.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
