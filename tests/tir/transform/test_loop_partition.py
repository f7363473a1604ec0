"""The loop_partition pass (tir/transform/loop_partition.py): loops guarded by
``likely`` conditions are split into a guard-free main part and the edges."""
from dataclasses import replace

import numpy as np
import pytest

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.analysis import verify_well_formed
from tecc.tir.stmt import BufferStore, ForKind, IfThenElse, seq
from tecc.tir.transform import loop_partition, vectorize
from irhelpers import assert_same_results, buf, loop, lowered_func, var

c = tir.const
RNG = np.random.default_rng(0)


def _split_guarded(N, f=4, symbolic=False):
    n = tir.SizeVar("n") if symbolic else None
    size = n if symbolic else N
    A, B = buf("A", (size,)), buf("B", (size,))
    io, ii = var("io"), var("ii")
    idx = io * f + ii
    guarded = IfThenElse(tir.likely(idx < size), BufferStore(B, A[idx] + 1.0, (idx,)))
    extent = (size + (f - 1)) // f
    args = [A, B, n] if symbolic else [A, B]
    return lowered_func("f", args, loop(io, extent, loop(ii, f, guarded))), (A, B, io, ii)


def test_loop_partition_constant_split():
    f, (A, B, io, ii) = _split_guarded(10)
    g = loop_partition(f)
    ii2 = var("ii")
    tail_idx = E.Add(E.Mul(c(2), c(4)), ii2)
    want = seq(
        loop(io, 2, loop(ii, 4, BufferStore(B, A[io * 4 + ii] + 1.0, (io * 4 + ii,)))),
        loop(ii2, 2, BufferStore(B, E.BufferLoad(A, (tail_idx,)) + 1.0, (tail_idx,))),
    )
    tir.assert_structural_equal(g.body, want)
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(10, dtype=np.float32), np.zeros(10, np.float32))


@pytest.mark.parametrize("N", [1, 3, 4, 7, 8, 13])
def test_loop_partition_symbolic_split_is_exact(N):
    f, _ = _split_guarded(None, f=4, symbolic=True)
    g = loop_partition(f)
    assert g is not f
    verify_well_formed(g)
    # the first piece is the main loop, free of the guard
    main = g.body.seq[0] if isinstance(g.body, S.SeqStmt) else g.body
    found = []
    tir.post_order_visit(main, lambda x: found.append(x) if isinstance(x, IfThenElse) else None)
    assert not found
    assert_same_results(f, g, RNG.random(N, dtype=np.float32), np.zeros(N, np.float32))


def test_loop_partition_lower_and_upper_guard():
    A, B = buf("A", (12,)), buf("B", (10,))
    x = var("x")
    cond = tir.all(x >= 2, x < 8)
    f = lowered_func("f", [A, B], loop(x, 10, IfThenElse(tir.likely(cond), BufferStore(B, A[x + 2], (x,)),
                                                         BufferStore(B, c(0.0), (x,)))))
    g = loop_partition(f)
    assert isinstance(g.body, S.SeqStmt) and len(g.body.seq) == 3
    head, main, tail = g.body.seq
    assert isinstance(main.body, BufferStore) and (main.min.value, main.extent.value) == (2, 6)
    assert isinstance(head.body, BufferStore) and isinstance(tail.body, BufferStore)  # else branches
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(12, dtype=np.float32), np.ones(10, np.float32))


def test_loop_partition_leaves_nonlinear_guard():
    A = buf("A", (16,))
    x = var("x")
    f = lowered_func("f", [A], loop(x, 16, IfThenElse(tir.likely(x * x < 10), BufferStore(A, c(1.0), (x,)))))
    assert loop_partition(f) is f


def test_loop_partition_then_vectorize():
    f, _ = _split_guarded(30, f=8)
    io = f.body.loop_var
    g0 = f.with_body(loop(io, f.body.extent, replace(f.body.body, kind=ForKind.VECTORIZED)))
    g = vectorize(loop_partition(g0))
    main = g.body.seq[0]
    assert isinstance(main.body, BufferStore) and main.body.indices[0].lanes == 8
    assert_same_results(g0, g, RNG.random(30, dtype=np.float32), np.zeros(30, np.float32))


# ---------------------------------------------------------------------------------------
# lazy selects (an inlined pad): the main part reads the value alone
# ---------------------------------------------------------------------------------------
def _selects(stmt):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, E.Call) and n.op == "if_then_else"
                         else None)
    return found


def test_loop_partition_select_of_padding_both_edges():
    # B[x] = A[x-1] + A[x+1] with zero padding: head x=0, main [1, 7) guard-free, tail x=7
    A, B = buf("A", (8,)), buf("B", (8,))
    x = var("x")
    left = tir.if_then_else(x >= 1, A[x - 1], c(0.0))
    right = tir.if_then_else(x < 7, A[x + 1], c(0.0))
    f = lowered_func("f", [A, B], loop(x, 8, BufferStore(B, left + right, (x,))))
    g = loop_partition(f)
    assert isinstance(g.body, S.SeqStmt) and len(g.body.seq) == 3
    head, main, tail = g.body.seq
    assert isinstance(main, S.For) and (main.min.value, main.extent.value) == (1, 6)
    assert not _selects(main)
    tir.assert_structural_equal(main.body, BufferStore(B, A[x - 1] + A[x + 1], (x,)))
    # the edges are single iterations, inlined, with the failing select's else value
    assert isinstance(head, BufferStore) and isinstance(tail, BufferStore)
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(8, dtype=np.float32), np.zeros(8, np.float32))


def test_loop_partition_select_keeps_the_conjuncts_of_other_loops():
    # a 2-D pad: partitioning the row loop leaves the column's conjunct in the main rows
    A, B = buf("A", (4, 8)), buf("B", (4, 8))
    y, x = var("y"), var("x")
    sel = tir.if_then_else(tir.all(y >= 1, x >= 1), A[y - 1, x - 1], c(-1.0))
    f = lowered_func("f", [A, B], loop(y, 4, loop(x, 8, BufferStore(B, sel, (y, x)))))
    g = loop_partition(f)
    head, main = g.body.seq
    # the first row fails the row conjunct everywhere: the else value, no select
    assert not _selects(head)
    # the other rows: the column loop partitioned in turn, nothing left to select
    assert isinstance(main, S.For) and (main.min.value, main.extent.value) == (1, 3)
    assert not _selects(main.body.seq[1])
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random((4, 8), dtype=np.float32), np.zeros((4, 8), np.float32))


def test_loop_partition_leaves_select_on_a_vectorized_loop():
    # partitioning would split the vector: the lanes select instead
    A, B = buf("A", (8,)), buf("B", (8,))
    x = var("x")
    sel = tir.if_then_else(x >= 1, A[x - 1], c(0.0))
    f = lowered_func("f", [A, B], loop(x, 8, BufferStore(B, sel, (x,)), kind=ForKind.VECTORIZED))
    assert loop_partition(f) is f


def test_loop_partition_leaves_a_select_object_used_twice():
    # one select object at two places: the proof made for one place need not hold at the other
    A, B = buf("A", (8,)), buf("B", (16,))
    x, j = var("x"), var("j")
    sel = tir.if_then_else(x + j >= 2, A[x], c(0.0))
    body = seq(loop(j, 1, BufferStore(B, sel, (x,))), loop(j, 3, BufferStore(B, sel, (x + 8,))))
    f = lowered_func("f", [A, B], loop(x, 8, body))
    assert loop_partition(f) is f


def test_loop_partition_select_then_vectorize_strided_pool():
    # what a max pool of stride 2 with an inlined pad leaves: after partitioning, the main
    # part vectorizes (a stride-2 ramp; the row condition, uniform over the lanes, selects
    # whole vectors)
    from tecc.tir import op as tirop

    A, B = buf("A", (64,)), buf("B", (32,))
    r, x, v = var("r"), var("x"), var("v")
    # (the row condition is not linear in r, as a fused row loop's r % rows >= 1)
    sel = tir.if_then_else(tir.all(tir.floormod(r, 3) >= 1, x * 16 + v * 2 >= 1), A[x * 16 + v * 2 - 1],
                           c(-3.0e38))
    body = loop(v, 8, BufferStore(B, tirop.max(B[x * 8 + v], sel), (x * 8 + v,)), kind=ForKind.VECTORIZED)
    f = lowered_func("f", [A, B], loop(r, 4, loop(x, 4, body)))
    g = vectorize(loop_partition(f))
    vector_selects = [n for n in _selects(g.body) if n.dtype == "float32x8"]
    assert vector_selects, "the main part is not vectorized"
    assert all(n.args[0].dtype == "bool" for n in vector_selects)  # one condition for all lanes
    assert_same_results(f, g, RNG.random(64, dtype=np.float32), RNG.random(32, dtype=np.float32))


def test_loop_partition_keeps_a_parallel_loop_one_loop_with_a_branch_per_piece():
    # a parallel task loop whose last task is partial (10 rows of 4 per task: 3 tasks).
    # Pieces run one after the other would leave the last task to one core; here
    # the pieces become branches of one parallel loop over all tasks
    A, B = buf("A", (10,)), buf("B", (10,))
    io, ii = var("io"), var("ii")
    idx = io * 4 + ii
    guarded = IfThenElse(tir.likely(idx < 10), BufferStore(B, A[idx] + 1.0, (idx,)))
    f = lowered_func("f", [A, B], S.For(io, c(0), c(3), ForKind.PARALLEL, loop(ii, 4, guarded)))
    g = loop_partition(f)
    assert isinstance(g.body, S.For) and g.body.kind is ForKind.PARALLEL
    assert (g.body.min.value, g.body.extent.value) == (0, 3)
    branch = g.body.body
    assert isinstance(branch, IfThenElse)
    tir.assert_structural_equal(branch.condition, io < 2)
    # the main branch is free of the guard; the tail (io = 2) runs its 2 rows
    tir.assert_structural_equal(branch.then_case, loop(ii, 4, BufferStore(B, A[idx] + 1.0, (idx,))))
    found = []
    tir.post_order_visit(branch.else_case, lambda x: found.append(x) if isinstance(x, IfThenElse) else None)
    assert not found and isinstance(branch.else_case, S.For) and branch.else_case.extent.value == 2
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(10, dtype=np.float32), np.zeros(10, np.float32))


def test_loop_partition_of_a_parallel_loop_drops_the_iterations_whose_guard_always_fails():
    # the last block of a pipeline's tasks (TVM's test_add_pipeline): only 9 of the
    # 13 parallel iterations are inside the 256 elements; the loop shrinks to them
    A, B = buf("A", (256,)), buf("B", (256,))
    x = var("x")
    idx = 19 * 13 + x - 247
    guarded = IfThenElse(tir.likely(19 * 13 + x < 256), BufferStore(B, A[idx] + 1.0, (idx,)))
    f = lowered_func("f", [A, B], S.For(x, c(0), c(13), ForKind.PARALLEL, guarded))
    g = loop_partition(f)
    assert isinstance(g.body, S.For) and g.body.kind is ForKind.PARALLEL
    assert (g.body.min.value, g.body.extent.value) == (0, 9)
    assert isinstance(g.body.body, BufferStore)
    verify_well_formed(g)
    assert_same_results(f, g, RNG.random(256, dtype=np.float32), np.zeros(256, np.float32))
