"""The remove_no_op pass (tir/transform/remove_no_op.py): empty loops and ifs,
constant conditions, zero-extent loops and unused allocations go away."""
from tecc import tir
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, BufferStore, IfThenElse
from tecc.tir.transform import remove_no_op
from irhelpers import buf, loop, lowered_func, nop, var

c = tir.const


def test_remove_no_op():
    A = buf("A", (8,))
    i, j = var("i"), var("j")
    store = BufferStore(A, c(1.0), (i,))
    body = S.SeqStmt((
        loop(j, 4, nop()),                                        # empty loop
        IfThenElse(c(True), store, BufferStore(A, c(2.0), (c(0),))),  # constant condition
        IfThenElse(i < 3, nop()),                                 # empty if
        loop(j, 0, BufferStore(A, c(3.0), (j,))),                 # zero extent
        Allocate(buf("T", (4,)), nop()),                          # unused allocation
    ))
    f = lowered_func("f", [A], loop(i, 8, body))
    tir.assert_structural_equal(remove_no_op(f).body, loop(i, 8, store))
    g = lowered_func("f", [A], loop(i, 8, store))
    assert remove_no_op(g) is g
