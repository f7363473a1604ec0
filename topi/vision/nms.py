"""Non-maximum suppression (ONNX's ``NonMaxSuppression``): per image and class, the
boxes kept greedily by score, each dropping the later ones it overlaps by more than
an IoU threshold.

:func:`non_max_suppression` is two stages: ``argsort`` of the scores (stable and
descending: of equal scores the lower box index comes first) and one ``te.extern``
statement that walks each (image, class)'s boxes in that order -- a box whose
score is above the score threshold, if one is given, is kept unless it overlaps a
box kept before by more than ``iou_threshold`` -- until ``max_per_class`` are
kept, then writes the kept boxes' ``(image, class, box)`` rows one after another,
(image, class) by (image, class).  The number of rows depends on the data, so the
output is padded to the most there can be, ``images x classes x min(max_per_class,
boxes)``, the rows after ``count`` zeros, and the count comes with it (``int64
[1]``): the graph executor gives the model's output as its first ``count`` rows.

The CPU statement spreads the (image, class) pairs over the cores; the GPU one
(:mod:`..cuda.nms`) runs one thread per pair, then one thread writes the rows.
Boxes are ``[y1, x1, y2, x2]`` corners in either order (``center_point_box=0``) or
``[x_center, y_center, width, height]`` (1); the IoU is ONNX's reference's (a box
of no area overlaps nothing).
"""
from __future__ import annotations

from ... import te, tir
from ...tir import dtype as _dt
from ..sort import argsort, check_tensor, is_gpu_target, local_scalar, static_shape
from ..utils import TopiError

NMS_TAG = "nms"


def check_nms_args(boxes, scores, max_per_class, what) -> tuple:
    """``(images, boxes, classes, kept per class at most)`` of the arguments."""
    check_tensor(boxes, what)
    check_tensor(scores, what)
    bs, ss = static_shape(boxes, what), static_shape(scores, what)
    if len(bs) != 3 or bs[2] != 4:
        raise TopiError(f"{what}: boxes must be [images, boxes, 4], got shape {bs}")
    if len(ss) != 3 or ss[0] != bs[0] or ss[2] != bs[1]:
        raise TopiError(f"{what}: scores must be [images, classes, boxes] = [{bs[0]}, classes, {bs[1]}], got shape "
                        f"{ss}")
    for name, t in (("boxes", boxes), ("scores", scores)):
        if not _dt.is_float(t.dtype):
            raise TopiError(f"{what}: {name} has dtype {t.dtype}; it must hold floats")
    if boxes.dtype != scores.dtype:
        raise TopiError(f"{what}: boxes ({boxes.dtype}) and scores ({scores.dtype}) must have one dtype")
    if isinstance(max_per_class, bool) or not isinstance(max_per_class, int) or max_per_class < 1:
        raise TopiError(f"{what}: max_per_class must be a positive int, got {max_per_class!r}")
    return bs[0], bs[1], ss[1], min(max_per_class, bs[1])


def _corners(bx, base, center_point_box):
    """``(x_min, x_max, y_min, y_max)`` of the box at ``bx[base:base + 4]``."""
    a, b, c, d = (bx[base + k] for k in range(4))
    if center_point_box:  # x_center, y_center, width, height
        half_w, half_h = c / tir.const(2, c.dtype), d / tir.const(2, d.dtype)
        return a - half_w, a + half_w, b - half_h, b + half_h
    return te.min(b, d), te.max(b, d), te.min(a, c), te.max(a, c)  # y1, x1, y2, x2 in either order


def overlaps(bx, first, second, center_point_box, iou_threshold):
    """Whether the boxes at offsets ``first`` and ``second`` of ``bx`` overlap by an
    IoU above ``iou_threshold`` (ONNX's reference: a box of no area overlaps
    nothing)."""
    ax0, ax1, ay0, ay1 = _corners(bx, first, center_point_box)
    bx0, bx1, by0, by1 = _corners(bx, second, center_point_box)
    w = te.min(ax1, bx1) - te.max(ax0, bx0)
    h = te.min(ay1, by1) - te.max(ay0, by0)
    zero = tir.const(0, w.dtype)
    inter = w * h
    area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    return te.all(w > zero, h > zero, inter > zero, area_a > zero, area_b > zero, union > zero,
                  inter > tir.const(iou_threshold, w.dtype) * union)


def suppress_one(ib, bx, sc, od, keep, pair, classes, n, kept_max, iou_threshold, score_threshold,
                 center_point_box):
    """Statements of ``ib`` keeping pair ``pair``'s boxes in ``keep[pair * kept_max:]``;
    returns the local counter of those kept."""
    image = pair // classes
    kept = local_scalar(ib, "int32", "kept")
    kept[0] = tir.const(0, "int32")
    with ib.for_range(0, n, name="k") as k:
        with ib.if_scope(kept[0] < kept_max):
            box = od[pair * n + k]
            score = sc[pair * n + box]
            ok = local_scalar(ib, "int32", "ok")
            one, zero = tir.const(1, "int32"), tir.const(0, "int32")
            ok[0] = one if score_threshold is None else tir.Select(
                score > tir.const(score_threshold, score.dtype), one, zero)
            with ib.for_range(0, kept_max, name="j") as j:
                with ib.if_scope(te.all(j < kept[0], ok[0] == 1)):
                    other = keep[pair * kept_max + j]
                    with ib.if_scope(overlaps(bx, (image * n + box) * 4, (image * n + other) * 4, center_point_box,
                                              iou_threshold)):
                        ok[0] = zero
            with ib.if_scope(ok[0] == 1):
                keep[pair * kept_max + kept[0]] = box
                kept[0] = kept[0] + one
    return kept


def write_rows(ib, keep, counts, out, cnt, pairs, classes, kept_max):
    """Statements of ``ib`` writing the kept boxes' ``(image, class, box)`` rows, the
    pairs in order, then zeros, and the count."""
    rows = local_scalar(ib, "int64", "rows")
    rows[0] = tir.const(0, "int64")
    with ib.for_range(0, pairs, name="p") as p:
        with ib.for_range(0, kept_max, name="j") as j:
            with ib.if_scope(j < counts[p]):
                r = rows[0] + j.astype("int64")
                out[r * 3] = (p // classes).astype("int64")
                out[r * 3 + 1] = (p % classes).astype("int64")
                out[r * 3 + 2] = keep[p * kept_max + j].astype("int64")
        rows[0] = rows[0] + counts[p].astype("int64")
    with ib.for_range(0, pairs * kept_max * 3, name="z") as z:
        with ib.if_scope(z.astype("int64") >= rows[0] * 3):
            out[z] = tir.const(0, "int64")
    cnt[0] = rows[0]


def statement_buffers(ib, boxes, scores, order, out, cnt, pairs, kept_max):
    """The pointers of a statement's inputs and outputs, and its work buffers
    (allocated outside any kernel): the boxes each pair keeps, and how many."""
    ptrs = [ib.buffer_ptr(t) for t in (boxes, scores, order, out, cnt)]
    keep = ib.allocate("int32", (pairs * kept_max,), name="nms_keep")
    counts = ib.allocate("int32", (pairs,), name="nms_counts")
    return ptrs + [keep, counts]


def _cpu_nms_ir(boxes, scores, order, out, cnt, shape, iou_threshold, score_threshold, center_point_box):
    images, n, classes, kept_max = shape
    pairs = images * classes
    ib = tir.ir_builder.create()
    bx, sc, od, o_, c_, keep, counts = statement_buffers(ib, boxes, scores, order, out, cnt, pairs, kept_max)
    with ib.for_range(0, pairs, name="pair", kind="parallel" if pairs > 1 else "serial") as pair:
        kept = suppress_one(ib, bx, sc, od, keep, pair, classes, n, kept_max, iou_threshold, score_threshold,
                            center_point_box)
        counts[pair] = kept[0]
    write_rows(ib, keep, counts, o_, c_, pairs, classes, kept_max)
    return ib.get()


def nms_impl(boxes, scores, max_per_class, iou_threshold, score_threshold, center_point_box, gpu):
    """:func:`non_max_suppression` (``gpu``: the GPU statement)."""
    what = "non_max_suppression"
    shape = check_nms_args(boxes, scores, max_per_class, what)
    images, n, classes, kept_max = shape
    if center_point_box not in (0, 1):
        raise TopiError(f"{what}: center_point_box must be 0 (corners) or 1 (center and size), got "
                        f"{center_point_box!r}")
    iou_threshold = float(iou_threshold)
    score_threshold = None if score_threshold is None else float(score_threshold)
    order = argsort(scores, axis=2, is_ascend=False, dtype="int32")
    if gpu:
        from ..cuda.nms import gpu_nms_ir as make_ir
    else:
        make_ir = _cpu_nms_ir
    rows = images * classes * kept_max
    selected, count = te.extern(
        [(rows, 3), (1,)], [boxes, scores, order],
        lambda ins, outs: make_ir(ins[0], ins[1], ins[2], outs[0], outs[1], shape, iou_threshold, score_threshold,
                                  center_point_box),
        name="non_max_suppression", dtype=["int64", "int64"], tag=NMS_TAG)
    return [selected, count]


def non_max_suppression(boxes, scores, max_per_class: int, iou_threshold: float = 0.0, score_threshold=None,
                        center_point_box: int = 0):
    """The boxes non-maximum suppression keeps, ONNX's ``selected_indices``.

    Parameters
    ----------
    boxes : Tensor
        ``[images, boxes, 4]``, floats.
    scores : Tensor
        ``[images, classes, boxes]``, ``boxes``'s dtype.
    max_per_class : int
        The most boxes kept per image and class (positive).
    iou_threshold : float
        A box overlapping a kept one by an IoU above this is dropped.
    score_threshold : float, optional
        Only boxes scoring above it are considered (None: every box).
    center_point_box : int
        0: boxes are ``[y1, x1, y2, x2]``; 1: ``[x_center, y_center, width, height]``.

    Returns
    -------
    list of Tensor
        ``[selected, count]``: ``int64 [images * classes * min(max_per_class, boxes),
        3]`` rows ``(image, class, box)``, the first ``count[0]`` of them kept (then
        zeros), and ``int64 [1]``; outputs of an extern stage tagged ``"nms"``.
    """
    return nms_impl(boxes, scores, max_per_class, iou_threshold, score_threshold, center_point_box,
                    is_gpu_target())
