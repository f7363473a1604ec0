"""Cache of compiled CUDA binaries: in memory per process and on disk.

The key is the sha256 of the source, the architecture, the NVRTC options and the
NVRTC version.  A cubin is written to a temporary file in
``config.cache_dir()/cuda`` and moved into place with ``os.replace``, so processes
compiling the same kernel at once never read a half-written file.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from .. import config
from ..runtime.files import atomic_write

_memory: dict = {}
_lock = threading.Lock()
#: counters of the last lookups (for tests and ``tecc`` diagnostics)
stats = {"memory_hits": 0, "disk_hits": 0, "misses": 0}


def cache_key(source: str, arch: str, options, version) -> str:
    """The sha256 hex digest naming one compilation."""
    h = hashlib.sha256()
    for part in (source, arch, "\x1f".join(options), ".".join(str(v) for v in version)):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def cache_directory() -> Path:
    """``config.cache_dir()/cuda`` (created if missing; read at each call)."""
    path = config.cache_dir() / "cuda"
    path.mkdir(parents=True, exist_ok=True)
    return path


def lookup(key: str, suffix: str = "cubin"):
    """The cached bytes of ``key`` (memory first, then disk), or None."""
    with _lock:
        data = _memory.get((key, suffix))
        if data is not None:
            stats["memory_hits"] += 1
            return data
    path = cache_directory() / f"{key}.{suffix}"
    try:
        data = path.read_bytes()
    except OSError:
        with _lock:
            stats["misses"] += 1
        return None
    with _lock:
        _memory[(key, suffix)] = data
        stats["disk_hits"] += 1
    return data


def store(key: str, data: bytes, suffix: str = "cubin") -> Path:
    """Keep ``data`` under ``key`` in memory and on disk (atomic write)."""
    with _lock:
        _memory[(key, suffix)] = data
    directory = cache_directory()
    path = directory / f"{key}.{suffix}"
    atomic_write(path, data)
    return path


def clear_memory() -> None:
    """Forget the in-memory entries (the disk cache stays) and reset ``stats``."""
    with _lock:
        _memory.clear()
        for k in stats:
            stats[k] = 0
