"""Batched matrix products on CUDA, tunable as "batch_matmul.cuda" (TVM's
``topi.cuda.batch_matmul`` / ``schedule_batch_matmul``), and ``schedule_matmul``.

``batch_matmul(x, y, ...)`` and ``schedule_batch_matmul(outs)`` are TVM's forms;
tecc's earlier ones -- ``batch_matmul(batch, M, N, K, block, thread_tile)``, a workload
returning ``(schedule, [A, B, C])``, and ``schedule_batch_matmul(s, C, block,
thread_tile)`` -- still work, told apart by their first argument.
"""
from __future__ import annotations

from ... import te
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn, tag
from ..generic.default import outputs_of
from ..schedule_registry import register_schedule
from ..tunable import config_without_workload, has_workload, schedule_anchor, schedule_either
from ..utils import get_const_tuple
from .dense import schedule_gemm_tiled, schedule_gemv
from .injective import schedule_injective_from_existing
from .utils import check_multiple as _check_multiple

#: from this many rows on, a product uses the shared-memory tiled template
TILED_MIN_ROWS = 8


def schedule_product(cfg, s, C, out):
    """A matrix product (any of topi's): the shared-memory tiled template when the
    output has rows and columns and at least ``TILED_MIN_ROWS`` rows, the
    cross-thread reduction otherwise (a vector, a batch of vectors)."""
    shape = get_const_tuple(C.shape)
    rows = shape[-2] if len(shape) >= 2 else 1
    if len(shape) >= 2 and (not isinstance(rows, int) or rows >= TILED_MIN_ROWS):
        schedule_gemm_tiled(cfg, s, C, out)
    else:
        schedule_gemv(cfg, s, C, out)


@register_topi_compute("batch_matmul.cuda")
def _batch_matmul_compute(cfg, x, y, out_shape=None, out_dtype=None, transpose_a=False, transpose_b=True):
    """The compute of :func:`tecc.topi.nn.batch_matmul` (tunable as "batch_matmul.cuda")."""
    return nn.batch_matmul(x, y, out_shape, out_dtype, transpose_a, transpose_b)


def _batch_matmul_template(cfg, outs):
    """The CUDA schedule of ``batch_matmul`` and ``matmul_broadcast`` (and of
    element-wise ops after them): :func:`schedule_product`, the batch over
    ``blockIdx.z``."""
    return schedule_anchor(outs, (tag.BATCH_MATMUL,), "schedule_batch_matmul",
                           lambda s, op, out: schedule_product(cfg, s, op.output(0), out),
                           epilogue=schedule_injective_from_existing)


_schedule_batch_matmul_task = register_topi_schedule("batch_matmul.cuda")(_batch_matmul_template)


def batch_matmul(*args, **kwargs):
    """``C[b] = op(A[b]) @ op(B[b])`` for CUDA.

    TVM's form ``batch_matmul(x, y, out_shape=None, out_dtype=None,
    transpose_a=False, transpose_b=True)`` is the compute of
    :func:`tecc.topi.nn.batch_matmul`, tunable as "batch_matmul.cuda" -- or, for
    float16 operands a wmma tile divides (``y`` as ``[batch, N, K]``), on tensor
    cores as "batch_matmul_tensorcore.cuda" (schedule either with
    :func:`schedule_batch_matmul`).  tecc's earlier form ``batch_matmul(batch,
    M, N, K, block=32, thread_tile=2, dtype="float32")`` returns ``(schedule, [A, B,
    C])`` with ``B`` as ``[batch, K, N]``.
    """
    if args and isinstance(args[0], int):
        return batch_matmul_workload(*args, **kwargs)
    return _tvm_batch_matmul(*args, **kwargs)


def _tvm_batch_matmul(x, y, out_shape=None, out_dtype=None, transpose_a=False, transpose_b=True):
    """TVM's form: tensor cores (``batch_matmul_tensorcore``) for float16 operands
    they tile, "batch_matmul.cuda" otherwise."""
    from .batch_matmul_tensorcore import batch_matmul_tensorcore, tensorcore_batch_matmul_fits

    if tensorcore_batch_matmul_fits(x, y, out_dtype, transpose_a, transpose_b):
        return batch_matmul_tensorcore(x, y, out_shape, out_dtype, transpose_a, transpose_b)
    return _batch_matmul_compute(x, y, out_shape, out_dtype, transpose_a, transpose_b)


batch_matmul.task_name = "batch_matmul.cuda"


@register_schedule(tag.BATCH_MATMUL, "cuda")
def schedule_batch_matmul(outs, *args, **kwargs):
    """The CUDA schedule of ``batch_matmul`` / ``matmul_broadcast`` (and of
    element-wise ops after them).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The outputs (TVM's form): tuned as "batch_matmul.cuda" when
        :func:`batch_matmul` computed them, with a fallback config otherwise.  Or a
        :class:`~tecc.te.Schedule` with the product and ``block, thread_tile``
        (tecc's earlier form, :func:`schedule_batch_matmul_blocked`).

    Returns
    -------
    Schedule
    """
    if isinstance(outs, te.Schedule):
        return schedule_batch_matmul_blocked(outs, *args, **kwargs)
    if has_workload(outputs_of(outs), "batch_matmul_tensorcore.cuda"):
        from .batch_matmul_tensorcore import schedule_batch_matmul_tensorcore

        return schedule_batch_matmul_tensorcore(outputs_of(outs))
    return schedule_either(outputs_of(outs), "batch_matmul.cuda", _schedule_batch_matmul_task,
                           _batch_matmul_template)


@register_schedule(tag.MATMUL, "cuda")
def schedule_matmul(outs):
    """The CUDA schedule of :func:`tecc.topi.nn.matmul` (and of element-wise ops after
    it, a bias included): :func:`schedule_product` with a fallback config (or the
    config of an enclosing ``ApplyConfig``)."""
    cfg = config_without_workload()
    return schedule_anchor(outputs_of(outs), (tag.MATMUL,), "schedule_matmul",
                           lambda s, op, out: schedule_product(cfg, s, op.output(0), out),
                           epilogue=schedule_injective_from_existing)


def schedule_batch_matmul_blocked(s, C, block=32, thread_tile=2):
    """A block per (batch, ``block x block`` tile), ``thread_tile`` squared outputs per
    thread accumulated in registers (tecc's earlier batch_matmul schedule; ``s``)."""
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


def batch_matmul_workload(batch, M, N, K, block=32, thread_tile=2, dtype="float32"):
    """``C[b] = A[b] @ B[b]``, ``B`` as ``[batch, K, N]``, with
    :func:`schedule_batch_matmul_blocked`: ``(schedule, [A, B, C])``."""
    for what, v in (("M", M), ("N", N)):
        _check_multiple(what, v, block)
    A = te.placeholder((batch, M, K), name="A", dtype=dtype)
    B = te.placeholder((batch, K, N), name="B", dtype=dtype)
    C = nn.batch_matmul(A, B, transpose_b=False, name="C")
    s = te.create_schedule(C.op)
    schedule_batch_matmul_blocked(s, C, block, thread_tile)
    return s, [A, B, C]
