"""Reductions and softmax on CPUs: the output's rows spread over the cores."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from .. import tag
from ..generic.default import outputs_of
from ..utils import get_const_int, traverse_inline, walk_to_reductions
from .injective import schedule_injective_from_existing


def _parallel_outer(s, t):
    axes = list(s[t].op.axis)
    if axes:
        s[t].parallel(s[t].fuse(*axes) if len(axes) > 1 else axes[0])


def schedule_reduce(outs):
    """The CPU schedule of a reduction: element-wise and injective stages around it
    inlined, the output's elements spread over the cores (each reduced serially); an
    element-wise output after the reduction gets a loop of its own.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    reductions, others = walk_to_reductions(s, outs[0].op)
    if not reductions:
        raise ScheduleError(f"schedule_reduce: {outs[0].op.name!r} (tag {outs[0].op.tag!r}) is not a reduction "
                            "nor an element-wise op after one")
    for op in reductions:
        _parallel_outer(s, op.output(0))
    for op in others:
        schedule_injective_from_existing(s, op.output(0))
    return s


def schedule_softmax(outs):
    """The CPU schedule of ``softmax`` / ``log_softmax`` (and of an element-wise op
    after it): the rows spread over the cores, each row's maximum, exponentials and
    sum computed right before its outputs.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    out = outs[0]
    found = []

    def visit(op):
        if op.tag not in (tag.SOFTMAX_OUTPUT, tag.LOG_SOFTMAX_OUTPUT):
            return
        sm_out = op.output(0)
        ndim = len(sm_out.shape)
        axis = get_const_int(op.attrs.get("axis", ndim - 1))
        if op is not out.op:
            s[sm_out].compute_inline()
        axes = list(s[out].op.axis)
        rows = [a for k, a in enumerate(axes) if k != axis]
        stages = [t for t in _softmax_stages(sm_out)]
        if rows:
            if axis != ndim - 1:
                s[out].reorder(*rows, axes[axis])
            row = rows[0] if len(rows) == 1 else s[out].fuse(*rows)
            s[out].parallel(row)
            for t in stages:
                s[t].compute_at(s[out], row)
        found.append(op)

    traverse_inline(s, out.op, visit)
    if not found:
        raise ScheduleError(f"schedule_softmax: {out.op.name!r} (tag {out.op.tag!r}) is not a softmax nor an "
                            "element-wise op after one")
    return s


def _softmax_stages(sm_out):
    """The maximum, exponential and sum stages a softmax output reads."""
    found, todo = [], list(sm_out.op.input_tensors)
    while todo:
        t = todo.pop()
        if t.op.tag in ("softmax_max", "softmax_exp", "softmax_sum") and t not in found:
            found.append(t)
            todo.extend(t.op.input_tensors)
    return found
