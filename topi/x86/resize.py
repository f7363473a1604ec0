"""Image resizing (and upsampling) on CPUs: the per-axis interpolation tables
computed once, then the output a row at a time, rows over the cores, the channels
vectorized in NHWC.

A resize of an NCHW image recomputes nothing per pixel but the gathers: each
output row reads its two (linear) or four (cubic) input rows at the column
indices and weights of the width's tables; NHWC reads whole channel vectors.
"""
from __future__ import annotations

from ... import te
from ..generic.default import new_schedule
from ..image.resize import RESIZE, TABLE
from ..schedule_registry import register_schedule
from ..tag import has, is_injective
from ..utils import find_op, get_const_tuple, prod
from .injective import PARALLEL_MIN
from .utils import vector_lanes


def _inline_all_but_tables(s):
    """Inline every injective stage that is not an output, but the interpolation
    tables: those stay at the root, one short loop each."""
    for st in s.stages:
        op = st.op
        if not isinstance(op, te.ComputeOp) or st.is_output or op.reduce_axis or op.num_outputs != 1:
            continue
        if has(op.tag, TABLE):
            continue
        if is_injective(op.tag) or not op.tag:
            st.compute_inline()


def _channels_last(out) -> bool:
    """True when ``out`` is (an injective op of the same rank after) a resize whose
    layout puts the channels innermost (NHWC, NWC)."""
    op = find_op([out], lambda o: has(o.tag, RESIZE))
    if op is None or len(op.output(0).shape) != len(out.shape):
        return False
    return str(op.attrs.get("layout", "")).endswith("C")


def schedule_resize_rows(s, out):
    """Schedule the output ``out`` (a resize, or an injective op of one, the
    resize inlined) in ``s``: every axis but the innermost fused and spread over
    the cores; the innermost split into vectors when it is the channels (a
    contiguous read; along a row of NCHW the reads are gathers, which vectors do
    not speed up).

    Returns
    -------
    Schedule
        ``s``.
    """
    axes = list(s[out].op.axis)
    if not axes:
        return s
    inner = axes[-1]
    outer = s[out].fuse(*axes[:-1]) if len(axes) > 2 else (axes[0] if len(axes) == 2 else None)
    width = get_const_tuple(out.shape)[-1]
    lanes = vector_lanes(out.dtype)
    if _channels_last(out) and isinstance(width, int) and width >= lanes:
        _, vec = s[out].split(inner, factor=lanes)
        s[out].vectorize(vec)
    total = prod(get_const_tuple(out.shape))
    if outer is not None and (not isinstance(total, int) or total >= PARALLEL_MIN):
        s[out].parallel(outer)
    return s


@register_schedule("resize", "cpu")
def schedule_resize(outs):
    """The CPU schedule of ``topi.image.resize1d`` / ``resize2d`` and
    ``topi.nn.upsampling`` (and of injective ops after them): the interpolation
    tables at the root, every other injective stage inlined, each output row by
    row over the cores, vectorized along the channels in NHWC / NWC.

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s).

    Returns
    -------
    Schedule
    """
    outs, s = new_schedule(outs)
    _inline_all_but_tables(s)
    for out in outs:
        schedule_resize_rows(s, out)
    return s


schedule_upsampling = schedule_resize
