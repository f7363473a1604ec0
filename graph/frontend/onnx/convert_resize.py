"""Converters of Resize and Upsample."""
from __future__ import annotations

import math

import numpy as np

from .common import _normalize_axis, _prod


# --- Resize / Upsample ------------------------------------------------------------------------
#: ONNX's Resize modes -> image.resize2d's methods
_RESIZE_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear", "cubic": "cubic"}
_RESIZE_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                       "tf_half_pixel_for_nn", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_operand(ctx, inputs, i, what):
    """Input ``i`` of a Resize as a flat numpy array; None when it is left out or
    empty (ONNX passes an empty tensor for an unused roi / scales)."""
    x = ctx.optional_input(inputs, i)
    if x is None:
        return None
    if _prod(ctx.shape(x)) == 0:
        return None
    return np.asarray(ctx.value(x, what)).reshape(-1)


def _resize_targets(ctx, node, inputs, xs):
    """``(sizes, scales, from_scales)`` of every axis of a Resize / Upsample: the
    output sizes, the scales the coordinates use, and whether the model gave
    scales (rather than sizes)."""
    rank = len(xs)
    if node.op_type == "Upsample" or node.opset < 11:
        scales = _resize_operand(ctx, inputs, 1, "scales (input 1)")
        sizes, axes, policy = None, None, "stretch"
    else:
        scales = _resize_operand(ctx, inputs, 2, "scales (input 2)")
        sizes = _resize_operand(ctx, inputs, 3, "sizes (input 3)")
        axes = node.attr("axes") if node.opset >= 18 else None
        policy = node.attr("keep_aspect_ratio_policy", "stretch") if node.opset >= 18 else "stretch"
    if (scales is None) == (sizes is None):
        node.fail("give exactly one of scales and sizes (the other empty or left out)")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        node.fail(f"keep_aspect_ratio_policy {policy!r} is not one of stretch, not_larger, not_smaller")
    axes = list(range(rank)) if axes is None else [_normalize_axis(a, rank, node, "axes entry") for a in axes]
    if len(set(axes)) != len(axes):
        node.fail(f"axes {axes} name an axis twice")
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        node.fail(f"{'scales' if scales is not None else 'sizes'} {given.tolist()} should have one entry per axis "
                  f"({len(axes)})")
    out_sizes, out_scales = list(xs), [1.0] * rank
    if scales is not None:
        for a, sc in zip(axes, scales.astype("float64")):
            if not sc > 0:
                node.fail(f"scales {scales.tolist()} must be positive")
            out_scales[a] = float(sc)
            out_sizes[a] = int(math.floor(float(sc) * xs[a]))
            if out_sizes[a] < 1:
                node.fail(f"scale {float(sc)} makes axis {a} (size {xs[a]}) empty; give a scale of at least "
                          f"1/{xs[a]}")
        return out_sizes, out_scales, True
    sizes = [int(v) for v in sizes]
    if any(v < 1 for v in sizes):
        node.fail(f"sizes {sizes} must be positive")
    if policy == "stretch":
        for a, v in zip(axes, sizes):
            out_sizes[a], out_scales[a] = v, v / xs[a]
        return out_sizes, out_scales, False
    pick = min if policy == "not_larger" else max
    scale = pick(v / xs[a] for a, v in zip(axes, sizes))
    for a in axes:
        out_scales[a] = scale
        out_sizes[a] = int(scale * xs[a] + 0.5)  # ONNX rounds half up here
    return out_sizes, out_scales, True


def _source_coordinate(i, n_in, n_out, scale, coordinate):
    """Where output ``i`` of an axis of ``n_in`` resized to ``n_out`` by ``scale`` reads
    in the input (ONNX's coordinate_transformation_mode; the output's length as the
    scale gives it, ``scale * n_in``, which may not be whole)."""
    length = scale * n_in
    if coordinate == "align_corners":
        return 0.0 if length == 1 else i * (n_in - 1) / (length - 1)
    if coordinate == "asymmetric":
        return i / scale
    if coordinate == "pytorch_half_pixel":
        return -0.5 if length == 1 else (i + 0.5) / scale - 0.5
    if coordinate == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / length)
        return offset + (i + 0.5) / scale - 0.5
    return (i + 0.5) / scale - 0.5  # half_pixel


def _keys_cubic(x, a):
    x = abs(x)
    if x <= 1:
        return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
    if x < 2:
        return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
    return 0.0


def _antialias_weights(n_in, n_out, scale, mode, coordinate, cubic_a, exclude_outside):
    """The ``(n_out, n_in)`` matrix of an antialiased linear or cubic resize of one
    axis: where the axis shrinks, the filter is widened by ``1 / scale`` (a triangle
    of half-width ``1 / scale``, or Keys' cubic stretched as much) and its taps
    normalized to sum to 1; reads past the ends take the edge values, or with
    ``exclude_outside`` weigh nothing (the others normalized again)."""
    s = min(scale, 1.0)
    reach = 1.0 if mode == "linear" else 2.0
    start = int(math.floor(-reach / s)) + 1
    taps = np.arange(start, 2 - start)
    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        x = _source_coordinate(i, n_in, n_out, scale, coordinate)
        base = math.floor(x)
        ratio = x - base
        if ratio == 0:  # a whole coordinate is read as the left pixel's far end
            base, ratio = base - 1, 1.0
        args = (taps - ratio) * s
        if mode == "linear":
            w = np.clip(1 - np.abs(args), 0, 1)
        else:
            w = np.array([_keys_cubic(v, cubic_a) for v in args])
        w = w / w.sum()
        index = base + taps
        if exclude_outside:
            w = np.where((index < 0) | (index >= n_in), 0.0, w)
            w = w / w.sum()
        np.add.at(weights[i], np.clip(index, 0, n_in - 1), w)
    return weights


def _resize_antialiased(ctx, node, x, xs, sizes, scales, changed, mode, coordinate, cubic_a, exclude):
    """An antialiased linear or cubic Resize that shrinks some axis: per resized axis,
    a product with its interpolation matrix (:func:`_antialias_weights`, computed
    when importing: the shapes are static), the axis moved last for it."""
    if coordinate == "tf_crop_and_resize":
        node.fail("antialias=1 with coordinate_transformation_mode 'tf_crop_and_resize' is not supported")
    dtype = ctx.dtype_of(x)
    if np.dtype(dtype).kind != "f":
        node.fail(f"antialias=1 on {dtype} data is not supported; resize float data (Cast it first)")
    rank = len(xs)
    out = x
    for a in changed:
        matrix = _antialias_weights(xs[a], sizes[a], scales[a], mode, coordinate, cubic_a, exclude)
        perm = [d for d in range(rank) if d != a] + [a]
        moved = out if a == rank - 1 else ctx.call("transpose", out, axes=tuple(perm))
        shape = ctx.shape(moved)
        flat = ctx.reshape(moved, (_prod(shape[:-1]), shape[-1]))
        res = ctx.call("nn.dense", flat, ctx.const(matrix, dtype), units=sizes[a])
        res = ctx.reshape(res, shape[:-1] + (sizes[a],))
        out = res if a == rank - 1 else ctx.call("transpose", res, axes=tuple(int(i) for i in np.argsort(perm)))
    return out


def _resize(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    legacy = node.op_type == "Upsample" or node.opset < 11  # Upsample-9, Resize-10: asymmetric coordinates
    mode = node.attr("mode", "nearest")
    if mode not in _RESIZE_METHODS or (mode == "bilinear" and not legacy):
        node.fail(f"mode {mode!r} is not one of nearest, linear, cubic")
    if legacy and mode == "cubic":
        node.fail("mode 'cubic' is not defined before opset 11")
    sizes, scales, from_scales = _resize_targets(ctx, node, inputs, xs)
    if rank not in (3, 4, 5):
        node.fail(f"the input has rank {rank}; tecc resizes the 1, 2 or 3 spatial axes of NCW / NCHW / NCDHW (or "
                  "NHWC / NDHWC) tensors")
    changed = [a for a in range(rank) if sizes[a] != xs[a] or scales[a] != 1.0]
    if (not legacy and node.attr("antialias", 0) and mode in ("linear", "cubic")
            and any(scales[a] < 1 for a in changed)):
        return _resize_antialiased(ctx, node, x, xs, sizes, scales, changed, mode,
                                   node.attr("coordinate_transformation_mode", "half_pixel"),
                                   float(node.attr("cubic_coeff_a", -0.75)), int(node.attr("exclude_outside", 0)))
    if rank == 5 and all(a in (2, 3, 4) for a in changed):
        layout, spatial = "NCDHW", (2, 3, 4)
    elif rank == 5 and all(a in (1, 2, 3) for a in changed):
        layout, spatial = "NDHWC", (1, 2, 3)
    elif rank == 4 and all(a in (2, 3) for a in changed):
        layout, spatial = "NCHW", (2, 3)
    elif rank == 4 and all(a in (1, 2) for a in changed):
        layout, spatial = "NHWC", (1, 2)
    elif rank == 3 and all(a == 2 for a in changed):
        layout, spatial = "NCHW", (None, 2)
    else:
        node.fail(f"it resizes axes {changed} of a tensor of shape {xs}; tecc resizes the spatial axes only (the "
                  "last three of NCDHW, the last two of NCHW, the middle ones of NHWC / NDHWC, the last of NCW)")
    if legacy:
        coordinate, rounding = "asymmetric", None
        if mode == "nearest":
            # onnxruntime's rule before opset 11: truncate when enlarging, round up when shrinking
            down = any(scales[a] < 1 for a in changed)
            up = any(scales[a] > 1 for a in changed)
            if down and up:
                node.fail(f"scales {[scales[a] for a in changed]} enlarge one axis and shrink another; the nearest "
                          "pixel rule of opsets before 11 differs between the two: export at opset 11 or later")
            rounding = "ceil" if down else "floor"
        cubic_a, exclude, extrapolation = -0.75, 0, 0.0
    else:
        coordinate = node.attr("coordinate_transformation_mode", "half_pixel")
        if coordinate not in _RESIZE_COORDINATES or (coordinate == "half_pixel_symmetric" and node.opset < 19):
            node.fail(f"coordinate_transformation_mode {coordinate!r} is not supported; tecc takes "
                      f"{', '.join(_RESIZE_COORDINATES)} (half_pixel_symmetric from opset 19)")
        rounding = node.attr("nearest_mode", "round_prefer_floor") if mode == "nearest" else None
        if rounding is not None and rounding not in _NEAREST_MODES:
            node.fail(f"nearest_mode {rounding!r} is not one of {', '.join(_NEAREST_MODES)}")
        cubic_a = float(node.attr("cubic_coeff_a", -0.75))
        exclude = int(node.attr("exclude_outside", 0)) if mode == "cubic" else 0
        extrapolation = float(node.attr("extrapolation_value", 0.0))
        if node.attr("antialias", 0) and mode == "nearest":
            node.fail("antialias=1 with mode 'nearest' is not defined; ONNX antialiases linear and cubic resizes")
    roi = None
    if coordinate == "tf_crop_and_resize":
        roi_full = _resize_operand(ctx, inputs, 1, "roi (input 1)")
        if roi_full is None:
            node.fail("coordinate_transformation_mode 'tf_crop_and_resize' needs roi (input 1)")
        axes = node.attr("axes") if node.opset >= 18 else None
        axes = list(range(rank)) if axes is None else [_normalize_axis(a, rank, node, "axes entry") for a in axes]
        if len(roi_full) != 2 * len(axes):
            node.fail(f"roi {roi_full.tolist()} should have 2 entries per axis ({2 * len(axes)})")
        starts, ends = [0.0] * rank, [1.0] * rank
        for i, a in enumerate(axes):
            starts[a], ends[a] = float(roi_full[i]), float(roi_full[i + len(axes)])
        roi = tuple(starts[a] if a is not None else 0.0 for a in spatial) + tuple(
            ends[a] if a is not None else 1.0 for a in spatial)
    out_hw = tuple(sizes[a] if a is not None else 1 for a in spatial)
    # the scales are passed when they map coordinates differently from the sizes' ratio
    use_scales = from_scales and any(scales[a] * xs[a] != sizes[a] for a in spatial if a is not None)
    scale_hw = tuple(scales[a] if a is not None else 1.0 for a in spatial) if use_scales else None
    data = x if rank in (4, 5) else ctx.reshape(x, xs[:2] + (1,) + xs[2:])
    out = ctx.call(f"image.resize{len(spatial)}d", data, size=out_hw, roi=roi, layout=layout, method=_RESIZE_METHODS[mode],
                   coordinate_transformation_mode=coordinate, rounding_method=rounding, cubic_alpha=cubic_a,
                   cubic_exclude=exclude, extrapolation_value=extrapolation, scales=scale_hw)
    return out if rank in (4, 5) else ctx.reshape(out, tuple(sizes))
