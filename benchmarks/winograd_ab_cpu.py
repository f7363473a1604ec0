"""ResNet-50 at batch 1 on the CPU, built with and without Winograd's F(2x2, 3x3)
(``PassContext(config={"graph.disable_winograd": True})`` keeps every 3x3
convolution direct), in one process: the outputs compared, then ``2`` runs per
sample in 12 interleaved rounds (the order alternating), medians in ms.

    python benchmarks/winograd_ab_cpu.py OUT.json

Needs onnx (the light ResNet-50 of ``models_cpu.py``, random weights).
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OMP_NUM_THREADS", "2")
import numpy as np  # noqa: E402

import models_cpu  # noqa: E402
import tecc  # noqa: E402
from tecc.contrib import graph_executor  # noqa: E402
from tecc.graph.build import build  # noqa: E402
from tecc.graph.frontend.onnx import from_onnx  # noqa: E402


def main(out):
    """Build both, compare, time; write the samples to ``out``."""
    model = models_cpu.make_model("resnet50", 1)
    model = model[0] if isinstance(model, tuple) else model
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    runs, outs = {}, {}
    for label, cfg in (("winograd", {}), ("direct", {"graph.disable_winograd": True})):
        mod, params = from_onnx(model)
        with tecc.transform.PassContext(opt_level=3, config=cfg):
            factory = build(mod, "llvm -mcpu=native", params)
        g = graph_executor.GraphModule(factory["default"](tecc.cpu(0)))
        g.set_input(0, x)
        g.run()
        outs[label] = g.get_output(0).numpy()
        runs[label] = g.run
    diff = float(np.abs(outs["winograd"] - outs["direct"]).max())
    print("max |winograd - direct|", diff, "max |out|", float(np.abs(outs["direct"]).max()))
    times = {k: [] for k in runs}
    for r in range(12):
        for label in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            time.sleep(0.1)
            times[label].append(models_cpu.sample(runs[label], 2))
    med = {k: statistics.median(v) for k, v in times.items()}
    print({k: round(v, 2) for k, v in med.items()}, "direct/winograd", round(med["direct"] / med["winograd"], 3))
    what = ("ResNet-50 batch 1 (random weights), tecc built with and without Winograd (PassContext "
            "graph.disable_winograd), 12 interleaved rounds in one process, 2 threads, ms per run")
    with open(out, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "what": what, "samples_ms": times, "median_ms": med,
                   "max_abs_diff": diff}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
