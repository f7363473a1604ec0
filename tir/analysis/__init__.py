"""The one home for questions about the IR.

Passes, printers, runtime builders, the emulator and (later) the tuner's feature
extraction ask these functions instead of walking the IR themselves:

===========================  ===============================================================
module                       answers
===========================  ===============================================================
:mod:`.buffers`              layout (strides, sizes, flat indices), buffers read/written,
                             allocations, storage bytes per scope
:mod:`.threads`              GPU thread indices bound and their extents, launch dims
:mod:`.verify`               is the IR well formed (:func:`verify_well_formed`)
:mod:`.verify_gpu`           does a kernel fit the GPU (:func:`verify_gpu`, :func:`gpu_limits`)
:mod:`.occupancy`            per-SM resources, estimated occupancy and register pressure
:mod:`.fragments`            tensor-core fragments: their sizes, element types, shape and layout
:mod:`.features`             the tuner's numbers about a function (:func:`extract_features`)
:mod:`.interp`               the reference interpreter (:func:`run_prim_func`)
===========================  ===============================================================

Attribute keys and intrinsic names live in :mod:`tecc.tir.keys`.
"""
from .buffers import (
    allocations, buffer_size, buffer_strides, buffers_read, buffers_written, const_size, dtypes_used,
    flat_index, imported_code, is_flat, passed_data, storage_bytes, uses, vars_used, written_data,
    written_params,
)
from .threads import (
    binds_gpu_threads, gpu_loops, launch_dims, thread_extent_lists, thread_extents, thread_vars, threads_per_block,
)
from .verify import verify_well_formed
from .verify_gpu import GPULimits, gpu_limits, verify_gpu
from .interp import InterpError, Interpreter, run_prim_func
from .occupancy import estimate_occupancy, register_pressure, sm_limits
from .features import FunctionFeatures, extract_features

__all__ = [
    "allocations", "buffer_size", "buffer_strides", "buffers_read", "buffers_written", "const_size",
    "dtypes_used",
    "flat_index", "imported_code", "is_flat", "passed_data", "storage_bytes", "uses", "vars_used", "written_data",
    "written_params",
    "binds_gpu_threads", "gpu_loops", "launch_dims", "thread_extent_lists", "thread_extents", "thread_vars",
    "threads_per_block", "verify_well_formed", "GPULimits", "gpu_limits", "verify_gpu", "InterpError",
    "Interpreter", "run_prim_func", "estimate_occupancy", "register_pressure", "sm_limits", "FunctionFeatures",
    "extract_features",
]
