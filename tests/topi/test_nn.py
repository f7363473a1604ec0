"""The computes of tecc.topi.nn, built with their default (naive) schedule for the
CPU, against the numpy references of tecc.topi.testing; the stage names and tags the
schedules find them by; and the references themselves on small cases by hand."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.topi import testing as ref
from irhelpers import stages

RNG = np.random.default_rng(17)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def build_run(out, inputs, arrays):
    """Build ``out`` over ``inputs`` (naive schedule, llvm) and run it on ``arrays``;
    the output array."""
    f = tecc.build(te.create_schedule(out.op), list(inputs) + [out], target="llvm")
    result = np.zeros([int(d) for d in out.shape], out.dtype)
    f(*arrays, result)
    return result


@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul(transpose_b):
    A = te.placeholder((5, 7), name="A")
    B = te.placeholder((3, 7) if transpose_b else (7, 3), name="B")
    C = topi.nn.matmul(A, B, transpose_b=transpose_b)
    assert C.op.name == "C" and C.op.tag == "matmul" and [int(d) for d in C.shape] == [5, 3]
    a, b = rand(5, 7), rand(*[int(d) for d in B.shape])
    np.testing.assert_allclose(build_run(C, [A, B], [a, b]), ref.matmul_python(a, b, transpose_b), rtol=1e-5)


def test_batch_matmul():
    A, B = te.placeholder((2, 4, 6), name="A"), te.placeholder((2, 6, 3), name="B")
    C = topi.nn.batch_matmul(A, B, transpose_b=False)
    assert C.op.tag == "batch_matmul"
    a, b = rand(2, 4, 6), rand(2, 6, 3)
    np.testing.assert_allclose(build_run(C, [A, B], [a, b]), ref.batch_matmul_python(a, b), rtol=1e-5)


@pytest.mark.parametrize("stride, padding", [(1, 0), (1, 1), (2, 1)])
def test_conv2d_nchw(stride, padding):
    D, W = te.placeholder((1, 3, 9, 8), name="D"), te.placeholder((4, 3, 3, 3), name="W")
    Out = topi.nn.conv2d_nchw(D, W, stride=stride, padding=padding)
    pad = stages(Out)["Pad"]
    assert Out.op.tag == "conv2d_nchw" and "pad" in pad.op.tag.split(",")
    d, w = rand(1, 3, 9, 8), rand(4, 3, 3, 3)
    np.testing.assert_allclose(build_run(Out, [D, W], [d, w]), ref.conv2d_nchw_python(d, w, stride, padding),
                               rtol=1e-4, atol=1e-5)


def test_softmax_stages_and_values():
    x = te.placeholder((4, 37), name="x")
    out = topi.nn.softmax(x)
    tags = {name: t.op.tag for name, t in stages(out).items()}
    assert tags == {"Mx": "softmax_max", "Ex": "softmax_exp", "Sm": "softmax_sum", "Out": "softmax_output"}
    a = rand(4, 37) * 10
    np.testing.assert_allclose(build_run(out, [x], [a]), ref.softmax_python(a), rtol=1e-5, atol=1e-7)


def test_layer_norm():
    x, g, b = te.placeholder((3, 50), name="x"), te.placeholder((50,), name="g"), te.placeholder((50,), name="b")
    out = topi.nn.layer_norm(x, g, b)
    assert sorted(stages(out)) == ["Out", "SqSum", "Sum"]
    xa, ga, ba = rand(3, 50) + 2, rand(50), rand(50)
    np.testing.assert_allclose(build_run(out, [x, g, b], [xa, ga, ba]), ref.layer_norm_python(xa, ga, ba),
                               rtol=1e-4, atol=1e-4)


def test_epilogues():
    x, bias = te.placeholder((4, 6), name="x"), te.placeholder((6,), name="bias")
    xa, ba = rand(4, 6), rand(6)
    np.testing.assert_allclose(build_run(topi.nn.bias_relu(x, bias), [x, bias], [xa, ba]),
                               ref.bias_relu_python(xa, ba))
    shape = (2, 3, 4, 5)
    X, sc, bi, res = (te.placeholder(s, name=n) for s, n in ((shape, "X"), ((3,), "sc"), ((3,), "bi"), (shape, "R")))
    out = topi.nn.scale_bias_relu_add(X, sc, bi, res)
    assert sorted(stages(out)) == ["Out", "T1", "T2"]
    arrays = [rand(*shape), rand(3), rand(3), rand(*shape)]
    np.testing.assert_allclose(build_run(out, [X, sc, bi, res], arrays), ref.scale_bias_relu_add_python(*arrays),
                               rtol=1e-6)


def test_conv2d_reference_by_hand():
    # the oracle itself, against loops over every tap (stride 2, padding 1, dilation 2)
    d, w = rand(2, 3, 7, 6), rand(4, 3, 3, 2)
    stride, pad, dil = 2, 1, 2
    got = ref.conv2d_nchw_python(d, w, stride, pad, dilation=dil)
    dp = np.pad(d.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    N, CO, OH, OW = got.shape
    want = np.zeros(got.shape)
    for n in range(N):
        for f in range(CO):
            for y in range(OH):
                for x in range(OW):
                    for kh in range(w.shape[2]):
                        for kw in range(w.shape[3]):
                            want[n, f, y, x] += (dp[n, :, y * stride + kh * dil, x * stride + kw * dil]
                                                 * w[f, :, kh, kw]).sum()
    assert (OH, OW) == ((7 + 2 - 2 * 2 - 1) // 2 + 1, (6 + 2 - 2 * 1 - 1) // 2 + 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
