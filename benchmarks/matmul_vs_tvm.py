"""tecc's C backend against apache-tvm's LLVM backend on the same matmul schedule.

    python benchmarks/matmul_vs_tvm.py [--size 1024] [--repeat 15] [--out figures.json]

Builds the seed tutorial's optimized schedule (``seed_optimized`` in matmul_cpu.py:
32x32 tiles of C, k split by 4 and unrolled, an 8-wide vectorized inner loop, the
outer row loop parallel) in tecc and, when ``import tvm`` gives a TVM with a TIR
schedule (``tvm.tir.Schedule``, or ``tvm.s_tir.Schedule`` from 0.22 on), the same
loop nest in TVM through ``te.create_prim_func`` and the schedule primitives.  Both
are timed with their own time evaluators, one measurement of each in turn so that
the noise of a shared machine falls on both alike, with numpy (OpenBLAS) as a
reference.  Both results are checked against a float64 product.

TVM needs an environment of its own with tecc installed beside it, e.g.

    python3 -m venv /tmp/tvmenv
    /tmp/tvmenv/bin/pip install apache-tvm numpy
    /tmp/tvmenv/bin/pip install -e . --no-deps

Without TVM the script says so and measures tecc and numpy only.

``-mcpu=native`` is handed to TVM as the CPU name its LLVM reports for this machine:
some TVM wheels ship an LLVM whose target triple rejects ``native`` and silently
falls back to ``generic`` (SSE2, no FMA), which would not be the same comparison.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

import tecc
from matmul_cpu import seed_optimized


def relative_error(got, ref):
    """Largest absolute difference, scaled by the largest magnitude of ``ref``."""
    scale = float(np.abs(ref).max()) or 1.0
    return float(np.abs(got.astype(np.float64) - ref).max()) / scale


def check(name, got, ref, rtol):
    err = relative_error(got, ref)
    if err > rtol:
        raise SystemExit(f"{name}: result differs from numpy (scaled error {err:.2e} > {rtol:.0e})")
    return err


def build_tecc(n, target, show_ir):
    """The seed-optimized schedule built by tecc: (function, C source)."""
    if show_ir:
        s, args = seed_optimized(n)
        print("tecc loop nest:")
        print(tecc.lower(s, args, simple_mode=True))
    s, args = seed_optimized(n)
    func = tecc.build(s, args, target=target, name="matmul_seed")
    return func


def import_tvm():
    """``(tvm, Schedule class)``, or ``(None, reason)`` when TVM cannot be used."""
    try:
        import tvm
        from tvm import te  # noqa: F401
    except ImportError as err:
        return None, f"apache-tvm is not importable here ({err})"
    schedule_cls = None
    for sub in ("tir", "s_tir"):
        try:
            mod = __import__(f"tvm.{sub}", fromlist=["Schedule"])
        except ImportError:
            continue
        schedule_cls = getattr(mod, "Schedule", None)
        if schedule_cls is not None:
            break
    if schedule_cls is None:
        return None, f"tvm {tvm.__version__} has neither tvm.tir.Schedule nor tvm.s_tir.Schedule"
    return tvm, schedule_cls


def tvm_cpu_name(tvm, mcpu):
    """The CPU name to give TVM's LLVM for tecc's ``-mcpu`` value."""
    if mcpu != "native":
        return mcpu
    try:
        from tvm.target import codegen
        return str(codegen.llvm_get_system_cpu())
    except (ImportError, AttributeError):
        return mcpu


def tvm_target(tvm, mcpu):
    """A TVM target for llvm with ``mcpu``: the dict form of 0.22+, else a string."""
    spec = {"kind": "llvm"}
    if mcpu:
        spec["mcpu"] = mcpu
    try:
        return tvm.target.Target(spec)
    except (ValueError, TypeError):
        text = "llvm" + (f" -mcpu={mcpu}" if mcpu else "")
        return tvm.target.Target(text)


def build_tvm(tvm, schedule_cls, n, mcpu, show_ir):
    """The same loop nest as tecc's seed-optimized schedule, built by TVM's LLVM.

    tecc (classic TE) vectorizes ``j.inner.inner`` although the unrolled ``k.inner``
    sits inside it, which ends up as ``k.inner`` (unrolled) around the 8-wide
    vector statement.  A TIR schedule refuses to vectorize a loop with a reduction
    loop inside, so ``k.inner`` is put outside the vector loop explicitly.  The
    ``C = 0`` initialisation is split off before ``k.outer``, where tecc puts it.
    """
    from tvm import te

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = schedule_cls(te.create_prim_func([A, B, C]))
    get_block = getattr(sch, "get_block", None) or getattr(sch, "get_sblock")
    block = get_block("C")
    i, j, kk = sch.get_loops(block)
    i_outer, i_inner = sch.split(i, [None, 32])
    j_outer, j_inner = sch.split(j, [None, 32])
    k_outer, k_inner = sch.split(kk, [None, 4])
    j_inner_outer, j_inner_inner = sch.split(j_inner, [None, 8])
    sch.reorder(i_outer, j_outer, k_outer, i_inner, j_inner_outer, k_inner, j_inner_inner)
    sch.vectorize(j_inner_inner)
    sch.parallel(i_outer)
    sch.unroll(k_inner)
    sch.decompose_reduction(block, k_outer)
    if show_ir:
        print("TVM loop nest:")
        print(sch.mod.script())
    target = tvm_target(tvm, mcpu)
    if hasattr(tvm, "compile"):
        lib = tvm.compile(sch.mod, target=target)
    else:
        lib = tvm.build(sch.mod, target=target)
    runtime_mod = getattr(lib, "mod", lib)
    return runtime_mod, str(target)


def tvm_tensor(tvm, array, dev):
    if hasattr(tvm.runtime, "tensor"):
        return tvm.runtime.tensor(array, dev)
    return tvm.nd.array(array, dev)


def time_numpy(a, b, number):
    t0 = time.perf_counter()
    for _ in range(number):
        a @ b
    return (time.perf_counter() - t0) / number


def summarize(samples, flops):
    med = statistics.median(samples)
    return {
        "median_ms": med * 1e3,
        "min_ms": min(samples) * 1e3,
        "gflops": flops / med / 1e9,
        "samples_ms": [t * 1e3 for t in samples],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=15, help="measurements of each, taken in turn")
    ap.add_argument("--number", type=int, default=3, help="calls averaged in one measurement")
    ap.add_argument("--target", default="llvm -mcpu=native", help="tecc target")
    ap.add_argument("--tvm-mcpu", help="CPU for TVM's LLVM (default: tecc's -mcpu, 'native' resolved)")
    ap.add_argument("--show-ir", action="store_true", help="print both loop nests")
    ap.add_argument("--out", help="also write the figures to this JSON file")
    opts = ap.parse_args(argv)

    n = opts.size
    flops = 2.0 * n ** 3
    rtol = 1e-4
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n), dtype=np.float32)
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)

    # tecc
    dev = tecc.cpu(0)
    func = build_tecc(n, opts.target, opts.show_ir)
    a_tecc = tecc.nd.array(a_np, dev)
    b_tecc = tecc.nd.array(b_np, dev)
    c_tecc = tecc.nd.empty((n, n), "float32", dev)
    func(a_tecc, b_tecc, c_tecc)
    errors = {"tecc": check("tecc", c_tecc.numpy(), ref, rtol)}
    tecc_eval = func.time_evaluator(func.entry_name, dev, number=opts.number, repeat=1)

    def run_tecc():
        return tecc_eval(a_tecc, b_tecc, c_tecc).mean

    runners = {"tecc": run_tecc}

    # TVM, when there is one
    tvm, schedule_cls = import_tvm()
    tvm_note = None
    tvm_desc = None
    if tvm is None:
        tvm_note = schedule_cls
        print(f"note: {tvm_note}; measuring tecc and numpy only.")
    else:
        mcpu = opts.tvm_mcpu or tvm_cpu_name(tvm, tecc.target.Target(opts.target).mcpu)
        tvm_mod, tvm_desc = build_tvm(tvm, schedule_cls, n, mcpu, opts.show_ir)
        tvm_dev = tvm.cpu(0)
        a_tvm = tvm_tensor(tvm, a_np, tvm_dev)
        b_tvm = tvm_tensor(tvm, b_np, tvm_dev)
        c_tvm = tvm_tensor(tvm, np.zeros((n, n), np.float32), tvm_dev)
        tvm_mod["main"](a_tvm, b_tvm, c_tvm)
        errors["tvm"] = check("tvm", c_tvm.numpy(), ref, rtol)
        tvm_eval = tvm_mod.time_evaluator("main", tvm_dev, number=opts.number, repeat=1)

        def run_tvm():
            return tvm_eval(a_tvm, b_tvm, c_tvm).mean

        runners["tvm"] = run_tvm

    def run_numpy():
        return time_numpy(a_np, b_np, opts.number)

    runners["numpy"] = run_numpy

    # one warm-up, then the measurements, interleaved
    for run in runners.values():
        run()
    samples = {name: [] for name in runners}
    for _ in range(opts.repeat):
        for name, run in runners.items():
            samples[name].append(run())

    rows = {name: summarize(ts, flops) for name, ts in samples.items()}
    print(f"matmul {n}x{n}x{n} float32, {os.cpu_count()} CPU(s), {platform.processor() or platform.machine()}")
    print(f"tecc target {opts.target!r} (cc flags: {' '.join(func_flags(opts.target))})")
    if tvm is not None:
        print(f"tvm {tvm.__version__} target {tvm_desc}")
    print(f"{opts.repeat} measurements of {opts.number} calls each, taken in turn")
    print(f"{'':<8} {'median ms':>10} {'min ms':>9} {'GFLOPS':>8}")
    for name, row in rows.items():
        print(f"{name:<8} {row['median_ms']:10.2f} {row['min_ms']:9.2f} {row['gflops']:8.1f}")
    ratio = None
    if "tvm" in rows:
        # per-round ratios, so a slow moment of the machine hits both sides of one ratio
        per_round = [t_tvm / t_tecc for t_tecc, t_tvm in zip(samples["tecc"], samples["tvm"])]
        ratio = statistics.median(per_round)
        print(f"tecc/tvm throughput: {ratio:.2f} (median of per-round ratios; >1 means tecc is faster)")
    print("scaled max error vs float64: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))

    if opts.out:
        out = {
            "size": n,
            "cpus": os.cpu_count(),
            "tecc_target": opts.target,
            "tvm_target": tvm_desc,
            "tvm_version": getattr(tvm, "__version__", None),
            "tvm_note": tvm_note,
            "repeat": opts.repeat,
            "number": opts.number,
            "rows": rows,
            "ratio_tecc_over_tvm": ratio,
            "errors": errors,
        }
        with open(opts.out, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


def func_flags(target):
    """The C compiler flags tecc uses for ``target``."""
    from tecc.cpu_fallback.compiler import compile_flags
    return compile_flags(target)


if __name__ == "__main__":
    sys.exit(main())
