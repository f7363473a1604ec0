"""topi.vision.roi_align_nchw (TVM's) against the numpy reference of topi.testing:
every mode (avg, max, ONNX's onnx_max), adaptive and fixed grids, aligned and not,
on "llvm" and "cuda" (the GPU emulator, checked race-free and in bounds); regions
reaching past the map, flipped, smaller than a pixel; TVM's own test shapes and
mode spellings; the adaptive grid against fixed grids where they must agree (the
largest grid of a region larger than the map included); float64, float16, symbolic
sizes; the tag, the schedule topi.schedule picks, an epilogue, the cubins NVRTC
makes; one expected failure per argument error."""
import math

import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand

T = topi.testing

#: batch index, x1, y1, x2, y2 (image coordinates; scale 0.5 onto a 7 x 9 map): inside, reaching past the
#: top-left edges, flipped, smaller than a pixel, over the whole map, one on the last row and column
ROIS = np.array([[0, 1.0, 1.5, 6.0, 5.0], [1, -2.0, -1.0, 12.0, 9.0], [1, 9.0, 8.0, 3.0, 2.0],
                 [0, 3.2, 2.1, 3.3, 2.2], [1, 0.0, 0.0, 16.0, 12.0], [0, 16.0, 12.0, 17.0, 14.0]], "float32")


def run_roi_align(target, data, rois, pooled, scale, mode="avg", sample_ratio=-1, aligned=False):
    D = te.placeholder(data.shape, name="data", dtype=str(data.dtype))
    R = te.placeholder(rois.shape, name="rois", dtype=str(rois.dtype))
    out = topi.vision.roi_align_nchw(D, R, pooled, scale, mode, sample_ratio, aligned)
    with tecc.target.Target(target):
        s = topi.schedule([out], target)
    (got,) = build_run(s, [D, R], [out], [data, rois], target)
    return got


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["avg", "max", "onnx_max"])
@pytest.mark.parametrize("sample_ratio, aligned", [(-1, False), (0, True), (2, False), (3, True)])
def test_roi_align(target, mode, sample_ratio, aligned):
    data = rand((2, 3, 7, 9))
    got = run_roi_align(target, data, ROIS, (3, 4), 0.5, mode, sample_ratio, aligned)
    want = T.roi_align_nchw_python(data, ROIS, (3, 4), 0.5, sample_ratio, mode, aligned)
    assert got.shape == (6, 3, 3, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("batch, channels, size, num_roi, pooled, scale, sample_ratio, mode", [
    (1, 4, 16, 12, 7, 1.0, -1, 0), (2, 4, 16, 12, 7, 0.5, 2, 1), (1, 3, 32, 10, 8, 0.0625, 2, b"avg"),
    (1, 3, 16, 10, (3, 5), 1.0, -1, b"max"),
])
def test_roi_align_of_tvm_shapes_and_mode_spellings(target, batch, channels, size, num_roi, pooled, scale,
                                                    sample_ratio, mode):
    # TVM's test draws corners over the whole map (and past it when scaled): here within [-1, size]
    data = rand((batch, channels, size, size))
    rois = rand((num_roi, 5), low=-1.0, high=size / scale)
    rois[:, 0] = np.arange(num_roi) % batch
    got = run_roi_align(target, data, rois, pooled, scale, mode, sample_ratio)
    want = T.roi_align_nchw_python(data, rois, pooled, scale, sample_ratio, mode)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["avg", "max", "onnx_max"])
def test_adaptive_grid_is_the_fixed_grid_of_its_size(mode):
    # regions of 6 x 8 map pixels in 3 x 2 bins: an adaptive grid of 2 x 4 points, the same
    # points as sample_ratio 2 along y (and unlike it along x); alike 4 x 4 regions in 2 x 2 bins
    data = rand((2, 3, 10, 12))
    rois = np.array([[0, 1.0, 2.0, 9.0, 8.0], [1, 0.5, 0.25, 8.5, 6.25]], "float32")
    adaptive = run_roi_align("llvm", data, rois, (3, 2), 1.0, mode)
    fixed = run_roi_align("llvm", data, rois, (3, 2), 1.0, mode, 2)
    assert not np.allclose(adaptive, fixed)
    squares = np.array([[0, 1.0, 2.0, 5.0, 6.0], [1, 6.5, 4.25, 10.5, 8.25]], "float32")
    np.testing.assert_allclose(run_roi_align("llvm", data, squares, (2, 2), 1.0, mode),
                               run_roi_align("llvm", data, squares, (2, 2), 1.0, mode, 2), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("target", TARGETS)
def test_regions_larger_than_the_map_sample_the_largest_grid(target):
    # a 7 x 9 map in 3 x 4 bins: at most ceil(8 / 3) = 3 x ceil(10 / 4) = 3 points per bin, the
    # grid of sample_ratio 3, for regions of more than H + 1 x W + 1 map pixels
    data = rand((1, 2, 7, 9))
    rois = np.array([[0, -20.0, -15.0, 30.0, 25.0], [0, -3.0, -3.0, 12.0, 11.0]], "float32")
    assert math.ceil((7 + 1) / 3) == math.ceil((9 + 1) / 4) == 3
    for mode in ("avg", "max"):
        np.testing.assert_allclose(run_roi_align(target, data, rois, (3, 4), 1.0, mode),
                                   run_roi_align(target, data, rois, (3, 4), 1.0, mode, 3), rtol=1e-6, atol=1e-7)


def test_roi_align_float64_float16_and_empty_bins():
    data = rand((2, 3, 7, 9), "float64")
    rois = ROIS.astype("float64")
    got = run_roi_align("llvm", data, rois, (3, 4), 0.5, "avg", -1, True)
    want = T.roi_align_nchw_python(data, rois, (3, 4), 0.5, -1, "avg", True)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    half = rand((2, 3, 7, 9), "float16")
    for target in TARGETS:  # computed in float32, then a cast stage
        got = run_roi_align(target, half, ROIS, (3, 4), 0.5, "max", 2)
        assert got.dtype == np.float16
        want = T.roi_align_nchw_python(half.astype("float32"), ROIS, (3, 4), 0.5, 2, "max")
        np.testing.assert_allclose(got, want.astype("float16"), rtol=1e-3, atol=1e-3)
    # the flipped region, aligned, has an adaptive grid of no points: its bins are 0 in every mode
    for mode in ("avg", "max", "onnx_max"):
        got = run_roi_align("llvm", rand((2, 3, 7, 9)), ROIS, (3, 4), 0.5, mode, 0, True)
        assert np.all(got[2] == 0) and np.any(got[0] != 0)


def test_roi_align_of_symbolic_sizes():
    # a symbolic number of regions (any grid), a symbolic map with a fixed grid
    r, h, w = te.var("r"), te.var("h"), te.var("w")
    D = te.placeholder((2, 3, 7, 9), name="data")
    R = te.placeholder((r, 5), name="rois")
    out = topi.vision.roi_align_nchw(D, R, (3, 4), 0.5)
    s = topi.schedule([out], "llvm")
    data = rand((2, 3, 7, 9))
    (got,) = build_run(s, [D, R], [out], [data, ROIS, len(ROIS)], "llvm", extra_args=[r])
    np.testing.assert_allclose(got, T.roi_align_nchw_python(data, ROIS, (3, 4), 0.5, -1), rtol=1e-5, atol=1e-6)
    D = te.placeholder((2, 3, h, w), name="data")
    R = te.placeholder((6, 5), name="rois")
    out = topi.vision.roi_align_nchw(D, R, 2, 0.5, "max", 2)
    s = topi.schedule([out], "llvm")
    (got,) = build_run(s, [D, R], [out], [data, ROIS, 7, 9], "llvm", extra_args=[h, w])
    np.testing.assert_allclose(got, T.roi_align_nchw_python(data, ROIS, 2, 0.5, 2, "max"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_roi_align_with_an_epilogue(target):
    # an element-wise op after it: one kernel (the reduction computed where its element is stored)
    D = te.placeholder((2, 3, 7, 9), name="data")
    R = te.placeholder((6, 5), name="rois")
    out = topi.nn.relu(topi.vision.roi_align_nchw(D, R, (3, 4), 0.5, "avg", 2))
    with tecc.target.Target(target):
        s = topi.schedule([out], target)
    data = rand((2, 3, 7, 9))
    (got,) = build_run(s, [D, R], [out], [data, ROIS], target)
    want = np.maximum(T.roi_align_nchw_python(data, ROIS, (3, 4), 0.5, 2), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_roi_align_tag_schedule_and_cubins():
    D = te.placeholder((1, 8, 16, 16), name="data")
    R = te.placeholder((5, 5), name="rois")
    out = topi.vision.roi_align_nchw(D, R, 7, 0.25, "onnx_max", -1, True)
    assert out.op.tag == "roi_align_nchw" and tuple(out.shape) == (5, 8, 7, 7)
    attrs = out.op.attrs
    assert attrs["mode"] == "onnx_max" and bool(attrs["aligned"]) and int(attrs["sample_ratio"]) == -1
    assert topi.schedule_registry.lookup(out.op.tag, "llvm") is topi.vision.roi_align.schedule_roi_align_cpu
    assert topi.schedule_registry.lookup(out.op.tag, "cuda") is topi.vision.roi_align.schedule_roi_align_cuda
    # the adaptive grid's bound: ceil((16 + 1) / 7) = 3 points per bin and axis
    assert [int(iv.dom.extent) for iv in out.op.reduce_axis] == [3, 3]
    with tecc.target.Target("llvm"):
        assert tecc.build(topi.vision.schedule_roi_align([out]), [D, R, out], "llvm") is not None
    with tecc.target.Target("cuda"):
        s = topi.vision.schedule_roi_align([out])
    src = build_all_arches(s, [D, R, out]).imported_modules[0].get_source()
    assert src.count("__global__") == 1 and "grid_h" in src


def _errors():
    data = te.placeholder((2, 3, 7, 9), name="data")
    rois = te.placeholder((4, 5), name="rois")

    def roi_align(**changes):
        args = dict(data=data, rois=rois, pooled_size=(3, 3), spatial_scale=0.5)
        args.update(changes)
        return lambda: topi.vision.roi_align_nchw(**args)

    return [
        (roi_align(data=np.zeros((2, 3, 7, 9))), TeccTypeError, r"roi_align_nchw: data must be a tensor"),
        (roi_align(rois=[[0, 1, 1, 2, 2]]), TeccTypeError, r"roi_align_nchw: rois must be a tensor"),
        (roi_align(data=te.placeholder((3, 7, 9), name="d3")), TopiError,
         r"roi_align_nchw\(data 'd3' \(3, 7, 9\).*data must be 4-D \[batch, channel, height, width\], got rank 3"),
        (roi_align(data=te.placeholder((2, 3, 7, 9), name="di", dtype="int32")), TeccTypeError,
         r"data must hold floats, got int32"),
        (roi_align(data=te.placeholder((2, 3, 0, 9), name="empty")), TopiError,
         r"the feature map is empty along its height"),
        (roi_align(rois=te.placeholder((4, 4), name="r4")), TopiError,
         r"rois must be \[num_roi, 5\] \(batch_index, x1, y1, x2, y2 of each region\), got shape \(4, 4\)"),
        (roi_align(rois=te.placeholder((4, 5), name="ri", dtype="int32")), TeccTypeError,
         r"rois must hold floats \(the batch index too, as TVM\), got int32"),
        (roi_align(mode="mean"), TopiError, r"mode 'mean' is not supported; use one of 'avg', 'max', 'onnx_max'"),
        (roi_align(pooled_size=(3, 3, 3)), TopiError, r"pooled_size must be an int or \(pooled_height, pooled_width\)"),
        (roi_align(pooled_size=(0, 3)), TopiError, r"pooled_size \(0, 3\) must be positive"),
        (roi_align(pooled_size=(2.5, 3)), TeccTypeError, r"pooled_size \(2.5, 3\) must be made of constant integers"),
        (roi_align(spatial_scale="1/16"), TeccTypeError, r"spatial_scale must be a number"),
        (roi_align(spatial_scale=0.0), TopiError, r"spatial_scale 0.0 must be positive and finite"),
        (roi_align(sample_ratio=1.5), TeccTypeError, r"sample_ratio must be an int .*got 1.5"),
        (roi_align(aligned="yes"), TeccTypeError, r"aligned must be a bool, got 'yes'"),
        (roi_align(data=te.placeholder((2, 3, te.var("h"), 9), name="dh")), TopiError,
         r"an adaptive grid \(sample_ratio -1 <= 0\) needs a static height.*pass sample_ratio > 0"),
    ]


@pytest.mark.parametrize("case", range(len(_errors())))
def test_roi_align_errors_name_the_argument_and_what_to_do(case):
    call, error, message = _errors()[case]
    with pytest.raises(error, match=message):
        call()
