"""Cumulative sums and products on CUDA (TVM's ``topi.cuda.cumsum``,
``cumprod``, ``scanop`` and ``schedule_scan``).

Two statements, picked by the layout of the scanned axis:

* the axis is the last one (or ``axis=None``): a **parallel scan, one block per
  row**.  The row is walked in tiles of ``T`` elements (``T`` threads); each tile
  is loaded into shared memory, scanned in ``log2(T)`` steps (Hillis-Steele: at
  step ``d`` thread ``t`` combines element ``t - 2**d`` into ``t``), offset by the
  running total of the tiles before it, and written back.  ``axis=None`` is one
  row (one block).
* another axis: **one thread per row** (``outer x inner`` threads, neighbouring
  threads on neighbouring rows, so every read and write is coalesced), each
  scanning its row in order.

Both are race-free under ``mod.check`` and deterministic.
"""
from __future__ import annotations

from typing import Callable, Optional

from ... import te, tir
from .. import scan as _scan
from ..sort import local_scalar
from .sort import named_gpu_schedule
from .utils import max_threads, pow2_at_least

#: threads per block of the scans (both statements)
SCAN_THREADS = 256


def _cast(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def _block_scan_rows(ib, d, o_, binop, ident, outer, n, exclusive, dtype):
    T = pow2_at_least(n, max_threads(SCAN_THREADS))
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", outer)
    ib.scope_attr(tx, "thread_extent", T)
    buf = ib.allocate(dtype, (T,), name="tile", scope="shared")
    carry = local_scalar(ib, dtype, "carry")
    carry[0] = ident
    logt = T.bit_length() - 1
    with ib.for_range(0, (n + T - 1) // T, name="tile_no") as t:
        p = t * T + tx
        buf[tx] = tir.Select(p < n, _cast(d[bx * n + te.min(p, n - 1)], dtype), ident)
        for step in range(logt):
            off = 1 << step
            left = local_scalar(ib, dtype, "left")
            left[0] = tir.Select(tx >= off, buf[te.max(tx - off, 0)], ident)
            buf[tx] = binop(left[0], buf[tx])
        with ib.if_scope(p < n):
            if exclusive:
                o_[bx * n + p] = binop(carry[0], tir.Select(tx > 0, buf[te.max(tx - 1, 0)], ident))
            else:
                o_[bx * n + p] = binop(carry[0], buf[tx])
        carry[0] = binop(carry[0], buf[T - 1])


def _thread_scan_rows(ib, d, o_, binop, ident, outer, n, inner, exclusive, dtype):
    nt = max_threads(SCAN_THREADS)
    rows = outer * inner
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", (rows + nt - 1) // nt)
    ib.scope_attr(tx, "thread_extent", nt)
    g = bx * nt + tx
    with ib.if_scope(g < rows):
        o, i = g // inner, g % inner
        acc = local_scalar(ib, dtype, "acc")
        acc[0] = ident
        with ib.for_range(0, n, name="j") as j:
            at = (o * n + j) * inner + i
            x = _cast(d[at], dtype)
            if exclusive:
                o_[at] = acc[0]
                acc[0] = binop(acc[0], x)
            else:
                acc[0] = binop(acc[0], x)
                o_[at] = acc[0]


def gpu_scan_ir(data, out, binop, identity, outer, n, inner, exclusive):
    """The GPU statement of a scan of ``data`` (``outer x n x inner``) into ``out``
    (see the module docs)."""
    ib = tir.ir_builder.create()
    d, o_ = ib.buffer_ptr(data), ib.buffer_ptr(out)
    dtype = out.dtype
    ident = tir.const(identity, dtype)
    if inner == 1:
        _block_scan_rows(ib, d, o_, binop, ident, outer, n, exclusive, dtype)
    else:
        _thread_scan_rows(ib, d, o_, binop, ident, outer, n, inner, exclusive, dtype)
    return ib.get()


def scanop(data: te.Tensor, binop: Callable, identity_value, op_name: str, axis: Optional[int] = None,
           dtype: Optional[str] = None, exclusive: Optional[bool] = None) -> te.Tensor:
    """:func:`tecc.topi.scanop` with the GPU statement."""
    return _scan.scan_impl(data, binop, identity_value, op_name, axis, dtype, exclusive, True)


def cumsum(data, axis=None, dtype=None, exclusive=None):
    """:func:`tecc.topi.cumsum` with the GPU statement (a block-parallel scan along
    the last axis, one thread per row along the others)."""
    return scanop(data, lambda a, b: a + b, 0, "cumsum", axis, dtype, exclusive)


def cumprod(data, axis=None, dtype=None, exclusive=None):
    """:func:`tecc.topi.cumprod` with the GPU statement."""
    return scanop(data, lambda a, b: a * b, 1, "cumprod", axis, dtype, exclusive)


schedule_scan = named_gpu_schedule("schedule_scan", (_scan.SCAN_TAG,))
