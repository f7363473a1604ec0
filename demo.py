"""The tecc demo: ``python -m tecc.demo``.

Declares a matrix multiply, prints the loop IR of a naive and a tiled schedule,
compiles both for the CPU, checks them against numpy and times them.
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    import tecc as tvm
    from tecc import te

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=512, help="matrix size N (N x N x N), a multiple of 32")
    opts = ap.parse_args(argv)
    n = opts.size

    # WHAT: C = A @ B
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")

    # HOW (1): the default schedule, shown on a small size so it prints briefly
    small = te.compute((8, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    print("=== TIR of the naive schedule (8x8 output) ===")
    print(tvm.lower(te.create_schedule(small.op), [A, B, small], simple_mode=True))

    # HOW (2): tiled, vectorized and parallel (and, below, a BLAS-like packed schedule)
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    t0 = time.perf_counter()
    mod = tvm.lower(s, [A, B, C], name="matmul", target="llvm -mcpu=native")
    t_lower = time.perf_counter() - t0
    print("=== TIR of the tiled schedule, as the C printer receives it ===")
    print(mod)

    dev = tvm.cpu(0)
    rng = np.random.default_rng(0)
    a = tvm.nd.array(rng.standard_normal((n, n), dtype="float32"), dev)
    b = tvm.nd.array(rng.standard_normal((n, n), dtype="float32"), dev)
    expected = a.numpy() @ b.numpy()
    flops = 2.0 * n ** 3

    t_np = min(_time(lambda: a.numpy() @ b.numpy()) for _ in range(3))
    print(f"\n{'schedule':<12} {'ms':>9} {'GFLOPS':>9} {'vs numpy':>9}")
    print(f"{'numpy':<12} {t_np * 1e3:9.2f} {flops / t_np / 1e9:9.1f} {1.0:9.2f}")
    from tecc.topi.x86 import matmul_packed

    packed, packed_args = matmul_packed(n)
    for label, sched, args in (("naive", te.create_schedule(C.op), [A, B, C]), ("tiled", s, [A, B, C]),
                               ("packed", packed, packed_args)):
        f = tvm.build(sched, args, target="llvm -mcpu=native", name=f"matmul_{label}")
        c = tvm.nd.empty((n, n), "float32", dev)
        f(a, b, c)
        np.testing.assert_allclose(c.numpy(), expected, rtol=1e-3, atol=1e-3)
        ev = f.time_evaluator(f.entry_name, dev, number=1 if label == "naive" else 5, repeat=3)
        t = ev(a, b, c).mean
        print(f"{label:<12} {t * 1e3:9.2f} {flops / t / 1e9:9.1f} {t_np / t:9.2f}")
    print(f"\nlowering the tiled schedule took {t_lower * 1e3:.1f} ms; results match numpy")
    _gpu_part(tvm)


def _gpu_part(tvm):
    """The same flow for a GPU kernel: row softmax with cross-thread reductions."""
    import warnings

    from tecc.topi.cuda import softmax_rows

    rows, cols = 8, 1000
    s, args = softmax_rows(rows, cols, num_thread=128)
    target = "cuda" if tvm.cuda(0).exist else "cuda -arch=sm_90"
    f = tvm.build(s, args, target=target, name="softmax")
    src = f.imported_modules[0].get_source()
    head = src[src.index("extern \"C\" __global__"):].splitlines()[:12]
    print(f"\n=== CUDA C of a row softmax (first lines; {len(src.splitlines())} in all), cubin for {f.arch} ===")
    print("\n".join(head))
    x = np.random.default_rng(1).standard_normal((rows, cols), dtype=np.float32)
    dev = tvm.cuda(0)
    out = tvm.nd.empty((rows, cols), "float32", dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one-time "running on the CPU emulation" notice
        f(tvm.nd.array(x, dev), out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    where = "on the GPU" if dev.exist else "on the CPU with CUDA semantics (no GPU here)"
    print(f"softmax ran {where}; results match numpy")


def _time(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
