"""Arithmetic on whole tensors (``A + B``, ``A * 2``, ``-A``): :class:`te.Tensor`'s
operators call the hook ``te.tensor.TENSOR_ARITH``, which topi sets to
:func:`tensor_arith` when it is imported (te never imports topi)."""
from __future__ import annotations

from ..te import tensor as _tensor
from . import broadcast
from .math import cast

#: the hook's operator names -> topi's broadcasting operators
TENSOR_OPS = {
    "add": broadcast.add,
    "subtract": broadcast.subtract,
    "multiply": broadcast.multiply,
    "divide": broadcast.divide,
    "floor_divide": broadcast.floor_divide,
    "floor_mod": broadcast.floor_mod,
    "cast": cast,  # ``A.astype("float16")``
}


def tensor_arith(name, a, b):
    """``name`` (a key of :data:`TENSOR_OPS`) of ``a`` and ``b``, at least one a
    tensor: tagged ``elemwise`` against a scalar, ``broadcast`` against a tensor."""
    return TENSOR_OPS[name](a, b)


def install():
    """Make tensor arithmetic go through topi (idempotent)."""
    _tensor.TENSOR_ARITH = tensor_arith
