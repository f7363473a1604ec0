"""Passes over TIR and the pipeline that runs them.

The pipelines are the literal lists :data:`CPU_PIPELINE`, :data:`CUDA_PIPELINE` and
:data:`KERNEL_PIPELINE` in :mod:`.pipeline`; :func:`run_pipeline` and
:func:`lower_cuda` run them with the options of the current :class:`PassContext`.
"""
from .flatten import flatten
from .loop_partition import loop_partition
from .inject_double_buffer import inject_double_buffer
from .inject_virtual_thread import inject_virtual_thread
from .pipeline import (
    CPU_PIPELINE, CUDA_PIPELINE, KERNEL_PIPELINE, PassConfigError, PassContext, PassOptions, list_passes,
    lower_cuda, pipeline_for, run_pipeline,
)
from .split_host_device import split_host_device
from .thread_sync import insert_thread_sync
from ..analysis import gpu_limits, run_prim_func, verify_gpu, verify_well_formed
from .remove_no_op import remove_no_op
from .simplify import simplify, simplify_stmt
from .unroll import unroll
from .vectorize import vectorize

__all__ = [
    "CPU_PIPELINE", "CUDA_PIPELINE", "KERNEL_PIPELINE", "PassConfigError", "PassContext", "PassOptions",
    "flatten", "gpu_limits", "inject_double_buffer", "inject_virtual_thread", "insert_thread_sync",
    "list_passes", "loop_partition", "lower_cuda", "pipeline_for", "remove_no_op", "run_pipeline",
    "run_prim_func", "simplify", "simplify_stmt", "split_host_device", "unroll", "vectorize",
    "verify_gpu", "verify_well_formed",
]
