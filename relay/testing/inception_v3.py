"""Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for Computer
Vision", CVPR 2016), for images of about 299 x 299 (75 x 75 at least).

Every convolution is followed by a batch norm without scale (epsilon 0.001) and a
relu.  The stem: 3x3/2, 3x3 and 3x3 (padded) convolutions, a 3x3/2 max pooling,
1x1 and 3x3 convolutions, another 3x3/2 max pooling; then three blocks of 35x35
(``mixed_5b``-``5d``: 1x1, 5x5, double 3x3 and pooling branches), a grid reduction
(``mixed_6a``), four blocks of 17x17 with factorized 7x7 convolutions
(``mixed_6b``-``6e``), a second grid reduction (``mixed_7a``) and two blocks of 8x8
with branches split into 1x3 and 3x1 convolutions (``mixed_7b``, ``7c``); global
average pooling, a fully connected layer and a softmax.  The pooling branches
average over the window's pixels inside the image.  The auxiliary classifier (a
training aid) is left out.

A convolution unit ``<unit>`` has the parameters ``<unit>_weight``,
``<unit>_bn_beta``, ``<unit>_bn_moving_mean`` and ``<unit>_bn_moving_var``; units
are named after their block and branch as in TensorFlow's release
(``conv_1a``, ``mixed_6b_7x7dbl_3``, ``mixed_7c_3x3_2b``); the classifier is
``fc_weight``, ``fc_bias``.
"""
from __future__ import annotations

from ...graph.ir import Function, GraphError, TensorType, Var, free_vars
from .. import nn, op
from . import layers
from .init import create_workload

#: batch norm epsilon
EPSILON = 1e-3
#: the smallest image the valid convolutions and poolings leave a pixel of
MIN_SIZE = 75


def conv(data, name, channels, kernel=(1, 1), stride=1, padding=(0, 0)):
    """Convolution (no bias), batch norm without scale, relu."""
    out = layers.conv2d(data, name=name, channels=channels, kernel_size=kernel, strides=(stride, stride),
                        padding=padding)
    out = layers.batch_norm_infer(out, name=f"{name}_bn", epsilon=EPSILON, scale=False)
    return nn.relu(out)


def _pool(data, kind, stride=1, padding=1):
    if kind == "max":
        return nn.max_pool2d(data, pool_size=(3, 3), strides=(stride, stride), padding=(padding, padding))
    return nn.avg_pool2d(data, pool_size=(3, 3), strides=(stride, stride), padding=(padding, padding))


def _concat(branches):
    return op.concatenate(list(branches), axis=1)


def block_35(data, name, pool_channels):
    """35 x 35: 1x1; 1x1 then 5x5; 1x1 then two 3x3; average pooling then 1x1."""
    b1 = conv(data, f"{name}_1x1", 64)
    b5 = conv(data, f"{name}_5x5_1", 48)
    b5 = conv(b5, f"{name}_5x5_2", 64, (5, 5), padding=(2, 2))
    b3 = conv(data, f"{name}_3x3dbl_1", 64)
    b3 = conv(b3, f"{name}_3x3dbl_2", 96, (3, 3), padding=(1, 1))
    b3 = conv(b3, f"{name}_3x3dbl_3", 96, (3, 3), padding=(1, 1))
    bp = conv(_pool(data, "avg"), f"{name}_pool", pool_channels)
    return _concat((b1, b5, b3, bp))


def reduction_35_to_17(data, name):
    """35 x 35 to 17 x 17: 3x3/2; 1x1, 3x3, 3x3/2; max pooling 3x3/2."""
    b3 = conv(data, f"{name}_3x3", 384, (3, 3), stride=2)
    bd = conv(data, f"{name}_3x3dbl_1", 64)
    bd = conv(bd, f"{name}_3x3dbl_2", 96, (3, 3), padding=(1, 1))
    bd = conv(bd, f"{name}_3x3dbl_3", 96, (3, 3), stride=2)
    return _concat((b3, bd, _pool(data, "max", stride=2, padding=0)))


def block_17(data, name, c7):
    """17 x 17: 1x1; 1x1, 1x7, 7x1; 1x1, 7x1, 1x7, 7x1, 1x7; average pooling then
    1x1 (``c7`` channels inside the factorized branches, 192 out of each)."""
    b1 = conv(data, f"{name}_1x1", 192)
    b7 = conv(data, f"{name}_7x7_1", c7)
    b7 = conv(b7, f"{name}_7x7_2", c7, (1, 7), padding=(0, 3))
    b7 = conv(b7, f"{name}_7x7_3", 192, (7, 1), padding=(3, 0))
    bd = conv(data, f"{name}_7x7dbl_1", c7)
    bd = conv(bd, f"{name}_7x7dbl_2", c7, (7, 1), padding=(3, 0))
    bd = conv(bd, f"{name}_7x7dbl_3", c7, (1, 7), padding=(0, 3))
    bd = conv(bd, f"{name}_7x7dbl_4", c7, (7, 1), padding=(3, 0))
    bd = conv(bd, f"{name}_7x7dbl_5", 192, (1, 7), padding=(0, 3))
    bp = conv(_pool(data, "avg"), f"{name}_pool", 192)
    return _concat((b1, b7, bd, bp))


def reduction_17_to_8(data, name):
    """17 x 17 to 8 x 8: 1x1, 3x3/2; 1x1, 1x7, 7x1, 3x3/2; max pooling 3x3/2."""
    b3 = conv(data, f"{name}_3x3_1", 192)
    b3 = conv(b3, f"{name}_3x3_2", 320, (3, 3), stride=2)
    b7 = conv(data, f"{name}_7x7x3_1", 192)
    b7 = conv(b7, f"{name}_7x7x3_2", 192, (1, 7), padding=(0, 3))
    b7 = conv(b7, f"{name}_7x7x3_3", 192, (7, 1), padding=(3, 0))
    b7 = conv(b7, f"{name}_7x7x3_4", 192, (3, 3), stride=2)
    return _concat((b3, b7, _pool(data, "max", stride=2, padding=0)))


def block_8(data, name):
    """8 x 8: 1x1; 1x1 then (1x3 | 3x1); 1x1, 3x3 then (1x3 | 3x1); average pooling
    then 1x1 -- the split branches' halves concatenated."""
    b1 = conv(data, f"{name}_1x1", 320)
    b3 = conv(data, f"{name}_3x3_1", 384)
    b3a = conv(b3, f"{name}_3x3_2a", 384, (1, 3), padding=(0, 1))
    b3b = conv(b3, f"{name}_3x3_2b", 384, (3, 1), padding=(1, 0))
    bd = conv(data, f"{name}_3x3dbl_1", 448)
    bd = conv(bd, f"{name}_3x3dbl_2", 384, (3, 3), padding=(1, 1))
    bda = conv(bd, f"{name}_3x3dbl_3a", 384, (1, 3), padding=(0, 1))
    bdb = conv(bd, f"{name}_3x3dbl_3b", 384, (3, 1), padding=(1, 0))
    bp = conv(_pool(data, "avg"), f"{name}_pool", 192)
    return _concat((b1, b3a, b3b, bda, bdb, bp))


def get_net(batch_size, num_classes, image_shape, dtype):
    """Inception v3 as a graph Function (see the module's docstring).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    image_shape : tuple of int
        One image, ``(C, H, W)``, H and W at least 75.
    dtype : str

    Returns
    -------
    tecc.graph.Function
    """
    data_shape = layers.input_shape("inception_v3", batch_size, image_shape, num_classes)
    if min(data_shape[2:]) < MIN_SIZE:
        raise GraphError(f"inception_v3: image_shape {tuple(image_shape)} is smaller than {MIN_SIZE}x{MIN_SIZE}; its "
                         "unpadded convolutions and poolings need that much")
    data = Var("data", TensorType(data_shape, dtype))
    body = conv(data, "conv_1a", 32, (3, 3), stride=2)
    body = conv(body, "conv_2a", 32, (3, 3))
    body = conv(body, "conv_2b", 64, (3, 3), padding=(1, 1))
    body = _pool(body, "max", stride=2, padding=0)
    body = conv(body, "conv_3b", 80)
    body = conv(body, "conv_4a", 192, (3, 3))
    body = _pool(body, "max", stride=2, padding=0)
    body = block_35(body, "mixed_5b", 32)
    body = block_35(body, "mixed_5c", 64)
    body = block_35(body, "mixed_5d", 64)
    body = reduction_35_to_17(body, "mixed_6a")
    for name, c7 in (("mixed_6b", 128), ("mixed_6c", 160), ("mixed_6d", 160), ("mixed_6e", 192)):
        body = block_17(body, name, c7)
    body = reduction_17_to_8(body, "mixed_7a")
    body = block_8(body, "mixed_7b")
    body = block_8(body, "mixed_7c")
    body = nn.batch_flatten(nn.global_avg_pool2d(body))
    body = nn.softmax(layers.dense_add_bias(body, units=num_classes, name="fc"))
    return Function(free_vars(body), body)


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 299, 299), dtype="float32"):
    """Inception v3 and its initial parameters (TVM's
    ``relay.testing.inception_v3.get_workload``).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    image_shape : tuple of int
        One image, ``(C, H, W)``, H and W at least 75.
    dtype : str

    Returns
    -------
    mod : tecc.graph.Module
    params : dict of str to tecc.nd.NDArray
    """
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
