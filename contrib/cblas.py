"""TVM's ``tvm.contrib.cblas``: matrix products done by the BLAS that numpy links
(OpenBLAS, MKL...), as extern stages of a TE graph built for a CPU target::

    from tecc.contrib import cblas
    C = cblas.matmul(A, B)                     # te.extern calling "tvm.contrib.cblas.matmul"
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias)

Importing this module registers the packed functions ``"tvm.contrib.cblas.matmul"``
and ``"tvm.contrib.cblas.batch_matmul"`` (TVM's names, so code that calls them with
``tir.call_packed`` directly runs too); the compiled code calls back into Python for
the product (``numpy.matmul``), which writes the output buffer.  A module that calls
them and is loaded in another process needs ``import tecc.contrib.cblas`` there.
"""
from __future__ import annotations

import numpy as np

from .. import te, tir
from ..errors import TeccTypeError
from ..runtime.dtypes import storage
from ..runtime.packed_func import register_func

MATMUL = "tvm.contrib.cblas.matmul"
BATCH_MATMUL = "tvm.contrib.cblas.batch_matmul"


def _static(dim):
    return int(dim) if isinstance(dim, (int, tir.IntImm)) else None


def _check_inner(what, lhs, rhs, k_lhs, k_rhs):
    a, b = _static(k_lhs), _static(k_rhs)
    if a is not None and b is not None and a != b:
        raise TeccTypeError(f"cblas.{what}: the reduction lengths differ: {lhs.name!r} gives {a}, {rhs.name!r} "
                            f"gives {b} (shapes {list(lhs.shape)} and {list(rhs.shape)}); check transa/transb")


def matmul(lhs, rhs, transa=False, transb=False, **kwargs):
    """``lhs @ rhs`` (each transposed first when ``transa``/``transb``) of two 2-D
    tensors, computed by BLAS.

    Returns
    -------
    Tensor
        ``[n, m]``, of ``lhs``'s dtype; ``kwargs`` go to :func:`tecc.te.extern`
        (``name=`` ...).
    """
    for t, what in ((lhs, "lhs"), (rhs, "rhs")):
        if len(t.shape) != 2:
            raise TeccTypeError(f"cblas.matmul: {what} {t.name!r} has shape {list(t.shape)}; it takes 2-D tensors "
                                "(batch_matmul takes 3-D ones)")
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    _check_inner("matmul", lhs, rhs, lhs.shape[0] if transa else lhs.shape[1], rhs.shape[1] if transb else rhs.shape[0])
    kwargs.setdefault("name", "C")
    return te.extern((n, m), [lhs, rhs],
                     lambda ins, outs: tir.call_packed(MATMUL, ins[0], ins[1], outs[0], transa, transb),
                     dtype=lhs.dtype, **kwargs)


def batch_matmul(lhs, rhs, transa=False, transb=False, iterative=False, **kwargs):
    """The batched product of two 3-D tensors (a batch of 1 broadcasts), computed
    by BLAS; ``iterative`` is accepted for TVM's signature (numpy loops over the
    batch either way)."""
    del iterative
    for t, what in ((lhs, "lhs"), (rhs, "rhs")):
        if len(t.shape) != 3:
            raise TeccTypeError(f"cblas.batch_matmul: {what} {t.name!r} has shape {list(t.shape)}; it takes 3-D "
                                "tensors [batch, rows, columns]")
    b_l, b_r = _static(lhs.shape[0]), _static(rhs.shape[0])
    if b_l is not None and b_r is not None and b_l != b_r and 1 not in (b_l, b_r):
        raise TeccTypeError(f"cblas.batch_matmul: batches {b_l} ({lhs.name!r}) and {b_r} ({rhs.name!r}) differ and "
                            "neither is 1")
    batch = lhs.shape[0] if b_r == 1 else rhs.shape[0]
    n = lhs.shape[2] if transa else lhs.shape[1]
    m = rhs.shape[1] if transb else rhs.shape[2]
    _check_inner("batch_matmul", lhs, rhs, lhs.shape[1] if transa else lhs.shape[2],
                 rhs.shape[2] if transb else rhs.shape[1])
    kwargs.setdefault("name", "C")
    return te.extern((batch, n, m), [lhs, rhs],
                     lambda ins, outs: tir.call_packed(BATCH_MATMUL, ins[0], ins[1], outs[0], transa, transb),
                     dtype=lhs.dtype, **kwargs)


def _product(a, b, c, transa, transb, axes):
    x, y = a.numpy(), b.numpy()
    if transa:
        x = np.swapaxes(x, *axes)
    if transb:
        y = np.swapaxes(y, *axes)
    c.copyfrom(np.matmul(x, y).astype(storage(c.dtype), copy=False))


@register_func(MATMUL, override=True)
def _matmul_packed(a, b, c, transa, transb):
    _product(a, b, c, transa, transb, (0, 1))


@register_func(BATCH_MATMUL, override=True)
def _batch_matmul_packed(a, b, c, transa, transb):
    _product(a, b, c, transa, transb, (1, 2))


__all__ = ["batch_matmul", "matmul"]
