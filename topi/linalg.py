"""Determinants of square matrices (numpy's ``np.linalg.det``): ONNX's ``Det``.

:func:`det` is one ``te.extern`` stage: each matrix is copied into a work buffer
(allocated by the statement, outside any kernel) and reduced to upper-triangular form by Gaussian
elimination with partial pivoting -- at step ``k`` the row with the largest
``|a[i, k]|`` among rows ``k..m-1`` is swapped into place (negating the
determinant), the determinant is multiplied by the pivot and the rows below are
eliminated.  A zero pivot column makes the determinant 0 (its elimination is
skipped, so no division by zero); NaN propagates.

The CPU statement declared here spreads the matrices over the cores; the GPU
statement (:mod:`.cuda.linalg`) runs one matrix per thread.  Both run the same
elimination (:func:`eliminate`), in the input's dtype: float16 is computed in
float32 by the graph operator that calls this.  The work is ``m**3 / 3``
multiply-adds per matrix, in order: a batch of small matrices, as models hold
them, not one large one (which a LAPACK call does better).
"""
from __future__ import annotations

from .. import te, tir
from ..tir import dtype as _dt
from .sort import check_tensor, describe, is_gpu_target, local_scalar, static_shape
from .transform import reshape
from .utils import TopiError, prod

DET_TAG = "det"


def check_det_args(data, what) -> tuple:
    """``(batch shape, m)`` of the determinants of ``data`` ``[..., m, m]``."""
    check_tensor(data, what)
    shape = static_shape(data, what)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise TopiError(f"{what}: the input must be [..., m, m] (square matrices in its last two axes), got shape "
                        f"{shape}")
    if not _dt.is_float(data.dtype):
        raise TopiError(f"{what}: the input has dtype {data.dtype}; det takes floating-point matrices (cast it first)")
    return tuple(shape[:-2]), shape[-1]


def eliminate(ib, a, w, o_, b, m):
    """Statements of ``ib`` that set ``o_[b]`` to the determinant of matrix ``b``
    of ``a`` (``[batch, m, m]`` flat), eliminating in ``w`` (its copy)."""
    dtype = o_.dtype
    zero, one = tir.const(0, dtype), tir.const(1, dtype)
    base = b * m * m
    with ib.for_range(0, m * m, name="e") as e:
        w[base + e] = a[base + e]
    det = local_scalar(ib, dtype, "det")
    best = local_scalar(ib, dtype, "best")
    pivot = local_scalar(ib, "int32", "pivot")
    det[0] = one
    with ib.for_range(0, m, name="k") as k:
        best[0] = te.abs(w[base + k * m + k])
        pivot[0] = k
        with ib.for_range(k + 1, m, name="i") as i:  # the largest |w[i, k]| below the diagonal
            with ib.if_scope(te.abs(w[base + i * m + k]) > best[0]):
                best[0] = te.abs(w[base + i * m + k])
                pivot[0] = i
        with ib.if_scope(best[0] == zero):
            det[0] = zero  # a zero column: singular
        with ib.else_scope():
            p = pivot[0]
            with ib.if_scope(p != k):
                with ib.for_range(k, m, name="j") as j:
                    t = local_scalar(ib, dtype, "t")
                    t[0] = w[base + k * m + j]
                    w[base + k * m + j] = w[base + p * m + j]
                    w[base + p * m + j] = t[0]
                det[0] = -det[0]
            det[0] = det[0] * w[base + k * m + k]
            with ib.for_range(k + 1, m, name="i") as i:
                f = local_scalar(ib, dtype, "f")
                f[0] = w[base + i * m + k] / w[base + k * m + k]
                with ib.for_range(k + 1, m, name="j") as j:
                    w[base + i * m + j] = w[base + i * m + j] - f[0] * w[base + k * m + j]
    o_[b] = det[0]


def _cpu_det_ir(data, out, batch, m):
    ib = tir.ir_builder.create()
    a, o_ = ib.buffer_ptr(data), ib.buffer_ptr(out)
    w = ib.allocate(out.dtype, (batch * m * m,), name="det_work")
    with ib.for_range(0, batch, name="b", kind="parallel" if batch > 1 else "serial") as b:
        eliminate(ib, a, w, o_, b, m)
    return ib.get()


def det_impl(data, gpu):
    """The determinants of ``data`` (see :func:`det`); ``gpu``: the GPU statement."""
    what = f"det({describe(data) if isinstance(data, te.Tensor) else repr(data)})"
    lead, m = check_det_args(data, what)
    batch = prod(lead)
    if gpu:
        from .cuda.linalg import gpu_det_ir as make_ir
    else:
        make_ir = _cpu_det_ir
    flat = reshape(data, (batch, m, m)) if len(lead) != 1 else data
    dets = te.extern((batch,), [flat], lambda ins, outs: make_ir(ins[0], outs[0], batch, m),
                     name="det", dtype=data.dtype, tag=DET_TAG)
    return reshape(dets, lead) if len(lead) != 1 else dets


def det(data: te.Tensor) -> te.Tensor:
    """The determinant of each square matrix in the last two axes of ``data``.

    Parameters
    ----------
    data : Tensor
        ``[..., m, m]``, floating point, of static shape.

    Returns
    -------
    Tensor
        ``[...]`` (rank 0 for one matrix), ``data``'s dtype: the output of an
        extern stage tagged ``"det"`` (reshaped when the batch is not one axis).

    Raises
    ------
    TopiError
        A non-square or rank-1 input, an integer dtype, a symbolic shape.
    """
    return det_impl(data, is_gpu_target())
