"""Bound inference as TVM's test_te_schedule_bound_inference*.py exercises it: the
region a stage attached with compute_at computes, under symbolic split factors,
tiles whose indices wrap (a modulo), and thread-local caches; split and tile extents
(factors larger than the axis, divisible symbolic extents); shared stages under
thread loops; a cache in a scan's update; a 2-D stencil; rfactor; the region a
tensor intrinsic reads; indices that are hard to simplify; a repacked layout.  Most
schedules are also built and run against numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, tir

from compat_te import build, rand, run


def _fused_split_by_a_variable():
    m, l, sp = te.var("m"), te.var("l"), te.var("s")
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    xo, _ = s[A2].split(s[A2].fuse(*A2.op.axis), sp)
    s[A1].compute_at(s[A2], xo)
    return s, (A, A1, A2), (m, l, sp), xo


def test_split_by_a_symbolic_factor_bounds_the_attached_stage():
    # TVM's test_bound_fusesplit1: rows of A1 that one tile of the fused, split A2 reads
    s, (_, A1, _), (_, l, sp), xo = _fused_split_by_a_variable()
    bounds = te.schedule.InferBound(s)
    dom = bounds[A1.op.axis[0]]
    tecc.testing.assert_prim_expr_equal(dom.min, tir.indexdiv(xo.var * sp, l))
    want = tir.indexdiv((xo.var + 1) * sp - 1, l) - tir.indexdiv(xo.var * sp, l) + 1
    ana = tecc.arith.Analyzer()
    for vs, vl, vx in [(1, 1, 1), (3, 5, 2), (5, 2, 4), (4, 4, 3)]:
        values = {sp: tir.const(vs, "int32"), l: tir.const(vl, "int32"), xo.var: tir.const(vx, "int32")}
        got = ana.simplify(tir.stmt_functor.substitute(dom.extent, values))
        assert int(got) == int(ana.simplify(tir.stmt_functor.substitute(want, values)))


@pytest.mark.parametrize("M, L, S", [(5, 7, 3), (4, 4, 16), (3, 5, 1), (6, 2, 4)])
def test_split_by_a_symbolic_factor_runs(M, L, S):
    s, (A, _, A2), (_, _, sp), _ = _fused_split_by_a_variable()
    f = build(s, [A, A2, sp], "llvm")
    a, out = rand(M, L), np.zeros((M, L), "float32")
    f(a, out, S)
    np.testing.assert_allclose(out, a + 3)


def test_split_factor_must_be_an_integer():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(tecc.error.ScheduleError, match="split factor of axis 'i' must be an integer, got `x`"):
        s[B].split(B.op.axis[0], factor=te.var("x", "float32"))


def test_tile_read_through_a_modulo_is_bounded_per_tile():
    # TVM's test_bound_tile_mod: C.shared is written after a second cache_write over a
    # relayout; one tile of C reads 16 of its 64 rows (index (32*n.io + n.ii) // 2)
    A = te.placeholder((256, 256), name="A", dtype="float16")
    C = te.compute((256, 256), lambda n, m: A[n, m], name="C")
    s = te.create_schedule(C.op)
    s.cache_write(C, "local")
    n, m = C.op.axis
    _, _, ni, mi = s[C].tile(n, m, 128, 128)
    _, nii = s[C].split(ni, 2)
    s[C].fuse(nii, mi)
    C_shared = s.cache_write(C, "shared")
    s[C_shared].storage_align(C_shared.op.axis[2], 256, 8)
    n, m = s[C].op.axis
    _, _, ni, _ = s[C].tile(n, m, 128, 128)
    s[C].set_scope("global")
    niio, _ = s[C].split(ni, 32)
    s[C_shared].compute_at(s[C], niio)
    bounds = te.schedule.InferBound(s)
    assert int(bounds[s.stages[2].op.axis[2]].extent) == 16
    f = build(s, [A, C], "llvm")
    a, c = rand(256, 256, dtype="float16"), np.zeros((256, 256), "float16")
    run(f, a, c)
    np.testing.assert_array_equal(c, a)


# ---------------------------------------------------------------------------------------
# split and tile extents
# ---------------------------------------------------------------------------------------
def _copy_plus_three(m, l):
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j] * 2, name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    return A, A1, A2


def test_normalize_leaves_the_tiles_and_their_bounds_alone():
    # TVM's test_bound2: A1 attached at the tile's outer column loop holds one 8x8 tile
    A, A1, A2 = _copy_plus_three(te.var("m"), te.var("l"))
    s = te.create_schedule(A2.op)
    xo, yo, xi, yi = s[A2].tile(*A2.op.axis, 8, 8)
    s.normalize()
    assert tuple(s[A2].leaf_iter_vars) == (xo, yo, xi, yi)
    s[A1].compute_at(s[A2], yo)
    bounds = te.schedule.InferBound(s)
    assert [int(bounds[ax].extent) for ax in A1.op.axis] == [8, 8]
    a, out = rand(13, 10), np.zeros((13, 10), "float32")
    run(build(s, [A, A2], "llvm"), a, out)
    np.testing.assert_allclose(out, a * 2 + 3, rtol=1e-6)


@pytest.mark.parametrize("target", ["cuda"])
def test_shared_stage_under_a_thread_bound_nparts_split_covers_the_block(target):
    # TVM's test_bound3: 16 threads share A1, attached inside their loop, so A1 holds
    # the block's 32 rows (not one thread's 2) and one 16-column tile
    A, A1, A2 = _copy_plus_three(te.var("m"), te.var("l"))
    s = te.create_schedule(A2.op)
    s[A1].set_scope("shared")
    xo, xi = s[A2].split(A2.op.axis[0], 32)
    xi0, xi1 = s[A2].split(xi, nparts=16)
    tx = te.thread_axis("threadIdx.x")
    s[A2].bind(xi0, tx)
    yo, yi = s[A2].split(A2.op.axis[1], 16)
    s.normalize()
    s[A2].reorder(xo, xi0, yo, xi1, yi)
    s[A1].compute_at(s[A2], yo)
    bounds = te.schedule.InferBound(s)
    assert [int(bounds[ax].extent) for ax in A1.op.axis] == [32, 16]
    # run it: blocks over xo, and the threads fill A1 together (2 rows each)
    s[A2].bind(xo, te.thread_axis("blockIdx.x"))
    rows, _ = s[A1].split(A1.op.axis[0], nparts=16)
    s[A1].bind(rows, tx)
    a, out = rand(40, 20), np.zeros((40, 20), "float32")
    run(build(s, [A, A2], target), a, out)
    np.testing.assert_allclose(out, a * 2 + 3, rtol=1e-6)


@pytest.mark.parametrize("how", ["factor", "nparts"])
def test_split_larger_than_the_extent_keeps_the_extent(how):
    # TVM's test_bound_split_ext_less_than_factor / _naprts: 8 elements split by 32
    I = te.placeholder((8,), name="I")
    EF = te.compute((8,), lambda i: I[i] * 2, name="EF")
    E = te.compute((8,), lambda i: EF[i] * 2, name="E")
    s = te.create_schedule(E.op)
    xo, xi = s[E].split(E.op.axis[0], **{how: 32})
    s[EF].compute_at(s[E], xo)
    bounds = te.schedule.InferBound(s)
    if how == "factor":   # one block of all 8
        assert (int(bounds[xo].extent), int(bounds[xi].extent), int(bounds[EF.op.axis[0]].extent)) == (1, 8, 8)
    else:                 # 8 parts of one
        assert (int(bounds[xo].extent), int(bounds[xi].extent), int(bounds[EF.op.axis[0]].extent)) == (8, 1, 1)
    i, e = rand(8), np.zeros(8, "float32")
    run(build(s, [I, E], "llvm"), i, e)
    np.testing.assert_allclose(e, i * 4, rtol=1e-6)


def test_split_and_tile_of_divisible_symbolic_extents():
    # TVM's test_bound_split_divisible / test_bound_tile_divisible: 8*m by 8 gives m
    m, l = te.var("m"), te.var("l")
    A = te.placeholder((8 * m, l), name="A")
    B = te.compute((8 * m, l), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], 8)
    bounds = te.schedule.InferBound(s)
    assert bounds[xo].extent.same_as(m) and int(bounds[xi].extent) == 8

    A = te.placeholder((8 * m, 32 * l), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(*B.op.axis, 8, 32)
    bounds = te.schedule.InferBound(s)
    assert bounds[xo].extent.same_as(m) and bounds[yo].extent.same_as(l)
    assert (int(bounds[xi].extent), int(bounds[yi].extent)) == (8, 32)
    f = build(s, [A, B, m, l], "llvm")
    a, b = rand(16, 32), np.zeros((16, 32), "float32")
    f(a, b, 2, 1)
    np.testing.assert_array_equal(b, a)


def test_fused_loop_of_constant_width_split_by_three():
    # TVM's test_bound_fusesplit2: 6 columns, fused, in blocks of 3; block 5 covers
    # row 2, columns 3..5
    m = te.var("m")
    A, A1, A2 = _copy_plus_three(m, 6)
    s = te.create_schedule(A2.op)
    xo, _ = s[A2].split(s[A2].fuse(*A2.op.axis), 3)
    s[A1].compute_at(s[A2], xo)
    bounds = te.schedule.InferBound(s)
    five = {xo.var: tir.const(5, "int32")}
    ana = tecc.arith.Analyzer()
    got = [[int(ana.simplify(tir.stmt_functor.substitute(getattr(bounds[ax], f), five))) for f in ("min", "extent")]
           for ax in A1.op.axis]
    assert got == [[2, 1], [3, 3]]
    a, out = rand(5, 6), np.zeros((5, 6), "float32")
    run(build(s, [A, A2], "llvm"), a, out)
    np.testing.assert_allclose(out, a * 2 + 3, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# regions that readers fix: a scan's update, a 2-D stencil, an rfactor, a thread nest
# ---------------------------------------------------------------------------------------
def test_local_cache_attached_in_a_scan_update_holds_one_tile():
    # TVM's test_bound_scan: the update's columns split by 4; the cache holds 4 of them
    m, n = te.var("m"), te.var("n")
    P = te.placeholder((m, n), name="P")
    X = te.compute((m, n), lambda i, j: P[i, j] * 2, name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    res = te.scan(init, update, state)
    s = te.create_schedule(res.op)
    XX = s.cache_read(X, "local", update)
    xo, _ = s[update].split(update.op.axis[1], factor=4)
    s[XX].compute_at(s[update], xo)
    s = s.normalize()
    bounds = te.schedule.InferBound(s)
    te.schedule.ScheduleOps(s, bounds)
    assert [int(bounds[ax].extent) for ax in XX.op.axis] == [1, 4]
    p, out = rand(5, 6), np.zeros((5, 6), "float32")
    run(build(s, [P, res], "llvm"), p, out)
    np.testing.assert_allclose(out, np.cumsum(p * 2, axis=0), rtol=1e-5)


def test_five_point_stencil_attached_per_point_needs_a_3x3_region():
    # TVM's test_bound_blur
    n = 12
    A = te.compute((n, n), lambda i, j: (i * n + j).astype("float32"), name="A")
    B = te.compute((n - 2, n - 2), lambda y, x: A[y + 1, x + 1] + A[y, x + 1] + A[y + 2, x + 1]
                   + A[y + 1, x + 2] + A[y + 1, x], name="B")
    s = te.create_schedule(B.op)
    s[A].compute_at(s[B], B.op.axis[1])
    s = s.normalize()
    bounds = te.schedule.InferBound(s)
    assert [int(bounds[ax].extent) for ax in A.op.axis] == [3, 3]
    out = np.zeros((n - 2, n - 2), "float32")
    run(build(s, [B], "llvm"), out)
    a = np.arange(n * n, dtype="float32").reshape(n, n)
    want = a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2]
    np.testing.assert_array_equal(out, want)


def test_rfactor_of_a_one_element_output_has_a_unit_data_axis():
    # TVM's test_bound_rfactor: B has one element, so BF is 4 parts x 1
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k, where=(i > 1)), name="B")
    s = te.create_schedule(B.op)
    kf, _ = s[B].split(k, nparts=4)
    BF = s.rfactor(B, kf)
    s = s.normalize()
    bounds = te.schedule.InferBound(s)
    assert [int(bounds[ax].extent) for ax in BF.op.axis] == [4, 1]
    a, b = rand(10), np.full(1, 7.0, "float32")
    f = build(s, [A, B, n], "llvm")
    f(a, b, 10)
    np.testing.assert_array_equal(b, [0.0])  # i > 1 never holds for i == 0


@pytest.mark.parametrize("target", ["cuda"])
def test_shared_stage_bound_to_the_same_thread_index_covers_the_block(target):
    # TVM's test_bound_nest_thread: under A3's thread loop, the local A1 holds one
    # element and the shared A2 (whose own loop is bound to threadIdx.x) the block's 32
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    A1 = te.compute((m,), lambda i: A[i] * 2, name="A1")
    A2 = te.compute((m,), lambda i: A1[i] + 2, name="A2")
    A3 = te.compute((m,), lambda i: A2[i] + 3, name="A3")
    s = te.create_schedule(A3.op)
    s[A2].set_scope("shared")
    s[A1].set_scope("local")
    tx = te.thread_axis("threadIdx.x")
    bx, t = s[A3].split(A3.op.axis[0], factor=32)
    s[A3].bind(bx, te.thread_axis("blockIdx.x"))
    s[A3].bind(t, tx)
    s[A2].compute_at(s[A3], t)
    _, xi = s[A2].split(A2.op.axis[0], nparts=1)
    s[A2].bind(xi, tx)
    s[A1].compute_at(s[A3], t)
    s = s.normalize()
    bounds = te.schedule.InferBound(s)
    assert int(bounds[A1.op.axis[0]].extent) == 1
    assert int(bounds[A2.op.axis[0]].extent) == 32
    assert bounds[A3.op.axis[0]].extent.same_as(m)
    a, out = rand(70), np.zeros(70, "float32")
    run(build(s, [A, A3], target), a, out)
    np.testing.assert_allclose(out, a * 2 + 5, rtol=1e-6)


def test_gemm_caches_bounds_per_block_and_per_thread():
    # TVM's test_gemm_bound, smaller: blocks of 8x8 outputs, 4x4 threads; each thread
    # accumulates 2x2 outputs locally, the shared tiles hold the block's 8 rows
    n, nthread, scale = 32, 4, 2
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared", [CC])
    BB = s.cache_read(B, "shared", [CC])
    by, yi = s[C].split(C.op.axis[0], factor=scale * nthread)
    bx, xi = s[C].split(C.op.axis[1], factor=scale * nthread)
    s[C].reorder(by, bx, yi, xi)
    ty, yi = s[C].split(yi, nparts=nthread)
    tx, xi = s[C].split(xi, nparts=nthread)
    s[C].reorder(ty, tx, yi, xi)
    thread_y, thread_x = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.x")
    for ax, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x")):
        s[C].bind(ax, te.thread_axis(tag))
    s[C].bind(ty, thread_y)
    s[C].bind(tx, thread_x)
    s[CC].reorder(k, *CC.op.axis)
    s[CC].compute_at(s[C], tx)
    for T in (AA, BB):
        s[T].compute_at(s[CC], k)
        t_y, rest = s[T].split(s[T].op.axis[0], nparts=nthread)
        t_x, _ = s[T].split(rest, nparts=nthread)
        s[T].bind(t_y, thread_y)
        s[T].bind(t_x, thread_x)
    s = s.normalize()
    bounds = te.schedule.InferBound(s)
    assert int(bounds[AA.op.axis[0]].extent) == int(bounds[BB.op.axis[0]].extent) == 8
    assert [int(bounds[ax].extent) for ax in CC.op.axis] == [2, 2]


def test_region_a_tensor_intrinsic_reads_bounds_its_producer():
    # TVM's test_bound_tensor_compute_op: C's rows read three rows of B each, so only
    # rows 0..9 of B are computed
    w = 6
    a = te.placeholder((3, w), name="a")
    c = te.compute((1, w), lambda _, j: a[0, j] + a[1, j] + a[2, j], name="c")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        src, dst = (ib.buffer_ptr(b) for b in (ins[0], outs[0]))
        with ib.for_range(0, w, name="v") as v:
            dst[0, v] = src[0, v] + src[1, v] + src[2, v]
        return ib.get()

    rows3 = te.decl_tensor_intrin(c.op, body, default_buffer_params={"offset_factor": 1})
    A = te.placeholder((20, w), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((8, w), lambda i: rows3(B[i:i + 3, 0:w]), name="C")
    s = te.create_schedule(C.op)
    bounds = te.schedule.InferBound(s)
    assert (int(bounds[B.op.axis[0]].min), int(bounds[B.op.axis[0]].extent)) == (0, 10)
    x, out = rand(20, w), np.zeros((8, w), "float32")
    run(build(s, [A, C], "llvm"), x, out)
    np.testing.assert_allclose(out, 2 * (x[0:8] + x[1:9] + x[2:10]), rtol=1e-5)


def test_indices_that_are_hard_to_simplify_stay_within_the_producer():
    # TVM's test_bound_simplification_failure: each index below is 0 or i % 2 for
    # i >= 0; bound inference must not widen A's 2 elements
    A = te.compute((2,), lambda j: (j + 10).astype("float32"), name="A")
    cases = [
        lambda i: te.min(3 * i, 4 * i) + te.min(-3 * i, -2 * i),
        lambda i: te.min(3 * i, 4 * i) + te.max(-3 * i, -4 * i),
        lambda i: -2 * tir.truncdiv(i, 2) - te.min(i, 0 - i),
        lambda i: i + (0 - i),
        lambda i: i,  # out of A's bounds for i >= 2: the bound is still at most 2
    ]
    for index in cases:
        B = te.compute((10,), lambda i: A[index(i)], name="B")
        s = te.create_schedule(B.op).normalize()
        bounds = te.schedule.InferBound(s)
        assert int(bounds[A.op.axis[0]].extent) <= 2
        tecc.lower(s, [B, A], simple_mode=True)
    B = te.compute((10,), lambda i: A[cases[0](i)] + A[cases[2](i)] * 100, name="B")
    out = np.zeros(10, "float32")
    run(build(te.create_schedule(B.op), [B], "llvm"), out)
    np.testing.assert_array_equal(out, 10 + (10 + np.arange(10) % 2) * 100)


@pytest.mark.parametrize("channels, block", [(4, 4), (7, 4), (3, 3)])
def test_repacked_channels_keep_a_whole_inner_block(channels, block):
    # TVM's test_bound_block: channels repacked into blocks of 4 (the last padded);
    # reading them back needs the whole block, or all channels when there are fewer
    size = 4
    chunks = -(-channels // size)
    tail = channels % size
    A = te.placeholder((1, channels, 3, 3), name="A")

    def repack_at(n, c, h, w, v):
        pad = tir.all(c == chunks - 1, v >= tail)
        return tir.if_then_else(pad, tir.const(0, A.dtype), A[n, c * size + v, h, w])

    repack = te.compute((1, chunks, 3, 3, size), repack_at, name="repack")
    B = te.compute(A.shape, lambda n, c, h, w: repack[n, c // size, h, w, c % size], name="back")
    s = te.create_schedule(B.op)
    bounds = te.schedule.InferBound(s)
    assert int(bounds[repack.op.axis[4]].extent) == block
    if channels == 7:
        a, b = rand(1, 7, 3, 3), np.zeros((1, 7, 3, 3), "float32")
        run(build(s, [A, B], "llvm"), a, b)
        np.testing.assert_array_equal(b, a)
