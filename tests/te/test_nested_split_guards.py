"""An axis that is split and then split again (or fused and then split) by a factor
that does not divide it needs its own bound check, not only its root's: otherwise
the extra iterations of the inner split write the next block's elements."""
import warnings

import numpy as np
import pytest

import tecc
from tecc import te


def _run(s, A, B, a):
    f = tecc.build(s, [A, B], "cuda")
    b = np.zeros(a.shape, "float32")
    assert f.check(a, b) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(a, b)
    return b


@pytest.mark.parametrize("threads", [3, 4, 64])
def test_inner_part_of_a_split_split_again_by_a_thread_axis(threads):
    A = te.placeholder((2, 6), name="A")
    B = te.compute(A.shape, lambda n, c: A[n, c] + 1.0, name="B")
    s = te.create_schedule(B.op)
    n, c = B.op.axis
    co, ci = s[B].split(c, factor=2)
    row = s[B].fuse(n, co)
    _, ti = s[B].split(ci, factor=threads)
    s[B].bind(row, te.thread_axis("blockIdx.x"))
    s[B].bind(ti, te.thread_axis("threadIdx.x"))
    a = np.random.default_rng(0).random((2, 6)).astype("float32")
    np.testing.assert_allclose(_run(s, A, B, a), a + 1)


def test_fused_axis_split_by_a_factor_that_does_not_divide_it():
    A = te.placeholder((3, 5, 7), name="A")
    B = te.compute(A.shape, lambda i, j, k: A[i, j, k] * 2.0, name="B")
    s = te.create_schedule(B.op)
    i, j, k = B.op.axis
    ko, ki = s[B].split(k, factor=4)      # ki: 4, of which the last block uses 3
    fused = s[B].fuse(j, ko)              # 5 * 2 = 10
    fo, fi = s[B].split(fused, factor=8)  # 10 split by 8: fused must stay below 10
    s[B].bind(i, te.thread_axis("blockIdx.x"))
    s[B].bind(fi, te.thread_axis("threadIdx.x"))
    a = np.random.default_rng(1).random((3, 5, 7)).astype("float32")
    np.testing.assert_allclose(_run(s, A, B, a), a * 2)


def test_the_check_is_dropped_where_the_split_divides():
    A = te.placeholder((4, 8), name="A")
    B = te.compute(A.shape, lambda n, c: A[n, c] + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, ci = s[B].split(B.op.axis[1], factor=4)
    _, ti = s[B].split(ci, factor=2)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(ti, te.thread_axis("threadIdx.x"))
    assert "likely" not in str(tecc.lower(s, [A, B], target="cuda"))
