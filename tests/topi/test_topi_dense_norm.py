"""Dense / matmul / batch_matmul / matmul_broadcast and the normalizations (layer,
instance, group, batch norm, LRN): each compute against its numpy reference in
topi.testing, with the CPU (x86, generic) and CUDA schedules (checked race-free on
the emulator), fused epilogues in one kernel, the tunable templates under tuned
configs, sm_80/sm_90 builds, and every argument error."""
import importlib
import logging
import math
import re
import warnings

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, topi
from tecc.autotvm.task import space as S
from tecc.errors import ScheduleError, TeccTypeError
from tecc.topi import cuda as K, testing as ref, x86
from tecc.topi.utils import TopiError
from irhelpers import build_all_arches
from topi_run import TARGETS, build_run, rand

logging.getLogger("tecc").setLevel(logging.ERROR)  # "no tuned config" for every workload
X86_DENSE = importlib.import_module("tecc.topi.x86.dense")


def implement(target, which):
    return getattr(topi.testing, f"get_{which}_implement")(target)


def schedule_for(target, which, outs):
    with tecc.target.Target(target):
        return getattr(topi.testing, f"get_{which}_schedule")(target)(outs)


def gelu_np(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def kernels(f):
    return f.imported_modules[0].get_source().count("__global__")


# ---------------------------------------------------------------------------------------
# dense
# ---------------------------------------------------------------------------------------
DENSE_SHAPES = [(1, 13, 37), (5, 16, 8), (33, 5, 4)]  # (batch, units, in_dim): gemv, gemv, tiled on CUDA


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("M, N, Kd", DENSE_SHAPES)
@pytest.mark.parametrize("epilogue", ["none", "bias_relu"])
def test_dense_with_the_implementation_per_target(target, M, N, Kd, epilogue):
    compute, schedule = implement(target, "dense")
    X, W, Bv = te.placeholder((M, Kd), name="X"), te.placeholder((N, Kd), name="W"), te.placeholder((N,), name="Bv")
    x, w, b = rand((M, Kd)), rand((N, Kd)), rand((N,))
    with tecc.target.Target(target):
        D = compute(X, W, Bv if epilogue != "none" else None)
        out = topi.nn.relu(D) if epilogue != "none" else D
        s = schedule([out])
    inputs, arrays = ([X, W, Bv], [x, w, b]) if epilogue != "none" else ([X, W], [x, w])
    (got,) = build_run(s, inputs, [out], arrays, target)
    want = ref.dense(x, w, b, use_bias=epilogue != "none", use_relu=epilogue != "none")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _epilogue_chain(D, residual):
    """bias (inside D) -> gelu -> + residual -> relu: three element-wise stages."""
    return topi.nn.relu(topi.add(topi.nn.gelu(D), residual))


@pytest.mark.parametrize("target, compute, schedule", [
    ("llvm", x86.dense_nopack, x86.schedule_dense_nopack),
    ("llvm", x86.dense_pack, x86.schedule_dense_pack),
    ("llvm", topi.nn.dense, x86.schedule_dense),
    ("cuda", K.dense_small_batch, K.schedule_dense_small_batch),
    ("cuda", K.dense_large_batch, K.schedule_dense_large_batch),
    ("cuda", topi.nn.dense, K.schedule_dense),
])
def test_dense_fused_epilogue_chain(target, compute, schedule):
    M, N, Kd = 4, 7, 8
    X, W, Bv = te.placeholder((M, Kd), name="X"), te.placeholder((N, Kd), name="W"), te.placeholder((N,), name="Bv")
    R = te.placeholder((M, N), name="R")
    x, w, b, r = rand((M, Kd)), rand((N, Kd)), rand((N,)), rand((M, N))
    with tecc.target.Target(target):
        out = _epilogue_chain(compute(X, W, Bv), R)
        s = schedule([out])
    (got,) = build_run(s, [X, W, Bv, R], [out], [x, w, b, r], target)
    want = np.maximum(gelu_np(x.astype(np.float64) @ w.T + b) + r, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    text = str(tecc.lower(s, [X, W, Bv, R, out], simple_mode=True))
    assert not re.search(rf"allocate T_\w+: float32\[{M * N}\]", text)  # no stage of the whole output in memory
    if target == "cuda":
        assert kernels(tecc.build(s, [X, W, Bv, R, out], "cuda")) == 1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("M", [3, 33])
def test_dense_int8_accumulates_in_int32(target, M):
    compute, schedule = implement(target, "dense")
    X, W = te.placeholder((M, 12), "int8", name="X"), te.placeholder((6, 12), "int8", name="W")
    Bv = te.placeholder((6,), "int32", name="Bv")
    with tecc.target.Target(target):
        D = compute(X, W, Bv, out_dtype="int32")
        s = schedule([D])
    assert D.dtype == "int32"
    x, w, b = rand((M, 12), "int8", -128, 127), rand((6, 12), "int8", -128, 127), rand((6,), "int32", -999, 999)
    (got,) = build_run(s, [X, W, Bv], [D], [x, w, b], target)
    np.testing.assert_array_equal(got, ref.dense(x, w, b, use_bias=True, out_dtype="int32"))


@pytest.mark.parametrize("M", [3, 17])
def test_dense_float16_on_cpu(M):
    X, W = te.placeholder((M, 24), "float16", name="X"), te.placeholder((10, 24), "float16", name="W")
    with tecc.target.Target("llvm"):
        D = x86.dense(X, W)
        s = x86.schedule_dense(D)
    assert D.dtype == "float16" and (D.op.tag == "dense_pack") == (M >= X86_DENSE.PACK_MIN_BATCH)
    x, w = rand((M, 24), "float16"), rand((10, 24), "float16")
    (got,) = build_run(s, [X, W], [D], [x, w], "llvm")
    np.testing.assert_allclose(got.astype(np.float64), ref.dense(x, w, None, out_dtype="float64"), atol=0.05)


def test_x86_dense_vectorizes_and_packs():
    X, W = te.placeholder((16, 64), name="X"), te.placeholder((32, 64), name="W")
    x1 = te.placeholder((1, 64), name="x1")
    with tecc.target.Target("llvm"):
        big, small = x86.dense(X, W), x86.dense(x1, W)
        packed = str(tecc.lower(x86.schedule_dense(big), [X, W, big], simple_mode=True))
        in_place = str(tecc.lower(x86.schedule_dense(small), [x1, W, small], simple_mode=True))
    # packed panels, tiles over the cores, register tiles of vectors
    assert "T_dense_pack_weight" in packed and "parallel for" in packed and "float32x4[1], register" in packed
    # in place: partial sums in contiguous vectors along in_dim
    assert re.search(r"T_dense\.rf\[ramp\(\d+, 1, 4\)\] = T_dense\.rf", in_place) and "pack" not in in_place


def test_generic_dense_and_matmul_schedules():
    X, W = te.placeholder((5, 7), name="X"), te.placeholder((3, 7), name="W")
    x, w = rand((5, 7)), rand((3, 7))
    D = topi.nn.dense(X, W)
    (d,) = build_run(topi.generic.schedule_dense(D), [X, W], [D], [x, w], "llvm")
    np.testing.assert_allclose(d, ref.dense_python(x, w), rtol=1e-5, atol=1e-6)
    M = topi.nn.matmul(X, W, transpose_b=True)
    (m,) = build_run(topi.generic.schedule_matmul(M), [X, W], [M], [x, w], "llvm")
    np.testing.assert_allclose(m, x @ w.T, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# matmul, batch_matmul, matmul_broadcast
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_transposes_with_bias(target, transpose_a, transpose_b):
    M, N, Kd = 9, 7, 5
    A = te.placeholder((Kd, M) if transpose_a else (M, Kd), name="A")
    B = te.placeholder((N, Kd) if transpose_b else (Kd, N), name="B")
    bias = te.placeholder((N,), name="bias")
    C = topi.nn.matmul(A, B, bias, transpose_a=transpose_a, transpose_b=transpose_b)
    s = schedule_for(target, "matmul", [C])
    a, b, bb = rand(tuple(A.shape)), rand(tuple(B.shape)), rand((N,))
    (got,) = build_run(s, [A, B, bias], [C], [a, b, bb], target)
    want = (a.T if transpose_a else a) @ (b.T if transpose_b else b) + bb
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_matmul_of_a_tensor_with_itself(target):
    X = te.placeholder((9, 5), name="X")
    C = topi.nn.matmul(X, X, transpose_b=True)  # one operand: one shared tile on CUDA
    x = rand((9, 5))
    (got,) = build_run(schedule_for(target, "matmul", [C]), [X], [C], [x], target)
    np.testing.assert_allclose(got, x @ x.T, rtol=1e-5, atol=1e-5)


# (batch_a, batch_b, M, N, K): tiled on CUDA (every transpose), then batches of 1 broadcast (vectors)
BATCH_CASES = [(False, False, (2, 2, 8, 5, 3)), (False, True, (2, 2, 8, 5, 3)), (True, False, (2, 2, 8, 5, 3)),
               (True, True, (2, 2, 8, 5, 3)), (False, True, (1, 2, 2, 13, 8)), (True, False, (2, 1, 1, 6, 11))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("transpose_a, transpose_b, case", BATCH_CASES)
def test_batch_matmul_transposes_and_broadcast_batch(target, transpose_a, transpose_b, case):
    ba, bb, M, N, Kd = case
    sa = (ba, Kd, M) if transpose_a else (ba, M, Kd)
    sb = (bb, N, Kd) if transpose_b else (bb, Kd, N)
    A, B = te.placeholder(sa, name="A"), te.placeholder(sb, name="B")
    compute, schedule = implement(target, "batch_matmul")
    with tecc.target.Target(target):
        C = compute(A, B, transpose_a=transpose_a, transpose_b=transpose_b)
        out = C * 2.0
        s = schedule([out])
    assert [int(d) for d in C.shape] == [max(ba, bb), M, N]
    a, b = rand(sa), rand(sb)
    (got,) = build_run(s, [A, B], [out], [a, b], target)
    want = 2 * ref.batch_matmul(a, b, trans_x=transpose_a, trans_y=transpose_b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_defaults_to_tvm_nt_layout_and_names():
    A, B = te.placeholder((2, 4, 6), name="A"), te.placeholder((2, 3, 6), name="B")
    C = topi.nn.batch_matmul(A, B)
    assert C.op.name == "T_batch_matmul_NT" and C.op.tag == "batch_matmul" and [int(d) for d in C.shape] == [2, 4, 3]
    C = topi.nn.batch_matmul(A, te.placeholder((2, 6, 3), name="B2"), oshape=(2, 4, 3), transpose_b=False)
    assert C.op.name == "T_batch_matmul_NN"


MATMUL_BROADCAST = [((3,), (3,)), ((5,), (5, 4)), ((2, 3), (3,)), ((2, 1, 4, 3), (5, 3, 2)), ((9, 3), (2, 3, 5))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sa, sb", MATMUL_BROADCAST)
def test_matmul_broadcast_is_numpy_matmul(target, sa, sb):
    A, B = te.placeholder(sa, name="A"), te.placeholder(sb, name="B")
    C = topi.matmul_broadcast(A, B)
    assert tuple(int(d) for d in C.shape) == np.matmul(np.zeros(sa), np.zeros(sb)).shape
    _, schedule = implement(target, "batch_matmul")
    with tecc.target.Target(target):
        s = schedule([C])
    a, b = rand(sa), rand(sb)
    (got,) = build_run(s, [A, B], [C], [a, b], target)
    np.testing.assert_allclose(got, ref.matmul_broadcast_python(a, b), rtol=1e-5, atol=1e-5)


def test_matmul_broadcast_int8_to_int32():
    A, B = te.placeholder((2, 3, 5), "int8", name="A"), te.placeholder((5, 4), "int8", name="B")
    C = topi.nn.matmul_broadcast(A, B, out_dtype="int32")
    a, b = rand((2, 3, 5), "int8", -128, 127), rand((5, 4), "int8", -128, 127)
    (got,) = build_run(x86.schedule_batch_matmul(C), [A, B], [C], [a, b], "llvm")
    np.testing.assert_array_equal(got, ref.matmul_broadcast_python(a, b, "int32"))


# ---------------------------------------------------------------------------------------
# the tunable templates under configs of their spaces
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target, compute, schedule, knobs", [
    ("cuda", K.dense_large_batch, K.schedule_dense_large_batch, {"tile_y", "tile_x", "tile_k", "auto_unroll_max_step",
                                                                         "vec"}),
    ("cuda", K.dense_small_batch, K.schedule_dense_small_batch, {"tile_x", "tile_k"}),
    ("llvm", x86.dense_pack, x86.schedule_dense_pack, {"tile_y", "tile_x", "tile_k"}),
    ("llvm", x86.dense_nopack, x86.schedule_dense_nopack, {"tile_y", "tile_x", "tile_k"}),
])
def test_templates_define_knobs_and_run_at_points_of_their_space(target, compute, schedule, knobs):
    X, W = te.placeholder((8, 4), name="X"), te.placeholder((6, 4), name="W")
    x, w = rand((8, 4)), rand((6, 4))
    space = S.ConfigSpace()
    with tecc.target.Target(target), autotvm.ApplyConfig(space):
        schedule([compute(X, W)])
    assert set(space.space_map) == knobs and space.flop == 2 * 8 * 6 * 4
    for point in _small_points(space, 2):
        with tecc.target.Target(target), autotvm.ApplyConfig(point):
            D = compute(X, W)
            s = schedule([D])
        (got,) = build_run(s, [X, W], [D], [x, w], target)
        np.testing.assert_allclose(got, x @ w.T, rtol=1e-5, atol=1e-5, err_msg=str(point))


def _small_points(space, count):
    """``count`` points of ``space`` (a fixed random order) with at most 16 threads
    per block, so the emulator's check stays quick."""
    picked = []
    for index in np.random.default_rng(5).permutation(len(space)):
        point = space.get(int(index))
        threads = 1
        for name in ("tile_y", "tile_x"):
            if name in point.space_map and len(point[name].size) == 4:
                threads *= point[name].size[2]
        if "tile_k" in point.space_map and len(point["tile_k"].size) == 2 and "tile_y" not in point.space_map:
            threads *= point["tile_k"].size[1] * point["tile_x"].size[1]
        if threads <= 16:
            picked.append(point)
        if len(picked) == count:
            return picked
    return picked


DENSE_CUDA = importlib.import_module("tecc.topi.cuda.dense")


@pytest.mark.parametrize("batch, M, N, want_y, want_x", [
    (1, 4096, 4096, [-1, 2, 8, 2], [-1, 2, 8, 2]),  # 16,384 blocks: the 4x4 outputs per thread stay
    (1, 128, 64, [-1, 1, 8, 1], [-1, 1, 8, 1]),  # the encoder's products: 8 blocks -> 128, one output each
    (4, 128, 128, [-1, 2, 8, 1], [-1, 2, 8, 1]),  # its attention scores: 64 -> 256 blocks, 2x2 per thread
    (8, 256, 256, [-1, 2, 8, 2], [-1, 2, 8, 2]),  # the batch fills the GPU: 512 blocks
    (2, 256, 256, [-1, 2, 8, 1], [-1, 2, 8, 2]),  # 128 blocks: the rows halve once
    (1, 40, 12, [-1, 1, 8, 1], [-1, 1, 8, 1]),  # short axes
])
def test_untuned_products_fill_the_gpu_before_they_tile_per_thread(batch, M, N, want_y, want_x):
    tile_y, tile_x = DENSE_CUDA._fallback_tiles(batch, M, N)
    assert (tile_y, tile_x) == (want_y, want_x)
    blocks = batch * -(-M // math.prod(tile_y[1:])) * -(-N // math.prod(tile_x[1:]))
    one_each = tile_y[1] * tile_y[3] == tile_x[1] * tile_x[3] == 1
    assert blocks >= DENSE_CUDA.FILL_BLOCKS or one_each


@pytest.mark.parametrize("kind", ["dense", "batch_matmul"])
def test_untuned_small_products_launch_a_full_grid_and_compute_right(kind):
    """The encoder layer's products (128 tokens, width 64, 4 heads) with nothing tuned:
    the grid the module launches and the outputs on the emulator."""
    if kind == "dense":
        A, B = te.placeholder((128, 64), name="X"), te.placeholder((64, 64), name="W")
        compute, schedule, want = K.dense, K.schedule_dense, lambda a, b: a @ b.T
    else:
        A, B = te.placeholder((4, 128, 16), name="Q"), te.placeholder((4, 128, 16), name="Kt")
        compute, schedule, want = K.batch_matmul, K.schedule_batch_matmul, lambda a, b: a @ b.transpose(0, 2, 1)
    with tecc.target.Target("cuda"):
        C = compute(A, B)
        s = schedule([C])
    f = tecc.build(s, [A, B, C], "cuda")
    ((_, _, grid, block),) = f.launch_dims()
    assert math.prod(grid) >= 128 and math.prod(block) == 64, (grid, block)
    a, b = rand([int(d) for d in A.shape]), rand([int(d) for d in B.shape])
    (got,) = build_run(s, [A, B], [C], [a, b], "cuda")
    np.testing.assert_allclose(got, want(a, b), rtol=1e-5, atol=1e-5)


def test_batch_matmul_task_is_registered_and_records_its_workload():
    A, B = te.placeholder((2, 8, 4), name="A"), te.placeholder((2, 6, 4), name="B")
    with tecc.target.Target("cuda"):
        C = K.batch_matmul(A, B)
    assert C.op.attrs["workload"][0] == "batch_matmul.cuda"
    assert "batch_matmul.cuda" in autotvm.task.TASK_TABLE and "dense_large_batch.cuda" in autotvm.task.TASK_TABLE
    assert K.batch_matmul.task_name == "batch_matmul.cuda"


# ---------------------------------------------------------------------------------------
# normalizations
# ---------------------------------------------------------------------------------------
LAYER_NORMS = [((3, 37), -1), ((3, 4, 7), (1, 2)), ((3, 5, 7), 1), ((2, 3, 4), (0, 2)), ((6,), 0)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape, axis", LAYER_NORMS)
def test_layer_norm_over_any_axes(target, shape, axis):
    axes = (axis,) if isinstance(axis, int) else axis
    gshape = tuple(shape[a] for a in axes)
    X, G, B = te.placeholder(shape, name="X"), te.placeholder(gshape, name="G"), te.placeholder(gshape, name="B")
    out = topi.nn.layer_norm(X, G, B, axis)
    s = schedule_for(target, "layer_norm", [out])
    x, g, b = rand(shape) + 1.5, rand(gshape), rand(gshape)
    (got,) = build_run(s, [X, G, B], [out], [x, g, b], target)
    np.testing.assert_allclose(got, ref.layer_norm_python(x, g, b, axis), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("schedule", [x86.schedule_layer_norm, topi.generic.schedule_layer_norm])
def test_layer_norm_float16_on_cpu(schedule):
    X, G, B = (te.placeholder(s, "float16", name=n) for s, n in (((4, 33), "X"), ((33,), "G"), ((33,), "B")))
    out = topi.nn.layer_norm(X, G, B, -1)
    x, g, b = rand((4, 33), "float16"), rand((33,), "float16"), rand((33,), "float16")
    with tecc.target.Target("llvm"):
        (got,) = build_run(schedule(out), [X, G, B], [out], [x, g, b], "llvm")
    np.testing.assert_allclose(got.astype(np.float64), ref.layer_norm_python(x.astype(np.float64), g, b), atol=3e-3)


def test_layer_norm_earlier_forms_still_work():
    x = te.placeholder((3, 50), name="x")
    out = topi.nn.layer_norm(x, te.placeholder((50,), name="g"), te.placeholder((50,), name="b"))
    assert out.op.name == "Out" and {t.op.name for t in out.op.input_tensors} == {"x", "Sum", "SqSum", "g", "b"}
    s = te.create_schedule(out.op)
    assert K.schedule_layer_norm(s, out, num_thread=32) is s
    sch, args = K.layernorm_rows(3, 40, num_thread=32)
    xa, ga, ba = rand((3, 40)), rand((40,)), rand((40,))
    (got,) = build_run(sch, args[:3], args[3:], [xa, ga, ba], "cuda")
    np.testing.assert_allclose(got, ref.layer_norm_python(xa, ga, ba), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_layer_norm_with_a_residual_epilogue_is_one_kernel(target):
    X, R = te.placeholder((5, 24), name="X"), te.placeholder((5, 24), name="R")
    G, B = te.placeholder((24,), name="G"), te.placeholder((24,), name="B")
    out = topi.add(topi.nn.layer_norm(X, G, B, -1), R)
    s = schedule_for(target, "layer_norm", [out])
    x, r, g, b = rand((5, 24)), rand((5, 24)), rand((24,)), rand((24,))
    (got,) = build_run(s, [X, G, B, R], [out], [x, g, b, r], target)
    np.testing.assert_allclose(got, ref.layer_norm_python(x, g, b) + r, rtol=1e-4, atol=1e-4)
    if target == "cuda":
        f = tecc.build(s, [X, G, B, R, out], "cuda")
        assert kernels(f) == 1 and "__shfl_down_sync" in f.imported_modules[0].get_source()


@pytest.mark.parametrize("target", TARGETS)
def test_instance_norm(target):
    X, G, B = te.placeholder((2, 3, 4, 5), name="X"), te.placeholder((4, 5), name="G"), te.placeholder((4, 5), name="B")
    out = topi.nn.instance_norm(X, G, B, (2, 3))
    s = schedule_for(target, "instance_norm", [out])
    x, g, b = rand((2, 3, 4, 5)), rand((4, 5)), rand((4, 5))
    (got,) = build_run(s, [X, G, B], [out], [x, g, b], target)
    np.testing.assert_allclose(got, ref.instance_norm_python(x, g, b, (2, 3)), rtol=1e-4, atol=1e-4)


GROUP_NORMS = [((2, 6, 4, 5), 3, 1, [2, 3]), ((2, 6), 3, 1, []), ((3, 4, 6), 2, 2, [1]), ((1, 8, 3), 8, 1, [2])]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape, groups, channel_axis, axes", GROUP_NORMS)
def test_group_norm(target, shape, groups, channel_axis, axes):
    C = shape[channel_axis]
    X, G, B = te.placeholder(shape, name="X"), te.placeholder((C,), name="G"), te.placeholder((C,), name="B")
    out = topi.nn.group_norm(X, G, B, groups, channel_axis, axes)
    s = schedule_for(target, "group_norm", [out])
    x, g, b = rand(shape), rand((C,)), rand((C,))
    (got,) = build_run(s, [X, G, B], [out], [x, g, b], target)
    np.testing.assert_allclose(got, ref.group_norm_python(x, g, b, groups, channel_axis, axes), rtol=1e-4,
                               atol=2e-4)


BATCH_NORMS = [  # TVM's cases: shape, axis, epsilon, center, scale, training, momentum
    ((1,), 0, 0.1, True, True, False, 0.1),
    ((2, 3), 0, 0.1, True, True, False, 0.1),
    ((2, 3, 4, 1), 1, 0.01, False, True, False, 0.1),
    ((3, 4, 1, 2), 2, 0.1, True, False, True, 0.1),
    ((4, 1, 2, 3), 3, 1.0, True, True, True, 0.2),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape, axis, epsilon, center, scale, training, momentum", BATCH_NORMS)
def test_batch_norm(target, shape, axis, epsilon, center, scale, training, momentum):
    c = shape[axis]
    X = te.placeholder(shape, name="X")
    params = [te.placeholder((c,), name=n) for n in ("gamma", "beta", "moving_mean", "moving_var")]
    outs = topi.nn.batch_norm(X, *params, axis, epsilon, center, scale, training, momentum)
    s = schedule_for(target, "batch_norm", outs)
    x = rand(shape)
    values = [rand((c,)), rand((c,)), rand((c,)), rand((c,), low=0.5, high=1.5)]
    got = build_run(s, [X] + params, outs, [x] + values, target)
    want = ref.batch_norm(x, *values, axis, epsilon, center, scale, training, momentum)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_batch_norm_defaults_and_the_injective_schedule():
    X = te.placeholder((2, 3, 4), name="X")
    params = [te.placeholder((3,), name=n) for n in ("g", "b", "m", "v")]
    outs = topi.nn.batch_norm(X, *params)  # axis 1, inference
    assert outs[0].op.tag == "broadcast,batch_norm" and len(outs) == 3
    with tecc.target.Target("cuda"):
        s = topi.testing.get_injective_schedule("cuda")(outs)  # TVM's way
    x, vals = rand((2, 3, 4)), [rand((3,)), rand((3,)), rand((3,)), rand((3,), low=0.5, high=1.5)]
    got = build_run(s, [X] + params, outs, [x] + vals, "cuda")
    np.testing.assert_allclose(got[0], ref.batch_norm(x, *vals, 1, 1e-5, True, True, False, 0.1)[0], rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", [1, 3])
@pytest.mark.parametrize("epilogue", [False, True])
def test_lrn(target, axis, epilogue):
    X = te.placeholder((1, 5, 4, 6), name="X")
    out = topi.nn.lrn(X, 3, axis, 0.001, 0.75, 2.0)
    out = out * 2.0 if epilogue else out
    s = schedule_for(target, "lrn", [out])
    x = rand((1, 5, 4, 6))
    (got,) = build_run(s, [X], [out], [x], target)
    want = ref.lrn_python(x, 3, axis, 2.0, 0.001, 0.75) * (2 if epilogue else 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lrn_float16_and_generic_schedule():
    X = te.placeholder((1, 5, 4, 6), "float16", name="X")
    out = topi.nn.lrn(X, 5, 1, 1.0, 0.5, 1.0)
    x = rand((1, 5, 4, 6), "float16")
    for schedule in (x86.schedule_lrn, topi.generic.schedule_lrn):
        with tecc.target.Target("llvm"):
            (got,) = build_run(schedule(out), [X], [out], [x], "llvm")
        np.testing.assert_allclose(got.astype(np.float64), ref.lrn_python(x.astype(np.float64), 5, 1, 1.0, 1.0, 0.5),
                                   atol=2e-3)


# ---------------------------------------------------------------------------------------
# CUDA: sm_80 and sm_90, one kernel where one is meant
# ---------------------------------------------------------------------------------------
def _cuda_cases():
    X, W = te.placeholder((32, 8), name="X"), te.placeholder((6, 8), name="W")
    x1 = te.placeholder((2, 8), name="x1")
    A, B, v = te.placeholder((2, 9, 8), name="A"), te.placeholder((2, 8, 8), name="B"), te.placeholder((8,), name="v")
    L, G = te.placeholder((4, 6, 10), name="L"), te.placeholder((10,), name="G")
    N4 = te.placeholder((2, 6, 3, 3), name="N4")
    P = [te.placeholder((6,), name=n) for n in "gbmv"]
    return {
        "dense_large": (K.schedule_dense, [X, W], topi.nn.relu(K.dense(X, W))),
        "dense_small": (K.schedule_dense, [x1, W], topi.nn.relu(K.dense(x1, W))),
        "batch_matmul": (K.schedule_batch_matmul, [A, B], K.batch_matmul(A, B)),
        "matmul_vector": (K.schedule_batch_matmul, [A, v], topi.matmul_broadcast(A, v)),
        "layer_norm": (K.schedule_layer_norm, [L, G], topi.nn.layer_norm(L, G, G, -1)),
        "group_norm": (K.schedule_group_norm, [N4, P[0]], topi.nn.group_norm(N4, P[0], P[0], 3, 1, [2, 3])),
        "batch_norm_training": (K.schedule_batch_norm, [N4] + P, topi.nn.batch_norm(N4, *P, training=True)),
        "lrn": (K.schedule_lrn, [N4], topi.nn.lrn(N4, 3)),
    }


@pytest.mark.parametrize("name", ["dense_large", "dense_small", "batch_matmul", "matmul_vector", "layer_norm",
                                  "group_norm", "batch_norm_training", "lrn"])
def test_cuda_schedules_build_for_sm80_and_sm90(name):
    schedule, inputs, out = _cuda_cases()[name]
    outs = list(out) if isinstance(out, list) else [out]
    with tecc.target.Target("cuda"):
        s = schedule(outs)
    mod = build_all_arches(s, inputs + outs)
    if name != "batch_norm_training":
        assert kernels(mod) == 1


# ---------------------------------------------------------------------------------------
# symbolic batch, topi.schedule, the packed compute called directly
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_symbolic_batch(target):
    n = te.var("n")
    X, W, L = te.placeholder((n, 8), name="X"), te.placeholder((5, 8), name="W"), te.placeholder((n, 10), name="L")
    compute, schedule = implement(target, "dense")
    with tecc.target.Target(target):
        D = topi.nn.relu(compute(X, W))
        s = schedule([D])
    x, w, lv = rand((3, 8)), rand((5, 8)), rand((3, 10))
    (d,) = build_run(s, [X, W], [D], [x, w, 3], target, extra_args=[n])
    np.testing.assert_allclose(d, np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6)
    out = topi.nn.layer_norm(L, None, None, -1)
    (o,) = build_run(schedule_for(target, "layer_norm", [out]), [L], [out], [lv, 3], target, extra_args=[n])
    np.testing.assert_allclose(o, ref.layer_norm_python(lv, None, None), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_topi_schedule_finds_these_schedules(target):
    X, W, G = te.placeholder((4, 8), name="X"), te.placeholder((6, 8), name="W"), te.placeholder((8,), name="G")
    cases = [
        (topi.nn.relu(topi.nn.dense(X, W)), {"llvm": x86.schedule_dense, "cuda": K.schedule_dense}),
        (topi.nn.layer_norm(X, G, G, -1), {"llvm": x86.schedule_layer_norm, "cuda": K.schedule_layer_norm}),
        (topi.nn.lrn(te.placeholder((1, 4, 2, 2), name="I"), 3), {"llvm": x86.schedule_lrn, "cuda": K.schedule_lrn}),
    ]
    for out, by_target in cases:
        with tecc.target.Target(target):
            direct = by_target[target](out)
        args = _placeholders(out) + [out]
        found = str(tecc.lower(topi.schedule(out, target), args, simple_mode=True))
        assert found == str(tecc.lower(direct, args, simple_mode=True)), out.op.name


def _placeholders(out):
    seen, todo, found = set(), [out.op], []
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        if isinstance(op, te.PlaceholderOp):
            found.append(op.output(0))
        todo.extend(t.op for t in op.input_tensors)
    return sorted(found, key=lambda t: t.name)


def test_dense_pack_compute_called_directly():
    X, W = te.placeholder((9, 8), name="X"), te.placeholder((11, 8), name="W")
    D = X86_DENSE.dense_pack_compute(X, W, nr=8)
    assert D.op.tag == "dense_pack" and int(D.op.attrs["nr"]) == 8
    with tecc.target.Target("llvm"):
        s = x86.schedule_dense(D)
    x, w = rand((9, 8)), rand((11, 8))
    (got,) = build_run(s, [X, W], [D], [x, w], "llvm")
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# errors: at declaration, naming the operator, the argument and the shapes
# ---------------------------------------------------------------------------------------
def test_dense_and_matmul_errors():
    X, W = te.placeholder((5, 7), name="X"), te.placeholder((3, 6), name="Wd")
    with pytest.raises(TopiError, match=r"dense: the reduction sizes differ: 7 in 'X' \(5, 7\) \(data\) and 6 in "
                                        r"'Wd' \(3, 6\) \(weight\)"):
        topi.nn.dense(X, W)
    with pytest.raises(TopiError, match=r"dense: bias 'Bv' \(4,\) has 4 elements but the output \(5, 3\) has 3"):
        topi.nn.dense(X, te.placeholder((3, 7), name="W"), te.placeholder((4,), name="Bv"))
    with pytest.raises(TopiError, match=r"dense: data 'X3' \(2, 5, 7\) has rank 3; it must be 2-D"):
        topi.nn.dense(te.placeholder((2, 5, 7), name="X3"), W)
    with pytest.raises(TeccTypeError, match="dense: weight must be a tensor"):
        topi.nn.dense(X, np.zeros((3, 7)))
    with pytest.raises(TopiError, match="auto_scheduler_rewritten_layout='NK16n' is not supported"):
        topi.nn.dense(X, te.placeholder((3, 7), name="W"), auto_scheduler_rewritten_layout="NK16n")
    with pytest.raises(TopiError, match=r"matmul: the reduction sizes differ: 5 in 'X' \(5, 7\) \(tensor_a\)"):
        topi.nn.matmul(X, te.placeholder((7, 3), name="B"), transpose_a=True)
    with pytest.raises(TopiError, match=r"matmul: bias 'b2' \(2,\) has 2 elements but the output \(5, 3\)"):
        topi.nn.matmul(X, te.placeholder((7, 3), name="B"), te.placeholder((2,), name="b2"))


def test_batch_matmul_errors():
    A = te.placeholder((3, 4, 5), name="A")
    with pytest.raises(TopiError, match=r"batch_matmul: the batch sizes do not broadcast: tensor_a 'A' \(3, 4, 5\) "
                                        r"and tensor_b 'B' \(2, 6, 5\)"):
        topi.nn.batch_matmul(A, te.placeholder((2, 6, 5), name="B"))
    with pytest.raises(TopiError, match=r"reduction sizes differ: 5 in 'A' \(3, 4, 5\) \(tensor_a\) and 6 in 'B' "
                                        r"\(3, 5, 6\) \(tensor_b\); tensor_b is \[batch, N, K\] by default"):
        topi.nn.batch_matmul(A, te.placeholder((3, 5, 6), name="B"))
    with pytest.raises(TopiError, match=r"batch_matmul: tensor_b 'B2' \(5, 6\) has rank 2; it must be 3-D"):
        topi.nn.batch_matmul(A, te.placeholder((5, 6), name="B2"))
    with pytest.raises(TopiError, match=r"batch_matmul: oshape \(3, 4\) must have 3 entries"):
        topi.nn.batch_matmul(A, te.placeholder((3, 6, 5), name="B"), oshape=(3, 4))
    with pytest.raises(TopiError, match=r"matmul_broadcast: the batch dimensions do not broadcast: tensor_a 'A' "
                                        r"\(3, 4, 5\) and tensor_b 'B' \(2, 5, 6\)"):
        topi.matmul_broadcast(A, te.placeholder((2, 5, 6), name="B"))
    with pytest.raises(TopiError, match=r"matmul_broadcast: the reduction sizes differ: 5 in 'A' \(3, 4, 5\) "
                                        r"\(tensor_a\) and 4 in 'v' \(4,\)"):
        topi.matmul_broadcast(A, te.placeholder((4,), name="v"))
    with pytest.raises(TopiError, match="matmul_broadcast: tensor_b 's' is a scalar"):
        topi.matmul_broadcast(A, te.placeholder((), name="s"))


def test_norm_errors():
    X = te.placeholder((2, 3, 4), name="X")
    g4 = te.placeholder((4,), name="g4")
    with pytest.raises(TopiError, match=r"layer_norm\(data 'X' \(2, 3, 4\)\): axis 3 is out of range for a tensor "
                                        r"of rank 3"):
        topi.nn.layer_norm(X, g4, g4, 3)
    with pytest.raises(TopiError, match=r"layer_norm: gamma 'g4' \(4,\) must have shape \(3, 4\), that of the "
                                        r"normalized axes of data 'X' \(2, 3, 4\)"):
        topi.nn.layer_norm(X, g4, None, (1, 2))
    with pytest.raises(TopiError, match=r"layer_norm\(data 'X' \(2, 3, 4\)\): axis \(2, -1\) names an axis twice"):
        topi.nn.layer_norm(X, None, None, (2, -1))
    with pytest.raises(TeccTypeError, match="layer_norm: axis must be an int or a list of ints, got 1e-05"):
        topi.nn.layer_norm(X, g4, g4, 1e-5)
    with pytest.raises(TopiError, match=r"instance_norm: beta 'b' \(5,\) must have shape \(4,\)"):
        topi.nn.instance_norm(X, g4, te.placeholder((5,), name="b"), 2)
    with pytest.raises(TopiError, match=r"group_norm\(data 'X' \(2, 3, 4\)\): the 3 channels \(axis 1\) do not "
                                        r"split into 2 groups"):
        topi.nn.group_norm(X, None, None, 2, 1, [2])
    with pytest.raises(TopiError, match=r"group_norm\(data 'X' \(2, 3, 4\)\): axes \(1, 2\) include the channel "
                                        r"axis 1"):
        topi.nn.group_norm(X, None, None, 3, 1, [1, 2])
    with pytest.raises(TopiError, match=r"group_norm: gamma 'g4' \(4,\) must have shape \(3,\)"):
        topi.nn.group_norm(X, g4, None, 3, 1, [2])
    p3 = [te.placeholder((3,), name=n) for n in "gbmv"]
    with pytest.raises(TopiError, match=r"batch_norm\(data 'X' \(2, 3, 4\)\): axis -4 is out of range"):
        topi.nn.batch_norm(X, *p3, axis=-4)
    with pytest.raises(TopiError, match=r"batch_norm: moving_var 'v4' \(4,\) has 4 entries but data 'X' \(2, 3, 4\) "
                                        r"has 3 channels along axis 1"):
        topi.nn.batch_norm(X, *p3[:3], te.placeholder((4,), name="v4"))
    with pytest.raises(TopiError, match=r"batch_norm: momentum 1.5 is not in \[0, 1\]"):
        topi.nn.batch_norm(X, *p3, training=True, momentum=1.5)
    with pytest.raises(TopiError, match=r"lrn\(data 'X' \(2, 3, 4\)\): size must be a positive odd int .*got 4"):
        topi.nn.lrn(X, 4)
    with pytest.raises(TopiError, match=r"lrn\(data 'X' \(2, 3, 4\)\): axis 5 is out of range"):
        topi.nn.lrn(X, 3, axis=5)
    with pytest.raises(TopiError, match=r"lrn\(data 'I' \(2, 3\)\): the data must be floating point, not int32"):
        topi.nn.lrn(te.placeholder((2, 3), "int32", name="I"), 3)
    with pytest.raises(TopiError, match="epsilon must be a non-negative number, got -1"):
        topi.nn.layer_norm(X, None, None, -1, epsilon=-1)


def test_schedule_errors():
    X = te.placeholder((4, 5), name="X")
    with pytest.raises(ScheduleError, match="schedule_dense_small_batch: 'T_relu' .* is not a dense"):
        K.schedule_dense_small_batch.__wrapped__(S.FallbackConfigEntity(), [topi.nn.relu(X)])
    with pytest.raises(ScheduleError, match="is not a normalization"):
        K.schedule_layer_norm(topi.nn.relu(X))
    with pytest.raises(ScheduleError, match="schedule_lrn: 'T_relu' .* is not an lrn"):
        x86.schedule_lrn(topi.nn.relu(X))
    D = topi.nn.dense(X, te.placeholder((3, 5), name="W"))
    with pytest.raises(ScheduleError, match=r"the output 'T_transpose' \(3, 4\) is not an element-wise op of "
                                            r"'T_dense' \(4, 3\)"):
        x86.schedule_dense(topi.transpose(D))
    with pytest.raises(ScheduleError, match="schedule_dense_nopack: 'T_sum' .* is not a dense"):
        x86.schedule_dense(topi.sum(D, axis=1))


# ---------------------------------------------------------------------------------------
# the real GPU
# ---------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_default_cuda_schedules_on_gpu():
    rng = np.random.default_rng(11)
    for name, (schedule, inputs, out) in _cuda_cases().items():
        outs = list(out) if isinstance(out, list) else [out]
        with tecc.target.Target("cuda"):
            s = schedule(outs)
        f = tecc.build(s, inputs + outs, "cuda")
        arrays = [rng.uniform(0.5, 1.5, [int(d) for d in t.shape]).astype("float32") for t in inputs]
        got = [np.zeros([int(d) for d in t.shape], "float32") for t in outs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(*arrays, *got)
        cpu = tecc.build(te.create_schedule([t.op for t in outs]), inputs + outs, "llvm")
        want = [np.zeros_like(g) for g in got]
        cpu(*arrays, *want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=name)
