"""The tunable SGEMM (task ``"sgemm.cuda"``, ``topi.cuda.gemm.sgemm_template``): its
space is the hand-written schedule's parameters; a point that does not fit is
refused with its reason (nothing compiled); the others build for sm_80 and sm_90
and compute the right answer on the CUDA emulator; with nothing tuned it is the
hand schedule's default, and under apply_history_best the tuned point."""
import re
import time
import warnings

import numpy as np
import pytest

import tecc
from tecc import autotvm
from tecc.errors import ScheduleError
from tecc.topi import cuda as K
from tecc.topi.cuda import gemm
from tecc.tuner.measure import MeasureErrorNo, MeasureInput, MeasureResult, build_candidate
from tecc.tuner.task.space import InstantiationError

from irhelpers import build_all_arches

TARGET = "cuda -arch=sm_90"
M, N, KD = 128, 128, 64


@pytest.fixture(scope="module")
def task():
    return autotvm.task.create("sgemm.cuda", args=(M, N, KD, "float32"), target=TARGET)


def _knobs(cfg) -> tuple:
    return tuple(cfg[k].val for k in ("block", "thread_tile", "k_tile", "double_buffer", "a_kmajor",
                                      "register_prefetch"))


def _point(task, block, thread_tile, k_tile, double_buffer, a_kmajor, register_prefetch=0):
    space = task.config_space
    values = dict(block=block, thread_tile=thread_tile, k_tile=k_tile, double_buffer=double_buffer,
                  a_kmajor=a_kmajor, register_prefetch=register_prefetch)
    knob = [[e.val for e in space.space_map[name].entities].index(values[name]) for name in space.space_map]
    return space.get(space.knob2point(knob))


def _source(mod) -> str:
    return mod.imported_modules[0].get_source()


def test_space_is_the_hand_schedules_parameters(task):
    space = task.config_space
    assert list(space.space_map) == ["block", "thread_tile", "k_tile", "double_buffer", "a_kmajor",
                                     "register_prefetch"]
    assert {k: [e.val for e in v.entities] for k, v in space.space_map.items()} == gemm.SGEMM_KNOBS
    assert len(space) == 3 * 3 * 4 * 2 * 2 * 2 == 288
    # the knob came last: the 144 points measured before it kept their indices
    assert all(space.get(i)["register_prefetch"].val == 0 for i in range(144))
    assert task.flop == 2 * M * N * KD
    assert task.workload == ("sgemm.cuda", M, N, KD, "float32")


def test_every_point_is_refused_with_its_reason_or_instantiates(task):
    refused = {}
    for i in range(len(task.config_space)):
        cfg = task.config_space.get(i)
        try:
            s, args = task.instantiate(cfg)
        except InstantiationError as err:
            refused[_knobs(cfg)] = str(err)
            continue
        assert [a.name for a in args] == ["A", "B", "C"] and s[args[2]].op.name == "C"
    # at 128x128x64 every block and k_tile fits; 128 blocks of 2x2 tiles (1024 threads)
    # with 4-deep slices (512-element tiles) leave part of the block idle in each fetch;
    # thread tiles of 8 (2x2 of 8x8: 256 accumulators) cannot stay in registers
    # register_prefetch without a double buffer has no prefetch to split
    spread = [(128, 2, 4, db, t, rp) for db in (0, 1) for t in (0, 1) for rp in (0, 1)]
    no_buffer = [k for k in refused if k[3] == 0 and k[5] == 1 and k not in spread and k[1] != 8]
    too_big = [k for k in refused if k[1] == 8]
    assert sorted(refused) == sorted(spread + no_buffer + too_big) and too_big and no_buffer
    assert {k[1] for k in refused if k not in spread + no_buffer} == {8}
    for k in no_buffer:
        assert "register_prefetch=1 with double_buffer=0: it splits the prefetch of a double buffer" in refused[k]
    for k in spread:
        assert re.search(r"block=128, k_tile=4: a 128x4 shared tile \(512 elements\) does not spread evenly "
                         r"over the block's 1024 threads", refused[k])
    for k in too_big:
        assert "fails the template's multi_filter: it does not fit the sizes, or its block does not fit" in refused[k]
    assert set(task.config_space.valid_indexes()) == {
        i for i in range(len(task.config_space)) if _knobs(task.config_space.get(i)) not in refused}


@pytest.mark.parametrize("sizes, knobs, reason", [
    ((96, 128, 64), (64, 4, 8, 0), r"M=96 is not a multiple of block=64"),
    ((128, 96, 64), (128, 4, 8, 0), r"N=96 is not a multiple of block=128"),
    ((128, 128, 40), (64, 4, 16, 0), r"K=40 is not a multiple of k_tile=16"),
    ((128, 128, 64), (128, 2, 4, 0), r"does not spread evenly over the block's 1024 threads"),
    ((128, 128, 32), (64, 4, 32, 1), r"double_buffer=1 with K=32, k_tile=32: the reduction is a single slice"),
])
def test_a_point_that_does_not_fit_is_refused_and_still_declared(sizes, knobs, reason):
    t = autotvm.task.create("sgemm.cuda", args=(*sizes, "float32"), target=TARGET)
    cfg = _point(t, *knobs, 0)
    with pytest.raises(InstantiationError, match=reason):
        t.instantiate(cfg)
    # under ApplyConfig the template records the refusal and returns the declared computation
    with autotvm.ApplyConfig(cfg), tecc.target.Target(TARGET):
        s, args = gemm.sgemm_template(*sizes)
    assert not cfg.valid() and any(re.search(reason, e) for e in cfg.errors)
    assert [a.name for a in args] == ["A", "B", "C"] and len(s.stages) == 3


def test_config_errors_name_each_rule():
    assert gemm.sgemm_config_errors(128, 128, 64, 64, 4, 8) == []
    assert re.search(r"block=32 is not a multiple of 2 x thread_tile=32", gemm.sgemm_config_errors(64, 64, 64, 32,
                                                                                                   32, 8)[0])
    (too_many,) = [e for e in gemm.sgemm_config_errors(512, 512, 64, 256, 2, 8) if "threads per block" in e]
    assert "64x64 = 4096 threads per block, over CUDA's 1024" in too_many


def test_the_builder_refuses_thread_tiles_that_cannot_stay_in_registers(task, tmp_path):
    # 2x2 virtual threads of 8x8 accumulators: 256 floats a thread.  The template's
    # multi_filter refuses the config before anything is lowered...
    assert not task.config_space.is_index_valid(_point(task, 32, 8, 4, 0, 0).index)
    res = build_candidate(MeasureInput(task.target, task, _point(task, 32, 8, 4, 0, 0)), str(tmp_path))
    assert isinstance(res, MeasureResult) and res.error_no == MeasureErrorNo.INSTANTIATION_ERROR
    assert "fails the template's multi_filter" in res.costs[0]
    # ...and the check after lowering, which the forecast follows, says why
    from tecc.tir.analysis import register_pressure
    from tecc.tuner.measure.local import _kernels

    s, args = gemm.sgemm(M, N, KD, block=32, thread_tile=8, k_tile=4)
    (kernel,) = _kernels(tecc.lower(s, args, target=TARGET))
    why = register_pressure(kernel, "sm_80")
    assert "registers per thread" in why and "C.local 1024 B" in why


def _run_and_compare(mod, m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    c = np.full((m, n), np.nan, "float32")  # an element nothing writes fails
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "running on the CPU emulation"
        mod(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4)
    return a, b, c


@pytest.mark.parametrize("knobs", [
    (64, 4, 8, 0, 0),     # the fallback
    (32, 2, 16, 1, 1),    # double-buffered, A k-major: also race-checked (a small block)
    (32, 2, 16, 1, 1, 1),  # the same, prefetched through registers: race-checked too
    (128, 4, 16, 1, 1, 1),  # the best structure measured on the H100, prefetched through registers
    (64, 2, 8, 0, 1),     # A k-major, scalar fetches
    (128, 4, 8, 1, 1),    # both, float4 fetches
    (32, 4, 32, 1, 0),    # double-buffered 32-deep slices
    (128, 2, 32, 0, 0),   # 1024 threads
])
def test_valid_points_build_for_sm80_sm90_and_compute_the_product(task, knobs):
    s, args = task.instantiate(_point(task, *knobs))
    mod = build_all_arches(s, args)
    a, b, c = _run_and_compare(mod, M, N, KD, sum(knobs))
    assert ("A_T" in _source(mod)) == bool(knobs[4])
    assert ("prefetch" in _source(mod)) == (knobs[5:] == (1,))
    if knobs[:5] == (32, 2, 16, 1, 1):  # the checking interpreter is slow: one block of the smallest
        assert mod.check(a, b, c, max_blocks=1) == []


def _built(s, args, name="sgemm"):
    return tecc.build(s, args, target=TARGET, name=name)


def test_the_fallback_is_the_hand_schedules_default():
    assert gemm.SGEMM_FALLBACK == {"block": 64, "thread_tile": 4, "k_tile": 8, "double_buffer": 0, "a_kmajor": 0,
                                   "register_prefetch": 0}
    with tecc.target.Target(TARGET):
        s, args = gemm.sgemm_template(M, N, KD)  # nothing tuned: the fallback context
    hand_s, hand_args = K.sgemm(M, N, KD, block=64, thread_tile=4, k_tile=8)
    assert _source(_built(s, args)) == _source(_built(hand_s, hand_args))


def test_the_fallback_moves_to_the_nearest_config_that_fits():
    with tecc.target.Target(TARGET):
        s, args = gemm.sgemm_template(32, 96, 12)  # no 64 block, no 8-deep slice: 32 x 4 x 4
    hand_s, hand_args = K.sgemm(32, 96, 12, block=32, thread_tile=4, k_tile=4)
    assert _source(_built(s, args)) == _source(_built(hand_s, hand_args))


def test_apply_history_best_builds_the_tuned_point(task):
    cfg = _point(task, 32, 2, 8, 1, 1)
    worse = _point(task, 64, 4, 8, 0, 0)
    records = [(MeasureInput(task.target, task, c), MeasureResult([cost], 0, 1.0, time.time(), True))
               for c, cost in ((worse, 2e-3), (cfg, 1e-3))]
    with autotvm.apply_history_best(records), tecc.target.Target(TARGET):
        s, args = gemm.sgemm_template(M, N, KD, "float32")
    hand_s, hand_args = K.sgemm(M, N, KD, 32, 2, 8, double_buffer=True, a_kmajor=True)
    assert _source(_built(s, args)) == _source(_built(hand_s, hand_args))


def test_a_record_made_before_the_register_prefetch_knob_builds_without_it(task):
    # the H100's records of 2026-11-28 have five knobs; the template has defined six since
    line = ('{"input": ["cuda", "sgemm.cuda", [128, 128, 64, "float32"], {}], "config": {"index": 122, '
            '"code_hash": null, "entity": [["block", "ot", 32], ["thread_tile", "ot", 2], ["k_tile", "ot", 8], '
            '["double_buffer", "ot", 1], ["a_kmajor", "ot", 1]]}, "result": [[0.001], 0, 1.0, 1795772492.0], '
            '"error": null, "env": {"emulated": true}, "v": "tecc-autotvm-1"}')
    record = autotvm.record.decode(line)
    with autotvm.apply_history_best([record]), tecc.target.Target(TARGET):
        s, args = gemm.sgemm_template(M, N, KD, "float32")
    assert _knobs(record[0].config) == (32, 2, 8, 1, 1, 0)
    hand_s, hand_args = K.sgemm(M, N, KD, 32, 2, 8, double_buffer=True, a_kmajor=True)
    assert _source(_built(s, args)) == _source(_built(hand_s, hand_args))


def test_knobs_a_record_lacks_are_refused_unless_appended_options():
    from tecc.tuner.task.space import ConfigEntity, OtherOptionEntity  # noqa: PLC0415

    cfg = ConfigEntity(0, None, {"vec": OtherOptionEntity(2)})
    assert cfg.define_knob("vec", [1, 2, 4]) == [] and cfg["vec"].val == 2
    # an option defined after a knob the record has: added later, its first value
    assert cfg.define_knob("unroll", [0, 16]) == [] and cfg["unroll"].val == 0
    with pytest.raises(InstantiationError, match="no knob 'tile_x': it is a config of another template, or was "
                                                 "recorded before the template defined that knob"):
        cfg.define_split("tile_x", 64, num_outputs=2)
    # none of the template's knobs so far: another template's config
    with pytest.raises(InstantiationError, match="no knob 'block'"):
        ConfigEntity(0, None, {"vec": OtherOptionEntity(2)}).define_knob("block", [32, 64])


def test_numpy_sizes_are_accepted():
    with tecc.target.Target(TARGET):
        s, args = gemm.sgemm_template(np.int64(64), np.int32(64), np.int64(64))
    assert [tuple(int(d) for d in a.shape) for a in args] == [(64, 64), (64, 64), (64, 64)]


@pytest.mark.parametrize("sizes, dtype, match", [
    ((0, 64, 64), "float32", r"sgemm.cuda: M must be a positive int \(a matrix size\), got 0"),
    ((64, 64.0, 64), "float32", r"sgemm.cuda: N must be a positive int \(a matrix size\), got 64.0"),
    ((64, 64, True), "float32", r"sgemm.cuda: K must be a positive int"),
    ((64, 64, 64), 32, r"sgemm.cuda: dtype must be a string such as \"float32\", got 32"),
    ((48, 64, 64), "float32", r"no config of the template fits M=48, N=64, K=64: M and N must be multiples of a "
                              r"block \(32, 64, 128\) and K of a k_tile \(4, 8, 16, 32\); pad the matrices"),
    ((64, 64, 6), "float32", r"no config of the template fits M=64, N=64, K=6"),
])
def test_bad_workloads_raise_schedule_errors(sizes, dtype, match):
    with pytest.raises(ScheduleError, match=match), tecc.target.Target(TARGET):
        gemm.sgemm_template(*sizes, dtype)


def test_a_task_with_a_bad_size_is_refused_at_creation():
    with pytest.raises(ScheduleError, match=r"sgemm.cuda: K must be a positive int \(a matrix size\), got -8"):
        autotvm.task.create("sgemm.cuda", args=(64, 64, -8, "float32"), target=TARGET)
