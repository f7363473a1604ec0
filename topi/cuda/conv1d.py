"""1-D convolution on CUDA, tunable as the tasks ``"conv1d_ncw.cuda"`` and
``"conv1d_nwc.cuda"`` (TVM's ``topi.cuda.conv1d_ncw`` / ``conv1d_nwc``): the direct
template of :mod:`.conv2d_direct` with no rows (``tile_y`` and ``tile_ry`` stay
whole)."""
from __future__ import annotations

from ...tuner.task.topi_integration import register_topi_compute
from .. import nn
from ..nn.conv2d import CONV1D_NCW, CONV1D_NWC
from .conv2d import tunable_schedule


@register_topi_compute("conv1d_ncw.cuda")
def conv1d_ncw(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
    """The NCW convolution compute (:func:`tecc.topi.nn.conv1d_ncw`) of the tunable task."""
    return nn.conv1d_ncw(data, kernel, strides, padding, dilation, out_dtype)


@register_topi_compute("conv1d_nwc.cuda")
def conv1d_nwc(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
    """The NWC convolution compute (:func:`tecc.topi.nn.conv1d_nwc`) of the tunable task."""
    return nn.conv1d_nwc(data, kernel, strides, padding, dilation, out_dtype)


_SUMMARY = """The CUDA schedule of ``conv1d_{}`` (and of element-wise ops after it, in the
    same kernel)."""

schedule_conv1d_ncw = tunable_schedule("conv1d_ncw.cuda", (CONV1D_NCW,), "schedule_conv1d_ncw", _SUMMARY.format("ncw"))
schedule_conv1d_nwc = tunable_schedule("conv1d_nwc.cuda", (CONV1D_NWC,), "schedule_conv1d_nwc", _SUMMARY.format("nwc"))
