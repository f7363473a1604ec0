"""Image operators (TVM's ``topi.image``): :func:`resize1d`, :func:`resize2d` and :func:`resize3d`,
what ONNX's ``Resize`` lowers to (their schedules are the ``schedule_resize`` of
:mod:`..x86`, :mod:`..cuda` and :mod:`..generic`), and :func:`grid_sample`, what
ONNX's ``GridSample`` lowers to (an injective operator, scheduled as one)."""
from .grid_sample import grid_sample  # noqa: F401
from .resize import resize1d, resize2d, resize3d  # noqa: F401
