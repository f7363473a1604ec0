"""The host side of a CUDA build (cuda_codegen/host_plan.py): a split module's host
functions become launch plans -- grid and block as formulas over the scalar
parameters, workspaces, argument specs -- that print, round-trip through JSON and
compute their launch dimensions."""
import json

import pytest

import tecc
from tecc.cuda_codegen import build_cuda
from tecc.errors import LoweringError, TargetError
from tecc.runtime.cuda_module import CUDAModule
from tecc.runtime.launch import LaunchPlan, formula_text, launch_dims
from irhelpers import add_module, fresh_cuda_cache, two_kernel_module  # noqa: F401  (an autouse fixture)

TARGET = "cuda -arch=sm_90"


def test_build_sources_and_specs():
    mod = add_module()
    assert isinstance(mod, CUDAModule) and mod.arch == "sm_90" and mod.cubin[:4] == b"\x7fELF"
    # the host side is a launch plan: grid and block as formulas over the scalar parameters
    assert mod.get_source() == ("plan add(A, B, C, n):\n"
                                "  launch add_kernel0<<<((((n * 4) + 63) // 64), 1, 1), (64, 1, 1)>>>(A, B, C, n)")
    cu = mod.imported_modules[0].get_source()
    assert '__global__ void __launch_bounds__(64) add_kernel0' in cu and cu == mod.get_source("cuda")
    specs = mod.signature("add").args
    assert [s.kind for s in specs] == ["buffer"] * 3 + ["scalar"]
    assert specs[0].shape == ("n", 4) and specs[3].binding == (0, 0)
    assert specs[2].written and not specs[0].written  # from the kernel's stores
    plan = mod.plans["add"]
    (step,) = plan.steps
    assert launch_dims(plan, step, {("arg", 3): 10}) == ((1, 1, 1), (64, 1, 1))
    assert launch_dims(plan, step, {("arg", 3): 17}) == ((2, 1, 1), (64, 1, 1))
    assert mod.kernels["add_kernel0"].params == (("buffer", "float32"),) * 3 + (("scalar", "int32"),)
    assert "CUDAModule add" in repr(mod)


def test_build_errors():
    with pytest.raises(LoweringError, match="needs host functions"):
        build_cuda([], TARGET)
    with pytest.raises(TargetError, match="target 'cuda'"):
        build_cuda([], "llvm")
    if not tecc.cuda(0).exist:
        # plain "cuda" without a GPU: NVRTC still checks the code (for sm_80) and the
        # module runs on the CPU emulation
        assert add_module("cuda").arch == "sm_80"


def test_plan_json_round_trip_and_text():
    mod = two_kernel_module()
    plan = mod.plans["scale_inc"]
    back = LaunchPlan.from_json(json.loads(json.dumps(plan.to_json())))
    assert back == plan
    assert [type(s).__name__ for s in plan.steps] == ["Alloc", "Launch", "Launch"]
    assert plan.text().splitlines()[1] == "  T = workspace(float32, 256)"
    assert formula_text(["floordiv", ["+", {"arg": 0}, 63], 64], {("arg", 0): "n"}) == "((n + 63) // 64)"


