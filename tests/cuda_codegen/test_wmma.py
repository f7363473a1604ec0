"""Tensor cores through tensorize: wmma fragments (``wmma.matrix_a`` / ``matrix_b`` /
``accumulator`` scopes) and the four wmma intrinsics, from a TE schedule to CUDA C
compiled for sm_80 and sm_90, run on the emulator against numpy.

The convolution is the schedule of TVM's tensor-core tutorial (opt_conv_tensorcore)
at small sizes, written with tecc's names; the dense layers are
``topi.cuda.dense_tensorcore`` with its knobs.
"""
import warnings

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.contrib import nvcc
from tecc.errors import LoweringError, TeccTypeError
from tecc.topi.cuda.dense_tensorcore import dense_tensorcore, schedule_dense_tensorcore
from tecc.topi.utils import TopiError
from tecc.tuner.task.space import InstantiationError
from irhelpers import build_all_arches

BLOCK = 16


# ---------------------------------------------------------------------------------
# the tutorial's convolution: NHWC in 16x16 blocks, float16 in, float32 out
# ---------------------------------------------------------------------------------
def _copy_intrin(op, dtype, src_scope, dst_scope, n=BLOCK):
    """The tutorial's load (``op`` tvm_load_matrix_sync: shared -> fragment) or store
    (tvm_store_matrix_sync: accumulator -> global) of one 16x16 tile."""
    A = te.placeholder((n, n), name="A", dtype=dtype)
    BA = tir.decl_buffer(A.shape, A.dtype, scope=src_scope, data_alignment=32, offset_factor=256)
    C = te.compute((n, n), lambda i, j: A[i, j], name="C")
    BC = tir.decl_buffer(C.shape, C.dtype, scope=dst_scope, data_alignment=32, offset_factor=256)

    def intrin_func(ins, outs):
        frag, mem = (outs[0], ins[0].access_ptr("r")) if op == "load" else (ins[0], outs[0].access_ptr("w"))
        ib = tir.ir_builder.create()
        ib.emit(tir.call_intrin("handle", f"tir.tvm_{op}_matrix_sync", frag.data, n, n, n, frag.elem_offset // 256,
                                mem, n, "row_major"))
        return ib.get()

    return te.decl_tensor_intrin(C.op, intrin_func, binds={A: BA, C: BC})


def _load_intrin(scope):
    return _copy_intrin("load", "float16", "shared", scope)


def _store_intrin():
    return _copy_intrin("store", "float32", "wmma.accumulator", "global")


def _gemm_intrin(n=BLOCK):
    A = te.placeholder((n, n), name="A", dtype="float16")
    B = te.placeholder((n, n), name="B", dtype="float16")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k].astype("float") * B[k, j].astype("float"), axis=k), name="C")
    binds = {t: tir.decl_buffer(t.shape, t.dtype, name=name, scope=scope, data_alignment=32, offset_factor=256)
             for t, name, scope in ((A, "BA", "wmma.matrix_a"), (B, "BB", "wmma.matrix_b"),
                                    (C, "BC", "wmma.accumulator"))}

    def intrin_func(ins, outs):
        (ba, bb), (bc,) = ins, outs

        def emit(*args):
            ib = tir.ir_builder.create()
            ib.emit(tir.call_intrin("handle", *args))
            return ib.get()

        init = emit("tir.tvm_fill_fragment", bc.data, n, n, n, bc.elem_offset // 256, 0.0)
        update = emit("tir.tvm_mma_sync", bc.data, bc.elem_offset // 256, ba.data, ba.elem_offset // 256, bb.data,
                      bb.elem_offset // 256, bc.data, bc.elem_offset // 256)
        return update, init, update

    return te.decl_tensor_intrin(C.op, intrin_func, binds=binds)


def conv_tensorcore(batch, size, channels, tensorize=("AF", "WF", "Conv", "ConvF")):
    """The tutorial's 3x3 convolution (pad 1) and schedule; ``tensorize`` names the
    stages whose loops become wmma calls (all of them for a working kernel)."""
    ic_b = oc_b = channels // BLOCK
    data_shape = (batch // BLOCK, size, size, ic_b, BLOCK, BLOCK)
    kernel_shape = (3, 3, ic_b, oc_b, BLOCK, BLOCK)
    out_shape = (batch // BLOCK, size, size, oc_b, BLOCK, BLOCK)
    kh, kw = te.reduce_axis((0, 3), name="kh"), te.reduce_axis((0, 3), name="kw")
    ic, ii = te.reduce_axis((0, ic_b), name="ic"), te.reduce_axis((0, BLOCK), name="ii")
    A = te.placeholder(data_shape, name="A", dtype="float16")
    W = te.placeholder(kernel_shape, name="W", dtype="float16")
    Apad = te.compute((batch // BLOCK, size + 2, size + 2, ic_b, BLOCK, BLOCK),
                      lambda n, h, w, i, nn, ii: tir.if_then_else(
                          tir.all(h >= 1, h - 1 < size, w >= 1, w - 1 < size), A[n, h - 1, w - 1, i, nn, ii],
                          tir.const(0.0, "float16")), name="Apad")
    Conv = te.compute(out_shape, lambda n, h, w, o, nn, oo: te.sum(
        Apad[n, h + kh, w + kw, ic, nn, ii].astype("float32") * W[kh, kw, ic, o, ii, oo].astype("float32"),
        axis=[ic, kh, kw, ii]), name="Conv")
    s = te.create_schedule(Conv.op)
    s[Apad].compute_inline()
    AS = s.cache_read(Apad, "shared", [Conv])
    WS = s.cache_read(W, "shared", [Conv])
    AF = s.cache_read(AS, "wmma.matrix_a", [Conv])
    WF = s.cache_read(WS, "wmma.matrix_b", [Conv])
    ConvF = s.cache_write(Conv, "wmma.accumulator")
    block_row_warps, block_col_warps, warp_row_tiles, warp_col_tiles, chunk = 4, 2, 2, 4, 2
    tx, ty, tz = te.thread_axis("threadIdx.x"), te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.z")
    nc, hc, wc, oc, nnc, ooc = Conv.op.axis
    block_k = s[Conv].fuse(hc, wc)
    s[Conv].bind(block_k, te.thread_axis("blockIdx.z"))
    nc, nci = s[Conv].split(nc, factor=warp_row_tiles)
    block_i, nc = s[Conv].split(nc, factor=block_row_warps)
    oc, oci = s[Conv].split(oc, factor=warp_col_tiles)
    block_j, oc = s[Conv].split(oc, factor=block_col_warps)
    s[Conv].reorder(block_k, block_i, block_j, nc, oc, nci, oci, nnc, ooc)
    s[Conv].bind(block_i, te.thread_axis("blockIdx.x"))
    s[Conv].bind(block_j, te.thread_axis("blockIdx.y"))
    s[Conv].bind(nc, ty)
    s[Conv].bind(oc, tz)
    s[ConvF].compute_at(s[Conv], oc)
    n, h, w, o, nnf, oof = ConvF.op.axis
    ko, ki = s[ConvF].split(ic, factor=chunk)
    s[ConvF].reorder(ko, kh, ki, kw, n, o, nnf, oof, ii)
    s[AF].compute_at(s[ConvF], kw)
    s[WF].compute_at(s[ConvF], kw)
    s[AS].compute_at(s[ConvF], kh)
    n, h, w, i, nn, ii = AS.op.axis
    tx_, xo = s[AS].split(n, nparts=block_row_warps)
    ty_, yo = s[AS].split(xo, nparts=block_col_warps)
    t = s[AS].fuse(nn, ii)
    to, ti = s[AS].split(t, factor=32)
    s[AS].bind(tx_, ty)
    s[AS].bind(ty_, tz)
    s[AS].bind(ti, tx)
    s[WS].compute_at(s[ConvF], kh)
    kh_, kw_, ic_, o, ii, oo = WS.op.axis
    tx_, xo = s[WS].split(o, nparts=block_row_warps)
    ty_, yo = s[WS].split(xo, nparts=block_col_warps)
    t = s[WS].fuse(ii, oo)
    to, ti = s[WS].split(t, nparts=32)
    s[WS].bind(tx_, ty)
    s[WS].bind(ty_, tz)
    s[WS].bind(to, tx)
    s[WS].vectorize(ti)
    intrins = {"AF": (AF, AF.op.axis[-2], lambda: _load_intrin("wmma.matrix_a")),
               "WF": (WF, WF.op.axis[-2], lambda: _load_intrin("wmma.matrix_b")),
               "Conv": (Conv, nnc, _store_intrin), "ConvF": (ConvF, nnf, _gemm_intrin)}
    for name in tensorize:
        stage, axis, make = intrins[name]
        s[stage].tensorize(axis, make())
    return s, (A, W, Conv), (data_shape, kernel_shape, out_shape)


def conv_reference(a, w, size):
    ap = np.pad(a.astype(np.float32), ((0, 0), (1, 1), (1, 1), (0, 0), (0, 0), (0, 0)))
    out = 0
    for kh in range(3):
        for kw in range(3):
            out = out + np.einsum("nhwcij,cojk->nhwoik", ap[:, kh:kh + size, kw:kw + size],
                                  w[kh, kw].astype(np.float32))
    return out


def _run(mod, *arrays, out_shape, out_dtype="float32"):
    dev = tecc.cuda(0)
    out = tecc.nd.array(np.full(out_shape, np.nan, out_dtype), dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "runs on the CPU emulation"
        mod(*(tecc.nd.array(a, dev) for a in arrays), out)
    return out.numpy()


@pytest.mark.parametrize("batch, size, channels", [(128, 2, 128), (32, 3, 64)])
def test_tutorial_convolution_on_tensor_cores_matches_numpy(batch, size, channels):
    """(32, 3, 64): the block's warp tiles overhang the shape, so the fragment calls
    sit under warp-uniform guards."""
    s, args, (dshape, kshape, oshape) = conv_tensorcore(batch, size, channels)
    mod = build_all_arches(s, list(args))
    src = mod.get_source("cuda")
    assert "#include <mma.h>" in src
    assert "__shared__ __align__(32) __half Apad_shared[" in src  # wmma addresses are 256-bit aligned
    assert "nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major>" in src
    assert "nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> Conv_wmma_accumulator[8];" in src
    for call in ("fill_fragment", "load_matrix_sync", "mma_sync", "store_matrix_sync"):
        assert f"nvcuda::wmma::{call}(" in src
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, dshape).astype("float16")
    w = rng.uniform(-1, 1, kshape).astype("float16")
    got = _run(mod, a, w, out_shape=oshape)
    np.testing.assert_allclose(got, conv_reference(a, w, size), rtol=1e-4, atol=1e-3)


def test_shared_tiles_are_fenced_before_the_fragments_load_them():
    """The fragment loads read shared memory through access_ptr: the barrier pass
    must see those reads (a race the checker finds otherwise)."""
    s, args, (dshape, kshape, oshape) = conv_tensorcore(32, 2, 32)
    mod = tecc.build(s, list(args), "cuda -arch=sm_80")
    body = mod.get_source("cuda").split("__global__")[1]
    store = body.index("W_shared[")
    load = body.index("load_matrix_sync(W_shared_wmma_matrix_b")
    assert "__syncthreads();" in body[store:load]
    a = np.ones(dshape, "float16")
    w = np.ones(kshape, "float16")
    out = np.zeros(oshape, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert mod.check(a, w, out) == []


def test_a_fragment_stage_left_untensorized_is_refused_with_its_name():
    s, args, _ = conv_tensorcore(32, 2, 32, tensorize=("WF", "Conv", "ConvF"))
    with pytest.raises(LoweringError, match=r"fragment 'Apad\.shared\.wmma\.matrix_a' \(wmma\.matrix_a\): written "
                                            r"element by element .*tensorize the loops of the stage"):
        tecc.build(s, list(args), "cuda -arch=sm_80")


def test_fragments_need_sm_70_or_later():
    s, args, _ = conv_tensorcore(32, 2, 32)
    with pytest.raises(LoweringError, match=r"needs tensor cores, which sm_61 lacks; compile for sm_70 or later"):
        tecc.build(s, list(args), "cuda -arch=sm_61")


# ---------------------------------------------------------------------------------
# topi.cuda.dense_tensorcore
# ---------------------------------------------------------------------------------
def _dense_task(M, K, N, out_dtype="float32"):
    return tecc.autotvm.task.create("dense_tensorcore.cuda", args=(("TENSOR", (M, K), "float16"),
                                                                    ("TENSOR", (N, K), "float16"), None, out_dtype),
                                    target="cuda")


def _point(task, **values):
    space = task.config_space
    knob = [next(i for i, e in enumerate(dim.entities) if e.val == values[name]) if name in values else 0
            for name, dim in space.space_map.items()]
    return space.get(space.knob2point(knob))


def _dense_inputs(M, K, N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (M, K)).astype("float16"), rng.uniform(-1, 1, (N, K)).astype("float16")


@pytest.mark.parametrize("wmma_m", [16, 32, 8])
def test_dense_tensorcore_each_fragment_shape(wmma_m):
    M, K, N = 64, 64, 64
    task = _dense_task(M, K, N)
    cfg = _point(task, wmma_m=wmma_m, block_row_warps=2, block_col_warps=1, warp_row_tiles=1, warp_col_tiles=2,
                 chunk=2, offset=8, offsetCS=8, vec=4)
    assert task.config_space.is_index_valid(cfg.index)
    with tecc.target.Target("cuda"):
        s, args = task.instantiate(cfg)
    mod = build_all_arches(s, args)
    fm, fn, _ = {16: (16, 16, 16), 32: (32, 8, 16), 8: (8, 32, 16)}[wmma_m]
    assert f"nvcuda::wmma::matrix_b, {fm}, {fn}, 16, __half, nvcuda::wmma::col_major>" in mod.get_source("cuda")
    a, w = _dense_inputs(M, K, N)
    got = _run(mod, a, w, out_shape=(M, N))
    np.testing.assert_allclose(got, a.astype(np.float32) @ w.astype(np.float32).T, rtol=1e-5, atol=1e-4)


def test_dense_tensorcore_fallback_with_bias_relu_fused_and_float16_out():
    M, K, N = 32, 48, 96
    A = te.placeholder((M, K), "float16", name="A")
    W = te.placeholder((N, K), "float16", name="W")
    B = te.placeholder((N,), "float16", name="bias")
    with tecc.target.Target("cuda"):
        out = tecc.topi.nn.relu(dense_tensorcore(A, W, B, "float16"))
        s = schedule_dense_tensorcore([out])
    mod = build_all_arches(s, [A, W, B, out])
    assert "nvcuda::wmma::accumulator, 16, 16, 16, __half>" in mod.get_source("cuda")
    a, w = _dense_inputs(M, K, N, seed=1)
    b = np.random.default_rng(2).uniform(-1, 1, N).astype("float16")
    got = _run(mod, a, w, b, out_shape=(M, N), out_dtype="float16")
    want = np.maximum(a.astype(np.float32) @ w.astype(np.float32).T + b.astype(np.float32), 0)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=2e-2)


def test_dense_tensorcore_space_refuses_tiles_that_do_not_divide():
    task = _dense_task(32, 32, 32)
    space = task.config_space
    bad = _point(task, wmma_m=16, block_row_warps=4)  # a 64-row tile over 32 rows
    assert not space.is_index_valid(bad.index)
    assert 0 < space.num_valid() < len(space)
    with tecc.target.Target("cuda"), pytest.raises(
            InstantiationError, match=r"its block tile does not divide \(batch, out_dim\) = \(32, 32\)"):
        task.instantiate(bad)


@pytest.mark.parametrize("args, match", [
    ((("float32", "float16"), (32, 32, 32), "float32"), r"data and weight must both be float16 or both bfloat16"),
    ((("float16", "bfloat16"), (32, 32, 32), "float32"), r"got float16 and bfloat16; cast them"),
    ((("float16", "float16"), (32, 32, 32), "int32"), r"out_dtype must be 'float32' or 'float16'"),
    ((("bfloat16", "bfloat16"), (32, 32, 32), "float16"), r"out_dtype must be 'float32' or 'bfloat16'"),
    ((("float16", "float16"), (20, 32, 32), "float32"), r"\(20, 32, 32\) is not a multiple of any wmma tile"),
])
def test_dense_tensorcore_refuses_what_no_fragment_computes(args, match):
    (da, dw), (M, K, N), out_dtype = args
    A = te.placeholder((M, K), da, name="A")
    W = te.placeholder((N, K), dw, name="W")
    with tecc.target.Target("cuda"), pytest.raises(TopiError, match=match):
        dense_tensorcore(A, W, None, out_dtype)


# ---------------------------------------------------------------------------------
# the intrinsics' own checks, and the TVM helpers around them
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("args, match", [
    ((16, 16, 8), r"fragment shape m, n, k = 16, 16, 8 is not one wmma has; use one of 16x16x16, 32x8x16, 8x32x16"),
    ((16, 16, 16, "diagonal"), r"layout must be 'row_major' or 'col_major', got 'diagonal'"),
    ((16, 16), r"takes 8 arguments"),
])
def test_wmma_intrinsic_arguments_are_checked(args, match):
    frag = tir.decl_buffer((256,), "float16", name="F", scope="wmma.matrix_a")
    src = tir.decl_buffer((256,), "float16", name="S", scope="shared")
    shape = args[:3] if len(args) >= 3 else args
    layout = args[3] if len(args) == 4 else "row_major"
    call_args = (frag.data, *shape, 0, src.access_ptr("r"), 16, layout) if len(args) >= 3 else (frag.data, *shape)
    with pytest.raises(TeccTypeError, match=match):
        tir.call_intrin("handle", "tir.tvm_load_matrix_sync", *call_args)


def test_have_tensorcore_as_tvm():
    assert nvcc.have_tensorcore("8.0") and nvcc.have_tensorcore("7.0") and not nvcc.have_tensorcore("6.1")
    assert nvcc.have_tensorcore(target=tecc.target.Target("cuda -arch=sm_90"))
    assert not nvcc.have_tensorcore(target=tecc.target.Target("cuda -arch=sm_61"))
    if not tecc.cuda(0).exist:
        with pytest.warns(UserWarning, match="no CUDA architecture"):
            assert not nvcc.have_tensorcore()


@pytest.mark.gpu
def test_tensor_core_kernels_on_the_gpu():
    s, args, (dshape, kshape, oshape) = conv_tensorcore(128, 2, 128)
    mod = tecc.build(s, list(args), "cuda")
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, dshape).astype("float16")
    w = rng.uniform(-1, 1, kshape).astype("float16")
    np.testing.assert_allclose(_run(mod, a, w, out_shape=oshape), conv_reference(a, w, 2), rtol=1e-3, atol=1e-2)
    M, K, N = 256, 128, 192
    A = te.placeholder((M, K), "float16", name="A")
    W = te.placeholder((N, K), "float16", name="W")
    with tecc.target.Target("cuda"):
        out = dense_tensorcore(A, W, None, "float32")
        s = schedule_dense_tensorcore([out])
    mod = tecc.build(s, [A, W, out], "cuda")
    a, w = _dense_inputs(M, K, N)
    np.testing.assert_allclose(_run(mod, a, w, out_shape=(M, N)), a.astype(np.float32) @ w.astype(np.float32).T,
                               rtol=1e-3, atol=1e-2)


# ---------------------------------------------------------------------------------
# the operator library and models pick tensor cores for float16 dense layers
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, shape, arch, tensorcore", [
    ("float16", (32, 64, 48), "sm_80", True),
    ("float16", (20, 64, 48), "sm_80", False),     # no fragment shape tiles 20 rows
    ("float32", (32, 64, 48), "sm_80", False),
])
def test_topi_cuda_dense_takes_tensor_cores_where_they_fit(dtype, shape, arch, tensorcore):
    M, K, N = shape
    A = te.placeholder((M, K), dtype, name="A")
    W = te.placeholder((N, K), dtype, name="W")
    with tecc.target.Target(f"cuda -arch={arch}"):
        out = tecc.topi.cuda.dense(A, W)
    assert (out.op.attrs["workload"][0] == "dense_tensorcore.cuda") is tensorcore


def test_a_float16_onnx_matmul_runs_on_tensor_cores():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from tecc import relay
    from tecc.contrib import graph_executor

    M, K, N = 64, 64, 32
    rng = np.random.default_rng(5)
    w = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    b = rng.uniform(-1, 1, (N,)).astype(np.float16)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Add", ["y", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["out"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [M, K])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT16, [M, N])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod, params = relay.frontend.from_onnx(model, {"x": (M, K)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no tuned config: the fallback; the emulator
        with tecc.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="cuda -arch=sm_90", params=params)
        assert "nvcuda::wmma::mma_sync(" in lib.get_lib().get_source("cuda")
        gm = graph_executor.GraphModule(lib["default"](tecc.cuda(0)))
        x = rng.uniform(-1, 1, (M, K)).astype(np.float16)
        gm.set_input("x", x)
        gm.run()
        got = gm.get_output(0).numpy().astype(np.float32)
    want = np.maximum(x.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32), 0)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("out_dtype, transpose_b", [("float32", True), ("float16", True), ("float32", False)])
def test_batch_matmul_on_tensor_cores(out_dtype, transpose_b):
    """attention's Q @ K^T ([batch, M, K] x [batch, N, K]) and P @ V ([batch, K, N]: a
    row-major matrix_b), picked by topi.cuda.batch_matmul."""
    bsz, M, K, N = 3, 32, 32, 48
    X = te.placeholder((bsz, M, K), "float16", name="X")
    Y = te.placeholder((bsz, N, K) if transpose_b else (bsz, K, N), "float16", name="Y")
    with tecc.target.Target("cuda -arch=sm_90"):
        out = tecc.topi.cuda.batch_matmul(X, Y, out_dtype=out_dtype, transpose_b=transpose_b)
        assert out.op.attrs["workload"][0] == "batch_matmul_tensorcore.cuda"
        s = tecc.topi.cuda.schedule_batch_matmul([out])
    mod = build_all_arches(s, [X, Y, out])
    assert "nvcuda::wmma::mma_sync(" in mod.get_source("cuda")
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (bsz, M, K)).astype("float16")
    y = rng.uniform(-1, 1, (bsz, N, K) if transpose_b else (bsz, K, N)).astype("float16")
    got = _run(mod, x, y, out_shape=(bsz, M, N), out_dtype=out_dtype).astype(np.float32)
    want = x.astype(np.float32) @ (y.astype(np.float32).transpose(0, 2, 1) if transpose_b else y.astype(np.float32))
    if not transpose_b:
        assert "nvcuda::wmma::matrix_b, 16, 16, 16, __half, nvcuda::wmma::row_major>" in mod.get_source("cuda")
    tol = 1e-4 if out_dtype == "float32" else 1e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("kwargs, match", [
    (dict(transpose_a=True), r"takes x as \[batch, M, K\] \(transpose_a=False\)"),
    (dict(transpose_b=False, shape_y=(3, 32, 8)), r"\(M, K, N\) = \(32, 32, 8\) is not a multiple of any wmma "
                                                  r"tile: \(16, 16, 16\) or \(8, 16, 32\) \(y as \[batch, K, N\]\)"),
    (dict(shape_y=(2, 32, 32)), r"x has batch 3 and y 2; broadcast the smaller one first"),
    (dict(shape_x=(3, 20, 32)), r"\(M, K, N\) = \(20, 32, 32\) is not a multiple of any wmma tile"),
])
def test_batch_matmul_tensorcore_refusals(kwargs, match):
    from tecc.topi.cuda.batch_matmul_tensorcore import batch_matmul_tensorcore

    X = te.placeholder(kwargs.pop("shape_x", (3, 32, 32)), "float16", name="X")
    Y = te.placeholder(kwargs.pop("shape_y", (3, 32, 32)), "float16", name="Y")
    with tecc.target.Target("cuda"), pytest.raises(TopiError, match=match):
        batch_matmul_tensorcore(X, Y, **kwargs)


def test_tvm_named_builders_make_the_same_calls():
    """tir.tvm_load_matrix_sync(...) and friends (TVM's tir.op functions) build the
    calls call_intrin builds."""
    frag = tir.decl_buffer((256,), "float16", name="F", scope="wmma.matrix_a")
    acc = tir.decl_buffer((256,), "float32", name="C", scope="wmma.accumulator")
    src = tir.decl_buffer((256,), "float16", name="S", scope="shared")
    pairs = [
        (tir.tvm_load_matrix_sync(frag.data, 16, 16, 16, 0, src.access_ptr("r"), 16, "row_major"),
         tir.call_intrin("handle", "tir.tvm_load_matrix_sync", frag.data, 16, 16, 16, 0, src.access_ptr("r"), 16,
                         "row_major")),
        (tir.tvm_fill_fragment(acc.data, 16, 16, 16, 0, 0.0),
         tir.call_intrin("handle", "tir.tvm_fill_fragment", acc.data, 16, 16, 16, 0, 0.0)),
        (tir.tvm_mma_sync(acc.data, 0, frag.data, 0, frag.data, 0, acc.data, 0),
         tir.call_intrin("handle", "tir.tvm_mma_sync", acc.data, 0, frag.data, 0, frag.data, 0, acc.data, 0)),
        (tir.tvm_store_matrix_sync(acc.data, 16, 16, 16, 0, src.access_ptr("w"), 16, "row_major"),
         tir.call_intrin("handle", "tir.tvm_store_matrix_sync", acc.data, 16, 16, 16, 0, src.access_ptr("w"), 16,
                         "row_major")),
    ]
    for mine, theirs in pairs:
        tir.assert_structural_equal(mine, theirs)


def test_batch_matmul_tensorcore_row_major_b_space():
    """B as [batch, K, N]: the 32x8x16 shape is left out of the space (its B tiles
    would start 16 bytes apart, off wmma's 256-bit alignment); the 8x32x16 one runs."""
    bsz, M, K, N = 2, 32, 32, 64
    task = tecc.autotvm.task.create("batch_matmul_tensorcore.cuda", args=(
        ("TENSOR", (bsz, M, K), "float16"), ("TENSOR", (bsz, K, N), "float16"), None, "float32", False, False),
        target="cuda")
    assert task.config_space.space_map["wmma_m"].entities and \
        [e.val for e in task.config_space.space_map["wmma_m"].entities] == [16, 8]
    cfg = _point(task, wmma_m=8, block_row_warps=2, block_col_warps=1, warp_row_tiles=2, warp_col_tiles=1, chunk=2,
                 vec=8)
    with tecc.target.Target("cuda"):
        s, args = task.instantiate(cfg)
    mod = build_all_arches(s, args)
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, (bsz, M, K)).astype("float16")
    y = rng.uniform(-1, 1, (bsz, K, N)).astype("float16")
    got = _run(mod, x, y, out_shape=(bsz, M, N))
    np.testing.assert_allclose(got, x.astype(np.float32) @ y.astype(np.float32), rtol=1e-5, atol=1e-4)


def _float32_and_float16(m32, x, narrow="float16"):
    """``(float32 model's output on the CPU, its float16 copy's output on the CUDA
    emulator, the float16 build)`` for input ``x`` (the model's one input, "x");
    ``narrow="bfloat16"``: its bfloat16 copy instead (the output read as float32)."""
    from tecc import relay
    from tecc.contrib import graph_executor
    from tecc.graph.testing import bfloat16_model, float16_model

    def run(model, target, xin, dev):
        mod, params = relay.frontend.from_onnx(model, {"x": x.shape})
        with tecc.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target=target, params=params)
        gm = graph_executor.GraphModule(lib["default"](dev))
        gm.set_input("x", xin)
        gm.run()
        return gm.get_output(0).numpy(), lib

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no tuned configs; the emulator
        want, _ = run(m32, "llvm", x, tecc.cpu(0))
        if narrow == "bfloat16":
            import ml_dtypes

            got, lib = run(bfloat16_model(m32), "cuda -arch=sm_90", x.astype(ml_dtypes.bfloat16), tecc.cuda(0))
            got = got.view(ml_dtypes.bfloat16)
        else:
            got, lib = run(float16_model(m32), "cuda -arch=sm_90", x.astype(np.float16), tecc.cuda(0))
    return want, got.astype(np.float32), lib


def test_a_float16_transformer_encoder_layer_runs_its_products_on_tensor_cores():
    """The projections, the feed-forward layers and both attention products (Q @ K^T
    and P @ V) become tensor-core kernels; the layer matches the float32 model run on
    the CPU within float16's precision."""
    pytest.importorskip("onnx")
    from tecc.graph.testing import encoder_layer_model

    B, S, D = 2, 32, 64
    m32 = encoder_layer_model(d_model=D, nhead=4, dim_ff=128, seq=S, batch=B)
    x = np.random.default_rng(0).standard_normal((B, S, D)).astype(np.float32)
    want, got, lib = _float32_and_float16(m32, x)
    assert lib.get_lib().get_source("cuda").count("nvcuda::wmma::mma_sync(") == 6
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("a_offset, c_index, match", [
    (8, 0, r"tvm_load_matrix_sync on 'A': the tile must start on a 32-byte boundary"),
    (0, 1, r"tvm_fill_fragment uses a fragment of 'FC' past its 1 fragments \(index `1`\)"),
])
def test_a_misaligned_or_missing_fragment_fails_on_the_emulator_with_its_buffer(a_offset, c_index, match):
    """wmma needs 256-bit aligned tiles, and a fragment index within the buffer; a GPU
    reports neither."""
    from tecc.tir import stmt as S
    from tecc.tir.transform.infer_fragment import infer_fragment
    from irhelpers import buf1d, cuda_module, host, kernel, launch, quiet_call, var

    A, C = buf1d("A", 512, "float16"), buf1d("C", 256)
    FA = buf1d("FA", 256, "float16", scope="wmma.matrix_a")
    FB = buf1d("FB", 256, "float16", scope="wmma.matrix_b")
    FC = buf1d("FC", 256, scope="wmma.accumulator")

    def call(*args):
        return S.Evaluate(tir.call_intrin("handle", *args))

    body = S.seq(
        call("tir.tvm_fill_fragment", FC.data, 16, 16, 16, c_index, 0.0),
        call("tir.tvm_load_matrix_sync", FA.data, 16, 16, 16, 0, A.access_ptr("r", offset=a_offset), 16,
             "row_major"),
        call("tir.tvm_load_matrix_sync", FB.data, 16, 16, 16, 0, A.access_ptr("r"), 16, "row_major"),
        call("tir.tvm_mma_sync", FC.data, 0, FA.data, 0, FB.data, 0, FC.data, 0),
        call("tir.tvm_store_matrix_sync", FC.data, 16, 16, 16, 0, C.access_ptr("w"), 16, "row_major"))
    for b in (FC, FB, FA):
        body = S.Allocate(b, body)
    k = infer_fragment(kernel("mis_kernel0", [A, C], body, [(var("threadIdx.x"), 32)]))
    h = host("mis", [A, C], lambda a, c: launch("mis_kernel0", a, c))
    mod = cuda_module(h, {"mis_kernel0": k})
    a = np.ones(512, "float16")
    out = np.zeros(256, "float32")
    with pytest.raises(tecc.errors.TeccError, match=match):
        quiet_call(mod, a, out)


@pytest.mark.parametrize("shape, products, want", [
    ((4096, 4096, 4096), 1, (2, 2, 2, 2)),    # a 64x64 tile still gives 4096 blocks
    ((128, 768, 768), 1, (2, 1, 1, 1)),       # BERT-base at 128 tokens: 32x16 tiles (2 warps), 192 blocks
    ((64, 64, 64), 1, (1, 1, 1, 1)),          # nothing fills the GPU: the most blocks
    ((128, 64, 128), 12, (2, 1, 2, 1)),       # 12 heads of a batched product: 32x32 tiles of 4 warps, 192 blocks
])
def test_tensor_core_fallback_fills_the_gpu(shape, products, want):
    """The untuned tile: the largest (up to 2x2 warps of 2x2 fragments) that still
    gives MIN_BLOCKS blocks."""
    import importlib

    from tecc.tuner.task.space import FallbackConfigEntity

    DT = importlib.import_module("tecc.topi.cuda.dense_tensorcore")  # (the package re-exports the function)

    M, K, N = shape
    cfg = FallbackConfigEntity()
    DT._define_knobs(cfg, M, K, N, products=products)
    got = tuple(cfg[k].val for k in ("block_row_warps", "warp_row_tiles", "block_col_warps", "warp_col_tiles"))
    assert got == want


def test_fragments_count_in_the_register_estimate_per_lane():
    """A warp's 16 accumulator fragments (16 x 256 float32) are 512 bytes per lane:
    128 registers of the estimate, where the fragments were invisible before."""
    from tecc.tir.analysis.occupancy import live_local_bytes, local_bytes_per_thread

    task = tecc.autotvm.task.create("dense_tensorcore.cuda", args=(
        ("TENSOR", (128, 64), "float16"), ("TENSOR", (128, 64), "float16"), None, "float32"), target="cuda")
    cfg = _point(task, wmma_m=16, block_row_warps=1, block_col_warps=1, warp_row_tiles=4, warp_col_tiles=4, chunk=1)
    with tecc.target.Target("cuda"):
        s, args = task.instantiate(cfg)
        mod = tecc.lower(s, args, target="cuda")
    kernel = next(f for f in mod.functions.values() if f.attrs.get("tecc.kernel"))
    acc = 16 * 256 * 4 // 32
    a_b = (4 * 256 * 2 + 4 * 256 * 2) // 32
    assert local_bytes_per_thread(kernel) == acc + a_b
    live, arrays = live_local_bytes(kernel)
    assert live == acc + a_b and {b.scope for b in arrays} == {"wmma.accumulator", "wmma.matrix_a", "wmma.matrix_b"}


# ---------------------------------------------------------------------------------
# convolutions: an implicit GEMM on tensor cores
# ---------------------------------------------------------------------------------
def _tensorcore_conv(layout, dshape, kshape, dtype, stride, pad, out_dtype):
    """``(module for sm_80 and sm_90, output)`` of topi.cuda.conv2d_<layout> on
    tensor cores (asserted) with the fallback config."""
    A = te.placeholder(dshape, dtype, name="A")
    Wt = te.placeholder(kshape, dtype, name="W")
    with warnings.catch_warnings(), tecc.target.Target("cuda -arch=sm_90"):
        warnings.simplefilter("ignore")  # the fallback config
        out = getattr(tecc.topi.cuda, f"conv2d_{layout}")(A, Wt, stride, pad, 1, out_dtype)
        assert out.op.attrs["workload"][0] == f"conv2d_{layout}_tensorcore.cuda"
        s = getattr(tecc.topi.cuda, f"schedule_conv2d_{layout}")([out])
    return build_all_arches(s, [A, Wt, out]), out


@pytest.mark.parametrize("shape, stride, pad, out_dtype", [
    ((1, 16, 8, 8, 16, 3), 1, 1, "float32"),
    ((1, 32, 7, 7, 32, 3), 1, 1, "float32"),    # 49 output pixels: padded to 64 rows
    ((2, 16, 9, 9, 32, 3), 2, 1, "float32"),    # a batch of two, stride 2
    ((1, 32, 14, 14, 64, 1), 1, 0, "float16"),  # a 1x1 convolution, float16 out
])
def test_conv2d_nchw_on_tensor_cores(shape, stride, pad, out_dtype):
    from tecc.topi import testing as T

    N, CI, H, W, CO, K = shape
    mod, out = _tensorcore_conv("nchw", (N, CI, H, W), (CO, CI, K, K), "float16", stride, pad, out_dtype)
    assert "nvcuda::wmma::mma_sync(" in mod.get_source("cuda")
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (N, CI, H, W)).astype("float16")
    w = rng.uniform(-1, 1, (CO, CI, K, K)).astype("float16")
    got = _run(mod, a, w, out_shape=tuple(int(d) for d in out.shape), out_dtype=out_dtype).astype(np.float32)
    want = T.conv2d_nchw_python(a.astype(np.float32), w.astype(np.float32), stride, pad)
    tol = 1e-4 if out_dtype == "float32" else 1e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_conv2d_nchw_keeps_the_direct_template_where_tensor_cores_do_not_fit():
    """The first layer of a CNN (3 input channels: CI*KH*KW = 27) and float32 keep
    conv2d_nchw.cuda."""
    with tecc.target.Target("cuda -arch=sm_90"):
        first = tecc.topi.cuda.conv2d_nchw(te.placeholder((1, 3, 16, 16), "float16", name="A"),
                                           te.placeholder((16, 3, 3, 3), "float16", name="W"), 1, 1, 1, "float32")
        fp32 = tecc.topi.cuda.conv2d_nchw(te.placeholder((1, 16, 8, 8), name="A"),
                                          te.placeholder((16, 16, 3, 3), name="W"), 1, 1, 1, "float32")
    assert first.op.attrs["workload"][0] == fp32.op.attrs["workload"][0] == "conv2d_nchw.cuda"


def test_a_float16_cnn_runs_its_convolutions_on_tensor_cores():
    """conv (3 -> 16, direct) + relu, conv (16 -> 32, stride 2, tensor cores) + bias +
    relu, 1x1 conv (32 -> 32, tensor cores): against the float32 model on the CPU."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(12)
    inits = {"w0": rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.3,
             "w1": rng.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.1,
             "b1": rng.standard_normal(32).astype(np.float32) * 0.1,
             "w2": rng.standard_normal((32, 32, 1, 1)).astype(np.float32) * 0.2}
    n = helper.make_node
    nodes = [n("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]), n("Relu", ["c0"], ["r0"]),
             n("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]), n("Relu", ["c1"], ["r1"]),
             n("Conv", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m32 = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    want, got, lib = _float32_and_float16(m32, rng.standard_normal((1, 3, 16, 16)).astype(np.float32))
    assert lib.get_lib().get_source("cuda").count("nvcuda::wmma::mma_sync(") == 2
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


# ---------------------------------------------------------------------------------
# bfloat16 operands (sm_80 and later): float32 accumulators, a bfloat16 result rounded once
# ---------------------------------------------------------------------------------
ml_dtypes = pytest.importorskip("ml_dtypes")  # onnx's dependency: numpy's bfloat16
BF16 = ml_dtypes.bfloat16


def _bf16_uniform(rng, shape):
    return rng.uniform(-1, 1, shape).astype(BF16)


def _run_bf16(mod, *arrays, out_shape, out_dtype):
    """Run ``mod`` on bfloat16 ``arrays`` (nd.array takes ml_dtypes' arrays); the output
    as float32 (a bfloat16 output's bits read as bfloat16)."""
    dev = tecc.cuda(0)
    out = tecc.nd.empty(out_shape, out_dtype, dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mod(*(tecc.nd.array(a, dev) for a in arrays), out)
    got = out.numpy()
    return (got.view(BF16) if out_dtype == "bfloat16" else got).astype(np.float32)


def _rounded_like(want, out_dtype):
    """``want`` (float32) as the kernel returns it: rounded once to bfloat16 for a
    bfloat16 output."""
    return want.astype(BF16).astype(np.float32) if out_dtype == "bfloat16" else want


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float32"])
def test_dense_on_tensor_cores_with_bfloat16_operands(out_dtype):
    """topi.cuda.dense picks dense_tensorcore for bfloat16 on sm_80: __nv_bfloat16
    fragments, float32 accumulators, the staging copies moved as 16-byte bits; the
    result equals float32 arithmetic on the bfloat16 inputs, rounded once."""
    M, K, N = 64, 96, 64
    A = te.placeholder((M, K), "bfloat16", name="A")
    W = te.placeholder((N, K), "bfloat16", name="W")
    with warnings.catch_warnings(), tecc.target.Target("cuda -arch=sm_80"):
        warnings.simplefilter("ignore")  # the fallback config
        out = tecc.topi.cuda.dense(A, W, out_dtype=out_dtype)
        assert out.op.attrs["workload"][0] == "dense_tensorcore.cuda"
        s = tecc.topi.cuda.schedule_dense([out])
    mod = build_all_arches(s, [A, W, out])
    src = mod.get_source("cuda")
    assert "nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major>" in src
    assert "nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>" in src
    assert src.index("#include <cuda_bf16.h>") < src.index("#include <mma.h>")
    assert "tecc_load_aligned_uint16x8(((uint16_t*)A)" in src  # bfloat16 staging: its bits, 16 bytes at a time
    rng = np.random.default_rng(21)
    a, w = _bf16_uniform(rng, (M, K)), _bf16_uniform(rng, (N, K))
    got = _run_bf16(mod, a, w, out_shape=(M, N), out_dtype=out_dtype)
    want = _rounded_like(a.astype(np.float32) @ w.astype(np.float32).T, out_dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("wmma_m, layout_b", [(16, "col_major"), (32, "col_major"), (8, "col_major"),
                                               (16, "row_major")])
def test_bfloat16_fragments_load_from_shared_memory_in_every_shape(wmma_m, layout_b):
    """A bfloat16 fragment load from shared memory is wmma.load with its .shared state
    written out (NVVM does not infer it for bfloat16), one helper per fragment type,
    whose static_assert holds for each shape (NVRTC compiles it for sm_80 and sm_90);
    the values are the emulator's, against numpy."""
    M, K, N = 64, 64, 64
    rng = np.random.default_rng(23)
    if layout_b == "col_major":
        task = tecc.autotvm.task.create("dense_tensorcore.cuda", args=(
            ("TENSOR", (M, K), "bfloat16"), ("TENSOR", (N, K), "bfloat16"), None, "float32"), target="cuda -arch=sm_80")
        cfg = _point(task, wmma_m=wmma_m, block_row_warps=2, block_col_warps=1, warp_row_tiles=1,
                     warp_col_tiles=2, chunk=2, offset=8, offsetCS=8, vec=4)
        with tecc.target.Target("cuda -arch=sm_80"):
            s, args = task.instantiate(cfg)
        a, b = _bf16_uniform(rng, (M, K)), _bf16_uniform(rng, (N, K))
        want = a.astype(np.float32) @ b.astype(np.float32).T
    else:
        X = te.placeholder((1, M, K), "bfloat16", name="X")
        Y = te.placeholder((1, K, N), "bfloat16", name="Y")
        with warnings.catch_warnings(), tecc.target.Target("cuda -arch=sm_80"):
            warnings.simplefilter("ignore")
            out = tecc.topi.cuda.batch_matmul(X, Y, out_dtype="float32", transpose_b=False)
            s, args = tecc.topi.cuda.schedule_batch_matmul([out]), [X, Y, out]
        a, b = _bf16_uniform(rng, (1, M, K)), _bf16_uniform(rng, (1, K, N))
        want = a.astype(np.float32) @ b.astype(np.float32)
    mod = build_all_arches(s, args)
    src = mod.get_source("cuda")
    fm, fn, fk = {16: (16, 16, 16), 32: (32, 8, 16), 8: (8, 32, 16)}[wmma_m]
    b_layout = "row" if layout_b == "row_major" else "col"
    assert f"wmma.load.a.sync.aligned.row.m{fm}n{fn}k{fk}.shared.bf16" in src
    assert f"wmma.load.b.sync.aligned.{b_layout}.m{fm}n{fn}k{fk}.shared.bf16" in src
    assert "nvcuda::wmma::load_matrix_sync(" not in src  # the accumulators are filled, not loaded
    got = _run_bf16(mod, a, b, out_shape=want.shape, out_dtype="float32")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_and_conv2d_on_tensor_cores_with_bfloat16_operands():
    from tecc.topi import testing as T

    rng = np.random.default_rng(22)
    X = te.placeholder((2, 32, 32), "bfloat16", name="X")
    Y = te.placeholder((2, 32, 48), "bfloat16", name="Y")
    A = te.placeholder((1, 16, 8, 8), "bfloat16", name="A")
    Wt = te.placeholder((32, 16, 3, 3), "bfloat16", name="W")
    with warnings.catch_warnings(), tecc.target.Target("cuda -arch=sm_90"):
        warnings.simplefilter("ignore")
        bmm = tecc.topi.cuda.batch_matmul(X, Y, transpose_b=False)
        conv = tecc.topi.cuda.conv2d_nchw(A, Wt, 1, 1, 1, "bfloat16")
        assert bmm.dtype == conv.dtype == "bfloat16"
        assert bmm.op.attrs["workload"][0] == "batch_matmul_tensorcore.cuda"
        assert conv.op.attrs["workload"][0] == "conv2d_nchw_tensorcore.cuda"
        s_bmm = tecc.topi.cuda.schedule_batch_matmul([bmm])
        s_conv = tecc.topi.cuda.schedule_conv2d_nchw([conv])
    x, y = _bf16_uniform(rng, (2, 32, 32)), _bf16_uniform(rng, (2, 32, 48))
    got = _run_bf16(build_all_arches(s_bmm, [X, Y, bmm]), x, y, out_shape=(2, 32, 48), out_dtype="bfloat16")
    np.testing.assert_allclose(got, _rounded_like(x.astype(np.float32) @ y.astype(np.float32), "bfloat16"),
                               rtol=1e-5, atol=1e-5)
    a, w = _bf16_uniform(rng, (1, 16, 8, 8)), _bf16_uniform(rng, (32, 16, 3, 3))
    got = _run_bf16(build_all_arches(s_conv, [A, Wt, conv]), a, w, out_shape=(1, 32, 8, 8), out_dtype="bfloat16")
    want = T.conv2d_nchw_python(a.astype(np.float32), w.astype(np.float32), 1, 1)
    # float32 sums in another order than numpy's, then one rounding: at most one bfloat16 step apart
    np.testing.assert_allclose(got, _rounded_like(want, "bfloat16"), rtol=2 ** -7, atol=1e-5)


def test_bfloat16_keeps_the_direct_templates_below_sm_80():
    A = te.placeholder((64, 64), "bfloat16", name="A")
    W = te.placeholder((64, 64), "bfloat16", name="W")
    with tecc.target.Target("cuda -arch=sm_75"):
        assert tecc.topi.cuda.dense(A, W).op.attrs["workload"][0] != "dense_tensorcore.cuda"
    with tecc.target.Target("cuda -arch=sm_80"):
        assert tecc.topi.cuda.dense(A, W).op.attrs["workload"][0] == "dense_tensorcore.cuda"


def test_a_bfloat16_transformer_encoder_layer_runs_its_products_on_tensor_cores():
    """The encoder layer exported as bfloat16 (ONNX BFLOAT16 tensors, read through
    ml_dtypes): its six products on bfloat16 tensor cores, within bfloat16's
    precision of the float32 model (8 bits of mantissa: a few parts in a thousand a
    rounding)."""
    pytest.importorskip("onnx")
    from tecc.graph.testing import encoder_layer_model

    B, S, D = 2, 32, 64
    m32 = encoder_layer_model(d_model=D, nhead=4, dim_ff=128, seq=S, batch=B)
    x = np.random.default_rng(0).standard_normal((B, S, D)).astype(np.float32)
    want, got, lib = _float32_and_float16(m32, x, narrow="bfloat16")
    src = lib.get_lib().get_source("cuda")
    assert src.count("nvcuda::wmma::mma_sync(") == 6 and "__nv_bfloat16, nvcuda::wmma::row_major>" in src
    np.testing.assert_allclose(got, want, rtol=6e-2, atol=6e-2)
    assert np.abs(got - want).mean() < 1e-2


# ---------------------------------------------------------------------------------
# NHWC convolutions on tensor cores (TVM's conv2d_nhwc_tensorcore; HWIO kernels)
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, stride, pad, dtype, out_dtype", [
    ((1, 8, 8, 16, 32, 3), 1, 1, "float16", "float32"),
    ((2, 9, 9, 32, 16, 3), 2, 1, "float16", "float16"),     # a batch of two, stride 2, float16 out
    ((1, 14, 14, 32, 64, 1), 1, 0, "bfloat16", "bfloat16"),  # a 1x1 convolution in bfloat16
])
def test_conv2d_nhwc_on_tensor_cores(shape, stride, pad, dtype, out_dtype):
    """topi.cuda.conv2d_nhwc picks the implicit GEMM with k over (kh, kw, ci) and the
    HWIO kernel read as a row-major matrix_b; against numpy's NHWC convolution."""
    from tecc.topi import testing as T

    N, H, W, CI, CO, K = shape
    mod, out = _tensorcore_conv("nhwc", (N, H, W, CI), (K, K, CI, CO), dtype, stride, pad, out_dtype)
    elem = "__half" if dtype == "float16" else "__nv_bfloat16"
    assert f"nvcuda::wmma::matrix_b, 16, 16, 16, {elem}, nvcuda::wmma::row_major>" in mod.get_source("cuda")
    rng = np.random.default_rng(13)
    oshape = tuple(int(d) for d in out.shape)
    if dtype == "bfloat16":
        a, w = _bf16_uniform(rng, (N, H, W, CI)), _bf16_uniform(rng, (K, K, CI, CO))
        got = _run_bf16(mod, a, w, out_shape=oshape, out_dtype=out_dtype)
    else:
        a, w = rng.uniform(-1, 1, (N, H, W, CI)).astype(dtype), rng.uniform(-1, 1, (K, K, CI, CO)).astype(dtype)
        got = _run(mod, a, w, out_shape=oshape, out_dtype=out_dtype).astype(np.float32)
    want = T.conv2d_nhwc_python(a.astype(np.float32), w.astype(np.float32), stride, pad)
    tol = 1e-4 if out_dtype == "float32" else 1e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_conv2d_nhwc_keeps_the_direct_template_where_tensor_cores_do_not_fit():
    from tecc.topi.cuda.conv2d_tensorcore import conv2d_nhwc_tensorcore

    A = te.placeholder((1, 16, 16, 3), "float16", name="A")   # KH*KW*CI = 27
    Wt = te.placeholder((3, 3, 3, 16), "float16", name="W")
    with tecc.target.Target("cuda -arch=sm_90"):
        assert tecc.topi.cuda.conv2d_nhwc(A, Wt, 1, 1, 1, "float32").op.attrs["workload"][0] == "conv2d_nhwc.cuda"
        with pytest.raises(TopiError, match=r"conv2d_nhwc_tensorcore: CO = 16 and \(kh, kw, ci\) = 27 taps are not "
                                            r"multiples of a wmma tile .* use topi.cuda.conv2d_nhwc"):
            conv2d_nhwc_tensorcore(A, Wt, 1, 1, 1, "float32")


@pytest.mark.gpu
def test_bfloat16_and_nhwc_tensor_core_kernels_on_the_gpu():
    """What the emulator cannot check -- the hardware's own fragment layouts -- for
    today's kernels: bfloat16 dense (each fragment shape, with a bfloat16 result), a
    bfloat16 batch_matmul with B as [K, N], and float16/bfloat16 NHWC convolutions,
    against numpy on the GPU."""
    from tecc.topi import testing as T

    rng = np.random.default_rng(31)
    for wmma_m in (16, 32, 8):
        M, K, N = 64, 64, 64
        task = tecc.autotvm.task.create("dense_tensorcore.cuda", args=(("TENSOR", (M, K), "bfloat16"),
                                                                        ("TENSOR", (N, K), "bfloat16"), None,
                                                                        "bfloat16"), target="cuda")
        cfg = _point(task, wmma_m=wmma_m, block_row_warps=2, block_col_warps=1, warp_row_tiles=1,
                     warp_col_tiles=2, chunk=2, offset=8, offsetCS=8, vec=8)
        with tecc.target.Target("cuda"):
            s, args = task.instantiate(cfg)
        mod = tecc.build(s, args, "cuda")
        a, w = _bf16_uniform(rng, (M, K)), _bf16_uniform(rng, (N, K))
        got = _run_bf16(mod, a, w, out_shape=(M, N), out_dtype="bfloat16")
        np.testing.assert_allclose(got, _rounded_like(a.astype(np.float32) @ w.astype(np.float32).T, "bfloat16"),
                                   rtol=2 ** -7, atol=1e-5, err_msg=f"wmma_m={wmma_m}")
    X = te.placeholder((2, 32, 32), "bfloat16", name="X")
    Y = te.placeholder((2, 32, 48), "bfloat16", name="Y")
    with warnings.catch_warnings(), tecc.target.Target("cuda"):
        warnings.simplefilter("ignore")
        bmm = tecc.topi.cuda.batch_matmul(X, Y, transpose_b=False, out_dtype="float32")
        s = tecc.topi.cuda.schedule_batch_matmul([bmm])
    x, y = _bf16_uniform(rng, (2, 32, 32)), _bf16_uniform(rng, (2, 32, 48))
    got = _run_bf16(tecc.build(s, [X, Y, bmm], "cuda"), x, y, out_shape=(2, 32, 48), out_dtype="float32")
    np.testing.assert_allclose(got, x.astype(np.float32) @ y.astype(np.float32), rtol=1e-4, atol=1e-4)
    for dtype in ("float16", "bfloat16"):
        A = te.placeholder((2, 9, 9, 32), dtype, name="A")
        Wt = te.placeholder((3, 3, 32, 32), dtype, name="W")
        with warnings.catch_warnings(), tecc.target.Target("cuda"):
            warnings.simplefilter("ignore")
            out = tecc.topi.cuda.conv2d_nhwc(A, Wt, 2, 1, 1, "float32")
            assert out.op.attrs["workload"][0] == "conv2d_nhwc_tensorcore.cuda"
            s = tecc.topi.cuda.schedule_conv2d_nhwc([out])
        mod = tecc.build(s, [A, Wt, out], "cuda")
        if dtype == "bfloat16":
            a, w = _bf16_uniform(rng, (2, 9, 9, 32)), _bf16_uniform(rng, (3, 3, 32, 32))
            got = _run_bf16(mod, a, w, out_shape=(2, 5, 5, 32), out_dtype="float32")
        else:
            a, w = rng.uniform(-1, 1, (2, 9, 9, 32)).astype(dtype), rng.uniform(-1, 1, (3, 3, 32, 32)).astype(dtype)
            got = _run(mod, a, w, out_shape=(2, 5, 5, 32))
        want = T.conv2d_nhwc_python(a.astype(np.float32), w.astype(np.float32), 2, 1)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=dtype)


def test_a_float16_model_converted_to_nhwc_runs_its_convolution_on_tensor_cores():
    """ConvertLayout to NHWC: the fused group's anchor is the implicit GEMM's dense-tagged
    product, which schedule_dense hands to the NHWC tensor-core template (it went to
    the plain dense template and failed before); against numpy."""
    from tecc import relay
    from tecc.contrib import graph_executor
    from tecc.topi import testing as T

    rng = np.random.default_rng(41)
    w = rng.standard_normal((32, 32, 3, 3)).astype("float16")
    x = relay.var("x", shape=(1, 32, 8, 8), dtype="float16")
    mod = tecc.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.conv2d(x, relay.const(w),
                                                                                     padding=(1, 1)))))
    with warnings.catch_warnings(), tecc.transform.PassContext(opt_level=3):
        warnings.simplefilter("ignore")
        mod = relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(mod)
        lib = relay.build(mod, target="cuda -arch=sm_90")
        assert lib.get_lib().get_source("cuda").count("nvcuda::wmma::mma_sync(") == 1
        gm = graph_executor.GraphModule(lib["default"](tecc.cuda(0)))
        xv = rng.standard_normal((1, 32, 8, 8)).astype("float16")
        gm.set_input("x", xv)
        gm.run()
        got = gm.get_output(0).numpy().astype(np.float32)
    want = np.maximum(T.conv2d_nchw_python(xv.astype(np.float32), w.astype(np.float32), 1, 1), 0)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
