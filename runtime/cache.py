"""The one cache of compiled artifacts: content-addressed files on disk, in memory too.

Every compiler of tecc (the C compiler driver, NVRTC) and the module loader keep
their outputs here, each in a namespace (``c``, ``cuda``, ``modules``) of
``config.cache_dir()``.  A key is the sha256 of everything the output depends on
(:func:`cache_key`); a file is written to a temporary file in the same directory and
moved into place with ``os.replace`` (:func:`atomic_write`), so processes filling
the same cache at once never see a half-written file.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from .. import config


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and
    ``os.replace``: readers see the old file or the whole new one, never a part."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cache_key(*parts) -> str:
    """The sha256 hex digest of ``parts`` (strings or bytes), each one delimited."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


class DiskCache:
    """Files of one namespace of the cache, looked up by key and suffix.

    ``lookup``/``store`` move bytes (kept in memory as well); ``path`` names the
    file of a key for outputs that a tool writes itself (a shared library).
    ``stats`` counts memory hits, disk hits and misses since the last
    :meth:`clear_memory`.
    """

    def __init__(self, namespace: str):
        self.namespace = namespace
        self._memory = {}
        self._lock = threading.Lock()
        self.stats = {"memory_hits": 0, "disk_hits": 0, "misses": 0}

    def directory(self) -> Path:
        """``config.cache_dir()/<namespace>``, created if missing (read at each call,
        so a changed ``TECC_CACHE_DIR`` takes effect at once)."""
        path = config.cache_dir() / self.namespace
        path.mkdir(parents=True, exist_ok=True)
        return path

    def path(self, key: str, suffix: str) -> Path:
        return self.directory() / f"{key}.{suffix}"

    def lookup(self, key: str, suffix: str):
        """The bytes stored under ``key`` (memory first, then disk), or None."""
        with self._lock:
            data = self._memory.get((key, suffix))
            if data is not None:
                self.stats["memory_hits"] += 1
                return data
        try:
            data = self.path(key, suffix).read_bytes()
        except OSError:
            with self._lock:
                self.stats["misses"] += 1
            return None
        with self._lock:
            self._memory[(key, suffix)] = data
            self.stats["disk_hits"] += 1
        return data

    def store(self, key: str, data: bytes, suffix: str) -> Path:
        """Keep ``data`` under ``key`` in memory and on disk (atomic write)."""
        with self._lock:
            self._memory[(key, suffix)] = data
        path = self.path(key, suffix)
        atomic_write(path, data)
        return path

    def clear_memory(self) -> None:
        """Forget the in-memory entries (the files stay) and reset ``stats``."""
        with self._lock:
            self._memory.clear()
            for k in self.stats:
                self.stats[k] = 0
