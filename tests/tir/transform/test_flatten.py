"""The flatten pass (tir/transform/flatten.py): multi-dimensional accesses become 1-D
(row-major or explicit strides), before/expected IR and interpreter equivalence."""
import numpy as np

from tecc import tir
from tecc.tir import expr as E
from tecc.tir.analysis import verify_well_formed
from tecc.tir.stmt import Allocate, Buffer, BufferStore, PrimFunc, seq
from tecc.tir.transform import flatten
from irhelpers import assert_same_results, buf, loop, lowered_func, var

c = tir.const
RNG = np.random.default_rng(0)


def flat_of(b, size):
    """``b`` as the 1-D buffer of ``size`` elements that flatten makes of it (same data)."""
    return Buffer(b.name, b.dtype, (tir.convert(size),), b.data, b.scope)


def test_flatten_row_major():
    A, B = buf("A", (16, 8)), buf("B", (16, 8))
    i, j = var("i"), var("j")
    f = lowered_func("f", [A, B], loop(i, 16, loop(j, 8, BufferStore(B, A[i, j] * 2.0, (i, j)))))
    g = flatten(f)
    Af, Bf = flat_of(A, 128), flat_of(B, 128)
    want = loop(i, 16, loop(j, 8, BufferStore(Bf, E.BufferLoad(Af, (i * 8 + j,)) * 2.0, (i * 8 + j,))))
    tir.assert_structural_equal(g, PrimFunc(f.params, want, f.buffer_map, f.attrs))
    # the argument buffers keep their shapes, the body's buffers share their data vars
    assert g.buffer_map[A.data] is A
    assert g.body.body.body.buffer.data is B.data
    verify_well_formed(g, require_flat=True)


def test_flatten_symbolic_shape_and_strided_allocate():
    n, m = var("n"), var("m")
    A, B = buf("A", (n, m)), buf("B", (n, m))
    T = buf("T", (4, 5), scope="local", strides=(8, 1))
    i, j = var("i"), var("j")
    body = loop(i, n, Allocate(T, seq(
        loop(j, 4, BufferStore(T, A[i, j], (j, c(1)))),
        loop(j, 4, BufferStore(B, T[j, c(1)], (i, j))))))
    f = lowered_func("f", [A, B, n, m], body)
    g = flatten(f)
    Af, Bf, Tf = flat_of(A, n * m), flat_of(B, n * m), flat_of(T, 32)
    want = loop(i, n, Allocate(Tf, seq(
        loop(j, 4, BufferStore(Tf, E.BufferLoad(Af, (i * m + j,)), (j * 8 + 1,))),
        loop(j, 4, BufferStore(Bf, E.BufferLoad(Tf, (j * 8 + 1,)), (i * m + j,))))))
    tir.assert_structural_equal(g.body, want)
    verify_well_formed(g, require_flat=True)
    a = RNG.random((3, 4), dtype=np.float32)
    assert_same_results(f, g, a, np.zeros((3, 4), np.float32))


def test_flatten_leaves_flat_function_unchanged():
    A = buf("A", (8,))
    i = var("i")
    f = lowered_func("f", [A], loop(i, 8, BufferStore(A, c(1.0), (i,))))
    assert flatten(f) is f
