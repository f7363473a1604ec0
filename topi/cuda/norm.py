"""Batch normalization and local response normalization on CUDA.

``schedule_batch_norm``
    Every output an injective kernel (coalesced, a thread per element or per
    vector); in training, each per-channel statistic a kernel of its own, a block
    per channel reducing across its threads.
``schedule_lrn``
    The output's elements spread over blocks of threads; each thread sums the
    squares of its window (the padding inlined) right before writing its element
    (an element-wise op after the LRN included).
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...te.schedule import AutoInlineInjective
from ..generic.default import outputs_of
from ..nn.batch_norm import SUM_TAG as BN_SUM_TAG
from ..nn.local_response_norm import SQR_SUM_TAG, inline_padding
from ..schedule_registry import register_schedule
from ..utils import get_const_tuple, prod, traverse_inline
from .injective import schedule_injective_from_existing
from .reduction import threads_for
from .utils import max_threads


@register_schedule(BN_SUM_TAG, "cuda")
def schedule_batch_norm(outs):
    """The CUDA schedule of ``batch_norm``'s outputs (``[out, moving_mean,
    moving_var]``, or any of them).

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    AutoInlineInjective(s)
    for t in outs:
        schedule_injective_from_existing(s, t)
    for stage in s.stages:
        op = stage.op
        if isinstance(op, te.ComputeOp) and op.tag == BN_SUM_TAG:
            extent = prod(get_const_tuple([iv.dom.extent for iv in op.reduce_axis]))
            num_thread = threads_for(extent, max_threads(256))
            rk = list(stage.op.reduce_axis)
            kk = rk[0] if len(rk) == 1 else stage.fuse(*rk)
            _, ki = stage.split(kk, factor=num_thread)
            stage.bind(ki, te.thread_axis((0, num_thread), "threadIdx.x"))
            (c,) = stage.op.axis
            stage.bind(c, te.thread_axis("blockIdx.x"))
    return s


@register_schedule(SQR_SUM_TAG, "cuda")
def schedule_lrn(outs):
    """The CUDA schedule of ``lrn`` (and of an element-wise op after it): one kernel.

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
        if op.tag == SQR_SUM_TAG and not found:
            found.append(op)

    traverse_inline(s, out.op, visit)
    if not found:
        raise ScheduleError(f"schedule_lrn: {out.op.name!r} (tag {out.op.tag!r}) is not an lrn nor an element-wise "
                            "op after one")
    inline_padding(s, found[0])
    num_thread = max_threads(256)
    fused = s[out].fuse(*s[out].op.axis)
    bx, tx = s[out].split(fused, factor=num_thread)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    s[found[0]].compute_at(s[out], tx)
    return s
