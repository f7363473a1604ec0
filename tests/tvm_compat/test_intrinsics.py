"""TVM's intrinsic spellings: ``tir.call_intrin(dtype, "tir.<op>", ...)``,
``tir.reinterpret`` (a bit cast in C, in CUDA and in the GPU emulator),
``tir.call_extern`` / ``tir.call_pure_extern``."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import CompileError, TeccTypeError
from tecc.tir import stmt as S
from tecc.tir.analysis import run_prim_func
from irhelpers import cuda_module, kernel, loop, make_func, quiet_call, single_launch
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)

N = 64


def _elementwise(name, in_dtype, out_dtype, fn, n=N):
    """``B[i] = fn(A[i])`` over ``n`` elements, as a PrimFunc."""
    A = tir.decl_buffer((n,), in_dtype, "A")
    B = tir.decl_buffer((n,), out_dtype, "B")
    i = tir.Var("i", "int32")
    return make_func(name, [A, B], loop(i, n, S.BufferStore(B, fn(A[i]), (i,))))


def _cuda_elementwise(name, in_dtype, out_dtype, fn, n=N):
    """The same as a CUDA module: one block of ``n`` threads."""
    A = tir.decl_buffer((n,), in_dtype, "A")
    B = tir.decl_buffer((n,), out_dtype, "B")
    tx = tir.Var("threadIdx.x", "int32")
    k = kernel(name, [A, B], S.BufferStore(B, fn(A[tx]), (tx,)), launch=[(tx, n)])
    return cuda_module(*single_launch(name, k, [A, B]))


def _halves():
    """Inputs with exact halves: rounding ties must go to even (np.round)."""
    return np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51] * (N // 8), "float32")


# ---------------------------------------------------------------------------------------
# call_intrin
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op, ref", [
    ("tir.ceil", np.ceil), ("tir.floor", np.floor), ("tir.round", np.round), ("tir.trunc", np.trunc),
    ("tir.nearbyint", np.rint), ("tir.exp", np.exp), ("tir.sqrt", np.sqrt), ("tir.fabs", np.abs),
])
@pytest.mark.parametrize("target", ["llvm", "c"])
def test_call_intrin_math_matches_numpy(op, ref, target):
    f = _elementwise("intrin", "float32", "float32", lambda x: tir.call_intrin("float32", op, x))
    mod = tecc.build(f, target=target)
    a = _halves() if op != "tir.sqrt" else np.abs(_halves())
    b = np.zeros(N, "float32")
    mod(a, b)
    np.testing.assert_allclose(b, ref(a), rtol=1e-6)


def test_round_is_half_to_even_on_the_gpu_emulator_too():
    mod = _cuda_elementwise("round_k", "float32", "float32", lambda x: tir.call_intrin("float32", "tir.round", x))
    a = _halves()
    b = np.zeros(N, "float32")
    quiet_call(mod, a, b)
    np.testing.assert_array_equal(b, np.round(a))
    assert "nearbyintf" in mod.imported_modules[0].get_source()


def test_call_intrin_maps_onto_tecc_intrinsics():
    x = tir.Var("x", "float32")
    i = tir.Var("i", "int32")
    assert tir.structural_equal(tir.call_intrin("float32", "tir.exp", x), tir.exp(x))
    assert tir.structural_equal(tir.call_intrin("float32", "pow", x, x), tir.power(x, x))
    assert tir.structural_equal(tir.call_intrin("int32", "tir.bitwise_and", i, i), i & i)
    assert tir.call_intrin("bool", "tir.isnan", x).dtype == "bool"
    assert tir.call_intrin("float64", "tir.exp", i).dtype == "float64"  # an int argument takes the dtype
    assert tir.call_intrin("int32", "tir.tvm_call_packed", "compat.f", i).op == tir.keys.CALL_PACKED


def test_call_intrin_errors_name_the_op():
    x = tir.Var("x", "float32")
    with pytest.raises(TeccTypeError, match="unknown op 'tir.no_such_op'.*tir.ceil"):
        tir.call_intrin("float32", "tir.no_such_op", x)
    with pytest.raises(TeccTypeError, match="'tir.exp'.*gives float32.*dtype='float32'"):
        tir.call_intrin("float64", "tir.exp", x)
    with pytest.raises(TeccTypeError, match="'tir.floor'.*floor takes one argument, got 2"):
        tir.call_intrin("float32", "tir.floor", x, x)
    with pytest.raises(TeccTypeError, match="'tir.reinterpret'.*wrong number of arguments"):
        tir.call_intrin("float32", "tir.reinterpret", x, x)
    with pytest.raises(TeccTypeError, match="op name must be a str"):
        tir.call_intrin("float32", 3, x)


# ---------------------------------------------------------------------------------------
# reinterpret
# ---------------------------------------------------------------------------------------
def test_tvm_reinterpret_test_through_te_export_and_load(tmp_path):
    # TVM's test_reinterpret of test_target_codegen_c_host.py
    n = 1024
    A = te.placeholder((n,), name="A", dtype="int32")
    B = te.compute(A.shape, lambda *i: tir.call_intrin("float32", "tir.reinterpret", 2 + A(*i)), name="B")
    s = te.create_schedule(B.op)
    mod = tecc.build(s, [A, B], "c", name="test_reinterpret")
    mod.export_library(str(tmp_path / "r.so"))
    f = tecc.runtime.load_module(str(tmp_path / "r.so"))["test_reinterpret"]
    a = tecc.nd.array(np.random.default_rng(0).integers(-(2**30), 2**30, size=n).astype("int32"))
    b = tecc.nd.array(np.zeros(n, "float32"))
    f(a, b)
    np.testing.assert_array_equal(b.numpy().view("int32"), a.numpy() + 2)


PAIRS = [("int32", "float32"), ("float32", "uint32"), ("float64", "int64"), ("uint64", "float64"),
         ("int16", "float16"), ("float16", "uint16"), ("uint16", "bfloat16"), ("bfloat16", "int16"),
         ("int8", "uint8")]


def _bits(dtype, n=N):
    """``n`` bit patterns of ``dtype`` that are ordinary numbers (no NaN or inf, whose
    payload a float register may change)."""
    rng = np.random.default_rng(7)
    if dtype == "bfloat16":
        return (rng.standard_normal(n).astype("float32").view("uint32") >> 16).astype("uint16")
    if dtype.startswith("float"):
        return (rng.standard_normal(n) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _array(bits, dtype, dev):
    return tecc.nd.array(bits, dev, dtype=dtype) if dtype == "bfloat16" else tecc.nd.array(bits, dev)


@pytest.mark.parametrize("src, dst", PAIRS)
@pytest.mark.parametrize("target", ["c", "cuda"])
def test_reinterpret_keeps_the_bits(src, dst, target):
    fn = lambda x: tir.reinterpret(dst, x)  # noqa: E731
    if target == "cuda":
        mod, dev = _cuda_elementwise("bitcast", src, dst, fn), tecc.cuda(0)
    else:
        mod, dev = tecc.build(_elementwise("bitcast", src, dst, fn), target="c"), tecc.cpu(0)
    bits = _bits(src)
    a = _array(bits, src, dev)
    b = tecc.nd.empty((N,), dst, dev)
    quiet_call(mod, a, b)
    assert b.numpy().tobytes() == bits.tobytes()


def test_reinterpret_of_vectors_goes_lane_by_lane():
    A = tir.decl_buffer((8,), "int32", "A")
    B = tir.decl_buffer((8,), "float32", "B")
    lanes = tir.Ramp(tir.const(0), tir.const(1), 8)
    body = S.BufferStore(B, tir.reinterpret("float32x8", A[lanes]), (lanes,))
    mod = tecc.build(make_func("vec_bitcast", [A, B], body), target="c")
    a = np.arange(1, 9, dtype="int32") * 1000003
    b = np.zeros(8, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b.view("int32"), a)
    assert "tecc_reinterpret_int32_float32" in mod.get_source()


def test_reinterpret_in_the_reference_interpreter():
    f = _elementwise("bitcast", "int32", "float32", lambda x: tir.reinterpret("float32", x + 2), n=8)
    a = np.array([-5, 0, 7, 2**30, -2**30, 1065353214, 12, 99], "int32")
    b = np.zeros(8, "float32")
    run_prim_func(f, a, b)
    np.testing.assert_array_equal(b.view("int32"), a + 2)


def test_reinterpret_errors_say_what_fits():
    x = tir.Var("x", "int32")
    assert tir.reinterpret("int32", x) is x
    assert str(tir.reinterpret("float32", x)) == "reinterpret('float32', x)"
    with pytest.raises(TeccTypeError, match="int32 is 1 x 32 bits and float64 1 x 64 bits"):
        tir.reinterpret("float64", x)
    with pytest.raises(TeccTypeError, match="bool values have no bit pattern"):
        tir.reinterpret("int8", tir.Var("b", "bool"))
    with pytest.raises(TeccTypeError, match="float32x4.*4 x 32 bits and int32 1 x 32"):
        tir.reinterpret("int32", tir.Broadcast(tir.Var("y", "float32"), 4))


# ---------------------------------------------------------------------------------------
# call_extern
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [tir.call_extern, tir.call_pure_extern])
def test_call_extern_calls_the_named_c_function(make):
    f = _elementwise("ext", "float32", "float32", lambda x: make("float32", "sqrtf", x))
    mod = tecc.build(f, target="llvm")
    a = np.arange(N, dtype="float32")
    b = np.zeros(N, "float32")
    mod(a, b)
    np.testing.assert_allclose(b, np.sqrt(a), rtol=1e-6)


def test_call_extern_in_a_cuda_kernel():
    mod = _cuda_elementwise("ext_k", "float32", "float32", lambda x: tir.call_pure_extern("float32", "sqrtf", x))
    a = np.arange(N, dtype="float32")
    b = np.zeros(N, "float32")
    quiet_call(mod, a, b)
    np.testing.assert_allclose(b, np.sqrt(a), rtol=1e-6)


def test_call_extern_for_its_effect_and_its_errors():
    i = tir.Var("i", "int32")
    assert tir.call_extern("", "myfunc", i).dtype == "handle"  # TVM's "" (void)
    with pytest.raises(TeccTypeError, match="function's name"):
        tir.call_extern("float32", 3, i)
    A = tir.decl_buffer((4,), "float32", "A")
    with pytest.raises(TeccTypeError, match="the buffer 'A' is not a value.*A.data"):
        tir.call_extern("float32", "f", A)
    bad = _elementwise("bad_name", "float32", "float32", lambda x: tir.call_extern("float32", "not a name", x))
    with pytest.raises(CompileError, match="bad_name: call_extern needs the name of a C function"):
        tecc.build(bad, target="c")


def _mirror_kernel(barrier):
    """Each thread writes T[i] = 2 A[i], then reads its mirror T[63 - i] of the block
    (IR builder code as TVM's kernels write it): a race without the barrier."""
    n = 128
    A = te.placeholder((n,), name="A")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        a, b, t = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0]), ib.buffer_ptr(outs[1])
        tx, bx = te.thread_axis("threadIdx.x"), te.thread_axis("blockIdx.x")
        ib.scope_attr(bx, "thread_extent", n // 64)
        ib.scope_attr(tx, "thread_extent", 64)
        t[bx * 64 + tx] = a[bx * 64 + tx] * 2.0
        if barrier:
            ib.emit(tir.call_intrin("int32", "tir.tvm_storage_sync", "shared"))
        b[bx * 64 + tx] = t[bx * 64 + 63 - tx]
        return ib.get()

    B, T = te.extern([(n,), (n,)], [A], body, name="B", dtype=["float32", "float32"])
    s = te.create_schedule(B.op)
    return tecc.build(s, [A, B, T], target="cuda -arch=sm_80"), n


def test_tvm_storage_sync_is_a_barrier_and_check_finds_the_race_without_it():
    mod, n = _mirror_kernel(barrier=True)
    assert "__syncthreads();" in mod.imported_modules[0].get_source()
    a = np.arange(n, dtype="float32")
    assert mod.check(a, np.zeros(n, "float32"), np.zeros(n, "float32")) == []
    b, t = np.zeros(n, "float32"), np.zeros(n, "float32")
    quiet_call(mod, a, b, t)
    np.testing.assert_allclose(b, (2 * a).reshape(-1, 64)[:, ::-1].reshape(-1))
    racy, _ = _mirror_kernel(barrier=False)
    findings = racy.check(a, np.zeros(n, "float32"), np.zeros(n, "float32"))
    assert findings and {f.kind for f in findings} == {"race"}
    assert "with no barrier in between (missing __syncthreads()?)" in findings[0].message
    with pytest.raises(TeccTypeError, match="tecc has the block-wide barrier"):
        tir.call_intrin("int32", "tir.tvm_storage_sync", "global")
