"""A genetic algorithm over the knobs (AutoTVM's ``GATuner``): a population of
configs, the fittest (highest measured FLOP/s) kept as elites and bred by
crossing their knob choices and mutating them."""
from __future__ import annotations

import numpy as np

from ..measure.measure import MeasureErrorNo
from .tuner import Tuner, TunerError, _unvisited


class GATuner(Tuner):
    """Parameters: ``pop_size`` (configs per generation), ``elite_num`` (the best kept
    unchanged), ``mutation_prob`` (chance that a knob takes a random choice),
    ``seed``."""

    def __init__(self, task, pop_size=100, elite_num=3, mutation_prob=0.1, seed=None):
        super().__init__(task)
        if elite_num > pop_size:
            raise TunerError(f"GATuner: elite_num ({elite_num}) cannot exceed pop_size ({pop_size})")
        if not 0 <= mutation_prob <= 1:
            raise TunerError(f"GATuner: mutation_prob must be in [0, 1], got {mutation_prob}")
        self.pop_size = min(int(pop_size), self.space.num_valid())
        self.elite_num = int(elite_num)
        self.mutation_prob = float(mutation_prob)
        self.rng = np.random.default_rng(seed)
        self.dims = self.space.dims
        self.genes = [self.space.point2knob(i) for i in _unvisited(self.space, set(), self.rng, self.pop_size)]
        self.scores = []
        self.elites, self.elite_scores = [], []
        self.trial_pt = 0

    def has_next(self) -> bool:
        return len(self.visited) < self.space.num_valid()

    def next_batch(self, batch_size):
        out = []
        while len(out) < batch_size and self.has_next():
            if self.trial_pt >= len(self.genes):
                self._breed()
                if not self.genes:
                    break
            gene = self.genes[self.trial_pt]
            self.trial_pt += 1
            index = self.space.knob2point(gene)
            if index in self.visited or not self.space.is_index_valid(index):
                fresh = _unvisited(self.space, self.visited, self.rng, 1)
                if not fresh:
                    break
                index = fresh[0]
            self.visited.add(index)
            out.append(self.space.get(index))
        return out

    def update(self, inputs, results):
        for inp, res in zip(inputs, results):
            flops = 0.0
            if res.error_no == MeasureErrorNo.NO_ERROR:
                flops = (self.task.flop or 1.0) / max(res.mean_cost, 1e-12)
            self.scores.append((self.space.point2knob(inp.config.index), flops))

    def _breed(self):
        """The next generation from everything measured so far."""
        pool = sorted(self.scores + list(zip(self.elites, self.elite_scores)), key=lambda g: -g[1])
        unique, seen = [], set()
        for gene, score in pool:
            if tuple(gene) not in seen:
                seen.add(tuple(gene))
                unique.append((gene, score))
        self.elites = [g for g, _ in unique[:self.elite_num]]
        self.elite_scores = [s for _, s in unique[:self.elite_num]]
        parents = unique[:self.pop_size] or [(self.space.point2knob(0), 0.0)]
        weights = np.array([s for _, s in parents], dtype="float64") + 1e-8
        probs = weights / weights.sum()
        children = []
        tries = 0
        while len(children) < self.pop_size and tries < 20 * self.pop_size:
            tries += 1
            a, b = self.rng.choice(len(parents), size=2, p=probs)
            ga, gb = parents[a][0], parents[b][0]
            cut = int(self.rng.integers(len(self.dims) + 1))
            child = list(ga[:cut]) + list(gb[cut:])
            for k, d in enumerate(self.dims):
                if self.rng.random() < self.mutation_prob:
                    child[k] = int(self.rng.integers(d))
            index = self.space.knob2point(child)
            if index not in self.visited and self.space.is_index_valid(index):
                children.append(child)
        if not children:  # the neighbourhood is exhausted: fresh random configs
            children = [self.space.point2knob(i) for i in _unvisited(self.space, self.visited, self.rng,
                                                                    self.pop_size)]
        self.scores = []
        self.genes = children
        self.trial_pt = 0
