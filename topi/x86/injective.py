"""Element-wise, broadcast and injective operators on CPUs: one loop over the
output, vectorized inside and spread over the cores outside."""
from __future__ import annotations

from ..generic.default import schedule_injective_outputs
from ..schedule_registry import register_schedule
from ..utils import fuse_all, get_const_tuple, prod
from .utils import vector_width

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


@register_schedule(("elemwise", "broadcast", "injective"), "cpu")
def schedule_injective(outs):
    """The CPU schedule of element-wise, broadcast and injective operators: every
    injective stage that is not an output inlined, each output one
    vectorized, parallel loop.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    return schedule_injective_outputs(outs, schedule_injective_from_existing)


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
