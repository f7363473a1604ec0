"""``tecc.lower`` / ``tecc.build`` as TVM's test_te_build_lower.py uses them -- an
rfactor'd reduction bound to threads, a scalar ``te.size_var`` as a build argument,
the guard of an uneven split -- and TIR node constructors given Python numbers, each
built for "llvm" and "cuda" (the emulator, race-checked) and compared with numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from compat_te import TARGETS, bind_fused, build, build_run, rand, run
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _collect(stmt, cls):
    found = []
    tir.stmt_functor.post_order_visit(stmt, lambda x: found.append(x) if isinstance(x, cls) else None)
    return found


@pytest.mark.parametrize("target", TARGETS)
def test_lower_rfactor_bound_to_blocks_and_two_thread_axes(target):
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    if target == "cuda":
        xo, xi = s[B].split(s[B].op.axis[0], factor=32)
        s[B.op].bind(xo, te.thread_axis("blockIdx.x"))
        s[B.op].bind(xi, te.thread_axis("threadIdx.y"))
        s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
        s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    mod = tecc.lower(s, [A, B])
    assert isinstance(mod["main"], tir.PrimFunc)
    f = build(mod, None, target)
    a, b = rand(37, 45), np.zeros(37, "float32")
    run(f, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_size_var_as_a_build_argument(target):
    n, m, x = te.size_var("n"), te.size_var("m"), te.size_var("x")
    A = te.placeholder((n, m), name="A")
    B = te.compute((m, n // x), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    if target == "cuda":
        bind_fused(s[B], 8)
    f = build(s, [A, B, x], target)
    a = rand(6, 6)
    for xv in (2, 3):
        b = np.zeros((6, 6 // xv), "float32")
        run(f, a, b, xv)
        np.testing.assert_array_equal(b, a[:, : 6 // xv])


def test_split_uneven_has_one_likely_guard_just_inside_the_loop_it_depends_on():
    a = te.placeholder((16, 16), name="a")
    b = te.placeholder((16, 16), name="b")
    c = te.compute((16, 16), lambda x, y: a[x, y] + b[x, y], name="c")
    x, y = c.op.axis
    s = te.create_schedule(c.op)
    xo, xi = s[c].split(x, 5)
    stmt = tecc.lower(s, [a, b, c])["main"].body
    # for xo: for xi: if likely(xo*5 + xi < 16): for y: ...
    assert isinstance(stmt, tir.For) and stmt.loop_var is xo.var
    assert isinstance(stmt.body, tir.For) and stmt.body.loop_var is xi.var
    guard = stmt.body.body
    assert isinstance(guard, tir.IfThenElse) and isinstance(guard.then_case, tir.For)
    assert guard.then_case.loop_var is y.var
    assert str(tecc.lower(s, [a, b, c])).count("likely(") == 1
    assert len(_collect(stmt, tir.IfThenElse)) == 1


def test_the_guard_follows_the_inner_loop_when_it_is_reordered_inward():
    a = te.placeholder((16, 16), name="a")
    c = te.compute((16, 16), lambda x, y: a[x, y] * 2, name="c")
    x, y = c.op.axis
    s = te.create_schedule(c.op)
    xo, xi = s[c].split(x, 5)
    s[c].reorder(xo, y, xi)
    stmt = tecc.lower(s, [a, c])["main"].body
    inner = stmt.body.body
    assert inner.loop_var is xi.var and isinstance(inner.body, tir.IfThenElse)
    assert len(_collect(stmt, tir.IfThenElse)) == 1


@pytest.mark.parametrize("target", TARGETS)
def test_uneven_split_runs_in_bounds(target):
    a = te.placeholder((16, 16), name="a")
    b = te.placeholder((16, 16), name="b")
    c = te.compute((16, 16), lambda x, y: a[x, y] + b[x, y], name="c")
    s = te.create_schedule(c.op)
    xo, xi = s[c].split(c.op.axis[0], 5)
    if target == "cuda":
        s[c].bind(xo, te.thread_axis("blockIdx.x"))
        s[c].bind(xi, te.thread_axis("threadIdx.x"))
    av, bv, cv = rand(16, 16), rand(16, 16), np.zeros((16, 16), "float32")
    f = build(s, [a, b, c], target)
    if target == "llvm":
        assert f.check(av, bv, cv) == []
    run(f, av, bv, cv)
    np.testing.assert_allclose(cv, av + bv, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# TIR node constructors with Python numbers
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_regression_select_and_node_constructors_take_python_numbers(target):
    """``tir.Select(cond, 1, 0)`` and ``tir.Add(x, 1)``-style constructors kept the
    Python numbers as they were; printing or lowering raised "cannot visit a int"."""
    n = 12
    A = te.placeholder((n,), name="A", dtype="int32")
    flag = te.compute((n,), lambda i: tir.Select(i > 1, 1, 0), name="flag")
    B = te.compute((n,), lambda i: tir.Add(tir.Mul(flag[i], A[i]), 1), name="B")
    C = te.compute((n,), lambda i: tir.Max(tir.Sub(B[i], 5), tir.FloorMod(i, 3)) +
                   tir.Select(tir.And(i > 3, tir.LT(i, 9)), 100, 0), name="C")
    for e in (tir.Select(A[0] > 1, 1, 0), tir.Add(A[0], 1), tir.Sub(2, A[0]), tir.EQ(A[0], 3)):
        assert "cannot" not in str(e)
        assert all(isinstance(getattr(e, f), tir.PrimExpr) for f in ("a", "b") if hasattr(e, f))
    s = te.create_schedule(C.op)
    if target == "cuda":
        for T in (flag, B):
            s[T].compute_inline()
        bind_fused(s[C], 4)
    a, c = rand(n, dtype="int32"), np.zeros(n, "int32")
    build_run(s, [A, C], [a, c], target)
    i = np.arange(n)
    b = np.where(i > 1, a, 0) + 1
    np.testing.assert_array_equal(c, np.maximum(b - 5, i % 3) + np.where((i > 3) & (i < 9), 100, 0))


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_node_constructors_take_equality_written_with_operators(target):
    """``tir.Select(i % 3 == 0, ...)``: ``==``/``!=`` on expressions give a lazy
    comparison that node constructors must turn into EQ/NE (lowering raised "cannot
    visit a EqualOp")."""
    n = 9
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: tir.Select(i % 3 == 0, A[i], tir.const(0.0, "float32")), name="B")
    C = te.compute((n,), lambda i: tir.Select(i != 1, B[i], 7.0) + tir.Cast("float32", tir.Add(i == 2, 0)),
                   name="C")
    s = te.create_schedule(C.op)
    if target == "cuda":
        s[B].compute_inline()
        bind_fused(s[C], 4)
    a, c = rand(n), np.zeros(n, "float32")
    build_run(s, [A, C], [a, c], target)
    i = np.arange(n)
    want = np.where(i != 1, np.where(i % 3 == 0, a, 0), 7) + (i == 2)
    np.testing.assert_allclose(c, want, rtol=1e-6)


def test_buffer_store_and_load_take_python_numbers_and_lists():
    b = tir.decl_buffer((2, 3), "float32", "b")
    st = tir.BufferStore(b, 1.0, [0, 1])
    ld = tir.BufferLoad(b, [1, 2])
    assert str(st) == "b[0, 1] = 1f" and str(ld) == "b[1, 2]"
    assert all(isinstance(i, tir.IntImm) for i in st.indices + ld.indices)
    assert isinstance(st.value, tir.FloatImm) and st.value.dtype == "float32"


def test_the_remaining_node_constructors_take_python_numbers():
    x = te.var("x")
    nodes = [tir.Not(True), tir.Cast("float32", 3), tir.Let(x, 1, x + 1), tir.Broadcast(1.0, 4),
             tir.Ramp(0, 1, 4)]
    for node in nodes:
        str(node)
    assert isinstance(nodes[1].value, tir.IntImm) and isinstance(nodes[3].value, tir.FloatImm)


def test_int_imm_compares_with_a_python_int_by_value():
    ten = tir.const(10, "int32")
    assert ten == 10
    assert not (ten != 10)


def test_parallel_pragmas_lowered_then_built_for_c_exported_and_loaded(tmp_path):
    # TVM's test_target_codegen_c_host.py::test_add_pipeline: a pipeline of copies and
    # an add, the output's loops split twice, parallel and vectorized, with the three
    # parallel pragmas; lowered first, the module then built for "c"
    n = 1024
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    AA = te.compute((n,), lambda *i: A(*i), name="A")
    BB = te.compute((n,), lambda *i: B(*i), name="B")
    T = te.compute((n,), lambda *i: AA(*i) + BB(*i), name="T")
    C = te.compute((n,), lambda *i: T(*i), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    xoo, xoi = s[C].split(xo, factor=13)
    s[C].parallel(xoi)
    s[C].pragma(xoo, "parallel_launch_point")
    s[C].pragma(xoi, "parallel_stride_pattern")
    s[C].pragma(xoi, "parallel_barrier_when_finish")
    s[C].vectorize(xi)
    assert [k.value for k in s[C].iter_var_attrs[xoi].pragma_keys] == \
        ["parallel_stride_pattern", "parallel_barrier_when_finish"]
    mod = tecc.lower(s, [A, B, C], name="test_fadd_pipeline")
    loops = {f.loop_var.name: f for f in _collect(mod["test_fadd_pipeline"].body, tir.For)}
    assert "pragma_parallel_launch_point" in dict(loops[xoo.var.name].annotations)
    inner = loops[xoi.var.name]
    assert inner.kind == tir.ForKind.PARALLEL
    assert {"pragma_parallel_stride_pattern", "pragma_parallel_barrier_when_finish"} <= set(dict(inner.annotations))
    assert loops[xi.var.name].kind == tir.ForKind.VECTORIZED
    built = tecc.build(mod, target="c")
    assert "#pragma omp parallel for" in built.get_source()
    built.export_library(str(tmp_path / "pipeline.so"))
    f = tecc.runtime.load_module(str(tmp_path / "pipeline.so"))["test_fadd_pipeline"]
    a, b = tecc.nd.array(rand(n)), tecc.nd.array(rand(n))
    c = tecc.nd.array(np.zeros(n, "float32"))
    f(a, b, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
