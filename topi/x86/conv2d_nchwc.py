"""The channel-blocked convolution on CPUs (TVM's x86 ``conv2d_NCHWc``).

The data is ``[N, C // ic_bn, H, W, ic_bn]``, the kernel ``[O // oc_bn, C // ic_bn,
KH, KW, ic_bn, oc_bn]``, the output ``[N, O // oc_bn, OH, OW, oc_bn]``: the output
channels of a block are the vector lanes, contiguous in the kernel and in the
output.  A register tile is ``ow_bn`` pixels of one output row by the ``oc_bn``
channels of a block (``ow_bn * oc_bn / lanes`` accumulators); the reduction (input
channel blocks, kernel rows, kernel columns, the channels of a block) runs outside
it, and each input value is broadcast against one kernel vector.  Unlike the NCHW
schedules (:mod:`.conv2d`, :mod:`.conv2d_flat`), which vectorize along the pixels
and so compute 64 pixels for the 49 of a 7x7 image, no lane is wasted whatever
the image's size.

* the padded input (``Pad``) is computed once at the root, over all cores (inlined
  when it pads nothing);
* the images, channel blocks and output rows are fused into one parallel loop
  (hundreds of tasks even at 7x7 with 64 blocks);
* an element-wise epilogue (bias, relu, a residual add, a multiply, chains of them)
  is inlined into the output stage, at which the convolution is computed: the tile
  is finished in registers and written once;
* where the kernel slice of a block is too large to stay in cache while the tiles
  of a row stream it (deep layers), the output is accumulated in L1 a row -- or,
  on small images, the whole plane -- of a block at a time, a chunk of the input
  channels at a time (:func:`default_ic_chunk`).

The task ``"conv2d_NCHWc.x86"`` has TVM's knobs ``tile_ow`` (the register tile's
pixels) and ``unroll_kw``, ``ic_chunk`` / ``acc_plane`` for the chunked
reduction, ``rows_outer`` and ``prefetch`` (:func:`define_knobs`); the fallback
config is :func:`default_ow_bn`, unrolled kernel columns, :func:`default_ic_chunk`
and :data:`DEFAULT_PREFETCH`.  :func:`nchwc_block` is the
block the graph compiler lays the channels out in.
"""
from __future__ import annotations

from ...te.tensor import PlaceholderOp
from ...tir import dtype as _dt
from ...tuner.task.space import InstantiationError, SplitEntity, OtherOptionEntity
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn
from ..generic.default import new_schedule, outputs_of
from ..nn.conv2d import CONV2D_NCHWC
from ..nn.utils import conv2d_workload_args
from ..schedule_registry import register_schedule
from ..tunable import schedule_either
from ..utils import find_anchors, get_const_tuple
from .conv2d import _lanes, _place_padding, _registers, epilogue_and_accumulator


@register_topi_compute("conv2d_NCHWc.x86", canonical=conv2d_workload_args)
def conv2d_NCHWc(cfg, data, kernel, strides, padding, dilation, layout, out_layout,  # noqa: N802
                 out_dtype="float32"):
    """The channel-blocked convolution compute (:func:`tecc.topi.nn.conv2d_NCHWc`)
    of the tunable task ``"conv2d_NCHWc.x86"`` (TVM's signature:
    ``conv2d_NCHWc(data, kernel, strides, padding, dilation, layout, out_layout,
    out_dtype)``)."""
    return nn.conv2d_NCHWc(data, kernel, strides, padding, dilation, layout, out_layout, out_dtype)


# ---------------------------------------------------------------------------------
# the register tile
# ---------------------------------------------------------------------------------
def max_ow_bn(oc_bn, dtype="float32") -> int:
    """The most pixels a register tile of ``oc_bn`` channels holds: the vector
    registers less two (the broadcast input value, and one spare: the kernel
    vector is the FMA's memory operand) divided by the vectors of a pixel (AVX2,
    16 registers of 8 floats: 14 pixels of 8 channels, 7 of 16)."""
    vectors = -(-oc_bn // _lanes(dtype))
    return max(1, (_registers() - 2) // vectors)


#: the cost of a pixel in a register tile that leaves no register for the second
#: kernel vector (it is then reloaded from L1 for every pixel): fitted to 1-thread
#: AVX2 timings of 16-channel blocks, 2026-11-27 -- 7-pixel tiles beat 6 where the
#: row is 7, 13 or 14 pixels (7x7 512->512 3x3: 81 vs 64 GFLOP/s), 6 beat 7 on the
#: wide rows despite a partial last tile (28x28 128->512 1x1: 91 vs 87; 56x56
#: 64->256 1x1: 92 vs 86; 27x27 32->128 3x3: 93 vs 91)
SPILL_PIXEL_COST = 1.25
#: accumulators that keep AVX2's two FMA units busy (their latency is 4 to 5 cycles)
MIN_ACCUMULATORS = 9


def default_ow_bn(width, oc_bn, dtype="float32", most_pixels=None) -> int:
    """The pixels of a register tile for an output row of ``width``: among the
    tiles of at most :func:`max_ow_bn`, the one of the least cost per row, a tile
    costing its pixels (each :data:`SPILL_PIXEL_COST` when the tile's accumulators,
    kernel vectors and broadcast value do not all fit in the registers) plus a
    fixed 2 (its kernel loads, its loop), a partial last tile 2 more (its bounds
    checks); on a tie the tile that divides the row; no tile of
    fewer than :data:`MIN_ACCUMULATORS` accumulators unless the row is shorter.  So a divisor
    wins where one is near the most (55 = 5 x 11, 7, 13 = 7 + 6), a narrow tile is
    avoided, and wide rows of 16-channel blocks take 6 pixels (28 = 4 x 6 + 4)."""
    most = max_ow_bn(oc_bn, dtype)
    if most_pixels is not None:
        most = min(most, most_pixels)
    if not isinstance(width, int):
        return most
    vectors = -(-oc_bn // _lanes(dtype))
    # at least MIN_ACCUMULATORS accumulators where the row allows (fewer leave the FMA
    # units waiting on each other: 4-pixel tiles of 16 channels ran at 65 GFLOP/s)
    least = min(width, -(-MIN_ACCUMULATORS // vectors), most)

    def tile_cost(w):
        pixel = SPILL_PIXEL_COST if w * vectors + vectors + 1 > _registers() else 1.0
        return w * pixel + 2

    best, best_cost = most, None
    for w in range(min(most, width), least - 1, -1):
        rest = width % w
        cost = ((width // w) * tile_cost(w) + (tile_cost(rest) + 2 if rest else 0), rest != 0)
        if best_cost is None or cost < best_cost:
            best, best_cost = w, cost
    return best


#: the kernel slice of one output block (bytes) from which a small output plane
#: is accumulated whole (see :func:`default_ic_chunk`): the slice no longer stays in
#: L1 / L2 between the row tiles that stream it
PLANE_KERNEL_BYTES = 64 * 1024
#: the largest output plane of one block (bytes) accumulated whole: it stays in L1
PLANE_OUT_BYTES = 16 * 1024
#: bytes of kernel one chunk of input-channel blocks spans in a whole-plane schedule
PLANE_CHUNK_BYTES = 4 * 1024
#: the input-channel blocks per chunk the ``ic_chunk`` knob offers (when they divide)
IC_CHUNKS = (1, 2, 4, 8)


def _geometry(conv):
    """``(out_shape, (ic_chunks, kh, kw, ic_bn), bytes per element)`` of ``conv``."""
    shape = get_const_tuple(conv.shape)
    extents = get_const_tuple([r.dom.extent for r in conv.op.reduce_axis])
    return shape, extents, _dt.parse(conv.dtype).bytes


#: kernel bytes a row of register tiles streams (its tiles times the slice) from
#: which a 1x1 convolution accumulates whole rows, a chunk of the input channels at
#: a time (see :func:`default_ic_chunk`)
ROW_KERNEL_BYTES = 128 * 1024


def default_ic_chunk(conv, ow_bn=None) -> tuple:
    """The fallback's ``(ic_chunk, acc_plane)`` knobs.

    ``(0, False)`` -- register tiles of a row, the whole reduction inside each --
    unless the kernel slice of an output block does not stay in cache between the
    tiles that stream it:

    * the whole plane of a block (``acc_plane``) when the slice is
      :data:`PLANE_KERNEL_BYTES` or more (deep layers: 512 channels by 3x3, 1024 by
      1x1), the plane at most :data:`PLANE_OUT_BYTES` (7x7, 14x14 images) and the
      blocks enough for the cores;
    * whole rows, for a 1x1 kernel whose row of ``ow_bn``-pixel tiles streams
      :data:`ROW_KERNEL_BYTES` or more (28x28 512->128, 56x56 256->64);

    the input-channel blocks per chunk then span about :data:`PLANE_CHUNK_BYTES`
    of kernel (one of the knob's 1, 2, 4, 8).  Measured on AVX2 at 1 thread,
    16-channel blocks, best of 11 interleaved rounds (2026-11-27), GFLOP/s: the
    plane, 7x7 2048->512 1x1 45 -> 57, 14x14 1024->256 1x1 74 -> 84, 7x7 512->512
    3x3 83 -> 85 and 14x14 256->256 3x3 90 -> 89 (noise level); 7x7 512->2048 1x1
    (a 32 KiB slice) 86 -> 83, left in row tiles.  Rows: 28x28 512->128 1x1 74 ->
    82, 56x56 256->128 55 -> 62, 56x56 256->64 61 -> 66; 27x27 256->32 lost (70 ->
    63), 13x13 384->64 too (89 -> 81), and 3x3 layers gained nothing (28x28
    128->128 88 -> 87), so neither is chunked."""
    from .conv2d import MIN_TASKS  # noqa: PLC0415

    shape, (chunks, kh, kw, ic_bn), nbytes = _geometry(conv)
    if not all(isinstance(d, int) for d in tuple(shape) + (chunks, kh, kw, ic_bn)):
        return 0, False
    n, oc_chunks, oh, ow, oc_bn = shape
    ow_bn = ow_bn or default_ow_bn(ow, oc_bn, conv.dtype)
    per_chunk = kh * kw * ic_bn * oc_bn * nbytes
    slice_bytes = chunks * per_chunk
    chunk = max([d for d in IC_CHUNKS if chunks % d == 0 and d * per_chunk <= PLANE_CHUNK_BYTES], default=1)
    if (slice_bytes >= PLANE_KERNEL_BYTES and oh * ow * oc_bn * nbytes <= PLANE_OUT_BYTES
            and n * oc_chunks >= MIN_TASKS):
        return chunk, True
    if (kh, kw) == (1, 1) and -(-ow // ow_bn) * slice_bytes >= ROW_KERNEL_BYTES:
        return chunk, False
    return 0, False


#: on 32-register targets, the most pixels of a register tile of an unstrided 1x1
#: convolution (16 accumulators of two-vector blocks; see :func:`wide_policy`)
POINTWISE_PIXELS_32 = 8
#: on 32-register targets, an unstrided convolution whose whole kernel is at most
#: this many bytes (and smaller than its input) runs the rows outside the blocks
ROWS_KERNEL_BYTES = 256 * 1024
#: on 32-register targets, an unstrided 1x1 convolution of one image whose kernel is
#: larger than :data:`ROWS_KERNEL_BYTES` and whose input is at least this part of the
#: kernel runs the rows outside the blocks (see :func:`wide_policy`)
ROWS_INPUT_OVER_KERNEL = 0.5


def wide_policy(conv):
    """``(most pixels or None, rows_outer)`` of the fallback for an unstrided
    convolution on a 32-register target (AVX-512), or None for a strided one or
    another target.  Its reduction is not chunked by rows (the whole-plane chunks
    of deep 7x7 and 14x14 layers stay).

    Measured on 2 AVX-512 Xeon cores, inputs and weights rotating through 4 and 24
    copies (out of cache, as in a model), best of 10 interleaved rounds, 2026-11-28,
    GFLOP/s of the fallback before -> with this policy:

    * 1x1 kernels: register tiles of at most :data:`POINTWISE_PIXELS_32` pixels.
      GCC keeps 16 accumulators in registers; with the 28 of 14-pixel tiles (31
      registers live) it shuffles them between registers every iteration (27 moves
      per 28 FMAs in the 56x56 64->256 layer's loop).  56x56 64->64 233 -> 250,
      64->256 285 -> 295; 14x14 and 28x28 128->512 layers unchanged (+-3).  3x3
      kernels keep 14-pixel tiles (8 lost 3-8%: each input value serves three
      kernel columns).
    * 1x1 kernels: whole reductions per tile, no row chunks (the AVX2 rule of
      :func:`default_ic_chunk`): 28x28 512->128 257 -> 284, 56x56 256->128 253 ->
      293.
    * the rows outside the channel blocks where the whole kernel is at most
      :data:`ROWS_KERNEL_BYTES` and smaller than the input: each input row is
      streamed once for every block while it is in L1, and the kernel, every row
      reading all of it, stays in L2.  56x56 256->64 236 -> 288, 256->128 -> 307,
      28x28 512->128 -> 301, 56x56 64->64 1x1 -> 257, 64->256 -> 302, 56x56 64->64
      3x3 276 -> 301, 55x55 16->64 3x3 (16-channel blocks) 140 -> 235; the layers it
      leaves with the blocks outside: 14x14 1x1 with 1 MiB kernels (rows 3-5%
      slower), 13x13 64->256 3x3 (4% slower), 27x27 32->128 3x3 (4% faster, not
      taken: its kernel is larger than its input);
    * and, for one image and a 1x1 kernel larger than that, the rows outside the
      blocks where its input is at least :data:`ROWS_INPUT_OVER_KERNEL` of the
      kernel.  In a model neither stays in cache between layers, and the cores
      split the work: with the blocks outside, each core reads the whole input
      (half of it last written by the other core); with the rows outside, half the
      input and the whole kernel, which streams (prefetched).  With more images the
      cores split them, and each reads only its own either way: there the rows
      outside stream the whole kernel once per row, not once per image (SqueezeNet's
      13x13 512->1000 at batch 8, 2 MiB kernel, 2.7 MiB input: 5.6 ms with the rows
      outside against 4.5 with the blocks, medians).  ResNet-50 at batch 1 (40 interleaved
      rounds of per-kernel profiles, 2026-11-29), medians, ms, blocks -> rows:
      14x14 1024->256 (input 0.78 of the kernel) 0.55 -> 0.52 in each of its five
      calls; 14x14 1024->512 (0.39) 1.06 -> 1.05 (another run: 1.10 -> 1.15) and
      256->1024 (0.2) 0.54 -> 0.55, left with the blocks outside."""
    if _registers() < 32 or any(v > 1 for v in _strides(conv)):
        return None
    shape, (chunks, kh, kw, ic_bn), nbytes = _geometry(conv)
    if not all(isinstance(d, int) for d in tuple(shape) + (chunks, kh, kw, ic_bn)):
        return None
    n, oc_chunks, oh, ow, oc_bn = shape
    kernel_bytes = oc_chunks * oc_bn * chunks * ic_bn * kh * kw * nbytes
    input_bytes = n * chunks * ic_bn * oh * ow * nbytes
    pointwise = (kh, kw) == (1, 1)
    most = POINTWISE_PIXELS_32 if pointwise else None
    rows = ((kernel_bytes <= ROWS_KERNEL_BYTES and kernel_bytes < input_bytes)
            or (pointwise and n == 1 and kernel_bytes > ROWS_KERNEL_BYTES
                and input_bytes >= ROWS_INPUT_OVER_KERNEL * kernel_bytes))
    return most, rows


#: the fallback's ``prefetch`` knob: on. Each iteration over the channels of an input
#: block prefetches the kernel row the next chunk (or the next input-channel block)
#: will read, a chunk's span ahead in memory.  In a model the weights come from L3 or
#: memory; a chunk's kernel is one 4 KiB page, where the hardware prefetchers stop and
#: start again.  Measured on 2 AVX-512 Xeon cores, each call on another copy of the
#: weights (24 copies), best of 10 interleaved rounds, 2026-11-28, GFLOP/s without ->
#: with: 7x7 512->2048 1x1 187 -> 219, 7x7 512->512 3x3 198 -> 217, 14x14 1024->512 1x1
#: 269 -> 292, 14x14 256->1024 1x1 261 -> 273, 14x14 512->512 3x3/2 185 -> 200; and
#: within noise (+-3) on 56x56 and 28x28 layers whose kernels stay in cache (64->256,
#: 256->64, 128->512 1x1).
DEFAULT_PREFETCH = True


def define_knobs(cfg, conv):
    """The knobs of ``"conv2d_NCHWc.x86"`` and the flop count:

    ``tile_ow``
        pixels of an output row per register tile (the inner factor; unrolled):
        every width from 1 to 16 (or the most registers hold), a divisor of the row
        or not;
    ``unroll_kw``
        unroll the loop over the kernel's columns;
    ``ic_chunk``
        0: each register tile runs the whole reduction (the input channels outermost
        of it); ``k`` > 0: the output is accumulated in L1 a row (or the whole
        plane) of a block at a time, ``k`` input-channel blocks at a time, every
        tile of the row (plane) using a chunk of the kernel before the next;
    ``acc_plane``
        with ``ic_chunk`` > 0: the whole plane of a block rather than a row;
    ``rows_outer``
        with ``ic_chunk`` = 0: the parallel loop runs the output rows outside the
        channel blocks (every block of a row reads the same input rows while they
        are in cache) rather than the blocks outside the rows (a block's kernel
        stays in L1 over its rows);
    ``prefetch``
        prefetch the kernel a chunk ahead (``Stage.prefetch`` on the loop over the
        channels of an input block; :data:`DEFAULT_PREFETCH`).

    The fallback is :func:`default_ow_bn`'s tile, unrolled columns, and
    :func:`default_ic_chunk` -- except that a strided kernel takes the rows outside
    the blocks where it is not chunked, and a strided 1x1 kernel (ResNet's
    projections) is never chunked: each block's pass over a strided input fetched
    the skipped pixels' lines too, from L3 (1 thread, AVX2, 2026-11-27, GFLOP/s:
    56x56 256->512 /2 77 -> 87, 28x28 512->1024 /2 69 -> 87, 14x14 1024->2048 /2 68
    -> 87; unstrided layers moved by -2 to +2, so they keep the blocks outside).  With
    32 vector registers (AVX-512, 32-channel blocks) a strided 1x1 kernel is chunked
    as :func:`default_ic_chunk` says (2 Xeon cores, best of 7 interleaved rounds,
    2026-11-28, GFLOP/s: 14x14 1024->2048 /2 134 -> 194, 28x28 512->1024 /2 163 ->
    188, 56x56 256->512 /2 202 -> 198, not chunked by the rule anyway).  A
    strided 3x3 kernel gains as well (2 threads, each call on inputs out of L2,
    bias and relu after it, 2026-11-27: 56x56 128->128 3x3/2 149 -> 165; ResNet-50
    at batch 1, 14 interleaved rounds in one process: 49.8 -> 49.0 ms at the tenth
    percentile).  On 32-register targets an unstrided convolution follows
    :func:`wide_policy` (its tile cap, no row chunks, its rows rule), and every
    convolution prefetches its kernel (:data:`DEFAULT_PREFETCH`)."""
    shape, extents, _ = _geometry(conv)
    if not all(isinstance(d, int) for d in tuple(shape) + tuple(extents)):
        raise InstantiationError(f"conv2d_NCHWc.x86: the convolution {conv.op.name!r} has the symbolic shape "
                                 f"{shape}; tune it with constant shapes")
    width, oc_bn = shape[3], shape[4]
    # every width up to the most, divisors of the row or not (a partial last tile is
    # computed with bounds checks): the fallback's tiles (8 pixels of a 13-pixel row,
    # 7 of 55) are points of the space, which factors alone (1 and 13) would not have
    most = min(width, max(16, max_ow_bn(oc_bn, conv.dtype)))
    cfg.define_split("tile_ow", width, num_outputs=2, policy="candidate",
                     candidate=[[-1, f] for f in range(1, most + 1)])
    cfg.define_knob("unroll_kw", [True, False])
    cfg.define_knob("ic_chunk", [0] + [d for d in IC_CHUNKS if extents[0] % d == 0])
    cfg.define_knob("acc_plane", [False, True])
    cfg.define_knob("rows_outer", [False, True])
    cfg.define_knob("prefetch", [False, True])  # last: the configs of older records keep their indices
    flop = 2
    for d in tuple(shape) + tuple(extents):
        flop *= d
    cfg.add_flop(flop)
    if cfg.is_fallback:
        wide = wide_policy(conv)
        ow_bn = default_ow_bn(width, oc_bn, conv.dtype, wide[0] if wide else None)
        ic_chunk, plane = default_ic_chunk(conv, ow_bn)
        cfg["tile_ow"] = SplitEntity([-1, ow_bn])
        cfg["unroll_kw"] = OtherOptionEntity(True)
        strided = any(v > 1 for v in _strides(conv))
        if strided and extents[1:3] == (1, 1) and _registers() < 32:
            ic_chunk, plane = 0, False
        if wide and not plane:
            ic_chunk = 0
        cfg["acc_plane"] = OtherOptionEntity(plane)
        cfg["ic_chunk"] = OtherOptionEntity(ic_chunk)
        cfg["rows_outer"] = OtherOptionEntity((strided or bool(wide and wide[1])) and ic_chunk == 0)
        cfg["prefetch"] = OtherOptionEntity(DEFAULT_PREFETCH)


def _strides(conv) -> tuple:
    """The convolution's strides (its compute's attrs; (1, 1) when it has none)."""
    strides = (conv.op.attrs or {}).get("strides", (1, 1))
    return tuple(int(v) for v in get_const_tuple(list(strides)))


def schedule_nchwc_from_existing(s, conv, out, ow_bn, unroll_kw=True, ic_chunk=0, acc_plane=False,
                                 rows_outer=False, prefetch=False):
    """Schedule the channel-blocked convolution ``conv`` in ``s`` with ``out`` its
    element-wise epilogue's output (``conv`` itself when there is none; the
    injective stages between them already inlined): register tiles of ``ow_bn``
    pixels by one block of channels (see the module's description); with
    ``ic_chunk`` > 0, a row (``acc_plane``: the whole plane) of a block accumulated
    in L1, ``ic_chunk`` input-channel blocks at a time (see :func:`define_knobs`).

    Returns
    -------
    Schedule
    """
    out, acc = epilogue_and_accumulator(s, conv, out)
    _place_padding(s, acc)
    n, oco, y, x, oci = s[out].op.axis
    rco, ry, rx, rci = s[acc].op.reduce_axis
    if ic_chunk:
        # a row (the plane) of the block in L1, the reduction's chunks outside its tiles
        outer = s[out].fuse(n, oco) if acc_plane else s[out].fuse(n, oco, y)
        s[out].parallel(outer)
        s[out].vectorize(oci)
        s[acc].compute_at(s[out], outer)
        an, aoco, ay, ax, aoci = s[acc].op.axis
        axo, axi = s[acc].split(ax, factor=ow_bn)
        rcoo, rcoi = s[acc].split(rco, factor=ic_chunk)
        if acc_plane:
            s[acc].reorder(an, aoco, rcoo, ay, axo, rcoi, ry, rx, rci, axi, aoci)
        else:
            s[acc].reorder(an, aoco, ay, rcoo, axo, rcoi, ry, rx, rci, axi, aoci)
    else:
        xo, xi = s[out].split(x, factor=ow_bn)
        if rows_outer:
            s[out].reorder(n, y, oco, xo, xi, oci)
            s[out].parallel(s[out].fuse(n, y, oco))
        else:
            s[out].reorder(n, oco, y, xo, xi, oci)
            s[out].parallel(s[out].fuse(n, oco, y))
        s[out].unroll(xi)
        s[out].vectorize(oci)
        s[acc].compute_at(s[out], xo)
        an, aoco, ay, ax, aoci = s[acc].op.axis
        axi = ax
        s[acc].reorder(an, aoco, ay, rco, ry, rx, rci, axi, aoci)
    if unroll_kw:
        s[acc].unroll(rx)
    s[acc].unroll(axi)
    s[acc].vectorize(aoci)
    kernel = next(t for t in conv.op.input_tensors if len(t.shape) == 6)
    if prefetch and isinstance(kernel.op, PlaceholderOp):
        # the kernel row of the next chunk (the next input-channel block when not
        # chunked): the same (ry, rx, rci) a chunk's span further on in memory
        _, (_, kh, kw, ic_bn), _ = _geometry(conv)
        s[acc].prefetch(kernel, rci, max(1, ic_chunk) * kh * kw * ic_bn)
    return s


def _template(cfg, outs):
    """The ``"conv2d_NCHWc.x86"`` template: every ``conv2d_NCHWc`` under ``outs``
    scheduled by :func:`schedule_nchwc_from_existing` with ``cfg``'s knobs."""
    outs, s = new_schedule(outs)
    out = outs[0]
    for op in find_anchors(s, out, (CONV2D_NCHWC,), "schedule_conv2d_NCHWc", f"a {CONV2D_NCHWC}"):
        conv = op.output(0)
        define_knobs(cfg, conv)
        schedule_nchwc_from_existing(s, conv, out, cfg["tile_ow"].size[-1], bool(cfg["unroll_kw"].val),
                                     int(cfg["ic_chunk"].val), bool(cfg["acc_plane"].val),
                                     bool(cfg["rows_outer"].val), bool(cfg["prefetch"].val))
    return s


_schedule_task = register_topi_schedule("conv2d_NCHWc.x86")(_template)


@register_schedule(CONV2D_NCHWC, "cpu")
def schedule_conv2d_NCHWc(outs):  # noqa: N802
    """The CPU schedule of ``conv2d_NCHWc`` (and of element-wise ops after it): the
    tuned config of the task ``"conv2d_NCHWc.x86"`` when one is dispatched, else
    the fallback (see :func:`define_knobs`).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s); the first is the final one.

    Returns
    -------
    Schedule
    """
    return schedule_either(outputs_of(outs), "conv2d_NCHWc.x86", _schedule_task, _template)


# ---------------------------------------------------------------------------------
# the block the graph compiler uses
# ---------------------------------------------------------------------------------
def nchwc_block(channels, dtype="float32"):
    """The channel block (``ic_bn`` / ``oc_bn``) the graph compiler should lay a
    layer of ``channels`` out in on the current target, or None when no good block
    divides them (the layer then stays NCHW).

    With 8 lanes (AVX2: float32 in 256-bit vectors) the block is 16 channels (two
    vectors) when 16 divides the channels, else 8 (one vector), else None; with 16
    (AVX-512) likewise 32, else 16: the
    register tile of two vectors by 7 pixels holds 14 accumulators, each input
    value broadcast once feeds two FMAs, and a kernel row of a block is a whole
    64-byte line.  Measured (benchmarks/conv_nchwc_cpu.py, 1 thread, 2 AMD EPYC
    cores, 2026-11-27): 16-channel blocks beat 8-channel ones on 28 of the 31
    ResNet-50 / SqueezeNet 1.1 conv layers, by about 1.2x in geometric mean, and
    most on the deep and small-image layers (7x7 512->2048 1x1 84 vs 68 GFLOP/s,
    27x27 128->32 1x1 83 vs 56); 8 won only on 55x55 64->16 1x1 (82 vs 77),
    14x14 256->1024 1x1 and 56 -> 28 wide layers by noise-level margins.  On
    AVX-512 (2 Xeon cores, 2026-11-28, ResNet-50 at batch 1 in the model,
    ``profile_model_cpu.py``) one-vector blocks left the 1x1 layers at 95-120
    GFLOP/s, an input value broadcast for every FMA; in two-vector blocks they ran at
    150-260 and the kernels summed 36.5 ms instead of 46.4.  With other vector
    widths (SSE) the block is one vector.  A 3-channel image gets None: the graph
    blocks it whole (``NCHW3c``).

    >>> nchwc_block(64), nchwc_block(1000), nchwc_block(3)   # on AVX2 (AVX-512: 32, 8, None)
    (16, 8, None)
    """
    if not isinstance(channels, int) or isinstance(channels, bool) or channels <= 0:
        return None
    lanes = _lanes(dtype)
    blocks = (2 * lanes, lanes) if lanes in (8, 16) else (lanes,)
    for block in blocks:
        if channels % block == 0:
            return block
    return None


#: the most output channels (a fraction of them) that padding up to a whole block may add
MAX_PAD_FRACTION = 1 / 16


def nchwc_out_block(channels, dtype="float32"):
    """``(block, padded_channels)`` for a convolution's ``channels`` outputs: the
    block of :func:`nchwc_block`, or the preferred block (two vectors on AVX2) with
    the channels padded up to a multiple of it when that adds at most
    :data:`MAX_PAD_FRACTION` of them (zero weights: the padded channels compute
    zeros, which the graph slices off).  None when no block fits.

    Measured (1 thread, AVX2, 2026-11-27): SqueezeNet's last convolution, 512 ->
    1000 at 13x13, ran at 79 GFLOP/s in 8-channel blocks and at 90 (counting the
    1000 channels only) as 1008 channels in 16-channel blocks.

    >>> nchwc_out_block(1000), nchwc_out_block(64), nchwc_out_block(24)   # on AVX2
    ((16, 1008), (16, 64), (8, 24))
    """
    exact = nchwc_block(channels, dtype)
    if not isinstance(channels, int) or isinstance(channels, bool) or channels <= 0:
        return None
    lanes = _lanes(dtype)
    preferred = 2 * lanes if lanes in (8, 16) else lanes
    if exact == preferred:
        return exact, channels
    padded = -(-channels // preferred) * preferred
    if padded - channels <= channels * MAX_PAD_FRACTION:
        return preferred, padded
    return (exact, channels) if exact is not None else None
