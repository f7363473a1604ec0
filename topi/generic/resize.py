"""The generic (CPU) schedule of image resizing and upsampling: the injective
default (every stage inlined, the output's axes one loop)."""
from __future__ import annotations

from .default import check_cpu_target, schedule_injective_outputs
from .injective import schedule_injective_from_existing


def schedule_resize(outs):
    """The default schedule of ``topi.image.resize1d`` / ``resize2d`` and
    ``topi.nn.upsampling`` outputs (``outs``): every injective stage, the
    interpolation tables included, inlined; each output one loop."""
    check_cpu_target("schedule_resize")
    return schedule_injective_outputs(outs, schedule_injective_from_existing)


schedule_upsampling = schedule_resize
