"""``Stage.prefetch`` (TVM's primitive) and the inject_prefetch pass
(tir/transform/inject_prefetch.py): the scope te lowering leaves at the top of a
loop's body becomes prefetches of the cache lines the body reads ``offset``
iterations ahead, on the flattened buffer; GPU targets drop it."""
import numpy as np

import tecc
from tecc import te, tir
from tecc.tir import expr as E
from tecc.tir import keys
from tecc.tir import stmt as S
from tecc.tir.transform import inject_prefetch
from tecc.tir.transform.inject_prefetch import MAX_LINES
from irhelpers import buf1d, find_loop, loop, lowered_func, run_interp, store, var

c = tir.const
RNG = np.random.default_rng(11)


def prefetches(stmt):
    """The indices (as text) of the prefetch calls below ``stmt``, in order."""
    found = []
    tir.pre_order_visit(stmt, lambda n: found.append(str(n.args[0].indices[0]))
                        if isinstance(n, E.Call) and n.op == keys.PREFETCH else None)
    return found


def row_sum(n=64, factor=16, offset=1):
    """TVM's prefetch tutorial: ``B[i] = sum_k A[i, k]`` with ``k`` split by
    ``factor`` and ``A`` prefetched ``offset`` outer iterations ahead."""
    k = te.reduce_axis((0, n), name="k")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=factor)
    s[B].prefetch(A, ko, offset)
    return s, A, B


def test_the_tutorial_prefetches_the_next_line_of_the_row():
    s, A, B = row_sum()
    f = tecc.lower(s, [A, B])["main"]
    ko = find_loop(f.body, "k.outer")
    # 16 floats are one 64-byte line: one prefetch, one iteration ahead, at the top of k.outer
    assert isinstance(ko.body, S.SeqStmt) and prefetches(ko.body.seq[0]) == ["i*64 + k.outer*16 + 16"]
    m = tecc.build(s, [A, B], "llvm")
    assert "__builtin_prefetch(A + (i * 64 + k_outer * 16 + 16), 0, 3);" in m.get_source()
    a = RNG.random((64, 64), dtype=np.float32)
    b = tecc.nd.empty((64,), "float32")
    m(tecc.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a.sum(axis=1), rtol=1e-5)


def test_a_region_of_several_lines_is_prefetched_line_by_line():
    # 64 floats ahead = 4 lines, an unrolled loop of prefetches one line apart
    s, A, B = row_sum(n=128, factor=64, offset=1)
    f = tecc.lower(s, [A, B])["main"]
    ko = find_loop(f.body, "k.outer")
    pre = ko.body.seq[0]
    assert isinstance(pre, S.For) and pre.kind is S.ForKind.UNROLLED and int(pre.extent) == 4
    assert prefetches(pre) == ["i*128 + k.outer*64 + prefetch_line*16 + 64"]


def test_the_last_iterations_prefetch_past_the_buffer_and_nothing_reads_it():
    # offset 3 of 4 iterations: the last rows' prefetches point past A; the C build
    # runs, and the reference interpreter (which bounds-checks every access) too
    s, A, B = row_sum(offset=3)
    a = RNG.random((64, 64), dtype=np.float32)
    f = tecc.lower(s, [A, B])["main"]
    _, out = run_interp(f, a, np.zeros(64, np.float32))
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)
    m = tecc.build(s, [A, B], "llvm")
    b = tecc.nd.empty((64,), "float32")
    m(tecc.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a.sum(axis=1), rtol=1e-5)


def _scope_func(extent, offset=1, body_index=None):
    """``for i: for j in 0..extent: B[i] += A[i*64 + j]`` with a prefetch scope of A
    at the top of ``i``'s body (as te lowering leaves it)."""
    A, B = buf1d("A", 4096), buf1d("B", 64)
    i, j = var("i"), var("j")
    index = (i * 64 + j) if body_index is None else body_index(i, j)
    inner = loop(j, extent, store(B, B[i] + A[index], i))
    body = loop(i, 64, S.AttrStmt(A.data, keys.PREFETCH_SCOPE, c(offset), inner))
    return lowered_func("f", [A, B], body), A, i, j


def test_per_pass_before_and_expected():
    f, A, i, j = _scope_func(16, offset=2)
    g = inject_prefetch(f)
    want = loop(i, 64, S.seq(
        S.Evaluate(E.Call("int32", keys.PREFETCH, (E.BufferLoad(A, (i * 64 + 128,)),))),
        f.body.body.body))
    tir.assert_structural_equal(g.body, want)
    # GPU targets: the scope is dropped, the body kept
    h = inject_prefetch(f, emit=False)
    tir.assert_structural_equal(h.body, loop(i, 64, f.body.body.body))


def test_scopes_it_cannot_size_are_dropped():
    # a symbolic extent inside, and a region of more than MAX_LINES lines
    n = var("n")
    f, *_ = _scope_func(n)
    assert prefetches(inject_prefetch(f).body) == []
    assert not any(isinstance(x, S.AttrStmt) for x in [inject_prefetch(f).body.body])
    f, *_ = _scope_func(16 * MAX_LINES + 1, body_index=lambda i, j: j)
    assert prefetches(inject_prefetch(f).body) == []
    f, *_ = _scope_func(16 * MAX_LINES, body_index=lambda i, j: j)
    assert prefetches(inject_prefetch(f).body) != []


def test_cuda_kernels_carry_no_prefetch():
    n = 256
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    ko, _ = s[B].split(k, factor=16)
    s[B].prefetch(A, ko, 1)
    m = tecc.build(s, [A, B], "cuda -arch=sm_80")
    src = m.imported_modules[0].get_source()
    assert "__global__" in src and "prefetch" not in src


def test_rows_a_line_or_more_apart_are_prefetched_row_by_row():
    # a 2-D read (8 rows of 32 floats, rows 256 floats apart): 8 rows of 2 lines, not
    # the 113 lines between the first and the last element (TVM prefetches the rows
    # of a multi-dimensional region the same way)
    A, B = buf1d("A", 8192), buf1d("B", 64)
    i, r, j = var("i"), var("r"), var("j")
    inner = loop(r, 8, loop(j, 32, store(B, B[i] + A[i * 32 + r * 256 + j], i)))
    f = lowered_func("f", [A, B], loop(i, 4, S.AttrStmt(A.data, keys.PREFETCH_SCOPE, c(1), inner)))
    g = inject_prefetch(f)
    pre = g.body.body.seq[0]
    assert isinstance(pre, S.For) and pre.loop_var.name == "prefetch_r" and int(pre.extent) == 8
    assert isinstance(pre.body, S.For) and int(pre.body.extent) == 2
    assert prefetches(pre) == ["prefetch_r*256 + i*32 + prefetch_line*16 + 32"]
    a = RNG.random(8192, dtype=np.float32)
    _, want = run_interp(f, a, np.zeros(64, np.float32))
    _, got = run_interp(g, a, np.zeros(64, np.float32))
    np.testing.assert_allclose(got, want)
