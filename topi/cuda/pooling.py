"""Pooling on CUDA: one thread per output element, its window reduced serially in a
register; consecutive threads take consecutive output elements (coalesced writes,
and reads along the innermost axis)."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from .. import tag
from ..generic.default import outputs_of
from ..nn.pooling import POOL_REDUCTIONS
from ..schedule_registry import register_schedule
from ..utils import traverse_inline
from .injective import schedule_injective_from_existing


def _schedule(outs, what):
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    out = outs[0]
    found = []

    def visit(op):
        if op.tag in POOL_REDUCTIONS:
            pool = op.output(0)
            for t in op.input_tensors:
                if tag.has(t.op.tag, tag.PAD):
                    s[t].compute_inline()
            if op is not out.op:
                s[pool].set_scope("local")
            found.append(pool)

    traverse_inline(s, out.op, visit)
    if not found:
        raise ScheduleError(f"{what}: {out.op.name!r} (tag {out.op.tag!r}) is not a pooling output nor an "
                            "element-wise op after one")
    schedule_injective_from_existing(s, out, vector=1)
    thread = s[out].leaf_iter_vars[-1]
    for pool in found:
        if pool.op is not out.op:
            s[pool].compute_at(s[out], thread)
    return s


@register_schedule(("pool", "adaptive_pool"), "cuda")
def schedule_pool(outs, layout="NCHW"):
    """The CUDA schedule of ``pool1d/2d/3d`` (and of element-wise ops after it;
    ``adaptive_pool`` and ``global_pool`` too): the padding inlined, one thread per
    output element, the window sums of an average kept in a register.

    Parameters
    ----------
    outs : Tensor or list of Tensor
    layout : str
        Not needed (any layout is scheduled alike); TVM's signature.

    Returns
    -------
    Schedule
    """
    return _schedule(outs, "schedule_pool")


def schedule_adaptive_pool(outs, layout="NCHW"):
    """The CUDA schedule of ``adaptive_pool`` and ``global_pool`` (and of
    element-wise ops after them): :func:`schedule_pool`'s, one thread per output
    element, each reducing its window (of a size that varies with the element)."""
    return _schedule(outs, "schedule_adaptive_pool")
