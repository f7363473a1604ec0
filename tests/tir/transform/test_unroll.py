"""The unroll pass (tir/transform/unroll.py): small constant loops written out, fresh
variables per copy, large or symbolic ones kept with a pragma, auto_unroll_max_step."""
import numpy as np

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.analysis import verify_well_formed
from tecc.tir.stmt import BufferStore, For, ForKind, seq
from tecc.tir.transform import unroll
from irhelpers import assert_same_results, buf, loop, lowered_func, var

c = tir.const


def test_unroll_small_loop():
    A = buf("A", (4,), "int32")
    i = var("i")
    f = lowered_func("f", [A], loop(i, 4, BufferStore(A, i * 3, (i,)), ForKind.UNROLLED))
    g = unroll(f, 16)
    want = seq(*[BufferStore(A, E.Mul(c(k), c(3)), (c(k),)) for k in range(4)])
    tir.assert_structural_equal(g.body, want)
    assert_same_results(f, g, np.zeros(4, np.int32))


def test_unroll_nested_and_fresh_inner_vars():
    A = buf("A", (4, 8), "int32")
    i, j, k = var("i"), var("j"), var("k")
    inner = loop(k, 8, BufferStore(A, i * 10 + j + k, (i * 2 + j, k)))  # serial: stays a loop
    f = lowered_func("f", [A], loop(i, 2, loop(j, 2, inner, ForKind.UNROLLED), ForKind.UNROLLED))
    g = unroll(f, 16)
    assert isinstance(g.body, S.SeqStmt) and len(g.body.seq) == 4
    loop_vars = [s.loop_var for s in g.body.seq]
    assert len(set(loop_vars)) == 4  # each copy binds its own variable
    verify_well_formed(g)
    assert_same_results(f, g, np.zeros((4, 8), np.int32))


def test_unroll_large_or_symbolic_keeps_pragma():
    A = buf("A", (64,), "int32")
    n, i = var("n"), var("i")
    body = BufferStore(A, i, (i,))
    f = lowered_func("f", [A], loop(i, 32, body, ForKind.UNROLLED))
    g = unroll(f, 16)
    tir.assert_structural_equal(g.body, loop(i, 32, body, ForKind.UNROLLED, annotations=[("pragma_unroll", 32)]))
    assert unroll(g, 16) is g  # idempotent
    h = lowered_func("f", [A, n], loop(i, n, body, ForKind.UNROLLED))
    assert unroll(h, 16).body.annotations == (("pragma_unroll", n),)
    assert unroll(f, 32).body is not None and isinstance(unroll(f, 32).body, S.SeqStmt)


def test_auto_unroll_max_step():
    A = buf("A", (4, 4), "int32")
    i, j = var("i"), var("j")
    f = lowered_func("f", [A], loop(i, 4, loop(j, 2, BufferStore(A, i + j, (i, j))),
                                    annotations=[("pragma_auto_unroll_max_step", 8)]))
    g = unroll(f, 16)
    assert isinstance(g.body, S.SeqStmt) and len(g.body.seq) == 8
    assert not any(isinstance(s, For) for s in g.body.seq)
    assert_same_results(f, g, np.zeros((4, 4), np.int32))
    small = lowered_func("f", [A], loop(i, 4, loop(j, 2, BufferStore(A, i + j, (i, j))),
                                        annotations=[("pragma_auto_unroll_max_step", 4)]))
    h = unroll(small, 16)
    assert isinstance(h.body, For) and h.body.annotations == ()  # outer kept, inner unrolled
    assert isinstance(h.body.body, S.SeqStmt)


def test_tvm_unroll_loop_config_unrolls_across_the_function():
    """PassContext(config={"tir.UnrollLoop": {"auto_max_step": n}}) (TVM's, as its
    tensor-core tutorial builds with) acts as the pragma on every loop."""
    import pytest

    import tecc
    from tecc import te
    from tecc.errors import TeccTypeError
    from tecc.tir.transform.pipeline import PassConfigError

    A = te.placeholder((4, 2), name="A")
    B = te.compute((4, 2), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    plain = tecc.lower(s, [A, B], target="c")["main"]
    assert isinstance(plain.body, For)
    with tecc.transform.PassContext(config={"tir.UnrollLoop": {"auto_max_step": 8, "explicit_unroll": True}}):
        mod = tecc.lower(s, [A, B], target="c")
    flat = mod["main"].body
    assert isinstance(flat, S.SeqStmt) and len(flat.seq) == 8
    with pytest.raises(PassConfigError, match=r"'tir.UnrollLoop' has no field 'max_step'; its fields: auto_max_step"):
        tecc.transform.PassContext(config={"tir.UnrollLoop": {"max_step": 8}})
    with pytest.raises(TeccTypeError, match=r"field 'auto_max_step' must be a non-negative int, got -1"):
        tecc.transform.PassContext(config={"tir.UnrollLoop": {"auto_max_step": -1}})
