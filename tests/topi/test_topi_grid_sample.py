"""topi.image.grid_sample against the numpy reference of topi.testing: every method
with every padding mode and both align_corners on "llvm", grids reaching past the
image (by several reflections) and onto its exact edges; some on "cuda" (the GPU
emulator, checked race-free and in bounds); 3-D sampling; float64; a one-pixel axis;
the schedule topi.schedule picks and the cubins NVRTC makes of it; one expected
failure per argument error."""
import itertools

import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import build_run

T = topi.testing
METHODS = ("nearest", "bilinear", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def _grid(shape, seed=0, dtype="float32"):
    """Normalized points up to 3.7 past the centre (so reflected more than once, and
    far outside), with the exact ends -1 and 1 and the centre 0 among them."""
    rng = np.random.default_rng(seed)
    g = rng.uniform(-3.7, 3.7, shape)
    g[..., :2, :] = rng.uniform(-1.2, 1.2, g[..., :2, :].shape)  # most of two rows near the image
    flat = g.reshape(-1)
    flat[:6] = [-1.0, 1.0, 0.0, 1.0, -1.0, 0.0]
    return g.astype(dtype)


def run_grid_sample(target, dshape, gshape, method, padding, align, layout="NCHW", dtype="float32"):
    A = te.placeholder(dshape, name="A", dtype=dtype)
    G = te.placeholder(gshape, name="G", dtype=dtype)
    with tecc.target.Target(target):
        B = topi.image.grid_sample(A, G, method, layout, padding, align)
        s = T.get_injective_schedule(target)([B])
    a = np.random.default_rng(1).uniform(-1, 1, dshape).astype(dtype)
    g = _grid(gshape, dtype=dtype)
    (got,) = build_run(s, [A, G], [B], [a, g], target)
    want = T.grid_sample_python(a, g, method, layout, padding, align)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    return got


@pytest.mark.parametrize("method, padding, align", list(itertools.product(METHODS, PADDINGS, (False, True))))
def test_grid_sample_2d(method, padding, align):
    run_grid_sample("llvm", (2, 3, 5, 7), (2, 2, 4, 6), method, padding, align)


@pytest.mark.parametrize("method, padding, align", [("nearest", "reflection", True), ("bilinear", "zeros", False),
                                                    ("bicubic", "border", False), ("bicubic", "reflection", True)])
def test_grid_sample_2d_on_the_gpu_emulator(method, padding, align):
    run_grid_sample("cuda", (1, 2, 4, 5), (1, 2, 3, 4), method, padding, align)


@pytest.mark.parametrize("method, padding, align", list(itertools.product(("nearest", "bilinear"), PADDINGS,
                                                                          (False, True))))
def test_grid_sample_3d(method, padding, align):
    run_grid_sample("llvm", (1, 2, 3, 4, 5), (1, 3, 2, 3, 4), method, padding, align, layout="NCDHW")


def test_grid_sample_float64_computes_in_float64():
    run_grid_sample("llvm", (1, 2, 4, 6), (1, 2, 3, 5), "bicubic", "reflection", False, dtype="float64")


@pytest.mark.parametrize("method", METHODS)
def test_grid_sample_of_a_one_pixel_axis_reads_that_pixel(method):
    # with align_corners the extent of one pixel has length 0: reflection cannot
    # divide by it, every point reads the pixel (zeros: the points at its centre)
    got = run_grid_sample("llvm", (1, 1, 1, 4), (1, 2, 3, 3), method, "reflection", True)
    assert np.isfinite(got).all()


def test_grid_sample_is_injective_and_scheduled_as_such():
    A = te.placeholder((1, 2, 4, 4), name="A")
    G = te.placeholder((1, 2, 3, 3), name="G")
    B = topi.image.grid_sample(A, G)
    assert B.op.tag == "injective,grid_sample" and tuple(B.shape) == (1, 2, 3, 3)
    assert B.op.attrs["method"] == "bilinear" and B.op.attrs["align_corners"] == 1
    with tecc.target.Target("llvm"):
        s = topi.schedule([B], "llvm")
    assert tecc.build(s, [A, G, B], "llvm") is not None


@pytest.mark.parametrize("method, padding", [("bicubic", "reflection"), ("bilinear", "zeros")])
def test_grid_sample_compiles_for_the_gpu(method, padding):
    # the values the taps share are Lets: NVRTC takes them as immediately invoked lambdas
    A = te.placeholder((1, 2, 4, 5), name="A")
    G = te.placeholder((1, 2, 3, 4), name="G")
    with tecc.target.Target("cuda"):
        B = topi.image.grid_sample(A, G, method, "NCHW", padding, False)
        s = topi.schedule([B], "cuda")
    src = build_all_arches(s, [A, G, B]).imported_modules[0].get_source()
    assert src.count("__global__") == 1 and "_floor" in src


def test_grid_sample_refuses_bad_arguments_naming_the_fix():
    A = te.placeholder((2, 3, 5, 7), name="A")
    G = te.placeholder((2, 2, 4, 6), name="G")
    with pytest.raises(TopiError, match=r"grid_sample\(data 'A' \(2, 3, 5, 7\).*method 'linear' is not supported; "
                                        r"use one of 'nearest', 'bilinear', 'bicubic'"):
        topi.image.grid_sample(A, G, "linear")
    with pytest.raises(TopiError, match="padding_mode 'edge' is not supported"):
        topi.image.grid_sample(A, G, padding_mode="edge")
    with pytest.raises(TopiError, match="layout 'NHWC' is not supported; use one of 'NCHW', 'NCDHW'"):
        topi.image.grid_sample(A, G, layout="NHWC")
    onnx_grid = te.placeholder((2, 4, 6, 2), name="onnx_grid")
    with pytest.raises(TopiError, match=r"axis 1 of the grid holds the 2 coordinates.*goes through a transpose"):
        topi.image.grid_sample(A, onnx_grid)
    with pytest.raises(TopiError, match="the data has batch 2 and the grid 3"):
        topi.image.grid_sample(A, te.placeholder((3, 2, 4, 6), name="G3"))
    with pytest.raises(TopiError, match="data has rank 4 but layout 'NCDHW' needs rank 5"):
        topi.image.grid_sample(A, te.placeholder((2, 3, 1, 4, 6), name="G5"), layout="NCDHW")
    A5 = te.placeholder((1, 2, 3, 4, 5), name="A5")
    with pytest.raises(TopiError, match="bicubic sampling is 2-D only"):
        topi.image.grid_sample(A5, te.placeholder((1, 3, 2, 3, 4), name="G5"), "bicubic", "NCDHW")
    with pytest.raises(TeccTypeError, match="the grid must hold floats, got int32"):
        topi.image.grid_sample(A, te.placeholder((2, 2, 4, 6), name="Gi", dtype="int32"))
    with pytest.raises(TeccTypeError, match="data must be a tensor"):
        topi.image.grid_sample(np.zeros((2, 3, 5, 7)), G)
