"""topi's CUDA tuning templates across their spaces, measured the way the tuner
measures them: random points of each task's space (and its fallback) go through
``LocalBuilder`` and ``LocalRunner`` (the CUDA emulator where there is no GPU) with
numpy's answer as the reference.  Every point is either refused before anything is
compiled, with its reason, or compiles -- for sm_80 and sm_90 -- and computes the
right answer.

The ``vec`` knob of the shared-memory templates (``schedule_gemm_tiled`` of dense and
batch_matmul, the direct convolution): the block's threads copy the shared tiles in
vectors of ``vec`` elements (CUDA ``float2``/``float4`` loads where the addresses
allow), narrower for a tile whose rows ``vec`` does not divide; a point where no
tile takes the full width repeats a narrower one and is refused.
"""
import re
import warnings

import numpy as np
import pytest

import tecc
from tecc import autotvm
from tecc.cuda_codegen import compile_cuda
from tecc.topi import testing as T  # (importing topi registers its tasks)
from tecc.te.schedule import Split
from tecc.tuner.measure import BuildResult, LocalBuilder, LocalRunner, MeasureErrorNo, MeasureInput
from tecc.tuner.task.space import ConfigEntity, FallbackConfigEntity, InstantiationError, OtherOptionEntity

#: random points measured per task (plus the fallback config): each costs a compile
#: (lowering, NVRTC twice, the emulator's C) of one to three seconds
POINTS = 4


def _t(shape, dtype="float32"):
    return ("TENSOR", shape, dtype)


#: task -> (workload arguments, numpy reference of the output from the inputs)
TASKS = {
    "dense_large_batch.cuda": ((_t((8, 16)), _t((8, 16)), None, "float32"), lambda x, w: x @ w.T),
    "dense_small_batch.cuda": ((_t((4, 32)), _t((8, 32)), None, "float32"), lambda x, w: x @ w.T),
    "conv2d_nchw.cuda": ((_t((1, 8, 10, 10)), _t((8, 8, 3, 3)), (1, 1), (1, 1, 1, 1), (1, 1), "float32"),
                         lambda a, w: T.conv2d_nchw_python(a, w, 1, 1)),
    "batch_matmul.cuda": ((_t((2, 8, 8)), _t((2, 8, 8))), lambda x, y: x @ y.transpose(0, 2, 1)),
    "reduce.cuda": ((_t((6, 40)), 1, False, "sum"), lambda a: a.sum(1)),
    "dense_tensorcore.cuda": ((_t((32, 32), "float16"), _t((32, 32), "float16"), None, "float32"),
                              lambda x, w: x.astype("float32") @ w.astype("float32").T),
    "conv2d_nchw_tensorcore.cuda": ((_t((1, 16, 6, 6), "float16"), _t((32, 16, 3, 3), "float16"), (1, 1), (1, 1, 1, 1),
                                     (1, 1), "float32"),
                                    lambda a, w: T.conv2d_nchw_python(a.astype("float32"), w.astype("float32"), 1, 1)),
    "batch_matmul_tensorcore.cuda": ((_t((2, 16, 32), "float16"), _t((2, 32, 32), "float16"), None, "float32"),
                                     lambda x, y: x.astype("float32") @ y.astype("float32").transpose(0, 2, 1)),
    # bfloat16 operands, NHWC data, the HWIO kernel a row-major matrix_b
    "conv2d_nhwc_tensorcore.cuda": ((_t((1, 6, 6, 16), "bfloat16"), _t((3, 3, 16, 32), "bfloat16"), (1, 1),
                                     (1, 1, 1, 1), (1, 1), "float32"),
                                    lambda a, w: T.conv2d_nhwc_python(a.astype("float32"), w.astype("float32"), 1, 1)),
    "pool2d.cuda": ((_t((1, 2, 7, 7)), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max"),
                    lambda a: T.poolnd_python(a, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), "max")),
}

#: what a refusal before compiling names: the limit that the point breaks
REFUSALS = re.compile(r"knob 'vec' = \d fits no shared tile .*at most 16 bytes a vector|registers per thread, over the"
                      r"|threads = \d+ > 1024|more than the target's|over the limit of|limit of \d+"
                      r"|fewer than \d+ threads|its block tile does not divide")


def _task(name):
    return autotvm.task.create(name, args=TASKS[name][0], target="cuda")


def _inputs(name, seed=0):
    """Random arrays for the tensor arguments of task ``name``."""
    import ml_dtypes  # noqa: F401 -- numpy's "bfloat16"

    rng = np.random.default_rng(seed)
    tensors = [a for a in TASKS[name][0] if isinstance(a, tuple) and a[:1] == ("TENSOR",)]
    return [rng.uniform(-1, 1, shape).astype(dtype) for _, shape, dtype in tensors]


def _point(task, **values):
    """The point of ``task``'s space whose knobs have ``values`` (a split by its
    sizes, another knob by its value) and whose other knobs take their first choice."""
    space = task.config_space
    knob = []
    for name, dim in space.space_map.items():
        if name not in values:
            knob.append(0)
            continue
        want = values[name]
        knob.append(next(i for i, e in enumerate(dim.entities) if getattr(e, "size", getattr(e, "val", None)) == want))
    return space.get(space.knob2point(knob))


def _build(task, cfg):
    with tecc.target.Target("cuda"):
        s, args = task.instantiate(cfg)
        return tecc.build(s, args, "cuda"), s, args


def _fetch_widths(s):
    """``[(shared stage, lanes of its vectorized loop or 1), ...]`` of schedule ``s``."""
    widths = []
    for st in s.stages:
        if st.op.name.endswith(".shared"):
            attrs = st.iter_var_attrs
            lanes = [rel.factor for rel in st.relations
                     if isinstance(rel, Split) and rel.inner in attrs and attrs[rel.inner].kind == "vectorize"]
            widths.append((st.op.name, lanes[0] if lanes else 1))
    return widths


def _run(mod, inputs, out_shape):
    out = np.zeros(out_shape, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "runs on the CPU emulation"
        mod(*inputs, out)
    return out


# ---------------------------------------------------------------------------------
# every template across its space
# ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def measurer():
    builder = LocalBuilder(n_parallel=1, timeout=120)
    runner = LocalRunner(number=1, repeat=1, timeout=120, cooldown_interval=0)
    yield builder, runner
    builder.close()
    runner.close()


@pytest.mark.parametrize("name", list(TASKS))
def test_every_point_is_refused_with_its_reason_or_compiles_and_is_right(name, measurer):
    builder, runner = measurer
    task = _task(name)
    inputs = _inputs(name)
    want = TASKS[name][1](*inputs).astype("float32")
    runner.ref_input = inputs + [np.zeros_like(want)]
    runner.ref_output = [want]
    runner.set_task(task)
    builder.set_task(task, runner.get_build_kwargs())
    space = task.config_space
    rng = np.random.default_rng(2024)
    # points anywhere in the space (the filter may refuse them) and points it passes
    picks = list(rng.choice(len(space), POINTS, replace=False))
    if space.filtered:
        from tecc.tuner.tuner.tuner import _unvisited

        picks += list(_unvisited(space, set(int(i) for i in picks), rng, 2))
    measure_inputs = [MeasureInput(task.target, task, space.get(int(i))) for i in picks]
    measure_inputs.append(MeasureInput(task.target, task, FallbackConfigEntity()))
    built = builder.build(measure_inputs)
    results = runner.run(measure_inputs, built)
    emulated = not tecc.cuda(0).exist
    compiled = 0
    for inp, b, r in zip(measure_inputs, built, results):
        where = f"{name} {inp.config}"
        if isinstance(b, BuildResult):
            assert r.error_no == MeasureErrorNo.NO_ERROR, f"{where}: {r.costs}"
            assert r.emulated == emulated and r.costs[0] > 0
            source = tecc.runtime.load_module(b.filename).imported_modules[0].get_source()
            for arch in ("sm_80", "sm_90"):  # (the build itself compiled for sm_80 without a GPU)
                assert compile_cuda(source, arch)[:4] == b"\x7fELF", f"{where}: no cubin for {arch}"
            compiled += 1
        else:  # refused before compiling, and why
            assert r.error_no == MeasureErrorNo.INSTANTIATION_ERROR, f"{where}: {r.error_no} {r.costs}"
            assert REFUSALS.search(r.costs[0]), f"{where}: {r.costs[0]}"
    assert isinstance(built[-1], BuildResult), f"{name}: the fallback config must build: {results[-1].costs}"
    assert compiled >= 2  # the fallback and at least one random point


# ---------------------------------------------------------------------------------
# the vector width of the cooperative fetches
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["dense_large_batch.cuda", "batch_matmul.cuda", "conv2d_nchw.cuda"])
def test_vec_knob_is_in_the_space_and_the_fallback_fetches_element_by_element(name):
    task = _task(name)
    assert [e.val for e in task.config_space.space_map["vec"].entities] == [1, 2, 4]
    cfg = FallbackConfigEntity()
    with tecc.target.Target("cuda"):
        s, _ = task.instantiate(cfg)
    assert cfg["vec"].val == 1
    first = "Pad.shared" if name.startswith("conv") else "placeholder.shared"
    assert _fetch_widths(s) == [(first, 1), ("placeholder.shared", 1)]


@pytest.mark.parametrize("name, knobs, width", [
    ("dense_large_batch.cuda", dict(tile_y=[-1, 1, 4, 2], tile_x=[-1, 1, 8, 1], tile_k=[-1, 2, 4]), 2),
    ("dense_large_batch.cuda", dict(tile_y=[-1, 1, 4, 2], tile_x=[-1, 1, 8, 1], tile_k=[-1, 2, 4]), 4),
    ("batch_matmul.cuda", dict(tile_y=[-1, 2, 4, 1], tile_x=[-1, 1, 8, 1], tile_k=[-1, 1, 8]), 4),
])
def test_vectorized_fetches_load_float2_and_float4_and_stay_right(name, knobs, width):
    task = _task(name)
    mod, _, _ = _build(task, _point(task, vec=width, **knobs))
    source = mod.imported_modules[0].get_source()
    native = {2: "float2", 4: "float4"}[width]
    # both tiles: a native vector load from global memory, a native vector store to shared memory
    assert f"{native} t = *(const {native}*)p;" in source
    assert source.count(f"tecc_load_aligned_float32x{width}(placeholder") == 2
    assert source.count(f"tecc_store_aligned_float32x{width}(placeholder_shared") == 2
    inputs = _inputs(name)
    want = TASKS[name][1](*inputs)
    got = _run(mod, inputs, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if width == 4:  # (the checking interpreter is slow: once per template)
        assert mod.check(*inputs, np.zeros_like(want)) == []  # no race, nothing out of bounds


def test_nhwc_convolution_fetches_input_and_filter_in_float4():
    args = (_t((1, 6, 6, 8)), _t((3, 3, 8, 8)), (1, 1), (1, 1, 1, 1), (1, 1), "float32")
    task = autotvm.task.create("conv2d_nhwc.cuda", args=args, target="cuda")
    cfg = _point(task, tile_f=[-1, 1, 8, 1], tile_y=[-1, 1, 2, 1], tile_x=[-1, 1, 2, 1], tile_rc=[-1, 4],
                 tile_ry=[-1, 3], tile_rx=[-1, 3], vec=4)
    mod, _, _ = _build(task, cfg)
    source = mod.imported_modules[0].get_source()
    # the padded input: whole vectors of channels (zero outside the image) stored as float4
    assert "tecc_store_aligned_float32x4(Pad_shared" in source
    assert "tecc_load_aligned_float32x4(placeholder_1" in source  # the HWIO filter
    rng = np.random.default_rng(1)
    a, w = rng.uniform(-1, 1, (1, 6, 6, 8)).astype("float32"), rng.uniform(-1, 1, (3, 3, 8, 8)).astype("float32")
    want = T.conv2d_nhwc_python(a, w, 1, 1)
    np.testing.assert_allclose(_run(mod, [a, w], want.shape), want, rtol=1e-4, atol=1e-5)
    assert mod.check(a, w, np.zeros(want.shape, "float32")) == []


CONV = dict(tile_f=[-1, 1, 4, 2], tile_y=[-1, 1, 2, 5], tile_ry=[-1, 3])  # 4 x 2 x tile_x[2] threads


def test_vec_narrows_for_a_tile_whose_rows_it_does_not_divide():
    task = _task("conv2d_nchw.cuda")
    # a block of 5 columns reads windows of 7 input columns (width 1); the filter's
    # slice of 4 channels x 3 x 3 is contiguous (width 4)
    cfg = _point(task, tile_x=[-1, 1, 5, 1], tile_rc=[-1, 4], tile_rx=[-1, 3], vec=4, **CONV)
    mod, s, _ = _build(task, cfg)
    assert _fetch_widths(s) == [("Pad.shared", 1), ("placeholder.shared", 4)]
    inputs = _inputs("conv2d_nchw.cuda")
    want = TASKS["conv2d_nchw.cuda"][1](*inputs)
    np.testing.assert_allclose(_run(mod, inputs, want.shape), want, rtol=1e-4, atol=1e-5)


def test_a_vec_no_tile_takes_is_refused_as_a_repeat():
    task = _task("conv2d_nchw.cuda")
    # windows of 10 input columns (-> 2) and one filter column per chunk (-> 1)
    cfg = _point(task, tile_x=[-1, 1, 10, 1], tile_rc=[-1, 4], tile_rx=[-1, 1], vec=4, **CONV)
    with tecc.target.Target("cuda"), pytest.raises(
            InstantiationError, match=r"the direct-convolution template: knob 'vec' = 4 fits no shared tile "
                                      r"\('Pad.shared' 1x4x12x10: runs of 10 float32 -> 2, 'placeholder.shared' "
                                      r"8x4x3x1: runs of 1 float32 -> 1; at most 16 bytes a vector\): the config "
                                      r"repeats 'vec' = 2"):
        task.instantiate(cfg)
    with tecc.target.Target("cuda"):  # the point it repeats is taken
        s, _ = task.instantiate(_point(task, tile_x=[-1, 1, 10, 1], tile_rc=[-1, 4], tile_rx=[-1, 1], vec=2, **CONV))
    assert _fetch_widths(s) == [("Pad.shared", 2), ("placeholder.shared", 1)]
    dense = _task("dense_large_batch.cuda")
    with tecc.target.Target("cuda"), pytest.raises(
            InstantiationError, match=r"schedule_gemm_tiled: knob 'vec' = 4 fits no shared tile \('placeholder.shared' "
                                      r"8x2: runs of 2 float32 -> 2, 'placeholder.shared' 8x2: runs of 2 float32 -> 2"):
        dense.instantiate(_point(dense, tile_y=[-1, 1, 4, 2], tile_x=[-1, 1, 8, 1], tile_k=[-1, 1, 2], vec=4))


def test_bad_vec_values_are_instantiation_errors():
    task = _task("dense_large_batch.cuda")
    good = _point(task, tile_y=[-1, 1, 4, 2], tile_x=[-1, 1, 8, 1], tile_k=[-1, 2, 4])
    entities = {k: v for k, v in good._entity_map.items() if k != "vec"}
    entities["vec"] = OtherOptionEntity(3)
    with tecc.target.Target("cuda"), pytest.raises(InstantiationError,
                                                   match=r"schedule_gemm_tiled: knob 'vec' = 3 is not one of "
                                                         r"\[1, 2, 4\]"):
        task.instantiate(ConfigEntity(0, None, entities))
    # a config recorded without the knob fetches as the template did before it had
    # one: element by element, the knob's first value
    del entities["vec"]
    old = ConfigEntity(0, None, entities)
    with tecc.target.Target("cuda"):
        s, _ = task.instantiate(old)
    assert old["vec"].val == 1 and _fetch_widths(s) == [("placeholder.shared", 1), ("placeholder.shared", 1)]


# ---------------------------------------------------------------------------------
# the templates' multi_filter: blocks that cannot fit are never proposed
# ---------------------------------------------------------------------------------
def _lowered_refusal(task, cfg):
    """Why the builder would refuse ``cfg`` before NVRTC (None when it would compile):
    the template's own refusal, verify_gpu or the register-pressure check."""
    from tecc.errors import VerifyError
    from tecc.tir.analysis import gpu_limits, register_pressure, verify_gpu
    from tecc.tuner.measure.local import _kernels

    target = tecc.target.Target("cuda -arch=sm_80")
    try:
        with target:
            s, args = task.instantiate(cfg)
    except InstantiationError as err:
        return str(err)
    if not cfg.valid():
        return cfg.errors[0]
    try:
        lowered = tecc.lower(s, args, target=target)
        for kernel in _kernels(lowered):
            verify_gpu(kernel, **gpu_limits("sm_80").verify_kwargs())
    except VerifyError as err:
        return str(err)
    for kernel in _kernels(lowered):
        why = register_pressure(kernel, "sm_80")
        if why:
            return why
    return None


def _policy_refusal(name, cfg) -> bool:
    """Whether a tuning policy of the filter (not a limit of the GPU) refuses ``cfg``:
    fewer threads than a warp, or a reduction tile over MAX_UNROLLED_MACS."""
    from tecc.topi.cuda.utils import MAX_UNROLLED_MACS, MIN_BLOCK_THREADS

    if name == "sgemm.cuda":
        return False
    knobs = ("tile_y", "tile_x") if name.startswith("dense") else ("tile_f", "tile_y", "tile_x")
    threads = int(np.prod([cfg[k].size[2] for k in knobs]))
    if threads < MIN_BLOCK_THREADS:
        return True
    if name.startswith("dense"):
        _, vy, _, yi = cfg["tile_y"].size
        _, vx, _, xi = cfg["tile_x"].size
        _, kt, ki = cfg["tile_k"].size
        return kt * ki * vy * yi * vx * xi > MAX_UNROLLED_MACS
    return False


@pytest.mark.parametrize("name,args", [
    ("sgemm.cuda", (256, 256, 256, "float32")),
    ("dense_large_batch.cuda", (_t((256, 256)), _t((256, 256)), None, "float32")),
    ("conv2d_nchw.cuda", (_t((1, 32, 28, 28)), _t((32, 32, 3, 3)), (1, 1), (1, 1, 1, 1), (1, 1), "float32")),
])
def test_the_multi_filter_refuses_only_blocks_the_lowered_checks_refuse(name, args):
    from tecc.tuner.tuner.tuner import _unvisited

    task = autotvm.task.create(name, args=args, target="cuda -arch=sm_80")
    space = task.config_space
    assert space.filtered
    rng = np.random.default_rng(7)
    passed = _unvisited(space, set(), rng, 8)
    refused = [int(i) for i in rng.integers(len(space), size=4000) if not space.is_index_valid(int(i))][:8]
    assert len(passed) == 8 and len(refused) == 8
    for i in refused:  # the filter is never stricter than the checks after lowering, but for its policies
        cfg = space.get(i)
        assert _lowered_refusal(task, cfg) is not None or _policy_refusal(name, cfg), \
            f"{name}: the filter refused {cfg}"
    for i in passed:  # what it passes fits the threads and the registers (a redundant vec may still be refused)
        why = _lowered_refusal(task, space.get(i))
        assert why is None or "knob 'vec'" in why, f"{name}: {space.get(i)} passed the filter: {why}"


def test_the_dense_configs_that_timed_out_the_build_on_an_h100_are_filtered_out():
    # benchmarks/results/2026-11-27_H100_tune_records.jsonl.gz: three builds over 60 s
    # (512-deep unrolled k-tiles, megabytes of shared tiles), and the two valid points;
    # 2026-11-28: builds of 12-45 s (reduction tiles of 2048-8192 multiply-adds per thread)
    task = autotvm.task.create("dense_large_batch.cuda", args=(_t((4096, 4096)), _t((4096, 4096)), None, "float32"),
                               target="cuda")
    space = task.config_space
    assert len(space) == 226071300
    for index in (39622904, 219457095, 39710694, 44108183, 39421701, 101044685, 138375965):
        assert not space.is_index_valid(index), space.get(index)
    assert space.is_index_valid(7592734), space.get(7592734)  # 256 threads: the better of the two
    assert not space.is_index_valid(191386364)  # 16 threads: 36.6 ms against 10.2
    with tecc.target.Target("cuda"), pytest.raises(InstantiationError, match="fewer than 32 threads"):
        task.instantiate(space.get(191386364))
    assert "multi_filter(s): sampled by rejection" in repr(space)


def test_the_filters_judge_the_architecture_a_plain_cuda_target_is_built_for(monkeypatch):
    from tecc.topi.cuda import utils

    with tecc.target.Target("cuda -arch=sm_90"):
        assert utils.BlockBudget().limits.arch == "sm_90"
    with tecc.target.Target("cuda"):  # no GPU here: the emulator's sm_80; on an H100 box, sm_90
        want = "sm_" + tecc.cuda(0).compute_version.replace(".", "") if tecc.cuda(0).exist else "sm_80"
        assert utils.BlockBudget().limits.arch == want
    class H100:  # as on a box with an H100
        exist, arch = True, "sm_90"

    monkeypatch.setattr(utils, "cuda", lambda index: H100())
    with tecc.target.Target("cuda"):
        budget = utils.BlockBudget()
    assert budget.limits.arch == "sm_90"
    assert budget.limits.max_shared_bytes_optin > utils.BlockBudget("sm_80").limits.max_shared_bytes_optin
    assert utils.BlockBudget().limits.arch == utils.FILTER_ARCH  # outside a CUDA target
