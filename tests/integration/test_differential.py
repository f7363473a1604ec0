"""Differential tests: random legal schedules, compiled to C, against numpy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tecc
from tecc import te, tir, topi
from tecc.topi.testing import batch_matmul_python, conv2d_nchw_python, matmul_python, softmax_python

from irhelpers import stages
from schedgen import random_annotations, random_attach, random_loop_shape, random_prefetch

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck),
                    derandomize=True)


def _build_run(s, args, arrays):
    f = tecc.build(s, args, target="llvm")
    nd = [tecc.nd.array(a) for a in arrays]
    f(*nd)
    return [x.numpy() for x in nd]


def rand(shape, dtype="float32", rng=np.random.default_rng(0)):
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -50), min(info.max, 50), shape).astype(dtype)


@given(data=st.data())
@SETTINGS
def test_elementwise_broadcast_chain(data):
    m, n = data.draw(st.integers(1, 19), label="m"), data.draw(st.integers(1, 23), label="n")
    A = te.placeholder((m, n), name="A")
    b = te.placeholder((n,), name="b")
    T1 = te.compute((m, n), lambda i, j: A[i, j] * 2.0 + b[j], name="T1")
    T2 = te.compute((m, n), lambda i, j: te.exp(T1[i, j] * 0.1) - te.abs(A[i, j]), name="T2")
    out = te.compute((m, n), lambda i, j: te.max(T2[i, j], T1[i, j] * 0.5), name="out")
    s = te.create_schedule(out.op)
    random_loop_shape(data, s[out], "out")
    random_attach(data, s, T2, out, "T2")
    # T1 is read by T2 and by out: it must be computed where both can see it
    how = data.draw(st.sampled_from(["inline", "root", "at"]), label="T1 attach")
    if how == "inline":
        s[T1].compute_inline()
    elif how == "at" and s[T2].attach_type != tecc.te.AttachType.ROOT:
        leaves = list(s[out].leaf_iter_vars)
        limit = leaves.index(s[T2].attach_ivar) if s[T2].attach_type == tecc.te.AttachType.SCOPE else len(leaves) - 1
        s[T1].compute_at(s[out], leaves[data.draw(st.integers(0, limit), label="T1 at")])
    random_annotations(data, s[out], "out")
    a, bb = rand((m, n)), rand((n,))
    res = _build_run(s, [A, b, out], [a, bb, np.zeros((m, n), "float32")])[-1]
    t1 = a * 2 + bb
    ref = np.maximum(np.exp(t1 * 0.1) - np.abs(a), t1 * 0.5)
    np.testing.assert_allclose(res, ref, rtol=1e-5, atol=1e-5)


@given(data=st.data())
@SETTINGS
def test_matmul_random_schedules(data):
    m, n, kk = (data.draw(st.integers(1, 20), label=x) for x in "mnk")
    A = te.placeholder((m, kk), name="A")
    B = te.placeholder((kk, n), name="B")
    C = topi.nn.matmul(A, B)
    s = te.create_schedule(C.op)
    if data.draw(st.booleans(), label="cache_write"):
        CC = s.cache_write(C, "local")
        random_loop_shape(data, s[C], "C", allow_fuse=False)
        leaves = list(s[C].leaf_iter_vars)
        s[CC].compute_at(s[C], data.draw(st.sampled_from(leaves), label="CC at"))
        random_loop_shape(data, s[CC], "CC")
        random_annotations(data, s[CC], "CC")
        random_prefetch(data, s[CC], "CC")
    else:
        random_loop_shape(data, s[C], "C")
        random_annotations(data, s[C], "C")
        random_prefetch(data, s[C], "C")
    if data.draw(st.booleans(), label="cache_read"):
        readers = [s.stage_map[C.op].op] if not any(x.is_cache for x in s.stages) else \
            [st_.op for st_ in s.stages if st_.is_cache]
        AA = s.cache_read(A, "local", readers)
        target = s[readers[0]]
        s[AA].compute_at(target, data.draw(st.sampled_from(list(target.leaf_iter_vars)), label="AA at"))
    a, b = rand((m, kk)), rand((kk, n))
    res = _build_run(s, [A, B, C], [a, b, np.zeros((m, n), "float32")])[-1]
    np.testing.assert_allclose(res, matmul_python(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@given(data=st.data())
@SETTINGS
def test_row_reductions(kind, data):
    m, n = data.draw(st.integers(1, 17), label="m"), data.draw(st.integers(1, 33), label="n")
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    red = getattr(te, kind)
    R = te.compute((m,), lambda i: red(A[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    random_loop_shape(data, s[R], "R")
    random_annotations(data, s[R], "R")
    a = rand((m, n))
    res = _build_run(s, [A, R], [a, np.zeros((m,), "float32")])[-1]
    np.testing.assert_allclose(res, getattr(np, kind)(a, axis=1), rtol=1e-5, atol=1e-5)


def test_argmax_tuple_reduction():
    def fcombine(x, y):
        lhs = tir.Select(x[1] >= y[1], x[0], y[0])
        rhs = tir.Select(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return tir.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    m, n = 7, 13
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="float32")
    k = te.reduce_axis((0, n), name="k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    s[T0].split(k, factor=4)
    v = rand((m, n))
    ix = np.tile(np.arange(n, dtype="int32"), (m, 1))
    out = _build_run(s, [idx, val, T0, T1], [ix, v, np.zeros(m, "int32"), np.zeros(m, "float32")])
    np.testing.assert_array_equal(out[2], np.argmax(v, axis=1))
    np.testing.assert_allclose(out[3], v.max(axis=1))


@given(data=st.data())
@SETTINGS
def test_batch_matmul(data):
    b, m, n, kk = 2, data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    A = te.placeholder((b, m, kk), name="A")
    B = te.placeholder((b, kk, n), name="B")
    C = topi.nn.batch_matmul(A, B, transpose_b=False)
    s = te.create_schedule(C.op)
    random_loop_shape(data, s[C], "C")
    random_annotations(data, s[C], "C")
    a, bb = rand((b, m, kk)), rand((b, kk, n))
    res = _build_run(s, [A, B, C], [a, bb, np.zeros((b, m, n), "float32")])[-1]
    np.testing.assert_allclose(res, batch_matmul_python(a, bb), rtol=1e-4, atol=1e-4)


def conv2d_nchw(data_shape, w_shape, stride, pad, dilation):
    """``(D, W, Pad, Out)``: topi's conv2d_nchw; with ``dilation`` > 1 (which topi's
    compute does not take) the same sum over taps ``dilation`` apart, on topi's
    padding stage."""
    D = te.placeholder(data_shape, name="D")
    Wt = te.placeholder(w_shape, name="W")
    if dilation == 1:
        O = topi.nn.conv2d_nchw(D, Wt, stride=stride, padding=pad)
        return D, Wt, stages(O)["Pad"], O
    N, CI, H, W = data_shape
    CO, _, KH, KW = w_shape
    P = topi.nn.pad_nchw(D, pad)
    OH = (H + 2 * pad - dilation * (KH - 1) - 1) // stride + 1
    OW = (W + 2 * pad - dilation * (KW - 1) - 1) // stride + 1
    rc = te.reduce_axis((0, CI), name="rc")
    rh = te.reduce_axis((0, KH), name="rh")
    rw = te.reduce_axis((0, KW), name="rw")
    O = te.compute((N, CO, OH, OW), lambda n, f, y, x: te.sum(
        P[n, rc, y * stride + rh * dilation, x * stride + rw * dilation] * Wt[f, rc, rh, rw], axis=[rc, rh, rw]),
        name="Out")
    return D, Wt, P, O


@given(data=st.data())
@SETTINGS
def test_conv2d_random(data):
    stride = data.draw(st.integers(1, 2), label="stride")
    pad = data.draw(st.integers(0, 2), label="pad")
    dil = data.draw(st.integers(1, 2), label="dilation")
    dshape, wshape = (1, 3, 9, 8), (4, 3, 3, 3)
    D, Wt, P, O = conv2d_nchw(dshape, wshape, stride, pad, dil)
    s = te.create_schedule(O.op)
    random_loop_shape(data, s[O], "O")
    random_attach(data, s, P, O, "P")
    random_annotations(data, s[O], "O")
    random_prefetch(data, s[O], "O")  # the kernel (the padded data is computed, not an input)
    d, w = rand(dshape), rand(wshape)
    res = _build_run(s, [D, Wt, O], [d, w, np.zeros([int(x) for x in O.shape], "float32")])[-1]
    np.testing.assert_allclose(res, conv2d_nchw_python(d, w, stride, pad, dilation=dil), rtol=1e-4, atol=1e-4)


def test_max_pool2d():
    N, C, H, W = 1, 2, 9, 10
    A = te.placeholder((N, C, H, W), name="A")
    rh = te.reduce_axis((0, 3), name="rh")
    rw = te.reduce_axis((0, 3), name="rw")
    OH, OW = (H - 3) // 2 + 1, (W - 3) // 2 + 1
    Pool = te.compute((N, C, OH, OW), lambda n, c, y, x: te.max(A[n, c, y * 2 + rh, x * 2 + rw], axis=[rh, rw]),
                      name="Pool")
    s = te.create_schedule(Pool.op)
    s[Pool].parallel(Pool.op.axis[1])
    a = rand((N, C, H, W))
    res = _build_run(s, [A, Pool], [a, np.zeros((N, C, OH, OW), "float32")])[-1]
    ref = np.full((N, C, OH, OW), -np.inf, "float32")
    for kh in range(3):
        for kw in range(3):
            ref = np.maximum(ref, a[:, :, kh:kh + 2 * (OH - 1) + 1:2, kw:kw + 2 * (OW - 1) + 1:2])
    np.testing.assert_allclose(res, ref)


@given(data=st.data())
@SETTINGS
def test_softmax(data):
    m, n = data.draw(st.integers(1, 9), label="m"), data.draw(st.integers(1, 40), label="n")
    A = te.placeholder((m, n), name="A")
    Out = topi.nn.softmax(A)
    Mx, Ex, Sm = (stages(Out)[name] for name in ("Mx", "Ex", "Sm"))
    s = te.create_schedule(Out.op)
    random_loop_shape(data, s[Out], "Out", allow_fuse=False)
    if data.draw(st.booleans(), label="attach to rows"):
        row = s[Out].leaf_iter_vars[0]
        if row.var.name.startswith("i") and row.var.name in ("i", "i.outer"):
            for T in (Mx, Ex, Sm):
                s[T].compute_at(s[Out], row)
    a = rand((m, n))
    res = _build_run(s, [A, Out], [a, np.zeros((m, n), "float32")])[-1]
    np.testing.assert_allclose(res, softmax_python(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "uint8", "int32", "int64"])
def test_dtypes_elementwise_and_sum(dtype):
    m, n = 5, 11
    A = te.placeholder((m, n), name="A", dtype=dtype)
    B = te.compute((m, n), lambda i, j: A[i, j] + A[i, j] * tir.const(2, dtype), name="B")
    k = te.reduce_axis((0, n), name="k")
    R = te.compute((m,), lambda i: te.sum(B[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    s[B].compute_at(s[R], R.op.axis[0])
    a = rand((m, n), dtype)
    out = _build_run(s, [A, R], [a, np.zeros((m,), dtype)])[-1]
    ref = (a + a * np.array(2, dtype)).astype(dtype).sum(axis=1, dtype=dtype)
    if dtype.startswith("float"):
        np.testing.assert_allclose(out, ref, rtol=1e-2 if dtype == "float16" else 1e-5,
                                   atol=5e-2 if dtype == "float16" else 0)
    else:
        np.testing.assert_array_equal(out, ref)


def test_bool_dtype_and_select():
    m = 17
    A = te.placeholder((m,), name="A", dtype="float32")
    M = te.compute((m,), lambda i: A[i] > 0, name="M")
    O = te.compute((m,), lambda i: tir.Select(M[i], A[i], A[i] * -1.0), name="O")
    s = te.create_schedule([M.op, O.op])
    a = rand((m,))
    out = _build_run(s, [A, M, O], [a, np.zeros(m, bool), np.zeros(m, "float32")])
    np.testing.assert_array_equal(out[1], a > 0)
    np.testing.assert_allclose(out[2], np.abs(a))


def test_symbolic_shapes():
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((n,), lambda i: te.sum(B[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    io, ii = s[R].split(R.op.axis[0], factor=4)
    s[B].compute_at(s[R], ii)
    f = tecc.build(s, [A, R], target="llvm")
    for shape in ((5, 3), (9, 17), (1, 1)):
        a = rand(shape)
        r = tecc.nd.array(np.zeros(shape[0], "float32"))
        f(tecc.nd.array(a), r)
        # a row's sum may lie near 0, where a relative tolerance alone is too tight
        np.testing.assert_allclose(r.numpy(), (a * 3 + 1).sum(axis=1), rtol=1e-5, atol=1e-4)


def test_storage_align_and_cache_read_shared_scope_on_cpu():
    n = 16
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "global", [B])
    s[AA].storage_align(AA.op.axis[0], 8, 1)
    a = rand((n, n))
    out = _build_run(s, [A, B], [a, np.zeros((n, n), "float32")])[-1]
    np.testing.assert_allclose(out, a + 1)
