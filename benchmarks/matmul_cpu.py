"""1024x1024x1024 float32 matmul on the CPU: tecc schedules side by side with numpy.

    python benchmarks/matmul_cpu.py [--size 1024] [--target "llvm -mcpu=native"]

Prints GFLOPS for the naive schedule, the seed tutorial's optimized schedule and the
best TE schedule (packed B, a register tile through cache_write, vectorized inner
loop, parallel outer loop), each as a ratio to numpy (OpenBLAS) measured in the same
run, and the time tecc takes to lower and generate C for the best schedule.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

import tecc as tvm
from tecc import te


def matmul_decl(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def naive(n):
    A, B, C = matmul_decl(n)
    return te.create_schedule(C.op), [A, B, C]


def seed_optimized(n):
    """The optimized schedule from the seed tutorial, unchanged."""
    A, B, C = matmul_decl(n)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    k_ax = C.op.reduce_axis[0]
    io, ii = s[C].split(i, factor=32)
    jo, ji = s[C].split(j, factor=32)
    ko, ki = s[C].split(k_ax, factor=4)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    jii, jiv = s[C].split(ji, factor=8)
    s[C].vectorize(jiv)
    s[C].parallel(io)
    s[C].unroll(ki)
    return s, [A, B, C]


def best(n, target="llvm -mcpu=native"):
    """The best TE schedule: :func:`tecc.topi.x86.matmul_packed`, its register tile
    fitted to ``target``."""
    from tecc.topi.x86 import matmul_packed
    return matmul_packed(n, target=target)


SCHEDULES = {"naive": naive, "seed_optimized": seed_optimized, "best": best}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--target", default="llvm -mcpu=native")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-naive", action="store_true", help="skip the slow naive schedule")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    opts = ap.parse_args(argv)
    n = opts.size
    flops = 2.0 * n ** 3
    dev = tvm.cpu(0)
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n), dtype=np.float32)
    ref = a_np @ b_np
    a, b = tvm.nd.array(a_np, dev), tvm.nd.array(b_np, dev)

    def t_numpy():
        best_t = float("inf")
        for _ in range(opts.repeat):
            t0 = time.perf_counter()
            a_np @ b_np
            best_t = min(best_t, time.perf_counter() - t0)
        return best_t

    rows = []
    t_np = t_numpy()
    rows.append(("numpy (OpenBLAS)", t_np))
    lower_ms = None
    for name, make in SCHEDULES.items():
        if name == "naive" and opts.skip_naive:
            continue
        make_n = (lambda n: make(n, opts.target)) if name == "best" else make
        s, args = make_n(n)
        if name == "best":
            t0 = time.perf_counter()
            mod = tvm.lower(s, args, name="matmul_best", target=opts.target)
            from tecc.cpu_fallback import generate_c
            generate_c(mod["matmul_best"])
            lower_ms = (time.perf_counter() - t0) * 1e3
            s, args = make_n(n)
        f = tvm.build(s, args, target=opts.target, name=f"matmul_{name}")
        c = tvm.nd.empty((n, n), "float32", dev)
        f(a, b, c)
        np.testing.assert_allclose(c.numpy(), ref, rtol=1e-3, atol=1e-2)
        number = 1 if name == "naive" else 3
        res = f.time_evaluator(f.entry_name, dev, number=number, repeat=1 if name == "naive" else opts.repeat)(a, b, c)
        rows.append((name, min(res.results)))
    t_np = min(t_np, t_numpy())  # numpy again, after the others, for a fair best-of
    rows[0] = ("numpy (OpenBLAS)", t_np)

    print(f"matmul {n}x{n}x{n} float32, target {opts.target!r}, {os.cpu_count()} CPU(s), {platform.processor() or platform.machine()}")
    print(f"{'schedule':<18} {'ms':>9} {'GFLOPS':>9} {'ratio to numpy':>15}")
    out = {"size": n, "target": opts.target, "cpus": os.cpu_count(), "rows": []}
    for name, t in rows:
        g = flops / t / 1e9
        print(f"{name:<18} {t * 1e3:9.2f} {g:9.1f} {t_np / t:15.2f}")
        out["rows"].append({"schedule": name, "ms": t * 1e3, "gflops": g, "ratio_to_numpy": t_np / t})
    print(f"lower + generate C for 'best': {lower_ms:.1f} ms (C compiler excluded)")
    out["lower_and_codegen_ms"] = lower_ms
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
