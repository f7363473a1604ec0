"""SASS: the GPU's own instructions in a cubin, as text (``mod.get_source("sass")``).

PTX is what NVRTC emits; ``ptxas`` then picks the instructions the SM runs, and it is
those that show whether a copy moved 16 bytes a thread (``LDG.E.128``) or 2
(``LDG.E.U16``), whether registers spilled (``LDL``/``STL``), how a loop unrolled.
NVIDIA's ``nvdisasm`` prints them from the cubin alone: no GPU, no driver.  It comes
from pip (``nvidia-cuda-nvdisasm``, tecc's ``sass`` extra) or a CUDA toolkit on the
PATH.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..errors import TeccError

#: how long one disassembly may take (seconds)
TIMEOUT_S = 60


def find_nvdisasm() -> str | None:
    """The path of ``nvdisasm``: the pip package's, else the PATH's, else None."""
    try:
        import nvidia  # noqa: PLC0415 -- a namespace package of the CUDA wheels
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", ()):
        for sub in sorted(os.listdir(root), reverse=True):  # cu13, cuda_nvdisasm...
            path = os.path.join(root, sub, "bin", "nvdisasm")
            if os.access(path, os.X_OK):
                return path
    return shutil.which("nvdisasm")


def disassemble(cubin: bytes, what: str = "disassemble") -> str:
    """The SASS of ``cubin``, one instruction a line (``nvdisasm -c``: code sections).

    Raises
    ------
    TeccError
        Without ``nvdisasm`` (the message says how to get it), or when it fails.
    """
    tool = find_nvdisasm()
    if tool is None:
        raise TeccError(f"{what}: SASS needs NVIDIA's nvdisasm, which is not installed; pip install "
                        "nvidia-cuda-nvdisasm (tecc's extra: pip install 'tecc[sass]'), or put a CUDA toolkit's "
                        "bin/ on the PATH")
    with tempfile.TemporaryDirectory(prefix="tecc-sass-") as tmp:
        path = os.path.join(tmp, "kernels.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            done = subprocess.run([tool, "-c", path], capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise TeccError(f"{what}: nvdisasm took more than {TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise TeccError(f"{what}: nvdisasm failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout


__all__ = ["disassemble", "find_nvdisasm"]
