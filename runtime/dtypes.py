"""The element types arrays and compiled functions exchange, as the runtime sees them.

The runtime needs only scalar element types: how each is stored in a numpy array
(``bfloat16`` as its raw 16 bits in ``uint16``: :func:`bfloat16_bits`,
:func:`as_bfloat16_bits`), its ctypes type for a scalar
argument, and the canonical spelling of what a user writes (``"float"``,
``np.float32``...).  The compiler's full dtype model (vector lanes, bit widths) is
:mod:`tecc.tir.dtype`, which takes its list of supported types from here.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..errors import TeccTypeError

#: dtypes a user may give to tensors and arrays
SUPPORTED = (
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "bfloat16", "float32", "float64",
)

_ALIASES = {"float": "float32", "int": "int32"}

_CTYPES = {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16,
    "uint16": ctypes.c_uint16, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


def canonical(dtype) -> str:
    """The supported name of ``dtype`` (a string, a numpy dtype or scalar type)."""
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        dtype = np.dtype(dtype).name
    name = _ALIASES.get(str(dtype), str(dtype))
    if name not in SUPPORTED:
        raise TeccTypeError(f"unknown dtype {dtype!r}; use one of {', '.join(SUPPORTED)}")
    return name


def storage(dtype: str) -> np.dtype:
    """The numpy dtype that stores elements of ``dtype`` (``bfloat16``: ``uint16`` bits)."""
    name = canonical(dtype)
    return np.dtype("uint16") if name == "bfloat16" else np.dtype(name)


def bfloat16_bits(x) -> np.ndarray:
    """The bfloat16 bits (``uint16``) of float values ``x``, rounded to nearest even."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def as_bfloat16_bits(arr):
    """``arr`` as the ``uint16`` bits tecc keeps bfloat16 in, when it holds bfloat16
    elements: those bits already, ml_dtypes' bfloat16 (onnx's, jax's), or the 2-byte
    void an ``.npy``/``.npz`` of ml_dtypes' arrays reads back as without ml_dtypes;
    else None."""
    if isinstance(arr, np.ndarray) and (arr.dtype.name in ("uint16", "bfloat16") or arr.dtype.str in ("|V2", "<V2")):
        return arr.view(np.uint16)
    return None


def ctype(dtype: str):
    """The ctypes type of a scalar argument of ``dtype``."""
    try:
        return _CTYPES[canonical(dtype)]
    except KeyError:
        raise TeccTypeError(f"a scalar argument of dtype {dtype} cannot be passed to C") from None


def int_range(dtype: str) -> tuple:
    """``(min, max)`` of an integer dtype."""
    info = np.iinfo(storage(dtype))
    return int(info.min), int(info.max)
