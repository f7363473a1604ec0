"""2-D convolution (NCHW, NHWC) on CUDA, tunable (TVM's ``topi.cuda.conv2d_nchw``).

:func:`conv2d_nchw` and :func:`schedule_conv2d_nchw` are registered for the tuner
as the task ``"conv2d_nchw.cuda"`` (the compute records its workload on the output;
the schedule reads it and follows the config dispatched for it, a fallback from the
shapes without one).  The schedule is the direct template of :mod:`.conv2d_direct`:
shared-memory tiles of input and filter, register tiles of the output, element-wise
epilogues in the same kernel.

Both keep tecc's earlier forms: ``conv2d_nchw(N, CI, H, W, CO, KH, KW, ...)`` with
sizes builds a workload (:func:`conv2d_nchw_workload`), and
``schedule_conv2d_nchw(s, Out, tile_co, tile_xy)`` schedules an existing schedule
with the simple one-pixel-per-thread layout (:func:`schedule_conv2d_direct`).
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn, tag
from ..generic.default import new_schedule, outputs_of
from ..nn.conv2d import CONV2D_NCHW, CONV2D_NCHWC, CONV2D_NHWC
from ..nn.utils import conv2d_workload_args
from ..schedule_registry import register_schedule
from ..tunable import has_workload, schedule_either
from ..utils import find_anchors, get_const_tuple
from .conv2d_direct import schedule_direct_cuda
from .utils import check_multiple


def _pad_stage(conv):
    for t in conv.op.input_tensors:
        if tag.has(t.op.tag, tag.PAD):
            return t
    return None


def schedule_conv_anchor(outs, tags, what, apply):
    """A new schedule of ``outs`` with ``apply(s, conv, out)`` called on the first
    convolution tagged one of ``tags`` under the element-wise stages ending at
    ``outs[0]`` (those inlined into it)."""
    outs, s = new_schedule(outs)
    conv = find_anchors(s, outs[0], tags, what, f"a {' or '.join(tags)}")[0]
    apply(s, conv.output(0), outs[0])
    return s


def direct_template(tags, what):
    """``template(cfg, outs)``: the direct schedule of the convolution tagged one of
    ``tags`` under ``outs``."""

    def template(cfg, outs):
        return schedule_conv_anchor(outs, tags, what, lambda s, conv, out: schedule_direct_cuda(cfg, s, conv, out))

    template.__name__ = what
    return template


def tunable_schedule(task_name, tags, what, summary):
    """The public schedule ``schedule(outs)`` of a tunable convolution task: the
    registered schedule when the outputs carry the task's workload (made by its
    registered compute), else the direct template with a fallback config (also
    for the outputs of the plain :mod:`tecc.topi.nn` compute), documented by
    ``summary``."""
    template = direct_template(tags, what)
    registered = register_topi_schedule(task_name)(template)

    def schedule(outs):
        return schedule_either(outputs_of(outs), task_name, registered, template)

    schedule.__name__ = schedule.__qualname__ = what
    schedule.__doc__ = summary
    for t in tags:
        register_schedule(t, "cuda")(schedule)
    return schedule


# ---------------------------------------------------------------------------------------
# conv2d_nchw: the tunable task
# ---------------------------------------------------------------------------------------
@register_topi_compute("conv2d_nchw.cuda", canonical=conv2d_workload_args)
def _conv2d_nchw(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
    """The convolution compute (:func:`tecc.topi.nn.conv2d_nchw`) of the task."""
    return nn.conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


_conv2d_nchw_template = direct_template((CONV2D_NCHW,), "schedule_conv2d_nchw")
_schedule_conv2d_nchw = register_topi_schedule("conv2d_nchw.cuda")(_conv2d_nchw_template)


def conv2d_nchw(data, kernel, *args, **kwargs):
    """The convolution compute for CUDA in TVM's form, ``conv2d_nchw(data, kernel,
    strides, padding, dilation, out_dtype="float32")`` (the tunable task
    ``"conv2d_nchw.cuda"``; :func:`tecc.topi.nn.conv2d_nchw`; for float16 operands
    whose channels a wmma fragment tiles, ``"conv2d_nchw_tensorcore.cuda"`` on tensor
    cores, scheduled by :func:`schedule_conv2d_nchw` too); or, when ``data``
    is a size rather than a tensor, tecc's workload :func:`conv2d_nchw_workload`
    ``(N, CI, H, W, CO, KH, KW, stride=1, pad=0, tile_co=8, tile_xy=8,
    dtype="float32")`` -> ``(schedule, [Data, Weight, Out])``."""
    if isinstance(data, te.Tensor):
        return _tvm_conv2d_nchw(data, kernel, *args, **kwargs)
    return conv2d_nchw_workload(data, kernel, *args, **kwargs)


def _tvm_conv2d_nchw(data, kernel, strides=1, padding=0, dilation=1, out_dtype="float32"):
    """TVM's form: on tensor cores (:mod:`.conv2d_tensorcore`, an implicit GEMM) for
    float16 operands whose channels a fragment tiles, "conv2d_nchw.cuda" otherwise."""
    from .conv2d_tensorcore import conv2d_nchw_tensorcore, tensorcore_conv2d_fits

    if tensorcore_conv2d_fits(data, kernel, strides, padding, dilation, out_dtype):
        return conv2d_nchw_tensorcore(data, kernel, strides, padding, dilation, out_dtype)
    return _conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


@register_schedule(CONV2D_NCHW, "cuda")
def schedule_conv2d_nchw(outs, out=None, tile_co=8, tile_xy=8):
    """The CUDA schedule of ``conv2d_nchw`` (and of element-wise ops after it, in
    the same kernel): the direct template (:mod:`.conv2d_direct`) with the config
    dispatched for the workload :func:`conv2d_nchw` recorded, or a fallback from
    the shapes (also for a :func:`tecc.topi.nn.conv2d_nchw` output).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s) (TVM's form): a new schedule is made.  Or a
        :class:`~tecc.te.Schedule`, with ``out`` the convolution (tecc's earlier
        form): that schedule is changed by :func:`schedule_conv2d_direct` and
        returned.
    out : Tensor, optional
        The convolution, in the second form only.
    tile_co, tile_xy : int
        The second form's tiles (:func:`schedule_conv2d_direct`).

    Returns
    -------
    Schedule
    """
    if isinstance(outs, te.Schedule):
        return schedule_conv2d_direct(outs, out, None, tile_co, tile_xy)
    if has_workload(outputs_of(outs), "conv2d_nchw_tensorcore.cuda"):
        from .conv2d_tensorcore import schedule_conv2d_nchw_tensorcore

        return schedule_conv2d_nchw_tensorcore(outputs_of(outs))
    return schedule_either(outputs_of(outs), "conv2d_nchw.cuda", _schedule_conv2d_nchw, _conv2d_nchw_template)


# ---------------------------------------------------------------------------------------
# conv2d_nhwc
# ---------------------------------------------------------------------------------------
@register_topi_compute("conv2d_nhwc.cuda", canonical=conv2d_workload_args)
def _conv2d_nhwc(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
    """The NHWC convolution compute (:func:`tecc.topi.nn.conv2d_nhwc`; HWIO kernel)
    of the tunable task ``"conv2d_nhwc.cuda"``."""
    return nn.conv2d_nhwc(data, kernel, strides, padding, dilation, out_dtype)


def conv2d_nhwc(data, kernel, strides=1, padding=0, dilation=1, out_dtype="float32"):
    """The NHWC convolution for CUDA (HWIO kernel): on tensor cores
    (``"conv2d_nhwc_tensorcore.cuda"``, an implicit GEMM) for float16 or bfloat16
    operands whose channels a fragment tiles, the tunable direct template
    ``"conv2d_nhwc.cuda"`` otherwise; :func:`schedule_conv2d_nhwc` schedules either."""
    from .conv2d_tensorcore import conv2d_nhwc_tensorcore, tensorcore_conv2d_nhwc_fits

    if tensorcore_conv2d_nhwc_fits(data, kernel, strides, padding, dilation, out_dtype):
        return conv2d_nhwc_tensorcore(data, kernel, strides, padding, dilation, out_dtype)
    return _conv2d_nhwc(data, kernel, strides, padding, dilation, out_dtype)


_schedule_conv2d_nhwc_direct = tunable_schedule("conv2d_nhwc.cuda", (CONV2D_NHWC,), "schedule_conv2d_nhwc", """The
    CUDA schedule of ``conv2d_nhwc`` (and of element-wise ops after it, in the same kernel):
    the direct template (:mod:`.conv2d_direct`) with threadIdx.x along the output
    channels, the contiguous axis of the output and of the HWIO filter.""")


@register_schedule(CONV2D_NHWC, "cuda")
def schedule_conv2d_nhwc(outs):
    """The CUDA schedule of :func:`conv2d_nhwc`'s output (and of element-wise ops
    after it, in the same kernel): the tensor-core template for a
    ``"conv2d_nhwc_tensorcore.cuda"`` workload, else the direct template with
    threadIdx.x along the output channels, the contiguous axis of the output and of
    the HWIO filter."""
    if has_workload(outputs_of(outs), "conv2d_nhwc_tensorcore.cuda"):
        from .conv2d_tensorcore import schedule_conv2d_nhwc_tensorcore

        return schedule_conv2d_nhwc_tensorcore(outputs_of(outs))
    return _schedule_conv2d_nhwc_direct(outs)


# ---------------------------------------------------------------------------------------
# tecc's earlier forms
# ---------------------------------------------------------------------------------------
def schedule_conv2d_direct(s, conv, out=None, tile_co=8, tile_xy=8):
    """Schedule the convolution ``conv`` (and its epilogue ``out``, when ``conv``
    feeds one) in ``s`` the simple way: a block per (image, output-channel tile,
    ``tile_xy`` squared pixels), one output pixel per thread for ``tile_co``
    channels accumulated in registers; the padded input is computed inline (no
    padded copy in memory).  With an epilogue the convolution is a per-thread
    local stage of it.
    """
    padded = _pad_stage(conv)
    if padded is not None:
        s[padded].compute_inline()
    out = conv if out is None else out
    if out.op is conv.op:
        OL = s.cache_write(conv, "local")
    else:
        if get_const_tuple(out.shape) != get_const_tuple(conv.shape):
            raise ScheduleError(f"schedule_conv2d_nchw: the output {out.op.name!r} {tuple(out.shape)} is not an "
                                f"element-wise epilogue of the convolution {conv.op.name!r} {tuple(conv.shape)}")
        s[conv].set_scope("local")
        OL = conv
    n, f, y, x = s[out].op.axis
    fo, fi = s[out].split(f, factor=tile_co)
    yo, yi = s[out].split(y, factor=tile_xy)
    xo, xi = s[out].split(x, factor=tile_xy)
    s[out].reorder(n, fo, yo, xo, yi, xi, fi)
    bz = s[out].fuse(n, fo)
    s[out].bind(bz, te.thread_axis("blockIdx.z"))
    s[out].bind(yo, te.thread_axis("blockIdx.y"))
    s[out].bind(xo, te.thread_axis("blockIdx.x"))
    s[out].bind(yi, te.thread_axis("threadIdx.y"))
    s[out].bind(xi, te.thread_axis("threadIdx.x"))
    s[OL].compute_at(s[out], xi)
    _, ff, _, _ = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    s[OL].reorder(rc, ry, rx, ff)
    s[OL].unroll(ff)
    return s


def conv2d_nchw_workload(N, CI, H, W, CO, KH, KW, stride=1, pad=0, tile_co=8, tile_xy=8, dtype="float32"):
    """Direct NCHW convolution of the given sizes (:func:`schedule_conv2d_direct`):
    ``(schedule, [Data, Weight, Out])``."""
    check_multiple("CO", CO, tile_co)
    Data = te.placeholder((N, CI, H, W), name="Data", dtype=dtype)
    Weight = te.placeholder((CO, CI, KH, KW), name="Weight", dtype=dtype)
    Out = nn.conv2d_nchw(Data, Weight, stride, pad)
    s = te.create_schedule(Out.op)
    schedule_conv2d_direct(s, Out, None, tile_co, tile_xy)
    return s, [Data, Weight, Out]


# ---------------------------------------------------------------------------------
# conv2d_NCHWc: a simple correct schedule (the graph compiler blocks channels on CPUs
# only; this serves a model or a user that builds the blocked convolution for CUDA)
# ---------------------------------------------------------------------------------
@register_schedule(CONV2D_NCHWC, "cuda")
def schedule_conv2d_NCHWc_cuda(outs):  # noqa: N802
    """A plain CUDA schedule of ``conv2d_NCHWc``: one thread per output element,
    64 threads per block, the sum accumulated in a register, the padding inlined;
    an element-wise epilogue computes the convolution where it writes (unless the
    convolution is an output too: then each is a kernel of its own)."""
    outs, s = new_schedule(outs)
    out = outs[0]
    conv = find_anchors(s, out, (CONV2D_NCHWC,), "schedule_conv2d_NCHWC", f"a {CONV2D_NCHWC}")[0].output(0)
    for t in conv.op.input_tensors:
        if isinstance(t.op, te.ComputeOp) and not t.op.reduce_axis and t.op.tag.startswith("injective"):
            s[t].compute_inline()

    def threads(t):
        bx, tx = s[t].split(s[t].fuse(*s[t].op.axis), factor=64)
        s[t].bind(bx, te.thread_axis("blockIdx.x"))
        s[t].bind(tx, te.thread_axis("threadIdx.x"))
        return tx

    if out.op is not conv.op and conv.op not in s.outputs:
        s[conv].set_scope("local")
        s[conv].compute_at(s[out], threads(out))
        return s
    if out.op is not conv.op:
        threads(out)
    acc = s.cache_write(conv, "local")
    s[acc].compute_at(s[conv], threads(conv))
    return s
