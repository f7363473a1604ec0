"""topi.nn.softmax / log_softmax along any axis, with the generic, x86 and CUDA
schedules (an element-wise op after the softmax included), against numpy."""
import importlib

import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import ScheduleError
from tecc.topi.utils import TopiError
from irhelpers import stages
from topi_run import build_run, rand

SCHEDULES = [("llvm", topi.generic.schedule_softmax), ("llvm", topi.x86.schedule_softmax),
             ("cuda", topi.cuda.schedule_softmax)]


def ref(name, a, axis):
    f = topi.testing.softmax_python if name == "softmax" else topi.testing.log_softmax_python
    return f(a, axis=axis)


@pytest.mark.parametrize("target, schedule", SCHEDULES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, axis", [((4, 37), -1), ((4, 37), 0), ((3, 5, 6), 1), ((2, 3, 40), 2), ((50,), 0)])
def test_softmax(target, schedule, name, shape, axis):
    A = te.placeholder(shape, name="A")
    B = getattr(topi.nn, name)(A, axis=axis)
    assert B.op.tag == f"{name}_output" and int(B.op.attrs["axis"]) == axis % len(shape)
    with tecc.target.Target(target):
        s = schedule(B)
    a = rand(shape, low=-4, high=4)
    (b,) = build_run(s, [A], [B], [a], target)
    np.testing.assert_allclose(b, ref(name, a, axis), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target, schedule", SCHEDULES)
def test_softmax_followed_by_an_elementwise_op(target, schedule):
    A = te.placeholder((16, 16), name="A")
    B = topi.nn.softmax(A, axis=1) + 1.0
    with tecc.target.Target(target):
        s = schedule(B)
    a = rand((16, 16))
    (b,) = build_run(s, [A], [B], [a], target)
    np.testing.assert_allclose(b, topi.testing.softmax_python(a) + 1.0, rtol=1e-5)


@pytest.mark.parametrize("target, schedule", SCHEDULES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_terms_below_flt_min_are_zero_and_nan_stays(target, schedule, name):
    """A float32 term exp(x - max) under FLT_MIN is 0 (onnxruntime's choice: no
    denormal arithmetic); the others are numpy's; a row with a NaN is NaN."""
    row = np.array([0.0, -1.0, -87.0, -87.5, -95.0, -103.0, -200.0, -np.inf], "float32")
    a = np.stack([row, row + 3.0, np.where(np.arange(8) == 2, np.nan, row).astype("float32"),
                  np.full(8, -1e4, "float32")])
    A = te.placeholder(a.shape, name="A")
    B = getattr(topi.nn, name)(A, axis=1)
    with tecc.target.Target(target):
        s = schedule(B)
    (b,) = build_run(s, [A], [B], [a], target)
    want = ref(name, a.astype("float64"), 1)
    if name == "softmax":
        flushed = (a - a.max(axis=1, keepdims=True)) < importlib.import_module("tecc.topi.nn.softmax").FLUSH_BELOW
        assert flushed[:2, 3:].all() and not flushed[:2, :3].any()
        assert np.array_equal(b[:2][flushed[:2]], np.zeros(int(flushed[:2].sum()), "float32"))
        np.testing.assert_allclose(b[:2][~flushed[:2]], want[:2][~flushed[:2]], rtol=1e-5)
    else:  # log-probabilities stay exact: the flushed terms only leave the sum
        np.testing.assert_allclose(b[:2], want[:2], rtol=1e-5)
    assert np.isnan(b[2]).all()
    np.testing.assert_allclose(b[3], want[3], rtol=1e-5)


def test_cuda_softmax_is_one_kernel_of_cross_thread_reductions():
    A = te.placeholder((16, 16), name="A")
    B = topi.nn.softmax(A, axis=1) + 1.0
    s = topi.cuda.schedule_softmax(B)  # no target needed
    mod = tecc.build(s, [A, B], "cuda")
    src = mod.imported_modules[0].get_source()
    assert src.count("__global__") == 1
    assert src.count("__shfl_down_sync") == 10  # max and sum: 5 steps each over a warp
    text = str(tecc.lower(s, [A, B], simple_mode=True))
    assert "tecc.thread_allreduce" in text


def test_earlier_form_of_the_cuda_schedule_and_softmax_rows():
    A = te.placeholder((4, 300), name="A")
    B = topi.nn.softmax(A)
    s = te.create_schedule(B.op)
    assert topi.cuda.schedule_softmax(s, B, num_thread=64) is s
    a = rand((4, 300))
    (b,) = build_run(s, [A], [B], [a], "cuda")
    np.testing.assert_allclose(b, topi.testing.softmax_python(a), rtol=1e-5, atol=1e-7)
    s2, args = topi.cuda.softmax_rows(4, 300, num_thread=64)
    assert [t.name for t in args] == ["A", "Out"]


def test_stage_names_and_tags():
    x = te.placeholder((3, 4, 5), name="x")
    tags = {n: t.op.tag for n, t in stages(topi.nn.softmax(x, axis=1)).items()}
    assert tags == {"Mx": "softmax_max", "Ex": "softmax_exp", "Sm": "softmax_sum", "Out": "softmax_output"}
    assert [int(d) for d in stages(topi.nn.softmax(x, axis=1))["Mx"].shape] == [3, 5]
    tags = {n: t.op.tag for n, t in stages(topi.nn.log_softmax(x)).items()}
    assert tags == {"Mx": "softmax_max", "Sm": "softmax_sum", "Out": "log_softmax_output"}


def test_softmax_errors():
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(TopiError, match=r"softmax\('A'\): axis 2 is out of range for a tensor of rank 2"):
        topi.nn.softmax(A, axis=2)
    with pytest.raises(ScheduleError, match="is not a softmax"):
        topi.cuda.schedule_softmax(topi.exp(A))
    B = te.placeholder((3, 4, 5), name="B")
    with pytest.raises(ScheduleError, match="is not an element-wise op of the softmax"):
        topi.cuda.schedule_softmax(topi.nn.softmax(A) + B)
