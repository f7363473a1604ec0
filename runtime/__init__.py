"""tecc's runtime: devices, arrays, built modules, launch plans, timing, export and load.

Nothing here imports the compiler (``te``, ``tir``, ``cpu_fallback``,
``cuda_codegen``): a module loaded from an exported file runs with numpy, plus CuPy
on a GPU.
"""
from ..errors import FunctionNotFoundError, KernelError
from .device import CPU, CUDA, Device, cpu, cuda, device, gpu
from . import ndarray
from .ndarray import NDArray
from .signature import ArgSpec, Signature
from .module import CModule, Function, Module, ProfileResult, load_module
from .cuda_module import CUDAModule, KernelResources

__all__ = [
    "CPU", "CUDA", "Device", "cpu", "cuda", "device", "gpu", "ndarray", "NDArray", "ArgSpec", "Signature",
    "CModule", "CUDAModule", "Function", "FunctionNotFoundError", "KernelError", "KernelResources", "Module",
    "ProfileResult", "load_module",
]
