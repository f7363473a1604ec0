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


#: calls enqueued behind one hold of the stream at first: far below the driver's queue
#: of pending launches (about a thousand) for a call of one kernel.  A call of many
#: kernels (a whole model) can fill that queue, and the host then waits on a GPU that
#: waits on the host until the hold times out; :func:`cuda_events` then re-times the
#: region in regions a quarter as long
HOLD_CALLS = 64
#: how long the hold kernel waits for the host before it gives up (seconds)
HOLD_TIMEOUT_S = 0.1

_HOLD_SOURCE = r"""
extern "C" __global__ void tecc_hold_stream(volatile int* flag, unsigned long long timeout_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (flag[0] == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) { flag[1] = 1; return; }
    }
}
"""


class _StreamHold:
    """Keeps the GPU waiting until the host has enqueued a whole timed region.

    Without it, CUDA events around back-to-back launches of a short kernel measure
    the host's launch path (the GPU drains the queue faster than Python fills it),
    not the kernel.  A one-thread kernel launched before the start event spins on a
    flag in mapped host memory; the host sets the flag once the end event is
    enqueued, so the events see the launches back to back, as a graph replay would
    (the approach of nvbench's blocking kernel).  The hold times out after
    ``HOLD_TIMEOUT_S`` when the host cannot finish enqueuing: the region's launches
    filled the driver's queue (:func:`cuda_events` re-times it in shorter regions),
    or one call synchronizes with the device (the hold is switched off for that
    runner; its samples stay valid, host time included).
    """

    def __init__(self):
        import ctypes

        import cupy
        import numpy

        self._cupy, self._np = cupy, numpy
        self._ptr = cupy.cuda.runtime.hostAlloc(8, cupy.cuda.runtime.hostAllocMapped)
        self._flag = (ctypes.c_int * 2).from_address(self._ptr)
        self._kernel = cupy.RawKernel(_HOLD_SOURCE, "tecc_hold_stream")

    def hold(self, stream) -> None:
        self._flag[0] = 0
        self._flag[1] = 0
        args = (self._np.uint64(self._ptr), self._np.uint64(int(HOLD_TIMEOUT_S * 1e9)))
        if stream is None:
            self._kernel((1,), (1,), args)
        else:
            with stream:
                self._kernel((1,), (1,), args)

    def release(self) -> None:
        self._flag[0] = 1

    def timed_out(self) -> bool:
        return bool(self._flag[1])

    def __del__(self):
        try:
            self._cupy.cuda.runtime.freeHost(self._ptr)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


_HOLD = []  # the process's one _StreamHold (its flag and kernel serve every runner), or [None]


def _shared_hold():
    """The process's :class:`_StreamHold`, made on first use (a runner per kernel of a
    profiled model would otherwise each pin host memory); None where mapped host
    memory cannot be had (then nothing is held)."""
    if not _HOLD:
        try:
            _HOLD.append(_StreamHold())
        except Exception:  # noqa: BLE001 - no mapped host memory: time without the hold
            _HOLD.append(None)
    return _HOLD[0]


def cuda_events(fn, flush_l2: bool = False, stream=None, hold: bool = True):
    """A runner timing ``fn()`` with CUDA events recorded on ``stream`` (cupy's current
    one by default).  ``flush_l2`` overwrites a buffer twice the L2 size before every
    run, untimed, so that each run starts with a cold cache.  ``hold`` (the default)
    keeps the GPU waiting until a whole region of up to ``HOLD_CALLS`` calls is
    enqueued, so that the samples are GPU time rather than the host's launch path
    (see :class:`_StreamHold`)."""
    import cupy

    flush = None
    if flush_l2:
        l2 = int(cupy.cuda.Device().attributes.get("L2CacheSize", 64 << 20))
        flush = cupy.empty((2 * l2,), dtype=cupy.uint8)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    holder = _shared_hold() if hold else None
    region = HOLD_CALLS  # calls per hold; shrinks where a region fills the launch queue

    def timed(n: int):
        """``(seconds, the hold timed out)`` of ``n`` calls."""
        if holder is not None:
            holder.hold(stream)
        start.record(stream)
        try:
            for _ in range(n):
                fn()
            end.record(stream)
        finally:
            if holder is not None:
                holder.release()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1e3, holder is not None and holder.timed_out()

    def run_n(n: int) -> float:
        nonlocal holder, region
        if flush is None:
            total, left = 0.0, n
            while left > 0:
                k = min(left, region) if holder is not None else left
                seconds, timed_out = timed(k)
                if timed_out and k > 1:
                    # the host waited for room in the launch queue: the GPU ran while it
                    # enqueued, so the sample is partly the host's; re-time, shorter
                    region = max(1, k // 4)
                    continue
                if timed_out:
                    holder = None  # one call waits on the device: holding only costs time
                total += seconds
                left -= k
            return total
        total = 0.0
        for k in range(n):
            flush.fill(k & 0xFF)
            seconds, timed_out = timed(1)
            if timed_out:
                holder = None
            total += seconds
        return total

    return run_n
