"""Sorting on CUDA (TVM's ``topi.cuda.sort``, ``argsort``, ``topk`` and their
schedules).

The statement is a bitonic sorting network over each row along the axis, padded to
a power of two ``P``; the pairs ``(key, position)`` are ordered as
:func:`..sort.goes_before` says, a strict total order, so the result is the
*stable* sort (equal keys keep their original order) although the network itself
is not stable.

* Rows of at most :data:`SHARED_SORT_MAX` elements: one kernel, **one block per
  row** of ``P / 2`` threads; the row is loaded into shared memory, each of the
  ``log2(P) * (log2(P) + 1) / 2`` network stages has every thread compare-exchange
  one pair, with barriers between stages (inserted by the compiler's barrier pass),
  and the first ``m`` elements are written back.
* Longer rows: the network runs over a global scratch copy of the rows, **one
  launch per stage** (every thread one pair, of any row), the host looping over
  the stages; launches are ordered, so no barrier is needed.

Every thread writes distinct elements in each stage: the kernels are race-free
(``mod.check``) and deterministic.
"""
from __future__ import annotations

from ... import te, tir
from ...tir import dtype as _dt
from ..sort import (
    ARGSORT_TAG, SORT_TAG, TOPK_TAG, TopiError, argsort_impl, goes_before, local_scalar, sort_impl, topk_impl,
    write_row_outputs,
)
from ..schedule_registry import register_schedule
from .injective import schedule_injective_from_existing
from .utils import max_threads

#: rows up to this many elements are sorted in shared memory by one block
SHARED_SORT_MAX = 2048

#: threads per block of the launches of the global-memory network
GLOBAL_THREADS = 256


def _pow2(n) -> int:
    p = 2
    while p < n:
        p *= 2
    return p


def _compare_exchange(ib, keys, pos, base, i, j, descending_block, limit, ascending, is_float, dtype):
    """Order elements ``base + i`` and ``base + j`` (``i < j``) of ``keys``/``pos``:
    the one that goes first at ``i``, unless ``descending_block`` (then at ``j``)."""
    ki = local_scalar(ib, dtype, "ki")
    kj = local_scalar(ib, dtype, "kj")
    pi = local_scalar(ib, "int32", "pi")
    pj = local_scalar(ib, "int32", "pj")
    ki[0] = keys[base + i]
    kj[0] = keys[base + j]
    pi[0] = pos[base + i]
    pj[0] = pos[base + j]
    j_first = goes_before(kj[0], pj[0], ki[0], pi[0], limit, ascending, is_float)
    with ib.if_scope(j_first != descending_block):
        keys[base + i] = kj[0]
        keys[base + j] = ki[0]
        pos[base + i] = pj[0]
        pos[base + j] = pi[0]


def _pair(ib, q, s, t):
    """``(i, j, descending_block)`` of pair ``q`` in stage ``(s, t)`` of the network:
    partners ``2**(s - t)`` apart, in blocks of ``2**(s + 1)`` sorted alternately
    up and down."""
    one = tir.const(1, "int32")
    sh = ib.let("sh", s - t)
    i = ib.let("i", ((q >> sh) << (sh + 1)) | (q & ((one << sh) - 1)))
    j = ib.let("j", i + (one << sh))
    return i, j, ((i >> (s + 1)) & 1) == 1


def _limit(ib, vc, r, n):
    if vc is None:
        return n
    return ib.let("limit", te.max(te.min(vc[r].astype("int32"), n), 0))


def _shared_sort_ir(ib, d, vc, outs, kinds, outer, n, inner, m, ascending, dtype, is_float):
    P = _pow2(n)
    T = P // 2
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", outer * inner)
    ib.scope_attr(tx, "thread_extent", T)
    keys = ib.allocate(dtype, (P,), name="keys", scope="shared")
    pos = ib.allocate("int32", (P,), name="pos", scope="shared")
    o, i = bx // inner, bx % inner
    limit = _limit(ib, vc, bx, n)
    with ib.for_range(0, 2, name="e") as e:
        p = e * T + tx
        keys[p] = tir.Select(p < n, d[(o * n + te.min(p, n - 1)) * inner + i], tir.const(0, dtype))
        pos[p] = p
    logp = P.bit_length() - 1
    with ib.for_range(0, logp, name="s") as s:
        with ib.for_range(0, s + 1, name="t") as t:
            a, b, desc = _pair(ib, tx.var, s, t)
            _compare_exchange(ib, keys, pos, 0, a, b, desc, limit, ascending, is_float, dtype)
    with ib.for_range(0, 2, name="e") as e:
        p = e * T + tx
        with ib.if_scope(p < m):
            write_row_outputs(ib, outs, kinds, m, inner, o, i, p, keys[p], pos[p])


def _launch(ib, count, nthreads):
    """Open a kernel of ``count`` threads (in blocks of ``nthreads``); the global
    thread number, to be guarded ``< count``."""
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", (count + nthreads - 1) // nthreads)
    ib.scope_attr(tx, "thread_extent", nthreads)
    return bx * nthreads + tx


def _global_sort_ir(ib, d, vc, outs, kinds, outer, n, inner, m, ascending, dtype, is_float):
    P = _pow2(n)
    rows = outer * inner
    nt = max_threads(GLOBAL_THREADS)
    keys = ib.allocate(dtype, (rows * P,), name="sort_keys")
    pos = ib.allocate("int32", (rows * P,), name="sort_pos")
    with ib.new_scope():
        g = _launch(ib, rows * P, nt)
        with ib.if_scope(g < rows * P):
            r, p = g // P, g % P
            o, i = r // inner, r % inner
            keys[g] = tir.Select(p < n, d[(o * n + te.min(p, n - 1)) * inner + i], tir.const(0, dtype))
            pos[g] = p
    logp = P.bit_length() - 1
    with ib.for_range(0, logp, name="s") as s:
        with ib.for_range(0, s + 1, name="t") as t:
            with ib.new_scope():
                g = _launch(ib, rows * P // 2, nt)
                with ib.if_scope(g < rows * P // 2):
                    r = ib.let("r", g // (P // 2))
                    limit = _limit(ib, vc, r, n)
                    a, b, desc = _pair(ib, g % (P // 2), s, t)
                    _compare_exchange(ib, keys, pos, r * P, a, b, desc, limit, ascending, is_float, dtype)
    with ib.new_scope():
        g = _launch(ib, rows * m, nt)
        with ib.if_scope(g < rows * m):
            r, p = g // m, g % m
            o, i = r // inner, r % inner
            write_row_outputs(ib, outs, kinds, m, inner, o, i, p, keys[r * P + p], pos[r * P + p])


def gpu_sort_ir(data, valid, outs, kinds, outer, n, inner, m, ascending):
    """The GPU statement sorting each row of ``data`` (``outer x n x inner``) and
    storing its first ``m`` elements in ``outs`` (see the module docs)."""
    P = _pow2(n)
    if outer * inner * P >= 2 ** 31:
        raise TopiError(f"sort on CUDA: {outer * inner} rows of {n} elements (padded to {P}) are too many "
                              "for 32-bit indices")
    ib = tir.ir_builder.create()
    d = ib.buffer_ptr(data)
    vc = ib.buffer_ptr(valid) if valid is not None else None
    outs = [ib.buffer_ptr(b) for b in outs]
    is_float = _dt.is_float(data.dtype)
    shared = n <= SHARED_SORT_MAX and P // 2 <= max_threads(1024)  # one thread per pair of the row
    make = _shared_sort_ir if shared else _global_sort_ir
    make(ib, d, vc, outs, kinds, outer, n, inner, m, ascending, data.dtype, is_float)
    return ib.get()


# ---------------------------------------------------------------------------------------
# computes (TVM's topi.cuda names)
# ---------------------------------------------------------------------------------------

def sort(data, axis=-1, is_ascend=1):
    """:func:`tecc.topi.sort` with the GPU statement (stable)."""
    return sort_impl(data, axis, is_ascend, True)


def argsort(data, axis=-1, is_ascend=1, dtype="float32", ret_type="indices", valid_count=None):
    """:func:`tecc.topi.argsort` with the GPU statement (TVM's ``topi.cuda``
    signature; ``ret_type="both"`` gives ``[values, indices]``)."""
    return argsort_impl(data, valid_count, axis, is_ascend, dtype, True, ret_type)


def topk(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int64"):
    """:func:`tecc.topi.topk` with the GPU statement (stable)."""
    return topk_impl(data, k, axis, ret_type, is_ascend, dtype, True)


# ---------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------

def schedule_extern_gpu(outs, what="schedule_extern"):
    """The CUDA schedule of outputs computed by GPU extern stages (sort, scan,
    scatter): the extern stages run as written; every ``te.compute`` stage around
    them (an input computed before, a cast after) is inlined into its consumer when
    injective and that consumer is a compute, and otherwise spread over blocks of
    threads (:func:`.injective.schedule_injective_from_existing`).

    Raises
    ------
    ScheduleError
        When an extern stage carries a CPU statement (declared outside a CUDA target
        with the generic operator): declare it with ``topi.cuda.<op>`` or inside
        ``with Target("cuda"):``.
    """
    from ..generic.extern import schedule_extern_graph
    return schedule_extern_graph(outs, schedule_injective_from_existing, f"topi.cuda.{what}", gpu=True)


def named_gpu_schedule(name, tags):
    """``name(outs)``: :func:`schedule_extern_gpu`, registered for ``tags`` on cuda."""
    def schedule(outs):
        return schedule_extern_gpu(outs, name)

    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = f"The CUDA schedule of the output(s) of {', '.join(tags)} (:func:`schedule_extern_gpu`)."
    return register_schedule(tags, "cuda")(schedule)


schedule_sort = named_gpu_schedule("schedule_sort", (SORT_TAG,))
schedule_argsort = named_gpu_schedule("schedule_argsort", (ARGSORT_TAG,))
schedule_topk = named_gpu_schedule("schedule_topk", (TOPK_TAG,))
