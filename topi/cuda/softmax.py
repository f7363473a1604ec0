"""Softmax and log-softmax on CUDA, along any axis: one kernel.

Usually a block per row (the elements along the axis, the other indices fixed):
the row's maximum and sum of exponentials are reductions across the block's
threads (:func:`.reduction.schedule_rows`).  Along an outer axis with many rows and
at least 32 elements after the axis (the channels of an NCHW tensor), a thread per
row instead: its reads along the axis are strided, but neighbouring threads read
neighbouring elements.  The exponential is recomputed where it is needed (inlined),
and so is an element-wise op after the softmax (``softmax(x) + 1``): each thread
then writes its elements of that op directly.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from .. import nn, tag
from ..generic.default import new_schedule
from ..utils import find_anchors, fuse_rows, get_const_int, get_const_tuple, prod
from ..schedule_registry import register_schedule
from .reduction import schedule_rows, threads_for
from .utils import bind_blocks_threads, input_tagged, max_threads


def _softmax_parts(sm_out):
    """``(exp stage or None, [reductions])`` of a softmax or log-softmax output."""
    if sm_out.op.tag == tag.SOFTMAX_OUTPUT:
        ex = input_tagged(sm_out, "softmax_exp")
        return ex, [input_tagged(ex, "softmax_max"), input_tagged(sm_out, "softmax_sum")]
    if sm_out.op.tag == tag.LOG_SOFTMAX_OUTPUT:
        return None, [input_tagged(sm_out, "softmax_max"), input_tagged(sm_out, "softmax_sum")]
    raise ScheduleError(f"schedule_softmax: {sm_out.op.name!r} has tag {sm_out.op.tag!r}, not softmax_output or "
                        "log_softmax_output")


def schedule_softmax_op(s, sm_out, out=None, num_thread=None):
    """Schedule the softmax (or log-softmax) ``sm_out`` in ``s``, written through the
    element-wise op ``out`` after it when given (``sm_out`` is then inlined into it).

    ``num_thread`` threads per row: by default a warp for rows of up to 32 elements,
    more (up to 256) for longer rows.
    """
    axis = get_const_int(sm_out.op.attrs.get("axis", len(sm_out.shape) - 1))
    ex, reductions = _softmax_parts(sm_out)
    if ex is not None:
        s[ex].compute_inline()
    out = sm_out if out is None else out
    if out.op is not sm_out.op:
        if get_const_tuple(out.shape) != get_const_tuple(sm_out.shape):
            raise ScheduleError(
                f"schedule_softmax: the output {out.op.name!r} {tuple(out.shape)} is not an element-wise op of the "
                f"softmax {sm_out.op.name!r} {tuple(sm_out.shape)}; schedule the softmax as its own output")
        s[sm_out].compute_inline()
    shape = get_const_tuple(sm_out.shape)
    inner = prod(shape[axis + 1:])
    rows = prod(shape[:axis] + shape[axis + 1:])
    if isinstance(inner, int) and inner >= KEPT_THREADS_MIN_INNER and isinstance(rows, int) and \
            rows >= KEPT_THREADS_MIN_ROWS:
        return _schedule_thread_per_row(s, out, reductions, axis, num_thread or max_threads(256))
    if num_thread is None:
        num_thread = threads_for(shape[axis], max_threads(256))
    return schedule_rows(s, out, reductions, num_thread, axis)


#: a softmax along an axis with at least this many elements after it ...
KEPT_THREADS_MIN_INNER = 32
#: ... and at least this many rows gives each thread a whole row
KEPT_THREADS_MIN_ROWS = 256


def _schedule_thread_per_row(s, out, reductions, axis, num_thread):
    """A softmax along an outer axis (the channels of NCHW): a thread per row, the
    rows' maximum and sum reduced serially by it; neighbouring threads hold
    neighbouring rows, so every read and write is coalesced."""
    row, _ = fuse_rows(s, out, axis)
    _, ti = bind_blocks_threads(s[out], row, num_thread)
    for R in reductions:
        s[R].compute_at(s[out], ti)
    return s


@register_schedule(("softmax_output", "log_softmax_output"), "cuda")
def schedule_softmax(outs, out=None, num_thread=128):
    """The CUDA schedule of ``softmax`` / ``log_softmax`` (and of an element-wise op
    after it).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s) (TVM's form; needs no target): a new schedule, the
        threads per row fitted to the row's length.  Or a :class:`~tecc.te.Schedule`
        with ``out`` the softmax (tecc's earlier form): that schedule with
        ``num_thread`` threads per row.

    Returns
    -------
    Schedule
    """
    if isinstance(outs, te.Schedule):
        return schedule_softmax_op(outs, out, None, num_thread)
    outs, s = new_schedule(outs)
    for op in find_anchors(s, outs[0], (tag.SOFTMAX_OUTPUT, tag.LOG_SOFTMAX_OUTPUT), "schedule_softmax", "a softmax"):
        schedule_softmax_op(s, op.output(0), outs[0])
    return s


schedule_log_softmax = schedule_softmax


def softmax_rows(M, N, num_thread=128, dtype="float32"):
    """Row-wise softmax of an ``M x N`` matrix (:func:`schedule_softmax_op`):
    ``(schedule, [A, Out])``."""
    A = te.placeholder((M, N), name="A", dtype=dtype)
    Out = nn.softmax(A)
    s = te.create_schedule(Out.op)
    schedule_softmax_op(s, Out, None, num_thread)
    return s, [A, Out]
