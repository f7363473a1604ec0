"""topi.nn's activations, pad, dense and conv2d (TVM's signatures), with the
schedules topi.testing picks per target, against numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import ScheduleError, TeccTypeError
from tecc.topi.utils import TopiError
from irhelpers import stages
from topi_run import TARGETS, build_run, rand


def injective(target, out):
    with tecc.target.Target(target):
        return topi.testing.get_injective_schedule(target)(out)


@pytest.mark.parametrize("target", TARGETS)
def test_activations(target):
    A = te.placeholder((3, 4, 5), name="A")
    S = te.placeholder((4,), name="S")
    a, sl = rand((3, 4, 5)), rand((4,))
    for B, want in ((topi.nn.relu(A), np.maximum(a, 0)), (topi.nn.leaky_relu(A, 0.1), np.where(a > 0, a, a * 0.1))):
        assert B.op.tag == topi.tag.ELEMWISE
        (b,) = build_run(injective(target, B), [A], [B], [a], target)
        np.testing.assert_allclose(b, want, rtol=1e-6)
    P = topi.nn.prelu(A, S, axis=1)
    (p,) = build_run(injective(target, P), [A, S], [P], [a, sl], target)
    np.testing.assert_allclose(p, np.where(a > 0, a, a * sl[None, :, None]), rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_pad(target):
    A = te.placeholder((2, 3, 4), name="A")
    B = topi.nn.pad(A, (0, 1, 2), (1, 0, 3), pad_value=-1.5)
    assert B.op.tag == "injective,pad" and B.op.name == "PadInput"
    a = rand((2, 3, 4))
    (b,) = build_run(injective(target, B), [A], [B], [a], target)
    np.testing.assert_array_equal(b, np.pad(a, ((0, 1), (1, 0), (2, 3)), constant_values=-1.5))
    assert topi.nn.pad(A, (0, 0, 0)).op.input_tensors == [A]


@pytest.mark.parametrize("bias", [False, True])
def test_dense_and_matmul(bias):
    X = te.placeholder((5, 7), name="X")
    W = te.placeholder((3, 7), name="W")
    Bv = te.placeholder((3,), name="Bv")
    x, w, bv = rand((5, 7)), rand((3, 7)), rand((3,))
    D = topi.nn.dense(X, W, Bv if bias else None)
    dense = stages(D)["T_dense"]
    assert dense.op.tag == "dense" and D.op.tag == (topi.tag.BROADCAST if bias else "dense")
    inputs, arrays = ([X, W, Bv], [x, w, bv]) if bias else ([X, W], [x, w])
    s = topi.generic.schedule_dense(D)
    (d,) = build_run(s, inputs, [D], arrays, "llvm")
    np.testing.assert_allclose(d, topi.testing.dense_python(x, w, bv if bias else None), rtol=1e-5, atol=1e-6)
    M = topi.nn.matmul(X, W, transpose_b=True)
    (m,) = build_run(te.create_schedule(M.op), [X, W], [M], [x, w], "llvm")
    np.testing.assert_allclose(m, x @ w.T, rtol=1e-5, atol=1e-6)
    MT = topi.nn.matmul(te.placeholder((7, 5), name="XT"), W, transpose_a=True, transpose_b=True)
    assert [int(d) for d in MT.shape] == [5, 3]


CONVS = [
    # stride, padding, dilation
    (1, 1, 1),
    (2, 1, 1),
    ((1, 2), (1, 0), 1),
    (1, (1, 2, 0, 1), 1),
    (1, 2, 2),
    (1, "SAME", 1),
    (2, "VALID", 1),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stride, padding, dilation", CONVS)
@pytest.mark.parametrize("epilogue", [False, True])
def test_conv2d_nchw_with_the_implementation_per_target(target, stride, padding, dilation, epilogue):
    compute, schedule = topi.testing.get_conv2d_nchw_implement(target)
    with tecc.target.Target(target):
        A = te.placeholder((1, 3, 10, 9), name="A")
        W = te.placeholder((4, 3, 3, 3), name="W")
        B = compute(A, W, stride, padding, dilation, "float32")
        C = B * 2.0 if epilogue else B
        s = schedule([C])
    a, w = rand((1, 3, 10, 9)), rand((4, 3, 3, 3))
    want = topi.testing.conv2d_nchw_python(a, w, stride, padding, dilation=dilation)
    outs = build_run(s, [A, W], [B, C] if epilogue else [B], [a, w], target)
    np.testing.assert_allclose(outs[-1], want * 2 if epilogue else want, rtol=1e-4, atol=1e-5)


def test_generic_conv2d_schedule_and_nhwc():
    A = te.placeholder((1, 3, 7, 7), name="A")
    W = te.placeholder((2, 3, 3, 3), name="W")
    B = topi.nn.conv2d(A, W, 1, 1, 1)
    a, w = rand((1, 3, 7, 7)), rand((2, 3, 3, 3))
    (b,) = build_run(topi.generic.schedule_conv2d_nchw(B), [A, W], [B], [a, w], "llvm")
    np.testing.assert_allclose(b, topi.testing.conv2d_nchw_python(a, w, 1, 1), rtol=1e-4, atol=1e-5)
    AH = te.placeholder((1, 7, 7, 3), name="AH")
    WH = te.placeholder((3, 3, 3, 2), name="WH")
    BH = topi.nn.conv2d(AH, WH, 2, 1, 1, data_layout="NHWC")
    assert BH.op.tag == "conv2d_nhwc"
    nhwc = [np.ascontiguousarray(a.transpose(0, 2, 3, 1)), np.ascontiguousarray(w.transpose(2, 3, 1, 0))]
    (bh,) = build_run(te.create_schedule(BH.op), [AH, WH], [BH], nhwc, "llvm")
    want = topi.testing.conv2d_nchw_python(a, w, 2, 1).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(bh, want, rtol=1e-4, atol=1e-5)


def test_conv2d_reference_groups():
    a, w = rand((1, 4, 5, 5)), rand((6, 2, 3, 3))
    got = topi.testing.conv2d_nchw_python(a, w, 1, 1, groups=2)
    halves = [topi.testing.conv2d_nchw_python(a[:, 2 * g:2 * g + 2], w[3 * g:3 * g + 3], 1, 1) for g in range(2)]
    np.testing.assert_allclose(got, np.concatenate(halves, axis=1), rtol=1e-6)


def test_cuda_conv2d_workload_form_still_works():
    s, args = topi.cuda.conv2d_nchw(1, 3, 8, 8, 8, 3, 3, stride=1, pad=1)
    assert [t.name for t in args] == ["Data", "Weight", "Out"]


def test_nn_errors():
    A = te.placeholder((1, 3, 8, 8), name="A")
    W = te.placeholder((4, 2, 3, 3), name="W")
    with pytest.raises(TopiError, match="the input has 3 channels but the filter expects 2"):
        topi.nn.conv2d_nchw(A, W, 1, 1)
    with pytest.raises(TopiError, match="kernel 'W2' has shape"):
        topi.nn.conv2d_nchw(A, te.placeholder((4, 3, 3), name="W2"), 1, 1)
    with pytest.raises(TopiError, match="data_layout 'NCDHW' is not supported"):
        topi.nn.conv2d(A, W, 1, 1, 1, data_layout="NCDHW")
    with pytest.raises(TopiError, match="padding 'FULL' is not 'SAME' or 'VALID'"):
        topi.nn.conv2d_nchw(A, te.placeholder((4, 3, 3, 3), name="W3"), 1, "FULL")
    with pytest.raises(TopiError, match="pad_before has 2 entries but the tensor has rank 4"):
        topi.nn.pad(A, (1, 1))
    with pytest.raises(TopiError, match=r"dense: the reduction sizes differ: 7 in 'X'"):
        topi.nn.dense(te.placeholder((5, 7), name="X"), te.placeholder((3, 6), name="Wd"))
    with pytest.raises(TeccTypeError, match="relu: expected a tensor"):
        topi.nn.relu(0.5)
    with pytest.raises(ScheduleError, match="is not a conv2d_nchw"):
        topi.cuda.schedule_conv2d_nchw(topi.nn.relu(A))
    with pytest.raises(ScheduleError, match="CPU schedule but the current target is cuda"):
        with tecc.target.Target("cuda"):
            topi.generic.schedule_injective(topi.nn.relu(A))
