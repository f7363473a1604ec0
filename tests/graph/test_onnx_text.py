"""ONNX's TfIdfVectorizer: random pools of uni-, bi- and trigrams (a repeated
n-gram, n-grams sharing an output column, sizes outside [min, max] whose ids are
still counted off), skips, the TF / IDF / TFIDF modes with and without weights,
[C] and [N, C] int32 and int64 token ids, against ONNX's reference (its counts)
and onnxruntime (weights per pool n-gram, as the specification has them), on the
C backend and the CUDA emulator; one expected failure per user error."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tecc.graph.frontend import OnnxImportError, from_onnx  # noqa: E402
from ops_run import tecc_outputs  # noqa: E402


def tfidf_model(shape, dtype=TensorProto.INT64, **attrs):
    node = helper.make_node("TfIdfVectorizer", ["X"], ["Y"], name="tfidf", **attrs)
    graph = helper.make_graph([node], "m", [helper.make_tensor_value_info("X", dtype, list(shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])


def random_pool(rng, repeat, vocab=6):
    """Five unigrams, eight distinct bigrams (``repeat``: the last one repeats the
    third), five trigrams, as pool_int64s and ngram_counts; ids 0..17."""
    uni = rng.choice(vocab, 5, replace=False).tolist()
    pairs = rng.permutation(vocab * vocab)[:8]
    bi = np.stack([pairs // vocab, pairs % vocab], axis=1)
    if repeat:
        bi[7] = bi[2]  # a repeated bigram: its last entry counts (onnxruntime refuses the model)
    tri = rng.integers(vocab, size=(5, 3))
    pool = uni + bi.reshape(-1).tolist() + tri.reshape(-1).tolist()
    return pool, [0, 5, 21], 5 + 8 + 5


CASES = [  # (min, max, skip, mode, weights?, shared columns?, shape, dtype)
    (1, 1, 0, "TF", False, False, (2, 12), TensorProto.INT64),
    (1, 3, 2, "TF", False, False, (3, 10), TensorProto.INT32),
    (2, 3, 1, "TFIDF", True, False, (17,), TensorProto.INT64),
    (2, 2, 3, "IDF", True, False, (2, 9), TensorProto.INT64),
    (1, 2, 1, "TFIDF", False, True, (2, 9), TensorProto.INT64),
    (1, 3, 0, "IDF", False, True, (4, 7), TensorProto.INT32),
    (3, 3, 4, "TFIDF", False, False, (1, 20), TensorProto.INT64),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}grams_skip{c[2]}_{c[3]}" for c in CASES])
def test_tfidf_vectorizer_matches_onnx_reference_and_onnxruntime(case):
    lo, hi, skip, mode, weighted, shared, shape, dtype = case
    rng = np.random.default_rng(CASES.index(case))
    pool, counts, n = random_pool(rng, repeat=shared)
    indexes = rng.permutation(n) if not shared else rng.integers(n // 2, size=n)
    width = int(max(indexes)) + 1
    attrs = dict(min_gram_length=lo, max_gram_length=hi, max_skip_count=skip, mode=mode, ngram_counts=counts,
                 ngram_indexes=[int(i) for i in indexes], pool_int64s=pool)
    if weighted:  # one per pool n-gram (by id, as the specification and onnxruntime read them)
        attrs["weights"] = np.round(rng.uniform(0.5, 2.0, n), 3).tolist()
    m = tfidf_model(shape, dtype, **attrs)
    x = rng.integers(6, size=shape).astype("int32" if dtype == TensorProto.INT32 else "int64")
    # ONNX's reference counts (its IDF and TFIDF without weights fail on weights=None: applied here)
    tf_model = tfidf_model(shape, dtype, **dict(attrs, mode="TF", weights=None))
    tf = ReferenceEvaluator(tf_model).run(None, {"X": x})[0]
    assert tf.any()  # the data meet the pool
    w = np.ones(width, np.float32)
    if weighted:  # ngram_indexes is a permutation here: column indexes[i] is n-gram i's
        w[indexes] = attrs["weights"]
    want = {"TF": tf, "IDF": np.where(tf > 0, w, 0).astype(np.float32), "TFIDF": tf * w}[mode]
    for target in ("llvm", "cuda"):
        got = tecc_outputs(m, {"X": x}, target=target)[0]
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    ort = pytest.importorskip("onnxruntime")
    if not shared:  # onnxruntime refuses a repeated n-gram
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(sess.run(None, {"X": x})[0], want, rtol=1e-6)


@pytest.mark.parametrize("attrs, message", [
    (dict(pool_strings=["a", "b"], ngram_counts=[0], ngram_indexes=[0, 1]),
     r"TfIdfVectorizer node 'tfidf': its pool is strings \(pool_strings\)"),
    (dict(pool_int64s=[1, 2, 3], ngram_counts=[0, 0], ngram_indexes=[0]),
     r"pool_int64s\[0:3\] holds 3 items for the 2-grams: not a whole number of 2-grams"),
    (dict(pool_int64s=[1, 2], ngram_counts=[0], ngram_indexes=[0]),
     r"the pool has 2 n-grams but ngram_indexes has 1 entries"),
    (dict(pool_int64s=[1, 2], ngram_counts=[0], ngram_indexes=[0, 1], mode="BM25"),
     r"mode is 'BM25'; it takes one of TF, IDF, TFIDF"),
    (dict(pool_int64s=[1, 2], ngram_counts=[0], ngram_indexes=[0, 1], mode="IDF", weights=[1.0]),
     r"weights has 1 entries; it needs one per pool n-gram \(2, as ngram_indexes\)"),
    (dict(pool_int64s=[1, 2], ngram_counts=[0, 5], ngram_indexes=[0, 1]),
     r"ngram_counts \[0, 5\] must be non-decreasing starts into pool_int64s \(2 items\)"),
])
def test_tfidf_vectorizer_errors(attrs, message):
    attrs = dict(dict(min_gram_length=1, max_gram_length=2, max_skip_count=0, mode="TF"), **attrs)
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(tfidf_model((2, 5), **attrs))


def test_tfidf_vectorizer_refuses_float_input():
    m = tfidf_model((2, 5), TensorProto.FLOAT, min_gram_length=1, max_gram_length=1, max_skip_count=0, mode="TF",
                    ngram_counts=[0], ngram_indexes=[0], pool_int64s=[3])
    with pytest.raises(OnnxImportError, match=r"the input has dtype float32; TfIdfVectorizer counts int32 or int64"):
        from_onnx(m)
