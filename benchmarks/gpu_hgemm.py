"""float16 GEMM on tensor cores: tecc's ``topi.cuda.dense_tensorcore`` against cuBLAS.

    python benchmarks/gpu_hgemm.py [--sizes 1024,2048,4096,8192] [--configs ...] [--out DIR]
    python benchmarks/gpu_hgemm.py --dtype bfloat16   # bfloat16 operands (sm_80+)
    python benchmarks/gpu_hgemm.py --dry-run          # no GPU: build + check only

With ``--dtype bfloat16`` the operands are bfloat16 (made on the host through
ml_dtypes, onnx's dependency; cupy has no bfloat16) and the reference is cuBLAS's
bfloat16 GEMM through ``torch.matmul`` (bfloat16 output), when torch is present;
without torch the tecc rows have no ratio.

For each square size ``n`` (``C[n, n] = A[n, n] @ W[n, n]^T``, a dense layer: float16
operands, float32 accumulation and output), on the same random inputs in the same run:

- cuBLAS through ``cupy.matmul`` on float16 arrays (tensor cores, float16 output);
- cuBLAS with a float32 output: ``cupy.matmul`` of the float16 operands into a
  float32 array is not offered by cupy, so the reference for tecc's float32 output
  is torch's ``torch.matmul(a, w.T).float()`` only when torch is present (reported,
  not the ratio's base);
- tecc's template (wmma fragments, :mod:`tecc.topi.cuda.dense_tensorcore`) with its
  fallback config and each ``--configs`` entry ``BRWxBCWxWRTxWCT[cCHUNK][vVEC][mM]``
  (block_row_warps x block_col_warps warps of warp_row_tiles x warp_col_tiles
  fragments, k step of ``CHUNK`` fragments, ``VEC``-element shared loads, fragment
  shape ``M`` = 16 / 32 / 8); a config the template refuses for a size is listed
  with its reason.

Every variant is checked against a float32 product of the same float16 values
(``||out - ref|| / ||ref||`` within ``--tol``; the output is poisoned with NaN first),
then timed as ``gpu_sgemm.py`` times (CUDA events, median; graph replay).  Reported:
ms, TFLOPS and ``t_cuBLAS / t_variant``.  No target figure: the issue's GEMM target is
float32 SGEMM; this is where tensor cores stand against cuBLAS's.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import _gpu_common as G  # noqa: E402  (the helper beside this script)

import tecc  # noqa: E402
from tecc.errors import TeccError  # noqa: E402
from tecc import topi  # noqa: E402,F401  (importing topi registers dense_tensorcore.cuda)
from tecc.tuner.task.space import InstantiationError  # noqa: E402

DEFAULT_SIZES = "1024,2048,4096,8192"
DRY_RUN_SIZES = "64,128"
DEFAULT_CONFIGS = "fallback,2x2x2x2c2v8,2x2x4x2c2v8,2x4x4x2c2v8,4x2x2x4c2v8,2x2x4x4c2v8,4x4x2x2c2v8,2x2x4x4c4v8"
#: relative error a float32-accumulated product of float16 values passes with
TOLERANCE = 1e-3

COLUMNS = ["n", "variant", "config", "grid / block", "regs", "rel err", "ok", "ms", "ms graph", "TFLOPS",
           "x cuBLAS", "x cuBLAS graph"]
_CONFIG = re.compile(r"^(\d)x(\d)x(\d)x(\d)(?:c(\d))?(?:v(\d))?(?:m(\d+))?$")


def parse_configs(text: str) -> list:
    """``"fallback,2x2x2x2c2v8"`` -> ``[None, {"block_row_warps": 2, ...}]``."""
    out = []
    for item in text.split(","):
        item = item.strip().lower()
        if item == "fallback":
            out.append(None)
            continue
        m = _CONFIG.match(item)
        if m is None:
            raise SystemExit(f"--configs: {item!r} is not 'fallback' or BRWxBCWxWRTxWCT[cCHUNK][vVEC][mM] "
                             "(e.g. 2x2x4x2c2v8)")
        brw, bcw, wrt, wct, chunk, vec, wm = m.groups()
        out.append({"block_row_warps": int(brw), "block_col_warps": int(bcw), "warp_row_tiles": int(wrt),
                    "warp_col_tiles": int(wct), "chunk": int(chunk or 2), "vec": int(vec or 8),
                    "wmma_m": int(wm or 16), "offset": 8, "offsetCS": 8})
    return out


def config_name(knobs) -> str:
    if knobs is None:
        return "fallback"
    return (f"{knobs['block_row_warps']}x{knobs['block_col_warps']}x{knobs['warp_row_tiles']}x"
            f"{knobs['warp_col_tiles']}c{knobs['chunk']}v{knobs['vec']}m{knobs['wmma_m']}")


def build(n, knobs, target, dtype="float16"):
    """``(module, None)`` or ``(None, reason)`` for a config the template refuses."""
    task = tecc.autotvm.task.create("dense_tensorcore.cuda", args=(("TENSOR", (n, n), dtype),
                                                                    ("TENSOR", (n, n), dtype), None, "float32"),
                                    target=target)
    if knobs is None:
        from tecc.tuner.task.space import FallbackConfigEntity

        cfg = FallbackConfigEntity()
    else:
        space = task.config_space
        try:
            point = [next(i for i, e in enumerate(dim.entities) if e.val == knobs[name])
                     for name, dim in space.space_map.items()]
        except StopIteration:
            return None, f"not a point of the space ({config_name(knobs)})"
        cfg = space.get(space.knob2point(point))
    try:
        with tecc.target.Target(target):
            s, args = task.instantiate(cfg)
        return tecc.build(s, args, target=target, name=f"hgemm_{config_name(knobs)}"), None
    except InstantiationError as err:
        return None, f"refused: {str(err).splitlines()[0]}"


class Bench(G.BenchBase):
    def __init__(self, opts):
        super().__init__(opts)
        self.rows = []

    def run_size(self, n):
        xp = self.xp
        flops = 2.0 * n ** 3
        if self.opts.dtype == "bfloat16":
            a, w, ref, base = self.bfloat16_reference(n, flops)
        else:
            a = self.random((n, n), 3 * n).astype(xp.float16)
            w = self.random((n, n), 3 * n + 1).astype(xp.float16)
            ref = a.astype(xp.float32) @ w.astype(xp.float32).T
            # cuBLAS, float16 out (its tensor-core GEMM), on the transposed view as a dense layer reads it
            c16 = xp.empty((n, n), xp.float16)
            wt = w.T
            xp.matmul(a, wt, out=c16)
            err = G.rel_error(c16.astype(xp.float32), ref)
            ev, gr, why = self.time_both(lambda: G.time_callable(lambda: xp.matmul(a, wt, out=c16), self.timing),
                                         lambda: xp.matmul(a, wt, out=c16))
            base = self.record(n, "numpy (dry run)" if self.dry else "cuBLAS fp16 (cupy.matmul)", "-", "-", None,
                               err, ev, gr, why, flops, None, tol=5e-3)
        for knobs in self.opts.configs:
            try:
                mod, reason = build(n, knobs, self.target, self.opts.dtype)
            except TeccError as exc:
                self.failures.append(f"n={n} {config_name(knobs)}: {type(exc).__name__}: {exc}")
                traceback.print_exc()
                continue
            if mod is None:
                self.rows.append({"n": n, "variant": "tecc dense_tensorcore", "config": config_name(knobs),
                                  "skipped": reason})
                continue
            c = self.poisoned((n, n))
            mod(a, w, c)
            err = G.rel_error(c, ref)
            ev, gr, why = self.time_both(lambda: G.time_tecc(mod, (a, w, c), self.timing), lambda: mod(a, w, c))
            self.record(n, "tecc dense_tensorcore", config_name(knobs), G.launch_shape(mod),
                        G.kernel_resources(mod), err, ev, gr, why, flops, base)

    def bfloat16_reference(self, n, flops):
        """``(a, w, ref, base row or None)`` for bfloat16 operands: tecc arrays of
        bfloat16 on the device, the float32 product of their values, and cuBLAS's
        bfloat16 GEMM through torch (None without torch or in a dry run)."""
        import ml_dtypes
        import numpy as np

        dev = tecc.cuda(0)  # the emulator's arrays in a dry run
        host = [np.random.default_rng(3 * n + k).standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
                for k in (0, 1)]
        a, w = (tecc.nd.array(h, dev) for h in host)
        ref = self.xp.asarray(host[0].astype(np.float32) @ host[1].astype(np.float32).T)
        torch = None if self.dry else G.optional_torch()
        if torch is None:
            return a, w, ref, None
        ta, tw = (torch.from_numpy(h.view(np.int16)).cuda().view(torch.bfloat16) for h in host)
        out = torch.empty((n, n), dtype=torch.bfloat16, device="cuda")
        run = G.torch_on_cupy_stream(lambda: torch.matmul(ta, tw.T, out=out))
        run()
        err = G.rel_error(self.xp.asarray(out.float().cpu().numpy()), ref)
        ev, gr, why = self.time_both(lambda: G.time_callable(run, self.timing), None)
        base = self.record(n, "cuBLAS bf16 (torch.matmul)", "-", "-", None, err, ev, gr, why, flops, None, tol=1e-2)
        return a, w, ref, base

    def record(self, n, variant, cfg, shape, res, err, ev, gr, why, flops, base, tol=None):
        ok = G.passes(err, tol or self.opts.tol)
        if not ok:
            self.failures.append(f"n={n} {variant} {cfg}: relative error {err:.3e}")
        row = {"n": n, "variant": variant, "config": cfg, "launch": shape, "resources": res, "rel_err": err, "ok": ok,
               **G.timing_fields(ev, gr, why, base, flops)}
        self.rows.append(row)
        return row

    def tables(self) -> str:
        cells = []
        for r in self.rows:
            if "skipped" in r:
                cells.append([r["n"], r["variant"], r["config"], "skipped: " + r["skipped"]] + [""] * 8)
                continue
            regs = G.resource_text(r.get("resources"))
            cells.append([r["n"], r["variant"], r["config"], r["launch"], G.fmt(regs), G.fmt(r["rel_err"], ".1e"),
                          "yes" if r["ok"] else "NO", G.fmt(r["ms"], ".4f"), G.fmt(r["ms_graph"], ".4f"),
                          G.fmt(r["tflops"], ".1f"), G.fmt(r["ratio"], ".3f"), G.fmt(r["ratio_graph"], ".3f")])
        return f"## HGEMM ({self.opts.dtype} operands, float32 accumulation; C = A @ W^T, n x n x n)\n\n" + \
            G.render_table(COLUMNS, cells)

    def summary(self) -> list:
        lines = []
        for n in self.opts.sizes:
            rows = [r for r in self.rows if r["n"] == n and r.get("ratio") is not None and r["ok"]]
            if rows:
                best = max(rows, key=lambda r: r["ratio"])
                lines.append(f"n={n}: best tecc tensor-core config {best['config']}: {best['tflops']:.1f} TFLOPS, "
                             f"{best['ratio']:.3f} x cuBLAS {self.opts.dtype}")
        return lines


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", help=f"square sizes (default {DEFAULT_SIZES}; dry run {DRY_RUN_SIZES})")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help=f"'fallback' and BRWxBCWxWRTxWCT[cCHUNK][vVEC][mM] configs (default {DEFAULT_CONFIGS})")
    ap.add_argument("--dtype", choices=("float16", "bfloat16"), default="float16",
                    help="the operands' type (bfloat16: sm_80 and later; cuBLAS through torch)")
    G.add_common_args(ap, "hgemm", number=3, graph_calls=10, tol=TOLERANCE)
    return ap


def main(argv=None) -> int:
    """Run the benchmark; return 0, or 1 when a variant failed its correctness check."""
    opts = build_parser().parse_args(argv)
    opts.sizes = G.parse_int_list(opts.sizes or (DRY_RUN_SIZES if opts.dry_run else DEFAULT_SIZES))
    opts.configs = parse_configs(opts.configs)
    bench = Bench(opts)
    return G.run_and_report("gpu_hgemm", opts, bench, opts.sizes, bench.run_size, lambda n: f"n={n}",
                            lambda summary: {"hgemm": bench.rows, "dtype": opts.dtype},
                            stem="hgemm_bf16" if opts.dtype == "bfloat16" else None)


if __name__ == "__main__":
    sys.exit(main())
