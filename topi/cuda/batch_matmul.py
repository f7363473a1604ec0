"""Batched matrix products on CUDA: a block per (batch, output tile)."""
from __future__ import annotations

from ... import te
from .. import nn
from .utils import check_multiple as _check_multiple


def schedule_batch_matmul(s, C, block=32, thread_tile=2):
    """A block per (batch, ``block x block`` tile), ``thread_tile`` squared outputs per
    thread accumulated in registers."""
    CC = s.cache_write(C, "local")
    num_thread = block // thread_tile
    b, i, j = C.op.axis
    by, yi = s[C].split(i, factor=block)
    bx, xi = s[C].split(j, factor=block)
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(b, by, bx, ty, tx, yi, xi)
    s[C].bind(b, te.thread_axis("blockIdx.z"))
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis((0, num_thread), "threadIdx.y"))
    s[C].bind(tx, te.thread_axis((0, num_thread), "threadIdx.x"))
    s[CC].compute_at(s[C], tx)
    _, yo, xo = CC.op.axis
    (kk,) = CC.op.reduce_axis
    s[CC].reorder(kk, yo, xo)
    s[CC].unroll(yo)
    s[CC].unroll(xo)
    return s


def batch_matmul(batch, M, N, K, block=32, thread_tile=2, dtype="float32"):
    """``C[b] = A[b] @ B[b]`` (:func:`schedule_batch_matmul`)."""
    for what, v in (("M", M), ("N", N)):
        _check_multiple(what, v, block)
    A = te.placeholder((batch, M, K), name="A", dtype=dtype)
    B = te.placeholder((batch, K, N), name="B", dtype=dtype)
    C = nn.batch_matmul(A, B)
    s = te.create_schedule(C.op)
    schedule_batch_matmul(s, C, block, thread_tile)
    return s, [A, B, C]
