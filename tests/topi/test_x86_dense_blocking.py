"""The blocked, register-tiled CPU products (``dense_pack.x86``, ``matmul.x86``,
``batch_matmul.x86`` with ``transpose_b=False``): configs sampled from their spaces
build and match numpy with a fused epilogue (bias + relu) on shapes the tiles do not
divide; the fallback; the shape of the space at 512^3; the configs refused and why."""
import importlib
from collections import OrderedDict

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, topi
from tecc.errors import ScheduleError
from tecc.topi import x86
from tecc.tuner.task.space import ConfigEntity, InstantiationError, SplitEntity

X86_DENSE = importlib.import_module("tecc.topi.x86.dense")
T = "TENSOR"
TARGET = "llvm"
SAMPLES = 12
SEED = 11


def _rand(rng, shape):
    return rng.uniform(-1, 1, shape).astype("float32")


def _dense(cfg_ctx, shapes):
    (m, k), (n, _) = shapes
    X, W, B = te.placeholder((m, k), name="X"), te.placeholder((n, k), name="W"), te.placeholder((n,), name="B")
    with tecc.target.Target(TARGET), cfg_ctx:
        out = topi.nn.relu(x86.dense_pack(X, W, B, "float32"))
        s = x86.schedule_dense_pack([out])
    return s, [X, W, B, out]


def _matmul(cfg_ctx, shapes):
    (m, k), (_, n) = shapes
    A, Bm, B = te.placeholder((m, k), name="A"), te.placeholder((k, n), name="Bm"), te.placeholder((n,), name="B")
    with tecc.target.Target(TARGET), cfg_ctx:
        out = topi.nn.relu(x86.matmul_default(A, Bm, B, "float32", False, False))
        s = x86.schedule_matmul([out])
    return s, [A, Bm, B, out]


def _batch_matmul(cfg_ctx, shapes):
    (b, m, k), (bb, _, n) = shapes
    A, Bm, B = te.placeholder((b, m, k), name="A"), te.placeholder((bb, k, n), name="Bm"), te.placeholder((n,), name="B")
    with tecc.target.Target(TARGET), cfg_ctx:
        out = topi.nn.relu(topi.add(x86.batch_matmul(A, Bm, None, "float32", False, False), B))
        s = x86.schedule_batch_matmul([out])
    return s, [A, Bm, B, out]


CASES = {
    # name: (task, task args, operand shapes, build with an epilogue, reference)
    # M = 29 (prime): every tile height but 1 leaves a partial tile; N = 24: panels of 4, 8, 12
    "dense_pack": ("dense_pack.x86", ((T, (29, 20), "float32"), (T, (24, 20), "float32"), (T, (24,), "float32"),
                                      "float32"),
                   ((29, 20), (24, 20)), _dense, lambda a, w, b: np.maximum(a @ w.T + b, 0)),
    # N = 10: no whole vector of 4 divides it: partial vectors
    "matmul": ("matmul.x86", ((T, (13, 12), "float32"), (T, (12, 10), "float32"), (T, (10,), "float32"), "float32",
                              False, False),
               ((13, 12), (12, 10)), _matmul, lambda a, bm, b: np.maximum(a @ bm + b, 0)),
    # the right operand's batch of 1 broadcast against the left's 3
    "batch_matmul": ("batch_matmul.x86", ((T, (3, 11, 16), "float32"), (T, (1, 16, 24), "float32"), None, "float32",
                                          False, False),
                     ((3, 11, 16), (1, 16, 24)), _batch_matmul, lambda a, bm, b: np.maximum(a @ bm + b, 0)),
}


def _output_columns(shapes, task_name):
    """The output's columns: the weight's rows for dense, the right operand's columns
    otherwise (the length of the bias)."""
    return shapes[1][0] if task_name.startswith("dense") else shapes[1][-1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_sampled_configs_with_a_fused_epilogue_match_numpy(name):
    task_name, args, shapes, build, ref = CASES[name]
    task = autotvm.task.create(task_name, args=args, target=TARGET)
    space = task.config_space
    assert {k: len(v.entities[0].size) for k, v in space.space_map.items()} == {"tile_y": 3, "tile_x": 3, "tile_k": 2}
    rng = np.random.default_rng(SEED)
    n = _output_columns(shapes, task_name)
    arrays = [_rand(rng, shapes[0]), _rand(rng, shapes[1]), _rand(rng, (n,))]
    expected = ref(*arrays)
    built, refused = 0, 0
    configs = (space.get(int(i)) for i in rng.permutation(len(space)))
    for cfg in configs:
        s, tensors = build(autotvm.task.ApplyConfig(cfg), shapes)
        if not cfg.valid():  # refused: its tile would spill; the schedule is still a correct one
            assert all("would spill to memory" in e for e in cfg.errors), cfg.errors
            refused += 1
            continue
        func = tecc.build(s, tensors, target=TARGET)
        out = np.full(expected.shape, np.nan, "float32")
        func(*arrays, out)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5, err_msg=f"{name} {cfg}")
        built += 1
        if built == SAMPLES:
            break
    assert built == SAMPLES and refused < len(space) // 2
    s, tensors = build(autotvm.FallbackContext(), shapes)
    out = np.full(expected.shape, np.nan, "float32")
    tecc.build(s, tensors, target=TARGET)(*arrays, out)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5, err_msg=f"{name} fallback")


def _task_512(target):
    args = ((T, (512, 512), "float32"), (T, (512, 512), "float32"), None, "float32")
    return autotvm.task.create("dense_pack.x86", args=args, target=target)


def test_space_at_512_is_thousands_of_register_tiles_and_blocks():
    task = _task_512("llvm -mcpu=haswell")  # AVX2: 16 registers of 8 floats; nothing is compiled
    space = task.config_space
    assert 1000 <= len(space) <= 20000
    tiles_y = {tuple(e.size) for e in space.space_map["tile_y"].entities}
    tiles_x = {tuple(e.size) for e in space.space_map["tile_x"].entities}
    assert {t[2] for t in tiles_y} == set(range(1, 15))  # mr: up to 16 registers less 2
    assert {t[1] for t in tiles_y} == set(X86_DENSE.BLOCK_TILES)
    assert {t[2] for t in tiles_x} == {8, 16, 32}  # nr: whole vectors, up to 4
    assert all(512 % (t[1] * t[2]) == 0 for t in tiles_x)
    assert {e.size[1] for e in space.space_map["tile_k"].entities} == {1, 2, 4, 8}


@pytest.mark.parametrize("target, want", [
    # AVX2: 6 x 16 (12 of the 16 registers)
    ("llvm -mcpu=haswell", {"tile_y": [-1, 1, 6], "tile_x": [-1, 1, 16], "tile_k": [-1, 4]}),
    # AVX-512: 8 x 32 (16 of 32)
    ("llvm -mcpu=skylake-avx512", {"tile_y": [-1, 1, 8], "tile_x": [-1, 1, 32], "tile_k": [-1, 4]}),
    # SSE: 6 x 8
    ("llvm", {"tile_y": [-1, 1, 6], "tile_x": [-1, 1, 8], "tile_k": [-1, 4]}),
])
def test_fallback_at_512(target, want):
    A, W = te.placeholder((512, 512), name="A"), te.placeholder((512, 512), name="W")
    cfg = autotvm.FallbackConfigEntity()
    with tecc.target.Target(target), autotvm.task.ApplyConfig(cfg):
        x86.schedule_dense_pack([x86.dense_pack(A, W)])
    assert {k: cfg[k].size for k in want} == want and cfg.valid()


@pytest.mark.parametrize("M, N, K, nr, want_y, want_x, want_k", [
    (4, 7, 8, None, [-1, 1, 2], [-1, 1, 7], [-1, 4]),  # one panel of 7 (no whole vector): two row tiles of 2
    (64, 12, 6, None, [-1, 1, 12], [-1, 1, 4], [-1, 3]),  # 12 = 3 vectors: panels of one, 12 rows
    (64, 64, 64, 16, [-1, 1, 3], [-1, 1, 16], [-1, 4]),  # packed 16 wide (4 vectors): 3 rows fit
])
def test_fallback_tile_fits_the_registers_and_the_columns(M, N, K, nr, want_y, want_x, want_k):
    cfg = autotvm.FallbackConfigEntity()
    X86_DENSE._fallback_knobs(cfg, M, N, K, 4, 16, nr)  # SSE: 16 registers of 4 floats
    assert (cfg["tile_y"].size, cfg["tile_x"].size, cfg["tile_k"].size) == (want_y, want_x, want_k)


def test_fallback_accumulators_are_registers_and_the_inner_loop_has_no_lane_test():
    """The fallback at 512^3 (SSE: 6 x 8): 12 accumulator vectors, each a register;
    the stores of the tile and the reduction test no column (only the partial last
    row tile's rows)."""
    A, W = te.placeholder((512, 512), name="A"), te.placeholder((512, 512), name="W")
    with tecc.target.Target(TARGET):
        D = x86.dense_pack(A, W)
        text = str(tecc.lower(x86.schedule_dense_pack([D]), [A, W, D], simple_mode=True))
    assert text.count("float32x4[1], register") == 12
    assert "j.c <" not in text and "j.inner <" not in text


def _entity(space, **knobs):
    index = [next(i for i, e in enumerate(space.space_map[name].entities) if e.size == size)
             for name, size in knobs.items()]
    return space.get(space.knob2point(index))


def test_a_tile_that_would_spill_is_refused_before_compiling():
    task = _task_512(TARGET)
    cfg = _entity(task.config_space, tile_y=[-1, 1, 14], tile_x=[-1, 1, 16], tile_k=[-1, 1])
    with pytest.raises(InstantiationError, match=r"schedule_dense_pack: the register tile of 'T_dense_pack', tile_y x "
                                                 r"tile_x inner factors 14 x 16, needs 56 vectors of 4 float32, more "
                                                 r"than the 14 of the target's 16 vector registers .* would spill"):
        task.instantiate(cfg)
    args = ((T, (16, 8), "float32"), (T, (8, 16), "float32"), None, "float32", False, False)
    task = autotvm.task.create("matmul.x86", args=args, target=TARGET)
    cfg = _entity(task.config_space, tile_y=[-1, 1, 8], tile_x=[-1, 1, 8], tile_k=[-1, 1])
    with pytest.raises(InstantiationError, match=r"schedule_matmul: the register tile of 'C', tile_y x tile_x "
                                                 r"inner factors 8 x 8, needs 16 vectors"):
        task.instantiate(cfg)


def test_a_config_of_the_older_two_loop_template_is_refused_with_what_to_do():
    task = _task_512(TARGET)
    old = ConfigEntity(0, None, OrderedDict([("tile_y", SplitEntity([-1, 8])), ("tile_x", SplitEntity([-1, 8])),
                                             ("tile_k", SplitEntity([-1, 8]))]))
    with pytest.raises(InstantiationError, match=r"schedule_dense_pack: knob 'tile_y' of the config is sp\[-1, 8\], "
                                                 r"not a split into 3 loops; .* older version of this template .* "
                                                 r"tune the workload again"):
        task.instantiate(old)


def test_compute_and_schedule_under_different_panel_widths_is_an_error():
    task = _task_512(TARGET)
    space = task.config_space
    narrow = _entity(space, tile_y=[-1, 1, 4], tile_x=[-1, 1, 4], tile_k=[-1, 1])
    wide = _entity(space, tile_y=[-1, 1, 4], tile_x=[-1, 1, 8], tile_k=[-1, 1])
    A, W = te.placeholder((512, 512), name="A"), te.placeholder((512, 512), name="W")
    with tecc.target.Target(TARGET):
        with autotvm.task.ApplyConfig(narrow):
            D = x86.dense_pack(A, W)
        with autotvm.task.ApplyConfig(wide), pytest.raises(
                ScheduleError, match=r"schedule_dense_pack: the weight was packed 4 wide but the config's tile_x is "
                                     r"\[-1, 1, 8\]; build the compute and the schedule under the same config"):
            x86.schedule_dense_pack([D])


@pytest.mark.parametrize("m, k, n, bias", [(64, 48, 100, False), (37, 33, 64, True), (4, 16, 32, False)])
def test_matmul_reads_b_through_packed_panels_from_eight_rows_on(m, k, n, bias):
    rng = np.random.default_rng(m)
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    Bias = te.placeholder((n,), name="bias") if bias else None
    with tecc.target.Target(TARGET):
        out = x86.matmul_default(A, B, Bias)
        s = topi.schedule([out], TARGET)
        args = [A, B] + ([Bias] if bias else []) + [out]
        f = tecc.build(s, args, target=TARGET)
    product = out if not bias else out.op.input_tensors[0]
    packed = [t for t in product.op.input_tensors if t.op.tag == X86_DENSE.DENSE_PACK_WEIGHT]
    assert bool(packed) == (m >= X86_DENSE.PACK_MIN_BATCH)
    if packed:  # panels of nr columns, zero past n
        nr = int(product.op.attrs["nr"])
        assert [int(d) for d in packed[0].shape] == [-(-n // nr), k, nr]
    a, b = _rand(rng, (m, k)), _rand(rng, (k, n))
    arrays = [a, b] + ([_rand(rng, (n,))] if bias else []) + [np.zeros((m, n), "float32")]
    f(*arrays)
    want = a @ b + (arrays[2] if bias else 0)
    np.testing.assert_allclose(arrays[-1], want, rtol=1e-4, atol=1e-4)


def test_a_weight_packed_ahead_takes_the_plain_layers_config_and_records():
    """dense_pack_prepacked: the product of a weight already in panels, under the
    config of the plain layer's workload ("dense_pack.x86" with the [N, K] weight):
    the same kernel less the packing, the same answer."""
    task = _task_512(TARGET)
    cfg = _entity(task.config_space, tile_y=[-1, 2, 4], tile_x=[-1, 2, 8], tile_k=[-1, 2])
    A, Wp, Bias = te.placeholder((512, 512), name="A"), te.placeholder((64, 512, 8), name="Wp"), \
        te.placeholder((512,), name="bias")
    with tecc.target.Target(TARGET), autotvm.task.ApplyConfig(cfg):
        product = x86.dense_pack_prepacked(A, Wp, None, "float32")
        out = topi.nn.relu(topi.add(product, Bias))
        s = x86.schedule_dense([out])
    assert product.op.attrs["workload"] == task.workload
    f = tecc.build(s, [A, Wp, Bias, out], target=TARGET)
    assert "T_dense_pack_weight" not in f.get_source()
    rng = np.random.default_rng(7)
    a, w, b = _rand(rng, (512, 512)), _rand(rng, (512, 512)), _rand(rng, (512,))
    got = np.zeros((512, 512), "float32")
    f(a, np.ascontiguousarray(w.reshape(64, 8, 512).transpose(0, 2, 1)), b, got)
    np.testing.assert_allclose(got, np.maximum(a @ w.T + b, 0), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shapes, message", [
    (((16, 8), (16, 8)), r"data must be 2-D \[M, K\] and the weight 3-D \[N / nr, K, nr\]"),
    (((16, 8), (2, 6, 8)), r"must have constant sizes and agree on K"),
])
def test_dense_pack_prepacked_errors(shapes, message):
    from tecc.topi.utils import TopiError

    A, W = te.placeholder(shapes[0], name="A"), te.placeholder(shapes[1], name="W")
    with tecc.target.Target(TARGET), pytest.raises(TopiError, match=message):
        x86.dense_pack_prepacked(A, W)
