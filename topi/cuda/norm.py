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
from ..generic.default import new_schedule
from ..generic.norm import find_lrn
from ..nn.batch_norm import SUM_TAG as BN_SUM_TAG
from ..nn.local_response_norm import SQR_SUM_TAG
from ..reduce_plan import reduce_extent
from ..schedule_registry import register_schedule
from ..utils import fuse_all
from .injective import schedule_injective
from .reduction import threads_for
from .utils import bind_blocks_threads, bind_reduce_axes, max_threads


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
    s = schedule_injective(outs)
    for stage in s.stages:
        op = stage.op
        if isinstance(op, te.ComputeOp) and op.tag == BN_SUM_TAG:
            num_thread = threads_for(reduce_extent(op), max_threads(256))
            bind_reduce_axes(stage, num_thread, te.thread_axis((0, num_thread), "threadIdx.x"))
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
    outs, s = new_schedule(outs)
    sqr, out = find_lrn(s, outs)
    _, tx = bind_blocks_threads(s[out], fuse_all(s, out), max_threads(256))
    s[sqr].compute_at(s[out], tx)
    return s
