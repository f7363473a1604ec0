"""Tuning guided by a cost model (AutoTVM's ``ModelBasedTuner``).

The loop: measure a plan of configs; once ``plan_size`` more trials are in, refit
the cost model on every measurement and let the model optimizer (simulated
annealing on the model) find the configs the model rates best; pick a diverse
``plan_size`` of them; measure those, with a small share of random configs
(epsilon-greedy) so that the model keeps seeing parts of the space it rates low.
"""
from __future__ import annotations

import logging

import numpy as np

from ..measure.measure import MeasureErrorNo
from .tuner import Tuner, TunerError, _unvisited

logger = logging.getLogger("tecc.autotvm")


class CostModel:
    """Predicts how good configs are (higher is better) from measurements."""

    def fit(self, xs, ys, plan_size):
        """Train on config indexes ``xs`` with FLOP/s ``ys`` (0: failed)."""
        raise NotImplementedError

    def fit_log(self, records, plan_size, min_seed_records=500):
        """Train on records of earlier runs (transfer learning)."""
        raise NotImplementedError

    def predict(self, xs, output_margin=False):
        """Scores of config indexes ``xs`` (numpy array)."""
        raise NotImplementedError

    def spawn_base_model(self):
        """A fresh model of the same kind (for transfer learning)."""
        raise NotImplementedError


class ModelOptimizer:
    """Finds the configs a cost model rates best."""

    def find_maximums(self, model, num, exclusive):
        """Up to ``num`` config indexes, best first, none in ``exclusive``."""
        raise NotImplementedError


class ModelBasedTuner(Tuner):
    """Parameters
    ----------
    cost_model : CostModel
    model_optimizer : ModelOptimizer
    plan_size : int
        Trials between refits of the model.
    diversity_filter_ratio : float or None
        Ask the optimizer for ``plan_size * ratio`` candidates and keep a diverse
        ``plan_size`` of them (see :func:`submodular_pick`); None keeps the top ones.
    epsilon : float
        Share of each plan measured at random.
    """

    def __init__(self, task, cost_model, model_optimizer, plan_size, diversity_filter_ratio=None, epsilon=0.05,
                 seed=None):
        super().__init__(task)
        if plan_size < 1:
            raise TunerError(f"{type(self).__name__}: plan_size must be at least 1, got {plan_size}")
        if diversity_filter_ratio is not None and diversity_filter_ratio < 1:
            raise TunerError(f"{type(self).__name__}: diversity_filter_ratio must be at least 1 or None, got "
                             f"{diversity_filter_ratio}")
        if not 0.0 <= float(epsilon) <= 1.0:
            raise TunerError(f"{type(self).__name__}: epsilon (the share of each plan measured at random) must be "
                             f"between 0 and 1, got {epsilon}")
        self.cost_model = cost_model
        self.model_optimizer = model_optimizer
        self.plan_size = int(plan_size)
        self.diversity_filter_ratio = diversity_filter_ratio
        self.epsilon = float(epsilon)
        self.rng = np.random.default_rng(seed)
        self.xs, self.ys = [], []
        self.trials, self.trial_pt = [], 0
        self.train_ct = 0

    def has_next(self) -> bool:
        return len(self.visited) < self.space.num_valid()

    def next_batch(self, batch_size):
        out = []
        explore_from = len(self.trials) - int(self.epsilon * self.plan_size)
        while len(out) < batch_size and self.has_next():
            index = None
            while self.trial_pt < len(self.trials):
                candidate = self.trials[self.trial_pt]
                if candidate not in self.visited:
                    index = candidate
                    break
                self.trial_pt += 1
            if index is None or self.trial_pt >= explore_from:
                index = self._random_pick()
                if index is None:  # nothing left that the space's filters pass
                    break
            else:
                self.trial_pt += 1
            self.visited.add(index)
            out.append(self.space.get(index))
        return out

    #: random draws a pick may take to find a config the template accepts
    RANDOM_DRAWS = 8

    def _random_pick(self):
        """An unvisited config at random (None when none is left).  A draw the space's
        filters refuse is never made; one the cost model can tell the template
        refuses (its features: it does not instantiate or lower) is drawn again, up to
        :data:`RANDOM_DRAWS` times, so that a space with many refused points does not
        spend the random share of the trials on refusals; the last draw is kept
        whatever it is (then measured, and its refusal recorded)."""
        lowers = getattr(self.cost_model, "lowers", None)
        index = None
        for _ in range(self.RANDOM_DRAWS):
            fresh = _unvisited(self.space, self.visited, self.rng, 1)
            if not fresh:
                break
            index = fresh[0]
            if lowers is None or lowers(index):
                break
        return index

    def update(self, inputs, results):
        for inp, res in zip(inputs, results):
            index = inp.config.index
            if res.error_no == MeasureErrorNo.NO_ERROR:
                flops = (self.task.flop or 1.0) / max(res.mean_cost, 1e-12)
            else:
                flops = 0.0
            self.xs.append(index)
            self.ys.append(flops)
        if len(self.xs) >= self.plan_size * (self.train_ct + 1) and any(y > 0 for y in self.ys):
            self.cost_model.fit(self.xs, self.ys, self.plan_size)
            want = self.plan_size
            if self.diversity_filter_ratio:
                want = int(self.plan_size * self.diversity_filter_ratio)
            candidates = self.model_optimizer.find_maximums(self.cost_model, want, self.visited)
            if self.diversity_filter_ratio and len(candidates) > self.plan_size:
                scores = self.cost_model.predict(candidates)
                knobs = [self.space.point2knob(i) for i in candidates]
                picked = submodular_pick(scores, knobs, self.plan_size)
                candidates = [candidates[k] for k in picked]
            self.trials = candidates
            self.trial_pt = 0
            self.train_ct += 1

    def load_history(self, data_set, min_seed_records=500):
        """Warm-start the model from records of other workloads (transfer learning)."""
        from .. import record  # noqa: PLC0415

        records = record.load_records(data_set)
        if len(records) < min_seed_records:
            logger.info("load_history: %d records, fewer than min_seed_records=%d: not used", len(records),
                        min_seed_records)
            return False
        base = self.cost_model.spawn_base_model()
        if not base.fit_log(records, self.plan_size, min_seed_records=min_seed_records):
            return False
        self.cost_model.base_model = base
        # plan the first batch with the transferred model
        self.trials = self.model_optimizer.find_maximums(base, self.plan_size, self.visited)
        self.trial_pt = 0
        return True


def submodular_pick(scores, knobs, n_pick, knob_weight=1.0):
    """Indexes of ``n_pick`` candidates, each time the one whose score plus
    ``knob_weight`` times the number of knob values it adds to those already picked
    is highest: good configs that differ from each other."""
    n = len(scores)
    if n_pick >= n:
        return list(range(n))
    scores = np.asarray(scores, dtype="float64")
    spread = max(float(scores.max() - scores.min()), 1e-12)
    norm = (scores - scores.min()) / spread
    covered = [set() for _ in range(len(knobs[0]))] if knobs else []
    picked, left = [], list(range(n))
    for _ in range(n_pick):
        best, best_gain = None, -1.0
        for k in left:
            new = sum(1 for d, v in enumerate(knobs[k]) if v not in covered[d])
            gain = norm[k] + knob_weight * new / max(len(covered), 1)
            if gain > best_gain:
                best, best_gain = k, gain
        picked.append(best)
        left.remove(best)
        for d, v in enumerate(knobs[best]):
            covered[d].add(v)
    return picked
