"""Neural-network operators: tensor-expression computes (what, not how).

Every function takes tensors and returns the output tensor; intermediate stages
carry a ``tag`` (and a name) by which a schedule finds them from the output
(``out.op.input_tensors``).  Schedules live beside, per target: :mod:`..generic`,
:mod:`..cuda`, :mod:`..x86`; numpy references in :mod:`..testing`.

==================  ====================================================
module              operators
==================  ====================================================
:mod:`.dense`       matmul, dense, batch_matmul, matmul_broadcast (numpy.matmul)
:mod:`.conv2d`      conv2d, conv2d_nchw, conv2d_nhwc, conv2d_hwcn, conv2d_NCHWc (nchwc_layout_block), pad_nchw
:mod:`.conv1d`      conv1d, conv1d_ncw, conv1d_nwc
:mod:`.conv3d`      conv3d_ncdhw, conv3d_ndhwc
:mod:`.deformable_conv2d`  deformable_conv2d_nchw (DCN, with DCNv2's mask; ONNX's DeformConv)
:mod:`.pad`         pad, mirror_pad, edge_pad
:mod:`.pooling`     pool1d, pool2d, pool3d, global_pool, adaptive_pool(1d/3d)
:mod:`.flatten`     flatten
:mod:`.space_to_depth`  space_to_depth, depth_to_space
:mod:`.softmax`     softmax, log_softmax
:mod:`.elemwise`    relu, leaky_relu, prelu, gelu, hardswish, hardsigmoid, elu, selu,
                    softplus, mish; tecc's fused epilogues
:mod:`.layer_norm`  layer_norm (over any axes)
:mod:`.loss`        nll_loss
==================  ====================================================

The other normalizations: :mod:`.instance_norm` (instance_norm), :mod:`.group_norm`
(group_norm), :mod:`.batch_norm` (batch_norm) and :mod:`.local_response_norm` (lrn).

The convolutions also have :mod:`.depthwise_conv2d` (depthwise_conv2d_nchw,
depthwise_conv2d_nhwc) and :mod:`.conv2d_transpose` (conv2d_transpose_nchw,
group_conv2d_transpose_nchw, conv3d_transpose_ncdhw), :mod:`.conv2d_winograd` (conv2d_NCHWc_winograd, Winograd's
F(2x2, 3x3) in channel blocks, and winograd_weight_nchwc), and :mod:`.dilate` (dilate).  :mod:`.upsampling`
(upsampling, upsampling3d) is a resize of :mod:`tecc.topi.image`.
"""
from .conv2d import conv2d, conv2d_hwcn, conv2d_nchw, conv2d_nhwc, pad_nchw  # noqa: F401
from .conv2d import conv, group_conv2d_nchw  # noqa: F401
from .conv2d import conv2d_NCHWc, nchwc_layout_block  # noqa: F401
from .conv2d_winograd import conv2d_NCHWc_winograd, winograd_weight_nchwc  # noqa: F401
from .conv1d import conv1d, conv1d_ncw, conv1d_nwc  # noqa: F401
from .conv3d import conv3d_ncdhw, conv3d_ndhwc  # noqa: F401
from .deformable_conv2d import deformable_conv2d_nchw  # noqa: F401
from .loss import nll_loss  # noqa: F401
from .conv2d_transpose import conv2d_transpose_nchw  # noqa: F401
from .depthwise_conv2d import depthwise_conv2d_nchw  # noqa: F401
from .depthwise_conv2d import depthwise_conv2d_nhwc  # noqa: F401
from .conv2d_transpose import conv3d_transpose_ncdhw, group_conv2d_transpose_nchw  # noqa: F401
from .dilate import dilate  # noqa: F401
from .dense import batch_matmul, dense, matmul  # noqa: F401
from .dense import matmul_broadcast  # noqa: F401
from .elemwise import bias_relu, leaky_relu, prelu, relu, scale_bias_relu_add  # noqa: F401
from .elemwise import elu, gelu, hardsigmoid, hardswish, mish, selu, softplus  # noqa: F401
from .layer_norm import layer_norm  # noqa: F401
from .instance_norm import instance_norm  # noqa: F401
from .group_norm import group_norm  # noqa: F401
from .batch_norm import batch_norm  # noqa: F401
from .local_response_norm import lrn  # noqa: F401
from .pad import pad  # noqa: F401
from .pad import edge_pad, mirror_pad  # noqa: F401
from .pooling import global_pool, pool1d, pool2d, pool3d  # noqa: F401
from .pooling import adaptive_pool, adaptive_pool1d, adaptive_pool3d  # noqa: F401
from .flatten import flatten  # noqa: F401
from .space_to_depth import depth_to_space, space_to_depth  # noqa: F401
from .softmax import log_softmax, softmax  # noqa: F401
from .upsampling import upsampling, upsampling3d  # noqa: F401
from .utils import get_pad_tuple  # noqa: F401
