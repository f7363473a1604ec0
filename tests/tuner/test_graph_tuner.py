"""autotvm.graph_tuner (DPTuner, PBQPTuner) and apply_graph_best on a small model."""
import time

import numpy as np
import pytest

import tecc
from tecc import autotvm, relay
from tecc.autotvm.graph_tuner import DPTuner, PBQPTuner
from tecc.autotvm.measure import MeasureInput, MeasureResult
from tecc.graph import GraphError
from tecc.tuner.record import save_to_file


def _model():
    x = relay.var("data", shape=(1, 8, 10, 10))
    w1, w2 = relay.var("w1", shape=(16, 8, 3, 3)), relay.var("w2", shape=(16, 16, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1)))
    y = relay.nn.relu(relay.nn.conv2d(y, w2, padding=(1, 1)))
    z = relay.nn.dense(relay.nn.batch_flatten(y), relay.var("fw", shape=(4, 1600)))
    mod = relay.Module.from_expr(relay.Function(relay.analysis.free_vars(z), z))
    rng = np.random.default_rng(0)
    params = {n: rng.standard_normal(s).astype("float32")
              for n, s in (("w1", (16, 8, 3, 3)), ("w2", (16, 16, 3, 3)), ("fw", (4, 1600)))}
    return mod, params


def _records(tasks, path):
    """Three records per task with made-up costs: config k costs (k + 1) ms, so the
    third index of each space is the fastest; one failed record that is faster still."""
    rows = []
    for t in tasks:
        space = t.config_space
        picks = [space.get(i) for i in (1, 2, 3)]
        for cfg, ms in zip(picks, (3e-3, 2e-3, 1e-3)):
            rows.append((MeasureInput(t.target, t, cfg), MeasureResult([ms], 0, 0.1, time.time())))
        rows.append((MeasureInput(t.target, t, space.get(4)), MeasureResult(["boom"], 4, 0.1, time.time())))
    save_to_file(rows, path)
    return {t.workload: t.config_space.get(3) for t in tasks}


@pytest.mark.parametrize("tuner_cls", [DPTuner, PBQPTuner])
def test_graph_tuner_picks_each_workloads_fastest_valid_record_and_measures_transforms(tuner_cls, tmp_path):
    mod, params = _model()
    tasks = autotvm.task.extract_from_program(mod["main"], target="llvm", params=params,
                                              ops=(relay.op.get("nn.conv2d"),))
    assert [t.name for t in tasks] == ["conv2d_NCHWc.x86", "conv2d_NCHWc.x86"]
    log = tmp_path / "kernels.log"
    want = _records(tasks, log)
    tuner = tuner_cls(mod["main"], {"data": (1, 8, 10, 10)}, str(log), [relay.op.get("nn.conv2d")], "llvm",
                      max_sch_num=2, log_file=str(tmp_path / "gt.log"))
    assert [len(tuner.candidates(t.workload)) for t in tasks] == [2, 2]  # max_sch_num, the failed one left out
    transforms = tuner.benchmark_layout_transform(min_exec_num=5)
    # the input into blocks before the first conv, the output back before the dense
    pairs = sorted((src, dst) for _, src, dst in transforms)  # the blocks are the target's vector width
    assert len(pairs) == 2 and pairs[0][0] == "NCHW" and pairs[1][1] == "NCHW"
    assert pairs[0][1].startswith("NCHW") and pairs[1][0].endswith("c")
    assert all(t > 0 and n == 1 for t, n in transforms.values())
    estimate = tuner.run()
    assert estimate == pytest.approx(2e-3 + sum(t for t, _ in transforms.values()))
    chosen = tuner.get_optimal_records()
    assert [r[0].config.index for r in chosen] == [want[t.workload].index for t in tasks]
    out = tmp_path / "graph_opt.log"
    tuner.write_opt_sch2record_file(str(out))
    assert "2 of 2 kernels chosen" in (tmp_path / "gt.log").read_text()
    with autotvm.apply_graph_best(str(out)) as ctx:
        for t in tasks:
            assert ctx.query(t.target, t.workload).index == want[t.workload].index
        with tecc.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
    m = tecc.contrib.graph_executor.GraphModule(lib["default"](tecc.cpu(0)))
    data = np.random.default_rng(1).standard_normal((1, 8, 10, 10)).astype("float32")
    m.set_input("data", data)
    m.run()
    with tecc.transform.PassContext(opt_level=0):
        ref = relay.build(mod, target="llvm", params=params)
    r = tecc.contrib.graph_executor.GraphModule(ref["default"](tecc.cpu(0)))
    r.set_input("data", data)
    r.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), r.get_output(0).numpy(), rtol=1e-4, atol=1e-4)


def test_graph_tuner_errors(tmp_path):
    mod, params = _model()
    log = tmp_path / "kernels.log"
    log.write_text("")
    conv = [relay.op.get("nn.conv2d")]
    with pytest.raises(GraphError, match=r"input 'data' is \[1, 8, 10, 10\] in the graph, but input_shapes gives "
                                         r"\[1, 8, 12, 12\]"):
        DPTuner(mod["main"], {"data": (1, 8, 12, 12)}, str(log), conv, "llvm", log_file=None)
    with pytest.raises(GraphError, match="input_shapes names 'image', which is not a parameter"):
        DPTuner(mod["main"], {"image": (1, 8, 10, 10)}, str(log), conv, "llvm", log_file=None)
    with pytest.raises(GraphError, match=r"no kernel built around nn.conv2d_transpose on llvm"):
        DPTuner(mod["main"], {"data": (1, 8, 10, 10)}, str(log), ["nn.conv2d_transpose"], "llvm", log_file=None)
    tuner = DPTuner(mod["main"], {"data": (1, 8, 10, 10)}, str(log), conv, "llvm", log_file=None)
    with pytest.raises(tecc.TeccError, match="call run\\(\\) before get_optimal_records"):
        tuner.get_optimal_records()
    with pytest.raises(tecc.TeccError, match="use_rpc=True is not supported"):
        tuner.benchmark_layout_transform(use_rpc=True)
    assert tuner.run() == 0.0 and tuner.get_optimal_records() == []  # no records: every kernel keeps its fallback


def test_rpc_runner_is_made_as_tvm_makes_it_and_refused_when_tuning_starts():
    """TVM's tune_relay_cuda sets an RPCRunner up in its tuning option (and runs as
    shipped); a tuning run with it is refused before anything is built, with the
    LocalRunner of the same options named."""
    runner = autotvm.RPCRunner("1080ti", "127.0.0.1", 9190, number=20, repeat=3, timeout=4, min_repeat_ms=150)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=10), runner=runner)
    from tecc import topi  # noqa: F401 -- registers topi's tasks

    task = autotvm.task.create("sgemm.cuda", args=(64, 64, 64, "float32"), target="cuda")
    tuner = autotvm.tuner.RandomTuner(task)
    with pytest.raises(autotvm.measure.MeasureError, match=r"RPCRunner\('1080ti', '127.0.0.1', 9190\): tecc measures "
                                                            r"on this machine only .* autotvm.LocalRunner\(number=20, "
                                                            r"repeat=3, timeout=4, min_repeat_ms=150\)"):
        tuner.tune(n_trial=2, measure_option=option)
