"""Channels-first convolutions on CPUs as one GEMM over the flattened pixels.

The direct schedule of :mod:`.conv2d` vectorizes the pixels of one output row.
That leaves the rows of the deep layers of a CNN (14 and 7 pixels in ResNet-50)
with vectors of 4 and 2 lanes, and a strided convolution with strided loads.  The
compute here removes both limits:

* **the input is repacked once per call** (``FlatInput``): padded, and for a stride
  ``s`` split into the ``s x s`` phases of its rows and columns (``plane[a, b][i, j]
  = padded[s i + a, s j + b]``), each phase a plane of ``Hq`` rows of ``Wq``
  columns.  A tap ``(ry, rx)`` of the kernel then reads one plane at a constant
  offset, and output pixel ``(y, x)`` reads element ``y * Wq + x`` of it: every tap
  is a *contiguous* run over the pixels of the whole image;
* **the convolution is computed over those flattened pixels** (``OutFlat[n, f, p]``,
  ``p = y * Wq + x``): the ``Wq - OW`` columns at the end of each row are computed
  and never read (a few percent: 2 of 9 on a 7x7 layer, 2 of 58 on a 56x56 one);
* **a crop** (``Out[n, f, y, x] = OutFlat[n, f, y * Wq + x]``) gives the NCHW
  output; the element-wise epilogue of a fused kernel (bias, batch norm, relu,
  residual add) is inlined into it.

A 1x1 kernel has a single tap, so its input can be repacked in *panels* instead
(``PanelInput[n, t, c, i]``: pixel ``t * tile_p + i`` of channel ``c``), as a packed
GEMM lays out its ``B``: a tile's reduction over the channels then reads one
contiguous run rather than one strided run per channel (on two AVX2 cores, ResNet-50's
1x1 layer 1024->256 at 14x14 alone went from 91 to 153 GFLOP/s; in a whole-model run
its 1x1 layers of 1024 and 2048 input channels went from 60-90 to 92-121).  A strided
kernel of several taps and many filters reads *im2col* panels: every tap's pixels
copied into the panel, the reduction one loop over channels and taps
(:func:`panel_kernel`).

The schedule (:func:`schedule_conv2d_nchw_flat`) gives each task of the cores a
block of output channels by a block of output rows; the task computes its part of
``OutFlat`` in a buffer of its own, in register tiles of ``tile_c`` channels by
``tile_p`` pixels (on AVX2 2 vectors by 6 channels for a 1x1 kernel, 5 for a larger
one: each input vector loaded once per tap and used by every channel of the tile,
each weight broadcast once and used by both vectors), then crops it through the
epilogue into the output.  The plan (:func:`plan_conv2d_nchw_flat`) picks the rows
per task and the row stride ``Wq`` (a few columns wider than the padded row when
that makes the task's pixels a whole number of tiles); ``OutFlat`` reaches past the
last task's last tile and last channel block, so no tile needs a bounds check.

The compute is the tunable task ``"conv2d_nchw_flat.x86"`` (:func:`define_flat_knobs`:
the register tile, the rows and channel tiles per task, the loop order).
``topi.x86.conv2d_nchw`` picks it or the direct one (``"conv2d_nchw.x86"``) as TVM's
op strategies pick an implementation: by the measured cost of their tuned configs
where the tuning records have both, the tuned one where they have one, and for an
untuned float32 convolution where the direct one is not as fast
(:func:`direct_is_better`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ... import te, tir
from .. import tag
from ..nn.conv2d import pad_tuple, spatial_tuple
from ..utils import get_const_tuple
from ...tuner.task.space import InstantiationError
from .injective import schedule_injective_from_existing

#: the attrs key of the plan on the flat convolution's operation
PLAN_KEY = "flat_plan"

#: tasks a parallel loop should offer at least (OpenMP deals them out in equal
#: shares: with many tasks, a partial last one costs each core a small part)
MIN_TASKS = 16

#: floats of ``OutFlat`` one task may hold (its buffer lives on the task's stack)
TASK_BUFFER_FLOATS = 16384


@dataclass(frozen=True)
class FlatPlan:
    """How one convolution is laid out and tiled (all sizes in elements).

    Attributes
    ----------
    stride, dilation : (int, int)
    pad_top, pad_left : int
        The padding before the rows and the columns (the padding after them only
        sets the output size).
    out_height, out_width : int
        The output's spatial size.
    phases_y, phases_x : int
        The phases of the rows and columns the taps read (the stride, or 1 for a
        kernel of one row or column).
    plane_rows, row_stride : int
        ``Hq`` and ``Wq``: the rows of a phase plane and the elements per row.
    flat_rows : int
        Rows of ``Wq`` elements per input channel in ``FlatInput`` (the planes and
        the slack the last tiles read beyond them).
    flat_pixels, flat_channels : int
        ``OutFlat``'s extents along the flattened pixels and the output channels:
        whole tiles and whole channel blocks for every task (the crop reads
        ``out_height * row_stride`` pixels and the filters' channels of them).
    rows_per_task : int
        Output rows per task (divides ``out_height``).
    channels_per_task : int
        Output channels per task (a multiple of ``tile_c``, or all of them).
    tile_c, tile_p : int
        The register tile: output channels (unrolled) by pixels (vectorized).
    inline_input : bool
        ``FlatInput`` is the data itself, read in place (no padding, stride 1, rows
        of exactly ``Wq``, and no tile reads past the data).
    pixels_outer : bool
        A task loops over its pixel tiles outside its channel tiles (each pixel
        tile's input stays in cache while the task's filters sweep it), else over
        its channel tiles outside (the task's input is swept once per channel tile,
        each tile's filters stay in cache).
    panels : bool
        The input is repacked in *panels* (``PanelInput[n, t, k, i]`` = tap ``k %
        (KH KW)`` of channel ``k // (KH KW)`` at output pixel ``t * tile_p + i``; a
        1x1 kernel has one tap): a tile's reduction then reads one contiguous run,
        as a packed GEMM reads its panel of B, instead of one strided run per
        channel and tap (``row_stride`` is the output's width, and every task starts
        on a tile: see :func:`panel_rows_fit`; which kernels: :func:`panel_kernel`).
    """

    stride: tuple
    dilation: tuple
    pad_top: int
    pad_left: int
    out_height: int
    out_width: int
    phases_y: int
    phases_x: int
    plane_rows: int
    row_stride: int
    flat_rows: int
    flat_pixels: int
    flat_channels: int
    rows_per_task: int
    channels_per_task: int
    tile_c: int
    tile_p: int
    inline_input: bool
    pixels_outer: bool = False
    panels: bool = False

    def tap_offset(self, ry, rx):
        """Where tap ``(ry, rx)`` starts in an input channel of ``FlatInput`` (ints,
        or expressions of the reduction variables)."""
        return _tap_offset(self.stride, self.dilation, (self.phases_y, self.phases_x), self.plane_rows,
                           self.row_stride, ry, rx)

    def as_attrs(self) -> dict:
        """The plan as plain data (the flat convolution's ``attrs[PLAN_KEY]``)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _static(*values) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _task_pixels(rows: int, row_stride: int, out_width: int) -> int:
    """Flattened pixels a task of ``rows`` output rows computes (its last row stops
    at the last output column)."""
    return (rows - 1) * row_stride + out_width


def _pick_rows(out_height, out_width, min_stride, tile_p, tile_c, channel_tiles, batch):
    """``(rows per task, row stride)``: the pair with the fewest pixels computed
    (whole tiles per task, the columns past the output's included) among row
    counts dividing ``out_height`` whose task buffer of one channel tile fits
    :data:`TASK_BUFFER_FLOATS` (one row always qualifies) and strides up to a tile
    wider than ``min_stride``; among pairs within 3% of the fewest, the most rows
    per task that still leaves :data:`MIN_TASKS` tasks (or the fewest rows when
    none does)."""
    options = []
    for rows in range(1, out_height + 1):
        if out_height % rows:
            continue
        if rows > 1 and tile_c * _task_pixels(rows, min_stride + tile_p, out_width) > TASK_BUFFER_FLOATS:
            break
        stride = _best_stride(rows, out_width, min_stride, tile_p)
        options.append((_computed(rows, stride, out_height, out_width, min_stride, tile_p), rows, stride))
    fewest = min(c for c, _, _ in options)
    near = [(rows, stride) for c, rows, stride in options if c <= fewest * 1.03]
    enough = [(rows, stride) for rows, stride in near if batch * (out_height // rows) * channel_tiles >= MIN_TASKS]
    return max(enough) if enough else min(near)


def _computed(rows, stride, out_height, out_width, min_stride, tile_p) -> int:
    """Pixels of one channel computed with ``rows`` rows per task and row stride
    ``stride``: whole tiles per task, the columns past the output's included."""
    tiles = _cdiv(_task_pixels(rows, stride, out_width), tile_p)
    return (out_height // rows) * tiles * tile_p + out_height * (stride - min_stride)


def _best_stride(rows, out_width, min_stride, tile_p) -> int:
    """The row stride from ``min_stride`` up to a tile wider with the fewest pixels
    computed for tasks of ``rows`` rows (the narrowest among equals)."""
    def cost(st):
        return _cdiv(_task_pixels(rows, st, out_width), tile_p) * tile_p + rows * (st - min_stride), st

    return min(range(min_stride, min_stride + tile_p), key=cost)


#: filters from which a strided kernel of several taps reads im2col panels
TAP_PANEL_MIN_FILTERS = 128


def panel_kernel(kh, kw, stride, filters) -> bool:
    """Whether a convolution reads its input in panels (:attr:`FlatPlan.panels`):
    a 1x1 kernel always; a strided kernel of several taps with at least
    :data:`TAP_PANEL_MIN_FILTERS` filters as *im2col* panels, every tap's pixels
    copied (``kh * kw`` times the input, each copied value then used by every filter).
    Measured alone on two AVX2 cores, ResNet-50's strided 3x3 layers (128 to 512
    filters) ran at 128-133 GFLOP/s in panels against 71-89 over phase planes; with
    64 filters the copies did not pay everywhere (3x3/2 64->64 at 56x56: 92 against
    105; a 7x7 stem on 3 channels: 113 against 157), and unit-stride kernels gain
    nothing (the flat layout already reads every tap in place)."""
    if kh == kw == 1:
        return True
    return tuple(stride) != (1, 1) and filters >= TAP_PANEL_MIN_FILTERS


def panel_rows_fit(rows, out_height, out_width, tile_p) -> bool:
    """Whether tasks of ``rows`` output rows can read their input in panels
    (:func:`panel_kernel`): every task must start on a tile (``rows * out_width`` a whole number of
    tiles), unless one task covers every row."""
    return rows == out_height or (rows * out_width) % tile_p == 0


def _pick_panel_rows(out_height, out_width, tile_p, tile_c, channel_tiles, batch):
    """Rows per task for a kernel read in panels, or None where no row count
    fits: among the divisors of ``out_height`` that :func:`panel_rows_fit` and
    whose task buffer of one channel tile fits :data:`TASK_BUFFER_FLOATS`, the most
    that still leave :data:`MIN_TASKS` tasks (or the fewest when none does)."""
    options = [rows for rows in range(1, out_height + 1)
               if out_height % rows == 0 and panel_rows_fit(rows, out_height, out_width, tile_p)
               and tile_c * _cdiv(rows * out_width, tile_p) * tile_p <= TASK_BUFFER_FLOATS]
    if not options:
        return None
    enough = [rows for rows in options if batch * (out_height // rows) * channel_tiles >= MIN_TASKS]
    return max(enough) if enough else min(options)


def _pick_channels(channels, tile_c, tasks_per_block, task_pixels) -> int:
    """Output channels per task: the most tiles of ``tile_c`` that leave
    :data:`MIN_TASKS` tasks (``tasks_per_block`` of them per channel block) and fit
    :data:`TASK_BUFFER_FLOATS` (all channels when one tile covers them)."""
    tiles = _cdiv(channels, tile_c)
    best = 1
    for per in range(1, tiles + 1):
        blocks = _cdiv(tiles, per)
        if per * tile_c * task_pixels > TASK_BUFFER_FLOATS and per > 1:
            break
        if blocks * tasks_per_block >= MIN_TASKS or per == 1:
            best = per
        else:
            break
    return min(channels, best * tile_c)


#: output channels per register tile the template offers (those that fit the registers)
TILE_CHANNELS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28)
#: vectors of pixels per register tile the template offers
TILE_VECTORS = (1, 2, 3, 4)
#: channel tiles per task the template offers
TASK_CHANNEL_TILES = (1, 2, 4, 8, 16, 32, 64)
#: the two loop orders inside a task
ORDERS = ("channels_outer", "pixels_outer")


@dataclass(frozen=True)
class FlatKnobs:
    """The choices a tuning config makes for the flat convolution (the knobs of
    the task ``"conv2d_nchw_flat.x86"``, see :func:`define_flat_knobs`).

    Attributes
    ----------
    tile_c, vectors : int
        The register tile: output channels by vectors of pixels.
    rows : int
        Output rows per task (a divisor of the output's height).
    channel_tiles : int
        Register tiles of output channels per task.
    order : str
        ``"channels_outer"`` or ``"pixels_outer"`` (:attr:`FlatPlan.pixels_outer`).
    """

    tile_c: int
    vectors: int
    rows: int
    channel_tiles: int
    order: str

    def check(self, filters, out_height):
        """Raise :class:`InstantiationError` when the choices break a limit (the
        rows must divide ``out_height``; a task must not hold an empty tile)."""
        name = "conv2d_nchw_flat.x86"
        if out_height % self.rows:
            raise InstantiationError(f"{name}: {self.rows} rows per task do not divide the output's "
                                     f"{out_height} rows")
        if (self.channel_tiles - 1) * self.tile_c >= filters:
            raise InstantiationError(f"{name}: {self.channel_tiles} tiles of {self.tile_c} channels per task "
                                     f"leave a tile empty ({filters} output channels); fewer tiles per task")
        if self.order not in ORDERS:
            raise InstantiationError(f"{name}: the order {self.order!r} is not one of {list(ORDERS)}")


def register_tiles(filters, registers, kernel_taps) -> list:
    """``(tile_c, vectors)`` pairs whose accumulators, input vectors and broadcast
    weight fit ``registers`` vector registers (with several taps the next tap's
    inputs load early: a vector per tile's vector more)."""
    out = []
    for vectors in TILE_VECTORS:
        operands = vectors + 1 + (vectors if kernel_taps > 1 else 0)
        for tile_c in TILE_CHANNELS:
            if tile_c <= filters and tile_c * vectors + operands <= registers:
                out.append((tile_c, vectors))
    return out


def define_flat_knobs(cfg, data, kernel, strides, padding, dilation, out_dtype, registers):
    """Define the knobs of the task ``"conv2d_nchw_flat.x86"`` on ``cfg`` and count
    its flops; return the :class:`FlatKnobs` of ``cfg``'s point.

    ``tile``
        the register tile ``[channels, vectors of pixels]``, among those that fit
        the vector registers (:func:`register_tiles`);
    ``rows``
        output rows per task, a divisor of the output's height;
    ``channel_tiles``
        register tiles of output channels per task (the tasks are rows by
        channel blocks);
    ``order``
        ``channels_outer`` or ``pixels_outer``: which loop of a task's tiles runs
        outside.

    Raises
    ------
    InstantiationError
        When the convolution is not one the flat compute applies to (a symbolic
        shape, a dtype other than float32, several groups).
    """
    shape = _conv_shape(data, kernel, strides, padding, dilation, out_dtype)
    if shape is None:
        raise InstantiationError(
            "conv2d_nchw_flat.x86: the flat convolution needs float32 data and kernel of constant shapes "
            f"with matching channels (got {data.dtype} {tuple(data.shape)} and {kernel.dtype} "
            f"{tuple(kernel.shape)}); tune conv2d_nchw.x86 instead")
    batch, channels, filters, kh, kw, stride, _, _, _, (out_h, out_w) = shape
    # a kernel read in panels reduces over its taps in one loop: no next tap loaded early
    tiles = register_tiles(filters, registers, 1 if panel_kernel(kh, kw, stride, filters) else kh * kw)
    cfg.define_knob("tile", [list(t) for t in tiles])
    cfg.define_knob("rows", [r for r in range(1, out_h + 1) if out_h % r == 0])
    most = _cdiv(filters, min(t[0] for t in tiles))
    cfg.define_knob("channel_tiles", [c for c in TASK_CHANNEL_TILES if c <= most])
    cfg.define_knob("order", list(ORDERS))
    cfg.add_flop(2 * batch * filters * out_h * out_w * channels * kh * kw)
    tile_c, vectors = cfg["tile"].val
    return FlatKnobs(int(tile_c), int(vectors), int(cfg["rows"].val), int(cfg["channel_tiles"].val),
                     str(cfg["order"].val))


def plan_conv2d_nchw_flat(data, kernel, strides, padding, dilation, out_dtype, lanes, registers, knobs=None):
    """The :class:`FlatPlan` of a 2-D NCHW convolution (OIHW kernel, one group), or
    None when the flat compute does not apply: a symbolic shape, a dtype other
    than float32, or channels that disagree (the direct compute then reports it).

    Parameters
    ----------
    data, kernel : Tensor
        ``[N, C, H, W]`` and ``[F, C, KH, KW]``.
    strides, padding, dilation
        As for :func:`tecc.topi.nn.conv2d_nchw`.
    out_dtype : str
    lanes : int
        Vector lanes of float32 on the target (8 with AVX2).
    registers : int
        Vector registers of the target (16 with AVX2, 32 with AVX-512).
    knobs : FlatKnobs, optional
        The register tile, the rows and channels per task and the loop order, as a
        tuning config chose them (the task ``"conv2d_nchw_flat.x86"``); without
        them the plan picks its own (see the module's description).

    Raises
    ------
    InstantiationError
        When ``knobs`` break a limit: a register tile whose accumulators and
        operands do not fit the vector registers, or a task whose part of
        ``OutFlat`` does not fit :data:`TASK_BUFFER_FLOATS`.
    """
    shape = _conv_shape(data, kernel, strides, padding, dilation, out_dtype)
    if shape is None:
        return None
    batch, channels, filters, kh, kw, (sh, sw), (dh, dw), (pt, pl), (padded_h, padded_w), (out_h, out_w) = shape
    min_stride = _cdiv(padded_w, sw)
    panel_candidate = panel_kernel(kh, kw, (sh, sw), filters)  # the input may be packed in panels
    if knobs is None:
        tile_p = 2 * lanes
        # accumulators: the registers but the tile's input vectors and a broadcast weight;
        # with several taps the next tap's inputs are loaded early and take two more
        # (6 x 16 on a 3x3 kernel ran at 50 GFLOP/s on one AVX2 core, 5 x 16 at 75)
        spare = 4 if panel_candidate else 6  # a panel's taps are one reduction: no next tap to load early
        tile_c = max(1, min(filters, (registers - spare) // 2))
        rows = (_pick_panel_rows(out_h, out_w, tile_p, tile_c, _cdiv(filters, tile_c), batch) if panel_candidate
                else None)
        panels = rows is not None
        if panels:
            row_stride = out_w
        else:
            rows, row_stride = _pick_rows(out_h, out_w, min_stride, tile_p, tile_c, _cdiv(filters, tile_c), batch)
        task_pixels = _task_pixels(rows, row_stride, out_w)
        per_task = _pick_channels(filters, tile_c, batch * (out_h // rows), task_pixels)
        pixels_outer = None
    else:
        tile_c, tile_p, rows = knobs.tile_c, knobs.vectors * lanes, knobs.rows
        knobs.check(filters, out_h)
        panels = panel_candidate and panel_rows_fit(rows, out_h, out_w, tile_p)
        row_stride = out_w if panels else _best_stride(rows, out_w, min_stride, tile_p)
        task_pixels = _task_pixels(rows, row_stride, out_w)
        per_task = min(filters, knobs.channel_tiles * tile_c)
        held = per_task * _cdiv(task_pixels, tile_p) * tile_p
        if held > TASK_BUFFER_FLOATS:
            raise InstantiationError(
                f"conv2d_nchw_flat.x86: a task of {rows} output row(s) by {per_task} channel(s) holds {held} "
                f"floats of OutFlat, more than the {TASK_BUFFER_FLOATS} a task's buffer may (fewer rows or "
                "channel tiles per task)")
        pixels_outer = knobs.order == "pixels_outer"
    tasks = out_h // rows
    phases_y, phases_x = (sh if kh > 1 else 1), (sw if kw > 1 else 1)
    plane_rows = _cdiv(padded_h, sh)
    # OutFlat reaches past the last task's last tile and last channel block, so that
    # no tile of any task needs a bounds check (the crop reads none of the extra)
    flat_pixels = (tasks - 1) * rows * row_stride + _cdiv(task_pixels, tile_p) * tile_p
    flat_channels = _cdiv(filters, per_task) * per_task
    taps = [_tap_offset((sh, sw), (dh, dw), (phases_y, phases_x), plane_rows, row_stride, ry, rx)
            for ry in range(kh) for rx in range(kw)]
    flat_rows = max(_cdiv(max(taps) + flat_pixels, row_stride), phases_y * phases_x * plane_rows)
    height, width = get_const_tuple(data.shape)[2:]
    # read the data in place when it already is the flat input and no tile reads past it
    inline = (not panels and sh == sw == 1 and padded_h == height and padded_w == width and kh == kw == 1
              and row_stride == width and flat_pixels == height * width)
    if pixels_outer is None:
        # the loop inside a task sweeps, once per iteration of the loop outside, either the
        # task's input (channel tiles outside) or the task's filters (pixel tiles
        # outside): sweep the smaller, which then stays in cache
        reach = max(_tap_offset((sh, sw), (dh, dw), (1, 1), plane_rows, row_stride, ry, rx)
                    for ry in range(kh) for rx in range(kw))
        input_elems = channels * phases_y * phases_x * (task_pixels + reach)
        filter_elems = per_task * channels * kh * kw
        pixels_outer = filter_elems < input_elems
    return FlatPlan((sh, sw), (dh, dw), pt, pl, out_h, out_w, phases_y, phases_x, plane_rows, row_stride,
                    height if inline else flat_rows, flat_pixels, flat_channels, rows, per_task, tile_c, tile_p,
                    inline, pixels_outer=pixels_outer, panels=panels)


def _conv_shape(data, kernel, strides, padding, dilation, out_dtype):
    """The static facts of a convolution the flat compute applies to, or None:
    ``(batch, channels, filters, kh, kw, stride, dilation, (pad_top, pad_left),
    padded (h, w), output (h, w))``."""
    if len(data.shape) != 4 or len(kernel.shape) != 4:
        return None
    if not (str(data.dtype) == str(kernel.dtype) == str(out_dtype or data.dtype) == "float32"):
        return None
    batch, channels, height, width = get_const_tuple(data.shape)
    filters, kchannels, kh, kw = get_const_tuple(kernel.shape)
    if not _static(batch, channels, height, width, filters, kchannels, kh, kw) or channels != kchannels:
        return None
    what = "conv2d_nchw"
    sh, sw = spatial_tuple(strides, 2, what, "stride", 1)
    dh, dw = spatial_tuple(dilation, 2, what, "dilation", 1)
    if not _static(sh, sw, dh, dw):
        return None
    (pt, pl), (pb, pr) = pad_tuple(padding, [(kh - 1) * dh + 1, (kw - 1) * dw + 1], what)
    if not _static(pt, pl, pb, pr):
        return None
    padded_h, padded_w = height + pt + pb, width + pl + pr
    out_h = (padded_h - (kh - 1) * dh - 1) // sh + 1
    out_w = (padded_w - (kw - 1) * dw - 1) // sw + 1
    if out_h < 1 or out_w < 1:
        return None
    return (batch, channels, filters, kh, kw, (sh, sw), (dh, dw), (pt, pl), (padded_h, padded_w), (out_h, out_w))


def _tap_offset(stride, dilation, phases, plane_rows, row_stride, ry, rx):
    """Where tap ``(ry, rx)`` (ints or expressions) starts in an input channel of
    ``FlatInput``: its phase plane, then its row and column inside the plane."""
    (sh, sw), (dh, dw), (py, px) = stride, dilation, phases
    ky, kx = ry * dh, rx * dw
    if sh == 1 and sw == 1:
        return ky * row_stride + kx
    phase = (ky % sh if py > 1 else 0) * px + (kx % sw if px > 1 else 0)
    return phase * plane_rows * row_stride + (ky // sh) * row_stride + kx // sw


#: convolutions of fewer multiply-adds than this stay direct
MIN_MACS = 1 << 20


def direct_is_better(data, kernel, plan: FlatPlan) -> bool:
    """True where the direct schedule of :mod:`.conv2d` measured as fast as this
    one or faster: convolutions of fewer than :data:`MIN_MACS` multiply-adds (both
    take a few microseconds of call overhead, and the direct compute is one stage
    fewer).

    Wider rules measured before 1x1 kernels read panels and before a partial last
    task ran in parallel (unit stride, at most 64 input channels, rows of whole
    vectors) no longer hold: on two AVX2 cores, ResNet-50's 56x56 layers alone
    (``topi.x86`` defaults) ran flat / direct at 3x3 64->64 136 / 100 GFLOP/s, 1x1
    64->256 135 / 103 and 1x1 64->64 126 / 102.
    """
    batch, channels, _, _ = get_const_tuple(data.shape)
    filters, _, kh, kw = get_const_tuple(kernel.shape)
    return batch * filters * plan.out_height * plan.out_width * channels * kh * kw < MIN_MACS


def conv2d_nchw_flat(data, kernel, plan: FlatPlan, out_dtype=None, name="Out"):
    """The NCHW convolution of ``data`` with the OIHW ``kernel`` as laid out by
    ``plan`` (:func:`plan_conv2d_nchw_flat`): ``FlatInput`` (the repacked input),
    ``OutFlat`` (the convolution over the flattened pixels, tagged
    ``conv2d_nchw``, the plan in its attrs) and the returned crop ``Out``
    (``[N, F, OH, OW]``, tagged ``injective``).  See the module's description."""
    batch, channels, height, width = get_const_tuple(data.shape)
    filters, _, kh, kw = get_const_tuple(kernel.shape)
    out_dtype = out_dtype or data.dtype
    (sh, sw), (dh, dw) = plan.stride, plan.dilation
    wq, hq = plan.row_stride, plan.plane_rows

    if plan.panels:
        tile_p, taps = plan.tile_p, kh * kw

        def panel(n, t, k, i):
            # tap k % taps of channel k // taps at flattened output pixel q: row q // Wq,
            # column q % Wq of the output (one tap: the divisions by 1 simplify away)
            q = t * tile_p + i
            c, tap = k // taps, k % taps
            ky, kx = tap // kw, tap % kw
            row = q // wq * sh + ky * dh - plan.pad_top
            col = q % wq * sw + kx * dw - plan.pad_left
            inside = tir.all(q < plan.out_height * wq, row >= 0, row < height, col >= 0, col < width)
            return tir.if_then_else(inside, data[n, c, row, col], tir.const(0, data.dtype))

        flat = te.compute((batch, plan.flat_pixels // tile_p, channels * taps, tile_p), panel, name="PanelInput",
                          tag=tag.compose(tag.INJECTIVE, tag.PAD))
    elif plan.inline_input:
        flat = te.compute((batch, channels, height, width), lambda n, c, i, j: data[n, c, i, j], name="FlatInput",
                          tag=tag.INJECTIVE)
    else:
        def repack(n, c, r, j):
            # row r of the stacked phase planes: plane r // Hq, its row r % Hq
            if plan.phases_y * plan.phases_x == 1:
                phase, i, a, b = 0, r, 0, 0
            else:
                phase, i = r // hq, r % hq
                a, b = phase // plan.phases_x, phase % plan.phases_x
            row = i * sh + a - plan.pad_top
            col = j * sw + b - plan.pad_left
            inside = tir.all(row >= 0, row < height, col >= 0, col < width)
            if plan.phases_y * plan.phases_x > 1:
                inside = tir.all(phase < plan.phases_y * plan.phases_x, inside)
            return tir.if_then_else(inside, data[n, c, row, col], tir.const(0, data.dtype))

        flat = te.compute((batch, channels, plan.flat_rows, wq), repack, name="FlatInput",
                          tag=tag.compose(tag.INJECTIVE, tag.PAD))

    if plan.panels and kh * kw > 1:
        # one reduction over the panel's rows: channel by channel, tap by tap
        rk = te.reduce_axis((0, channels * kh * kw), name="rk")
        axes, rc, ry, rx = [rk], rk // (kh * kw), rk % (kh * kw) // kw, rk % kw  # digits the simplifier re-joins
    else:
        rc = te.reduce_axis((0, channels), name="rc")
        ry = te.reduce_axis((0, kh), name="ry")
        rx = te.reduce_axis((0, kw), name="rx")
        axes = [rc, ry, rx]

    def body(n, f, p):
        if plan.panels:
            value = flat[n, p // plan.tile_p, axes[0], p % plan.tile_p]
        else:
            at = p + plan.tap_offset(ry, rx)
            value = flat[n, rc, at // wq, at % wq]
        # the channels past the filters' (whole channel blocks) repeat the last filter
        filt = kernel[tir.min(f, filters - 1) if plan.flat_channels > filters else f, rc, ry, rx]
        return te.sum(value.astype(out_dtype) * filt.astype(out_dtype), axis=axes)

    attrs = {"strides": [sh, sw], "dilation": [dh, dw], "groups": 1, "data_layout": "NCHW", "kernel_layout": "OIHW",
             PLAN_KEY: plan.as_attrs()}
    conv = te.compute((batch, plan.flat_channels, plan.flat_pixels), body, name=f"{name}Flat", tag=tag.CONV2D_NCHW, attrs=attrs)
    return te.compute((batch, filters, plan.out_height, plan.out_width),
                      lambda n, f, y, x: conv[n, f, y * wq + x], name=name, tag=tag.INJECTIVE, attrs={})


def is_flat(conv) -> bool:
    """True for the ``OutFlat`` stage of :func:`conv2d_nchw_flat`."""
    return PLAN_KEY in (getattr(conv.op, "attrs", None) or {})


def _plan_of(conv) -> FlatPlan:
    fields = dict(conv.op.attrs[PLAN_KEY])
    fields["stride"], fields["dilation"] = tuple(fields["stride"]), tuple(fields["dilation"])
    return FlatPlan(**fields)


def schedule_conv2d_nchw_flat(s, conv, out):
    """Schedule the flat convolution ``conv`` (the ``OutFlat`` tensor of
    :func:`conv2d_nchw_flat`) in ``s``, with ``out`` the output of its epilogue
    (the crop, or an element-wise op of it, the injective stages between already
    inlined): the tasks, the register tiles and the repacking of the module's
    description.  Returns ``s``."""
    plan = _plan_of(conv)
    (crop,) = _consumers(s, conv)
    final = out
    if out.op is not crop.op and (crop.op in s.outputs or get_const_tuple(out.shape) != get_const_tuple(crop.shape)):
        # the crop is an output itself, or the epilogue reshapes: the epilogue is a loop
        # nest of its own after the crop's
        schedule_injective_from_existing(s, out)
        if crop.op not in s.outputs:
            s[crop].compute_root()
        final = crop

    flat = conv.op.input_tensors[0]
    if plan.inline_input:
        s[flat].compute_inline()
    else:
        # FlatInput[n, c, r, j], or PanelInput[n, t, c, i]: the first two over the cores.
        # The innermost loop is vectorized only where it copies a contiguous run
        # (panels of an unpadded unit-stride input): a padded row's select, or the
        # stride's gather, vectorized ran 1.2-1.5x slower than GCC's own loop here
        n, c, r, j = s[flat].op.axis
        s[flat].parallel(s[flat].fuse(n, c))
        if plan.panels:
            if plan.stride == (1, 1) and plan.pad_top == plan.pad_left == 0:
                s[flat].vectorize(j)
        elif plan.phases_y * plan.phases_x > 1:
            s[flat].split(r, factor=plan.plane_rows)  # one loop per phase plane: no division per row

    n, f, y, x = s[final].op.axis
    fb, fi = s[final].split(f, factor=plan.channels_per_task)
    yb, yi = s[final].split(y, factor=plan.rows_per_task)
    s[final].reorder(n, yb, fb, fi, yi, x)
    task = s[final].fuse(n, yb, fb)
    s[final].parallel(task)
    s[final].vectorize(x)

    # the task's part of OutFlat, in register tiles
    s[conv].compute_at(s[final], task)
    acc = s.cache_write(conv, "local")
    cn, cf, cp = s[conv].op.axis
    # the crop reads a task's pixels up to its last output column, seldom a whole
    # number of tiles: the task computes whole tiles (OutFlat reaches past the last
    # task's, see plan_conv2d_nchw_flat), so that no tile is partial
    s[conv].align_extent(cp, plan.tile_p)
    co, ci = s[conv].split(cf, factor=plan.tile_c)
    po, pi = s[conv].split(cp, factor=plan.tile_p)
    if plan.pixels_outer:
        s[conv].reorder(cn, po, co, ci, pi)
        at = co
    else:
        s[conv].reorder(cn, co, po, ci, pi)
        at = po
    s[conv].unroll(ci)
    s[conv].vectorize(pi)
    s[acc].compute_at(s[conv], at)
    an, af, ap = s[acc].op.axis
    reduce_axes = list(s[acc].op.reduce_axis)
    s[acc].reorder(an, *reduce_axes, af, ap)
    if len(reduce_axes) == 3:
        s[acc].unroll(reduce_axes[2])
    s[acc].unroll(af)
    s[acc].vectorize(ap)
    return s


def _consumers(s, tensor) -> list:
    """The tensors of ``s`` whose operation reads ``tensor``."""
    out = []
    for stage in s.stages:
        op = stage.op
        if isinstance(op, te.ComputeOp) and any(t.op is tensor.op for t in op.input_tensors):
            out.append(op.output(0))
    return out


__all__ = ["FlatKnobs", "FlatPlan", "define_flat_knobs", "register_tiles", "MIN_TASKS", "PLAN_KEY", "conv2d_nchw_flat", "direct_is_better", "is_flat",
           "plan_conv2d_nchw_flat", "schedule_conv2d_nchw_flat"]
