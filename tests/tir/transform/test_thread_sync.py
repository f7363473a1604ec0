"""The thread_sync pass (tir/transform/thread_sync.py): barriers where the threads of
a block exchange data through shared memory -- RAW and WAR hazards in straight-line
code and across loop iterations, none inside divergent code, one per iteration for
double-buffer writes (before/expected IR)."""
from tecc import tir
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, BufferStore, IfThenElse, seq
from tecc.tir.transform.thread_sync import insert_thread_sync, insert_thread_sync_stmt, storage_sync
from irhelpers import buf1d, count_syncs, db_write, find_loop, kernel, loop, thread_extent, thread_iv, var

c = tir.const
SYNC = storage_sync()


# ----------------------------------------------------------------------------
# hazards through shared memory
# ----------------------------------------------------------------------------

def _gemm_like(with_syncs):
    """``for ko { fetch AS; [sync]; read AS; [sync] }`` inside a 16-thread block."""
    A, B, C = buf1d("A", 256), buf1d("B", 64), buf1d("C", 32)
    AS, CL = buf1d("AS", 64, scope="shared"), buf1d("CL", 1, scope="local")
    bx, tx = thread_iv("blockIdx.x", 2), thread_iv("threadIdx.x", 16)
    ko, ax, k = var("ko"), var("ax"), var("k")
    fetch = loop(ax, 4, BufferStore(AS, A[ko * 64 + ax * 16 + tx.var], (ax * 16 + tx.var,)))
    compute = loop(k, 16, BufferStore(CL, CL[0] + AS[k * 4 + tx.var % 4] * B[k * 4 + ko], (c(0),)))
    body = seq(fetch, SYNC, compute, SYNC) if with_syncs else seq(fetch, compute)
    stmt = thread_extent(bx, thread_extent(tx, Allocate(AS, Allocate(CL, seq(
        BufferStore(CL, c(0.0), (c(0),)),
        loop(ko, 4, body),
        BufferStore(C, CL[0], (bx.var * 16 + tx.var,)))))))
    return kernel("k", [A, B, C], stmt)


def test_sync_tiled_gemm_loop():
    f = _gemm_like(with_syncs=False)
    g = insert_thread_sync(f)
    tir.assert_structural_equal(g, _gemm_like(with_syncs=True))
    tir.analysis.verify_well_formed(g, require_flat=True)
    # running it again changes nothing
    assert insert_thread_sync(g) is g


def test_sync_raw_straight_line_and_no_barrier_at_end():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t = tx.var
    store_as = BufferStore(AS, A[t] * 2.0, (t,))
    read_as = BufferStore(B, AS[15 - t], (t,))
    f = kernel("k", [A, B], thread_extent(tx, Allocate(AS, seq(store_as, read_as))))
    g = insert_thread_sync(f)
    want = thread_extent(tx, Allocate(AS, seq(store_as, SYNC, read_as)))
    tir.assert_structural_equal(g.body, want)


def test_sync_war_straight_line():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t = tx.var
    first = BufferStore(AS, A[t], (t,))
    read = BufferStore(B, AS[15 - t], (t,))
    overwrite = BufferStore(AS, A[t] + 1.0, (t,))
    read_again = BufferStore(B, B[t] + AS[(t + 1) % 16], (t,))
    f = kernel("k", [A, B], thread_extent(tx, Allocate(AS, seq(first, read, overwrite, read_again))))
    g = insert_thread_sync(f)
    want = thread_extent(tx, Allocate(AS, seq(first, SYNC, read, SYNC, overwrite, SYNC, read_again)))
    tir.assert_structural_equal(g.body, want)


def test_sync_hoisted_out_of_thread_dependent_if():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t = tx.var
    write = BufferStore(AS, A[t], (t,))
    guarded = IfThenElse(t < 8, seq(BufferStore(B, c(0.0), (t,)), BufferStore(B, AS[t + 8], (t,))))
    f = kernel("k", [A, B], thread_extent(tx, Allocate(AS, seq(write, guarded))))
    g = insert_thread_sync(f)
    # the barrier goes before the divergent if, not before the read inside it
    want = thread_extent(tx, Allocate(AS, seq(write, SYNC, guarded)))
    tir.assert_structural_equal(g.body, want)


def test_sync_inside_uniform_if_but_not_inside_divergent_code():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    bx, tx = thread_iv("blockIdx.x", 4), thread_iv("threadIdx.x", 16)
    t = tx.var
    write, read = BufferStore(AS, A[t], (t,)), BufferStore(B, AS[15 - t], (t,))
    # a condition on blockIdx is the same for every thread of a block: a barrier may go inside
    uniform = IfThenElse(bx.var < 2, seq(write, read))
    f = kernel("k", [A, B], thread_extent(bx, thread_extent(tx, Allocate(AS, uniform))))
    g = insert_thread_sync(f)
    want = thread_extent(bx, thread_extent(tx, Allocate(AS, IfThenElse(bx.var < 2, seq(write, SYNC, read)))))
    tir.assert_structural_equal(g.body, want)
    # a thread-dependent condition, a loop with a thread-dependent extent, and a let
    # derived from the thread index: no barrier inside any of them
    i, w = var("i"), var("w")
    divergent = [
        IfThenElse(t < 8, seq(write, read)),
        loop(i, t + 1, seq(write, read)),
        S.LetStmt(w, t * 2, IfThenElse(w < 8, seq(write, read))),
    ]
    for stmt in divergent:
        f = kernel("k", [A, B], thread_extent(tx, Allocate(AS, stmt)))
        assert insert_thread_sync(f) is f


def test_no_sync_for_local_or_global_only_code():
    A, B = buf1d("A", 16), buf1d("B", 16)
    L = buf1d("L", 4, scope="local")
    tx = thread_iv("threadIdx.x", 16)
    t, i = tx.var, var("i")
    body = thread_extent(tx, Allocate(L, seq(
        loop(i, 4, BufferStore(L, A[(t + i) % 16], (i,))),
        loop(i, 4, BufferStore(B, L[3 - i], (t,))),
        BufferStore(A, B[15 - t], (t,)))))
    f = kernel("k", [A, B], body)
    assert insert_thread_sync(f) is f


def test_sync_write_only_loop_and_loop_carried_raw():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t, i = tx.var, var("i")
    # writes only: no hazard (write after write is not a barrier's business)
    fill = loop(i, 4, BufferStore(AS, A[t], (t,)))
    f = kernel("k", [A, B], thread_extent(tx, Allocate(AS, fill)))
    assert insert_thread_sync(f) is f
    # read, then write in each iteration: WAR inside the body, RAW into the next iteration
    read, write = BufferStore(B, AS[15 - t], (t,)), BufferStore(AS, B[t], (t,))
    body = insert_thread_sync_stmt(thread_extent(tx, Allocate(AS, loop(i, 4, seq(read, write)))))
    tir.assert_structural_equal(body, thread_extent(tx, Allocate(AS, loop(i, 4, seq(read, SYNC, write, SYNC)))))
    # a single-trip loop carries nothing
    body = insert_thread_sync_stmt(thread_extent(tx, Allocate(AS, loop(i, 1, seq(read, write)))))
    tir.assert_structural_equal(body, thread_extent(tx, Allocate(AS, loop(i, 1, seq(read, SYNC, write)))))


def test_sync_hazard_before_a_loop_goes_before_the_loop():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    tx = thread_iv("threadIdx.x", 16)
    t, i = tx.var, var("i")
    write = BufferStore(AS, A[t], (t,))
    reads = loop(i, 4, BufferStore(B, B[t] + AS[(t + i) % 16], (t,)))
    f = kernel("k", [A, B], thread_extent(tx, Allocate(AS, seq(write, reads))))
    want = thread_extent(tx, Allocate(AS, seq(write, SYNC, reads)))
    tir.assert_structural_equal(insert_thread_sync(f).body, want)


def test_sync_between_a_let_value_or_condition_and_its_body():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    bx, tx = thread_iv("blockIdx.x", 4), thread_iv("threadIdx.x", 16)
    t, x = tx.var, var("x", "float32")
    # every thread reads AS[0] for the let, then some thread overwrites it: WAR
    write = BufferStore(AS, A[t] + x, (t,))
    f = kernel("k", [A, B], thread_extent(tx, Allocate(AS, S.LetStmt(x, AS[0], write))))
    want = thread_extent(tx, Allocate(AS, S.LetStmt(x, AS[0], seq(SYNC, write))))
    tir.assert_structural_equal(insert_thread_sync(f).body, want)
    # a uniform condition reading shared memory, then a write inside the branch
    cond = tir.all(bx.var < 2, AS[0] > 0.0)
    f = kernel("k", [A, B], thread_extent(bx, thread_extent(tx, Allocate(AS, IfThenElse(cond, write)))))
    want = thread_extent(bx, thread_extent(tx, Allocate(AS, IfThenElse(cond, seq(SYNC, write)))))
    tir.assert_structural_equal(insert_thread_sync(f).body, want)


def test_sync_stmt_with_outer_thread_vars():
    A, B = buf1d("A", 16), buf1d("B", 16)
    AS = buf1d("AS", 16, scope="shared")
    t = var("tid")  # not named threadIdx.*: the caller says it is a thread index
    write, read = BufferStore(AS, A[t], (t,)), BufferStore(B, AS[15 - t], (t,))
    stmt = IfThenElse(t < 8, seq(write, read))
    assert insert_thread_sync_stmt(stmt, thread_vars=[t]) is stmt
    tir.assert_structural_equal(insert_thread_sync_stmt(stmt), IfThenElse(t < 8, seq(write, SYNC, read)))


# ----------------------------------------------------------------------------
# double-buffer writes
# ----------------------------------------------------------------------------

def _pipelined(with_syncs, marked=True):
    """The shape inject_double_buffer produces, in a 16-thread block:
    ``AS[0] <- tile 0; for ko { if ko+1<4: AS[other] <- tile ko+1; CL += AS[this] }``."""
    A, C = buf1d("A", 256), buf1d("C", 16)
    AS, CL = buf1d("AS", 32, scope="shared"), buf1d("CL", 1, scope="local")
    tx = thread_iv("threadIdx.x", 16)
    t = tx.var
    ko, k = var("ko"), var("k")
    prologue = BufferStore(AS, A[t], (t,))
    prefetch = BufferStore(AS, A[(ko + 1) * 16 + t], (tir.floormod(ko + 1, 2) * 16 + t,))
    if marked:
        prefetch = db_write(AS, prefetch)
    compute = loop(k, 16, BufferStore(CL, CL[0] + AS[tir.floormod(ko, 2) * 16 + k], (c(0),)))
    body = seq(IfThenElse(E.LT(ko + 1, c(4)), prefetch), compute, SYNC if with_syncs else None)
    stmt = thread_extent(tx, Allocate(AS, Allocate(CL, seq(
        BufferStore(CL, c(0.0), (c(0),)),
        prologue,
        SYNC if with_syncs else None,
        loop(ko, 4, body),
        BufferStore(C, CL[0], (t,))))))
    return kernel("k", [A, C], stmt)


def test_sync_one_barrier_per_iteration_with_double_buffer_writes():
    f = _pipelined(with_syncs=False)
    g = insert_thread_sync(f)
    tir.assert_structural_equal(g, _pipelined(with_syncs=True))
    assert insert_thread_sync(g) is g


def test_sync_unmarked_prefetch_needs_two_barriers_per_iteration():
    g = insert_thread_sync(_pipelined(with_syncs=False, marked=False))
    assert count_syncs(find_loop(g.body, "ko").body) == 2


def test_sync_double_buffer_write_is_a_write_across_iterations():
    # for ko { db-write AS; read AS }: no barrier inside one iteration, but the read of
    # iteration ko and the write of ko + 1 (and the write of ko and the read of ko + 1) race
    AS, B = buf1d("AS", 32, scope="shared"), buf1d("B", 64)
    tx = thread_iv("threadIdx.x", 16)
    ko = var("ko")
    write = db_write(AS, BufferStore(AS, c(1.0), (tir.floormod(ko + 1, 2) * 16 + tx.var,)))
    read = BufferStore(B, AS[tir.floormod(ko, 2) * 16 + 15 - tx.var], (ko * 16 + tx.var,))
    stmt = thread_extent(tx, Allocate(AS, loop(ko, 4, seq(write, read))))
    f = kernel("k", [B], stmt)
    g = insert_thread_sync(f)
    want = thread_extent(tx, Allocate(AS, loop(ko, 4, seq(write, read, SYNC))))
    tir.assert_structural_equal(g.body, want)
    # the read before the double-buffer write (a prefetch through registers stores last):
    # different slots in one iteration, the same barrier at its end
    stmt2 = thread_extent(tx, Allocate(AS, loop(ko, 4, seq(read, write))))
    g2 = insert_thread_sync(f.with_body(stmt2))
    tir.assert_structural_equal(g2.body, thread_extent(tx, Allocate(AS, loop(ko, 4, seq(read, write, SYNC)))))
    # an ordinary write after the read does conflict: a barrier between them
    plain = BufferStore(AS, c(1.0), (tir.floormod(ko + 1, 2) * 16 + tx.var,))
    g3 = insert_thread_sync(f.with_body(thread_extent(tx, Allocate(AS, loop(ko, 4, seq(read, plain))))))
    assert count_syncs(find_loop(g3.body, "ko").body) == 2


def test_sync_before_an_intrinsic_reading_shared_memory_through_access_ptr():
    """A tensor-core load reads its tile through ``access_ptr("r")``: a read of the
    shared buffer like any load, so the fetch before it needs a barrier."""
    A, C = buf1d("A", 256, "float16"), buf1d("C", 256)
    AS = buf1d("AS", 256, "float16", scope="shared")
    FA = buf1d("FA", 256, "float16", scope="wmma.matrix_a")
    FC = buf1d("FC", 256, "float16", scope="wmma.accumulator")
    tx, i = thread_iv("threadIdx.x", 32), var("i")
    fetch = loop(i, 8, BufferStore(AS, A[i * 32 + tx.var], (i * 32 + tx.var,)))
    load = S.Evaluate(tir.call_intrin("handle", "tir.tvm_load_matrix_sync", FA.data, 16, 16, 16, 0,
                                      AS.access_ptr("r"), 16, "row_major"))

    def body(*stmts):
        return thread_extent(tx, Allocate(AS, Allocate(FA, Allocate(FC, seq(*stmts)))))

    f = kernel("k", [A, C], body(fetch, load))
    tir.assert_structural_equal(insert_thread_sync(f).body, body(fetch, SYNC, load))
    # a write through access_ptr("w") after a read is a WAR hazard too
    write = S.Evaluate(tir.call_intrin("handle", "tir.tvm_store_matrix_sync", FC.data, 16, 16, 16, 0,
                                       AS.access_ptr("w"), 16, "row_major"))
    g = kernel("k", [A, C], body(load, write))
    tir.assert_structural_equal(insert_thread_sync(g).body, body(load, SYNC, write))
