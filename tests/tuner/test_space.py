"""The schedule side of the tuner (tecc.autotvm.task): knob spaces, their points,
the dispatch of configs to templates, and tunable topi-style operators."""
import json
import re

import numpy as np
import pytest

import tecc
from tecc import autotvm, te
from tecc.autotvm.task import space as S
from tecc.autotvm.task.task import TemplateError


def test_autotvm_paths_are_the_tuners_modules():
    import tecc.autotvm.task.space as via_autotvm
    import tecc.tuner.task.space as via_tuner

    assert via_autotvm is via_tuner
    assert autotvm.ApplyConfig is tecc.tuner.ApplyConfig


@pytest.mark.parametrize("n, k, policy", [(64, 2, "factors"), (12, 3, "factors"), (10, 2, "power2"),
                                          (7, 3, "factors"), (24, 4, "verbose")])
def test_split_space_enumerates_every_legal_split(n, k, policy):
    sp = S.SplitSpace(n, policy, num_outputs=k)
    sizes = [tuple(e.size) for e in sp.entities]
    assert len(sizes) == len(set(sizes))
    for size in sizes:
        assert size[0] == -1 and len(size) == k
        inner = int(np.prod(size[1:]))
        if policy == "factors":
            assert n % inner == 0
        else:
            assert inner <= n
    if policy == "factors":  # every ordered factorization of n into k parts
        def count(m, parts):
            return 1 if parts == 1 else sum(count(m // d, parts - 1) for d in S.get_factors(m))
        assert len(sizes) == count(n, k)


def test_split_space_max_factor_and_filter():
    sp = S.SplitSpace(64, "factors", num_outputs=3, max_factor=8, filter=lambda e: e.size[-1] >= 2)
    assert all(max(e.size[1:]) <= 8 and e.size[-1] >= 2 for e in sp.entities)
    with pytest.raises(S.InstantiationError, match="no split of length 64"):
        S.SplitSpace(64, "factors", num_outputs=2, filter=lambda e: False)


def test_config_space_points_and_json_round_trip():
    cfg = S.ConfigSpace()
    cfg.define_split("tile_x", 16, num_outputs=2)
    cfg.define_knob("unroll", [0, 512, 1500])
    cfg.define_reorder("order", [cfg.axis(4), cfg.axis(4), cfg.axis(4)], "all")
    assert cfg.dims == [5, 3, 6] and len(cfg) == 90
    seen = set()
    for i in range(len(cfg)):
        p = cfg.get(i)
        assert cfg.knob2point(cfg.point2knob(i)) == i
        key = (tuple(p["tile_x"].size), p["unroll"].val, tuple(p["order"].perm))
        seen.add(key)
        back = S.ConfigEntity.from_json_dict(json.loads(json.dumps(p.to_json_dict())))
        assert back["tile_x"] == p["tile_x"] and back["unroll"] == p["unroll"] and back.index == i
    assert len(seen) == 90
    with pytest.raises(IndexError, match="out of range"):
        cfg.get(90)


def test_fallback_split_picks_the_largest_factors_within_limits():
    cfg = S.FallbackConfigEntity()
    cfg.define_split("tile", 128, num_outputs=3)
    assert cfg["tile"].size == [-1, 1, 1]  # neutral until the template decides
    cfg.fallback_split("tile", [-1, 4, 16])
    assert cfg["tile"].size == [-1, 4, 16]
    cfg.fallback_split("tile", [-1, 5, 7])  # the largest divisors of what is left, within the limits
    assert cfg["tile"].size == [-1, 4, 4]
    cfg.define_split("tile2", 96, num_outputs=3)
    cfg.fallback_split("tile2", [-1, 5, 7])  # 96 = 6 * 16: then 4 of the 16
    assert cfg["tile2"].size == [-1, 4, 6]


def _tunable_add(name):
    @autotvm.register_topi_compute(name)
    def compute(cfg, A, B, scale=1.0):
        return te.compute(A.shape, lambda i: (A[i] + B[i]) * scale, name="C", tag="elemwise")

    @autotvm.register_topi_schedule(name)
    def schedule(cfg, outs):
        C = outs[0]
        s = te.create_schedule(C.op)
        cfg.define_split("tile", C.op.axis[0], num_outputs=2)
        if cfg.is_fallback:
            cfg["tile"] = S.SplitEntity([-1, 8])
        _, xi = cfg["tile"].apply(s, C, C.op.axis[0])
        s[C].vectorize(xi)
        return s

    return compute, schedule


def _inner_extent(s, C):
    return int(s[C].leaf_iter_vars[-1].dom.extent) if s[C].leaf_iter_vars[-1].dom is not None else None


def test_topi_compute_and_schedule_share_the_workloads_config():
    compute, schedule = _tunable_add("test_space.add")
    A, B = te.placeholder((64,), name="A"), te.placeholder((64,), name="B")
    C = compute(A, B, scale=2.0)
    assert C.op.attrs["workload"] == ("test_space.add", ("TENSOR", (64,), "float32"),
                                      ("TENSOR", (64,), "float32"), 2.0)
    assert compute(A, B, 2.0).op.attrs["workload"] == C.op.attrs["workload"]  # however it is spelled
    s = schedule([C])
    f = tecc.build(s, [A, B, C], "llvm")
    a, b, c = np.arange(64, dtype="float32"), np.ones(64, "float32"), np.zeros(64, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, (a + b) * 2)
    assert "i.inner, 0, 8" in str(tecc.lower(s, [A, B, C]))  # the fallback default


def test_apply_config_walks_the_space_and_every_point_is_correct():
    compute, schedule = _tunable_add("test_space.add2")
    A, B = te.placeholder((12,), name="A"), te.placeholder((12,), name="B")
    space = S.ConfigSpace()
    with autotvm.ApplyConfig(space):
        schedule([compute(A, B, 1.0)])
    assert len(space) == len(S.get_factors(12))
    a, b = np.arange(12, dtype="float32"), np.full(12, 3, "float32")
    for i in range(len(space)):
        point = space.get(i)
        with autotvm.ApplyConfig(point):
            C = compute(A, B, 1.0)
            s = schedule([C])
        inner = point["tile"].size[1]
        text = str(tecc.lower(s, [A, B, C]))
        assert (f"i.inner, 0, {inner}" in text) if inner > 1 else ("i.inner" not in text)
        c = np.zeros(12, "float32")
        tecc.build(s, [A, B, C], "llvm")(a, b, c)
        np.testing.assert_allclose(c, a + b)


def test_template_gets_its_workloads_config():
    @autotvm.template("test_space.scale")
    def scale(n):
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] * 3, name="B")
        s = te.create_schedule(B.op)
        cfg = autotvm.get_config()
        cfg.define_knob("vec", [False, True])
        if cfg["vec"].val:
            s[B].vectorize(B.op.axis[0])
        return s, [A, B]

    space = S.ConfigSpace()
    with autotvm.ApplyConfig(space):
        scale(8)
    assert len(space) == 2
    with autotvm.ApplyConfig(space.get(1)):
        s, args = scale(8)
    assert "vectorized" in str(tecc.lower(s, args))
    from tecc.autotvm.task import TASK_TABLE

    s2, args2 = TASK_TABLE["test_space.scale"](8)  # a task rebuilds it from its arguments
    assert len(args2) == 2


def test_schedule_without_its_compute_is_refused():
    _, schedule = _tunable_add("test_space.add3")
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    with pytest.raises(TemplateError, match="test_space.add3.*none of the outputs"):
        schedule([B])


def test_template_arguments_must_be_constant():
    @autotvm.template("test_space.var")
    def f(n):
        return None

    with pytest.raises(TemplateError, match="needs constant arguments; 'n' is a variable"):
        f(te.var("n"))


@pytest.mark.parametrize("k, n, shown", [(0, 0, "0"), (1, -2, "-2"), (2, "3", "'3'"), (3, 9, "9"), (4, True, "True")])
def test_a_split_into_an_impossible_number_of_loops_names_the_template_and_knob(k, n, shown):
    name = f"test_space/bad_split_{k}"

    @autotvm.template(name)
    def bad(N):
        A = te.placeholder((N,), name="A")
        B = te.compute((N,), lambda i: A[i] + 1.0, name="B")
        s = te.create_schedule(B.op)
        autotvm.get_config().define_split("tile_i", B.op.axis[0], num_outputs=n)
        return s, [A, B]

    with pytest.raises(TemplateError, match=rf"template '{re.escape(name)}', workload .*: "
                                            rf"define_split\('tile_i'\): num_outputs must be an int from 1 to 8 "
                                            rf"\(the loops the axis is split into\), got {re.escape(shown)}"):
        autotvm.task.create(name, args=(16,), target="llvm")


def test_split_policy_and_max_factor_errors():
    cfg = S.ConfigSpace()
    with pytest.raises(S.InstantiationError, match=r"define_split\('t'\): max_factor must be a positive int, got 0"):
        cfg.define_split("t", 64, num_outputs=2, max_factor=0)
    with pytest.raises(S.InstantiationError, match="unknown policy 'halves'"):
        cfg.define_split("t", 64, policy="halves", num_outputs=2)
    with pytest.raises(S.InstantiationError, match=r"splitting length 1073741824 into 8 loops gives more than "
                                                   r"262144 choices; use fewer num_outputs"):
        cfg.define_split("t", 1 << 30, policy="power2", num_outputs=8)
