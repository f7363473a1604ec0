"""ONNX's DeformConv (opset 19) through the importer and the graph op
nn.deformable_conv2d: small models made with ``onnx.helper``, built for "llvm" (and
"cuda", run on the emulator where there is no GPU) and compared with ONNX's
reference evaluator (onnxruntime may lack the operator) -- with and without bias
and mask, grouped, with offset groups, strided, dilated and padded unevenly,
offsets computed by the model, a Relu fused into the convolution's kernel, float16;
the graph op alone with TVM's sampling against topi.testing; every error, naming
the node."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tecc import topi  # noqa: E402
from tecc.graph.frontend import OnnxImportError, from_onnx  # noqa: E402
from tecc.graph.ir import GraphError  # noqa: E402
from ops_run import run_op, tecc_outputs, typed_model  # noqa: E402

OPSET = 19


def rand(*shape, low=-1.0, high=1.0, seed=0, dtype="float32"):
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).uniform(low, high, shape).astype(dtype)


def make_model(nodes, inputs, outputs, inits=None):
    """A model of ``nodes``; ``inputs`` / ``inits`` map names to arrays; the outputs
    are typed by ONNX's shape inference."""
    return typed_model(nodes, inputs, outputs, inits, OPSET, name="deform")


def tecc_run(model, inputs, target="llvm"):
    return tecc_outputs(model, inputs, target)


def node(ins, outs="y", op="DeformConv", **attrs):
    outs = outs if isinstance(outs, list) else [outs]
    return helper.make_node(op, ins, outs, name=f"{op}_{outs[0]}", **attrs)


def out_size(size, k, stride, dilation, before, after):
    return (size + before + after - ((k - 1) * dilation + 1)) // stride + 1


def deform_case(x_shape, filters, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1,
                offset_group=1, bias=False, mask=False):
    """``(node, inputs, inits)`` of one DeformConv: X, offset (and mask) inputs, W
    (and B) initializers; offsets reaching past the image, some on whole pixels."""
    n, c, h, w = x_shape
    kh, kw = kernel
    oh = out_size(h, kh, strides[0], dilations[0], pads[0], pads[2])
    ow = out_size(w, kw, strides[1], dilations[1], pads[1], pads[3])
    taps = offset_group * kh * kw
    offset = rand(n, 2 * taps, oh, ow, low=-2.0, high=2.0, seed=1)
    offset[:, ::3] = np.round(offset[:, ::3])
    inputs = {"x": rand(*x_shape), "offset": offset}
    inits = {"w": rand(filters, c // group, kh, kw, seed=2)}
    ins = ["x", "w", "offset"]
    if bias:
        inits["b"] = rand(filters, seed=3)
    ins.append("b" if bias else "")
    if mask:
        inputs["mask"] = rand(n, taps, oh, ow, low=0.0, high=1.0, seed=4)
        ins.append("mask")
    while ins[-1] == "":
        ins.pop()
    attrs = dict(kernel_shape=list(kernel), strides=list(strides), pads=list(pads), dilations=list(dilations),
                 group=group, offset_group=offset_group)
    return node(ins, **attrs), inputs, inits


def check(nodes, inputs, inits, outputs=("y",), target="llvm", rtol=1e-5, atol=1e-5):
    model = make_model(nodes, inputs, list(outputs), inits)
    want = ReferenceEvaluator(model).run(None, dict(inputs))
    got = tecc_run(model, inputs, target)
    for name, g, w in zip(outputs, got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, name
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


CASES = {
    "padded": dict(x_shape=(1, 2, 5, 6), filters=3, kernel=(3, 3), pads=(1, 1, 1, 1)),
    "mask_bias": dict(x_shape=(2, 2, 5, 5), filters=2, kernel=(2, 2), bias=True, mask=True),
    "offset_groups": dict(x_shape=(1, 4, 5, 5), filters=2, kernel=(3, 3), pads=(1, 1, 1, 1), offset_group=2,
                          mask=True),
    "grouped_strided_dilated": dict(x_shape=(1, 4, 7, 6), filters=4, kernel=(3, 2), strides=(2, 1),
                                    pads=(2, 0, 1, 1), dilations=(1, 2), group=2, offset_group=4, bias=True),
    "depthwise": dict(x_shape=(1, 3, 5, 5), filters=3, kernel=(3, 3), pads=(1, 1, 1, 1), group=3, offset_group=3),
}


@pytest.mark.parametrize("case", list(CASES))
def test_deform_conv_against_onnx_reference(case):
    n, inputs, inits = deform_case(**CASES[case])
    check([n], inputs, inits)


@pytest.mark.parametrize("case", ["mask_bias", "grouped_strided_dilated"])
def test_deform_conv_on_cuda(case):
    n, inputs, inits = deform_case(**CASES[case])
    check([n], inputs, inits, target="cuda")


def test_offsets_computed_by_the_model_and_a_relu_after():
    # the offsets and the mask come out of a convolution and a sigmoid (as in DCNv2); a Relu follows
    x = rand(1, 2, 6, 6)
    inits = {"wo": rand(18, 2, 3, 3, seed=5), "wm": rand(9, 2, 3, 3, seed=6), "w": rand(4, 2, 3, 3, seed=7),
             "b": rand(4, seed=8)}
    nodes = [node(["x", "wo"], "offset", op="Conv", pads=[1, 1, 1, 1]),
             node(["x", "wm"], "logits", op="Conv", pads=[1, 1, 1, 1]),
             node(["logits"], "mask", op="Sigmoid"),
             node(["x", "w", "offset", "b", "mask"], "d", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node(["d"], "y", op="Relu")]
    for target in ("llvm", "cuda"):
        check(nodes, {"x": x}, inits, target=target)


def test_float16_is_summed_in_float32():
    n, inputs, inits = deform_case(**CASES["mask_bias"])
    model = make_model([n], inputs, ["y"], inits)
    want = ReferenceEvaluator(model).run(None, inputs)[0]
    half_inputs = {k: v.astype("float16") for k, v in inputs.items()}
    half_inits = {k: v.astype("float16") for k, v in inits.items()}
    got = tecc_run(make_model([n], half_inputs, ["y"], half_inits), half_inputs)[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype("float32"), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("partial_edges", [False, True])
def test_graph_op_against_topi_testing(partial_edges):
    data, weight = rand(1, 4, 6, 5), rand(6, 2, 3, 3, seed=1)
    offset, mask = rand(1, 36, 3, 5, low=-2, high=2, seed=2), rand(1, 18, 3, 5, low=0, high=1, seed=3)
    attrs = dict(strides=(2, 1), padding=(1, 1), dilation=(1, 1), deformable_groups=2, groups=2, channels=6,
                 kernel_size=(3, 3), partial_edges=partial_edges)
    got = run_op("nn.deformable_conv2d", [data, offset, weight, mask], attrs)
    want = topi.testing.deformable_conv2d_nchw_python(data, offset, weight, (2, 1), (1, 1), 1, 2, 2, mask=mask,
                                                      partial_edges=partial_edges)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = run_op("nn.deformable_conv2d", [data, offset, weight], attrs, target="cuda")
    want = topi.testing.deformable_conv2d_nchw_python(data, offset, weight, (2, 1), (1, 1), 1, 2, 2,
                                                      partial_edges=partial_edges)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
def refused(nodes, inputs, match, inits=None):
    """The importer refuses the model (its output declared, not inferred: ONNX's
    shape inference refuses such nodes too)."""
    in_infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                for n, a in inputs.items()]
    graph = helper.make_graph(nodes, "bad", in_infos, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


X, W, OFFSET = rand(1, 2, 5, 5), rand(2, 2, 3, 3), rand(1, 18, 3, 3)
ERRORS = [
    (node(["x", "w", "offset"]), {"x": rand(1, 2, 5), "offset": rand(1, 6, 3)}, {"w": rand(2, 2, 3)},
     r"DeformConv node 'DeformConv_y': X has shape \(1, 2, 5\) \(rank 3\); tecc converts the 2-D DeformConv only"),
    (node(["x", "w", "offset"]), {"x": rand(1, 2, 5, 5, 5), "offset": rand(1, 54, 3, 3, 3)},
     {"w": rand(2, 2, 3, 3, 3)}, r"DeformConv node 'DeformConv_y': X has shape \(1, 2, 5, 5, 5\) \(rank 5\)"),
    (node(["x", "w", "offset"], kernel_shape=[2, 2]), {"x": X, "offset": OFFSET}, {"w": W},
     r"DeformConv node 'DeformConv_y': kernel_shape \[2, 2\] differs from the kernel of W \(3, 3\)"),
    (node(["x", "w", "offset"], strides=[1, 1, 1]), {"x": X, "offset": OFFSET}, {"w": W},
     r"DeformConv node 'DeformConv_y': strides \[1, 1, 1\], dilations \[1, 1\] and pads \[0, 0, 0, 0\] must have "
     r"2, 2 and 4 values"),
    (node(["x", "w", "offset"]), {"x": X, "offset": rand(1, 9, 3, 3)}, {"w": W},
     r"DeformConv node 'DeformConv_y': nn.deformable_conv2d: offset has shape \(1, 9, 3, 3\) but must be "
     r"\(1, 18, 3, 3\)"),
    (node(["x", "w", "offset"], pads=[1, 1, 1, 1]), {"x": X, "offset": OFFSET}, {"w": W},
     r"DeformConv node 'DeformConv_y': nn.deformable_conv2d: offset has shape \(1, 18, 3, 3\) but must be "
     r"\(1, 18, 5, 5\)"),
    (node(["x", "w", "offset", "", "mask"]), {"x": X, "offset": OFFSET, "mask": rand(1, 3, 3, 3)}, {"w": W},
     r"DeformConv node 'DeformConv_y': nn.deformable_conv2d: mask has shape \(1, 3, 3, 3\) but must be "
     r"\(1, 9, 3, 3\)"),
    (node(["x", "w", "offset"], group=2), {"x": X, "offset": OFFSET}, {"w": W},
     r"DeformConv node 'DeformConv_y': nn.deformable_conv2d: data has 2 input channels but the weight \(2, 2, 3, 3\) "
     r"with groups=2 expects 4"),
    (node(["x", "w", "offset"], offset_group=3), {"x": X, "offset": rand(1, 54, 3, 3)}, {"w": W},
     r"DeformConv node 'DeformConv_y': nn.deformable_conv2d: 2 input channels are not divisible by "
     r"deformable_groups=3"),
    (node(["x", "w", "offset"]), {"x": rand(1, 2, 2, 2), "offset": OFFSET}, {"w": W},
     r"DeformConv node 'DeformConv_y': nn.deformable_conv2d: the kernel \(3, 3\) \(dilation \(1, 1\)\) does not fit "
     r"in the padded input \(2, 2\)"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_deform_conv_errors_name_the_node(case):
    n, inputs, inits, match = ERRORS[case]
    refused([n], inputs, match, inits)


def _graph_errors():
    data, offset, weight = np.zeros((1, 2, 5, 5), "float32"), np.zeros((1, 18, 3, 3), "float32"), \
        np.zeros((2, 2, 3, 3), "float32")
    return [
        ([data, offset], {}, r"nn.deformable_conv2d takes data, offset, weight and an optional mask \(3 or 4 "
                             r"operands\), got 2"),
        ([data, offset, weight], {"data_layout": "NHWC"}, r"attribute 'data_layout' = 'NHWC' is not one of \['NCHW'\]"),
        ([data.astype("float16"), offset, weight], {}, r"operands have different dtypes"),
        ([data.astype("int32"), offset.astype("int32"), weight.astype("int32")], {},
         r"the operands must hold floats, got int32"),
        ([data[0], offset, weight], {}, r"data must be 4-D, got shape \(2, 5, 5\)"),
        ([data, offset, weight], {"partial_edges": 1}, r"partial_edges must be True or False, got 1"),
        ([data, offset, weight], {"deformable_groups": 0}, r"deformable_groups must be >= 1, got 0"),
        ([data, offset, weight], {"channels": 3}, r"channels=3 but the weight has 2 output channels"),
        ([data, offset, weight], {"kernel_size": (2, 2)}, r"kernel_size=\[2, 2\] but the weight's kernel is \(3, 3\)"),
        ([data, offset, np.zeros((3, 1, 3, 3), "float32")], {"groups": 2},
         r"3 output channels are not divisible by groups=2"),
        ([data, offset, weight], {"out_dtype": "real"}, r"attribute 'out_dtype' = 'real' is not a dtype"),
    ]


@pytest.mark.parametrize("case", range(len(_graph_errors())))
def test_graph_op_errors(case):
    args, attrs, match = _graph_errors()[case]
    with pytest.raises(GraphError, match=match):
        run_op("nn.deformable_conv2d", args, attrs)
