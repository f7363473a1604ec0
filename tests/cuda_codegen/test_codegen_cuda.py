"""The CUDA printer (cuda_codegen/codegen_cuda.py): hand-built device functions (per
the kernel IR contract) printed as CUDA C++ and compiled by NVRTC to cubins for
sm_80 and sm_90 (no GPU needed)."""
import re

import pytest

from tecc.cuda_codegen import CodeGenCUDA, compile_cuda, generate_cuda
from tecc.cuda_codegen.codegen_cuda import multiple_of
from tecc.errors import CompileError
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.op import const
from tecc.tir.transform import promote_local_registers
from irhelpers import (  # noqa: F401  (fresh_cuda_cache: an autouse fixture)
    buf1d, fresh_cuda_cache, kernel, loop, shuffle_kernel, sync, thread_extent, thread_iv, vadd_kernel, var,
)

ARCHS = ("sm_80", "sm_90")
ELF = b"\x7fELF"


def compile_all_archs(source):
    for arch in ARCHS:
        cubin = compile_cuda(source, arch)
        assert cubin[:4] == ELF, arch
    return cubin


def tiled_copy_kernel(tile=128, dtype="float32"):
    """Each block copies ``tile`` elements through shared memory, reversed in the tile."""
    n = var("n")
    A, B = buf1d("A", n, dtype), buf1d("B", n, dtype)
    S_ = buf1d("A_shared", tile, dtype, "shared")
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    body = S.seq(
        S.BufferStore(S_, A[bx * tile + tx], (tx,)),
        sync(),
        S.BufferStore(B, S_[tile - 1 - tx], (bx * tile + tx,)),
    )
    return kernel("tiled_copy", [A, B, n], S.Allocate(S_, body), [(bx, n // tile), (tx, tile)])


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
    src = gen.generate([tiled_copy_kernel(tile=tile)])
    assert "extern __shared__ __align__(16) unsigned char tecc_dynamic_smem[];" in src
    assert "float* __restrict__ A_shared = (float*)(tecc_dynamic_smem + 0);" in src
    assert gen.kernel_info["tiled_copy"]["dynamic_shared_bytes"] == tile * 4
    compile_all_archs(src)
    # below the limit it stays static
    gen = CodeGenCUDA()
    gen.generate([tiled_copy_kernel(tile=128)])
    assert gen.kernel_info["tiled_copy"]["dynamic_shared_bytes"] == 0


def test_two_dynamic_shared_buffers_are_carved_aligned():
    n = var("n")
    A = buf1d("A", n)
    s1 = buf1d("s1", 12289, "float32", "shared")  # 49156 bytes: the next starts at 49168
    s2 = buf1d("s2", 10, "float16", "shared")
    tx = var("threadIdx.x")
    body = S.seq(S.BufferStore(s1, A[tx], (tx,)), S.BufferStore(s2, E.Cast("float16", s1[tx]), (tx,)),
                 sync(), S.BufferStore(A, E.Cast("float32", s2[31 - tx]), (tx,)))
    gen = CodeGenCUDA()
    src = gen.generate([kernel("carve", [A, n], S.Allocate(s1, S.Allocate(s2, body)), [(tx, 32)])])
    assert "(__half*)(tecc_dynamic_smem + 49168)" in src
    assert gen.kernel_info["carve"]["dynamic_shared_bytes"] == 49168 + 32
    compile_all_archs(src)


def test_float16_kernel():
    k = vadd_kernel("vadd_half", "float16")
    src = generate_cuda([k])
    assert "#include <cuda_fp16.h>" in src and "const __half* __restrict__ A" in src
    compile_all_archs(src)


def test_float16_math_and_constants():
    n = var("n")
    A, B = buf1d("A", n, "float16"), buf1d("B", n, "float16")
    tx = var("threadIdx.x")
    x = A[tx]
    val = E.Call("float16", "exp", (x,)) * const(0.5, "float16") + E.Cast("float16", tx)
    body = S.BufferStore(B, E.Max(val, E.Call("float16", "abs", (x,))), (tx,))
    src = generate_cuda([kernel("half_math", [A, B, n], body, [(tx, 128)])])
    assert "__half(0.5f)" in src and "expf((float)(" in src
    compile_all_archs(src)


def test_bfloat16_kernel():
    n = var("n")
    A, B = buf1d("A", n, "bfloat16"), buf1d("B", n, "bfloat16")
    tx = var("threadIdx.x")
    val = E.Call("bfloat16", "tanh", (A[tx],)) * const(2.0, "bfloat16") + const(1.0, "bfloat16")
    src = generate_cuda([kernel("bf16", [A, B, n], S.BufferStore(B, val, (tx,)), [(tx, 128)])])
    assert "#include <cuda_bf16.h>" in src and "__nv_bfloat16* __restrict__ B" in src
    assert "__float2bfloat16_rn" in src and "tanhf(" in src
    compile_all_archs(src)


def test_float4_loads_and_stores_when_aligned():
    n = var("n")
    A, B = buf1d("A", n), buf1d("B", n)
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    r = E.Ramp(bx * 256 + tx * 4, const(1), 4)
    value = A[r] * E.Broadcast(const(2.0, "float32"), 4)
    gen = CodeGenCUDA()
    src = gen.generate([kernel("vec4", [A, B, n], S.BufferStore(B, value, (r,)), [(bx, 16), (tx, 64)])])
    assert "*(const float4*)p" in src and "*(float4*)p = t;" in src
    assert "tecc_load_aligned_float32x4(A + (((int)blockIdx.x) * 256 + ((int)threadIdx.x) * 4))" in src
    assert gen.kernel_info["vec4"]["param_align"] == {0: 16, 1: 16}
    compile_all_archs(src)


@pytest.mark.parametrize("dtype, lanes, native", [
    ("float16", 8, "uint4"), ("float16", 4, "uint2"), ("int8", 16, "uint4"), ("int8", 4, "unsigned int"),
    ("uint16", 8, "uint4"),
])
def test_narrow_element_vectors_move_as_one_wide_access(dtype, lanes, native):
    """1- and 2-byte elements have no CUDA vector type of 4 to 16 lanes: an aligned
    access moves their bits through one unsigned type of the vector's size (a
    tensor-core kernel's float16 staging: 16 bytes a thread)."""
    n = var("n")
    A, B = buf1d("A", n, dtype), buf1d("B", n, dtype)
    tx = var("threadIdx.x")
    r = E.Ramp(tx * lanes, const(1), lanes)
    gen = CodeGenCUDA()
    src = gen.generate([kernel("copy", [A, B, n], S.BufferStore(B, A[r], (r,)), [(tx, 64)])])
    vec = f"{dtype}x{lanes}"
    assert f"union {{ {native} bits; tecc_{vec} v; }} t;" in src
    assert f"t.bits = *(const {native}*)p;" in src and f"*({native}*)p = t.bits;" in src
    assert f"tecc_store_aligned_{vec}(B + ((int)threadIdx.x) * {lanes}, tecc_load_aligned_{vec}(A + " in src
    nbytes = lanes * (1 if dtype == "int8" else 2)
    assert gen.kernel_info["copy"]["param_align"] == {0: nbytes, 1: nbytes}  # the launcher checks the pointers
    compile_all_archs(src)


def test_a_bfloat16_vector_copy_moves_its_bits():
    """bfloat16 vectors exist only as copies (the vectorizer keeps it so): the copy is
    printed on the raw 16 bits, through the same wide accesses."""
    n = var("n")
    A, B = buf1d("A", n, "bfloat16"), buf1d("B", n, "bfloat16")
    tx = var("threadIdx.x")
    r = E.Ramp(tx * 8, const(1), 8)
    src = generate_cuda([kernel("bf16copy", [A, B, n], S.BufferStore(B, A[r], (r,)), [(tx, 64)])])
    assert ("tecc_store_aligned_uint16x8(((uint16_t*)B) + ((int)threadIdx.x) * 8, "
            "tecc_load_aligned_uint16x8(((uint16_t*)A) + ((int)threadIdx.x) * 8));") in src
    compile_all_archs(src)


def test_unaligned_vector_access_goes_element_wise():
    n = var("n")
    A, B = buf1d("A", n), buf1d("B", n)
    tx = var("threadIdx.x")
    r = E.Ramp(tx * 4 + 1, const(1), 4)  # base is 1 mod 4: not provably aligned
    gen = CodeGenCUDA()
    src = gen.generate([kernel("vec4u", [A, B, n], S.BufferStore(B, A[r], (r,)), [(tx, 64)])])
    assert "float4" not in src and "tecc_load_float32x4(A + (((int)threadIdx.x) * 4 + 1))" in src
    assert gen.kernel_info["vec4u"]["param_align"] == {}
    compile_all_archs(src)


def test_vector_int_half2_compare_select_cast():
    n = var("n")
    A, B = buf1d("A", n, "int32"), buf1d("B", n, "float32")
    H = buf1d("H", n, "float16")
    tx = var("threadIdx.x")
    r2 = E.Ramp(tx * 2, const(1), 2)
    r4 = E.Ramp(tx * 4, const(1), 4)
    ai = A[r4]
    cond = E.LT(ai, E.Broadcast(const(10), 4))
    sel = E.Select(cond, E.Cast("float32x4", ai), E.Broadcast(const(-1.0, "float32"), 4))
    half2 = H[r2] + H[r2]
    body = S.seq(
        S.BufferStore(B, sel, (r4,)),
        S.BufferStore(H, half2, (r2,)),
        S.BufferStore(A, E.FloorDiv(ai, E.Broadcast(const(3), 4)), (r4,)),
    )
    src = generate_cuda([kernel("mixed", [A, B, H, n], body, [(tx, 32)])])
    assert "int4 t = *(const int4*)p;" in src and "__half2 t = *(const __half2*)p;" in src
    assert "typedef tecc_vec<bool, 4> tecc_boolx4;" in src
    compile_all_archs(src)


def test_half4_vectors_lazy_select_let_and_three_lanes():
    n = var("n")
    H, F = buf1d("H", n, "float16"), buf1d("F", n, "float32")
    tx = var("threadIdx.x")
    r4 = E.Ramp(tx * 4 + 1, const(1), 4)
    r3 = E.Ramp(tx * 4, const(1), 3)
    cond = E.And(E.LT(F[r4], E.Broadcast(const(0.0, "float32"), 4)),
                 E.Not(E.GT(F[r4], E.Broadcast(const(5.0, "float32"), 4))))
    lazy = E.Call("float32x4", "if_then_else", (cond, F[r4], E.Broadcast(const(1.0, "float32"), 4)))
    x = var("x")
    body = S.seq(
        S.BufferStore(H, H[r4] * H[r4], (r4,)),
        S.BufferStore(F, lazy, (r4,)),
        S.BufferStore(F, E.Cast("float32", E.Let(x, tx * 2, x + x)), (tx,)),
        S.BufferStore(F, F[r3] + E.Broadcast(const(1.0, "float32"), 3), (r3,)),
        S.BufferStore(F, E.Call("float32x4", "exp", (F[r4],)), (r4,)),
    )
    src = generate_cuda([kernel("vmix", [H, F, n], body, [(tx, 32)])])
    # NVRTC has no GNU statement expressions: lambdas instead
    assert "({" not in src and "([&]() -> int32_t { int32_t x = ((int)threadIdx.x) * 2; return x + x; }())" in src
    assert "typedef tecc_vec<__half, 4> tecc_float16x4;" in src
    assert "typedef tecc_vec<float, 4> tecc_float32x3;" in src
    compile_all_archs(src)


def test_floordiv_helpers_and_int64_and_special_floats():
    n = var("n")
    A = buf1d("A", n, "int32")
    L = buf1d("L", n, "int64")
    F = buf1d("F", n, "float32")
    tx = var("threadIdx.x")
    t = tx - 32
    body = S.seq(
        S.BufferStore(A, E.FloorDiv(t, n) + E.FloorMod(t, const(7)), (tx,)),
        S.BufferStore(L, E.Cast("int64", t) * const(1 << 40, "int64"), (tx,)),
        S.BufferStore(F, E.Select(E.LT(t, const(0)), const(float("inf"), "float32"),
                                  const(float("nan"), "float32")), (tx,)),
    )
    src = generate_cuda([kernel("fdiv", [A, L, F, n], body, [(tx, 64)])])
    assert "static __device__ __forceinline__ int32_t tecc_floordiv_int32(int32_t a, int32_t b)" in src
    assert "tecc_floormod_int32" in src and "INT64_C(1099511627776)" in src
    assert "__int_as_float(0x7f800000)" in src
    compile_all_archs(src)


def test_math_intrinsics_are_precise():
    n = var("n")
    A, B = buf1d("A", n), buf1d("B", n)
    tx = var("threadIdx.x")
    x = A[tx]
    val = (E.Call("float32", "exp", (x,)) + E.Call("float32", "tanh", (x,))
           + E.Call("float32", "erf", (x,)) + E.Call("float32", "rsqrt", (x,))
           + E.Min(x, const(1.0, "float32")) + E.Max(x, const(0.0, "float32")))
    src = generate_cuda([kernel("mathk", [A, B, n], S.BufferStore(B, val, (tx,)), [(tx, 64)])])
    for fn in ("expf(", "tanhf(", "erff(", "rsqrtf(", "fminf(", "fmaxf("):
        assert fn in src
    assert "__expf" not in src
    compile_all_archs(src)


def test_local_buffers_loops_lets_and_assert():
    n = var("n")
    A, B = buf1d("A", n), buf1d("B", n)
    acc = buf1d("acc", 4, "float32", "local")
    scratch = buf1d("scratch", 8, "float32", "local")
    tx = var("threadIdx.x")
    k, j = var("k"), var("j")
    base = var("base")
    body = S.seq(
        # acc: only constant indices (the unroll pass's output) -> kept in variables
        *[S.BufferStore(acc, const(0.0, "float32"), (const(c),)) for c in range(4)],
        loop(j, 8, S.BufferStore(scratch, A[base + j], (j,))),
        loop(k, 4, S.BufferStore(scratch, scratch[k * 2] + scratch[k * 2 + 1], (k,)), S.ForKind.UNROLLED),
        *[S.BufferStore(acc, acc[c] + scratch[c], (const(c),)) for c in range(4)],
        S.BufferStore(B, acc[0] + acc[3], (tx,)),
    )
    body = S.AssertStmt(E.GT(n, const(0)), "n must be positive",
                        S.LetStmt(base, tx * 8, S.Allocate(acc, S.Allocate(scratch, body))))
    src = generate_cuda([promote_local_registers(kernel("locals", [A, B, n], body, [(tx, 64)]))])
    assert "float acc_0;" in src  # constant-indexed: promoted to variables
    assert "float scratch[8] __align__(16);" in src
    assert "#pragma unroll" in src and "__trap();" in src and "int32_t base = " in src
    compile_all_archs(src)


def test_kernel_errors():
    n = var("n")
    A = buf1d("A", n)
    sym = buf1d("S", n, "float32", "shared")
    tx = var("threadIdx.x")
    with pytest.raises(CompileError, match="constant size"):
        generate_cuda([kernel("bad", [A, n], S.Allocate(sym, S.BufferStore(sym, A[tx], (tx,))), [(tx, 32)])])
    vthread = thread_extent(thread_iv("vthread", 4), S.BufferStore(A, const(0.0), (const(0),)))
    with pytest.raises(CompileError, match="unknown thread tag 'vthread'"):
        generate_cuda([kernel("bad", [A, n], vthread)])


def test_multiple_of():
    x = var("x")
    assert multiple_of(x * 8 + 16) == 8
    assert multiple_of(x * 4 + 2) == 2
    assert multiple_of(E.FloorMod(x * 6, const(4))) == 2
    assert multiple_of(const(0)) == 0
    assert multiple_of(x, {x: 4}) == 4


# ---------------------------------------------------------------------------
# warp shuffles
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, ctype", [("float32", "float"), ("float64", "double"), ("int64", "int64_t"),
                                          ("float16", "__half"), ("uint32", "uint32_t")])
def test_cuda_prints_shfl_down_sync(dtype, ctype):
    _, k = shuffle_kernel(dtype, (32, 1), 4)
    src = generate_cuda(k)
    assert re.search(rf"{re.escape(ctype)} x = __shfl_down_sync\(0xffffffffu, src\[.*\], 4, 32\);", src)
    if dtype == "float16":
        assert "#include <cuda_fp16.h>" in src


def test_cuda_shuffles_narrow_ints_as_int():
    _, k = shuffle_kernel("int8", (32, 1), 1)
    src = generate_cuda(k)
    assert "((int8_t)(__shfl_down_sync(0xffffffffu, (int)(" in src
