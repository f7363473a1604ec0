"""Shared test configuration: ``gpu``-marked tests skip cleanly without a GPU."""
import pytest


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
