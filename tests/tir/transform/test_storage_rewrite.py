"""The storage_rewrite pass (tir/transform/storage_rewrite.py): along a spine of
allocations, a buffer takes over the memory of one of the same scope, dtype and size
that is dead by its first use; nothing else changes."""
from tecc import tir
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, BufferStore
from tecc.tir.transform import storage_rewrite
from irhelpers import buf, loop, lowered_func, var

c = tir.const


def _copy(dst, src, n=8):
    i = var("i")
    return loop(i, n, BufferStore(dst, src[i] + c(1.0), (i,)))


def test_a_dead_buffer_is_reused_by_a_later_one():
    A, B = buf("A", (8,)), buf("B", (8,))
    T1, T2, T3 = buf("T1", (8,)), buf("T2", (8,)), buf("T3", (8,))
    # T1 = A + 1; T2 = T1 + 1 (T1 dies); T3 = T2 + 1; B = T3 + 1
    inner = Allocate(T3, S.SeqStmt((_copy(T3, T2), _copy(B, T3))))
    body = Allocate(T1, S.SeqStmt((_copy(T1, A), Allocate(T2, S.SeqStmt((_copy(T2, T1), inner))))))
    g = storage_rewrite(lowered_func("f", [A, B], body))
    # T3 lives in T1's memory: its allocation is gone, its accesses use T1's data
    T3_in_T1 = S.Buffer("T3", "float32", T3.shape, T1.data)
    inner_want = S.SeqStmt((_copy(T3_in_T1, T2), _copy(B, T3_in_T1)))
    want = Allocate(T1, S.SeqStmt((_copy(T1, A), Allocate(T2, S.SeqStmt((_copy(T2, T1), inner_want))))))
    tir.assert_structural_equal(g.body, want)
    stored = {}
    tir.stmt_functor.post_order_visit(g.body, lambda n: stored.setdefault(n.buffer.name, n.buffer.data)
                                      if isinstance(n, BufferStore) else None)
    assert stored["T3"] is T1.data
    assert storage_rewrite(g) is g


def test_directly_nested_allocations_form_one_spine():
    A, B = buf("A", (8,)), buf("B", (8,))
    T1, T2 = buf("T1", (8,), scope="local"), buf("T2", (8,), scope="local")
    body = Allocate(T1, Allocate(T2, S.SeqStmt((_copy(T1, A), _copy(B, T1), _copy(T2, A), _copy(B, T2)))))
    g = storage_rewrite(lowered_func("f", [A, B], body))
    assert isinstance(g.body, Allocate) and g.body.buffer is T1 and not isinstance(g.body.body, Allocate)
    datas = set()
    tir.stmt_functor.post_order_visit(g.body, lambda n: datas.add(n.buffer.data)
                                      if isinstance(n, BufferStore) else None)
    assert datas == {T1.data, B.data}


def test_overlapping_or_different_buffers_are_left_alone():
    A, B = buf("A", (8,)), buf("B", (8,))
    T1, T2 = buf("T1", (8,)), buf("T2", (8,))
    T3 = buf("T3", (8,), dtype="int32")
    live_together = Allocate(T1, S.SeqStmt((
        _copy(T1, A), Allocate(T2, S.SeqStmt((_copy(T2, T1), _copy(B, T1), _copy(B, T2)))))))
    f = lowered_func("f", [A, B], live_together)
    assert storage_rewrite(f) is f
    i = var("i")
    other_dtype = Allocate(T1, S.SeqStmt((
        _copy(T1, A),
        _copy(B, T1),
        Allocate(T3, S.SeqStmt((loop(i, 8, BufferStore(T3, c(1), (i,))),
                                loop(i, 8, BufferStore(B, T3[i].astype("float32"), (i,)))))))))
    g = lowered_func("g", [A, B], other_dtype)
    assert storage_rewrite(g) is g
