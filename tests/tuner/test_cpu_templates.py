"""Every CPU tuning template builds correct code across its space: for each tunable
x86 task at a small shape, random configs (fixed seed) and the fallback are
instantiated, compiled with the C backend and checked against numpy."""
import numpy as np
import pytest

import tecc
from tecc import autotvm, topi

T = "TENSOR"
RNG_SEED = 7


TASKS = {
    # name: (args, input shapes, reference)
    "conv2d_nchw.x86": (((T, (1, 6, 9, 11), "float32"), (T, (12, 6, 3, 3), "float32"), (2, 1), (1, 0), (1, 1),
                         "float32"),
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
    picks = sorted({int(i) for i in rng.choice(len(space), size=min(5, len(space)), replace=False)})
    configs = [space.get(i) for i in picks] + [autotvm.FallbackConfigEntity()]
    checked = 0
    for cfg in configs:
        try:
            s, bufs = task.instantiate(cfg)
        except autotvm.task.space.InstantiationError:
            continue  # a config the template refuses (with its reason) costs no compile
        func = tecc.build(s, bufs, target="llvm")
        out = np.full(expected.shape, np.nan, expected.dtype)
        func(*inputs, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=f"{name} config {cfg}")
        checked += 1
    assert checked >= 4, f"{name}: only {checked} of {len(configs)} configs could be instantiated"
