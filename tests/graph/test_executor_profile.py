"""Per-kernel profiling of a built model (GraphExecutor.profile), on a small CNN whose
kernels take the x86 schedules of the ResNet-50 profile (flat convolutions with fused
epilogues, a stride-2 1x1 convolution, a concatenate), checked against numpy; and the
layer kinds benchmarks/profile_model_cpu.py reads from the graph JSON."""
import importlib.util
import json
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tecc  # noqa: E402
from tecc.errors import RuntimeArgError, TeccError  # noqa: E402
from tecc.graph.build import build  # noqa: E402
from tecc.graph.frontend import from_onnx  # noqa: E402
from tecc.runtime.graph_executor import GraphProfile  # noqa: E402
from tecc.topi import testing as T  # noqa: E402

TARGET = "llvm -mcpu=core-avx2"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _model(rng):
    """x (1, 32, 14, 14) -> relu(conv3x3 + b1) + x -> conv1x1 stride 2 (+ b2) -> concat with
    a 2x2 max pool of the residual sum -> out (1, 96, 7, 7)."""
    w1 = (rng.standard_normal((32, 32, 3, 3)) / 17).astype("float32")
    b1 = rng.standard_normal(32).astype("float32")
    w2 = (rng.standard_normal((64, 32, 1, 1)) / 6).astype("float32")
    b2 = rng.standard_normal(64).astype("float32")
    inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Add", ["r1", "x"], ["s1"], name="residual"),
        helper.make_node("Conv", ["s1", "w2", "b2"], ["c2"], strides=[2, 2], name="down"),
        helper.make_node("MaxPool", ["s1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Concat", ["c2", "p1"], ["out"], axis=1, name="concat"),
    ]
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 96, 7, 7])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, (w1, b1, w2, b2)


def _reference(x, w1, b1, w2, b2):
    s1 = np.maximum(T.conv2d_nchw_python(x, w1, 1, 1) + b1[:, None, None], 0) + x
    c2 = T.conv2d_nchw_python(s1, w2, 2, 0) + b2[:, None, None]
    p1 = s1.reshape(1, 32, 7, 2, 7, 2).max(axis=(3, 5))
    return np.concatenate([c2, p1], axis=1)


@pytest.fixture(scope="module")
def built():
    rng = np.random.default_rng(3)
    model, weights = _model(rng)
    mod, params = from_onnx(model)
    with tecc.transform.PassContext(opt_level=3):
        factory = build(mod, TARGET, params)
    x = rng.standard_normal((1, 32, 14, 14)).astype("float32")
    return factory, x, _reference(x, *weights)


def test_the_model_matches_numpy_and_its_profile_has_one_row_per_kernel_call(built):
    factory, x, want = built
    ex = factory["default"](tecc.cpu(0))
    ex.set_input("x", x)
    ex.run()
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)

    prof = ex.profile(repeat=3, number=2)
    assert isinstance(prof, GraphProfile)
    graph = json.loads(factory.get_graph_json())
    kernels = [(i, n["attrs"]["func_name"]) for i, n in enumerate(graph["nodes"]) if n["op"] == "tvm_op"]
    assert [(r.index, r.func_name) for r in prof.rows] == kernels
    assert all(len(r.results) == 3 and min(r.results) > 0 for r in prof.rows)
    assert prof.total == pytest.approx(sum(r.median for r in prof.rows))
    assert sum(prof.share(r) for r in prof.rows) == pytest.approx(1.0)
    assert prof.rows[-1].shape == (1, 96, 7, 7) and prof.rows[-1].dtype == "float32"
    # per function, the costliest first; plain data for JSON; a table naming every kernel
    by_func = prof.by_function()
    assert [t for _, _, t in by_func] == sorted((t for _, _, t in by_func), reverse=True)
    assert sum(c for _, c, _ in by_func) == len(prof.rows)
    json.dumps(prof.as_dicts())
    text = prof.table()
    assert all(name in text for _, name in kernels) and "total" in text
    # profiling left the outputs as a run does
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    # TVM's wrapper passes it through
    from tecc.contrib import graph_executor
    wrapped = graph_executor.GraphModule(ex).profile(repeat=2)
    assert [r.func_name for r in wrapped.rows] == [name for _, name in kernels]


def test_profile_refuses_bad_counts_and_unset_inputs(built):
    factory, x, _ = built
    ex = factory["default"](tecc.cpu(0))
    with pytest.raises(RuntimeArgError, match=r"input\(s\) \['x'\] were never set"):
        ex.profile()
    ex.set_input("x", x)
    with pytest.raises(TeccError, match=r"profile needs repeat >= 1 and number >= 1, got repeat=0"):
        ex.profile(repeat=0)
    with pytest.raises(TeccError, match=r"number=-1"):
        ex.profile(number=-1)


def _profile_script():
    spec = importlib.util.spec_from_file_location("profile_model_cpu",
                                                  os.path.join(ROOT, "benchmarks", "profile_model_cpu.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_profile_script_reads_layer_kinds_and_flops_from_the_graph(built):
    from tecc.graph.op import list_ops

    script = _profile_script()
    assert script.parse_kernel_name("fused_nn_conv2d_nn_bias_add_nn_relu_11", list_ops()) == \
        ["nn.conv2d", "nn.bias_add", "nn.relu"]
    factory, _, _ = built
    graph = json.loads(factory.get_graph_json())
    layers = script.tecc_layers(graph, set(factory.params), list_ops())
    convs = sorted((label, flop) for _, key, label, flop, _ in layers if key[0] == "conv2d")
    assert convs == [("conv2d 1x1/2 32->64 14x14", 2 * 64 * 7 * 7 * 32),
                     ("conv2d 3x3/1 32->32 14x14", 2 * 32 * 14 * 14 * 32 * 9)]
    kinds = {key[0] for _, key, _, _, _ in layers}
    assert {"conv2d", "concatenate"} <= kinds
    # onnxruntime's Conv event of the same layer gets the same key
    event = {"args": {"op_name": "FusedConv", "input_type_shape": [{"float": [1, 32, 14, 14]},
                                                                   {"float": [32, 32, 3, 3]}, {"float": [32]}],
                      "output_type_shape": [{"float": [1, 32, 14, 14]}]}}
    conv3 = next(key for _, key, label, _, _ in layers if label.startswith("conv2d 3x3"))
    assert script.ort_layer(event)[0] == conv3


def test_the_profile_script_refuses_a_missing_records_file_in_one_line(tmp_path, capsys):
    script = _profile_script()
    missing = str(tmp_path / "none.json")
    assert script.main(["--records", missing, "--models", "resnet50", "--build-only"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"profile_model_cpu.py: --records {missing} does not exist; give a tuning log "
                   "(tecc tune --output ...)")
