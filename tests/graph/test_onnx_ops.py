"""The ONNX importer's converters, family by family: small ONNX models made with
``onnx.helper``, imported, built for "llvm" (the C backend) and run, compared with
onnxruntime.  Several independent nodes share one model (one output each) so that
a family compiles once."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tecc.graph.frontend import from_onnx  # noqa: E402

from ops_run import tecc_outputs  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4


def make_model(nodes, inputs, outputs, inits=None, opset=13):
    """An ONNX model of ``nodes``: ``inputs`` and ``inits`` map names to numpy
    arrays (their shapes and dtypes type the graph's inputs), ``outputs`` lists the
    output names (typed by ONNX shape inference)."""
    in_infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                for n, a in inputs.items()]
    out_infos = [helper.make_empty_tensor_value_info(n) for n in outputs]
    init_protos = [numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()]
    graph = helper.make_graph(nodes, "test", in_infos, out_infos, initializer=init_protos)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 9)
    inferred = onnx.shape_inference.infer_shapes(model)
    by_name = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    del model.graph.output[:]
    for n in outputs:
        model.graph.output.append(by_name[n])
    return model


def ort_outputs(model, inputs):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(inputs))


def check(nodes, inputs, outputs, inits=None, opset=13, **kwargs):
    """Build and run the model with tecc and onnxruntime; compare every output."""
    model = make_model(nodes, inputs, outputs, inits, opset)
    want = ort_outputs(model, inputs)
    got = tecc_outputs(model, inputs, **kwargs)
    assert len(got) == len(want)
    for name, w, g in zip(outputs, want, got):
        assert g.shape == w.shape, f"{name}: shape {g.shape} != onnxruntime's {w.shape}"
        assert g.dtype == w.dtype, f"{name}: dtype {g.dtype} != onnxruntime's {w.dtype}"
        if w.dtype == bool or w.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=name)
    return model


def rand(*shape, low=-1.0, high=1.0, seed=0):
    return np.random.default_rng(seed + sum(shape)).uniform(low, high, shape).astype("float32")


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs if isinstance(outs, list) else [outs], name=f"{op}_{outs}", **attrs)


# ---------------------------------------------------------------------------------------
# element-wise
# ---------------------------------------------------------------------------------------
def test_unary_elementwise():
    ops = ["Neg", "Abs", "Exp", "Floor", "Ceil", "Sign", "Sin", "Cos", "Erf", "Sigmoid", "Tanh", "Relu",
           "Softsign", "Softplus"]
    nodes = [node(op, ["x"], f"y_{op}") for op in ops]
    nodes += [node("Log", ["p"], "y_Log"), node("Sqrt", ["p"], "y_Sqrt"), node("Reciprocal", ["p"], "y_Rec")]
    outs = [f"y_{op}" for op in ops] + ["y_Log", "y_Sqrt", "y_Rec"]
    check(nodes, {"x": rand(2, 3, 4, low=-3, high=3), "p": rand(2, 3, 4, low=0.1, high=4)}, outs)


def test_binary_broadcasting_and_variadic():
    nodes = [node("Add", ["a", "b"], "add"), node("Sub", ["a", "b"], "sub"), node("Mul", ["a", "c"], "mul"),
             node("Div", ["a", "p"], "div"), node("Pow", ["p", "b"], "pow"), node("Pow", ["a", "two"], "pow_int"),
             node("Mod", ["i", "j"], "mod_int"), node("Mod", ["a", "p"], "fmod", fmod=1),
             node("Div", ["i", "j"], "div_int"),
             node("Sum", ["a", "b", "c"], "sum"), node("Mean", ["a", "b"], "mean"), node("Max", ["a", "b", "c"], "max"),
             node("Min", ["a", "c"], "min")]
    inputs = {"a": rand(2, 3, 4, low=-2, high=2), "b": rand(4, low=-2, high=2), "c": rand(3, 1),
              "p": rand(2, 3, 4, low=0.5, high=2),
              "i": np.array([[7, -7, 5], [-9, 8, 1]], "int64"), "j": np.array([3, 2, -4], "int64")}
    check(nodes, inputs, [n.output[0] for n in nodes], inits={"two": np.array(2, "int64")})



@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_mod_with_fmod_0_is_numpys_mod_signed_zeros_and_infinities_included(target, dtype):
    # Mod-28 defines fmod=0 on floats (numpy's mod; before, tecc refused it as undefined)
    x = np.array([0.0, -0.0, 0.0, -0.0, -3, 3, -1, 1, np.inf, -np.inf, 1, 1, np.nan, 1, -4.5, 4.5, 7, -7], dtype)
    y = np.array([-2, 2, 2, -2, np.inf, np.inf, -np.inf, -np.inf, 2, 2, 0, -0.0, 2, np.nan, 2, -2, 2.5, 2.5], dtype)
    model = make_model([node("Mod", ["x", "y"], "m")], {"x": x, "y": y}, ["m"])
    (got,) = tecc_outputs(model, {"x": x, "y": y}, target=target)
    with np.errstate(all="ignore"):
        want = np.mod(x, y)
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)  # (a NaN's sign bit is not part of the definition)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))

def test_comparison_logical_and_where():
    nodes = [node("Equal", ["i", "j"], "eq"), node("Less", ["a", "b"], "lt"), node("LessOrEqual", ["i", "j"], "le"),
             node("Greater", ["a", "b"], "gt"), node("GreaterOrEqual", ["a", "b"], "ge"),
             node("And", ["p", "q"], "and"), node("Or", ["p", "q"], "or"), node("Xor", ["p", "q"], "xor"),
             node("Not", ["p"], "not"), node("Where", ["p", "a", "b"], "where")]
    inputs = {"a": rand(2, 4), "b": rand(4, seed=3), "i": np.array([[1, 2, 3, 4], [4, 3, 2, 1]], "int64"),
              "j": np.array([1, 3, 2, 4], "int64"), "p": np.array([[True, False, True, False]] * 2),
              "q": np.array([True, True, False, False])}
    check(nodes, inputs, [n.output[0] for n in nodes])


def test_activations():
    nodes = [node("LeakyRelu", ["x"], "leaky", alpha=0.2), node("PRelu", ["x4", "slope_c"], "prelu_c"),
             node("PRelu", ["x4", "slope_s"], "prelu_s"), node("HardSigmoid", ["x"], "hsig", alpha=0.3, beta=0.4),
             node("HardSwish", ["x"], "hswish"), node("Elu", ["x"], "elu", alpha=0.7), node("Selu", ["x"], "selu"),
             node("Gelu", ["x"], "gelu"), node("Gelu", ["x"], "gelu_tanh", approximate="tanh")]
    inputs = {"x": rand(3, 5, low=-4, high=4), "x4": rand(1, 3, 2, 2, low=-2, high=2)}
    inits = {"slope_c": rand(3, 1, 1, low=0.1, high=0.5), "slope_s": np.array([0.25], "float32")}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits, opset=20)


@pytest.mark.parametrize("opset", [6 + 3, 11])
def test_clip_opset_variants(opset):
    """Clip's bounds are attributes before opset 11, optional inputs from 11 on."""
    x = {"x": rand(2, 6, low=-3, high=3)}
    if opset < 11:
        nodes = [node("Clip", ["x"], "both", min=-1.0, max=2.0), node("Clip", ["x"], "low", min=0.0),
                 node("Clip", ["x"], "none")]
        check(nodes, x, ["both", "low", "none"], opset=opset)
    else:
        nodes = [node("Clip", ["x", "lo", "hi"], "both"), node("Clip", ["x", "", "hi"], "high"),
                 node("Clip", ["x", "lo"], "low")]
        inits = {"lo": np.array(-1.0, "float32"), "hi": np.array(0.5, "float32")}
        check(nodes, x, ["both", "high", "low"], inits=inits, opset=opset)


# ---------------------------------------------------------------------------------------
# convolutions, normalizations, pools
# ---------------------------------------------------------------------------------------
def test_conv_family():
    nodes = [node("Conv", ["x", "w", "b"], "plain", pads=[1, 1, 1, 1]),
             node("Conv", ["x", "w"], "strided", strides=[2, 2], pads=[0, 1, 1, 0], dilations=[1, 1]),
             node("Conv", ["x", "w"], "same", auto_pad="SAME_UPPER", strides=[2, 2]),
             node("Conv", ["x", "wd"], "dilated", dilations=[2, 2]),
             node("Conv", ["x4", "wg"], "grouped", group=2, pads=[1, 1, 1, 1]),
             node("Conv", ["x4", "wdw", "bdw"], "depthwise", group=4, pads=[1, 1, 1, 1]),
             node("Conv", ["x1d", "w1d", "b1d"], "conv1d", pads=[1, 1], strides=[2]),
             node("ConvTranspose", ["x", "wt", "bt"], "deconv", strides=[2, 2], pads=[1, 1, 1, 1],
                  output_padding=[1, 1]),
             node("ConvTranspose", ["x", "wt"], "deconv_shape", strides=[2, 2], output_shape=[10, 10]),
             # a row and a column more than it gives (less than the strides: zeros at the end, as onnxruntime)
             node("ConvTranspose", ["x", "wt"], "deconv_larger", strides=[3, 2], output_shape=[22, 16])]
    inputs = {"x": rand(1, 3, 7, 7), "x4": rand(1, 4, 6, 6), "x1d": rand(2, 3, 9)}
    inits = {"w": rand(5, 3, 3, 3, seed=1), "b": rand(5, seed=2), "wd": rand(2, 3, 3, 3, seed=3),
             "wg": rand(6, 2, 3, 3, seed=4), "wdw": rand(4, 1, 3, 3, seed=5), "bdw": rand(4, seed=6),
             "w1d": rand(4, 3, 3, seed=7), "b1d": rand(4, seed=8), "wt": rand(3, 2, 3, 3, seed=9),
             "bt": rand(2, seed=10)}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits)


def test_normalizations():
    nodes = [node("BatchNormalization", ["x", "s", "b", "m", "v"], "bn", epsilon=1e-3),
             node("InstanceNormalization", ["x", "s", "b"], "inorm"),
             node("LRN", ["x"], "lrn", size=3, alpha=1e-3, beta=0.75, bias=1.5),
             node("LayerNormalization", ["t", "g", "beta"], "ln", axis=-1, epsilon=1e-5),
             node("LayerNormalization", ["t", "g2"], "ln2", axis=1)]
    inputs = {"x": rand(2, 3, 4, 4, low=-2, high=2), "t": rand(2, 3, 8)}
    inits = {"s": rand(3, low=0.5, high=1.5), "b": rand(3, seed=1), "m": rand(3, seed=2),
             "v": rand(3, low=0.5, high=2, seed=3), "g": rand(8, seed=4), "beta": rand(8, seed=5),
             "g2": rand(3, 8, seed=6)}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits, opset=17)


def test_pools():
    nodes = [node("MaxPool", ["x"], "max", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             node("MaxPool", ["x"], "max_ceil", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
             node("MaxPool", ["x"], "max_same", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
             node("AveragePool", ["x"], "avg", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
             node("AveragePool", ["x"], "avg_incl", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                  count_include_pad=1),
             node("GlobalAveragePool", ["x"], "gap"), node("GlobalMaxPool", ["x"], "gmp"),
             node("MaxPool", ["x1d"], "max1d", kernel_shape=[2], strides=[2]),
             node("GlobalAveragePool", ["x1d"], "gap1d")]
    inputs = {"x": rand(1, 2, 7, 7), "x1d": rand(2, 3, 8)}
    check(nodes, inputs, [n.output[0] for n in nodes])


# ---------------------------------------------------------------------------------------
# matrix products
# ---------------------------------------------------------------------------------------
def test_matmul_gemm_einsum():
    nodes = [node("MatMul", ["a2", "w"], "mm2d"), node("MatMul", ["a3", "w"], "mm3d"),
             node("MatMul", ["q", "k"], "batched"), node("MatMul", ["q", "k1"], "broadcast_batch"),
             node("MatMul", ["v", "w"], "vec"),
             node("Gemm", ["a2", "w", "c"], "gemm"), node("Gemm", ["wt", "g", "cfull"], "gemm_t", transA=1, transB=1,
                                                          alpha=0.5, beta=2.0),
             node("Einsum", ["q", "k"], "einsum", equation="bhij,bhjk->bhik")]
    inputs = {"a2": rand(3, 4), "a3": rand(2, 3, 4), "q": rand(2, 2, 3, 4), "k": rand(2, 2, 4, 5, seed=1),
              "k1": rand(1, 2, 4, 5, seed=2), "v": rand(4, seed=3)}
    inits = {"w": rand(4, 5, seed=4), "c": rand(5, seed=5), "wt": rand(4, 3, seed=6), "g": rand(6, 4, seed=7),
             "cfull": rand(3, 6, seed=8)}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits)


# ---------------------------------------------------------------------------------------
# shapes and layout
# ---------------------------------------------------------------------------------------
def test_shape_and_layout_ops():
    nodes = [node("Flatten", ["x"], "flat", axis=2), node("Reshape", ["x", "shape"], "reshaped"),
             node("Transpose", ["x"], "tr", perm=[0, 2, 3, 1]), node("Concat", ["x", "x2"], "cat", axis=-1),
             node("Slice", ["x", "st", "en", "ax", "sp"], "sliced"),
             node("Gather", ["x", "gi"], "gather_const", axis=1), node("Gather", ["e", "ids"], "gather_rt"),
             node("GatherElements", ["x", "ge"], "gather_el", axis=3),
             node("Unsqueeze", ["m", "uax"], "unsq"), node("Squeeze", ["y1", "sax"], "sq"),
             node("Expand", ["m", "eshape"], "expanded"), node("Tile", ["m", "reps"], "tiled"),
             node("Pad", ["m", "pads", "pv"], "padc"), node("Pad", ["m", "pads"], "padr", mode="reflect"),
             node("Pad", ["m", "pads"], "pade", mode="edge"), node("Cast", ["m"], "cast", to=TensorProto.INT32),
             node("Identity", ["m"], "ident"), node("Dropout", ["m"], "drop"),
             node("CastLike", ["ids", "m"], "castlike")]
    inputs = {"x": rand(2, 3, 4, 5), "x2": rand(2, 3, 4, 2), "e": rand(6, 4, seed=1),
              "ids": np.array([[0, 5, -1], [2, 2, 3]], "int64"), "m": rand(3, 4, low=-5, high=5, seed=2),
              "y1": rand(3, 1, 4, 1, seed=3)}
    inits = {"shape": np.array([0, -1, 5], "int64"), "st": np.array([0, 3, 1], "int64"),
             "en": np.array([2, -100, 4], "int64"), "ax": np.array([1, 2, 3], "int64"),
             "sp": np.array([2, -2, 2], "int64"), "gi": np.array([[2, -1]], "int64"),
             "ge": np.random.default_rng(0).integers(-5, 5, (2, 3, 4, 2)).astype("int64"),
             "uax": np.array([0, -1], "int64"), "sax": np.array([1, 3], "int64"),
             "eshape": np.array([2, 1, 4], "int64"), "reps": np.array([2, 3], "int64"),
             "pads": np.array([1, 2, 0, 1], "int64"), "pv": np.array(1.5, "float32")}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits, opset=15)


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split_opset_variants(opset):
    """Split's sizes: an attribute before opset 13, an input from 13; opset 18's
    num_outputs splits unevenly."""
    x = {"x": rand(2, 7)}
    if opset == 11:
        nodes = [node("Split", ["x"], ["a", "b"], axis=1, split=[3, 4])]
    elif opset == 13:
        nodes = [node("Split", ["x", "sizes"], ["a", "b"], axis=-1)]
    else:
        nodes = [node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)]
    nodes.append(node("Split", ["x"], ["c", "d"], axis=0, **({"num_outputs": 2} if opset >= 18 else {})))
    inits = {"sizes": np.array([3, 4], "int64")} if opset == 13 else None
    check(nodes, x, ["a", "b", "c", "d"], inits=inits, opset=opset)


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_opset_variants(opset):
    """Before opset 13 Softmax flattens the input to 2-D at ``axis``; from 13 it
    normalizes along ``axis`` alone.  The same nodes differ between the two."""
    nodes = [node("Softmax", ["x"], "sm", axis=1), node("LogSoftmax", ["x"], "lsm", axis=1),
             node("Softmax", ["x"], "sm_last", axis=-1)]
    model = check(nodes, {"x": rand(2, 3, 4, low=-3, high=3)}, ["sm", "lsm", "sm_last"], opset=opset)
    out = ort_outputs(model, {"x": rand(2, 3, 4, low=-3, high=3)})[0]
    sums = out.sum(axis=1) if opset >= 13 else out.reshape(2, -1).sum(axis=1)
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)


@pytest.mark.parametrize("opset", [13, 18])
def test_reductions(opset):
    """Reduce*'s axes: an attribute (ReduceSum: until opset 13, the others: until
    18), then an input."""
    inits = {}

    def reduce(op, out, axes=None, **attrs):
        as_input = opset >= (13 if op == "ReduceSum" else 18)
        if axes is None:
            return node(op, ["x"], out, **attrs)
        if not as_input:
            return node(op, ["x"], out, axes=axes, **attrs)
        inits[f"axes_{out}"] = np.array(axes, "int64")
        return node(op, ["x", f"axes_{out}"], out, **attrs)

    nodes = [reduce("ReduceMean", "mean", [1, 2]), reduce("ReduceSum", "sum", [1], keepdims=0),
             reduce("ReduceSum", "sum_all", keepdims=0), reduce("ReduceMax", "max", [-1]),
             reduce("ReduceMin", "min", [0, 2], keepdims=0), reduce("ReduceProd", "prod", [1]),
             reduce("ReduceL2", "l2", [2]), reduce("ReduceSumSquare", "ssq", [2]),
             reduce("ReduceL1", "l1", [0]),
             node("ArgMax", ["x"], "argmax", axis=1), node("ArgMin", ["x"], "argmin", axis=-1, keepdims=0),
             node("ArgMax", ["t"], "argmax_last", axis=0, select_last_index=1)]
    inputs = {"x": rand(2, 3, 4), "t": np.array([[1, 3], [2, 3], [2, 0]], "float32")}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits, opset=opset)


def test_shape_subgraphs_fold_at_import():
    """torch's dynamic reshapes: Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
    ConstantOfShape, Range and Size are evaluated while importing; the model computes
    only the data path."""
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "zero"], "n", axis=0),
             node("Unsqueeze", ["n", "ax0"], "n1"), node("Concat", ["n1", "minus1"], "target", axis=0),
             node("Reshape", ["x", "target"], "flat"),
             node("Shape", ["x"], "s_tail", start=-2), node("ConstantOfShape", ["s_tail"], "ones",
                                                             value=numpy_helper.from_array(
                                                                 np.array([1.0], "float32"))),
             node("Add", ["x", "ones"], "plus_ones"),
             node("Size", ["x"], "size"), node("Cast", ["size"], "size_f", to=TensorProto.FLOAT),
             node("Div", ["x", "size_f"], "scaled"),
             node("Range", ["r0", "n", "r1"], "rng"), node("Cast", ["rng"], "rng_f", to=TensorProto.FLOAT),
             node("Reshape", ["rng_f", "col"], "rng_col"), node("Mul", ["flat", "rng_col"], "weighted")]
    inputs = {"x": rand(2, 3, 4)}
    inits = {"zero": np.array(0, "int64"), "ax0": np.array([0], "int64"), "minus1": np.array([-1], "int64"),
             "r0": np.array(0, "int64"), "r1": np.array(1, "int64"), "col": np.array([2, 1], "int64")}
    model = check(nodes, inputs, ["plus_ones", "scaled", "weighted"], inits=inits, opset=15)
    mod, _ = from_onnx(model)
    text = str(mod["main"])
    assert "shape_of" not in text and "arange" not in text and "take" not in text
    assert "reshape(%x, newshape=[2, 12]" in text


# ---------------------------------------------------------------------------------------
# small models of the kinds the issue names
# ---------------------------------------------------------------------------------------
def test_resnet_block_and_mlp_head():
    """conv-bn-relu twice with a residual add, global pool, flatten, gemm, softmax."""
    nodes = [node("Conv", ["x", "w1"], "c1", pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c1", "s1", "b1", "m1", "v1"], "n1"), node("Relu", ["n1"], "r1"),
             node("Conv", ["r1", "w2"], "c2", pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c2", "s2", "b2", "m2", "v2"], "n2"), node("Add", ["n2", "x"], "res"),
             node("Relu", ["res"], "r2"), node("GlobalAveragePool", ["r2"], "gap"), node("Flatten", ["gap"], "f"),
             node("Gemm", ["f", "fc", "fb"], "logits", transB=1), node("Softmax", ["logits"], "prob", axis=1)]
    inits = {"fc": rand(5, 4, seed=20), "fb": rand(5, seed=21)}
    for i in (1, 2):
        inits.update({f"w{i}": rand(4, 4, 3, 3, seed=i), f"s{i}": rand(4, low=0.5, high=1.5, seed=3 + i),
                      f"b{i}": rand(4, seed=5 + i), f"m{i}": rand(4, seed=7 + i),
                      f"v{i}": rand(4, low=0.5, high=1.5, seed=9 + i)})
    check(nodes, {"x": rand(1, 4, 6, 6)}, ["prob"], inits=inits, opset=11, freeze_params=False)


def test_transformer_encoder_layer_as_torch_exports_it():
    """Self-attention (MatMul, Reshape, Transpose, Softmax with a scale), the
    residual adds, torch's decomposed LayerNorm (ReduceMean, Sub, Pow, Sqrt, Div)
    and an erf-GELU feed-forward, at opset 13 as torch.onnx exports them."""
    s, d, h = 4, 8, 2
    hd = d // h
    nodes = [node("MatMul", ["x", "wq"], "q0"), node("Add", ["q0", "bq"], "q1"),
             node("MatMul", ["x", "wk"], "k0"), node("MatMul", ["x", "wv"], "v0"),
             node("Reshape", ["q1", "heads"], "q2"), node("Transpose", ["q2"], "q", perm=[0, 2, 1, 3]),
             node("Reshape", ["k0", "heads"], "k2"), node("Transpose", ["k2"], "kt", perm=[0, 2, 3, 1]),
             node("Reshape", ["v0", "heads"], "v2"), node("Transpose", ["v2"], "v", perm=[0, 2, 1, 3]),
             node("MatMul", ["q", "kt"], "sc0"), node("Div", ["sc0", "scale"], "sc"),
             node("Softmax", ["sc"], "att", axis=-1), node("MatMul", ["att", "v"], "ctx0"),
             node("Transpose", ["ctx0"], "ctx1", perm=[0, 2, 1, 3]), node("Reshape", ["ctx1", "merge"], "ctx"),
             node("MatMul", ["ctx", "wo"], "o"), node("Add", ["o", "x"], "r1"),
             # LayerNorm, decomposed
             node("ReduceMean", ["r1"], "mu", axes=[-1]), node("Sub", ["r1", "mu"], "dev"),
             node("Pow", ["dev", "two"], "sq"), node("ReduceMean", ["sq"], "var", axes=[-1]),
             node("Add", ["var", "eps"], "ve"), node("Sqrt", ["ve"], "std"), node("Div", ["dev", "std"], "nrm"),
             node("Mul", ["nrm", "gamma"], "ng"), node("Add", ["ng", "beta"], "ln"),
             # feed-forward with erf-GELU
             node("MatMul", ["ln", "w1"], "f0"), node("Add", ["f0", "b1"], "f1"),
             node("Div", ["f1", "sqrt2"], "g0"), node("Erf", ["g0"], "g1"), node("Add", ["g1", "one"], "g2"),
             node("Mul", ["f1", "g2"], "g3"), node("Mul", ["g3", "half"], "g4"),
             node("MatMul", ["g4", "w2"], "f2"), node("Add", ["f2", "ln"], "y")]
    inits = {"wq": rand(d, d, seed=1), "bq": rand(d, seed=2), "wk": rand(d, d, seed=3), "wv": rand(d, d, seed=4),
             "wo": rand(d, d, seed=5), "w1": rand(d, 2 * d, seed=6), "b1": rand(2 * d, seed=7),
             "w2": rand(2 * d, d, seed=8), "gamma": rand(d, low=0.5, high=1.5, seed=9), "beta": rand(d, seed=10),
             "heads": np.array([0, 0, h, hd], "int64"), "merge": np.array([0, 0, d], "int64"),
             "scale": np.array(np.sqrt(hd), "float32"), "two": np.array(2.0, "float32"),
             "eps": np.array(1e-5, "float32"), "sqrt2": np.array(np.sqrt(2.0), "float32"),
             "one": np.array(1.0, "float32"), "half": np.array(0.5, "float32")}
    check(nodes, {"x": rand(2, s, d)}, ["y"], inits=inits, opset=13)
