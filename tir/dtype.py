"""Data types.

A dtype is carried through the IR as a plain string in TVM's spelling:
``"float32"``, ``"int8"``, ``"bool"``, ``"handle"``, and vector types with a lane
suffix such as ``"float32x4"``.  :func:`parse` turns it into a :class:`DType`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import TeccTypeError
from ..runtime.dtypes import SUPPORTED  # noqa: F401  (dtypes a user may give to tensors)

_CODES = ("int", "uint", "float", "bfloat", "bool", "handle")


@dataclass(frozen=True, slots=True)
class DType:
    code: str  # one of _CODES
    bits: int
    lanes: int = 1

    def __str__(self) -> str:
        if self.code == "bool":
            base = "bool"
        elif self.code == "handle":
            base = "handle"
        else:
            base = f"{self.code}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    @property
    def is_float(self) -> bool:
        return self.code in ("float", "bfloat")

    @property
    def is_int(self) -> bool:
        return self.code == "int"

    @property
    def is_uint(self) -> bool:
        return self.code == "uint"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.code in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.code == "bool"

    @property
    def is_handle(self) -> bool:
        return self.code == "handle"

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8) * self.lanes

    def element_of(self) -> "DType":
        return DType(self.code, self.bits, 1)

    def with_lanes(self, lanes: int) -> "DType":
        return DType(self.code, self.bits, lanes)


_RE = re.compile(r"^(int|uint|float|bfloat|bool|handle)(\d*)(?:x(\d+))?$")


@lru_cache(maxsize=None)
def parse(dtype) -> DType:
    """Parse a dtype string (or numpy dtype) into a :class:`DType`."""
    if isinstance(dtype, DType):
        return dtype
    s = str(dtype)
    if s == "float":
        s = "float32"
    elif s == "int":
        s = "int32"
    m = _RE.match(s)
    if not m:
        raise TeccTypeError(
            f"unknown dtype {dtype!r}; use one of {', '.join(SUPPORTED)} "
            "(optionally with a lane suffix such as 'float32x4')")
    code, bits, lanes = m.group(1), m.group(2), m.group(3)
    if code == "bool":
        nbits = 1
    elif code == "handle":
        nbits = 64
    else:
        if not bits:
            raise TeccTypeError(f"dtype {dtype!r} needs a bit width, e.g. '{code}32'")
        nbits = int(bits)
        valid = {"int": (8, 16, 32, 64), "uint": (8, 16, 32, 64),
                 "float": (16, 32, 64), "bfloat": (16,)}[code]
        if nbits not in valid:
            raise TeccTypeError(f"dtype {dtype!r} has an unsupported bit width")
    return DType(code, nbits, int(lanes) if lanes else 1)


def canonical(dtype) -> str:
    """The canonical string spelling of a dtype (accepts numpy dtypes)."""
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        dtype = np.dtype(dtype).name
    return str(parse(dtype))


def lanes(dtype: str) -> int:
    return parse(dtype).lanes


def element(dtype: str) -> str:
    return str(parse(dtype).element_of())


def with_lanes(dtype: str, n: int) -> str:
    return str(parse(dtype).with_lanes(n))


def is_float(dtype: str) -> bool:
    return parse(dtype).is_float


def is_integer(dtype: str) -> bool:
    return parse(dtype).is_integer


def is_bool(dtype: str) -> bool:
    return parse(dtype).is_bool


def to_numpy(dtype: str) -> np.dtype:
    d = parse(dtype)
    if d.lanes != 1:
        raise TeccTypeError(f"vector dtype {dtype!r} has no numpy equivalent")
    if d.code == "bfloat":
        raise TeccTypeError("bfloat16 has no numpy dtype; use float32 on the host")
    if d.code == "handle":
        raise TeccTypeError("handle has no numpy dtype")
    return np.dtype(str(d))


def min_value(dtype: str):
    d = parse(dtype)
    if d.is_float:
        return -np.inf
    if d.is_bool:
        return False
    return int(np.iinfo(to_numpy(str(d.element_of()))).min)


def max_value(dtype: str):
    d = parse(dtype)
    if d.is_float:
        return np.inf
    if d.is_bool:
        return True
    return int(np.iinfo(to_numpy(str(d.element_of()))).max)
