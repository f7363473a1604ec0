"""ToMixedPrecision (TVM's relay.transform pass): a float32 model computed in float16 or
bfloat16, its products on tensor cores, every sum in float32; the model is still fed
float32; outputs in the narrow type, or float32 with TVM's keep_orig_output_dtype."""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")

import tecc  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from tecc import relay  # noqa: E402
from tecc.contrib import graph_executor  # noqa: E402
from tecc.graph.ir import GraphError  # noqa: E402
from tecc.graph.testing import encoder_layer_model  # noqa: E402


def _cnn():
    """conv (3 -> 16) + batch norm + relu, conv (16 -> 32, stride 2) + relu, global
    average pool, flatten, dense 32 -> 10, softmax."""
    rng = np.random.default_rng(9)
    f = np.float32
    inits = {"w0": rng.standard_normal((16, 3, 3, 3)).astype(f) * 0.3, "g": rng.uniform(0.5, 1.5, 16).astype(f),
             "b": rng.standard_normal(16).astype(f) * 0.1, "m": rng.standard_normal(16).astype(f) * 0.1,
             "v": rng.uniform(0.5, 1.5, 16).astype(f), "w1": rng.standard_normal((32, 16, 3, 3)).astype(f) * 0.1,
             "wd": rng.standard_normal((10, 32)).astype(f) * 0.3, "bd": rng.standard_normal(10).astype(f) * 0.1}
    n = helper.make_node
    nodes = [n("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]), n("BatchNormalization", ["c0", "g", "b", "m", "v"],
                                                                   ["bn"]),
             n("Relu", ["bn"], ["r0"]), n("Conv", ["r0", "w1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             n("Relu", ["c1"], ["r1"]), n("GlobalAveragePool", ["r1"], ["p"]), n("Flatten", ["p"], ["fl"]),
             n("Gemm", ["fl", "wd", "bd"], ["logits"], transB=1), n("Softmax", ["logits"], ["y"], axis=1)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), {"x": (1, 3, 16, 16)}


def _run(model, shapes, x, target, dtype=None, keep=False):
    mod, params = relay.frontend.from_onnx(model, shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no tuned configs; the emulator
        with tecc.transform.PassContext(opt_level=3,
                                        config={"relay.ToMixedPrecision.keep_orig_output_dtype": keep}):
            if dtype is not None:
                mod = relay.transform.ToMixedPrecision(dtype)(mod)
            lib = relay.build(mod, target=target, params=params)
        gm = graph_executor.GraphModule(lib["default"](tecc.cuda(0) if target.startswith("cuda") else tecc.cpu(0)))
        gm.set_input("x", x)  # float32, as the model takes it
        gm.run()
        out = gm.get_output(0)
    got = out.numpy()
    got = (got.view(ml_dtypes.bfloat16) if out.dtype == "bfloat16" else got).astype(np.float32)
    return out.dtype, got, lib.get_lib().get_source("cuda") if target.startswith("cuda") else ""


@pytest.mark.parametrize("dtype, tol", [("float16", 5e-3), ("bfloat16", 4e-2)])
def test_a_float32_cnn_and_encoder_layer_run_on_tensor_cores_in_mixed_precision(dtype, tol):
    # the CNN's second convolution is on tensor cores (its first has 3 input channels, its dense layer one row);
    # the encoder layer's six products are
    for (model, shapes), products in ((_cnn(), 1), ((encoder_layer_model(d_model=64, nhead=4, dim_ff=128, seq=32,
                                                                          batch=2), {"x": (2, 32, 64)}), 6)):
        x = np.random.default_rng(1).standard_normal(shapes["x"]).astype(np.float32)
        _, want, _ = _run(model, shapes, x, "llvm")
        out_dtype, got, src = _run(model, shapes, x, "cuda -arch=sm_90", dtype)
        assert out_dtype == dtype
        assert src.count("nvcuda::wmma::mma_sync(") == products
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        out_dtype, kept, _ = _run(model, shapes, x, "cuda -arch=sm_90", dtype, keep=True)
        assert out_dtype == "float32"
        np.testing.assert_array_equal(kept, got)


def test_the_pass_rewrites_types_and_keeps_the_interface():
    model, shapes = _cnn()
    mod, _ = relay.frontend.from_onnx(model, shapes, freeze_params=True)
    mixed = relay.transform.ToMixedPrecision("float16")(mod)
    main = mixed["main"]
    assert [p.checked_type.dtype for p in main.params] == ["float32"]   # fed as before
    assert main.body.checked_type.dtype == "float16"
    assert relay.transform.ToMixedPrecision("float16")(mixed)["main"].body.checked_type.dtype == "float16"


@pytest.mark.parametrize("kwargs, match", [
    (dict(mixed_precision_type="float8"), r"mixed_precision_type must be one of 'float16', 'bfloat16', got 'float8'"),
    (dict(missing_op_mode=3), r"missing_op_mode must be 0, 1 or 2"),
])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(GraphError, match=match):
        relay.transform.ToMixedPrecision(**kwargs)


def test_bits_reinterpreted_as_float32_are_converted_after():
    """A reinterpret of int32 bits as float32 keeps its width; the float32 value it
    gives is then cast to the narrow type like any other."""
    from tecc import graph as G

    x = G.Var("x", G.TensorType((4,), "int32"))
    y = G.Var("y", G.TensorType((4,)))
    mod = G.Module.from_expr(G.Function([x, y], G.call("add", G.call("reinterpret", x, dtype="float32"), y)))
    mixed = relay.transform.ToMixedPrecision("bfloat16")(mod)
    assert mixed["main"].body.checked_type.dtype == "bfloat16"
    assert 'reinterpret(%x, dtype="float32")' in str(mixed["main"])
