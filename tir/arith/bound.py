"""Constant integer bounds of expressions (interval arithmetic over Python ints).

Internally a bound is a pair ``(lo, hi)`` of Python ints, with ``-math.inf`` /
``math.inf`` for "unbounded".  The public :class:`ConstIntBound` turns infinities into
the sentinels :data:`ConstIntBound.NEG_INF` / :data:`ConstIntBound.POS_INF`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .. import dtype as _dt
from .. import expr as E

INF = math.inf


@dataclass(frozen=True)
class ConstIntBound:
    """Constant bounds ``min_value <= x <= max_value`` of an integer expression.

    Unbounded sides are :attr:`NEG_INF` / :attr:`POS_INF` (``-(2**63-1)`` and
    ``2**63-1``).
    """

    min_value: int
    max_value: int

    NEG_INF = -(2 ** 63 - 1)
    POS_INF = 2 ** 63 - 1

    @staticmethod
    def from_pair(lo, hi) -> "ConstIntBound":
        lo = ConstIntBound.NEG_INF if lo == -INF or lo < ConstIntBound.NEG_INF else int(lo)
        hi = ConstIntBound.POS_INF if hi == INF or hi > ConstIntBound.POS_INF else int(hi)
        return ConstIntBound(lo, hi)

    def is_const(self) -> bool:
        return self.min_value == self.max_value


@lru_cache(maxsize=None)
def dtype_bound(dtype: str):
    """The values a dtype can hold (64-bit integers count as unbounded)."""
    d = _dt.parse(dtype)
    if d.is_bool:
        return (0, 1)
    if d.is_integer and d.bits < 64:
        return (_dt.min_value(str(d.element_of())), _dt.max_value(str(d.element_of())))
    if d.is_uint:
        return (0, INF)
    return (-INF, INF)


def _mul(x, y):
    # 0 * inf is 0 here: a zero factor really is zero
    if x == 0 or y == 0:
        return 0
    return x * y


def mul_bound(a, b):
    c = (_mul(a[0], b[0]), _mul(a[0], b[1]), _mul(a[1], b[0]), _mul(a[1], b[1]))
    return (min(c), max(c))


def _floordiv(x, y):
    if x in (INF, -INF):
        return x if y > 0 else -x
    if y in (INF, -INF):
        return 0 if (x >= 0) == (y > 0) else -1
    return x // y


def _truncdiv(x, y):
    if x in (INF, -INF):
        return x if y > 0 else -x
    if y in (INF, -INF):
        return 0
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def div_bound(a, b, fn):
    """Bound of ``fn(a, b)`` (monotone in each argument where the divisor keeps its
    sign, so the corners give the extremes); None if the divisor's bound holds 0, or
    is empty (contradictory constraints: code that cannot run)."""
    if not (0 < b[0] <= b[1] or b[0] <= b[1] < 0):
        return None
    c = (fn(a[0], b[0]), fn(a[0], b[1]), fn(a[1], b[0]), fn(a[1], b[1]))
    return (min(c), max(c))


def floormod_bound(a, b):
    """Bound of ``floormod(a, b)``; None if the divisor may be zero."""
    blo, bhi = b
    if blo > 0:
        if blo == bhi and a[0] != -INF and a[1] != INF:
            k = a[0] // blo
            if a[1] // blo == k:  # inside one period: exact
                return (a[0] - k * blo, a[1] - k * blo)
        hi = bhi - 1
        if a[0] >= 0:
            hi = min(hi, a[1])
        return (0, hi)
    if bhi < 0:
        return (blo + 1, 0)
    return None


def truncmod_bound(a, b):
    """Bound of the C remainder ``a % b``; None if the divisor may be zero."""
    blo, bhi = b
    if blo > 0 or bhi < 0:
        m = max(abs(blo), abs(bhi)) - 1
        if a[0] >= 0:
            return (0, min(m, a[1]))
        if a[1] <= 0:
            return (max(-m, a[0]), 0)
        return (max(-m, a[0]), min(m, a[1]))
    return None


def union(a, b):
    return (min(a[0], b[0]), max(a[1], b[1]))


def intersect(a, b):
    return (max(a[0], b[0]), min(a[1], b[1]))


class BoundAnalysis:
    """Computes ``(lo, hi)`` of expressions from the variable bounds an
    :class:`~tecc.tir.arith.Analyzer` knows."""

    def __init__(self, analyzer):
        self.ana = analyzer

    def bound(self, e):
        ana = self.ana
        memo = ana._bound_memo
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = self._bound(e)
        memo[id(e)] = (e, r)
        return r

    def _bound(self, e):
        cls = type(e)
        if cls is E.IntImm:
            return (e.value, e.value)
        if isinstance(e, E.Var):
            return self.ana._var_bound(e)
        fn = _RULES.get(cls)
        if fn is not None:
            r = fn(self, e)
            if r is not None:
                return intersect(r, dtype_bound(e.dtype)) if _dt.is_integer(e.dtype) else r
        return dtype_bound(e.dtype)

    # one function per node class ------------------------------------------------
    def _add(self, e):
        a, b = self.bound(e.a), self.bound(e.b)
        return (a[0] + b[0], a[1] + b[1])

    def _sub(self, e):
        a, b = self.bound(e.a), self.bound(e.b)
        return (a[0] - b[1], a[1] - b[0])

    def _mul(self, e):
        return mul_bound(self.bound(e.a), self.bound(e.b))

    def _floordiv(self, e):
        return div_bound(self.bound(e.a), self.bound(e.b), _floordiv)

    def _div(self, e):
        if not _dt.is_integer(e.dtype):
            return None
        return div_bound(self.bound(e.a), self.bound(e.b), _truncdiv)

    def _floormod(self, e):
        return floormod_bound(self.bound(e.a), self.bound(e.b))

    def _mod(self, e):
        if not _dt.is_integer(e.dtype):
            return None
        return truncmod_bound(self.bound(e.a), self.bound(e.b))

    def _min(self, e):
        a, b = self.bound(e.a), self.bound(e.b)
        return (min(a[0], b[0]), min(a[1], b[1]))

    def _max(self, e):
        a, b = self.bound(e.a), self.bound(e.b)
        return (max(a[0], b[0]), max(a[1], b[1]))

    def _select(self, e):
        return union(self.bound(e.true_value), self.bound(e.false_value))

    def _cast(self, e):
        if not _dt.is_integer(e.dtype) and not _dt.is_bool(e.dtype):
            return None
        src = e.value.dtype
        if _dt.is_integer(src) or _dt.is_bool(src):
            inner = self.bound(e.value)
            target = dtype_bound(e.dtype)
            if target[0] <= inner[0] and inner[1] <= target[1]:
                return inner
        return None

    def _call(self, e):
        if e.op == "if_then_else":
            return union(self.bound(e.args[1]), self.bound(e.args[2]))
        if e.op == "abs" and _dt.is_integer(e.dtype):
            lo, hi = self.bound(e.args[0])
            if lo >= 0:
                return (lo, hi)
            if hi <= 0:
                return (-hi, -lo)
            return (0, max(-lo, hi))
        return None

    def _let(self, e):
        with self.ana._let_scope(e.var, e.value):
            return self.bound(e.body)

    def _ramp(self, e):
        base, stride = self.bound(e.base), self.bound(e.stride)
        last = mul_bound(stride, (e.lanes - 1, e.lanes - 1))
        return union(base, (base[0] + last[0], base[1] + last[1]))

    def _broadcast(self, e):
        return self.bound(e.value)


_RULES = {
    E.Add: BoundAnalysis._add,
    E.Sub: BoundAnalysis._sub,
    E.Mul: BoundAnalysis._mul,
    E.FloorDiv: BoundAnalysis._floordiv,
    E.Div: BoundAnalysis._div,
    E.FloorMod: BoundAnalysis._floormod,
    E.Mod: BoundAnalysis._mod,
    E.Min: BoundAnalysis._min,
    E.Max: BoundAnalysis._max,
    E.Select: BoundAnalysis._select,
    E.Cast: BoundAnalysis._cast,
    E.Call: BoundAnalysis._call,
    E.Let: BoundAnalysis._let,
    E.Ramp: BoundAnalysis._ramp,
    E.Broadcast: BoundAnalysis._broadcast,
}
