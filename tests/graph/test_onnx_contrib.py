"""onnxruntime's contrib operators (domain com.microsoft), which its transformer
optimizer writes into BERT- and GPT-style models: each converter against
onnxruntime's CPU kernels, on the C backend and the CUDA emulator, a BERT layer as the
optimizer writes it, and one expected failure per refusal."""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tecc  # noqa: E402
from tecc.contrib import graph_executor  # noqa: E402
from tecc.graph.build import build  # noqa: E402
from tecc.graph.frontend import OnnxImportError, from_onnx, supported_ops  # noqa: E402

B, S, H, HEADS = 2, 5, 8, 2
RNG = np.random.default_rng(12)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype("float32")


def contrib(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain="com.microsoft", **attrs)


def make_model(nodes, inputs, outputs, inits=None, output_types=None):
    info = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()]
    types = output_types or {}
    outs = [helper.make_tensor_value_info(n, types.get(n, TensorProto.FLOAT), None) for n in outputs]
    graph = helper.make_graph(nodes, "contrib", info, outs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


def check(model, inputs, target="llvm", rtol=1e-5, atol=1e-5):
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    mod, params = from_onnx(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no tuned config" / "no GPU: the emulator runs"
        with tecc.transform.PassContext(opt_level=3):
            factory = build(mod, target, params)
        gmod = graph_executor.GraphModule(factory["default"](tecc.cpu(0) if target == "llvm" else tecc.cuda(0)))
        for name, value in inputs.items():
            gmod.set_input(name, value)
        gmod.run()
    assert gmod.get_num_outputs() == len(want)
    for i, w in enumerate(want):
        got = gmod.get_output(i).numpy()
        assert got.shape == w.shape and got.dtype == w.dtype, (i, got.shape, w.shape, got.dtype, w.dtype)
        np.testing.assert_allclose(got, w, rtol=rtol, atol=atol, err_msg=model.graph.output[i].name)


TARGETS = ["llvm", "cuda"]


@pytest.mark.parametrize("target", TARGETS)
def test_the_gelus(target):
    x, bias = rand(B, S, H), rand(H)
    nodes = [contrib("Gelu", ["x"], ["a"]), contrib("BiasGelu", ["x", "bias"], ["b"]),
             contrib("FastGelu", ["x", "bias"], ["c"]), contrib("FastGelu", ["x"], ["d"]),
             contrib("QuickGelu", ["x"], ["e"], alpha=1.5)]
    check(make_model(nodes, {"x": x}, ["a", "b", "c", "d", "e"], {"bias": bias}), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("simplified", [False, True])
def test_skip_layer_normalization_and_its_extra_outputs(target, simplified):
    x = rand(B, S, H)
    inits = {"skip": rand(S, H), "gamma": rand(H), "beta": rand(H), "bias": rand(H)}
    if simplified:
        node = contrib("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"], ["y", "", "", "sum"],
                       epsilon=1e-5)
        outputs = ["y", "sum"]
    else:
        node = contrib("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["y", "mean", "inv", "sum"],
                       epsilon=1e-5)
        outputs = ["y", "mean", "inv", "sum"]
    check(make_model([node], {"x": x}, outputs, inits), {"x": x}, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("with_mask", [False, True])
def test_embed_layer_normalization(target, with_mask):
    vocab, positions = 20, 16
    ids = RNG.integers(0, vocab, (B, S)).astype("int32")
    segments = RNG.integers(0, 2, (B, S)).astype("int32")
    inputs = {"ids": ids, "seg": segments}
    names = ["ids", "seg", "word", "pos", "segemb", "gamma", "beta"]
    if with_mask:
        inputs["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
        names.append("mask")
    inits = {"word": rand(vocab, H), "pos": rand(positions, H), "segemb": rand(2, H), "gamma": rand(H), "beta": rand(H)}
    node = contrib("EmbedLayerNormalization", names, ["y", "mask_index", "sum"], epsilon=1e-5)
    model = make_model([node], inputs, ["y", "mask_index", "sum"], inits, {"mask_index": TensorProto.INT32})
    check(model, inputs, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mask, unidirectional", [
    (None, 0), (np.array([3, 5], "int32"), 0), (np.array([[1, 1, 0, 1, 0], [1, 1, 1, 1, 1]], "int32"), 0),
    (None, 1), (np.array([4, 2], "int32"), 1),
    # the first query's one visible key masked: the padding mask is an offset, the causal mask is not
    (np.array([[0, 1, 1, 1, 1], [1, 0, 1, 0, 1]], "int32"), 1),
])
def test_attention(target, mask, unidirectional):
    x = rand(B, S, H)
    inputs = {"x": x}
    names = ["x", "w", "b"]
    if mask is not None:
        inputs["mask"] = mask
        names.append("mask")
    node = contrib("Attention", names, ["y"], num_heads=HEADS, unidirectional=unidirectional)
    check(make_model([node], inputs, ["y"], {"w": rand(H, 3 * H, scale=0.3), "b": rand(3 * H)}), inputs, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("past_steps, mask", [(0, None), (3, None), (3, "lengths"), (3, "raw")])
def test_attention_with_a_past_state_gives_the_present(target, past_steps, mask):
    """A decoder step (GPT-2 as onnxruntime's optimizer writes it): the past's keys and
    values before this step's, causal, the present returned."""
    x = rand(B, S, H)
    inputs = {"x": x}
    names = ["x", "w", "b", "", ""]
    if mask == "lengths":
        inputs["mask"] = np.array([past_steps + 4, past_steps + S], "int32")
        names[3] = "mask"
    elif mask == "raw":
        inputs["mask"] = np.ones((B, past_steps + S), "int32")
        inputs["mask"][0, 1] = 0
        names[3] = "mask"
    if past_steps:
        inputs["past"] = rand(2, B, HEADS, past_steps, H // HEADS)
        names[4] = "past"
    node = contrib("Attention", names, ["y", "present"], num_heads=HEADS, unidirectional=1)
    check(make_model([node], inputs, ["y", "present"], {"w": rand(H, 3 * H, scale=0.3), "b": rand(3 * H)}), inputs,
          target)


def test_attention_with_its_own_scale_and_value_width():
    x = rand(B, S, H)
    node = contrib("Attention", ["x", "w", "b"], ["y"], num_heads=HEADS, scale=0.2, qkv_hidden_sizes=[8, 8, 4])
    check(make_model([node], {"x": x}, ["y"], {"w": rand(H, 20, scale=0.3), "b": rand(20)}), {"x": x})


def test_fused_matmul():
    a, b = rand(2, 3, 4), rand(2, 5, 4)
    check(make_model([contrib("FusedMatMul", ["a", "b"], ["y"], alpha=0.5, transB=1)], {"a": a, "b": b}, ["y"]),
          {"a": a, "b": b})
    c = rand(4, 3)
    check(make_model([contrib("FusedMatMul", ["c", "b"], ["y"], transA=1, transB=1)], {"c": c, "b": b}, ["y"]),
          {"c": c, "b": b})


@pytest.mark.parametrize("target", TARGETS)
def test_a_bert_layer_as_onnxruntimes_optimizer_writes_it(target):
    """Embeddings with their layer norm and mask index, fused self-attention, the output
    projection and a SkipLayerNormalization, the feed-forward MatMul with BiasGelu,
    another MatMul and SkipLayerNormalization: the node types of a BERT encoder layer
    after ``onnxruntime.transformers.optimizer.optimize_model(..., model_type="bert")``."""
    vocab, ff = 30, 16
    ids = RNG.integers(0, vocab, (B, S)).astype("int32")
    segments = np.zeros((B, S), "int32")
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], "int32")
    inits = {"word": rand(vocab, H), "pos": rand(S, H), "segemb": rand(2, H), "g0": rand(H), "b0": rand(H),
             "wqkv": rand(H, 3 * H, scale=0.3), "bqkv": rand(3 * H), "wo": rand(H, H, scale=0.3), "bo": rand(H),
             "g1": rand(H), "b1": rand(H), "w1": rand(H, ff, scale=0.3), "bf": rand(ff), "w2": rand(ff, H, scale=0.3),
             "bf2": rand(H), "g2": rand(H), "b2": rand(H)}
    nodes = [contrib("EmbedLayerNormalization", ["ids", "seg", "word", "pos", "segemb", "g0", "b0", "mask"],
                     ["emb", "mask_index"], epsilon=1e-12),
             contrib("Attention", ["emb", "wqkv", "bqkv", "mask_index"], ["att"], num_heads=HEADS),
             helper.make_node("MatMul", ["att", "wo"], ["proj"]),
             contrib("SkipLayerNormalization", ["proj", "emb", "g1", "b1", "bo"], ["ln1"], epsilon=1e-12),
             helper.make_node("MatMul", ["ln1", "w1"], ["up"]),
             contrib("BiasGelu", ["up", "bf"], ["act"]),
             helper.make_node("MatMul", ["act", "w2"], ["down"]),
             contrib("SkipLayerNormalization", ["down", "ln1", "g2", "b2", "bf2"], ["out"], epsilon=1e-12)]
    inputs = {"ids": ids, "seg": segments, "mask": mask}
    check(make_model(nodes, inputs, ["out"], inits), inputs, target, rtol=1e-4, atol=1e-4)


def _packed(values, bits):
    """``values`` (< 2^bits) packed into bytes along the last axis, the first lowest."""
    per_byte = 8 // bits
    grouped = values.reshape(*values.shape[:-1], -1, per_byte).astype(np.uint8)
    out = np.zeros(grouped.shape[:-1], np.uint8)
    for t in range(per_byte):
        out |= grouped[..., t] << (t * bits)
    return out


def nbits_model(k, n, m, bits, block, zero, bias=False, dtype="float32"):
    """A MatMulNBits model (B of N x K ``bits``-bit weights in blocks of ``block``) and
    its input A (m x k); ``zero``: "none" (2^(bits-1)), "packed" (uint8) or "float"."""
    rng = np.random.default_rng(k + n + bits)
    blocks = -(-k // block)
    b = _packed(rng.integers(0, 1 << bits, (n, blocks * block)), bits).reshape(n, blocks, block * bits // 8)
    inits = {"B": b, "S": rng.uniform(0.01, 0.1, n * blocks).astype(dtype)}
    ins = ["a", "B", "S"]
    if zero == "packed":
        per_row = -(-blocks * bits // 8) * (8 // bits)
        inits["Z"] = _packed(rng.integers(0, 1 << bits, (n, per_row)), bits).reshape(-1)
        ins.append("Z")
    elif zero == "float":
        inits["Z"] = rng.uniform(0, (1 << bits) - 1, n * blocks).astype(dtype)
        ins.append("Z")
    if bias:
        ins += [""] * (5 - len(ins)) + ["bias"]
        inits["bias"] = rng.standard_normal(n).astype(dtype)
    a = rng.standard_normal((m, k)).astype(dtype)
    node = contrib("MatMulNBits", ins, ["y"], K=k, N=n, bits=bits, block_size=block)
    out_type = TensorProto.FLOAT if dtype == "float32" else TensorProto.FLOAT16
    return make_model([node], {"a": a}, ["y"], inits, output_types={"y": out_type}), a


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("k, n, m, bits, block, zero, bias", [
    (64, 48, 2, 4, 32, "none", False),
    (96, 40, 3, 4, 32, "packed", True),
    (100, 24, 2, 4, 32, "packed", False),    # K not a whole number of blocks
    (128, 32, 1, 4, 64, "float", False),
    (64, 16, 2, 8, 16, "packed", False),
    (64, 24, 2, 2, 16, "packed", False),
])
def test_matmul_nbits(target, k, n, m, bits, block, zero, bias):
    """onnxruntime's int4 (and 2-, 8-bit) weight-only MatMul, against its CPU kernel;
    on a GPU target the unpacked 4- and 2-bit weights stay a byte an element in the
    params (8-bit ones, uint8, are folded into float32 as an int8 model's are)."""
    model, a = nbits_model(k, n, m, bits, block, zero, bias)
    check(model, {"a": a}, target, rtol=1e-5, atol=5e-5 if bits == 8 else 1e-5)
    mod, params = from_onnx(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tecc.transform.PassContext(opt_level=3):
            factory = build(mod, target, params)
    weights = [np.asarray(v) for v in factory.params.values() if np.asarray(v).shape == (n, k)]
    assert len(weights) == 1
    narrow = {2: "uint2", 4: "uint4"}.get(bits)
    assert weights[0].dtype.name == (narrow if target == "cuda" and narrow else "float32")


def test_matmul_nbits_in_float16():
    model, a = nbits_model(64, 32, 2, 4, 32, "packed", dtype="float16")
    check(model, {"a": a}, "llvm", rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("attrs, match", [
    (dict(bits=3), r"bits is 3; tecc unpacks 2-, 4- and 8-bit weights"),
    (dict(block_size=24), r"block_size is 24; it must be a power of two of at least 16"),
    (dict(N=40), r"B \(input 1\) has shape \(48, 2, 16\); K=64 and N=40 in blocks of 32 at 4 bits need \(40, 2, 16\)"),
])
def test_matmul_nbits_refusals_name_the_node_and_the_fix(attrs, match):
    model, _ = nbits_model(64, 48, 2, 4, 32, "none")
    for key, value in attrs.items():
        node = model.graph.node[0]
        for attr in node.attribute:
            if attr.name == key:
                attr.i = value
    with pytest.raises(OnnxImportError, match=r"MatMulNBits node .*: " + match):
        from_onnx(model)


@pytest.mark.parametrize("node, inputs, match", [
    (contrib("Attention", ["x", "w", "b", "", "past"], ["y"], num_heads=HEADS), {"past": rand(2, B, HEADS + 1, 1, 4)},
     r"Attention node .*: past has shape \(2, 2, 3, 1, 4\); it must be \(2, batch, num_heads, past steps, head\)"),
    (contrib("Attention", ["x", "w", "b", "", "", "bias"], ["y"], num_heads=HEADS), {"bias": rand(B, HEADS, S, S)},
     r"the input attention_bias \(relative_position_bias\) is not supported"),
    (contrib("Attention", ["x", "w", "b", "m3"], ["y"], num_heads=HEADS), {"m3": np.ones((B, S, S), "int32")},
     r"mask_index of shape \(2, 5, 5\) is not supported; tecc takes \(batch,\) lengths or a \(batch, past \+ "
     r"sequence\) raw mask"),
    (contrib("Attention", ["x", "w", "b"], ["y"], num_heads=3), {},
     r"qkv_hidden_sizes \[8, 8, 8\] must divide into num_heads = 3 heads"),
    (contrib("FusedMatMul", ["x", "x"], ["y"], transBatchA=1), {},
     r"transBatchA / transBatchB are not supported; transpose the operand first"),
    (contrib("Inverse", ["x"], ["y"]), {},
     r"use operators tecc does not support \(Inverse\): Inverse \(domain 'com.microsoft'\) in node"),
])
def test_refusals_name_the_node_and_the_fix(node, inputs, match):
    x = rand(B, S, H)
    model = make_model([node], {"x": x, **inputs}, ["y"], {"w": rand(H, 3 * H), "b": rand(3 * H)})
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


def test_a_model_using_the_contrib_domain_without_importing_it_is_read_as_onnxruntime_reads_it():
    x = rand(B, S, H)
    model = make_model([contrib("Gelu", ["x"], ["y"])], {"x": x}, ["y"])
    del model.opset_import[1]  # hand-built models often leave the com.microsoft import out
    check(model, {"x": x})


def test_supported_ops_lists_the_contrib_operators_by_domain():
    ops = supported_ops()
    assert "com.microsoft.Attention" in ops and "com.microsoft.SkipLayerNormalization" in ops
    assert "Conv" in ops and "Attention" not in ops  # ONNX's own Attention comes through its function body
