"""Shared-memory bank conflicts, counted on the CPU from the checking interpreter.

Shared memory is served in 32 banks of 4-byte words.  A warp's access is served in
*wavefronts*: threads that touch distinct words in one bank are served one after the
other, threads that touch the same word share it (a broadcast).  Accesses wider than
4 bytes per thread are served in phases -- 8-byte accesses by half-warps, 16-byte
(float4) accesses by quarter-warps -- and the conflicts are counted per phase.  A
conflict-free access takes one wavefront per phase.

The checking interpreter (:mod:`.check`) runs the threads of a block one after
the other, not in lock-step; a warp-wide access is rebuilt by matching the ``k``-th
execution of a statement by each lane of the warp.  Warps whose lanes take different
paths are matched as well as that allows.  Only the interpreted blocks are counted.

Scratch arrays the simulator adds for warp shuffles are not counted (a GPU exchanges
those values in registers).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...tir import dtype as _dt
from ...tir.printer import to_text

#: banks of 4-byte words
BANKS = 32
WARP = 32
#: buffers the simulator adds in place of warp shuffles
_SIM_SCRATCH_PREFIX = "tecc_shuffle_"


@dataclass(frozen=True)
class SharedAccessStat:
    """The bank behaviour of one shared-memory load or store of one kernel.

    ``requests``: warp-wide instructions counted (a strided vector access is one
    scalar instruction per lane position); ``wavefronts``: what they took;
    ``ideal_wavefronts``: what they would take with no conflict (one per phase).
    ``conflict`` is their ratio: 1.0 is conflict-free, 32.0 serializes a whole warp.
    """

    kernel: str
    buffer: str
    statement: str
    access: str          # "read" or "write"
    bytes_per_thread: int
    requests: int
    wavefronts: int
    ideal_wavefronts: int

    @property
    def conflict(self) -> float:
        return self.wavefronts / self.ideal_wavefronts if self.ideal_wavefronts else 1.0

    def __str__(self):
        return (f"{self.kernel}: {self.access} of shared '{self.buffer}' ({self.bytes_per_thread} B/thread): "
                f"{self.conflict:.2f}x wavefronts ({self.wavefronts} for {self.ideal_wavefronts} ideal, "
                f"{self.requests} warp requests)\n    at: {self.statement}")


def wavefronts(lane_words: dict, width: int) -> tuple:
    """``(wavefronts, ideal)`` of one warp-wide access.

    ``lane_words`` maps a lane (0..31) to the 4-byte word numbers it touches;
    ``width`` is the bytes each thread accesses (8: half-warp phases, 16 and more:
    quarter-warp phases)."""
    per_phase = WARP if width <= 4 else (WARP // 2 if width <= 8 else WARP // 4)
    phases = {}
    for lane, words in lane_words.items():
        phases.setdefault(lane // per_phase, set()).update(words)
    total = 0
    for words in phases.values():
        per_bank = {}
        for w in words:
            per_bank[w % BANKS] = per_bank.get(w % BANKS, 0) + 1
        total += max(per_bank.values())
    return total, len(phases)


class BankCounter:
    """Collects warp-wide shared accesses from the checking interpreter.

    The interpreter calls :meth:`record` for every shared access of a thread,
    :meth:`flush` at every barrier and at the end of a block (every warp-wide access
    is complete then), and :meth:`stats` gives the totals per statement."""

    def __init__(self):
        self._occurrence = {}   # (thread, id(node)) -> executions so far in this block
        self._pending = {}      # (id(node), warp, occurrence) -> {lane: set of words}
        self._meta = {}         # id(node) -> (kernel, buffer, statement, access, width)
        self._totals = {}       # id(node) -> [requests, wavefronts, ideal]

    def record(self, kernel: str, node, original, buf, write: bool, tid: int, offsets) -> None:
        if buf.name.startswith(_SIM_SCRATCH_PREFIX):
            return
        nid = id(node)
        elem = _dt.parse(_dt.element(buf.dtype)).bytes
        if nid not in self._meta:
            self._meta[nid] = (kernel, buf.name, to_text(original), "write" if write else "read",
                               elem * len(offsets))
        key = (tid, nid)
        k = self._occurrence.get(key, 0)
        self._occurrence[key] = k + 1
        warp, lane = divmod(tid, WARP)
        width = elem * len(offsets)
        first = offsets[0]
        if (len(offsets) == 1 or (width in (8, 16) and first * elem % width == 0
                                  and all(o == first + j for j, o in enumerate(offsets)))):
            # one instruction: a scalar, or an aligned contiguous vector (float2/float4)
            words = {(first * elem) // 4} if width <= 4 else set(range(first * elem // 4, (first * elem + width) // 4))
            parts = [(0, width, words)]
        else:
            # a strided or unaligned vector is one scalar access per lane position
            parts = [(j, elem, {(o * elem) // 4}) for j, o in enumerate(offsets)]
        for j, w, words in parts:
            lanes = self._pending.setdefault((nid, warp, k, j, w), {})
            lanes.setdefault(lane, set()).update(words)

    def flush(self) -> None:
        for (nid, _warp, _k, _j, width), lane_words in self._pending.items():
            got, ideal = wavefronts(lane_words, width)
            t = self._totals.setdefault(nid, [0, 0, 0])
            t[0] += 1
            t[1] += got
            t[2] += ideal
        self._pending = {}

    def end_block(self) -> None:
        self.flush()
        self._occurrence = {}

    def stats(self) -> list:
        """One :class:`SharedAccessStat` per statement, the worst conflict first."""
        out = []
        for nid, (requests, got, ideal) in self._totals.items():
            kernel, buffer, statement, access, width = self._meta[nid]
            out.append(SharedAccessStat(kernel, buffer, statement, access, width, requests, got, ideal))
        out.sort(key=lambda s: (-s.conflict, -s.wavefronts))
        return out
