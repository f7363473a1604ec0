"""Which config a template gets (AutoTVM's ``autotvm.task.dispatcher``).

Dispatch contexts form a stack (``with ApplyConfig(cfg): ...``); a template asks the
innermost for the config of its workload, and a context that has none passes the
question outward.  At the bottom, :class:`FallbackContext` answers every question
with a :class:`~.space.FallbackConfigEntity` (one per workload, kept so that a
template's own defaults are computed once), and says once per workload that no
tuned config was found.
"""
from __future__ import annotations

import logging

from .space import FallbackConfigEntity

logger = logging.getLogger("tecc.autotvm")


class DispatchContext:
    """A context of the stack; subclasses answer in :meth:`_query_inside`."""

    current: "DispatchContext" = None

    def __init__(self):
        self._old_ctx = DispatchContext.current

    def query(self, target, workload):
        """The config for ``workload`` on ``target``: this context's, or an outer one's."""
        cfg = self._query_inside(target, workload)
        if cfg is None:
            cfg = self._old_ctx.query(target, workload)
        return cfg

    def update(self, target, workload, cfg):
        """Record ``cfg`` as the config of ``workload`` on ``target``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configs to update")

    def _query_inside(self, target, workload):
        raise NotImplementedError

    def __enter__(self):
        self._old_ctx = DispatchContext.current
        DispatchContext.current = self
        return self

    def __exit__(self, *exc):
        DispatchContext.current = self._old_ctx


class ApplyConfig(DispatchContext):
    """Every template inside gets ``config`` (a point of its space, or the space
    itself while a task collects its knobs); the workloads asked for are kept in
    ``workload``."""

    def __init__(self, config):
        super().__init__()
        self._config = config
        self.workload = None

    def _query_inside(self, target, workload):
        self.workload = workload
        return self._config

    def update(self, target, workload, cfg):
        self._config = cfg


def _key(target, workload):
    return (str(target) if target is not None else "", repr(workload))


class FallbackContext(DispatchContext):
    """The bottom of the stack: a fallback config per (target, workload)."""

    def __init__(self):
        super().__init__()
        self.memory = {}
        self.silent = False

    def _query_inside(self, target, workload):
        key = _key(target, workload)
        if key in self.memory:
            return self.memory[key]
        if not self.silent and workload is not None:
            logger.warning("no tuned config for target=%s, workload=%s: the schedule's fallback config is used "
                           "(tune the workload to do better)", target, workload)
        cfg = FallbackConfigEntity()
        self.memory[key] = cfg
        return cfg

    def query(self, target, workload):
        return self._query_inside(target, workload)

    def clear_cache(self, target, workload):
        """Forget the fallback config of ``workload`` (the template computes its
        defaults again on the next query)."""
        self.memory.pop(_key(target, workload), None)

    def update(self, target, workload, cfg):
        self.memory[_key(target, workload)] = cfg


DispatchContext.current = FallbackContext()


def clear_fallback_cache(target, workload):
    """Forget the fallback config of ``workload`` on ``target``."""
    ctx = DispatchContext.current
    while not isinstance(ctx, FallbackContext):
        ctx = ctx._old_ctx
    ctx.clear_cache(target, workload)
