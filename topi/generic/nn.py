"""Generic (CPU) schedules of the neural-network operators: the default schedule,
as TVM's generic ones (correct everywhere, fast nowhere); :mod:`..x86` has tuned ones."""
from __future__ import annotations

from .default import default_schedule, named_default_schedule


def _default(name, auto_inline):
    return named_default_schedule(
        name, auto_inline, f"The default schedule of the operator's output(s) ``outs`` "
                           f"({'injective stages inlined' if auto_inline else 'every stage at the root'}).")


schedule_conv2d_nchw = _default("schedule_conv2d_nchw", False)
schedule_conv2d_nhwc = _default("schedule_conv2d_nhwc", False)
schedule_conv2d_hwcn = _default("schedule_conv2d_hwcn", False)
schedule_group_conv2d_nchw = _default("schedule_group_conv2d_nchw", False)
schedule_depthwise_conv2d_nchw = _default("schedule_depthwise_conv2d_nchw", False)
schedule_conv1d_ncw = _default("schedule_conv1d_ncw", False)
schedule_conv1d_nwc = _default("schedule_conv1d_nwc", False)
schedule_conv3d_ncdhw = _default("schedule_conv3d_ncdhw", False)
schedule_conv3d_ndhwc = _default("schedule_conv3d_ndhwc", False)
schedule_conv3d_transpose_ncdhw = _default("schedule_conv3d_transpose_ncdhw", False)
schedule_conv2d_transpose_nchw = _default("schedule_conv2d_transpose_nchw", False)
schedule_group_conv2d_transpose_nchw = _default("schedule_group_conv2d_transpose_nchw", False)
schedule_depthwise_conv2d_nhwc = _default("schedule_depthwise_conv2d_nhwc", False)
schedule_dense = _default("schedule_dense", False)
schedule_matmul = _default("schedule_matmul", False)
schedule_batch_matmul = _default("schedule_batch_matmul", False)
schedule_softmax = _default("schedule_softmax", False)
schedule_adaptive_pool = _default("schedule_adaptive_pool", False)
schedule_reduce = _default("schedule_reduce", True)
schedule_extern = _default("schedule_extern", False)


def schedule_pool(outs, layout="NCHW"):
    """The default schedule of a pooling operator's output(s) (``layout`` is not
    needed by it)."""
    return default_schedule(outs, False, "schedule_pool")
