"""Each topi test draws its inputs from a generator seeded by its own name, so its
inputs do not depend on which tests ran before it in the same worker (pytest-xdist
spreads tests differently from run to run)."""
import zlib

import numpy as np
import pytest

import topi_run


@pytest.fixture(autouse=True)
def _seed_inputs(request):
    topi_run.RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    yield
