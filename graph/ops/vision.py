"""Vision operators (Relay's ``vision.*``): ``vision.roi_align``, the pooling of
regions of interest that ONNX's ``RoiAlign`` becomes (``topi.vision.roi_align_nchw``;
its description says how the regions, the grid of points and the modes read), and
``vision.non_max_suppression``, ONNX's ``NonMaxSuppression``
(``topi.vision.non_max_suppression``): a tuple of the kept ``(image, class, box)``
rows padded to the most there can be, and their count."""
from __future__ import annotations

from ..ir import GraphError, TensorType, TupleType
from ..op import REQUIRED, OpPattern, register_op
from ._util import accumulate_in_float32, as_int, check_choice, int_tuple, static_dims, tensor_arg, topi

_ROI_ALIGN_MODES = ("avg", "max", "onnx_max")


# ---------------------------------------------------------------------------------------
# vision.roi_align
# ---------------------------------------------------------------------------------------
def _roi_align_infer(types, attrs):
    op = "vision.roi_align"
    data, rois = tensor_arg(op, types, 0), tensor_arg(op, types, 1)
    check_choice(op, "layout", attrs["layout"], ("NCHW",))
    check_choice(op, "mode", attrs["mode"], _ROI_ALIGN_MODES)
    pooled = int_tuple(op, "pooled_size", attrs["pooled_size"], (2,), at_least=1)
    scale = attrs["spatial_scale"]
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale < float("inf"):
        raise GraphError(f"{op}: spatial_scale must be a positive number (the feature map's size over the "
                         f"image's), got {scale!r}")
    sample_ratio = as_int(op, "sample_ratio", attrs["sample_ratio"])
    if not isinstance(attrs["aligned"], (bool, int)):
        raise GraphError(f"{op}: aligned must be a bool, got {attrs['aligned']!r}")
    if data.ndim != 4:
        raise GraphError(f"{op}: data must be 4-D [batch, channel, height, width], got shape {data.shape}")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise GraphError(f"{op}: rois must be [num_roi, 5] (batch_index, x1, y1, x2, y2 of each region), got shape "
                         f"{rois.shape}")
    for name, ty in (("data", data), ("rois", rois)):
        if not ty.dtype.startswith(("float", "bfloat")):
            raise GraphError(f"{op}: {name} must hold floats, got {ty.dtype}")
    if sample_ratio <= 0:
        static_dims(op, data.shape, (2, 3), "an adaptive grid (sample_ratio <= 0)")
    return TensorType((rois.shape[0], data.shape[1]) + tuple(pooled), data.dtype)


def _roi_align_lower(inputs, attrs, out_type):
    return topi().vision.roi_align_nchw(inputs[0], inputs[1], list(attrs["pooled_size"]),
                                        float(attrs["spatial_scale"]), attrs["mode"], int(attrs["sample_ratio"]),
                                        bool(attrs["aligned"]))


register_op("vision.roi_align", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_roi_align_infer,
            lower=accumulate_in_float32(_roi_align_lower), num_inputs=2,
            defaults={"pooled_size": REQUIRED, "spatial_scale": REQUIRED, "sample_ratio": -1, "layout": "NCHW",
                      "mode": "avg", "aligned": False},
            doc="ROI Align of NCHW data over regions [num_roi, 5] (batch index, x1, y1, x2, y2): bilinear points "
                "averaged (avg) or maximized (max; onnx_max: ONNX's largest weighted pixel term) per bin, "
                "[num_roi, C, pooled_h, pooled_w]; aligned: the regions shifted by -0.5 pixel (ONNX's half_pixel)")


# ---------------------------------------------------------------------------------------
# vision.non_max_suppression
# ---------------------------------------------------------------------------------------
def _nms_infer(types, attrs):
    op = "vision.non_max_suppression"
    boxes, scores = tensor_arg(op, types, 0), tensor_arg(op, types, 1)
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise GraphError(f"{op}: boxes must be [images, boxes, 4], got shape {boxes.shape}")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise GraphError(f"{op}: scores must be [images, classes, boxes] = [{boxes.shape[0]}, classes, "
                         f"{boxes.shape[1]}], got shape {scores.shape}")
    for name, ty in (("boxes", boxes), ("scores", scores)):
        if not ty.dtype.startswith(("float", "bfloat")):
            raise GraphError(f"{op}: {name} must hold floats, got {ty.dtype}")
    static_dims(op, boxes.shape, (0, 1), "non-maximum suppression")
    static_dims(op, scores.shape, (1,), "non-maximum suppression")
    most = as_int(op, "max_output_boxes_per_class", attrs["max_output_boxes_per_class"])
    if most < 1:
        raise GraphError(f"{op}: max_output_boxes_per_class must be positive, got {most}")
    check_choice(op, "center_point_box", attrs["center_point_box"], (0, 1))
    for name in ("iou_threshold", "score_threshold"):
        value = attrs[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise GraphError(f"{op}: {name} must be a number{' or None' if name == 'score_threshold' else ''}, got "
                             f"{value!r}")
    rows = boxes.shape[0] * scores.shape[1] * min(most, boxes.shape[1])
    return TupleType([TensorType((rows, 3), "int64"), TensorType((1,), "int64")])


def _nms_lower(inputs, attrs, out_type):
    t = topi()
    boxes, scores = inputs
    if boxes.dtype in ("float16", "bfloat16"):  # compared in float32: the IoU's products need its digits
        boxes, scores = t.cast(boxes, "float32"), t.cast(scores, "float32")
    threshold = attrs["score_threshold"]
    return t.vision.non_max_suppression(boxes, scores, int(attrs["max_output_boxes_per_class"]),
                                        float(attrs["iou_threshold"]),
                                        None if threshold is None else float(threshold), int(attrs["center_point_box"]))


register_op("vision.non_max_suppression", pattern=OpPattern.OPAQUE, infer=_nms_infer, lower=_nms_lower, num_inputs=2,
            defaults={"max_output_boxes_per_class": REQUIRED, "iou_threshold": 0.0, "score_threshold": None,
                      "center_point_box": 0},
            doc="the boxes [images, boxes, 4] greedy non-maximum suppression keeps per image and class by scores "
                "[images, classes, boxes]: (rows (image, class, box) padded to images*classes*min(max, boxes), "
                "int64, the rows after the count zeros; the count, int64 [1])")
