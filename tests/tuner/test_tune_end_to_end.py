"""The flow of TVM's AutoTVM matmul tutorial ("tune a simple template"), with the
real local builder and runner on the C backend: the same API calls, a cut-down
size and trial count (the tutorial's own code stays outside the repository)."""
import numpy as np
import pytest

import tecc as tvm
from tecc import autotvm, te, topi


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


# ---------------------------------------------------------------------------------------
# topi's conv2d task on the CPU, with every tuner
# ---------------------------------------------------------------------------------------
CONV = dict(data=(1, 4, 6, 6), kernel=(8, 4, 3, 3))
CONV_ARGS = (("TENSOR", CONV["data"], "float32"), ("TENSOR", CONV["kernel"], "float32"), (1, 1), (1, 1), (1, 1),
             "float32")


def _tuner(name, task):
    if name == "random":
        return autotvm.tuner.RandomTuner(task, seed=1)
    if name == "gridsearch":
        return autotvm.tuner.GridSearchTuner(task)
    if name == "ga":
        return autotvm.tuner.GATuner(task, pop_size=4)
    return autotvm.tuner.XGBTuner(task, plan_size=4, seed=1)


@pytest.mark.parametrize("tuner_name", ["random", "gridsearch", "ga", "xgb"])
def test_topi_conv2d_task_tuned_on_the_cpu_with_each_tuner(tmp_path, tuner_name):
    task = autotvm.task.create("conv2d_nchw.x86", args=CONV_ARGS, target="llvm")
    space = task.config_space
    assert [k for k in space.space_map] == ["tile_oc", "tile_ow", "tile_ic", "unroll_kw"]
    assert len(space) == 4 * 4 * 3 * 2 and task.flop == 2 * 4 * 9 * 8 * 36
    log = str(tmp_path / "conv.log")
    measure_option = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2),
                                            runner=autotvm.LocalRunner(number=1, repeat=1, cooldown_interval=0))
    tuner = _tuner(tuner_name, task)
    tuner.tune(n_trial=6, measure_option=measure_option, callbacks=[autotvm.callback.log_to_file(log)])
    records = list(autotvm.record.load_from_file(log))
    assert len(records) == 6 and all(res.error_no == 0 for _, res in records), [r.costs for _, r in records]
    assert len({inp.config.index for inp, _ in records}) == 6
    best_inp, _ = min(records, key=lambda r: np.mean(r[1].costs))

    # topi's own compute and schedule follow the best record under apply_history_best
    rng = np.random.default_rng(0)
    d = rng.uniform(-1, 1, CONV["data"]).astype("float32")
    w = rng.uniform(-1, 1, CONV["kernel"]).astype("float32")
    with autotvm.apply_history_best(log) as ctx:
        with tvm.target.Target("llvm"):
            data = te.placeholder(CONV["data"], name="data")
            kernel = te.placeholder(CONV["kernel"], name="kernel")
            out = topi.x86.conv2d_nchw(data, kernel, (1, 1), (1, 1), (1, 1), "float32")
            s = topi.x86.schedule_conv2d_nchw([out])
            func = tvm.build(s, [data, kernel, out])
        assert ctx.query(tvm.target.Target("llvm"), task.workload).index == best_inp.config.index
    oc = best_inp.config["tile_oc"].size[-1]
    text = str(tvm.lower(s, [data, kernel, out]))
    if oc > 1:
        assert f"i1.inner" in text or f"Out.local_{0}" in text
    o = tvm.nd.empty((1, 8, 6, 6))
    func(tvm.nd.array(d), tvm.nd.array(w), o)
    tvm.testing.assert_allclose(o.numpy(), topi.testing.conv2d_nchw_python(d, w, 1, 1), rtol=1e-4, atol=1e-5)


_KILLED_RUN = r"""
import sys
from tecc import autotvm, topi
args = (("TENSOR", (1, 4, 6, 6), "float32"), ("TENSOR", (8, 4, 3, 3), "float32"), (1, 1), (1, 1), (1, 1), "float32")
task = autotvm.task.create("conv2d_nchw.x86", args=args, target="llvm")
opt = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=1),
                             runner=autotvm.LocalRunner(number=1, repeat=1, cooldown_interval=0))
autotvm.tuner.RandomTuner(task, seed=3).tune(n_trial=90, measure_option=opt,
                                             callbacks=[autotvm.callback.log_to_file(sys.argv[1])])
"""


def _children(pid) -> list:
    """The pids whose parent is ``pid`` (from /proc)."""
    import os

    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_tuning_run_leaves_a_log_that_resumes(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    log = tmp_path / "killed.log"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(log)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if log.exists() and log.read_text().count("\n") >= 4:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        workers = _children(proc.pid)
        assert workers, "the tuning run started no worker processes"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the tuner, mid-batch
        proc.wait()
    # its builder and runner workers live in groups of their own: they notice their parent is gone and exit
    deadline = time.time() + 30
    while time.time() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "worker processes outlived the killed tuning run"
    before = list(autotvm.record.load_from_file(str(log)))
    assert len(before) >= 4
    task = autotvm.task.create("conv2d_nchw.x86", args=CONV_ARGS, target="llvm")
    measure_option = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2),
                                            runner=autotvm.LocalRunner(number=1, repeat=1, cooldown_interval=0))
    n_trial = len(before) + 4
    tuner = autotvm.tuner.RandomTuner(task, seed=4)
    tuner.tune(n_trial=n_trial, measure_option=measure_option, callbacks=[autotvm.callback.log_to_file(str(log))])
    after = list(autotvm.record.load_from_file(str(log)))
    assert [r[0].config.index for r in after[:len(before)]] == [r[0].config.index for r in before]
    assert len(after) == n_trial  # the resumed trials count; only the rest was measured
    assert len({inp.config.index for inp, _ in after}) == n_trial  # nothing measured twice
    best = min((r for r in after if r[1].error_no == 0), key=lambda r: np.mean(r[1].costs))
    assert tuner.best_config.index == best[0].config.index


def test_a_topi_task_name_without_topi_imported_says_to_import_it(monkeypatch):
    import sys

    from tecc.tuner.task.task import TemplateError

    monkeypatch.delitem(sys.modules, "tecc.topi")
    with pytest.raises(TemplateError, match=r"'deformable_conv2d_nchw.cuda': topi's tasks are registered when tecc.topi is "
                                            r"imported; add `from tecc import topi`"):
        autotvm.task.create("deformable_conv2d_nchw.cuda", args=(), target="cuda")
    with pytest.raises(TemplateError, match=r"no template is registered as 'my/conv'; register one with "
                                            r"@autotvm.template\('my/conv'\)"):
        autotvm.task.create("my/conv", args=(), target="llvm")
