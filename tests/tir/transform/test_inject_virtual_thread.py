"""The inject_virtual_thread pass (tir/transform/inject_virtual_thread.py): virtual
thread axes become interleaved code (local buffers expanded per virtual thread,
thread-independent code kept once), before/expected IR and serial execution."""
import numpy as np
import pytest

from tecc import tir
from tecc.errors import LoweringError
from tecc.tir import stmt as S
from tecc.tir.analysis import run_prim_func, verify_well_formed
from tecc.tir.stmt import Allocate, BufferStore, For, seq
from tecc.tir.transform import simplify
from tecc.tir.transform.inject_virtual_thread import inject_virtual_thread, is_vthread_loop
from tecc.tir.transform.thread_sync import insert_thread_sync, is_storage_sync
from irhelpers import bind, buf1d, count_syncs, kernel, loop, var

c = tir.const
RNG = np.random.default_rng(0)


def _vthread_func():
    """A block of 4 threads x 2 virtual threads: a shared stage fetched per ``ko`` and a
    local accumulator per virtual thread; each thread reads only what it fetched, so
    running the thread loops serially (the interpreter) is exact."""
    A, B, C = buf1d("A", 24), buf1d("B", 12), buf1d("C", 32)
    AS, CL = buf1d("AS", 8, scope="shared"), buf1d("CL", 2, scope="local")
    bx, vt, tx = var("bx"), var("vt"), var("tx")
    i, j, ko = var("i"), var("j"), var("ko")
    body = Allocate(CL, seq(
        loop(i, 2, BufferStore(CL, c(0.0), (i,))),
        loop(ko, 3, seq(
            loop(j, 2, BufferStore(AS, A[ko * 8 + tx * 2 + j], (tx * 2 + j,))),
            loop(i, 2, BufferStore(CL, CL[i] + AS[tx * 2 + (i + vt) % 2] * B[ko * 4 + vt * 2 + i], (i,))))),
        loop(i, 2, BufferStore(C, CL[i], (bx * 16 + vt * 8 + tx * 2 + i,)))))
    stmt = bind(bx, 2, "blockIdx.x", Allocate(AS, bind(vt, 2, "vthread", bind(tx, 4, "threadIdx.x", body))))
    return kernel("k", [A, B, C], stmt), (A, B, C, AS, CL, bx, tx, i, j, ko)


def _has_vthread(stmt):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if is_vthread_loop(n) else None)
    return bool(found)


def test_vthread_structure():
    f, (A, B, C, AS, CL, bx, tx, i, j, ko) = _vthread_func()
    g = inject_virtual_thread(f)
    CL2 = S.Buffer("CL", "float32", (c(4),), CL.data, "local")

    def acc(k):  # the accumulation of virtual thread k
        return BufferStore(CL2, CL2[i + 2 * k] + AS[tx * 2 + (i + k) % 2] * B[ko * 4 + k * 2 + i], (i + 2 * k,))

    body = Allocate(CL2, seq(
        loop(i, 2, seq(BufferStore(CL2, c(0.0), (i,)), BufferStore(CL2, c(0.0), (i + 2,)))),
        loop(ko, 3, seq(
            loop(j, 2, BufferStore(AS, A[ko * 8 + tx * 2 + j], (tx * 2 + j,))),  # fetched once
            loop(i, 2, seq(acc(0), acc(1))))),
        loop(i, 2, seq(BufferStore(C, CL2[i], (bx * 16 + tx * 2 + i,)),
                       BufferStore(C, CL2[i + 2], (bx * 16 + 8 + tx * 2 + i,))))))
    want = bind(bx, 2, "blockIdx.x", Allocate(AS, bind(tx, 4, "threadIdx.x", body)))
    tir.assert_structural_equal(simplify(g).body, simplify(f.with_body(want)).body)
    verify_well_formed(g, require_flat=True)


def test_vthread_matches_serial_execution():
    f, _ = _vthread_func()
    g = inject_virtual_thread(f)
    assert not _has_vthread(g.body)
    a, b = RNG.random(24, dtype=np.float32), RNG.random(12, dtype=np.float32)
    want, got = np.zeros(32, np.float32), np.zeros(32, np.float32)
    run_prim_func(f, a, b, want)
    run_prim_func(g, a, b, got)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.count_nonzero(want) == 32


def test_vthread_nested_let_and_dependent_control():
    """Two virtual-thread axes, a let computed from one, a loop whose extent depends
    on the other, and a local buffer written only by thread-independent code."""
    A, C = buf1d("A", 16), buf1d("C", 64)
    L, T = buf1d("L", 2, scope="local"), buf1d("T", 1, scope="local")
    vy, vx, i, w = var("vy"), var("vx"), var("i"), var("w")
    body = Allocate(T, Allocate(L, seq(
        BufferStore(T, A[0] + 1.0, (c(0),)),                  # same for every virtual thread
        S.LetStmt(w, vy * 2 + vx, BufferStore(L, A[w] * T[0], (c(0),))),
        BufferStore(L, c(0.0), (c(1),)),
        loop(i, vx + 1, BufferStore(L, L[1] + A[i + 4], (c(1),))),
        BufferStore(C, L[0] + L[1], (vy * 2 + vx,)))))
    f = kernel("k", [A, C], bind(vy, 3, "vthread.y", bind(vx, 2, "vthread.x", body)))
    g = inject_virtual_thread(f)
    assert not _has_vthread(g.body)
    verify_well_formed(g, require_flat=True)
    # T is not expanded, L is expanded for both axes
    sizes = {}
    tir.post_order_visit(g.body, lambda n: sizes.__setitem__(n.buffer.name, n.buffer.shape[0].value)
                         if isinstance(n, Allocate) else None)
    assert sizes == {"T": 1, "L": 12}
    a = RNG.random(16, dtype=np.float32)
    want, got = np.zeros(64, np.float32), np.zeros(64, np.float32)
    run_prim_func(f, a, want)
    run_prim_func(g, a, got)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_vthread_without_dependence_is_hoisted():
    A = buf1d("A", 4)
    vt, i = var("vt"), var("i")
    store = loop(i, 4, BufferStore(A, c(1.0), (i,)))
    f = kernel("k", [A], bind(vt, 4, "vthread", store))
    tir.assert_structural_equal(inject_virtual_thread(f).body, store)
    g = kernel("k", [A], store)
    assert inject_virtual_thread(g) is g


def test_vthread_symbolic_extent_is_an_error():
    A = buf1d("A", 4)
    n, vt = var("n"), var("vt")
    f = kernel("k", [A], bind(vt, n, "vthread", BufferStore(A, c(1.0), (vt,))))
    with pytest.raises(LoweringError, match="vthread.*constant factor"):
        inject_virtual_thread(f)


def test_vthread_then_sync_on_the_gemm_shape():
    """Virtual threads, then barriers: the fetch stays single, barriers around it."""
    f, (A, B, C, AS, CL, bx, tx, i, j, ko) = _vthread_func()
    g = insert_thread_sync(inject_virtual_thread(f))
    loops = []
    tir.post_order_visit(g.body, lambda n: loops.append(n) if isinstance(n, For) and n.loop_var is ko else None)
    (ko_loop,) = loops
    parts = ko_loop.body.seq
    assert [type(p).__name__ for p in parts] == ["For", "Evaluate", "For", "Evaluate"]
    assert is_storage_sync(parts[1]) and is_storage_sync(parts[3])
    assert count_syncs(g.body) == 2
