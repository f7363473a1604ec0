"""Every environment switch tecc reads, declared in one place.

Switches are read lazily, each time a value is needed (never at import time), so a
test or a user may change ``os.environ`` at any point and the next build sees it.

=====================  ==================  ============================================
variable               default             meaning
=====================  ==================  ============================================
``TECC_CACHE_DIR``     ``~/.cache/tecc``   on-disk cache of compiled libraries
``CC``                 ``cc``              the C compiler of the CPU backend
``TECC_CFLAGS``        (empty)             extra C compiler flags, split like a shell
``TECC_REQUIRE_GPU``   ``0``               ``1``: a CUDA module called without a GPU
                                           raises instead of running on the CPU emulation
``CUDA_HOME``          (empty)             a CUDA toolkit whose ``include/`` holds
                                           ``cuda_fp16.h`` (when pip's headers are absent)
``GOMP_SPINCOUNT``     ``30000``           how long an idle OpenMP thread spins before it
                                           sleeps (GCC's libgomp reads it); tecc sets it
                                           before its first compiled library loads,
                                           unless it or ``OMP_WAIT_POLICY`` is set
=====================  ==================  ============================================
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Switch:
    """One environment variable: its name, default and meaning."""

    name: str
    default: str
    doc: str

    def read(self) -> str:
        """The current value (the default when the variable is unset or empty)."""
        value = os.environ.get(self.name, "")
        return value if value.strip() else self.default


CACHE_DIR = Switch("TECC_CACHE_DIR", "~/.cache/tecc", "directory of the on-disk compile cache")
CC = Switch("CC", "cc", "C compiler used by the CPU backend")
CFLAGS = Switch("TECC_CFLAGS", "", "extra flags passed to the C compiler (shell syntax)")
REQUIRE_GPU = Switch("TECC_REQUIRE_GPU", "0",
                     "1: calling a CUDA module without a GPU is an error (no CPU emulation)")
CUDA_HOME = Switch("CUDA_HOME", "", "CUDA toolkit directory searched for cuda_fp16.h/cuda_bf16.h")

GOMP_SPINCOUNT = Switch(
    "GOMP_SPINCOUNT", "30000",
    "spins of an idle OpenMP thread before it sleeps (libgomp's own default, 300000, is about a millisecond)")

TEST_DATA = Switch("TECC_TEST_DATA", "~/.tecc/test_data",
                   "folder of the files tecc.contrib.download.download_testdata fetches")

CLANG = Switch("TECC_CLANG", "", "clang command for LLVM IR given to an import_llvm pragma (default: clang on the PATH)")

#: all switches, for documentation and ``describe()``
SWITCHES = (CACHE_DIR, CC, CFLAGS, REQUIRE_GPU, CUDA_HOME, GOMP_SPINCOUNT, TEST_DATA, CLANG)


def cache_dir() -> Path:
    """The cache directory (created if missing)."""
    path = Path(os.path.expanduser(CACHE_DIR.read()))
    path.mkdir(parents=True, exist_ok=True)
    return path


def c_compiler() -> list:
    """The C compiler command as an argument list (``CC`` may hold flags: ``"ccache gcc"``)."""
    return shlex.split(CC.read())


def extra_cflags() -> list:
    """Extra C compiler flags from ``TECC_CFLAGS``."""
    return shlex.split(CFLAGS.read())


def require_gpu() -> bool:
    """True when ``TECC_REQUIRE_GPU`` asks CUDA modules to refuse the CPU emulation."""
    return REQUIRE_GPU.read().strip().lower() not in ("0", "", "false", "no", "off")


def openmp_environment() -> None:
    """Give libgomp tecc's spin count (:data:`GOMP_SPINCOUNT`) unless the user chose a
    wait policy or a spin count: called before a compiled library, and the libgomp it
    links, is first loaded (libgomp reads its environment once, when it loads).

    libgomp's own default keeps every idle thread spinning for about a millisecond
    after a parallel loop.  A model runs a kernel every few microseconds, so a much
    shorter spin keeps the threads awake between kernels just as well, and it stops
    spinning threads from taking the cores the next kernel needs when the machine
    is busy with other work.  On this project's 2-core VM with two other processes
    spinning (2026-11-27, benchmarks of ResNet-50, SqueezeNet and a transformer
    encoder layer against onnxruntime), 30000 spins took tecc from 0.52x to 0.85x
    onnxruntime's speed on ResNet-50 and from 0.47x to 0.90x on the encoder layer;
    on the idle machine the ratios stayed within the run-to-run noise, while
    ``OMP_WAIT_POLICY=passive`` (no spinning) made the encoder layer 5x slower."""
    if "OMP_WAIT_POLICY" in os.environ or GOMP_SPINCOUNT.name in os.environ:
        return
    os.environ[GOMP_SPINCOUNT.name] = GOMP_SPINCOUNT.default


def describe() -> str:
    """A table of every switch with its current value."""
    lines = []
    for s in SWITCHES:
        lines.append(f"{s.name:16} = {s.read()!r:30} # {s.doc} (default {s.default!r})")
    return "\n".join(lines)
