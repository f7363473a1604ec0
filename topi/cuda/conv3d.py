"""3-D convolutions on CUDA, tunable as the tasks ``"conv3d_ncdhw.cuda"``,
``"conv3d_ndhwc.cuda"`` and ``"conv3d_transpose_ncdhw.cuda"`` (TVM's
``topi.cuda.conv3d_ncdhw`` / ``conv3d_ndhwc`` / ``conv3d_transpose_ncdhw``): the
direct template of :mod:`.conv2d_direct`, a block per depth plane's tile, the kernel's
depth one more chunked reduction axis (``tile_rz``)."""
from __future__ import annotations

from ...tuner.task.topi_integration import register_topi_compute
from .. import nn
from ..nn.conv2d import CONV3D_NCDHW, CONV3D_NDHWC, GROUP_CONV3D_NCDHW
from ..nn.conv2d_transpose import CONV3D_TRANSPOSE_NCDHW
from .conv2d import tunable_schedule


@register_topi_compute("conv3d_ncdhw.cuda")
def conv3d_ncdhw(cfg, data, kernel, strides, padding, dilation, groups=1, out_dtype="float32"):
    """The NCDHW convolution compute (:func:`tecc.topi.nn.conv3d_ncdhw`) of the tunable task."""
    return nn.conv3d_ncdhw(data, kernel, strides, padding, dilation, groups, out_dtype)


@register_topi_compute("conv3d_ndhwc.cuda")
def conv3d_ndhwc(cfg, data, kernel, strides, padding, dilation, groups=1, out_dtype="float32"):
    """The NDHWC convolution compute (:func:`tecc.topi.nn.conv3d_ndhwc`) of the tunable task."""
    return nn.conv3d_ndhwc(data, kernel, strides, padding, dilation, groups, out_dtype)


_SUMMARY = """The CUDA schedule of ``conv3d_{}`` (and of element-wise ops after it, in the
    same kernel)."""

schedule_conv3d_ncdhw = tunable_schedule("conv3d_ncdhw.cuda", (CONV3D_NCDHW, GROUP_CONV3D_NCDHW),
                                         "schedule_conv3d_ncdhw", _SUMMARY.format("ncdhw"))
schedule_conv3d_ndhwc = tunable_schedule("conv3d_ndhwc.cuda", (CONV3D_NDHWC,), "schedule_conv3d_ndhwc",
                                         _SUMMARY.format("ndhwc"))


@register_topi_compute("conv3d_transpose_ncdhw.cuda")
def conv3d_transpose_ncdhw(cfg, data, kernel, strides, padding, out_dtype="float32", output_padding=(0, 0, 0)):
    """The transposed 3-D convolution compute (:func:`tecc.topi.nn.conv3d_transpose_ncdhw`;
    IODHW kernel) of the tunable task."""
    return nn.conv3d_transpose_ncdhw(data, kernel, strides, padding, out_dtype, output_padding)


schedule_conv3d_transpose_ncdhw = tunable_schedule(
    "conv3d_transpose_ncdhw.cuda", (CONV3D_TRANSPOSE_NCDHW,), "schedule_conv3d_transpose_ncdhw",
    _SUMMARY.format("transpose_ncdhw"))
