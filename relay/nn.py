"""TVM's ``relay.nn``: a builder per registered ``nn.*`` operator
(``relay.nn.conv2d(data, weight, strides=(1, 1), padding=(1, 1))``), see
:mod:`tecc.relay.op`."""
from .op import _builder, _builder_names


def __getattr__(name):
    if name in _builder_names(prefix="nn."):
        fn = _builder("nn." + name)
        globals()[name] = fn
        return fn
    raise AttributeError(f"module 'tecc.relay.nn' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_builder_names(prefix="nn.")))
