"""TVM's ``relay.nn``: a builder per registered ``nn.*`` operator
(``relay.nn.conv2d(data, weight, strides=(1, 1), padding=(1, 1))``), see
:mod:`tecc.relay.op`."""
from .op import _namespace

__getattr__, __dir__ = _namespace("nn.", globals())
