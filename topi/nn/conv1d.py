"""1-D convolution (TVM's ``topi.nn.conv1d``): :func:`.conv2d.conv` with one spatial
axis."""
from __future__ import annotations

from .conv2d import CONV1D_NCW, CONV1D_NWC, conv, describe_call
from ..utils import TopiError


def conv1d_ncw(data, kernel, strides=1, padding="VALID", dilation=1, out_dtype=None):
    """1-D convolution of NCW ``data`` (``[batch, in_channel, in_width]``) with an OIW
    ``kernel`` (``[num_filter, in_channel, filter_width]``).

    ``padding`` is an int, ``(left, right)`` or ``"SAME"`` / ``"VALID"``.  Returns
    ``[batch, num_filter, out_width]``, tagged ``conv1d_ncw``."""
    return conv(data, kernel, strides, padding, dilation, 1, "NCW", "OIW", out_dtype, op_tag=CONV1D_NCW,
                what=describe_call("conv1d_ncw", data, kernel))


def conv1d_nwc(data, kernel, strides=1, padding="VALID", dilation=1, out_dtype=None):
    """1-D convolution of NWC ``data`` (``[batch, in_width, in_channel]``) with a WIO
    ``kernel`` (``[filter_width, in_channel, num_filter]``); tagged ``conv1d_nwc``."""
    return conv(data, kernel, strides, padding, dilation, 1, "NWC", "WIO", out_dtype, op_tag=CONV1D_NWC,
                what=describe_call("conv1d_nwc", data, kernel))


def conv1d(data, kernel, strides=1, padding="VALID", dilation=1, data_layout="NCW", kernel_layout="",
           out_dtype=None):
    """1-D convolution with ``data_layout`` ``"NCW"`` (OIW kernel by default) or
    ``"NWC"`` (WIO kernel by default)."""
    if data_layout not in ("NCW", "NWC"):
        raise TopiError(f"conv1d: data_layout {data_layout!r} is not supported; use 'NCW' or 'NWC'")
    return conv(data, kernel, strides, padding, dilation, 1, data_layout, kernel_layout, out_dtype,
                op_tag=CONV1D_NCW if data_layout == "NCW" else CONV1D_NWC,
                what=describe_call("conv1d", data, kernel, f"data_layout={data_layout!r}"))
