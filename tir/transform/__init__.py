"""Passes over TIR and the pipeline that runs them.

The pipeline is the literal list :data:`CPU_PIPELINE` in :mod:`.pipeline`;
:func:`run_pipeline` runs it with the options of the current
:class:`PassContext`.
"""
from .flatten import flatten
from .interp import run_prim_func
from .loop_partition import loop_partition
from .pipeline import (
    CPU_PIPELINE, PassConfigError, PassContext, PassOptions, list_passes, pipeline_for, run_pipeline,
)
from .remove_no_op import remove_no_op
from .simplify import simplify, simplify_stmt
from .unroll import unroll
from .verify import verify_well_formed
from .vectorize import vectorize

__all__ = [
    "CPU_PIPELINE", "PassConfigError", "PassContext", "PassOptions", "flatten", "list_passes",
    "loop_partition", "pipeline_for", "remove_no_op", "run_pipeline", "run_prim_func", "simplify",
    "simplify_stmt", "unroll", "vectorize", "verify_well_formed",
]
