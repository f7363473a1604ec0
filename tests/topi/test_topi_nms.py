"""topi.vision.non_max_suppression against its numpy reference (and ONNX's) on
"llvm" and "cuda" (the GPU emulator): random boxes in both box formats, with and
without a score threshold, ties, boxes of no area, the per-class limit; the rows
after the count are zeros; the cubins NVRTC makes; one expected failure per
argument error."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.topi.testing import non_max_suppression_python
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run


def random_boxes(rng, images, n, center):
    xy = rng.uniform(0, 10, size=(images, n, 2))
    wh = rng.uniform(0.5, 4, size=(images, n, 2))
    if center:
        return np.concatenate([xy, wh], axis=2).astype("float32")
    corners = np.concatenate([xy, xy + wh], axis=2)[..., [1, 0, 3, 2]]  # y1, x1, y2, x2
    flip = rng.random((images, n)) < 0.3  # some given the other way round
    corners[flip] = corners[flip][:, [2, 3, 0, 1]]
    return np.ascontiguousarray(corners, dtype="float32")


def run_nms(target, boxes, scores, most, iou, threshold, center):
    B, S = te.placeholder(boxes.shape, name="boxes"), te.placeholder(scores.shape, name="scores")
    with tecc.target.Target(target):
        sel, cnt = topi.vision.non_max_suppression(B, S, most, iou, threshold, center)
        s = topi.schedule([sel, cnt], target)
    got, count = build_run(s, [B, S], [sel, cnt], [boxes, scores], target)
    return got, int(count[0]), (s, [B, S, sel, cnt])


CASES = [(2, 30, 3, 5, 0.4, None, 0), (1, 40, 2, 40, 0.5, 0.3, 0), (3, 12, 1, 4, 0.2, 0.5, 1),
         (1, 25, 4, 2, 0.0, None, 1)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=[f"b{c[0]}_n{c[1]}_c{c[2]}_max{c[3]}_iou{c[4]}_thr{c[5]}_center{c[6]}"
                                             for c in CASES])
def test_nms_matches_numpy(target, case):
    images, n, classes, most, iou, threshold, center = case
    rng = np.random.default_rng(n + classes)
    boxes = random_boxes(rng, images, n, center)
    scores = np.round(rng.uniform(size=(images, classes, n)), 2).astype("float32")  # rounded: ties
    boxes[0, 1] = boxes[0, 0]          # a duplicate box: suppressed by its twin at any threshold below 1
    boxes[0, 2, 2:] = boxes[0, 2, :2]  # a box of no area: overlaps nothing
    got, count, _ = run_nms(target, boxes, scores, most, iou, threshold, center)
    want = non_max_suppression_python(boxes, scores, most, iou, threshold, center)
    assert got.shape == (images * classes * min(most, n), 3) and got.dtype == np.int64
    np.testing.assert_array_equal(got[:count], want)
    assert (got[count:] == 0).all()


def test_nms_matches_onnx_reference():
    onnx = pytest.importorskip("onnx")
    from onnx.reference.ops.op_non_max_suppression import NonMaxSuppression  # noqa: PLC0415

    rng = np.random.default_rng(7)
    boxes, scores = random_boxes(rng, 2, 20, False), rng.uniform(size=(2, 3, 20)).astype("float32")
    node = onnx.helper.make_node("NonMaxSuppression", ["b", "s", "m", "i", "t"], ["y"])
    op = NonMaxSuppression(node, {"opsets": {"": 11}, "log": lambda *a: None, "new_ops": None,
                                  "existing_functions": {}, "evaluator_cls": None})
    want = op._run(boxes, scores, np.array([4]), np.array([0.3], "float32"), np.array([0.2], "float32"),
                   center_point_box=0)[0]
    got, count, _ = run_nms("llvm", boxes, scores, 4, 0.3, 0.2, 0)
    np.testing.assert_array_equal(got[:count], want)


def test_nms_compiles_for_sm80_and_sm90():
    rng = np.random.default_rng(8)
    _, _, (s, args) = run_nms("cuda", random_boxes(rng, 1, 16, False), rng.uniform(size=(1, 2, 16)).astype("float32"),
                              3, 0.5, None, 0)
    build_all_arches(s, args)


@pytest.mark.parametrize("boxes_shape, scores_shape, most, message", [
    ((1, 5, 3), (1, 2, 5), 2, r"boxes must be \[images, boxes, 4\], got shape \(1, 5, 3\)"),
    ((1, 5, 4), (1, 2, 6), 2, r"scores must be \[images, classes, boxes\] = \[1, classes, 5\]"),
    ((1, 5, 4), (1, 2, 5), 0, r"max_per_class must be a positive int, got 0"),
])
def test_nms_argument_errors(boxes_shape, scores_shape, most, message):
    with pytest.raises(TopiError, match=message):
        topi.vision.non_max_suppression(te.placeholder(boxes_shape, name="b"), te.placeholder(scores_shape, name="s"),
                                        most)
