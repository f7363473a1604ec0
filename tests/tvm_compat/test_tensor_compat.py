"""Tensors and operations as TVM's test_te_tensor.py uses them: identity, hashing and
outputs of operations, scalar shapes, slices of a compute, user-defined reducers,
tuple-valued computes (with outputs that other stages do not read), input tensors,
save_json of a reduction and of a compute's attrs (test_te_tag.py), the invalid
tuple computes (test_te_verify_compute.py) and a tensor minus or divided by a
symbolic scalar (test_te_tensor_overload.py) -- most also built for "llvm" and
"cuda" (the emulator, race-checked) and compared with numpy.  (Its scan tests are in
test_scan_compat.py, its extern tests in test_extern_compat.py, its reductions in
test_reduce_compat.py.)"""
import json

import numpy as np
import pytest

import tecc
from tecc import te, tir, topi
from tecc.errors import TeccTypeError
from compat_te import TARGETS, bind_blocks_threads, bind_fused, build_run, rand, run
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _collect(stmt, cls):
    found = []
    tir.stmt_functor.post_order_visit(stmt, lambda x: found.append(x) if isinstance(x, cls) else None)
    return found


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_identity_hash_outputs_and_element_casts(target):
    m, n, l = te.size_var("m"), te.size_var("n"), te.size_var("l")
    A = te.placeholder((m, l), name="A")
    B = te.placeholder((n, l), name="B")
    T = te.compute((m, n, l), lambda i, j, k: A[i, k] * B[j, k], name="T")
    assert tuple(T.shape) == (m, n, l)
    assert isinstance(A.op, te.PlaceholderOp) and isinstance(T.op, te.ComputeOp)
    assert A == A and T.op.output(0) == T
    assert hash(T.op.output(0)) == hash(T) and {T.op.output(0): 1}[T] == 1
    assert T[0][0][0].astype("float16").dtype == "float16"
    assert "T" in str(T) and str(T.op.body) != ""
    s = te.create_schedule(T.op)
    if target == "cuda":
        bind_fused(s[T], 16)
    a, b, t = rand(3, 5), rand(4, 5), np.zeros((3, 4, 5), "float32")
    build_run(s, [A, B, T], [a, b, t], target)
    np.testing.assert_allclose(t, a[:, None, :] * b[None, :, :], rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_a_scalar_shape_and_neighbouring_reads(target):
    n = te.size_var("n")
    A = te.placeholder((n + 2), name="A")

    def compute_b(ii):
        i = ii + 1
        return A[i - 1] + A[i] + A[i + 1]

    B = te.compute(n, compute_b, name="B")
    assert len(A.shape) == 1 and len(B.shape) == 1
    s = te.create_schedule(B.op)
    if target == "cuda":
        bind_blocks_threads(s[B], B.op.axis[0], 8)
    a, b = rand(22), np.zeros(20, "float32")
    build_run(s, [A, B], [a, b], target)
    np.testing.assert_allclose(b, a[:-2] + a[1:-1] + a[2:], rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_a_row_of_a_compute_read_through_chained_indexing(target):
    n = te.size_var("n")
    A = te.compute((n, n), lambda i, j: 1, name="A")
    B = te.compute((n,), lambda i: A[0][i] + A[0][i], name="B")
    assert A.dtype == "int32"
    s = te.create_schedule(B.op)
    if target == "cuda":
        bind_fused(s[A], 8)
        bind_blocks_threads(s[B], B.op.axis[0], 8)
    a, b = np.zeros((9, 9), "int32"), np.zeros(9, "int32")
    build_run(s, [A, B], [a, b], target)
    np.testing.assert_array_equal(a, 1)
    np.testing.assert_array_equal(b, 2)


@pytest.mark.parametrize("target", TARGETS)
def test_a_user_defined_sum_reducer(target):
    m, n = te.size_var("m"), te.size_var("n")
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), "k")
    mysum = te.comm_reducer(lambda x, y: x + y, lambda t: tir.const(0, dtype=t))
    C = te.compute((m,), lambda i: mysum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    if target == "cuda":
        bind_blocks_threads(s[C], C.op.axis[0], 4)
    a, c = rand(6, 11), np.zeros(6, "float32")
    build_run(s, [A, C], [a, c], target)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5)


def test_reduction_over_an_offset_read_of_a_compute():
    m, n, l = te.size_var("m"), te.size_var("n"), te.size_var("l")
    A = te.placeholder((m, l), name="A")
    B = te.placeholder((n, l), name="B")
    T = te.compute((m, n, l), lambda i, j, k: A[i, k] * B[j, k], name="T")
    rv = te.reduce_axis((0, A.shape[1]), "k")
    C = te.compute((m, n), lambda i, j: te.sum(T(i, j, rv + 1), axis=rv), name="C")
    assert tuple(C.shape) == (m, n) and C.op.reduce_axis[0] is rv
    assert T in C.op.input_tensors


def test_tensor_round_trips_through_save_json():
    m = te.size_var("m")
    A = te.placeholder((m,), name="A")
    C = te.compute((m,), lambda i: A[i] + 1, name="C")
    loaded = tecc.ir.load_json(tecc.ir.save_json(C))
    assert isinstance(loaded, te.Tensor) and str(loaded) == str(C)
    # the loaded graph computes the same thing
    s = te.create_schedule(loaded.op)
    (A2,) = loaded.op.input_tensors
    f = tecc.build(s, [A2, loaded], "llvm")
    a = tecc.nd.array(np.arange(5, dtype="float32"))
    c = tecc.nd.array(np.zeros(5, dtype="float32"))
    f(a, c)
    np.testing.assert_allclose(c.numpy(), np.arange(5) + 1)


def test_reduction_round_trips_through_save_json():
    # TVM's test_tensor_reduce: a sum over an offset read of a compute, saved and loaded
    m, n, l = 3, 4, 6
    A = te.placeholder((m, l), name="A")
    B = te.placeholder((n, l), name="B")
    T = te.compute((m, n, l), lambda i, j, k: A[i, k] * B[j, k], name="T")
    rv = te.reduce_axis((0, l - 1), "k")
    C = te.compute((m, n), lambda i, j: te.sum(T(i, j, rv + 1), axis=rv), name="C")
    loaded = tecc.ir.load_json(tecc.ir.save_json(C))
    assert isinstance(loaded, te.Tensor) and str(loaded) == str(C)
    assert str(loaded.op.body) == str(C.op.body) and len(loaded.op.reduce_axis) == 1
    (T2,) = loaded.op.input_tensors
    A2, B2 = T2.op.input_tensors
    assert (A2.name, B2.name) == ("A", "B") and A2 is not A
    a, b, c = rand(m, l), rand(n, l), np.zeros((m, n), "float32")
    build_run(te.create_schedule(loaded.op), [A2, B2, loaded], [a, b, c], "llvm")
    np.testing.assert_allclose(c, a[:, 1:] @ b[:, 1:].T, rtol=1e-5)


def test_compute_attrs_and_tag_round_trip_through_save_json():
    # TVM's test_te_tag.py::test_with: attrs= of a compute made in a tag scope
    n, m, l = te.size_var("n"), te.size_var("m"), te.size_var("l")
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((m, l), name="B")
    with te.tag_scope(tag="gemm"):
        k = te.reduce_axis((0, l), name="k")
        C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k),
                       attrs={"hello": 1, "arr": [10, 12]})
    assert C.op.tag == "gemm"
    assert "hello" in C.op.attrs and "xx" not in C.op.attrs
    assert C.op.attrs["hello"].value == 1
    loaded = tecc.ir.load_json(tecc.ir.save_json(C))
    assert loaded.op.tag == "gemm"
    assert loaded.op.attrs["hello"].value == 1
    assert [x.value for x in loaded.op.attrs["arr"]] == [10, 12]
    assert json.loads(str(loaded.op.attrs)) == {"hello": 1, "arr": [10, 12]}  # printed as JSON


def test_invalid_tuple_computes_are_rejected():
    # TVM's test_te_verify_compute.py, the two cases tecc rejects as TVM does (see (b)
    # in the README for the nested reductions tecc accepts)
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    k_ = te.reduce_axis((0, m - 1), "k_")
    with pytest.raises(TeccTypeError, match="compute 'B': either every output is a reduction or none is"):
        te.compute((n,), lambda i: (te.sum(A[i, k], axis=k), A[i, 0] + 1), name="B")
    with pytest.raises(tecc.error.TVMError, match="compute 'B': all outputs must come from one "
                                                  r"\(tuple\) reduction"):
        te.compute((n,), lambda i: (te.sum(A[i, k], axis=k), te.sum(A[i, k_], axis=k_)), name="B")
    # the valid forms next to them
    assert te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B").op.num_outputs == 1
    assert te.compute((n,), lambda i: A[i, 0] + 1, name="B").op.num_outputs == 1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op, shape", [("sub", (3, 5)), ("div", (2, 3, 1, 8))])
def test_tensor_minus_or_divided_by_a_symbolic_scalar(target, op, shape):
    # TVM's test_tensor_scalar_bop, "-" and "/", scheduled by get_elemwise_schedule
    dims = [te.size_var(f"n{d}") for d in range(len(shape))]
    k = te.var("k")
    A = te.placeholder(dims, name="A")
    B = A - k if op == "sub" else A / k
    assert B.op.tag == topi.tag.ELEMWISE
    with tecc.target.Target(target):
        s = topi.testing.get_elemwise_schedule(target)(B)
    f = tecc.build(s, [A, B, k] + dims, target)
    a, b = rand(*shape), np.zeros(shape, "float32")
    run(f, a, b, 2, *shape)
    np.testing.assert_allclose(b, a - 2 if op == "sub" else a / 2, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# tuple-valued computes
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_tuple_valued_compute(target):
    m, n = te.size_var("m"), te.size_var("n")
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    T0, T1 = te.compute((m, n), lambda i, j: (A0[i, j] * 2, A1[i, j] * 3), name="T")
    assert all(a is b or a == b for a, b in zip(T0.shape, T1.shape))
    assert T0.op == T1.op and (T0.value_index, T1.value_index) == (0, 1)
    s = te.create_schedule(T0.op)
    if target == "cuda":
        bind_fused(s[T0], 16)
    a0, a1 = rand(4, 6), rand(4, 6)
    t0, t1 = np.zeros((4, 6), "float32"), np.zeros((4, 6), "float32")
    build_run(s, [A0, A1, T0, T1], [a0, a1, t0, t1], target)
    np.testing.assert_allclose(t0, a0 * 2, rtol=1e-6)
    np.testing.assert_allclose(t1, a1 * 3, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_tuple_compute_whose_second_output_nobody_reads(target):
    m, n = te.size_var("m"), te.size_var("n")
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] * 2, A1[i, j] * 3), name="B")
    C = te.compute((m, n), lambda i, j: B0[i, j] + 4, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=10)
    s[B0.op].compute_at(s[C], xo)
    sch = s.normalize()
    stmt = te.schedule.ScheduleOps(sch, te.schedule.InferBound(sch))
    # (TVM's ScheduleOps makes ProducerRealize nodes; tecc's, allocations) B's second
    # output is realized once, inside C's outer loop
    (outer,) = [x for x in _collect(stmt, tir.For) if x.loop_var is xo.var]
    allocs = [a.buffer_var.name for a in _collect(outer, tir.Allocate)]
    assert sorted(allocs) == ["B.v0", "B.v1"]
    if target == "cuda":  # (B is then a per-block copy: constant sizes for shared memory)
        m, n = 23, 5
        A0, A1 = te.placeholder((m, n), name="A0"), te.placeholder((m, n), name="A1")
        B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] * 2, A1[i, j] * 3), name="B")
        C = te.compute((m, n), lambda i, j: B0[i, j] + 4, name="C")
        s = te.create_schedule(C.op)
        tx = te.thread_axis("threadIdx.x")
        xo, xi = s[C].split(C.op.axis[0], factor=10)
        s[C].bind(xo, te.thread_axis("blockIdx.x"))
        s[C].bind(xi, tx)
        s[B0.op].compute_at(s[C], xo)
        s[B0.op].bind(s[B0.op].op.axis[0], tx)
    a0, a1, c = rand(23, 5), rand(23, 5), np.zeros((23, 5), "float32")
    build_run(s, [A0, A1, C], [a0, a1, c], target)
    np.testing.assert_allclose(c, a0 * 2 + 4, rtol=1e-6)


def test_input_tensors_of_an_operation():
    x = te.placeholder((1,), name="x")
    y = te.compute(x.shape, lambda i: x[i] + x[i], name="y")
    assert tuple(y.op.input_tensors) == (x,)
