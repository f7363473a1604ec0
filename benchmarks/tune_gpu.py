"""Tuning on a CUDA GPU: XGBTuner on SGEMM and on ResNet-50's conv2d layers, the best
configs against cuBLAS and cuDNN.

    python benchmarks/tune_gpu.py [--tasks sgemm,dense,conv] [--out DIR] [--log-dir DIR]
                                  [--trials 1000] [--conv-trials 200] [--deadline-min M]
    python benchmarks/tune_gpu.py --dry-run          # no GPU: tiny sizes on the emulator

Four parts (``--tasks``; ``hgemm`` only when named), each tuned with ``XGBTuner`` through the AutoTVM interface
(``LocalBuilder`` with one worker per core, ``LocalRunner`` with ``repeat=3``, the
correctness oracle on, its reference a float64 product computed here):

- ``sgemm``: the task ``"sgemm.cuda"`` (:func:`tecc.topi.cuda.gemm.sgemm_template`,
  the hand-written two-level tiled SGEMM with its parameters as knobs) at
  ``--sgemm-size`` (4096); its space is small, so ``--sgemm-trials`` defaults to all
  of it;
- ``dense``: TVM's general GEMM template ``"dense_large_batch.cuda"`` (block /
  virtual-thread / thread / inner splits of both output axes, the reduction split,
  unrolling, the fetch width: a space of about 2e8 points) on the same product
  (``X @ W.T``, ``W = B.T``) for ``--trials`` (1000) trials; the wall time of the
  whole tuning run and the trials per second are recorded;
- ``hgemm``: tensor cores: ``"dense_tensorcore.cuda"`` (TVM's wmma template: warps per
  block, fragments per warp, the k step, padding, fragment shape) on ``X @ W.T`` with
  float16 operands and float32 accumulation at ``--sgemm-size``, ``--hgemm-trials``
  (300) trials, against cuBLAS's float16 GEMM (``cupy.matmul`` of the float16 arrays);
  reported, not judged;
- ``conv``: ``"conv2d_nchw.cuda"`` on ResNet-50's 3x3 layers (56x56x64->64,
  28x28x128->128, 14x14x256->256, 7x7x512->512) and its 56x56x64->256 1x1 layer at
  batch 1, ``--conv-trials`` (200) trials each.

Then the best config of each task is built under ``autotvm.apply_history_best`` (the
SGEMMs through their templates, the convolutions through ``topi.cuda.conv2d_nchw`` +
``topi.cuda.schedule_conv2d_nchw``), as is the untuned default (the fallback config),
each checked against a float64 result (``||out - ref|| / ||ref||``, output poisoned
with NaN first) and timed like the references (``_gpu_common``: CUDA events, and a
CUDA graph replay): cuBLAS through ``cupy.matmul`` in the template's layout (``A @ B``
for sgemm.cuda, ``X @ W.T`` for dense), cuDNN through ``torch.nn.functional.conv2d``
(TF32 off, ``cudnn.benchmark`` on; "not installed" without torch).  Reported: ms,
GFLOP/s, share of the FP32 peak, t(reference) / t(tecc) and tuned / untuned.

Targets (summary lines ``target: ... MET / NOT MET``): the better tuned SGEMM at 4096
at 0.9x cuBLAS or better; 1000 trials of SGEMM tuning (dense_large_batch.cuda) in
under 10 minutes.  The convolutions are reported, not judged.

Every trial goes to one log (``<log-dir>/tune_gpu.jsonl``; ``--log-dir`` defaults to
``tune_gpu_logs`` beside the results): a run that is killed, or stopped by
``--deadline-min``, resumes from it when started again with the same log folder (the
trials logged count, and are not measured again); the wall time of the tuning runs
is summed across the invocations (``tune_gpu_wall.json`` beside the log).

``--dry-run`` needs no GPU: it builds for ``cuda -arch=sm_90`` at tiny sizes (SGEMM
128, convolutions of 8-16 channels), tunes each task for a few trials on tecc's CPU
emulation of CUDA (those times are marked emulated), applies the best, checks every
result and writes the tables and files; no ratio is judged.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import _gpu_common as G  # noqa: E402  (the helper beside this script)
import topi_gpu  # noqa: E402  (its float64 im2col reference and the FP32 peak)

import tecc  # noqa: E402
from tecc import autotvm, te, topi  # noqa: E402
from tecc.topi.cuda import gemm  # noqa: E402
from tecc.tuner.measure import MeasureErrorNo  # noqa: E402

PARTS = ("sgemm", "dense", "conv", "hgemm")
#: what a run without --tasks tunes (hgemm is asked for by name)
DEFAULT_PARTS = ("sgemm", "dense", "conv")
#: the tensor-core part: TVM's float16 dense template, float32 accumulation
HGEMM_TASK = "dense_tensorcore.cuda"
HGEMM_TRIALS = 300
#: cuBLAS's float16 output against the float64 product (an fp16 rounding of each element)
HALF_OUTPUT_TOL = 5e-3
SGEMM_SIZE, DRY_SGEMM_SIZE = 4096, 128
TRIALS, DRY_TRIALS = 1000, 4
CONV_TRIALS, DRY_CONV_TRIALS = 200, 4
#: XGBTuner's plan size (trials between refits of the cost model); the dry run's is
#: small enough that its few trials fit the model once
PLAN_SIZE, DRY_PLAN_SIZE = 64, 2
#: relative error a float32 result passes with
TOLERANCE = 1e-4
#: the figures the benchmark is held to
TARGET_SIZE, TARGET_RATIO = 4096, 0.9
TARGET_TRIALS, TARGET_WALL_S = 1000, 600.0
DENSE_TASK, CONV_TASK = "dense_large_batch.cuda", "conv2d_nchw.cuda"

#: ResNet-50's layers at batch 1: name -> (in channels, height = width, out channels,
#: kernel size, padding); stride 1
CONV_LAYERS = {
    "56x56x64->64 3x3": (64, 56, 64, 3, 1),
    "28x28x128->128 3x3": (128, 28, 128, 3, 1),
    "14x14x256->256 3x3": (256, 14, 256, 3, 1),
    "7x7x512->512 3x3": (512, 7, 512, 3, 1),
    "56x56x64->256 1x1": (64, 56, 256, 1, 0),
}
#: the same layers, cut down for the dry run (the CPU emulation), same names
DRY_CONV_LAYERS = {
    "56x56x64->64 3x3": (8, 8, 8, 3, 1),
    "28x28x128->128 3x3": (16, 6, 16, 3, 1),
    "14x14x256->256 3x3": (16, 4, 16, 3, 1),
    "7x7x512->512 3x3": (32, 3, 16, 3, 1),
    "56x56x64->256 1x1": (8, 8, 16, 1, 0),
}

LOG_NAME, WALL_NAME = "tune_gpu.jsonl", "tune_gpu_wall.json"

TUNING_COLUMNS = ["task", "workload", "space", "trials", "valid", "refused", "failed", "wall s (total)",
                  "trials/s", "best GFLOP/s while tuning", "best config"]
GEMM_COLUMNS = ["variant", "config", "grid / block", "regs", "rel err", "ok", "ms", "ms graph", "TFLOPS",
                "% peak", "x cuBLAS", "x cuBLAS graph"]
CONV_COLUMNS = ["layer", "variant", "config", "rel err", "ok", "ms", "ms graph", "GFLOP/s", "% peak",
                "x torch", "x untuned", "x untuned graph"]


class _DeadlineReached(Exception):
    """Raised by the deadline callback after a batch is logged: stop tuning."""


def _to_host(a):
    """A numpy copy of a cupy array (numpy arrays pass through)."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _config_text(cfg) -> str:
    """``block=128 thread_tile=4 ...`` for a config entity (split sizes as lists)."""
    if cfg is None:
        return "-"
    parts = []
    for name, entity in cfg._entity_map.items():
        value = getattr(entity, "size", getattr(entity, "val", entity))
        parts.append(f"{name}={value}")
    return " ".join(parts)


def _repair_log(path):
    """Cut a record that a killed run left half written off the end of the log (the
    next trials are appended after it)."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    with open(path, "rb+") as fh:
        data = fh.read()
        if data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        fh.truncate(keep)
    print(f"{path}: cut a half-written last record ({len(data) - keep} bytes) left by a killed run", flush=True)


# ---------------------------------------------------------------------------------------
# the wall time of tuning runs, across invocations
# ---------------------------------------------------------------------------------------
class WallLog:
    """``<log-dir>/tune_gpu_wall.json``: per task key, per invocation, the trials it
    measured and the seconds its tuning run took (updated after every batch, so a
    killed invocation keeps its share)."""

    def __init__(self, path):
        self.path = path
        self.run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"

    def _load(self) -> dict:
        if not os.path.exists(self.path):
            return {}
        with open(self.path) as fh:
            return json.load(fh)

    def record(self, key, trials, wall_s):
        data = self._load()
        data.setdefault(key, {})[self.run_id] = {"trials": int(trials), "wall_s": float(wall_s)}
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, self.path)

    def total(self, key) -> tuple:
        """``(trials, seconds, invocations)`` summed over every invocation of ``key``."""
        runs = self._load().get(key, {})
        return (sum(r["trials"] for r in runs.values()), sum(r["wall_s"] for r in runs.values()), len(runs))


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------
class Bench(G.BenchBase):
    """One run: the tuning of each task, the final builds and their timings."""

    def __init__(self, opts):
        super().__init__(opts)
        self.start = time.perf_counter()
        self.deadline = self.start + 60.0 * opts.deadline_min if opts.deadline_min else None
        self.stopped_at_deadline = False
        if opts.log_dir is None:
            opts.log_dir = tempfile.mkdtemp(prefix="tecc_tune_gpu_dry_")
        os.makedirs(opts.log_dir, exist_ok=True)
        self.log_path = os.path.join(opts.log_dir, LOG_NAME)
        _repair_log(self.log_path)
        self.wall = WallLog(os.path.join(opts.log_dir, WALL_NAME))
        self.torch, self.torch_settings = ((None, None) if self.dry or opts.no_torch
                                           else G.torch_fp32(not opts.no_cudnn_benchmark))
        self.torch_note = ("dry run" if self.dry else "disabled (--no-torch)" if opts.no_torch
                           else "not installed" if self.torch is None else None)
        self.peak = {"fp32_gflops": None, "memory_gbps": None}
        self.tunings = []  # one per tuned task
        self.gemm_rows = []
        self.hgemm_rows = []
        self.conv_rows = []

    # tuning ---------------------------------------------------------------------------
    def _task_records(self, task) -> list:
        """The records of ``task`` (same workload and target) in the log, in order."""
        if not os.path.exists(self.log_path):
            return []
        return [(inp, res) for inp, res in autotvm.record.load_from_file(self.log_path)
                if inp.task.workload == task.workload and str(inp.target) == str(task.target)]

    def _measure_option(self, ref_input, ref_output):
        o = self.opts
        runner = autotvm.LocalRunner(number=o.tune_number, repeat=o.tune_repeat, min_repeat_ms=o.tune_min_repeat_ms,
                                     timeout=o.run_timeout, enable_l2_flush=o.flush_l2,
                                     cooldown_interval=o.cooldown_s)
        runner.ref_input = ref_input
        runner.ref_output = ref_output
        builder = autotvm.LocalBuilder(n_parallel=o.n_parallel, timeout=o.build_timeout)
        return autotvm.measure_option(builder=builder, runner=runner)

    def tune(self, task, label, n_trial, ref_input, ref_output) -> dict:
        """Tune ``task`` with XGBTuner for ``n_trial`` trials (those already in the log
        count); the figures of the run and of the whole log for this task."""
        key = f"{task.target}|{task.workload!r}"
        info = {"task": task.name, "workload": label, "space": len(task.config_space), "trials_asked": n_trial,
                "flop": task.flop, "log": self.log_path, "feature_type": self.opts.feature_type}
        before = len(self._task_records(task))
        info["trials_logged_before"] = before
        measured_now, wall = 0, 0.0
        if before >= n_trial:
            info["note"] = f"all {n_trial} trials already in the log"
        elif self.opts.no_tuning:
            info["note"] = "not tuned (--no-tuning): the trials in the log"
        elif self.deadline is not None and time.perf_counter() >= self.deadline:
            info["note"] = "not tuned: --deadline-min reached"
            self.stopped_at_deadline = True
        else:
            tuner = autotvm.tuner.XGBTuner(task, plan_size=self.opts.plan_size, feature_type=self.opts.feature_type,
                                           loss_type="rank", seed=self.opts.seed)
            started = time.perf_counter()
            state = {"n": 0, "printed": started}

            def progress(tuner, inputs, results):
                state["n"] += len(results)
                elapsed = time.perf_counter() - started
                self.wall.record(key, state["n"], elapsed)
                done = before + state["n"]
                if done >= n_trial or time.perf_counter() - state["printed"] >= 30 or state["n"] % 64 < len(results):
                    state["printed"] = time.perf_counter()
                    best = tuner.best_flops / 1e9
                    print(f"  {task.name} {label}: {done}/{n_trial} trials, best {best:.1f} GFLOP/s, "
                          f"{elapsed:.0f} s", flush=True)

            def deadline(tuner, inputs, results):
                if self.deadline is not None and time.perf_counter() >= self.deadline:
                    raise _DeadlineReached()

            callbacks = [autotvm.callback.log_to_file(self.log_path), progress, deadline]
            option = self._measure_option(ref_input, ref_output)
            try:
                tuner.tune(n_trial=n_trial, measure_option=option, callbacks=callbacks)
            except _DeadlineReached:
                info["note"] = "stopped at --deadline-min; run again with the same --log-dir to resume"
                self.stopped_at_deadline = True
            wall = time.perf_counter() - started
            # where this run's wall time went: the tuning loop's parts, and the runner's
            info["time_spent_s"] = {k: round(v, 3) for k, v in tuner.time_spent.items()}
            info["runner_time_spent_s"] = {k: round(v, 3) for k, v in option["runner"].time_spent.items()}
            print(f"  {task.name} {label}: {wall:.1f} s -- " + ", ".join(
                f"{k} {v:.1f}" for k, v in tuner.time_spent.items()) + "; runner: " + ", ".join(
                f"{k} {v:.1f}" for k, v in option["runner"].time_spent.items()), flush=True)
            measured_now = state["n"]
            if measured_now:
                self.wall.record(key, measured_now, wall)
        info["trials_measured_now"] = measured_now
        info["wall_s_now"] = wall
        total_trials, total_wall, invocations = self.wall.total(key)
        info.update(wall_trials=total_trials, wall_s=total_wall, invocations=invocations,
                    trials_per_s=total_trials / total_wall if total_wall > 0 else None)
        self._summarize_log(task, info)
        self.tunings.append(info)
        return info

    def _summarize_log(self, task, info):
        records = self._task_records(task)
        info["trials_logged"] = len(records)
        counts, first = {}, {}
        curve, best, best_cfg = [], 0.0, None
        emulated = False
        for inp, res in records:
            name = MeasureErrorNo(res.error_no).name if res.error_no in MeasureErrorNo._value2member_map_ \
                else str(res.error_no)
            counts[name] = counts.get(name, 0) + 1
            if res.error_no != MeasureErrorNo.NO_ERROR and name not in first:
                first[name] = f"config {inp.config.index}: {str(res.costs[0])[:400]}"
            if res.error_no == MeasureErrorNo.NO_ERROR:
                emulated = emulated or bool(res.emulated)
                gflops = task.flop / res.mean_cost / 1e9
                if gflops > best:
                    best, best_cfg = gflops, inp.config
        if records:  # best GFLOP/s after each trial
            curve = [float(v) for v in autotvm.tuning_curve(records)[1]]
        info["errors"] = counts
        info["first_errors"] = first
        wrong = counts.get("WRONG_ANSWER", 0)
        if wrong:  # the oracle caught a candidate computing something else: a compiler bug
            self.failures.append(f"{task.name} {info['workload']}: {wrong} trial(s) computed a wrong answer while "
                                 f"tuning ({first['WRONG_ANSWER']})")
        info["valid"] = counts.get("NO_ERROR", 0)
        info["refused"] = counts.get("INSTANTIATION_ERROR", 0)
        info["failed"] = len(records) - info["valid"] - info["refused"]
        info["curve_gflops"] = curve
        info["best_gflops_tuning"] = best if best_cfg is not None else None
        info["best_config_tuning"] = _config_text(best_cfg)
        info["emulated"] = emulated

    def _best_records(self, task) -> list:
        """The valid records of ``task`` that apply_history_best may pick here (not
        emulated ones on a GPU)."""
        return [(inp, res) for inp, res in self._task_records(task)
                if res.error_no == MeasureErrorNo.NO_ERROR and (self.dry or not res.emulated)]

    def _build_tuned(self, task, make):
        """``(module, config)`` of ``make()`` under apply_history_best of the task's
        records, or ``(None, reason)`` when the log holds no valid config."""
        records = self._best_records(task)
        if not records:
            return None, None
        best_inp = min(records, key=lambda r: r[1].mean_cost)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", autotvm.record.RecordWarning)
            ctx = autotvm.apply_history_best(records)
        with ctx:
            with tecc.target.Target(self.target):
                s, args = make()
                applied = ctx.query(tecc.target.Target.current(), task.workload)
        if getattr(applied, "index", None) != best_inp.config.index:
            raise RuntimeError(f"apply_history_best applied config {getattr(applied, 'index', None)} to "
                               f"{task.name}, the best record is config {best_inp.config.index}")
        return tecc.build(s, args, target=self.target), best_inp.config

    def _build_untuned(self, make):
        ctx = autotvm.FallbackContext()
        ctx.silent = True
        with ctx:
            with tecc.target.Target(self.target):
                s, args = make()
                return tecc.build(s, args, target=self.target)

    def _untuned_note(self, info):
        """The note of a task this run did not (fully) tune, or None: its log may hold
        no valid config without anything having failed."""
        return info.get("note") if info.get("note", "").startswith(("not tuned", "stopped")) else None

    # rows -----------------------------------------------------------------------------
    def _check(self, what, err):
        ok = G.passes(err, self.opts.tol)
        if not ok:
            self.failures.append(f"{what}: relative error {err:.3e} > {self.opts.tol:g}")
        return ok

    def _crashed(self, rows, base, variant, exc):
        msg = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        rows.append(dict(base, variant=variant, skipped=msg))
        self.failures.append(f"{base.get('workload', base.get('layer'))} {variant}: {msg}")
        traceback.print_exc()

    def _rates(self, row, flops):
        for key, suffix in (("ms", ""), ("ms_graph", "_graph")):
            t = row.get(key)
            row["gflops" + suffix] = flops / t / 1e6 if t else None
            peak = self.peak.get("fp32_gflops")
            row["peak_share" + suffix] = row["gflops" + suffix] / peak if row["gflops" + suffix] and peak else None

    def _tecc_row(self, rows, base, variant, mod, cfg, args, out, ref, flops):
        mod(*args)
        err = G.rel_error(out, ref)
        ev, gr, why = self.time_both(lambda: G.time_tecc(mod, args, self.timing), lambda: mod(*args))
        row = dict(base, kind="tecc", variant=variant, config=_config_text(cfg) if cfg is not None else "-",
                   config_index=getattr(cfg, "index", None), launch=G.launch_shape(mod),
                   resources=G.kernel_resources(mod), rel_err=err,
                   ok=self._check(f"{base.get('workload', base.get('layer'))} {variant}", err),
                   events=ev, graph=gr, graph_failure=why, ms=ev.median_ms if ev else None,
                   ms_graph=gr.median_ms if gr else None)
        self._rates(row, flops)
        rows.append(row)
        return row

    # SGEMM ----------------------------------------------------------------------------
    def run_gemm(self, parts):
        n = self.opts.sgemm_size
        xp = self.xp
        flops = 2.0 * n ** 3
        a, b = self.random((n, n), 11), self.random((n, n), 12)
        w = xp.ascontiguousarray(b.T)  # dense's weight: W = B.T, so X @ W.T = A @ B
        ref64 = a.astype(xp.float64) @ b.astype(xp.float64)
        ref32 = _to_host(ref64.astype(xp.float32))
        a_h, b_h, w_h = _to_host(a), _to_host(b), _to_host(w)
        base = {"workload": f"SGEMM {n}"}

        refs = {}
        for layout, fn in (("NN", lambda c: xp.matmul(a, b, out=c)), ("NT", lambda c: xp.matmul(a, w.T, out=c))):
            c = self.poisoned((n, n))
            fn(c)
            err = G.rel_error(c, ref64)
            ev, gr, why = self.time_both(lambda: G.time_callable(lambda: fn(c), self.timing), lambda: fn(c))
            product = "A @ B" if layout == "NN" else "X @ W.T"
            name = f"numpy {product} (dry run)" if self.dry else f"cuBLAS {layout} (cupy.matmul {product})"
            row = dict(base, kind="cublas", layout=layout, variant=name, config="-", rel_err=err,
                       ok=self._check(f"SGEMM {n} {name}", err), events=ev, graph=gr, graph_failure=why,
                       ms=ev.median_ms if ev else None, ms_graph=gr.median_ms if gr else None)
            self._rates(row, flops)
            self.gemm_rows.append(row)
            refs[layout] = row

        for part in parts:
            name = gemm.SGEMM_TASK if part == "sgemm" else DENSE_TASK
            try:
                task, trials, ref_input, layout, ins, make = self._gemm_task(part, n, (a, b, w), (a_h, b_h, w_h))
                print(f"== {task.name} {n}x{n}x{n}: {len(task.config_space)} configs, {trials} trials", flush=True)
                info = self.tune(task, f"SGEMM {n}", trials, ref_input, [ref32])
            except Exception as exc:  # noqa: BLE001 - the tuning run broke: a FAILED row, and on with the rest
                self._crashed(self.gemm_rows, dict(base, kind="tecc", task=name, tuned=True), f"tuning {name}", exc)
                continue
            self._final_gemm(task, info, make, base, ins, ref64, flops, refs[layout])

    def _gemm_task(self, part, n, device, host):
        """``(task, trials, runner.ref_input, cuBLAS layout, device inputs, make)`` of
        one GEMM part; ``make()`` builds the template's ``(schedule, args)`` under
        the dispatch context in effect."""
        (a, b, w), (a_h, b_h, w_h) = device, host
        zeros = np.zeros((n, n), np.float32)  # the output's place: only its shape matters
        if part == "sgemm":
            task = autotvm.task.create(gemm.SGEMM_TASK, args=(n, n, n, "float32"), target=self.target)
            trials = min(self.opts.sgemm_trials or (DRY_TRIALS if self.dry else len(task.config_space)),
                         len(task.config_space))

            def make():
                return gemm.sgemm_template(n, n, n, "float32")

            return task, trials, [a_h, b_h, zeros], "NN", (a, b), make
        tensor = ("TENSOR", (n, n), "float32")
        task = autotvm.task.create(DENSE_TASK, args=(tensor, tensor, None, "float32"), target=self.target)

        def make():
            X = te.placeholder((n, n), name="X")
            W = te.placeholder((n, n), name="W")
            out = topi.cuda.dense_large_batch(X, W, None, "float32")
            return topi.cuda.schedule_dense_large_batch([out]), [X, W, out]

        return task, self.opts.trials, [a_h, w_h, zeros], "NT", (a, w), make

    def _final_gemm(self, task, info, make, base, ins, ref64, flops, cublas, rows=None):
        n = self.opts.sgemm_size
        rows = self.gemm_rows if rows is None else rows
        for tuned in (True, False):
            variant = f"tecc {task.name} {'tuned' if tuned else 'untuned (fallback)'}"
            row_base = dict(base, kind="tecc", task=task.name, tuned=tuned, layout=cublas["layout"])
            try:
                if tuned:
                    mod, cfg = self._build_tuned(task, make)
                    if mod is None:
                        why = self._untuned_note(info) or "no valid config in the log"
                        rows.append(dict(row_base, variant=variant, skipped=why))
                        if not self._untuned_note(info):
                            self.failures.append(f"{base['workload']} {variant}: {why}")
                        continue
                else:
                    mod, cfg = self._build_untuned(make), None
                out = self.poisoned((n, n))
                row = self._tecc_row(rows, row_base, variant, mod, cfg, tuple(ins) + (out,), out, ref64,
                                     flops)
            except Exception as exc:  # noqa: BLE001 - a FAILED row, and on with the rest
                self._crashed(rows, row_base, variant, exc)
                continue
            row["ratio"] = G.ratio(cublas, row, "ms")
            row["ratio_graph"] = G.ratio(cublas, row, "ms_graph")

    def run_hgemm(self):
        """The tensor-core part: float16 ``X @ W.T`` tuned as dense_tensorcore.cuda, the
        best and the fallback against cuBLAS's float16 GEMM."""
        n = self.opts.sgemm_size
        xp = self.xp
        flops = 2.0 * n ** 3
        a, w = self.random((n, n), 21).astype(xp.float16), self.random((n, n), 22).astype(xp.float16)
        ref64 = a.astype(xp.float64) @ w.astype(xp.float64).T
        base = {"workload": f"HGEMM {n}"}
        c16 = xp.empty((n, n), xp.float16)

        def cublas_fp16():
            xp.matmul(a, w.T, out=c16)

        cublas_fp16()
        err = G.rel_error(c16.astype(xp.float32), ref64)
        ev, gr, why = self.time_both(lambda: G.time_callable(cublas_fp16, self.timing), cublas_fp16)
        name = "numpy X @ W.T, float16 (dry run)" if self.dry else "cuBLAS fp16 NT (cupy.matmul X @ W.T)"
        ok = G.passes(err, HALF_OUTPUT_TOL)
        if not ok:
            self.failures.append(f"HGEMM {n} {name}: relative error {err:.3e} > {HALF_OUTPUT_TOL:g}")
        cublas = dict(base, kind="cublas", layout="NT", variant=name, config="-", rel_err=err, ok=ok,
                      **G.timing_fields(ev, gr, why, None))
        self._rates(cublas, flops)
        self.hgemm_rows.append(cublas)
        tensor = ("TENSOR", (n, n), "float16")
        task = autotvm.task.create(HGEMM_TASK, args=(tensor, tensor, None, "float32"), target=self.target)

        def make():
            X = te.placeholder((n, n), "float16", name="X")
            W = te.placeholder((n, n), "float16", name="W")
            out = topi.cuda.dense_tensorcore(X, W, None, "float32")
            return topi.cuda.schedule_dense_tensorcore([out]), [X, W, out]

        try:
            print(f"== {task.name} {n}x{n}x{n}: {len(task.config_space)} configs, {self.opts.hgemm_trials} trials",
                  flush=True)
            zeros = np.zeros((n, n), np.float32)
            info = self.tune(task, f"HGEMM {n}", self.opts.hgemm_trials, [_to_host(a), _to_host(w), zeros],
                             [_to_host(ref64.astype(xp.float32))])
        except Exception as exc:  # noqa: BLE001 - the tuning run broke: a FAILED row, and on with the rest
            self._crashed(self.hgemm_rows, dict(base, kind="tecc", task=HGEMM_TASK, tuned=True), "tuning", exc)
            return
        self._final_gemm(task, info, make, base, (a, w), ref64, flops, cublas, rows=self.hgemm_rows)
        for row in self.hgemm_rows:  # the FP32 roof says nothing of tensor cores
            row["peak_share"] = row["peak_share_graph"] = None

    # conv2d ---------------------------------------------------------------------------
    def run_conv(self, name):
        c, hw, k, r, pad = self.opts.conv_layers[name]
        p = dict(n=1, c=c, h=hw, w=hw, k=k, r=r, stride=1, pad=pad)
        xp = self.xp
        oh, ow = topi_gpu.out_hw(p)
        flops = 2.0 * k * oh * ow * c * r * r
        seed = 100 + 10 * list(self.opts.conv_layers).index(name)
        x, wt = self.random((1, c, hw, hw), seed), self.random((k, c, r, r), seed + 1)
        ref64 = topi_gpu.conv2d_im2col(xp, x.astype(xp.float64), wt.astype(xp.float64), p["stride"], p["pad"])
        ref32 = _to_host(ref64.astype(xp.float32))
        out_shape = (1, k, oh, ow)
        args = (("TENSOR", (1, c, hw, hw), "float32"), ("TENSOR", (k, c, r, r), "float32"), (1, 1), (pad, pad),
                (1, 1), "float32")
        ref_input = [_to_host(x), _to_host(wt), np.zeros(out_shape, np.float32)]
        base = {"layer": name, "params": p, "task": CONV_TASK}
        try:
            task = autotvm.task.create(CONV_TASK, args=args, target=self.target)
            print(f"== {CONV_TASK} {name}: {len(task.config_space)} configs, {self.opts.conv_trials} trials",
                  flush=True)
            info = self.tune(task, name, self.opts.conv_trials, ref_input, [ref32])
        except Exception as exc:  # noqa: BLE001 - the tuning run broke: a FAILED row, and on with the rest
            self._crashed(self.conv_rows, dict(base, kind="tecc", tuned=True), f"tuning {CONV_TASK}", exc)
            return

        def make():
            data = te.placeholder((1, c, hw, hw), name="data")
            kernel = te.placeholder((k, c, r, r), name="kernel")
            out = topi.cuda.conv2d_nchw(data, kernel, (1, 1), (pad, pad), (1, 1), "float32")
            return topi.cuda.schedule_conv2d_nchw([out]), [data, kernel, out]

        rows = {}
        for tuned in (True, False):
            variant = f"tecc {'tuned' if tuned else 'untuned (fallback)'}"
            try:
                if tuned:
                    mod, cfg = self._build_tuned(task, make)
                    if mod is None:
                        why = self._untuned_note(info) or "no valid config in the log"
                        self.conv_rows.append(dict(base, kind="tecc", tuned=True, variant=variant, skipped=why))
                        if not self._untuned_note(info):
                            self.failures.append(f"{name} {variant}: {why}")
                        continue
                else:
                    mod, cfg = self._build_untuned(make), None
                out = self.poisoned(out_shape)
                rows[tuned] = self._tecc_row(self.conv_rows, dict(base, tuned=tuned), variant, mod, cfg,
                                             (x, wt, out), out, ref64, flops)
            except Exception as exc:  # noqa: BLE001
                self._crashed(self.conv_rows, dict(base, kind="tecc", tuned=tuned), variant, exc)
        torch_row = self._torch_conv(base, x, wt, pad, ref64, flops)
        tuned_row, untuned_row = rows.get(True), rows.get(False)
        for row in (tuned_row, untuned_row):
            if row is not None:
                row["x_torch"] = G.ratio(torch_row, row, "ms")
        if tuned_row is not None:
            tuned_row["x_untuned"] = G.ratio(untuned_row, tuned_row, "ms")
            tuned_row["x_untuned_graph"] = G.ratio(untuned_row, tuned_row, "ms_graph")

    def _torch_conv(self, base, x, wt, pad, ref64, flops):
        if self.torch is None:
            self.conv_rows.append(dict(base, kind="torch", variant="torch (cuDNN)", skipped=self.torch_note))
            return None
        torch = self.torch
        variant = f"torch {torch.__version__} (cuDNN)"
        try:
            tx, tw = torch.from_dlpack(x), torch.from_dlpack(wt)
            holder = {}

            def call():
                holder["out"] = torch.nn.functional.conv2d(tx, tw, stride=1, padding=pad)

            call()
            err = G.rel_error(self.xp.from_dlpack(holder["out"]), ref64)
            ev, _, _ = self.time_both(lambda: G.time_callable(G.torch_on_cupy_stream(call), self.timing), None)
        except Exception as exc:  # noqa: BLE001
            self._crashed(self.conv_rows, dict(base, kind="torch"), variant, exc)
            return None
        row = dict(base, kind="torch", variant=variant, config="-", rel_err=err,
                   ok=self._check(f"{base['layer']} {variant}", err), events=ev, graph=None,
                   graph_failure="not captured (torch)", ms=ev.median_ms if ev else None, ms_graph=None)
        self._rates(row, flops)
        self.conv_rows.append(row)
        return row

    # report ---------------------------------------------------------------------------
    def tables(self) -> str:
        parts = []
        cells = []
        for t in self.tunings:
            cells.append([t["task"], t["workload"], t["space"], f"{t['trials_logged']} / {t['trials_asked']}",
                          t["valid"], t["refused"], t["failed"],
                          G.fmt(t["wall_s"], ".1f") + (f" ({t['invocations']} runs)" if t["invocations"] > 1 else ""),
                          G.fmt(t["trials_per_s"], ".2f"),
                          G.fmt(t["best_gflops_tuning"], ".1f") + (" (emulated)" if t["emulated"] else ""),
                          t["best_config_tuning"]])
        if cells:
            parts.append(f"## Tuning runs (XGBTuner, feature_type={self.opts.feature_type!r}, plan_size "
                         f"{self.opts.plan_size}; trials = logged / asked; refused = instantiation errors, "
                         "nothing compiled)\n\n" + G.render_table(TUNING_COLUMNS, cells))
        n = self.opts.sgemm_size
        for rows, title in ((self.gemm_rows, f"## SGEMM {n}x{n}x{n} (float32): tuned and untuned tecc vs cuBLAS in "
                                             "the same layout (x cuBLAS = t(cuBLAS) / t(tecc), > 1: tecc faster)"),
                            (self.hgemm_rows, f"## HGEMM {n}x{n}x{n} (float16 operands, float32 accumulation, tensor "
                                              "cores): tuned and untuned dense_tensorcore vs cuBLAS's float16 GEMM "
                                              "(no FP32 peak share: tensor cores have their own roof)")):
            if rows:
                parts.append(title + "\n\n" + G.render_table(GEMM_COLUMNS, [_gemm_cells(r) for r in rows]))
        if self.conv_rows:
            cells = []
            for r in self.conv_rows:
                if "skipped" in r:
                    cells.append([r["layer"], r["variant"], "skipped: " + r["skipped"]]
                                 + [""] * (len(CONV_COLUMNS) - 3))
                    continue
                cells.append([r["layer"], r["variant"], r.get("config", "-"), G.fmt(r["rel_err"], ".1e"),
                              "yes" if r["ok"] else "NO", G.fmt(r["ms"], ".4f"), G.fmt(r["ms_graph"], ".4f"),
                              G.fmt(r["gflops"], ".0f"), _pct(r["peak_share"]),
                              _x(r.get("x_torch")) if r["kind"] == "tecc" else "-",
                              _x(r.get("x_untuned")) if r.get("tuned") else "-",
                              _x(r.get("x_untuned_graph")) if r.get("tuned") else "-"])
            parts.append("## ResNet-50 conv2d layers, batch 1 (conv2d_nchw.cuda; x torch = t(cuDNN) / t(tecc), "
                         "x untuned = t(untuned) / t(tuned))\n\n" + G.render_table(CONV_COLUMNS, cells))
        peak = self.peak.get("fp32_gflops")
        parts.append(f"FP32 peak: {G.fmt(peak, '.0f')} GFLOP/s (theoretical, from the device facts)")
        return "\n\n".join(parts)

    def summary(self) -> list:
        lines = []
        judged = not self.dry
        for t in self.tunings:
            rate = f"{t['trials_per_s']:.2f} trials/s" if t["trials_per_s"] else "no trial measured"
            lines.append(f"{t['task']} {t['workload']}: {t['trials_logged']} trials logged of {t['trials_asked']} "
                         f"asked (space {t['space']}), {t['valid']} valid, {t['refused']} refused; tuning "
                         f"{t['wall_s']:.1f} s over {t['invocations']} run(s), {rate}"
                         + (f"; {t['note']}" if t.get("note") else ""))
            other = {k: v for k, v in t.get("errors", {}).items() if k not in ("NO_ERROR", "INSTANTIATION_ERROR")}
            if other:
                kinds = ", ".join(f"{k} {v}" for k, v in sorted(other.items()))
                example = t["first_errors"][sorted(other)[0]]
                lines.append(f"{t['task']} {t['workload']}: failed trials: {kinds} (first {sorted(other)[0]}: "
                             f"{example.splitlines()[0][:200]})")
        n = self.opts.sgemm_size
        tuned = [r for r in self.gemm_rows if r.get("kind") == "tecc" and r.get("tuned") and "skipped" not in r]
        for r in tuned:
            timed = (f"{r['ms']:.4f} ms, {_x(r.get('ratio'))} cuBLAS {r['layout']} (graph replay "
                     f"{_x(r.get('ratio_graph'))})") if r.get("ms") is not None else "not timed (dry run)"
            lines.append(f"SGEMM {n} {r['task']} tuned ({r['config']}): {timed}")
        ratios = [r["ratio"] for r in tuned if r.get("ratio") is not None and r["ok"]]
        what = f"target: tuned SGEMM at {TARGET_SIZE} >= {TARGET_RATIO}x cuBLAS (the better of sgemm.cuda and " \
               f"{DENSE_TASK})"
        if tuned or any(r.get("kind") == "cublas" for r in self.gemm_rows):
            if not judged:
                lines.append(f"{what}: dry run: not judged")
            elif n != TARGET_SIZE:
                lines.append(f"{what}: not judged (n={n})")
            elif not ratios:
                lines.append(f"{what}: NOT MET (no correct tuned SGEMM was timed)")
            else:
                best = max(ratios)
                lines.append(f"{what}: {best:.3f}x {'MET' if best >= TARGET_RATIO else 'NOT MET'}")
        dense = [t for t in self.tunings if t["task"] == DENSE_TASK]
        if dense:
            t = dense[0]
            what = (f"target: {TARGET_TRIALS} trials of SGEMM tuning ({DENSE_TASK}, XGBTuner) in under "
                    f"{TARGET_WALL_S / 60:.0f} min")
            projected = (f"at {t['trials_per_s']:.2f} trials/s, {TARGET_TRIALS} trials would take "
                         f"{TARGET_TRIALS / t['trials_per_s'] / 60:.1f} min") if t["trials_per_s"] else "no rate"
            if not judged:
                lines.append(f"{what}: dry run: not judged ({projected} on the emulator)")
            elif n != TARGET_SIZE or t["wall_trials"] < TARGET_TRIALS:
                lines.append(f"{what}: not judged ({t['wall_trials']} trials timed at n={n}; {projected})")
            else:
                minutes = t["wall_s"] / 60
                met = "MET" if t["wall_s"] < TARGET_WALL_S else "NOT MET"
                lines.append(f"{what}: {t['wall_trials']} trials in {minutes:.1f} min ({t['trials_per_s']:.2f} "
                             f"trials/s) {met}")
        for r in self.hgemm_rows:
            if r.get("kind") == "tecc" and r.get("tuned") and "skipped" not in r:
                timed = (f"{r['ms']:.4f} ms, {G.fmt(r['gflops'] / 1e3 if r['gflops'] else None, '.1f')} TFLOP/s, "
                         f"{_x(r.get('ratio'))} cuBLAS fp16") if r.get("ms") is not None else "not timed (dry run)"
                lines.append(f"HGEMM {n} {r['task']} tuned ({r['config']}): {timed} (tensor cores; not judged)")
        for r in self.conv_rows:
            if r.get("kind") != "tecc" or not r.get("tuned") or "skipped" in r:
                continue
            if r.get("ms") is None:
                lines.append(f"conv2d {r['layer']}: tuned ({r['config']}): not timed (dry run)")
                continue
            torch_text = _x(r.get("x_torch")) + " torch (cuDNN)" if r.get("x_torch") is not None else \
                f"torch: {self.torch_note or 'not timed'}"
            lines.append(f"conv2d {r['layer']}: tuned {G.fmt(r['ms'], '.4f')} ms, {G.fmt(r['gflops'], '.0f')} "
                         f"GFLOP/s; {torch_text}; {_x(r.get('x_untuned'))} the untuned default")
        if self.conv_rows:
            lines.append("conv2d: no target for the tuned layers (reported, not judged)" if judged
                         else "conv2d: dry run: not judged")
        if self.stopped_at_deadline:
            lines.append("tuning stopped at --deadline-min: run again with the same --log-dir to resume")
        failed = {r["graph_failure"] for r in self.gemm_rows + self.conv_rows
                  if r.get("graph_failure") and "disabled" not in r["graph_failure"]
                  and "torch" not in r["graph_failure"]}
        for why in sorted(failed):
            lines.append(f"graph capture failed for some variants: {why}")
        return lines



def _gemm_cells(r) -> list:
    """The cells of one row of a GEMM table (SGEMM or HGEMM)."""
    if "skipped" in r:
        return [r["variant"], "skipped: " + r["skipped"]] + [""] * (len(GEMM_COLUMNS) - 2)
    regs = G.resource_text(r.get("resources"))
    return [r["variant"], r.get("config", "-"), G.fmt(r.get("launch")), G.fmt(regs), G.fmt(r["rel_err"], ".1e"),
            "yes" if r["ok"] else "NO", G.fmt(r["ms"], ".4f"), G.fmt(r["ms_graph"], ".4f"),
            G.fmt(r["gflops"] / 1e3 if r["gflops"] else None, ".2f"), _pct(r["peak_share"]),
            _x(r.get("ratio")), _x(r.get("ratio_graph"))]


def _pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def _x(v):
    return "-" if v is None else f"{v:.2f}x"


# ---------------------------------------------------------------------------------------
# the tuning curves
# ---------------------------------------------------------------------------------------
def plot_curves(bench, path):
    """Best GFLOP/s so far against the trial, one panel per task (the reference's
    rate as a dotted line); None, with a message, when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG of the tuning curves written")
        return None
    tunings = [t for t in bench.tunings if t["curve_gflops"]]
    if not tunings:
        print("no tuning records: no PNG of the tuning curves written")
        return None
    cols = min(4, len(tunings))
    rows = -(-len(tunings) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    refs = {("cublas", r["layout"]): r for r in bench.gemm_rows if r.get("kind") == "cublas"}
    refs.update({("torch", r["layer"]): r for r in bench.conv_rows if r.get("kind") == "torch" and "skipped" not in r})
    for ax, t in zip(axes.flat, tunings):
        curve = np.asarray(t["curve_gflops"])
        ax.step(np.arange(1, len(curve) + 1), curve, where="post", color="tab:blue", label="XGBTuner, best so far")
        ax.set_ylim(bottom=0)
        if t["task"] == CONV_TASK:
            ref = refs.get(("torch", t["workload"]))
            ref_name = "cuDNN (torch)"
        else:
            ref = refs.get(("cublas", "NN" if t["task"] == gemm.SGEMM_TASK else "NT"))
            ref_name = "cuBLAS"
        if ref is not None and ref.get("gflops"):
            ax.axhline(ref["gflops"], color="tab:gray", ls=":", lw=1, label=ref_name)
        title = f"{t['task']} {t['workload']}" + (" (emulated)" if t["emulated"] else "")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylabel("best GFLOP/s so far")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    for ax in list(axes.flat)[len(tunings):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------
# options and main
# ---------------------------------------------------------------------------------------
def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(DEFAULT_PARTS),
                    help=f"parts to run ({','.join(PARTS)}; default {','.join(DEFAULT_PARTS)})")
    ap.add_argument("--sgemm-size", type=int, help=f"SGEMM n (default {SGEMM_SIZE}; dry run {DRY_SGEMM_SIZE})")
    ap.add_argument("--sgemm-trials", type=int, default=None,
                    help=f"trials of sgemm.cuda (default: its whole space, 144 configs; dry run {DRY_TRIALS})")
    ap.add_argument("--trials", type=int, help=f"trials of {DENSE_TASK} (default {TRIALS}; dry run {DRY_TRIALS})")
    ap.add_argument("--hgemm-trials", type=int,
                    help=f"trials of {HGEMM_TASK} (default {HGEMM_TRIALS}; dry run {DRY_TRIALS})")
    ap.add_argument("--conv-trials", type=int,
                    help=f"trials per conv2d layer (default {CONV_TRIALS}; dry run {DRY_CONV_TRIALS})")
    ap.add_argument("--convs", default="", help="comma-separated conv2d layers (default all: "
                    + ", ".join(CONV_LAYERS) + ")")
    ap.add_argument("--feature-type", default="knob", choices=("knob", "itervar", "curve"),
                    help="XGBTuner's features (default knob: the TIR-based ones lower every config the "
                         "annealing visits, thousands per plan)")
    ap.add_argument("--plan-size", type=int, help=f"XGBTuner's plan_size (default {PLAN_SIZE}; dry run "
                    f"{DRY_PLAN_SIZE})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-parallel", type=int, default=None, help="LocalBuilder workers (default: the CPU cores)")
    ap.add_argument("--build-timeout", type=float, default=20.0,
                    help="LocalBuilder timeout per candidate (s; a batch waits for its slowest build: the templates' "
                         "filters keep NVRTC under about 5 s, H100 box 2026-11-28)")
    ap.add_argument("--run-timeout", type=float, default=30.0, help="LocalRunner timeout per candidate (s)")
    ap.add_argument("--cooldown-s", type=float, default=0.1,
                    help="LocalRunner cooldown_interval: seconds of sleep after each measured candidate (default 0.1, "
                         "AutoTVM's; 100 s of every 1000 trials -- the 'cooldown' figure of each run's breakdown)")
    ap.add_argument("--tune-number", type=int, default=1, help="LocalRunner number")
    ap.add_argument("--tune-repeat", type=int, default=3, help="LocalRunner repeat")
    ap.add_argument("--tune-min-repeat-ms", type=float, default=None,
                    help="LocalRunner min_repeat_ms (default 50; dry run 0)")
    ap.add_argument("--log-dir", default=None, help="folder of the tuning log (default: tune_gpu_logs beside the "
                    "results, --out or benchmarks/results; a dry run without --out: a temporary folder)")
    ap.add_argument("--no-tuning", action="store_true",
                    help="tune nothing: build and time the best configs already in the log")
    ap.add_argument("--deadline-min", type=float, default=None,
                    help="stop tuning after this many minutes (the log keeps what was measured; the best so far "
                         "is built and timed)")
    G.add_common_args(ap, "tune", number=3, graph_calls=10, tol=TOLERANCE)
    ap.add_argument("--no-torch", action="store_true", help="skip the torch (cuDNN) references")
    ap.add_argument("--no-cudnn-benchmark", action="store_true",
                    help="leave torch.backends.cudnn.benchmark off (cuDNN's heuristic algorithm choice)")
    return ap


def _positive(ap, name, value, allow_none=False):
    if value is None and allow_none:
        return
    if not isinstance(value, (int, float)) or value <= 0:
        ap.error(f"{name} must be positive, got {value!r}")


def parse_options(argv=None):
    ap = build_parser()
    opts = ap.parse_args(argv)
    dry = opts.dry_run
    opts.parts = [p.strip() for p in opts.tasks.split(",") if p.strip()]
    unknown = sorted(set(opts.parts) - set(PARTS))
    if unknown or not opts.parts:
        ap.error(f"--tasks: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(PARTS)}")
    layers = DRY_CONV_LAYERS if dry else CONV_LAYERS
    names = [c.strip() for c in opts.convs.split(",") if c.strip()] if opts.convs else list(layers)
    bad = [c for c in names if c not in layers]
    if bad:
        ap.error(f"--convs: unknown layer(s) {bad}; choose from {list(layers)}")
    opts.conv_layers = {c: layers[c] for c in names}
    opts.sgemm_size = opts.sgemm_size or (DRY_SGEMM_SIZE if dry else SGEMM_SIZE)
    opts.trials = opts.trials or (DRY_TRIALS if dry else TRIALS)
    opts.conv_trials = opts.conv_trials or (DRY_CONV_TRIALS if dry else CONV_TRIALS)
    opts.hgemm_trials = opts.hgemm_trials or (DRY_TRIALS if dry else HGEMM_TRIALS)
    opts.plan_size = opts.plan_size or (DRY_PLAN_SIZE if dry else PLAN_SIZE)
    if opts.tune_min_repeat_ms is None:
        opts.tune_min_repeat_ms = 0.0 if dry else 50.0
    opts.n_parallel = opts.n_parallel or len(os.sched_getaffinity(0))
    for name in ("sgemm_size", "trials", "conv_trials", "hgemm_trials", "plan_size", "n_parallel", "build_timeout", "run_timeout",
                 "tune_number", "tune_repeat"):
        _positive(ap, "--" + name.replace("_", "-"), getattr(opts, name))
    _positive(ap, "--sgemm-trials", opts.sgemm_trials, allow_none=True)
    _positive(ap, "--deadline-min", opts.deadline_min, allow_none=True)
    if opts.sgemm_size % 32:
        ap.error(f"--sgemm-size {opts.sgemm_size}: sgemm.cuda needs a multiple of 32 (its smallest block)")
    if opts.log_dir is None and not (dry and not opts.out):  # that one: a temporary folder (Bench)
        opts.log_dir = os.path.join(opts.out or os.path.join(_HERE, "results"), "tune_gpu_logs")
    return opts


def main(argv=None) -> int:
    """Run the benchmark; return 0, 1 when a result failed its check (or a build
    failed, or a task has no valid config), 2 without a GPU unless ``--dry-run``."""
    opts = parse_options(argv)
    if not opts.dry_run and not G.has_gpu():
        print("tune_gpu: no CUDA GPU here (tecc.cuda(0).exist is False); use --dry-run", file=sys.stderr)
        return 2
    bench = Bench(opts)
    facts = G.device_facts(opts.dry_run, bench.target)
    if not opts.dry_run:
        bench.peak = topi_gpu.peaks(facts)
    print(G.facts_header(facts), flush=True)
    print(f"tuning log: {bench.log_path}", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "running on the CPU emulation" in a dry run
        gemm_parts = [p for p in opts.parts if p in ("sgemm", "dense")]
        if gemm_parts:
            bench.run_gemm(gemm_parts)
            print(f"SGEMM {opts.sgemm_size} done", flush=True)
        if "hgemm" in opts.parts:
            bench.run_hgemm()
            print(f"HGEMM {opts.sgemm_size} done", flush=True)
        if "conv" in opts.parts:
            for name in opts.conv_layers:
                bench.run_conv(name)
                print(f"conv2d {name} done", flush=True)
    table = bench.tables()
    summary = bench.summary() + [f"FAILED {f}" for f in bench.failures]
    print(table)
    print("\n".join(summary))
    if opts.out:
        os.makedirs(opts.out, exist_ok=True)
        stem = G.result_name(facts, "tune")
        png = plot_curves(bench, os.path.join(opts.out, stem + ".png"))
        md = table + ("\n\n" + "\n".join(f"- {s}" for s in summary) if summary else "")
        if png:
            md += f"\n\n![tuning curves]({os.path.basename(png)})"
        data = {"options": {k: v for k, v in vars(opts).items()}, "timing": dataclasses.asdict(bench.timing),
                "targets": {"sgemm_ratio": {"size": TARGET_SIZE, "ratio": TARGET_RATIO},
                            "trials_wall": {"trials": TARGET_TRIALS, "seconds": TARGET_WALL_S}},
                "peaks": bench.peak, "torch_settings": bench.torch_settings, "torch_note": bench.torch_note,
                "tunings": bench.tunings, "sgemm": bench.gemm_rows, "hgemm": bench.hgemm_rows,
                "conv2d": bench.conv_rows,
                "png": os.path.basename(png) if png else None, "summary": summary}
        paths = G.write_results(opts.out, "tune", facts, data, md)
        print("wrote " + ", ".join(paths + ((png,) if png else ())))
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
