"""Hand-written GPU schedules shared by the benchmarks, the tests and (later) the
operator library.

Each function declares the computation and returns ``(schedule, [tensors...])`` ready
for ``tecc.build(s, args, target="cuda")``.  They all run, unchanged, on the CPU
GPU-semantics path when there is no GPU.
"""
from __future__ import annotations

from .. import te
from ..errors import ScheduleError
from ..tir import op as _op


def _check_multiple(what, value, factor):
    if value % factor:
        raise ScheduleError(f"{what}={value} must be a multiple of {factor} for this schedule")


def _cooperative_fetch(s, T, num_ty, num_tx, thread_y, thread_x, vec):
    """Spread the copy of a shared tile over the block's threads, ``vec`` elements
    (a float4 when 4) per thread and step."""
    fused = s[T].fuse(*s[T].leaf_iter_vars)
    rest, v = s[T].split(fused, factor=vec)
    rest, tx = s[T].split(rest, factor=num_tx)
    _, ty = s[T].split(rest, factor=num_ty)
    s[T].bind(ty, thread_y)
    s[T].bind(tx, thread_x)
    s[T].vectorize(v)


def _schedule_gemm(s, out, acc, A, B, block, thread_tile, k_tile, double_buffer=False, AT=None):
    """The classic two-level tiling of a GEMM whose reduction stage ``acc`` (local
    scope) is computed per thread inside the output stage ``out``; with
    ``double_buffer`` the shared tiles of A and B are double-buffered across the
    outer reduction loop.  ``AT`` (a ``[K, M]`` transposing stage read by ``acc``)
    keeps A's shared tile k-major, so a thread's rows are contiguous there."""
    if AT is None:
        AA = s.cache_read(A, "shared", [acc])
    else:
        AA = AT
        s[AA].set_scope("shared")
    BB = s.cache_read(B, "shared", [acc])
    AL = s.cache_read(AA, "local", [acc])
    BL = s.cache_read(BB, "local", [acc])
    num_thread = block // (2 * thread_tile)
    thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
    thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
    by, yi = s[out].split(s[out].op.axis[0], factor=block)
    bx, xi = s[out].split(s[out].op.axis[1], factor=block)
    s[out].reorder(by, bx, yi, xi)
    s[out].bind(by, te.thread_axis("blockIdx.y"))
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    tyz, yi = s[out].split(yi, nparts=2)
    ty, yi = s[out].split(yi, nparts=num_thread)
    txz, xi = s[out].split(xi, nparts=2)
    tx, xi = s[out].split(xi, nparts=num_thread)
    s[out].reorder(tyz, txz, ty, tx, yi, xi)
    s[out].bind(tyz, te.thread_axis((0, 2), "vthread", name="vy"))
    s[out].bind(txz, te.thread_axis((0, 2), "vthread", name="vx"))
    s[out].bind(ty, thread_y)
    s[out].bind(tx, thread_x)
    s[out].vectorize(xi)
    s[acc].compute_at(s[out], tx)
    yo, xo = s[acc].op.axis
    ko, ki = s[acc].split(s[acc].op.reduce_axis[0], factor=k_tile)
    s[acc].reorder(ko, ki, yo, xo)
    s[acc].unroll(ki)
    s[acc].unroll(yo)
    s[acc].unroll(xo)
    s[AA].compute_at(s[acc], ko)
    s[BB].compute_at(s[acc], ko)
    s[AL].compute_at(s[acc], ki)
    s[BL].compute_at(s[acc], ki)
    # each thread's slice of a B row is contiguous in shared memory: one float4 load
    s[BL].vectorize(s[BL].op.axis[1])
    vec = 4 if (block * k_tile) % (4 * num_thread * num_thread) == 0 else 1
    if AT is not None:
        # fetch along k (coalesced global reads of A's rows), store transposed
        s[AA].reorder(AA.op.axis[1], AA.op.axis[0])
        s[AL].vectorize(s[AL].op.axis[1])
        # the transposing fill writes down columns: a row stride of 4 (mod 32) words puts
        # the rows that one warp writes on different banks, and keeps rows 16-byte aligned
        # for the float4 reads (shared_memory_report: 2-way -> none at k_tile 8, 4-way ->
        # 2-way at k_tile 16)
        s[AA].storage_align(AA.op.axis[0], 32, 4)
    _cooperative_fetch(s, AA, num_thread, num_thread, thread_y, thread_x, vec)
    _cooperative_fetch(s, BB, num_thread, num_thread, thread_y, thread_x, vec)
    if double_buffer:
        s[AA].double_buffer()
        s[BB].double_buffer()


def _gemm_decl(M, N, K, block, k_tile, dtype, a_kmajor=False):
    """A, B, C (and, with ``a_kmajor``, the transposing stage ``A.T`` that C reads)."""
    for what, v in (("M", M), ("N", N)):
        _check_multiple(what, v, block)
    _check_multiple("K", K, k_tile)
    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    k = te.reduce_axis((0, K), name="k")
    if a_kmajor:
        AT = te.compute((K, M), lambda kk, i: A[i, kk], name="A.T")
        C = te.compute((M, N), lambda i, j: te.sum(AT[k, i] * B[k, j], axis=k), name="C")
        return A, B, C, AT
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, None


def sgemm(M, N, K, block=64, thread_tile=4, k_tile=8, dtype="float32", double_buffer=False, a_kmajor=False):
    """``C[M, N] = A[M, K] @ B[K, N]``: the classic two-level tiled GEMM.

    A block computes a ``block x block`` tile of C with ``(block / (2*thread_tile))^2``
    threads; each thread accumulates ``thread_tile x thread_tile`` values in each of
    2x2 virtual threads (registers via ``cache_write("local")``).  Tiles of A and B
    are staged through shared memory (cooperative, vectorized fetches) and from there
    into registers (``cache_read("local")``).

    With ``double_buffer=True`` (``s[AA].double_buffer(); s[BB].double_buffer()``)
    the shared tiles get two slots: the next ``k_tile`` slice is fetched while the
    current one is multiplied, with one ``__syncthreads`` per slice instead of two.
    With ``a_kmajor=True`` A's shared tile is stored transposed (``[k][rows]``), so
    each thread loads its rows of A with float4 reads, as it does for B.
    """
    A, B, C, AT = _gemm_decl(M, N, K, block, k_tile, dtype, a_kmajor)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    _schedule_gemm(s, C, CC, A, B, block, thread_tile, k_tile, double_buffer, AT)
    return s, [A, B, C]


def classic_gemm_tvm(n, scale=8, num_thread=8, double_buffer=True, dtype="float32"):
    """``C[i, j] = sum_k A[i, k] * B[j, k]`` (``A @ B.T``) with the schedule of TVM's
    integration test ``test_gemm``: blocks of ``scale*num_thread`` squared outputs,
    ``num_thread x num_thread`` threads, a local accumulator (``cache_write``), and
    one column of A and B per reduction step staged in shared memory, double-buffered
    across the reduction loop.
    """
    block_factor = scale * num_thread
    _check_multiple("n", n, block_factor)
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda ii, jj: te.sum(A[ii, k] * B[jj, k], axis=k), name="CC")
    s = te.create_schedule(C.op)
    thread_x = te.thread_axis("threadIdx.x")
    thread_y = te.thread_axis("threadIdx.y")
    CL = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared", [CL])
    BB = s.cache_read(B, "shared", [CL])
    by, yi = s[C].split(C.op.axis[0], factor=block_factor)
    bx, xi = s[C].split(C.op.axis[1], factor=block_factor)
    s[C].reorder(by, bx, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(ty, tx, yi, xi)
    s[C].bind(ty, thread_y)
    s[C].bind(tx, thread_x)
    yo, xo = CL.op.axis
    s[CL].reorder(CL.op.reduce_axis[0], yo, xo)
    s[CL].compute_at(s[C], tx)
    for T in (AA, BB):
        s[T].compute_at(s[CL], CL.op.reduce_axis[0])
        if double_buffer:
            s[T].double_buffer()
        ty, xi = s[T].split(s[T].op.axis[0], nparts=num_thread)
        tx, xi = s[T].split(xi, nparts=num_thread)
        s[T].bind(ty, thread_y)
        s[T].bind(tx, thread_x)
    return s, [A, B, C]


def batch_matmul(batch, M, N, K, block=32, thread_tile=2, dtype="float32"):
    """``C[b] = A[b] @ B[b]`` with a block per (batch, tile) and a register tile per thread."""
    for what, v in (("M", M), ("N", N)):
        _check_multiple(what, v, block)
    A = te.placeholder((batch, M, K), name="A", dtype=dtype)
    B = te.placeholder((batch, K, N), name="B", dtype=dtype)
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((batch, M, N), lambda b, i, j: te.sum(A[b, i, k] * B[b, k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    num_thread = block // thread_tile
    b, i, j = C.op.axis
    by, yi = s[C].split(i, factor=block)
    bx, xi = s[C].split(j, factor=block)
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(b, by, bx, ty, tx, yi, xi)
    s[C].bind(b, te.thread_axis("blockIdx.z"))
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis((0, num_thread), "threadIdx.y"))
    s[C].bind(tx, te.thread_axis((0, num_thread), "threadIdx.x"))
    s[CC].compute_at(s[C], tx)
    _, yo, xo = CC.op.axis
    (kk,) = CC.op.reduce_axis
    s[CC].reorder(kk, yo, xo)
    s[CC].unroll(yo)
    s[CC].unroll(xo)
    return s, [A, B, C]


def conv2d_nchw(N, CI, H, W, CO, KH, KW, stride=1, pad=0, tile_co=8, tile_xy=8, dtype="float32"):
    """Direct NCHW convolution: a block per (image, output-channel tile, spatial tile),
    one output pixel per thread for ``tile_co`` channels kept in registers; the padded
    input is computed inline (no padded copy in memory)."""
    OH = (H + 2 * pad - KH) // stride + 1
    OW = (W + 2 * pad - KW) // stride + 1
    _check_multiple("CO", CO, tile_co)
    Data = te.placeholder((N, CI, H, W), name="Data", dtype=dtype)
    Weight = te.placeholder((CO, CI, KH, KW), name="Weight", dtype=dtype)
    Pad = te.compute((N, CI, H + 2 * pad, W + 2 * pad), lambda n, c, y, x: _op.if_then_else(
        _op.all(y >= pad, y < H + pad, x >= pad, x < W + pad), Data[n, c, y - pad, x - pad],
        _op.const(0, dtype)), name="Pad")
    rc = te.reduce_axis((0, CI), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    Out = te.compute((N, CO, OH, OW), lambda n, f, y, x: te.sum(
        Pad[n, rc, y * stride + ry, x * stride + rx] * Weight[f, rc, ry, rx], axis=[rc, ry, rx]), name="Out")
    s = te.create_schedule(Out.op)
    s[Pad].compute_inline()
    OL = s.cache_write(Out, "local")
    n, f, y, x = Out.op.axis
    fo, fi = s[Out].split(f, factor=tile_co)
    yo, yi = s[Out].split(y, factor=tile_xy)
    xo, xi = s[Out].split(x, factor=tile_xy)
    s[Out].reorder(n, fo, yo, xo, yi, xi, fi)
    bz = s[Out].fuse(n, fo)
    s[Out].bind(bz, te.thread_axis("blockIdx.z"))
    s[Out].bind(yo, te.thread_axis("blockIdx.y"))
    s[Out].bind(xo, te.thread_axis("blockIdx.x"))
    s[Out].bind(yi, te.thread_axis("threadIdx.y"))
    s[Out].bind(xi, te.thread_axis("threadIdx.x"))
    s[OL].compute_at(s[Out], xi)
    _, ff, _, _ = OL.op.axis
    rc_, ry_, rx_ = OL.op.reduce_axis
    s[OL].reorder(rc_, ry_, rx_, ff)
    s[OL].unroll(ff)
    return s, [Data, Weight, Out]


def softmax_rows(M, N, num_thread=128, dtype="float32"):
    """Row-wise softmax, one block per row: the row maximum and the sum of
    exponentials are cross-thread reductions (shared-memory trees), the exponential is
    recomputed where needed (inlined), everything in one kernel."""
    A = te.placeholder((M, N), name="A", dtype=dtype)
    k1 = te.reduce_axis((0, N), name="k1")
    k2 = te.reduce_axis((0, N), name="k2")
    Mx = te.compute((M,), lambda i: te.max(A[i, k1], axis=k1), name="Mx")
    Ex = te.compute((M, N), lambda i, j: te.exp(A[i, j] - Mx[i]), name="Ex")
    Sm = te.compute((M,), lambda i: te.sum(Ex[i, k2], axis=k2), name="Sm")
    Out = te.compute((M, N), lambda i, j: Ex[i, j] / Sm[i], name="Out")
    s = te.create_schedule(Out.op)
    tx = te.thread_axis((0, num_thread), "threadIdx.x")
    s[Ex].compute_inline()
    i, j = Out.op.axis
    s[Out].bind(i, te.thread_axis("blockIdx.x"))
    jo, ji = s[Out].split(j, factor=num_thread)
    s[Out].bind(ji, tx)
    for R in (Mx, Sm):
        s[R].compute_at(s[Out], i)
        (kk,) = s[R].op.reduce_axis
        ko, ki = s[R].split(kk, factor=num_thread)
        s[R].bind(ki, tx)
    return s, [A, Out]


def layernorm_rows(M, N, num_thread=128, eps=1e-5, dtype="float32"):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` per row, one block per row;
    mean and mean of squares are cross-thread reductions."""
    X = te.placeholder((M, N), name="X", dtype=dtype)
    gamma = te.placeholder((N,), name="gamma", dtype=dtype)
    beta = te.placeholder((N,), name="beta", dtype=dtype)
    k1 = te.reduce_axis((0, N), name="k1")
    k2 = te.reduce_axis((0, N), name="k2")
    Sum = te.compute((M,), lambda i: te.sum(X[i, k1], axis=k1), name="Sum")
    SqSum = te.compute((M,), lambda i: te.sum(X[i, k2] * X[i, k2], axis=k2), name="SqSum")
    inv_n = 1.0 / N

    def norm(i, j):
        mean = Sum[i] * inv_n
        var = SqSum[i] * inv_n - mean * mean
        return (X[i, j] - mean) * te.rsqrt(var + eps) * gamma[j] + beta[j]

    Out = te.compute((M, N), norm, name="Out")
    s = te.create_schedule(Out.op)
    tx = te.thread_axis((0, num_thread), "threadIdx.x")
    i, j = Out.op.axis
    s[Out].bind(i, te.thread_axis("blockIdx.x"))
    jo, ji = s[Out].split(j, factor=num_thread)
    s[Out].bind(ji, tx)
    for R in (Sum, SqSum):
        s[R].compute_at(s[Out], i)
        (kk,) = s[R].op.reduce_axis
        ko, ki = s[R].split(kk, factor=num_thread)
        s[R].bind(ki, tx)
    return s, [X, gamma, beta, Out]


def fused_elementwise(shape, num_thread=256, dtype="float32"):
    """``relu(A * scale[c] + bias[c]) + R`` over an NCHW-like tensor (broadcast of per
    channel vectors), all stages inlined into one kernel, 4 elements per thread."""
    A = te.placeholder(shape, name="A", dtype=dtype)
    R = te.placeholder(shape, name="R", dtype=dtype)
    scale = te.placeholder((shape[1],), name="scale", dtype=dtype)
    bias = te.placeholder((shape[1],), name="bias", dtype=dtype)
    T1 = te.compute(shape, lambda *i: A(*i) * scale[i[1]] + bias[i[1]], name="T1")
    T2 = te.compute(shape, lambda *i: te.max(T1(*i), _op.const(0, dtype)), name="T2")
    Out = te.compute(shape, lambda *i: T2(*i) + R(*i), name="Out")
    s = te.create_schedule(Out.op)
    s[T1].compute_inline()
    s[T2].compute_inline()
    fused = s[Out].fuse(*Out.op.axis)
    rest, v = s[Out].split(fused, factor=4)
    bx, tx = s[Out].split(rest, factor=num_thread)
    s[Out].bind(bx, te.thread_axis("blockIdx.x"))
    s[Out].bind(tx, te.thread_axis("threadIdx.x"))
    s[Out].vectorize(v)
    return s, [A, scale, bias, R, Out]


def matmul_bias_relu(M, N, K, block=64, thread_tile=4, k_tile=8, dtype="float32", double_buffer=False,
                     a_kmajor=False):
    """``relu(A @ B + bias)``: the SGEMM schedule (same options as :func:`sgemm`) with
    bias and ReLU applied as the register tile is written out (one kernel, no extra
    pass over C)."""
    A, B, C, AT = _gemm_decl(M, N, K, block, k_tile, dtype, a_kmajor)
    bias = te.placeholder((N,), name="bias", dtype=dtype)
    D = te.compute((M, N), lambda i, j: te.max(C[i, j] + bias[j], _op.const(0, dtype)), name="D")
    s = te.create_schedule(D.op)
    s[C].set_scope("local")
    _schedule_gemm(s, D, C, A, B, block, thread_tile, k_tile, double_buffer, AT)
    return s, [A, B, bias, D]
