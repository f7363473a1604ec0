"""One module of several functions: ``tecc.build`` of an IRModule with many PrimFuncs
(what the ONNX graph executor will build: one module of many fused kernels)."""
import warnings

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import FunctionNotFoundError, LoweringError
from tecc.topi import cuda as topi_cuda


def _scale_and_shift(target_is_cuda):
    """Two schedules: B = A * 2 and C = A + 1, each lowered without a target."""
    funcs = {}
    for name, fn in (("scale", lambda x: x * 2.0), ("shift", lambda x: x + 1.0)):
        A = te.placeholder((256,), name="A")
        B = te.compute((256,), lambda i: fn(A[i]), name="B")
        s = te.create_schedule(B.op)
        if target_is_cuda:
            bx, tx = s[B].split(B.op.axis[0], factor=64)
            s[B].bind(bx, te.thread_axis("blockIdx.x"))
            s[B].bind(tx, te.thread_axis("threadIdx.x"))
        (funcs[name],) = tecc.lower(s, [A, B], name=name).functions.values()
    return tir.IRModule(funcs)


@pytest.mark.parametrize("target", ["llvm", "cuda -arch=sm_80"])
def test_a_module_of_two_functions(target, tmp_path):
    mod = tecc.build(_scale_and_shift(target.startswith("cuda")), target=target)
    assert mod.function_names == ["scale", "shift"] and mod.entry_name == "scale"
    a = np.arange(256, dtype="float32")
    b, c = np.zeros(256, "float32"), np.zeros(256, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mod["scale"](a, b)
        mod["shift"](a, c)
        np.testing.assert_allclose(b, a * 2)
        np.testing.assert_allclose(c, a + 1)
        mod.export_library(str(tmp_path / "two.lib"))
        loaded = tecc.runtime.load_module(str(tmp_path / "two.lib"))
        loaded["shift"](a, b)
    np.testing.assert_allclose(b, a + 1)
    with pytest.raises(FunctionNotFoundError, match="'scale', 'shift'"):
        mod["scale_and_shift"]
    if target.startswith("cuda"):
        # all kernels of the module in one cubin, one launch plan per function
        assert set(mod.kernel_names) == {"scale_kernel0", "shift_kernel0"}
        assert set(mod.plans) == {"scale", "shift"}


def test_lower_without_target_is_target_independent_and_build_finishes_it():
    s, args = topi_cuda.softmax_rows(4, 64, num_thread=32)
    generic = tecc.lower(s, args, name="softmax")
    assert generic.attrs["tecc.lowered"] == "generic"
    text = str(generic)
    assert "tecc.thread_allreduce" in text and "tecc.launch" not in text  # not split yet
    f = tecc.build(generic, target="cuda -arch=sm_80")
    x = np.random.default_rng(0).standard_normal((4, 64)).astype("float32")
    y = np.zeros((4, 64), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f(x, y)
    np.testing.assert_allclose(y, tecc.topi.testing.softmax_python(x), rtol=1e-5, atol=1e-6)
    # lowered for one target, it does not build for another
    cuda_mod = tecc.lower(s, args, name="softmax", target="cuda -arch=sm_80")
    with pytest.raises(tecc.TargetError, match="lowered for target kind 'cuda'"):
        tecc.build(cuda_mod, target="llvm")


def test_target_scope_is_the_default_target():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with tecc.target.Target("llvm") as tgt:
        assert tecc.target.Target.current() is tgt
        assert tecc.lower(s, [A, B]).attrs["tecc.lowered"] == "c"
        f = tecc.build(s, [A, B])
    assert tecc.target.Target.current() is None
    assert f.type_key == "c"


def test_build_with_target_host():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    f = tecc.build(s, [A, B], "llvm", "llvm")  # TVM's positional target_host
    assert f.type_key == "c"
    with pytest.raises(tecc.TargetError, match="target_host 'cuda' is not a CPU target"):
        tecc.build(s, [A, B], "llvm", "cuda")


def test_gpu_bindings_for_a_cpu_target_name_the_loop():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    with pytest.raises(LoweringError, match=r"loop 'i.outer' of function 'main' is bound to blockIdx.x"):
        tecc.lower(s, [A, B], target="llvm")
