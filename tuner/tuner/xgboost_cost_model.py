"""The XGBoost cost model (AutoTVM's ``XGBoostCostModel``).

It learns, from measured configs, which configs run fast, reading each config
through its features (:mod:`tecc.tuner.feature`: ``"itervar"`` reads the lowered
TIR, ``"knob"`` the knob values, ``"curve"`` a compressed reuse curve).  With
``loss_type="rank"`` it learns the *order* of configs (XGBoost's
``rank:pairwise``), which is all the search needs and is robust to the scale of
FLOP/s; ``"reg"`` regresses the normalized FLOP/s.

Transfer learning: :meth:`fit_log` trains a base model on records of other
workloads of the same template; a model with a ``base_model`` starts from the base
model's predictions (XGBoost's base margin) and learns the difference.
"""
from __future__ import annotations

import logging

import numpy as np

from .model_based_tuner import CostModel
from .tuner import TunerError

logger = logging.getLogger("tecc.autotvm")

_OBJECTIVES = {"reg": "reg:squarederror", "rank": "rank:pairwise"}
_FEATURE_TYPES = ("itervar", "knob", "curve")


def _xgboost():
    try:
        import xgboost  # noqa: PLC0415
    except ImportError:
        raise TunerError("the XGBoost cost model needs the xgboost package: pip install xgboost") from None
    return xgboost


class XGBoostCostModel(CostModel):
    """Parameters: ``task``, ``feature_type`` ("itervar", "knob" or "curve"),
    ``loss_type`` ("rank" or "reg"), ``num_threads`` (xgboost's), ``log_interval``,
    ``upper_model`` (unused; TVM's parallel-tuning hook), ``num_boost_round``."""

    def __init__(self, task, feature_type="itervar", loss_type="rank", num_threads=None, log_interval=25,
                 upper_model=None, num_boost_round=200, seed=0):
        if feature_type not in _FEATURE_TYPES:
            raise TunerError(f"XGBoostCostModel: feature_type must be one of {_FEATURE_TYPES}, got "
                             f"{feature_type!r}")
        if loss_type not in _OBJECTIVES:
            raise TunerError(f"XGBoostCostModel: loss_type must be one of {sorted(_OBJECTIVES)}, got {loss_type!r}")
        self.xgb = _xgboost()
        self.task = task
        self.space = task.config_space
        self.feature_type = feature_type
        self.loss_type = loss_type
        self.num_threads = num_threads
        self.log_interval = log_interval
        self.upper_model = upper_model
        self.num_boost_round = int(num_boost_round)
        self.seed = seed
        self.params = {
            "max_depth": 3, "gamma": 1e-4, "min_child_weight": 1, "subsample": 1.0, "eta": 0.3,
            "lambda": 1.0, "alpha": 0.0, "objective": _OBJECTIVES[loss_type], "seed": seed, "verbosity": 0,
        }
        if num_threads:
            self.params["nthread"] = int(num_threads)
        self.bst = None
        self.base_model = None
        self.feature_names = None
        self._width = None
        self._knob_cache = {}

    # features ------------------------------------------------------------------------
    def features(self, xs, task=None):
        """``(matrix, valid)``: the feature rows of config indexes ``xs`` of ``task``
        (this model's task by default); a config that cannot be instantiated or
        lowered has a zero row and ``valid`` False."""
        task = task or self.task
        if self.feature_type == "knob":  # the knob values need no lowering
            space = task.config_space
            cache = self._knob_cache.setdefault(task.workload, {})
            rows = []
            for i in xs:
                row = cache.get(i)
                if row is None:
                    row = cache[i] = np.asarray(space.get(i).get_flatten_feature(), dtype="float32")
                rows.append(row)
        else:
            from .. import feature  # noqa: PLC0415

            rows = feature.batch_features(task, list(xs), self.feature_type)
        width = self._width or max((len(r) for r in rows if r is not None), default=0)
        self._width = self._width or width
        mat = np.zeros((len(rows), width), dtype="float32")
        valid = np.zeros(len(rows), dtype=bool)
        for k, r in enumerate(rows):
            if r is not None:
                n = min(len(r), width)
                mat[k, :n] = r[:n]
                valid[k] = True
        return mat, valid

    def lowers(self, index) -> bool:
        """Whether config ``index`` of this model's task instantiates and lowers, as
        its features tell (with ``feature_type="knob"`` nothing is lowered: True).
        The features are cached, so a config the tuner then measures costs no
        second lowering."""
        if self.feature_type == "knob":
            return True
        _, valid = self.features([index])
        return bool(valid[0])

    # training ------------------------------------------------------------------------
    def _train(self, x, y, groups, margin=None):
        dtrain = self.xgb.DMatrix(x, label=y)
        if self.loss_type == "rank":
            dtrain.set_group(groups)
        if margin is not None:
            dtrain.set_base_margin(margin)
        return self.xgb.train(self.params, dtrain, num_boost_round=self.num_boost_round)

    def fit(self, xs, ys, plan_size):
        x, valid = self.features(xs)
        y = np.asarray(ys, dtype="float64")
        x, y = x[valid], y[valid]
        if len(y) == 0 or y.max() <= 0:
            return
        y = y / y.max()
        margin = None
        if self.base_model is not None:
            margin = self.base_model.predict_features(x, output_margin=True)
        self.bst = self._train(x, y, [len(y)], margin)
        logger.debug("XGBoostCostModel: trained on %d configs", len(y))

    def fit_log(self, records, plan_size, min_seed_records=500):
        """Train on records of other workloads of this task's template (same target
        kind); False when fewer than ``min_seed_records`` are usable."""
        from ..task.task import create  # noqa: PLC0415

        kind = str(self.task.target).split()[0]
        by_workload = {}
        for inp, res in records:
            if inp.task.name != self.task.name or str(inp.target).split()[0] != kind:
                continue
            flops = 0.0
            if res.error_no == 0:
                flops = 1.0 / max(res.mean_cost, 1e-12)
            by_workload.setdefault((str(inp.target), inp.task.args), []).append((inp.config.index, flops))
        xs_all, ys_all, groups = [], [], []
        for (target, args), rows in by_workload.items():
            try:
                task = create(self.task.name, args, target)
            except Exception as e:  # noqa: BLE001 -- a workload that no longer builds is skipped
                logger.info("fit_log: workload %r skipped: %s", args, e)
                continue
            x, valid = self.features([i for i, _ in rows], task=task)
            y = np.array([f for _, f in rows])[valid]
            if len(y) == 0 or y.max() <= 0:
                continue
            xs_all.append(x[valid])
            ys_all.append(y / y.max())
            groups.append(len(y))
        n = sum(groups)
        if n < min_seed_records:
            logger.info("fit_log: %d usable records, fewer than %d", n, min_seed_records)
            return False
        self.bst = self._train(np.concatenate(xs_all), np.concatenate(ys_all), groups)
        return True

    # prediction ----------------------------------------------------------------------
    def predict_features(self, x, output_margin=False):
        if self.bst is None:
            return np.zeros(len(x))
        d = self.xgb.DMatrix(x)
        if self.base_model is not None:
            d.set_base_margin(self.base_model.predict_features(x, output_margin=True))
        return self.bst.predict(d, output_margin=output_margin)

    def predict(self, xs, output_margin=False):
        x, valid = self.features(xs)
        if self.bst is None and self.base_model is None:
            scores = np.zeros(len(xs))
        else:
            scores = np.asarray(self.predict_features(x, output_margin=output_margin), dtype="float64")
        scores[~valid] = -1e9  # a config that cannot even be lowered is never proposed
        return scores

    def contributions(self, xs):
        """``(contributions, names)``: each feature's share of each config's score
        (XGBoost's SHAP values; the last column is the bias)."""
        if self.bst is None:
            raise TunerError("the cost model is not trained yet: tune some trials first")
        x, _ = self.features(xs)
        contrib = self.bst.predict(self.xgb.DMatrix(x), pred_contribs=True)
        return contrib, self.names()

    def names(self) -> list:
        """The name of each feature column."""
        from .. import feature  # noqa: PLC0415

        if self.feature_names is None:
            self.feature_names = feature.feature_names(self.task, self.feature_type, self._width or 0)
        return self.feature_names

    def spawn_base_model(self):
        return XGBoostCostModel(self.task, self.feature_type, self.loss_type, self.num_threads, self.log_interval,
                                num_boost_round=self.num_boost_round, seed=self.seed)
