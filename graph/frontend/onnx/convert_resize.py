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
                node.fail(f"scale {float(sc)} makes axis {a} (size {xs[a]}) empty; tecc does not compile empty "
                          "tensors")
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
    if rank not in (3, 4):
        node.fail(f"the input has rank {rank}; tecc resizes the 1 or 2 spatial axes of NCW / NCHW (or NHWC) "
                  "tensors")
    changed = [a for a in range(rank) if sizes[a] != xs[a] or scales[a] != 1.0]
    if rank == 4 and all(a in (2, 3) for a in changed):
        layout, spatial = "NCHW", (2, 3)
    elif rank == 4 and all(a in (1, 2) for a in changed):
        layout, spatial = "NHWC", (1, 2)
    elif rank == 3 and all(a == 2 for a in changed):
        layout, spatial = "NCHW", (None, 2)
    else:
        node.fail(f"it resizes axes {changed} of a tensor of shape {xs}; tecc resizes the spatial axes only (the "
                  "last two of NCHW, the middle two of NHWC, the last of NCW)")
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
        if node.attr("antialias", 0) and not (mode == "linear" and all(scales[a] >= 1 for a in changed)):
            node.fail("antialias=1 is supported only for linear enlarging (where it changes nothing); export "
                      "with antialias=False")
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
    data = x if rank == 4 else ctx.reshape(x, xs[:2] + (1,) + xs[2:])
    out = ctx.call("image.resize2d", data, size=out_hw, roi=roi, layout=layout, method=_RESIZE_METHODS[mode],
                   coordinate_transformation_mode=coordinate, rounding_method=rounding, cubic_alpha=cubic_a,
                   cubic_exclude=exclude, extrapolation_value=extrapolation, scales=scale_hw)
    return out if rank == 4 else ctx.reshape(out, tuple(sizes))
