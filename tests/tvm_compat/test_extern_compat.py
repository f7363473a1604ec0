"""``te.extern`` as TVM's classic-TE tests use it: a stage written with
``tir.ir_builder`` (for "llvm", and with thread_extent scopes for "cuda"), a
``tir.call_packed`` on the buffers' data pointers or on the buffers themselves (one
and two outputs, rank-0 buffers), mixed with ``te.compute`` stages -- built, run and
compared with numpy."""
import ctypes

import numpy as np
import pytest

import tecc
from tecc import te, tir
from compat_te import TARGETS, bind_blocks_threads, build_run, rand
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


@pytest.fixture
def registry():
    """Registers packed functions under fresh names; removes them after the test."""
    names = []

    def register(name, f):
        tecc.register_func(name, f, override=True)
        names.append(name)
        return name

    yield register
    for name in names:
        if tecc.get_global_func(name, allow_missing=True) is not None:
            tecc.runtime.remove_global_func(name)


def _floats_at(address, count):
    """A numpy view of ``count`` float32 at ``address`` (a data pointer handed to a
    packed function)."""
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(address))


# ---------------------------------------------------------------------------------------
# call_packed on data pointers
# ---------------------------------------------------------------------------------------
def test_extern_with_call_packed_on_data_pointers(registry):
    m = te.size_var("m")
    A = te.placeholder((m,), name="A")
    seen = []

    def extern_func(ins, outs):
        assert isinstance(ins[0], tir.Buffer) and isinstance(outs[0], tir.Buffer)
        seen.append((tuple(ins[0].shape), tuple(outs[0].shape)))
        return tir.call_packed("compat.extern.myadd", ins[0].data, outs[0].data, m)

    B = te.extern((m,), [A], extern_func, name="B")
    assert tuple(B.shape) == (m,) and isinstance(B.op, te.ExternOp)
    assert seen == [((m,), (m,))]

    def myadd(a_ptr, b_ptr, count):
        _floats_at(b_ptr, count)[:] = _floats_at(a_ptr, count) + 1

    registry("compat.extern.myadd", myadd)
    s = te.create_schedule(B.op)
    a, b = rand(7), np.zeros(7, "float32")
    build_run(s, [A, B], [a, b], "llvm")
    np.testing.assert_allclose(b, a + 1)


def test_extern_buffers_are_te_schedule_buffers():
    A = te.placeholder((4,), name="A")
    kinds = []
    te.extern((4,), [A], lambda ins, outs: kinds.append(
        [isinstance(b, te.schedule.Buffer) for b in (*ins, *outs)]) or
        tir.call_packed("compat.extern.none", ins[0].data, outs[0].data))
    assert te.schedule.Buffer is tir.Buffer and kinds == [[True, True]]


def test_extern_with_two_outputs(registry):
    m = te.size_var("m")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] * 10, name="B")

    def extern_func(ins, outs):
        return tir.call_packed("compat.extern.myadd2", ins[0].data, ins[1].data, outs[0].data, outs[1].data, m)

    res = te.extern([A.shape, A.shape], [A, B], extern_func, name="E")
    assert len(res) == 2 and res[0].op is res[1].op
    assert (res[0].value_index, res[1].value_index) == (0, 1)

    def myadd2(a_ptr, b_ptr, sum_ptr, diff_ptr, count):
        a, b = _floats_at(a_ptr, count), _floats_at(b_ptr, count)
        _floats_at(sum_ptr, count)[:] = a + b
        _floats_at(diff_ptr, count)[:] = b - a

    registry("compat.extern.myadd2", myadd2)
    C = te.compute((m,), lambda i: res[0][i] * res[1][i], name="C")
    s = te.create_schedule(C.op)
    a, c = rand(9), np.zeros(9, "float32")
    build_run(s, [A, C], [a, c], "llvm")
    np.testing.assert_allclose(c, (a + 10 * a) * (10 * a - a), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# call_packed on buffers (they arrive as NDArrays)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["llvm", "c"])
def test_extern_tensor_times_a_scalar_tensor(registry, target):
    def my_scale(tensor, scalar, out):
        tecc.nd.array(tensor.numpy() * scalar.numpy()).copyto(out)

    registry("compat.extern.tensor_scalar_scale", my_scale)
    a, b, c = rand(10), np.array(rand(1)[0], "float32"), rand(10)
    A = te.placeholder(a.shape, name="A")
    B = te.placeholder(b.shape, name="B")
    C = te.extern(a.shape, [A, B], lambda ins, outs: tir.call_packed(
        "compat.extern.tensor_scalar_scale", ins[0], ins[1], outs[0]), name="C")
    s = te.create_schedule(C.op)
    f = tecc.build(s, [A, B, C], target)
    tc = tecc.nd.array(c)
    f(tecc.nd.array(a), tecc.nd.array(b), tc)
    np.testing.assert_allclose(tc.numpy(), a * b, rtol=1e-6)


def test_extern_copy_of_a_rank0_tensor(registry):
    registry("compat.extern.copy", lambda x, y: x.copyto(y))
    a, b = np.array(rand(1)[0], "float32"), np.array(0.0, "float32")
    A = te.placeholder(a.shape, name="A")
    B = te.extern(a.shape, [A], lambda ins, outs: tir.call_packed("compat.extern.copy", ins[0], outs[0]),
                  name="B")
    assert tuple(B.shape) == ()
    f = tecc.build(te.create_schedule(B.op), [A, B], "llvm")
    ta, tb = tecc.nd.array(a), tecc.nd.array(b)
    f(ta, tb)
    np.testing.assert_array_equal(tb.numpy(), ta.numpy())


# ---------------------------------------------------------------------------------------
# ir_builder bodies, between te.compute stages
# ---------------------------------------------------------------------------------------
def _add_one_body(n, gpu):
    def body(ins, outs):
        ib = tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        if gpu:
            bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
            ib.scope_attr(bx, "thread_extent", (n + 31) // 32)
            ib.scope_attr(tx, "thread_extent", 32)
            i = bx * 32 + tx
            with ib.if_scope(i < n):
                b[i] = a[i] + 1.0
        else:
            with ib.for_range(0, n, name="i") as i:
                b[i] = a[i] + 1.0
        return ib.get()

    return body


@pytest.mark.parametrize("target", TARGETS)
def test_extern_written_with_ir_builder_between_computes(target):
    n = 100
    X = te.placeholder((n,), name="X")
    A = te.compute((n,), lambda i: X[i] * 3, name="A")
    B = te.extern((n,), [A], _add_one_body(n, target == "cuda"), name="B", dtype="float32")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    if target == "cuda":
        bind_blocks_threads(s[A], A.op.axis[0], 32)
        bind_blocks_threads(s[C], C.op.axis[0], 32)
    x, c = rand(n), np.zeros(n, "float32")
    build_run(s, [X, C], [x, c], target)
    np.testing.assert_allclose(c, (3 * x + 1) * 2, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_extern_with_two_outputs_written_with_ir_builder(target):
    n = 50
    A = te.placeholder((n,), name="A")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        a = ib.buffer_ptr(ins[0])
        lo, hi = ib.buffer_ptr(outs[0]), ib.buffer_ptr(outs[1])
        if target == "cuda":
            tx = te.thread_axis("threadIdx.x")
            ib.scope_attr(tx, "thread_extent", n)
            lo[tx] = te.min(a[tx], 0.5)
            hi[tx] = te.max(a[tx], 0.5)
        else:
            with ib.for_range(0, n, name="i") as i:
                lo[i] = te.min(a[i], 0.5)
                hi[i] = te.max(a[i], 0.5)
        return ib.get()

    lo, hi = te.extern([(n,), (n,)], [A], body, name="clip", dtype=["float32", "float32"])
    assert (lo.value_index, hi.value_index) == (0, 1)
    s = te.create_schedule([lo.op])
    a, l_, h_ = rand(n), np.zeros(n, "float32"), np.zeros(n, "float32")
    build_run(s, [A, lo, hi], [a, l_, h_], target)
    np.testing.assert_array_equal(l_, np.minimum(a, 0.5))
    np.testing.assert_array_equal(h_, np.maximum(a, 0.5))
