"""CUDA modules: argument checking, the CPU emulation path (no GPU), export/load, and
(marked ``gpu``) real launches."""
import warnings

import numpy as np
import pytest

import tecc
from tecc import config, runtime
from tecc.errors import KernelError, RuntimeArgError, TeccError
from tecc.runtime import cuda_module
from tecc.runtime import ndarray as nd
from tecc.runtime.cuda_module import CUDAModule
from irhelpers import add_module, fresh_cuda_cache, two_kernel_module  # noqa: F401  (an autouse fixture)

on_cpu = pytest.mark.skipif(tecc.cuda(0).exist, reason="checks the no-GPU path")

TARGET = "cuda -arch=sm_90"


def assert_runs_scale_inc(mod):
    """Run a :func:`two_kernel_module` (or its reloaded copy) and check C = A * 2 + 1."""
    a = rand(16, 16)
    c = np.zeros((16, 16), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mod(a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


# ---------------------------------------------------------------------------
# calling, checking, exporting (no GPU needed); building: cuda_codegen/test_host_plan.py
# ---------------------------------------------------------------------------

def test_argument_checking():
    mod = add_module()
    a = np.ones((8, 4), np.float32)
    with pytest.raises(RuntimeArgError, match="takes 3 arguments"):
        mod(a, a)
    with pytest.raises(RuntimeArgError, match="dimension 1 is 5, expected 4"):
        mod(a, a, np.zeros((8, 5), np.float32))
    with pytest.raises(RuntimeArgError, match="must have dtype float32"):
        mod(a, a, np.zeros((8, 4), np.float64))
    with pytest.raises(RuntimeArgError, match="symbolic size 'n'"):
        mod(a, np.ones((9, 4), np.float32), np.zeros((8, 4), np.float32))
    with pytest.raises(RuntimeArgError, match="on cpu\\(0\\).*copyto"):
        mod(nd.array(a), a, np.zeros((8, 4), np.float32))
    with pytest.raises(RuntimeArgError, match="must be a tecc.nd.NDArray on cuda"):
        mod([1.0], a, a)


def test_empty_launch_is_refused_before_launching():
    mod = add_module()
    with warnings.catch_warnings(), pytest.raises(
            KernelError, match=r"add: launch of kernel add_kernel0: blockIdx.x extent 0 .*an empty input"):
        warnings.simplefilter("ignore", RuntimeWarning)
        mod(*(np.zeros((0, 4), np.float32),) * 3)


def test_export_and_load_round_trip(tmp_path, monkeypatch):
    mod = two_kernel_module()
    path = tmp_path / "scale_inc.tecc"
    mod.export_library(str(path))
    from tecc.cuda_codegen import nvrtc

    def no_nvrtc(*a, **k):
        raise AssertionError("loading must not compile")

    monkeypatch.setattr(nvrtc, "_compile", no_nvrtc)
    loaded = runtime.load_module(str(path))
    assert isinstance(loaded, CUDAModule)
    assert loaded.cubin == mod.cubin and loaded.arch == "sm_90" and loaded.target == TARGET
    assert loaded.imported_modules[0].get_source() == mod.imported_modules[0].get_source()
    assert loaded.get_source() == mod.get_source()
    assert loaded.signatures == mod.signatures and loaded.plans == mod.plans
    assert loaded.metadata() == mod.metadata()
    assert loaded.kernel_resources == mod.kernel_resources
    assert set(mod.kernel_resources) == {"scale_kernel0", "inc_kernel1"}
    assert loaded.checker is None  # no IR in the file
    with pytest.raises(TeccError, match="has no checker"):
        loaded.check(rand(16, 16), np.zeros((16, 16), np.float32))
    assert_runs_scale_inc(loaded)


def test_a_gpu_only_export_skips_the_emulation_and_says_so_without_a_gpu(tmp_path, monkeypatch):
    import zipfile

    from tecc.cpu_fallback import gpu_emu

    mod = two_kernel_module()
    path = tmp_path / "gpu_only.tecc"
    with monkeypatch.context() as m:
        m.setattr(gpu_emu, "compile_c", lambda *a, **k: pytest.fail("a GPU-only export ran the C compiler"))
        mod.export_library(str(path), cpu_emulation=False)
    with zipfile.ZipFile(path) as z:
        assert "emulation.so" not in z.namelist()
    loaded = runtime.load_module(str(path))
    assert loaded.cubin == mod.cubin and loaded.metadata() == mod.metadata()
    if not tecc.cuda(0).exist:
        with pytest.raises(TeccError, match="exported for GPUs only .*export it with cpu_emulation=True"):
            loaded(rand(16, 16), np.zeros((16, 16), np.float32))
    with pytest.raises(TeccError, match="loaded from a GPU-only export"):
        loaded.export_library(str(tmp_path / "again.tecc"))
    loaded.export_library(str(tmp_path / "again.tecc"), cpu_emulation=False)
    mod.export_library(str(tmp_path / "full.tecc"))  # the default keeps the emulation
    assert_runs_scale_inc(runtime.load_module(str(tmp_path / "full.tecc")))


# ---------------------------------------------------------------------------
# running without a GPU: the CPU emulation
# ---------------------------------------------------------------------------

@on_cpu
def test_runs_on_cpu_emulation_with_one_warning(monkeypatch):
    monkeypatch.setattr(cuda_module, "_warned_emulation", False)
    mod = add_module()
    a, b = rand(10, 4), rand(10, 4, seed=1)
    c = nd.empty((10, 4), "float32", tecc.cuda(0))
    with pytest.warns(RuntimeWarning, match="CPU emulation"):
        mod(nd.array(a, tecc.cuda(0)), nd.array(b, tecc.cuda(0)), c)
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        c2 = np.zeros((3, 4), np.float32)
        mod(a[:3].copy(), b[:3].copy(), c2)
    np.testing.assert_allclose(c2, a[:3] + b[:3], rtol=1e-6)


@on_cpu
def test_workspace_plan_on_cpu_emulation():
    assert_runs_scale_inc(two_kernel_module())


def test_check_mode_reports_out_of_bounds_and_leaves_arguments_alone():
    a, b = rand(10, 4), rand(10, 4, seed=1)
    c = np.zeros((10, 4), np.float32)
    assert add_module().check(a, b, c) == []
    findings = add_module(guard=False).check(a, b, c, max_blocks=None)
    assert {(f.kind, f.buffer) for f in findings} == {("out_of_bounds", "A"), ("out_of_bounds", "B"),
                                                      ("out_of_bounds", "C")}
    oob = next(f for f in findings if f.buffer == "C")
    assert oob.kernel == "add_kernel0" and oob.index == 40 and oob.thread == (40, 0, 0)
    assert "[0, 40)" in oob.message
    assert not c.any()  # checking works on copies
    with pytest.raises(RuntimeArgError, match="must have dtype float32"):
        add_module().check(a, b, np.zeros((10, 4), np.float64))


@on_cpu
def test_require_gpu_switch(monkeypatch):
    mod = add_module()
    monkeypatch.setenv("TECC_REQUIRE_GPU", "1")
    assert config.require_gpu()
    a = np.ones((2, 4), np.float32)
    with pytest.raises(TeccError, match="TECC_REQUIRE_GPU=1"):
        mod(a, a, np.zeros((2, 4), np.float32))
    monkeypatch.setenv("TECC_REQUIRE_GPU", "0")
    assert not config.require_gpu()


@on_cpu
def test_time_evaluator_on_cpu_emulation():
    mod = add_module()
    a = rand(8, 4)
    c = np.zeros((8, 4), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = mod.time_evaluator("add", tecc.cuda(0), number=2, repeat=3)(a, a, c)
    assert len(res.results) == 3 and all(t > 0 for t in res.results)
    np.testing.assert_allclose(c, a + a)
    with pytest.raises(TeccError, match="runs on cuda"):
        mod.time_evaluator("add", tecc.cpu(0))


@on_cpu
def test_device_facts_without_gpu():
    dev = tecc.cuda(0)
    assert dev.exist is False
    dev.sync()  # emulated: nothing to wait for
    for prop in ("name", "multi_processor_count", "compute_version", "max_shared_memory_per_block"):
        with pytest.raises(TeccError, match="not present"):
            getattr(dev, prop)
    with pytest.raises(TeccError, match="not present"):
        dev.attributes()
    with pytest.raises(TeccError, match="property of CUDA devices"):
        tecc.cpu(0).name
    x = nd.array(np.arange(4, dtype=np.float32), dev)
    assert x.device == dev and isinstance(x._data, np.ndarray)
    x.copyfrom(np.ones(4))
    assert (x.numpy() == 1).all()


# ---------------------------------------------------------------------------
# a real GPU
# ---------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_vector_add_matches_numpy():  # pragma: no cover - GPU machines
    mod = add_module("cuda")
    dev = tecc.cuda(0)
    assert mod.arch == dev.arch
    for n in (1, 100, 1000):
        a, b = rand(n, 4), rand(n, 4, seed=1)
        c = nd.empty((n, 4), "float32", dev)
        mod(nd.array(a, dev), nd.array(b, dev), c)
        np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)
    import cupy

    ca, cb, cc = cupy.asarray(a), cupy.asarray(b), cupy.zeros((1000, 4), cupy.float32)
    mod(ca, cb, cc)
    np.testing.assert_allclose(cc.get(), a + b, rtol=1e-6)
    out = np.zeros((1000, 4), np.float32)
    mod(a, b, out)  # numpy: copied in and back
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    mod2 = two_kernel_module()
    a = rand(16, 16)
    c = nd.empty((16, 16), "float32", dev)
    mod2(nd.array(a, dev), c)
    np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)


@pytest.mark.gpu
def test_gpu_time_evaluator_with_events():  # pragma: no cover - GPU machines
    mod = add_module("cuda")
    dev = tecc.cuda(0)
    a = nd.array(rand(1 << 16, 4), dev)
    c = nd.empty((1 << 16, 4), "float32", dev)
    res = mod.time_evaluator("add", dev, number=5, repeat=3)(a, a, c)
    assert len(res.results) == 3 and all(0 < t < 1 for t in res.results)
    res = mod.time_evaluator("add", dev, number=2, repeat=2, flush_l2=True)(a, a, c)
    assert all(t > 0 for t in res.results)
    np.testing.assert_allclose(c.numpy(), 2 * a.numpy(), rtol=1e-6)


@pytest.mark.gpu
def test_gpu_device_facts():  # pragma: no cover - GPU machines
    dev = tecc.cuda(0)
    assert dev.exist and dev.multi_processor_count > 0 and dev.name
    assert dev.compute_version.count(".") == 1 and dev.max_shared_memory_per_block >= 48 * 1024
    assert "driver_version" in dev.attributes() or dev.attributes()
