"""TE lowering: loop nests, bound inference and attachment, checked as IR."""
import numpy as np

import tecc
from tecc import te, tir, topi
from tecc.te.lower import lower_schedule
from tecc.tir import stmt as S
from tecc.tir import expr as E
from tecc.tir.analysis.interp import run_prim_func
from tecc.topi.testing import matmul_python


def _loops(stmt):
    out = []
    tir.post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, S.For) else None)
    return out


def _allocs(stmt):
    out = []
    tir.post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, S.Allocate) else None)
    return out


def test_naive_matmul_structure():
    n = 8
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = topi.nn.matmul(A, B)
    f = lower_schedule(te.create_schedule(C.op), [A, B, C], "mm")
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    Ab, Bb, Cb = (f.buffer_map[p] for p in f.params)
    zero = tir.const(0)
    expected = S.For(i.var, zero, tir.const(n), S.ForKind.SERIAL, S.For(
        j.var, zero, tir.const(n), S.ForKind.SERIAL, S.seq(
            S.BufferStore(Cb, tir.const(0.0), (i.var, j.var)),
            S.For(k.var, zero, tir.const(n), S.ForKind.SERIAL, S.BufferStore(
                Cb, E.Add(E.BufferLoad(Cb, (i.var, j.var)),
                          E.Mul(E.BufferLoad(Ab, (i.var, k.var)), E.BufferLoad(Bb, (k.var, j.var)))),
                (i.var, j.var))))))
    tir.assert_structural_equal(f.body, expected)
    assert f.attrs["global_symbol"] == "mm"


def test_non_dividing_split_is_guarded_and_correct():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    f = lower_schedule(s, [A, B], "f")
    text = str(f)
    assert "likely(" in text and "< 10" in text
    assert [lp.extent.value for lp in _loops(f.body)] == [4, 3]
    a = np.arange(10, dtype="float32")
    b = np.zeros(10, "float32")
    run_prim_func(f, a, b)
    np.testing.assert_allclose(b, a + 1)


def test_reduction_init_goes_before_first_reduce_loop():
    A = te.placeholder((6, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    R = te.compute((6,), lambda i: te.sum(A[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    ko, ki = s[R].split(k, factor=2)
    io, ii = s[R].split(R.op.axis[0], factor=3)
    s[R].reorder(io, ko, ii, ki)
    f = lower_schedule(s, [A, R], "r")
    outer = f.body
    assert outer.loop_var is io.var
    init_nest, update_nest = outer.body.seq
    assert init_nest.loop_var is ii.var and isinstance(init_nest.body, S.BufferStore)
    assert update_nest.loop_var is ko.var
    a = np.random.rand(6, 6).astype("float32")
    r = np.zeros(6, "float32")
    run_prim_func(f, a, r)
    np.testing.assert_allclose(r, a.sum(axis=1), rtol=1e-6)


def test_compute_at_sizes_the_buffer_from_bound_inference():
    A = te.placeholder((16, 16), name="A")
    B = te.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((16, 16), lambda i, j: B[i, j] + B[i, (j + 1) % 16], name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 8)
    s[B].compute_at(s[C], yo)
    f = lower_schedule(s, [A, C], "f")
    (alloc,) = _allocs(f.body)
    # one 4-row tile; the (j+1)%16 read widens the columns to the whole row
    assert [int(x) for x in alloc.buffer.shape] == [4, 16]
    a = np.random.rand(16, 16).astype("float32")
    c = np.zeros((16, 16), "float32")
    run_prim_func(f, a, c)
    b = a * 2
    np.testing.assert_allclose(c, b + np.roll(b, -1, axis=1), rtol=1e-6)


def test_compute_at_stencil_region_with_offset():
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((18,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    f = lower_schedule(s, [A, C], "f")
    (alloc,) = _allocs(f.body)
    assert [int(x) for x in alloc.buffer.shape] == [6]
    a = np.random.rand(20).astype("float32")
    c = np.zeros(18, "float32")
    run_prim_func(f, a, c)
    b = a + 1
    np.testing.assert_allclose(c, b[:-2] + b[1:-1] + b[2:], rtol=1e-6)


def test_align_extent_widens_an_attached_region_to_whole_tiles():
    # C reads 6 elements of B per tile of 4; B is split by 4 inside: without
    # align_extent the second piece is partial (a guard), with it B computes 8
    # (the last tile's 2 extra elements stay inside B's 24 and are never read)
    A = te.placeholder((24,), name="A")
    B = te.compute((24,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    results = {}
    for aligned in (False, True):
        s = te.create_schedule(C.op)
        xo, xi = s[C].split(C.op.axis[0], factor=4)
        s[B].compute_at(s[C], xo)
        bo, bi = s[B].split(B.op.axis[0], factor=4)
        if aligned:
            s[B].align_extent(B.op.axis[0], 4)
        f = lower_schedule(s, [A, C], "f")
        (alloc,) = _allocs(f.body)
        guards = []
        tir.post_order_visit(f.body, lambda n: guards.append(n) if isinstance(n, S.IfThenElse) else None)
        results[aligned] = ([int(x) for x in alloc.buffer.shape], len(guards))
        a = np.random.rand(24).astype("float32")
        c = np.zeros(16, "float32")
        run_prim_func(f, a, c)
        b = a + 1
        np.testing.assert_allclose(c, b[:-8] + b[1:-7] + b[2:-6], rtol=1e-6)
    assert results[False] == ([6], 1)
    assert results[True] == ([8], 0)


def test_inline_substitutes_expression():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 3.0, name="B")
    C = te.compute((8,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    f = lower_schedule(s, [A, C], "f")
    assert not _allocs(f.body)
    assert "A[i]*3f + 1f" in str(f)


def test_inlined_chains_of_index_maps_stay_small():
    """Four rounds of reshape, transpose and rotate-half (a rotary embedding's
    shape) inlined into one stage: each inlined body is simplified in its own axes
    before it is substituted, so the lowered function before any pass stays the size
    of one access.  Substituted unsimplified, each layer repeated the whole index
    expression below it several times: this function took 284 s to lower."""
    x = te.placeholder((2, 16, 8, 32), name="x")
    y = x
    for _ in range(4):
        y = topi.transpose(topi.reshape(topi.reshape(y, (2, 16, 256)), (2, 16, 8, 32)), (0, 2, 1, 3))
        y = topi.transpose(y, (0, 2, 1, 3))
        y = topi.concatenate([topi.negative(topi.strided_slice(y, [0, 0, 0, 16], [2, 16, 8, 32])),
                              topi.strided_slice(y, [0, 0, 0, 0], [2, 16, 8, 16])], axis=3)
    out = te.compute(y.shape, lambda *i: y(*i) * 2.0, name="out")
    s = te.create_schedule(out.op)
    for st in s.stages:
        if st.op is not out.op and not isinstance(st.op, te.PlaceholderOp):
            st.compute_inline()
    f = lower_schedule(s, [x, out], "f")
    assert len(str(f)) < 1000
    a = np.random.default_rng(0).random((2, 16, 8, 32), dtype=np.float32)
    got = np.zeros_like(a)
    run_prim_func(f, a, got)
    want = a
    for _ in range(4):
        want = np.concatenate([-want[..., 16:], want[..., :16]], axis=3)
    np.testing.assert_allclose(got, want * 2)


def test_cache_write_and_cache_read_stage_names():
    A = te.placeholder((8, 8), name="A")
    B = te.placeholder((8, 8), name="B")
    C = topi.nn.matmul(A, B)
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    AL = s.cache_read(A, "local", [CL])
    s[CL].compute_at(s[C], C.op.axis[0])
    s[AL].compute_at(s[CL], CL.op.reduce_axis[0])
    f = lower_schedule(s, [A, B, C], "f")
    names = sorted(a.buffer.name for a in _allocs(f.body))
    assert names == ["A.local", "C.local"]
    scopes = {a.buffer.name: a.buffer.scope for a in _allocs(f.body)}
    assert scopes == {"A.local": "local", "C.local": "local"}
    a, b = np.random.rand(8, 8).astype("float32"), np.random.rand(8, 8).astype("float32")
    c = np.zeros((8, 8), "float32")
    run_prim_func(f, a, b, c)
    np.testing.assert_allclose(c, matmul_python(a, b), rtol=1e-5)


def test_lower_prints_flattened_tir_like_the_seeds():
    A = te.placeholder((1024, 1024), name="A")
    B = te.placeholder((1024, 1024), name="B")
    C = topi.nn.matmul(A, B)
    text = str(tecc.lower(te.create_schedule(C.op), [A, B, C], simple_mode=True))
    assert "C[i*1024 + j] = 0f" in text
    assert "C[i*1024 + j] = C[i*1024 + j] + A[i*1024 + k]*B[k*1024 + j]" in text


def test_pragma_and_parallel_annotations_reach_the_loops():
    A = te.placeholder((32,), name="A")
    B = te.compute((32,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].parallel(xo)
    s[B].pragma(xi, "unroll_explicit", 0)
    f = lower_schedule(s, [A, B], "f")
    outer, inner = _loops(f.body)[::-1]
    assert outer.kind is S.ForKind.PARALLEL
    assert inner.annotation("pragma_unroll_explicit").value == 0


def test_vthread_on_cpu_runs_as_interleaved_serial_code():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    vo, vi = s[B].split(B.op.axis[0], nparts=2)
    s[B].bind(vo, te.thread_axis("vthread"))
    text = str(tecc.lower(s, [A, B]))
    assert "vthread" not in text
    f = tecc.build(s, [A, B], target="llvm")
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a + 1)
