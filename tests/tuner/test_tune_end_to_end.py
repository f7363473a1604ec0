"""The flow of TVM's AutoTVM matmul tutorial ("tune a simple template"), with the
real local builder and runner on the C backend: the same API calls, a cut-down
size and trial count (the tutorial's own code stays outside the repository)."""
import numpy as np
import pytest

import tecc as tvm
from tecc import autotvm, te


@autotvm.template("test_e2e/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


@pytest.mark.parametrize("tuner_name", ["random", "xgb"])
def test_matmul_tutorial_flow_on_the_c_backend(tmp_path, tuner_name):
    N = L = M = 64
    task = autotvm.task.create("test_e2e/matmul", args=(N, L, M, "float32"), target="llvm")
    assert "len=49" in str(task.config_space) and task.flop == 2 * N * L * M
    measure_option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=2, repeat=2))
    log = str(tmp_path / "matmul.log")
    if tuner_name == "random":
        tuner = autotvm.tuner.RandomTuner(task, seed=0)
    else:
        tuner = autotvm.tuner.XGBTuner(task, plan_size=4, seed=0)
    tuner.tune(n_trial=10, measure_option=measure_option, callbacks=[autotvm.callback.log_to_file(log)])
    records = list(autotvm.record.load_from_file(log))
    assert len(records) == 10 and all(res.error_no == 0 for _, res in records)
    assert len({inp.config.index for inp, _ in records}) == 10
    assert tuner.best_flops > 0

    with autotvm.apply_history_best(log) as ctx:
        with tvm.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)
        applied = ctx.query(tvm.target.Target("llvm"), task.workload)
    best_inp, _ = min(records, key=lambda r: np.mean(r[1].costs))
    assert applied.index == best_inp.config.index
    inner = best_inp.config["tile_y"].size[-1]
    if inner > 1:  # a loop of extent 1 is no loop in the lowered function
        assert f"for (i.inner, 0, {inner})" in str(tvm.lower(s, arg_bufs))
    a_np = np.random.uniform(size=(N, L)).astype(np.float32)
    b_np = np.random.uniform(size=(L, M)).astype(np.float32)
    c_tvm = tvm.nd.empty((N, M))
    func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)
    tvm.testing.assert_allclose(a_np.dot(b_np), c_tvm.numpy(), rtol=1e-4)
