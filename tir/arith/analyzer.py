"""The Analyzer: what is known about variables, and the questions asked about it.

An :class:`Analyzer` collects facts -- a loop variable's range (:meth:`Analyzer.bind`),
a variable's value, the condition of an enclosing ``if``
(:meth:`Analyzer.constraint_scope`) -- and answers with them: simplify an expression,
prove a condition, bound an expression by constants or by an interval.

Facts are kept three ways:

* constant bounds per variable (``i in [0, 1023]``), used by interval arithmetic;
* linear facts ``S <= k`` (``S`` a :class:`~.linear.LinearForm`), e.g. ``io*32 + ii <= 999``
  from ``if (io*32 + ii < 1000)`` or ``i - n <= -1`` from a loop over ``[0, n)``; an upper
  bound of ``T`` is then ``k + upper(T - S)``;
* literals known true or false (``x != y``, boolean variables).
"""
from __future__ import annotations

from contextlib import contextmanager

from .. import expr as E
from ..op import convert
from .bound import BoundAnalysis, ConstIntBound, dtype_bound, intersect
from .linear import Interner, LinearForm
from .rewrite import Simplifier, is_index_dtype


class Analyzer:
    """Simplifies and proves facts about integer expressions.

    Examples
    --------
    >>> ana = Analyzer()
    >>> ana.bind(ii, Range(0, 32))
    >>> ana.simplify((io * 32 + ii) // 32)   # -> io
    >>> ana.can_prove(ii < 32)               # -> True
    """

    def __init__(self):
        self._interner = Interner()
        self._lin_cache = {}
        self._bounds = {}    # Var -> (lo, hi) constant bounds
        self._ranges = {}    # Var -> IntervalSet (symbolic range, for int_set)
        self._values = {}    # Var -> PrimExpr: substituted by simplify
        self._facts = ()     # tuple of (LinearForm S, int k) meaning S <= k
        self._truths = {}    # structural key -> bool
        self._simplifier = Simplifier(self)
        self._bound_an = BoundAnalysis(self)
        self._reset_memo()

    def _reset_memo(self):
        self._simp_memo = {}
        self._bound_memo = {}

    # ---------------------------------------------------------------------------------
    # binding
    # ---------------------------------------------------------------------------------
    def bind(self, var, value_or_range, allow_override=False):
        """Tell the analyzer what ``var`` is.

        Parameters
        ----------
        var : Var
            The variable.
        value_or_range : Range, IntervalSet, PrimExpr or int
            A :class:`Range` means ``min <= var < min + extent``; an
            :class:`IntervalSet` means ``min_value <= var <= max_value``; an expression
            means ``var == value`` (simplify then substitutes it).
        allow_override : bool
            Replace an earlier, different binding of ``var`` instead of raising.

        Raises
        ------
        ValueError
            If ``var`` is already bound to something else and ``allow_override`` is False.
        """
        from .int_set import IntervalSet

        if isinstance(var, E.IterVar):
            var = var.var
        if not allow_override and (var in self._ranges or var in self._values):
            if not self._same_binding(var, value_or_range):
                raise ValueError(f"variable {var.name} is already bound; pass allow_override=True "
                                 "to replace its binding")
            return
        self._values.pop(var, None)
        self._ranges.pop(var, None)
        self._reset_memo()
        if isinstance(value_or_range, E.Range):
            lo = self.simplify(value_or_range.min)
            hi = self.simplify(lo + value_or_range.extent - 1)
            self._bind_interval(var, IntervalSet(lo, hi))
        elif isinstance(value_or_range, IntervalSet):
            self._bind_interval(var, value_or_range)
        else:
            value = self.simplify(convert(value_or_range))
            self._values[var] = value
            self._bounds[var] = self._bound_an.bound(value)
        self._reset_memo()

    def _same_binding(self, var, value_or_range):
        from .int_set import IntervalSet

        key = self._interner.key
        if isinstance(value_or_range, E.Range) and var in self._ranges:
            old = self._ranges[var]
            lo = self.simplify(value_or_range.min)
            hi = self.simplify(lo + value_or_range.extent - 1)
            return key(old.min_value) == key(lo) and key(old.max_value) == key(hi)
        if isinstance(value_or_range, IntervalSet) and var in self._ranges:
            old = self._ranges[var]
            return old.min_value is value_or_range.min_value and old.max_value is value_or_range.max_value
        if var in self._values and not isinstance(value_or_range, (E.Range, IntervalSet)):
            return key(self._values[var]) == key(self.simplify(convert(value_or_range)))
        return False

    def _bind_interval(self, var, iset):
        from .int_set import NEG_INF, POS_INF

        self._ranges[var] = iset
        lo = self._bound_an.bound(iset.min_value)[0] if iset.min_value is not NEG_INF else -float("inf")
        hi = self._bound_an.bound(iset.max_value)[1] if iset.max_value is not POS_INF else float("inf")
        if hi < lo:
            hi = lo  # an empty range: nothing inside runs; keep the state consistent
        self._bounds[var] = intersect((lo, hi), dtype_bound(var.dtype))
        if not is_index_dtype(var.dtype):
            return
        # symbolic ends become linear facts: min - var <= 0 and var - max <= 0
        facts = list(self._facts)
        v = self._simplifier.lin(var)
        for end, sign in ((iset.min_value, -1), (iset.max_value, 1)):
            if end is NEG_INF or end is POS_INF or type(end) is E.IntImm or end.dtype != var.dtype:
                continue
            s = v.combine(self._simplifier.lin(end), -1).scaled(sign)
            facts.append(_normalize_fact(s, 0))
        self._facts = tuple(facts)

    @contextmanager
    def _scope(self):
        """Undo every binding and fact added inside the ``with`` block."""
        saved = (self._bounds, self._ranges, self._values, self._facts, self._truths)
        self._bounds, self._ranges, self._values = dict(self._bounds), dict(self._ranges), dict(self._values)
        self._truths = dict(self._truths)
        self._reset_memo()
        try:
            yield self
        finally:
            self._bounds, self._ranges, self._values, self._facts, self._truths = saved
            self._reset_memo()

    @contextmanager
    def bind_scope(self, var, value_or_range):
        """Bind ``var`` (overriding any earlier binding) for the ``with`` block only."""
        with self._scope():
            self.bind(var, value_or_range, allow_override=True)
            yield self

    @contextmanager
    def _let_scope(self, var, value):
        """Inside a ``let var = value``: bound ``var`` like ``value`` (no substitution)."""
        with self._scope():
            self._bounds[var] = self._bound_an.bound(value)
            if is_index_dtype(var.dtype) and value.dtype == var.dtype:
                lin = self._simplifier.lin
                d = lin(var).combine(lin(value), -1)
                self._facts = self._facts + (_normalize_fact(d, 0), _normalize_fact(d.scaled(-1), 0))
            self._reset_memo()
            yield self

    def _var_bound(self, v):
        b = self._bounds.get(v)
        if b is not None:
            return b
        if isinstance(v, E.SizeVar):
            return (0, dtype_bound(v.dtype)[1])
        return dtype_bound(v.dtype)

    # ---------------------------------------------------------------------------------
    # constraints
    # ---------------------------------------------------------------------------------
    @contextmanager
    def constraint_scope(self, cond):
        """Assume ``cond`` holds inside the ``with`` block.

        Understood: comparisons of integer expressions (``i < n``, ``io*32 + ii < 1000``,
        ``x == 4``), ``likely(c)``, conjunctions ``a && b``, negated comparisons, and any
        other boolean expression as a literal known to be true.
        """
        cond = convert(cond)
        with self._scope():
            self._assume(cond)
            self._reset_memo()
            yield self

    def _assume(self, cond):
        cls = type(cond)
        if cls is E.IntImm:
            return
        if cls is E.Call and cond.op == "likely":
            self._assume(cond.args[0])
            return
        if cls is E.And:
            self._assume(cond.a)
            self._assume(cond.b)
            return
        if cls is E.Not and isinstance(cond.a, E.CmpOp) and is_index_dtype(cond.a.a.dtype):
            from .rewrite import _NEGATE
            self._assume(_NEGATE[type(cond.a)](cond.a.a, cond.a.b))
            return
        key = self._interner.key
        if cls is E.Not:
            self._truths[key(cond.a)] = False
        else:
            self._truths[key(cond)] = True
        if isinstance(cond, E.CmpOp) and is_index_dtype(cond.a.dtype) and cond.a.dtype == cond.b.dtype:
            simp = self._simplifier
            a, b = simp.visit(cond.a), simp.visit(cond.b)
            self._truths[key(type(cond)(a, b))] = True
            d = simp.lin(a).combine(simp.lin(b), -1)   # the condition is about d = a - b
            new = []
            if cls is E.LT:
                new.append(_normalize_fact(d, -1))
            elif cls is E.LE:
                new.append(_normalize_fact(d, 0))
            elif cls is E.GT:
                new.append(_normalize_fact(d.scaled(-1), -1))
            elif cls is E.GE:
                new.append(_normalize_fact(d.scaled(-1), 0))
            elif cls is E.EQ:
                new += [_normalize_fact(d, 0), _normalize_fact(d.scaled(-1), 0)]
            for s, k in new:
                self._tighten_var(s, k)
            self._facts = self._facts + tuple(new)
        self._reset_memo()

    def _tighten_var(self, s, k):
        # a fact  c*v <= k  about one variable tightens its constant bound
        if len(s.terms) != 1:
            return
        (atom, coef), = s.terms.values()
        if not isinstance(atom, E.Var):
            return
        lo, hi = self._var_bound(atom)
        if coef > 0:
            hi = min(hi, k // coef)
        else:
            lo = max(lo, -(k // -coef))
        self._bounds[atom] = (lo, hi)

    # ---------------------------------------------------------------------------------
    # questions
    # ---------------------------------------------------------------------------------
    def simplify(self, expr):
        """Simplify ``expr`` with everything known.

        Parameters
        ----------
        expr : PrimExpr or int
            The expression.

        Returns
        -------
        PrimExpr
            An equivalent, simpler expression (the same object if nothing changed).
        """
        expr = convert(expr)
        return self._simplifier.visit(expr)

    def can_prove(self, cond) -> bool:
        """True only if ``cond`` is proven to hold (False means "not proven")."""
        cond = convert(cond)
        r = self.simplify(cond)
        if type(r) is E.IntImm:
            return bool(r.value)
        return self._prove_by_symbolic_bounds(r)

    def _prove_by_symbolic_bounds(self, cond) -> bool:
        """``a < b`` where the variables of ``a - b`` range up to symbolic bounds:
        ``io*8 + ii < m*8`` with ``io < m`` and ``ii < 8`` (the bound of the
        difference, ``(m - 1)*8 + 7 - m*8``, is ``-1``)."""
        if not self._ranges or not isinstance(cond, (E.LT, E.LE, E.GT, E.GE)):
            return False
        a, b = (cond.a, cond.b) if isinstance(cond, (E.LT, E.LE)) else (cond.b, cond.a)
        if not (is_index_dtype(a.dtype) and a.dtype == b.dtype):
            return False
        # relax the variables whose ranges are known; keep symbolic the ones those
        # ranges are written in (m above), so that their terms cancel
        from ..functor import collect_vars
        from .int_set import _eval_set
        in_bounds = set()
        for r in self._ranges.values():
            for end in (r.min_value, r.max_value):
                if isinstance(end, E.PrimExpr):
                    in_bounds |= collect_vars(end)
        doms = {v: r for v, r in self._ranges.items() if v not in in_bounds}
        if not doms:
            return False
        s = _eval_set(convert(a - b), doms, self)
        hi = s.max_value
        if not isinstance(hi, E.PrimExpr):
            return False
        zero = E.IntImm(a.dtype, 0)
        r = self.simplify(E.LT(hi, zero) if isinstance(cond, (E.LT, E.GT)) else E.LE(hi, zero))
        return type(r) is E.IntImm and bool(r.value)

    def can_prove_equal(self, a, b) -> bool:
        """True only if ``a == b`` is proven."""
        a, b = convert(a), convert(b)
        if a is b:
            return True
        if is_index_dtype(a.dtype) and a.dtype == b.dtype:
            d = self.simplify(a - b)
            return type(d) is E.IntImm and d.value == 0
        sa, sb = self.simplify(a), self.simplify(b)
        return self._interner.key(sa) == self._interner.key(sb)

    def const_int_bound(self, expr) -> ConstIntBound:
        """Constant bounds of an integer expression (after simplifying it)."""
        expr = self.simplify(convert(expr))
        if is_index_dtype(expr.dtype):
            lo, hi = self._simplifier.lower(self._simplifier.lin(expr)), \
                self._simplifier.upper(self._simplifier.lin(expr))
            lo, hi = intersect((lo, hi), self._bound_an.bound(expr))
        else:
            lo, hi = self._bound_an.bound(expr)
        return ConstIntBound.from_pair(lo, hi)

    def int_set(self, expr, dom_map=None):
        """The interval of values of ``expr`` when the variables in ``dom_map`` (and the
        variables bound to ranges in this analyzer) range over their domains.

        Parameters
        ----------
        expr : PrimExpr
        dom_map : dict, optional
            ``Var -> IntervalSet or Range``; overrides bindings of the same variables.

        Returns
        -------
        IntervalSet
        """
        from .int_set import _eval_set

        doms = dict(self._ranges)
        if dom_map:
            doms.update(dom_map)
        return _eval_set(convert(expr), doms, self)


def _normalize_fact(s, k):
    """``s <= k`` with the constant of ``s`` moved to ``k``."""
    body = LinearForm(s.dtype, dict(s.terms), 0)
    return body, k - s.const
