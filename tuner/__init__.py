"""tecc's auto-tuner, with AutoTVM's interface (``from tecc import autotvm``).

============================  ======================================================
module                        holds
============================  ======================================================
:mod:`.task`                  knobs, config spaces, dispatch contexts, templates,
                              tasks (``task.create``) and the registration of
                              tunable topi operators
:mod:`.measure`               what a measurement is; the local builder (parallel
                              worker processes) and runner (isolated, timed, checked
                              against a reference)
:mod:`.feature`               the cost model's features, read from the lowered TIR
:mod:`.tuner`                 the tuning loop and the tuners (grid, random, GA,
                              XGBoost); callbacks (log file, progress bar)
:mod:`.record`                tuning records: JSON lines, pick_best,
                              apply_history_best
:mod:`.explain`               why the best config won: knobs, kernel facts,
                              roofline, the cost model's SHAP contributions
:mod:`.plot`                  tuning curves (best so far against the trial)
============================  ======================================================

Only :mod:`.task` and the light :mod:`.explain` load with this package (topi's
schedules use the first; the second shares its name with its function, so the
function is bound here before anything can import the module under that name); the
rest loads on first use (``tecc.autotvm`` loads it all).
"""
import importlib as _importlib

from . import task  # noqa: F401
from .task import (  # noqa: F401
    ApplyConfig, ConfigEntity, ConfigSpace, DispatchContext, FallbackConfigEntity, FallbackContext,
    get_config, register_topi_compute, register_topi_schedule, template,
)
from .explain import explain  # noqa: F401  (imports nothing heavy; see above)

#: name -> (module, attribute or None for the module itself), loaded on first use
_LAZY = {
    "measure": (".measure", None), "record": (".record", None), "tuner": (".tuner", None),
    "feature": (".feature", None), "callback": (".tuner.callback", None),
    "LocalBuilder": (".measure", "LocalBuilder"), "LocalRunner": (".measure", "LocalRunner"),
    "MeasureInput": (".measure", "MeasureInput"), "MeasureResult": (".measure", "MeasureResult"),
    "MeasureErrorNo": (".measure", "MeasureErrorNo"), "measure_option": (".measure", "measure_option"),
    "create_measure_batch": (".measure", "create_measure_batch"),
    "ApplyHistoryBest": (".record", "ApplyHistoryBest"), "apply_history_best": (".record", "apply_history_best"),
    "plot": (".plot", None), "plot_tuning_curve": (".plot", "plot_tuning_curve"),
    "tuning_curve": (".plot", "tuning_curve"),
}

__all__ = ["task", "ApplyConfig", "ConfigEntity", "ConfigSpace", "DispatchContext", "FallbackConfigEntity",
           "FallbackContext", "get_config", "register_topi_compute", "register_topi_schedule", "template",
           "explain", *_LAZY]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'tecc.tuner' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = _importlib.import_module(module, __name__)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value
    return value
