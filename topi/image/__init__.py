"""Image operators (TVM's ``topi.image``): :func:`resize1d` and :func:`resize2d`,
what ONNX's ``Resize`` lowers to.  Their schedules are the ``schedule_resize`` of
:mod:`..x86`, :mod:`..cuda` and :mod:`..generic`."""
from .resize import resize1d, resize2d  # noqa: F401
