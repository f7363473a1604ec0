"""The lower_thread_allreduce pass (tir/transform/lower_thread_allreduce.py): the
``tecc.thread_allreduce`` intrinsic in a kernel becomes warp shuffles when
threadIdx.x spans the reduction and the warps line up with the rows, a tree through
shared memory otherwise (before/expected IR, the structure of larger cases), and the
result, with barriers from thread_sync, is run on the GPU emulation against numpy."""
import numpy as np
import pytest

from tecc import tir
from tecc.errors import LoweringError
from tecc.tir import expr as E
from tecc.tir import keys
from tecc.tir import stmt as S
from tecc.tir.op import warp_shuffle_down
from tecc.tir.stmt import Allocate, IfThenElse, LetStmt, seq
from tecc.tir.transform.lower_thread_allreduce import lower_thread_allreduce, thread_allreduce
from tecc.tir.transform.thread_sync import insert_thread_sync
from irhelpers import (
    buf1d, check_kernels, count_syncs, kernel, run_kernels, single_launch, store, thread_attr, var,
)

c = tir.const
RNG = np.random.default_rng(13)


def _reducer(combine, identity, dtypes):
    """A CommReducer: ``combine(lhs, rhs)`` over one variable per dtype."""
    lhs = tuple(var(f"x{i}", dt) for i, dt in enumerate(dtypes))
    rhs = tuple(var(f"y{i}", dt) for i, dt in enumerate(dtypes))
    return E.CommReducer(lhs, rhs, tuple(combine(lhs, rhs)), tuple(identity))


SUM = _reducer(lambda x, y: [x[0] + y[0]], [c(0.0)], ["float32"])
#: (index, value) of the maximum value
ARGMAX = _reducer(lambda x, y: [tir.Select(x[1] >= y[1], x[0], y[0]), tir.Select(x[1] >= y[1], x[1], y[1])],
                  [c(-1), c(-3.0e38)], ["int32", "float32"])


def row_sum(n, rows=1, all_threads=False, tag="threadIdx.x", blocks=3):
    """``B[r] = sum_t A[r * n + t]``: one row per ``rows`` threadIdx.y in each of
    ``blocks`` blocks, the ``n`` threads ``t`` (bound to ``tag``) of a row reduce
    its values.  With ``all_threads`` every thread of the row stores the sum
    (``B[r * n + t]``)."""
    m = blocks * rows
    A, B = buf1d("A", m * n), buf1d("B", m * n if all_threads else m)
    P = buf1d("B.partial", 1, scope="local")
    bx, t = var("blockIdx.x"), var(tag)
    ty = var("threadIdx.y") if rows > 1 else None
    r = bx * rows + ty if rows > 1 else bx
    row = ty if rows > 1 else c(0)
    out = store(B, P[0], r * n + t) if all_threads else IfThenElse(E.EQ(t, c(0)), store(B, P[0], r))
    body = Allocate(P, seq(store(P, A[r * n + t], 0),
                           thread_allreduce(SUM, n, t, row, rows, all_threads, [P]),
                           out))
    launch = [(bx, blocks)] + ([(ty, rows)] if rows > 1 else []) + [(t, n)]
    return kernel("sum_kernel0", [A, B], body, launch), (A, B, P, bx, t)


def run_row_sum(k, n, rows=1, all_threads=False, blocks=3):
    """Lower ``k``, place its barriers, run it on the emulation (and check it: no race,
    no out-of-bounds access); the sums it computed against numpy's."""
    low = insert_thread_sync(lower_thread_allreduce(k))
    A, B = (low.buffer_map[p] for p in low.params)
    host, kernels = single_launch(low.name, low, [buf1d("A", int(A.shape[0])), buf1d("B", int(B.shape[0]))])
    a = RNG.standard_normal(int(A.shape[0])).astype("float32")
    b = np.zeros(int(B.shape[0]), "float32")
    run_kernels(host, kernels, [a, b])
    want = a.reshape(-1, n).sum(axis=1)
    np.testing.assert_allclose(b, np.repeat(want, n) if all_threads else want, rtol=1e-5, atol=1e-5)
    assert check_kernels(host, kernels, [a, np.zeros_like(b)], max_blocks=None) == []
    return low


def shuffles(stmt):
    """The offsets of the warp shuffles below ``stmt``, in order."""
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(int(n.args[1])) if isinstance(n, E.Call)
                         and n.op == keys.WARP_SHUFFLE_DOWN else None)
    return found


def top_allocations(k):
    """The buffers allocated right inside the kernel's thread_extent attributes."""
    body = k.body
    while isinstance(body, S.AttrStmt) and body.attr_key == keys.THREAD_EXTENT:
        body = body.body
    found = []
    while isinstance(body, Allocate):
        found.append(body.buffer)
        body = body.body
    return found


# ----------------------------------------------------------------------------
# before / expected
# ----------------------------------------------------------------------------

def test_one_warp_becomes_shuffles():
    k, (A, B, P, bx, t) = row_sum(4)
    low = lower_thread_allreduce(k)

    def step(offset):  # every lane reads its partner's value, then adds it
        got = var("B_shfl", "float32")
        return LetStmt(got, warp_shuffle_down(P[0], offset), store(P, P[0] + got, 0))

    # the steps replace the intrinsic in the sequence it stood in
    body = Allocate(P, S.SeqStmt((store(P, A[bx * 4 + t], 0),
                                  step(2), step(1),               # 4 lanes: offsets 2 and 1
                                  IfThenElse(E.EQ(t, c(0)), store(B, P[0], bx)))))
    tir.assert_structural_equal(low.body, thread_attr(bx, 3, thread_attr(t, 4, body)))
    assert [b.scope for b in top_allocations(low)] == ["local"]   # no shared memory for one warp
    run_row_sum(k, 4)


@pytest.mark.parametrize("n", [4, 3])
def test_threads_on_y_go_through_a_shared_tree(n):
    k, (A, B, P, bx, t) = row_sum(n, tag="threadIdx.y")
    low = lower_thread_allreduce(k)
    red = buf1d("red_buf", n, scope="shared")

    def step(half):  # threads below ``half`` add their partner's slot (none past the end of 3 threads)
        cond = t < half if n == 4 else tir.all(t < half, t + half < n)
        return IfThenElse(cond, store(red, red[t] + red[t + half], t))

    body = Allocate(red, Allocate(P, S.SeqStmt((
        store(P, A[bx * n + t], 0),
        store(red, P[0], t),                                         # each thread's value in its slot
        step(2), step(1),                                            # halving steps
        IfThenElse(E.EQ(t, c(0)), store(P, red[0], 0)),              # the sum read back by thread 0
        IfThenElse(E.EQ(t, c(0)), store(B, P[0], bx))))))
    tir.assert_structural_equal(low.body, thread_attr(bx, 3, thread_attr(t, n, body)))
    assert [b.name for b in top_allocations(low)] == ["red_buf", "B.partial"]
    run_row_sum(k, n)


def test_kernel_without_a_reduction_is_returned_as_is():
    A = buf1d("A", 32)
    tx = var("threadIdx.x")
    k = kernel("k", [A], store(A, 1.0, tx), [(tx, 32)])
    assert lower_thread_allreduce(k) is k


# ----------------------------------------------------------------------------
# the structure of larger cases, and their values
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("n, offsets", [(32, [16, 8, 4, 2, 1]), (16, [8, 4, 2, 1]),
                                        (64, [16, 8, 4, 2, 1, 1]), (128, [16, 8, 4, 2, 1, 2, 1]),
                                        (96, [16, 8, 4, 2, 1, 2, 1])])
def test_warps_then_a_shuffle_over_the_warps(n, offsets):
    k, _ = row_sum(n)
    low = lower_thread_allreduce(k)
    assert shuffles(low.body) == offsets
    warps = -(-n // 32)
    shared = [b for b in top_allocations(low) if b.scope == "shared"]
    if warps == 1:
        assert not shared
    else:
        # lane 0 of each warp leaves its value in red_buf[warps], allocated at the kernel's top
        assert [(b.name, int(b.shape[0])) for b in shared] == [("red_buf", warps)]
    synced = run_row_sum(k, n)
    assert count_syncs(synced.body) == (0 if warps == 1 else 1)


def test_ragged_thread_count_uses_the_identity_past_the_row():
    # 24 lanes neither divide nor fill a warp: partners past the row count as 0
    k, _ = row_sum(24)
    low = lower_thread_allreduce(k)
    assert shuffles(low.body) == [16, 8, 4, 2, 1]
    selects = []
    tir.post_order_visit(low.body, lambda n: selects.append(n) if isinstance(n, E.Select) else None)
    assert len(selects) == 5
    run_row_sum(k, 24)


@pytest.mark.parametrize("rows, n", [(4, 8), (2, 64)])
def test_rows_on_threadidx_y_that_line_up_with_warps(rows, n):
    k, _ = row_sum(n, rows=rows)
    low = lower_thread_allreduce(k)
    assert shuffles(low.body)
    run_row_sum(k, n, rows=rows)


def test_rows_that_straddle_warps_use_the_shared_tree():
    # 48 threads per row, 2 rows: a warp would hold parts of two rows
    k, _ = row_sum(48, rows=2)
    low = lower_thread_allreduce(k)
    assert not shuffles(low.body)
    assert [(b.name, int(b.shape[0])) for b in top_allocations(low) if b.scope == "shared"] == [("red_buf", 96)]
    run_row_sum(k, 48, rows=2)


@pytest.mark.parametrize("n, tag", [(64, "threadIdx.x"), (8, "threadIdx.y")])
def test_all_threads_read_the_result_back(n, tag):
    k, (A, B, P, bx, t) = row_sum(n, all_threads=True, tag=tag)
    low = lower_thread_allreduce(k)
    stores = []
    tir.post_order_visit(low.body, lambda s: stores.append(s) if isinstance(s, S.BufferStore) and s.buffer is P
                         else None)
    last = stores[-1]                      # the read-back into the partial, unguarded
    if tag == "threadIdx.x":
        # shuffles, then thread 0's sum broadcast through red_result
        assert last.value.buffer.name == "red_result" and last.value.buffer.scope == "shared"
        assert [b.name for b in top_allocations(low) if b.scope == "shared"] == ["red_buf", "red_result"]
    else:
        assert last.value.buffer.name == "red_buf" and int(last.value.indices[0]) == 0
    run_row_sum(k, n, all_threads=True)


def test_tuple_reduction_carries_every_value():
    # argmax over 40 threads (ragged): the index and the value travel together
    n, blocks = 40, 3
    I, V = buf1d("I", blocks * n, "int32"), buf1d("V", blocks * n)
    OI, OV = buf1d("OI", blocks, "int32"), buf1d("OV", blocks)
    P0, P1 = buf1d("T.partial0", 1, "int32", "local"), buf1d("T.partial1", 1, "float32", "local")
    bx, t = var("blockIdx.x"), var("threadIdx.x")
    body = Allocate(P0, Allocate(P1, seq(
        store(P0, I[bx * n + t], 0), store(P1, V[bx * n + t], 0),
        thread_allreduce(ARGMAX, n, t, c(0), 1, False, [P0, P1]),
        IfThenElse(E.EQ(t, c(0)), seq(store(OI, P0[0], bx), store(OV, P1[0], bx))))))
    k = kernel("argmax_kernel0", [I, V, OI, OV], body, [(bx, blocks), (t, n)])
    low = insert_thread_sync(lower_thread_allreduce(k))
    assert len(shuffles(low.body)) == 2 * (5 + 1)                  # both values, warps then 2 warps
    host, kernels = single_launch(low.name, low, [buf1d("I", blocks * n, "int32"), buf1d("V", blocks * n),
                                                  buf1d("OI", blocks, "int32"), buf1d("OV", blocks)])
    v = RNG.standard_normal((blocks, n)).astype("float32")
    ix = np.tile(np.arange(n, dtype="int32"), blocks)
    oi, ov = np.zeros(blocks, "int32"), np.zeros(blocks, "float32")
    run_kernels(host, kernels, [ix, v.reshape(-1), oi, ov])
    np.testing.assert_array_equal(oi, v.argmax(axis=1))
    np.testing.assert_array_equal(ov, v.max(axis=1))


def test_reduction_outside_a_kernel_thread_index_is_an_error():
    A = buf1d("A", 32)
    P = buf1d("A.partial", 1, scope="local")
    t = var("t")        # not the variable of a thread_extent attribute
    tx = var("threadIdx.x")
    body = Allocate(P, seq(store(P, A[tx], 0), thread_allreduce(SUM, 32, t, c(0), 1, False, [P])))
    with pytest.raises(LoweringError, match=r"thread reduction over 't' \(reducing 'A.partial'\) is not inside "
                                            "a thread_extent"):
        lower_thread_allreduce(kernel("k", [A], body, [(tx, 32)]))
