"""The ONNX importer's reading of models: inputs and shapes, parameters, the printed
graph, and every error a user can meet (unsupported operators listed together, a
truncated file, a dimension left symbolic, values needed at compile time...)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tecc import graph as g  # noqa: E402
from tecc.graph.frontend import OnnxImportError, from_onnx, supported_ops  # noqa: E402
from tecc.graph.ir import GraphError  # noqa: E402


def model_of(nodes, inputs, outputs, inits=None, opset=13):
    """``inputs``/``outputs``: name -> (elem type, shape); ``inits``: name -> array."""
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in outputs.items()],
        initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 9)
    return model


F = TensorProto.FLOAT


def run_outputs(mod, params, inputs):
    """Every output of the imported module built for the CPU and run on ``inputs``."""
    import tecc  # noqa: PLC0415
    from tecc.contrib.graph_executor import GraphModule  # noqa: PLC0415
    from tecc.graph.build import build  # noqa: PLC0415

    gm = GraphModule(build(mod, "llvm", params)["default"](tecc.cpu(0)))
    for name, value in inputs.items():
        gm.set_input(name, value)
    gm.run()
    return [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]


def run_graph(mod, params, inputs):
    """Output 0 of the imported module built for the CPU and run on ``inputs``."""
    return run_outputs(mod, params, inputs)[0]


def conv_model(batch="batch"):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu1")]
    inits = {"w": np.ones((2, 3, 3, 3), "float32"), "b": np.zeros(2, "float32")}
    return model_of(nodes, {"x": (F, [batch, 3, 5, 5])}, {"y": (F, [batch, 2, 5, 5])}, inits)


# ---------------------------------------------------------------------------------------
# what an imported model looks like
# ---------------------------------------------------------------------------------------
def test_shape_binds_the_symbolic_batch_and_types_are_inferred():
    mod, params = from_onnx(conv_model(), shape={"x": (4, 3, 5, 5)})
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["x"] and params == {}
    assert main.params[0].type_annotation == g.TensorType((4, 3, 5, 5), "float32")
    assert main.checked_type == g.TensorType((4, 2, 5, 5), "float32")
    text = str(main)
    assert "nn.conv2d(%x, meta[Constant]" in text and "nn.bias_add" in text and "nn.relu" in text


def test_freeze_params_false_makes_weights_parameters():
    model = conv_model(batch=1)
    mod, params = from_onnx(model, freeze_params=False)
    names = [p.name_hint for p in mod["main"].params]
    assert names == ["x", "w", "b"]
    assert sorted(params) == ["b", "w"] and params["w"].shape == (2, 3, 3, 3)
    assert isinstance(params["w"], np.ndarray) and params["w"].dtype == np.float32


def test_integer_initializers_stay_constants_and_shape_subgraphs_fold():
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Mul", ["r", "scale"], ["y"])]
    model = model_of(nodes, {"x": (F, [2, 3, 4])}, {"y": (F, [2, 12])},
                     {"i": np.array(0, "int64"), "ax": np.array([0], "int64"), "m1": np.array([-1], "int64"),
                      "scale": np.array([2.0], "float32")})
    mod, params = from_onnx(model, freeze_params=False)
    assert [p.name_hint for p in mod["main"].params] == ["x", "scale"] and list(params) == ["scale"]
    ops = []
    g.post_order_visit(mod["main"], lambda n: ops.append(n.op.name) if isinstance(n, g.Call) else None)
    assert ops == ["reshape", "multiply"]
    assert mod["main"].checked_type.shape == (2, 12)


def test_calls_carry_the_onnx_node_name_and_the_model_text_reads():
    mod, _ = from_onnx(conv_model(batch=1))
    spans = []
    g.post_order_visit(mod["main"], lambda n: spans.append(n.span) if isinstance(n, g.Call) else None)
    assert spans == ["conv1", "conv1", "relu1"]


def test_input_dtype_comes_from_the_model_or_the_dtype_dict():
    nodes = [helper.make_node("Add", ["a", "a"], ["y"])]
    model = model_of(nodes, {"a": (TensorProto.INT32, [3])}, {"y": (TensorProto.INT32, [3])})
    mod, _ = from_onnx(model)
    assert mod["main"].params[0].type_annotation.dtype == "int32"
    mod, _ = from_onnx(model, dtype={"a": "int64"})
    assert mod["main"].params[0].type_annotation.dtype == "int64"


def test_a_path_and_bytes_are_read_too(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(conv_model(batch=1), str(path))
    mod, _ = from_onnx(str(path))
    assert mod["main"].checked_type.shape == (1, 2, 5, 5)
    mod, _ = from_onnx(path.read_bytes())
    assert mod["main"].checked_type.shape == (1, 2, 5, 5)


def test_supported_ops_cover_the_issue_list():
    wanted = ("Conv ConvTranspose BatchNormalization InstanceNormalization LRN Relu LeakyRelu PRelu Sigmoid Tanh "
              "Gelu Erf HardSwish Add Sub Mul Div Pow Sqrt Mod Neg Abs Exp Log Reciprocal Equal Less Greater "
              "LessOrEqual GreaterOrEqual And Or Xor Not MatMul Gemm MaxPool AveragePool GlobalAveragePool Flatten "
              "Reshape Transpose Concat Split Slice Gather GatherElements Softmax LogSoftmax LayerNormalization "
              "ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ArgMax Sum Mean Min Max Constant ConstantOfShape "
              "Shape Size Range Unsqueeze Squeeze Clip Dropout Identity Cast Where Pad Expand Tile Einsum").split()
    assert set(wanted) <= set(supported_ops())


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
def test_all_unsupported_operators_are_listed_in_one_error():
    boxes = (F, [1, 4, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok_relu"),
             helper.make_node("RegexFullMatch", ["words"], ["nms"], name="suppress", pattern="a+"),
             helper.make_node("ImageDecoder", ["t"], ["v"], name="decode", pixel_format="RGB"),
             helper.make_node("Relu", ["a"], ["y"], name="ok_relu2")]
    model = model_of(nodes, {"x": boxes, "words": (TensorProto.STRING, [4]), "t": (TensorProto.UINT8, [64])},
                     {"y": boxes, "nms": (TensorProto.BOOL, None), "v": (TensorProto.UINT8, None)}, opset=20)
    with pytest.raises(OnnxImportError, match=r"2 node\(s\).*\(ImageDecoder, RegexFullMatch\).*"
                                              r"RegexFullMatch in node 'suppress'.*ImageDecoder in node 'decode'"):
        from_onnx(model)
    assert issubclass(OnnxImportError, GraphError)


def test_an_operator_of_another_domain_is_unsupported():
    nodes = [helper.make_node("FusedGemm", ["x", "x"], ["y"], name="ms_gemm", domain="com.microsoft")]
    model = model_of(nodes, {"x": (F, [2, 2])}, {"y": (F, [2, 2])})
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(OnnxImportError, match=r"FusedGemm \(domain 'com.microsoft'\) in node 'ms_gemm'"):
        from_onnx(model)


def test_a_truncated_file_is_a_clear_error(tmp_path):
    data = conv_model(batch=1).SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(OnnxImportError, match=r"cut.onnx.*truncated or corrupt.*export the model again"):
        from_onnx(str(path))
    with pytest.raises(OnnxImportError, match="bytes given are not a readable ONNX model"):
        from_onnx(data[:37])


def test_every_truncation_of_a_model_is_refused_cleanly():
    data = conv_model(batch=1).SerializeToString()
    for n in range(1, len(data), 7):
        with pytest.raises(OnnxImportError):
            from_onnx(data[:n])


def test_a_missing_file_or_a_wrong_object_is_refused(tmp_path):
    with pytest.raises(OnnxImportError, match="there is no file .*nothing.onnx"):
        from_onnx(str(tmp_path / "nothing.onnx"))
    with pytest.raises(OnnxImportError, match="takes an onnx.ModelProto or the path"):
        from_onnx(42)


def test_an_invalid_model_is_refused_by_the_checker():
    nodes = [helper.make_node("Conv", ["x"], ["y"], name="conv_missing_weight")]
    model = model_of(nodes, {"x": (F, [1, 1, 3, 3])}, {"y": (F, [1, 1, 3, 3])})
    with pytest.raises(OnnxImportError, match="is not a valid ONNX model"):
        from_onnx(model)


def test_a_symbolic_dimension_without_shape_is_refused():
    with pytest.raises(OnnxImportError, match=r"input 'x' has the symbolic dimension 'batch' at axis 0.*"
                                              r"shape=\{'x': \(\.\.\.\)\}"):
        from_onnx(conv_model())


def test_bad_shape_dicts_are_refused():
    with pytest.raises(OnnxImportError, match=r"shape names \['y'\], which are not inputs.*inputs are \['x'\]"):
        from_onnx(conv_model(), shape={"y": (1, 3, 5, 5)})
    with pytest.raises(OnnxImportError, match=r"has rank 2 but the model's input 'x' has rank 4"):
        from_onnx(conv_model(), shape={"x": (1, 3)})
    with pytest.raises(OnnxImportError, match=r"dimension 0 must be a non-negative int, got None"):
        from_onnx(conv_model(), shape={"x": (None, 3, 5, 5)})


def test_opsets_outside_9_to_21_read_as_the_nearest_when_every_node_reads_the_same():
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 5)).astype("float32")
    want = run_graph(*from_onnx(conv_model(batch=1)), {"x": x})
    for opset in (8, 22, 28):  # Conv-1 and Conv-22 read as Conv-11: the later version adds element types
        np.testing.assert_allclose(run_graph(*from_onnx(conv_model(batch=1), opset=opset), {"x": x}), want,
                                   rtol=1e-6)


def test_a_node_that_reads_differently_at_the_nearest_opset_is_refused():
    nodes = [helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq", output_dtype=TensorProto.FLOAT16)]
    dq = model_of(nodes, {"q": (TensorProto.INT8, [2])}, {"y": (TensorProto.FLOAT16, [2])},
                  {"s": np.array(0.5, "float32")}, opset=25)
    with pytest.raises(OnnxImportError, match=r"opset 25; tecc implements opsets 9 to 21 \(and BitCast-26, Cast-28, "
                                              r"CastLike-25, CumProd-26, RMSNormalization-23, RotaryEmbedding-23, "
                                              r"SpaceToDepth-28, Swish-24, TensorScatter-24\).*DequantizeLinear node "
                                              r"'dq' \(DequantizeLinear-25 read as DequantizeLinear-21: attribute "
                                              r"'output_dtype' does not exist in version 21\).*convert_version\(model, "
                                              r"21\)"):
        from_onnx(dq)
    # spatial=0 (statistics per element) has no later version: onnx's converter refuses it too
    bn = model_of([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=0)],
                  {"x": (F, [2, 3, 4, 4]), "s": (F, [3]), "b": (F, [3]), "m": (F, [3]), "v": (F, [3])},
                  {"y": (F, [2, 3, 4, 4])}, opset=7)
    with pytest.raises(OnnxImportError, match=r"opset 7.*reading it as opset 9.*attribute 'spatial' does not exist"):
        from_onnx(bn)


def test_a_model_before_opset_9_is_converted_up_where_a_node_reads_differently():
    # Upsample-7 takes its scales as an attribute, an input from Upsample-9 on; BatchNormalization-7's
    # spatial=1 is what BatchNormalization-9 always does.  onnx's version converter rewrites both.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 2, 3)).astype("float32")
    s, b, m = (rng.standard_normal(3).astype("float32") for _ in range(3))
    v = rng.uniform(0.5, 2, 3).astype("float32")
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"], spatial=1, epsilon=1e-3),
             helper.make_node("Upsample", ["n"], ["y"], scales=[1.0, 1.0, 2.0, 3.0], mode="nearest")]
    model = model_of(nodes, {"x": (F, [2, 3, 2, 3]), "s": (F, [3]), "b": (F, [3]), "m": (F, [3]), "v": (F, [3])},
                     {"y": (F, [2, 3, 4, 9])}, opset=7)
    got = run_graph(*from_onnx(model), {"x": x, "s": s, "b": b, "m": m, "v": v})
    c = (slice(None), None, None)
    n = (x - m[c]) / np.sqrt(v[c] + 1e-3) * s[c] + b[c]
    np.testing.assert_allclose(got, n.repeat(2, axis=2).repeat(3, axis=3), rtol=1e-5, atol=1e-6)


def test_rms_normalization_and_swish_against_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 8)).astype("float32")
    scale = rng.standard_normal((3, 8)).astype("float32")
    nodes = [helper.make_node("RMSNormalization", ["x", "scale"], ["r"], axis=1, epsilon=1e-3),
             helper.make_node("Swish", ["r"], ["y"], alpha=0.5)]
    model = model_of(nodes, {"x": (F, [2, 3, 8]), "scale": (F, [3, 8])}, {"y": (F, [2, 3, 8])}, opset=24)
    got = run_graph(*from_onnx(model), {"x": x, "scale": scale})
    r = x / np.sqrt(np.mean(x * x, axis=(1, 2), keepdims=True) + 1e-3) * scale
    np.testing.assert_allclose(got, r / (1 + np.exp(-0.5 * r)), rtol=1e-5, atol=1e-6)


def test_an_operator_newer_than_the_models_opset_is_refused():
    model = model_of([helper.make_node("RMSNormalization", ["x", "s"], ["y"], name="rms")],
                     {"x": (F, [2, 4]), "s": (F, [4])}, {"y": (F, [2, 4])}, opset=23)
    with pytest.raises(OnnxImportError, match=r"RMSNormalization node 'rms' \(the operator exists from opset 23 on; "
                                              r"the model imports opset 21\)"):
        from_onnx(model, opset=21)  # read as an opset that has no RMSNormalization


def test_a_shape_computed_at_run_time_is_refused():
    nodes = [helper.make_node("Cast", ["s"], ["si"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "si"], ["y"], name="dyn_reshape")]
    model = model_of(nodes, {"x": (F, [6]), "s": (F, [2])}, {"y": (F, [2, 3])})
    with pytest.raises(OnnxImportError, match=r"Reshape node 'dyn_reshape': the shape \(input 1\) is computed by "
                                              r"the model at run time"):
        from_onnx(model)


def test_training_dropout_with_a_ratio_of_zero_passes_through():
    # (a ratio above 0 draws random numbers: tests/graph/test_onnx_random.py)
    nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], name="drop_train")]
    outputs = {"y": (F, [4]), "mask": (TensorProto.BOOL, [4])}
    model = model_of(nodes, {"x": (F, [4])}, outputs, {"r": np.array(0.0, "float32"), "t": np.array(True)})
    x = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(run_graph(*from_onnx(model), {"x": x}), x)


def test_training_batch_norm_normalizes_by_the_batch_and_moves_the_running_statistics():
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 5, 2)).astype("float32") * 2.0 + 1.0
    scale, bias, mean, var = (rng.uniform(0.5, 1.5, 3).astype("float32") for _ in range(4))
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "running_mean", "running_var"],
                            name="bn", training_mode=1, momentum=0.8)
    shape3 = (F, [3])
    model = model_of([node], {"x": (F, [4, 3, 5, 2])}, {"y": (F, [4, 3, 5, 2]), "running_mean": shape3,
                                                        "running_var": shape3},
                     {"s": scale, "b": bias, "m": mean, "v": var}, opset=15)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = run_outputs(*from_onnx(model), {"x": x})
    assert len(got) == 3
    for g_, expected in zip(got, want):
        np.testing.assert_allclose(g_, expected, rtol=1e-5, atol=1e-6)


def test_an_unused_training_output_cannot_feed_a_node():
    # BatchNormalization-9's running mean, an output of training
    c = np.ones(2, "float32")
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "running_mean", "running_var", "saved_mean", "saved_var"], name="bn"),
             helper.make_node("Relu", ["running_mean"], ["z"], name="uses_mean")]
    model = model_of(nodes, {"x": (F, [1, 2, 3])}, {"y": (F, [1, 2, 3]), "z": (F, [2])},
                     {"s": c, "b": c, "m": c, "v": c}, opset=9)
    with pytest.raises(OnnxImportError, match=r"Relu node 'uses_mean': input 'running_mean' is output 1 of "
                                              r"BatchNormalization node 'bn', which tecc does not compute"):
        from_onnx(model)


@pytest.mark.parametrize("node, inits, match", [
    (helper.make_node("Reshape", ["x", "s"], ["y"], name="bad_reshape"), {"s": np.array([4, 4], "int64")},
     r"Reshape node 'bad_reshape': cannot reshape \(2, 3, 4\) \(24 elements\) into \(4, 4\)"),
    (helper.make_node("Transpose", ["x"], ["y"], name="bad_perm", perm=[0, 0, 1]), {},
     r"Transpose node 'bad_perm': perm \(0, 0, 1\) is not a permutation"),
    (helper.make_node("Split", ["x", "s"], ["y", "z"], name="bad_split", axis=1), {"s": np.array([1, 1], "int64")},
     r"Split node 'bad_split': split sizes \[1, 1\] do not divide axis 1 of size 3"),
    (helper.make_node("Gather", ["x", "i"], ["y"], name="bad_gather", axis=2), {"i": np.array([7], "int64")},
     r"Gather node 'bad_gather': indices \[7\] are out of range for axis 2 of size 4"),
    (helper.make_node("Softmax", ["x"], ["y"], name="bad_axis", axis=3), {},
     r"Softmax node 'bad_axis': axis 3 is out of range for a tensor of rank 3"),
    (helper.make_node("Pad", ["x", "p"], ["y"], name="crop_pad"), {"p": np.array([0, -3, 0, 0, 0, 0], "int64")},
     r"Pad node 'crop_pad': pads \[0, -3, 0, 0, 0, 0\] crop axis 1 of \(2, 3, 4\) to nothing; tecc crops to one "
     r"element at least: give pads that keep one"),
    (helper.make_node("Add", ["x", "v"], ["y"], name="bad_add"), {"v": np.ones(5, "float32")},
     r"Add node 'bad_add': add: shapes \(2, 3, 4\), \(5,\) do not broadcast"),
    (helper.make_node("Expand", ["x", "s"], ["y"], name="bad_expand"), {"s": np.array([3, 3, 4], "int64")},
     r"Expand node 'bad_expand': the input's shape \(2, 3, 4\) does not broadcast to \(3, 3, 4\)"),
])
def test_converter_errors_name_the_node(node, inits, match):
    # the declared output type is not checked by the importer: a placeholder rank-0 type
    model = model_of([node], {"x": (F, [2, 3, 4])}, {"y": (F, [])}, inits)
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


def test_a_convolution_over_four_spatial_axes_is_refused():
    model = model_of([helper.make_node("Conv", ["x", "w"], ["y"], name="conv4d")], {"x": (F, [1, 1, 2, 2, 2, 2])},
                     {"y": (F, [1, 1, 2, 2, 2, 2])}, {"w": np.ones((1, 1, 1, 1, 1, 1), "float32")})
    with pytest.raises(OnnxImportError, match=r"Conv node 'conv4d': Conv over 4 spatial dimension\(s\) is not "
                                              r"supported; tecc converts the 1-D, 2-D and 3-D \(NCW, NCHW, NCDHW\)"):
        from_onnx(model)


def test_outputs_declared_without_a_shape_are_accepted():
    # make_tensor_value_info(name, type, None): the checker wants a shape, onnxruntime
    # runs the model, and the importer infers every shape itself
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("y", F, None)])
    mod, _ = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert mod["main"].body.checked_type == g.TensorType((2, 3), "float32")
    # an input without a shape is still the checker's refusal
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, None)],
                              [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(OnnxImportError, match=r"not a valid ONNX model \(Field 'shape' of 'type' is required"):
        from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    # and so is a model invalid for another reason too
    bad = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])]
    graph = helper.make_graph(bad, "g", [helper.make_tensor_value_info("x", F, [2])],
                              [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(OnnxImportError, match="not a valid ONNX model"):
        from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def test_rotary_embedding_bad_input_names_the_node():
    def rotary(x_shape, **attrs):
        node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], name="rope", **attrs)
        return model_of([node], {"x": (F, x_shape), "cos": (F, [1, 4, 4]), "sin": (F, [1, 4, 4])},
                        {"y": (F, x_shape)}, opset=23)

    with pytest.raises(OnnxImportError, match=r"RotaryEmbedding node 'rope'.*3-D input \[1, 4, 16\] needs num_heads "
                                              r"dividing its last dimension \(got 0\)"):
        from_onnx(rotary([1, 4, 16]))
    with pytest.raises(OnnxImportError, match=r"RotaryEmbedding node 'rope'.*rotary_embedding_dim 6 must be even and "
                                              r"at most the head size 4"):
        from_onnx(rotary([1, 2, 4, 4], rotary_embedding_dim=6))
    with pytest.raises(OnnxImportError, match=r"cos_cache gives shape \[1, 4, 4\] per position; \[batch, seq, "
                                              r"rotary_embedding_dim / 2\] = \[1, 4, 2\] is needed"):
        from_onnx(rotary([1, 2, 4, 4]))


def test_attention_imports_through_its_onnx_function_body():
    from tecc.graph.frontend import function_ops  # noqa: PLC0415

    assert "Attention" in function_ops() and "Attention" not in supported_ops()
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 3, 4, 8)).astype("float32") for _ in range(3))
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", is_causal=1)
    shape = (F, [2, 3, 4, 8])
    model = model_of([node], {"q": shape, "k": shape, "v": shape}, {"y": shape}, opset=23)
    got = run_graph(*from_onnx(model), {"q": q, "k": k, "v": v})
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(8.0)
    scores = np.where(np.tril(np.ones((4, 4), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(got, weights / weights.sum(-1, keepdims=True) @ v, rtol=1e-5, atol=1e-6)


def _flex_attention_model(score_mod_nodes, q_heads=4, kv_heads=2, scale=0.5):
    """A FlexAttention (ONNX's preview domain) model over Q [1, q_heads, 5, 8] and
    K, V [1, kv_heads, 6, 8], its score_mod subgraph made of ``score_mod_nodes``
    (scores -> scores_out)."""
    try:
        onnx.defs.get_schema("FlexAttention", 1, "ai.onnx.preview")
    except onnx.defs.SchemaError:
        pytest.skip(f"onnx {onnx.__version__} has no FlexAttention")
    scores = helper.make_tensor_value_info("scores", F, None)
    scores_out = helper.make_tensor_value_info("scores_out", F, None)
    score_mod = helper.make_graph(score_mod_nodes, "soft_cap", [scores], [scores_out])
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name="flex", domain="ai.onnx.preview",
                            scale=scale, score_mod=score_mod)
    graph = helper.make_graph(
        [node], "m", [helper.make_tensor_value_info("q", F, [1, q_heads, 5, 8]),
                      helper.make_tensor_value_info("k", F, [1, kv_heads, 6, 8]),
                      helper.make_tensor_value_info("v", F, [1, kv_heads, 6, 8])],
        [helper.make_tensor_value_info("y", F, [1, q_heads, 5, 8])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26),
                                                   helper.make_opsetid("ai.onnx.preview", 1)])


def test_flex_attention_imports_through_its_onnx_function_body_with_its_score_mod():
    # grouped-query attention (4 query heads over 2 K/V heads) with a tanh soft cap as its score_mod
    from tecc.graph.frontend import function_ops  # noqa: PLC0415

    cap = numpy_helper.from_array(np.array(2.0, "float32"), "cap_value")
    soft_cap = [helper.make_node("Constant", [], ["cap"], value=cap),
                helper.make_node("Div", ["scores", "cap"], ["scaled"]),
                helper.make_node("Tanh", ["scaled"], ["capped"]),
                helper.make_node("Mul", ["capped", "cap"], ["scores_out"])]
    model = _flex_attention_model(soft_cap)
    assert "ai.onnx.preview.FlexAttention" in function_ops()
    rng = np.random.default_rng(6)
    q = rng.standard_normal((1, 4, 5, 8)).astype("float32")
    k, v = (rng.standard_normal((1, 2, 6, 8)).astype("float32") for _ in range(2))
    got = run_graph(*from_onnx(model), {"q": q, "k": k, "v": v})
    kk, vv = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)  # query head h reads K/V head h // 2
    scores = 2.0 * np.tanh(q @ kk.transpose(0, 1, 3, 2) * 0.5 / 2.0)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(got, weights / weights.sum(-1, keepdims=True) @ vv, rtol=1e-5, atol=1e-6)


def test_flex_attention_whose_score_mod_does_not_convert_is_reported_by_its_node():
    # a node whose ONNX function body holds an operator without a converter is named itself, with that operator
    words = [helper.make_node("StringNormalizer", ["scores"], ["counts"]),
             helper.make_node("Add", ["scores", "counts"], ["scores_out"])]
    with pytest.raises(OnnxImportError, match=r"FlexAttention \(domain 'ai.onnx.preview'\) in node 'flex' \(its ONNX "
                                              r"function body uses StringNormalizer, which tecc does not convert\)"):
        from_onnx(_flex_attention_model(words))
