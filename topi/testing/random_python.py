"""numpy references of :mod:`tecc.topi.random`: Threefry-2x64-20 on ``uint64``
arrays, and the uniform, normal and multinomial draws built on it, bit for bit
(the normal and multinomial values up to the float rounding of log, cos and the
cumulative sums)."""
import numpy as np

from ..random import _FRACTION_BITS, PARITY, ROTATIONS, ROUNDS


def threefry2x64_python(c0, c1, k0, k1):
    """The two output words of Threefry-2x64-20 (``uint64`` arrays, broadcast)."""
    c0, c1, k0, k1 = (np.asarray(v, dtype=np.uint64) for v in (c0, c1, k0, k1))
    ks = (k0, k1, np.uint64(PARITY) ^ k0 ^ k1)
    with np.errstate(over="ignore"):
        x0, x1 = c0 + ks[0], c1 + ks[1]
        for r in range(ROUNDS):
            rot = np.uint64(ROTATIONS[r % 8])
            x0 = x0 + x1
            x1 = (x1 << rot) | (x1 >> (np.uint64(64) - rot))
            x1 = x1 ^ x0
            if r % 4 == 3:
                s = (r + 1) // 4
                x0 = x0 + ks[s % 3]
                x1 = x1 + ks[(s + 1) % 3] + np.uint64(s)
    return x0, x1


def _blocks(key, shape, salt):
    index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.uint64).reshape(shape)
    return threefry2x64_python(np.uint64(key[1]), index, np.uint64(key[0]), np.uint64(salt))


def _fraction(word, bits, dtype):
    return ((word >> np.uint64(64 - bits)).astype(dtype) * dtype(2.0 ** -bits))


def uniform_python(key, low, high, shape, dtype="float32", salt=0):
    """:func:`tecc.topi.random.uniform`'s values."""
    wide = np.float64 if dtype == "float64" else np.float32
    frac = _fraction(_blocks(key, shape, salt)[0], _FRACTION_BITS[dtype], wide)
    return (wide(low) + (wide(high) - wide(low)) * frac).astype(dtype)


def normal_python(key, mean, scale, shape, dtype="float32", salt=0):
    """:func:`tecc.topi.random.normal`'s values."""
    wide = np.float64 if dtype == "float64" else np.float32
    bits = 53 if wide is np.float64 else 24
    w0, w1 = _blocks(key, shape, salt)
    step = wide(2.0 ** -bits)
    u1 = ((w0 >> np.uint64(64 - bits)).astype(wide) + wide(1.0)) * step
    u2 = (w1 >> np.uint64(64 - bits)).astype(wide) * step
    z = np.sqrt(wide(-2.0) * np.log(u1)) * np.cos(wide(6.283185307179586) * u2)
    return (wide(mean) + wide(scale) * z).astype(dtype)


def multinomial_python(key, probs, num_samples, salt=0):
    """:func:`tecc.topi.random.multinomial`'s samples (int64)."""
    probs = np.asarray(probs)
    wide = np.float64 if probs.dtype == np.float64 else np.float32
    cdf = np.cumsum(probs.astype(wide), axis=1)
    batch, classes = probs.shape
    frac = _fraction(_blocks(key, (batch, num_samples), salt)[0], _FRACTION_BITS[np.dtype(wide).name], wide)
    goal = frac * cdf[:, -1:]
    below = (cdf[:, None, :] <= goal[:, :, None]).sum(-1)
    return np.minimum(below, classes - 1)
