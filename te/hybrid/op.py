"""The operation a hybrid script makes, and its schedule applied to its loops.

A :class:`HybridOp` is an extern operation (``te.extern``'s :class:`ExternOp`)
whose statement was parsed from Python: it reads its inputs and writes its
outputs through declared buffers, which lowering binds to the real ones.  Its
``axis`` are the loops of that statement (outermost first), and a schedule may
split, fuse, reorder, annotate (vectorize, parallel, unroll, pragma) and bind them:
:func:`scheduled_body` rewrites the statement accordingly, as lowering asks for it.
"""
from __future__ import annotations

from ...errors import ScheduleError
from ...tir import expr as E
from ...tir import keys
from ...tir import stmt as S
from ...tir.arith import Analyzer
from ...tir.functor import IRMutator, collect_vars, post_order_visit, substitute
from ...tir.op import const, likely
from ..schedule import Fuse, Singleton, Split
from ..tensor import ExternOp


class HybridOp(ExternOp):
    """The operation of a hybrid script (``@te.hybrid.script`` called on tensors).

    Parameters are those of :class:`~tecc.te.ExternOp`; ``axis`` (optional) gives the
    loops' iteration variables, gathered from ``body`` when omitted.

    Attributes
    ----------
    axis : tuple of IterVar
        One per ``for`` loop of the body (``range``, ``parallel``, ``vectorize``,
        ``unroll``), in pre-order; the variable is the loop's.  Schedule primitives
        take these.
    """

    def __init__(self, name, tag, attrs, inputs, input_placeholders, output_placeholders, body, axis=None):
        super().__init__(name, tag, attrs, inputs, input_placeholders, output_placeholders, body)
        self.axis = tuple(axis) if axis is not None else gather_loop_axes(body)

    @property
    def reduce_axis(self):
        return ()

    def replace_inputs(self, vmap):
        inputs = tuple(vmap.get(t, t) for t in self.inputs)
        if all(a is b for a, b in zip(inputs, self.inputs)):
            return self
        return HybridOp(self.name, self.tag, self.attrs, inputs, self.input_placeholders,
                        self.output_placeholders, self.body, self.axis)

    def scheduled_body(self, stage):
        """The body with ``stage``'s loop transformations applied (lowering's view)."""
        return scheduled_body(self, stage)

    def __repr__(self):
        return f"hybrid({self.name})"


def gather_loop_axes(body) -> tuple:
    """An IterVar per ``For`` loop of ``body``, outermost first (pre-order)."""
    out = []

    def visit(s):
        if isinstance(s, S.For):
            out.append(E.IterVar(E.Range(const(0, s.extent.dtype), s.extent), s.loop_var, E.IterVarType.DATA_PAR))
        for name in type(s)._children:
            child = getattr(s, name)
            if isinstance(child, S.Stmt):
                visit(child)
            elif isinstance(child, tuple):
                for c in child:
                    if isinstance(c, S.Stmt):
                        visit(c)

    visit(body)
    return tuple(out)


# ---------------------------------------------------------------------------------------
# the schedule of a hybrid stage, applied to its statement
# ---------------------------------------------------------------------------------------

def scheduled_body(op, stage) -> S.Stmt:
    """``op.body`` with the loops of ``stage`` split, fused, reordered, annotated and
    bound as its primitives say.

    Split loops are guarded (``if likely(outer*f + inner < extent)``) where the factor
    does not divide the extent.  Fused loops must be perfectly nested; reordered
    loops must be nested with nothing but those guards between them.  A CPU body is
    wrapped in an ``extern_scope`` attribute, as TVM marks extern statements.
    """
    body = op.body
    ana = Analyzer()
    for rel in stage.relations:
        if isinstance(rel, Split):
            body = _split(op, body, rel, ana)
        elif isinstance(rel, Fuse):
            body = _fuse(op, body, rel, ana)
        elif isinstance(rel, Singleton):
            body = S.For(rel.iter.var, const(0, rel.iter.var.dtype), const(1, rel.iter.var.dtype),
                         S.ForKind.SERIAL, body)
        else:
            raise ScheduleError(f"stage {op.name!r} (a hybrid script): {type(rel).__name__} is not supported "
                                f"on its loops")
    body = _reorder(op, body, [iv.var for iv in stage.leaf_iter_vars])
    body = _annotate(op, body, stage)
    if not _has_gpu_binding(body):
        body = S.AttrStmt(const(0), keys.EXTERN_SCOPE, const(0), body)
    return body


class _ReplaceLoop(IRMutator):
    """Replace the loop of variable ``var`` by ``fn(loop)``."""

    def __init__(self, var, fn):
        self.var = var
        self.fn = fn
        self.count = 0

    def visit_For(self, s):
        if s.loop_var is self.var:
            self.count += 1
            return self.fn(s)
        return self.generic_visit(s)


def _replace_loop(op, body, iv, fn, what):
    rep = _ReplaceLoop(iv.var, fn)
    new = rep.visit(body)
    if rep.count != 1:
        raise ScheduleError(f"stage {op.name!r} (a hybrid script): {what}: axis {iv.var.name!r} is "
                            f"{'not a loop of the script' if rep.count == 0 else 'found more than once'}")
    return new


def _split(op, body, rel, ana):
    def make(loop):
        ext = loop.extent
        dt = ext.dtype
        if rel.factor is not None:
            factor = const(rel.factor, dt) if isinstance(rel.factor, int) else rel.factor
            inner_ext = factor
            outer_ext = ana.simplify((ext + factor - 1) // factor)
        else:
            outer_ext = const(rel.nparts, dt) if isinstance(rel.nparts, int) else rel.nparts
            inner_ext = ana.simplify((ext + outer_ext - 1) // outer_ext)
        outer, inner = rel.outer.var, rel.inner.var
        index = outer * inner_ext + inner
        inner_body = substitute(loop.body, {loop.loop_var: index})
        if not ana.can_prove(E.EQ(ana.simplify(ext % inner_ext), const(0, dt))) or \
                not ana.can_prove(E.EQ(ana.simplify(outer_ext * inner_ext), ext)):
            inner_body = S.IfThenElse(likely(E.LT(index, ext)), inner_body)
        outer_kind = loop.kind if loop.kind is S.ForKind.PARALLEL else S.ForKind.SERIAL
        inner_kind = loop.kind if loop.kind in (S.ForKind.VECTORIZED, S.ForKind.UNROLLED) else S.ForKind.SERIAL
        return S.For(outer, const(0, dt), outer_ext, outer_kind,
                     S.For(inner, const(0, dt), inner_ext, inner_kind, inner_body))

    return _replace_loop(op, body, rel.parent, make, "split")


def _fuse(op, body, rel, ana):
    def make(loop):
        inner = loop.body
        if not (isinstance(inner, S.For) and inner.loop_var is rel.inner.var):
            raise ScheduleError(
                f"stage {op.name!r} (a hybrid script): fuse: loop {rel.inner.var.name!r} must be the whole body of "
                f"loop {rel.outer.var.name!r} (perfectly nested); move the other statements into their own loops")
        if collect_vars(inner.extent) & {loop.loop_var}:
            raise ScheduleError(f"stage {op.name!r} (a hybrid script): fuse: the extent of loop "
                                f"{rel.inner.var.name!r} depends on {rel.outer.var.name!r}")
        dt = loop.extent.dtype
        fused = rel.fused.var
        iext = inner.extent
        new_body = substitute(inner.body, {loop.loop_var: fused // iext, inner.loop_var: fused % iext})
        return S.For(fused, const(0, dt), ana.simplify(loop.extent * iext), loop.kind, new_body)

    return _replace_loop(op, body, rel.outer, make, "fuse")


def _chain(s, leaves):
    """The loops of ``leaves`` nested from ``s`` down (through guards only), and the
    guard conditions met on the way, and the body below the last loop."""
    loops, guards = [], []
    cur = s
    while True:
        if isinstance(cur, S.For) and cur.loop_var in leaves:
            loops.append(cur)
            cur = cur.body
        elif isinstance(cur, S.IfThenElse) and cur.else_case is None and loops and \
                _leads_to_loop(cur.then_case, leaves):
            guards.append(cur.condition)
            cur = cur.then_case
        else:
            return loops, guards, cur


def _leads_to_loop(s, leaves):
    while isinstance(s, S.IfThenElse) and s.else_case is None:
        s = s.then_case
    return isinstance(s, S.For) and s.loop_var in leaves


def _reorder(op, body, order):
    leaves = set(order)
    rank = {v: k for k, v in enumerate(order)}

    class _Reorder(IRMutator):
        def visit_For(self, s):
            if s.loop_var not in leaves:
                return self.generic_visit(s)
            loops, guards, inner = _chain(s, leaves)
            want = sorted(loops, key=lambda lp: rank[lp.loop_var])
            if [lp.loop_var for lp in want] == [lp.loop_var for lp in loops]:
                return self.generic_visit(s)
            outside = set()
            for lp in want:  # an extent may only use the loops that stay outside it
                if collect_vars(lp.extent) & ({x.loop_var for x in loops} - outside):
                    raise ScheduleError(
                        f"stage {op.name!r} (a hybrid script): reorder: the extent of loop {lp.loop_var.name!r} "
                        f"({lp.extent}) depends on a loop that would move inside it")
                outside.add(lp.loop_var)
            # the guards between the loops hold for every iteration of the loops
            # inside them: they move below the innermost loop
            body = self.visit(inner)
            for g in reversed(guards):
                body = S.IfThenElse(g, body)
            for lp in reversed(want):
                body = S.For(lp.loop_var, lp.min, lp.extent, lp.kind, body, lp.thread_binding, lp.annotations)
            return body

    new = _Reorder().visit(body)
    got = [lp.loop_var for lp in _preorder_loops(new) if lp.loop_var in leaves]
    if got != list(order):
        raise ScheduleError(
            f"stage {op.name!r} (a hybrid script): the loop order {[v.name for v in order]} cannot be made: only "
            f"loops nested directly in one another can be reordered (the script has them as "
            f"{[v.name for v in got]})")
    return new


def _preorder_loops(s):
    out = []

    def visit(n):
        if isinstance(n, S.For):
            out.append(n)
        for name in type(n)._children:
            child = getattr(n, name)
            if isinstance(child, S.Stmt):
                visit(child)
            elif isinstance(child, tuple):
                for c in child:
                    if isinstance(c, S.Stmt):
                        visit(c)

    visit(s)
    return out


_KINDS = {"vectorize": S.ForKind.VECTORIZED, "parallel": S.ForKind.PARALLEL, "unroll": S.ForKind.UNROLLED}


def _annotate(op, body, stage):
    for iv, attr in stage.iter_var_attrs.items():
        if iv not in stage.leaf_iter_vars:
            continue
        if attr.kind is None and attr.bind_thread is None and not attr.pragmas:
            continue

        def make(loop, attr=attr):
            ann = tuple(loop.annotations) + tuple(("pragma_" + k, v) for k, v in attr.pragmas)
            if attr.bind_thread is not None:
                t = attr.bind_thread
                zero = const(0, loop.extent.dtype)
                tiv = E.IterVar(E.Range(zero, loop.extent), t.var, E.IterVarType.THREAD_INDEX, t.thread_tag)
                return S.For(loop.loop_var, loop.min, loop.extent, S.ForKind.THREAD_BINDING, loop.body, tiv, ann)
            kind = _KINDS[attr.kind] if attr.kind is not None else loop.kind
            return S.For(loop.loop_var, loop.min, loop.extent, kind, loop.body, None, ann)

        what = "bind" if attr.bind_thread is not None else (attr.kind or "pragma")
        body = _replace_loop(op, body, iv, make, what)
    return body


def _has_gpu_binding(body) -> bool:
    found = []

    def f(n):
        if isinstance(n, S.For) and n.kind is S.ForKind.THREAD_BINDING:
            found.append(n)
        elif isinstance(n, S.AttrStmt) and n.attr_key == keys.THREAD_EXTENT:
            found.append(n)

    post_order_visit(body, f)
    return bool(found)
