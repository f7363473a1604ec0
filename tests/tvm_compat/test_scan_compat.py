"""``te.scan`` as TVM's classic-TE tests use it: a cumulative sum with a consumer,
several outputs, stages of the update ``compute_inline``'d, the scan axis's bound from
``te.schedule.InferBound``, an LSTM cell (reductions in the update, ``inputs=``) and
the group the update's stages form -- built for "llvm" and for "cuda" (a host loop of
launches on the emulator, race-checked, with init, update and consumer bound to
threads)."""
import numpy as np
import pytest

import tecc
from tecc import te, tir
from compat_te import TARGETS, bind_blocks_threads, build, build_run, rand, run
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _cumsum(m, n):
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n), name="s_state")
    s_init = te.compute((1, n), lambda _, i: X[0, i], name="s_init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i], name="s_update")
    return X, s_state, s_init, s_update, te.scan(s_init, s_update, s_state)


def test_scan_result_has_the_states_shape_and_one_output():
    m, n = te.size_var("m"), te.size_var("n")
    *_, res = _cumsum(m, n)
    assert isinstance(res.op, te.ScanOp) and isinstance(res, te.Tensor)
    assert tuple(res.shape) == (m, n) and res.value_index == 0 and res.op.num_outputs == 1


@pytest.mark.parametrize("target", TARGETS)
def test_scan_cumsum_with_a_consumer(target):
    m, n = te.size_var("m"), te.size_var("n")
    X, _, s_init, s_update, scan = _cumsum(m, n)
    res = te.compute((m, n), lambda i, j: scan[i, j], name="res")
    s = te.create_schedule(res.op)
    if target == "cuda":
        num_thread = 256
        block_x = te.thread_axis(None, "blockIdx.x")
        thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
        for T in (s_init, s_update, res):
            xo, xi = s[T].split(T.op.axis[1], factor=num_thread)
            s[T].bind(xo, block_x)
            s[T].bind(xi, thread_x)
    f = build(s, [X, res], target, name="myscan")
    for shape in ((10, 300), (1, 5)):  # a partial last block; a scan of its init row only
        x, r = rand(*shape), np.zeros(shape, "float32")
        run(f, x, r)
        np.testing.assert_allclose(r, np.cumsum(x, axis=0), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_scan_axis_bound_starts_after_the_init_rows(target):
    m, n = te.var("m"), te.var("n")
    x = te.compute((m, n), lambda i, j: tir.const(1, "float32"), name="x")
    s_state = te.placeholder((m, n), name="s_state")
    s_init = te.compute((1, n), lambda _, i: x[0, i], name="s_init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + x[t, i], name="s_update")
    res = te.scan(s_init, s_update, s_state)
    assert tuple(res.shape) == (m, n)
    s = te.create_schedule(res.op).normalize()
    with pytest.warns(UserWarning, match="not in the argument list"):  # (TVM's test lowers [s_state] only)
        assert tecc.lower(s, [s_state], simple_mode=True) is not None
    bounds = te.schedule.InferBound(s)
    assert bounds[res.op.scan_axis].min.value == 1
    assert te.schedule.ScheduleOps(s, bounds) is not None
    # x has no placeholder behind it: built with x as an output, res[t, i] = t + 1
    s = te.create_schedule(res.op)
    if target == "cuda":
        for T in (x, s_init, s_update):
            bind_blocks_threads(s[T], T.op.axis[1], 32)
    xs, r = np.zeros((6, 40), "float32"), np.zeros((6, 40), "float32")
    build_run(s, [x, res], [xs, r], target)
    np.testing.assert_array_equal(xs, 1)
    np.testing.assert_array_equal(r, np.repeat(np.arange(1, 7, dtype="float32")[:, None], 40, axis=1))


@pytest.mark.parametrize("target", TARGETS)
def test_scan_with_two_coupled_outputs(target):
    m, n = te.size_var("m"), te.size_var("n")
    x1, x2 = te.placeholder((m, n), name="x1"), te.placeholder((m, n), name="x2")
    s1, s2 = te.placeholder((m, n), name="s1"), te.placeholder((m, n), name="s2")
    s1_init = te.compute((1, n), lambda _, i: x1[0, i], name="s1_init")
    s2_init = te.compute((1, n), lambda _, i: x2[0, i], name="s2_init")
    s1_update = te.compute((m, n), lambda t, i: s1[t - 1, i] + s2[t - 1, i] + x1[t, i], name="s1_update")
    s2_update = te.compute((m, n), lambda t, i: x2[t, i] + s2[t - 1, i], name="s2_update")
    r0, r1 = te.scan([s1_init, s2_init], [s1_update, s2_update], [s1, s2])
    assert (r0.value_index, r1.value_index) == (0, 1) and r0.op is r1.op
    s = te.create_schedule(r0.op)
    if target == "cuda":
        for T in (s1_init, s2_init, s1_update, s2_update):
            bind_blocks_threads(s[T], T.op.axis[1], 16)
    a1, a2 = rand(7, 20), rand(7, 20)
    o0, o1 = np.zeros((7, 20), "float32"), np.zeros((7, 20), "float32")
    build_run(s, [x1, x2, r0, r1], [a1, a2, o0, o1], target)
    want1 = np.cumsum(a2, axis=0)
    want0 = a1.copy()
    for t in range(1, 7):
        want0[t] = want0[t - 1] + want1[t - 1] + a1[t]
    np.testing.assert_allclose(o1, want1, rtol=1e-5)
    np.testing.assert_allclose(o0, want0, rtol=1e-5)


def test_scan_op_round_trips_through_save_json():
    m, n = te.size_var("m"), te.size_var("n")
    *_, res = _cumsum(m, n)
    loaded = tecc.ir.load_json(tecc.ir.save_json(res.op))
    assert isinstance(loaded, te.ScanOp)
    assert loaded.name == res.op.name
    assert len(loaded.update) == len(res.op.update) == 1
    assert [str(d) for d in loaded.output(0).shape] == [str(d) for d in res.shape]


# ---------------------------------------------------------------------------------------
# stages of the update inlined
# ---------------------------------------------------------------------------------------
def _two_scans(n_inline):
    """Two scans over x = 1.  With ``n_inline`` 1, TVM's test_scan_inline1 (x1 inlined
    into the first update); with 2, test_scan_inline2 (xx, x1 and x2 inlined; x2 also
    reads element 2 of the second state's previous row)."""
    m, n = te.var("m"), te.var("n")
    x = te.compute((m, n), lambda i, j: tir.const(1, "float32"), name="x")
    s_state1, s_state2 = te.placeholder((m, n), name="s1"), te.placeholder((m, n), name="s2")
    s_init1 = te.compute((1, n), lambda _, i: x[0, i], name="init1")
    s_init2 = te.compute((1, n), lambda _, i: x[0, i], name="init2")
    if n_inline == 1:
        s_x1 = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + x[t, i], name="x1")
        s_x2 = te.compute((m, n), lambda t, i: s_state2[t - 1, i] + 1, name="x2")
        inlined = [s_x1]
    else:
        s_xx = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + x[t, i], name="xx")
        s_x1 = te.compute((m, n), lambda t, i: s_xx[t, i] + 1, name="x1")
        s_x2 = te.compute((m, n), lambda t, i: s_xx[t, i] + s_state2[t - 1, 2], name="x2")
        inlined = [s_xx, s_x1, s_x2]
    s_update1 = te.compute((m, n), lambda t, i: s_x1[t, i], "u1")
    s_update2 = te.compute((m, n), lambda t, i: s_x2[t, i], "u2")
    res1, res2 = te.scan([s_init1, s_init2], [s_update1, s_update2], [s_state1, s_state2])
    s = te.create_schedule(res1.op)
    for T in inlined:
        s[T].compute_inline()
    stages = [x, s_init1, s_init2, s_update1, s_update2] + ([s_x2] if n_inline == 1 else [])
    return s, stages, [x, res1, res2]


def _two_scans_reference(n_inline, m, n):
    r1, r2 = np.ones((m, n), "float32"), np.ones((m, n), "float32")
    for t in range(1, m):
        if n_inline == 1:
            r1[t], r2[t] = r1[t - 1] + 1, r2[t - 1] + 1
        else:
            r1[t] = r1[t - 1] + 2
            r2[t] = r1[t - 1] + 1 + r2[t - 1, 2]
    return r1, r2


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n_inline", [1, 2], ids=["scan_inline1", "scan_inline2"])
def test_scan_with_inlined_stages_of_its_updates(target, n_inline):
    s, stages, args = _two_scans(n_inline)
    mod = tecc.lower(s, args)
    assert isinstance(mod, tecc.IRModule)
    text = str(mod)
    for name in ("xx", "x1") if n_inline == 2 else ("x1",):  # inlined: never stored
        assert f"{name}[" not in text
    if target == "cuda":
        for T in stages:
            bind_blocks_threads(s[T], T.op.axis[1], 8)
    m, n = 5, 12
    xs, o1, o2 = (np.zeros((m, n), "float32") for _ in range(3))
    build_run(s, args, [xs, o1, o2], target)
    w1, w2 = _two_scans_reference(n_inline, m, n)
    np.testing.assert_allclose(o1, w1)
    np.testing.assert_allclose(o2, w2)


def test_lstm_scan_with_reductions_in_its_update_and_inlined_gates():
    # TVM's test_te_schedule_lstm.py, small: two states (h, c), matrix products of
    # the input and of the previous h in every step, the gates inlined; X is given as
    # the scan's input (inputs=)
    steps, batch, n_in, n_hid = 4, 2, 3, 5
    X = te.placeholder((steps - 1, batch, n_in), name="X")
    Wx = te.placeholder((4, n_hid, n_in), name="Wx")
    Wh = te.placeholder((4, n_hid, n_hid), name="Wh")
    h_state = te.placeholder((steps, batch, n_hid), name="h_state")
    c_state = te.placeholder((steps, batch, n_hid), name="c_state")
    h_init = te.compute((1, batch, n_hid), lambda *_: te.const(0.0), name="h_init")
    c_init = te.compute((1, batch, n_hid), lambda *_: te.const(0.0), name="c_init")
    kx = te.reduce_axis((0, n_in), name="kx")
    xw = te.compute((steps, 4, batch, n_hid), lambda t, g, b, j: te.sum(X[t - 1, b, kx] * Wx[g, j, kx], axis=kx),
                    name="xw")
    kh = te.reduce_axis((0, n_hid), name="kh")
    hw = te.compute((steps, 4, batch, n_hid),
                    lambda t, g, b, j: te.sum(h_state[t - 1, b, kh] * Wh[g, j, kh], axis=kh), name="hw")
    gates = te.compute(xw.shape, lambda *i: xw(*i) + hw(*i), name="gates")
    shape = (steps, batch, n_hid)

    def gate(g, fn):
        return te.compute(shape, lambda t, b, j: fn(gates[t, g, b, j]), name=f"gate{g}")

    in_gate, in_value, forget, out_gate = (gate(0, te.sigmoid), gate(1, te.tanh), gate(2, te.sigmoid),
                                           gate(3, te.sigmoid))
    c_next = te.compute(shape, lambda t, b, j: forget[t, b, j] * c_state[t - 1, b, j]
                        + in_gate[t, b, j] * in_value[t, b, j], name="c_next")
    h_next = te.compute(shape, lambda t, b, j: out_gate[t, b, j] * te.tanh(c_next[t, b, j]), name="h_next")
    h_scan, c_scan = te.scan([h_init, c_init], [h_next, c_next], [h_state, c_state], inputs=[X], name="lstm")
    assert list(h_scan.op.inputs) == [X] and h_scan.op.num_outputs == 2
    s = te.create_schedule(h_scan.op)
    for T in (gates, in_gate, in_value, forget, out_gate):
        s[T].compute_inline()
    # the reductions are stages of the update: computed in every step of the scan
    assert s[xw].group is s[h_scan.op] and s[hw].group is s[h_scan.op]
    f = build(s, [X, Wx, Wh, h_scan, c_scan], "llvm")
    x = rand(steps - 1, batch, n_in, low=-1, high=1)
    wx, wh = rand(4, n_hid, n_in, low=-1, high=1), rand(4, n_hid, n_hid, low=-1, high=1)
    H, C = np.zeros(shape, "float32"), np.zeros(shape, "float32")
    run(f, x, wx, wh, H, C)

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    h, c = np.zeros((batch, n_hid)), np.zeros((batch, n_hid))
    want_h, want_c = [h], [c]
    for t in range(1, steps):
        g = np.einsum("bk,gjk->gbj", x[t - 1], wx) + np.einsum("bk,gjk->gbj", h, wh)
        c = sigmoid(g[2]) * c + sigmoid(g[0]) * np.tanh(g[1])
        h = sigmoid(g[3]) * np.tanh(c)
        want_h.append(h)
        want_c.append(c)
    np.testing.assert_allclose(H, np.array(want_h), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(C, np.array(want_c), rtol=1e-5, atol=1e-6)


def test_stages_of_a_scan_update_form_its_group():
    # TVM's test_te_group.py::test_scan_group without create_group (not implemented):
    # the update's stages belong to the scan, may be attached to each other, and
    # nowhere outside it
    m, n = te.size_var("m"), te.size_var("n")
    x = te.compute((m, n), lambda i, j: (i + j).astype("float32"), name="x")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: x[0, i], name="init")
    u1 = te.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: u1[t, i] + 1, name="u2")
    u3 = te.compute((m, n), lambda t, i: u2[t, i] * 2, name="u3")
    res = te.scan(init, u3, state, inputs=x)
    after = te.compute((m, n), lambda i, j: res[i, j] - 1, name="after")
    s = te.create_schedule(after.op)
    assert s[u1].group is not None and s[u2].group is s[u1].group and s[u1].group.op is res.op
    assert s[init].group is None and s[x].group is None and s[after].group is None
    s[u1].compute_at(s[u2], u2.op.axis[1])  # inside the group: fine
    with pytest.raises(tecc.ScheduleError, match="stage 'init' does not consume 'u2'"):
        s[u2].compute_at(s[init], init.op.axis[0])
    with pytest.raises(tecc.ScheduleError, match="'u2' is computed in every step of scan 'scan'; it can only be "
                                                 "attached to another stage of that scan's update, and 'after' "
                                                 "is not one"):
        s[u2].compute_at(s[after], after.op.axis[0])
    with pytest.raises(tecc.error.TVMError, match="'u3' is the update of scan 'scan'"):
        s[u3].compute_at(s[after], after.op.axis[0])
    s[u2].compute_at(s[u3], u3.op.axis[1])
    out = np.zeros((4, 3), "float32")
    f = build(s, [after, m, n], "llvm")
    f(out, 4, 3)
    want = np.zeros((4, 3))
    xv = np.add.outer(np.arange(4), np.arange(3))
    want[0] = xv[0]
    for t in range(1, 4):
        want[t] = (want[t - 1] + xv[t] + 1) * 2
    np.testing.assert_allclose(out, want - 1)
