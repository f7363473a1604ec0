"""CPU schedules of the extern operators (sort, argsort, topk, cumsum/cumprod,
scatter_elements, scatter_nd, det): their statement already spreads the rows over the
cores (:mod:`..sort`, :mod:`..scan`, :mod:`..scatter`); the ``te.compute`` stages
around it get the vectorized, parallel injective schedule."""
from __future__ import annotations

from ..generic.extern import EXTERN_TAGS, named_cpu_schedule
from .injective import schedule_injective_from_existing


def _cpu(name, key):
    return named_cpu_schedule(name, EXTERN_TAGS[key], schedule_injective_from_existing, "cpu", "x86")


schedule_sort = _cpu("schedule_sort", "sort")
schedule_argsort = _cpu("schedule_argsort", "argsort")
schedule_topk = _cpu("schedule_topk", "topk")
schedule_scan = _cpu("schedule_scan", "scan")
schedule_scatter = _cpu("schedule_scatter", "scatter")
schedule_scatter_elements = schedule_scatter
schedule_scatter_nd = schedule_scatter
schedule_det = _cpu("schedule_det", "det")
schedule_nms = _cpu("schedule_nms", "nms")
