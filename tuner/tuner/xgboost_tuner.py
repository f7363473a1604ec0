"""The XGBoost-guided tuner (AutoTVM's ``XGBTuner``): a
:class:`~.model_based_tuner.ModelBasedTuner` with the XGBoost cost model and
simulated annealing on it."""
from __future__ import annotations

from .model_based_tuner import ModelBasedTuner, ModelOptimizer
from .sa_model_optimizer import SimulatedAnnealingOptimizer
from .tuner import TunerError
from .xgboost_cost_model import XGBoostCostModel


class XGBTuner(ModelBasedTuner):
    """Parameters
    ----------
    task : Task
    plan_size : int
        Trials between refits of the model (and configs planned per refit).
    feature_type : "itervar", "knob" or "curve"
        What the model reads: the lowered TIR's loops and accesses, the knob
        values, or a compressed reuse curve.
    loss_type : "rank" or "reg"
        Learn the order of configs (``rank:pairwise``) or their normalized FLOP/s.
    num_threads : int, optional
        XGBoost's threads.
    optimizer : "sa" or a ModelOptimizer
    diversity_filter_ratio : float, optional
        Keep a diverse ``plan_size`` out of ``plan_size * ratio`` candidates.
    log_interval : int
    epsilon : float
        Share of each plan measured at random instead of where the model points
        (AutoTVM hard-codes 0.05, which is no config at all for a plan of fewer
        than 20).  0.25 by default: replayed on measured spaces
        (``benchmarks/tune_replay.py``: a 512^3 matmul, 6048 configs, and a
        ResNet-50 3x3 conv2d, 490 configs; 10 to 20 seeds), a model trained only
        on its own picks keeps refining the region of its first good config, and
        a quarter of random trials per plan found the best configs of both spaces
        in fewer trials than 0.05, 0.35 or 0.5 did.
    seed : int, optional
        Makes the random choices (first plan, exploration, annealing) repeatable.
    """

    def __init__(self, task, plan_size=64, feature_type="itervar", loss_type="rank", num_threads=None,
                 optimizer="sa", diversity_filter_ratio=None, log_interval=50, epsilon=0.25, seed=None):
        cost_model = XGBoostCostModel(task, feature_type=feature_type, loss_type=loss_type,
                                      num_threads=num_threads, log_interval=log_interval // 2,
                                      seed=seed if seed is not None else 0)
        if optimizer == "sa":
            optimizer = SimulatedAnnealingOptimizer(task, log_interval=log_interval, seed=seed,
                                                    **_sa_budget(feature_type))
        elif not isinstance(optimizer, ModelOptimizer):
            raise TunerError(f"XGBTuner: optimizer must be \"sa\" or a ModelOptimizer, got {optimizer!r}")
        super().__init__(task, cost_model, optimizer, plan_size, diversity_filter_ratio, epsilon=epsilon, seed=seed)


def _sa_budget(feature_type) -> dict:
    """The annealing's size: knob features cost nothing, so AutoTVM's defaults; TIR
    features mean lowering each visited config, so fewer walkers and steps (the
    features are cached, and walkers revisit)."""
    if feature_type == "knob":
        return {"n_iter": 500, "parallel_size": 128, "early_stop": 50}
    return {"n_iter": 100, "parallel_size": 32, "early_stop": 20}
