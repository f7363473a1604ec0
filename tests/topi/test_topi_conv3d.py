"""3-D convolutions (topi.nn.conv3d_ncdhw / conv3d_ndhwc / conv3d_transpose_ncdhw and
their CPU and CUDA schedules): the TE computes against topi.testing's numpy
references (themselves checked against torch where torch is installed), on "llvm"
and "cuda" (the GPU emulator, checked race-free; NVRTC compiles the kernels for
sm_80 and sm_90), with an element-wise epilogue in the same kernel, the CUDA tasks'
knobs, and one expected failure per attribute error."""
import logging

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, topi
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand

T = topi.testing
logging.getLogger("tecc.autotvm").setLevel(logging.ERROR)  # "no tuned config ... fallback"

CASES = [
    # data (NCDHW), kernel (OIDHW), stride, padding, dilation, groups
    ((1, 4, 6, 7, 8), (5, 4, 3, 3, 3), (1, 2, 1), (1, 1, 1), 1, 1),
    ((2, 4, 5, 6, 6), (6, 2, 3, 1, 3), 1, (0, 1, 1, 1, 0, 2), (1, 1, 2), 2),  # grouped, 6 pads, dilated
    ((1, 3, 4, 9, 5), (8, 3, 1, 1, 1), 1, 0, 1, 1),                           # pointwise
]


def _compute(target, layout, A, W, stride, padding, dilation, groups):
    if "cuda" in target:
        fn = topi.cuda.conv3d_ncdhw if layout == "NCDHW" else topi.cuda.conv3d_ndhwc
    else:
        fn = topi.x86.conv3d_ncdhw if layout == "NCDHW" else topi.x86.conv3d_ndhwc
    return fn(A, W, stride, padding, dilation, groups, "float32")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv3d_with_a_relu_matches_numpy(target, layout, case):
    dshape, kshape, stride, padding, dilation, groups = CASES[case]
    if layout == "NDHWC":
        dshape = (dshape[0],) + dshape[2:] + (dshape[1],)
        kshape = kshape[2:] + (kshape[1], kshape[0])
    A = te.placeholder(dshape, name="A")
    W = te.placeholder(kshape, name="W")
    with tecc.target.Target(target):
        conv = _compute(target, layout, A, W, stride, padding, dilation, groups)
        out = topi.nn.relu(conv)
        s = topi.schedule([out])
    a, w = rand(dshape), rand(kshape)
    (got,) = build_run(s, [A, W], [out], [a, w], target)
    if layout == "NCDHW":
        want = T.conv3d_ncdhw_python(a, w, stride, padding, groups, dilation)
    else:
        want = T.conv3d_ndhwc_python(a, w, stride, padding, groups, dilation)
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-4, atol=1e-4)
    if target == "cuda":
        assert conv.op.attrs["workload"][0] == f"conv3d_{layout.lower()}.cuda"
        src = build_all_arches(s, [A, W, out]).get_source("cuda")
        assert src.count("__global__") == 1 and "__shared__" in src  # one kernel: the relu inside


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dshape, kshape, stride, padding, output_padding", [
    ((1, 4, 3, 4, 5), (4, 3, 3, 3, 3), (2, 2, 1), (1, 0, 1), (1, 0, 0)),
    ((2, 3, 2, 3, 3), (3, 2, 2, 3, 1), 1, (0, 1, 0, 0, 1, 0), 0),
])
def test_conv3d_transpose_matches_numpy(target, dshape, kshape, stride, padding, output_padding):
    A = te.placeholder(dshape, name="A")
    W = te.placeholder(kshape, name="W")
    with tecc.target.Target(target):
        fn = topi.cuda.conv3d_transpose_ncdhw if target == "cuda" else topi.x86.conv3d_transpose_ncdhw
        out = topi.add(fn(A, W, stride, padding, "float32", output_padding), 1.0)
        s = topi.schedule([out])
    a, w = rand(dshape), rand(kshape)
    (got,) = build_run(s, [A, W], [out], [a, w], target)
    want = T.conv3d_transpose_ncdhw_python(a, w, stride, padding, output_padding) + 1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    if target == "cuda":
        build_all_arches(s, [A, W, out])


def test_the_numpy_references_agree_with_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 4, 6, 7, 8)).astype("float32")
    w = rng.standard_normal((6, 2, 3, 3, 3)).astype("float32")
    want = torch.nn.functional.conv3d(torch.tensor(a), torch.tensor(w), stride=(1, 2, 1), padding=(1, 0, 1), groups=2,
                                      dilation=(1, 1, 2)).numpy()
    np.testing.assert_allclose(T.conv3d_ncdhw_python(a, w, (1, 2, 1), (1, 0, 1), 2, (1, 1, 2)), want, rtol=1e-4,
                               atol=1e-4)
    a = rng.standard_normal((1, 4, 3, 4, 5)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3, 3)).astype("float32")
    want = torch.nn.functional.conv_transpose3d(torch.tensor(a), torch.tensor(w), stride=(2, 2, 1), padding=(1, 0, 1),
                                                output_padding=(1, 0, 0)).numpy()
    np.testing.assert_allclose(T.conv3d_transpose_ncdhw_python(a, w, (2, 2, 1), (1, 0, 1), (1, 0, 0)), want,
                               rtol=1e-4, atol=1e-4)


def test_the_cuda_tasks_search_the_kernel_depth_and_leave_2d_spaces_alone():
    data, kernel = ("TENSOR", (1, 16, 8, 14, 14), "float32"), ("TENSOR", (32, 16, 3, 3, 3), "float32")
    task = autotvm.task.create("conv3d_ncdhw.cuda", args=(data, kernel, 1, 1, 1, 1, "float32"), target="cuda")
    assert "tile_rz" in task.config_space.space_map and len(task.config_space) > 1000
    assert task.flop == 2 * 32 * 8 * 14 * 14 * 16 * 27
    task2d = autotvm.task.create("conv2d_nchw.cuda", args=(("TENSOR", (1, 16, 14, 14), "float32"),
                                                           ("TENSOR", (32, 16, 3, 3), "float32"), 1, 1, 1, "float32"),
                                 target="cuda")
    assert "tile_rz" not in task2d.config_space.space_map
    # a few tuned points of the 3-D space compile and compute the convolution
    a, w = rand((1, 16, 8, 14, 14)), rand((32, 16, 3, 3, 3))
    want = T.conv3d_ncdhw_python(a, w, 1, 1)
    rng = np.random.default_rng(0)
    checked = 0
    for index in rng.permutation(len(task.config_space)):
        cfg = task.config_space.get(int(index))
        try:
            with tecc.target.Target("cuda"):
                s, args = task.instantiate(cfg)
        except Exception:  # noqa: BLE001 -- a config the space filters (refused before compiling)
            continue
        try:
            (got,) = build_run(s, args[:2], args[2:], [a, w], "cuda")
        except tecc.TeccError:
            continue  # a block over the GPU's limits: verify_gpu refuses it
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(cfg))
        checked += 1
        if checked == 3:
            break
    assert checked == 3


@pytest.mark.parametrize("make, match", [
    (lambda A, W: topi.nn.conv3d_ndhwc(te.placeholder((1, 4, 4, 4, 4)), te.placeholder((3, 3, 3, 2, 4)), 1, 0, 1, 3),
     r"groups=3 does not divide the 4 input channels"),
    (lambda A, W: topi.nn.conv3d_ncdhw(A, te.placeholder((4, 3, 3, 3)), 1, 0, 1),
     r"kernel 'placeholder' has shape \(4, 3, 3, 3\); it must be 5-D"),
    (lambda A, W: topi.nn.conv3d_ncdhw(A, W, 1, (1, 1), 1), r"padding \(1, 1\) must have 3 or 6 entries"),
    (lambda A, W: topi.nn.conv3d_ncdhw(A, W, (1, 0, 1), 0, 1), r"stride \(1, 0, 1\) must be at least 1"),
    (lambda A, W: topi.nn.conv3d_ncdhw(A, te.placeholder((4, 3, 9, 3, 3)), 1, 0, 1),
     r"the kernel \(dilated: 9 along D\) is larger than the padded input \(4 along D"),
    (lambda A, W: topi.nn.conv3d_transpose_ncdhw(A, te.placeholder((3, 4, 3, 3, 3)), 2, 0, None, (0, 2, 0)),
     r"output_padding \(0, 2, 0\) must be smaller than the strides 2 \(along H\)"),
    (lambda A, W: topi.nn.conv3d_transpose_ncdhw(A, W, 2, 0),
     r"the input has 3 channels but the filter expects 4; the filter must be \[in_channel, num_filter, kd, kh, "
     r"kw\] \(IODHW\)"),
])
def test_attribute_errors_name_the_operator_and_the_argument(make, match):
    A = te.placeholder((1, 3, 4, 6, 6), name="A")
    W = te.placeholder((4, 3, 3, 3, 3), name="W")
    with pytest.raises(TopiError, match=match):
        make(A, W)
