"""Direct convolutions on CPUs: NCHW, NHWC, grouped, depthwise, 1-D and transposed.

Every schedule here has the same shape, that of a register-tiled GEMM:

* the padded input (``Pad``, or the spread ``DilatePad`` of a transposed
  convolution) is computed once, at the root, over all cores (it is inlined when
  it pads nothing);
* the output is cut into tiles of ``oc_bn`` channels by ``ow_bn`` pixels of a row
  (channels-first layouts: the pixels are the vector lanes; channels-last: the
  channels are); the images and output rows are fused into one loop spread over
  the cores, the tiles of a row inside it (so the input rows it reads stay in
  cache while every channel tile uses them);
* each tile is accumulated in a local buffer (the registers): the reduction
  (channels, kernel rows, kernel columns) outside, the tile's channels unrolled
  and its lanes vectorized inside, so every input value loaded is used
  ``oc_bn`` times and every filter value ``ow_bn`` times;
* an element-wise epilogue (bias, relu, batch-norm scale and shift, a residual
  add, chains of them) is inlined into the output stage, which the convolution
  is computed at: the tile is finished in registers and written once.

Float32 NCHW convolutions have a second implementation, :mod:`.conv2d_flat`
(vectors across rows, strides as phase planes), a tunable task of its own;
:func:`conv2d_nchw` picks between the two (by the tuned configs' measured costs, or
untuned by :func:`.conv2d_flat.direct_is_better`).  The other layouts are direct.
"""
from __future__ import annotations

from ... import te
from ...target import Target
from ...tir import dtype as _dt
from .. import nn, tag
from ..generic.default import new_schedule, outputs_of
from ..schedule_registry import register_schedule
from ..nn.conv2d import (
    CONV1D_NCW, CONV1D_NWC, CONV2D_NCHW, CONV2D_NHWC, CONV2D_TRANSPOSE_NCHW, CONV3D_NCDHW, CONV3D_NDHWC,
    DEPTHWISE_CONV2D_NCHW, GROUP_CONV2D_NCHW, GROUP_CONV3D_NCDHW,
)
from ..nn.conv2d_transpose import CONV3D_TRANSPOSE_NCDHW
from ..nn.utils import conv2d_workload_args
from ..tunable import has_workload, schedule_either
from ..utils import find_anchors, get_const_tuple
from . import conv2d_flat as flat
from .injective import schedule_injective_from_existing
from ...tuner.task.space import InstantiationError
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule


@register_topi_compute("conv2d_nchw.x86", canonical=conv2d_workload_args)
def _conv2d_nchw_direct(cfg, data, kernel, strides, padding, dilation, out_dtype=None):
    """The compute of the tunable task ``"conv2d_nchw.x86"``: the direct convolution
    (:func:`tecc.topi.nn.conv2d_nchw`, TVM's x86 form) the knobs of
    :func:`define_conv_knobs` apply to."""
    return nn.conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


@register_topi_compute("conv2d_nchw_flat.x86", canonical=conv2d_workload_args)
def _conv2d_nchw_flat(cfg, data, kernel, strides, padding, dilation, out_dtype=None):
    """The compute of the tunable task ``"conv2d_nchw_flat.x86"``: the convolution
    over flattened pixels (:func:`.conv2d_flat.conv2d_nchw_flat`), laid out by the
    knobs of :func:`.conv2d_flat.define_flat_knobs` (by the plan's own choices
    under the fallback config)."""
    lanes = _lanes("float32")
    knobs = None
    if cfg is not None and not cfg.is_fallback:
        knobs = flat.define_flat_knobs(cfg, data, kernel, strides, padding, dilation, out_dtype, _registers())
    plan = flat.plan_conv2d_nchw_flat(data, kernel, strides, padding, dilation, out_dtype, lanes, _registers(),
                                      knobs)
    if plan is None:
        raise InstantiationError(
            "conv2d_nchw_flat.x86: the flat convolution needs float32 data and kernel of constant shapes with "
            f"matching channels (got {data.dtype} {tuple(data.shape)} and {kernel.dtype} {tuple(kernel.shape)}); "
            "use conv2d_nchw.x86")
    return flat.conv2d_nchw_flat(data, kernel, plan, out_dtype)


def conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype=None):
    """The NCHW convolution on CPUs, by one of two tunable implementations (as
    TVM's op strategies pick one):

    * ``"conv2d_nchw.x86"``, the direct compute (:func:`tecc.topi.nn.conv2d_nchw`)
      in register tiles of a row's pixels (:func:`schedule_conv_tuned`);
    * ``"conv2d_nchw_flat.x86"``, float32 of static shapes only: the GEMM over the
      flattened pixels of a repacked input (:mod:`.conv2d_flat`).

    Where the dispatch context (``autotvm.apply_history_best``) has a tuned config
    of both, the one of the lower measured cost wins; of one of them, that one;
    of neither, :func:`.conv2d_flat.direct_is_better` decides.  Both workloads are
    queried, so ``extract_tasks`` finds both tasks.
    """
    from ...tuner.task.dispatcher import DispatchContext  # noqa: PLC0415
    from ...tuner.task.task import args_to_workload  # noqa: PLC0415

    args = (data, kernel, strides, padding, dilation, out_dtype)
    lanes = _lanes("float32")
    plan = flat.plan_conv2d_nchw_flat(data, kernel, strides, padding, dilation, out_dtype, lanes, _registers())
    if plan is None:
        return _conv2d_nchw_direct(*args)
    target = Target.current(allow_none=True)
    ctx = DispatchContext.current
    direct_cfg = ctx.query(target, args_to_workload(args, "conv2d_nchw.x86"))
    flat_cfg = ctx.query(target, args_to_workload(args, "conv2d_nchw_flat.x86"))
    if _pick_flat(direct_cfg, flat_cfg, lambda: not flat.direct_is_better(data, kernel, plan)):
        return _conv2d_nchw_flat(*args)
    return _conv2d_nchw_direct(*args)


def _pick_flat(direct_cfg, flat_cfg, untuned_choice) -> bool:
    """Whether the flat implementation wins.  A config measured in the records (its
    ``cost``: a tuned point, or a baseline record of the template's fallback) is
    compared by that cost: the lower wins when both are measured, the measured one
    when one is -- unless it is a measured fallback, which says nothing about the
    other implementation: then, as when neither is measured, ``untuned_choice()``
    decides.  One config answering both workloads (``ApplyConfig`` of a single
    point) is the implementation whose knobs it has."""
    def measured(cfg):
        return cfg is not None and getattr(cfg, "cost", None) is not None

    if direct_cfg is flat_cfg and direct_cfg is not None and not direct_cfg.is_fallback:
        return "tile" in flat_cfg and "tile_oc" not in flat_cfg
    if measured(direct_cfg) and measured(flat_cfg):
        return flat_cfg.cost < direct_cfg.cost
    for cfg, is_flat in ((flat_cfg, True), (direct_cfg, False)):
        if measured(cfg) and not cfg.is_fallback:
            return is_flat
    tuned = [is_flat for cfg, is_flat in ((flat_cfg, True), (direct_cfg, False))
             if cfg is not None and not cfg.is_fallback]
    if len(tuned) == 1:  # a tuned config without a measured cost (update(), ApplyConfig)
        return tuned[0]
    return untuned_choice()


def conv2d_nhwc(data, kernel, strides, padding, dilation, out_dtype=None):
    """The NHWC convolution compute (:func:`tecc.topi.nn.conv2d_nhwc`)."""
    return nn.conv2d_nhwc(data, kernel, strides, padding, dilation, out_dtype)


def group_conv2d_nchw(data, kernel, strides, padding, dilation, groups, out_dtype=None):
    """The grouped convolution compute (:func:`tecc.topi.nn.group_conv2d_nchw`)."""
    return nn.group_conv2d_nchw(data, kernel, strides, padding, dilation, groups, out_dtype)


def depthwise_conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype=None):
    """The depthwise convolution compute (:func:`tecc.topi.nn.depthwise_conv2d_nchw`)."""
    return nn.depthwise_conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


def conv1d_ncw(data, kernel, strides=1, padding="VALID", dilation=1, out_dtype=None):
    """The 1-D convolution compute (:func:`tecc.topi.nn.conv1d_ncw`)."""
    return nn.conv1d_ncw(data, kernel, strides, padding, dilation, out_dtype)


def conv3d_ncdhw(data, kernel, strides, padding, dilation, groups=1, out_dtype=None):
    """The 3-D convolution compute (:func:`tecc.topi.nn.conv3d_ncdhw`)."""
    return nn.conv3d_ncdhw(data, kernel, strides, padding, dilation, groups, out_dtype)


def conv3d_ndhwc(data, kernel, strides, padding, dilation, groups=1, out_dtype=None):
    """The channels-last 3-D convolution compute (:func:`tecc.topi.nn.conv3d_ndhwc`)."""
    return nn.conv3d_ndhwc(data, kernel, strides, padding, dilation, groups, out_dtype)


def conv2d_transpose_nchw(data, kernel, strides, padding, out_dtype=None, output_padding=(0, 0)):
    """The transposed convolution compute (:func:`tecc.topi.nn.conv2d_transpose_nchw`)."""
    return nn.conv2d_transpose_nchw(data, kernel, strides, padding, out_dtype, output_padding)


def conv3d_transpose_ncdhw(data, kernel, strides, padding, out_dtype=None, output_padding=(0, 0, 0)):
    """The transposed 3-D convolution compute (:func:`tecc.topi.nn.conv3d_transpose_ncdhw`)."""
    return nn.conv3d_transpose_ncdhw(data, kernel, strides, padding, out_dtype, output_padding)


# ---------------------------------------------------------------------------------
# tile sizes
# ---------------------------------------------------------------------------------
def _lanes(dtype) -> int:
    """Vector lanes of ``dtype`` on the current CPU target (16-byte vectors without
    one)."""
    target = Target.current(allow_none=True)
    vector_bytes = 16
    if target is not None and "cpu" in target.keys:
        vector_bytes = target.vector_bytes()
    return max(vector_bytes // _dt.parse(dtype).bytes, 1)


def _registers() -> int:
    target = Target.current(allow_none=True)
    if target is not None and "cpu" in target.keys and target.vector_bytes() >= 64:
        return 32
    return 16


def pick_factor(extent, most) -> int:
    """A tile of ``extent``: all of it when it is at most ``most``; else the largest
    divisor in ``[most / 2, most]`` (no partial tile); else ``most`` (the last tile
    partial).  A symbolic ``extent`` gets ``most``."""
    most = max(int(most), 1)
    if not isinstance(extent, int):
        return most
    if extent <= most:
        return extent
    for d in range(most, (most + 1) // 2 - 1, -1):
        if d >= 1 and extent % d == 0:
            return d
    return most


def _pow2_pieces(n, lanes) -> bool:
    """True if ``n`` lanes make whole vectors and at most one power-of-two piece
    (tecc's vectorizer emits those as native vectors; other widths, 6 lanes say,
    become partial vectors that run several times slower)."""
    rest = n % lanes
    return rest & (rest - 1) == 0


def pick_vector(extent, lanes, vectors=2) -> tuple:
    """``(tile, vectorize)``: the tile of the lanes axis and whether to vectorize
    it.  The widest of ``vectors`` vectors, ..., one, half of one... whose last
    tile, when partial, is a power of two (tecc's vectorizer emits other widths,
    6 lanes say, as partial vectors that run several times slower than whole
    ones)."""
    if not isinstance(extent, int):
        return lanes, True
    width = vectors * lanes
    while width >= 2:
        if width <= extent and _pow2_pieces(extent % width, lanes):
            return width, True
        width //= 2
    return extent, False


def _tiles(out_dtype, width, channels, lanes_on_width):
    """``(oc_bn, ow_bn, vectorize)``: channels and pixels per register tile, and
    whether the lanes axis is vectorized (else unrolled).  With
    ``lanes_on_width`` (channels-first) a tile is ``oc_bn`` rows of ``ow_bn``
    pixels (one vector: a row tile of two vectors with half the channels ran at
    60% of the speed on the ResNet-50 3x3 layers, see benchmarks/topi_cpu.py);
    otherwise ``ow_bn`` pixels of ``oc_bn`` channels (one or two vectors).  Half
    the vector registers hold accumulators."""
    lanes = _lanes(out_dtype)
    budget = _registers() // 2
    if lanes_on_width:
        ow_bn, vector = pick_vector(width, lanes, vectors=1)
        vectors = -(-ow_bn // lanes)
        oc_bn = pick_factor(channels, max(1, min(8, budget // vectors)))
        return oc_bn, ow_bn, vector
    oc_bn, vector = pick_vector(channels, lanes)
    vectors = -(-oc_bn // lanes)
    ow_bn = pick_factor(width, max(1, min(8, budget // vectors)))
    return oc_bn, ow_bn, vector


# ---------------------------------------------------------------------------------
# the shared schedule
# ---------------------------------------------------------------------------------
def _place_padding(s, conv):
    """The padded input at the root over all cores (inlined when it only copies)."""
    for t in conv.op.input_tensors:
        if not tag.has(t.op.tag, tag.PAD) or not isinstance(t.op, te.ComputeOp):
            continue
        if t.op.input_tensors and all(get_const_tuple(t.shape) == get_const_tuple(x.shape)
                                      for x in t.op.input_tensors):
            s[t].compute_inline()  # nothing padded: a plain read of the data
            continue
        axes = list(s[t].op.axis)
        s[t].parallel(s[t].fuse(*axes[:2]))


def epilogue_and_accumulator(s, conv, out):
    """``(out, acc)`` of a convolution ``conv`` scheduled with its element-wise
    epilogue ``out`` (``conv`` itself when there is none).  Where the epilogue
    cannot hold the convolution -- the convolution is an output itself (an output
    stage cannot be computed inside another), or the epilogue reshapes -- the
    epilogue is scheduled as a loop nest of its own here and ``out`` becomes
    ``conv``.  ``acc`` is the stage the register tile sums into: a local cache of
    ``conv``, or ``conv`` itself, in local scope, computed inside the epilogue."""
    if out.op is not conv.op and (conv.op in s.outputs
                                  or get_const_tuple(out.shape) != get_const_tuple(conv.shape)):
        schedule_injective_from_existing(s, out)
        out = conv
    if conv.op is out.op:
        return out, s.cache_write(conv, "local")
    s[conv].set_scope("local")
    return out, conv


def schedule_conv_from_existing(s, conv, out, channels_last=False, channels_per_group=None):
    """Schedule the convolution ``conv`` (a direct convolution compute of
    :mod:`tecc.topi.nn`) in ``s``, with ``out`` its element-wise epilogue's output
    (``conv`` itself when there is none; every injective stage between them
    already inlined).

    Parameters
    ----------
    channels_last : bool
        The layout puts channels last (NHWC, NWC): channels are the vector lanes.
    channels_per_group : int, optional
        A channel tile divides this when it can (grouped convolutions).

    Returns
    -------
    Schedule
    """
    out, acc = epilogue_and_accumulator(s, conv, out)
    shape = get_const_tuple(out.shape)
    if channels_last:
        width, channels = shape[-2], shape[-1]
    else:
        width, channels = shape[-1], shape[1]
    if isinstance(channels_per_group, int) and isinstance(channels, int):
        channels = channels_per_group
    if not channels_last and _pointwise(conv, out):
        _schedule_pointwise(s, acc, out, shape, channels)
        return s
    _place_padding(s, acc)
    oc_bn, ow_bn, vector = _tiles(acc.dtype, width, channels, not channels_last)

    def lanes_loop(stage, axis):
        if vector:
            stage.vectorize(axis)
        else:
            stage.unroll(axis)  # the C compiler vectorizes it (see pick_vector)

    axes = list(s[out].op.axis)
    if channels_last:
        n, rows, x, f = axes[0], axes[1:-2], axes[-2], axes[-1]
    else:
        n, f, rows, x = axes[0], axes[1], axes[2:-1], axes[-1]
    fo, fi = s[out].split(f, factor=oc_bn)
    xo, xi = s[out].split(x, factor=ow_bn)
    if channels_last:
        s[out].reorder(n, *rows, xo, fo, xi, fi)
        outer = s[out].fuse(n, *rows) if rows else s[out].fuse(n, xo)
        lanes, unrolled = fi, xi
    else:
        s[out].reorder(n, *rows, fo, xo, fi, xi)
        outer = s[out].fuse(n, rows[0]) if rows else s[out].fuse(n, fo)
        lanes, unrolled = xi, fi
    s[out].parallel(outer)
    s[out].unroll(unrolled)
    lanes_loop(s[out], lanes)
    at = fo if channels_last else xo

    s[acc].compute_at(s[out], at)
    a_axes = list(s[acc].op.axis)
    if channels_last:
        a_outer, a_unrolled, a_lanes = a_axes[:-2], a_axes[-2], a_axes[-1]
    else:
        a_outer, a_unrolled, a_lanes = [a_axes[0]] + a_axes[2:-1], a_axes[1], a_axes[-1]
    s[acc].reorder(*a_outer, *s[acc].op.reduce_axis, a_unrolled, a_lanes)
    s[acc].unroll(a_unrolled)
    lanes_loop(s[acc], a_lanes)
    return s


def _pointwise(conv, out) -> bool:
    """True for a channels-first 2-D convolution that is a plain GEMM over the
    pixels: a 1x1 kernel, stride 1, no padding (the input's pixels of a channel
    contiguous, row after row, as the output's are)."""
    shape = get_const_tuple(out.shape)
    if len(shape) != 4 or not all(isinstance(d, int) for d in shape):
        return False
    attrs = conv.op.attrs or {}
    strides = attrs.get("strides")
    if strides is None or any(v != 1 for v in get_const_tuple(list(strides))):
        return False
    if len(conv.op.input_tensors) != 2:
        return False
    data, kernel = conv.op.input_tensors
    kshape, dshape = get_const_tuple(kernel.shape), get_const_tuple(data.shape)
    return len(kshape) == 4 and tuple(kshape[2:]) == (1, 1) and tuple(dshape[2:]) == tuple(shape[2:])


#: tasks a parallel loop should offer at least, so that cores finishing early find
#: work (7 tasks on 2 cores leave one core idle for a seventh of the time)
MIN_TASKS = 16


def _channel_block(channels, oc_bn, tasks) -> int:
    """Channels per task: the largest multiple of ``oc_bn`` dividing ``channels``
    that leaves at least :data:`MIN_TASKS` tasks when ``tasks`` other tasks
    (images by row tiles) multiply them (all channels when nothing divides)."""
    if not isinstance(channels, int) or channels % oc_bn:
        return channels
    tiles = channels // oc_bn
    for blocks in range(1, tiles + 1):
        if tiles % blocks == 0 and blocks * tasks >= MIN_TASKS:
            return channels // blocks
    return oc_bn


def _schedule_pointwise(s, acc, out, shape, channels):
    """A 1x1 convolution as a register-tiled GEMM: a tile of ``oc_bn`` channels by
    ``rh`` whole rows (``rh * width`` pixels, contiguous in the input and the
    output, vectorized as one run), the channels of the input the reduction
    outside.  A task of the cores is a block of channels by a row tile: it first
    copies the row tile of every input channel into one contiguous panel (the
    rows of a panel sit in fewer cache lines and stay in L1 while the channel
    tiles of the block sweep it), then runs the channel tiles of the block."""
    lanes = _lanes(acc.dtype)
    height, width = shape[2], shape[3]
    best = None
    for rh in range(1, height + 1):
        px = rh * width
        if height % rh or not _pow2_pieces(px, lanes):
            continue
        vectors = -(-px // lanes)
        if vectors > 4:
            break
        best = rh
    rh = best or 1
    # registers per channel: a run that is not whole vectors ends in one narrower
    # vector (28 floats in 8 lanes: 8 + 8 + 8 + 4, four registers)
    vectors = -(-rh * width // lanes)
    oc_bn = pick_factor(channels, max(1, min(8, _registers() // 2 // vectors)))
    block = _channel_block(channels, oc_bn, shape[0] * (height // rh))
    data = acc.op.input_tensors[0]
    panel = s.cache_read(data, "global", [acc])
    _place_padding(s, panel)
    n, f, y, x = s[out].op.axis
    fb, f = s[out].split(f, factor=block)
    fo, fi = s[out].split(f, factor=oc_bn)
    yo, yi = s[out].split(y, factor=rh)
    s[out].reorder(n, fb, yo, fo, fi, yi, x)
    outer = s[out].fuse(n, fb, yo)
    px = s[out].fuse(yi, x)
    s[out].parallel(outer)
    s[out].unroll(fi)
    s[out].vectorize(px)
    s[panel].compute_at(s[out], outer)
    pc, py, pw = s[panel].op.axis[1:]
    s[panel].storage_align(pc, lanes, 0)
    s[panel].vectorize(s[panel].fuse(py, pw))
    s[acc].compute_at(s[out], fo)
    an, af, ay, ax = s[acc].op.axis
    apx = s[acc].fuse(ay, ax)
    s[acc].reorder(an, *s[acc].op.reduce_axis, af, apx)
    s[acc].unroll(af)
    s[acc].vectorize(apx)


def _schedule(outs, tags, what, channels_last=False, per_group=False):
    outs, s = new_schedule(outs)
    out = outs[0]
    for op in find_anchors(s, out, tags, what, f"a {' or '.join(tags)}"):
        conv = op.output(0)
        per = _channels_per_group(conv) if per_group else None
        schedule_conv_from_existing(s, conv, out, channels_last, per)
    return s


def _channels_per_group(conv):
    """Output channels per group of a grouped convolution (None when unknown)."""
    groups = conv.op.attrs.get("groups")
    groups = get_const_tuple([groups])[0] if groups is not None else None
    channels = get_const_tuple(conv.shape)[1]
    if not isinstance(groups, int) or not isinstance(channels, int) or groups < 1:
        return None
    return channels // groups


# ---------------------------------------------------------------------------------
# conv2d_nchw: the tunable task
# ---------------------------------------------------------------------------------
def define_conv_knobs(cfg, conv, out):
    """The knobs of the ``"conv2d_nchw.x86"`` template for the convolution ``conv``
    (its output ``out``), and the flop count:

    ``tile_oc``
        output channels per register tile (its inner factor; unrolled);
    ``tile_ow``
        pixels of a row per register tile (its inner factor; the vector lanes);
    ``tile_ic``
        the input channels' reduction split: the inner factor runs innermost of
        the reduction, under the kernel's rows and columns (1: channels outermost);
    ``unroll_kw``
        unroll the loop over the kernel's columns.
    """
    shape = get_const_tuple(out.shape)
    rc, ry, rx = conv.op.reduce_axis
    extents = get_const_tuple([rc.dom.extent, ry.dom.extent, rx.dom.extent])
    if not all(isinstance(d, int) for d in tuple(shape) + tuple(extents)):
        raise InstantiationError(f"conv2d_nchw.x86: the convolution {conv.op.name!r} has the symbolic shape "
                                 f"{shape}; tune it with constant shapes")
    channels, width = shape[1], shape[3]
    cfg.define_split("tile_oc", channels, num_outputs=2, max_factor=16)
    cfg.define_split("tile_ow", width, num_outputs=2, max_factor=32)
    cfg.define_split("tile_ic", extents[0], num_outputs=2, max_factor=64)
    cfg.define_knob("unroll_kw", [True, False])
    flop = 2 * extents[0] * extents[1] * extents[2]
    for d in shape:
        flop *= d
    cfg.add_flop(flop)


def schedule_conv_tuned(cfg, s, conv, out):
    """Schedule ``conv`` (channels first) with ``cfg``'s register tile: as
    :func:`schedule_conv_from_existing`'s general path, the tile sizes, the
    reduction's order and the unrolling from the knobs of :func:`define_conv_knobs`."""
    out, acc = epilogue_and_accumulator(s, conv, out)
    _place_padding(s, acc)
    n, f, y, x = s[out].op.axis
    fo, fi = cfg["tile_oc"].apply(s, out, f)
    xo, xi = cfg["tile_ow"].apply(s, out, x)
    s[out].reorder(n, y, fo, xo, fi, xi)
    s[out].parallel(s[out].fuse(n, y))
    s[out].unroll(fi)
    s[out].vectorize(xi)
    s[acc].compute_at(s[out], xo)
    an, af, ay, ax = s[acc].op.axis
    rc, ry, rx = s[acc].op.reduce_axis
    rco, rci = cfg["tile_ic"].apply(s, acc, rc)
    s[acc].reorder(an, ay, rco, ry, rx, rci, af, ax)
    if cfg["unroll_kw"].val:
        s[acc].unroll(rx)
    s[acc].unroll(af)
    s[acc].vectorize(ax)
    return s


def _conv2d_nchw_template(cfg, outs):
    """The ``"conv2d_nchw.x86"`` template: the knobs of :func:`define_conv_knobs`;
    with no tuned config (the fallback), the hand-picked schedule of
    :func:`schedule_conv_from_existing` (1x1 convolutions as packed GEMMs)."""
    outs, s = new_schedule(outs)
    out = outs[0]
    for op in find_anchors(s, out, (CONV2D_NCHW,), "schedule_conv2d_nchw", f"a {CONV2D_NCHW}"):
        conv = op.output(0)
        if flat.is_flat(conv):
            # the untuned compute over flattened pixels (see conv2d_nchw): its own schedule
            flat.schedule_conv2d_nchw_flat(s, conv, out)
            continue
        define_conv_knobs(cfg, conv, out)
        if cfg.is_fallback:
            schedule_conv_from_existing(s, conv, out)
        else:
            schedule_conv_tuned(cfg, s, conv, out)
    return s


_schedule_conv2d_nchw_task = register_topi_schedule("conv2d_nchw.x86")(_conv2d_nchw_template)


def _conv2d_nchw_flat_template(cfg, outs):
    """The ``"conv2d_nchw_flat.x86"`` template's schedule: the plan its compute laid
    out (the knobs are all defined there) scheduled by
    :func:`.conv2d_flat.schedule_conv2d_nchw_flat`."""
    outs, s = new_schedule(outs)
    out = outs[0]
    for op in find_anchors(s, out, (CONV2D_NCHW,), "schedule_conv2d_nchw", f"a {CONV2D_NCHW}"):
        conv = op.output(0)
        if not flat.is_flat(conv):
            raise InstantiationError(f"conv2d_nchw_flat.x86: the convolution {op.name!r} is not the flat "
                                     "compute of conv2d_nchw_flat.x86; schedule it with conv2d_nchw.x86")
        flat.schedule_conv2d_nchw_flat(s, conv, out)
    return s


_schedule_conv2d_nchw_flat_task = register_topi_schedule("conv2d_nchw_flat.x86")(_conv2d_nchw_flat_template)


@register_schedule(CONV2D_NCHW, "cpu")
def schedule_conv2d_nchw(outs):
    """The CPU schedule of ``conv2d_nchw`` (and of element-wise ops after it):
    register tiles of output channels by a row's pixels, vectorized along the
    row, the tiles spread over the cores (see the module's description); the
    tuned config of the task ``"conv2d_nchw.x86"`` when one is dispatched
    (``autotvm.apply_history_best``).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s); the first is the final one.

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    if has_workload(outs, "conv2d_nchw_flat.x86"):
        return _schedule_conv2d_nchw_flat_task(outs)
    return schedule_either(outs, "conv2d_nchw.x86", _schedule_conv2d_nchw_task, _conv2d_nchw_template)


@register_schedule(CONV2D_NHWC, "cpu")
def schedule_conv2d_nhwc(outs):
    """The CPU schedule of ``conv2d_nhwc``: register tiles of a row's pixels by
    output channels, vectorized along the channels."""
    return _schedule(outs, (CONV2D_NHWC,), "schedule_conv2d_nhwc", channels_last=True)


@register_schedule(GROUP_CONV2D_NCHW, "cpu")
def schedule_group_conv2d_nchw(outs):
    """The CPU schedule of ``group_conv2d_nchw``: as :func:`schedule_conv2d_nchw`,
    a channel tile inside one group when the group's channels allow."""
    return _schedule(outs, (GROUP_CONV2D_NCHW, CONV2D_NCHW), "schedule_group_conv2d_nchw", per_group=True)


@register_schedule(DEPTHWISE_CONV2D_NCHW, "cpu")
def schedule_depthwise_conv2d_nchw(outs):
    """The CPU schedule of ``depthwise_conv2d_nchw``: tiles of channels by a row's
    pixels, vectorized along the row."""
    return _schedule(outs, (DEPTHWISE_CONV2D_NCHW,), "schedule_depthwise_conv2d_nchw")


@register_schedule(CONV1D_NCW, "cpu")
def schedule_conv1d_ncw(outs):
    """The CPU schedule of ``conv1d_ncw``: tiles of channels by pixels, vectorized
    along the width."""
    return _schedule(outs, (CONV1D_NCW,), "schedule_conv1d_ncw")


@register_schedule(CONV1D_NWC, "cpu")
def schedule_conv1d_nwc(outs):
    """The CPU schedule of ``conv1d_nwc``: vectorized along the channels."""
    return _schedule(outs, (CONV1D_NWC,), "schedule_conv1d_nwc", channels_last=True)


@register_schedule((CONV3D_NCDHW, GROUP_CONV3D_NCDHW), "cpu")
def schedule_conv3d_ncdhw(outs):
    """The CPU schedule of ``conv3d_ncdhw`` (grouped too): as :func:`schedule_conv2d_nchw`'s
    hand-picked one, tiles of channels by a row's pixels vectorized along the row, the
    batch and depth planes over the cores."""
    return _schedule(outs, (CONV3D_NCDHW, GROUP_CONV3D_NCDHW), "schedule_conv3d_ncdhw", per_group=True)


@register_schedule(CONV3D_NDHWC, "cpu")
def schedule_conv3d_ndhwc(outs):
    """The CPU schedule of ``conv3d_ndhwc``: vectorized along the channels."""
    return _schedule(outs, (CONV3D_NDHWC,), "schedule_conv3d_ndhwc", channels_last=True)


@register_schedule(CONV3D_TRANSPOSE_NCDHW, "cpu")
def schedule_conv3d_transpose_ncdhw(outs):
    """The CPU schedule of ``conv3d_transpose_ncdhw``: as :func:`schedule_conv3d_ncdhw`."""
    return _schedule(outs, (CONV3D_TRANSPOSE_NCDHW,), "schedule_conv3d_transpose_ncdhw")


@register_schedule(CONV2D_TRANSPOSE_NCHW, "cpu")
def schedule_conv2d_transpose_nchw(outs):
    """The CPU schedule of ``conv2d_transpose_nchw``: the spread and padded input
    at the root, then as :func:`schedule_conv2d_nchw`."""
    return _schedule(outs, (CONV2D_TRANSPOSE_NCHW,), "schedule_conv2d_transpose_nchw")
