"""Narrow weights (int4, float8) in models: an ONNX DequantizeLinear of int4 or
float8 weights feeding a MatMul, per axis or in blocks (the weight-only quantization
of LLM exports).  On a GPU target the weights stay narrow in the params -- a byte
per element, where folding their dequantization would store four -- and the
product's kernel dequantizes them as it reads them (graph FoldConstant leaves the
conversion and the per-block scale gather to run; fuse_ops fuses them into the
dense); on a CPU target the dequantization is folded into float32 weights once, at
build time.  Both against ONNX's reference implementation (onnxruntime fuses a
DequantizeLinear in blocks of 16 or more into its MatMulNBits, which quantizes the
activations too: 0.03 away on these sizes)."""
import json
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tecc
from tecc.contrib.graph_executor import GraphModule
from tecc.graph.build import build
from tecc.graph.frontend import from_onnx

ml_dtypes = pytest.importorskip("ml_dtypes")

K, N, BLOCK = 64, 48, 16


def _model(weights, scale, zero=None, block=0, axis=1):
    inits = [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(scale, "s")]
    ins = ["w", "s"]
    if zero is not None:
        inits.append(numpy_helper.from_array(zero, "z"))
        ins.append("z")
    attrs = {"axis": axis} if not block else {"axis": axis, "block_size": block}
    nodes = [helper.make_node("DequantizeLinear", ins, ["wf"], **attrs), helper.make_node("MatMul", ["x", "wf"], ["y"])]
    graph = helper.make_graph(nodes, "dq_matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, K))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, N))], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def _cases():
    rng = np.random.default_rng(0)
    int4 = rng.integers(-8, 8, (K, N)).astype(ml_dtypes.int4)
    fp8 = (rng.standard_normal((K, N)) * 2).astype(ml_dtypes.float8_e4m3fn)
    blocked_scale = rng.uniform(0.02, 0.2, (K // BLOCK, N)).astype(np.float32)
    blocked_zero = rng.integers(-2, 3, (K // BLOCK, N)).astype(ml_dtypes.int4)
    return {
        "int4_blocked": _model(int4, blocked_scale, blocked_zero, block=BLOCK, axis=0),
        "int4_per_column": _model(int4, rng.uniform(0.02, 0.2, N).astype(np.float32), axis=1),
        "float8_blocked": _model(fp8, blocked_scale, block=BLOCK, axis=0),
    }


CASES = _cases()


def _build(model, target):
    mod, params = from_onnx(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no tuned config"; no GPU: the emulator runs CUDA
        with tecc.transform.PassContext(opt_level=3):
            return build(mod, target=target, params=params)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_dequantized_matmul_matches_the_reference(name, target):
    from onnx.reference import ReferenceEvaluator

    model = CASES[name]
    x = np.random.default_rng(1).uniform(-1, 1, (2, K)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    lib = _build(model, target)
    dev = tecc.cuda(0) if target == "cuda" else tecc.cpu(0)
    gmod = GraphModule(lib["default"](dev))
    gmod.set_input("x", x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gmod.run()
    np.testing.assert_allclose(gmod.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)
    kernels = [n["attrs"]["func_name"] for n in json.loads(lib.graph_json)["nodes"] if n["op"] != "null"]
    assert len(kernels) == 1, kernels  # the dequantization runs in the product's kernel, or was folded
    sizes = {name: np.asarray(v) for name, v in lib.params.items()}
    weight_bytes = sum(a.nbytes for a in sizes.values())
    if target == "cuda":  # the narrow weights themselves: a byte an element, the per-block scales apart
        assert any(a.dtype.name in ("int4", "float8_e4m3fn") and a.shape == (K, N) for a in sizes.values()), sizes
        assert weight_bytes < K * N * 4 / 2.5
    else:  # folded once into float32
        assert all(a.dtype == np.float32 for a in sizes.values())
        assert weight_bytes == K * N * 4


def test_the_cuda_kernel_reads_the_weights_as_bytes():
    lib = _build(CASES["int4_blocked"], "cuda")
    src = lib.get_lib().imported_modules[0].get_source() if hasattr(lib, "get_lib") else \
        lib.lib.imported_modules[0].get_source()
    assert "const uint8_t* __restrict__" in src and "tecc_wrap_int4(" in src  # bits in, sign-extended in the kernel


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "int4", "float4_e2m1fn", "uint2"])
def test_data_movement_of_narrow_tensors_keeps_their_bits(dtype, target):
    """Transpose, Reshape, Concat, Gather and Identity of a narrow model input move its
    elements bit for bit (ONNX's reference gives the expected arrays)."""
    from onnx.reference import ReferenceEvaluator

    from ops_run import tecc_outputs

    ty = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "int4": TensorProto.INT4,
          "float4_e2m1fn": TensorProto.FLOAT4E2M1, "uint2": TensorProto.UINT2}[dtype]
    x = np.random.default_rng(0).uniform(-3, 3, (2, 3, 4)).astype(getattr(ml_dtypes, dtype))
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
             helper.make_node("Gather", ["x", "idx"], ["g"], axis=2),
             helper.make_node("Identity", ["x"], ["i"])]
    inits = [numpy_helper.from_array(np.array([2, 0], np.int64), "idx"),
             numpy_helper.from_array(np.array([6, 4], np.int64), "shape")]
    graph = helper.make_graph(nodes, "moves", [helper.make_tensor_value_info("x", ty, (2, 3, 4))],
                              [helper.make_tensor_value_info(n, ty, None) for n in "trcgi"], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = tecc_outputs(model, {"x": x}, target=target)
    for name, g, w in zip("trcgi", got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8), err_msg=name)


def test_a_convolutions_narrow_weights_are_folded_on_a_gpu_too():
    """A convolution does not fuse what computes its inputs: dequantizing its int4
    weights at every run would cost a kernel and a float copy, so they are folded once,
    as on a CPU (and the model is still one kernel)."""
    rng = np.random.default_rng(2)
    w = rng.integers(-8, 8, (4, 3, 3, 3)).astype(ml_dtypes.int4)
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], axis=0),
             helper.make_node("Conv", ["x", "wf"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "dq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 4, 8, 8))],
                              initializer=[numpy_helper.from_array(w, "w"),
                                           numpy_helper.from_array(rng.uniform(0.1, 0.2, 4).astype(np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    lib = _build(model, "cuda")
    kernels = [n for n in json.loads(lib.graph_json)["nodes"] if n["op"] != "null"]
    assert len(kernels) == 1
    assert all(np.asarray(v).dtype == np.float32 for v in lib.params.values())
