"""The tunable pooling and reduction templates: the tasks "pool1d/pool2d/pool3d/
adaptive_pool/global_pool.cuda", "reduce.cuda" and "reduce.x86" are registered and
record their workloads; their spaces have real choices; points of each space build,
pass the emulator's race and bounds check and match numpy; the fallback config is
the default schedule (compared with the same schedule written by hand in TE); bad
knob values are refused with a clear error."""
import logging

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, topi
from tecc.autotvm.task import TASK_TABLE
from tecc.autotvm.task.space import ConfigEntity, ConfigSpace, InstantiationError, OtherOptionEntity
from tecc.topi import cuda as K, x86
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import build_run, rand

logging.getLogger("tecc").setLevel(logging.ERROR)  # "no tuned config" for every workload
pytestmark = pytest.mark.filterwarnings("ignore:no CUDA GPU found:RuntimeWarning")

#: small blocks keep the emulator's check (which interprets every thread) quick
CUDA = "cuda -max_num_threads=64"


def space_of(target, make, schedule, A):
    """The config space the template defines for ``make(A)``."""
    space = ConfigSpace()
    with tecc.target.Target(target), autotvm.ApplyConfig(space):
        schedule(make(A))
    return space


def point(space, **values):
    """The point of ``space`` with these knob values (the first choice of the others)."""
    knob = []
    for name, dim in space.space_map.items():
        want = values.get(name, dim.entities[0].val)
        vals = [e.val for e in dim.entities]
        assert want in vals, f"{name}={want} is not a choice of {vals}"
        knob.append(vals.index(want))
    return space.get(space.knob2point(knob))


def run_points(target, make, schedule, A, a, want, points, rtol=1e-5):
    """Build and run ``make(A)`` under each config of ``points``, against ``want``."""
    for cfg in points:
        with tecc.target.Target(target), autotvm.ApplyConfig(cfg):
            out = make(A)
            s = schedule(out)
        (got,) = build_run(s, [A], [out], [a], target)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5, err_msg=str(cfg))


def pool_ref(a, kernel, stride, padding, pool_type, include=True):
    k = len(kernel)
    return topi.testing.poolnd_python(a, kernel, stride, (1,) * k, padding[:k], padding[k:], pool_type, include)


CUDA_KNOBS = {"reduce_thread", "out_thread", "auto_unroll_max_step"}
X86_KNOBS = {"vec", "parallel_axes", "auto_unroll_max_step"}


# ---------------------------------------------------------------------------------------
# the tasks
# ---------------------------------------------------------------------------------------
def test_tasks_are_registered_and_record_their_workloads():
    A = te.placeholder((1, 2, 7, 7), name="A")
    A1, A3 = te.placeholder((1, 2, 9), name="A1"), te.placeholder((1, 2, 4, 5, 5), name="A3")
    with tecc.target.Target("cuda"):
        made = {
            "pool1d.cuda": K.pool1d(A1, (3,), (2,), (1,), (1, 1), "max"),
            "pool2d.cuda": K.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "avg", count_include_pad=False),
            "pool3d.cuda": K.pool3d(A3, (2, 2, 2), (1, 1, 1), (1, 1, 1), (0,) * 6, "max"),
            "adaptive_pool.cuda": K.adaptive_pool(A, (3, 2), "avg"),
            "global_pool.cuda": K.global_pool(A, "max"),
            "reduce.cuda": K.reduce(A, (2, 3), True, "mean"),
        }
    with tecc.target.Target("llvm"):
        made["reduce.x86"] = x86.reduce(A, 1, False, "argmax")
    for name, out in made.items():
        assert name in TASK_TABLE
        assert out.op.attrs["workload"][0] == name
    # keyword and positional spellings give one workload
    assert made["pool2d.cuda"].op.attrs["workload"][1:] == (
        ("TENSOR", (1, 2, 7, 7), "float32"), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "avg", False, "NCHW", False)
    assert made["reduce.cuda"].op.attrs["workload"][1:] == (("TENSOR", (1, 2, 7, 7), "float32"), (2, 3), True, "mean")
    # a task rebuilds the operator from its workload alone, at a point of its space
    a = rand((1, 2, 7, 7))
    wl = made["pool2d.cuda"].op.attrs["workload"]
    space = ConfigSpace()
    with tecc.target.Target(CUDA), autotvm.ApplyConfig(space):
        TASK_TABLE["pool2d.cuda"](*wl[1:])
    with tecc.target.Target(CUDA), autotvm.ApplyConfig(point(space, reduce_thread=4, out_thread=8)):
        s, args = TASK_TABLE["pool2d.cuda"](*wl[1:])
    assert [tuple(int(d) for d in t.shape) for t in args] == [(1, 2, 7, 7), (1, 2, 4, 4)]
    (got,) = build_run(s, args[:1], args[1:], [a], CUDA)
    np.testing.assert_allclose(got, pool_ref(a, (3, 3), (2, 2), (1, 1, 1, 1), "avg", False), rtol=1e-5, atol=1e-6)


def test_unknown_reduce_type_is_refused():
    A = te.placeholder((3, 4), name="A")
    with pytest.raises(TopiError, match=r"topi.cuda.reduce\('A'\): reduce_type 'median' is not one of"):
        K.reduce(A, 1, False, "median")
    with pytest.raises(TopiError, match=r"topi.x86.reduce\('A'\): reduce_type 'avg' is not one of"):
        x86.reduce(A, 1, False, "avg")


# ---------------------------------------------------------------------------------------
# the spaces
# ---------------------------------------------------------------------------------------
def test_spaces_have_real_choices():
    A = te.placeholder((2, 3, 7, 7), name="A")
    sp = space_of("cuda", lambda A: K.global_pool(A, "avg"), K.schedule_adaptive_pool, A)
    assert set(sp.space_map) == CUDA_KNOBS
    # a 49-element window: up to 64 threads per window; 6 outputs: up to 8 per block (and the fallback's 256)
    assert [e.val for e in sp.space_map["reduce_thread"].entities] == [1, 4, 8, 16, 32, 64]
    assert [e.val for e in sp.space_map["out_thread"].entities] == [1, 2, 4, 8, 256]
    assert len(sp) == 6 * 5 * 4
    sp = space_of("cuda", lambda A: K.pool2d(A, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), "max"), K.schedule_pool, A)
    assert len(sp) == 4 * 10 * 4  # windows of 9: 1, 4, 8, 16 threads; 294 outputs: 1 .. 512 per block
    # the windows of an adaptive pool from 7 to 5 vary: one thread per window only
    sp = space_of("cuda", lambda A: K.adaptive_pool(A, (5, 5), "max"), K.schedule_adaptive_pool, A)
    assert [e.val for e in sp.space_map["reduce_thread"].entities] == [1] and len(sp) > 20
    # the target's threads per block bound the choices
    B = te.placeholder((3, 700), name="B")
    sp = space_of("cuda", lambda B: K.reduce(B, 1), K.schedule_reduce, B)
    assert [e.val for e in sp.space_map["reduce_thread"].entities] == [1, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert len(sp) == 10 * 3 * 4
    sp = space_of(CUDA, lambda B: K.reduce(B, 1), K.schedule_reduce, B)
    assert max(e.val for e in sp.space_map["reduce_thread"].entities) == 64
    # x86: vectors along the kept innermost axis, or lanes of the reduced one (divisors only)
    sp = space_of("llvm", lambda B: x86.reduce(B, 0, False, "sum"), x86.schedule_reduce, B)
    assert set(sp.space_map) == X86_KNOBS and len(sp) == 4 * 2 * 3
    C = te.placeholder((4, 5, 12), name="C")
    sp = space_of("llvm", lambda C: x86.reduce(C, 2, True, "max"), x86.schedule_reduce, C)
    assert [e.val for e in sp.space_map["vec"].entities] == [1, 4]
    assert [e.val for e in sp.space_map["parallel_axes"].entities] == [0, 1, 2, 3]
    # several kernels: the second one's knobs carry a suffix
    D = te.placeholder((3, 16), name="D")
    sp = space_of("cuda", lambda B: [topi.sum(B, axis=0), topi.max(D, axis=1)], K.schedule_reduce, B)
    assert set(sp.space_map) == CUDA_KNOBS | {f"{k}_1" for k in CUDA_KNOBS}


# ---------------------------------------------------------------------------------------
# points of the spaces: built, checked, run
# ---------------------------------------------------------------------------------------
POOL_CASES = [
    # name, input shape, compute, numpy reference, knob values per point (reduce_thread, out_thread, unroll)
    ("max3x3", (1, 3, 9, 10), lambda A: K.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max"),
     lambda a: pool_ref(a, (3, 3), (2, 2), (1, 1, 1, 1), "max"), [(1, 32, 16), (8, 4, 0), (16, 2, 64)]),
    ("avg_nhwc", (2, 8, 7, 3),
     lambda A: K.pool2d(A, (2, 3), (2, 2), (1, 1), (0, 1, 1, 1), "avg", layout="NHWC", count_include_pad=False),
     lambda a: pool_ref(a.transpose(0, 3, 1, 2), (2, 3), (2, 2), (0, 1, 1, 1), "avg", False).transpose(0, 2, 3, 1),
     [(4, 8, 512), (1, 64, 0)]),
    ("global_avg", (2, 3, 7, 7), lambda A: K.global_pool(A, "avg"), lambda a: a.mean((2, 3), keepdims=True),
     [(32, 2, 0), (64, 1, 16), (1, 8, 0)]),
    ("adaptive_max", (1, 2, 7, 7), lambda A: K.adaptive_pool(A, (5, 5), "max"),
     lambda a: topi.testing.adaptive_pool(a, (5, 5), "max", "NCHW"), [(1, 16, 64), (1, 2, 0)]),
    ("pool1d", (2, 3, 11), lambda A: K.pool1d(A, (3,), (2,), (1,), (1, 1), "avg"),
     lambda a: pool_ref(a, (3,), (2,), (1, 1), "avg"), [(4, 4, 16)]),
]


@pytest.mark.parametrize("name, shape, make, ref, knobs", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_cuda_pool_points_run(name, shape, make, ref, knobs):
    A = te.placeholder(shape, name="A")
    sp = space_of(CUDA, make, K.schedule_pool, A)
    points = [point(sp, reduce_thread=x, out_thread=y, auto_unroll_max_step=u) for x, y, u in knobs]
    a = rand(shape)
    run_points(CUDA, make, K.schedule_pool, A, a, ref(a), points)


REDUCE_CASES = [
    ("sum_rows", (3, 700), lambda A: K.reduce(A, 1), lambda a: a.sum(1), [(64, 1, 0), (16, 4, 16), (1, 4, 512)]),
    ("argmax", (5, 33), lambda A: K.reduce(A, 1, False, "argmax"), lambda a: a.argmax(1), [(32, 2, 0), (4, 8, 64)]),
    ("mean_cols", (12, 9), lambda A: K.reduce(A, 0, False, "mean"), lambda a: a.mean(0), [(8, 8, 0), (1, 16, 16)]),
    ("variance", (4, 5, 9), lambda A: K.reduce(A, (0, 2), True, "variance"),
     lambda a: a.var((0, 2), keepdims=True), [(16, 4, 0), (1, 2, 64)]),
    ("sum_all", (7, 9), lambda A: K.reduce(A, None), lambda a: a.sum(), [(64, 1, 16), (1, 1, 0)]),
    ("x_minus_mean", (4, 50), lambda A: A - topi.mean(A, axis=1, keepdims=True),
     lambda a: a - a.mean(1, keepdims=True), [(8, 2, 0)]),
]


@pytest.mark.parametrize("name, shape, make, ref, knobs", REDUCE_CASES, ids=[c[0] for c in REDUCE_CASES])
def test_cuda_reduce_points_run(name, shape, make, ref, knobs):
    A = te.placeholder(shape, name="A")
    sp = space_of(CUDA, make, K.schedule_reduce, A)
    assert set(sp.space_map) == CUDA_KNOBS and len(sp) > 4
    points = [point(sp, reduce_thread=x, out_thread=y, auto_unroll_max_step=u) for x, y, u in knobs]
    a = rand(shape)
    run_points(CUDA, make, K.schedule_reduce, A, a, ref(a), points, rtol=1e-4)


def test_cuda_reduce_kernels_of_a_chain_have_knobs_of_their_own():
    A, B = te.placeholder((6, 8), name="A"), te.placeholder((3, 16), name="B")
    a, b = rand((6, 8)), rand((3, 16))

    def make():
        return [topi.sum(A, axis=0), topi.max(B, axis=1)]

    sp = ConfigSpace()
    with tecc.target.Target(CUDA), autotvm.ApplyConfig(sp):
        K.schedule_reduce(make())
    cfg = point(sp, reduce_thread=4, out_thread=8, reduce_thread_1=16, out_thread_1=2, auto_unroll_max_step_1=16)
    with tecc.target.Target(CUDA), autotvm.ApplyConfig(cfg):
        outs = make()
        s = K.schedule_reduce(outs)
    text = str(tecc.lower(s, [A, B] + outs, simple_mode=True))
    assert "tecc.thread_allreduce(4," in text and "tecc.thread_allreduce(16," in text
    got = build_run(s, [A, B], outs, [a, b], CUDA)
    np.testing.assert_allclose(got[0], a.sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], b.max(1), rtol=1e-5)


def test_topi_schedule_and_plain_computes_follow_an_enclosing_config():
    # topi.sum's output (no workload) under ApplyConfig: the template takes that config
    A = te.placeholder((4, 40), name="A")
    sp = space_of(CUDA, lambda A: topi.sum(A, axis=1), K.schedule_reduce, A)
    with tecc.target.Target(CUDA), autotvm.ApplyConfig(point(sp, reduce_thread=8, out_thread=4)):
        out = topi.sum(A, axis=1)
        s = topi.schedule(out, CUDA)
    text = str(tecc.lower(s, [A, out], simple_mode=True))
    assert "tecc.thread_allreduce(8," in text and "for (i0.inner, 0, 4) // threadIdx.y" in text
    a = rand((4, 40))
    (got,) = build_run(s, [A], [out], [a], CUDA)
    np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-6)


def test_tuned_points_build_for_sm80_and_sm90():
    A = te.placeholder((2, 3, 7, 7), name="A")
    sp = space_of("cuda", lambda A: K.global_pool(A, "max"), K.schedule_adaptive_pool, A)
    with tecc.target.Target("cuda"), autotvm.ApplyConfig(point(sp, reduce_thread=64, out_thread=4,
                                                                auto_unroll_max_step=16)):
        out = K.global_pool(A, "max")
        s = K.schedule_adaptive_pool(out)
    build_all_arches(s, [A, out])
    B = te.placeholder((8, 300), name="B")
    sp = space_of("cuda", lambda B: K.reduce(B, 1, False, "argmin"), K.schedule_reduce, B)
    with tecc.target.Target("cuda"), autotvm.ApplyConfig(point(sp, reduce_thread=512, out_thread=2)):
        out = K.reduce(B, 1, False, "argmin")
        s = K.schedule_reduce(out)
    build_all_arches(s, [B, out])


X86_CASES = [
    # name, shape, dtype, compute, reference, knob values per point (vec, parallel_axes, unroll)
    ("sum_rows", (5, 64), "float32", lambda A: x86.reduce(A, 1), lambda a: a.sum(1),
     [(8, 1, 16), (16, 0, 0), (4, 1, 64)]),
    ("mean_cols", (6, 19), "float32", lambda A: x86.reduce(A, 0, False, "mean"), lambda a: a.mean(0),
     [(4, 0, 0), (16, 1, 16)]),
    ("variance_mid", (3, 5, 16), "float32", lambda A: x86.reduce(A, (0, 2), True, "variance"),
     lambda a: a.var((0, 2), keepdims=True), [(8, 2, 64), (4, 1, 0)]),
    ("argmax", (5, 32), "float32", lambda A: x86.reduce(A, 1, False, "argmax"), lambda a: a.argmax(1),
     [(8, 1, 0)]),
    ("all", (5, 8), "bool", lambda A: x86.reduce(A, 1, False, "all"), lambda a: a.all(1), [(1, 1, 16)]),
    ("max_all", (4, 8), "float32", lambda A: x86.reduce(A, None, False, "max"), lambda a: a.max(), [(8, 0, 16)]),
    ("min_keep_rank3", (2, 3, 12), "float32", lambda A: x86.reduce(A, -1, True, "min"),
     lambda a: a.min(-1, keepdims=True), [(4, 2, 0), (1, 3, 16)]),
]


@pytest.mark.parametrize("name, shape, dtype, make, ref, knobs", X86_CASES, ids=[c[0] for c in X86_CASES])
def test_x86_reduce_points_run(name, shape, dtype, make, ref, knobs):
    A = te.placeholder(shape, name="A", dtype=dtype)
    sp = space_of("llvm", make, x86.schedule_reduce, A)
    assert set(sp.space_map) == X86_KNOBS and len(sp) > 4
    points = [point(sp, vec=v, parallel_axes=p, auto_unroll_max_step=u) for v, p, u in knobs]
    a = rand(shape, dtype)
    run_points("llvm", make, x86.schedule_reduce, A, a, ref(a), points, rtol=1e-4)


def test_x86_rows_in_vector_lanes_and_partial_parallel_loop():
    A = te.placeholder((3, 5, 16), name="A")
    sp = space_of("llvm", lambda A: x86.reduce(A, 2, True, "mean"), x86.schedule_reduce, A)
    with tecc.target.Target("llvm"), autotvm.ApplyConfig(point(sp, vec=8, parallel_axes=1)):
        out = x86.reduce(A, 2, True, "mean")
        s = x86.schedule_reduce(out)
    text = str(tecc.lower(s, [A, out], simple_mode=True))  # (no target: the loops as scheduled)
    assert "parallel for (i0, 0, 3)" in text and "for (i1.i2.fused, 0, 5)" in text
    # 8 partial sums in vector lanes, added up at the end
    assert "T_sum.rf: float32[8]" in text and "vectorized for (k2.inner.v, 0, 8)" in text


# ---------------------------------------------------------------------------------------
# the fallback config is the default schedule
# ---------------------------------------------------------------------------------------
def _texts(s, args, target):
    """The lowered IR (for ``target``) and the generated source of ``s``."""
    mod = tecc.build(s, args, target)
    src = mod.imported_modules[0].get_source() if target.startswith("cuda") else mod.get_source()
    with tecc.target.Target(target):
        return str(tecc.lower(s, args, simple_mode=True)), src


def _by_hand_pool(P, window_stage, num_thread):
    """The default CUDA pooling schedule, in TE: padding inlined, one thread per
    output element, ``num_thread`` per block, the window sums (of an average) in a
    register of the thread."""
    s = te.create_schedule(P.op)
    for t in list(window_stage.op.input_tensors):
        if t.op.name == "pad_temp":
            s[t].compute_inline()
    if window_stage.op is not P.op:
        s[window_stage].set_scope("local")
    fused = s[P].fuse(*s[P].op.axis)
    bx, tx = s[P].split(fused, factor=num_thread)
    s[P].bind(bx, te.thread_axis("blockIdx.x"))
    s[P].bind(tx, te.thread_axis("threadIdx.x"))
    if window_stage.op is not P.op:
        s[window_stage].compute_at(s[P], tx)
    return s


@pytest.mark.parametrize("target, num_thread", [("cuda", 256), (CUDA, 64)])
def test_cuda_pool_fallback_is_the_default_schedule(target, num_thread):
    A = te.placeholder((1, 3, 9, 10), name="A")
    for P in (topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max"),
              topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "avg", False, "NCHW", False),
              topi.nn.global_pool(A, "avg")):
        window = P if P.op.reduce_axis else P.op.input_tensors[0]
        with tecc.target.Target(target):
            got = _texts(K.schedule_pool(P, "NCHW"), [A, P], target)
        want = _texts(_by_hand_pool(P, window, num_thread), [A, P], target)
        assert got == want
        assert f"__launch_bounds__({num_thread})" in got[1] and f"[threadIdx.x] thread_extent = {num_thread}" in got[0]
    # the registered compute, with its (fallback) config: the same
    with tecc.target.Target(target):
        P = K.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")
        assert _texts(K.schedule_pool(P, "NCHW"), [A, P], target) == _texts(_by_hand_pool(P, P, num_thread),
                                                                               [A, P], target)


def test_cuda_reduce_fallback_is_the_default_schedule():
    # (30, 40) max * 2: 64 threads per row (the power of two from 32 covering 40), 4 rows per block
    A = te.placeholder((30, 40), name="A")
    out = topi.max(A, axis=1) * 2.0
    R = out.op.input_tensors[0]
    s = te.create_schedule(out.op)
    tx = te.thread_axis((0, 64), "threadIdx.x")
    bo, attach = s[out].split(s[out].op.axis[0], factor=4)
    s[out].set_store_predicate(tx.var.equal(0))
    s[out].bind(attach, te.thread_axis((0, 4), "threadIdx.y"))
    s[out].bind(bo, te.thread_axis("blockIdx.x"))
    s[R].compute_at(s[out], attach)
    _, ki = s[R].split(s[R].op.reduce_axis[0], factor=64)
    s[R].bind(ki, tx)
    with tecc.target.Target("cuda"):
        got = _texts(K.schedule_reduce(out), [A, out], "cuda")
    assert got == _texts(s, [A, out], "cuda")
    for launch in ("[blockIdx.x] thread_extent = 8", "[threadIdx.x] thread_extent = 64",
                   "[threadIdx.y] thread_extent = 4"):
        assert launch in got[0]
    # (300, 6) sum: too short to share, one thread per output, 256 per block
    B = te.placeholder((300, 6), name="B")
    out = topi.sum(B, axis=1)
    s = te.create_schedule(out.op)
    bx, tx = s[out].split(s[out].op.axis[0], factor=256)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    with tecc.target.Target("cuda"):
        got = _texts(K.schedule_reduce(out), [B, out], "cuda")
    assert got == _texts(s, [B, out], "cuda")
    assert "[blockIdx.x] thread_extent = 2" in got[0] and "[threadIdx.x] thread_extent = 256" in got[0]
    # the fallback config holds those values
    with tecc.target.Target("cuda"):
        out = K.reduce(A, 1, False, "max")
        K.schedule_reduce(out)
        cfg = autotvm.DispatchContext.current.query(tecc.target.Target.current(), out.op.attrs["workload"])
    assert cfg.is_fallback and (cfg["reduce_thread"].val, cfg["out_thread"].val) == (64, 4)
    assert cfg["auto_unroll_max_step"].val == 0


def test_x86_reduce_fallback_is_the_default_schedule():
    # a column mean of (200, 203): 8 outputs in vector lanes, the columns' loop parallel
    A = te.placeholder((200, 203), name="A")
    out = topi.mean(A, axis=0)
    R = out.op.input_tensors[0]
    s = te.create_schedule(out.op)
    io, v = s[out].split(s[out].op.axis[0], factor=8)
    s[out].parallel(io)
    s[out].vectorize(v)
    s[R].compute_at(s[out], io)
    (j,) = s[R].op.axis
    s[R].reorder(*s[R].op.reduce_axis, j)
    s[R].vectorize(j)
    with tecc.target.Target("llvm"):
        assert _texts(x86.schedule_reduce(out), [A, out], "llvm") == _texts(s, [A, out], "llvm")
    # a small row sum: one core, no vectors
    B = te.placeholder((4, 10), name="B")
    out = topi.sum(B, axis=1)
    s = te.create_schedule(out.op)
    with tecc.target.Target("llvm"):
        assert _texts(x86.schedule_reduce(out), [B, out], "llvm") == _texts(s, [B, out], "llvm")


# ---------------------------------------------------------------------------------------
# bad knob values
# ---------------------------------------------------------------------------------------
def _entity(**knobs):
    return ConfigEntity(0, None, {k: OtherOptionEntity(v) for k, v in knobs.items()})


def test_bad_knob_values_give_clear_errors():
    A = te.placeholder((4, 40), name="A")
    P = te.placeholder((1, 2, 7, 7), name="P")
    cases = [
        ("cuda", lambda: K.schedule_reduce(topi.sum(A, axis=1)),
         dict(reduce_thread=2048, out_thread=1, auto_unroll_max_step=0),
         r"schedule_reduce: knob 'reduce_thread' = 2048 is not valid; expected an int in \[1, 1024\]"),
        ("cuda", lambda: K.schedule_reduce(topi.sum(A, axis=1)),
         dict(reduce_thread=64, out_thread=32, auto_unroll_max_step=0),
         r"reduce_thread x out_thread = 64 x 32 = 2048 threads per block, more than the target's 1024"),
        (CUDA, lambda: K.schedule_reduce(topi.sum(A, axis=1)),
         dict(reduce_thread=128, out_thread=1, auto_unroll_max_step=0),
         r"'reduce_thread' = 128 .* \[1, 64\] \(the target's threads per block\)"),
        ("cuda", lambda: K.schedule_pool(topi.nn.pool2d(P, (3, 3), (1, 1), (1, 1), (0,) * 4, "max")),
         dict(reduce_thread=4, out_thread=0, auto_unroll_max_step=0), r"schedule_pool: knob 'out_thread' = 0"),
        ("cuda", lambda: K.schedule_adaptive_pool(topi.nn.adaptive_pool(P, (5, 5), "avg")),
         dict(reduce_thread=4, out_thread=8, auto_unroll_max_step=0),
         r"schedule_adaptive_pool: knob 'reduce_thread' = 4 but the windows of .* vary in size"),
        ("cuda", lambda: K.schedule_pool(topi.nn.pool2d(P, (3, 3), (1, 1), (1, 1), (0,) * 4, "max")),
         dict(reduce_thread=1, out_thread=64, auto_unroll_max_step=-1),
         r"knob 'auto_unroll_max_step' = -1 is not valid; expected an int >= 0"),
        ("llvm", lambda: x86.schedule_reduce(topi.sum(A, axis=1)),
         dict(vec=3, parallel_axes=1, auto_unroll_max_step=0),
         r"schedule_reduce: knob 'vec' = 3 does not divide the innermost reduced axis \(40 elements\)"),
        ("llvm", lambda: x86.schedule_reduce(topi.sum(A, axis=1)),
         dict(vec=4, parallel_axes=2, auto_unroll_max_step=0),
         r"knob 'parallel_axes' = 2 is not valid; expected an int in \[0, 1\] \(the output's rank\)"),
        ("llvm", lambda: x86.schedule_reduce(topi.sum(A, axis=1)),
         dict(vec=4.0, parallel_axes=1, auto_unroll_max_step=0), r"knob 'vec' = 4.0 is not valid"),
        ("llvm", lambda: x86.schedule_reduce(topi.sum(A, axis=1)), dict(tile_x=4),
         r"the config has no knob 'vec': it is a config of another template"),
    ]
    for target, schedule, knobs, match in cases:
        with tecc.target.Target(target), autotvm.ApplyConfig(_entity(**knobs)):
            with pytest.raises(InstantiationError, match=match):
                schedule()


# ---------------------------------------------------------------------------------------
# a real GPU
# ---------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_tuned_points_on_gpu():
    import cupy as cp

    A = te.placeholder((4, 32, 28, 28), name="A")
    B = te.placeholder((64, 1000), name="B")
    a, b = rand((4, 32, 28, 28)), rand((64, 1000))
    cases = [
        (A, a, lambda A: K.global_pool(A, "avg"), K.schedule_adaptive_pool, a.mean((2, 3), keepdims=True),
         dict(reduce_thread=256, out_thread=2, auto_unroll_max_step=16)),
        (A, a, lambda A: K.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max"), K.schedule_pool,
         pool_ref(a, (3, 3), (2, 2), (1, 1, 1, 1), "max"), dict(reduce_thread=16, out_thread=32)),
        (B, b, lambda B: K.reduce(B, 1, False, "argmax"), K.schedule_reduce, b.argmax(1),
         dict(reduce_thread=1024, out_thread=1, auto_unroll_max_step=64)),
        (B, b, lambda B: K.reduce(B, 0, False, "mean"), K.schedule_reduce, b.mean(0),
         dict(reduce_thread=16, out_thread=64)),
    ]
    for X, x, make, schedule, want, knobs in cases:
        sp = space_of("cuda", make, schedule, X)
        with tecc.target.Target("cuda"), autotvm.ApplyConfig(point(sp, **knobs)):
            out = make(X)
            mod = tecc.build(schedule(out), [X, out], "cuda")
        got = cp.zeros(want.shape, out.dtype)
        mod(cp.asarray(x), got)
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-4, atol=1e-5, err_msg=f"{out.op.name} {knobs}")


# ---------------------------------------------------------------------------------------
# x86 pooling
# ---------------------------------------------------------------------------------------
X86_POOL_KNOBS = {"vec", "parallel", "unroll_window"}


def test_x86_pool_tasks_spaces_and_points():
    A = te.placeholder((2, 3, 17, 32), name="A")
    make = lambda X: x86.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")  # noqa: E731
    assert "pool2d.x86" in TASK_TABLE and "global_pool.x86" in TASK_TABLE
    sp = space_of("llvm", make, x86.schedule_pool, A)
    assert set(sp.space_map) == X86_POOL_KNOBS
    assert [e.val for e in sp.space_map["vec"].entities] == [1, 4, 8, 16] and len(sp) == 16
    a = rand((2, 3, 17, 32))
    want = pool_ref(a, (3, 3), (2, 2), (1, 1, 1, 1), "max")
    points = [point(sp, vec=v, parallel=p, unroll_window=u) for v, p, u in [(1, 0, 0), (4, 1, 1), (16, 0, 1), (8, 1, 0)]]
    run_points("llvm", make, x86.schedule_pool, A, a, want, points)
    # stride 3: no vectors along the window's axis
    sp = space_of("llvm", lambda X: x86.pool2d(X, (3, 3), (3, 3), (1, 1), (0, 0, 0, 0), "avg"), x86.schedule_pool, A)
    assert [e.val for e in sp.space_map["vec"].entities] == [1]
    # NHWC average pool: the channels in vectors, any width dividing them
    B = te.placeholder((1, 9, 9, 8), name="B")
    make = lambda X: x86.pool2d(X, (2, 2), (1, 1), (1, 1), (0, 0, 1, 1), "avg", layout="NHWC")  # noqa: E731
    sp = space_of("llvm", make, x86.schedule_pool, B)
    b = rand((1, 9, 9, 8))
    want = pool_ref(b.transpose(0, 3, 1, 2), (2, 2), (1, 1), (0, 0, 1, 1), "avg").transpose(0, 2, 3, 1)
    run_points("llvm", make, x86.schedule_pool, B, b, want, [point(sp, vec=v) for v in (1, 4, 8)])


def test_x86_pool_fallback_is_the_default_schedule():
    A = te.placeholder((1, 4, 12, 32), name="A")
    P = topi.nn.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")
    default = str(tecc.lower(x86.schedule_pool(P), [A, P], simple_mode=True))
    with tecc.target.Target("llvm"):
        Q = x86.pool2d(A, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")
        s = x86.schedule_pool(Q)
    registered = str(tecc.lower(s, [A, Q], simple_mode=True))
    assert registered == default and "vectorized for (i3.c, 0, 16)" in default and "parallel for" in default


def test_x86_pool_bad_vec_is_refused():
    A = te.placeholder((1, 4, 12, 30), name="A")
    make = lambda X: topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")  # noqa: E731
    sp = space_of("llvm", make, x86.schedule_pool, A)
    cfg = point(sp)
    cfg._entity_map["vec"] = OtherOptionEntity(8)  # 15 outputs per row: 8 does not divide them
    with tecc.target.Target("llvm"), autotvm.ApplyConfig(cfg):
        with pytest.raises(InstantiationError, match=r"knob 'vec' = 8 is not one of \[1\]"):
            x86.schedule_pool(make(A))
