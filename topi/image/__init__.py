"""Image operators (TVM's ``topi.image``): :func:`resize1d`, :func:`resize2d` and :func:`resize3d`,
what ONNX's ``Resize`` lowers to (their schedules are the ``schedule_resize`` of
:mod:`..x86`, :mod:`..cuda` and :mod:`..generic`); :func:`grid_sample`, what
ONNX's ``GridSample`` lowers to, and :func:`affine_grid`, the grid of affine
transforms it samples at (:func:`affine_grid_nd`: 3-D too, ONNX's ``AffineGrid``); and :func:`crop_and_resize`, TensorFlow's crops of boxes
(injective operators, scheduled as such)."""
from .crop_and_resize import crop_and_resize  # noqa: F401
from .grid_sample import affine_grid, affine_grid_nd, grid_sample  # noqa: F401
from .resize import resize1d, resize2d, resize3d  # noqa: F401
