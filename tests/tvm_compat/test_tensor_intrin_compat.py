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

from compat_te import build, rand, run


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
def _gemv_intrin(rows, width, with_reset=True):
    """z[i] = sum_j w[i, j] * x[j] with a reset (or None in its place) and an
    accumulating update."""
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

        if not with_reset:
            return loops(False), None, loops(True)
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


# ---------------------------------------------------------------------------------------
# the TensorIntrin object; scalar parameters; packed-function intrinsics
# ---------------------------------------------------------------------------------------
def _packed(name):
    """Register a Python packed function ``tvm_compat.<name>`` (the arrays it gets
    are the regions of the tensorized block) and return its full name."""
    impls = {
        "vadd": lambda x, y, z: z.copyfrom(x.numpy() + y.numpy()),
        "maxpool3x3": lambda a, p: p.copyfrom(np.max(np.lib.stride_tricks.sliding_window_view(
            a.numpy(), (3, 3), axis=(-2, -1)), axis=(-2, -1))),
        "fold3x3": lambda a, b: b.copyfrom(_fold3x3(a.numpy())),
    }
    full = "tvm_compat." + name
    tecc.register_func(full, impls[name], override=True)
    return full


def _fold3x3(a):
    """out[i, j] = a[j // 3 + i % 3, j % 3 + i // 3] over a 9x9 output (numpy)."""
    i, j = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    return a[j // 3 + i % 3, j % 3 + i // 3]


def test_intrinsic_fields_and_the_call_tensorize_leaves():
    n = 4
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute((n,), lambda i: x[i] + y[i], name="z")

    def by_pointer(ins, outs):
        assert isinstance(ins[0], te.schedule.Buffer) and int(ins[0].shape[0]) == n
        return tir.call_packed("vadd", ins[0].data, outs[0].data, ins[0].shape[0])

    intrin = te.decl_tensor_intrin(z.op, by_pointer, default_buffer_params={"offset_factor": n})
    assert intrin.op is z.op and intrin.reduce_init is None and intrin.reduce_update is None
    assert tuple(intrin.inputs) == tuple(z.op.input_tensors)
    assert [b.name for b in intrin.buffers] == ["x", "y", "z"] and int(intrin.buffers[0].shape[0]) == n
    X = te.placeholder((12,), name="X")
    Y = te.placeholder((12,), name="Y")
    Z = te.compute((12,), lambda i: X[i] + Y[i], name="Z")
    s = te.create_schedule(Z.op)
    _, xi = s[Z].split(Z.op.axis[0], factor=n)
    s[Z].tensorize(xi, intrin)
    assert s[Z].iter_var_attrs[xi].tensor_intrin is intrin
    assert s[Z].iter_var_attrs[xi].iter_type == te.schedule.IterVar.Tensorized
    loop = tecc.lower(s, [X, Y, Z])["main"].body
    assert isinstance(loop, S.For) and isinstance(loop.body, S.Evaluate)  # the inner loop is gone
    assert [str(a) for a in loop.body.value.args] == ['"vadd"', "X", "Z", "4"]

    # the same block handed to a Python function as arrays, built and run
    name = _packed("vadd")
    intrin = te.decl_tensor_intrin(z.op, lambda ins, outs: tir.call_packed(name, *ins, *outs),
                                   default_buffer_params={"offset_factor": n})
    s = te.create_schedule(Z.op)
    _, xi = s[Z].split(Z.op.axis[0], factor=n)
    s[Z].tensorize(xi, intrin)
    a, b, c = rand(12), rand(12), np.zeros(12, "float32")
    run(build(s, [X, Y, Z], "llvm"), a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def _axpb(length):
    """z = x * v + w over ``length`` elements, with ``v`` and ``w`` scalar parameters."""
    x = te.placeholder((length,), name="x")
    v, w = te.var("v"), te.var("w")
    z = te.compute((length,), lambda i: x[i] * v + w, name="z")
    seen = []

    def body(ins, outs, scalars):
        seen.append(list(scalars))
        ib = tir.ir_builder.create()
        xs, zs = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, length, name="e") as e:
            zs[e] = xs[e] * scalars[0].astype("float32") + scalars[1].astype("float32")
        return ib.get()

    intrin = te.decl_tensor_intrin(z.op, body, scalar_params=[v, w], default_buffer_params={"offset_factor": 1})
    return intrin, (v, w), seen


def test_scalar_params_are_declared_and_reach_the_emitted_call():
    n, v, w = te.size_var("n"), te.size_var("v"), te.size_var("w")
    x = te.placeholder((n,), name="x")
    z = te.compute((n,), lambda i: x[i] * v + w, name="z")

    def call(ins, outs, scalars):
        assert list(scalars) == [v, w]
        return tir.call_packed("hw_func", ins[0].data, outs[0].data, scalars[0], scalars[1])

    intrin = te.decl_tensor_intrin(z.op, call, scalar_params=[v, w], default_buffer_params={"offset_factor": 1})
    assert tuple(intrin.scalar_params) == (v, w) and intrin.buffers[0].shape[0].same_as(n)
    A = te.placeholder((10, 10), name="A")
    # scalar arguments interleaved with the tensor one
    C = te.compute((10, 10), lambda i, j: intrin(i * i, A[i, j], i + j), name="C")
    assert isinstance(C.op, te.TensorComputeOp)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    call_ = tecc.lower(s, [A, C])["main"].body.body.body
    assert isinstance(call_, S.Evaluate)
    args = call_.value.args
    assert len(args) == 5 and [str(a) for a in args[:3]] == ['"hw_func"', "A", "C"]
    assert tecc.ir.structural_equal(args[3], i.var * i.var)
    assert tecc.ir.structural_equal(args[4], i.var + j.var)
    assert (str(args[3]), str(args[4])) == ("i*i", "i + j")  # (e): TVM prints "i * i"


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_scalar_params_run_with_the_values_of_each_row(target):
    intrin, (v, w), seen = _axpb(4)
    A = te.placeholder((6, 4), name="A")
    C = te.compute((6, 4), lambda i: intrin(i * i, A[i, 0:4], i + 3), name="C")
    s = te.create_schedule(C.op)
    if target == "cuda":
        s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    a, c = rand(6, 4), np.zeros((6, 4), "float32")
    run(build(s, [A, C], target), a, c)
    assert seen == [[v, w]]  # the body is built once, from the declared parameters
    i = np.arange(6)[:, None]
    np.testing.assert_allclose(c, a * i * i + i + 3, rtol=1e-6)


def test_split_reorder_and_tile_of_an_intrinsic_stage():
    # TVM's test_schedule_tensor_compute1: a stage of gemv blocks (reset/update over k)
    # whose outer loops are split, reordered and tiled
    f, r = 2, 3
    w = te.placeholder((f, r), name="w")
    x = te.placeholder((r,), name="x")
    rr = te.reduce_axis((0, r), name="rr")
    z = te.compute((f,), lambda a: te.sum(w[a, rr] * x[rr], axis=rr), name="z")

    def intrin(ins, outs):
        def loops(first):
            ib = tir.ir_builder.create()
            ww, xx, zz = (ib.buffer_ptr(b) for b in (ins[0], ins[1], outs[0]))
            with ib.for_range(0, f, name="a") as a:
                total = tecc.tir.const(0.0, "float32") if first else zz[a]
                for b in range(r):
                    total = total + ww[a, b] * xx[b]
                zz[a] = total
            return ib.get()

        ib = tir.ir_builder.create()
        zz = ib.buffer_ptr(outs[0])
        with ib.for_range(0, f, name="a") as a:
            zz[a] = tecc.tir.const(0.0, "float32")
        return loops(True), ib.get(), loops(False)

    gemv = te.decl_tensor_intrin(z.op, intrin, default_buffer_params={"offset_factor": 1})
    I, J, K = 6, 8, 2
    W = te.placeholder((I, K, f, r), name="W")
    X = te.placeholder((J, K, r), name="X")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((I, J, f), lambda i, j: gemv(W[i, k, 0:f, 0:r], X[j, k, 0:r], reduce_axis=k), name="C")
    s = te.create_schedule(C.op)
    ai, aj, _ = s[C].op.axis
    aio, aii = s[C].split(ai, 4)
    s[C].reorder(aio, aj, aii)
    tiles = s[C].tile(aio, aj, 2, 4)
    assert list(s[C].leaf_iter_vars[:5]) == [*tiles, aii]
    s = s.normalize()
    te.schedule.ScheduleOps(s, te.schedule.InferBound(s))
    wv, xv, c = rand(I, K, f, r), rand(J, K, r), np.zeros((I, J, f), "float32")
    run(build(s, [W, X, C], "llvm"), wv, xv, c)
    np.testing.assert_allclose(c, np.einsum("ikab,jkb->ija", wv, xv), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# tensorize: more stages it applies to
# ---------------------------------------------------------------------------------------
def _masked_vadd(xo, length, factor):
    """A vector add over ``factor`` elements of block ``xo`` that writes 0 past
    ``length`` (the tail of a cache whose rows were padded to whole blocks)."""
    vx = te.placeholder((factor,), name="vx")
    vy = te.placeholder((factor,), name="vy")
    vz = te.compute((factor,), lambda i: tir.Select(xo * factor + i < length, vx[i] + vy[i],
                                                    tir.const(0, "float32")), name="vz")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        xs, ys, zs = (ib.buffer_ptr(b) for b in (ins[0], ins[1], outs[0]))
        with ib.for_range(0, factor, name="e") as e:
            with ib.if_scope(xo * factor + e < length):
                zs[e] = xs[e] + ys[e]
            with ib.else_scope():
                zs[e] = tir.const(0, "float32")
        return ib.get()

    return te.decl_tensor_intrin(vz.op, body, default_buffer_params={"offset_factor": factor})


def test_tensorize_a_cache_write_stage_with_a_masked_intrinsic():
    # TVM's test_tensorize_vadd, second part: 33 elements split by 8, cache_write
    # relayouts into 5 blocks of 8, each tensorized (its tail masked)
    infer, match = _hooks()
    m, factor = 33, 8
    x, y = te.placeholder((m,), name="x"), te.placeholder((m,), name="y")
    z = te.compute((m,), lambda i: x[i] + y[i], name="z")
    s = te.create_schedule(z.op)
    s[z].split(z.op.axis[0], factor=factor)
    zg = s.cache_write(z, "global")
    xo, xi = zg.op.axis
    assert [int(d) for d in zg.shape] == [5, 8]
    vadd = _masked_vadd(xo, m, factor)
    s[zg].tensorize(xi, vadd)
    s = s.normalize()
    out_dom, in_dom = infer(s[zg], te.schedule.InferBound(s))
    assert int(out_dom[xo].extent) == 1 and out_dom[xo].min is xo.var  # one block, at xo
    body = match(s[zg], out_dom, in_dom, vadd)[0]
    ana = tecc.arith.Analyzer()
    want = tir.stmt_functor.substitute(vadd.op.body[0], {xo.var: out_dom[xo].min})
    assert tecc.ir.structural_equal(ana.simplify(body), ana.simplify(want))
    a, b, c = rand(m), rand(m), np.zeros(m, "float32")
    run(build(s, [x, y, z], "llvm"), a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_tensorize_with_an_intrinsic_declared_from_the_stage_itself():
    # TVM's test_tensorize_vadd, third part: the whole loop becomes one call
    x, y = te.placeholder((32,), name="x"), te.placeholder((32,), name="y")
    z = te.compute((32,), lambda i: x[i] + y[i], name="z")
    name = _packed("vadd")
    same = te.decl_tensor_intrin(z.op, lambda ins, outs: tir.call_packed(name, ins[0], ins[1], outs[0]))
    s = te.create_schedule(z.op)
    s[z].tensorize(z.op.axis[0], same)
    assert isinstance(tecc.lower(s, [x, y, z])["main"].body, S.Evaluate)
    a, b, c = rand(32), rand(32), np.zeros(32, "float32")
    run(build(s, [x, y, z], "llvm"), a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


@pytest.mark.parametrize("outer_loops", [1, 2])
def test_tensorize_gemv_without_a_reset(outer_loops):
    # TVM's test_tensorize_matmul (no-reset cases): the first block of k runs the
    # whole body, the later ones accumulate with the update
    infer, match = _hooks()
    n, l, factor, rfactor = 8, 16, 4, 4
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((n, l), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(B[j, k] * A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=factor)
    ro, ri = s[C].split(k, factor=rfactor)
    if outer_loops == 1:
        s[C].reorder(yo, ro, yi, ri)
    else:
        roo, roi = s[C].split(ro, factor=2)
        s[C].reorder(yo, roo, roi, yi, ri)
    gemv = _gemv_intrin(factor, rfactor, with_reset=False)
    assert gemv.reduce_init is None and gemv.reduce_update is not None
    s[C].tensorize(yi, gemv)
    s = s.normalize()
    out_dom, in_dom = infer(s[C], te.schedule.InferBound(s))
    assert int(out_dom[x].extent) == 1 and int(out_dom[y].extent) == factor
    assert tecc.ir.structural_equal(out_dom[y].min, yo.var * factor)
    body = match(s[C], out_dom, in_dom, gemv)
    ana = tecc.arith.Analyzer()
    assert tecc.ir.structural_equal(ana.simplify(body[0]), ana.simplify(gemv.op.body[0]))
    a, b, c = rand(n, l), rand(n, l), np.zeros((n, n), "float32")
    run(build(s, [A, B, C], "llvm"), a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)


def test_tensorize_matches_index_expressions_after_simplifying_them():
    # TVM's test_tensorize_op: the stage and the intrinsic index with the same div/mod
    # expressions, which must compare equal once simplified
    def fold(src):
        return te.compute((9, 9), lambda i, j: src[tir.indexdiv(j, 3) + tir.indexmod(i, 3),
                                                   tir.indexmod(j, 3) + tir.indexdiv(i, 3)], name="fold")

    name = _packed("fold3x3")
    pattern = fold(te.placeholder((5, 5), name="a"))
    intrin = te.decl_tensor_intrin(pattern.op, lambda ins, outs: tir.call_packed(name, ins[0], outs[0]),
                                   default_buffer_params={"offset_factor": 2})
    A = te.placeholder((5, 5), name="A")
    B = fold(A)
    s = te.create_schedule(B.op)
    s[B].tensorize(B.op.axis[0], intrin)
    s = s.normalize()
    a, b = rand(5, 5), np.zeros((9, 9), "float32")
    run(build(s, [A, B], "llvm"), a, b)
    np.testing.assert_array_equal(b, _fold3x3(a))


def test_tensorize_a_topi_max_pool():
    # TVM's test_tensor_pool (smaller): the rows and columns of each channel of a
    # 3x3 max pool computed by one pooling intrinsic
    from tecc import topi

    c, h = 4, 6
    a_ = te.placeholder((c, h, h), name="a")
    kh, kw = te.reduce_axis((0, 3), name="kh"), te.reduce_axis((0, 3), name="kw")
    p_ = te.compute((c, h - 2, h - 2), lambda ch, y, x: te.max(a_[ch, y + kh, x + kw], axis=[kh, kw]), name="p")
    name = _packed("maxpool3x3")
    pool = te.decl_tensor_intrin(p_.op, lambda ins, outs: tir.call_packed(name, ins[0], outs[0]),
                                 default_buffer_params={"offset_factor": 1})
    A = te.placeholder((1, c, h, h), name="A")
    P = topi.nn.pool2d(data=A, kernel=(3, 3), stride=(1, 1), dilation=(1, 1), padding=(0, 0, 0, 0),
                       pool_type="max")
    s = te.create_schedule(P.op)
    _, rows, _, _ = P.op.axis
    s[P].tensorize(rows, pool)
    a, p = rand(1, c, h, h), np.zeros((1, c, h - 2, h - 2), "float32")
    run(build(s, [A, P], "llvm"), a, p)
    want = np.max(np.lib.stride_tricks.sliding_window_view(a, (3, 3), axis=(2, 3)), axis=(-2, -1))
    np.testing.assert_array_equal(p, want)


def test_tensorize_of_a_stage_computed_by_an_intrinsic_is_rejected():
    # TVM's test_tensorize_tensor_compute_op: difference (g), tecc raises instead of
    # ignoring the request
    vadd = _vadd(16)
    A = te.placeholder((4, 16), name="A")
    B = te.placeholder((4, 16), name="B")
    C = te.compute((4, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]), name="C")
    other = _vadd(64)
    s = te.create_schedule(C.op)
    with pytest.raises(tecc.ScheduleError, match=r"stage 'C': tensorize applies to computed stages "
                                                 r"\(te.compute\); 'C' is computed by a tensor intrinsic"):
        s[C].tensorize(C.op.axis[0], other)
    assert not s[C].iter_var_attrs.get(C.op.axis[0])  # nothing was recorded
