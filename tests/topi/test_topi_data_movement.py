"""topi's data-movement operators (reshape, transpose, flatten, squeeze/expand_dims,
concatenate/stack/split, strided_slice, take, gather, gather_nd, pad/mirror_pad/
edge_pad, broadcast_to, tile, repeat, flip, full, one_hot, arange, layout_transform,
space_to_depth/depth_to_space) with the injective schedules on llvm and cuda (the
emulator, checked for races and out-of-bounds accesses) against numpy; hypothesis
properties; every declaration error; and the same on a real GPU (``gpu``)."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi.transform import TopiTypeError
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand


def injective(target, outs):
    with tecc.target.Target(target):
        return topi.testing.get_injective_schedule(target)(outs)


def run(target, inputs, outs, arrays):
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return build_run(injective(target, outs), inputs, outs, arrays, target)


def check(target, inputs, arrays, cases):
    """Build every ``(tensor, expected)`` of ``cases`` into one module (a loop nest
    or kernel per output: one compilation), run it and compare."""
    outs = [out for out, _ in cases]
    got = run(target, inputs, outs, arrays)
    for k, (g, (_, want)) in enumerate(zip(got, cases)):
        assert g.shape == want.shape, (k, g.shape, want.shape)
        assert g.dtype == want.dtype, (k, g.dtype, want.dtype)
        np.testing.assert_array_equal(g, want, err_msg=f"case {k}")


DTYPES = ["float32", "int32", "int8", "float16"]


# ---------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_transpose_flatten(target, dtype):
    A = te.placeholder((3, 1, 5, 2), name="A", dtype=dtype)
    a = rand((3, 1, 5, 2), dtype, -50, 50)
    check(target, [A], [a], [
        (topi.reshape(A, (0, -1)), a.reshape(3, -1)),            # ONNX: 0 copies the input's size
        (topi.reshape(A, (5, 0, 6)), a.reshape(5, 1, 6)),
        (topi.reshape(A, (-1,)), a.reshape(-1)),
        (topi.transpose(A, (-1, 0, 2, -3)), a.transpose(3, 0, 2, 1)),
        (topi.transpose(A), a.transpose()),
        (topi.nn.flatten(A), a.reshape(3, -1)),
    ])


def test_reshape_allowzero_gives_an_empty_axis():
    A = te.placeholder((0, 4), name="A")
    B = topi.reshape(A, (4, 0), allowzero=True)
    assert [int(d) for d in B.shape] == [4, 0]
    (b,) = run("llvm", [A], B, [np.zeros((0, 4), "float32")])
    assert b.shape == (4, 0)


@pytest.mark.parametrize("target", TARGETS)
def test_squeeze_expand_dims_flip(target):
    A = te.placeholder((2, 1, 3), name="A")
    a = rand((2, 1, 3))
    check(target, [A], [a], [
        (topi.squeeze(A), a.squeeze()),
        (topi.squeeze(A, axis=-2), a.squeeze(1)),
        (topi.squeeze(A, axis=(1,)), a.squeeze(1)),
        (topi.squeeze(topi.strided_slice(A, [1, 0, 2], [2, 1, 3])), a[1, 0, 2]),  # rank 0
        (topi.expand_dims(A, -1, 2), a[..., None, None]),
        (topi.expand_dims(A, 0, 0), a),
        (topi.expand_dims(A, -4), a[None]),
        (topi.flip(A, -1), a[..., ::-1]),
        (topi.flip(A), a[::-1]),
    ])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_concatenate_stack_split(target, dtype):
    shapes = [(2, 1, 3), (2, 4, 3), (2, 2, 3)]
    ts = [te.placeholder(s, name=f"X{k}", dtype=dtype) for k, s in enumerate(shapes)]
    arrays = [rand(s, dtype, -9, 9) for s in shapes]
    whole = np.concatenate(arrays, axis=-2)
    C = topi.concatenate(ts, axis=-2)
    cases = [(C, whole)]
    cases += [(topi.stack([ts[0], ts[0] + 1], axis), np.stack([arrays[0], arrays[0] + 1], axis)) for axis in (0, -1, 3)]
    for how in (7, [1, 5], [-2, 9], [3, 2], [0]):  # pieces of C: empty ones included
        pieces = topi.split(C, how, axis=1)
        want = np.split(whole, how, axis=1)
        assert len(pieces) == len(want)
        cases += list(zip(pieces, want))
    check(target, ts, arrays, cases)


# ---------------------------------------------------------------------------- slicing

SLICES = [
    # begin, end, strides, axes, slice_mode, numpy index
    ([1, 0], [3, 4], None, None, "end", np.s_[1:3, 0:4]),
    ([-1], [-5], [-1], None, "end", np.s_[-1:-5:-1]),
    ([10, -100], [-10, 100], [-2, 3], None, "end", np.s_[10:-10:-2, -100:100:3]),
    ([None, None, None], [None, None, None], [-1, -2, -3], None, "end", np.s_[::-1, ::-2, ::-3]),
    ([4], [1], None, None, "end", np.s_[4:1]),                      # empty
    ([-2], [0], [-1], [-1], "end", np.s_[:, :, -2:0:-1]),
    ([2], [5], [2], [1], "end", np.s_[:, 2:5:2]),
    ([1, -3], [2, -1], None, [0, 2], "size", np.s_[1:3, :, -3:]),
    ([0, 1], [-1, 2], [5, 5], None, "size", np.s_[0:, 1:3]),
]


@pytest.mark.parametrize("target", TARGETS)
def test_strided_slice(target):
    shape = (5, 6, 7)
    A = te.placeholder(shape, name="A")
    a = rand(shape)
    cases = []
    for begin, end, strides, axes, mode, index in SLICES:
        B = topi.strided_slice(A, begin, end, strides, axes, mode)
        want = a[index]
        np.testing.assert_array_equal(topi.testing.strided_slice_python(a, begin, end, strides, mode, axes), want)
        cases.append((B, want))
    check(target, [A], [a], cases)


# ---------------------------------------------------------------------------- gathers


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("index_dtype", ["int32", "int8", "int64"])
def test_take_modes_and_negative_indices(target, index_dtype):
    A = te.placeholder((4, 5), name="A")
    I = te.placeholder((2, 3), name="I", dtype=index_dtype)
    a = rand((4, 5))
    idx = np.array([[0, -1, 3], [-4, 9, 2]], index_dtype)
    cases = []
    for mode in ("clip", "wrap"):
        for axis in (None, 0, -1):
            # TVM's modes: clip clamps (-1 reads element 0), wrap counts from the end
            cases.append((topi.take(A, I, axis=axis, mode=mode), np.take(a, idx.astype(np.int64), axis, mode=mode)))
    check(target, [A, I], [a, idx], cases)
    fast = topi.take(A, I, axis=1, mode="fast")
    ok = np.array([[0, 1, 4], [2, 3, 0]], index_dtype)
    (got,) = run(target, [A, I], fast, [a, ok])
    np.testing.assert_array_equal(got, np.take(a, ok.astype(np.int64), 1))


@pytest.mark.parametrize("target", TARGETS)
def test_take_batch_dims_and_scalar_index(target):
    A = te.placeholder((2, 4, 3), name="A")
    I = te.placeholder((2, 5), name="I", dtype="int32")
    a, idx = rand((2, 4, 3)), rand((2, 5), "int32", 0, 3)
    T = topi.take(A, I, axis=1, batch_dims=-1)
    assert [int(d) for d in T.shape] == [2, 5, 3]
    (t,) = run(target, [A, I], T, [a, idx])
    np.testing.assert_array_equal(t, np.stack([a[b][idx[b]] for b in range(2)]))
    (s_,) = run(target, [A], topi.take(A, -1, axis=2, mode="wrap"), [a])
    np.testing.assert_array_equal(s_, a[:, :, -1])


@pytest.mark.parametrize("target", TARGETS)
def test_gather_and_gather_nd(target):
    A = te.placeholder((3, 4, 5), name="A")
    a = rand((3, 4, 5))
    G = te.placeholder((3, 2, 5), name="G", dtype="int32")
    g = rand((3, 2, 5), "int32", -4, 3)
    got = run(target, [A, G], [topi.gather(A, 1, G), topi.gather_elements(A, G, axis=-2)], [a, g])
    want = np.take_along_axis(a, np.where(g < 0, g + 4, g), axis=1)
    for x in got:
        np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(topi.testing.gather_python(a, 1, g), want)
    N = te.placeholder((2, 4), name="N", dtype="int64")
    nd = np.array([[0, 2, -1, 1], [3, -4, 0, 1]], "int64")
    (x,) = run(target, [A, N], topi.gather_nd(A, N), [a, nd])
    np.testing.assert_array_equal(x, a[[0, 2, 2, 1], [3, 0, 0, 1]])
    np.testing.assert_array_equal(topi.testing.gather_nd_python(a, nd), x)
    M = te.placeholder((1, 3, 2), name="M", dtype="int32")  # batch_dims=1: a[b, m[0, b, y]]
    m = np.array([[[0, 3], [1, 1], [-1, 2]]], "int32")
    (x,) = run(target, [A, M], topi.gather_nd(A, M, batch_dims=1), [a, m])
    np.testing.assert_array_equal(x, topi.testing.gather_nd_python(a, m, batch_dims=1))
    np.testing.assert_array_equal(x[2, 0], a[2, 3])


# ---------------------------------------------------------------------------- padding


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int8", "float16"])
def test_pad_modes_match_numpy(target, dtype):
    A = te.placeholder((3, 4, 5), name="A", dtype=dtype)
    a = rand((3, 4, 5), dtype, -9, 9)
    before, after = (1, 0, 2), (2, 3, 4)
    width = list(zip(before, after))
    check(target, [A], [a], [
        (topi.nn.pad(A, before, after, 7), np.pad(a, width, constant_values=7)),
        (topi.nn.pad(A, (0, 1, 0)), np.pad(a, [(0, 0), (1, 1), (0, 0)])),
        (topi.nn.mirror_pad(A, before, after, "SYMMETRIC"), np.pad(a, width, "symmetric")),
        (topi.nn.mirror_pad(A, (2, 1, 4), (1, 3, 3), "REFLECT"), np.pad(a, [(2, 1), (1, 3), (4, 3)], "reflect")),
        (topi.nn.edge_pad(A, before, (5, 9, 0)), np.pad(a, list(zip(before, (5, 9, 0))), "edge")),
    ])


# ---------------------------------------------------------------------------- repeat, build


@pytest.mark.parametrize("target", TARGETS)
def test_broadcast_tile_repeat_full(target):
    A = te.placeholder((3, 1, 2), name="A")
    a = rand((3, 1, 2))
    check(target, [A], [a], [
        (topi.broadcast_to(A, (2, 3, 4, 2)), np.broadcast_to(a, (2, 3, 4, 2)).copy()),
        (topi.tile(A, (2, 3)), np.tile(a, (2, 3))),
        (topi.tile(A, (2, 1, 1, 2)), np.tile(a, (2, 1, 1, 2))),
        (topi.repeat(A, 3, -1), np.repeat(a, 3, -1)),
        (topi.full_like(A, 2.5), np.full_like(a, 2.5)),
        (topi.full_like(A, -1), np.full_like(a, -1)),
    ])
    (f,) = run(target, [], topi.full((2, 3), "int8", -3), [])
    np.testing.assert_array_equal(f, np.full((2, 3), -3, "int8"))


@pytest.mark.parametrize("target", TARGETS)
def test_one_hot_and_arange(target):
    I = te.placeholder((2, 3), name="I", dtype="int32")
    idx = np.array([[0, 4, -1], [2, 5, 1]], "int32")
    cases = [(topi.one_hot(I, on, off, 5, axis, dtype), topi.testing.one_hot(idx, on, off, 5, axis, dtype))
             for on, off, axis, dtype in [(1.0, 0.0, -1, "float32"), (3, -1, 0, "int32"), (1, 0, 1, "int8")]]
    cases += [(topi.arange(*args, dtype=dtype), np.arange(*args).astype(dtype))
              for args, dtype in [((7,), "int32"), ((1, 10, 2.5), "float32"), ((5, -3, -2), "int32"),
                                  ((2.0, 2.0), "float32"), ((0, 1, 0.25), "float16")]]
    check(target, [I], [idx], cases)  # arange's values are exact in these dtypes


def test_arange_with_symbolic_bounds():
    n = te.var("n")
    R = topi.arange(n, dtype="int32")
    s = injective("llvm", R)
    f = tecc.build(s, [R, n], "llvm")
    r = np.zeros(6, "int32")
    f(r, 6)
    np.testing.assert_array_equal(r, np.arange(6))


@pytest.mark.parametrize("target", TARGETS)
def test_layouts_and_space_to_depth(target):
    A = te.placeholder((2, 6, 4, 2), name="A")
    a = rand((2, 6, 4, 2))
    cases = [(topi.layout_transform(A, "NCHW", dst), topi.testing.layout_transform_python(a, "NCHW", dst))
             for dst in ("NHWC", "NCHW3c", "NCHW4c", "NHWC2c")]  # 4c pads C=6 to 8 with zeros
    assert cases[2][1].shape == (2, 2, 4, 2, 4) and not cases[2][1][:, 1, :, :, 2:].any()
    cases.append((topi.layout_transform(topi.layout_transform(A, "NCHW", "NCHW3c"), "NCHW3c", "NCHW"), a))
    cases.append((topi.nn.space_to_depth(A, 2), topi.testing.space_to_depth_python(a, 2)))
    cases.append((topi.nn.space_to_depth(A, 2, "NHWC"), topi.testing.space_to_depth_python(a, 2, "NHWC")))
    for mode in ("DCR", "CDR"):
        cases.append((topi.nn.depth_to_space(A, 1, "NCHW", mode), a))
        for layout in ("NCHW", "NHWC"):
            cases.append((topi.nn.depth_to_space(topi.reshape(A, (2, 4, 3, 4)), 2, layout, mode),
                          topi.testing.depth_to_space_python(a.reshape(2, 4, 3, 4), 2, mode, layout)))
    cases.append((topi.nn.depth_to_space(topi.nn.space_to_depth(A, 2), 2), a))  # DCR undoes space_to_depth
    cases.append((topi.nn.space_to_depth(A, 2, "NCHW", "CDR"), topi.testing.space_to_depth_python(a, 2, "NCHW", "CDR")))
    cases.append((topi.nn.space_to_depth(A, 2, "NHWC", "CDR"), topi.testing.space_to_depth_python(a, 2, "NHWC", "CDR")))
    cases.append((topi.nn.depth_to_space(topi.nn.space_to_depth(A, 2, "NCHW", "CDR"), 2, "NCHW", "CDR"), a))
    check(target, [A], [a], cases)


# ---------------------------------------------------------------------------- vectorized paths


@pytest.mark.parametrize("target", TARGETS)
def test_large_outputs_take_the_vectorized_paths(target):
    # >= 1024 elements and a multiple of 16: x86 vectorizes by 16, CUDA by 4
    A = te.placeholder((8, 16, 12), name="A")
    B = te.placeholder((8, 4, 12), name="B")
    I = te.placeholder((32,), name="I", dtype="int32")
    a, b = rand((8, 16, 12)), rand((8, 4, 12))
    idx = rand((32,), "int32", -20, 20)
    check(target, [A, B, I], [a, b, idx], [
        (topi.concatenate([A, B], 1), np.concatenate([a, b], 1)),
        (topi.strided_slice(A, [None, None, -1], [None, None, None], [1, -1, -1]), a[:, ::-1, ::-1]),
        (topi.take(A, I, axis=1, mode="wrap"), np.take(a, idx, 1, mode="wrap")),
        (topi.transpose(A, (2, 0, 1)), a.transpose(2, 0, 1)),
        (topi.nn.mirror_pad(A, (0, 2, 2), (0, 2, 2), "REFLECT"), np.pad(a, [(0, 0), (2, 2), (2, 2)], "reflect")),
        (topi.one_hot(I, 1.0, 0.0, 64, -1, "float32"), topi.testing.one_hot(idx, 1.0, 0.0, 64, -1, "float32")),
    ])


@pytest.mark.parametrize("make", [
    lambda A, I: topi.strided_slice(A, [-1, 0], [None, None], [-1, 2]),
    lambda A, I: topi.take(A, I, axis=0),
    lambda A, I: topi.nn.edge_pad(A, (1, 1), (2, 0)),
    lambda A, I: topi.layout_transform(A, "NC", "NC4c"),
], ids=["strided_slice", "take", "edge_pad", "layout_transform"])
def test_cuda_builds_for_sm80_and_sm90(make):
    A = te.placeholder((5, 6), name="A")
    I = te.placeholder((3,), name="I", dtype="int32")
    out = make(A, I)
    mod = build_all_arches(injective("cuda", out), [A, I, out])
    assert mod.kernel_names


# ---------------------------------------------------------------------------- properties

_dims = st.lists(st.integers(1, 4), min_size=1, max_size=4)


def _signed_permutation(draw, ndim):
    """A permutation of ``range(ndim)``, some entries written as negative axes."""
    perm = draw(st.permutations(range(ndim)))
    return [p - ndim if draw(st.booleans()) else p for p in perm]


@st.composite
def _chain(draw):
    """A shape, a reshape of it, a transpose, and a slice with any steps."""
    shape = draw(_dims)
    size = int(np.prod(shape))
    factors = [d for d in range(1, size + 1) if size % d == 0]
    first = draw(st.sampled_from(factors))
    new_shape = [first, -1] if draw(st.booleans()) else [first, size // first]
    perm = _signed_permutation(draw, 2)
    slices = []
    for _ in range(2):
        step = draw(st.sampled_from([1, 2, -1, -2, 3]))
        begin = draw(st.one_of(st.none(), st.integers(-6, 6)))
        end = draw(st.one_of(st.none(), st.integers(-6, 6)))
        slices.append((begin, end, step))
    return shape, new_shape, perm, slices


def _chain_case(shape, new_shape, perm, slices):
    A = te.placeholder(shape, name="A")
    a = rand(shape)
    R = topi.transpose(topi.reshape(A, new_shape), perm)
    begin, end, steps = zip(*slices)
    S = topi.strided_slice(R, list(begin), list(end), list(steps))
    want = a.reshape(new_shape).transpose(perm)[tuple(slice(b, e, s) for b, e, s in slices)]
    return A, a, S, want


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chain())
def test_property_reshape_transpose_slice(case):
    A, a, S, want = _chain_case(*case)
    (got,) = run("llvm", [A], S, [a])
    np.testing.assert_array_equal(got, want)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chain())
def test_property_reshape_transpose_slice_cuda(case):
    A, a, S, want = _chain_case(*case)
    (got,) = run("cuda", [A], S, [a])
    np.testing.assert_array_equal(got, want)


@st.composite
def _concat_split(draw):
    shape = draw(_dims)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    cuts = sorted(draw(st.lists(st.integers(-8, 8), max_size=3)))
    return shape, axis, sizes, cuts


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_concat_split())
def test_property_concatenate_then_split(case):
    shape, axis, sizes, cuts = case
    shapes = [tuple(n if k == axis % len(shape) else d for k, d in enumerate(shape)) for n in sizes]
    ts = [te.placeholder(s, name=f"X{k}") for k, s in enumerate(shapes)]
    arrays = [rand(s) for s in shapes]
    C = topi.concatenate(ts, axis)
    pieces = topi.split(C, cuts, axis)
    got = run("llvm", ts, pieces, arrays)
    want = np.split(np.concatenate(arrays, axis), cuts, axis)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@st.composite
def _take_case(draw):
    shape = draw(_dims)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    ind_shape = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    mode = draw(st.sampled_from(["clip", "wrap"]))
    seed = draw(st.integers(0, 2 ** 16))
    return shape, axis, ind_shape, mode, seed


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_take_case())
def test_property_take(case):
    shape, axis, ind_shape, mode, seed = case
    rng = np.random.default_rng(seed)
    A = te.placeholder(shape, name="A")
    I = te.placeholder(ind_shape, name="I", dtype="int32")
    a = rng.standard_normal(shape).astype("float32")
    n = shape[axis]
    idx = rng.integers(-2 * n, 2 * n, size=ind_shape).astype("int32")
    (got,) = run("llvm", [A, I], topi.take(A, I, axis, mode=mode), [a, idx])
    np.testing.assert_array_equal(got, np.take(a, idx, axis, mode=mode))


# ---------------------------------------------------------------------------- errors


def test_errors_name_operator_argument_and_shapes():
    A = te.placeholder((2, 3, 4), name="A")
    B = te.placeholder((2, 5, 4), name="B")
    F = te.placeholder((2,), name="F")
    I = te.placeholder((2,), name="I", dtype="int32")
    cases = [
        (lambda: topi.reshape(A, (5, 5)), r"reshape\('A' \(2, 3, 4\), \(5, 5\)\): the shapes hold 24 and 25"),
        (lambda: topi.reshape(A, (-1, 5)), r"reshape\('A' \(2, 3, 4\), \(-1, 5\)\): 24 elements cannot be arranged"),
        (lambda: topi.reshape(A, (2, 3, 4, 0)), "dimension 3 is 0 .* input has rank 3"),
        (lambda: topi.reshape(A, (-2, 12)), "dimension 0 is -2"),
        (lambda: topi.transpose(A, (0, 1)), r"transpose\('A' \(2, 3, 4\), axes=\[0, 1\]\): axes \[0, 1\] is not a "
                                            "permutation"),
        (lambda: topi.transpose(A, (0, 1, 3)), "axis 3 is out of range for a tensor of rank 3"),
        (lambda: topi.expand_dims(A, 4), r"expand_dims\('A' \(2, 3, 4\)\): axis 4 is out of range"),
        (lambda: topi.expand_dims(A, 0, -1), "num_newaxis is -1"),
        (lambda: topi.squeeze(A, axis=5), "axis 5 is out of range"),
        (lambda: topi.flip(A, -4), "axis -4 is out of range"),
        (lambda: topi.concatenate([A, B], axis=0), r"'B' \(2, 5, 4\) and 'A' \(2, 3, 4\) differ at axis 1"),
        (lambda: topi.concatenate([A, A], axis=-4), "axis -4 is out of range for a tensor of rank 3"),
        (lambda: topi.concatenate([A, F], axis=0), r"'F' \(2,\) has rank 1 but 'A' \(2, 3, 4\) has rank 3"),
        (lambda: topi.concatenate([A, te.placeholder((2, 3, 4), "int32", "C")]), "has dtype int32 but"),
        (lambda: topi.concatenate([], axis=0), "needs at least one tensor"),
        (lambda: topi.stack([A, B]), r"stack: 'B' \(2, 5, 4\) and 'A' \(2, 3, 4\) differ at axis 1"),
        (lambda: topi.stack([A], 4), "axis 4 is out of range"),
        (lambda: topi.split(A, 2, axis=1), r"split\('A' \(2, 3, 4\), 2, axis=1\): axis 1 of size 3 does not divide "
                                           "into 2 equal sections"),
        (lambda: topi.split(A, 0), "number of sections must be positive"),
        (lambda: topi.strided_slice(A, [0], [1], [0]), r"strided_slice\('A' \(2, 3, 4\).*step along axis 0 is 0"),
        (lambda: topi.strided_slice(A, [0, 0, 0, 0], [1, 1, 1, 1]), "4 axes sliced but the tensor has rank 3"),
        (lambda: topi.strided_slice(A, [0], [1, 2], axes=[1]), r"end has 2 entries for 1 axes \[1\]"),
        (lambda: topi.strided_slice(A, [0, 0], [1, 1], axes=[1, -2]), r"axes \[1, 1\] repeat an axis"),
        (lambda: topi.strided_slice(A, [0], [1], axes=[3]), "axis 3 is out of range"),
        (lambda: topi.strided_slice(A, [0], [1], slice_mode="stop"), "slice_mode 'stop' is not"),
        (lambda: topi.strided_slice(A, I, I), "begin, end and strides must be lists of constants"),
        (lambda: topi.take(A, I, axis=3), "axis 3 is out of range for a tensor of rank 3"),
        (lambda: topi.take(A, I, mode="nearest"), "mode 'nearest' is not one of"),
        (lambda: topi.take(A, te.placeholder((2, 3), "int32", "J"), axis=1, batch_dims=2),
         r"batch_dims 2 must be in \[0, min\(axis=1, rank of indices=2\)\]"),
        (lambda: topi.take(A, te.placeholder((3, 2), "int32", "J"), axis=1, batch_dims=1),
         r"batch axis 0 has size 2 in 'A' but 3 in the indices"),
        (lambda: topi.gather(A, 1, I), r"gather\('A' \(2, 3, 4\), axis=1, indices \(2,\)\): indices have rank 1"),
        (lambda: topi.gather(A, 3, te.placeholder((2, 3, 4), "int32", "J")), "axis 3 is out of range"),
        (lambda: topi.gather(A, 0, te.placeholder((2, 5, 4), "int32", "J")), "size 5 along axis 1 but data only 3"),
        (lambda: topi.gather_nd(A, te.placeholder((4, 2), "int32", "J")), "index tuples of length 4"),
        (lambda: topi.tile(A, (2, -1)), "repetitions must be >= 0"),
        (lambda: topi.repeat(A, 0, 1), "repeats must be >= 1"),
        (lambda: topi.one_hot(I, 1, 0, 3, 2, "float32"), r"one_hot\('I' \(2,\), depth=3, axis=2\): axis 2 is out"),
        (lambda: topi.arange(0, 5, 0), "step must be non-zero"),
        (lambda: topi.nn.pad(A, (0, -1, 0), (0, 0, 0)), r"pad\('A' \(2, 3, 4\)\): pad_before\[1\] is -1; padding "
                                                       "must be >= 0"),
        (lambda: topi.nn.pad(A, (0, 1)), "pad_before has 2 entries but the tensor has rank 3"),
        (lambda: topi.nn.mirror_pad(A, (0, 0, 4), (0, 0, 0), "REFLECT"),
         r"axis 2 of size 4 cannot be padded by \(4, 0\) in mode REFLECT; at most 3"),
        (lambda: topi.nn.mirror_pad(A, (0, 0, 0), (0, 4, 0)), "axis 1 of size 3 cannot be padded .* at most 3"),
        (lambda: topi.nn.mirror_pad(A, (0, 0, 0), mode="EDGE"), "mode 'EDGE' is not 'SYMMETRIC' or 'REFLECT'"),
        (lambda: topi.nn.edge_pad(A, (0, 0, 0), (0, -2, 0)), r"pad_after\[1\] is -2"),
        (lambda: topi.nn.flatten(te.placeholder((), name="S")), "needs a tensor of rank >= 1"),
        (lambda: topi.layout_transform(A, "NCHW", "NHWC"), "layout 'NCHW' has 4 axes but the tensor has rank 3"),
        (lambda: topi.layout_transform(A, "NCW", "NWD"), "different primal axes"),
        (lambda: topi.layout_transform(A, "NCW", "NW4c"), "splits 'C' but has no axis 'C'"),
        (lambda: topi.layout_transform(A, "NCW", "NCWc"), "the split axis 'c' needs its factor"),
        (lambda: topi.nn.space_to_depth(te.placeholder((1, 2, 5, 4), name="X"), 2),
         r"space_to_depth\('X' \(1, 2, 5, 4\)\): the height 5 is not a multiple of block_size 2"),
        (lambda: topi.nn.depth_to_space(te.placeholder((1, 6, 2, 2), name="X"), 2),
         "6 channels are not a multiple of block_size\\*\\*2 = 4"),
        (lambda: topi.nn.depth_to_space(te.placeholder((1, 4, 2, 2), name="X"), 2, mode="XYZ"), "mode 'XYZ'"),
        (lambda: topi.nn.space_to_depth(te.placeholder((1, 4, 2, 2), name="X"), 2, "NCWH"), "layout 'NCWH'"),
    ]
    for make, pattern in cases:
        with pytest.raises(TopiError, match=pattern):
            make()
    # indices that are not integers: a TopiError that is also a TypeError
    for make in (lambda: topi.take(A, F, axis=0), lambda: topi.gather(F, 0, F), lambda: topi.gather_nd(A, F),
                 lambda: topi.one_hot(F, 1, 0, 3, -1, "float32"), lambda: topi.take(A, 1.5)):
        with pytest.raises(TopiTypeError, match="must have an integer dtype|must be an integer"):
            make()
    with pytest.raises(TeccTypeError, match=r"take\('A' \(2, 3, 4\), axis=0.*indices 'F' must have an integer "
                                            r"dtype, got float32 \(indices of shape \(2,\)\)"):
        topi.take(A, F, axis=0)
    with pytest.raises(TeccTypeError, match="reshape: expected a tensor"):
        topi.reshape([1, 2], (2,))


# ---------------------------------------------------------------------------- real GPU


@pytest.mark.gpu
def test_data_movement_on_gpu():
    A = te.placeholder((64, 48), name="A")
    I = te.placeholder((100,), name="I", dtype="int32")
    a = rand((64, 48))
    idx = rand((100,), "int32", -100, 100)
    cases = [
        (topi.transpose(A), a.T),
        (topi.reshape(A, (-1, 96)), a.reshape(-1, 96)),
        (topi.strided_slice(A, [-1, 1], [None, -1], [-3, 2]), a[-1::-3, 1:-1:2]),
        (topi.concatenate([A, A], -1), np.concatenate([a, a], -1)),
        (topi.take(A, I, axis=0, mode="wrap"), np.take(a, idx, 0, mode="wrap")),
        (topi.nn.mirror_pad(A, (2, 3), (1, 2), "REFLECT"), np.pad(a, [(2, 1), (3, 2)], "reflect")),
        (topi.tile(A, (2, 3)), np.tile(a, (2, 3))),
        (topi.layout_transform(A, "NC", "NC16c"), a.reshape(64, 3, 16)),
    ]
    for out, want in cases:
        f = tecc.build(injective("cuda", out), [A, I, out], "cuda")
        got = np.zeros(want.shape, "float32")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(a, idx, got)
        np.testing.assert_array_equal(got, want)
