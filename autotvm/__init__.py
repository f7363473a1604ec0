"""``tecc.autotvm``: TVM's name for tecc's tuner (:mod:`tecc.tuner`).

The modules are the tuner's own, under AutoTVM's paths: ``tecc.autotvm.task.space``
*is* ``tecc.tuner.task.space`` (one module, one set of classes), so code written
for ``tvm.autotvm`` runs with only the import changed.
"""
import sys as _sys

from .. import tuner as _tuner
from ..tuner import feature, measure, record, tophub, tuner  # noqa: F401
from . import task  # noqa: F401 -- tuner.task's names plus extract_from_program
from ..tuner.task import (  # noqa: F401
    ApplyConfig, ConfigEntity, ConfigSpace, DispatchContext, FallbackConfigEntity, FallbackContext,
    get_config, register_topi_compute, register_topi_schedule, template,
)
from ..tuner.measure import (  # noqa: F401
    LocalBuilder, LocalRunner, MeasureErrorNo, MeasureInput, MeasureResult, RPCRunner, create_measure_batch,
    measure_option,
)
from ..tuner.record import ApplyGraphBest, ApplyHistoryBest, apply_graph_best, apply_history_best  # noqa: F401
from ..tuner.tuner import callback  # noqa: F401
from ..tuner import explain, plot_tuning_curve, tuning_curve  # noqa: F401  (explain: the function)


def _alias(prefix, package):
    for name, module in list(_sys.modules.items()):
        if name == package.__name__ or name.startswith(package.__name__ + "."):
            _sys.modules.setdefault(prefix + name[len(package.__name__):], module)


_alias(__name__, _tuner)
