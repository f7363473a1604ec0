"""TVM's name before v0.8 for :mod:`tecc.contrib.utils` (``util.tempdir()``)."""
from .utils import TempDirectory, tempdir  # noqa: F401

__all__ = ["TempDirectory", "tempdir"]
