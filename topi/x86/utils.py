"""Helpers of the CPU schedules: vector widths."""
from __future__ import annotations

from ...target import Target

#: the vector widths (in elements) a schedule splits an axis by, widest first
VECTOR_WIDTHS = (16, 8, 4)


def vector_width(extent, min_vectors=0) -> int:
    """The widest of :data:`VECTOR_WIDTHS` that divides ``extent`` into at least
    ``min_vectors`` vectors; 1 when none does or ``extent`` is symbolic."""
    if not isinstance(extent, int):
        return 1
    return next((v for v in VECTOR_WIDTHS if extent % v == 0 and extent >= min_vectors * v), 1)


def vector_lanes(dtype: str, target=None) -> int:
    """Elements of ``dtype`` in one vector register of ``target`` (the current one,
    else plain ``llvm``)."""
    target = Target.canon(target or Target.current(allow_none=True) or "llvm")
    bits = int("".join(c for c in dtype if c.isdigit()) or 32)
    return max(1, target.vector_bytes() * 8 // bits)
