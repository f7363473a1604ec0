"""autotvm.explain (why the best config won), the tuning curve and its plot, and the
device peaks of the roofline (tecc.runtime.device_peaks).

A real log is made once per module: a small matmul template tuned on the C backend
with the random tuner (16 trials, 64^3), and a tiny CUDA matmul tuned on the emulator
(4 trials; on a GPU, on the GPU)."""
import importlib
import importlib.util
import json
import math
import sys

import numpy as np
import pytest

import tecc
from tecc import autotvm, te
from templates import tiled_matmul
from tecc.errors import TargetError
from tecc.runtime import peaks as peaks_mod
from tecc.tir import keys
from tecc.tir.analysis import estimate_occupancy, storage_bytes, threads_per_block
from tecc.tir.analysis import features as TF
from tecc.tuner import feature, record
from tecc.tuner.explain import MIN_MODEL_RECORDS, Explanation
from tecc.tuner.measure import MeasureInput, MeasureResult
from tecc.tuner.record import RecordError
from tecc.tuner.task.task import Task
from tecc.tuner.tuner import TunerError

HAS_GPU = tecc.cuda(0).exist


@autotvm.template("test_explain/matmul")
def matmul(N, L, M, dtype):
    return tiled_matmul(N, L, M, dtype, vec_knob=True)


@autotvm.template("test_explain/matmul_cuda")
def matmul_cuda(N, L, M):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_knob("ty", [2, 4, 8])
    cfg.define_knob("tx", [4, 8, 16])
    cfg.define_knob("shared", [0, 1])
    AA = s.cache_read(A, "shared", [C]) if cfg["shared"].val else None
    i, j = C.op.axis
    by, ty = s[C].split(i, factor=cfg["ty"].val)
    bx, tx = s[C].split(j, factor=cfg["tx"].val)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    if AA is not None:
        s[AA].compute_at(s[C], tx)
    return s, [A, B, C]


def _tune(task, n_trial, path, runner):
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2), runner=runner)
    tuner = autotvm.tuner.RandomTuner(task, seed=0)
    tuner.tune(n_trial=n_trial, measure_option=option, callbacks=[autotvm.callback.log_to_file(str(path))])
    return str(path)


@pytest.fixture(scope="module")
def cpu_log(tmp_path_factory):
    task = autotvm.task.create("test_explain/matmul", args=(64, 64, 64, "float32"), target="llvm")
    path = _tune(task, 16, tmp_path_factory.mktemp("explain") / "matmul.log",
                 autotvm.LocalRunner(number=2, repeat=2, cooldown_interval=0))
    return task, path


@pytest.fixture(scope="module")
def cpu_explanation(cpu_log):
    _, path = cpu_log
    return autotvm.explain(path, top=5)


@pytest.fixture(scope="module")
def cuda_log(tmp_path_factory):
    task = autotvm.task.create("test_explain/matmul_cuda", args=(16, 16, 16), target="cuda")
    path = _tune(task, 4, tmp_path_factory.mktemp("explain_cuda") / "matmul_cuda.log",
                 autotvm.LocalRunner(number=1, repeat=1, cooldown_interval=0))
    return task, path


# ---------------------------------------------------------------------------------
# explain on a CPU log
# ---------------------------------------------------------------------------------
def test_the_explained_config_is_pick_best_and_its_numbers_agree(cpu_log, cpu_explanation, tmp_path):
    task, path = cpu_log
    assert isinstance(cpu_explanation, Explanation) and len(cpu_explanation) == 1
    sec = cpu_explanation[0]
    assert record.pick_best(path, str(tmp_path / "best.log")) == 1
    (best_inp, best_res), = record.load_from_file(str(tmp_path / "best.log"))
    assert sec.config_index == best_inp.config.index
    assert sec.knobs == {name: (list(v) if isinstance(v, (list, tuple)) else v)
                         for name, _, v in best_inp.config.to_json_dict()["entity"]}
    assert sec.task_name == "test_explain/matmul" and sec.workload == task.workload
    assert sec.n_trials == 16 and sec.n_valid == 16 and sec.measured and not sec.emulated
    assert sec.cost == pytest.approx(np.mean(best_res.costs))
    assert sec.flop == task.flop == 2 * 64 ** 3
    assert sec.gflops == pytest.approx(sec.flop / sec.cost / 1e9)

    r = sec.roofline
    assert r.global_bytes == 3 * 64 * 64 * 4  # A, B and C once each
    assert r.intensity == pytest.approx(sec.flop / r.global_bytes)
    assert r.access_intensity < r.intensity  # every access counted moves more bytes
    peaks = tecc.runtime.device_peaks("llvm")
    assert r.peak_flops == peaks.flops and r.bandwidth == peaks.bandwidth and r.peaks_source == peaks.source
    if peaks.flops is None:  # a machine that exposes no CPU clock
        assert r.attainable is None and "peaks are unknown" in r.note
    else:
        assert r.attainable == pytest.approx(min(peaks.flops, r.intensity * peaks.bandwidth))
        assert r.attainable <= r.peak_flops
        assert r.achieved == pytest.approx(sec.flop / sec.cost)
        assert r.fraction == pytest.approx(r.achieved / r.attainable)
        assert r.bound == ("memory-bound" if r.intensity < peaks.flops / peaks.bandwidth else "compute-bound")
        assert any("no parallel loop" in n for n in sec.notes)

    # the loops reported are the config's
    inner_x = sec.knobs["tile_x"][-1]
    vectorized = sec.knobs["vec"] == 1 and inner_x > 1
    assert (sec.cpu.vectorized_loops == [f"j.inner x {inner_x}"]) == vectorized
    assert sec.cpu.vector_width == (inner_x if vectorized else 1)
    assert sec.kernel is None and sec.cpu.parallel_loops == []
    d = json.loads(json.dumps(cpu_explanation.to_dict()))
    assert d["source"] == path and d["sections"][0]["roofline"]["attainable"] == r.attainable
    assert d["sections"][0]["knobs"] == sec.knobs and d["sections"][0]["gflops"] == sec.gflops
    assert len(d["sections"][0]["model"]["effects"]) == 5 and "cost_model" not in d["sections"][0]["model"]


def test_the_shap_contributions_name_real_features_and_add_up_to_the_margin(cpu_log, cpu_explanation):
    task, _ = cpu_log
    m = cpu_explanation[0].model
    assert m.trained and m.n_configs == 16 and len(m.effects) == 5
    names = set(feature.feature_names(task, "itervar"))
    for e in m.effects:
        assert e.name in names
        assert e.effect == pytest.approx(e.best_contribution - e.mean_contribution)
        assert "pushed the predicted score" in e.sentence
    assert [abs(e.effect) for e in m.effects] == sorted((abs(e.effect) for e in m.effects), reverse=True)
    # SHAP: the contributions plus the bias are the model's margin for the best config
    x, valid = m.cost_model.features([cpu_explanation[0].config_index])
    assert valid[0]
    margin = float(m.cost_model.predict_features(x, output_margin=True)[0])
    assert float(np.sum(m.best_contributions)) == pytest.approx(margin, abs=1e-4)
    assert m.margin_best == pytest.approx(margin, abs=1e-5)
    assert m.bias == pytest.approx(float(m.best_contributions[-1]))
    # the values reported are raw: a vector width is a lane count, not its log2
    for e in m.effects:
        if e.name == "fn.vector_width":
            assert e.best == cpu_explanation[0].cpu.vector_width
    assert -1.0 <= m.rank_correlation <= 1.0


def test_the_report_renders_as_text_and_html(cpu_explanation):
    text = str(cpu_explanation)
    sec = cpu_explanation[0]
    for word in ("tile_y", "tile_x", "vec", "roofline", "GFLOPS", "why the cost model prefers it",
                 sec.model.effects[0].label):
        assert word in text
    # the knob table's value column lines up
    knob_lines = [line for line in text.splitlines() if line.strip().startswith(("tile_y", "tile_x"))]
    assert len({line.index("[") for line in knob_lines}) == 1
    page = cpu_explanation._repr_html_()
    assert page.count("<table>") >= 4 and "tile_x" in page
    assert "&#x27;float32&#x27;" in page and "'float32'" not in page  # escaped
    assert "Explanation(1 workload(s)" in repr(cpu_explanation)


def test_model_trials_and_top_limit_the_model_part(cpu_log):
    _, path = cpu_log
    few = autotvm.explain(path, model_trials=MIN_MODEL_RECORDS - 1)[0].model
    assert not few.trained and f"at least {MIN_MODEL_RECORDS}" in few.reason
    with_task = autotvm.explain(cpu_log[0], log=path, top=2, model_trials=MIN_MODEL_RECORDS)[0]
    assert with_task.model.trained and with_task.model.n_configs == MIN_MODEL_RECORDS
    assert len(with_task.model.effects) == 2
    assert with_task.config_index in with_task.model.indexes  # the best is always among them


def test_a_task_without_records_is_explained_by_its_fallback_config(cpu_log):
    task, _ = cpu_log
    sec = autotvm.explain(task)[0]
    assert not sec.measured and sec.cost is None and sec.gflops is None and sec.config_index is None
    assert sec.knobs == {"tile_y": [-1, 1], "tile_x": [-1, 1], "vec": 0}
    assert sec.cpu.vectorized_loops == [] and sec.loop_nest == "C#1: i.outer(64) j.outer(64) k(64)"
    assert sec.roofline.achieved is None and "no measured time" in sec.roofline.note
    assert not sec.model.trained and "no measured configs" in sec.model.reason
    assert "fallback config" in str(autotvm.explain(task))


# ---------------------------------------------------------------------------------
# explain on a CUDA log
# ---------------------------------------------------------------------------------
def test_cuda_kernel_facts_are_those_of_the_lowered_kernel(cuda_log, cpu_log):
    task, path = cuda_log
    sec = autotvm.explain(path)[0]
    cfg = task.config_space.get(sec.config_index)
    s, args = task.instantiate(cfg)
    mod = tecc.lower(s, args, target="cuda")
    kernels = [f for f in mod.functions.values() if f.attrs.get(keys.KERNEL)]
    assert len(kernels) == 1 == sec.kernel.num_kernels
    threads = threads_per_block(kernels[0])
    shared = storage_bytes(kernels[0], "shared")
    assert threads == sec.knobs["ty"] * sec.knobs["tx"] == sec.kernel.threads_per_block
    assert shared == sec.kernel.shared_bytes == (sec.knobs["ty"] * 16 * 4 if sec.knobs["shared"] else 0)
    assert sec.kernel.blocks == (16 // sec.knobs["ty"]) * (16 // sec.knobs["tx"])
    arch = tecc.cuda_codegen.cuda_arch("cuda")
    occ = estimate_occupancy(threads, shared, 0, arch)
    assert sec.kernel.arch == arch and sec.kernel.occupancy == occ.occupancy
    assert sec.kernel.blocks_per_sm == occ.blocks_per_sm and sec.kernel.registers_est == occ.registers_per_thread
    assert sec.kernel.limited_by == occ.limited_by
    if shared == 0:
        assert occ.limited_by != "shared"
    assert sec.cpu is None
    text = str(autotvm.explain(path))
    assert "threads per block" in text and "occupancy (est.)" in text
    if not HAS_GPU:
        assert sec.emulated and "emulator" in sec.roofline.note and sec.roofline.attainable is None
        assert "[emulated" in text
    assert not sec.model.trained and "at least" in sec.model.reason  # 4 trials

    # a log of two workloads gives two sections; task= picks one
    both = list(record.load_from_file(cpu_log[1])) + list(record.load_from_file(path))
    assert [s.task_name for s in autotvm.explain(both, model_trials=MIN_MODEL_RECORDS)] == [
        "test_explain/matmul", "test_explain/matmul_cuda"]
    only = autotvm.explain(both, task=task)
    assert len(only) == 1 and only[0].task_name == "test_explain/matmul_cuda"


# ---------------------------------------------------------------------------------
# explain's errors
# ---------------------------------------------------------------------------------
def _records(task, outcomes):
    """Hand-made records: ``(config index, cost or None for a failure)`` each."""
    out = []
    for index, cost in outcomes:
        config = task.config_space.get(index)
        if cost is None:
            out.append((MeasureInput(task.target, task, config), MeasureResult(["it broke"], 4, 0.0, 0.0)))
        else:
            out.append((MeasureInput(task.target, task, config), MeasureResult([cost], 0, 0.0, 0.0)))
    return out


@pytest.fixture(scope="module")
def small_task():
    return autotvm.task.create("test_explain/matmul", args=(8, 8, 8, "float32"), target="llvm")


def test_explain_errors_name_what_is_wrong(tmp_path, small_task):
    with pytest.raises(RecordError, match=r"no records file '.*nowhere.log'; pass the file the log_to_file"):
        autotvm.explain(str(tmp_path / "nowhere.log"))
    failed = tmp_path / "failed.log"
    record.save_to_file(_records(small_task, [(1, None), (2, None)]), str(failed))
    with pytest.raises(RecordError, match=r"failed.log holds no valid record \(2 trial\(s\), every one failed: "
                                          r"RUNTIME_DEVICE x2; the first says: it broke\)"):
        autotvm.explain(str(failed))
    other = autotvm.task.create("test_explain/matmul", args=(4, 4, 4, "float32"), target="llvm")
    with pytest.raises(TunerError, match=r"has no records of workload \('test_explain/matmul', 4, 4, 4, "
                                         r"'float32'\) on llvm; it holds: .*8, 8, 8"):
        autotvm.explain(_records(small_task, [(1, 1e-3)]), task=other)
    with pytest.raises(RecordError, match=r"holds no valid record of workload"):
        autotvm.explain(_records(small_task, [(1, None)]), task=small_task)

    ghost = Task("test_explain/not_registered", (8,), target="llvm")
    ghost_rec = (MeasureInput(ghost.target, ghost, small_task.config_space.get(0)), MeasureResult([1e-3], 0, 0, 0))
    with pytest.raises(TunerError, match=r"template 'test_explain/not_registered' is not registered in this "
                                         r"process; import the module that defines it"):
        autotvm.explain([ghost_rec])

    moved = small_task.config_space.get(5)
    moved.index = 3  # the knobs of point 5 under the index of point 3: the template changed
    with pytest.raises(TunerError, match=r"config #3 of 'test_explain/matmul' is .* in the template now but .* in "
                                         r"the record: the template changed"):
        autotvm.explain([(MeasureInput(small_task.target, small_task, moved), MeasureResult([1e-3], 0, 0, 0))])
    beyond = small_task.config_space.get(0)
    beyond.index = 10_000
    with pytest.raises(TunerError, match=r"names config #10000, but the template's space has \d+ points now"):
        autotvm.explain([(MeasureInput(small_task.target, small_task, beyond), MeasureResult([1e-3], 0, 0, 0))])


def test_explain_argument_errors(small_task):
    recs = _records(small_task, [(1, 1e-3)])
    with pytest.raises(TunerError, match=r"top must be a positive int"):
        autotvm.explain(recs, top=0)
    with pytest.raises(TunerError, match=r"model_trials must be a positive int or None"):
        autotvm.explain(recs, model_trials=0)
    with pytest.raises(TunerError, match=r"cannot explain a int; pass a records file"):
        autotvm.explain(42)
    with pytest.raises(TunerError, match=r"item 1 of the records is a str, not a \(MeasureInput, MeasureResult\)"):
        autotvm.explain([recs[0], "oops"])
    with pytest.raises(TunerError, match=r"a Task is given both as the source and as task="):
        autotvm.explain(small_task, task=autotvm.task.create("test_explain/matmul", (4, 4, 4, "float32"), "llvm"))
    with pytest.raises(TunerError, match=r"log= goes with a Task as the source"):
        autotvm.explain(recs, log="x.log")
    bare = Task("test_explain/matmul", (8, 8, 8, "float32"), target="llvm")
    with pytest.raises(TunerError, match=r"task 'test_explain/matmul' has no config space"):
        autotvm.explain(recs, task=bare)


# ---------------------------------------------------------------------------------
# the tuning curve
# ---------------------------------------------------------------------------------
def test_tuning_curve_is_the_best_so_far_with_failures_counted(small_task):
    recs = _records(small_task, [(1, 4e-6), (2, None), (3, 2e-6), (4, 8e-6), (5, None), (6, 1e-6)])
    trials, best = autotvm.tuning_curve(recs)
    flop = small_task.flop  # 2 * 8^3 = 1024
    assert flop == 1024
    np.testing.assert_array_equal(trials, [1, 2, 3, 4, 5, 6])
    np.testing.assert_allclose(best, np.array([4e-6, 4e-6, 2e-6, 2e-6, 2e-6, 1e-6]) ** -1 * flop / 1e9)
    _, best_time = autotvm.tuning_curve(recs, metric="time")
    np.testing.assert_allclose(best_time, [4e-6, 4e-6, 2e-6, 2e-6, 2e-6, 1e-6])
    late = _records(small_task, [(1, None), (2, 5e-6)])
    np.testing.assert_allclose(autotvm.tuning_curve(late)[1], [0.0, flop / 5e-6 / 1e9])
    assert np.isnan(autotvm.tuning_curve(late, metric="time")[1][0])


def test_tuning_curve_reads_a_log_file(cpu_log):
    _, path = cpu_log
    trials, best = autotvm.tuning_curve(path)
    recs = list(record.load_from_file(path))
    assert len(trials) == 16 and np.all(np.diff(best) >= 0)
    assert best[-1] == pytest.approx(max(2 * 64 ** 3 / np.mean(r.costs) / 1e9 for _, r in recs))


def test_tuning_curve_errors(tmp_path, small_task):
    recs = _records(small_task, [(1, 1e-3)])
    with pytest.raises(TunerError, match=r"metric must be one of \('gflops', 'time'\), got 'speed'"):
        autotvm.tuning_curve(recs, metric="speed")
    with pytest.raises(TunerError, match=r"the list holds no records; tune first"):
        autotvm.tuning_curve([])
    with pytest.raises(RecordError, match=r"no records file '.*missing.log'"):
        autotvm.tuning_curve(str(tmp_path / "missing.log"))
    with pytest.raises(TunerError, match=r"the log holds 2 workloads .*split the records by workload"):
        other = autotvm.task.create("test_explain/matmul", args=(4, 4, 4, "float32"), target="llvm")
        autotvm.tuning_curve(recs + _records(other, [(0, 1e-3)]))
    with pytest.raises(TunerError, match=r"item 0 of the records is a int"):
        autotvm.tuning_curve([3])
    with pytest.raises(TunerError, match=r"a log is a records file or a list .* not a float"):
        autotvm.tuning_curve(1.5)
    ghost = Task("test_explain/not_registered", (8,), target="llvm")
    ghost_recs = [(MeasureInput(ghost.target, ghost, small_task.config_space.get(0)), MeasureResult([1e-3], 0, 0, 0))]
    with pytest.raises(TunerError, match=r"GFLOPS need the flop count of task 'test_explain/not_registered'.*"
                                         r"or plot metric='time'"):
        autotvm.tuning_curve(ghost_recs)
    assert autotvm.tuning_curve(ghost_recs, metric="time")[1].tolist() == [1e-3]


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                    reason="matplotlib is not installed (plot_tuning_curve needs it; pip install matplotlib)")
def test_plot_tuning_curve_writes_a_png(tmp_path, small_task):
    import matplotlib.pyplot as plt

    a = _records(small_task, [(1, 4e-6), (2, None), (3, 2e-6)])
    b = _records(small_task, [(4, 3e-6), (5, 1e-6)])
    png = tmp_path / "curve.png"
    ax = autotvm.plot_tuning_curve({"random": a, "xgb": b}, path=str(png))
    try:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        lines = ax.get_lines()
        assert [line.get_label() for line in lines] == ["random", "xgb"]
        np.testing.assert_allclose(lines[0].get_ydata(), autotvm.tuning_curve(a)[1])
        assert ax.get_ylabel() == "best GFLOPS so far"
    finally:
        plt.close(ax.figure)
    fig, ax2 = plt.subplots()
    try:
        log = tmp_path / "b.log"
        record.save_to_file(b, str(log))
        assert autotvm.plot_tuning_curve([str(log), a], labels=["log", "hand"], ax=ax2, metric="time") is ax2
        np.testing.assert_allclose(ax2.get_lines()[0].get_ydata(), [3e-3, 1e-3])  # milliseconds
        assert len(ax2.get_lines()) == 2 and ax2.get_ylabel() == "best time so far (ms)"
        with pytest.raises(TunerError, match=r"1 label\(s\) for 2 log\(s\)"):
            autotvm.plot_tuning_curve([a, b], labels=["one"], ax=ax2)
    finally:
        plt.close(fig)


def test_plot_tuning_curve_without_matplotlib_says_how_to_install_it(monkeypatch, small_task):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    with pytest.raises(TunerError, match=r"plot_tuning_curve needs matplotlib: pip install matplotlib"):
        autotvm.plot_tuning_curve(_records(small_task, [(1, 1e-3)]))
    with pytest.raises(TunerError, match=r"plot_tuning_curve: metric must be one of"):
        autotvm.plot_tuning_curve(_records(small_task, [(1, 1e-3)]), metric="gflop")
    with pytest.raises(TunerError, match=r"a dict of logs already names them"):
        autotvm.plot_tuning_curve({"a": []}, labels=["a"])
    with pytest.raises(TunerError, match=r"plot_tuning_curve: no logs given"):
        autotvm.plot_tuning_curve([])


# ---------------------------------------------------------------------------------
# device peaks
# ---------------------------------------------------------------------------------
def test_cpu_peaks_are_plausible_and_the_bandwidth_is_measured_once(monkeypatch):
    calls = []
    real = peaks_mod.measure_cpu_bandwidth

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(peaks_mod, "measure_cpu_bandwidth", counting)
    peaks_mod.clear_cache()
    try:
        p = tecc.runtime.device_peaks("llvm")
        again = tecc.runtime.device_peaks("llvm -mattr=+avx512f")
    finally:
        monkeypatch.undo()
    assert len(calls) == 1  # measured once per process
    assert again.bandwidth == p.bandwidth
    assert 1e8 < p.bandwidth < 1e13 and "measured" in p.source and "64 MiB" in p.source
    if p.flops is not None:  # None only where no clock is exposed
        assert 1e8 < p.flops < 1e15
        assert again.flops == pytest.approx(4 * p.flops)  # 16 lanes against 4
        assert tecc.runtime.device_peaks(tecc.target.Target("llvm -mcpu=skylake-avx512")).flops == again.flops
        assert p.ridge == pytest.approx(p.flops / p.bandwidth)
        assert p.attainable(1e9) == p.flops and p.attainable(0.5) == pytest.approx(0.5 * p.bandwidth)
    assert p.device and json.dumps(p.to_dict())


@pytest.mark.skipif(HAS_GPU, reason="checks the answer where there is no GPU")
def test_cuda_peaks_without_a_gpu_are_unknown_and_say_why():
    p = tecc.runtime.device_peaks("cuda")
    assert p.flops is None and p.bandwidth is None and not p.known and p.ridge is None
    assert "no CUDA GPU here" in p.source and "emulator" in p.source
    assert p.attainable(10.0) is None


def test_gpu_peaks_from_device_facts():
    h100 = {"name": "NVIDIA H100 80GB HBM3", "compute_version": "9.0", "MultiProcessorCount": 132,
            "GlobalMemoryBusWidth": 5120, "sm_clock_max_mhz": 1980, "memory_clock_max_mhz": 2619,
            "ClockRate": 1_755_000, "MemoryClockRate": 2_619_000}
    p = peaks_mod.gpu_peaks_from_facts(h100)
    assert p.flops == pytest.approx(132 * 128 * 2 * 1980e6)  # 66.9 TFLOP/s
    assert p.bandwidth == pytest.approx(2619e6 * 2 * 5120 / 8)  # 3.35 TB/s
    assert "NVML max clock" in p.source and p.device == h100["name"]
    no_nvml = {k: v for k, v in h100.items() if not k.endswith("_mhz")}
    assert peaks_mod.gpu_peaks_from_facts(no_nvml).flops == pytest.approx(132 * 128 * 2 * 1755e6)
    assert "device attribute ClockRate" in peaks_mod.gpu_peaks_from_facts(no_nvml).source
    unknown = peaks_mod.gpu_peaks_from_facts({"name": "future GPU", "compute_version": "42.0"})
    assert unknown.flops is None and unknown.bandwidth is None
    assert "FP32 lanes per SM of compute capability 42.0" in unknown.source and "bus width" in unknown.source
    assert math.isclose(p.ridge, p.flops / p.bandwidth)
    # the tensor cores' roof: 4096 dense FP16 FLOPs per SM per clock on Hopper
    assert p.tensor_flops == pytest.approx(132 * 4096 * 1980e6) and "FP16 tensor: 132 SMs x 4096" in p.source
    assert p.tensor_cores().flops == p.tensor_flops and p.tensor_cores().bandwidth == p.bandwidth
    assert unknown.tensor_flops is None and unknown.tensor_cores() is unknown


def test_device_peaks_errors():
    with pytest.raises(TargetError, match=r"target 'opencl' is not one tecc runs on; use 'llvm'"):
        tecc.runtime.device_peaks("opencl")
    with pytest.raises(TargetError, match=r"device cpu\(0\) is not a CUDA device; pass tecc.cuda\(i\)"):
        tecc.runtime.device_peaks("cuda", device=tecc.cpu(0))
    with pytest.raises(TargetError, match=r"device cuda\(0\) is not the CPU; leave it out"):
        tecc.runtime.device_peaks("llvm", device=tecc.cuda(0))


def test_a_tensor_core_kernel_sits_under_the_tensor_roof(monkeypatch):
    """explain's roofline takes the tensor cores' FLOP/s as the compute roof of a
    kernel whose arithmetic is wmma calls (the FP32 roof would put it above 100%)."""
    import warnings
    from types import SimpleNamespace

    from tecc.topi.cuda.dense_tensorcore import dense_tensorcore, schedule_dense_tensorcore
    X = importlib.import_module("tecc.tuner.explain")  # (tecc.tuner.explain is also the function's name)

    h100 = {"name": "NVIDIA H100", "compute_version": "9.0", "MultiProcessorCount": 132, "GlobalMemoryBusWidth": 5120,
            "sm_clock_max_mhz": 1980, "memory_clock_max_mhz": 2619}
    monkeypatch.setattr(tecc.runtime, "device_peaks", lambda target, device=None: peaks_mod.gpu_peaks_from_facts(h100))
    n = 64
    A, W = te.placeholder((n, n), "float16", name="A"), te.placeholder((n, n), "float16", name="W")
    with warnings.catch_warnings(), tecc.target.Target("cuda"):
        warnings.simplefilter("ignore")
        out = dense_tensorcore(A, W, None, "float32")
        s = schedule_dense_tensorcore([out])
    ff = TF.extract_features(tecc.lower(s, [A, W, out], target="cuda"))
    roof = X._roofline(SimpleNamespace(target="cuda"), ff, 2 * n ** 3, 1e-6, False, {})
    assert roof.compute_roof == "FP16 tensor" and roof.peak_flops == pytest.approx(132 * 4096 * 1980e6)
