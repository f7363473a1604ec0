"""The expression simplifier: canonical linear forms plus rule tables.

How an expression is simplified, bottom-up (children first):

* signed scalar integers (index arithmetic): ``+``, ``-`` and ``* constant`` are
  collected into a :class:`~.linear.LinearForm` and rebuilt in a canonical order, so
  ``(io*32 + ii) - io*32 -> ii`` and ``i*4 + j - (j + i*4) -> 0``;
* every other node kind has a *rule table* below: one rule per line, its law in the
  rule's text.  The first rule that applies wins and its result is simplified again
  (rules always make the expression smaller or simpler, so this terminates);
* comparisons, ``min``/``max`` and divisions use the bounds and facts the
  :class:`~tecc.tir.arith.Analyzer` knows (bound loop variables, ``if`` conditions);
* floats are only constant-folded plus ``x*1 -> x``, ``x+0 -> x``: they are never
  reassociated.

Floor division and modulo (``//``, ``%``: :class:`FloorDiv`, :class:`FloorMod`) use the
floor rules; the C-style :class:`Div`/:class:`Mod` become floor operations only where the
dividend is proven non-negative and the divisor positive, so no rule changes a
program's meaning for negative values.  (Integer overflow is assumed not to happen in
index arithmetic, as in TVM.)

Every law is checked by randomized evaluation in ``tests/tir/test_arith.py``.
"""
from __future__ import annotations

import math
from functools import lru_cache

from .. import dtype as _dt
from .. import expr as E
from ..functor import IRMutator, substitute, uses_var
from ..op import _fold, _wrap_int, cast as _cast
from .linear import LinearForm

_MAX_REWRITE_DEPTH = 32


@lru_cache(maxsize=None)
def is_index_dtype(dtype: str) -> bool:
    """Signed scalar integers: the dtypes whose arithmetic is canonicalized."""
    d = _dt.parse(dtype)
    return d.is_int and d.lanes == 1


@lru_cache(maxsize=None)
def _is_float(dtype: str) -> bool:
    return _dt.parse(dtype).is_float


def _true():
    return E.IntImm("bool", 1)


def _false():
    return E.IntImm("bool", 0)


def _bool(v):
    return _true() if v else _false()


def _int(dtype, v):
    return E.IntImm(dtype, _wrap_int(v, _dt.parse(dtype)))


def _is_int_const(e, value=None):
    return type(e) is E.IntImm and e.dtype != "bool" and (value is None or e.value == value)


def _is_float_const(e, value=None):
    return type(e) is E.FloatImm and (value is None or e.value == value)


def _is_const(e, value=None):
    return _is_int_const(e, value) or _is_float_const(e, value)


class Rule:
    """One rewrite: ``law`` says what it does, ``fn(simp, e)`` returns the rewritten
    expression or ``None`` when it does not apply.  ``hits`` counts applications
    (tests use it to make sure every rule is exercised)."""

    __slots__ = ("law", "fn", "hits")

    def __init__(self, law, fn):
        self.law = law
        self.fn = fn
        self.hits = 0

    def __repr__(self):
        return f"Rule({self.law!r})"


def _first_match(rules, simp, e):
    for rule in rules:
        out = rule.fn(simp, e)
        if out is not None:
            rule.hits += 1
            return out
    return None


# ----------------------------------------------------------------------------
# helpers used by the rules
# ----------------------------------------------------------------------------

def _split_divisible(lf, c):
    """Split ``lf`` into ``(q, r)`` with ``lf == q*c + r`` exactly: terms whose
    coefficient is a multiple of ``c`` go to ``q``, and a constant of magnitude at
    least ``c`` gives its truncated quotient to ``q``."""
    q = LinearForm(lf.dtype)
    r = LinearForm(lf.dtype)
    for k, (atom, coef) in lf.terms.items():
        if coef % c == 0:
            q.terms[k] = [atom, coef // c]
        else:
            r.terms[k] = [atom, coef]
    qc = abs(lf.const) // c * (1 if lf.const >= 0 else -1)
    q.const = qc
    r.const = lf.const - qc * c
    return q, r


def _const_divisor(e):
    """The positive constant divisor of a division node, or None."""
    b = e.b
    if type(b) is E.IntImm and b.value > 0:
        return b.value
    return None


def _exact_quotient(s, e):
    """``x / c`` as a linear form when ``x`` is an exact multiple of the constant
    ``c != 0`` (then floor and truncating division agree), else None."""
    b = e.b
    if type(b) is not E.IntImm or b.value == 0:
        return None
    c = b.value
    lf = s.lin(e.a)
    if lf.const % c != 0 or any(coef % c != 0 for _, coef in lf.terms.values()):
        return None
    return LinearForm(lf.dtype, {k: [t[0], t[1] // c] for k, t in lf.terms.items()}, lf.const // c)


def _div_exact(s, e):
    # (x*c) // c -> x;  truncdiv(x*c, c) -> x         c != 0, any signs
    q = _exact_quotient(s, e)
    return None if q is None else q.to_expr()


def _mod_exact(s, e):
    # (x*c) % c -> 0;  truncmod(x*c, c) -> 0          c != 0, any signs
    q = _exact_quotient(s, e)
    return None if q is None else _int(e.dtype, 0)


# --- FloorDiv(x, c) ---------------------------------------------------------------

def _fd_by_one(s, e):
    # x // 1 -> x
    return e.a if _is_int_const(e.b, 1) else None


def _fd_bound(s, e):
    # x // c -> k                          if k*c <= x < (k+1)*c (bounds, c > 0)
    c = _const_divisor(e)
    if c is None:
        return None
    lo, hi = s.lf_bound(s.lin(e.a))
    if lo == -math.inf or hi == math.inf:
        return None
    k = lo // c
    return _int(e.dtype, k) if hi // c == k else None


def _fd_split(s, e):
    # (x*(c*q) + y) // c -> x*q + y // c    c > 0; also a constant with |k| >= c
    c = _const_divisor(e)
    if c is None:
        return None
    q, r = _split_divisible(s.lin(e.a), c)
    if q.is_const() and q.const == 0:
        return None
    return E.Add(q.to_expr(), E.FloorDiv(r.to_expr(), e.b))


def _fd_gcd(s, e):
    # (x*(g*a) + g*b) // (g*c) -> (x*a + b) // c      g = gcd > 1, c > 0
    c = _const_divisor(e)
    if c is None:
        return None
    lf = s.lin(e.a)
    g = math.gcd(math.gcd(lf.coef_gcd(), lf.const), c)
    if g <= 1:
        return None
    return E.FloorDiv(_div_form(lf, g).to_expr(), _int(e.dtype, c // g))


def _fd_nested(s, e):
    # (x // c1) // c2 -> x // (c1*c2)        c1 > 0, c2 > 0
    c2 = _const_divisor(e)
    inner = e.a
    if c2 is None or type(inner) is not E.FloorDiv:
        return None
    c1 = _const_divisor(inner)
    if c1 is None:
        return None
    return E.FloorDiv(inner.a, _int(e.dtype, c1 * c2))


def _fd_split_symbolic(s, e):
    # (x*y + z) // y -> x + z // y           y > 0 (symbolic divisor)
    y = e.b
    if _is_const(y) or s.lower(s.lin(y)) <= 0:
        return None
    q, r = s.split_by_factor(s.lin(e.a), y)
    if q is None:
        return None
    return E.Add(q.to_expr(), E.FloorDiv(r.to_expr(), y))


def _fd_bound_symbolic(s, e):
    # x // y -> 0                            0 <= x < y (facts), y symbolic
    y = e.b
    if _is_const(y):
        return None
    x = s.lin(e.a)
    if s.lower(x) >= 0 and s.upper(x.combine(s.lin(y), -1)) <= -1:
        return _int(e.dtype, 0)
    return None


def _small_remainder_split(s, e):
    """For ``x // c`` or ``x % c`` with constant ``c > 0``: the largest ``g > 1``
    dividing ``c`` such that ``x = g*q + r`` where every term of ``q`` is integral and
    the remaining terms ``r`` lie in ``[0, g)``; returns ``(g, c, q, r)`` or None."""
    c = _const_divisor(e)
    if c is None or c <= 1:
        return None
    lf = s.lin(e.a)
    if not lf.terms:
        return None
    for g in sorted((d for d in range(2, c + 1) if c % d == 0), reverse=True):
        big = {k: t for k, t in lf.terms.items() if t[1] % g == 0}
        if not big or len(big) == len(lf.terms):
            continue
        rest = LinearForm(lf.dtype, {k: t for k, t in lf.terms.items() if t[1] % g != 0}, lf.const % g)
        lo, hi = s.lf_bound(rest)
        if lo >= 0 and hi <= g - 1:
            q = LinearForm(lf.dtype, {k: [t[0], t[1] // g] for k, t in big.items()}, lf.const // g)
            return g, c, q, rest
    return None


def _fd_small_remainder(s, e):
    # (x*g + r) // (g*d) -> x // d            g > 1, 0 <= r < g  (r: the terms not divisible by g)
    found = _small_remainder_split(s, e)
    if found is None:
        return None
    g, c, q, _ = found
    return E.FloorDiv(q.to_expr(), _int(e.dtype, c // g))


def _fm_small_remainder(s, e):
    # (x*g + r) % (g*d) -> (x % d)*g + r      g > 1, 0 <= r < g
    found = _small_remainder_split(s, e)
    if found is None:
        return None
    g, c, q, r = found
    return E.Add(E.Mul(E.FloorMod(q.to_expr(), _int(e.dtype, c // g)), _int(e.dtype, g)), r.to_expr())


FLOORDIV_RULES = (
    Rule("x // 1 -> x", _fd_by_one),
    Rule("(x*c) // c -> x   if c != 0", _div_exact),
    Rule("x // c -> k   if k*c <= x < (k+1)*c", _fd_bound),
    Rule("(x*(c*q) + y) // c -> x*q + y // c   if c > 0", _fd_split),
    Rule("(x*(g*a) + g*b) // (g*c) -> (x*a + b) // c   if g > 1, c > 0", _fd_gcd),
    Rule("(x // c1) // c2 -> x // (c1*c2)   if c1 > 0, c2 > 0", _fd_nested),
    Rule("(x*g + r) // (g*d) -> x // d   if 0 <= r < g", _fd_small_remainder),
    Rule("x // y -> 0   if 0 <= x < y", _fd_bound_symbolic),
    Rule("(x*y + z) // y -> x + z // y   if y > 0", _fd_split_symbolic),
)


def _div_form(lf, g):
    out = LinearForm(lf.dtype, {k: [t[0], t[1] // g] for k, t in lf.terms.items()}, lf.const // g)
    return out


# --- FloorMod(x, c) ---------------------------------------------------------------

def _fm_by_one(s, e):
    # x % 1 -> 0
    return _int(e.dtype, 0) if _is_int_const(e.b, 1) else None


def _fm_bound(s, e):
    # x % c -> x - k*c                       if k*c <= x < (k+1)*c (bounds, c > 0)
    c = _const_divisor(e)
    if c is None:
        return None
    lf = s.lin(e.a)
    lo, hi = s.lf_bound(lf)
    if lo == -math.inf or hi == math.inf:
        return None
    k = lo // c
    if hi // c != k:
        return None
    return lf.combine(LinearForm(lf.dtype, const=-k * c)).to_expr()


def _fm_drop_multiples(s, e):
    # (x*(c*q) + y) % c -> y % c              c > 0; a constant k with |k| >= c is reduced
    c = _const_divisor(e)
    if c is None:
        return None
    q, r = _split_divisible(s.lin(e.a), c)
    if q.is_const() and q.const == 0:
        return None
    return E.FloorMod(r.to_expr(), e.b)


def _fm_nested(s, e):
    # (x % c1) % c2 -> x % c2                 c1 % c2 == 0, c1 > 0, c2 > 0
    c2 = _const_divisor(e)
    inner = e.a
    if c2 is None or type(inner) is not E.FloorMod:
        return None
    c1 = _const_divisor(inner)
    if c1 is None or c1 % c2 != 0:
        return None
    return E.FloorMod(inner.a, e.b)


def _fm_bound_symbolic(s, e):
    # x % y -> x                               0 <= x < y (facts), y symbolic
    y = e.b
    if _is_const(y):
        return None
    x = s.lin(e.a)
    if s.lower(x) >= 0 and s.upper(x.combine(s.lin(y), -1)) <= -1:
        return e.a
    return None


def _fm_split_symbolic(s, e):
    # (x*y + z) % y -> z % y                  y > 0 (symbolic divisor)
    y = e.b
    if _is_const(y) or s.lower(s.lin(y)) <= 0:
        return None
    q, r = s.split_by_factor(s.lin(e.a), y)
    if q is None:
        return None
    return E.FloorMod(r.to_expr(), y)


FLOORMOD_RULES = (
    Rule("x % 1 -> 0", _fm_by_one),
    Rule("(x*c) % c -> 0   if c != 0", _mod_exact),
    Rule("x % c -> x - k*c   if k*c <= x < (k+1)*c", _fm_bound),
    Rule("(x*(c*q) + y) % c -> y % c   if c > 0", _fm_drop_multiples),
    Rule("(x % c1) % c2 -> x % c2   if c1 % c2 == 0", _fm_nested),
    Rule("(x*g + r) % (g*d) -> (x % d)*g + r   if 0 <= r < g", _fm_small_remainder),
    Rule("x % y -> x   if 0 <= x < y", _fm_bound_symbolic),
    Rule("(x*y + z) % y -> z % y   if y > 0", _fm_split_symbolic),
)


# --- Div(x, c) and Mod(x, c): C truncation -----------------------------------------

def _td_by_one(s, e):
    # truncdiv(x, 1) -> x
    return e.a if _is_int_const(e.b, 1) else None


def _td_nonneg(s, e):
    # truncdiv(x, y) -> x // y               if x >= 0 and y > 0
    if s.lower(s.lin(e.a)) >= 0 and s.lower(s.lin(e.b)) > 0:
        return E.FloorDiv(e.a, e.b)
    return None


def _tm_by_one(s, e):
    # truncmod(x, 1) -> 0
    return _int(e.dtype, 0) if _is_int_const(e.b, 1) else None


def _tm_nonneg(s, e):
    # truncmod(x, y) -> x % y                if x >= 0 and y > 0
    if s.lower(s.lin(e.a)) >= 0 and s.lower(s.lin(e.b)) > 0:
        return E.FloorMod(e.a, e.b)
    return None


DIV_RULES = (
    Rule("truncdiv(x, 1) -> x", _td_by_one),
    Rule("truncdiv(x*c, c) -> x   if c != 0", _div_exact),
    Rule("truncdiv(x, y) -> x // y   if x >= 0, y > 0", _td_nonneg),
)

MOD_RULES = (
    Rule("truncmod(x, 1) -> 0", _tm_by_one),
    Rule("truncmod(x*c, c) -> 0   if c != 0", _mod_exact),
    Rule("truncmod(x, y) -> x % y   if x >= 0, y > 0", _tm_nonneg),
)


# --- Min / Max (integers) ----------------------------------------------------------

def _min_left(s, e):
    # min(x, y) -> x                          if x <= y
    return e.a if s.upper(s.lin(e.a).combine(s.lin(e.b), -1)) <= 0 else None


def _min_right(s, e):
    # min(x, y) -> y                          if y <= x
    return e.b if s.lower(s.lin(e.a).combine(s.lin(e.b), -1)) >= 0 else None


def _min_consts(s, e):
    # min(min(x, c1), c2) -> min(x, min(c1, c2))
    a, b = e.a, e.b
    if type(a) is E.Min and _is_int_const(a.b) and _is_int_const(b):
        return E.Min(a.a, _int(e.dtype, min(a.b.value, b.value)))
    return None


def _max_left(s, e):
    # max(x, y) -> x                          if x >= y
    return e.a if s.lower(s.lin(e.a).combine(s.lin(e.b), -1)) >= 0 else None


def _max_right(s, e):
    # max(x, y) -> y                          if y >= x
    return e.b if s.upper(s.lin(e.a).combine(s.lin(e.b), -1)) <= 0 else None


def _max_consts(s, e):
    # max(max(x, c1), c2) -> max(x, max(c1, c2))
    a, b = e.a, e.b
    if type(a) is E.Max and _is_int_const(a.b) and _is_int_const(b):
        return E.Max(a.a, _int(e.dtype, max(a.b.value, b.value)))
    return None


def _min_const_first(s, e):
    # min(c, x) -> min(x, c)
    if _is_int_const(e.a) and not _is_int_const(e.b):
        return type(e)(e.b, e.a)
    return None


MIN_RULES = (
    Rule("min(x, y) -> x   if x <= y", _min_left),
    Rule("min(x, y) -> y   if y <= x", _min_right),
    Rule("min(c, x) -> min(x, c)", _min_const_first),
    Rule("min(min(x, c1), c2) -> min(x, min(c1, c2))", _min_consts),
)

MAX_RULES = (
    Rule("max(x, y) -> x   if x >= y", _max_left),
    Rule("max(x, y) -> y   if y >= x", _max_right),
    Rule("max(c, x) -> max(x, c)", _min_const_first),
    Rule("max(max(x, c1), c2) -> max(x, max(c1, c2))", _max_consts),
)


# --- comparisons (integers): decided by bounds of  d = a - b --------------------------

# for each comparison: (is it true given d's bounds?, is it false given d's bounds?)
_CMP_DECIDE = {
    E.LT: (lambda lo, hi: hi < 0, lambda lo, hi: lo >= 0),
    E.LE: (lambda lo, hi: hi <= 0, lambda lo, hi: lo > 0),
    E.GT: (lambda lo, hi: lo > 0, lambda lo, hi: hi <= 0),
    E.GE: (lambda lo, hi: lo >= 0, lambda lo, hi: hi < 0),
    E.EQ: (lambda lo, hi: lo == hi == 0, lambda lo, hi: lo > 0 or hi < 0),
    E.NE: (lambda lo, hi: lo > 0 or hi < 0, lambda lo, hi: lo == hi == 0),
}

_FLIP = {E.LT: E.GT, E.GT: E.LT, E.LE: E.GE, E.GE: E.LE, E.EQ: E.EQ, E.NE: E.NE}
_NEGATE = {E.LT: E.GE, E.GE: E.LT, E.LE: E.GT, E.GT: E.LE, E.EQ: E.NE, E.NE: E.EQ}


def _cmp_decide(s, e):
    # a < b -> True if max(a - b) < 0, False if min(a - b) >= 0   (likewise <=, >, >=, ==, !=)
    d = s.lin(e.a).combine(s.lin(e.b), -1)
    is_true, is_false = _CMP_DECIDE[type(e)]
    lo, hi = s.lf_bound(d)
    if is_true(lo, hi):
        return _true()
    if is_false(lo, hi):
        return _false()
    # the facts of enclosing conditions tighten the bounds (more costly: last)
    lo, hi = s.lower(d), s.upper(d)
    if is_true(lo, hi):
        return _true()
    if is_false(lo, hi):
        return _false()
    return None


def _cmp_normalize(s, e):
    # x + c1 < y + c2 -> x < y + (c2 - c1);  g*x < g*y + c -> x < y + ceil(c/g)   (terms with
    # positive coefficients on the left, the constant on the right)
    cls = type(e)
    d = s.lin(e.a).combine(s.lin(e.b), -1)
    g = d.coef_gcd()
    c = -d.const  # d < 0  <=>  sum(terms) < c
    if g > 1:
        terms = _div_form(LinearForm(d.dtype, d.terms), g)
        if cls is E.EQ or cls is E.NE:
            if c % g != 0:
                return _bool(cls is E.NE)
            c = c // g
        elif cls is E.LT or cls is E.GE:
            c = -((-c) // g)  # ceil(c / g)
        else:
            c = c // g        # floor(c / g)
    else:
        terms = LinearForm(d.dtype, d.terms)
    pos = LinearForm(d.dtype, {k: t for k, t in terms.terms.items() if t[1] > 0})
    neg = LinearForm(d.dtype, {k: [t[0], -t[1]] for k, t in terms.terms.items() if t[1] < 0})
    if pos.is_const():
        # only negative terms: -(neg) op c  <=>  neg flip(op) -c
        pos, neg, c, cls = neg, pos, -c, _FLIP[cls]
    rhs = neg.combine(LinearForm(d.dtype, const=c))
    out = cls(pos.to_expr(), rhs.to_expr())
    return None if s.key(out) == s.key(e) else out


INT_CMP_RULES = (
    Rule("a < b -> True/False   if the bounds of a - b decide it", _cmp_decide),
    Rule("x + c1 < y + c2 -> x < y + (c2 - c1)   (canonical sides, gcd divided out)", _cmp_normalize),
)


# --- logic --------------------------------------------------------------------------

def _and_const(s, e):
    # True && x -> x;  False && x -> False;  x && True -> x;  x && False -> False
    a, b = e.a, e.b
    if type(a) is E.IntImm:
        return b if a.value else a
    if type(b) is E.IntImm:
        return a if b.value else b
    return None


def _and_same(s, e):
    # x && x -> x
    return e.a if s.key(e.a) == s.key(e.b) else None


def _and_contradiction(s, e):
    # x && !x -> False
    a, b = e.a, e.b
    if (type(b) is E.Not and s.key(b.a) == s.key(a)) or (type(a) is E.Not and s.key(a.a) == s.key(b)):
        return _false()
    return None


def _and_implied(s, e):
    # x && y -> x   if x implies y;   x && y -> y   if y implies x
    if s.implies(e.a, e.b):
        return e.a
    if s.implies(e.b, e.a):
        return e.b
    return None


def _and_refuted(s, e):
    # x && y -> False   if x implies !y
    if s.implies(e.a, E.Not(e.b)):
        return _false()
    return None


AND_RULES = (
    Rule("True && x -> x;  False && x -> False", _and_const),
    Rule("x && x -> x", _and_same),
    Rule("x && !x -> False", _and_contradiction),
    Rule("x && y -> x   if x implies y", _and_implied),
    Rule("x && y -> False   if x implies !y", _and_refuted),
)


def _or_const(s, e):
    # True || x -> True;  False || x -> x
    a, b = e.a, e.b
    if type(a) is E.IntImm:
        return a if a.value else b
    if type(b) is E.IntImm:
        return b if b.value else a
    return None


def _or_same(s, e):
    # x || x -> x
    return e.a if s.key(e.a) == s.key(e.b) else None


def _or_tautology(s, e):
    # x || !x -> True
    a, b = e.a, e.b
    if (type(b) is E.Not and s.key(b.a) == s.key(a)) or (type(a) is E.Not and s.key(a.a) == s.key(b)):
        return _true()
    return None


def _or_implied(s, e):
    # x || y -> y   if x implies y;   x || y -> x   if y implies x
    if s.implies(e.a, e.b):
        return e.b
    if s.implies(e.b, e.a):
        return e.a
    return None


def _or_complete(s, e):
    # x || y -> True   if !x implies y
    if s.implies(E.Not(e.a), e.b):
        return _true()
    return None


OR_RULES = (
    Rule("True || x -> True;  False || x -> x", _or_const),
    Rule("x || x -> x", _or_same),
    Rule("x || !x -> True", _or_tautology),
    Rule("x || y -> y   if x implies y", _or_implied),
    Rule("x || y -> True   if !x implies y", _or_complete),
)


def _not_const(s, e):
    # !True -> False;  !False -> True
    if type(e.a) is E.IntImm:
        return _bool(not e.a.value)
    return None


def _not_not(s, e):
    # !!x -> x
    return e.a.a if type(e.a) is E.Not else None


def _not_cmp(s, e):
    # !(a < b) -> a >= b  (and the other comparisons; == / != also for floats: NaN-safe)
    a = e.a
    if not isinstance(a, E.CmpOp):
        return None
    cls = type(a)
    if _dt.parse(a.a.dtype).is_float and cls not in (E.EQ, E.NE):
        return None  # !(a < b) is not a >= b when either is NaN
    return _NEGATE[cls](a.a, a.b)


def _not_and(s, e):
    # !(x && y) -> !x || !y   when both negations simplify to comparisons
    a = e.a
    if type(a) is not E.And or not isinstance(a.a, E.CmpOp) or not isinstance(a.b, E.CmpOp):
        return None
    return E.Or(E.Not(a.a), E.Not(a.b))


def _not_or(s, e):
    # !(x || y) -> !x && !y   when both are comparisons
    a = e.a
    if type(a) is not E.Or or not isinstance(a.a, E.CmpOp) or not isinstance(a.b, E.CmpOp):
        return None
    return E.And(E.Not(a.a), E.Not(a.b))


NOT_RULES = (
    Rule("!True -> False;  !False -> True", _not_const),
    Rule("!!x -> x", _not_not),
    Rule("!(a < b) -> a >= b   (integers; ==/!= for all)", _not_cmp),
    Rule("!(a < b && c < d) -> a >= b || c >= d", _not_and),
    Rule("!(a < b || c < d) -> a >= b && c >= d", _not_or),
)


# --- select -------------------------------------------------------------------------

def _select_const(s, e):
    # select(True, x, y) -> x;  select(False, x, y) -> y
    c = e.condition
    if type(c) is E.IntImm:
        return e.true_value if c.value else e.false_value
    return None


def _select_same(s, e):
    # select(c, x, x) -> x
    return e.true_value if s.key(e.true_value) == s.key(e.false_value) else None


def _select_not(s, e):
    # select(!c, x, y) -> select(c, y, x)
    c = e.condition
    if type(c) is E.Not:
        return E.Select(c.a, e.false_value, e.true_value)
    return None


SELECT_RULES = (
    Rule("select(True, x, y) -> x;  select(False, x, y) -> y", _select_const),
    Rule("select(c, x, x) -> x", _select_same),
    Rule("select(!c, x, y) -> select(c, y, x)", _select_not),
)


# --- floats, unsigned integers, bools and vectors: exact identities only ----------------

def _zero_right(cls_name):
    def f(s, e):
        return e.a if _is_const(e.b, 0) and not _dt.parse(e.dtype).is_bool else None
    f.__name__ = f"_{cls_name}_zero_right"
    return f


def _add_zero_left(s, e):
    # 0 + x -> x
    return e.b if _is_const(e.a, 0) else None


def _mul_one(s, e):
    # x * 1 -> x;  1 * x -> x
    if _is_const(e.b, 1):
        return e.a
    if _is_const(e.a, 1):
        return e.b
    return None


def _mul_zero_int(s, e):
    # x * 0 -> 0   (integers only: for floats inf*0 is NaN)
    if not _dt.parse(e.dtype).is_float:
        if _is_int_const(e.b, 0):
            return e.b
        if _is_int_const(e.a, 0):
            return e.a
    return None


def _div_one(s, e):
    # x / 1 -> x;  x // 1 -> x   (integer or float)
    return e.a if _is_const(e.b, 1) else None


def _minmax_same(s, e):
    # min(x, x) -> x;  max(x, x) -> x
    return e.a if s.key(e.a) == s.key(e.b) else None


def _bcast_bcast(s, e):
    # broadcast(x, n) op broadcast(y, n) -> broadcast(x op y, n)
    a, b = e.a, e.b
    if type(a) is E.Broadcast and type(b) is E.Broadcast and a.lanes == b.lanes:
        return E.Broadcast(type(e)(a.value, b.value), a.lanes)
    return None


def _ramp_add(s, e):
    # ramp(b1, s1, n) + ramp(b2, s2, n) -> ramp(b1 + b2, s1 + s2, n);  ramp + broadcast likewise
    a, b = e.a, e.b
    if type(e) is E.Sub and type(b) is E.Broadcast and type(a) is E.Ramp:
        return E.Ramp(E.Sub(a.base, b.value), a.stride, a.lanes)
    if type(e) is not E.Add:
        return None
    if type(a) is E.Broadcast and type(b) is E.Ramp:
        a, b = b, a
    if type(a) is E.Ramp and type(b) is E.Ramp and a.lanes == b.lanes:
        return E.Ramp(E.Add(a.base, b.base), E.Add(a.stride, b.stride), a.lanes)
    if type(a) is E.Ramp and type(b) is E.Broadcast and a.lanes == b.lanes:
        return E.Ramp(E.Add(a.base, b.value), a.stride, a.lanes)
    return None


def _ramp_mul(s, e):
    # ramp(b, s, n) * broadcast(x, n) -> ramp(b*x, s*x, n)
    a, b = e.a, e.b
    if type(a) is E.Broadcast and type(b) is E.Ramp:
        a, b = b, a
    if type(a) is E.Ramp and type(b) is E.Broadcast and a.lanes == b.lanes:
        return E.Ramp(E.Mul(a.base, b.value), E.Mul(a.stride, b.value), a.lanes)
    return None


OTHER_BINARY_RULES = {
    E.Add: (Rule("x + 0 -> x", _zero_right("add")), Rule("0 + x -> x", _add_zero_left),
            Rule("broadcast(x) + broadcast(y) -> broadcast(x + y)", _bcast_bcast),
            Rule("ramp(b, s) + broadcast(x) -> ramp(b + x, s)", _ramp_add)),
    E.Sub: (Rule("x - 0 -> x", _zero_right("sub")),
            Rule("broadcast(x) - broadcast(y) -> broadcast(x - y)", _bcast_bcast),
            Rule("ramp(b, s) - broadcast(x) -> ramp(b - x, s)", _ramp_add)),
    E.Mul: (Rule("x * 1 -> x", _mul_one), Rule("x * 0 -> 0   (not floats)", _mul_zero_int),
            Rule("broadcast(x) * broadcast(y) -> broadcast(x * y)", _bcast_bcast),
            Rule("ramp(b, s) * broadcast(x) -> ramp(b*x, s*x)", _ramp_mul)),
    E.Div: (Rule("x / 1 -> x", _div_one),
            Rule("broadcast(x) / broadcast(y) -> broadcast(x / y)", _bcast_bcast)),
    E.FloorDiv: (Rule("x // 1 -> x   (non-index dtypes)", _div_one),
                 Rule("broadcast(x) // broadcast(y) -> broadcast(x // y)", _bcast_bcast)),
    E.FloorMod: (Rule("broadcast(x) % broadcast(y) -> broadcast(x % y)", _bcast_bcast),),
    E.Mod: (Rule("broadcast(x) % broadcast(y) -> broadcast(truncmod(x, y))", _bcast_bcast),),
    E.Min: (Rule("min(x, x) -> x   (non-index dtypes)", _minmax_same),
            Rule("min(broadcast(x), broadcast(y)) -> broadcast(min(x, y))", _bcast_bcast)),
    E.Max: (Rule("max(x, x) -> x   (non-index dtypes)", _minmax_same),
            Rule("max(broadcast(x), broadcast(y)) -> broadcast(max(x, y))", _bcast_bcast)),
}


def all_rule_tables():
    """Every rule table, by name (for tests and documentation)."""
    tables = {
        "floordiv": FLOORDIV_RULES, "floormod": FLOORMOD_RULES, "truncdiv": DIV_RULES,
        "truncmod": MOD_RULES, "min": MIN_RULES, "max": MAX_RULES, "int_cmp": INT_CMP_RULES,
        "and": AND_RULES, "or": OR_RULES, "not": NOT_RULES, "select": SELECT_RULES,
    }
    for cls, rules in OTHER_BINARY_RULES.items():
        tables["other_" + cls.__name__.lower()] = rules
    return tables


_INDEX_RULES = {
    E.FloorDiv: FLOORDIV_RULES, E.FloorMod: FLOORMOD_RULES, E.Div: DIV_RULES, E.Mod: MOD_RULES,
    E.Min: MIN_RULES, E.Max: MAX_RULES,
}

_CMP_FOLD = {
    E.EQ: lambda a, b: a == b, E.NE: lambda a, b: a != b, E.LT: lambda a, b: a < b,
    E.LE: lambda a, b: a <= b, E.GT: lambda a, b: a > b, E.GE: lambda a, b: a >= b,
}


# ----------------------------------------------------------------------------
# the simplifier
# ----------------------------------------------------------------------------

class Simplifier(IRMutator):
    """Simplifies expressions using the knowledge of an Analyzer (use
    :meth:`Analyzer.simplify`, not this class directly)."""

    def __init__(self, analyzer):
        self.ana = analyzer
        self._depth = 0

    # entry and memo -----------------------------------------------------------------
    def visit(self, e):
        memo = self.ana._simp_memo
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = IRMutator.visit(self, e)
        truths = self.ana._truths
        if truths and type(r) is not E.IntImm and r.dtype == "bool":
            known = truths.get(self.key(r))
            if known is not None:
                r = _bool(known)
        memo[id(e)] = (e, r)
        memo[id(r)] = (r, r)
        return r

    def _again(self, e):
        """Simplify the result of a rule (its children are mostly simplified)."""
        if self._depth > _MAX_REWRITE_DEPTH:
            return e
        self._depth += 1
        try:
            return self.visit(e)
        finally:
            self._depth -= 1

    def _finish(self, old, new):
        """``old`` if ``new`` has the same structure (keeps identity), else ``new``."""
        if new is old or self.key(new) == self.key(old):
            return old
        return new

    # shared analysis ---------------------------------------------------------------
    def key(self, e):
        return self.ana._interner.key(e)

    def lin(self, e) -> LinearForm:
        """The linear form of an (already simplified) integer expression."""
        cache = self.ana._lin_cache
        hit = cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        cls = type(e)
        dt = e.dtype
        if cls is E.IntImm:
            lf = LinearForm(dt, const=e.value)
        elif cls is E.Add:
            lf = self.lin(e.a).combine(self.lin(e.b))
        elif cls is E.Sub:
            lf = self.lin(e.a).combine(self.lin(e.b), -1)
        elif cls is E.Mul and type(e.b) is E.IntImm:
            lf = self.lin(e.a).scaled(e.b.value)
        elif cls is E.Mul and type(e.a) is E.IntImm:
            lf = self.lin(e.b).scaled(e.a.value)
        else:
            lf = LinearForm.atom(dt, self.key(e), e)
        cache[id(e)] = (e, lf)
        return lf

    def lf_bound(self, lf):
        """Constant bounds of a linear form from its atoms' bounds."""
        lo = hi = lf.const
        bound = self.ana._bound_an.bound
        for atom, coef in lf.terms.values():
            alo, ahi = bound(atom)
            if coef > 0:
                lo += coef * alo if alo != -math.inf else -math.inf
                hi += coef * ahi if ahi != math.inf else math.inf
            else:
                lo += coef * ahi if ahi != math.inf else -math.inf
                hi += coef * alo if alo != -math.inf else math.inf
        return lo, hi

    def upper(self, lf):
        """An upper bound of ``lf`` using the atoms' bounds and the known facts
        ``S <= k`` (``lf = S + (lf - S)``)."""
        best = self.lf_bound(lf)[1]
        for fact, k in self.ana._facts:
            if not any(key in lf.terms for key in fact.terms):
                continue
            cand = k + self.lf_bound(lf.combine(fact, -1))[1]
            if cand < best:
                best = cand
        return best

    def lower(self, lf):
        return -self.upper(lf.scaled(-1))

    def implies(self, a, b) -> bool:
        """True if condition ``a`` proves condition ``b`` (within current knowledge)."""
        if not (isinstance(a, E.CmpOp) or type(a) in (E.And, E.Not)):
            return False
        if not (isinstance(b, E.CmpOp) or type(b) is E.Not):
            return False
        with self.ana.constraint_scope(a):
            r = self.visit(b)
        return type(r) is E.IntImm and bool(r.value)

    def split_by_factor(self, lf, y):
        """Split ``lf`` into ``(q, r)`` with ``lf == q*y + r`` where ``q`` collects the
        terms that are products with the factor ``y``; ``(None, None)`` if none."""
        ky = self.key(y)
        q = LinearForm(lf.dtype)
        r = LinearForm(lf.dtype, const=lf.const)
        for k, (atom, coef) in lf.terms.items():
            other = None
            if k == ky:
                other = _int(lf.dtype, 1)
            elif type(atom) is E.Mul:
                if self.key(atom.b) == ky:
                    other = atom.a
                elif self.key(atom.a) == ky:
                    other = atom.b
            if other is None:
                r.terms[k] = [atom, coef]
            else:
                q = q.combine(self.lin(other).scaled(coef))
        if not q.terms and q.const == 0:
            return None, None
        return q, r

    # leaves ---------------------------------------------------------------------------
    def visit_IntImm(self, e):
        return e

    def visit_FloatImm(self, e):
        return e

    def visit_StringImm(self, e):
        return e

    def visit_Var(self, v):
        val = self.ana._values.get(v)
        return v if val is None else val

    # linear arithmetic ---------------------------------------------------------------------
    def _linear(self, e, lf):
        lf = self._merge_div_mod(lf)
        return self._finish(e, lf.to_expr())

    def _merge_div_mod(self, lf):
        # (x // y)*y*k + (x % y)*k -> x*k;  truncdiv(x, y)*y*k + truncmod(x, y)*k -> x*k;
        # and, y dividing m: (x % m // y)*y*k + (x % y)*k -> (x % m)*k (floor division),
        # the split of an index into digits ((k // 9, k % 9 // 3, k % 3) of a 3x3 tap)
        for _ in range(8):
            found = None
            for k, (atom, coef) in lf.terms.items():
                cls = type(atom)
                if cls is not E.FloorMod and cls is not E.Mod:
                    continue
                dcls = E.FloorDiv if cls is E.FloorMod else E.Div
                pair = self._find_quotient(lf, dcls, atom, coef)
                x = atom.a
                if pair is None and cls is E.FloorMod:
                    pair, x = self._find_digit_quotient(lf, atom, coef)
                if pair is not None:
                    found = (k, pair, x)
                    break
            if found is None:
                return lf
            k_mod, k_div, x = found
            coef = lf.terms[k_mod][1]
            rest = LinearForm(lf.dtype, {k: t for k, t in lf.terms.items() if k not in (k_mod, k_div)},
                              lf.const)
            lf = rest.combine(self.lin(x).scaled(coef))
        return lf

    def _find_digit_quotient(self, lf, mod_atom, coef):
        """``(key, x % m)`` of a term ``(x % m // y) * y * coef`` in ``lf`` matching
        ``x % y`` (constant ``y`` dividing a constant ``m``), else ``(None, None)``."""
        y = mod_atom.b
        if type(y) is not E.IntImm or y.value <= 0:
            return None, None
        kx = self.key(mod_atom.a)
        for k, (atom, c) in lf.terms.items():
            if type(atom) is not E.FloorDiv or type(atom.b) is not E.IntImm or atom.b.value != y.value:
                continue
            inner = atom.a
            if type(inner) is not E.FloorMod or type(inner.b) is not E.IntImm or inner.b.value % y.value:
                continue
            if c == coef * y.value and self.key(inner.a) == kx:
                return k, inner
        return None, None

    def _find_quotient(self, lf, dcls, mod_atom, coef):
        """The key of the term ``(x // y) * y * coef`` matching ``x % y``, if in ``lf``."""
        keys = self.ana._interner
        kx, ky = self.key(mod_atom.a), self.key(mod_atom.b)
        kdiv = keys.lookup((dcls, kx, ky))
        if kdiv is None:
            return None
        y = mod_atom.b
        if type(y) is E.IntImm:
            t = lf.terms.get(kdiv)
            if t is not None and t[1] == coef * y.value:
                return kdiv
            return None
        for sig in ((E.Mul, ky, kdiv), (E.Mul, kdiv, ky)):
            kprod = keys.lookup(sig)
            if kprod is not None:
                t = lf.terms.get(kprod)
                if t is not None and t[1] == coef:
                    return kprod
        return None

    def visit_Add(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index_dtype(e.dtype):
            return self._linear(e, self.lin(a).combine(self.lin(b)))
        return self._other_binary(e, a, b)

    def visit_Sub(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index_dtype(e.dtype):
            return self._linear(e, self.lin(a).combine(self.lin(b), -1))
        return self._other_binary(e, a, b)

    def visit_Mul(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if not is_index_dtype(e.dtype):
            return self._other_binary(e, a, b)
        la, lb = self.lin(a), self.lin(b)
        if lb.is_const():
            return self._linear(e, la.scaled(lb.const))
        if la.is_const():
            return self._linear(e, lb.scaled(la.const))
        # a product of non-constants is an atom; pull constant factors out of it:
        # (x*c1) * (y*c2) -> (x*y) * (c1*c2), factors in a stable order
        ka = self._single_term(la)
        kb = self._single_term(lb)
        if ka is not None and kb is not None:
            prod = self._ordered_mul(e, ka[0], kb[0])
            return self._linear(e, LinearForm.atom(e.dtype, self.key(prod), prod, ka[1] * kb[1]))
        prod = self._ordered_mul(e, a, b)
        return self._finish(e, prod)

    @staticmethod
    def _single_term(lf):
        if lf.const == 0 and len(lf.terms) == 1:
            (atom, coef), = lf.terms.values()
            return atom, coef
        return None

    def _ordered_mul(self, e, x, y):
        # x*y -> y*x when y sorts first: variables by name first, then other terms
        if _factor_rank(y) < _factor_rank(x):
            x, y = y, x
        if e.a is x and e.b is y:
            return e
        return E.Mul(x, y)

    # division, modulo, min, max ---------------------------------------------------------
    def _index_binary(self, e, a, b):
        cls = type(e)
        if type(a) is E.IntImm and type(b) is E.IntImm:
            folded = _fold(cls, a, b)
            if folded is not None:
                return folded
        node = e if (a is e.a and b is e.b) else cls(a, b)
        out = _first_match(_INDEX_RULES[cls], self, node)
        if out is None:
            return self._finish(e, node)
        return self._again(out)

    def _divmod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index_dtype(e.dtype):
            return self._index_binary(e, a, b)
        return self._other_binary(e, a, b)

    visit_FloorDiv = _divmod
    visit_FloorMod = _divmod
    visit_Div = _divmod
    visit_Mod = _divmod
    visit_Min = _divmod
    visit_Max = _divmod

    def _other_binary(self, e, a, b):
        """Floats, unsigned integers, bools and vectors: fold and exact identities."""
        cls = type(e)
        folded = _fold(cls, a, b)
        if folded is not None:
            return folded
        node = e if (a is e.a and b is e.b) else cls(a, b)
        out = _first_match(OTHER_BINARY_RULES.get(cls, ()), self, node)
        if out is None:
            return node
        return self._again(out)

    # comparisons and logic ---------------------------------------------------------------
    def visit_CmpOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        cls = type(e)
        if type(a) in (E.IntImm, E.FloatImm) and type(b) in (E.IntImm, E.FloatImm):
            return _bool(_CMP_FOLD[cls](a.value, b.value))
        node = e if (a is e.a and b is e.b) else cls(a, b)
        if is_index_dtype(a.dtype) and a.dtype == b.dtype:
            out = _first_match(INT_CMP_RULES, self, node)
            if out is not None:
                return self._again(out)
        elif not _is_float(a.dtype) and _dt.lanes(a.dtype) == 1 and self.key(a) == self.key(b):
            # x == x -> True (not for floats: NaN)
            return _bool(cls in (E.EQ, E.LE, E.GE))
        return node

    def _logic(self, e, rules):
        cls = type(e)
        if cls is E.Not:
            a = self.visit(e.a)
            node = e if a is e.a else E.Not(a)
        else:
            a, b = self.visit(e.a), self.visit(e.b)
            node = e if (a is e.a and b is e.b) else cls(a, b)
        out = _first_match(rules, self, node)
        return node if out is None else self._again(out)

    def visit_And(self, e):
        return self._logic(e, AND_RULES)

    def visit_Or(self, e):
        return self._logic(e, OR_RULES)

    def visit_Not(self, e):
        return self._logic(e, NOT_RULES)

    # other expressions ---------------------------------------------------------------------
    def visit_Select(self, e):
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        node = e if (c is e.condition and t is e.true_value and f is e.false_value) else E.Select(c, t, f)
        out = _first_match(SELECT_RULES, self, node)
        return node if out is None else self._again(out)

    def visit_Cast(self, e):
        v = self.visit(e.value)
        # cast of a constant -> constant;  cast(t, x) -> x  if x already has dtype t
        if type(v) in (E.IntImm, E.FloatImm) or v.dtype == e.dtype:
            return _cast(e.dtype, v)
        return e if v is e.value else E.Cast(e.dtype, v)

    def visit_Call(self, e):
        op = e.op
        if op == "if_then_else":
            return self._if_then_else(e)
        args = tuple(self.visit(a) if isinstance(a, E.PrimExpr) else a for a in e.args)
        if op == "likely" and type(args[0]) is E.IntImm:
            return args[0]  # likely(True) -> True
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return E.Call(e.dtype, op, args)

    def _if_then_else(self, e):
        cond = self.visit(e.args[0])
        if type(cond) is E.IntImm:
            # if_then_else(True, x, y) -> x;  if_then_else(False, x, y) -> y
            return self.visit(e.args[1] if cond.value else e.args[2])
        # each side is evaluated only when chosen: simplify it under its condition
        with self.ana.constraint_scope(cond):
            t = self.visit(e.args[1])
        with self.ana.constraint_scope(E.Not(cond)):
            f = self.visit(e.args[2])
        if self.key(t) == self.key(f):
            return t  # if_then_else(c, x, x) -> x
        if cond is e.args[0] and t is e.args[1] and f is e.args[2]:
            return e
        return E.Call(e.dtype, "if_then_else", (cond, t, f))

    def visit_Let(self, e):
        value = self.visit(e.value)
        if type(value) in (E.IntImm, E.FloatImm) or isinstance(value, E.Var):
            # let x = c in body -> body[x := c]   (constants and variables are free to copy)
            return self.visit(substitute(e.body, {e.var: value}))
        with self.ana._let_scope(e.var, value):
            body = self.visit(e.body)
        if not uses_var(body, lambda v: v is e.var):
            return body  # let x = v in body -> body   if body does not use x
        if value is e.value and body is e.body:
            return e
        return E.Let(e.var, value, body)

    def visit_Ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        if base is e.base and stride is e.stride:
            return e
        return E.Ramp(base, stride, e.lanes)

    def visit_Broadcast(self, e):
        v = self.visit(e.value)
        return e if v is e.value else E.Broadcast(v, e.lanes)

    def visit_Reduce(self, e):
        # TE-level node: simplify the parts, keep the reducer and axes
        return IRMutator.generic_visit(self, e)


def _factor_rank(x):
    if isinstance(x, E.Var):
        return (0, x.name)
    return (1, "")
