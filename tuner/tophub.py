"""Reference tuning records shipped with tecc (TVM's ``autotvm.tophub``).

TVM downloaded pre-tuned logs per backend from its TopHub repository and applied them
in ``relay.build`` whenever the user had applied none.  tecc ships its reference
records inside the package (no download: the GPU machines it runs on are often
offline), one file per backend and architecture in ``tuner/reference_logs/``:
``cuda_sm_90.log`` for Hopper (H100, H200).  Each record is the best valid,
non-emulated config measured for its workload by the correctness-checked tuner,
kept only where it measured faster than the template's fallback config on that
hardware:

================================  =====================  ==============================
workload                          on NVIDIA H100 (sm_90)  the fallback config
================================  =====================  ==============================
conv2d 1x64x56x56, 64 3x3 s1 p1   0.0203 ms               0.0455 ms
conv2d 1x256x14x14, 256 3x3 s1 p1 0.0790 ms               0.1743 ms
dense 4096x4096x4096              6.85 ms                 12.52 ms
sgemm.cuda 4096                   3.007 ms                3.908 ms
================================  =====================  ==============================

(``benchmarks/results/2026-11-28_H100_tune_sgemm_dense.md`` and
``..._tune_conv.md``; the two convolutions are ResNet-50's at batch 1.)

:func:`context` gives the dispatch context of a target's reference records;
``tecc.graph.build`` (``relay.build``) applies it when no other dispatch context is
in effect, as TVM's did: a user's ``apply_history_best`` replaces it entirely.
``TECC_TOPHUB=off`` in the environment turns it off.  A reference record names the
device it was measured on; applying it elsewhere (an H200 for the H100's records) is
what it is for, so, unlike ``apply_history_best``, it warns of no difference in
device or driver.  Every shipped record instantiates and compiles with the current
templates (a test): a record that no longer does is removed, not worked around.
"""
from __future__ import annotations

import functools
import logging
import os

from ..target import Target
from .record import ApplyHistoryBest, load_from_file

logger = logging.getLogger("tecc.autotvm")

#: where the reference records live
LOG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_logs")
#: the environment variable that turns the reference records off ("off", "none", "0")
DISABLE_ENV = "TECC_TOPHUB"
_OFF = ("off", "none", "0", "false", "no")


def enabled() -> bool:
    """False when ``TECC_TOPHUB`` turns the reference records off."""
    return os.environ.get(DISABLE_ENV, "").strip().lower() not in _OFF


def reference_file(target):
    """The reference records of ``target`` (a path), or None when tecc ships none for
    it: for CUDA, ``cuda_<arch>.log`` with the architecture the target compiles for
    (its ``-arch``, else the local GPU's); CPUs have none (their speed depends on more
    than an architecture name)."""
    tgt = Target.canon(target)
    if tgt.kind != "cuda":
        return None
    from ..cuda_codegen import cuda_arch  # noqa: PLC0415

    path = os.path.join(LOG_DIR, f"cuda_{cuda_arch(tgt)}.log")
    return path if os.path.exists(path) else None


class ReferenceContext(ApplyHistoryBest):
    """:class:`ApplyHistoryBest` over reference records: measured on another machine
    by design, so no warning says that the device or driver differ."""

    check_environment = False


@functools.lru_cache(maxsize=8)
def _reference_records(path, mtime) -> tuple:
    """The records of a shipped reference file, read once (``mtime`` keys a file that
    changed): every ``graph.build`` without a dispatch context asks for them."""
    return tuple(load_from_file(path))


def context(target, extra_files=None) -> ReferenceContext:
    """The dispatch context of the reference records of ``target`` (a target or a
    list of them), plus the records of ``extra_files`` (TVM's
    ``autotvm.tophub.context``).  Empty when tecc ships none for the target or
    ``TECC_TOPHUB=off``."""
    targets = target if isinstance(target, (list, tuple)) else [target]
    records = []
    if enabled():
        for tgt in targets:
            path = reference_file(tgt)
            if path is not None:
                records.extend(_reference_records(path, os.path.getmtime(path)))
                logger.debug("tophub: %s", path)
    for path in ([extra_files] if isinstance(extra_files, (str, os.PathLike)) else extra_files or ()):
        records.extend(load_from_file(path))
    return ReferenceContext(records)


__all__ = ["DISABLE_ENV", "LOG_DIR", "ReferenceContext", "context", "enabled", "reference_file"]
