"""Matrix products (TVM's ``topi.nn.dense``, ``topi.nn.matmul``,
``topi.nn.batch_matmul``) and tecc's numpy-style ``matmul_broadcast``.

===================  =====================================================  ================
compute              computes                                               tag
===================  =====================================================  ================
``matmul``           ``op(A) @ op(B) (+ bias)``, 2-D, ``op`` a transpose    ``matmul``
``dense``            ``data @ weight.T (+ bias)`` (a fully connected layer)  ``dense``
``batch_matmul``     3-D, ``B`` transposed by default (TVM's NT form), a    ``batch_matmul``
                     batch of 1 broadcast against the other's
``matmul_broadcast`` ``numpy.matmul`` / ONNX ``MatMul``: 1-D operands,      ``batch_matmul``
                     N-D ones with their batch dimensions broadcast
===================  =====================================================  ================

The bias of ``matmul``/``dense`` is a second stage tagged ``broadcast``, inlined by
the schedules into the product's loop nest like any element-wise epilogue after it.
The product of ``dense``, ``batch_matmul`` and ``matmul_broadcast`` accumulates in
``out_dtype`` (``int8`` operands with ``out_dtype="int32"``; the first operand's dtype
by default).
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from ...tir.arith import Analyzer
from .. import tag
from ..utils import TopiError, get_const_tuple


def shape_str(x) -> str:
    """``x``'s shape as ``(2, 3, n)`` for messages."""
    return "(" + ", ".join(str(d) for d in get_const_tuple(x.shape)) + (",)" if len(x.shape) == 1 else ")")


def describe(x, role) -> str:
    """``tensor_a 'A' (2, 3)``: an argument named by role, name and shape."""
    return f"{role} {x.name!r} {shape_str(x)}"


def check_tensor(x, role, what, ndim=None):
    """Raise unless ``x`` is a tensor (of rank ``ndim``, an int or a tuple of allowed ranks)."""
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"{what}: {role} must be a tensor, got {x!r}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(x.shape) not in allowed:
            ranks = " or ".join(f"{r}-D" for r in allowed)
            raise TopiError(f"{what}: {describe(x, role)} has rank {len(x.shape)}; it must be {ranks}")


def _const(d):
    """The value of a constant dimension, None for a symbolic one."""
    d = get_const_tuple([d])[0]
    return d if isinstance(d, int) else None


def _check_reduction(a, ka, b, kb, what, roles=("tensor_a", "tensor_b")):
    """Raise when the reduced dimensions ``ka`` of ``a`` and ``kb`` of ``b`` are
    constants that differ."""
    ca, cb = _const(ka), _const(kb)
    if ca is not None and cb is not None and ca != cb:
        raise TopiError(f"{what}: the reduction sizes differ: {ca} in {a.name!r} {shape_str(a)} ({roles[0]}) and "
                        f"{cb} in {b.name!r} {shape_str(b)} ({roles[1]})")


def _check_bias(bias, n, out_shape, what):
    check_tensor(bias, "bias", what, 1)
    cb, cn = _const(bias.shape[0]), _const(n)
    if cb is not None and cn is not None and cb != cn:
        shape = "(" + ", ".join(str(d) for d in get_const_tuple(out_shape)) + ")"
        raise TopiError(f"{what}: {describe(bias, 'bias')} has {cb} elements but the output {shape} has {cn} "
                        "columns")


def _check_layout_args(what, auto_scheduler_rewritten_layout, meta_schedule_original_shape):
    if auto_scheduler_rewritten_layout:
        raise TopiError(f"{what}: auto_scheduler_rewritten_layout={auto_scheduler_rewritten_layout!r} is not "
                        "supported (tecc has no auto-scheduler layout rewrite); pass the weight in its own layout")
    if meta_schedule_original_shape:
        raise TopiError(f"{what}: meta_schedule_original_shape is not supported (tecc has no meta-schedule layout "
                        "rewrite); pass the weight in its own layout")


def _cast(x, dtype):
    return x if x.dtype == dtype else _op.cast(dtype, x)


def _add_bias(out, bias, out_dtype, name):
    return te.compute(out.shape, lambda i, j: out[i, j] + _cast(bias[j], out_dtype), name=name, tag=tag.BROADCAST)


def matmul(tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False, transpose_b=False,
           auto_scheduler_rewritten_layout="", meta_schedule_original_shape=None, name="C"):
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
    transpose_a, transpose_b : bool
    auto_scheduler_rewritten_layout, meta_schedule_original_shape
        TVM's layout-rewrite hooks; only their defaults are accepted.
    name : str
        The product's name (tagged ``matmul``).

    Returns
    -------
    Tensor
        ``[M, N]``

    Raises
    ------
    TopiError
        When an operand is not 2-D, the reduced dimensions differ or the bias is not
        ``[N]``.
    """
    what = "matmul"
    check_tensor(tensor_a, "tensor_a", what, 2)
    check_tensor(tensor_b, "tensor_b", what, 2)
    _check_layout_args(what, auto_scheduler_rewritten_layout, meta_schedule_original_shape)
    out_dtype = out_dtype or tensor_a.dtype
    m, ka = (tensor_a.shape[1], tensor_a.shape[0]) if transpose_a else tensor_a.shape
    kb, n = (tensor_b.shape[1], tensor_b.shape[0]) if transpose_b else tensor_b.shape
    _check_reduction(tensor_a, ka, tensor_b, kb, what)
    if bias is not None:
        _check_bias(bias, n, (m, n), what)
    k = te.reduce_axis((0, ka), name="k")

    def body(i, j):
        a = tensor_a[k, i] if transpose_a else tensor_a[i, k]
        b = tensor_b[j, k] if transpose_b else tensor_b[k, j]
        return te.sum(_cast(a, out_dtype) * _cast(b, out_dtype), axis=k)

    out = te.compute((m, n), body, name=name, tag=tag.MATMUL,
                     attrs={"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)})
    return out if bias is None else _add_bias(out, bias, out_dtype, f"{name}.bias")


def dense(data, weight, bias=None, out_dtype=None, auto_scheduler_rewritten_layout="",
          meta_schedule_original_shape=None):
    """``out[i, j] = sum_k data[i, k] * weight[j, k] (+ bias[j])``: a fully connected
    layer.

    Parameters
    ----------
    data : Tensor
        ``[batch, in_dim]``
    weight : Tensor
        ``[out_dim, in_dim]``
    bias : Tensor, optional
        ``[out_dim]``
    out_dtype : str, optional
        The accumulation and output dtype (``data``'s by default; ``"int32"`` for
        ``int8`` operands).
    auto_scheduler_rewritten_layout, meta_schedule_original_shape
        TVM's layout-rewrite hooks; only their defaults are accepted.

    Returns
    -------
    Tensor
        ``[batch, out_dim]``: the product ``T_dense`` (tagged ``dense``), or the bias
        stage ``T_add`` after it (tagged ``broadcast``).

    Raises
    ------
    TopiError
        When an operand is not 2-D, ``in_dim`` differs between ``data`` and
        ``weight`` or the bias is not ``[out_dim]``.
    """
    what = "dense"
    check_tensor(data, "data", what, 2)
    check_tensor(weight, "weight", what, 2)
    _check_layout_args(what, auto_scheduler_rewritten_layout, meta_schedule_original_shape)
    _check_reduction(data, data.shape[1], weight, weight.shape[1], what, ("data", "weight"))
    out_shape = (data.shape[0], weight.shape[0])
    if bias is not None:
        _check_bias(bias, weight.shape[0], out_shape, what)
    out_dtype = out_dtype or data.dtype
    k = te.reduce_axis((0, data.shape[1]), name="k")
    out = te.compute(out_shape, lambda i, j: te.sum(_cast(data[i, k], out_dtype) * _cast(weight[j, k], out_dtype),
                                                    axis=k), name="T_dense", tag=tag.DENSE,
                     attrs={"transpose_a": False, "transpose_b": True})
    return out if bias is None else _add_bias(out, bias, out_dtype, "T_add")


def dense_by_batch(data, weight, bias, out_dtype, min_batch, large, small):
    """``dense`` computed by one of a target's two computes, picked by the batch:
    ``large(data, weight, bias, out_dtype)`` from a batch (``data``'s rows) of
    ``min_batch`` on, ``small(...)`` below, and :func:`dense` itself when a shape is
    symbolic; :func:`dense`'s argument checks first."""
    dense(data, weight, bias, out_dtype)  # the argument checks
    shape = get_const_tuple(data.shape) + get_const_tuple(weight.shape)
    if not all(isinstance(d, int) for d in shape):
        return dense(data, weight, bias, out_dtype)
    if shape[0] >= min_batch:
        return large(data, weight, bias, out_dtype)
    return small(data, weight, bias, out_dtype)


def _batch_index(b, size):
    """The batch index of an operand of batch ``size`` (0 when it broadcasts)."""
    return 0 if _const(size) == 1 else b


def batch_matmul(tensor_a, tensor_b, oshape=None, out_dtype=None, transpose_a=False, transpose_b=True,
                 auto_scheduler_rewritten_layout="", meta_schedule_original_shape=None, name=None):
    """``C[b] = op(A[b]) @ op(B[b])`` over a batch; as in TVM, ``B`` is transposed by
    default (``[batch, N, K]``).

    Parameters
    ----------
    tensor_a : Tensor
        ``[batch, M, K]`` (``[batch, K, M]`` with ``transpose_a``).
    tensor_b : Tensor
        ``[batch, N, K]`` with ``transpose_b`` (the default), ``[batch, K, N]``
        without.  Either batch may be 1: it is then broadcast against the other.
    oshape : list, optional
        The output shape ``[batch, M, N]``, for dynamic shapes (inferred by default).
    out_dtype : str, optional
        The accumulation and output dtype (``tensor_a``'s by default).
    transpose_a, transpose_b : bool
    auto_scheduler_rewritten_layout, meta_schedule_original_shape
        TVM's layout-rewrite hooks; only their defaults are accepted.
    name : str, optional
        ``T_batch_matmul_NT`` and the like by default (tagged ``batch_matmul``).

    Returns
    -------
    Tensor
        ``[batch, M, N]``

    Raises
    ------
    TopiError
        When an operand is not 3-D, the reduced dimensions differ or the batch sizes
        neither match nor broadcast.
    """
    what = "batch_matmul"
    check_tensor(tensor_a, "tensor_a", what, 3)
    check_tensor(tensor_b, "tensor_b", what, 3)
    _check_layout_args(what, auto_scheduler_rewritten_layout, meta_schedule_original_shape)
    xb, xi, xk = (tensor_a.shape[0], tensor_a.shape[2], tensor_a.shape[1]) if transpose_a else tensor_a.shape
    yb, yj, yk = tensor_b.shape if transpose_b else (tensor_b.shape[0], tensor_b.shape[2], tensor_b.shape[1])
    try:
        _check_reduction(tensor_a, xk, tensor_b, yk, what)
    except TopiError as e:
        if transpose_b and _const(tensor_b.shape[1]) == _const(xk):
            raise TopiError(f"{e}; tensor_b is [batch, N, K] by default (transpose_b=True, as in TVM): pass "
                            "transpose_b=False for [batch, K, N]") from None
        raise
    if oshape is None:
        operands = f"{describe(tensor_a, 'tensor_a')} and {describe(tensor_b, 'tensor_b')}"
        batch = _broadcast_dim(xb, yb, lambda: f"{what}: the batch sizes do not broadcast: {operands}")
        oshape = (batch, xi, yj)
    elif len(oshape) != 3:
        raise TopiError(f"{what}: oshape {tuple(oshape)} must have 3 entries [batch, M, N]")
    out_dtype = out_dtype or tensor_a.dtype
    k = te.reduce_axis((0, xk), name="k")

    def body(b, i, j):
        ba, bb = _batch_index(b, xb), _batch_index(b, yb)
        a = tensor_a[ba, k, i] if transpose_a else tensor_a[ba, i, k]
        c = tensor_b[bb, j, k] if transpose_b else tensor_b[bb, k, j]
        return te.sum(_cast(a, out_dtype) * _cast(c, out_dtype), axis=k)

    if name is None:
        name = "T_batch_matmul_" + ("T" if transpose_a else "N") + ("T" if transpose_b else "N")
    return te.compute(oshape, body, name=name, tag=tag.BATCH_MATMUL,
                      attrs={"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)})


def _broadcast_dim(x, y, message):
    """The broadcast of two dimensions (1 against n gives n); ``message()`` raised
    when they cannot broadcast."""
    cx, cy = _const(x), _const(y)
    if cx == 1:
        return y
    if cy == 1:
        return x
    if cx is not None and cy is not None:
        if cx != cy:
            raise TopiError(message())
        return x
    if x is y or Analyzer().can_prove_equal(x, y):
        return x
    raise TopiError(message() + "; with symbolic batch sizes give oshape")


def matmul_broadcast(tensor_a, tensor_b, out_dtype=None, name="T_matmul"):
    """``numpy.matmul(A, B)`` (ONNX ``MatMul``): the product of the last two
    dimensions, the dimensions before them broadcast numpy-style.

    A 1-D ``A`` is a row vector (``[1, K]``, the 1 removed from the result), a 1-D
    ``B`` a column vector (``[K, 1]``, the 1 removed).  TVM has no TOPI operator for
    this (its ONNX importer reshapes to ``dense``/``batch_matmul``; Relax's
    ``R.matmul`` has these semantics): tecc's name is ``topi.matmul_broadcast``.

    Parameters
    ----------
    tensor_a : Tensor
        ``[..., M, K]`` or ``[K]``
    tensor_b : Tensor
        ``[..., K, N]`` or ``[K]``
    out_dtype : str, optional
        The accumulation and output dtype (``tensor_a``'s by default).
    name : str

    Returns
    -------
    Tensor
        ``broadcast(A.batch, B.batch) + [M] + [N]`` (tagged ``batch_matmul``).

    Raises
    ------
    TopiError
        When an operand is a scalar, the reduced dimensions differ or the batch
        dimensions do not broadcast.
    """
    what = "matmul_broadcast"
    for role, x in (("tensor_a", tensor_a), ("tensor_b", tensor_b)):
        check_tensor(x, role, what)
        if len(x.shape) == 0:
            raise TopiError(f"{what}: {role} {x.name!r} is a scalar (rank 0); matmul needs at least 1-D operands")
    a_shape, b_shape = list(tensor_a.shape), list(tensor_b.shape)
    a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
    ka = a_shape[-1]
    kb = b_shape[0] if b_vec else b_shape[-2]
    _check_reduction(tensor_a, ka, tensor_b, kb, what)
    a_batch = a_shape[:-2]
    b_batch = [] if b_vec else b_shape[:-2]
    nb = max(len(a_batch), len(b_batch))
    a_batch = [1] * (nb - len(a_batch)) + a_batch
    b_batch = [1] * (nb - len(b_batch)) + b_batch
    batch = [_broadcast_dim(x, y, lambda: (f"{what}: the batch dimensions do not broadcast: "
                                           f"{describe(tensor_a, 'tensor_a')} and {describe(tensor_b, 'tensor_b')}"))
             for x, y in zip(a_batch, b_batch)]
    a_off, b_off = nb - len(a_shape[:-2]), nb - len(b_shape[:-2])
    out_shape = list(batch) + ([] if a_vec else [a_shape[-2]]) + ([] if b_vec else [b_shape[-1]])
    out_dtype = out_dtype or tensor_a.dtype
    k = te.reduce_axis((0, ka), name="k")

    def batch_indices(idx, shape, off):
        return [_batch_index(idx[d], shape[d - off]) for d in range(off, nb)]

    def body(*idx):
        pos = nb
        if a_vec:
            a = tensor_a[k]
        else:
            a = tensor_a[tuple(batch_indices(idx, a_shape, a_off)) + (idx[pos], k)]
            pos += 1
        if b_vec:
            b = tensor_b[k]
        else:
            b = tensor_b[tuple(batch_indices(idx, b_shape, b_off)) + (k, idx[pos])]
        return te.sum(_cast(a, out_dtype) * _cast(b, out_dtype), axis=k)

    names = [f"b{d}" for d in range(nb)] + ([] if a_vec else ["i"]) + ([] if b_vec else ["j"])
    return te.compute(out_shape, _named(body, names), name=name, tag=tag.BATCH_MATMUL,
                      attrs={"transpose_a": False, "transpose_b": False})


def _named(fn, names):
    """``fn(*indices)`` presenting the parameters ``names`` (te.compute names the
    compute's axes after them)."""
    import inspect

    fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
    return fn
