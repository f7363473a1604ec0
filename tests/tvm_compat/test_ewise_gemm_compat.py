"""Elementwise operators, a tiled GEMM and a dot product as TVM's classic-TE
integration tests schedule them (split + bind, vectorize, multi-output cache_write,
cache_read into shared memory with double buffering), built for "llvm" and "cuda"
(the emulator, race-checked) and compared with numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from compat_te import TARGETS, build, build_run, rand, run, source
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _is_gpu(target):
    return "cpu" not in tecc.target.Target(target).keys


def test_target_keys_tell_cpu_from_gpu():
    assert "cpu" in tecc.target.Target("llvm").keys
    assert "gpu" in tecc.target.Target("cuda").keys and not _is_gpu("llvm") and _is_gpu("cuda")


# ---------------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_exp_split_and_bound_with_a_host_target(target):
    n = 1024
    A = te.placeholder((tecc.runtime.convert(n),), name="A")
    B = te.compute(A.shape, lambda *i: te.exp(A(*i)), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    if _is_gpu(target):
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
        f = tecc.build(s, [A, B], target, "llvm", name="myexp")  # TVM's positional target_host
    else:
        f = tecc.build(s, [A, B], target, name="myexp")
    a, b = rand(n), np.zeros(n, "float32")
    run(f, a, b)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_fmod_with_a_symbolic_length_timed_by_time_evaluator(target):
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda *i: te.fmod(A(*i), B(*i)), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    if _is_gpu(target):
        s[C].bind(xo, te.thread_axis("blockIdx.x"))
        s[C].bind(xi, te.thread_axis("threadIdx.x"))
    f = build(s, [A, B, C], target, name="myfmod")
    a, b = rand(1000, high=256.0), rand(1000, high=256.0)
    b += (b < 2.0) * 2
    a[np.abs(np.fmod(a, b)) < 1] += 1
    c = np.zeros(1000, "float32")
    run(f, a, b, c)
    np.testing.assert_allclose(c, np.fmod(a, b), rtol=1e-5)
    dev = tecc.device(target, 0)
    nd = [tecc.nd.array(x, dev) for x in (a, b, np.zeros(1000, "float32"))]
    timer = f.time_evaluator(f.entry_name, dev, number=1)
    assert timer(*nd).mean > 0
    np.testing.assert_allclose(nd[2].numpy(), np.fmod(a, b), rtol=1e-5)


@pytest.mark.parametrize("target, cooperative", [("llvm", False), ("cuda", False), ("cuda", True)])
def test_cache_write_of_a_two_output_compute(target, cooperative):
    n = 1024
    A0 = te.placeholder((n,), name="A0")
    A1 = te.placeholder((n,), name="A1")
    B0, B1 = te.compute((n,), lambda *i: (A0(*i) + A1(*i), A0(*i) * A1(*i)), name="B")
    C = te.compute((n,), lambda *i: B0(*i) + B1(*i), name="C")
    s = te.create_schedule(C.op)
    B0_local, B1_local = s.cache_write([B0, B1], "local")
    assert B0_local.op is B1_local.op
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[B0].compute_at(s[C], xo)
    s[B0_local].compute_at(s[C], xo)
    if _is_gpu(target):
        tx = te.thread_axis("threadIdx.x")
        s[C].bind(xo, te.thread_axis("blockIdx.x"))
        s[C].bind(xi, tx)
        if cooperative:  # each thread computes one element of B's block-wide copy
            s[B0].bind(s[B0].op.axis[0], tx)
            s[B0_local].bind(s[B0_local].op.axis[0], tx)
    f = build(s, [A0, A1, C], target, name="multiple_cache_write")
    a0, a1, c = rand(n), rand(n), np.zeros(n, "float32")
    if _is_gpu(target) and not cooperative:
        # as TVM schedules it, B (attached at the block loop, so in shared memory) is
        # computed whole by every thread of the block: the same values, written by
        # several threads -- the only thing the checker reports
        findings = f.check(a0, a1, c)
        assert findings and {(x.kind, x.buffer) for x in findings} <= {("race", "B.v0"), ("race", "B.v1")}
        assert all("written by several threads" in x.message for x in findings)
    run(f, a0, a1, c, check=cooperative)
    np.testing.assert_allclose(c, a0 + a1 + a0 * a1, rtol=1e-5)


def test_log_pow_with_time_evaluator_repeats():
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda *i: te.power(te.log(A(*i)), 2.0), name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=32)
    f = tecc.build(s, [A, B], "llvm", name="mylog")
    a = tecc.nd.array(rand(1028, low=0.1))
    b = tecc.nd.array(np.zeros(1028, "float32"))
    res = f.time_evaluator(f.entry_name, tecc.cpu(0), number=1, repeat=10)(a, b)
    assert len(res.results) == 10
    np.testing.assert_allclose(b.numpy(), np.power(np.log(a.numpy()), 2.0), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_popcount(target, dtype):
    n = 1024
    A = te.placeholder((tecc.runtime.convert(n),), name="A", dtype=dtype)
    B = te.compute(A.shape, lambda *i: tir.popcount(A(*i)), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    if _is_gpu(target):
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
    rng = np.random.default_rng(5)
    a = rng.integers(0, 1000, n).astype(dtype)
    a[:4] = [0, 1, np.iinfo(dtype).max, np.iinfo(dtype).max - 1]
    b = np.zeros(n, B.dtype)
    build_run(s, [A, B], [a, b], target)
    np.testing.assert_array_equal(b, [bin(int(x)).count("1") for x in a])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "uint64"])
def test_add_split_three_ways_with_a_vectorized_inner_loop(target, dtype):
    n = te.size_var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute(A.shape, lambda *i: A(*i) + B(*i), name="C")
    s = te.create_schedule(C.op)
    num_thread = 16
    bx, x = s[C].split(C.op.axis[0], factor=num_thread * 4)
    tx, x = s[C].split(x, nparts=num_thread)
    _, x = s[C].split(x, factor=4)
    if _is_gpu(target):
        s[C].bind(bx, te.thread_axis("blockIdx.x"))
        s[C].bind(tx, te.thread_axis("threadIdx.x"))
    else:
        s[C].parallel(bx)
    s[C].vectorize(x)
    f = build(s, [A, B, C], target, name="myadd")
    for size in (1024, 1000):  # a multiple of the 64-element block, and not
        a, b = rand(size, high=256.0).astype(dtype), rand(size, high=256.0).astype(dtype)
        c = np.zeros(size, dtype)
        run(f, a, b, c)
        np.testing.assert_array_equal(c, a + b)


def test_cache_read_into_warp_scope():
    n, warp = 128, 32
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 3, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "warp", [B])
    xo, xi = s[B].split(B.op.axis[0], warp * 2)
    _, xi1 = s[B].split(xi, factor=warp)
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(xi1, tx)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[AA].compute_at(s[B], xo)
    _, axi = s[AA].split(s[AA].op.axis[0], warp)
    s[AA].bind(axi, tx)
    a, b = rand(n, high=256.0), np.zeros(n, "float32")
    build_run(s, [A, B], [a, b], "cuda")
    np.testing.assert_allclose(b, a + 3, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# GEMM: cache_write local, cache_read shared (double buffered), 2-D block/thread tiles
# ---------------------------------------------------------------------------------------
def _gemm(n, scale, num_thread, gpu):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda ii, jj: te.sum(A[ii, k] * B[jj, k], axis=k), name="CC")
    s = te.create_schedule(C.op)
    block_factor = scale * num_thread
    CL = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared" if gpu else "global", [CL])
    BB = s.cache_read(B, "shared" if gpu else "global", [CL])
    by, yi = s[C].split(C.op.axis[0], factor=block_factor)
    bx, xi = s[C].split(C.op.axis[1], factor=block_factor)
    s[C].reorder(by, bx, yi, xi)
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(ty, tx, yi, xi)
    yo, xo = CL.op.axis
    s[CL].reorder(k, yo, xo)
    s[CL].compute_at(s[C], tx)
    s[AA].compute_at(s[CL], k)
    s[BB].compute_at(s[CL], k)
    if gpu:
        thread_y, thread_x = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.x")
        s[C].bind(by, te.thread_axis("blockIdx.y"))
        s[C].bind(bx, te.thread_axis("blockIdx.x"))
        s[C].bind(ty, thread_y)
        s[C].bind(tx, thread_x)
        for T in (AA, BB):
            s[T].double_buffer()
            ty_, xi_ = s[T].split(s[T].op.axis[0], nparts=num_thread)
            tx_, _ = s[T].split(xi_, nparts=num_thread)
            s[T].bind(ty_, thread_y)
            s[T].bind(tx_, thread_x)
    return s.normalize(), [A, B, C]


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_tiled_with_shared_double_buffered_caches(target):
    n = 32
    s, args = _gemm(n, scale=4, num_thread=4, gpu=_is_gpu(target))
    with tecc.target.Target(target):
        f = tecc.build(s, args)
    assert f.type_key == ("cuda" if _is_gpu(target) else "c")
    if _is_gpu(target):  # both tiles in shared memory, each written one k-step ahead
        src = source(f)
        assert "__shared__ __align__(16) float A_shared[32]" in src and "float B_shared[32]" in src
        assert src.count("double_buffer_write") == 2
    a, b, c = rand(n, n), rand(n, n), np.zeros((n, n), "float32")
    run(f, a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)


# ---------------------------------------------------------------------------------------
# dot product
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_dot_product_into_a_rank0_tensor(target):
    n = 12
    A = te.placeholder((tecc.runtime.convert(n),), name="A")
    B = te.placeholder((tecc.runtime.convert(n),), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((), lambda: te.sum(A[k] * B[k], axis=k), name="C")
    s = te.create_schedule(C.op)
    if _is_gpu(target):
        s[C].bind(k, te.thread_axis("threadIdx.x"))
    f = tecc.driver.build(s, [A, B, C], target)
    a, b, c = rand(n), rand(n), np.zeros((), "float32")
    run(f, a, b, c)
    np.testing.assert_allclose(c, np.dot(a, b), rtol=1e-4)
