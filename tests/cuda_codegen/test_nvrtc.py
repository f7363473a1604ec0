"""NVRTC (cuda_codegen/nvrtc.py): compile errors that show the offending line, the
compile cache (memory and disk), PTX, target architectures, the CUDA headers, and
ptxas's resource report."""
import os
import re

import pytest

from tecc.cuda_codegen import cache, compile_cuda, generate_cuda, get_ptx, nvrtc
from tecc.errors import CompileError, TargetError
from tecc.target import Target
from irhelpers import fresh_cuda_cache, vadd_kernel  # noqa: F401  (fresh_cuda_cache: an autouse fixture)


def test_compile_error_shows_offending_line():
    src = generate_cuda([vadd_kernel()])
    bad = src.replace("C[((int)blockIdx.x)", "C[undefined_thing + ((int)blockIdx.x)", 1)
    lineno = next(i for i, ln in enumerate(bad.splitlines(), 1) if "undefined_thing" in ln)
    with pytest.raises(CompileError) as info:
        compile_cuda(bad, "sm_90")
    msg = str(info.value)
    assert "undefined_thing" in msg and "is undefined" in msg
    assert re.search(rf">\s*{lineno} \| .*undefined_thing", msg)


def test_cache_hits_in_memory_and_on_disk(monkeypatch, tmp_path):
    src = generate_cuda([vadd_kernel()])
    first = compile_cuda(src, "sm_90")
    assert cache.stats["misses"] == 1
    files = list((tmp_path / "cache" / "cuda").glob("*.cubin"))
    assert len(files) == 1 and files[0].read_bytes() == first

    def fail(*a, **k):
        raise AssertionError("NVRTC must not run on a cache hit")

    monkeypatch.setattr(nvrtc, "_compile", fail)
    assert compile_cuda(src, "sm_90") == first
    assert cache.stats["memory_hits"] == 2      # the cubin and ptxas's report
    cache.clear_memory()
    cubin, resources = nvrtc.compile_cuda_resources(src, "sm_90")
    assert cubin == first and cache.stats["disk_hits"] == 2
    assert resources["vadd"].registers > 0      # the report survives the disk cache
    # another arch or option is another key
    with pytest.raises(AssertionError, match="must not run"):
        compile_cuda(src, "sm_80")
    with pytest.raises(AssertionError, match="must not run"):
        compile_cuda(src, "sm_90", options=("-lineinfo",))


def test_ptx_and_version():
    src = generate_cuda([vadd_kernel()])
    ptx = get_ptx(src, "sm_80")
    assert ".entry vadd" in ptx and ".target sm_80" in ptx
    major, minor = nvrtc.nvrtc_version()
    assert major >= 12


def test_arch_parsing_and_detection():
    assert Target("cuda -arch=sm_90").cuda_arch == "sm_90"
    assert Target("cuda -arch=sm_90a").cuda_arch == "sm_90a"
    assert Target("cuda").cuda_arch is None
    assert nvrtc.resolve_arch("cuda -arch=sm_80") == "sm_80"
    with pytest.raises(TargetError, match="sm_XX"):
        Target("cuda -arch=ampere").cuda_arch
    with pytest.raises(TargetError, match="sm_XX"):
        compile_cuda("", "compute_90")
    import tecc

    if not tecc.cuda(0).exist:
        with pytest.raises(TargetError, match="-arch=sm_90"):
            nvrtc.resolve_arch("cuda")
    else:  # pragma: no cover - GPU machines
        assert nvrtc.resolve_arch("cuda").startswith("sm_")


def test_missing_headers_are_explained(monkeypatch):
    monkeypatch.setattr(nvrtc, "cuda_include_dirs", lambda: [])
    src = generate_cuda([vadd_kernel("h", "float16")])
    with pytest.raises(CompileError, match="pip install nvidia-cuda-runtime"):
        compile_cuda(src, "sm_90")


def test_include_dir_found():
    dirs = nvrtc.cuda_include_dirs()
    assert dirs and all(os.path.isfile(os.path.join(d, "cuda_fp16.h")) for d in dirs)


PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper_fn
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function 'k_small' for 'sm_80'
ptxas info    : Function properties for k_small
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'k_big' for 'sm_80'
ptxas info    : Function properties for k_big
ptxas         .     1112 bytes stack frame, 2588 bytes spill stores, 2496 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1112 bytes cumulative stack size, 8192 bytes smem
ptxas info    : Compile time = 3.1 ms
"""


def test_ptxas_report_is_parsed_per_entry_function():
    res = nvrtc.parse_ptxas_log(PTXAS_LOG)
    assert set(res) == {"k_small", "k_big"}          # the non-entry helper is not a kernel
    assert res["k_small"] == nvrtc.KernelResources(registers=12)
    assert not res["k_small"].spills
    big = res["k_big"]
    assert (big.registers, big.spill_store_bytes, big.spill_load_bytes, big.stack_bytes,
            big.static_shared_bytes, big.barriers) == (255, 2588, 2496, 1112, 8192, 1)
    assert big.spills
    assert nvrtc.KernelResources.from_json(big.to_json()) == big


def test_built_module_carries_ptxas_report():
    src = generate_cuda([vadd_kernel()])
    for arch in ("sm_80", "sm_90"):
        cubin, res = nvrtc.compile_cuda_resources(src, arch)
        assert list(res) == ["vadd"]
        assert 0 < res["vadd"].registers <= 255 and not res["vadd"].spills


def test_cubin_is_whole(monkeypatch):
    """CuPy's getCUBIN drops a cubin's last byte (it strips a NUL as from PTX); the
    cubin tecc keeps is as long as its ELF header says, through NVRTC itself or, where
    that library is out of reach, completed from the header."""
    src = generate_cuda([vadd_kernel()])
    whole = compile_cuda(src, "sm_90", use_cache=False)
    assert whole[:4] == b"\x7fELF" and len(whole) == nvrtc.elf_size(whole)
    from cupy.cuda import nvrtc as cupy_nvrtc
    prog = cupy_nvrtc.createProgram(src, "t.cu", [], [])
    try:
        cupy_nvrtc.compileProgram(prog, nvrtc.compile_options(src, "sm_90", ()) + [nvrtc.PTXAS_VERBOSE])
        short = bytes(cupy_nvrtc.getCUBIN(prog))
    finally:
        cupy_nvrtc.destroyProgram(prog)
    assert len(short) <= len(whole) and whole.startswith(short)
    monkeypatch.setattr(nvrtc, "_library", [None])
    assert compile_cuda(src, "sm_90", use_cache=False) == whole


def test_elf_size_of_other_bytes():
    assert nvrtc.elf_size(b"") == 0 and nvrtc.elf_size(b"// PTX text" * 10) == 0
