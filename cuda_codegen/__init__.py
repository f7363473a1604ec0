"""The CUDA backend: print the kernels of a lowered module as CUDA C++, compile them
with NVRTC to a cubin for the exact ``sm_XX``, turn each host function into a launch
plan, and wrap everything as a runnable :class:`~tecc.runtime.CUDAModule`.

Without a GPU the module runs on the GPU-semantics emulator
(:mod:`tecc.cpu_fallback.gpu_emu`), which ``build_cuda`` hands to the module
together with its checker.
"""
from __future__ import annotations

from ..cpu_fallback.compiler import object_compiler
from ..errors import CompileError, LoweringError, TargetError
from ..runtime.cuda_module import CUDAModule, KernelResources
from ..target import Target
from ..tir import keys
from ..tir import stmt as S
from .codegen_cuda import CodeGenCUDA, generate_cuda
from .host_plan import build_plan, kernel_spec
from .nvrtc import (
    cache, compile_cuda, compile_cuda_resources, cuda_include_dirs, detect_arch, format_nvrtc_error, get_ptx,
    nvrtc_version, parse_ptxas_log, resolve_arch,
)

__all__ = [
    "CodeGenCUDA", "generate_cuda", "compile_cuda", "compile_cuda_resources", "KernelResources",
    "parse_ptxas_log", "cuda_include_dirs", "detect_arch", "format_nvrtc_error", "get_ptx", "nvrtc_version",
    "resolve_arch", "build_cuda", "cuda_arch", "cache", "EMULATION_ARCH",
]


#: the architecture plain "cuda" compiles for on a machine without a GPU
EMULATION_ARCH = "sm_80"


def cuda_arch(target) -> str:
    """The ``sm_XX`` a CUDA target compiles for: its ``-arch``, else the local GPU's,
    else (no GPU here) :data:`EMULATION_ARCH`, so the CUDA C is still checked by NVRTC
    while the module runs on the CPU emulation."""
    from ..runtime.device import cuda

    tgt = Target.canon(target)
    if tgt.cuda_arch is None and not cuda(0).exist:
        return EMULATION_ARCH
    return resolve_arch(tgt)


def build_cuda(mod, target="cuda") -> CUDAModule:
    """Compile a module lowered for CUDA into a :class:`~tecc.runtime.CUDAModule`.

    Parameters
    ----------
    mod : IRModule or list of PrimFunc
        Host functions (``attrs["tecc.host"]``) and the kernels they launch
        (``attrs["tecc.kernel"]``), as the CUDA pipeline leaves them.  Every host
        function becomes a function of the module; the kernels of all of them share
        one cubin.
    target : Target or str
        ``"cuda -arch=sm_XX"`` cross-compiles; plain ``"cuda"`` compiles for the
        local GPU, or for :data:`EMULATION_ARCH` where there is none.

    Returns
    -------
    CUDAModule
    """
    from ..cpu_fallback import signature_of
    from ..cpu_fallback.gpu_emu import Emulation, GPUChecker

    tgt = Target.canon(target)
    if tgt.kind != "cuda":
        raise TargetError(f"build_cuda compiles for target 'cuda', got {str(tgt)!r}")
    funcs = list(mod.functions.values()) if isinstance(mod, S.IRModule) else list(mod)
    hosts = [f for f in funcs if f.attrs.get(keys.HOST)]
    kernels = {f.name: f for f in funcs if f.attrs.get(keys.KERNEL)}
    if not hosts or len(hosts) + len(kernels) != len(funcs):
        raise LoweringError(
            f"a CUDA module needs host functions (attrs['tecc.host']) and the device functions they launch "
            f"(attrs['tecc.kernel']); got {len(hosts)} host and {len(kernels)} device functions out of "
            f"{len(funcs)}: lower the schedule for target 'cuda' first")
    if len({h.name for h in hosts}) != len(hosts):
        raise CompileError(f"two host functions share a name: {[h.name for h in hosts]}")
    arch = cuda_arch(tgt)
    gen = CodeGenCUDA()
    source = gen.generate(list(kernels.values()))
    cubin, resources = compile_cuda_resources(source, arch)
    specs = {name: kernel_spec(k, gen.kernel_info[name]) for name, k in kernels.items()}
    plans, signatures = {}, {}
    for host in hosts:
        plan, written = build_plan(host, kernels)
        plans[host.name] = plan
        signatures[host.name] = signature_of(host, written)
    emulation = Emulation(kernels.values())
    # save("x.o"): the emulator's C code of the kernels (the host side's CPU fallback) as an object
    host_object = object_compiler(emulation.source, "c", hosts[0].name)
    return CUDAModule(signatures, plans, specs, source, cubin, arch, str(tgt), emulation.library_path,
                      GPUChecker(plans, specs, emulation), resources, ptx=_ptx_provider(source, arch),
                      object_compiler=host_object)


def _ptx_provider(source: str, arch: str):
    """A function returning NVRTC's PTX of ``source`` (compiled on its first call)."""
    made = []

    def ptx() -> str:
        if not made:
            made.append(get_ptx(source, arch))
        return made[0]

    return ptx
