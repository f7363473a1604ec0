"""Transposed 2-D convolution (NCHW) on CUDA, tunable as the task
``"conv2d_transpose_nchw.cuda"`` (TVM's ``topi.cuda.conv2d_transpose_nchw``): the
direct template of :mod:`.conv2d_direct`, the spread and padded input computed as
the block's threads load it into shared memory, the filter read flipped."""
from __future__ import annotations

from ...tuner.task.topi_integration import register_topi_compute
from .. import nn
from ..nn.conv2d import CONV2D_TRANSPOSE_NCHW
from .conv2d import tunable_schedule


@register_topi_compute("conv2d_transpose_nchw.cuda")
def conv2d_transpose_nchw(cfg, data, kernel, stride, padding, out_dtype="float32", output_padding=(0, 0)):
    """The transposed convolution compute (:func:`tecc.topi.nn.conv2d_transpose_nchw`;
    IOHW kernel) of the tunable task."""
    return nn.conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding)


schedule_conv2d_transpose_nchw = tunable_schedule(
    "conv2d_transpose_nchw.cuda", (CONV2D_TRANSPOSE_NCHW,), "schedule_conv2d_transpose_nchw",
    """The CUDA schedule of ``conv2d_transpose_nchw`` (and of element-wise ops after
    it, in the same kernel).""")
