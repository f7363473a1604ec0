"""Schedule primitives as TVM's classic-TE schedule tests use them -- split with a
pragma, compute_at, compute_inline (of multi-output reductions too), cache_read and
cache_write (after split/reorder: a relayout; of a reduction; of two outputs),
reductions whose extent is the data axis, fuse() of no axes and of a data axis with a
reduction axis, stage predicates of local/shared stages, the AutoInline helpers,
InferBound/ScheduleOps and schedule records -- each lowered, then built for "llvm"
and, bound to threads, for "cuda" (the emulator, race-checked), against numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.driver.build_module import schedule_to_module
from compat_te import TARGETS, bind_blocks_threads, bind_fused, build, build_run, rand, run
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _collect(stmt, f):
    found = []
    tir.stmt_functor.post_order_visit(stmt, lambda x: found.append(x) if f(x) else None)
    return found


def _infer_and_schedule(s):
    """TVM's ``InferBound`` + ``ScheduleOps`` pair on a normalized schedule."""
    s = s.normalize()
    bounds = te.schedule.InferBound(s)
    assert isinstance(bounds, tecc.container.Map)
    stmt = te.schedule.ScheduleOps(s, bounds)
    assert isinstance(stmt, tir.Stmt)
    return stmt


def test_te_const_is_an_int_imm_of_its_dtype():
    x = te.const(1, "int32")
    assert x.dtype == "int32" and isinstance(x, tir.IntImm)


# ---------------------------------------------------------------------------------------
# copies: schedule_to_module, split + pragma, compute_at
# ---------------------------------------------------------------------------------------
def _copy(m, l):
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j], name="A1")
    return A, A1


@pytest.mark.parametrize("target", TARGETS)
def test_schedule_to_module_of_a_copy(target):
    A, A1 = _copy(te.var("m"), te.var("l"))
    s = te.create_schedule(A1.op)
    mod = schedule_to_module(s, [A, A1])
    assert isinstance(mod, tecc.IRModule) and isinstance(mod["main"], tir.PrimFunc)
    if target == "cuda":
        bind_fused(s[A1])
    a, a1 = rand(5, 7), np.zeros((5, 7), "float32")
    build_run(s, [A, A1], [a, a1], target)
    np.testing.assert_array_equal(a1, a)


@pytest.mark.parametrize("target", TARGETS)
def test_split_with_an_unroll_pragma_on_the_outer_loop(target):
    A, A1 = _copy(te.var("m"), te.var("l"))
    s = te.create_schedule(A1.op)
    xo, xi = s[A1].split(A1.op.axis[0], 8)
    s[A1].pragma(xo, "auto_unroll_max_step", 10)
    f = schedule_to_module(s, [A, A1])["main"]
    (outer,) = _collect(f.body, lambda x: isinstance(x, tir.For) and x.loop_var is xo.var)
    assert int(dict(outer.annotations)["pragma_auto_unroll_max_step"]) == 10
    if target == "cuda":
        s[A1].bind(xi, te.thread_axis("threadIdx.x"))
        s[A1].bind(s[A1].op.axis[1], te.thread_axis("blockIdx.x"))
    a, a1 = rand(13, 3), np.zeros((13, 3), "float32")
    build_run(s, [A, A1], [a, a1], target)
    np.testing.assert_array_equal(a1, a)


@pytest.mark.parametrize("target", TARGETS)
def test_compute_at_the_outer_loop_of_a_split(target):
    # (on the GPU A1 lives in shared memory, which needs a constant size)
    m, l = (te.var("m"), te.var("l")) if target == "llvm" else (19, 6)
    A, A1 = _copy(m, l)
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(A2.op.axis[0], 8)
    s[A1].compute_at(s[A2], xo)
    assert s[A1].attach_type == te.AttachType.SCOPE and s[A1].attach_ivar is xo
    if target == "cuda":
        tx = te.thread_axis("threadIdx.x")
        s[A2].bind(xo, te.thread_axis("blockIdx.x"))
        s[A2].bind(xi, tx)
        s[A1].bind(s[A1].op.axis[0], tx)
    a, a2 = rand(19, 6), np.zeros((19, 6), "float32")
    build_run(s, [A, A2], [a, a2], target)
    np.testing.assert_allclose(a2, a + 3)


@pytest.mark.parametrize("target", TARGETS)
def test_constant_bounds_infer_and_schedule(target):
    n = 128
    A = te.placeholder((n,), name="A")
    A1 = te.compute((n,), lambda i: A[i] + 1, name="A1")
    s = te.create_schedule(A1.op)
    xo, xi = s[A1].split(A1.op.axis[0], 8)
    bounds = te.schedule.InferBound(s)
    assert isinstance(bounds, tecc.container.Map)
    assert int(bounds[xo].extent) == 16 and int(bounds[xi].extent) == 8
    assert te.schedule.ScheduleOps(s, bounds) is not None
    if target == "cuda":
        s[A1].bind(xo, te.thread_axis("blockIdx.x"))
        s[A1].bind(xi, te.thread_axis("threadIdx.x"))
    a, a1 = rand(n), np.zeros(n, "float32")
    build_run(s, [A, A1], [a, a1], target)
    np.testing.assert_allclose(a1, a + 1)


# ---------------------------------------------------------------------------------------
# compute_inline
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_inline_into_an_argmax_over_the_reduction_variable(target):
    def argmax_comp(x, y):
        return tir.Select(x[1] >= y[1], x[0], y[0]), tir.Select(x[1] >= y[1], x[1], y[1])

    def argmax_init(idx_typ, val_typ):
        return tir.const(-1, idx_typ), te.min_value(val_typ)

    argmax = te.comm_reducer(argmax_comp, argmax_init, name="argmax")
    m, n = te.var("m"), te.var("n")
    val = te.placeholder((m, n), name="val")
    val1 = te.compute((m, n), lambda i, j: val[i, j] + 1, name="val1")
    val2 = te.compute((m, n), lambda i, j: te.exp(val1[i, j]), name="val2")
    k = te.reduce_axis((0, n), "k")
    T_idx, T_val = te.compute((m,), lambda i: argmax((k.var, val2[i, k]), axis=k), name="T")
    s = te.create_schedule(T_idx.op)
    s[val1].compute_inline()
    _infer_and_schedule(s)
    if target == "cuda":
        bind_fused(s[val2], 16)
        bind_blocks_threads(s[T_idx], T_idx.op.axis[0], 4)
    v = rand(7, 9)
    ti, tv = np.zeros(7, "int32"), np.zeros(7, "float32")
    build_run(s, [val, T_idx, T_val], [v, ti, tv], target)
    np.testing.assert_array_equal(ti, np.argmax(v, axis=1))
    np.testing.assert_allclose(tv, np.exp(v + 1).max(axis=1), rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_inline_mixed_with_compute_at(target):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    A1 = te.compute(A.shape, lambda *i: A(*i) + 1, name="A1")
    A2 = te.compute(A.shape, lambda *i: A1(*i) + 2, name="A2")
    C = te.compute((n,), lambda i: A2[i] + A1[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[A1].compute_at(s[C], xo)
    s[A2].compute_inline()
    _infer_and_schedule(s)
    if target == "cuda":
        tx = te.thread_axis("threadIdx.x")
        s[C].bind(xo, te.thread_axis("blockIdx.x"))
        s[C].bind(xi, tx)
        s[A1].bind(s[A1].op.axis[0], tx)
    lowered = str(tecc.lower(s, [A, C]))
    assert "A2" not in lowered
    a, c = rand(21), np.zeros(21, "float32")
    build_run(s, [A, C], [a, c], target)
    np.testing.assert_allclose(c, 2 * a + 4, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["elemwise", "broadcast", "injective"])
def test_auto_inline_turns_root_stages_into_inlined_ones(target, kind):
    m, n = te.var("m"), te.var("n")
    B = te.placeholder((m, n), name="B")
    C = te.placeholder((m, n), name="C")
    if kind == "elemwise":
        A = te.placeholder((m, n), name="A")
        T1 = te.compute((m, n), lambda i, j: A(i, j) * B(i, j), name="T1")
        auto_inline, ref = te.schedule.AutoInlineElemWise, lambda a, b, c: a * b + c
    elif kind == "broadcast":
        A = te.placeholder((1,), name="A")
        T1 = te.compute((m, n), lambda i, j: A(0) * B(i, j), name="T1", tag="broadcast")
        auto_inline, ref = te.schedule.AutoInlineBroadcast, lambda a, b, c: a[0] * b + c
    else:
        A = te.placeholder((m,), name="A")
        T1 = te.compute((m, n), lambda i, j: A(i) * B(i, j), name="T1")
        auto_inline, ref = te.schedule.AutoInlineInjective, lambda a, b, c: a[:, None] * b + c
    T2 = te.compute((m, n), lambda i, j: T1(i, j) + C(i, j), name="T2")
    s = te.create_schedule(T2.op)
    assert s[T1].attach_type == 1  # TVM's kGroupRoot
    auto_inline(s)
    assert s[T1].attach_type == 2  # TVM's kInline
    _infer_and_schedule(s)
    if target == "cuda":
        bind_fused(s[T2])
    a = rand(*{"elemwise": (4, 5), "broadcast": (1,), "injective": (4,)}[kind])
    b, c, t2 = rand(4, 5), rand(4, 5), np.zeros((4, 5), "float32")
    build_run(s, [A, B, C, T2], [a, b, c, t2], target)
    np.testing.assert_allclose(t2, ref(a, b, c), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# cache_read / cache_write
# ---------------------------------------------------------------------------------------
def _mul(m, n):
    A = te.placeholder((m, n), name="A")
    B = te.placeholder((m, n), name="B")
    C = te.compute((m, n), lambda i, j: A(i, j) * B(i, j), name="C")
    return A, B, C


@pytest.mark.parametrize("target", TARGETS)
def test_cache_read_and_cache_write_in_shared_memory(target):
    # (shared memory on the GPU needs a constant size)
    A, B, C = _mul(*((te.var("m"), te.var("n")) if target == "llvm" else (5, 19)))
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", readers=[C])
    CC = s.cache_write(C, "shared")
    s[AA].compute_at(s[CC], CC.op.axis[0])
    _infer_and_schedule(s)
    if target == "cuda":  # a block per row, the row's caches in shared memory
        tx = te.thread_axis("threadIdx.x")
        s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
        _, ctx = s[C].split(C.op.axis[1], factor=8)
        s[C].bind(ctx, tx)
        s[CC].compute_at(s[C], C.op.axis[0])
        for T in (CC, AA):
            _, t = s[T].split(s[T].op.axis[1], factor=8)
            s[T].bind(t, tx)
    a, b, c = rand(5, 19), rand(5, 19), np.zeros((5, 19), "float32")
    build_run(s, [A, B, C], [a, b, c], target)
    np.testing.assert_allclose(c, a * b, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_local_caches_in_the_middle_of_a_pipeline(target):
    # (symbolic sizes on the CPU, constant ones on the GPU; the schedule builds for cuda with either)
    m, n = (te.var("m"), te.var("n")) if target == "llvm" else (6, 7)
    A, B, C = _mul(m, n)
    D = te.compute((m, n), lambda i, j: C(i, j), name="D")
    s = te.create_schedule(D.op)
    AA = s.cache_read(A, "local", readers=[C])
    BB = s.cache_read(B, "local", readers=[C])
    CC = s.cache_read(C, "local", readers=[D])
    DD = s.cache_write(D, "local")
    _infer_and_schedule(s)
    if target == "cuda":  # every stage at D's thread: one element each
        bx, tx = bind_fused(s[D], 16)
        for T in (DD, CC, C, BB, AA):
            s[T].compute_at(s[D], tx)
    a, b, d = rand(6, 7), rand(6, 7), np.zeros((6, 7), "float32")
    build_run(s, [A, B, D], [a, b, d], target)
    np.testing.assert_allclose(d, a * b, rtol=1e-6)


def test_compute_at_a_fused_loop_of_symbolic_extent():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    C = te.compute((m, n), lambda i, j: A[i, j] * 2, name="C")
    D = te.compute((m, n), lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], s[D].fuse(*D.op.axis))
    a, d = rand(6, 7), np.zeros((6, 7), "float32")
    build_run(s, [A, D], [a, d], "llvm")
    np.testing.assert_allclose(d, a * 2 + 1, rtol=1e-6)


def _relayout(case, m, n):
    """TVM's test_schedule_cache_relayout1..4: cache_write after the output's loops
    were reordered or split."""
    if case == 1:
        A, B, C = _mul(m, n)
        s = te.create_schedule(C.op)
        s[C].reorder(C.op.axis[1], C.op.axis[0])
        return s, [A, B, C], [C], s.cache_write(C, "global"), lambda a, b: [a * b]
    A = te.placeholder((m * 4, n), name="A")
    B = te.placeholder((m * 4, n), name="B")
    if case == 2:
        C = te.compute(A.shape, lambda i, j: A(i, j) * B(i, j), name="C")
        s = te.create_schedule(C.op)
        xo, xi = s[C].split(C.op.axis[0], factor=4)
        s[C].reorder(xo, C.op.axis[1], xi)
        return s, [A, B, C], [C], s.cache_write(C, "global"), lambda a, b: [a * b]
    if case == 3:
        k = te.reduce_axis((0, n), "k")
        C = te.compute((A.shape[0],), lambda i: te.sum(A(i, k) * B(i, k), axis=k), name="C")
        s = te.create_schedule(C.op)
        s[C].split(C.op.axis[0], factor=4)
        return s, [A, B, C], [C], s.cache_write(C, "global"), lambda a, b: [(a * b).sum(axis=1)]
    C1, C2 = te.compute(A.shape, lambda *i: (A(*i) + 1, B(*i) / 2), name="C")
    s = te.create_schedule([C1.op, C2.op])
    return s, [A, B, C1, C2], [C1, C2], s.cache_write([C1, C2], "local"), lambda a, b: [a + 1, b / 2]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", [1, 2, 3, 4], ids=["reorder", "split_reorder", "reduction", "two_outputs"])
def test_cache_write_after_split_or_reorder_relayouts(target, case):
    # (symbolic sizes on the CPU, constant ones on the GPU; the schedule builds for cuda with either)
    m, n = (te.var("m"), te.var("n")) if target == "llvm" else (12 if case == 1 else 3, 5)
    s, args, outs, cache, ref = _relayout(case, m, n)
    if case == 4:
        assert len(cache) == 2 and cache[0].op is cache[1].op
        cache = cache[0]
    _infer_and_schedule(s)
    if target == "cuda":
        if case == 4:  # the local cache at the thread of its copy-out
            _, tx = bind_fused(s[outs[0]], 16)
            s[cache].compute_at(s[outs[0]], tx)
        else:  # the (global) cache and the copy-out: two kernels
            bind_fused(s[cache], 16)
            bind_fused(s[outs[0]], 16)
    a, b = rand(12, 5), rand(12, 5)
    results = [np.zeros(12, "float32") if len(o.shape) == 1 else np.zeros((12, 5), "float32") for o in outs]
    if case == 1 or target == "cuda":
        build_run(s, args, [a, b, *results], target)
    else:  # A's rows are m * 4: m cannot be read off the arrays' shapes, it is an argument
        build_run(s, args + [m], [a, b, *results, 3], target)
    for got, want in zip(results, ref(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_cache_reads_and_writes_of_a_two_output_compute_with_an_inlined_producer(target):
    shape = (10, 64)
    A = te.placeholder(shape, name="A")
    B = te.placeholder(shape, name="B")
    C = te.compute(shape, lambda *index: A(*index) + B(*index), name="C")
    F, E = te.compute(shape, lambda *index: (C(*index), C(*index) * B(*index)), name="F")
    s = te.create_schedule([F.op, E.op])
    AL = s.cache_read(A, "local", [C])
    BL = s.cache_read(B, "local", [C, E])
    CL = s.cache_write(C, "local")
    FL, EL = s.cache_write([F, E], "local")
    s[C].compute_inline()
    _infer_and_schedule(s)
    if target == "cuda":
        bx, tx = bind_fused(s[F], 64)
        for T in (FL, CL, AL, BL):
            s[T].compute_at(s[F], tx)
    a, b = rand(*shape), rand(*shape)
    f, e = np.zeros(shape, "float32"), np.zeros(shape, "float32")
    build_run(s, [A, B, F, E], [a, b, f, e], target)
    np.testing.assert_allclose(f, a + b, rtol=1e-6)
    np.testing.assert_allclose(e, (a + b) * b, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# reductions whose extent is the data axis
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_loop_dependent_reduce(target):
    X = te.placeholder(shape=(10,), name="x")

    def f(n):
        rv = te.reduce_axis((0, n))
        return te.sum(X[rv], axis=rv)

    Y = te.compute(X.shape, f, name="y")
    s = te.create_schedule([Y.op])
    if target == "cuda":
        s[Y].bind(Y.op.axis[0], te.thread_axis("threadIdx.x"))
    x, y = rand(10), np.zeros(10, "float32")
    build_run(s, [X, Y], [x, y], target)
    np.testing.assert_allclose(y, np.concatenate([[0], np.cumsum(x)[:-1]]), rtol=1e-6)


def _loop_dep_reference(x):
    out = []
    for n in range(len(x)):
        acc = np.float32(0.0 if n > 1 else n)
        for r in range(n):
            acc = max(acc + x[r], np.float32(n))
        out.append(acc)
    return np.array(out, "float32")


@pytest.mark.parametrize("target", TARGETS)
def test_regression_cache_write_of_a_reduction_over_the_data_axis(target):
    """cache_write of a reduction whose extent is the data axis ``n`` -- its reducer
    and init read ``n`` too -- failed with "variable ... is used but never bound"."""
    X = te.placeholder(shape=(10,), name="x")

    def f(n):
        rv = te.reduce_axis((0, n))
        init = lambda dtype: tir.Select(n > 1, tir.const(0, dtype), n.astype(dtype))  # noqa: E731
        mysum = te.comm_reducer(lambda x, y: te.max(x + y, n.astype("float32")), init, name="sum")
        return mysum(X[rv], axis=rv)

    Y = te.compute(X.shape, f, name="y")
    s = te.create_schedule([Y.op])
    if target == "llvm":
        s.cache_write(Y, "local")
    else:  # the cache at the root too (a global one: its own kernel), then the copy-out
        YL = s.cache_write(Y, "global")
        s[Y].bind(Y.op.axis[0], te.thread_axis("threadIdx.x"))
        s[YL].bind(YL.op.axis[0], te.thread_axis("threadIdx.x"))
    x, y = rand(10, low=-1.0, high=1.0), np.zeros(10, "float32")
    build_run(s, [X, Y], [x, y], target)
    np.testing.assert_allclose(y, _loop_dep_reference(x), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# fuse() of no axes, and of a data axis with a reduction axis
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_fuse_of_no_axes_on_a_rank0_output_then_split_into_20_parts(target):
    n = 10
    X = te.placeholder(shape=(n,), dtype="int32", name="X")
    k = te.reduce_axis((0, n))
    Y = te.compute((), lambda: te.sum(X[k], k), name="Y")
    s = te.create_schedule([Y.op])
    ax = s[Y.op].fuse(*Y.op.axis)
    axo, axi = s[Y.op].split(ax, nparts=20)
    if target == "cuda":
        s[Y].bind(axi, te.thread_axis("threadIdx.x"))
    f = build(s, [Y, X], target)
    y = tecc.nd.empty((), "int32", tecc.device(target, 0))
    x = tecc.nd.array(np.ones(n, "int32"), tecc.device(target, 0))
    run(f, y, x, check=False)  # TVM's nd.empty / nd.array arguments (checked below, on numpy ones)
    assert y.numpy() == n
    y_np = np.zeros((), "int32")
    run(f, y_np, np.arange(n, dtype="int32"))
    assert y_np == 45


@pytest.mark.parametrize("target", TARGETS)
def test_fuse_of_a_data_axis_with_the_reduction_axis(target):
    n = 10
    X = te.placeholder(shape=(n,), dtype="int32", name="X")
    k = te.reduce_axis((0, n))
    Y = te.compute((n,), lambda i: te.sum(X[k], k), name="Y")
    s = te.create_schedule([Y.op])
    ax = s[Y.op].fuse(*(list(Y.op.axis) + list(Y.op.reduce_axis)))
    assert list(s[Y].leaf_iter_vars) == [ax]
    if target == "cuda":  # one thread does everything: the fused loop runs serially
        s[Y].bind(s[Y].fuse(), te.thread_axis("threadIdx.x"))
    x, y = np.ones(n, "int32"), np.zeros(n, "int32")
    build_run(s, [Y, X], [y, x], target)
    np.testing.assert_array_equal(y, n)
    x2, y2 = np.arange(n, dtype="int32"), np.zeros(n, "int32")
    build_run(s, [Y, X], [y2, x2], target)
    np.testing.assert_array_equal(y2, 45)


# ---------------------------------------------------------------------------------------
# predicates of local/shared stages attached inside thread loops
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("thread_tag, scope", [("threadIdx.x", "local"), ("vthread", "local"),
                                               ("blockIdx.y", "shared")])
def test_local_stage_predicate_needs_no_guard(thread_tag, scope):
    m, n, p = 1, 3, 2
    A = te.placeholder((m, n, p), name="A")
    B = te.compute((m, n, p), lambda bi, bj, bk: A[bi, bj, bk], name="B")
    C = te.compute((m, n, p), lambda ci, cj, ck: B[ci, cj, ck], name="C")
    thread = te.thread_axis(thread_tag)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], s[C].op.axis[0])
    s[B].set_scope(scope)
    _, bni = s[B].split(s[B].op.axis[1], n)
    s[C].bind(s[C].op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(s[C].op.axis[1], thread)
    s[B].bind(bni, thread)
    body = tecc.lower(s, [A, C])["main"].body
    assert _collect(body, lambda x: isinstance(x, tir.IfThenElse)) == []
    a, c = rand(m, n, p), np.zeros((m, n, p), "float32")
    build_run(s, [A, C], [a, c], "cuda")
    np.testing.assert_array_equal(c, a)


def _local_stage_predicate2():
    A = te.placeholder((128,), name="A")
    B = te.compute((128,), lambda bi: A[bi] + 1, name="B")
    C = te.compute((128,), lambda ci: B[ci] + 2, name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [B])
    s[B].set_scope("shared")
    block_x = te.thread_axis("blockIdx.x")
    thread_x = te.thread_axis((0, 32), "threadIdx.x")
    oc, ic = s[C].split(s[C].op.axis[0], factor=64)
    ooc, ioc = s[C].split(oc, factor=2)
    _, iic = s[C].split(ic, factor=32)
    s[C].bind(ooc, block_x)
    s[C].bind(iic, thread_x)
    s[B].compute_at(s[C], ioc)
    _, ib = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(ib, thread_x)
    s[AA].compute_root()
    s[AA].compute_at(s[C], ooc)
    _, iaa = s[AA].split(s[AA].op.axis[0], factor=32)
    s[AA].bind(iaa, thread_x)
    return s, A, C


def test_local_and_shared_stages_under_thread_loops_need_no_guard():
    s, A, C = _local_stage_predicate2()
    body = tecc.lower(s, [A, C])["main"].body
    assert _collect(body, lambda x: isinstance(x, tir.IfThenElse)) == []
    a, c = rand(128), np.zeros(128, "float32")
    build_run(s, [A, C], [a, c], "cuda")
    np.testing.assert_allclose(c, a + 3, rtol=1e-6)


def test_local_cache_whose_loop_is_bound_to_the_thread_holds_one_threads_part():
    # A.local's own loop is bound to the thread index its consumers read by: the loop
    # covers every thread's reads (4 x 32, no guard), and the buffer holds one
    # thread's part, TVM's 97 elements from threadIdx.x on.  Each thread stores at
    # (index - threadIdx.x) the elements it reads itself; the result is checked.
    s, A, C = _local_stage_predicate2()
    body = tecc.lower(s, [A, C])["main"].body
    allocs = _collect(body, lambda x: isinstance(x, tir.Allocate) and x.buffer_var.name.startswith("A"))
    assert [int(a.extents[0]) for a in allocs] == [97]
    assert _collect(body, lambda x: isinstance(x, tir.IfThenElse)) == []
    a, c = rand(128), np.zeros(128, "float32")
    build_run(s, [A, C], [a, c], "cuda")
    np.testing.assert_allclose(c, a + 3, rtol=1e-6)


def test_cross_thread_reduction_under_a_consumer_bound_to_the_same_thread():
    # the reduction binds a *reduction* loop to threadIdx.x and its consumer binds an
    # extent-1 loop to threadIdx.x: every thread holds the one result, the buffer
    # is one element and every thread stores at 0 (not at -threadIdx.x)
    A = te.placeholder((6, 50), name="A")
    k = te.reduce_axis((0, 50), name="k")
    R = te.compute((6,), lambda i: te.sum(A[i, k], axis=k), name="R")
    O = te.compute((6,), lambda i: R[i] * 2.0, name="O")
    s = te.create_schedule(O.op)
    tx = te.thread_axis((0, 64), "threadIdx.x")
    bo, t = s[O].split(O.op.axis[0], factor=4)
    t, one = s[O].split(t, factor=1)
    s[O].bind(bo, te.thread_axis("blockIdx.x"))
    s[O].bind(t, te.thread_axis("threadIdx.y"))
    s[O].bind(one, tx)
    s[R].compute_at(s[O], t)
    _, ki = s[R].split(R.op.reduce_axis[0], factor=64)
    s[R].bind(ki, tx)
    a, o = rand(6, 50), np.zeros(6, "float32")
    build_run(s, [A, O], [a, o], "cuda")  # checked: no out-of-bounds store
    np.testing.assert_allclose(o, a.sum(axis=1) * 2, rtol=1e-5)


def test_local_cache_read_under_a_thread_loop_is_sized_for_one_thread():
    # the same schedule without binding the cache's own loop: each thread caches only
    # what it reads, from its thread index on -- TVM's 97 elements
    A = te.placeholder((128,), name="A")
    B = te.compute((128,), lambda bi: A[bi] + 1, name="B")
    C = te.compute((128,), lambda ci: B[ci] + 2, name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [B])
    s[B].set_scope("shared")
    thread_x = te.thread_axis((0, 32), "threadIdx.x")
    oc, ic = s[C].split(s[C].op.axis[0], factor=64)
    ooc, ioc = s[C].split(oc, factor=2)
    _, iic = s[C].split(ic, factor=32)
    s[C].bind(ooc, te.thread_axis("blockIdx.x"))
    s[C].bind(iic, thread_x)
    s[B].compute_at(s[C], ioc)
    _, ib = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(ib, thread_x)
    s[AA].compute_at(s[C], ooc)
    body = tecc.lower(s, [A, C])["main"].body
    allocs = _collect(body, lambda x: isinstance(x, tir.Allocate) and x.buffer_var.name.startswith("A"))
    assert [int(a.extents[0]) for a in allocs] == [97]
    a, c = rand(128), np.zeros(128, "float32")
    build_run(s, [A, C], [a, c], "cuda")
    np.testing.assert_allclose(c, a + 3, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_set_store_predicate_masks_the_stores_of_a_stage(target):
    n = 16
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    if target == "cuda":
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
    s[B].set_store_predicate(xi.var < 2)
    a, b = rand(n), np.full(n, -1.0, "float32")
    build_run(s, [A, B], [a, b], target)
    want = np.where(np.arange(n) % 4 < 2, a * 2, -1.0)
    np.testing.assert_allclose(b, want, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# schedule records
# ---------------------------------------------------------------------------------------
def test_schedule_record_of_a_tiled_gemm():
    with tecc.transform.PassContext(config={"te.keep_schedule_record": True}):
        M = K = N = 64
        k = te.reduce_axis((0, K), "k")
        A = te.placeholder((M, K), name="A")
        B = te.placeholder((K, N), name="B")
        C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
        s = te.create_schedule(C.op)
        assert len(s.schedule_record) == 1
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
        ko, ki = s[C].split(k, factor=8)
        s[C].reorder(mo, ko, no, mi, ki, ni)
        s[C].vectorize(ni)
        s[C].parallel(mo)
    assert list(s.primitive_record) == ["vanilla", "split", "split", "reorder", "split", "reorder",
                                        "vectorize", "parallel"]
    assert len(s.schedule_record) == 8
    # each record is a schedule of its own: the first has no split yet
    assert len(s.schedule_record[0][C].leaf_iter_vars) == 3
    assert len(s.schedule_record[-1][C].leaf_iter_vars) == 6
    a, b, c = rand(M, K), rand(K, N), np.zeros((M, N), "float32")
    build_run(s, [A, B, C], [a, b, c], "llvm")
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_schedule_record_only_inside_the_pass_context():
    assert len(te.create_schedule([]).schedule_record) == 0
    with tecc.transform.PassContext(config={"te.keep_schedule_record": True}):
        assert len(te.create_schedule([]).schedule_record) == 1
        empty = te.compute((), lambda *args: 0, name="empty_op")
        assert len(te.create_schedule(empty.op).schedule_record) == 1
