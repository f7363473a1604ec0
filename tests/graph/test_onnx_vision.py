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

