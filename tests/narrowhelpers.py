"""Test helpers of the narrow types (bfloat16, the 8- and 4-bit floats): the floats
around every rounding boundary of a format, and a bit comparison that takes any NaN
for any NaN."""
import numpy as np

from tecc.runtime import dtypes as D

#: the 8- and 4-bit storage floats
NARROW_FLOATS = sorted(f for f in D.FLOAT_FORMATS if f != "bfloat16")


def boundary_samples(fmt, width=32, random=200_000, seed=0, limit=None):
    """Every finite value of ``fmt``, every midpoint between neighbours, and the
    floats a couple of ulps around each (both signs), a little past the largest value,
    the specials, and random bit patterns (``limit``: at most that many of the points
    around the values, drawn at random)."""
    ft, ut = (np.float32, np.uint32) if width == 32 else (np.float64, np.uint64)
    rng = np.random.default_rng(seed)
    values = D.decode(np.arange(1 << fmt.bits).astype(fmt.storage), fmt.name).astype(np.float64)
    values = np.unique(values[np.isfinite(values)])
    points = np.concatenate([values, (values[1:] + values[:-1]) / 2, [fmt.max * 1.0625, fmt.max * 2]]).astype(ft)
    points = np.concatenate([points, -points])
    bits = points.view(ut).astype(np.int64)
    near = np.concatenate([bits + d for d in (-2, -1, 0, 1, 2)])
    near = near[near >= 0].astype(ut).view(ft)
    if limit is not None and len(near) > limit:
        near = rng.choice(near, limit, replace=False)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40], dtype=ft)
    noise = rng.integers(0, 2**32, size=random, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(ft)
    return np.concatenate([near, special, noise])


def same_bits_or_both_nan(a, b, dtype):
    return (a == b) | (np.isnan(D.decode(a, dtype)) & np.isnan(D.decode(b, dtype)))
