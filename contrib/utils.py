"""Temporary directories (TVM's ``tvm.contrib.utils``)."""
from __future__ import annotations

import os
import pathlib
import shutil
import tempfile


class TempDirectory:
    """A directory removed when the object is (``tempdir()``); ``relpath(name)`` is
    the path of ``name`` inside it."""

    def __init__(self, custom_path=None, keep_for_debug=False):
        if custom_path:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = custom_path
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="tecc_")
        self._remove = not (keep_for_debug or custom_path)

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    @property
    def path(self) -> pathlib.Path:
        """The directory as a ``pathlib.Path`` (``tempdir() / "name"`` joins onto it)."""
        return pathlib.Path(self.temp_dir)

    def __truediv__(self, other) -> pathlib.Path:
        return self.path / other

    def listdir(self) -> list:
        return os.listdir(self.temp_dir)

    def remove(self) -> None:
        if self._remove and os.path.isdir(self.temp_dir):
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        self._remove = False

    def __del__(self):
        self.remove()

    def __repr__(self) -> str:
        return self.temp_dir


def tempdir(custom_path=None, keep_for_debug=False) -> TempDirectory:
    """A fresh temporary directory."""
    return TempDirectory(custom_path, keep_for_debug)
