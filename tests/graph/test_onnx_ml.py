"""ONNX-ML's operators (domain ``ai.onnx.ml``): random tree ensembles --
TreeEnsembleRegressor for every aggregate function and post transform, with NaN
features and every comparison mode, against onnxruntime; TreeEnsembleClassifier
(several classes, two, and binary with one column of weights) against ONNX's
reference and onnxruntime; TreeEnsemble (ai.onnx.ml 5) with set membership; float64
thresholds; deep trees; on the C backend and the CUDA emulator -- Binarizer and
ArrayFeatureExtractor; one expected failure per malformed ensemble."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tecc.graph.frontend import OnnxImportError, from_onnx, supported_ops  # noqa: E402
from ml_forest import MODES, model, random_trees, v3_attrs, v5_attrs  # noqa: E402
from ops_run import tecc_outputs  # noqa: E402

NF = 4  # features
REGRESSOR = [("Y", TensorProto.FLOAT)]
CLASSIFIER = [("label", TensorProto.INT64), ("scores", TensorProto.FLOAT)]


def data(seed, nan=True, batch=40):
    x = np.random.default_rng(seed).normal(size=(batch, NF)).astype("float32")
    if nan:
        x[::7, 1] = np.nan
        x[3, :] = np.nan
    return x


def ort_outputs(m, x):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x})


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_the_ml_operators_are_supported():
    ops = supported_ops()
    for op in ("TreeEnsemble", "TreeEnsembleRegressor", "TreeEnsembleClassifier", "Binarizer",
               "ArrayFeatureExtractor"):
        assert f"ai.onnx.ml.{op}" in ops


# the aggregate functions, each with a post transform (and every transform with SUM)
REGRESSOR_CASES = [("SUM", "NONE"), ("AVERAGE", "LOGISTIC"), ("MIN", "SOFTMAX"), ("MAX", "SOFTMAX_ZERO"),
                   ("AVERAGE", "PROBIT"), ("SUM", "SOFTMAX"), ("MIN", "NONE"), ("MAX", "NONE")]


@pytest.mark.parametrize("aggregate, post", REGRESSOR_CASES)
def test_regressor_matches_onnxruntime(aggregate, post):
    """Five trees of depth 4 with every comparison mode, half the branches sending
    NaN true, a weight for each of three targets per leaf (as scikit-learn's are:
    onnxruntime leaves out the base value of a target no tree scores), base values."""
    rng = np.random.default_rng(REGRESSOR_CASES.index((aggregate, post)))
    trees = random_trees(rng, 5, 4, NF, 3, modes=MODES, missing=True, per_leaf=3, grid=[-0.5, 0.0, 0.5])
    attrs = v3_attrs(trees, "target")
    attrs.update(n_targets=3, aggregate_function=aggregate, post_transform=post,
                 base_values=[0.0] * 3 if post == "PROBIT" else [0.1, -0.2, 0.3])
    m = model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1)
    x = data(1)
    x[5:15] = np.random.default_rng(2).choice([-0.5, 0.0, 0.5], size=(10, NF))  # rows that meet EQ and NEQ splits
    want = ort_outputs(m, x)
    assert_same(tecc_outputs(m, {"X": x}), want)
    if aggregate == "SUM" and post == "NONE":
        assert_same(tecc_outputs(m, {"X": x}, target="cuda"), want)


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
def test_a_target_no_tree_scores_is_its_base_value(aggregate):
    """Two trees that score target 0 or 1, never 2: target 2 (and a target the
    row's leaves do not score) is its base value, as ONNX's reference has it for
    SUM and AVERAGE (for MIN and MAX the reference gives +-inf, onnxruntime 0)."""
    nodes = [dict(mode="BRANCH_LEQ", feature=0, value=0.0, missing=0, true=1, false=2),
             dict(mode="LEAF", weights=[(0, 1.0)]), dict(mode="LEAF", weights=[(1, 2.0)])]
    attrs = v3_attrs([nodes, nodes], "target")
    attrs.update(n_targets=3, aggregate_function=aggregate, base_values=[0.1, -0.2, 0.3])
    m = model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1, batch=3)
    x = np.array([[-1, 0, 0, 0], [1, 0, 0, 0], [np.nan, 0, 0, 0]], "float32")
    top = {"SUM": (2.1, 3.8), "AVERAGE": (1.1, 1.8), "MIN": (1.1, 1.8), "MAX": (1.1, 1.8)}[aggregate]
    want = np.array([[top[0], -0.2, 0.3], [0.1, top[1], 0.3], [0.1, top[1], 0.3]], "float32")
    np.testing.assert_allclose(tecc_outputs(m, {"X": x})[0], want, rtol=1e-6)
    if aggregate in ("SUM", "AVERAGE"):
        assert_same(tecc_outputs(m, {"X": x}), ReferenceEvaluator(m).run(None, {"X": x}))


def test_regressor_with_double_thresholds_and_input_matches_onnxruntime():
    rng = np.random.default_rng(3)
    attrs = v3_attrs(random_trees(rng, 4, 5, NF, 2, modes=MODES, missing=True, per_leaf=2), "target")
    attrs["nodes_values_as_tensor"] = numpy_helper.from_array(np.array(attrs.pop("nodes_values"), np.float64))
    attrs["target_weights_as_tensor"] = numpy_helper.from_array(np.array(attrs.pop("target_weights"), np.float64))
    attrs.update(n_targets=2)
    m = model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=3, dtype=TensorProto.DOUBLE)
    x = data(4).astype("float64")
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))


def _classifier(seed, n_classes, binary, post, n_trees=4, base=True):
    rng = np.random.default_rng(seed)
    trees = random_trees(rng, n_trees, 3, NF, 1 if binary else n_classes, modes=MODES, missing=True,
                         per_leaf=1 if binary else n_classes)
    if post == "PROBIT":  # scores in (0, 1): probabilities
        for n in (n for t in trees for n in t if n["mode"] == "LEAF"):
            n["weights"] = [(c, w / (len(n["weights"]) + 0.5) / n_trees) for c, w in n["weights"]]
    attrs = v3_attrs(trees, "class")
    attrs.update(classlabels_int64s=[7, 3, 9][:n_classes], post_transform=post)
    if base and post != "PROBIT":
        attrs["base_values"] = [0.05] * (1 if binary else n_classes)
    return model("TreeEnsembleClassifier", attrs, NF, CLASSIFIER, opset=1)


@pytest.mark.parametrize("n_classes, binary, post", [
    (3, False, "NONE"), (3, False, "SOFTMAX"), (3, False, "PROBIT"), (2, False, "LOGISTIC"),
    (2, False, "SOFTMAX_ZERO"), (2, True, "NONE"), (2, True, "LOGISTIC"), (2, True, "SOFTMAX"), (2, True, "PROBIT"),
])
def test_classifier_matches_onnx_reference(n_classes, binary, post):
    """Labels (custom int64 labels) and scores; with two classes and one column of
    weights (binary), the other class scores 1 - p or -p.  (No NaN features: ONNX's
    reference sends a NaN false at a NEQ split, onnxruntime and tecc true.)"""
    m = _classifier(100 + 10 * n_classes + binary + len(post), n_classes, binary, post)
    x = data(5, nan=False)
    assert_same(tecc_outputs(m, {"X": x}), ReferenceEvaluator(m).run(None, {"X": x}))


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX"])
def test_multiclass_classifier_matches_onnxruntime(post):
    m = _classifier(6, 3, False, post)
    x = data(6)
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))
    if post == "NONE":
        assert_same(tecc_outputs(m, {"X": x}, target="cuda"), ort_outputs(m, x))


def test_binary_classifier_with_logistic_matches_onnxruntime():
    """The gradient-boosting form: one column of weights, LOGISTIC, base value."""
    m = _classifier(7, 2, True, "LOGISTIC")
    x = data(7)
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
def test_tree_ensemble_v5_matches_onnxruntime(aggregate):
    """TreeEnsemble: aggregate AVERAGE / SUM / MIN / MAX (a target no tree scores
    is 0, as onnxruntime has it)."""
    rng = np.random.default_rng(10 + aggregate)
    trees = random_trees(rng, 5, 4, NF, 3, modes=MODES, missing=True)
    m = model("TreeEnsemble", dict(v5_attrs(trees, 3), aggregate_function=aggregate), NF, REGRESSOR, opset=5)
    x = data(8)
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))


@pytest.mark.parametrize("code, name", [(1, "SOFTMAX"), (2, "LOGISTIC"), (3, "SOFTMAX_ZERO")])
def test_tree_ensemble_v5_post_transform_codes_are_onnx_s(code, name):
    """ONNX numbers TreeEnsemble's post transforms NONE 0, SOFTMAX 1, LOGISTIC 2:
    tecc reads them so; onnxruntime (1.2x) reads 1 as LOGISTIC and 2 as SOFTMAX,
    the older operators' order -- so the same model with those two swapped is what
    it computes."""
    rng = np.random.default_rng(20 + code)
    attrs = v5_attrs(random_trees(rng, 4, 4, NF, 3, modes=MODES, missing=True), 3)
    m = model("TreeEnsemble", dict(attrs, post_transform=code), NF, REGRESSOR, opset=5)
    ort_code = {1: 2, 2: 1}.get(code, code)
    x = data(9)
    want = ort_outputs(model("TreeEnsemble", dict(attrs, post_transform=ort_code), NF, REGRESSOR, opset=5), x)
    assert_same(tecc_outputs(m, {"X": x}), want)


def test_tree_ensemble_v5_set_membership_matches_onnx_reference():
    """Set-membership branches (read as chains of EQ tests) on data that hits
    their members, in two trees, one set empty."""
    rng = np.random.default_rng(30)
    grid = [0.0, 1.0, 2.0, 3.0]
    trees = random_trees(rng, 2, 3, NF, 2, grid=grid)
    inner = [(t, i) for t, nodes in enumerate(trees) for i, n in enumerate(nodes) if n["mode"] != "LEAF"]
    members = {inner[0]: [1.0, 3.0], inner[-1]: [2.0], inner[1]: []} if len(inner) > 2 else {inner[0]: [1.0, 3.0]}
    m = model("TreeEnsemble", v5_attrs(trees, 2, members), NF, REGRESSOR, opset=5)
    x = rng.choice(grid, size=(40, NF)).astype("float32")
    want = ReferenceEvaluator(m).run(None, {"X": x})
    assert_same(tecc_outputs(m, {"X": x}), want)
    assert_same(tecc_outputs(m, {"X": x}, target="cuda"), want)


@pytest.mark.parametrize("table", [False, True], ids=["one_mode", "mode_table"])
def test_a_deep_tree_walks_to_its_leaves(table):
    """A chain 300 branches deep (x0 <= -3, -2.98, ...: the leaf tells where it
    stopped; one mode, or two: a mode table): no recursion limit when importing,
    walked by a chain of five kernels of at most 64 steps."""
    depth = 300
    nodes = []
    for k in range(depth):  # branch k at 2k: x0 <= -3 + 0.02 k goes to leaf k (at 2k + 1), else to branch k + 1
        nodes.append(dict(mode="BRANCH_LT" if table and k % 3 == 0 else "BRANCH_LEQ", feature=0,
                          value=-3.0 + 0.02 * k, missing=0, true=2 * k + 1, false=2 * k + 2))
        nodes.append(dict(mode="LEAF", weights=[(0, float(k))]))
    nodes.append(dict(mode="LEAF", weights=[(0, float(depth))]))
    attrs = v3_attrs([nodes], "target")
    attrs.update(n_targets=1)
    m = model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1)
    x = data(11, nan=False) * 2
    want = ort_outputs(m, x)
    assert_same(tecc_outputs(m, {"X": x}), want)
    if table:
        assert_same(tecc_outputs(m, {"X": x}, target="cuda"), want)
    mod, _ = from_onnx(m)
    assert str(mod["main"]).count("tree_traverse_on(") == 4


def test_binarizer_and_array_feature_extractor_with_run_time_indices():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 5])
    idx = helper.make_tensor_value_info("I", TensorProto.INT64, [2])
    nodes = [helper.make_node("Binarizer", ["X"], ["B"], domain="ai.onnx.ml", threshold=0.25),
             helper.make_node("ArrayFeatureExtractor", ["B", "I"], ["Y"], domain="ai.onnx.ml")]
    out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    m = helper.make_model(helper.make_graph(nodes, "m", [x, idx], [out]),
                          opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 1)])
    feed = {"X": np.random.default_rng(0).normal(size=(3, 5)).astype("float32"), "I": np.array([4, 1], "int64")}
    want = ReferenceEvaluator(m).run(None, feed)
    for target in ("llvm", "cuda"):
        assert_same(tecc_outputs(m, feed, target=target), want)


def test_array_feature_extractor_of_a_vector_gives_one_row():
    x = helper.make_tensor_value_info("X", TensorProto.INT64, [6])
    out = helper.make_tensor_value_info("Y", TensorProto.INT64, None)
    idx = numpy_helper.from_array(np.array([[5, 0, 5]], np.int64), "I")
    m = helper.make_model(helper.make_graph(
        [helper.make_node("ArrayFeatureExtractor", ["X", "I"], ["Y"], domain="ai.onnx.ml")], "m", [x], [out],
        initializer=[idx]), opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 1)])
    feed = {"X": np.arange(10, 16, dtype="int64")}
    got = tecc_outputs(m, feed)
    np.testing.assert_array_equal(got[0], [[15, 10, 15]])
    assert_same(got, ReferenceEvaluator(m).run(None, feed))


# --- malformed ensembles: one error each, naming the node and what is wrong ------------------------------
def _regressor(mutate):
    rng = np.random.default_rng(40)
    attrs = v3_attrs(random_trees(rng, 2, 3, NF, 1), "target")
    attrs.update(n_targets=1)
    mutate(attrs)
    return model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1)


def _set(key, index, value):
    def mutate(attrs):
        attrs[key][index] = value
    return mutate


@pytest.mark.parametrize("mutate, message", [
    (_set("nodes_featureids", 0, 9), r"TreeEnsembleRegressor node 'forest': node 0 of tree 0 tests feature 9, but "
                                     r"the input has 4 features"),
    (_set("nodes_truenodeids", 0, 99), r"node 0 of tree 0 points \(nodes_truenodeids\) to node 99, which tree 0 "
                                       r"does not have"),
    (_set("nodes_truenodeids", 0, 0), r"node 0 of tree 0 is its own descendant: the trees' nodes_truenodeids / "
                                      r"nodes_falsenodeids make a cycle"),
    (lambda a: [a[k].append(v) for k, v in (("nodes_treeids", 0), ("nodes_nodeids", 50), ("nodes_modes", "LEAF"),
                                            ("nodes_featureids", 0), ("nodes_values", 0.0), ("nodes_truenodeids", 0),
                                            ("nodes_falsenodeids", 0), ("nodes_missing_value_tracks_true", 0))],
     r"tree 0 has 2 nodes no other node points to; a tree has one root"),
    (_set("nodes_modes", 0, "BRANCH_XX"), r"nodes_modes\[0\] is 'BRANCH_XX'; the modes are LEAF, BRANCH_LEQ"),
    (_set("target_ids", 0, 5), r"a leaf has a weight for target 5, but there are 1 targets"),
    (_set("target_nodeids", 0, 0), r"target_nodeids gives a weight to node 0 of tree 0, which is not a leaf"),
    (lambda a: a["nodes_featureids"].pop(), r"these attributes must have one entry per node, but their lengths "
                                            r"differ"),
    (lambda a: a.update(aggregate_function="MEDIAN"), r"aggregate_function is 'MEDIAN'; it takes one of AVERAGE, "
                                                      r"SUM, MIN, MAX"),
    (lambda a: a.update(base_values=[1.0, 2.0]), r"base_values has 2 entries, one per target or class is 1"),
])
def test_malformed_regressor_is_refused(mutate, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(_regressor(mutate))


def test_a_cycle_is_refused():
    """Branch 1's false child is branch 2, whose false child is branch 1."""
    nodes = [dict(mode="BRANCH_LEQ", feature=0, value=0.0, missing=0, true=1, false=2),
             dict(mode="BRANCH_LEQ", feature=1, value=0.0, missing=0, true=3, false=2),
             dict(mode="BRANCH_LEQ", feature=2, value=0.0, missing=0, true=3, false=1),
             dict(mode="LEAF", weights=[(0, 1.0)])]
    attrs = v3_attrs([nodes], "target")
    attrs.update(n_targets=1)
    with pytest.raises(OnnxImportError, match=r"is its own descendant: the trees' nodes_truenodeids / "
                                              r"nodes_falsenodeids make a cycle"):
        from_onnx(model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1))


def test_string_class_labels_are_refused():
    m = _classifier(42, 3, False, "NONE")
    attrs = m.graph.node[0].attribute
    for a in list(attrs):
        if a.name == "classlabels_int64s":
            attrs.remove(a)
    attrs.append(helper.make_attribute("classlabels_strings", ["a", "b", "c"]))
    with pytest.raises(OnnxImportError, match=r"its class labels are strings \(classlabels_strings\): tecc's tensors "
                                              r"hold numbers"):
        from_onnx(m)


def test_v5_errors():
    rng = np.random.default_rng(43)
    attrs = v5_attrs(random_trees(rng, 2, 3, NF, 2), 2)
    bad = dict(attrs, tree_roots=[0, 99])
    with pytest.raises(OnnxImportError, match=r"TreeEnsemble node 'forest': tree_roots holds 99, but there are"):
        from_onnx(model("TreeEnsemble", bad, NF, REGRESSOR, opset=5))
    bad = dict(attrs, post_transform=7)
    with pytest.raises(OnnxImportError, match=r"post_transform is 7; it takes 0 \(NONE\), 1 \(SOFTMAX\), 2 "
                                              r"\(LOGISTIC\)"):
        from_onnx(model("TreeEnsemble", bad, NF, REGRESSOR, opset=5))
    modes = numpy_helper.to_array(attrs["nodes_modes"]).copy()
    modes[0] = 6  # set membership without membership_values
    with pytest.raises(OnnxImportError, match=r"node 0 tests set membership but the node has no membership_values"):
        from_onnx(model("TreeEnsemble", dict(attrs, nodes_modes=numpy_helper.from_array(modes)), NF, REGRESSOR,
                        opset=5))


def test_array_feature_extractor_index_out_of_range_is_refused():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])
    out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    idx = numpy_helper.from_array(np.array([1, 3], np.int64), "I")
    m = helper.make_model(helper.make_graph(
        [helper.make_node("ArrayFeatureExtractor", ["X", "I"], ["Y"], domain="ai.onnx.ml", name="afe")], "m", [x],
        [out], initializer=[idx]), opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 1)])
    with pytest.raises(OnnxImportError, match=r"ArrayFeatureExtractor node 'afe': indices \[3\] are out of range for "
                                              r"the last axis of the input \(size 3\)"):
        from_onnx(m)
