"""C text of the conversions of the narrow types (:attr:`tecc.tir.dtype.DType.is_narrow`).

Values of a storage float (the 8- and 4-bit floats; bfloat16 has shift-based
helpers of its own in the printers) are computed as ``float`` and stored as their
bits; an integer narrower than a byte is stored as its bits in a ``uint8_t``,
computed as ``int8_t`` / ``uint8_t`` and wrapped to its width.  The helpers here, one set per type, are
written once from the format's facts (:class:`tecc.runtime.dtypes.FloatFormat`)
and printed by the C printer and the CUDA printer alike (the CUDA printer puts a
conversion instruction in front of some of them); integer operations only, so
no compiler flag or rounding mode changes what they compute.  They round as
:func:`tecc.runtime.dtypes.encode` does, bit for bit (tests compare the two over
every bit pattern of the format and around every rounding boundary).

=========================  =====================================================
helper                     what it computes
=========================  =====================================================
``tecc_<F>_to_f32(b)``     the float value of bits ``b`` (exact)
``tecc_f32_to_<F>(f)``     the bits of ``f`` rounded to F (to nearest, ties to even;
                           past the largest value: infinity or NaN, or saturated
                           where F has neither); ``tecc_f64_to_<F>`` from a double,
                           rounded once
``tecc_<F>_round(f)``      ``f`` rounded to F, as a float (an operation's result)
``tecc_wrap_<I>(v)``       ``v`` wrapped to the narrow integer I (two's complement)
``tecc_f32_to_<I>(f)``     ``f`` truncated, 0 where that is outside I (ml_dtypes'
                           conversion; ONNX leaves it undefined)
=========================  =====================================================
"""
from __future__ import annotations

from functools import lru_cache

from ..runtime import dtypes as _rt

#: C types of the integers that hold a float's bits, by width
_UINT = {32: "uint32_t", 64: "uint64_t"}
#: per source float width: (mantissa bits, exponent bias, the bit-cast helper's name)
_SOURCE = {32: (23, 127, "tecc_f32_bits"), 64: (52, 1023, "tecc_f64_bits")}


def bitcast_helpers() -> dict:
    """``tecc_f32_bits`` / ``tecc_bits_f32`` / ``tecc_f64_bits``: a float's bits and back
    (through ``memcpy``, which compilers turn into a register move)."""
    return {
        "tecc_f32_bits": "static inline uint32_t tecc_f32_bits(float f) {\n"
                         "    uint32_t u;\n    memcpy(&u, &f, 4);\n    return u;\n}",
        "tecc_bits_f32": "static inline float tecc_bits_f32(uint32_t u) {\n"
                         "    float f;\n    memcpy(&f, &u, 4);\n    return f;\n}",
        "tecc_f64_bits": "static inline uint64_t tecc_f64_bits(double d) {\n"
                         "    uint64_t u;\n    memcpy(&u, &d, 8);\n    return u;\n}",
    }


def names(dtype: str) -> tuple:
    """``(to_f32, from_f32, round)``: the helper names of storage float ``dtype``."""
    return f"tecc_{dtype}_to_f32", f"tecc_f32_to_{dtype}", f"tecc_{dtype}_round"


def _hex(v: int, width: int = 32) -> str:
    return f"0x{v:x}u" if width == 32 else f"0x{v:x}ull"


def decode_helper(fmt: _rt.FloatFormat) -> str:
    """``float tecc_<F>_to_f32(uint8_t v)``."""
    name = names(fmt.name)[0]
    m, top_exp = fmt.mantissa, (1 << fmt.exponent) - 1
    lines = [f"static inline float {name}(uint8_t v) {{"]
    if fmt.nan == "fnu":  # 2^(v - 127); 0xff is NaN
        lines += [
            "    if (v == 0xffu) {",
            "        return tecc_bits_f32(0x7fc00000u);",
            "    }",
            "    return v ? tecc_bits_f32((uint32_t)v << 23) : tecc_bits_f32(0x00400000u);  // 2^-127: a float subnormal",
            "}"]
        return "\n".join(lines)
    sign_shift = fmt.bits - 1
    lines += [
        f"    uint32_t sign = ((uint32_t)v >> {sign_shift} & 1u) << 31;",
        f"    uint32_t mag = (uint32_t)v & 0x{(1 << sign_shift) - 1:x}u;",
        f"    uint32_t e = mag >> {m};",
        f"    uint32_t man = mag & 0x{(1 << m) - 1:x}u;",
    ]
    if fmt.nan == "fn":
        lines += [f"    if (mag == 0x{fmt.nan_code:x}u) {{", "        return tecc_bits_f32(sign | 0x7fc00000u);", "    }"]
    elif fmt.nan == "fnuz":
        lines += [f"    if ((uint32_t)v == 0x{fmt.nan_code:x}u) {{", "        return tecc_bits_f32(0x7fc00000u);", "    }"]
    elif fmt.nan == "ieee":
        lines += [f"    if (e == {top_exp}u) {{",
                  "        return tecc_bits_f32(sign | (man ? 0x7fc00000u : 0x7f800000u));", "    }"]
    sub_scale = 1 - fmt.bias - m  # a subnormal is man * 2^sub_scale: exactly a float32
    lines += [
        "    if (e == 0u) {",
        f"        return tecc_bits_f32(sign | tecc_f32_bits((float)man * {float(2.0 ** sub_scale)!r}f));",
        "    }",
        f"    return tecc_bits_f32(sign | ((e + {127 - fmt.bias}u) << 23) | (man << {23 - m}));",
        "}",
    ]
    return "\n".join(lines)


def encode_helper(fmt: _rt.FloatFormat, width: int = 32) -> str:
    """``uint8_t tecc_f32_to_<F>(float f)`` (``width`` 64: ``tecc_f64_to_<F>(double)``,
    which bfloat16 uses too):  the integer algorithm of
    :func:`tecc.runtime.dtypes.encode`."""
    src_m, src_bias, bits_of = _SOURCE[width]
    U = _UINT[width]
    ctype = "float" if width == 32 else "double"
    name = f"tecc_f{width}_to_{fmt.name}"
    exp_bits = width - 1 - src_m
    abs_mask = (1 << (width - 1)) - 1
    inf_bits = ((1 << exp_bits) - 1) << src_m
    hidden = 1 << src_m
    rtype = "uint16_t" if fmt.bits == 16 else "uint8_t"
    lines = [f"static inline {rtype} {name}({ctype} f) {{",
             f"    {U} u = {bits_of}(f);",
             f"    {U} a = u & {_hex(abs_mask, width)};"]
    if fmt.nan == "fnu":  # no zero, no negative values: NaN; ties round up (as ml_dtypes)
        rebias = src_bias - fmt.bias
        half_min = (rebias << src_m) | (1 << (src_m - 1)) if width == 64 else 3 << (src_m - 2)  # 1.5 * 2^-127
        lines += [
            f"    if (a == 0 || u >= {_hex(inf_bits, width)}) {{  // zero, negative, infinite, NaN",
            "        return 0xffu;",
            "    }",
            f"    {U} code = ((a + {_hex(1 << (src_m - 1), width)}) >> {src_m}) - {rebias}u;",
            f"    if (a < {_hex((rebias + 1) << src_m, width)}) {{  // below 2^-126: 2^-127, or 2^-126 from 1.5 * 2^-127",
            f"        code = a >= {_hex(half_min, width)} ? 1u : 0u;",
            "    }",
            "    return code > 0xfeu ? 0xffu : (uint8_t)code;",
            "}",
        ]
        return "\n".join(lines)
    m = fmt.mantissa
    shift = src_m - m
    overflow = "infinity" if fmt.infinities else "saturated" if fmt.nan is None else "NaN"
    emin_src = 1 - fmt.bias + src_bias                           # the format's smallest normal exponent
    lines += [
        f"    uint32_t sign = (uint32_t)(u >> {width - 1}) << {fmt.bits - 1};",
        f"    if (a > {_hex(inf_bits, width)}) {{  // NaN",
    ]
    if fmt.nan is None:  # no NaN: the bits ml_dtypes gives
        lines.append(f"        return ({rtype})(sign ^ 0x{fmt.sign_bit:x}u);")
    elif fmt.nan in ("ieee", "fn"):
        lines.append(f"        return ({rtype})(0x{fmt.nan_code:x}u | sign);")
    else:
        lines.append(f"        return 0x{fmt.nan_code:x}u;")
    lines += [
        "    }",
        f"    {U} code;",
        f"    if (a >= {_hex(emin_src << src_m, width)}) {{  // a normal number of the format, or past it",
        f"        code = ((a + {_hex((1 << (shift - 1)) - 1, width)} + ((a >> {shift}) & 1u)) >> {shift})"
        f" - {_hex((src_bias - fmt.bias) << m, width)};",
        "    } else {  // a subnormal (or zero): the significand shifted",
        f"        {U} e = a >> {src_m};",
        f"        {U} sig = (a & {_hex(hidden - 1, width)}) | (e ? {_hex(hidden, width)} : 0u);",
        f"        {U} s = {shift + emin_src}u - (e ? e : 1u);",
        f"        code = s > {src_m + 1}u ? 0u : (sig + (({U})1 << (s - 1u)) - 1u + ((sig >> s) & 1u)) >> s;",
        "    }",
        f"    if (code > 0x{fmt.max_code:x}u) {{",
        f"        code = 0x{fmt.overflow_code:x}u;  // {overflow}",
        "    }",
    ]
    if fmt.nan == "fnuz":
        lines.append("    return (uint8_t)(code ? (code | sign) & 0xffu : 0u);  // no negative zero")
    else:
        lines.append(f"    return ({rtype})(code | sign);")
    lines.append("}")
    return "\n".join(lines)


def round_helper(fmt: _rt.FloatFormat) -> str:
    to_f32, from_f32, name = names(fmt.name)
    return f"static inline float {name}(float f) {{\n    return {to_f32}({from_f32}(f));\n}}"


def int_wrap_helper(dtype: str) -> str:
    """``int8_t tecc_wrap_int4(int64_t v)``: ``v`` modulo 2^bits, as the narrow type."""
    bits, signed = _rt.NARROW_INTS[dtype]
    mask = (1 << bits) - 1
    if signed:
        half = 1 << (bits - 1)
        return (f"static inline int8_t tecc_wrap_{dtype}(int64_t v) {{\n"
                f"    return (int8_t)((int32_t)(((uint32_t)v & 0x{mask:x}u) ^ 0x{half:x}u) - {half});\n}}")
    return f"static inline uint8_t tecc_wrap_{dtype}(int64_t v) {{\n    return (uint8_t)((uint32_t)v & 0x{mask:x}u);\n}}"


def int_from_float_helper(dtype: str, width: int = 32) -> str:
    """``tecc_f32_to_int4(float f)``: ``f`` truncated toward zero, 0 where that lies
    outside the type (or ``f`` is NaN)."""
    lo, hi = _rt.int_range(dtype)
    bits, signed = _rt.NARROW_INTS[dtype]
    ctype, suffix = ("float", "f") if width == 32 else ("double", "")
    rtype = "int8_t" if signed else "uint8_t"
    return (f"static inline {rtype} tecc_f{width}_to_{dtype}({ctype} f) {{\n"
            f"    return (f > {lo - 1}.0{suffix} && f < {hi + 1}.0{suffix}) ? ({rtype})(int32_t)f : 0;\n}}")


@lru_cache(maxsize=None)
def overflow_threshold(fmt: _rt.FloatFormat) -> int:
    """The bits of the smallest positive float32 that rounds past the format's largest
    value (what a conversion instruction that saturates must not see)."""
    import numpy as np  # noqa: PLC0415

    lo, hi = 0, 0x7F800000
    while lo < hi:  # the first bit pattern whose rounding overflows
        mid = (lo + hi) // 2
        code = int(_rt.encode(np.array([mid], dtype=np.uint32).view(np.float32), fmt.name)[0])
        if code > fmt.max_code and code == fmt.overflow_code and fmt.overflow_code != fmt.max_code:
            hi = mid
        else:
            lo = mid + 1
    return lo
