"""Direct 2-D convolution (NCHW) on CUDA.

:func:`schedule_conv2d_nchw` takes the operator's output(s), TVM's form, and finds the
convolution under any element-wise epilogue (``conv2d_nchw(...) + 1``), which is
then computed as each thread writes its outputs.  It also accepts tecc's earlier form
``schedule_conv2d_nchw(s, Out, tile_co, tile_xy)`` on an existing schedule, and
:func:`conv2d_nchw` both TVM's compute form and tecc's workload form (sizes in,
``(schedule, tensors)`` out).
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from .. import nn, tag
from ..generic.default import outputs_of
from ..utils import get_const_tuple, traverse_inline
from .utils import check_multiple


def _pad_stage(conv):
    for t in conv.op.input_tensors:
        if tag.has(t.op.tag, tag.PAD):
            return t
    return None


def _largest_divisor(n, at_most):
    if not isinstance(n, int):
        return 1
    return max(d for d in range(1, at_most + 1) if n % d == 0)


def schedule_conv2d_direct(s, conv, out=None, tile_co=8, tile_xy=8):
    """Schedule the convolution ``conv`` (and its epilogue ``out``, when ``conv``
    feeds one) in ``s``.

    A block per (image, output-channel tile, ``tile_xy`` squared pixels), one output
    pixel per thread for ``tile_co`` channels accumulated in registers; the padded
    input is computed inline (no padded copy in memory).  With an epilogue the
    convolution is a per-thread local stage of it.
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


def schedule_conv2d_nchw(outs, out=None, tile_co=8, tile_xy=8):
    """The CUDA schedule of ``conv2d_nchw`` (and of element-wise ops after it).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s) (TVM's form): a new schedule is made.  Or a
        :class:`~tecc.te.Schedule`, with ``out`` the convolution (tecc's earlier
        form): that schedule is changed and returned.
    out : Tensor, optional
        The convolution, in the second form only.
    tile_co, tile_xy : int
        Output channels per thread (a divisor of the channels is taken in TVM's
        form) and the side of a block's square of pixels.

    Returns
    -------
    Schedule
    """
    if isinstance(outs, te.Schedule):
        return schedule_conv2d_direct(outs, out, None, tile_co, tile_xy)
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    found = []

    def visit(op):
        if op.tag == tag.CONV2D_NCHW:
            conv = op.output(0)
            co = get_const_tuple(conv.shape)[1]
            schedule_conv2d_direct(s, conv, outs[0], _largest_divisor(co, tile_co), tile_xy)
            found.append(op)

    traverse_inline(s, outs[0].op, visit)
    if not found:
        raise ScheduleError(f"schedule_conv2d_nchw: {outs[0].op.name!r} is not a conv2d_nchw (tag "
                            f"{outs[0].op.tag!r}) nor an element-wise op after one")
    return s


def conv2d_nchw(data, kernel, *args, **kwargs):
    """The convolution compute in TVM's form, ``conv2d_nchw(data, kernel, strides,
    padding, dilation, out_dtype=None)`` (:func:`tecc.topi.nn.conv2d_nchw`); or, when
    ``data`` is a size rather than a tensor, tecc's workload
    :func:`conv2d_nchw_workload` ``(N, CI, H, W, CO, KH, KW, stride=1, pad=0,
    tile_co=8, tile_xy=8, dtype="float32")`` -> ``(schedule, [Data, Weight, Out])``."""
    if isinstance(data, te.Tensor):
        return nn.conv2d_nchw(data, kernel, *args, **kwargs)
    return conv2d_nchw_workload(data, kernel, *args, **kwargs)


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
