"""Weight-only quantized products on a CUDA GPU: tecc with int4 and float8 weights
against cuBLAS with the same weights dequantized to float32 and to float16.

    python benchmarks/gpu_narrow.py [--sizes 4096x4096,4096x11008] [--batch 1,8] [--out DIR]
    python benchmarks/gpu_narrow.py --dry-run          # no GPU: build + check only

For each weight shape ``K x N`` and batch ``M``: ``y = x @ dequantize(W)``, ``x`` a
float32 ``M x K``, W in

- ``int4``, in blocks of 32 along K, each with its own float32 scale (the weight-only
  quantization of LLM exports: ONNX's DequantizeLinear with ``block_size``), and
- ``float8_e4m3fn`` with a scale per column (FP8 weights),

as an ONNX model (DequantizeLinear feeding a MatMul) built by tecc's model path for
the GPU: the weights stay a byte an element in the params and the product's kernel
dequantizes them as it reads them (one kernel).  The references, on the same inputs
in the same run: ``cupy.matmul`` (cuBLAS) with the dequantized weights in float32 (4
bytes an element) and in float16 (2, with ``x`` in float16).  At batch 1 such a product reads each weight once: its speed is the memory
bandwidth, so the table gives the weights' bytes over the time (GB/s) besides the
milliseconds, and t(reference) / t(tecc).

Each variant is checked against a float64 product of the dequantized weights
(``||y - ref|| / ||ref||`` within ``--tol``; float16 within 1e-2).  Timing: CUDA events
around ``number`` runs per sample (``_gpu_common``), and CUDA-graph replay.

No target is set yet: this is the first figure of these kernels (reported, not judged).

``--dry-run`` needs no GPU: it builds every variant for ``cuda -arch=sm_90`` at small
sizes, runs tecc's kernels on the CPU emulation of CUDA semantics and checks them
against numpy, and prints the table without timings.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import _gpu_common as G  # noqa: E402  (the helper beside this script)

import tecc  # noqa: E402
from tecc.runtime.graph_executor import calls_kernel  # noqa: E402

DEFAULT_SIZES = "4096x4096,4096x11008"
DRY_RUN_SIZES = "256x192"
DEFAULT_BATCH = "1,8"
BLOCK = 32
TOLERANCE = 1e-4
HALF_TOLERANCE = 1e-2
#: the weight formats measured: dtype -> how its scales go
FORMATS = {"int4": "blocked", "float8_e4m3fn": "per column"}

COLUMNS = ["K x N", "M", "weights", "variant", "weight MB", "rel err", "ok", "ms", "ms graph", "weight GB/s",
           "x cuBLAS fp32", "x cuBLAS fp16", "kernels"]


def quantized_weights(dtype: str, k: int, n: int, seed: int):
    """``(weights, scales, dequantized float32)``: random weights of ``dtype`` and their
    scales (int4: one per 32 rows of a column; float8: one per column)."""
    import ml_dtypes  # noqa: PLC0415 -- onnx's dependency: the model's initializers

    rng = np.random.default_rng(seed)
    if dtype == "int4":
        w = rng.integers(-8, 8, (k, n)).astype(ml_dtypes.int4)
        scale = rng.uniform(0.005, 0.02, (-(-k // BLOCK), n)).astype(np.float32)
        full = w.astype(np.float32) * np.repeat(scale, BLOCK, axis=0)[:k]
    else:
        w = (rng.standard_normal((k, n)) * 16).astype(getattr(ml_dtypes, dtype))
        scale = rng.uniform(0.001, 0.004, n).astype(np.float32)
        full = w.astype(np.float32) * scale
    return w, scale, full


def dequant_matmul_model(w, scale, m: int, blocked: bool):
    """The ONNX model ``y = x @ DequantizeLinear(w, scale)`` (opset 21)."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    k, n = w.shape
    attrs = {"axis": 0, "block_size": BLOCK} if blocked else {"axis": 1}
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], **attrs),
             helper.make_node("MatMul", ["x", "wf"], ["y"])]
    graph = helper.make_graph(nodes, "dequant_matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (m, k))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (m, n))],
                              initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


class Bench(G.BenchBase):
    """One run: the shared set-up and the rows."""

    def __init__(self, opts):
        super().__init__(opts)
        self.rows = []

    def build(self, model):
        from tecc.graph.build import build  # noqa: PLC0415
        from tecc.graph.frontend import from_onnx  # noqa: PLC0415

        mod, params = from_onnx(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "no tuned config": the schedules' fallback configs
            with tecc.transform.PassContext(opt_level=3):
                return build(mod, target=self.target, params=params)

    def run_size(self, size):
        k, n = size
        for dtype, scales in FORMATS.items():
            w, scale, full = quantized_weights(dtype, k, n, seed=k + n)
            for m in self.opts.batch:
                try:
                    self.run_case(k, n, m, dtype, scales, w, scale, full)
                except Exception as exc:  # noqa: BLE001 - report it, go on with the other cases
                    self.crashed((k, n, m, dtype), "tecc", exc)

    def run_case(self, k, n, m, dtype, scales, w, scale, full):
        from tecc.contrib.graph_executor import GraphModule  # noqa: PLC0415

        xp = self.xp
        x = self.random((m, k), k + m)
        x_host = x if self.dry else x.get()
        ref = x_host.astype(np.float64) @ full.astype(np.float64)
        label = f"{dtype} ({scales})"
        factory = self.build(dequant_matmul_model(w, scale, m, blocked=scales == "blocked"))
        graph = json.loads(factory.get_graph_json())
        kernels = sum(1 for node in graph["nodes"] if calls_kernel(node))
        param_bytes = sum(np.asarray(v).nbytes for v in factory.params.values())
        gmod = GraphModule(factory["default"](tecc.cuda(0)))
        gmod.set_input("x", x)
        gmod.run()
        got = gmod.get_output(0).numpy()
        err = G.rel_error(got, ref)
        ev, gr, why = self.time_both(lambda: G.time_callable(gmod.run, self.timing), gmod.run)
        base = {"K": k, "N": n, "M": m, "weights": label, "kernels": kernels}
        self.record(base, "tecc", param_bytes, err, ev, gr, why, self.opts.tol)
        # cuBLAS with the weights dequantized, in float32 and in float16
        for variant, wdtype, tol in (("cuBLAS fp32", "float32", self.opts.tol), ("cuBLAS fp16", "float16",
                                                                                 HALF_TOLERANCE)):
            wd = xp.asarray(full.astype(wdtype))
            xd = x.astype(wdtype)
            out = xp.matmul(xd, wd)
            err = G.rel_error(out.astype(xp.float32), ref)

            def fn(xd=xd, wd=wd, out=out):
                xp.matmul(xd, wd, out=out)
            ev, gr, why = self.time_both(lambda fn=fn: G.time_callable(fn, self.timing), fn)
            self.record(base, variant, wd.nbytes, err, ev, gr, why, tol)

    def crashed(self, case, variant, exc):
        k, n, m, dtype = case
        msg = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        self.rows.append({"K": k, "N": n, "M": m, "weights": dtype, "variant": variant, "skipped": msg})
        self.failures.append(f"{k}x{n} M={m} {dtype} {variant}: {msg}")
        traceback.print_exc()

    def record(self, base, variant, weight_bytes, err, ev, gr, why, tol):
        ok = G.passes(err, tol)
        if not ok:
            self.failures.append(f"{base['K']}x{base['N']} M={base['M']} {base['weights']} {variant}: relative "
                                 f"error {err:.3e}")
        row = dict(base, variant=variant, weight_bytes=int(weight_bytes), rel_err=err, ok=ok,
                   **G.timing_fields(ev, gr, why, None))
        best = min((t for t in (row.get("ms"), row.get("ms_graph")) if t), default=None)
        row["weight_gbps"] = weight_bytes / (best / 1e3) / 1e9 if best else None
        self.rows.append(row)
        return row

    def _ratio(self, row, variant):
        ref = next((r for r in self.rows if r.get("variant") == variant and r["K"] == row["K"] and r["N"] == row["N"]
                    and r["M"] == row["M"] and r["weights"] == row["weights"]), None)
        mine = min((t for t in (row.get("ms"), row.get("ms_graph")) if t), default=None)
        theirs = None if ref is None else min((t for t in (ref.get("ms"), ref.get("ms_graph")) if t), default=None)
        return theirs / mine if mine and theirs else None

    def tables(self) -> str:
        cells = []
        for r in self.rows:
            shape = f"{r['K']}x{r['N']}"
            if "skipped" in r:
                cells.append([shape, r["M"], r["weights"], r["variant"], "skipped: " + r["skipped"]] + [""] * 8)
                continue
            tecc_row = r["variant"] == "tecc"
            cells.append([shape, r["M"], r["weights"], r["variant"], G.fmt(r["weight_bytes"] / 1e6, ".2f"),
                          G.fmt(r["rel_err"], ".1e"), "yes" if r["ok"] else "NO", G.fmt(r.get("ms"), ".4f"),
                          G.fmt(r.get("ms_graph"), ".4f"), G.fmt(r["weight_gbps"], ".0f"),
                          G.fmt(self._ratio(r, "cuBLAS fp32"), ".2f") if tecc_row else "",
                          G.fmt(self._ratio(r, "cuBLAS fp16"), ".2f") if tecc_row else "",
                          r["kernels"] if tecc_row else ""])
        return "\n".join(["## y = x @ dequantize(W): narrow weights against cuBLAS on the dequantized ones", "",
                          G.render_table(COLUMNS, cells)])

    def summary(self) -> list:
        lines = []
        for r in self.rows:
            if r.get("variant") != "tecc" or "skipped" in r:
                continue
            fp32, fp16 = self._ratio(r, "cuBLAS fp32"), self._ratio(r, "cuBLAS fp16")
            lines.append(f"{r['K']}x{r['N']} M={r['M']} {r['weights']}: tecc {G.fmt(r.get('ms'), '.4f')} ms, "
                         f"{G.fmt(r['weight_gbps'], '.0f')} GB/s of weights, {G.fmt(fp32, '.2f')}x cuBLAS fp32, "
                         f"{G.fmt(fp16, '.2f')}x cuBLAS fp16 (reported; no target yet)")
        return lines


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", help=f"weight shapes K x N (default {DEFAULT_SIZES}; dry run {DRY_RUN_SIZES})")
    ap.add_argument("--batch", default=DEFAULT_BATCH, help=f"rows of x (default {DEFAULT_BATCH})")
    G.add_common_args(ap, "narrow", number=10, graph_calls=20, tol=TOLERANCE)
    return ap


def main(argv=None) -> int:
    """Run the benchmark; return 0, or 1 when a variant failed its correctness check."""
    opts = build_parser().parse_args(argv)
    opts.sizes = G.parse_pairs(opts.sizes or (DRY_RUN_SIZES if opts.dry_run else DEFAULT_SIZES), "--sizes", "KxN")
    opts.batch = G.parse_int_list(opts.batch)
    bench = Bench(opts)
    return G.run_and_report("gpu_narrow", opts, bench, opts.sizes, bench.run_size, lambda s: f"{s[0]}x{s[1]}",
                            lambda summary: {"rows": bench.rows, "block_size": BLOCK})


if __name__ == "__main__":
    sys.exit(main())
