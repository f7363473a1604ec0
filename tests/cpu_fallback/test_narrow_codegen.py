"""Kernels over the narrow types (storage floats, int4...) on both backends: the
C printer's conversions (cpu_fallback/narrow_types.py) against runtime.dtypes'
numpy rounding, bit for bit, on llvm and on the CUDA emulator; arithmetic rounded
or wrapped after every operation; copies vectorized as bits; the CUDA source
compiled for sm_80 and sm_90, where e4m3 and e5m2 convert with sm_89's
instructions (pinned in the SASS); the same kernels on a GPU (gpu-marked)."""
import re
import warnings

import numpy as np
import pytest

import tecc
from tecc import te
from tecc.cuda_codegen import compile_cuda
from tecc.errors import CompileError
from tecc.runtime import dtypes as D
from tecc.runtime import sass

from narrowhelpers import NARROW_FLOATS, boundary_samples, same_bits_or_both_nan

ml_dtypes = pytest.importorskip("ml_dtypes")
warnings.filterwarnings("ignore", message=".*CUDA semantics.*")

TARGETS = ["llvm", "cuda"]
NARROW_INTS = sorted(D.NARROW_INTS)
needs_nvdisasm = pytest.mark.skipif(sass.find_nvdisasm() is None, reason="nvdisasm not installed")


def _dev(target):
    return tecc.cpu(0) if target == "llvm" else tecc.cuda(0)


def _schedule(outs, target):
    s = te.create_schedule([o.op for o in outs])
    if target == "cuda":
        for t in outs:
            fused = s[t].fuse(*t.op.axis)
            bx, tx = s[t].split(fused, factor=128)
            s[t].bind(bx, te.thread_axis("blockIdx.x"))
            s[t].bind(tx, te.thread_axis("threadIdx.x"))
    return s


def _run(outs, ins, arrays, target):
    s = _schedule(outs, target)
    mod = tecc.build(s, [*ins, *outs], target=target)
    dev = _dev(target)
    args = [tecc.nd.array(a, dev, dtype=t.dtype) for a, t in zip(arrays, ins)]
    args += [tecc.nd.empty(o.shape, o.dtype, dev) for o in outs]
    mod(*args)
    return mod, [a.bits() for a in args[len(arrays):]]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", NARROW_FLOATS + ["bfloat16"])
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_casts_round_as_numpy_reference(target, dtype, src):
    fmt = D.FLOAT_FORMATS[dtype]
    x = boundary_samples(fmt, 64 if src == "float64" else 32, random=20_000, limit=60_000)
    n = len(x) // 128 * 128
    x = x[:n]
    A = te.placeholder((n,), name="A", dtype=src)
    B = te.compute((n,), lambda i: A[i].astype(dtype), name="B")
    C = te.compute((n,), lambda i: B[i].astype("float32"), name="C")
    _, (b, c) = _run([B, C], [A], [x], target)
    want = D.encode(x, dtype)
    ok = same_bits_or_both_nan(b, want, dtype)
    assert ok.all(), [(float(v), hex(int(g)), hex(int(w))) for v, g, w in zip(x[~ok][:4], b[~ok][:4], want[~ok][:4])]
    np.testing.assert_array_equal(c, D.decode(want, dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn", "float8_e8m0fnu"])
def test_arithmetic_in_a_storage_float_rounds_every_result(target, dtype):
    rng = np.random.default_rng(3)
    n = 512
    x = D.encode(rng.uniform(0.1, 4.0, n), dtype)
    y = D.encode(rng.uniform(0.1, 4.0, n), dtype)
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute((n,), lambda i: (A[i] * B[i] + A[i]) * te.const(0.5, dtype), name="C")
    E = te.compute((n,), lambda i: te.exp(A[i]), name="E")
    _, (c, e) = _run([C, E], [A, B], [x, y], target)
    a, b = D.decode(x, dtype), D.decode(y, dtype)

    def r(v):
        return D.decode(D.encode(v.astype(np.float32), dtype), dtype)

    half = r(np.float32([0.5]))[0]
    np.testing.assert_array_equal(D.decode(c, dtype), r(r(r(a * b) + a) * half))
    np.testing.assert_allclose(D.decode(e, dtype), r(np.exp(a)), rtol=0, atol=0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", NARROW_INTS)
def test_narrow_integers_wrap_and_convert_as_ml_dtypes(target, dtype):
    lo, hi = D.int_range(dtype)
    vals = np.arange(lo, hi + 1)
    n = 128
    x = D.to_storage(np.resize(vals, n), dtype)
    y = D.to_storage(np.resize(vals[::-1], n), dtype)
    f = np.resize(np.concatenate([np.linspace(-12, 12, 97), [np.nan, np.inf, -np.inf]]), n).astype(np.float32)
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    F = te.placeholder((n,), name="F", dtype="float32")
    S = te.compute((n,), lambda i: A[i] * B[i] + A[i], name="S")               # wraps
    W = te.compute((n,), lambda i: A[i].astype("int32") * 3, name="W")          # widens exactly
    K = te.compute((n,), lambda i: F[i].astype(dtype), name="K")               # truncates, 0 outside
    N = te.compute((n,), lambda i: (A[i].astype("int32") * 5).astype(dtype), name="N")  # wraps
    _, (s, w, k, nn) = _run([S, W, K, N], [A, B, F], [x, y, f], target)
    assert s.dtype == np.uint8 and (s >> D.NARROW_INTS[dtype][0] == 0).all()  # its bits, the high ones clear
    s, k, nn = (D.numbers(v, dtype).astype(np.int64) for v in (s, k, nn))
    t = getattr(ml_dtypes, dtype)
    wide, other = (D.numbers(v, dtype).astype(np.int64) for v in (x, y))
    np.testing.assert_array_equal(s, (wide * other + wide).astype(t).astype(np.int64))
    np.testing.assert_array_equal(w, wide * 3)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(k, f.astype(t).astype(np.int64))
    np.testing.assert_array_equal(nn, (wide * 5).astype(t).astype(np.int64))


@pytest.mark.parametrize("target", TARGETS)
def test_reinterpret_between_a_float8_and_its_bits(target):
    n = 256
    bits = np.arange(n, dtype=np.uint8)
    A = te.placeholder((n,), name="A", dtype="uint8")
    F = te.compute((n,), lambda i: tecc.tir.reinterpret("float8_e5m2", A[i]), name="F")
    U = te.compute((n,), lambda i: tecc.tir.reinterpret("uint8", F[i]), name="U")
    _, (f, u) = _run([F, U], [A], [bits], target)
    assert same_bits_or_both_nan(f, bits, "float8_e5m2").all()
    assert same_bits_or_both_nan(u, bits, "float8_e5m2").all()


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "int4", "float4_e2m1fn"])
def test_a_vectorized_copy_moves_bits_and_arithmetic_stays_scalar(dtype):
    n = 64
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    _, vi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(vi)
    mod = tecc.build(s, [A, B], target="llvm")
    assert re.search(r"tecc_store_u?int8x16\(.*tecc_load_u?int8x16\(", mod.get_source())  # 16 bytes at once
    x = D.to_storage(np.resize(np.arange(-4, 4), n) if dtype == "int4" else np.linspace(-3, 3, n), dtype)
    out = tecc.nd.empty((n,), dtype)
    mod(tecc.nd.array(x, dtype=dtype), out)
    np.testing.assert_array_equal(out.bits(), x)
    # vector arithmetic of the type is left to a scalar loop
    C = te.compute((n,), lambda i: A[i] + A[i], name="C")
    s = te.create_schedule(C.op)
    _, vi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(vi)
    src = tecc.build(s, [A, C], target="llvm").get_source()
    assert "x16" not in src


def test_a_vector_of_a_narrow_type_names_the_type_and_the_fix():
    from tecc.cpu_fallback.codegen_c import CodeGenC

    with pytest.raises(CompileError, match=r"the C backend has no float8_e4m3fn vectors \(it computes "
                                           r"float8_e4m3fn one lane at a time\); keep float8_e4m3fn loops scalar"):
        CodeGenC().vector_type("float8_e4m3fnx4")


def _cast_kernel_source(dtype):
    n = 1024
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i].astype(dtype), name="B")
    C = te.compute((n,), lambda i: B[i].astype("float32") * 2.0, name="C")
    mod = tecc.build(_schedule([B, C], "cuda"), [A, B, C], target="cuda -arch=sm_90")
    return mod.imported_modules[0]


@pytest.mark.parametrize("dtype", NARROW_FLOATS + NARROW_INTS)
def test_cuda_source_compiles_for_sm80_and_sm90(dtype):
    src = _cast_kernel_source(dtype).get_source()
    assert "uint8_t* __restrict__ B" in src or "int8_t* __restrict__ B" in src
    for arch in ("sm_80", "sm_90"):
        assert compile_cuda(src, arch)[:4] == b"\x7fELF"


@needs_nvdisasm
@pytest.mark.parametrize("dtype, kind", [("float8_e4m3fn", "E4M3"), ("float8_e5m2", "E5M2")])
def test_sm90_converts_e4m3_and_e5m2_with_one_instruction(dtype, kind):
    ops = set(re.findall(r"\bF2FP\.[A-Z0-9_.]+", _cast_kernel_source(dtype).get_source("sass")))
    assert f"F2FP.SATFINITE.{kind}.F32.PACK_AB_MERGE_C" in ops  # float -> fp8 (finite values)
    assert f"F2FP.F16.{kind}.UNPACK_B" in ops                    # fp8 -> half, exact


@needs_nvdisasm
def test_formats_without_an_instruction_convert_with_integer_code():
    text = _cast_kernel_source("float8_e4m3fnuz").get_source("sass")
    assert not re.search(r"\bF2FP\.[A-Z0-9_.]*E4M3", text)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_gpu_conversions_round_as_numpy_reference(dtype):
    """What the emulator cannot run: sm_89's conversion instructions of e4m3/e5m2 (and
    the integer code of the other formats compiled by NVRTC), against numpy, bit for bit."""
    test_casts_round_as_numpy_reference("cuda", dtype, "float32")
    test_casts_round_as_numpy_reference("cuda", dtype, "float64")
    test_arithmetic_in_a_storage_float_rounds_every_result("cuda", dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "int4", "float4_e2m1fn"])
def test_checking_mode_runs_kernels_of_narrow_types(target, dtype):
    """``mod.check`` (the interpreter on a CPU module, the instrumented kernels on a
    CUDA one) takes narrow arrays and finds nothing wrong in a correct kernel, and an
    out-of-bounds read of one (a window one element too far) is named."""
    n = 128
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: (A[i] + A[i]).astype("float32"), name="B")
    C = te.compute((n,), lambda i: B[i].astype(dtype), name="C")
    s = _schedule([B, C], target)
    mod = tecc.build(s, [A, B, C], target=target)
    dev = _dev(target)
    a = tecc.nd.array(D.to_storage(np.resize(np.arange(-3, 3), n), dtype), dev, dtype=dtype)
    assert mod.check(a, tecc.nd.empty((n,), "float32", dev), tecc.nd.empty((n,), dtype, dev)) == []
    bad = tecc.nd.array(D.to_storage(np.zeros(n - 1), dtype), dev, dtype=dtype)
    Ab = te.placeholder((te.var("m"),), name="A", dtype=dtype)
    Bb = te.compute((n,), lambda i: Ab[i].astype("float32"), name="B")
    mod = tecc.build(_schedule([Bb], target), [Ab, Bb], target=target)
    findings = mod.check(bad, tecc.nd.empty((n,), "float32", dev))
    assert findings and findings[0].kind == "out_of_bounds" and findings[0].buffer == "A"
