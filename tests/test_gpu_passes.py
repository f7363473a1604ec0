"""Per-pass tests of the GPU passes: barrier insertion, virtual-thread injection and
GPU verification (before/expected IR, interpreter equivalence, one test per error)."""
import numpy as np
import pytest

from tecc import tir
from tecc.errors import LoweringError, TargetError, VerifyError
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, AttrStmt, BufferStore, For, ForKind, IfThenElse, PrimFunc, seq
from tecc.tir.analysis import run_prim_func, verify_well_formed
from tecc.tir.transform import simplify
from tecc.tir.transform.inject_virtual_thread import inject_virtual_thread, is_vthread_loop
from tecc.tir.transform.thread_sync import (
    insert_thread_sync, insert_thread_sync_stmt, is_storage_sync, storage_sync,
)
from tecc.tir.analysis.verify_gpu import GPULimits, gpu_limits, verify_gpu

c = tir.const
RNG = np.random.default_rng(0)


def v(name, dtype="int32"):
    return tir.Var(name, dtype)


def loop(var, extent, body, kind=ForKind.SERIAL):
    return For(var, c(0), tir.convert(extent), kind, body)


def buf(name, size, dtype="float32", scope="global"):
    return tir.decl_buffer((size,), dtype, name, scope)


def thread_iv(tag, extent):
    return E.IterVar(E.Range(c(0), tir.convert(extent)), v(tag), E.IterVarType.THREAD_INDEX, tag)


def launch(iv, body):
    """A ``thread_extent`` attribute of the kernel contract."""
    return AttrStmt(iv, "thread_extent", iv.dom.extent, body)


def bind(var, extent, tag, body):
    """A loop bound to a thread axis, as lowering emits before host/device splitting."""
    return For(var, c(0), tir.convert(extent), ForKind.THREAD_BINDING, body, thread_iv(tag, extent))


def kernel(buffers, body, name="k", attrs=None):
    params = tuple(b.data for b in buffers)
    all_attrs = {"global_symbol": name, "tecc.kernel": True}
    all_attrs.update(attrs or {})
    return PrimFunc(params, body, {b.data: b for b in buffers}, all_attrs)


SYNC = storage_sync()


def count_syncs(stmt):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if is_storage_sync(n) else None)
    return len(found)


# ----------------------------------------------------------------------------
# thread_sync
# ----------------------------------------------------------------------------

def _gemm_like(with_syncs):
    """``for ko { fetch AS; [sync]; read AS; [sync] }`` inside a 16-thread block."""
    A, B, C = buf("A", 256), buf("B", 64), buf("C", 32)
    AS, CL = buf("AS", 64, scope="shared"), buf("CL", 1, scope="local")
    bx, tx = thread_iv("blockIdx.x", 2), thread_iv("threadIdx.x", 16)
    ko, ax, k = v("ko"), v("ax"), v("k")
    fetch = loop(ax, 4, BufferStore(AS, A[ko * 64 + ax * 16 + tx.var], (ax * 16 + tx.var,)))
    compute = loop(k, 16, BufferStore(CL, CL[0] + AS[k * 4 + tx.var % 4] * B[k * 4 + ko], (c(0),)))
    body = seq(fetch, SYNC, compute, SYNC) if with_syncs else seq(fetch, compute)
    stmt = launch(bx, launch(tx, Allocate(AS, Allocate(CL, seq(
        BufferStore(CL, c(0.0), (c(0),)),
        loop(ko, 4, body),
        BufferStore(C, CL[0], (bx.var * 16 + tx.var,)))))))
    return kernel([A, B, C], stmt)


def test_sync_tiled_gemm_loop():
    f = _gemm_like(with_syncs=False)
    g = insert_thread_sync(f)
    tir.assert_structural_equal(g, _gemm_like(with_syncs=True))
    verify_well_formed(g, require_flat=True)
    # running it again changes nothing
    assert insert_thread_sync(g) is g


def test_sync_raw_straight_line_and_no_barrier_at_end():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t = tx.var
    store_as = BufferStore(AS, A[t] * 2.0, (t,))
    read_as = BufferStore(B, AS[15 - t], (t,))
    f = kernel([A, B], launch(tx, Allocate(AS, seq(store_as, read_as))))
    g = insert_thread_sync(f)
    want = launch(tx, Allocate(AS, seq(store_as, SYNC, read_as)))
    tir.assert_structural_equal(g.body, want)


def test_sync_war_straight_line():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t = tx.var
    first = BufferStore(AS, A[t], (t,))
    read = BufferStore(B, AS[15 - t], (t,))
    overwrite = BufferStore(AS, A[t] + 1.0, (t,))
    read_again = BufferStore(B, B[t] + AS[(t + 1) % 16], (t,))
    f = kernel([A, B], launch(tx, Allocate(AS, seq(first, read, overwrite, read_again))))
    g = insert_thread_sync(f)
    want = launch(tx, Allocate(AS, seq(first, SYNC, read, SYNC, overwrite, SYNC, read_again)))
    tir.assert_structural_equal(g.body, want)


def test_sync_hoisted_out_of_thread_dependent_if():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t = tx.var
    write = BufferStore(AS, A[t], (t,))
    guarded = IfThenElse(t < 8, seq(BufferStore(B, c(0.0), (t,)), BufferStore(B, AS[t + 8], (t,))))
    f = kernel([A, B], launch(tx, Allocate(AS, seq(write, guarded))))
    g = insert_thread_sync(f)
    # the barrier goes before the divergent if, not before the read inside it
    want = launch(tx, Allocate(AS, seq(write, SYNC, guarded)))
    tir.assert_structural_equal(g.body, want)


def test_sync_inside_uniform_if_but_not_inside_divergent_code():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    bx, tx = thread_iv("blockIdx.x", 4), thread_iv("threadIdx.x", 16)
    t = tx.var
    write, read = BufferStore(AS, A[t], (t,)), BufferStore(B, AS[15 - t], (t,))
    # a condition on blockIdx is the same for every thread of a block: a barrier may go inside
    uniform = IfThenElse(bx.var < 2, seq(write, read))
    f = kernel([A, B], launch(bx, launch(tx, Allocate(AS, uniform))))
    g = insert_thread_sync(f)
    want = launch(bx, launch(tx, Allocate(AS, IfThenElse(bx.var < 2, seq(write, SYNC, read)))))
    tir.assert_structural_equal(g.body, want)
    # a thread-dependent condition, a loop with a thread-dependent extent, and a let
    # derived from the thread index: no barrier inside any of them
    i, w = v("i"), v("w")
    divergent = [
        IfThenElse(t < 8, seq(write, read)),
        loop(i, t + 1, seq(write, read)),
        S.LetStmt(w, t * 2, IfThenElse(w < 8, seq(write, read))),
    ]
    for stmt in divergent:
        f = kernel([A, B], launch(tx, Allocate(AS, stmt)))
        assert insert_thread_sync(f) is f


def test_no_sync_for_local_or_global_only_code():
    A, B = buf("A", 16), buf("B", 16)
    L = buf("L", 4, scope="local")
    tx = thread_iv("threadIdx.x", 16)
    t, i = tx.var, v("i")
    body = launch(tx, Allocate(L, seq(
        loop(i, 4, BufferStore(L, A[(t + i) % 16], (i,))),
        loop(i, 4, BufferStore(B, L[3 - i], (t,))),
        BufferStore(A, B[15 - t], (t,)))))
    f = kernel([A, B], body)
    assert insert_thread_sync(f) is f


def test_sync_write_only_loop_and_loop_carried_raw():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t, i = tx.var, v("i")
    # writes only: no hazard (write after write is not a barrier's business)
    fill = loop(i, 4, BufferStore(AS, A[t], (t,)))
    f = kernel([A, B], launch(tx, Allocate(AS, fill)))
    assert insert_thread_sync(f) is f
    # read, then write in each iteration: WAR inside the body, RAW into the next iteration
    read, write = BufferStore(B, AS[15 - t], (t,)), BufferStore(AS, B[t], (t,))
    body = insert_thread_sync_stmt(launch(tx, Allocate(AS, loop(i, 4, seq(read, write)))))
    tir.assert_structural_equal(body, launch(tx, Allocate(AS, loop(i, 4, seq(read, SYNC, write, SYNC)))))
    # a single-trip loop carries nothing
    body = insert_thread_sync_stmt(launch(tx, Allocate(AS, loop(i, 1, seq(read, write)))))
    tir.assert_structural_equal(body, launch(tx, Allocate(AS, loop(i, 1, seq(read, SYNC, write)))))


def test_sync_hazard_before_a_loop_goes_before_the_loop():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t, i = tx.var, v("i")
    write = BufferStore(AS, A[t], (t,))
    reads = loop(i, 4, BufferStore(B, B[t] + AS[(t + i) % 16], (t,)))
    f = kernel([A, B], launch(tx, Allocate(AS, seq(write, reads))))
    want = launch(tx, Allocate(AS, seq(write, SYNC, reads)))
    tir.assert_structural_equal(insert_thread_sync(f).body, want)


def test_sync_between_a_let_value_or_condition_and_its_body():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    bx, tx = thread_iv("blockIdx.x", 4), thread_iv("threadIdx.x", 16)
    t, x = tx.var, v("x", "float32")
    # every thread reads AS[0] for the let, then some thread overwrites it: WAR
    write = BufferStore(AS, A[t] + x, (t,))
    f = kernel([A, B], launch(tx, Allocate(AS, S.LetStmt(x, AS[0], write))))
    want = launch(tx, Allocate(AS, S.LetStmt(x, AS[0], seq(SYNC, write))))
    tir.assert_structural_equal(insert_thread_sync(f).body, want)
    # a uniform condition reading shared memory, then a write inside the branch
    cond = tir.all(bx.var < 2, AS[0] > 0.0)
    f = kernel([A, B], launch(bx, launch(tx, Allocate(AS, IfThenElse(cond, write)))))
    want = launch(bx, launch(tx, Allocate(AS, IfThenElse(cond, seq(SYNC, write)))))
    tir.assert_structural_equal(insert_thread_sync(f).body, want)


def test_sync_stmt_with_outer_thread_vars():
    A, B = buf("A", 16), buf("B", 16)
    AS = buf("AS", 16, scope="shared")
    t = v("tid")  # not named threadIdx.*: the caller says it is a thread index
    write, read = BufferStore(AS, A[t], (t,)), BufferStore(B, AS[15 - t], (t,))
    stmt = IfThenElse(t < 8, seq(write, read))
    assert insert_thread_sync_stmt(stmt, thread_vars=[t]) is stmt
    tir.assert_structural_equal(insert_thread_sync_stmt(stmt), IfThenElse(t < 8, seq(write, SYNC, read)))


# ----------------------------------------------------------------------------
# inject_virtual_thread
# ----------------------------------------------------------------------------

def _vthread_func():
    """A block of 4 threads x 2 virtual threads: a shared stage fetched per ``ko`` and a
    local accumulator per virtual thread; each thread reads only what it fetched, so
    running the thread loops serially (the interpreter) is exact."""
    A, B, C = buf("A", 24), buf("B", 12), buf("C", 32)
    AS, CL = buf("AS", 8, scope="shared"), buf("CL", 2, scope="local")
    bx, vt, tx = v("bx"), v("vt"), v("tx")
    i, j, ko = v("i"), v("j"), v("ko")
    body = Allocate(CL, seq(
        loop(i, 2, BufferStore(CL, c(0.0), (i,))),
        loop(ko, 3, seq(
            loop(j, 2, BufferStore(AS, A[ko * 8 + tx * 2 + j], (tx * 2 + j,))),
            loop(i, 2, BufferStore(CL, CL[i] + AS[tx * 2 + (i + vt) % 2] * B[ko * 4 + vt * 2 + i], (i,))))),
        loop(i, 2, BufferStore(C, CL[i], (bx * 16 + vt * 8 + tx * 2 + i,)))))
    stmt = bind(bx, 2, "blockIdx.x", Allocate(AS, bind(vt, 2, "vthread", bind(tx, 4, "threadIdx.x", body))))
    return kernel([A, B, C], stmt), (A, B, C, AS, CL, bx, tx, i, j, ko)


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


def _has_vthread(stmt):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if is_vthread_loop(n) else None)
    return bool(found)


def test_vthread_nested_let_and_dependent_control():
    """Two virtual-thread axes, a let computed from one, a loop whose extent depends
    on the other, and a local buffer written only by thread-independent code."""
    A, C = buf("A", 16), buf("C", 64)
    L, T = buf("L", 2, scope="local"), buf("T", 1, scope="local")
    vy, vx, i, w = v("vy"), v("vx"), v("i"), v("w")
    body = Allocate(T, Allocate(L, seq(
        BufferStore(T, A[0] + 1.0, (c(0),)),                  # same for every virtual thread
        S.LetStmt(w, vy * 2 + vx, BufferStore(L, A[w] * T[0], (c(0),))),
        BufferStore(L, c(0.0), (c(1),)),
        loop(i, vx + 1, BufferStore(L, L[1] + A[i + 4], (c(1),))),
        BufferStore(C, L[0] + L[1], (vy * 2 + vx,)))))
    f = kernel([A, C], bind(vy, 3, "vthread.y", bind(vx, 2, "vthread.x", body)))
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
    A = buf("A", 4)
    vt, i = v("vt"), v("i")
    store = loop(i, 4, BufferStore(A, c(1.0), (i,)))
    f = kernel([A], bind(vt, 4, "vthread", store))
    tir.assert_structural_equal(inject_virtual_thread(f).body, store)
    g = kernel([A], store)
    assert inject_virtual_thread(g) is g


def test_vthread_symbolic_extent_is_an_error():
    A = buf("A", 4)
    n, vt = v("n"), v("vt")
    f = kernel([A], bind(vt, n, "vthread", BufferStore(A, c(1.0), (vt,))))
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


# ----------------------------------------------------------------------------
# verify_gpu
# ----------------------------------------------------------------------------

def _kernel_with(tags, shared=(), local=(), name="mm_kernel0"):
    """A kernel launching ``tags`` ({tag: extent}) with the given allocations."""
    A = buf("A", 16)
    allocs = [buf(n, size, dt, "shared") for n, size, dt in shared]
    allocs += [buf(n, size, dt, "local") for n, size, dt in local]
    body = BufferStore(A, c(1.0), (c(0),))
    for b in reversed(allocs):
        body = Allocate(b, body)
    order = sorted(tags, key=lambda t: (not t.startswith("blockIdx"), t))
    for tag in reversed(order):
        body = launch(thread_iv(tag, tags[tag]), body)
    return kernel([A], body, name=name)


def test_verify_gpu_accepts_a_reasonable_kernel():
    f = _kernel_with({"blockIdx.x": 100, "threadIdx.x": 16, "threadIdx.y": 16},
                     shared=[("A.shared", 64 * 16, "float32"), ("B.shared", 16 * 64, "float32")],
                     local=[("C.local", 16, "float32")])
    verify_gpu(f)
    verify_gpu(f, **gpu_limits("sm_80").verify_kwargs())
    # 64 KiB of shared memory needs the opt-in, which every listed GPU has
    big = _kernel_with({"threadIdx.x": 128}, shared=[("A.shared", 16 * 1024, "float32")])
    verify_gpu(big, **gpu_limits("sm_86").verify_kwargs())


def test_verify_gpu_threads_per_block():
    f = _kernel_with({"blockIdx.x": 4, "threadIdx.x": 64, "threadIdx.y": 32})
    with pytest.raises(VerifyError, match=r"'mm_kernel0' \(computing A\) uses 2048 threads per block.*threadIdx.x=64"):
        verify_gpu(f)


def test_verify_gpu_single_thread_extent():
    f = _kernel_with({"threadIdx.x": 2, "threadIdx.z": 128})
    with pytest.raises(VerifyError, match=r"'mm_kernel0' \(computing A\): threadIdx.z has extent 128, over the limit of 64"):
        verify_gpu(f)


def test_verify_gpu_grid_extent():
    f = _kernel_with({"blockIdx.y": 70000, "threadIdx.x": 32})
    with pytest.raises(VerifyError, match=r"blockIdx.y has extent 70000, over the limit of 65535"):
        verify_gpu(f)


def test_verify_gpu_shared_memory():
    f = _kernel_with({"threadIdx.x": 256}, shared=[("A.shared", 16 * 1024, "float32"),
                                                    ("B.shared", 10 * 1024, "float32")])
    verify_gpu(f, **gpu_limits("sm_90").verify_kwargs())  # 104 KiB fits sm_90
    with pytest.raises(VerifyError, match=r"'mm_kernel0' \(computing A\) uses 104 KiB of shared memory per block "
                                          r"\(A.shared 64 KiB, B.shared 40 KiB\), over the limit of 99 KiB of sm_86"):
        verify_gpu(f, **gpu_limits("sm_86").verify_kwargs())


def test_verify_gpu_no_thread_binding():
    f = _kernel_with({})
    with pytest.raises(VerifyError, match=r"'mm_kernel0' \(computing A\) binds no axis to a GPU thread index"):
        verify_gpu(f)


def test_verify_gpu_local_memory():
    f = _kernel_with({"threadIdx.x": 32}, local=[("C.local", 32 * 1024, "float32")])
    with pytest.raises(VerifyError, match=r"128 KiB of local memory per thread \(C.local 128 KiB\)"):
        verify_gpu(f)


@pytest.mark.parametrize("scope", ["shared", "local"])
def test_verify_gpu_symbolic_allocation_size(scope):
    n = v("n")
    A, T = buf("A", 16), buf(f"A.{scope}", n, scope=scope)
    tx = thread_iv("threadIdx.x", 32)
    f = kernel([A], launch(tx, Allocate(T, BufferStore(A, c(1.0), (c(0),)))), name="kern")
    with pytest.raises(VerifyError, match=rf"'kern' \(computing A\): the {scope} buffer 'A.{scope}' has the non-constant size n"):
        verify_gpu(f)


def test_verify_gpu_before_splitting_uses_thread_loops():
    A = buf("A", 16)
    tx, ty = v("tx"), v("ty")
    body = bind(ty, 64, "threadIdx.y", bind(tx, 32, "threadIdx.x", BufferStore(A, c(1.0), (c(0),))))
    with pytest.raises(VerifyError, match="2048 threads per block"):
        verify_gpu(kernel([A], body))


def test_verify_gpu_symbolic_thread_extent_is_not_checked():
    n = v("n")
    A = buf("A", 16)
    tx = thread_iv("threadIdx.x", n)
    f = kernel([A], launch(tx, BufferStore(A, c(1.0), (c(0),))))
    verify_gpu(f)


def test_gpu_limits():
    assert gpu_limits("sm_80").max_shared_bytes_optin == 163 * 1024
    assert gpu_limits("sm_86").max_shared_bytes_optin == 99 * 1024
    assert gpu_limits("sm_89").max_shared_bytes_optin == 99 * 1024
    assert gpu_limits("sm_90a").max_shared_bytes_optin == 227 * 1024
    assert gpu_limits(80) == gpu_limits("8.0") == gpu_limits("sm_80")
    lim = gpu_limits("sm_90")
    assert isinstance(lim, GPULimits) and lim.max_threads_per_block == 1024 and lim.max_thread_z == 64
    with pytest.raises(TargetError, match="unknown GPU architecture 'sm_42'"):
        gpu_limits("sm_42")
