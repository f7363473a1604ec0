"""Reductions as TVM's classic-TE tests use them: sum/min/max with ``where=`` and
``init=``, tuple reducers (argmax, argmin, sum-and-product), rfactor (factor_axis 0
and 1, with ``init=``, across threads with ``set_store_predicate``), warp reductions,
and reductions whose producers are ``compute_inline``'d -- each built for "llvm" and,
scheduled for the GPU, for "cuda" (the emulator, race-checked), against numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from compat_te import TARGETS, bind_blocks_threads, build, build_run, rand, run, source
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)

# the identities of te.min / te.max: +-FLT_MAX, as TVM's (test_float32_max_value_and_min_value_are_finite_as_in_tvm)
MIN_IDENTITY = te.max_value("float32").value
MAX_IDENTITY = te.min_value("float32").value


# ---------------------------------------------------------------------------------------
# sum / min / max with where= over a compute_inline'd mask
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reducer, np_reducer, identity", [
    (te.sum, np.sum, 0.0), (te.min, np.min, MIN_IDENTITY), (te.max, np.max, MAX_IDENTITY)],
    ids=["sum", "min", "max"])
def test_reduce_prims_where_an_inlined_select_mask_holds(target, reducer, np_reducer, identity):
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    R = te.compute((n,), lambda i: tir.Select(i > 1, 1, 0), name="R")
    k = te.reduce_axis((0, m))
    B = te.compute((n,), lambda i: reducer(A[i, k], axis=k, where=R[i] == 1), name="B")
    s = te.create_schedule(B.op)
    s[R].compute_inline()
    xo, xi = s[B].split(B.op.axis[0], factor=1)
    if target == "cuda":
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
    f = build(s, [A, B], tecc.target.Target(target, "llvm"), name="myreduce")
    assert f.entry_name == "myreduce"
    a, b = rand(37, 19), np.zeros(37, "float32")
    run(f, a, b)
    np.testing.assert_allclose(b[2:], np_reducer(a[2:], axis=1), rtol=1e-5)
    # where= never holds on rows 0 and 1: they keep the reducer's identity
    np.testing.assert_array_equal(b[:2], np.float32(identity))


def test_float32_max_value_and_min_value_are_finite_as_in_tvm():
    assert te.max_value("float32").value == float(np.finfo("float32").max)
    assert te.min_value("float32").value == -float(np.finfo("float32").max)


# ---------------------------------------------------------------------------------------
# init=
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_init_constant_of_a_rank0_sum(target):
    n = 1027
    A = te.placeholder((tecc.runtime.convert(n),), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((), lambda: te.sum(A[k], axis=k, init=10.0), name="B")
    s = te.create_schedule(B.op)
    if target == "cuda":
        # (tecc refuses init= in a cross-thread reduction): 64 partial sums, one per
        # thread, then their sum from the init constant on the one thread of a fused
        # rank-0 axis
        kf, _ = s[B].split(k, nparts=64)
        BF = s.rfactor(B, kf)
        s[BF].bind(BF.op.axis[0], te.thread_axis("threadIdx.x"))
        s[B].bind(s[B].fuse(), te.thread_axis("threadIdx.x"))
    mod = tecc.lower(s, [A, B])
    assert isinstance(mod, tecc.IRModule)
    f = build(mod, None, target, name="mysum")
    a, b = rand(n), np.zeros((), "float32")
    run(f, a, b)
    np.testing.assert_allclose(b, 10.0 + a.sum(), rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_init_tensor_starts_each_sum_from_its_element(target):
    n = 33
    A, C, I = (te.placeholder((n, n), name=x) for x in "ACI")
    k = te.reduce_axis((0, n))
    B = te.compute((n, n), lambda i, j: te.sum(A[i, k] * C[k, j], axis=k, init=I[i, j]), name="B")
    s = te.create_schedule(B.op)
    if target == "cuda":
        s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
        s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))
    f = build(tecc.lower(s, [A, C, I, B]), None, target, name="mmult")
    a, c, i = rand(n, n), rand(n, n), rand(n, n)
    b = np.zeros((n, n), "float32")
    run(f, a, c, i, b)
    np.testing.assert_allclose(b, i + a @ c, rtol=1e-4)


# ---------------------------------------------------------------------------------------
# rfactor
# ---------------------------------------------------------------------------------------
def _rank0_sum(n):
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((), lambda: te.sum(A[k], axis=k), name="B")
    return A, k, B


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("factor_axis", [None, 0])
def test_rfactor_of_a_rank0_sum_into_four_parts(target, factor_axis):
    n = 1027
    A, k, B = _rank0_sum(n)
    s = te.create_schedule(B.op)
    kf, _ = s[B].split(k, nparts=4)
    BF = s.rfactor(B, kf) if factor_axis is None else s.rfactor(B, kf, factor_axis)
    assert tuple(int(x) for x in BF.shape) == (4,)
    if target == "llvm":
        s[BF].parallel(BF.op.axis[0])
    else:  # the four parts on four threads, summed across them
        tx = te.thread_axis("threadIdx.x")
        s[B].bind(s[B].op.reduce_axis[0], tx)
        s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
        s[B].set_store_predicate(tx.var.equal(0))
    f = build(tecc.lower(s, [A, B]), None, target, name="mysum")
    a, b = rand(n), np.zeros((), "float32")
    run(f, a, b)
    np.testing.assert_allclose(b, a.sum(), rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("factor_axis", [0, 1])
def test_regression_rfactor_keeps_the_reductions_init(target, factor_axis):
    """rfactor used to drop ``init=``: the final sum over the partials started from 0,
    not from I."""
    n = 17
    A, C, I = (te.placeholder((n, n), name=x) for x in "ACI")
    k = te.reduce_axis((0, n))
    B = te.compute((n, n), lambda i, j: te.sum(A[i, k] * C[k, j], axis=k, init=I[i, j]), name="B")
    s = te.create_schedule(B.op)
    kf, _ = s[B].split(k, nparts=4)
    BF = s.rfactor(B, kf, factor_axis)
    want_shape = [n, n]
    want_shape.insert(factor_axis, 4)
    assert [int(x) for x in BF.shape] == want_shape
    if target == "llvm":
        s[BF].parallel(BF.op.axis[0])
    else:  # two kernels: the partials, then their sum from I
        bx, tx = s[BF].split(s[BF].fuse(*BF.op.axis), factor=64)
        s[BF].bind(bx, te.thread_axis("blockIdx.x"))
        s[BF].bind(tx, te.thread_axis("threadIdx.x"))
        s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
        s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))
    f = build(s, [A, C, I, B], target, name="mmult")
    a, c, i = rand(n, n), rand(n, n), rand(n, n)
    b = np.zeros((n, n), "float32")
    run(f, a, c, i, b)
    np.testing.assert_allclose(b, i + a @ c, rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_threads_with_where_and_a_store_predicate(target):
    m, n, nthread = 10, 259, 16
    A = te.placeholder((tecc.runtime.convert(m), tecc.runtime.convert(n)), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k, where=i > 1), name="B")
    s = te.create_schedule(B.op)
    _, kf = s[B].split(k, factor=nthread)
    BF = s.rfactor(B, kf)
    if target == "cuda":
        bx, ty = s[B].split(s[B].op.axis[0], factor=nthread)
        s[B].bind(bx, te.thread_axis("blockIdx.x"))
        s[B].bind(ty, te.thread_axis("threadIdx.y"))
        tx = te.thread_axis("threadIdx.x")
        s[B].bind(s[B].op.reduce_axis[0], tx)
        s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
        s[B].set_store_predicate(tx.var.equal(0))
    f = build(tecc.lower(s, [A, B]), None, target, name="mysum")
    a, b = rand(m, n), np.zeros(m, "float32")
    run(f, a, b)
    want = a.sum(axis=1)
    want[:2] = 0
    np.testing.assert_allclose(b, want, rtol=1e-4)


def _rfactor_elemwise_threads(m, n, nthread):
    """B = sum_k A (rfactor'd over threadIdx.x), BB = B + 1 (inlined), C = BB + 1;
    B is attached under C's threadIdx.y loop."""
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    BB = te.compute((m,), lambda i: B[i] + 1, name="BB")
    C = te.compute((m,), lambda i: BB[i] + 1, name="C")
    s = te.create_schedule(C.op)
    s[BB].compute_inline()
    bx, ty = s[C].split(s[C].op.axis[0], factor=nthread)
    _, kf = s[B].split(k, factor=nthread)
    BF = s.rfactor(B, kf)
    s[B].compute_at(s[C], ty)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    return s, A, B, C, tx


def test_rfactor_elemwise_threads_with_store_predicates():
    m, n = 10, 1025
    s, A, B, C, tx = _rfactor_elemwise_threads(m, n, 16)
    s[B].set_store_predicate(tx.var.equal(0))
    s[C].set_store_predicate(tx.var.equal(0))
    f = build(tecc.lower(s, [A, C]), None, "cuda", name="mysum")
    a, c = rand(m, n), np.zeros(m, "float32")
    run(f, a, c)
    np.testing.assert_allclose(c, a.sum(axis=1) + 2, rtol=1e-4)


@pytest.mark.parametrize("m", [10, 16, 37])
def test_regression_cross_thread_reduction_under_another_stages_threadIdx_y_loop(m):
    """A cross-thread reduction attached (compute_at) under C's threadIdx.y loop.  The
    rows of a block used to race on the reduction's scratch space ('red_result'), and
    C came out wrong.  Without a store predicate every threadIdx.x thread of a row
    writes the same value to C: the only finding the checker may report, on any
    block."""
    s, A, B, C, _ = _rfactor_elemwise_threads(m, 200, 16)
    f = build(s, [A, C], "cuda")
    a, c = rand(m, 200), np.zeros(m, "float32")
    findings = f.check(a, c, max_blocks=None, max_findings=50)
    assert [x for x in findings if x.buffer != "C"] == [], "\n".join(str(x) for x in findings)
    assert all(x.kind == "race" for x in findings)
    run(f, a, c, check=False)
    np.testing.assert_allclose(c, a.sum(axis=1) + 2, rtol=1e-4)


# ---------------------------------------------------------------------------------------
# tuple reducers
# ---------------------------------------------------------------------------------------
def _arg_reducer(name, better):
    def fcombine(x, y):
        take_x = better(x[1], y[1])
        return tir.Select(take_x, x[0], y[0]), tir.Select(take_x, x[1], y[1])

    def fidentity(t0, t1):
        worst = te.min_value(t1) if name == "argmax" else te.max_value(t1)
        return tir.const(-1, t0), worst

    return te.comm_reducer(fcombine, fidentity, name=name)


ARGMAX = _arg_reducer("argmax", lambda a, b: a >= b)
ARGMIN = _arg_reducer("argmin", lambda a, b: a <= b)


def _arg_reduce(reducer, m, n):
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="float32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: reducer((idx[i, k], val[i, k]), axis=k), name="T")
    return idx, val, k, T0, T1


def _arg_inputs(h, w):
    return np.repeat(np.arange(w, dtype="int32")[None, :], h, axis=0), rand(h, w)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reducer, np_arg, np_val", [(ARGMAX, np.argmax, np.max), (ARGMIN, np.argmin, np.min)],
                         ids=["argmax", "argmin"])
def test_arg_reduction_with_a_tuple_reducer(target, reducer, np_arg, np_val):
    idx, val, _, T0, T1 = _arg_reduce(reducer, te.size_var("m"), te.size_var("n"))
    assert T0.op is T1.op and (T0.value_index, T1.value_index) == (0, 1)
    s = te.create_schedule(T0.op)
    if target == "cuda":
        bind_blocks_threads(s[T0], T0.op.axis[0], 4)
    f = build(tecc.lower(s, [idx, val, T0, T1]), None, target, name="argmax")
    h, w = 12, 16
    i_np, v_np = _arg_inputs(h, w)
    r0, r1 = np.zeros(h, "int32"), np.zeros(h, "float32")
    run(f, i_np, v_np, r0, r1)
    np.testing.assert_array_equal(r0, np_arg(v_np, axis=1))
    np.testing.assert_array_equal(r1, np_val(v_np, axis=1))


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_argmax_across_threads(target):
    h, w, nthread = 10, 1027, 16
    idx, val, k, B0, B1 = _arg_reduce(ARGMAX, tecc.runtime.convert(h), tecc.runtime.convert(w))
    s = te.create_schedule(B0.op)
    _, kf = s[B0].split(k, factor=nthread)
    BF0, BF1 = s.rfactor(B0, kf)
    assert BF0.op is BF1.op
    if target == "cuda":
        bx, ty = s[B0].split(s[B0].op.axis[0], factor=nthread)
        s[B0].bind(bx, te.thread_axis("blockIdx.x"))
        s[B0].bind(ty, te.thread_axis("threadIdx.y"))
        tx = te.thread_axis("threadIdx.x")
        s[B0].bind(s[B0].op.reduce_axis[0], tx)
        s[BF0.op].compute_at(s[B0], s[B0].op.reduce_axis[0])
        s[B0].set_store_predicate(tx.var.equal(0))
    f = build(tecc.lower(s, [idx, val, B0, B1]), None, target, name="argmax")
    i_np, v_np = _arg_inputs(h, w)
    r0, r1 = np.zeros(h, "int32"), np.zeros(h, "float32")
    run(f, i_np, v_np, r0, r1)
    np.testing.assert_array_equal(r0, np.argmax(v_np, axis=1))
    np.testing.assert_array_equal(r1, np.max(v_np, axis=1))


# ---------------------------------------------------------------------------------------
# warp reductions (a reduction over 32 threadIdx.x lanes, rows on threadIdx.y)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n", [(32, 256), (10, 20), (10, 37)])
def test_warp_reduction_of_max(m, n):
    nthx, nthy = 32, 4
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((m,), lambda i: te.max(A[i][k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[B].split(s[B].op.reduce_axis[0], nparts=nthx)
    s[B].bind(ko, te.thread_axis((0, nthx), "threadIdx.x"))
    xo, xi = s[B].split(s[B].op.axis[0], factor=nthy)
    s[B].bind(xi, te.thread_axis((0, nthy), "threadIdx.y"))
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    assert "threadIdx.y" in str(tecc.lower(s, [A, B], simple_mode=True))
    f = build(s, [A, B], "cuda", name="warp_reduction")
    assert "__shfl_down_sync" in source(f)
    a, b = rand(m, n), np.zeros(m, "float32")
    run(f, a, b)
    np.testing.assert_allclose(b, a.max(axis=1), rtol=1e-6)


def test_warp_reduction_of_a_two_output_reducer():
    add_mul = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] * y[1]),
                              lambda t0, t1: (tir.const(0, t0), tir.const(1, t1)), name="add_mul")
    m, n = 16, 256
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: add_mul((A0[i, k], A1[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    ko, _ = s[T0].split(k, nparts=32)
    xo, xi = s[T0].split(s[T0].op.axis[0], factor=2)
    s[T0].bind(ko, te.thread_axis((0, 32), "threadIdx.x"))
    s[T0].bind(xi, te.thread_axis((0, 2), "threadIdx.y"))
    s[T0].bind(xo, te.thread_axis("blockIdx.x"))
    f = build(s, [A0, A1, T0, T1], "cuda", name="reduction")
    a0, a1 = rand(m, n), rand(m, n, low=0.9, high=1.1)
    t0, t1 = np.zeros(m, "float32"), np.zeros(m, "float32")
    run(f, a0, a1, t0, t1)
    np.testing.assert_allclose(t0, a0.sum(axis=1), rtol=1e-4)
    np.testing.assert_allclose(t1, np.prod(a1.astype("float64"), axis=1), rtol=1e-3)


# ---------------------------------------------------------------------------------------
# several reduction axes, a condition on the reduction axis, a comm_reducer of scalars
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_sum_over_two_axes_given_as_tuple_or_list(target):
    m, n = 6, 7
    A = te.placeholder((m, n), name="A")
    k1 = te.reduce_axis((0, m), "k1")
    k2 = te.reduce_axis((0, n), "k2")
    C1 = te.compute((1,), lambda _: te.sum(A[k1, k2], axis=(k1, k2)), name="C1")
    C2 = te.compute((1,), lambda _: te.sum(A[k1, k2] * 2.0, axis=[k1, k2]), name="C2")
    for C, scale in ((C1, 1), (C2, 2)):
        s = te.create_schedule(C.op)
        if target == "cuda":
            s[C].bind(s[C].op.reduce_axis[1], te.thread_axis("threadIdx.x"))
        a, c = rand(m, n), np.zeros(1, "float32")
        build_run(s, [A, C], [a, c], target)
        np.testing.assert_allclose(c, [scale * a.sum()], rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_multi_output_reducer_with_a_condition_on_the_reduction_axis(target):
    mysum = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] + y[1]),
                            lambda t0, t1: (tir.const(0, t0), tir.const(1, t1)), name="mysum")
    m, n = te.var("m"), te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: mysum((idx[i, k], val[i, k]), axis=k, where=te.floormod(k, 2) == 0),
                        name="T")
    s = te.create_schedule(T0.op)
    if target == "cuda":
        bind_blocks_threads(s[T0], T0.op.axis[0], 8)
    i_np, v_np = rand(9, 11, dtype="int32"), rand(9, 11, dtype="int32")
    r0, r1 = np.zeros(9, "int32"), np.zeros(9, "int32")
    build_run(s, [idx, val, T0, T1], [i_np, v_np, r0, r1], target)
    np.testing.assert_array_equal(r0, i_np[:, ::2].sum(axis=1))
    np.testing.assert_array_equal(r1, 1 + v_np[:, ::2].sum(axis=1))


def test_comm_reducer_applied_to_two_scalars_combines_them():
    mysum = te.comm_reducer(lambda x, y: x + y, lambda t: tir.const(0, dtype=t))
    m, n = te.size_var("m"), te.size_var("n")
    combined = mysum(m, n)
    assert isinstance(combined, tir.Add) and combined.a is m and combined.b is n


@pytest.mark.parametrize("target", TARGETS)
def test_rank0_sum_of_a_product_with_a_rank0_placeholder(target):
    m = te.size_var("m")
    A = te.placeholder((m,), name="A")
    scale = te.placeholder((), name="s")
    k = te.reduce_axis((0, m), name="k")
    T = te.compute((), lambda: te.sum(A[k] * scale(), axis=k), name="T")
    assert tuple(T.shape) == ()
    s = te.create_schedule(T.op)
    if target == "cuda":
        _, ki = s[T].split(s[T].op.reduce_axis[0], factor=32)
        s[T].bind(ki, te.thread_axis("threadIdx.x"))
    a, sc, t = rand(23), np.array(3.0, "float32"), np.zeros((), "float32")
    build_run(s, [A, scale, T], [a, sc, t], target)
    np.testing.assert_allclose(t, 3.0 * a.sum(), rtol=1e-5)


def test_softmax_reductions_store_to_no_reduce_temp_after_the_storage_passes():
    # TVM's test_reduce_storage_reuse: after StorageFlatten, Simplify, StorageRewrite and
    # LowerThreadAllreduce, no store writes a reduction's temporary (reduce_temp0) --
    # in tecc the cross-thread reductions go through red_buf and their own stages
    from tecc import topi
    from tecc.driver.build_module import schedule_to_module

    target = tecc.target.Target("cuda")
    A = te.placeholder((16, 16), name="A")
    B = topi.nn.softmax(A, axis=1) + 1.0
    with target:
        s = topi.cuda.schedule_softmax(B)
    mod = schedule_to_module(s, [A, B])
    mod = tir.transform.Apply(lambda f: f.with_attr("target", target))(mod)
    mod = tecc.transform.Sequential([tir.transform.StorageFlatten(64), tir.transform.Simplify(),
                                     tir.transform.StorageRewrite(), tir.transform.LowerThreadAllreduce()])(mod)
    stored = set()
    tir.stmt_functor.post_order_visit(
        mod["main"].body, lambda x: stored.add(x.buffer.data.name) if isinstance(x, tir.BufferStore) else None)
    assert stored and not any(name.startswith("reduce_temp") for name in stored)
    assert B.op.name in stored
    a, b = rand(16, 16), np.zeros((16, 16), "float32")
    build_run(s, [A, B], [a, b], "cuda")
    np.testing.assert_allclose(b, topi.testing.softmax_python(a) + 1.0, rtol=1e-5)
