"""Pooling on CUDA: one thread per output element, its window reduced serially in a
register; consecutive threads take consecutive output elements (coalesced writes,
and reads along the innermost axis)."""
from __future__ import annotations

from ..generic.default import new_schedule
from ..nn.pooling import POOL_REDUCTIONS
from ..schedule_registry import register_schedule
from ..utils import find_anchors, inline_padding
from .injective import schedule_injective_from_existing


def _schedule(outs, what):
    outs, s = new_schedule(outs)
    out = outs[0]
    pools = find_anchors(s, out, POOL_REDUCTIONS, what, "a pooling output")
    for op in pools:
        inline_padding(s, op)
        if op is not out.op:
            s[op].set_scope("local")
    schedule_injective_from_existing(s, out, vector=1)
    thread = s[out].leaf_iter_vars[-1]
    for op in pools:
        if op is not out.op:
            s[op].compute_at(s[out], thread)
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
