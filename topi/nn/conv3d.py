"""3-D convolution (TVM's ``topi.nn.conv3d_ncdhw`` / ``conv3d_ndhwc``): :func:`.conv2d.conv`
with three spatial axes (depth, height, width), for video and volumetric models."""
from __future__ import annotations

from .conv2d import CONV3D_NCDHW, CONV3D_NDHWC, GROUP_CONV3D_NCDHW, conv, describe_call


def conv3d_ncdhw(Input, Filter, stride, padding, dilation, groups=1, out_dtype=None):
    """3-D convolution of NCDHW ``Input`` (``[batch, in_channel, in_depth, in_height,
    in_width]``) with an OIDHW ``Filter`` (``[num_filter, in_channel // groups,
    filter_depth, filter_height, filter_width]``).

    ``stride`` and ``dilation`` are an int or 3 ints; ``padding`` an int, 3 ints,
    6 ints (front, top, left, back, bottom, right) or ``"SAME"`` / ``"VALID"``.
    Returns ``[batch, num_filter, out_depth, out_height, out_width]``, tagged
    ``conv3d_ncdhw`` (``group_conv3d_ncdhw`` with groups)."""
    return conv(Input, Filter, stride, padding, dilation, groups, "NCDHW", "OIDHW", out_dtype,
                op_tag=CONV3D_NCDHW if groups == 1 else GROUP_CONV3D_NCDHW,
                what=describe_call("conv3d_ncdhw", Input, Filter))


def conv3d_ndhwc(Input, Filter, stride, padding, dilation, groups=1, out_dtype=None):
    """3-D convolution of NDHWC ``Input`` with a DHWIO ``Filter`` (``[filter_depth,
    filter_height, filter_width, in_channel // groups, num_filter]``); tagged
    ``conv3d_ndhwc``."""
    return conv(Input, Filter, stride, padding, dilation, groups, "NDHWC", "DHWIO", out_dtype, op_tag=CONV3D_NDHWC,
                what=describe_call("conv3d_ndhwc", Input, Filter))
