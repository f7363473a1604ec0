"""Random decision-tree ensembles written as ONNX-ML models, for the tests of the
tree-ensemble converters (``test_onnx_ml.py``): a tree is a list of node dicts
(``mode`` a BRANCH_* name or LEAF; a branch has ``feature``, ``value``, ``true``,
``false``, ``missing``; a leaf has ``weights``, a list of ``(target, weight)``),
node ``i`` at position ``i`` and the root at 0."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


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


def v3_attrs(trees, prefix):
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


def v5_attrs(trees, n_targets, members=None):
    """TreeEnsemble's (ai.onnx.ml 5) attributes; each leaf must have one weight.
    ``members``: {(tree, node): [values]} turns those branches into set-membership
    tests."""
    code = {m: i for i, m in enumerate(MODES)}
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


def model(op, attrs, n_features, outputs, opset=3, dtype=TensorProto.FLOAT, batch=40):
    """A model of one ``op`` node (domain ai.onnx.ml at ``opset``) reading ``X``
    ``[batch, n_features]``; ``outputs``: ``(name, ONNX type)`` pairs."""
    node = helper.make_node(op, ["X"], [name for name, _ in outputs], domain="ai.onnx.ml", name="forest", **attrs)
    graph = helper.make_graph([node], "m", [helper.make_tensor_value_info("X", dtype, [batch, n_features])],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", opset)]
    return helper.make_model(graph, opset_imports=opsets)
