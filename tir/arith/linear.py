"""Structural keys and linear (sum-of-terms) forms of integer expressions.

An :class:`Interner` gives every expression an integer key such that two expressions
have the same key exactly when they have the same structure (variables and buffers
compared by identity).  Keys make "is this the same term?" a dictionary lookup.

A :class:`LinearForm` is ``c0 + c1*t1 + c2*t2 + ...`` with integer coefficients over
*atoms* ``t_i`` (variables, divisions, loads, products of non-constants...).  The
simplifier canonicalizes integer ``+``, ``-`` and ``* constant`` through it, so
``(io*32 + ii) - io*32`` and ``ii`` end up as the same form.
"""
from __future__ import annotations

import math

from .. import expr as E
from ..op import _wrap_int
from .. import dtype as _dt


class Interner:
    """Hash-consing of expression structure into small integers."""

    def __init__(self):
        self._table = {}
        self._memo = {}  # id(node) -> (node, key); holding the node keeps its id unique

    def key(self, e) -> int:
        hit = self._memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        k = self._intern(self._signature(e))
        self._memo[id(e)] = (e, k)
        return k

    def lookup(self, signature):
        """The key of a structure given by its signature, or None if never seen."""
        return self._table.get(signature)

    def _intern(self, sig) -> int:
        k = self._table.get(sig)
        if k is None:
            k = self._table[sig] = len(self._table)
        return k

    def _signature(self, e):
        cls = type(e)
        key = self.key
        if cls is E.IntImm:
            return (cls, e.dtype, e.value)
        if cls is E.FloatImm:
            # -0.0 and 0.0 differ; NaN never equals itself, so it gets a fresh key
            if e.value != e.value:
                return ("uniq", id(e))
            return (cls, e.dtype, e.value, math.copysign(1.0, e.value))
        if isinstance(e, E.Var):
            return ("var", id(e))
        if isinstance(e, (E.BinaryOp, E.CmpOp)) or cls is E.And or cls is E.Or:
            return (cls, key(e.a), key(e.b))
        if cls is E.Not:
            return (cls, key(e.a))
        if cls is E.Cast:
            return (cls, e.dtype, key(e.value))
        if cls is E.Select:
            return (cls, key(e.condition), key(e.true_value), key(e.false_value))
        if cls is E.Call:
            return (cls, e.dtype, e.op, tuple(key(a) if isinstance(a, E.PrimExpr) else ("uniq", id(a))
                                              for a in e.args))
        if cls is E.BufferLoad:
            return (cls, id(e.buffer), tuple(key(i) for i in e.indices))
        if cls is E.Ramp:
            return (cls, key(e.base), key(e.stride), e.lanes)
        if cls is E.Broadcast:
            return (cls, key(e.value), e.lanes)
        if cls is E.Let:
            return (cls, id(e.var), key(e.value), key(e.body))
        if cls is E.StringImm:
            return (cls, e.value)
        return ("uniq", id(e))


class LinearForm:
    """``const + sum(coef * atom)`` over an integer dtype.

    ``terms`` maps an atom's key to ``[atom, coef]`` in order of first appearance.
    Instances are treated as immutable once built (operations return new forms).
    """

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, dtype, terms=None, const=0):
        self.dtype = dtype
        self.terms = terms if terms is not None else {}
        self.const = const

    @staticmethod
    def atom(dtype, key, e, coef=1):
        return LinearForm(dtype, {key: [e, coef]}, 0)

    def is_const(self) -> bool:
        return not self.terms

    def single_atom(self):
        """The atom if the form is exactly ``1 * atom``, else None."""
        if self.const == 0 and len(self.terms) == 1:
            (atom, coef), = self.terms.values()
            if coef == 1:
                return atom
        return None

    def combine(self, other, scale=1) -> "LinearForm":
        """``self + scale * other``."""
        terms = {k: [t[0], t[1]] for k, t in self.terms.items()}
        for k, (atom, coef) in other.terms.items():
            cur = terms.get(k)
            if cur is None:
                terms[k] = [atom, coef * scale]
            else:
                cur[1] += coef * scale
        terms = {k: t for k, t in terms.items() if t[1] != 0}
        return LinearForm(self.dtype, terms, self.const + other.const * scale)

    def scaled(self, k) -> "LinearForm":
        if k == 0:
            return LinearForm(self.dtype)
        return LinearForm(self.dtype, {key: [t[0], t[1] * k] for key, t in self.terms.items()},
                          self.const * k)

    def coef_gcd(self) -> int:
        """gcd of the coefficients (0 when there are no terms)."""
        g = 0
        for _, coef in self.terms.values():
            g = math.gcd(g, coef)
        return g

    def to_expr(self):
        """Rebuild a readable expression: larger coefficients first, then order of
        first appearance, a leading positive term, the constant last
        (``i*1024 + j*32 + k - 1``)."""
        dt = self.dtype
        d = _dt.parse(dt)
        items = sorted(enumerate(self.terms.values()), key=lambda it: (-abs(it[1][1]), it[0]))
        items = [(atom, _wrap_int(coef, d)) for _, (atom, coef) in items]
        items = [(a, c) for a, c in items if c != 0]
        const = _wrap_int(self.const, d)
        if not items:
            return E.IntImm(dt, const)
        # put the first positive term in front so the sum does not start with a negation
        head = next((i for i, (_, c) in enumerate(items) if c > 0), None)
        if head is None and const > 0:
            res = E.IntImm(dt, const)
            const = 0
        else:
            head = head or 0
            atom, c = items.pop(head)
            res = atom if c == 1 else E.Mul(atom, E.IntImm(dt, c))
        for atom, c in items:
            if c > 0:
                res = E.Add(res, atom if c == 1 else E.Mul(atom, E.IntImm(dt, c)))
            else:
                res = E.Sub(res, atom if c == -1 else E.Mul(atom, E.IntImm(dt, -c)))
        if const > 0:
            res = E.Add(res, E.IntImm(dt, const))
        elif const < 0:
            res = E.Sub(res, E.IntImm(dt, -const))
        return res
