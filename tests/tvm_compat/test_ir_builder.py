"""TVM's ``tir.ir_builder``: statements written as Python code, built and run for
"llvm" and, with ``thread_extent`` scopes, for "cuda" (emulated without a GPU)."""
import warnings

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.tir.ir_builder import IRBuilderError
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _build(body, buffers, name, target="llvm"):
    f = tir.PrimFunc(buffers, body).with_attr("global_symbol", name)
    return tecc.build(f, target=target)


def _run(mod, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the GPU emulator's notice
        mod(*arrays)
    return arrays


def _bufs(n, *names, dtype="float32"):
    return [tir.decl_buffer((n,), dtype, name) for name in names]


# ---------------------------------------------------------------------------------------
# loops and branches
# ---------------------------------------------------------------------------------------
def test_for_range_names_loops_like_tvm_and_counts_from_begin():
    ib = tir.ir_builder.create()
    names = []
    for _ in range(5):
        with ib.for_range(2, 6) as v:
            names.append(v.name)
    assert names == ["i", "j", "k", "i_0", "i_1"]
    loops = []
    tir.stmt_functor.post_order_visit(ib.get(), lambda n: loops.append(n) if isinstance(n, tir.For) else None)
    assert all(int(lp.min) == 2 and int(lp.extent) == 4 for lp in loops)


@pytest.mark.parametrize("kind, want", [("serial", tir.ForKind.SERIAL), ("parallel", tir.ForKind.PARALLEL),
                                        ("vectorize", tir.ForKind.VECTORIZED), ("unroll", tir.ForKind.UNROLLED)])
def test_for_range_kinds_build_and_run(kind, want):
    n = 16
    A, B = _bufs(n, "A", "B")
    ib = tir.ir_builder.create()
    a, b = ib.buffer_ptr(A), ib.buffer_ptr(B)
    with ib.for_range(0, n, name="i", kind=kind) as i:
        b[i] = a[i] + 1.0
    body = ib.get()
    assert body.kind is want
    x = np.arange(n, dtype="float32")
    y = np.zeros(n, "float32")
    _build(body, [A, B], f"add_{kind}")(x, y)
    np.testing.assert_allclose(y, x + 1)


def test_for_range_with_an_int64_bound_makes_an_int64_loop():
    ib = tir.ir_builder.create()
    with ib.for_range(0, tir.const(8, "int64")) as i:
        assert i.dtype == "int64"
    with ib.for_range(0, 8, dtype="int64") as j:
        assert j.dtype == "int64"


def test_if_else_while_let_and_new_scope_run():
    n = 8
    A, B = _bufs(n, "A", "B", dtype="int32")
    ib = tir.ir_builder.create()
    a, b = ib.buffer_ptr(A), ib.buffer_ptr(B)
    with ib.for_range(0, n, name="i") as i:
        with ib.new_scope():
            twice = ib.let("twice", a[i] * 2)
            with ib.if_scope(ib.likely(i % 2 == 0)):
                b[i] = twice
            with ib.else_scope():
                b[i] = 0
                steps = ib.allocate("int32", 1, name="steps", scope="local")
                steps[0] = 0
                with ib.while_loop(steps[0] < i):
                    steps[0] = steps[0] + 1
                b[i] = steps[0] + a[i]
    body = ib.get()
    x = np.arange(n, dtype="int32") * 10
    y = np.zeros(n, "int32")
    _build(body, [A, B], "branches")(x, y)
    want = np.where(np.arange(n) % 2 == 0, x * 2, np.arange(n) + x)
    np.testing.assert_array_equal(y, want)


def test_allocate_wraps_what_follows_it_in_its_scope():
    ib = tir.ir_builder.create()
    with ib.new_scope():
        t = ib.allocate("float32", (4,), name="t")
        t[0] = 1.0
    ib.emit(tir.call_extern("int32", "after"))
    body = ib.get()
    assert isinstance(body, tir.SeqStmt)
    assert isinstance(body[0], tir.Allocate) and body[1].value.args[0].value == "after"


def test_emit_takes_expressions_and_wrapping_functions():
    ib = tir.ir_builder.create()
    x = te.var("x")
    ib.emit(tir.call_extern("int32", "puts", tir.StringImm("hi")))
    ib.emit(lambda body: tir.LetStmt(x, tir.const(1), body))
    ib.emit(tir.Evaluate(x))
    body = ib.get()
    assert isinstance(body[0], tir.Evaluate) and isinstance(body[1], tir.LetStmt)
    assert body[1].body.value is x


# ---------------------------------------------------------------------------------------
# buffers and pointers
# ---------------------------------------------------------------------------------------
def test_a_single_index_into_a_2d_buffer_is_a_row_major_element_number():
    n, m = 4, 6
    A = tir.decl_buffer((n, m), "float32", "A")
    B = tir.decl_buffer((n, m), "float32", "B")
    ib = tir.ir_builder.create()
    a, b = ib.buffer_ptr(A), ib.buffer_ptr(B)
    with ib.for_range(0, n * m, name="k") as k:
        b[k] = a[k] * 3.0
    x = np.random.default_rng(1).standard_normal((n, m)).astype("float32")
    y = np.zeros((n, m), "float32")
    _build(ib.get(), [A, B], "flat_index")(x, y)
    np.testing.assert_allclose(y, x * 3)


def test_buffer_ptr_with_a_shape_views_the_same_memory():
    n, m = 3, 5
    A = tir.decl_buffer((n * m,), "float32", "A")
    B = tir.decl_buffer((n * m,), "float32", "B")
    ib = tir.ir_builder.create()
    a2 = ib.buffer_ptr(A, shape=(n, m))
    b = ib.buffer_ptr(B)
    assert a2.asobject().data is A.data and a2.dtype == "float32"
    with ib.for_range(0, n, name="i") as i:
        with ib.for_range(0, m, name="j") as j:
            b[i * m + j] = a2[i, m - 1 - j]
    x = np.arange(n * m, dtype="float32")
    y = np.zeros(n * m, "float32")
    _build(ib.get(), [A, B], "view")(x, y)
    np.testing.assert_allclose(y, x.reshape(n, m)[:, ::-1].ravel())


def test_stores_convert_numbers_and_reject_other_element_types():
    ib = tir.ir_builder.create()
    f = ib.allocate("float32", 2, name="F")
    f[0] = 1          # an int literal becomes float32
    f[1] = 2.5
    with pytest.raises(IRBuilderError, match=r"int32 value into 'F', which holds float32.*astype\('float32'\)"):
        f[0] = tir.const(3, "int32")
    with pytest.raises(IRBuilderError, match=r"'F' has 1 dimensions.*got 2"):
        f[0, 1] = 1.0


# ---------------------------------------------------------------------------------------
# user errors
# ---------------------------------------------------------------------------------------
def test_builder_errors_say_what_to_do():
    ib = tir.ir_builder.create()
    with pytest.raises(IRBuilderError, match="else_scope must directly follow an if_scope"):
        ib.else_scope()
    with pytest.raises(IRBuilderError, match="kind 'gpu' is unknown.*'serial'"):
        ib.for_range(0, 4, kind="gpu")
    with pytest.raises(IRBuilderError, match="begin must be a scalar integer"):
        ib.for_range(0.5, 4)
    with pytest.raises(IRBuilderError, match="thread axis such as te.thread_axis"):
        ib.scope_attr(te.var("x"), "thread_extent", 4)
    with pytest.raises(IRBuilderError, match="at least 1"):
        ib.scope_attr(te.thread_axis("threadIdx.x"), "thread_extent", 0)
    with pytest.raises(IRBuilderError, match="buffer_ptr takes a tir.Buffer"):
        ib.buffer_ptr(np.zeros(3))
    with pytest.raises(IRBuilderError, match="emit takes a statement or an expression"):
        ib.emit("x = 1")
    with ib.for_range(0, 4):
        with pytest.raises(IRBuilderError, match=r"get\(\) called inside 1 open scope"):
            ib.get()


# ---------------------------------------------------------------------------------------
# CUDA kernels written with thread_extent scopes
# ---------------------------------------------------------------------------------------
def _reverse_blocks_kernel(n, nthreads):
    """Each block reverses its chunk of A into B through shared memory (needs a barrier)."""
    A, B = _bufs(n, "A", "B")
    ib = tir.ir_builder.create()
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", n // nthreads)
    ib.scope_attr(tx, "thread_extent", nthreads)
    a, b = ib.buffer_ptr(A), ib.buffer_ptr(B)
    tile = ib.allocate("float32", nthreads, name="tile", scope="shared")
    tile[tx] = a[bx * nthreads + tx]
    b[bx * nthreads + tx] = tile[nthreads - 1 - tx]
    return ib.get(), [A, B]


def test_a_cuda_kernel_written_with_thread_extent_scopes_runs():
    n, nthreads = 256, 64
    body, bufs = _reverse_blocks_kernel(n, nthreads)
    m = _build(body, bufs, "reverse_blocks", target="cuda")
    src = m.imported_modules[0].get_source() if m.imported_modules else m.get_source()
    assert "__shared__" in src and "__syncthreads()" in src
    x = np.arange(n, dtype="float32")
    y = np.zeros(n, "float32")
    _run(m, x, y)
    np.testing.assert_array_equal(y, x.reshape(-1, nthreads)[:, ::-1].ravel())


def test_a_cuda_kernel_with_a_symbolic_size_guards_its_threads():
    n = te.var("n")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    ib = tir.ir_builder.create()
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", (n + 31) // 32)
    ib.scope_attr(tx, "thread_extent", 32)
    a, b = ib.buffer_ptr(A), ib.buffer_ptr(B)
    idx = bx * 32 + tx
    with ib.if_scope(idx < n):
        b[idx] = a[idx] * 2.0
    m = _build(ib.get(), [A, B], "scale_n", target="cuda")
    x = np.random.default_rng(2).standard_normal(100).astype("float32")
    y = np.zeros(100, "float32")
    _run(m, x, y)
    np.testing.assert_allclose(y, x * 2)


def test_a_cuda_kernel_runs_clean_under_the_emulators_checker():
    n, nthreads = 128, 32
    body, bufs = _reverse_blocks_kernel(n, nthreads)
    m = _build(body, bufs, "reverse_checked", target="cuda")
    x = np.arange(n, dtype="float32")
    y = np.zeros(n, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert m.check(x, y) == []
