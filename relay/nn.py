"""TVM's ``relay.nn``: a builder per registered ``nn.*`` operator
(``relay.nn.conv2d(data, weight, strides=(1, 1), padding=(1, 1))``), see
:mod:`tecc.relay.op`."""
from .op import _namespace, call


def dropout_raw(data, rate=0.5):
    """The ``nn.dropout`` call itself, both fields (TVM's ``relay.nn.dropout_raw``);
    ``relay.nn.dropout`` is its first field, the data."""
    return call("nn.dropout", data, rate=rate)


__getattr__, __dir__ = _namespace("nn.", globals())
