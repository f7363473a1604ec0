"""Shared test configuration.

* ``tests/`` is put on ``sys.path``, so that the test files in its subfolders (which
  mirror the source tree: ``tir/transform/``, ``cuda_codegen/``...) import the shared
  helpers as ``from irhelpers import ...`` and ``from schedgen import ...``.  Test
  files have unique basenames and the folders have no ``__init__.py`` (pytest's
  default import mode).
* ``gpu``-marked tests skip cleanly without a GPU.
"""
import os
import sys

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)


def _has_gpu():
    try:
        import tecc
        return bool(tecc.cuda(0).exist)
    except Exception:  # noqa: BLE001 - any failure to find a GPU means "no GPU"
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (tecc.cuda(0).exist is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
