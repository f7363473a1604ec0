"""tecc.topi.x86: the packed, register-tiled matmul built for the CPU against numpy,
and its refusal of sizes its tiles do not divide."""
import numpy as np
import pytest

import tecc
from tecc.errors import ScheduleError
from tecc.topi import x86
from tecc.topi.testing import matmul_python


@pytest.mark.parametrize("mr, nr", [(8, 32), (2, 16)])
def test_matmul_packed(mr, nr):
    n = 64
    s, args = x86.matmul_packed(n, mr=mr, nr=nr)
    f = tecc.build(s, args, target="llvm")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n)).astype("float32"), rng.standard_normal((n, n)).astype("float32")
    c = np.zeros((n, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, matmul_python(a, b), rtol=1e-4, atol=1e-4)


def test_matmul_packed_refuses_sizes_the_tile_does_not_divide():
    with pytest.raises(ScheduleError, match="n=48 must be a multiple of mr=8 and nr=32"):
        x86.matmul_packed(48, mr=8, nr=32)
