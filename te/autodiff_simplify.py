"""Solving the index relation of an adjoint, so that no Jacobian is ever built.

The adjoint of a tensor ``X`` read by ``C[a] = f(..., X[g(a, k)], ...)`` is, at a
point ``j`` of ``X``::

    dX[p, j] = sum over a (and the reduction axes k) where g(a, k) == j of
               H[p, a] * df/dX(a, k)

A :class:`SumTerm` is one such sum: its *summation variables* (``a``, ``k``, each
with a range), its *equations* (``g(a, k) == j``), its *conditions* and its
summand.  :func:`solve` eliminates summation variables with the equations --
Gaussian elimination over the integers: a variable with coefficient +-1 is solved
exactly (``a = j - 1``), one with coefficient ``c`` gives ``(rest) // c`` under the
condition ``rest % c == 0`` (strides) -- and turns the ranges of the eliminated
variables into conditions.  An equation ``x % c == j`` becomes ``x == c*q + j``
with a new variable ``q``, and ``x // c == j`` the conditions ``c*j <= x < c*j + c``
(so flattening and reshaping indices are solved too).  A condition linear in a
single remaining variable narrows that variable's range (``y*2 + r == h`` with
``0 <= r < 3`` leaves ``y`` in ``[ceil((h-2)/2), h//2]``); a range of at most one
point fixes the variable; the other conditions stay conditions.  What is left:

* no summation variable: the adjoint is ``cond ? summand : 0`` -- an expression;
* some: a reduction over the remaining variables only, with narrowed ranges.

A term whose conditions simplify to false is zero and disappears.  Index relations
that are not linear (``min(j + k, 9)``, a data-dependent ``take``) stay
conditions of a reduction over the consumer's whole domain: slower, still exact.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import op as _op
from ..tir.arith import Analyzer
from ..tir.functor import substitute, uses_var


@dataclass
class SumTerm:
    """``sum over svars (in their ranges) where all(conds) and all(eqs) of value``.

    ``svars``: ``[(Var, min, extent)]``; ``eqs``: ``[(lhs, rhs)]`` integer pairs.
    """

    value: E.PrimExpr
    svars: list
    conds: list = field(default_factory=list)
    eqs: list = field(default_factory=list)


@dataclass
class Solved:
    """A solved :class:`SumTerm`: ``outer_cond ? sum over axes where inner_cond of
    value : 0``.  ``axes``: ``[(Var, min, extent)]`` -- ranges in terms of the
    outer variables only."""

    value: E.PrimExpr
    axes: list
    outer_cond: E.PrimExpr
    inner_cond: E.PrimExpr


def _true():
    return _op.const(True, "bool")


def split_and(cond) -> list:
    """The conjuncts of ``cond`` (``a && (b && c) -> [a, b, c]``); a true constant
    gives none."""
    out = []
    stack = [cond]
    while stack:
        c = stack.pop()
        if isinstance(c, E.And):
            stack.append(c.b)
            stack.append(c.a)
        elif isinstance(c, E.IntImm) and c.value:
            continue
        else:
            out.append(c)
    return out


def conjunction(conds):
    out = _true()
    for c in conds:
        out = _op.logical_and(out, c)
    return out


def lift_nonzero(value):
    """``(conds, v)`` with ``value == (all(conds) ? v : 0)``: the conditions of
    selects whose other side is zero, taken out of products (``x * (c ? y : 0)``)."""
    from .autodiff_rules import is_zero

    t = type(value)
    if t is E.Select or (t is E.Call and value.op == "if_then_else"):
        c, a, b = (value.condition, value.true_value, value.false_value) if t is E.Select else value.args
        if is_zero(b):
            conds, v = lift_nonzero(a)
            return [c] + conds, v
        if is_zero(a):
            conds, v = lift_nonzero(b)
            return [_op.logical_not(c)] + conds, v
        return [], value
    if t is E.Mul:
        ca, a = lift_nonzero(value.a)
        cb, b = lift_nonzero(value.b)
        if not ca and not cb:
            return [], value
        return ca + cb, _op.mul(a, b)
    if t is E.Div:
        ca, a = lift_nonzero(value.a)
        if not ca:
            return [], value
        return ca, _op.div(a, value.b)
    if t is E.Cast:
        c, v = lift_nonzero(value.value)
        if not c:
            return [], value
        return c, _op.cast(value.dtype, v)
    return [], value


# ---------------------------------------------------------------------------------
# linear forms over the summation variables
# ---------------------------------------------------------------------------------

def _uses(e, vars_):
    return uses_var(e, lambda v: v in vars_)


def linear(e, vars_):
    """``(coefs, rest)`` with ``e == sum(coefs[v] * v) + rest`` and ``rest`` free of
    ``vars_``; None when ``e`` is not linear (with constant integer coefficients)
    in ``vars_``."""
    if not _uses(e, vars_):
        return {}, e
    t = type(e)
    if isinstance(e, E.Var):
        return {e: 1}, _op.const(0, e.dtype)
    if t is E.Add or t is E.Sub:
        la, lb = linear(e.a, vars_), linear(e.b, vars_)
        if la is None or lb is None:
            return None
        sign = 1 if t is E.Add else -1
        coefs = dict(la[0])
        for v, c in lb[0].items():
            coefs[v] = coefs.get(v, 0) + sign * c
        coefs = {v: c for v, c in coefs.items() if c}
        rest = _op.add(la[1], lb[1]) if sign > 0 else _op.sub(la[1], lb[1])
        return coefs, rest
    if t is E.Mul:
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(x, E.IntImm) and not _uses(x, vars_):
                ly = linear(y, vars_)
                if ly is None:
                    return None
                return {v: c * x.value for v, c in ly[0].items() if c * x.value}, _op.mul(ly[1], x)
        return None
    if t is E.Cast and _dt.is_integer(e.dtype) and _dt.is_integer(e.value.dtype):
        inner = linear(e.value, vars_)
        if inner is None:
            return None
        return inner[0], _op.cast(e.dtype, inner[1])
    return None


def _rebuild(coefs, rest, skip=None):
    """``sum(coefs[v] * v for v != skip) + rest``."""
    out = rest
    for v, c in coefs.items():
        if v is skip:
            continue
        term = v if c == 1 else _op.mul(v, _op.const(c, v.dtype))
        out = _op.add(out, term)
    return out


def _as_inequality(cond, vars_):
    """``(coefs, rest)`` meaning ``sum(coefs[v] * v) + rest >= 0`` for a linear integer
    comparison in ``vars_``; None otherwise."""
    t = type(cond)
    if t not in (E.LT, E.LE, E.GT, E.GE) or not _dt.is_integer(cond.a.dtype):
        return None
    a, b = cond.a, cond.b
    if t is E.LT:        # a < b   <=>  b - a - 1 >= 0
        diff = _op.sub(_op.sub(b, a), _op.const(1, a.dtype))
    elif t is E.LE:      # a <= b  <=>  b - a >= 0
        diff = _op.sub(b, a)
    elif t is E.GT:      # a > b   <=>  a - b - 1 >= 0
        diff = _op.sub(_op.sub(a, b), _op.const(1, a.dtype))
    else:                # a >= b  <=>  a - b >= 0
        diff = _op.sub(a, b)
    return linear(diff, vars_)


# ---------------------------------------------------------------------------------
# the solver
# ---------------------------------------------------------------------------------

class _State:
    def __init__(self, term, ana):
        self.ana = ana
        self.svars = {v: [lo, ext] for v, lo, ext in term.svars}
        self.value = term.value
        self.conds = []
        for c in term.conds:
            self.conds.extend(split_and(c))
        self.eqs = [(lhs, rhs) for lhs, rhs in term.eqs]
        # equalities among the conditions constrain the summation variables as well
        keep = []
        for c in self.conds:
            if type(c) is E.EQ and _dt.is_integer(c.a.dtype) and _uses(c, self.svars):
                self.eqs.append((c.a, c.b))
            else:
                keep.append(c)
        self.conds = keep
        self.fresh = 0

    def substitute(self, v, value):
        sub = {v: value}
        simp = self.ana.simplify
        self.eqs = [(simp(substitute(a, sub)), simp(substitute(b, sub))) for a, b in self.eqs]
        self.conds = [substitute(c, sub) for c in self.conds]
        self.value = substitute(self.value, sub)
        for rng in self.svars.values():
            rng[0], rng[1] = substitute(rng[0], sub), substitute(rng[1], sub)

    def _pick(self):
        """The equation to eliminate with next: one with a unit coefficient first."""
        best = None
        for n, (a, b) in enumerate(self.eqs):
            lf = linear(_op.sub(a, b), self.svars)
            if lf is None or not lf[0]:
                continue
            g = 0
            for c in lf[0].values():
                g = math.gcd(g, abs(c))
            unit = any(abs(c) == g for c in lf[0].values())
            score = (0 if unit else 1, n)
            if best is None or score < best[0]:
                best = (score, n, lf)
        return best

    def eliminate(self):
        """Solve the equations for summation variables while any can be solved."""
        while True:
            best = self._pick()
            if best is not None:
                _, n, (coefs, rest) = best
                self.eqs.pop(n)
                self._solve_linear(coefs, rest)
            elif not self._unfold_division():
                break
        # what no variable can solve stays a condition
        for a, b in self.eqs:
            self.conds.append(_op.eq(a, b))
        self.eqs = []

    def _solve_linear(self, coefs, rest):
        """Eliminate one variable of ``sum(coefs[v] * v) + rest == 0``."""
        simp = self.ana.simplify
        g = 0
        for c in coefs.values():
            g = math.gcd(g, abs(c))
        if g > 1:
            # sum(c v) == r (r = -rest) needs g | r; then sum(c/g v) == r // g
            r = simp(_op.neg(rest))
            self.conds.append(_op.eq(_op.floormod(r, g), _op.const(0, r.dtype)))
            rest = simp(_op.neg(_op.floordiv(r, g)))
            coefs = {v: c // g for v, c in coefs.items()}
        unit = [v for v, c in coefs.items() if abs(c) == 1]
        v = unit[0] if unit else min(coefs, key=lambda u: abs(coefs[u]))
        c = coefs[v]
        others = _rebuild(coefs, rest, skip=v)           # c*v + others == 0
        if c == 1:
            value = _op.neg(others)
        elif c == -1:
            value = others
        else:
            num = _op.neg(others) if c > 0 else others
            self.conds.append(_op.eq(_op.floormod(num, abs(c)), _op.const(0, num.dtype)))
            value = _op.floordiv(num, abs(c))
        value = simp(_op.cast(v.dtype, value))
        lo, ext = self.svars.pop(v)
        self.conds.append(_op.le(lo, value))
        self.conds.append(_op.lt(value, _op.add(lo, ext)))
        self.substitute(v, value)

    def _unfold_division(self):
        """Turn one equation ``x % c == r`` into ``x == c*q + r`` (``q`` a new summation
        variable), or one ``x // c == r`` into ``c*r <= x < c*r + c``; False if none."""
        for n, (a, b) in enumerate(self.eqs):
            for x, r in ((a, b), (b, a)):
                if type(x) not in (E.FloorMod, E.FloorDiv) or not isinstance(x.b, E.IntImm) or x.b.value <= 0:
                    continue
                if not _uses(x.a, self.svars) or _uses(r, self.svars):
                    continue
                c = _op.const(x.b.value, x.dtype)
                if type(x) is E.FloorDiv:
                    self.eqs.pop(n)
                    self.conds.append(_op.le(_op.mul(r, c), x.a))
                    self.conds.append(_op.lt(x.a, _op.add(_op.mul(r, c), c)))
                    return True
                q_range = self._bounds(_op.floordiv(x.a, c))
                if q_range is None:
                    continue
                self.fresh += 1
                q = E.Var(f"q{self.fresh}", x.dtype)
                self.svars[q] = list(q_range)
                self.eqs[n] = (x.a, _op.add(_op.mul(q, c), r))
                self.conds.append(_op.le(_op.const(0, r.dtype), r))
                self.conds.append(_op.lt(r, c))
                return True
        return False

    def _bounds(self, e):
        """``(min, extent)`` of ``e`` over the summation variables' ranges, or None."""
        from ..tir.arith.int_set import IntervalSet, NEG_INF, POS_INF

        doms = {}
        for v, (lo, ext) in self.svars.items():
            if _uses(lo, self.svars) or _uses(ext, self.svars):
                return None
            doms[v] = IntervalSet(lo, self.ana.simplify(_op.sub(_op.add(lo, ext), _op.const(1, lo.dtype))))
        s = self.ana.int_set(e, doms)
        if s.min_value is NEG_INF or s.max_value is POS_INF:
            return None
        lo = self.ana.simplify(s.min_value)
        return lo, self.ana.simplify(_op.add(_op.sub(s.max_value, lo), _op.const(1, lo.dtype)))

    def narrow(self):
        """Fold conditions on one remaining variable into its range; False if a
        condition is provably false (the whole term is zero)."""
        ana = self.ana
        ranges = {}
        for v, (lo, ext) in self.svars.items():
            lo = ana.simplify(lo)
            ranges[v] = [lo, ana.simplify(_op.sub(_op.add(lo, ext), _op.const(1, lo.dtype)))]
        # a range that depends on another summation variable becomes a condition
        for v, (lo, hi) in list(ranges.items()):
            if _uses(lo, self.svars) or _uses(hi, self.svars):
                from .autodiff_rules import NotDifferentiable
                raise NotDifferentiable(
                    f"the range of the reduction axis {v.name!r} depends on another axis that stays summed")
        keep = []
        for c in self.conds:
            for atom in split_and(ana.simplify(c)):
                if isinstance(atom, E.IntImm):
                    if not atom.value:
                        return False
                    continue
                ineq = _as_inequality(atom, self.svars)
                if ineq is not None and len(ineq[0]) == 1:
                    (v, c1), = ineq[0].items()
                    rest = ineq[1]
                    lo, hi = ranges[v]
                    if c1 > 0:   # c1*v + rest >= 0  ->  v >= ceil(-rest / c1)
                        bound = _op.neg(rest) if c1 == 1 else _op.floordiv(
                            _op.add(_op.neg(rest), _op.const(c1 - 1, rest.dtype)), c1)
                        ranges[v][0] = ana.simplify(_op.max(lo, _op.cast(v.dtype, bound)))
                    else:        # |c1|*v <= rest  ->  v <= floor(rest / |c1|)
                        bound = rest if c1 == -1 else _op.floordiv(rest, -c1)
                        ranges[v][1] = ana.simplify(_op.min(hi, _op.cast(v.dtype, bound)))
                    continue
                keep.append(atom)
        self.conds = keep
        self.ranges = ranges
        return True


def _at_most(a, b, ana):
    """True if ``a <= b`` is seen from their forms: ``min(b, x) <= b``,
    ``a <= max(a, y)``, or proven by ``ana``."""
    if ana.can_prove_equal(a, b):
        return True
    if type(a) is E.Min and (_at_most(a.a, b, ana) or _at_most(a.b, b, ana)):
        return True
    if type(b) is E.Max and (_at_most(a, b.a, ana) or _at_most(a, b.b, ana)):
        return True
    return ana.can_prove(_op.le(a, b))


def _le_min(a, b, ana):
    """The conditions of ``a <= b``, one per operand of a ``min`` in ``b``, the
    operands equal to ``a`` left out (``a <= min(a, x)  ->  a <= x``)."""
    operands, stack = [], [b]
    while stack:
        e = stack.pop()
        if type(e) is E.Min:
            stack.extend((e.b, e.a))
        elif not ana.can_prove_equal(e, a):
            operands.append(e)
    return [_op.le(a, e) for e in operands]


def solve(term, outer_ranges):
    """Solve ``term`` (see the module docs).

    Parameters
    ----------
    term : SumTerm
    outer_ranges : dict
        ``Var -> Range`` of the free (output) variables.

    Returns
    -------
    Solved or None
        None when the term is provably zero.
    """
    ana = Analyzer()
    for v, r in outer_ranges.items():
        ana.bind(v, r)
    lifted, value = lift_nonzero(term.value)
    term = SumTerm(value, term.svars, list(term.conds) + lifted, term.eqs)
    st = _State(term, ana)
    st.eliminate()
    if not st.narrow():
        return None
    axes = []
    conds = list(st.conds)
    value = st.value
    for v, (lo, hi) in st.ranges.items():
        ext = ana.simplify(_op.add(_op.sub(hi, lo), _op.const(1, lo.dtype)))
        if isinstance(ext, E.IntImm) and ext.value <= 0:
            return None     # an empty range: nothing to sum
        if ana.const_int_bound(ext).max_value <= 1 or _at_most(hi, lo, ana):
            # at most one point: v = lo, where lo <= hi
            if not (isinstance(ext, E.IntImm) and ext.value == 1):
                conds.extend(_le_min(lo, hi, ana))
            conds = [substitute(c, {v: lo}) for c in conds]
            value = substitute(value, {v: lo})
            continue
        if not ana.can_prove(_op.ge(ext, _op.const(0, ext.dtype))):
            ext = ana.simplify(_op.max(ext, _op.const(0, ext.dtype)))
        axes.append((v, lo, ext))
    svars = {v for v, _, _ in axes}
    outer, inner = [], []
    for c in conds:
        (inner if _uses(c, svars) else outer).append(c)
    outer_cond = ana.simplify(conjunction(outer))
    if isinstance(outer_cond, E.IntImm) and not outer_cond.value:
        return None
    # simplify the summand's indices knowing the ranges
    for v, lo, ext in axes:
        if not _uses(lo, svars) and not _uses(ext, svars):
            ana.bind(v, E.Range(lo, _op.max(ext, _op.const(1, ext.dtype))), allow_override=True)
    inner_cond = ana.simplify(conjunction(inner))
    if isinstance(inner_cond, E.IntImm) and not inner_cond.value:
        return None
    value = ana.simplify(value)
    return Solved(value, axes, outer_cond, inner_cond)
