"""Vision operators (TVM's ``topi.vision``): :func:`roi_align_nchw`, the pooling of
regions of interest of Mask R-CNN, which ONNX's ``RoiAlign`` lowers to (scheduled
by :func:`schedule_roi_align` on CPUs and CUDA), and :func:`non_max_suppression`,
ONNX's ``NonMaxSuppression`` (extern statements, CPU and CUDA)."""
from .roi_align import roi_align_nchw, schedule_roi_align  # noqa: F401
from .nms import non_max_suppression  # noqa: F401
