"""How OpenMP's waiting policy moves tecc's model speed, idle and with the cores busy.

    python benchmarks/openmp_spin.py [--busy 0,2] [--repeat 2] [--rounds 5]
                                     [--models encoder,squeezenet,resnet50]
                                     [--envs "GOMP_SPINCOUNT=300000;GOMP_SPINCOUNT=30000;..."]
                                     [--out FILE]

libgomp reads its environment once, when it loads, so every configuration runs in a
process of its own: it builds the models of ``benchmarks/models_cpu.py`` at batch 1
(default schedules) and times tecc and onnxruntime in ``--rounds`` interleaved rounds
(medians).  ``--busy N`` starts N other processes that spin for the whole run (a
machine whose cores other work wants).  The default configurations: tecc's own
(nothing set: tecc sets ``GOMP_SPINCOUNT=30000``, see ``tecc.config``), libgomp's own
default forced (``GOMP_SPINCOUNT=300000``), a shorter spin and passive waiting.

Prints one line per configuration with the ratio t(onnxruntime) / t(tecc) per model,
and writes them as JSON (``benchmarks/results/<date>_cpu_openmp_spin.json`` unless
``--out``).  Needs onnx and onnxruntime; no GPU.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_ENVS = "tecc default;GOMP_SPINCOUNT=300000;GOMP_SPINCOUNT=3000;OMP_WAIT_POLICY=passive"
#: runs per timed sample, per model (a sample of a few milliseconds at least)
NUMBER = {"resnet50": 2, "squeezenet": 10, "encoder": 200}


def child(models, rounds) -> dict:
    """In the child process: build every model, time both runtimes; medians in ms."""
    import numpy as np  # noqa: PLC0415

    sys.path.insert(0, HERE)
    import models_cpu  # noqa: PLC0415

    out = {}
    for name in models:
        _row, run, ort_run = models_cpu.prepare(name, 1, "llvm -mcpu=native", None, 2)
        for fn in (run, ort_run):
            fn()
            fn()
        times = {"tecc": [], "ort": []}
        for r in range(rounds):
            order = [("tecc", run), ("ort", ort_run)]
            for label, fn in (order if r % 2 == 0 else order[::-1]):
                time.sleep(0.1)
                times[label].append(models_cpu.sample(fn, NUMBER[name]))
        out[name] = {k: float(np.median(v)) for k, v in times.items()}
    return out


def run_config(env_text, models, rounds) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.setdefault("OMP_NUM_THREADS", "2")
    if "=" in env_text:
        name, value = env_text.split("=", 1)
        env[name.strip()] = value.strip()
    proc = subprocess.run([sys.executable, __file__, "--child", ",".join(models), "--rounds", str(rounds)],
                          env=env, capture_output=True, text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise SystemExit(f"openmp_spin.py: the run with {env_text!r} failed:\n{proc.stderr[-2000:]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--busy", default="0,2", help="comma list: numbers of spinning processes to run beside")
    ap.add_argument("--repeat", type=int, default=2, help="repetitions of every configuration")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds per process")
    ap.add_argument("--models", default="encoder,squeezenet,resnet50")
    ap.add_argument("--envs", default=DEFAULT_ENVS, help="';'-separated NAME=VALUE (or a label: nothing set)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(args.child.split(","), args.rounds)))
        return 0
    models = args.models.split(",")
    rows = []
    for busy in (int(b) for b in args.busy.split(",")):
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            for rep in range(args.repeat):
                for env_text in args.envs.split(";"):
                    result = run_config(env_text, models, args.rounds)
                    ratios = {m: round(r["ort"] / r["tecc"], 2) for m, r in result.items()}
                    rows.append({"busy": busy, "repeat": rep, "env": env_text, "ms": result, "ratio": ratios})
                    print(f"busy={busy} {env_text:28s} " + "  ".join(
                        f"{m} {r['tecc']:.3f}/{r['ort']:.3f} ms ({ratios[m]:.2f}x)" for m, r in result.items()),
                        flush=True)
        finally:
            for p in spinners:
                p.kill()
    out = args.out or os.path.join(HERE, "results", f"{datetime.date.today().isoformat()}_cpu_openmp_spin.json")
    facts = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cores": os.cpu_count(),
             "models": models, "rounds": args.rounds}
    with open(out, "w") as fh:
        json.dump({"facts": facts, "rows": rows}, fh, indent=1)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
