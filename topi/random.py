"""Counter-based random numbers (TVM's ``topi.random`` names): ``uniform``,
``normal`` and ``multinomial``, each element drawn by the Threefry-2x64-20
block cipher (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC'11; the generator of JAX and TVM).

Element ``i`` (row-major) of a draw is the encryption of the counter
``(key[1], i)`` under the key ``(key[0], salt)``: ``key`` is a ``uint64`` tensor
``[seed, counter]`` (a run counter, say), ``salt`` an integer telling apart the
draws that share a key (one per operator).  Every element is a pure function of
its index, so a draw is an ordinary ``te.compute``: it fuses and is scheduled like
any element-wise stage, and gives the same bits on every target (the C backend,
CUDA, the emulator) and in :func:`tecc.topi.testing.threefry2x64_python`.

Unlike TVM's, the key here is two words and the draws return ``(next_key,
values)`` with ``next_key = [seed, counter + 1]``: a caller threading the key
through its draws gets fresh numbers from each.

From the bits: a uniform value takes the top bits as a fraction in ``[0, 1)``
(24 for float32, 53 for float64, 11 for float16 and 8 for bfloat16, so that no
value rounds up to 1), scaled to ``[low, high)``; a normal value is Box-Muller's
``sqrt(-2 log u1) cos(2 pi u2)`` from the block's two words; a multinomial
sample is the first class whose cumulative weight passes a uniform fraction of
the total.
"""
from __future__ import annotations

from typing import Sequence

from .. import te, tir
from ..tir import dtype as _dt
from .scan import cumsum
from .utils import TopiError, get_const_tuple

#: Threefry's key-schedule parity constant (Skein's)
PARITY = 0x1BD11BDAA9FC1A22
#: the rotations of Threefry-2x64's rounds, in order (they repeat every 8 rounds)
ROTATIONS = (16, 42, 12, 31, 16, 32, 24, 21)
#: rounds of the cipher (Threefry-2x64-20)
ROUNDS = 20

#: the fraction bits a uniform value of each dtype takes from the top of the 64
_FRACTION_BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def _u64(v):
    return tir.const(v, "uint64")


def threefry2x64(c0, c1, k0, k1, combine):
    """``combine(x0, x1)`` of the two ``uint64`` output words of Threefry-2x64-20
    for the counter ``(c0, c1)`` and the key ``(k0, k1)`` (``uint64``
    expressions), every intermediate word bound once (``tir.Let``): written as one
    expression, each round would copy the words it reads, and twenty rounds
    would make it exponentially large."""
    bindings = []

    def bind(value, name):
        v = tir.Var(f"{name}_{len(bindings)}", "uint64")
        bindings.append((v, value))
        return v

    k0, k1 = bind(k0, "k"), bind(k1, "k")
    ks = (k0, k1, bind(_u64(PARITY) ^ k0 ^ k1, "k"))
    x0, x1 = bind(c0 + ks[0], "x"), bind(c1 + ks[1], "y")
    for r in range(ROUNDS):
        rot = ROTATIONS[r % 8]
        x0 = bind(x0 + x1, "x")
        x1 = bind(((x1 << _u64(rot)) | (x1 >> _u64(64 - rot))) ^ x0, "y")
        if r % 4 == 3:  # inject the key schedule every four rounds
            s = (r + 1) // 4
            x0 = bind(x0 + ks[s % 3], "x")
            x1 = bind(x1 + ks[(s + 1) % 3] + _u64(s), "y")
    out = combine(x0, x1)
    for v, value in reversed(bindings):
        out = tir.Let(v, value, out)
    return out


def check_key(key, what):
    """Raise unless ``key`` is a ``uint64`` tensor of shape (2,)."""
    if not isinstance(key, te.Tensor) or key.dtype != "uint64" or get_const_tuple(key.shape) != (2,):
        got = f"{key.dtype} {get_const_tuple(key.shape)}" if isinstance(key, te.Tensor) else repr(key)
        raise TopiError(f"{what}: key must be a uint64 tensor of shape (2,) -- [seed, counter] -- got {got}")


def _check_shape(out_shape, what) -> tuple:
    try:
        shape = tuple(int(d) for d in out_shape)
    except (TypeError, ValueError):
        raise TopiError(f"{what}: out_shape must be a tuple of ints (a static shape), got {out_shape!r}") from None
    if any(d < 0 for d in shape):
        raise TopiError(f"{what}: out_shape {shape} has a negative dimension")
    return shape


def _float_dtype(dtype, what) -> str:
    dtype = _dt.canonical(dtype)
    if dtype not in _FRACTION_BITS:
        raise TopiError(f"{what}: out_dtype {dtype} must be one of {', '.join(_FRACTION_BITS)}")
    return dtype


def _flat_index(indices, shape):
    flat = _u64(0)
    for i, d in zip(indices, shape):
        flat = flat * _u64(d) + i.astype("uint64")
    return flat


def _block(key, salt, indices, shape, combine):
    return threefry2x64(key[1], _flat_index(indices, shape), key[0], _u64(salt), combine)


def _fraction(word, dtype):
    """``word``'s top bits as a fraction in [0, 1) of ``dtype``."""
    bits = _FRACTION_BITS[dtype]
    wide = "float64" if dtype == "float64" else "float32"
    frac = (word >> _u64(64 - bits)).astype(wide) * tir.const(2.0 ** -bits, wide)
    return frac if wide == dtype else frac.astype(dtype)


def _scalar(x, dtype, what, name):
    """``x`` (a number or a scalar tensor of shape () or (1,)) as a ``dtype`` expression."""
    if isinstance(x, te.Tensor):
        shape = get_const_tuple(x.shape)
        if shape not in ((), (1,)):
            raise TopiError(f"{what}: {name} must be a number or a scalar tensor, got shape {shape}")
        v = x() if shape == () else x[0]
        return v if v.dtype == dtype else v.astype(dtype)
    return tir.const(float(x), dtype)


def _draw_plan(key, out_shape, out_dtype, what) -> tuple:
    """``(shape, dtype, wide)`` of a uniform or normal draw: its checked shape and
    dtype, and the dtype it is computed in (float64, else float32)."""
    check_key(key, what)
    shape = _check_shape(out_shape, what)
    dtype = _float_dtype(out_dtype, what)
    return shape, dtype, "float64" if dtype == "float64" else "float32"


def _draw(key, salt, shape, from_bits, name):
    """``next_key`` and the stage whose element is ``from_bits(w0, w1)`` of its block."""
    return next_key(key), te.compute(shape, lambda *i: _block(key, salt, i, shape, from_bits), name=name,
                                     tag="injective")


def next_key(key):
    """``[seed, counter + 1]`` of ``key``."""
    return te.compute((2,), lambda i: tir.Select(i == 0, key[0], key[1] + _u64(1)), name="next_key", tag="injective")


def random_bits(key, out_shape: Sequence[int], salt: int = 0, name: str = "random_bits"):
    """``uint64`` random bits of shape ``out_shape`` (word 0 of each element's
    block; see the module's description)."""
    what = f"random_bits(out_shape={tuple(out_shape)})"
    check_key(key, what)
    shape = _check_shape(out_shape, what)
    return te.compute(shape, lambda *i: _block(key, salt, i, shape, lambda w0, w1: w0), name=name, tag="injective")


def uniform(key, low, high, out_shape: Sequence[int], out_dtype: str = "float32", salt: int = 0):
    """Values uniform in ``[low, high)``.

    Parameters
    ----------
    key : Tensor
        ``uint64`` of shape (2,): ``[seed, counter]``.
    low, high : float or scalar Tensor
    out_shape : tuple of int
    out_dtype : str
        float16, bfloat16, float32 or float64.
    salt : int
        Tells apart draws sharing ``key``.

    Returns
    -------
    (Tensor, Tensor)
        ``next_key`` and the values.
    """
    what = f"uniform(out_shape={tuple(out_shape)}, out_dtype={out_dtype!r})"
    shape, dtype, wide = _draw_plan(key, out_shape, out_dtype, what)
    lo, hi = _scalar(low, wide, what, "low"), _scalar(high, wide, what, "high")

    def from_bits(w0, w1):
        v = lo + (hi - lo) * _fraction(w0, dtype).astype(wide)
        return v if wide == dtype else v.astype(dtype)

    return _draw(key, salt, shape, from_bits, "uniform")


def normal(key, mean, scale, out_shape: Sequence[int], out_dtype: str = "float32", salt: int = 0):
    """Values of a normal distribution of ``mean`` and standard deviation
    ``scale`` (Box-Muller on each element's block); the arguments as
    :func:`uniform`'s."""
    what = f"normal(out_shape={tuple(out_shape)}, out_dtype={out_dtype!r})"
    shape, dtype, wide = _draw_plan(key, out_shape, out_dtype, what)
    mu, sigma = _scalar(mean, wide, what, "mean"), _scalar(scale, wide, what, "scale")
    bits = _FRACTION_BITS[wide]
    step = tir.const(2.0 ** -bits, wide)

    def from_bits(w0, w1):
        u1 = ((w0 >> _u64(64 - bits)).astype(wide) + tir.const(1.0, wide)) * step  # (0, 1]: log is finite
        u2 = (w1 >> _u64(64 - bits)).astype(wide) * step
        z = te.sqrt(tir.const(-2.0, wide) * te.log(u1)) * te.cos(tir.const(6.283185307179586, wide) * u2)
        v = mu + sigma * z
        return v if wide == dtype else v.astype(dtype)

    return _draw(key, salt, shape, from_bits, "normal")


def multinomial(key, probs, num_samples: int, out_dtype: str = "int32", salt: int = 0):
    """``num_samples`` class indices per row of ``probs`` (``[batch, classes]``
    non-negative weights, not necessarily normalized), each drawn with
    probability ``weight / row total``: the first class whose cumulative weight
    exceeds a uniform fraction of the total (a row of zero weights gives the
    last class).

    Returns
    -------
    (Tensor, Tensor)
        ``next_key`` and the samples ``[batch, num_samples]`` of ``out_dtype``.
    """
    what = f"multinomial(num_samples={num_samples})"
    check_key(key, what)
    if not isinstance(probs, te.Tensor) or len(probs.shape) != 2:
        raise TopiError(f"{what}: probs must be a [batch, classes] tensor, got "
                        f"{get_const_tuple(probs.shape) if isinstance(probs, te.Tensor) else probs!r}")
    if not _dt.is_float(probs.dtype):
        raise TopiError(f"{what}: probs must be floating point, got {probs.dtype}")
    if not _dt.is_integer(_dt.canonical(out_dtype)):
        raise TopiError(f"{what}: out_dtype must be an integer type, got {out_dtype}")
    num_samples = int(num_samples)
    if num_samples < 1:
        raise TopiError(f"{what}: num_samples must be at least 1")
    batch, classes = get_const_tuple(probs.shape)
    wide = "float64" if probs.dtype == "float64" else "float32"
    weights = probs if probs.dtype == wide else te.compute(probs.shape, lambda b, c: probs[b, c].astype(wide),
                                                           name="weights", tag="elemwise")
    cdf = cumsum(weights, axis=1)
    shape = (batch, num_samples)

    def target(b, s):
        return _block(key, salt, (b, s), shape, lambda w0, w1: _fraction(w0, wide) * cdf[b, classes - 1])

    goal = te.compute(shape, target, name="multinomial_target", tag="injective")
    c = te.reduce_axis((0, classes), name="c")
    below = te.compute(shape, lambda b, s: te.sum(tir.Select(cdf[b, c] <= goal[b, s], 1, 0), axis=c),
                       name="multinomial_count", tag="comm_reduce")
    out = te.compute(shape, lambda b, s: te.min(below[b, s], classes - 1).astype(out_dtype), name="multinomial",
                     tag="elemwise")
    return next_key(key), out


__all__ = ["PARITY", "ROTATIONS", "multinomial", "next_key", "normal", "random_bits", "threefry2x64", "uniform"]
