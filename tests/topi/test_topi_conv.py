"""The convolution family of tecc.topi (conv2d NCHW/NHWC, grouped, depthwise, 1-D,
transposed): TE computes against the numpy references of topi.testing, with the
schedules topi.testing picks per target ("llvm", and "cuda" on the GPU emulator,
checked race-free), fused element-wise epilogues in the same loop nest / kernel,
float16 and int8, the tunable CUDA task, and one expected failure per attribute
error."""
import logging
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tecc
from tecc import autotvm, te, topi
from tecc.errors import ScheduleError
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand

T = topi.testing
logging.getLogger("tecc.autotvm").setLevel(logging.ERROR)  # "no tuned config ... fallback"


def tol(dtype):
    return dict(rtol=2e-2, atol=5e-2) if dtype == "float16" else dict(rtol=1e-4, atol=1e-4)


def run_impl(target, implement, compute_args, inputs, arrays, epilogue=None):
    """Declare with ``implement``'s compute (``compute(*inputs, *compute_args)``),
    optionally followed by ``epilogue(conv)``, schedule with its schedule, build and
    run on ``arrays`` (random values for the epilogue's own placeholders); the
    output's array and ``{name: array}`` of those placeholders."""
    compute, schedule = implement
    with tecc.target.Target(target):
        conv = compute(*inputs, *compute_args)
        out = epilogue(conv) if epilogue is not None else conv
        s = schedule([out])
    extra = [t for t in _placeholders(out) if all(t is not i for i in inputs)]
    values = [rand(tuple(int(d) for d in t.shape)) for t in extra]
    (got,) = build_run(s, list(inputs) + extra, [out], list(arrays) + values, target)
    return got, dict(zip([t.name for t in extra], values))


def with_targets(cases, on_cuda):
    """``(target, *case)`` for every case on llvm and the cases numbered ``on_cuda``
    on cuda too (the GPU emulator's race checking is the slow part of the suite)."""
    out = []
    for k, case in enumerate(cases):
        for target in TARGETS:
            if target == "llvm" or k in on_cuda:
                out.append(pytest.param(target, *case, id=f"{target}-{k}"))
    return out


def _placeholders(out):
    seen, todo, found = set(), [out.op], []
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        for t in op.input_tensors:
            if isinstance(t.op, te.PlaceholderOp):
                if all(t is not f for f in found):
                    found.append(t)
            else:
                todo.append(t.op)
    return found


# -------------------------------------------------------------------------------- conv2d_nchw

CONV2D_CASES = [
    # (N, CI, H, W), (CO, KH, KW), stride, padding, dilation
    ((1, 3, 7, 7), (5, 3, 3), 1, 1, 1),                     # prime sizes
    ((2, 3, 12, 11), (8, 3, 3), 2, (1, 0, 2, 1), 1),        # batch 2, stride 2, asymmetric padding
    ((1, 3, 11, 9), (4, 3, 3), 1, "SAME", 2),               # dilation 2
    ((1, 5, 9, 10), (6, 3, 2), (2, 1), "VALID", (1, 2)),    # rectangular kernel, per-axis stride/dilation
]


@pytest.mark.parametrize("target, dshape, kshape, stride, padding, dilation", with_targets(CONV2D_CASES, (1, 2)))
def test_conv2d_nchw(target, dshape, kshape, stride, padding, dilation):
    CO, KH, KW = kshape
    wshape = (CO, dshape[1], KH, KW)
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    a, w = rand(dshape), rand(wshape)
    got, _ = run_impl(target, T.get_conv2d_nchw_implement(target), (stride, padding, dilation, "float32"), [A, W],
                      [a, w])
    want = T.conv2d_nchw_python(a, w, stride, padding, dilation=dilation)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _bias_relu(conv):
    bias = te.placeholder((conv.shape[1], 1, 1), name="bias")
    return topi.nn.relu(conv + bias)


def _bn_residual_relu(conv):
    scale = te.placeholder((conv.shape[1], 1, 1), name="scale")
    shift = te.placeholder((conv.shape[1], 1, 1), name="shift")
    residual = te.placeholder(tuple(int(d) for d in conv.shape), name="residual")
    return topi.nn.relu(conv * scale + shift + residual)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("chain", ["bias_relu", "bn_residual_relu"])
def test_conv2d_nchw_fused_epilogue_in_one_loop_nest(target, chain):
    dshape, wshape = (1, 3, 7, 8), (4, 3, 3, 3)
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    compute, schedule = T.get_conv2d_nchw_implement(target)
    with tecc.target.Target(target):
        conv = compute(A, W, 1, 1, 1, "float32")
        out = (_bias_relu if chain == "bias_relu" else _bn_residual_relu)(conv)
        s = schedule([out])
    extra = [t for t in _placeholders(out) if t is not A and t is not W]
    args = [A, W] + extra + [out]
    a, w = rand(dshape), rand(wshape)
    values = [rand(tuple(int(d) for d in t.shape)) for t in extra]
    mod = tecc.build(s, args, target)
    got = np.zeros([int(d) for d in out.shape], "float32")
    if target == "cuda":
        src = mod.imported_modules[0].get_source()
        assert src.count("__global__") == 1 and "__shared__" in src  # one kernel: conv, bias, relu
        assert mod.check(a, w, *values, got) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod(a, w, *values, got)
    ref = T.conv2d_nchw_python(a, w, 1, 1)
    named = dict(zip([t.name for t in extra], values))
    if chain == "bias_relu":
        want = np.maximum(ref + named["bias"], 0)
    else:
        want = np.maximum(ref * named["scale"] + named["shift"] + named["residual"], 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # the convolution is no stage of its own: it accumulates in a local buffer inside
    # the epilogue's loops, and the epilogue writes the only output
    lowered = str(tecc.lower(s, args))
    (conv_alloc,) = [line for line in lowered.splitlines() if "allocate Out" in line]
    assert conv_alloc.rstrip(" {").endswith("local")
    if target == "llvm":
        assert lowered.count("parallel for") == 2  # the padded input, then the tiles of the epilogue


POINTWISE_CASES = [
    # (N, CI, H, W), CO, epilogue
    ((1, 16, 14, 14), 32, None),          # rows of 14: two-row tiles (28 pixels)
    ((2, 5, 7, 9), 7, "bias_relu"),       # batch 2, prime channels, odd rows
    ((1, 8, 6, 4), 12, "bn_residual_relu"),
]


@pytest.mark.parametrize("dshape, co, chain", POINTWISE_CASES)
def test_x86_pointwise_conv2d_packs_an_aligned_panel(dshape, co, chain):
    """A 1x1, stride-1, unpadded NCHW convolution is a GEMM over the pixels: the x86
    schedule copies each task's rows of every input channel into one panel whose
    channel stride is a whole number of vectors, and splits the output channels into
    blocks so that the parallel loop has enough tasks."""
    A, W = te.placeholder(dshape, name="A"), te.placeholder((co, dshape[1], 1, 1), name="W")
    epilogue = {None: None, "bias_relu": _bias_relu, "bn_residual_relu": _bn_residual_relu}[chain]
    target = "llvm -mcpu=core-avx2"
    a, w = rand(dshape), rand((co, dshape[1], 1, 1))
    got, named = run_impl(target, (topi.x86.conv2d_nchw, topi.x86.schedule_conv2d_nchw), (1, 0, 1, "float32"),
                          [A, W], [a, w], epilogue)
    ref = T.conv2d_nchw_python(a, w, 1, 0)
    if chain == "bias_relu":
        ref = np.maximum(ref + named["bias"], 0)
    elif chain == "bn_residual_relu":
        ref = np.maximum(ref * named["scale"] + named["shift"] + named["residual"], 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    with tecc.target.Target(target):
        conv = topi.x86.conv2d_nchw(A, W, 1, 0, 1, "float32")
        s = topi.x86.schedule_conv2d_nchw([conv])
    lowered = str(tecc.lower(s, [A, W, conv], simple_mode=True))
    (panel,) = [line for line in lowered.splitlines() if "allocate" in line and ".global" in line]
    per_channel = int(panel.split("[")[1].split("]")[0]) // dshape[1]
    assert per_channel % 8 == 0  # 8 float lanes of AVX2: every channel's row starts a vector
    if dshape == (1, 16, 14, 14):
        # 7 two-row tiles by 4 channel blocks of 8: 28 tasks, at least MIN_TASKS
        assert "parallel for (i0.i1.outer.fused.i2.outer.fused, 0, 28)" in lowered


def test_x86_conv_tiles_one_vector_of_a_row_by_eight_channels():
    """Channels-first convolutions tile a row by one vector (8 floats on AVX2) and
    8 output channels: with two vectors of a row and 4 channels, the 3x3 ResNet-50
    layers ran at 60% of the speed."""
    from tecc.topi.x86 import conv2d as x86_conv
    with tecc.target.Target("llvm -mcpu=core-avx2"):
        assert x86_conv._tiles("float32", 56, 64, True) == (8, 8, True)
        assert x86_conv._tiles("float32", 28, 128, True) == (8, 8, True)  # last tile: 4 lanes
        assert x86_conv._tiles("float32", 14, 256, True) == (8, 4, True)  # 8 + 6 would leave 6
        assert x86_conv._tiles("float32", 64, 64, False) == (16, 4, True)  # NHWC: channels are lanes


def test_cuda_conv2d_conv_and_epilogue_both_outputs():
    A, W = te.placeholder((1, 3, 7, 7), name="A"), te.placeholder((4, 3, 3, 3), name="W")
    conv = topi.cuda.conv2d_nchw(A, W, 1, 1, 1)
    out = topi.nn.relu(conv)
    s = topi.cuda.schedule_conv2d_nchw([out, conv])
    a, w = rand((1, 3, 7, 7)), rand((4, 3, 3, 3))
    got_out, got_conv = build_run(s, [A, W], [out, conv], [a, w], "cuda")
    want = T.conv2d_nchw_python(a, w, 1, 1)
    np.testing.assert_allclose(got_conv, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_out, np.maximum(want, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch, want_fi", [(1, 1), (8, 4)])
def test_cuda_conv2d_fallback_fills_the_gpu_before_it_tiles_channels(batch, want_fi):
    """ResNet-50's 7x7 512-channel layer: at batch 1 four channels a thread gave 32
    blocks for an H100's 132 SMs, so the fallback takes one (128 blocks); at batch 8
    the grid is full with four.  The result is the convolution's either way."""
    A, W = te.placeholder((batch, 64, 7, 7), name="A"), te.placeholder((512, 64, 1, 1), name="W")
    with tecc.target.Target("cuda"):
        conv = topi.cuda.conv2d_nchw(A, W, 1, 0, 1)
        out = topi.nn.relu(conv)
        s = topi.cuda.schedule_conv2d_nchw([out])
    f = tecc.build(s, [A, W, out], "cuda")
    ((_, _, grid, block),) = f.launch_dims()
    # 49 pixels by 4 channel threads a block, each thread want_fi channels
    assert int(np.prod(block)) == 196 and int(np.prod(grid)) == batch * 512 // (4 * want_fi)
    a, w = rand((batch, 64, 7, 7)), rand((512, 64, 1, 1))
    (got,) = build_run(s, [A, W], [out], [a, w], "cuda")
    np.testing.assert_allclose(got, np.maximum(T.conv2d_nchw_python(a, w, 1, 0), 0), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------- the other convolutions

@pytest.mark.parametrize("target, dshape, kshape, stride, padding, dilation", with_targets([
    ((2, 9, 8, 4), (3, 2, 8), 2, (0, 1, 2, 1), (2, 1)),
    ((1, 7, 7, 3), (3, 3, 5), 1, 1, 1),
], on_cuda=(0,)))
def test_conv2d_nhwc(target, dshape, kshape, stride, padding, dilation):
    KH, KW, CO = kshape
    wshape = (KH, KW, dshape[3], CO)
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    a, w = rand(dshape), rand(wshape)
    got, _ = run_impl(target, T.get_conv2d_nhwc_implement(target), (stride, padding, dilation, "float32"), [A, W],
                      [a, w], epilogue=topi.nn.relu)
    want = np.maximum(T.conv2d_nhwc_python(a, w, stride, padding, dilation=dilation), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target, dshape, wshape, groups, stride, padding, dilation", with_targets([
    ((1, 4, 9, 9), (6, 2, 3, 3), 2, 1, 1, 1),
    ((2, 6, 8, 11), (9, 2, 3, 3), 3, 2, (1, 2, 0, 1), 2),
], on_cuda=(0,)))
def test_group_conv2d_nchw(target, dshape, wshape, groups, stride, padding, dilation):
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    a, w = rand(dshape), rand(wshape)
    got, _ = run_impl(target, T.get_group_conv2d_nchw_implement(target),
                      (stride, padding, dilation, groups, "float32"), [A, W], [a, w])
    want = T.conv2d_nchw_python(a, w, stride, padding, groups, dilation=dilation)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target, dshape, wshape, stride, padding, dilation", with_targets([
    ((2, 3, 10, 7), (3, 2, 3, 3), 2, (1, 0, 2, 1), 2),     # channel multiplier 2, dilation 2
    ((1, 5, 9, 11), (5, 1, 3, 3), 1, "SAME", 1),
    ((1, 4, 11, 9), (4, 2, 3, 3), 2, (0, 1, 1, 2), (2, 1)),
], on_cuda=(0,)))
def test_depthwise_conv2d_nchw(target, dshape, wshape, stride, padding, dilation):
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    a, w = rand(dshape), rand(wshape)
    got, extra = run_impl(target, T.get_depthwise_conv2d_nchw_implement(target),
                          (stride, padding, dilation, "float32"), [A, W], [a, w], epilogue=_bias_relu)
    assert got.shape[1] == wshape[0] * wshape[1]
    want = np.maximum(T.depthwise_conv2d_python_nchw(a, w, stride, padding, dilation) + extra["bias"], 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target, layout", [("llvm", "NCW"), ("llvm", "NWC"), ("cuda", "NCW")])
def test_conv1d(target, layout):
    a, w = rand((2, 3, 13)), rand((5, 3, 3))
    want = T.conv1d_ncw_python(a, w, 2, (2, 1), 2)
    if layout == "NCW":
        implement = T.get_conv1d_ncw_implement(target)
        arrays = [a, w]
    else:
        implement = (topi.nn.conv1d_nwc, {"llvm": topi.x86, "cuda": topi.cuda}[target].schedule_conv1d_nwc)
        arrays = [np.ascontiguousarray(a.transpose(0, 2, 1)), np.ascontiguousarray(w.transpose(2, 1, 0))]
        want = want.transpose(0, 2, 1)
    A, W = te.placeholder(arrays[0].shape, name="A"), te.placeholder(arrays[1].shape, name="W")
    got, _ = run_impl(target, implement, (2, (2, 1), 2, "float32"), [A, W], arrays)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target, dshape, wshape, stride, padding, output_padding", with_targets([
    ((2, 4, 4, 7), (4, 3, 2, 3), (1, 2), (0, 1, 1, 0), (0, 1)),
    ((1, 3, 5, 6), (3, 4, 3, 3), 2, 1, (1, 1)),
], on_cuda=(0,)))
def test_conv2d_transpose_nchw(target, dshape, wshape, stride, padding, output_padding):
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    a, w = rand(dshape), rand(wshape)
    got, _ = run_impl(target, T.get_conv2d_transpose_nchw_implement(target),
                      (stride, padding, "float32", output_padding), [A, W], [a, w])
    want = T.conv2d_transpose_nchw_python(a, w, stride, padding, output_padding)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_layouts_and_generic_schedules():
    a, w = rand((1, 3, 8, 7)), rand((4, 3, 3, 3))
    want = T.conv2d_nchw_python(a, w, 1, 1)
    A, W = te.placeholder((1, 3, 8, 7), name="A"), te.placeholder((4, 3, 3, 3), name="W")
    B = topi.nn.conv2d(A, W, 1, 1, 1)
    assert B.op.tag == "conv2d_nchw"
    (b,) = build_run(topi.generic.schedule_conv2d_nchw(B), [A, W], [B], [a, w], "llvm")
    np.testing.assert_allclose(b, want, rtol=1e-4, atol=1e-4)
    # NHWC data with an OHWI kernel (kernel_layout given), scheduled by the registry
    AH = te.placeholder((1, 8, 7, 3), name="AH")
    WO = te.placeholder((4, 3, 3, 3), name="WO")
    BH = topi.nn.conv2d(AH, WO, 1, 1, 1, data_layout="NHWC", kernel_layout="OHWI")
    assert BH.op.tag == "conv2d_nhwc"
    s = topi.schedule_registry.schedule(BH, "llvm")
    arrays = [np.ascontiguousarray(a.transpose(0, 2, 3, 1)), np.ascontiguousarray(w.transpose(0, 2, 3, 1))]
    (bh,) = build_run(s, [AH, WO], [BH], arrays, "llvm")
    np.testing.assert_allclose(bh, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    # the generic schedules of the other convolutions: correct, every stage at the root
    D = topi.nn.depthwise_conv2d_nchw(A, te.placeholder((3, 1, 3, 3), name="WD"), 1, 1, 1)
    assert D.op.tag == "depthwise_conv2d_nchw"
    for sched in (topi.generic.schedule_depthwise_conv2d_nchw, topi.generic.schedule_group_conv2d_nchw,
                  topi.generic.schedule_conv1d_ncw, topi.generic.schedule_conv2d_transpose_nchw,
                  topi.generic.schedule_conv1d_nwc):
        assert isinstance(sched(D), te.Schedule)


def test_schedule_registry_picks_the_convolution_schedules():
    from tecc.topi.schedule_registry import lookup

    for op_tag, name in [("conv2d_nchw", "schedule_conv2d_nchw"), ("conv2d_nhwc", "schedule_conv2d_nhwc"),
                         ("group_conv2d_nchw", "schedule_group_conv2d_nchw"),
                         ("depthwise_conv2d_nchw", "schedule_depthwise_conv2d_nchw"),
                         ("conv1d_ncw", "schedule_conv1d_ncw"), ("conv1d_nwc", "schedule_conv1d_nwc"),
                         ("conv2d_transpose_nchw", "schedule_conv2d_transpose_nchw")]:
        assert lookup(op_tag, "cuda") is getattr(topi.cuda, name)
        assert lookup(op_tag, "llvm") is getattr(topi.x86, name)


# --------------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("dtype, out_dtype", [("float16", "float16"), ("float16", "float32")])
def test_conv2d_float16_on_cpu(dtype, out_dtype):
    A = te.placeholder((1, 4, 9, 9), name="A", dtype=dtype)
    W = te.placeholder((8, 4, 3, 3), name="W", dtype=dtype)
    a, w = rand((1, 4, 9, 9), dtype), rand((8, 4, 3, 3), dtype)
    with tecc.target.Target("llvm"):
        C = topi.x86.conv2d_nchw(A, W, 1, 1, 1, out_dtype)
        s = topi.x86.schedule_conv2d_nchw(topi.nn.relu(C))
    assert C.dtype == out_dtype
    (got,) = build_run(s, [A, W], [s.outputs[0].output(0)], [a, w], "llvm")
    want = np.maximum(T.conv2d_nchw_python(a, w, 1, 1, out_dtype=out_dtype), 0)
    assert got.dtype == np.dtype(out_dtype)
    np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), **tol(out_dtype))


@pytest.mark.parametrize("target", TARGETS)
def test_conv2d_int8_accumulates_in_int32(target):
    A = te.placeholder((1, 3, 7, 8), name="A", dtype="int8")
    W = te.placeholder((4, 3, 3, 3), name="W", dtype="int8")
    a, w = rand((1, 3, 7, 8), "int8", -100, 100), rand((4, 3, 3, 3), "int8", -100, 100)
    got, _ = run_impl(target, T.get_conv2d_nchw_implement(target), (1, 1, 1, "int32"), [A, W], [a, w])
    want = T.conv2d_nchw_python(a, w, 1, 1, out_dtype="int32")
    assert got.dtype == np.int32 and np.abs(want).max() > 127  # it would overflow int8
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------- CUDA: arches and tuning

CUDA_OPS = [
    # (compute, schedule, data shape, kernel shape, compute args)
    ("conv2d_nchw", (1, 3, 7, 7), (4, 3, 3, 3), (1, 1, 1)),
    ("conv2d_nhwc", (1, 7, 7, 3), (3, 3, 3, 4), (1, 1, 1)),
    ("group_conv2d_nchw", (1, 4, 7, 7), (4, 2, 3, 3), (1, 1, 1, 2)),
    ("depthwise_conv2d_nchw", (1, 3, 8, 7), (3, 1, 3, 3), (1, "SAME", 1)),
    ("conv1d_ncw", (1, 3, 11), (4, 3, 3), (1, 1, 1)),
    ("conv1d_nwc", (1, 11, 3), (3, 3, 4), (2, 1, 1)),
    ("conv2d_transpose_nchw", (1, 3, 5, 5), (3, 4, 3, 3), (2, 1, "float32", (1, 1))),
]


@pytest.mark.parametrize("name, dshape, wshape, args", CUDA_OPS, ids=[c[0] for c in CUDA_OPS])
def test_cuda_schedules_build_for_sm80_and_sm90(name, dshape, wshape, args):
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    with tecc.target.Target("cuda"):
        out = topi.nn.relu(getattr(topi.cuda, name)(A, W, *args))
        s = getattr(topi.cuda, "schedule_" + name)([out])
    mod = build_all_arches(s, [A, W, out])  # each arch verified (thread and shared limits) and compiled
    src = mod.imported_modules[0].get_source()
    assert src.count("__global__") == 1 and "__shared__" in src and "__syncthreads()" in src
    a, w = rand(dshape), rand(wshape)
    got = np.zeros([int(d) for d in out.shape], "float32")
    assert mod.check(a, w, got) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod(a, w, got)
    np.testing.assert_allclose(got, np.maximum(reference(name, a, w, args), 0), rtol=1e-4, atol=1e-4)


def reference(name, a, w, args):
    """The numpy reference of ``topi.cuda.<name>(A, W, *args)``."""
    if name == "conv2d_nhwc":
        return T.conv2d_nhwc_python(a, w, args[0], args[1], dilation=args[2])
    if name == "group_conv2d_nchw":
        return T.conv2d_nchw_python(a, w, args[0], args[1], args[3], dilation=args[2])
    if name == "depthwise_conv2d_nchw":
        return T.depthwise_conv2d_python_nchw(a, w, args[0], args[1], args[2])
    if name == "conv1d_ncw":
        return T.conv1d_ncw_python(a, w, *args[:3])
    if name == "conv1d_nwc":
        return T.conv1d_ncw_python(a.transpose(0, 2, 1), w.transpose(2, 1, 0), *args[:3]).transpose(0, 2, 1)
    if name == "conv2d_transpose_nchw":
        return T.conv2d_transpose_nchw_python(a, w, args[0], args[1], args[3])
    return T.conv2d_nchw_python(a, w, args[0], args[1], dilation=args[2])


def test_cuda_conv2d_nchw_is_a_tunable_task():
    from tecc.tuner.task.space import ConfigSpace

    A, W = te.placeholder((1, 4, 9, 9), name="A"), te.placeholder((8, 4, 3, 3), name="W")
    C = topi.cuda.conv2d_nchw(A, W, 1, 1, 1)
    workload = C.op.attrs["workload"]
    assert workload[0] == "conv2d_nchw.cuda"
    # the config space the template defines: TVM's conv2d_direct knobs
    space = ConfigSpace()
    with autotvm.ApplyConfig(space):
        topi.cuda.schedule_conv2d_nchw([topi.cuda.conv2d_nchw(A, W, 1, 1, 1)])
    assert set(space.space_map) == {"tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx",
                                    "auto_unroll_max_step", "unroll_explicit", "vec"}
    # one point of it, with virtual threads and a split reduction, scheduled and run
    knobs = {"tile_f": [-1, 2, 2, 2], "tile_y": [-1, 1, 3, 1], "tile_x": [-1, 3, 3, 1],
             "tile_rc": [-1, 2], "tile_ry": [-1, 1], "tile_rx": [-1, 3]}
    knob = []
    for name, dim in space.space_map.items():
        if name in knobs:
            knob.append(next(i for i, e in enumerate(dim.entities) if e.size == knobs[name]))
        else:
            knob.append(next(i for i, e in enumerate(dim.entities) if e.val in (512, 1)))
    cfg = space.get(space.knob2point(knob))
    assert cfg["tile_f"].size == [-1, 2, 2, 2] and cfg["unroll_explicit"].val == 1
    with autotvm.ApplyConfig(cfg):
        C = topi.cuda.conv2d_nchw(A, W, 1, 1, 1)
        s = topi.cuda.schedule_conv2d_nchw([C])
    a, w = rand((1, 4, 9, 9)), rand((8, 4, 3, 3))
    (got,) = build_run(s, [A, W], [C], [a, w], "cuda")
    np.testing.assert_allclose(got, T.conv2d_nchw_python(a, w, 1, 1), rtol=1e-4, atol=1e-4)
    # the task can rebuild the operator from its workload alone
    from tecc.tuner.task import TASK_TABLE

    with autotvm.ApplyConfig(cfg):
        s2, args = TASK_TABLE["conv2d_nchw.cuda"](*workload[1:])
    assert [tuple(int(d) for d in t.shape) for t in args] == [(1, 4, 9, 9), (8, 4, 3, 3), (1, 8, 9, 9)]


def test_cuda_earlier_forms_still_work():
    s, args = topi.cuda.conv2d_nchw(1, 3, 8, 8, 8, 3, 3, stride=1, pad=1)
    assert [t.name for t in args] == ["Data", "Weight", "Out"]
    A, W = te.placeholder((1, 3, 8, 8), name="A"), te.placeholder((8, 3, 3, 3), name="W")
    C = topi.nn.conv2d_nchw(A, W, 1, 1)
    s = topi.cuda.schedule_conv2d_nchw(te.create_schedule(C.op), C, 4, 4)
    a, w = rand((1, 3, 8, 8)), rand((8, 3, 3, 3))
    (got,) = build_run(s, [A, W], [C], [a, w], "cuda")
    np.testing.assert_allclose(got, T.conv2d_nchw_python(a, w, 1, 1), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------ references

def test_reference_conv2d_by_hand():
    a, w = rand((2, 4, 7, 6)), rand((6, 2, 3, 2))
    stride, (top, left, bottom, right), dil, groups = (2, 1), (1, 0, 2, 1), (2, 1), 2
    got = T.conv2d_nchw_python(a, w, stride, (top, left, bottom, right), groups, dilation=dil)
    ap = np.pad(a.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    want = np.zeros(got.shape)
    for n, f, y, x in np.ndindex(*got.shape):
        g = f // 3
        for c, i, j in np.ndindex(2, 3, 2):
            want[n, f, y, x] += ap[n, g * 2 + c, y * 2 + i * 2, x + j] * w[f, c, i, j]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_reference_conv2d_transpose_is_the_adjoint_of_conv2d():
    # <conv2d(x, w), y> == <x, conv2d_transpose(y, w)> for the matching sizes
    stride, padding = 2, (1, 0, 1, 2)
    x, w = rand((1, 3, 9, 8)).astype(np.float64), rand((4, 3, 3, 3)).astype(np.float64)
    conv = T.conv2d_nchw_python(x, w, stride, padding)
    y = rand(conv.shape).astype(np.float64)
    oph = x.shape[2] - ((conv.shape[2] - 1) * stride - 2 + 3)
    opw = x.shape[3] - ((conv.shape[3] - 1) * stride - 2 + 3)
    back = T.conv2d_transpose_nchw_python(y, w, stride, padding, (oph, opw))
    assert back.shape == x.shape
    np.testing.assert_allclose((conv * y).sum(), (x * back).sum(), rtol=1e-10)


def test_reference_nhwc_depthwise_and_1d_agree_with_nchw():
    a, w = rand((2, 3, 8, 7)), rand((3, 2, 3, 3))
    dw = T.depthwise_conv2d_python_nchw(a, w, 1, 1)
    np.testing.assert_allclose(dw, T.conv2d_nchw_python(a, w.reshape(6, 1, 3, 3), 1, 1, 3), rtol=1e-6)
    w2 = rand((4, 3, 3, 3))
    nhwc = T.conv2d_nhwc_python(a.transpose(0, 2, 3, 1), w2.transpose(2, 3, 1, 0), 2, "SAME")
    np.testing.assert_allclose(nhwc, T.conv2d_nchw_python(a, w2, 2, "SAME").transpose(0, 2, 3, 1), rtol=1e-6)
    a1, w1 = rand((1, 3, 9)), rand((2, 3, 3))
    c1 = T.conv1d_ncw_python(a1, w1, 1, 1, 1)
    c2 = T.conv2d_nchw_python(a1[:, :, None, :], w1[:, :, None, :], 1, (0, 1))[:, :, 0, :]
    np.testing.assert_allclose(c1, c2, rtol=1e-6)
    assert T.conv2d_nchw_python(rand((1, 2, 4, 4), "int8", -9, 9), rand((1, 2, 3, 3), "int8", -9, 9), 1, 0,
                                out_dtype="int32").dtype == np.int32


def test_dilate_and_dilated_filters_as_tvm_tests_use_them():
    # TVM's tests dilate the filter by hand: a conv with it is a conv with dilation
    a, w = rand((1, 3, 9, 9)), rand((2, 3, 3, 3))
    dw = T.dilate_python(w, (1, 1, 2, 2))
    assert dw.shape == (2, 3, 5, 5) and dw[0, 0, 1, 1] == 0 and dw[0, 0, 2, 2] == w[0, 0, 1, 1]
    np.testing.assert_allclose(T.conv2d_nchw_python(a, dw, 1, 2), T.conv2d_nchw_python(a, w, 1, 2, dilation=2),
                               rtol=1e-5, atol=1e-6)
    W = te.placeholder((2, 3, 3, 3), name="W")
    D = topi.nn.dilate(W, (1, 1, 2, 2), dilation_value=0.5)
    assert D.op.tag == "injective,dilate"
    (got,) = build_run(topi.x86.schedule_injective(D), [W], [D], [w], "llvm")
    np.testing.assert_array_equal(got, T.dilate_python(w, (1, 1, 2, 2), 0.5))


@settings(max_examples=10, deadline=None)
@given(stride=st.integers(1, 3), pads=st.tuples(*[st.integers(0, 2)] * 4), dil=st.integers(1, 2),
       size=st.tuples(st.integers(5, 9), st.integers(5, 9)), kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       groups=st.sampled_from([1, 2]))
def test_conv2d_random_attributes_on_cpu(stride, pads, dil, size, kernel, groups):
    dshape, wshape = (1, 4) + size, (4, 4 // groups) + kernel
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    a, w = rand(dshape), rand(wshape)
    with tecc.target.Target("llvm"):
        C = topi.nn.group_conv2d_nchw(A, W, stride, pads, dil, groups)
        s = topi.x86.schedule_group_conv2d_nchw(C)
    (got,) = build_run(s, [A, W], [C], [a, w], "llvm")
    np.testing.assert_allclose(got, T.conv2d_nchw_python(a, w, stride, pads, groups, dilation=dil),
                               rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------------- errors

A4 = te.placeholder((1, 4, 8, 8), name="A")


def test_error_channels_not_divisible_by_groups():
    with pytest.raises(TopiError, match=r"group_conv2d_nchw\(data 'A' \(1, 4, 8, 8\), kernel 'W' \(6, 1, 3, 3\)\): "
                                        r"groups=3 does not divide the 4 input channels"):
        topi.nn.group_conv2d_nchw(A4, te.placeholder((6, 1, 3, 3), name="W"), 1, 1, 1, 3)


def test_error_filters_not_divisible_by_groups():
    with pytest.raises(TopiError, match=r"groups=2 does not divide the 5 output channels"):
        topi.nn.group_conv2d_nchw(A4, te.placeholder((5, 2, 3, 3), name="W"), 1, 1, 1, 2)


def test_error_input_channels_mismatch():
    with pytest.raises(TopiError, match=r"conv2d_nchw\(data 'A' \(1, 4, 8, 8\), kernel 'W' \(2, 3, 3, 3\)\): the input "
                                        r"has 4 channels but the filter expects 3"):
        topi.nn.conv2d_nchw(A4, te.placeholder((2, 3, 3, 3), name="W"), 1, 1, 1)
    with pytest.raises(TopiError, match=r"the input has 4 channels but the filter expects 1 per group x 2 groups"):
        topi.nn.group_conv2d_nchw(A4, te.placeholder((4, 1, 3, 3), name="W"), 1, 1, 1, 2)
    with pytest.raises(TopiError, match=r"depthwise_conv2d_nchw\(.*\): the input has 4 channels but the filter has 3"):
        topi.nn.depthwise_conv2d_nchw(A4, te.placeholder((3, 1, 3, 3), name="W"), 1, 1, 1)
    with pytest.raises(TopiError, match=r"conv2d_transpose_nchw\(.*\): the input has 4 channels but the filter "
                                        r"expects 2"):
        topi.nn.conv2d_transpose_nchw(A4, te.placeholder((2, 4, 3, 3), name="W"), 1, 0, None, (0, 0))


def test_error_kernel_larger_than_padded_input():
    with pytest.raises(TopiError, match=r"conv2d_nchw\(data 'A' \(1, 4, 8, 8\), kernel 'W' \(2, 4, 11, 3\)\): the "
                                        r"kernel \(dilated: 11 along H\) is larger than the padded input \(10 along H"):
        topi.nn.conv2d_nchw(A4, te.placeholder((2, 4, 11, 3), name="W"), 1, 1, 1)
    with pytest.raises(TopiError, match=r"the kernel \(dilated: 9 along W\) is larger than the padded input \(8"):
        topi.nn.depthwise_conv2d_nchw(A4, te.placeholder((4, 1, 3, 3), name="W"), 1, 0, (1, 4))
    with pytest.raises(TopiError, match=r"conv1d_ncw\(.*\): the kernel \(dilated: 5 along W\) is larger"):
        topi.nn.conv1d_ncw(te.placeholder((1, 2, 4), name="X"), te.placeholder((1, 2, 5), name="K"))


def test_error_negative_padding():
    with pytest.raises(TopiError, match=r"conv2d_nchw\(data 'A' \(1, 4, 8, 8\), kernel 'W' \(2, 4, 3, 3\)\): padding "
                                        r"\(1, -1\) is negative"):
        topi.nn.conv2d_nchw(A4, te.placeholder((2, 4, 3, 3), name="W"), 1, (1, -1), 1)
    with pytest.raises(TopiError, match=r"conv2d_transpose_nchw\(.*\): padding -2 is negative"):
        topi.nn.conv2d_transpose_nchw(A4, te.placeholder((4, 2, 3, 3), name="W"), 1, -2, None, (0, 0))


def test_error_stride_and_dilation_below_one():
    W = te.placeholder((2, 4, 3, 3), name="W")
    with pytest.raises(TopiError, match=r"conv2d_nchw\(data 'A' \(1, 4, 8, 8\), kernel 'W' \(2, 4, 3, 3\)\): stride "
                                        r"\(1, 0\) must be at least 1"):
        topi.nn.conv2d_nchw(A4, W, (1, 0), 1, 1)
    with pytest.raises(TopiError, match=r"conv2d_nhwc\(.*\): dilation 0 must be at least 1"):
        topi.nn.conv2d_nhwc(te.placeholder((1, 8, 8, 4), name="AH"), te.placeholder((3, 3, 4, 2), name="WH"), 1, 1, 0)
    with pytest.raises(TopiError, match=r"depthwise_conv2d_nchw\(.*\): stride -1 must be at least 1"):
        topi.nn.depthwise_conv2d_nchw(A4, te.placeholder((4, 1, 3, 3), name="WD"), -1, 1, 1)


def test_error_transpose_output_padding_and_cropping():
    W = te.placeholder((4, 2, 3, 3), name="W")
    with pytest.raises(TopiError, match=r"output_padding \(2, 0\) must be smaller than the strides 2 \(along H\)"):
        topi.nn.conv2d_transpose_nchw(A4, W, 2, 1, None, (2, 0))
    with pytest.raises(TopiError, match=r"padding 9 removes the whole output along H"):
        topi.nn.conv2d_transpose_nchw(te.placeholder((1, 4, 2, 2), name="X"), W, 1, 9, None, (0, 0))


def test_error_bad_attributes_and_layouts():
    W = te.placeholder((2, 4, 3, 3), name="W")
    with pytest.raises(TopiError, match=r"groups=0 must be an int >= 1"):
        topi.nn.group_conv2d_nchw(A4, W, 1, 1, 1, 0)
    with pytest.raises(TopiError, match=r"padding \(1, 1, 1\) must have 2 or 4 entries"):
        topi.nn.conv2d_nchw(A4, W, 1, (1, 1, 1), 1)
    with pytest.raises(TopiError, match=r"stride \(1, 1, 1\) must be an int or 2 int\(s\)"):
        topi.nn.conv2d_nchw(A4, W, (1, 1, 1), 1, 1)
    with pytest.raises(TopiError, match=r"padding 'FULL' is not 'SAME' or 'VALID'"):
        topi.nn.conv2d_nchw(A4, W, 1, "FULL", 1)
    with pytest.raises(TopiError, match=r"conv2d: data_layout 'NCDHW' is not supported"):
        topi.nn.conv2d(A4, W, 1, 1, 1, data_layout="NCDHW")
    with pytest.raises(TopiError, match=r"kernel_layout 'OIHX' is not supported"):
        topi.nn.conv2d(A4, W, 1, 1, 1, kernel_layout="OIHX")
    with pytest.raises(TopiError, match=r"conv1d: data_layout 'NCHW' is not supported; use 'NCW' or 'NWC'"):
        topi.nn.conv1d(A4, W, data_layout="NCHW")
    with pytest.raises(TopiError, match=r"kernel 'W3' has shape \(2, 4, 3\); it must be 4-D"):
        topi.nn.conv2d_nchw(A4, te.placeholder((2, 4, 3), name="W3"), 1, 1, 1)


def test_error_dilate_strides():
    with pytest.raises(TopiError, match=r"dilate\('A'\): strides \(1, 2\) has 2 entries but the tensor has shape"):
        topi.nn.dilate(A4, (1, 2))
    with pytest.raises(TopiError, match=r"dilate\('A'\): strides \(1, 1, 0, 1\) must be at least 1"):
        topi.nn.dilate(A4, (1, 1, 0, 1))


def test_error_schedules_refuse_other_operators():
    relu = topi.nn.relu(A4)
    with pytest.raises(ScheduleError, match=r"schedule_conv2d_nhwc: 'T_relu' \(tag 'elemwise'\) is not a conv2d_nhwc"):
        topi.x86.schedule_conv2d_nhwc(relu)
    conv = topi.nn.conv2d_nchw(A4, te.placeholder((2, 4, 3, 3), name="W"), 1, 1, 1)
    with pytest.raises(ScheduleError, match=r"schedule_depthwise_conv2d_nchw: .* is not a depthwise_conv2d_nchw"):
        topi.cuda.schedule_depthwise_conv2d_nchw(conv)


# -------------------------------------------------------------------------------- real GPU

@pytest.mark.gpu
@pytest.mark.parametrize("name, dshape, wshape, args", [
    ("conv2d_nchw", (2, 64, 28, 28), (64, 64, 3, 3), (1, 1, 1)),
    ("conv2d_nchw", (1, 3, 57, 57), (32, 3, 7, 7), (2, 3, 1)),
    ("conv2d_nhwc", (2, 28, 28, 32), (3, 3, 32, 64), (1, 1, 1)),
    ("group_conv2d_nchw", (2, 32, 28, 28), (64, 8, 3, 3), (1, 1, 1, 4)),
    ("depthwise_conv2d_nchw", (2, 64, 29, 29), (64, 1, 3, 3), (2, 1, 1)),
    ("conv1d_ncw", (4, 32, 301), (64, 32, 5), (1, 2, 1)),
    ("conv1d_nwc", (4, 301, 32), (5, 32, 64), (2, 2, 1)),
    ("conv2d_transpose_nchw", (2, 32, 14, 14), (32, 16, 4, 4), (2, 1, "float32", (0, 0))),
])
def test_cuda_conv_schedules_on_gpu(name, dshape, wshape, args):
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    with tecc.target.Target("cuda"):
        conv = getattr(topi.cuda, name)(A, W, *args)
        out = topi.nn.relu(conv)
        s = getattr(topi.cuda, "schedule_" + name)([out])
    a, w = rand(dshape), rand(wshape)
    f = tecc.build(s, [A, W, out], "cuda")
    got = np.zeros([int(d) for d in out.shape], "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(a, w, got)
    want = reference(name, a, w, args)
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-3, atol=1e-3)
