"""tecc's runtime: devices, arrays, built modules, launch plans, timing, export and load,
and packed functions (Python functions registered by name that compiled code calls).

Nothing here imports the compiler (``te``, ``tir``, ``cpu_fallback``,
``cuda_codegen``): a module loaded from an exported file runs with numpy, plus CuPy
on a GPU.
"""
from ..errors import FunctionNotFoundError, KernelError
from .device import CPU, CUDA, Device, cpu, cuda, device, enabled, gpu
from . import ndarray
from .ndarray import NDArray
from .signature import ArgSpec, Signature
from .module import CModule, Function, Module, ProfileResult, load_module
from .cuda_module import CUDAModule, KernelResources
from .graph_executor import GraphExecutor, GraphExecutorFactoryModule, GraphJSONError
from .artifact import ArtifactError
from .peaks import Peaks, device_peaks
from .packed_func import (
    PackedFunc, get_global_func, list_global_func_names, register_func, remove_global_func,
)

__all__ = [
    "CPU", "CUDA", "Device", "convert", "cpu", "cuda", "device", "enabled", "gpu", "ndarray", "NDArray", "ArgSpec", "Signature",
    "ArtifactError", "CModule", "CUDAModule", "Function", "GraphExecutor", "GraphExecutorFactoryModule",
    "GraphJSONError", "FunctionNotFoundError", "KernelError", "KernelResources", "Module",
    "PackedFunc", "Peaks", "ProfileResult", "device_peaks", "get_global_func", "list_global_func_names", "load_module",
    "register_func", "remove_global_func",
]


def convert(value):
    """A Python value in the form tecc's API takes (TVM's ``runtime.convert``).

    tecc takes Python numbers and strings wherever TVM takes its own objects, so they
    are returned as they are, and lists and tuples become tuples of converted
    values.
    """
    if isinstance(value, (list, tuple)):
        return tuple(convert(v) for v in value)
    return value
