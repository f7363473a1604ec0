"""Compile CUDA C++ to a cubin with NVRTC (through CuPy's low-level bindings).

The low-level calls (``createProgram``, ``compileProgram``, ``getCUBIN``) need no GPU
and no driver, so tecc cross-compiles for any ``sm_XX`` anywhere.  A cubin is built
for the exact architecture: PTX from a newer NVRTC may not load on an older driver.

>>> cubin = compile_cuda(source, arch="sm_90")      # bytes, starts with b"\\x7fELF"
>>> cubin, res = compile_cuda_resources(source, "sm_90")
>>> res["default_function_kernel0"].registers       # ptxas's report, per kernel

Every cubin is built with ``--ptxas-options=-v``: ptxas reports, per kernel, the
registers, spill bytes, stack frame and static shared memory it settled on, with no
GPU needed (:class:`KernelResources`).

Half-precision headers (``cuda_fp16.h``, ``cuda_bf16.h``) are not built into NVRTC;
they come from the ``nvidia-cuda-runtime`` pip package (or a CUDA toolkit under
``$CUDA_HOME``), found by :func:`cuda_include_dirs`.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import struct

from .. import config
from ..cpu_fallback.compiler import source_excerpts
from ..errors import CompileError, TargetError
from ..runtime.cache import DiskCache, cache_key
from ..runtime.cuda_module import KernelResources

#: cubins and ptxas logs, keyed by source, architecture, options and NVRTC version
cache = DiskCache("cuda")

#: options of every compile (``--use_fast_math`` is not among them: precise math)
BASE_OPTIONS = ("--std=c++17",)
#: added to every cubin compile: ptxas's resource report (see :class:`KernelResources`)
PTXAS_VERBOSE = "--ptxas-options=-v"

_ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")
#: part of every cubin's cache key: "2" since cubins are taken whole (:func:`_cubin`);
#: those cached before lack their last byte
CUBIN_REVISION = "2"


def _nvrtc():
    try:
        from cupy.cuda import nvrtc
    except Exception as err:  # noqa: BLE001 - any import failure: no usable NVRTC
        raise CompileError(
            f"NVRTC is not available ({type(err).__name__}: {err}); install cupy-cuda13x and "
            "nvidia-cuda-nvrtc with pip") from None
    return nvrtc


def nvrtc_version() -> tuple:
    """NVRTC's ``(major, minor)`` version."""
    try:
        return tuple(int(v) for v in _nvrtc().getVersion())
    except CompileError:
        raise
    except Exception as err:  # noqa: BLE001 - the shared library failed to load
        raise CompileError(f"NVRTC could not be loaded: {err}; install nvidia-cuda-nvrtc with pip") from None


def check_arch(arch: str) -> str:
    """``arch`` if it spells a real GPU architecture (``sm_80``, ``sm_90a``)."""
    if not isinstance(arch, str) or _ARCH_RE.match(arch) is None:
        raise TargetError(f"unknown CUDA architecture {arch!r}; write it as sm_XX, e.g. -arch=sm_80 or -arch=sm_90")
    return arch


def detect_arch(device_id: int = 0) -> str:
    """The ``sm_XX`` of local GPU ``device_id``.

    Raises
    ------
    TargetError
        When no GPU is present: pass the architecture explicitly then
        (``target="cuda -arch=sm_90"``).
    """
    from ..runtime.device import cuda

    dev = cuda(device_id)
    if not dev.exist:
        raise TargetError(
            "target 'cuda' without -arch needs a local GPU to detect the architecture, and there is "
            "none here; pass it explicitly, e.g. target='cuda -arch=sm_90' (or -arch=sm_80)")
    import cupy

    cc = cupy.cuda.Device(device_id).compute_capability
    return f"sm_{cc}"


def resolve_arch(target) -> str:
    """The architecture a CUDA target compiles for: its ``-arch``, else the local GPU's."""
    from ..target import Target

    tgt = Target.canon(target)
    arch = tgt.cuda_arch
    return arch if arch is not None else detect_arch()


def cuda_include_dirs() -> list:
    """Directories holding ``cuda_fp16.h`` (pip's ``nvidia-cuda-runtime``, then
    ``$CUDA_HOME/include``, then ``/usr/local/cuda/include``)."""
    found = []
    candidates = []
    spec = importlib.util.find_spec("nvidia")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            candidates += [os.path.join(root, "cu13", "include"), os.path.join(root, "cu12", "include"),
                           os.path.join(root, "cuda_runtime", "include")]
    home = config.CUDA_HOME.read()
    if home:
        candidates.append(os.path.join(os.path.expanduser(home), "include"))
    candidates.append("/usr/local/cuda/include")
    for c in candidates:
        if os.path.isfile(os.path.join(c, "cuda_fp16.h")) and c not in found:
            found.append(c)
    return found


def compile_options(source: str, arch: str, options=()) -> list:
    """The full NVRTC option list for ``source`` (include paths only when needed)."""
    opts = [f"-arch={check_arch(arch)}"] + list(BASE_OPTIONS)
    if re.search(r"#include\s*<(cuda_fp16|cuda_bf16|mma)\.h>", source):
        dirs = cuda_include_dirs()
        if not dirs:
            raise CompileError(
                "this kernel uses float16/bfloat16, which needs cuda_fp16.h/cuda_bf16.h, and no CUDA "
                "headers were found; install them with `pip install nvidia-cuda-runtime` "
                "(or set CUDA_HOME to a CUDA toolkit)")
        if re.search(r"#include\s*<mma\.h>", source):
            # the wmma API: mma.h includes crt/mma.h, a separate pip package (nvidia-cuda-crt)
            dirs = [d for d in dirs if os.path.isfile(os.path.join(d, "crt", "mma.h"))]
            if not dirs:
                raise CompileError(
                    "this kernel uses tensor cores (wmma, mma.h), whose crt/mma.h was not found beside "
                    f"{cuda_include_dirs()[0]}; install it with `pip install nvidia-cuda-crt` (a dependency of "
                    "tecc) or set CUDA_HOME to a CUDA toolkit")
        opts.append(f"-I{dirs[0]}")
    opts += list(options)
    return opts


_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)'")
_PROPS_RE = re.compile(r"Function properties for ([^\s:]+)")
_FIELD_RES = {
    "stack_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_store_bytes": re.compile(r"(\d+) bytes spill stores"),
    "spill_load_bytes": re.compile(r"(\d+) bytes spill loads"),
    "registers": re.compile(r"Used (\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "static_shared_bytes": re.compile(r"(\d+) bytes smem"),
}


def parse_ptxas_log(log: str) -> dict:
    """``{kernel name: KernelResources}`` from the ``ptxas info`` lines of a
    ``--ptxas-options=-v`` compile (lines about non-entry functions are skipped)."""
    found = {}
    current = None      # the entry function the following lines describe
    for line in log.splitlines():
        m = _ENTRY_RE.search(line)
        if m:
            current = m.group(1)
            found[current] = {}
            continue
        m = _PROPS_RE.search(line)
        if m:
            current = m.group(1) if m.group(1) in found else None
            continue
        if current is None:
            continue
        for field, rx in _FIELD_RES.items():
            m = rx.search(line)
            if m:
                found[current][field] = int(m.group(1))
    return {name: KernelResources.from_json(fields) for name, fields in found.items()}


_library = []


def _nvrtc_library():
    """A ctypes handle of the NVRTC library CuPy loaded into this process (found in
    ``/proc/self/maps``), or None where there is none to find."""
    if not _library:
        handle = None
        try:
            with open("/proc/self/maps", encoding="utf-8") as maps:
                paths = {line.split()[-1] for line in maps if "/libnvrtc.so" in line}
            for path in sorted(paths):
                handle = ctypes.CDLL(path)
                handle.nvrtcGetCUBINSize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
                handle.nvrtcGetCUBIN.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
                break
        except (OSError, AttributeError):
            handle = None
        _library.append(handle)
    return _library[0]


def elf_size(data: bytes) -> int:
    """The length a 64-bit little-endian ELF file (a cubin) declares for itself: the
    end of its program header table, section header table or last section's bytes,
    whichever is furthest (0 when ``data`` is not such a file)."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return 0
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    end = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
    for i in range(shnum):
        at = shoff + i * shentsize
        if at + 64 > len(data):
            break
        kind, = struct.unpack_from("<I", data, at + 4)
        offset, size = struct.unpack_from("<QQ", data, at + 24)
        if kind != 8:  # SHT_NOBITS occupies no bytes of the file
            end = max(end, offset + size)
    return end


def _cubin(nvrtc, prog) -> bytes:
    """The compiled program's cubin, whole.

    CuPy's ``getCUBIN`` returns the cubin less its last byte: it strips a terminating
    NUL as from PTX text, which a cubin does not have (the driver still loads it,
    cuobjdump and nvdisasm refuse it).  The NVRTC library CuPy loaded gives all of
    it; where that library cannot be reached, CuPy's bytes are completed with the
    zero bytes the ELF header says are missing (the high byte of the last table
    entry's 64-bit field)."""
    lib = _nvrtc_library()
    if lib is not None:
        size = ctypes.c_size_t()
        if lib.nvrtcGetCUBINSize(ctypes.c_void_p(int(prog)), ctypes.byref(size)) == 0:
            buf = ctypes.create_string_buffer(size.value)
            if lib.nvrtcGetCUBIN(ctypes.c_void_p(int(prog)), buf) == 0:
                return buf.raw
    data = bytes(nvrtc.getCUBIN(prog))
    return data + b"\0" * max(0, elf_size(data) - len(data))


def _compile(source: str, opts: list, name: str, want: str):
    """``(cubin bytes or PTX text, NVRTC's log)``."""
    nvrtc = _nvrtc()
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError:
            log = nvrtc.getProgramLog(prog)
            raise CompileError(format_nvrtc_error(source, log, name, opts)) from None
        log = nvrtc.getProgramLog(prog) or ""
        if want == "cubin":
            return _cubin(nvrtc, prog), log
        ptx = nvrtc.getPTX(prog)
        return (ptx.decode("utf-8") if isinstance(ptx, bytes) else ptx), log
    finally:
        nvrtc.destroyProgram(prog)


def compile_cuda(source: str, arch: str = "sm_90", options=(), name: str = "tecc_kernels.cu",
                 use_cache: bool = True) -> bytes:
    """Compile ``source`` to a cubin for ``arch``.

    Parameters
    ----------
    source : str
        A complete CUDA C++ translation unit.
    arch : str
        The exact GPU architecture, ``"sm_80"``, ``"sm_90"``, ...
    options : sequence of str
        Extra NVRTC options (``"--use_fast_math"``, ``"-lineinfo"``...).
    name : str
        The file name NVRTC shows in its messages.
    use_cache : bool
        Reuse a cubin compiled before (in memory, then on disk).

    Returns
    -------
    bytes
        The cubin (an ELF file).

    Raises
    ------
    CompileError
        With NVRTC's log and the offending source lines.
    """
    return compile_cuda_resources(source, arch, options, name, use_cache)[0]


def compile_cuda_resources(source: str, arch: str = "sm_90", options=(), name: str = "tecc_kernels.cu",
                           use_cache: bool = True):
    """:func:`compile_cuda`, and ptxas's report: ``(cubin, {kernel: KernelResources})``.

    The report is cached with the cubin (the log is kept beside it on disk)."""
    opts = compile_options(source, arch, options)
    if PTXAS_VERBOSE not in opts:
        opts.append(PTXAS_VERBOSE)
    key = cache_key(source, arch, "\x1f".join(opts), ".".join(str(v) for v in nvrtc_version()), CUBIN_REVISION)
    if use_cache:
        cubin = cache.lookup(key, "cubin")
        log = None if cubin is None else cache.lookup(key, "ptxas.log")
        if log is not None:
            return cubin, parse_ptxas_log(log.decode("utf-8", "replace"))
    cubin, log = _compile(source, opts, name, "cubin")
    if use_cache:
        cache.store(key, log.encode("utf-8"), "ptxas.log")
        cache.store(key, cubin, "cubin")
    return cubin, parse_ptxas_log(log)


def get_ptx(source: str, arch: str = "sm_90", options=(), name: str = "tecc_kernels.cu") -> str:
    """The PTX of ``source`` for ``arch`` (for reading; tecc loads cubins)."""
    opts = compile_options(source, arch, options)
    return _compile(source, opts, name, "ptx")[0]


_DIAG_RE = re.compile(r"\((\d+)\): (?:catastrophic )?error")


def format_nvrtc_error(source: str, log: str, name: str = "tecc_kernels.cu", options=(),
                       context: int = 3, max_errors: int = 5) -> str:
    """NVRTC's log, then each offending source line with ``context`` lines around
    it (marked with ``>``)."""
    if isinstance(log, bytes):
        log = log.decode("utf-8", "replace")
    out = ["CUDA compilation (NVRTC) failed:"]
    out += ["  " + ln for ln in log.strip().splitlines()[:40]]
    out += source_excerpts(source, log.splitlines(), _DIAG_RE, context, max_errors)
    if options:
        out.append("options: " + " ".join(options))
    return "\n".join(out)
