"""Scatters on CUDA (TVM's ``topi.cuda.scatter_elements``, ``scatter_nd``).

Two kernels per statement: a copy of ``data`` into the output (one element per
thread), then the updates.  The updates keep the sequential order of
:mod:`..scatter` (deterministic, the last duplicate wins for ``"update"``) without
atomics by giving each thread every update that can reach its output elements:

* ``scatter_elements``: one thread per line of ``indices`` along ``axis``,
  walking it in order (lines reach disjoint output lines);
* ``scatter_nd``: one thread per element of the trailing slice, walking the index
  tuples in order (a scatter of single elements runs on one thread).
"""
from __future__ import annotations

from ... import te, tir
from ..scatter import (
    SCATTER_ELEMENTS_TAG, SCATTER_ND_TAG, scatter_elements_impl, scatter_line, scatter_nd_impl,
    scatter_nd_slice_element,
)
from ..sort import static_shape
from ..utils import prod
from .sort import named_gpu_schedule
from .utils import max_threads

#: threads per block
SCATTER_THREADS = 256


def _kernel(ib, count):
    """Open a kernel of ``count`` threads; the global thread number (guard it)."""
    nt = min(max_threads(SCATTER_THREADS), max(count, 1))
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", (count + nt - 1) // nt)
    ib.scope_attr(tx, "thread_extent", nt)
    return bx * nt + tx


def _copy(ib, d, o_, total):
    with ib.new_scope():
        g = _kernel(ib, total)
        with ib.if_scope(g < total):
            o_[g] = d[g]


def gpu_scatter_elements_ir(data, indices, updates, out, axis, combine):
    """The GPU statement of :func:`..scatter.scatter_elements`."""
    dshape, ushape = static_shape(data, "scatter"), static_shape(updates, "scatter")
    ib = tir.ir_builder.create()
    d, ind, upd, o_ = (ib.buffer_ptr(b) for b in (data, indices, updates, out))
    _copy(ib, d, o_, prod(dshape))
    lines = prod(ushape) // ushape[axis] if ushape[axis] else 0
    if lines:
        with ib.new_scope():
            f = _kernel(ib, lines)
            with ib.if_scope(f < lines):
                scatter_line(ib, dshape, ushape, axis, f, ind, upd, o_, combine)
    return ib.get()


def gpu_scatter_nd_ir(data, indices, updates, out, m, ny, nx, combine):
    """The GPU statement of :func:`..scatter.scatter_nd`."""
    dshape = static_shape(data, "scatter_nd")
    ib = tir.ir_builder.create()
    d, ind, upd, o_ = (ib.buffer_ptr(b) for b in (data, indices, updates, out))
    _copy(ib, d, o_, prod(dshape))
    if ny and nx:
        with ib.new_scope():
            x = _kernel(ib, nx)
            with ib.if_scope(x < nx):
                scatter_nd_slice_element(ib, dshape, m, ind, upd, o_, x, nx, ny, combine)
    return ib.get()


def scatter_elements(data, indices, updates, axis=0, reduction="update"):
    """:func:`tecc.topi.scatter_elements` with the GPU statement."""
    return scatter_elements_impl(data, indices, updates, axis, reduction, True)


def scatter_nd(data, indices, updates, mode="update"):
    """:func:`tecc.topi.scatter_nd` with the GPU statement."""
    return scatter_nd_impl(data, indices, updates, mode, True)


schedule_scatter = named_gpu_schedule("schedule_scatter", (SCATTER_ELEMENTS_TAG, SCATTER_ND_TAG))
schedule_scatter_elements = schedule_scatter
schedule_scatter_nd = schedule_scatter
