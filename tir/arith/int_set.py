"""Symbolic integer intervals and the evaluation of an expression over them.

An :class:`IntervalSet` is the closed interval ``[min_value, max_value]``; each end is
a :class:`PrimExpr` (possibly symbolic, ``io*32``) or one of the sentinels
:data:`NEG_INF` / :data:`POS_INF`.  :func:`eval_set` answers "which values can ``expr``
take when ``i`` ranges over ``[0, 31]``?", which bound inference needs.
"""
from __future__ import annotations

from .. import expr as E
from ..op import convert
from .linear import Interner


class _Infinity:
    """A sentinel end of an interval."""

    __slots__ = ("sign",)

    def __init__(self, sign):
        self.sign = sign

    def __repr__(self):
        return "pos_inf" if self.sign > 0 else "neg_inf"


#: the lower end of an interval with no lower bound
NEG_INF = _Infinity(-1)
#: the upper end of an interval with no upper bound
POS_INF = _Infinity(1)


def _is_inf(x):
    return x is NEG_INF or x is POS_INF


class IntervalSet:
    """The closed integer interval ``[min_value, max_value]``.

    Parameters
    ----------
    min_value, max_value : PrimExpr, int, NEG_INF or POS_INF
        The ends (ints are converted to constants).
    """

    __slots__ = ("min_value", "max_value")

    def __init__(self, min_value, max_value):
        self.min_value = min_value if _is_inf(min_value) else convert(min_value)
        self.max_value = max_value if _is_inf(max_value) else convert(max_value)

    # constructors ----------------------------------------------------------------------
    @staticmethod
    def from_range(r) -> "IntervalSet":
        """``[r.min, r.min + r.extent - 1]`` (simplified)."""
        from .analyzer import Analyzer

        ana = Analyzer()
        lo = ana.simplify(r.min)
        return IntervalSet(lo, ana.simplify(lo + r.extent - 1))

    @staticmethod
    def single_point(e) -> "IntervalSet":
        e = convert(e)
        return IntervalSet(e, e)

    @staticmethod
    def everything() -> "IntervalSet":
        return IntervalSet(NEG_INF, POS_INF)

    @staticmethod
    def interval(min_value, max_value) -> "IntervalSet":
        return IntervalSet(min_value, max_value)

    # questions ----------------------------------------------------------------------------
    def is_single_point(self) -> bool:
        a, b = self.min_value, self.max_value
        if _is_inf(a) or _is_inf(b):
            return False
        return a is b or _same(a, b)

    def is_everything(self) -> bool:
        return self.min_value is NEG_INF and self.max_value is POS_INF

    def has_lower_bound(self) -> bool:
        return self.min_value is not NEG_INF

    def has_upper_bound(self) -> bool:
        return self.max_value is not POS_INF

    def is_bounded(self) -> bool:
        return self.has_lower_bound() and self.has_upper_bound()

    # set operations ---------------------------------------------------------------------------
    def union(self, other, analyzer=None) -> "IntervalSet":
        """The smallest interval containing both."""
        ana = analyzer or _default_analyzer()
        return IntervalSet(_combine(ana, E.Min, self.min_value, other.min_value, NEG_INF),
                           _combine(ana, E.Max, self.max_value, other.max_value, POS_INF))

    def intersect(self, other, analyzer=None) -> "IntervalSet":
        """The intersection (possibly empty, when min > max)."""
        ana = analyzer or _default_analyzer()
        return IntervalSet(_combine_keep(ana, E.Max, self.min_value, other.min_value),
                           _combine_keep(ana, E.Min, self.max_value, other.max_value))

    def to_range(self, analyzer=None):
        """``Range(min, max - min + 1)``.

        Raises
        ------
        ValueError
            If the interval is unbounded.
        """
        if not self.is_bounded():
            raise ValueError(f"cannot make a Range of the unbounded interval {self}")
        ana = analyzer or _default_analyzer()
        return E.Range(self.min_value, ana.simplify(self.max_value - self.min_value + 1))

    def __repr__(self):
        return f"IntervalSet[{self.min_value}, {self.max_value}]"

    __str__ = __repr__


def _same(a, b):
    keys = Interner()
    return keys.key(a) == keys.key(b)


def _default_analyzer():
    from .analyzer import Analyzer
    return Analyzer()


def _combine(ana, cls, a, b, inf):
    """min/max of two ends where an infinite end absorbs (union)."""
    if a is inf or b is inf:
        return inf
    if _is_inf(a):
        return b
    if _is_inf(b):
        return a
    return ana.simplify(cls(a, b))


def _combine_keep(ana, cls, a, b):
    """max of lower ends / min of upper ends (intersection): an infinite end yields."""
    if _is_inf(a):
        return b
    if _is_inf(b):
        return a
    return ana.simplify(cls(a, b))


def eval_set(expr, dom_map, analyzer=None) -> IntervalSet:
    """The interval of values ``expr`` takes over the domains in ``dom_map``.

    Parameters
    ----------
    expr : PrimExpr
        An integer expression.
    dom_map : dict
        ``Var -> IntervalSet or Range``.  Variables not in it stay symbolic.
    analyzer : Analyzer, optional
        What is known of the symbolic variables (e.g. a divisor proven positive);
        its range bindings are *not* relaxed (that is ``Analyzer.int_set``).

    Returns
    -------
    IntervalSet
        Simplified ends, e.g. ``io*32 + ii`` with ``ii`` in ``[0, 31]`` gives
        ``[io*32, io*32 + 31]``; ``everything()`` for what cannot be bounded.
    """
    from .analyzer import Analyzer

    return _eval_set(convert(expr), dict(dom_map), analyzer if analyzer is not None else Analyzer())


def _eval_set(expr, dom_map, ana):
    doms = {}
    for v, d in dom_map.items():
        if isinstance(v, E.IterVar):
            v = v.var
        if isinstance(d, E.Range):
            lo = ana.simplify(d.min)
            d = IntervalSet(lo, ana.simplify(lo + d.extent - 1))
        doms[v] = d
    s = _SetEval(doms, ana).eval(expr)
    if s.is_everything():
        return s
    lo = s.min_value if _is_inf(s.min_value) else ana.simplify(s.min_value)
    hi = s.max_value if _is_inf(s.max_value) else ana.simplify(s.max_value)
    return IntervalSet(lo, hi)


def _add(a, b):
    if _is_inf(a):
        return a
    if _is_inf(b):
        return b
    return E.Add(a, b)


def _neg_end(x):
    if x is NEG_INF:
        return POS_INF
    if x is POS_INF:
        return NEG_INF
    return None


class _SetEval:
    """Interval arithmetic over symbolic ends."""

    def __init__(self, doms, ana):
        self.doms = doms
        self.ana = ana

    def point(self, s):
        return s.min_value if s.is_single_point() or s.min_value is s.max_value else None

    def const_of(self, s):
        """The Python int if ``s`` is one constant point."""
        if s.min_value is s.max_value and type(s.min_value) is E.IntImm:
            return s.min_value.value
        if (type(s.min_value) is E.IntImm and type(s.max_value) is E.IntImm
                and s.min_value.value == s.max_value.value):
            return s.min_value.value
        return None

    def sign(self, e):
        """+1 if e >= 0 is proven, -1 if e <= 0, else 0."""
        b = self.ana.const_int_bound(e)
        if b.min_value >= 0:
            return 1
        if b.max_value <= 0:
            return -1
        return 0

    def eval(self, e):
        cls = type(e)
        if cls is E.IntImm or cls is E.FloatImm:
            return IntervalSet(e, e)
        if isinstance(e, E.Var):
            d = self.doms.get(e)
            return d if d is not None else IntervalSet(e, e)
        fn = getattr(self, "eval_" + cls.__name__, None)
        if fn is None:
            return IntervalSet.everything()
        return fn(e)

    def eval_Add(self, e):
        a, b = self.eval(e.a), self.eval(e.b)
        return IntervalSet(_add(a.min_value, b.min_value), _add(a.max_value, b.max_value))

    def eval_Sub(self, e):
        a, b = self.eval(e.a), self.eval(e.b)
        lo = a.min_value if _is_inf(a.min_value) else (
            _neg_end(b.max_value) or E.Sub(a.min_value, b.max_value))
        hi = a.max_value if _is_inf(a.max_value) else (
            _neg_end(b.min_value) or E.Sub(a.max_value, b.min_value))
        return IntervalSet(lo, hi)

    def _scale(self, s, k, sign):
        """``s * k`` for a factor ``k`` of known sign (``sign`` +1 / -1)."""
        def mul(x):
            if _is_inf(x):
                return x if sign > 0 else _neg_end(x)
            return E.Mul(x, k)
        if sign > 0:
            return IntervalSet(mul(s.min_value), mul(s.max_value))
        return IntervalSet(mul(s.max_value), mul(s.min_value))

    def eval_Mul(self, e):
        a, b = self.eval(e.a), self.eval(e.b)
        for s, t in ((a, b), (b, a)):
            p = self.point(t)
            if p is None:
                continue
            if type(p) is E.IntImm:
                if p.value == 0:
                    return IntervalSet(p, p)
                return self._scale(s, p, 1 if p.value > 0 else -1)
            sg = self.sign(p)
            if sg != 0:
                return self._scale(s, p, sg)
            if self.point(s) is not None:
                return IntervalSet.single_point(E.Mul(s.min_value, p))
            return IntervalSet.everything()
        # two ranges: only with constant ends
        ends = (a.min_value, a.max_value, b.min_value, b.max_value)
        if all(type(x) is E.IntImm for x in ends):
            prods = [x.value * y.value for x in ends[:2] for y in ends[2:]]
            return IntervalSet(E.IntImm(e.dtype, min(prods)), E.IntImm(e.dtype, max(prods)))
        return IntervalSet.everything()

    def _divisor(self, e):
        """The divisor as an expression proven positive, or None."""
        b = self.eval(e.b)
        p = self.point(b)
        if p is None:
            return None
        if type(p) is E.IntImm:
            return p if p.value > 0 else None
        return p if self.ana.const_int_bound(p).min_value > 0 else None

    def _monotone(self, s, d, cls):
        lo = s.min_value if _is_inf(s.min_value) else cls(s.min_value, d)
        hi = s.max_value if _is_inf(s.max_value) else cls(s.max_value, d)
        return IntervalSet(lo, hi)

    def eval_FloorDiv(self, e):
        d = self._divisor(e)
        if d is None:
            return IntervalSet.everything()
        return self._monotone(self.eval(e.a), d, E.FloorDiv)

    def eval_Div(self, e):
        d = self._divisor(e)
        if d is None:
            return IntervalSet.everything()
        # truncating division by a positive number is monotone too
        return self._monotone(self.eval(e.a), d, E.Div)

    def eval_FloorMod(self, e):
        d = self._divisor(e)
        if d is None:
            return IntervalSet.everything()
        s = self.eval(e.a)
        p = self.point(s)
        if p is not None:
            return IntervalSet.single_point(E.FloorMod(p, d))
        if s.is_bounded():
            # inside one period the modulo is exact
            ana = self.ana
            if ana.can_prove_equal(E.FloorDiv(s.min_value, d), E.FloorDiv(s.max_value, d)):
                return IntervalSet(E.FloorMod(s.min_value, d), E.FloorMod(s.max_value, d))
        return IntervalSet(E.IntImm(e.dtype, 0), E.Sub(d, E.IntImm(e.dtype, 1)))

    def eval_Mod(self, e):
        d = self._divisor(e)
        if d is None:
            return IntervalSet.everything()
        s = self.eval(e.a)
        if s.has_lower_bound() and self.ana.can_prove(E.GE(s.min_value, E.IntImm(e.dtype, 0))):
            return self.eval_FloorMod(E.FloorMod(e.a, e.b))
        # a C remainder has the sign of the dividend
        one = E.IntImm(e.dtype, 1)
        return IntervalSet(E.Sub(one, d), E.Sub(d, one))

    def eval_Min(self, e):
        a, b = self.eval(e.a), self.eval(e.b)
        return IntervalSet(_combine_keep(self.ana, E.Min, a.min_value, b.min_value)
                           if not (a.min_value is NEG_INF or b.min_value is NEG_INF) else NEG_INF,
                           _combine_keep(self.ana, E.Min, a.max_value, b.max_value))

    def eval_Max(self, e):
        a, b = self.eval(e.a), self.eval(e.b)
        return IntervalSet(_combine_keep(self.ana, E.Max, a.min_value, b.min_value),
                           _combine_keep(self.ana, E.Max, a.max_value, b.max_value)
                           if not (a.max_value is POS_INF or b.max_value is POS_INF) else POS_INF)

    def eval_Select(self, e):
        return self.eval(e.true_value).union(self.eval(e.false_value), self.ana)

    def eval_Call(self, e):
        if e.op == "if_then_else":
            return self.eval(e.args[1]).union(self.eval(e.args[2]), self.ana)
        return IntervalSet.everything()

    def eval_Cast(self, e):
        from .. import dtype as _dt
        src, dst = _dt.parse(e.value.dtype), _dt.parse(e.dtype)
        if not (src.is_integer and dst.is_integer and dst.bits >= src.bits and src.is_int == dst.is_int):
            return IntervalSet.everything()
        s = self.eval(e.value)

        def c(x):
            return x if _is_inf(x) else E.Cast(e.dtype, x)
        return IntervalSet(c(s.min_value), c(s.max_value))

    def eval_Let(self, e):
        saved = self.doms.get(e.var)
        self.doms[e.var] = self.eval(e.value)
        try:
            return self.eval(e.body)
        finally:
            if saved is None:
                del self.doms[e.var]
            else:
                self.doms[e.var] = saved
