"""What the reduction schedules of every target need to know about the outputs
they are given: which stages are reductions, which element-wise stages to inline,
and whether the whole chain can be one kernel (one loop nest on a CPU).

A chain is *fused* when there is one output and every reduction it reads has the
output's shape (``mean``, ``variance``, ``argmax``, ``sum(x) * 2``): the output is
then the *anchor* -- its elements are spread over the threads or cores -- and each
reduction is computed, for the anchor's element(s), right before it
(``compute_at``).  Otherwise (an output of another shape, several outputs) each
reduction gets its own kernel or loop nest and each other output its own
injective one.  :func:`schedule_reduce_chain` is that choice, shared by the
targets' ``schedule_reduce``.
"""
from __future__ import annotations

from .. import te
from .generic.default import new_schedule
from .tag import is_reduce
from .utils import get_const_int, get_const_tuple, prod


class ReducePlan:
    """The stages of a reduction chain.

    Attributes
    ----------
    reductions : list of Tensor
        Every reduction read by the outputs, producers before consumers.
    others : list of Tensor
        The outputs that are not reductions.
    anchor : Tensor or None
        The stage the others are computed at when the chain is fused.
    degenerate : bool
        True when there is no reduction but a stage tagged as one (a reduction over
        no axis, ``sum(x, axis=())``, is a copy): the chain is injective.
    """

    def __init__(self, reductions, others, anchor, degenerate=False):
        self.reductions = reductions
        self.others = others
        self.anchor = anchor
        self.degenerate = degenerate

    def reduce_extent(self):
        """The largest number of elements one output element reduces (an int), or
        None when it is not static."""
        best = 0
        for t in self.reductions:
            k = reduce_extent(t.op)
            if k is None:
                return None
            best = max(best, k)
        return best

    def innermost_kept(self) -> bool:
        """True if every reduction keeps its input's innermost axis (so that
        neighbouring output elements read neighbouring input elements)."""
        return bool(self.reductions) and all(innermost_kept(t.op) for t in self.reductions)


def reduce_extent(op):
    """The number of elements ``op`` reduces per output element, or None."""
    extents = get_const_tuple([iv.dom.extent for iv in op.reduce_axis])
    total = prod(extents)
    return total if isinstance(total, int) else None


def innermost_kept(op) -> bool:
    """True if the reduction ``op`` (a topi reduction, with ``attrs["axis"]`` and
    ``attrs["ndim"]``) keeps the innermost axis of its input.  False when it does
    not say."""
    attrs = op.attrs
    if "axis" not in attrs or "ndim" not in attrs:
        return False
    ndim = get_const_int(attrs["ndim"])
    return bool(attrs["axis"] is not None) and (ndim - 1) not in [get_const_int(a) for a in attrs["axis"]]


def elements(t):
    """The number of elements of ``t`` (an int), or None."""
    n = prod(get_const_tuple(t.shape))
    return n if isinstance(n, int) else None


def plan_reduce(s, outs) -> ReducePlan:
    """Inline every stage the outputs read that is neither a reduction nor an
    output, and say what is left (:class:`ReducePlan`)."""
    outputs = set(t.op for t in outs)
    found, tagged, visited = [], [], set()

    def visit(op):
        if op in visited or not isinstance(op, te.ComputeOp):
            return
        visited.add(op)
        for t in op.input_tensors:
            visit(t.op)
        # (after its producers: ``found`` lists producers first)
        if is_reduce(op.tag):
            tagged.append(op)
        if op.reduce_axis:
            found.append(op)
        elif op not in outputs:
            s[op].compute_inline()

    for t in outs:
        visit(t.op)
    reductions = [op.output(0) for op in found]
    others = [t for t in outs if not t.op.reduce_axis]
    anchor = None
    if len(outs) == 1 and reductions:
        out = outs[0]
        shape = get_const_tuple(out.shape)
        if all(_same_shape(get_const_tuple(r.shape), shape) for r in reductions):
            anchor = out
    return ReducePlan(reductions, others, anchor, degenerate=not found and bool(tagged))


def schedule_reduce_chain(outs, schedule_nest, schedule_injective_from_existing):
    """A new schedule of the reductions that ``outs`` are or read (and of the
    element-wise stages around them), as every target schedules them: the stages
    that are neither reductions nor outputs inlined (:func:`plan_reduce`); a fused
    chain scheduled as ``schedule_nest(s, plan, plan.anchor)``; otherwise each
    reduction ``R`` as ``schedule_nest(s, ReducePlan([R], [], R), R)`` and each
    other output as ``schedule_injective_from_existing(s, t)``.  Reductions over no
    axis (``sum(x, axis=())``, copies) and outputs that read no reduction are all
    scheduled as injective.
    """
    outs, s = new_schedule(outs)
    plan = plan_reduce(s, outs)
    if plan.degenerate or not plan.reductions:
        # reductions over no axis (``sum(x, axis=())``: copies), or outputs that read no
        # reduction (a loss with reduction="none"): injective, as TVM's schedule_reduce takes them
        for t in outs:
            schedule_injective_from_existing(s, t)
        return s
    if plan.anchor is not None:
        schedule_nest(s, plan, plan.anchor)
    else:
        for R in plan.reductions:
            schedule_nest(s, ReducePlan([R], [], R), R)
        for t in plan.others:
            schedule_injective_from_existing(s, t)
    return s


def _same_shape(a, b) -> bool:
    a = [d for d in a if not (isinstance(d, int) and d == 1)]
    b = [d for d in b if not (isinstance(d, int) and d == 1)]
    return len(a) == len(b) and all(x is y or (isinstance(x, int) and x == y) for x, y in zip(a, b))
