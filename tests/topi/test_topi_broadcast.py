"""Arithmetic on whole tensors and topi's broadcasting operators, built with the
injective schedule of each target (llvm, and cuda on the GPU emulator) against numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, tir, topi
from tecc.errors import TeccTypeError
from tecc.topi.utils import TopiError
from topi_run import TARGETS, build_run, rand


def schedule_for(target, out):
    with tecc.target.Target(target):
        return topi.testing.get_broadcast_schedule(target)(out)


def test_operators_make_tensors_tagged_elemwise_or_broadcast():
    n = te.var("n")
    A = te.placeholder((), name="A")
    B = te.placeholder((10, 5), name="B")
    for expr in (1 + B, B + 1, n + B, B - n, B * 2.0, 2.0 / B, B // 3, B % 3, -B):
        assert isinstance(expr, te.Tensor) and expr.op.tag == topi.tag.ELEMWISE
        assert [int(d) for d in expr.shape] == [10, 5]
    for expr in (A + B, B + A, B + B, B - B, B * A):
        assert isinstance(expr, te.Tensor) and expr.op.tag == topi.tag.BROADCAST
    assert isinstance(B[0, 0] + A, te.Tensor) and isinstance(A + B[0, 0], te.Tensor)
    assert isinstance(B[0, 0] + 1, tir.PrimExpr) and isinstance(n + n, tir.PrimExpr)
    assert (-B).op.name == "T_multiply" and (B + B).op.name == "T_add"


def test_scalar_operands_of_operators_give_expressions():
    x, y = te.var("x"), te.var("y")
    assert isinstance(topi.add(x, y), tir.PrimExpr)
    assert isinstance(topi.maximum(x, 3), tir.PrimExpr)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("lhs, rhs", [((2, 3), ()), ((5, 2, 3), (1,)), ((1, 32), (4, 32)),
                                      ((5, 4, 6), (2, 5, 4, 1)), ((2, 3, 1, 8), (4, 8))])
def test_broadcast_arithmetic(target, lhs, rhs):
    A = te.placeholder(lhs, name="A")
    B = te.placeholder(rhs, name="B")
    a, b = rand(lhs), rand(rhs, low=0.5, high=2.0)
    for C, want in ((A + B, a + b), (A - B, a - b), (A * B, a * b), (A / B, a / b)):
        (c,) = build_run(schedule_for(target, C), [A, B], [C], [a, b], target)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-6)


OPS = [
    ("maximum", np.maximum), ("minimum", np.minimum), ("power", np.power),
    ("floor_divide", np.floor_divide), ("floor_mod", np.mod),
    ("greater", np.greater), ("less", np.less), ("equal", np.equal), ("not_equal", np.not_equal),
    ("greater_equal", np.greater_equal), ("less_equal", np.less_equal),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name, ref", OPS)
def test_named_operators(target, name, ref):
    A = te.placeholder((3, 4), name="A")
    B = te.placeholder((4,), name="B")
    a = rand((3, 4), low=0.5, high=3.0)
    b = rand((4,), low=0.5, high=3.0)
    b[0] = a[0, 0]  # one tie for the comparisons
    C = getattr(topi, name)(A, B)
    assert C.op.tag == topi.tag.BROADCAST
    (c,) = build_run(schedule_for(target, C), [A, B], [C], [a, b], target)
    np.testing.assert_allclose(c, ref(a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_integer_division_and_modulo_follow_numpy_or_c(target):
    A = te.placeholder((12,), name="A", dtype="int32")
    a = np.arange(-6, 6, dtype="int32")
    cases = [(A // 4, a // 4), (A % 4, a % 4), (-A, -a), (topi.mod(A, 4), np.fmod(a, 4)),
             (topi.trunc_divide(A, 4), np.trunc(a / 4).astype("int32")), (7 - A, 7 - a)]
    for C, want in cases:
        (c,) = build_run(schedule_for(target, C), [A], [C], [a], target)
        np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("target", TARGETS)
def test_logical_and_bitwise(target):
    A = te.placeholder((8,), name="A", dtype="int32")
    B = te.placeholder((8,), name="B", dtype="int32")
    a, b = rand((8,), "int32", 0, 7), rand((8,), "int32", 0, 7)
    cases = [(topi.bitwise_and(A, B), a & b), (topi.bitwise_or(A, B), a | b), (topi.bitwise_xor(A, B), a ^ b),
             (topi.left_shift(A, B), a << b), (topi.right_shift(A, B), a >> b),
             (topi.logical_and(topi.greater(A, 2), topi.less(B, 5)), (a > 2) & (b < 5)),
             (topi.logical_not(topi.equal(A, B)), a != b)]
    for C, want in cases:
        (c,) = build_run(schedule_for(target, C), [A, B], [C], [a, b], target)
        np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_and_symbolic_scalar_over_symbolic_shape(target):
    n, m = te.size_var("n"), te.size_var("m")
    k = te.var("k")
    A = te.placeholder((n, m), name="A")
    B = A * k + 1
    assert B.op.tag == topi.tag.ELEMWISE
    a = rand((3, 37))
    (b,) = build_run(schedule_for(target, B), [A], [B], [a, 2, 3, 37], target, extra_args=[k, n, m])
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_symbolic_dimensions_broadcast_at_run_time():
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((m,), name="B")
    C = A + B  # n and m: equal, or one of them 1, when it runs
    s = schedule_for("llvm", C)
    f = tecc.build(s, [A, B, C, n, m], "llvm")
    for na, nb in ((1, 5), (5, 1), (4, 4)):
        a, b = rand((na,)), rand((nb,))
        c = np.zeros(max(na, nb), "float32")
        f(a, b, c, na, nb)
        np.testing.assert_allclose(c, a + b)


@pytest.mark.parametrize("target", TARGETS)
def test_broadcast_to(target):
    A = te.placeholder((3, 1), name="A")
    C = topi.broadcast_to(A, (2, 3, 4))
    assert C.op.tag == topi.tag.BROADCAST
    a = rand((3, 1))
    (c,) = build_run(schedule_for(target, C), [A], [C], [a], target)
    np.testing.assert_array_equal(c, np.broadcast_to(a, (2, 3, 4)))


def test_shapes_that_do_not_broadcast_name_the_tensors_and_axis():
    A = te.placeholder((2, 3), name="A")
    B = te.placeholder((4, 3), name="B")
    with pytest.raises(TopiError, match=r"'A' \(2, 3\).*'B' \(4, 3\).*axis 0.*sizes 2 and 4"):
        A + B
    with pytest.raises(TopiError, match="does not broadcast to"):
        topi.broadcast_to(A, (3,))
    with pytest.raises(TopiError, match="axis 1"):
        topi.broadcast_to(A, (2, 5))


def test_bad_operands_are_type_errors():
    A = te.placeholder((2, 3), name="A")
    with pytest.raises(TeccTypeError, match="operands must be tensors, expressions or numbers"):
        topi.add(A, "x")
    with pytest.raises(TeccTypeError, match="broadcast_to: data must be a tensor"):
        topi.broadcast_to(1.0, (2,))
