"""The graph functions of te.schedule (TVM's test_te_schedule_graph.py): who reads
whom, producers-first order, the stages a scan recomputes per step, the loops a stage
is nested in, and which spatial axes of a scan carry no dependence across indices."""
import numpy as np

import tecc
from tecc import te, tir

schedule = te.schedule


def test_read_graph_and_post_order():
    m, l = te.var("m"), te.var("l")
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    g = schedule.CreateReadGraph([A2.op])
    assert list(g[A2.op]) == [A1] and list(g[A1.op]) == [A]
    assert list(schedule.PostDFSOrder([A2.op], g)) == [A.op, A1.op, A2.op]


def _scan_with_side_input():
    m, n = te.var("m"), te.var("n")
    x = te.compute((m, n), lambda i, j: tir.const(1, "float32"), name="x")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: x[0, i], name="init")
    x_trans = te.compute((m, n), lambda i, j: x[i, j] + 1, name="x_trans")
    up1 = te.compute((m, n), lambda t, i: state[t - 1, i] + 1, name="up1")
    update = te.compute((m, n), lambda t, i: up1[t, i] + x_trans[t, i], name="update")
    return te.scan(init, update, state), x_trans, up1, update


def test_scan_body_is_what_depends_on_the_state():
    res, x_trans, up1, update = _scan_with_side_input()
    assert set(schedule.ScanGetBody(res.op)) == {res.op, update.op, up1.op}  # not x_trans
    s = te.create_schedule(res.op)
    assert s[up1].group is s[res] and s[x_trans].group is None


def test_attach_path_runs_from_the_attach_loop_outward():
    res, x_trans, _, update = _scan_with_side_input()
    s = te.create_schedule(res.op)
    s[x_trans].compute_at(s[update], update.op.axis[0])
    path = schedule.CreateAttachPath(s)
    assert tuple(path[update.op]) == (res.op.scan_axis,)
    assert tuple(path[x_trans.op]) == (update.op.axis[0], res.op.scan_axis)
    assert tuple(path[res.op]) == ()


def _fixpoint(update_fn):
    m, n, l = te.var("m"), te.var("n"), te.var("l")
    x = te.compute((l, m, n), lambda *i: tir.const(1, "float32"), name="x")
    state = te.placeholder((l, m, n), name="state")
    init = te.compute((1, m, n), lambda _, i, j: x[0, i, j], name="init")
    update = update_fn(x, state, (l, m, n))
    res = te.scan(init, update, state)
    fx = schedule.ScanFixPointAnalysis(res.op)
    return [int(fx[iv]) for iv in res.op.spatial_axis_]


def test_fixpoint_same_index_is_free_of_cross_index_dependence():
    upd = lambda x, st, sh: te.compute(sh, lambda t, i, j: x[t, j, i] + st[t - 1, i, j], name="u")  # noqa: E731
    assert _fixpoint(upd) == [1, 1]  # the transposed read of x is outside the body


def test_fixpoint_transposed_state_read_couples_both_axes():
    upd = lambda x, st, sh: te.compute(sh, lambda t, i, j: x[t, j, i] + st[t - 1, j, i], name="u")  # noqa: E731
    assert _fixpoint(upd) == [0, 0]


def test_fixpoint_through_intermediate_stages():
    def not_exact(x, st, sh):
        l, m, n = sh
        h1 = te.compute((l, n, m), lambda t, j, i: st[t - 1, i, j], name="h1")
        h2 = te.compute((l, m, n), lambda t, i, j: st[t - 1, i, 10] * 2, name="h2")
        return te.compute(sh, lambda t, i, j: h1[t, j, i] + h2[t, i, j], name="u")

    def reach_other(x, st, sh):
        l, m, n = sh
        h1 = te.compute((l, n, m), lambda t, j, i: st[t - 1, j, j], name="h1")
        h2 = te.compute((l, m, n), lambda t, i, j: st[t - 1, i, j] * 2, name="h2")
        return te.compute(sh, lambda t, i, j: h1[t, j, i] + h2[t, i, j], name="u")

    assert _fixpoint(not_exact) == [1, 0]   # j is read at the constant 10
    assert _fixpoint(reach_other) == [0, 0]  # j flows into the state's i dimension


def test_fixpoint_of_each_output_of_a_multi_output_scan():
    m, n = te.var("m"), te.var("n")
    x1, s1, x2, s2 = (te.placeholder((m, n), name=nm) for nm in ("x1", "s1", "x2", "s2"))
    i1 = te.compute((1, n), lambda _, i: x1[0, i], name="i1")
    i2 = te.compute((1, n), lambda _, i: x2[0, i], name="i2")
    u1 = te.compute((m, n), lambda t, i: s1[t - 1, i] + x1[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: x2[t, i] + s2[t - 1, (i + 1) % n], name="u2")
    r0, r1 = te.scan([i1, i2], [u1, u2], [s1, s2])
    fx = schedule.ScanFixPointAnalysis(r0.op)
    # spatial_axis_ lists the axes of every output: [r0's, r1's]
    assert [int(fx[iv]) for iv in r0.op.spatial_axis_] == [1, 0]  # u2 reads a neighbour
    s = te.create_schedule(r0.op)
    f = tecc.build(s, [x1, x2, r0, r1], "llvm")
    a1, a2 = np.random.rand(4, 5).astype("float32"), np.random.rand(4, 5).astype("float32")
    o0, o1 = np.zeros((4, 5), "float32"), np.zeros((4, 5), "float32")
    f(a1, a2, o0, o1)
    w0, w1 = a1.copy(), a2.copy()
    for t in range(1, 4):
        w0[t] = w0[t - 1] + a1[t]
        w1[t] = a2[t] + np.roll(w1[t - 1], -1)
    np.testing.assert_allclose(o0, w0, rtol=1e-5)
    np.testing.assert_allclose(o1, w1, rtol=1e-5)
