"""topi's default CPU schedules, untuned, side by side with onnxruntime and numpy.

    python benchmarks/topi_cpu.py [--target "llvm -mcpu=native"] [--out results.json]
                                  [--ops conv2d,dense,...] [--repeat 5] [--quick] [--min-ms 50]

Each operator is built from ``topi`` with the schedule ``topi.schedule`` picks for the
target (no tuning), checked against topi.testing's numpy reference, and timed with
the module's ``time_evaluator``.  In the same run and on the same inputs,
onnxruntime runs a one-node ONNX model of the same operator (all cores, graph
optimizations on) and numpy runs its closest formulation (conv2d through an im2col
matmul).  The table gives median milliseconds and the ratio t(reference) / t(tecc):
above 1 tecc is faster.

Targets (issue "operator library"): conv2d and dense at 0.6x onnxruntime or better;
softmax, layer_norm and pooling at 0.8x or better.  The summary lines say MET or
NOT MET for each.  onnxruntime is optional (``pip install onnx onnxruntime``); without
it the onnxruntime columns say so.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import tecc
from tecc import te, topi

# ---------------------------------------------------------------------------------------
# the workloads
# ---------------------------------------------------------------------------------------
#: name -> (operator family, parameters); the three conv2d layers are ResNet-50's
WORKLOADS = {
    "conv2d 56x56x64->64 3x3": ("conv2d", dict(n=1, c=64, h=56, w=56, k=64, r=3, stride=1, pad=1)),
    "conv2d 28x28x128->128 3x3": ("conv2d", dict(n=1, c=128, h=28, w=28, k=128, r=3, stride=1, pad=1)),
    "conv2d 14x14x256->1024 1x1": ("conv2d", dict(n=1, c=256, h=14, w=14, k=1024, r=1, stride=1, pad=0)),
    "dense 32x768->3072": ("dense", dict(m=32, k=768, n=3072)),
    "batch_matmul 12x128x64x128": ("batch_matmul", dict(b=12, m=128, k=64, n=128)),
    "softmax 128x4096": ("softmax", dict(rows=128, cols=4096)),
    "layer_norm 512x768": ("layer_norm", dict(rows=512, cols=768)),
    "max_pool 64x112x112 3x3/2": ("max_pool", dict(n=1, c=64, h=112, w=112, r=3, stride=2, pad=1)),
}
QUICK = {  # small versions, for --quick (a smoke run of the whole script)
    "conv2d 56x56x64->64 3x3": ("conv2d", dict(n=1, c=8, h=14, w=14, k=8, r=3, stride=1, pad=1)),
    "dense 32x768->3072": ("dense", dict(m=4, k=32, n=48)),
    "batch_matmul 12x128x64x128": ("batch_matmul", dict(b=2, m=16, k=8, n=16)),
    "softmax 128x4096": ("softmax", dict(rows=4, cols=256)),
    "layer_norm 512x768": ("layer_norm", dict(rows=8, cols=96)),
    "max_pool 64x112x112 3x3/2": ("max_pool", dict(n=1, c=4, h=16, w=16, r=3, stride=2, pad=1)),
}
#: family -> minimum t(onnxruntime) / t(tecc)
TARGETS = {"conv2d": 0.6, "dense": 0.6, "softmax": 0.8, "layer_norm": 0.8, "max_pool": 0.8}


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


def make(family, p, rng):
    """``(tensors, outputs, inputs, reference output, numpy callable, onnx builder)``."""
    if family == "conv2d":
        data = te.placeholder((p["n"], p["c"], p["h"], p["w"]), name="data")
        kernel = te.placeholder((p["k"], p["c"], p["r"], p["r"]), name="kernel")
        out = topi.nn.conv2d_nchw(data, kernel, p["stride"], p["pad"], 1, out_dtype="float32")
        x, wt = _rand(rng, *data.shape), _rand(rng, *kernel.shape)
        ref = topi.testing.conv2d_nchw_python(x, wt, p["stride"], p["pad"])
        return [data, kernel], out, [x, wt], ref, lambda: _conv_im2col(x, wt, p), _onnx_conv(p)
    if family == "dense":
        x, wt = _rand(rng, p["m"], p["k"]), _rand(rng, p["n"], p["k"])
        X, W = te.placeholder(x.shape, name="X"), te.placeholder(wt.shape, name="W")
        out = topi.nn.dense(X, W)
        return [X, W], out, [x, wt], x @ wt.T, lambda: x @ wt.T, _onnx_gemm(p)
    if family == "batch_matmul":
        a, b = _rand(rng, p["b"], p["m"], p["k"]), _rand(rng, p["b"], p["n"], p["k"])
        A, B = te.placeholder(a.shape, name="A"), te.placeholder(b.shape, name="B")
        out = topi.nn.batch_matmul(A, B)  # TVM's default: B transposed
        ref = np.matmul(a, b.transpose(0, 2, 1))
        return [A, B], out, [a, b], ref, lambda: np.matmul(a, b.transpose(0, 2, 1)), _onnx_bmm(p)
    if family == "softmax":
        x = _rand(rng, p["rows"], p["cols"])
        X = te.placeholder(x.shape, name="X")
        out = topi.nn.softmax(X, axis=-1)
        ref = topi.testing.softmax_python(x)
        return [X], out, [x], ref, lambda: _np_softmax(x), _onnx_unary("Softmax", p, axis=-1)
    if family == "layer_norm":
        x, g, b = _rand(rng, p["rows"], p["cols"]), _rand(rng, p["cols"]), _rand(rng, p["cols"])
        X, G, B = (te.placeholder(a.shape, name=nm) for a, nm in ((x, "X"), (g, "gamma"), (b, "beta")))
        out = topi.nn.layer_norm(X, G, B, axis=[-1], epsilon=1e-5)
        ref = _np_layer_norm(x, g, b)
        return [X, G, B], out, [x, g, b], ref, lambda: _np_layer_norm(x, g, b), _onnx_layer_norm(p)
    if family == "max_pool":
        x = _rand(rng, p["n"], p["c"], p["h"], p["w"])
        X = te.placeholder(x.shape, name="X")
        r, st, pd = p["r"], p["stride"], p["pad"]
        out = topi.nn.pool2d(X, (r, r), (st, st), (1, 1), (pd, pd, pd, pd), "max", layout="NCHW")
        ref = _np_max_pool(x, p)
        return [X], out, [x], ref, lambda: _np_max_pool(x, p), _onnx_max_pool(p)
    raise ValueError(family)


# ---------------------------------------------------------------------------------------
# numpy formulations
# ---------------------------------------------------------------------------------------
def _conv_im2col(x, w, p):
    n, c, h, wd = x.shape
    k, _, r, _ = w.shape
    st, pd = p["stride"], p["pad"]
    xp = np.pad(x, ((0, 0), (0, 0), (pd, pd), (pd, pd)))
    oh, ow = (h + 2 * pd - r) // st + 1, (wd + 2 * pd - r) // st + 1
    cols = np.lib.stride_tricks.sliding_window_view(xp, (r, r), axis=(2, 3))[:, :, ::st, ::st]
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * r * r)
    out = cols @ w.reshape(k, -1).T
    return out.reshape(n, oh, ow, k).transpose(0, 3, 1, 2)


def _np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _np_max_pool(x, p):
    r, st, pd = p["r"], p["stride"], p["pad"]
    xp = np.pad(x, ((0, 0), (0, 0), (pd, pd), (pd, pd)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(xp, (r, r), axis=(2, 3))[:, :, ::st, ::st]
    return win.max(axis=(-1, -2))


# ---------------------------------------------------------------------------------------
# one-node ONNX models
# ---------------------------------------------------------------------------------------
def _model(node, inputs, output, initializers=()):
    from onnx import TensorProto, helper  # noqa: PLC0415

    graph = helper.make_graph(
        [node], "op",
        [helper.make_tensor_value_info(nm, TensorProto.FLOAT, list(shape)) for nm, shape in inputs],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, list(output[1]))],
        initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _onnx_conv(p):
    def build(shapes, out_shape):
        from onnx import helper  # noqa: PLC0415

        node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[p["stride"]] * 2, pads=[p["pad"]] * 4)
        return _model(node, [("x", shapes[0]), ("w", shapes[1])], ("y", out_shape)), ["x", "w"]
    return build


def _onnx_gemm(p):
    def build(shapes, out_shape):
        from onnx import helper  # noqa: PLC0415

        node = helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)
        return _model(node, [("x", shapes[0]), ("w", shapes[1])], ("y", out_shape)), ["x", "w"]
    return build


def _onnx_bmm(p):
    def build(shapes, out_shape):
        from onnx import helper  # noqa: PLC0415

        # B arrives (b, n, k): transpose inside the graph, as a model exported from torch does
        nodes = [helper.make_node("Transpose", ["b"], ["bt"], perm=[0, 2, 1]),
                 helper.make_node("MatMul", ["a", "bt"], ["y"])]
        from onnx import TensorProto  # noqa: PLC0415
        graph = helper.make_graph(
            nodes, "op",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(shapes[0])),
             helper.make_tensor_value_info("b", TensorProto.FLOAT, list(shapes[1]))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), ["a", "b"]
    return build


def _onnx_unary(op, p, **attrs):
    def build(shapes, out_shape):
        from onnx import helper  # noqa: PLC0415

        node = helper.make_node(op, ["x"], ["y"], **attrs)
        return _model(node, [("x", shapes[0])], ("y", out_shape)), ["x"]
    return build


def _onnx_layer_norm(p):
    def build(shapes, out_shape):
        from onnx import helper  # noqa: PLC0415

        node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)
        return _model(node, [("x", shapes[0]), ("g", shapes[1]), ("b", shapes[2])], ("y", out_shape)), \
            ["x", "g", "b"]
    return build


def _onnx_max_pool(p):
    def build(shapes, out_shape):
        from onnx import helper  # noqa: PLC0415

        node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[p["r"]] * 2, strides=[p["stride"]] * 2,
                                pads=[p["pad"]] * 4)
        return _model(node, [("x", shapes[0])], ("y", out_shape)), ["x"]
    return build


# ---------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------
def time_callable(fn, repeat, min_ms=50.0):
    """Median milliseconds of ``fn()`` over ``repeat`` samples, each sample as many
    calls as last ``min_ms``."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(min_ms / 1e3 / once))
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return float(np.median(samples)) * 1e3


def onnxruntime_available():
    try:
        import onnx  # noqa: F401,PLC0415
        import onnxruntime  # noqa: F401,PLC0415
    except ImportError as e:
        return str(e)
    return None


def run_one(name, family, p, target, repeat, rng, ort_missing, min_ms=50.0):
    row = {"workload": name, "family": family}
    tensors, out, arrays, ref, np_fn, onnx_build = make(family, p, rng)
    t0 = time.perf_counter()
    with tecc.target.Target(target):
        s = topi.schedule([out], target)
    f = tecc.build(s, tensors + [out], target)
    row["build_s"] = round(time.perf_counter() - t0, 2)
    dev = tecc.cpu(0)
    args = [tecc.nd.array(a, dev) for a in arrays]
    res = tecc.nd.array(np.full([int(d) for d in out.shape], np.nan, "float32"), dev)
    f(*args, res)
    err = float(np.linalg.norm(res.numpy() - ref) / max(np.linalg.norm(ref), 1e-30))
    row["rel_err"] = err
    if not err <= 1e-4:
        row["error"] = f"FAILED: relative error {err:.3g} against the numpy reference"
        return row
    ev = f.time_evaluator(f.entry_name, dev, number=1, repeat=1, min_repeat_ms=min_ms)
    row["tecc_ms"] = float(np.median([ev(*args, res).mean * 1e3 for _ in range(repeat)]))
    row["numpy_ms"] = time_callable(np_fn, repeat, min_ms)
    if ort_missing is None:
        import onnxruntime as ort  # noqa: PLC0415

        model, names = onnx_build([a.shape for a in arrays], ref.shape)
        opts = ort.SessionOptions()
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        feed = dict(zip(names, arrays))
        got = sess.run(None, feed)[0]
        ort_err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
        if not ort_err <= 1e-4:
            row["ort_error"] = f"onnxruntime disagrees with the reference ({ort_err:.3g})"
        row["ort_ms"] = time_callable(lambda: sess.run(None, feed), repeat, min_ms)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="llvm -mcpu=native")
    ap.add_argument("--ops", default="", help="comma-separated families (conv2d,dense,batch_matmul,softmax,"
                                              "layer_norm,max_pool); default all")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small shapes: a smoke run of the script")
    ap.add_argument("--min-ms", type=float, default=50.0,
                    help="shortest timed sample in ms (more calls per sample until it lasts this long)")
    ap.add_argument("--out", default="", help="write the rows and machine facts as JSON here")
    args = ap.parse_args(argv)
    workloads = QUICK if args.quick else WORKLOADS
    families = set(args.ops.split(",")) if args.ops else None
    ort_missing = onnxruntime_available()
    rng = np.random.default_rng(0)
    rows = []
    for name, (family, p) in workloads.items():
        if families and family not in families:
            continue
        try:
            row = run_one(name, family, p, args.target, args.repeat, rng, ort_missing, args.min_ms)
        except Exception as e:  # noqa: BLE001 -- reported in the table, the run goes on
            row = {"workload": name, "family": family, "error": f"FAILED: {type(e).__name__}: {e}"}
        rows.append(row)
        _print_row(row, ort_missing)
    print()
    failed = False
    for row in rows:
        if "error" in row:
            failed = True
            print(f"{row['workload']}: {row['error']}")
            continue
        goal = TARGETS.get(row["family"])
        if goal is None or "ort_ms" not in row:
            continue
        ratio = row["ort_ms"] / row["tecc_ms"]
        print(f"target: {row['workload']}: {ratio:.2f}x onnxruntime (goal >= {goal}x) "
              f"{'MET' if ratio >= goal else 'NOT MET'}")
    if ort_missing is not None:
        print(f"onnxruntime not measured: {ort_missing} (pip install onnx onnxruntime)")
    if args.out:
        facts = {"date": time.strftime("%Y-%m-%d"), "machine": platform.machine(), "cpu_count": os.cpu_count(),
                 "python": sys.version.split()[0], "numpy": np.__version__, "target": args.target,
                 "processor": platform.processor()}
        with open(args.out, "w") as fh:
            json.dump({"facts": facts, "rows": rows}, fh, indent=1)
    return 1 if failed else 0


def _print_row(row, ort_missing):
    if "error" in row:
        print(f"| {row['workload']:<30} | {row['error']}")
        return
    ort = f"{row['ort_ms']:9.3f} | {row['ort_ms'] / row['tecc_ms']:5.2f}x" if "ort_ms" in row else "      n/a |   n/a"
    print(f"| {row['workload']:<30} | tecc {row['tecc_ms']:9.3f} ms | onnxruntime {ort} "
          f"| numpy {row['numpy_ms']:9.3f} | {row['numpy_ms'] / row['tecc_ms']:5.2f}x | build {row['build_s']} s")


if __name__ == "__main__":
    sys.exit(main())
