"""SqueezeNet (Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x fewer
parameters and <0.5MB model size", 2016), versions 1.0 (the paper's) and 1.1 (the
authors' later release: a 3x3 first convolution of 64 channels and earlier
poolings, 2.4x less computation for the same accuracy).

A fire module squeezes with 1x1 convolutions, then expands with 1x1 and 3x3 ones
whose outputs are concatenated along the channels; every convolution has a bias and
a relu.  After fire9: dropout, a 1x1 convolution to ``num_classes`` (conv10), global
average pooling and a softmax.  Max poolings are 3x3/2 and round up, as Caffe's do.

Parameters are named ``conv1_weight``, ``conv1_bias``,
``fire<k>_squeeze1x1_weight``, ``fire<k>_expand1x1_*``, ``fire<k>_expand3x3_*``
(k = 2 ... 9, the paper's numbering), ``conv10_weight`` and ``conv10_bias``.
"""
from __future__ import annotations

from ...graph.ir import Function, GraphError, TensorType, Var, free_vars
from .. import nn, op
from . import layers
from .init import create_workload

#: version -> (first convolution: (channels, kernel), the fire modules a max pooling
#: follows; one follows conv1 in both)
VERSIONS = {"1.0": ((96, 7), (4, 8)), "1.1": ((64, 3), (3, 5))}
#: fire module -> (squeeze, expand 1x1, expand 3x3) channels
FIRES = {2: (16, 64, 64), 3: (16, 64, 64), 4: (32, 128, 128), 5: (32, 128, 128), 6: (48, 192, 192),
         7: (48, 192, 192), 8: (64, 256, 256), 9: (64, 256, 256)}


def _conv_relu(data, name, channels, kernel, stride=1, padding=0):
    out = layers.conv2d(data, name=name, channels=channels, kernel_size=(kernel, kernel), strides=(stride, stride),
                        padding=(padding, padding))
    return nn.relu(layers.bias_add(out, f"{name}_bias"))


def _pool(data):
    return nn.max_pool2d(data, pool_size=(3, 3), strides=(2, 2), ceil_mode=True)


def fire(data, name, squeeze, expand1x1, expand3x3):
    """A fire module: squeeze, then the 1x1 and 3x3 expansions concatenated."""
    body = _conv_relu(data, f"{name}_squeeze1x1", squeeze, 1)
    left = _conv_relu(body, f"{name}_expand1x1", expand1x1, 1)
    right = _conv_relu(body, f"{name}_expand3x3", expand3x3, 3, padding=1)
    return op.concatenate([left, right], axis=1)


def get_net(batch_size, image_shape, num_classes, version, dtype):
    """SqueezeNet as a graph Function (see the module's docstring).

    Parameters
    ----------
    batch_size : int
    image_shape : tuple of int
        One image, ``(C, H, W)``.
    num_classes : int
    version : str
        ``"1.0"`` or ``"1.1"``.
    dtype : str

    Returns
    -------
    tecc.graph.Function
    """
    if version not in VERSIONS:
        raise GraphError(f"squeezenet: version={version!r} is not one of {sorted(VERSIONS)}")
    data_shape = layers.input_shape("squeezenet", batch_size, image_shape, num_classes)
    (channels, kernel), pools = VERSIONS[version]
    data = Var("data", TensorType(data_shape, dtype))
    body = _pool(_conv_relu(data, "conv1", channels, kernel, stride=2))
    for k, widths in FIRES.items():
        body = fire(body, f"fire{k}", *widths)
        if k in pools:
            body = _pool(body)
    body = nn.dropout(body, rate=0.5)
    body = _conv_relu(body, "conv10", num_classes, 1)
    body = nn.global_avg_pool2d(body)
    body = nn.softmax(nn.batch_flatten(body))
    return Function(free_vars(body), body)


def get_workload(batch_size=1, num_classes=1000, version="1.0", image_shape=(3, 224, 224), dtype="float32"):
    """SqueezeNet and its initial parameters (TVM's
    ``relay.testing.squeezenet.get_workload``).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    version : str
        ``"1.0"`` or ``"1.1"``.
    image_shape : tuple of int
        One image, ``(C, H, W)``.
    dtype : str

    Returns
    -------
    mod : tecc.graph.Module
    params : dict of str to tecc.nd.NDArray
    """
    return create_workload(get_net(batch_size, image_shape, num_classes, version, dtype))
