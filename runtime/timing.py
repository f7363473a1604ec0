"""One way of taking timing samples, for every ``time_evaluator`` and the benchmarks.

A *runner* ``run_n(n) -> seconds`` runs the work ``n`` times and says how long that
took; :func:`sample` asks it for ``repeat`` samples, growing ``n`` until a sample
lasts at least ``min_repeat_ms``, and returns seconds per run.  Runners:
:func:`wall_clock` (host work) and :func:`cuda_events` (GPU work on cupy's current
stream, optionally with the L2 cache overwritten before every run).
"""
from __future__ import annotations

import math
import time


def sample(run_n, number: int, repeat: int, min_repeat_ms: float = 0.0) -> list:
    """``repeat`` samples of seconds per run (``number`` runs per sample at least)."""
    n = int(number)
    results = []
    for _ in range(repeat):
        while True:
            elapsed = run_n(n)
            if elapsed * 1e3 >= min_repeat_ms:
                break
            per_run = max(elapsed / n, 1e-9)
            n = max(int(math.ceil(min_repeat_ms / 1e3 / per_run)), int(n * 1.618) + 1)
        results.append(elapsed / n)
    return results


def wall_clock(fn):
    """A runner timing ``fn()`` with the host's performance counter."""
    def run_n(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return time.perf_counter() - start

    return run_n


def cuda_events(fn, flush_l2: bool = False, stream=None):
    """A runner timing ``fn()`` with CUDA events recorded on ``stream`` (cupy's current
    one by default).  ``flush_l2`` overwrites a buffer twice the L2 size before every
    run, untimed, so that each run starts with a cold cache."""
    import cupy

    flush = None
    if flush_l2:
        l2 = int(cupy.cuda.Device().attributes.get("L2CacheSize", 64 << 20))
        flush = cupy.empty((2 * l2,), dtype=cupy.uint8)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def timed(n: int) -> float:
        start.record(stream)
        for _ in range(n):
            fn()
        end.record(stream)
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1e3

    def run_n(n: int) -> float:
        if flush is None:
            return timed(n)
        total = 0.0
        for k in range(n):
            flush.fill(k & 0xFF)
            total += timed(1)
        return total

    return run_n
