"""Which compute and schedule of topi to use for a target (TVM's
``topi.testing.common``): the CPU ones for ``llvm``/``c``, the CUDA ones for ``cuda``,
the generic ones otherwise."""
from __future__ import annotations

from ...target import Target
from .. import cuda, generic, nn, x86

#: the module of each target key's computes and schedules
_MODULES = {"generic": generic, "cpu": x86, "gpu": cuda}


def _schedules(name):
    """``{key: schedule}``: the schedule ``name`` of each target key's module."""
    return {key: getattr(module, name) for key, module in _MODULES.items()}


def _implements(name):
    """``{key: (compute, schedule)}``: the compute ``name`` and the schedule
    ``schedule_<name>`` of each target key's module (:mod:`..nn`'s compute for
    ``"generic"``)."""
    return {key: (getattr(nn if key == "generic" else module, name), getattr(module, f"schedule_{name}"))
            for key, module in _MODULES.items()}


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
    return dispatch(target, _schedules("schedule_injective"))


get_broadcast_schedule = get_injective_schedule
get_elemwise_schedule = get_injective_schedule


def get_reduce_schedule(target):
    """The reduction schedule for ``target``."""
    return dispatch(target, _schedules("schedule_reduce"))


def get_softmax_schedule(target):
    """The softmax schedule for ``target``."""
    return dispatch(target, _schedules("schedule_softmax"))


def get_pool_schedule(target):
    """The pooling schedule for ``target`` (called as ``schedule(outs, layout)``)."""
    return dispatch(target, _schedules("schedule_pool"))


def get_adaptive_pool_schedule(target):
    """The adaptive (and global) pooling schedule for ``target`` (called as
    ``schedule(outs)``)."""
    return dispatch(target, _schedules("schedule_adaptive_pool"))


def get_conv2d_nchw_implement(target):
    """``(compute, schedule)`` of conv2d_nchw for ``target``: the compute called as
    ``compute(data, kernel, strides, padding, dilation, out_dtype)``, the schedule as
    ``schedule([outputs])``."""
    return dispatch(target, _implements("conv2d_nchw"))


def get_conv2d_nhwc_implement(target):
    """``(compute, schedule)`` of conv2d_nhwc (HWIO kernel) for ``target``, called as
    :func:`get_conv2d_nchw_implement`'s."""
    return dispatch(target, _implements("conv2d_nhwc"))


def get_group_conv2d_nchw_implement(target):
    """``(compute, schedule)`` of group_conv2d_nchw for ``target``: the compute called
    as ``compute(data, kernel, strides, padding, dilation, groups, out_dtype)``."""
    return dispatch(target, _implements("group_conv2d_nchw"))


def get_depthwise_conv2d_nchw_implement(target):
    """``(compute, schedule)`` of depthwise_conv2d_nchw for ``target``, called as
    :func:`get_conv2d_nchw_implement`'s."""
    return dispatch(target, _implements("depthwise_conv2d_nchw"))


def get_conv1d_ncw_implement(target):
    """``(compute, schedule)`` of conv1d_ncw for ``target``: the compute called as
    ``compute(data, kernel, strides, padding, dilation, out_dtype)``."""
    return dispatch(target, _implements("conv1d_ncw"))


def get_conv2d_transpose_nchw_implement(target):
    """``(compute, schedule)`` of conv2d_transpose_nchw for ``target``: the compute
    called as ``compute(data, kernel, strides, padding, out_dtype, output_padding)``."""
    return dispatch(target, _implements("conv2d_transpose_nchw"))


def get_depthwise_conv2d_nhwc_implement(target):
    """``(compute, schedule)`` of depthwise_conv2d_nhwc for ``target``: the compute
    called as ``compute(data, kernel, strides, padding, dilation, kernel_layout="HWOI",
    out_dtype=None)`` (a dtype in ``kernel_layout``'s place is taken as ``out_dtype``,
    as TVM's tests pass it)."""
    return dispatch(target, _implements("depthwise_conv2d_nhwc"))


def get_group_conv2d_transpose_nchw_implement(target):
    """``(compute, schedule)`` of group_conv2d_transpose_nchw for ``target``: the
    compute called as ``compute(data, kernel, strides, padding, out_dtype,
    output_padding, groups)``."""
    return dispatch(target, _implements("group_conv2d_transpose_nchw"))


def get_resize_schedule(target):
    """The schedule of ``topi.image.resize1d`` / ``resize2d`` and
    ``topi.nn.upsampling`` for ``target`` (called as ``schedule(outs)``)."""
    return dispatch(target, _schedules("schedule_resize"))


def get_dense_implement(target):
    """``(compute, schedule)`` of dense for ``target``: the compute called as
    ``compute(data, weight, bias=None, out_dtype=None)``, the schedule as
    ``schedule([outputs])``."""
    return dispatch(target, _implements("dense"))


def get_batch_matmul_implement(target):
    """``(compute, schedule)`` of batch_matmul for ``target``: the compute called as
    ``compute(tensor_a, tensor_b, oshape=None, out_dtype=None, transpose_a=False,
    transpose_b=True)``, the schedule as ``schedule([outputs])`` (it also schedules
    ``topi.nn.matmul_broadcast``)."""
    return dispatch(target, _implements("batch_matmul"))


def get_matmul_schedule(target):
    """The schedule of ``topi.nn.matmul`` for ``target``."""
    return dispatch(target, _schedules("schedule_matmul"))


def get_layer_norm_schedule(target):
    """The schedule of layer_norm, instance_norm and group_norm for ``target``."""
    return dispatch(target, _schedules("schedule_layer_norm"))


get_instance_norm_schedule = get_layer_norm_schedule
get_group_norm_schedule = get_layer_norm_schedule


def get_batch_norm_schedule(target):
    """The schedule of batch_norm's outputs for ``target``."""
    return dispatch(target, _schedules("schedule_batch_norm"))


def get_lrn_schedule(target):
    """The schedule of lrn for ``target``."""
    return dispatch(target, _schedules("schedule_lrn"))


#: the operators declared as extern statements, and the name of their schedule
_EXTERN_SCHEDULES = {
    "sort": "schedule_sort", "argsort": "schedule_argsort", "topk": "schedule_topk",
    "cumsum": "schedule_scan", "cumprod": "schedule_scan",
    "scatter_elements": "schedule_scatter", "scatter_nd": "schedule_scatter",
}


def get_extern_implement(target, name):
    """``(compute, schedule)`` of the extern operator ``name`` (``"sort"``,
    ``"argsort"``, ``"topk"``, ``"cumsum"``, ``"cumprod"``, ``"scatter_elements"``,
    ``"scatter_nd"``) for ``target``: ``topi.<name>`` with the CPU schedule, or
    ``topi.cuda.<name>`` with the CUDA one.  Call the compute with keyword
    arguments (``topi.cuda.argsort`` has TVM's CUDA signature, without
    ``valid_count`` second)."""
    from ... import topi as _topi
    sched = _EXTERN_SCHEDULES[name]
    return dispatch(target, {"generic": (getattr(_topi, name), getattr(generic, sched)),
                             "cpu": (getattr(_topi, name), getattr(x86, sched)),
                             "gpu": (getattr(cuda, name), getattr(cuda, sched))})


def compare_numpy_tvm(inputs, output, target, device, compute, schedule):
    """Build ``compute`` over placeholders shaped as the numpy ``inputs`` with
    ``schedule`` for ``target``, run it on ``device`` and compare with ``output``
    (rtol and atol 1e-4; TVM's helper).  Raises ``AssertionError`` where they differ."""
    import numpy as np  # noqa: PLC0415

    from ... import build, nd, te  # noqa: PLC0415

    placeholders = [te.placeholder(a.shape, dtype=str(a.dtype), name=f"in{k}") for k, a in enumerate(inputs)]
    with Target(target):
        out = compute(*placeholders)
        s = schedule([out])
        func = build(s, placeholders + [out], target)
    result = nd.array(np.zeros(output.shape, dtype=output.dtype), device)
    func(*[nd.array(a, device) for a in inputs], result)
    np.testing.assert_allclose(result.numpy(), output, rtol=1e-4, atol=1e-4)
