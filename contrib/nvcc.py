"""CUDA compiler facts and compilation (TVM's ``tvm.contrib.nvcc``), answered by NVRTC:
tecc compiles CUDA C with NVRTC, no ``nvcc`` binary needed."""
from __future__ import annotations

from ..errors import TargetError


def parse_compute_version(compute_version) -> tuple:
    """``"8.0"`` (or ``"sm_80"``) -> ``(8, 0)``."""
    text = str(compute_version).strip().lower()
    if text.startswith("sm_"):
        digits = text[3:].rstrip("af")
        return int(digits[:-1]), int(digits[-1])
    major, _, minor = text.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise TargetError(f"compute version {compute_version!r} is not of the form 'major.minor' (e.g. '8.0')")
    return int(major), int(minor)


def have_fp16(compute_version) -> bool:
    """Half-precision arithmetic (compute capability 5.3 and later)."""
    return parse_compute_version(compute_version) >= (5, 3)


def have_int8(compute_version) -> bool:
    """Int8 dot products (compute capability 6.1 and later)."""
    return parse_compute_version(compute_version) >= (6, 1)


def have_bf16(compute_version) -> bool:
    """bfloat16 arithmetic (compute capability 8.0 and later)."""
    return parse_compute_version(compute_version) >= (8, 0)


def have_tensorcore(compute_version=None, target=None) -> bool:
    """Tensor cores (compute capability 7.0 and later), as TVM answers it: of
    ``compute_version``; without one, of the local GPU; without a GPU, of
    ``target``'s ``-arch`` -- and with none of them False, with a warning."""
    if compute_version is None:
        from ..runtime.device import cuda

        if cuda(0).exist:
            compute_version = cuda(0).compute_version
        else:
            from ..target import Target

            arch = Target.canon(target).cuda_arch if target is not None else None
            if arch is None:
                import warnings

                warnings.warn("have_tensorcore: no GPU here and no CUDA architecture specified, so tensor cores "
                              "count as absent; give the target an arch ('cuda -arch=sm_80')", stacklevel=2)
                return False
            compute_version = arch
    return parse_compute_version(compute_version) >= (7, 0)


def compile_cuda(code: str, target_format: str = "ptx", arch=None, options=None, path_target=None):
    """Compile CUDA C ``code`` to PTX (text as bytes) or a cubin (bytes) with NVRTC."""
    from ..cuda_codegen.nvrtc import compile_cuda as to_cubin, get_ptx

    arch = arch or "sm_80"
    if target_format == "ptx":
        return get_ptx(code, arch, tuple(options or ())).encode("utf-8")
    if target_format == "cubin":
        return to_cubin(code, arch, tuple(options or ()))
    raise TargetError(f"compile_cuda: target_format {target_format!r} is not available; use 'ptx' or 'cubin'")
