"""topi.random: Threefry-2x64-20 against Random123's known-answer vectors, the
uniform, normal and multinomial draws bit for bit against their numpy references
(topi.testing) on "llvm" and "cuda" (the emulator, checked race-free and in
bounds), their distributions (moments, frequencies), every float dtype staying
below ``high``, the key threaded through ``next_key``, distinct streams per salt;
one expected failure per argument error."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.topi.utils import TopiError
from topi_run import TARGETS, build_run

T = topi.testing
KEY = np.array([20261207, 3], "uint64")


def test_threefry_matches_random123_known_answers():
    # Random123's kat_vectors for threefry2x64_20: (counter, key) -> output
    cases = [((0, 0), (0, 0), (0xc2b6e3a8c2c69865, 0x6f81ed42f350084d)),
             ((0x243f6a8885a308d3, 0x13198a2e03707344), (0xa4093822299f31d0, 0x082efa98ec4e6c89),
              (0x263c7d30bb0f0af1, 0x56be8361d3311526))]
    c = te.placeholder((2, 4), "uint64", name="c")
    def word(w):
        return te.compute((2,), lambda i: topi.random.threefry2x64(
            c[i, 0], c[i, 1], c[i, 2], c[i, 3], lambda x0, x1: x0 if w == 0 else x1), name=f"w{w}")

    words = [word(0), word(1)]
    s = te.create_schedule([w.op for w in words])
    table = np.array([list(ctr) + list(key) for ctr, key, _ in cases], "uint64")
    got = build_run(s, [c], words, [table], "llvm")
    for i, (ctr, key, want) in enumerate(cases):
        assert (int(got[0][i]), int(got[1][i])) == want
        assert tuple(int(v) for v in T.threefry2x64_python(*ctr, *key)) == want


def run(target, fn, shape_args=(), extra=()):
    key = te.placeholder((2,), "uint64", name="key")
    placeholders = [te.placeholder(a.shape, str(a.dtype), name=f"p{i}") for i, a in enumerate(extra)]
    with tecc.target.Target(target):
        next_key, out = fn(key, *placeholders)
        s = topi.schedule([out, next_key], target)
    got, nk = build_run(s, [key] + placeholders, [out, next_key], [KEY] + list(extra), target)
    np.testing.assert_array_equal(nk, [KEY[0], KEY[1] + 1])
    return got


@pytest.mark.parametrize("target", TARGETS)
def test_uniform_bits_match_the_reference_and_fill_the_range(target):
    got = run(target, lambda k: topi.random.uniform(k, -2.0, 3.0, (64, 300), "float32", salt=9))
    np.testing.assert_array_equal(got, T.uniform_python(KEY, -2.0, 3.0, (64, 300), "float32", 9))
    assert got.min() >= -2.0 and got.max() < 3.0
    assert abs(got.mean() - 0.5) < 0.03 and abs(got.var() - 25 / 12) < 0.05  # 19,200 values
    assert np.histogram(got, bins=10, range=(-2, 3))[0].min() > 1700  # every tenth of the range filled


@pytest.mark.parametrize("target", TARGETS)
def test_normal_matches_the_reference_and_its_moments(target):
    got = run(target, lambda k: topi.random.normal(k, 1.5, 2.0, (20000,), "float32", salt=2))
    np.testing.assert_allclose(got, T.normal_python(KEY, 1.5, 2.0, (20000,), "float32", 2), rtol=1e-5, atol=1e-5)
    assert abs(got.mean() - 1.5) < 0.05 and abs(got.std() - 2.0) < 0.05
    assert abs(((got - 1.5) / 2.0 > 1.0).mean() - 0.1587) < 0.01  # the normal's tail past one deviation


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_every_dtype_stays_below_high(dtype):
    got = run("llvm", lambda k: topi.random.uniform(k, 0.0, 1.0, (4096,), dtype))
    assert str(got.dtype) == dtype and got.astype("float64").max() < 1.0 and got.astype("float64").min() >= 0.0
    np.testing.assert_array_equal(got, T.uniform_python(KEY, 0.0, 1.0, (4096,), dtype))


@pytest.mark.parametrize("target", TARGETS)
def test_multinomial_matches_the_reference_and_the_weights(target):
    weights = np.array([[1, 1, 2, 0], [0, 0, 0, 1], [1, 2, 3, 4]], "float32")
    got = run(target, lambda k, p: topi.random.multinomial(k, p, 3000, salt=4), extra=[weights])
    np.testing.assert_array_equal(got, T.multinomial_python(KEY, weights, 3000, 4))
    for row, w in zip(got, weights):
        freq = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(freq, w / w.sum(), atol=0.03)


def test_salts_and_keys_give_different_streams():
    a = T.uniform_python(KEY, 0, 1, (1000,), salt=0)
    assert not np.array_equal(a, T.uniform_python(KEY, 0, 1, (1000,), salt=1))
    assert not np.array_equal(a, T.uniform_python(KEY + np.array([0, 1], "uint64"), 0, 1, (1000,)))
    assert abs(np.corrcoef(a, T.uniform_python(KEY, 0, 1, (1000,), salt=1))[0, 1]) < 0.1


def test_low_and_high_may_be_scalar_tensors():
    lo = np.array(-1.0, "float32")
    hi = np.array([4.0], "float32")
    got = run("llvm", lambda k, a, b: topi.random.uniform(k, a, b, (500,)), extra=[lo, hi])
    np.testing.assert_array_equal(got, T.uniform_python(KEY, -1.0, 4.0, (500,)))


@pytest.mark.parametrize("call, match", [
    (lambda k: topi.random.uniform(te.placeholder((2,), "int64", name="k"), 0, 1, (3,)),
     r"key must be a uint64 tensor of shape \(2,\) -- \[seed, counter\] -- got int64 \(2,\)"),
    (lambda k: topi.random.uniform(k, 0, 1, (3,), "int32"), r"out_dtype int32 must be one of float64, float32"),
    (lambda k: topi.random.normal(k, 0, 1, (3, -1)), r"out_shape \(3, -1\) has a negative dimension"),
    (lambda k: topi.random.multinomial(k, te.placeholder((4,), name="p"), 2), r"probs must be a \[batch, classes\]"),
    (lambda k: topi.random.multinomial(k, te.placeholder((2, 4), name="p"), 0), r"num_samples must be at least 1"),
    (lambda k: topi.random.uniform(k, te.placeholder((2,), name="lo"), 1, (3,)),
     r"low must be a number or a scalar tensor, got shape \(2,\)"),
])
def test_argument_errors(call, match):
    with pytest.raises(TopiError, match=match):
        call(te.placeholder((2,), "uint64", name="key"))
