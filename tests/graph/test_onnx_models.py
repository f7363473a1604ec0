"""Whole models against onnxruntime on the CPU (target "llvm").

* The "light" model graphs that ship inside the onnx package
  (``onnx/backend/test/data/light/light_*.onnx``: ResNet-50, SqueezeNet, VGG-19,
  Inception v1 and v2, DenseNet-121, ShuffleNet, AlexNet, ZFNet-512).  Their weights
  are ``ConstantOfShape`` fills (and a few constant initializers) that make every
  output equal, so :func:`randomize_weights` replaces each one with random values of
  its shape, scaled by fan-in so that activations stay finite and the logits spread.
  A model ending in Softmax is also compared in log space (the logits up to a
  constant), where a wrong kernel cannot hide behind a saturated or flat softmax.
* An MLP and a transformer encoder layer written with ``onnx.helper`` (always), and
  the same two exported from torch by the test (skipped when torch is missing).

``onnxruntime`` is the reference; the comparisons skip when it is not installed.
"""
import io
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tecc  # noqa: E402
from tecc.contrib.graph_executor import GraphModule  # noqa: E402
from tecc.graph.build import build, storage_report  # noqa: E402
from tecc.graph.frontend import from_onnx  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")

#: per model, the gain of the weights' fan-in scaling (std = gain / sqrt(fan_in)):
#: chosen so that, with the seeds below, onnxruntime's logits have a standard
#: deviation of a few units (checked by every test: see ``_check_spread``)
GAINS = {
    "resnet50": 1.0, "squeezenet": 1.4, "vgg19": 1.4, "inception_v1": 1.0, "inception_v2": 1.2,
    "densenet121": 1.2, "shufflenet": 0.9, "bvlc_alexnet": 1.2, "zfnet512": 1.4,
}


# ---------------------------------------------------------------------------------------
# random weights for the light models
# ---------------------------------------------------------------------------------------
def light_model(name: str):
    """The shipped ``light_<name>.onnx`` (skips when this onnx has no such file)."""
    path = os.path.join(LIGHT_DIR, f"light_{name}.onnx")
    if not os.path.exists(path):
        pytest.skip(f"onnx {onnx.__version__} ships no {path}")
    return onnx.load(path)


def _uses(graph) -> dict:
    """value name -> [(node, input index)], looking through Unsqueeze/Reshape (a
    scale vector reshaped before its Mul is still a scale)."""
    direct = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            direct.setdefault(name, []).append((node, k))

    def real(name):
        out = []
        for node, k in direct.get(name, []):
            if node.op_type in ("Unsqueeze", "Reshape") and k == 0:
                out.extend(real(node.output[0]) or [(node, k)])
            else:
                out.append((node, k))
        return out

    return {name: real(name) for name in direct}


def _random_weight(shape, uses, gain: float, rng) -> np.ndarray:
    """Random float32 values for a weight of ``shape`` read by ``uses``."""
    node, k = uses[0] if uses else (None, None)
    op = node.op_type if node is not None else None
    if op == "BatchNormalization" and k in (1, 4):
        # scale and variance: positive, around 1
        return rng.uniform(0.5, 1.5, shape).astype("float32")
    if op in ("Conv", "Gemm", "MatMul") and k == 1:
        if op == "Gemm":
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            fan_in = shape[1] if trans_b else shape[0]
        elif op == "MatMul":
            fan_in = shape[-2]
        else:
            fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(gain / np.sqrt(fan_in)))
    if op == "Mul":
        return rng.uniform(0.5, 1.5, shape).astype("float32")
    # biases, shifts, means
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(0.1)


def randomize_weights(model, gain: float = 1.0, seed: int = 0):
    """A copy of ``model`` whose float weights are random.

    Every float ``ConstantOfShape`` with a constant shape becomes a ``Constant`` node
    holding random values of that shape; every float initializer is redrawn; the
    shape initializers nothing reads any more are dropped (from the inputs too).
    Conv/Gemm weights are ``normal * gain / sqrt(fan_in)``, batch-norm scales and
    variances and Mul scales ``uniform(0.5, 1.5)``, everything else ``normal * 0.1``.
    """
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    uses = _uses(graph)
    inits = {init.name: init for init in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input and node.input[0] in inits:
            fill = numpy_helper.to_array(node.attribute[0].t) if node.attribute else np.zeros(1, "float32")
            if fill.dtype.kind == "f":
                shape = [int(d) for d in numpy_helper.to_array(inits[node.input[0]])]
                value = _random_weight(shape, uses.get(node.output[0], []), gain, rng)
                nodes.append(helper.make_node("Constant", [], [node.output[0]], name=node.name,
                                              value=numpy_helper.from_array(value, node.output[0])))
                continue
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    for init in graph.initializer:
        value = numpy_helper.to_array(init)
        if value.dtype == np.float32:
            new = _random_weight(value.shape, uses.get(init.name, []), gain, rng)
            init.CopyFrom(numpy_helper.from_array(new, init.name))
    read = {name for node in graph.node for name in node.input}
    dead = {init.name for init in graph.initializer if init.name not in read}
    keep = [init for init in graph.initializer if init.name not in dead]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    keep = [vi for vi in graph.input if vi.name not in dead]
    del graph.input[:]
    graph.input.extend(keep)
    return out


def data_inputs(model, seed: int = 1) -> dict:
    """Random float32 values for the model's inputs that are not initializers."""
    rng = np.random.default_rng(seed)
    inits = {init.name for init in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape, dtype=np.float32)
    return feeds


# ---------------------------------------------------------------------------------------
# running both
# ---------------------------------------------------------------------------------------
def run_onnxruntime(model, feeds: dict) -> list:
    ort = pytest.importorskip("onnxruntime")
    opts = ort.SessionOptions()
    # no graph rewrites: the reference computes the graph as written
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def build_tecc(model, shape=None):
    """``(factory, GraphModule)`` of ``model`` built for "llvm" at opt_level 3."""
    mod, params = from_onnx(model, shape=shape)
    with tecc.transform.PassContext(opt_level=3):
        factory = build(mod, "llvm", params)
    return factory, GraphModule(factory["default"](tecc.cpu(0)))


def run_tecc(gmod, feeds: dict) -> list:
    for name, value in feeds.items():
        gmod.set_input(name, value)
    gmod.run()
    return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]


def _ends_in_softmax(model) -> bool:
    last = [n for n in model.graph.node if model.graph.output[0].name in n.output]
    return bool(last) and last[0].op_type == "Softmax"


def _check_spread(values: np.ndarray, what: str) -> None:
    """The reference must tell a right answer from a wrong one: not flat, finite."""
    assert np.all(np.isfinite(values)), f"{what}: onnxruntime's output is not finite"
    assert 0.3 < float(values.std()) < 100.0, f"{what}: the random weights give a spread of {values.std()}"


def compare_light_model(name: str):
    """Build ``light_<name>`` with random weights, run it on random data with tecc and
    onnxruntime and compare; returns the factory."""
    model = randomize_weights(light_model(name), gain=GAINS[name])
    feeds = data_inputs(model)
    ref = run_onnxruntime(model, feeds)
    factory, gmod = build_tecc(model)
    out = run_tecc(gmod, feeds)
    assert len(out) == len(ref)
    np.testing.assert_allclose(out[0], ref[0], rtol=RTOL, atol=ATOL, err_msg=f"{name}: output")
    if _ends_in_softmax(model):
        # log-probabilities: the logits less their log-sum-exp
        ref_log, out_log = np.log(ref[0].astype("float64")), np.log(out[0].astype("float64"))
        _check_spread(ref_log - ref_log.mean(), f"{name} log-probabilities")
        np.testing.assert_allclose(out_log, ref_log, rtol=RTOL, atol=ATOL, err_msg=f"{name}: log-probabilities")
    else:
        _check_spread(ref[0], name)
    return factory


# ---------------------------------------------------------------------------------------
# the light models
# ---------------------------------------------------------------------------------------
def test_randomize_weights_replaces_every_constant_fill():
    model = light_model("squeezenet")
    fills = [n for n in model.graph.node if n.op_type == "ConstantOfShape"]
    rand = randomize_weights(model, gain=1.0)
    assert not [n for n in rand.graph.node if n.op_type == "ConstantOfShape"]
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in rand.graph.node if n.op_type == "Constant"}
    assert sorted(consts) == sorted(n.output[0] for n in fills)
    conv1 = consts["conv1_w_0"]
    assert conv1.shape == (64, 3, 3, 3) and conv1.dtype == np.float32
    assert len(np.unique(conv1)) == conv1.size
    onnx.checker.check_model(rand)


def test_resnet50_matches_onnxruntime_and_its_storage_plan_is_a_quarter():
    factory = compare_light_model("resnet50")
    report = storage_report(factory)
    print(f"\nlight ResNet-50, batch 1: peak intermediate bytes {report['peak_bytes']} / sum of intermediates "
          f"{report['total_intermediate_bytes']} = {report['ratio']:.3f} ({report['num_storages']} storages for "
          f"{report['num_entries']} entries)")
    assert report["total_intermediate_bytes"] > 0
    assert report["ratio"] <= 0.25


@pytest.mark.parametrize("name", ["squeezenet", "inception_v1", "inception_v2", "densenet121", "shufflenet",
                                  "bvlc_alexnet", "zfnet512", "vgg19"])
def test_light_model_matches_onnxruntime(name):
    compare_light_model(name)


# ---------------------------------------------------------------------------------------
# an MLP and a transformer encoder layer, written with onnx.helper
# ---------------------------------------------------------------------------------------
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits, opset):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, F, s) for n, s in outputs.items()],
        initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 8)
    onnx.checker.check_model(model)
    return model


def mlp_model(sizes=(784, 128, 64, 10), batch="batch", seed=0):
    """Gemm(transB=1) + Relu layers, as torch exports ``nn.Linear``/``nn.ReLU``."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], {}
    x = "x"
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        inits[f"w{i}"] = rng.standard_normal((n_out, n_in), dtype=np.float32) * np.float32(np.sqrt(2.0 / n_in))
        inits[f"b{i}"] = rng.standard_normal(n_out, dtype=np.float32) * np.float32(0.1)
        y = f"fc{i}"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y], name=f"fc{i}", transB=1))
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [y], [f"relu{i}"], name=f"relu{i}"))
            y = f"relu{i}"
        x = y
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    return _model(nodes, {"x": [batch, sizes[0]]}, {"y": [batch, sizes[-1]]}, inits, opset=13)


def encoder_layer_model(d_model=64, nhead=4, dim_ff=128, seq="seq", batch="batch", seed=0):
    """A post-norm transformer encoder layer (torch's ``TransformerEncoderLayer``,
    batch_first, ReLU, eval mode) from MatMul/Add/Softmax/LayerNormalization/
    Transpose/Reshape nodes, on an input of shape (batch, seq, d_model)."""
    rng = np.random.default_rng(seed)
    dh = d_model // nhead

    def w(n_in, n_out):
        return rng.standard_normal((n_in, n_out), dtype=np.float32) * np.float32(1.0 / np.sqrt(n_in))

    def b(n):
        return rng.standard_normal(n, dtype=np.float32) * np.float32(0.1)

    inits = {
        "wq": w(d_model, d_model), "bq": b(d_model), "wk": w(d_model, d_model), "bk": b(d_model),
        "wv": w(d_model, d_model), "bv": b(d_model), "wo": w(d_model, d_model), "bo": b(d_model),
        "w1": w(d_model, dim_ff), "b1": b(dim_ff), "w2": w(dim_ff, d_model), "b2": b(d_model),
        "g1": 1.0 + b(d_model), "be1": b(d_model), "g2": 1.0 + b(d_model), "be2": b(d_model),
        "heads_shape": np.array([0, 0, nhead, dh], "int64"), "model_shape": np.array([0, 0, d_model], "int64"),
        "scale": np.array(1.0 / np.sqrt(dh), "float32"),
    }
    n = helper.make_node
    nodes = []
    for p in "qkv":
        nodes += [n("MatMul", ["x", f"w{p}"], [f"{p}_mm"], name=f"{p}_proj"),
                  n("Add", [f"{p}_mm", f"b{p}"], [f"{p}_b"], name=f"{p}_bias"),
                  n("Reshape", [f"{p}_b", "heads_shape"], [f"{p}_h"], name=f"{p}_split_heads")]
    nodes += [
        n("Transpose", ["q_h"], ["q_t"], perm=[0, 2, 1, 3], name="q_heads_first"),
        n("Transpose", ["k_h"], ["k_t"], perm=[0, 2, 3, 1], name="k_heads_first_transposed"),
        n("Transpose", ["v_h"], ["v_t"], perm=[0, 2, 1, 3], name="v_heads_first"),
        n("MatMul", ["q_t", "k_t"], ["scores"], name="scores"),
        n("Mul", ["scores", "scale"], ["scaled"], name="scale_scores"),
        n("Softmax", ["scaled"], ["attn"], axis=-1, name="attention"),
        n("MatMul", ["attn", "v_t"], ["ctx"], name="context"),
        n("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3], name="merge_heads_transpose"),
        n("Reshape", ["ctx_t", "model_shape"], ["ctx_m"], name="merge_heads"),
        n("MatMul", ["ctx_m", "wo"], ["o_mm"], name="out_proj"),
        n("Add", ["o_mm", "bo"], ["o"], name="out_bias"),
        n("Add", ["x", "o"], ["res1"], name="residual1"),
        n("LayerNormalization", ["res1", "g1", "be1"], ["h1"], axis=-1, epsilon=1e-5, name="norm1"),
        n("MatMul", ["h1", "w1"], ["f1_mm"], name="linear1"),
        n("Add", ["f1_mm", "b1"], ["f1"], name="linear1_bias"),
        n("Relu", ["f1"], ["f1_r"], name="activation"),
        n("MatMul", ["f1_r", "w2"], ["f2_mm"], name="linear2"),
        n("Add", ["f2_mm", "b2"], ["f2"], name="linear2_bias"),
        n("Add", ["h1", "f2"], ["res2"], name="residual2"),
        n("LayerNormalization", ["res2", "g2", "be2"], ["y"], axis=-1, epsilon=1e-5, name="norm2"),
    ]
    return _model(nodes, {"x": [batch, seq, d_model]}, {"y": [batch, seq, d_model]}, inits, opset=17)


def compare_small_model(model, shape: dict):
    """Build ``model`` at ``shape`` (binding its symbolic dims) and compare with
    onnxruntime on random inputs of that shape."""
    rng = np.random.default_rng(3)
    feeds = {name: rng.standard_normal(s, dtype=np.float32) for name, s in shape.items()}
    ref = run_onnxruntime(model, feeds)
    _, gmod = build_tecc(model, shape=shape)
    out = run_tecc(gmod, feeds)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        _check_spread(r, "reference")
        assert o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=RTOL, atol=ATOL)


def test_helper_mlp_matches_onnxruntime():
    compare_small_model(mlp_model(), {"x": (4, 784)})


def test_helper_encoder_layer_matches_onnxruntime():
    model = encoder_layer_model()
    ops = {node.op_type for node in model.graph.node}
    assert {"MatMul", "Add", "Softmax", "LayerNormalization", "Transpose", "Reshape"} <= ops
    compare_small_model(model, {"x": (2, 16, 64)})


# ---------------------------------------------------------------------------------------
# the same, exported from torch
# ---------------------------------------------------------------------------------------
def export_from_torch(module, example, dynamic_batch=True):
    """``module`` (in eval mode) exported to an ONNX ModelProto by
    ``torch.onnx.export`` (the TorchScript exporter, opset 17), input ``x``, output
    ``y``, the batch dimension symbolic."""
    import inspect  # noqa: PLC0415

    import torch  # noqa: PLC0415

    module.eval()
    buf = io.BytesIO()
    kwargs = {"input_names": ["x"], "output_names": ["y"], "opset_version": 17}
    if dynamic_batch:
        kwargs["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    # parameters keep requires_grad (no torch.no_grad()): the encoder layer then takes
    # its traceable path, not the fused inference kernel, which has no ONNX form
    torch.onnx.export(module, (example,), buf, **kwargs)
    return onnx.load_model_from_string(buf.getvalue())


def test_torch_mlp_matches_onnxruntime():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64),
                              torch.nn.ReLU(), torch.nn.Linear(64, 10))
    model = export_from_torch(net, torch.randn(2, 784))
    compare_small_model(model, {"x": (4, 784)})


def test_torch_encoder_layer_matches_onnxruntime():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    model = export_from_torch(layer, torch.randn(2, 16, 64))
    compare_small_model(model, {"x": (2, 16, 64)})
