"""Passes over TIR and the pipelines that run them.

The pipelines are the literal lists :data:`GENERIC_PIPELINE`, :data:`CPU_PIPELINE`
and :data:`CUDA_PIPELINE` in :mod:`.pipeline`; :func:`run_pipeline` runs them with
the options of the current :class:`PassContext`.  Each pass is also a function of
its own module here (``flatten(func)``, ``split_host_device(func)``...).
"""
from .flatten import flatten
from .inject_double_buffer import inject_double_buffer
from .inject_virtual_thread import inject_virtual_thread
from .loop_partition import loop_partition
from .lower_thread_allreduce import lower_thread_allreduce
from .pipeline import (
    CPU_PIPELINE, CUDA_PIPELINE, GENERIC_PIPELINE, FunctionPass, ModulePass, PassConfigError, PassContext,
    PassOptions, list_passes, pipeline_for, run_pipeline,
)
from .promote_local_registers import promote_local_registers
from .remove_no_op import remove_no_op
from .simplify import simplify, simplify_stmt
from .split_host_device import split_host_device
from .thread_sync import insert_thread_sync
from .unroll import unroll
from .vectorize import vectorize

__all__ = [
    "CPU_PIPELINE", "CUDA_PIPELINE", "GENERIC_PIPELINE", "FunctionPass", "ModulePass", "PassConfigError",
    "PassContext", "PassOptions", "flatten", "inject_double_buffer", "inject_virtual_thread",
    "insert_thread_sync", "list_passes", "loop_partition", "lower_thread_allreduce", "pipeline_for",
    "promote_local_registers", "remove_no_op", "run_pipeline", "simplify", "simplify_stmt",
    "split_host_device", "unroll", "vectorize",
]
