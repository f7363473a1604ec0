"""MobileNet v1 (Howard et al., "MobileNets: Efficient Convolutional Neural Networks
for Mobile Vision Applications", 2017): a 3x3/2 convolution of 32 channels, then 13
depthwise separable blocks -- a 3x3 depthwise convolution (a grouped convolution
with one group per channel) and a 1x1 pointwise one, each followed by a batch norm
and a relu -- four of which halve the resolution, then global average pooling, a
fully connected layer and a softmax (the paper's Table 1, width multiplier
``alpha``).

Parameters are named ``conv_block_1_conv_weight``, ``conv_block_1_bn_gamma``,
``separable_conv_block_<k>_depthwise_conv1_weight`` (the name :class:`~.init.Xavier`
recognizes), ``separable_conv_block_<k>_bn1_*``, ``..._conv2_weight``,
``..._bn2_*``, ``fc_weight`` and ``fc_bias``, as in TVM's ``relay.testing.mobilenet``.
"""
from __future__ import annotations

from ...graph.ir import Function, GraphError, TensorType, Var, free_vars
from .. import nn
from . import layers
from .init import create_workload

#: (output channels of the pointwise convolution, stride of the depthwise one) of
#: each separable block, at alpha = 1
BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
          (512, 1), (1024, 2), (1024, 1))
#: batch norm epsilon
EPSILON = 1e-5
#: tecc's grouped (depthwise) convolution is NCHW only
LAYOUTS = ("NCHW",)


def conv_block(data, name, channels, kernel_size=(3, 3), strides=(1, 1), padding=(1, 1), layout="NCHW"):
    """Convolution, batch norm, relu; parameters ``<name>_conv_weight``, ``<name>_bn_*``."""
    out = layers.conv2d(data, name=f"{name}_conv", channels=channels, kernel_size=kernel_size, strides=strides,
                        padding=padding, data_layout=layout)
    out = layers.batch_norm_infer(out, name=f"{name}_bn", axis=layout.index("C"), epsilon=EPSILON)
    return nn.relu(out)


def separable_conv_block(data, name, pointwise_channels, stride=1, layout="NCHW"):
    """A 3x3 depthwise convolution of stride ``stride`` and a 1x1 convolution to
    ``pointwise_channels``, each followed by a batch norm and a relu."""
    channels = layers.infer_shape(data)[layout.index("C")]
    out = layers.conv2d(data, name=f"{name}_depthwise_conv1", channels=channels, groups=channels, kernel_size=(3, 3),
                        strides=(stride, stride), padding=(1, 1), data_layout=layout)
    out = layers.batch_norm_infer(out, name=f"{name}_bn1", axis=layout.index("C"), epsilon=EPSILON)
    out = nn.relu(out)
    out = layers.conv2d(out, name=f"{name}_conv2", channels=pointwise_channels, kernel_size=(1, 1),
                        data_layout=layout)
    out = layers.batch_norm_infer(out, name=f"{name}_bn2", axis=layout.index("C"), epsilon=EPSILON)
    return nn.relu(out)


def get_net(batch_size=1, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", layout="NCHW", alpha=1.0):
    """MobileNet v1 as a graph Function (see the module's docstring).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    image_shape : tuple of int
        One image, ``(C, H, W)``.
    dtype : str
    layout : str
        ``"NCHW"`` (tecc's depthwise convolution takes no other).
    alpha : float
        The width multiplier: every layer has ``int(alpha * channels)`` channels.

    Returns
    -------
    tecc.graph.Function
    """
    layers.check_layout("mobilenet", "layout", layout, LAYOUTS)
    data_shape = layers.input_shape("mobilenet", batch_size, image_shape, num_classes)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha or int(32 * alpha) < 1:
        raise GraphError(f"mobilenet: alpha must be a positive number (at least 1/32), got {alpha!r}")
    data = Var("data", TensorType(data_shape, dtype))
    body = conv_block(data, "conv_block_1", int(32 * alpha), strides=(2, 2), layout=layout)
    for k, (channels, stride) in enumerate(BLOCKS, 1):
        body = separable_conv_block(body, f"separable_conv_block_{k}", int(channels * alpha), stride, layout)
    body = nn.global_avg_pool2d(body, layout=layout)
    body = nn.batch_flatten(body)
    body = layers.dense_add_bias(body, units=num_classes, name="fc")
    body = nn.softmax(body)
    return Function(free_vars(body), body)


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", layout="NCHW"):
    """MobileNet v1 and its initial parameters (TVM's
    ``relay.testing.mobilenet.get_workload``).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    image_shape : tuple of int
        One image, ``(C, H, W)``.
    dtype : str
    layout : str
        ``"NCHW"``; tecc's graph layer has no grouped NHWC convolution, so an NHWC
        MobileNet is refused.

    Returns
    -------
    mod : tecc.graph.Module
    params : dict of str to tecc.nd.NDArray
    """
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype, layout))
