"""Tuners replayed on a measured space: sample efficiency free of the VM's noise.

    python benchmarks/tune_replay.py measure [--workloads matmul] [--rounds 3]
    python benchmarks/tune_replay.py replay  [--workloads matmul] [--trials 200] [--seeds 10]
                                             [--tuners random,xgb] [--plan-size 16]

``measure`` builds every config of a workload's space (``tune_cpu.WORKLOADS``) and
times all that compile in ``--rounds`` interleaved rounds (``tune_cpu.ground_truth``:
each round visits every config in a new random order; the median of the rounds).  The
table -- GFLOP/s per config index, and the configs the template refuses -- goes to
``results/<date>_cpu_space_<workload>.json``.

``replay`` runs the tuners through the AutoTVM loop with a builder and runner that
look the configs up in that table instead of compiling and timing them (a refused
config is an instantiation error, as in a real run).  Everything else is the real
tuner: its features (the lowered TIR of every config it considers), its XGBoost
model, its annealing.  So a replay says what a tuner *finds* in a fixed number of
trials, with the same measured values for every tuner and seed, in a fraction of the
time -- the tool to study and tune the tuners.  It does not replace the live
benchmark (``tune_cpu.py``), which the targets are judged on: it explains it.

Summary per workload: each tuner's mean final best (the table's GFLOP/s of the best
config it visited), and the trial at which each tuner's mean curve reaches
RandomTuner's mean final best (the sample-efficiency figure of ``tune_cpu.py``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import glob
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_cpu import SAMPLE_EFFICIENCY_GOAL, WORKLOADS, first_reaching, ground_truth  # noqa: E402

from tecc import autotvm  # noqa: E402
from tecc.autotvm.measure import MeasureErrorNo, MeasureResult  # noqa: E402
from tecc.autotvm.measure import Builder, Runner  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def table_path(key, out_dir=RESULTS, date=None):
    if date:
        return os.path.join(out_dir, f"{date}_cpu_space_{key}.json")
    found = sorted(glob.glob(os.path.join(out_dir, f"*_cpu_space_{key}.json")))
    if not found:
        raise SystemExit(f"no measured table for {key!r} in {out_dir}: run `tune_replay.py measure "
                         f"--workloads {key}` first")
    return found[-1]


def measure(key, rounds, number, target, out_dir):
    w = WORKLOADS[key]
    task = autotvm.task.create(w["task"], args=w["args"], target=target)
    n = len(task.config_space)
    print(f"== {w['title']}: measuring all {n} configs ({rounds} interleaved rounds)", flush=True)
    start = time.perf_counter()
    truth = ground_truth(task, range(n), rounds, number)
    wall = time.perf_counter() - start
    date = _dt.datetime.now(_dt.timezone.utc)
    payload = {
        "date": date.strftime("%Y-%m-%dT%H:%M:%SZ"), "workload": key, "title": w["title"], "task": w["task"],
        "target": target, "space": n, "flop": task.flop, "rounds": rounds, "number": number, "wall_s": wall,
        "gflops": {str(i): g for i, g in sorted(truth.items())},
    }
    path = table_path(key, out_dir, f"{date:%Y-%m-%d}")
    with open(path, "w") as f:
        json.dump(payload, f, indent=0)
    best = max(truth, key=truth.get)
    print(f"  {len(truth)} of {n} configs compile ({n - len(truth)} refused); best {truth[best]:.1f} GFLOP/s "
          f"({task.config_space.get(best)}); median {np.median(list(truth.values())):.1f}; {wall:.0f} s; "
          f"wrote {path}", flush=True)


class TableBuilder(Builder):
    """Builds nothing: every input goes to the runner as it is."""

    def __init__(self, n_parallel=8):
        super().__init__(n_parallel=n_parallel)

    def build(self, measure_inputs):
        return list(measure_inputs)


class TableRunner(Runner):
    """Answers each config with its time from the measured table; a config missing
    from it is what the template refused (an instantiation error)."""

    def __init__(self, table, flop):
        super().__init__()
        self.table, self.flop = table, flop

    def get_build_kwargs(self):
        return {}

    def run(self, measure_inputs, build_results):
        out = []
        for inp in measure_inputs:
            g = self.table.get(inp.config.index)
            if g is None:
                out.append(MeasureResult(["refused by the template (replayed)"],
                                         MeasureErrorNo.INSTANTIATION_ERROR, 0.0, time.time()))
            else:
                out.append(MeasureResult([self.flop / (g * 1e9)], MeasureErrorNo.NO_ERROR, 0.0, time.time()))
        return out


def make_tuner(kind, task, seed, plan_size):
    """``kind``: random, grid, ga, or ``xgb[:option=value,...]`` with the options
    ``plan`` (plan_size), ``feat`` (feature_type), ``loss`` (loss_type), ``div``
    (diversity_filter_ratio) and ``eps`` (the exploration share)."""
    if kind == "random":
        return autotvm.tuner.RandomTuner(task, seed=seed)
    if kind == "grid":
        return autotvm.tuner.GridSearchTuner(task)
    if kind == "ga":
        return autotvm.tuner.GATuner(task, pop_size=plan_size, seed=seed)
    name, _, rest = kind.partition(":")
    if name != "xgb":
        raise SystemExit(f"unknown tuner {kind!r}")
    opts = dict(kv.split("=", 1) for kv in rest.split(";") if kv)
    tuner = autotvm.tuner.XGBTuner(task, plan_size=int(opts.get("plan", plan_size)),
                                   feature_type=opts.get("feat", "itervar"), loss_type=opts.get("loss", "rank"),
                                   diversity_filter_ratio=float(opts["div"]) if "div" in opts else None, seed=seed)
    if "eps" in opts:
        tuner.epsilon = float(opts["eps"])
    return tuner


def replay_one(task, table, kind, seed, n_trial, plan_size):
    """The table's GFLOP/s of the best config visited after each trial."""
    tuner = make_tuner(kind, task, seed, plan_size)
    curve = []

    def record(tuner_, inputs, results):
        best = curve[-1] if curve else 0.0
        for inp, res in zip(inputs, results):
            if res.error_no == 0:
                best = max(best, table[inp.config.index])
            curve.append(best)

    option = autotvm.measure_option(builder=TableBuilder(), runner=TableRunner(table, task.flop))
    tuner.tune(n_trial=n_trial, measure_option=option, callbacks=[record])
    curve = curve[:n_trial]
    curve += [curve[-1] if curve else 0.0] * (n_trial - len(curve))
    return np.asarray(curve)


def replay(key, tuners, seeds, n_trial, plan_size, target):
    with open(table_path(key)) as f:
        data = json.load(f)
    table = {int(i): g for i, g in data["gflops"].items()}
    w = WORKLOADS[key]
    task = autotvm.task.create(w["task"], args=w["args"], target=target)
    space_best = max(table.values())
    print(f"== {w['title']}: {len(task.config_space)} configs, {len(table)} compile; best of the space "
          f"{space_best:.1f} GFLOP/s", flush=True)
    curves = {}
    for kind in tuners:
        start = time.perf_counter()
        curves[kind] = np.stack([replay_one(task, table, kind, s, n_trial, plan_size) for s in range(seeds)])
        finals = curves[kind][:, -1]
        print(f"  {kind:8s}: final best mean {finals.mean():6.1f} (min {finals.min():.1f}, "
              f"{(finals >= space_best * 0.99).mean() * 100:.0f}% of seeds within 1% of the space's best), "
              f"{time.perf_counter() - start:.0f} s", flush=True)
        marks = [t for t in (16, 32, 48, 67, 100, 150, n_trial) if t <= n_trial]
        print("            mean best after " + ", ".join(f"{t}: {curves[kind][:, t - 1].mean():.1f}" for t in marks),
              flush=True)
    if "random" in curves:
        goal = curves["random"][:, -1].mean()
        for kind, c in curves.items():
            at = first_reaching(c.mean(0), goal)
            share = at / n_trial if at else None
            verdict = "" if kind == "random" else (
                " MET" if share is not None and share <= SAMPLE_EFFICIENCY_GOAL else " NOT MET")
            per_seed = [first_reaching(x, r[-1]) for x, r in zip(c, curves["random"])]
            print(f"  {kind:8s} reaches random's mean final best ({goal:.1f}) at trial {at} of {n_trial}"
                  f"{verdict}; per seed vs that seed's random: {per_seed}", flush=True)
    return curves


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("measure", "replay"))
    ap.add_argument("--workloads", default="matmul")
    ap.add_argument("--target", default="llvm -mcpu=native")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--number", type=int, default=3)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--tuners", default="random,xgb")
    ap.add_argument("--plan-size", type=int, default=16)
    ap.add_argument("--out-dir", default=RESULTS)
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.workloads.split(",") if k.strip()]
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; choose from {sorted(WORKLOADS)}")
    for key in keys:
        if args.mode == "measure":
            measure(key, args.rounds, args.number, args.target, args.out_dir)
        else:
            replay(key, [t.strip() for t in args.tuners.split(",") if t.strip()], args.seeds, args.trials,
                   args.plan_size, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
