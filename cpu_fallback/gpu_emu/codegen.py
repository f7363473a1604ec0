"""The C printer of the GPU emulator: kernels split by :mod:`.split` as C functions
that run their whole grid (blocks in an OpenMP loop, each block's threads in loops
between the barriers)."""
from __future__ import annotations

from ...errors import CompileError
from ...tir.printer import to_text
from ..codegen_c import CodeGenC


class CodeGenSim(CodeGenC):
    """C printer of :meth:`~.split.SimKernel.sim_func`: barriers are the seams between
    the thread loops, and per-thread copies are indexed ``[tid, i]``."""

    #: a kernel cannot call Python (tir.call_packed), on a GPU or here
    PACKED_CALLS = False

    def print_barrier(self, call) -> None:
        self.emit("// __syncthreads(): every thread finished the loop above")

    def visit_unknown_call(self, e):
        raise CompileError(
            f"the GPU emulator does not know the intrinsic {e.op!r} (in `{to_text(e)}`); "
            "it runs barriers (tvm_storage_sync), math functions, if_then_else, likely, "
            "bitwise_* and shift_*")


def emulation_source(sims) -> str:
    """One C translation unit exporting ``int32 <kernel>(params...)`` for every split
    kernel of ``sims``; each runs the kernel's whole grid."""
    gen = CodeGenSim()
    for sim in sims:
        gen.add_function(sim.sim_func())
    return gen.finish()
