"""The channel-blocked layout on whole models: each model built twice for the CPU, with
and without AlterOpLayout, and timed in the same run.

    python benchmarks/alter_layout_cpu.py [--models resnet50,squeezenet,...] [--rounds 7]
                                          [--threads N] [--target "llvm -mcpu=native"] [--out FILE]

The models are the nine light model graphs that ship inside the onnx package, with
random weights (:mod:`tecc.graph.testing`, as ``models_cpu.py`` and the tests use
them), at batch 1.  Both builds are ``tecc.graph.build`` at opt_level 3; one disables
``AlterOpLayout`` (the convolutions stay NCHW, run by the NCHW templates).  Their
outputs must agree (rtol 1e-3, atol 1e-4; a mismatch prints ``MISMATCH`` and the
script exits with 1).  Timing: ``--rounds`` interleaved rounds, each the mean of two
runs of each build; the table gives the medians and t(NCHW) / t(blocked) (above 1 the
blocked layout is faster).  ``OMP_NUM_THREADS`` is ``--threads`` (default: every core)
unless it is set.  Results go to ``--out`` as JSON.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("resnet50", "squeezenet", "vgg19", "inception_v1", "inception_v2", "densenet121", "shufflenet",
          "bvlc_alexnet", "zfnet512")
RTOL, ATOL = 1e-3, 1e-4


def _build_both(name, target):
    """``{"blocked": GraphModule, "nchw": GraphModule}`` of one model, inputs set."""
    import tecc  # noqa: PLC0415
    from models_cpu import GraphModule, build, from_onnx, make_model  # noqa: PLC0415

    model, feeds = make_model(name, 1)
    mods = {}
    for variant, disabled in (("blocked", []), ("nchw", ["AlterOpLayout"])):
        mod, params = from_onnx(model)
        with tecc.transform.PassContext(opt_level=3, disabled_pass=disabled):
            factory = build(mod, target, params)
        gmod = GraphModule(factory["default"](tecc.cpu(0)))
        for key, value in feeds.items():
            gmod.set_input(key, value)
        gmod.run()
        mods[variant] = gmod
    return mods


def run_model(name, target, rounds) -> dict:
    mods = _build_both(name, target)
    outs = {v: g.get_output(0).numpy() for v, g in mods.items()}
    match = bool(np.allclose(outs["blocked"], outs["nchw"], rtol=RTOL, atol=ATOL))
    samples = {v: [] for v in mods}
    for _ in range(rounds):
        for variant, gmod in mods.items():
            start = time.perf_counter()
            gmod.run()
            gmod.run()
            samples[variant].append((time.perf_counter() - start) / 2 * 1e3)
    med = {v: float(np.median(s)) for v, s in samples.items()}
    return {"model": name, "match": match, "blocked_ms": med["blocked"], "nchw_ms": med["nchw"],
            "speedup": med["nchw"] / med["blocked"], "samples_ms": samples}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0, help="OpenMP threads (default: every core)")
    ap.add_argument("--target", default="llvm -mcpu=native")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    if args.threads and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    sys.path.insert(0, HERE)
    import warnings  # noqa: PLC0415

    warnings.simplefilter("ignore")  # "no tuned config" notes: these are the default schedules
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    rows = []
    print(f"{'model':<14} {'blocked ms':>10} {'NCHW ms':>9} {'NCHW/blocked':>13}  outputs")
    for name in names:
        row = run_model(name, args.target, args.rounds)
        rows.append(row)
        print(f"{name:<14} {row['blocked_ms']:>10.2f} {row['nchw_ms']:>9.2f} {row['speedup']:>12.2f}x  "
              f"{'match' if row['match'] else 'MISMATCH'}")
    if args.out:
        facts = {"date": datetime.date.today().isoformat(), "machine": platform.machine(),
                 "processor": platform.processor(), "cores": os.cpu_count(), "target": args.target,
                 "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "rounds": args.rounds}
        with open(args.out, "w") as f:
            json.dump({"facts": facts, "rows": rows}, f, indent=1)
        print(f"wrote {args.out}")
    return 0 if all(r["match"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
