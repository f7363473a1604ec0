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
from tecc.graph.testing import TREE_MODES, ml_model, random_trees, tree_attrs_v3, tree_attrs_v5  # noqa: E402
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
    trees = random_trees(rng, 5, 4, NF, 3, modes=TREE_MODES, missing=True, per_leaf=3, grid=[-0.5, 0.0, 0.5])
    attrs = tree_attrs_v3(trees, "target")
    attrs.update(n_targets=3, aggregate_function=aggregate, post_transform=post,
                 base_values=[0.0] * 3 if post == "PROBIT" else [0.1, -0.2, 0.3])
    m = ml_model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1)
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
    attrs = tree_attrs_v3([nodes, nodes], "target")
    attrs.update(n_targets=3, aggregate_function=aggregate, base_values=[0.1, -0.2, 0.3])
    m = ml_model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1, batch=3)
    x = np.array([[-1, 0, 0, 0], [1, 0, 0, 0], [np.nan, 0, 0, 0]], "float32")
    top = {"SUM": (2.1, 3.8), "AVERAGE": (1.1, 1.8), "MIN": (1.1, 1.8), "MAX": (1.1, 1.8)}[aggregate]
    want = np.array([[top[0], -0.2, 0.3], [0.1, top[1], 0.3], [0.1, top[1], 0.3]], "float32")
    np.testing.assert_allclose(tecc_outputs(m, {"X": x})[0], want, rtol=1e-6)
    if aggregate in ("SUM", "AVERAGE"):
        assert_same(tecc_outputs(m, {"X": x}), ReferenceEvaluator(m).run(None, {"X": x}))


def test_regressor_with_double_thresholds_and_input_matches_onnxruntime():
    rng = np.random.default_rng(3)
    attrs = tree_attrs_v3(random_trees(rng, 4, 5, NF, 2, modes=TREE_MODES, missing=True, per_leaf=2), "target")
    attrs["nodes_values_as_tensor"] = numpy_helper.from_array(np.array(attrs.pop("nodes_values"), np.float64))
    attrs["target_weights_as_tensor"] = numpy_helper.from_array(np.array(attrs.pop("target_weights"), np.float64))
    attrs.update(n_targets=2)
    m = ml_model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=3, dtype=TensorProto.DOUBLE)
    x = data(4).astype("float64")
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))


def _classifier(seed, n_classes, binary, post, n_trees=4, base=True):
    rng = np.random.default_rng(seed)
    trees = random_trees(rng, n_trees, 3, NF, 1 if binary else n_classes, modes=TREE_MODES, missing=True,
                         per_leaf=1 if binary else n_classes)
    if post == "PROBIT":  # scores in (0, 1): probabilities
        for n in (n for t in trees for n in t if n["mode"] == "LEAF"):
            n["weights"] = [(c, w / (len(n["weights"]) + 0.5) / n_trees) for c, w in n["weights"]]
    attrs = tree_attrs_v3(trees, "class")
    attrs.update(classlabels_int64s=[7, 3, 9][:n_classes], post_transform=post)
    if base and post != "PROBIT":
        attrs["base_values"] = [0.05] * (1 if binary else n_classes)
    return ml_model("TreeEnsembleClassifier", attrs, NF, CLASSIFIER, opset=1)


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
    trees = random_trees(rng, 5, 4, NF, 3, modes=TREE_MODES, missing=True)
    m = ml_model("TreeEnsemble", dict(tree_attrs_v5(trees, 3), aggregate_function=aggregate), NF, REGRESSOR, opset=5)
    x = data(8)
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))


@pytest.mark.parametrize("code, name", [(1, "SOFTMAX"), (2, "LOGISTIC"), (3, "SOFTMAX_ZERO")])
def test_tree_ensemble_v5_post_transform_codes_are_onnx_s(code, name):
    """ONNX numbers TreeEnsemble's post transforms NONE 0, SOFTMAX 1, LOGISTIC 2:
    tecc reads them so; onnxruntime (1.2x) reads 1 as LOGISTIC and 2 as SOFTMAX,
    the older operators' order -- so the same model with those two swapped is what
    it computes."""
    rng = np.random.default_rng(20 + code)
    attrs = tree_attrs_v5(random_trees(rng, 4, 4, NF, 3, modes=TREE_MODES, missing=True), 3)
    m = ml_model("TreeEnsemble", dict(attrs, post_transform=code), NF, REGRESSOR, opset=5)
    ort_code = {1: 2, 2: 1}.get(code, code)
    x = data(9)
    want = ort_outputs(ml_model("TreeEnsemble", dict(attrs, post_transform=ort_code), NF, REGRESSOR, opset=5), x)
    assert_same(tecc_outputs(m, {"X": x}), want)


def test_tree_ensemble_v5_set_membership_matches_onnx_reference():
    """Set-membership branches (read as chains of EQ tests) on data that hits
    their members, in two trees, one set empty."""
    rng = np.random.default_rng(30)
    grid = [0.0, 1.0, 2.0, 3.0]
    trees = random_trees(rng, 2, 3, NF, 2, grid=grid)
    inner = [(t, i) for t, nodes in enumerate(trees) for i, n in enumerate(nodes) if n["mode"] != "LEAF"]
    members = {inner[0]: [1.0, 3.0], inner[-1]: [2.0], inner[1]: []} if len(inner) > 2 else {inner[0]: [1.0, 3.0]}
    m = ml_model("TreeEnsemble", tree_attrs_v5(trees, 2, members), NF, REGRESSOR, opset=5)
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
    attrs = tree_attrs_v3([nodes], "target")
    attrs.update(n_targets=1)
    m = ml_model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1)
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
    attrs = tree_attrs_v3(random_trees(rng, 2, 3, NF, 1), "target")
    attrs.update(n_targets=1)
    mutate(attrs)
    return ml_model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1)


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
    attrs = tree_attrs_v3([nodes], "target")
    attrs.update(n_targets=1)
    with pytest.raises(OnnxImportError, match=r"is its own descendant: the trees' nodes_truenodeids / "
                                              r"nodes_falsenodeids make a cycle"):
        from_onnx(ml_model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=1))


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
    attrs = tree_attrs_v5(random_trees(rng, 2, 3, NF, 2), 2)
    bad = dict(attrs, tree_roots=[0, 99])
    with pytest.raises(OnnxImportError, match=r"TreeEnsemble node 'forest': tree_roots holds 99, but there are"):
        from_onnx(ml_model("TreeEnsemble", bad, NF, REGRESSOR, opset=5))
    bad = dict(attrs, post_transform=7)
    with pytest.raises(OnnxImportError, match=r"post_transform is 7; it takes 0 \(NONE\), 1 \(SOFTMAX\), 2 "
                                              r"\(LOGISTIC\)"):
        from_onnx(ml_model("TreeEnsemble", bad, NF, REGRESSOR, opset=5))
    modes = numpy_helper.to_array(attrs["nodes_modes"]).copy()
    modes[0] = 6  # set membership without membership_values
    with pytest.raises(OnnxImportError, match=r"node 0 tests set membership but the node has no membership_values"):
        from_onnx(ml_model("TreeEnsemble", dict(attrs, nodes_modes=numpy_helper.from_array(modes)), NF, REGRESSOR,
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


# --- linear models, feature transforms, LabelEncoder --------------------------------------------------
def _one_node(op, inputs, outputs, opset=1, name="ml", **attrs):
    """A model of one ai.onnx.ml node: ``inputs`` / ``outputs`` are (name, ONNX type, shape) triples."""
    node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], domain="ai.onnx.ml", name=name,
                            **attrs)
    graph = helper.make_graph([node], "m", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", opset)]
    return helper.make_model(graph, opset_imports=opsets)


def _check_both(m, feed, reference=True, ort=True, cuda=True):
    want = None
    if ort:
        ort_ = pytest.importorskip("onnxruntime")
        want = ort_.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)
    if reference:
        ref = ReferenceEvaluator(m).run(None, feed)
        if want is not None:
            assert_same(ref, want)
        want = ref
    assert_same(tecc_outputs(m, feed), want)
    if cuda:
        assert_same(tecc_outputs(m, feed, target="cuda"), want)


F32, I64 = TensorProto.FLOAT, TensorProto.INT64


@pytest.mark.parametrize("targets, post", [(1, "NONE"), (3, "NONE"), (2, "LOGISTIC")])
def test_linear_regressor(targets, post):
    rng = np.random.default_rng(targets)
    coef = np.round(rng.normal(size=targets * 5), 3).tolist()
    m = _one_node("LinearRegressor", [("X", F32, [6, 5])], [("Y", F32, None)], coefficients=coef,
                  intercepts=np.round(rng.normal(size=targets), 3).tolist(), targets=targets, post_transform=post)
    _check_both(m, {"X": rng.normal(size=(6, 5)).astype("float32")}, reference=post == "NONE", cuda=targets == 3)


@pytest.mark.parametrize("n_classes, rows, post", [(3, 3, "NONE"), (3, 3, "SOFTMAX"), (2, 1, "NONE"),
                                                   (2, 1, "LOGISTIC"), (4, 4, "SOFTMAX_ZERO")])
def test_linear_classifier(n_classes, rows, post):
    """Several classes, and binary (one row of coefficients: scores [-s, s], as
    ONNX's reference has them -- onnxruntime writes [1 - s, s] without a logistic
    transform, with the same labels), as scikit-learn's linear models export them."""
    rng = np.random.default_rng(10 * n_classes + rows + len(post))
    m = _one_node("LinearClassifier", [("X", F32, [7, 4])], [("label", I64, None), ("scores", F32, None)],
                  coefficients=np.round(rng.normal(size=rows * 4), 3).tolist(),
                  intercepts=np.round(rng.normal(size=rows), 3).tolist(), classlabels_ints=[5, 8, 2, 9][:n_classes],
                  post_transform=post)
    binary_scores = rows == 1 and post != "LOGISTIC"
    _check_both(m, {"X": rng.normal(size=(7, 4)).astype("float32")}, ort=not binary_scores, cuda=post == "SOFTMAX")


def test_scaler_normalizer_imputer_binarizer_chain():
    """A preprocessing pipeline: Imputer (NaN -> per-feature values), Scaler,
    Normalizer (L2, and L1 on the same input), Binarizer."""
    x = helper.make_tensor_value_info("X", F32, [6, 3])
    nodes = [helper.make_node("Imputer", ["X"], ["I"], domain="ai.onnx.ml", imputed_value_floats=[1.0, -2.0, 0.5],
                              replaced_value_float=float("nan")),
             helper.make_node("Scaler", ["I"], ["S"], domain="ai.onnx.ml", offset=[0.1, 0.2, 0.3],
                              scale=[2.0, 2.0, 0.5]),
             helper.make_node("Normalizer", ["S"], ["L2"], domain="ai.onnx.ml", norm="L2"),
             helper.make_node("Normalizer", ["S"], ["L1"], domain="ai.onnx.ml", norm="L1"),
             helper.make_node("Binarizer", ["S"], ["B"], domain="ai.onnx.ml", threshold=0.5)]
    outs = [helper.make_tensor_value_info(n, F32, None) for n in ("L2", "L1", "B")]
    m = helper.make_model(helper.make_graph(nodes, "m", [x], outs),
                          opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 1)])
    feed = {"X": np.random.default_rng(0).normal(size=(6, 3)).astype("float32")}
    feed["X"][[1, 4], [0, 2]] = np.nan
    feed["X"][3] = [0.1, 0.2, 0.3]  # a row the scaler makes zero: the normalizers leave it zero
    _check_both(m, feed)
    # one scale for every feature (ONNX's reference broadcasts it; onnxruntime wants one per feature)
    m.graph.node[1].attribute[1].CopyFrom(helper.make_attribute("scale", [2.0]))
    _check_both(m, feed, ort=False, cuda=False)


def test_normalizer_max_divides_by_the_largest_magnitude():
    """MAX: each row over its largest absolute value, as scikit-learn's Normalizer
    and ONNX's reference compute it (onnxruntime divides by the largest value, so
    a row whose largest magnitude is negative differs)."""
    m = _one_node("Normalizer", [("X", F32, [3, 3])], [("Y", F32, None)], norm="MAX")
    x = np.array([[1.0, -4.0, 2.0], [0.5, 0.25, -0.1], [0.0, 0.0, 0.0]], "float32")
    want = np.array([[0.25, -1.0, 0.5], [1.0, 0.5, -0.2], [0.0, 0.0, 0.0]], "float32")
    np.testing.assert_allclose(ReferenceEvaluator(m).run(None, {"X": x})[0], want, rtol=1e-6)
    _check_both(m, {"X": x}, ort=False)


def test_imputer_of_int64s():
    m = _one_node("Imputer", [("X", I64, [3, 2])], [("Y", I64, None)], imputed_value_int64s=[7, 9],
                  replaced_value_int64=-1)
    _check_both(m, {"X": np.array([[1, -1], [-1, -1], [3, 4]], "int64")}, cuda=False)


def test_feature_vectorizer_of_one_row():
    """1-D inputs are one row each (onnxruntime's reading; ONNX's reference makes a
    [C] input a column)."""
    m = _one_node("FeatureVectorizer", [("A", F32, [3]), ("B", F32, [2])], [("Y", F32, None)],
                  inputdimensions=[3, 4])
    _check_both(m, {"A": np.arange(3, dtype="float32"), "B": np.ones(2, "float32")}, reference=False, cuda=False)


@pytest.mark.parametrize("ints", [False, True], ids=["floats", "int64s"])
def test_imputer_and_feature_vectorizer(ints):
    """Imputer of int64s or floats, and FeatureVectorizer of a [N, 2], a [N, 1] and
    a [N, 3] cut to 2 columns (all one type: onnxruntime's kernel wants that), its
    output float32 (with int64 inputs ONNX's reference keeps int64: against
    onnxruntime)."""
    t = I64 if ints else F32
    ints_ = helper.make_tensor_value_info("A", t, [4, 2])
    col = helper.make_tensor_value_info("B", t, [4, 1])
    wide = helper.make_tensor_value_info("C", t, [4, 3])
    impute = dict(imputed_value_int64s=[7], replaced_value_int64=-1) if ints else \
        dict(imputed_value_floats=[7.0, 8.0], replaced_value_float=-1.0)
    nodes = [helper.make_node("Imputer", ["A"], ["Ai"], domain="ai.onnx.ml", **impute),
             helper.make_node("FeatureVectorizer", ["Ai", "B", "C"], ["Y"], domain="ai.onnx.ml",
                              inputdimensions=[2, 1, 2])]  # C cut to 2 columns
    m = helper.make_model(helper.make_graph(nodes, "m", [ints_, col, wide], [helper.make_tensor_value_info("Y", F32,
                                                                                                          None)]),
                          opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 1)])
    dt = "int64" if ints else "float32"
    feed = {"A": np.array([[1, -1], [-1, -1], [3, 4], [0, 2]], dt), "B": np.arange(4, dtype=dt).reshape(4, 1),
            "C": np.arange(12, dtype=dt).reshape(4, 3)}
    _check_both(m, feed, reference=not ints)


@pytest.mark.parametrize("case", ["int_to_int", "float_to_int", "int_to_float_default", "tensor"])
def test_label_encoder_of_numbers(case):
    """Keys of int64s, floats (a NaN key, which no element meets) or a tensor to values of int64s, floats
    or int16s, with defaults.  (A repeated key: its last value, as ONNX's
    reference has it; onnxruntime takes the first.)"""
    if case == "int_to_int":
        attrs, x, xt, yt = dict(keys_int64s=[3, 1, 7], values_int64s=[10, 20, 30], default_int64=-5), \
            np.array([[3, 1], [2, 7]], "int64"), I64, I64
    elif case == "float_to_int":
        attrs, x, xt, yt = dict(keys_floats=[0.5, float("nan"), -1.0], values_int64s=[1, 2, 3]), \
            np.array([0.5, np.nan, 2.0, -1.0], "float32"), F32, I64
    elif case == "int_to_float_default":
        attrs, x, xt, yt = dict(keys_int64s=[4, 5], values_floats=[0.25, 0.75]), np.array([5, 4, 6], "int64"), \
            I64, F32
    else:
        attrs = dict(keys_tensor=numpy_helper.from_array(np.array([1, 2], np.int64)),
                     values_tensor=numpy_helper.from_array(np.array([7, 8], np.int16)),
                     default_tensor=numpy_helper.from_array(np.array([-3], np.int16)))
        x, xt, yt = np.array([2, 9, 1], "int64"), I64, TensorProto.INT16
    m = _one_node("LabelEncoder", [("X", xt, list(x.shape))], [("Y", yt, None)], opset=4 if case == "tensor" else 2,
                  **attrs)
    # a NaN key matches nothing; onnxruntime has no LabelEncoder-4 (its tensor attributes)
    _check_both(m, {"X": x}, ort=case != "tensor", cuda=case == "int_to_int")
    if case == "int_to_int":
        attrs.update(keys_int64s=[3, 1, 7, 3], values_int64s=[10, 20, 30, 40])
        m = _one_node("LabelEncoder", [("X", xt, list(x.shape))], [("Y", yt, None)], opset=2, **attrs)
        _check_both(m, {"X": x}, ort=False, cuda=False)


@pytest.mark.parametrize("op, attrs, message", [
    ("LinearClassifier", dict(coefficients=[1.0] * 8, classlabels_ints=[0, 1, 2]),
     r"coefficients holds 2 rows of the input's 4 features but there are 3 class labels"),
    ("LinearClassifier", dict(coefficients=[1.0] * 4, classlabels_strings=["a", "b"]),
     r"its class labels are strings \(classlabels_strings\)"),
    ("LinearRegressor", dict(coefficients=[1.0] * 6), r"coefficients has 6 values, not a whole number of rows of the "
                                                      r"input's 4 features"),
    ("LinearRegressor", dict(coefficients=[1.0] * 8, targets=1), r"coefficients holds 2 rows of the input's 4 "
                                                                 r"features, one per target is 1"),
    ("Scaler", dict(offset=[1.0, 2.0]), r"offset has 2 values; it takes one, or one per feature \(4\)"),
    ("Normalizer", dict(norm="L3"), r"norm is 'L3'; it takes MAX, L1 or L2"),
    ("Imputer", dict(), r"it sets neither imputed_value_floats nor imputed_value_int64s"),
    ("LabelEncoder", dict(keys_strings=["a"], values_int64s=[1]), r"its keys are strings \(keys_strings\)"),
    ("LabelEncoder", dict(keys_int64s=[1, 2], values_int64s=[1]), r"keys_int64s has 2 entries and values_int64s 1"),
])
def test_ml_operator_errors(op, attrs, message):
    outs = [("label", I64, None), ("scores", F32, None)] if op == "LinearClassifier" else [("Y", F32, None)]
    m = _one_node(op, [("X", F32, [3, 4])], outs, opset=2 if op == "LabelEncoder" else 1, **attrs)
    with pytest.raises(OnnxImportError, match=rf"{op} node 'ml': {message}"):
        from_onnx(m)


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "RBF", "SIGMOID", "linear_svm", "one_class"])
def test_svm_regressor(kernel):
    rng = np.random.default_rng(len(kernel))
    x = rng.normal(size=(6, 3)).astype("float32")
    if kernel == "linear_svm":  # no support vectors: coefficients are the weights
        attrs = dict(coefficients=[0.5, -1.0, 2.0], rho=[0.25], n_supports=0, kernel_type="LINEAR",
                     kernel_params=[0.0, 0.0, 0.0])
    else:
        sv = np.round(rng.normal(size=(4, 3)), 3)
        attrs = dict(coefficients=np.round(rng.normal(size=4), 3).tolist(), rho=[0.1], n_supports=4,
                     support_vectors=sv.reshape(-1).tolist(), kernel_type="RBF" if kernel == "one_class" else kernel,
                     kernel_params=[0.3, 0.5, 3.0], one_class=int(kernel == "one_class"))
    m = _one_node("SVMRegressor", [("X", F32, [6, 3])], [("Y", F32, None)], **attrs)
    _check_both(m, {"X": x}, cuda=kernel in ("RBF", "POLY"))


def test_one_hot_encoder():
    m = _one_node("OneHotEncoder", [("X", I64, [2, 3])], [("Y", F32, None)], cats_int64s=[4, 1, 9], zeros=1)
    _check_both(m, {"X": np.array([[1, 9, 5], [4, 4, 1]], "int64")})
    m = _one_node("OneHotEncoder", [("X", I64, [2, 3])], [("Y", F32, None)], name="ohe", cats_int64s=[4, 1],
                  zeros=0)
    with pytest.raises(OnnxImportError, match=r"OneHotEncoder node 'ohe': zeros=0 makes an element of no category a "
                                              r"run-time error, which tecc's kernels do not raise: set zeros=1"):
        from_onnx(m)


def _svc(rng, n_classes, kernel, post="NONE", proba=False):
    per = [2, 3, 2, 1][:n_classes]
    n = sum(per)
    attrs = dict(classlabels_ints=[3, 5, 7, 9][:n_classes], vectors_per_class=per,
                 support_vectors=np.round(rng.normal(size=n * 3), 3).tolist(),
                 coefficients=np.round(rng.normal(size=(n_classes - 1) * n), 3).tolist(),
                 rho=np.round(rng.normal(size=n_classes * (n_classes - 1) // 2), 3).tolist(), kernel_type=kernel,
                 kernel_params=[0.4, 0.1, 2.0], post_transform=post)
    if proba:
        attrs.update(prob_a=[-1.5], prob_b=[0.2])
    return _one_node("SVMClassifier", [("X", F32, [9, 3])], [("label", I64, None), ("scores", F32, None)], **attrs)


@pytest.mark.parametrize("n_classes, kernel, post", [(2, "RBF", "NONE"), (3, "RBF", "LOGISTIC"), (4, "POLY", "NONE"),
                                                     (3, "LINEAR", "SOFTMAX"), (2, "SIGMOID", "LOGISTIC")])
def test_svm_classifier_one_vs_one(n_classes, kernel, post):
    """libsvm's one-vs-one votes: labels, and the pairs' scores."""
    m = _svc(np.random.default_rng(n_classes + len(kernel)), n_classes, kernel, post)
    _check_both(m, {"X": np.random.default_rng(1).normal(size=(9, 3)).astype("float32")}, cuda=n_classes == 3)


def test_linear_svm_classifier_of_three_classes_matches_onnxruntime():
    rng = np.random.default_rng(2)
    m = _one_node("SVMClassifier", [("X", F32, [9, 3])], [("label", I64, None), ("scores", F32, None)],
                  classlabels_ints=[1, 4, 6], coefficients=np.round(rng.normal(size=9), 3).tolist(), rho=[0.2],
                  kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0])
    _check_both(m, {"X": rng.normal(size=(9, 3)).astype("float32")}, reference=False)


def test_svm_classifier_platt_probabilities_of_two_classes():
    """The coupled probability of two classes is the pair's own sigmoid: exact
    here, within libsvm's stopping tolerance (0.005 / k) in onnxruntime."""
    m = _svc(np.random.default_rng(3), 2, "RBF", proba=True)
    x = np.random.default_rng(4).normal(size=(9, 3)).astype("float32")
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})
    got = tecc_outputs(m, {"X": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], atol=0.0025)
    np.testing.assert_allclose(got[1].sum(axis=1), 1.0, rtol=1e-6)
    with pytest.raises(OnnxImportError, match=r"it gives Platt probabilities \(prob_a\) for 3 classes; tecc computes "
                                              r"them for two classes"):
        from_onnx(_svc(np.random.default_rng(5), 3, "RBF", proba=True))


def test_two_class_classifier_weighting_only_class_1_scores_as_onnxruntime():
    """Every weight for class 1: class 0 scores its base value (0), as onnxruntime
    has it (ONNX's reference drops the weights); the label is the larger score's."""
    nodes = [dict(mode="BRANCH_LEQ", feature=0, value=0.0, missing=0, true=1, false=2),
             dict(mode="LEAF", weights=[(1, 0.2)]), dict(mode="LEAF", weights=[(1, 0.9)])]
    attrs = tree_attrs_v3([nodes], "class")
    attrs.update(classlabels_int64s=[4, 6], post_transform="LOGISTIC")
    m = ml_model("TreeEnsembleClassifier", attrs, NF, CLASSIFIER, opset=1, batch=3)
    x = np.array([[-1, 0, 0, 0], [1, 0, 0, 0], [np.nan, 0, 0, 0]], "float32")
    got = tecc_outputs(m, {"X": x})
    np.testing.assert_allclose(got[1], ort_outputs(m, x)[1], rtol=1e-6)
    np.testing.assert_array_equal(got[0], [6, 6, 6])


def test_zipmap_is_refused_with_what_to_do():
    """scikit-learn's classifiers end in ZipMap (a sequence of maps) unless exported
    without it: the error says how."""
    m = _classifier(44, 3, False, "NONE")
    m.graph.node.append(helper.make_node("ZipMap", ["scores"], ["maps"], domain="ai.onnx.ml", name="zip",
                                         classlabels_int64s=[7, 3, 9]))
    m.graph.output.append(helper.make_tensor_value_info("maps", TensorProto.UNDEFINED, None))
    with pytest.raises(OnnxImportError, match=r"ZipMap \(domain 'ai.onnx.ml'\) in node 'zip' \(it turns the class "
                                              r"scores into a sequence of maps; export the classifier without it "
                                              r"\(skl2onnx: options=\{'zipmap': False\}\)"):
        from_onnx(m)


# --- random ensembles against onnxruntime (hypothesis) --------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=12, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n_trees=st.integers(1, 12), depth=st.integers(1, 9),
       n_targets=st.integers(1, 4), aggregate=st.sampled_from(["SUM", "AVERAGE", "MIN", "MAX"]),
       modes=st.sampled_from([("BRANCH_LEQ",), ("BRANCH_LT", "BRANCH_GTE"), tuple(TREE_MODES)]),
       missing=st.booleans(), batch=st.sampled_from([1, 5, 33]), float64=st.booleans())
def test_random_regressors_match_onnxruntime(seed, n_trees, depth, n_targets, aggregate, modes, missing, batch,
                                             float64):
    """Random forests -- tree count, depth, targets, aggregate, comparison modes,
    NaN handling, batch, float32 or float64 thresholds -- on data with NaNs and
    values that meet the splits, against onnxruntime (every leaf weights every
    target, as scikit-learn's do)."""
    rng = np.random.default_rng(seed)
    grid = [-1.0, -0.5, 0.0, 0.5, 1.0]
    trees = random_trees(rng, n_trees, depth, NF, n_targets, modes=modes, missing=missing, per_leaf=n_targets,
                         grid=grid)
    attrs = dict(tree_attrs_v3(trees, "target"), n_targets=n_targets, aggregate_function=aggregate)
    if float64:
        attrs["nodes_values_as_tensor"] = numpy_helper.from_array(np.array(attrs.pop("nodes_values"), np.float64))
        attrs["target_weights_as_tensor"] = numpy_helper.from_array(np.array(attrs.pop("target_weights"),
                                                                             np.float64))
    dtype = TensorProto.DOUBLE if float64 else TensorProto.FLOAT
    m = ml_model("TreeEnsembleRegressor", attrs, NF, REGRESSOR, opset=3, dtype=dtype, batch=batch)
    x = rng.choice(grid + [0.25, -0.75, np.nan], size=(batch, NF)).astype("float64" if float64 else "float32")
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))


@settings(max_examples=8, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n_trees=st.integers(1, 10), depth=st.integers(1, 8),
       n_targets=st.integers(1, 3), aggregate=st.integers(0, 3), missing=st.booleans())
def test_random_tree_ensembles_v5_match_onnxruntime(seed, n_trees, depth, n_targets, aggregate, missing):
    rng = np.random.default_rng(seed)
    grid = [-1.0, 0.0, 1.0]
    trees = random_trees(rng, n_trees, depth, NF, n_targets, modes=TREE_MODES, missing=missing, grid=grid)
    attrs = dict(tree_attrs_v5(trees, n_targets), aggregate_function=aggregate)
    m = ml_model("TreeEnsemble", attrs, NF, REGRESSOR, opset=5, batch=17)
    x = rng.choice(grid + [0.5, np.nan], size=(17, NF)).astype("float32")
    assert_same(tecc_outputs(m, {"X": x}), ort_outputs(m, x))
