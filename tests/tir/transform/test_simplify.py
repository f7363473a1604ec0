"""The statement-level simplify pass (tir/transform/simplify.py): guards proven or
refuted from loop ranges, branch and let facts, constant folding of indices, loops of
extent 0 and 1 (before / expected IR)."""
import time

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import (
    AttrStmt, AssertStmt, BufferStore, Evaluate, ForKind, IfThenElse, LetStmt, Range, SizeVar, Var,
    assert_structural_equal, decl_buffer, likely, seq,
)
from tecc.tir.arith import Analyzer
from tecc.tir.transform.simplify import simplify, simplify_stmt
from irhelpers import loop, lowered_func, store, thread_extent, thread_iv

A = decl_buffer((4096,), "float32", "A")


def test_guard_removed_when_proven():
    i = Var("i")
    before = loop(i, 1024, IfThenElse(likely(i < 1024), store(A, 1.0, i)))
    expected = loop(i, 1024, store(A, 1.0, i))
    assert_structural_equal(simplify_stmt(before), expected)


def test_guard_kept_when_not_provable_and_used_inside():
    io, ii = Var("io"), Var("ii")
    idx = io * 32 + ii
    inner = IfThenElse(likely(idx < 1000),
                       seq(store(A, 1.0, idx), IfThenElse(idx < 1000, store(A, 1.0, idx + 1))))
    before = loop(io, 32, loop(ii, 32, inner))
    expected = loop(io, 32, loop(ii, 32, IfThenElse(likely(idx < 1000),
                                                     seq(store(A, 1.0, idx), store(A, 1.0, idx + 1)))))
    assert_structural_equal(simplify_stmt(before), expected)


def test_else_branch_knows_negation():
    i = Var("i")
    body = IfThenElse(i < 10, store(A, 1.0, i),
                      IfThenElse(i >= 10, store(A, 1.0, i + 1), store(A, 1.0, 0)))
    before = loop(i, 20, body)
    expected = loop(i, 20, IfThenElse(i < 10, store(A, 1.0, i), store(A, 1.0, i + 1)))
    assert_structural_equal(simplify_stmt(before), expected)


def test_false_condition_removed():
    i = Var("i")
    before = loop(i, 8, seq(store(A, 1.0, i), IfThenElse(i >= 8, store(A, 1.0, 0))))
    expected = loop(i, 8, store(A, 1.0, i))
    assert_structural_equal(simplify_stmt(before), expected)


def test_loops_of_extent_zero_and_one():
    i, j = Var("i"), Var("j")
    before = seq(loop(i, 0, store(A, 1.0, i)), loop(j, 1, store(A, 1.0, j * 2), min=3))
    assert_structural_equal(simplify_stmt(before), store(A, 1.0, 6))


def test_split_indices_simplified():
    io, ii = Var("io"), Var("ii")
    fused = io * 32 + ii
    before = loop(io, 32, loop(ii, 32, store(A, 1.0, E.FloorDiv(fused, tir.const(32)) * 64
                                             + E.FloorMod(fused, tir.const(32)))))
    expected = loop(io, 32, loop(ii, 32, store(A, 1.0, io * 64 + ii)))
    assert_structural_equal(simplify_stmt(before), expected)


def test_evaluate_constants_dropped():
    i = Var("i")
    before = loop(i, 4, tir.SeqStmt((store(A, 1.0, i), Evaluate(E.Add(tir.const(0), tir.const(1))),
                                     store(A, 1.0, i + 1))))
    expected = loop(i, 4, seq(store(A, 1.0, i), store(A, 1.0, i + 1)))
    assert_structural_equal(simplify_stmt(before), expected)


def test_let_stmt():
    i, t, c = Var("i"), Var("t"), Var("c")
    # a non-trivial value stays bound; its bounds are known in the body
    before = loop(i, 16, LetStmt(t, i * 2, seq(store(A, 1.0, t), IfThenElse(t < 32, store(A, 1.0, t + 1)))))
    expected = loop(i, 16, LetStmt(t, i * 2, seq(store(A, 1.0, t), store(A, 1.0, t + 1))))
    assert_structural_equal(simplify_stmt(before), expected)
    # a constant is substituted
    assert_structural_equal(simplify_stmt(LetStmt(c, tir.const(5), store(A, 1.0, c + 1))), store(A, 1.0, 6))


def test_unchanged_is_same_object():
    i, j = Var("i"), Var("j")
    s = loop(i, 64, loop(j, 64, store(A, A[i * 64 + j] * 2.0, i * 64 + j), ForKind.VECTORIZED), ForKind.PARALLEL)
    assert simplify_stmt(s) is s
    f = lowered_func("f", [A], s)
    assert simplify(f) is f


def test_symbolic_shapes():
    n = SizeVar("n")
    m = Var("m")
    B = decl_buffer((n, m), "float32", "B")
    i, j = Var("i"), Var("j")
    body = loop(i, n, loop(j, m, IfThenElse(likely(tir.all(i < n, j < m)), store(B, 1.0, i * m + j),
                                            IfThenElse(n >= 0, store(B, 1.0, 0)))))
    f = lowered_func("f", [B, n, m], body)
    out = simplify(f)
    expected = loop(i, n, loop(j, m, store(B, 1.0, i * m + j)))
    assert_structural_equal(out.body, expected)


def test_thread_extent_and_assert():
    tx = thread_iv("threadIdx.x", 128)
    body = thread_extent(tx, AssertStmt(tx.var < 128, "in range", IfThenElse(tx.var < 256, store(A, 1.0, tx.var))))
    expected = AttrStmt(tx, "thread_extent", tir.const(128), store(A, 1.0, tx.var))
    assert_structural_equal(simplify_stmt(body), expected)


def test_analyzer_argument_carries_facts():
    k = Var("k")
    ana = Analyzer()
    ana.bind(k, Range(tir.const(0), tir.const(4)))
    s = IfThenElse(k < 4, store(A, 1.0, k))
    assert_structural_equal(simplify_stmt(s, ana), store(A, 1.0, k))
    assert simplify_stmt(s) is s


def _matmul_nest(N=1024, tile=32, kt=4):
    A_ = decl_buffer((N * N,), "float32", "A")
    B_ = decl_buffer((N * N,), "float32", "B")
    C_ = decl_buffer((N * N,), "float32", "C")
    io, jo, ko, ii, ji, ki = [Var(n) for n in ("i.outer", "j.outer", "k.outer", "i.inner", "j.inner",
                                               "k.inner")]
    i, j, k = io * tile + ii, jo * tile + ji, ko * kt + ki
    update = BufferStore(C_, C_[i * N + j] + A_[i * N + k] * B_[k * N + j], (i * N + j,))
    init = BufferStore(C_, tir.const(0.0), (i * N + j,))
    body = loop(ki, kt, IfThenElse(likely(k < N), update), ForKind.UNROLLED)
    body = loop(ji, tile, body, ForKind.VECTORIZED)
    body = loop(ii, tile, body)
    body = loop(ko, N // kt, body)
    body = seq(loop(ii, tile, loop(ji, tile, init)), body)
    body = loop(jo, N // tile, body)
    return loop(io, N // tile, body, ForKind.PARALLEL)


def test_matmul_schedule_is_fast_and_clean():
    nest = _matmul_nest()
    t0 = time.perf_counter()
    out = simplify_stmt(nest)
    elapsed = time.perf_counter() - t0
    text = str(out)
    assert "if" not in text  # k.outer*4 + k.inner < 1024 is proven
    assert "C[i.outer*32768 + i.inner*1024 + j.outer*32 + j.inner]" in text
    assert elapsed < 0.25, f"simplify took {elapsed * 1e3:.1f} ms"
    assert simplify_stmt(out) is out  # a fixed point
