"""The ONNX importer's newer converters -- Resize / Upsample, DepthToSpace,
SpaceToDepth, CumSum, TopK, Trilu, OneHot, ScatterElements / ScatterND,
ReduceLogSumExp, the inverse and hyperbolic trigonometric functions, Celu,
ThresholdedRelu, Mish -- and the fixes that came with them (max/min reductions
starting from -inf/+inf, float16 products accumulated in float32): small models
made with ``onnx.helper``, built for "llvm" (one for "cuda", run on the emulator
where there is no GPU) and compared with onnxruntime; then the graph operators
they lower to, and every error they raise."""
import itertools
import re
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tecc  # noqa: E402
from tecc import graph as g  # noqa: E402
from tecc.contrib import graph_executor  # noqa: E402
from tecc.graph.build import build  # noqa: E402
from tecc.graph.frontend import OnnxImportError, from_onnx  # noqa: E402
from tecc.graph.ir import GraphError  # noqa: E402
from tecc.graph.transform import fuse_ops, fused_groups  # noqa: E402
from tecc.graph.transform.infer_type import infer_type  # noqa: E402
from tecc.topi.utils import TopiError  # noqa: E402
from ops_run import run_op, tecc_outputs, typed_model  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def make_model(nodes, inputs, outputs, inits=None, opset=13):
    """A model of ``nodes``; ``inputs`` / ``inits`` map names to arrays, the
    outputs are typed by ONNX's shape inference."""
    return typed_model(nodes, inputs, outputs, inits, opset, name="more")


def tecc_run(model, inputs, target="llvm"):
    mod, params = from_onnx(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no tuned config" / "no GPU: the emulator runs" notes
        with tecc.transform.PassContext(opt_level=3):
            factory = build(mod, target=target, params=params)
        dev = tecc.cpu(0) if target == "llvm" else tecc.cuda(0)
        gmod = graph_executor.GraphModule(factory["default"](dev))
        for name, value in inputs.items():
            gmod.set_input(name, value)
        gmod.run()
    return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]


def check(nodes, inputs, outputs, inits=None, opset=13, target="llvm", rtol=RTOL, atol=ATOL):
    """tecc's outputs equal onnxruntime's (exactly for integers and bools)."""
    model = make_model(nodes, inputs, outputs, inits, opset)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, dict(inputs))
    got = tecc_run(model, inputs, target)
    assert len(got) == len(want)
    for name, w, t in zip(outputs, want, got):
        assert t.shape == w.shape, f"{name}: shape {t.shape}, onnxruntime {w.shape}"
        assert t.dtype == w.dtype, f"{name}: dtype {t.dtype}, onnxruntime {w.dtype}"
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(t, w, err_msg=name)
        else:
            np.testing.assert_allclose(t, w, rtol=rtol, atol=atol, err_msg=name)


def rand(*shape, low=-1.0, high=1.0, seed=0, dtype="float32"):
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).uniform(low, high, shape).astype(dtype)


def node(op, ins, outs, **attrs):
    outs = outs if isinstance(outs, list) else [outs]
    return helper.make_node(op, ins, outs, name=f"{op}_{outs[0]}", **attrs)


def refused(nodes, inputs, outputs, match, inits=None, opset=13):
    """The importer refuses the model (its outputs declared, not inferred: ONNX's
    shape inference fails on such nodes too)."""
    in_infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                for n, a in inputs.items()]
    out_infos = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n"]) for n in outputs]
    graph = helper.make_graph(nodes, "bad", in_infos, out_infos,
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


# ---------------------------------------------------------------------------------------
# element-wise
# ---------------------------------------------------------------------------------------
def test_trigonometric_and_activations():
    x, unit, big = rand(2, 5, low=-3, high=3), rand(2, 5, low=-0.9, high=0.9), rand(2, 5, low=1.1, high=4)
    x[0, :3] = [-90.0, 90.0, 0.0]  # softplus and mish of large |x| stay finite (no exp overflow)
    nodes = [node(op, ["x"], f"y_{op}") for op in ("Tan", "Atan", "Sinh", "Cosh", "Asinh", "Softplus", "Mish")]
    nodes += [node(op, ["u"], f"y_{op}") for op in ("Asin", "Acos", "Atanh")]
    nodes += [node("Acosh", ["b"], "y_Acosh"), node("Celu", ["x"], "y_celu", alpha=0.7),
              node("Celu", ["x"], "y_celu1"), node("ThresholdedRelu", ["x"], "y_thr", alpha=0.4),
              node("ThresholdedRelu", ["x"], "y_thr1")]
    # tan near its poles and sinh/cosh of |x| up to 3 are large: a relative tolerance
    check(nodes, {"x": x, "u": unit, "b": big}, [n.output[0] for n in nodes], opset=18, rtol=2e-4)


# ---------------------------------------------------------------------------------------
# data movement
# ---------------------------------------------------------------------------------------
def test_depth_to_space_and_space_to_depth():
    nodes = [node("DepthToSpace", ["x"], "dcr", blocksize=2), node("DepthToSpace", ["x"], "crd", blocksize=2,
                                                                  mode="CRD"),
             node("SpaceToDepth", ["s"], "s2d", blocksize=3)]
    check(nodes, {"x": rand(1, 8, 2, 3), "s": rand(2, 2, 6, 3)}, ["dcr", "crd", "s2d"])


def test_space_to_depth_28_in_crd_mode_is_pixel_unshuffle():
    # SpaceToDepth-28 adds `mode` (onnxruntime 1.32 has no kernel for it: numpy's blocks are the reference)
    x = rand(2, 3, 4, 6)
    for mode in ("DCR", "CRD"):
        model = make_model([node("SpaceToDepth", ["x"], "y", blocksize=2, mode=mode)], {"x": x}, ["y"], opset=28)
        blocks = x.reshape(2, 3, 2, 2, 3, 2)  # n, c, y, by, x, bx
        want = blocks.transpose((0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)).reshape(2, 12, 2, 3)
        np.testing.assert_array_equal(tecc_run(model, {"x": x})[0], want)


def test_cumsum_exclusive_reverse_and_int():
    nodes = [node("CumSum", ["x", "ax1"], "plain"), node("CumSum", ["x", "ax0"], "excl", exclusive=1),
             node("CumSum", ["x", "axm1"], "rev", reverse=1),
             node("CumSum", ["x", "ax0"], "rev_excl", reverse=1, exclusive=1),
             node("CumSum", ["i", "ax1"], "ints", reverse=1)]
    inits = {"ax0": np.array(0, "int64"), "ax1": np.array(1, "int32"), "axm1": np.array(-1, "int64")}
    inputs = {"x": rand(3, 5), "i": np.arange(12, dtype="int32").reshape(3, 4) - 5}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits)


def test_cumprod_26_exclusive_reverse_and_int_at_its_own_opset():
    """CumProd exists from opset 26: a model importing 26 reads its other nodes as
    opset 21 (they read the same) and CumProd as itself, against onnxruntime."""
    nodes = [node("CumProd", ["x", "ax1"], "plain"), node("CumProd", ["x", "ax0"], "excl", exclusive=1),
             node("CumProd", ["x", "axm1"], "rev", reverse=1),
             node("CumProd", ["x", "ax0"], "rev_excl", reverse=1, exclusive=1),
             node("CumProd", ["i", "ax1"], "ints", reverse=1), node("Relu", ["x"], "relu")]
    inits = {"ax0": np.array(0, "int64"), "ax1": np.array(1, "int32"), "axm1": np.array(-1, "int64")}
    inputs = {"x": rand(3, 5, low=0.5, high=1.5), "i": np.arange(12, dtype="int32").reshape(3, 4) - 5}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits, opset=26)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_24_to_the_exponent_type_rounds_as_onnx_defines(round_mode, saturate):
    """Cast-24 to float8_e8m0fnu against onnx's own conversion (numpy_helper):
    powers of two exactly, values between them by the round mode (a tie, the
    guard bit alone, the sticky bits), the sign dropped, zero and subnormals,
    the largest exponents with and without saturation, infinity and NaN; on the
    C backend and the CUDA emulator; CastLike the same."""
    to_e8m0 = getattr(numpy_helper, "to_float8e8m0", None)
    if to_e8m0 is None:
        pytest.skip(f"onnx {onnx.__version__} has no float8e8m0")
    x = np.array([1.0, 0.25, 1.1, 1.5, 1.75, 1.5000001, 3.0, -6.0, 0.0, 1e-40, 2.0 ** -126, 0.75,
                  2.0 ** 127, 3.0e38, np.inf, -np.inf, np.nan, 1.0 + 2.0 ** -23], "float32")
    nodes = [node("Cast", ["x"], "y", to=TensorProto.FLOAT8E8M0, round_mode=round_mode, saturate=saturate),
             node("CastLike", ["h", "y"], "z", round_mode=round_mode, saturate=saturate)]
    with np.errstate(over="ignore"):
        inputs = {"x": x, "h": x.astype("float16")}  # 2 ** 127 and 3e38 are infinite in float16
    model = make_model(nodes, inputs, ["y", "z"], None, 25)
    want = [to_e8m0(x, bool(saturate), round_mode), to_e8m0(inputs["h"], bool(saturate), round_mode)]
    for target in ("llvm", "cuda"):
        for w, t in zip(want, tecc_run(model, inputs, target)):
            assert t.dtype == w.dtype
            np.testing.assert_array_equal(t.view(np.uint8), w.view(np.uint8), err_msg=f"{target} {round_mode}")


def test_cast_24_refuses_an_unknown_round_mode():
    refused([node("Cast", ["x"], "y", to=TensorProto.FLOAT8E8M0, round_mode="even")], {"x": rand(3)}, ["y"],
            r"Cast node 'Cast_y'.*round_mode 'even' must be 'up', 'down' or 'nearest'", opset=25)


def test_bitcast_26_keeps_the_bits_and_refuses_another_width():
    """BitCast-26 against numpy's ``view`` (what the operator is; onnxruntime has no
    kernel for every pair): float32 <-> int32 (NaN and -0 bit patterns kept),
    float64 -> int64, uint16 -> int16, bool -> uint8 (one byte of 0 or 1); a width
    change is refused with both widths named."""
    x = np.array([[1.5, -0.0, np.nan, np.inf], [3.0e-39, -2.0, 7.0, 1e30]], "float32")
    nodes = [node("BitCast", ["x"], "xi", to=TensorProto.INT32), node("BitCast", ["xi"], "back", to=TensorProto.FLOAT),
             node("BitCast", ["d"], "di", to=TensorProto.INT64), node("BitCast", ["h"], "hs", to=TensorProto.INT16),
             node("BitCast", ["b"], "bu", to=TensorProto.UINT8), node("Relu", ["x"], "relu")]
    inputs = {"x": x, "d": np.array([-1.25, 2.0 ** 60], "float64"), "h": np.array([0, 1, 32768, 65535], "uint16"),
              "b": np.array([True, False, True])}
    model = make_model(nodes, inputs, ["xi", "back", "di", "hs", "bu"], None, 26)
    want = [x.view("int32"), x, inputs["d"].view("int64"), inputs["h"].view("int16"), inputs["b"].view("uint8")]
    for target in ("llvm", "cuda"):
        got = tecc_run(model, inputs, target)
        for w, t in zip(want, got):
            assert t.dtype == w.dtype
            np.testing.assert_array_equal(t.view(np.uint8), w.view(np.uint8))  # the bits, NaN's included
    refused([node("BitCast", ["x"], "y", to=TensorProto.INT64)], {"x": x}, ["y"],
            r"BitCast node .*'to' is int64 \(64 bits\), the input is float32 \(32 bits\): BitCast keeps the width",
            opset=26)


def _tensor_scatter_reference(past, update, write_indices, axis, circular):
    """ONNX's pseudocode for TensorScatter-24, in numpy."""
    out = past.copy()
    length, seq = past.shape[axis], update.shape[axis]
    for prefix in np.ndindex(past.shape[:axis]):
        for s in range(seq):
            at = write_indices[prefix[0]] + s
            if circular:
                at %= length
            out[prefix + (at,)] = update[prefix + (s,)]
    return out


@pytest.mark.parametrize("shape, axis, seq, mode, starts", [
    ((2, 3, 6, 4), -2, 2, "linear", [0, 4]),
    ((2, 3, 6, 4), 2, 3, "circular", [5, 2]),
    ((3, 5, 2), 1, 5, "linear", None),          # no write_indices: from 0, the whole cache replaced
    ((2, 4, 3, 2), 1, 1, "circular", [3, 0]),   # the sequence axis before others
])
def test_tensor_scatter_24_updates_a_kv_cache(shape, axis, seq, mode, starts):
    rng = np.random.default_rng(3)
    past = rng.standard_normal(shape).astype("float32")
    ushape = list(shape)
    ushape[axis] = seq
    update = rng.standard_normal(ushape).astype("float32")
    inputs = {"past": past, "update": update}
    ins = ["past", "update"]
    if starts is not None:
        inputs["w"] = np.array(starts, "int64")
        ins.append("w")
    model = make_model([node("TensorScatter", ins, "present", axis=axis, mode=mode)], inputs, ["present"], None, 24)
    want = _tensor_scatter_reference(past, update, starts or [0] * shape[0], axis % len(shape), mode == "circular")
    for target in ("llvm", "cuda"):
        np.testing.assert_array_equal(tecc_run(model, inputs, target)[0], want)
    refused([node("TensorScatter", ["past", "update"], "y", axis=0)], {"past": past, "update": past}, ["y"],
            r"TensorScatter node .*axis 0 is the batch axis", opset=24)
    refused([node("TensorScatter", ["past", "past"], "y", mode="ring")], {"past": past}, ["y"],
            r"mode 'ring' is not linear or circular", opset=24)
    empty = np.zeros([0 if i == axis % len(shape) else d for i, d in enumerate(shape)], "float32")
    model = make_model([node("TensorScatter", ["past", "update"], "present", axis=axis)],
                       {"past": past, "update": empty}, ["present"], None, 24)
    np.testing.assert_array_equal(tecc_run(model, {"past": past, "update": empty}, "llvm")[0], past)


def _col2im_reference(cols, image, block, dilations, pads, strides):
    """Col2Im by its definition: every block's values added at their pixels (any
    number of spatial dimensions)."""
    nsp = len(image)
    n, ck, _ = cols.shape
    c = ck // int(np.prod(block))
    padded = np.zeros((n, c) + tuple(image[i] + pads[i] + pads[i + nsp] for i in range(nsp)), cols.dtype)
    grid = [(padded.shape[2 + i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(nsp)]
    for b, at in enumerate(itertools.product(*map(range, grid))):  # blocks in row-major order
        col = cols[:, :, b].reshape((n, c) + tuple(block))
        for k in itertools.product(*map(range, block)):
            pixel = tuple(at[i] * strides[i] + k[i] * dilations[i] for i in range(nsp))
            padded[(slice(None), slice(None)) + pixel] += col[(slice(None), slice(None)) + k]
    return padded[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + image[i]) for i in range(nsp))]


@pytest.mark.parametrize("image, block, attrs", [
    ((5, 5), (2, 2), {}),
    ((6, 7), (3, 2), {"strides": [2, 2], "pads": [1, 0, 1, 2]}),
    ((9, 8), (2, 3), {"dilations": [2, 1], "strides": [1, 3]}),   # 8 columns: the last one no block reaches
    ((9,), (3,), {"strides": [2], "pads": [1, 1]}),                 # 1-D (torch's fold of a sequence)
    ((3, 4, 5), (1, 2, 3), {"strides": [1, 2, 1], "pads": [0, 1, 1, 0, 1, 1], "dilations": [1, 1, 2]}),  # 3-D
])
def test_col2im_18_folds_blocks_back_into_an_image(image, block, attrs):
    nsp = len(image)
    dil, pads = attrs.get("dilations", [1] * nsp), attrs.get("pads", [0] * 2 * nsp)
    strides = attrs.get("strides", [1] * nsp)
    grid = [(image[i] + pads[i] + pads[i + nsp] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(nsp)]
    cols = rand(2, 3 * int(np.prod(block)), int(np.prod(grid)))
    inits = {"img": np.array(image, "int64"), "blk": np.array(block, "int64")}
    model = make_model([node("Col2Im", ["x", "img", "blk"], "y", **attrs)], {"x": cols}, ["y"], inits, 18)
    want = _col2im_reference(cols, image, block, dil, pads, strides)
    assert want.shape == (2, 3) + tuple(image)
    for target in ("llvm", "cuda"):
        np.testing.assert_allclose(tecc_run(model, {"x": cols}, target)[0], want, rtol=1e-5, atol=1e-6)
    refused([node("Col2Im", ["x", "img", "blk"], "y")], {"x": rand(1, 12, 7)}, ["y"],
            r"Col2Im node .*the input has 7 blocks, but image_shape \[5, 5\], block_shape \[2, 2\].* give 4x4",
            inits={"img": np.array([5, 5], "int64"), "blk": np.array([2, 2], "int64")}, opset=18)
    refused([node("Col2Im", ["x", "img", "blk"], "y")], {"x": rand(1, 2, 16)}, ["y"],
            r"image_shape \[2, 2, 2, 2\] and block_shape \[1, 1, 1, 2\]: tecc folds 1, 2 or 3 spatial dimensions",
            inits={"img": np.array([2, 2, 2, 2], "int64"), "blk": np.array([1, 1, 1, 2], "int64")}, opset=18)


def test_topk_largest_smallest_ties_and_one_output_used():
    x = rand(3, 7)
    x[1, 2:5] = 0.25  # ties: the lower index comes first
    nodes = [node("TopK", ["x", "k3"], ["v", "i"], axis=1), node("TopK", ["x", "k2"], ["vs", "is"], axis=0,
                                                                 largest=0, sorted=1),
             node("TopK", ["n", "k3"], ["vn", "in_"], axis=-1),
             node("TopK", ["x", "k2"], ["only_values", "unused_indices"], axis=-1)]
    inits = {"k3": np.array([3], "int64"), "k2": np.array([2], "int64")}
    check(nodes, {"x": x, "n": np.array([[5, 1, 5, 3, 9, 9]], "int32")},
          ["v", "i", "vs", "is", "vn", "in_", "only_values"], inits=inits)


def test_topk_before_opset_10_takes_k_as_attribute():
    check([node("TopK", ["x"], ["v", "i"], k=2, axis=1)], {"x": rand(2, 5)}, ["v", "i"], opset=9)


def test_trilu_constant_and_run_time_k():
    x = rand(2, 4, 5)
    nodes = [node("Trilu", ["x"], "upper"), node("Trilu", ["x", "kneg"], "lower", upper=0),
             node("Trilu", ["x", "krun"], "run_time_k"), node("Trilu", ["x", "kbig"], "zeros", upper=1)]
    inits = {"kneg": np.array(-1, "int64"), "kbig": np.array(9, "int64")}
    check(nodes, {"x": x, "krun": np.array(2, "int64")}, [n.output[0] for n in nodes], inits=inits, opset=14)


def test_one_hot_negative_indices_axes_and_int_values():
    nodes = [node("OneHot", ["i", "depth", "vals"], "last"), node("OneHot", ["i", "depth", "vals"], "ax0", axis=0),
             node("OneHot", ["j", "depth", "ivals"], "int_values", axis=-2)]
    inputs = {"i": np.array([[0, 3, -1], [-4, 5, 2]], "int64"), "j": np.array([1, -2, 0], "int64")}
    inits = {"depth": np.array([4], "int64"), "vals": np.array([-1.0, 2.5], "float32"),
             "ivals": np.array([0, 7], "int64")}
    check(nodes, inputs, [n.output[0] for n in nodes], inits=inits)
    # float indices are truncated to integers (onnxruntime has no kernel for them)
    model = make_model([node("OneHot", ["f", "depth", "vals"], "y")], {"f": np.array([1.0, 2.7, -1.2], "float32")},
                       ["y"], inits=inits, opset=11)
    (got,) = tecc_run(model, {"f": np.array([1.0, 2.7, -1.2], "float32")})
    want = np.full((3, 4), -1.0, "float32")
    want[0, 1] = want[1, 2] = want[2, 3] = 2.5
    np.testing.assert_array_equal(got, want)


def test_scatter_elements_and_scatter_nd():
    data = rand(3, 4)
    idx = np.array([[2, 0, -1], [0, 1, 2]], "int64")
    upd = rand(2, 3, seed=5)
    nd_idx = np.array([[[0, 1], [2, 3]], [[1, 0], [0, 1]]], "int64")  # (2, 2, 2): pairs along the last axis
    nd_upd = rand(2, 2, seed=9)
    row_idx = np.array([[2], [0]], "int64")
    row_upd = rand(2, 4, seed=3)
    nodes = [node("ScatterElements", ["d", "idx", "upd"], "se"),
             node("ScatterElements", ["d", "idx", "upd"], "se_add", axis=1, reduction="add"),
             node("ScatterND", ["d", "nd_idx", "nd_upd"], "snd"),
             node("ScatterND", ["d", "nd_idx", "nd_upd"], "snd_mul", reduction="mul"),
             node("ScatterND", ["d", "row_idx", "row_upd"], "snd_rows")]
    inputs = {"d": data, "idx": idx, "upd": upd, "nd_idx": nd_idx, "nd_upd": nd_upd, "row_idx": row_idx,
              "row_upd": row_upd}
    check(nodes, inputs, [n.output[0] for n in nodes], opset=16)


# ---------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------
def test_reduce_log_sum_exp_and_the_infinite_identity_of_max_and_min():
    x = rand(2, 3, 4, low=-4, high=4)
    x[0, 1, :] = -np.inf  # a row of -inf: its max is -inf, its log-sum-exp -inf
    x[1, 2, 3] = 80.0     # exp(80) overflows float32: the max is subtracted first
    nodes = [node("ReduceLogSumExp", ["x"], "lse", axes=[2]), node("ReduceLogSumExp", ["x"], "lse_all", keepdims=0),
             node("ReduceMax", ["x"], "mx", axes=[2], keepdims=0), node("ReduceMin", ["n"], "mn", axes=[1])]
    check(nodes, {"x": x, "n": -x}, [nd.output[0] for nd in nodes], opset=13)
    # bool inputs (opset 20), and axes as an input (opset 18)
    b = np.array([[True, False], [False, False]])
    axes = {"a1": np.array([1], "int64"), "a0": np.array([0], "int64")}
    nodes = [node("ReduceMax", ["b", "a1"], "bmax", keepdims=0), node("ReduceMin", ["b", "a0"], "bmin")]
    check(nodes, {"b": b}, ["bmax", "bmin"], inits=axes, opset=20)


def test_float16_products_accumulate_in_float32():
    """MatMul, Gemm and Conv of float16 sum in float32 and round once (as numpy,
    onnxruntime and ONNX's reference do); Softmax of float16 is computed in
    float32: each result is the float32 computation rounded to float16."""
    rng = np.random.default_rng(4)
    a, b = rng.random((6, 96)).astype("float16"), rng.random((96, 5)).astype("float16")
    x, w = rng.random((1, 8, 5, 5)).astype("float16"), rng.random((4, 8, 3, 3)).astype("float16")
    c = rng.random(5).astype("float16")
    nodes = [node("MatMul", ["a", "b"], "mm"), node("Gemm", ["a", "b", "c"], "gemm"), node("Conv", ["x", "w"], "conv"),
             node("Softmax", ["s"], "sm", axis=-1)]
    s = (rng.random((3, 40)) * 8).astype("float16")
    model = make_model(nodes, {"a": a, "b": b, "c": c, "x": x, "w": w, "s": s}, ["mm", "gemm", "conv", "sm"])
    mm, gemm, conv, sm = tecc_run(model, {"a": a, "b": b, "c": c, "x": x, "w": w, "s": s})
    a32, b32 = a.astype("float32"), b.astype("float32")
    np.testing.assert_array_equal(mm, (a32 @ b32).astype("float16"))
    np.testing.assert_array_equal(gemm, (a32 @ b32 + c.astype("float32")).astype("float16"))
    want_conv = np.zeros((1, 4, 3, 3), "float32")
    for i in range(3):
        for j in range(3):
            patch = x[0, :, i:i + 3, j:j + 3].astype("float32")
            want_conv[0, :, i, j] = np.tensordot(w.astype("float32"), patch, axes=([1, 2, 3], [0, 1, 2]))
    # the conv's float32 sums run in another order: at most one float16 rounding step apart
    np.testing.assert_allclose(conv.astype("float32"), want_conv.astype("float16").astype("float32"), rtol=1e-3)
    e = np.exp(s.astype("float32") - s.astype("float32").max(-1, keepdims=True))
    np.testing.assert_allclose(sm.astype("float32"), (e / e.sum(-1, keepdims=True)).astype("float16"), rtol=1e-3,
                               atol=1e-4)
    assert mm.dtype == gemm.dtype == conv.dtype == sm.dtype == np.float16


# ---------------------------------------------------------------------------------------
# Resize / Upsample
# ---------------------------------------------------------------------------------------
def _resize(out, mode, scales=None, sizes=None, roi="", **attrs):
    ins = ["x", roi, scales or "", sizes or ""]
    while ins[-1] == "":
        ins.pop()
    return node("Resize", ins, out, mode=mode, **attrs)


def test_resize_modes_against_onnxruntime():
    inits = {"up": np.array([1, 1, 2.0, 1.5], "float32"), "down": np.array([1, 1, 0.6, 0.7], "float32"),
             "sz": np.array([1, 2, 7, 4], "int64"), "roi": np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 0.7], "float32")}
    nodes = [
        _resize("nearest_default", "nearest", scales="up"),
        _resize("nearest_floor_asym", "nearest", scales="down", coordinate_transformation_mode="asymmetric",
                nearest_mode="floor"),
        _resize("nearest_ceil_align", "nearest", sizes="sz", coordinate_transformation_mode="align_corners",
                nearest_mode="ceil"),
        _resize("nearest_prefer_ceil", "nearest", scales="down", nearest_mode="round_prefer_ceil"),
        _resize("linear_half", "linear", scales="down"),  # 0.6 * 5 = 3: the scale, not 3/5, maps coordinates
        _resize("linear_align", "linear", scales="up", coordinate_transformation_mode="align_corners"),
        _resize("linear_pytorch", "linear", sizes="sz", coordinate_transformation_mode="pytorch_half_pixel"),
        _resize("linear_tfnn", "nearest", scales="up", coordinate_transformation_mode="tf_half_pixel_for_nn"),
        _resize("cubic", "cubic", scales="up"),
        _resize("cubic_exclude", "cubic", sizes="sz", cubic_coeff_a=-0.5, exclude_outside=1),
        _resize("crop", "linear", sizes="sz", roi="roi", coordinate_transformation_mode="tf_crop_and_resize",
                extrapolation_value=3.0),
    ]
    check(nodes, {"x": rand(1, 2, 5, 6)}, [n.output[0] for n in nodes], inits=inits, opset=13)


def test_resize_opset_19_axes_policies_symmetric_and_layouts():
    inits = {"s2": np.array([1.7, 0.8], "float32"), "hw": np.array([4, 9], "int64"),
             "w3": np.array([2.5], "float32"), "nhwc": np.array([1, 1.5, 2, 1], "float32")}
    nodes = [
        _resize("axes", "linear", scales="s2", axes=[3, 2]),
        _resize("symmetric", "linear", scales="s2", axes=[2, 3], coordinate_transformation_mode="half_pixel_symmetric"),
        _resize("not_larger", "nearest", sizes="hw", axes=[2, 3], keep_aspect_ratio_policy="not_larger"),
        _resize("not_smaller", "linear", sizes="hw", axes=[2, 3], keep_aspect_ratio_policy="not_smaller"),
        node("Resize", ["x3", "", "w3"], "ncw", mode="linear", axes=[2]),
        node("Resize", ["x", "", "nhwc"], "nhwc_out", mode="nearest"),
        # antialias changes nothing when enlarging with linear interpolation
        node("Resize", ["x", "", "nhwc"], "antialias_up", mode="linear", antialias=1),
    ]
    check(nodes, {"x": rand(1, 3, 5, 6), "x3": rand(2, 3, 4)}, [n.output[0] for n in nodes], inits=inits, opset=19)


def test_upsample_9_and_resize_10():
    inits = {"s": np.array([1, 1, 1.5, 2.0], "float32"), "d": np.array([1, 1, 0.6, 0.5], "float32")}
    check([node("Upsample", ["x", "s"], "near", mode="nearest"), node("Upsample", ["x", "s"], "lin", mode="linear")],
          {"x": rand(1, 2, 3, 5)}, ["near", "lin"], inits=inits, opset=9)
    check([node("Resize", ["x", "d"], "down", mode="nearest"), node("Resize", ["x", "s"], "up", mode="linear")],
          {"x": rand(1, 2, 5, 6)}, ["down", "up"], inits=inits, opset=10)


# ---------------------------------------------------------------------------------------
# the CUDA path (the emulator without a GPU): the extern kernels and the resize
# ---------------------------------------------------------------------------------------
def test_new_operators_on_the_cuda_path():
    nodes = [node("TopK", ["x", "k"], ["v", "i"], axis=1), node("CumSum", ["x", "ax"], "cs", reverse=1),
             node("ScatterElements", ["x", "idx", "upd"], "se", axis=1, reduction="add"),
             node("Resize", ["img", "", "sc"], "rs", mode="linear"), node("Trilu", ["m"], "tri", upper=0),
             node("DepthToSpace", ["dd"], "d2s", blocksize=2, mode="CRD")]
    inits = {"k": np.array([2], "int64"), "ax": np.array(1, "int64"), "sc": np.array([1, 1, 1.5, 0.75], "float32")}
    inputs = {"x": rand(4, 4), "idx": np.array([[0, 3], [1, 1], [2, 0], [3, 3]], "int64"), "upd": rand(4, 2, seed=2),
              "img": rand(1, 2, 4, 4), "m": rand(3, 4), "dd": rand(1, 4, 2, 2)}
    check(nodes, inputs, ["v", "i", "cs", "se", "rs", "tri", "d2s"], inits=inits, opset=16, target="cuda")


# ---------------------------------------------------------------------------------------
# the graph operators themselves
# ---------------------------------------------------------------------------------------
def test_graph_operators_build_alone():
    x = rand(2, 6)
    values, indices = run_op("topk", [x], dict(k=2, axis=1, is_ascend=True, dtype="int64"))
    order = np.argsort(x, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_allclose(values, np.take_along_axis(x, order, 1))
    np.testing.assert_allclose(run_op("cumprod", [x], dict(axis=1)), np.cumprod(x, 1), rtol=1e-5)
    np.testing.assert_allclose(run_op("cumsum", [x], dict(exclusive=True)),
                               np.concatenate([[0], np.cumsum(x)[:-1]]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run_op("reverse", [x], dict(axis=1)), x[:, ::-1])
    np.testing.assert_allclose(run_op("asinh", [x]), np.arcsinh(x), rtol=1e-5)
    np.testing.assert_allclose(run_op("atanh", [x * 0.9]), np.arctanh(x * 0.9), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(run_op("acosh", [np.abs(x) + 1]), np.arccosh(np.abs(x) + 1), rtol=1e-5)
    hot = run_op("one_hot", [np.array([0, 2, 5], "int32"), np.array(1.5, "float32"), np.array(0.0, "float32")],
                 dict(depth=3, axis=0))
    np.testing.assert_array_equal(hot, np.array([[1.5, 0, 0], [0, 0, 0], [0, 1.5, 0]], "float32"))
    np.testing.assert_array_equal(run_op("trilu", [x, np.array([1], "int64")], dict(upper=False)), np.tril(x, 1))
    d = rand(1, 8, 2, 2)
    np.testing.assert_allclose(run_op("nn.space_to_depth", [run_op("nn.depth_to_space", [d], dict(block_size=2))],
                                      dict(block_size=2)), d)
    data, upd = rand(3, 3), rand(2, 3, seed=4)
    out = run_op("scatter_nd", [data, np.array([[2, 0]], "int64"), upd], dict(mode="add"))
    want = data.copy()
    want[2] += upd[0]
    want[0] += upd[1]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    column = np.ascontiguousarray(upd[:, :1])
    out = run_op("scatter_elements", [data, np.array([[1], [2]], "int64"), column], dict(axis=1, reduction="max"))
    want = data.copy()
    want[0, 1] = max(want[0, 1], upd[0, 0])
    want[1, 2] = max(want[1, 2], upd[1, 0])
    np.testing.assert_allclose(out, want)


def test_resize2d_scales_map_coordinates_by_the_scale():
    """A scale of 0.6 on 4 pixels gives 2 pixels, but the coordinates are mapped
    by 1 / 0.6, not by 4 / 2 (ONNX's rule): linear half_pixel samples x = 1/3 and
    2; by the sizes alone, 0.5 and 2.5."""
    row = np.arange(4, dtype="float32").reshape(1, 1, 1, 4)
    out = run_op("image.resize2d", [row], dict(size=(1, 2), scales=(1.0, 0.6), method="linear"))
    np.testing.assert_allclose(out.reshape(-1), [1 / 3, 2.0], rtol=1e-5)
    by_sizes = run_op("image.resize2d", [row], dict(size=(1, 2), method="linear"))
    np.testing.assert_allclose(by_sizes.reshape(-1), [0.5, 2.5], rtol=1e-5)


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
X4 = {"x": np.zeros((1, 4, 4, 4), "float32")}


@pytest.mark.parametrize("nodes,inputs,inits,opset,match", [
    ([node("DepthToSpace", ["x"], "y", blocksize=2, mode="DRC")], X4, None, 13, r"DepthToSpace node .*mode 'DRC'"),
    ([node("SpaceToDepth", ["x"], "y", blocksize=3)], X4, None, 13, r"SpaceToDepth node .*multiples of block_size"),
    ([node("DepthToSpace", ["x"], "y", blocksize=3)], X4, None, 13, r"DepthToSpace node .*multiple of block_size"),
    ([node("DepthToSpace", ["v"], "y", blocksize=2)], {"v": np.zeros((4, 4), "float32")}, None, 13,
     r"DepthToSpace node .*4-D NCHW"),
    ([node("CumSum", ["x", "a"], "y")], X4, {"a": np.array([0, 1], "int64")}, 13, r"CumSum node .*one integer"),
    ([node("CumSum", ["x", "a"], "y")], X4, {"a": np.array(4, "int64")}, 13, r"CumSum node .*axis 4 is out of range"),
    ([node("TopK", ["x", "k"], ["v", "i"])], X4, {"k": np.array([5], "int64")}, 13, r"TopK node .*K = 5 must be in"),
    ([node("Trilu", ["v"], "y")], {"v": np.zeros(3, "float32")}, None, 14, r"Trilu node .*rank 2 or more"),
    ([node("Trilu", ["x", "k"], "y")], X4, {"k": np.array([1, 2], "int64")}, 14, r"Trilu node .*one integer"),
    ([node("OneHot", ["i", "d", "v"], "y")], {"i": np.zeros(3, "int64")},
     {"d": np.array([0], "int64"), "v": np.array([0, 1], "float32")}, 11, r"OneHot node .*depth 0 must be >= 1"),
    ([node("OneHot", ["i", "d", "v"], "y")], {"i": np.zeros(3, "int64")},
     {"d": np.array([3], "int64"), "v": np.array([0, 1, 2], "float32")}, 11, r"OneHot node .*\[off_value, on_value\]"),
    ([node("OneHot", ["i", "d", "v"], "y", axis=3)], {"i": np.zeros(3, "int64")},
     {"d": np.array([3], "int64"), "v": np.array([0, 1], "float32")}, 11, r"OneHot node .*axis 3 is out of range"),
    ([node("ScatterElements", ["x", "i", "u"], "y", reduction="mean")],
     {"x": np.zeros((2, 2), "float32"), "i": np.zeros((1, 2), "int64"), "u": np.zeros((1, 2), "float32")}, None, 18,
     r"ScatterElements node .*reduction 'mean'"),
    ([node("ReduceLogSumExp", ["i"], "y")], {"i": np.zeros((2, 2), "int32")}, None, 13,
     r"ReduceLogSumExp node .*Cast it to float32"),
    ([node("Celu", ["x"], "y", alpha=0.0)], X4, None, 13, r"Celu node .*nonzero alpha"),
    ([node("DepthToSpace", ["x"], "y", blocksize=0)], X4, None, 13, r"DepthToSpace node .*blocksize 0 must be >= 1"),
    ([node("CumSum", ["s", "a"], "y")], {"s": np.zeros((), "float32")}, {"a": np.array(0, "int64")}, 13,
     r"CumSum node .*a scalar; CumSum needs an axis"),
    ([node("TopK", ["s", "k"], ["v", "i"])], {"s": np.zeros((), "float32")}, {"k": np.array([1], "int64")}, 13,
     r"TopK node .*a scalar; TopK needs an axis"),
    ([node("TopK", ["x", "k"], ["v", "i"])], X4, {"k": np.array([1, 2], "int64")}, 13,
     r"TopK node .*K \(input 1\) must hold one integer"),
    ([node("OneHot", ["i", "d", "v"], "y")], {"i": np.zeros(3, "int64")},
     {"d": np.array([3, 4], "int64"), "v": np.array([0, 1], "float32")}, 11, r"OneHot node .*depth \(input 1\) must hold"),
    ([node("ScatterND", ["x", "i", "u"], "y")], {"x": np.zeros((2, 2), "float32"), "i": np.zeros((), "int64"),
                                              "u": np.zeros((), "float32")}, None, 13,
     r"ScatterND node .*indices is a scalar"),
    ([node("Resize", ["x", "", "s"], "y")], X4, {"s": np.array([1, 1, -2, 2], "float32")}, 13,
     r"Resize node .*scales .* must be positive"),
    ([node("Resize", ["x", "", "", "z"], "y")], X4, {"z": np.array([1, 4, 0, 2], "int64")}, 13,
     r"Resize node .*sizes .* must be positive"),
    ([node("Resize", ["x", "r", "", "z"], "y", coordinate_transformation_mode="tf_crop_and_resize")], X4,
     {"r": np.array([0, 1], "float32"), "z": np.array([1, 4, 2, 2], "int64")}, 13,
     r"Resize node .*roi .* should have 2 entries per axis"),
])
def test_converter_errors_name_the_node(nodes, inputs, inits, opset, match):
    refused(nodes, inputs, [n.output[0] for n in nodes], match, inits, opset)


RESIZE_INITS = {"s": np.array([1, 1, 2, 2], "float32"), "down": np.array([1, 1, 0.5, 0.5], "float32"),
                "c": np.array([2, 1, 1, 1], "float32"), "sz": np.array([1, 4, 8, 8], "int64"),
                "mixed": np.array([1, 1, 2, 0.5], "float32"), "zero": np.array([1, 1, 0.1, 1], "float32"),
                "s2": np.array([2, 2], "float32")}


@pytest.mark.parametrize("ins,attrs,opset,match", [
    (["x", "", "s", "sz"], {}, 13, r"Resize node .*exactly one of scales and sizes"),
    (["x", "", "s"], {"mode": "area"}, 13, r"Resize node .*mode 'area'"),
    (["x", "", "s"], {"coordinate_transformation_mode": "diagonal"}, 13,
     r"Resize node .*coordinate_transformation_mode 'diagonal'"),
    (["x", "", "s"], {"coordinate_transformation_mode": "half_pixel_symmetric"}, 18,
     r"Resize node .*half_pixel_symmetric from opset 19"),
    (["x", "", "s"], {"nearest_mode": "nearest"}, 13, r"Resize node .*nearest_mode 'nearest'"),
    (["x", "", "down"], {"mode": "nearest", "antialias": 1}, 18,
     r"Resize node .*antialias=1 with mode 'nearest' is not defined"),
    (["x", "", "down"], {"mode": "linear", "antialias": 1, "coordinate_transformation_mode": "tf_crop_and_resize"},
     18, r"Resize node .*antialias=1 with coordinate_transformation_mode 'tf_crop_and_resize' is not supported"),
    (["x", "", "c"], {}, 13, r"Resize node .*spatial axes only"),
    (["x", "", "zero"], {}, 13, r"Resize node .*makes axis 2 .* empty"),
    (["x", "", "s2"], {"axes": [2, 2]}, 18, r"Resize node .*name an axis twice"),
    (["x", "", "s2"], {}, 13, r"Resize node .*one entry per axis"),
    (["x", "", "", "sz"], {"coordinate_transformation_mode": "tf_crop_and_resize"}, 13,
     r"Resize node .*needs roi"),
    (["x", "", "", "sz"], {"keep_aspect_ratio_policy": "fill"}, 18, r"Resize node .*keep_aspect_ratio_policy 'fill'"),
    (["x", "mixed"], {"mode": "nearest"}, 10, r"Resize node .*enlarge one axis and shrink another"),
    (["x", "s"], {"mode": "cubic"}, 10, r"Resize node .*not defined before opset 11"),
])
def test_resize_errors_name_the_node(ins, attrs, opset, match):
    attrs = dict({"mode": "nearest"}, **attrs)
    nodes = [helper.make_node("Resize", ins, ["y"], name="Resize_y", **attrs)]
    used = {k: v for k, v in RESIZE_INITS.items() if k in ins}
    in_infos = [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4, 4, 4))]
    graph = helper.make_graph(nodes, "bad", in_infos,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c", "d"])],
                              initializer=[numpy_helper.from_array(v, k) for k, v in used.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


def test_resize_of_rank_6_is_refused():
    model = make_model([_resize("y", "nearest", scales="s")], {"x": np.zeros((1, 1, 2, 2, 2, 2), "float32")}, ["y"],
                       inits={"s": np.array([1, 1, 2, 2, 2, 2], "float32")})
    with pytest.raises(OnnxImportError, match=r"Resize node .*the input has rank 6; tecc resizes the 1, 2 or 3 "
                                              r"spatial axes"):
        from_onnx(model)


def _typed(name, shape, dtype="float32"):
    return g.Var(name, g.TensorType(shape, dtype))


@pytest.mark.parametrize("op,args,attrs,match", [
    ("topk", [_typed("x", (2, 3))], dict(k=4), r"topk: k = 4 is larger than axis"),
    ("topk", [_typed("x", (2, 3))], dict(ret_type="top"), r"topk: attribute 'ret_type' = 'top'"),
    ("topk", [_typed("x", (2, 3))], dict(dtype="float32"), r"topk: dtype .* must be an integer type"),
    ("topk", [_typed("x", (), "float32")], {}, r"topk: data is a scalar"),
    ("cumsum", [_typed("x", (2, 3), "bool")], {}, r"cumsum: cannot accumulate in bool"),
    ("cumsum", [_typed("x", (2, 3))], dict(axis=2), r"cumsum: axis 2 is out of range"),
    ("scatter_elements", [_typed("x", (2, 3)), _typed("i", (2, 3), "float32"), _typed("u", (2, 3))], {},
     r"scatter_elements: indices must be integers"),
    ("scatter_elements", [_typed("x", (2, 3)), _typed("i", (2, 3), "int64"), _typed("u", (2, 2))], {},
     r"scatter_elements: updates and indices must have one shape"),
    ("scatter_elements", [_typed("x", (2, 3)), _typed("i", (2, 4), "int64"), _typed("u", (2, 4))], {},
     r"scatter_elements: indices .* are larger than data"),
    ("scatter_nd", [_typed("x", (2, 3)), _typed("i", (3, 1), "int64"), _typed("u", (1,))], {},
     r"scatter_nd: index tuples of length 3"),
    ("scatter_nd", [_typed("x", (2, 3)), _typed("i", (1, 2), "int64"), _typed("u", (2, 2))], {},
     r"scatter_nd: updates must have shape"),
    ("scatter_nd", [_typed("x", (2, 3)), _typed("i", (1, 2), "int64"), _typed("u", (2, 3), "float16")], {},
     r"scatter_nd: updates have dtype float16"),
    ("one_hot", [_typed("i", (3,), "int64"), _typed("on", (1,)), _typed("off", ())], dict(depth=2),
     r"one_hot: on_value must be a scalar"),
    ("one_hot", [_typed("i", (3,), "int64"), _typed("on", ()), _typed("off", ())], dict(depth=0),
     r"one_hot: depth must be >= 1"),
    ("trilu", [_typed("x", (3,)), _typed("k", (), "int64")], {}, r"trilu: data must have rank 2"),
    ("trilu", [_typed("x", (3, 3)), _typed("k", (2,), "int64")], {}, r"trilu: k must hold one integer"),
    ("reverse", [_typed("x", (3, 3))], dict(axis=-3), r"reverse: axis -3 is out of range"),
    ("nn.depth_to_space", [_typed("x", (1, 6, 2, 2))], dict(block_size=2), r"nn.depth_to_space: 6 channels"),
    ("nn.depth_to_space", [_typed("x", (1, 8, 2, 2))], dict(block_size=2, mode="DRC"),
     r"nn.depth_to_space: attribute 'mode' = 'DRC'"),
    ("nn.space_to_depth", [_typed("x", (1, 2, 3, 4))], dict(block_size=2), r"nn.space_to_depth: height 3"),
    ("nn.space_to_depth", [_typed("x", (1, 2, 4))], dict(block_size=2), r"nn.space_to_depth: data must be 4-D"),
    ("image.resize2d", [_typed("x", (1, 2, 3, 4))], dict(size=(2, 2), scales=(1.0, -2.0)),
     r"image.resize2d: scales must be None or 2 positive numbers"),
    ("image.resize2d", [_typed("x", (1, 2, "h", 4))], dict(size=(2, 2), scales=(1.0, 2.0)),
     r"image.resize2d: resizing by scales needs dimension 2 .* symbolic 'h'"),
    ("topk", [_typed("x", (2, 3), "bool")], {}, r"topk: data is bool"),
    ("cumsum", [_typed("x", ())], dict(axis=0), r"cumsum: axis 0 given for a scalar"),
    ("scatter_elements", [_typed("x", (2, 3)), _typed("i", (2, 3), "int64"), _typed("u", (2, 3))],
     dict(reduction="mean"), r"scatter_elements: attribute 'reduction' = 'mean'"),
    ("scatter_elements", [_typed("x", ()), _typed("i", (), "int64"), _typed("u", ())], {},
     r"scatter_elements: cannot scatter into a scalar"),
    ("scatter_elements", [_typed("x", (2, 3)), _typed("i", (2,), "int64"), _typed("u", (2,))], {},
     r"scatter_elements: indices \(2,\) must have data's rank 2"),
    ("scatter_nd", [_typed("x", (2, 3)), _typed("i", (), "int64"), _typed("u", (3,))], {},
     r"scatter_nd: indices must have at least one axis"),
    ("one_hot", [_typed("i", (3,), "float32"), _typed("on", ()), _typed("off", ())], dict(depth=2),
     r"one_hot: indices must be integers"),
    ("one_hot", [_typed("i", (3,), "int64"), _typed("on", ()), _typed("off", ())], dict(depth=2, axis=2),
     r"one_hot: axis 2 is out of range"),
    ("trilu", [_typed("x", (3, 3)), _typed("k", (), "float32")], {}, r"trilu: k must be integers"),
    ("trilu", [_typed("x", (3, 3)), _typed("k", (), "int64")], dict(upper=1), r"trilu: upper must be a bool"),
    ("nn.depth_to_space", [_typed("x", (1, 8, 2, 2))], dict(block_size=0), r"nn.depth_to_space: block_size must be"),
])
def test_graph_operator_type_errors(op, args, attrs, match):
    call = g.call(op, *args, **attrs)
    with pytest.raises(GraphError, match=match):
        infer_type(g.Function(args, call))


def test_topi_resize_refuses_bad_scales():
    from tecc import te, topi

    data = te.placeholder((1, 1, 4, 4), name="data")
    with pytest.raises(TopiError, match=r"resize2d\(data 'data' \(1, 1, 4, 4\)\): scales .* must be positive"):
        topi.image.resize2d(data, [0.0] * 4, (2, 2), scales=[0.5, 0.0])
    with pytest.raises(TopiError, match=r"scales .* has 1 entries; it must have 2"):
        topi.image.resize2d(data, [0.0] * 4, (2, 2), scales=[0.5])
    n = te.var("n")
    wide = te.placeholder((1, 1, 4, n), name="wide")
    with pytest.raises(TopiError, match=r"scales need the input's size along each resized axis known"):
        topi.image.resize2d(wide, [0.0] * 4, (2, 2), scales=[0.5, 0.5])


def test_bfloat16_and_float8_inputs_import_and_a_complex_one_is_refused_with_the_fix():
    """bfloat16 and the 8-bit floats are read through ml_dtypes (onnx's dependency) and
    compiled; a complex tensor is not a tecc dtype: refused with the input named."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    info = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, (2, 2))
    graph = helper.make_graph([node("Relu", ["x"], "y")], "bf16", [info],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, (2, 2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    x = np.array([[-1.5, 2.0], [0.25, -0.0]], ml_dtypes.bfloat16)
    (y,) = tecc_outputs(model, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0).view(np.uint16))  # the bits, as tecc's arrays keep them
    info = helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, (2, 2))
    graph = helper.make_graph([node("Cast", ["x"], "xf", to=TensorProto.FLOAT), node("Relu", ["xf"], "y")], "f8",
                              [info], [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    x = np.array([[-1.5, 2.0], [0.3, 448.0]], ml_dtypes.float8_e4m3fn)
    (y,) = tecc_outputs(model, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x.astype(np.float32), 0))
    info = helper.make_tensor_value_info("x", TensorProto.COMPLEX64, (2, 2))
    graph = helper.make_graph([node("Identity", ["x"], "y")], "c64", [info],
                              [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, (2, 2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(OnnxImportError, match=r"input 'x': tensors of dtype complex64 \(ONNX type 14\) are not "
                                              r"supported; the importer takes bool, int2, .*float16, bfloat16, "
                                              r"float32, float64: Cast the tensor"):
        from_onnx(model)


# ---------------------------------------------------------------------------------------
# quantization, losses, windows (2026-11-27 converters), against onnxruntime
# ---------------------------------------------------------------------------------------
def test_quantize_linear_rounds_half_to_even_and_saturates_per_axis():
    # halves round to even (2.5 -> 2, 3.5 -> 4), values past the type's range saturate
    x = np.array([[2.5, 3.5, -2.5, 1000.0], [0.49, -0.51, 127.6, -1000.0]], "float32")
    scale, zp = np.array([1.0, 0.5], "float32"), np.array([0, 3], "int8")
    q = node("QuantizeLinear", ["x", "scale", "zp"], "q", axis=0)
    check([q], {"x": x}, ["q"], inits={"scale": scale, "zp": zp})
    dq = node("DequantizeLinear", ["q", "scale", "zp"], "y", axis=0)
    check([q, dq], {"x": x}, ["y"], inits={"scale": scale, "zp": zp})


def test_softmax_cross_entropy_with_weights_and_ignored_labels():
    scores = rand(4, 5, 3)
    labels = np.array([[0, 1, 4], [2, -1, 3], [4, 4, 0], [-1, 1, 2]], "int64")
    weights = np.linspace(0.5, 1.5, 5).astype("float32")
    for reduction in ("mean", "sum", "none"):
        sce = node("SoftmaxCrossEntropyLoss", ["s", "l", "w"], ["loss", "logp"], reduction=reduction, ignore_index=-1)
        check([sce], {"s": scores, "l": labels}, ["loss", "logp"], inits={"w": weights})


def test_blocked_quantization_matches_onnxruntime():
    """QuantizeLinear in blocks along an axis (a block per 3 columns, the last one short),
    and the int4 weight-only quantization of LLM exports: a DequantizeLinear of int4
    weights in blocks of 4 rows, each block with its own scale and zero point, feeding
    a MatMul (the dequantization fused into one kernel)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rand(3, 8, low=-4, high=4)
    q = node("QuantizeLinear", ["x", "qs", "qz"], "q", axis=1, block_size=3)
    check([q], {"x": x}, ["q"], inits={"qs": rand(3, 3, low=0.01, high=0.1), "qz": np.arange(9).reshape(3, 3)
                                       .astype("int8")}, opset=21)
    w = np.random.default_rng(5).integers(-8, 8, (8, 6)).astype(ml_dtypes.int4)
    zero = np.random.default_rng(6).integers(-2, 3, (2, 6)).astype(ml_dtypes.int4)
    dq = node("DequantizeLinear", ["w", "s", "z"], "wf", axis=0, block_size=4)
    mm = node("MatMul", ["x", "wf"], "y")
    check([dq, mm], {"x": x}, ["y"], inits={"w": w, "s": rand(2, 6, low=0.05, high=0.2), "z": zero}, opset=21)


def test_blocked_quantization_with_a_scale_of_the_wrong_shape_names_the_shape_it_needs():
    x = rand(2, 5)
    refused([node("QuantizeLinear", ["x", "scale"], "q", axis=1, block_size=2)], {"x": x}, ["q"],
            r"QuantizeLinear node 'QuantizeLinear_q': y_scale \(input 1\) has shape \(2, 2\); blocked quantization "
            r"of \(2, 5\) in blocks of 2 along axis 1 needs shape \(2, 3\)",
            inits={"scale": np.ones((2, 2), "float32")}, opset=21)


@pytest.mark.parametrize("kind, attrs, layout", [
    ("LSTM", dict(direction="bidirectional"), 0),
    ("LSTM", dict(input_forget=1), 0),
    ("LSTM", dict(clip=0.7), 0),
    ("GRU", dict(linear_before_reset=1, direction="reverse"), 0),
    ("GRU", dict(direction="bidirectional", activations=["Sigmoid", "Relu", "Sigmoid", "Tanh"]), 0),
    ("RNN", dict(activations=["Relu"]), 0),
    ("GRU", dict(clip=0.5), 0),
    ("RNN", dict(clip=0.3, direction="bidirectional"), 0),
    # ONNX's parametric activations, alpha and beta consumed in order by those that take them
    ("LSTM", dict(activations=["HardSigmoid", "LeakyRelu", "Elu"], activation_alpha=[0.3, 0.05, 0.7],
                  activation_beta=[0.4]), 0),
    ("GRU", dict(direction="bidirectional", activations=["Affine", "ScaledTanh", "hardsigmoid", "Softsign"],
                 activation_alpha=[0.5, 1.5, 0.25], activation_beta=[0.1, 0.8, 0.6]), 0),
    ("RNN", dict(direction="bidirectional", activations=["ThresholdedRelu", "Softplus"], activation_alpha=[0.2]), 0),
    ("LSTM", dict(activations=["HardSigmoid", "Tanh", "LeakyRelu"]), 0),  # the defaults: 0.2 / 0.5, 0.01
])
def test_recurrent_layers_unrolled_match_onnxruntime(kind, attrs, layout):
    # (onnxruntime refuses layout=1; ONNX's own batchwise cases run in test_onnx_conformance)
    steps, batch, width, hidden = 4, 3, 5, 6
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    x = rand(batch, steps, width) if layout else rand(steps, batch, width)
    inits = {"W": rand(dirs, gates * hidden, width, seed=1), "R": rand(dirs, gates * hidden, hidden, seed=2),
             "B": rand(dirs, 2 * gates * hidden, seed=3),
             "h0": rand(*((batch, dirs, hidden) if layout else (dirs, batch, hidden)), seed=4)}
    ins = ["x", "W", "R", "B", "", "h0"]
    outs = ["y", "yh"]
    if kind == "LSTM":
        inits["c0"] = rand(*((batch, dirs, hidden) if layout else (dirs, batch, hidden)), seed=5)
        inits["P"] = rand(dirs, 3 * hidden, seed=6)
        ins += ["c0", "P"]
        outs.append("yc")
    n = node(kind, ins, outs, hidden_size=hidden, layout=layout, **attrs)
    check([n], {"x": x}, outs, inits=inits, opset=14)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_batchwise_recurrent_layers_read_initial_states_batch_first(kind):
    """layout=1 gives the initial states as [batch, directions, hidden]; with as many
    sequences as directions they were read directions-first before, and every state went to
    the wrong sequence with no error. onnxruntime refuses layout=1: ONNX's reference decides."""
    from onnx.reference import ReferenceEvaluator

    steps, batch, width, hidden, dirs = 3, 2, 4, 3, 2
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    x = rand(batch, steps, width)
    inits = {"W": rand(dirs, gates * hidden, width, seed=1), "R": rand(dirs, gates * hidden, hidden, seed=2),
             "B": rand(dirs, 2 * gates * hidden, seed=3), "h0": rand(batch, dirs, hidden, seed=4, low=-3, high=3)}
    ins, outs = ["x", "W", "R", "B", "", "h0"], ["y", "yh"]
    if kind == "LSTM":
        inits["c0"] = rand(batch, dirs, hidden, seed=5, low=-3, high=3)
        ins.append("c0")
        outs.append("yc")
    model = make_model([node(kind, ins, outs, hidden_size=hidden, layout=1, direction="bidirectional")], {"x": x},
                       outs, inits, opset=14)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    for got, expected in zip(tecc_run(model, {"x": x}), want):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("operand, shape, message", [
    ("W", (2, 4, 3), r"W \(input 1\) has shape \[2, 4, 3\]; with hidden_size 4 and 1 direction\(s\) it must be "
                     r"\[1, 4, 3\]"),
    ("R", (), r"R \(input 2\) has shape \[\]; with hidden_size 4 and 1 direction\(s\) it must be \[1, 4, 4\]"),
    ("h0", (1, 3, 4), r"initial_h \(input 5\) has shape \[1, 3, 4\]; with hidden_size 4 and 1 direction\(s\) it "
                      r"must be \[1, 2, 4\]"),
])
def test_recurrent_layers_refuse_an_operand_of_the_wrong_shape_naming_it(operand, shape, message):
    # (a scalar W once raised IndexError)
    x = rand(4, 2, 3)
    inits = {"W": rand(1, 4, 3), "R": rand(1, 4, 4), "h0": rand(1, 2, 4)}
    inits[operand] = np.full(shape, 0.5, "float32")
    refused([node("RNN", ["x", "W", "R", "", "", "h0"], ["y"], hidden_size=4)], {"x": x}, ["y"],
            "RNN node 'RNN_y': " + message, inits=inits, opset=14)


def test_recurrent_layers_refuse_an_activation_onnx_does_not_define():
    x = rand(4, 2, 3)
    inits = {"W": rand(1, 4, 3), "R": rand(1, 4, 4)}
    refused([node("RNN", ["x", "W", "R"], ["y"], hidden_size=4, activations=["Swish"])], {"x": x}, ["y"],
            r"activations \['Swish'\] are not ONNX's; use Relu, Tanh, Sigmoid, Affine, LeakyRelu", inits=inits,
            opset=14)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("given_at_run_time", [False, True])
def test_recurrent_layers_with_sequences_of_several_lengths(kind, direction, given_at_run_time):
    """sequence_lens (an initializer, or an input of the model): a sequence's steps past
    its length keep its state and output zeros, a reverse pass starts at its last step;
    the values are onnxruntime's (before: refused unless every length was the steps')."""
    steps, batch, width, hidden = 5, 4, 3, 4
    dirs = 2 if direction == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    x = rand(steps, batch, width)
    lens = np.array([5, 2, 0, 3], "int32")
    inits = {"W": rand(dirs, gates * hidden, width, seed=1), "R": rand(dirs, gates * hidden, hidden, seed=2),
             "B": rand(dirs, 2 * gates * hidden, seed=3), "h0": rand(dirs, batch, hidden, seed=4)}
    inputs = {"x": x}
    (inputs if given_at_run_time else inits)["lens"] = lens
    ins, outs = ["x", "W", "R", "B", "lens", "h0"], ["y", "yh"]
    if kind == "LSTM":
        inits["c0"] = rand(dirs, batch, hidden, seed=5)
        ins.append("c0")
        outs.append("yc")
    check([node(kind, ins, outs, hidden_size=hidden, direction=direction)], inputs, outs, inits=inits, opset=14)


def test_recurrent_layers_refuse_sequence_lengths_past_the_steps():
    x = rand(4, 2, 3)
    inits = {"W": rand(1, 4, 3), "R": rand(1, 4, 4), "lens": np.array([4, 6], "int32")}
    refused([node("RNN", ["x", "W", "R", "", "lens"], ["y"], hidden_size=4)], {"x": x}, ["y"],
            "sequence_lens \\[4, 6\\] must lie in \\[0, 4\\] \\(the sequence's steps\\)", inits=inits, opset=14)


def test_reverse_sequence_with_lengths_given_at_run_time():
    x = rand(5, 3, 2)
    lens = np.array([5, 1, 3], "int64")
    check([node("ReverseSequence", ["x", "lens"], "y", batch_axis=1, time_axis=0)], {"x": x, "lens": lens}, ["y"])
    lens2 = np.array([2, 4, 5], "int64")
    xt = np.ascontiguousarray(np.transpose(x, (1, 0, 2)))
    check([node("ReverseSequence", ["x", "lens"], "y", batch_axis=0, time_axis=1)], {"x": xt, "lens": lens2}, ["y"])


@pytest.mark.parametrize("mode, padding, align", [(m, p, a) for m in ("bilinear", "nearest", "bicubic")
                                                  for p in ("zeros", "border", "reflection") for a in (0, 1)])
def test_grid_sample_matches_onnxruntime(mode, padding, align):
    # sample points inside and outside the image (the grid reaches 1.6 past its edges),
    # every mode with every padding; one image.grid_sample each
    x = rand(2, 3, 5, 7)
    grid = rand(2, 4, 6, 2, low=-1.6, high=1.6, seed=9)
    check([node("GridSample", ["x", "grid"], "y", mode=mode, padding_mode=padding, align_corners=align)],
          {"x": x, "grid": grid}, ["y"], opset=16)


@pytest.mark.parametrize("mode, padding, align", [("linear", "reflection", 0), ("nearest", "zeros", 1),
                                                  ("cubic", "border", 0)])
def test_grid_sample_of_opset_20_matches_onnxruntime(mode, padding, align):
    # opset 20 names the modes linear and cubic, and samples 3-D inputs
    x = rand(1, 2, 4, 5)
    grid = rand(1, 3, 4, 2, low=-1.3, high=1.3, seed=4)
    check([node("GridSample", ["x", "grid"], "y", mode=mode, padding_mode=padding, align_corners=align)],
          {"x": x, "grid": grid}, ["y"], opset=20)
    if mode != "cubic":
        volume = rand(1, 2, 3, 4, 5)
        points = rand(1, 2, 3, 4, 3, low=-1.3, high=1.3, seed=5)
        check([node("GridSample", ["x", "grid"], "y", mode=mode, padding_mode=padding, align_corners=align)],
              {"x": volume, "grid": points}, ["y"], opset=20)


def test_grid_sample_imports_as_one_operator():
    model = make_model([node("GridSample", ["x", "grid"], "y", mode="bicubic", padding_mode="reflection")],
                       {"x": rand(1, 2, 4, 5), "grid": rand(1, 3, 4, 2)}, ["y"], None, 16)
    mod, _ = from_onnx(model)
    ops = [n.op.name for n in g.topological_order(mod["main"].body) if isinstance(n, g.Call)]
    assert ops == ["transpose", "image.grid_sample"]
    call = mod["main"].body
    assert dict(call.attrs) == dict(method="bicubic", layout="NCHW", padding_mode="reflection", align_corners=False)
    assert call.args[1].checked_type == g.TensorType((1, 2, 3, 4))


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_grid_sample_fuses_with_the_grid_transpose_and_the_operator_after_it(target):
    nodes = [node("GridSample", ["x", "grid"], "s", mode="bicubic", padding_mode="border"), node("Relu", ["s"], "y")]
    inputs = {"x": rand(1, 2, 4, 5), "grid": rand(1, 3, 4, 2, low=-1.3, high=1.3)}
    mod, _ = from_onnx(make_model(nodes, inputs, ["y"], None, 16))
    assert fused_groups(fuse_ops(mod)) == [["transpose", "image.grid_sample", "nn.relu"]]
    check(nodes, inputs, ["y"], opset=16, target=target)  # one kernel (cuda: run on the emulator here)


def test_grid_sample_refuses_cubic_3d_naming_the_modes_it_takes():
    refused([node("GridSample", ["x", "grid"], "y", mode="cubic")],
            {"x": rand(1, 2, 3, 4, 5), "grid": rand(1, 2, 3, 4, 3)}, ["y"],
            "cubic sampling of a 3-D input is not supported; tecc samples 3-D inputs 'linear' or 'nearest'", opset=20)


@pytest.mark.parametrize("attrs", [dict(axis=1), dict(axis=2, onesided=1), dict(axis=1, inverse=1)])
def test_dft_matches_onnxruntime(attrs):
    channels = 2 if attrs.get("inverse") else 1
    x = rand(2, 8, 6, channels)
    check([node("DFT", ["x"], "y", **attrs)], {"x": x}, ["y"], opset=17, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_log_mel_spectrogram_matches_onnxruntime(target):
    # a speech model's front end: a Hann window slid over the signal (STFT), the power
    # spectrum, MelWeightMatrix's filters, the log
    nodes = [node("HannWindow", ["size"], "window"),
             node("STFT", ["signal", "step", "window"], "spectrum", onesided=1),  # onnx's shape inference reads it unset as 0
             node("ReduceSumSquare", ["spectrum", "last"], "power", keepdims=0),
             node("MelWeightMatrix", ["mels", "dft", "rate", "low", "high"], "filters"),
             node("MatMul", ["power", "filters"], "mel"),
             node("Add", ["mel", "eps"], "floor"),
             node("Log", ["floor"], "y")]
    inits = {"size": np.array(32, "int64"), "step": np.array(10, "int64"), "last": np.array([-1], "int64"),
             "mels": np.array(12, "int64"), "dft": np.array(32, "int64"), "rate": np.array(16000, "int64"),
             "low": np.array(20.0, "float32"), "high": np.array(8000.0, "float32"),
             "eps": np.array(1e-6, "float32")}
    check(nodes, {"signal": rand(2, 200, 1)}, ["y", "spectrum"], inits=inits, opset=18, target=target,
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["DFT", "STFT", "irfft"])
def test_float64_spectra_keep_float64_digits(op):
    """A float64 signal's DFT and STFT are computed in float64 (numpy's FFT to 1e-12),
    not rounded through float32 (1e-6)."""
    x = np.random.default_rng(0).standard_normal((2, 64, 1))
    if op == "DFT":
        nodes, inits, want = [node("DFT", ["x"], "y", axis=1)], None, np.fft.fft(x[..., 0], axis=1)
    elif op == "irfft":
        spec = np.fft.rfft(x[..., 0], axis=1)
        x = np.stack([spec.real, spec.imag], axis=-1)
        nodes, inits = [node("DFT", ["x", "n"], "y", axis=1, inverse=1, onesided=1)], {"n": np.array(64, "int64")}
        want = np.fft.irfft(spec, n=64, axis=1)[..., None]
    else:
        nodes, inits = [node("STFT", ["x", "step", "", "length"], "y", onesided=1)], \
            {"step": np.array(16, "int64"), "length": np.array(32, "int64")}
        frames = np.stack([x[:, i * 16:i * 16 + 32, 0] for i in range(3)], axis=1)
        want = np.fft.rfft(frames, axis=2)
    model = make_model(nodes, {"x": x}, ["y"], inits, 17)
    got = tecc_run(model, {"x": x}, "llvm")[0]
    assert got.dtype == np.float64
    if np.iscomplexobj(want):
        want = np.stack([want.real, want.imag], axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_stft_of_a_complex_signal_gives_every_bin():
    inits = {"step": np.array(3, "int64"), "length": np.array(8, "int64")}
    check([node("STFT", ["signal", "step", "", "length"], "y", onesided=0)], {"signal": rand(1, 30, 2)}, ["y"],
          inits=inits, opset=17, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("extra, attrs, inputs, match", [
    ({"length": np.array(8, "int64")}, {}, ["signal", "step", "window", "length"],
     "the window has 6 samples and frame_length is 8: they must be equal"),
    ({}, {"onesided": 1}, ["signal", "step"],
     "onesided=1 with a complex signal: a complex signal's spectrum is not symmetric; set onesided=0"),
    ({"length": np.array(40, "int64")}, {}, ["signal", "step", "", "length"],
     "frame_step 3 and frame_length 40 over a signal of 30 samples"),
])
def test_stft_refusals_name_the_node_and_the_fix(extra, attrs, inputs, match):
    parts = 2 if attrs.get("onesided") else 1
    inits = {"step": np.array(3, "int64"), "window": np.ones(6, "float32"), **extra}
    refused([node("STFT", inputs, "y", **attrs)], {"signal": rand(1, 30, parts)}, ["y"], "STFT node 'STFT_y'.*" + match,
            inits=inits, opset=17)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("axis", [1, -3, None])
def test_compress_by_a_constant_condition_matches_onnxruntime(target, axis):
    # the condition decides the output's shape (an initializer here); the data is a run-time input
    attrs = {} if axis is None else {"axis": axis}
    cond = np.array([True, False, True, True, False][:4 if axis == -3 else 5])
    check([node("Compress", ["x", "cond"], "y", **attrs)], {"x": rand(4, 5, 3)}, ["y"], inits={"cond": cond},
          opset=11, target=target)


def test_non_zero_and_unique_of_values_known_when_compiling_match_onnxruntime():
    # a constant's nonzero positions and distinct values (first-occurrence order, every output)
    table = np.array([[3, 0, 1], [0, 3, 3]], "int64")
    nodes = [node("Equal", ["table", "three"], "is_three"), node("NonZero", ["is_three"], "where"),
             node("Unique", ["table"], ["values", "first", "inverse", "counts"], sorted=0),
             node("Gather", ["x", "first"], "picked")]
    check(nodes, {"x": rand(6)}, ["where", "values", "first", "inverse", "counts", "picked"],
          inits={"table": table, "three": np.array(3, "int64")}, opset=11)


def test_non_zero_of_a_run_time_value_is_refused_naming_what_decides_the_shape():
    refused([node("NonZero", ["x"], "y")], {"x": rand(2, 3)}, ["y"],
            r"NonZero node 'NonZero_y': X \(input 0\), whose values decide the output's shape, is computed by the "
            r"model at run time; tecc needs it known when compiling", opset=11)


def test_conv_transpose_output_shape_past_the_output_padding_is_refused_with_the_sizes_it_can_give():
    refused([node("ConvTranspose", ["x", "w"], "y", strides=[3, 2], output_shape=[24, 16])],
            {"x": rand(1, 3, 7, 7)}, ["y"],
            r"ConvTranspose node 'ConvTranspose_y': output_shape \(24, 16\) is larger than the transposed "
            r"convolution gives: spatial axis 0 can be 21 to 23 \(the output padding at most the stride less one\), "
            r"not 24", inits={"w": rand(3, 2, 3, 3)})


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_det_matches_onnxruntime(target):
    # a batch of matrices, one singular and one needing a row swap, then an element-wise op (det is a kernel
    # of its own)
    x = rand(2, 3, 4, 4)
    x[0, 1, :, 2] = x[0, 1, :, 0]
    x[1, 0, 0, 0] = 0.0
    check([node("Det", ["x"], "d"), node("Abs", ["d"], "y")], {"x": x}, ["y", "d"], opset=11, target=target)


def test_det_of_float16_is_computed_in_float32():
    x = (rand(3, 5, 5) + 2.0 * np.eye(5, dtype="float32")).astype("float16")
    (got,) = tecc_run(make_model([node("Det", ["x"], "y")], {"x": x}, ["y"], opset=11), {"x": x})
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, np.linalg.det(x.astype("float32")).astype("float16"), rtol=1e-3)


def test_det_refuses_a_matrix_that_is_not_square():
    refused([node("Det", ["x"], "y")], {"x": rand(2, 3, 4)}, ["y"],
            r"Det node 'Det_y'.*the input has shape \(2, 3, 4\); Det takes square matrices in its last two axes",
            opset=11)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("shape, attrs", [
    ((2, 3, 7, 6), dict(kernel_shape=[2, 2], strides=[2, 2])),
    ((1, 2, 5, 5), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    ((1, 2, 6, 5), dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], storage_order=1)),
    ((1, 1, 7, 7), dict(kernel_shape=[2, 2], dilations=[2, 1])),
    ((2, 3, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),  # 1-D
])
def test_max_pool_indices(target, shape, attrs):
    # where each maximum is, as onnxruntime gives it: an index into the flattened
    # input, the batch and channel offsets included; the first of equal values in a
    # window (the relu's zeros) wins
    x = np.maximum(rand(*shape), 0.0)
    check([node("MaxPool", ["x"], ["y", "i"], **attrs)], {"x": x}, ["y", "i"], opset=12, target=target)


def test_max_pool_indices_feed_max_unpool():
    # the encoder-decoder pattern (SegNet): pool with indices, unpool to the input's size
    x = rand(1, 2, 5, 6)
    nodes = [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             node("MaxUnpool", ["y", "i", "shape"], "z", kernel_shape=[2, 2], strides=[2, 2])]
    check(nodes, {"x": x}, ["z"], inits={"shape": np.array(x.shape, "int64")}, opset=11)


# ---------------------------------------------------------------------------------------
# quantized operators: integer products, requantization, dynamic quantization
# ---------------------------------------------------------------------------------------
def _ints(dtype, shape, seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed + sum(shape)).integers(info.min, info.max + 1, shape).astype(dtype)


def check_exact(nodes, inputs, outputs, inits, opset, u8s8):
    """tecc's outputs equal onnxruntime's, or, for uint8 data with int8 weights, ONNX's
    reference implementation's: onnxruntime's AVX2 kernels for that pair add the
    products in pairs saturated to int16 and land off (its documentation says so;
    tecc sums exactly)."""
    if not u8s8:
        check(nodes, inputs, outputs, inits=inits, opset=opset)
        return
    from onnx.reference import ReferenceEvaluator

    model = make_model(nodes, inputs, outputs, inits, opset=opset)
    want = ReferenceEvaluator(model).run(None, dict(inputs))
    for got, expected in zip(tecc_run(model, inputs), want):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("a_type, b_type", [("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")])
@pytest.mark.parametrize("zero_points", ["none", "scalar", "per_column"])
def test_matmul_integer(a_type, b_type, zero_points):
    a, b = _ints(a_type, (2, 3, 7)), _ints(b_type, (7, 5), seed=1)
    ins, inits = ["a", "b"], {"b": b}
    if zero_points != "none":
        inits["azp"] = np.array(9, a_type)
        inits["bzp"] = np.arange(5).astype(b_type) if zero_points == "per_column" else np.array(3, b_type)
        ins += ["azp", "bzp"]
    check_exact([node("MatMulInteger", ins, "y")], {"a": a}, ["y"], inits, 10, (a_type, b_type) == ("uint8", "int8"))


def test_conv_integer_pads_with_the_zero_point():
    x, w = _ints("uint8", (1, 3, 6, 5)), _ints("uint8", (4, 3, 3, 3), seed=1)
    inits = {"w": w, "xzp": np.array(7, "uint8"), "wzp": np.array(3, "uint8")}
    for target in ("llvm", "cuda"):
        check([node("ConvInteger", ["x", "w", "xzp", "wzp"], "y", pads=[1, 1, 1, 1], strides=[2, 1])], {"x": x}, ["y"],
              inits=inits, opset=10, target=target)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("per_column", [False, True])
def test_qlinear_matmul(dtype, per_column):
    a, b = _ints(dtype, (2, 3, 8)), _ints(dtype, (8, 6), seed=1)
    inits = {"as": np.array(0.02, "float32"), "azp": np.array(5, dtype), "b": b,
             "bs": (np.linspace(0.01, 0.03, 6) if per_column else np.array(0.015)).astype("float32"),
             "bzp": (np.full(6, 4) if per_column else np.array(4)).astype(dtype),
             "ys": np.array(0.7, "float32"), "yzp": np.array(100 if dtype == "uint8" else -2, dtype)}
    check([node("QLinearMatMul", ["a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], "y")], {"a": a}, ["y"],
          inits=inits, opset=13)


@pytest.mark.parametrize("w_type", ["uint8", "int8"])
@pytest.mark.parametrize("per_channel, bias", [(False, False), (True, True)])
def test_qlinear_conv(w_type, per_channel, bias):
    x, w = _ints("uint8", (1, 3, 7, 6)), _ints(w_type, (4, 3, 3, 3), seed=1)
    inits = {"xs": np.array(0.02, "float32"), "xzp": np.array(120, "uint8"), "w": w,
             "ws": (np.linspace(0.005, 0.02, 4) if per_channel else np.array(0.01)).astype("float32"),
             "wzp": np.array(128 if w_type == "uint8" else 0, w_type), "ys": np.array(0.9, "float32"),
             "yzp": np.array(128, "uint8")}
    ins = ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp"]
    if bias:
        ins.append("B")
        inits["B"] = np.array([-300, 0, 150, 420], "int32")
    check_exact([node("QLinearConv", ins, "y", pads=[1, 1, 1, 1])], {"x": x}, ["y"], inits, 13, w_type == "int8")


@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zeros"])
def test_dynamic_quantize_linear(kind):
    base = rand(3, 5, low=0.1, high=2.0)
    x = {"mixed": rand(3, 5, low=-2.0, high=1.0), "positive": base, "negative": -base, "zeros": 0.0 * base}[kind]
    check([node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x}, ["y", "s", "z"], opset=11)


@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
def test_a_model_quantized_by_onnxruntime_runs_bit_exact(weight_type, tmp_path):
    # onnxruntime.quantization.quantize_dynamic: DynamicQuantizeLinear, MatMulInteger,
    # Cast and Mul around an MLP's products
    quantization = pytest.importorskip("onnxruntime.quantization")
    w1, b1, w2 = rand(32, 64) * 0.2, rand(64) * 0.1, rand(64, 10, seed=3) * 0.2
    nodes = [node("MatMul", ["x", "w1"], "h"), node("Add", ["h", "b1"], "hb"), node("Relu", ["hb"], "r"),
             node("MatMul", ["r", "w2"], "y")]
    x = rand(4, 32, seed=5)
    onnx.save(make_model(nodes, {"x": x}, ["y"], {"w1": w1, "b1": b1, "w2": w2}), str(tmp_path / "f.onnx"))
    quantization.quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"),
                                  weight_type=getattr(quantization.QuantType, weight_type))
    model = onnx.load(str(tmp_path / "q.onnx"))
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in model.graph.node}
    # the weights stay 8-bit in the built module's parameters (the product widens them)
    mod, params = from_onnx(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tecc.transform.PassContext(opt_level=3):
            factory = build(mod, target="llvm", params=params)
    weights = [v.numpy() for v in factory.get_params().values() if v.numpy().ndim == 2]
    assert weights and all(str(w.dtype) in ("uint8", "int8") for w in weights)
    if weight_type == "QInt8":  # uint8 activations with int8 weights: see check_exact
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(model).run(None, {"x": x})
    else:
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(tecc_run(model, {"x": x})[0], want[0])


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm_mean_and_inverse_std_dev_outputs(axis):
    # the training outputs, computed where the model reads them
    x, scale, bias = rand(2, 3, 5), rand(*((3, 5) if axis == 1 else (5,)), seed=1), rand(5, seed=2)
    inits = {"s": scale}
    ins = ["x", "s"]
    if axis == -1:
        inits["b"] = bias
        ins.append("b")
    check([node("LayerNormalization", ins, ["y", "mean", "inv"], axis=axis, epsilon=1e-3)], {"x": x},
          ["y", "mean", "inv"], inits=inits, opset=17)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[1, 2, 0, 1], [0, -1, 2, 1], [-1, 1, 1, -2]])
def test_pad_modes_with_negative_pads(mode, pads):
    # wrap (opset 19) repeats the input around itself; a negative pad crops
    check([node("Pad", ["x", "p"], "y", mode=mode)], {"x": rand(3, 4)}, ["y"],
          inits={"p": np.array(pads, "int64")}, opset=19)


@pytest.mark.parametrize("mode, coordinate, exclude", [
    ("linear", "half_pixel", 0), ("linear", "pytorch_half_pixel", 0), ("linear", "align_corners", 0),
    ("cubic", "half_pixel", 0), ("cubic", "half_pixel_symmetric", 1), ("cubic", "asymmetric", 1)])
@pytest.mark.parametrize("sizes", [(1, 2, 5, 3), (1, 2, 4, 20)])
def test_resize_antialias_shrinking(mode, coordinate, exclude, sizes):
    # what torchvision's Resize(antialias=True) exports: the filter widened by 1 / scale
    # on the axes that shrink; against onnxruntime and ONNX's reference
    from onnx.reference import ReferenceEvaluator

    attrs = dict(mode=mode, coordinate_transformation_mode=coordinate, antialias=1)
    if mode == "cubic":
        attrs["exclude_outside"] = exclude
    x = rand(1, 2, 11, 13)
    nodes = [node("Resize", ["x", "", "", "sizes"], "y", **attrs)]
    inits = {"sizes": np.array(sizes, "int64")}
    check(nodes, {"x": x}, ["y"], inits=inits, opset=19)
    model = make_model(nodes, {"x": x}, ["y"], inits, opset=19)
    np.testing.assert_allclose(tecc_run(model, {"x": x})[0], ReferenceEvaluator(model).run(None, {"x": x})[0],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("nodes, inits, match", [
    ([node("QLinearMatMul", ["a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], "y")],
     {"yzp": np.array([1, 2], "uint8")}, r"QLinearMatMul node .*y_zero_point has shape \[2\]; tecc quantizes the "
                                          r"output per tensor"),
    ([node("QLinearMatMul", ["a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], "y")],
     {"bs": np.ones(3, "float32")}, r"QLinearMatMul node .*b_scale \(input 4\) has shape \[3\]; it must be a scalar "
                                    r"or hold 2 values"),
    ([node("MatMulInteger", ["a", "b", "azp"], "y")], {"azp": np.array([1, 2, 3, 4], "uint8")},
     r"MatMulInteger node .*a_zero_point \(input 2\) has shape \[4\]; it must be a scalar or hold 3 values"),
])
def test_quantized_operator_errors_name_the_node(nodes, inits, match):
    base = {"as": np.array(0.1, "float32"), "azp": np.array(0, "uint8"), "b": np.ones((4, 2), "uint8"),
            "bs": np.array(0.1, "float32"), "bzp": np.array(0, "uint8"), "ys": np.array(0.5, "float32"),
            "yzp": np.array(0, "uint8")}
    base.update(inits)
    used = {i for n in nodes for i in n.input}
    refused(nodes, {"a": np.ones((3, 4), "uint8")}, ["y"], match, inits={k: v for k, v in base.items() if k in used})


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("w_type", ["int8", "uint8"])
def test_qlinear_conv_keeps_weights_8_bit(target, w_type):
    # the weights stay 8-bit in the parameters: int8 ones with zero point 0 (symmetric
    # quantization) as they are, uint8 ones with per-channel zero points too (their
    # zero points come off as zw times the window's sum); grouped and dilated, against
    # ONNX's reference (see check_exact)
    from onnx.reference import ReferenceEvaluator

    x, w = _ints("uint8", (1, 4, 9, 8)), _ints(w_type, (6, 2, 3, 3), seed=2)
    zero = np.zeros(6, "int8") if w_type == "int8" else np.array([0, 3, 77, 128, 200, 255], "uint8")
    inits = {"xs": np.array(0.02, "float32"), "xzp": np.array(120, "uint8"), "w": w,
             "ws": np.linspace(0.005, 0.02, 6).astype("float32"), "wzp": zero,
             "ys": np.array(0.9, "float32"), "yzp": np.array(128, "uint8"),
             "B": np.array([-300, 0, 150, 420, 7, -9], "int32")}
    nodes = [node("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "B"], "y", pads=[1, 1, 1, 1],
                  group=2, dilations=[2, 2], strides=[1, 2])]
    model = make_model(nodes, {"x": x}, ["y"], inits, opset=13)
    np.testing.assert_array_equal(tecc_run(model, {"x": x}, target)[0],
                                  ReferenceEvaluator(model).run(None, {"x": x})[0])
    mod, params = from_onnx(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        factory = build(mod, target=target, params=params)
    assert [str(v.numpy().dtype) for v in factory.get_params().values() if v.numpy().shape == w.shape] == [w_type]


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_mean_variance_normalization_adds_its_epsilon_to_the_deviation(target):
    # ONNX's body: (x - mean) / (sqrt(var) + 1e-9).  Two values 2e-4 apart normalize to
    # -1 and 1 (to 5e-6); with the epsilon inside the root they gave 0.991 (found by the
    # fuzzer: a batch of two along axis 0)
    x = np.zeros((2, 3, 2, 2), np.float32)
    x[0], x[1] = 0.5, np.float32(0.5) + np.float32(4.8e-4)
    x[0, 1], x[1, 1] = [[0.1, 0.2], [0.3, 0.4]], [[0.7, -0.2], [0.3, 0.9]]
    mvn = node("MeanVarianceNormalization", ["x"], "y", axes=[0])
    xd = x.astype(np.float64)
    centered = xd - xd.mean(axis=0, keepdims=True)
    want = centered / (np.sqrt((centered ** 2).mean(axis=0, keepdims=True)) + 1e-9)
    model = make_model([mvn], {"x": x}, ["y"], None, 13)
    got = tecc_run(model, {"x": x}, target)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-3)
    assert np.abs(got[:, 0]).min() > 0.999  # the near-equal pair
    # (onnxruntime computes the body's E[x^2] - E[x]^2 in float32: on this input it
    # cancels below zero and its root is NaN; the float64 body above is the reference)


def test_an_empty_slice_of_a_shape_computation_is_an_ordinary_value():
    """torch exports flatten(x, 3, -1) as Reshape(x, Concat(Shape(x)[0:3], Shape(x)[4:], [-1])):
    the empty piece is a value of the shape computation, folded by numpy (before:
    "the slice of axis 0 (4:4:1 of 4) is empty")."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(  # noqa: E731
        np.array(v, "int64"), name))
    nodes = [helper.make_node("Shape", ["x"], ["s"]), c("b0", [0]), c("e0", [3]), c("b1", [4]), c("e1", [4]),
             c("minus1", [-1]),
             helper.make_node("Slice", ["s", "b0", "e0"], ["head"]),
             helper.make_node("Slice", ["s", "b1", "e1"], ["empty"]),
             helper.make_node("Concat", ["head", "minus1", "empty"], ["newshape"], axis=0),
             helper.make_node("Reshape", ["x", "newshape"], ["y"])]
    x = np.random.default_rng(0).standard_normal((3, 5, 2, 2)).astype("float32")
    check(nodes, {"x": x}, ["y"])


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_empty_tensors_are_values_no_kernel_computes(target):
    """A tensor with no elements (an empty Slice, a Split piece of size 0 as a rotary
    embedding over the whole head makes, a Reshape of an empty input) is an empty
    constant: a Concat leaves it out, an elementwise operator of it is empty too, and a
    reduction over it gives the reduction's identity (before: "tecc does not compile
    empty tensors")."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(  # noqa: E731
        np.array(v, "int64"), name))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 4)).astype("float32")
    nodes = [c("b", [2]), c("e", [2]), c("a", [1]), c("sizes", [4, 0]), c("shape", [0, 4, 3]),
             helper.make_node("Slice", ["x", "b", "e", "a"], ["none"]),            # (3, 0, 4)
             helper.make_node("Split", ["x", "sizes"], ["rot", "rest"], axis=2),  # (3, 5, 4) and (3, 5, 0)
             helper.make_node("Neg", ["rot"], ["neg"]),
             helper.make_node("Concat", ["neg", "rest"], ["joined"], axis=2),
             helper.make_node("Exp", ["none"], ["exp_none"]),
             helper.make_node("ReduceSum", ["none", "a"], ["sum_none"], keepdims=0),  # zeros (3, 4)
             helper.make_node("Reshape", ["none", "shape"], ["reshaped"], allowzero=1),
             c("k0", [0]), helper.make_node("TopK", ["x", "k0"], ["top", "top_at"], axis=1)]
    check(nodes, {"x": x}, ["none", "rest", "joined", "exp_none", "sum_none", "reshaped", "top", "top_at"], opset=14,
          target=target)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk,km->im", [(3, 4), (4, 5), (5, 2)]),              # torch.einsum of three (TVM's test_einsum)
    ("i,i,i->i", [(4,), (4,), (4,)]),
    ("bij,bjk,bkl->bli", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),  # the output's axes in another order
    ("ij,jk,kl,lm->mi", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("ij,kl->ik", [(2, 3), (4, 5)]),                         # axes summed over one operand alone
    ("bij,bjk->ikb", [(2, 3, 4), (2, 4, 5)]),                # a product, then a transpose
    ("aij,bjk->abik", [(2, 3, 4), (5, 4, 6)]),
    ("ijk->ki", [(2, 3, 4)]),                                # a sum, then a transpose
])
def test_einsum_forms_no_single_product_computes_run_as_a_chain(equation, shapes, target):
    """Each step an einsum call of its own, so each is a kernel the target schedules
    (before: refused; computed in one TE function, the CUDA schedule left its inner
    products outside any kernel)."""
    rng = np.random.default_rng(4)
    names = [f"x{k}" for k in range(len(shapes))]
    inputs = {n: rng.standard_normal(s).astype("float32") for n, s in zip(names, shapes)}
    check([helper.make_node("Einsum", names, ["y"], equation=equation)], inputs, ["y"], opset=12, target=target)


# ---------------------------------------------------------------------------------------
# 3-D (video, volumes): Conv, ConvTranspose, MaxPool, AveragePool, Resize over NCDHW
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_a_3d_network_matches_onnxruntime(target):
    """A grouped, strided, asymmetrically padded 3-D convolution with its bias and
    ReLU (one kernel), 3-D max pooling (ceil_mode) and average pooling, a global
    pool, and a strided, dilated transposed 3-D convolution with output_padding
    (before: "Conv over 3 spatial dimension(s) is not supported")."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 6, 7, 8)).astype("float32")
    inits = {"w": rng.standard_normal((6, 2, 3, 3, 3)).astype("float32"), "b": rng.standard_normal(6).astype("float32"),
             "wt": rng.standard_normal((6, 3, 3, 3, 3)).astype("float32")}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 0, 1, 1, 2, 1], strides=[1, 2, 1], group=2),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2, 2], strides=[2, 1, 2], ceil_mode=1),
             helper.make_node("AveragePool", ["r"], ["a"], kernel_shape=[3, 1, 2], pads=[1, 0, 0, 1, 0, 1]),
             helper.make_node("GlobalAveragePool", ["a"], ["g"]),
             helper.make_node("ConvTranspose", ["m", "wt"], ["t"], strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 0],
                              output_padding=[1, 0, 1], dilations=[1, 2, 1])]
    check(nodes, {"x": x}, ["m", "a", "g", "t"], inits, target=target, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pooling_of_volumes_matches_onnxruntime(p):
    x = np.random.default_rng(8).standard_normal((1, 2, 5, 6, 7)).astype("float32")
    check([helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 3, 2], strides=[1, 2, 2], pads=[1, 0, 1, 0, 1, 0],
                            p=p)], {"x": x}, ["y"], opset=18, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("mode, coordinates, scales", [
    ("linear", "half_pixel", [1, 1, 2, 2, 1.5]),
    ("nearest", "asymmetric", [1, 1, 2, 1, 2]),
    ("linear", "align_corners", [1, 1, 1.5, 2, 0.6]),
    ("cubic", "half_pixel", [1, 1, 2, 2, 2]),
])
def test_resize_of_volumes_follows_the_onnx_reference(mode, coordinates, scales, target):
    """Resize over the three spatial axes of NCDHW, against ONNX's reference
    implementation (onnxruntime has no 3-D cubic, and maps align_corners by the
    scale where the sizes' ratio is not it: 1.5 x 3 planes)."""
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(6).standard_normal((1, 2, 3, 4, 5)).astype("float32")
    nodes = [helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode, coordinate_transformation_mode=coordinates)]
    model = make_model(nodes, {"x": x}, ["y"], {"s": np.array(scales, "float32")})
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = tecc_run(model, {"x": x}, target)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op, ins, inits, what, shape", [
    ("Clip", ["x", "lo"], {"lo": np.array([0.0, 1.0], "float32")}, "min (input 1)", [2]),
    ("Pad", ["x", "pads", "cv"], {"pads": np.array([0, 1, 0, 1], "int64"), "cv": np.zeros(0, "float32")},
     "constant_value (input 2)", [0]),
    ("Dropout", ["x", "ratio", "train"], {"ratio": np.zeros(0, "float32"), "train": np.array(True)},
     "ratio (input 1)", [0]),
    ("Range", ["start", "limit", "delta"], {"start": np.array([0, 1], "int64"), "limit": np.array(5, "int64"),
                                            "delta": np.array(1, "int64")}, "start (input 0)", [2]),
])
def test_a_scalar_operand_of_another_size_is_refused_naming_it(op, ins, inits, what, shape):
    # every compile-time scalar operand is read by one importer method, which refuses a tensor of
    # more or fewer than one element (an empty ratio once raised IndexError, a two-element min
    # ValueError)
    refused([node(op, ins, "y")], {"x": rand(2, 3)}, ["y"],
            rf"{op} node '{op}_y': {re.escape(what)} has shape {re.escape(str(shape))}; it must be a scalar "
            r"\(one value\)", inits=inits)


def test_a_node_onnx_finds_invalid_is_refused_with_onnx_s_own_reason():
    # a converter failing with an error of its own (the pooling converter indexing an empty
    # kernel_shape: IndexError before) asks ONNX's shape inference about the node, which names
    # what is wrong
    pool = node("MaxPool", ["x"], "y", auto_pad="SAME_UPPER")
    pool.attribute.append(helper.make_attribute("kernel_shape", [], attr_type=onnx.AttributeProto.INTS))
    refused([pool], {"x": rand(1, 2, 4, 4)}, ["y"],
            r"MaxPool node 'MaxPool_y' is not a valid ONNX node \(ONNX's shape inference: Attribute kernel_shape has "
            r"incorrect size\); fix the model")


def test_a_converter_failing_on_a_valid_node_is_reported_as_tecc_s_fault(monkeypatch):
    from tecc.graph.frontend.onnx import converters

    def broken(ctx, node, inputs):
        return [1, 2][5]

    monkeypatch.setitem(converters._CONVERTERS, "Relu", broken)
    model = make_model([node("Relu", ["x"], "y")], {"x": rand(2, 3)}, ["y"])
    with pytest.raises(OnnxImportError, match=r"Relu node 'Relu_y': tecc's importer failed converting this node "
                                              r"\(IndexError: list index out of range\), which ONNX's shape inference "
                                              r"accepts: a fault of tecc's, please report it") as info:
        from_onnx(model)
    assert info.value.internal and isinstance(info.value.__cause__, IndexError)


def test_take_from_an_empty_axis_is_refused_naming_it():
    # (numpy's fold of it raised IndexError: a SoftmaxCrossEntropyLoss of an empty weight)
    refused([node("Gather", ["table", "i"], "y")], {"i": np.array([0, 1], "int64")}, ["y"],
            r"Gather node 'Gather_y': take: axis 0 of the data \(shape \[0, 3\]\) is empty; its 2 indices pick nothing",
            inits={"table": np.zeros((0, 3), "float32")})


def _constant_of_shape(shape):
    cos = helper.make_node("ConstantOfShape", ["s"], ["c"], value=numpy_helper.from_array(np.array([2.0], "float32")),
                           name="fill")
    graph = helper.make_graph([cos], "huge", [], [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.array(shape, "int64"), "s")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_huge_constant_of_shape_is_filled_by_the_graph_not_held_as_a_constant():
    # (a 2^40-element constant was made with numpy when importing: ValueError)
    mod, _ = from_onnx(_constant_of_shape([1 << 18, 1 << 18]))
    body = mod["main"].body
    assert isinstance(body, g.Call) and body.op.name == "full" and tuple(body.checked_type.shape) == (1 << 18, 1 << 18)


def test_a_tensor_larger_than_any_machine_holds_is_refused_naming_the_node():
    # (4 TiB: constant folding would run a kernel over 2^40 elements for hours)
    with pytest.raises(OnnxImportError, match=r"ConstantOfShape node 'fill': its output full would be a tensor of "
                                              r"shape \[1048576, 1048576\]: 4.4e\+12 bytes, more than the 1 TiB tecc "
                                              r"compiles for; check the sizes that decide it"):
        from_onnx(_constant_of_shape([1 << 20, 1 << 20]))


@pytest.mark.parametrize("op, attrs, value", [
    ("ReduceSum", "keepdims", 5), ("ArgMax", "keepdims", -1), ("MaxPool", "ceil_mode", 2), ("Trilu", "upper", 5),
])
def test_a_flag_attribute_other_than_0_or_1_is_refused(op, attrs, value):
    # onnxruntime reads such values differently from operator to operator (its reductions keep
    # dimensions only for 1, its Unique sorts for anything but 0): tecc took any nonzero as true
    extra = dict(kernel_shape=[2, 2]) if op == "MaxPool" else {}
    refused([node(op, ["x"], "y", **{attrs: value}, **extra)], {"x": rand(1, 2, 4, 4)}, ["y"],
            rf"{op} node '{op}_y': attribute '{attrs}' is {value}; it must be 0 or 1", opset=14)


def test_squeeze_of_empty_axes_squeezes_every_axis_of_size_one_as_onnxruntime():
    # (an empty axes tensor squeezed nothing before)
    check([node("Squeeze", ["x", "axes"], "y")], {"x": rand(1, 3, 1, 2)}, ["y"], inits={"axes": np.zeros(0, "int64")})


@pytest.mark.parametrize("scale_shape, bias_shape", [((), (5,)), ((1, 5), ()), ((4, 1), (1,))])
def test_layer_normalization_broadcasts_its_scale_and_bias_as_onnxruntime(scale_shape, bias_shape):
    # (a scalar scale was refused: reshape of () to (20,))
    check([node("LayerNormalization", ["x", "w", "b"], "y", axis=-2)], {"x": rand(3, 4, 5)}, ["y"],
          inits={"w": rand(*scale_shape, seed=1) + 1.5, "b": rand(*bias_shape, seed=2)}, opset=17)


def test_layer_normalization_refuses_a_scale_that_does_not_broadcast():
    refused([node("LayerNormalization", ["x", "w"], "y")], {"x": rand(3, 4, 5)}, ["y"],
            r"LayerNormalization node 'LayerNormalization_y': Scale \(input 1\) has shape \[4\]; it must broadcast to "
            r"the normalized axes' shape \[5\]", inits={"w": rand(4)}, opset=17)
