"""Measuring candidates (AutoTVM's ``autotvm.measure``): what a measurement is
(:mod:`.measure`) and the local builder and runner (:mod:`.local`: parallel build
workers, isolated runs with timeouts, the correctness oracle)."""
from . import local, measure
from .local import (
    TOLERANCES, BuildResult, LocalBuilder, LocalRunner, build_candidate, compare_output, reference_inputs,
)
from .measure import (
    Builder, MeasureError, MeasureErrorNo, MeasureInput, MeasureResult, RPCRunner, Runner, create_measure_batch,
    measure_option,
)

__all__ = [
    "local", "measure", "MeasureInput", "MeasureResult", "MeasureErrorNo", "MeasureError", "Builder", "Runner",
    "measure_option", "create_measure_batch", "LocalBuilder", "LocalRunner", "RPCRunner", "BuildResult", "TOLERANCES",
    "build_candidate", "compare_output", "reference_inputs",
]
