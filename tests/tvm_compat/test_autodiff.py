"""te.gradient (TVM's tensor-expression autodiff) and tecc.testing.check_numerical_grads.

Every gradient is built with tecc.build(..., "llvm") and compared with finite
differences (check_numerical_grads) of the forward function, or with a closed form.
Also checked: no Jacobian is materialized (the simple index relations are solved,
so the adjoints of element-wise and transposed reads are no reductions at all), and
each user error raises a TeccError that names the tensor."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.errors import TeccError, TeccTypeError
from tecc.testing import check_numerical_grads
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)

N = 5


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def _graph_ops(tensors):
    """Every operation ``tensors`` depend on."""
    seen, stack = [], [t.op for t in tensors]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.append(op)
        stack.extend(t.op for t in op.input_tensors)
    return seen


def _build(outs, args):
    """Build ``outs`` with the arguments among ``args`` that they read (placeholders
    not read are left out); returns (module, the arguments kept)."""
    ops = _graph_ops(outs)
    kept = [a for a in args if a.op in ops]
    s = te.create_schedule([o.op for o in outs])
    return tecc.build(s, list(outs) + kept, "llvm"), kept


def _ones_like(t):
    return te.compute(t.shape, lambda *i: tir.const(1.0, t.dtype), name="ones")


def _shape(t):
    return tuple(int(d) for d in t.shape)


def _random(tensors, data_range, rng):
    lo, hi = data_range
    out = []
    for t in tensors:
        if t.dtype.startswith("int"):
            out.append(rng.integers(0, 4, _shape(t)).astype(t.dtype))
        else:
            out.append(rng.uniform(lo, hi, _shape(t)).astype(t.dtype))
    return out


def eval_grads(out, inputs, args=(), head=None, data=None, data_range=(-1, 1), seed=0):
    """(gradients as numpy arrays, the input and arg values used)."""
    rng = np.random.default_rng(seed)
    inputs, args = list(inputs), list(args)
    data = data if data is not None else _random(inputs + args, data_range, rng)
    grads = te.gradient(out, inputs, head)
    mod, kept = _build(grads, inputs + args)
    values = dict(zip(inputs + args, data))
    results = [np.zeros(_shape(g), g.dtype) for g in grads]
    arrays = [tecc.nd.array(r) for r in results]
    mod(*arrays, *[tecc.nd.array(values[t]) for t in kept])
    return [a.numpy() for a in arrays], data


def check_grad(out, inputs, args=(), data_range=(-1, 1), desired=None, seed=0):
    """The gradient of sum(out) against finite differences (or ``desired``)."""
    inputs = inputs if isinstance(inputs, list) else [inputs]
    grads, data = eval_grads(out, inputs, args, _ones_like(out), data_range=data_range, seed=seed)
    if desired is not None:
        for g, d in zip(grads, desired):
            np.testing.assert_allclose(g, d, rtol=0.1, atol=1e-2)
        return grads
    fwd, kept = _build([out], list(inputs) + list(args))
    everything = list(inputs) + list(args)

    def forward(*values):
        res = tecc.nd.array(np.zeros(_shape(out), out.dtype))
        by_tensor = dict(zip(everything, values))
        fwd(res, *[tecc.nd.array(by_tensor[t]) for t in kept])
        return res.numpy().astype("float64").sum()

    check_numerical_grads(forward, data, grads)
    return grads


def _no_reduction(t):
    return not t.op.reduce_axis


# ---------------------------------------------------------------------------------------
# check_numerical_grads itself
# ---------------------------------------------------------------------------------------
def test_check_numerical_grads_accepts_the_right_gradient():
    x = np.array([0.5, -1.0, 2.0])
    y = np.array([[1.0, 2.0], [3.0, -4.0]])
    check_numerical_grads(lambda a, b: np.sum(a ** 2) + np.sum(np.sin(b)), [x, y], [2 * x, np.cos(y)])
    # keyword form, with the function's value given
    check_numerical_grads(lambda a, b: np.sum(a * b), {"a": x, "b": x * 3}, {"a": x * 3, "b": x},
                          function_value=np.sum(x * x * 3))


def test_check_numerical_grads_detects_a_wrong_gradient():
    x = np.array([0.5, -1.0, 2.0, 3.0])
    with pytest.raises(AssertionError, match="differ too much"):
        check_numerical_grads(lambda a: np.sum(a ** 2), [x], [3 * x])


def test_check_numerical_grads_detects_a_wrong_shape():
    x = np.ones(4)
    with pytest.raises(AssertionError, match="shape"):
        check_numerical_grads(lambda a: np.sum(a), [x], [np.ones(3)])


def test_check_numerical_grads_rejects_a_non_finite_function():
    x = np.array([0.0, 1.0])
    with pytest.raises(ValueError, match="NaN or infinity"), np.errstate(all="ignore"):
        check_numerical_grads(lambda a: np.sum(np.log(a)), [x], [np.ones(2)])


# ---------------------------------------------------------------------------------------
# element-wise arithmetic and math
# ---------------------------------------------------------------------------------------
A = te.placeholder((N, N), name="A")
B = te.placeholder((N, N), name="B")

ELEMENTWISE = {
    "identity": (lambda i, j: A[i, j], (-1, 1)),
    "add": (lambda i, j: A[i, j] + B[i, j], (-1, 1)),
    "sub": (lambda i, j: A[i, j] - B[i, j] * 2.0, (-1, 1)),
    "mul": (lambda i, j: A[i, j] * B[i, j] * A[i, j], (-1, 1)),
    "div": (lambda i, j: A[i, j] / (B[i, j] + 3.0), (-1, 1)),
    "exp": (lambda i, j: te.exp(A[i, j]) * B[i, j], (-1, 1)),
    "log": (lambda i, j: te.log(A[i, j] * A[i, j] + B[i, j] + 2.0), (-1, 1)),
    "sigmoid": (lambda i, j: te.sigmoid(A[i, j] * B[i, j]), (-2, 2)),
    "tanh": (lambda i, j: te.tanh(A[i, j] - B[i, j]), (-2, 2)),
    "sqrt": (lambda i, j: te.sqrt(A[i, j] * B[i, j]), (0.5, 2)),
    "abs": (lambda i, j: te.abs(A[i, j]) * B[i, j], (-1, 1)),
    "pow": (lambda i, j: te.power(te.abs(A[i, j]) + 0.5, B[i, j]), (-1, 1)),
    "max_min": (lambda i, j: te.max(A[i, j], B[i, j]) - te.min(A[i, j] * 2.0, B[i, j]), (-1, 1)),
    "select": (lambda i, j: tir.Select(A[i, j] > B[i, j], A[i, j] * 3.0, B[i, j] * B[i, j]), (-1, 1)),
    "if_then_else": (lambda i, j: tir.if_then_else(i > j, A[i, j], B[j, i] * 2.0), (-1, 1)),
    "cast": (lambda i, j: A[i, j].astype("float64").astype("float32") * B[i, j], (-1, 1)),
    "sin_cos": (lambda i, j: te.sin(A[i, j]) * te.cos(B[i, j]), (-1, 1)),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_gradient_of_elementwise_expression(name):
    body, data_range = ELEMENTWISE[name]
    C = te.compute((N, N), body, name="C")
    check_grad(C, [A, B], data_range=data_range)


UNARY = {
    "exp2": (te.exp2, (-1, 1)), "exp10": (te.exp10, (-1, 1)), "log2": (te.log2, (0.5, 2)),
    "log10": (te.log10, (0.5, 2)), "log1p": (te.log1p, (0, 2)), "rsqrt": (te.rsqrt, (0.5, 2)),
    "tan": (te.tan, (-1, 1)), "asin": (te.asin, (-0.8, 0.8)), "acos": (te.acos, (-0.8, 0.8)),
    "atan": (te.atan, (-2, 2)), "sinh": (te.sinh, (-1, 1)), "cosh": (te.cosh, (-1, 1)),
    "erf": (te.erf, (-1, 1)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_gradient_of_math_function(name):
    fn, data_range = UNARY[name]
    C = te.compute((N, N), lambda i, j: fn(A[i, j]) * B[i, j], name="C")
    check_grad(C, [A, B], data_range=data_range)


def test_gradient_of_binary_math_functions():
    C = te.compute((N, N), lambda i, j: te.fmod(A[i, j] * 3.0, B[i, j] + 2.0)
                   + tir.atan2(A[i, j], B[i, j] + 2.0), name="C")
    check_grad(C, [A, B], data_range=(-1, 1))


@pytest.mark.parametrize("fn", [te.floor, te.ceil, te.trunc, te.round])
def test_piecewise_constant_functions_have_zero_gradient(fn):
    C = te.compute((N, N), lambda i, j: fn(A[i, j] * 3.0), name="C")
    grads = check_grad(C, [A], desired=[np.zeros((N, N))])
    assert np.all(grads[0] == 0)


def test_elementwise_gradients_are_not_reductions():
    """A[i, j] * A[j, i]: both reads are solved exactly (identity and transpose)."""
    C = te.compute((N, N), lambda i, j: A[i, j] * A[j, i] + te.exp(A[i, j]), name="C")
    (g,) = te.gradient(C, [A], _ones_like(C))
    assert all(_no_reduction(t) for op in _graph_ops([g]) for t in [op.output(0)]
               if not isinstance(op, te.PlaceholderOp) and op.name != "ones")
    check_grad(C, [A])


# ---------------------------------------------------------------------------------------
# indexing: transpose, shifts, strides, broadcasting, reversal
# ---------------------------------------------------------------------------------------
def test_gradient_of_shifted_and_strided_reads():
    X = te.placeholder((12,), name="X")
    C = te.compute((5,), lambda i: X[i + 1] * X[2 * i] + X[11 - i] * 0.5, name="C")
    (g,) = te.gradient(C, [X], _ones_like(C))
    assert _no_reduction(g)
    grads = check_grad(C, [X])
    # closed form
    x = eval_grads(C, [X], head=_ones_like(C))[1][0]
    want = np.zeros(12)
    for i in range(5):
        want[i + 1] += x[2 * i]
        want[2 * i] += x[i + 1]
        want[11 - i] += 0.5
    np.testing.assert_allclose(grads[0], want, rtol=1e-5)


def test_gradient_of_broadcast_is_a_sum_over_the_broadcast_axis():
    V = te.placeholder((N,), name="V")
    C = te.compute((3, N), lambda i, j: V[j] * A[i, j], name="C")
    grads, (v, a) = eval_grads(C, [V, A], head=_ones_like(C))
    np.testing.assert_allclose(grads[0], a[:3].sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(grads[1][:3], np.broadcast_to(v, (3, N)), rtol=1e-5)
    np.testing.assert_array_equal(grads[1][3:], 0)


def test_gradient_of_a_diagonal_read():
    C = te.compute((N,), lambda i: A[i, i] * 2.0, name="C")
    grads = check_grad(C, [A])
    np.testing.assert_allclose(grads[0], np.eye(N) * 2.0)


def test_gradient_of_flattening_with_div_and_mod_is_solved_exactly():
    X = te.placeholder((2, 3, 4), name="X")
    C = te.compute((24,), lambda t: X[t // 12, t // 4 % 3, t % 4] * 3.0, name="C")
    (g,) = te.gradient(C, [X], _ones_like(C))
    assert _no_reduction(g)
    check_grad(C, [X], desired=[np.full((2, 3, 4), 3.0)])


def test_gradient_through_a_nonlinear_index_is_exact():
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[k, k] - A[te.min(j + k, N - 1), j] * A[i, k], axis=k), name="C")
    check_grad(C, [A])


def test_gradient_of_conv2d_with_strides_and_dilation():
    X = te.placeholder((1, 2, 7, 7), name="X")
    W = te.placeholder((3, 2, 3, 3), name="W")
    for stride, dilation in [(1, 1), (2, 1), (1, 2), (2, 2), (3, 1)]:
        out = (7 - (3 - 1) * dilation - 1) // stride + 1
        rc = te.reduce_axis((0, 2), name="rc")
        ry = te.reduce_axis((0, 3), name="ry")
        rx = te.reduce_axis((0, 3), name="rx")
        Y = te.compute((1, 3, out, out), lambda n, f, y, x: te.sum(
            X[n, rc, y * stride + ry * dilation, x * stride + rx * dilation] * W[f, rc, ry, rx],
            axis=[rc, ry, rx]), name="Y")
        check_grad(Y, [X, W])


def test_gradient_of_padded_input():
    X = te.placeholder((4, 4), name="X")
    P = te.compute((6, 6), lambda i, j: tir.if_then_else(
        tir.all(i >= 1, i < 5, j >= 1, j < 5), X[i - 1, j - 1], tir.const(0.0)), name="P")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Y = te.compute((4, 4), lambda y, x: te.sum(P[y + ry, x + rx] * P[y + ry, x + rx], axis=[ry, rx]), name="Y")
    check_grad(Y, [X])


# ---------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------
def test_gradient_of_matmul_matches_the_closed_form():
    k = te.reduce_axis((0, N), name="k")
    M = te.placeholder((3, N), name="M")
    C = te.compute((3, N), lambda i, j: te.sum(M[i, k] * A[k, j], axis=k), name="C")
    H = te.placeholder((3, N), name="H")
    h = np.random.default_rng(1).uniform(-1, 1, (3, N)).astype("float32")
    m = np.random.default_rng(2).uniform(-1, 1, (3, N)).astype("float32")
    a = np.random.default_rng(3).uniform(-1, 1, (N, N)).astype("float32")
    dm, da = te.gradient(C, [M, A], H)
    mod, kept = _build([dm, da], [M, A, H])
    outs = [tecc.nd.array(np.zeros((3, N), "float32")), tecc.nd.array(np.zeros((N, N), "float32"))]
    mod(*outs, *[tecc.nd.array({M: m, A: a, H: h}[t]) for t in kept])
    np.testing.assert_allclose(outs[0].numpy(), h @ a.T, rtol=1e-5)
    np.testing.assert_allclose(outs[1].numpy(), m.T @ h, rtol=1e-5)


def test_gradient_of_sums_over_several_axes_and_with_where():
    X = te.placeholder((3, 4, 5), name="X")
    r1 = te.reduce_axis((0, 4), name="r1")
    r2 = te.reduce_axis((0, 5), name="r2")
    C = te.compute((3,), lambda i: te.sum(X[i, r1, r2] * X[i, r1, r2], axis=[r1, r2], where=r1 + r2 < 5), name="C")
    grads, (x,) = eval_grads(C, [X], head=_ones_like(C))
    mask = np.add.outer(np.arange(4), np.arange(5)) < 5
    np.testing.assert_allclose(grads[0], 2 * x * mask, rtol=1e-5)


def test_gradient_of_sum_with_init():
    k = te.reduce_axis((0, N), name="k")
    V = te.placeholder((N,), name="V")
    C = te.compute((N,), lambda i: te.sum(A[i, k] * A[k, i], axis=k, init=V[i] * 2.0), name="C")
    check_grad(C, [A, V])


@pytest.mark.parametrize("reducer", [te.max, te.min], ids=["max", "min"])
def test_gradient_of_max_and_min_reductions(reducer):
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: reducer(A[i, k] * A[k, j] + 5.0, axis=k), name="C")
    check_grad(C, [A])
    (g,) = te.gradient(C, [A], _ones_like(C))
    assert any(op.name == f"C.arg{'max' if reducer is te.max else 'min'}" for op in _graph_ops([g]))


def test_gradient_of_max_pooling_goes_to_the_winner():
    X = te.placeholder((1, 6, 6), name="X")
    ry = te.reduce_axis((0, 2), name="ry")
    rx = te.reduce_axis((0, 2), name="rx")
    Y = te.compute((1, 3, 3), lambda c, y, x: te.max(X[c, y * 2 + ry, x * 2 + rx], axis=[ry, rx]), name="Y")
    grads, (x,) = eval_grads(Y, [X], head=_ones_like(Y))
    want = np.zeros_like(x)
    for y in range(3):
        for xx in range(3):
            win = x[0, 2 * y:2 * y + 2, 2 * xx:2 * xx + 2]
            dy, dx = np.unravel_index(np.argmax(win), (2, 2))
            want[0, 2 * y + dy, 2 * xx + dx] = 1
    np.testing.assert_array_equal(grads[0], want)


def test_gradient_of_max_with_init():
    k = te.reduce_axis((0, N), name="k")
    V = te.placeholder((N,), name="V")
    C = te.compute((N,), lambda i: te.max(A[i, k], axis=k, init=V[i]), name="C")
    a = np.random.default_rng(0).uniform(-1, 1, (N, N)).astype("float32")
    v = np.where(np.arange(N) % 2 == 0, 5.0, -5.0).astype("float32")   # even rows: the init wins
    grads, _ = eval_grads(C, [A, V], head=_ones_like(C), data=[a, v])
    np.testing.assert_array_equal(grads[1], (np.arange(N) % 2 == 0).astype("float32"))
    want = np.zeros((N, N), "float32")
    for i in range(1, N, 2):
        want[i, np.argmax(a[i])] = 1
    np.testing.assert_array_equal(grads[0], want)


def test_gradient_of_product_and_custom_reducers():
    k = te.reduce_axis((0, N), name="k")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: tir.const(1, t), name="prod")
    C = te.compute((N, N), lambda i, j: prod(A[i, k] + A[k, i], axis=k), name="C")
    check_grad(C, [A], data_range=(0.5, 1.5))
    # x + y + x*y: (1 + x)(1 + y) - 1, a reducer nothing special-cases
    mix = te.comm_reducer(lambda x, y: x + y + x * y, lambda t: tir.const(0, t), name="mix")
    k2 = te.reduce_axis((0, N), name="k2")
    D = te.compute((N,), lambda i: mix(A[i, k2] * 0.5, axis=k2, where=k2 != i), name="D")
    check_grad(D, [A])


def test_gradient_of_a_tuple_reduction_value():
    """The value of an argmax-like tuple reduction: the gradient goes to the maximum."""
    def fcombine(x, y):
        take = y[1] > x[1]
        return tir.Select(take, y[0], x[0]), tir.Select(take, y[1], x[1])

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (tir.const(-1, t0), te.min_value(t1)), name="argmax")
    k = te.reduce_axis((0, N), name="k")
    idx, val = te.compute((N,), lambda i: argmax((k, A[i, k] * 2.0), axis=k), name="am")
    grads, (a,) = eval_grads(val, [A], head=_ones_like(val))
    want = np.zeros((N, N))
    want[np.arange(N), np.argmax(a, axis=1)] = 2.0
    np.testing.assert_allclose(grads[0], want)


def test_provably_zero_terms_disappear():
    """A read only under a condition that never holds contributes nothing: the
    adjoint is a constant zero, with no reduction and no read of the input."""
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N,), lambda i: te.sum(A[i, k], axis=k, where=k > N + 3) + B[i, 0], name="C")
    gA, gB = te.gradient(C, [A, B], _ones_like(C))
    assert _no_reduction(gA) and not gA.op.input_tensors
    grads, _ = eval_grads(C, [A, B], head=_ones_like(C))
    np.testing.assert_array_equal(grads[0], 0)
    np.testing.assert_array_equal(grads[1][:, 0], 1)


def test_gradient_with_symbolic_shapes():
    n = te.size_var("n")
    V = te.placeholder((n,), name="V")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n - 1,), lambda i: V[i + 1] * V[i] + te.sum(V[k] * 0.5, axis=k), name="C")
    (g,) = te.gradient(C, [V], _ones_like(C))
    s = te.create_schedule(g.op)
    mod = tecc.build(s, [g, V], "llvm")
    v = np.random.default_rng(0).uniform(-1, 1, 7).astype("float32")
    out = tecc.nd.array(np.zeros(7, "float32"))
    mod(out, tecc.nd.array(v))
    want = np.full(7, 0.5 * 6)
    want[1:] += v[:-1]
    want[:-1] += v[1:]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


def test_gradient_of_a_reduction_whose_range_depends_on_the_output_axis():
    """C[i] = sum over k <= i of V[k]^2 (a running sum)."""
    V = te.placeholder((6,), name="V")

    def body(i):
        k = te.reduce_axis((0, i + 1), name="k")
        return te.sum(V[k] * V[k], axis=k)

    C = te.compute((6,), body, name="C")
    grads, (v,) = eval_grads(C, [V], head=_ones_like(C))
    np.testing.assert_allclose(grads[0], 2 * v * np.arange(6, 0, -1), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# the graph: chain rule, several consumers, heads, unreachable inputs
# ---------------------------------------------------------------------------------------
def _chain(T1):
    k = te.reduce_axis((0, N), name="k")
    T2 = te.compute((N,), lambda i: te.sum(T1[i, k] * A[k, i], axis=k), name="T2")
    return te.compute((N, N), lambda i, j: T2[i] * T1[j, i] + T2[j], name="T3")


def test_chain_rule_through_intermediate_tensors_with_several_consumers():
    T1 = te.compute((N, N), lambda i, j: te.tanh(A[i, j] + B[j, i]), name="T1")
    check_grad(_chain(T1), [A, B])


def test_gradient_with_respect_to_an_intermediate_tensor():
    T1 = te.compute((N, N), lambda i, j: te.tanh(A[i, j] + B[j, i]), name="T1")
    T3 = _chain(T1)
    a, b = _random([A, B], (-1, 1), np.random.default_rng(0))
    t1 = np.zeros((N, N), "float32")   # not read: T1 is computed from A and B
    (g,), _ = eval_grads(T3, [T1], args=[A, B], head=_ones_like(T3), data=[t1, a, b])
    # the same function of a placeholder standing for T1, at T1's value
    P = te.placeholder((N, N), name="P")
    T3p = _chain(P)
    (want,), _ = eval_grads(T3p, [P], args=[A], head=_ones_like(T3p), data=[np.tanh(a + b.T), a])
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


def test_gradient_through_a_compute_with_several_outputs():
    C0, C1 = te.compute((N,), lambda i: (A[i, 0] * 2.0, A[i, 1] * A[i, 2]), name="C")
    D = te.compute((N,), lambda i: C0[i] * C1[i], name="D")
    check_grad(D, [A])


def test_default_head_gives_the_jacobian():
    X = te.placeholder((3,), name="X")
    C = te.compute((2,), lambda i: X[i] * X[i + 1], name="C")
    (jac,) = te.gradient(C, X)
    assert _shape(jac) == (2, 3)
    g, (x,) = eval_grads(C, [X])
    want = np.array([[x[1], x[0], 0], [0, x[2], x[1]]])
    np.testing.assert_allclose(g[0], want, rtol=1e-5)


def test_head_with_a_prefix():
    X = te.placeholder((3,), name="X")
    C = te.compute((3,), lambda i: X[i] * X[i], name="C")
    H = te.placeholder((2, 3), name="H")
    (g,) = te.gradient(C, [X], H)
    assert _shape(g) == (2, 3)
    x = np.array([1.0, 2.0, 3.0], "float32")
    h = np.array([[1, 0, 2], [0, 1, 1]], "float32")
    mod, kept = _build([g], [X, H])
    out = tecc.nd.array(np.zeros((2, 3), "float32"))
    mod(out, *[tecc.nd.array({X: x, H: h}[t]) for t in kept])
    np.testing.assert_allclose(out.numpy(), h * 2 * x)


def test_input_the_output_does_not_depend_on_gets_zeros():
    C = te.compute((N, N), lambda i, j: A[i, j] * 2.0, name="C")
    grads, _ = eval_grads(C, [A, B], head=_ones_like(C))
    np.testing.assert_array_equal(grads[0], 2.0)
    np.testing.assert_array_equal(grads[1], 0.0)


def test_gradient_of_the_output_itself_is_the_head():
    C = te.compute((N,), lambda i: A[i, 0] * 2.0, name="C")
    H = _ones_like(C)
    assert te.gradient(C, [C], H)[0] is H


def test_reads_in_conditions_and_integer_tensors_carry_no_gradient():
    I = te.placeholder((N,), name="I", dtype="int32")
    C = te.compute((N,), lambda i: tir.Select(A[i, 0] > 0.0, 1.0, 2.0) * A[I[i], 1], name="C")
    grads, (a, idx) = eval_grads(C, [A, I], head=_ones_like(C))
    want = np.zeros((N, N), "float32")
    for i in range(N):
        want[idx[i], 1] += 1.0 if a[i, 0] > 0 else 2.0
    np.testing.assert_allclose(grads[0], want)
    np.testing.assert_array_equal(grads[1], 0)


def test_no_tensor_of_a_gradient_is_a_jacobian():
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.max(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((N,), lambda i: te.sum(C[i, k] * C[k, i], axis=k), name="D")
    grads = te.gradient(D, [A, B], _ones_like(D))
    s = te.create_schedule([g.op for g in grads])
    text = str(tecc.lower(s, list(grads) + [A, B], simple_mode=True))
    assert "jacobian" not in text
    assert all("jacobian" not in op.name for op in _graph_ops(grads))


# ---------------------------------------------------------------------------------------
# user errors
# ---------------------------------------------------------------------------------------
def test_error_output_is_not_a_tensor():
    with pytest.raises(TeccTypeError, match="output must be a tensor"):
        te.gradient(A[0, 0], [A])


def test_error_input_is_not_a_tensor():
    C = te.compute((N,), lambda i: A[i, 0], name="C")
    with pytest.raises(TeccTypeError, match="inputs must be tensors"):
        te.gradient(C, [A, "B"])


def test_error_head_of_the_wrong_shape():
    C = te.compute((N,), lambda i: A[i, 0], name="C")
    H = te.placeholder((N + 1,), name="H")
    with pytest.raises(TeccTypeError, match=r"head 'H' has shape .* output 'C'"):
        te.gradient(C, [A], H)


def test_error_extern_operation_in_the_path():
    ext = te.extern((N,), [A], lambda ins, outs: tir.call_packed("my_func", ins[0], outs[0]), name="ext")
    C = te.compute((N,), lambda i: ext[i] * 2.0, name="C")
    with pytest.raises(TeccError, match=r"'ext' is computed by te.extern.*'A'"):
        te.gradient(C, [A])
    # differentiating with respect to the extern's output does not cross it
    (g,) = te.gradient(C, [ext], _ones_like(C))
    assert _shape(g) == (N,)


def test_error_scan_in_the_path():
    X = te.placeholder((4, 3), name="X")
    state = te.placeholder((4, 3), name="state")
    init = te.compute((1, 3), lambda _, i: X[0, i], name="init")
    update = te.compute((4, 3), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    res = te.scan(init, update, state, name="cumsum")
    C = te.compute((4, 3), lambda t, i: res[t, i] * 2.0, name="C")
    with pytest.raises(TeccError, match="'cumsum' is computed by te.scan"):
        te.gradient(C, [X])


def test_error_intrinsic_without_a_derivative():
    C = te.compute((N,), lambda i: tir.call_pure_extern("float32", "my_fn", A[i, 0]), name="C")
    with pytest.raises(TeccError, match=r"cannot differentiate 'C' with respect to 'A'.*intrinsic"):
        te.gradient(C, [A])


# ---------------------------------------------------------------------------------------
# through topi operators (TVM's test_basic_operation and test_topi call topi)
# ---------------------------------------------------------------------------------------
def _check_topi_grad(out, inputs, args=()):
    """check_grad, and no Jacobian op in the gradient's graph (as TVM's check_grad)."""
    grads = te.gradient(out, inputs, _ones_like(out))
    assert all("jacobian" not in op.name for op in _graph_ops(grads))
    return check_grad(out, inputs, args)


def test_gradient_through_topi_tensordot_and_einsum():
    from tecc import topi

    X = te.placeholder((6,), name="X")
    L = te.compute((6,), lambda i: X[i] + X[5 - i], name="L")
    R = te.compute((6,), lambda i: X[i] * X[5 - i], name="R")
    _check_topi_grad(topi.tensordot(L, R, 1), [X])
    X = te.placeholder((3, 3), name="X")
    (g,) = _check_topi_grad(topi.einsum("ii->i", X), [X])
    np.testing.assert_allclose(g, np.eye(3))  # d(sum of the diagonal)


def _topi_case(name):
    from tecc import topi

    X = te.placeholder((2, 5), name="X")
    W = te.placeholder((2, 5), name="W")
    if name == "softmax":
        return topi.nn.softmax(X * W), [X, W], []
    if name == "log_softmax":
        return topi.nn.log_softmax(X * W), [W], [X]  # X an argument only
    if name == "reshape":  # a valid reshape (the same element count), then sigmoid and tanh
        P = te.placeholder((1, 2, 3, 2), name="P")
        flat = topi.reshape(P, (1, 12))
        return topi.sigmoid(flat) + topi.tanh(flat * 0.5), [P], []
    if name == "concatenate":
        P = te.placeholder((1, 2, 3, 2), name="P")
        Q = te.placeholder((1, 2, 4, 2), name="Q")
        return topi.concatenate((P, Q), 2), [P, Q], []
    if name == "split":
        P = te.placeholder((1, 2, 6, 2), name="P")
        first, second = topi.split(P, 2, 2)
        return topi.concatenate((second, first * 2.0), 2), [P], []
    if name == "take":
        P = te.placeholder((4, 5), name="P")
        idx = te.placeholder((30,), name="idx", dtype="int32")
        return topi.take(P, topi.abs(idx)), [P], [idx]
    if name == "dense":  # a softmax over the rows of a dense layer, written out
        P = te.placeholder((4, 5), name="P")
        Wd = te.placeholder((3, 5), name="Wd")
        e = topi.exp(topi.nn.dense(P, Wd))
        return e / topi.sum(e, axis=-1, keepdims=True), [P, Wd], []
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "reshape", "concatenate", "split", "take", "dense"])
def test_gradient_through_topi_operators(name):
    out, inputs, args = _topi_case(name)
    grads = _check_topi_grad(out, inputs, args)
    if name == "split":  # each element is read once, the first half times 2
        np.testing.assert_allclose(grads[0], np.concatenate([np.full((1, 2, 3, 2), 2.0),
                                                             np.ones((1, 2, 3, 2))], axis=2))
