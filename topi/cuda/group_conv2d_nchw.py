"""Grouped 2-D convolution (NCHW) on CUDA, tunable as the task
``"group_conv2d_nchw.cuda"`` (TVM's ``topi.cuda.group_conv2d_nchw``): the direct
template of :mod:`.conv2d_direct`; a block's channel tile reads the input channels
of the groups it covers."""
from __future__ import annotations

from ...tuner.task.topi_integration import register_topi_compute
from .. import nn
from ..nn.conv2d import GROUP_CONV2D_NCHW
from ..nn.utils import conv2d_workload_args
from .conv2d import tunable_schedule


@register_topi_compute("group_conv2d_nchw.cuda", canonical=conv2d_workload_args)
def group_conv2d_nchw(cfg, data, kernel, stride, padding, dilation, groups, out_dtype="float32"):
    """The grouped convolution compute (:func:`tecc.topi.nn.group_conv2d_nchw`) of the
    tunable task."""
    return nn.group_conv2d_nchw(data, kernel, stride, padding, dilation, groups, out_dtype)


schedule_group_conv2d_nchw = tunable_schedule(
    "group_conv2d_nchw.cuda", (GROUP_CONV2D_NCHW,), "schedule_group_conv2d_nchw",
    """The CUDA schedule of ``group_conv2d_nchw`` (and of element-wise ops after it,
    in the same kernel).""")
