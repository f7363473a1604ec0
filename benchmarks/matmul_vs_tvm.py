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

The kernel's speed depends on where A, B and C lie relative to each other modulo
4 KiB (the L1 set index and the store-to-load alias check use the low 12 address
bits), so each measurement is made on three layouts:

    own        each library's own arrays (tecc.nd.array / tvm.runtime.tensor);
               tecc staggers large arrays by 832 bytes mod 4096 (runtime.ndarray.host_empty)
    aliased    shared buffers, all three at 64 bytes mod 4096
    staggered  shared buffers at 0, 1408 and 2816 bytes mod 4096

In the two shared layouts tecc and TVM work on the very same memory (64-byte
aligned numpy buffers, handed to TVM through DLPack), so only the code differs.

Both get the same number of threads (--threads, default all CPUs): tecc's OpenMP
through OMP_NUM_THREADS and TVM's pool through TVM_NUM_THREADS, set before either
starts its threads.  Left alone, TVM takes half the logical CPUs (it assumes two
hardware threads per core), i.e. one thread on a 2-CPU machine, while tecc takes all.

``-mcpu=native`` is handed to TVM as the CPU name its LLVM reports for this machine:
some TVM wheels ship an LLVM whose target triple rejects ``native`` and silently
falls back to ``generic`` (SSE2, no FMA), which would not be the same comparison.
"""
from __future__ import annotations

import argparse
import ctypes
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
    except ImportError as err:
        return None, f"apache-tvm is not importable here ({err})"
    if not hasattr(tvm, "te"):
        return None, f"tvm {tvm.__version__} has no tvm.te"
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


def openmp_threads():
    """Threads tecc's OpenMP code will use (libgomp's view), or '?'."""
    try:
        return ctypes.CDLL("libgomp.so.1").omp_get_max_threads()
    except (OSError, AttributeError):
        return "?"


def tvm_threads(tvm):
    """Threads in TVM's CPU thread pool, or '?'."""
    try:
        return tvm.get_global_func("runtime.NumThreads")()
    except Exception:  # the name differs between TVM versions
        return "?"


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


LAYOUTS = ("own", "aliased", "staggered")

#: byte offsets mod 4096 of A, B, C in the shared layouts
OFFSETS = {"aliased": (64, 64, 64), "staggered": (0, 1408, 2816)}


def page_offset(array):
    """Byte address of ``array``'s data modulo 4096."""
    return int(array.ctypes.data % 4096)


def buffer_at(src, offset):
    """A copy of ``src`` whose data starts ``offset`` bytes (mod 4096) into a page
    (the returned view keeps its larger buffer alive)."""
    raw = np.empty(src.nbytes + 8192, np.uint8)
    start = (offset - raw.ctypes.data) % 4096
    out = raw[start:start + src.nbytes].view(src.dtype).reshape(src.shape)
    out[...] = src
    return out


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
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for both tecc (OpenMP) and TVM (default: all CPUs)")
    ap.add_argument("--layout", choices=LAYOUTS + ("all",), default="all",
                    help="where A, B and C lie (see above); default: each in turn")
    ap.add_argument("--show-ir", action="store_true", help="print both loop nests")
    ap.add_argument("--out", help="also write the figures to this JSON file")
    opts = ap.parse_args(argv)

    # before tecc loads libgomp (with its first library) and before TVM starts its pool
    os.environ["OMP_NUM_THREADS"] = str(opts.threads)
    os.environ["TVM_NUM_THREADS"] = str(opts.threads)

    n = opts.size
    flops = 2.0 * n ** 3
    rtol = 1e-4
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n), dtype=np.float32)
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)

    func = build_tecc(n, opts.target, opts.show_ir)
    tecc_dev = tecc.cpu(0)
    tecc_eval = func.time_evaluator(func.entry_name, tecc_dev, number=opts.number, repeat=1)

    tvm, schedule_cls = import_tvm()
    tvm_note = None
    tvm_desc = None
    tvm_eval = None
    if tvm is None:
        tvm_note = schedule_cls
        print(f"note: {tvm_note}; measuring tecc and numpy only.")
    else:
        mcpu = opts.tvm_mcpu or tvm_cpu_name(tvm, tecc.target.Target(opts.target).mcpu)
        try:
            tvm_mod, tvm_desc = build_tvm(tvm, schedule_cls, n, mcpu, opts.show_ir)
        except Exception as err:  # an API this script does not know
            tvm_note = f"building the schedule with tvm {tvm.__version__} failed: {err}"
            print(f"note: {tvm_note}; measuring tecc and numpy only.")
            tvm = None
    if tvm is not None:
        tvm_dev = tvm.cpu(0)
        tvm_eval = tvm_mod.time_evaluator("main", tvm_dev, number=opts.number, repeat=1)

    def operands(layout):
        """``{runner name: (A, B, C)}`` for ``layout`` and the page offsets used."""
        c_np = np.zeros((n, n), np.float32)
        if layout == "own":
            ours = (
                tecc.nd.array(a_np, tecc_dev),
                tecc.nd.array(b_np, tecc_dev),
                tecc.nd.empty((n, n), "float32", tecc_dev),
            )
            ops = {"tecc": ours}
            # the NDArray's own numpy buffer (x.numpy() would be a copy elsewhere)
            offsets = {"tecc": [page_offset(np.asarray(x._data)) for x in ours]}
            if tvm is not None:
                theirs = tuple(tvm_tensor(tvm, x, tvm_dev) for x in (a_np, b_np, c_np))
                ops["tvm"] = theirs
                offsets["tvm"] = [page_offset(np.from_dlpack(x)) for x in theirs]
            return ops, offsets
        shared = [buffer_at(x, off) for x, off in zip((a_np, b_np, c_np), OFFSETS[layout])]
        ops = {"tecc": tuple(shared)}
        if tvm is not None:
            ops["tvm"] = tuple(tvm.runtime.from_dlpack(x) for x in shared)
        offsets = {"shared": [page_offset(x) for x in shared]}
        return ops, offsets

    def result_of(name, ops):
        c = ops[2]
        if name == "tecc":
            return c.numpy() if hasattr(c, "numpy") else np.array(c)
        return np.from_dlpack(c).copy()

    def measure(layout):
        ops, offsets = operands(layout)
        evals = {"tecc": tecc_eval}
        if tvm_eval is not None:
            evals["tvm"] = tvm_eval
        runners = {}
        errors = {}
        for name, ev in evals.items():
            args = ops[name]
            if name == "tecc":
                func(*args)
            else:
                tvm_mod["main"](*args)
            errors[name] = check(f"{name} ({layout})", result_of(name, args), ref, rtol)
            runners[name] = (lambda ev=ev, args=args: ev(*args).mean)
        for run in runners.values():  # warm-up
            run()
        # tecc and TVM in turn, the order swapped every round: each runtime's worker
        # threads spin for a while after a call and slow down whatever runs next
        samples = {name: [] for name in runners}
        names = list(runners)
        for r in range(opts.repeat):
            for name in (names if r % 2 == 0 else names[::-1]):
                samples[name].append(runners[name]())
        return samples, offsets, errors

    layouts = LAYOUTS if opts.layout == "all" else (opts.layout,)
    print(f"matmul {n}x{n}x{n} float32, {os.cpu_count()} CPU(s), {platform.processor() or platform.machine()}")
    print(f"tecc target {opts.target!r} (cc flags: {' '.join(func_flags(opts.target))})")
    print(f"tecc threads: {openmp_threads()}")
    if tvm is not None:
        print(f"tvm {tvm.__version__} target {tvm_desc}, threads: {tvm_threads(tvm)}")
    who = "tecc and tvm in turn" if tvm is not None else "tecc"
    print(f"{opts.repeat} measurements of {opts.number} calls each, {who}")
    print(f"{'layout':<10} {'':<6} {'median ms':>10} {'min ms':>9} {'GFLOPS':>8} {'tecc/tvm':>9}")
    results = {}
    numpy_samples = [time_numpy(a_np, b_np, opts.number) for _ in range(opts.repeat)]
    for layout in layouts:
        samples, offsets, errors = measure(layout)
        rows = {name: summarize(ts, flops) for name, ts in samples.items()}
        ratio = None
        if "tvm" in samples:
            # per-round ratios, so a slow moment of the machine hits both sides of one ratio
            per_round = [t_tvm / t_tecc for t_tecc, t_tvm in zip(samples["tecc"], samples["tvm"])]
            ratio = statistics.median(per_round)
        for name, row in rows.items():
            shown = f"{ratio:9.2f}" if (ratio is not None and name == "tecc") else ""
            print(f"{layout:<10} {name:<6} {row['median_ms']:10.2f} {row['min_ms']:9.2f} {row['gflops']:8.1f} {shown}")
        where = "; ".join(f"{k} {v}" for k, v in offsets.items())
        print(f"{'':<10} A, B, C bytes mod 4096: {where}; scaled error: "
              + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
        results[layout] = {
            "rows": rows,
            "ratio_tecc_over_tvm": ratio,
            "page_offsets": offsets,
            "errors": errors,
        }
    # numpy (OpenBLAS) as the reference, timed apart: its threads spin after each call
    numpy_samples += [time_numpy(a_np, b_np, opts.number) for _ in range(opts.repeat)]
    results["numpy"] = summarize(numpy_samples, flops)
    row = results["numpy"]
    print(f"{'':<10} {'numpy':<6} {row['median_ms']:10.2f} {row['min_ms']:9.2f} {row['gflops']:8.1f}")
    if tvm is not None:
        print("tecc/tvm: tecc's throughput over TVM's, median of per-round ratios (>1: tecc faster)")

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
            "layouts": results,
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
