"""topi.nn.pool1d/pool2d (max and average; padding, dilation, ceil_mode,
count_include_pad; NCHW and NHWC) with the generic and CUDA schedules, against the
window-by-window numpy reference."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi.utils import TopiError
from irhelpers import stages
from topi_run import build_run, rand

TARGETS = ["llvm", "cuda"]


def pool_schedule(target, out, layout):
    with tecc.target.Target(target):
        return topi.testing.get_pool_schedule(target)(out, layout)


CASES = [
    # kernel, stride, dilation, padding (top, left, bottom, right), ceil_mode, count_include_pad
    ((3, 3), (1, 1), (1, 1), (0, 0, 0, 0), False, True),
    ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False, True),
    ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
    ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, False),
    ((3, 2), (2, 1), (2, 1), (1, 0, 2, 1), False, False),
    ((3, 3), (2, 2), (1, 1), (1, 1, 0, 0), True, True),
    ((3, 3), (2, 2), (1, 1), (1, 1, 0, 0), True, False),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("kernel, stride, dilation, padding, ceil_mode, include", CASES)
def test_pool2d_nchw(target, pool_type, kernel, stride, dilation, padding, ceil_mode, include):
    shape = (1, 3, 9, 10)
    A = te.placeholder(shape, name="A")
    P = topi.nn.pool2d(A, kernel, stride, dilation, padding, pool_type, ceil_mode, "NCHW", include)
    a = rand(shape, low=-2, high=2)
    (p,) = build_run(pool_schedule(target, P, "NCHW"), [A], [P], [a], target)
    want = topi.testing.poolnd_python(a, kernel, stride, dilation, padding[:2], padding[2:], pool_type, include,
                                      ceil_mode)
    assert p.shape == want.shape
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool2d_nhwc_and_pool1d(target, pool_type):
    A = te.placeholder((2, 8, 7, 3), name="A")
    P = topi.nn.pool2d(A, (2, 3), (2, 2), (1, 1), (0, 1, 1, 1), pool_type, layout="NHWC", count_include_pad=False)
    a = rand((2, 8, 7, 3))
    (p,) = build_run(pool_schedule(target, P, "NHWC"), [A], [P], [a], target)
    want = topi.testing.poolnd_python(a, (2, 3), (2, 2), (1, 1), (0, 1), (1, 1), pool_type, False, layout="NHWC")
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)
    B = te.placeholder((2, 3, 11), name="B")
    Q = topi.nn.pool1d(B, (3,), (2,), (1,), (1, 1), pool_type)
    b = rand((2, 3, 11))
    (q,) = build_run(pool_schedule(target, Q, "NCW"), [B], [Q], [b], target)
    want = topi.testing.poolnd_python(b, (3,), (2,), (1,), (1,), (1,), pool_type)
    np.testing.assert_allclose(q, want, rtol=1e-5, atol=1e-6)


def test_unpadded_max_pool_reads_its_input_directly():
    # a tensor intrinsic can match it (TVM's test_tensor_pool): no padding stage
    A = te.placeholder((1, 64, 16, 16), name="A")
    P = topi.nn.pool2d(A, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), "max")
    assert P.op.name == "pool_max" and P.op.tag == "pool_max"
    assert P.op.input_tensors == [A] and [int(d) for d in P.shape] == [1, 64, 14, 14]
    Q = topi.nn.pool2d(A, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), "avg")
    assert sorted(stages(Q)) == ["pad_temp", "pool_avg", "pool_sum"]


def test_global_pool():
    A = te.placeholder((2, 3, 5, 4), name="A")
    P = topi.nn.global_pool(A, "avg")
    a = rand((2, 3, 5, 4))
    (p,) = build_run(pool_schedule("llvm", P, "NCHW"), [A], [P], [a], "llvm")
    np.testing.assert_allclose(p, a.mean(axis=(2, 3), keepdims=True), rtol=1e-5)


def test_pool_errors():
    A = te.placeholder((1, 3, 8, 8), name="A")
    with pytest.raises(TopiError, match="pool_type 'sum' is not one of"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "sum")
    with pytest.raises(TopiError, match=r"padding \(0, 0\) must have 4 entries"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, 0), "max")
    with pytest.raises(TopiError, match="layout 'NCD' has 3 axes but 'A' has shape"):
        topi.nn.pool1d(A, (2,), (1,), (1,), (0, 0), "max", layout="NCD")
    with pytest.raises(TopiError, match="layout 'NCHD' has no axis 'W'"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max", layout="NCHD")
    with pytest.raises(TeccTypeError, match="pool2d: data must be a tensor"):
        topi.nn.pool2d([1, 2], (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max")
