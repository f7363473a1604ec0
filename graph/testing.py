"""ONNX models for tests, benchmarks and notebooks (as :mod:`tecc.topi.testing` is for
operators): the "light" model graphs that ship inside the onnx package with random
weights, and an MLP and a transformer encoder layer written with ``onnx.helper``.

* :func:`light_model` loads ``onnx/backend/test/data/light/light_<name>.onnx``
  (ResNet-50, SqueezeNet, VGG-19, Inception v1 and v2, DenseNet-121, ShuffleNet,
  AlexNet, ZFNet-512).  Their weights are ``ConstantOfShape`` fills (and a few
  constant initializers) that make every output equal, so :func:`randomize_weights`
  replaces each one with random values of its shape, scaled by fan-in so that
  activations stay finite and the logits spread (:data:`GAINS`).
* :func:`mlp_model` and :func:`encoder_layer_model` build small models of the
  shapes torch exports, with a symbolic batch dimension.
* :func:`data_inputs` draws random inputs for a model.
* :func:`random_trees`, :func:`tree_attrs_v3`, :func:`tree_attrs_v5` and
  :func:`ml_model` write random decision-tree ensembles as ONNX-ML models (the
  older TreeEnsembleRegressor/Classifier attributes, or TreeEnsemble's);
  :func:`forest_model` is a random forest regressor of them.
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

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
    """The shipped ``light_<name>.onnx``.

    Raises
    ------
    FileNotFoundError
        When this onnx package ships no such file (the names are :data:`GAINS`'s).
    """
    path = os.path.join(LIGHT_DIR, f"light_{name}.onnx")
    if not os.path.exists(path):
        raise FileNotFoundError(f"onnx {onnx.__version__} ships no {path} (the light models: {sorted(GAINS)})")
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
# an MLP and a transformer encoder layer, written with onnx.helper
# ---------------------------------------------------------------------------------------
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits, opset, ir_version=8):
    """A checked model of ``nodes``; ``inputs``/``outputs``: name -> shape (a list:
    float32) or a tuple (ONNX element type, shape)."""
    def info(name, spec):
        elem, shape = spec if isinstance(spec, tuple) else (F, spec)
        return helper.make_tensor_value_info(name, elem, shape)

    graph = helper.make_graph(
        nodes, "m", [info(n, s) for n, s in inputs.items()], [info(n, s) for n, s in outputs.items()],
        initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, ir_version)
    onnx.checker.check_model(model)
    return model


def float16_model(model):
    """A copy of ``model`` in float16: its float32 initializers, constants, inputs,
    outputs and value infos made float16 (what a model exported with ``.half()``
    looks like), for the tensor-core paths."""
    return _narrowed_model(model, np.float16, onnx.TensorProto.FLOAT16)


def bfloat16_model(model):
    """A copy of ``model`` in bfloat16, as :func:`float16_model` makes a float16 one
    (what a model exported with ``.bfloat16()`` looks like); its arrays are
    ml_dtypes' bfloat16 (onnx's dependency)."""
    import ml_dtypes  # noqa: PLC0415

    return _narrowed_model(model, ml_dtypes.bfloat16, onnx.TensorProto.BFLOAT16)


def _narrowed_model(model, np_dtype, onnx_type):
    narrow = onnx.ModelProto()
    narrow.CopyFrom(model)
    g = narrow.graph
    for i, init in enumerate(g.initializer):
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32:
            g.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np_dtype), init.name))
    for node in g.node:  # constants made in the graph (Constant, ConstantOfShape)
        for attr in node.attribute:
            if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == F:
                attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np_dtype), attr.t.name))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == F:
            v.type.tensor_type.elem_type = onnx_type
    onnx.checker.check_model(narrow)
    return narrow


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


def decoder_layer_model(d_model=64, nhead=4, dim_ff=128, seq=16, batch=2, max_positions=64, seed=0):
    """A pre-norm decoder layer as recent exporters write a Llama-style block, at
    ONNX opset 23: RMSNormalization, query/key/value projections, RotaryEmbedding
    of the queries and keys (cos/sin caches of ``max_positions`` positions read at
    the ``position_ids`` input), causal Attention, the output projection and a
    residual add, then RMSNormalization and a gated MLP (``Swish(h Wg) * (h Wu)``,
    then ``Wd``) and a residual add; inputs ``x`` (batch, seq, d_model) and
    ``position_ids`` (batch, seq, int64)."""
    rng = np.random.default_rng(seed)
    dh = d_model // nhead

    def w(n_in, n_out):
        return rng.standard_normal((n_in, n_out), dtype=np.float32) * np.float32(1.0 / np.sqrt(n_in))

    angles = np.arange(max_positions)[:, None] / (10000.0 ** (np.arange(0, dh, 2) / dh))[None, :]
    inits = {
        "wq": w(d_model, d_model), "wk": w(d_model, d_model), "wv": w(d_model, d_model), "wo": w(d_model, d_model),
        "wg": w(d_model, dim_ff), "wu": w(d_model, dim_ff), "wd": w(dim_ff, d_model),
        "g1": 1.0 + 0.1 * rng.standard_normal(d_model, dtype=np.float32),
        "g2": 1.0 + 0.1 * rng.standard_normal(d_model, dtype=np.float32),
        "cos_cache": np.cos(angles).astype(np.float32), "sin_cache": np.sin(angles).astype(np.float32),
        "heads_shape": np.array([0, 0, nhead, dh], "int64"), "model_shape": np.array([0, 0, d_model], "int64"),
    }
    n = helper.make_node
    nodes = [n("RMSNormalization", ["x", "g1"], ["h"], axis=-1, epsilon=1e-6, name="attn_norm")]
    for p in "qkv":
        nodes += [n("MatMul", ["h", f"w{p}"], [f"{p}_mm"], name=f"{p}_proj"),
                  n("Reshape", [f"{p}_mm", "heads_shape"], [f"{p}_h"], name=f"{p}_split_heads"),
                  n("Transpose", [f"{p}_h"], [f"{p}_t"], perm=[0, 2, 1, 3], name=f"{p}_heads_first")]
    nodes += [n("RotaryEmbedding", [f"{p}_t", "cos_cache", "sin_cache", "position_ids"], [f"{p}_rot"],
                name=f"{p}_rotary") for p in "qk"]
    nodes += [
        n("Attention", ["q_rot", "k_rot", "v_t"], ["ctx"], is_causal=1, name="attention"),
        n("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3], name="merge_heads_transpose"),
        n("Reshape", ["ctx_t", "model_shape"], ["ctx_m"], name="merge_heads"),
        n("MatMul", ["ctx_m", "wo"], ["o"], name="out_proj"),
        n("Add", ["x", "o"], ["res1"], name="residual1"),
        n("RMSNormalization", ["res1", "g2"], ["h2"], axis=-1, epsilon=1e-6, name="mlp_norm"),
        n("MatMul", ["h2", "wg"], ["gate"], name="gate_proj"),
        n("Swish", ["gate"], ["gate_act"], name="gate_act"),
        n("MatMul", ["h2", "wu"], ["up"], name="up_proj"),
        n("Mul", ["gate_act", "up"], ["gated"], name="gated"),
        n("MatMul", ["gated", "wd"], ["down"], name="down_proj"),
        n("Add", ["res1", "down"], ["y"], name="residual2"),
    ]
    return _model(nodes, {"x": [batch, seq, d_model], "position_ids": (TensorProto.INT64, [batch, seq])},
                  {"y": [batch, seq, d_model]}, inits, opset=24, ir_version=10)


# ---------------------------------------------------------------------------------------
# decision-tree ensembles (ONNX-ML)
# ---------------------------------------------------------------------------------------
# A tree is a list of node dicts: ``mode`` a BRANCH_* name or LEAF; a branch has
# ``feature``, ``value``, ``true``, ``false``, ``missing``; a leaf has ``weights``, a
# list of ``(target, weight)``; node ``i`` at position ``i``, the root at 0.

#: TreeEnsembleRegressor/Classifier's comparison modes (TreeEnsemble numbers them 0-5 in this order)
TREE_MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def random_trees(rng, n_trees, depth, n_features, n_targets, modes=("BRANCH_LEQ",), missing=False, per_leaf=1,
                 grid=None):
    """``n_trees`` trees of depth ``depth`` at most (a branch stops early with
    probability 1/4); each leaf has weights in (0.05, 1) for ``per_leaf`` distinct
    targets; thresholds rounded to 0.01, or drawn from ``grid`` (so that EQ and NEQ
    meet data drawn from it); ``missing``: half the branches send NaN true."""
    trees = []
    for _ in range(n_trees):
        nodes = []

        def grow(d):
            i = len(nodes)
            nodes.append(None)
            if d == 0 or (d < depth and rng.random() < 0.25):
                targets = rng.choice(n_targets, size=min(per_leaf, n_targets), replace=False)
                nodes[i] = dict(mode="LEAF", weights=[(int(t), float(rng.uniform(0.05, 1.0))) for t in targets])
                return i
            value = float(rng.choice(grid)) if grid is not None else float(np.round(rng.normal(), 2))
            nodes[i] = dict(mode=str(rng.choice(modes)), feature=int(rng.integers(n_features)), value=value,
                            missing=int(missing and rng.random() < 0.5))
            nodes[i]["true"] = grow(d - 1)
            nodes[i]["false"] = grow(d - 1)
            return i

        grow(depth)
        trees.append(nodes)
    return trees


def tree_attrs_v3(trees, prefix):
    """TreeEnsembleRegressor's (``prefix`` "target") or TreeEnsembleClassifier's
    ("class") node and weight attributes."""
    keys = ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values", "nodes_truenodeids",
            "nodes_falsenodeids", "nodes_missing_value_tracks_true", f"{prefix}_treeids", f"{prefix}_nodeids",
            f"{prefix}_ids", f"{prefix}_weights")
    a = {k: [] for k in keys}
    for t, nodes in enumerate(trees):
        for i, n in enumerate(nodes):
            for k, v in (("treeids", t), ("nodeids", i), ("modes", n["mode"]), ("featureids", n.get("feature", 0)),
                         ("values", n.get("value", 0.0)), ("truenodeids", n.get("true", 0)),
                         ("falsenodeids", n.get("false", 0)), ("missing_value_tracks_true", n.get("missing", 0))):
                a[f"nodes_{k}"].append(v)
            for target, w in n.get("weights", []):
                a[f"{prefix}_treeids"].append(t)
                a[f"{prefix}_nodeids"].append(i)
                a[f"{prefix}_ids"].append(target)
                a[f"{prefix}_weights"].append(w)
    return a


def tree_attrs_v5(trees, n_targets, members=None):
    """TreeEnsemble's (ai.onnx.ml 5) attributes; each leaf must have one weight.
    ``members``: {(tree, node): [values]} turns those branches into set-membership
    tests."""
    code = {m: i for i, m in enumerate(TREE_MODES)}
    cols = {k: [] for k in ("feats", "splits", "modes", "tids", "fids", "tleaf", "fleaf", "miss", "roots", "ltarget",
                            "lweight", "members")}
    for t, nodes in enumerate(trees):
        inner = [i for i, n in enumerate(nodes) if n["mode"] != "LEAF"]
        leaves = [i for i, n in enumerate(nodes) if n["mode"] == "LEAF"]
        pos = {i: len(cols["feats"]) + k for k, i in enumerate(inner)}
        lpos = {i: len(cols["ltarget"]) + k for k, i in enumerate(leaves)}
        for i in inner:
            n = nodes[i]
            member = (members or {}).get((t, i))
            cols["feats"].append(n["feature"])
            cols["splits"].append(n["value"])
            cols["modes"].append(6 if member is not None else code[n["mode"]])
            cols["miss"].append(n["missing"])
            if member is not None:
                cols["members"] += list(member) + [np.nan]
            for side, ids, is_leaf in (("true", "tids", "tleaf"), ("false", "fids", "fleaf")):
                c = n[side]
                cols[ids].append(lpos[c] if c in lpos else pos[c])
                cols[is_leaf].append(int(c in lpos))
        for i in leaves:
            (target, w), = nodes[i]["weights"]
            cols["ltarget"].append(target)
            cols["lweight"].append(w)
        cols["roots"].append(pos[0])
    def tensor(values, dtype):
        return numpy_helper.from_array(np.array(values, dtype))

    attrs = dict(nodes_featureids=cols["feats"], nodes_splits=tensor(cols["splits"], np.float32),
                 nodes_modes=tensor(cols["modes"], np.uint8),
                 nodes_truenodeids=cols["tids"], nodes_falsenodeids=cols["fids"], nodes_trueleafs=cols["tleaf"],
                 nodes_falseleafs=cols["fleaf"], nodes_missing_value_tracks_true=cols["miss"],
                 leaf_targetids=cols["ltarget"], leaf_weights=tensor(cols["lweight"], np.float32),
                 tree_roots=cols["roots"], n_targets=n_targets)
    if cols["members"]:
        attrs["membership_values"] = tensor(cols["members"], np.float32)
    return attrs


def ml_model(op, attrs, n_features, outputs, opset=3, dtype=TensorProto.FLOAT, batch=40):
    """A model of one ``op`` node (domain ai.onnx.ml at ``opset``) reading ``X``
    ``[batch, n_features]``; ``outputs``: ``(name, ONNX type)`` pairs."""
    node = helper.make_node(op, ["X"], [name for name, _ in outputs], domain="ai.onnx.ml", name="forest", **attrs)
    graph = helper.make_graph([node], "m", [helper.make_tensor_value_info("X", dtype, [batch, n_features])],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", opset)]
    return helper.make_model(graph, opset_imports=opsets)


def forest_model(n_trees=100, depth=8, n_features=20, n_targets=1, batch=1, seed=0):
    """``(model, feeds)``: a TreeEnsembleRegressor of ``n_trees`` random trees of
    depth ``depth`` at most (thresholds drawn like the data, standard normal; a
    weight for every target per leaf, averaged), as a random forest of
    scikit-learn exports, on ``batch`` rows of ``n_features`` features."""
    rng = np.random.default_rng(seed)
    trees = random_trees(rng, n_trees, depth, n_features, n_targets, per_leaf=n_targets)
    attrs = dict(tree_attrs_v3(trees, "target"), n_targets=n_targets, aggregate_function="AVERAGE")
    model = ml_model("TreeEnsembleRegressor", attrs, n_features, [("Y", TensorProto.FLOAT)], opset=1, batch=batch)
    return model, {"X": rng.standard_normal((batch, n_features), dtype=np.float32)}


__all__ = ["GAINS", "LIGHT_DIR", "TREE_MODES", "bfloat16_model", "data_inputs", "decoder_layer_model",
           "encoder_layer_model", "float16_model", "forest_model", "light_model", "ml_model", "mlp_model",
           "random_trees", "randomize_weights", "tree_attrs_v3", "tree_attrs_v5"]
