"""The local builder and runner (tecc.tuner.measure.local): parallel builds with a
timeout, isolated runs (crash, hang, exception), the correctness oracle, the
emulated CUDA path and the GPU limit checks done before compiling."""
import os
import signal
import time
import warnings

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, tir
from templates import tiled_matmul
from tecc.tuner import measure
from tecc.tuner.measure import (
    BuildResult, LocalBuilder, LocalRunner, MeasureError, MeasureErrorNo, MeasureInput, MeasureResult,
    create_measure_batch, measure_option,
)
from tecc.tuner.measure.local import build_candidate, compare_output, reference_inputs


# ---------------------------------------------------------------------------------
# templates
# ---------------------------------------------------------------------------------
@autotvm.template("test_measure/matmul")
def matmul(N, L, M, dtype):
    return tiled_matmul(N, L, M, dtype)


#: what each value of the "mode" knob of test_measure/faulty does
MODES = ["ok", "crash", "hang", "wrong", "refuse", "bad_split", "slow_build", "die_building", "abort"]


@autotvm.template("test_measure/faulty")
def faulty(N):
    """An add whose "mode" knob picks a way to fail (the first, "ok", is the
    reference's)."""
    A = te.placeholder((N,), name="A")
    cfg = autotvm.get_config()
    cfg.define_knob("mode", MODES)
    cfg.define_knob("factor", [4, 8])
    mode = cfg["mode"].val
    if mode == "slow_build":
        time.sleep(60)
    if mode == "die_building":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode in ("crash", "hang", "abort"):
        def body(ins, outs):
            ib = tir.ir_builder.create()
            a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
            if mode == "crash":  # a store a gigabyte away
                with ib.for_range(0, N, name="i") as i:
                    b[i * 100000000] = a[i]
            elif mode == "abort":
                ib.emit(tir.call_extern("int32", "abort"))
            else:  # never ends
                with ib.while_loop(a[0] < a[0] + 1.0):
                    b[0] = b[0] + 1.0
            return ib.get()

        B = te.extern((N,), [A], body, name="B", dtype="float32")
        return te.create_schedule(B.op), [A, B]
    B = te.compute((N,), lambda i: A[i] + (2.0 if mode == "wrong" else 1.0), name="B")
    s = te.create_schedule(B.op)
    if mode == "refuse":
        cfg.raise_error("this config is refused by the template")
    s[B].split(B.op.axis[0], factor=0 if mode == "bad_split" else cfg["factor"].val)
    return s, [A, B]


@autotvm.template("test_measure/scale_cuda")
def scale_cuda(N):
    A = te.placeholder((N,), name="A")
    cfg = autotvm.get_config()
    cfg.define_knob("threads", [32, 64, 2048])
    cfg.define_knob("wrong", [0, 1])
    B = te.compute((N,), lambda i: A[i] * 2.0 + float(cfg["wrong"].val), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=cfg["threads"].val)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


@autotvm.template("test_measure/block2d_cuda")
def block2d_cuda(N, M):
    A = te.placeholder((N, M), name="A")
    cfg = autotvm.get_config()
    cfg.define_knob("ty", [4, 16, 64])
    B = te.compute((N, M), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    by, ty = s[B].split(i, factor=cfg["ty"].val)
    bx, tx = s[B].split(j, factor=32)
    s[B].bind(by, te.thread_axis("blockIdx.y"))
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(ty, te.thread_axis("threadIdx.y"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


@autotvm.template("test_measure/thread_tile_cuda")
def thread_tile_cuda(N):
    """Each thread writes ``tile`` outputs through a local array of ``tile`` floats."""
    A = te.placeholder((N,), name="A")
    cfg = autotvm.get_config()
    cfg.define_knob("tile", [4, 512])
    cfg.define_knob("threads", [64, 1024])
    B = te.compute((N,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    rest, inner = s[B].split(B.op.axis[0], factor=cfg["tile"].val)
    bx, tx = s[B].split(rest, factor=cfg["threads"].val)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[BL].compute_at(s[B], tx)
    return s, [A, B]


@autotvm.template("test_measure/gather")
def gather(N, M):
    """``C[i] = A[Idx[i]] * 2``: the integer input is an index into A."""
    A = te.placeholder((M,), name="A")
    Idx = te.placeholder((N,), name="Idx", dtype="int32")
    C = te.compute((N,), lambda i: A[Idx[i]] * 2.0, name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", C.op.axis[0], num_outputs=2)
    cfg["tile"].apply(s, C, C.op.axis[0])
    return s, [A, Idx, C]


@autotvm.template("test_measure/int_add")
def int_add(N):
    A = te.placeholder((N,), name="A", dtype="int32")
    cfg = autotvm.get_config()
    cfg.define_knob("variant", ["ok", "off", "div0"])
    variant = cfg["variant"].val
    if variant == "div0":  # 7 // 0 where A is 0: the compiled code reports it, the run raises
        B = te.compute((N,), lambda i: A[i] * 3 + te.indexdiv(7, A[i]), name="B")
    else:
        B = te.compute((N,), lambda i: A[i] * 3 + (1 if variant == "off" else 0), name="B")
    return te.create_schedule(B.op), [A, B]


def _inputs(task, indices=None):
    space = task.config_space
    indices = range(len(space)) if indices is None else indices
    return [MeasureInput(task.target, task, space.get(i)) for i in indices]


def _config(task, **knobs):
    """The input whose knobs have the given values."""
    space = task.config_space
    for i in range(len(space)):
        cfg = space.get(i)
        if all(cfg[k].val == v for k, v in knobs.items()):
            return MeasureInput(task.target, task, cfg)
    raise AssertionError(f"no config with {knobs}")


def _batch(task, builder, runner):
    return create_measure_batch(task, measure_option(builder, runner))


def _measure_one(task, runner, **knobs):
    """The result of measuring the one config with ``knobs`` with ``runner``."""
    batch = _batch(task, LocalBuilder(n_parallel=1), runner)
    try:
        (r,) = batch([_config(task, **knobs)])
    finally:
        batch.close()
    return r


# ---------------------------------------------------------------------------------
# llvm: measured, refused, broken
# ---------------------------------------------------------------------------------
def test_llvm_matmul_configs_are_built_in_parallel_and_timed():
    task = autotvm.task.create("test_measure/matmul", args=(16, 16, 16, "float32"), target="llvm")
    builder = LocalBuilder(n_parallel=2)
    runner = LocalRunner(number=2, repeat=3, min_repeat_ms=1, cooldown_interval=0)
    batch = _batch(task, builder, runner)
    try:
        assert batch.n_parallel == 2
        inputs = _inputs(task, [0, 7, 13, len(task.config_space) - 1])
        built = builder.build(inputs)
        assert all(isinstance(b, BuildResult) and os.path.isfile(b.filename) for b in built)
        assert built[0].arg_info == (((16, 16), "float32"),) * 3
        results = runner.run(inputs, built)
        assert [r.error_no for r in results] == [0] * 4
        for r in results:  # seconds per run, one per repeat (each repeat ran >= 1 ms)
            assert len(r.costs) == 3 and all(isinstance(c, float) and 0 < c < 1e-3 for c in r.costs)
            assert r.all_cost > 3e-3
            assert r.all_cost > 0 and not r.emulated
        # where the runs' time went: each candidate was loaded, checked, and timed for
        # at least 3 repeats of 1 ms; nothing slept
        spent = runner.time_spent
        assert set(spent) == {"worker_start", "load", "check", "timing", "other", "cooldown"}
        assert spent["timing"] >= 4 * 3e-3 and spent["load"] > 0 and spent["check"] > 0
        assert spent["cooldown"] == 0 and all(v >= 0 for v in spent.values())
        assert batch(inputs[:1])[0].error_no == 0  # the same again, through the batch function
    finally:
        batch.close()
    assert builder.tmp_dir is None


class _GpuLikeRunner(LocalRunner):
    """A LocalRunner that, like one timing on a GPU, lets the next batch build while
    this one runs (the tuning loop then builds one batch ahead)."""

    @property
    def overlaps_builds(self):
        return True


def test_a_batch_built_ahead_leaves_the_batch_being_measured_on_disk():
    # On the H100 (2026-11-28) most trials of an overlapped tuning run failed with
    # "load_module: no file .../b1_1.tecc": building batch 2 removed batch 1's
    # directory before the runner loaded it.
    task = autotvm.task.create("test_measure/matmul", args=(16, 16, 16, "float32"), target="llvm")
    builder = LocalBuilder(n_parallel=2)
    batch = _batch(task, builder, _GpuLikeRunner(number=1, repeat=1, cooldown_interval=0))
    try:
        first, second, third = _inputs(task, [0, 1]), _inputs(task, [2, 3]), _inputs(task, [4, 5])
        built = builder.build(first)
        ahead = batch.build_async(second).result()  # built while `first` waits to run
        assert [r.error_no for r in batch.run(first, built)] == [0, 0]
        ahead2 = batch.build_async(third).result()
        assert [r.error_no for r in batch.run(second, ahead)] == [0, 0]
        assert not any(os.path.exists(b.filename) for b in built)  # older batches are removed
        assert all(os.path.isfile(b.filename) for b in ahead2)
    finally:
        batch.close()
    assert not any(os.path.exists(b.filename) for b in ahead + ahead2)


def test_an_overlapped_tuning_run_measures_every_trial():
    task = autotvm.task.create("test_measure/matmul", args=(16, 16, 16, "float32"), target="llvm")
    opt = measure_option(LocalBuilder(n_parallel=2), _GpuLikeRunner(number=1, repeat=1, cooldown_interval=0))
    tuner = autotvm.tuner.RandomTuner(task, seed=1)
    errors = []
    tuner.tune(12, opt, callbacks=[lambda t, inputs, results: errors.extend(r.error_no for r in results)])
    assert errors == [0] * 12


def test_crash_hang_abort_and_wrong_answer_each_cost_one_trial():
    task = autotvm.task.create("test_measure/faulty", args=(64,), target="llvm")
    modes = ["ok", "crash", "ok", "hang", "abort", "wrong", "ok"]
    inputs = [_config(task, mode=m, factor=4 if k % 2 else 8) for k, m in enumerate(modes)]
    batch = _batch(task, LocalBuilder(n_parallel=2), LocalRunner(timeout=1, number=1, repeat=1, cooldown_interval=0))
    try:
        results = batch(inputs)
    finally:
        batch.close()
    by_mode = list(zip(modes, results))
    for mode, r in by_mode:
        if mode == "ok":
            assert r.error_no == 0 and r.costs[0] > 0, r
    crash, hang, abort, wrong = (results[modes.index(m)] for m in ("crash", "hang", "abort", "wrong"))
    assert crash.error_no == MeasureErrorNo.RUNTIME_DEVICE and "SIGSEGV" in crash.costs[0]
    assert abort.error_no == MeasureErrorNo.RUNTIME_DEVICE and "SIGABRT" in abort.costs[0]
    assert hang.error_no == MeasureErrorNo.RUN_TIMEOUT and "timeout of 1 s" in hang.costs[0]
    assert wrong.error_no == MeasureErrorNo.WRONG_ANSWER
    assert "largest absolute difference 1 " in wrong.costs[0] and "output 'B'" in wrong.costs[0]
    assert "64 of 64 elements" in wrong.costs[0]


def test_instantiation_errors_and_build_failures_do_not_stop_the_batch():
    task = autotvm.task.create("test_measure/faulty", args=(64,), target="llvm")
    modes = ["refuse", "ok", "bad_split", "slow_build", "die_building", "ok"]
    inputs = [_config(task, mode=m, factor=8) for m in modes]
    builder = LocalBuilder(timeout=2, n_parallel=2)
    runner = LocalRunner(number=1, repeat=1, cooldown_interval=0)
    batch = _batch(task, builder, runner)
    try:
        t0 = time.time()
        built = builder.build(inputs)
        took = time.time() - t0
        results = runner.run(inputs, built)
        again = builder.build(inputs[1:2])  # the killed workers were replaced
    finally:
        batch.close()
    assert took < 20
    refuse, ok1, bad_split, slow, died, ok2 = results
    assert refuse.error_no == MeasureErrorNo.INSTANTIATION_ERROR and "refused by the template" in refuse.costs[0]
    assert bad_split.error_no == MeasureErrorNo.INSTANTIATION_ERROR and "factor" in bad_split.costs[0]
    assert slow.error_no == MeasureErrorNo.BUILD_TIMEOUT and "timeout of 2 s" in slow.costs[0]
    assert died.error_no == MeasureErrorNo.COMPILE_HOST and "SIGKILL" in died.costs[0]
    assert ok1.error_no == 0 and ok2.error_no == 0
    assert isinstance(again[0], BuildResult)


def test_integer_outputs_compare_exactly_index_inputs_stay_in_bounds_and_errors_are_reported():
    task = autotvm.task.create("test_measure/gather", args=(64, 5), target="llvm")
    itask = autotvm.task.create("test_measure/int_add", args=(32,), target="llvm")
    runner = LocalRunner(number=1, repeat=1, cooldown_interval=0)
    builder = LocalBuilder(n_parallel=2)
    try:
        batch = _batch(task, builder, runner)
        assert [r.error_no for r in batch(_inputs(task, [0, 1]))] == [0, 0]
        idx = runner._reference.inputs[1]
        assert idx.dtype == np.int32 and idx.min() >= 0 and idx.max() < 5 and len(set(idx.tolist())) > 1
        batch = _batch(itask, builder, runner)
        assert 0 in runner._reference.inputs[0]
        ok, off, div0, ok2 = batch(_inputs(itask, [0, 1, 2, 0]))
        assert ok.error_no == 0 and ok2.error_no == 0
        assert off.error_no == MeasureErrorNo.WRONG_ANSWER and "32 of 32" in off.costs[0] and "exact" in off.costs[0]
        assert div0.error_no == MeasureErrorNo.RUNTIME_DEVICE
        assert "KernelError" in div0.costs[0] and "integer division by zero" in div0.costs[0]

        # a template registered after the workers were forked: they are forked again
        @autotvm.template("test_measure/registered_late")
        def late(N):
            A = te.placeholder((N,), name="A")
            B = te.compute((N,), lambda i: A[i] - 1.0, name="B")
            return te.create_schedule(B.op), [A, B]

        ltask = autotvm.task.create("test_measure/registered_late", args=(8,), target="llvm")
        assert _batch(ltask, builder, runner)(_inputs(ltask))[0].error_no == 0
    finally:
        builder.close()
        runner.close()


def test_ref_input_and_ref_output_replace_the_generated_reference():
    task = autotvm.task.create("test_measure/faulty", args=(16,), target="llvm")
    runner = LocalRunner(number=1, repeat=1, cooldown_interval=0)
    a = np.arange(16, dtype="float32")
    runner.ref_input = [a, np.zeros(16, "float32")]
    runner.ref_output = [a + 2.0]  # what mode "wrong" computes
    batch = _batch(task, LocalBuilder(n_parallel=2), runner)
    try:
        ok, wrong = batch([_config(task, mode="ok", factor=4), _config(task, mode="wrong", factor=4)])
        assert ok.error_no == MeasureErrorNo.WRONG_ANSWER and "got 1, expected 2" in ok.costs[0]
        assert wrong.error_no == 0
        runner.ref_output = None  # the naive schedule's outputs again, on the given inputs
        ok, wrong = batch([_config(task, mode="ok", factor=4), _config(task, mode="wrong", factor=4)])
        assert (ok.error_no, wrong.error_no) == (0, MeasureErrorNo.WRONG_ANSWER)
        assert np.array_equal(runner._reference.expected[1], a + 1.0)
    finally:
        batch.close()
    runner.set_task(task)  # usable again after close()
    try:
        assert runner.run([_config(task, mode="ok", factor=4)], [MeasureResult(["x"], 1, 0.0, 0.0)])[0].costs == ["x"]
    finally:
        runner.close()


def test_cache_flush_still_times_each_repeat():
    task = autotvm.task.create("test_measure/faulty", args=(64,), target="llvm")
    runner = LocalRunner(number=1, repeat=2, cooldown_interval=0, enable_cpu_cache_flush=True)
    batch = _batch(task, LocalBuilder(n_parallel=1), runner)
    try:
        (r,) = batch([_config(task, mode="ok", factor=8)])
    finally:
        batch.close()
    assert r.error_no == 0 and len(r.costs) == 2 and all(c > 0 for c in r.costs)


# ---------------------------------------------------------------------------------
# cuda without a GPU: the emulator, and the limits checked before compiling
# ---------------------------------------------------------------------------------
@pytest.mark.skipif(tecc.cuda(0).exist, reason="checks the emulated path (no GPU)")
def test_cuda_candidates_run_on_the_emulator_and_oversized_blocks_are_refused():
    task = autotvm.task.create("test_measure/scale_cuda", args=(256,), target="cuda")
    builder = LocalBuilder(n_parallel=2)
    runner = LocalRunner(number=1, repeat=1, cooldown_interval=0)
    batch = _batch(task, builder, runner)
    try:
        inputs = [_config(task, threads=t, wrong=w) for t, w in ((32, 0), (64, 0), (2048, 0), (64, 1))]
        r32, r64, r2048, wrong = batch(inputs)
    finally:
        batch.close()
    assert builder.build_kwargs["cuda_arch"] == "sm_80"
    for r in (r32, r64):
        assert r.error_no == 0 and r.emulated and r.costs[0] > 0
    assert r2048.error_no == MeasureErrorNo.INSTANTIATION_ERROR and not r2048.emulated
    assert "threadIdx.x has extent 2048, over the limit of 1024" in r2048.costs[0]
    assert wrong.error_no == MeasureErrorNo.WRONG_ANSWER and wrong.emulated


@pytest.mark.skipif(tecc.cuda(0).exist, reason="checks the emulated path (no GPU)")
def test_l2_flush_option_is_accepted_and_ignored_by_the_emulator():
    task = autotvm.task.create("test_measure/scale_cuda", args=(256,), target="cuda")
    runner = LocalRunner(number=1, repeat=2, cooldown_interval=0, enable_l2_flush=True)
    r = _measure_one(task, runner, threads=64, wrong=0)
    assert runner.enable_l2_flush and r.error_no == 0 and r.emulated and len(r.costs) == 2


@pytest.mark.gpu
def test_l2_flush_makes_every_timed_run_start_cold():  # pragma: no cover - GPU machines
    # 2 x 8 MiB read and written: fits the L2 of an A100/H100, so warm runs hit it
    task = autotvm.task.create("test_measure/scale_cuda", args=(1 << 21,), target="cuda")
    costs = {False: [], True: []}
    for _ in range(3):  # interleaved rounds: a clock ramp or a neighbour's load hits both
        for flush in (False, True):
            runner = LocalRunner(number=20, repeat=5, cooldown_interval=0, enable_l2_flush=flush)
            r = _measure_one(task, runner, threads=64, wrong=0)
            assert r.error_no == 0 and not r.emulated, r
            costs[flush].append(min(r.costs))
    costs = {flush: min(c) for flush, c in costs.items()}
    assert costs[True] > costs[False], costs


@pytest.mark.gpu
def test_an_overlapped_gpu_tuning_run_measures_every_trial():  # pragma: no cover - GPU machines
    # one config per batch: three batches, each built while the one before runs
    task = autotvm.task.create("test_measure/block2d_cuda", args=(256, 256), target="cuda")
    runner = LocalRunner(number=2, repeat=1, cooldown_interval=0)
    opt = measure_option(LocalBuilder(n_parallel=1), runner)
    errors = []
    autotvm.tuner.RandomTuner(task, seed=0).tune(
        3, opt, callbacks=[lambda t, inputs, results: errors.extend((r.error_no, r.costs) for r in results)])
    assert runner.overlaps_builds
    assert [e for e, _ in errors] == [0, 0, 0], errors


def _no_nvrtc(monkeypatch):
    import tecc.cuda_codegen as cg

    def refuse(*args, **kwargs):
        raise AssertionError("NVRTC was called")

    monkeypatch.setattr(cg, "compile_cuda_resources", refuse)


def test_gpu_limits_are_checked_before_nvrtc(monkeypatch, tmp_path):
    task = autotvm.task.create("test_measure/block2d_cuda", args=(128, 64), target="cuda")
    _no_nvrtc(monkeypatch)
    big = build_candidate(_config(task, ty=64), str(tmp_path), {"cuda_arch": "sm_80"})
    assert isinstance(big, MeasureResult) and big.error_no == MeasureErrorNo.INSTANTIATION_ERROR
    assert "2048 threads per block" in big.costs[0] and "limit of 1024" in big.costs[0]
    # TVM-style limits from build_kwargs tighten the check
    small = build_candidate(_config(task, ty=4), str(tmp_path),
                            {"cuda_arch": "sm_80", "checks": {"gpu": {"max_threads_per_block": 64}}})
    assert small.error_no == MeasureErrorNo.INSTANTIATION_ERROR and "limit of 64" in small.costs[0]
    # within the limits, compiling is reached (and here refused: NVRTC is patched away)
    fits = build_candidate(_config(task, ty=4), str(tmp_path), {"cuda_arch": "sm_80"})
    assert fits.error_no == MeasureErrorNo.COMPILE_DEVICE and "NVRTC was called" in fits.costs[0]


def test_thread_tiles_that_cannot_stay_in_registers_are_refused_before_nvrtc(monkeypatch, tmp_path):
    from tecc.tir.analysis.occupancy import REGISTERS_OVERHEAD_MIN, registers_per_thread_cap

    assert registers_per_thread_cap(64, "sm_80") == 255
    assert registers_per_thread_cap(1024, "sm_80") == 64
    assert registers_per_thread_cap(512, "sm_90") == 128
    assert registers_per_thread_cap(100, "sm_80") == 255  # 4 warps
    task = autotvm.task.create("test_measure/thread_tile_cuda", args=(1 << 20,), target="cuda")
    _no_nvrtc(monkeypatch)
    # 512 floats per thread: at least 16 + 512 registers, over the 255 a thread can have
    big = build_candidate(_config(task, tile=512, threads=64), str(tmp_path), {"cuda_arch": "sm_80"})
    assert big.error_no == MeasureErrorNo.INSTANTIATION_ERROR
    assert f"keeps 2048 bytes of arrays per thread in use at once (B.local 2048 B): at least " \
        f"{REGISTERS_OVERHEAD_MIN + 512}" \
        in big.costs[0]
    assert "over the 255 a thread of a 64-thread block gets on sm_80" in big.costs[0]
    assert "use a smaller tile per thread or fewer threads per block" in big.costs[0]
    # 4 floats per thread fit even with 1024 threads (16 + 4 <= 64): NVRTC is reached
    for threads in (64, 1024):
        fits = build_candidate(_config(task, tile=4, threads=threads), str(tmp_path), {"cuda_arch": "sm_80"})
        assert fits.error_no == MeasureErrorNo.COMPILE_DEVICE and "NVRTC was called" in fits.costs[0]


def test_too_many_registers_per_block_is_an_instantiation_error(monkeypatch, tmp_path):
    import dataclasses

    import tecc.cuda_codegen as cg

    real = cg.compile_cuda_resources

    def greedy(source, arch):
        cubin, resources = real(source, arch)
        return cubin, {k: dataclasses.replace(r, registers=255) for k, r in resources.items()}

    monkeypatch.setattr(cg, "compile_cuda_resources", greedy)
    task = autotvm.task.create("test_measure/block2d_cuda", args=(128, 64), target="cuda")
    r = build_candidate(_config(task, ty=16), str(tmp_path), {"cuda_arch": "sm_80"})
    assert r.error_no == MeasureErrorNo.INSTANTIATION_ERROR
    assert "255 registers per thread x 512 threads = 130560 registers per block" in r.costs[0]
    assert "over the limit of 65536 registers per block of sm_80" in r.costs[0]
    fits = build_candidate(_config(task, ty=4), str(tmp_path), {"cuda_arch": "sm_80"})  # 255 x 128 fits
    assert isinstance(fits, BuildResult)


# ---------------------------------------------------------------------------------
# the oracle's pieces
# ---------------------------------------------------------------------------------
def test_reference_inputs_are_deterministic_and_typed():
    info = (((4, 5), "float32"), ((8,), "int8"), ((8,), "uint8"), ((6,), "bool"), ((3,), "bfloat16"),
            ((50,), "int32"))
    first, again = reference_inputs(info, {5: 3}), reference_inputs(info, {5: 3})
    for a, b in zip(first, again):
        assert np.array_equal(a, b)
    f, i8, u8, flags, bf, idx = first
    assert f.dtype == np.float32 and -1 <= f.min() and f.max() < 1
    assert i8.dtype == np.int8 and -8 <= i8.min() and i8.max() < 8
    assert u8.dtype == np.uint8 and u8.max() < 16 and flags.dtype == np.bool_
    assert bf.dtype == np.uint16 and idx.min() >= 0 and idx.max() < 3
    assert not np.array_equal(reference_inputs(info, seed=1)[0], f)


def test_the_oracle_takes_the_narrow_types():
    """Inputs of int4/int2 in their range as their bits, of float8 rounded to it, of
    float8_e8m0fnu (no zero, no sign) powers of two; outputs compared by value; an
    unwritten output differs from the expected one everywhere (float4_e2m1fn has no
    NaN to poison it with)."""
    from tecc.runtime import dtypes
    from tecc.tuner.measure.local import _unwritten

    info = (((64,), "int4"), ((64,), "int2"), ((64,), "float8_e4m3fn"), ((64,), "float8_e8m0fnu"),
            ((64,), "float4_e2m1fn"))
    i4, i2, f8, e8, f4 = reference_inputs(info)
    assert all(a.dtype == np.uint8 for a in (i4, i2, f8, e8, f4))
    assert dtypes.numbers(i4, "int4").min() >= -8 and dtypes.numbers(i2, "int2").max() <= 1
    assert np.abs(dtypes.decode(f8, "float8_e4m3fn")).max() <= 1.0
    assert set(np.log2(dtypes.decode(e8, "float8_e8m0fnu")).tolist()) <= set(range(-4, 4))
    for arr, dtype in ((f8, "float8_e4m3fn"), (f4, "float4_e2m1fn"), (i4, "int4")):
        poison = _unwritten(arr, dtype)
        assert poison.dtype == arr.dtype and not np.any(poison == arr), dtype
        assert compare_output(arr.copy(), arr, dtype, "C") is None
        assert compare_output(poison, arr, dtype, "C").startswith("C differs from the reference in 64 of 64")
    step = dtypes.encode(dtypes.decode(f8, "float8_e4m3fn") * 1.1, "float8_e4m3fn")  # a step or two away
    assert compare_output(step, f8, "float8_e4m3fn", "C") is None


def test_compare_output_tolerances_by_dtype():
    e = np.linspace(-3, 3, 12, dtype="float32").reshape(3, 4)
    assert compare_output(e + 1e-6, e, "float32", "C") is None
    msg = compare_output(e + np.eye(3, 4, dtype="float32") * 0.5, e, "float32", "C")
    assert msg.startswith("C differs from the reference in 3 of 12 elements: largest absolute difference 0.5")
    nan = e.copy()
    nan[1, 2] = np.nan
    assert "1 of 12" in compare_output(nan, e, "float32", "C")
    assert compare_output(nan, nan, "float32", "C") is None
    assert compare_output(np.array([3], "int32"), np.array([3], "int32"), "int32", "D") is None
    assert "exact" in compare_output(np.array([4], "int32"), np.array([3], "int32"), "int32", "D")
    assert "shape" in compare_output(e[:2], e, "float32", "C")


# ---------------------------------------------------------------------------------
# bad options
# ---------------------------------------------------------------------------------
def test_measure_option_rejects_unknown_builders_and_runners():
    with pytest.raises(MeasureError, match="unknown builder 'rpc'"):
        measure_option(builder="rpc", runner="local")
    with pytest.raises(MeasureError, match="unknown runner 'remote'"):
        measure_option(builder="local", runner="remote")
    with pytest.raises(MeasureError, match="builder must be a Builder"):
        measure_option(builder=3, runner="local")
    with pytest.raises(MeasureError, match="runner must be a Runner"):
        measure_option(builder="local", runner=object())
    opt = measure_option(builder="local", runner="local")
    assert isinstance(opt["builder"], LocalBuilder) and isinstance(opt["runner"], LocalRunner)


@pytest.mark.parametrize("kwargs, match", [
    ({"build_func": "ndk"}, "unknown build_func 'ndk'"),
    ({"timeout": 0}, "timeout must be a positive number"),
    ({"n_parallel": 0}, "n_parallel must be a positive int"),
    ({"build_kwargs": {"opt": 3}}, "unknown build option 'opt'"),
    ({"build_kwargs": {"checks": {"gpu": {"max_warps": 4}}}}, "unknown GPU limit 'max_warps'"),
    ({"build_kwargs": {"checks": {"gpu": {"max_threads_per_block": -1}}}}, "must be a positive int"),
    ({"build_kwargs": {"checks": {"cpu": {}}}}, "must be \\{'gpu'"),
])
def test_bad_builder_options(kwargs, match):
    with pytest.raises(MeasureError, match=match):
        LocalBuilder(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"number": 0}, "number must be an int >= 1"),
    ({"repeat": 1.5}, "repeat must be an int >= 1"),
    ({"timeout": -1}, "timeout must be a positive number"),
    ({"min_repeat_ms": -5}, "min_repeat_ms must be a non-negative number"),
    ({"cooldown_interval": "x"}, "cooldown_interval must be a non-negative number"),
    ({"module_loader": lambda path: None}, "module_loader must be a module-level function"),
])
def test_bad_runner_options(kwargs, match):
    with pytest.raises(MeasureError, match=match):
        LocalRunner(**kwargs)


def test_bad_reference_overrides_are_refused_at_set_task():
    task = autotvm.task.create("test_measure/faulty", args=(16,), target="llvm")
    runner = LocalRunner()
    try:
        runner.ref_input = [np.zeros(16, "float32")]
        with pytest.raises(MeasureError, match="ref_input has 1 arrays, but task 'test_measure/faulty' has 2"):
            runner.set_task(task)
        runner.ref_input = [np.zeros(16, "float64"), np.zeros(16, "float32")]
        with pytest.raises(MeasureError, match=r"ref_input\[0\] is float64\[16\], but argument 0"):
            runner.set_task(task)
        runner.ref_input = None
        runner.ref_output = [np.zeros(16, "float32")]
        with pytest.raises(MeasureError, match="ref_output needs ref_input"):
            runner.set_task(task)
        runner.ref_input = [np.zeros(16, "float32")] * 2
        runner.ref_output = [np.zeros(16, "float32")] * 2
        with pytest.raises(MeasureError, match="ref_output has 2 arrays, but task .* has 1 outputs"):
            runner.set_task(task)
        with pytest.raises(MeasureError, match="2 inputs but 1 build results"):
            runner.run([1, 2], [3])
    finally:
        runner.close()


@autotvm.template("test_measure/always_refused")
def always_refused(N):
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] * 2.0, name="B")
    cfg = autotvm.get_config()
    cfg.define_knob("k", [1, 2])
    cfg.raise_error("never valid")
    return te.create_schedule(B.op), [A, B]


def test_a_task_without_a_reference_is_refused_at_set_task():
    task = autotvm.task.create("test_measure/always_refused", args=(8,), target="llvm")
    runner = LocalRunner()
    try:
        with pytest.raises(MeasureError, match="reference of task 'test_measure/always_refused' cannot be made: "
                                               "its template failed .*never valid"):
            runner.set_task(task)
    finally:
        runner.close()


def test_an_input_that_cannot_reach_the_workers_gets_an_error_result():
    task = autotvm.task.create("test_measure/faulty", args=(16,), target="llvm")
    builder = LocalBuilder(n_parallel=1)
    try:
        (r,) = builder.build([MeasureInput("llvm", task, lambda: "not a config")])
    finally:
        builder.close()
    assert r.error_no == MeasureErrorNo.UNKNOWN_ERROR and "cannot be sent to the build workers" in r.costs[0]


def test_run_without_a_task_is_refused():
    runner = LocalRunner()
    try:
        with pytest.raises(MeasureError, match="call runner.set_task"):
            runner.run([], [])
    finally:
        runner.close()


def test_measure_package_exports():
    for name in ("MeasureInput", "MeasureResult", "MeasureErrorNo", "Builder", "Runner", "measure_option",
                 "create_measure_batch", "LocalBuilder", "LocalRunner", "BuildResult"):
        assert hasattr(measure, name), name


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_the_quick_comparison_agrees_with_the_exact_one(dtype):
    from tecc.tuner.measure import local as L

    rng = np.random.default_rng(5)
    e = rng.standard_normal((64, 64)).astype(dtype)
    rtol = L.TOLERANCES[dtype]
    cases = {"equal": e.copy(), "close": (e * (1 + rtol / 10)).astype(dtype)}
    for name, (i, j, v) in {"nan": (3, 4, np.nan), "inf": (5, 6, np.inf), "far": (7, 8, 50.0)}.items():
        g = e.copy()
        g[i, j] = v
        cases[name] = g
    edge = e.astype("float64")
    edge[0, 0] += 0.99 * (rtol * max(1.0, float(np.abs(e).max())) + rtol * abs(float(e[0, 0])))
    cases["at the edge"] = edge.astype(dtype)
    for name, g in cases.items():
        quick = L._clearly_matches(g, e, dtype, rtol)
        exact = L.compare_output(g, e, dtype, "out")
        assert not quick or exact is None, name  # quick says "match" only where the exact path agrees
        if name in ("equal", "close"):
            assert quick and exact is None, name
        if name in ("nan", "inf", "far"):
            assert exact is not None and "differs from the reference in 1 of 4096" in exact, name
    e[1, 1] = np.inf  # an infinite expected value goes the exact way
    assert not L._clearly_matches(e.copy(), e, dtype, rtol) and L.compare_output(e.copy(), e, dtype, "out") is None
    ints = np.arange(12, dtype="int32")
    assert L._clearly_matches(ints.copy(), ints, "int32", 0.0) and not L._clearly_matches(ints[::-1].copy(), ints,
                                                                                          "int32", 0.0)


def test_the_builder_leaves_the_cpu_emulation_out_when_the_runner_has_a_gpu(tmp_path):
    import zipfile

    task = autotvm.task.create("test_measure/scale_cuda", args=(256,), target="cuda")
    names = {}
    for emulation in (False, True):
        res = build_candidate(_config(task, threads=64, wrong=0),
                              str(tmp_path), {"cuda_arch": "sm_90", "cpu_emulation": emulation})
        assert isinstance(res, BuildResult), res
        with zipfile.ZipFile(res.filename) as z:
            names[emulation] = set(z.namelist())
    assert "emulation.so" in names[True] and "emulation.so" not in names[False]
    runner = LocalRunner(number=1, repeat=1, cooldown_interval=0)
    try:
        runner.set_task(task)
        assert runner.get_build_kwargs()["cpu_emulation"] is (not tecc.cuda(0).exist)
    finally:
        runner.close()


class _DeviceArray(np.ndarray):
    """A numpy array posing as a device array (cupy's ``.get()`` copies to the host)."""

    def get(self):
        return np.asarray(self).copy()


class _FakeCupy:
    """numpy behind cupy's names, returning :class:`_DeviceArray`s: drives the
    runner's device-side path on a machine without a GPU."""

    def __getattr__(self, name):
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, type):
            return attr

        def call(*args, **kwargs):
            out = attr(*args, **kwargs)
            return out.view(_DeviceArray) if isinstance(out, np.ndarray) and not np.isscalar(out) else out
        return call


@pytest.mark.parametrize("wrong", [0, 1])
def test_on_a_gpu_candidates_are_checked_where_they_ran(monkeypatch, wrong):
    from tecc.tuner.measure import local as L

    fake = _FakeCupy()
    uploads = []

    def device_reference(state, ref):
        uploads.append(ref.key)
        return fake, [np.asarray(a).view(_DeviceArray) for a in ref.inputs], \
            {i: np.asarray(ref.expected[i]).view(_DeviceArray) for i in ref.outputs}

    monkeypatch.setattr(L, "_device_reference", device_reference)
    checked_with = []
    real_check = L._clearly_matches

    def clearly_matches(got, expected, dtype, rtol, xp=np):
        checked_with.append((type(got), xp))
        return real_check(got, expected, dtype, rtol, xp)

    monkeypatch.setattr(L, "_clearly_matches", clearly_matches)
    task = autotvm.task.create("test_measure/scale_cuda", args=(512,), target="cuda")
    inp = _config(task, threads=64, wrong=wrong)
    builder = LocalBuilder(n_parallel=1)  # (its files live as long as it does)
    (built,) = builder.build([inp])
    a = np.random.default_rng(0).uniform(-1, 1, 512).astype("float32")
    ref = L._Reference("k", built.arg_info, [1], [a, np.zeros(512, "float32")], {1: a * 2}, names=("A", "B"))
    state = {"reference": ref, "gpu": True}
    job = {"path": built.filename, "reference_key": "k", "cuda": True, "loader": None, "number": 1, "repeat": 1,
           "min_repeat_ms": 0, "flush": False, "flush_l2": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the emulator's notice
        reply = L._worker_measure(state, job)
    assert uploads == ["k"]
    assert checked_with[0] == (_DeviceArray, fake)  # first on the device
    if wrong:  # the device check fails, the host words the message
        assert reply["error_no"] == int(MeasureErrorNo.WRONG_ANSWER)
        assert "output 'B' (argument 1) differs from the reference in 512 of 512 elements" in reply["message"]
    else:
        assert reply["error_no"] == 0 and len(reply["costs"]) == 1
    builder.close()


def test_builder_workers_default_to_the_cpus_this_process_may_use(monkeypatch):
    # a container or taskset that allows 3 of the machine's CPUs: 3 workers, not one per CPU
    import os as _os  # noqa: PLC0415

    monkeypatch.setattr(_os, "sched_getaffinity", lambda pid: {1, 4, 6}, raising=False)
    monkeypatch.setattr(_os, "cpu_count", lambda: 64)
    assert LocalBuilder().n_parallel == 3
    assert LocalBuilder(n_parallel=5).n_parallel == 5
