"""Pooling on CUDA: one thread per output element, its window reduced serially."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from .. import tag
from ..generic.default import outputs_of
from ..utils import traverse_inline
from .injective import schedule_injective_from_existing


def schedule_pool(outs, layout="NCHW"):
    """The CUDA schedule of ``pool1d/2d/3d`` (and of element-wise ops after it): the
    padding inlined, the window sums of an average kept in registers.

    Parameters
    ----------
    outs : Tensor or list of Tensor
    layout : str
        Not needed (any layout is scheduled alike); TVM's signature.

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    out = outs[0]
    found = []

    def visit(op):
        if op.tag in (tag.POOL_MAX, "pool_sum"):
            pool = op.output(0)
            for t in op.input_tensors:
                if tag.has(t.op.tag, tag.PAD):
                    s[t].compute_inline()
            if op is not out.op:
                s[pool].set_scope("local")
            found.append(pool)

    traverse_inline(s, out.op, visit)
    if not found:
        raise ScheduleError(f"schedule_pool: {out.op.name!r} (tag {out.op.tag!r}) is not a pooling output")
    schedule_injective_from_existing(s, out, vector=1)
    thread = s[out].leaf_iter_vars[-1]
    for pool in found:
        if pool.op is not out.op:
            s[pool].compute_at(s[out], thread)
    return s
