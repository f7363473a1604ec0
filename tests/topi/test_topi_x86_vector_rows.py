"""The x86 schedules of softmax, layer_norm (instance/group norm) and pooling:
the row reductions in vector lanes (rfactor) when the reduced axis is innermost,
against numpy; the other layouts keep their plain loops."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from topi_run import build_run, rand


def lowered(s, args):
    return str(tecc.lower(s, args, simple_mode=True))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, axis, width", [((3, 64), -1, 16), ((2, 3, 40), 2, 8), ((5, 36), 1, 4), ((64,), 0, 16),
                                                ((4, 30), 1, None), ((6, 32), 0, None)])
def test_x86_softmax_rows_in_vector_lanes(name, shape, axis, width):
    A = te.placeholder(shape, name="A")
    B = getattr(topi.nn, name)(A, axis=axis)
    s = topi.x86.schedule_softmax(B)
    text = lowered(s, [A, B])
    if width is None:  # not the innermost axis, or no vector width divides it: plain loops
        assert "Mx.rf" not in text and "vectorized" not in text
    else:
        assert "Mx.rf" in text and "Sm.rf" in text and f"vectorized for (k1.inner.v, 0, {width})" in text
        assert ("parallel for" in text) == (len(shape) > 1)
    a = rand(shape, low=-4, high=4)
    (b,) = build_run(s, [A], [B], [a], "llvm")
    f = topi.testing.softmax_python if name == "softmax" else topi.testing.log_softmax_python
    np.testing.assert_allclose(b, f(a, axis=axis), rtol=1e-5, atol=1e-6)


def test_x86_softmax_then_elementwise_vectorized():
    A = te.placeholder((8, 48), name="A")
    B = topi.exp(topi.nn.softmax(A) * 2.0)
    s = topi.x86.schedule_softmax(B)
    text = lowered(s, [A, B])
    assert "Sm.rf" in text and "vectorized for (i1.inner" in text or "vectorized for (j.inner" in text
    a = rand((8, 48), low=-4, high=4)
    (b,) = build_run(s, [A], [B], [a], "llvm")
    np.testing.assert_allclose(b, np.exp(topi.testing.softmax_python(a) * 2.0), rtol=1e-5)


def _layer_norm_ref(x, axes, g=None, b=None, eps=1e-5):
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * g + b if g is not None else y


@pytest.mark.parametrize("shape, axes, rf", [((6, 64), [-1], True), ((2, 3, 32), [1, 2], True),
                                             ((2, 24, 5), [1], False), ((3, 30), [-1], False)])
def test_x86_layer_norm_sums_in_vector_lanes(shape, axes, rf):
    A = te.placeholder(shape, name="A")
    gshape = tuple(shape[a] for a in axes)
    G, Bt = te.placeholder(gshape, name="G"), te.placeholder(gshape, name="B")
    B = topi.nn.layer_norm(A, G, Bt, axis=axes)
    s = topi.x86.schedule_layer_norm(B)
    text = lowered(s, [A, G, Bt, B])
    assert ("Sum.rf" in text and "SqSum.rf" in text) == rf
    a, g, b = rand(shape), rand(gshape), rand(gshape)
    (out,) = build_run(s, [A, G, Bt], [B], [a, g, b], "llvm")
    norm_axes = tuple(x % len(shape) for x in axes)
    bshape = [shape[d] if d in norm_axes else 1 for d in range(len(shape))]
    ref = _layer_norm_ref(a, norm_axes, g.reshape(bshape), b.reshape(bshape))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_x86_group_and_instance_norm_sums_in_vector_lanes():
    A = te.placeholder((2, 6, 4, 8), name="A")
    a = rand((2, 6, 4, 8))
    gamma, beta = te.placeholder((6,), name="g"), te.placeholder((6,), name="b")
    g, b = rand((6,)), rand((6,))
    N = topi.nn.group_norm(A, gamma, beta, num_groups=3, channel_axis=1, axes=[2, 3])
    s = topi.x86.schedule_group_norm(N)
    assert "Sum.rf" in lowered(s, [A, gamma, beta, N])
    (out,) = build_run(s, [A, gamma, beta], [N], [a, g, b], "llvm")
    x = a.reshape(2, 3, 2, 4, 8)
    ref = _layer_norm_ref(x, (2, 3, 4)).reshape(a.shape) * g[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    gamma, beta = te.placeholder((4, 8), name="g"), te.placeholder((4, 8), name="b")
    g, b = rand((4, 8)), rand((4, 8))
    N = topi.nn.instance_norm(A, gamma, beta, axis=[2, 3])
    s = topi.x86.schedule_instance_norm(N)
    assert "Sum.rf" in lowered(s, [A, gamma, beta, N])
    (out,) = build_run(s, [A, gamma, beta], [N], [a, g, b], "llvm")
    ref = _layer_norm_ref(a, (2, 3)) * g + b
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kernel, stride, pad, pool_type", [(3, 2, 1, "max"), (3, 1, 1, "max"), (2, 2, 0, "max"),
                                                             (3, 2, 1, "avg"), (7, 1, 3, "max")])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_x86_pool_values(kernel, stride, pad, pool_type, layout):
    shape = (1, 5, 11, 12) if layout == "NCHW" else (1, 11, 12, 8)
    A = te.placeholder(shape, name="A")
    P = topi.nn.pool2d(A, (kernel, kernel), (stride, stride), (1, 1), (pad,) * 4, pool_type, layout=layout)
    s = topi.x86.schedule_pool(P, layout)
    a = rand(shape)
    (p,) = build_run(s, [A], [P], [a], "llvm")
    x = a if layout == "NCHW" else a.transpose(0, 3, 1, 2)
    fill = -np.inf if pool_type == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh, ow = (xp.shape[2] - kernel) // stride + 1, (xp.shape[3] - kernel) // stride + 1
    taps = [xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride] for i in range(kernel) for j in range(kernel)]
    ref = np.max(taps, axis=0) if pool_type == "max" else np.mean(taps, axis=0)
    if layout == "NHWC":
        ref = ref.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(p, ref, rtol=1e-5, atol=1e-6)
    text = lowered(s, [A, P])
    if layout == "NCHW":
        # a row of outputs in vectors when the stride is 1 or 2 and it is whole vectors
        assert ("vectorized" in text) == (ow % 4 == 0 and stride in (1, 2)) and "unrolled for (rv1" in text
        assert ("unrolled for (rv0" in text) == (kernel * kernel <= 32)
    else:
        assert "vectorized for" in text
