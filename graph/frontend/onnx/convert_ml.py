"""Converters of ONNX-ML's operators (domain ``ai.onnx.ml``, the classic machine
learning models scikit-learn, XGBoost and LightGBM export): the tree ensembles
(``TreeEnsemble``, ``TreeEnsembleRegressor``, ``TreeEnsembleClassifier``), the
linear models (``LinearRegressor``, ``LinearClassifier``), the feature transforms
(``Scaler``, ``Normalizer``, ``Imputer``, ``Binarizer``, ``FeatureVectorizer``,
``ArrayFeatureExtractor``, ``OneHotEncoder``), the support-vector machines
(``SVMRegressor``, ``SVMClassifier``) and ``LabelEncoder`` of numbers.  Operators of string
tensors (string labels and keys...) and of maps (``ZipMap``, ``DictVectorizer``)
are not among them: tecc's tensors hold numbers.

A tree ensemble becomes node tables (:class:`Tables`: leaves first, then the
branch nodes, every tree in the same tables; read with numpy from either form of
the attributes, TreeEnsemble's set-membership tests written as chains of EQ
tests) and one walk
through them (the graph operator ``tree_traverse``, a chain of them for trees
deeper than one walk takes) that gathers the leaves' weights, then their sum (or
mean, minimum or maximum) over the trees, the base values added and the post
transform applied.  What the trees hold is checked when
importing: a node, feature or target out of range, a cycle, a tree with no
root each get an error naming the node and attribute.

Where onnxruntime and ONNX's reference differ, tecc follows onnxruntime for the
walk (a NaN feature goes where its comparison sends it -- true at a NEQ split --
unless the node sends missing values true) and the operator specification for the
rest: TreeEnsemble's post-transform codes (1 SOFTMAX, 2 LOGISTIC; onnxruntime
swaps them), the base value added to every target, scored or not (onnxruntime
leaves it out of a target no tree's leaf scores), and a two-class classifier's
labels and scores as the reference computes them: the label of the largest
transformed score (onnxruntime, when every weight is positive, labels by the raw
positive score against 0.5).  A two-class classifier whose weights are all for
class 1 scores as onnxruntime does (class 0 its base value; the reference drops
the weights).
"""
from __future__ import annotations

import math

import numpy as np

from ...ops.tree import max_steps

#: the domain of ONNX's classic machine-learning operators
ML_DOMAIN = "ai.onnx.ml"

# the comparison codes of the node tables (tecc.topi.tree: LEQ LT GTE GT EQ NEQ, plus 8 when a NaN goes true)
_LEQ, _LT, _GTE, _GT, _EQ, _NEQ = range(6)
_MISSING_TRUE = 8
_MEMBER = 6  # TreeEnsemble's set membership: written as a chain of EQ nodes
#: TreeEnsembleRegressor/Classifier's node modes, as TreeEnsemble's codes
_V3_MODES = {"BRANCH_LEQ": _LEQ, "BRANCH_LT": _LT, "BRANCH_GTE": _GTE, "BRANCH_GT": _GT, "BRANCH_EQ": _EQ,
             "BRANCH_NEQ": _NEQ}
#: aggregate functions, by TreeEnsemble's codes and the older operators' names
_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
_POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


class Tables:
    """An ensemble as ``tree_traverse`` reads it: entries ``0 .. n_leaves - 1`` the
    leaves (their own successors), then the branch nodes; ``feature``,
    ``threshold`` (float64), ``mode``, ``true_next``, ``false_next`` per entry,
    ``roots`` per tree, and the leaves' weights as triples (``w_leaf``,
    ``w_target``, ``w_value``).  ``label(entry)`` names a branch as the model does,
    for errors.  Built with numpy from the operators' attributes (a forest of
    millions of nodes imports in seconds)."""

    def __init__(self, node, n_leaves, feature, threshold, mode, true_next, false_next, roots, w_leaf, w_target,
                 w_value, label):
        self.node, self.n_leaves = node, int(n_leaves)
        self.feature, self.threshold, self.mode = feature, threshold, mode
        self.true_next, self.false_next, self.roots = true_next, false_next, roots
        self.w_leaf, self.w_target, self.w_value = w_leaf, w_target, w_value
        self.label = label
        self._depth = None

    def depth(self) -> int:
        """The most branch nodes on a path to a leaf; a cycle is an error naming a
        node on it.  The heights are found level by level from the leaves up (a
        branch is done once both its successors are): as many numpy passes as the
        trees are deep."""
        if self._depth is not None:
            return self._depth
        n = len(self.feature)
        height = np.zeros(n, np.int64)
        done = np.zeros(n, bool)
        done[:self.n_leaves] = True
        pending = np.arange(self.n_leaves, n)
        while pending.size:
            t, f = self.true_next[pending], self.false_next[pending]
            ready = done[t] & done[f]
            if not ready.any():  # what is left waits on itself: a cycle, which a walk down unfinished nodes meets
                e, seen = int(pending[0]), set()
                while e not in seen:
                    seen.add(e)
                    e = int(self.true_next[e]) if not done[self.true_next[e]] else int(self.false_next[e])
                self.node.fail(f"{self.label(e)} is its own descendant: the trees' nodes_truenodeids / "
                               "nodes_falsenodeids make a cycle")
            now = pending[ready]
            height[now] = 1 + np.maximum(height[t[ready]], height[f[ready]])
            done[now] = True
            pending = pending[~ready]
        self._depth = int(height.max()) if n else 0
        return self._depth

    def tables(self, dtype):
        """``(roots, feature, threshold, mode, true_next, false_next)`` for the kernel."""
        i32 = np.int32
        return (self.roots.astype(i32), self.feature.astype(i32), self.threshold.astype(dtype),
                self.mode.astype(i32), self.true_next.astype(i32), self.false_next.astype(i32))

    def weights(self, n_targets: int, aggregate: str, dtype):
        """``(W, has)``: ``W[leaf, target]`` the leaf's weight for the target (the sum
        of its weights, or for MIN/MAX their minimum/maximum), ``has`` whether the
        leaf has one (None for SUM/AVERAGE, which add zeros)."""
        bad = (self.w_target < 0) | (self.w_target >= n_targets)
        if bad.any():
            self.node.fail(f"a leaf has a weight for target {int(self.w_target[bad][0])}, but there are {n_targets} "
                           "targets")
        shape = (self.n_leaves, n_targets)
        if aggregate not in ("MIN", "MAX"):
            w = np.zeros(shape)
            np.add.at(w, (self.w_leaf, self.w_target), self.w_value)
            return w.astype(dtype), None
        has = np.zeros(shape, bool)
        has[self.w_leaf, self.w_target] = True
        w = np.full(shape, np.inf if aggregate == "MIN" else -np.inf)
        (np.minimum if aggregate == "MIN" else np.maximum).at(w, (self.w_leaf, self.w_target), self.w_value)
        w[~has] = 0.0
        return w.astype(dtype), has


# ---------------------------------------------------------------------------------------
# reading the trees
# ---------------------------------------------------------------------------------------
def _int_array(node, name):
    """An int list attribute as an int64 array (empty when the node does not set it)."""
    value = node.attr(name)
    return np.zeros(0, np.int64) if value is None else np.asarray(value, np.int64).reshape(-1)


def _ints(node, name):
    """:func:`_int_array` as a list of ints."""
    return _int_array(node, name).tolist()


def _floats(node, name, tensor_name=None):
    """A float list attribute, or its ``*_as_tensor`` form (double precision)."""
    if tensor_name is not None and node.attr(tensor_name) is not None:
        if node.attr(name) is not None:
            node.fail(f"it sets both {name} and {tensor_name}; set one")
        return np.asarray(node.attr(tensor_name), dtype=np.float64).reshape(-1)
    value = node.attr(name)
    return None if value is None else np.asarray(value, dtype=np.float64).reshape(-1)


def _same_length(node, arrays: dict) -> int:
    lengths = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lengths.values())) > 1:
        node.fail("these attributes must have one entry per node, but their lengths differ: "
                  + ", ".join(f"{k} {n}" for k, n in lengths.items()))
    return next(iter(lengths.values()), 0)


def _forest_v5(node, n_features) -> tuple:
    """TreeEnsemble (ai.onnx.ml 5): ``(forest, n_targets, aggregate, post_transform)``."""
    nodes = {k: _ints(node, k) for k in ("nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids",
                                         "nodes_trueleafs", "nodes_falseleafs")}
    nodes["nodes_splits"] = _floats(node, "nodes_splits")
    nodes["nodes_modes"] = _ints(node, "nodes_modes")
    missing = _ints(node, "nodes_missing_value_tracks_true")
    if missing:
        nodes["nodes_missing_value_tracks_true"] = missing
    for k in ("nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs",
              "nodes_falseleafs", "nodes_splits", "nodes_modes"):
        if nodes[k] is None or (k != "nodes_splits" and node.attr(k) is None):
            node.required(k)
    n_nodes = _same_length(node, nodes)
    leaf_targets, leaf_weights = _ints(node, "leaf_targetids"), _floats(node, "leaf_weights")
    if leaf_weights is None:
        node.required("leaf_weights")
    if len(leaf_targets) != len(leaf_weights):
        node.fail(f"leaf_targetids has {len(leaf_targets)} entries and leaf_weights {len(leaf_weights)}: one per "
                  "leaf")
    roots = _ints(node, "tree_roots")
    if not roots:
        node.required("tree_roots")
    n_targets = int(node.required("n_targets"))
    aggregate = _choice(node, "aggregate_function", _AGGREGATES, 1)
    post = _choice(node, "post_transform", _POST_TRANSFORMS, 0)
    members = _floats(node, "membership_values")
    modes = nodes["nodes_modes"]
    sets, it = {}, iter([] if members is None else members.tolist())
    for i, m in enumerate(modes):  # the members of each MEMBER node, in node order, NaN-delimited
        if m == _MEMBER:
            values = []
            for v in it:
                if math.isnan(v):
                    break
                values.append(v)
            else:
                if members is None:
                    node.fail(f"node {i} tests set membership but the node has no membership_values")
            sets[i] = values
        elif not 0 <= m <= _MEMBER:
            node.fail(f"nodes_modes[{i}] is {m}; the modes are 0 (LEQ) ... 6 (MEMBER)")

    n_leaves = len(leaf_weights)
    feat = np.asarray(nodes["nodes_featureids"], np.int64)
    code = np.asarray(modes, np.int64) + np.where(np.asarray(missing or [0] * n_nodes) != 0, _MISSING_TRUE, 0)
    threshold = np.asarray(nodes["nodes_splits"], np.float64).copy()
    nexts = []
    for k in ("true", "false"):  # each node's successor entry: leaf j is entry j, node i entry n_leaves + i
        ids = np.asarray(nodes[f"nodes_{k}nodeids"], np.int64)
        is_leaf = np.asarray(nodes[f"nodes_{k}leafs"], np.int64) != 0
        bad = np.nonzero(is_leaf & ((ids < 0) | (ids >= n_leaves)))[0]
        if bad.size:
            node.fail(f"a node points to leaf {int(ids[bad[0]])}, but there are {n_leaves} leaves")
        bad = np.nonzero(~is_leaf & ((ids < 0) | (ids >= n_nodes)))[0]
        if bad.size:
            node.fail(f"a node points to node {int(ids[bad[0]])}, but there are {n_nodes} nodes")
        nexts.append(np.where(is_leaf, ids, n_leaves + ids))
    true_e, false_e = nexts
    bad = np.nonzero((feat < 0) | (feat >= n_features))[0]
    if bad.size:
        node.fail(f"node {int(bad[0])} tests feature {int(feat[bad[0]])}, but the input has {n_features} features "
                  "(axis 1): the model was made for other data")
    # x in {v1, v2, ...}: the node tests EQ v1 (a NaN going as it says), its false side EQ v2 ... and the last
    # test's false side the node's own; an empty set is an EQ no value meets
    extra, origin = [], []  # [feature, threshold, true entry, false entry] of the chains' later tests
    for i, values in sets.items():
        values = values or [float("nan")]
        code[i] = _EQ + (code[i] & _MISSING_TRUE)
        threshold[i] = values[0]
        last, final = None, int(false_e[i])
        for v in values[1:]:
            e = n_leaves + n_nodes + len(extra)
            if last is None:
                false_e[i] = e
            else:
                extra[last][3] = e
            extra.append([int(feat[i]), v, int(true_e[i]), final])
            origin.append(i)
            last = len(extra) - 1
    ext = np.asarray(extra, np.float64).reshape(-1, 4)

    def column(leafs, own, chain):
        return np.concatenate([leafs, own, chain])

    feature = column(np.zeros(n_leaves, np.int64), feat, ext[:, 0].astype(np.int64))
    thresholds = column(np.zeros(n_leaves), threshold, ext[:, 1])
    mode_codes = column(np.zeros(n_leaves, np.int64), code, np.full(len(extra), _EQ, np.int64))
    true_next = column(np.arange(n_leaves, dtype=np.int64), true_e, ext[:, 2].astype(np.int64))
    false_next = column(np.arange(n_leaves, dtype=np.int64), false_e, ext[:, 3].astype(np.int64))
    tids, fids = np.asarray(nodes["nodes_truenodeids"], np.int64), np.asarray(nodes["nodes_falsenodeids"], np.int64)
    tleaf, fleaf = np.asarray(nodes["nodes_trueleafs"]) != 0, np.asarray(nodes["nodes_falseleafs"]) != 0
    root_entries = []
    for r in roots:
        if not 0 <= r < n_nodes:
            node.fail(f"tree_roots holds {r}, but there are {n_nodes} nodes")
        # a tree that is one leaf: a node both of whose sides are that leaf
        single = tleaf[r] and fleaf[r] and tids[r] == fids[r]
        root_entries.append(int(tids[r]) if single else n_leaves + r)

    def label(e):
        if e < n_leaves:
            return f"leaf {e}"
        if e < n_leaves + n_nodes:
            return f"node {e - n_leaves}"
        return f"node {origin[e - n_leaves - n_nodes]} (a set-membership test)"

    tables = Tables(node, n_leaves, feature, thresholds, mode_codes, true_next, false_next,
                    np.asarray(root_entries, np.int64), np.arange(n_leaves, dtype=np.int64),
                    np.asarray(leaf_targets, np.int64), np.asarray(leaf_weights, np.float64), label)
    return tables, n_targets, aggregate, post


def _forest_v3(node, n_features, prefix: str) -> tuple:
    """TreeEnsembleRegressor / TreeEnsembleClassifier (ai.onnx.ml 1 and 3):
    ``(forest, n_targets or n_classes, aggregate, post_transform, base_values, class_ids)``;
    ``prefix``: ``target`` or ``class``."""
    keys = ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids")
    nodes = {k: _int_array(node, k) for k in keys}
    for k in keys:
        if node.attr(k) is None:
            node.required(k)
    nodes["nodes_modes"] = list(node.required("nodes_modes"))
    nodes["nodes_values"] = _floats(node, "nodes_values", "nodes_values_as_tensor")
    if nodes["nodes_values"] is None:
        node.required("nodes_values")
    missing = _int_array(node, "nodes_missing_value_tracks_true")
    if len(missing):
        nodes["nodes_missing_value_tracks_true"] = missing
    n_nodes = _same_length(node, nodes)
    tree, nid = (np.asarray(nodes[k], np.int64) for k in ("nodes_treeids", "nodes_nodeids"))
    # the nodes by (tree, node id): one int64 key each, sorted once and searched
    span = int(nid.max()) + 1 if n_nodes else 1
    if n_nodes and (nid.min() < 0 or tree.min() < 0):
        node.fail("nodes_treeids and nodes_nodeids must be non-negative")
    keys = tree * span + nid
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    twice = np.nonzero(sorted_keys[1:] == sorted_keys[:-1])[0]
    if twice.size:
        k = int(sorted_keys[twice[0]])
        node.fail(f"tree {k // span} has two nodes numbered {k % span} (nodes_treeids / nodes_nodeids)")

    def find(t, i):
        """Positions (in the node lists) of the nodes (t, i); -1 where there is none."""
        key = t * span + np.clip(i, 0, span - 1)
        at = np.clip(np.searchsorted(sorted_keys, key), 0, max(n_nodes - 1, 0))
        found = (i >= 0) & (i < span) & (sorted_keys[at] == key) if n_nodes else np.zeros(len(t), bool)
        return np.where(found, order[at], -1)

    names, codes = np.unique(np.asarray(nodes["nodes_modes"], dtype=object).astype(str), return_inverse=True)
    known = {**_V3_MODES, "LEAF": -1}
    for m in map(str, names):
        if m not in known:
            i = int(np.nonzero(np.asarray(nodes["nodes_modes"], dtype=object) == m)[0][0])
            node.fail(f"nodes_modes[{i}] is {m!r}; the modes are LEAF, {', '.join(_V3_MODES)}")
    mode_of = np.array([known[m] for m in names], np.int64)[codes]
    leaf = mode_of < 0
    n_leaves = int(leaf.sum())
    entry = np.empty(n_nodes, np.int64)  # leaves first, then the branches, each in the model's order
    entry[leaf] = np.arange(n_leaves)
    entry[~leaf] = n_leaves + np.arange(n_nodes - n_leaves)
    branch = np.nonzero(~leaf)[0]
    feature = np.asarray(nodes["nodes_featureids"], np.int64)
    bad = branch[(feature[branch] < 0) | (feature[branch] >= n_features)]
    if bad.size:
        i = int(bad[0])
        node.fail(f"node {int(nid[i])} of tree {int(tree[i])} tests feature {int(feature[i])}, but the input has "
                  f"{n_features} features (axis 1): the model was made for other data")
    n = n_nodes
    f_e, t_e, m_e = np.zeros(n, np.int64), np.zeros(n, np.float64), np.zeros(n, np.int64)
    true_e, false_e = np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)
    pointed = np.zeros(n_nodes, bool)
    for k, out in (("nodes_truenodeids", true_e), ("nodes_falsenodeids", false_e)):
        child = find(tree[branch], np.asarray(nodes[k], np.int64)[branch])
        lost = np.nonzero(child < 0)[0]
        if lost.size:
            i = int(branch[lost[0]])
            node.fail(f"node {int(nid[i])} of tree {int(tree[i])} points ({k}) to node {int(nodes[k][i])}, which "
                      f"tree {int(tree[i])} does not have")
        out[entry[branch]] = entry[child]
        pointed[child] = True
    miss = missing[branch] if len(missing) else np.zeros(len(branch), np.int64)
    f_e[entry[branch]] = feature[branch]
    t_e[entry[branch]] = np.asarray(nodes["nodes_values"], np.float64)[branch]
    m_e[entry[branch]] = mode_of[branch] + np.where(miss != 0, _MISSING_TRUE, 0)
    by_entry = np.empty(n, np.int64)
    by_entry[entry] = np.arange(n_nodes)

    def label(e):
        i = int(by_entry[e])
        return f"node {int(nid[i])} of tree {int(tree[i])}"

    w_ids = {k: _int_array(node, f"{prefix}_{k}") for k in ("treeids", "nodeids", "ids")}
    weights = _floats(node, f"{prefix}_weights", f"{prefix}_weights_as_tensor")
    w_ids["weights"] = np.zeros(0) if weights is None else np.asarray(weights, np.float64)
    _same_length(node, {f"{prefix}_{k}": v for k, v in w_ids.items()})
    at = find(w_ids["treeids"], w_ids["nodeids"])
    wrong = np.nonzero((at < 0) | ~leaf[np.maximum(at, 0)])[0]
    if wrong.size:
        j = int(wrong[0])
        node.fail(f"{prefix}_nodeids gives a weight to node {int(w_ids['nodeids'][j])} of tree "
                  f"{int(w_ids['treeids'][j])}, which is not a leaf")
    tables = Tables(node, n_leaves, f_e, t_e, m_e, true_e, false_e, None, entry[at], w_ids["ids"],
                    w_ids["weights"], label)
    tables.depth()  # a cycle is refused before it hides a tree's root
    trees = np.unique(tree)
    free = np.nonzero(~pointed)[0]  # the nodes no other node points to: one per tree
    counts = dict(zip(*np.unique(tree[free], return_counts=True)))
    for t in trees:
        if counts.get(t, 0) != 1:
            node.fail(f"tree {int(t)} has {counts.get(t, 0)} nodes no other node points to; a tree has one root")
    free = free[np.argsort(tree[free], kind="stable")]
    tables.roots = entry[free]
    aggregate = _choice(node, "aggregate_function", _AGGREGATES, "SUM")
    post = _choice(node, "post_transform", _POST_TRANSFORMS, "NONE")
    base = _floats(node, "base_values", "base_values_as_tensor")
    return tables, aggregate, post, base, w_ids["ids"].tolist()


def _choice(node, name, choices, default) -> str:
    value = node.attr(name, default)
    if isinstance(value, (int, np.integer)):
        if not 0 <= int(value) < len(choices):
            node.fail(f"{name} is {value}; it takes " + ", ".join(f"{i} ({c})" for i, c in enumerate(choices)))
        return choices[int(value)]
    if value not in choices:
        node.fail(f"{name} is {value!r}; it takes one of {', '.join(choices)}")
    return value


# ---------------------------------------------------------------------------------------
# the graph of an ensemble
# ---------------------------------------------------------------------------------------
def _features(ctx, node, x):
    """The input as ``[batch, features]`` in the dtype the models compute in
    (float64 stays; others as float32, as onnxruntime reads them), and ``features``
    (static: the trees' and coefficients' shapes depend on it)."""
    shape = ctx.shape(x)
    if len(shape) == 1:
        x = ctx.reshape(x, (1, shape[0]))
    elif len(shape) != 2:
        node.fail(f"the input has shape {shape}; it takes [batch, features] (or one row [features])")
    if not isinstance(ctx.shape(x)[1], int):
        node.fail("the input's number of features (axis 1) is symbolic; give it in the shape dict")
    dtype = "float64" if ctx.dtype_of(x) == "float64" else "float32"
    return ctx.cast(x, dtype), ctx.shape(x)[1]


def _scores(ctx, forest, x, n_targets, aggregate, dtype):
    """``[batch, n_targets]``: the trees' leaves' weights for each row, aggregated."""
    node = forest.node
    if not len(forest.roots):
        node.fail("it has no trees")
    roots, feature, threshold, mode, true_next, false_next = forest.tables(ctx.dtype_of(x))
    modes = set(np.unique(mode[forest.n_leaves:]).tolist())
    tables = [ctx.const(a, a.dtype) for a in (roots, feature, threshold, true_next, false_next)]
    extra = {} if len(modes) > 1 else {"mode": modes.pop() if modes else 0}
    if len(modes) > 1:
        tables.append(ctx.const(mode, "int32"))
    depth, steps = forest.depth(), max_steps()
    leaves = ctx.call("tree_traverse", x, *tables, depth=min(depth, steps), **extra)
    for done in range(steps, depth, steps):  # a deep ensemble: walked on, one kernel per walk
        leaves = ctx.call("tree_traverse_on", x, leaves, *tables[1:], depth=min(depth - done, steps), **extra)
    w, has = forest.weights(n_targets, aggregate, np.float64)
    if aggregate == "AVERAGE":  # the mean's division folded into the weights: no kernel of its own
        w = w / len(forest.roots)
    picked = ctx.call("take", ctx.const(w.astype(dtype), dtype), leaves, axis=0)  # [trees, batch, targets]
    if aggregate in ("SUM", "AVERAGE"):
        return ctx.call("sum", picked, axis=(0,))
    hit = ctx.call("take", ctx.const(has, "bool"), leaves, axis=0)
    fill = ctx.const(np.inf if aggregate == "MIN" else -np.inf, dtype)
    best = ctx.call(aggregate.lower(), ctx.call("where", hit, picked, fill), axis=(0,))
    # a target no tree's leaf scores: 0, then the base value (ONNX's reference: +-inf; onnxruntime: 0 without it)
    return ctx.call("where", ctx.call("any", hit, axis=(0,)), best, ctx.const(0, dtype))


def _post_transform(ctx, z, post):
    dtype = ctx.dtype_of(z)
    if post == "NONE":
        return z
    if post == "LOGISTIC":
        return ctx.call("sigmoid", z)
    if post == "SOFTMAX":
        return ctx.call("nn.softmax", z, axis=-1)
    if post == "SOFTMAX_ZERO":  # softmax over the non-zero scores; a zero score stays zero
        zero = ctx.const(0, dtype)
        nonzero = ctx.call("not_equal", z, zero)
        top = ctx.call("max", z, axis=(1,), keepdims=True)
        e = ctx.call("where", nonzero, ctx.call("exp", ctx.call("subtract", z, top)), zero)
        total = ctx.call("sum", e, axis=(1,), keepdims=True)
        return ctx.call("divide", e, total)
    # PROBIT: sqrt(2) * erfinv(2p - 1), with the closed-form erfinv (a = 0.147) onnxruntime computes
    def c(v):
        return ctx.const(v, dtype)

    u = ctx.call("subtract", ctx.call("multiply", z, c(2.0)), c(1.0))
    sign = ctx.call("where", ctx.call("less", u, c(0.0)), c(-1.0), c(1.0))
    ln = ctx.call("log", ctx.call("multiply", ctx.call("subtract", c(1.0), u), ctx.call("add", c(1.0), u)))
    v = ctx.call("add", c(2.0 / (math.pi * 0.147)), ctx.call("multiply", c(0.5), ln))
    v2 = ctx.call("multiply", c(1.0 / 0.147), ln)
    root = ctx.call("sqrt", ctx.call("subtract", ctx.call("sqrt", ctx.call("subtract", ctx.call("multiply", v, v),
                                                                                       v2)), v))
    return ctx.call("multiply", ctx.call("multiply", sign, root), c(math.sqrt(2.0)))


def _tree_ensemble(ctx, node, inputs):
    x, n_features = _features(ctx, node, inputs[0])
    forest, n_targets, aggregate, post = _forest_v5(node, n_features)
    out_dtype = ctx.dtype_of(inputs[0])
    z = _scores(ctx, forest, x, n_targets, aggregate, ctx.dtype_of(x))
    # onnxruntime applies TreeEnsemble's post_transform (ONNX's reference ignores it)
    return [ctx.cast(_post_transform(ctx, z, post), out_dtype)]


def _add_base(ctx, node, z, base, n):
    if base is None or not len(base):
        return z
    if len(base) != n:
        node.fail(f"base_values has {len(base)} entries, one per target or class is {n}")
    return ctx.call("add", z, ctx.const(np.asarray(base), ctx.dtype_of(z)))


def _tree_ensemble_regressor(ctx, node, inputs):
    x, n_features = _features(ctx, node, inputs[0])
    forest, aggregate, post, base, _ = _forest_v3(node, n_features, "target")
    n_targets = int(node.attr("n_targets", 1))
    z = _scores(ctx, forest, x, n_targets, aggregate, "float32")
    return [_post_transform(ctx, _add_base(ctx, node, z, base, n_targets), post)]


def _tree_ensemble_classifier(ctx, node, inputs):
    labels = _labels(node, "classlabels_int64s")
    x, n_features = _features(ctx, node, inputs[0])
    forest, aggregate, post, base, class_ids = _forest_v3(node, n_features, "class")
    n = len(labels)
    # every weight for class 0: one column, the score of the positive class (binary).  Every weight for
    # another class is the general case, the other classes scoring their base values (onnxruntime's
    # scores; ONNX's reference drops those weights)
    binary = set(class_ids) == {0}
    width = 1 if binary else n
    z = _scores(ctx, forest, x, width, aggregate, "float32")
    if binary and base is not None and len(base) in (1, 2):
        base = base[:1]  # the positive class's score starts from the first base value
    z = _add_base(ctx, node, z, base, width)
    if binary:
        if n > 2:
            node.fail(f"every class weight is for class {class_ids[0]} but there are {n} classes: the weights "
                      "of a binary classifier, with more than two labels")
        positive = ctx.call("strided_slice", z, begin=(0, 0), end=(ctx.shape(z)[0], 1), strides=(1, 1)) \
            if ctx.shape(z)[1] != 1 else z
        # the score of class 0: 1 - p (or -p when the transform turns scores into probabilities)
        other = ctx.call("subtract", ctx.const(1.0, "float32"), positive) if post in ("NONE", "PROBIT") \
            else ctx.call("negative", positive)
        z = ctx.call("concatenate", ctx.tuple([other, positive]), axis=1)
    scores = _post_transform(ctx, z, post)
    best = ctx.call("argmax", scores, axis=(1,))
    table = np.asarray(labels if len(labels) > 1 else [0, labels[0]], dtype=np.int64)
    label = ctx.call("take", ctx.const(table, "int64"), best, axis=0)
    return [label, scores]


def _binarizer(ctx, node, inputs):
    x = inputs[0]
    threshold = float(node.attr("threshold", 0.0))
    dtype = ctx.dtype_of(x)
    return [ctx.cast(ctx.call("greater", x, ctx.const(threshold, dtype)), dtype)]


def _array_feature_extractor(ctx, node, inputs):
    x, indices = inputs
    shape = ctx.shape(x)
    idx = ctx.reshape(ctx.cast(indices, "int64"), (int(np.prod(ctx.shape(indices), dtype=np.int64)),))
    last = shape[-1]
    if ctx.is_const(indices):
        got = ctx.value(indices, "indices").reshape(-1)
        bad = [int(i) for i in got if not 0 <= int(i) < last]
        if bad:
            node.fail(f"indices {bad} are out of range for the last axis of the input (size {last}): "
                      f"valid indices are 0..{last - 1}")
    out = ctx.call("take", x, idx, axis=len(shape) - 1, mode="fast" if ctx.is_const(indices) else "clip")
    return [ctx.reshape(out, (1, ctx.shape(out)[0])) if len(shape) == 1 else out]


# ---------------------------------------------------------------------------------------
# linear models and feature transforms
# ---------------------------------------------------------------------------------------
def _linear_scores(ctx, node, x, n_features):
    """``x @ coefficients.T + intercepts``: ``[N, rows]`` scores and ``rows``."""
    coef = np.asarray(node.required("coefficients"), np.float64)
    if coef.size % n_features:
        node.fail(f"coefficients has {coef.size} values, not a whole number of rows of the input's {n_features} "
                  "features")
    rows = coef.size // n_features
    dtype = ctx.dtype_of(x)
    scores = ctx.call("nn.dense", x, ctx.const(coef.reshape(rows, n_features), dtype), units=rows)
    intercepts = node.attr("intercepts")
    if intercepts is not None and len(intercepts):
        if len(intercepts) != rows:
            node.fail(f"intercepts has {len(intercepts)} values, one per row of coefficients is {rows}")
        scores = ctx.call("add", scores, ctx.const(np.asarray(intercepts), dtype))
    return scores, rows


def _linear_regressor(ctx, node, inputs):
    x, n_features = _features(ctx, node, inputs[0])
    scores, rows = _linear_scores(ctx, node, x, n_features)
    targets = int(node.attr("targets", 1))
    if rows != targets:
        node.fail(f"coefficients holds {rows} rows of the input's {n_features} features, one per target is {targets}")
    post = _choice(node, "post_transform", _POST_TRANSFORMS, "NONE")
    return [ctx.cast(_post_transform(ctx, scores, post), "float32")]


def _labels(node, name="classlabels_ints"):
    """A classifier's integer class labels (attribute ``name``); string labels are refused."""
    if node.attr("classlabels_strings") is not None:
        node.fail(f"its class labels are strings (classlabels_strings): tecc's tensors hold numbers; relabel the "
                  f"classes with integers ({name})")
    labels = _ints(node, name)
    if not labels:
        node.required(name)
    return labels


def _linear_classifier(ctx, node, inputs):
    """Scores ``x @ W.T + b``; one row of coefficients and two classes is binary
    (scores ``[-s, s]``); the post transform; the label of the best score (one
    column: the first label where the score reaches 0, or 0.5 after a transform,
    else 0 -- ONNX's reference)."""
    labels = _labels(node)
    x, n_features = _features(ctx, node, inputs[0])
    scores, rows = _linear_scores(ctx, node, x, n_features)
    scores = ctx.cast(scores, "float32")
    if rows == 1 and len(labels) == 2:
        scores = ctx.call("concatenate", ctx.tuple([ctx.call("negative", scores), scores]), axis=1)
    elif rows != len(labels) and rows != 1:
        node.fail(f"coefficients holds {rows} rows of the input's {n_features} features but there are {len(labels)} "
                  "class labels: one row per class (or one for two classes)")
    post = _choice(node, "post_transform", _POST_TRANSFORMS, "NONE")
    scores = _post_transform(ctx, scores, post)
    if ctx.shape(scores)[1] > 1:
        label = ctx.call("take", ctx.const(np.asarray(labels, np.int64), "int64"),
                         ctx.call("argmax", scores, axis=(1,)), axis=0)
    else:
        threshold = ctx.const(0.0 if post == "NONE" else 0.5, "float32")
        hit = ctx.call("greater_equal", ctx.reshape(scores, (ctx.shape(scores)[0],)), threshold)
        label = ctx.call("where", hit, ctx.const(labels[0], "int64"), ctx.const(0, "int64"))
    return [label, scores]


def _per_feature(node, name, n_features, default=None):
    values = node.attr(name, default)
    values = np.asarray([] if values is None else values, np.float64).reshape(-1)
    if len(values) not in (1, n_features):
        node.fail(f"{name} has {len(values)} values; it takes one, or one per feature ({n_features})")
    return values


def _scaler(ctx, node, inputs):
    x = inputs[0]
    n = ctx.shape(x)[-1] if ctx.rank(x) else 1
    x = ctx.cast(x, "float32")
    offset, scale = _per_feature(node, "offset", n, [0.0]), _per_feature(node, "scale", n, [1.0])
    out = ctx.call("subtract", x, ctx.const(offset, "float32"))
    return [ctx.call("multiply", out, ctx.const(scale, "float32"))]


def _normalizer(ctx, node, inputs):
    """Each row over its largest magnitude (MAX: scikit-learn's and ONNX's
    reference's reading; onnxruntime divides by the largest value), the sum of
    magnitudes (L1) or the Euclidean norm (L2)."""
    norm = node.attr("norm", "MAX")
    if norm not in ("MAX", "L1", "L2"):
        node.fail(f"norm is {norm!r}; it takes MAX, L1 or L2")
    x, _ = _features(ctx, node, inputs[0])
    x = ctx.cast(x, "float32")
    if norm == "L2":
        size = ctx.call("sqrt", ctx.call("sum", ctx.call("multiply", x, x), axis=(1,), keepdims=True))
    else:
        size = ctx.call("max" if norm == "MAX" else "sum", ctx.call("abs", x), axis=(1,), keepdims=True)
    size = ctx.call("maximum", size, ctx.const(1e-30, "float32"))  # an all-zero row stays zero
    out = ctx.call("divide", x, size)
    return [ctx.reshape(out, ctx.shape(inputs[0]))]


def _imputer(ctx, node, inputs):
    x = inputs[0]
    if ctx.rank(x) != 2:
        node.fail(f"the input has shape {list(ctx.shape(x))}; Imputer takes [N, C]")
    n = ctx.shape(x)[1]
    dtype = ctx.dtype_of(x)
    floats = node.attr("imputed_value_floats")
    if floats is not None and len(floats):
        values, replaced = _per_feature(node, "imputed_value_floats", n), float(node.attr("replaced_value_float", 0.0))
    else:
        ints = node.attr("imputed_value_int64s")
        if ints is None or not len(ints):
            node.fail("it sets neither imputed_value_floats nor imputed_value_int64s: nothing to impute")
        values, replaced = _per_feature(node, "imputed_value_int64s", n), int(node.attr("replaced_value_int64", 0))
    if isinstance(replaced, float) and math.isnan(replaced):
        missing = ctx.call("isnan", x)
    else:
        missing = ctx.call("equal", x, ctx.const(replaced, dtype))
    return [ctx.call("where", missing, ctx.const(values, dtype), x)]


def _feature_vectorizer(ctx, node, inputs):
    dims = _ints(node, "inputdimensions")
    if len(dims) != len(inputs):
        node.fail(f"inputdimensions has {len(dims)} entries for {len(inputs)} inputs: one per input")
    parts = []
    for i, (x, width) in enumerate(zip(inputs, dims)):
        shape = ctx.shape(x)
        if len(shape) == 1:  # one row (onnxruntime's reading; ONNX's reference makes it a column)
            x = ctx.reshape(x, (1, shape[0]))
        elif len(shape) != 2:
            node.fail(f"input {i} has shape {list(shape)}; each input is [N, C] (or one row [C])")
        x = ctx.cast(x, "float32")
        rows, cols = ctx.shape(x)
        if cols > width:  # as many columns as inputdimensions gives: cut, or padded with zeros
            x = ctx.call("strided_slice", x, begin=(0, 0), end=(rows, width), strides=(1, 1))
        elif cols < width:
            x = ctx.call("nn.pad", x, pad_width=((0, 0), (0, width - cols)), pad_value=0.0)
        parts.append(x)
    return [parts[0] if len(parts) == 1 else ctx.call("concatenate", ctx.tuple(parts), axis=1)]


def _label_encoder(ctx, node, inputs):
    """A lookup of numbers: each element equal to a key becomes its value (the last
    value of a repeated key), others the default.  Keys and values of strings are
    refused."""
    def pick(kind):
        for k in (f"{kind}_floats", f"{kind}_int64s", f"{kind}_tensor"):
            if node.attr(k) is not None:
                return k, np.asarray(node.attr(k)).reshape(-1)
        if node.attr(f"{kind}_strings") is not None:
            node.fail(f"its {kind} are strings ({kind}_strings): tecc's tensors hold numbers")
        node.fail(f"it sets no {kind} (keys_floats, keys_int64s or keys_tensor)")

    kname, keys = pick("keys")
    vname, values = pick("values")
    if len(keys) != len(values):
        node.fail(f"{kname} has {len(keys)} entries and {vname} {len(values)}: one value per key")
    if vname == "values_tensor":
        default = node.attr("default_tensor")
        dtype = str(values.dtype)
        default = np.asarray(default if default is not None else np.zeros(1, dtype)).reshape(-1)[0]
    elif vname == "values_floats":
        dtype, default = "float32", float(node.attr("default_float", -0.0))
    else:
        dtype, default = "int64", int(node.attr("default_int64", -1))
    x = inputs[0]
    last = dict(zip(keys.tolist(), values.tolist()))  # a repeated key: its last value
    kdtype = ctx.dtype_of(x)
    real = list(last)  # a NaN key matches nothing (NaN equals nothing), as onnxruntime and the reference have it
    out = ctx.const(np.asarray(default, dtype), dtype)
    if real:
        eq = ctx.call("equal", ctx.call("expand_dims", x, axis=ctx.rank(x)), ctx.const(np.asarray(real), kdtype))
        index = ctx.call("argmax", ctx.cast(eq, "int32"), axis=(ctx.rank(x),))
        found = ctx.call("take", ctx.const(np.asarray([last[k] for k in real]), dtype), index, axis=0)
        out = ctx.call("where", ctx.call("any", eq, axis=(ctx.rank(x),)), found, out)
    if ctx.shape(out) != ctx.shape(x):
        out = ctx.call("broadcast_to", out, shape=ctx.shape(x))
    return [out]


def _one_hot_encoder(ctx, node, inputs):
    """Each element's category as a one-hot row (float32, ``[..., categories]``)."""
    if node.attr("cats_strings") is not None:
        node.fail("its categories are strings (cats_strings): tecc's tensors hold numbers; give cats_int64s")
    cats = _ints(node, "cats_int64s")
    if not cats:
        node.required("cats_int64s")
    if not int(node.attr("zeros", 1)):
        node.fail("zeros=0 makes an element of no category a run-time error, which tecc's kernels do not raise: set "
                  "zeros=1 (such an element gives a row of zeros)")
    x = inputs[0]
    if not ctx.dtype_of(x).startswith(("int", "uint")):
        x = ctx.cast(x, "int64")  # onnxruntime reads float categories as integers
    eq = ctx.call("equal", ctx.call("expand_dims", x, axis=ctx.rank(x)),
                  ctx.const(np.asarray(cats, np.int64), ctx.dtype_of(x)))
    return [ctx.cast(eq, "float32")]


def _kernel(ctx, node, x, vectors):
    """``[N, S]``: the SVM kernel of each row of ``x`` with each support vector
    (``kernel_type`` LINEAR, POLY, RBF, SIGMOID; ``kernel_params`` gamma, coef0,
    degree)."""
    kind = node.attr("kernel_type", "LINEAR")
    if kind not in ("LINEAR", "POLY", "RBF", "SIGMOID"):
        node.fail(f"kernel_type is {kind!r}; it takes LINEAR, POLY, RBF or SIGMOID")
    params = [float(v) for v in (node.attr("kernel_params") or [0.0, 0.0, 0.0])]
    if len(params) != 3:
        node.fail(f"kernel_params has {len(params)} values; it takes gamma, coef0, degree")
    gamma, coef0, degree = params
    dtype = ctx.dtype_of(x)
    sv = ctx.const(vectors, dtype)

    def c(v):
        return ctx.const(v, dtype)

    if kind == "RBF":  # exp(-gamma |x - v|^2), the differences summed directly (no cancellation)
        diff = ctx.call("subtract", ctx.call("expand_dims", x, axis=1), ctx.call("expand_dims", sv, axis=0))
        dist = ctx.call("sum", ctx.call("multiply", diff, diff), axis=(2,))
        return ctx.call("exp", ctx.call("multiply", dist, c(-gamma)))
    dot = ctx.call("nn.dense", x, sv, units=int(vectors.shape[0]))
    if kind == "LINEAR":
        return dot
    inner = ctx.call("add", ctx.call("multiply", dot, c(gamma)), c(coef0))
    if kind == "SIGMOID":
        return ctx.call("tanh", inner)
    return ctx.call("power", inner, c(float(int(degree))))


def _svm_regressor(ctx, node, inputs):
    x, n_features = _features(ctx, node, inputs[0])
    coef = np.asarray(node.required("coefficients"), np.float64).reshape(-1)
    rho = np.asarray(node.attr("rho", [0.0]), np.float64).reshape(-1)
    n_supports = int(node.attr("n_supports", 0))
    dtype = ctx.dtype_of(x)
    if n_supports > 0:
        vectors = np.asarray(node.required("support_vectors"), np.float64).reshape(-1)
        if vectors.size != n_supports * n_features or len(coef) != n_supports:
            node.fail(f"support_vectors has {vectors.size} values and coefficients {len(coef)} for n_supports "
                      f"{n_supports} of the input's {n_features} features: n_supports x features, and one each")
        k = _kernel(ctx, node, x, vectors.reshape(n_supports, n_features))
        score = ctx.call("nn.dense", k, ctx.const(coef.reshape(1, -1), dtype), units=1)
    else:  # a linear SVM: the coefficients are the weights
        if len(coef) != n_features:
            node.fail(f"coefficients has {len(coef)} values; a linear SVM (n_supports 0) has one per feature "
                      f"({n_features})")
        score = ctx.call("nn.dense", x, ctx.const(coef.reshape(1, -1), dtype), units=1)
    score = ctx.call("add", score, ctx.const(rho[:1], dtype))
    if int(node.attr("one_class", 0)):
        score = ctx.call("where", ctx.call("greater", score, ctx.const(0.0, dtype)), ctx.const(1.0, dtype),
                         ctx.const(-1.0, dtype))
    post = _choice(node, "post_transform", _POST_TRANSFORMS, "NONE")
    return [ctx.cast(_post_transform(ctx, score, post), "float32")]


def _svm_classifier(ctx, node, inputs):
    """libsvm's one-vs-one classifier (support vectors grouped by class,
    ``vectors_per_class``): the score of each pair of classes is a product of the
    kernel row with that pair's coefficients (a constant matrix: one ``dense``),
    each score votes for one class of its pair, and the label is the class with
    the most votes; a linear SVM (no support vectors) scores each class.  Platt's
    probabilities (``prob_a``, ``prob_b``) are taken for two classes, where the
    coupled probability is the pair's own: tecc gives it exactly, libsvm's
    iteration (onnxruntime's, ONNX's reference's) stops within 0.0025 of it.  With
    more classes the coupling (an iteration to convergence) is refused.  (For a
    two-class linear SVM onnxruntime's label can differ from the reference's,
    which tecc follows: the larger score's class.)"""
    labels = _labels(node)
    n_classes = len(labels)
    x, n_features = _features(ctx, node, inputs[0])
    dtype = ctx.dtype_of(x)
    coef = np.asarray(node.required("coefficients"), np.float64).reshape(-1)
    rho = np.asarray(node.attr("rho", [0.0]), np.float64).reshape(-1)
    per_class = _ints(node, "vectors_per_class")
    n_vectors = sum(per_class)
    prob_a = np.asarray(node.attr("prob_a") or [], np.float64)
    prob_b = np.asarray(node.attr("prob_b") or [], np.float64)
    post = _choice(node, "post_transform", _POST_TRANSFORMS, "NONE")
    votes = None
    if n_vectors > 0:
        if len(per_class) != n_classes:
            node.fail(f"vectors_per_class has {len(per_class)} entries for {n_classes} classes: one per class")
        vectors = np.asarray(node.required("support_vectors"), np.float64).reshape(-1)
        if vectors.size != n_vectors * n_features or coef.size != (n_classes - 1) * n_vectors:
            node.fail(f"support_vectors has {vectors.size} values and coefficients {coef.size} for {n_vectors} support "
                      f"vectors of {n_features} features and {n_classes} classes: vectors x features, and (classes - "
                      "1) x vectors")
        coef = coef.reshape(n_classes - 1, n_vectors)
        starts = np.concatenate([[0], np.cumsum(per_class)[:-1]]).astype(int)
        pairs = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
        if len(rho) != len(pairs):
            node.fail(f"rho has {len(rho)} values; one per pair of classes is {len(pairs)}")
        w = np.zeros((len(pairs), n_vectors))
        for e, (i, j) in enumerate(pairs):  # class i's vectors with coefficients row j - 1, class j's with row i
            w[e, starts[i]:starts[i] + per_class[i]] = coef[j - 1, starts[i]:starts[i] + per_class[i]]
            w[e, starts[j]:starts[j] + per_class[j]] = coef[i, starts[j]:starts[j] + per_class[j]]
        k = _kernel(ctx, node, x, vectors.reshape(n_vectors, n_features))
        scores = ctx.call("add", ctx.call("nn.dense", k, ctx.const(w, dtype), units=len(pairs)), ctx.const(rho, dtype))
        win = np.zeros((n_classes, len(pairs)))  # a positive score votes for i, else for j
        lose = np.zeros((n_classes, len(pairs)))
        for e, (i, j) in enumerate(pairs):
            win[i, e], lose[j, e] = 1.0, 1.0
        positive = ctx.cast(ctx.call("greater", scores, ctx.const(0.0, dtype)), "float32")
        negative = ctx.call("subtract", ctx.const(1.0, "float32"), positive)
        votes = ctx.call("add", ctx.call("nn.dense", positive, ctx.const(win, "float32"), units=n_classes),
                         ctx.call("nn.dense", negative, ctx.const(lose, "float32"), units=n_classes))
    else:
        if coef.size != n_classes * n_features:
            node.fail(f"coefficients has {coef.size} values; a linear SVM (no support vectors) has one row of the "
                      f"input's {n_features} features per class ({n_classes})")
        scores = ctx.call("add", ctx.call("nn.dense", x, ctx.const(coef.reshape(n_classes, n_features), dtype),
                                          units=n_classes), ctx.const(rho[:1], dtype))
    scores = ctx.cast(scores, "float32")
    has_proba = len(prob_a) > 0 and n_vectors > 0
    if has_proba:
        if n_classes != 2 or len(prob_a) != 1 or len(prob_b) != 1:
            node.fail(f"it gives Platt probabilities (prob_a) for {n_classes} classes; tecc computes them for two "
                      "classes (more need libsvm's pairwise coupling, an iteration to convergence)")
        # P(class 0) = 1 - sigmoid(score * a + b), clipped as libsvm does
        z = ctx.call("add", ctx.call("multiply", scores, ctx.const(prob_a[0], "float32")),
                     ctx.const(prob_b[0], "float32"))
        p = ctx.call("clip", ctx.call("sigmoid", ctx.call("negative", z)), a_min=1e-7, a_max=1 - 1e-7)
        scores = ctx.call("concatenate", ctx.tuple([p, ctx.call("subtract", ctx.const(1.0, "float32"), p)]), axis=1)
    best = ctx.call("argmax", votes if votes is not None else scores, axis=(1,))
    label = ctx.call("take", ctx.const(np.asarray(labels, np.int64), "int64"), best, axis=0)
    if len(rho) == 1 and n_classes == 2 and not has_proba and min(coef.reshape(-1)) >= 0:
        top = ctx.call("max", votes if votes is not None else scores, axis=(1,))
        label = ctx.call("where", ctx.call("greater_equal", top, ctx.const(0.5, ctx.dtype_of(top))),
                         ctx.const(labels[1], "int64"), label)
    if ctx.shape(scores)[1] == 1:  # one score of two classes: [-s, s]
        scores = ctx.call("concatenate", ctx.tuple([ctx.call("negative", scores), scores]), axis=1)
    return [label, _post_transform(ctx, scores, post)]


#: what to do about the ONNX-ML operators of maps, which tecc does not convert (named in the importer's error)
ML_HINTS = {
    "ZipMap": "it turns the class scores into a sequence of maps; export the classifier without it (skl2onnx: "
              "options={'zipmap': False}) to keep the [N, classes] tensor",
    "DictVectorizer": "it reads maps of features; give the model the [N, features] tensor it builds",
    "CastMap": "it reads maps; give the model the tensor it builds",
}


ML_CONVERTERS = {
    "TreeEnsemble": _tree_ensemble, "TreeEnsembleRegressor": _tree_ensemble_regressor,
    "TreeEnsembleClassifier": _tree_ensemble_classifier, "Binarizer": _binarizer,
    "ArrayFeatureExtractor": _array_feature_extractor, "LinearRegressor": _linear_regressor,
    "LinearClassifier": _linear_classifier, "Scaler": _scaler, "Normalizer": _normalizer, "Imputer": _imputer,
    "FeatureVectorizer": _feature_vectorizer, "LabelEncoder": _label_encoder, "OneHotEncoder": _one_hot_encoder,
    "SVMRegressor": _svm_regressor, "SVMClassifier": _svm_classifier,
}
