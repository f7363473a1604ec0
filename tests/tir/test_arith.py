"""Tests of tecc.tir.arith: the simplifier's rules (by randomized evaluation), the
Analyzer's questions, constant bounds and interval sets."""
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import Range, SizeVar, Var
from tecc.tir.arith import (
    NEG_INF, POS_INF, Analyzer, ConstIntBound, EvalError, IntervalSet, all_rule_tables, eval_set,
    evaluate,
)
from tecc.tir.op import floordiv, max as tmax, min as tmin, truncdiv, truncmod


def R(lo, extent):
    return Range.from_min_extent(lo, extent)


def ci(v, dtype="int32"):
    return E.IntImm(dtype, v)


T = E.IntImm("bool", 1)
F = E.IntImm("bool", 0)


# ----------------------------------------------------------------------------
# a fixed world of variables: name -> (variable, inclusive range of values, bound?)
# ----------------------------------------------------------------------------

class World:
    """Variables with known ranges (bound in the analyzer) and free ones."""

    def __init__(self, dtype="int32"):
        self.x = Var("x", dtype)   # [-8, 8]   bound
        self.y = Var("y", dtype)   # [0, 15]   bound
        self.z = Var("z", dtype)   # [0, 3]    bound
        self.m = Var("m", dtype)   # [1, 7]    bound (a positive symbolic divisor)
        self.w = Var("w", dtype)   # free, tested on [-30, 30]
        self.v = Var("v", dtype)   # free, tested on [-30, 30]
        self.p = Var("p", "bool")  # free boolean
        self.a = Var("a", "float32")
        self.b = Var("b", "float32")
        self.u = Var("u", "uint32")
        self.ranges = {self.x: (-8, 8), self.y: (0, 15), self.z: (0, 3), self.m: (1, 7)}
        self.free = {self.w: (-30, 30), self.v: (-30, 30), self.p: (0, 1), self.u: (0, 40)}

    def analyzer(self):
        ana = Analyzer()
        for var, (lo, hi) in self.ranges.items():
            ana.bind(var, R(lo, hi - lo + 1))
        return ana

    def points(self, rng, count):
        for _ in range(count):
            env = {}
            for var, (lo, hi) in list(self.ranges.items()) + list(self.free.items()):
                env[var] = rng.randint(lo, hi)
            env[self.p] = bool(env[self.p])
            env[self.a] = rng.choice([-1.5, 0.0, 2.25, 7.0])
            env[self.b] = rng.choice([-3.0, 0.5, 4.0])
            yield env


def check_same(before, after, world, rng, count=40, cond=None):
    """``before`` and ``after`` agree at random points (where ``cond`` holds)."""
    checked = 0
    for env in world.points(rng, count):
        if cond is not None:
            try:
                if not evaluate(cond, env):
                    continue
            except EvalError:
                continue
        try:
            want = evaluate(before, env)
        except EvalError:
            continue  # the original divides by zero here: any result is fine
        got = evaluate(after, env)
        assert got == want, (f"{before}  simplified to  {after}\n at "
                             f"{ {k.name: v for k, v in env.items()} }: {want} != {got}")
        checked += 1
    return checked


# ----------------------------------------------------------------------------
# named rules: (expression, expected) with the world's bindings
# ----------------------------------------------------------------------------

def _named_cases(W):
    x, y, z, m, w, v, p = W.x, W.y, W.z, W.m, W.w, W.v, W.p
    io, ii = W.z, W.y  # stand-ins: io in [0, 3], ii in [0, 15]
    return [
        # canonical linear forms
        ((w * 32 + v) - w * 32, v),
        (w * 4 + v - (v + w * 4), ci(0)),
        ((w + 3) + (v - 3), w + v),
        (v + w * 1024, w * 1024 + v),
        (w * 2 + w * 3, w * 5),
        (w - w, ci(0)),
        (3 - w + w, ci(3)),
        # floordiv / floormod with bounds (ii in [0, 15])
        ((io * 16 + ii) // 16, io),
        ((io * 16 + ii) % 16, ii),
        ((w * 8) % 4, ci(0)),
        ((w * 8) // 4, w * 2),
        (w // 1, w),
        (w % 1, ci(0)),
        ((w // 4) // 8, w // 32),
        ((w % 32) % 8, w % 8),
        ((w % 12) % 8, (w % 12) % 8),
        ((w // 3) // 4, w // 12),
        (E.FloorDiv(E.FloorDiv(w, ci(-3)), ci(4)), E.FloorDiv(E.FloorDiv(w, ci(-3)), ci(4))),
        (E.FloorMod(E.FloorMod(w, ci(-4)), ci(2)), E.FloorMod(E.FloorMod(w, ci(-4)), ci(2))),
        ((w // 4) * 4 + w % 4, w),
        (truncdiv(w, 4) * 4 + truncmod(w, 4), w),
        (y // 16, ci(0)),
        ((y + 16) // 16, ci(1)),
        ((w * 6 + 2) // 4, (w * 3 + 1) // 2),
        ((w * 8 + y) // 4, w * 2 + y // 4),
        ((w * m + z) % m, z % m),
        # C division only becomes floor division for non-negative operands
        (truncdiv(y, 4), y // 4),
        (truncdiv(x, 4), truncdiv(x, 4)),
        (truncmod(x, 4), truncmod(x, 4)),
        (truncdiv(w * 3, 3), w),
        # min / max with bounds
        (tmin(y, 40), y),
        (tmax(y, -1), y),
        (tmin(z, y + 4), z),
        (tmin(tmin(w, 3), 5), tmin(w, 3)),
        (tmax(tmax(w, 3), 5), tmax(w, 5)),
        (tmin(w, v), tmin(w, v)),
        # comparisons
        (y < 16, T),
        (y >= 0, T),
        (y > 15, F),
        (io * 16 + ii < 64, T),
        (io * 16 + ii < 50, io * 16 + ii < 50),
        (w + 1 < 5, w < 4),
        (w * 4 < 17, w < 5),
        (w * 4 == 6, F),
        (w == w, T),
        # logic and select
        (E.And(T, w < 3), w < 3),
        (tir.all(w < 3, w < 5), w < 3),
        (tir.any(w < 3, w < 5), w < 5),
        (tir.all(w < 0, w > 0), F),
        (tir.any(w < 0, w >= 0), T),
        (E.Not(w < 3), w >= 3),
        (E.Call("bool", "likely", (y < 16,)), T),
        (E.Select(y < 16, w, v), w),
        (E.Select(p, w, w), w),
        (tir.if_then_else(w < 4, tmin(w, 4), 0), tir.if_then_else(w < 4, w, 0)),
        # floats: never reassociated, only exact identities and folding
        (W.a * 1.0, W.a),
        (W.a + 0.0, W.a),
        ((W.a + W.b) - W.b, (W.a + W.b) - W.b),
        (W.a * 0.0, W.a * 0.0),
        (E.Add(E.FloatImm("float32", 1.5), E.FloatImm("float32", 2.0)), E.FloatImm("float32", 3.5)),
        # constant folding of every integer operation
        (E.FloorDiv(ci(-7), ci(2)), ci(-4)),
        (E.FloorMod(ci(-7), ci(2)), ci(1)),
        (E.Div(ci(-7), ci(2)), ci(-3)),
        (E.Mod(ci(-7), ci(2)), ci(-1)),
        (E.Min(ci(3), ci(-2)), ci(-2)),
        (E.LT(ci(3), ci(4)), T),
    ]


def test_named_rules():
    W = World()
    ana = W.analyzer()
    rng = random.Random(0)
    for before, expected in _named_cases(W):
        before, expected = tir.convert(before), tir.convert(expected)
        got = ana.simplify(before)
        assert tir.structural_equal(got, expected), f"{before}: got {got}, expected {expected}"
        check_same(before, got, W, rng, count=20)


def test_unchanged_returns_same_object():
    W = World()
    ana = W.analyzer()
    e = W.w * 1024 + W.v
    assert ana.simplify(e) is e
    c = W.w * 32 + W.y < 1000
    assert ana.simplify(c) is c
    f = (W.a + W.b) * W.a
    assert ana.simplify(f) is f


def test_readable_order():
    i, j, k = Var("i"), Var("j"), Var("k")
    ana = Analyzer()
    assert str(ana.simplify(k + j * 32 + i * 1024 - 1)) == "i*1024 + j*32 + k - 1"
    assert str(ana.simplify(0 - i - 3)) == "i*-1 - 3"
    assert str(ana.simplify(3 - i)) == "3 - i"


# ----------------------------------------------------------------------------
# every rule of every table: an example that fires it, checked by evaluation
# ----------------------------------------------------------------------------

def _rule_examples(W):
    y, z, m, w, v, p, a, b, u = W.y, W.z, W.m, W.w, W.v, W.p, W.a, W.b, W.u
    n = Var("n")
    vec = lambda e: E.Broadcast(e, 4)  # noqa: E731
    ramp = E.Ramp(w, ci(1), 4)
    out = [
        E.FloorDiv(w, ci(1)), (w * 4) // 4, E.FloorDiv(w * -3, ci(-3)), y // 16, (w * 8 + y) // 4,
        (w * 6 + 2) // 4, (w // 4) // 8, E.FloorDiv(z, m), (w * m + z) // m,
        E.FloorMod(w, ci(1)), (w * 4) % 4, y % 16, (w * 8 + y) % 4, (w % 32) % 8, E.FloorMod(z, m),
        (w * m + z) % m, (w * 4 + z) // 8, (w * 4 + z) % 8, (y * 16 + w * 4 + z) // 32,
        truncdiv(w, 1), truncdiv(w * 3, 3), truncdiv(y, 4),
        truncmod(w, 1), truncmod(w * 3, 3), truncmod(y, 4),
        tmin(z, y + 4), tmin(y + 4, z), E.Min(ci(3), w), tmin(tmin(w, 5), 3),
        tmax(y + 4, z), tmax(z, y + 4), E.Max(ci(3), w), tmax(tmax(w, 3), 5), tmax(tmax(w, 5), 3),
        y < 16, w + 1 < 5,
        E.And(T, w < 3), E.And(w < 3, w < 3), E.And(p, E.Not(p)), E.And(w < 3, w < 5), E.And(w < 3, w > 5),
        E.Or(F, w < 3), E.Or(w < 3, w < 3), E.Or(p, E.Not(p)), E.Or(w < 3, w < 5), E.Or(w < 3, w > 1),
        E.Not(T), E.Not(E.Not(p)), E.Not(w < 3), E.Not(E.And(w < 3, v < 2)), E.Not(E.Or(w < 3, v < 2)),
        E.Select(T, w, v), E.Select(p, w, w), E.Select(E.Not(p), w, v),
        E.Add(a, E.FloatImm("float32", 0.0)), E.Add(E.FloatImm("float32", 0.0), a),
        E.Sub(a, E.FloatImm("float32", 0.0)), E.Mul(a, E.FloatImm("float32", 1.0)),
        E.Mul(u, E.IntImm("uint32", 0)), E.Div(a, E.FloatImm("float32", 1.0)),
        E.FloorDiv(u, E.IntImm("uint32", 1)), E.Min(a, a), E.Max(a, a),
        E.Add(vec(w), vec(v)), E.Sub(vec(w), vec(v)), E.Mul(vec(w), vec(v)), E.Div(vec(a), vec(b)),
        E.FloorDiv(vec(w), vec(m)), E.FloorMod(vec(w), vec(m)), E.Mod(vec(w), vec(m)),
        E.Min(vec(w), vec(v)), E.Max(vec(w), vec(v)),
        E.Add(ramp, vec(v)), E.Sub(ramp, vec(v)), E.Mul(ramp, vec(v)),
    ]
    # i // n -> 0 and i % n -> i need a range whose end is symbolic
    return out, n


def test_every_rule_fires_and_agrees_with_evaluation():
    W = World()
    ana = W.analyzer()
    examples, n = _rule_examples(W)
    before_hits = {id(r): r.hits for rules in all_rule_tables().values() for r in rules}
    rng = random.Random(1)
    for e in examples:
        got = ana.simplify(e)
        check_same(e, got, W, rng, count=25)
    # symbolic divisors: i in [0, n)
    i = Var("i")
    with ana.bind_scope(n, R(1, 20)):
        with ana.bind_scope(i, R(0, n)):
            assert tir.structural_equal(ana.simplify(E.FloorDiv(i, n)), ci(0))
            assert ana.simplify(E.FloorMod(i, n)) is i
            assert tir.structural_equal(ana.simplify((W.w * n + i) // n), W.w)
    missing = [r.law for rules in all_rule_tables().values() for r in rules if r.hits == before_hits[id(r)]]
    assert not missing, f"rules with no example: {missing}"


# ----------------------------------------------------------------------------
# randomized: random expressions keep their value
# ----------------------------------------------------------------------------

_DIVS = (E.FloorDiv, E.FloorMod, E.Div, E.Mod)


def _strategies(W):
    leaves = st.sampled_from([W.x, W.y, W.z, W.m, W.w, W.v]) | st.integers(-9, 40).map(
        lambda c: E.IntImm(W.x.dtype, c))
    small = st.integers(-4, 5).map(lambda c: E.IntImm(W.x.dtype, c))
    pos_div = st.sampled_from([1, 2, 3, 4, 8, 16, 32]).map(lambda c: E.IntImm(W.x.dtype, c))
    any_div = st.sampled_from([-3, -2, -1, 1, 2, 3, 4, 8, 32]).map(lambda c: E.IntImm(W.x.dtype, c))
    sym_div = st.sampled_from([W.m, W.z + 1, W.m * 2])

    def extend(ints):
        conds = st.deferred(lambda: bools)
        return st.one_of(
            st.builds(E.Add, ints, ints), st.builds(E.Sub, ints, ints),
            st.builds(E.Mul, ints, small), st.builds(E.Mul, small, ints), st.builds(E.Mul, ints, leaves),
            st.builds(E.FloorDiv, ints, pos_div | any_div | sym_div),
            st.builds(E.FloorMod, ints, pos_div | any_div | sym_div),
            st.builds(E.Div, ints, any_div | sym_div), st.builds(E.Mod, ints, any_div | sym_div),
            st.builds(E.Min, ints, ints), st.builds(E.Max, ints, ints),
            # nested divisions by constants: where the div/mod rules interact
            st.builds(lambda e, c1, c2, o1, o2: o2(o1(e, c1), c2), ints, pos_div | any_div,
                      pos_div | any_div, st.sampled_from(_DIVS), st.sampled_from(_DIVS)),
            st.builds(E.Select, conds, ints, ints),
            st.builds(lambda c, t, f: E.Call(W.x.dtype, "if_then_else", (c, t, f)), conds, ints, ints),
        )

    ints = st.recursive(leaves, extend, max_leaves=8)
    cmp = st.sampled_from([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE])
    atoms = st.builds(lambda c, a, b: c(a, b), cmp, ints, ints) | st.just(W.p)
    bools = st.recursive(atoms, lambda bs: st.one_of(
        st.builds(E.And, bs, bs), st.builds(E.Or, bs, bs), st.builds(E.Not, bs)), max_leaves=4)
    return ints, bools


_W64 = World("int64")   # 64-bit: random products cannot overflow, so any mismatch is a bug
_INTS, _BOOLS = _strategies(_W64)
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@_SETTINGS
@given(e=_INTS, seed=st.integers(0, 2 ** 16))
def test_random_int_expressions(e, seed):
    ana = _W64.analyzer()
    got = ana.simplify(e)
    check_same(e, got, _W64, random.Random(seed), count=30)
    # simplifying again changes nothing more (the result is a fixed point)
    assert ana.simplify(got) is got or tir.structural_equal(ana.simplify(got), got)


@_SETTINGS
@given(e=_BOOLS, seed=st.integers(0, 2 ** 16))
def test_random_bool_expressions(e, seed):
    ana = _W64.analyzer()
    got = ana.simplify(e)
    check_same(e, got, _W64, random.Random(seed), count=30)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(cond=_BOOLS, e=_INTS | _BOOLS, seed=st.integers(0, 2 ** 16))
def test_random_under_constraint(cond, e, seed):
    ana = _W64.analyzer()
    with ana.constraint_scope(cond):
        got = ana.simplify(e)
    check_same(e, got, _W64, random.Random(seed), count=60, cond=cond)


def test_division_under_contradictory_constraint():
    # z is bound to [0, 3]; under z < 0 its interval is empty (the code cannot run), so
    # a division by z + 1 has no usable divisor bound -- simplifying must not divide by 0
    W = _W64
    ana = W.analyzer()
    e = W.x < floordiv(W.x, W.z + 1)
    with ana.constraint_scope(W.z < 0):
        ana.simplify(e)
        ana.simplify(truncdiv(W.y, W.z + 1) + 1)


def _random_int_expr(W, rng, depth):
    """A random integer expression (plain ``random``: a fixed, reproducible corpus)."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.7:
            return rng.choice([W.x, W.y, W.z, W.m, W.w, W.v])
        return ci(rng.randint(-9, 40), W.x.dtype)
    a = _random_int_expr(W, rng, depth - 1)
    b = _random_int_expr(W, rng, depth - 1)
    divisor = rng.choice([ci(rng.choice([-3, -1, 1, 2, 4, 8, 32]), W.x.dtype), W.m, W.z + 1])
    pick = rng.randrange(14)
    if pick >= 10:  # nested divisions by constants, where the div/mod rules interact
        c1 = ci(rng.choice([-4, -3, 2, 3, 4, 6, 8, 12]), W.x.dtype)
        c2 = ci(rng.choice([-2, 2, 3, 4, 8]), W.x.dtype)
        return rng.choice(_DIVS)(rng.choice(_DIVS)(a, c1), c2)
    if pick == 0:
        return E.Add(a, b)
    if pick == 1:
        return E.Sub(a, b)
    if pick == 2:
        return E.Mul(a, ci(rng.randint(-4, 5), W.x.dtype))
    if pick == 3:
        return E.FloorDiv(a, divisor)
    if pick == 4:
        return E.FloorMod(a, divisor)
    if pick == 5:
        return E.Div(a, divisor)
    if pick == 6:
        return E.Mod(a, divisor)
    if pick == 7:
        return E.Min(a, b)
    if pick == 8:
        return E.Max(a, b)
    return E.Select(E.LT(a, b), a, b)


def test_random_int32_deterministic_corpus():
    """The same property on int32 with a fixed corpus (values stay far from overflow)."""
    W = World("int32")
    ana = W.analyzer()
    rng = random.Random(7)
    total = 0
    for _ in range(300):
        e = _random_int_expr(W, rng, 3)
        total += check_same(e, ana.simplify(e), W, rng, count=10)
    assert total > 1000


# ----------------------------------------------------------------------------
# Analyzer
# ----------------------------------------------------------------------------

def test_can_prove_and_bounds():
    i, j, n = Var("i"), Var("j"), SizeVar("n")
    ana = Analyzer()
    ana.bind(i, R(0, 1024))
    assert ana.can_prove(i < 1024)
    assert not ana.can_prove(i < 1000)
    assert ana.can_prove(i >= 0)
    assert not ana.can_prove(j >= 0)
    assert ana.can_prove(n >= 0)  # SizeVar
    assert ana.can_prove_equal(i * 4 + j - (j + i * 4), 0)
    assert ana.can_prove_equal(E.FloorDiv(i * 8, ci(4)), i * 2)
    assert not ana.can_prove_equal(i, j)
    b = ana.const_int_bound(i * 2 + 1)
    assert (b.min_value, b.max_value) == (1, 2047)
    b = ana.const_int_bound(E.FloorMod(j, ci(8)))
    assert (b.min_value, b.max_value) == (0, 7)
    big = ana.const_int_bound(Var("q", "int64"))
    assert big.min_value == ConstIntBound.NEG_INF and big.max_value == ConstIntBound.POS_INF


def test_bind_value_and_override():
    i, k = Var("i"), Var("k")
    ana = Analyzer()
    ana.bind(k, 4)
    assert tir.structural_equal(ana.simplify(i * k), i * 4)
    ana.bind(k, 4)  # the same binding again is fine
    with pytest.raises(ValueError):
        ana.bind(k, 5)
    ana.bind(k, 5, allow_override=True)
    assert tir.structural_equal(ana.simplify(k + 1), ci(6))
    with ana.bind_scope(i, R(0, 8)):
        assert ana.can_prove(i < 8)
    assert not ana.can_prove(i < 8)


def test_symbolic_loop_range():
    i, n = Var("i"), SizeVar("n")
    ana = Analyzer()
    ana.bind(i, R(0, n))
    assert ana.can_prove(i < n)
    assert ana.can_prove(i + 1 <= n)
    assert not ana.can_prove(i < n - 1)
    assert ana.can_prove(E.LT(i, n))


def test_constraint_scope():
    io, ii, x, n = Var("io"), Var("ii"), Var("x"), Var("n")
    ana = Analyzer()
    ana.bind(io, R(0, 32))
    ana.bind(ii, R(0, 32))
    guard = io * 32 + ii < 1000
    assert ana.simplify(guard) is guard  # not provable by itself
    with ana.constraint_scope(tir.likely(guard)):
        assert ana.can_prove(guard)
        assert ana.can_prove(io * 32 + ii <= 999)
        assert ana.can_prove(io * 32 + ii + 1 <= 1000)
        assert not ana.can_prove(io * 32 + ii < 999)
    assert not ana.can_prove(guard)
    with ana.constraint_scope(tir.all(x >= 2, x < n)):
        assert ana.can_prove(x > 0)
        assert ana.can_prove(x - n < 0)
        assert tir.structural_equal(ana.simplify(tmax(x, 1)), x)
        b = ana.const_int_bound(x)
        assert b.min_value == 2
    with ana.constraint_scope(x <= 10):
        assert ana.can_prove(x < 11)
        assert ana.const_int_bound(x).max_value == 10
    with ana.constraint_scope(E.Not(x < 5)):
        assert ana.can_prove(x >= 5)
    with ana.constraint_scope(x == 3):
        assert ana.can_prove(x * 2 == 6)
    with ana.constraint_scope(x != 3):
        assert ana.can_prove(x != 3)


def test_let_expression():
    x, t = Var("x"), Var("t")
    ana = Analyzer()
    ana.bind(x, R(0, 10))
    assert tir.structural_equal(ana.simplify(E.Let(t, ci(3), t + x - 3)), x)
    e = E.Let(t, x * 2, E.FloorDiv(t, ci(32)))
    assert tir.structural_equal(ana.simplify(e), ci(0))


# ----------------------------------------------------------------------------
# interval sets
# ----------------------------------------------------------------------------

def test_interval_set_basics():
    i = Var("i")
    s = IntervalSet.from_range(R(4, 8))
    assert tir.structural_equal(s.min_value, ci(4)) and tir.structural_equal(s.max_value, ci(11))
    r = s.to_range()
    assert tir.structural_equal(r.extent, ci(8))
    assert IntervalSet.single_point(i).is_single_point()
    assert IntervalSet.everything().is_everything()
    assert not IntervalSet(0, POS_INF).has_upper_bound() and IntervalSet(0, POS_INF).has_lower_bound()
    with pytest.raises(ValueError):
        IntervalSet(NEG_INF, 3).to_range()
    u = IntervalSet(0, 5).union(IntervalSet(3, 9))
    assert (u.min_value.value, u.max_value.value) == (0, 9)
    x = IntervalSet(0, 5).intersect(IntervalSet(3, 9))
    assert (x.min_value.value, x.max_value.value) == (3, 5)
    assert IntervalSet(NEG_INF, 4).union(IntervalSet(0, 2)).min_value is NEG_INF
    sym = IntervalSet(i, i + 4).union(IntervalSet(i + 2, i + 8))
    assert tir.structural_equal(sym.min_value, i) and tir.structural_equal(sym.max_value, i + 8)
    rs = IntervalSet.from_range(R(i * 4, 4)).to_range()
    assert tir.structural_equal(rs.min, i * 4) and tir.structural_equal(rs.extent, ci(4))


def _ends(s):
    return str(s.min_value), str(s.max_value)


def test_eval_set():
    io, ii, x, k, n = Var("io"), Var("ii"), Var("x"), Var("k"), SizeVar("n")
    dom = {ii: R(0, 32)}
    assert _ends(eval_set(io * 32 + ii, dom)) == ("io*32", "io*32 + 31")
    assert _ends(eval_set(ii * 4 - 1, dom)) == ("-1", "123")
    assert _ends(eval_set(ii * -2, dom)) == ("-62", "0")
    assert _ends(eval_set(ii * n, dom)) == ("0", "n*31")
    assert eval_set(ii * x, dom).is_everything()
    assert _ends(eval_set(E.FloorDiv(ii, ci(8)), dom)) == ("0", "3")
    assert _ends(eval_set(E.FloorMod(ii, ci(8)), dom)) == ("0", "7")
    assert _ends(eval_set(E.FloorMod(x, ci(8)), {x: IntervalSet(k * 8, k * 8 + 5)})) == ("0", "5")
    assert _ends(eval_set(E.FloorMod(io * 32 + ii, ci(32)), dom)) == ("0", "31")
    assert _ends(eval_set(E.FloorMod(ii + 3, ci(8)), dom)) == ("0", "7")
    assert _ends(eval_set(tmin(ii, 10) + tmax(ii, 4), dom)) == ("4", "41")
    assert _ends(eval_set(E.Select(x < 3, ii, ii + 40), dom)) == ("0", "71")
    assert _ends(eval_set(truncdiv(ii, 4), dom)) == ("0", "7")
    assert _ends(eval_set(truncmod(ii, 4), dom)) == ("0", "3")
    assert _ends(eval_set(E.Cast("int64", ii), dom)) == ("0i64", "31i64")
    assert _ends(eval_set(E.Let(x, ii * 2, x + 1), dom)) == ("1", "63")
    assert _ends(eval_set(ii + x, {ii: R(0, 4), x: IntervalSet(0, POS_INF)})) == ("0", "pos_inf")
    assert eval_set(E.Call("float32", "exp", (E.FloatImm("float32", 1.0),)), {}).is_everything()
    assert _ends(eval_set(x, {})) == ("x", "x")


def test_analyzer_int_set_uses_bindings():
    i, j = Var("i"), Var("j")
    ana = Analyzer()
    ana.bind(i, R(0, 16))
    assert _ends(ana.int_set(i * 2 + j)) == ("j", "j + 30")
    assert _ends(ana.int_set(i + j, {j: R(0, 4)})) == ("0", "18")


def test_can_prove_with_symbolic_loop_bounds():
    # whole tiles of a symbolic extent: io < m and ii < 8 give io*8 + ii < m*8
    from tecc import te, tir
    from tecc.tir.arith import Analyzer

    m, io, ii = te.var("m"), te.var("io"), te.var("ii")
    ana = Analyzer()
    ana.bind(m, tir.arith.IntervalSet(tir.const(1), tir.const(2 ** 31 - 1)))
    ana.bind(io, tir.Range(0, m))
    ana.bind(ii, tir.Range(0, 8))
    assert ana.can_prove(io * 8 + ii < m * 8)
    assert ana.can_prove(m * 8 > io * 8 + ii)
    assert ana.can_prove(io * 8 + ii <= m * 8 - 1)
    assert not ana.can_prove(io * 8 + ii < m * 8 - 1)  # false for the last element
    assert not ana.can_prove(io * 9 + ii < m * 8)


def test_simplify_joins_the_digits_of_an_index():
    # (k // 9, k % 9 // 3, k % 3): a 3x3 tap's channel, row and column, flattened back
    ana = Analyzer()
    k = tir.Var("k", "int32")
    tir.assert_structural_equal(ana.simplify(k // 9 * 9 + k % 9 // 3 * 3 + k % 3), k)
    tir.assert_structural_equal(ana.simplify(k % 8 // 4 * 4 + k % 4), k % 8)
    # 2 does not divide 9: no digit of k % 9
    e = k % 9 // 2 * 2 + k % 2
    assert str(ana.simplify(e)) == str(e)
