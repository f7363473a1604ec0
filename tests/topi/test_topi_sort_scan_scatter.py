"""topi's extern operators -- sort, argsort, topk (stable), cumsum/cumprod,
scatter_elements, scatter_nd -- and trilu, reverse_sequence, sequence_mask,
meshgrid: on llvm and cuda (the emulator, checked for races and out-of-bounds
accesses) against topi.testing's numpy references; hypothesis properties; one
expected error per bad argument; real-GPU runs (marked ``gpu``)."""
import importlib
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tecc
from tecc import te, topi
from tecc.errors import ScheduleError
from tecc.topi.utils import TopiError
from topi_run import TARGETS, build_run, rand

T = topi.testing


def declare(target, name, **kwargs):
    """The operator ``name`` declared and scheduled for ``target`` through
    topi.testing's dispatch: ``(outputs, schedule)``."""
    fcompute, fschedule = T.get_extern_implement(target, name)
    with tecc.target.Target(target):
        out = fcompute(**kwargs)
        outs = out if isinstance(out, list) else [out]
        return outs, fschedule(outs)


def ties(shape, dtype="float32"):
    """Small integers (many equal elements) in ``dtype``."""
    return rand(shape, "int32", -3, 3).astype(dtype)


# ---------------------------------------------------------------------------- sort, argsort, topk

SORT_CASES = [((1, 13), -1, True, "float32"), ((4, 7, 3), 1, False, "float32"), ((5,), 0, True, "int32"),
              ((2, 3, 6), 0, False, "int32")]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape, axis, ascend, dtype", SORT_CASES)
def test_sort_argsort_topk(target, shape, axis, ascend, dtype):
    A = te.placeholder(shape, name="A", dtype=dtype)
    a = ties(shape, dtype)
    (S,), s = declare(target, "sort", data=A, axis=axis, is_ascend=ascend)
    (got,) = build_run(s, [A], [S], [a], target)
    np.testing.assert_array_equal(got, T.sort_python(a, axis, ascend))
    (I,), s = declare(target, "argsort", data=A, axis=axis, is_ascend=ascend, dtype="int32")
    (got,) = build_run(s, [A], [I], [a], target)
    np.testing.assert_array_equal(got, T.argsort_python(a, axis, ascend, "int32"))  # stable: exact
    k = min(3, shape[axis])
    (V, K), s = declare(target, "topk", data=A, k=k, axis=axis, is_ascend=ascend)
    assert K.dtype == "int64" and V.dtype == dtype
    v, i = build_run(s, [A], [V, K], [a], target)
    want_v, want_i = T.topk_python(a, k, axis, "both", ascend)
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, want_i)


@pytest.mark.parametrize("target", TARGETS)
def test_sort_nan_last_ascending_first_descending(target):
    a = np.array([[2, np.nan, 1, np.nan, 2, -1, 0]], "float32")
    A = te.placeholder(a.shape, name="A")
    (S,), s = declare(target, "sort", data=A)
    (I,), si = declare(target, "argsort", data=A, is_ascend=False, dtype="int32")
    (got,) = build_run(s, [A], [S], [a], target)
    np.testing.assert_array_equal(got, np.sort(a), strict=True)
    (idx,) = build_run(si, [A], [I], [a], target)
    np.testing.assert_array_equal(idx, [[1, 3, 0, 4, 2, 6, 5]])


@pytest.mark.parametrize("target", TARGETS)
def test_argsort_valid_count(target):
    shape = (3, 9)
    a, vc = ties(shape), np.array([4, 9, 0], "int32")
    A = te.placeholder(shape, name="A")
    VC = te.placeholder((3,), name="VC", dtype="int32")
    (I,), s = declare(target, "argsort", data=A, valid_count=VC, is_ascend=False)
    assert I.dtype == "int32"
    (got,) = build_run(s, [A, VC], [I], [a, vc], target)
    np.testing.assert_array_equal(got, T.argsort_python(a, -1, False, valid_count=vc))


def test_cuda_sort_of_long_rows_launches_one_kernel_per_stage(monkeypatch):
    cuda_sort = importlib.import_module("tecc.topi.cuda.sort")  # the module (topi.cuda.sort is the compute)
    monkeypatch.setattr(cuda_sort, "SHARED_SORT_MAX", 8)
    shape = (3, 21, 2)
    a = ties(shape)
    A = te.placeholder(shape, name="A")
    (V, K), s = declare("cuda", "topk", data=A, k=5, axis=1, dtype="int32")
    f = tecc.build(s, [A, V, K], "cuda")
    src = f.imported_modules[0].get_source() if f.imported_modules else f.get_source()
    assert "__shared__" not in src and src.count("__global__") == 3  # init, one stage, write
    v, i = build_run(s, [A], [V, K], [a], "cuda")
    want_v, want_i = T.topk_python(a, 5, 1, dtype="int32")
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, want_i)


def test_cuda_sort_of_short_rows_is_one_block_per_row_in_shared_memory():
    A = te.placeholder((5, 30), name="A")
    (S,), s = declare("cuda", "sort", data=A)
    f = tecc.build(s, [A, S], "cuda")
    src = f.imported_modules[0].get_source() if f.imported_modules else f.get_source()
    assert "__shared__" in src and "__syncthreads()" in src and src.count("__global__") == 1


@pytest.mark.parametrize("target", TARGETS)
def test_topk_ret_types_and_whole_axis(target):
    shape = (2, 6)
    a = ties(shape)
    A = te.placeholder(shape, name="A")
    (V,), s = declare(target, "topk", data=A, k=0, ret_type="values", is_ascend=True)
    assert tuple(V.shape) == shape
    (v,) = build_run(s, [A], [V], [a], target)
    np.testing.assert_array_equal(v, T.topk_python(a, 0, ret_type="values", is_ascend=True))
    (K,), s = declare(target, "topk", data=A, k=2, ret_type="indices", dtype="int32")
    (k,) = build_run(s, [A], [K], [a], target)
    np.testing.assert_array_equal(k, T.topk_python(a, 2, ret_type="indices", dtype="int32"))


@pytest.mark.parametrize("target", TARGETS)
def test_topk_between_computes_through_the_registry(target):
    """exp before the extern stage, a cast after: topi.schedule finds the topk
    schedule by the extern's tag and schedules the computes around it."""
    shape = (3, 10)
    a = rand(shape)
    A = te.placeholder(shape, name="A")
    with tecc.target.Target(target):
        V, K = topi.topk(topi.exp(A), k=4)
        C = topi.cast(K, "int32") + 1
        s = topi.schedule([V, K, C])
        I = topi.cast(topi.topk(A * 2.0, k=2, ret_type="indices"), "float32")
        si = topi.schedule(I)
    v, k, c = build_run(s, [A], [V, K, C], [a], target)
    want_v, want_i = T.topk_python(np.exp(a), 4)
    np.testing.assert_allclose(v, want_v, rtol=1e-6)
    np.testing.assert_array_equal(k, want_i)
    np.testing.assert_array_equal(c, want_i + 1)
    (i,) = build_run(si, [A], [I], [a], target)
    np.testing.assert_array_equal(i, T.topk_python(a, 2, ret_type="indices"))


def test_schedule_of_the_other_target_is_refused():
    A = te.placeholder((4, 5), name="A")
    cpu_sort = topi.sort(A)  # no target: the CPU statement
    with pytest.raises(ScheduleError, match="holds the CPU statement but this is a GPU schedule"):
        topi.schedule(cpu_sort, "cuda")
    with pytest.raises(ScheduleError, match="holds the GPU statement but this is a CPU schedule"):
        topi.schedule(topi.cuda.sort(A), "llvm")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 3), n=st.integers(1, 20), ascend=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_sort_argsort_property(rows, n, ascend, seed):
    a = np.random.default_rng(seed).integers(-4, 5, (rows, n)).astype("float32")
    A = te.placeholder((rows, n), name="A")
    with tecc.target.Target("llvm"):
        S = topi.sort(A, is_ascend=ascend)
        I = topi.argsort(A, is_ascend=ascend, dtype="int32")
        s = topi.schedule([S, I])
    got, idx = build_run(s, [A], [S, I], [a], "llvm")
    np.testing.assert_array_equal(got, T.sort_python(a, -1, ascend))
    np.testing.assert_array_equal(idx, T.argsort_python(a, -1, ascend, "int32"))
    # properties: the positions are a permutation that gathers the sorted row
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.tile(np.arange(n), (rows, 1)))
    np.testing.assert_array_equal(np.take_along_axis(a, idx, 1), got)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 24), seed=st.integers(0, 2 ** 16))
def test_cuda_sort_property(n, seed):
    a = np.random.default_rng(seed).integers(-4, 5, (2, n)).astype("float32")
    A = te.placeholder((2, n), name="A")
    (V, K), s = declare("cuda", "topk", data=A, k=0, is_ascend=bool(seed % 2), dtype="int32")
    v, k = build_run(s, [A], [V, K], [a], "cuda")
    want_v, want_i = T.topk_python(a, 0, is_ascend=bool(seed % 2), dtype="int32")
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(k, want_i)


# ---------------------------------------------------------------------------- cumsum, cumprod

SCAN_CASES = [((3, 13), -1, None, False), ((4, 5, 3), 1, None, True), ((300,), None, None, False),
              ((2, 33, 3), 0, "float64", False), ((5, 7), 1, "int32", True), ((2, 3), None, "int64", True)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape, axis, dtype, exclusive", SCAN_CASES)
def test_cumsum_cumprod(target, shape, axis, dtype, exclusive):
    idt = "int32" if dtype in ("int32", "int64") else "float32"
    a = ties(shape, idt) if idt == "int32" else rand(shape, low=0.5, high=1.5)
    A = te.placeholder(shape, name="A", dtype=idt)
    for name, ref in (("cumsum", T.cumsum_python), ("cumprod", T.cumprod_python)):
        (C,), s = declare(target, name, data=A, axis=axis, dtype=dtype, exclusive=exclusive)
        assert C.dtype == (dtype or idt) and C.op.tag == "scan"
        (got,) = build_run(s, [A], [C], [a], target)
        want = ref(a, axis, dtype, exclusive)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data=st.data(), exclusive=st.booleans())
def test_cumsum_property(shape, data, exclusive):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    a = np.random.default_rng(len(shape)).integers(-5, 6, shape).astype("int32")
    A = te.placeholder(tuple(shape), name="A", dtype="int32")
    with tecc.target.Target("llvm"):
        C = topi.cumsum(A, axis=axis, exclusive=exclusive)
        s = topi.schedule(C)
    (got,) = build_run(s, [A], [C], [a], "llvm")
    np.testing.assert_array_equal(got, T.cumsum_python(a, axis, None, exclusive))
    # property: the last inclusive element is the sum along the axis
    if not exclusive:
        total = a.sum() if axis is None else a.sum(axis=axis)
        last = got[-1] if axis is None else np.take(got, -1, axis=axis)
        np.testing.assert_array_equal(last, total)


# ---------------------------------------------------------------------------- scatter

SCATTER_ELEMENTS_CASES = [((5, 4), (7, 4), 0), ((3, 6, 2), (2, 5, 2), 1), ((4, 5), (4, 3), -1)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reduction, cases", [
    ("update", SCATTER_ELEMENTS_CASES), ("add", SCATTER_ELEMENTS_CASES[1:2]), ("mul", SCATTER_ELEMENTS_CASES[2:]),
    ("min", SCATTER_ELEMENTS_CASES[:1]), ("max", SCATTER_ELEMENTS_CASES[1:2])])
def test_scatter_elements(target, reduction, cases):
    for dshape, ishape, axis in cases:
        n = dshape[axis]
        data, upd = ties(dshape), ties(ishape)
        ind = rand(ishape, "int64", -n, n - 1)  # negative indices and duplicates
        A = te.placeholder(dshape, name="A")
        I = te.placeholder(ishape, name="I", dtype="int64")
        U = te.placeholder(ishape, name="U")
        (O,), s = declare(target, "scatter_elements", data=A, indices=I, updates=U, axis=axis, reduction=reduction)
        (got,) = build_run(s, [A, I, U], [O], [data, ind, upd], target)
        np.testing.assert_array_equal(got, T.scatter_elements_python(data, ind, upd, axis, reduction))


@pytest.mark.parametrize("target", TARGETS)
def test_scatter_duplicates_last_wins_and_out_of_range_dropped(target):
    data = np.zeros((6,), "float32")
    ind = np.array([1, 3, 1, -1, 9, 1], "int32")
    upd = np.array([10, 20, 30, 40, 50, 60], "float32")
    A, I, U = te.placeholder((6,), name="A"), te.placeholder((6,), name="I", dtype="int32"), \
        te.placeholder((6,), name="U")
    with tecc.target.Target(target):
        O = topi.scatter(A, I, U)
        s = topi.schedule(O)
    (got,) = build_run(s, [A, I, U], [O], [data, ind, upd], target)
    np.testing.assert_array_equal(got, [0, 60, 0, 20, 0, 40])


SCATTER_ND_CASES = [((5, 4), (1, 3), (3, 4)), ((3, 6, 2), (2, 4), (4, 2)), ((4, 5), (2, 7), (7,)),
                    ((4, 5), (2, 2, 3), (2, 3))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode, cases", [("update", SCATTER_ND_CASES), ("add", SCATTER_ND_CASES[1:2]),
                                         ("mul", SCATTER_ND_CASES[2:3]), ("max", SCATTER_ND_CASES[3:])])
def test_scatter_nd(target, mode, cases):
    for dshape, ishape, ushape in cases:
        m = ishape[0]
        ind = np.stack([rand(ishape[1:], "int32", -dshape[k], dshape[k] - 1) for k in range(m)])
        data, upd = ties(dshape), ties(ushape)
        A = te.placeholder(dshape, name="A")
        I = te.placeholder(ishape, name="I", dtype="int32")
        U = te.placeholder(ushape, name="U")
        (O,), s = declare(target, "scatter_nd", data=A, indices=I, updates=U, mode=mode)
        (got,) = build_run(s, [A, I, U], [O], [data, ind, upd], target)
        np.testing.assert_array_equal(got, T.scatter_nd_python(data, ind, upd, mode))


# ---------------------------------------------------------------------------- trilu, sequences, meshgrid

def injective(target, outs):
    with tecc.target.Target(target):
        return topi.schedule(outs)


@pytest.mark.parametrize("target", TARGETS)
def test_trilu(target):
    a = rand((2, 4, 5))
    A = te.placeholder(a.shape, name="A")
    for upper in (True, False):
        for k in ((-2, 1) if upper else (0,)):
            O = topi.trilu(A, k, upper)
            (got,) = build_run(injective(target, O), [A], [O], [a], target)
            np.testing.assert_array_equal(got, T.trilu_python(a, k, upper))
    K = te.placeholder((), name="K", dtype="int64")  # ONNX's k input
    O = topi.trilu(A, K, False)
    (got,) = build_run(injective(target, O), [A, K], [O], [a, np.array(-1, "int64")], target)
    np.testing.assert_array_equal(got, T.trilu_python(a, -1, False))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seq_axis, batch_axis", [(1, 0), (0, 2)])
def test_reverse_sequence(target, seq_axis, batch_axis):
    a = rand((4, 5, 3))
    lens = rand((a.shape[batch_axis],), "int32", -1, 7)
    A = te.placeholder(a.shape, name="A")
    L = te.placeholder(lens.shape, name="L", dtype="int32")
    O = topi.reverse_sequence(A, L, seq_axis, batch_axis)
    (got,) = build_run(injective(target, O), [A, L], [O], [a, lens], target)
    np.testing.assert_array_equal(got, T.reverse_sequence_python(a, lens, seq_axis, batch_axis))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_mask(target, axis):
    a = rand((5, 3, 2))
    lens = rand((a.shape[1 - axis],), "int32", 0, a.shape[axis])
    A = te.placeholder(a.shape, name="A")
    L = te.placeholder(lens.shape, name="L", dtype="int32")
    O = topi.sequence_mask(A, L, -1e4, axis)
    (got,) = build_run(injective(target, O), [A, L], [O], [a, lens], target)
    np.testing.assert_array_equal(got, T.sequence_mask(a, lens, -1e4, axis))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(target, indexing):
    xs, ys, z = rand((3,)), rand((4,)), rand(())
    X, Y, Z = te.placeholder((3,), name="X"), te.placeholder((4,), name="Y"), te.placeholder((), name="Z")
    G = topi.meshgrid([X, Y, Z], indexing)
    got = build_run(injective(target, G), [X, Y, Z], G, [xs, ys, z], target)
    for g, want in zip(got, T.meshgrid_python([xs, ys, z], indexing)):
        np.testing.assert_array_equal(g, want)


# ---------------------------------------------------------------------------- errors at declaration

def _p(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype)


ERRORS = [
    (lambda: topi.sort(_p((3, 4), "A"), axis=2), r"sort\('A' \(3, 4\), axis=2\): axis 2 is out of range"),
    (lambda: topi.argsort(_p((3, 4), "A"), valid_count=_p((4,), "V", "int32")),
     r"argsort.*valid_count has shape \(4,\).*must have shape \(3,\)"),
    (lambda: topi.topk(_p((3, 4), "A"), k=5), r"topk\('A' \(3, 4\), k=5, axis=-1\): k=5 is larger than the size 4"),
    (lambda: topi.topk(_p((3, 4), "A"), ret_type="all"), r"ret_type must be one of \['both', 'values', 'indices'\]"),
    (lambda: topi.cumsum(_p((3, 4), "A"), axis=-3), r"cumsum\('A' \(3, 4\), axis=-3\): axis -3 is out of range"),
    (lambda: topi.cumsum(_p((3,), "A"), dtype="bool"), "cannot accumulate in bool"),
    (lambda: topi.scatter_elements(_p((4, 4), "D"), _p((2, 4), "I", "int32"), _p((2, 4), "U"), reduction="mean"),
     r"reduction must be one of \['update', 'add', 'mul', 'min', 'max'\], got 'mean'"),
    (lambda: topi.scatter_elements(_p((4, 4), "D"), _p((2, 4), "I", "int32"), _p((2, 3), "U")),
     r"indices have shape \(2, 4\) but updates \(2, 3\)"),
    (lambda: topi.scatter_elements(_p((4, 4), "D"), _p((2, 4), "I"), _p((2, 4), "U")),
     r"indices 'I' \(2, 4\) must have an integer dtype, got float32"),
    (lambda: topi.scatter_elements(_p((4, 4), "D"), _p((2, 5), "I", "int32"), _p((2, 5), "U"), axis=0),
     "indices have size 5 along axis 1 but data only 4"),
    (lambda: topi.scatter_nd(_p((4, 5), "D"), _p((2, 3), "I", "int32"), _p((3, 5), "U")),
     r"updates must have shape indices.shape\[1:\] \+ data.shape\[2:\] = \(3,\), got \(3, 5\)"),
    (lambda: topi.scatter_nd(_p((4, 5), "D"), _p((3, 3), "I", "int32"), _p((3,), "U")),
     r"index tuples of length 3 \(indices.shape\[0\]\) do not fit data of rank 2"),
    (lambda: topi.scatter_nd(_p((4, 5), "D"), _p((1, 3), "I", "int32"), _p((3, 5), "U"), mode="sub"),
     r"mode must be one of .*got 'sub'"),
    (lambda: topi.trilu(_p((4,), "A"), 0, True), r"trilu\('A' \(4,\), upper=True\): data must have rank 2 or more"),
    (lambda: topi.reverse_sequence(_p((3, 4), "A"), _p((3,), "L", "int32"), 0, 0),
     "seq_axis and batch_axis must be different axes"),
    (lambda: topi.reverse_sequence(_p((3, 4), "A"), _p((4,), "L", "int32"), 1, 0),
     r"seq_lengths must have shape \(3,\)"),
    (lambda: topi.sequence_mask(_p((3, 4), "A"), _p((4,), "L", "int32"), axis=2), "axis must be 0 or 1"),
    (lambda: topi.sequence_mask(_p((3, 4), "A"), _p((4,), "L")), r"sequence_mask\(.*'L' must have an integer dtype"),
    (lambda: topi.meshgrid([_p((3,), "X")], "yx"), "indexing must be 'ij' or 'xy', got 'yx'"),
    (lambda: topi.meshgrid([_p((3, 2), "X")], "ij"), r"every input must be 1-D \(or rank 0\)"),
]


@pytest.mark.parametrize("make, match", ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_bad_arguments_raise_at_declaration(make, match):
    with pytest.raises(TopiError, match=match):
        make()


def test_cuda_computes_check_too():
    with pytest.raises(TopiError, match=r"k=9 is larger than the size 4"):
        topi.cuda.topk(_p((3, 4), "A"), k=9)
    with pytest.raises(TopiError, match="reduction must be one of"):
        topi.cuda.scatter_elements(_p((4,), "D"), _p((2,), "I", "int32"), _p((2,), "U"), reduction="avg")


# ---------------------------------------------------------------------------- real GPU

@pytest.mark.gpu
def test_sort_scan_scatter_on_gpu():
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, (64, 3000)).astype("float32")  # 3000 > SHARED_SORT_MAX: global network
    b = rng.integers(-50, 50, (128, 300)).astype("float32")
    for x in (a, b):
        X = te.placeholder(x.shape, name="X")
        (V, K), s = declare("cuda", "topk", data=X, k=10, dtype="int32")
        (C,), sc = declare("cuda", "cumsum", data=X, axis=1)
        f, fc = tecc.build(s, [X, V, K], "cuda"), tecc.build(sc, [X, C], "cuda")
        v, k, c = np.zeros(V.shape, "float32"), np.zeros(K.shape, "int32"), np.zeros(x.shape, "float32")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(x, v, k)
            fc(x, c)
        want_v, want_i = T.topk_python(x, 10, dtype="int32")
        np.testing.assert_array_equal(v, want_v)
        np.testing.assert_array_equal(k, want_i)
        np.testing.assert_allclose(c, T.cumsum_python(x, 1), rtol=1e-4, atol=1e-2)
    data, upd = rng.standard_normal((1000, 16)).astype("float32"), rng.standard_normal((500, 16)).astype("float32")
    ind = rng.integers(-1000, 1000, (500, 16)).astype("int64")
    D, I, U = te.placeholder(data.shape, name="D"), te.placeholder(ind.shape, name="I", dtype="int64"), \
        te.placeholder(upd.shape, name="U")
    (O,), s = declare("cuda", "scatter_elements", data=D, indices=I, updates=U, reduction="add")
    f = tecc.build(s, [D, I, U, O], "cuda")
    out = np.zeros_like(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(data, ind, upd, out)
    np.testing.assert_allclose(out, T.scatter_elements_python(data, ind, upd, 0, "add"), rtol=1e-5, atol=1e-5)
