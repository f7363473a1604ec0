"""``te.hybrid``, TVM's hybrid script: Python functions that run as numpy code
(``output_tensor``/``allocate``/``bind``... emulated) and, called with te tensors,
are parsed into the statement of a ``HybridOp`` (an extern stage) that tecc lowers,
schedules and builds -- for "llvm", and for "cuda" (emulated, checked for races)
where the script binds GPU indices.  Every result is compared with numpy and with the
script's own Python run.  The behaviours follow TVM's test_te_hybrid_script.py; the
user errors each have a test."""
import os

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.te.hybrid import HYBRID_GLOBALS, HybridOp, HybridScriptError, script
from compat_te import build, rand, run
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _build_run(outs, args, arrays, target="llvm", sch=None, shapes=None):
    """Build the op of ``outs`` with arguments ``args`` (tensors then outputs), run on
    ``arrays`` (inputs; outputs of ``shapes``, by default their constant shapes, are
    appended, zero-filled) and return the outputs."""
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    sch = sch if sch is not None else te.create_schedule(outs[0].op)
    mod = build(sch, list(args) + list(outs), target)
    shapes = shapes or [[int(d) for d in t.shape] for t in outs]
    res = [np.zeros(shape, t.dtype) for shape, t in zip(shapes, outs)]
    run(mod, *arrays, *res)
    return res


def _loops(stmt):
    found = []
    tir.stmt_functor.post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, tir.For) else None)
    return found[::-1]


def _nodes(stmt, cls):
    found = []
    tir.stmt_functor.post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


# ---------------------------------------------------------------------------------------
# scripts used by several tests (a module-level script is also callable from others)
# ---------------------------------------------------------------------------------------
@script
def outer_product(n, m, a, b):
    """A docstring is skipped."""
    c = output_tensor((n, m), a.dtype)
    for i in range(n):
        for j in range(m):
            assert i < n and j < m, "index out of range!"
            c[i, j] = a[i] * b[j]
    return c


@script
def fanout(n, a):
    three = 3.0
    b = output_tensor((a.shape[0] - 3,), a.dtype)
    for i in range(a.shape[0] - 3):
        sigma = 0.0
        for j in range(3):
            sigma += a[i + j]
        sigma = sigma / three
        b[i] = sigma
    return b


# ---------------------------------------------------------------------------------------
# parsing: what the statement looks like
# ---------------------------------------------------------------------------------------
def test_outer_product_parses_to_loops_over_declared_buffers_and_runs_like_python():
    n, m = te.size_var("n"), te.size_var("m")
    a, b = te.placeholder((n,), name="a"), te.placeholder((m,), name="b")
    c = outer_product(n, m, a, b)
    op = c.op
    assert isinstance(op, HybridOp) and isinstance(op, te.ExternOp)
    assert op.name == "outer_product" and tuple(c.shape) == (n, m)
    ir = op.body
    assert isinstance(ir, tir.For) and ir.loop_var.name == "i" and ir.extent is n
    jloop = ir.body
    assert isinstance(jloop, tir.For) and jloop.loop_var.name == "j" and jloop.extent is m
    check, store = jloop.body[0], jloop.body[1]
    assert isinstance(check, tir.AssertStmt) and check.message == "index out of range!"
    assert isinstance(store, tir.BufferStore) and store.buffer is op.output_placeholders[0]
    assert store.buffer.name == "c" and [v.name for v in store.indices] == ["i", "j"]
    assert isinstance(store.value, tir.Mul)
    assert store.value.a.buffer is op.input_placeholders[0] and store.value.a.buffer.name == "a"
    assert [iv.var for iv in op.axis] == [ir.loop_var, jloop.loop_var]
    x, y = rand(9), rand(11)
    got, = _build_run(c, [n, m, a, b], [9, 11, x, y], shapes=[(9, 11)])
    np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-6)
    np.testing.assert_allclose(outer_product(9, 11, x, y), got, rtol=1e-6)
    # the emulation put nothing into the script's module
    assert outer_product.__globals__ is globals()
    for key, value in HYBRID_GLOBALS.items():
        assert globals().get(key) is not value


def test_scalars_become_constants_lets_or_one_element_buffers():
    n = te.size_var("n")
    a = te.placeholder((n,), name="a")
    b = fanout(n, a)
    body = b.op.body
    assert isinstance(body, tir.For) and tir.structural_equal(body.extent, n - 3)
    # ``three`` is a constant; ``sigma`` (assigned three times) a local one-element buffer
    allocs = _nodes(body, tir.Allocate)
    assert [(x.buffer.name, tuple(int(d) for d in x.buffer.shape), x.buffer.scope) for x in allocs] == \
        [("sigma", (1,), "local")]
    assert not _nodes(body, tir.LetStmt)
    x = rand(10)
    got, = _build_run(b, [a], [x], shapes=[(7,)])
    np.testing.assert_allclose(got, fanout(10, x), rtol=1e-5)
    np.testing.assert_allclose(got, (x[:-3] + x[1:-2] + x[2:-1]) / 3, rtol=1e-5)


@script
def kinds_of_names(a):
    b = output_tensor((8,), "float32")
    k = 2                      # a constant
    for i in range(8):
        twice = a[i] * k       # assigned once, read after: a LetStmt
        off = i + 1            # an expression of no loads: substituted
        acc = 0.0              # assigned again: a one-element buffer
        acc += twice + off
        b[i] = acc
    return b


def test_a_name_assigned_once_with_a_load_is_a_let():
    a = te.placeholder((8,), name="a")
    b = kinds_of_names(a)
    lets = _nodes(b.op.body, tir.LetStmt)
    assert [x.var.name for x in lets] == ["twice"]
    assert [x.buffer.name for x in _nodes(b.op.body, tir.Allocate)] == ["acc"]
    x = rand(8)
    got, = _build_run(b, [a], [x])
    np.testing.assert_allclose(got, kinds_of_names(x), rtol=1e-6)
    np.testing.assert_allclose(got, 2 * x + np.arange(1, 9), rtol=1e-6)


@script
def looptype(a, b, c):
    d = output_tensor((16,), "int32")
    e = output_tensor((16,), "int32")
    f = output_tensor((16,), "int32")
    for i in parallel(16):
        d[i] = a[i]
    for j in vectorize(16):
        e[j] = b[j]
    for k in unroll(16):
        f[k] = c[k]
    return d, e, f


def test_loop_kinds_and_several_outputs():
    a, b, c = (te.placeholder((16,), name=n, dtype="int32") for n in "abc")
    d, e, f = looptype(a, b, c)
    ir = d.op.body
    assert [lp.kind for lp in ir] == [tir.ForKind.PARALLEL, tir.ForKind.VECTORIZED, tir.ForKind.UNROLLED]
    assert d.op is e.op is f.op and d.op.num_outputs == 3
    xs = [rand(16, dtype="int32") for _ in range(3)]
    got = _build_run([d, e, f], [a, b, c], xs)
    for g, want in zip(got, looptype(*xs)):
        np.testing.assert_array_equal(g, want)


@script
def if_then_else(a):
    b = output_tensor((10,), "int32")
    c = output_tensor((10,), "int32")
    for i in range(10):
        if i % 2 == 0:
            c[i] = a[i]
        else:
            c[i] = b[i]
    for i in unroll(10):
        b[i] = -1 if i % 2 == 0 else 1
    return b, c


@script
def if_triple_condition(a):
    b = output_tensor((10,), "int32")
    for i in range(10):
        if 0 <= i < 5:
            b[i] = a[i]
        else:
            b[i] = a[i] + 1
    return b


@script
def if_and(a):
    b = output_tensor((10,), "int32")
    for i in range(10):
        if i >= 0 and i < 5:
            b[i] = a[i]
        elif i < 8:
            b[i] = a[i] + 1
        else:
            b[i] = a[i] + 2 if a[i] > 20 else a[i] - 2
    return b


@pytest.mark.parametrize("fn", [if_triple_condition, if_and], ids=lambda f: f.name)
def test_if_elif_else_chained_comparisons_and_conditional_expressions(fn):
    a = te.placeholder((10,), dtype="int32", name="a")
    x = rand(10, dtype="int32")
    got, = _build_run(fn(a), [a], [x])
    np.testing.assert_array_equal(got, fn(x))


def test_if_with_two_outputs_reading_one_written_later():
    a = te.placeholder((10,), dtype="int32", name="a")
    b, c = if_then_else(a)
    assert _nodes(b.op.body, tir.IfThenElse)
    x = rand(10, dtype="int32")
    got_b, got_c = _build_run([b, c], [a], [x, ])
    want_b = np.where(np.arange(10) % 2 == 0, -1, 1)
    np.testing.assert_array_equal(got_b, want_b)
    np.testing.assert_array_equal(got_c[::2], x[::2])   # odd entries read b before it is written


@script
def intrin_real(a):
    b = output_tensor((8,), "float32")
    b[0] = sqrt(a[0])
    b[1] = log(a[1])
    b[2] = exp(a[2])
    b[3] = sigmoid(a[3])
    b[4] = power(a[4], a[5])
    b[5] = tanh(a[5])
    b[6] = min(a[4], a[5])
    b[7] = max(a[5], a[6])
    return b


@script
def intrin_int(a):
    b = output_tensor((3,), "int32")
    b[0] = popcount(a[0])
    b[1] = ceil_div(a[1], 4)
    b[2] = int32(float32(a[2]) / 2.0)
    return b


def test_math_intrinsics_match_numpy():
    a = te.placeholder((8,), dtype="float32", name="a")
    x = np.arange(2, 10).astype("float32")
    got, = _build_run(intrin_real(a), [a], [x])
    np.testing.assert_allclose(got, intrin_real(x), rtol=1e-5)
    ai = te.placeholder((3,), dtype="int32", name="ai")
    xi = np.array([114514, 13, -7], "int32")
    got, = _build_run(intrin_int(ai), [ai], [xi])
    np.testing.assert_array_equal(got, intrin_int(xi))
    assert got[0] == bin(114514).count("1")


@script
def blur(a):
    b = output_tensor((30, 30), "float32")
    for i in range(2, 32):
        for j in range(2, 32):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += a[i - di, j - dj]
            b[i - 2, j - 2] = s / 9.0
    return b


@script
def triangle(a, b):
    c = output_tensor((10, 10), dtype="float32")
    for i in range(10):
        for j in range(i, 10):
            c[i, j] = a[i] * b[j]
    return c


def test_loops_that_do_not_start_at_zero():
    a = te.placeholder((32, 32), "float32", "a")
    x = rand(32, 32)
    got, = _build_run(blur(a), [a], [x])
    np.testing.assert_allclose(got, blur(x), rtol=1e-5)
    a1, b1 = te.placeholder((10,), name="a"), te.placeholder((10,), name="b")
    c = triangle(a1, b1)
    assert all(int(lp.min) == 0 for lp in _loops(c.op.body))  # range(i, 10) counts j - i from 0
    x, y = rand(10), rand(10)
    got, = _build_run(c, [a1, b1], [x, y])
    np.testing.assert_allclose(got, np.triu(np.outer(x, y)), rtol=1e-6)


@script
def blur2d(a):
    b = output_tensor((30, 30), "float32")
    for i in range(30):
        ha = allocate((3, 30), "float32")
        for j in range(3):
            for k in range(30):
                ha[j, k] = a[i + j, k] + a[i + j, k + 1] + a[i + j, k + 2]
        for j in range(30):
            b[i, j] = (ha[0, j] + ha[1, j] + ha[2, j]) / 9.0
    return b


def test_allocate_makes_a_temporary_in_the_loop_that_declares_it():
    a = te.placeholder((32, 32), "float32", "a")
    b = blur2d(a)
    outer = b.op.body
    assert isinstance(outer, tir.For) and isinstance(outer.body, tir.Allocate)
    assert outer.body.buffer.name == "ha" and outer.body.buffer.scope == "global"
    x = rand(32, 32)
    got, = _build_run(b, [a], [x])
    np.testing.assert_allclose(got, blur2d(x), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# hybrid stages among te.compute stages; arguments
# ---------------------------------------------------------------------------------------
@script
def scale_by_index(a):
    b = output_tensor((20,), "float32")
    for i in range(20):
        b[i] = a[i] * i
    return b


def test_a_script_reads_a_computed_tensor_and_is_read_by_one():
    a, b = te.placeholder((20,), name="a"), te.placeholder((20,), name="b")
    c = te.compute((20,), lambda x: a[x] + b[x], name="c")
    d = scale_by_index(c)
    e = te.compute((20,), lambda x: d[x] + 1.0, name="e")
    assert d.op.input_tensors == [c]
    x, y = rand(20), rand(20)
    got, = _build_run(e, [a, b], [x, y])
    np.testing.assert_allclose(got, (x + y) * np.arange(20) + 1, rtol=1e-5)


@script
def add_something(a, b):
    c = output_tensor((11,), "int32")
    for i in range(11):
        c[i] = a[i] + b
    return c


@script
def add_scalar(a, s):
    c = output_tensor(a.shape, a.dtype)
    for i in range(a.shape[0]):
        c[i] = a[i] * s
    return c


def test_constant_and_variable_scalar_arguments():
    a = te.placeholder((11,), dtype="int32", name="a")
    x = np.arange(11).astype("int32")
    got, = _build_run(add_something(a, tir.const(11, "int32")), [a], [x])
    np.testing.assert_array_equal(got, add_something(x, 11))
    got, = _build_run(add_something(a, 5), [a], [x])
    np.testing.assert_array_equal(got, x + 5)
    n = te.size_var("n")
    an = te.placeholder((n,), name="an", dtype="int32")
    s = te.var("s")
    c = add_scalar(an, s)
    mod = build(te.create_schedule(c.op), [an, s, c], "llvm")
    xn, out = rand(6, dtype="int32"), np.zeros(6, "int32")
    mod(xn, 3, out)
    np.testing.assert_array_equal(out, add_scalar(xn, 3))


@script
def kernel_a(a):
    b = output_tensor((16,), "int32")
    c = output_tensor((4, 4), "int32")
    for i in range(16):
        b[i] = a[i] + 2
        c[i // 4, i % 4] = a[i] + 1
    return b, c


@script
def kernel_b(b, a):
    c = output_tensor((4, 4), "int32")
    for i in range(4):
        for j in range(4):
            c[i, j] = a[i * 4 + j] * b[i, j]
    return c


def test_outputs_of_one_script_feed_another():
    a = te.placeholder((16,), "int32", name="a")
    b, c = kernel_a(a)
    d = kernel_b(c, b)
    assert d.op.input_tensors == [c, b]
    x = np.arange(16).astype("int32")
    got, = _build_run(d, [a], [x])
    np.testing.assert_array_equal(got, kernel_b(*kernel_a(x)[::-1]))


@script
def calls_another(a, b):
    for i in range(len(a)):
        a[i] = i + 1.0
    for i in range(len(a)):
        b[i] = i + 1.0
    c = outer_product(10, 10, a, b)
    d = output_tensor(c.shape, c.dtype)
    for i in range(10):
        for j in range(10):
            d[i, j] = c[i, j] + i * j
    return d


def test_a_script_calling_another_inlines_it_with_its_outputs_as_temporaries():
    a, b = te.placeholder((10,), name="a"), te.placeholder((10,), name="b")
    d = calls_another(a, b)
    assert [x.buffer.name for x in _nodes(d.op.body, tir.Allocate)] == ["c"]
    x, y = rand(10), rand(10)
    xe, ye = x.copy(), y.copy()
    got, = _build_run(d, [a, b], [x, y])
    np.testing.assert_allclose(got, calls_another(xe, ye), rtol=1e-6)
    # a placeholder input may be written, as in TVM (the caller's array changes, as in Python)
    np.testing.assert_array_equal(x, xe)
    np.testing.assert_array_equal(x, np.arange(1, 11))


@script
def bool_conditions(a):
    b = output_tensor(a.shape, a.dtype)
    b[0] = 1.2
    for i in range(1, a.shape[0] - 1):
        if a[i] * a[i - 1] < a[i] or a[i] * a[i - 1] < a[i - 1] or i * a[i] == a[i]:
            b[i] = a[i]
        else:
            b[i] = 0.0
    return b


def test_boolean_operators():
    a = te.placeholder((10,), name="a")
    x = rand(10, low=-1, high=1)
    got, = _build_run(bool_conditions(a), [a], [x])
    np.testing.assert_allclose(got, bool_conditions(x), rtol=1e-6)


@script
def const_range_lists(a, b):
    c = output_tensor(a.shape, a.dtype)
    d = output_tensor(a.shape, "int32")
    for i in const_range(2):
        for j in const_range(5):
            c[i, j] = float32(int32(a[i, j]) + b[i, j])
    for i in const_range(len(b)):
        for j in const_range(len(b[0])):
            d[i, j] = int32(a[i, j] + b[i, j])
    return c, d


@script
def const_range_branch(a, b):
    c = output_tensor(a.shape, a.dtype)
    len_b = len(b)
    for i in const_range(len_b * 2):
        if i < len_b:
            c[i] = a[i] + b[i]
        else:
            c[i - len_b] = a[i - len_b] + b[i - len_b]
    return c


def test_const_range_unrolls_at_parse_time_and_indexes_constant_lists():
    a = te.placeholder((2, 5), name="a", dtype="float32")
    b = [[1, 2, 3, 4, 5], [5, 4, 3, 2, 1]]
    c, d = const_range_lists(a, tecc.runtime.convert(b))
    assert not _loops(c.op.body)  # every loop was a const_range
    x = rand(2, 5, high=10)
    got = _build_run([c, d], [a], [x])
    for g, want in zip(got, const_range_lists(x, np.array(b))):
        np.testing.assert_allclose(g, want)
    a1 = te.placeholder((5,), name="a", dtype="int32")
    c1 = const_range_branch(a1, (1, 2, 3, 4, 5))
    assert not _nodes(c1.op.body, tir.IfThenElse)  # the conditions were constants
    x1 = rand(5, dtype="int32")
    got, = _build_run(c1, [a1], [x1])
    np.testing.assert_array_equal(got, const_range_branch(x1, np.array([1, 2, 3, 4, 5])))


N_CAPTURED = 8
CAPTURED_TUPLE = (10, N_CAPTURED)


def test_constants_captured_from_the_closure_and_globals():
    constant_list = [[1, 2], [3, N_CAPTURED]]
    const_value = 1

    @script
    def add_captured(a):
        c = output_tensor((CAPTURED_TUPLE[1],), "int32")
        for i in range(CAPTURED_TUPLE[1]):
            c[i] = a[i] + constant_list[1][const_value]
        return c

    a = te.placeholder((N_CAPTURED,), dtype="int32", name="a")
    x = rand(N_CAPTURED, dtype="int32")
    got, = _build_run(add_captured(a), [a], [x])
    np.testing.assert_array_equal(got, x + N_CAPTURED)
    np.testing.assert_array_equal(add_captured(x), got)


@script
def sum_array(inputs):
    out = output_tensor((10,), inputs[0].dtype)
    n = len(inputs)
    for i in range(10):
        out[i] = 0.0
        for j in const_range(n):
            out[i] += inputs[j][i]
    return out


def test_a_tuple_of_tensors_is_one_argument():
    inputs = [te.placeholder((10,), name=f"t{i}", dtype="float32") for i in range(5)]
    out = sum_array(tecc.runtime.convert(inputs))
    assert list(out.op.inputs) == inputs
    xs = [rand(10) for _ in inputs]
    got, = _build_run(out, inputs, xs)
    np.testing.assert_allclose(got, sum(xs), rtol=1e-5)
    np.testing.assert_allclose(sum_array(xs), got, rtol=1e-5)


# ---------------------------------------------------------------------------------------
# GPU: bind
# ---------------------------------------------------------------------------------------
@script
def vec_add(a, b):
    c = output_tensor((1000,), "float32")
    for tx in bind("threadIdx.x", 1000):
        c[tx] = a[tx] + b[tx]
    return c


@script
def share_vec_add(a, b):
    c = output_tensor((256,), "float32")
    shared = allocate((256,), "float32", "shared")
    for i in bind("threadIdx.x", 256):
        shared[i] = a[i]
    local = allocate((256,), "float32", "local")
    for i in bind("threadIdx.x", 256):
        local[i] = b[i]
    for i in bind("threadIdx.x", 256):
        c[i] = shared[i] + local[i]
    return c


@script
def row_sums(a):
    c = output_tensor((a.shape[0],), a.dtype)
    total = allocate((1,), a.dtype, "local")
    len_i = a.shape[0]
    len_j = a.shape[1]
    for i in bind("threadIdx.x", len_i):
        total[0] = 0.0
        for k in const_range(len_j):
            total[0] += a[i, k]
        c[i] = total[0]
    return c


@script
def max_threads(a):
    b = output_tensor(a.shape, a.dtype)
    n = a.shape[0]
    m = max_num_threads(True)
    for i in bind("threadIdx.x", m):
        for j in bind("blockIdx.x", ceil_div(n, m)):
            if i * m + j < n:
                b[i * m + j] = a[i * m + j] + a[i * m + j]
    return b


def test_bind_makes_one_kernel_per_index_and_runs_on_the_emulator():
    a, b = te.placeholder((1000,), name="a"), te.placeholder((1000,), name="b")
    c = vec_add(a, b)
    attr = c.op.body
    assert isinstance(attr, tir.AttrStmt) and attr.attr_key == "thread_extent"
    assert attr.node.thread_tag == "threadIdx.x" and int(attr.value) == 1000
    x, y = rand(1000), rand(1000)
    got, = _build_run(c, [a, b], [x, y], target="cuda")
    np.testing.assert_allclose(got, vec_add(x, y), rtol=1e-6)


def test_three_bind_loops_share_one_kernel_with_shared_and_local_buffers():
    a, b = te.placeholder((256,), name="a"), te.placeholder((256,), name="b")
    c = share_vec_add(a, b)
    kernels = [f for f in tecc.lower(te.create_schedule(c.op), [a, b, c], target="cuda").functions.values()
               if f.attrs.get("tecc.kernel")]
    assert len(kernels) == 1
    x, y = rand(256), rand(256)
    got, = _build_run(c, [a, b], [x, y], target="cuda")   # run() also checks for races
    np.testing.assert_allclose(got, share_vec_add(x, y), rtol=1e-6)


def test_a_local_accumulator_per_thread():
    a = te.placeholder((8, 4), "float32", name="a")
    c = row_sums(a)
    x = rand(8, 4)
    got, = _build_run(c, [a], [x], target="cuda")
    np.testing.assert_allclose(got, row_sums(x), rtol=1e-5)
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-5)


@script
def per_thread_scratch(a):
    b = output_tensor((4, 3), "float32")
    for t in bind("threadIdx.x", 4):
        s = allocate((3,), "float32")
        for k in range(3):
            s[k] = a[t, k] * 2.0
        for k in range(3):
            b[t, k] = s[2 - k]
    return b


def test_a_buffer_allocated_inside_a_bind_loop_is_per_thread():
    a = te.placeholder((4, 3), "float32", name="a")
    b = per_thread_scratch(a)
    assert [x.buffer.scope for x in _nodes(b.op.body, tir.Allocate)] == ["local"]
    x = rand(4, 3)
    got, = _build_run(b, [a], [x], target="cuda")
    np.testing.assert_allclose(got, per_thread_scratch(x), rtol=1e-6)
    np.testing.assert_allclose(got, 2 * x[:, ::-1], rtol=1e-6)


def test_max_num_threads_reads_the_current_target():
    a = te.placeholder((10000,), "float32", name="a")
    with tecc.target.Target("cuda"):
        b = max_threads(a)
        x = rand(10000)
        want = max_threads(x)
    assert max(int(e.value) for e in _nodes(b.op.body, tir.AttrStmt)) == 1024
    got, = _build_run(b, [a], [x], target="cuda")
    np.testing.assert_allclose(got, want, rtol=1e-6)


@script
def double_on_gpu(a):
    b = output_tensor((256,), "float32")
    for i in bind("blockIdx.x", 4):
        for j in bind("threadIdx.x", 64):
            b[i * 64 + j] = a[i * 64 + j] * 2.0
    return b


def test_a_gpu_script_between_gpu_scheduled_compute_stages_is_its_own_kernel():
    A = te.placeholder((256,), name="A")
    P = te.compute((256,), lambda i: A[i] + 1.0, name="P")
    b = double_on_gpu(P)
    C = te.compute((256,), lambda i: b[i] - 3.0, name="C")
    s = te.create_schedule(C.op)
    for T in (P, C):
        bx, tx = s[T].split(T.op.axis[0], 64)
        s[T].bind(bx, te.thread_axis("blockIdx.x"))
        s[T].bind(tx, te.thread_axis("threadIdx.x"))
    mod = tecc.lower(s, [A, C], target="cuda")
    assert sum(1 for f in mod.functions.values() if f.attrs.get("tecc.kernel")) == 3
    x = rand(256)
    got, = _build_run(C, [A], [x], target="cuda", sch=s)
    np.testing.assert_allclose(got, (x + 1) * 2 - 3, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# schedules of a hybrid stage (its loops are its axes)
# ---------------------------------------------------------------------------------------
@script
def outer64(a, b):
    c = output_tensor((64, 64), a.dtype)
    for i in range(64):
        for j in range(64):
            c[i, j] = a[i] * b[j]
    return c


def _schedule_or_skip(c):
    """A schedule of ``c``; the test is skipped where te/schedule.py does not yet give
    hybrid stages their loops (the hooks described in te/hybrid/op.py)."""
    sch = te.create_schedule(c.op)
    if not sch[c].leaf_iter_vars:
        pytest.skip("te/schedule.py and te/lower.py do not schedule hybrid loops yet")
    return sch


def _top_loops(func_body):
    s = func_body
    names = []
    while isinstance(s, (tir.AttrStmt, tir.For)):
        if isinstance(s, tir.For):
            names.append((s.loop_var.name, s.kind))
        s = s.body
    return names


def test_split_reorder_and_annotate_the_loops_of_a_script():
    a, b = te.placeholder((64,), name="a"), te.placeholder((64,), name="b")
    c = outer64(a, b)
    sch = _schedule_or_skip(c)
    i, j = c.op.axis
    io, ii = sch[c].split(i, 4)
    sch[c].parallel(ii)
    jo, ji = sch[c].split(j, 4)
    joo, joi = sch[c].split(jo, 4)
    sch[c].vectorize(ji)
    sch[c].reorder(ii, io, joo, joi, ji)
    body = tecc.lower(sch, [a, b, c])["main"].body
    assert isinstance(body, tir.AttrStmt)
    assert _top_loops(body) == [("i.inner", tir.ForKind.PARALLEL), ("i.outer", tir.ForKind.SERIAL),
                                ("j.outer.outer", tir.ForKind.SERIAL), ("j.outer.inner", tir.ForKind.SERIAL),
                                ("j.inner", tir.ForKind.VECTORIZED)]
    x, y = rand(64), rand(64)
    got, = _build_run(c, [a, b], [x, y], sch=sch)
    np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-6)


def test_fuse_and_an_imperfect_split_of_the_loops_of_a_script():
    a, b = te.placeholder((64,), name="a"), te.placeholder((64,), name="b")
    c = outer64(a, b)
    x, y = rand(64), rand(64)
    sch = _schedule_or_skip(c)
    sch[c].fuse(c.op.axis[0], c.op.axis[1])
    assert _top_loops(tecc.lower(sch, [a, b, c])["main"].body)[0][0] == "i.j.fused"
    got, = _build_run(c, [a, b], [x, y], sch=sch)
    np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-6)
    sch = te.create_schedule(c.op)
    xo, xi = sch[c].split(c.op.axis[0], 5)   # 64 = 13 * 5 - 1: guarded
    sch[c].reorder(xi, c.op.axis[1], xo)      # the guard moves inside the reordered loops
    body = tecc.lower(sch, [a, b, c])["main"].body
    assert [n for n, _ in _top_loops(body)] == ["i.inner", "j", "i.outer"]
    got, = _build_run(c, [a, b], [x, y], sch=sch)
    np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-6)


@script
def raw_add(a, b):
    c = output_tensor((1000,), "float32")
    for i in range(1000):
        c[i] = a[i] + b[i]
    return c


def test_bind_a_loop_of_a_script_to_blocks_and_threads():
    a, b = te.placeholder((1000,), name="a"), te.placeholder((1000,), name="b")
    c = raw_add(a, b)
    sch = _schedule_or_skip(c)
    bx, tx = sch[c].split(c.op.axis[0], factor=128)
    sch[c].bind(bx, te.thread_axis("blockIdx.x"))
    sch[c].bind(tx, te.thread_axis("threadIdx.x"))
    x, y = rand(1000), rand(1000)
    got, = _build_run(c, [a, b], [x, y], target="cuda", sch=sch)
    np.testing.assert_allclose(got, x + y, rtol=1e-6)


@script
def two_nests(a):
    b = output_tensor((8, 8), "float32")
    for i in range(8):
        b[i, 0] = 0.0
        for j in range(8):
            b[i, j] = a[i, j]
    for k in range(8):
        b[k, k] = 1.0
    return b


def test_schedule_errors_on_the_loops_of_a_script():
    a = te.placeholder((8, 8), name="a")
    b = two_nests(a)
    sch = _schedule_or_skip(b)
    i, j, k = b.op.axis
    sch[b].fuse(i, j)  # j is not the whole body of i
    with pytest.raises(tecc.TeccError, match="perfectly nested"):
        tecc.lower(sch, [a, b])
    sch = te.create_schedule(b.op)
    sch[b].reorder(k, i)  # loops of different nests
    with pytest.raises(tecc.TeccError, match="cannot be made"):
        tecc.lower(sch, [a, b])


# ---------------------------------------------------------------------------------------
# te.hybrid.build and HybridModule
# ---------------------------------------------------------------------------------------
def test_build_prints_the_schedule_as_a_script_that_saves_loads_runs_and_parses(tmp_path):
    n, m = te.size_var("n"), te.size_var("m")
    a, b = te.placeholder((n,), name="a"), te.placeholder((m,), name="b")
    c = outer_product(n, m, a, b)
    sch = te.create_schedule(c.op)
    h = te.hybrid.build(sch, [n, m, a, b], [c])
    assert isinstance(h, te.hybrid.HybridModule) and h.name == "hybrid_func"
    src = h.get_source()
    assert src.startswith("def hybrid_func(n, m, a, b):") and "output_tensor((n, m), \"float32\")" in src
    x, y = rand(5), rand(7)
    np.testing.assert_allclose(h(5, 7, x, y), np.outer(x, y), rtol=1e-6)
    path = str(tmp_path / h.name)
    h.save(path)
    loaded = te.hybrid.HybridModule()
    loaded.load(path + ".py")
    assert loaded.get_source() == src and loaded.name == "hybrid_func"
    c2 = loaded(n, m, a, b)
    assert isinstance(c2.op, HybridOp)
    got, = _build_run(c2, [n, m, a, b], [5, 7, x, y], shapes=[(5, 7)])
    np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-6)


def test_build_of_a_gpu_script_keeps_its_bind_loops():
    a = te.placeholder((8, 4), "float32", name="a")
    c = row_sums(a)
    h = te.hybrid.build(te.create_schedule(c.op), [a], [c], name="rows")
    assert 'bind("threadIdx.x", 8)' in h.get_source() and 'allocate((1,), "float32", "local")' in h.get_source()
    x = rand(8, 4)
    np.testing.assert_allclose(h(x), x.sum(axis=1), rtol=1e-5)
    got, = _build_run(h(a), [a], [x], target="cuda")
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-5)


def test_build_of_a_scheduled_script_and_of_compute_stages():
    a, b = te.placeholder((64,), name="a"), te.placeholder((64,), name="b")
    c = outer64(a, b)
    sch = _schedule_or_skip(c)
    sch[c].split(c.op.axis[0], 3)
    h = te.hybrid.build(sch, [a, b], [c])
    assert "if likely(i_outer * 3 + i_inner < 64):" in h.get_source()
    x, y = rand(64), rand(64)
    np.testing.assert_allclose(h(x, y), np.outer(x, y), rtol=1e-6)
    got, = _build_run(h(a, b), [a, b], [x, y])
    np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-6)


def test_build_of_te_compute_stages():
    n = te.size_var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: tir.op.max(A[i, j], 0.0) * 2.0, name="B")
    C = te.compute((n,), lambda i: B[i, 0] + B[i, 3], name="C")
    s = te.create_schedule(C.op)
    h = te.hybrid.build(s, [A], [C])
    assert "n = A.shape[0]" in h.get_source() and "B = allocate((n, 4)" in h.get_source()
    x = rand(6, 4, low=-1, high=1)
    r = np.maximum(x, 0) * 2
    np.testing.assert_allclose(h(x), r[:, 0] + r[:, 3], rtol=1e-6)


def test_hybrid_module_from_source_text():
    src = ("def double(a):\n"
           "    b = output_tensor(a.shape, a.dtype)\n"
           "    for i in range(a.shape[0]):\n"
           "        b[i] = a[i] * 2.0\n"
           "    return b\n")
    h = te.hybrid.HybridModule(src, "double")
    x = rand(4)
    np.testing.assert_allclose(h(x), 2 * x)
    a = te.placeholder((4,), name="a")
    got, = _build_run(h(a), [a], [x])
    np.testing.assert_allclose(got, 2 * x)
    with pytest.raises(HybridScriptError, match="exactly one function"):
        te.hybrid.HybridModule("x = 1\n")


# ---------------------------------------------------------------------------------------
# the Python run
# ---------------------------------------------------------------------------------------
sqrt = "a global of this module named like an intrinsic"


def test_the_python_run_leaves_the_module_globals_alone():
    x = np.arange(2, 10).astype("float32")
    intrin_real(x)
    assert sqrt == "a global of this module named like an intrinsic"
    assert "output_tensor" not in globals() and "allocate" not in globals()
    assert outer_product.__wrapped__.__name__ == "outer_product" and outer_product.__doc__.startswith("A doc")


# ---------------------------------------------------------------------------------------
# user errors: each names the script, the file and line, and what to do
# ---------------------------------------------------------------------------------------
@script
def err_while(a):
    b = output_tensor((4,), "float32")
    i = 0
    while i < 4:
        b[i] = a[i]
        i += 1
    return b


@script
def err_break(a):
    b = output_tensor((4,), "float32")
    for i in range(4):
        if a[i] > 0.0:
            break
        b[i] = a[i]
    return b


@script
def err_listcomp(a):
    b = output_tensor((4,), "float32")
    x = [a[i] for i in range(4)]
    return b


@script
def err_slice(a):
    b = output_tensor((4,), "float32")
    b[0] = a[0:2]
    return b


@script
def err_iterate_tensor(a):
    b = output_tensor((4,), "float32")
    for x in a:
        b[0] = x
    return b


@script
def err_unknown_call(a):
    b = output_tensor((4,), "float32")
    b[0] = numpy_mean(a)  # noqa: F821
    return b


@script
def err_method_call(a):
    b = output_tensor((4,), "float32")
    b[0] = a.sum()
    return b


@script
def err_no_return(a):
    b = output_tensor((4,), "float32")
    b[0] = a[0]


@script
def err_return_in_loop(a):
    b = output_tensor((4,), "float32")
    for i in range(4):
        b[i] = a[i]
        return b


@script
def err_return_input(a):
    b = output_tensor((4,), "float32")
    b[0] = a[0]
    return a


@script
def err_unreturned_output(a):
    b = output_tensor((4,), "float32")
    c = output_tensor((4,), "float32")
    b[0] = a[0]
    c[0] = a[0]
    return b


@script
def err_wrong_rank(a):
    b = output_tensor((4,), "float32")
    b[0] = a[0, 1]
    return b


@script
def err_float_index(a):
    b = output_tensor((4,), "float32")
    b[0] = a[a[0]]
    return b


@script
def err_out_of_scope(a):
    b = output_tensor((4,), "float32")
    for i in range(4):
        x = a[i]
    b[0] = x
    return b


@script
def err_loop_var_after_loop(a):
    b = output_tensor((4,), "float32")
    for i in range(4):
        b[i] = a[i]
    b[0] = i
    return b


@script
def err_assign_argument(a, n):
    b = output_tensor((4,), "float32")
    n = 3
    return b


@script
def err_assign_tensor(a):
    b = output_tensor((4,), "float32")
    a = 1.0
    return b


@script
def err_write_computed_input(a):
    b = output_tensor((4,), "float32")
    a[0] = 1.0
    b[0] = a[0]
    return b


@script
def err_bind_extents(a):
    b = output_tensor((4,), "float32")
    for i in bind("threadIdx.x", 4):
        b[i] = a[i]
    for i in bind("threadIdx.x", 2):
        b[i] = a[i]
    return b


@script
def err_bind_tag(a):
    b = output_tensor((4,), "float32")
    for i in bind("threadIdx.w", 4):
        b[i] = a[i]
    return b


@script
def err_output_in_loop(a):
    for i in range(4):
        b = output_tensor((4,), "float32")
    return b


@script
def err_symbolic_const_range(a):
    b = output_tensor(a.shape, "float32")
    for i in const_range(a.shape[0]):
        b[i] = a[i]
    return b


@script
def err_captured_tensor(x):
    b = output_tensor((4,), "float32")
    b[0] = CAPTURED_A[0]
    return b


@script
def err_recursive(a):
    b = err_recursive(a)
    return b


@script
def err_bind_extent_loaded(a):
    b = output_tensor((4,), "float32")
    for i in bind("threadIdx.x", int32(a[0])):
        b[i] = a[i]
    return b


@script
def err_global_in_kernel(a):
    b = output_tensor((4,), "float32")
    for i in bind("threadIdx.x", 4):
        b[i] = a[i]
    for k in range(3):
        t = allocate((4,), "float32")
        t[0] = a[k]
        b[k] = t[0]
    return b


@script
def err_scalar_across_threads(a):
    b = output_tensor((4,), "float32")
    total = 0.0
    for i in bind("threadIdx.x", 4):
        total = total + a[i]
        b[i] = total
    return b


@script
def err_args(a, b):
    c = output_tensor((4,), "float32")
    c[0] = a[0]
    return c


_A4 = te.placeholder((4,), name="a4")
CAPTURED_A = _A4


@pytest.mark.parametrize("fn, args, words", [
    (err_while, None, ["`while` loops are not supported"]),
    (err_break, None, ["`break` is not supported"]),
    (err_listcomp, None, ["list comprehensions are not supported"]),
    (err_slice, None, ["slices", "not supported"]),
    (err_iterate_tensor, None, ["a loop iterates over range(...)"]),
    (err_unknown_call, None, ["calls of 'numpy_mean' are not supported"]),
    (err_method_call, None, ["only calls of plain names"]),
    (err_no_return, None, ["returns nothing"]),
    (err_return_in_loop, None, ["`return` must be the last statement"]),
    (err_return_input, None, ["not a tensor made by output_tensor()"]),
    (err_unreturned_output, None, ["output_tensor 'c' is never returned"]),
    (err_wrong_rank, None, ["'a' has 1 dimension(s) but is indexed with 2"]),
    (err_float_index, None, ["indices must be integers"]),
    (err_out_of_scope, None, ["'x' is not defined here"]),
    (err_loop_var_after_loop, None, ["loop variable 'i' is used outside its loop"]),
    (err_assign_argument, "scalar", ["'n' is an argument and cannot be assigned"]),
    (err_assign_tensor, None, ["'a' is an argument: assign its elements"]),
    (err_write_computed_input, "computed", ["writes its input 'a', which stage 'a2' computes"]),
    (err_bind_extents, None, ["in one kernel, where threadIdx.x has one extent"]),
    (err_bind_tag, None, ["bind's first argument must be one of"]),
    (err_output_in_loop, None, ["output_tensor() must be called at the top level"]),
    (err_symbolic_const_range, "symbolic", ["const_range needs constant bounds"]),
    (err_captured_tensor, None, ["pass tensors to the script as arguments"]),
    (err_recursive, None, ["recursion is not supported"]),
    (err_scalar_across_threads, None, ["'total' is assigned inside a bind loop but first assigned outside it"]),
    (err_global_in_kernel, None, ["'t' is allocated in global memory inside a loop of a GPU kernel"]),
    (err_bind_extent_loaded, None, ["the launch extent of threadIdx.x must follow from the arguments"]),
], ids=lambda v: v.name if hasattr(v, "name") else None)
def test_unsupported_python_raises_a_clear_error_naming_script_and_line(fn, args, words):
    if args is None:
        call_args = [_A4]
    elif args == "scalar":
        call_args = [_A4, te.var("n")]
    elif args == "computed":
        call_args = [te.compute((4,), lambda i: _A4[i] + 1.0, name="a2")]
    else:
        call_args = [te.placeholder((te.size_var("n"),), name="a")]
    with pytest.raises(HybridScriptError) as info:
        fn(*call_args)
    msg = str(info.value)
    assert msg.startswith(f"hybrid script {fn.name!r} ({os.path.abspath(__file__)}, line ")
    for w in words:
        assert w in msg


def test_wrong_arguments_raise_clear_errors():
    with pytest.raises(HybridScriptError, match=r"takes 2 argument\(s\) \(a, b\) but was called with 1"):
        err_args(_A4)
    with pytest.raises(HybridScriptError, match="argument 1 is a numpy array but argument 0 is a te tensor"):
        err_args(_A4, np.zeros(4, "float32"))
    with pytest.raises(HybridScriptError, match=r"argument 0 is a NDArray \(a tecc array: pass a.numpy\(\)"):
        err_args(tecc.nd.array(np.zeros(4, "float32")), np.zeros(4, "float32"))
    with pytest.raises(HybridScriptError, match="argument 0 is a dict"):
        err_args({}, _A4)
    with pytest.raises(HybridScriptError, match="decorates a Python function"):
        script(3)


def test_max_num_threads_without_a_target_is_a_clear_error():
    a = te.placeholder((100,), "float32", name="a")
    with pytest.raises(HybridScriptError, match="max_num_threads.. needs a target"):
        max_threads(a)
