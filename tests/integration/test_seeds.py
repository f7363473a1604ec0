"""The TE code of the tutorials in shared/seeds runs with ``import tecc as tvm``.

Sizes are reduced where the seeds use 1024 so the suite stays fast; the code is
otherwise the seeds' own (so its computes are declared here, as the seeds do, not
imported from tecc.topi); the numpy references come from tecc.topi.testing.
"""
import numpy as np
import pytest

import tecc as tvm
from tecc import te
from tecc.topi.testing import conv2d_nchw_python, matmul_python


def _matmul(M, K, N):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k


def _run(func, M, K, N, A=None):
    dev = tvm.cpu(0)
    a_np = np.random.randn(M, K).astype("float32")
    b_np = np.random.randn(K, N).astype("float32")
    a_tvm = tvm.nd.array(a_np, dev)
    b_tvm = tvm.nd.array(b_np, dev)
    c_tvm = tvm.nd.array(np.zeros((M, N), dtype="float32"), dev)
    func(a_tvm, b_tvm, c_tvm)
    np.testing.assert_allclose(c_tvm.numpy(), matmul_python(a_np, b_np), rtol=1e-4, atol=1e-4)
    return a_tvm, b_tvm, c_tvm


def test_naive_matmul_lower_build_time_evaluator(capsys):
    M = K = N = 64
    A, B, C, k = _matmul(M, K, N)
    s = te.create_schedule(C.op)
    print(tvm.lower(s, [A, B, C], simple_mode=True))
    out = capsys.readouterr().out
    assert "for (i, 0, 64)" in out and "for (k, 0, 64)" in out
    target = tvm.target.Target("llvm -mcpu=native")
    func = tvm.build(s, [A, B, C], target=target, name="matmul_naive")
    a, b, c = _run(func, M, K, N)
    evaluator = func.time_evaluator(func.entry_name, tvm.cpu(0), number=2, repeat=2)
    result = evaluator(a, b, c)
    assert result.mean > 0 and len(result.results) == 2


def test_split_reorder_tile_print(capsys):
    M, K, N = 8, 8, 8
    A, B, C, k = _matmul(M, K, N)
    s1 = te.create_schedule(C.op)
    print(tvm.lower(s1, [A, B, C], simple_mode=True))
    s2 = te.create_schedule(C.op)
    io, ii = s2[C].split(C.op.axis[0], factor=4)
    print(tvm.lower(s2, [A, B, C], simple_mode=True))
    s3 = te.create_schedule(C.op)
    io, ii = s3[C].split(C.op.axis[0], factor=4)
    jo, ji = s3[C].split(C.op.axis[1], factor=4)
    s3[C].reorder(io, jo, ii, ji)
    print(tvm.lower(s3, [A, B, C], simple_mode=True))
    out = capsys.readouterr().out
    assert "i.outer" in out and "j.inner" in out
    for s in (s1, s2, s3):
        _run(tvm.build(s, [A, B, C], target="llvm"), M, K, N)


def test_optimized_schedule_from_seed():
    M = K = N = 128
    A, B, C, k = _matmul(M, K, N)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    k_ax = C.op.reduce_axis[0]
    io, ii = s[C].split(i, factor=32)
    jo, ji = s[C].split(j, factor=32)
    ko, ki = s[C].split(k_ax, factor=4)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    jii, jiv = s[C].split(ji, factor=8)
    s[C].vectorize(jiv)
    s[C].parallel(io)
    s[C].unroll(ki)
    target = tvm.target.Target("llvm -mcpu=native")
    func = tvm.build(s, [A, B, C], target=target, name="matmul_optimized")
    dev = tvm.cpu(0)
    a = tvm.nd.array(np.random.randn(M, K).astype("float32"), dev)
    b = tvm.nd.array(np.random.randn(K, N).astype("float32"), dev)
    c = tvm.nd.array(np.zeros((M, N), dtype="float32"), dev)
    evaluator = func.time_evaluator(func.entry_name, dev, number=2, repeat=1)
    evaluator(a, b, c)
    np.testing.assert_allclose(c.numpy(), matmul_python(a.numpy(), b.numpy()), rtol=1e-4, atol=1e-4)


def test_tile_configs_loop_with_failing_vectorize():
    M = K = N = 64
    A, B, C, k = _matmul(M, K, N)
    target = tvm.target.Target("llvm -mcpu=native")
    dev = tvm.cpu(0)
    configs = [
        ("Naive", lambda s, C: None),
        ("Tile 16", lambda s, C: s[C].tile(*C.op.axis, 16, 16)),
        ("Tile 32 + vec", lambda s, C: (
            s[C].tile(*C.op.axis, 32, 32),
            s[C].vectorize(s[C].op.axis[-1]))),
    ]
    for name, apply_schedule in configs:
        s = te.create_schedule(C.op)
        try:
            apply_schedule(s, C)
        except Exception:
            pass
        func = tvm.build(s, [A, B, C], target=target)
        _run(func, M, K, N)


def test_conv2d_with_padding_if_then_else():
    batch, in_channel, in_h, in_w = 1, 3, 12, 12
    out_channel, kernel_h, kernel_w = 4, 3, 3
    pad_h, pad_w = 1, 1
    out_h = in_h - kernel_h + 2 * pad_h + 1
    out_w = in_w - kernel_w + 2 * pad_w + 1
    Data = te.placeholder((batch, in_channel, in_h, in_w), name="Data")
    Weight = te.placeholder((out_channel, in_channel, kernel_h, kernel_w), name="Weight")
    PaddedData = te.compute(
        (batch, in_channel, in_h + 2 * pad_h, in_w + 2 * pad_w),
        lambda n, c, h, w: tvm.tir.if_then_else(
            tvm.tir.all(h >= pad_h, h < in_h + pad_h, w >= pad_w, w < in_w + pad_w),
            Data[n, c, h - pad_h, w - pad_w],
            tvm.tir.const(0.0, "float32"),
        ),
        name="PaddedData",
    )
    rc = te.reduce_axis((0, in_channel), name="rc")
    rh = te.reduce_axis((0, kernel_h), name="rh")
    rw = te.reduce_axis((0, kernel_w), name="rw")
    Conv = te.compute(
        (batch, out_channel, out_h, out_w),
        lambda n, co, h, w: te.sum(
            PaddedData[n, rc, h + rh, w + rw] * Weight[co, rc, rh, rw], axis=[rc, rh, rw]),
        name="Conv",
    )
    s = te.create_schedule(Conv.op)
    f = tvm.build(s, [Data, Weight, Conv], target="llvm")
    d = np.random.randn(batch, in_channel, in_h, in_w).astype("float32")
    w = np.random.randn(out_channel, in_channel, kernel_h, kernel_w).astype("float32")
    out = tvm.nd.array(np.zeros((batch, out_channel, out_h, out_w), "float32"))
    f(tvm.nd.array(d), tvm.nd.array(w), out)
    ref = conv2d_nchw_python(d, w, stride=1, padding=pad_h)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_fused_add_relu():
    N = 1024 * 16
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")
    C = te.compute((N,), lambda i: te.max(A[i] + B[i], tvm.tir.const(0.0, "float32")), name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(ii)
    s[C].parallel(io)
    func = tvm.build(s, [A, B, C], target="llvm -mcpu=native")
    dev = tvm.cpu(0)
    a = np.random.randn(N).astype("float32")
    b = np.random.randn(N).astype("float32")
    expected = np.maximum(a + b, 0.0)
    a_tvm = tvm.nd.array(a, dev)
    b_tvm = tvm.nd.array(b, dev)
    c_tvm = tvm.nd.array(np.zeros(N, dtype="float32"), dev)
    func(a_tvm, b_tvm, c_tvm)
    np.testing.assert_allclose(c_tvm.numpy(), expected, rtol=1e-5)


def test_linear_relu_with_reduction_inside_expression():
    # seed 004: te.sum(...) + b[i] inside one compute
    M, N = 16, 24
    W = te.placeholder((M, N), name="W")
    X = te.placeholder((N,), name="X")
    b = te.placeholder((M,), name="b")
    j = te.reduce_axis((0, N), name="j")
    linear = te.compute((M,), lambda i: te.sum(W[i, j] * X[j], axis=j) + b[i])
    Y = te.compute((M,), lambda i: te.max(linear[i], 0.0))
    s = te.create_schedule(Y.op)
    f = tvm.build(s, [W, X, b, Y], target="llvm")
    w = np.random.randn(M, N).astype("float32")
    x = np.random.randn(N).astype("float32")
    bb = np.random.randn(M).astype("float32")
    y = tvm.nd.array(np.zeros(M, "float32"))
    f(tvm.nd.array(w), tvm.nd.array(x), tvm.nd.array(bb), y)
    np.testing.assert_allclose(y.numpy(), np.maximum(w @ x + bb, 0), rtol=1e-4, atol=1e-5)


def test_tvm_surface_names():
    assert tvm.target.Target("llvm -mcpu=native").kind == "llvm"
    assert tvm.cpu(0) is not None
    assert callable(tvm.lower) and callable(tvm.build)
    assert hasattr(tvm.runtime, "load_module")
    with pytest.raises(Exception):
        tvm.target.Target("nosuchtarget")
