"""ONNX's RoiAlign (opsets 10 and 16) through the importer's vision converter: small
models made with ``onnx.helper``, built for "llvm" (and "cuda", run on the emulator
where there is no GPU) and compared with onnxruntime's CPU provider and with
``onnx.reference`` -- both modes (ONNX's max: the largest weighted pixel term),
both coordinate transformation modes, adaptive and fixed sampling; what the node
imports as and fuses with; the graph operator vision.roi_align it becomes; and
every error, naming the node (or the operator)."""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tecc import graph as g  # noqa: E402
from tecc import topi  # noqa: E402
from tecc.graph.frontend import OnnxImportError, from_onnx  # noqa: E402
from tecc.graph.ir import GraphError  # noqa: E402
from tecc.graph.transform import fuse_ops, fused_groups  # noqa: E402
from tecc.graph.transform.infer_type import infer_type  # noqa: E402
from ops_run import make_call, run_op, tecc_outputs  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6

#: x1, y1, x2, y2 (image coordinates; spatial_scale 0.5 onto a 7 x 9 map): inside, past the top-left
#: edges, smaller than a pixel, the whole map, flipped, on the last row and column
BOXES = np.array([[1.0, 1.5, 6.0, 5.0], [-2.0, -1.0, 12.0, 9.0], [3.2, 2.1, 3.3, 2.2], [0.0, 0.0, 16.0, 12.0],
                  [9.0, 8.0, 3.0, 2.0], [16.0, 12.0, 17.0, 14.0]], "float32")
BATCH = np.array([0, 1, 1, 0, 1, 0], "int64")


def rand(*shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed + sum(shape)).uniform(-1.0, 1.0, shape).astype(dtype)


def roi_model(opset=16, x_shape=(2, 3, 7, 9), dtype=TensorProto.FLOAT, after=None, **attrs):
    """A model of one RoiAlign node (``after``: an op type applied to its output)."""
    nodes = [helper.make_node("RoiAlign", ["x", "rois", "batch_indices"], ["y" if after is None else "r"],
                              name="roi", **attrs)]
    if after is not None:
        nodes.append(helper.make_node(after, ["r"], ["y"], name="after"))
    inputs = [helper.make_tensor_value_info("x", dtype, x_shape),
              helper.make_tensor_value_info("rois", dtype, (len(BOXES), 4)),
              helper.make_tensor_value_info("batch_indices", TensorProto.INT64, (len(BOXES),))]
    graph = helper.make_graph(nodes, "roi_align", inputs, [helper.make_tensor_value_info("y", dtype, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def feeds(dtype="float32"):
    return {"x": rand(2, 3, 7, 9, dtype=dtype), "rois": BOXES.astype(dtype), "batch_indices": BATCH}


def onnxruntime(model, inputs):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)[0]


def tecc_run(model, inputs, target="llvm"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no GPU here: the emulator runs the CUDA kernels
        (got,) = tecc_outputs(model, inputs, target)
    return got


# ---------------------------------------------------------------------------------------
# against onnxruntime and onnx.reference
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("opset, transform", [(16, None), (16, "output_half_pixel"), (16, "half_pixel"),
                                              (21, "output_half_pixel")])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_roi_align_matches_onnxruntime_and_the_reference(opset, transform, mode, sampling_ratio):
    attrs = dict(mode=mode, output_height=3, output_width=4, sampling_ratio=sampling_ratio, spatial_scale=0.5)
    if transform is not None:
        attrs["coordinate_transformation_mode"] = transform
    model = roi_model(opset, **attrs)
    inputs = feeds()
    got = tecc_run(model, inputs)
    want = onnxruntime(model, inputs)
    assert got.shape == want.shape == (6, 3, 3, 4) and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, inputs)[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_10_reads_output_half_pixel(mode):
    # RoiAlign-10 has no coordinate_transformation_mode: its regions are those of
    # output_half_pixel, as onnxruntime reads them (onnx.reference applies the newer
    # default, half_pixel, there)
    model = roi_model(10, mode=mode, output_height=2, output_width=3, sampling_ratio=0, spatial_scale=0.5)
    inputs = feeds()
    got = tecc_run(model, inputs)
    np.testing.assert_allclose(got, onnxruntime(model, inputs), rtol=RTOL, atol=ATOL)
    newer = roi_model(16, mode=mode, output_height=2, output_width=3, spatial_scale=0.5,
                      coordinate_transformation_mode="output_half_pixel")
    np.testing.assert_allclose(got, ReferenceEvaluator(newer).run(None, inputs)[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode, transform", [("avg", "half_pixel"), ("max", "output_half_pixel")])
def test_roi_align_on_cuda_fuses_the_op_after_it(mode, transform):
    model = roi_model(16, after="Relu", mode=mode, output_height=3, output_width=2, sampling_ratio=0,
                      spatial_scale=0.5, coordinate_transformation_mode=transform)
    mod, _ = from_onnx(model)
    assert fused_groups(fuse_ops(mod))[-1] == ["vision.roi_align", "nn.relu"]
    inputs = feeds()
    np.testing.assert_allclose(tecc_run(model, inputs, "cuda"), onnxruntime(model, inputs), rtol=RTOL, atol=ATOL)


def test_roi_align_of_float64_and_float16():
    model = roi_model(16, dtype=TensorProto.DOUBLE, mode="avg", output_height=2, output_width=2, sampling_ratio=2)
    inputs = feeds("float64")
    got = tecc_run(model, inputs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, onnxruntime(model, inputs), rtol=1e-12, atol=1e-12)
    # onnxruntime's CPU provider has no float16 RoiAlign: against the reference
    model = roi_model(16, dtype=TensorProto.FLOAT16, mode="max", output_height=2, output_width=3, spatial_scale=0.5)
    inputs = feeds("float16")
    got = tecc_run(model, inputs)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, inputs)[0], rtol=2e-3, atol=2e-3)


def test_roi_align_imports_as_one_operator_of_the_indexed_regions():
    model = roi_model(16, mode="max", output_height=3, output_width=4, sampling_ratio=2, spatial_scale=0.25)
    mod, _ = from_onnx(model)
    ops = [n.op.name for n in g.topological_order(mod["main"].body) if isinstance(n, g.Call)]
    assert ops == ["expand_dims", "cast", "concatenate", "vision.roi_align"]
    call = mod["main"].body
    assert dict(call.attrs) == dict(pooled_size=(3, 4), spatial_scale=0.25, sample_ratio=2, layout="NCHW",
                                    mode="onnx_max", aligned=True)
    assert call.args[1].checked_type == g.TensorType((6, 5), "float32")
    assert call.checked_type == g.TensorType((6, 3, 3, 4), "float32")


# ---------------------------------------------------------------------------------------
# the graph operator
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("mode, sample_ratio, aligned", [("avg", -1, False), ("max", 2, True),
                                                         ("onnx_max", 0, True)])
def test_graph_roi_align(target, mode, sample_ratio, aligned):
    data = rand(2, 3, 7, 9)
    rois = np.concatenate([BATCH[:, None].astype("float32"), BOXES], axis=1)
    got = run_op("vision.roi_align", [data, rois], dict(pooled_size=(3, 2), spatial_scale=0.5, mode=mode,
                                                        sample_ratio=sample_ratio, aligned=aligned), target)
    want = topi.testing.roi_align_nchw_python(data, rois, (3, 2), 0.5, sample_ratio, mode, aligned)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def _graph_errors():
    data, rois = rand(2, 3, 7, 9), rand(6, 5)
    base = dict(pooled_size=(3, 3), spatial_scale=0.5)
    return [
        ([data, rois], dict(base, mode="sum"), r"vision.roi_align: attribute 'mode' = 'sum' is not one of "
                                               r"\['avg', 'max', 'onnx_max'\]"),
        ([data, rois], dict(base, layout="NHWC"), r"attribute 'layout' = 'NHWC' is not one of \['NCHW'\]"),
        ([data, rois], dict(base, pooled_size=(3, 0)), r"attribute 'pooled_size' = \[3, 0\] has an entry below 1"),
        ([data, rois], dict(base, spatial_scale=-1.0), r"spatial_scale must be a positive number"),
        ([data, rois], dict(base, sample_ratio=1.5), r"attribute 'sample_ratio' must be an int, got 1.5"),
        ([data, rois], dict(base, aligned="no"), r"aligned must be a bool, got 'no'"),
        ([rand(3, 7, 9), rois], base, r"data must be 4-D \[batch, channel, height, width\], got shape \(3, 7, 9\)"),
        ([data, rand(6, 4)], base, r"rois must be \[num_roi, 5\] \(batch_index, x1, y1, x2, y2 of each region\)"),
        ([data.astype("int32"), rois], base, r"data must hold floats, got int32"),
    ]


@pytest.mark.parametrize("case", range(len(_graph_errors())))
def test_graph_roi_align_errors_name_the_operator_and_attribute(case):
    args, attrs, message = _graph_errors()[case]
    with pytest.raises(GraphError, match=message):
        make_call("vision.roi_align", args, attrs)


def test_graph_roi_align_adaptive_grid_needs_a_static_map():
    call = g.call("vision.roi_align", g.Var("x", g.TensorType((1, 3, "h", 9))), g.Var("r", g.TensorType((4, 5))),
                  pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(GraphError, match=r"an adaptive grid \(sample_ratio <= 0\) needs dimension 2 of shape"):
        infer_type(call)


# ---------------------------------------------------------------------------------------
# errors of the importer, naming the node
# ---------------------------------------------------------------------------------------
def refused(attrs, match, x_shape=(2, 3, 7, 9), rois_shape=(6, 4), index=(TensorProto.INT64, (6,)), opset=16):
    """The importer refuses a RoiAlign node (its output declared, not inferred)."""
    node = helper.make_node("RoiAlign", ["x", "rois", "batch_indices"], ["y"], name="roi", **attrs)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
              helper.make_tensor_value_info("rois", TensorProto.FLOAT, rois_shape),
              helper.make_tensor_value_info("batch_indices", index[0], index[1])]
    graph = helper.make_graph([node], "bad", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    with pytest.raises(OnnxImportError, match=r"RoiAlign node 'roi': " + match):
        from_onnx(model)


@pytest.mark.parametrize("attrs, match, shapes", [
    (dict(mode="sum"), r"mode 'sum' must be 'avg' or 'max'", {}),
    (dict(coordinate_transformation_mode="align_corners"),
     r"coordinate_transformation_mode 'align_corners' must be 'half_pixel' or 'output_half_pixel'", {}),
    (dict(output_height=0), r"output_height and output_width are \(0, 1\); they must be positive", {}),
    (dict(spatial_scale=0.0), r"spatial_scale 0.0 must be positive", {}),
    (dict(sampling_ratio=-1), r"sampling_ratio -1 must be 0 \(adaptive\) or positive", {}),
    ({}, r"X has shape \(3, 7, 9\); RoiAlign pools 4-D inputs \[N, C, H, W\]", dict(x_shape=(3, 7, 9))),
    ({}, r"rois has shape \(6, 5\); it must be \[num_rois, 4\]", dict(rois_shape=(6, 5))),
    ({}, r"batch_indices has shape \(5,\); it must be \[num_rois\] = \[6\]", dict(index=(TensorProto.INT64, (5,)))),
    ({}, r"batch_indices holds float32; it must hold integers", dict(index=(TensorProto.FLOAT, (6,)))),
])
def test_roi_align_errors_name_the_node(attrs, match, shapes):
    refused(attrs, match, **shapes)



# ---------------------------------------------------------------------------------------
# NonMaxSuppression: an output whose rows the model counts
# ---------------------------------------------------------------------------------------
def nms_model(n=20, classes=3, most=4, iou=0.3, threshold=0.2, center=0, after=None):
    """boxes [2, n, 4] and scores [2, classes, n] inputs; the limits as initializers."""
    inits = [helper.make_tensor("most", TensorProto.INT64, [1], [most]),
             helper.make_tensor("iou", TensorProto.FLOAT, [1], [iou])]
    ins = ["boxes", "scores", "most", "iou"]
    if threshold is not None:
        inits.append(helper.make_tensor("thr", TensorProto.FLOAT, [1], [threshold]))
        ins.append("thr")
    nodes = [helper.make_node("NonMaxSuppression", ins, ["sel" if after else "y"], center_point_box=center,
                              name="nms")]
    if after:
        nodes.append(helper.make_node(after, ["sel"], ["y"], name="reader"))
    graph = helper.make_graph(nodes, "nms", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [2, n, 4]),
                                             helper.make_tensor_value_info("scores", TensorProto.FLOAT,
                                                                           [2, classes, n])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def nms_feed(seed, n=20, classes=3):
    rng = np.random.default_rng(seed)
    xy, wh = rng.uniform(0, 5, size=(2, n, 2)), rng.uniform(0.5, 3, size=(2, n, 2))  # crowded: some overlap
    boxes = np.ascontiguousarray(np.concatenate([xy, xy + wh], axis=2)[..., [1, 0, 3, 2]], dtype="float32")
    return {"boxes": boxes, "scores": rng.uniform(size=(2, classes, n)).astype("float32")}


def _ort_nms(model, feed):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("threshold, center", [(0.2, 0), (None, 0), (0.5, 1)])
def test_non_max_suppression_matches_onnxruntime_run_after_run(target, threshold, center):
    """One executor, three runs on different data: each gives as many rows as
    onnxruntime's (the executor hides the count it gives them by)."""
    import tecc  # noqa: PLC0415
    from tecc.contrib import graph_executor  # noqa: PLC0415
    from tecc.graph.build import build  # noqa: PLC0415

    model = nms_model(most=8, iou=0.1, threshold=threshold, center=center)
    mod, params = from_onnx(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        factory = build(mod, target=target, params=params)
        gmod = graph_executor.GraphModule(factory["default"](tecc.cuda(0) if target == "cuda" else tecc.cpu(0)))
    assert gmod.get_num_outputs() == 1
    info = factory.spec.output_info()
    assert info == [{"index": 0, "name": "y", "shape": [2 * 3 * 8, 3], "dtype": "int64", "max_rows": 48}]
    counts = set()
    for seed in (1, 2, 3):
        feed = nms_feed(seed)
        if center:  # x_center, y_center, width, height
            feed["boxes"][..., 2:] = np.abs(feed["boxes"][..., 2:] - feed["boxes"][..., :2])
        for name, value in feed.items():
            gmod.set_input(name, value)
        gmod.run()
        got = gmod.get_output(0).numpy()
        want = _ort_nms(model, feed)
        np.testing.assert_array_equal(got, want)
        counts.add(len(got))
    assert len(counts) > 1  # the data decided different numbers of rows


def test_non_max_suppression_artifact_round_trip_and_cli_info(tmp_path, capsys):
    """The counted rows survive export and load (the graph JSON's output_rows), and
    `tecc info` names the output's most rows."""
    import tecc  # noqa: PLC0415
    from tecc.driver.tvmc import main  # noqa: PLC0415
    from tecc.contrib import graph_executor  # noqa: PLC0415
    from tecc.graph.build import build  # noqa: PLC0415

    model = nms_model()
    mod, params = from_onnx(model)
    path = tmp_path / "nms.tar"
    build(mod, target="llvm", params=params).export_library(str(path))
    loaded = tecc.runtime.load_module(str(path))
    gmod = graph_executor.GraphModule(loaded["default"](tecc.cpu(0)))
    feed = nms_feed(4)
    gmod.set_input(**feed)
    gmod.run()
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), _ort_nms(model, feed))
    capsys.readouterr()
    assert main(["info", str(path)]) == 0
    assert "output 0: (y) int64[<=24, 3]" in capsys.readouterr().out


def test_non_max_suppression_with_no_boxes_to_keep_gives_no_rows():
    feed = nms_feed(5)
    got = tecc_outputs(nms_model(most=0), feed)[0]
    assert got.shape == (0, 3) and got.dtype == np.int64


def test_a_node_reading_non_max_suppression_s_rows_is_refused():
    with pytest.raises(OnnxImportError, match=r"NonMaxSuppression node 'nms': its output 'sel' has as many rows as "
                                              r"the data decide, and node 'reader' reads it; tecc compiles static "
                                              r"shapes, so such a value can only be an output of the model"):
        from_onnx(nms_model(after="Identity"))


def test_vision_non_max_suppression_operator_errors():
    boxes = g.Var("b", g.TensorType((1, 5, 4), "float32"))
    scores = g.Var("s", g.TensorType((1, 2, 6), "float32"))
    with pytest.raises(GraphError, match=r"vision.non_max_suppression: scores must be \[images, classes, boxes\] = "
                                         r"\[1, classes, 5\], got shape \(1, 2, 6\)"):
        infer_type(g.Function([boxes, scores], g.call("vision.non_max_suppression", boxes, scores,
                                                      max_output_boxes_per_class=2)))
