"""topi.image.crop_and_resize and topi.image.affine_grid (TVM's) against the numpy
references of topi.testing: both layouts and methods on "llvm" and "cuda" (the GPU
emulator, checked race-free and in bounds), boxes reaching past the image and
flipped, one-pixel crops, the blocked NCHW<x>c layout, float64, a symbolic crop
size; affine grids sampled by grid_sample; the schedule topi.schedule picks and the
cubins NVRTC makes of it; one expected failure per argument error."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand

T = topi.testing

#: y1, x1, y2, x2: inside, reaching past every edge, flipped, one corner exactly on the last pixel
BOXES = np.array([[0.2, 0.3, 0.7, 0.9], [-0.4, -0.2, 1.3, 1.1], [0.9, 0.8, 0.1, 0.0], [0.0, 0.5, 1.0, 1.0]],
                 "float32")


def run_crop_and_resize(target, image_shape, crop_size, layout, method, extrapolation_value=None, dtype="float32",
                        boxes=BOXES, out_dtype=None):
    images = te.placeholder(image_shape, name="images", dtype=dtype)
    B = te.placeholder(boxes.shape, name="boxes", dtype=str(boxes.dtype))
    I = te.placeholder((len(boxes),), name="box_ind", dtype="int32")
    out = topi.image.crop_and_resize(images, B, I, crop_size, layout, method, extrapolation_value, out_dtype)
    with tecc.target.Target(target):
        s = T.get_injective_schedule(target)([out])
    image = rand(image_shape, dtype, 0, 1)
    box_ind = np.arange(len(boxes), dtype="int32") % image_shape[0]
    (got,) = build_run(s, [images, B, I], [out], [image, boxes, box_ind], target)
    return image, box_ind, got


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("method", ["bilinear", "nearest_neighbor"])
def test_crop_and_resize(target, layout, method):
    shape = (2, 5, 7, 3) if layout == "NHWC" else (2, 3, 5, 7)
    for crop_size, extrapolation in (((4, 6), 0.25), ((1, 3), None)):  # a one-row crop reads the box's centre row
        image, box_ind, got = run_crop_and_resize(target, shape, crop_size, layout, method, extrapolation)
        want = T.crop_and_resize_python(image, BOXES, box_ind, crop_size, layout, method, extrapolation)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_crop_and_resize_blocked_layout_float64_and_out_dtype():
    image, box_ind, got = run_crop_and_resize("llvm", (2, 2, 5, 6, 4), (3, 4), "NCHW4c", "bilinear", 0.5)
    nchw = T.layout_transform_python(image, "NCHW4c", "NCHW")
    want = T.crop_and_resize_python(nchw, BOXES, box_ind, (3, 4), "NCHW", "bilinear", 0.5)
    np.testing.assert_allclose(got, T.layout_transform_python(want, "NCHW", "NCHW4c"), rtol=1e-5, atol=1e-6)
    image, box_ind, got = run_crop_and_resize("llvm", (2, 6, 5, 2), (4, 3), "NHWC", "bilinear", -1.0, "float64",
                                              BOXES.astype("float64"))
    want = T.crop_and_resize_python(image, BOXES.astype("float64"), box_ind, (4, 3), "NHWC", "bilinear", -1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    image, box_ind, got = run_crop_and_resize("llvm", (2, 6, 5, 2), (4, 3), "NHWC", "nearest_neighbor",
                                              out_dtype="float16")
    assert got.dtype == np.float16
    want = T.crop_and_resize_python(image, BOXES, box_ind, (4, 3), "NHWC", "nearest_neighbor")
    np.testing.assert_allclose(got, want.astype("float16"))


def test_crop_and_resize_of_a_symbolic_crop_size():
    h = te.var("h")
    images = te.placeholder((1, 2, 6, 6), name="images")
    B = te.placeholder((2, 4), name="boxes")
    I = te.placeholder((2,), name="box_ind", dtype="int32")
    out = topi.image.crop_and_resize(images, B, I, (h, 3), extrapolation_value=0.5)
    s = T.get_injective_schedule("llvm")([out])
    image, box_ind = rand((1, 2, 6, 6)), np.zeros(2, "int32")
    for rows in (1, 4):
        (got,) = build_run(s, [images, B, I], [out], [image, BOXES[:2], box_ind, rows], "llvm", extra_args=[h])
        want = T.crop_and_resize_python(image, BOXES[:2], box_ind, (rows, 3), "NCHW", "bilinear", 0.5)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_crop_and_resize_is_injective_and_compiles_for_the_gpu():
    images = te.placeholder((1, 3, 8, 8), name="images")
    B = te.placeholder((2, 4), name="boxes")
    I = te.placeholder((2,), name="box_ind", dtype="int32")
    out = topi.image.crop_and_resize(images, B, I, (3, 3))
    assert out.op.tag == "injective,crop_and_resize" and tuple(out.shape) == (2, 3, 3, 3)
    assert out.op.attrs["method"] == "bilinear" and out.op.attrs["layout"] == "NCHW"
    with tecc.target.Target("llvm"):
        assert tecc.build(topi.schedule([out], "llvm"), [images, B, I, out], "llvm") is not None
    # the coordinates and floors the taps share are Lets (lambdas in the CUDA source)
    with tecc.target.Target("cuda"):
        s = topi.schedule([out], "cuda")
    src = build_all_arches(s, [images, B, I, out]).imported_modules[0].get_source()
    assert src.count("__global__") == 1 and "in_y" in src


@pytest.mark.parametrize("target", TARGETS)
def test_affine_grid(target):
    for batch, size, dtype in ((2, (4, 5), "float32"), (1, (1, 3), "float32"), (3, (3, 2), "float64")):
        theta = te.placeholder((batch, 2, 3), name="theta", dtype=dtype)
        grid = topi.image.affine_grid(theta, size)
        assert grid.op.tag == "injective,affine_grid" and grid.dtype == dtype
        with tecc.target.Target(target):
            s = T.get_injective_schedule(target)([grid])
        t = rand((batch, 2, 3), dtype)
        (got,) = build_run(s, [theta], [grid], [t], target)
        want = T.affine_grid_python(t, size)
        assert got.shape == (batch, 2) + size
        tol = 1e-12 if dtype == "float64" else 1e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_affine_grid_sampled_by_grid_sample():
    # a spatial transformer: the identity reads the image back, a flip of x mirrors it
    theta = te.placeholder((2, 2, 3), name="theta")
    data = te.placeholder((2, 3, 5, 6), name="data")
    out = topi.image.grid_sample(data, topi.image.affine_grid(theta, (5, 6)), "bilinear", align_corners=True)
    with tecc.target.Target("llvm"):
        s = topi.schedule([out], "llvm")
    t = np.array([[[1, 0, 0], [0, 1, 0]], [[-1, 0, 0], [0, 1, 0]]], "float32")
    image = rand((2, 3, 5, 6))
    (got,) = build_run(s, [theta, data], [out], [t, image], "llvm")
    np.testing.assert_allclose(got[0], image[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], image[1, :, :, ::-1], rtol=1e-5, atol=1e-6)


def _errors():
    images = te.placeholder((2, 5, 7, 3), name="images")
    boxes = te.placeholder((4, 4), name="boxes")
    ind = te.placeholder((4,), name="ind", dtype="int32")
    theta = te.placeholder((2, 2, 3), name="theta")

    def crop(**changes):
        args = dict(data=images, boxes=boxes, box_indices=ind, crop_size=(3, 3), layout="NHWC")
        args.update(changes)
        return lambda: topi.image.crop_and_resize(**args)

    return [
        (crop(layout="HWNC"), TopiError, r"layout 'HWNC' is not supported; use 'NCHW', 'NHWC' or a blocked"),
        (crop(layout="NCHW4c"), TopiError, r"data has rank 4 but layout 'NCHW4c' needs rank 5"),
        (crop(data=te.placeholder((2, 2, 5, 7, 3), name="blocked"), layout="NCHW4c"), TopiError,
         r"the last axis of 'NCHW4c' data holds blocks of 4 channels, but has size 3"),
        (crop(method="bicubic"), TopiError, r"method 'bicubic' is not supported; use one of 'bilinear', "
                                            r"'nearest_neighbor'"),
        (crop(boxes=te.placeholder((4, 2), name="b2")), TopiError, r"boxes must be \[num_boxes, 4\]"),
        (crop(boxes=te.placeholder((4, 4), name="bi", dtype="int32")), TeccTypeError, r"boxes must hold floats"),
        (crop(box_indices=te.placeholder((4,), name="fi")), TeccTypeError, r"box_indices must hold integers"),
        (crop(box_indices=te.placeholder((4, 1), name="i2", dtype="int32")), TopiError,
         r"box_indices must be 1-D \[num_boxes\]"),
        (crop(box_indices=te.placeholder((3,), name="i3", dtype="int32")), TopiError,
         r"there are 4 boxes but 3 box_indices"),
        (crop(crop_size=(3,)), TopiError, r"crop_size must be \(crop_height, crop_width\)"),
        (crop(crop_size=(0, 3)), TopiError, r"crop_size \(0, 3\) must be positive"),
        (crop(crop_size=(2.5, 3)), TeccTypeError, r"crop_size \(2.5, 3\) must be made of integers"),
        (crop(data=te.placeholder((2, 0, 7, 3), name="empty")), TopiError, r"the images are empty along H"),
        (crop(data=np.zeros((2, 5, 7, 3))), TeccTypeError, r"crop_and_resize: data must be a tensor"),
        (lambda: topi.image.affine_grid(te.placeholder((2, 3, 4), name="t3"), (4, 4)), TopiError,
         r"affine_grid\(data 't3' \(2, 3, 4\).*data must be \[batch, 2, 3\]"),
        (lambda: topi.image.affine_grid(te.placeholder((2, 2, 3), name="ti", dtype="int32"), (4, 4)), TeccTypeError,
         r"data must hold floats, got int32"),
        (lambda: topi.image.affine_grid(theta, (4, 4, 4)), TopiError, r"target_shape must be \(height, width\)"),
        (lambda: topi.image.affine_grid(theta, (0, 4)), TopiError,
         r"target_shape must be two positive integers, got \(0, 4\)"),
        (lambda: topi.image.affine_grid(np.eye(2, 3), (4, 4)), TeccTypeError, r"affine_grid: data must be a tensor"),
    ]


@pytest.mark.parametrize("case", range(len(_errors())))
def test_image_op_errors_name_the_argument_and_what_to_do(case):
    call, error, message = _errors()[case]
    with pytest.raises(error, match=message):
        call()
