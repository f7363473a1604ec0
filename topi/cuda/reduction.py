"""Reductions on CUDA: rows reduced by the threads of a block together, or, for short
reductions and column sums, each output element by one thread.

:func:`schedule_rows` is the pattern shared by softmax, layer norm and plain
reductions: one block per row of the output (the axes other than the reduced one,
fused), the row's reductions computed in that block as cross-thread reductions
(warp shuffles, or a tree through shared memory; ``lower_thread_allreduce``), and
the row's outputs spread over the same threads (:func:`bind_row_blocks`, which
layer norm calls with its own row loop).

Tuning
------
:func:`schedule_reduce` is a template with knobs, registered for the tuner as the
task ``"reduce.cuda"`` with the compute :func:`reduce` (``reduce(data, axis=None,
keepdims=False, reduce_type="sum")``, any reduction of :mod:`tecc.topi.reduction`
by name).  TVM had no AutoTVM template for reductions: the name is tecc's, in
TVM's ``<operator>.<target>`` form (the pooling tasks of :mod:`.pooling` are named
alike).  The knobs, per kernel of the chain (the first kernel's unsuffixed, the
``i``-th's with the suffix ``_i``):

``reduce_thread``
    threads (``threadIdx.x``) sharing the reduction of one output element, combined
    by a cross-thread reduction; 1: each thread reduces its output element alone.
``out_thread``
    output elements per block: on ``threadIdx.y`` across threads, on
    ``threadIdx.x`` with one thread per element (``reduce_thread`` 1).
``auto_unroll_max_step``
    unroll every loop nest of at most this many steps inside the kernel (0: none).

With no tuned config (``cfg.is_fallback``) the knobs take the values of the
strategy :func:`schedule_reduce` describes.  :func:`schedule_cross_thread` and
:func:`schedule_thread_per_output` are the two strategies with explicit numbers,
which :mod:`.pooling` shares.
"""
from __future__ import annotations

from ... import te
from ...tuner.task.space import InstantiationError, OtherOptionEntity
from ..generic.default import outputs_of
from ..reduce_compute import register_reduce_compute, register_reduce_schedule
from ..reduce_plan import elements
from ..schedule_registry import register_schedule
from ..tunable import knob_int, knob_name, schedule_either
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


def schedule_cross_thread(s, out, reductions, num_x, num_y, unroll=0):
    """Reduce across threads: the reduced elements of each output element spread
    over ``num_x`` threads of ``threadIdx.x`` (a cross-thread reduction), ``num_y``
    output elements per block on ``threadIdx.y``; ``out`` (a reduction, or an
    element-wise op of ``reductions``, each computed at its element) gives one
    output element per ``(blockIdx.x, threadIdx.y)``.  ``unroll`` > 0 unrolls the
    loop nests of at most that many steps in the kernel."""
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
    if unroll:
        st.pragma(bo, "auto_unroll_max_step", unroll)
    for R in reductions:
        if R.op is out.op:
            continue
        s[R].compute_at(st, attach)
        bind_reduce_axes(s[R], num_x, tx)


def schedule_thread_per_output(s, out, reductions, num_thread, unroll=0):
    """Threads over the output elements, ``num_thread`` per block: each thread
    reduces its own element serially (``reductions`` other than ``out`` computed at
    the thread).  ``unroll`` as in :func:`schedule_cross_thread`."""
    st = s[out]
    bx, ti = bind_blocks_threads(st, _fused_axis(s, out), num_thread)
    if unroll:
        st.pragma(bx, "auto_unroll_max_step", unroll)
    for R in reductions:
        if R.op is not out.op:
            s[R].compute_at(st, ti)


#: the choices of ``reduce_thread`` (1, then these up to the reduction's length)
REDUCE_THREADS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: the choices of ``auto_unroll_max_step``
UNROLL_STEPS = (0, 16, 64, 512)


def pow2_choices(cap, extra=()):
    """The powers of two from 1 up to ``cap``, with ``extra`` added (sorted)."""
    out, p = set(extra), 1
    while p <= cap:
        out.add(p)
        p *= 2
    return sorted(out)


def define_reduce_knobs(cfg, k, n_out, fallback, kernel=0):
    """Define ``reduce_thread``, ``out_thread`` and ``auto_unroll_max_step`` (named
    for ``kernel``: :func:`knob_name`) for a kernel reducing ``k`` elements (None:
    unknown) into each of ``n_out`` output elements (None: unknown); with a fallback
    config, set them to ``fallback`` (``(reduce_thread, out_thread)``, no unroll).
    The choices stay within the current target's threads per block."""
    limit = max_threads(1024)
    cap_k = limit if k is None else pow2_at_least(k, limit)
    cap_o = limit if n_out is None else pow2_at_least(n_out, limit)
    nx, ny = fallback
    cfg.define_knob(knob_name("reduce_thread", kernel),
                    sorted({1, nx} | {t for t in REDUCE_THREADS if t <= cap_k}))
    cfg.define_knob(knob_name("out_thread", kernel), pow2_choices(cap_o, [ny]))
    cfg.define_knob(knob_name("auto_unroll_max_step", kernel), list(UNROLL_STEPS))
    if cfg.is_fallback:
        cfg[knob_name("reduce_thread", kernel)] = OtherOptionEntity(nx)
        cfg[knob_name("out_thread", kernel)] = OtherOptionEntity(ny)
        cfg[knob_name("auto_unroll_max_step", kernel)] = OtherOptionEntity(0)


def reduce_knobs(cfg, what, kernel=0):
    """``(reduce_thread, out_thread, auto_unroll_max_step)`` of ``cfg`` for
    ``kernel``, checked.

    Raises
    ------
    InstantiationError
        On a value that is not a positive int (a non-negative one for the unroll),
        or more threads per block than the current target has.
    """
    limit = max_threads(1024)
    nx = knob_int(cfg, knob_name("reduce_thread", kernel), what, 1, limit, "the target's threads per block")
    ny = knob_int(cfg, knob_name("out_thread", kernel), what, 1, limit, "the target's threads per block")
    unroll = knob_int(cfg, knob_name("auto_unroll_max_step", kernel), what, 0)
    if nx * ny > limit:
        raise InstantiationError(f"{what}: reduce_thread x out_thread = {nx} x {ny} = {nx * ny} threads per block, "
                                 f"more than the target's {limit}")
    return nx, ny, unroll


def _default_threads(plan, n_out, max_thread):
    """``(reduce_thread, out_thread)`` of the default strategy (the docs of
    :func:`schedule_reduce`) with blocks of at most ``max_thread`` threads."""
    if use_cross_thread(plan, n_out):
        num_x = threads_for(plan.reduce_extent(), max_thread)
        num_y = max(1, max_thread // num_x)
        if n_out is not None:
            num_y = min(num_y, pow2_at_least(n_out, num_y))
        return num_x, num_y
    return 1, (max_thread if n_out is None else max(1, pow2_at_least(n_out, max_thread)))


def schedule_reduce_kernel(cfg, s, plan, out, kernel=0, what="schedule_reduce"):
    """Schedule one kernel of a reduction chain (``out`` and ``plan.reductions``)
    with the knobs of ``cfg`` for ``kernel`` (defined here; the default strategy's
    values with a fallback config)."""
    n_out = elements(out)
    define_reduce_knobs(cfg, plan.reduce_extent(), n_out, _default_threads(plan, n_out, max_threads(256)), kernel)
    num_x, num_y, unroll = reduce_knobs(cfg, what, kernel)
    if num_x > 1:
        schedule_cross_thread(s, out, plan.reductions, num_x, num_y, unroll)
    else:
        schedule_thread_per_output(s, out, plan.reductions, num_y, unroll)


reduce = register_reduce_compute("cuda")  # noqa: A001


_reduce_template, _schedule_reduce_task = register_reduce_schedule(
    "cuda", schedule_reduce_kernel, schedule_injective_from_existing)


@register_schedule("comm_reduce", "cuda")
def schedule_reduce(outs):
    """The CUDA schedule of a reduction (``topi.sum``, ``max``, ``argmax``,
    ``mean``, ``variance``...) and of the element-wise stages around it: the
    template of the task ``"reduce.cuda"`` with the config dispatched for the
    workload :func:`reduce` recorded, or, for the outputs of the plain computes,
    with a fallback config (or the one of an enclosing ``ApplyConfig``).

    Stages before the reduction are inlined.  When the outputs are one tensor of
    the reductions' shape (the reduction itself, or an element-wise op of it),
    everything is one kernel; otherwise each reduction and each other output get a
    kernel of their own.  Per kernel, by default (the fallback config):

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

    A tuned config chooses the threads per output element and per block, and the
    unrolling, instead (the knobs in the module's docs).

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
    InstantiationError
        When a tuned config's knobs are out of range (more threads per block than
        the target has...).
    """
    return schedule_either(outputs_of(outs), "reduce.cuda", _schedule_reduce_task, _reduce_template)
