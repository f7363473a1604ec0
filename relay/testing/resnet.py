"""ResNet (He, Zhang, Ren and Sun, "Deep Residual Learning for Image Recognition",
CVPR 2016), the original post-activation form: each unit computes
``relu(F(x) + shortcut(x))``, every convolution followed by a batch norm.

ImageNet networks (input height above 32): a 7x7/2 convolution and a 3x3/2 max
pooling, then four stages of units of widths 64, 128, 256 and 512 -- basic units
(two 3x3 convolutions) for 18 and 34 layers, bottleneck units (1x1, 3x3, 1x1 of four
times the width) for 50, 101 and 152 -- the first unit of stages 2-4 halving the
resolution (stride 2 in its first convolution); where a unit changes the shape, its
shortcut is a 1x1 convolution and a batch norm (the paper's option B).  Global
average pooling, a fully connected layer and a softmax end it.

CIFAR networks (input height 32 or less): ``6n + 2`` layers (20, 32, 44, 56, 110,
1202 in the paper): a 3x3 convolution of 16 channels, three stages of ``n`` basic
units of widths 16, 32 and 64, and the same head.  Their shortcuts have no
parameters (the paper's option A): where the shape changes, the input is subsampled
and the new channels are zeros.

Parameters are named ``conv0_weight``, ``bn0_gamma``, ``stage2_unit1_conv1_weight``,
``stage2_unit1_bn1_moving_var``, ``stage2_unit1_sc_weight`` (projection shortcut),
``stage2_unit1_sc_bn_beta``, ``fc1_weight``, ``fc1_bias``.

TVM's ``relay.testing.resnet`` builds the pre-activation variant instead (He et al.,
"Identity Mappings in Deep Residual Networks": batch norm and relu before each
convolution, a batch norm without scale on the input, ``bn_data``): the same
convolutions and dense layer, so the same kernels to tune, but other batch norms.
"""
from __future__ import annotations

from ...graph.ir import Function, GraphError, TensorType, Var, free_vars
from .. import nn, op
from . import layers
from .init import create_workload

#: ImageNet depth -> (bottleneck units?, units per stage)
IMAGENET_UNITS = {
    18: (False, (2, 2, 2, 2)),
    34: (False, (3, 4, 6, 3)),
    50: (True, (3, 4, 6, 3)),
    101: (True, (3, 4, 23, 3)),
    152: (True, (3, 8, 36, 3)),
}
#: the width of each ImageNet stage (a bottleneck unit's output is 4 times it)
IMAGENET_WIDTHS = (64, 128, 256, 512)
#: the width of each CIFAR stage
CIFAR_WIDTHS = (16, 32, 64)
#: batch norm epsilon
EPSILON = 1e-5
LAYOUTS = ("NCHW", "NHWC")


def _conv_bn(data, name, bn_name, channels, kernel, stride, padding, layout, relu):
    """Convolution, batch norm, and relu when ``relu``."""
    out = layers.conv2d(data, name=name, channels=channels, kernel_size=(kernel, kernel), strides=(stride, stride),
                        padding=(padding, padding), data_layout=layout)
    out = layers.batch_norm_infer(out, name=bn_name, axis=layout.index("C"), epsilon=EPSILON)
    return nn.relu(out) if relu else out


def _zero_shortcut(data, channels, stride, layout):
    """The parameter-free shortcut (option A): every ``stride``-th pixel, and
    zeros for the channels the input lacks."""
    shape = layers.infer_shape(data)
    h, w = layout.index("H"), layout.index("W")
    if stride > 1:
        data = op.strided_slice(data, begin=(0, 0), end=(shape[h], shape[w]), strides=(stride, stride), axes=(h, w))
    extra = channels - shape[layout.index("C")]
    if extra:
        pad = [(0, 0)] * 4
        pad[layout.index("C")] = (0, extra)
        data = nn.pad(data, pad_width=tuple(pad))
    return data


def residual_unit(data, width, stride, name, bottleneck=False, layout="NCHW", zero_shortcut=False):
    """One residual unit: ``relu(F(data) + shortcut(data))``.

    Parameters
    ----------
    data : tecc.graph.Expr
    width : int
        Channels of the unit's 3x3 convolutions; the output has ``width`` (basic)
        or ``4 * width`` (bottleneck) channels.
    stride : int
        Of the unit's first convolution (and of its shortcut).
    name : str
        Prefix of its parameters' names (``stage1_unit1``).
    bottleneck : bool
    layout : str
        ``"NCHW"`` or ``"NHWC"``.
    zero_shortcut : bool
        Option A where the shape changes (subsampling and zero channels) instead of
        a 1x1 convolution and a batch norm.

    Returns
    -------
    tecc.graph.Expr
    """
    in_channels = layers.infer_shape(data)[layout.index("C")]
    if bottleneck:
        out_channels = 4 * width
        body = _conv_bn(data, f"{name}_conv1", f"{name}_bn1", width, 1, stride, 0, layout, relu=True)
        body = _conv_bn(body, f"{name}_conv2", f"{name}_bn2", width, 3, 1, 1, layout, relu=True)
        body = _conv_bn(body, f"{name}_conv3", f"{name}_bn3", out_channels, 1, 1, 0, layout, relu=False)
    else:
        out_channels = width
        body = _conv_bn(data, f"{name}_conv1", f"{name}_bn1", width, 3, stride, 1, layout, relu=True)
        body = _conv_bn(body, f"{name}_conv2", f"{name}_bn2", width, 3, 1, 1, layout, relu=False)
    if stride == 1 and in_channels == out_channels:
        shortcut = data
    elif zero_shortcut:
        shortcut = _zero_shortcut(data, out_channels, stride, layout)
    else:
        shortcut = _conv_bn(data, f"{name}_sc", f"{name}_sc_bn", out_channels, 1, stride, 0, layout, relu=False)
    return nn.relu(op.add(body, shortcut))


def _net_config(num_layers, height):
    """``(cifar, bottleneck, units per stage, widths)`` of a depth, for an input
    ``height`` pixels high."""
    if height <= 32:
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 8 \
                or (num_layers - 2) % 6:
            raise GraphError(f"resnet: num_layers={num_layers!r} is not a CIFAR depth (6n + 2: 20, 32, 44, 56, 110 "
                             f"...) for an image {height} pixels high; images above 32 pixels take 18, 34, 50, 101 "
                             "or 152")
        n = (num_layers - 2) // 6
        return True, False, (n, n, n), CIFAR_WIDTHS
    if num_layers not in IMAGENET_UNITS:
        raise GraphError(f"resnet: num_layers={num_layers!r} is not one of {sorted(IMAGENET_UNITS)} (the ImageNet "
                         f"depths, for images above 32 pixels high; 32 or less take the CIFAR depths 6n + 2)")
    bottleneck, units = IMAGENET_UNITS[num_layers]
    return False, bottleneck, units, IMAGENET_WIDTHS


def get_net(batch_size, num_classes, num_layers=50, image_shape=(3, 224, 224), layout="NCHW", dtype="float32",
            **kwargs):
    """The ResNet of ``num_layers`` layers as a graph Function (see the module's
    docstring).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    num_layers : int
        18, 34, 50, 101 or 152 for images above 32 pixels high; ``6n + 2`` (20, 32,
        44, 56, 110 ...) for smaller ones.
    image_shape : tuple of int
        One image in the layout's order: ``(C, H, W)`` for NCHW, ``(H, W, C)`` for NHWC.
    layout : str
        ``"NCHW"`` or ``"NHWC"``.
    dtype : str

    Returns
    -------
    tecc.graph.Function
    """
    if kwargs:
        raise GraphError(f"resnet: unknown argument(s) {sorted(kwargs)}; it takes batch_size, num_classes, "
                         "num_layers, image_shape, layout and dtype")
    layers.check_layout("resnet", "layout", layout, LAYOUTS)
    data_shape = layers.input_shape("resnet", batch_size, image_shape, num_classes)
    cifar, bottleneck, units, widths = _net_config(num_layers, data_shape[layout.index("H")])
    data = Var("data", TensorType(data_shape, dtype))
    if cifar:
        body = _conv_bn(data, "conv0", "bn0", widths[0], 3, 1, 1, layout, relu=True)
    else:
        body = _conv_bn(data, "conv0", "bn0", widths[0], 7, 2, 3, layout, relu=True)
        body = nn.max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=layout)
    for stage, (count, width) in enumerate(zip(units, widths)):
        for unit in range(count):
            stride = 2 if unit == 0 and stage > 0 else 1
            body = residual_unit(body, width, stride, f"stage{stage + 1}_unit{unit + 1}", bottleneck=bottleneck,
                                 layout=layout, zero_shortcut=cifar)
    body = nn.global_avg_pool2d(body, layout=layout)
    body = nn.batch_flatten(body)
    body = layers.dense_add_bias(body, units=num_classes, name="fc1")
    body = nn.softmax(body)
    return Function(free_vars(body), body)


def get_workload(batch_size=1, num_classes=1000, num_layers=18, image_shape=(3, 224, 224), layout="NCHW",
                 dtype="float32", **kwargs):
    """A ResNet and its initial parameters (TVM's ``relay.testing.resnet.get_workload``).

    Parameters
    ----------
    batch_size : int
    num_classes : int
    num_layers : int
        See :func:`get_net`.
    image_shape : tuple of int
        ``(C, H, W)`` for NCHW, ``(H, W, C)`` for NHWC.
    layout : str
        ``"NCHW"`` or ``"NHWC"``.
    dtype : str

    Returns
    -------
    mod : tecc.graph.Module
    params : dict of str to tecc.nd.NDArray
    """
    net = get_net(batch_size, num_classes, num_layers=num_layers, image_shape=image_shape, layout=layout,
                  dtype=dtype, **kwargs)
    return create_workload(net)
