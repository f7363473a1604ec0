"""Targets, config, devices, arrays, modules: calling, checking, timing, export and
load, compile errors and the compile cache."""
import multiprocessing
import os

import numpy as np
import pytest

from tecc import config, runtime
from tecc.cpu_fallback import build_c, compile_c
from tecc.cpu_fallback.compiler import format_compile_error
from tecc.errors import CompileError, RuntimeArgError, TargetError, TeccError
from tecc.runtime import ndarray as nd
from tecc.target import Target, is_cpu, is_cuda
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.op import const
from irhelpers import make_func as _func, private_cache_dir  # noqa: F401  (an autouse fixture)






@pytest.fixture(scope="module")
def add2d():
    """C[n, 4] = A[n, 4] + B[n, 4] with symbolic n (2-D buffers, printer flattens)."""
    n = E.Var("n")
    A = S.decl_buffer((n, 4), "float32", "A")
    B = S.decl_buffer((n, 4), "float32", "B")
    C = S.decl_buffer((n, 4), "float32", "C")
    i, j = E.Var("i"), E.Var("j")
    body = S.For(i, const(0), n, S.ForKind.PARALLEL,
                 S.For(j, const(0), const(4), S.ForKind.SERIAL,
                       S.BufferStore(C, A[i, j] + B[i, j], (i, j))))
    return build_c(_func("add2d", [A, B, C, n], body))


# ---------------------------------------------------------------------------
# targets and config
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["llvm", "llvm -mcpu=native", "llvm -mcpu=skylake-avx512 -mattr=+avx2",
                                  "c", "c -mcpu=native", "cuda", "cuda -arch=sm_90"])
def test_target_round_trip(text):
    t = Target(text)
    assert str(t) == text
    assert Target.canon(text) == t and Target.canon(t) is t
    assert t.kind.name == text.split()[0]


def test_target_attrs_and_flags():
    t = Target("llvm -mcpu=skylake-avx512 -mattr=+avx2,-fma")
    assert t.kind == "llvm" and t.keys == ("cpu",)
    assert t.attrs["mcpu"] == "skylake-avx512" and t.attrs["mattr"] == ["+avx2", "-fma"]
    assert t.cpu_cflags() == ["-march=skylake-avx512", "-mavx2", "-mno-fma"]
    assert Target("llvm -mcpu=native").cpu_cflags() == ["-march=native"]
    assert Target("llvm").cpu_cflags() == []
    assert Target("cuda -arch=sm_90").arch == "sm_90"
    assert is_cpu("c") and is_cpu(Target("llvm")) and not is_cpu("cuda")
    assert is_cuda("cuda -arch=sm_80") and not is_cuda("llvm")
    assert set(Target.list_kinds()) == {"llvm", "c", "cuda"}


def test_target_cuda_constructor():
    # TVM's tvm.target.cuda(), a context manager in TVM's TOPI tutorial
    import tecc

    assert str(tecc.target.cuda()) == "cuda"
    t = tecc.target.cuda(model="h100", arch="sm_90", options="-max_num_threads=1024")
    assert str(t) == "cuda -model=h100 -arch=sm_90 -max_num_threads=1024" and t.arch == "sm_90"
    with tecc.target.cuda() as cur:
        assert Target.current() is cur
    # tvm.target.create, TVM's older spelling of Target(...) (its test_adv_index calls it)
    assert str(tecc.target.create("cuda -arch=sm_90")) == "cuda -arch=sm_90"
    assert isinstance(tecc.target.create("llvm"), Target)


def test_target_libs_are_ignored_with_a_warning_once():
    import warnings

    with pytest.warns(UserWarning, match=r"-libs=cudnn,cublas,tecctest is ignored: tecc builds call no vendor "
                                         "library"):
        Target("cuda -libs=cudnn,cublas,tecctest")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Target("cuda -libs=cudnn,cublas,tecctest").attrs["libs"] == ["cudnn", "cublas", "tecctest"]


def test_tvm_names_from_before_v0_8():
    """tvm.context, nd.array(..., ctx=), contrib.graph_runtime / util, topi.util:
    the names TVM v0.7's tutorials use."""
    import tecc
    from tecc.contrib import graph_executor, graph_runtime, util, utils
    from tecc.topi import util as topi_util
    from tecc.topi import utils as topi_utils

    assert tecc.context("cpu", 0) == tecc.cpu(0)
    a = tecc.nd.array(np.arange(3, dtype="float32"), ctx=tecc.cpu(0))
    assert a.device == tecc.cpu(0) and tecc.nd.empty((2,), ctx=tecc.cpu(0)).shape == (2,)
    with pytest.raises(TeccError, match="got both dev=.* and ctx=.*; pass the device once"):
        tecc.nd.array([1.0], dev=tecc.cpu(0), ctx=tecc.cpu(0))
    assert graph_runtime.create is graph_executor.create and graph_runtime.GraphModule is graph_executor.GraphModule
    assert util.tempdir is utils.tempdir and topi_util.get_const_tuple is topi_utils.get_const_tuple
    temp = utils.tempdir()
    assert temp.path.is_dir() and temp / "lib.so" == temp.path / "lib.so" and str(temp.path) == temp.relpath("")[:-1]


def test_target_errors():
    with pytest.raises(TargetError, match="'opencl'.*supported kinds: llvm, c, cuda"):
        Target("opencl -device=mali")
    with pytest.raises(TargetError, match="cannot parse option"):
        Target("llvm mcpu=native")
    with pytest.raises(TargetError):
        Target("")


def test_config_reads_environment_lazily(monkeypatch, tmp_path):
    monkeypatch.setenv("TECC_CFLAGS", "-DFOO=1 -g")
    assert config.extra_cflags() == ["-DFOO=1", "-g"]
    monkeypatch.setenv("CC", "ccache gcc")
    assert config.c_compiler() == ["ccache", "gcc"]
    monkeypatch.delenv("CC")
    assert config.c_compiler() == ["cc"]
    monkeypatch.setenv("TECC_CACHE_DIR", str(tmp_path / "sub"))
    assert config.cache_dir() == tmp_path / "sub" and (tmp_path / "sub").is_dir()
    assert "TECC_CACHE_DIR" in config.describe()


@pytest.mark.parametrize("user, expected", [
    ({}, "30000"),                                   # tecc's spin count
    ({"GOMP_SPINCOUNT": "1000"}, "1000"),            # the user's own
    ({"OMP_WAIT_POLICY": "passive"}, None),          # a policy: libgomp decides, tecc sets nothing
])
def test_openmp_spin_count_is_set_only_where_the_user_chose_nothing(monkeypatch, user, expected):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    for name, value in user.items():
        monkeypatch.setenv(name, value)
    config.openmp_environment()
    assert os.environ.get("GOMP_SPINCOUNT") == expected


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads the loaded libraries from /proc")
def test_the_spin_count_is_in_place_before_libgomp_loads(tmp_path):
    """libgomp reads its environment once, when it loads with the first compiled
    library: in a fresh process, the variable is set by then and libgomp was not
    loaded before."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    script = (
        "import os, tecc\n"
        "from tecc import te\n"
        "def gomp(): return 'libgomp' in open('/proc/self/maps').read()\n"
        "before = gomp()\n"
        "A = te.placeholder((64,), name='A')\n"
        "B = te.compute((64,), lambda i: A[i] + 1, name='B')\n"
        "s = te.create_schedule(B.op)\n"
        "s[B].parallel(B.op.axis[0])\n"
        "tecc.build(s, [A, B], 'llvm')\n"
        "print(before, gomp(), os.environ.get('GOMP_SPINCOUNT'))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env["TECC_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "30000"]


# ---------------------------------------------------------------------------
# devices and arrays
# ---------------------------------------------------------------------------

def test_devices():
    dev = runtime.cpu(0)
    assert dev.exist and str(dev) == "cpu(0)" and dev == runtime.device("cpu", 0)
    dev.sync()
    gpu = runtime.cuda(0)
    assert isinstance(gpu.exist, bool) and str(gpu) == "cuda(0)"
    assert runtime.device("llvm").device_type == runtime.CPU
    with pytest.raises(TeccError, match="unknown device type"):
        runtime.device("tpu")


def test_ndarray_basics():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nd.array(x)
    assert a.shape == (2, 3) and a.dtype == "float32" and a.device == runtime.cpu(0)
    out = a.numpy()
    out[0, 0] = 100  # a copy
    assert a.numpy()[0, 0] == 0
    a.copyfrom(np.ones((2, 3)))
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3), np.float32))
    b = nd.empty((2, 3), "float32")
    a.copyto(b)
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    c = a.copyto(runtime.cpu(0))
    assert c is not a and c.shape == (2, 3)
    assert "shape=(2, 3)" in repr(a)
    assert nd.array([1, 2, 3], dtype="int8").dtype == "int8"
    assert nd.empty(4, "bfloat16").numpy().dtype == np.uint16
    with pytest.raises(TeccError, match="does not match"):
        a.copyfrom(np.ones(3))
    if not runtime.cuda(0).exist:
        # without a GPU, cuda(0) arrays live in host memory (CUDA modules emulate)
        g = nd.array(x, runtime.cuda(0))
        assert g.device == runtime.cuda(0) and (g.numpy() == x).all()
        with pytest.raises(TeccError, match="not available"):
            nd.array(x, runtime.cuda(1))


# ---------------------------------------------------------------------------
# calling modules
# ---------------------------------------------------------------------------

def test_call_with_ndarrays_and_numpy(add2d):
    for n in (3, 10):
        a = np.random.default_rng(n).random((n, 4), dtype=np.float32)
        b = np.ones((n, 4), np.float32)
        c = nd.empty((n, 4))
        add2d(nd.array(a), b, c)
        np.testing.assert_allclose(c.numpy(), a + 1)
    # the symbolic size may also be passed explicitly (it must agree)
    c = np.zeros((2, 4), np.float32)
    add2d(np.ones((2, 4), np.float32), np.ones((2, 4), np.float32), c, 2)
    assert (c == 2).all()
    assert add2d[add2d.entry_name] is not None and add2d.get_function("add2d").name == "add2d"
    add2d["add2d"](np.ones((1, 4), np.float32), np.ones((1, 4), np.float32), np.zeros((1, 4), np.float32))
    assert add2d.imported_modules == [] and "add2d(" in add2d.get_source("c")
    specs = add2d.signature(add2d.entry_name).args
    assert [s.kind for s in specs] == ["buffer"] * 3 + ["scalar"]
    assert specs[0].shape == ("n", 4) and specs[3].binding == (0, 0)
    assert specs[2].written and not specs[0].written


def _args(n=4, dtype=np.float32):
    return np.ones((n, 4), dtype), np.ones((n, 4), dtype), np.zeros((n, 4), dtype)


def test_error_wrong_count(add2d):
    a, b, _ = _args()
    with pytest.raises(RuntimeArgError, match=r"takes 3 arguments \(A, B, C\), got 2"):
        add2d(a, b)


def test_error_wrong_shape(add2d):
    a, b, c = _args()
    with pytest.raises(RuntimeArgError, match=r"argument 1 \('B'\) must have shape \(n, 4\)"):
        add2d(a, np.ones((4, 5), np.float32), c)
    with pytest.raises(RuntimeArgError, match="must have 2 dimensions"):
        add2d(a, np.ones(16, np.float32), c)


def test_error_wrong_dtype(add2d):
    a, b, c = _args()
    with pytest.raises(RuntimeArgError, match=r"argument 0 \('A'\) must have dtype float32, got float64"):
        add2d(a.astype(np.float64), b, c)
    with pytest.raises(RuntimeArgError, match="must have dtype float32, got int32"):
        add2d(a, b, nd.array(c, dtype="int32"))


def test_error_non_contiguous(add2d):
    a, b, _ = _args()
    c = np.zeros((4, 8), np.float32)[:, ::2]
    with pytest.raises(RuntimeArgError, match=r"argument 2 \('C'\) is not C-contiguous"):
        add2d(a, b, c)


def test_error_inconsistent_symbolic_dim(add2d):
    a, b, c = _args()
    with pytest.raises(RuntimeArgError, match=r"symbolic size 'n' is 4 from argument 0"):
        add2d(a, np.ones((5, 4), np.float32), c)
    with pytest.raises(RuntimeArgError, match=r"argument 3 \('n'\) is 7"):
        add2d(a, b, c, 7)


def test_error_wrong_argument_type_and_read_only(add2d):
    a, b, c = _args()
    with pytest.raises(RuntimeArgError, match="must be a tecc.nd.NDArray or a numpy array, got list"):
        add2d(a.tolist(), b, c)
    ro = np.zeros((4, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(RuntimeArgError, match="read-only"):
        add2d(a, b, ro)


def test_unknown_function_and_source_format(add2d):
    with pytest.raises(runtime.FunctionNotFoundError, match="no function 'nope'"):
        add2d["nope"]
    with pytest.raises(TeccError, match="get_source\\('ptx'\\): a CPU module has the formats '' / 'c'.*'asm'"):
        add2d.get_source("ptx")


def test_time_evaluator(add2d):
    a, b, c = _args(256)
    ev = add2d.time_evaluator(add2d.entry_name, runtime.cpu(0), number=3, repeat=4)
    res = ev(a, b, c)
    assert len(res.results) == 4 and all(r > 0 for r in res.results)
    assert res.min <= res.median <= res.max and res.mean > 0 and res.std >= 0
    np.testing.assert_array_equal(c, 2)
    res2 = add2d.time_evaluator("add2d", runtime.cpu(0), number=1, repeat=1, min_repeat_ms=20)(a, b, c)
    assert len(res2.results) == 1 and res2.results[0] > 0
    with pytest.raises(RuntimeArgError):
        ev(a, b)


# ---------------------------------------------------------------------------
# compiling: errors, cache, concurrency; export and load
# ---------------------------------------------------------------------------

BROKEN = """#include <stdint.h>
int32_t broken(float* A) {
    float x = 1.0f;
    A[0] = x +* ;
    return 0;
}
"""


def test_compile_error_shows_source_lines():
    with pytest.raises(CompileError) as info:
        compile_c(BROKEN, "c", "broken")
    msg = str(info.value)
    assert "error" in msg and "source around line 4" in msg
    assert ">    4 |     A[0] = x +* ;" in msg
    assert "float x = 1.0f;" in msg  # context lines


def test_format_compile_error_plain():
    log = "x.c:2:5: error: expected ';'\n"
    text = format_compile_error("a\nb\nc\n", log)
    assert ">    2 | b" in text


def test_missing_compiler(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/tecc-cc")
    with pytest.raises(CompileError, match="not found"):
        compile_c("int x;", "c", "x")


def test_compile_cache_reuses_library():
    src = "int tecc_cache_probe(void) { return 42; }\n"
    p1 = compile_c(src, "c", "probe")
    mtime = os.stat(p1).st_mtime_ns
    p2 = compile_c(src, "c", "probe")
    assert p1 == p2 and os.stat(p2).st_mtime_ns == mtime
    p3 = compile_c(src, "llvm -mcpu=native", "probe")
    assert p3 != p1  # flags are part of the key


def test_export_and_load_without_compiler(add2d, tmp_path, monkeypatch):
    path = tmp_path / "add2d.so"
    add2d.export_library(str(path))
    assert path.is_file() and len(list(tmp_path.iterdir())) == 1
    monkeypatch.setenv("CC", "/nonexistent/tecc-cc")
    mod = runtime.load_module(str(path))
    assert mod.entry_name == "add2d" and mod.get_source() == add2d.get_source()
    assert mod.target == add2d.target and mod.signatures == add2d.signatures
    a, b, c = _args(5)
    mod(a, b, c)
    np.testing.assert_array_equal(c, 2)
    with pytest.raises(RuntimeArgError):
        mod(a, b)
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"not a module")
    with pytest.raises(TeccError, match="not written by Module.export_library"):
        runtime.load_module(str(bogus))


_CONCURRENT_SRC = """#include <stdint.h>
__attribute__((visibility("default"))) int32_t tecc_concurrent(int32_t x) {
    int32_t s = 0;
    for (int32_t i = 0; i < x; ++i) s += i;
    return s;
}
"""


def _compile_worker(cache_dir, barrier, queue):
    os.environ["TECC_CACHE_DIR"] = cache_dir
    barrier.wait()
    queue.put(compile_c(_CONCURRENT_SRC, "c", "concurrent"))


def test_concurrent_compiles_are_safe(tmp_path):
    import ctypes

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_compile_worker, args=(str(tmp_path), barrier, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    paths = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert len(set(paths)) == 1
    lib = ctypes.CDLL(paths[0])
    assert lib.tecc_concurrent(10) == 45
    leftovers = [f.name for f in (tmp_path / "c").iterdir() if f.name.endswith(".tmp")]
    assert leftovers == []


def test_timing_samples_grow_until_long_enough():
    from tecc.runtime import timing

    calls = []

    def run_n(n):            # every run "takes" 1 ms
        calls.append(n)
        return n * 1e-3

    got = timing.sample(run_n, number=2, repeat=3, min_repeat_ms=10)
    assert got == pytest.approx([1e-3] * 3)
    assert calls[0] == 2 and all(n * 1e-3 * 1e3 >= 10 for n in calls[-3:])
    assert timing.sample(run_n, number=4, repeat=2) == pytest.approx([1e-3, 1e-3])


# ---------------------------------------------------------------------------
# mistakes a new user makes at run time, reported instead of crashing
# ---------------------------------------------------------------------------

def _int_division_module(target):
    import tecc
    from tecc import te

    A = te.placeholder((64,), name="A", dtype="int32")
    D = te.placeholder((64,), name="D", dtype="int32")
    B = te.compute((64,), lambda i: A[i] // D[i] + A[i] % D[i], name="B")
    s = te.create_schedule(B.op)
    if target.startswith("cuda"):
        bx, tx = s[B].split(B.op.axis[0], factor=32)
        s[B].bind(bx, te.thread_axis("blockIdx.x"))
        s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return tecc.build(s, [A, D, B], target=target)


@pytest.mark.parametrize("target", ["llvm", "cuda -arch=sm_80"])
def test_integer_division_by_zero_at_run_time_is_an_error_not_a_crash(target):
    import warnings

    from tecc.errors import KernelError

    f = _int_division_module(target)
    a = np.arange(64, dtype="int32")
    d = np.full(64, 3, "int32")
    b = np.zeros(64, "int32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the CPU emulation of CUDA
        f(a, d, b)
        np.testing.assert_array_equal(b, a // 3 + a % 3)
        d[17] = 0
        if target.startswith("cuda") and tecc_cuda_exists():
            return  # a GPU gives an undefined value and no error; its emulation reports it
        with pytest.raises(KernelError, match=r"integer division by zero in default_function(_kernel0)?: `.*D\["):
            f(a, d, b)
        d[17] = 3
        f(a, d, b)  # the failure was reported once; the next call is clean
    np.testing.assert_array_equal(b, a // 3 + a % 3)


def tecc_cuda_exists():
    import tecc

    return tecc.cuda(0).exist


def test_export_library_into_a_missing_folder_names_the_path(add2d, tmp_path):
    path = tmp_path / "no_such_folder" / "add.so"
    with pytest.raises(TeccError, match=rf"cannot write '{path}': the folder '{path.parent}' does not exist"):
        add2d.export_library(str(path))


def test_cpu_module_check_reports_out_of_bounds_reads():
    import tecc
    from tecc import te

    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + A[i + 1], name="B")  # reads A[16] at the edge
    f = tecc.build(te.create_schedule(B.op), [A, B], target="llvm")
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    (finding,) = f.check(a, b)
    assert finding.kind == "out_of_bounds" and finding.buffer == "A" and finding.index == 16
    assert "'default_function': A[16] is outside the buffer (16 elements)" in finding.message
    assert "A[i + 1]" in finding.statement
    assert not b.any()  # checking works on copies
    # the same with verification between passes: the IR is well formed, the access is not
    with tecc.transform.PassContext(config={"tir.verify": True}):
        g = tecc.build(te.create_schedule(B.op), [A, B], target="llvm")
    assert [x.kind for x in g.check(a, b)] == ["out_of_bounds"]
    C = te.compute((16,), lambda i: A[i] * 2.0, name="C")
    assert tecc.build(te.create_schedule(C.op), [A, C], target="llvm").check(a, b) == []


def test_cpu_module_check_reports_an_output_aliasing_an_input():
    import tecc
    from tecc import te

    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[15 - i] * 2.0, name="B")
    f = tecc.build(te.create_schedule(B.op), [A, B], target="llvm")
    a = np.arange(16, dtype="float32")
    (finding,) = f.check(a, a)
    assert finding.kind == "alias" and finding.buffer == "B"
    assert "argument 1 ('B') is written and shares memory with argument 0 ('A')" in finding.message
    assert f.check(a, np.zeros(16, "float32")) == []


def test_a_loaded_module_cannot_check(add2d, tmp_path):
    add2d.export_library(str(tmp_path / "add2d.so"))
    loaded = runtime.load_module(str(tmp_path / "add2d.so"))
    a = np.ones((2, 4), "float32")
    with pytest.raises(TeccError, match="add2d: this module has no checker"):
        loaded.check(a, a, np.zeros((2, 4), "float32"))


def test_load_module_without_the_cache_loads_in_place(tmp_path, monkeypatch):
    import tecc
    import tecc.runtime.cuda_module as cm
    import tecc.runtime.module as mm
    from tecc import te

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 3.0 + 1.25, name="B")
    s = te.create_schedule(B.op)
    c_path = str(tmp_path / "c.so")
    tecc.build(s, [A, B], "llvm").export_library(c_path)
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    cuda_path = str(tmp_path / "k.tecc")
    tecc.build(s, [A, B], "cuda -arch=sm_80").export_library(cuda_path)

    def no_copy(*args):
        raise AssertionError("copied into the module cache")

    monkeypatch.setattr(mm, "_cached_file", no_copy)
    monkeypatch.setattr(cm, "_cached_file", no_copy)
    a = np.arange(64, dtype="float32")
    for path in (c_path, cuda_path):
        out = np.zeros(64, "float32")
        tecc.runtime.load_module(path, cache=False)(a, out)
        np.testing.assert_allclose(out, a * 3 + 1.25)
    if not tecc.cuda(0).exist:  # the emulation was written beside the exported file
        assert (tmp_path / "k.tecc.emulation.so").exists()
    with pytest.raises(AssertionError, match="copied into the module cache"):
        tecc.runtime.load_module(c_path)  # the default copies


def test_the_cuda_device_count_is_asked_once_per_process(monkeypatch):
    """cuda(i).exist asks the CUDA runtime for its devices once (2.5 ms a question
    without a driver; every CUDA template instantiation asked); a runtime that fails
    means no device."""
    import sys
    import types

    import tecc

    device = sys.modules["tecc.runtime.device"]
    calls = []

    def count():
        calls.append(1)
        return 2

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=count)))
    monkeypatch.setattr(device, "_cupy", lambda: fake)
    monkeypatch.setattr(device, "_DEVICE_COUNT", [])
    assert [tecc.cuda(i).exist for i in (0, 1, 2, -1)] == [True, True, False, False] and len(calls) == 1

    def broken():
        raise RuntimeError("cudaErrorInsufficientDriver")

    fake.cuda.runtime.getDeviceCount = broken
    monkeypatch.setattr(device, "_DEVICE_COUNT", [])
    assert not tecc.cuda(0).exist and device.cuda_device_count() == 0


def test_ml_dtypes_bfloat16_arrays_become_their_bits():
    """nd.array takes numpy's bfloat16 (ml_dtypes', onnx's dependency) as the bits
    tecc keeps; a conversion to another dtype is asked of numpy, not guessed."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.5, -2.0, 3.0e-3], ml_dtypes.bfloat16)
    for a in (nd.array(x), nd.array(x, dtype="bfloat16")):
        assert a.dtype == "bfloat16"
        np.testing.assert_array_equal(a.numpy(), x.view(np.uint16))
    with pytest.raises(TeccError, match=r"a bfloat16 array converts to float32 with numpy first "
                                        r"\(arr.astype\('float32'\)\)"):
        nd.array(x, dtype="float32")


def test_arrays_are_shared_through_dlpack_both_ways():
    """nd.from_dlpack(tensor) shares the producer's memory (TVM's name); an NDArray is
    a DLPack producer itself (torch.from_dlpack(arr)); a non-contiguous view is
    refused with the fix."""
    import tecc

    source = np.arange(12, dtype="float32").reshape(3, 4)
    arr = tecc.nd.from_dlpack(source)
    assert arr.shape == (3, 4) and arr.dtype == "float32" and arr.device == tecc.cpu(0)
    source[0, 0] = 42.0
    assert arr.numpy()[0, 0] == 42.0  # the same memory
    back = np.from_dlpack(arr)
    back[1, 1] = -1.0
    assert arr.numpy()[1, 1] == -1.0 and arr.to_dlpack() is not None
    with pytest.raises(TeccError, match=r"is not C-contiguous .* \(t.contiguous\(\)\)"):
        tecc.nd.from_dlpack(source.T)
    with pytest.raises(TeccError, match="has no __dlpack__; pass the tensor itself"):
        tecc.nd.from_dlpack([1, 2])
    bits = tecc.nd.array(np.zeros(2, "uint16"), dtype="bfloat16")
    with pytest.raises(TeccError, match="bfloat16 NDArray holds its elements as uint16"):
        np.from_dlpack(bits)


def test_torch_tensors_are_shared_through_dlpack():
    import tecc

    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    shared = tecc.nd.from_dlpack(t)
    t[1, 2] = 7.0
    assert shared.numpy()[1, 2] == 7.0
    assert torch.equal(torch.from_dlpack(shared), t)
