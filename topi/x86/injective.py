"""Element-wise, broadcast and injective operators on CPUs: one loop over the
output, vectorized inside and spread over the cores outside."""
from __future__ import annotations

from .. import tag
from ..generic.default import schedule_injective_outputs
from ..schedule_registry import register_schedule
from ..utils import fuse_all, get_const_tuple, prod
from .utils import vector_lanes, vector_width

#: fewer elements than this run on one core (a parallel region costs more)
PARALLEL_MIN = 4096


def schedule_injective_from_existing(sch, out):
    """Fuse ``out``'s axes, vectorize the innermost 4, 8 or 16 elements when the
    shape is static and allows, and parallelize the rest when large; ``sch``."""
    fused = fuse_all(sch, out)
    if fused is None:
        return sch
    total = prod(get_const_tuple(out.shape))
    static = isinstance(total, int)
    vector = vector_width(total, min_vectors=4)
    if vector > 1:
        fused, inner = sch[out].split(fused, factor=vector)
        sch[out].vectorize(inner)
    if not static or total >= PARALLEL_MIN:
        sch[out].parallel(fused)
    return sch


def schedule_injective_rows(sch, out):
    """Vectorize ``out``'s innermost axis whole and fuse the others into one loop,
    parallel when large; ``sch``.  An innermost axis shorter than a vector is
    unrolled instead, inside a loop over the axis before it, and the others fused.

    For an output that reads its inputs at remapped indices (concatenate, pad,
    transpose, slices, layout transforms): the loop over all elements fused and cut
    into vectors makes every lane divide its index back into coordinates (a
    concatenate of two 64x55x55 tensors ran at 30 ns per element); along a row the
    coordinates are those of the row, and only the innermost one moves.  With a
    short innermost axis (an image put in channel blocks, ``NCHW`` -> ``NCHW3c``)
    the C compiler vectorizes the loop over the pixels (0.22 ms on two cores
    before, 0.03 ms on one after, 2026-11-27)."""
    axes = list(sch[out].op.axis)
    if len(axes) < 2:
        return schedule_injective_from_existing(sch, out)
    shape = get_const_tuple(out.shape)
    short = len(axes) >= 3 and isinstance(shape[-1], int) and shape[-1] < vector_lanes(out.dtype)
    rows = axes[:-2] if short else axes[:-1]
    outer = sch[out].fuse(*rows) if len(rows) > 1 else rows[0]
    if short:
        sch[out].unroll(axes[-1])
    else:
        sch[out].vectorize(axes[-1])
    total = prod(shape)
    if not isinstance(total, int) or total >= PARALLEL_MIN:
        sch[out].parallel(outer)
    return sch


def _remaps_indices(out) -> bool:
    """True for an output whose own stage is injective but neither element-wise nor
    broadcast (it reads its inputs at indices computed from its own)."""
    return tag.is_injective(out.op.tag) and not tag.is_broadcast(out.op.tag)


def _schedule_output(sch, out):
    shape = get_const_tuple(out.shape)
    last = shape[-1] if shape else None
    lanes = vector_lanes(out.dtype)
    if _remaps_indices(out) and len(shape) >= 2 and isinstance(last, int):
        # rows of a vector or more, or short rows inside pixel loops of a vector or more
        if last >= lanes or (len(shape) >= 3 and isinstance(shape[-2], int) and shape[-2] >= lanes):
            return schedule_injective_rows(sch, out)
    return schedule_injective_from_existing(sch, out)


@register_schedule(("elemwise", "broadcast", "injective"), "cpu")
def schedule_injective(outs):
    """The CPU schedule of element-wise, broadcast and injective operators: every
    injective stage that is not an output inlined, each output one
    vectorized, parallel loop (along the rows, :func:`schedule_injective_rows`,
    for an output that remaps indices and has rows of a vector or more).

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    return schedule_injective_outputs(outs, _schedule_output)


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
