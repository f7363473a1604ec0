"""The lower_division pass (tir/transform/lower_division.py): floor division and
modulo of indices proven non-negative become C's truncating / and %."""
import numpy as np

import tecc
from tecc import te, tir
from tecc.tir import expr as E
from tecc.tir.stmt import BufferStore
from tecc.tir.transform import lower_division
from irhelpers import buf, loop, lowered_func, var

c = tir.const


def test_non_negative_indices_get_truncating_division():
    A, B = buf("A", (64,)), buf("B", (64,))
    i, j = var("i"), var("j")
    before = loop(i, 8, loop(j, 8, BufferStore(A, E.BufferLoad(B, (E.FloorDiv(i * 8 + j, 3) + E.FloorMod(j, 5),)),
                                                 (i * 8 + j,))))
    expected = loop(i, 8, loop(j, 8, BufferStore(A, E.BufferLoad(B, (E.Div(i * 8 + j, 3) + E.Mod(j, 5),)),
                                                   (i * 8 + j,))))
    f = lowered_func("f", [A, B], before)
    tir.assert_structural_equal(lower_division(f).body, expected)


def test_signed_or_unknown_operands_and_powers_of_two_stay_floor():
    A = buf("A", (64,))
    i, n = var("i"), var("n")
    body = loop(i, 8, BufferStore(A, c(1.0), (E.FloorDiv(i - 4, 3) + E.FloorMod(i, n) + E.FloorDiv(i, 4) + 8,)))
    f = lowered_func("f", [A, n], body)
    assert lower_division(f) is f  # i - 4 may be negative, n may be <= 0, 4 is a shift already


def test_if_conditions_are_known_inside():
    A = buf("A", (64,))
    i = var("i")
    store = BufferStore(A, c(1.0), (E.FloorMod(i - 4, 7),))
    f = lowered_func("f", [A], loop(i, 16, tir.IfThenElse(i >= 4, store)))
    out = lower_division(f).body
    assert isinstance(out.body.then_case.indices[0], E.Mod)


def test_generated_c_uses_plain_division_and_stays_correct():
    n = 45
    A = te.placeholder((7, n), name="A")
    B = te.compute((n * 7,), lambda k: A[k % 7, k // 7] * 2, name="B")  # a transpose: not foldable
    s = te.create_schedule(B.op)
    f = tecc.build(s, [A, B], "llvm")
    body = f.get_source().split("default_function(")[-1]
    assert "k % 7" in body and "k / 7" in body and "tecc_floor" not in body
    a = np.random.rand(7, n).astype("float32")
    b = np.zeros(n * 7, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.T.reshape(-1) * 2)
