"""Helpers shared by the te compatibility tests of this folder (test_*_compat.py):
build a schedule for "llvm" or "cuda", run it (a CUDA module is first run in the
emulator's checking mode, which must find no race and no out-of-bounds access), and
bind a stage's axis to blocks and threads."""
import warnings

import numpy as np

import tecc
from tecc import te

TARGETS = ["llvm", "cuda"]

_RNG = np.random.default_rng(2024)


def rand(*shape, dtype="float32", low=0.0, high=1.0):
    """Uniform values in [low, high) (integers in [0, 50) for an integer dtype)."""
    if np.dtype(dtype).kind in "iu":
        return _RNG.integers(0, 50, shape).astype(dtype)
    return _RNG.uniform(low, high, shape).astype(dtype)


def build(s, args, target, **kw):
    """``tecc.build`` of a schedule (or of a lowered module when ``args`` is None)."""
    if args is None:
        return tecc.build(s, target=target, **kw)
    return tecc.build(s, args, target=target, **kw)


def run(mod, *arrays, check=True):
    """Run ``mod`` on numpy ``arrays`` (in place).  A CUDA module is checked first
    (unless ``check`` is false): the emulator's checking mode must report nothing,
    and must leave the arrays as they were."""
    if check and mod.type_key == "cuda":
        before = [np.copy(a) for a in arrays]
        findings = mod.check(*arrays)
        assert findings == [], "\n".join(str(f) for f in findings)
        for a, b in zip(arrays, before):
            np.testing.assert_array_equal(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the GPU emulator's notice
        mod(*arrays)
    return arrays


def build_run(s, args, arrays, target, **kw):
    """Build for ``target`` and run on ``arrays``; the arrays, written in place."""
    return run(build(s, args, target, **kw), *arrays)


def bind_blocks_threads(stage, axis, nthread):
    """Split ``axis`` by ``nthread`` and bind the parts to blockIdx.x / threadIdx.x."""
    bx, tx = stage.split(axis, factor=nthread)
    stage.bind(bx, te.thread_axis("blockIdx.x"))
    stage.bind(tx, te.thread_axis("threadIdx.x"))
    return bx, tx


def bind_fused(stage, nthread=32):
    """Fuse every data axis of ``stage`` and bind it to blocks of ``nthread`` threads."""
    fused = stage.fuse(*stage.op.axis)
    return bind_blocks_threads(stage, fused, nthread)


def source(mod):
    """The printed CUDA source of a CUDA module."""
    return mod.imported_modules[0].get_source()
