"""Depthwise 2-D convolution on CUDA, tunable as the tasks
``"depthwise_conv2d_nchw.cuda"`` (TVM's ``topi.cuda.depthwise_conv2d_nchw``) and
``"depthwise_conv2d_nhwc.cuda"``: the direct template of :mod:`.conv2d_direct` with
one output channel per thread and the block's input window shared by its
threads."""
from __future__ import annotations

from ...tuner.task.topi_integration import register_topi_compute
from .. import nn
from ..nn.conv2d import DEPTHWISE_CONV2D_NCHW
from ..nn.depthwise_conv2d import DEPTHWISE_CONV2D_NHWC
from ..nn.utils import conv2d_workload_args
from .conv2d import tunable_schedule


@register_topi_compute("depthwise_conv2d_nchw.cuda", canonical=conv2d_workload_args)
def depthwise_conv2d_nchw(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
    """The depthwise convolution compute (:func:`tecc.topi.nn.depthwise_conv2d_nchw`)
    of the tunable task."""
    return nn.depthwise_conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


schedule_depthwise_conv2d_nchw = tunable_schedule(
    "depthwise_conv2d_nchw.cuda", (DEPTHWISE_CONV2D_NCHW,), "schedule_depthwise_conv2d_nchw",
    """The CUDA schedule of ``depthwise_conv2d_nchw`` (and of element-wise ops after
    it, in the same kernel).""")


@register_topi_compute("depthwise_conv2d_nhwc.cuda", canonical=conv2d_workload_args)
def depthwise_conv2d_nhwc(cfg, data, kernel, strides, padding, dilation, kernel_layout="HWOI", out_dtype=None):
    """The NHWC depthwise convolution compute (:func:`tecc.topi.nn.depthwise_conv2d_nhwc`;
    HWOI kernel by default) of the tunable task ``"depthwise_conv2d_nhwc.cuda"``."""
    return nn.depthwise_conv2d_nhwc(data, kernel, strides, padding, dilation, kernel_layout, out_dtype)


schedule_depthwise_conv2d_nhwc = tunable_schedule(
    "depthwise_conv2d_nhwc.cuda", (DEPTHWISE_CONV2D_NHWC,), "schedule_depthwise_conv2d_nhwc",
    """The CUDA schedule of ``depthwise_conv2d_nhwc`` (and of element-wise ops after
    it, in the same kernel): the direct template with threadIdx.x along the
    channels, the contiguous axis of the output, the input and the HWOI filter;
    each block's input window and filter taps in shared memory.""")
