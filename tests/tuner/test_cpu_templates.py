"""Every CPU tuning template builds correct code across its space: for each tunable
x86 task at a small shape, random configs (fixed seed) and the fallback are
instantiated, compiled with the C backend and checked against numpy."""
import numpy as np
import pytest

import tecc
from tecc import autotvm, topi

T = "TENSOR"
RNG_SEED = 7
#: random points of each space built and checked (besides the fallback)
SAMPLES = 5


TASKS = {
    # name: (args, input shapes, reference)
    "conv2d_nchw.x86": (((T, (1, 6, 9, 11), "float32"), (T, (12, 6, 3, 3), "float32"), (2, 1), (1, 0), (1, 1),
                         "float32"),
                        lambda d, w: topi.testing.conv2d_nchw_python(d, w, (2, 1), (1, 0))),
    "conv2d_nchw_flat.x86": (((T, (1, 6, 9, 11), "float32"), (T, (12, 6, 3, 3), "float32"), (2, 1), (1, 0),
                              (1, 1), "float32"),
                             lambda d, w: topi.testing.conv2d_nchw_python(d, w, (2, 1), (1, 0))),
    "matmul.x86": (((T, (24, 40), "float32"), (T, (40, 20), "float32"), None, "float32", False, False),
                   lambda a, b: a @ b),
    "dense_pack.x86": (((T, (16, 40), "float32"), (T, (24, 40), "float32"), None, "float32"), lambda a, w: a @ w.T),
    "dense_nopack.x86": (((T, (3, 40), "float32"), (T, (24, 40), "float32"), None, "float32"), lambda a, w: a @ w.T),
    "batch_matmul.x86": (((T, (2, 12, 16), "float32"), (T, (2, 10, 16), "float32"), None, "float32", False, True),
                         lambda a, b: a @ b.transpose(0, 2, 1)),
    "reduce.x86": (((T, (6, 50), "float32"), 1, False, "sum"), lambda a: a.sum(axis=1)),
}


def _arrays(args, rng):
    return [rng.uniform(-1, 1, a[1]).astype(a[2]) for a in args if isinstance(a, tuple) and a and a[0] == T]


@pytest.mark.parametrize("name", sorted(TASKS))
def test_cpu_template_configs_match_numpy(name):
    args, ref = TASKS[name]
    task = autotvm.task.create(name, args=args, target="llvm")
    space = task.config_space
    rng = np.random.default_rng(RNG_SEED)
    inputs = _arrays(args, rng)
    expected = ref(*inputs)

    def check(cfg):
        s, bufs = task.instantiate(cfg)
        func = tecc.build(s, bufs, target="llvm")
        out = np.full(expected.shape, np.nan, expected.dtype)
        func(*inputs, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=f"{name} config {cfg}")

    # random points until SAMPLES of them instantiate (a point the template refuses, with its
    # reason, costs no compile), then the fallback, which no template may refuse
    checked, refused = 0, []
    for i in rng.permutation(len(space))[:4 * SAMPLES]:
        try:
            check(space.get(int(i)))
        except autotvm.task.space.InstantiationError as err:
            refused.append(str(err))
            continue
        checked += 1
        if checked == SAMPLES:
            break
    assert checked == min(SAMPLES, len(space)), f"{name}: {checked} configs instantiated, refused: {refused}"
    assert all(refused), "a refusal without its reason"
    check(autotvm.FallbackConfigEntity())
