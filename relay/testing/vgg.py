"""VGG (Simonyan and Zisserman, "Very Deep Convolutional Networks for Large-Scale
Image Recognition", ICLR 2015): five stages of 3x3 convolutions (padding 1, with
bias and relu; 64, 128, 256, 512 and 512 channels) each followed by a 2x2/2 max
pooling, then three fully connected layers (4096, 4096, ``num_classes``) with relu
and dropout between them, and a softmax.  Configurations A, B, D and E of the
paper's Table 1 are the 11, 13, 16 and 19 layer networks; ``batch_norm=True``
adds a batch norm after each convolution (a later variant, not the paper's).

Parameters are named ``conv<stage>_<k>_weight``, ``conv<stage>_<k>_bias``,
``bn<stage>_<k>_*``, ``fc6_weight``, ``fc6_bias`` ... ``fc8_bias``, as in TVM's
``relay.testing.vgg``.
"""
from __future__ import annotations

from ...graph.ir import Function, GraphError, TensorType, Var, free_vars
from .. import nn
from . import layers
from .init import create_workload

#: num_layers -> convolutions per stage
STAGES = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}
#: channels of each stage's convolutions
CHANNELS = (64, 128, 256, 512, 512)


def get_feature(data, convs_per_stage, batch_norm=False):
    """The convolution stages, each ending with a 2x2/2 max pooling."""
    body = data
    for stage, (count, channels) in enumerate(zip(convs_per_stage, CHANNELS), 1):
        for k in range(1, count + 1):
            name = f"conv{stage}_{k}"
            body = layers.conv2d(body, name=name, channels=channels, kernel_size=(3, 3), padding=(1, 1))
            body = layers.bias_add(body, f"{name}_bias")
            if batch_norm:
                body = layers.batch_norm_infer(body, name=f"bn{stage}_{k}")
            body = nn.relu(body)
        body = nn.max_pool2d(body, pool_size=(2, 2), strides=(2, 2))
    return body


def get_classifier(data, num_classes):
    """Flatten, then fc6 and fc7 (4096, relu, dropout) and fc8 (the class scores)."""
    body = nn.batch_flatten(data)
    for name in ("fc6", "fc7"):
        body = nn.relu(layers.dense_add_bias(body, units=4096, name=name))
        body = nn.dropout(body, rate=0.5)
    return layers.dense_add_bias(body, units=num_classes, name="fc8")


def get_net(batch_size, image_shape, num_classes, dtype, num_layers=11, batch_norm=False):
    """VGG as a graph Function (see the module's docstring).

    Parameters
    ----------
    batch_size : int
    image_shape : tuple of int
        One image, ``(C, H, W)``; H and W at least 32 (five poolings by 2).
    num_classes : int
    dtype : str
    num_layers : int
        11, 13, 16 or 19.
    batch_norm : bool

    Returns
    -------
    tecc.graph.Function
    """
    if num_layers not in STAGES:
        raise GraphError(f"vgg: num_layers={num_layers!r} is not one of {sorted(STAGES)}")
    data_shape = layers.input_shape("vgg", batch_size, image_shape, num_classes)
    if min(data_shape[2:]) < 32:
        raise GraphError(f"vgg: image_shape {tuple(image_shape)} is smaller than 32x32; the five 2x2 poolings need "
                         "at least 32 pixels each way")
    data = Var("data", TensorType(data_shape, dtype))
    body = get_classifier(get_feature(data, STAGES[num_layers], batch_norm), num_classes)
    body = nn.softmax(body)
    return Function(free_vars(body), body)


def get_workload(batch_size, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", num_layers=11,
                 batch_norm=False):
    """VGG and its initial parameters (TVM's ``relay.testing.vgg.get_workload``).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    image_shape : tuple of int
        One image, ``(C, H, W)``.
    dtype : str
    num_layers : int
        11, 13, 16 or 19.
    batch_norm : bool

    Returns
    -------
    mod : tecc.graph.Module
    params : dict of str to tecc.nd.NDArray
    """
    return create_workload(get_net(batch_size, image_shape, num_classes, dtype, num_layers, batch_norm))
