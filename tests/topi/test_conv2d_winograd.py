"""Winograd's F(2x2, 3x3) in channel blocks: topi.nn.conv2d_NCHWc_winograd (the
compute and its errors), topi.nn.winograd_weight_nchwc, topi.x86's schedule with
fused epilogues and its task "conv2d_NCHWc_winograd.x86", use_winograd; checked
against numpy's direct convolution (topi.testing.conv2d_nchw_python)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tecc
from tecc import autotvm, te, topi
from tecc.topi import testing as T
from tecc.topi.utils import TopiError
from tecc.topi.x86 import conv2d_winograd as wino
from topi_run import build_run, rand

AVX2 = "llvm -mcpu=core-avx2"


def _blocked(x, src, dst):
    return np.ascontiguousarray(T.layout_transform_python(x, src, dst))


def _case(n, c, h, w, k, ic_bn, oc_bn, padding, target=AVX2, epilogue=None):
    """``(arrays, want, s, inputs, outs)``: a Winograd convolution of random data,
    scheduled for ``target``, and the direct convolution's result in NCHW{oc_bn}c."""
    a, wt = rand((n, c, h, w)), rand((k, c, 3, 3))
    A = te.placeholder((n, c // ic_bn, h, w, ic_bn), name="A")
    U = te.placeholder((4, 4, k // oc_bn, c // ic_bn, ic_bn, oc_bn), name="U")
    arrays = [_blocked(a, "NCHW", f"NCHW{ic_bn}c"), topi.nn.winograd_weight_nchwc(wt, ic_bn, oc_bn)]
    want = T.layout_transform_python(T.conv2d_nchw_python(a, wt, 1, padding), "NCHW", f"NCHW{oc_bn}c")
    with tecc.target.Target(target):
        C = topi.x86.conv2d_NCHWc_winograd(A, U, padding, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c")
        inputs, out = [A, U], C
        if epilogue == "bias_relu":
            b = te.placeholder((1, k // oc_bn, 1, 1, oc_bn), name="b")
            bias = rand((1, k // oc_bn, 1, 1, oc_bn))
            inputs, out, arrays = [A, U, b], topi.nn.relu(topi.add(C, b)), arrays + [bias]
            want = np.maximum(want + bias, 0)
        elif epilogue == "residual":
            r = te.placeholder(tuple(int(d) for d in C.shape), name="r")
            res = rand(tuple(int(d) for d in C.shape))
            inputs, out, arrays = [A, U, r], topi.nn.relu(topi.add(C, r)), arrays + [res]
            want = np.maximum(want + res, 0)
        s = topi.x86.schedule_conv2d_NCHWc_winograd([out])
    return arrays, want, s, inputs, out


def _check(got, want):
    # float32 sums in another order than the direct convolution's: a few ulps of the largest value
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("n, c, h, w, k, ic_bn, oc_bn, padding", [
    (1, 256, 14, 14, 256, 16, 16, 1),       # ResNet-50 14x14
    (1, 128, 7, 7, 64, 16, 8, 1),           # odd output: the last tile half used
    (2, 16, 9, 6, 24, 8, 8, (0, 1, 2, 0)),  # batch 2, uneven padding, ic_bn == oc_bn
    (1, 8, 3, 3, 8, 8, 8, 0),               # a single output pixel
])
def test_x86_winograd_matches_numpy(n, c, h, w, k, ic_bn, oc_bn, padding):
    arrays, want, s, inputs, out = _case(n, c, h, w, k, ic_bn, oc_bn, padding)
    (got,) = build_run(s, inputs, [out], arrays, AVX2)
    _check(got, want)


@pytest.mark.parametrize("epilogue", ["bias_relu", "residual"])
def test_fused_epilogue_reads_the_output_transform_in_registers(epilogue):
    arrays, want, s, inputs, out = _case(1, 32, 10, 11, 32, 16, 16, 1, epilogue=epilogue)
    lowered = str(tecc.lower(s, inputs + [out], simple_mode=True))
    # the stages: V, M, then the output transform and the epilogue in one loop nest (no Out buffer)
    assert lowered.count("parallel for") == 3 and "allocate Out" not in lowered, lowered
    (got,) = build_run(s, inputs, [out], arrays, AVX2)
    _check(got, want)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 2), cb=st.integers(1, 3), kb=st.integers(1, 3), h=st.integers(3, 12),
       w=st.integers(3, 12), pad=st.tuples(*[st.integers(0, 2)] * 4), tile_p=st.integers(2, 7))
def test_random_shapes_and_tiles_match_numpy(n, cb, kb, h, w, pad, tile_p):
    """Any shape, padding and tile of the product (the knob) against the direct
    convolution."""
    if h + pad[0] + pad[2] < 3 or w + pad[1] + pad[3] < 3:
        return
    a, wt = rand((n, cb * 8, h, w)), rand((kb * 8, cb * 8, 3, 3))
    A = te.placeholder((n, cb, h, w, 8), name="A")
    U = te.placeholder((4, 4, kb, cb, 8, 8), name="U")
    C = topi.nn.conv2d_NCHWc_winograd(A, U, pad, "NCHW8c", "NCHW8c")
    s = te.create_schedule(C.op)
    wino.schedule_winograd_from_existing(s, C, C, tile_p)
    arrays = [_blocked(a, "NCHW", "NCHW8c"), topi.nn.winograd_weight_nchwc(wt, 8, 8)]
    (got,) = build_run(s, [A, U], [C], arrays, "llvm")
    want = T.layout_transform_python(T.conv2d_nchw_python(a, wt, 1, pad), "NCHW", "NCHW8c")
    _check(got, want)


def test_the_weight_transform_is_g_g_gt():
    w = rand((16, 8, 3, 3))
    u = topi.nn.winograd_weight_nchwc(w, 8, 8)
    assert u.shape == (4, 4, 2, 1, 8, 8) and u.dtype == np.float32
    g = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]])
    # output channel 11 (block 1, lane 3), input channel 5 (block 0, lane 5)
    np.testing.assert_allclose(u[:, :, 1, 0, 5, 3], g @ w[11, 5].astype("float64") @ g.T, rtol=1e-6)


def test_the_task_space_and_its_configs_match_numpy():
    args = (("TENSOR", (1, 2, 6, 7, 8), "float32"), ("TENSOR", (4, 4, 3, 2, 8, 8), "float32"), (1, 1, 1, 1),
            "NCHW8c", "NCHW8c", "float32")
    task = autotvm.task.create("conv2d_NCHWc_winograd.x86", args=args, target=AVX2)
    assert list(task.config_space.space_map) == ["tile_p"]
    assert task.flop == 2 * 24 * 16 * 9 * 6 * 7  # the direct convolution's
    a, wt = rand((1, 16, 6, 7)), rand((24, 16, 3, 3))
    arrays = [_blocked(a, "NCHW", "NCHW8c"), topi.nn.winograd_weight_nchwc(wt, 8, 8)]
    want = T.layout_transform_python(T.conv2d_nchw_python(a, wt, 1, 1), "NCHW", "NCHW8c")
    for i in range(len(task.config_space)):
        s, bufs = task.instantiate(task.config_space.get(i))
        out = np.full(want.shape, np.nan, "float32")
        tecc.build(s, bufs, target=AVX2)(*arrays, out)
        _check(out, want)


def test_the_fallback_tile_leaves_registers_for_the_kernel_vectors():
    with tecc.target.Target(AVX2):
        assert wino.default_tile_p(16) == 6   # 12 accumulators + 2 kernel vectors + 1 broadcast
        assert wino.default_tile_p(8) == 12   # capped
    with tecc.target.Target("llvm -mcpu=skylake-avx512"):
        assert wino.default_tile_p(16) == 12


def test_use_winograd():
    assert wino.use_winograd(256, 256, (3, 3), (1, 1), (1, 1), 1)
    assert not wino.use_winograd(64, 64, (3, 3), (1, 1), (1, 1), 1)      # measured slower
    assert not wino.use_winograd(256, 256, (3, 3), (2, 2), (1, 1), 1)    # strided
    assert not wino.use_winograd(256, 256, (1, 1), (1, 1), (1, 1), 1)
    assert not wino.use_winograd(256, 256, (3, 3), (1, 1), (2, 2), 1)    # dilated
    assert not wino.use_winograd(256, 256, (3, 3), (1, 1), (1, 1), 2)    # grouped
    assert not wino.use_winograd(256, 256, (3, 3), (1, 1), (1, 1), 1, "float16")


@pytest.mark.parametrize("size, avx512", [((7, 7), False), ((14, 14), True), ((13, 13), True), ((27, 27), True),
                                          ((7, 8), True), ((6, 7), True)])
def test_use_winograd_skips_wasteful_tiles_on_avx512(size, avx512):
    """An odd-sized output computes partial 2x2 tiles in full: 7x7 covers 8x8 (1.31),
    beyond MAX_WINOGRAD_WASTE on AVX-512, where ResNet-50's 7x7 512->512 layer ran
    faster direct; AVX2 keeps Winograd there (it won at 7x7)."""
    assert wino.winograd_waste(7, 7) == pytest.approx(64 / 49)
    with tecc.target.Target("llvm -mcpu=skylake-avx512"):
        assert wino.use_winograd(512, 512, (3, 3), (1, 1), (1, 1), 1, out_size=size) is avx512
        assert wino.use_winograd(512, 512, (3, 3), (1, 1), (1, 1), 1)  # no size given: channels decide
    with tecc.target.Target(AVX2):
        assert wino.use_winograd(512, 512, (3, 3), (1, 1), (1, 1), 1, out_size=size)


@pytest.mark.parametrize("dshape, ushape, layout, match", [
    ((1, 2, 6, 6, 8), (4, 4, 2, 2, 8, 8), "NCHW", "not a channel-blocked layout"),
    ((1, 2, 6, 6), (4, 4, 2, 2, 8, 8), "NCHW8c", "must be 5-D"),
    ((1, 2, 6, 6, 8), (2, 2, 3, 3, 8), "NCHW8c", "the transformed kernel"),
    ((1, 2, 6, 6, 8), (3, 3, 2, 2, 8, 8), "NCHW8c", r"must be \[4, 4"),
    ((1, 2, 6, 6, 8), (4, 4, 2, 3, 8, 8), "NCHW8c", "2 input-channel blocks but the kernel"),
])
def test_user_errors(dshape, ushape, layout, match):
    A, U = te.placeholder(dshape, name="A"), te.placeholder(ushape, name="U")
    with pytest.raises(TopiError, match=match):
        topi.nn.conv2d_NCHWc_winograd(A, U, 1, layout, "NCHW8c")


def test_symbolic_shapes_and_a_kernel_larger_than_the_input_are_refused():
    n = te.var("n")
    A, U = te.placeholder((n, 1, 6, 6, 8), name="A"), te.placeholder((4, 4, 1, 1, 8, 8), name="U")
    with pytest.raises(TopiError, match="constant shapes"):
        topi.nn.conv2d_NCHWc_winograd(A, U, 1, "NCHW8c", "NCHW8c")
    A = te.placeholder((1, 1, 2, 2, 8), name="A")
    with pytest.raises(TopiError, match="larger than the padded input"):
        topi.nn.conv2d_NCHWc_winograd(A, U, 0, "NCHW8c", "NCHW8c")
    with pytest.raises(TopiError, match="3x3 kernel"):
        topi.nn.winograd_weight_nchwc(rand((8, 8, 1, 1)), 8, 8)
    with pytest.raises(TopiError, match="whole blocks"):
        topi.nn.winograd_weight_nchwc(rand((12, 8, 3, 3)), 8, 8)
