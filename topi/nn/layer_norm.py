"""Layer normalization over the last axis of a 2-D tensor."""
from __future__ import annotations

from ... import te


def layer_norm(x, gamma, beta, epsilon=1e-5, name="Out"):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last axis of a 2-D
    tensor, from the row sums ``Sum`` and ``SqSum`` (tagged ``layer_norm_sum``)."""
    M, N = x.shape
    k1 = te.reduce_axis((0, N), name="k1")
    k2 = te.reduce_axis((0, N), name="k2")
    total = te.compute((M,), lambda i: te.sum(x[i, k1], axis=k1), name="Sum", tag="layer_norm_sum")
    squares = te.compute((M,), lambda i: te.sum(x[i, k2] * x[i, k2], axis=k2), name="SqSum",
                         tag="layer_norm_sum")
    inv_n = 1.0 / N

    def norm(i, j):
        mean = total[i] * inv_n
        var = squares[i] * inv_n - mean * mean
        return (x[i, j] - mean) * te.rsqrt(var + epsilon) * gamma[j] + beta[j]

    return te.compute((M, N), norm, name=name, tag="layer_norm")
