"""Non-maximum suppression on CUDA (:mod:`..vision.nms`): one thread per (image,
class) pair runs the CPU statement's greedy walk over its sorted boxes
(:func:`..vision.nms.suppress_one`), then a second kernel of one thread writes the
kept rows in order (:func:`..vision.nms.write_rows`); the work buffers are
allocated outside the kernels."""
from __future__ import annotations

from ... import te, tir
from ..vision import nms as _nms
from .sort import named_gpu_schedule
from .utils import thread_per_item

#: threads per block of the suppression kernel (one (image, class) pair each)
NMS_THREADS = 64


def gpu_nms_ir(boxes, scores, order, out, cnt, shape, iou_threshold, score_threshold, center_point_box):
    """The GPU statement of :func:`tecc.topi.vision.non_max_suppression`."""
    images, n, classes, kept_max = shape
    pairs = images * classes
    ib = tir.ir_builder.create()
    bx, sc, od, o_, c_, keep, counts = _nms.statement_buffers(ib, boxes, scores, order, out, cnt, pairs, kept_max)
    with thread_per_item(ib, pairs, NMS_THREADS) as pair:
        kept = _nms.suppress_one(ib, bx, sc, od, keep, pair, classes, n, kept_max, iou_threshold, score_threshold,
                                 center_point_box)
        counts[pair] = kept[0]
    with ib.new_scope():
        one_b, one_t = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
        ib.scope_attr(one_b, "thread_extent", 1)
        ib.scope_attr(one_t, "thread_extent", 1)
        _nms.write_rows(ib, keep, counts, o_, c_, pairs, classes, kept_max)
    return ib.get()


def non_max_suppression(boxes, scores, max_per_class, iou_threshold=0.0, score_threshold=None, center_point_box=0):
    """:func:`tecc.topi.vision.non_max_suppression` with the GPU statement."""
    return _nms.nms_impl(boxes, scores, max_per_class, iou_threshold, score_threshold, center_point_box, True)


schedule_nms = named_gpu_schedule("schedule_nms", (_nms.NMS_TAG,))
