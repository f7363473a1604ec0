"""Shared-memory bank conflicts counted on the CPU (cpu_fallback/bank_conflicts.py):
the wavefront rule on hand-made warps, then whole schedules through
``CUDAModule.shared_memory_report``."""
import numpy as np
import pytest

import tecc
from tecc import te
from tecc.cpu_fallback.gpu_emu import SimError
from tecc.cpu_fallback.gpu_emu.bank_conflicts import wavefronts
from tecc.topi import cuda as K
from irhelpers import add_module

RNG = np.random.default_rng(3)


def words(fn, lanes=32):
    return {lane: set(fn(lane)) for lane in range(lanes)}


def test_wavefront_rule():
    assert wavefronts(words(lambda l: [l]), 4) == (1, 1)              # consecutive floats
    assert wavefronts(words(lambda l: [0]), 4) == (1, 1)              # one word: a broadcast
    assert wavefronts(words(lambda l: [2 * l]), 4) == (2, 1)          # stride 2: 2-way
    assert wavefronts(words(lambda l: [32 * l]), 4) == (32, 1)        # a column: serialized
    assert wavefronts(words(lambda l: [33 * l]), 4) == (1, 1)         # padded column
    # float4: four quarter-warp phases, each 8 lanes x 4 words = all 32 banks once
    assert wavefronts(words(lambda l: range(4 * l, 4 * l + 4)), 16) == (4, 4)
    # float4 with a row stride of 64 words between lanes: lanes of a phase collide
    assert wavefronts(words(lambda l: range(64 * l, 64 * l + 4)), 16) == (32, 4)
    # float2: two half-warp phases
    assert wavefronts(words(lambda l: range(2 * l, 2 * l + 2)), 8) == (2, 2)


def transpose(n=64, pad=False):
    """B = A.T through a 32x32 shared tile, one element per thread (32x32 threads)."""
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[j, i], name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    by, ii = s[B].split(B.op.axis[0], factor=32)
    bx, jj = s[B].split(B.op.axis[1], factor=32)
    s[B].reorder(by, bx, ii, jj)
    s[B].bind(by, te.thread_axis("blockIdx.y"))
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(ii, te.thread_axis("threadIdx.y"))
    s[B].bind(jj, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], bx)
    s[AS].bind(AS.op.axis[0], te.thread_axis("threadIdx.y"))
    s[AS].bind(AS.op.axis[1], te.thread_axis("threadIdx.x"))
    if pad:
        s[AS].storage_align(AS.op.axis[0], 32, 1)
    return tecc.build(s, [A, B], target="cuda -arch=sm_90")


def by_access(report):
    return {(r.buffer, r.access): r for r in report}


def test_transpose_tile_column_read_is_serialized_and_padding_fixes_it():
    a = RNG.standard_normal((64, 64)).astype("float32")
    b = np.zeros((64, 64), "float32")
    plain = by_access(transpose().shared_memory_report(a, b))
    assert plain[("A.shared", "write")].conflict == 1.0        # rows written along the banks
    read = plain[("A.shared", "read")]
    assert read.conflict == 32.0 and read.requests == 32       # 32 warps of one block
    assert "A.shared[" in read.statement
    padded = by_access(transpose(pad=True).shared_memory_report(a, b))
    assert padded[("A.shared", "read")].conflict == 1.0
    assert padded[("A.shared", "write")].conflict == 1.0
    assert not b.any()                                         # the report works on copies


def test_sgemm_tiles_a_kmajor_removes_the_row_fetch_conflict():
    M = N = 128
    Kd = 32
    a = RNG.standard_normal((M, Kd)).astype("float32")
    b = RNG.standard_normal((Kd, N)).astype("float32")
    c = np.zeros((M, N), "float32")
    reports = {}
    for kmajor in (False, True):
        s, args = K.sgemm(M, N, Kd, 64, 4, 8, a_kmajor=kmajor)
        reports[kmajor] = tecc.build(s, args, target="cuda -arch=sm_90").shared_memory_report(a, b, c)
    # [rows][k] tile: each warp spans 4 rows of threadIdx.y, 32 words apart -> 4-way
    rows_major = [r for r in reports[False] if r.buffer == "A.shared" and r.access == "read"]
    assert rows_major and all(r.conflict == 4.0 and r.bytes_per_thread == 4 for r in rows_major)
    # k-major tile: float4 reads along the banks; the strided fill is conflict-free too,
    # thanks to the padded row stride (2-way without it)
    kmajor = [r for r in reports[True] if r.buffer == "A.T"]
    assert all(r.conflict == 1.0 and r.bytes_per_thread == 16 for r in kmajor if r.access == "read")
    (fill,) = [r for r in kmajor if r.access == "write"]
    assert fill.conflict == 1.0 and fill.requests > 0
    # B's tile is conflict-free either way
    assert all(r.conflict == 1.0 for rep in reports.values() for r in rep if r.buffer == "B.shared")


def test_report_refuses_a_kernel_with_problems():
    a = RNG.standard_normal((10, 4)).astype("float32")
    with pytest.raises(SimError, match="out-of-bounds"):
        add_module(guard=False).shared_memory_report(a, a, np.zeros((10, 4), "float32"))
