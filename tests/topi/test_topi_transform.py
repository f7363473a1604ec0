"""topi's element-wise math, constant tensors and data movement (reshape,
concatenate, split, take...), on llvm and cuda (emulated) against numpy."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi import testing as T
from tecc.topi.utils import TopiError
from topi_run import TARGETS, build_run, rand


def injective(target, outs):
    with tecc.target.Target(target):
        return topi.testing.get_injective_schedule(target)(outs)


def erf(x):
    import math
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


MATH = [
    ("exp", np.exp), ("tanh", np.tanh), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("abs", np.abs),
    ("negative", np.negative), ("sqrt", lambda x: np.sqrt(np.abs(x))), ("log", lambda x: np.log(np.abs(x))),
    ("floor", np.floor), ("ceil", np.ceil), ("round", np.round), ("sign", np.sign), ("sin", np.sin),
    ("cos", np.cos), ("erf", erf), ("rsqrt", lambda x: 1 / np.sqrt(np.abs(x))), ("identity", lambda x: x),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name, ref", MATH)
def test_math(target, name, ref):
    A = te.placeholder((4, 9), name="A")
    a = rand((4, 9), low=-3, high=3)
    if name in ("sqrt", "log", "rsqrt"):
        B = getattr(topi, name)(topi.abs(A))
    else:
        B = getattr(topi, name)(A)
    assert B.op.tag == topi.tag.ELEMWISE and B.op.name.startswith("T_")
    (b,) = build_run(injective(target, B), [A], [B], [a], target)
    np.testing.assert_allclose(b, ref(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_clip_cast_full(target):
    A = te.placeholder((3, 5), name="A")
    a = rand((3, 5), low=-2, high=2)
    C = topi.clip(A, -0.5, 0.5)
    (c,) = build_run(injective(target, C), [A], [C], [a], target)
    np.testing.assert_allclose(c, np.clip(a, -0.5, 0.5))
    D = topi.cast(A * 10.0, "int32")
    (d,) = build_run(injective(target, D), [A], [D], [a], target)
    np.testing.assert_array_equal(d, (a * 10).astype("int32"))
    E = A + topi.full_like(A, 2.5) + topi.full((5,), "float32", 1.0)
    (e,) = build_run(injective(target, E), [A], [E], [a], target)
    np.testing.assert_allclose(e, a + 3.5, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_reshape_transpose_expand_squeeze(target):
    A = te.placeholder((2, 3, 4), name="A")
    a = rand((2, 3, 4))
    cases = [
        (topi.reshape(A, (4, 6)), a.reshape(4, 6)),
        (topi.reshape(A, (-1, 2)), a.reshape(-1, 2)),
        (topi.transpose(A, (2, 0, 1)), a.transpose(2, 0, 1)),
        (topi.transpose(A), a.transpose()),
        (topi.expand_dims(A, 1, 2), a[:, None, None]),
        (topi.squeeze(topi.expand_dims(A, -1), axis=3), a),
    ]
    for B, want in cases:
        (b,) = build_run(injective(target, B), [A], [B], [a], target)
        np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_and_split(target, axis):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    sizes = [1, 2, 3]
    shapes = [tuple(sz if k == axis % 3 else d for k, d in enumerate(s)) for s, sz in zip(shapes, sizes)]
    ts = [te.placeholder(s, name=f"X{k}") for k, s in enumerate(shapes)]
    arrays = [rand(s) for s in shapes]
    C = topi.concatenate(ts, axis=axis)
    assert C.op.tag == topi.tag.INJECTIVE
    (c,) = build_run(injective(target, C), ts, [C], arrays, target)
    whole = np.concatenate(arrays, axis=axis)
    np.testing.assert_array_equal(c, whole)
    W = te.placeholder(whole.shape, name="W")
    pieces = topi.split(W, [1, 3], axis=axis)
    got = build_run(injective(target, pieces), [W], pieces, [whole], target)
    for g, w in zip(got, np.split(whole, [1, 3], axis=axis)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("target", TARGETS)
def test_split_into_sections(target):
    A = te.placeholder((6, 4), name="A")
    a = rand((6, 4))
    pieces = topi.split(A, 3, axis=0)
    got = build_run(injective(target, pieces), [A], pieces, [a], target)
    for g, w in zip(got, np.split(a, 3, axis=0)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take(target, mode):
    A = te.placeholder((4, 5), name="A")
    I = te.placeholder((2, 3), name="I", dtype="int32")
    a = rand((4, 5))
    idx = np.array([[0, 3, -1], [7, 2, 4]], "int32")
    for axis in (None, 0, 1):
        T = topi.take(A, I, axis=axis, mode=mode)
        (t,) = build_run(injective(target, T), [A, I], [T], [a, idx], target)
        np.testing.assert_array_equal(t, np.take(a, idx, axis=axis, mode=mode))
    S = topi.take(A, 2, axis=1)
    (s_,) = build_run(injective(target, S), [A], [S], [a], target)
    np.testing.assert_array_equal(s_, a[:, 2])


def test_take_batch_dims():
    A = te.placeholder((2, 4, 3), name="A")
    I = te.placeholder((2, 5), name="I", dtype="int32")
    T = topi.take(A, I, axis=1, batch_dims=1)
    assert [int(d) for d in T.shape] == [2, 5, 3]
    a, idx = rand((2, 4, 3)), rand((2, 5), "int32", 0, 3)
    (t,) = build_run(injective("llvm", T), [A, I], [T], [a, idx], "llvm")
    want = np.stack([a[b][idx[b]] for b in range(2)])
    np.testing.assert_array_equal(t, want)


def test_transform_errors_name_the_tensor_and_what_to_do():
    A = te.placeholder((2, 3, 4), name="A")
    B = te.placeholder((2, 5, 4), name="B")
    with pytest.raises(TopiError, match=r"reshape\('A'.*24 and 25 elements"):
        topi.reshape(A, (5, 5))
    with pytest.raises(TopiError, match="at most one dimension may be -1"):
        topi.reshape(A, (-1, -1))
    with pytest.raises(TopiError, match=r"'B' \(2, 5, 4\) and 'A' \(2, 3, 4\) differ at axis 1"):
        topi.concatenate([A, B], axis=0)
    with pytest.raises(TopiError, match="axis 3 is out of range for a tensor of rank 3"):
        topi.concatenate([A, A], axis=3)
    with pytest.raises(TopiError, match="does not divide into 2 equal sections; pass split indices"):
        topi.split(A, 2, axis=1)
    with pytest.raises(TopiError, match="axis 1 has size 3, not 1"):
        topi.squeeze(A, axis=1)
    with pytest.raises(TopiError, match="mode 'nearest' is not one of"):
        topi.take(A, 0, mode="nearest")
    with pytest.raises(TeccTypeError, match="indices 'F' must have an integer dtype"):
        topi.take(A, te.placeholder((2,), name="F"), axis=0)
    with pytest.raises(TeccTypeError, match="topi.exp: expected a tensor"):
        topi.exp(1.0)


@pytest.mark.parametrize("a_shape, b_shape, axes", [((3, 4, 4), (4, 5, 2), 1), ((3, 4, 5), (4, 5, 2), 2),
                                                   ((3, 4, 5), (4, 3, 5), ([0], [1])),
                                                   ((3, 4, 5), (4, 7, 3), ([1, 0], [0, 2]))])
def test_tensordot(a_shape, b_shape, axes):
    A = te.placeholder(a_shape, name="A")
    B = te.placeholder(b_shape, name="B")
    a, b = rand(a_shape), rand(b_shape)
    C = topi.tensordot(A, B, axes)
    (c,) = build_run(te.create_schedule(C.op), [A, B], [C], [a, b], "llvm")
    np.testing.assert_allclose(c, np.tensordot(a, b, axes), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("subscripts, shapes", [("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]),
                                                ("ij->", [(3, 4)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
                                                ("ij,jk", [(3, 4), (4, 2)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]),
                                                # '...' broadcasts as numpy's does (2x1 with 5 batch axes)
                                                ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
                                                ("...ij,...jk", [(1, 3, 4), (2, 4, 2)]), ("i...->...", [(3, 2, 4)]),
                                                ("bii->bi", [(2, 3, 3)])])
def test_einsum(target, subscripts, shapes):
    ts = [te.placeholder(s, name=f"X{k}") for k, s in enumerate(shapes)]
    arrays = [rand(s) for s in shapes]
    C = topi.einsum(subscripts, *ts)
    with tecc.target.Target(target):
        s = (topi.testing.get_reduce_schedule(target) if C.op.reduce_axis else
             topi.testing.get_injective_schedule(target))(C)
    (c,) = build_run(s, ts, [C], arrays, target)
    np.testing.assert_allclose(c, np.einsum(subscripts, *arrays), rtol=1e-5, atol=1e-5)


def test_tensordot_and_einsum_errors():
    A = te.placeholder((3, 4), name="A")
    B = te.placeholder((5, 2), name="B")
    with pytest.raises(TopiError, match="axis 1 of 'A' has size 4 but axis 0 of 'B' has 5"):
        topi.tensordot(A, B, 1)
    with pytest.raises(TopiError, match="axis 'j' has different sizes, 4 in one operand and 5 in 'B'"):
        topi.einsum("ij,jk->ik", A, B)
    with pytest.raises(TopiError, match=r"einsum: operand 0 has rank 2 but its term '\.\.\.ijk' names 3 axes"):
        topi.einsum("...ijk->i", A)
    with pytest.raises(TopiError, match=r"leaves out the '\.\.\.' axes"):
        topi.einsum("...j,jk->k", A, te.placeholder((4, 2), name="C"))
    with pytest.raises(TopiError, match="has 2 operand term"):
        topi.einsum("ij,jk->ik", A)


def test_concatenate_of_many_tensors_selects_in_a_balanced_tree():
    # an unrolled recurrent layer joins one output per step: 64 inputs read through
    # 6 levels of selects, not a chain of 63 (which the simplifier walks quadratically)
    def depth(expr):
        if getattr(expr, "op", None) is not None and str(expr.op) == "if_then_else":
            return 1 + max(depth(a) for a in expr.args[1:])
        return 0

    ts = [te.placeholder((2, 1), name=f"X{k}") for k in range(64)]
    assert depth(topi.concatenate(ts, axis=1).op.body[0]) == 6
    # and an odd count joins right
    parts = [te.placeholder((2, k + 1), name=f"P{k}") for k in range(5)]
    arrays = [rand((2, k + 1)) for k in range(5)]
    C = topi.concatenate(parts, axis=1)
    (c,) = build_run(te.create_schedule(C.op), parts, [C], arrays, "llvm")
    np.testing.assert_array_equal(c, np.concatenate(arrays, axis=1))


@pytest.mark.parametrize("target", TARGETS)
def test_shape_ndarray_size_and_expand_like(target):
    """TVM's topi.shape, topi.ndarray_size and topi.expand_like."""
    A = te.placeholder((8, 7, 3), name="A")
    S, N = topi.shape(A, "int32"), topi.ndarray_size(A, "int64")
    Bl = te.placeholder((8, 5, 7, 2, 3), name="Bl")
    E = topi.expand_like(A, Bl, axis=[1, -2])
    with tecc.target.Target(target):
        s = T.get_injective_schedule(target)([S, N, E])
    a = rand((8, 7, 3))
    got_s, got_n, got_e = build_run(s, [A, Bl], [S, N, E], [a, np.zeros((8, 5, 7, 2, 3), "float32")], target)
    np.testing.assert_array_equal(got_s, [8, 7, 3])
    assert got_n == 8 * 7 * 3 and got_n.dtype == np.int64
    np.testing.assert_array_equal(got_e, np.broadcast_to(a[:, None, :, None, :], (8, 5, 7, 2, 3)))
    with pytest.raises(TopiError, match=r"axis \[1\] must name the 2 axes of shape_like that a lacks"):
        topi.expand_like(A, Bl, axis=[1])


@pytest.mark.parametrize("target", TARGETS)
def test_unravel_index_and_collapse_sum(target):
    """TVM's topi.unravel_index (the shape read at run time) against numpy's, and
    topi.collapse_sum (the sum back to a broadcast's source shape)."""
    X = te.placeholder((3,), "int64", name="X")
    Y = te.placeholder((4,), "int32", name="Y")
    Z = topi.unravel_index(X, Y)
    A = te.placeholder((2, 3, 4, 5), name="A")
    C = topi.collapse_sum(A, (3, 1, 5))
    with tecc.target.Target(target):
        s = T.get_injective_schedule(target)([Z])
        sc = T.get_reduce_schedule(target)([C])
    x, y = np.array([100, 13, 5], "int64"), np.array([5, 5, 5, 2], "int32")
    (got,) = build_run(s, [X, Y], [Z], [x, y], target)
    np.testing.assert_array_equal(got, np.stack(np.unravel_index(x, y)))
    a = rand((2, 3, 4, 5))
    (got,) = build_run(sc, [A], [C], [a], target)
    np.testing.assert_allclose(got, a.sum(axis=(0, 2)).reshape(3, 1, 5), rtol=1e-5)
    with pytest.raises(TopiError, match=r"axis 1 of the data \(3\) is neither the target's \(4\) nor summed"):
        topi.collapse_sum(A, (4, 1, 5))


# ---------------------------------------------------------------------------- strided_set, sparse_to_dense,
# matrix_set_diag, adv_index (TVM's), against numpy


STRIDED_SET_CASES = [  # a's shape, v's shape, begin, end, strides
    ((3, 4, 3), (3, 2, 2), [0, 3, 0], [4, 1, 4], [1, -1, 2]),
    ((3, 4, 3), (3, 1, 2), [0, 0, 0], [4, -5, 4], [1, -1, 2]),  # an end before the first element, walking back
    ((3, 4, 3), (1, 4, 3), [1, -1, 0], [4, -5, 3], [2, -1, 1]),
    ((3, 4, 3), (1, 2, 3), [1, 1, 0], [2, 3, 3], [1]),  # the axes past the strides step by 1
    ((3, 4, 3), (2, 3, 3), [1, 1], [4, 4, 3], None),  # the axes past begin start at 0
    ((5, 4), (2, 1), [-1, 9], [-6, -9], [-3, -2]),  # clamped at both ends
    ((4, 6), (3,), [0, 1], [4, 6], [2, 2]),  # v of fewer axes, and one of size 1, broadcast
]


@pytest.mark.parametrize("target", TARGETS)
def test_strided_set_reads_its_bounds_at_run_time(target):
    for a_shape, v_shape, begin, end, strides in STRIDED_SET_CASES:
        if v_shape == (3,):
            v_shape = (1, 3)
        A, V = te.placeholder(a_shape, name="A"), te.placeholder(v_shape, name="V")
        bounds = [np.array(x, "int32") for x in (begin, end, strides) if x is not None]
        Bt = [te.placeholder(x.shape, "int32", name=n) for x, n in zip(bounds, "bes")]
        S = topi.strided_set(A, V, *Bt)
        assert S.op.tag == topi.tag.INJECTIVE and S.op.name == "strided_set"
        a, v = rand(a_shape), rand(v_shape)
        (got,) = build_run(injective(target, S), [A, V] + Bt, [S], [a, v] + bounds, target)
        np.testing.assert_array_equal(got, T.strided_set_python(a, v, begin, end, strides))


@pytest.mark.parametrize("target", TARGETS)
def test_strided_set_with_constant_bounds(target):
    for a_shape, v_shape, begin, end, strides in STRIDED_SET_CASES:
        A, V = te.placeholder(a_shape, name="A"), te.placeholder(v_shape, name="V")
        S = topi.strided_set(A, V, begin, end, strides)
        a, v = rand(a_shape), rand(v_shape)
        (got,) = build_run(injective(target, S), [A, V], [S], [a, v], target)
        np.testing.assert_array_equal(got, T.strided_set_python(a, v, begin, end, strides))


def test_strided_set_run_time_edge_cases():
    # a zero step read at run time sets nothing along its axis; a v shorter than the
    # slice (not checkable when the bounds are tensors) leaves the rest of the slice
    A, V = te.placeholder((4, 5), name="A"), te.placeholder((2, 5), name="V")
    b, e, s = (te.placeholder((2,), "int32", name=n) for n in "bes")
    S = topi.strided_set(A, V, b, e, s)
    a, v = rand((4, 5)), rand((2, 5))
    run = build_run(injective("llvm", S), [A, V, b, e, s], [S], [a, v, np.array([0, 0], "int32"),
                                                                 np.array([4, 5], "int32"), np.array([0, 1], "int32")],
                    "llvm")
    np.testing.assert_array_equal(run[0], a)
    (got,) = build_run(injective("llvm", S), [A, V, b, e, s], [S], [a, v, np.array([0, 0], "int32"),
                                                                    np.array([4, 5], "int32"),
                                                                    np.array([1, 1], "int32")], "llvm")
    want = a.copy()
    want[:2] = v
    np.testing.assert_array_equal(got, want)



def test_strided_set_and_matrix_set_diag_of_symbolic_shapes():
    n = te.var("n")
    A, V = te.placeholder((n, 4), name="A"), te.placeholder((2, 4), name="V")
    b, e, s = (te.placeholder((1,), "int32", name=x) for x in "bes")
    S = topi.strided_set(A, V, b, e, s)
    a, v = rand((6, 4)), rand((2, 4))
    bounds = [np.array([x], "int32") for x in (-1, 0, -3)]
    (got,) = build_run(injective("llvm", S), [A, V, b, e, s], [S], [a, v] + bounds + [6], "llvm", extra_args=[n])
    np.testing.assert_array_equal(got, T.strided_set_python(a, v, [-1], [0], [-3]))
    m = te.var("m")
    X, D = te.placeholder((m, 5), name="X"), te.placeholder((3, m), name="D")
    M = topi.matrix_set_diag(X, D, (-1, 1))
    x, d = rand((4, 5)), rand((3, 4))
    (got,) = build_run(injective("llvm", M), [X, D], [M], [x, d, 4], "llvm", extra_args=[m])
    np.testing.assert_array_equal(got, T.matrix_set_diag(x, d, (-1, 1)))

SPARSE_CASES = [  # sparse_indices, sparse_values, default_value, output_shape
    (np.array(1, "int32"), np.array(3.5, "float32"), 0, [5]),  # scalars
    (np.array([0, 1, 4], "int64"), np.array([3, 4, 5], "int32"), 7, [5]),
    (np.array([[0, 0], [1, 2]], "int32"), np.array([1.5, 2.5], "float32"), -1.0, [3, 4]),
    (np.array([[0, 0, 0], [1, 2, 3]], "int64"), np.array([1, 2], "int64"), 4, [2, 3, 4]),
    (np.array([[1], [0]], "int32"), np.array([6.0, 9.0], "float32"), 0.5, [2, 3]),  # whole rows
    (np.array([2, 0, 2], "int32"), np.array(1.25, "float32"), 0, [4]),  # one value for all
    (np.array([1, 3, 1, 9, -1], "int32"), np.arange(5, dtype="float32"), 0, [4]),  # later wins; outside: skipped
]


@pytest.mark.parametrize("target", TARGETS)
def test_sparse_to_dense(target):
    for indices, values, default, shape in SPARSE_CASES:
        I = te.placeholder(indices.shape, str(indices.dtype), name="I")
        Vs = te.placeholder(values.shape, str(values.dtype), name="Vs")
        D = topi.sparse_to_dense(I, shape, Vs, default)
        assert D.dtype == values.dtype and D.op.tag == topi.tag.INJECTIVE
        (got,) = build_run(injective(target, D), [I, Vs], [D], [indices, values], target)
        np.testing.assert_array_equal(got, T.sparse_to_dense_python(indices, shape, values, default))


@pytest.mark.parametrize("target", TARGETS)
def test_sparse_to_dense_default_read_at_run_time(target):
    # TVM's form: the default value a rank-0 tensor
    I = te.placeholder((3,), "int32", name="I")
    Vs = te.placeholder((3,), name="Vs")
    Dv = te.placeholder((), name="Dv")
    D = topi.sparse_to_dense(I, [6], Vs, Dv)
    indices, values = np.array([5, 0, 2], "int32"), rand((3,))
    (got,) = build_run(injective(target, D), [I, Vs, Dv], [D], [indices, values, np.array(-2.0, "float32")], target)
    np.testing.assert_array_equal(got, T.sparse_to_dense_python(indices, [6], values, -2.0))


MATRIX_SET_DIAG_CASES = [  # data, diagonal, k
    ((2, 2), (2,), 0), ((4, 3, 3), (4, 3), 0), ((2, 3, 4), (2, 3), 1), ((2, 3, 4), (2, 2), -1),
    ((2, 5, 3), (2, 2), (-3, -3)),  # a pair of equal ints: one diagonal
    ((2, 3, 4), (2, 4, 3), (-1, 2)), ((5, 3), (3, 3), (-2, 0)), ((3, 5), (3, 3), (1, 3)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("align", ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"])
def test_matrix_set_diag(target, align):
    for data_shape, diag_shape, k in MATRIX_SET_DIAG_CASES:
        for dtype in ("float32", "int32"):
            X = te.placeholder(data_shape, dtype, name="X")
            Dg = te.placeholder(diag_shape, dtype, name="Dg")
            M = topi.matrix_set_diag(X, Dg, k, align)
            assert M.op.tag == topi.tag.INJECTIVE
            x, d = rand(data_shape, dtype, -50, 50), rand(diag_shape, dtype, 60, 99)
            (got,) = build_run(injective(target, M), [X, Dg], [M], [x, d], target)
            np.testing.assert_array_equal(got, T.matrix_set_diag(x, d, k, align))


@pytest.mark.parametrize("target", TARGETS)
def test_adv_index(target):
    cases = [((3, 4, 5), [(2,), (2,), (1,)], "int64"), ((10, 15, 5), [(4, 1), (1, 7)], "int32"),
             ((6, 5, 7), [(1, 2, 1), (1, 2, 3)], "uint8"), ((4, 3), [()], "int32"), ((4, 3), [(2, 2)], "int16")]
    for data_shape, index_shapes, dtype in cases:
        X = te.placeholder(data_shape, name="X")
        Is = [te.placeholder(s, dtype, name=f"I{k}") for k, s in enumerate(index_shapes)]
        low = [0 if dtype.startswith("u") else -n for n in data_shape]  # negative indices count from the end
        idx = [rand(s, dtype, lo, n - 1) for s, lo, n in zip(index_shapes, low, data_shape)]
        out = topi.adv_index(X, Is)
        assert out.op.name == "advanced_index" and out.op.tag == topi.tag.INJECTIVE
        x = rand(data_shape)
        (got,) = build_run(injective(target, out), [X] + Is, [out], [x] + idx, target)
        np.testing.assert_array_equal(got, x[tuple(idx)])


def test_set_and_index_operators_schedule_through_topi_schedule():
    A, V = te.placeholder((4, 4), name="A"), te.placeholder((2, 4), name="V")
    I = te.placeholder((3,), "int32", name="I")
    outs = [topi.strided_set(A, V, [1], [3]), topi.matrix_set_diag(A, te.placeholder((4,), name="d")),
            topi.sparse_to_dense(I, [4, 4], te.placeholder((), name="w")), topi.adv_index(A, [I])]
    for out in outs:
        for target in TARGETS:
            with tecc.target.Target(target):
                s = topi.schedule([out], target)
            inputs = [t for t in out.op.input_tensors if isinstance(t.op, te.PlaceholderOp)]
            assert tecc.build(s, inputs + [out], target) is not None


def _set_and_index_errors():
    A, V = te.placeholder((3, 4), name="A"), te.placeholder((2, 4), name="V")
    I = te.placeholder((2,), "int32", name="I")
    F = te.placeholder((2,), name="F")
    return [
        # strided_set
        (lambda: topi.strided_set(A, te.placeholder((2, 4), "int32", name="Vi"), [0], [2]), TopiError,
         r"v has dtype int32 but a has float32; cast v to float32 first"),
        (lambda: topi.strided_set(A, te.placeholder((1, 2, 4), name="V3"), [0], [2]), TopiError,
         r"v has rank 3 but a has rank 2"),
        (lambda: topi.strided_set(A, V, [0], [3]), TopiError,
         r"the slice has 3 element\(s\) along axis 0 but v has 2; v must have the slice's shape"),
        (lambda: topi.strided_set(A, V, [0, 0], [2, 4], [1, 0]), TopiError, r"the step along axis 1 is 0"),
        (lambda: topi.strided_set(A, V, [0, 0, 0], [2, 4, 1]), TopiError,
         r"begin has 3 entries but a has rank 2; give at most one per axis"),
        (lambda: topi.strided_set(A, V, F, I), TeccTypeError,
         r"begin 'F' \(2,\) must hold integers, got dtype float32"),
        (lambda: topi.strided_set(A, V, te.placeholder((1, 2), "int32", name="B2"), I), TopiError,
         r"begin must be a 1-D tensor"),
        (lambda: topi.strided_set(A, V, 0, I), TeccTypeError, r"begin must be a 1-D integer tensor or a list"),
        # sparse_to_dense
        (lambda: topi.sparse_to_dense(F, [5], F), TeccTypeError, r"indices 'F' must have an integer dtype"),
        (lambda: topi.sparse_to_dense(te.placeholder((1, 2, 2), "int32", name="I3"), [5], F), TopiError,
         r"sparse_indices must have rank 0, 1 or 2, got rank 3"),
        (lambda: topi.sparse_to_dense(te.placeholder((2, 3), "int32", name="I2"), [5, 5], F), TopiError,
         r"index tuples of 3 coordinates do not fit an output of rank 2"),
        (lambda: topi.sparse_to_dense(I, [5], te.placeholder((3,), name="V3")), TopiError,
         r"there are 2 indices but 3 sparse_values; give one value per index"),
        (lambda: topi.sparse_to_dense(I, [5], te.placeholder((2, 1), name="V2")), TopiError,
         r"sparse_values must have rank 0 \(one value for all\) or 1, got rank 2"),
        (lambda: topi.sparse_to_dense(I, I, F), TopiError, r"output_shape must be a list of sizes"),
        (lambda: topi.sparse_to_dense(I, [5, -1], F), TopiError, r"output_shape \(5, -1\) must be non-negative"),
        (lambda: topi.sparse_to_dense(I, [5], F, F), TopiError, r"default_value must be one value, got the tensor"),
        (lambda: topi.sparse_to_dense(I, [5], F, "zero"), TeccTypeError, r"default_value must be a number"),
        # matrix_set_diag
        (lambda: topi.matrix_set_diag(F, F), TopiError, r"data must have rank 2 or more"),
        (lambda: topi.matrix_set_diag(A, te.placeholder((3,), "int32", name="Di")), TopiError,
         r"the diagonal has dtype int32 but data has float32; cast the diagonal to float32 first"),
        (lambda: topi.matrix_set_diag(A, V, (1, 0)), TopiError,
         r"the band \(1, 0\) is empty; k\[0\] must not exceed k\[1\]"),
        (lambda: topi.matrix_set_diag(A, V, 4), TopiError,
         r"the matrices are 3 x 4, whose diagonals run from -2 to 3; k must be among them"),
        (lambda: topi.matrix_set_diag(A, V, (0, 1), "RIGHT"), TopiError, r"align 'RIGHT' is not one of"),
        (lambda: topi.matrix_set_diag(A, te.placeholder((4,), name="D4")), TopiError,
         r"the diagonal must have shape \(3,\), got \(4,\)"),
        (lambda: topi.matrix_set_diag(A, te.placeholder((3,), name="D3"), (0, 1)), TopiError,
         r"the diagonal must have rank 2 \(a band of rank-2 data\), got rank 1"),
        (lambda: topi.matrix_set_diag(A, V, (0, 1, 2)), TopiError, r"k must be an int or a pair \(k0, k1\)"),
        # adv_index
        (lambda: topi.adv_index(A, [I, I, I]), TopiError, r"3 index tensors for a tensor of rank 2"),
        (lambda: topi.adv_index(A, [te.placeholder((2,), "bool", name="mask")]), TeccTypeError,
         r"indices 'mask' must have an integer dtype"),
        (lambda: topi.adv_index(A, [I, te.placeholder((3,), "int32", name="J")]), TopiError,
         r"do not broadcast: axis 0 .* has sizes 2 and 3"),
        (lambda: topi.adv_index(A, []), TopiError, r"adv_index: needs at least one tensor"),
    ]


@pytest.mark.parametrize("case", range(len(_set_and_index_errors())))
def test_set_and_index_errors_name_the_argument_and_what_to_do(case):
    call, error, message = _set_and_index_errors()[case]
    with pytest.raises(error, match=message):
        call()
