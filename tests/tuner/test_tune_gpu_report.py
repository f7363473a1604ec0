"""What ``benchmarks/tune_gpu.py`` reports from a run on a GPU: the summary lines that
judge the targets (tuned SGEMM against cuBLAS, the wall time of 1000 trials), torch
missing, the tables and the tuning curves, from rows as a GPU run makes them (the
dry run, ``tests/integration/test_benchmarks_dryrun.py``, judges nothing).  Also its
options, and that it needs a GPU without ``--dry-run``."""
import importlib.util
import os
import re
from types import SimpleNamespace

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def tune_gpu():
    spec = importlib.util.spec_from_file_location("_tecc_bench_tune_gpu",
                                                  os.path.join(ROOT, "benchmarks", "tune_gpu.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tuning(task, workload, trials, wall_s, invocations=1, note=None):
    t = {"task": task, "workload": workload, "space": 144, "trials_asked": trials, "trials_logged": trials,
         "valid": trials - 10, "refused": 8, "failed": 2, "wall_trials": trials, "wall_s": wall_s,
         "invocations": invocations, "trials_per_s": trials / wall_s, "best_gflops_tuning": 40000.0,
         "best_config_tuning": "block=128 thread_tile=4", "emulated": False,
         "curve_gflops": [1000.0 * (i + 1) for i in range(trials)],
         "errors": {"NO_ERROR": trials - 10, "INSTANTIATION_ERROR": 8, "RUN_TIMEOUT": 2},
         "first_errors": {"INSTANTIATION_ERROR": "config 3: refused", "RUN_TIMEOUT": "config 5: the run took more "
                          "than the timeout of 30 s; its process was killed"}}
    if note:
        t["note"] = note
    return t


def _bench(tune_gpu, sgemm_ratio, dense_trials, dense_wall_s, torch_ms=None, size=4096):
    cublas = {"kind": "cublas", "layout": "NN", "variant": "cuBLAS NN", "config": "-", "rel_err": 1e-7, "ok": True,
              "ms": 3.0, "ms_graph": 2.9, "gflops": 45000.0, "peak_share": 0.75}
    tuned = {"kind": "tecc", "task": "sgemm.cuda", "tuned": True, "layout": "NN", "variant": "tecc sgemm.cuda tuned",
             "config": "block=128 thread_tile=4 k_tile=8 double_buffer=1 a_kmajor=1", "launch": "32x32 / 16x16",
             "resources": {"k": {"regs": 128}}, "rel_err": 2e-7, "ok": True, "ms": 3.0 / sgemm_ratio,
             "ms_graph": 2.9 / sgemm_ratio, "gflops": 45000.0 * sgemm_ratio, "peak_share": 0.75 * sgemm_ratio,
             "ratio": sgemm_ratio, "ratio_graph": sgemm_ratio}
    conv = {"kind": "tecc", "layer": "56x56x64->64 3x3", "tuned": True, "variant": "tecc tuned",
            "config": "tile_f=[-1, 2]",
            "rel_err": 1e-7, "ok": True, "ms": 0.05, "ms_graph": 0.04, "gflops": 4600.0, "peak_share": 0.08,
            "x_torch": (torch_ms / 0.05) if torch_ms else None, "x_untuned": 2.5, "x_untuned_graph": 2.4}
    conv_rows = [conv]
    if torch_ms:
        conv_rows.append({"kind": "torch", "layer": conv["layer"], "variant": "torch 2.11 (cuDNN)", "config": "-",
                          "rel_err": 1e-7, "ok": True, "ms": torch_ms, "ms_graph": None, "gflops": 9000.0,
                          "peak_share": 0.15, "graph_failure": "not captured (torch)"})
    else:
        conv_rows.append({"kind": "torch", "layer": conv["layer"], "variant": "torch (cuDNN)",
                          "skipped": "not installed"})
    return SimpleNamespace(
        dry=False, opts=SimpleNamespace(sgemm_size=size, feature_type="knob", plan_size=64),
        tunings=[_tuning("sgemm.cuda", f"SGEMM {size}", 144, 300.0),
                 _tuning("dense_large_batch.cuda", f"SGEMM {size}", dense_trials, dense_wall_s, invocations=2),
                 _tuning("conv2d_nchw.cuda", conv["layer"], 200, 150.0)],
        gemm_rows=[cublas, tuned], hgemm_rows=[], conv_rows=conv_rows, torch_note=None if torch_ms else "not installed",
        stopped_at_deadline=False, peak={"fp32_gflops": 60000.0})


def test_targets_met(tune_gpu):
    bench = _bench(tune_gpu, 0.95, 1000, 480.0, torch_ms=0.04)
    lines = tune_gpu.Bench.summary(bench)
    assert ("target: tuned SGEMM at 4096 >= 0.9x cuBLAS (the better of sgemm.cuda and dense_large_batch.cuda): "
            "0.950x MET") in lines
    assert ("target: 1000 trials of SGEMM tuning (dense_large_batch.cuda, XGBTuner) in under 10 min: 1000 trials "
            "in 8.0 min (2.08 trials/s) MET") in lines
    assert any(line.startswith("conv2d 56x56x64->64 3x3: tuned 0.0500 ms, 4600 GFLOP/s; 0.80x torch (cuDNN); "
                               "2.50x the untuned default") for line in lines)
    assert "conv2d: no target for the tuned layers (reported, not judged)" in lines
    assert ("dense_large_batch.cuda SGEMM 4096: failed trials: RUN_TIMEOUT 2 (first RUN_TIMEOUT: config 5: the run "
            "took more than the timeout of 30 s; its process was killed)") in lines
    table = tune_gpu.Bench.tables(bench)
    assert "| tecc sgemm.cuda tuned" in table and "0.95x" in table and "45.00" in table
    assert "480.0 (2 runs)" in table  # the dense tuning took two invocations (a resumed run)


def test_targets_not_met_and_not_judged(tune_gpu):
    lines = tune_gpu.Bench.summary(_bench(tune_gpu, 0.5, 1000, 900.0))
    assert any(line.endswith("0.500x NOT MET") for line in lines)
    assert any("1000 trials in 15.0 min (1.11 trials/s) NOT MET" in line for line in lines)
    assert any("torch: not installed" in line for line in lines)
    lines = tune_gpu.Bench.summary(_bench(tune_gpu, 0.95, 700, 350.0))
    assert any("in under 10 min: not judged (700 trials timed at n=4096; at 2.00 trials/s, 1000 trials would "
               "take 8.3 min)" in line for line in lines)
    lines = tune_gpu.Bench.summary(_bench(tune_gpu, 0.95, 1000, 480.0, size=2048))
    assert any(line.endswith("cuBLAS (the better of sgemm.cuda and dense_large_batch.cuda): not judged (n=2048)")
               for line in lines)


def test_the_curves_png(tune_gpu, tmp_path):
    pytest.importorskip("matplotlib")
    bench = _bench(tune_gpu, 0.95, 100, 50.0, torch_ms=0.04)
    path = tune_gpu.plot_curves(bench, str(tmp_path / "curves.png"))
    assert path and os.path.getsize(path) > 1000


@pytest.mark.parametrize("argv, message", [
    (["--dry-run", "--tasks", "sgemm,gemv"], r"--tasks: unknown gemv; choose from sgemm, dense, conv"),
    (["--dry-run", "--convs", "3x3"], r"--convs: unknown layer\(s\) \['3x3'\]"),
    (["--dry-run", "--sgemm-size", "100"], r"--sgemm-size 100: sgemm.cuda needs a multiple of 32"),
    (["--dry-run", "--trials", "-5"], r"--trials must be positive, got -5"),
    (["--dry-run", "--deadline-min", "0"], r"--deadline-min must be positive, got 0"),
])
def test_bad_options_are_refused(tune_gpu, capsys, argv, message):
    with pytest.raises(SystemExit):
        tune_gpu.parse_options(argv)
    assert re.search(message, capsys.readouterr().err)


def test_options_of_a_gpu_run_and_of_a_dry_run(tune_gpu, tmp_path):
    gpu = tune_gpu.parse_options(["--out", str(tmp_path)])
    assert (gpu.sgemm_size, gpu.trials, gpu.conv_trials, gpu.plan_size, gpu.tune_min_repeat_ms) == (4096, 1000, 200,
                                                                                                 64, 50.0)
    assert gpu.sgemm_trials is None and list(gpu.conv_layers) == list(tune_gpu.CONV_LAYERS)
    assert gpu.log_dir == os.path.join(str(tmp_path), "tune_gpu_logs") and gpu.parts == ["sgemm", "dense", "conv"]
    dry = tune_gpu.parse_options(["--dry-run"])
    assert (dry.sgemm_size, dry.trials, dry.conv_trials, dry.plan_size) == (128, 4, 4, 2)
    assert list(dry.conv_layers) == list(tune_gpu.CONV_LAYERS) and dry.log_dir is None  # a temporary folder
    assert dry.conv_layers["56x56x64->64 3x3"] == (8, 8, 8, 3, 1)


def test_needs_a_gpu_without_dry_run(tune_gpu, tmp_path, capsys):
    if tune_gpu.G.has_gpu():
        pytest.skip("a GPU is present: the real run would start")
    assert tune_gpu.main(["--out", str(tmp_path)]) == 2
    assert "no CUDA GPU here" in capsys.readouterr().err


def test_a_wrong_answer_while_tuning_is_a_failure(tune_gpu):
    import time

    from tecc import autotvm
    from tecc.tuner.measure import MeasureInput, MeasureResult

    task = autotvm.task.create("sgemm.cuda", args=(64, 64, 64, "float32"), target="cuda -arch=sm_90")
    records = [(MeasureInput(task.target, task, task.config_space.get(i)), res) for i, res in enumerate([
        MeasureResult([1e-3, 1e-3], 0, 1.0, time.time()),
        MeasureResult(["output 'C' (argument 2) differs from the reference in 3 of 4096 elements"], 5, 1.0,
                      time.time()),
        MeasureResult(["InstantiationError: M=64 is not a multiple of block=128"], 1, 0.0, time.time()),
        MeasureResult([5e-4, 5e-4], 0, 1.0, time.time()),
    ])]
    bench = SimpleNamespace(failures=[], _task_records=lambda t: records)
    info = {"workload": "SGEMM 64"}
    tune_gpu.Bench._summarize_log(bench, task, info)
    assert (info["trials_logged"], info["valid"], info["refused"], info["failed"]) == (4, 2, 1, 1)
    assert info["curve_gflops"] == pytest.approx([2 * 64 ** 3 / 1e-3 / 1e9] * 3 + [2 * 64 ** 3 / 5e-4 / 1e9])
    assert info["best_config_tuning"] == " ".join(f"{k}={task.config_space.get(3)[k].val}"
                                                  for k in task.config_space.space_map)
    assert bench.failures == ["sgemm.cuda SGEMM 64: 1 trial(s) computed a wrong answer while tuning (config 1: "
                              "output 'C' (argument 2) differs from the reference in 3 of 4096 elements)"]


def test_no_tuning_reports_the_log_as_it_is(tune_gpu, tmp_path):
    from tecc import autotvm

    task = autotvm.task.create("sgemm.cuda", args=(64, 64, 64, "float32"), target="cuda -arch=sm_90")
    wall = tune_gpu.WallLog(str(tmp_path / "wall.json"))
    key = f"{task.target}|{task.workload!r}"
    wall.record(key, 10, 20.0)  # an earlier invocation measured 10 trials in 20 s
    bench = SimpleNamespace(opts=SimpleNamespace(no_tuning=True, feature_type="knob"), deadline=None, wall=wall,
                            log_path=str(tmp_path / "log.jsonl"), tunings=[], _task_records=lambda t: [None] * 10,
                            _summarize_log=lambda t, info: None)
    info = tune_gpu.Bench.tune(bench, task, "SGEMM 64", 144, None, None)
    assert info["note"] == "not tuned (--no-tuning): the trials in the log" and info["trials_measured_now"] == 0
    assert (info["wall_trials"], info["wall_s"], info["invocations"], info["trials_per_s"]) == (10, 20.0, 1, 0.5)
    assert tune_gpu.Bench._untuned_note(bench, info) == info["note"] and bench.tunings == [info]
