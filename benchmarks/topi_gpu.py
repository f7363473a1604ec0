"""topi's default CUDA schedules, untuned, against cuDNN/cuBLAS (torch) and CuPy.

    python benchmarks/topi_gpu.py [--ops conv2d,dense,...] [--out DIR]
    python benchmarks/topi_gpu.py --dry-run           # no GPU: build + check only

The GPU counterpart of ``topi_cpu.py``, on the same workloads (its ``WORKLOADS``,
plus the first ResNet-50 layer at batch 8).  For each one, on the same random inputs
in the same run:

- tecc: the ``topi`` compute and the schedule ``topi.schedule([out], "cuda")`` picks
  inside ``with tecc.target.Target("cuda")``, untuned (the templates' fallback
  configs);
- torch, when it imports: ``torch.nn.functional.conv2d`` (cuDNN),
  ``torch.matmul`` (cuBLAS), ``torch.softmax``, ``torch.nn.functional.layer_norm``
  and ``max_pool2d``, TF32 off, ``cudnn.benchmark`` on (cuDNN picks its fastest
  algorithm per shape during the warm-up);
- CuPy: ``cupy.matmul`` (cuBLAS) for dense and batch_matmul, an im2col (strided
  slices) followed by ``cupy.matmul`` for conv2d, and array operations for softmax,
  layer_norm and max_pool (several kernels each).

Every variant is checked first against a float64 computation on the GPU
(``||out - ref|| / ||ref||``, tecc outputs and preallocated reference outputs
poisoned with NaN beforehand), then timed with CUDA events (tecc's
``time_evaluator``; the same warm-up/number/repeat for the references) and, for tecc
and CuPy, by replaying a CUDA graph (no host launch cost).  Reported: median ms,
GFLOP/s and the share of the FP32 peak (conv2d, dense, batch_matmul), GB/s and the
share of the theoretical memory bandwidth (softmax, layer_norm, max_pool), and per
workload the ratios t(reference) / t(tecc): above 1 tecc is faster.  The issue sets
no GPU targets for these operators: the figures are reported, not judged.  The exit
code is 1 when a correctness check (or a build) failed.

``--dry-run`` needs no GPU: it builds every operator for ``cuda -arch=sm_90`` at
cut-down sizes (``--full``: the benchmark's sizes), runs them on tecc's CPU emulation
of CUDA semantics, checks them (and the CuPy formulations, run with numpy) against
float64 numpy and prints the tables without timings.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
import zlib

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import _gpu_common as G  # noqa: E402  (the helper beside this script)
import topi_cpu  # noqa: E402  (the CPU benchmark: its workloads)

import tecc  # noqa: E402
from tecc import te, topi  # noqa: E402
from tecc.topi import schedule_registry  # noqa: E402

FAMILIES = ("conv2d", "dense", "batch_matmul", "softmax", "layer_norm", "max_pool")
#: families measured in FLOP/s against the FP32 peak; the others in bytes/s
COMPUTE_FAMILIES = ("conv2d", "dense", "batch_matmul")
EPS = 1e-5
#: relative error a float32 result passes with (float32 lands near 1e-6)
TOLERANCE = 1e-4
#: the first ResNet-50 layer, also run at this batch size
BATCHED = ("conv2d 56x56x64->64 3x3", 8)


def _workloads() -> dict:
    """topi_cpu's workloads in its order, the batched conv2d after its batch-1 layer."""
    out = {}
    for name, (family, p) in topi_cpu.WORKLOADS.items():
        out[name] = (family, dict(p))
        if name == BATCHED[0]:
            out[f"{name} batch {BATCHED[1]}"] = (family, dict(p, n=BATCHED[1]))
    return out


WORKLOADS = _workloads()
#: the same workloads at the sizes of the dry run (the CPU emulation), same names
DRY_RUN = {
    "conv2d 56x56x64->64 3x3": ("conv2d", dict(n=1, c=8, h=14, w=14, k=8, r=3, stride=1, pad=1)),
    "conv2d 56x56x64->64 3x3 batch 8": ("conv2d", dict(n=2, c=8, h=14, w=14, k=8, r=3, stride=1, pad=1)),
    "conv2d 28x28x128->128 3x3": ("conv2d", dict(n=1, c=16, h=7, w=7, k=16, r=3, stride=1, pad=1)),
    "conv2d 14x14x256->1024 1x1": ("conv2d", dict(n=1, c=32, h=7, w=7, k=64, r=1, stride=1, pad=0)),
    "dense 32x768->3072": ("dense", dict(m=8, k=64, n=96)),
    "batch_matmul 12x128x64x128": ("batch_matmul", dict(b=2, m=16, k=8, n=16)),
    "softmax 128x4096": ("softmax", dict(rows=4, cols=256)),
    "layer_norm 512x768": ("layer_norm", dict(rows=8, cols=96)),
    "max_pool 64x112x112 3x3/2": ("max_pool", dict(n=1, c=4, h=16, w=16, r=3, stride=2, pad=1)),
}

COLUMNS = ["workload", "variant", "grid / block", "regs", "rel err", "ok", "ms", "ms graph", "GFLOP/s", "GB/s",
           "% peak", "% peak graph"]
RATIO_COLUMNS = ["workload", "tecc ms", "torch ms", "x torch", "cupy ms", "x cupy", "tecc ms graph",
                 "cupy ms graph", "x cupy graph"]


# ---------------------------------------------------------------------------------------
# hardware peaks (from the device facts)
# ---------------------------------------------------------------------------------------
from tecc.driver.devicefacts import FP32_LANES_PER_SM, gpu_peaks as peaks  # noqa: E402,F401
from tecc.driver.opbench import conv2d_im2col, layer_norm_ref, softmax_ref, windows  # noqa: E402,F401


# ---------------------------------------------------------------------------------------
# reference formulations with array operations (cupy on a GPU, numpy in a dry run)
# ---------------------------------------------------------------------------------------
def out_hw(p):
    """Output height and width of a conv2d / pooling workload."""
    oh = (p["h"] + 2 * p["pad"] - p["r"]) // p["stride"] + 1
    ow = (p["w"] + 2 * p["pad"] - p["r"]) // p["stride"] + 1
    return oh, ow


def max_pool_ref(xp, x, p):
    """2-D max pooling as the elementwise maximum of the ``r*r`` strided windows."""
    out = None
    for view in windows(xp, x, p["r"], p["stride"], p["pad"], -np.inf):
        out = view.copy() if out is None else xp.maximum(out, view)
    return out


# ---------------------------------------------------------------------------------------
# the workloads: tecc compute, inputs, float64 reference, references
# ---------------------------------------------------------------------------------------
class Case:
    """One workload: the te tensors, inputs on the device, the float64 reference, the
    FLOP and byte counts, the CuPy formulation and the torch call."""

    def __init__(self, family, p, bench, seed):
        self.family, self.p = family, p
        xp = bench.xp
        rnd = bench.random
        self.flops = None
        if family == "conv2d":
            oh, ow = out_hw(p)
            x, w = rnd((p["n"], p["c"], p["h"], p["w"]), seed), rnd((p["k"], p["c"], p["r"], p["r"]), seed + 1)
            self.inputs = (x, w)
            self.out_shape = (p["n"], p["k"], oh, ow)
            self.flops = 2.0 * p["n"] * p["k"] * oh * ow * p["c"] * p["r"] ** 2
            self.ref = conv2d_im2col(xp, x.astype(xp.float64), w.astype(xp.float64), p["stride"], p["pad"])
            self.array_name = ("cupy im2col + cuBLAS", "numpy im2col + matmul")
            self.array_fn = lambda: conv2d_im2col(xp, x, w, p["stride"], p["pad"])
            self.torch_lib = "cuDNN"
        elif family == "dense":
            x, w = rnd((p["m"], p["k"]), seed), rnd((p["n"], p["k"]), seed + 1)
            self.inputs = (x, w)
            self.out_shape = (p["m"], p["n"])
            self.flops = 2.0 * p["m"] * p["n"] * p["k"]
            self.ref = x.astype(xp.float64) @ w.astype(xp.float64).T
            c = bench.poisoned(self.out_shape)
            self.array_name = ("cuBLAS (cupy.matmul)", "numpy.matmul")
            self.array_fn = lambda: xp.matmul(x, w.T, out=c)
            self.torch_lib = "cuBLAS"
        elif family == "batch_matmul":
            a, b = rnd((p["b"], p["m"], p["k"]), seed), rnd((p["b"], p["n"], p["k"]), seed + 1)
            self.inputs = (a, b)
            self.out_shape = (p["b"], p["m"], p["n"])
            self.flops = 2.0 * p["b"] * p["m"] * p["n"] * p["k"]
            self.ref = xp.matmul(a.astype(xp.float64), b.astype(xp.float64).transpose(0, 2, 1))
            c = bench.poisoned(self.out_shape)
            self.array_name = ("cuBLAS (cupy.matmul)", "numpy.matmul")
            self.array_fn = lambda: xp.matmul(a, b.transpose(0, 2, 1), out=c)
            self.torch_lib = "cuBLAS"
        elif family == "softmax":
            x = rnd((p["rows"], p["cols"]), seed)
            self.inputs = (x,)
            self.out_shape = x.shape
            self.ref = softmax_ref(xp, x.astype(xp.float64))
            self.array_name = ("cupy ops", "numpy ops")
            self.array_fn = lambda: softmax_ref(xp, x)
            self.torch_lib = None
        elif family == "layer_norm":
            x, g, b = rnd((p["rows"], p["cols"]), seed), rnd((p["cols"],), seed + 1), rnd((p["cols"],), seed + 2)
            self.inputs = (x, g, b)
            self.out_shape = x.shape
            self.ref = layer_norm_ref(xp, *(a.astype(xp.float64) for a in self.inputs))
            self.array_name = ("cupy ops", "numpy ops")
            self.array_fn = lambda: layer_norm_ref(xp, x, g, b)
            self.torch_lib = None
        elif family == "max_pool":
            x = rnd((p["n"], p["c"], p["h"], p["w"]), seed)
            self.inputs = (x,)
            self.out_shape = (p["n"], p["c"]) + out_hw(p)
            self.ref = max_pool_ref(xp, x.astype(xp.float64), p)
            self.array_name = tuple(f"{lib} ops ({p['r'] ** 2} strided maxima)" for lib in ("cupy", "numpy"))
            self.array_fn = lambda: max_pool_ref(xp, x, p)
            self.torch_lib = None
        else:
            raise ValueError(f"unknown family {family!r}")
        self.array_name = self.array_name[1] + " (dry run)" if bench.dry else self.array_name[0]
        self.bytes = sum(int(a.nbytes) for a in self.inputs) + 4 * int(np.prod(self.out_shape))

    def compute(self):
        """``(placeholders, output)``: the topi compute of this workload."""
        p = self.p
        phs = [te.placeholder(tuple(int(d) for d in a.shape), name=nm)
               for a, nm in zip(self.inputs, ("data", "weight", "bias"))]
        if self.family == "conv2d":
            out = topi.nn.conv2d_nchw(phs[0], phs[1], p["stride"], p["pad"], 1, out_dtype="float32")
        elif self.family == "dense":
            out = topi.nn.dense(phs[0], phs[1])
        elif self.family == "batch_matmul":
            out = topi.nn.batch_matmul(phs[0], phs[1])  # TVM's default: B transposed
        elif self.family == "softmax":
            out = topi.nn.softmax(phs[0], axis=-1)
        elif self.family == "layer_norm":
            out = topi.nn.layer_norm(phs[0], phs[1], phs[2], axis=[-1], epsilon=EPS)
        else:
            r, st, pd = p["r"], p["stride"], p["pad"]
            out = topi.nn.pool2d(phs[0], (r, r), (st, st), (1, 1), (pd, pd, pd, pd), "max", layout="NCHW")
        return phs, out

    def torch_fn(self, torch):
        """``fn(holder)`` storing torch's output in ``holder["out"]``."""
        F = torch.nn.functional
        p = self.p
        ts = [torch.from_dlpack(a) for a in self.inputs]
        calls = {
            "conv2d": lambda: F.conv2d(ts[0], ts[1], stride=p["stride"], padding=p["pad"]),
            "dense": lambda: torch.matmul(ts[0], ts[1].t()),
            "batch_matmul": lambda: torch.matmul(ts[0], ts[1].transpose(1, 2)),
            "softmax": lambda: torch.softmax(ts[0], dim=-1),
            "layer_norm": lambda: F.layer_norm(ts[0], (p["cols"],), ts[1], ts[2], EPS),
            "max_pool": lambda: F.max_pool2d(ts[0], p["r"], p["stride"], p["pad"]),
        }
        call = calls[self.family]

        def fn(holder):
            holder["out"] = call()
        return fn


def schedule_name(out, target) -> str:
    """The registered schedule function ``topi.schedule`` picks for ``out`` on
    ``target`` (module and name), for the record."""
    anchor = schedule_registry.find_anchor([out])
    fn = schedule_registry.lookup(anchor.tag if anchor is not None else "injective", target)
    return f"{fn.__module__.replace('tecc.topi.', 'topi.')}.{fn.__qualname__}" if fn else "?"


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------
class Bench(G.BenchBase):
    """One run: the shared set-up, torch where present, and the rows."""

    def __init__(self, opts):
        super().__init__(opts)
        self.torch, self.torch_settings = ((None, None) if self.dry or opts.no_torch
                                           else G.torch_fp32(not opts.no_cudnn_benchmark))
        self.rows = []
        self.peak = {"fp32_gflops": None, "memory_gbps": None}
        self.workloads = opts.workloads

    def run_workload(self, name):
        family, p = self.workloads[name]
        base = {"workload": name, "family": family, "params": p}
        try:  # inputs, the float64 reference, the reference formulations
            case = Case(family, p, self, zlib.crc32(name.encode()) % 1_000_000 * 10)
        except Exception as exc:  # noqa: BLE001 - nothing to compare against: a FAILED row, and on we go
            self.crashed(base, "setup", exc)
            return
        base.update(flops=case.flops, bytes=case.bytes)

        # tecc: topi's compute, the default CUDA schedule, no tuning
        try:
            phs, out = case.compute()
            with tecc.target.Target(self.target):
                s = topi.schedule([out], self.target)
                sched = schedule_name(out, self.target)
            mod = tecc.build(s, phs + [out], target=self.target, name="topi_" + family)
            res = self.poisoned(case.out_shape)
            args = tuple(case.inputs) + (res,)
            mod(*args)
            err = G.rel_error(res, case.ref)
            ev, gr, why = self.time_both(lambda: G.time_tecc(mod, args, self.timing), lambda: mod(*args))
        except Exception as exc:  # noqa: BLE001 - a build or run failure: a FAILED row, and on we go
            self.crashed(base, "tecc", exc)
        else:
            self.record(base, "tecc", "tecc (topi default schedule)", err, ev, gr, why,
                        schedule=sched, launch=G.launch_shape(mod), resources=G.kernel_resources(mod))

        # torch (cuDNN / cuBLAS / its own kernels); not captured into a graph
        if self.torch is not None:
            lib = f" ({case.torch_lib})" if case.torch_lib else ""
            variant = f"torch {self.torch.__version__}{lib}"
            try:
                torch_fn = case.torch_fn(self.torch)
                holder = {}
                torch_fn(holder)
                err = G.rel_error(self.xp.from_dlpack(holder["out"]), case.ref)
                timed = G.torch_on_cupy_stream(lambda: torch_fn(holder))
                ev, _, _ = self.time_both(lambda: G.time_callable(timed, self.timing), None)
            except Exception as exc:  # noqa: BLE001
                self.crashed(base, "torch", exc, variant)
            else:
                self.record(base, "torch", variant, err, ev, None, "not captured (torch)")

        # CuPy (numpy in a dry run)
        try:
            got = case.array_fn()
            err = G.rel_error(got, case.ref)
            ev, gr, why = self.time_both(lambda: G.time_callable(case.array_fn, self.timing), case.array_fn)
        except Exception as exc:  # noqa: BLE001
            self.crashed(base, "cupy", exc, case.array_name)
        else:
            self.record(base, "cupy", case.array_name, err, ev, gr, why)

    def crashed(self, base, kind, exc, variant=None):
        """A variant that raised: a FAILED row, a failure, and on we go."""
        msg = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        self.rows.append(dict(base, kind=kind, variant=variant or kind, skipped=msg))
        self.failures.append(f"{base['workload']} {variant or kind}: {msg}")
        traceback.print_exc()

    def record(self, base, kind, variant, err, ev, gr, why, **extra):
        ok = G.passes(err, self.opts.tol)
        if not ok:
            self.failures.append(f"{base['workload']} {variant}: relative error {err:.3e} > {self.opts.tol:g}")
        row = dict(base, kind=kind, variant=variant, rel_err=err, ok=ok, events=ev, graph=gr, graph_failure=why,
                   ms=ev.median_ms if ev else None, ms_graph=gr.median_ms if gr else None, **extra)
        compute = base["family"] in COMPUTE_FAMILIES
        peak = self.peak["fp32_gflops"] if compute else self.peak["memory_gbps"]
        for key, suffix in (("ms", ""), ("ms_graph", "_graph")):
            t = row[key]
            gflops = base["flops"] / t / 1e6 if t and base["flops"] else None
            gbps = base["bytes"] / t / 1e6 if t else None
            row["gflops" + suffix] = gflops
            row["gbps" + suffix] = gbps
            rate = gflops if compute else gbps
            row["peak_share" + suffix] = rate / peak if rate and peak else None
        self.rows.append(row)
        return row

    # report -----------------------------------------------------------------------------
    def _find(self, name, kind):
        for r in self.rows:
            if r["workload"] == name and r["kind"] == kind and "skipped" not in r:
                return r
        return None

    def ratios(self) -> list:
        """Per workload: t(reference) / t(tecc), events against events and graph
        replay against graph replay (None where either side is missing)."""
        out = []
        for name in self.workloads:
            tecc_row, torch_row, cupy_row = (self._find(name, k) for k in ("tecc", "torch", "cupy"))
            if tecc_row is None and torch_row is None and cupy_row is None:
                continue

            def get(row, key):
                return row.get(key) if row else None

            def ratio(ref, key):
                t_ref, t_tecc = get(ref, key), get(tecc_row, key)
                return t_ref / t_tecc if t_ref and t_tecc else None

            out.append({"workload": name, "tecc_ms": get(tecc_row, "ms"), "torch_ms": get(torch_row, "ms"),
                        "x_torch": ratio(torch_row, "ms"), "cupy_ms": get(cupy_row, "ms"),
                        "x_cupy": ratio(cupy_row, "ms"), "tecc_ms_graph": get(tecc_row, "ms_graph"),
                        "cupy_ms_graph": get(cupy_row, "ms_graph"), "x_cupy_graph": ratio(cupy_row, "ms_graph"),
                        "torch_variant": get(torch_row, "variant"), "cupy_variant": get(cupy_row, "variant")})
        return out

    def tables(self) -> str:
        cells = []
        for r in self.rows:
            if "skipped" in r:
                cells.append([r["workload"], r["variant"], r["skipped"]] + [""] * (len(COLUMNS) - 3))
                continue
            regs = G.resource_text(r.get("resources"))
            cells.append([r["workload"], r["variant"], G.fmt(r.get("launch")), G.fmt(regs),
                          G.fmt(r["rel_err"], ".1e"), "yes" if r["ok"] else "NO", G.fmt(r["ms"], ".4f"),
                          G.fmt(r["ms_graph"], ".4f"), G.fmt(r["gflops"], ".0f"), G.fmt(r["gbps"], ".0f"),
                          _pct(r["peak_share"]), _pct(r["peak_share_graph"])])
        pk = self.peak
        text = ("## Operators (float32; GFLOP/s and % of the FP32 peak for conv2d/dense/batch_matmul, "
                "GB/s (inputs read once + output written once) and % of the memory bandwidth for the others)\n\n"
                f"peaks: FP32 {G.fmt(pk['fp32_gflops'], '.0f')} GFLOP/s, memory {G.fmt(pk['memory_gbps'], '.0f')} GB/s "
                "(theoretical, from the device facts)\n\n" + G.render_table(COLUMNS, cells))
        cells = [[r["workload"], G.fmt(r["tecc_ms"], ".4f"), G.fmt(r["torch_ms"], ".4f"), _x(r["x_torch"]),
                  G.fmt(r["cupy_ms"], ".4f"), _x(r["x_cupy"]), G.fmt(r["tecc_ms_graph"], ".4f"),
                  G.fmt(r["cupy_ms_graph"], ".4f"), _x(r["x_cupy_graph"])] for r in self.ratios()]
        text += ("\n\n## t(reference) / t(tecc) per workload (> 1: tecc faster; events against events, "
                 "graph replay against graph replay)\n\n" + G.render_table(RATIO_COLUMNS, cells))
        return text

    def summary(self) -> list:
        lines = []
        for r in self.ratios():
            if r["tecc_ms"] is None:
                continue
            tecc_row = self._find(r["workload"], "tecc")
            share = tecc_row["peak_share"]
            what = "FP32 peak" if tecc_row["family"] in COMPUTE_FAMILIES else "memory bandwidth"
            refs = []
            if r["x_torch"] is not None:
                refs.append(f"{r['x_torch']:.2f}x {r['torch_variant']}")
            if r["x_cupy"] is not None:
                graph = f" (graph replay {_x(r['x_cupy_graph'])})" if r["x_cupy_graph"] is not None else ""
                refs.append(f"{r['x_cupy']:.2f}x {r['cupy_variant']}{graph}")
            lines.append(f"{r['workload']}: tecc {r['tecc_ms']:.4f} ms, {_pct(share)} of the {what}; "
                         f"t(ref)/t(tecc): {'; '.join(refs) or 'no reference timed'}")
        if lines:
            lines.append("no GPU targets for these operators: the ratios are reported, not judged")
        failed_graphs = {r["graph_failure"] for r in self.rows
                         if r.get("graph_failure") and "disabled" not in r["graph_failure"]
                         and "torch" not in r["graph_failure"]}
        for why in sorted(failed_graphs):
            lines.append(f"graph capture failed for some variants: {why}")
        return lines


def _pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def _x(v):
    return "-" if v is None else f"{v:.2f}x"


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="", help=f"comma-separated families ({','.join(FAMILIES)}); default all")
    ap.add_argument("--full", action="store_true", help="with --dry-run: the benchmark's sizes, not cut-down ones")
    G.add_common_args(ap, "topi", number=5, graph_calls=20, tol=TOLERANCE)
    ap.add_argument("--no-torch", action="store_true", help="skip the torch references")
    ap.add_argument("--no-cudnn-benchmark", action="store_true",
                    help="leave torch.backends.cudnn.benchmark off (cuDNN's heuristic algorithm choice)")
    return ap


def main(argv=None) -> int:
    """Run the benchmark; return 0, 1 when a variant failed its correctness check (or
    a build failed), 2 without a GPU unless ``--dry-run``."""
    opts = build_parser().parse_args(argv)
    families = [f for f in opts.ops.split(",") if f] if opts.ops else list(FAMILIES)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise SystemExit(f"--ops: unknown {', '.join(unknown)} (choose from {', '.join(FAMILIES)})")
    table = DRY_RUN if opts.dry_run and not opts.full else WORKLOADS
    opts.workloads = {name: (fam, p) for name, (fam, p) in table.items() if fam in families}
    bench = Bench(opts)
    if not opts.dry_run and G.has_gpu():
        bench.peak = peaks(G.device_facts(False, bench.target))
    return G.run_and_report(
        "topi_gpu", opts, bench, list(opts.workloads), bench.run_workload, lambda name: name,
        lambda summary: {"peaks": bench.peak, "torch_settings": bench.torch_settings,
                         "workloads": {n: {"family": f, "params": p} for n, (f, p) in opts.workloads.items()},
                         "rows": bench.rows, "ratios": bench.ratios()},
        stem="topi")


if __name__ == "__main__":
    sys.exit(main())
