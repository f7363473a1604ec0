"""The channel-blocked convolution (``topi.x86.conv2d_NCHWc``) against tecc's NCHW
convolution and onnxruntime, on every conv layer shape of ResNet-50 and
SqueezeNet 1.1 at batch 1, one thread.

    python benchmarks/conv_nchwc_cpu.py [--target "llvm -mcpu=native"] [--out results.json]
                                        [--layers substring,...] [--rounds 7] [--quick] [--min-ms 20]

For each layer, in the same run and on the same inputs:

* ``nchw``: tecc's default NCHW x86 convolution, untuned (``topi.x86.conv2d_nchw``
  + ``topi.x86.schedule_conv2d_nchw``: the direct or the flat template, as it picks);
* ``nchwc8`` / ``nchwc16``: ``topi.x86.conv2d_NCHWc`` + ``schedule_conv2d_NCHWc``
  (fallback config) with output blocks of 8 and 16 channels, the input blocked as
  its producer would block it (the same block, or all 3 channels of an image); the
  layout transforms are not timed (the graph compiler keeps the blocked layout
  between layers and re-lays the weights out once at build time);
* ``ort``: onnxruntime running a one-node ONNX ``Conv`` (it blocks channels
  internally), ``intra_op_num_threads=1``, graph optimizations on, the weight an
  initializer (pre-packed at session creation, as a model's is).

Every tecc variant is checked against topi.testing's numpy reference (relative
error at most 1e-4; outputs filled with NaN first).  tecc runs with
``OMP_NUM_THREADS=1`` (set here when unset, before the first kernel runs); tecc
modules are timed by their ``time_evaluator``, onnxruntime by a loop of calls;
each sample lasts at least ``--min-ms``.  The variants are timed in ``--rounds``
interleaved rounds (the machine is a shared VM whose speed drifts: a slow spell
hits every variant of the round alike) and each keeps its best sample (the
median is in the JSON too); 100 ms pause around onnxruntime's samples (OpenMP
threads spin after a parallel region).  The table gives GFLOP/s (2 x
multiply-adds / best time) and the ratios of the best NCHWc variant to ``nchw``
and to ``ort``.  onnxruntime is
optional (``pip install onnx onnxruntime``).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import tecc  # noqa: E402
from tecc import te, topi  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topi_cpu import onnxruntime_available, time_callable  # noqa: E402  (the same timing and check)

# ---------------------------------------------------------------------------------------
# the layers: name -> (in_channels, size, out_channels, kernel, stride, pad)
# ---------------------------------------------------------------------------------------
LAYERS = {
    # ResNet-50 (v1.5: the stride of a stage's first block in its 3x3)
    "r50 conv1 224 3->64 7x7/2": (3, 224, 64, 7, 2, 3),
    "r50 56 64->64 1x1": (64, 56, 64, 1, 1, 0),
    "r50 56 64->64 3x3": (64, 56, 64, 3, 1, 1),
    "r50 56 64->256 1x1": (64, 56, 256, 1, 1, 0),
    "r50 56 256->64 1x1": (256, 56, 64, 1, 1, 0),
    "r50 56 256->128 1x1": (256, 56, 128, 1, 1, 0),
    "r50 56->28 128->128 3x3/2": (128, 56, 128, 3, 2, 1),
    "r50 28 128->128 3x3": (128, 28, 128, 3, 1, 1),
    "r50 28 128->512 1x1": (128, 28, 512, 1, 1, 0),
    "r50 28 512->128 1x1": (512, 28, 128, 1, 1, 0),
    "r50 14 256->256 3x3": (256, 14, 256, 3, 1, 1),
    "r50 14 256->1024 1x1": (256, 14, 1024, 1, 1, 0),
    "r50 14 1024->256 1x1": (1024, 14, 256, 1, 1, 0),
    "r50 7 512->512 3x3": (512, 7, 512, 3, 1, 1),
    "r50 7 512->2048 1x1": (512, 7, 2048, 1, 1, 0),
    "r50 7 2048->512 1x1": (2048, 7, 512, 1, 1, 0),
    # SqueezeNet 1.1: conv1, then the fire modules' squeeze 1x1, expand 1x1 and expand 3x3
    "sq conv1 224 3->64 3x3/2": (3, 224, 64, 3, 2, 0),
    "sq 55 64->16 1x1 (squeeze)": (64, 55, 16, 1, 1, 0),
    "sq 55 128->16 1x1 (squeeze)": (128, 55, 16, 1, 1, 0),
    "sq 55 16->64 1x1 (expand)": (16, 55, 64, 1, 1, 0),
    "sq 55 16->64 3x3 (expand)": (16, 55, 64, 3, 1, 1),
    "sq 27 128->32 1x1 (squeeze)": (128, 27, 32, 1, 1, 0),
    "sq 27 256->32 1x1 (squeeze)": (256, 27, 32, 1, 1, 0),
    "sq 27 32->128 1x1 (expand)": (32, 27, 128, 1, 1, 0),
    "sq 27 32->128 3x3 (expand)": (32, 27, 128, 3, 1, 1),
    "sq 13 256->48 1x1 (squeeze)": (256, 13, 48, 1, 1, 0),
    "sq 13 384->64 1x1 (squeeze)": (384, 13, 64, 1, 1, 0),
    "sq 13 48->192 1x1 (expand)": (48, 13, 192, 1, 1, 0),
    "sq 13 48->192 3x3 (expand)": (48, 13, 192, 3, 1, 1),
    "sq 13 64->256 1x1 (expand)": (64, 13, 256, 1, 1, 0),
    "sq 13 64->256 3x3 (expand)": (64, 13, 256, 3, 1, 1),
}
QUICK = {  # small versions, for --quick (a smoke run of the whole script)
    "quick 14 16->32 3x3": (16, 14, 32, 3, 1, 1),
    "quick 13 3->16 3x3/2": (3, 13, 16, 3, 2, 0),
}
VARIANTS = ("nchw", "nchwc8", "nchwc16")
PAUSE_S = 0.1


def _flop(c, size, k, r, stride, pad):
    out = (size + 2 * pad - r) // stride + 1
    return 2 * c * k * r * r * out * out


def _in_block(c, oc_bn):
    """The block the producer of ``c`` channels hands over: ``oc_bn``, or all the
    channels of a 3-channel image."""
    return oc_bn if c % oc_bn == 0 else c


def build_variant(variant, layer, target):
    """``(tensors, out, to_input, from_output)`` of one variant: the tecc tensors, and
    functions laying NCHW / OIHW arrays out for it and its output back to NCHW."""
    c, size, k, r, stride, pad = layer
    if variant == "nchw":
        data = te.placeholder((1, c, size, size), name="data")
        kernel = te.placeholder((k, c, r, r), name="kernel")
        with tecc.target.Target(target):
            out = topi.x86.conv2d_nchw(data, kernel, stride, pad, 1, "float32")
            s = topi.x86.schedule_conv2d_nchw([out])
        return s, [data, kernel, out], (lambda x, w: (x, w)), (lambda y: y)
    oc_bn = int(variant[len("nchwc"):])
    ic_bn = _in_block(c, oc_bn)
    if k % oc_bn:
        return None
    data = te.placeholder((1, c // ic_bn, size, size, ic_bn), name="data")
    kernel = te.placeholder((k // oc_bn, c // ic_bn, r, r, ic_bn, oc_bn), name="kernel")
    with tecc.target.Target(target):
        out = topi.x86.conv2d_NCHWc(data, kernel, stride, pad, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c", "float32")
        s = topi.x86.schedule_conv2d_NCHWc([out])
    lt = topi.testing.layout_transform_python

    def to_input(x, w):
        return (np.ascontiguousarray(lt(x, "NCHW", f"NCHW{ic_bn}c")),
                np.ascontiguousarray(lt(w, "OIHW", f"OIHW{ic_bn}i{oc_bn}o")))

    return s, [data, kernel, out], to_input, (lambda y: lt(y, f"NCHW{oc_bn}c", "NCHW"))


def _ort_session(layer, x, w, ref_shape):
    import onnxruntime as ort  # noqa: PLC0415
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    c, size, k, r, stride, pad = layer
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride] * 2, pads=[pad] * 4, kernel_shape=[r, r])
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(ref_shape))],
                              initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def run_layer(name, layer, target, rounds, rng, ort_missing, min_ms):
    c, size, k, r, stride, pad = layer
    row = {"layer": name, "shape": dict(zip(("c", "size", "k", "kernel", "stride", "pad"), layer)),
           "gflop": _flop(*layer) / 1e9}
    x = rng.standard_normal((1, c, size, size)).astype("float32")
    w = rng.standard_normal((k, c, r, r)).astype("float32")
    ref = topi.testing.conv2d_nchw_python(x, w, stride, pad)
    dev = tecc.cpu(0)
    timers = {}  # variant -> a callable returning one sample's seconds
    for variant in VARIANTS:
        try:
            t0 = time.perf_counter()
            built = build_variant(variant, layer, target)
            if built is None:
                row[variant] = None
                continue
            s, tensors, to_input, from_output = built
            f = tecc.build(s, tensors, target)
            row[f"{variant}_build_s"] = round(time.perf_counter() - t0, 2)
            args = [tecc.nd.array(a, dev) for a in to_input(x, w)]
            res = tecc.nd.array(np.full([int(d) for d in tensors[-1].shape], np.nan, "float32"), dev)
            f(*args, res)
            got = from_output(res.numpy())
            err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
            if not err <= 1e-4:
                row[f"{variant}_error"] = f"FAILED: relative error {err:.3g} against the numpy reference"
                continue
            ev = f.time_evaluator(f.entry_name, dev, number=1, repeat=1, min_repeat_ms=min_ms)
            timers[variant] = (lambda ev=ev, args=args, res=res: ev(*args, res).mean)
        except Exception as e:  # noqa: BLE001 -- reported in the table, the run goes on
            row[f"{variant}_error"] = f"FAILED: {type(e).__name__}: {e}"
    if ort_missing is None:
        sess = _ort_session(layer, x, w, ref.shape)
        got = sess.run(None, {"x": x})[0]
        ort_err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
        if not ort_err <= 1e-4:
            row["ort_error"] = f"onnxruntime disagrees with the reference ({ort_err:.3g})"
        timers["ort"] = lambda: time_callable(lambda: sess.run(None, {"x": x}), 1, min_ms) / 1e3
    # interleaved rounds: a slow spell of the machine (a shared VM) hits every variant alike;
    # the best sample of each is its figure, the median is kept too
    samples = {v: [] for v in timers}
    for _ in range(rounds):
        for v, timer in timers.items():
            if v == "ort":
                time.sleep(PAUSE_S)  # tecc's OpenMP threads spin a while after a parallel region
            samples[v].append(timer())
            if v == "ort":
                time.sleep(PAUSE_S)
    for v, times in samples.items():
        row[f"{v}_ms"] = min(times) * 1e3
        row[f"{v}_median_ms"] = float(np.median(times)) * 1e3
        row[v] = row["gflop"] / min(times)
    return row


def _fmt(v):
    return f"{v:7.1f}" if isinstance(v, float) else f"{'-':>7}"


def _print_row(row):
    best = max([row.get(v) for v in ("nchwc8", "nchwc16") if isinstance(row.get(v), float)], default=None)
    ratios = ""
    if best is not None and isinstance(row.get("nchw"), float):
        ratios += f" | {best / row['nchw']:5.2f}x nchw"
    if best is not None and isinstance(row.get("ort"), float):
        ratios += f" | {best / row['ort']:5.2f}x ort"
    errors = "; ".join(str(row[key]) for key in row if key.endswith("_error"))
    print(f"| {row['layer']:<30} | " + " | ".join(_fmt(row.get(v)) for v in VARIANTS + ("ort",)) + ratios
          + (f" | {errors}" if errors else ""), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="llvm -mcpu=native")
    ap.add_argument("--layers", default="", help="comma-separated substrings of the layer names; default all")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds; the best is kept")
    ap.add_argument("--quick", action="store_true", help="small shapes: a smoke run of the whole script")
    ap.add_argument("--min-ms", type=float, default=20.0,
                    help="shortest timed sample in ms (more calls per sample until it lasts this long)")
    ap.add_argument("--out", default="", help="write the rows and machine facts as JSON here")
    args = ap.parse_args(argv)
    logging.getLogger("tecc.autotvm").setLevel(logging.ERROR)  # "no tuned config": untuned by design
    layers = QUICK if args.quick else LAYERS
    wanted = [p for p in args.layers.split(",") if p]
    ort_missing = onnxruntime_available()
    rng = np.random.default_rng(0)
    print(f"GFLOP/s, 1 thread (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}), target {args.target}")
    print(f"| {'layer':<30} | " + " | ".join(f"{v:>7}" for v in VARIANTS + ("ort",)) + " | best NCHWc / nchw | / ort")
    rows = []
    for name, layer in layers.items():
        if wanted and not any(p in name for p in wanted):
            continue
        row = run_layer(name, layer, args.target, args.rounds, rng, ort_missing, args.min_ms)
        rows.append(row)
        _print_row(row)
    failed = any(key.endswith("_error") and key != "ort_error" for row in rows for key in row)
    print()
    for v in ("nchwc8", "nchwc16"):
        wins = [r for r in rows if isinstance(r.get(v), float) and isinstance(r.get("nchw"), float)]
        if wins:
            ratios = [r[v] / r["nchw"] for r in wins]
            print(f"{v}: faster than nchw on {sum(x > 1 for x in ratios)} of {len(ratios)} layers, "
                  f"geometric mean {float(np.exp(np.mean(np.log(ratios)))):.2f}x")
    both = [r for r in rows if isinstance(r.get("nchwc8"), float) and isinstance(r.get("nchwc16"), float)]
    if both:
        print(f"nchwc16 faster than nchwc8 on {sum(r['nchwc16'] > r['nchwc8'] for r in both)} of {len(both)} layers")
    if ort_missing is not None:
        print(f"onnxruntime not measured: {ort_missing} (pip install onnx onnxruntime)")
    if args.out:
        facts = {"date": time.strftime("%Y-%m-%d"), "machine": platform.machine(), "cpu_count": os.cpu_count(),
                 "python": sys.version.split()[0], "numpy": np.__version__, "target": args.target,
                 "processor": platform.processor(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                 "ort_intra_op_threads": 1}
        with open(args.out, "w") as fh:
            json.dump({"facts": facts, "rows": rows}, fh, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
