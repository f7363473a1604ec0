"""Loop partitioning: split a loop so that its bounds guards disappear.

A non-dividing split leaves guards such as::

    for (io, 0, (N + 3) // 4) {
      for (ii, 0, 4) {
        if (likely(io*4 + ii < N)) { ... }
      }
    }

For a loop ``x`` whose body holds a guard ``IfThenElse(likely(c1 && c2 ...))``
where each ``ck`` compares expressions that are *linear* in ``x`` with a constant
integer coefficient (and linear in the loop variables between ``x`` and the
guard, whose ranges do not depend on ``x``), the pass computes the interval
``[lo, hi)`` of ``x`` on which every ``ck`` holds for every value of those inner
loop variables, and splits the loop into

* a head ``[min, lo)`` and a tail ``[hi, min + extent)`` that keep the guard
  (or drop it, with the ``then`` branch, where it is provably false), and
* a main part ``[lo, hi)`` without the guard.

The same holds for a lazy select ``if_then_else(c1 && c2 ..., a, b)`` in a stored
value (what an inlined ``pad`` leaves in a pooling or convolution): the main part
reads ``a`` alone, a piece where the condition surely fails reads ``b``.  Such a
select is not partitioned on a vectorized loop (that would split the vector; its
lanes are selected instead), nor when the same select object sits at two places.

A parallel loop is not cut into loops run one after the other: its pieces become
branches of one parallel loop over their whole range (``if (x < lo) head else if
(x < hi) main else tail``, taken once per iteration), so that a partial last task
-- a convolution's last block of channels -- runs beside the others instead of on
one core after them; pieces with nothing to do at either end shrink the loop.

The interval is derived exactly on affine forms (``k*x + r <= 0`` for all inner
values iff ``k*x + max(r) <= 0``), so the rewrite never changes results; the
:class:`~tecc.tir.arith.Analyzer` simplifies the split points and proves pieces
empty, single-iteration (then inlined) or guard-free.  Anything else -- a
non-linear index, a condition on a load, a let variable -- leaves the loop as it is.
"""
from __future__ import annotations

from dataclasses import replace

from .. import dtype as _dt
from .. import expr as E
from .. import op as _op
from .. import stmt as S
from ..arith import Analyzer
from ..functor import IRMutator, ir_transform, substitute, uses_var
from .unroll import copy_with_fresh_bindings


def _add(a, b):
    if isinstance(a, E.IntImm) and a.value == 0:
        return b
    if isinstance(b, E.IntImm) and b.value == 0:
        return a
    return _op.add(a, b)


def _sub(a, b):
    if isinstance(b, E.IntImm) and b.value == 0:
        return a
    return _op.sub(a, b)


# ----------------------------------------------------------------------------
# affine forms: sum(coef * atom) + const, atoms being variables or opaque terms
# ----------------------------------------------------------------------------

class _Affine:
    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const=0):
        self.terms = dict(terms or {})  # key -> [atom, coef]
        self.const = const

    def copy(self):
        return _Affine({k: [a, c] for k, (a, c) in self.terms.items()}, self.const)

    def add(self, other, scale=1):
        out = self.copy()
        for k, (atom, c) in other.terms.items():
            if k in out.terms:
                out.terms[k][1] += c * scale
            else:
                out.terms[k] = [atom, c * scale]
        out.const += other.const * scale
        out.terms = {k: v for k, v in out.terms.items() if v[1] != 0}
        return out

    def scale(self, s):
        return _Affine({}, 0).add(self, s)

    def is_const(self):
        return not self.terms

    def coef(self, var):
        t = self.terms.get(var)
        return 0 if t is None else t[1]

    def without(self, var):
        out = self.copy()
        out.terms.pop(var, None)
        return out

    def atoms_use(self, var):
        """True if ``var`` occurs inside an opaque (non-variable) atom."""
        for key, (atom, _) in self.terms.items():
            if key is not atom and uses_var(atom, lambda v: v is var):
                return True
        return False

    def to_expr(self, dtype):
        out = None
        for atom, c in self.terms.values():
            if c == 1:
                term = atom
            elif c == -1:
                out = _op.sub(out if out is not None else _op.const(0, dtype), atom)
                continue
            else:
                term = _op.mul(atom, _op.const(c, dtype))
            out = term if out is None else _op.add(out, term)
        if out is None:
            return _op.const(self.const, dtype)
        if self.const > 0:
            out = _op.add(out, _op.const(self.const, dtype))
        elif self.const < 0:
            out = _op.sub(out, _op.const(-self.const, dtype))
        return out


def _linearize(e) -> _Affine:
    if isinstance(e, E.IntImm):
        return _Affine({}, e.value)
    if isinstance(e, E.Var):
        return _Affine({e: [e, 1]})
    if isinstance(e, E.Add):
        return _linearize(e.a).add(_linearize(e.b))
    if isinstance(e, E.Sub):
        return _linearize(e.a).add(_linearize(e.b), -1)
    if isinstance(e, E.Mul):
        a, b = _linearize(e.a), _linearize(e.b)
        if a.is_const():
            return b.scale(a.const)
        if b.is_const():
            return a.scale(b.const)
    return _Affine({id(e): [e, 1]})


def _normalize(cond):
    """``cond`` as an expression ``d`` with ``cond <=> d <= 0``, or None."""
    if not isinstance(cond, (E.LT, E.LE, E.GT, E.GE)):
        return None
    if not _dt.is_integer(cond.a.dtype) or _dt.lanes(cond.a.dtype) != 1 or cond.a.dtype != cond.b.dtype:
        return None
    a, b = _linearize(cond.a), _linearize(cond.b)
    if isinstance(cond, E.LT):      # a < b  <=>  a - b + 1 <= 0
        d = a.add(b, -1)
        d.const += 1
    elif isinstance(cond, E.LE):    # a <= b <=>  a - b <= 0
        d = a.add(b, -1)
    elif isinstance(cond, E.GT):    # a > b  <=>  b - a + 1 <= 0
        d = b.add(a, -1)
        d.const += 1
    else:                           # a >= b <=>  b - a <= 0
        d = b.add(a, -1)
    return d


def _conjuncts(c):
    if isinstance(c, E.And):
        return _conjuncts(c.a) + _conjuncts(c.b)
    return [c]


def _is_select(n) -> bool:
    return isinstance(n, E.Call) and n.op == "if_then_else"


def _guard_condition(s):
    """The condition of a guard: a ``likely`` bounds check or a lazy select's."""
    if isinstance(s, S.IfThenElse) and isinstance(s.condition, E.Call) and s.condition.op == "likely":
        return s.condition.args[0]
    if _is_select(s):
        c = s.args[0]
        return c.args[0] if isinstance(c, E.Call) and c.op == "likely" else c
    return None


def _guard_holds(guard):
    """What replaces ``guard`` where its condition holds."""
    return guard.args[1] if _is_select(guard) else guard.then_case


def _guard_fails(guard):
    """What replaces ``guard`` where its condition fails."""
    if _is_select(guard):
        return guard.args[2]
    return guard.else_case if guard.else_case is not None else S.Evaluate(E.IntImm("int32", 0))


# ----------------------------------------------------------------------------
# finding guards
# ----------------------------------------------------------------------------

def _bound_vars(stmt):
    """Every variable bound anywhere below ``stmt``."""
    out = set()

    def visit(n):
        if isinstance(n, S.For):
            out.add(n.loop_var)
        elif isinstance(n, (S.LetStmt, E.Let)):
            out.add(n.var)
        elif isinstance(n, S.AttrStmt) and isinstance(n.node, E.IterVar):
            out.add(n.node.var)
        elif isinstance(n, S.Allocate):
            out.add(n.buffer.data)

    from ..functor import post_order_visit
    post_order_visit(stmt, visit)
    return out


def _find_selects(stmt, path, out):
    """Collect the lazy selects of a store's value and indices."""
    from ..functor import post_order_visit

    def visit(n):
        if _is_select(n) and _dt.lanes(n.dtype) == 1:
            out.append((n, path))

    post_order_visit(stmt.value, visit)
    for i in stmt.indices:
        post_order_visit(i, visit)


def _find_guards(stmt, path, out):
    """Collect ``(guard, path)`` pairs, ``path`` being the enclosing inner loops."""
    if isinstance(stmt, S.BufferStore):
        _find_selects(stmt, path, out)
    elif isinstance(stmt, S.For):
        _find_guards(stmt.body, path + (stmt,), out)
    elif isinstance(stmt, S.SeqStmt):
        for x in stmt.seq:
            _find_guards(x, path, out)
    elif isinstance(stmt, S.IfThenElse):
        if _guard_condition(stmt) is not None:
            out.append((stmt, path))
        _find_guards(stmt.then_case, path, out)
        if stmt.else_case is not None:
            _find_guards(stmt.else_case, path, out)
    elif isinstance(stmt, (S.LetStmt, S.AttrStmt, S.AssertStmt, S.Allocate, S.While)):
        _find_guards(stmt.body, path, out)


class _Bounds:
    """For one conjunct ``k*x + r <= 0``: where it surely holds / surely fails."""

    def __init__(self, k, rmax, rmin):
        self.k, self.rmax, self.rmin = k, rmax, rmin

    def true_interval(self, dtype):
        """``(lo, hi)`` (either may be None = unbounded) where it holds."""
        k = self.k
        if k > 0:   # k*x + rmax <= 0  <=>  x < floordiv(k - rmax, k)
            return None, _floordiv(self.rmax.scale(-1).add(_Affine({}, k)), k, dtype)
        kk = -k     # -kk*x + rmax <= 0  <=>  x >= floordiv(rmax + kk - 1, kk)
        return _floordiv(self.rmax.add(_Affine({}, kk - 1)), kk, dtype), None

    def false_interval(self, dtype):
        """``(lo, hi)`` where it fails for every inner value."""
        k = self.k
        if k > 0:   # k*x + rmin >= 1  <=>  x >= floordiv(k - rmin, k)
            return _floordiv(self.rmin.scale(-1).add(_Affine({}, k)), k, dtype), None
        kk = -k     # -kk*x + rmin >= 1  <=>  x < floordiv(rmin - 1 + kk, kk)
        return None, _floordiv(self.rmin.add(_Affine({}, kk - 1)), kk, dtype)


def _floordiv(aff, k, dtype):
    e = aff.to_expr(dtype)
    return e if k == 1 else _op.floordiv(e, _op.const(k, dtype))


def _extreme(r, path, inner, x, use_max):
    """Replace each inner loop variable of ``r`` by the end of its range that
    maximizes (or minimizes) ``r``; None if that is not exact."""
    for loop in path:
        v = loop.loop_var
        c = r.coef(v)
        if r.atoms_use(v):
            return None
        if c == 0:
            continue
        for bound in (loop.min, loop.extent):
            if uses_var(bound, lambda u: u is x or u in inner):
                return None
        take_high = (c > 0) == use_max
        at = _linearize(loop.min)
        if take_high:
            at = at.add(_linearize(loop.extent)).add(_Affine({}, -1))
        r = r.without(v).add(at, c)
    for key, (atom, _) in r.terms.items():
        if uses_var(atom, lambda u: u is x or u in inner):
            return None
    return r


def _plan_guard(loop, guard, path, inner):
    """``(bounds, kept)``: the bounds of the conjuncts of ``guard`` that depend on
    ``loop``'s variable, and the conjuncts that do not (they stay in the main part);
    None when no conjunct depends on it, or one does other than linearly."""
    x = loop.loop_var
    cond = _guard_condition(guard)
    bounds, kept = [], []
    for c in _conjuncts(cond):
        if not uses_var(c, lambda v: v is x):
            kept.append(c)
            continue
        d = _normalize(c)
        if d is None or c.a.dtype != x.dtype:
            return None
        k = d.coef(x)
        if k == 0 or d.atoms_use(x):
            return None
        r = d.without(x)
        rmax = _extreme(r, path, inner, x, use_max=True)
        rmin = _extreme(r, path, inner, x, use_max=False)
        if rmax is None or rmin is None:
            return None
        bounds.append(_Bounds(k, rmax, rmin))
    if not bounds:
        return None
    return bounds, kept


def _guard_with(guard, kept):
    """``guard`` reduced to the conjuncts ``kept`` (what holds for the others)."""
    if not kept:
        return _guard_holds(guard)
    cond = kept[0]
    for c in kept[1:]:
        cond = _op.logical_and(cond, c)
    if _is_select(guard):
        return E.Call(guard.dtype, "if_then_else", (cond, guard.args[1], guard.args[2]))
    return replace(guard, condition=E.Call(guard.condition.dtype, "likely", (cond,)))


# ----------------------------------------------------------------------------
# the pass
# ----------------------------------------------------------------------------

class _LoopPartition(IRMutator):
    def __init__(self):
        self.ana = Analyzer()
        self.enclosing = set()  # loop and thread variables of the loops around the visited node

    # arithmetic helpers that use what the analyzer knows ---------------------
    def simplify(self, e):
        return self.ana.simplify(e)

    def prove(self, cond):
        if isinstance(cond, E.IntImm):
            return bool(cond.value)
        return bool(self.ana.can_prove(cond))

    def prove_le(self, a, b):
        """``a <= b``, also through ``floordiv(p, k) <= floordiv(q, k)`` when
        ``q - p`` is a non-negative constant (floordiv is monotone)."""
        if self.prove(_op.le(a, b)):
            return True
        if (isinstance(a, E.FloorDiv) and isinstance(b, E.FloorDiv) and isinstance(a.b, E.IntImm)
                and isinstance(b.b, E.IntImm) and a.b.value == b.b.value and a.b.value > 0):
            diff = self.simplify(_op.sub(b.a, a.a))
            return isinstance(diff, E.IntImm) and diff.value >= 0
        return False

    def smax(self, a, b):
        if self.prove_le(b, a):
            return a
        if self.prove_le(a, b):
            return b
        return self.simplify(_op.max(a, b))

    def smin(self, a, b):
        if self.prove_le(a, b):
            return a
        if self.prove_le(b, a):
            return b
        return self.simplify(_op.min(a, b))

    # traversal ----------------------------------------------------------------
    def visit_For(self, s):
        return self.partition(s)

    def visit_AttrStmt(self, s):
        if isinstance(s.node, E.IterVar):
            self.enclosing.add(s.node.var)
            try:
                return self.generic_visit(s)
            finally:
                self.enclosing.discard(s.node.var)
        return self.generic_visit(s)

    def descend(self, loop):
        """Process the loops inside ``loop`` (no partition of ``loop`` itself)."""
        self.ana.bind(loop.loop_var, E.Range(loop.min, loop.extent), allow_override=True)
        self.enclosing.add(loop.loop_var)
        try:
            return self.generic_visit(loop)
        finally:
            self.enclosing.discard(loop.loop_var)

    def partition(self, loop):
        if loop.kind is S.ForKind.THREAD_BINDING:
            return self.descend(loop)
        guards = []
        _find_guards(loop.body, (), guards)
        if not guards:
            return self.descend(loop)
        inner = _bound_vars(loop.body)
        places = {}
        for guard, _ in guards:
            places[id(guard)] = places.get(id(guard), 0) + 1
        for guard, path in guards:
            if _is_select(guard) and (places[id(guard)] > 1 or loop.kind is S.ForKind.VECTORIZED):
                continue
            plan = _plan_guard(loop, guard, path, inner)
            if plan is None:
                continue
            result = self.split(loop, guard, *plan)
            if result is not None:
                return result
        return self.descend(loop)

    def split(self, loop, guard, bounds, kept):
        x = loop.loop_var
        dtype = x.dtype
        start = loop.min
        end = self.simplify(_add(loop.min, loop.extent))
        lo, hi = start, end
        for b in bounds:
            blo, bhi = b.true_interval(dtype)
            if blo is not None:
                lo = self.smax(lo, self.simplify(blo))
            if bhi is not None:
                hi = self.smin(hi, self.simplify(bhi))
        # split points that move with an enclosing loop would make loops of
        # varying extent: not worth it (and the enclosing loop may be split instead)
        if any(uses_var(e, lambda u: u in self.enclosing) for e in (lo, hi)):
            return None
        # clamp so that start <= lo <= hi <= end
        if lo is not start:
            lo = self.smin(lo, end)
        if hi is not end or lo is not start:
            hi = self.smax(hi, lo)
        if self.prove_le(hi, lo):
            return None  # the guard holds nowhere for sure: nothing to gain
        holds = _guard_with(guard, kept)
        main_body = ir_transform(loop.body, preorder=lambda n: holds if n is guard else None)
        pieces = []
        if not self.prove_le(lo, start):
            pieces.append(("head", start, lo))
        pieces.append(("main", lo, hi))
        if not self.prove_le(end, hi):
            pieces.append(("tail", hi, end))
        out = []
        for kind, a, b in pieces:
            if kind == "main":
                piece = replace(loop, min=a, extent=self.simplify(_sub(b, a)), body=main_body)
                # the main piece may hold further guards: partition it again
                out.append((a, b, self.partition(piece), piece.loop_var))
                continue
            body = self.resolve_guard(loop.body, guard, bounds, a, b, dtype)
            piece = replace(loop, min=a, extent=self.simplify(_sub(b, a)), body=body)
            piece = copy_with_fresh_bindings(piece)
            ext = self.simplify(piece.extent)
            single = isinstance(ext, E.IntImm) and ext.value == 1  # finish_piece inlines it: no loop
            out.append((a, b, self.finish_piece(piece), None if single else piece.loop_var))
        if loop.kind is S.ForKind.PARALLEL:
            return self.one_parallel_loop(loop, out)
        return S.seq(*(stmt for _, _, stmt, _ in out))

    @staticmethod
    def one_parallel_loop(loop, pieces):
        """The pieces of a partitioned parallel loop as branches of one parallel loop
        over the whole range: pieces run one after the other would leave the head
        and the tail (a task each, e.g. a convolution's last block of channels) to
        one core while the others wait.  The branch is taken once per iteration."""
        x = loop.loop_var
        kept = [i for i, (_, _, stmt, _) in enumerate(pieces) if stmt is not None]
        if not kept:
            return None
        # pieces with nothing to do at either end shrink the loop; between others
        # they are empty branches
        pieces = pieces[kept[0]:kept[-1] + 1]
        start, end = pieces[0][0], pieces[-1][1]
        branches = []
        for _, b, stmt, var in pieces:
            if stmt is None:
                stmt = S.Evaluate(E.IntImm("int32", 0))
            elif var is not None:
                # the piece's own loop over its part of the range (its variable, or a copy of it)
                assert isinstance(stmt, S.For) and stmt.loop_var is var, "a partitioned piece lost its loop"
                stmt = stmt.body if var is x else substitute(stmt.body, {var: x})
            branches.append((b, stmt))
        body = branches[-1][1]
        for b, stmt in reversed(branches[:-1]):
            body = S.IfThenElse(_op.lt(x, b), stmt, body)
        return replace(loop, min=start, extent=_sub(end, start), body=body)

    def resolve_guard(self, body, guard, bounds, a, b, dtype):
        """In the piece ``[a, b)``, drop ``guard`` if it surely fails there."""
        for bd in bounds:
            flo, fhi = bd.false_interval(dtype)
            fails = (flo is not None and self.prove(_op.ge(a, self.simplify(flo)))) or (
                fhi is not None and self.prove(_op.le(b, self.simplify(fhi))))
            if fails:
                other = _guard_fails(guard)
                return ir_transform(body, preorder=lambda n: other if n is guard else None)
        return body

    def finish_piece(self, piece):
        if S.is_no_op(piece.body) or self.prove(_op.le(piece.extent, _op.const(0, piece.extent.dtype))):
            return None
        ext = self.simplify(piece.extent)
        if isinstance(ext, E.IntImm) and ext.value == 1:
            body = substitute(piece.body, {piece.loop_var: piece.min})
            return self.visit(body)
        return self.descend(piece)


def loop_partition_stmt(stmt: S.Stmt) -> S.Stmt:
    """Partition the loops below ``stmt`` (see the module docs)."""
    return _LoopPartition().visit(stmt)


def loop_partition(func: S.PrimFunc) -> S.PrimFunc:
    """Split loops so that ``likely`` bounds guards vanish from their main part.

    Parameters
    ----------
    func : PrimFunc
        The function (usually flattened and simplified).

    Returns
    -------
    PrimFunc
        ``func`` itself when no loop was partitioned.
    """
    return func.with_body(loop_partition_stmt(func.body))
