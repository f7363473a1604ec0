"""tecc's runtime: devices, arrays, built modules, timing, export and load."""
from .device import CPU, CUDA, Device, cpu, cuda, device, gpu
from . import ndarray
from .ndarray import NDArray
from .module import (
    ArgSpec, Function, FunctionNotFoundError, KernelError, Module, ProfileResult, load_module,
)

__all__ = [
    "CPU", "CUDA", "Device", "cpu", "cuda", "device", "gpu", "ndarray", "NDArray", "ArgSpec",
    "Function", "FunctionNotFoundError", "KernelError", "Module", "ProfileResult", "load_module",
]
