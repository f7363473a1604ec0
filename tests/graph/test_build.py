"""Building a model: passes, fusion, one compiled module, the graph JSON, and the
executor's results against numpy."""
import json

import numpy as np
import pytest

import tecc
from tecc import graph as G
from tecc.contrib.graph_executor import GraphModule
from tecc.graph import GraphError, TensorType, TupleGetItem, Var, call, const
from tecc.graph.build import build, extract_tasks, storage_report
from tecc.topi.testing import conv2d_nchw_python

RNG = np.random.default_rng(3)


def _f32(a):
    return np.asarray(a, dtype="float32")


def _tiny_cnn():
    """conv -> bias -> batch norm -> relu -> conv + residual -> relu -> pool -> dense -> softmax."""
    x = Var("data", TensorType((1, 3, 8, 8)))
    w1, b1 = Var("w1", TensorType((4, 3, 3, 3))), Var("b1", TensorType((4,)))
    stats = [Var(n, TensorType((4,))) for n in ("gamma", "beta", "mean", "var")]
    w2, fw = Var("w2", TensorType((4, 4, 3, 3))), Var("fw", TensorType((10, 64)))
    c1 = call("nn.bias_add", call("nn.conv2d", x, w1, padding=(1, 1, 1, 1), channels=4, kernel_size=(3, 3)), b1)
    r1 = call("nn.relu", TupleGetItem(call("nn.batch_norm", c1, *stats), 0))
    r2 = call("nn.relu", call("add", call("nn.conv2d", r1, w2, padding=(1, 1, 1, 1)), r1))
    pooled = call("nn.max_pool2d", r2, pool_size=(2, 2), strides=(2, 2))
    out = call("nn.softmax", call("nn.dense", call("nn.batch_flatten", pooled), fw, units=10))
    return G.Module.from_expr(G.Function([x, w1, b1, *stats, w2, fw], out))


def _weights():
    return {"w1": _f32(RNG.standard_normal((4, 3, 3, 3))), "b1": _f32(RNG.standard_normal(4)),
            "gamma": _f32(RNG.uniform(0.5, 1.5, 4)), "beta": _f32(RNG.standard_normal(4)),
            "mean": _f32(RNG.standard_normal(4)), "var": _f32(RNG.uniform(0.5, 1.5, 4)),
            "w2": _f32(RNG.standard_normal((4, 4, 3, 3)) * 0.3), "fw": _f32(RNG.standard_normal((10, 64)) * 0.3)}


def _reference(data, p):
    c1 = conv2d_nchw_python(data, p["w1"], 1, 1) + p["b1"][None, :, None, None]
    bn = (c1 - p["mean"][None, :, None, None]) / np.sqrt(p["var"][None, :, None, None] + 1e-5)
    r1 = np.maximum(bn * p["gamma"][None, :, None, None] + p["beta"][None, :, None, None], 0)
    r2 = np.maximum(conv2d_nchw_python(r1, p["w2"], 1, 1) + r1, 0)
    pooled = r2.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    logits = pooled.reshape(1, 64) @ p["fw"].T
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _kernel_nodes(factory):
    return [n for n in json.loads(factory.get_graph_json())["nodes"] if n["op"] == "tvm_op"]


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("target,opt_level", [("llvm", 0), ("llvm", 3), ("cuda", 3)])
def test_tiny_cnn_matches_numpy(target, opt_level):
    weights = _weights()
    data = _f32(RNG.standard_normal((1, 3, 8, 8)))
    with tecc.transform.PassContext(opt_level=opt_level):
        factory = build(_tiny_cnn(), target, params=weights)
    dev = tecc.cuda(0) if target == "cuda" and tecc.runtime.enabled("cuda") else tecc.cpu(0)
    gmod = GraphModule(factory["default"](dev))
    gmod.set_input("data", data)
    gmod.run()
    np.testing.assert_allclose(gmod.get_output(0).numpy(), _reference(data, weights), rtol=1e-4, atol=1e-6)
    names = [n["attrs"]["func_name"] for n in _kernel_nodes(factory)]
    if opt_level == 3 and target == "cuda":
        # the flatten regroups the pooled tensor's bytes: a view, no kernel ("__nop")
        assert names == ["fused_nn_conv2d_nn_bias_add_nn_relu", "fused_nn_conv2d_add_nn_relu",
                         "fused_nn_max_pool2d", "__nop", "fused_nn_dense", "fused_nn_softmax"]
    elif opt_level == 3:
        # batch norm folded into conv1; bias, relu and the residual add fused into the convolutions, which
        # run in channel blocks (AlterOpLayout: the image blocked first, back to NCHW in the flatten's kernel)
        assert names == ["fused_layout_transform", "fused_nn_contrib_conv2d_NCHWc_add_nn_relu",
                         "fused_nn_contrib_conv2d_NCHWc_add_nn_relu_1", "fused_nn_max_pool2d",
                         "fused_layout_transform_nn_batch_flatten", "fused_nn_dense", "fused_nn_softmax"]
        assert sorted(factory.get_params()) == ["p0", "p1", "p2", "p3"]
    else:
        assert len(names) > 10  # no fusion: a kernel per operator
    report = storage_report(factory)
    assert report["peak_bytes"] <= report["total_intermediate_bytes"]


def test_identical_groups_compile_once_and_inputs_come_first():
    x, y = Var("x", TensorType((4, 8))), Var("y", TensorType((4, 8)))
    a = call("nn.relu", call("add", x, const(1.0)))
    b = call("nn.relu", call("add", y, const(1.0)))
    c = call("nn.relu", call("add", x, const(2.0)))
    mod = G.Module.from_expr(G.Function([x, y], G.Tuple([a, b, c])))
    factory = build(mod, "llvm")
    graph = json.loads(factory.get_graph_json())
    assert [n["name"] for n in graph["nodes"] if n["op"] == "null"] == ["x", "y"]
    names = [n["attrs"]["func_name"] for n in _kernel_nodes(factory)]
    assert names == ["fused_add_nn_relu", "fused_add_nn_relu", "fused_add_nn_relu_1"]
    assert len(graph["heads"]) == 3
    gmod = GraphModule(factory["default"](tecc.cpu(0)))
    xv, yv = _f32(RNG.standard_normal((4, 8))), _f32(RNG.standard_normal((4, 8)))
    gmod.run(x=xv, y=yv)
    for k, ref in enumerate((np.maximum(xv + 1, 0), np.maximum(yv + 1, 0), np.maximum(xv + 2, 0))):
        np.testing.assert_allclose(gmod.get_output(k).numpy(), ref, rtol=1e-6)


def test_elementwise_chain_runs_in_place():
    x = Var("x", TensorType((64,)))
    y = call("nn.relu", call("exp", call("nn.relu", x)))
    z = call("concatenate", G.Tuple([y, y]), axis=0)  # keeps the element-wise groups apart
    with tecc.transform.PassContext(opt_level=0):
        factory = build(G.Module.from_expr(G.Function([x], z)), "llvm")
    nodes = _kernel_nodes(factory)
    assert [n["attrs"]["inplace_input"] for n in nodes[:3]] == ["0", "0", "0"]
    assert nodes[3]["attrs"]["inplace_input"] == "-1"
    graph = json.loads(factory.get_graph_json())
    sids = graph["attrs"]["storage_id"][1]
    assert sids[2] == sids[3]  # exp wrote over the first relu's buffer


def test_extract_tasks_counts_workloads():
    x = Var("data", TensorType((1, 4, 8, 8)))
    w = Var("w", TensorType((4, 4, 3, 3)))
    y = x
    for _ in range(3):
        y = call("nn.relu", call("nn.conv2d", y, w, padding=(1, 1, 1, 1)))
    d = call("nn.dense", call("nn.batch_flatten", y), Var("fw", TensorType((5, 256))), units=5)
    mod = G.Module.from_expr(G.Function(G.free_vars(d), d))
    tasks = extract_tasks(mod, target="llvm")
    # the convolution has two implementations, each a task (the build picks the faster tuned one)
    assert [(t.name, t.count) for t in tasks] == [("conv2d_nchw.x86", 3), ("conv2d_nchw_flat.x86", 3),
                                                  ("dense_nopack.x86", 1)]
    assert tasks[0].config_space is not None and tasks[0].flop > 0


def test_autotvm_extract_from_program_filters_by_operator():
    # TVM's tune_relay tutorials: autotvm.task.extract_from_program(mod["main"], ..., ops=(conv2d,))
    from tecc import autotvm, relay

    x = Var("data", TensorType((1, 4, 8, 8)))
    w = Var("w", TensorType((4, 4, 3, 3)))
    y = call("nn.relu", call("nn.conv2d", x, w, padding=(1, 1, 1, 1)))
    d = call("nn.dense", call("nn.batch_flatten", y), Var("fw", TensorType((5, 256))), units=5)
    mod = G.Module.from_expr(G.Function(G.free_vars(d), d))
    params = {"w": np.ones((4, 4, 3, 3), "float32"), "fw": np.ones((5, 256), "float32")}
    # the kernels of an opt_level-3 build, as TVM extracts: the blocked convolution,
    # found by the name of the operator it replaced
    conv = autotvm.task.extract_from_program(mod["main"], target="llvm", params=params,
                                             ops=(relay.op.get("nn.conv2d"),))
    assert [t.name for t in conv] == ["conv2d_NCHWc.x86"]
    assert [t.name for t in autotvm.task.extract_from_program(mod, params, "llvm", ops=["nn.dense"])] == \
        ["dense_nopack.x86"]
    both = autotvm.task.extract_from_multiple_program([mod, mod], [params, params], "llvm")
    assert [(t.name, t.count) for t in both] == [("conv2d_NCHWc.x86", 2), ("dense_nopack.x86", 2)]
    assert [t.name for t in autotvm.task.extract_from_program(mod, params, "cuda")] == \
        ["conv2d_nchw.cuda", "dense_small_batch.cuda"]
    with pytest.raises(G.GraphError, match="target_host='llvm' is not supported"):
        autotvm.task.extract_from_program(mod, params, "llvm", target_host="llvm")
    with pytest.raises(G.GraphError, match="ops= takes operators"):
        autotvm.task.extract_from_program(mod, params, "llvm", ops=[3])
    with pytest.raises(G.GraphError, match="2 models but 1 params"):
        autotvm.task.extract_from_multiple_program([mod, mod], [params], "llvm")


def test_extraction_leaves_the_no_tuned_config_warning_to_the_build(caplog):
    x = Var("data", TensorType((1, 8, 7, 5)))  # a shape no other test builds: the warning comes once a process
    y = call("nn.conv2d", x, const(np.ones((8, 8, 1, 1), "float32")))
    mod = G.Module.from_expr(G.Function([x], y))
    with caplog.at_level("WARNING", logger="tecc.autotvm"):
        tasks = extract_tasks(mod, target="llvm")
    assert tasks and not [r for r in caplog.records if "no tuned config" in r.getMessage()]
    with caplog.at_level("WARNING", logger="tecc.autotvm"):
        build(mod, target="llvm")
    assert [r for r in caplog.records if "no tuned config" in r.getMessage()]


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_a_model_that_computes_nothing_copies_its_outputs(target, tmp_path):
    """Outputs that are an input and a constant once optimized (a dropout, a folded
    expression): each becomes a copy kernel, and the model exports, loads and runs
    as any other."""
    x = Var("x", TensorType((2, 3)))
    folded = call("add", const(_f32([1, 2, 3])), const(_f32([1, 1, 1])))
    mod = G.Module.from_expr(G.Function([x], G.Tuple([TupleGetItem(call("nn.dropout", x), 0), folded])))
    with tecc.transform.PassContext(opt_level=3):
        factory = build(mod, target)
    assert [n["name"] for n in _kernel_nodes(factory)] == ["fused_copy", "fused_copy_1"]
    path = str(tmp_path / "model.tar")
    factory.export_library(path)
    data = _f32(RNG.standard_normal((2, 3)))
    dev = tecc.cuda(0) if target == "cuda" else tecc.cpu(0)
    for built in (factory, tecc.runtime.load_module(path)):
        gmod = GraphModule(built["default"](dev))
        gmod.set_input("x", data)
        gmod.run()
        np.testing.assert_array_equal(gmod.get_output(0).numpy(), data)
        np.testing.assert_array_equal(gmod.get_output(1).numpy(), _f32([2, 3, 4]))


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("opt_level", [0, 3])
def test_operators_of_scalar_constants(opt_level):
    """A 0-d constant is inlined into its kernel as an expression; an operator that
    takes tensors alone (copy, which torch exports for torch.tensor(x.numel())) gets
    it as a 0-d tensor, folded or not (before: "topi.identity: expected a tensor")."""
    x = Var("x", TensorType((3,), "int64"))
    size = call("copy", const(np.array(15, "int64")))
    mod = G.Module.from_expr(G.Function([x], G.Tuple([size, call("add", x, call("negative", size))])))
    with tecc.transform.PassContext(opt_level=opt_level):
        factory = build(mod, "llvm")
    gmod = GraphModule(factory["default"](tecc.cpu(0)))
    gmod.set_input("x", np.arange(3, dtype="int64"))
    gmod.run()
    assert gmod.get_output(0).numpy() == 15 and gmod.get_output(0).shape == ()
    np.testing.assert_array_equal(gmod.get_output(1).numpy(), np.arange(3) - 15)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("target,batch", [("llvm", 1), ("llvm", 2), ("cuda", 1)])
def test_a_concatenation_of_whole_rows_is_written_in_place_and_runs_no_kernel(target, batch, tmp_path):
    """Two dense layers whose outputs a concatenation joins (SqueezeNet's fire module
    in miniature): at batch 1 each writes straight into its half of the result and
    the concatenation is a no-op node; at batch 2 the halves interleave and it stays a
    kernel.  The exported artifact keeps the offsets."""
    x = Var("x", TensorType((batch, 16)))
    w1, w2, w3 = (Var(n, TensorType(s)) for n, s in (("w1", (32, 16)), ("w2", (48, 16)), ("w3", (8, 80))))
    a = call("nn.relu", call("nn.dense", x, w1, units=32))
    b = call("nn.relu", call("nn.dense", x, w2, units=48))
    out = call("nn.dense", call("concatenate", G.Tuple([a, b]), axis=1), w3, units=8)
    params = {n: _f32(RNG.standard_normal(s)) for n, s in (("w1", (32, 16)), ("w2", (48, 16)), ("w3", (8, 80)))}
    # on a GPU target the two dense layers of x would be one (CombineParallelDense), as
    # the fire module's convolutions are not: kept apart here
    with tecc.transform.PassContext(opt_level=3, disabled_pass=["CombineParallelDense"]):
        factory = build(G.Module.from_expr(G.Function([x, w1, w2, w3], out)), target, params)
    graph = json.loads(factory.get_graph_json())
    concat = [n for n in graph["nodes"] if n["name"].startswith("fused_concatenate")]
    assert len(concat) == 1
    assert concat[0]["attrs"]["func_name"] == ("__nop" if batch == 1 else concat[0]["name"])
    if batch == 1:
        assert sorted(graph["attrs"]["storage_offset"][1])[-1] == 32 * 4  # b at a's end
        assert "fused_concatenate" not in factory.get_lib().function_names
    xv = _f32(RNG.standard_normal((batch, 16)))
    cat = np.concatenate([np.maximum(xv @ params["w1"].T, 0), np.maximum(xv @ params["w2"].T, 0)], axis=1)
    path = str(tmp_path / "model.tar")
    factory.export_library(path)
    dev = tecc.cuda(0) if target == "cuda" else tecc.cpu(0)
    for built in (factory, tecc.runtime.load_module(path)):
        gmod = GraphModule(built["default"](dev))
        gmod.run(x=xv)
        np.testing.assert_allclose(gmod.get_output(0).numpy(), cat @ params["w3"].T, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_a_reshape_is_a_view_and_runs_no_kernel(target, tmp_path):
    """A transformer's (batch, tokens, features) input flattened for a dense layer, and
    the product regrouped for the next: both reshapes are views of their inputs (the
    first of the user's input), no kernel; a reshape that is a head stays a copy."""
    x = Var("x", TensorType((1, 6, 16)))
    w, w2 = Var("w", TensorType((8, 16))), Var("w2", TensorType((5, 16)))
    y = call("nn.relu", call("nn.dense", call("reshape", x, newshape=(6, 16)), w, units=8))
    z = call("nn.dense", call("reshape", y, newshape=(3, 16)), w2, units=5)
    head = call("reshape", z, newshape=(15,))
    params = {"w": _f32(RNG.standard_normal((8, 16))), "w2": _f32(RNG.standard_normal((5, 16)))}
    with tecc.transform.PassContext(opt_level=3):
        factory = build(G.Module.from_expr(G.Function([x, w, w2], G.Tuple([head, y]))), target, params)
    graph = json.loads(factory.get_graph_json())
    names = [n["name"] for n in graph["nodes"]]
    nops = [n["name"] for n in graph["nodes"] if n["op"] == "tvm_op" and n["attrs"]["func_name"] == "__nop"]
    assert sorted(nops) == ["fused_reshape", "fused_reshape_1"], names
    assert len([n for n in names if n.startswith("fused_reshape")]) == 3  # the head's copy
    sids, row = graph["attrs"]["storage_id"][1], graph["node_row_ptr"]
    assert sids[row[names.index("fused_reshape")]] == sids[row[names.index("x")]]
    assert "fused_reshape" not in factory.get_lib().function_names
    xv = _f32(RNG.standard_normal((1, 6, 16)))
    y_ref = np.maximum(xv.reshape(6, 16) @ params["w"].T, 0)
    z_ref = y_ref.reshape(3, 16) @ params["w2"].T
    path = str(tmp_path / "model.tar")
    factory.export_library(path)
    dev = tecc.cuda(0) if target == "cuda" else tecc.cpu(0)
    for built in (factory, tecc.runtime.load_module(path)):
        gmod = GraphModule(built["default"](dev))
        for _ in range(2):  # a second run reads the views again
            gmod.run(x=xv)
            np.testing.assert_allclose(gmod.get_output(0).numpy(), z_ref.reshape(15), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(gmod.get_output(1).numpy(), y_ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(gmod.get_input("x").numpy(), xv)  # the user's input is untouched


def test_an_input_shared_with_anything_but_a_view_of_it_is_refused():
    from tecc.runtime.graph_executor import GraphJSONError, GraphSpec

    x, w = Var("x", TensorType((2, 2, 4))), Var("w", TensorType((3, 4)))
    out = call("nn.dense", call("reshape", x, newshape=(4, 4)), w, units=3)
    with tecc.transform.PassContext(opt_level=3):
        factory = build(G.Module.from_expr(G.Function([x, w], out)), "llvm", {"w": _f32(np.ones((3, 4)))})
    graph = json.loads(factory.get_graph_json())
    names = [n["name"] for n in graph["nodes"]]
    assert graph["nodes"][names.index("fused_reshape")]["attrs"]["func_name"] == "__nop"
    GraphSpec(json.dumps(graph), ["p0"])  # the view shares the input's storage: fine
    sids, row = graph["attrs"]["storage_id"][1], graph["node_row_ptr"]
    dense = row[names.index("fused_nn_dense")]
    sids[dense] = sids[row[names.index("x")]]  # the product too: not fine
    with pytest.raises(GraphJSONError, match=rf"input node 0 \('x'\) has storage_id \d+, shared with entry {dense}"):
        GraphSpec(json.dumps(graph), ["p0"])


def test_symbolic_input_is_refused():
    x = Var("data", TensorType(("batch", 8)))
    mod = G.Module.from_expr(G.Function([x], call("nn.relu", x)))
    with pytest.raises(GraphError, match=r"input %data has symbolic dimension\(s\) \['batch'\].*static shape"):
        build(mod, "llvm")


def test_bad_params_are_refused():
    x, w = Var("x", TensorType((2, 3))), Var("w", TensorType((4, 3)))
    mod = G.Module.from_expr(G.Function([x, w], call("nn.dense", x, w)))
    with pytest.raises(GraphError, match="params has 'weight', which is not an input of main"):
        build(mod, "llvm", params={"weight": np.zeros((4, 3), "float32")})
    with pytest.raises(GraphError, match=r"param 'w' is float32\[3, 4\] but main's input %w is"):
        build(mod, "llvm", params={"w": np.zeros((3, 4), "float32")})
    with pytest.raises(GraphError, match="build takes a tecc.graph.Module"):
        build("model.onnx", "llvm")


def test_an_unfused_operator_is_named():
    x = Var("x", TensorType((4,)))
    mod = G.Module.from_expr(G.Function([x], call("nn.relu", x)))
    with tecc.transform.PassContext(disabled_pass=["FuseOps"]):
        with pytest.raises(GraphError, match="nn.relu in main is not inside a fused function"):
            build(mod, "llvm")


def test_unrolled_lstm_compiles_each_step_once():
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from tecc.graph.frontend import from_onnx

    steps, batch, width, hidden = 12, 2, 8, 16
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array((rng.standard_normal(s) * 0.1).astype(np.float32), n) for n, s in
               (("W", (1, 4 * hidden, width)), ("R", (1, 4 * hidden, hidden)), ("B", (1, 8 * hidden)))]
    graph = helper.make_graph(
        [helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], hidden_size=hidden)], "lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [steps, 1, batch, hidden])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    mod, params = from_onnx(model, {"x": (steps, batch, width)})
    factory = build(mod, "llvm", params)
    names = [n["attrs"]["func_name"] for n in json.loads(factory.get_graph_json())["nodes"] if n["op"] == "tvm_op"]
    # 12 steps, each a recurrent dense layer and the gates (a step reads its piece of one
    # split of the input projection): a handful of distinct kernels
    assert len(names) > 2 * steps
    assert len(set(names)) <= 10, sorted(set(names))
