"""Simulated annealing on the cost model (AutoTVM's
``SimulatedAnnealingOptimizer``): ``parallel_size`` walkers move through the space
one knob at a time; a move the model rates better is always taken, a worse one with
probability ``exp(-drop / (temperature * spread))``, where ``spread`` is the range of
the model's scores over the starting points (a ranking model's scores have no fixed
scale: without it, a temperature of 1 is a hill climb for one model and a random walk
for another); the temperature falls from ``temp[0]`` to ``temp[1]``.  The best points
seen (not yet measured) are the answer.

Persistent walkers (``persistent=True``) start where the last search ended -- but
only half of them, and no two on the same point: walkers that climbed to the
last model's maxima sit on measured configs from which every one-knob move looks
worse, so a search started only there looks at nothing but their neighbours (seen
in replays: the 32 walkers collapsed onto 9 measured points, and the search missed
the new model's best by a wide margin).  The other half start at random points."""
from __future__ import annotations

import heapq
import logging

import numpy as np

from .model_based_tuner import ModelOptimizer
from .tuner import TunerError, _unvisited

logger = logging.getLogger("tecc.autotvm")


class SimulatedAnnealingOptimizer(ModelOptimizer):
    """Parameters: ``n_iter`` (steps at most), ``temp`` (start and end
    temperature), ``persistent`` (walkers start where the last search ended),
    ``parallel_size`` (walkers), ``early_stop`` (steps without a better top
    ``num`` before stopping), ``log_interval``, ``seed``."""

    def __init__(self, task, n_iter=500, temp=(1, 0), persistent=True, parallel_size=128, early_stop=50,
                 log_interval=50, seed=None):
        self.task = task
        self.space = task.config_space
        self.dims = self.space.dims
        if n_iter < 1 or parallel_size < 1:
            raise TunerError(f"SimulatedAnnealingOptimizer: n_iter and parallel_size must be positive, got "
                             f"{n_iter} and {parallel_size}")
        self.n_iter = int(n_iter)
        self.temp = temp
        self.persistent = persistent
        self.parallel_size = min(int(parallel_size), self.space.num_valid())
        self.early_stop = early_stop or 1e9
        self.log_interval = log_interval
        self.rng = np.random.default_rng(seed)
        self.points = None

    #: tries of a move to a point the space's filters pass before the walker stays
    NEIGHBOUR_TRIES = 8

    def _neighbour(self, index) -> int:
        """A point one knob away from ``index`` that the space's filters pass
        (``index`` itself when none turns up)."""
        movable = [d for d, n in enumerate(self.dims) if n > 1]
        if not movable:
            return index
        for _ in range(self.NEIGHBOUR_TRIES):
            knob = self.space.point2knob(index)
            d = movable[int(self.rng.integers(len(movable)))]
            choice = int(self.rng.integers(self.dims[d] - 1))
            knob[d] = choice if choice < knob[d] else choice + 1
            moved = self.space.knob2point(knob)
            if self.space.is_index_valid(moved):
                return moved
        return index

    def find_maximums(self, model, num, exclusive):
        exclusive = set(exclusive)
        points = []
        if self.persistent and self.points is not None:
            points = list(dict.fromkeys(self.points))[:self.parallel_size // 2]
        points += _unvisited(self.space, set(points), self.rng, self.parallel_size - len(points))
        if not points:
            return []
        scores = np.asarray(model.predict(points), dtype="float64")
        usable = scores[scores > -1e8]  # -1e9: a config that does not lower
        spread = float(usable.max() - usable.min()) if usable.size > 1 else 1.0
        spread = spread if spread > 0 else 1.0
        # the best `num` unmeasured points seen: a min-heap of (score, index)
        heap = [(-np.inf, -1 - k) for k in range(num)]
        in_heap = set()

        def offer(index, score):
            if index in exclusive or index in in_heap or score <= heap[0][0] or score <= -1e8:
                return False
            _, dropped = heapq.heapreplace(heap, (score, index))
            in_heap.discard(dropped)
            in_heap.add(index)
            return True

        for p, sc in zip(points, scores):
            offer(p, sc)
        t0, t1 = self.temp if isinstance(self.temp, (tuple, list)) else (self.temp, 0)
        cooling = (t0 - t1) / max(self.n_iter, 1)
        t = t0
        last_better = 0
        for step in range(self.n_iter):
            if step - last_better > self.early_stop:
                break
            moved = [self._neighbour(p) for p in points]
            new_scores = np.asarray(model.predict(moved), dtype="float64")
            better = False
            for k, (m, sc) in enumerate(zip(moved, new_scores)):
                better |= offer(m, sc)
                drop = scores[k] - sc
                if drop <= 0 or (t > 0 and self.rng.random() < np.exp(-drop / max(t * spread, 1e-12))):
                    points[k], scores[k] = m, sc
            if better:
                last_better = step
            t = max(t - cooling, t1)
            if self.log_interval and step % self.log_interval == 0:
                logger.debug("SA step %d: best %.4f, temperature %.3f", step, max(s for s, _ in heap), t)
        self.points = points
        found = sorted(((s, i) for s, i in heap if i >= 0), reverse=True)
        out = [i for _, i in found]
        if len(out) < num:  # a small space or a flat model: fill up with unmeasured configs
            out += _unvisited(self.space, exclusive | set(out), self.rng, num - len(out))
        return out
