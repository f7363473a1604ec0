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
    "cpu": generic.schedule_pool,
    "gpu": cuda.schedule_pool,
}

_conv2d_nchw_implement = {
    "generic": (nn.conv2d_nchw, generic.schedule_conv2d_nchw),
    "cpu": (x86.conv2d_nchw, x86.schedule_conv2d_nchw),
    "gpu": (cuda.conv2d_nchw, cuda.schedule_conv2d_nchw),
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


def get_conv2d_nchw_implement(target):
    """``(compute, schedule)`` of conv2d_nchw for ``target``: the compute called as
    ``compute(data, kernel, strides, padding, dilation, out_dtype)``, the schedule as
    ``schedule([outputs])``."""
    return dispatch(target, _conv2d_nchw_implement)

