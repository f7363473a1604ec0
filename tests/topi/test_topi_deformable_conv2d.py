"""topi.nn.deformable_conv2d_nchw (TVM's, with DCNv2's mask) against the numpy
reference of topi.testing on "llvm" and "cuda" (the GPU emulator, checked race-free
and in bounds): with and without a mask, grouped, with deformable groups, strided,
dilated and padded unevenly, TVM's and ONNX's sampling at the image's edges,
float64, out_dtype, a symbolic batch; the schedules topi.schedule picks (an
element-wise epilogue in the convolution's kernel) and the cubins NVRTC makes of
them; one expected failure per argument error."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import TeccTypeError
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand

T = topi.testing


def _out_size(size, k, stride, dilation, before, after):
    return (size + before + after - ((k - 1) * dilation + 1)) // stride + 1


def run_deformable(target, data_shape, num_filter, kernel, stride=1, padding=0, dilation=1, deformable_groups=1,
                   groups=1, use_mask=False, partial_edges=False, dtype="float32", out_dtype=None, epilogue=None):
    """Declare, schedule (topi.schedule), build and run the operator on random data;
    return its output and the reference's."""
    n, c, h, w = data_shape
    stride_h, stride_w = (stride, stride) if isinstance(stride, int) else stride
    dil_h, dil_w = (dilation, dilation) if isinstance(dilation, int) else dilation
    pads = (padding,) * 4 if isinstance(padding, int) else tuple(padding) * (2 if len(padding) == 2 else 1)
    oh = _out_size(h, kernel, stride_h, dil_h, pads[0], pads[2])
    ow = _out_size(w, kernel, stride_w, dil_w, pads[1], pads[3])
    taps = deformable_groups * kernel * kernel
    D = te.placeholder(data_shape, name="data", dtype=dtype)
    O = te.placeholder((n, 2 * taps, oh, ow), name="offset", dtype=dtype)
    K = te.placeholder((num_filter, c // groups, kernel, kernel), name="kernel", dtype=dtype)
    M = te.placeholder((n, taps, oh, ow), name="mask", dtype=dtype) if use_mask else None
    out = topi.nn.deformable_conv2d_nchw(D, O, K, stride, padding, dilation, deformable_groups, groups, out_dtype,
                                         mask=M, partial_edges=partial_edges)
    if epilogue is not None:
        out = epilogue(out)
    with tecc.target.Target(target):
        s = topi.schedule([out], target)
    data = rand(data_shape, dtype)
    offset = rand((n, 2 * taps, oh, ow), dtype, -2.5, 2.5)
    offset[:, ::3] = 0.0  # some taps on whole pixels: the image's edges read exactly
    weights = rand((num_filter, c // groups, kernel, kernel), dtype)
    mask = rand((n, taps, oh, ow), dtype, 0.0, 1.0) if use_mask else None
    ins, arrays = [D, O, K], [data, offset, weights]
    if use_mask:
        ins.append(M)
        arrays.append(mask)
    (got,) = build_run(s, ins, [out], arrays, target)
    want = T.deformable_conv2d_nchw_python(data, offset, weights, stride, padding, dilation, deformable_groups,
                                           groups, mask=mask, partial_edges=partial_edges)
    return got, want


#: (data shape, filters, kernel, stride, padding, dilation, deformable groups, groups, mask, partial edges)
CASES = [
    ((1, 3, 7, 6), 4, 3, 1, 1, 1, 1, 1, False, False),
    ((2, 4, 6, 7), 6, 3, 1, 1, 1, 2, 1, True, False),
    ((1, 4, 8, 7), 4, 3, 2, (1, 0, 2, 1), (2, 1), 4, 2, True, True),
    ((1, 6, 5, 5), 6, 2, 1, 0, 1, 3, 3, False, True),
    ((1, 4, 6, 6), 8, 1, (2, 1), 0, 1, 1, 4, True, False),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_deformable_conv2d(target, case):
    shape, filters, kernel, stride, padding, dilation, dgroups, groups, use_mask, partial = CASES[case]
    got, want = run_deformable(target, shape, filters, kernel, stride, padding, dilation, dgroups, groups, use_mask,
                               partial)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_tvm_and_onnx_sampling_at_the_edges():
    # a point half a pixel above the image: TVM reads 0, ONNX (partial_edges) half of row 0;
    # half a pixel past the last row both read half of it
    D = te.placeholder((1, 1, 3, 3), name="data")
    O = te.placeholder((1, 2, 3, 3), name="offset")
    K = te.placeholder((1, 1, 1, 1), name="kernel")
    data = np.arange(1, 10, dtype="float32").reshape(1, 1, 3, 3)
    offset = np.zeros((1, 2, 3, 3), "float32")
    offset[0, 0, 0, 1] = -0.5
    offset[0, 0, 2, 1] = 0.5
    for partial, top in ((False, 0.0), (True, 1.0)):
        out = topi.nn.deformable_conv2d_nchw(D, O, K, 1, 0, 1, 1, 1, "float32", partial_edges=partial)
        s = topi.schedule([out], "llvm")
        (got,) = build_run(s, [D, O, K], [out], [data, offset, np.ones((1, 1, 1, 1), "float32")], "llvm")
        want = data.copy()
        want[0, 0, 0, 1], want[0, 0, 2, 1] = top, 4.0
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_float64_and_out_dtype():
    got, want = run_deformable("llvm", (1, 2, 5, 6), 3, 3, padding=1, use_mask=True, dtype="float64")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got, want = run_deformable("llvm", (1, 2, 5, 6), 3, 3, padding=1, out_dtype="float64")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_symbolic_batch():
    n = te.var("n")
    D = te.placeholder((n, 2, 5, 5), name="data")
    O = te.placeholder((n, 18, 5, 5), name="offset")
    K = te.placeholder((3, 2, 3, 3), name="kernel")
    out = topi.nn.deformable_conv2d_nchw(D, O, K, 1, 1, 1, 1, 1, "float32")
    s = topi.schedule([out], "llvm")
    data, offset, weights = rand((2, 2, 5, 5)), rand((2, 18, 5, 5), "float32", -2, 2), rand((3, 2, 3, 3))
    (got,) = build_run(s, [D, O, K], [out], [data, offset, weights, 2], "llvm", extra_args=[n])
    want = T.deformable_conv2d_nchw_python(data, offset, weights, 1, 1, 1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_an_elementwise_epilogue_joins_the_convolution(target):
    got, want = run_deformable(target, (1, 4, 6, 6), 4, 3, padding=1, deformable_groups=2, use_mask=True,
                               epilogue=topi.nn.relu)
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-5, atol=1e-5)


def test_stages_tags_and_the_cuda_kernels():
    D = te.placeholder((1, 4, 9, 9), name="data")
    O = te.placeholder((1, 36, 9, 9), name="offset")
    K = te.placeholder((8, 2, 3, 3), name="kernel")
    M = te.placeholder((1, 18, 9, 9), name="mask")
    conv = topi.nn.deformable_conv2d_nchw(D, O, K, 1, 1, 1, 2, 2, "float32", mask=M)
    assert conv.op.tag == "deformable_conv2d_nchw" and tuple(conv.shape) == (1, 8, 9, 9)
    assert conv.op.attrs["deformable_groups"] == 2 and conv.op.attrs["groups"] == 2
    assert bool(conv.op.attrs["modulated"]) and not bool(conv.op.attrs["partial_edges"])
    samples = conv.op.input_tensors[0]
    assert samples.op.tag == "injective,data_deform" and tuple(samples.shape) == (1, 4, 3, 3, 9, 9)
    out = topi.add(conv, 1.0)
    with tecc.target.Target("llvm"):
        assert tecc.build(topi.schedule([out], "llvm"), [D, O, K, M, out], "llvm") is not None
    with tecc.target.Target("cuda"):
        s = topi.schedule([out], "cuda")
    # the samples a kernel, the convolution and its epilogue another
    src = build_all_arches(s, [D, O, K, M, out]).imported_modules[0].get_source()
    assert src.count("__global__") == 2 and "in_y" in src


def _errors():
    D = te.placeholder((1, 4, 6, 6), name="D")
    O = te.placeholder((1, 36, 6, 6), name="O")
    K = te.placeholder((4, 2, 3, 3), name="K")
    M = te.placeholder((1, 18, 6, 6), name="M")

    def conv(**changes):
        args = dict(data=D, offset=O, kernel=K, strides=1, padding=1, dilation=1, deformable_groups=2, groups=2,
                    out_dtype="float32")
        args.update(changes)
        return lambda: topi.nn.deformable_conv2d_nchw(**args)

    return [
        (conv(data=np.zeros((1, 4, 6, 6))), TeccTypeError, r"deformable_conv2d_nchw: data must be a tensor"),
        (conv(mask=np.zeros((1, 18, 6, 6))), TeccTypeError, r"deformable_conv2d_nchw: mask must be a tensor"),
        (conv(data=te.placeholder((4, 6, 6), name="D3")), TopiError,
         r"data 'D3' has shape \(4, 6, 6\); it must be 4-D"),
        (conv(data=te.placeholder((1, 4, 6, 6), name="Di", dtype="int32")), TeccTypeError,
         r"data 'Di' must hold floats, got int32"),
        (conv(offset=te.placeholder((1, 36, 6, 6), name="Oi", dtype="int32")), TeccTypeError,
         r"offset 'Oi' must hold floats, got int32"),
        (conv(deformable_groups=0), TopiError, r"deformable_groups=0 must be an int >= 1"),
        (conv(groups=1.5), TopiError, r"groups=1.5 must be an int >= 1"),
        (conv(deformable_groups=3, offset=te.placeholder((1, 54, 6, 6), name="O3")), TopiError,
         r"deformable_groups=3 does not divide the 4 input channels"),
        (conv(groups=3, kernel=te.placeholder((3, 1, 3, 3), name="K3")), TopiError,
         r"groups=3 does not divide the 4 input channels"),
        (conv(kernel=te.placeholder((5, 2, 3, 3), name="K5")), TopiError,
         r"groups=2 does not divide the 5 output channels"),
        (conv(kernel=te.placeholder((4, 4, 3, 3), name="K4")), TopiError,
         r"the input has 4 channels but the kernel expects 4 per group x 2 group\(s\); the kernel must be OIHW"),
        (conv(offset=te.placeholder((1, 18, 6, 6), name="O18")), TopiError,
         r"offset 'O18' has shape \(1, 18, 6, 6\) but must be \(1, 36, 6, 6\) \(a \(y, x\) pair per deformable "
         r"group x 3 x 3 kernel tap"),
        (conv(padding=0), TopiError, r"offset 'O' has shape \(1, 36, 6, 6\) but must be \(1, 36, 4, 4\)"),
        (conv(mask=te.placeholder((1, 9, 6, 6), name="M9")), TopiError,
         r"mask 'M9' has shape \(1, 9, 6, 6\) but must be \(1, 18, 6, 6\) \(a value per deformable group"),
        (conv(mask=te.placeholder((1, 18, 6, 6), name="Mi", dtype="int8")), TeccTypeError,
         r"mask 'Mi' must hold floats, got int8"),
        (conv(strides=0), TopiError, r"strides 0 must be at least 1"),
        (conv(dilation=(1, 1, 1)), TopiError, r"dilation \(1, 1, 1\) must be an int or 2 int\(s\)"),
        (conv(padding=-1), TopiError, r"padding -1 is negative"),
        (conv(kernel=te.placeholder((4, 2, 9, 9), name="K9"), offset=te.placeholder((1, 162, 1, 1), name="O9")),
         TopiError, r"the kernel \(dilated: 9 along H\) is larger than the padded input \(8 along H"),
        (conv(out_dtype=np.float32), TeccTypeError, r"out_dtype must be a dtype name such as 'float32'"),
        (conv(partial_edges="yes"), TeccTypeError, r"partial_edges must be True or False, got 'yes'"),
        (conv(kernel=te.placeholder((4, 2, te.var("kh"), 3), name="Kv")), TopiError,
         r"the kernel's height and width must be constants"),
    ] + [(conv(mask=M, partial_edges=True), None, None)]


@pytest.mark.parametrize("case", range(len(_errors()) - 1))
def test_deformable_conv2d_errors_name_the_argument_and_what_to_do(case):
    call, error, message = _errors()[case]
    with pytest.raises(error, match=message):
        call()


def test_the_arguments_of_the_error_cases_are_otherwise_valid():
    call, _, _ = _errors()[-1]
    assert tuple(call().shape) == (1, 4, 6, 6)
