"""The CUDA backend: print device functions as CUDA C++, compile them with NVRTC to
a cubin for the exact ``sm_XX``, cache the result, and wrap it as a runnable
:class:`~tecc.runtime.cuda_module.CUDAModule`."""
from __future__ import annotations

from ..errors import LoweringError, TargetError
from ..target import Target
from ..tir import stmt as S
from .codegen_cuda import CodeGenCUDA, generate_cuda
from .nvrtc import (
    KernelResources, compile_cuda, compile_cuda_resources, cuda_include_dirs, detect_arch, format_nvrtc_error,
    get_ptx, nvrtc_version, parse_ptxas_log, resolve_arch,
)

__all__ = [
    "CodeGenCUDA", "generate_cuda", "compile_cuda", "compile_cuda_resources", "KernelResources",
    "parse_ptxas_log", "cuda_include_dirs", "detect_arch",
    "format_nvrtc_error", "get_ptx", "nvrtc_version", "resolve_arch", "build_cuda",
]


#: the architecture plain "cuda" compiles for on a machine without a GPU
EMULATION_ARCH = "sm_80"


def _gpu_present() -> bool:
    from ..runtime.device import cuda
    return bool(cuda(0).exist)


def build_cuda(mod, target="cuda"):
    """Compile a split GPU module into a :class:`~tecc.runtime.cuda_module.CUDAModule`.

    Parameters
    ----------
    mod : IRModule or list of PrimFunc
        One host function (``attrs["tecc.host"]``) and its device functions
        (``attrs["tecc.kernel"]``), as the CUDA lowering pipeline produces them.
    target : Target or str
        ``"cuda -arch=sm_XX"`` cross-compiles; plain ``"cuda"`` detects the local GPU
        and, where there is none, compiles for :data:`EMULATION_ARCH` (so the CUDA C is
        still checked by NVRTC) while the module runs on the CPU emulation.

    Returns
    -------
    CUDAModule
    """
    from ..runtime.cuda_module import CUDAModule

    tgt = Target.canon(target)
    if tgt.kind != "cuda":
        raise TargetError(f"build_cuda compiles for target 'cuda', got {str(tgt)!r}")
    funcs = list(mod.functions.values()) if isinstance(mod, S.IRModule) else list(mod)
    hosts = [f for f in funcs if f.attrs.get("tecc.host")]
    kernels = [f for f in funcs if f.attrs.get("tecc.kernel")]
    if len(hosts) != 1 or len(hosts) + len(kernels) != len(funcs):
        raise LoweringError(
            f"a CUDA module needs exactly one host function (attrs['tecc.host']) and device functions "
            f"(attrs['tecc.kernel']); got {len(hosts)} host and {len(kernels)} device functions out of "
            f"{len(funcs)}: lower the schedule for target 'cuda' first")
    if tgt.cuda_arch is None and not _gpu_present():
        arch = EMULATION_ARCH
    else:
        arch = resolve_arch(tgt)
    gen = CodeGenCUDA()
    source = gen.generate(kernels)
    cubin, resources = compile_cuda_resources(source, arch)
    return CUDAModule(hosts[0], kernels, source, cubin, arch, str(tgt), gen.kernel_info, resources)
