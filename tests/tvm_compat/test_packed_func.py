"""Packed functions as TVM has them: ``tecc.register_func`` / ``get_global_func``
(and ``tvm._ffi``'s spelling), and ``tir.call_packed`` from compiled CPU code --
buffers arrive as NDArrays viewing the kernel's memory, scalars as Python numbers,
errors come back as the callee's own exception, and the library keeps working after
``export_library`` + ``load_module``."""
import ctypes
import shutil
import threading

import numpy as np
import pytest

import tecc
from tecc import runtime, tir
from tecc.errors import CompileError, FunctionNotFoundError, TeccError, TeccTypeError
from tecc.tir import stmt as S
from irhelpers import cuda_module, host, kernel, launch, make_func, single_launch
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


@pytest.fixture
def registry():
    """Registers functions under fresh names and removes them after the test."""
    names = []

    def register(name, f, **kw):
        tecc.register_func(name, f, **kw)
        names.append(name)
        return name

    yield register
    for name in names:
        if tecc.get_global_func(name, allow_missing=True) is not None:
            tecc.runtime.remove_global_func(name)


def _func(name, args, body):
    return make_func(name, args, body)


# ---------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------
def test_register_func_forms_and_lookup():
    @tecc.register_func("compat.add_one")
    def add_one(x):
        return x + 1

    @tecc.register_func
    def compat_named_by_itself(x):
        return x * 2

    tecc.register_func("compat.direct", lambda x: x - 1)
    try:
        assert isinstance(add_one, tecc.PackedFunc) and add_one(1) == 2
        assert tecc.get_global_func("compat.add_one")(41) == 42
        assert tecc.get_global_func("compat_named_by_itself")(4) == 8
        assert tecc.runtime.get_global_func("compat.direct")(4) == 3
        assert {"compat.add_one", "compat.direct"} <= set(tecc.list_global_func_names())
        assert tecc.get_global_func("compat.nothing", allow_missing=True) is None
    finally:
        for name in ("compat.add_one", "compat_named_by_itself", "compat.direct"):
            tecc.runtime.remove_global_func(name)
    assert tecc.get_global_func("compat.add_one", allow_missing=True) is None


def test_ffi_shim_is_the_same_registry():
    import tecc._ffi

    @tecc._ffi.register_func("compat.ffi")
    def f():
        return "ffi"

    try:
        assert tecc.get_global_func("compat.ffi")() == "ffi"
        assert tecc._ffi.registry.get_global_func("compat.ffi") is tecc._ffi.get_global_func("compat.ffi")
    finally:
        tecc._ffi.remove_global_func("compat.ffi")


def test_registering_a_taken_name_needs_override(registry):
    registry("compat.taken", lambda: 1)
    with pytest.raises(TeccError, match="'compat.taken' is already registered.*override=True"):
        tecc.register_func("compat.taken", lambda: 2)
    tecc.register_func("compat.taken", lambda: 3, override=True)
    assert tecc.get_global_func("compat.taken")() == 3


def test_registry_errors_name_the_function():
    with pytest.raises(FunctionNotFoundError, match="no packed function named 'compat.missing'.*register_func"):
        tecc.get_global_func("compat.missing")
    with pytest.raises(FunctionNotFoundError, match="compat.missing"):
        tecc.runtime.remove_global_func("compat.missing")
    with pytest.raises(TeccTypeError, match="must be callable"):
        tecc.register_func("compat.not_callable", 3)
    with pytest.raises(TeccTypeError, match="function name"):
        tecc.register_func(42, lambda: 0)


# ---------------------------------------------------------------------------------------
# calls from compiled code
# ---------------------------------------------------------------------------------------
def test_buffers_arrive_as_views_and_scalars_as_numbers(registry):
    A = tir.decl_buffer((4, 3), "float32", "A")
    B = tir.decl_buffer((4, 3), "float32", "B")
    k = tir.Var("k", "int32")
    calls = []

    def scale(x, y, factor, shift, text):
        calls.append((type(x), x.shape, x.dtype, factor, shift, text))
        tecc.nd.array(x.numpy() * factor + shift).copyto(y)  # TVM's idiom: writes into B

    registry("compat.scale", scale)
    body = S.Evaluate(tir.call_packed("compat.scale", A, B, 2.5, k, "hello"))
    mod = tecc.build(_func("scale", [A, B, k], body), target="llvm")
    a = np.arange(12, dtype="float32").reshape(4, 3)
    b = tecc.nd.array(np.zeros((4, 3), "float32"))
    mod(a, b, 7)
    np.testing.assert_allclose(b.numpy(), a * 2.5 + 7)
    assert calls == [(tecc.nd.NDArray, (4, 3), "float32", 2.5, 7, "hello")]


def test_copyto_into_an_output_and_rank_zero_buffers(registry):
    # TVM's test_tensor_scalar: a 0-d input copied to a 0-d output with x.copyto(y)
    A = tir.decl_buffer((), "float32", "A")
    B = tir.decl_buffer((), "float32", "B")
    registry("compat.copy", lambda x, y: x.copyto(y))
    mod = tecc.build(_func("copy0d", [A, B], S.Evaluate(tir.call_packed("compat.copy", A, B))), target="c")
    a = tecc.nd.array(np.array(3.25, "float32"))
    b = tecc.nd.array(np.array(0.0, "float32"))
    mod(a, b)
    assert b.numpy() == np.float32(3.25)


def test_tensor_and_scalar_buffers_mixed(registry):
    # TVM's test_tensor_scalar_mixed: a (10,) tensor times a 0-d one
    A = tir.decl_buffer((10,), "float32", "A")
    B = tir.decl_buffer((), "float32", "B")
    C = tir.decl_buffer((10,), "float32", "C")

    def my_scale(tensor, scalar, out):
        tecc.nd.array(tensor.numpy() * scalar.numpy()).copyto(out)

    registry("compat.tensor_scalar_scale", my_scale)
    call = tir.call_packed("compat.tensor_scalar_scale", A, B, C)
    mod = tecc.build(_func("mixed", [A, B, C], S.Evaluate(call)), target="llvm")
    rng = np.random.default_rng(0)
    a, b = rng.uniform(size=10).astype("float32"), np.array(rng.uniform(), "float32")
    c = tecc.nd.array(np.zeros(10, "float32"))
    mod(tecc.nd.array(a), tecc.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a * b, rtol=1e-6)


def test_a_buffer_with_an_offset_views_its_own_elements(registry):
    # each iteration of a parallel loop passes one row (elem_offset = i * 4): OpenMP
    # threads call into Python, and every row lands where it belongs
    A = tir.decl_buffer((8, 4), "float32", "A")
    i = tir.Var("i", "int32")
    row = S.Buffer("row", "float32", (tir.const(4),), A.data, elem_offset=i * 4)
    lock = threading.Lock()
    seen = []

    def fill(r, k):
        with lock:
            seen.append(k)
        r.copyfrom(np.full(4, k, "float32"))

    registry("compat.fill_row", fill)
    body = S.For(i, tir.const(0), tir.const(8), S.ForKind.PARALLEL,
                 S.Evaluate(tir.call_packed("compat.fill_row", row, i)))
    mod = tecc.build(_func("fill_rows", [A], body), target="llvm")
    a = np.zeros((8, 4), "float32")
    mod(a)
    np.testing.assert_array_equal(a, np.repeat(np.arange(8, dtype="float32")[:, None], 4, axis=1))
    assert sorted(seen) == list(range(8))


def test_the_calls_value_is_the_functions_result(registry):
    B = tir.decl_buffer((1,), "int32", "B")
    registry("compat.times_seven", lambda x: 7 * x)
    store = S.BufferStore(B, tir.call_packed("compat.times_seven", 3) + 1, (tir.const(0),))
    mod = tecc.build(_func("value", [B], store), target="llvm")
    b = np.zeros(1, "int32")
    mod(b)
    assert b[0] == 22


def test_the_name_is_resolved_at_run_time_and_a_missing_one_is_named(registry):
    A = tir.decl_buffer((2,), "float32", "A")
    mod = tecc.build(_func("late", [A], S.Evaluate(tir.call_packed("compat.registered_later", A))), target="llvm")
    a = np.zeros(2, "float32")
    with pytest.raises(FunctionNotFoundError, match="late: no packed function named 'compat.registered_later'"):
        mod(a)
    registry("compat.registered_later", lambda x: x.copyfrom(np.ones(2, "float32")))
    mod(a)  # registered after the build: found at the next call
    np.testing.assert_array_equal(a, [1, 1])


def test_the_callees_exception_reaches_the_caller(registry):
    def boom(x):
        raise ValueError("bad input")

    registry("compat.boom", boom)
    A = tir.decl_buffer((2,), "float32", "A")
    mod = tecc.build(_func("calls_boom", [A], S.Evaluate(tir.call_packed("compat.boom", A))), target="c")
    with pytest.raises(ValueError, match="bad input") as info:
        mod(np.zeros(2, "float32"))
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "compat.boom" in notes and "calls_boom" in notes


def test_override_takes_effect_in_compiled_code(registry):
    A = tir.decl_buffer((1,), "float32", "A")
    registry("compat.versioned", lambda x: x.copyfrom(np.array([1.0], "float32")))
    mod = tecc.build(_func("versioned", [A], S.Evaluate(tir.call_packed("compat.versioned", A))), target="llvm")
    a = np.zeros(1, "float32")
    mod(a)
    tecc.register_func("compat.versioned", lambda x: x.copyfrom(np.array([2.0], "float32")), override=True)
    mod(a)
    assert a[0] == 2.0


def test_export_and_load_keep_packed_calls_working(registry, tmp_path):
    A = tir.decl_buffer((3,), "float32", "A")
    B = tir.decl_buffer((3,), "float32", "B")
    registry("compat.negate", lambda x, y: y.copyfrom(-x.numpy()))
    mod = tecc.build(_func("negate", [A, B], S.Evaluate(tir.call_packed("compat.negate", A, B))), target="c")
    path = str(tmp_path / "negate.so")
    mod.export_library(path)
    loaded = runtime.load_module(path)
    b = tecc.nd.array(np.zeros(3, "float32"))
    loaded["negate"](tecc.nd.array(np.array([1, 2, 3], "float32")), b)
    np.testing.assert_array_equal(b.numpy(), [-1, -2, -3])


def test_a_library_loaded_without_tecc_reports_the_missing_runtime(registry, tmp_path):
    A = tir.decl_buffer((1,), "float32", "A")
    registry("compat.noop", lambda x: None)
    mod = tecc.build(_func("noop", [A], S.Evaluate(tir.call_packed("compat.noop", A))), target="c")
    copy = tmp_path / "plain.so"
    shutil.copy(mod.lib_path, copy)  # another file: a fresh library whose hooks nobody set
    lib = ctypes.CDLL(str(copy))
    lib.noop.restype = ctypes.c_int32
    lib.noop.argtypes = [ctypes.c_void_p]
    a = np.zeros(1, "float32")
    assert lib.noop(a.ctypes.data) == -1
    lib.tecc_get_last_error.restype = ctypes.c_char_p
    assert b"load it with tecc.runtime.load_module" in lib.tecc_get_last_error()


# ---------------------------------------------------------------------------------------
# the C source (TVM's test_call_packed checks these)
# ---------------------------------------------------------------------------------------
def test_one_cached_handle_per_name_and_module():
    funcs = {}
    for name in ("func1", "func2"):
        A = tir.decl_buffer((1,), "float32", "A")
        funcs[name] = _func(name, [A], S.Evaluate(tir.call_packed("fake.func", A[0])))
    mod = tecc.build(S.IRModule(funcs), target="c")
    src = mod.get_source()
    assert src.count("fake.func") == 2  # one per call site
    assert src.find("fake.func_packed") == -1
    assert src.count("static void* fake_func_packed = NULL;") == 1


def test_handle_names_stay_distinct_and_clear_of_tecc_names():
    A = tir.decl_buffer((1,), "float32", "A")
    body = S.SeqStmt((S.Evaluate(tir.call_packed("a.b", A)), S.Evaluate(tir.call_packed("a_b", A)),
                      S.Evaluate(tir.call_packed("tecc.call", A))))
    src = tecc.build(_func("names", [A], body), target="c").get_source()
    assert src.count("static void* a_b_packed = NULL;") == 1
    assert src.count("static void* a_b_packed_1 = NULL;") == 1
    assert "static void* f_tecc_call_packed = NULL;" in src


def test_a_module_without_packed_calls_has_no_packed_support():
    A = tir.decl_buffer((1,), "float32", "A")
    src = tecc.build(_func("plain", [A], S.BufferStore(A, tir.const(1.0), (tir.const(0),))), target="c").get_source()
    assert "tecc_packed" not in src


# ---------------------------------------------------------------------------------------
# where packed calls cannot go
# ---------------------------------------------------------------------------------------
def test_call_packed_inside_a_cuda_kernel_is_refused_with_the_kernels_name():
    A = tir.decl_buffer((32,), "float32", "A")
    tx = tir.Var("threadIdx.x", "int32")
    body = S.Evaluate(tir.call_packed("compat.gpu_side", A, tx))
    k = kernel("packed_kernel", [A], body, launch=[(tx, 32)])
    host, kernels = single_launch("packed_kernel", k, [A])
    with pytest.raises(CompileError, match="kernel packed_kernel: call_packed\\('compat.gpu_side'\\) cannot run "
                                           "inside a CUDA kernel"):
        cuda_module(host, kernels)


def test_call_packed_on_the_host_side_of_a_cuda_module_is_refused():
    A = tir.decl_buffer((32,), "float32", "A")
    tx = tir.Var("threadIdx.x", "int32")
    k = kernel("plain_kernel", [A], S.BufferStore(A, tir.const(1.0), (tx,)), launch=[(tx, 32)])
    h = host("host_calls", [A], lambda pa: S.SeqStmt((S.Evaluate(tir.call_packed("compat.host_side", A)),
                                                      launch("plain_kernel", pa))))
    with pytest.raises(CompileError, match="host_calls.*packed function 'compat.host_side' outside any kernel"):
        cuda_module(h, {"plain_kernel": k})


def test_the_gpu_emulators_printer_refuses_packed_calls_too():
    from tecc.cpu_fallback.gpu_emu.codegen import CodeGenSim

    A = tir.decl_buffer((1,), "float32", "A")
    with pytest.raises(CompileError, match="cannot run inside a CUDA kernel"):
        CodeGenSim().generate(_func("sim_kernel", [A], S.Evaluate(tir.call_packed("compat.x", A))))


def test_call_packed_argument_errors():
    with pytest.raises(TeccTypeError, match="registered function's name"):
        tir.call_packed(3)
    with pytest.raises(TeccTypeError, match="cannot pass"):
        tir.call_packed("compat.f", object())


def test_packed_buffers_count_as_written():
    from tecc.tir.analysis import passed_data, written_params

    A = tir.decl_buffer((2,), "float32", "A")
    B = tir.decl_buffer((2,), "float32", "B")
    f = _func("w", [A, B], S.Evaluate(tir.call_packed("compat.f", A)))
    assert passed_data(f.body) == {A.data}
    assert written_params(f) == {0}


def test_check_runs_packed_calls_on_the_copies_and_bounds_checks_their_buffers(registry):
    A = tir.decl_buffer((8,), "float32", "A")
    i = tir.Var("i", "int32")
    part = S.Buffer("part", "float32", (tir.const(4),), A.data, elem_offset=i * 3)
    registry("compat.fill4", lambda r, k: r.copyfrom(np.full(4, k, "float32")))
    body = S.For(i, tir.const(0), tir.const(2), S.ForKind.SERIAL,
                 S.Evaluate(tir.call_packed("compat.fill4", part, i)))
    mod = tecc.build(_func("fill_parts", [A], body), target="llvm")
    a = np.zeros(8, "float32")
    assert mod.check(a) == []  # elements 0..3 and 3..6: inside
    assert not a.any()  # the caller's array is untouched

    body = S.For(i, tir.const(0), tir.const(3), S.ForKind.SERIAL,
                 S.Evaluate(tir.call_packed("compat.fill4", part, i)))
    findings = tecc.build(_func("fill_too_far", [A], body), target="llvm").check(a)
    assert [f.kind for f in findings] == ["out_of_bounds"]
    assert "A[6:10]" in findings[0].message and "fill_too_far" in findings[0].message


def test_ffi_register_object_leaves_classes_alone():
    import tecc._ffi

    @tecc._ffi.register_object("compat.Node")
    class Node:
        pass

    @tecc._ffi.register_object
    class Other:
        pass

    assert Node.__name__ == "Node" and Other.__name__ == "Other"


def test_unsigned_bool_and_handle_arguments(registry):
    A = tir.decl_buffer((2,), "float32", "A")
    got = []
    registry("compat.args", lambda *args: got.append(args))
    call = tir.call_packed("compat.args", tir.const(2**64 - 1, "uint64"), tir.const(-3, "int8"),
                           tir.const(True, "bool"), tir.const(0.25, "float64"), A.data)
    mod = tecc.build(_func("many_args", [A], S.Evaluate(call)), target="llvm")
    a = np.zeros(2, "float32")
    mod(a)
    assert got == [(2**64 - 1, -3, 1, 0.25, a.ctypes.data)]
