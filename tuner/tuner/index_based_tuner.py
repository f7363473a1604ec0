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
        """Configs of the range not tried yet (of those passing the space's filters,
        where the space can list them)."""
        first, last = self.range_idx
        inside = sum(1 for i in self.visited if first <= i <= last)
        valid = self.space.valid_indexes() if self.space.filtered else None
        if valid is not None:
            return sum(1 for i in valid if first <= i <= last and i not in self.visited)
        return last - first + 1 - inside

    def has_next(self) -> bool:
        return self._left() > 0


class GridSearchTuner(IndexBaseTuner):
    """Every config of the range, in index order (those the space's filters pass)."""

    def next_batch(self, batch_size):
        first, last = self.range_idx
        out = []
        while len(out) < batch_size and first + self.counter <= last:
            index = first + self.counter
            self.counter += 1
            if index not in self.visited and self.space.is_index_valid(index):
                self.visited.add(index)
                out.append(self.space.get(index))
        return out


class RandomTuner(IndexBaseTuner):
    """Configs of the range in a random order, each once (``seed`` makes the order
    repeatable), drawn from those the space's filters pass."""

    def next_batch(self, batch_size):
        first, last = self.range_idx
        out = []
        for index in _unvisited(self.space, self.visited, self.rng, batch_size, span=(first, last - first + 1)):
            self.visited.add(index)
            out.append(self.space.get(index))
        return out
