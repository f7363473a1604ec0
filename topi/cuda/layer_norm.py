"""Layer, instance and group normalization on CUDA: one kernel, a block per row.

A *row* is the set of elements that share a mean and a variance (the indices along
the axes not normalized, and the group).  Its block reduces the row's sum and sum of
squares across its threads (cross-thread reductions: warp shuffles, then shared
memory), then the same threads write the row's elements, ``num_thread`` apart --
through an element-wise op after the norm when there is one (still one kernel).
"""
from __future__ import annotations

from ... import te
from .. import nn
from ..generic.default import new_schedule
from ..generic.norm import find_norm, norm_parts, rows_and_elements
from ..schedule_registry import register_schedule
from ..utils import fuse_axes, get_const_tuple
from .reduction import bind_row_blocks, threads_for
from .utils import max_threads


def _row_length(norm_op) -> int:
    axes, channel, group, _ = norm_parts(norm_op)
    shape = get_const_tuple(norm_op.output(0).shape)
    n = group
    for a in axes:
        n = n * shape[a] if isinstance(shape[a], int) and isinstance(n, int) else None
    return n


def schedule_norm_rows(s, out, norm_op, num_thread=None):
    """Schedule the normalization ``norm_op`` written through ``out`` (itself or an
    element-wise op of it, the normalization then inlined) in ``s``: a block per
    row, ``num_thread`` threads per block (by default a warp for rows of up to 32
    elements, up to 256 for longer ones)."""
    _, _, _, sums = norm_parts(norm_op)
    if num_thread is None:
        num_thread = threads_for(_row_length(norm_op), max_threads(256))
    rows, _, elements = rows_and_elements(s, out, norm_op)
    row = fuse_axes(s, out, rows)  # None when every axis is normalized: one row, one block
    return bind_row_blocks(s, out, row, fuse_axes(s, out, elements), sums, num_thread)


@register_schedule(("layer_norm", "instance_norm", "group_norm"), "cuda")
def schedule_layer_norm(outs, out=None, num_thread=None):
    """The CUDA schedule of ``layer_norm``, ``instance_norm`` and ``group_norm`` (and
    of an element-wise op after them): one kernel, a block per row.

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s) (TVM's form): a new schedule, the threads per block
        fitted to the row's length.  Or a :class:`~tecc.te.Schedule` with ``out`` the
        normalization's output (tecc's earlier form): that schedule, with
        ``num_thread`` threads per row (128 by default).

    Returns
    -------
    Schedule
    """
    if isinstance(outs, te.Schedule):
        return schedule_norm_rows(outs, out, out.op, 128 if num_thread is None else num_thread)
    outs, s = new_schedule(outs)
    norm, final = find_norm(s, outs, "schedule_layer_norm")
    return schedule_norm_rows(s, final, norm, num_thread)


schedule_instance_norm = schedule_layer_norm
schedule_group_norm = schedule_layer_norm


def layernorm_rows(M, N, num_thread=128, eps=1e-5, dtype="float32"):
    """Layer norm of the rows of an ``M x N`` matrix (:func:`schedule_layer_norm`):
    ``(schedule, [X, gamma, beta, Out])``."""
    X = te.placeholder((M, N), name="X", dtype=dtype)
    gamma = te.placeholder((N,), name="gamma", dtype=dtype)
    beta = te.placeholder((N,), name="beta", dtype=dtype)
    Out = nn.layer_norm(X, gamma, beta, -1, eps)
    s = te.create_schedule(Out.op)
    schedule_norm_rows(s, Out, Out.op, num_thread)
    return s, [X, gamma, beta, Out]
