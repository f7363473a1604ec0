"""Which compute and schedule of topi to use for a target (TVM's
``topi.testing.common``): the CPU ones for ``llvm``/``c``, the CUDA ones for ``cuda``,
the generic ones otherwise."""
from __future__ import annotations

from ...target import Target
from .. import cuda, generic, nn, x86

_injective_schedule = {
    "generic": generic.schedule_injective,
    "cpu": x86.schedule_injective,
    "gpu": cuda.schedule_injective,
}

_reduce_schedule = {
    "generic": generic.schedule_reduce,
    "cpu": x86.schedule_reduce,
    "gpu": cuda.schedule_reduce,
}

_softmax_schedule = {
    "generic": generic.schedule_softmax,
    "cpu": x86.schedule_softmax,
    "gpu": cuda.schedule_softmax,
}

_pool_schedule = {
    "generic": generic.schedule_pool,
    "cpu": x86.schedule_pool,
    "gpu": cuda.schedule_pool,
}

_adaptive_pool_schedule = {
    "generic": generic.schedule_adaptive_pool,
    "cpu": x86.schedule_adaptive_pool,
    "gpu": cuda.schedule_adaptive_pool,
}

_conv2d_nchw_implement = {
    "generic": (nn.conv2d_nchw, generic.schedule_conv2d_nchw),
    "cpu": (x86.conv2d_nchw, x86.schedule_conv2d_nchw),
    "gpu": (cuda.conv2d_nchw, cuda.schedule_conv2d_nchw),
}

_conv2d_nhwc_implement = {
    "generic": (nn.conv2d_nhwc, generic.schedule_conv2d_nhwc),
    "cpu": (x86.conv2d_nhwc, x86.schedule_conv2d_nhwc),
    "gpu": (cuda.conv2d_nhwc, cuda.schedule_conv2d_nhwc),
}

_group_conv2d_nchw_implement = {
    "generic": (nn.group_conv2d_nchw, generic.schedule_group_conv2d_nchw),
    "cpu": (x86.group_conv2d_nchw, x86.schedule_group_conv2d_nchw),
    "gpu": (cuda.group_conv2d_nchw, cuda.schedule_group_conv2d_nchw),
}

_depthwise_conv2d_nchw_implement = {
    "generic": (nn.depthwise_conv2d_nchw, generic.schedule_depthwise_conv2d_nchw),
    "cpu": (x86.depthwise_conv2d_nchw, x86.schedule_depthwise_conv2d_nchw),
    "gpu": (cuda.depthwise_conv2d_nchw, cuda.schedule_depthwise_conv2d_nchw),
}

_conv1d_ncw_implement = {
    "generic": (nn.conv1d_ncw, generic.schedule_conv1d_ncw),
    "cpu": (x86.conv1d_ncw, x86.schedule_conv1d_ncw),
    "gpu": (cuda.conv1d_ncw, cuda.schedule_conv1d_ncw),
}

_conv2d_transpose_nchw_implement = {
    "generic": (nn.conv2d_transpose_nchw, generic.schedule_conv2d_transpose_nchw),
    "cpu": (x86.conv2d_transpose_nchw, x86.schedule_conv2d_transpose_nchw),
    "gpu": (cuda.conv2d_transpose_nchw, cuda.schedule_conv2d_transpose_nchw),
}


_dense_implement = {
    "generic": (nn.dense, generic.schedule_dense),
    "cpu": (x86.dense, x86.schedule_dense),
    "gpu": (cuda.dense, cuda.schedule_dense),
}

_batch_matmul_implement = {
    "generic": (nn.batch_matmul, generic.schedule_batch_matmul),
    "cpu": (x86.batch_matmul, x86.schedule_batch_matmul),
    "gpu": (cuda.batch_matmul, cuda.schedule_batch_matmul),
}

_matmul_schedule = {
    "generic": generic.schedule_matmul,
    "cpu": x86.schedule_matmul,
    "gpu": cuda.schedule_matmul,
}

_layer_norm_schedule = {
    "generic": generic.schedule_layer_norm,
    "cpu": x86.schedule_layer_norm,
    "gpu": cuda.schedule_layer_norm,
}

_batch_norm_schedule = {
    "generic": generic.schedule_batch_norm,
    "cpu": x86.schedule_batch_norm,
    "gpu": cuda.schedule_batch_norm,
}

_lrn_schedule = {
    "generic": generic.schedule_lrn,
    "cpu": x86.schedule_lrn,
    "gpu": cuda.schedule_lrn,
}

def dispatch(target, dispatch_map):
    """The entry of ``dispatch_map`` for the first of ``target``'s keys it has
    (``"generic"`` when none)."""
    target = Target.canon(target)
    for key in target.keys:
        if key in dispatch_map:
            return dispatch_map[key]
    return dispatch_map["generic"]


def get_injective_schedule(target):
    """The injective (element-wise, broadcast) schedule for ``target``."""
    return dispatch(target, _injective_schedule)


get_broadcast_schedule = get_injective_schedule
get_elemwise_schedule = get_injective_schedule


def get_reduce_schedule(target):
    """The reduction schedule for ``target``."""
    return dispatch(target, _reduce_schedule)


def get_softmax_schedule(target):
    """The softmax schedule for ``target``."""
    return dispatch(target, _softmax_schedule)


def get_pool_schedule(target):
    """The pooling schedule for ``target`` (called as ``schedule(outs, layout)``)."""
    return dispatch(target, _pool_schedule)


def get_adaptive_pool_schedule(target):
    """The adaptive (and global) pooling schedule for ``target`` (called as
    ``schedule(outs)``)."""
    return dispatch(target, _adaptive_pool_schedule)


def get_conv2d_nchw_implement(target):
    """``(compute, schedule)`` of conv2d_nchw for ``target``: the compute called as
    ``compute(data, kernel, strides, padding, dilation, out_dtype)``, the schedule as
    ``schedule([outputs])``."""
    return dispatch(target, _conv2d_nchw_implement)


def get_conv2d_nhwc_implement(target):
    """``(compute, schedule)`` of conv2d_nhwc (HWIO kernel) for ``target``, called as
    :func:`get_conv2d_nchw_implement`'s."""
    return dispatch(target, _conv2d_nhwc_implement)


def get_group_conv2d_nchw_implement(target):
    """``(compute, schedule)`` of group_conv2d_nchw for ``target``: the compute called
    as ``compute(data, kernel, strides, padding, dilation, groups, out_dtype)``."""
    return dispatch(target, _group_conv2d_nchw_implement)


def get_depthwise_conv2d_nchw_implement(target):
    """``(compute, schedule)`` of depthwise_conv2d_nchw for ``target``, called as
    :func:`get_conv2d_nchw_implement`'s."""
    return dispatch(target, _depthwise_conv2d_nchw_implement)


def get_conv1d_ncw_implement(target):
    """``(compute, schedule)`` of conv1d_ncw for ``target``: the compute called as
    ``compute(data, kernel, strides, padding, dilation, out_dtype)``."""
    return dispatch(target, _conv1d_ncw_implement)


def get_conv2d_transpose_nchw_implement(target):
    """``(compute, schedule)`` of conv2d_transpose_nchw for ``target``: the compute
    called as ``compute(data, kernel, strides, padding, out_dtype, output_padding)``."""
    return dispatch(target, _conv2d_transpose_nchw_implement)


def get_dense_implement(target):
    """``(compute, schedule)`` of dense for ``target``: the compute called as
    ``compute(data, weight, bias=None, out_dtype=None)``, the schedule as
    ``schedule([outputs])``."""
    return dispatch(target, _dense_implement)


def get_batch_matmul_implement(target):
    """``(compute, schedule)`` of batch_matmul for ``target``: the compute called as
    ``compute(tensor_a, tensor_b, oshape=None, out_dtype=None, transpose_a=False,
    transpose_b=True)``, the schedule as ``schedule([outputs])`` (it also schedules
    ``topi.nn.matmul_broadcast``)."""
    return dispatch(target, _batch_matmul_implement)


def get_matmul_schedule(target):
    """The schedule of ``topi.nn.matmul`` for ``target``."""
    return dispatch(target, _matmul_schedule)


def get_layer_norm_schedule(target):
    """The schedule of layer_norm, instance_norm and group_norm for ``target``."""
    return dispatch(target, _layer_norm_schedule)


get_instance_norm_schedule = get_layer_norm_schedule
get_group_norm_schedule = get_layer_norm_schedule


def get_batch_norm_schedule(target):
    """The schedule of batch_norm's outputs for ``target``."""
    return dispatch(target, _batch_norm_schedule)


def get_lrn_schedule(target):
    """The schedule of lrn for ``target``."""
    return dispatch(target, _lrn_schedule)
