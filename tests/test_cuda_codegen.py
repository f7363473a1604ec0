"""The CUDA backend: hand-built device functions (per the kernel IR contract) printed
as CUDA C++ and compiled by NVRTC to cubins for sm_80 and sm_90 (no GPU needed)."""
import os
import re

import pytest

from tecc import tir
from tecc.cuda_codegen import CodeGenCUDA, cache, compile_cuda, generate_cuda, get_ptx, nvrtc
from tecc.cuda_codegen.codegen_cuda import multiple_of
from tecc.errors import CompileError, TargetError
from tecc.target import Target
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.op import const
from tecc.tir.transform import promote_local_registers

ARCHS = ("sm_80", "sm_90")
ELF = b"\x7fELF"


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TECC_CACHE_DIR", str(tmp_path / "cache"))
    cache.clear_memory()
    yield
    cache.clear_memory()


# ---------------------------------------------------------------------------
# building kernels by hand (the device-function shape of /work/notes/GPU.md)
# ---------------------------------------------------------------------------

def thread(tag, extent):
    """(index var, wrapper putting a body under the thread_extent attr)."""
    ext = tir.convert(extent)
    iv = E.IterVar(E.Range(const(0), ext), E.Var(tag, "int32"), E.IterVarType.THREAD_INDEX, tag)
    return iv.var, (lambda body: S.AttrStmt(iv, "thread_extent", ext, body))


def buf1d(name, size, dtype="float32", scope="global"):
    return S.decl_buffer((tir.convert(size),), dtype, name, scope)


def kernel(name, bufs, scalars, body, shared_bytes=0, extents=None):
    params, bmap = [], {}
    for b in bufs:
        p = E.Var(b.name, "handle")
        params.append(p)
        bmap[p] = b
    params += list(scalars)
    attrs = {"global_symbol": name, "tecc.kernel": True, "thread_extents": extents or {},
             "shared_bytes": shared_bytes}
    return S.PrimFunc(tuple(params), body, bmap, attrs)


def likely(cond):
    return E.Call("bool", "likely", (cond,))


def barrier():
    return S.Evaluate(E.Call("int32", "tvm_storage_sync", (E.StringImm("shared"),)))


def compile_all_archs(source):
    for arch in ARCHS:
        cubin = compile_cuda(source, arch)
        assert cubin[:4] == ELF, arch
    return cubin


def vadd_kernel(name="vadd", dtype="float32"):
    n = E.Var("n", "int32")
    A, B, C = buf1d("A", n, dtype), buf1d("B", n, dtype), buf1d("C", n, dtype)
    bx, at_bx = thread("blockIdx.x", (n + 255) // 256)
    tx, at_tx = thread("threadIdx.x", 256)
    i = bx * 256 + tx
    body = at_bx(at_tx(S.IfThenElse(likely(i < n), S.BufferStore(C, A[i] + B[i], (i,)))))
    return kernel(name, [A, B, C], [n], body)


def tiled_copy_kernel(tile=128, dtype="float32", shared_bytes=None):
    """Each block copies ``tile`` elements through shared memory, reversed in the tile."""
    n = E.Var("n", "int32")
    A, B = buf1d("A", n, dtype), buf1d("B", n, dtype)
    S_ = buf1d("A_shared", tile, dtype, "shared")
    bx, at_bx = thread("blockIdx.x", n // tile)
    tx, at_tx = thread("threadIdx.x", tile)
    body = S.seq(
        S.BufferStore(S_, A[bx * tile + tx], (tx,)),
        barrier(),
        S.BufferStore(B, S_[tile - 1 - tx], (bx * tile + tx,)),
    )
    nbytes = tile * (2 if "16" in dtype else 4)
    return kernel("tiled_copy", [A, B], [n], at_bx(at_tx(S.Allocate(S_, body))),
                  shared_bytes=nbytes if shared_bytes is None else shared_bytes)


# ---------------------------------------------------------------------------
# printing
# ---------------------------------------------------------------------------

def test_vector_add_source_and_cubin():
    src = generate_cuda([vadd_kernel()])
    assert ('extern "C" __global__ void __launch_bounds__(256) vadd(const float* __restrict__ A, '
            'const float* __restrict__ B, float* __restrict__ C, int32_t n)') in src
    assert "((int)blockIdx.x) * 256 + ((int)threadIdx.x)" in src
    assert "__builtin_expect" in src and "return 0" not in src
    assert "#include" not in src  # no header needed for float32
    compile_all_archs(src)


def test_several_kernels_in_one_unit_and_duplicate_names():
    src = generate_cuda([vadd_kernel("k0"), vadd_kernel("k1")])
    assert src.count('extern "C" __global__') == 2
    compile_all_archs(src)
    with pytest.raises(CompileError, match="two kernels are named 'k0'"):
        generate_cuda([vadd_kernel("k0"), vadd_kernel("k0")])


def test_shared_memory_tiled_copy_with_barrier():
    src = generate_cuda([tiled_copy_kernel()])
    assert "__shared__ __align__(16) float A_shared[128];" in src
    assert "__syncthreads();" in src
    assert src.index("A_shared[((int)threadIdx.x)] =") < src.index("__syncthreads();")
    compile_all_archs(src)


def test_dynamic_shared_memory_above_48k():
    tile = 16384  # 64 KiB of float32
    gen = CodeGenCUDA()
    src = gen.generate([tiled_copy_kernel(tile=tile, shared_bytes=tile * 4)])
    assert "extern __shared__ __align__(16) unsigned char tecc_dynamic_smem[];" in src
    assert "float* __restrict__ A_shared = (float*)(tecc_dynamic_smem + 0);" in src
    assert gen.kernel_info["tiled_copy"]["dynamic_shared_bytes"] == tile * 4
    compile_all_archs(src)
    # below the limit it stays static
    gen = CodeGenCUDA()
    gen.generate([tiled_copy_kernel(tile=128)])
    assert gen.kernel_info["tiled_copy"]["dynamic_shared_bytes"] == 0


def test_two_dynamic_shared_buffers_are_carved_aligned():
    n = E.Var("n", "int32")
    A = buf1d("A", n)
    s1 = buf1d("s1", 12289, "float32", "shared")  # 49156 bytes: the next starts at 49168
    s2 = buf1d("s2", 10, "float16", "shared")
    tx, at_tx = thread("threadIdx.x", 32)
    body = S.seq(S.BufferStore(s1, A[tx], (tx,)), S.BufferStore(s2, E.Cast("float16", s1[tx]), (tx,)),
                 barrier(), S.BufferStore(A, E.Cast("float32", s2[31 - tx]), (tx,)))
    gen = CodeGenCUDA()
    src = gen.generate([kernel("carve", [A], [n], at_tx(S.Allocate(s1, S.Allocate(s2, body))),
                               shared_bytes=12289 * 4 + 20)])
    assert "(__half*)(tecc_dynamic_smem + 49168)" in src
    assert gen.kernel_info["carve"]["dynamic_shared_bytes"] == 49168 + 32
    compile_all_archs(src)


def test_float16_kernel():
    k = vadd_kernel("vadd_half", "float16")
    src = generate_cuda([k])
    assert "#include <cuda_fp16.h>" in src and "const __half* __restrict__ A" in src
    compile_all_archs(src)


def test_float16_math_and_constants():
    n = E.Var("n", "int32")
    A, B = buf1d("A", n, "float16"), buf1d("B", n, "float16")
    tx, at_tx = thread("threadIdx.x", 128)
    x = A[tx]
    val = E.Call("float16", "exp", (x,)) * const(0.5, "float16") + E.Cast("float16", tx)
    body = at_tx(S.BufferStore(B, E.Max(val, E.Call("float16", "abs", (x,))), (tx,)))
    src = generate_cuda([kernel("half_math", [A, B], [n], body)])
    assert "__half(0.5f)" in src and "expf((float)(" in src
    compile_all_archs(src)


def test_bfloat16_kernel():
    n = E.Var("n", "int32")
    A, B = buf1d("A", n, "bfloat16"), buf1d("B", n, "bfloat16")
    tx, at_tx = thread("threadIdx.x", 128)
    val = E.Call("bfloat16", "tanh", (A[tx],)) * const(2.0, "bfloat16") + const(1.0, "bfloat16")
    src = generate_cuda([kernel("bf16", [A, B], [n], at_tx(S.BufferStore(B, val, (tx,))))])
    assert "#include <cuda_bf16.h>" in src and "__nv_bfloat16* __restrict__ B" in src
    assert "__float2bfloat16_rn" in src and "tanhf(" in src
    compile_all_archs(src)


def test_float4_loads_and_stores_when_aligned():
    n = E.Var("n", "int32")
    A, B = buf1d("A", n), buf1d("B", n)
    bx, at_bx = thread("blockIdx.x", 16)
    tx, at_tx = thread("threadIdx.x", 64)
    r = E.Ramp(bx * 256 + tx * 4, const(1), 4)
    value = A[r] * E.Broadcast(const(2.0, "float32"), 4)
    gen = CodeGenCUDA()
    src = gen.generate([kernel("vec4", [A, B], [n], at_bx(at_tx(S.BufferStore(B, value, (r,)))))])
    assert "*(const float4*)p" in src and "*(float4*)p = t;" in src
    assert "tecc_load_aligned_float32x4(A + (((int)blockIdx.x) * 256 + ((int)threadIdx.x) * 4))" in src
    assert gen.kernel_info["vec4"]["param_align"] == {0: 16, 1: 16}
    compile_all_archs(src)


def test_unaligned_vector_access_goes_element_wise():
    n = E.Var("n", "int32")
    A, B = buf1d("A", n), buf1d("B", n)
    tx, at_tx = thread("threadIdx.x", 64)
    r = E.Ramp(tx * 4 + 1, const(1), 4)  # base is 1 mod 4: not provably aligned
    gen = CodeGenCUDA()
    src = gen.generate([kernel("vec4u", [A, B], [n], at_tx(S.BufferStore(B, A[r], (r,))))])
    assert "float4" not in src and "tecc_load_float32x4(A + (((int)threadIdx.x) * 4 + 1))" in src
    assert gen.kernel_info["vec4u"]["param_align"] == {}
    compile_all_archs(src)


def test_vector_int_half2_compare_select_cast():
    n = E.Var("n", "int32")
    A, B = buf1d("A", n, "int32"), buf1d("B", n, "float32")
    H = buf1d("H", n, "float16")
    tx, at_tx = thread("threadIdx.x", 32)
    r2 = E.Ramp(tx * 2, const(1), 2)
    r4 = E.Ramp(tx * 4, const(1), 4)
    ai = A[r4]
    cond = E.LT(ai, E.Broadcast(const(10), 4))
    sel = E.Select(cond, E.Cast("float32x4", ai), E.Broadcast(const(-1.0, "float32"), 4))
    half2 = H[r2] + H[r2]
    body = at_tx(S.seq(
        S.BufferStore(B, sel, (r4,)),
        S.BufferStore(H, half2, (r2,)),
        S.BufferStore(A, E.FloorDiv(ai, E.Broadcast(const(3), 4)), (r4,)),
    ))
    src = generate_cuda([kernel("mixed", [A, B, H], [n], body)])
    assert "int4 t = *(const int4*)p;" in src and "__half2 t = *(const __half2*)p;" in src
    assert "typedef tecc_vec<bool, 4> tecc_boolx4;" in src
    compile_all_archs(src)


def test_half4_vectors_lazy_select_let_and_three_lanes():
    n = E.Var("n", "int32")
    H, F = buf1d("H", n, "float16"), buf1d("F", n, "float32")
    tx, at_tx = thread("threadIdx.x", 32)
    r4 = E.Ramp(tx * 4 + 1, const(1), 4)
    r3 = E.Ramp(tx * 4, const(1), 3)
    cond = E.And(E.LT(F[r4], E.Broadcast(const(0.0, "float32"), 4)),
                 E.Not(E.GT(F[r4], E.Broadcast(const(5.0, "float32"), 4))))
    lazy = E.Call("float32x4", "if_then_else", (cond, F[r4], E.Broadcast(const(1.0, "float32"), 4)))
    x = E.Var("x", "int32")
    body = at_tx(S.seq(
        S.BufferStore(H, H[r4] * H[r4], (r4,)),
        S.BufferStore(F, lazy, (r4,)),
        S.BufferStore(F, E.Cast("float32", E.Let(x, tx * 2, x + x)), (tx,)),
        S.BufferStore(F, F[r3] + E.Broadcast(const(1.0, "float32"), 3), (r3,)),
        S.BufferStore(F, E.Call("float32x4", "exp", (F[r4],)), (r4,)),
    ))
    src = generate_cuda([kernel("vmix", [H, F], [n], body)])
    # NVRTC has no GNU statement expressions: lambdas instead
    assert "({" not in src and "([&]() -> int32_t { int32_t x = ((int)threadIdx.x) * 2; return x + x; }())" in src
    assert "typedef tecc_vec<__half, 4> tecc_float16x4;" in src
    assert "typedef tecc_vec<float, 4> tecc_float32x3;" in src
    compile_all_archs(src)


def test_floordiv_helpers_and_int64_and_special_floats():
    n = E.Var("n", "int32")
    A = buf1d("A", n, "int32")
    L = buf1d("L", n, "int64")
    F = buf1d("F", n, "float32")
    tx, at_tx = thread("threadIdx.x", 64)
    t = tx - 32
    body = at_tx(S.seq(
        S.BufferStore(A, E.FloorDiv(t, n) + E.FloorMod(t, const(7)), (tx,)),
        S.BufferStore(L, E.Cast("int64", t) * const(1 << 40, "int64"), (tx,)),
        S.BufferStore(F, E.Select(E.LT(t, const(0)), const(float("inf"), "float32"),
                                  const(float("nan"), "float32")), (tx,)),
    ))
    src = generate_cuda([kernel("fdiv", [A, L, F], [n], body)])
    assert "static __device__ __forceinline__ int32_t tecc_floordiv_int32(int32_t a, int32_t b)" in src
    assert "tecc_floormod_int32" in src and "INT64_C(1099511627776)" in src
    assert "__int_as_float(0x7f800000)" in src
    compile_all_archs(src)


def test_math_intrinsics_are_precise():
    n = E.Var("n", "int32")
    A, B = buf1d("A", n), buf1d("B", n)
    tx, at_tx = thread("threadIdx.x", 64)
    x = A[tx]
    val = (E.Call("float32", "exp", (x,)) + E.Call("float32", "tanh", (x,))
           + E.Call("float32", "erf", (x,)) + E.Call("float32", "rsqrt", (x,))
           + E.Min(x, const(1.0, "float32")) + E.Max(x, const(0.0, "float32")))
    src = generate_cuda([kernel("mathk", [A, B], [n], at_tx(S.BufferStore(B, val, (tx,))))])
    for fn in ("expf(", "tanhf(", "erff(", "rsqrtf(", "fminf(", "fmaxf("):
        assert fn in src
    assert "__expf" not in src
    compile_all_archs(src)


def test_local_buffers_loops_lets_and_assert():
    n = E.Var("n", "int32")
    A, B = buf1d("A", n), buf1d("B", n)
    acc = buf1d("acc", 4, "float32", "local")
    scratch = buf1d("scratch", 8, "float32", "local")
    tx, at_tx = thread("threadIdx.x", 64)
    k, j = E.Var("k", "int32"), E.Var("j", "int32")
    base = E.Var("base", "int32")
    body = S.seq(
        # acc: only constant indices (the unroll pass's output) -> kept in variables
        *[S.BufferStore(acc, const(0.0, "float32"), (const(c),)) for c in range(4)],
        S.For(j, const(0), const(8), S.ForKind.SERIAL, S.BufferStore(scratch, A[base + j], (j,))),
        S.For(k, const(0), const(4), S.ForKind.UNROLLED,
              S.BufferStore(scratch, scratch[k * 2] + scratch[k * 2 + 1], (k,))),
        *[S.BufferStore(acc, acc[c] + scratch[c], (const(c),)) for c in range(4)],
        S.BufferStore(B, acc[0] + acc[3], (tx,)),
    )
    body = S.AssertStmt(E.GT(n, const(0)), "n must be positive",
                        S.LetStmt(base, tx * 8, S.Allocate(acc, S.Allocate(scratch, body))))
    src = generate_cuda([promote_local_registers(kernel("locals", [A, B], [n], at_tx(body)))])
    assert "float acc_0;" in src  # constant-indexed: promoted to variables
    assert "float scratch[8] __align__(16);" in src
    assert "#pragma unroll" in src and "__trap();" in src and "int32_t base = " in src
    compile_all_archs(src)


def test_kernel_errors():
    n = E.Var("n", "int32")
    A = buf1d("A", n)
    sym = buf1d("S", n, "float32", "shared")
    tx, at_tx = thread("threadIdx.x", 32)
    with pytest.raises(CompileError, match="constant size"):
        generate_cuda([kernel("bad", [A], [n], at_tx(S.Allocate(sym, S.BufferStore(sym, A[tx], (tx,)))))])
    iv = E.IterVar(E.Range(const(0), const(4)), E.Var("vthread", "int32"), E.IterVarType.THREAD_INDEX,
                   "vthread")
    with pytest.raises(CompileError, match="unknown thread tag 'vthread'"):
        generate_cuda([kernel("bad", [A], [n], S.AttrStmt(iv, "thread_extent", const(4),
                                                          S.BufferStore(A, const(0.0), (const(0),))))])


def test_multiple_of():
    x = E.Var("x", "int32")
    assert multiple_of(x * 8 + 16) == 8
    assert multiple_of(x * 4 + 2) == 2
    assert multiple_of(E.FloorMod(x * 6, const(4))) == 2
    assert multiple_of(const(0)) == 0
    assert multiple_of(x, {x: 4}) == 4


# ---------------------------------------------------------------------------
# NVRTC, errors, caching, targets
# ---------------------------------------------------------------------------

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
