"""Grouped transposed convolution (NCHW) on CPUs: the spread and padded input at
the root over all cores, then the register-tiled direct schedule of
:mod:`.conv2d` (channel tiles inside one group when the group's channels allow,
the row's pixels as the vector lanes)."""
from __future__ import annotations

from .. import nn
from ..generic.default import new_schedule
from ..nn.conv2d import CONV2D_TRANSPOSE_NCHW
from ..nn.conv2d_transpose import GROUP_CONV2D_TRANSPOSE_NCHW
from ..schedule_registry import register_schedule
from ..utils import find_anchors, get_const_tuple
from .conv2d import schedule_conv_from_existing


def group_conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding, groups):
    """The grouped transposed convolution compute
    (:func:`tecc.topi.nn.group_conv2d_transpose_nchw`)."""
    return nn.group_conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding, groups)


def _channels_per_group(conv):
    groups = get_const_tuple([conv.op.attrs.get("groups", 1)])[0]
    channels = get_const_tuple(conv.shape)[1]
    if not isinstance(groups, int) or not isinstance(channels, int) or groups < 1:
        return None
    return channels // groups


@register_schedule(GROUP_CONV2D_TRANSPOSE_NCHW, "cpu")
def schedule_group_conv2d_transpose_nchw(outs):
    """The CPU schedule of ``group_conv2d_transpose_nchw`` (and of element-wise ops
    after it; one group, which is a plain ``conv2d_transpose_nchw``, too).

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
    for op in find_anchors(s, out, (GROUP_CONV2D_TRANSPOSE_NCHW, CONV2D_TRANSPOSE_NCHW),
                           "schedule_group_conv2d_transpose_nchw", "a group_conv2d_transpose_nchw"):
        conv = op.output(0)
        schedule_conv_from_existing(s, conv, out, channels_last=False, channels_per_group=_channels_per_group(conv))
    return s
