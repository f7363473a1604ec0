"""Tests of the statement-level simplify pass (before / expected IR)."""
import time

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import (
    AttrStmt, AssertStmt, BufferStore, Evaluate, For, ForKind, IfThenElse, IterVar, LetStmt, PrimFunc,
    Range, SizeVar, Var, assert_structural_equal, decl_buffer, likely, seq,
)
from tecc.tir.arith import Analyzer
from tecc.tir.transform.simplify import simplify, simplify_stmt


def ci(v):
    return E.IntImm("int32", v)


def store(buf, idx, value=None):
    return BufferStore(buf, value if value is not None else tir.const(1.0), (tir.convert(idx),))


A = decl_buffer((4096,), "float32", "A")


def test_guard_removed_when_proven():
    i = Var("i")
    before = For(i, ci(0), ci(1024), ForKind.SERIAL, IfThenElse(likely(i < 1024), store(A, i)))
    expected = For(i, ci(0), ci(1024), ForKind.SERIAL, store(A, i))
    assert_structural_equal(simplify_stmt(before), expected)


def test_guard_kept_when_not_provable_and_used_inside():
    io, ii = Var("io"), Var("ii")
    idx = io * 32 + ii
    inner = IfThenElse(likely(idx < 1000),
                       seq(store(A, idx), IfThenElse(idx < 1000, store(A, idx + 1))))
    before = For(io, ci(0), ci(32), ForKind.SERIAL, For(ii, ci(0), ci(32), ForKind.SERIAL, inner))
    expected = For(io, ci(0), ci(32), ForKind.SERIAL, For(ii, ci(0), ci(32), ForKind.SERIAL,
                   IfThenElse(likely(idx < 1000), seq(store(A, idx), store(A, idx + 1)))))
    assert_structural_equal(simplify_stmt(before), expected)


def test_else_branch_knows_negation():
    i = Var("i")
    body = IfThenElse(i < 10, store(A, i), IfThenElse(i >= 10, store(A, i + 1), store(A, 0)))
    before = For(i, ci(0), ci(20), ForKind.SERIAL, body)
    expected = For(i, ci(0), ci(20), ForKind.SERIAL, IfThenElse(i < 10, store(A, i), store(A, i + 1)))
    assert_structural_equal(simplify_stmt(before), expected)


def test_false_condition_removed():
    i = Var("i")
    before = For(i, ci(0), ci(8), ForKind.SERIAL, seq(store(A, i), IfThenElse(i >= 8, store(A, 0))))
    expected = For(i, ci(0), ci(8), ForKind.SERIAL, store(A, i))
    assert_structural_equal(simplify_stmt(before), expected)


def test_loops_of_extent_zero_and_one():
    i, j = Var("i"), Var("j")
    before = seq(For(i, ci(0), ci(0), ForKind.SERIAL, store(A, i)),
                 For(j, ci(3), ci(1), ForKind.SERIAL, store(A, j * 2)))
    assert_structural_equal(simplify_stmt(before), store(A, 6))


def test_split_indices_simplified():
    io, ii = Var("io"), Var("ii")
    fused = io * 32 + ii
    before = For(io, ci(0), ci(32), ForKind.SERIAL, For(ii, ci(0), ci(32), ForKind.SERIAL,
                 store(A, E.FloorDiv(fused, ci(32)) * 64 + E.FloorMod(fused, ci(32)))))
    expected = For(io, ci(0), ci(32), ForKind.SERIAL, For(ii, ci(0), ci(32), ForKind.SERIAL,
                   store(A, io * 64 + ii)))
    assert_structural_equal(simplify_stmt(before), expected)


def test_evaluate_constants_dropped():
    i = Var("i")
    before = For(i, ci(0), ci(4), ForKind.SERIAL,
                 tir.SeqStmt((store(A, i), Evaluate(E.Add(ci(0), ci(1))), store(A, i + 1))))
    expected = For(i, ci(0), ci(4), ForKind.SERIAL, seq(store(A, i), store(A, i + 1)))
    assert_structural_equal(simplify_stmt(before), expected)


def test_let_stmt():
    i, t, c = Var("i"), Var("t"), Var("c")
    # a non-trivial value stays bound; its bounds are known in the body
    before = For(i, ci(0), ci(16), ForKind.SERIAL,
                 LetStmt(t, i * 2, seq(store(A, t), IfThenElse(t < 32, store(A, t + 1)))))
    expected = For(i, ci(0), ci(16), ForKind.SERIAL, LetStmt(t, i * 2, seq(store(A, t), store(A, t + 1))))
    assert_structural_equal(simplify_stmt(before), expected)
    # a constant is substituted
    assert_structural_equal(simplify_stmt(LetStmt(c, ci(5), store(A, c + 1))), store(A, 6))


def test_unchanged_is_same_object():
    i, j = Var("i"), Var("j")
    s = For(i, ci(0), ci(64), ForKind.PARALLEL,
            For(j, ci(0), ci(64), ForKind.VECTORIZED, store(A, i * 64 + j, A[i * 64 + j] * 2.0)))
    assert simplify_stmt(s) is s
    f = PrimFunc((A.data,), s, {A.data: A}, {"global_symbol": "f"})
    assert simplify(f) is f


def test_symbolic_shapes():
    n = SizeVar("n")
    m = Var("m")
    B = decl_buffer((n, m), "float32", "B")
    i, j = Var("i"), Var("j")
    body = For(i, ci(0), n, ForKind.SERIAL, For(j, ci(0), m, ForKind.SERIAL,
               IfThenElse(likely(tir.all(i < n, j < m)), store(B, i * m + j),
                          IfThenElse(n >= 0, store(B, 0)))))
    f = PrimFunc((B.data, n, m), body, {B.data: B}, {"global_symbol": "f"})
    out = simplify(f)
    expected = For(i, ci(0), n, ForKind.SERIAL, For(j, ci(0), m, ForKind.SERIAL, store(B, i * m + j)))
    assert_structural_equal(out.body, expected)


def test_thread_extent_and_assert():
    tx = IterVar(Range(ci(0), ci(128)), Var("threadIdx.x"), tir.IterVarType.THREAD_INDEX, "threadIdx.x")
    body = AttrStmt(tx, "thread_extent", ci(128),
                    AssertStmt(tx.var < 128, "in range", IfThenElse(tx.var < 256, store(A, tx.var))))
    expected = AttrStmt(tx, "thread_extent", ci(128), store(A, tx.var))
    assert_structural_equal(simplify_stmt(body), expected)


def test_analyzer_argument_carries_facts():
    k = Var("k")
    ana = Analyzer()
    ana.bind(k, Range(ci(0), ci(4)))
    s = IfThenElse(k < 4, store(A, k))
    assert_structural_equal(simplify_stmt(s, ana), store(A, k))
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
    body = For(ki, ci(0), ci(kt), ForKind.UNROLLED, IfThenElse(likely(k < N), update))
    body = For(ji, ci(0), ci(tile), ForKind.VECTORIZED, body)
    body = For(ii, ci(0), ci(tile), ForKind.SERIAL, body)
    body = For(ko, ci(0), ci(N // kt), ForKind.SERIAL, body)
    body = seq(For(ii, ci(0), ci(tile), ForKind.SERIAL, For(ji, ci(0), ci(tile), ForKind.SERIAL, init)), body)
    body = For(jo, ci(0), ci(N // tile), ForKind.SERIAL, body)
    return For(io, ci(0), ci(N // tile), ForKind.PARALLEL, body)


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
