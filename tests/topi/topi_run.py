"""Shared by the tests of tecc.topi: build an operator for a target, check the CUDA
module for races and out-of-bounds accesses, run it, return the outputs."""
import warnings

import numpy as np

import tecc
from tecc.topi.utils import get_const_tuple

#: the targets every operator is tested on (cuda runs on the GPU emulator here)
TARGETS = ["llvm", "cuda"]

RNG = np.random.default_rng(2024)


def rand(shape, dtype="float32", low=-1.0, high=1.0):
    """Uniform random numbers (integers for integer dtypes)."""
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return RNG.integers(0, 2, size=shape).astype(bool)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def build_run(s, inputs, outputs, arrays, target, extra_args=()):
    """Build ``s`` over ``inputs + outputs`` (then ``extra_args``, e.g. shape
    variables) for ``target``, run it on ``arrays`` (the inputs' values, then the
    values of ``extra_args``) and return the outputs' arrays.  A CUDA module is
    checked first: no races, no out-of-bounds or uninitialized reads."""
    outputs = list(outputs)
    f = tecc.build(s, list(inputs) + outputs + list(extra_args), target)
    values = list(arrays[:len(inputs)])
    scalars = list(arrays[len(inputs):])
    results = []
    for t in outputs:
        shape = [int(d) if isinstance(d, int) else _value_of(d, extra_args, scalars)
                 for d in get_const_tuple(t.shape)]
        results.append(np.zeros(shape, dtype=t.dtype))
    call = values + results + scalars
    if target.startswith("cuda"):
        findings = f.check(*call)
        assert findings == [], "\n".join(str(x) for x in findings)
        for r in results:
            r[...] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no CUDA GPU found: ... emulation"
        f(*call)
    return results


def _value_of(dim, variables, values):
    for v, x in zip(variables, values):
        if dim is v:
            return x
    raise AssertionError(f"dimension {dim} is not one of the shape variables passed")
