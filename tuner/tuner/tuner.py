"""The tuning loop every tuner shares (AutoTVM's ``autotvm.tuner.Tuner``).

A tuner proposes configs in batches (:meth:`Tuner.next_batch`), the measure batch
builds and runs them, the tuner learns from the results (:meth:`Tuner.update`) and
the callbacks see each batch (the log file, the progress bar).  The loop is anytime:
after any batch, ``best_config`` is the best measured so far and every trial is in
the log.

Resuming: when a ``log_to_file`` callback writes to a file that already holds
records of this task (same target and workload), those trials count as done, are
never measured again, and the tuner learns from them first.
"""
from __future__ import annotations

import logging
import os
import time

from ...errors import TeccError
from ..measure.measure import MeasureErrorNo, MeasureInput, create_measure_batch

logger = logging.getLogger("tecc.autotvm")


#: the parts of a :meth:`Tuner.tune` run's wall time in ``Tuner.time_spent``:
#: ``search`` -- proposing configs (the cost model's search); ``build_wait`` -- waiting
#: for a batch's builds (on a GPU the next batch compiles while this one runs: only
#: what that does not hide); ``run`` -- the runner (loading, checking and timing each
#: candidate); ``model`` -- learning from the results (the cost model's refits);
#: ``callbacks`` -- the log file, the progress bar and the caller's callbacks
TIME_PARTS = ("search", "build_wait", "run", "model", "callbacks")


class TunerError(TeccError, ValueError):
    """A tuner used wrongly (no config space, a bad argument)."""


class Tuner:
    """The base of the tuners: subclasses implement :meth:`next_batch`,
    :meth:`has_next` and, when they learn, :meth:`update` and :meth:`load_history`.

    Attributes
    ----------
    best_config, best_flops, best_measure_pair, best_iter
        The best trial so far (``best_flops`` is FLOP/s; 0 before any success).
    time_spent
        Seconds of the last :meth:`tune` run by part (:data:`TIME_PARTS`): where a
        tuning run's wall time went.
    """

    def __init__(self, task, **kwargs):
        if getattr(task, "config_space", None) is None:
            raise TunerError(f"{type(self).__name__}: the task has no config space; make it with "
                             "autotvm.task.create(name, args, target)")
        if len(task.config_space) == 0:
            raise TunerError(f"{type(self).__name__}: task {task.name!r} has an empty config space")
        self.param = kwargs
        self.task = task
        self.space = task.config_space
        self.visited = set()
        self.reset_best()
        self.n_trial = 0
        self.early_stopping = None
        self.ttl = None
        self.error_ct = 0
        self.si_prefix = "G"
        #: where the last :meth:`tune` spent its wall time, in seconds (see :data:`TIME_PARTS`)
        self.time_spent = dict.fromkeys(TIME_PARTS, 0.0)

    def reset_best(self):
        self.best_config = None
        self.best_flops = 0.0
        self.best_measure_pair = None
        self.best_iter = 0

    # what subclasses provide -------------------------------------------------------
    def has_next(self) -> bool:
        """Whether there are configs left to try."""
        raise NotImplementedError

    def next_batch(self, batch_size):
        """Up to ``batch_size`` configs (points of the space) not tried yet."""
        raise NotImplementedError

    def update(self, inputs, results):
        """Learn from measured ``inputs`` and their ``results``."""

    def load_history(self, data_set, min_seed_records=500):
        """Learn from records of earlier tuning runs (other workloads too)."""

    # the loop ----------------------------------------------------------------------
    def tune(self, n_trial, measure_option, early_stopping=None, callbacks=(), si_prefix="G"):
        """Measure up to ``n_trial`` configs.

        Parameters
        ----------
        n_trial : int
            Trials to run (resumed trials count).
        measure_option : dict
            From ``autotvm.measure_option``.
        early_stopping : int, optional
            Stop when the best has not improved for this many trials.
        callbacks : list of callables
            ``callback(tuner, inputs, results)`` after each batch.
        si_prefix : str
            The prefix of FLOP/s in log messages ("G": GFLOPS).
        """
        if not isinstance(n_trial, int) or n_trial < 0:
            raise TunerError(f"tune: n_trial must be a non-negative integer, got {n_trial!r}")
        callbacks = list(callbacks or ())
        self.n_trial = n_trial
        self.early_stopping = early_stopping if early_stopping is not None else 1e9
        self.si_prefix = si_prefix
        scale = _si_scale(si_prefix)
        i = self._resume(callbacks)
        for callback in callbacks:  # the progress bar learns where a resumed run starts
            if hasattr(callback, "resumed"):
                callback.resumed(self, i)
        if i >= n_trial or not self.has_next():
            return
        self.time_spent = dict.fromkeys(TIME_PARTS, 0.0)
        measure_batch = create_measure_batch(self.task, measure_option)
        n_parallel = max(int(measure_batch.n_parallel or 1), 1)
        try:
            self._loop(measure_batch, n_parallel, n_trial, i, scale, callbacks)
        finally:
            measure_batch.close()

    def _timed(self, part, fn, *args):
        """``fn(*args)``, its wall time added to ``time_spent[part]``."""
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.time_spent[part] += time.perf_counter() - start

    def _propose(self, n_parallel, left):
        """The next batch's inputs (empty when the trials or the space are used up)."""
        if left <= 0 or not self.has_next():
            return []
        configs = self._timed("search", self.next_batch, min(n_parallel, left))
        return [MeasureInput(self.task.target, self.task, config) for config in configs]

    def _loop(self, measure_batch, n_parallel, n_trial, i, scale, callbacks):
        """Measure batches until ``n_trial``.  Where the runner allows it (a GPU:
        ``overlaps_builds``), the next batch is proposed and its build started before
        this one runs, so compiling overlaps measuring; that batch is proposed
        without this one's results (a model-based tuner plans ``plan_size`` trials
        ahead anyway), and when tuning stops early it is dropped unmeasured (its
        configs stay unlogged, so a resumed run proposes them).  Elsewhere each
        batch is proposed after the last one's results."""
        overlap = measure_batch.overlaps_builds
        inputs = self._propose(n_parallel, n_trial - i)
        built = measure_batch.build_async(inputs) if inputs else None
        following = []
        while inputs:
            build_results = self._timed("build_wait", built.result)
            if overlap:
                following = self._propose(n_parallel, n_trial - i - len(inputs))
                built = measure_batch.build_async(following) if following else None
            results = self._timed("run", measure_batch.run, inputs, build_results)
            self._account(inputs, results, i, scale)
            i += len(results)
            self.ttl = min(self.early_stopping + self.best_iter, n_trial) - i
            self._timed("model", self.update, inputs, results)
            for callback in callbacks:
                self._timed("callbacks", callback, self, inputs, results)
            if i >= self.best_iter + self.early_stopping:
                logger.info("early stopping: no better config in the last %d trials", self.early_stopping)
                break
            if self.error_ct > 150:
                logger.warning("%d trials in a row failed; check the template and the measure option "
                               "(the log's error messages say why)", self.error_ct)
            if not overlap:
                following = self._propose(n_parallel, n_trial - i)
                built = measure_batch.build_async(following) if following else None
            inputs, following = following, []
        for inp in following:  # built ahead, dropped unmeasured: free to propose again
            self.visited.discard(inp.config.index)

    def _account(self, inputs, results, start, scale):
        for k, (inp, res) in enumerate(zip(inputs, results)):
            self.visited.add(inp.config.index)
            if res.error_no == MeasureErrorNo.NO_ERROR:
                flops = (self.task.flop or 0.0) / max(res.mean_cost, 1e-12)
                self.error_ct = 0
            else:
                flops = 0.0
                self.error_ct += 1
            if flops > self.best_flops or (self.best_config is None and res.error_no == 0):
                self.best_flops = flops
                self.best_config = inp.config
                self.best_measure_pair = (inp, res)
                self.best_iter = start + k
            logger.debug("no. %d: %.2f %sFLOPS (best %.2f), %s", start + k + 1, flops / scale,
                         self.si_prefix, self.best_flops / scale, inp.config)

    def _resume(self, callbacks) -> int:
        """Trials of this task already in the log files of ``callbacks``: marked
        visited, learned from; their count."""
        from .. import record  # noqa: PLC0415

        files = [cb.filename for cb in callbacks if getattr(cb, "filename", None)]
        inputs, results = [], []
        seen = set()
        for path in files:
            if not os.path.exists(path):
                continue
            for inp, res in record.load_from_file(path):
                if (str(inp.target) != str(self.task.target) or inp.task.workload != self.task.workload
                        or inp.config.index in seen or not 0 <= inp.config.index < len(self.space)):
                    continue
                seen.add(inp.config.index)
                config = self.space.get(inp.config.index)
                inputs.append(MeasureInput(self.task.target, self.task, config))
                results.append(res)
        if not inputs:
            return 0
        logger.info("resuming: %d trials of %s already in %s", len(inputs), self.task.name, ", ".join(files))
        self._account(inputs, results, 0, 1.0)
        self.update(inputs, results)
        return len(inputs)

    def reset(self):
        """Forget what was measured (a new tuning run from scratch)."""
        self.visited = set()
        self.reset_best()


def _si_scale(prefix) -> float:
    scales = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
    if prefix not in scales:
        raise TunerError(f"si_prefix must be one of {sorted(scales)}, got {prefix!r}")
    return scales[prefix]


#: rejection sampling of a large filtered space gives up after this many draws per
#: point asked for (the space then counts as exhausted)
REJECTION_DRAWS = 20000


def _unvisited(space, visited, rng, n, span=None):
    """Up to ``n`` distinct random indexes of ``space`` (a ConfigSpace, or a length)
    inside ``span = (first, count)`` (the whole space by default), none in
    ``visited`` and each passing the space's filters (``multi_filter``): an exact
    sample from the list of valid points where the space can list them, else a
    rejection sample (fewer than ``n`` when the draws run out)."""
    length = space if isinstance(space, int) else len(space)
    first, count = span if span is not None else (0, length)
    valid = None if isinstance(space, int) or not space.filtered else space.valid_indexes()
    if valid is not None:
        pool = [i for i in valid if first <= i < first + count and i not in visited]
        picks = rng.choice(len(pool), size=min(n, len(pool)), replace=False) if pool else []
        return [pool[int(p)] for p in picks]
    if isinstance(space, int) or not space.filtered:
        inside = sum(1 for i in visited if first <= i < first + count) if span is not None else len(visited)
        n = min(n, count - inside)
        if n <= 0:
            return []
        if count <= 4 * (inside + n) or count < 1 << 16:
            if inside:
                pool = [i for i in range(first, first + count) if i not in visited]
                return [pool[int(p)] for p in rng.choice(len(pool), size=n, replace=False)]
            return [first + int(i) for i in rng.choice(count, size=n, replace=False)]
    out, taken = [], set()
    for _ in range(REJECTION_DRAWS * max(n, 1)):
        if len(out) >= n:
            break
        i = first + int(rng.integers(count))
        if i not in visited and i not in taken:
            taken.add(i)
            if isinstance(space, int) or space.is_index_valid(i):
                out.append(i)
    return out

