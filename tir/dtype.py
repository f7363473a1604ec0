"""Data types.

A dtype is carried through the IR as a plain string in TVM's spelling:
``"float32"``, ``"int8"``, ``"bool"``, ``"handle"``, and vector types with a lane
suffix such as ``"float32x4"``.  :func:`parse` turns it into a :class:`DType`.

The narrow types (:attr:`DType.is_narrow`) are the storage floats -- ``bfloat16``,
the 8-bit floats ``float8_e4m3fn`` ... and ``float4_e2m1fn``, whose values the
backends compute as float32 and round to the format after every operation -- and
the integers narrower than a byte (``int4``, ``uint4``, ``int2``, ``uint2``), stored
one per byte as their bits, computed as int8 / uint8 and wrapped to their width
after every operation.  Their vectors
exist only as copies (the backends move them as their storage bits).  The facts of
each format (bits, NaN, range) are :mod:`tecc.runtime.dtypes`'.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import TeccTypeError
from ..runtime import dtypes as _rt
from ..runtime.dtypes import SUPPORTED  # noqa: F401  (dtypes a user may give to tensors)

#: the 8- and 4-bit storage floats, whose name is their code (bfloat16's is "bfloat")
_FORMAT_CODES = tuple(name for name in _rt.FLOAT_FORMATS if name != "bfloat16")
_CODES = ("int", "uint", "float", "bfloat", "bool", "handle") + _FORMAT_CODES


@dataclass(frozen=True, slots=True)
class DType:
    code: str  # one of _CODES
    bits: int
    lanes: int = 1

    def __str__(self) -> str:
        if self.code in ("bool", "handle") or self.code in _FORMAT_CODES:
            base = self.code
        else:
            base = f"{self.code}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    @property
    def is_float(self) -> bool:
        return self.code in ("float", "bfloat") or self.code in _FORMAT_CODES

    @property
    def float_format(self):
        """The :class:`~tecc.runtime.dtypes.FloatFormat` of a storage float (its
        values compute as float32 and are stored as bits), else None."""
        return _rt.FLOAT_FORMATS.get("bfloat16" if self.code == "bfloat" else self.code)

    @property
    def is_storage_float(self) -> bool:
        """bfloat16, the 8-bit and the 4-bit floats: computed as float32, stored as bits."""
        return self.code == "bfloat" or self.code in _FORMAT_CODES

    @property
    def is_narrow(self) -> bool:
        """A storage float or an integer narrower than a byte: computed one lane at a
        time, its vectors only copies (see the module's docstring)."""
        return self.is_storage_float or (self.code in ("int", "uint") and self.bits < 8)

    def storage_bits(self) -> "DType":
        """The unsigned type of a narrow type's stored element, its bits (``uint16`` for
        bfloat16, ``uint8`` for the others: a 4- or 2-bit type in the low bits), with
        the same lanes; any other type itself."""
        if not self.is_narrow:
            return self
        return DType("uint", 16 if self.code == "bfloat" else 8, self.lanes)

    def value_type(self) -> "DType":
        """The type values of ``self`` are computed in by the backends (a storage
        float: float32; a narrow integer: int8 / uint8), with the same lanes; any
        other type itself."""
        if self.is_storage_float:
            return DType("float", 32, self.lanes)
        if self.is_narrow:
            return DType(self.code, 8, self.lanes)
        return self

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


_RE = re.compile(r"^(" + "|".join(sorted(_FORMAT_CODES, key=len, reverse=True))
                 + r"|int|uint|float|bfloat|bool|handle)(\d*)(?:x(\d+))?$")


@lru_cache(maxsize=None)
def parse(dtype) -> DType:
    """Parse a dtype string (or numpy dtype) into a :class:`DType`."""
    if isinstance(dtype, DType):
        return dtype
    s = str(dtype)
    if s in ("float", "int", "e4m3_float8", "e5m2_float8"):  # numpy's short names; TVM's older float8 names
        s = _rt.canonical(s)
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
    elif code in _FORMAT_CODES:
        if bits:
            raise TeccTypeError(f"dtype {dtype!r}: {code} has its width in its name; write {code!r}")
        nbits = _rt.FLOAT_FORMATS[code].bits
    else:
        if not bits:
            raise TeccTypeError(f"dtype {dtype!r} needs a bit width, e.g. '{code}32'")
        nbits = int(bits)
        valid = {"int": (2, 4, 8, 16, 32, 64), "uint": (2, 4, 8, 16, 32, 64),
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
    """The numpy dtype of values of ``dtype`` (an integer narrower than a byte: the
    byte that holds it)."""
    d = parse(dtype)
    if d.lanes != 1:
        raise TeccTypeError(f"vector dtype {dtype!r} has no numpy equivalent")
    if d.is_storage_float:
        raise TeccTypeError(f"{d} has no numpy dtype; use float32 on the host (tecc stores its bits as "
                            f"{d.storage_bits()})")
    if d.code == "handle":
        raise TeccTypeError("handle has no numpy dtype")
    return np.dtype(str(d.value_type()))


def min_value(dtype: str):
    """The smallest value of ``dtype`` (a float's -inf, or its lowest finite value
    where it has no infinity): the identity of a max reduction."""
    d = parse(dtype).element_of()
    if d.is_float:
        fmt = d.float_format
        if fmt is None or fmt.infinities:
            return -np.inf
        return 2.0 ** fmt.min_subnormal_exponent if not fmt.signed else -fmt.max
    if d.is_bool:
        return False
    return _rt.int_range(str(d))[0]


def max_value(dtype: str):
    """The largest value of ``dtype`` (a float's inf, or its largest finite value
    where it has no infinity): the identity of a min reduction."""
    d = parse(dtype).element_of()
    if d.is_float:
        fmt = d.float_format
        return np.inf if fmt is None or fmt.infinities else fmt.max
    if d.is_bool:
        return True
    return _rt.int_range(str(d))[1]
