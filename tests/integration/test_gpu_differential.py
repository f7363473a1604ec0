"""Random legal GPU schedules, run with CUDA semantics on the CPU, against numpy; the
race/out-of-bounds checker (compiled, so every block of every launch is checked) must
stay silent on every one of them.  A missing barrier can give the right numbers on the
emulator, which runs a block's threads one after another: the checker is what catches
it."""
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tecc
from tecc import te, topi
from tecc.topi.testing import matmul_python
from schedgen import bind_2d, cooperative_fetch

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def _build_run_check(s, args, arrays):
    f = tecc.build(s, args, target="cuda -arch=sm_80", name="f")
    findings = f.check(*arrays, max_blocks=None)
    assert not findings, "\n".join(f.message for f in findings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(*arrays)
    return arrays


@given(data=st.data())
@SETTINGS
def test_elementwise_2d_random_bindings(data):
    m = data.draw(st.integers(1, 40), label="m")
    n = data.draw(st.integers(1, 40), label="n")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    ty = data.draw(st.integers(1, 8), label="threads y")
    tx = data.draw(st.integers(1, 32), label="threads x")
    by, iy = s[B].split(i, factor=ty)
    bx, ix = s[B].split(j, factor=tx)
    s[B].reorder(by, bx, iy, ix)
    s[B].bind(by, te.thread_axis("blockIdx.y"))
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(iy, te.thread_axis("threadIdx.y"))
    s[B].bind(ix, te.thread_axis("threadIdx.x"))
    a = np.random.default_rng(0).standard_normal((m, n)).astype("float32")
    b = np.zeros((m, n), "float32")
    _build_run_check(s, [A, B], [a, b])
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


@given(data=st.data())
@SETTINGS
def test_matmul_random_tiles_with_shared_and_local_caches(data):
    m = data.draw(st.integers(1, 48), label="m")
    n = data.draw(st.integers(1, 48), label="n")
    kk = data.draw(st.integers(1, 40), label="k")
    A = te.placeholder((m, kk), name="A")
    B = te.placeholder((kk, n), name="B")
    C = topi.nn.matmul(A, B)
    s = te.create_schedule(C.op)
    use_shared = data.draw(st.booleans(), label="shared")
    if use_shared:
        AS = s.cache_read(A, "shared", [C])
        BS = s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    ty = data.draw(st.integers(1, 8), label="ty")
    tx = data.draw(st.integers(1, 8), label="tx")
    tile = data.draw(st.integers(1, 3), label="tile")
    i, j = C.op.axis
    by, iy = s[C].split(i, factor=ty * tile)
    bx, ix = s[C].split(j, factor=tx * tile)
    ty_, iy = s[C].split(iy, nparts=ty)
    tx_, ix = s[C].split(ix, nparts=tx)
    s[C].reorder(by, bx, ty_, tx_, iy, ix)
    thread_y, thread_x = bind_2d(s[C], by, bx, ty_, tx_, ty, tx)
    s[CL].compute_at(s[C], tx_)
    ko, ki = s[CL].split(CL.op.reduce_axis[0], factor=data.draw(st.integers(1, 6), label="k tile"))
    if use_shared:
        for T in (AS, BS):
            cooperative_fetch(s, T, CL, ko, thread_y, thread_x, ty, tx)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, kk)).astype("float32")
    b = rng.standard_normal((kk, n)).astype("float32")
    c = np.zeros((m, n), "float32")
    _build_run_check(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, matmul_python(a, b), rtol=1e-4, atol=1e-4)


@given(data=st.data())
@SETTINGS
def test_dequantizing_matmul_with_narrow_weights_random_tiles(data):
    """``A @ (W * scale)`` with W in an 8- or 4-bit float or int4 (a weight-only
    quantized product), its tiles staged through shared memory in W's own type (one
    byte an element, copied as bits), under random thread tiles: against numpy on the
    decoded weights, the checker silent."""
    from tecc.runtime import dtypes

    dtype = data.draw(st.sampled_from(["float8_e4m3fn", "float8_e5m2", "int4", "float4_e2m1fn"]), label="dtype")
    m = data.draw(st.integers(1, 24), label="m")
    n = data.draw(st.integers(1, 40), label="n")
    kk = data.draw(st.integers(1, 33), label="k")
    A = te.placeholder((m, kk), name="A")
    W = te.placeholder((kk, n), name="W", dtype=dtype)
    S = te.placeholder((n,), name="S")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * (W[k, j].astype("float32") * S[j]), axis=k), name="C")
    s = te.create_schedule(C.op)
    use_shared = data.draw(st.booleans(), label="shared")
    if use_shared:
        WS = s.cache_read(W, "shared", [C])
    CL = s.cache_write(C, "local")
    ty = data.draw(st.integers(1, 8), label="ty")
    tx = data.draw(st.integers(1, 8), label="tx")
    i, j = C.op.axis
    by, iy = s[C].split(i, factor=ty)
    bx, ix = s[C].split(j, factor=tx)
    s[C].reorder(by, bx, iy, ix)
    thread_y, thread_x = bind_2d(s[C], by, bx, iy, ix, ty, tx)
    s[CL].compute_at(s[C], ix)
    ko, ki = s[CL].split(CL.op.reduce_axis[0], factor=data.draw(st.integers(1, 8), label="k tile"))
    if use_shared:
        cooperative_fetch(s, WS, CL, ko, thread_y, thread_x, ty, tx)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, kk)).astype("float32")
    w = dtypes.to_storage(rng.integers(-8, 8, (kk, n)) if dtype == "int4" else rng.standard_normal((kk, n)), dtype)
    scale = rng.uniform(0.5, 2.0, n).astype("float32")
    c = np.zeros((m, n), "float32")
    _build_run_check(s, [A, W, S, C], [a, w, scale, c])
    want = a.astype(np.float64) @ (dtypes.numbers(w, dtype).astype(np.float64) * scale)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


@given(data=st.data())
@SETTINGS
def test_row_reduction_across_threads(data):
    """A row sum whose reduction is split over the threads of a block (a cross-thread
    reduction through shared memory), the rows over blocks or threadIdx.y."""
    m = data.draw(st.integers(1, 12), label="rows")
    n = data.draw(st.integers(1, 300), label="cols")
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    tx = data.draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]), label="threads x")
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=tx)
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    (i,) = B.op.axis
    ty = data.draw(st.integers(1, 4), label="rows per block")
    io, ii = s[B].split(i, factor=ty)
    s[B].bind(io, te.thread_axis("blockIdx.x"))
    s[B].bind(ii, te.thread_axis("threadIdx.y"))
    a = np.random.default_rng(2).standard_normal((m, n)).astype("float32")
    b = np.zeros((m,), "float32")
    _build_run_check(s, [A, B], [a, b])
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_storage_align_on_shared_memory():
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[j, i], name="B")  # a transpose through shared memory
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    i, j = B.op.axis
    by, ty = s[B].split(i, factor=8)
    bx, tx = s[B].split(j, factor=8)
    s[B].reorder(by, bx, ty, tx)
    s[B].bind(by, te.thread_axis("blockIdx.y"))
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    thread_y, thread_x = te.thread_axis((0, 8), "threadIdx.y"), te.thread_axis((0, 8), "threadIdx.x")
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)
    s[AS].compute_at(s[B], bx)
    s[AS].storage_align(AS.op.axis[0], 8, 1)  # rows padded to 9 floats: no bank conflicts
    ay, ax = AS.op.axis
    s[AS].bind(ay, thread_y)
    s[AS].bind(ax, thread_x)
    mod = tecc.lower(s, [A, B], name="t", target="cuda")
    kernel = [f for _, f in mod.items() if f.attrs.get("tecc.kernel")][0]
    shared = kernel.body
    while not (hasattr(shared, "buffer") and shared.buffer.scope == "shared"):
        shared = shared.body
    assert int(shared.buffer.shape[0]) == 8 * 9 - 1 or int(shared.buffer.shape[0]) == 8 * 9
    a = np.random.default_rng(2).standard_normal((n, n)).astype("float32")
    b = np.zeros((n, n), "float32")
    _build_run_check(s, [A, B], [a, b])
    np.testing.assert_allclose(b, a.T)
