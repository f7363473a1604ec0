"""Layer norm on CUDA: one kernel, a block per row."""
from __future__ import annotations

from ... import te
from .. import nn
from .reduction import schedule_rows


def schedule_layer_norm(s, Out, num_thread=128):
    """Layer norm in one kernel, a block per row; the sum and sum of squares are
    cross-thread reductions."""
    sums = [t for t in Out.op.input_tensors if getattr(t.op, "tag", "") == "layer_norm_sum"]
    return schedule_rows(s, Out, sums, num_thread)


def layernorm_rows(M, N, num_thread=128, eps=1e-5, dtype="float32"):
    """Layer norm of the rows of an ``M x N`` matrix (:func:`schedule_layer_norm`)."""
    X = te.placeholder((M, N), name="X", dtype=dtype)
    gamma = te.placeholder((N,), name="gamma", dtype=dtype)
    beta = te.placeholder((N,), name="beta", dtype=dtype)
    Out = nn.layer_norm(X, gamma, beta, eps)
    s = te.create_schedule(Out.op)
    schedule_layer_norm(s, Out, num_thread)
    return s, [X, gamma, beta, Out]
