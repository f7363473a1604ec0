"""Matrix products: ``matmul``, ``dense`` (``data @ weight.T + bias``) and
``batch_matmul``."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from ...tir.arith import Analyzer
from .. import tag
from ..utils import TopiError


def _check_2d(x, role, what):
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"{what}: {role} must be a tensor, got {x!r}")
    if len(x.shape) != 2:
        raise TopiError(f"{what}: {role} {x.name!r} has shape {tuple(x.shape)}; it must be 2-D")


def _check_reduction(a, ka, b, kb, what):
    if not Analyzer().can_prove_equal(ka, kb) and all(isinstance(getattr(k, "value", None), int) for k in (ka, kb)):
        raise TopiError(f"{what}: the reduction sizes differ: {ka} in {a.name!r} {tuple(a.shape)} and {kb} in "
                        f"{b.name!r} {tuple(b.shape)}")


def matmul(tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False, transpose_b=False, name="C"):
    """``C = op(A) @ op(B) (+ bias)``, ``op`` transposing when asked.

    Parameters
    ----------
    tensor_a : Tensor
        ``[M, K]`` (``[K, M]`` with ``transpose_a``).
    tensor_b : Tensor
        ``[K, N]`` (``[N, K]`` with ``transpose_b``).
    bias : Tensor, optional
        ``[N]``, added in a second stage (tagged ``broadcast``).
    out_dtype : str, optional
        The accumulation and output dtype (``tensor_a``'s by default).
    name : str
        The product's name (tagged ``matmul``).
    """
    what = "matmul"
    _check_2d(tensor_a, "tensor_a", what)
    _check_2d(tensor_b, "tensor_b", what)
    out_dtype = out_dtype or tensor_a.dtype
    m, ka = (tensor_a.shape[1], tensor_a.shape[0]) if transpose_a else tensor_a.shape
    kb, n = (tensor_b.shape[1], tensor_b.shape[0]) if transpose_b else tensor_b.shape
    _check_reduction(tensor_a, ka, tensor_b, kb, what)
    k = te.reduce_axis((0, ka), name="k")

    def a_at(i):
        return tensor_a[k, i] if transpose_a else tensor_a[i, k]

    def b_at(j):
        return tensor_b[j, k] if transpose_b else tensor_b[k, j]

    def body(i, j):
        if out_dtype == tensor_a.dtype and out_dtype == tensor_b.dtype:
            return te.sum(a_at(i) * b_at(j), axis=k)
        return te.sum(_op.cast(out_dtype, a_at(i)) * _op.cast(out_dtype, b_at(j)), axis=k)

    out = te.compute((m, n), body, name=name, tag=tag.MATMUL)
    if bias is None:
        return out
    return te.compute((m, n), lambda i, j: out[i, j] + _op.cast(out_dtype, bias[j]), name=f"{name}.bias",
                      tag=tag.BROADCAST)


def dense(data, weight, bias=None, out_dtype=None):
    """``out[i, j] = sum_k data[i, k] * weight[j, k] (+ bias[j])`` (a fully connected layer).

    Parameters
    ----------
    data : Tensor
        ``[batch, in_dim]``
    weight : Tensor
        ``[out_dim, in_dim]``
    bias : Tensor, optional
        ``[out_dim]``
    out_dtype : str, optional

    Returns
    -------
    Tensor
        ``[batch, out_dim]``, the product named ``T_dense`` and tagged ``dense``.
    """
    what = "dense"
    _check_2d(data, "data", what)
    _check_2d(weight, "weight", what)
    _check_reduction(data, data.shape[1], weight, weight.shape[1], what)
    out_dtype = out_dtype or data.dtype
    k = te.reduce_axis((0, data.shape[1]), name="k")
    out = te.compute((data.shape[0], weight.shape[0]), lambda i, j: te.sum(
        _op.cast(out_dtype, data[i, k]) * _op.cast(out_dtype, weight[j, k]), axis=k), name="T_dense", tag=tag.DENSE)
    if bias is None:
        return out
    return te.compute(out.shape, lambda i, j: out[i, j] + _op.cast(out_dtype, bias[j]), name="T_add",
                      tag=tag.BROADCAST)


def batch_matmul(A, B, name="C"):
    """``C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]`` (tecc's layout: ``B`` is
    ``[batch, K, N]``)."""
    for role, x in (("A", A), ("B", B)):
        if not isinstance(x, te.Tensor) or len(x.shape) != 3:
            raise TopiError(f"batch_matmul: {role} must be a 3-D tensor, got {getattr(x, 'shape', x)!r}")
    _check_reduction(A, A.shape[2], B, B.shape[1], "batch_matmul")
    k = te.reduce_axis((0, A.shape[2]), name="k")
    return te.compute((A.shape[0], A.shape[1], B.shape[2]),
                      lambda b, i, j: te.sum(A[b, i, k] * B[b, k, j], axis=k), name=name, tag=tag.BATCH_MATMUL)
