"""ROI Align (TVM's ``topi.vision.roi_align_nchw``; Mask R-CNN's pooling of regions
of interest, ONNX's ``RoiAlign``): each region of a feature map is divided into a
grid of bins, and each bin is pooled from bilinear samples of the map.

Region ``i`` is ``rois[i] = [batch_index, x1, y1, x2, y2]`` in the coordinates of
the image the regions were proposed on; ``spatial_scale`` maps them onto the
feature map (``1 / stride``).  On the map the region starts at ``(y1, x1) *
spatial_scale`` and is ``roi_h = (y2 - y1) * spatial_scale`` rows high (alike for
the columns), with two conventions:

* ``aligned=False`` (TVM v0.13, Detectron's first ROIAlign, ONNX's
  ``output_half_pixel``): a region smaller than one pixel is grown to one pixel
  (``roi_h = max(roi_h, 1)``);
* ``aligned=True`` (torchvision's ``aligned``, Detectron2's ROIAlignV2, ONNX's
  ``half_pixel``): both corners move by -0.5 pixel, so that a pixel's value sits at
  its centre, and the size is kept as it is (it may be 0 or negative).

The region is cut into ``pooled_h x pooled_w`` bins of ``bin_h = roi_h / pooled_h``
rows (``bin_w`` columns).  Bin ``(ph, pw)`` reads a ``grid_h x grid_w`` grid of
points, point ``(iy, ix)`` at

    ``y = y1 + ph * bin_h + (iy + 0.5) * bin_h / grid_h``  (and alike for ``x``),

with ``grid_h = grid_w = sample_ratio`` when ``sample_ratio > 0``; otherwise the
grid adapts to the region, ``grid_h = ceil(roi_h / pooled_h)`` (``grid_w`` alike).
A point is read bilinearly from the 2 x 2 pixels around it, the coordinates first
clamped into the map; a point farther than one pixel outside the map (``y < -1``,
``y > H``, ``x < -1`` or ``x > W``) reads 0.  The bin's value is, by ``mode``:

* ``"avg"``: the mean of its points' values;
* ``"max"``: the largest of its points' values (TVM's max);
* ``"onnx_max"``: the largest of the four *weighted* pixel terms of each point,
  over the points -- ``max(w00 * v00, w01 * v01, w10 * v10, w11 * v11)`` where
  the bilinear value is their sum: ONNX's (and onnxruntime's) ``max`` mode, not a
  maximum of interpolated values.

A bin with no points (an adaptive grid of an empty ``aligned`` region) is 0.

The adaptive grid and the reduction
-----------------------------------
A TE reduction has a static extent, but ``ceil(roi_h / pooled_h)`` depends on the
ROIs.  The compute reduces over the largest grid a region inside the sampling
range can need -- ``ceil((H + 1) / pooled_h)`` rows of points (``[-1, H]`` is where
points read anything) -- and masks the points past the region's own grid.  Every
region no taller than ``H + 1`` (no wider than ``W + 1``) pixels on the map is
pooled exactly as TVM and ONNX pool it; a larger one (mostly outside the map) is
sampled on that largest grid, ``ceil((H + 1) / pooled_h)`` points per bin and axis,
spread evenly over the bin.  The adaptive grid needs static ``H`` and ``W``; with
``sample_ratio > 0`` the grid is static and any shape works.

Coordinates and sums run in float32 (float64 when the data or the ROIs are
float64); the result is cast to the data's dtype.  The reduction is one stage
named ``roi_align``, tagged ``roi_align_nchw`` (for half-width float data, a cast
stage follows it), scheduled by :func:`schedule_roi_align` on CPUs and CUDA:
one output element per thread (per iteration of the parallel loop on CPUs), its
bin's points reduced serially.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ... import te
from ...errors import TeccTypeError
from ...target import Target
from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import op as _op
from .. import tag
from ..cuda.utils import bind_blocks_threads, max_threads, pow2_at_least
from ..generic.default import new_schedule
from ..image.grid_sample import _let_all
from ..schedule_registry import register_schedule
from ..utils import TopiError, find_anchors, fuse_all, get_const_tuple, prod
from ..x86.injective import PARALLEL_MIN

#: the tag of the reduction (its schedules are registered under the prefix ``roi_align``)
ROI_ALIGN_NCHW = "roi_align_nchw"

#: the modes, and TVM's other spellings of the first two
MODES = ("avg", "max", "onnx_max")
_MODE_ALIASES = {b"avg": "avg", 0: "avg", b"max": "max", 1: "max", b"onnx_max": "onnx_max"}


def _static(d):
    """The int value of dimension ``d``, or None when symbolic."""
    v = get_const_tuple([d])[0]
    return v if isinstance(v, int) else None


def _mode_of(mode, what):
    if isinstance(mode, str) and mode in MODES:
        return mode
    if not isinstance(mode, bool) and isinstance(mode, (bytes, int)) and mode in _MODE_ALIASES:
        return _MODE_ALIASES[mode]
    raise TopiError(f"{what}: mode {mode!r} is not supported; use one of {', '.join(map(repr, MODES))} (TVM's b'avg' "
                    "or 0, b'max' or 1 also work)")


def _is_int(v) -> bool:
    """A Python or numpy integer, not a bool."""
    return not isinstance(v, (bool, np.bool_)) and isinstance(v, numbers.Integral)


def _pooled_of(pooled_size, what):
    if isinstance(pooled_size, E.IntImm) or _is_int(pooled_size):
        sizes = [pooled_size, pooled_size]
    elif isinstance(pooled_size, (list, tuple)) and len(pooled_size) == 2:
        sizes = list(pooled_size)
    else:
        raise TopiError(f"{what}: pooled_size must be an int or (pooled_height, pooled_width), got {pooled_size!r}")
    out = []
    for v in sizes:
        v = v.value if isinstance(v, E.IntImm) else v
        if not _is_int(v):
            raise TeccTypeError(f"{what}: pooled_size {pooled_size!r} must be made of constant integers")
        if v < 1:
            raise TopiError(f"{what}: pooled_size {pooled_size!r} must be positive")
        out.append(int(v))
    return out


def _check(data, rois, pooled_size, spatial_scale, mode, sample_ratio, aligned):
    """``(mode, (pooled_h, pooled_w), sample_ratio, aligned, spatial_scale)`` of a
    checked call."""
    for name, t in (("data", data), ("rois", rois)):
        if not isinstance(t, te.Tensor):
            raise TeccTypeError(f"roi_align_nchw: {name} must be a tensor, got {t!r}")
    what = (f"roi_align_nchw(data {data.name!r} {get_const_tuple(data.shape)}, rois {rois.name!r} "
            f"{get_const_tuple(rois.shape)})")
    if len(data.shape) != 4:
        raise TopiError(f"{what}: data must be 4-D [batch, channel, height, width], got rank {len(data.shape)}")
    if not _dt.is_float(data.dtype):
        raise TeccTypeError(f"{what}: data must hold floats, got {data.dtype}")
    for d, axis in ((data.shape[2], "height"), (data.shape[3], "width")):
        if _static(d) is not None and _static(d) < 1:
            raise TopiError(f"{what}: the feature map is empty along its {axis}")
    if len(rois.shape) != 2 or _static(rois.shape[1]) != 5:
        raise TopiError(f"{what}: rois must be [num_roi, 5] (batch_index, x1, y1, x2, y2 of each region), got shape "
                        f"{get_const_tuple(rois.shape)}")
    if not _dt.is_float(rois.dtype):
        raise TeccTypeError(f"{what}: rois must hold floats (the batch index too, as TVM), got {rois.dtype}")
    mode = _mode_of(mode, what)
    pooled = _pooled_of(pooled_size, what)
    if isinstance(spatial_scale, (bool, np.bool_)) or not isinstance(spatial_scale, numbers.Real):
        raise TeccTypeError(f"{what}: spatial_scale must be a number (the feature map's size over the image's), got "
                            f"{spatial_scale!r}")
    if not (math.isfinite(spatial_scale) and spatial_scale > 0):
        raise TopiError(f"{what}: spatial_scale {spatial_scale!r} must be positive and finite")
    sample_ratio = sample_ratio.value if isinstance(sample_ratio, E.IntImm) else sample_ratio
    if not _is_int(sample_ratio):
        raise TeccTypeError(f"{what}: sample_ratio must be an int (points per bin and axis; <= 0: adaptive), got "
                            f"{sample_ratio!r}")
    if isinstance(aligned, E.IntImm):
        aligned = aligned.value
    if not (isinstance(aligned, (bool, np.bool_)) or _is_int(aligned) and aligned in (0, 1)):
        raise TeccTypeError(f"{what}: aligned must be a bool, got {aligned!r}")
    if sample_ratio <= 0:
        for d, axis in ((data.shape[2], "height"), (data.shape[3], "width")):
            if _static(d) is None:
                raise TopiError(f"{what}: an adaptive grid (sample_ratio {sample_ratio} <= 0) needs a static {axis}, "
                                f"which bounds the number of points per bin; got {d}: pass sample_ratio > 0 "
                                "(e.g. 2) for a feature map of symbolic size")
    return mode, pooled, int(sample_ratio), bool(aligned), float(spatial_scale)


def roi_align_nchw(data, rois, pooled_size, spatial_scale, mode="avg", sample_ratio=-1, aligned=False):
    """ROI Align over an NCHW feature map (see the module's description for the
    coordinates, the grid of points and the modes).

    Parameters
    ----------
    data : Tensor
        ``[batch, channel, height, width]`` floats, the feature map.
    rois : Tensor
        ``[num_roi, 5]`` floats: ``batch_index, x1, y1, x2, y2`` of each region, in
        image coordinates (the batch index in ``[0, batch)``, not checked).
    pooled_size : int or (int, int)
        ``(pooled_height, pooled_width)`` bins per region (one int: square).
    spatial_scale : float
        The feature map's size over the image's (``1 / 16`` for a stride of 16).
    mode : str
        ``"avg"`` (default), ``"max"`` (TVM's; also ``b"avg"``/``0``, ``b"max"``/``1``)
        or ``"onnx_max"`` (ONNX's max of weighted pixel terms).
    sample_ratio : int
        Points per bin along each axis; ``<= 0`` (default): adaptive,
        ``ceil(roi size / pooled size)``, which needs a static height and width.
    aligned : bool
        Shift the regions by -0.5 pixel and keep sub-pixel sizes (torchvision's
        ``aligned``, ONNX's ``half_pixel``); False: TVM v0.13's regions, at least
        one pixel.

    Returns
    -------
    Tensor
        ``[num_roi, channel, pooled_height, pooled_width]`` of the data's dtype,
        named ``roi_align`` (the reduction, tagged ``roi_align_nchw``; for float16
        and bfloat16 data the output is its cast, ``roi_align_cast``).

    Raises
    ------
    TopiError
        For data that is not 4-D or is empty, ROIs that are not ``[num_roi, 5]``,
        an unknown mode, a pooled size that is not one or two positive integers, a
        spatial scale that is not positive, or an adaptive grid over a map of
        symbolic size.
    TeccTypeError
        For arguments that are not tensors, data or ROIs that are not floats, or
        arguments of the wrong type.

    Examples
    --------
    >>> features = te.placeholder((1, 256, 50, 50), name="features")
    >>> rois = te.placeholder((100, 5), name="rois")
    >>> pooled = topi.vision.roi_align_nchw(features, rois, (7, 7), 1.0 / 16, sample_ratio=2)
    """
    mode, (pooled_h, pooled_w), sample_ratio, aligned, spatial_scale = _check(
        data, rois, pooled_size, spatial_scale, mode, sample_ratio, aligned)
    fd = "float64" if "float64" in (data.dtype, rois.dtype) else "float32"
    height, width = data.shape[2], data.shape[3]
    adaptive = sample_ratio <= 0
    if adaptive:
        # the largest adaptive grid of a region inside the sampling range [-1, H]
        bound_h = math.ceil((_static(height) + 1) / pooled_h)
        bound_w = math.ceil((_static(width) + 1) / pooled_w)
    else:
        bound_h = bound_w = sample_ratio

    def f(value):
        return _op.cast(fd, value) if isinstance(value, E.PrimExpr) else _op.const(float(value), fd)

    zero, one = f(0.0), f(1.0)

    def bilinear(n, c, point):
        """The point (y, x) of map ``n``, channel ``c``: its value, or for
        ``onnx_max`` the largest of its four weighted pixel terms (0 outside)."""
        y, x = point
        outside = _op.any(y < f(-1.0), x < f(-1.0), y > f(height), x > f(width))

        def at(clamped):
            yc, xc = clamped

            def corners(lows):
                y0, x0 = lows
                y1 = _op.min(y0 + 1, height - 1)
                x1 = _op.min(x0 + 1, width - 1)
                ly, lx = yc - f(y0), xc - f(x0)
                hy, hx = one - ly, one - lx

                def read(yy, xx):
                    return _op.cast(fd, data(n, c, yy, xx))

                terms = [hy * hx * read(y0, x0), hy * lx * read(y0, x1), ly * hx * read(y1, x0),
                         ly * lx * read(y1, x1)]
                if mode == "onnx_max":
                    return _op.max(_op.max(terms[0], terms[1]), _op.max(terms[2], terms[3]))
                return terms[0] + terms[1] + terms[2] + terms[3]

            lows = [_op.cast("int32", _op.floor(yc)), _op.cast("int32", _op.floor(xc))]
            return _op.if_then_else(outside, zero, _let_all(lows, ["y_low", "x_low"], corners))

        clamped = [_op.min(_op.max(y, zero), f(height - 1)), _op.min(_op.max(x, zero), f(width - 1))]
        return _let_all(clamped, ["y_c", "x_c"], at)

    def grid(size, pooled, bound):
        """The number of points per bin along an axis of ``size`` pixels (int32)."""
        if not adaptive:
            return _op.const(sample_ratio, "int32")
        points = _op.min(_op.max(_op.ceil(size / f(pooled)), zero), f(bound))
        return _op.cast("int32", points)

    def body(i, c, ph, pw):
        rh = te.reduce_axis((0, bound_h), name="rh")
        rw = te.reduce_axis((0, bound_w), name="rw")
        offset = f(0.5 if aligned else 0.0)
        scale = f(spatial_scale)
        box = [f(rois(i, k)) * scale - offset for k in (1, 2, 3, 4)]  # x1, y1, x2, y2 on the map

        def in_box(corners):
            x1, y1, x2, y2 = corners
            roi_w, roi_h = x2 - x1, y2 - y1
            if not aligned:
                roi_w, roi_h = _op.max(roi_w, one), _op.max(roi_h, one)

            def in_bins(sizes):
                roi_h, roi_w = sizes
                bin_h, bin_w = roi_h / f(pooled_h), roi_w / f(pooled_w)

                def in_grid(grids):
                    grid_h, grid_w = grids
                    n = _op.cast("int32", rois(i, 0))
                    y = y1 + f(ph) * bin_h + (f(rh.var) + f(0.5)) * bin_h / f(_op.max(grid_h, 1))
                    x = x1 + f(pw) * bin_w + (f(rw.var) + f(0.5)) * bin_w / f(_op.max(grid_w, 1))
                    value = _let_all([y, x], ["y", "x"], lambda point: bilinear(n, c, point))
                    valid = _op.all(rh.var < grid_h, rw.var < grid_w) if adaptive else None
                    if mode == "avg":
                        count = f(_op.max(grid_h * grid_w, 1))
                        value = value if valid is None else _op.if_then_else(valid, value, zero)
                        return value / count
                    if valid is None:
                        return value
                    # masked points count for nothing; a bin without points is 0
                    empty = _op.any(grid_h <= 0, grid_w <= 0)
                    return _op.if_then_else(valid, value, _op.if_then_else(empty, zero, _op.min_value(fd)))

                grids = [grid(roi_h, pooled_h, bound_h), grid(roi_w, pooled_w, bound_w)]
                return _let_all(grids, ["grid_h", "grid_w"], in_grid)

            return _let_all([roi_h, roi_w], ["roi_h", "roi_w"], in_bins)

        combine = te.sum if mode == "avg" else te.max
        return combine(_let_all(box, ["roi_x1", "roi_y1", "roi_x2", "roi_y2"], in_box), axis=[rh, rw])

    shape = (rois.shape[0], data.shape[1], pooled_h, pooled_w)
    attrs = {"mode": mode, "sample_ratio": sample_ratio, "aligned": aligned}
    out = te.compute(shape, body, name="roi_align", tag=ROI_ALIGN_NCHW, attrs=attrs)
    if out.dtype != data.dtype:
        out = te.compute(shape, lambda *i: _op.cast(data.dtype, out(*i)), name="roi_align_cast", tag=tag.ELEMWISE)
    return out


# ---------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------
def _accumulators(s, out, what):
    """The stages accumulating the ROI Align stages that ``out`` is or reads through
    element-wise stages (those inlined), in registers: a local cache of ``out``
    when it is the reduction itself, else the reduction, in local scope."""
    accs = []
    for op in find_anchors(s, out, (ROI_ALIGN_NCHW,), what, "an ROI Align"):
        if op is out.op:
            accs.append(s.cache_write(out, "local"))
        else:
            s[op].set_scope("local")
            accs.append(op.output(0))
    return accs


@register_schedule("roi_align", "cpu")
def schedule_roi_align_cpu(outs):
    """The CPU schedule of :func:`roi_align_nchw` (and of element-wise ops after it):
    the regions and channels fused into one loop over the cores (when there are
    enough elements), each bin's points reduced in a register right before its
    element is stored.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    for out in outs:
        accs = _accumulators(s, out, "schedule_roi_align")
        axes = list(s[out].op.axis)
        rows = s[out].fuse(*axes[:2]) if len(axes) == 4 else None
        total = prod(get_const_tuple(out.shape))
        if rows is not None and (not isinstance(total, int) or total >= PARALLEL_MIN):
            s[out].parallel(rows)
        for acc in accs:
            s[acc].compute_at(s[out], s[out].leaf_iter_vars[-1])
    return s


@register_schedule("roi_align", "cuda")
def schedule_roi_align_cuda(outs):
    """The CUDA schedule of :func:`roi_align_nchw` (and of element-wise ops after
    it): one output element per thread, consecutive threads along the bins of a
    channel, each thread reducing its bin's points in a register; 256 threads per
    block (fewer, 32 at least, for a small output).

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    for out in outs:
        accs = _accumulators(s, out, "schedule_roi_align")
        fused = fuse_all(s, out)
        total = prod(get_const_tuple(out.shape))
        threads = max_threads(256) if not isinstance(total, int) else min(max_threads(256), pow2_at_least(total, 256))
        _, tx = bind_blocks_threads(s[out], fused, max(threads, 32))
        for acc in accs:
            s[acc].compute_at(s[out], tx)
    return s


def schedule_roi_align(outs):
    """The schedule of :func:`roi_align_nchw`'s outputs for the current target
    (TVM's ``schedule_roi_align``): :func:`schedule_roi_align_cuda` on GPUs,
    :func:`schedule_roi_align_cpu` elsewhere."""
    target = Target.current(allow_none=True)
    if target is not None and "gpu" in target.keys:
        return schedule_roi_align_cuda(outs)
    return schedule_roi_align_cpu(outs)
