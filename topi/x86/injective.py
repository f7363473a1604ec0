"""Element-wise, broadcast and injective operators on CPUs: one loop over the
output, vectorized inside and spread over the cores outside."""
from __future__ import annotations

from ... import te
from ...te.schedule import AutoInlineInjective
from ..generic.default import outputs_of
from ..schedule_registry import register_schedule
from ..utils import get_const_tuple, prod

#: fewer elements than this run on one core (a parallel region costs more)
PARALLEL_MIN = 4096


def schedule_injective_from_existing(sch, out):
    """Fuse ``out``'s axes, vectorize the innermost 4, 8 or 16 elements when the
    shape is static and allows, and parallelize the rest when large; ``sch``."""
    axes = list(sch[out].op.axis)
    if not axes:
        return sch
    fused = sch[out].fuse(*axes) if len(axes) > 1 else axes[0]
    total = prod(get_const_tuple(out.shape))
    static = isinstance(total, int)
    vector = next((v for v in (16, 8, 4) if static and total % v == 0 and total >= 4 * v), 1)
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
    outs = outputs_of(outs)
    s = te.create_schedule([t.op for t in outs])
    AutoInlineInjective(s)
    for t in outs:
        schedule_injective_from_existing(s, t)
    return s


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
