"""topi's reductions beyond tests/topi/test_topi_reduction.py -- mean, variance, std,
argmax/argmin with keepdims and select_last_index, integer and float16 inputs --
and the reduction and softmax schedules of each target: which strategy the CUDA
schedule takes (across threads, several outputs per block, a thread per output),
one kernel (one loop nest) for a reduction and its epilogue, vector lanes for
column sums on the CPU; property tests over random shapes, axes and keepdims;
errors naming the operator, the axis and the shape."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tecc
from tecc import te, topi
from tecc.topi import testing as T
from tecc.topi.utils import TopiError
from topi_run import build_run, rand

#: the CUDA target of the tests of many operators: blocks of at most 64 threads, so
#: that the emulator's race and bounds check (which interprets every thread) stays
#: quick; the tests of the schedules' strategies use the default 256
SMALL_CUDA = "cuda -max_num_threads=64"
TARGETS_SMALL = ["llvm", SMALL_CUDA]

pytestmark = pytest.mark.filterwarnings("ignore:no CUDA GPU found:RuntimeWarning")


def run(s, inputs, outputs, arrays, target):
    """Build once; check (cuda) and run; ``(results, text)`` -- the CUDA source, or
    the lowered IR for llvm."""
    mod = tecc.build(s, list(inputs) + list(outputs), target)
    results = [np.zeros([int(d) for d in t.shape], t.dtype) for t in outputs]
    if target.startswith("cuda"):
        assert mod.check(*arrays, *results) == []
        text = mod.imported_modules[0].get_source()
    else:
        text = lowered(s, list(inputs) + list(outputs))
    mod(*arrays, *results)
    return results, text


def lowered(s, args):
    return str(tecc.lower(s, args, simple_mode=True))


def top_level_loops(text):
    return len(re.findall(r"^  (parallel |vectorized )?for \(", text, re.M))


# ---------------------------------------------------------------------------------
# mean, variance, std, argmax/argmin: every target, one kernel each
# ---------------------------------------------------------------------------------

MEAN_CASES = [("llvm", 1, False), ("llvm", (0, 2), True), ("llvm", None, False), ("llvm", -1, True),
              (SMALL_CUDA, (0, 2), True), (SMALL_CUDA, -1, False)]


@pytest.mark.parametrize("target, axis, keepdims", MEAN_CASES)
def test_mean_variance_std(target, axis, keepdims):
    shape = (3, 5, 11)
    A = te.placeholder(shape, name="A")
    a = rand(shape, low=-2, high=3)
    np_axis = axis if axis is None or isinstance(axis, int) else tuple(axis)
    cases = [(topi.mean(A, axis, keepdims), np.mean(a, np_axis, keepdims=keepdims)),
             (topi.variance(A, axis, keepdims), np.var(a, np_axis, keepdims=keepdims)),
             (topi.std(A, axis, keepdims, unbiased=True), np.std(a, np_axis, ddof=1, keepdims=keepdims))]
    for out, want in cases:
        (got,), text = run(topi.schedule(out, target), [A], [out], [a], target)
        if target.startswith("cuda"):
            assert text.count("__global__") == 1, out.op.name  # the reductions and epilogues: one kernel
        elif len(out.shape):  # (a rank-0 output's loop of one iteration disappears)
            assert top_level_loops(text) == 1, out.op.name
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=out.op.name)


ARG_CASES = [("llvm", 1, True, False), ("llvm", (0, 2), False, True), ("llvm", None, True, True),
             ("llvm", -1, False, True), (SMALL_CUDA, (0, 2), True, True), (SMALL_CUDA, -1, False, False)]


@pytest.mark.parametrize("target, axis, keepdims, last", ARG_CASES)
def test_argmax_argmin_keepdims_and_last_index(target, axis, keepdims, last):
    shape = (3, 6, 9)
    A = te.placeholder(shape, name="A")
    a = np.round(rand(shape, low=0, high=3))  # many ties
    for name in ("argmax", "argmin"):
        out = getattr(topi, name)(A, axis=axis, keepdims=keepdims, select_last_index=last)
        (got,), text = run(topi.schedule(out, target), [A], [out], [a], target)
        want = getattr(T, f"{name}_python")(a, axis, keepdims, last)
        assert got.dtype == np.int32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=name)
        if target.startswith("cuda"):
            assert text.count("__global__") == 1  # the index stage computed with the reduction


def test_argmax_of_a_row_of_infinities_is_a_real_index():
    A = te.placeholder((3, 4), name="A")
    a = np.full((3, 4), -np.inf, "float32")
    a[1, 2] = 1.0
    outs = [topi.argmax(A, axis=1), topi.argmin(-A, axis=1, select_last_index=True)]
    got = build_run(topi.schedule(outs, "llvm"), [A], outs, [a], "llvm")
    np.testing.assert_array_equal(got[0], [0, 2, 0])
    np.testing.assert_array_equal(got[1], [3, 2, 3])


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # int8 sums wrap, as in C
@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_integer_and_float16_reductions(target):
    A8 = te.placeholder((5, 40), name="A8", dtype="int8")
    A32 = te.placeholder((5, 40), name="A32", dtype="int32")
    H = te.placeholder((5, 40), name="H", dtype="float16")
    a8, a32, h = rand((5, 40), "int8", -3, 3), rand((5, 40), "int32", -50, 50), rand((5, 40), "float16", 0, 1)
    cases = [(topi.sum(A8, axis=1), a8.sum(1, dtype="int8")), (topi.mean(A32, axis=1), np.trunc(a32.sum(1) / 40)),
             (topi.sum(H, axis=1), h.astype("float32").sum(1)), (topi.argmin(A32, 1), a32.argmin(1))]
    if target == "llvm":  # more of the same on the CPU only (each output is a kernel of its own)
        cases += [(topi.max(A8, axis=0), a8.max(0)), (topi.sum(A32, axis=1, keepdims=True), a32.sum(1, keepdims=True)),
                  (topi.prod(topi.clip(A32, 1, 2), axis=1), np.clip(a32, 1, 2).prod(1)), (topi.max(H, axis=1), h.max(1))]
    outs = [out for out, _ in cases]
    got = build_run(topi.schedule(outs, target), [A8, A32, H], outs, [a8, a32, h], target)
    for (out, want), g in zip(cases, got):
        assert g.dtype == out.dtype
        tol = 2e-2 if out.dtype == "float16" else 0
        np.testing.assert_allclose(g.astype("float64"), want.astype("float64"), rtol=tol, atol=tol, err_msg=out.op.name)


@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_all_any_of_floats(target):
    A = te.placeholder((4, 6), name="A")
    a = np.round(rand((4, 6), low=-0.6, high=0.6))
    a[0] = 1.0
    outs = [topi.all(A, axis=1), topi.any(A, axis=0, keepdims=True), topi.all(A)]
    got = build_run(topi.schedule(outs, target), [A], outs, [a], target)
    for g, w in zip(got, [np.all(a != 0, 1), np.any(a != 0, 0, keepdims=True), np.all(a != 0)]):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------
# the CUDA strategies
# ---------------------------------------------------------------------------------

def _cuda_reduce(shape, make, ref):
    """The lowered IR of the CUDA reduce schedule of ``make(A)``, checked against
    ``ref`` on the emulator."""
    A = te.placeholder(shape, name="A")
    out = make(A)
    s = topi.cuda.schedule_reduce(out)
    a = rand(shape)
    (got,), src = run(s, [A], [out], [a], "cuda")
    assert src.count("__global__") == 1
    np.testing.assert_allclose(got, ref(a), rtol=1e-5, atol=1e-5)
    return lowered(s, [A, out])


def test_cuda_long_reduction_across_a_block():
    text = _cuda_reduce((3, 700), lambda A: topi.sum(A, axis=1), lambda a: a.sum(1))
    assert "// threadIdx.x" in text and "tecc.thread_allreduce(256" in text and "threadIdx.y" not in text


def test_cuda_short_reduction_puts_several_outputs_in_a_block():
    # 40 elements per output: 64 threads reduce each, 4 outputs per block on threadIdx.y
    text = _cuda_reduce((30, 40), lambda A: topi.max(A, axis=1) * 2.0, lambda a: a.max(1) * 2)
    assert "// threadIdx.y" in text and "tecc.thread_allreduce(64" in text


def test_cuda_very_short_reduction_is_a_thread_per_output():
    text = _cuda_reduce((300, 6), lambda A: topi.sum(A, axis=1), lambda a: a.sum(1))
    assert "thread_allreduce" not in text and "// threadIdx.x" in text


def test_cuda_column_sum_is_a_thread_per_output(monkeypatch):
    # the innermost axis kept and many outputs: neighbouring threads read neighbours
    # (the threshold lowered from 1024 outputs to keep the emulator's work small)
    monkeypatch.setattr(topi.cuda.reduction, "KEPT_THREADS_MIN_OUTPUTS", 64)
    text = _cuda_reduce((40, 70), lambda A: topi.sum(A, axis=0), lambda a: a.sum(0))
    assert "thread_allreduce" not in text
    monkeypatch.setattr(topi.cuda.reduction, "KEPT_THREADS_MIN_OUTPUTS", 1024)
    text = _cuda_reduce((40, 70), lambda A: topi.sum(A, axis=0), lambda a: a.sum(0))
    assert "thread_allreduce" in text


def test_cuda_several_reduced_axes_fused_across_threads():
    text = _cuda_reduce((6, 5, 37), lambda A: topi.min(A, axis=(0, 2), keepdims=True),
                           lambda a: a.min((0, 2), keepdims=True))
    assert "k0.k2.fused" in text and "thread_allreduce" in text


def test_cuda_epilogue_of_another_shape_gets_its_own_kernel():
    # x - mean(x): the broadcast output has more elements than the reduction
    A = te.placeholder((4, 50), name="A")
    out = A - topi.mean(A, axis=1, keepdims=True)
    a = rand((4, 50))
    (got,), src = run(topi.schedule(out, "cuda"), [A], [out], [a], "cuda")
    assert src.count("__global__") == 2
    np.testing.assert_allclose(got, a - a.mean(1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_reduction_and_epilogue_as_two_outputs():
    A = te.placeholder((4, 50), name="A")
    R = topi.sum(A, axis=1)
    E = topi.sqrt(R)
    a = rand((4, 50), low=0.1, high=1)
    for target in TARGETS_SMALL:
        r, e = build_run(topi.schedule([R, E], target), [A], [R, E], [a], target)
        np.testing.assert_allclose(r, a.sum(1), rtol=1e-5)
        np.testing.assert_allclose(e, np.sqrt(a.sum(1)), rtol=1e-5)


# ---------------------------------------------------------------------------------
# the CPU schedule
# ---------------------------------------------------------------------------------

def test_x86_column_sum_reduces_in_vector_lanes_in_one_loop_nest():
    A = te.placeholder((200, 203), name="A")  # enough work for several cores
    out = topi.mean(A, axis=0)
    s = topi.x86.schedule_reduce(out)
    text = lowered(s, [A, out])
    assert top_level_loops(text) == 1 and "parallel for" in text and "vectorized for" in text
    a = rand((200, 203))
    (got,) = build_run(s, [A], [out], [a], "llvm")
    np.testing.assert_allclose(got, a.mean(0), rtol=1e-5, atol=1e-6)


def test_generic_reduce_schedule_inlines_the_producers():
    A = te.placeholder((4, 9), name="A")
    out = topi.mean(topi.exp(A), axis=1)
    with tecc.target.Target("llvm"):
        s = topi.generic.schedule_reduce(out)
    assert "T_exp" not in lowered(s, [A, out])
    a = rand((4, 9))
    (got,) = build_run(s, [A], [out], [a], "llvm")
    np.testing.assert_allclose(got, np.exp(a).mean(1), rtol=1e-5)


def test_x86_small_reduction_stays_on_one_core():
    A = te.placeholder((4, 10), name="A")
    out = topi.sum(A, axis=1)
    assert "parallel" not in lowered(topi.x86.schedule_reduce(out), [A, out])


# ---------------------------------------------------------------------------------
# softmax on every axis
# ---------------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS_SMALL)
@pytest.mark.parametrize("shape, axis", [((2, 7, 3, 5), 1), ((3, 5, 7), -2), ((6, 45), -1)])
def test_softmax_log_softmax_any_axis(target, shape, axis):
    A = te.placeholder(shape, name="A")
    a = rand(shape, low=-4, high=4)
    outs = [topi.nn.softmax(A, axis=axis), topi.nn.log_softmax(A, axis=axis)]
    for out, ref in zip(outs, (T.softmax_python, T.log_softmax_python)):
        (got,) = build_run(topi.schedule(out, target), [A], [out], [a], target)
        np.testing.assert_allclose(got, ref(a, axis=axis), rtol=1e-5, atol=1e-6)


def test_cuda_softmax_over_channels_is_a_thread_per_row():
    A = te.placeholder((1, 5, 16, 16), name="A")  # 256 rows of 5 channels
    out = topi.nn.softmax(A, axis=1)
    s = topi.cuda.schedule_softmax(out)
    assert "thread_allreduce" not in lowered(s, [A, out])
    a = rand((1, 5, 16, 16), low=-3, high=3)
    (got,), src = run(s, [A], [out], [a], "cuda")
    assert src.count("__global__") == 1
    np.testing.assert_allclose(got, T.softmax_python(a, axis=1), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------
# property tests
# ---------------------------------------------------------------------------------

@st.composite
def reduce_case(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    axes = draw(st.one_of(st.none(), st.sets(st.integers(-rank, rank - 1), max_size=rank)))
    if axes is not None:
        axes = sorted(axes)
        if len({x % rank for x in axes}) != len(axes):  # -1 and rank-1 both drawn
            axes = sorted({x % rank for x in axes})
        axes = tuple(axes)
    keepdims = draw(st.booleans())
    op = draw(st.sampled_from(["sum", "max", "min", "mean", "argmax", "argmin", "prod"]))
    return shape, axes, keepdims, op


def _reference(op, a, axes, keepdims):
    if op in ("argmax", "argmin"):
        return getattr(T, f"{op}_python")(a, axes, keepdims)
    fn = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean, "prod": np.prod}[op]
    return fn(a, axis=axes, keepdims=keepdims)


def _check_reduce(case, target):
    shape, axes, keepdims, op = case
    A = te.placeholder(shape, name="A")
    a = rand(shape, low=0.5, high=1.5)
    out = getattr(topi, op)(A, axis=axes, keepdims=keepdims)
    (got,) = build_run(topi.schedule(out, target), [A], [out], [a], target)
    want = _reference(op, a, axes, keepdims)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(reduce_case())
def test_reductions_match_numpy_llvm(case):
    _check_reduce(case, "llvm")


@settings(max_examples=5, deadline=None)
@given(reduce_case())
def test_reductions_match_numpy_cuda(case):
    _check_reduce(case, SMALL_CUDA)


# ---------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------

def test_reduction_errors_name_operator_axis_and_shape():
    A = te.placeholder((3, 4), name="A")
    for name in ("sum", "mean", "argmax", "variance", "std", "all"):
        with pytest.raises(TopiError, match=rf"{name}\('A'\): axis -3 is out of range for a tensor of rank 2 "
                                            r"\(shape \(3, 4\)\); use an axis in \[-2, 1\]"):
            getattr(topi, name)(A, axis=(0, -3))
    with pytest.raises(TopiError, match=r"argmin\('A'\): axis \(1, -1\) names an axis twice \(shape \(3, 4\)\)"):
        topi.argmin(A, axis=(1, -1))
    with pytest.raises(TopiError, match=r"softmax\('A'\): axis -3 is out of range .*\(shape \(3, 4\)\)"):
        topi.nn.softmax(A, axis=-3)
    with pytest.raises(TopiError, match=r"log_softmax\('A'\): axis 2 is out of range .*\(shape \(3, 4\)\)"):
        topi.nn.log_softmax(A, axis=2)
    with pytest.raises(TopiError, match=r"variance\('I'\): expected a float tensor, got dtype int32"):
        topi.variance(te.placeholder((3,), name="I", dtype="int32"))
    with pytest.raises(TopiError, match=r"mean\('B'\): expected a numeric tensor, got dtype bool"):
        topi.mean(te.placeholder((3,), name="B", dtype="bool"))


# ---------------------------------------------------------------------------------
# a real GPU
# ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_reduce_and_softmax_schedules_on_gpu():
    import cupy as cp
    A = te.placeholder((64, 1000), name="A")
    a = rand((64, 1000))
    cases = [(topi.sum(A, axis=1), a.sum(1)), (topi.max(A, axis=0), a.max(0)), (topi.argmax(A, axis=1), a.argmax(1)),
             (topi.variance(A, axis=1), a.var(1)), (topi.nn.softmax(A, axis=1), T.softmax_python(a, 1)),
             (topi.nn.log_softmax(A, axis=0), T.log_softmax_python(a, 0))]
    for out, want in cases:
        mod = tecc.build(topi.schedule(out, "cuda"), [A, out], "cuda")
        got = cp.zeros(want.shape, out.dtype)
        mod(cp.asarray(a), got)
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-4, atol=1e-5, err_msg=out.op.name)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_sum_and_prod_of_booleans_are_or_and_and_as_numpys(target):
    """numpy adds booleans as ``or`` and multiplies them as ``and`` (``a.sum(dtype=bool)``
    is ``a.any()``); topi.sum / topi.prod of a bool tensor do the same (before: refused
    as arithmetic on booleans; TVM's test_reduce_map sums booleans)."""
    import warnings

    A = te.placeholder((4, 5), "bool", name="A")
    a = np.random.default_rng(3).random((4, 5)) > 0.7
    dev = tecc.cpu(0) if target == "llvm" else tecc.cuda(0)
    for fn, want in ((topi.sum, a.sum(axis=1, dtype=bool)), (topi.prod, a.prod(axis=1, dtype=bool))):
        B = fn(A, axis=1)
        with tecc.target.Target(target):
            s = topi.schedule([B])
        f = tecc.build(s, [A, B], target)
        b = tecc.nd.empty((4,), "bool", dev)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(tecc.nd.array(a, dev), b)
        np.testing.assert_array_equal(b.numpy(), want)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_schedule_reduce_of_outputs_that_read_no_reduction_is_injective(target):
    """TVM's schedule_reduce takes an output without a reduction (a loss computed with
    reduction="none") and schedules it as injective; so does tecc's (before: refused)."""
    A = te.placeholder((3, 40), name="A")
    B = topi.exp(A)
    with tecc.target.Target(target):
        s = T.get_reduce_schedule(target)([B])
    a = rand((3, 40))
    (got,) = build_run(s, [A], [B], [a], target)
    np.testing.assert_allclose(got, np.exp(a), rtol=1e-6)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("shape, reduction, ignore_index", [
    ((10, 5), "mean", -100), ((10, 5, 2, 2), "mean", 3), ((10, 5), "sum", -100), ((10, 5), "none", 1),
    ((5,), "mean", -100), ((5,), "none", -100),
])
def test_nll_loss_matches_its_reference(target, shape, reduction, ignore_index):
    """topi.nn.nll_loss (TVM's), scheduled by the reduce schedule as TVM's test_topi_loss
    does, against topi.testing.nll_loss; the reference itself against a direct formula."""
    classes = shape[1] if len(shape) > 1 else shape[0]
    target_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    P = te.placeholder(shape, name="P")
    Tg = te.placeholder(target_shape, "int32", name="T")
    W = te.placeholder((classes,), name="W")
    out = topi.nn.nll_loss(P, Tg, W, reduction, ignore_index)
    with tecc.target.Target(target):
        s = T.get_reduce_schedule(target)([out])
    rng = np.random.default_rng(9)
    p, w = rng.uniform(size=shape).astype("float32"), rng.uniform(size=(classes,)).astype("float32")
    t = rng.integers(0, classes, target_shape).astype("int32")
    (got,) = build_run(s, [P, Tg, W], [out], [p, t, w], target)
    want = T.nll_loss(p, t, w, reduction, ignore_index)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if len(shape) == 2 and reduction == "mean":
        keep = t != ignore_index
        direct = -(p[np.arange(shape[0]), t] * w[t] * keep).sum() / (w[t] * keep).sum()
        np.testing.assert_allclose(want, direct, rtol=1e-5)
    with pytest.raises(TopiError, match=r"reduction 'avg' must be 'mean', 'sum' or 'none'"):
        topi.nn.nll_loss(P, Tg, W, "avg", ignore_index)
