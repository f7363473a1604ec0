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
    parallel when large; ``sch``.

    For an output that reads its inputs at remapped indices (concatenate, pad,
    transpose, slices): the loop over all elements fused and cut into vectors
    makes every lane divide its index back into coordinates (a concatenate of two
    64x55x55 tensors ran at 30 ns per element); along a row the coordinates are
    those of the row, and only the innermost one moves."""
    axes = list(sch[out].op.axis)
    if len(axes) < 2:
        return schedule_injective_from_existing(sch, out)
    shape = get_const_tuple(out.shape)
    outer = sch[out].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
    sch[out].vectorize(axes[-1])
    total = prod(shape)
    if not isinstance(total, int) or total >= PARALLEL_MIN:
        sch[out].parallel(outer)
    return sch


def _remaps_indices(out) -> bool:
    """True for an output whose own stage is injective but neither element-wise nor
    broadcast (it reads its inputs at indices computed from its own)."""
    return tag.is_injective(out.op.tag) and not tag.is_broadcast(out.op.tag)


def schedule_injective_short_rows(sch, out):
    """Unroll ``out``'s innermost axis (shorter than a vector), fuse all but the two
    innermost axes into one loop, parallel when large; ``sch``.

    For an output that remaps indices with a short innermost axis (an image put in
    channel blocks, ``NCHW`` -> ``NCHW3c``): the loop over all elements fused and
    cut into vectors divides every lane's index back into five coordinates; along
    a row the coordinates of the row are computed once and the C compiler
    vectorizes the loop over the pixels (1x3x224x224 -> NCHW3c: 0.22 ms on two
    cores before, 0.03 ms on one after, 2026-11-27)."""
    axes = list(sch[out].op.axis)
    shape = get_const_tuple(out.shape)
    outer = sch[out].fuse(*axes[:-2]) if len(axes) > 3 else axes[0]
    sch[out].unroll(axes[-1])
    total = prod(shape)
    if not isinstance(total, int) or total >= PARALLEL_MIN:
        sch[out].parallel(outer)
    return sch


def _schedule_output(sch, out):
    shape = get_const_tuple(out.shape)
    last = shape[-1] if shape else None
    if _remaps_indices(out) and len(shape) >= 2 and isinstance(last, int):
        if last >= vector_lanes(out.dtype):
            return schedule_injective_rows(sch, out)
        if len(shape) >= 3 and isinstance(shape[-2], int) and shape[-2] >= vector_lanes(out.dtype):
            return schedule_injective_short_rows(sch, out)
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
