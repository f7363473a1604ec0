"""NHWC depthwise convolution on CPUs (TVM's ``topi.x86`` names): the register-tiled
direct schedule of :mod:`.conv2d` with the channels as the vector lanes -- a tile
of a row's pixels by a vector of channels, the kernel taps outside, so every
filter vector loaded serves the tile's pixels and the input is read contiguously
along the channels."""
from __future__ import annotations

from .. import nn
from ..generic.default import new_schedule
from ..nn.depthwise_conv2d import DEPTHWISE_CONV2D_NHWC
from ..schedule_registry import register_schedule
from ..utils import find_anchors
from .conv2d import schedule_conv_from_existing


def depthwise_conv2d_nhwc(data, kernel, strides, padding, dilation, kernel_layout="HWOI", out_dtype=None):
    """The NHWC depthwise convolution compute (:func:`tecc.topi.nn.depthwise_conv2d_nhwc`)."""
    return nn.depthwise_conv2d_nhwc(data, kernel, strides, padding, dilation, kernel_layout, out_dtype)


@register_schedule(DEPTHWISE_CONV2D_NHWC, "cpu")
def schedule_depthwise_conv2d_nhwc(outs):
    """The CPU schedule of ``depthwise_conv2d_nhwc`` (and of element-wise ops after
    it): register tiles of a row's pixels by channel vectors, rows over the cores,
    the padded input once at the root.

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s); the first is the final one.

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    out = outs[0]
    for op in find_anchors(s, out, (DEPTHWISE_CONV2D_NHWC,), "schedule_depthwise_conv2d_nhwc",
                           "a depthwise_conv2d_nhwc"):
        schedule_conv_from_existing(s, op.output(0), out, channels_last=True)
    return s
