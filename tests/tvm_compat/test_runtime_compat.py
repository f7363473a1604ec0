"""The runtime as TVM code calls it: ``nd.array(x, device=dev)`` and ``nd.empty(shape,
dtype, device=dev)`` (tecc's ``dev=`` too), ``copyto``, and ``Module.get_source`` in
TVM's formats (``""``, ``"c"``, ``"cuda"``, ``"asm"``)."""
import numpy as np
import pytest

import tecc
from tecc import runtime, tir
from tecc.errors import TeccError
from tecc.tir import stmt as S
from irhelpers import cuda_module, kernel, loop, make_func, quiet_call, single_launch
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


# ---------------------------------------------------------------------------------------
# nd.array / nd.empty
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["device=", "dev=", "positional"])
@pytest.mark.parametrize("dev", [tecc.cpu(0), tecc.cuda(0)], ids=["cpu", "cuda"])
def test_array_and_empty_take_the_device_every_way(how, dev):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    if how == "device=":
        a, e = tecc.nd.array(x, device=dev), tecc.nd.empty((2, 3), "int32", device=dev)
    elif how == "dev=":
        a, e = tecc.nd.array(x, dev=dev), tecc.nd.empty((2, 3), "int32", dev=dev)
    else:
        a, e = tecc.nd.array(x, dev), tecc.nd.empty((2, 3), "int32", dev)
    assert a.device == dev and e.device == dev
    assert e.dtype == "int32" and e.shape == (2, 3)
    np.testing.assert_array_equal(a.numpy(), x)


def test_the_device_defaults_to_the_cpu():
    assert tecc.nd.array([1, 2]).device == tecc.cpu(0)
    assert tecc.nd.empty(4).device == tecc.cpu(0)
    assert tecc.nd.empty((2,), dtype="float64").dtype == "float64"


def test_device_errors_say_what_to_pass():
    with pytest.raises(TeccError, match="nd.array: got both device=cpu\\(0\\) and dev=cpu\\(0\\)"):
        tecc.nd.array([1.0], device=tecc.cpu(0), dev=tecc.cpu(0))
    with pytest.raises(TeccError, match="nd.empty: got both"):
        tecc.nd.empty((1,), "float32", tecc.cpu(0), dev=tecc.cpu(0))
    with pytest.raises(TeccError, match="must be a tecc.Device.*got str 'float32'.*dtype="):
        tecc.nd.array([1.0], "float32")
    with pytest.raises(TeccError, match="nd.empty: the device must be a tecc.Device"):
        tecc.nd.empty((1,), "float32", 0)
    with pytest.raises(TeccError, match="mem_scope='texture' is not supported"):
        tecc.nd.empty((1,), "float32", mem_scope="texture")
    assert tecc.nd.empty((1,), mem_scope="global").shape == (1,)


def test_copyto_an_array_or_a_device():
    src = tecc.nd.array(np.arange(4, dtype="float32"))
    dst = tecc.nd.empty((4,), "float32")
    assert src.copyto(dst) is dst
    np.testing.assert_array_equal(dst.numpy(), [0, 1, 2, 3])
    on_gpu = src.copyto(tecc.cuda(0))
    assert on_gpu.device == tecc.cuda(0) and on_gpu is not src
    np.testing.assert_array_equal(on_gpu.numpy(), [0, 1, 2, 3])
    with pytest.raises(TeccError, match="copyto expects a Device or an NDArray"):
        src.copyto("cpu")


# ---------------------------------------------------------------------------------------
# get_source
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cpu_module():
    A = tir.decl_buffer((16,), "float32", "A")
    B = tir.decl_buffer((16,), "float32", "B")
    i = tir.Var("i", "int32")
    f = make_func("double_it", [A, B], loop(i, 16, S.BufferStore(B, A[i] * 2.0, (i,))))
    return tecc.build(f, target="c")


def test_c_module_sources(cpu_module):
    src = cpu_module.get_source()
    assert cpu_module.get_source("c") == src and "int32_t double_it(" in src
    asm = cpu_module.get_source("asm")
    assert "double_it" in asm and asm != src
    assert cpu_module.get_source("asm") == asm  # compiled once
    with pytest.raises(TeccError, match="get_source\\('ll'\\).*'c'.*'asm'.*no LLVM IR"):
        cpu_module.get_source("ll")


def test_a_loaded_c_module_has_its_source_but_no_assembly(cpu_module, tmp_path):
    cpu_module.export_library(str(tmp_path / "m.so"))
    loaded = runtime.load_module(str(tmp_path / "m.so"))
    assert loaded.get_source() == cpu_module.get_source()
    with pytest.raises(TeccError, match="get_source\\('asm'\\): this CPU module was loaded from a file"):
        loaded.get_source("asm")


@pytest.fixture(scope="module")
def gpu_module():
    A = tir.decl_buffer((32,), "float32", "A")
    B = tir.decl_buffer((32,), "float32", "B")
    tx = tir.Var("threadIdx.x", "int32")
    k = kernel("twice_k", [A, B], S.BufferStore(B, A[tx] * 2.0, (tx,)), launch=[(tx, 32)])
    return cuda_module(*single_launch("twice_k", k, [A, B]))


def test_cuda_module_sources(gpu_module):
    cuda_src = gpu_module.get_source("cuda")
    assert "__global__" in cuda_src and gpu_module.get_source("cu") == cuda_src
    assert gpu_module.imported_modules[0].get_source() == cuda_src
    ptx = gpu_module.get_source("asm")
    assert ".entry twice_k" in ptx and ".target sm_80" in ptx
    assert gpu_module.imported_modules[0].get_source("ptx") == ptx
    assert "twice_k" in gpu_module.get_source()  # the launch plan
    with pytest.raises(TeccError, match="get_source\\('ll'\\).*'cuda'.*'ptx'"):
        gpu_module.get_source("ll")
    with pytest.raises(TeccError, match="get_source\\('ll'\\): the device module.*'ptx'"):
        gpu_module.imported_modules[0].get_source("ll")


def test_a_loaded_cuda_module_has_no_ptx(gpu_module, tmp_path):
    gpu_module.export_library(str(tmp_path / "k.tecc"))
    loaded = runtime.load_module(str(tmp_path / "k.tecc"))
    assert loaded.get_source("cuda") == gpu_module.get_source("cuda")
    with pytest.raises(TeccError, match="loaded from a file.*no PTX"):
        loaded.get_source("asm")
    a = np.arange(32, dtype="float32")
    b = np.zeros(32, "float32")
    quiet_call(loaded, a, b)
    np.testing.assert_array_equal(b, a * 2)


# ---------------------------------------------------------------------------------------
# time_evaluator, as TVM's tests call it
# ---------------------------------------------------------------------------------------
def test_time_evaluator_as_tvm_calls_it(cpu_module):
    a = tecc.nd.array(np.ones(16, "float32"))
    b = tecc.nd.empty((16,), "float32")
    timer = cpu_module.time_evaluator(cpu_module.entry_name, tecc.cpu(0), number=3)
    result = timer(a, b)
    assert result.mean > 0 and len(result.results) == 1
    np.testing.assert_array_equal(b.numpy(), 2 * np.ones(16))
