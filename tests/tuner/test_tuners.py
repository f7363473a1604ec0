"""The tuners, the tuning loop, records and apply_history_best, on a synthetic
builder and runner whose costs are a known function of the knobs (tests/tuner/
synthetic.py): the search is tested exactly and fast; test_measure.py tests the real
builder and runner, test_tune_end_to_end.py the whole flow on the C backend."""
import json
import os
import warnings

import numpy as np
import pytest

import tecc
from tecc import autotvm, topi  # noqa: F401 -- topi registers its tasks
from tecc.tuner import record
from tecc.tuner.tuner import GATuner, GridSearchTuner, RandomTuner, XGBTuner, submodular_pick
from tecc.tuner.tuner.tuner import TunerError

import synthetic as S


@pytest.fixture(scope="module")
def task():
    return autotvm.task.create("test/synthetic_matmul", args=(256,), target="llvm")


def tuners(task, seed=0):
    return {
        "random": RandomTuner(task, seed=seed),
        "grid": GridSearchTuner(task),
        "ga": GATuner(task, pop_size=16, seed=seed),
        "xgb-rank": XGBTuner(task, plan_size=16, feature_type="knob", loss_type="rank", seed=seed),
        "xgb-reg": XGBTuner(task, plan_size=16, feature_type="knob", loss_type="reg", seed=seed,
                            diversity_filter_ratio=2),
    }


@pytest.mark.parametrize("name", ["random", "grid", "ga", "xgb-rank", "xgb-reg"])
def test_every_tuner_measures_distinct_configs_and_keeps_the_best(task, name):
    opt, builder = S.synthetic_option()
    tuner = tuners(task)[name]
    monitor = autotvm.callback.Monitor()
    tuner.tune(60, opt, callbacks=[monitor])
    assert len(builder.built) == 60 and len(set(builder.built)) == 60  # no config measured twice
    scores = monitor.trial_scores()
    assert tuner.best_flops == pytest.approx(scores.max())
    assert S.landscape(tuner.best_config) == pytest.approx(task.flop / tuner.best_flops)
    assert all(s == 0 for s, i in zip(scores, builder.built) if i % 13 == 0)  # failures score 0


def test_the_tuning_loop_says_where_its_time_went(task):
    import time  # noqa: PLC0415

    opt, _ = S.synthetic_option()
    tuner = XGBTuner(task, plan_size=16, feature_type="knob", seed=0)
    batches = []
    started = time.perf_counter()
    tuner.tune(48, opt, callbacks=[lambda t, i, r: (batches.append(len(r)), time.sleep(0.01))])
    wall = time.perf_counter() - started
    spent = tuner.time_spent
    assert list(spent) == ["search", "build_wait", "run", "model", "callbacks"]
    assert spent["callbacks"] >= 0.01 * len(batches)  # the sleeping callback's time, in its part
    assert spent["search"] > 0 and spent["model"] > 0 and spent["run"] > 0
    assert sum(spent.values()) <= wall


def test_xgb_tuner_finds_the_optimum_in_far_fewer_trials_than_random(task):
    """The model learns the landscape: over three seeds, XGBTuner reaches the
    optimum in a third of the trials RandomTuner needs or fewer."""
    best = S.optimum(task.config_space)

    def trials_to_optimum(tuner, budget):
        opt, _ = S.synthetic_option()
        monitor = autotvm.callback.Monitor()
        tuner.tune(budget, opt, callbacks=[monitor])
        hits = np.nonzero(monitor.trial_scores() >= task.flop / best * (1 - 1e-9))[0]
        return int(hits[0]) + 1 if len(hits) else budget + 1

    space = len(task.config_space)
    rnd = [trials_to_optimum(RandomTuner(task, seed=s), space) for s in range(3)]
    budget = int(np.mean(rnd)) // 3 + 8  # enough to pass the test, not to search everything
    xgb = [trials_to_optimum(XGBTuner(task, plan_size=16, feature_type="knob", seed=s), budget) for s in range(3)]
    assert np.mean(xgb) * 3 <= np.mean(rnd), (xgb, rnd)


def test_early_stopping_and_an_exhausted_space(task):
    opt, builder = S.synthetic_option()
    tuner = GridSearchTuner(task)
    tuner.tune(len(task.config_space) + 50, opt, early_stopping=20)
    assert len(builder.built) <= tuner.best_iter + 20 + 8  # stops within a batch of the limit
    small = autotvm.task.create("test/synthetic_matmul", args=(4,), target="llvm")
    opt, builder = S.synthetic_option()
    RandomTuner(small, seed=1).tune(1000, opt)
    assert sorted(builder.built) == list(range(len(small.config_space)))  # each once, then it stops


def test_log_to_file_resume_pick_best_and_apply_history_best(task, tmp_path):
    log = str(tmp_path / "matmul.json")
    opt, builder = S.synthetic_option()
    RandomTuner(task, seed=3).tune(40, opt, callbacks=[autotvm.callback.log_to_file(log)])
    lines = open(log).read().splitlines()
    assert len(lines) == 40
    row = json.loads(lines[0])
    for field in ("device", "cc", "tecc", "nvrtc", "compute_capability", "emulated"):
        assert field in row["env"]
    failed = [json.loads(line) for line in lines if json.loads(line)["result"][1] != 0]
    assert all(f["error"] == "synthetic failure" for f in failed)

    # a second run with the same log resumes: the 40 trials are not measured again
    opt, builder2 = S.synthetic_option()
    tuner = XGBTuner(task, plan_size=16, feature_type="knob", seed=3)
    tuner.tune(70, opt, callbacks=[autotvm.callback.log_to_file(log)])
    assert len(builder2.built) == 30 and not set(builder2.built) & set(builder.built)
    assert len(open(log).read().splitlines()) == 70

    best_file = str(tmp_path / "best.json")
    assert record.pick_best(log, best_file) == 1
    (inp, res), = record.load_from_file(best_file)
    everything = list(record.load_from_file(log))
    ok = [r for r in everything if r[1].error_no == 0]
    assert np.mean(res.costs) == min(np.mean(r[1].costs) for r in ok)

    # apply_history_best: calling the template builds the best config
    with autotvm.apply_history_best(log) as ctx:
        with tecc.target.Target("llvm"):
            s, args = S.synthetic_matmul(256)
        cfg = ctx.query(tecc.target.Target("llvm"), ("test/synthetic_matmul", 256))
    assert cfg.index == inp.config.index
    lowered = str(tecc.lower(s, args))
    assert f"for (i.inner, 0, {cfg['tile_y'].size[-1]})" in lowered  # the best config's splits
    assert f"for (j.inner, 0, {cfg['tile_x'].size[-1]})" in lowered


def test_a_truncated_last_record_is_skipped_with_a_warning(task, tmp_path):
    log = str(tmp_path / "killed.json")
    opt, _ = S.synthetic_option()
    RandomTuner(task, seed=4).tune(10, opt, callbacks=[autotvm.callback.log_to_file(log)])
    text = open(log).read()
    with open(log, "w") as f:  # the process was killed while writing the 10th line
        f.write(text[: len(text) - 40])
    with pytest.warns(record.RecordWarning, match="line 10 is a truncated record"):
        rows = list(record.load_from_file(log))
    assert len(rows) == 9
    # and tuning resumes from it
    opt, builder = S.synthetic_option()
    with pytest.warns(record.RecordWarning):
        RandomTuner(task, seed=5).tune(15, opt, callbacks=[autotvm.callback.log_to_file(log)])
    assert len(builder.built) == 6


def test_records_of_another_format_or_corrupt_lines_are_errors(tmp_path):
    other = tmp_path / "tvm.json"
    other.write_text(json.dumps({"input": ["llvm", "x", [], {}], "config": {}, "result": [[1], 0, 1, 1],
                                 "version": 0.2, "tvm_version": "0.13.0"}) + "\n")
    with pytest.raises(record.RecordError, match=r"tvm.json, line 1: not a tecc tuning record \(format 0.2"):
        list(record.load_from_file(str(other)))
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json\n" + "{}\n")
    with pytest.raises(record.RecordError, match="corrupt.json, line 1: not a JSON record"):
        list(record.load_from_file(str(corrupt)))
    with pytest.raises(record.RecordError, match="no records file"):
        list(record.load_from_file(str(tmp_path / "missing.json")))


def test_records_from_another_device_warn_and_emulated_times_skip_a_real_gpu(task, tmp_path, monkeypatch):
    log = str(tmp_path / "other.json")
    opt, _ = S.synthetic_option()
    RandomTuner(task, seed=6).tune(12, opt, callbacks=[autotvm.callback.log_to_file(log)])
    rows = [json.loads(line) for line in open(log)]
    for r in rows:
        r["env"]["device"] = "Some Other CPU"
    with open(log, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(record.RecordWarning, match="measured with device 'Some Other CPU'"):
        autotvm.apply_history_best(log)

    # an emulated "cuda" record is applied without a GPU, never with one
    inp, res = next((i, r) for i, r in record.load_from_file(log) if r.error_no == 0)
    cuda_inp = autotvm.MeasureInput(tecc.target.Target("cuda"), inp.task, inp.config)
    emu = res._replace(emulated=True)
    env = record.environment("cuda")
    line = record.encode(cuda_inp, emu, env=env)
    wl = inp.task.workload
    assert autotvm.ApplyHistoryBest([record.decode(line)])._query_inside(tecc.target.Target("cuda"), wl) is not None
    monkeypatch.setattr(record, "_gpu_environment", lambda: ("NVIDIA H100", "9.0", "580.0", False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = autotvm.ApplyHistoryBest([record.decode(line)])
    assert ctx._query_inside(tecc.target.Target("cuda"), wl) is None


def test_submodular_pick_prefers_good_and_different_configs():
    scores = [1.0, 0.99, 0.98, 0.2]
    knobs = [[0, 0], [0, 0], [1, 1], [2, 2]]
    assert submodular_pick(scores, knobs, 2) == [0, 2]  # not the near-copy of the best


def test_tuner_errors(task):
    with pytest.raises(TunerError, match="range_idx .* is outside the space of 324 configs"):
        RandomTuner(task, range_idx=(0, 1000))
    with pytest.raises(TunerError, match="feature_type must be one of"):
        XGBTuner(task, feature_type="pixels")
    with pytest.raises(TunerError, match="loss_type must be one of"):
        XGBTuner(task, loss_type="hinge")
    with pytest.raises(TunerError, match="epsilon .* must be between 0 and 1, got 1.5"):
        XGBTuner(task, epsilon=1.5)
    with pytest.raises(TunerError, match="elite_num"):
        GATuner(task, pop_size=2, elite_num=3)
    with pytest.raises(TunerError, match="n_trial must be a non-negative integer"):
        RandomTuner(task).tune(-1, S.synthetic_option()[0])
    with pytest.raises(tecc.errors.TeccError, match="the folder .* does not exist"):
        autotvm.callback.log_to_file("/no/such/folder/log.json")
    with pytest.raises(tecc.errors.TeccError, match="unknown builder 'remote'"):
        autotvm.measure_option(builder="remote", runner="local")


def test_progress_bar_reports_trials_errors_and_best(task, capsys):
    opt, _ = S.synthetic_option()
    RandomTuner(task, seed=7).tune(26, opt, callbacks=[autotvm.callback.progress_bar(26, prefix="mm")])
    err = capsys.readouterr().err
    assert "mm" in err and "26/26" in err and "GFLOPS" in err and "errors" in err


def test_annealing_finds_a_new_models_best_far_from_where_its_walkers_ended(task):
    """Persistent walkers that climbed to one model's best sit on measured configs;
    when the next model peaks elsewhere, the search must still find that peak (in a
    replay of the conv2d space the collapsed walkers missed it by a wide margin)."""
    from tecc.tuner.tuner.model_based_tuner import CostModel
    from tecc.tuner.tuner.sa_model_optimizer import SimulatedAnnealingOptimizer

    space = task.config_space
    n = len(space)

    class Peak(CostModel):
        """Scores fall with the knob distance from ``peak``, in steps of 100
        (a ranking model's margins have no fixed scale); config 0, measured, stays
        the model's favourite, so every move away from it looks much worse."""

        def __init__(self, peak):
            self.peak = space.point2knob(peak)

        def predict(self, xs, output_margin=False):
            return np.array([1e4 if i == 0 else -100.0 * sum(abs(a - b) for a, b in zip(space.point2knob(i), self.peak))
                             for i in xs])

    sa = SimulatedAnnealingOptimizer(task, n_iter=100, parallel_size=32, early_stop=20, seed=0)
    first = sa.find_maximums(Peak(0), 8, exclusive=set())
    assert first[0] == 0
    visited = set(first)
    sa.points = [0] * 32  # every walker ended on the old peak, which is measured now
    far = n - 1
    found = sa.find_maximums(Peak(far), 8, exclusive=visited)
    assert found[0] == far


def test_model_tuners_random_picks_skip_configs_the_template_refuses():
    """A space where the template refuses many points (the flat convolution's: a
    task holding an empty channel tile, or overflowing its buffer): the XGBTuner's
    random picks draw again when the features show a config does not lower, so its
    first plan measures no refusal; RandomTuner, which has no model to ask, does."""
    args = (("TENSOR", (1, 4, 56, 56), "float32"), ("TENSOR", (16, 4, 3, 3), "float32"), 1, 1, 1, "float32")
    conv = autotvm.task.create("conv2d_nchw_flat.x86", args=args, target="llvm -mcpu=core-avx2")

    def refused(configs):
        n = 0
        for cfg in configs:
            try:
                conv.instantiate(cfg)
            except autotvm.task.space.InstantiationError:
                n += 1
        return n

    xgb = XGBTuner(conv, plan_size=16, seed=0)
    assert refused(xgb.next_batch(16)) == 0
    assert refused(RandomTuner(conv, seed=0).next_batch(16)) > 0


def test_a_baseline_record_competes_with_the_tuned_configs_and_tuning_ignores_it(task, tmp_path):
    """``tecc tune`` records each task's untuned schedule (the fallback config) as a
    baseline: apply_history_best answers the fallback where it ran faster than every
    tuned config, the tuned config where one beat it; resuming, tuning curves and
    explain leave it out."""
    from tecc.autotvm.measure import MeasureInput, MeasureResult

    log = str(tmp_path / "log.json")
    opt, _ = S.synthetic_option()
    RandomTuner(task, seed=0).tune(12, opt, callbacks=[autotvm.callback.log_to_file(log)])
    best = min(np.mean(r.costs) for _, r in record.load_from_file(log) if r.error_no == 0)
    target = tecc.target.Target("llvm")
    workload = ("test/synthetic_matmul", 256)

    def append_baseline(cost):
        inp = MeasureInput(task.target, task, autotvm.FallbackConfigEntity())
        autotvm.callback.log_to_file(log)(None, [inp], [MeasureResult([cost], 0, 0.1, 0.0)])

    append_baseline(best * 2)  # slower than the tuned best: the tuned config stays
    (inp, res), = [r for r in record.load_from_file(log) if record.is_baseline(r[0])]
    assert inp.config.is_fallback and inp.config.index == -1 and res.mean_cost == pytest.approx(best * 2)
    with autotvm.apply_history_best(log) as ctx:
        cfg = ctx.query(target, workload)
    assert not cfg.is_fallback and cfg.cost == pytest.approx(best)
    append_baseline(best / 2)  # faster than every tuned config: the untuned schedule wins
    with autotvm.apply_history_best(log) as ctx:
        cfg = ctx.query(target, workload)
    assert cfg.is_fallback and cfg.cost == pytest.approx(best / 2)

    # a resumed tuner counts the 12 trials, not the baselines
    opt, builder = S.synthetic_option()
    RandomTuner(task, seed=1).tune(15, opt, callbacks=[autotvm.callback.log_to_file(log)])
    assert len(builder.built) == 3
    trials, _ = autotvm.tuning_curve(log, metric="time")
    assert len(trials) == 15


@pytest.mark.parametrize("name", ["random", "grid", "ga", "xgb-rank", "xgb-reg"])
def test_every_tuner_proposes_only_configs_the_templates_multi_filter_passes(name):
    task = autotvm.task.create("test/synthetic_filtered", args=(256,), target="llvm")
    space = task.config_space
    valid = space.valid_indexes()
    assert len(space) == 9 * 9 * 4 and 0 < len(valid) < len(space)
    assert valid == [i for i in range(len(space)) if S.within_budget(space.get(i))]
    assert "multi_filter(s): %d pass" % len(valid) in repr(space)
    opt, builder = S.synthetic_option()
    tuner = tuners(task)[name]
    tuner.tune(len(space), opt)  # more trials than valid configs: the tuners stop when none is left
    assert all(S.within_budget(space.get(i)) for i in builder.built), name
    assert len(set(builder.built)) == len(builder.built)
    if name in ("random", "grid"):
        assert sorted(builder.built) == valid  # every valid config, each once
    assert not tuner.has_next() or name in ("ga",)


def test_a_large_filtered_space_is_sampled_by_rejection_and_applying_a_refused_config_says_why():
    from tecc.autotvm.task.space import ConfigSpace, InstantiationError
    from tecc.tuner.tuner.tuner import _unvisited

    space = ConfigSpace()
    space.define_split("a", 1 << 12, num_outputs=3)
    space.define_split("b", 1 << 12, num_outputs=3)
    space.define_split("c", 1 << 12, num_outputs=3)
    space.multi_filter(filter=lambda e: e["a"].size[-1] * e["b"].size[-1] <= 4)
    assert len(space) > space.ENUMERATE_LIMIT and space.valid_indexes() is None
    assert space.num_valid() == len(space)  # too large to count: the tuners stop on an empty draw
    picks = _unvisited(space, set(), np.random.default_rng(0), 50)
    assert len(set(picks)) == 50
    assert all(space.get(i)["a"].size[-1] * space.get(i)["b"].size[-1] <= 4 for i in picks)
    bad = next(i for i in range(len(space)) if not space.is_index_valid(i))
    entity = space.get(bad)
    entity.multi_filter(filter=lambda e: e["a"].size[-1] * e["b"].size[-1] <= 4)
    assert not entity.valid() and "multi_filter" in entity.errors[0]
    with pytest.raises(InstantiationError, match="filter must be a function"):
        space.multi_filter(filter=3)


def test_a_filtered_space_pickles_without_its_filters():
    import pickle

    task = autotvm.task.create("test/synthetic_filtered", args=(64,), target="llvm")
    back = pickle.loads(pickle.dumps(task.config_space))
    assert len(back) == len(task.config_space) and not back.filtered


class _OverlappingRunner(S.SyntheticRunner):
    """A synthetic runner that lets the next batch build while it runs, and records
    when each batch's build and run start and end."""

    def __init__(self, events):
        super().__init__()
        self.events = events

    @property
    def overlaps_builds(self):
        return True

    def run(self, measure_inputs, build_results):
        first = measure_inputs[0].config.index
        self.events.append(("run", first, "start"))
        import time as _time
        _time.sleep(0.05)
        out = super().run(measure_inputs, build_results)
        self.events.append(("run", first, "end"))
        return out


class _SlowBuilder(S.SyntheticBuilder):
    def __init__(self, events):
        super().__init__(n_parallel=8)
        self.events = events

    def build(self, measure_inputs):
        import time as _time
        first = measure_inputs[0].config.index
        self.events.append(("build", first, "start"))
        _time.sleep(0.05)
        out = super().build(measure_inputs)
        self.events.append(("build", first, "end"))
        return out


@pytest.mark.parametrize("name", ["random", "xgb-rank"])
def test_on_a_gpu_runner_the_next_batch_builds_while_this_one_runs(task, name):
    events = []
    builder = _SlowBuilder(events)
    opt = autotvm.measure_option(builder=builder, runner=_OverlappingRunner(events))
    tuner = tuners(task)[name]
    monitor = autotvm.callback.Monitor()
    tuner.tune(44, opt, callbacks=[monitor])
    assert len(builder.built) == 44 and len(set(builder.built)) == 44  # every trial once, none over budget
    assert len(monitor.trial_scores()) == 44
    batches = [e[1] for e in events if e[0] == "run" and e[2] == "start"]
    assert len(batches) == 6
    for k in range(len(batches) - 1):  # batch k+1's build started before batch k's run ended
        nxt = events.index(("build", batches[k + 1], "start"))
        assert nxt < events.index(("run", batches[k], "end")), events


def test_a_batch_built_ahead_and_dropped_by_early_stopping_is_not_visited(task):
    events = []
    builder = _SlowBuilder(events)
    opt = autotvm.measure_option(builder=builder, runner=_OverlappingRunner(events))
    tuner = RandomTuner(task, seed=3)
    tuner.tune(400, opt, early_stopping=1)
    measured = len(tuner.visited)
    assert measured < len(builder.built)  # a batch was built ahead and dropped
    assert set(tuner.visited) <= set(builder.built)
    assert len(builder.built) - measured <= 8


def test_a_record_names_the_architecture_a_plain_cuda_target_was_built_for():
    from tecc.tuner.record import environment

    env = environment("cuda")
    if tecc.cuda(0).exist:
        assert env["arch"] == "sm_" + tecc.cuda(0).compute_version.replace(".", "") and not env["emulated"]
    else:
        assert env["arch"] == "sm_80" and env["emulated"]  # the emulator's build architecture
    assert environment("cuda -arch=sm_90")["arch"] == "sm_90"
