"""The types numpy lacks (runtime/dtypes.py): the storage floats' encode/decode
against ml_dtypes (onnx's dependency, the reference other libraries round with),
bit for bit, over every bit pattern and around every rounding boundary; the
narrow integers' storage; what nd.array and the graph executor take for them."""
import numpy as np
import pytest

import tecc
from tecc.errors import TeccError, TeccTypeError
from tecc.runtime import dtypes as D
from tecc.tir import dtype as tir_dtype
from narrowhelpers import NARROW_FLOATS, boundary_samples, same_bits_or_both_nan

ml_dtypes = pytest.importorskip("ml_dtypes")

FORMATS = sorted(D.FLOAT_FORMATS)


def ml_encode(x, dtype):
    with np.errstate(all="ignore"):
        out = x.astype(getattr(ml_dtypes, dtype)).view(D.storage(dtype))
    return out & 0xF if D.FLOAT_FORMATS[dtype].bits == 4 else out


@pytest.mark.parametrize("dtype", FORMATS)
@pytest.mark.parametrize("width", [32, 64])
def test_encode_rounds_as_ml_dtypes(dtype, width):
    fmt = D.FLOAT_FORMATS[dtype]
    x = boundary_samples(fmt, width)
    ours = D.encode(x, dtype)
    assert ours.dtype == D.storage(dtype)
    ok = same_bits_or_both_nan(ours, ml_encode(x, dtype), dtype)
    assert ok.all(), [(float(v), hex(int(o)), hex(int(r))) for v, o, r in
                      zip(x[~ok][:5], ours[~ok][:5], ml_encode(x, dtype)[~ok][:5])]


@pytest.mark.parametrize("dtype", FORMATS)
def test_decode_of_every_bit_pattern_is_ml_dtypes_value(dtype):
    fmt = D.FLOAT_FORMATS[dtype]
    codes = np.arange(1 << min(fmt.bits, 16)).astype(fmt.storage)
    ours = D.decode(codes, dtype)
    ref = codes.view(getattr(ml_dtypes, dtype)).astype(np.float32)
    assert ours.dtype == np.float32
    ok = (ours == ref) & (np.signbit(ours) == np.signbit(ref)) | (np.isnan(ours) & np.isnan(ref))
    assert ok.all(), codes[~ok][:10]


@pytest.mark.parametrize("dtype", FORMATS)
def test_format_facts_agree_with_ml_dtypes(dtype):
    fmt = D.FLOAT_FORMATS[dtype]
    info = ml_dtypes.finfo(getattr(ml_dtypes, dtype))
    assert fmt.max == float(info.max)
    assert 2.0 ** fmt.min_subnormal_exponent == float(info.smallest_subnormal)
    assert tir_dtype.max_value(dtype) == (np.inf if fmt.infinities else fmt.max)


def test_overflow_and_nan_rules_of_each_format():
    """The table of ONNX's Cast (saturate=0) for the 8-bit floats, which astype follows."""
    x = np.array([1e6, -1e6, np.inf, -np.inf, np.nan, -0.0], dtype=np.float32)
    got = {name: [float(v) for v in D.decode(D.encode(x, name), name)] for name in NARROW_FLOATS}
    nan = float("nan")
    expect = {
        "float8_e4m3fn": [nan, nan, nan, nan, nan, -0.0],
        "float8_e4m3fnuz": [nan, nan, nan, nan, nan, 0.0],
        "float8_e5m2": [np.inf, -np.inf, np.inf, -np.inf, nan, -0.0],
        "float8_e5m2fnuz": [nan, nan, nan, nan, nan, 0.0],
        "float4_e2m1fn": [6.0, -6.0, 6.0, -6.0, -0.0, -0.0],    # no inf, no NaN: saturates
        "float8_e8m0fnu": [2.0 ** 20, nan, nan, nan, nan, nan],  # no zero, no negative values
    }
    for name, values in expect.items():
        np.testing.assert_array_equal(np.array(got[name]), np.array(values), err_msg=name)
    assert np.signbit(got["float8_e4m3fn"][-1]) and not np.signbit(got["float8_e4m3fnuz"][-1])


def test_storage_of_each_type():
    assert D.storage("float8_e4m3fn") == np.uint8 and D.storage("bfloat16") == np.uint16
    assert D.storage("int4") == np.uint8 and D.storage("uint2") == np.uint8  # bits, as ml_dtypes holds them
    assert D.int_range("int4") == (-8, 7) and D.int_range("uint2") == (0, 3)
    assert D.canonical("e4m3_float8") == "float8_e4m3fn"  # TVM's older name
    assert tir_dtype.parse("e5m2_float8") == tir_dtype.parse("float8_e5m2")


def test_ml_dtypes_arrays_to_storage_and_back():
    x = np.array([-8, -1, 0, 3, 7])
    typed = x.astype(ml_dtypes.int4)
    stored = D.as_storage(typed, "int4")
    assert stored.dtype == np.uint8 and stored.tolist() == [8, 15, 0, 3, 7]  # -1 is 0b1111
    assert np.shares_memory(stored, typed)  # the same layout: a view
    assert D.numbers(stored, "int4").tolist() == x.tolist() and D.numbers(stored, "int4").dtype == np.int8
    assert D.as_ml_dtypes(stored, "int4").astype(int).tolist() == x.tolist()
    with pytest.raises(TeccTypeError, match="int4 bits are the low 4 of a byte; these bytes set higher ones"):
        D.as_storage(np.uint8([0x1F]), "int4")
    f = np.array([0.5, -3.0, 448.0], dtype=np.float32)
    bits = D.as_storage(f.astype(ml_dtypes.float8_e4m3fn), "float8_e4m3fn")
    assert bits.dtype == np.uint8 and D.decode(bits, "float8_e4m3fn").tolist() == f.tolist()
    assert D.as_ml_dtypes(bits, "float8_e4m3fn").astype(np.float32).tolist() == f.tolist()
    # an .npy of ml_dtypes' arrays read back without it: a one-byte void
    void = f.astype(ml_dtypes.float8_e4m3fn).view("V1")
    assert D.as_storage(void, "float8_e4m3fn").tolist() == bits.tolist()
    assert D.as_storage(np.float32([1.0]), "float8_e4m3fn") is None  # numbers: to_storage rounds them


def test_to_storage_checks_narrow_integer_ranges():
    assert D.to_storage([-8, 7, -1], "int4").tolist() == [8, 7, 15]
    with pytest.raises(TeccTypeError, match=r"int4 holds integers in \[-8, 7\]; the values given span \[-9, 7\]"):
        D.to_storage(np.array([-9, 7]), "int4")
    with pytest.raises(TeccTypeError, match="uint2 values must be integers, got float64 values with fractions"):
        D.to_storage(np.array([0.5]), "uint2")
    assert D.to_storage(np.zeros(2), "uint2").tolist() == [0, 0]  # whole numbers as floats
    assert D.to_storage([1.0, 500.0], "float8_e4m3fn").tolist() == [0x38, 0x7F]  # 500 overflows: NaN


def test_nd_array_of_narrow_types():
    x = np.array([0.3, -2.0, 1e4], dtype=np.float32)
    a = tecc.nd.array(x, dtype="float8_e5m2")  # numbers: rounded
    assert a.dtype == "float8_e5m2" and a.bits().dtype == np.uint8
    # numpy(): ml_dtypes' array, as TVM's NDArray gives its float8 arrays
    assert a.numpy().dtype == ml_dtypes.float8_e5m2
    assert a.numpy().astype(np.float32).tolist() == x.astype(ml_dtypes.float8_e5m2).astype(np.float32).tolist()
    b = tecc.nd.array(x.astype(ml_dtypes.float8_e4m3fnuz))  # ml_dtypes' array: its dtype and bits
    assert b.dtype == "float8_e4m3fnuz" and b.bits().tolist() == D.encode(x, "float8_e4m3fnuz").tolist()
    c = tecc.nd.array(np.array([1, -3], dtype=ml_dtypes.int4))
    assert c.dtype == "int4" and c.bits().tolist() == [1, 13] and c.numpy().astype(int).tolist() == [1, -3]
    assert tecc.nd.array(np.int8([1, -3]), dtype="int4").bits().tolist() == [1, 13]  # numbers: their bits
    assert tecc.nd.array(np.uint8([0x38]), dtype="float8_e4m3fn").bits().tolist() == [0x38]  # bits as bits
    assert tecc.nd.array(np.float32([1.5]), dtype="bfloat16").numpy().tolist() == [0x3FC0]  # bfloat16: bits (TVM's)
    # copies between arrays move the bits
    d = tecc.nd.empty((3,), "float8_e4m3fnuz")
    d.copyfrom(b)
    assert d.bits().tolist() == b.bits().tolist()
    d.copyfrom(x)  # numbers: rounded
    assert d.bits().tolist() == b.bits().tolist()
    with pytest.raises(TeccError, match="a float8_e4m3fn array converts to float32 with numpy first"):
        tecc.nd.array(x.astype(ml_dtypes.float8_e4m3fn), dtype="float32")
    with pytest.raises(TeccError, match="DLPack would hand them over as uint8"):
        b.__dlpack__()
    with pytest.raises(TeccTypeError, match=r"int4 holds integers in \[-8, 7\]"):
        tecc.nd.array(np.int8([9]), dtype="int4")
