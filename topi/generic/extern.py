"""Schedules of operators computed by ``te.extern`` statements (sort, argsort, topk,
cumsum/cumprod, scatter_elements, scatter_nd, det): the statement already says how it
runs, so the schedule only places the ``te.compute`` stages around it.

:func:`schedule_extern_graph` is shared by the CPU (:mod:`.x86`, generic) and CUDA
(:mod:`..cuda.sort`) schedules, each passing its injective schedule."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from .. import tag as _tag
from ..schedule_registry import register_schedule
from .default import check_cpu_target, new_schedule
from .injective import schedule_injective_from_existing

#: the tags of the extern stages of topi (:mod:`..sort`, :mod:`..scan`, :mod:`..scatter`, :mod:`..linalg`)
EXTERN_TAGS = {"sort": ("sort",), "argsort": ("argsort",), "topk": ("topk",), "scan": ("scan",),
               "scatter": ("scatter",), "det": ("det",), "nms": ("nms",)}


def schedule_extern_graph(outs, schedule_from_existing, what, gpu):
    """A new schedule of ``outs`` in which every extern stage runs as written and
    every ``te.compute`` stage is either inlined (injective, not an output, read by
    computes only) or scheduled with ``schedule_from_existing(s, tensor)``.

    Parameters
    ----------
    outs : Tensor or list of Tensor
    schedule_from_existing : callable
        The target's injective schedule of one tensor in an existing schedule.
    what : str
        The schedule's name, for error messages.
    gpu : bool
        Whether the target is a GPU: a tagged extern stage must then launch GPU
        threads, and must not otherwise.

    Raises
    ------
    ScheduleError
        A tagged extern stage declared for the other kind of target.
    """
    from ..sort import is_gpu_body
    outs, s = new_schedule(outs)
    out_ops = {t.op for t in outs}
    consumers = {}
    for st in s.stages:
        for t in st.op.input_tensors:
            consumers.setdefault(t.op, []).append(st.op)
    for st in s.stages:
        op = st.op
        if isinstance(op, te.ExternOp) and op.tag and is_gpu_body(op.body) != gpu:
            kind, other = ("CPU", "GPU") if gpu else ("GPU", "CPU")
            raise ScheduleError(
                f"{what}: the extern stage {op.name!r} (tag {op.tag!r}) holds the {kind} statement but this is a "
                f"{other} schedule; declare it with topi.cuda.<op> or inside `with Target('cuda'):` for CUDA, with "
                "topi.<op> outside a GPU target for CPUs")
    for st in s.stages:
        op = st.op
        if not isinstance(op, te.ComputeOp) or op in out_ops:
            continue
        readers = consumers.get(op, [])
        if (_tag.is_injective(op.tag or _tag.INJECTIVE) and not op.reduce_axis and op.num_outputs == 1 and readers
                and all(isinstance(c, te.ComputeOp) for c in readers)):
            st.compute_inline()
        else:
            schedule_from_existing(s, op.output(0))
    for t in outs:
        if isinstance(t.op, te.ComputeOp):
            schedule_from_existing(s, t)
    return s


def named_cpu_schedule(name, tags, schedule_from_existing, target_key, module_doc):
    """``name(outs)``: :func:`schedule_extern_graph` with the CPU injective schedule
    ``schedule_from_existing``, registered for ``tags`` under ``target_key``."""
    def schedule(outs):
        check_cpu_target(name)
        return schedule_extern_graph(outs, schedule_from_existing, f"topi.{module_doc}.{name}", gpu=False)

    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = (f"The {module_doc} schedule of the output(s) of {', '.join(tags)}: the extern statement "
                        "as written, the computes around it inlined or scheduled as injective.")
    return register_schedule(tags, target_key)(schedule)


schedule_sort = named_cpu_schedule("schedule_sort", EXTERN_TAGS["sort"], schedule_injective_from_existing,
                                   "generic", "generic")
schedule_argsort = named_cpu_schedule("schedule_argsort", EXTERN_TAGS["argsort"], schedule_injective_from_existing,
                                      "generic", "generic")
schedule_topk = named_cpu_schedule("schedule_topk", EXTERN_TAGS["topk"], schedule_injective_from_existing,
                                   "generic", "generic")
schedule_scan = named_cpu_schedule("schedule_scan", EXTERN_TAGS["scan"], schedule_injective_from_existing,
                                   "generic", "generic")
schedule_scatter = named_cpu_schedule("schedule_scatter", EXTERN_TAGS["scatter"], schedule_injective_from_existing,
                                      "generic", "generic")
schedule_scatter_elements = schedule_scatter
schedule_scatter_nd = schedule_scatter
schedule_det = named_cpu_schedule("schedule_det", EXTERN_TAGS["det"], schedule_injective_from_existing,
                                  "generic", "generic")
schedule_nms = named_cpu_schedule("schedule_nms", EXTERN_TAGS["nms"], schedule_injective_from_existing,
                                  "generic", "generic")
