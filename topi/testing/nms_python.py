"""numpy reference of :func:`tecc.topi.vision.non_max_suppression`: ONNX's greedy
non-maximum suppression written out box by box (the kept rows, not padded)."""
import numpy as np


def _corners(box, center_point_box):
    if center_point_box:
        x, y, w, h = box
        return x - w / 2, x + w / 2, y - h / 2, y + h / 2
    y1, x1, y2, x2 = box
    return min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)


def iou_above(a, b, center_point_box, threshold) -> bool:
    """Whether boxes ``a`` and ``b`` overlap by an IoU above ``threshold`` (a box of
    no area overlaps nothing)."""
    ax0, ax1, ay0, ay1 = _corners(a, center_point_box)
    bx0, bx1, by0, by1 = _corners(b, center_point_box)
    w, h = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
    if w <= 0 or h <= 0:
        return False
    inter = w * h
    area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    if inter <= 0 or area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter > threshold * union


def non_max_suppression_python(boxes, scores, max_per_class, iou_threshold=0.0, score_threshold=None,
                               center_point_box=0):
    """``int64 [kept, 3]``: the ``(image, class, box)`` rows kept, pairs in order."""
    rows = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            order = np.argsort(-scores[b, c], kind="stable")
            kept = []
            for i in order:
                if len(kept) == max_per_class:
                    break
                if score_threshold is not None and not scores[b, c, i] > score_threshold:
                    continue
                if not any(iou_above(boxes[b, i], boxes[b, j], center_point_box, iou_threshold) for j in kept):
                    kept.append(int(i))
            rows += [(b, c, i) for i in kept]
    return np.array(rows, np.int64).reshape(-1, 3)
