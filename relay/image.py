"""TVM's ``relay.image``: a builder per registered ``image.*`` operator
(``relay.image.resize2d(data, size=(64, 64), method="linear")``,
``relay.image.grid_sample(data, grid, method="bilinear", layout="NCHW",
padding_mode="zeros", align_corners=True)``), see :mod:`tecc.relay.op`."""
from .op import _namespace

__getattr__, __dir__ = _namespace("image.", globals())
