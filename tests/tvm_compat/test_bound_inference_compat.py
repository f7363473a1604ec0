"""Bound inference as TVM's test_te_schedule_bound_inference*.py exercises it: the
region a stage attached with compute_at computes, under symbolic split factors,
tiles whose indices wrap (a modulo), and thread-local caches."""
import numpy as np
import pytest

import tecc
from tecc import te, tir

from compat_te import build, rand, run


def _fused_split_by_a_variable():
    m, l, sp = te.var("m"), te.var("l"), te.var("s")
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    xo, _ = s[A2].split(s[A2].fuse(*A2.op.axis), sp)
    s[A1].compute_at(s[A2], xo)
    return s, (A, A1, A2), (m, l, sp), xo


def test_split_by_a_symbolic_factor_bounds_the_attached_stage():
    # TVM's test_bound_fusesplit1: rows of A1 that one tile of the fused, split A2 reads
    s, (_, A1, _), (_, l, sp), xo = _fused_split_by_a_variable()
    bounds = te.schedule.InferBound(s)
    dom = bounds[A1.op.axis[0]]
    tecc.testing.assert_prim_expr_equal(dom.min, tir.indexdiv(xo.var * sp, l))
    want = tir.indexdiv((xo.var + 1) * sp - 1, l) - tir.indexdiv(xo.var * sp, l) + 1
    ana = tecc.arith.Analyzer()
    for vs, vl, vx in [(1, 1, 1), (3, 5, 2), (5, 2, 4), (4, 4, 3)]:
        values = {sp: tir.const(vs, "int32"), l: tir.const(vl, "int32"), xo.var: tir.const(vx, "int32")}
        got = ana.simplify(tir.stmt_functor.substitute(dom.extent, values))
        assert int(got) == int(ana.simplify(tir.stmt_functor.substitute(want, values)))


@pytest.mark.parametrize("M, L, S", [(5, 7, 3), (4, 4, 16), (3, 5, 1), (6, 2, 4)])
def test_split_by_a_symbolic_factor_runs(M, L, S):
    s, (A, _, A2), (_, _, sp), _ = _fused_split_by_a_variable()
    f = build(s, [A, A2, sp], "llvm")
    a, out = rand(M, L), np.zeros((M, L), "float32")
    f(a, out, S)
    np.testing.assert_allclose(out, a + 3)


def test_split_factor_must_be_an_integer():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(tecc.error.ScheduleError, match="split factor of axis 'i' must be an integer, got `x`"):
        s[B].split(B.op.axis[0], factor=te.var("x", "float32"))


def test_tile_read_through_a_modulo_is_bounded_per_tile():
    # TVM's test_bound_tile_mod: C.shared is written after a second cache_write over a
    # relayout; one tile of C reads 16 of its 64 rows (index (32*n.io + n.ii) // 2)
    A = te.placeholder((256, 256), name="A", dtype="float16")
    C = te.compute((256, 256), lambda n, m: A[n, m], name="C")
    s = te.create_schedule(C.op)
    s.cache_write(C, "local")
    n, m = C.op.axis
    _, _, ni, mi = s[C].tile(n, m, 128, 128)
    _, nii = s[C].split(ni, 2)
    s[C].fuse(nii, mi)
    C_shared = s.cache_write(C, "shared")
    s[C_shared].storage_align(C_shared.op.axis[2], 256, 8)
    n, m = s[C].op.axis
    _, _, ni, _ = s[C].tile(n, m, 128, 128)
    s[C].set_scope("global")
    niio, _ = s[C].split(ni, 32)
    s[C_shared].compute_at(s[C], niio)
    bounds = te.schedule.InferBound(s)
    assert int(bounds[s.stages[2].op.axis[2]].extent) == 16
    f = build(s, [A, C], "llvm")
    a, c = rand(256, 256, dtype="float16"), np.zeros((256, 256), "float16")
    run(f, a, c)
    np.testing.assert_array_equal(c, a)
