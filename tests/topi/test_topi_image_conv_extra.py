"""Image resizing (topi.image.resize1d / resize2d, topi.nn.upsampling), the NHWC
depthwise convolution and the grouped transposed convolution: TE computes against
the numpy references of topi.testing on "llvm" and "cuda" (the GPU emulator,
checked race-free), the resize semantics against onnxruntime's Resize, the
schedules topi.schedule picks, and one expected failure per attribute error."""
import logging
import warnings

import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand

T = topi.testing
logging.getLogger("tecc.autotvm").setLevel(logging.ERROR)  # "no tuned config ... fallback"

MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
         "tf_crop_and_resize"]
ROI2 = [0.1, 0.05, 0.8, 1.15]  # [start_h, start_w, end_h, end_w]: some outputs fall outside the image


def tol(dtype):
    return dict(rtol=1e-2, atol=1e-2) if dtype == "float16" else dict(rtol=1e-5, atol=1e-5)


def run_resize(target, dshape, dtype, make, ref_args, ref=None):
    """Declare ``make(A)``, schedule it with topi.testing's resize schedule for
    ``target``, run it and compare with ``ref(a, *ref_args)``."""
    A = te.placeholder(dshape, name="A", dtype=dtype)
    with tecc.target.Target(target):
        B = make(A)
        s = T.get_resize_schedule(target)([B])
    a = rand(dshape, dtype)
    (got,) = build_run(s, [A], [B], [a], target)
    want = (ref or T.resize2d_python)(a, *ref_args)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), **tol(dtype))
    return got


# ------------------------------------------------------------------------------ resize2d

def _resize2d_cases():
    """(layout, data shape (N, C, H, W), size, method, mode, rounding, on cuda): every
    method with every mode on llvm, odd and prime sizes, up and down, batch 1 and 2;
    a few on cuda."""
    shapes = [(1, 2, 5, 7), (2, 3, 7, 4), (1, 1, 6, 6)]
    sizes = [(9, 4), (3, 11), (12, 12), (1, 5)]
    cases = []
    k = 0
    for method in ("nearest_neighbor", "linear", "cubic"):
        for mode in MODES:
            layout = "NCHW" if k % 2 == 0 else "NHWC"
            cases.append((layout, shapes[k % 3], sizes[k % 4], method, mode, "", k in (1, 8, 14, 17)))
            k += 1
    # every rounding on the exact (integer) path and on the float one (tf_crop_and_resize)
    for i, rounding in enumerate(("round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")):
        for mode in (("half_pixel", "align_corners", "asymmetric")[i % 3], "tf_crop_and_resize"):
            cases.append(("NCHW", (1, 2, 4, 6), (7, 9), "nearest_neighbor", mode, rounding, False))
    return cases


def _params(cases):
    out = []
    for i, (layout, shape, size, method, mode, rounding, on_cuda) in enumerate(cases):
        for target in TARGETS:
            if target == "llvm" or on_cuda:
                out.append(pytest.param(target, layout, shape, size, method, mode, rounding,
                                        id=f"{target}-{i}-{layout}-{method}-{mode}-{rounding or 'default'}"))
    return out


@pytest.mark.parametrize("target, layout, nchw, size, method, mode, rounding", _params(_resize2d_cases()))
def test_resize2d(target, layout, nchw, size, method, mode, rounding):
    dshape = nchw if layout == "NCHW" else (nchw[0], nchw[2], nchw[3], nchw[1])
    run_resize(target, dshape, "float32",
               lambda A: topi.image.resize2d(A, ROI2, size, layout, method, mode, rounding, extrapolation_value=-2.0),
               (None, layout, method, mode, rounding, size, ROI2, -0.5, 0, -2.0))


@pytest.mark.parametrize("target", TARGETS)
def test_resize2d_cubic_alpha_exclude_and_out_dtype(target):
    # ONNX's / PyTorch's coefficient, the weights outside the image dropped, a float64 result
    run_resize(target, (1, 2, 4, 5), "float32",
               lambda A: topi.image.resize2d(A, [0.0] * 4, (7, 3), "NCHW", "cubic", "half_pixel", bicubic_alpha=-0.75,
                                             bicubic_exclude=1, out_dtype="float64"),
               (None, "NCHW", "cubic", "half_pixel", "", (7, 3), None, -0.75, 1, 0.0, "float64"))


@pytest.mark.parametrize("target, method", [("llvm", "linear"), ("llvm", "cubic"), ("cuda", "linear"),
                                            ("cuda", "nearest_neighbor")])
def test_resize2d_float16(target, method):
    run_resize(target, (2, 5, 6, 3), "float16",
               lambda A: topi.image.resize2d(A, [0.0] * 4, (9, 7), "NHWC", method, "align_corners"),
               (None, "NHWC", method, "align_corners", "", (9, 7)))


def test_resize2d_uint8_nearest_and_whole_output_sizes():
    # an image of bytes, nearest neighbour: an exact copy of some pixels; a size given as float 8.0
    got = run_resize("llvm", (1, 3, 5, 4), "uint8",
                     lambda A: topi.image.resize2d(A, [0.0] * 4, (8.0, 7), "NCHW", "nearest_neighbor", "asymmetric"),
                     (None, "NCHW", "nearest_neighbor", "asymmetric", "", (8, 7)))
    assert got.dtype == np.uint8


def test_resize2d_scale_form_of_the_reference_is_tvms():
    # TVM's reference signature: a scale, the output round(in * scale)
    a = rand((1, 2, 4, 6))
    by_scale = T.resize2d_python(a, (1.5, 0.5), "NCHW", "linear", "asymmetric")
    by_size = T.resize2d_python(a, None, "NCHW", "linear", "asymmetric", size=(6, 3))
    np.testing.assert_array_equal(by_scale, by_size)


def test_resize_nearest_index_is_exact_at_whole_and_half_coordinates():
    # 3 -> 7 asymmetric: x * 3 / 7 never a whole number but at 0 and 7; 2 -> 6: whole every third pixel,
    # where float32 arithmetic alone may land just below it; align_corners 3 -> 5 gives exact halves
    for size_in, size_out, mode, rounding, want in [
        (2, 6, "asymmetric", "floor", [0, 0, 0, 1, 1, 1]),
        (2, 6, "asymmetric", "ceil", [0, 1, 1, 1, 1, 1]),  # ceil(4 / 3) = 2, clamped to the image
        (3, 5, "align_corners", "round", [0, 1, 1, 2, 2]),
        (3, 5, "align_corners", "round_prefer_floor", [0, 0, 1, 1, 2]),
        (3, 5, "align_corners", "round_prefer_ceil", [0, 1, 1, 2, 2]),
    ]:
        A = te.placeholder((1, 1, size_in), name="A", dtype="int32")
        B = topi.image.resize1d(A, [0.0, 0.0], (size_out,), "NCW", "nearest_neighbor", mode, rounding)
        s = topi.schedule(B, "llvm")
        (got,) = build_run(s, [A], [B], [np.arange(size_in, dtype="int32").reshape(1, 1, -1)], "llvm")
        assert got.ravel().tolist() == want, (size_in, size_out, mode, rounding)
        ref = T.resize1d_python(np.arange(size_in, dtype="int32").reshape(1, 1, -1), None, "NCW",
                                "nearest_neighbor", mode, rounding, size=(size_out,))
        assert ref.ravel().tolist() == want


def test_resize2d_symbolic_output_size():
    oh, ow = te.var("oh"), te.var("ow")
    A = te.placeholder((1, 2, 5, 6), name="A")
    B = topi.image.resize2d(A, [0.0] * 4, (oh, ow), "NCHW", "linear", "align_corners")
    s = topi.schedule(B, "llvm")
    a = rand((1, 2, 5, 6))
    (got,) = build_run(s, [A], [B], [a, 4, 9], "llvm", extra_args=[oh, ow])
    np.testing.assert_allclose(got, T.resize2d_python(a, None, "NCHW", "linear", "align_corners", size=(4, 9)),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ resize1d

@pytest.mark.parametrize("target, layout, method, mode", [
    ("llvm", "NCW", "linear", "half_pixel"),
    ("llvm", "NWC", "nearest_neighbor", "tf_crop_and_resize"),
    ("llvm", "NCW", "cubic", "pytorch_half_pixel"),
    ("cuda", "NWC", "cubic", "align_corners"),
    ("cuda", "NCW", "nearest_neighbor", "half_pixel"),
])
def test_resize1d(target, layout, method, mode):
    shape = (2, 3, 7) if layout == "NCW" else (2, 7, 3)
    roi = [-0.15, 0.9]
    run_resize(target, shape, "float32",
               lambda A: topi.image.resize1d(A, roi, (11,), layout, method, mode, extrapolation_value=0.5),
               (None, layout, method, mode, "", (11,), roi, -0.5, 0, 0.5), ref=T.resize1d_python)


# ------------------------------------------------------------------------------ upsampling

@pytest.mark.parametrize("target, layout, scale, method, align_corners", [
    ("llvm", "NCHW", (2, 2), "nearest_neighbor", False),
    ("llvm", "NHWC", (1.5, 3), "bilinear", False),
    ("llvm", "NCHW", (2, 0.5), "bilinear", True),
    ("llvm", "NHWC", (2.5, 2), "bicubic", False),
    ("llvm", "NCHW", (3, 1.7), "nearest_neighbor", True),
    ("cuda", "NCHW", (2, 2), "bilinear", True),
    ("cuda", "NHWC", (1.5, 2), "nearest_neighbor", False),
])
def test_upsampling(target, layout, scale, method, align_corners):
    shape = (2, 3, 5, 4) if layout == "NCHW" else (2, 5, 4, 3)
    run_resize(target, shape, "float32",
               lambda A: topi.nn.upsampling(A, scale[0], scale[1], layout, method, align_corners),
               (scale, layout, method, align_corners), ref=T.upsampling_python)


def test_upsampling_output_shape():
    A = te.placeholder((1, 2, 3, 5), name="A")
    B = topi.nn.upsampling(A, 2, 2, "NCHW", "nearest_neighbor", output_shape=(1, 2, 6, 10))
    assert tuple(int(d) for d in B.shape) == (1, 2, 6, 10)
    s = topi.schedule(B, "llvm")
    a = rand((1, 2, 3, 5))
    (got,) = build_run(s, [A], [B], [a], "llvm")
    np.testing.assert_array_equal(got, a.repeat(2, axis=2).repeat(2, axis=3))


@pytest.mark.parametrize("target", TARGETS)
def test_upsampling_symbolic_input_height(target):
    n = te.var("n")
    A = te.placeholder((1, 3, n, 5), name="A")
    B = topi.nn.upsampling(A, 2, 2, "NCHW", "nearest_neighbor")  # height n * 2: integer math, launchable
    f = tecc.build(topi.schedule(B, target), [A, B], target)
    a = rand((1, 3, 4, 5))
    want = T.upsampling_python(a, (2, 2), "NCHW", "nearest_neighbor")
    got = np.zeros(want.shape, "float32")
    if target == "cuda":
        assert f.check(a, got) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(a, got)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------ schedules

@pytest.mark.parametrize("target", TARGETS)
def test_resize_schedule_picked_by_topi_schedule_with_an_epilogue(target):
    from tecc.topi import schedule_registry as reg

    module = topi.x86 if target == "llvm" else topi.cuda
    assert reg.lookup("injective,resize", target) is module.schedule_resize
    assert reg.lookup("injective,pad", target) is module.schedule_injective
    A = te.placeholder((2, 4, 5, 3), name="A")
    R = topi.image.resize2d(topi.cast(A, "float32"), [0.0] * 4, (7, 6), "NHWC", "linear", "half_pixel")
    out = topi.nn.relu(R)
    s = topi.schedule(out, target)
    attach = {st.op.name: st.attach_type for st in s.stages}
    # the resize and the cast inlined into the relu; the tables once per position at the root on
    # the CPU, per thread in registers on CUDA
    assert attach["resize"] == attach["T_cast"] == te.AttachType.INLINE
    tables = {n: a for n, a in attach.items() if n.startswith("resize_")}
    assert "resize_index0_w" in tables and "resize_weight1_h" in tables
    want_attach = te.AttachType.ROOT if target == "llvm" else te.AttachType.SCOPE
    assert set(tables.values()) == {want_attach}
    a = rand((2, 4, 5, 3))
    (got,) = build_run(s, [A], [out], [a], target)
    want = np.maximum(T.resize2d_python(a, None, "NHWC", "linear", "half_pixel", size=(7, 6)), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_with_tvms_plain_schedules():
    # what TVM's tests do: the injective schedule, or a bare create_schedule (every table a loop of its own)
    A = te.placeholder((1, 3, 4, 5), name="A")
    a = rand((1, 3, 4, 5))
    want = T.resize2d_python(a, None, "NCHW", "cubic", "half_pixel", size=(6, 7))
    for make in (lambda B: te.create_schedule(B.op), lambda B: topi.generic.schedule_resize(B),
                 lambda B: topi.x86.schedule_injective(B)):
        B = topi.image.resize2d(A, [0.0] * 4, (6, 7), method="cubic")
        with tecc.target.Target("llvm"):
            s = make(B)
        (got,) = build_run(s, [A], [B], [a], "llvm")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["resize_cubic_nchw", "upsampling_nhwc", "depthwise_nhwc", "group_transpose"])
def test_new_cuda_schedules_verify_for_sm80_and_sm90(case):
    """Realistic sizes through the CUDA pipeline's verifier (threads, shared memory)
    and NVRTC for both architectures."""
    if case == "resize_cubic_nchw":
        A = te.placeholder((2, 16, 33, 47), name="A")
        out = topi.image.resize2d(A, [0.0] * 4, (64, 96), "NCHW", "cubic", "half_pixel", bicubic_exclude=1)
        args = [A, out]
    elif case == "upsampling_nhwc":
        A = te.placeholder((1, 28, 28, 64), name="A", dtype="float16")
        out = topi.nn.relu(topi.nn.upsampling(A, 2, 2, "NHWC", "bilinear", True))
        args = [A, out]
    elif case == "depthwise_nhwc":
        A, Wt = te.placeholder((2, 28, 28, 64), name="A"), te.placeholder((3, 3, 64, 1), name="W")
        with tecc.target.Target("cuda"):
            out = topi.nn.relu(topi.cuda.depthwise_conv2d_nhwc(A, Wt, 2, 1, 1))
        args = [A, Wt, out]
    else:
        A, Wt = te.placeholder((1, 32, 14, 14), name="A"), te.placeholder((32, 8, 4, 4), name="W")
        with tecc.target.Target("cuda"):
            out = topi.cuda.group_conv2d_transpose_nchw(A, Wt, 2, 1, None, (0, 0), 4)
        args = [A, Wt, out]
    s = topi.schedule(out, "cuda")
    mod = build_all_arches(s, args)
    src = mod.imported_modules[0].get_source()
    assert src.count("__global__") == 1
    if case in ("depthwise_nhwc", "group_transpose"):
        assert "__shared__" in src and "__syncthreads()" in src


# ------------------------------------------------------------------------------ onnxruntime

def _ort_resize(x, sizes, mode, ctm, nearest_mode, cubic_a, exclude, roi, extrapolation):
    from onnx import TensorProto, helper
    import onnxruntime as ort

    roi = list(roi) if roi is not None else []
    inits = [helper.make_tensor("roi", TensorProto.FLOAT, [len(roi)], roi),
             helper.make_tensor("scales", TensorProto.FLOAT, [0], []),
             helper.make_tensor("sizes", TensorProto.INT64, [len(sizes)], list(sizes))]
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm, cubic_coeff_a=cubic_a, exclude_outside=exclude,
                 extrapolation_value=extrapolation)
    if mode == "nearest":
        attrs["nearest_mode"] = nearest_mode
    node = helper.make_node("Resize", ["X", "roi", "scales", "sizes"], ["Y"], **attrs)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x})[0]


ORT_CASES = [
    # ONNX mode, coordinate mode, nearest mode, cubic a, exclude_outside, size
    ("nearest", "asymmetric", "floor", -0.75, 0, (10, 14)),
    ("nearest", "half_pixel", "round_prefer_floor", -0.75, 0, (8, 3)),
    ("nearest", "align_corners", "round_prefer_ceil", -0.75, 0, (9, 13)),
    ("nearest", "pytorch_half_pixel", "ceil", -0.75, 0, (1, 11)),
    ("nearest", "tf_crop_and_resize", "round_prefer_floor", -0.75, 0, (4, 9)),
    ("linear", "half_pixel", "", -0.75, 0, (3, 12)),
    ("linear", "align_corners", "", -0.75, 0, (9, 5)),
    ("linear", "pytorch_half_pixel", "", -0.75, 0, (1, 10)),
    ("linear", "asymmetric", "", -0.75, 0, (8, 8)),
    ("linear", "tf_crop_and_resize", "", -0.75, 0, (4, 9)),
    ("cubic", "half_pixel", "", -0.75, 0, (9, 4)),
    ("cubic", "half_pixel", "", -0.5, 1, (3, 11)),
    ("cubic", "align_corners", "", -0.75, 1, (8, 9)),
    ("cubic", "asymmetric", "", -0.5, 0, (10, 3)),
    ("cubic", "tf_crop_and_resize", "", -0.75, 0, (4, 9)),
]


def test_resize2d_matches_onnxruntime():
    """ONNX's Resize (opset 13) in onnxruntime against the numpy reference for every
    case, and against the compute for one case per method (the semantics torch's
    nn.Upsample / F.interpolate export; the compute is checked against the reference
    everywhere else)."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    shape = (1, 2, 5, 7)
    A = te.placeholder(shape, name="A")
    x = rand(shape)
    for k, (mode, ctm, nearest_mode, cubic_a, exclude, size) in enumerate(ORT_CASES):
        roi = ROI2 if ctm == "tf_crop_and_resize" else None
        onnx_roi = [0, 0, ROI2[0], ROI2[1], 1, 1, ROI2[2], ROI2[3]] if roi else None
        want = _ort_resize(x, (1, 2) + size, mode, ctm, nearest_mode or "floor", cubic_a, exclude, onnx_roi, -1.0)
        method = {"nearest": "nearest_neighbor"}.get(mode, mode)
        case = (mode, ctm, nearest_mode, size)
        ref = T.resize2d_python(x, None, "NCHW", method, ctm, nearest_mode, size, roi, cubic_a, exclude, -1.0)
        np.testing.assert_allclose(ref, want, rtol=1e-5, atol=1e-5, err_msg=str(case))
        if k in (4, 5, 12):
            B = topi.image.resize2d(A, roi or [0.0] * 4, size, "NCHW", method, ctm, nearest_mode, cubic_a, exclude,
                                    -1.0)
            (got,) = build_run(topi.schedule(B, "llvm"), [A], [B], [x], "llvm")
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(case))


# ------------------------------------------------------------------------------ depthwise_conv2d_nhwc

DEPTHWISE_CASES = [
    # (N, H, W, C), (KH, KW, M), stride, padding, dilation, kernel_layout, on cuda
    ((1, 7, 7, 5), (3, 3, 1), 1, "SAME", 1, "HWOI", True),         # prime sizes
    ((2, 9, 8, 4), (3, 3, 2), 2, 1, 1, "HWOI", True),              # batch 2, multiplier 2, stride 2
    ((1, 11, 10, 3), (3, 2, 1), (1, 2), (1, 0, 2, 1), 2, "HWIO", False),  # 4-sided padding, dilation, HWIO
    ((2, 6, 13, 17), (5, 5, 1), 1, "VALID", 1, "HWOI", False),
    ((1, 8, 8, 32), (3, 3, 1), 1, 1, 1, "HWOI", True),             # whole channel vectors
]


def _depthwise_params():
    out = []
    for i, case in enumerate(DEPTHWISE_CASES):
        for target in TARGETS:
            if target == "llvm" or case[-1]:
                out.append(pytest.param(target, *case[:-1], id=f"{target}-{i}"))
    return out


@pytest.mark.parametrize("target, dshape, kshape, stride, padding, dilation, kernel_layout", _depthwise_params())
def test_depthwise_conv2d_nhwc(target, dshape, kshape, stride, padding, dilation, kernel_layout):
    N, H, W, C = dshape
    KH, KW, M = kshape
    wshape = (KH, KW, C, M) if kernel_layout == "HWOI" else (KH, KW, M, C)
    A, Wt = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    compute, schedule = T.get_depthwise_conv2d_nhwc_implement(target)
    with tecc.target.Target(target):
        conv = compute(A, Wt, stride, padding, dilation, kernel_layout)
        s = schedule([conv])
    assert conv.op.tag == "depthwise_conv2d_nhwc"
    a, w = rand(dshape), rand(wshape)
    (got,) = build_run(s, [A, Wt], [conv], [a, w], target)
    want = T.depthwise_conv2d_python_nhwc(a, w, stride, padding, dilation, kernel_layout=kernel_layout)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_depthwise_conv2d_nhwc_bias_relu_epilogue_and_tvm_call_form(target):
    # TVM's test calls compute(Input, Filter, stride, padding, dilation, out_dtype): the dtype lands where
    # kernel_layout is, and TVM reads it as the default layout
    A, Wt, B = te.placeholder((1, 6, 5, 8), name="A"), te.placeholder((3, 3, 8, 1), name="W"), \
        te.placeholder((8,), name="B")
    compute, schedule = T.get_depthwise_conv2d_nhwc_implement(target)
    with tecc.target.Target(target):
        conv = compute(A, Wt, (1, 1), (1, 1), 1, "float32")
        out = topi.nn.relu(topi.add(conv, B))
        s = schedule([out])
    a, w, b = rand((1, 6, 5, 8)), rand((3, 3, 8, 1)), rand((8,))
    (got,) = build_run(s, [A, Wt, B], [out], [a, w, b], target)
    want = np.maximum(T.depthwise_conv2d_python_nhwc(a, w, 1, 1) + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_depthwise_conv2d_nhwc_float16_and_generic_schedule():
    A, Wt = te.placeholder((1, 6, 7, 8), name="A", dtype="float16"), \
        te.placeholder((3, 3, 8, 1), name="W", dtype="float16")
    conv = topi.nn.depthwise_conv2d_nhwc(A, Wt, 1, 1, 1, out_dtype="float32")
    a, w = rand((1, 6, 7, 8), "float16"), rand((3, 3, 8, 1), "float16")
    want = T.depthwise_conv2d_python_nhwc(a.astype("float32"), w.astype("float32"), 1, 1)
    for sched in (topi.x86.schedule_depthwise_conv2d_nhwc, topi.generic.schedule_depthwise_conv2d_nhwc):
        with tecc.target.Target("llvm"):
            s = sched([conv])
        (got,) = build_run(s, [A, Wt], [conv], [a, w], "llvm")
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


# ------------------------------------------------------------------------------ group_conv2d_transpose_nchw

GROUP_TRANSPOSE_CASES = [
    # data shape, kernel shape (IOHW: C, OC // groups, KH, KW), stride, padding, output_padding, groups, on cuda
    ((1, 6, 5, 5), (6, 2, 3, 3), 1, 1, (0, 0), 3, True),
    ((2, 4, 5, 4), (4, 3, 3, 3), 2, (1, 0), (1, 0), 2, True),        # batch 2, stride 2, output padding
    ((1, 9, 7, 3), (9, 1, 4, 2), (2, 3), (1, 0, 2, 1), (1, 2), 9, False),  # depthwise-like, 4-sided padding
    ((2, 4, 3, 5), (4, 5, 3, 3), 2, "SAME", (0, 1), 1, True),        # one group: conv2d_transpose_nchw
    ((1, 8, 6, 6), (8, 3, 2, 2), 2, 0, (0, 0), 4, False),
]


def _group_transpose_params():
    out = []
    for i, case in enumerate(GROUP_TRANSPOSE_CASES):
        for target in TARGETS:
            if target == "llvm" or case[-1]:
                out.append(pytest.param(target, *case[:-1], id=f"{target}-{i}"))
    return out


@pytest.mark.parametrize("target, dshape, wshape, stride, padding, output_padding, groups",
                         _group_transpose_params())
def test_group_conv2d_transpose_nchw(target, dshape, wshape, stride, padding, output_padding, groups):
    A, Wt = te.placeholder(dshape, name="A"), te.placeholder(wshape, name="W")
    compute, schedule = T.get_group_conv2d_transpose_nchw_implement(target)
    with tecc.target.Target(target):
        conv = compute(A, Wt, stride, padding, None, output_padding, groups)
        out = topi.nn.relu(conv)
        s = schedule([out])
    assert conv.op.tag == ("group_conv2d_transpose_nchw" if groups > 1 else "conv2d_transpose_nchw")
    a, w = rand(dshape), rand(wshape)
    (got,) = build_run(s, [A, Wt], [out], [a, w], target)
    want = T.conv2d_transpose_nchw_python(a, w, stride, padding, output_padding, groups)
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-4, atol=1e-4)


def test_group_conv2d_transpose_schedules_found_and_generic():
    from tecc.topi import schedule_registry as reg

    assert reg.lookup("group_conv2d_transpose_nchw", "cuda") is topi.cuda.schedule_group_conv2d_transpose_nchw
    assert reg.lookup("group_conv2d_transpose_nchw", "llvm") is topi.x86.schedule_group_conv2d_transpose_nchw
    assert reg.lookup("depthwise_conv2d_nhwc", "cuda") is topi.cuda.schedule_depthwise_conv2d_nhwc
    assert reg.lookup("depthwise_conv2d_nhwc", "llvm") is topi.x86.schedule_depthwise_conv2d_nhwc
    A, Wt = te.placeholder((1, 4, 4, 3), name="A"), te.placeholder((4, 1, 3, 3), name="W")
    conv = topi.nn.group_conv2d_transpose_nchw(A, Wt, 2, 1, None, (1, 1), 2)
    with tecc.target.Target("llvm"):
        s = topi.generic.schedule_group_conv2d_transpose_nchw([conv])
    a, w = rand((1, 4, 4, 3)), rand((4, 1, 3, 3))
    (got,) = build_run(s, [A, Wt], [conv], [a, w], "llvm")
    np.testing.assert_allclose(got, T.conv2d_transpose_nchw_python(a, w, 2, 1, (1, 1), 2), rtol=1e-4, atol=1e-4)


def test_cuda_new_convolutions_are_tunable_tasks():
    from tecc import autotvm
    from tecc.tuner.task.space import ConfigSpace

    A, Wt = te.placeholder((1, 6, 5, 8), name="A"), te.placeholder((3, 3, 8, 1), name="W")
    C = topi.cuda.depthwise_conv2d_nhwc(A, Wt, 1, 1, 1)
    assert C.op.attrs["workload"][0] == "depthwise_conv2d_nhwc.cuda"
    space = ConfigSpace()
    with autotvm.ApplyConfig(space):
        topi.cuda.schedule_depthwise_conv2d_nhwc([topi.cuda.depthwise_conv2d_nhwc(A, Wt, 1, 1, 1)])
    assert {"tile_f", "tile_y", "tile_x", "tile_ry", "tile_rx"} <= set(space.space_map)
    G, K = te.placeholder((1, 4, 5, 5), name="G"), te.placeholder((4, 2, 3, 3), name="K")
    D = topi.cuda.group_conv2d_transpose_nchw(G, K, 2, 1, None, (0, 0), 2)
    assert D.op.attrs["workload"][0] == "group_conv2d_transpose_nchw.cuda"
    space = ConfigSpace()
    with autotvm.ApplyConfig(space):
        topi.cuda.schedule_group_conv2d_transpose_nchw([topi.cuda.group_conv2d_transpose_nchw(
            G, K, 2, 1, None, (0, 0), 2)])
    assert {"tile_f", "tile_rc", "auto_unroll_max_step"} <= set(space.space_map)


def test_reference_group_transpose_is_the_adjoint_of_group_conv2d():
    # <group_conv2d(x, w), y> == <x, group_conv2d_transpose(y, w)>: the forward OIHW kernel of 2 groups,
    # (4, 6 // 2, 3, 3), is the transposed convolution's (in_channel, num_filter // groups, 3, 3)
    x, w, y = rand((1, 6, 7, 7)), rand((4, 3, 3, 3)), rand((1, 4, 4, 4))
    fwd = T.conv2d_nchw_python(x.astype("float64"), w.astype("float64"), 2, 1, 2)
    back = T.conv2d_transpose_nchw_python(y.astype("float64"), w.astype("float64"), 2, 1, (0, 0), 2)
    assert back.shape == x.shape
    np.testing.assert_allclose((fwd * y).sum(), (x * back).sum(), rtol=1e-10)


# ------------------------------------------------------------------------------ errors

A4 = te.placeholder((1, 3, 5, 7), name="A")


def test_error_resize_layout():
    with pytest.raises(TopiError, match=r"resize2d\(data 'A' \(1, 3, 5, 7\)\): layout 'NCWH' is not supported"):
        topi.image.resize2d(A4, [0.0] * 4, (4, 4), layout="NCWH")


def test_error_resize_layout_rank():
    with pytest.raises(TopiError, match=r"resize1d\(data 'A' \(1, 3, 5, 7\)\): data has rank 4 but layout 'NCW'"):
        topi.image.resize1d(A4, [0.0] * 2, (4,))


def test_error_resize_method():
    with pytest.raises(TopiError, match=r"resize2d\(.*\): method 'bilinear' is not supported; use one of "
                                        r"'nearest_neighbor', 'linear', 'cubic'"):
        topi.image.resize2d(A4, [0.0] * 4, (4, 4), method="bilinear")


def test_error_resize_coordinate_mode():
    with pytest.raises(TopiError, match=r"resize2d\(.*\): coordinate_transformation_mode 'half' is not supported"):
        topi.image.resize2d(A4, [0.0] * 4, (4, 4), coordinate_transformation_mode="half")


def test_error_resize_rounding_method():
    with pytest.raises(TopiError, match=r"resize2d\(.*\): rounding_method 'nearest' is not supported"):
        topi.image.resize2d(A4, [0.0] * 4, (4, 4), method="nearest_neighbor", rounding_method="nearest")


def test_error_resize_size_length():
    with pytest.raises(TopiError, match=r"resize2d\(data 'A' \(1, 3, 5, 7\)\): size \(4,\) has 1 entries; it must "
                                        r"have 2"):
        topi.image.resize2d(A4, [0.0] * 4, (4,))


def test_error_resize_size_not_positive():
    with pytest.raises(TopiError, match=r"resize2d\(.*\): size \(0, 4\) must be positive"):
        topi.image.resize2d(A4, [0.0] * 4, (0, 4))


def test_error_resize_size_fractional():
    with pytest.raises(TopiError, match=r"resize2d\(.*\): size \(2.5, 4\) must be made of whole numbers"):
        topi.image.resize2d(A4, [0.0] * 4, (2.5, 4))


def test_error_resize_roi_length():
    with pytest.raises(TopiError, match=r"resize2d\(.*\): roi \(0.0, 1.0\) has 2 entries; it must have 4"):
        topi.image.resize2d(A4, [0.0, 1.0], (4, 4), coordinate_transformation_mode="tf_crop_and_resize")


def test_error_resize_output_shape_rank():
    with pytest.raises(TopiError, match=r"resize2d\(.*\): output_shape \(1, 3, 4\) has 3 entries; it must have 4"):
        topi.image.resize2d(A4, [0.0] * 4, (4, 4), output_shape=(1, 3, 4))


def test_error_upsampling_layout():
    with pytest.raises(TopiError, match=r"upsampling\(data 'A' \(1, 3, 5, 7\)\): layout 'NCDHW' is not supported"):
        topi.nn.upsampling(A4, 2, 2, layout="NCDHW")


def test_error_upsampling_method():
    with pytest.raises(TopiError, match=r"upsampling\(.*\): method 'area' is not supported"):
        topi.nn.upsampling(A4, 2, 2, method="area")


def test_error_upsampling_scale():
    with pytest.raises(TopiError, match=r"upsampling\(.*\): scale_w=0 must be positive"):
        topi.nn.upsampling(A4, 2, 0)


def test_error_depthwise_nhwc_kernel_layout():
    W = te.placeholder((3, 3, 7, 1), name="W")
    with pytest.raises(TopiError, match=r"depthwise_conv2d_nhwc\(data 'A' \(1, 3, 5, 7\), kernel 'W' "
                                        r"\(3, 3, 7, 1\)\): kernel_layout 'OIHW' is not supported"):
        topi.nn.depthwise_conv2d_nhwc(A4, W, 1, 1, 1, kernel_layout="OIHW")


def test_error_depthwise_nhwc_channels():
    W = te.placeholder((3, 3, 5, 1), name="W")
    with pytest.raises(TopiError, match=r"depthwise_conv2d_nhwc\(.*\): the input has 7 channels but the filter "
                                        r"\(HWOI\) has 5"):
        topi.nn.depthwise_conv2d_nhwc(A4, W, 1, 1, 1)


def test_error_depthwise_nhwc_kernel_larger_than_padded_input():
    W = te.placeholder((5, 3, 7, 1), name="W")
    with pytest.raises(TopiError, match=r"depthwise_conv2d_nhwc\(.*\): the kernel \(dilated: 5 along H\) is larger "
                                        r"than the padded input \(3 along H"):
        topi.nn.depthwise_conv2d_nhwc(A4, W, 1, 0, 1)


def test_error_depthwise_nhwc_stride():
    W = te.placeholder((3, 3, 7, 1), name="W")
    with pytest.raises(TopiError, match=r"depthwise_conv2d_nhwc\(.*\): stride \(1, 0\) must be at least 1"):
        topi.nn.depthwise_conv2d_nhwc(A4, W, (1, 0), 1, 1)


def test_error_group_transpose_channels_not_divisible_by_groups():
    D, W = te.placeholder((1, 6, 5, 5), name="D"), te.placeholder((6, 2, 3, 3), name="W")
    with pytest.raises(TopiError, match=r"group_conv2d_transpose_nchw\(data 'D' \(1, 6, 5, 5\), kernel 'W' "
                                        r"\(6, 2, 3, 3\), groups=4\): groups=4 does not divide the 6 input channels"):
        topi.nn.group_conv2d_transpose_nchw(D, W, 1, 1, None, (0, 0), 4)


def test_error_group_transpose_kernel_channels():
    D, W = te.placeholder((1, 6, 5, 5), name="D"), te.placeholder((3, 2, 3, 3), name="W")
    with pytest.raises(TopiError, match=r"group_conv2d_transpose_nchw\(.*\): the input has 6 channels but the "
                                        r"filter expects 3; the filter must be \[in_channel, num_filter // groups"):
        topi.nn.group_conv2d_transpose_nchw(D, W, 1, 1, None, (0, 0), 3)


def test_error_group_transpose_output_padding():
    D, W = te.placeholder((1, 6, 5, 5), name="D"), te.placeholder((6, 2, 3, 3), name="W")
    with pytest.raises(TopiError, match=r"group_conv2d_transpose_nchw\(.*\): output_padding \(0, 2\) must be "
                                        r"smaller than the strides 2 \(along W\)"):
        topi.nn.group_conv2d_transpose_nchw(D, W, 2, 1, None, (0, 2), 3)


def test_error_group_transpose_groups():
    D, W = te.placeholder((1, 6, 5, 5), name="D"), te.placeholder((6, 2, 3, 3), name="W")
    with pytest.raises(TopiError, match=r"group_conv2d_transpose_nchw\(.*\): groups=0 must be an int >= 1"):
        topi.nn.group_conv2d_transpose_nchw(D, W, 1, 1, None, (0, 0), 0)


def test_error_resize_schedules_refuse_gpu_target_for_generic():
    from tecc.errors import ScheduleError

    B = topi.image.resize2d(A4, [0.0] * 4, (4, 4))
    with tecc.target.Target("cuda"):
        with pytest.raises(ScheduleError, match=r"topi.generic.schedule_resize is a CPU schedule"):
            topi.generic.schedule_resize(B)


# ------------------------------------------------------------------------------ real GPU

@pytest.mark.gpu
@pytest.mark.parametrize("case", ["resize_nchw", "resize_nhwc", "upsampling", "depthwise_nhwc", "group_transpose"])
def test_new_cuda_schedules_on_gpu(case):
    if case.startswith("resize") or case == "upsampling":
        layout = "NCHW" if case != "resize_nhwc" else "NHWC"
        shape = (2, 32, 57, 43) if layout == "NCHW" else (2, 57, 43, 32)
        A = te.placeholder(shape, name="A")
        with tecc.target.Target("cuda"):
            if case == "upsampling":
                out = topi.nn.upsampling(A, 2, 2, layout, "bilinear", True)
            else:
                out = topi.image.resize2d(A, [0.0] * 4, (128, 96), layout, "cubic", "half_pixel")
            s = topi.cuda.schedule_resize([out])
        inputs, arrays = [A], [rand(shape)]
        if case == "upsampling":
            want = T.upsampling_python(arrays[0], (2, 2), layout, "bilinear", True)
        else:
            want = T.resize2d_python(arrays[0], None, layout, "cubic", "half_pixel", size=(128, 96))
    elif case == "depthwise_nhwc":
        A, Wt = te.placeholder((2, 56, 56, 64), name="A"), te.placeholder((3, 3, 64, 1), name="W")
        with tecc.target.Target("cuda"):
            out = topi.cuda.depthwise_conv2d_nhwc(A, Wt, 1, 1, 1)
            s = topi.cuda.schedule_depthwise_conv2d_nhwc([out])
        inputs, arrays = [A, Wt], [rand((2, 56, 56, 64)), rand((3, 3, 64, 1))]
        want = T.depthwise_conv2d_python_nhwc(arrays[0], arrays[1], 1, 1)
    else:
        A, Wt = te.placeholder((2, 32, 14, 14), name="A"), te.placeholder((32, 8, 4, 4), name="W")
        with tecc.target.Target("cuda"):
            out = topi.cuda.group_conv2d_transpose_nchw(A, Wt, 2, 1, None, (0, 0), 4)
            s = topi.cuda.schedule_group_conv2d_transpose_nchw([out])
        inputs, arrays = [A, Wt], [rand((2, 32, 14, 14)), rand((32, 8, 4, 4))]
        want = T.conv2d_transpose_nchw_python(arrays[0], arrays[1], 2, 1, (0, 0), 4)
    f = tecc.build(s, inputs + [out], "cuda")
    got = np.zeros([int(d) for d in out.shape], "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(*arrays, got)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("layout, method, scales", [
    ("NCDHW", "nearest_neighbor", (2.0, 2.0, 2.0)), ("NDHWC", "nearest_neighbor", (1.954545497894287, 2.0, 1.5)),
    ("NCDHW", "trilinear", (1.954545497894287, 2.0, 1.5)), ("NDHWC", "trilinear", (2.0, 3.0, 1.0)),
])
def test_upsampling3d_matches_resize3d_python(target, layout, method, scales):
    """topi.nn.upsampling3d (TVM's) against topi.testing.resize3d_python, asymmetric
    coordinates as TVM's test uses them."""
    shape = (1, 2, 11, 6, 4) if layout == "NCDHW" else (1, 11, 6, 4, 2)
    A = te.placeholder(shape, name="A")
    B = topi.nn.upsampling3d(A, *scales, layout=layout, method=method, coordinate_transformation_mode="asymmetric")
    with tecc.target.Target(target):
        s = T.get_injective_schedule(target)(B)
    a = rand(shape)
    (got,) = build_run(s, [A], [B], [a], target)
    want = T.resize3d_python(a, scales, layout, "linear" if method == "trilinear" else method, "asymmetric")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
