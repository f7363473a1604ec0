"""Decision trees: the walk from each tree's root to the leaf a row of features
reaches (ONNX-ML's ``TreeEnsemble``, ``TreeEnsembleRegressor`` and
``TreeEnsembleClassifier`` are this walk and a sum of the leaves' weights).

The trees are tables, one entry per node of every tree (the leaves included), so
the kernel's size does not grow with the ensemble's: entry ``n`` compares feature
``feature[n]`` of the row with ``threshold[n]`` by ``mode[n]`` and goes on to
``true_next[n]`` or ``false_next[n]``.  A leaf is an entry whose two successors
are itself, so a walk that reached it stays there: :func:`tree_traverse` takes
``depth`` steps from each root (the depth of the deepest tree) and returns where
each walk ends -- one element per (tree, row), each an independent chain of
``depth`` table reads (let-bound: the expression grows linearly with the depth).
The successors are two tables, not one ``[nodes, 2]``: the C compiler turns a
select of two adjacent reads into one read at an index the comparison picks,
which puts the read on the walk's critical path (the walk took 2x longer).  The
walk is a stage of its own, not inlined into the sum of the leaves' weights over
the trees: a reduction over trees with the walk in its body (rows outermost, the
walk redone per target) took 5.7x longer for 256 rows of a 100-tree forest.

The comparison modes (:data:`LEQ` ... :data:`NEQ`) are ONNX-ML's, less set
membership, which the importer writes as a chain of :data:`EQ` nodes.  A mode
plus :data:`MISSING_TRACKS_TRUE` sends a NaN feature to ``true_next``; without
it a NaN goes where its comparison (false, but true for ``NEQ``) sends it.
"""
from __future__ import annotations

from .. import te, tir
from ..tir import dtype as _dt
from . import tag
from .utils import TopiError, get_const_tuple

#: the comparison modes: the walk goes to ``true_next`` when ``x <= threshold`` ...
LEQ, LT, GTE, GT, EQ, NEQ = range(6)
#: added to a mode: a NaN feature goes to ``true_next``
MISSING_TRACKS_TRUE = 8
#: every mode code a table may hold
MODES = tuple(m + f for f in (0, MISSING_TRACKS_TRUE) for m in (LEQ, LT, GTE, GT, EQ, NEQ))

TREE_TAG = tag.compose(tag.INJECTIVE, "tree_traverse")
#: the most steps one walk takes: its expression nests one let per step (two with a mode table), and the
#: compiler's passes recurse through it -- a deeper ensemble is walked by several, each from the last's end
MAX_STEPS = 64


def _compare(mode: int, x, t):
    base = mode & 7
    go = {LEQ: lambda: x <= t, LT: lambda: x < t, GTE: lambda: x >= t, GT: lambda: x > t,
          EQ: lambda: x == t, NEQ: lambda: x != t}[base]()
    return te.any(go, te.isnan(x)) if mode & MISSING_TRACKS_TRUE else go


def _check_table(table, name, n, dtype=None):
    if not isinstance(table, te.Tensor) or len(table.shape) != 1:
        raise TopiError(f"tree_traverse: {name} must be a 1-D tensor with one entry per node, got {table!r}")
    if get_const_tuple(table.shape)[0] != n:
        raise TopiError(f"tree_traverse: {name} has {get_const_tuple(table.shape)[0]} entries, the tables have {n} "
                        "(one per node)")
    if dtype == "int" and not _dt.is_integer(table.dtype):
        raise TopiError(f"tree_traverse: {name} must hold integers (node or feature numbers), got {table.dtype}")
    if dtype not in (None, "int") and table.dtype != dtype:
        raise TopiError(f"tree_traverse: {name} has dtype {table.dtype}, the data {dtype}: give the thresholds in "
                        "the data's dtype")


def tree_traverse(data, roots, feature, threshold, mode, true_next, false_next, depth: int):
    """The node each row of ``data`` ``[batch, features]`` reaches in each tree,
    ``int32`` ``[trees, batch]``: the trees outermost, so that the rows a thread
    walks through one tree find its tables in cache (a 100-tree forest's walk of
    256 rows took 1.5x longer rows-first).

    ``roots`` (``[trees]``) holds each tree's root entry, or (``[trees,
    batch]``) the entry each walk starts at: where a previous walk ended, to
    walk a tree deeper than :data:`MAX_STEPS`.  ``feature``,
    ``threshold`` (the data's dtype), ``true_next`` and ``false_next`` hold one
    entry per node.  ``mode`` is a table of mode codes (:data:`MODES`) or one code
    for every node (then the kernel reads no mode table).  The walk takes
    ``depth`` steps (at most :data:`MAX_STEPS`): at least the depth of the
    deepest tree, or it stops short of a leaf (to go on from).  The tables are
    the caller's to keep consistent: node and feature numbers in range, each leaf
    its own successor (the importer checks them)."""
    if not isinstance(data, te.Tensor) or len(data.shape) != 2:
        raise TopiError(f"tree_traverse: data must be a [batch, features] tensor, got {data!r}")
    if not _dt.is_float(data.dtype):
        raise TopiError(f"tree_traverse: data has dtype {data.dtype}; the trees compare floating-point features "
                        "(cast it first)")
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
        raise TopiError(f"tree_traverse: depth must be a non-negative int, got {depth!r}")
    n = get_const_tuple(feature.shape)[0] if isinstance(feature, te.Tensor) else None
    _check_table(feature, "feature", n, "int")
    _check_table(threshold, "threshold", n, data.dtype)
    _check_table(true_next, "true_next", n, "int")
    _check_table(false_next, "false_next", n, "int")
    if isinstance(mode, te.Tensor):
        _check_table(mode, "mode", n, "int")
    elif mode not in MODES:
        raise TopiError(f"tree_traverse: mode must be a table of mode codes or one of {MODES}, got {mode!r}")
    if depth > MAX_STEPS:
        raise TopiError(f"tree_traverse: depth {depth} is above {MAX_STEPS} steps, the most one walk takes (its "
                        "expression nests one level per step); walk on from where it ends: pass its output as the "
                        "roots of the next tree_traverse")
    if (not isinstance(roots, te.Tensor) or len(roots.shape) not in (1, 2) or not _dt.is_integer(roots.dtype)
            or len(roots.shape) == 2 and get_const_tuple(roots.shape)[1] != get_const_tuple(data.shape)[0]):
        raise TopiError("tree_traverse: roots must be an integer tensor [trees] (each tree's root entry) or [trees, "
                        f"batch] (where each walk starts: a previous walk's end), got {roots!r}")
    batch = data.shape[0]
    trees = roots.shape[0]

    def walk(t, b):
        bindings = []

        def bind(value, name):
            v = tir.Var(f"{name}{len(bindings)}", value.dtype)
            bindings.append((v, value))
            return v

        node = bind((roots[t] if len(roots.shape) == 1 else roots[t, b]).astype("int32"), "node")
        for _ in range(depth):
            x, split = data[b, feature[node]], threshold[node]
            if isinstance(mode, te.Tensor):  # x is read by every comparison: bound once
                x = bind(x, "x")
                code = mode[node].astype("int32")
                missing = code >= MISSING_TRACKS_TRUE
                base = tir.Select(missing, code - MISSING_TRACKS_TRUE, code)
                go = x != split  # NEQ, the last mode
                for m in (EQ, GT, GTE, LT, LEQ):
                    go = tir.Select(base == m, _compare(m, x, split), go)
                go = te.any(go, te.all(missing, te.isnan(x)))
            else:
                go = _compare(mode, x, split)
            node = bind(tir.Select(go, true_next[node], false_next[node]).astype("int32"), "node")
        out = node
        for v, value in reversed(bindings):
            out = tir.Let(v, value, out)
        return out

    return te.compute((trees, batch), walk, name="tree_traverse", tag=TREE_TAG)
