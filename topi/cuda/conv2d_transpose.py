"""Transposed 2-D convolution (NCHW) on CUDA, tunable as the tasks
``"conv2d_transpose_nchw.cuda"`` (TVM's ``topi.cuda.conv2d_transpose_nchw``) and
``"group_conv2d_transpose_nchw.cuda"`` (grouped): the
direct template of :mod:`.conv2d_direct`, the spread and padded input computed as
the block's threads load it into shared memory, the filter read flipped."""
from __future__ import annotations

from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn
from ..generic.default import outputs_of
from ..nn.conv2d import CONV2D_TRANSPOSE_NCHW
from ..nn.conv2d_transpose import GROUP_CONV2D_TRANSPOSE_NCHW
from ..nn.utils import conv2d_transpose_workload_args
from ..schedule_registry import register_schedule
from ..tunable import schedule_either
from .conv2d import direct_template, tunable_schedule


@register_topi_compute("conv2d_transpose_nchw.cuda", canonical=conv2d_transpose_workload_args)
def conv2d_transpose_nchw(cfg, data, kernel, stride, padding, out_dtype="float32", output_padding=(0, 0)):
    """The transposed convolution compute (:func:`tecc.topi.nn.conv2d_transpose_nchw`;
    IOHW kernel) of the tunable task."""
    return nn.conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding)


schedule_conv2d_transpose_nchw = tunable_schedule(
    "conv2d_transpose_nchw.cuda", (CONV2D_TRANSPOSE_NCHW,), "schedule_conv2d_transpose_nchw",
    """The CUDA schedule of ``conv2d_transpose_nchw`` (and of element-wise ops after
    it, in the same kernel).""")


@register_topi_compute("group_conv2d_transpose_nchw.cuda", canonical=conv2d_transpose_workload_args)
def group_conv2d_transpose_nchw(cfg, data, kernel, stride, padding, out_dtype, output_padding, groups):
    """The grouped transposed convolution compute
    (:func:`tecc.topi.nn.group_conv2d_transpose_nchw`; IOHW kernel of ``num_filter //
    groups`` output channels) of the tunable task ``"group_conv2d_transpose_nchw.cuda"``."""
    return nn.group_conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding, groups)


# one group makes a plain transposed convolution (tagged so): the template takes both
_group_template = direct_template((GROUP_CONV2D_TRANSPOSE_NCHW, CONV2D_TRANSPOSE_NCHW),
                                  "schedule_group_conv2d_transpose_nchw")
_group_registered = register_topi_schedule("group_conv2d_transpose_nchw.cuda")(_group_template)


@register_schedule(GROUP_CONV2D_TRANSPOSE_NCHW, "cuda")
def schedule_group_conv2d_transpose_nchw(outs):
    """The CUDA schedule of ``group_conv2d_transpose_nchw`` (and of element-wise ops
    after it, in the same kernel): the direct template, the spread and padded input
    computed as the block's threads load it into shared memory; a block's channel
    tile reads the input channels of the groups it covers.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    return schedule_either(outputs_of(outs), "group_conv2d_transpose_nchw.cuda", _group_registered,
                           _group_template)
