"""The schedule object itself, as TVM's test_te_schedule.py inspects it: the leaf loops
that split, tile, fuse and reorder leave (``leaf_iter_vars``), the relations they
record (``Split``, ``Fuse``, ``Singleton``), the loop kinds and pragmas of
``iter_var_attrs``, the axes of an rfactor'd reduction, a compute_at target that is
fused afterwards, the compute_at calls that are rejected, and a schedule saved with
``save_json`` or ``pickle`` and loaded back."""
import pickle

import numpy as np
import pytest

import tecc
from tecc import te, tir

from compat_te import build, rand, run
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)


def _copy2d(m=None, n=None):
    m = te.size_var("m") if m is None else m
    n = te.size_var("n") if n is None else n
    A = te.placeholder((m, n), name="A")
    T = te.compute((m, n), lambda i, j: A[i, j], name="T")
    return A, T


def _kinds(stage, cls):
    return [r for r in stage.relations if isinstance(r, cls)]


# ---------------------------------------------------------------------------------------
# leaf loops after split / tile / reorder / fuse
# ---------------------------------------------------------------------------------------
def test_split_leaves_the_outer_then_the_inner_loop():
    A, T = _copy2d()
    s = te.create_schedule(T.op)
    i, j = T.op.axis
    outer, inner = s[T].split(i, factor=10)
    assert tuple(s[T].leaf_iter_vars) == (outer, inner, j)
    (rel,) = _kinds(s[T], te.schedule.Split)
    assert (rel.parent, rel.outer, rel.inner, rel.factor) == (i, outer, inner, 10)
    assert i not in s[T].leaf_iter_vars and i in s[T].all_iter_vars


def test_tile_leaves_both_outer_loops_then_both_inner_loops():
    A, T = _copy2d()
    s = te.create_schedule(T.op)
    parts = s[T].tile(*T.op.axis, x_factor=10, y_factor=5)
    assert tuple(s[T].leaf_iter_vars) == tuple(parts)
    assert [r.factor for r in _kinds(s[T], te.schedule.Split)] == [10, 5]


def test_reorder_sets_the_leaf_order_and_rejects_a_repeated_axis():
    m = te.size_var("m")
    A = te.placeholder((m + 1,), name="A")
    T = te.compute((m,), lambda i: A[i + 1], name="T")
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xio, xii = s[T].split(xi, factor=2)
    assert tuple(s[T].leaf_iter_vars) == (xo, xio, xii)
    s[T].reorder(xii, xio, xo)
    assert tuple(s[T].leaf_iter_vars) == (xii, xio, xo)
    with pytest.raises(tecc.error.TVMError, match="twice"):
        s[T].reorder(xii, xio, xii)
    assert tuple(s[T].leaf_iter_vars) == (xii, xio, xo)  # the failed call changed nothing


def test_fuse_of_two_tile_loops_records_a_fuse_relation():
    A, T = _copy2d()
    s = te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(*T.op.axis, x_factor=10, y_factor=5)
    fused = s[T].fuse(xo, yo)
    (rel,) = _kinds(s[T], te.schedule.Fuse)
    assert (rel.outer, rel.inner, rel.fused) == (xo, yo, fused)
    assert tuple(s[T].leaf_iter_vars) == (fused, xi, yi)


def test_fuse_the_inner_part_of_a_split_with_the_next_axis():
    A, T = _copy2d(te.size_var("m"), 6)
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=4)
    fused = s[T].fuse(xi, T.op.axis[1])
    assert _kinds(s[T], te.schedule.Fuse)[0].fused is fused
    assert tuple(s[T].leaf_iter_vars) == (xo, fused)
    a, t = rand(10, 6), np.zeros((10, 6), "float32")  # 10 rows: the last block is partial
    run(build(s, [A, T], "llvm"), a, t)
    np.testing.assert_array_equal(t, a)


def test_fuse_axes_that_a_reorder_made_adjacent():
    A, T = _copy2d()
    s = te.create_schedule(T.op)
    j = T.op.axis[1]
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    s[T].reorder(j, xo, xi)
    fused = s[T].fuse(j, xo)
    assert tuple(s[T].leaf_iter_vars) == (fused, xi)

    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    s[T].reorder(j, xo, xi)
    with pytest.raises(RuntimeError, match="axes 'j' and 'i.inner' are not adjacent"):
        s[T].fuse(j, xi)


def test_fuse_of_no_axes_is_a_singleton_loop_and_the_schedule_pickles():
    A = te.placeholder((), name="A")
    T = te.compute((), lambda: A() + 1, name="T")
    s = te.create_schedule(T.op)
    one = s[T].fuse()
    (rel,) = _kinds(s[T], te.schedule.Singleton)
    assert rel.iter is one and int(one.dom.extent) == 1
    assert tuple(s[T].leaf_iter_vars) == (one,)
    loaded = pickle.loads(pickle.dumps(s))
    assert isinstance(loaded, te.schedule.Schedule)
    (stage,) = [st for st in loaded.stages if st.op.name == "T"]
    assert len(_kinds(stage, te.schedule.Singleton)) == 1 and len(stage.leaf_iter_vars) == 1


# ---------------------------------------------------------------------------------------
# iter_var_attrs: loop kinds and pragmas
# ---------------------------------------------------------------------------------------
def test_vectorize_and_unroll_set_the_loop_types():
    A, T = _copy2d()
    s = te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(*T.op.axis, x_factor=10, y_factor=5)
    s[T].vectorize(yi)
    s[T].unroll(xi)
    attrs = s[T].iter_var_attrs
    assert attrs[xi].iter_type == te.schedule.IterVar.Unrolled
    assert attrs[yi].iter_type == te.schedule.IterVar.Vectorized
    assert xo not in attrs or attrs[xo].iter_type == te.schedule.IterVar.DataPar


def test_pragma_keys_and_the_vectorize_pragma():
    A, T = _copy2d(10, 10)
    s = te.create_schedule(T.op)
    fused = s[T].fuse(*T.op.axis)
    xo, xi = s[T].split(fused, factor=10)
    s[T].pragma(xo, "my_pragma")
    s[T].pragma(xi, "vectorize")  # the same as s[T].vectorize(xi)
    attrs = s[T].iter_var_attrs
    assert [k.value for k in attrs[xo].pragma_keys] == ["my_pragma"]
    assert attrs[xi].iter_type == te.schedule.IterVar.Vectorized
    loops = []
    tir.stmt_functor.post_order_visit(tecc.lower(s, [A, T])["main"].body,
                                      lambda x: loops.append(x) if isinstance(x, tir.For) else None)
    kinds = {f.loop_var.name: f.kind for f in loops}
    assert kinds[xi.var.name] == tir.ForKind.VECTORIZED
    assert "pragma_my_pragma" in dict(next(f for f in loops if f.loop_var is xo.var).annotations)


# ---------------------------------------------------------------------------------------
# rfactor: the factored body and the remaining reduction
# ---------------------------------------------------------------------------------------
def _double_sum():
    n = te.size_var("n")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    A = te.placeholder((n, n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    return n, k1, k2, A, B


def test_rfactor_of_a_whole_reduction_axis():
    n, k1, k2, A, B = _double_sum()
    s = te.create_schedule(B.op)
    BF = s.rfactor(B, k1)
    assert tuple(BF.shape) == (n, n)
    assert list(BF.op.body[0].axis) == [k2]  # BF still sums over k2
    (rest,) = s[B].op.body[0].axis          # B now sums BF over what was k1
    assert rest.dom.extent.same_as(n)
    assert len(s[B].all_iter_vars) == 2      # i and that axis


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_of_the_inner_part_of_a_split_reduction(factor_axis):
    n, k1, k2, A, B = _double_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k1, factor=4)
    s[B].split(B.op.axis[0], factor=8)
    BF = s.rfactor(B, ki, factor_axis)
    shape = list(BF.shape)
    assert int(shape[factor_axis]) == 4 and shape[1 - factor_axis].same_as(n)
    k2_, ko_ = BF.op.body[0].axis           # BF sums over k2 and the outer part of k1
    assert k2_ is k2 and ko_.var is ko.var
    assert int(s[B].op.body[0].axis[0].dom.extent) == 4
    if factor_axis == 1:
        a = rand(6, 6, 6)
        out = np.zeros(6, "float32")
        f = build(s, [A, B, n], "llvm")
        f(a, out, 6)
        np.testing.assert_allclose(out, a.sum(axis=(1, 2)), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# compute_at: a target loop fused later; the rejected attachments
# ---------------------------------------------------------------------------------------
def test_compute_at_a_loop_that_is_fused_afterwards():
    A = te.compute((10, 10), lambda i, j: (i * 10 + j).astype("float32"), name="A")
    B = te.compute((10, 10), lambda i, j: A[i][j] * 2, name="B")
    s = te.create_schedule(B.op)
    s[A].compute_at(s[B], B.op.axis[1])
    fused = s[B].fuse(*B.op.axis)
    body = tecc.lower(s, [B], simple_mode=True)["main"].body
    assert isinstance(body, tir.For) and body.loop_var is fused.var  # A now lives in the fused loop
    assert s[A].attach_ivar is fused
    out = np.zeros((10, 10), "float32")
    run(build(s, [B], "llvm"), out)
    np.testing.assert_array_equal(out, np.arange(100, dtype="float32").reshape(10, 10) * 2)


def _sum_of_two_computes():
    A = te.compute((16, 16), lambda *i: te.const(1.0), name="A")
    B = te.compute((16, 16), lambda *i: te.const(2.0), name="B")
    C = te.compute((16, 16), lambda *i: A(*i) + B(*i), name="C")
    return A, B, C


def test_compute_at_a_stage_into_itself_is_rejected():
    A, B, C = _sum_of_two_computes()
    s = te.create_schedule(C.op)
    with pytest.raises(tecc.ScheduleError, match="stage 'C': compute_at: a stage cannot be attached to itself"):
        s[C].compute_at(s[C], C.op.axis[0])


def test_compute_at_of_the_output_under_its_producer_is_rejected():
    A, B, C = _sum_of_two_computes()
    s = te.create_schedule(C.op)
    s[A].compute_at(s[C], C.op.axis[0])
    with pytest.raises(RuntimeError, match="stage 'C': compute_at: an output stage must be computed at root"):
        s[C].compute_at(s[A], A.op.axis[0])
    with pytest.raises(tecc.error.TVMError, match="an output stage must be computed at root"):
        s[C].compute_at(s[B], B.op.axis[0])


# ---------------------------------------------------------------------------------------
# a whole schedule through save_json / load_json and pickle
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["json", "pickle"])
def test_schedule_round_trips_and_lowers_the_same(how):
    A = te.placeholder((20, 6), name="A")
    B = te.placeholder((3, 6), name="B")
    AA = te.compute((20, 6), lambda i, j: A[i, j] * 2, name="AA")
    T = te.compute((20, 3, 6), lambda i, j, k: AA(i, k) * B(j, k), name="T")
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xio, xii = s[T].split(xi, factor=2)
    s[AA].compute_at(s[T], xio)
    s[T].reorder(xii, xio)
    assert T.op.axis[1] in s[T].leaf_iter_vars

    loaded = tecc.ir.load_json(tecc.ir.save_json(s)) if how == "json" else pickle.loads(pickle.dumps(s))
    assert isinstance(loaded, te.schedule.Schedule)
    assert str(loaded.outputs[0].body) == str(s.outputs[0].body)
    ops = {st.op.name: st.op for st in loaded.stages}
    assert sorted(ops) == ["A", "AA", "B", "T"]
    assert [iv.var.name for iv in loaded[ops["T"]].leaf_iter_vars] == \
        ["i.outer", "i.inner.inner", "i.inner.outer", "j", "k"]
    assert loaded[ops["AA"]].attach_stage.op is ops["T"]
    args = [ops["A"].output(0), ops["B"].output(0), ops["T"].output(0)]
    assert str(tecc.lower(loaded, args)) == str(tecc.lower(s, [A, B, T]))
    if how == "json":
        a, b, t = rand(20, 6), rand(3, 6), np.zeros((20, 3, 6), "float32")
        run(build(loaded, args, "llvm"), a, b, t)
        np.testing.assert_allclose(t, (a * 2)[:, None, :] * b[None, :, :], rtol=1e-6)


# ---------------------------------------------------------------------------------------
# groups (s.create_group): stages attached together
# ---------------------------------------------------------------------------------------
def _chain(shape=None):
    m, n = shape if shape is not None else (te.size_var("m"), te.size_var("n"))
    x = te.compute((m, n), lambda i, j: tir.const(1, "float32") * i + j, name="x")
    x1 = te.compute(x.shape, lambda *i: x(*i) + 1, name="x1")
    x2 = te.compute(x.shape, lambda *i: x1(*i) + 2, name="x2")
    return (m, n), x, x1, x2


def test_create_group_bookkeeping_and_nesting():
    _, x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x1, inputs=x)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert set(s.groups) == {g1, g2}
    assert s[x1].group is g1 and s[x].group is g2 and g1.group is g2
    assert g1.num_child_stages == 1 and g2.num_child_stages == 2
    assert s[x2].group is None


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_group_attached_computes_its_stages_per_row(target):
    # symbolic sizes on the CPU; on cuda the group's buffers (under a block) need a
    # constant size
    (m, n), x, x1, x2 = _chain(None if target == "llvm" else (5, 7))
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    g.compute_at(s[x2], x2.op.axis[0])
    assert g.attach_stage is s[x2] and g.num_child_stages == 2
    bounds = te.schedule.InferBound(s.normalize())
    assert int(bounds[x.op.axis[0]].extent) == 1
    tecc.testing.assert_prim_expr_equal(bounds[x.op.axis[1]].extent, n)
    out = np.zeros((5, 7), "float32")
    if target == "cuda":
        s[x2].bind(x2.op.axis[0], te.thread_axis("blockIdx.x"))
        f = tecc.build(s, [x2], target)
        assert f.check(out) == []
        f(out)
    else:
        tecc.build(s, [x2, m, n], target)(out, 5, 7)
    i, j = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    np.testing.assert_allclose(out, i + j + 3)


def test_nested_groups_attach_each_at_its_own_loop():
    (m, n), x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x, inputs=x, include_inputs=True)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    g2.compute_at(s[x2], x2.op.axis[0])
    g1.compute_at(s[x1], x1.op.axis[1])
    bounds = te.schedule.InferBound(s.normalize())
    assert [int(bounds[iv].extent) for iv in x.op.axis] == [1, 1]
    assert int(bounds[x1.op.axis[0]].extent) == 1 and bounds[x1.op.axis[1]].extent is n
    f = tecc.build(s, [x2, m, n], "llvm")
    out = np.zeros((3, 4), "float32")
    f(out, 3, 4)
    i, j = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_allclose(out, i + j + 3)


def test_stages_of_a_group_attach_only_inside_it():
    _, x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    s.create_group(outputs=x1, inputs=x)
    with pytest.raises(tecc.error.ScheduleError, match="'x1' belongs to 'group0'.*attach the group instead"):
        s[x1].compute_at(s[x2], x2.op.axis[0])


def test_group_inside_a_scan_attaches_within_the_step():
    m, n = te.size_var("m"), te.size_var("n")
    x = te.compute((m, n), lambda i, j: tir.const(1, "float32"), name="x")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: x[0, i], name="init")
    u1 = te.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: u1[t, i] + 1, name="u2")
    u3 = te.compute((m, n), lambda t, i: u2[t, i] + 1, name="u3")
    res = te.scan(init, u3, state, inputs=x)
    s = te.create_schedule(res.op)
    scan = s[u1].group
    assert scan is not None and s[u2].group is scan
    s[u1].compute_at(s[u2], u2.op.axis[1])
    g = s.create_group(outputs=u2, inputs=[state, x])
    assert g.group is scan and s[u2].group is g and s[u1].group is g
    g.compute_at(s[u3], u3.op.axis[1])
    with pytest.raises(tecc.error.ScheduleError):  # outside the group (init does not even read u2)
        s[u2].compute_at(s[init], init.op.axis[0])
    f = tecc.build(s, [res, m, n], "llvm")
    out = np.zeros((4, 3), "float32")
    f(out, 4, 3)
    np.testing.assert_allclose(out, 1 + 3 * np.arange(4)[:, None] * np.ones((1, 3)))
