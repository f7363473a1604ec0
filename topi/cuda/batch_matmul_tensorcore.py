"""Batched products on tensor cores: ``batch_matmul_tensorcore`` and its tunable
schedule (TVM's ``batch_matmul_tensorcore.cuda`` template).

``C[b] = A[b] @ B[b]^T`` with float16 (or bfloat16) operands ``[batch, M, K]`` and ``[batch, N, K]``
(the layout of attention's ``Q @ K^T``), or ``A[b] @ B[b]`` with ``B`` as ``[batch,
K, N]`` (``transpose_b=False``: attention's ``P @ V``, a row-major matrix_b), one
grid of tiles per batch over ``blockIdx.z``; each tile is computed as
:mod:`.dense_tensorcore` computes a dense layer, with the same knobs.
"""
from __future__ import annotations

from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn, tag
from ..tunable import schedule_anchor
from ..utils import TopiError, get_const_tuple
from .dense_tensorcore import (
    _schedule, _shapes_fitting, _tensor_cores_here, accumulator_dtype, half_operands_error, rounded,
)
from .injective import schedule_injective_from_existing


def tensorcore_batch_matmul_fits(x, y, out_dtype=None, transpose_a=False, transpose_b=True) -> bool:
    """Whether :func:`batch_matmul_tensorcore` computes this product on the current
    target (what :func:`tecc.topi.cuda.batch_matmul` asks first)."""
    if transpose_a or half_operands_error("batch_matmul", ("x", "y"), x, y, out_dtype):
        return False
    xs, ys = get_const_tuple(x.shape), get_const_tuple(y.shape)
    if len(xs) != 3 or len(ys) != 3 or not all(isinstance(d, int) for d in xs + ys) or xs[0] != ys[0]:
        return False
    n = ys[1] if transpose_b else ys[2]
    return bool(_shapes_fitting(xs[1], xs[2], n, not transpose_b)) and _tensor_cores_here(x.dtype)


@register_topi_compute("batch_matmul_tensorcore.cuda")
def batch_matmul_tensorcore(cfg, x, y, out_shape=None, out_dtype=None, transpose_a=False, transpose_b=True):
    """The batched product for :func:`schedule_batch_matmul_tensorcore`: float16 (or
    bfloat16) ``x`` ``[batch, M, K]`` and ``y`` ``[batch, N, K]`` (``transpose_b``,
    TVM's default) or ``[batch, K, N]`` (``transpose_b=False``), one batch size for
    both; ``out_dtype`` ``"float32"`` or the operands' type (bfloat16 accumulates in
    float32, rounded once).

    Raises
    ------
    TopiError
        For other dtypes or layouts, or shapes that no wmma fragment shape tiles.
    """
    out_dtype = out_dtype or x.dtype
    what = "batch_matmul_tensorcore"
    error = half_operands_error(what, ("x", "y"), x, y, out_dtype)
    if error:
        raise TopiError(error)
    if transpose_a:
        raise TopiError(f"{what}: takes x as [batch, M, K] (transpose_a=False), got transpose_a=True; transpose "
                        "the operand (topi.transpose) or use topi.cuda.batch_matmul")
    xs, ys = get_const_tuple(x.shape), get_const_tuple(y.shape)
    if len(xs) != 3 or len(ys) != 3 or not all(isinstance(d, int) for d in xs + ys):
        raise TopiError(f"{what}: needs 3-D operands of constant shape, got x {x.shape} and y {y.shape}")
    if xs[0] != ys[0]:
        raise TopiError(f"{what}: x has batch {xs[0]} and y {ys[0]}; broadcast the smaller one first "
                        "(topi.broadcast_to) or use topi.cuda.batch_matmul")
    n = ys[1] if transpose_b else ys[2]
    if not _shapes_fitting(xs[1], xs[2], n, not transpose_b):
        tiles = "(16, 16, 16), (32, 16, 8) or (8, 16, 32)" if transpose_b else "(16, 16, 16) or (8, 16, 32) (y as " \
            "[batch, K, N])"
        raise TopiError(f"{what}: (M, K, N) = {(xs[1], xs[2], n)} is not a multiple of any wmma tile: {tiles}; pad "
                        "the operands or use topi.cuda.batch_matmul")
    return rounded(nn.batch_matmul(x, y, out_shape, accumulator_dtype(x.dtype, out_dtype), transpose_a, transpose_b),
                   out_dtype)


def _template(cfg, outs):
    """The schedule of a tensor-core batched product (and of element-wise ops after it;
    an output of another shape -- the product reshaped, as a 4-D MatMul imports -- is
    a loop nest of its own)."""
    return schedule_anchor(outs, (tag.BATCH_MATMUL,), "schedule_batch_matmul_tensorcore",
                           lambda s, op, out: _schedule(cfg, s, op.output(0), out),
                           epilogue=schedule_injective_from_existing)


schedule_batch_matmul_tensorcore = register_topi_schedule("batch_matmul_tensorcore.cuda")(_template)

__all__ = ["batch_matmul_tensorcore", "schedule_batch_matmul_tensorcore", "tensorcore_batch_matmul_fits"]
