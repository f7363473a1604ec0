"""Tuners that walk the space's indexes without a model: :class:`GridSearchTuner`
(in index order) and :class:`RandomTuner` (a random order, no repeats)."""
from __future__ import annotations

import numpy as np

from .tuner import Tuner, TunerError, _unvisited


class IndexBaseTuner(Tuner):
    """A tuner over the indexes ``range_idx = (first, last)`` (inclusive) of the space."""

    def __init__(self, task, range_idx=None, seed=None):
        super().__init__(task)
        n = len(self.space)
        if range_idx is None:
            range_idx = (0, n - 1)
        first, last = range_idx
        if not (0 <= first <= last < n):
            raise TunerError(f"{type(self).__name__}: range_idx {range_idx} is outside the space of {n} "
                             f"configs (indexes 0..{n - 1})")
        self.range_idx = (int(first), int(last))
        self.rng = np.random.default_rng(seed)
        self.counter = 0

    def _left(self) -> int:
        first, last = self.range_idx
        inside = sum(1 for i in self.visited if first <= i <= last)
        return last - first + 1 - inside

    def has_next(self) -> bool:
        return self._left() > 0


class GridSearchTuner(IndexBaseTuner):
    """Every config of the range, in index order."""

    def next_batch(self, batch_size):
        first, last = self.range_idx
        out = []
        while len(out) < batch_size and first + self.counter <= last:
            index = first + self.counter
            self.counter += 1
            if index not in self.visited:
                self.visited.add(index)
                out.append(self.space.get(index))
        return out


class RandomTuner(IndexBaseTuner):
    """Configs of the range in a random order, each once (``seed`` makes the order
    repeatable)."""

    def next_batch(self, batch_size):
        first, last = self.range_idx
        span = last - first + 1
        local_visited = {i - first for i in self.visited if first <= i <= last}
        picks = _unvisited(span, local_visited, self.rng, batch_size)
        out = []
        for p in picks:
            index = first + p
            self.visited.add(index)
            out.append(self.space.get(index))
        return out
