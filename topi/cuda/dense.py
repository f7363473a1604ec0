"""Dense layers and matrix products on CUDA, tunable (TVM's
``topi.cuda.dense_small_batch`` / ``dense_large_batch``).

Two schedule templates serve every product (``dense``, ``matmul``,
``batch_matmul``, ``matmul_broadcast``):

:func:`schedule_gemm_tiled` -- many rows (a large batch)
    The classic two-level tiling: a block computes a tile of the output
    (``tile_y`` x ``tile_x``: block, virtual thread, thread, inner), each thread an
    inner tile accumulated in registers; the reduction walks ``tile_k`` slices whose
    tiles of both operands are staged through shared memory (fetched by all the
    block's threads together, consecutive threads on consecutive addresses) and from
    there into registers.  Leading (batch) axes go to ``blockIdx.z``.
:func:`schedule_gemv` -- few rows (a small batch, a vector)
    Each output element's reduction is split over the ``tile_k`` threads of
    ``threadIdx.x`` (a cross-thread reduction: warp shuffles), ``tile_x`` columns
    per block along ``threadIdx.y``.

Element-wise stages after the product (bias, activation, residual add, chained)
are computed as each thread writes its outputs: one kernel, the product never in
global memory.  Element-wise stages before it (a cast, a transpose...) are inlined
into the loads.

Knobs (``cfg``), each with a shape-derived fallback: ``tile_y``, ``tile_x``,
``tile_k``, ``auto_unroll_max_step``, and for the tiled template ``vec``: the width
of the vectors in which the block's threads copy the shared tiles (1, 2 or 4
elements, see :func:`plan_fetches`; the fallback copies element by element).
"""
from __future__ import annotations

import importlib

import math

from ... import te
from ...tir import dtype as _dt
from ...tuner.task.space import InstantiationError, OtherOptionEntity, SplitEntity
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn, tag
from ..generic.default import outputs_of
from ..nn.dense import dense_by_batch
from ..schedule_registry import register_schedule
from ..tunable import config_without_workload, has_workload, knob_int, schedule_anchor
from ..utils import const_int_or, find_op
from .reduction import threads_for
from .utils import MAX_UNROLLED_MACS, MIN_BLOCK_THREADS, BlockBudget, pow2_at_least

#: from this batch on, dense() uses the shared-memory tiled template
LARGE_BATCH = 32

#: the values of the ``vec`` knob: elements per thread and step of a cooperative fetch
FETCH_WIDTHS = (1, 2, 4)

#: the widest load a CUDA thread makes in one instruction (a float4)
MAX_VECTOR_BYTES = 16


def add_flop(cfg, out_shape, K):
    """Count a product's multiply-adds (2 flops each) in ``cfg``."""
    n = 2 * K
    for d in out_shape:
        n *= d
    cfg.add_flop(n)


def inline_injective_inputs(s, C):
    """Inline the injective stages that ``C`` reads (a cast, a transpose, a pad...),
    so the product's loads compute them."""
    stack = list(C.op.input_tensors)
    seen = set()
    while stack:
        t = stack.pop()
        if t.op in seen or not isinstance(t.op, te.ComputeOp):
            continue
        seen.add(t.op)
        if tag.is_injective(t.op.tag) or (not t.op.tag and not t.op.reduce_axis):
            s[t].compute_inline()
            stack.extend(t.op.input_tensors)


# ---------------------------------------------------------------------------------------
# the shared-memory tiled template
# ---------------------------------------------------------------------------------------
#: blocks an untuned product's grid has at least, where its output allows it: about
#: two per SM of an H100 (132 SMs; an A100 has 108).  Below that, a smaller tile per
#: thread (:func:`_fallback_tiles`): a grid of a handful of blocks leaves most SMs
#: idle, and each thread's outputs times ``K`` multiply-adds run one after another.
#: On the H100 box (2026-11-28) the encoder layer's 128x64 products ran as 8 blocks
#: of 64 threads, 16 outputs each, and its kernels took about 17 us apiece.
FILL_BLOCKS = 256


def _fallback_tile(n):
    """``[blocks, vthreads, threads, inner]`` for an output axis of length ``n``."""
    if n >= 64:
        return [-1, 2, 8, 2]
    if n >= 32:
        return [-1, 1, 8, 2]
    return [-1, 1, pow2_at_least(n, 8), 1]


def _fallback_tiles(batch, M, N):
    """``(tile_y, tile_x)`` of an untuned ``batch x M x N`` product: each axis's
    :func:`_fallback_tile`, then, while the grid has fewer than :data:`FILL_BLOCKS`
    blocks, the axis with more outputs per thread gives up half of them (its inner
    part first, then its virtual threads), down to one output per thread."""
    ty, tx = _fallback_tile(M), _fallback_tile(N)

    def blocks():
        return batch * -(-M // (ty[1] * ty[2] * ty[3])) * -(-N // (tx[1] * tx[2] * tx[3]))

    while blocks() < FILL_BLOCKS:
        tile = max((ty, tx), key=lambda t: t[1] * t[3])  # ties: rows first
        if tile[1] * tile[3] == 1:
            break
        tile[3 if tile[3] > 1 else 1] //= 2
    return ty, tx


def _define_gemm_knobs(cfg, batch, M, N, K):
    cfg.define_split("tile_y", M, num_outputs=4)
    cfg.define_split("tile_x", N, num_outputs=4)
    cfg.define_split("tile_k", K, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 64, 512, 1500])
    define_fetch_knob(cfg)
    if cfg.is_fallback:
        tile_y, tile_x = _fallback_tiles(batch, M, N)
        cfg["tile_y"] = SplitEntity(tile_y)
        cfg["tile_x"] = SplitEntity(tile_x)
        cfg["tile_k"] = SplitEntity([-1, min(8, K), 1])
        cfg["auto_unroll_max_step"] = OtherOptionEntity(64)


# ---------------------------------------------------------------------------------------
# cooperative fetching of shared tiles (also used by the direct convolution template)
# ---------------------------------------------------------------------------------------
def define_fetch_knob(cfg):
    """The knob ``vec``: how many consecutive elements each thread copies per step
    of a cooperative fetch (:data:`FETCH_WIDTHS`; 1 without tuning)."""
    cfg.define_knob("vec", list(FETCH_WIDTHS))
    if cfg.is_fallback:
        cfg["vec"] = OtherOptionEntity(1)


def fetch_width_knob(cfg, what) -> int:
    """The value of the knob ``vec`` of ``cfg``, checked.

    Raises
    ------
    InstantiationError
        When ``cfg`` has no knob ``vec`` or its value is not one of :data:`FETCH_WIDTHS`.
    """
    vec = knob_int(cfg, "vec", what, 1)
    if vec not in FETCH_WIDTHS:
        raise InstantiationError(f"{what}: knob 'vec' = {vec} is not one of {list(FETCH_WIDTHS)} (elements per "
                                 "thread and step of a cooperative fetch)")
    return vec


def _tile_extents(s, bounds, tile) -> list:
    """The extent of each axis of the attached ``tile`` (1 where not constant)."""
    return [const_int_or(bounds[iv].extent, 1) if iv in bounds else 1 for iv in s[tile].op.axis]


def _contiguous_run(s, extents, tile) -> int:
    """How many consecutive elements of the shared ``tile`` (axis ``extents``) are
    consecutive in the tensor it copies too: its innermost extent, times the next
    ones while the tile spans the tensor's whole axis -- when that tensor is in
    memory with its own dense layout (a stage inlined into the copy, a padding,
    has none: the innermost extent only)."""
    source = tile.op.input_tensors[0]
    in_memory = not isinstance(source.op, te.ComputeOp) or s[source].attach_type != te.AttachType.INLINE
    full = [const_int_or(d, -1) for d in source.shape]
    run = extents[-1] if extents else 1
    if in_memory:
        for i in range(len(extents) - 1, 0, -1):
            if extents[i] != full[i]:
                break
            run *= extents[i - 1]
    return max(1, run)


def plan_fetches(cfg, s, tiles, vec, what) -> list:
    """How each shared tile is fetched for the knob value ``vec``: ``(width,
    axes)``, the vector width -- ``vec``, or the widest power of two below it that
    divides the tile's contiguous run (so that no vector straddles two rows of the
    tensor) within :data:`MAX_VECTOR_BYTES` -- and how many innermost axes of the
    tile make up a multiple of it.  Call it once the tiles are attached
    (``compute_at``): it infers their bounds.

    When no tile takes the full ``vec``, the config repeats one with a narrower
    ``vec``: it is refused (``cfg.raise_error``); the schedule stays valid.

    Parameters
    ----------
    cfg : ConfigEntity or FallbackConfigEntity
    s : Schedule
    tiles : list of Tensor
        The shared-memory copies (``cache_read(..., "shared", ...)``).
    vec : int
        The knob's value (:func:`fetch_width_knob`).
    what : str
        The template, as refusals name it.

    Returns
    -------
    list of (int, int)
        ``(width, axes)`` per tile, for :func:`cooperative_fetch`.
    """
    if vec == 1:
        return [(1, 1)] * len(tiles)
    bounds = te.schedule.InferBound(s)
    plans, facts = [], []
    for tile in tiles:
        extents = _tile_extents(s, bounds, tile)
        run = _contiguous_run(s, extents, tile)
        nbytes = _dt.parse(tile.dtype).bytes
        width = vec
        while width > 1 and (run % width or width * nbytes > MAX_VECTOR_BYTES):
            width //= 2
        axes, size = 1, extents[-1]
        while size % width:
            axes += 1
            size *= extents[-axes]
        plans.append((width, axes))
        facts.append(f"{tile.op.name!r} {'x'.join(map(str, extents))}: runs of {run} {tile.dtype} -> {width}")
    widest = max(w for w, _ in plans)
    if widest < vec:
        cfg.raise_error(f"{what}: knob 'vec' = {vec} fits no shared tile ({', '.join(facts)}; at most "
                        f"{MAX_VECTOR_BYTES} bytes a vector): the config repeats 'vec' = {widest}")
    return plans


def cooperative_fetch(s, tile, threads, width=1, axes=1):
    """The block's threads copy the shared ``tile`` together, ``threads`` --
    ``[(thread_axis, count), ...]``, ``threadIdx.x`` first -- on consecutive
    elements, or with ``width`` > 1 on consecutive vectors of ``width`` elements
    taken from the tile's ``axes`` innermost axes (fused), whose extent ``width``
    divides (:func:`plan_fetches`): consecutive threads touch consecutive
    addresses.

    A vector within the innermost axis becomes one native load and store (CUDA
    ``float2``/``float4``) where the addresses are provably aligned; one spanning
    several axes (a filter slice ``[channels, 3, 3]``) is copied lane by lane until
    the simplifier folds ``x//9*9 + x//3%3*3 + x%3`` back into ``x``."""
    loops = list(s[tile].op.axis)
    lanes = None
    if width > 1:
        inner = s[tile].fuse(*loops[-axes:]) if axes > 1 else loops[-1]
        outer, lanes = s[tile].split(inner, factor=width)
        loops = loops[:-axes] + [outer]
    fused = s[tile].fuse(*loops)
    for axis, count in threads:
        fused, t = s[tile].split(fused, factor=count)
        s[tile].bind(t, axis)
    if lanes is not None:
        s[tile].vectorize(lanes)


def gemm_tiled_fits(entity, budget, in_bytes, out_bytes) -> bool:
    """Whether the knobs of :func:`schedule_gemm_tiled` give a block that fits
    ``budget`` (a :class:`~tecc.topi.cuda.utils.BlockBudget`): its
    ``tile_y[2] x tile_x[2]`` threads (at least ``budget.min_threads``); the two shared tiles of ``tile_k[1] x
    tile_k[2]`` reduction steps by the block's rows and columns; per thread the
    accumulators of ``tile_y[1] x tile_y[3]`` by ``tile_x[1] x tile_x[3]`` outputs
    and the register copies of ``tile_k[2]`` steps of their rows and columns; and at
    most :data:`~tecc.topi.cuda.utils.MAX_UNROLLED_MACS` multiply-adds per unrolled
    ``tile_k[1]`` step."""
    _, vy, ty, yi = entity["tile_y"].size
    _, vx, tx, xi = entity["tile_x"].size
    _, kt, ki = entity["tile_k"].size
    rows, cols = vy * yi, vx * xi
    shared = in_bytes * kt * ki * (rows * ty + cols * tx)
    local = out_bytes * rows * cols + in_bytes * (rows + cols) * ki
    return kt * ki * rows * cols <= MAX_UNROLLED_MACS and budget.fits((tx, ty), shared, local)


def schedule_gemm_tiled(cfg, s, C, out):
    """Schedule the product ``C`` (a reduction over one axis, its output axes
    ``[batch..., i, j]``, at least ``i, j``) written through ``out`` (``C`` itself
    or an element-wise op of it) with the two-level shared-memory tiling."""
    inline_injective_inputs(s, C)
    (k,) = s[C].op.reduce_axis
    shape = [const_int_or(d, 64) for d in C.shape]
    M, N, K = shape[-2], shape[-1], const_int_or(k.dom.extent, 64)
    _define_gemm_knobs(cfg, math.prod(shape[:-2]), M, N, K)
    in_bytes = max(_dt.parse(t.dtype).bytes for t in C.op.input_tensors)
    budget = BlockBudget(min_threads=min(MIN_BLOCK_THREADS, M * N))
    cfg.multi_filter(filter=lambda e: gemm_tiled_fits(e, budget, in_bytes, _dt.parse(C.dtype).bytes),
                     reason=f"its block does not fit {budget.limits.arch} (tile_y[2] x tile_x[2] threads, shared "
                            "tiles of tile_k[1] x tile_k[2] steps, accumulators and register copies per thread), has "
                            f"fewer than {budget.min_threads} threads, or holds more than {MAX_UNROLLED_MACS} "
                            "multiply-adds per thread in a reduction tile")
    add_flop(cfg, shape, K)
    n_ty, n_tx = cfg["tile_y"].size[2], cfg["tile_x"].size[2]
    vec = fetch_width_knob(cfg, "schedule_gemm_tiled")
    if n_ty * n_tx > 1024:
        cfg.raise_error(f"tile_y x tile_x threads = {n_ty * n_tx} > 1024")
    if C.op is out.op:
        CC = s.cache_write(C, "local")
    else:
        CC = C
        s[CC].set_scope("local")
    operands = []  # each operand once (X @ X.T reads one tensor)
    for t in CC.op.input_tensors:
        if all(t is not u for u in operands):
            operands.append(t)
    shared = [s.cache_read(t, "shared", [CC]) for t in operands]
    local = [s.cache_read(t, "local", [CC]) for t in shared]

    axes = list(s[out].op.axis)
    batch, y, x = axes[:-2], axes[-2], axes[-1]
    by, vy, ty, yi = cfg["tile_y"].apply(s, out, y)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, out, x)
    s[out].reorder(*batch, by, bx, vy, vx, ty, tx, yi, xi)
    if batch:
        bz = s[out].fuse(*batch) if len(batch) > 1 else batch[0]
        s[out].bind(bz, te.thread_axis("blockIdx.z"))
        s[out].pragma(bz, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    else:
        s[out].pragma(by, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    thread_y = te.thread_axis((0, n_ty), "threadIdx.y")
    thread_x = te.thread_axis((0, n_tx), "threadIdx.x")
    s[out].bind(by, te.thread_axis("blockIdx.y"))
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(vy, te.thread_axis("vthread", name="vy"))
    s[out].bind(vx, te.thread_axis("vthread", name="vx"))
    s[out].bind(ty, thread_y)
    s[out].bind(tx, thread_x)

    s[CC].compute_at(s[out], tx)
    ko, kt, ki = cfg["tile_k"].apply(s, CC, s[CC].op.reduce_axis[0])
    cax = list(s[CC].op.axis)
    s[CC].reorder(ko, kt, ki, *cax)
    s[CC].unroll(kt)
    for tile, regs in zip(shared, local):
        s[tile].compute_at(s[CC], ko)
        s[regs].compute_at(s[CC], kt)
    plans = plan_fetches(cfg, s, shared, vec, "schedule_gemm_tiled")
    for tile, (width, axes) in zip(shared, plans):
        cooperative_fetch(s, tile, [(thread_x, n_tx), (thread_y, n_ty)], width, axes)


# ---------------------------------------------------------------------------------------
# the cross-thread reduction template
# ---------------------------------------------------------------------------------------
def _define_gemv_knobs(cfg, N, K):
    cfg.define_split("tile_k", K, num_outputs=2)
    cfg.define_split("tile_x", N, num_outputs=2)
    if cfg.is_fallback:
        cfg["tile_k"] = SplitEntity([-1, threads_for(K, 64)])
        cfg["tile_x"] = SplitEntity([-1, min(4, pow2_at_least(N, 4))])


def schedule_gemv(cfg, s, C, out):
    """Schedule the product ``C`` (any output rank) written through ``out`` with one
    cross-thread reduction per output element: ``tile_k``'s inner threads
    (``threadIdx.x``) share the reduction, ``tile_x``'s inner columns go to
    ``threadIdx.y``, every other output index to ``blockIdx.x``."""
    inline_injective_inputs(s, C)
    (k,) = s[C].op.reduce_axis
    shape = [const_int_or(d, 64) for d in C.shape]
    N, K = (shape[-1] if shape else 1), const_int_or(k.dom.extent, 64)
    _define_gemv_knobs(cfg, N, K)
    add_flop(cfg, shape, K)
    n_tx, n_ty = cfg["tile_k"].size[-1], cfg["tile_x"].size[-1]
    if n_ty * n_tx > 1024:
        cfg.raise_error(f"tile_x x tile_k threads = {n_ty * n_tx} > 1024")
    thread_x = te.thread_axis((0, n_tx), "threadIdx.x")
    axes = list(s[out].op.axis)
    if axes:
        jo, ji = cfg["tile_x"].apply(s, out, axes[-1])
        blocks = axes[:-1] + [jo]
        s[out].reorder(*blocks, ji)
        s[out].bind(s[out].fuse(*blocks) if len(blocks) > 1 else blocks[0], te.thread_axis("blockIdx.x"))
        s[out].bind(ji, te.thread_axis((0, n_ty), "threadIdx.y"))
        inner = ji
    else:  # a scalar: one block
        inner = s[out].fuse()
        s[out].bind(inner, te.thread_axis("blockIdx.x"))
    if C.op is not out.op:
        s[C].compute_at(s[out], inner)
        s[out].set_store_predicate(thread_x.var.equal(0))
    _, kx = cfg["tile_k"].apply(s, C, k)
    s[C].bind(kx, thread_x)


# ---------------------------------------------------------------------------------------
# dense
# ---------------------------------------------------------------------------------------
@register_topi_compute("dense_small_batch.cuda")
def dense_small_batch(cfg, data, weight, bias=None, out_dtype=None):
    """The dense compute (:func:`tecc.topi.nn.dense`) for :func:`schedule_dense_small_batch`."""
    return nn.dense(data, weight, bias, out_dtype)


def _small_batch_template(cfg, outs):
    """The CUDA schedule of a dense layer with a small batch (and of element-wise ops
    after it): a cross-thread reduction over ``in_dim`` per output
    (:func:`schedule_gemv`)."""
    return schedule_anchor(outs, (tag.DENSE,), "schedule_dense_small_batch",
                           lambda s, op, out: schedule_gemv(cfg, s, op.output(0), out))


schedule_dense_small_batch = register_topi_schedule("dense_small_batch.cuda")(_small_batch_template)


@register_topi_compute("dense_large_batch.cuda")
def dense_large_batch(cfg, data, weight, bias=None, out_dtype=None):
    """The dense compute (:func:`tecc.topi.nn.dense`) for :func:`schedule_dense_large_batch`."""
    return nn.dense(data, weight, bias, out_dtype)


def _large_batch_template(cfg, outs):
    """The CUDA schedule of a dense layer with a large batch (and of element-wise ops
    after it): shared-memory tiles (:func:`schedule_gemm_tiled`)."""
    return schedule_anchor(outs, (tag.DENSE,), "schedule_dense_large_batch",
                           lambda s, op, out: schedule_gemm_tiled(cfg, s, op.output(0), out))


schedule_dense_large_batch = register_topi_schedule("dense_large_batch.cuda")(_large_batch_template)


def dense(data, weight, bias=None, out_dtype=None):
    """``dense`` for CUDA: tensor cores (:func:`~tecc.topi.cuda.dense_tensorcore.
    dense_tensorcore`) for float16 operands whose shapes a wmma tile divides, on an
    architecture that has them; else :func:`dense_large_batch` from a batch of
    ``LARGE_BATCH`` on, :func:`dense_small_batch` below, :func:`tecc.topi.nn.dense`
    for symbolic shapes.  Schedule it with :func:`schedule_dense`."""
    from .dense_tensorcore import dense_tensorcore, tensorcore_dense_fits

    if tensorcore_dense_fits(data, weight, out_dtype):
        return dense_tensorcore(data, weight, bias, out_dtype)
    return dense_by_batch(data, weight, bias, out_dtype, LARGE_BATCH, dense_large_batch, dense_small_batch)


@register_schedule(tag.DENSE, "cuda")
def schedule_dense(outs):
    """The CUDA schedule of a dense layer (and of element-wise ops after it): the
    template its compute was registered with (:func:`dense_small_batch`,
    :func:`dense_large_batch`), or, for :func:`tecc.topi.nn.dense`, the one for its
    batch size (with a fallback config).

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    for task, module, name in _TENSOR_CORE_SCHEDULES:
        if has_workload(outs, task):
            return getattr(importlib.import_module(module, __package__), name)(outs)
    if has_workload(outs, "dense_large_batch.cuda"):
        return schedule_dense_large_batch(outs)
    if has_workload(outs, "dense_small_batch.cuda"):
        return schedule_dense_small_batch(outs)
    template = _large_batch_template if _dense_batch(outs) >= LARGE_BATCH else _small_batch_template
    return template(config_without_workload(), outs)


#: the tensor-core templates whose product is a ``dense``-tagged GEMM (the anchor a
#: model's fused group is scheduled by): task -> the schedule (module, name)
_TENSOR_CORE_SCHEDULES = (
    ("dense_tensorcore.cuda", ".dense_tensorcore", "schedule_dense_tensorcore"),
    ("conv2d_nchw_tensorcore.cuda", ".conv2d_tensorcore", "schedule_conv2d_nchw_tensorcore"),
    ("conv2d_nhwc_tensorcore.cuda", ".conv2d_tensorcore", "schedule_conv2d_nhwc_tensorcore"),
)


def _dense_batch(outs) -> int:
    """The batch (rows) of the dense layer under ``outs`` (0 when unknown)."""
    op = find_op(outs, lambda op: op.tag == tag.DENSE)
    return 0 if op is None else const_int_or(op.output(0).shape[0], 0)
