"""topi.det against numpy's ``linalg.det`` on "llvm" and "cuda" (the GPU emulator,
checked race-free and in bounds): batches of random matrices, matrices that need
row swaps (a zero on the diagonal), singular ones (a zero or repeated column),
1 x 1 and a larger one, float64 and float32, rank-2 and rank-4 inputs; NaN
propagating; the tag, the schedule topi.schedule picks, the cubins NVRTC makes
(one kernel, one thread per matrix); one expected failure per argument error."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand


def run_det(target, data):
    A = te.placeholder(data.shape, name="A", dtype=str(data.dtype))
    with tecc.target.Target(target):
        out = topi.det(A)
        s = topi.schedule([out], target)
    (got,) = build_run(s, [A], [out], [data], target)
    return got


def _batch():
    a = rand((6, 5, 5), "float64")
    a[1] = 0.0                                    # all zero
    a[2, :, 3] = 2.0 * a[2, :, 1]                 # two columns alike: singular
    a[3] = np.eye(5)[[1, 0, 4, 2, 3]] * 3.0       # a permutation: row swaps needed, det +-243
    a[4, 0, 0] = 0.0                              # a zero first pivot
    return a


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_det_of_a_batch_matches_numpy(target, dtype):
    a = _batch().astype(dtype)
    got = run_det(target, a)
    assert got.shape == (6,) and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, np.linalg.det(a.astype("float64")), rtol=1e-5 if dtype == "float32" else 1e-12,
                               atol=1e-6 if dtype == "float32" else 1e-12)
    assert got[1] == 0.0 and got[3] == -243.0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 1, 1), (1, 12, 12)])
def test_det_of_any_rank_matches_numpy(target, shape):
    a = rand(shape, "float64") + 2.0 * np.eye(shape[-1])  # away from singular: the digits count
    got = run_det(target, a)
    assert got.shape == shape[:-2]
    np.testing.assert_allclose(got, np.linalg.det(a), rtol=1e-10)


def test_det_propagates_nan():
    a = np.eye(3)[None].repeat(2, 0)
    a[1, 2, 1] = np.nan
    got = run_det("llvm", a)
    assert got[0] == 1.0 and np.isnan(got[1])


def test_det_tag_schedule_and_cubins():
    A = te.placeholder((4, 6, 6), name="A")
    out = topi.det(A)
    assert out.op.tag == "det" and tuple(out.shape) == (4,)
    assert topi.schedule_registry.lookup("det", "llvm") is topi.x86.schedule_det
    assert topi.schedule_registry.lookup("det", "cuda") is topi.cuda.schedule_det
    with tecc.target.Target("cuda"):
        gpu = topi.det(A)
        s = topi.schedule([gpu], "cuda")
    src = build_all_arches(s, [A, gpu]).imported_modules[0].get_source()
    assert src.count("__global__") == 1 and "blockIdx.x" in src


@pytest.mark.parametrize("shape, dtype, match", [
    ((3, 4), "float32", r"det\('A' \(3, 4\)\): the input must be \[\.\.\., m, m\] \(square matrices in its last "
                        r"two axes\), got shape \(3, 4\)"),
    ((4,), "float32", r"the input must be \[\.\.\., m, m\]"),
    ((2, 2), "int32", r"det\('A' \(2, 2\)\): the input has dtype int32; det takes floating-point matrices \(cast "
                      r"it first\)"),
])
def test_det_argument_errors(shape, dtype, match):
    with pytest.raises(TopiError, match=match):
        topi.det(te.placeholder(shape, name="A", dtype=dtype))


def test_det_of_a_symbolic_shape_is_refused():
    n = te.var("n")
    with pytest.raises(TopiError, match=r"has the symbolic shape .*this operator needs static shapes"):
        topi.det(te.placeholder((n, 3, 3), name="A"))
