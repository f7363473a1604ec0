"""topi.tree.tree_traverse against its numpy reference on "llvm" and "cuda" (the
GPU emulator; ends ``[trees, batch]``): random forests with one comparison mode or a table of every mode
(with and without missing-tracks-true), NaN features, float32 and float64; a walk
continued from where a shorter one ended; the tag and the injective schedule
topi.schedule picks; the cubins NVRTC makes; one expected failure per argument
error."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.topi.testing import tree_traverse_python
from tecc.topi.tree import LEQ, MAX_STEPS, MODES, TREE_TAG
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run


def random_forest(rng, n_trees, depth, n_features, modes):
    """Node tables of ``n_trees`` random trees (leaves their own successors)."""
    feature, threshold, mode, true_next, false_next, roots = [], [], [], [], [], []

    def grow(d):
        i = len(feature)
        feature.append(0), threshold.append(0.0), mode.append(LEQ), true_next.append(i), false_next.append(i)
        if d == 0 or rng.random() < 0.2:
            return i
        feature[i], threshold[i] = int(rng.integers(n_features)), float(np.round(rng.normal(), 1))
        mode[i] = int(rng.choice(modes))
        true_next[i] = grow(d - 1)
        false_next[i] = grow(d - 1)
        return i

    for _ in range(n_trees):
        roots.append(grow(depth))
    return [np.array(a) for a in (roots, feature, threshold, mode, true_next, false_next)]


def run_walk(target, x, tables, depth, uniform=None, start=None):
    roots, feature, threshold, mode, true_next, false_next = tables
    n = len(feature)
    X = te.placeholder(x.shape, str(x.dtype), name="X")
    R = te.placeholder(roots.shape if start is None else start.shape, "int32", name="R")
    F, T = te.placeholder((n,), "int32", name="F"), te.placeholder((n,), str(x.dtype), name="T")
    M, TN, FN = (te.placeholder((n,), "int32", name=k) for k in ("M", "TN", "FN"))
    with tecc.target.Target(target):
        out = topi.tree.tree_traverse(X, R, F, T, M if uniform is None else uniform, TN, FN, depth)
        s = topi.schedule([out], target)
    args = [X, R, F, T] + ([M] if uniform is None else []) + [TN, FN]
    values = [x, (roots if start is None else start).astype("int32"), feature.astype("int32"),
              threshold.astype(x.dtype)] + ([mode.astype("int32")] if uniform is None else []) + \
             [true_next.astype("int32"), false_next.astype("int32")]
    (got,) = build_run(s, args, [out], values, target)
    return got, out, s, args


def _data(rng, dtype, batch=33, n_features=5):
    x = np.round(rng.normal(size=(batch, n_features)), 1).astype(dtype)  # values that meet the thresholds
    x[::5, 2] = np.nan
    return x


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("modes", [(LEQ,), MODES], ids=["one_mode", "mode_table"])
def test_tree_traverse_matches_numpy(target, dtype, modes):
    rng = np.random.default_rng(len(modes) + len(dtype))
    tables = random_forest(rng, 7, 6, 5, modes)
    x = _data(rng, dtype)
    got, out, _, _ = run_walk(target, x, tables, 6, uniform=LEQ if len(modes) == 1 else None)
    assert got.dtype == np.int32 and got.shape == (7, 33)
    np.testing.assert_array_equal(got, tree_traverse_python(x, *tables, 6))
    assert out.op.tag == TREE_TAG


def test_a_walk_goes_on_from_where_another_ended():
    """Three steps, then three more from there: the same ends as six steps."""
    rng = np.random.default_rng(5)
    tables = random_forest(rng, 6, 6, 5, MODES)
    x = _data(rng, "float32")
    mid, _, _, _ = run_walk("llvm", x, tables, 3)
    for target in TARGETS:
        end, _, _, _ = run_walk(target, x, tables, 3, start=mid)
        np.testing.assert_array_equal(end, tree_traverse_python(x, *tables, 6))
    assert (mid != end).any()  # three steps do not reach every leaf


def test_tree_traverse_compiles_for_sm80_and_sm90():
    rng = np.random.default_rng(6)
    tables = random_forest(rng, 4, 4, 5, MODES)
    _, out, s, args = run_walk("cuda", _data(rng, "float32"), tables, 4)
    build_all_arches(s, args + [out])


def _tensors(n=5, nodes=7, dtype="float32"):
    return (te.placeholder((n, 3), dtype, name="X"), te.placeholder((2,), "int32", name="R"),
            te.placeholder((nodes,), "int32", name="F"), te.placeholder((nodes,), dtype, name="T"),
            te.placeholder((nodes,), "int32", name="TN"), te.placeholder((nodes,), "int32", name="FN"))


@pytest.mark.parametrize("change, message", [
    (dict(X=te.placeholder((5, 3), "int32", name="X")), r"data has dtype int32; the trees compare floating-point"),
    (dict(T=te.placeholder((7,), "float64", name="T")), r"threshold has dtype float64, the data float32"),
    (dict(F=te.placeholder((6,), "int32", name="F")), r"threshold has 7 entries, the tables have 6"),
    (dict(TN=te.placeholder((7,), "float32", name="TN")), r"true_next must hold integers"),
    (dict(R=te.placeholder((2, 4), "int32", name="R")), r"roots must be an integer tensor \[trees\] .* or \[trees, "
                                                        r"batch\]"),
    (dict(mode=99), r"mode must be a table of mode codes or one of \(0, 1, 2, 3, 4, 5, 8"),
    (dict(depth=MAX_STEPS + 1), r"depth 65 is above 64 steps, the most one walk takes"),
    (dict(depth=-1), r"depth must be a non-negative int"),
])
def test_tree_traverse_argument_errors(change, message):
    x, r, f, t, tn, fn = _tensors()
    args = dict(X=x, R=r, F=f, T=t, TN=tn, FN=fn, mode=LEQ, depth=3)
    args.update(change)
    with pytest.raises(TopiError, match=message):
        topi.tree.tree_traverse(args["X"], args["R"], args["F"], args["T"], args["mode"], args["TN"], args["FN"],
                                args["depth"])
