"""Cross-thread reductions with warp shuffles, end to end: schedules lowered, printed
as CUDA (cubins for sm_80 and sm_90), run on the GPU-semantics CPU path against numpy,
and the race checker.  The pass: tir/transform/test_lower_thread_allreduce.py; the
shuffle's printing and emulation: cuda_codegen/ and cpu_fallback/."""
import re

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.tir import expr as E
from tecc.tir.op import const, warp_shuffle_down
from tecc.topi import cuda as K
from tecc.topi.testing import layer_norm_python, softmax_python
from irhelpers import build_all_arches, quiet_call

RNG = np.random.default_rng(11)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def source(mod):
    return mod.imported_modules[0].get_source()


def assert_no_findings(mod, *arrays):
    """``mod.check`` (on copies of ``arrays``): no race, no out-of-bounds access."""
    findings = mod.check(*arrays, max_blocks=None)
    assert findings == [], "\n".join(str(f) for f in findings)


def row_reduce(m, N, n, kind="sum", dtype="float32", rows=1):
    """``B[i] = reduce_k A[i, k]``: a block per ``rows`` rows, the reduction over
    ``n`` threads (threadIdx.x), rows on threadIdx.y."""
    A = te.placeholder((m, N), name="A", dtype=dtype)
    k = te.reduce_axis((0, N), name="k")
    reducer = {"sum": te.sum, "max": te.max, "min": te.min}[kind]
    B = te.compute((m,), lambda i: reducer(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=n)
    if rows > 1:
        io, ii = s[B].split(B.op.axis[0], factor=rows)
        s[B].bind(io, te.thread_axis("blockIdx.x"))
        s[B].bind(ii, te.thread_axis((0, rows), "threadIdx.y"))
    else:
        s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(ki, te.thread_axis((0, n), "threadIdx.x"))
    return s, [A, B]


@pytest.mark.parametrize("n", [16, 32, 64, 96, 128, 256, 24, 48, 100])
def test_sum_over_threads(n):
    m, N = 5, 3 * n + 7
    s, args = row_reduce(m, N, n)
    mod = build_all_arches(s, args)
    src = source(mod)
    # a block whose thread count is not a multiple of 32 names only the lanes that
    # exist in its last, partial warp
    mask = "0xffffffffu" if n % 32 == 0 else f"(((int)threadIdx.x) / 32 == {n // 32} ? {hex((1 << n % 32) - 1)}u : 0xffffffffu)"
    assert f"__shfl_down_sync({mask}, " in src
    offsets = [int(d) for d in re.findall(r"__shfl_down_sync\([^,]+, \w+, (\d+), 32\)", src)]
    assert max(offsets) < min(n, 32) and set(offsets) <= {16, 8, 4, 2, 1}
    if n <= 32:
        # one warp: shuffles only, no shared memory, no barrier
        assert "__shared__" not in src and "__syncthreads" not in src
    else:
        # lane 0 of each warp -> red_buf[n/32]; the only barrier is before reading it
        assert re.search(rf"__shared__ __align__\(16\) float red_buf\[{-(-n // 32)}\]", src)
        assert src.count("__syncthreads();") == 1
    a = rand(m, N)
    (_, b) = quiet_call(mod, a, np.zeros(m, "float32"))
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-4)
    assert_no_findings(mod, a, np.zeros(m, "float32"))


def test_lowered_tir_has_the_shuffle_intrinsic():
    s, args = row_reduce(4, 200, 64)
    text = str(tecc.lower(s, args, target="cuda"))
    assert text.count("tecc.warp_shuffle_down(") == 5 + 1  # 16..1 in the warps, then 1 over 2 warps
    assert "red_buf" in text


@pytest.mark.parametrize("n", [32, 128, 40])
def test_max_over_threads(n):
    m, N = 4, 2 * n + 3
    s, args = row_reduce(m, N, n, kind="max")
    mod = build_all_arches(s, args)
    assert "__shfl_down_sync" in source(mod)
    a = rand(m, N) - 5.0   # all negative: a wrong identity (0) would show
    (_, b) = quiet_call(mod, a, np.zeros(m, "float32"))
    np.testing.assert_array_equal(b, a.max(axis=1))
    assert_no_findings(mod, a, np.zeros(m, "float32"))


@pytest.mark.parametrize("dtype", ["float64", "int32", "int64", "float16"])
def test_shuffle_dtypes(dtype):
    m, n = 3, 64
    N = 2 * n + 1
    s, args = row_reduce(m, N, n, kind="sum" if dtype != "int32" else "max", dtype=dtype)
    mod = build_all_arches(s, args)
    assert "__shfl_down_sync" in source(mod)
    if dtype.startswith("int"):
        a = RNG.integers(-1000, 1000, size=(m, N)).astype(dtype)
    else:
        a = rand(m, N, dtype=dtype)
    (_, b) = quiet_call(mod, a, np.zeros(m, dtype))
    ref = a.max(axis=1) if dtype == "int32" else a.astype("float64").sum(axis=1).astype(dtype)
    if dtype == "float16":
        np.testing.assert_allclose(b.astype("float32"), ref.astype("float32"), rtol=2e-2, atol=0.25)
    else:
        np.testing.assert_allclose(b, ref, rtol=1e-9 if dtype == "float64" else 0)


@pytest.mark.parametrize("rows, n", [(4, 16), (2, 64), (8, 4)])
def test_rows_on_threadidx_y(rows, n):
    """Warps holding several rows (n divides 32) or several warps per row (n a
    multiple of 32): shuffles stay inside a row."""
    m, N = 10, 5 * n + 3
    s, args = row_reduce(m, N, n, rows=rows)
    mod = build_all_arches(s, args)
    assert "__shfl_down_sync" in source(mod)
    a = rand(m, N)
    (_, b) = quiet_call(mod, a, np.zeros(m, "float32"))
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-4)
    assert_no_findings(mod, a, np.zeros(m, "float32"))


def test_rows_not_aligned_to_warps_use_the_shared_tree():
    """48 threads per row with rows on threadIdx.y: warps would straddle rows, so the
    reduction goes through shared memory (and stays correct)."""
    m, N, rows, n = 6, 150, 2, 48
    s, args = row_reduce(m, N, n, rows=rows)
    mod = build_all_arches(s, args)
    src = source(mod)
    assert "__shfl_down_sync" not in src and f"red_buf[{rows * n}]" in src
    a = rand(m, N)
    (_, b) = quiet_call(mod, a, np.zeros(m, "float32"))
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-4)
    assert_no_findings(mod, a, np.zeros(m, "float32"))


def _argmax_schedule(m, n, threads):
    def fcombine(x, y):
        lhs = tir.Select(x[1] >= y[1], x[0], y[0])
        rhs = tir.Select(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (tir.const(-1, t0), te.min_value(t1)), name="argmax")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val")
    k = te.reduce_axis((0, n), name="k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    _, ki = s[T0].split(k, factor=threads)
    s[T0].bind(T0.op.axis[0], te.thread_axis("blockIdx.x"))
    s[T0].bind(ki, te.thread_axis((0, threads), "threadIdx.x"))
    return s, [idx, val, T0, T1]


@pytest.mark.parametrize("threads", [32, 128, 24, 80])
def test_argmax_tuple_reduction(threads):
    m, n = 4, 300
    s, args = _argmax_schedule(m, n, threads)
    mod = build_all_arches(s, args)
    src = source(mod)
    # both values of the tuple travel through the shuffles
    assert re.search(r"int32_t T_shfl0\w* = __shfl_down_sync", src)
    assert re.search(r"float T_shfl1\w* = __shfl_down_sync", src)
    v = rand(m, n)
    ix = np.tile(np.arange(n, dtype="int32"), (m, 1))
    o0, o1 = quiet_call(mod, ix, v, np.zeros(m, "int32"), np.zeros(m, "float32"))[2:]
    np.testing.assert_array_equal(o0, v.argmax(axis=1))
    np.testing.assert_array_equal(o1, v.max(axis=1))
    assert_no_findings(mod, ix, v, np.zeros(m, "int32"), np.zeros(m, "float32"))


@pytest.mark.parametrize("N, threads", [(300, 64), (128, 128), (77, 32), (1000, 256), (50, 96)])
def test_softmax_rows(N, threads):
    M = 3
    s, args = K.softmax_rows(M, N, num_thread=threads)
    mod = build_all_arches(s, args)
    assert "__shfl_down_sync" in source(mod)
    a = rand(M, N)
    (_, out) = quiet_call(mod, a, np.zeros((M, N), "float32"))
    np.testing.assert_allclose(out, softmax_python(a), rtol=1e-5, atol=1e-6)
    assert_no_findings(mod, a, np.zeros((M, N), "float32"))


@pytest.mark.parametrize("N, threads", [(200, 32), (512, 128), (100, 64)])
def test_layernorm_rows(N, threads):
    M = 3
    s, args = K.layernorm_rows(M, N, num_thread=threads)
    mod = build_all_arches(s, args)
    assert "__shfl_down_sync" in source(mod)
    x, g, b = rand(M, N), rand(N), rand(N)
    out = quiet_call(mod, x, g, b, np.zeros((M, N), "float32"))[3]
    np.testing.assert_allclose(out, layer_norm_python(x, g, b), rtol=1e-4, atol=1e-4)
    assert_no_findings(mod, x, g, b, np.zeros((M, N), "float32"))


@pytest.mark.parametrize("threads", [32, 128])
def test_local_result_reaches_every_thread(threads):
    """A reduction held in per-thread (local) memory: every thread of the block
    needs the value, so it is broadcast through shared memory."""
    M, N = 3, 300
    A = te.placeholder((M, N), name="A")
    k = te.reduce_axis((0, N), name="k")
    Sm = te.compute((M,), lambda i: te.sum(A[i, k], axis=k), name="Sm")
    Out = te.compute((M, N), lambda i, j: A[i, j] / Sm[i], name="Out")
    s = te.create_schedule(Out.op)
    tx = te.thread_axis((0, threads), "threadIdx.x")
    i, j = Out.op.axis
    s[Out].bind(i, te.thread_axis("blockIdx.x"))
    _, ji = s[Out].split(j, factor=threads)
    s[Out].bind(ji, tx)
    s[Sm].set_scope("local")
    s[Sm].compute_at(s[Out], i)
    _, ki = s[Sm].split(Sm.op.reduce_axis[0], factor=threads)
    s[Sm].bind(ki, tx)
    mod = build_all_arches(s, [A, Out])
    src = source(mod)
    assert "__shfl_down_sync" in src and "red_result" in src
    a = rand(M, N)
    (_, out) = quiet_call(mod, a, np.zeros((M, N), "float32"))
    np.testing.assert_allclose(out, a / a.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-5)
    assert_no_findings(mod, a, np.zeros((M, N), "float32"))


def test_warp_shuffle_down_rejects_vectors():
    v = E.Broadcast(const(1.0), 4)
    with pytest.raises(tecc.errors.TeccTypeError):
        warp_shuffle_down(v, 1)
