"""topi's reductions (sum, max, min, prod, all, any, argmax, argmin over any axes,
with keepdims) with the reduce schedule of each target, against numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi.utils import TopiError
from topi_run import TARGETS, build_run, rand


def reduce_schedule(target, out):
    with tecc.target.Target(target):
        return topi.testing.get_reduce_schedule(target)(out)


AXES = [None, 0, 1, -1, (0, 2), (1, 2)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_max_min_prod(target, axis, keepdims):
    A = te.placeholder((3, 5, 7), name="A")
    a = rand((3, 5, 7), low=0.5, high=1.5)
    for name, ref in (("sum", np.sum), ("max", np.max), ("min", np.min), ("prod", np.prod)):
        B = getattr(topi, name)(A, axis=axis, keepdims=keepdims)
        assert B.op.tag == topi.tag.COMM_REDUCE
        (b,) = build_run(reduce_schedule(target, B), [A], [B], [a], target)
        np.testing.assert_allclose(b, ref(a, axis=axis, keepdims=keepdims), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", [None, 1, (0, 1)])
def test_all_any(target, axis):
    A = te.placeholder((4, 6), name="A", dtype="int32")
    a = rand((4, 6), "int32", 0, 1)
    a[0] = 1
    for name, ref in (("all", np.all), ("any", np.any)):
        B = getattr(topi, name)(A, axis=axis)
        (b,) = build_run(reduce_schedule(target, B), [A], [B], [a], target)
        np.testing.assert_array_equal(b, ref(a.astype(bool), axis=axis))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_argmax_argmin_take_the_first_on_ties(target, axis):
    A = te.placeholder((5, 40), name="A")
    a = np.round(rand((5, 40), low=0, high=4))  # many ties
    for name, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
        B = getattr(topi, name)(A, axis=axis)
        assert B.op.tag == topi.tag.COMM_REDUCE_IDX and B.dtype == "int32"
        (b,) = build_run(reduce_schedule(target, B), [A], [B], [a], target)
        np.testing.assert_array_equal(b, ref(a, axis=axis))


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_with_inlined_input_and_epilogue(target):
    A = te.placeholder((6, 50), name="A")
    B = topi.sum(topi.exp(A), axis=1, keepdims=True) * 2.0
    a = rand((6, 50))
    (b,) = build_run(reduce_schedule(target, B), [A], [B], [a], target)
    np.testing.assert_allclose(b, np.exp(a).sum(axis=1, keepdims=True) * 2, rtol=1e-5)


def test_atleast1d():
    A = te.placeholder((3, 4), name="A")
    B = topi.sum(A, atleast1d=True)
    assert [int(d) for d in B.shape] == [1]
    a = rand((3, 4))
    (b,) = build_run(reduce_schedule("llvm", B), [A], [B], [a], "llvm")
    np.testing.assert_allclose(b, [a.sum()], rtol=1e-5)


def test_reduction_errors():
    A = te.placeholder((3, 4), name="A")
    with pytest.raises(TopiError, match=r"sum\('A'\): axis 2 is out of range for a tensor of rank 2"):
        topi.sum(A, axis=2)
    with pytest.raises(TopiError, match="names an axis twice"):
        topi.max(A, axis=(1, -1))
    with pytest.raises(TeccTypeError, match="sum: expected a tensor"):
        topi.sum(3.0)
