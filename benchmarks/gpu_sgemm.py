"""float32 SGEMM on a CUDA GPU: tecc's hand-written schedule against cuBLAS.

    python benchmarks/gpu_sgemm.py [--sizes 1024,2048,4096,8192] [--out DIR]
    python benchmarks/gpu_sgemm.py --dry-run          # no GPU: build + check only

For each square size ``n`` (``C[n, n] = A[n, n] @ B[n, n]``), on the same random
inputs in the same run:

- cuBLAS through ``cupy.matmul`` (the reference speed);
- :func:`tecc.topi.cuda.sgemm` for every ``--configs`` entry
  ``BLOCKxTHREAD_TILExK_TILE`` (a config the schedule rejects for that size is listed
  with the reason); the best is reported against cuBLAS;
- fused ``relu(A @ B + bias)`` (:func:`~tecc.topi.cuda.matmul_bias_relu`,
  one kernel) against cuBLAS followed by one separate elementwise kernel
  (``max(c + bias, 0)``).

Every variant is checked first against a float64 product (``||out - ref|| / ||ref||``,
output poisoned with NaN beforehand), then timed with CUDA events (tecc's
``time_evaluator``; the same warm-up/number/repeat for the cupy references) and by
replaying a CUDA graph of ``--graph-calls`` calls (no host launch cost).  Reported:
median ms, TFLOPS (2 n^3 / time) and the ratio ``t_cuBLAS / t_variant``.

``--dry-run`` needs no GPU: it builds every config for ``cuda -arch=sm_90`` at small
sizes (default 128,256), runs them on tecc's CPU emulation of CUDA semantics, checks
them against numpy and prints the table without timings.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import _gpu_common as G  # noqa: E402  (the helper beside this script)

import tecc  # noqa: E402
from tecc.topi import cuda as K  # noqa: E402
from tecc.errors import ScheduleError, TeccError  # noqa: E402

DEFAULT_SIZES = "1024,2048,4096,8192"
DRY_RUN_SIZES = "128,256"
DEFAULT_CONFIGS = ("64x2x8,64x4x8,128x4x8,128x4x16,128x8x8,64x4x8+t+d,128x4x8+t,128x4x8+t+d,128x4x16+t+d,"
                   "128x4x8+t+d+r,128x4x16+t+d+r")
#: relative error a float32 product passes with (float32 lands far below; tf32 near 3e-4)
TOLERANCE = 1e-4
#: the figure the benchmark is held to: best tecc SGEMM / cuBLAS at this size
TARGET_SIZE, TARGET_RATIO = 4096, 0.70

COLUMNS = ["n", "variant", "config", "grid / block", "regs", "spill B", "rel err", "ok",
           "ms", "ms graph", "TFLOPS", "x cuBLAS", "x cuBLAS graph"]
FUSED_COLUMNS = ["n", "variant", "config", "rel err", "ok", "ms", "ms graph", "x unfused", "x unfused graph"]


def parse_configs(text: str) -> list:
    """``"64x4x8,128x4x8+t+d"`` -> ``[(64, 4, 8, ""), (128, 4, 8, "dt")]``.

    Flags after ``+``: ``t`` keeps A's shared tile k-major (transposed, float4 reads),
    ``d`` double-buffers the shared tiles, ``r`` (with ``d``) prefetches them through
    registers (``register_prefetch``).
    """
    out = []
    for item in text.split(","):
        head, *flags = item.strip().lower().split("+")
        parts = head.split("x")
        if len(parts) != 3 or not all(p.isdigit() for p in parts) or any(f not in ("t", "d", "r") for f in flags):
            raise SystemExit(f"--configs: {item!r} is not BLOCKxTHREAD_TILExK_TILE[+t][+d][+r] (e.g. 64x4x8+t)")
        if "r" in flags and "d" not in flags:
            raise SystemExit(f"--configs: {item!r}: +r prefetches a double buffer through registers; add +d")
        out.append(tuple(int(p) for p in parts) + ("".join(sorted(set(flags))),))
    return out


def config_name(cfg) -> str:
    name = "x".join(str(v) for v in cfg[:3])
    return name + "".join("+" + f for f in cfg[3]) if len(cfg) > 3 else name


def config_kwargs(cfg) -> dict:
    """Keyword arguments of ``topi.cuda.sgemm`` / ``matmul_bias_relu`` for a config."""
    block, tile, k_tile = cfg[:3]
    flags = cfg[3] if len(cfg) > 3 else ""
    return dict(block=block, thread_tile=tile, k_tile=k_tile, a_kmajor="t" in flags, double_buffer="d" in flags,
                register_prefetch="r" in flags)


class Bench(G.BenchBase):
    """One SGEMM run: the shared set-up, and the SGEMM and fused rows."""

    def __init__(self, opts):
        super().__init__(opts)
        self.rows = []
        self.fused_rows = []

    # variants -------------------------------------------------------------------------
    def build(self, make, n, cfg):
        """``(module, None)`` or ``(None, reason)`` for a config the schedule or the
        compiler rejects."""
        try:
            s, args = make(n, n, n, **config_kwargs(cfg))
            name = f"{make.__name__}_{config_name(cfg)}".replace("+", "_")
            return tecc.build(s, args, target=self.target, name=name), None
        except ScheduleError as err:  # the schedule does not fit this size: listed, not a failure
            return None, f"{type(err).__name__}: {str(err).splitlines()[0]}"
        except TeccError as err:  # a lowering or compile error is a failure
            msg = f"FAILED: {type(err).__name__}: {str(err).splitlines()[0]}"
            self.failures.append(f"{make.__name__} {config_name(cfg)} n={n}: {msg}")
            traceback.print_exc()
            return None, msg

    def run_size(self, n):
        xp = self.xp
        flops = 2.0 * n ** 3
        a, b, bias = self.random((n, n), 2 * n), self.random((n, n), 2 * n + 1), self.random((n,), 2 * n + 2)
        ref64 = a.astype(xp.float64) @ b.astype(xp.float64)
        ref_fused = xp.maximum(ref64 + bias.astype(xp.float64), 0.0)

        # cuBLAS (or numpy in a dry run: only its correctness is shown)
        c = self.poisoned((n, n))
        xp.matmul(a, b, out=c)
        err = G.rel_error(c, ref64)
        ev, gr, why = self.time_both(lambda: G.time_callable(lambda: xp.matmul(a, b, out=c), self.timing),
                                     lambda: xp.matmul(a, b, out=c))
        ref_name = "numpy (dry run)" if self.dry else "cuBLAS (cupy.matmul)"
        cublas = self.record(n, ref_name, "-", "-", None, err, ev, gr, why, flops, None)

        best = None
        for cfg in self.opts.configs:
            mod, reason = self.build(K.sgemm, n, cfg)
            if mod is None:
                self.rows.append({"n": n, "variant": "tecc sgemm", "config": config_name(cfg), "skipped": reason})
                continue
            try:
                c = self.poisoned((n, n))
                mod(a, b, c)
                err = G.rel_error(c, ref64)
                res = G.kernel_resources(mod)
                ev, gr, why = self.time_both(lambda: G.time_tecc(mod, (a, b, c), self.timing),
                                             lambda: mod(a, b, c))
            except Exception as exc:  # noqa: BLE001 - report it and go on with the other variants
                self.crashed(self.rows, n, "tecc sgemm", cfg, exc)
                continue
            row = self.record(n, "tecc sgemm", config_name(cfg), G.launch_shape(mod), res, err, ev, gr, why,
                              flops, cublas)
            if ev is not None and row["ok"] and (best is None or row["ms"] < best["ms"]):
                best = row
        if best is not None:
            best["best"] = True

        if not self.opts.no_fused:
            self.run_fused(n, a, b, bias, ref_fused)

    def run_fused(self, n, a, b, bias, ref):
        xp = self.xp
        c = self.poisoned((n, n))
        d = self.poisoned((n, n))
        if self.dry:
            def unfused():
                np.matmul(a, b, out=c)
                np.maximum(c + bias, 0, out=d)
        else:
            bias_relu = xp.ElementwiseKernel("T x, T b", "T y", "y = max(x + b, (T)0)", "tecc_bench_bias_relu")

            def unfused():
                xp.matmul(a, b, out=c)
                bias_relu(c, bias, d)
        unfused()
        err = G.rel_error(d, ref)
        ev, gr, why = self.time_both(lambda: G.time_callable(unfused, self.timing), unfused)
        name = "numpy matmul + maximum (dry run)" if self.dry else "cuBLAS + elementwise (2 kernels)"
        base = self.record_fused(n, name, "-", err, ev, gr, why, None)
        for cfg in self.opts.configs:
            mod, reason = self.build(K.matmul_bias_relu, n, cfg)
            if mod is None:
                self.fused_rows.append({"n": n, "variant": "tecc fused", "config": config_name(cfg), "skipped": reason})
                continue
            try:
                out = self.poisoned((n, n))
                mod(a, b, bias, out)
                err = G.rel_error(out, ref)
                ev, gr, why = self.time_both(lambda: G.time_tecc(mod, (a, b, bias, out), self.timing),
                                             lambda: mod(a, b, bias, out))
            except Exception as exc:  # noqa: BLE001 - report it and go on with the other variants
                self.crashed(self.fused_rows, n, "tecc fused", cfg, exc)
                continue
            self.record_fused(n, "tecc matmul+bias+relu (1 kernel)", config_name(cfg), err, ev, gr, why, base)

    # rows -----------------------------------------------------------------------------
    def crashed(self, rows, n, variant, cfg, exc):
        """A variant that raised while running: a FAILED row, a failure, and on we go."""
        msg = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        rows.append({"n": n, "variant": variant, "config": config_name(cfg), "skipped": msg})
        self.failures.append(f"n={n} {variant} {config_name(cfg)}: {msg}")
        traceback.print_exc()

    def _check(self, what, err):
        ok = G.passes(err, self.opts.tol)
        if not ok:
            self.failures.append(f"{what}: relative error {err:.3e} > {self.opts.tol:g}")
        return ok

    def record(self, n, variant, cfg, shape, res, err, ev, gr, why, flops, base):
        row = {"n": n, "variant": variant, "config": cfg, "launch": shape, "resources": res, "rel_err": err,
               "ok": self._check(f"n={n} {variant} {cfg}", err), **G.timing_fields(ev, gr, why, base, flops)}
        self.rows.append(row)
        return row

    def record_fused(self, n, variant, cfg, err, ev, gr, why, base):
        row = {"n": n, "variant": variant, "config": cfg, "rel_err": err,
               "ok": self._check(f"n={n} {variant} {cfg}", err), **G.timing_fields(ev, gr, why, base)}
        self.fused_rows.append(row)
        return row

    # report ---------------------------------------------------------------------------
    def tables(self) -> str:
        cells = []
        for r in self.rows:
            if "skipped" in r:
                cells.append([r["n"], r["variant"], r["config"], "skipped: " + r["skipped"]] + [""] * 9)
                continue
            regs = G.resource_text(r.get("resources"))
            spill = G.resource_text(r.get("resources"), "spill_bytes")
            variant = r["variant"] + (" (best)" if r.get("best") else "")
            cells.append([r["n"], variant, r["config"], r["launch"], G.fmt(regs), G.fmt(spill),
                          G.fmt(r["rel_err"], ".1e"), "yes" if r["ok"] else "NO", G.fmt(r["ms"], ".4f"),
                          G.fmt(r["ms_graph"], ".4f"), G.fmt(r["tflops"], ".2f"), G.fmt(r["ratio"], ".3f"),
                          G.fmt(r["ratio_graph"], ".3f")])
        text = "## SGEMM (float32, C = A @ B, n x n x n)\n\n" + G.render_table(COLUMNS, cells)
        if self.fused_rows:
            cells = []
            for r in self.fused_rows:
                if "skipped" in r:
                    cells.append([r["n"], r["variant"], r["config"], "skipped: " + r["skipped"]] + [""] * 5)
                    continue
                cells.append([r["n"], r["variant"], r["config"], G.fmt(r["rel_err"], ".1e"),
                              "yes" if r["ok"] else "NO", G.fmt(r["ms"], ".4f"), G.fmt(r["ms_graph"], ".4f"),
                              G.fmt(r["ratio"], ".3f"), G.fmt(r["ratio_graph"], ".3f")])
            text += ("\n\n## relu(A @ B + bias): one tecc kernel vs cuBLAS + a separate elementwise kernel\n\n"
                     + G.render_table(FUSED_COLUMNS, cells))
        return text

    def summary(self) -> list:
        lines = []
        for n in self.opts.sizes:
            best = [r for r in self.rows if r["n"] == n and r.get("best")]
            if best:
                r = best[0]
                lines.append(f"n={n}: best tecc config {r['config']}: {r['tflops']:.2f} TFLOPS, "
                             f"{r['ratio']:.3f} x cuBLAS (graph replay: {G.fmt(r['ratio_graph'], '.3f')})")
                if n == TARGET_SIZE:
                    met = "MET" if r["ratio"] >= TARGET_RATIO else "NOT MET"
                    lines.append(f"target: SGEMM at {TARGET_SIZE} >= {TARGET_RATIO:.0%} of cuBLAS: {met}")
        failed_graphs = {r["graph_failure"] for r in self.rows + self.fused_rows
                         if isinstance(r, dict) and r.get("graph_failure") and "disabled" not in r["graph_failure"]}
        for why in sorted(failed_graphs):
            lines.append(f"graph capture failed for some variants: {why}")
        return lines



def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", help=f"square sizes (default {DEFAULT_SIZES}; dry run {DRY_RUN_SIZES})")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help=f"tecc schedule configs BLOCKxTHREAD_TILExK_TILE[+t][+d][+r] (default {DEFAULT_CONFIGS})")
    G.add_common_args(ap, "sgemm", number=3, graph_calls=10, tol=TOLERANCE)
    ap.add_argument("--no-fused", action="store_true", help="skip matmul+bias+relu")
    return ap


def main(argv=None) -> int:
    """Run the benchmark; return 0, or 1 when a variant failed its correctness check."""
    opts = build_parser().parse_args(argv)
    opts.sizes = G.parse_int_list(opts.sizes or (DRY_RUN_SIZES if opts.dry_run else DEFAULT_SIZES))
    opts.configs = parse_configs(opts.configs)
    bench = Bench(opts)
    return G.run_and_report(
        "gpu_sgemm", opts, bench, opts.sizes, bench.run_size, lambda n: f"n={n}",
        lambda summary: {"target_ratio": {"size": TARGET_SIZE, "ratio": TARGET_RATIO},
                         "sgemm": bench.rows, "fused": bench.fused_rows})

if __name__ == "__main__":
    sys.exit(main())
