"""Passes over TIR and the pipelines that run them.

The pipelines are the literal lists :data:`GENERIC_PIPELINE`, :data:`CPU_PIPELINE`
and :data:`CUDA_PIPELINE` in :mod:`.pipeline`; :func:`run_pipeline` runs them with
the options of the current :class:`PassContext`.  Each pass is also a function of
its own module here (``flatten(func)``, ``split_host_device(func)``...).

TVM's pass objects (``tir.transform.Simplify()``, ``StorageFlatten(64)``...,
``prim_func_pass``, ``Apply``) are in :mod:`.passes`: each is a pass of the same
engine, called on an IRModule.  The generic infrastructure (``Sequential``,
``module_pass``, ``PassContext``) is also :mod:`tecc.transform`.
"""
from .flatten import flatten
from .inject_double_buffer import inject_double_buffer
from .inject_prefetch import inject_prefetch
from .inject_virtual_thread import inject_virtual_thread
from .loop_partition import loop_partition
from .lower_division import lower_division
from .lower_thread_allreduce import lower_thread_allreduce
from .pipeline import (
    CPU_PIPELINE, CUDA_PIPELINE, GENERIC_PIPELINE, FunctionPass, ModulePass, Pass, PassConfigError, PassContext,
    PassOptions, list_passes, pipeline_for, run_passes, run_pipeline,
)
from .passes import (
    Apply, InjectDoubleBuffer, InjectPrefetch, InjectVirtualThread, LoopPartition, LowerThreadAllreduce, PassInfo,
    RemoveNoOp, Sequential, Simplify, SplitHostDevice, StorageFlatten, StorageRewrite, ThreadSync, UnrollLoop,
    VectorizeLoop, module_pass, prim_func_pass,
)
from .passes import CONSTRUCTORS as _CONSTRUCTORS
from .promote_local_registers import promote_local_registers
from .remove_no_op import remove_no_op
from .simplify import simplify, simplify_stmt
from .split_host_device import split_host_device
from .storage_rewrite import storage_rewrite
from .thread_sync import insert_thread_sync
from .unroll import unroll
from .vectorize import vectorize

#: TVM's name for the pass objects of a function (``tir.transform.PrimFuncPass``)
PrimFuncPass = FunctionPass

__all__ = [
    "CPU_PIPELINE", "CUDA_PIPELINE", "GENERIC_PIPELINE", "FunctionPass", "ModulePass", "Pass", "PassConfigError",
    "PassContext", "PassInfo", "PassOptions", "PrimFuncPass", "Sequential", "flatten", "inject_double_buffer",
    "inject_prefetch", "inject_virtual_thread", "insert_thread_sync", "list_passes", "loop_partition",
    "lower_thread_allreduce", "module_pass", "pipeline_for", "prim_func_pass", "promote_local_registers",
    "remove_no_op", "run_passes", "run_pipeline", "simplify", "simplify_stmt", "split_host_device",
    "storage_rewrite", "unroll", "vectorize", "Apply", "InjectDoubleBuffer", "InjectPrefetch",
    "InjectVirtualThread", "LoopPartition", "LowerThreadAllreduce", "RemoveNoOp", "Simplify", "SplitHostDevice",
    "StorageFlatten", "StorageRewrite", "ThreadSync", "UnrollLoop", "VectorizeLoop",
]


def __getattr__(name):
    if name[:1].isupper():
        raise AttributeError(
            f"tecc.tir.transform has no pass {name!r}; TVM's passes that tecc has: "
            f"{', '.join(sorted(_CONSTRUCTORS))}. "
            "Its other lowering steps run inside tecc.build (see tir.transform.list_passes())")
    raise AttributeError(f"module 'tecc.tir.transform' has no attribute {name!r}")
