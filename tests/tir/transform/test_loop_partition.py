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
