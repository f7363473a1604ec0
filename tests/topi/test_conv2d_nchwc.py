"""The channel-blocked convolution: topi.nn.conv2d_NCHWc (the compute and its
errors), topi.x86.conv2d_NCHWc with schedule_conv2d_NCHWc (the task
"conv2d_NCHWc.x86", fused epilogues, tuned configs), the generic and CUDA paths,
and topi.x86.nchwc_block; checked against numpy (topi.testing.conv2d_nchw_python
on the NCHW arrays, laid out by topi.testing.layout_transform_python)."""
import importlib
import re

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, topi
from tecc.topi import testing as T
from tecc.topi.utils import TopiError, get_const_tuple
from tecc.topi.x86 import conv2d_nchwc as nchwc
from irhelpers import build_all_arches
from topi_run import build_run, rand

AVX2 = "llvm -mcpu=core-avx2"   # 8 float lanes, 16 vector registers


def _blocked(x, src, dst):
    return np.ascontiguousarray(T.layout_transform_python(x, src, dst))


def _case(dshape, k, r, ic_bn, oc_bn):
    """NCHW / OIHW arrays and the placeholders of their blocked layouts."""
    n, c, h, w = dshape
    a, wt = rand(dshape), rand((k, c) + tuple(r))
    A = te.placeholder((n, c // ic_bn, h, w, ic_bn), name="A")
    W = te.placeholder((k // oc_bn, c // ic_bn) + tuple(r) + (ic_bn, oc_bn), name="W")
    arrays = [_blocked(a, "NCHW", f"NCHW{ic_bn}c"), _blocked(wt, "OIHW", f"OIHW{ic_bn}i{oc_bn}o")]
    return a, wt, A, W, arrays


def _want(a, wt, stride, padding, dilation, oc_bn):
    ref = T.conv2d_nchw_python(a, wt, stride, padding, dilation=dilation)
    return T.layout_transform_python(ref, "NCHW", f"NCHW{oc_bn}c")


# (data NCHW, filters, kernel, stride, padding, dilation, ic_bn, oc_bn)
CASES = [
    ((1, 64, 56, 56), 64, (3, 3), 1, 1, 1, 8, 8),             # ResNet-50 56x56 3x3
    ((1, 64, 56, 56), 256, (1, 1), 1, 0, 1, 16, 16),          # ResNet-50 56x56 64->256 1x1
    ((1, 128, 28, 28), 128, (3, 3), 1, 1, 1, 16, 16),         # ResNet-50 28x28 3x3
    ((1, 32, 56, 56), 32, (3, 3), 2, 1, 1, 16, 8),            # the 56 -> 28 stride-2 3x3 (fewer channels)
    ((1, 256, 14, 14), 1024, (1, 1), 1, 0, 1, 8, 16),         # ResNet-50 14x14 256->1024 1x1
    ((1, 512, 7, 7), 512, (3, 3), 1, 1, 1, 16, 16),           # ResNet-50 7x7 3x3: the whole-plane schedule
    ((1, 512, 7, 7), 2048, (1, 1), 1, 0, 1, 16, 16),          # ResNet-50 7x7 512->2048 1x1
    ((1, 3, 224, 224), 64, (3, 3), 2, 0, 1, 3, 16),           # SqueezeNet 1.1 conv1: ic_bn = 3
    ((1, 64, 55, 55), 16, (1, 1), 1, 0, 1, 8, 16),            # SqueezeNet 55x55 squeeze
    ((1, 64, 13, 13), 256, (3, 3), 1, 1, 1, 16, 8),           # SqueezeNet 13x13 expand 3x3
    ((1, 16, 15, 13), 32, (3, 3), 1, 2, 2, 8, 8),             # dilation 2
    ((1, 16, 11, 9), 16, (3, 2), (2, 1), (1, 2, 0, 1), 1, 8, 16),  # asymmetric padding, mixed strides
    ((2, 24, 9, 10), 48, (3, 3), 1, 1, 1, 8, 16),             # batch 2, ic_bn != oc_bn
    ((1, 2048, 7, 7), 256, (1, 1), 1, 0, 1, 16, 16),          # deep 1x1 on 7x7: whole plane, chunks of 4 blocks
]


@pytest.mark.parametrize("dshape, k, r, stride, padding, dilation, ic_bn, oc_bn", CASES)
def test_x86_conv2d_nchwc_matches_numpy(dshape, k, r, stride, padding, dilation, ic_bn, oc_bn):
    a, wt, A, W, arrays = _case(dshape, k, r, ic_bn, oc_bn)
    with tecc.target.Target(AVX2):
        C = topi.x86.conv2d_NCHWc(A, W, stride, padding, dilation, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c", "float32")
        s = topi.x86.schedule_conv2d_NCHWc([C])
    (got,) = build_run(s, [A, W], [C], arrays, AVX2)
    np.testing.assert_allclose(got, _want(a, wt, stride, padding, dilation, oc_bn), rtol=1e-4, atol=1e-4)


def test_the_compute_is_tvms():
    A = te.placeholder((1, 4, 10, 12, 8), name="A")
    W = te.placeholder((2, 4, 3, 3, 8, 16), name="W")
    C = topi.nn.conv2d_NCHWc(A, W, (2, 1), (1, 0, 1, 2), 1, "NCHW8c", "NCHW16c")
    assert get_const_tuple(C.shape) == (1, 2, 5, 12, 16)
    assert C.op.tag == "conv2d_NCHWc" == topi.tag.CONV2D_NCHWC
    attrs = C.op.attrs
    assert list(get_const_tuple(list(attrs["strides"]))) == [2, 1] and attrs["groups"] == 1
    assert attrs["data_layout"] == "NCHW8c" and attrs["out_layout"] == "NCHW16c"
    assert attrs["kernel_layout"] == "OIHW8i16o"
    pad = [t for t in C.op.input_tensors if topi.tag.has(t.op.tag, topi.tag.PAD)]
    assert len(pad) == 1 and get_const_tuple(pad[0].shape) == (1, 4, 12, 14, 8)


def test_the_default_tiles_fit_the_registers_and_divide_the_rows():
    with tecc.target.Target(AVX2):
        assert nchwc.max_ow_bn(8) == 14 and nchwc.max_ow_bn(16) == 7
        assert [nchwc.default_ow_bn(w, 8) for w in (56, 55, 28, 27, 14, 13, 7, 112)] == [14, 11, 14, 9, 14, 13, 7, 14]
        # wide rows of 16-channel blocks: 6 pixels (the second kernel vector stays in a register)
        assert [nchwc.default_ow_bn(w, 16) for w in (56, 55, 28, 27, 14, 13, 7)] == [6, 5, 6, 6, 7, 7, 7]


def _conv(dshape, k, r, ic_bn, oc_bn, stride=1, padding=1, target=AVX2):
    a, wt, A, W, arrays = _case(dshape, k, r, ic_bn, oc_bn)
    with tecc.target.Target(target):
        C = topi.x86.conv2d_NCHWc(A, W, stride, padding, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c", "float32")
    return a, wt, A, W, arrays, C, _want(a, wt, stride, padding, 1, oc_bn)


@pytest.mark.parametrize("dshape, k, r, knobs", [
    ((1, 512, 7, 7), 512, (3, 3), (1, True)),        # a 288 KiB kernel slice per block: the whole plane
    ((1, 2048, 7, 7), 512, (1, 1), (4, True)),
    ((1, 1024, 14, 14), 256, (1, 1), (4, True)),
    ((1, 512, 28, 28), 128, (1, 1), (4, False)),      # 4 tiles a row, each streaming 32 KiB: whole rows
    ((1, 256, 56, 56), 64, (1, 1), (4, False)),
    ((1, 64, 56, 56), 64, (3, 3), (0, False)),        # a 36 KiB slice: register tiles
    ((1, 512, 7, 7), 2048, (1, 1), (0, False)),
    ((1, 256, 27, 27), 32, (1, 1), (0, False)),
])
def test_layers_whose_kernel_leaves_the_cache_accumulate_in_chunks(dshape, k, r, knobs):
    with tecc.target.Target(AVX2):
        C = topi.x86.conv2d_NCHWc(te.placeholder((1, dshape[1] // 16) + dshape[2:] + (16,), name="A"),
                                  te.placeholder((k // 16, dshape[1] // 16) + r + (16, 16), name="W"),
                                  1, (r[0] - 1) // 2, 1, "NCHW16c", "NCHW16c", "float32")
        assert nchwc.default_ic_chunk(C) == knobs


# ---------------------------------------------------------------------------------
# fused epilogues
# ---------------------------------------------------------------------------------
def _epilogues():
    def bias_relu(C, oc_bn, extra):
        b = te.placeholder((1, get_const_tuple(C.shape)[1], 1, 1, oc_bn), name="b")
        return topi.nn.relu(topi.add(C, b)), [b], lambda ref, arrs: np.maximum(ref + arrs[0], 0)

    def bias4_relu_residual(C, oc_bn, extra):
        b = te.placeholder((get_const_tuple(C.shape)[1], 1, 1, oc_bn), name="b")
        res = te.placeholder(get_const_tuple(C.shape), name="res")
        out = topi.add(topi.nn.relu(topi.add(C, b)), res)
        return out, [b, res], lambda ref, arrs: np.maximum(ref + arrs[0], 0) + arrs[1]

    def scale_shift(C, oc_bn, extra):
        g = te.placeholder((1, get_const_tuple(C.shape)[1], 1, 1, oc_bn), name="g")
        out = topi.nn.relu(topi.add(topi.multiply(C, g), 0.5))
        return out, [g], lambda ref, arrs: np.maximum(ref * arrs[0] + 0.5, 0)

    return {"bias_relu": bias_relu, "bias4_relu_residual": bias4_relu_residual, "scale_shift": scale_shift}


EPILOGUES = _epilogues()


@pytest.mark.parametrize("epilogue", sorted(EPILOGUES))
@pytest.mark.parametrize("dshape, k, oc_bn, knobs", [((1, 16, 14, 13), 32, 8, (0, False)),   # register tiles
                                                     ((1, 512, 4, 28), 32, 16, (4, False)),   # rows in chunks
                                                     ((1, 2048, 7, 7), 256, 16, (4, True))])  # the plane
def test_fused_epilogue_in_one_loop_nest(epilogue, dshape, k, oc_bn, knobs):
    r = (1, 1) if knobs[0] else (3, 3)
    a, wt, A, W, arrays, C, want = _conv(dshape, k, r, oc_bn, oc_bn, padding=0 if knobs[0] else 1, target=AVX2)
    out, extra, ref = EPILOGUES[epilogue](C, oc_bn, None)
    with tecc.target.Target(AVX2):
        assert nchwc.default_ic_chunk(C) == knobs
        s = topi.x86.schedule_conv2d_NCHWc([out])
        assert topi.schedule(out, AVX2) is not None  # found through the registry too
    extra_arrays = [rand(get_const_tuple(t.shape)) for t in extra]
    lowered = str(tecc.lower(s, [A, W] + extra + [out], simple_mode=True))
    assert not re.search(r"allocate Out: .*global", lowered)  # the convolution never goes to memory whole
    assert lowered.count("parallel for") == (1 if knobs[0] else 2)  # (Pad, then) one loop nest
    (got,) = build_run(s, [A, W] + extra, [out], arrays + extra_arrays, AVX2)
    np.testing.assert_allclose(got, ref(want, extra_arrays), rtol=1e-4, atol=1e-4)


def test_conv_that_is_an_output_and_feeds_an_epilogue():
    a, wt, A, W, arrays, C, want = _conv((1, 16, 9, 10), 16, (3, 3), 8, 8, target="llvm")
    b = te.placeholder((1, 2, 1, 1, 8), name="b")
    out = topi.nn.relu(topi.add(C, b))
    with tecc.target.Target("llvm"):
        s = topi.x86.schedule_conv2d_NCHWc([out, C])
    bias = rand((1, 2, 1, 1, 8))
    got_out, got_conv = build_run(s, [A, W, b], [out, C], arrays + [bias], "llvm")
    np.testing.assert_allclose(got_conv, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_out, np.maximum(want + bias, 0), rtol=1e-4, atol=1e-4)


def test_unpadded_input_is_read_in_place_and_padding_is_computed_once():
    *_, A, W, arrays, C, want = _conv((1, 16, 8, 8), 16, (1, 1), 8, 8, padding=0, target="llvm")
    with tecc.target.Target("llvm"):
        s = topi.x86.schedule_conv2d_NCHWc([C])
    assert "allocate Pad" not in str(tecc.lower(s, [A, W, C], simple_mode=True))
    *_, A, W, arrays, C, want = _conv((1, 16, 8, 8), 16, (3, 3), 8, 8, padding=1, target="llvm")
    with tecc.target.Target("llvm"):
        s = topi.x86.schedule_conv2d_NCHWc([C])
    lowered = str(tecc.lower(s, [A, W, C], simple_mode=True))
    assert "allocate Pad" in lowered and lowered.count("parallel for") == 2
    (got,) = build_run(s, [A, W], [C], arrays, "llvm")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------
# the tunable task
# ---------------------------------------------------------------------------------
TASK_ARGS = (("TENSOR", (1, 4, 9, 12, 8), "float32"), ("TENSOR", (2, 4, 3, 3, 8, 16), "float32"), (1, 1),
             (1, 1, 1, 1), (1, 1), "NCHW8c", "NCHW16c", "float32")


def _task_arrays():
    a, wt = rand((1, 32, 9, 12)), rand((32, 32, 3, 3))
    return [_blocked(a, "NCHW", "NCHW8c"), _blocked(wt, "OIHW", "OIHW8i16o")], _want(a, wt, 1, 1, 1, 16)


def test_the_task_space_and_tuned_configs_match_numpy():
    task = autotvm.task.create("conv2d_NCHWc.x86", args=TASK_ARGS, target="llvm")
    space = task.config_space
    assert list(space.space_map) == ["tile_ow", "unroll_kw", "ic_chunk", "acc_plane", "rows_outer", "prefetch"]
    assert task.flop == 2 * 32 * 32 * 9 * 9 * 12
    arrays, want = _task_arrays()
    picked = 0
    for i in range(len(space)):
        cfg = space.get(i)
        # narrow tiles (5 leaves a partial last tile of the 12-pixel row), rolled columns,
        # the whole-plane schedule: nothing the fallback does here
        if cfg["tile_ow"].size[-1] not in (3, 4, 5) or cfg["ic_chunk"].val not in (0, 2):
            continue
        if (cfg["unroll_kw"].val and cfg["ic_chunk"].val == 0) or (cfg["acc_plane"].val and not cfg["unroll_kw"].val):
            continue
        s, bufs = task.instantiate(cfg)
        func = tecc.build(s, bufs, target="llvm")
        out = np.full(want.shape, np.nan, "float32")
        func(*arrays, out)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4, err_msg=str(cfg))
        picked += 1
    assert picked >= 9


def test_the_tile_knob_offers_partial_tiles_so_the_fallback_is_a_point_of_the_space():
    """A 13-pixel row (SqueezeNet's 13x13 layers): the fallback's 8-pixel tile (8 + 5)
    is in the space, with every other width up to 16; factors alone were 1 and 13."""
    from tecc.tuner.task.space import FallbackConfigEntity

    args = (("TENSOR", (1, 16, 13, 13, 32), "float32"), ("TENSOR", (8, 16, 1, 1, 32, 32), "float32"), (1, 1),
            (0, 0, 0, 0), (1, 1), "NCHW32c", "NCHW32c", "float32")
    task = autotvm.task.create("conv2d_NCHWc.x86", args=args, target="llvm -mcpu=skylake-avx512")
    widths = [e.size[-1] for e in task.config_space.space_map["tile_ow"].entities]
    assert widths == list(range(1, 14))
    fallback = FallbackConfigEntity()
    task.instantiate(fallback)
    assert fallback["tile_ow"] in task.config_space.space_map["tile_ow"].entities
    assert fallback["tile_ow"].size[-1] == 8


def test_a_strided_pointwise_conv_runs_its_rows_outside_the_blocks():
    """The fallback of a 1x1 stride-2 convolution (ResNet's projections): rows
    outside the channel blocks, no chunks; an unstrided one keeps the blocks outside."""
    for stride, rows_outer in ((2, True), (1, False)):
        data = te.placeholder((1, 4, 14, 14, 16), name="data")
        kernel = te.placeholder((8, 4, 1, 1, 16, 16), name="kernel")
        with tecc.target.Target(AVX2):
            conv = topi.nn.conv2d_NCHWc(data, kernel, stride, 0, 1, "NCHW16c", "NCHW16c")
            cfg = autotvm.task.space.FallbackConfigEntity()
            nchwc.define_knobs(cfg, conv)
        assert (cfg["rows_outer"].val, cfg["ic_chunk"].val if stride == 2 else 0) == (rows_outer, 0)
        s = te.create_schedule(conv.op)
        nchwc.schedule_nchwc_from_existing(s, conv, conv, 7, rows_outer=rows_outer)
        x, w = rand((1, 4, 14, 14, 16)), rand((8, 4, 1, 1, 16, 16))
        (got,) = build_run(s, [data, kernel], [conv], [x, w], "llvm")
        want = T.layout_transform_python(
            T.conv2d_nchw_python(T.layout_transform_python(x, "NCHW16c", "NCHW"),
                                 T.layout_transform_python(w, "OIHW16i16o", "OIHW"), stride, 0), "NCHW", "NCHW16c")
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_strided_3x3_conv_that_is_not_chunked_runs_its_rows_outside_the_blocks():
    """ResNet-50's 56x56 128->128 3x3/2 (not chunked): rows outside the blocks; the
    unstrided one and a chunked strided one (14x14 512->512 3x3/2, whole planes)
    keep the blocks outside."""
    for c, size, stride, want in ((128, 56, 2, True), (128, 56, 1, False), (512, 14, 2, False)):
        data = te.placeholder((1, c // 16, size, size, 16), name="data")
        kernel = te.placeholder((c // 16, c // 16, 3, 3, 16, 16), name="kernel")
        with tecc.target.Target(AVX2):
            conv = topi.nn.conv2d_NCHWc(data, kernel, stride, 1, 1, "NCHW16c", "NCHW16c")
            cfg = autotvm.task.space.FallbackConfigEntity()
            nchwc.define_knobs(cfg, conv)
        assert cfg["rows_outer"].val is want, (c, size, stride)
        assert (cfg["ic_chunk"].val > 0) is (c == 512)


@pytest.mark.parametrize("plane", [False, True])
def test_a_dispatched_config_is_followed(plane):
    task = autotvm.task.create("conv2d_NCHWc.x86", args=TASK_ARGS, target="llvm")
    space = task.config_space
    point = next(cfg for cfg in (space.get(i) for i in range(len(space)))
                 if cfg["tile_ow"].size[-1] == 3 and cfg["ic_chunk"].val == 2 and cfg["acc_plane"].val == plane)
    arrays, want = _task_arrays()
    A = te.placeholder(TASK_ARGS[0][1], name="A")
    W = te.placeholder(TASK_ARGS[1][1], name="W")
    with tecc.target.Target("llvm"), autotvm.ApplyConfig(point):
        C = topi.x86.conv2d_NCHWc(A, W, *TASK_ARGS[2:])
        s = topi.x86.schedule_conv2d_NCHWc([C])
    lowered = str(tecc.lower(s, [A, W, C], simple_mode=True))
    # the whole plane (9 x 12 pixels by 16 channels) or a row in L1, chunks of 2 input blocks
    assert f"Out.local: float32[{1728 if plane else 192}]" in lowered and "rco.outer" in lowered
    (got,) = build_run(s, [A, W], [C], arrays, "llvm")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------
# the generic and CUDA paths
# ---------------------------------------------------------------------------------
def test_generic_schedule_on_llvm():
    *_, A, W, arrays, C, want = _conv((1, 16, 7, 9), 16, (3, 3), 8, 16, target="llvm")
    C = topi.nn.conv2d_NCHWc(A, W, 1, 1, 1, "NCHW8c", "NCHW16c")
    b = te.placeholder((1, 1, 1, 1, 16), name="b")
    out = topi.nn.relu(topi.add(C, b))
    bias = rand((1, 1, 1, 1, 16))
    for s in (topi.generic.default_schedule(out, False), topi.generic.schedule_conv2d_nchw([out])):
        (got,) = build_run(s, [A, W, b], [out], arrays + [bias], "llvm")
        np.testing.assert_allclose(got, np.maximum(want + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("conv_is_output", [False, True])
def test_cuda_schedule_with_an_epilogue(conv_is_output):
    *_, A, W, arrays, C, want = _conv((1, 8, 5, 6), 16, (3, 3), 4, 8, target="llvm")
    C = topi.nn.conv2d_NCHWc(A, W, 1, 1, 1, "NCHW4c", "NCHW8c")
    b = te.placeholder((1, 2, 1, 1, 8), name="b")
    out = topi.nn.relu(topi.add(C, b))
    outs = [out, C] if conv_is_output else [out]
    s = topi.schedule(outs, "cuda")
    bias = rand((1, 2, 1, 1, 8))
    got = build_run(s, [A, W, b], outs, arrays + [bias], "cuda")
    np.testing.assert_allclose(got[0], np.maximum(want + bias, 0), rtol=1e-4, atol=1e-4)
    build_all_arches(s, [A, W, b] + outs)  # NVRTC: sm_80 and sm_90
    if conv_is_output:
        np.testing.assert_allclose(got[1], want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------
# the block the graph compiler uses
# ---------------------------------------------------------------------------------
def test_nchwc_block():
    with tecc.target.Target(AVX2):
        assert [topi.x86.nchwc_block(c) for c in (3, 16, 32, 48, 64, 1000)] == [None, 16, 16, 16, 16, 8]
        assert topi.x86.nchwc_block(12) is None


@pytest.mark.parametrize("target, chunked", [(AVX2, False), ("llvm -mcpu=skylake-avx512", True)])
def test_strided_1x1_fallback_chunks_only_with_32_registers(target, chunked):
    """ResNet's 14x14 1024->2048 /2 projection: rows outside the blocks, unchunked, on
    AVX2 (chunking lost there); chunked as default_ic_chunk says with AVX-512's 32
    registers (134 -> 194 GFLOP/s on 2 Xeon cores)."""
    from tecc.tuner.task.space import FallbackConfigEntity

    nchwc = importlib.import_module("tecc.topi.x86.conv2d_nchwc")
    with tecc.target.Target(target):
        bn = topi.x86.nchwc_block(1024)
        A = te.placeholder((1, 1024 // bn, 14, 14, bn), name="A")
        W = te.placeholder((2048 // bn, 1024 // bn, 1, 1, bn, bn), name="W")
        conv = topi.nn.conv2d_NCHWc(A, W, (2, 2), (0, 0), (1, 1), f"NCHW{bn}c", f"NCHW{bn}c")
        cfg = FallbackConfigEntity()
        nchwc.define_knobs(cfg, conv)
    assert (int(cfg["ic_chunk"].val) > 0) == chunked
    assert bool(cfg["rows_outer"].val) == (not chunked)


@pytest.mark.parametrize("n, c, k, size, rows", [
    (1, 1024, 256, 14, True),     # input 0.78 of its 1 MiB kernel: rows outside (in-model 0.55 -> 0.52 ms)
    (1, 1024, 512, 14, False),    # 0.39 of a 2 MiB kernel
    (1, 256, 1024, 14, False),    # 0.2
    (1, 2048, 512, 7, False),     # 0.1
    (8, 512, 1024, 13, False),    # 8 images: the cores split them (SqueezeNet's last conv at batch 8)
    (1, 256, 64, 56, True),       # a small kernel (64 KiB) smaller than its input: the older rule
    (1, 64, 256, 13, False),      # a small kernel larger than its input (SqueezeNet's expand 1x1)
])
def test_wide_policy_puts_the_rows_outside_where_the_input_outweighs_the_kernel(n, c, k, size, rows):
    from tecc.tuner.task.space import FallbackConfigEntity

    nchwc = importlib.import_module("tecc.topi.x86.conv2d_nchwc")
    with tecc.target.Target("llvm -mcpu=skylake-avx512"):
        A = te.placeholder((n, c // 32, size, size, 32), name="A")
        W = te.placeholder((k // 32, c // 32, 1, 1, 32, 32), name="W")
        conv = topi.nn.conv2d_NCHWc(A, W, (1, 1), (0, 0), (1, 1), "NCHW32c", "NCHW32c")
        assert nchwc.wide_policy(conv)[1] is rows
        cfg = FallbackConfigEntity()
        nchwc.define_knobs(cfg, conv)
    if cfg["ic_chunk"].val == 0:
        assert bool(cfg["rows_outer"].val) is rows
    with tecc.target.Target(AVX2):  # 16 registers: no wide policy
        A16 = te.placeholder((1, c // 16, size, size, 16), name="A")
        W16 = te.placeholder((k // 16, c // 16, 1, 1, 16, 16), name="W")
        assert nchwc.wide_policy(topi.nn.conv2d_NCHWc(A16, W16, (1, 1), (0, 0), (1, 1), "NCHW16c",
                                                      "NCHW16c")) is None


# ---------------------------------------------------------------------------------
# user errors
# ---------------------------------------------------------------------------------
def _tensors(dshape=(1, 4, 8, 8, 8), kshape=(2, 4, 3, 3, 8, 16)):
    return te.placeholder(dshape, name="A"), te.placeholder(kshape, name="W")


@pytest.mark.parametrize("dshape, kshape, layout, out_layout, match", [
    ((1, 32, 8, 8), (2, 4, 3, 3, 8, 16), "NCHW8c", "NCHW16c",
     r"data 'A' has shape \(1, 32, 8, 8\); it must be 5-D \[N, C // 8, H, W, 8\] \(lay NCHW data out with "
     r"topi.layout_transform\(data, 'NCHW', 'NCHW8c'\)\)"),
    ((1, 4, 8, 8, 8), (32, 32, 3, 3), "NCHW8c", "NCHW16c",
     r"kernel 'W' has shape \(32, 32, 3, 3\); it must be 6-D \[O // 16, C // 8, KH, KW, 8, 16\] \(lay an OIHW "
     r"kernel out with topi.layout_transform\(kernel, 'OIHW', 'OIHW8i16o'\)\)"),
    ((1, 4, 8, 8, 8), (2, 8, 3, 3, 4, 16), "NCHW8c", "NCHW16c",
     r"kernel 'W' has 4 input channels per block \(axis 4\) but the data has 8; lay the kernel out as 'OIHW8i16o'"),
    ((1, 4, 8, 8, 8), (2, 4, 3, 3, 8, 16), "NCHW4c", "NCHW16c",
     r"data 'A' has 8 channels per block \(its last axis\) but layout 'NCHW4c' says 4; use layout 'NCHW8c'"),
    ((1, 4, 8, 8, 8), (2, 4, 3, 3, 8, 16), "NCHW8c", "NCHW8c",
     r"kernel 'W' has 16 output channels per block \(axis 5\) but out_layout 'NCHW8c' says 8; use out_layout "
     r"'NCHW16c'"),
    ((1, 4, 8, 8, 8), (2, 2, 3, 3, 8, 16), "NCHW8c", "NCHW16c",
     r"data 'A' has 4 input-channel blocks \(axis 1\) but kernel 'W' expects 2"),
    ((1, 4, 8, 8, 8), (2, 4, 3, 3, 8, 16), "NHWC", "NCHW16c", r"layout 'NHWC' is not a channel-blocked layout; it "
     r"must be 'NCHW\{b\}c'"),
    ((1, 4, 8, 8, 8), (2, 4, 3, 3, 8, 16), "NCHW8c", "OIHW16o", r"out_layout 'OIHW16o' is not a channel-blocked"),
])
def test_user_errors(dshape, kshape, layout, out_layout, match):
    A, W = _tensors(dshape, kshape)
    with pytest.raises(TopiError, match=match) as info:
        topi.nn.conv2d_NCHWc(A, W, 1, 1, 1, layout, out_layout)
    assert str(info.value).startswith("conv2d_NCHWc(data 'A'")


def test_a_kernel_larger_than_the_padded_input_is_refused():
    A, W = _tensors((1, 4, 2, 2, 8))
    with pytest.raises(TopiError, match=r"the kernel \(dilated: 5 along H\) is larger than the padded input"):
        topi.nn.conv2d_NCHWc(A, W, 1, 0, 2, "NCHW8c", "NCHW16c")


@pytest.mark.parametrize("ic_chunk", [0, 1, 2])
def test_the_fallback_prefetches_the_kernel_a_chunk_ahead(ic_chunk):
    """The prefetch knob (on in the fallback): each pass over an input block's
    channels prefetches the kernel row the next chunk reads -- ``ic_chunk`` blocks
    of 3x3x8 rows of 16 floats further on -- and the result is unchanged."""
    a, wt, data, kernel, arrays = _case((1, 32, 9, 9), 32, (3, 3), 8, 16)
    with tecc.target.Target(AVX2):
        conv = topi.nn.conv2d_NCHWc(data, kernel, 1, 1, 1, "NCHW8c", "NCHW16c")
        cfg = autotvm.task.space.FallbackConfigEntity()
        nchwc.define_knobs(cfg, conv)
    assert cfg["prefetch"].val is True
    s = te.create_schedule(conv.op)
    nchwc.schedule_nchwc_from_existing(s, conv, conv, 3, ic_chunk=ic_chunk, prefetch=True)
    m = tecc.build(s, [data, kernel, conv], "llvm")
    ahead = max(1, ic_chunk) * 3 * 3 * 8 * 16
    assert re.search(rf"__builtin_prefetch\(W \+ \([^;]*\+ {ahead}\), 0, 3\);", m.get_source())
    (got,) = build_run(s, [data, kernel], [conv], arrays, "llvm")
    np.testing.assert_allclose(got, _want(a, wt, 1, 1, 1, 16), rtol=1e-4, atol=1e-4)


def test_rows_outside_blocks_with_whole_reductions_match_numpy():
    # the schedule the AVX-512 wide policy picks (run here under the plain target)
    a, wt, data, kernel, arrays = _case((1, 32, 6, 10), 16, (1, 1), 8, 8)
    with tecc.target.Target("llvm"):
        conv = topi.nn.conv2d_NCHWc(data, kernel, 1, 0, 1, "NCHW8c", "NCHW8c")
    s = te.create_schedule(conv.op)
    nchwc.schedule_nchwc_from_existing(s, conv, conv, 4, ic_chunk=0, rows_outer=True, prefetch=True)
    (got,) = build_run(s, [data, kernel], [conv], arrays, "llvm")
    np.testing.assert_allclose(got, _want(a, wt, 1, 0, 1, 8), rtol=1e-4, atol=1e-4)
