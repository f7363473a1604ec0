"""The C backend: hand-built flattened PrimFuncs, compiled and compared with numpy."""
import math
import re

import numpy as np
import pytest

from tecc import tir
from tecc.cpu_fallback import CodeGenC, build_c, generate_c
from tecc.errors import CompileError
from tecc.runtime import KernelError
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.op import const
from irhelpers import (  # noqa: F401  (private_cache_dir: an autouse fixture)
    bcast, buf, loop, make_func, private_cache_dir, ramp, store,
)

ForKind = S.ForKind


# ---------------------------------------------------------------------------
# vector add: parallel + vectorized loops, symbolic n called with two sizes
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vadd():
    n = E.Var("n")
    A, B, C = buf("A", (n,)), buf("B", (n,)), buf("C", (n,))
    io, ii = E.Var("io"), E.Var("ii")
    idx = io * 8 + ii
    body = loop(io, n // 8, loop(ii, 8, store(C, A[idx] + B[idx], idx), ForKind.VECTORIZED),
                ForKind.PARALLEL)
    return build_c(make_func("vadd", [A, B, C, n], body))


def test_vadd_two_sizes(vadd):
    src = vadd.get_source()
    # guided: a thread held up by another process leaves its tail to the others
    assert "#pragma omp parallel for schedule(guided)" in src
    assert "#pragma omp simd" in src
    assert "int32_t vadd(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int32_t n)" in src
    rng = np.random.default_rng(0)
    for size in (64, 128):
        a = rng.random(size, dtype=np.float32)
        b = rng.random(size, dtype=np.float32)
        c = np.zeros(size, np.float32)
        vadd(a, b, c)
        np.testing.assert_array_equal(c, a + b)


# ---------------------------------------------------------------------------
# reduction with an Allocate'd temporary (stack), heap temporaries
# ---------------------------------------------------------------------------

def test_row_sum_with_stack_and_heap_temporaries():
    m, k = 16, 40
    A, B = buf("A", (m * k,)), buf("B", (m,))
    acc = buf("acc", (1,))
    i, r = E.Var("i"), E.Var("r")
    body = loop(i, m, S.Allocate(acc, tir.stmt.seq(
        store(acc, 0.0, 0),
        loop(r, k, store(acc, acc[0] + A[i * k + r], 0)),
        store(B, acc[0], i))), ForKind.PARALLEL)
    # a large constant-size temporary (heap) and a symbolic-size one (heap)
    n = E.Var("n")
    X, Y = buf("X", (n,)), buf("Y", (n,))
    big = buf("big", (30000,))
    sym = buf("sym", (n,))
    j = E.Var("j")
    body2 = S.Allocate(big, S.Allocate(sym, tir.stmt.seq(
        loop(j, n, store(sym, X[j] * 2.0, j)),
        loop(j, n, store(big, sym[j] + 1.0, j)),
        loop(j, n, store(Y, big[j], j)))))
    f = build_c(make_func("row_sum", [A, B], body))
    g = build_c(make_func("heap_tmp", [X, Y, n], body2))
    assert "float acc[1] __attribute__((aligned(64)));" in f.get_source()
    src2 = g.get_source()
    assert "tecc_alloc(" in src2 and "free(big);" in src2 and "free(sym);" in src2
    a = np.random.default_rng(1).random(m * k, dtype=np.float32)
    b = np.zeros(m, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, a.reshape(m, k).sum(1), rtol=1e-5)
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros(1000, np.float32)
    g(x, y)
    np.testing.assert_array_equal(y, x * 2 + 1)


# ---------------------------------------------------------------------------
# integer division semantics
# ---------------------------------------------------------------------------

def test_floordiv_floormod_truncdiv_match_numpy():
    n = 64
    A, D = buf("A", (n,), "int32"), buf("D", (n,), "int32")
    rows = [
        lambda a, d: tir.floordiv(a, 3), lambda a, d: tir.floormod(a, 3),
        lambda a, d: tir.floordiv(a, 4), lambda a, d: tir.floormod(a, 4),
        lambda a, d: tir.floordiv(a, d), lambda a, d: tir.floormod(a, d),
        lambda a, d: tir.truncdiv(a, d), lambda a, d: tir.truncmod(a, d),
        lambda a, d: tir.floordiv(a, -3), lambda a, d: tir.floormod(a, -3),
        lambda a, d: tir.floordiv(a, 1),
    ]
    O = buf("O", (len(rows) * n,), "int32")
    i = E.Var("i")
    body = tir.stmt.seq(*[loop(i, n, store(O, fn(A[i], D[i]), r * n + i)) for r, fn in enumerate(rows)])
    f = build_c(make_func("divs", [A, D, O], body))
    src = f.get_source()
    assert "tecc_floordiv_int32" in src and ">> 2" in src and "& 3" in src
    rng = np.random.default_rng(2)
    a = rng.integers(-50, 50, n).astype(np.int32)
    d = rng.integers(1, 9, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    o = np.zeros(len(rows) * n, np.int32)
    f(a, d, o)
    o = o.reshape(len(rows), n)
    trunc = (np.abs(a) // np.abs(d)) * np.sign(a) * np.sign(d)
    expect = [a // 3, a % 3, a // 4, a % 4, a // d, a % d, trunc, np.fmod(a, d), a // -3, a % -3, a]
    for r, e in enumerate(expect):
        np.testing.assert_array_equal(o[r], e, err_msg=f"row {r}")


# ---------------------------------------------------------------------------
# conditionals: if_then_else, select, likely guards, IfThenElse chains
# ---------------------------------------------------------------------------

def test_conditionals():
    n = E.Var("n")
    A, B, C = buf("A", (n,)), buf("B", (n,)), buf("C", (n,))
    i = E.Var("i")
    guarded = S.IfThenElse(tir.likely(i < n - 2), store(B, A[i + 2], i), store(B, -1.0, i))
    chain = S.IfThenElse(A[i] < 0.25, store(C, 0.0, i),
                         S.IfThenElse(A[i] < 0.5, store(C, 1.0, i),
                                      store(C, tir.select(A[i] < 0.75, 2.0, 3.0), i)))
    lazy = store(B, B[i] + tir.if_then_else(i >= 1, A[E.Max(i - 1, const(0))], 100.0), i)
    body = loop(i, n, tir.stmt.seq(guarded, chain, lazy))
    f = build_c(make_func("conds", [A, B, C, n], body))
    src = f.get_source()
    assert "__builtin_expect(!!(" in src and "} else if (" in src
    a = np.random.default_rng(3).random(50, dtype=np.float32)
    b = np.zeros(50, np.float32)
    c = np.zeros(50, np.float32)
    f(a, b, c)
    eb = np.concatenate([a[2:], [-1, -1]]).astype(np.float32)
    eb = eb + np.concatenate([[100], a[:-1]]).astype(np.float32)
    np.testing.assert_allclose(b, eb, rtol=1e-6)
    np.testing.assert_array_equal(c, np.digitize(a, [0.25, 0.5, 0.75]).astype(np.float32))


# ---------------------------------------------------------------------------
# math intrinsics
# ---------------------------------------------------------------------------

_verf = np.vectorize(math.erf)

_UNARY = [
    ("exp", tir.exp, np.exp), ("log", tir.log, np.log), ("sqrt", tir.sqrt, np.sqrt),
    ("rsqrt", tir.rsqrt, lambda x: 1 / np.sqrt(x)), ("tanh", tir.tanh, np.tanh),
    ("sigmoid", tir.sigmoid, lambda x: 1 / (1 + np.exp(-x))), ("erf", tir.erf, _verf),
    ("floor", tir.floor, np.floor), ("ceil", tir.ceil, np.ceil), ("round", tir.round, np.round),
    ("abs", tir.abs, np.abs), ("log2", tir.log2, np.log2), ("exp10", tir.exp10, lambda x: 10.0 ** x),
    ("sin", tir.sin, np.sin), ("log1p", tir.log1p, np.log1p),
]


def test_math_intrinsics_float32_float64_int():
    n = 40
    X, Y = buf("X", (n,)), buf("Y", (n,))
    O = buf("O", ((len(_UNARY) + 3) * n,))
    X64, O64 = buf("X64", (n,), "float64"), buf("O64", (2 * n,), "float64")
    I, OI = buf("I", (n,), "int32"), buf("OI", (2 * n,), "int32")
    i = E.Var("i")
    stmts = [loop(i, n, store(O, fn(X[i]), r * n + i)) for r, (_, fn, _) in enumerate(_UNARY)]
    k = len(_UNARY)
    stmts += [loop(i, n, store(O, tir.power(X[i], Y[i]), k * n + i)),
              loop(i, n, store(O, tir.fmod(X[i], Y[i]), (k + 1) * n + i)),
              loop(i, n, store(O, X[i] % Y[i], (k + 2) * n + i)),
              loop(i, n, store(O64, tir.exp(X64[i]), i)),
              loop(i, n, store(O64, tir.tanh(X64[i]), n + i)),
              loop(i, n, store(OI, tir.abs(I[i]), i)),
              loop(i, n, store(OI, tir.popcount(I[i]), n + i))]
    f = build_c(make_func("maths", [X, Y, O, X64, O64, I, OI], tir.stmt.seq(*stmts)))
    src = f.get_source()
    assert "expf(" in src and "tanh(" in src and "erff(" in src
    rng = np.random.default_rng(4)
    x = (rng.random(n) * 3 + 0.1).astype(np.float32)
    x[:4] = [0.5, 1.5, 2.5, 3.5]  # round half to even, as numpy
    y = (rng.random(n) + 0.5).astype(np.float32)
    o = np.zeros((k + 3) * n, np.float32)
    x64 = rng.random(n) * 4 - 2
    o64 = np.zeros(2 * n)
    iv = rng.integers(-1000, 1000, n).astype(np.int32)
    oi = np.zeros(2 * n, np.int32)
    f(x, y, o, x64, o64, iv, oi)
    o = o.reshape(k + 3, n)
    for r, (name, _, ref) in enumerate(_UNARY):
        np.testing.assert_allclose(o[r], ref(x.astype(np.float64)).astype(np.float32), rtol=2e-6,
                                   atol=1e-7, err_msg=name)
    np.testing.assert_allclose(o[k], np.power(x, y), rtol=2e-6)
    np.testing.assert_allclose(o[k + 1], np.fmod(x, y), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(o[k + 2], np.mod(x, y), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(o64[:n], np.exp(x64), rtol=1e-14)
    np.testing.assert_allclose(o64[n:], np.tanh(x64), rtol=1e-14)
    np.testing.assert_array_equal(oi[:n], np.abs(iv))
    np.testing.assert_array_equal(oi[n:], [bin(int(v) & 0xFFFFFFFF).count("1") for v in iv])


# ---------------------------------------------------------------------------
# vectors: Ramp / Broadcast loads and stores
# ---------------------------------------------------------------------------

def test_vector_loads_stores_and_ops():
    n = 64
    A, B, A2 = buf("A", (n,)), buf("B", (n,)), buf("A2", (2 * n,))
    C, D, G = buf("C", (n,)), buf("D", (n,)), buf("G", (n,))
    W = buf("W", (2 * n,))
    F, X = buf("F", (3 * n,)), buf("X", (n,))
    H, M = buf("H", (n,), "int32"), buf("M", (n,), "bool")
    i = E.Var("i")
    base = i * 8
    r = ramp(base, 8)
    a, b = A[r], B[r]
    body = loop(i, n // 8, tir.stmt.seq(
        S.BufferStore(C, a * bcast(2.0, 8) + b, (r,)),
        S.BufferStore(D, A2[ramp(i * 16, 8, 2)], (r,)),                      # strided gather
        S.BufferStore(W, b, (ramp(i * 16 + 1, 8, 2),)),                      # strided scatter
        S.BufferStore(F, E.Select(E.GT(a, b), a, b), (r,)),                 # vector select
        S.BufferStore(F, E.Max(a, b) - E.Min(a, b), (ramp(base + n, 8),)),  # vector min/max
        S.BufferStore(F, tir.exp(a), (ramp(base + 2 * n, 8),)),             # vector math
        S.BufferStore(G, tir.if_then_else(E.LT(r, E.Broadcast(const(20), 8)), a, bcast(0.0, 8)), (r,)),
        S.BufferStore(H, tir.floordiv(r - E.Broadcast(const(30), 8), E.Broadcast(const(7), 8)), (r,)),
        S.BufferStore(X, E.Cast("float32x8", r), (r,)),
        S.BufferStore(M, E.And(E.GT(a, b), E.Not(E.GT(a, bcast(0.9, 8)))), (r,)),
    ))
    f = build_c(make_func("vec", [A, B, A2, C, D, W, F, G, H, X, M], body))
    src = f.get_source()
    assert "typedef float tecc_float32x8 __attribute__((vector_size(32)));" in src
    assert "tecc_load_float32x8(A + i * 8)" in src
    rng = np.random.default_rng(5)
    av, bv = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a2 = rng.random(2 * n, dtype=np.float32)
    c, d, g, x = (np.zeros(n, np.float32) for _ in range(4))
    w = np.full(2 * n, -1.0, np.float32)
    fo = np.zeros(3 * n, np.float32)
    h = np.zeros(n, np.int32)
    m = np.zeros(n, bool)
    f(av, bv, a2, c, d, w, fo, g, h, x, m)
    np.testing.assert_allclose(c, av * 2 + bv, rtol=1e-6)
    np.testing.assert_array_equal(d, a2[::2])
    np.testing.assert_array_equal(w[1::2], bv)
    np.testing.assert_array_equal(w[::2], -1.0)
    np.testing.assert_array_equal(fo[:n], np.maximum(av, bv))
    np.testing.assert_allclose(fo[n:2 * n], np.abs(av - bv), rtol=1e-6)
    np.testing.assert_allclose(fo[2 * n:], np.exp(av), rtol=1e-6)
    np.testing.assert_array_equal(g, np.where(np.arange(n) < 20, av, 0))
    np.testing.assert_array_equal(h, (np.arange(n) - 30) // 7)
    np.testing.assert_array_equal(x, np.arange(n, dtype=np.float32))
    np.testing.assert_array_equal(m, (av > bv) & ~(av > 0.9))
    assert m.view(np.uint8).max() <= 1  # stored booleans are 0/1


def test_vector_three_lanes_and_local_accumulator():
    # lanes that are not a power of two: only the real lanes are touched
    n = 63
    A, B = buf("A", (n,)), buf("B", (n + 1,))
    j = E.Var("j")
    body3 = loop(j, n // 3, S.BufferStore(B, A[ramp(j * 3, 3)] + bcast(1.0, 3), (ramp(j * 3, 3),)))
    # a 16-float accumulator accessed with vector loads/stores at constant offsets
    m, k = 8, 12
    X, Y = buf("X", (m * k * 16,)), buf("Y", (m * 16,))
    acc = buf("acc", (16,))
    i, t = E.Var("i"), E.Var("t")

    def acc_update(off):
        return S.BufferStore(acc, acc[ramp(off, 8)] + X[ramp(i * (k * 16) + t * 16 + off, 8)], (ramp(off, 8),))

    body_acc = loop(i, m, S.Allocate(acc, tir.stmt.seq(
        S.BufferStore(acc, bcast(0.0, 8), (ramp(0, 8),)),
        S.BufferStore(acc, bcast(0.0, 8), (ramp(8, 8),)),
        loop(t, k, tir.stmt.seq(acc_update(0), acc_update(8))),
        S.BufferStore(Y, acc[ramp(0, 8)], (ramp(i * 16, 8),)),
        S.BufferStore(Y, acc[ramp(8, 8)], (ramp(i * 16 + 8, 8),)))), ForKind.PARALLEL)
    f3 = build_c(make_func("lanes3", [A, B], body3))
    facc = build_c(make_func("acc16", [X, Y], body_acc))
    assert "vector_size(16)" in f3.get_source()  # float32x3 stored in 4 lanes
    a = np.arange(n, dtype=np.float32)
    b = np.full(n + 1, 7.0, np.float32)
    f3(a, b)
    np.testing.assert_array_equal(b[:n], a + 1)
    assert b[n] == 7.0
    x = np.random.default_rng(6).random(m * k * 16, dtype=np.float32)
    y = np.zeros(m * 16, np.float32)
    facc(x, y)
    np.testing.assert_allclose(y, x.reshape(m, k, 16).sum(1).ravel(), rtol=1e-5)


# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

def test_small_integer_and_bool_dtypes():
    n = 32
    A8, B8, C8 = buf("A8", (n,), "int8"), buf("B8", (n,), "int8"), buf("C8", (n,), "int8")
    NEG = buf("NEG", (n,), "bool")
    U, V, OU = buf("U", (n,), "uint8"), buf("V", (n,), "uint8"), buf("OU", (3 * n,), "uint8")
    Fin, Mb, Out = buf("Fin", (n,)), buf("Mb", (n,), "bool"), buf("Out", (n,))
    i = E.Var("i")
    body = loop(i, n, tir.stmt.seq(
        store(C8, A8[i] + B8[i], i),
        store(NEG, E.LT(A8[i] + B8[i], const(0, "int8")), i),           # compares the wrapped sum
        store(OU, U[i] - V[i], i),
        store(OU, ~U[i], n + i),
        store(OU, U[i] >> const(1, "uint8"), 2 * n + i),
        store(Out, tir.if_then_else(Mb[i], Fin[i], -Fin[i]), i),
    ))
    f = build_c(make_func("small_ints", [A8, B8, C8, NEG, U, V, OU, Fin, Mb, Out], body))
    rng = np.random.default_rng(7)
    a8 = rng.integers(-128, 128, n).astype(np.int8)
    b8 = rng.integers(-128, 128, n).astype(np.int8)
    a8[0], b8[0] = 100, 100
    c8 = np.zeros(n, np.int8)
    neg = np.zeros(n, bool)
    u = rng.integers(0, 256, n).astype(np.uint8)
    v = rng.integers(0, 256, n).astype(np.uint8)
    ou = np.zeros(3 * n, np.uint8)
    fin = rng.random(n, dtype=np.float32)
    mb = rng.random(n) > 0.5
    out = np.zeros(n, np.float32)
    f(a8, b8, c8, neg, u, v, ou, fin, mb, out)
    wrapped = (a8.astype(np.int16) + b8).astype(np.int8)
    np.testing.assert_array_equal(c8, wrapped)
    np.testing.assert_array_equal(neg, wrapped < 0)
    np.testing.assert_array_equal(ou[:n], u - v)
    np.testing.assert_array_equal(ou[n:2 * n], ~u)
    np.testing.assert_array_equal(ou[2 * n:], u >> 1)
    np.testing.assert_array_equal(out, np.where(mb, fin, -fin))


def test_float16_float64_int64_bfloat16():
    n = 32
    H1, H2, HO = buf("H1", (n,), "float16"), buf("H2", (n,), "float16"), buf("HO", (2 * n,), "float16")
    D1, DO = buf("D1", (n,), "float64"), buf("DO", (n,), "float64")
    L1, LO = buf("L1", (n,), "int64"), buf("LO", (2 * n,), "int64")
    BF, BO, BF32 = buf("BF", (n,), "bfloat16"), buf("BO", (n,), "bfloat16"), buf("BF32", (n,))
    i = E.Var("i")
    body = loop(i, n, tir.stmt.seq(
        store(HO, H1[i] * H2[i] + H1[i], i),
        store(HO, tir.exp(H1[i]), n + i),
        store(DO, D1[i] * const(1e-200, "float64") * const(1e100, "float64"), i),
        store(LO, L1[i] * const(3, "int64") + const(2**40, "int64"), i),
        store(LO, tir.floordiv(L1[i], const(-7, "int64")), n + i),
        store(BO, BF[i] + BF[i] * const(0.5, "bfloat16"), i),
        store(BF32, E.Cast("float32", BF[i]) * 2.0, i),
    ))
    f = build_c(make_func("wide", [H1, H2, HO, D1, DO, L1, LO, BF, BO, BF32], body))
    src = f.get_source()
    assert "_Float16" in src and "uint16_t" in src and "int64_t" in src
    rng = np.random.default_rng(8)
    h1 = rng.random(n).astype(np.float16)
    h2 = rng.random(n).astype(np.float16)
    ho = np.zeros(2 * n, np.float16)
    d1 = rng.random(n) * 1e5
    do = np.zeros(n)
    l1 = rng.integers(-2**45, 2**45, n).astype(np.int64)
    lo = np.zeros(2 * n, np.int64)
    vals = (rng.random(n) * 8 - 4).astype(np.float32)
    bf_bits = (vals.view(np.uint32) >> 16).astype(np.uint16)   # truncated to bf16
    bo = np.zeros(n, np.uint16)
    bf32 = np.zeros(n, np.float32)
    f(h1, h2, ho, d1, do, l1, lo, bf_bits, bo, bf32)
    np.testing.assert_allclose(ho[:n].astype(np.float32), (h1 * h2 + h1).astype(np.float32), rtol=2e-3)
    np.testing.assert_allclose(ho[n:].astype(np.float32), np.exp(h1.astype(np.float32)), rtol=2e-3)
    np.testing.assert_allclose(do, d1 * 1e-200 * 1e100, rtol=1e-15)
    np.testing.assert_array_equal(lo[:n], l1 * 3 + 2**40)
    np.testing.assert_array_equal(lo[n:], l1 // -7)
    bf_vals = (bf_bits.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(bf32, bf_vals * 2)
    got = (bo.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_allclose(got, bf_vals * 1.5, rtol=2 ** -7)


# ---------------------------------------------------------------------------
# asserts, nested parallel loops, unroll, while, lets, multi-dim buffers
# ---------------------------------------------------------------------------

def test_assert_failures_return_messages():
    n = E.Var("n")
    A, B = buf("A", (n,)), buf("B", (n,))
    tmp = buf("tmp", (n,))
    i, j = E.Var("i"), E.Var("j")
    inner = S.Allocate(tmp, S.AssertStmt(E.GE(A[i], const(0.0)), "input must be non-negative",
                                         tir.stmt.seq(loop(j, 1, store(tmp, A[i], j)), store(B, tmp[0], i))))
    body = S.AssertStmt(E.GT(n, const(2)), "n must be greater than 2", loop(i, n, inner, ForKind.PARALLEL))
    f = build_c(make_func("checked", [A, B, n], body))
    src = f.get_source()
    # the parallel body is a function of its own that frees its heap buffer and
    # returns -1 on failure; the loop flags it and the function leaves after the loop
    assert "free(tmp);" in src and "return -1;" in src and "__atomic_store_n(&tecc_failed" in src
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, a)
    with pytest.raises(KernelError, match="n must be greater than 2"):
        f(np.ones(2, np.float32), np.ones(2, np.float32))
    a[3] = -1
    with pytest.raises(KernelError, match="input must be non-negative"):
        f(a, b)


def test_nested_parallel_unroll_while_lets_and_2d():
    A, B = buf("A", (4, 16)), buf("B", (4, 16))
    C, D = buf("C", (4,)), buf("D", (1,))
    cnt = buf("cnt", (1,), "int32")
    i, j, k = E.Var("i"), E.Var("j"), E.Var("k")
    t, u = E.Var("t", "float32"), E.Var("u", "float32")
    body = tir.stmt.seq(
        loop(i, 4, loop(j, 16, S.LetStmt(t, A[i, j] * 2.0,
                                         S.BufferStore(B, E.Let(u, t + 1.0, u * u), (i, j))),
                        ForKind.PARALLEL), ForKind.PARALLEL),
        loop(k, 4, store(C, E.Cast("float32", k), k), ForKind.UNROLLED),
        S.Allocate(cnt, tir.stmt.seq(
            store(cnt, 0, 0),
            S.While(E.LT(cnt[0], const(10)), store(cnt, cnt[0] + 1, 0)),
            store(D, E.Cast("float32", cnt[0]), 0))),
    )
    f = build_c(make_func("misc", [A, B, C, D], body))
    src = f.get_source()
    assert "runs serially" in src and "#pragma GCC unroll 4" in src and "while (" in src
    assert src.count("#pragma omp parallel for") == 1
    a = np.random.default_rng(9).random((4, 16), dtype=np.float32)
    b = np.zeros((4, 16), np.float32)
    c = np.zeros(4, np.float32)
    d = np.zeros(1, np.float32)
    f(a, b, c, d)
    np.testing.assert_allclose(b, (a * 2 + 1) ** 2, rtol=1e-6)
    np.testing.assert_array_equal(c, [0, 1, 2, 3])
    assert d[0] == 10


def test_native_target_flags():
    n = 16
    A, B = buf("A", (n,)), buf("B", (n,))
    i = E.Var("i")
    f = build_c(make_func("scale", [A, B], loop(i, n, store(B, A[i] * 3.0, i), ForKind.VECTORIZED)),
                "llvm -mcpu=native")
    a = np.arange(n, dtype=np.float32)
    b = np.zeros(n, np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, a * 3)
    assert f.target == "llvm -mcpu=native"


# ---------------------------------------------------------------------------
# printing only (no compiler)
# ---------------------------------------------------------------------------

def test_names_are_sanitized_and_unique():
    A = buf("A.local", (4,))
    B = buf("int", (4,))
    i1, i2 = E.Var("i"), E.Var("i")
    body = tir.stmt.seq(loop(i1, 4, store(B, A[i1], i1)), loop(i2, 4, store(B, B[i2] + 1.0, i2)))
    src = generate_c(make_func("names", [A, B], body))
    assert "const float* __restrict__ A_local" in src and "float* __restrict__ int_" in src
    assert "for (int32_t i = 0" in src and "for (int32_t i_1 = 0" in src


def test_subclass_changes_tables():
    class Printer(CodeGenC):
        restrict_keyword = "restrict"

        def function_prefix(self):
            return "int32_t"

    A = buf("A", (4,))
    i = E.Var("i")
    src = Printer().generate(make_func("sub", [A], loop(i, 4, store(A, 1.0, i))))
    assert "int32_t sub(float* restrict A)" in src


def test_bad_function_name_and_unknown_intrinsic():
    A = buf("A", (4,))
    i = E.Var("i")
    with pytest.raises(CompileError, match="not a valid C identifier"):
        generate_c(make_func("my-kernel", [A], loop(i, 4, store(A, 1.0, i))))
    bad = E.Call("float32", "no_such_intrinsic", (const(1.0),))
    with pytest.raises(CompileError, match="no_such_intrinsic"):
        generate_c(make_func("k", [A], loop(i, 4, store(A, bad, i))))


def _vector_unary(fn: str, n: int):
    """``(module, C source)`` of ``B[i] = te.<fn>(A[i])`` over ``n`` floats, vectorized
    by 8, built for "llvm"."""
    import tecc
    from tecc import te

    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: getattr(te, fn)(A[i]), name="B")
    s = te.create_schedule(B.op)
    _, vi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(vi)
    f = tecc.build(s, [A, B], "llvm")
    return f, f.get_source()


def test_vectorized_exp_is_vector_arithmetic_within_one_ulp():
    # exp of a float32 vector: no libm call per lane; 1 ulp of the correctly rounded
    # result over the whole float range (denormals included), inf above it, 0 below
    # it, NaN kept -- on both paths: vectors whose lanes are all in the normal range
    # (the fast one) and vectors with a lane outside it
    n = 1 << 14
    f, src = _vector_unary("exp", n)
    assert "tecc_vexp_float32x" in src and "expf(" not in src  # (x4 or x8: the target's vector width)
    rng = np.random.default_rng(3)
    x = rng.uniform(-87.3, 88.3, n).astype("float32")  # the first half: vectors on the fast path
    x[n // 2:] = rng.uniform(-110, 95, n // 2)  # the second: almost every vector takes the full path
    special = [np.nan, np.inf, -np.inf, 0.0, 88.72, 89.0, -87.0, -90.0, -103.9, -104.5]
    x[n // 2:n // 2 + len(special)] = special
    x[n // 2 + 16:n // 2 + 48] = np.linspace(-88, -86, 32)  # both edges of the fast path's range
    x[n // 2 + 48:n // 2 + 80] = np.linspace(88.2, 88.8, 32)
    # a causal softmax's masked scores: vectors of normal-range lanes and lanes far below
    # -104 (exp 0)
    masked = rng.uniform(-5, 5, 64).astype("float32")
    masked[::2] = np.resize(np.array([-1e4, -np.inf, -3.4028235e38, -200.0], "float32"), 32)
    x[n // 2 + 80:n // 2 + 144] = masked
    out = np.zeros(n, "float32")
    f(x, out)
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x.astype("float64")).astype("float32")
    finite = np.isfinite(want)
    ulp = np.abs(out[finite].astype("float64") - want[finite]) / np.spacing(want[finite])
    assert ulp.max() <= 1.0  # (np.spacing of a denormal is the denormal step: exact there)
    got = out[n // 2:n // 2 + len(special)]
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0 and got[3] == 1
    assert got[5] == np.inf and got[7] == want[n // 2 + 7] > 0 and got[9] == 0  # inf; denormal; 0
    assert np.array_equal(out[n // 2 + 80:n // 2 + 144:2], np.zeros(32, "float32"))


def test_vectorized_sigmoid_is_vector_arithmetic_within_two_ulp():
    # sigmoid of a float32 vector: 1 / (1 + vector exp(-x)), no expf per lane; within 2
    # ulp of the correctly rounded result where it is a normal float, 0 and 1 at the ends,
    # NaN kept
    n = 1 << 14
    f, src = _vector_unary("sigmoid", n)
    assert "tecc_vsigmoid_float32x" in src and "expf(" not in src
    x = np.random.default_rng(4).uniform(-30, 30, n).astype("float32")
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 17.0, 88.5, -88.5, -103.0, -120.0]
    x[:len(special)] = special
    x[16:48] = np.linspace(-90, -85, 32)  # exp(-x) leaves the fast path's range
    out = np.zeros(n, "float32")
    f(x, out)
    with np.errstate(over="ignore"):
        want = (1 / (1 + np.exp(-x.astype("float64")))).astype("float32")
    normal = np.isfinite(want) & (want >= np.finfo(np.float32).tiny)
    ulp = np.abs(out[normal].astype("float64") - want[normal]) / np.spacing(want[normal])
    assert ulp.max() <= 2.0
    assert np.isnan(out[0]) and out[1] == 1 and out[2] == 0 and out[3] == out[4] == 0.5
    assert out[6] == 1 and out[8] == out[9] == 0


def _erf64(x):
    import math

    return np.array([math.erf(v) for v in x])


@pytest.mark.parametrize("fn,helper,libm,reference,width,split", [
    ("tanh", "tecc_vtanh_float32x", "tanhf(", np.tanh, 60.0, 0.625),
    ("erf", "tecc_verf_float32x", "erff(", _erf64, 5.0, 0.921875),
])
def test_vectorized_odd_function_is_vector_arithmetic_within_two_ulp(fn, helper, libm, reference, width, split):
    # tanh and erf of a float32 vector: a polynomial near 0, the vector exp further out,
    # no libm call per lane; within 2 ulp of the correctly rounded result (float64), +-1
    # far out, -0 and NaN kept
    n = 1 << 15
    f, src = _vector_unary(fn, n)
    assert helper in src and libm not in src
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, n).astype("float32")
    x[n // 2:] = rng.uniform(-width, width, n // 2)
    x[100:164] = np.linspace(split - 0.05, split + 0.05, 64)  # both sides of the branch point
    x[200:264] = -np.geomspace(1e-30, 1e-3, 64)  # tiny values: f(x) = f'(0) x
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 45.0, -45.0, 100.0]
    x[:len(special)] = special
    out = np.zeros(n, "float32")
    f(x, out)
    want = reference(x.astype("float64")).astype("float32")
    fin = np.isfinite(want) & (want != 0)
    ulp = np.abs(out[fin].astype("float64") - want[fin]) / np.spacing(np.abs(want[fin]))
    assert ulp.max() <= 2.0
    assert np.isnan(out[0]) and out[1] == 1 and out[2] == -1 and out[5] == 1 and out[6] == -1 and out[7] == 1
    assert out[3] == 0 and not np.signbit(out[3]) and np.signbit(out[4])


@pytest.mark.parametrize("dtype,lanes", [("float32", 4), ("float32", 8), ("float32", 16), ("int8", 16),
                                         ("float64", 4), ("int32", 8)])
def test_stride2_vector_load_is_two_loads_and_a_shuffle(dtype, lanes):
    # B[i] = A[2i] vectorized: two contiguous loads and one shuffle, never reading past
    # A's last element (A holds exactly the 2n - 1 elements read)
    import tecc
    from tecc import te

    n = lanes * 3
    A = te.placeholder((2 * n - 1,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: A[2 * i], name="B")
    s = te.create_schedule(B.op)
    _, vi = s[B].split(B.op.axis[0], factor=lanes)
    s[B].vectorize(vi)
    f = tecc.build(s, [A, B], "llvm")
    assert f"tecc_load_stride2_{dtype}x" in f.get_source()  # (as wide as the target's registers allow)
    a = (np.arange(2 * n - 1) % 100).astype(dtype)
    b = np.zeros(n, dtype)
    f(a, b)
    np.testing.assert_array_equal(b, a[::2])


@pytest.mark.parametrize("dtype,stride", [("float32", 5), ("float32", 256), ("int64", 3), ("float64", 7)])
def test_strided_vector_loads_and_stores_go_lane_by_lane_from_the_stride(dtype, stride):
    # B[i, j] = A[j, i] (a transpose) vectorized over j: A is read at a constant stride,
    # lane by lane from the base and the stride (no vector of indices built and taken
    # apart: a rotary kernel ran 2.2x slower so); C[j, i] = B[i, j] stores at a stride
    import tecc
    from tecc import te

    rows, lanes = 6, 8
    A = te.placeholder((lanes * 2, stride), name="A", dtype=dtype)
    B = te.compute((stride, lanes * 2), lambda i, j: A[j, i] + A[j, i], name="B")
    s = te.create_schedule(B.op)
    _, vi = s[B].split(B.op.axis[1], factor=lanes)
    s[B].vectorize(vi)
    f = tecc.build(s, [A, B], "llvm")
    src = f.get_source()
    assert "tecc_load_strided_" in src and "tecc_gather_" not in src
    a = (np.arange(lanes * 2 * stride) % 97).reshape(lanes * 2, stride).astype(dtype)
    b = np.zeros((stride, lanes * 2), dtype)
    f(a, b)
    np.testing.assert_array_equal(b, (a + a).T)
    C = te.placeholder((stride, rows), name="C", dtype=dtype)
    D = te.compute((rows, stride), lambda i, j: C[j, i] * 2, name="D")
    s = te.create_schedule(D.op)
    s[D].reorder(D.op.axis[1], D.op.axis[0])
    s[D].vectorize(D.op.axis[0])  # the stores of a lane step by a row of D
    f = tecc.build(s, [C, D], "llvm")
    assert "tecc_store_strided_" in f.get_source() and "tecc_scatter_" not in f.get_source()
    c = (np.arange(stride * rows) % 89).reshape(stride, rows).astype(dtype)
    d = np.zeros((rows, stride), dtype)
    f(c, d)
    np.testing.assert_array_equal(d, (c * 2).T)


@pytest.mark.parametrize("name", ["exp", "malloc", "memcpy", "tanf", "isnan"])
def test_a_kernel_named_like_a_c_library_function_builds_under_its_own_name(name, tmp_path):
    """The generated C includes math.h, stdlib.h and string.h: a function named as one
    of theirs is emitted as the symbol tecc_fn_<name> and still called by its name
    (TVM's tests build topi.exp with name="exp"), through an exported library too."""
    import tecc
    from tecc import te

    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    f = tecc.build(s, [A, B], target="llvm", name=name)
    assert f"int32_t tecc_fn_{name}(" in f.get_source()
    path = str(tmp_path / "lib.so")
    f.export_library(path)
    for mod in (f, tecc.runtime.load_module(path)):
        a = tecc.nd.array(np.arange(8, dtype="float32"))
        b = tecc.nd.empty((8,))
        mod[name](a, b)
        np.testing.assert_allclose(b.numpy(), np.arange(8) * 2.0)


def test_a_c_library_name_the_list_misses_gets_one_line_with_the_fix():
    # strdup (POSIX, declared by string.h) is not in tecc.runtime.symbols' list: the
    # compiler's clash is reported in one line, naming the fix
    import tecc
    from tecc import te

    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(CompileError) as info:
        tecc.build(s, [A, B], target="llvm", name="strdup")
    msg = str(info.value)
    assert msg.startswith("function name 'strdup' is already declared by the C library (stdint.h, ")
    assert "pass another name to build, e.g. name='strdup_kernel'" in msg and "\n" not in msg


@pytest.mark.parametrize("what", ["cast_compare", "cast_not", "store_compare", "cast_to_bool_and_back", "xor"])
def test_vectorized_bools_are_one_not_minus_one(what):
    # a GCC vector comparison gives -1 per true lane; tecc's bool vectors hold 1, as bools
    # do: a vectorized (a == b).astype("float32") gave -1.0 (found by ONNX's Hardmax cases)
    import tecc
    from tecc import te

    n = 16
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    a = np.arange(n, dtype="float32")
    b = a.copy()
    b[::2] = -1
    eq = a == b
    bodies = {
        "cast_compare": (lambda i: E.Cast("float32", E.EQ(A[i], B[i])), eq.astype("float32")),
        "cast_not": (lambda i: E.Cast("float32", E.Not(E.EQ(A[i], B[i]))), (~eq).astype("float32")),
        "store_compare": (lambda i: E.GT(A[i], B[i]), a > b),
        "cast_to_bool_and_back": (lambda i: E.Cast("int32", E.Cast("bool", A[i] - B[i])), (a != b).astype("int32")),
        "xor": (lambda i: E.Cast("float32", E.NE(E.EQ(A[i], B[i]), E.GT(A[i], B[i]))),
                (eq != (a > b)).astype("float32")),
    }
    fn, want = bodies[what]
    C = te.compute((n,), fn, name="C")
    s = te.create_schedule(C.op)
    _, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(inner)
    f = tecc.build(s, [A, B, C], target="llvm")
    c = tecc.nd.empty((n,), C.dtype)
    f(tecc.nd.array(a), tecc.nd.array(b), c)
    got = c.numpy()
    if got.dtype == np.bool_:
        assert got.view(np.uint8).max() <= 1  # stored bools are bytes of 0 and 1
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype,lanes", [("float32", 8), ("float32", 3), ("float64", 4), ("float16", 8),
                                         ("int8", 16), ("uint8", 16), ("int32", 8), ("int64", 4)])
def test_vector_min_max_blend_lanes_with_the_comparison_mask(dtype, lanes):
    # min/max of vectors is one compare and one blend (GCC scalarized the lane loop it
    # replaces: a relu after a convolution cost 10% of it); lanes keep
    # `a < b ? a : b` / `a > b ? a : b`, the operand order of x86's minps/maxps, so a
    # NaN in either operand gives b, as in the scalar code
    n = 48
    A, B = buf("A", (n,), dtype), buf("B", (n,), dtype)
    LO, HI = buf("LO", (n,), dtype), buf("HI", (n,), dtype)
    i = E.Var("i")
    r = ramp(i * lanes, lanes)
    body = loop(i, n // lanes, tir.stmt.seq(S.BufferStore(LO, E.Min(A[r], B[r]), (r,)),
                                            S.BufferStore(HI, E.Max(A[r], B[r]), (r,))))
    f = build_c(make_func(f"minmax_{dtype}", [A, B, LO, HI], body))
    src = f.get_source()
    vec = f"{dtype}x{lanes}"
    assert f"tecc_max_{vec}" in src and f"tecc_min_{vec}" in src
    assert "for (int l = 0" not in src.split(f"tecc_max_{vec}(")[1].split("}")[0]
    rng = np.random.default_rng(11)
    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":
        a = rng.standard_normal(n).astype(dtype)
        b = rng.standard_normal(n).astype(dtype)
        a[:4], b[2:6] = np.nan, np.nan
        a[6], b[6] = -0.0, 0.0
    else:
        info = np.iinfo(np_dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        a[:3], b[:3] = info.min, info.max
    lo, hi = np.zeros(n, dtype), np.zeros(n, dtype)
    f(a, b, lo, hi)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(lo, np.where(a < b, a, b))
        np.testing.assert_array_equal(hi, np.where(a > b, a, b))
    if np_dtype.kind == "f":  # -0.0 vs 0.0: neither is greater, b is taken
        assert np.signbit(lo[6]) == np.signbit(b[6]) == np.signbit(hi[6])


@pytest.mark.parametrize("cond", ["compare", "bool"])
def test_vector_select_is_a_bitwise_blend(cond):
    """A vectorized select is a blend under a mask (no lane loop): a comparison of
    operands as wide as the lanes is the mask as it is; a bool vector is converted."""
    import tecc
    from tecc import te, tir

    n = 64
    A, M = te.placeholder((n,), name="A"), te.placeholder((n,), name="M", dtype="bool")
    if cond == "compare":
        B = te.compute((n,), lambda i: tir.Select(A[i] < 0.5, A[i] * 2.0, A[i] - 1.0), name="B")
    else:
        B = te.compute((n,), lambda i: tir.Select(M[i], A[i] * 2.0, A[i] - 1.0), name="B")
    s = te.create_schedule(B.op)
    _, vi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(vi)
    f = tecc.build(s, [A, M, B], "llvm")
    src = f.get_source()
    assert re.search(r"tecc_blend_float32x\d+\(", src) and not re.search(r"tecc_select_float32x\d", src)
    uses = [ln for ln in src.splitlines() if "store" in ln and "tecc_blend_float32x" in ln]
    assert uses and all(("__builtin_convertvector" in ln) == (cond == "bool") for ln in uses)
    a = np.random.default_rng(5).uniform(-1, 2, n).astype("float32")
    a[3] = np.nan
    m = np.random.default_rng(6).integers(0, 2, n).astype(bool)
    out = np.zeros(n, "float32")
    f(a, m, out)
    take = (a < 0.5) if cond == "compare" else m
    np.testing.assert_array_equal(out, np.where(take, a * 2, a - 1))
