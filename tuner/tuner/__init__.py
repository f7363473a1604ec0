"""The tuners (AutoTVM's ``autotvm.tuner``): the shared tuning loop
(:mod:`.tuner`), index walkers (:mod:`.index_based_tuner`: grid, random), a genetic
algorithm (:mod:`.ga_tuner`), and the model-guided search (:mod:`.model_based_tuner`,
:mod:`.xgboost_cost_model`, :mod:`.sa_model_optimizer`, :mod:`.xgboost_tuner`);
callbacks of a run in :mod:`.callback`."""
from . import callback  # noqa: F401
from .ga_tuner import GATuner  # noqa: F401
from .index_based_tuner import GridSearchTuner, IndexBaseTuner, RandomTuner  # noqa: F401
from .model_based_tuner import CostModel, ModelBasedTuner, ModelOptimizer, submodular_pick  # noqa: F401
from .sa_model_optimizer import SimulatedAnnealingOptimizer  # noqa: F401
from .tuner import Tuner, TunerError  # noqa: F401
from .xgboost_cost_model import XGBoostCostModel  # noqa: F401
from .xgboost_tuner import XGBTuner  # noqa: F401
