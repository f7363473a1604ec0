"""bfloat16 ONNX models (tensors read through ml_dtypes, onnx's dependency): products
accumulate in float32 and round once, inputs are taken as ml_dtypes arrays or as
their uint16 bits, outputs come back as the bits (TVM's NDArray did the same)."""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")

import tecc  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from tecc import relay  # noqa: E402
from tecc.contrib import graph_executor  # noqa: E402
from tecc.graph.testing import bfloat16_model, mlp_model  # noqa: E402

BF16 = ml_dtypes.bfloat16


def _build(model, shapes, target="llvm"):
    mod, params = relay.frontend.from_onnx(model, shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no tuned configs
        with tecc.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target=target, params=params)
    dev = tecc.cuda(0) if target.startswith("cuda") else tecc.cpu(0)
    return graph_executor.GraphModule(lib["default"](dev))


def _run(gm, **inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the CUDA emulator
        gm.set_input(**inputs)
        gm.run()
        return gm.get_output(0)


@pytest.mark.parametrize("target", ["llvm", "cuda -arch=sm_90"])
def test_a_bfloat16_matmul_sums_in_float32_and_rounds_once(target):
    """K = 512 products of bfloat16 values: summed in bfloat16 they would lose most
    of their low terms; tecc's result equals the float32 sum rounded once (on the
    CPU, and on tensor cores on CUDA), exactly."""
    M, K, N = 16, 512, 32
    rng = np.random.default_rng(0)
    w = rng.uniform(0, 1, (K, N)).astype(BF16)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [M, K])],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [M, N])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.uniform(0, 1, (M, K)).astype(BF16)
    out = _run(_build(model, {"x": (M, K)}, target), x=x)
    assert out.dtype == "bfloat16"
    got = out.numpy()
    assert got.dtype == np.uint16  # the bits, as TVM's NDArray.numpy() gave them
    want = (x.astype(np.float32) @ w.astype(np.float32)).astype(BF16)
    if target.startswith("cuda"):  # another summation order: at most one rounding step apart
        np.testing.assert_allclose(got.view(BF16).astype(np.float32), want.astype(np.float32), rtol=2 ** -7)
    else:
        np.testing.assert_array_equal(got, want.view(np.uint16))


def test_a_bfloat16_mlp_matches_float32_within_bfloat16_precision_with_either_input_form():
    m32 = mlp_model(sizes=(64, 128, 32, 10), batch=8)
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    want = _run(_build(m32, {"x": (8, 64)}), x=x).numpy()
    gm = _build(bfloat16_model(m32), {"x": (8, 64)})
    xb = x.astype(BF16)
    got = _run(gm, x=xb).numpy().view(BF16).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2)
    bits = _run(gm, x=xb.view(np.uint16)).numpy()  # the same input as its uint16 bits
    np.testing.assert_array_equal(bits.view(BF16).astype(np.float32), got)
    with pytest.raises(tecc.errors.RuntimeArgError, match=r"expects shape \(8, 64\) and dtype bfloat16, got shape "
                                                          r"\(8, 64\) and dtype float32"):
        gm.set_input("x", x)


def _reference(op, x):
    """float32 numpy of what ``op`` computes on ``x`` (float32)."""
    if op == "LayerNormalization":
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    if op == "Softmax":
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    if op == "ReduceMean":
        return x.mean(-1, keepdims=True)
    if op == "GlobalAveragePool":
        return x.mean((2, 3), keepdims=True)
    if op == "Einsum":
        return x.sum(-1)
    return np.cumsum(x, axis=3)


_SUMMING = [("LayerNormalization", dict(axis=-1, epsilon=1e-5)), ("Softmax", dict(axis=-1)),
            ("ReduceMean", dict(keepdims=1, axes=[3])), ("GlobalAveragePool", {}), ("CumSum", {}),
            ("Einsum", dict(equation="abcd->abc"))]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_half_width_sums_are_computed_in_float32_and_rounded_once(dtype, target):
    """A layer norm, softmax, mean, average pool, cumulative sum and einsum over 256 values of
    a float16 or bfloat16 tensor: tecc's result is the float32 result rounded once (at
    most one unit in the last place away, float32 summing in another order); kept in
    the narrow type, the mean of such values was 23% off in bfloat16."""
    np_dtype, onnx_type = {"bfloat16": (BF16, TensorProto.BFLOAT16), "float16": (np.float16, TensorProto.FLOAT16)}[
        dtype]
    ulp = 2.0 ** (-7 if dtype == "bfloat16" else -10)
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 4, 4, 256)) * 3 + 5).astype(np_dtype)
    for op, attrs in _SUMMING:
        inputs, inits = ["x"], []
        if op == "LayerNormalization":
            inputs += ["g", "b"]
            inits = [numpy_helper.from_array(np.ones(256, np_dtype), "g"),
                     numpy_helper.from_array(np.zeros(256, np_dtype), "b")]
        elif op == "CumSum":
            inputs.append("axis")
            inits = [numpy_helper.from_array(np.array(3, np.int64), "axis")]
        want = _reference(op, x.astype(np.float32))
        graph = helper.make_graph([helper.make_node(op, inputs, ["y"], **attrs)], "g",
                                  [helper.make_tensor_value_info("x", onnx_type, list(x.shape))],
                                  [helper.make_tensor_value_info("y", onnx_type, list(want.shape))], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        got = _run(_build(model, {"x": x.shape}, "cuda -arch=sm_90" if target == "cuda" else "llvm"), x=x).numpy()
        got = (got.view(BF16) if dtype == "bfloat16" else got).astype(np.float32)
        ideal = want.astype(np_dtype).astype(np.float32)
        np.testing.assert_allclose(got, ideal, rtol=ulp, atol=1e-4, err_msg=f"{op} in {dtype} on {target}")
