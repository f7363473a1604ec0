"""The classic two-level tiled GEMM for CUDA and the workloads built on it
(``sgemm``, ``classic_gemm_tvm``, ``matmul_bias_relu``), and the same SGEMM as a
tunable template (the task ``"sgemm.cuda"``, :func:`sgemm_template`).

``schedule_*`` functions take a schedule, the stages and the knobs; the workload
functions declare the placeholders, call the compute of :mod:`..nn` and apply the
schedule: ``(schedule, [tensors...])`` ready for ``tecc.build(s, args, target="cuda")``.
"""
from __future__ import annotations

import numbers

from ... import te
from ...errors import ScheduleError
from ...tir.analysis import GPULimits
from ...tuner.task import get_config as _get_config
from ...tuner.task import template as _template
from ...tuner.task.space import OtherOptionEntity
from .. import nn
from ...tir import dtype as _dt
from .utils import BlockBudget
from .utils import check_multiple as _check_multiple


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


def schedule_gemm(s, out, acc, A, B, block=64, thread_tile=4, k_tile=8, double_buffer=False, AT=None,
                  register_prefetch=False):
    """The classic two-level tiling of a GEMM whose reduction stage ``acc`` (local
    scope) is computed per thread inside the output stage ``out``; with
    ``double_buffer`` the shared tiles of A and B are double-buffered across the
    outer reduction loop, and with ``register_prefetch`` too the next tiles go
    through registers (loaded at the top of an iteration, stored at its end:
    ``double_buffer(register_prefetch=True)``).  ``AT`` (a ``[K, M]`` transposing stage read by ``acc``)
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
        s[AA].double_buffer(register_prefetch=bool(register_prefetch))
        s[BB].double_buffer(register_prefetch=bool(register_prefetch))


def _gemm_decl(M, N, K, block, k_tile, dtype, a_kmajor=False):
    """A, B, C (and, with ``a_kmajor``, the transposing stage ``A.T`` that C reads)."""
    for what, v in (("M", M), ("N", N)):
        _check_multiple(what, v, block)
    _check_multiple("K", K, k_tile)
    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    if a_kmajor:
        AT = te.compute((K, M), lambda kk, i: A[i, kk], name="A.T")
        k = te.reduce_axis((0, K), name="k")
        C = te.compute((M, N), lambda i, j: te.sum(AT[k, i] * B[k, j], axis=k), name="C", tag="matmul")
        return A, B, C, AT
    return A, B, nn.matmul(A, B), None


def sgemm(M, N, K, block=64, thread_tile=4, k_tile=8, dtype="float32", double_buffer=False, a_kmajor=False,
          register_prefetch=False):
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
    With ``register_prefetch=True`` (and ``double_buffer``) each thread loads its
    share of the next slices into registers before it multiplies the current ones
    and stores them into the free slots after: the loads' latency passes under the
    multiply-adds (CUTLASS's main loop).
    """
    A, B, C, AT = _gemm_decl(M, N, K, block, k_tile, dtype, a_kmajor)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    schedule_gemm(s, C, CC, A, B, block, thread_tile, k_tile, double_buffer, AT, register_prefetch)
    return s, [A, B, C]


def schedule_classic_gemm(s, C, scale=8, num_thread=8, double_buffer=True):
    """TVM's integration-test GEMM schedule for ``C = A @ B.T`` (:func:`nn.matmul` with
    ``transpose_b``): blocks of ``scale*num_thread`` squared outputs,
    ``num_thread x num_thread`` threads, a local accumulator (``cache_write``), and
    one column of A and B per reduction step staged in shared memory,
    double-buffered across the reduction loop."""
    A, B = C.op.input_tensors
    block_factor = scale * num_thread
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
    return s


def classic_gemm_tvm(n, scale=8, num_thread=8, double_buffer=True, dtype="float32"):
    """``C[i, j] = sum_k A[i, k] * B[j, k]`` (``A @ B.T``) with the schedule of TVM's
    integration test ``test_gemm`` (:func:`schedule_classic_gemm`)."""
    _check_multiple("n", n, scale * num_thread)
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    C = nn.matmul(A, B, transpose_b=True, name="CC")
    s = te.create_schedule(C.op)
    schedule_classic_gemm(s, C, scale, num_thread, double_buffer)
    return s, [A, B, C]


def matmul_bias_relu(M, N, K, block=64, thread_tile=4, k_tile=8, dtype="float32", double_buffer=False,
                     a_kmajor=False, register_prefetch=False):
    """``relu(A @ B + bias)``: the SGEMM schedule (same options as :func:`sgemm`) with
    bias and ReLU applied as the register tile is written out (one kernel, no extra
    pass over C)."""
    A, B, C, AT = _gemm_decl(M, N, K, block, k_tile, dtype, a_kmajor)
    bias = te.placeholder((N,), name="bias", dtype=dtype)
    D = nn.bias_relu(C, bias)
    s = te.create_schedule(D.op)
    s[C].set_scope("local")
    schedule_gemm(s, D, C, A, B, block, thread_tile, k_tile, double_buffer, AT, register_prefetch)
    return s, [A, B, bias, D]


# ---------------------------------------------------------------------------------------
# the tunable SGEMM: the task "sgemm.cuda"
# ---------------------------------------------------------------------------------------
#: the task the template is registered as
SGEMM_TASK = "sgemm.cuda"
#: its knobs (the parameters of :func:`sgemm`) and their candidates, in definition order
#: (``register_prefetch`` came last, so the configs measured before it kept their indices)
SGEMM_KNOBS = {"block": [32, 64, 128], "thread_tile": [2, 4, 8], "k_tile": [4, 8, 16, 32],
               "double_buffer": [0, 1], "a_kmajor": [0, 1], "register_prefetch": [0, 1]}
#: the config of a workload nobody tuned: the default the hand-picked configs of
#: ``benchmarks/gpu_sgemm.py`` start from
SGEMM_FALLBACK = {"block": 64, "thread_tile": 4, "k_tile": 8, "double_buffer": 0, "a_kmajor": 0,
                  "register_prefetch": 0}
#: threads a CUDA block may have (on every architecture: tir.analysis's GPU limits)
MAX_THREADS_PER_BLOCK = GPULimits.max_threads_per_block


def _fetch_width(block, thread_tile, k_tile) -> int:
    """Elements each thread copies per step of the cooperative fetch of a shared
    tile, as :func:`schedule_gemm` picks it (a float4 when the tile splits evenly
    into float4s over the block's threads)."""
    num_thread = block // (2 * thread_tile)
    return 4 if (block * k_tile) % (4 * num_thread * num_thread) == 0 else 1


def sgemm_config_errors(M, N, K, block, thread_tile, k_tile, double_buffer=False, register_prefetch=False) -> list:
    """Why :func:`schedule_gemm` cannot schedule an ``M x N x K`` product with these
    knobs (an empty list when it can): each reason names the knobs, the sizes and
    the rule they break.

    The rules: 2x2 virtual threads of ``thread_tile x thread_tile`` outputs per
    thread tile the block, so ``block`` is a multiple of ``2 * thread_tile``; the
    block has ``(block / (2 * thread_tile))^2`` threads, at most
    :data:`MAX_THREADS_PER_BLOCK`; ``block`` divides ``M`` and ``N`` and ``k_tile``
    divides ``K`` (no partial tiles); the ``block x k_tile`` shared tiles spread
    evenly over the block's threads (every thread copies the same number of
    elements, in float4s where they split so, :func:`_fetch_width`); double
    buffering needs a reduction loop of at least two ``k_tile`` slices to overlap;
    and ``register_prefetch`` splits a double buffer's prefetch, so it needs one.
    """
    out = []
    if block % (2 * thread_tile):
        return [f"block={block} is not a multiple of 2 x thread_tile={thread_tile} (2x2 virtual threads of "
                f"{thread_tile}x{thread_tile} outputs each tile the block): use a block that is"]
    num_thread = block // (2 * thread_tile)
    threads = num_thread * num_thread
    if threads > MAX_THREADS_PER_BLOCK:
        out.append(f"block={block}, thread_tile={thread_tile}: {num_thread}x{num_thread} = {threads} threads per "
                   f"block, over CUDA's {MAX_THREADS_PER_BLOCK}: use a larger thread_tile or a smaller block")
    for what, size in (("M", M), ("N", N)):
        if size % block:
            out.append(f"{what}={size} is not a multiple of block={block} (the schedule has no partial tiles)")
    if K % k_tile:
        out.append(f"K={K} is not a multiple of k_tile={k_tile} (the schedule has no partial reduction slices)")
    width = _fetch_width(block, thread_tile, k_tile)
    if (block * k_tile) % (width * threads):
        out.append(f"block={block}, k_tile={k_tile}: a {block}x{k_tile} shared tile ({block * k_tile} elements) "
                   f"does not spread evenly over the block's {threads} threads (thread_tile={thread_tile}); "
                   "part of the block would idle in every fetch: use a larger k_tile or thread_tile")
    if double_buffer and K < 2 * k_tile:
        out.append(f"double_buffer=1 with K={K}, k_tile={k_tile}: the reduction is a single slice, there is no "
                   "next slice to fetch while one is multiplied: use double_buffer=0 or a smaller k_tile")
    if register_prefetch and not double_buffer:
        out.append("register_prefetch=1 with double_buffer=0: it splits the prefetch of a double buffer (loads "
                   "into registers, stores into the free slot) and there is none: use double_buffer=1")
    return out


def sgemm_fits(M, N, K, entity, budget, nbytes) -> bool:
    """Whether the knobs of ``"sgemm.cuda"`` fit the sizes
    (:func:`sgemm_config_errors`) and give a block that fits ``budget`` (a
    :class:`~tecc.topi.cuda.utils.BlockBudget`): per thread the 2x2 virtual threads'
    ``thread_tile x thread_tile`` accumulators and their rows and columns of A and
    B in registers (and, with ``register_prefetch``, its share of the next shared
    tiles); the two ``block x k_tile`` shared tiles (twice, double-buffered)."""
    block, tt, k_tile, db = (entity[k].val for k in ("block", "thread_tile", "k_tile", "double_buffer"))
    rp = entity["register_prefetch"].val if "register_prefetch" in entity else 0
    if sgemm_config_errors(M, N, K, block, tt, k_tile, db, rp):
        return False
    nt = block // (2 * tt)
    shared = nbytes * 2 * block * k_tile * (2 if db else 1)
    local = nbytes * ((2 * tt) ** 2 + 2 * (2 * tt) + (2 * block * k_tile // (nt * nt) if rp else 0))
    return budget.fits((nt, nt), shared, local)


def _check_workload(M, N, K, dtype):
    for what, size in (("M", M), ("N", N), ("K", K)):
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ScheduleError(f"{SGEMM_TASK}: {what} must be a positive int (a matrix size), got {size!r}")
    if not isinstance(dtype, str):
        raise ScheduleError(f"{SGEMM_TASK}: dtype must be a string such as \"float32\", got {dtype!r}")


def _fallback_knobs(M, N, K) -> dict:
    """:data:`SGEMM_FALLBACK`, or where it does not fit the sizes the valid config
    nearest to it (blocks 64, 128, 32; k_tiles 8, 16, 4, 32; thread tiles 4, 2);
    None when no config fits."""
    for block in (64, 128, 32):
        for k_tile in (8, 16, 4, 32):
            for thread_tile in (4, 2):
                if not sgemm_config_errors(M, N, K, block, thread_tile, k_tile, SGEMM_FALLBACK["double_buffer"],
                                           SGEMM_FALLBACK["register_prefetch"]):
                    return dict(SGEMM_FALLBACK, block=block, thread_tile=thread_tile, k_tile=k_tile)
    return None


@_template(SGEMM_TASK)
def _sgemm_task(M, N, K, dtype):
    """The template of ``"sgemm.cuda"`` (called through :func:`sgemm_template`)."""
    _check_workload(M, N, K, dtype)
    cfg = _get_config()
    for name, candidates in SGEMM_KNOBS.items():
        cfg.define_knob(name, candidates)
    budget = BlockBudget()
    cfg.multi_filter(filter=lambda e: sgemm_fits(M, N, K, e, budget, _dt.parse(dtype).bytes),
                     reason=f"it does not fit the sizes, or its block does not fit {budget.limits.arch} (threads, "
                            "shared tiles, the 2x2 thread tiles of accumulators per thread)")
    if cfg.is_fallback:
        knobs = _fallback_knobs(M, N, K)
        if knobs is None:
            raise ScheduleError(
                f"{SGEMM_TASK}: no config of the template fits M={M}, N={N}, K={K}: M and N must be multiples "
                f"of a block ({', '.join(map(str, SGEMM_KNOBS['block']))}) and K of a k_tile "
                f"({', '.join(map(str, SGEMM_KNOBS['k_tile']))}); pad the matrices, or use topi.cuda.dense")
        for name, value in knobs.items():
            cfg[name] = OtherOptionEntity(value)
    cfg.add_flop(2 * M * N * K)
    block, thread_tile, k_tile = (cfg[k].val for k in ("block", "thread_tile", "k_tile"))
    double_buffer, a_kmajor = bool(cfg["double_buffer"].val), bool(cfg["a_kmajor"].val)
    register_prefetch = bool(cfg["register_prefetch"].val)
    # the sizes are checked below: a config that does not fit is refused, not an exception
    A, B, C, AT = _gemm_decl(M, N, K, 1, 1, dtype, a_kmajor)
    s = te.create_schedule(C.op)
    errors = sgemm_config_errors(M, N, K, block, thread_tile, k_tile, double_buffer, register_prefetch)
    if errors:
        for reason in errors:
            cfg.raise_error(reason)
        return s, [A, B, C]  # declared, not scheduled: the tuner records the refusal
    CC = s.cache_write(C, "local")
    schedule_gemm(s, C, CC, A, B, block, thread_tile, k_tile, double_buffer, AT, register_prefetch)
    return s, [A, B, C]


def sgemm_template(M, N, K, dtype="float32"):
    """``C[M, N] = A[M, K] @ B[K, N]``: :func:`sgemm` as the tunable task
    ``"sgemm.cuda"`` (workload ``(M, N, K, dtype)``), whose knobs are its
    parameters (:data:`SGEMM_KNOBS`: ``block``, ``thread_tile``, ``k_tile``,
    ``double_buffer``, ``a_kmajor``, ``register_prefetch``).

    Under ``autotvm.apply_history_best(log)`` it builds the best config tuned for
    the workload; with nothing tuned, the fallback :data:`SGEMM_FALLBACK` (64/4/8,
    single-buffered, A row-major), or the nearest config that fits the sizes.
    Configs that do not fit (:func:`sgemm_config_errors`) are refused while tuning
    (``cfg.raise_error``: recorded as an instantiation error, nothing compiled).

    Returns
    -------
    (Schedule, [A, B, C])

    Raises
    ------
    ScheduleError
        When a size is not a positive int, or (nothing tuned) no config fits the sizes.
    """
    M, N, K = (int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v for v in (M, N, K))
    _check_workload(M, N, K, dtype)
    return _sgemm_task(M, N, K, dtype)
