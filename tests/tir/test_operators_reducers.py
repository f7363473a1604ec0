"""Python operators on expressions and IterVars, with the expression on either side,
and the reducers under TVM's ``tvm.tir`` names (``tir.comm_reducer``, ``tir.sum``...)."""
import numpy as np

import tecc
from tecc import te, tir


def test_shift_and_bitwise_operators_with_the_expression_on_the_right():
    x = te.var("x")
    assert str(1 << x) == "shift_left(1, x)" and str(16 >> x) == "shift_right(16, x)"
    assert str(3 ^ x) == "bitwise_xor(3, x)"


def test_itervar_takes_every_integer_operator():
    tx = te.thread_axis("threadIdx.x")
    for got, want in [(tx >> 1, "shift_right(threadIdx.x, 1)"), (1 << tx, "shift_left(1, threadIdx.x)"),
                      (tx & 3, "bitwise_and(threadIdx.x, 3)"), (tx | 1, "bitwise_or(threadIdx.x, 1)"),
                      (tx ^ 1, "bitwise_xor(threadIdx.x, 1)"), (7 // tx, "7//threadIdx.x")]:
        assert str(got) == want


def test_tir_reducers_are_te_reducers():
    assert tir.sum is te.sum and tir.max is te.max and tir.min is te.min
    assert tir.comm_reducer is te.comm_reducer
    n = 16
    A = te.placeholder((4, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((4,), lambda i: tir.max(A[i, k], axis=k), name="B")
    C = te.compute((4,), lambda i: tir.max(B[i], 0.0), name="C")  # two expressions: element-wise
    f = tecc.build(te.create_schedule(C.op), [A, C], "llvm")
    a = np.random.default_rng(0).standard_normal((4, n)).astype("float32")
    c = np.zeros(4, "float32")
    f(a, c)
    np.testing.assert_allclose(c, np.maximum(a.max(axis=1), 0.0))
