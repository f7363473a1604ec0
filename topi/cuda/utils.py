"""Helpers of the CUDA schedules."""
from __future__ import annotations

import contextlib

from ... import te
from ...errors import ScheduleError
from ...runtime.device import cuda
from ...target import Target
from ...tir.analysis import gpu_limits
from ...tir.analysis.occupancy import REGISTERS_OVERHEAD_MIN, registers_per_thread_cap

#: the architecture a template's filters assume outside a CUDA target and for a
#: plain "cuda" without a GPU: the emulator's, which such a target is built for
#: (cuda_codegen.cuda_arch; with the largest limits of sm_80 and sm_90 the same but
#: shared memory, sm_80's 163 KiB is the smaller)
FILTER_ARCH = "sm_80"
#: multiply-adds one thread's reduction tile may hold (a template's filter refuses
#: more).  NVRTC's time grows with that body, unrolled or not: on the H100 box
#: (2026-11-28) dense candidates of 8192 took 7-45 s to build, 4096 took 9-15 s,
#: 2048 6-12 s, 1024 or fewer 3 s at most; 512-deep tiles had timed out the 60 s
#: build the day before.  A tuning batch waits for its slowest build.  1024 keeps
#: the best SGEMM structure measured there (8 x 8 outputs per thread, k-tiles of 16).
MAX_UNROLLED_MACS = 1024
#: threads a block of a tunable template has at least where the output allows: a
#: block of fewer than a warp leaves lanes of its warp idle.  On the H100 box
#: (2026-11-28) 12 of 32 dense proposals had 1-16 threads; the best configs of the
#: layers with more than a handful of valid trials had 64 or more.
MIN_BLOCK_THREADS = 32


def check_multiple(what, value, factor):
    """Raise unless ``value`` is a multiple of ``factor`` (a tile size)."""
    if value % factor:
        raise ScheduleError(f"{what}={value} must be a multiple of {factor} for this schedule")


def input_tagged(t, tag):
    """The input tensor of ``t``'s stage whose op carries ``tag``."""
    for x in t.op.input_tensors:
        if getattr(x.op, "tag", "") == tag:
            return x
    raise ScheduleError(f"stage {t.op.name!r} reads no tensor tagged {tag!r}; it is not the output this "
                        "schedule expects")


def max_threads(default=256) -> int:
    """Threads per block for a one-dimensional schedule: ``default``, capped by the
    current target's ``max_num_threads`` when it sets one."""
    target = Target.current(allow_none=True)
    limit = target.attrs.get("max_num_threads") if target is not None else None
    return min(default, int(limit)) if limit else default


class BlockBudget:
    """What one CUDA block may use on the architecture a template is tuned for (the
    one the current CUDA target is built for: its ``-arch``, else the local GPU's,
    else the emulator's; :data:`FILTER_ARCH` outside a CUDA target), for the templates'
    ``cfg.multi_filter``: a config whose block cannot fit is never proposed, built
    or measured.  This is a forecast from the knob values with the limits the
    authoritative checks use after lowering (:func:`tecc.tir.analysis.verify_gpu`,
    :func:`~tecc.tir.analysis.occupancy.register_pressure`), which still judge every
    config that is built."""

    def __init__(self, arch=None, min_threads=1):
        if arch is None:
            target = Target.current(allow_none=True)
            if target is not None and target.kind == "cuda":
                arch = target.cuda_arch
                if arch is None and cuda(0).exist:
                    # a plain "cuda" tuned on an H100 is built for sm_90 (the runner asks
                    # the builder for the GPU's arch): the filter judges the same limits
                    arch = cuda(0).arch
        self.limits = gpu_limits(arch or FILTER_ARCH)
        #: the fewest threads a block may have (a tuning policy, not a limit of the
        #: GPU: ``min(MIN_BLOCK_THREADS, outputs)`` for the tunable templates)
        self.min_threads = max(1, int(min_threads))

    def fits(self, threads=(1,), shared_bytes=0, local_bytes=0) -> bool:
        """Whether a block of ``threads`` (its ``threadIdx`` extents, x first) using
        ``shared_bytes`` of shared memory, each thread keeping ``local_bytes`` of
        arrays in registers, fits."""
        lim = self.limits
        total = 1
        for t, most in zip(threads, (lim.max_thread_x, lim.max_thread_y, lim.max_thread_z)):
            if t > most:
                return False
            total *= t
        if total < self.min_threads or total > lim.max_threads_per_block \
                or shared_bytes > lim.max_shared_bytes_optin:
            return False
        need = REGISTERS_OVERHEAD_MIN + -(-int(local_bytes) // 4)
        return need <= registers_per_thread_cap(total, lim.arch)


def pow2_at_least(n, cap) -> int:
    """The smallest power of two that is at least ``n``, at most ``cap``."""
    p = 1
    while p < n and p < cap:
        p *= 2
    return p


def bind_blocks_threads(stage, axis, num_thread):
    """Split ``axis`` of ``stage`` by ``num_thread`` and bind the outer loop to
    ``blockIdx.x``, the inner to ``threadIdx.x``: ``(bx, tx)``."""
    bx, tx = stage.split(axis, factor=num_thread)
    stage.bind(bx, te.thread_axis("blockIdx.x"))
    stage.bind(tx, te.thread_axis("threadIdx.x"))
    return bx, tx


def bind_reduce_axes(stage, num_thread, thread_x):
    """Fuse the reduction axes of ``stage`` and spread them over ``num_thread``
    threads of ``thread_x`` (a cross-thread reduction)."""
    rk = list(stage.op.reduce_axis)
    kk = rk[0] if len(rk) == 1 else stage.fuse(*rk)
    _, ki = stage.split(kk, factor=num_thread)
    stage.bind(ki, thread_x)


@contextlib.contextmanager
def thread_per_item(ib, count: int, threads: int):
    """A kernel of ``ib`` (an IR builder) running one thread per item, ``threads``
    per block at most: inside, the item's index, the threads past ``count`` masked
    off.  For statements whose items share nothing (a matrix's determinant, an
    (image, class) pair's suppression)."""
    nt = min(max_threads(threads), max(count, 1))
    with ib.new_scope():
        bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
        ib.scope_attr(bx, "thread_extent", (count + nt - 1) // nt)
        ib.scope_attr(tx, "thread_extent", nt)
        item = bx * nt + tx
        with ib.if_scope(item < count):
            yield item
