"""Converters of the vision operators: ``RoiAlign`` (opsets 10 and 16), one
``vision.roi_align`` of the regions with their batch indices in front."""
from __future__ import annotations

#: the opset from which RoiAlign's coordinate_transformation_mode defaults to half_pixel
#: (RoiAlign-10 has no such attribute and reads output_half_pixel)
_HALF_PIXEL_FROM = 16

_HALF_FLOATS = ("float16", "bfloat16")


def _roi_align(ctx, node, inputs):
    # X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R]: the regions
    # [R, 5] (batch index, x1, y1, x2, y2) topi.vision.roi_align_nchw pools; ONNX's
    # max mode is the largest weighted pixel term (onnx_max); half_pixel shifts the
    # regions by -0.5 pixel and keeps sub-pixel sizes (aligned)
    if len(inputs) != 3 or any(i is None for i in inputs):
        node.fail(f"RoiAlign takes 3 inputs (X, rois, batch_indices), got {len(inputs)}")
    x, rois, batch_indices = inputs
    xs, rs, bs = ctx.shape(x), ctx.shape(rois), ctx.shape(batch_indices)
    if len(xs) != 4:
        node.fail(f"X has shape {xs}; RoiAlign pools 4-D inputs [N, C, H, W]")
    if len(rs) != 2 or rs[1] != 4:
        node.fail(f"rois has shape {rs}; it must be [num_rois, 4] (x1, y1, x2, y2 of each region)")
    if len(bs) != 1 or bs[0] != rs[0]:
        node.fail(f"batch_indices has shape {bs}; it must be [num_rois] = [{rs[0]}] (the image of each region)")
    dtype, index_dtype = ctx.dtype_of(rois), ctx.dtype_of(batch_indices)
    if not index_dtype.startswith(("int", "uint")):
        node.fail(f"batch_indices holds {index_dtype}; it must hold integers (int64)")
    mode = node.attr("mode", "avg")
    if mode not in ("avg", "max"):
        node.fail(f"mode {mode!r} must be 'avg' or 'max'")
    default = "half_pixel" if node.opset >= _HALF_PIXEL_FROM else "output_half_pixel"
    transform = node.attr("coordinate_transformation_mode", default)
    if transform not in ("half_pixel", "output_half_pixel"):
        node.fail(f"coordinate_transformation_mode {transform!r} must be 'half_pixel' or 'output_half_pixel'")
    sizes = (int(node.attr("output_height", 1)), int(node.attr("output_width", 1)))
    if min(sizes) < 1:
        node.fail(f"output_height and output_width are {sizes}; they must be positive")
    scale = float(node.attr("spatial_scale", 1.0))
    if not 0 < scale < float("inf"):
        node.fail(f"spatial_scale {scale} must be positive")
    sampling_ratio = int(node.attr("sampling_ratio", 0))
    if sampling_ratio < 0:
        node.fail(f"sampling_ratio {sampling_ratio} must be 0 (adaptive) or positive")
    # the regions in float32 when half-width: a float16 batch index is exact only up to 2048
    wide = "float32" if dtype in _HALF_FLOATS else dtype
    index = ctx.cast(ctx.call("expand_dims", batch_indices, axis=1, num_newaxis=1), wide)
    regions = ctx.call("concatenate", ctx.tuple([index, ctx.cast(rois, wide)]), axis=1)
    return ctx.call("vision.roi_align", x, regions, pooled_size=sizes, spatial_scale=scale,
                    sample_ratio=sampling_ratio, mode="avg" if mode == "avg" else "onnx_max",
                    aligned=transform == "half_pixel")


def _non_max_suppression(ctx, node, inputs):
    # boxes [B, N, 4], scores [B, C, N]; max_output_boxes_per_class, iou_threshold and score_threshold
    # known when compiling.  The kept (image, class, box) rows are padded to the most there can be and
    # counted: the model's output is their first `count` rows (ctx.counted_rows)
    boxes, scores = inputs[0], inputs[1]
    bs, ss = ctx.shape(boxes), ctx.shape(scores)
    if len(bs) != 3 or bs[2] != 4:
        node.fail(f"boxes has shape {bs}; it must be [num_batches, spatial_dimension, 4]")
    if len(ss) != 3 or ss[0] != bs[0] or ss[2] != bs[1]:
        node.fail(f"scores has shape {ss}; it must be [num_batches, num_classes, spatial_dimension] = [{bs[0]}, "
                  f"num_classes, {bs[1]}]")

    def scalar(i, what, cast):
        return ctx.scalar_value(ctx.optional_input(inputs, i), what, cast, empty_is_absent=True)

    most = scalar(2, "max_output_boxes_per_class (input 2)", int) or 0
    iou = scalar(3, "iou_threshold (input 3)", float)
    threshold = scalar(4, "score_threshold (input 4)", float)
    center = int(node.attr("center_point_box", 0))
    if center not in (0, 1):
        node.fail(f"center_point_box is {center}; it takes 0 (corners) or 1 (center and size)")
    if iou is not None and not 0.0 <= iou <= 1.0:
        node.fail(f"iou_threshold is {iou}; it must be in [0, 1]")
    if most <= 0 or bs[1] == 0 or ss[1] == 0:  # nothing to keep: no rows
        return [ctx.empty((0, 3), "int64")]
    out = ctx.call("vision.non_max_suppression", boxes, scores, max_output_boxes_per_class=most,
                   iou_threshold=0.0 if iou is None else iou, score_threshold=threshold, center_point_box=center)
    selected, count = ctx.item(out, 0), ctx.item(out, 1)
    ctx.counted_rows(node.outputs[0], count)
    return [selected]
