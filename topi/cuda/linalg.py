"""Determinants on CUDA (:mod:`..linalg`): one thread per matrix, each running
the elimination of the CPU statement (:func:`..linalg.eliminate`) on its
matrix in the work buffer, so there is no sharing between threads and no
barrier."""
from __future__ import annotations

from ... import te, tir
from .. import linalg as _linalg
from .sort import named_gpu_schedule
from .utils import thread_per_item

#: threads per block (one matrix each)
DET_THREADS = 128


def gpu_det_ir(data, out, batch, m):
    """The GPU statement of the determinants of ``data`` (``[batch, m, m]``)."""
    ib = tir.ir_builder.create()
    a, o_ = ib.buffer_ptr(data), ib.buffer_ptr(out)
    w = ib.allocate(out.dtype, (batch * m * m,), name="det_work")  # global memory, outside the kernel
    with thread_per_item(ib, batch, DET_THREADS) as b:
        _linalg.eliminate(ib, a, w, o_, b, m)
    return ib.get()


def det(data: te.Tensor) -> te.Tensor:
    """:func:`tecc.topi.det` with the GPU statement."""
    return _linalg.det_impl(data, True)


schedule_det = named_gpu_schedule("schedule_det", (_linalg.DET_TAG,))
