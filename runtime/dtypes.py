"""The element types arrays and compiled functions exchange, as the runtime sees them.

The runtime needs only scalar element types: how each is stored in a numpy array,
its ctypes type for a scalar argument, and the canonical spelling of what a user
writes (``"float"``, ``np.float32``...).  The compiler's full dtype model (vector
lanes, bit widths) is :mod:`tecc.tir.dtype`, which takes its facts from here.

Types numpy lacks
-----------------
*Storage floats* -- ``bfloat16``, the 8-bit floats ``float8_e4m3fn``,
``float8_e4m3fnuz``, ``float8_e5m2``, ``float8_e5m2fnuz``, ``float8_e8m0fnu`` and the
4-bit ``float4_e2m1fn`` (ml_dtypes' names, which onnx, jax and TVM use) -- are kept
in numpy as their bit patterns: ``uint16`` for bfloat16, one ``uint8`` per element
for the others (a 4-bit float in the low nibble).  Their facts are a
:class:`FloatFormat` each (:data:`FLOAT_FORMATS`); :func:`encode` rounds float values
to one (to nearest, ties to even), :func:`decode` gives the float32 values of bits.

*Narrow integers* -- ``int4``, ``uint4``, ``int2``, ``uint2`` -- are kept the same
way: one ``uint8`` per element, the value's two's-complement bits in the low ones
(-1 as an int4 is ``0b1111``).  That is ml_dtypes' layout (and ONNX's, unpacked), so
their arrays and tecc's share memory as they are; :func:`numbers` gives the values.

:func:`as_storage` takes what other libraries hand over for these types
(ml_dtypes' arrays, which onnx's ``numpy_helper`` returns; the raw voids an
``.npz`` of them reads back as without ml_dtypes) to that storage;
:func:`to_storage` converts numbers.  Nothing here needs ml_dtypes, except
:func:`as_ml_dtypes`, which gives typed arrays back to code that has it.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import TeccTypeError


@dataclass(frozen=True)
class FloatFormat:
    """A float type stored as its bits: ``exponent`` and ``mantissa`` bit counts and
    the exponent ``bias``, whether it has infinities, and how it writes NaN:

    ``"ieee"``  all-ones exponent, non-zero mantissa (bfloat16, float8_e5m2);
    ``"fn"``    every bit but the sign set (float8_e4m3fn: no infinities);
    ``"fnuz"``  the bit pattern of negative zero, which it lacks (float8_*fnuz);
    ``"fnu"``   all bits set (float8_e8m0fnu: unsigned, exponent only, no zero);
    ``None``    none at all (float4_e2m1fn: every pattern is a number).
    """

    name: str
    bits: int
    exponent: int
    mantissa: int
    bias: int
    infinities: bool = False
    nan: str | None = "ieee"

    @property
    def signed(self) -> bool:
        return self.nan != "fnu"

    @property
    def storage(self) -> str:
        """The numpy dtype holding one element's bits."""
        return "uint16" if self.bits == 16 else "uint8"

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1) if self.signed else 0

    @property
    def max_code(self) -> int:
        """The bits of the largest finite value."""
        top_exp, top_man = (1 << self.exponent) - 1, (1 << self.mantissa) - 1
        if self.nan == "ieee":
            return ((top_exp - 1) << self.mantissa) | top_man
        if self.nan == "fn":
            return (top_exp << self.mantissa) | (top_man - 1)
        if self.nan == "fnu":
            return 0xFE
        return (top_exp << self.mantissa) | top_man  # fnuz, None: every positive pattern is finite

    @property
    def nan_code(self) -> int | None:
        """The bits of a positive quiet NaN (ml_dtypes' choice), None without NaN."""
        if self.nan == "ieee":
            return ((1 << (self.exponent + 1)) - 1) << (self.mantissa - 1)
        if self.nan == "fn":
            return (1 << (self.bits - 1)) - 1
        if self.nan == "fnuz":
            return 1 << (self.bits - 1)
        return 0xFF if self.nan == "fnu" else None

    @property
    def overflow_code(self) -> int:
        """What a finite value that rounds past the largest becomes (sign apart):
        infinity where the format has one, else NaN; a format without NaN saturates."""
        if self.infinities:
            return ((1 << self.exponent) - 1) << self.mantissa
        return self.max_code if self.nan is None else self.nan_code

    @property
    def max(self) -> float:
        """The largest finite value."""
        return float(decode(np.array([self.max_code], dtype=self.storage), self.name)[0])

    @property
    def min_subnormal_exponent(self) -> int:
        """log2 of the smallest positive value."""
        return 1 - self.bias - self.mantissa if self.mantissa else -self.bias


#: the storage floats, by name
FLOAT_FORMATS = {f.name: f for f in (
    FloatFormat("bfloat16", 16, 8, 7, 127, infinities=True),
    FloatFormat("float8_e4m3fn", 8, 4, 3, 7, nan="fn"),
    FloatFormat("float8_e4m3fnuz", 8, 4, 3, 8, nan="fnuz"),
    FloatFormat("float8_e5m2", 8, 5, 2, 15, infinities=True),
    FloatFormat("float8_e5m2fnuz", 8, 5, 2, 16, nan="fnuz"),
    FloatFormat("float8_e8m0fnu", 8, 8, 0, 127, nan="fnu"),
    FloatFormat("float4_e2m1fn", 4, 2, 1, 1, nan=None),
)}

#: integers narrower than a byte, stored one per byte: name -> (bits, signed)
NARROW_INTS = {"int4": (4, True), "uint4": (4, False), "int2": (2, True), "uint2": (2, False)}

#: dtypes a user may give to tensors and arrays
SUPPORTED = (
    "bool", "int2", "uint2", "int4", "uint4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
    "uint64", "float4_e2m1fn", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float16", "bfloat16", "float32", "float64",
)

#: other spellings: numpy's short names, and TVM's older names of the 8-bit floats
_ALIASES = {"float": "float32", "int": "int32", "e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"}

_CTYPES = {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16,
    "uint16": ctypes.c_uint16, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "int4": ctypes.c_int8, "int2": ctypes.c_int8, "uint4": ctypes.c_uint8,
    "uint2": ctypes.c_uint8,  # a scalar narrow integer is passed as its value
}


def canonical(dtype) -> str:
    """The supported name of ``dtype`` (a string, a numpy dtype or scalar type)."""
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        dtype = np.dtype(dtype).name
    name = _ALIASES.get(str(dtype), str(dtype))
    if name not in SUPPORTED:
        raise TeccTypeError(f"unknown dtype {dtype!r}; use one of {', '.join(SUPPORTED)}")
    return name


def storage_float(dtype: str) -> FloatFormat | None:
    """The :class:`FloatFormat` of a storage float, None for any other dtype."""
    return FLOAT_FORMATS.get(_ALIASES.get(str(dtype), str(dtype)))


def storage(dtype: str) -> np.dtype:
    """The numpy dtype that stores elements of ``dtype`` (a type numpy lacks: the
    unsigned integer holding its bits)."""
    name = canonical(dtype)
    fmt = FLOAT_FORMATS.get(name)
    if fmt is not None:
        return np.dtype(fmt.storage)
    if name in NARROW_INTS:
        return np.dtype("uint8")
    return np.dtype(name)


def is_narrow(dtype) -> bool:
    """A type numpy lacks: a storage float or an integer narrower than a byte."""
    name = _ALIASES.get(str(dtype), str(dtype))
    return name in FLOAT_FORMATS or name in NARROW_INTS


def kind(dtype) -> str:
    """numpy's kind letter of ``dtype``, the narrow types included (ml_dtypes gives
    them ``"V"``): ``"b"`` bool, ``"i"`` signed, ``"u"`` unsigned, ``"f"`` float."""
    name = canonical(dtype)
    if name in FLOAT_FORMATS:
        return "f"
    if name in NARROW_INTS:
        return "i" if NARROW_INTS[name][1] else "u"
    return np.dtype(name).kind


def itemsize(dtype: str) -> int:
    """Bytes per stored element."""
    return storage(dtype).itemsize


# -------------------------------------------------------------------------------
# storage floats: float values <-> bits
# -------------------------------------------------------------------------------
def _rne_shift(x, shift):
    """``x >> shift`` rounded to nearest, ties to even (uint64 arrays, shift >= 1)."""
    shift = np.minimum(shift, 62).astype(np.uint64)
    one = np.uint64(1)
    return (x + ((one << (shift - one)) - one) + ((x >> shift) & one)) >> shift


def encode(values, dtype) -> np.ndarray:
    """The bits of float ``values`` rounded to storage float ``dtype``: to nearest,
    ties to even; a value past the largest finite one becomes infinity, or NaN where
    the format has no infinity (float4_e2m1fn, which has no NaN either, saturates);
    NaN becomes the format's NaN.  As ml_dtypes' ``astype`` rounds, bit for bit
    (float8_e8m0fnu, which holds no zero and no negative value, gives NaN for those,
    and rounds ties up; float4_e2m1fn gives NaN the bits ml_dtypes does: 0b1000 for
    a positive one).  float64 values are rounded once, from their own bits (other
    values through float32, exactly).  Saturating conversions (ONNX's Cast) clamp
    the values first."""
    fmt = FLOAT_FORMATS[canonical(dtype)]
    arr = np.asarray(values)
    wide = arr.dtype == np.float64
    width, src_m, src_bias = (64, 52, 1023) if wide else (32, 23, 127)
    u = arr.astype(np.float64 if wide else np.float32).view(np.uint64 if wide else np.uint32).astype(np.uint64)
    one = np.uint64(1)
    negative = (u >> np.uint64(width - 1)) == 1
    a = u & np.uint64((1 << (width - 1)) - 1)
    inf_bits = ((1 << (width - 1 - src_m)) - 1) << src_m
    nan = a > inf_bits
    if fmt.nan == "fnu":
        rebias = src_bias - fmt.bias
        code = ((a + (one << np.uint64(src_m - 1))) >> np.uint64(src_m)) - np.uint64(rebias)  # ties up
        half_min = (rebias << src_m) | (1 << (src_m - 1)) if wide else 3 << (src_m - 2)  # 1.5 * 2^-127
        code = np.where(a < ((rebias + 1) << src_m), (a >= half_min).astype(np.uint64), code)  # below 2^-126
        bad = nan | negative | (a == 0) | (a == inf_bits) | (code > fmt.max_code)
        return np.where(bad, fmt.nan_code, code).astype(fmt.storage)
    m = fmt.mantissa
    emin_src = 1 - fmt.bias + src_bias                # the format's smallest normal exponent, source-biased
    e = np.maximum(a >> np.uint64(src_m), 1)          # the source's subnormals: exponent 1, no hidden bit
    sig = (a & np.uint64((1 << src_m) - 1)) | np.where(a >> np.uint64(src_m) > 0, one << np.uint64(src_m),
                                                        np.uint64(0))
    normal = _rne_shift(a, np.full(a.shape, src_m - m)) - np.uint64((src_bias - fmt.bias) << m)
    subnormal = _rne_shift(sig, (src_m - m) + np.maximum(emin_src - e.astype(np.int64), 0))
    code = np.where(e.astype(np.int64) >= emin_src, normal, subnormal)
    code = np.where(code > fmt.max_code, fmt.overflow_code, code)
    sign = np.where(negative, np.uint64(fmt.sign_bit), np.uint64(0))
    if fmt.nan == "fnuz":
        sign = np.where(code == 0, np.uint64(0), sign)  # no negative zero
    code = code | sign
    if fmt.bits == 16 and not wide:
        nan_bits = (u >> np.uint64(16)) | np.uint64(0x40)  # quieted, sign and payload kept
    elif fmt.nan is None:
        nan_bits = np.where(negative, np.uint64(0), np.uint64(fmt.sign_bit))
    else:
        nan_bits = np.uint64(fmt.nan_code) | (sign if fmt.nan in ("ieee", "fn") else np.uint64(0))
    return np.where(nan, nan_bits, code).astype(fmt.storage)


@lru_cache(maxsize=None)
def _decode_table(name: str) -> np.ndarray:
    """float32 values of every bit pattern of an 8- or 4-bit format."""
    fmt = FLOAT_FORMATS[name]
    out = np.empty(1 << fmt.bits, dtype=np.float32)
    top_exp = (1 << fmt.exponent) - 1
    for code in range(1 << fmt.bits):
        negative = fmt.signed and bool(code & fmt.sign_bit)
        mag = code & (fmt.sign_bit - 1) if fmt.signed else code
        e, f = mag >> fmt.mantissa, mag & ((1 << fmt.mantissa) - 1)
        if fmt.nan_code is not None and (code == fmt.nan_code or mag == fmt.nan_code
                                         or (fmt.nan == "ieee" and e == top_exp and f)):
            value = np.nan
            negative = negative and fmt.nan in ("ieee", "fn")  # the fnuz NaN has no sign
        elif fmt.infinities and e == top_exp:
            value = np.inf
        elif e == 0 and fmt.mantissa:
            value = f * 2.0 ** (1 - fmt.bias - fmt.mantissa)
        else:
            value = (1 + f / 2 ** fmt.mantissa) * 2.0 ** (e - fmt.bias)
        out[code] = -value if negative else value
    out.setflags(write=False)
    return out


def decode(bits, dtype) -> np.ndarray:
    """The float32 values of storage float ``dtype``'s ``bits`` (exact: every such
    value is a float32)."""
    fmt = FLOAT_FORMATS[canonical(dtype)]
    bits = np.asarray(bits)
    if fmt.bits == 16:
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return _decode_table(fmt.name)[bits.astype(np.intp) & ((1 << fmt.bits) - 1)]


# -------------------------------------------------------------------------------
# arrays of the types numpy lacks
# -------------------------------------------------------------------------------
def _int_values(bits, dtype: str) -> np.ndarray:
    """The values of a narrow integer's stored ``bits`` (int8 / uint8)."""
    width, signed = NARROW_INTS[dtype]
    low = np.asarray(bits).astype(np.int16) & ((1 << width) - 1)
    if not signed:
        return low.astype(np.uint8)
    half = 1 << (width - 1)
    return ((low ^ half) - half).astype(np.int8)


def as_storage(arr, dtype):
    """``arr``'s elements in tecc's storage of ``dtype`` when ``arr`` holds elements of
    that type -- ml_dtypes' arrays of it (onnx's, jax's), the void of its width that
    an ``.npy``/``.npz`` of those reads back as without ml_dtypes, or the storage
    itself: the bits, in ``uint8``/``uint16``) -- else None (then the values are
    numbers: :func:`to_storage`; and for a type numpy has there is nothing to read)."""
    if not isinstance(arr, np.ndarray) or not is_narrow(dtype):
        return None
    name = canonical(dtype)
    want = storage(name)
    if arr.dtype.name == name or arr.dtype == want or arr.dtype.str in (f"|V{want.itemsize}", f"<V{want.itemsize}"):
        bits = arr.view(want)
        width = FLOAT_FORMATS[name].bits if name in FLOAT_FORMATS else NARROW_INTS[name][0]
        if width < 8 and bits.size and int(bits.max()) >> width:
            raise TeccTypeError(f"{name} bits are the low {width} of a byte; these bytes set higher ones "
                                f"(up to {int(bits.max()):#x}): pass ml_dtypes' {name} array, or the values as "
                                f"int8/float32 numbers")
        return bits
    return None


def to_storage(values, dtype) -> np.ndarray:
    """Numbers ``values`` as the storage of ``dtype``: a storage float's values
    rounded to its bits (:func:`encode`); a narrow integer's values, which must lie
    in its range, as their bits; any other dtype by numpy's conversion."""
    name = canonical(dtype)
    if name in FLOAT_FORMATS:
        return encode(np.asarray(values, dtype=np.float32), name)
    if name in NARROW_INTS:
        arr = np.asarray(values)
        lo, hi = int_range(name)
        if arr.dtype.kind == "f" and arr.size:  # whole numbers held as floats (np.zeros) are taken
            with np.errstate(invalid="ignore"):
                whole = bool(np.all(np.isfinite(arr) & (np.rint(arr) == arr)))
            if not whole:
                raise TeccTypeError(f"{name} values must be integers, got {arr.dtype} values with fractions (or "
                                    f"NaN, inf): round them first (np.rint(x).astype('int8'))")
            arr = arr.astype(np.int64)
        elif arr.dtype.kind not in "biu" and arr.size:
            raise TeccTypeError(f"{name} values must be integers, got an array of {arr.dtype}")
        if arr.size and (arr.min() < lo or arr.max() > hi):
            raise TeccTypeError(f"{name} holds integers in [{lo}, {hi}]; the values given span "
                                f"[{arr.min()}, {arr.max()}]: clip them first (np.clip(x, {lo}, {hi}))")
        return (arr.astype(np.int64) & ((1 << NARROW_INTS[name][0]) - 1)).astype(np.uint8)
    return np.asarray(values, dtype=storage(name))


def stored(arr, dtype) -> np.ndarray:
    """``arr`` as the storage of a narrow ``dtype``: read as its elements where it holds
    them (:func:`as_storage`), else converted as numbers (:func:`to_storage`)."""
    bits = as_storage(arr, dtype)
    return bits if bits is not None else to_storage(arr, dtype)


def as_ml_dtypes(arr, dtype):
    """Storage ``arr`` of a type numpy lacks as ml_dtypes' typed array of it (a view),
    for code that has ml_dtypes; any other ``arr`` as it is."""
    name = canonical(dtype)
    if name not in FLOAT_FORMATS and name not in NARROW_INTS:
        return arr
    try:
        import ml_dtypes  # noqa: PLC0415 -- optional: onnx's dependency, not the runtime's
    except ImportError:
        raise TeccTypeError(f"typed {name} arrays need ml_dtypes (pip install ml_dtypes); without it, read the "
                            f"storage: {storage(name)}") from None
    return np.asarray(arr).view(np.dtype(getattr(ml_dtypes, name)))


def numbers(arr, dtype) -> np.ndarray:
    """The values of storage ``arr`` of ``dtype`` as numpy numbers: a storage float's
    as float32 (:func:`decode`), a narrow integer's as int8/uint8; any other as it is."""
    name = canonical(dtype)
    if name in FLOAT_FORMATS:
        return decode(arr, name)
    return _int_values(arr, name) if name in NARROW_INTS else np.asarray(arr)


def ctype(dtype: str):
    """The ctypes type of a scalar argument of ``dtype``."""
    try:
        return _CTYPES[canonical(dtype)]
    except KeyError:
        raise TeccTypeError(f"a scalar argument of dtype {dtype} cannot be passed to C") from None


def int_range(dtype: str) -> tuple:
    """``(min, max)`` of an integer dtype."""
    name = canonical(dtype)
    if name in NARROW_INTS:
        bits, signed = NARROW_INTS[name]
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    info = np.iinfo(storage(name))
    return int(info.min), int(info.max)
