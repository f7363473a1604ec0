"""Reductions on CUDA: rows reduced by the threads of a block together, or, for short
reductions and column sums, each output element by one thread.

:func:`schedule_rows` is the pattern shared by softmax, layer norm and plain
reductions: one block per row of the output (the axes other than the reduced one,
fused), the row's reductions computed in that block as cross-thread reductions
(warp shuffles, or a tree through shared memory; ``lower_thread_allreduce``), and
the row's outputs spread over the same threads (:func:`bind_row_blocks`, which
layer norm calls with its own row loop).
"""
from __future__ import annotations

from ... import te
from ..reduce_plan import elements, schedule_reduce_chain
from ..schedule_registry import register_schedule
from ..utils import fuse_all, fuse_rows
from .injective import schedule_injective_from_existing
from .utils import bind_blocks_threads, bind_reduce_axes, max_threads, pow2_at_least


def threads_for(extent, default=256) -> int:
    """Threads to reduce ``extent`` elements: the smallest power of two from 32
    (a warp) that covers them, at most ``default``; ``default`` when unknown."""
    if not isinstance(extent, int):
        return default
    n = 32
    while n < extent and n < default:
        n *= 2
    return n


def schedule_rows(s, out, reductions, num_thread, axis=-1):
    """One block per row of ``out`` (the indices other than ``axis``); every stage of
    ``reductions`` (each reducing along ``axis`` to one value per row) computed in
    the row's block as a reduction across ``num_thread`` threads, which then compute
    the row's elements of ``out``, ``num_thread`` apart."""
    row, j = fuse_rows(s, out, axis)
    return bind_row_blocks(s, out, row, j, reductions, num_thread)


def bind_row_blocks(s, out, row, j, reductions, num_thread):
    """A block per iteration of ``out``'s loop ``row`` (one block when ``row`` is
    None), the row's elements (the loop ``j``) spread over its ``num_thread``
    threads, and every stage of ``reductions`` computed in the row's block as a
    reduction across the same threads; ``s``."""
    if row is None:
        row, j = s[out].split(j, nparts=1)
    tx = te.thread_axis((0, num_thread), "threadIdx.x")
    s[out].bind(row, te.thread_axis("blockIdx.x"))
    _, ji = s[out].split(j, factor=num_thread)
    s[out].bind(ji, tx)
    for R in reductions:
        s[R].compute_at(s[out], row)
        bind_reduce_axes(s[R], num_thread, tx)
    return s


#: fewer reduced elements than this: each thread reduces its output elements alone
CROSS_THREAD_MIN = 32
#: at least this many outputs, when the input's innermost axis is kept: threads over
#: the outputs (neighbouring threads read neighbouring elements, coalesced)
KEPT_THREADS_MIN_OUTPUTS = 1024


def _fused_axis(s, out):
    """``out``'s data axes fused into one (a loop of extent 1 for rank 0)."""
    fused = fuse_all(s, out)
    return s[out].fuse() if fused is None else fused


def use_cross_thread(plan, outputs) -> bool:
    """Whether to reduce across threads (True) or give each thread whole output
    elements (False): across threads unless the reduction is short (fewer than
    :data:`CROSS_THREAD_MIN` elements) or there are many outputs whose
    neighbours read neighbouring input elements (the input's innermost axis kept)."""
    k = plan.reduce_extent()
    if k is None:
        return True
    if k < CROSS_THREAD_MIN:
        return False
    return not (plan.innermost_kept() and outputs is not None and outputs >= KEPT_THREADS_MIN_OUTPUTS)


def _schedule_cross(s, plan, out, max_thread):
    """Reduce across threads: ``threadIdx.x`` over the reduced elements, and
    ``threadIdx.y`` over output elements when the reduction is short enough to leave
    room in the block; ``out`` (a reduction, or the anchor of a fused chain) gives
    one output element per ``(blockIdx.x, threadIdx.y)``."""
    k = plan.reduce_extent()
    num_x = threads_for(k, max_thread)
    n_out = elements(out)
    num_y = max(1, max_thread // num_x)
    if n_out is not None:
        num_y = min(num_y, pow2_at_least(n_out, num_y))
    tx = te.thread_axis((0, num_x), "threadIdx.x")
    st = s[out]
    fused = _fused_axis(s, out)
    if num_y > 1:
        bo, attach = st.split(fused, factor=num_y)
    else:
        bo = attach = fused
    if out.op.reduce_axis:
        bind_reduce_axes(st, num_x, tx)
    else:
        # every thread of the row computes the anchor's element; one stores it
        st.set_store_predicate(tx.var.equal(0))
    if num_y > 1:
        st.bind(attach, te.thread_axis((0, num_y), "threadIdx.y"))
    st.bind(bo, te.thread_axis("blockIdx.x"))
    for R in plan.reductions:
        if R.op is out.op:
            continue
        s[R].compute_at(st, attach)
        bind_reduce_axes(s[R], num_x, tx)


def _schedule_kept(s, plan, out, max_thread):
    """Threads over the output elements: each thread reduces its own element(s)
    serially (the reductions of a fused chain computed at the thread)."""
    n_out = elements(out)
    num = max_thread if n_out is None else max(1, pow2_at_least(n_out, max_thread))
    st = s[out]
    _, ti = bind_blocks_threads(st, _fused_axis(s, out), num)
    for R in plan.reductions:
        if R.op is not out.op:
            s[R].compute_at(st, ti)


@register_schedule("comm_reduce", "cuda")
def schedule_reduce(outs):
    """The CUDA schedule of a reduction (``topi.sum``, ``max``, ``argmax``,
    ``mean``, ``variance``...) and of the element-wise stages around it.

    Stages before the reduction are inlined.  When the outputs are one tensor of
    the reductions' shape (the reduction itself, or an element-wise op of it),
    everything is one kernel; otherwise each reduction and each other output get a
    kernel of their own.  Per kernel:

    * **across threads** (the usual case): the reduced axes, fused, are spread
      over ``threadIdx.x`` (a power of two from 32 to 256 that covers them) and
      combined by a cross-thread reduction (warp shuffles, shared memory across
      warps); short reductions leave room for several output elements per block,
      on ``threadIdx.y``.  Tuple reductions (argmax, argmin) too.
    * **over the kept axes**, when the reduction is shorter than
      :data:`CROSS_THREAD_MIN` or there are at least
      :data:`KEPT_THREADS_MIN_OUTPUTS` outputs and the input's innermost axis is
      kept (a column sum): one thread per output element, reducing serially, the
      reads of neighbouring threads coalesced.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule

    Raises
    ------
    ScheduleError
        When the outputs read no reduction.
    """
    max_thread = max_threads(256)

    def schedule_kernel(s, plan, out):
        if use_cross_thread(plan, elements(out)):
            _schedule_cross(s, plan, out, max_thread)
        else:
            _schedule_kept(s, plan, out, max_thread)

    return schedule_reduce_chain(outs, schedule_kernel, schedule_injective_from_existing)
