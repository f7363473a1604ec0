"""Where a model's CPU time goes: tecc's kernels one by one against onnxruntime's nodes.

    python benchmarks/profile_model_cpu.py [--models resnet50,squeezenet] [--batch 1]
                                           [--rounds 7] [--min-ms 200] [--threads N]
                                           [--target "llvm -mcpu=native"]
                                           [--stat median|min] [--records LOG]
                                           [--save-artifacts DIR] [--build-only]
                                           [--baseline DIR] [--out FILE]

The models are those of ``benchmarks/models_cpu.py`` (the light ResNet-50 and
SqueezeNet of the onnx package with random weights; ``make_model`` is imported from
there), built by ``tecc.graph.build`` at opt_level 3 with the default schedules (or
under ``apply_history_best(LOG)`` with ``--records``).

Per model, in one run:

* **tecc, per kernel**: :meth:`GraphExecutor.profile` times every kernel call of the
  graph executor on its own.  Calls are grouped by *layer kind*: the fused
  function's anchor operator (the one of highest fusion pattern among the operators
  its name lists: ``fused_nn_conv2d_nn_bias_add_nn_relu`` is a ``conv2d``) and its
  shapes (data and weight for a convolution or dense layer, input and output for a
  pooling, the output otherwise), read from the graph JSON.  A convolution's
  GFLOP/s is ``2 N F OH OW (C / groups) KH KW`` over its time.
* **onnxruntime, per node**: the same model in an ``InferenceSession`` with
  ``SessionOptions.enable_profiling`` (all graph optimizations, CPU provider); each
  ``*_kernel_time`` event is keyed the same way from its ``input_type_shape`` and
  ``output_type_shape`` (``Conv`` and ``FusedConv`` are ``conv2d``, ``Gemm`` is
  ``dense``...).  Nodes tecc has no kind for (onnxruntime's NCHWc ``ReorderInput``
  and ``ReorderOutput`` layout copies) are rows of their own.
* **whole model**: ``GraphExecutor.run`` against ``InferenceSession.run`` without
  profiling; the gap between tecc's whole run and the sum of its kernels is the
  executor's own overhead.
* **before** (``--baseline DIR``): the artifacts another build saved with
  ``--save-artifacts`` (``DIR/<model>_b<batch>.tar``, e.g. built from an older
  checkout with ``PYTHONPATH=<checkout's parent> python .../profile_model_cpu.py
  --build-only --save-artifacts DIR``) are loaded and profiled in the same rounds.

Timing: ``--rounds`` interleaved rounds, each runs every contender once (the order
rotating between rounds), after a pause of ``--settle-ms`` (the threads of the
runtime timed before spin for a while after it returns and would take a core from
the next one); a per-kernel figure is the median over the rounds (``--stat min``:
the minimum, here and for the whole model), a
whole-model sample the mean of ``number`` runs (``number`` grown until a sample lasts
``--min-ms``), its figure the median sample.  ``--threads`` (default: every core) sets
onnxruntime's intra-op threads and, for tecc, ``OMP_NUM_THREADS`` when it is not set.

The table is sorted by loss (tecc ms minus onnxruntime ms, the largest first).
Results go to ``benchmarks/results/<date>_profile_model_cpu.json`` (or ``--out``).
Needs onnx and onnxruntime (without onnxruntime only tecc's columns are filled).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from collections import OrderedDict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL, ATOL = 1e-3, 1e-4

#: onnxruntime operator -> tecc's layer kind (the anchor operator without "nn.")
ORT_KINDS = {
    "Conv": "conv2d", "FusedConv": "conv2d", "Gemm": "dense", "FusedGemm": "dense", "MatMul": "dense",
    "MaxPool": "max_pool2d", "AveragePool": "avg_pool2d", "GlobalAveragePool": "global_avg_pool2d",
    "GlobalMaxPool": "global_max_pool2d", "Softmax": "softmax", "Concat": "concatenate", "Relu": "relu",
    "Add": "add", "Sum": "add", "Reshape": "reshape", "Flatten": "reshape", "Dropout": "dropout",
    "ReorderInput": "layout", "ReorderOutput": "layout",
}
#: kinds keyed by their input and output shapes
POOL_KINDS = ("max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d")


# ---------------------------------------------------------------------------------------
# layer kinds
# ---------------------------------------------------------------------------------------
def parse_kernel_name(func_name: str, op_names) -> list:
    """The operators a fused kernel's name lists (``fused_nn_conv2d_nn_relu_3`` ->
    ``["nn.conv2d", "nn.relu"]``): graph/build.py names a kernel ``fused_`` and its
    operators' names with ``.`` written ``_``, then ``_<k>`` when the name was taken."""
    rest = func_name[len("fused_"):] if func_name.startswith("fused_") else func_name
    spelled = sorted(((n.replace(".", "_"), n) for n in op_names), key=lambda p: -len(p[0]))
    ops = []
    while rest:
        for written, name in spelled:
            if rest == written or rest.startswith(written + "_"):
                ops.append(name)
                rest = rest[len(written) + 1:]
                break
        else:
            # the uniqueness suffix, or a name cut at its maximum length
            cut = rest.find("_")
            rest = "" if cut < 0 else rest[cut + 1:]
    return ops


def anchor_of(ops) -> str:
    """The operator of highest fusion pattern (the first of them on a tie)."""
    from tecc.graph.op import get_op  # noqa: PLC0415

    if not ops:
        return "?"
    return max(ops, key=lambda name: (int(get_op(name).pattern), -ops.index(name)))


#: tecc operators counted as another layer kind (the blocked convolution is a conv2d;
#: layout transforms are onnxruntime's Reorder* copies)
TECC_KINDS = {"nn.contrib_conv2d_NCHWc": "conv2d", "nn.contrib_conv2d_NCHWc_winograd": "conv2d",
              "layout_transform": "layout"}


def _kind(op_name: str) -> str:
    if op_name in TECC_KINDS:
        return TECC_KINDS[op_name]
    return op_name[3:] if op_name.startswith("nn.") else op_name


def _unblocked(shape, winograd=False) -> list:
    """An NCHW{b}c shape (5-D) as NCHW, an OIHW{i}i{o}o weight (6-D) as OIHW (a
    Winograd weight, ``[4, 4, O/o, I/i, i, o]``, as the OIHW 3x3 weight it came from)."""
    shape = list(shape)
    if winograd and len(shape) == 6:
        _a, _b, oc, ic, ib, ob = shape
        return [oc * ob, ic * ib, 3, 3]
    if len(shape) == 5:
        n, cc, h, w, cb = shape
        return [n, cc * cb, h, w]
    if len(shape) == 6:
        oc, ic, kh, kw, ib, ob = shape
        return [oc * ob, ic * ib, kh, kw]
    return shape


def layer_key(kind, inputs, output):
    """``(key, label, flop)`` of a layer from its kind, its input shapes (data first,
    then the weight for conv2d and dense) and its output shape; flop is None for
    layers that are not a convolution or a dense layer."""
    inputs = [tuple(s) for s in inputs]
    output = tuple(output)
    if kind == "conv2d" and len(inputs) >= 2 and len(inputs[0]) == 4 and len(inputs[1]) == 4:
        (n, c, h, w), (f, cg, kh, kw) = inputs[0], inputs[1]
        oh, ow = output[2], output[3]
        stride = max(1, round(h / oh)) if oh else 1
        groups = c // cg if cg else 1
        label = f"conv2d {kh}x{kw}/{stride} {c}->{f} {h}x{w}" + (f" g{groups}" if groups > 1 else "")
        return ("conv2d", inputs[0], inputs[1]), label, 2 * n * f * oh * ow * cg * kh * kw
    if kind == "dense" and inputs and len(inputs[0]) == 2 and len(output) == 2:
        m, k = inputs[0]
        n = output[1]
        return ("dense", m, n, k), f"dense {m}x{k}->{n}", 2 * m * n * k
    if kind in POOL_KINDS and inputs:
        dims = "x".join(map(str, inputs[0][1:]))
        return (kind, inputs[0], output), f"{kind} {dims}->{'x'.join(map(str, output[1:]))}", None
    return (kind, output), f"{kind} {'x'.join(map(str, output))}", None


def tecc_layers(graph: dict, params, op_names) -> list:
    """Per kernel call of a graph JSON, in graph order: ``(node index, key, label,
    flop, operators)``."""
    shapes = graph["attrs"]["shape"][1]
    row = graph["node_row_ptr"]
    nodes = graph["nodes"]
    out = []
    for i, node in enumerate(nodes):
        if not calls_kernel(node):  # an input, or a no-op
            continue
        ops = parse_kernel_name(node["attrs"]["func_name"], op_names)
        kind = _kind(anchor_of(ops))
        ins = [(nodes[nid]["name"], shapes[row[nid] + k]) for nid, k, _ in node["inputs"]]
        data = [s for name, s in ins if name not in params]
        weights = [s for name, s in ins if name in params]
        output = shapes[row[i]]
        if kind == "conv2d":
            winograd = "nn.contrib_conv2d_NCHWc_winograd" in ops
            if winograd or "nn.contrib_conv2d_NCHWc" in ops:
                data = [_unblocked(s) for s in data if len(s) == 5]
                weights = [_unblocked(s, winograd) for s in weights if len(s) == 6]
                output = _unblocked(output)
            inputs = [next((s for s in data if len(s) == 4), data[0] if data else []),
                      next((s for s in weights if len(s) == 4), [])]
        elif kind == "dense":
            inputs = [next((s for s in data if len(s) == 2), []), next((s for s in weights if len(s) == 2), [])]
        else:
            inputs = [data[0] if data else (ins[0][1] if ins else [])]
        key, label, flop = layer_key(kind, inputs, output)
        out.append((i, key, label, flop, ops))
    return out


def ort_layer(event) -> tuple:
    """``(key, label, flop)`` of an onnxruntime ``*_kernel_time`` profiling event."""
    args = event.get("args", {})
    op = args.get("op_name", "?")
    kind = ORT_KINDS.get(op, op.lower())
    ins = [list(d.values())[0] for d in args.get("input_type_shape", [])]
    outs = [list(d.values())[0] for d in args.get("output_type_shape", [])]
    if kind == "dense" and ins and outs and len(ins[0]) == 2:
        m, k = ins[0]
        n = outs[0][1]
        return ("dense", m, n, k), f"dense {m}x{k}->{n}", 2 * m * n * k
    if kind == "layout":
        return ("layout (onnxruntime only)", op), f"{op} (onnxruntime's NCHWc layout copies)", None
    return layer_key(kind, ins, outs[0] if outs else [])


# ---------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------
# the same timing loop as the whole-model benchmark (calibrate a count, then sample)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models_cpu import calibrate, calls_kernel, sample  # noqa: E402


def settle(ms: float) -> None:
    """Wait ``ms`` before timing the next contender: onnxruntime's pool threads
    spin after a run (``session.intra_op.allow_spinning``), as OpenMP's do after a
    parallel loop, and a runtime timed while the other's threads still spin loses a
    core (tecc's ResNet-50 right after an onnxruntime run: 1.7x slower, measured)."""
    if ms > 0:
        time.sleep(ms / 1e3)


def ort_node_times(profile_file: str, skip_runs: int) -> dict:
    """``name -> (event, [ms per run])`` of onnxruntime's node events, the first
    ``skip_runs`` runs (warm-up, the correctness check) left out."""
    with open(profile_file) as f:
        events = json.load(f)
    nodes = OrderedDict()
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            first, times = nodes.setdefault(e["name"], (e, []))
            times.append(e["dur"] / 1e3)
    return {name: (e, times[skip_runs:]) for name, (e, times) in nodes.items()}


# ---------------------------------------------------------------------------------------
# one model
# ---------------------------------------------------------------------------------------
class Contender:
    """One tecc executor: its per-node samples across rounds and whole-model samples."""

    def __init__(self, name, factory, feeds, op_names, stat=np.median):
        import tecc  # noqa: PLC0415

        self.name = name
        self.stat = stat        # the rounds' samples of a kernel -> its figure
        self.factory = factory
        self.executor = factory["default"](tecc.cpu(0))
        for key, value in feeds.items():
            self.executor.set_input(key, value)
        graph = json.loads(factory.get_graph_json())
        self.layers = tecc_layers(graph, set(factory.params), op_names)
        self.samples = {}      # node index -> [seconds]
        self.whole_ms = []
        self.number = 1
        self.func = {}

    def output(self):
        self.executor.run()
        return self.executor.get_output(0).numpy()

    def profile_round(self) -> None:
        for row in self.executor.profile(repeat=1).rows:
            self.samples.setdefault(row.index, []).extend(row.results)
            self.func[row.index] = row.func_name

    def kernel_ms(self) -> dict:
        return {i: float(self.stat(v)) * 1e3 for i, v in self.samples.items()}


def profile_model(name, args, op_names):
    """Build, check and time one model; returns its JSON record."""
    import models_cpu  # noqa: PLC0415
    import tecc  # noqa: PLC0415

    model, feeds = models_cpu.make_model(name, args.batch)
    factory, compile_s = models_cpu.build_tecc(model, args.target, args.records or None)
    tag = f"{name}_b{args.batch}"
    if args.save_artifacts:
        os.makedirs(args.save_artifacts, exist_ok=True)
        factory.export_library(os.path.join(args.save_artifacts, f"{tag}.tar"))
    print(f"built {name} batch {args.batch}: compile {compile_s:.1f} s", flush=True)
    if args.build_only:
        return {"model": name, "batch": args.batch, "compile_s": compile_s}

    stat = np.min if args.stat == "min" else np.median
    contenders = [Contender("tecc", factory, feeds, op_names, stat)]
    if args.baseline:
        path = os.path.join(args.baseline, f"{tag}.tar")
        contenders.append(Contender("before", tecc.runtime.load_module(path), feeds, op_names, stat))

    sess = prof_sess = None
    try:
        import onnxruntime as ort  # noqa: PLC0415
    except ImportError:
        ort = None
    if ort is not None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        popts = ort.SessionOptions()
        popts.intra_op_num_threads = args.threads
        popts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        popts.enable_profiling = True
        popts.profile_file_prefix = os.path.join(args.tmpdir, f"ort_{tag}")
        prof_sess = ort.InferenceSession(model.SerializeToString(), popts, providers=["CPUExecutionProvider"])

    record = {"model": name, "batch": args.batch, "compile_s": round(compile_s, 2), "correct": {}}
    if sess is not None:
        ref = sess.run(None, feeds)[0]
        for c in contenders:
            got = c.output()
            ok = got.shape == ref.shape and bool(np.allclose(got, ref, rtol=RTOL, atol=ATOL))
            record["correct"][c.name] = ok
            if not ok:
                print(f"FAILED: {c.name} disagrees with onnxruntime on {name}", flush=True)
        prof_sess.run(None, feeds)  # warm-up, left out of the node times

    runners = [(c.name, c.executor.run) for c in contenders]
    if sess is not None:
        runners.append(("ort", lambda: sess.run(None, feeds)))
    numbers = {who: calibrate(fn, args.min_ms) for who, fn in runners}
    whole = {who: [] for who, _ in runners}
    for r in range(args.rounds):
        shift = r % len(runners)
        for who, fn in runners[shift:] + runners[:shift]:
            settle(args.settle_ms)
            whole[who].append(sample(fn, numbers[who]))
            contender = next((c for c in contenders if c.name == who), None)
            settle(args.settle_ms)
            if contender is not None:
                contender.profile_round()
            elif prof_sess is not None:
                prof_sess.run(None, feeds)
    ort_nodes = {}
    if prof_sess is not None:
        ort_nodes = ort_node_times(prof_sess.end_profiling(), skip_runs=1)

    record["whole_ms"] = {who: float(stat(v)) for who, v in whole.items()}
    record["stat"] = args.stat
    record["whole_samples_ms"] = whole
    record["rows"] = layer_table(contenders, ort_nodes, stat)
    for c in contenders:
        record[f"{c.name}_kernel_sum_ms"] = float(sum(c.kernel_ms().values()))
        record[f"{c.name}_kernels"] = [
            {"node": i, "func_name": c.func[i], "label": label, "ms": ms, "gflops": flop / ms / 1e6 if flop else None}
            for (i, _, label, flop, _), ms in ((layer, c.kernel_ms()[layer[0]]) for layer in c.layers)]
    if ort_nodes:
        record["ort_node_sum_ms"] = float(sum(stat(t) for _, t in ort_nodes.values() if t))
    return record


def layer_table(contenders, ort_nodes, stat=np.median) -> list:
    """One row per layer kind: calls, ms (``stat`` of the rounds) and GFLOP/s of every
    contender and of onnxruntime, the operators fused with it, the loss against
    onnxruntime."""
    rows = OrderedDict()

    def row_of(key, label, flop):
        return rows.setdefault(key, {"label": label, "flop_per_call": flop, "fused": set()})

    for c in contenders:
        ms = c.kernel_ms()
        for i, key, label, flop, ops in c.layers:
            row = row_of(key, label, flop)
            row[f"{c.name}_calls"] = row.get(f"{c.name}_calls", 0) + 1
            row[f"{c.name}_ms"] = row.get(f"{c.name}_ms", 0.0) + ms[i]
            row["fused"].update(_kind(o) for o in ops)
    per_run = {}
    for _, (event, times) in ort_nodes.items():
        if not times:
            continue
        key, label, flop = ort_layer(event)
        row = row_of(key, label, flop)
        row["ort_calls"] = row.get("ort_calls", 0) + 1
        runs = per_run.setdefault(key, [0.0] * len(times))
        for k, t in enumerate(times[:len(runs)]):
            runs[k] += t
    for key, runs in per_run.items():
        rows[key]["ort_ms"] = float(stat(runs))
    out = []
    for key, row in rows.items():
        row["key"] = repr(key)
        row["fused"] = sorted(row["fused"])
        for who in [c.name for c in contenders] + ["ort"]:
            row.setdefault(f"{who}_ms", 0.0)
            row.setdefault(f"{who}_calls", 0)
            if row["flop_per_call"] and row[f"{who}_ms"] > 0:
                row[f"{who}_gflops"] = row["flop_per_call"] * row[f"{who}_calls"] / row[f"{who}_ms"] / 1e6
        row["loss_ms"] = row["tecc_ms"] - row["ort_ms"]
        out.append(row)
    out.sort(key=lambda r: -r["loss_ms"])
    return out


def print_record(rec, has_before: bool) -> None:
    whole = rec["whole_ms"]
    print()
    print(f"== {rec['model']} batch {rec['batch']}: compile {rec['compile_s']:.1f} s")
    cols = f"{'layer kind':<34}{'calls':>6}{'tecc ms':>9}"
    if has_before:
        cols += f"{'before':>9}"
    cols += f"{'ort ms':>9}{'loss ms':>9}{'tecc GF/s':>10}"
    if has_before:
        cols += f"{'before':>8}"
    cols += f"{'ort GF/s':>9}  fused"
    print(cols)
    for r in rec["rows"]:
        line = f"{r['label'][:33]:<34}{r['tecc_calls'] or r['ort_calls']:>6}{r['tecc_ms']:>9.2f}"
        if has_before:
            line += f"{r['before_ms']:>9.2f}"
        line += f"{r['ort_ms']:>9.2f}{r['loss_ms']:>9.2f}{_gf(r, 'tecc'):>10}"
        if has_before:
            line += f"{_gf(r, 'before'):>8}"
        line += f"{_gf(r, 'ort'):>9}  {'+'.join(f for f in r['fused'] if f != r['label'].split()[0])}"
        print(line)
    tecc_sum = rec["tecc_kernel_sum_ms"]
    print(f"{'sum of kernels / nodes':<34}{'':>6}{tecc_sum:>9.2f}", end="")
    if has_before:
        print(f"{rec['before_kernel_sum_ms']:>9.2f}", end="")
    print(f"{rec.get('ort_node_sum_ms', float('nan')):>9.2f}")
    line = f"{'whole model (run)':<34}{'':>6}{whole['tecc']:>9.2f}"
    if has_before:
        line += f"{whole['before']:>9.2f}"
    line += f"{whole.get('ort', float('nan')):>9.2f}"
    print(line)
    print(f"executor overhead (whole run - kernels): {whole['tecc'] - tecc_sum:.2f} ms")
    if "ort" in whole:
        print(f"whole-model ratio t(onnxruntime)/t(tecc): {whole['ort'] / whole['tecc']:.2f}x", end="")
        if has_before:
            print(f"  (before: {whole['ort'] / whole['before']:.2f}x; tecc now {whole['before'] / whole['tecc']:.2f}x "
                  "faster than before)", end="")
        print()


def _gf(row, who) -> str:
    v = row.get(f"{who}_gflops")
    return "" if v is None or not math.isfinite(v) else f"{v:.1f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,squeezenet",
                    help="comma-separated, of resnet50, squeezenet, encoder, decoder")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds")
    ap.add_argument("--min-ms", type=float, default=200.0, help="shortest whole-model timing sample")
    ap.add_argument("--settle-ms", type=float, default=200.0, help="pause before each contender's sample (the "
                    "other runtime's spinning threads go to sleep)")
    ap.add_argument("--target", default="llvm -mcpu=native")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="onnxruntime's intra-op threads (and tecc's "
                    "OMP_NUM_THREADS when unset)")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="each figure from its rounds' samples: the median, or the minimum (what the code does "
                         "when the VM leaves it alone: noise on a shared VM comes in bursts, and a sum of "
                         "per-kernel medians misses the bursts a whole run meets)")
    ap.add_argument("--records", default="", help="a tuning log applied to the build (apply_history_best)")
    ap.add_argument("--save-artifacts", default="", help="export each built model to DIR/<model>_b<batch>.tar")
    ap.add_argument("--build-only", action="store_true", help="build (and save) only, no timing")
    ap.add_argument("--baseline", default="", help="DIR of artifacts saved by another build: profiled as 'before'")
    ap.add_argument("--out", default="", help="the JSON file (default: benchmarks/results/<date>_profile_model_cpu.json)")
    args = ap.parse_args(argv)
    if args.records and not os.path.exists(args.records):
        print(f"profile_model_cpu.py: --records {args.records} does not exist; give a tuning log "
              "(tecc tune --output ...)", file=sys.stderr)
        return 2

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in ("resnet50", "squeezenet", "encoder", "decoder")]
    if unknown:
        print(f"profile_model_cpu.py: unknown model(s) {unknown}; choose from resnet50, squeezenet, encoder, decoder",
              file=sys.stderr)
        return 2
    if args.baseline and not all(os.path.exists(os.path.join(args.baseline, f"{m}_b{args.batch}.tar"))
                                 for m in models):
        print(f"profile_model_cpu.py: --baseline {args.baseline} lacks <model>_b{args.batch}.tar for {models}; save "
              "them with --build-only --save-artifacts from the build to compare with", file=sys.stderr)
        return 2
    if args.build_only and not args.save_artifacts:
        print("profile_model_cpu.py: --build-only needs --save-artifacts DIR (else nothing is kept)", file=sys.stderr)
        return 2
    # before any kernel library (and its OpenMP runtime) is loaded
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    sys.path.insert(0, HERE)
    import tempfile  # noqa: PLC0415

    from tecc.graph.op import list_ops  # noqa: PLC0415

    op_names = list_ops()
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        args.tmpdir = tmp
        for name in models:
            rec = profile_model(name, args, op_names)
            records.append(rec)
            if not args.build_only:
                print_record(rec, bool(args.baseline))
    if args.build_only:
        return 0
    try:
        import onnxruntime  # noqa: PLC0415

        ort_version = onnxruntime.__version__
    except ImportError:
        ort_version = None
    out = args.out or os.path.join(HERE, "results", f"{datetime.date.today().isoformat()}_profile_model_cpu.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    facts = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": platform.machine(),
        "cores": os.cpu_count(), "python": platform.python_version(), "onnxruntime": ort_version,
        "target": args.target, "ort_intra_op_threads": args.threads,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "rounds": args.rounds, "min_ms": args.min_ms,
        "settle_ms": args.settle_ms,
        "baseline": args.baseline or None, "load_average": os.getloadavg(),
    }
    with open(out, "w") as f:
        json.dump({"facts": facts, "models": records}, f, indent=1)
    print(f"wrote {out}")
    failed = [f"{r['model']} ({who})" for r in records for who, ok in r.get("correct", {}).items() if not ok]
    if failed:
        print(f"FAILED: {', '.join(failed)} disagree with onnxruntime")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
