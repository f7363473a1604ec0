"""The compiled GPU checker (cpu_fallback/gpu_emu/check_codegen.py): each kind of finding
on a hand-made kernel, its agreement with the reference interpreter (the same findings,
messages and order, limits included), the kernels it refuses, and a real-size SGEMM."""

import warnings

import numpy as np
import pytest

import tecc
from tecc.cpu_fallback.check import Finding
from tecc.cpu_fallback.gpu_emu import InterpretedCheckWarning, SimError
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.op import const
from tecc.topi import cuda as topi_cuda
from irhelpers import (  # noqa: F401  (private_cache_dir: an autouse fixture)
    buf1d, copy_into_kernel, cuda_module, kernel, local_out_of_bounds_kernel, loop, matvec_kernel, mirror_kernel,
    off_by_one_kernel, partial_fetch_kernel, private_cache_dir, quiet_call, ramp, reversal_kernel, shuffle_kernel,
    single_launch, store, sync, tree_sum_kernel, var, whole_tile_matmul,
)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def checked(mod, *args, **options):
    """``mod.check(*args)``, after making sure every kernel is checked compiled."""
    findings = mod.check(*args, **options)
    assert mod.checker.interpreted == {}, mod.checker.interpreted
    return findings


def interpreted(mod, *args, **options):
    """The findings of the reference interpreter (the checker before it was compiled)."""
    return mod._check(mod.entry_name, args, dict(options, interpret=True))


def assert_agree(mod, args, **options):
    """The compiled and the interpreted checker give the same findings; those."""
    compiled = checked(mod, *args, **options)
    assert compiled == interpreted(mod, *args, **options)
    return compiled


def one_launch(name, params, body, launch_dims, host_params=None):
    """The module of one kernel over ``params``, launched with the host's own buffers."""
    k = kernel(name, params, body, launch_dims)
    h, ks = single_launch(name, k, host_params or [buf1d(b.name, b.shape[0], b.dtype) for b in params])
    return cuda_module(h, ks)


# ---------------------------------------------------------------------------
# each kind of finding, through the compiled path
# ---------------------------------------------------------------------------

def test_out_of_bounds_read_gives_zero_and_write_is_skipped():
    # before: 64 threads in each of 4 blocks copy A into C and write tile[tx + 1] -- the
    # last thread writes tile[64], the threads past 200 read A and write C out of bounds
    mod = cuda_module(*off_by_one_kernel())
    findings = checked(mod, rand(200), np.zeros(200, "float32"))
    # expected: the first out-of-bounds access of each statement, with its block and thread
    assert findings == [
        Finding("out_of_bounds", "tile", 64,
                "out-of-bounds write of shared buffer 'tile' in kernel 'oob_kernel0', block (0, 0, 0), "
                "thread (63, 0, 0): index 64 is outside [0, 64)",
                "tile[threadIdx.x + 1] = 1f", "oob_kernel0", (0, 0, 0), (63, 0, 0)),
        Finding("out_of_bounds", "A", 200,
                "out-of-bounds read of global buffer 'A' in kernel 'oob_kernel0', block (3, 0, 0), "
                "thread (8, 0, 0): index 200 is outside [0, 200)",
                "A[blockIdx.x*64 + threadIdx.x]", "oob_kernel0", (3, 0, 0), (8, 0, 0)),
        Finding("out_of_bounds", "C", 200,
                "out-of-bounds write of global buffer 'C' in kernel 'oob_kernel0', block (3, 0, 0), "
                "thread (8, 0, 0): index 200 is outside [0, 200)",
                "C[blockIdx.x*64 + threadIdx.x] = A[blockIdx.x*64 + threadIdx.x]", "oob_kernel0",
                (3, 0, 0), (8, 0, 0)),
    ]
    assert "tecc_chk_access" in mod.checker.emulation.checks().source()


def test_shared_race_without_barrier():
    # before: each thread writes sh[tx], then reads sh[63 - tx] with no barrier between
    mod = cuda_module(*reversal_kernel(False))
    findings = checked(mod, rand(256), np.zeros(256, "float32"))
    # expected: the threads run in order, so thread 32 is the first to meet another's access:
    # it writes sh[32], which thread 31 read, then reads sh[31], which thread 31 wrote (the
    # reads of not yet written elements by threads 0-31 are races when written later, not
    # uninitialized reads; the last block repeats the first)
    assert [(f.kind, f.buffer, f.index, f.block, f.thread, f.statement) for f in findings] == [
        ("race", "sh", 32, (0, 0, 0), (32, 0, 0), "sh[threadIdx.x] = A[blockIdx.x*64 + threadIdx.x]"),
        ("race", "sh", 31, (0, 0, 0), (32, 0, 0), "sh[63 - threadIdx.x]"),
    ]
    assert [f.message for f in findings] == [
        "race on shared buffer 'sh' in kernel 'reverse_kernel0', block (0, 0, 0): thread (32, 0, 0) writes "
        "sh[32], which thread (31, 0, 0) read with no barrier in between (missing __syncthreads()?)",
        "race on shared buffer 'sh' in kernel 'reverse_kernel0', block (0, 0, 0): thread (32, 0, 0) reads "
        "sh[31], which thread (31, 0, 0) wrote with no barrier in between (missing __syncthreads()?)",
    ]


def test_global_race_between_blocks():
    # before: every block stores its 32 values into out[tx]: the blocks overwrite each other
    mod = cuda_module(*copy_into_kernel("split_sum_kernel0", 4, 32, lambda bx, tx: tx))
    findings = checked(mod, rand(128), np.zeros(32, "float32"))
    assert [(f.kind, f.buffer, f.index, f.block, f.thread) for f in findings] == [
        ("race", "out", 0, (1, 0, 0), (0, 0, 0))]
    assert findings[0].message == (
        "race on global buffer 'out' in kernel 'split_sum_kernel0': thread (0, 0, 0) of block (1, 0, 0) "
        "writes out[0], which thread (0, 0, 0) of block (0, 0, 0) wrote; the blocks of a launch run in no "
        "fixed order (two blocks touch the same output: a reduction split across blocks, or tiles that "
        "overlap?)")


def test_uninitialized_shared_reads_in_evaluation_order():
    # before: 32 threads fetch a 64-element tile with one load each, then each reads two
    # neighbours: the upper half of the tile was never written
    mod = cuda_module(*partial_fetch_kernel())
    findings = checked(mod, rand(128), np.zeros(64, "float32"))
    # expected: thread 16 reads tile[32] then tile[33] (left operand first), one finding each
    assert [(f.kind, f.index, f.thread, f.statement) for f in findings] == [
        ("uninitialized", 32, (16, 0, 0), "tile[2*threadIdx.x]"),
        ("uninitialized", 33, (16, 0, 0), "tile[2*threadIdx.x + 1]"),
    ]
    assert findings[0].message == (
        "uninitialized read of shared buffer 'tile' in kernel 'pairsum_kernel0', block (0, 0, 0): thread "
        "(16, 0, 0) reads tile[32], which no thread of the block has written (shared memory starts with "
        "garbage: does the cooperative fetch cover the whole tile?)")


def test_the_caller_arrays_are_untouched():
    mod = cuda_module(*reversal_kernel(True))
    a, b = rand(256), np.zeros(256, "float32")
    assert checked(mod, a, b) == []
    assert not b.any()


# ---------------------------------------------------------------------------
# compiled and interpreted checkers agree
# ---------------------------------------------------------------------------

def _reversal(with_barrier):
    return cuda_module(*reversal_kernel(with_barrier)), [rand(256), np.zeros(256, "float32")]


def _tree_sum(with_loop_barrier):
    return cuda_module(*tree_sum_kernel(with_loop_barrier)), [rand(3 * 128), np.zeros(3, "float32")]


def _matvec(second_barrier):
    h, ks, (R, K) = matvec_kernel(second_barrier)
    return cuda_module(h, ks), [rand(R, K), rand(K, seed=2), rand(R, seed=3), np.zeros(R, "float32")]


def _mirror(with_barrier):
    return cuda_module(*mirror_kernel(with_barrier)), [rand(64), np.zeros(64, "float32"), np.zeros(64, "float32")]


def _many_problems():
    """Every kind of finding from several statements: limits and order matter."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B = buf1d("A", 96), buf1d("B", 96)
    sh = buf1d("sh", 48, scope="shared")
    body = S.Allocate(sh, S.seq(
        store(sh, A[bx * 32 + tx], tx),                       # 32 of 48 elements fetched
        store(B, sh[31 - tx] + sh[tx + 16], bx * 32 + tx),    # races (no barrier) and uninitialized reads
        sync(),
        store(sh, A[bx * 32 + tx + 8] * 2.0, tx + 17),        # out of bounds in A (last block) and sh
        store(B, sh[tx * 2] - sh[tx], bx * 32 + tx),          # a race on global B with the first store
    ))
    mod = one_launch("many_kernel0", [A, B], body, [(bx, 3), (tx, 32)])
    return mod, [rand(96), np.zeros(96, "float32")]


def _selects():
    """A ``Select`` evaluates both sides (an out-of-bounds read on its other side is
    one), a scalar ``if_then_else`` one; a vector ``if_then_else`` both."""
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B, C = buf1d("A", 64), buf1d("B", 64), buf1d("C", 64)
    i = bx * 32 + tx
    vec = ramp(bx * 32, 4)
    body = S.seq(
        store(B, E.Select(tx < 30, A[i], A[i + 40]), i),
        store(C, E.Call("float32", "if_then_else", (tx < 30, A[i], A[i + 40])), i),
        S.IfThenElse(E.EQ(tx, const(0)), S.BufferStore(
            C, E.Call("float32x4", "if_then_else", (E.Broadcast(tx < 30, 4), A[ramp(bx * 32 + 61, 4)],
                                                    E.Broadcast(const(0.0, "float32"), 4))), (vec,))))
    mod = one_launch("select_kernel0", [A, B, C], body, [(bx, 2), (tx, 32)])
    return mod, [rand(64), np.zeros(64, "float32"), np.zeros(64, "float32")]


def _data_dependent():
    """A loop whose extent is loaded (evaluated once, before the loop) and a vector
    load gathering through loaded indices; both go out of bounds for some threads."""
    bx, tx, j = var("blockIdx.x"), var("threadIdx.x"), var("j")
    A, cnt, idx = buf1d("A", 128), buf1d("cnt", 64, "int32"), buf1d("idx", 64, "int32")
    B, C = buf1d("B", 64), buf1d("C", 64)
    acc = buf1d("acc", 1, scope="local")
    i = bx * 32 + tx
    lanes = ramp(bx * 32, 4)
    body = S.Allocate(acc, S.seq(
        store(acc, 0.0, 0),
        loop(j, cnt[i], store(acc, acc[0] + A[i * 2 + j], 0)),
        store(B, acc[0], i),
        S.IfThenElse(E.EQ(tx, const(0)), S.BufferStore(C, A[idx[lanes]], (lanes,)))))
    mod = one_launch("gather_kernel0", [A, cnt, idx, B, C], body, [(bx, 2), (tx, 32)])
    counts = (np.arange(64) % 5).astype("int32")        # thread 63 reads A[126 + 4]
    indices = (np.arange(64) * 2).astype("int32")
    indices[35] = 200                                   # lane 3 of block 1's gather
    return mod, [rand(128), counts, indices, np.zeros(64, "float32"), np.zeros(64, "float32")]


def _whole_tile_per_thread():
    n = 32
    mod = tecc.build(*whole_tile_matmul(n), target="cuda -arch=sm_80")
    return mod, [rand(n, n), rand(n, n, seed=1), np.zeros((n, n), "float32")]


def _sgemm(double_buffer):
    """topi's SGEMM: shared tiles fetched with float4s, 2x2 virtual threads of 2x2
    register tiles; with ``double_buffer``, two slots and a k-major A tile."""
    n = 32
    s, args = topi_cuda.sgemm(n, n, n, block=16, thread_tile=2, k_tile=4, double_buffer=double_buffer,
                              a_kmajor=double_buffer)
    mod = tecc.build(s, args, target="cuda -arch=sm_80")
    return mod, [rand(n, n), rand(n, n, seed=1), np.zeros((n, n), "float32")]


def _shuffle():
    h, k = shuffle_kernel("int32", (8, 12), 3)
    return cuda_module(h, {k.name: k}), [np.arange(96, dtype="int32"), np.zeros(96, "int32")]


KERNELS = {
    "reversal": lambda: _reversal(True),
    "reversal_race": lambda: _reversal(False),
    "tree_sum": lambda: _tree_sum(True),
    "tree_sum_race": lambda: _tree_sum(False),
    "matvec": lambda: _matvec(True),
    "matvec_race": lambda: _matvec(False),
    "off_by_one": lambda: (cuda_module(*off_by_one_kernel()), [rand(200), np.zeros(200, "float32")]),
    "partial_fetch": lambda: (cuda_module(*partial_fetch_kernel()), [rand(128), np.zeros(64, "float32")]),
    "local_out_of_bounds": lambda: (cuda_module(*local_out_of_bounds_kernel()), [np.zeros(64, "float32")]),
    "mirror": lambda: _mirror(True),
    "mirror_race": lambda: _mirror(False),
    "split_sum": lambda: (cuda_module(*copy_into_kernel("split_sum_kernel0", 4, 32, lambda bx, tx: tx)),
                          [rand(128), np.zeros(32, "float32")]),
    "last_wins": lambda: (cuda_module(*copy_into_kernel("last_wins_kernel0", 2, 2, lambda bx, tx: bx)),
                          [rand(64), np.zeros(2, "float32")]),
    "many_problems": _many_problems,
    "selects": _selects,
    "data_dependent": _data_dependent,
    "whole_tile_per_thread": _whole_tile_per_thread,
    "sgemm": lambda: _sgemm(False),
    "sgemm_double_buffer": lambda: _sgemm(True),
    "warp_shuffle": _shuffle,
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_compiled_and_interpreted_checkers_agree(name):
    mod, args = KERNELS[name]()
    clean = {"reversal", "tree_sum", "matvec", "mirror", "sgemm", "sgemm_double_buffer", "warp_shuffle"}
    for options in ({}, {"max_blocks": None}, {"max_findings": 1}, {"max_findings": 2, "max_blocks": 2}):
        findings = assert_agree(mod, args, **options)
        assert (findings == []) == (name in clean), (name, options, findings)


def test_many_problems_stop_at_the_limit():
    mod, args = _many_problems()
    everything = assert_agree(mod, args, max_blocks=None, max_findings=100)
    assert {f.kind for f in everything} == {"race", "out_of_bounds", "uninitialized"}
    limited = assert_agree(mod, args, max_blocks=None, max_findings=1)
    assert sorted(f.kind for f in limited) == ["out_of_bounds", "race", "uninitialized"]
    assert all(f in everything for f in limited)


def test_correct_sgemm_with_virtual_threads_is_clean_in_every_block():
    s, args = topi_cuda.sgemm(32, 32, 32, block=16, thread_tile=2, k_tile=4, double_buffer=True, a_kmajor=True)
    tags = {attr.bind_thread.thread_tag for stage in s.stages for attr in stage.iter_var_attrs.values()
            if getattr(attr, "bind_thread", None) is not None}
    assert {"vthread", "threadIdx.x", "blockIdx.x"} <= tags
    mod = tecc.build(s, args, target="cuda -arch=sm_80")
    a, b = rand(32, 32), rand(32, 32, seed=1)
    assert checked(mod, a, b, np.zeros((32, 32), "float32"), max_blocks=None) == []


# ---------------------------------------------------------------------------
# failures inside a kernel, refused kernels
# ---------------------------------------------------------------------------

def test_failed_assertion_names_block_and_thread_as_the_interpreter():
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A = buf1d("A", 64)
    body = S.AssertStmt(bx * 32 + tx < 40, "index past the data", store(A, 1.0, bx * 32 + tx))
    mod = one_launch("assert_kernel0", [A], body, [(bx, 2), (tx, 32)])
    messages = []
    for check in (checked, interpreted):
        with pytest.raises(SimError) as info:
            check(mod, np.zeros(64, "float32"))
        messages.append(str(info.value))
    assert messages[0] == messages[1] == ("kernel assert_kernel0: assertion failed in block (1, 0, 0), thread "
                                          "(8, 0, 0): index past the data")


def test_kernel_reading_a_buffer_as_another_type_is_interpreted_with_a_warning():
    # B's bits = A's bits, through int32 views of the float32 parameters
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    A, B = buf1d("A", 64), buf1d("B", 64)
    A_bits = S.Buffer("A_bits", "int32", (64,), A.data)
    B_bits = S.Buffer("B_bits", "int32", (64,), B.data)
    i = bx * 32 + tx
    mod = one_launch("bits_kernel0", [A, B], store(B_bits, A_bits[i], i), [(bx, 2), (tx, 32)])
    a = rand(64)
    with pytest.warns(InterpretedCheckWarning, match="bits_kernel0: it accesses buffer 'B_bits' as int32 elements"):
        assert mod.check(a, np.zeros(64, "float32")) == []
    assert list(mod.checker.interpreted) == ["bits_kernel0"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", InterpretedCheckWarning)  # warned once per kernel
        assert mod.check(a, np.zeros(64, "float32")) == []
    b = np.zeros(64, "float32")
    quiet_call(mod, a, b)
    np.testing.assert_array_equal(b.view("int32"), a.view("int32"))


# ---------------------------------------------------------------------------
# a real-size kernel
# ---------------------------------------------------------------------------

def test_512_cubed_sgemm_checks_compiled():
    # three blocks of 8 x 8 = 64 threads over K = 512 (the interpreter took about ten
    # seconds per block of a 64^3 product; see the report of the change for times)
    n = 512
    s, args = topi_cuda.sgemm(n, n, n, block=64, thread_tile=4, k_tile=8, double_buffer=True, a_kmajor=True)
    mod = tecc.build(s, args, target="cuda -arch=sm_80")
    a, b = rand(n, n), rand(n, n, seed=1)
    assert checked(mod, a, b, np.zeros((n, n), "float32")) == []
