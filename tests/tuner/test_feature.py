"""The cost model's features: the TIR walk of ``tecc.tir.analysis.features`` on
hand-built IR with known answers, and ``tecc.tuner.feature`` (AutoTVM's
``autotvm.feature``) on templates: fixed-length vectors, names, curves, the tuner's
entry points and their errors."""
import math

import numpy as np
import pytest

import tecc
from tecc import autotvm, te, tir
from templates import tiled_matmul
from tecc.errors import TargetError, TeccTypeError
from tecc.target import Target
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.analysis import features as TF
from tecc.tuner import feature as F
from irhelpers import bind, buf, kernel, loop, lowered_func, ramp, store, var

c = tir.const


def stmt_named(ff, label):
    return next(s for s in ff.stmts if s.label == label)


def access(st, name):
    return next(a for a in st.accesses if a.buffer == name)


# ----------------------------------------------------------------------------
# the walk, on hand-built IR
# ----------------------------------------------------------------------------
def _hand_func():
    """for i parallel 16: for j 8: for v vectorized 4:
           if i < 15: B[i, j*4 + v] = A[i, j*4 + v] * 2 + W[j] + D[i // 2]"""
    A, B = buf("A", (16, 32)), buf("B", (16, 32))
    W, D = buf("W", (8,)), buf("D", (8,))
    i, j, v = var("i"), var("j"), var("v")
    col = j * 4 + v
    value = E.BufferLoad(A, (i, col)) * c(2.0) + E.BufferLoad(W, (j,)) + E.BufferLoad(D, (tir.floordiv(i, 2),))
    body = S.IfThenElse(i < 15, store(B, value, i, col))
    body = loop(i, 16, loop(j, 8, loop(v, 4, body, S.ForKind.VECTORIZED)), S.ForKind.PARALLEL)
    return lowered_func("hand", [A, B, W, D], body)


def test_hand_built_loops_counts_strides_and_bytes():
    ff = TF.extract_features(_hand_func())
    (st,) = ff.stmts
    assert st.label == "B" and st.guarded
    assert [(lp.var, lp.extent, lp.kind, lp.nest_level) for lp in st.loops] == [
        ("i", 16, "parallel", 0), ("j", 8, "serial", 1), ("v", 4, "vectorized", 2)]
    assert [lp.topdown for lp in st.loops] == [16, 128, 512]
    assert [lp.bottomup for lp in st.loops] == [512, 32, 4]
    assert st.executions == 512 and st.float_ops == 3 and st.flops == 3 * 512
    assert st.vector_width == 4 and st.parallel_extent == 16 and st.unroll_extent == 1

    B, A, W, D = (access(st, n) for n in "BAWD")
    assert [a.order for a in (B, A, W, D)] == [0, 1, 2, 3]
    assert B.is_write and not A.is_write and B.scope == "global"
    for a in (A, B):  # every element once, contiguous along the vector lanes
        assert (a.count, a.accesses, a.bytes, a.unique_bytes, a.reuse) == (1, 512, 2048, 2048, 1)
        assert (a.stride_inner, a.stride_vector, a.stride_threadx, a.contiguous, a.affine) == (1, 1, 0, True, True)
        assert a.footprint == (2048, 128, 16)
    # W[j]: the same element across the lanes and across i
    assert (W.unique_bytes, W.reuse, W.stride_inner, W.contiguous) == (32, 64, 0, False)
    assert W.footprint == (32, 32, 4)
    # D[i // 2]: not affine in i; its distinct elements stop at the buffer's 8
    assert not D.affine and D.unique_bytes == 32 and D.footprint == (32, 4, 4)
    assert [lp.working_set for lp in st.loops] == [2048 + 2048 + 32 + 32, 128 + 128 + 32 + 4, 16 + 16 + 4 + 4]

    assert ff.flops == 1536 and ff.bytes_moved == {"global": 4 * 2048, "shared": 0, "local": 0}
    assert ff.arith_intensity == pytest.approx(1536 / 8192)
    assert (ff.vector_width, ff.parallel_extent, ff.kernels, ff.occupancy) == (4, 16, (), None)


def test_flattened_vector_code_reads_like_the_loop():
    """After vectorization a 4-lane loop is a Ramp index: the same lanes, strides and bytes."""
    A, B = buf("A", (64,)), buf("B", (64,))
    i = var("i")
    idx = ramp(i * 4, 4)
    body = loop(i, 16, store(B, E.BufferLoad(A, (idx,)) + E.BufferLoad(A, (E.Ramp(i * 4, c(2), 4),)), idx))
    (st,) = TF.extract_features(lowered_func("vec", [A, B], body)).stmts
    b, a = access(st, "B"), access(st, "A")
    assert st.vector_width == 4 and st.executions == 16 and st.float_ops == 4 and st.flops == 64
    assert (b.lanes, b.stride_inner, b.stride_vector, b.contiguous, b.accesses, b.bytes) == (4, 1, 1, True, 64, 256)
    assert a.count == 2 and a.accesses == 128  # two loads, the first one's layout


def test_gpu_bindings_rebinding_and_occupancy_by_hand():
    """A kernel before splitting: blockIdx.x 4 x threadIdx.x 32; inside, a fetch loop
    re-binds threadIdx.x (same threads: executions x1) into 512 bytes of shared memory."""
    A, B = buf("A", (4, 128)), buf("B", (4, 128))
    Sh = buf("A.shared", (128,), scope="shared")
    bx, tx, t2, k = var("bx"), var("tx"), var("tx2"), var("k")
    fetch = bind(t2, 32, "threadIdx.x", loop(k, 4, store(Sh, E.BufferLoad(A, (bx, t2 * 4 + k)), t2 * 4 + k)))
    use = loop(k, 4, store(B, E.BufferLoad(Sh, (tx * 4 + k,)), bx, tx * 4 + k))
    body = bind(bx, 4, "blockIdx.x", bind(tx, 32, "threadIdx.x", S.Allocate(Sh, S.seq(fetch, use))))
    ff = TF.extract_features(lowered_func("k", [A, B], body), arch="sm_90")
    fetch_st, use_st = ff.stmts
    assert [(lp.kind, lp.extent) for lp in fetch_st.loops] == [
        ("blockIdx", 4), ("threadIdx", 32), ("threadIdx", 32), ("serial", 4)]
    assert fetch_st.executions == 4 * 32 * 4 == use_st.executions
    a = access(fetch_st, "A")
    assert a.stride_threadx == 4 and a.stride_inner == 1 and a.unique_bytes == 4 * 128 * 4
    (kern,) = ff.kernels
    assert (kern.grid, kern.block, kern.threads_per_block, kern.blocks, kern.shared_bytes) == (
        (4, 1, 1), (32, 1, 1), 32, 4, 512)
    assert ff.occupancy == TF.estimate_occupancy(32, 512, 0, "sm_90") and ff.arch == "sm_90"


def test_occupancy_estimate_by_hand():
    # 256 threads and 48 KiB of shared memory: 3 blocks fit the 164 KiB of an sm_80, 4 the 228 KiB of an sm_90
    o80 = TF.estimate_occupancy(256, 48 * 1024, arch="sm_80")
    assert (o80.warps_per_block, o80.blocks_per_sm, o80.limited_by) == (8, 3, "shared")
    assert o80.occupancy == pytest.approx(3 * 8 / 64) and o80.registers_per_thread == TF.REGISTERS_PER_THREAD_ESTIMATE
    assert TF.estimate_occupancy(256, 48 * 1024, arch="sm_90").blocks_per_sm == 4
    # 1024 threads, no shared memory: the threads per SM limit
    full = TF.estimate_occupancy(1024, arch="sm_80")
    assert (full.blocks_per_sm, full.limited_by, full.occupancy) == (2, "threads", 1.0)
    # 96 local bytes per thread: 56 registers, rounded per warp to 1792 -> 65536 // (1792*8) = 4 blocks
    regs = TF.estimate_occupancy(256, 0, 96, arch="sm_80")
    assert (regs.registers_per_thread, regs.blocks_per_sm, regs.limited_by) == (56, 4, "registers")
    # over a per-block limit: cannot launch
    assert TF.estimate_occupancy(2048, arch="sm_80").limited_by == "launch"
    # no shared memory: never limited by it (32 one-warp blocks fill the block slots)
    assert TF.estimate_occupancy(32, 0, 0, "sm_80").limited_by == "blocks"
    assert TF.estimate_occupancy(64, 200 * 1024, arch="sm_80").blocks_per_sm == 0


def test_split_kernel_thread_extent_attributes():
    A = buf("A", (256,))
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    body = store(A, E.BufferLoad(A, (bx * 64 + tx,)) * c(3.0), bx * 64 + tx)
    k = kernel("scale", [A], body, launch=[(bx, 4), (tx, 64)])
    ff = TF.extract_features(k)
    (st,) = ff.stmts
    assert [(lp.var, lp.kind) for lp in st.loops] == [("blockIdx.x", "blockIdx"), ("threadIdx.x", "threadIdx")]
    assert st.executions == 256 and access(st, "A").stride_threadx == 1
    assert ff.kernels[0].threads_per_block == 64 and ff.kernels[0].blocks == 4 and ff.arch == "sm_80"


# ----------------------------------------------------------------------------
# templates
# ----------------------------------------------------------------------------
@autotvm.template("test_feature/matmul")
def _matmul(N, L, M, dtype):
    return tiled_matmul(N, L, M, dtype, vec_knob=True, refuse_vec_of_one=True)


@autotvm.template("test_feature/cuda_matmul")
def _cuda_matmul(N, dtype):
    A = te.placeholder((N, N), name="A", dtype=dtype)
    B = te.placeholder((N, N), name="B", dtype=dtype)
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_knob("tile", [4, 8, 16])
    cfg.define_knob("ktile", [4, 8])
    T, KT = cfg["tile"].val, cfg["ktile"].val
    AA, BB = s.cache_read(A, "shared", [C]), s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    y, x = s[C].op.axis
    by, ty = s[C].split(y, T)
    bx, tx = s[C].split(x, T)
    s[C].reorder(by, bx, ty, tx)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], tx)
    ko, _ = s[CL].split(s[CL].op.reduce_axis[0], KT)
    for SS, inner in ((AA, KT), (BB, T)):
        s[SS].compute_at(s[CL], ko)
        a, b = s[SS].op.axis
        s[SS].bind(a, te.thread_axis("threadIdx.y"))
        bo, _ = s[SS].split(b, nparts=min(T, inner))
        s[SS].bind(bo, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


@pytest.fixture(scope="module")
def cpu_task():
    return autotvm.task.create("test_feature/matmul", args=(32, 32, 32, "float32"), target="llvm")


@pytest.fixture(scope="module")
def cuda_task():
    return autotvm.task.create("test_feature/cuda_matmul", args=(32, "float32"), target="cuda -arch=sm_80")


def _config(task, tile_x, vec, tile_y=4):
    for i in range(len(task.config_space)):
        cfg = task.config_space.get(i)
        if cfg["tile_x"].size[-1] == tile_x and cfg["tile_y"].size[-1] == tile_y and cfg["vec"].val == vec:
            return cfg
    raise AssertionError("no such config")


def _instantiate(task, cfg):
    with Target(task.target):
        return task.instantiate(cfg)


def test_vectorized_and_scalar_schedules_differ_where_expected(cpu_task):
    ffs = {}
    for vec in (0, 1):
        s, args = _instantiate(cpu_task, _config(cpu_task, 8, vec))
        ffs[vec] = TF.extract_features(F.lower_for_features(s, args))
    scalar, vector = (stmt_named(ffs[v], "C#1") for v in (0, 1))
    assert scalar.vector_width == 1 and vector.vector_width == 8 and ffs[1].vector_width == 8
    assert [lp.kind for lp in scalar.loops][-1] == "serial" and [lp.kind for lp in vector.loops][-1] == "vectorized"
    assert [lp.var for lp in vector.loops] == ["i.outer", "j.outer", "k", "i.inner", "j.inner"]
    assert access(scalar, "B").stride_vector == 0 and access(vector, "B").stride_vector == 1
    assert access(vector, "A").stride_vector == 0 and access(vector, "A").stride_inner == 0
    assert access(vector, "B").stride_inner == 1 == access(scalar, "B").stride_inner
    # the same work: flops (as the task counts them) and bytes
    assert ffs[0].flops == ffs[1].flops == cpu_task.flop == 2 * 32 ** 3
    assert ffs[0].bytes_moved == ffs[1].bytes_moved

    names = F.feature_names()
    flat = {v: dict(zip(names, F.flat_itervar(ffs[v]))) for v in (0, 1)}
    assert flat[1]["s1.loop[-1].kind_vectorized"] == 1 and flat[0]["s1.loop[-1].kind_vectorized"] == 0
    assert flat[0]["s1.loop[-1].kind_serial"] == 1
    assert flat[1]["fn.vector_width"] == pytest.approx(math.log2(9)) and flat[0]["fn.vector_width"] == 1
    assert flat[1]["s1.loop[-1].extent"] == pytest.approx(math.log2(9))


def test_cuda_schedule_threads_shared_memory_and_occupancy(cuda_task):
    cfg = next(cuda_task.config_space.get(i) for i in range(len(cuda_task.config_space))
               if cuda_task.config_space.get(i)["tile"].val == 8 and cuda_task.config_space.get(i)["ktile"].val == 8)
    s, args = _instantiate(cuda_task, cfg)
    with Target(cuda_task.target):
        ff = TF.extract_features(F.lower_for_features(s, args), arch="sm_80")
    (kern,) = ff.kernels
    assert kern.threads_per_block == 64 and kern.blocks == 16 and kern.grid == (4, 4, 1)
    assert kern.shared_bytes == 2 * 8 * 8 * 4 and kern.local_bytes == 4
    assert ff.occupancy == TF.estimate_occupancy(64, 512, 4, "sm_80")
    assert 0 < ff.occupancy.occupancy <= 1 and ff.flops == cuda_task.flop
    # global traffic only in the fetches and the write-back: less than the shared reads
    assert ff.bytes_moved["global"] < ff.bytes_moved["shared"]
    fetch = stmt_named(ff, "A.shared")
    assert access(fetch, "A").stride_threadx == 1 and access(fetch, "A").scope == "global"
    assert access(fetch, "A.shared").scope == "shared"
    named = dict(zip(F.feature_names(), F.flat_itervar(ff, take_log=False)))
    assert named["fn.threads_per_block"] == 64 and named["fn.shared_bytes"] == 512
    assert named["fn.occupancy"] == pytest.approx(ff.occupancy.occupancy)
    # the whole CUDA pipeline (split kernel, thread_extent attributes) gives the same totals
    split = TF.extract_features(F.lower_for_features(s, args, level="target", target=cuda_task.target))
    assert split.flops == ff.flops and split.kernels[0].threads_per_block == 64
    assert split.kernels[0].shared_bytes == 512 and split.bytes_moved["global"] == ff.bytes_moved["global"]


@pytest.mark.parametrize("fixture", ["cpu_task", "cuda_task"])
def test_vectors_have_one_length_and_names_align(fixture, request):
    task = request.getfixturevalue(fixture)
    n = len(task.config_space)
    rows = F.batch_features(task, range(0, n, max(1, n // 8)), "itervar", cache=F.FeatureCache())
    good = [r for r in rows if r is not None]
    assert len(good) >= 3 and {len(r) for r in good} == {F.ITERVAR_LENGTH}
    assert all(r.dtype == np.float32 for r in good)
    assert len({r.tobytes() for r in good}) == len(good)  # the configs differ, so do their features
    curves = F.batch_features(task, range(0, n, max(1, n // 8)), "curve", cache=F.FeatureCache())
    assert {len(r) for r in curves if r is not None} == {len(F.feature_names(feature_type="curve"))}
    assert len(F.feature_names(task, "knob")) == len(F.task_feature(task, 0, "knob"))


def test_structured_features_flatten_to_the_vector_with_their_names(cpu_task):
    s, args = _instantiate(cpu_task, _config(cpu_task, 8, 1))
    rows = F.get_itervar_feature(s, args)
    assert [r[0] for r in rows] == [("stmt", "C"), ("stmt", "C#1"), ("function", "main")]
    update = dict(rows[1])
    assert update["loop4(j.inner).kind"] == "vectorized" and update["loop4(j.inner).extent"] == 8
    assert update["buf2(B).stride_inner"] == 1 and update["buf1(A).reuse"] == 32  # each A element once per column
    flat = F.get_itervar_feature_flatten(s, args)
    np.testing.assert_array_equal(F.flatten_itervar_feature(F.get_itervar_feature(s, args, take_log=True)), flat)
    names = F.get_flatten_name(rows)
    generic = F.feature_names()
    assert len(names) == len(generic) == len(flat)
    named = dict(zip(names, flat))
    assert named["s1(C#1).loop[-1](j.inner).kind_vectorized"] == 1
    assert named["s1(C#1).buf2(B).stride_inner"] == 1 and named["s1(C#1).buf1(A).stride_inner"] == 0
    assert named["s1(C#1).loop[-5](i.outer).extent"] == pytest.approx(math.log2(1 + 32 / 4))
    # names differ from the generic ones only by the concrete labels
    strip = [n.replace("(C#1)", "").replace("(C)", "") for n in names]
    assert all(g.split(".")[-1] == n.split(".")[-1] for g, n in zip(generic, strip))


def test_curve_features_fixed_length_and_values(cpu_task):
    s, args = _instantiate(cpu_task, _config(cpu_task, 8, 0))
    for n in (5, 30):
        cv = F.get_buffer_curve_sample_flatten(s, args, sample_n=n)
        assert cv.shape == (F.MAX_BUFFERS * (3 + 2 * n),)
    cv = F.get_buffer_curve_sample_flatten(s, args, sample_n=4)
    # slot 0: C of the update (global); at 2^0 iterations it touches 4 bytes, read and written once each
    assert list(cv[:3]) == [1, 0, 0] and cv[3] == 2 and cv[3 + 4] == 1
    # its distinct bytes never shrink as more iterations are enclosed
    c0 = cv[3:3 + 4]
    assert all(b >= a for a, b in zip(c0, c0[1:]))


def test_task_feature_kinds_none_for_invalid_and_cache(cpu_task):
    good = _config(cpu_task, 8, 1)
    knob = F.task_feature(cpu_task, good, "knob")
    np.testing.assert_array_equal(knob, np.asarray(good.get_flatten_feature(), dtype=np.float32))
    assert F.task_feature(cpu_task, good.index, "itervar").shape == (F.ITERVAR_LENGTH,)
    bad = _config(cpu_task, 1, 1)  # the template rejects it: no features, no exception
    assert F.task_feature(cpu_task, bad, "itervar") is None
    cache = F.FeatureCache(max_entries=2)
    first = F.batch_features(cpu_task, [good.index, bad.index], cache=cache)
    assert first[1] is None and len(cache) == 2
    again = F.batch_features(cpu_task, [good.index], cache=cache)
    assert again[0] is first[0]  # from the cache
    F.batch_features(cpu_task, [0], "knob", cache=cache)
    assert len(cache) == 2  # the least recently used went


def test_batches_lowered_in_worker_processes_give_the_same_rows(cpu_task):
    # PARALLEL_MIN or more uncached configs are lowered in forked workers; the rows
    # (None for a config the template rejects) equal those lowered here, in order
    n = len(cpu_task.config_space)
    indexes = list(range(0, n, max(1, n // (2 * F.PARALLEL_MIN))))[:2 * F.PARALLEL_MIN]
    assert len(indexes) >= F.PARALLEL_MIN
    here = F.batch_features(cpu_task, indexes, cache=F.FeatureCache(), workers=1)
    forked = F.batch_features(cpu_task, indexes + indexes[:3], cache=F.FeatureCache(), workers=2)
    assert len(forked) == len(indexes) + 3
    for a, b in zip(here + here[:3], forked):
        assert (a is None and b is None) or np.array_equal(a, b)


@pytest.mark.parametrize("value, message", [("two", "a whole number"), ("0", "at least 1")])
def test_feature_workers_setting_is_checked(monkeypatch, value, message):
    monkeypatch.setenv("TECC_FEATURE_WORKERS", value)
    with pytest.raises(F.FeatureError, match=f"TECC_FEATURE_WORKERS must be {message}"):
        F.feature_workers()
    monkeypatch.setenv("TECC_FEATURE_WORKERS", "3")
    assert F.feature_workers() == 3


def test_extraction_is_fast(cpu_task):
    """The tuner asks for thousands of configs: lowering plus the walk stays in milliseconds."""
    import time

    idx = list(range(min(20, len(cpu_task.config_space))))
    F.batch_features(cpu_task, idx[:2], cache=F.FeatureCache())  # warm up
    t0 = time.perf_counter()
    F.batch_features(cpu_task, idx, cache=F.FeatureCache())
    per = (time.perf_counter() - t0) / len(idx)
    assert per < 0.05, f"{per * 1e3:.1f} ms per config"


# ----------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------
def test_errors_name_what_is_wrong(cpu_task):
    s, args = _instantiate(cpu_task, _config(cpu_task, 8, 0))
    with pytest.raises(F.FeatureError, match="unknown feature_type 'itervars'"):
        F.task_feature(cpu_task, 0, "itervars")
    with pytest.raises(F.FeatureError, match="unknown feature_type 'flat'"):
        F.batch_features(cpu_task, [0], "flat")
    with pytest.raises(F.FeatureError, match="unknown feature_type"):
        F.feature_names(feature_type="loops")
    with pytest.raises(F.FeatureError, match="needs the task"):
        F.feature_names(feature_type="knob")
    with pytest.raises(F.FeatureError, match="sample_n must be a positive int"):
        F.get_buffer_curve_sample_flatten(s, args, sample_n=0)
    with pytest.raises(F.FeatureError, match="level must be one of"):
        F.lower_for_features(s, args, level="codegen")
    with pytest.raises(F.FeatureError, match="needs a target"):
        F.lower_for_features(s, args, level="target")
    with pytest.raises(F.FeatureError, match="rows of get_itervar_feature"):
        F.get_flatten_name([[("x", 1)]])
    with pytest.raises(TeccTypeError, match="extract_features takes a tir.PrimFunc"):
        TF.extract_features(s)
    with pytest.raises(TargetError, match="unknown GPU architecture 'sm_12'"):
        TF.sm_limits("sm_12")
    with pytest.raises(TargetError, match="unknown GPU architecture"):
        TF.extract_features(_kernel_for_arch(), arch="sm_5")


def _kernel_for_arch():
    A = buf("A", (32,))
    tx = var("threadIdx.x")
    return kernel("k", [A], store(A, c(0.0), tx), launch=[(tx, 32)])


def test_extract_features_is_a_tir_analysis():
    assert tecc.tir.analysis.extract_features is TF.extract_features
    assert tecc.tir.analysis.estimate_occupancy is TF.estimate_occupancy


def test_tensor_core_calls_are_statements_with_their_flops_and_traffic():
    """The wmma calls of a tensor-core dense layer: the mma's 2*m*n*k per warp make
    the kernel's flops (2 M N K in all), each load and store moves its tile, fragments
    count as per-thread (local) memory."""
    import warnings

    from tecc.topi.cuda.dense_tensorcore import dense_tensorcore, schedule_dense_tensorcore

    M = K = N = 64
    A = te.placeholder((M, K), "float16", name="A")
    W = te.placeholder((N, K), "float16", name="W")
    with warnings.catch_warnings(), tecc.target.Target("cuda"):
        warnings.simplefilter("ignore")  # the fallback config
        out = dense_tensorcore(A, W, None, "float32")
        s = schedule_dense_tensorcore([out])
    f = TF.extract_features(tecc.lower(s, [A, W, out], target="cuda"))
    assert f.flops == 2 * M * N * K
    by_label = {st.label: st for st in f.stmts}
    mma = by_label["mma_sync(T_dense.wmma.accumulator)"]
    assert mma.flops == 2 * M * N * K
    assert {a.buffer: a.scope for a in mma.accesses} == {
        "T_dense.wmma.accumulator": "local", "A.shared.wmma.matrix_a": "local", "W.shared.wmma.matrix_b": "local"}
    load = by_label["load_matrix_sync(A.shared.wmma.matrix_a)"]
    shared = next(a for a in load.accesses if a.buffer == "A.shared")
    # the fallback on so small a product: a warp per 16x16 tile (the most blocks), so
    # every A tile is loaded once per block column (64 / 16 = 4 of them)
    assert shared.scope == "shared" and shared.bytes == 4 * M * K * 2 and not shared.is_write
    store_ = by_label["store_matrix_sync(T_dense.wmma.accumulator)"]
    assert next(a for a in store_.accesses if a.buffer == "T_dense.wmma.accumulator.shared").is_write
