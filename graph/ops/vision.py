"""Vision operators (Relay's ``vision.*``): ``vision.roi_align``, the pooling of
regions of interest that ONNX's ``RoiAlign`` becomes (``topi.vision.roi_align_nchw``;
its description says how the regions, the grid of points and the modes read)."""
from __future__ import annotations

from ..ir import GraphError, TensorType
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
