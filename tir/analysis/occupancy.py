"""How a kernel's resources limit it on an SM: occupancy and register pressure.

The lowered IR says how many threads a block has, how much shared memory it
allocates and how large its per-thread (local, register) arrays are; it does not say
how many registers the compiled kernel uses -- ptxas decides that.  This module
estimates from the IR:

* :func:`estimate_occupancy`: resident blocks and warps per SM, and what limits them
  (the tuner's features, ``autotvm.explain``);
* :func:`register_pressure`: whether a kernel's per-thread arrays certainly do not fit
  in the registers a thread may have at its block size (the tuner refuses such a
  config before compiling it).

The per-SM resources come from the CUDA programming guide's table of compute
capabilities; the per-block limits are :func:`.verify_gpu.gpu_limits`'.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import dtype as _dt
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..functor import post_order_visit
from .buffers import allocations, buffer_size
from .threads import threads_per_block
from .verify_gpu import gpu_limits

#: registers per thread assumed by :func:`estimate_occupancy`: the IR does not say how
#: many registers the compiled kernel uses, so a typical count for a tiled kernel is
#: assumed, plus one per 4 bytes of local (register-promoted) arrays
REGISTERS_PER_THREAD_ESTIMATE = 32
#: shared memory the CUDA runtime reserves per block on sm_80 and later
SHARED_RESERVED_PER_BLOCK = 1024


@dataclass(frozen=True)
class SMLimits:
    """Per-SM resources of one compute capability (CUDA programming guide, table of
    technical specifications per compute capability)."""

    arch: str
    max_threads: int
    max_blocks: int
    shared_bytes: int
    registers: int = 65536
    register_unit: int = 256  # registers are allocated per warp in units of this many
    max_registers_per_thread: int = 255
    warp_size: int = 32


# arch number -> (threads per SM, resident blocks per SM, shared memory per SM in KiB)
_SM_TABLE = {
    75: (1024, 16, 64),
    80: (2048, 32, 164),
    86: (1536, 16, 100),
    87: (2048, 32, 164),
    89: (1536, 24, 100),
    90: (2048, 32, 228),
    100: (2048, 32, 228),
    120: (1536, 24, 100),
}


def sm_limits(arch="sm_80") -> SMLimits:
    """The per-SM limits of ``arch`` (``"sm_80"``, ``"sm_90"``, ``80``...).

    Raises
    ------
    TargetError
        If ``arch`` is not a known compute capability (as :func:`gpu_limits`).
    """
    name = gpu_limits(arch).arch
    threads, blocks, shared_kib = _SM_TABLE[int(name[3:])]
    return SMLimits(name, threads, blocks, shared_kib * 1024)


@dataclass(frozen=True)
class Occupancy:
    """How many blocks of a kernel an SM holds at once, and what limits it.

    Attributes
    ----------
    arch : str
    threads_per_block, warps_per_block : int
    registers_per_thread : int
        The estimate (:data:`REGISTERS_PER_THREAD_ESTIMATE` plus local arrays).
    shared_bytes : int
        Shared memory per block.
    blocks_per_sm : int
        0 when the block cannot launch at all.
    limited_by : str
        ``"threads"``, ``"shared"``, ``"registers"``, ``"blocks"`` or ``"launch"`` (the
        block exceeds a per-block limit).
    occupancy : float
        Resident warps over the SM's maximum, in [0, 1].
    """

    arch: str
    threads_per_block: int
    warps_per_block: int
    registers_per_thread: int
    shared_bytes: int
    blocks_per_sm: int
    limited_by: str
    occupancy: float


def estimate_occupancy(threads_per_block: int, shared_bytes: int = 0, local_bytes: int = 0,
                       arch="sm_80") -> Occupancy:
    """Estimate the occupancy of a kernel from what its IR says.

    Parameters
    ----------
    threads_per_block : int
    shared_bytes : int
        Shared memory per block.
    local_bytes : int
        Local (register) arrays per thread; each 4 bytes adds a register to
        :data:`REGISTERS_PER_THREAD_ESTIMATE` -- the real count is known only after
        NVRTC compiles the kernel.
    arch : str

    Returns
    -------
    Occupancy
    """
    sm = sm_limits(arch)
    per_block = gpu_limits(arch)
    threads = max(int(threads_per_block), 1)
    warps = -(-threads // sm.warp_size)
    regs = min(REGISTERS_PER_THREAD_ESTIMATE + -(-int(local_bytes) // 4), sm.max_registers_per_thread)
    if threads > per_block.max_threads_per_block or shared_bytes > per_block.max_shared_bytes_optin:
        return Occupancy(sm.arch, threads, warps, regs, int(shared_bytes), 0, "launch", 0.0)
    regs_per_warp = -(-regs * sm.warp_size // sm.register_unit) * sm.register_unit
    # blocks per SM as each resource allows; on a tie the first listed is reported
    limits = {
        "threads": sm.max_threads // (warps * sm.warp_size),
        "registers": sm.registers // (regs_per_warp * warps),
        "blocks": sm.max_blocks,
    }
    if shared_bytes:  # a kernel without shared memory is never limited by it
        limits["shared"] = sm.shared_bytes // (shared_bytes + SHARED_RESERVED_PER_BLOCK)
    limited_by = min(limits, key=limits.get)
    blocks = limits[limited_by]
    occupancy = min(blocks * warps / (sm.max_threads // sm.warp_size), 1.0)
    return Occupancy(sm.arch, threads, warps, regs, int(shared_bytes), blocks, limited_by, occupancy)


#: registers a thread needs besides its arrays, at the least: indices, addresses, the
#: loop counters (a compiled tiled kernel uses 20 to 40)
REGISTERS_OVERHEAD_MIN = 16


#: the per-thread arrays: local and register arrays, and tensor-core fragments (a
#: warp's, spread over its lanes' registers)
_PER_THREAD = (keys.LOCAL, keys.REGISTER) + keys.WMMA_SCOPES


def thread_bytes(buf) -> int | None:
    """Bytes of ``buf`` one thread holds (None for a symbolic size): a fragment's over
    the warp's lanes."""
    size = buffer_size(buf)
    if not hasattr(size, "value"):
        return None
    nbytes = int(size.value) * _dt.parse(buf.dtype).bytes
    return nbytes // keys.WARP_SIZE if buf.scope in keys.WMMA_SCOPES else nbytes


def local_bytes_per_thread(kernel) -> int | None:
    """Bytes of the local and register arrays (and tensor-core fragments, per lane) a
    thread of ``kernel`` allocates (None when one has a symbolic size)."""
    total = 0
    for buf in allocations(kernel.body, _PER_THREAD):
        nbytes = thread_bytes(buf)
        if nbytes is None:
            return None
        total += nbytes
    return total


def live_local_bytes(kernel) -> tuple:
    """``(bytes, arrays)``: the most bytes of local and register arrays in use at once
    in ``kernel`` (an array is in use from its first access to its last, in program
    order; the copies of a register tile that an unrolled loop makes are used one
    after another, not together), and the arrays in use at that point.  ``(None,
    [])`` when an array has a symbolic size."""
    sizes = {}
    for buf in allocations(kernel.body, _PER_THREAD):
        nbytes = thread_bytes(buf)
        if nbytes is None:
            return None, []
        sizes[buf.data] = (buf, nbytes)
    spans = {}
    clock = [0]

    def use(data):
        clock[0] += 1
        first, _ = spans.get(data, (clock[0], clock[0]))
        spans[data] = (first, clock[0])

    def visit(node):
        if isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer.data in sizes:
            use(node.buffer.data)
        elif isinstance(node, E.Call) and node.op in keys.WMMA_INTRINSICS:  # fragments are used through calls
            for a in node.args:
                if isinstance(a, E.Var) and a in sizes:
                    use(a)

    post_order_visit(kernel.body, visit)
    best, at = 0, []
    for t in sorted({first for first, _ in spans.values()}):
        live = [v for v, (first, last) in spans.items() if first <= t <= last]
        total = sum(sizes[v][1] for v in live)
        if total > best:
            best, at = total, [sizes[v][0] for v in live]
    return best, at


def registers_per_thread_cap(threads: int, arch="sm_80") -> int:
    """Registers a thread may use in a block of ``threads`` threads: the kernels are
    compiled with ``__launch_bounds__(threads)``, so ptxas keeps a block within the
    SM's register file (a warp's registers in units of ``register_unit``) and at most
    255 per thread; what does not fit spills to local memory."""
    sm = sm_limits(arch)
    warps = -(-max(int(threads), 1) // sm.warp_size)
    per_warp = sm.registers // warps // sm.register_unit * sm.register_unit
    return min(sm.max_registers_per_thread, per_warp // sm.warp_size)


def register_pressure(kernel, arch="sm_80") -> str | None:
    """Why ``kernel``'s per-thread arrays cannot stay in registers, or None.

    A thread needs at least :data:`REGISTERS_OVERHEAD_MIN` registers plus one per 4
    bytes of the local arrays it uses at once (:func:`live_local_bytes`) (the accumulators of a thread tile, the register copies
    of shared tiles); when that lower bound exceeds :func:`registers_per_thread_cap`
    for the kernel's block size, the compiled kernel certainly spills.  The message
    names the kernel, the arrays, the bound, the cap and the fix.
    """
    threads = threads_per_block(kernel)
    local, live = live_local_bytes(kernel)
    if threads is None or local is None:
        return None
    need = REGISTERS_OVERHEAD_MIN + -(-local // 4)
    cap = registers_per_thread_cap(threads, arch)
    if need <= cap:
        return None
    # unrolled and vthread-injected tiles are many arrays of one stage ("C.local_0",
    # "C.local_8", ...): one entry per stage, the largest first
    stages = {}
    for b in live:
        name = re.sub(r"_\d+$", "", b.name)
        count, nbytes = stages.get(name, (0, 0))
        stages[name] = (count + 1, nbytes + thread_bytes(b))
    ranked = sorted(stages.items(), key=lambda kv: -kv[1][1])
    arrays = ", ".join(f"{name} {nbytes} B" + (f" in {count} arrays" if count > 1 else "")
                       for name, (count, nbytes) in ranked[:4])
    if len(ranked) > 4:
        arrays += f", {len(ranked) - 4} more"
    return (f"kernel {kernel.name!r} keeps {local} bytes of arrays per thread in use at once ({arrays}): at least {need} "
            f"registers per thread, over the {cap} a thread of a {threads}-thread block gets on "
            f"{sm_limits(arch).arch}; they would spill to local memory: use a smaller tile per thread "
            "or fewer threads per block")


__all__ = ["Occupancy", "REGISTERS_OVERHEAD_MIN", "REGISTERS_PER_THREAD_ESTIMATE", "SHARED_RESERVED_PER_BLOCK",
           "SMLimits", "estimate_occupancy", "local_bytes_per_thread", "register_pressure",
           "registers_per_thread_cap", "sm_limits", "live_local_bytes", "thread_bytes"]
