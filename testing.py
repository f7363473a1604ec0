"""Helpers for tests written against the classic TVM API (``tvm.testing``).

tecc builds and runs CUDA code on any machine (on the GPU emulator where there is no
GPU), so the CUDA target is always enabled here and the ``requires_gpu`` family of
decorators does not skip; ``tecc.cuda(0).exist`` tells whether a real GPU runs it.
"""
from __future__ import annotations

import sys

import numpy as np

#: targets tecc builds for (``llvm`` and ``c`` compile C for the CPU; ``cuda`` runs on
#: a GPU or, without one, on the GPU emulator)
ENABLED_TARGETS = ("llvm", "c", "cuda")


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7, verbose=True):
    """``numpy.testing.assert_allclose`` that also takes tecc arrays."""
    actual = actual.numpy() if hasattr(actual, "numpy") else np.asarray(actual)
    desired = desired.numpy() if hasattr(desired, "numpy") else np.asarray(desired)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=verbose)


def device_enabled(target) -> bool:
    """True if tecc can build for and run on ``target`` (a string or Target)."""
    kind = str(target).split()[0] if str(target).strip() else ""
    return kind in ENABLED_TARGETS


def enabled_targets() -> list:
    """``[(target, device)]`` for every enabled target."""
    from .runtime.device import cpu, cuda

    return [("llvm", cpu(0)), ("cuda", cuda(0))]


def _passthrough(func=None, *args, **kwargs):
    """A decorator that runs the test as it is (used with or without arguments)."""
    if callable(func) and not args and not kwargs:
        return func
    return lambda f: f


#: CUDA tests run everywhere in tecc (the emulator stands in for a missing GPU)
requires_gpu = requires_cuda = uses_gpu = requires_llvm = _passthrough


def main():
    """Run the calling test file with pytest (``tvm.testing.main()``)."""
    import pytest

    sys.exit(pytest.main([sys.argv[0]] + sys.argv[1:]))
