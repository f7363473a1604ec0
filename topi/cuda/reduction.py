"""Reductions on CUDA: rows reduced by the threads of a block together.

:func:`schedule_rows` is the pattern shared by softmax, layer norm and plain
reductions: one block per row of the output (the axes other than the reduced one,
fused), the row's reductions computed in that block as cross-thread reductions
(warp shuffles, or a tree through shared memory; ``lower_thread_allreduce``), and
the row's outputs spread over the same threads.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ..generic.default import outputs_of
from ..utils import get_const_tuple, walk_to_reductions
from .injective import schedule_injective_from_existing
from .utils import max_threads


def threads_for(extent, default=256) -> int:
    """Threads to reduce ``extent`` elements: the smallest power of two from 32
    (a warp) that covers them, at most ``default``; ``default`` when unknown."""
    if not isinstance(extent, int):
        return default
    n = 32
    while n < extent and n < default:
        n *= 2
    return n


def _row_axis(s, out, axis):
    """Put ``out``'s axes other than ``axis`` first and fuse them: ``(row, j)``, the
    row loop (made by splitting ``axis`` when there is no other axis) and the
    loop along ``axis``."""
    axes = list(s[out].op.axis)
    j = axes[axis]
    rows = [a for k, a in enumerate(axes) if k != axis]
    if not rows:
        return s[out].split(j, nparts=1)
    if axis != len(axes) - 1:
        s[out].reorder(*rows, j)
    row = rows[0] if len(rows) == 1 else s[out].fuse(*rows)
    return row, j


def schedule_rows(s, out, reductions, num_thread, axis=-1):
    """One block per row of ``out`` (the indices other than ``axis``); every stage of
    ``reductions`` (each reducing along ``axis`` to one value per row) computed in
    the row's block as a reduction across ``num_thread`` threads, which then compute
    the row's elements of ``out``, ``num_thread`` apart."""
    ndim = len(out.shape)
    axis = axis + ndim if axis < 0 else axis
    tx = te.thread_axis((0, num_thread), "threadIdx.x")
    row, j = _row_axis(s, out, axis)
    s[out].bind(row, te.thread_axis("blockIdx.x"))
    _, ji = s[out].split(j, factor=num_thread)
    s[out].bind(ji, tx)
    for R in reductions:
        s[R].compute_at(s[out], row)
        rk = list(s[R].op.reduce_axis)
        kk = rk[0] if len(rk) == 1 else s[R].fuse(*rk)
        _, ki = s[R].split(kk, factor=num_thread)
        s[R].bind(ki, tx)
    return s


def _schedule_reduce_stage(s, R, num_thread):
    """The reduction ``R`` (an output of ``s``) in its own kernel: a block per output
    element (its data axes fused), the reduced elements across ``num_thread``
    threads."""
    st = s[R]
    rk = list(st.op.reduce_axis)
    kk = rk[0] if len(rk) == 1 else st.fuse(*rk)
    _, ki = st.split(kk, factor=num_thread)
    tx = te.thread_axis((0, num_thread), "threadIdx.x")
    st.bind(ki, tx)
    axes = list(st.op.axis)
    if axes:
        row = axes[0] if len(axes) == 1 else st.fuse(*axes)
        st.bind(row, te.thread_axis("blockIdx.x"))
    return s


def schedule_reduce(outs):
    """The CUDA schedule of a reduction (``topi.sum``, ``topi.max``, ``argmax``...):
    element-wise and injective stages around it inlined, a block per output element
    reducing across its threads; an element-wise output after the reduction gets a
    kernel of its own.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    reductions, others = walk_to_reductions(s, outs[0].op)
    if not reductions:
        raise ScheduleError(f"schedule_reduce: {outs[0].op.name!r} (tag {outs[0].op.tag!r}) is not a reduction "
                            "nor an element-wise op after one")
    for op in reductions:
        extent = 1
        for iv in op.reduce_axis:
            e = get_const_tuple([iv.dom.extent])[0]
            extent = extent * e if isinstance(e, int) and isinstance(extent, int) else None
        _schedule_reduce_stage(s, op.output(0), threads_for(extent, max_threads(256)))
    for op in others:
        schedule_injective_from_existing(s, op.output(0))
    return s
