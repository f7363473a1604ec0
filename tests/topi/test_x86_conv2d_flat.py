"""The x86 convolution over flattened pixels (topi/x86/conv2d_flat.py) and the
row-wise schedule of index-remapping injective operators (topi/x86/injective.py),
checked against numpy."""
import re

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, topi
from tecc.topi import testing as T
from tecc.topi.x86 import conv2d_flat as flat
from topi_run import build_run, rand

TARGET = "llvm -mcpu=core-avx2"   # 8 float lanes, 16 vector registers: the plan's tiles are 6 x 16


def _x86_conv(dshape, wshape, stride, padding, dilation=1):
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    with tecc.target.Target(TARGET):
        C = topi.x86.conv2d_nchw(A, W, stride, padding, dilation, "float32")
    return A, W, C


def _anchor(out):
    """The operation tagged conv2d_nchw that ``out`` reads (itself or through injective stages)."""
    todo = [out.op]
    while todo:
        op = todo.pop()
        if op.tag == "conv2d_nchw":
            return op
        todo.extend(t.op for t in op.input_tensors)
    raise AssertionError("no conv2d_nchw stage")


# (data, weight, stride, padding, dilation): every one at least flat.MIN_MACS multiply-adds
FLAT_CASES = [
    ((1, 32, 14, 14), (32, 32, 3, 3), 1, 1, 1),            # 3x3 on rows of 14: 16-pixel tiles across rows
    ((1, 64, 7, 7), (40, 64, 3, 3), 1, 1, 1),              # rows of 7, 40 filters: partial channel tiles
    ((1, 32, 28, 28), (32, 32, 3, 3), 2, 1, 1),            # stride 2: four phase planes
    ((1, 256, 14, 14), (256, 256, 1, 1), 2, 0, 1),         # 1x1 stride 2: one phase plane, a quarter of the data
    ((1, 256, 7, 7), (128, 256, 1, 1), 1, 0, 1),           # 1x1 stride 1, 49 pixels: copied with slack
    ((2, 32, 15, 13), (32, 32, 3, 3), (2, 1), (1, 2, 0, 1), (2, 1)),  # batch 2, mixed strides, pads, dilation
    ((1, 3, 64, 64), (16, 3, 7, 7), 2, 3, 1),              # a 7x7 stride-2 stem on 3 channels
    ((1, 16, 17, 15), (128, 16, 3, 3), 2, 1, 1),           # strided, 128 filters: im2col panels, odd sizes
    ((1, 32, 17, 19), (130, 32, 3, 2), (2, 3), (1, 2, 0, 1), 2),  # panels: mixed strides, pads, dilation
]


@pytest.mark.parametrize("dshape, wshape, stride, padding, dilation", FLAT_CASES)
def test_flat_conv2d_matches_numpy(dshape, wshape, stride, padding, dilation):
    A, W, C = _x86_conv(dshape, wshape, stride, padding, dilation)
    assert flat.is_flat(_anchor(C).output(0))
    with tecc.target.Target(TARGET):
        s = topi.schedule(C, TARGET)
    a, w = rand(dshape), rand(wshape)
    (got,) = build_run(s, [A, W], [C], [a, w], TARGET)
    want = T.conv2d_nchw_python(a, w, stride, padding, dilation=dilation)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_pointwise_conv_reads_its_input_in_panels_and_tiles_need_no_bounds_check():
    A, W, C = _x86_conv((1, 64, 16, 16), (64, 64, 1, 1), 1, 0)
    plan = flat._plan_of(_anchor(C).output(0))
    assert plan.panels and not plan.inline_input
    assert plan.row_stride == 16 and (plan.rows_per_task * 16) % plan.tile_p == 0  # every task starts on a tile
    with tecc.target.Target(TARGET):
        s = topi.schedule(C, TARGET)
    lowered = str(tecc.lower(s, [A, W, C], simple_mode=True))
    # a tile's reduction reads one contiguous run of the panel: 16 pixels per channel, channel after channel
    assert re.search(r"PanelInput\[[^\]]*rc\*16 \+ p\.c\]", lowered)
    # the only bounds check is the crop's, on the filters of the last channel block (64 = 10 x 6 + 4),
    # and it stays inside the parallel loop (no block of channels left to one core)
    assert all("< 64)" in line for line in lowered.splitlines() if "likely" in line)
    assert lowered.count("parallel for") == 2
    mod = tecc.build(s, [A, W, C], TARGET)
    # the 6 x 16 accumulator tile: 12 vector variables, in registers
    assert len(set(re.findall(r"tecc_float32x8 (OutFlat_local_\d+);", mod.get_source()))) == 12
    a, w = rand((1, 64, 16, 16)), rand((64, 64, 1, 1))
    (got,) = build_run(s, [A, W], [C], [a, w], TARGET)
    np.testing.assert_allclose(got, T.conv2d_nchw_python(a, w, 1, 0), rtol=1e-4, atol=1e-4)


def test_which_convolutions_read_panels():
    for dshape, wshape, stride, padding, dilation in FLAT_CASES:
        _, _, C = _x86_conv(dshape, wshape, stride, padding, dilation)
        plan = flat._plan_of(_anchor(C).output(0))
        kh, kw = wshape[2:]
        strided = plan.stride != (1, 1)
        assert plan.panels == (kh == kw == 1 or (strided and wshape[0] >= flat.TAP_PANEL_MIN_FILTERS)), wshape
        if plan.panels:
            assert plan.row_stride == plan.out_width and plan.tile_c == 6  # 6 x 16: no tap loaded early


def test_im2col_panels_reduce_over_channels_and_taps_in_one_contiguous_loop():
    A, W, C = _x86_conv((1, 16, 17, 15), (128, 16, 3, 3), 2, 1)
    with tecc.target.Target(TARGET):
        s = topi.schedule(C, TARGET)
    lowered = str(tecc.lower(s, [A, W, C], simple_mode=True))
    # one reduction of 16 x 9 steps, each reading 16 consecutive floats of the panel and the
    # filter's weights in order (the index digits k // 9, k % 9 // 3, k % 3 re-joined)
    assert "for (rk, 0, 144)" in lowered
    assert re.search(r"PanelInput\[[^\]]*rk\*16 \+ p\.c\]", lowered)
    assert re.search(r"W\[[^\]]*\*144 \+ rk\]", lowered)


def test_pointwise_tasks_that_would_not_start_on_a_tile_read_the_rows_instead():
    # 14 pixels a row: tasks of 7 rows (98 pixels) would start mid-tile, so a tuned
    # config with 7 rows per task keeps the row layout; one task of all 14 rows packs panels
    A, W = te.placeholder((1, 128, 14, 14), name="A"), te.placeholder((64, 128, 1, 1), name="W")
    for rows, panels in ((7, False), (14, True)):
        knobs = flat.FlatKnobs(6, 2, rows, 2, "pixels_outer")
        plan = flat.plan_conv2d_nchw_flat(A, W, 1, 0, 1, "float32", 8, 16, knobs)
        assert plan.panels is panels, rows
        C = flat.conv2d_nchw_flat(A, W, plan)
        s = te.create_schedule(C.op)
        flat.schedule_conv2d_nchw_flat(s, C.op.input_tensors[0], C)
        a, w = rand((1, 128, 14, 14)), rand((64, 128, 1, 1))
        (got,) = build_run(s, [A, W], [C], [a, w], TARGET)
        np.testing.assert_allclose(got, T.conv2d_nchw_python(a, w, 1, 0), rtol=1e-4, atol=1e-4)


def test_the_plan_covers_every_task_with_whole_tiles():
    for dshape, wshape, stride, padding, dilation in FLAT_CASES:
        _, _, C = _x86_conv(dshape, wshape, stride, padding, dilation)
        conv = _anchor(C).output(0)
        plan = flat._plan_of(conv)
        filters = wshape[0]
        tasks = plan.out_height // plan.rows_per_task
        assert plan.out_height % plan.rows_per_task == 0
        task_pixels = (plan.rows_per_task - 1) * plan.row_stride + plan.out_width
        last_tile_end = (tasks - 1) * plan.rows_per_task * plan.row_stride + \
            -(-task_pixels // plan.tile_p) * plan.tile_p
        assert plan.flat_pixels >= last_tile_end
        assert plan.flat_channels % plan.channels_per_task == 0 and plan.flat_channels >= filters
        assert plan.channels_per_task % plan.tile_c == 0 or plan.channels_per_task == filters
        assert tuple(int(d) for d in conv.shape) == (dshape[0], plan.flat_channels, plan.flat_pixels)


def _bias_relu(conv):
    bias = te.placeholder((conv.shape[1], 1, 1), name="bias")
    return topi.nn.relu(conv + bias), [bias]


def _bn_residual_relu(conv):
    scale = te.placeholder((conv.shape[1], 1, 1), name="scale")
    shift = te.placeholder((conv.shape[1], 1, 1), name="shift")
    residual = te.placeholder(tuple(int(d) for d in conv.shape), name="residual")
    return topi.nn.relu(conv * scale + shift + residual), [scale, shift, residual]


@pytest.mark.parametrize("chain", [_bias_relu, _bn_residual_relu])
def test_the_epilogue_is_inlined_into_the_crop(chain):
    dshape, wshape = (1, 32, 14, 14), (48, 32, 3, 3)
    A, W, C = _x86_conv(dshape, wshape, 1, 1)
    out, extra = chain(C)
    with tecc.target.Target(TARGET):
        s = topi.schedule(out, TARGET)
    lowered = str(tecc.lower(s, [A, W] + extra + [out], simple_mode=True))
    # no NCHW buffer of the convolution: the task's OutFlat is cropped through the epilogue
    allocs = [line for line in lowered.splitlines() if "allocate" in line and "OutFlat" not in line]
    assert [a for a in allocs if "FlatInput" not in a] == []
    a, w = rand(dshape), rand(wshape)
    values = [rand(tuple(int(d) for d in t.shape)) for t in extra]
    (got,) = build_run(s, [A, W] + extra, [out], [a, w] + values, TARGET)
    ref = T.conv2d_nchw_python(a, w, 1, 1)
    if chain is _bias_relu:
        want = np.maximum(ref + values[0], 0)
    else:
        want = np.maximum(ref * values[0] + values[1] + values[2], 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_convolution_as_an_output_beside_its_epilogue_and_a_reshaping_epilogue():
    dshape, wshape = (1, 32, 14, 14), (32, 32, 3, 3)
    a, w = rand(dshape), rand(wshape)
    ref = T.conv2d_nchw_python(a, w, 1, 1)
    A, W, C = _x86_conv(dshape, wshape, 1, 1)
    R = topi.nn.relu(C)
    with tecc.target.Target(TARGET):
        s = topi.schedule([R, C], TARGET)
    got_r, got_c = build_run(s, [A, W], [R, C], [a, w], TARGET)
    np.testing.assert_allclose(got_c, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_r, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)
    A, W, C = _x86_conv(dshape, wshape, 1, 1)
    F = topi.reshape(topi.nn.relu(C), (1, 32 * 14 * 14))
    with tecc.target.Target(TARGET):
        s = topi.schedule(F, TARGET)
    (got,) = build_run(s, [A, W], [F], [a, w], TARGET)
    np.testing.assert_allclose(got, np.maximum(ref, 0).reshape(1, -1), rtol=1e-4, atol=1e-4)


def test_where_the_direct_schedule_stays():
    # wide rows of few input channels, 3x3 or 1x1, any stride: flat (measured faster)
    for wshape, stride in (((64, 64, 3, 3), 1), ((64, 64, 3, 3), 2), ((256, 64, 1, 1), 1)):
        _, _, C = _x86_conv((1, 64, 56, 56), wshape, stride, 1 if wshape[2] == 3 else 0)
        assert flat.is_flat(_anchor(C).output(0))
    # a convolution of fewer than MIN_MACS multiply-adds, and float16: direct
    _, _, C = _x86_conv((1, 3, 7, 8), (4, 3, 3, 3), 1, 1)
    assert C.op.tag == "conv2d_nchw"
    A, W = te.placeholder((1, 64, 14, 14), "float16", name="A"), te.placeholder((64, 64, 3, 3), "float16", name="W")
    with tecc.target.Target(TARGET):
        assert topi.x86.conv2d_nchw(A, W, 1, 1, 1, "float16").op.tag == "conv2d_nchw"


def test_a_tuned_config_keeps_the_direct_compute_its_knobs_apply_to():
    from tecc.tuner.task.space import ConfigSpace

    dshape, wshape = (1, 32, 14, 14), (32, 32, 3, 3)
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    space = ConfigSpace()
    with tecc.target.Target(TARGET), autotvm.ApplyConfig(space):
        topi.x86.schedule_conv2d_nchw([topi.x86.conv2d_nchw(A, W, 1, 1, 1, "float32")])
    assert {"tile_oc", "tile_ow", "tile_ic", "unroll_kw"} <= set(space.space_map)
    cfg = space.get(len(space) // 2)
    with tecc.target.Target(TARGET), autotvm.ApplyConfig(cfg):
        C = topi.x86.conv2d_nchw(A, W, 1, 1, 1, "float32")
        s = topi.x86.schedule_conv2d_nchw([C])
    assert C.op.tag == "conv2d_nchw" and not flat.is_flat(C)
    a, w = rand(dshape), rand(wshape)
    (got,) = build_run(s, [A, W], [C], [a, w], TARGET)
    np.testing.assert_allclose(got, T.conv2d_nchw_python(a, w, 1, 1), rtol=1e-4, atol=1e-4)


FLAT_TASK_ARGS = (("TENSOR", (1, 32, 14, 14), "float32"), ("TENSOR", (32, 32, 3, 3), "float32"), 1, 1, 1,
                  "float32")


def _valid_point(task, start=0):
    """The first point of ``task``'s space from ``start`` its template accepts."""
    space = task.config_space
    for i in range(start, len(space)):
        try:
            task.instantiate(space.get(i))
        except autotvm.task.space.InstantiationError:
            continue
        return space.get(i)
    raise AssertionError(f"{task.name}: no valid point from {start}")


def _records(costs):
    """``(inp, result)`` pairs: one record per task name in ``costs`` (seconds); a name
    ending in ``:baseline`` is a baseline record (the task's fallback measured)."""
    out = []
    for key, cost in costs.items():
        name = key.split(":")[0]
        task = autotvm.task.create(name, args=FLAT_TASK_ARGS, target=TARGET)
        if key.endswith(":baseline"):
            cfg = autotvm.FallbackConfigEntity()
        else:
            cfg = _valid_point(task, len(task.config_space) // 3)
        out.append((autotvm.MeasureInput(task.target, task, cfg),
                    autotvm.MeasureResult([cost], 0, 0.1, 0.0)))
    return out


@pytest.mark.parametrize("costs, want_flat", [
    ({"conv2d_nchw.x86": 2e-3, "conv2d_nchw_flat.x86": 1e-3}, True),    # both tuned: the faster
    ({"conv2d_nchw.x86": 1e-3, "conv2d_nchw_flat.x86": 2e-3}, False),
    ({"conv2d_nchw_flat.x86": 5e-3}, True),                               # one tuned: that one
    ({"conv2d_nchw.x86": 5e-3}, False),
    # a measured default (tecc tune's baseline) competes by its cost too
    ({"conv2d_nchw.x86": 2e-3, "conv2d_nchw_flat.x86:baseline": 1e-3}, True),
    ({"conv2d_nchw.x86:baseline": 1e-3, "conv2d_nchw_flat.x86": 2e-3}, False),
    # a measured default alone says nothing about the other implementation: untuned choice
    ({"conv2d_nchw.x86:baseline": 1e-3}, True),
])
def test_tuned_records_pick_the_implementation_of_lower_cost(costs, want_flat):
    records = _records(costs)
    A, W = te.placeholder((1, 32, 14, 14), name="A"), te.placeholder((32, 32, 3, 3), name="W")
    with tecc.target.Target(TARGET), autotvm.apply_history_best(records):
        C = topi.x86.conv2d_nchw(A, W, 1, 1, 1, "float32")
        s = topi.x86.schedule_conv2d_nchw([C])
    conv = _anchor(C).output(0)
    assert flat.is_flat(conv) == want_flat
    tuned_flat = [r for r in records if r[0].task.name == "conv2d_nchw_flat.x86" and not r[0].config.is_fallback]
    if want_flat and tuned_flat:
        # the plan is the tuned point's: its register tile and rows per task
        (inp, _), = tuned_flat
        plan = flat._plan_of(conv)
        tile_c, vectors = inp.config["tile"].val
        assert (plan.tile_c, plan.tile_p // 8, plan.rows_per_task) == (tile_c, vectors, inp.config["rows"].val)
    a, w = rand((1, 32, 14, 14)), rand((32, 32, 3, 3))
    (got,) = build_run(s, [A, W], [C], [a, w], TARGET)
    np.testing.assert_allclose(got, T.conv2d_nchw_python(a, w, 1, 1), rtol=1e-4, atol=1e-4)


def test_flat_knobs_that_break_a_limit_are_refused_with_the_reason():
    args = (("TENSOR", (1, 4, 56, 56), "float32"), ("TENSOR", (16, 4, 3, 3), "float32"), 1, 1, 1, "float32")
    task = autotvm.task.create("conv2d_nchw_flat.x86", args=args, target=TARGET)
    space = task.config_space
    assert list(space.space_map) == ["tile", "rows", "channel_tiles", "order"]
    # every register tile offered fits AVX2's 16 registers: accumulators, inputs (twice: the
    # next tap's load early on a 3x3 kernel) and a broadcast weight
    tiles = [e.val for e in space.space_map["tile"].entities]
    assert tiles and all(c * v + 2 * v + 1 <= 16 for c, v in tiles) and [6, 2] not in tiles and [5, 2] in tiles
    reasons = set()
    for i in np.random.default_rng(3).permutation(len(space))[:150]:
        cfg = space.get(int(i))
        try:
            task.instantiate(cfg)
        except autotvm.task.space.InstantiationError as err:
            assert str(err).startswith("conv2d_nchw_flat.x86: ") and "(fewer" in str(err) or "; fewer" in str(err)
            reasons.add("empty" if "leave a tile empty" in str(err) else "buffer" if "buffer" in str(err) else str(err))
    # both limits cost points of this space: a task holding an empty channel tile, and a task
    # whose part of OutFlat overflows its buffer
    assert reasons == {"empty", "buffer"}


def test_a_strided_kernel_read_in_panels_offers_the_tiles_of_one_reduction_loop():
    # 128 filters at stride 2: im2col panels, one reduction over channels and taps, so the
    # default's 6 x 16 tile (no next tap loaded early) is in the space
    args = (("TENSOR", (1, 16, 17, 15), "float32"), ("TENSOR", (128, 16, 3, 3), "float32"), 2, 1, 1, "float32")
    task = autotvm.task.create("conv2d_nchw_flat.x86", args=args, target=TARGET)
    tiles = [e.val for e in task.config_space.space_map["tile"].entities]
    assert [6, 2] in tiles and all(c * v + v + 1 <= 16 for c, v in tiles)


# ------------------------------------------------------------------- injective rows

@pytest.mark.parametrize("name", ["concatenate", "transpose", "pad", "strided_slice"])
def test_index_remapping_injective_ops_run_along_rows(name):
    shapes = {"concatenate": [(2, 8, 5, 11), (2, 3, 5, 11)], "transpose": [(2, 8, 5, 11)],
              "pad": [(2, 8, 5, 11)], "strided_slice": [(2, 8, 5, 11)]}[name]
    ph = [te.placeholder(sh, name=f"A{i}") for i, sh in enumerate(shapes)]
    values = [rand(sh) for sh in shapes]
    if name == "concatenate":
        out, want = topi.concatenate(ph, axis=1), np.concatenate(values, axis=1)
    elif name == "transpose":
        out, want = topi.transpose(ph[0], (0, 2, 1, 3)), values[0].transpose(0, 2, 1, 3)
    elif name == "pad":
        out, want = topi.nn.pad(ph[0], (0, 0, 1, 2), (0, 0, 2, 1)), np.pad(values[0], ((0, 0), (0, 0), (1, 2), (2, 1)))
    else:
        out, want = topi.strided_slice(ph[0], [0, 1, 0, 1], [2, 8, 5, 10]), values[0][:, 1:8, :, 1:10]
    with tecc.target.Target(TARGET):
        s = topi.schedule(out, TARGET)
    lowered = str(tecc.lower(s, ph + [out], simple_mode=True))
    assert f"vectorized for ({out.op.axis[-1].var.name}, 0, {int(out.shape[-1])})" in lowered  # a whole row
    (got,) = build_run(s, ph, [out], values, TARGET)
    np.testing.assert_array_equal(got, want)


def test_element_wise_chains_keep_one_fused_loop():
    A = te.placeholder((64, 256), name="A")
    out = topi.sigmoid(topi.multiply(topi.exp(A), 3.0))
    with tecc.target.Target(TARGET):
        lowered = str(tecc.lower(topi.schedule(out, TARGET), [A, out], simple_mode=True))
    assert "parallel for (i0.i1.fused" in lowered  # all elements in one loop, cut into vectors


# ---------------------------------------------------------------------------------------
# random convolutions under random knobs of the tunable task (every config a tuner may
# measure must compute the convolution)
# ---------------------------------------------------------------------------------------
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tecc.tuner.task.space import InstantiationError  # noqa: E402


@st.composite
def _flat_configs(draw):
    """A convolution the flat compute takes (1 to 4 times MIN_MACS multiply-adds: the
    filters follow from the drawn sizes) and knobs from its config space: a register
    tile that fits, rows dividing the output, channel tiles that leave none empty,
    either loop order."""
    kh, kw = draw(st.integers(1, 5), label="kh"), draw(st.integers(1, 5), label="kw")
    sh, sw = draw(st.integers(1, 3), label="sh"), draw(st.integers(1, 3), label="sw")
    dh, dw = draw(st.integers(1, 2), label="dh"), draw(st.integers(1, 2), label="dw")
    pads = tuple(draw(st.integers(0, 2), label="pad") for _ in range(4))
    h = draw(st.integers((kh - 1) * dh + 1, 40), label="height")
    w = draw(st.integers((kw - 1) * dw + 1, 40), label="width")
    oh = (h + pads[0] + pads[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pads[1] + pads[3] - (kw - 1) * dw - 1) // sw + 1
    c = draw(st.integers(1, 64), label="channels")
    target = draw(st.integers(flat.MIN_MACS, 4 * flat.MIN_MACS), label="multiply-adds")
    f = -(-target // (oh * ow * c * kh * kw))
    assume(f <= 256)
    taps = 1 if flat.panel_kernel(kh, kw, (sh, sw), f) else kh * kw
    tile_c, vectors = draw(st.sampled_from(flat.register_tiles(f, 16, taps)), label="tile")
    rows = draw(st.sampled_from([r for r in range(1, oh + 1) if oh % r == 0]), label="rows")
    channel_tiles = draw(st.sampled_from([t for t in flat.TASK_CHANNEL_TILES if (t - 1) * tile_c < f]),
                         label="channel tiles")
    order = draw(st.sampled_from(flat.ORDERS), label="order")
    knobs = flat.FlatKnobs(tile_c, vectors, rows, channel_tiles, order)
    return (1, c, h, w), (f, c, kh, kw), (sh, sw), pads, (dh, dw), knobs


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(config=_flat_configs(), epilogue=st.sampled_from(["none", "relu", "bias_relu"]))
def test_random_convolutions_under_random_knobs_match_numpy(config, epilogue):
    dshape, wshape, stride, padding, dilation, knobs = config
    A, W = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    B = te.placeholder((wshape[0], 1, 1), name="B")
    with tecc.target.Target(TARGET):
        try:
            plan = flat.plan_conv2d_nchw_flat(A, W, stride, padding, dilation, "float32", 8, 16, knobs)
        except InstantiationError:
            assume(False)  # a task buffer past its limit: the template refuses it before compiling
        crop = flat.conv2d_nchw_flat(A, W, plan)
        out = crop
        if epilogue == "bias_relu":
            out = topi.add(out, B)
        if epilogue != "none":
            out = topi.nn.relu(out)
        s = te.create_schedule(out.op)
        if out is not crop:
            s[crop].compute_inline()
        if epilogue == "bias_relu":
            s[out.op.input_tensors[0]].compute_inline()
        flat.schedule_conv2d_nchw_flat(s, crop.op.input_tensors[0], out)
    a, w, bias = rand(dshape), rand(wshape), rand((wshape[0], 1, 1))
    (got,) = build_run(s, [A, W, B], [out], [a, w, bias], TARGET)
    want = T.conv2d_nchw_python(a, w, stride, padding, dilation=dilation)
    if epilogue == "bias_relu":
        want = want + bias
    if epilogue != "none":
        want = np.maximum(want, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
