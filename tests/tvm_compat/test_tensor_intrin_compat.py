"""Tensor intrinsics (``te.decl_tensor_intrin``): a compute whose inner dimensions a
hand-written statement computes.  The intrinsic's buffers are bound to the regions
it is applied to -- offsets, strides, cache scopes -- and the result must be the
one the intrinsic's own compute describes."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import LoweringError, TeccTypeError
from tecc.tir import stmt as S


def _vadd(n, **buffer_params):
    """An intrinsic adding two vectors of ``n`` elements, written as TIR loops."""
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute((n,), lambda i: x[i] + y[i], name="z")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        xs, ys, zs = (ib.buffer_ptr(b) for b in (ins[0], ins[1], outs[0]))
        with ib.for_range(0, n, name="v") as v:
            zs[v] = xs[v] + ys[v]
        return ib.get()

    return te.decl_tensor_intrin(z.op, body, default_buffer_params=buffer_params or {"offset_factor": 1})


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_vector_intrinsic_over_rows(target):
    m, f = 8, 16
    vadd = _vadd(f)
    A = te.placeholder((m, f), name="A")
    B = te.placeholder((m, f), name="B")
    C = te.compute((m, f), lambda i: vadd(A[i, 0:f], B[i, 0:f]), name="C")
    assert isinstance(C.op, te.TensorComputeOp) and [int(d) for d in C.shape] == [m, f]
    s = te.create_schedule(C.op)
    if target == "cuda":
        s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    f_ = tecc.build(s, [A, B, C], target)
    a = np.random.rand(m, f).astype("float32")
    b = np.random.rand(m, f).astype("float32")
    c = np.zeros((m, f), "float32")
    if target == "cuda":
        assert f_.check(a, b, c) == []
    f_(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_intrinsic_applied_to_a_strided_region_needs_strides():
    # columns 0:4 of a 4x8 tensor: the rows of the region are 8 apart
    vadd = _vadd(4)
    A = te.placeholder((8, 4, 8), name="A")
    C = te.compute((8, 4), lambda i: vadd(A[i, 0:4, 0], A[i, 0:4, 1]), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(LoweringError, match="not contiguous"):
        tecc.lower(s, [A, C])


def test_intrinsic_with_symbolic_strides_reads_a_strided_region():
    n = 4
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute((n,), lambda i: x[i] + y[i], name="z")
    xs, ys = te.var("xs"), te.var("ys")
    binds = {x: tir.decl_buffer((n,), "float32", "X", strides=[xs], offset_factor=1),
             y: tir.decl_buffer((n,), "float32", "Y", strides=[ys], offset_factor=1)}

    def body(ins, outs):
        ib = tir.ir_builder.create()
        with ib.for_range(0, n, name="v") as v:
            ib.emit(S.BufferStore(outs[0], ins[0].vload([v]) + ins[1].vload([v]), (v,)))
        return ib.get()

    vadd = te.decl_tensor_intrin(z.op, body, binds=binds, default_buffer_params={"offset_factor": 1})
    A = te.placeholder((8, n, 2), name="A")
    C = te.compute((8, n), lambda i: vadd(A[i, 0:n, 0], A[i, 0:n, 1]), name="C")
    s = te.create_schedule(C.op)
    f = tecc.build(s, [A, C])
    a = np.random.rand(8, n, 2).astype("float32")
    c = np.zeros((8, n), "float32")
    f(a, c)
    np.testing.assert_allclose(c, a[:, :, 0] + a[:, :, 1], rtol=1e-6)


def test_reduction_intrinsic_with_reset_and_update():
    # C[i, j] (a block of 4 rows) = sum over k-blocks of A[i, k] . B[k] (a matrix-vector product)
    rows, width, kb = 4, 8, 3
    w = te.placeholder((rows, width), name="w")
    x = te.placeholder((width,), name="x")
    r = te.reduce_axis((0, width), name="r")
    z = te.compute((rows,), lambda i: te.sum(w[i, r] * x[r], axis=r), name="z")

    def intrin(ins, outs):
        ww, xx = ins
        zz = outs[0]

        def loops(accumulate):
            ib = tir.ir_builder.create()
            with ib.for_range(0, rows, name="i") as i:
                acc = zz.vload([i]) if accumulate else tecc.tir.const(0.0, "float32")
                total = acc
                for j in range(width):
                    total = total + ww.vload([i, j]) * xx.vload([j])
                ib.emit(S.BufferStore(zz, total, (i,)))
            return ib.get()

        reset = tir.ir_builder.create()
        with reset.for_range(0, rows, name="i") as i:
            reset.emit(S.BufferStore(zz, tecc.tir.const(0.0, "float32"), (i,)))
        return loops(False), reset.get(), loops(True)

    gemv = te.decl_tensor_intrin(z.op, intrin, default_buffer_params={"offset_factor": 1,
                                                                      "strides": None})
    m = 2
    A = te.placeholder((m, rows, kb, width), name="A")
    B = te.placeholder((kb, width), name="B")
    k = te.reduce_axis((0, kb), name="k")
    C = te.compute((m, rows), lambda i: gemv(A[i, 0:rows, k, 0:width], B[k, 0:width], reduce_axis=k), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(LoweringError, match="not contiguous"):
        tecc.build(s, [A, B, C])  # rows of A's region are kb*width apart: the intrinsic's w is compact

    # the same with the blocks laid out contiguously
    A = te.placeholder((m, kb, rows, width), name="A")
    C = te.compute((m, rows), lambda i: gemv(A[i, k, 0:rows, 0:width], B[k, 0:width], reduce_axis=k), name="C")
    s = te.create_schedule(C.op)
    mod = tecc.lower(s, [A, B, C])
    body = mod["main"].body
    assert isinstance(body, S.For)  # i, then reset; for k: update
    f = tecc.build(s, [A, B, C])
    a = np.random.rand(m, kb, rows, width).astype("float32")
    b = np.random.rand(kb, width).astype("float32")
    c = np.zeros((m, rows), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, np.einsum("mkrw,kw->mr", a, b), rtol=1e-5)


def test_intrinsic_writes_a_cache_in_the_scope_it_asks_for():
    f = 16
    x = te.placeholder((f,), name="x")
    y = te.placeholder((f,), name="y")
    z = te.compute((f,), lambda i: x[i] + y[i], name="z")
    binds = {t: tir.decl_buffer(t.shape, t.dtype, "W" + t.name, scope="local", offset_factor=16) for t in (x, y, z)}

    def body(ins, outs):
        ib = tir.ir_builder.create()
        with ib.for_range(0, f, name="v") as v:
            ib.emit(S.BufferStore(outs[0], ins[0].vload([v]) + ins[1].vload([v]), (v,)))
        return ib.get()

    vadd = te.decl_tensor_intrin(z.op, body, binds=binds, default_buffer_params={"offset_factor": 16})
    m = 4
    A = te.placeholder((m, f), name="A")
    B = te.placeholder((m, f), name="B")
    C = te.compute((m, f), lambda i: vadd(A[i, 0:f], B[i, 0:f]), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(LoweringError, match="needs its buffer 'Wx' in 'local' memory but 'A' is in 'global'"):
        tecc.lower(s, [A, B, C])
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", [C])
    BL = s.cache_read(B, "local", [C])
    CL = s.cache_write(C, "local")
    for T in (AL, BL, CL):
        s[T].compute_at(s[C], C.op.axis[0])
    fn = tecc.build(s, [A, B, C])
    a = np.random.rand(m, f).astype("float32")
    b = np.random.rand(m, f).astype("float32")
    c = np.zeros((m, f), "float32")
    fn(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_intrinsic_call_errors():
    vadd = _vadd(4)
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(TeccTypeError, match="tensor intrinsic 'tensor_intrin' takes 2 input region"):
        te.compute((4, 4), lambda i: vadd(A[i, 0:4]), name="C")
    Ai = te.placeholder((4, 4), name="Ai", dtype="int32")
    with pytest.raises(TeccTypeError, match="'Ai' is int32, the intrinsic takes float32"):
        te.compute((4, 4), lambda i: vadd(Ai[i, 0:4], A[i, 0:4]), name="C")
    C = te.compute((4, 4), lambda i: vadd(A[i, 0:4], A[i, 0:4]), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(tecc.ScheduleError, match="computed by a tensor intrinsic"):
        s[C].compute_inline()


def test_intrinsic_with_a_fixed_offset_cannot_move():
    # without offset_factor the intrinsic's buffers start at element 0 only
    vadd = _vadd(4, offset_factor=0)
    A = te.placeholder((4, 4), name="A")
    C = te.compute((4, 4), lambda i: vadd(A[i, 0:4], A[i, 0:4]), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(LoweringError, match="declare it with offset_factor"):
        tecc.lower(s, [A, C])


# ---------------------------------------------------------------------------------------
# tensorize: the loops of an ordinary compute replaced by an intrinsic
# ---------------------------------------------------------------------------------------
def _gemv_intrin(rows, width):
    """z[i] = sum_j w[i, j] * x[j] with a reset and an accumulating update."""
    w = te.placeholder((rows, width), name="w")
    x = te.placeholder((width,), name="x")
    r = te.reduce_axis((0, width), name="r")
    z = te.compute((rows,), lambda i: te.sum(w[i, r] * x[r], axis=r), name="z")
    ldw = te.var("ldw")
    wb = tir.decl_buffer(w.shape, w.dtype, "W", strides=[ldw, 1], offset_factor=1)

    def intrin(ins, outs):
        ww, xx = ins
        zz = outs[0]

        def loops(accumulate):
            ib = tir.ir_builder.create()
            with ib.for_range(0, rows, name="i") as i:
                total = zz.vload([i]) if accumulate else tecc.tir.const(0.0, "float32")
                for j in range(width):
                    total = total + ww.vload([i, j]) * xx.vload([j])
                ib.emit(S.BufferStore(zz, total, (i,)))
            return ib.get()

        ib = tir.ir_builder.create()
        with ib.for_range(0, rows, name="i") as i:
            ib.emit(S.BufferStore(zz, tecc.tir.const(0.0, "float32"), (i,)))
        return loops(False), ib.get(), loops(True)

    return te.decl_tensor_intrin(z.op, intrin, binds={w: wb}, default_buffer_params={"offset_factor": 1})


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_tensorize_elementwise_loop(target):
    m, f = 64, 16
    X = te.placeholder((m,), name="X")
    Y = te.placeholder((m,), name="Y")
    Z = te.compute((m,), lambda i: X[i] + Y[i], name="Z")
    s = te.create_schedule(Z.op)
    xo, xi = s[Z].split(Z.op.axis[0], factor=f)
    s[Z].tensorize(xi, _vadd(f))
    assert s[Z].iter_var_attrs[xi].iter_type == tecc.tir.IterVar.Tensorized
    if target == "cuda":
        s[Z].bind(xo, te.thread_axis("blockIdx.x"))
    fn = tecc.build(s, [X, Y, Z], target)
    x = np.random.rand(m).astype("float32")
    y = np.random.rand(m).astype("float32")
    z = np.zeros(m, "float32")
    if target == "cuda":
        assert fn.check(x, y, z) == []
    fn(x, y, z)
    np.testing.assert_allclose(z, x + y, rtol=1e-6)


@pytest.mark.parametrize("kfactor", [8, 24])
def test_tensorize_matrix_vector_product_with_outer_reduction(kfactor):
    # C[i] = sum_k A[i, k] * B[k]; the intrinsic does 4 rows x `width` columns; with
    # kfactor == width the whole reduction is inside (body), else an outer loop over
    # k blocks starts with reset and accumulates with update
    n, kk, rows, width = 8, 24, 4, 8
    A = te.placeholder((n, kk), name="A")
    B = te.placeholder((kk,), name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k] * B[k], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=rows)
    ko, ki = s[C].split(k, factor=width if kfactor == 8 else kk)
    s[C].reorder(io, ko, ii, ki)
    if kfactor == 8:
        s[C].tensorize(ii, _gemv_intrin(rows, width))
    else:
        s[C].tensorize(ii, _gemv_intrin(rows, kk))
    fn = tecc.build(s, [A, B, C])
    a = np.random.rand(n, kk).astype("float32")
    b = np.random.rand(kk).astype("float32")
    c = np.zeros(n, "float32")
    fn(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_tensorize_rejects_a_different_computation():
    m, f = 32, 16
    X = te.placeholder((m,), name="X")
    Y = te.placeholder((m,), name="Y")
    Z = te.compute((m,), lambda i: X[i] * Y[i], name="Z")
    s = te.create_schedule(Z.op)
    xo, xi = s[Z].split(Z.op.axis[0], factor=f)
    s[Z].tensorize(xi, _vadd(f))
    with pytest.raises(LoweringError, match="tensorize at 'i.inner' with 'tensor_intrin': the tensorized loops "
                                            "compute .* which is not what the intrinsic computes"):
        tecc.lower(s, [X, Y, Z])


def test_tensorize_needs_whole_blocks():
    m, f = 30, 16
    X = te.placeholder((m,), name="X")
    Y = te.placeholder((m,), name="Y")
    Z = te.compute((m,), lambda i: X[i] + Y[i], name="Z")
    s = te.create_schedule(Z.op)
    xo, xi = s[Z].split(Z.op.axis[0], factor=f)
    s[Z].tensorize(xi, _vadd(f))
    with pytest.raises(LoweringError, match="does not divide its axis"):
        tecc.lower(s, [X, Y, Z])


# ---------------------------------------------------------------------------------------
# TVM's test hooks: the region a tensorized block covers, and its body in the
# intrinsic's terms (test.op.InferTensorizeRegion / test.op.MatchTensorizeBody)
# ---------------------------------------------------------------------------------------
def _hooks():
    return tecc.get_global_func("test.op.InferTensorizeRegion"), tecc.get_global_func("test.op.MatchTensorizeBody")


def test_tensorize_region_and_body_of_a_split_vector_add():
    infer, match = _hooks()
    m, f = 128, 16
    x, y = te.placeholder((m,), name="x"), te.placeholder((m,), name="y")
    z = te.compute((m,), lambda i: x[i] + y[i], name="z")
    s = te.create_schedule(z.op)
    xo, xi = s[z].split(z.op.axis[0], factor=f)
    vadd = _vadd(f)
    s[z].tensorize(xi, vadd)
    s = s.normalize()
    out_dom, in_dom = infer(s[z], te.schedule.InferBound(s))
    assert tecc.ir.structural_equal(out_dom[z.op.axis[0]].extent, f)
    assert tecc.ir.structural_equal(out_dom[z.op.axis[0]].min, xo.var * f)
    (tensor, region), = in_dom.items()[:1]
    assert tensor in (x, y) and int(region[0].extent) == f
    body = match(s[z], out_dom, in_dom, vadd)
    ana = tecc.arith.Analyzer()
    assert tecc.ir.structural_equal(ana.simplify(body[0]), ana.simplify(vadd.op.body[0]))


def test_tensorize_body_of_a_reduction_matches_up_to_its_variables():
    infer, match = _hooks()
    n, f = 64, 8
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n,), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k] * B[k], axis=k), name="C")
    w, v = te.placeholder((f, n), name="w"), te.placeholder((n,), name="v")
    kk = te.reduce_axis((0, n), name="kk")
    gemv = te.compute((f,), lambda i: te.sum(w[i, kk] * v[kk], axis=kk), name="gemv")
    intrin = te.decl_tensor_intrin(gemv.op, lambda ins, outs: tir.call_packed("gemv", ins[0], ins[1], outs[0]))
    s = te.create_schedule(C.op)
    _, yi = s[C].split(C.op.axis[0], factor=f)
    s[C].tensorize(yi, intrin)
    s = s.normalize()
    out_dom, in_dom = infer(s[C], te.schedule.InferBound(s))
    assert int(out_dom[C.op.axis[0]].extent) == f and int(out_dom[C.op.reduce_axis[0]].extent) == n
    body = match(s[C], out_dom, in_dom, intrin)
    ana = tecc.arith.Analyzer()
    assert tecc.ir.structural_equal(ana.simplify(body[0]), ana.simplify(gemv.op.body[0]))
    other = te.compute((f,), lambda i: te.sum(w[i, kk] + v[kk], axis=kk), name="other")  # + is not *
    assert not tecc.ir.structural_equal(ana.simplify(body[0]), ana.simplify(other.op.body[0]))
