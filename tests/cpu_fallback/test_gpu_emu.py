"""GPU semantics on the CPU: hand-built kernels run block by block in C with barriers
honoured (the emulator of cpu_fallback/gpu_emu), and the checking mode (out-of-bounds
accesses, shared races)."""

import numpy as np
import pytest

import tecc
from tecc import tir
from tecc.cpu_fallback.gpu_emu import Emulation, SimError
from tecc.errors import KernelError, RuntimeArgError
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.op import const, warp_shuffle_down
from tecc.topi.testing import matmul_python
from irhelpers import (  # noqa: F401  (private_cache_dir: an autouse fixture)
    buf1d, check_kernels, copy_into_kernel, host, kernel, launch, local_out_of_bounds_kernel, loop,
    matvec_kernel, mirror_kernel, off_by_one_kernel, partial_fetch_kernel, private_cache_dir, quiet_call,
    reversal_kernel, run_kernels, shuffle_kernel, single_launch, store, sync, tree_sum_kernel, var,
    whole_tile_matmul,
)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


# ---------------------------------------------------------------------------
# vector add: 4 blocks x 64 threads
# ---------------------------------------------------------------------------

def test_vector_add():
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B, C = buf1d("A", 256), buf1d("B", 256), buf1d("C", 256)
    i = bx * 64 + tx
    k = kernel("vadd_kernel0", [A, B, C], store(C, A[i] + B[i], i), [(bx, 4), (tx, 64)])
    h, ks = single_launch("vadd_kernel0", k, [buf1d("A", 256), buf1d("B", 256), buf1d("C", 256)])
    a, b, c = rand(256), rand(256, seed=1), np.zeros(256, "float32")
    run_kernels(h, ks, [a, b, c])
    np.testing.assert_allclose(c, a + b)
    c2 = np.zeros(256, "float32")
    assert check_kernels(h, ks, [a, b, c2]) == []
    assert not c2.any()   # check works on copies: the arguments are untouched


# ---------------------------------------------------------------------------
# block-wide reversal through shared memory: correct with the barrier, a race without
# ---------------------------------------------------------------------------

def expected_reversal(a):
    return a.reshape(4, 64)[:, ::-1].reshape(-1)


def test_shared_reversal_with_barrier():
    h, ks = reversal_kernel(True)
    a, b = rand(256), np.zeros(256, "float32")
    run_kernels(h, ks, [a, b])
    np.testing.assert_array_equal(b, expected_reversal(a))
    assert check_kernels(h, ks, [a, np.zeros(256, "float32")]) == []
    src = Emulation([ks["reverse_kernel0"]]).source()
    assert "#pragma omp parallel for" in src and "__syncthreads()" in src


def test_shared_reversal_without_barrier_is_a_race():
    h, ks = reversal_kernel(False)
    a = rand(256)
    findings = check_kernels(h, ks, [a, np.zeros(256, "float32")])
    assert findings, "the missing barrier must be reported"
    assert {(f.kind, f.buffer) for f in findings} == {("race", "sh")}
    # both sides are named: the write a reader saw too early, and the early read
    by_statement = {f.statement: f for f in findings}
    assert set(by_statement) == {"sh[threadIdx.x] = A[blockIdx.x*64 + threadIdx.x]",
                                 "sh[63 - threadIdx.x]"}
    f = by_statement["sh[63 - threadIdx.x]"]
    assert "reverse_kernel0" in f.message and "reads sh[" in f.message and "wrote" in f.message
    # run without the barrier: threads run in order, so the first half reads stale data
    b = np.zeros(256, "float32")
    run_kernels(h, ks, [a, b])
    assert not np.array_equal(b, expected_reversal(a))


# ---------------------------------------------------------------------------
# tree reduction: barriers inside a uniform loop, a uniform let inside it
# ---------------------------------------------------------------------------

def test_tree_reduction_in_uniform_loop():
    h, ks = tree_sum_kernel()
    a = rand(3 * 128)
    out = np.zeros(3, "float32")
    run_kernels(h, ks, [a, out])
    np.testing.assert_allclose(out, a.reshape(3, 128).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert check_kernels(h, ks, [a, np.zeros(3, "float32")], max_blocks=1) == []


def test_tree_reduction_missing_loop_barrier_is_a_race():
    h, ks = tree_sum_kernel(with_loop_barrier=False)
    findings = check_kernels(h, ks, [rand(3 * 128), np.zeros(3, "float32")], max_blocks=1)
    assert findings and {f.kind for f in findings} == {"race"}
    assert {f.buffer for f in findings} == {"red"}


# ---------------------------------------------------------------------------
# per-thread state across barriers: a local accumulator and a let
# ---------------------------------------------------------------------------

def test_local_accumulator_and_let_across_barriers():
    h, ks, (R, K) = matvec_kernel()
    m, x, sc, y = rand(R, K), rand(K, seed=2), rand(R, seed=3), np.zeros(R, "float32")
    run_kernels(h, ks, [m, x, sc, y])
    np.testing.assert_allclose(y, sc * (m @ x), rtol=1e-4, atol=1e-4)
    src = Emulation([ks["matvec_kernel0"]]).source()
    assert "scale_per_thread[tid" in src    # a loaded value lives in one slot per thread
    assert "row_per_thread" not in src      # an index is recomputed by each thread loop
    assert "acc[tid" in src                 # the local accumulator has a slot per thread
    assert check_kernels(h, ks, [m, x, sc, np.zeros(R, "float32")]) == []


def test_missing_barrier_between_loop_iterations_is_a_race():
    # without the barrier at the end of an iteration, the next tile overwrites xs
    # while other threads may still read the previous one
    h, ks, (R, K) = matvec_kernel(second_barrier=False)
    findings = check_kernels(h, ks, [rand(R, K), rand(K), rand(R), np.zeros(R, "float32")])
    races = [f for f in findings if f.kind == "race"]
    assert races and races[0].buffer == "xs"
    assert "xs[" in races[0].statement and "read" in races[0].message


# ---------------------------------------------------------------------------
# out-of-bounds accesses
# ---------------------------------------------------------------------------

def test_out_of_bounds_global_and_shared():
    # tile[tx + 1]: off by one for the last thread; no guard: 256 threads for 200 elements
    h, ks = off_by_one_kernel()
    a, c = rand(200), np.zeros(200, "float32")
    findings = check_kernels(h, ks, [a, c])
    oob = {f.buffer: f for f in findings if f.kind == "out_of_bounds"}
    assert set(oob) == {"tile", "A", "C"}
    assert oob["tile"].index == 64 and "[0, 64)" in oob["tile"].message
    assert oob["tile"].statement.startswith("tile[threadIdx.x + 1]")
    assert oob["A"].index == 200 and oob["A"].block == (3, 0, 0) and oob["A"].thread == (8, 0, 0)
    assert "oob_kernel0" in oob["A"].message and "[0, 200)" in oob["A"].message
    assert oob["C"].statement.startswith("C[")
    assert not c.any()  # a launch with an out-of-bounds access is not run for real


def test_out_of_bounds_in_per_thread_local_buffer():
    h, ks = local_out_of_bounds_kernel()   # index 2 of a 2-element per-thread buffer
    findings = check_kernels(h, ks, [np.zeros(64, "float32")])
    assert [(f.kind, f.buffer, f.index) for f in findings] == [("out_of_bounds", "loc", 2)]
    assert findings[0].thread == (2, 0, 0) and "local" in findings[0].message


# ---------------------------------------------------------------------------
# races on global memory and uninitialized shared reads
# ---------------------------------------------------------------------------

def copy_into(name, blocks, out_size, out_index):
    """The findings of checking :func:`copy_into_kernel`."""
    h, ks = copy_into_kernel(name, blocks, out_size, out_index)
    return check_kernels(h, ks, [rand(blocks * 32), np.zeros(out_size, "float32")])


def test_blocks_writing_the_same_output_race():
    # a reduction split across blocks with a plain store: each block overwrites out[tx]
    findings = copy_into("split_sum_kernel0", 4, 32, lambda bx, tx: tx)
    assert [(f.kind, f.buffer) for f in findings] == [("race", "out")]
    f = findings[0]
    assert f.block == (1, 0, 0) and f.thread == (0, 0, 0) and f.index == 0
    assert "global buffer 'out'" in f.message and "block (0, 0, 0)" in f.message
    assert "no fixed order" in f.message and f.statement.startswith("out[threadIdx.x]")


def test_threads_of_a_block_writing_one_global_element_race():
    # every thread stores its own value to out[blockIdx.x]: which one lands is undefined
    findings = copy_into("last_wins_kernel0", 2, 2, lambda bx, tx: bx)
    assert [(f.kind, f.buffer, f.thread) for f in findings] == [("race", "out", (1, 0, 0))]
    assert "thread (0, 0, 0) wrote too: the element is written by several threads" in findings[0].message


def test_global_write_then_read_by_other_thread_needs_a_barrier():
    # each thread writes B[i], then reads its mirror's B[31 - i]: a race without a
    # barrier, ordered with one (a barrier orders global memory within a block)
    a = rand(64)
    h, ks = mirror_kernel(True)
    c = np.zeros(64, "float32")
    assert check_kernels(h, ks, [a, np.zeros(64, "float32"), c]) == []
    run_kernels(h, ks, [a, np.zeros(64, "float32"), c])
    np.testing.assert_allclose(c, (2 * a).reshape(-1, 32)[:, ::-1].reshape(-1))
    h, ks = mirror_kernel(False)
    findings = check_kernels(h, ks, [a, np.zeros(64, "float32"), np.zeros(64, "float32")])
    assert {(f.kind, f.buffer) for f in findings} == {("race", "B")}


def test_read_only_and_disjoint_global_accesses_are_not_races():
    # every block reads all of A (shared input) and writes its own slice of C
    bx, tx, j = var("blockIdx.x"), var("threadIdx.x"), var("j")
    A, C = buf1d("A", 16), buf1d("C", 4 * 16)
    acc = buf1d("acc", 1, scope="local")
    body = S.Allocate(acc, S.seq(store(acc, 0.0, 0),
                                 loop(j, 16, store(acc, acc[0] + A[j], 0)),
                                 store(C, acc[0] + A[tx], bx * 16 + tx)))
    k = kernel("bcast_kernel0", [A, C], body, [(bx, 4), (tx, 16)])
    h, ks = single_launch("bcast_kernel0", k, [buf1d("A", 16), buf1d("C", 64)])
    a = rand(16)
    c = np.zeros(64, "float32")
    assert check_kernels(h, ks, [a, c], max_blocks=None) == []
    run_kernels(h, ks, [a, c])
    np.testing.assert_allclose(c, np.tile(a.sum() + a, 4), rtol=1e-5)


def test_fetch_that_misses_part_of_the_tile_reads_uninitialized_shared_memory():
    # 32 threads fetch a 64-element tile with one load each: the upper half is garbage
    h, ks = partial_fetch_kernel()
    findings = check_kernels(h, ks, [rand(128), np.zeros(64, "float32")])
    assert {(f.kind, f.buffer) for f in findings} == {("uninitialized", "tile")}
    first = min(findings, key=lambda f: f.index)
    assert first.index == 32 and first.thread == (16, 0, 0)
    assert "no thread of the block has written" in first.message


# ---------------------------------------------------------------------------
# undefined behaviour refused before running
# ---------------------------------------------------------------------------

def test_barrier_in_thread_dependent_loop_raises():
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A = buf1d("A", 64)
    sh = buf1d("sh", 32, scope="shared")
    i = var("i")
    body = S.Allocate(sh, loop(i, tx, S.seq(store(sh, 1.0, tx), sync())))
    k = kernel("bad_kernel0", [A], body, [(bx, 2), (tx, 32)])
    h, ks = single_launch("bad_kernel0", k, [buf1d("A", 64)])
    with pytest.raises(SimError, match="bad_kernel0.*thread-dependent control flow") as info:
        run_kernels(h, ks, [np.zeros(64, "float32")])
    assert "for (i, 0, threadIdx.x)" in str(info.value)
    with pytest.raises(SimError, match="thread-dependent"):
        check_kernels(h, ks, [np.zeros(64, "float32")])


def test_barrier_under_memory_dependent_branch_raises():
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A = buf1d("A", 64)
    body = S.IfThenElse(A[bx * 32 + tx] > const(0.0, "float32"), sync())
    k = kernel("branch_kernel0", [A], body, [(bx, 2), (tx, 32)])
    h, ks = single_launch("branch_kernel0", k, [buf1d("A", 64)])
    with pytest.raises(SimError, match="reads memory"):
        run_kernels(h, ks, [np.zeros(64, "float32")])


def test_barrier_under_block_uniform_branch():
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B = buf1d("A", 256), buf1d("B", 256)
    sh = buf1d("sh", 64, scope="shared")
    i = bx * 64 + tx
    body = S.Allocate(sh, S.IfThenElse(
        bx < 2,
        S.seq(store(sh, A[i], tx), sync(), store(B, sh[63 - tx], i)),
        store(B, -A[i], i)))
    k = kernel("half_kernel0", [A, B], body, [(bx, 4), (tx, 64)])
    h, ks = single_launch("half_kernel0", k, [buf1d("A", 256), buf1d("B", 256)])
    a, b = rand(256), np.zeros(256, "float32")
    run_kernels(h, ks, [a, b])
    np.testing.assert_array_equal(b[:128], expected_reversal(a)[:128])
    np.testing.assert_array_equal(b[128:], -a[128:])
    assert check_kernels(h, ks, [a, np.zeros(256, "float32")], max_blocks=None) == []


def test_invalid_launch_configuration():
    bx, tx, ty = var("blockIdx.x"), var("threadIdx.x"), var("threadIdx.y")
    A = buf1d("A", 2048)
    k = kernel("big_kernel0", [A], store(A, 1.0, ty * 64 + tx), [(bx, 1), (tx, 64), (ty, 32)])
    h, ks = single_launch("big_kernel0", k, [buf1d("A", 2048)])
    with pytest.raises(KernelError, match="big_kernel0: 2048 threads per block; CUDA allows at most 1024"):
        run_kernels(h, ks, [np.zeros(2048, "float32")])
    k = kernel("wide_kernel0", [A], store(A, 1.0, tx), [(bx, 1), (tx, 2048)])
    h, ks = single_launch("wide_kernel0", k, [buf1d("A", 2048)])
    with pytest.raises(KernelError, match=r"threadIdx.x extent 2048 \(from 2048\) is outside \[1, 1024\]"):
        run_kernels(h, ks, [np.zeros(2048, "float32")])


def test_wrong_arguments():
    h, ks = reversal_kernel(True)
    with pytest.raises(RuntimeArgError, match="must have dtype float32, got float64"):
        run_kernels(h, ks, [np.zeros(256), np.zeros(256, "float32")])
    with pytest.raises(RuntimeArgError, match="shape"):
        run_kernels(h, ks, [np.zeros(255, "float32"), np.zeros(256, "float32")])


# ---------------------------------------------------------------------------
# host plans: two kernels with a workspace; symbolic grid; 2-D blocks
# ---------------------------------------------------------------------------

def test_two_kernels_with_workspace():
    n = 300
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    i = bx * 128 + tx
    A1, W1 = buf1d("A", n), buf1d("W", n)
    k1 = kernel("scale_kernel0", [A1, W1],
                S.IfThenElse(tir.likely(i < n), store(W1, A1[i] * 2.0, i)), [(bx, 3), (tx, 128)])
    bx2, tx2 = var("blockIdx.x"), var("threadIdx.x")
    j = bx2 * 64 + tx2
    W2, B2 = buf1d("W", n), buf1d("B", n)
    k2 = kernel("shift_kernel1", [W2, B2],
                S.IfThenElse(tir.likely(j < n), store(B2, W2[n - 1 - j] + 1.0, j)),
                [(bx2, 5), (tx2, 64)])
    W = buf1d("W", n)

    def body(a, b):
        return S.Allocate(W, S.seq(launch("scale_kernel0", a, W.data),
                                   launch("shift_kernel1", W.data, b)))

    h = host("two", [buf1d("A", n), buf1d("B", n)], body)
    ks = {"scale_kernel0": k1, "shift_kernel1": k2}
    a, b = rand(n), np.zeros(n, "float32")
    run_kernels(h, ks, [a, b])
    np.testing.assert_allclose(b, a[::-1] * 2 + 1)
    b2 = np.zeros(n, "float32")
    assert check_kernels(h, ks, [a, b2]) == []
    assert not b2.any()  # check works on copies


def test_symbolic_grid_from_scalar_param():
    n_k = var("n")
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B = buf1d("A", n_k), buf1d("B", n_k)
    i = bx * 64 + tx
    k = kernel("sq_kernel0", [A, B, n_k],
               S.IfThenElse(tir.likely(i < n_k), store(B, A[i] * A[i], i)),
               [(bx, E.FloorDiv(n_k + 63, const(64))), (tx, 64)])
    n_h = var("n")

    def body(a, b, n):
        return S.AssertStmt(n > 0, "n must be positive", launch("sq_kernel0", a, b, n))

    h = host("sq", [buf1d("A", n_h), buf1d("B", n_h), n_h], body)
    ks = {"sq_kernel0": k}
    for n in (1, 100, 300):
        a, b = rand(n), np.zeros(n, "float32")
        run_kernels(h, ks, [a, b, n])
        np.testing.assert_allclose(b, a * a)
    assert check_kernels(h, ks, [rand(130), np.zeros(130, "float32"), 130]) == []


def test_transpose_with_2d_blocks():
    R, C, t = 32, 48, 8
    bx, by, tx, ty = var("blockIdx.x"), var("blockIdx.y"), var("threadIdx.x"), var("threadIdx.y")
    A, B = buf1d("A", R * C), buf1d("B", R * C)
    tile = buf1d("tile", t * t, scope="shared")
    body = S.Allocate(tile, S.seq(
        store(tile, A[(by * t + ty) * C + bx * t + tx], ty * t + tx),
        sync(),
        store(B, tile[tx * t + ty], (bx * t + ty) * R + by * t + tx),
    ))
    k = kernel("transpose_kernel0", [A, B], body, [(bx, C // t), (by, R // t), (tx, t), (ty, t)])
    h, ks = single_launch("transpose_kernel0", k, [S.decl_buffer((R, C), "float32", "A"),
                                                   S.decl_buffer((C, R), "float32", "B")])
    a, b = rand(R, C), np.zeros((C, R), "float32")
    run_kernels(h, ks, [a, b])
    np.testing.assert_array_equal(b, a.T)
    assert check_kernels(h, ks, [a, np.zeros((C, R), "float32")]) == []


def test_every_thread_copying_the_whole_tile_is_named_as_such():
    # a GEMM whose shared-memory fetch is not bound to threads: every thread copies the
    # whole tile, so each element is written by all of them (not a missing barrier)
    n = 32
    s, args = whole_tile_matmul(n)
    f = tecc.build(s, args, target="cuda -arch=sm_80")
    a, b = rand(n, n), rand(n, n, seed=1)
    findings = f.check(a, b, np.zeros((n, n), "float32"))
    assert [(x.kind, x.buffer) for x in findings] == [("race", "A.shared")]
    assert "written by several threads" in findings[0].message
    assert "bind the copy's loops to threadIdx" in findings[0].message
    assert "missing __syncthreads" not in findings[0].message
    c = np.zeros((n, n), "float32")
    quiet_call(f, a, b, c)  # every thread writes the same values: the result is right, the waste is not
    np.testing.assert_allclose(c, matmul_python(a, b), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------
# warp shuffles: the CPU exchange follows the hardware's warps
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("block, delta", [((64, 1), 16), ((8, 12), 3), ((48, 1), 8)])
def test_cpu_shuffle_follows_warp_lanes(block, delta):
    """Each lane gets the value ``delta`` lanes above it in its own warp (32 linear
    thread numbers), its own value past the warp's end."""
    h, k = shuffle_kernel("int32", block, delta)
    threads = block[0] * block[1]
    a = np.arange(threads, dtype="int32") * 7
    out = np.zeros(threads, "int32")
    run_kernels(h, {k.name: k}, [a, out])
    lane = np.arange(threads) % 32
    src = np.arange(threads) + delta
    ok = (lane + delta < 32) & (src < threads)
    expect = np.where(ok, a[np.minimum(src, threads - 1)], a)
    np.testing.assert_array_equal(out, expect)
    assert check_kernels(h, {k.name: k}, [a, np.zeros(threads, "int32")]) == []


def test_shuffle_must_be_a_let_value():
    tx = var("threadIdx.x")
    dst = buf1d("dst", 32)
    k = kernel("bad_kernel0", [dst], S.BufferStore(dst, warp_shuffle_down(E.Cast("float32", tx), 1) + 1.0, (tx,)),
               [(tx, 32)])
    h, ks = single_launch("bad_kernel0", k, [dst])
    with pytest.raises(SimError, match="whole value of a let"):
        run_kernels(h, ks, [np.zeros(32, "float32")])
