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
from tecc.graph.testing import (  # noqa: E402
    GAINS, data_inputs, decoder_layer_model, encoder_layer_model, mlp_model, randomize_weights,
)
from tecc.graph.testing import light_model as _light_model  # noqa: E402
from ops_run import reference_session  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4


def light_model(name: str):
    """The shipped ``light_<name>.onnx`` (skips when this onnx has no such file)."""
    try:
        return _light_model(name)
    except FileNotFoundError as e:
        pytest.skip(str(e))


# ---------------------------------------------------------------------------------------
# running both
# ---------------------------------------------------------------------------------------
def run_onnxruntime(model, feeds: dict) -> list:
    pytest.importorskip("onnxruntime")
    return reference_session(model).run(None, feeds)


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


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
def test_helper_encoder_layer_on_the_cuda_path_splits_and_merges_heads_in_the_products():
    """On a GPU target the query, key and value projections are one dense
    (CombineParallelDense) and the attention's head split and merge (slice, bias,
    reshape, transpose) run inside the batch_matmul and dense kernels that read them
    (fuse_ops' fuse_inputs): 9 kernel calls where the CPU build has 15, and the same
    values (the GPU, or the emulator)."""
    import json  # noqa: PLC0415

    from tecc.runtime.graph_executor import calls_kernel  # noqa: PLC0415

    model = encoder_layer_model()
    mod, params = from_onnx(model, shape={"x": (1, 16, 64)})
    kernels = {}
    for target in ("llvm", "cuda"):
        with tecc.transform.PassContext(opt_level=3):
            factory = build(mod, target, params)
        kernels[target] = [n["name"] for n in json.loads(factory.get_graph_json())["nodes"] if calls_kernel(n)]
    assert len(kernels["llvm"]) == 15 and len(kernels["cuda"]) == 9, kernels
    assert sum(k.startswith("fused_nn_dense") for k in kernels["cuda"]) == 4  # q, k and v as one
    assert not [k for k in kernels["cuda"] if "dense" not in k and "batch_matmul" not in k and "transpose" in k]
    assert sum("batch_matmul" in k and "transpose" in k for k in kernels["cuda"]) == 2
    feeds = {"x": np.random.default_rng(3).standard_normal((1, 16, 64), dtype=np.float32)}
    got = run_tecc(GraphModule(factory["default"](tecc.cuda(0))), feeds)[0]
    np.testing.assert_allclose(got, run_onnxruntime(model, feeds)[0], rtol=RTOL, atol=ATOL)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
def test_helper_decoder_layer_on_the_cuda_path_applies_rotary_embeddings_in_the_products():
    """The decoder's rotary embedding of q and k (slices, products with the gathered
    cosines and sines, a concatenation) and its head split and merge run inside the
    products that read them on a GPU target, where the projections of one input are
    one dense each (q, k and v; gate and up): 12 kernel calls where the CPU build has
    22, and the same values."""
    import json  # noqa: PLC0415

    from tecc.runtime.graph_executor import calls_kernel  # noqa: PLC0415

    model = decoder_layer_model(seq=16, batch=2)
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((2, 16, 64), dtype=np.float32),
             "position_ids": np.stack([np.arange(5, 21), np.arange(16)]).astype("int64")}
    mod, params = from_onnx(model)
    counts = {}
    for target in ("llvm", "cuda"):
        with tecc.transform.PassContext(opt_level=3):
            factory = build(mod, target, params)
        counts[target] = sum(calls_kernel(n) for n in json.loads(factory.get_graph_json())["nodes"])
    assert counts == {"llvm": 22, "cuda": 12}
    got = run_tecc(GraphModule(factory["default"](tecc.cuda(0))), feeds)[0]
    np.testing.assert_allclose(got, run_onnxruntime(model, feeds)[0], rtol=RTOL, atol=ATOL)


def test_helper_decoder_layer_at_opset_24_matches_onnxruntime_and_the_reference():
    # a Llama-style block as recent exporters write it: RMSNormalization, RotaryEmbedding,
    # Attention (imported through its ONNX function body) and Swish, at opset 24
    model = decoder_layer_model(seq=16, batch=2)
    assert {"RMSNormalization", "RotaryEmbedding", "Attention", "Swish"} <= {n.op_type for n in model.graph.node}
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((2, 16, 64), dtype=np.float32),
             "position_ids": np.stack([np.arange(5, 21), np.arange(16)]).astype("int64")}
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415

    want = ReferenceEvaluator(model).run(None, feeds)[0]
    _check_spread(want, "reference")
    _, gmod = build_tecc(model)
    got = run_tecc(gmod, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got, run_onnxruntime(model, feeds)[0], rtol=RTOL, atol=ATOL)


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


def _he_init(torch, module):
    """Linear weights drawn with He's gain: torch's default init shrinks each layer's
    output, and three of them leave a spread too small to tell right from wrong."""
    for sub in module.modules():
        if isinstance(sub, torch.nn.Linear):
            torch.nn.init.kaiming_normal_(sub.weight)
            torch.nn.init.uniform_(sub.bias, -0.5, 0.5)
    return module


def test_torch_mlp_matches_onnxruntime():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64),
                              torch.nn.ReLU(), torch.nn.Linear(64, 10))
    model = export_from_torch(_he_init(torch, net), torch.randn(2, 784))
    compare_small_model(model, {"x": (4, 784)})


def _torch_encoder_layer(torch, d_model, nhead, d_ff):
    """A post-norm transformer encoder layer (BERT's: fused QKV projection, scaled
    dot-product attention, GELU feed-forward) written with torch's modules and
    functions, the way model code exports. ``torch.nn.TransformerEncoderLayer`` itself
    does not export with torch 2.13's TorchScript exporter (its tracer hands
    ``scaled_dot_product_attention`` a tensor for ``is_causal``), which is torch's
    failure, not a model's."""
    F = torch.nn.functional

    class EncoderLayer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(d_model, 3 * d_model)
            self.out = torch.nn.Linear(d_model, d_model)
            self.ff1 = torch.nn.Linear(d_model, d_ff)
            self.ff2 = torch.nn.Linear(d_ff, d_model)
            self.norm1 = torch.nn.LayerNorm(d_model)
            self.norm2 = torch.nn.LayerNorm(d_model)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).reshape(b, s, 3, nhead, d_model // nhead).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) / (d_model // nhead) ** 0.5, dim=-1)
            ctx = (att @ v).transpose(1, 2).reshape(b, s, d_model)
            h = self.norm1(x + self.out(ctx))
            return self.norm2(h + self.ff2(F.gelu(self.ff1(h))))

    return EncoderLayer()


def test_torch_encoder_layer_matches_onnxruntime():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = _torch_encoder_layer(torch, d_model=64, nhead=4, d_ff=128)
    model = export_from_torch(layer, torch.randn(2, 16, 64))
    ops = {node.op_type for node in model.graph.node}
    assert {"MatMul", "Softmax", "Transpose", "Reshape", "Erf"} <= ops, ops
    compare_small_model(model, {"x": (2, 16, 64)})


@pytest.mark.parametrize("name", ["squeezenet", "inception_v1"])
def test_convert_layout_to_nhwc_keeps_the_models_values_with_two_transforms(name):
    """relay.transform.ConvertLayout on whole models: concatenated branches, LRN and
    per-channel scales stay NHWC, so only the input and the flattened output are
    transformed; the values are onnxruntime's."""
    from tecc import graph as G
    from tecc.graph.transform import ConvertLayout, FoldConstant, InferType

    model = randomize_weights(light_model(name), gain=GAINS.get(name, 1.0))
    feeds = data_inputs(model)
    mod, params = from_onnx(model)
    with tecc.transform.PassContext(opt_level=3):
        conv = FoldConstant()(ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(InferType()(mod)))
    transforms = []
    G.post_order_visit(conv["main"].body, lambda n: transforms.append(n) if isinstance(n, G.Call)
                       and getattr(n.op, "name", "") == "layout_transform" else None)
    assert len(transforms) == 2
    with tecc.transform.PassContext(opt_level=3):
        factory = build(conv, "llvm", params)
    got = run_tecc(GraphModule(factory["default"](tecc.cpu(0))), feeds)
    want = run_onnxruntime(model, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=ATOL)
