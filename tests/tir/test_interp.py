"""The reference interpreter (``tecc.tir.analysis.run_prim_func``): the oracle of the
per-pass tests, checked against numpy."""
import numpy as np
import pytest

from tecc import tir
from tecc.tir import expr as E
from tecc.tir.analysis.interp import InterpError
from tecc.tir.stmt import BufferStore
from irhelpers import buf, loop, lowered_func, matmul_func, run_interp, var

c = tir.const
RNG = np.random.default_rng(0)


def test_interpreter_matches_numpy():
    f = matmul_func()
    a, b = RNG.random((8, 8), dtype=np.float32), RNG.random((8, 8), dtype=np.float32)
    _, _, out = run_interp(f, a, b, np.zeros((8, 8), np.float32))
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


def test_interpreter_reports_out_of_bounds():
    A = buf("A", (4,))
    i = var("i")
    f = lowered_func("f", [A], loop(i, 5, BufferStore(A, c(1.0), (i,))))
    with pytest.raises(InterpError, match="out-of-bounds"):
        run_interp(f, np.zeros(4, np.float32))


def test_interpreter_symbolic_shape_and_vectors():
    n = var("n")
    A, B = buf("A", (n,)), buf("B", (n,))
    i = var("i")
    f = lowered_func("f", [A, B, n], loop(i, n // 4, BufferStore(
        B, E.BufferLoad(A, (E.Ramp(i * 4, c(1), 4),)) * E.Broadcast(c(3.0), 4), (E.Ramp(i * 4, c(1), 4),))))
    a = RNG.random(12, dtype=np.float32)
    _, out = run_interp(f, a, np.zeros(12, np.float32))
    np.testing.assert_allclose(out, a * 3)
