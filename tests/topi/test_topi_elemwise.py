"""topi's element-wise operators -- math, activations (topi.nn), broadcasting binary
operators, where, cast -- with the injective schedule of each target (llvm, and cuda
on the GPU emulator, checked for races and out-of-bounds accesses) against numpy;
fused chains as one kernel; the generic entry point topi.schedule and its registry;
the errors of bad arguments.

Several operators are built as the outputs of one schedule (one module) to keep the
number of compilations small.
"""
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tecc
from tecc import te, topi
from tecc.errors import ScheduleError, TeccTypeError
from tecc.topi import testing as T
from tecc.topi.utils import TopiError
from topi_run import build_run, rand

#: the CUDA target of the tests of many operators: blocks of at most 64 threads, so
#: that the emulator's race and bounds check (which interprets every thread) stays
#: quick; the tests of the schedules' strategies use the default 256
SMALL_CUDA = "cuda -max_num_threads=64"
TARGETS_SMALL = ["llvm", SMALL_CUDA]


def injective(target, outs):
    return topi.schedule(outs, target)


# ---------------------------------------------------------------------------------
# unary math and activations, float32
# ---------------------------------------------------------------------------------

#: name -> (make(x), reference(a), domain of the input)
UNARY = {
    "relu": (topi.nn.relu, lambda a: np.maximum(a, 0), "any"),
    "leaky_relu": (lambda x: topi.nn.leaky_relu(x, 0.1), lambda a: T.leaky_relu_python(a, 0.1), "any"),
    "sigmoid": (topi.sigmoid, T.sigmoid_python, "any"),
    "tanh": (topi.tanh, np.tanh, "any"),
    "gelu": (topi.nn.gelu, T.gelu_python, "any"),
    "gelu_tanh": (lambda x: topi.nn.gelu(x, approximate="tanh"), lambda a: T.gelu_python(a, "tanh"), "any"),
    "hardswish": (topi.nn.hardswish, T.hardswish_python, "any"),
    "hardsigmoid": (topi.nn.hardsigmoid, T.hardsigmoid_python, "any"),
    "hardsigmoid_torch": (lambda x: topi.nn.hardsigmoid(x, 1 / 6, 0.5),
                          lambda a: T.hardsigmoid_python(a, 1 / 6, 0.5), "any"),
    "elu": (lambda x: topi.nn.elu(x, 0.7), lambda a: T.elu_python(a, 0.7), "any"),
    "selu": (topi.nn.selu, T.selu_python, "any"),
    "softplus": (topi.nn.softplus, T.softplus_python, "any"),
    "softplus_beta": (lambda x: topi.nn.softplus(x, 2.0), lambda a: T.softplus_python(a, 2.0), "any"),
    "mish": (topi.nn.mish, T.mish_python, "any"),
    "erf": (topi.erf, T.erf_python, "any"),
    "exp": (topi.exp, np.exp, "any"),
    "log": (topi.log, np.log, "pos"),
    "log2": (topi.log2, np.log2, "pos"),
    "sqrt": (topi.sqrt, np.sqrt, "pos"),
    "rsqrt": (topi.rsqrt, lambda a: 1 / np.sqrt(a), "pos"),
    "reciprocal": (topi.reciprocal, lambda a: 1 / a, "pos"),
    "abs": (topi.abs, np.abs, "any"),
    "negative": (topi.negative, np.negative, "any"),
    "floor": (topi.floor, np.floor, "any"),
    "ceil": (topi.ceil, np.ceil, "any"),
    "round": (topi.round, np.round, "any"),
    "trunc": (topi.trunc, np.trunc, "any"),
    "sign": (topi.sign, np.sign, "any"),
    "clip": (lambda x: topi.clip(x, -0.5, 1.5), lambda a: np.clip(a, -0.5, 1.5), "any"),
    "sin": (topi.sin, np.sin, "any"),
    "asinh": (topi.asinh, np.arcsinh, "any"),
    "acosh": (topi.acosh, np.arccosh, "ge1"),
    "atanh": (topi.atanh, np.arctanh, "unit"),
    "pow_scalar": (lambda x: topi.power(x, 3.0), lambda a: a ** 3, "any"),
}

DOMAINS = {"any": (-3.0, 3.0), "pos": (0.1, 4.0), "ge1": (1.0, 4.0), "unit": (-0.9, 0.9)}


def domain_inputs(shape, dtype="float32"):
    """A placeholder and its values per input domain; the "any" values hold exact
    halves (for round) and zeros (for sign)."""
    values = {d: rand(shape, dtype, lo, hi) for d, (lo, hi) in DOMAINS.items()}
    flat = values["any"].reshape(-1)
    flat[:8] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0]
    return {d: te.placeholder(shape, name=f"X_{d}", dtype=dtype) for d in DOMAINS}, values


@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_unary_operators_float32(target):
    shape = (2, 23)
    ph, values = domain_inputs(shape)
    names = list(UNARY)
    outs = [UNARY[n][0](ph[UNARY[n][2]]) for n in names]
    for o in outs:
        assert o.op.tag == topi.tag.ELEMWISE and o.dtype == "float32" and o.shape == ph["any"].shape
    results = build_run(injective(target, outs), list(ph.values()), outs, list(values.values()), target)
    for n, got in zip(names, results):
        want = UNARY[n][1](values[UNARY[n][2]].astype("float64"))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=n)


def test_round_halves_to_even_and_sign_of_zero():
    A = te.placeholder((8,), name="A")
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0], "float32")
    outs = [topi.round(A), topi.sign(A)]
    r, sg = build_run(injective("llvm", outs), [A], outs, [a], "llvm")
    np.testing.assert_array_equal(r, [-2, -2, -0.0, 0, 2, 2, 4, -0.0])
    np.testing.assert_array_equal(sg, [-1, -1, -1, 1, 1, 1, 1, 0])


@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_unary_operators_float16(target):
    # 8 x 130 = 1040 elements: the CUDA schedule's float4-wide path
    shape = (8, 130)
    A = te.placeholder(shape, name="A", dtype="float16")
    a = rand(shape, "float16", -3, 3)
    cases = [(topi.nn.relu, lambda v: np.maximum(v, 0)), (topi.sigmoid, T.sigmoid_python), (topi.tanh, np.tanh),
             (topi.exp, np.exp), (topi.nn.gelu, T.gelu_python), (topi.abs, np.abs),
             (lambda x: topi.clip(x, -1, 1), lambda v: np.clip(v, -1, 1)), (topi.nn.hardswish, T.hardswish_python)]
    outs = [make(A) for make, _ in cases]
    assert all(o.dtype == "float16" for o in outs)
    results = build_run(injective(target, outs), [A], outs, [a], target)
    for (make, ref), got in zip(cases, results):
        np.testing.assert_allclose(got.astype("float32"), ref(a.astype("float64")), rtol=1e-2, atol=2e-3)


#: integer dtypes on both targets, without repeating every one on the emulator
INT_CASES = [("llvm", "int8"), ("llvm", "int32"), (SMALL_CUDA, "int8")]


@pytest.mark.parametrize("target, dtype", INT_CASES)
def test_unary_operators_integers(target, dtype):
    A = te.placeholder((5, 7), name="A", dtype=dtype)
    a = rand((5, 7), dtype, -9, 9)
    cases = [(topi.nn.relu, lambda v: np.maximum(v, 0)), (topi.abs, np.abs), (topi.negative, np.negative),
             (topi.sign, np.sign), (lambda x: topi.clip(x, -3, 4), lambda v: np.clip(v, -3, 4)),
             (lambda x: topi.cast(x, "float32"), lambda v: v.astype("float32")),
             (lambda x: topi.maximum(x, 2), lambda v: np.maximum(v, 2).astype(dtype))]
    outs = [make(A) for make, _ in cases]
    results = build_run(injective(target, outs), [A], outs, [a], target)
    for (make, ref), got in zip(cases, results):
        want = ref(a)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_cast(target):
    A = te.placeholder((4, 9), name="A")
    a = rand((4, 9), low=-100, high=100)
    outs = [topi.cast(A, "int8"), topi.cast(A, "int32"), topi.cast(A, "float16"), topi.cast(topi.cast(A, "int32"),
                                                                                             "float32")]
    assert [o.dtype for o in outs] == ["int8", "int32", "float16", "float32"]
    i8, i32, f16, back = build_run(injective(target, outs), [A], outs, [a], target)
    np.testing.assert_array_equal(i8, a.astype("int8"))
    np.testing.assert_array_equal(i32, a.astype("int32"))
    np.testing.assert_array_equal(f16, a.astype("float16"))
    np.testing.assert_array_equal(back, a.astype("int32").astype("float32"))


@pytest.mark.parametrize("target", TARGETS_SMALL)
@pytest.mark.parametrize("axis", [1, -1])
def test_prelu(target, axis):
    shape = (2, 5, 3, 4)
    X = te.placeholder(shape, name="X")
    S = te.placeholder((shape[axis],), name="S")
    x, slope = rand(shape), rand((shape[axis],), low=0.1, high=0.9)
    Y = topi.nn.prelu(X, S, axis=axis)
    assert Y.op.tag == topi.tag.BROADCAST
    (y,) = build_run(injective(target, Y), [X, S], [Y], [x, slope], target)
    np.testing.assert_allclose(y, T.prelu_python(x, slope, axis), rtol=1e-6)


# ---------------------------------------------------------------------------------
# binary operators with broadcasting, where
# ---------------------------------------------------------------------------------

FLOAT_BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
    ("floor_divide", lambda a, b: np.floor(a / b)), ("mod", np.fmod), ("fmod", np.fmod),
    ("floor_mod", lambda a, b: a - np.floor(a / b) * b), ("power", lambda a, b: np.power(np.abs(a), b)),
    ("maximum", np.maximum), ("minimum", np.minimum), ("greater", np.greater), ("less_equal", np.less_equal),
    ("equal", np.equal), ("not_equal", np.not_equal), ("logical_and", np.logical_and),
    ("logical_or", np.logical_or), ("logical_xor", np.logical_xor),
]


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # 0 ** -1.5, in the checker too
@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_binary_operators_float32_broadcast(target):
    A = te.placeholder((3, 1, 5), name="A")
    B = te.placeholder((4, 1), name="B")
    a = rand((3, 1, 5), low=-4, high=4)
    b = rand((4, 1), low=0.5, high=2.5)
    b[0, 0] = -1.5  # a negative divisor for the remainders
    a[0, 0, 0], a[1, 0, 1], b[1, 0] = 0.0, 1.25, 1.25  # zeros and ties for the logical ops and comparisons
    absA = topi.abs(A)
    outs = [getattr(topi, n)(absA if n == "power" else A, B) for n, _ in FLOAT_BINARY]
    for o in outs:
        assert tuple(int(d) for d in o.shape) == (3, 4, 5) and o.op.tag == topi.tag.BROADCAST
    results = build_run(injective(target, outs), [A, B], outs, [a, b], target)
    for (n, ref), got in zip(FLOAT_BINARY, results):
        want = ref(a.astype("float64"), b.astype("float64"))
        assert got.dtype == (np.bool_ if want.dtype == np.bool_ else np.float32), n
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=n)


INT_BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", T.divide_python), ("floor_divide", np.floor_divide), ("mod", np.fmod), ("fmod", np.fmod),
    ("floor_mod", np.mod), ("trunc_divide", T.divide_python), ("power", None),
    ("maximum", np.maximum), ("minimum", np.minimum), ("less", np.less), ("greater_equal", np.greater_equal),
    ("logical_and", np.logical_and), ("logical_xor", np.logical_xor),
]


@pytest.mark.parametrize("target, dtype", INT_CASES)
def test_binary_operators_integers(target, dtype):
    A = te.placeholder((2, 9), name="A", dtype=dtype)
    B = te.placeholder((9,), name="B", dtype=dtype)
    a = np.arange(-9, 9, dtype=dtype).reshape(2, 9)
    b = np.array([-4, -3, -2, -1, 1, 2, 3, 4, 5], dtype)
    E = te.placeholder((2, 9), name="E", dtype=dtype)  # small non-negative exponents
    e = (np.arange(18).reshape(2, 9) % 4).astype(dtype)
    outs = [topi.power(B, E) if n == "power" else getattr(topi, n)(A, B) for n, _ in INT_BINARY]
    results = build_run(injective(target, outs), [A, B, E], outs, [a, b, e], target)
    for (n, ref), got in zip(INT_BINARY, results):
        want = np.power(b, e) if n == "power" else ref(a, b)
        if want.dtype != np.bool_:
            want = want.astype(dtype)
        assert got.dtype == want.dtype, n
        np.testing.assert_array_equal(got, want, err_msg=n)


@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_logical_not_and_bitwise_on_any_dtype(target):
    A = te.placeholder((6,), name="A")
    a = np.array([0, 1.5, -2, 0, 3, -0.0], "float32")
    outs = [topi.logical_not(A), topi.logical_or(A, 0.0), topi.logical_and(topi.greater(A, 0.0), A)]
    n, o, x = build_run(injective(target, outs), [A], outs, [a], target)
    np.testing.assert_array_equal(n, a == 0)
    np.testing.assert_array_equal(o, a != 0)
    np.testing.assert_array_equal(x, a > 0)


@pytest.mark.parametrize("target", TARGETS_SMALL)
def test_where_broadcasts_all_three(target):
    C = te.placeholder((3, 1, 1), name="C", dtype="bool")
    X = te.placeholder((4, 1), name="X")
    Y = te.placeholder((5,), name="Y")
    c = np.array([True, False, True]).reshape(3, 1, 1)
    x, y = rand((4, 1)), rand((5,))
    F = te.placeholder((2, 5), name="F")  # a float condition: non-zero is true
    f = np.array([[0, 1, 0, -2, 0.5], [1, 0, 0, 0, 3]], "float32")
    outs = [topi.where(C, X, Y), topi.where(F, Y, 0.25), topi.where(topi.greater(Y, 0.0), 1.0, Y)]
    assert tuple(int(d) for d in outs[0].shape) == (3, 4, 5)
    r1, r2, r3 = build_run(injective(target, outs), [C, X, Y, F], outs, [c, x, y, f], target)
    np.testing.assert_array_equal(r1, np.where(c, x, y))
    np.testing.assert_array_equal(r2, np.where(f != 0, y, np.float32(0.25)))
    np.testing.assert_array_equal(r3, np.where(y > 0, np.float32(1.0), y))


def test_float16_binary_and_where():
    A = te.placeholder((4, 6), name="A", dtype="float16")
    B = te.placeholder((6,), name="B", dtype="float16")
    a, b = rand((4, 6), "float16"), rand((6,), "float16", 0.5, 2)
    outs = [topi.add(A, B), topi.multiply(A, B), topi.divide(A, B), topi.maximum(A, B),
            topi.where(topi.less(A, B), A, B)]
    results = build_run(injective("cuda", outs), [A, B], outs, [a, b], "cuda")
    refs = [a + b, a * b, a / b, np.maximum(a, b), np.where(a < b, a, b)]
    for got, want in zip(results, refs):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype("float32"), want.astype("float32"), rtol=2e-3, atol=1e-3)


# ---------------------------------------------------------------------------------
# fused chains: one kernel, one loop nest
# ---------------------------------------------------------------------------------

def _chain():
    A = te.placeholder((4, 37), name="A")
    B = te.placeholder((37,), name="B")
    C = topi.nn.gelu(topi.where(topi.greater(A, B), topi.exp(topi.add(A, B)), topi.nn.relu(topi.multiply(A, 2.0))))
    return A, B, C


def _chain_ref(a, b):
    v = np.where(a > b, np.exp(a + b), np.maximum(a * 2, 0))
    return T.gelu_python(v.astype("float32"))


def test_fused_injective_chain_is_one_cuda_kernel():
    A, B, C = _chain()
    s = topi.cuda.schedule_injective(C)
    src = tecc.build(s, [A, B, C], "cuda").imported_modules[0].get_source()
    assert src.count("__global__") == 1
    a, b = rand((4, 37)), rand((37,))
    (c,) = build_run(s, [A, B], [C], [a, b], "cuda")
    np.testing.assert_allclose(c, _chain_ref(a, b), rtol=1e-5, atol=1e-6)


def test_fused_injective_chain_is_one_cpu_loop_nest():
    A, B, C = _chain()
    A2 = te.placeholder((64, 256), name="A2")
    D = topi.sigmoid(topi.multiply(topi.exp(A2), 3.0))
    for out, args in ((C, [A, B, C]), (D, [A2, D])):
        s = topi.x86.schedule_injective(out)
        text = str(tecc.lower(s, args, simple_mode=True))
        assert "allocate" not in text  # every intermediate inlined
        assert len(re.findall(r"^  (parallel |vectorized )?for \(", text, re.M)) == 1  # one loop nest
    text = str(tecc.lower(topi.x86.schedule_injective(D), [A2, D], simple_mode=True))
    assert "parallel for" in text and "vectorized for" in text  # 16384 elements: parallel, 16 lanes
    a, b = rand((4, 37)), rand((37,))
    (c,) = build_run(topi.x86.schedule_injective(C), [A, B], [C], [a, b], "llvm")
    np.testing.assert_allclose(c, _chain_ref(a, b), rtol=1e-5, atol=1e-6)


def test_generic_injective_fuses_into_one_loop():
    A, B, C = _chain()
    with tecc.target.Target("llvm"):
        s = topi.generic.schedule_injective(C)
    assert "allocate" not in str(tecc.lower(s, [A, B, C], simple_mode=True))
    a, b = rand((4, 37)), rand((37,))
    (c,) = build_run(s, [A, B], [C], [a, b], "llvm")
    np.testing.assert_allclose(c, _chain_ref(a, b), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------
# topi.schedule and the registry
# ---------------------------------------------------------------------------------

def test_topi_schedule_picks_the_schedule_by_the_anchor_tag():
    from tecc.topi import schedule_registry as reg
    A = te.placeholder((4, 40), name="A")
    ew = topi.exp(A)
    red = topi.sum(topi.exp(A), axis=1) * 2.0
    sm = topi.nn.softmax(A) + 1.0
    assert reg.find_anchor([ew]) is None
    assert reg.find_anchor([red]).tag == "comm_reduce"
    assert reg.find_anchor([sm]).tag == "softmax_output"
    assert reg.lookup("elemwise", "llvm") is topi.x86.schedule_injective
    assert reg.lookup("broadcast", "cuda") is topi.cuda.schedule_injective
    assert reg.lookup("comm_reduce", "cuda") is topi.cuda.schedule_reduce
    assert reg.lookup("comm_reduce_idx", "llvm") is topi.x86.schedule_reduce
    assert reg.lookup("log_softmax_output", "cuda") is topi.cuda.schedule_softmax
    assert reg.lookup("injective,pad", "llvm -keys=riscv") is topi.generic.schedule_injective
    with tecc.target.Target("cuda"):  # the current target
        s = topi.schedule(red)
    src = tecc.build(s, [A, red], "cuda").imported_modules[0].get_source()
    assert src.count("__global__") == 1  # the reduction and its epilogue: one kernel
    a = rand((4, 40))
    (r,) = build_run(s, [A], [red], [a], "cuda")
    np.testing.assert_allclose(r, np.exp(a).sum(axis=1) * 2, rtol=1e-5)
    (m,) = build_run(topi.schedule(sm, "llvm"), [A], [sm], [a], "llvm")
    np.testing.assert_allclose(m, T.softmax_python(a, axis=1) + 1, rtol=1e-5)


def test_register_schedule_adds_a_tag_and_refuses_a_second_function():
    from tecc.topi import schedule_registry as reg
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 3.0, name="B", tag="my_scaled_op")
    with pytest.raises(ScheduleError, match=r"no schedule is registered for 'B' \(tag 'my_scaled_op'\) on target"):
        topi.schedule(B, "llvm")
    calls = []

    def mine(outs):
        calls.append(outs)
        return te.create_schedule([t.op for t in outs])

    try:
        assert topi.register_schedule("my_scaled", "cpu")(mine) is mine
        s = topi.schedule([B], "llvm")
        assert calls == [[B]]
        (b,) = build_run(s, [A], [B], [np.arange(8, dtype="float32")], "llvm")
        np.testing.assert_array_equal(b, np.arange(8) * 3.0)
        with pytest.raises(ScheduleError, match=r"\('my_scaled', 'cpu'\) already has .*override=True"):
            topi.register_schedule("my_scaled", "cpu")(lambda outs: None)
        topi.register_schedule("my_scaled", "cpu", override=True)(mine)
    finally:
        reg.SCHEDULES.pop(("my_scaled", "cpu"), None)


def test_topi_schedule_errors():
    A = te.placeholder((8,), name="A")
    with pytest.raises(ScheduleError, match="no target given and none is current"):
        topi.schedule(topi.exp(A))
    with pytest.raises(ScheduleError, match="expects the output tensor"):
        topi.schedule([], "llvm")
    with pytest.raises(ScheduleError, match="tag_prefix must be a non-empty string"):
        topi.register_schedule("", "cpu")
    with pytest.raises(ScheduleError, match="target_key must be a string"):
        topi.register_schedule("x", None)


# ---------------------------------------------------------------------------------
# property tests: random broadcastable shapes
# ---------------------------------------------------------------------------------

@st.composite
def broadcast_pair(draw):
    """Two shapes of rank 0..4 that broadcast (some dimensions 1 on either side)."""
    rank = draw(st.integers(0, 4))
    full = draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank))
    a = [d if draw(st.booleans()) else 1 for d in full]
    b = [d if draw(st.booleans()) else 1 for d in full]
    a = a[draw(st.integers(0, rank)):]  # drop leading axes of either
    b = b[draw(st.integers(0, rank)):]
    return tuple(a), tuple(b)


BINARY_PROPS = [("add", np.add), ("multiply", np.multiply), ("maximum", np.maximum),
                ("subtract", np.subtract), ("less", np.less)]


def _check_pair(shapes, target):
    sa, sb = shapes
    A = te.placeholder(sa, name="A")
    B = te.placeholder(sb, name="B")
    C = te.placeholder(sb, name="C", dtype="bool")
    a, b, c = rand(sa), rand(sb), rand(sb, "bool")
    outs = [getattr(topi, n)(A, B) for n, _ in BINARY_PROPS] + [topi.where(C, A, B)]
    want_shape = np.broadcast_shapes(sa, sb)
    results = build_run(injective(target, outs), [A, B, C], outs, [a, b, c], target)
    for (n, ref), got in zip(BINARY_PROPS, results):
        assert got.shape == want_shape
        np.testing.assert_allclose(got, ref(a, b), rtol=1e-6, err_msg=n)
    np.testing.assert_array_equal(results[-1], np.where(c, a, b))


@settings(max_examples=20, deadline=None)
@given(broadcast_pair())
def test_broadcast_matches_numpy_llvm(shapes):
    _check_pair(shapes, "llvm")


@settings(max_examples=4, deadline=None)
@given(broadcast_pair())
def test_broadcast_matches_numpy_cuda(shapes):
    _check_pair(shapes, SMALL_CUDA)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.lists(st.integers(1, 5), min_size=1, max_size=4))
def test_shapes_that_do_not_broadcast_raise(sa, sb):
    try:
        np.broadcast_shapes(tuple(sa), tuple(sb))
        compatible = True
    except ValueError:
        compatible = False
    A = te.placeholder(tuple(sa), name="A")
    B = te.placeholder(tuple(sb), name="B")
    if compatible:
        assert tuple(int(d) for d in topi.add(A, B).shape) == np.broadcast_shapes(tuple(sa), tuple(sb))
    else:
        with pytest.raises(TopiError, match=r"topi.add\('A' .*'B' .*do not broadcast"):
            topi.add(A, B)


# ---------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------

def test_elementwise_errors():
    A = te.placeholder((2, 3), name="A")
    B = te.placeholder((4, 3), name="B")
    I = te.placeholder((2, 3), name="I", dtype="int32")
    with pytest.raises(TopiError, match=r"topi.multiply\('A' \(2, 3\), 'B' \(4, 3\)\).*do not broadcast"):
        topi.multiply(A, B)
    with pytest.raises(TopiError, match=r"topi.where\(condition 'A' \(2, 3\), x 'B' \(4, 3\), y 1.0\).*axis 0"):
        topi.where(A, B, 1.0)
    with pytest.raises(TopiError, match="x and y have different dtypes, float32 and int32"):
        topi.where(A, A, I)
    with pytest.raises(TeccTypeError, match="topi.where: operands must be"):
        topi.where(A, "x", A)
    S = te.placeholder((4,), name="S")
    with pytest.raises(TopiError, match=r"prelu\('A'\): slope 'S' has 4 values but axis 1 of x \(2, 3\) has size 3"):
        topi.nn.prelu(A, S)
    with pytest.raises(TopiError, match=r"prelu\('A'\): axis 2 is out of range for a tensor of rank 2 "
                                        r"\(shape \(2, 3\)\)"):
        topi.nn.prelu(A, S, axis=2)
    with pytest.raises(TopiError, match=r"prelu\('A'\): slope 'S2' must be 1-D, got shape \(2, 2\)"):
        topi.nn.prelu(A, te.placeholder((2, 2), name="S2"))
    with pytest.raises(TopiError, match=r"gelu\('A'\): approximate must be 'none' or 'tanh', got 'erf'"):
        topi.nn.gelu(A, approximate="erf")
    for fn in (topi.nn.gelu, topi.nn.hardswish, topi.nn.hardsigmoid, topi.nn.elu, topi.nn.selu, topi.nn.softplus,
               topi.nn.mish):
        with pytest.raises(TopiError, match=rf"{fn.__name__}\('I'\): expected a float tensor, got dtype int32"):
            fn(I)
    with pytest.raises(TopiError, match=r"softplus\('A'\): beta must be positive, got 0"):
        topi.nn.softplus(A, beta=0)
    with pytest.raises(TopiError, match=r"clip\('A' \(2, 3\)\): a_min=2 is greater than a_max=1"):
        topi.clip(A, 2, 1)
    with pytest.raises(TeccTypeError, match="topi.exp: expected a tensor"):
        topi.exp(1.0)
    with pytest.raises(TeccTypeError, match="relu: expected a tensor"):
        topi.nn.relu([1, 2])


# ---------------------------------------------------------------------------------
# a real GPU
# ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_injective_schedules_on_gpu():
    import cupy as cp
    A = te.placeholder((64, 1000), name="A")
    B = te.placeholder((1000,), name="B")
    outs = [topi.nn.gelu(topi.add(A, B)), topi.where(topi.greater(A, B), A, B), topi.nn.mish(A)]
    s = topi.schedule(outs, "cuda")
    mod = tecc.build(s, [A, B] + outs, "cuda")
    a, b = rand((64, 1000)), rand((1000,))
    got = [cp.zeros((64, 1000), "float32") for _ in outs]
    mod(cp.asarray(a), cp.asarray(b), *got)
    np.testing.assert_allclose(cp.asnumpy(got[0]), T.gelu_python(a + b), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(cp.asnumpy(got[1]), np.where(a > b, a, b))
    np.testing.assert_allclose(cp.asnumpy(got[2]), T.mish_python(a), rtol=1e-5, atol=1e-6)
    assert math.isfinite(float(cp.asnumpy(got[0]).sum()))


@pytest.mark.parametrize("target", ["llvm", "cuda -arch=sm_80"])
def test_bfloat16_elementwise_under_the_vectorizing_injective_schedules(target):
    """The injective schedules vectorize outputs of 1024 elements and more; bfloat16
    arithmetic stays lane by lane (the vectorizer leaves those loops), so a bfloat16
    add of 64x64 compiles and rounds each result once (it failed to compile on CUDA
    before: "no bfloat16 vectors")."""
    import warnings

    ml_dtypes = pytest.importorskip("ml_dtypes")
    A = te.placeholder((64, 64), "bfloat16", name="A")
    B = te.placeholder((64, 64), "bfloat16", name="B")
    C = topi.add(A, B)
    cuda = target.startswith("cuda")
    with tecc.target.Target(target):
        s = (topi.cuda if cuda else topi.x86).schedule_injective([C])
    mod = tecc.build(s, [A, B, C], target)
    dev = tecc.cuda(0) if cuda else tecc.cpu(0)
    rng = np.random.default_rng(3)
    a, b = (rng.uniform(-1, 1, (64, 64)).astype(ml_dtypes.bfloat16) for _ in range(2))
    out = tecc.nd.empty((64, 64), "bfloat16", dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the CUDA emulator
        mod(tecc.nd.array(a, dev), tecc.nd.array(b, dev), out)
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.numpy(), want.view(np.uint16))
