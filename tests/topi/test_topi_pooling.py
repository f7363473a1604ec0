"""topi.nn.pool1d/2d/3d (max and average; padding, dilation, ceil_mode,
count_include_pad; NCHW, NHWC, NCHW4c; float32, float16, int8), adaptive_pool(1d/3d)
and global_pool, with the CPU and CUDA schedules (sm_80/sm_90 builds, the emulator's
race and bounds check), against the numpy references; the declaration errors; and
the CUDA schedules on a real GPU (``gpu``)."""
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tecc
from tecc import te, topi
from tecc.errors import ScheduleError, TeccTypeError
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches, stages
from topi_run import build_run, rand

TARGETS = ["llvm", "cuda"]


def pool_schedule(target, out, layout):
    with tecc.target.Target(target):
        return topi.testing.get_pool_schedule(target)(out, layout)


CASES = [
    # kernel, stride, dilation, padding (top, left, bottom, right), ceil_mode, count_include_pad
    ((3, 3), (1, 1), (1, 1), (0, 0, 0, 0), False, True),
    ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False, True),
    ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
    ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, False),
    ((3, 2), (2, 1), (2, 1), (1, 0, 2, 1), False, False),
    ((3, 3), (2, 2), (1, 1), (1, 1, 0, 0), True, True),
    ((3, 3), (2, 2), (1, 1), (1, 1, 0, 0), True, False),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("kernel, stride, dilation, padding, ceil_mode, include", CASES)
def test_pool2d_nchw(target, pool_type, kernel, stride, dilation, padding, ceil_mode, include):
    shape = (1, 3, 9, 10)
    A = te.placeholder(shape, name="A")
    P = topi.nn.pool2d(A, kernel, stride, dilation, padding, pool_type, ceil_mode, "NCHW", include)
    a = rand(shape, low=-2, high=2)
    (p,) = build_run(pool_schedule(target, P, "NCHW"), [A], [P], [a], target)
    want = topi.testing.poolnd_python(a, kernel, stride, dilation, padding[:2], padding[2:], pool_type, include,
                                      ceil_mode)
    assert p.shape == want.shape
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool2d_nhwc_and_pool1d(target, pool_type):
    A = te.placeholder((2, 8, 7, 3), name="A")
    P = topi.nn.pool2d(A, (2, 3), (2, 2), (1, 1), (0, 1, 1, 1), pool_type, layout="NHWC", count_include_pad=False)
    a = rand((2, 8, 7, 3))
    (p,) = build_run(pool_schedule(target, P, "NHWC"), [A], [P], [a], target)
    want = topi.testing.poolnd_python(a, (2, 3), (2, 2), (1, 1), (0, 1), (1, 1), pool_type, False, layout="NHWC")
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)
    B = te.placeholder((2, 3, 11), name="B")
    Q = topi.nn.pool1d(B, (3,), (2,), (1,), (1, 1), pool_type)
    b = rand((2, 3, 11))
    (q,) = build_run(pool_schedule(target, Q, "NCW"), [B], [Q], [b], target)
    want = topi.testing.poolnd_python(b, (3,), (2,), (1,), (1,), (1,), pool_type)
    np.testing.assert_allclose(q, want, rtol=1e-5, atol=1e-6)


def test_unpadded_max_pool_reads_its_input_directly():
    # a tensor intrinsic can match it (TVM's test_tensor_pool): no padding stage
    A = te.placeholder((1, 64, 16, 16), name="A")
    P = topi.nn.pool2d(A, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), "max")
    assert P.op.name == "pool_max" and P.op.tag == "pool_max"
    assert P.op.input_tensors == [A] and [int(d) for d in P.shape] == [1, 64, 14, 14]
    Q = topi.nn.pool2d(A, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), "avg")
    assert sorted(stages(Q)) == ["pad_temp", "pool_avg", "pool_sum"]


def test_global_pool():
    A = te.placeholder((2, 3, 5, 4), name="A")
    P = topi.nn.global_pool(A, "avg")
    a = rand((2, 3, 5, 4))
    (p,) = build_run(pool_schedule("llvm", P, "NCHW"), [A], [P], [a], "llvm")
    np.testing.assert_allclose(p, a.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


def test_pool_errors():
    A = te.placeholder((1, 3, 8, 8), name="A")
    with pytest.raises(TopiError, match="pool_type 'sum' is not one of"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "sum")
    with pytest.raises(TopiError, match=r"padding \(0, 0\) must have 4 entries"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, 0), "max")
    with pytest.raises(TopiError, match="layout 'NCD' has 3 axes but 'A' has shape"):
        topi.nn.pool1d(A, (2,), (1,), (1,), (0, 0), "max", layout="NCD")
    with pytest.raises(TopiError, match="layout 'NCHD' has no axis 'W'"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max", layout="NCHD")
    with pytest.raises(TeccTypeError, match="pool2d: data must be a tensor"):
        topi.nn.pool2d([1, 2], (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max")


# ---------------------------------------------------------------------------- pool3d, dtypes


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool3d(target, pool_type):
    A = te.placeholder((1, 2, 5, 6, 7), name="A")
    P = topi.nn.pool3d(A, (2, 3, 2), (2, 2, 1), (1, 1, 2), (1, 0, 1, 0, 1, 1), pool_type, ceil_mode=True,
                       count_include_pad=False)
    a = rand((1, 2, 5, 6, 7))
    (p,) = build_run(pool_schedule(target, P, "NCDHW"), [A], [P], [a], target)
    want = topi.testing.poolnd_python(a, (2, 3, 2), (2, 2, 1), (1, 1, 2), (1, 0, 1), (0, 1, 1), pool_type, False,
                                      True)
    assert p.shape == want.shape
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype, pool_type", [("float16", "max"), ("float16", "avg"), ("int8", "max"),
                                              ("int32", "max")])
def test_pool2d_dtypes(target, dtype, pool_type):
    A = te.placeholder((2, 3, 7, 8), name="A", dtype=dtype)
    P = topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), pool_type)
    a = rand((2, 3, 7, 8), dtype, -100, 100) if dtype != "float16" else rand((2, 3, 7, 8), dtype)
    (p,) = build_run(pool_schedule(target, P, "NCHW"), [A], [P], [a], target)
    want = topi.testing.poolnd_python(a, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), pool_type, dtype=dtype)
    assert p.dtype == np.dtype(dtype)
    np.testing.assert_allclose(p.astype("float64"), want.astype("float64"), rtol=2e-3, atol=2e-3)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(0, 2),
       st.integers(0, 2), st.booleans(), st.booleans(), st.sampled_from(["max", "avg"]), st.integers(4, 9))
def test_property_pool2d_matches_the_reference(kh, kw, stride, dilation, pad_a, pad_b, ceil_mode, include,
                                               pool_type, size):
    A = te.placeholder((1, 2, size, size + 1), name="A")
    args = ((kh, kw), (stride, stride), (dilation, dilation), (pad_a, pad_b, pad_b, pad_a), pool_type, ceil_mode,
            "NCHW", include)
    if (kh - 1) * dilation + 1 > size + pad_a + pad_b or (kw - 1) * dilation + 1 > size + 1 + pad_a + pad_b:
        with pytest.raises(TopiError, match="the window along [HW] spans"):
            topi.nn.pool2d(A, *args)
        return
    P = topi.nn.pool2d(A, *args)
    a = rand((1, 2, size, size + 1))
    (p,) = build_run(pool_schedule("llvm", P, "NCHW"), [A], [P], [a], "llvm")
    want = topi.testing.poolnd_python(a, (kh, kw), (stride, stride), (dilation, dilation), (pad_a, pad_b),
                                      (pad_b, pad_a), pool_type, include, ceil_mode)
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- adaptive, global


def adaptive_schedule(target, out):
    with tecc.target.Target(target):
        return topi.testing.get_adaptive_pool_schedule(target)(out)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("layout, shape, out_size", [
    ("NCHW", (2, 3, 9, 10), (4, 3)),
    ("NCHW", (1, 2, 5, 7), (5, 7)),
    ("NHWC", (1, 7, 6, 8), (3, 4)),
    ("NCHW4c", (1, 2, 7, 5, 4), (2, None)),
])
def test_adaptive_pool(target, pool_type, layout, shape, out_size):
    A = te.placeholder(shape, name="A")
    P = topi.nn.adaptive_pool(A, out_size, pool_type, layout)
    a = rand(shape)
    (p,) = build_run(adaptive_schedule(target, P), [A], [P], [a], target)
    size = tuple(shape[layout.index(x)] if o is None else o for x, o in zip("HW", out_size))
    want = topi.testing.adaptive_pool(a, size, pool_type, layout.rstrip("4c") if "4c" in layout else layout)
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_adaptive_pool_1d_3d_and_global(target):
    A = te.placeholder((1, 3, 11), name="A")
    a = rand((1, 3, 11))
    P = topi.nn.adaptive_pool1d(A, 4, "avg")
    (p,) = build_run(adaptive_schedule(target, P), [A], [P], [a], target)
    np.testing.assert_allclose(p, topi.testing.adaptive_pool(a, 4, "avg", "NCW"), rtol=1e-5, atol=1e-6)
    B = te.placeholder((1, 5, 4, 6, 2), name="B")
    b = rand((1, 5, 4, 6, 2))
    Q = topi.nn.adaptive_pool3d(B, (2, 3, 2), "max", "NDHWC")
    (q,) = build_run(adaptive_schedule(target, Q), [B], [Q], [b], target)
    np.testing.assert_allclose(q, topi.testing.adaptive_pool(b, (2, 3, 2), "max", "NDHWC"))
    C = te.placeholder((2, 6, 5, 3), name="C")
    c = rand((2, 6, 5, 3))
    for pool_type, ref in (("avg", np.mean), ("max", np.max)):
        G = topi.nn.global_pool(C, pool_type, layout="NHWC")
        assert G.op.name == f"adaptive_pool_{pool_type}"  # TVM's: adaptive pooling to 1x1
        (g,) = build_run(pool_schedule(target, G, "NHWC"), [C], [G], [c], target)
        np.testing.assert_allclose(g, ref(c, axis=(1, 2), keepdims=True), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- schedules


def test_x86_pool_schedule_is_parallel_and_vectorized():
    A = te.placeholder((1, 16, 12, 32), name="A")
    for pool_type in ("max", "avg"):
        # NCHW: the window slides along W, the innermost axis.  Stride 2 and a row of 16:
        # a vector of outputs reduced in registers, the (unrolled) window loops outside
        # the lanes; each tap a stride-2 vector load
        for make in (lambda a: a, topi.nn.relu):
            P = make(topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), pool_type))
            s = topi.x86.schedule_pool(P, "NCHW")
            text = str(tecc.lower(s, [A, P], simple_mode=True))
            assert "parallel for" in text and "unrolled for (rv0" in text and "unrolled for (rv1" in text
            assert re.search(r"unrolled for \(rv1[^\n]*\n\s*vectorized for \(i3", text)
            assert "pad_temp" not in text  # the padding is inlined
            assert "tecc_load_stride2_float32x" in tecc.build(s, [A, P], "llvm").get_source()
        # stride 3: lanes would gather; each element's window reduced in a register
        P = topi.nn.pool2d(A, (3, 3), (3, 3), (1, 1), (0, 0, 0, 1), pool_type)
        text = str(tecc.lower(topi.x86.schedule_pool(P, "NCHW"), [A, P], simple_mode=True))
        assert "parallel for" in text and "unrolled for (rv1" in text and "vectorized" not in text
        if pool_type == "max":  # the output is the reduction: accumulated in a local cache
            P = topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), pool_type)
            assert ".local" in str(tecc.lower(topi.x86.schedule_pool(P, "NCHW"), [A, P], simple_mode=True))
        # NHWC: the window does not touch C, the innermost axis: C vectorized, the window loops outside
        P = topi.nn.relu(topi.nn.pool2d(A, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), pool_type, layout="NHWC"))
        text = str(tecc.lower(topi.x86.schedule_pool(P, "NHWC"), [A, P], simple_mode=True))
        assert "parallel for" in text and "vectorized for" in text
        assert "pad_temp" not in text
    # the window of an adaptive pool depends on W: its loops stay inside, W is not vectorized there
    Q = topi.nn.adaptive_pool(A, (5, 7), "max")
    text = str(tecc.lower(topi.x86.schedule_adaptive_pool(Q), [A, Q], simple_mode=True))
    assert "parallel for" in text and "vectorized" not in text


@pytest.mark.parametrize("make", [
    lambda A: topi.nn.relu(topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "avg", count_include_pad=False)),
    lambda A: topi.nn.pool2d(A, (2, 2), (2, 2), (1, 1), (0, 0, 1, 1), "max", ceil_mode=True),
    lambda A: topi.nn.adaptive_pool(A, (3, 2), "avg"),
    lambda A: topi.nn.global_pool(A, "max"),
], ids=["avg_relu", "max_ceil", "adaptive_avg", "global_max"])
def test_cuda_pool_schedules_build_for_sm80_and_sm90(make):
    A = te.placeholder((1, 3, 7, 6), name="A")
    P = make(A)
    s = pool_schedule("cuda", P, "NCHW")
    mod = build_all_arches(s, [A, P])
    src = mod.imported_modules[0].get_source()
    assert "threadIdx.x" in src and "pad_temp" not in src
    a = rand((1, 3, 7, 6))
    (p,) = build_run(s, [A], [P], [a], "cuda")
    (want,) = build_run(topi.generic.schedule_pool(P, "NCHW"), [A], [P], [a], "llvm")
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)


def test_pool_shape_and_layout_errors():
    A = te.placeholder((1, 3, 4, 5), name="A")
    with pytest.raises(TopiError, match=r"pool2d\('A' \(1, 3, 4, 5\), layout 'NCHW'\): the window along H spans 5 "
                                        r"elements \(kernel 3, dilation 2\) but the padded input has only 4"):
        topi.nn.pool2d(A, (3, 1), (1, 1), (2, 1), (0, 0, 0, 0), "max")
    with pytest.raises(TopiError, match="the window along W spans 7 .* padded input has only 6"):
        topi.nn.pool2d(A, (1, 7), (1, 1), (1, 1), (0, 1, 0, 0), "avg")
    with pytest.raises(TopiError, match=r"padding \(0, -1, 0, 0\) has the entry -1; every entry must be >= 0"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, -1, 0, 0), "max")
    with pytest.raises(TopiError, match=r"stride \(0, 1\) has the entry 0; every entry must be >= 1"):
        topi.nn.pool2d(A, (2, 2), (0, 1), (1, 1), (0, 0, 0, 0), "max")
    with pytest.raises(TopiError, match=r"kernel \(0, 1\) has the entry 0"):
        topi.nn.pool2d(A, (0, 1), (1, 1), (1, 1), (0, 0, 0, 0), "max")
    with pytest.raises(TopiError, match="layout 'NCH-W' has the character '-'"):
        topi.nn.pool2d(A, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max", layout="NCH-W")
    with pytest.raises(TopiError, match="pool3d: layout 'NCDHW' has 5 axes but 'A' has shape"):
        topi.nn.pool3d(A, (1, 1, 1), (1, 1, 1), (1, 1, 1), (0,) * 6, "max")
    with pytest.raises(TopiError, match=r"adaptive_pool\('A' \(1, 3, 4, 5\)\): output_size \(0, 2\) has the entry 0"):
        topi.nn.adaptive_pool(A, (0, 2), "avg")
    with pytest.raises(TopiError, match=r"output_size \(2,\) must have 2 entries \(HW\)"):
        topi.nn.adaptive_pool(A, (2,), "avg")
    with pytest.raises(TopiError, match="adaptive_pool: layout 'NCDW' has no axis 'H'"):
        topi.nn.adaptive_pool(A, (2, 2), "max", layout="NCDW")
    with pytest.raises(TopiError, match="adaptive_pool: pool_type 'min' is not one of"):
        topi.nn.adaptive_pool(A, (2, 2), "min")
    with pytest.raises(TopiError, match="global_pool: layout 'NCW' has 3 axes"):
        topi.nn.global_pool(A, "max", layout="NCW")
    with pytest.raises(ScheduleError, match="'T_relu' .* is not a pooling output"):
        topi.cuda.schedule_pool(topi.nn.relu(A))
    with pytest.raises(ScheduleError, match="is not a pooling output"):
        topi.x86.schedule_adaptive_pool(topi.nn.relu(A))


# ---------------------------------------------------------------------------- real GPU


@pytest.mark.gpu
def test_pool_schedules_on_gpu():
    A = te.placeholder((4, 32, 28, 28), name="A")
    a = rand((4, 32, 28, 28))
    cases = [
        (topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max"),
         topi.testing.poolnd_python(a, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), "max")),
        (topi.nn.pool2d(A, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "avg"),
         topi.testing.poolnd_python(a, (2, 2), (2, 2), (1, 1), (0, 0), (0, 0), "avg")),
        (topi.nn.adaptive_pool(A, (5, 3), "avg"), topi.testing.adaptive_pool(a, (5, 3), "avg", "NCHW")),
        (topi.nn.global_pool(A, "avg"), a.mean(axis=(2, 3), keepdims=True)),
    ]
    for out, want in cases:
        f = tecc.build(pool_schedule("cuda", out, "NCHW"), [A, out], "cuda")
        got = np.zeros(want.shape, "float32")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(a, got)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
