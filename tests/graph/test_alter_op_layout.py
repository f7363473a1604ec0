"""AlterOpLayout: convolutions in channel blocks on CPU targets (the rewrite against
the graph expected, built by hand; the blocked model against the unaltered one; the
operators it relies on; and what it leaves alone)."""
import importlib
import os
import warnings

import numpy as np
import pytest

import tecc
from tecc import graph as G
from tecc import topi
from tecc.graph import Constant, TensorType, Tuple, Var, call, const
from tecc.graph.analysis import structural_equal
from tecc.graph.build import build
from tecc.graph.ir import GraphError
from tecc.graph.transform import AlterOpLayout, infer_type

alter = importlib.import_module("tecc.graph.transform.alter_op_layout")

RNG = np.random.default_rng(11)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _mod(params, body):
    mod = G.Module.from_expr(G.Function(params, body))
    infer_type(mod)
    return mod


def _alter(mod, target="llvm"):
    with tecc.target.Target(target):
        out = alter.alter_op_layout(mod)
    infer_type(out)
    return out


def _blocks(channels):
    with tecc.target.Target("llvm"):
        return topi.x86.nchwc_block(channels)


def _blocked(b):
    return f"NCHW{b}c"


# ---------------------------------------------------------------------------------------
# the rewrite
# ---------------------------------------------------------------------------------------
def test_a_conv_chain_runs_blocked_between_its_convolutions():
    x = Var("x", TensorType((1, 3, 16, 16)))
    w1, b1, w2 = _rand(32, 3, 3, 3), _rand(32), _rand(32, 32, 1, 1)
    y = call("nn.relu", call("nn.bias_add", call("nn.conv2d", x, Constant(w1), padding=(1, 1)), Constant(b1),
                             axis=1))
    z = call("add", call("nn.conv2d", y, Constant(w2)), y)
    out = _alter(_mod([x], z))
    ob = _blocks(32)
    assert ob is not None
    # expected: the image's 3 channels one block; y stays blocked for the 1x1 conv and the residual add;
    # one transform back to NCHW for the output
    p = out["main"].params[0]
    xb = call("layout_transform", p, src_layout="NCHW", dst_layout="NCHW3c")
    wb1 = call("layout_transform", Constant(w1), src_layout="OIHW", dst_layout=f"OIHW3i{ob}o")
    conv1 = call("nn.contrib_conv2d_NCHWc", xb, wb1, padding=(1, 1), data_layout="NCHW3c",
                 kernel_layout=f"OIHW3i{ob}o", out_layout=_blocked(ob), out_dtype="float32")
    bias = call("layout_transform", call("reshape", Constant(b1), newshape=(1, 32, 1, 1)), src_layout="NCHW",
                dst_layout=_blocked(ob))
    yb = call("nn.relu", call("add", conv1, bias))
    wb2 = call("layout_transform", Constant(w2), src_layout="OIHW", dst_layout=f"OIHW{ob}i{ob}o")
    conv2 = call("nn.contrib_conv2d_NCHWc", yb, wb2, data_layout=_blocked(ob), kernel_layout=f"OIHW{ob}i{ob}o",
                 out_layout=_blocked(ob), out_dtype="float32")
    expected = call("layout_transform", call("add", conv2, yb), src_layout=_blocked(ob), dst_layout="NCHW")
    assert structural_equal(out["main"].body, expected), out.astext()
    assert out["main"].body.checked_type == TensorType((1, 32, 16, 16))


def test_pools_concat_and_scalars_stay_blocked_and_other_consumers_read_nchw():
    x = Var("x", TensorType((1, 16, 8, 8)))
    a = call("nn.conv2d", x, Constant(_rand(16, 16, 1, 1)))
    b = call("nn.conv2d", x, Constant(_rand(16, 16, 3, 3)), padding=(1, 1))
    c = call("multiply", call("concatenate", Tuple([a, b]), axis=1), const(np.float32(0.5)))
    pooled = call("nn.max_pool2d", c, pool_size=(2, 2), strides=(2, 2))
    g = call("nn.global_avg_pool2d", pooled)
    flat = call("reshape", g, newshape=(1, 32))
    out = _alter(_mod([x], Tuple([flat, a])))
    text = out.astext()
    names = [n.op.name for n in G.ir.post_order(out["main"].body) if isinstance(n, G.Call)]
    assert names.count("nn.contrib_conv2d_NCHWc") == 2
    assert "nn.conv2d(" not in text
    block = _blocks(16)
    assert f'layout="{_blocked(block)}"' in text  # both poolings blocked
    # back to NCHW: before the reshape and for the output a; the input once, for both convolutions
    assert names.count("layout_transform") == 3 + 2  # + the two weights
    assert out["main"].body.checked_type.fields[0] == TensorType((1, 32))


def test_operands_blocked_differently_or_broadcast_larger_fall_back_to_nchw():
    x = Var("x", TensorType((1, 8, 4, 4)))
    a = call("nn.conv2d", x, Constant(_rand(8, 8, 1, 1)))
    wide = Var("wide", TensorType((2, 8, 4, 4)))
    # the blocked value would be broadcast along N: the add runs in NCHW
    out = _alter(_mod([x, wide], call("add", a, wide)))
    body = out["main"].body
    assert body.op.name == "add" and body.args[0].op.name == "layout_transform"
    assert body.checked_type == TensorType((2, 8, 4, 4))


def test_what_alter_op_layout_leaves_alone():
    x = Var("x", TensorType((1, 8, 6, 6)))
    w = Var("w", TensorType((8, 8, 3, 3)))
    cases = [
        call("nn.conv2d", x, w),                                        # a weight that is not a constant
        call("nn.conv2d", x, Constant(_rand(8, 2, 3, 3)), groups=4),    # grouped
        call("nn.conv2d", call("cast", x, dtype="float16"), Constant(_rand(8, 8, 3, 3).astype("float16"))),
    ]
    for body in cases:
        mod = _mod([x, w], body)
        assert _alter(mod) is mod
    # other targets: no change, even for a convolution that qualifies
    mod = _mod([x], call("nn.conv2d", x, Constant(_rand(8, 8, 3, 3))))
    assert _alter(mod, "cuda") is mod
    with tecc.transform.PassContext(opt_level=2), tecc.target.Target("llvm"):
        assert AlterOpLayout()(mod) is mod  # opt_level 3


def test_nchwc_block_policy():
    """Two vectors of channels where they divide, else one; a 3-channel image gets
    none (the pass blocks it whole)."""
    with tecc.target.Target("llvm -mcpu=core-avx2"):  # 8 float32 lanes
        assert [topi.x86.nchwc_block(c) for c in (3, 8, 16, 48, 64, 1000, 1001)] == [None, 8, 16, 16, 16, 8, None]
        # a convolution's outputs: padded up to 16-channel blocks when that adds at most 1/16 of them
        assert [topi.x86.nchwc_out_block(c) for c in (3, 24, 64, 1000, 1001)] == [None, (8, 24), (16, 64),
                                                                                (16, 1008), (16, 1008)]
    with tecc.target.Target("llvm -mcpu=skylake-avx512"):  # 16 float32 lanes: two vectors are 32 channels
        assert [topi.x86.nchwc_block(c) for c in (3, 16, 32, 48, 64, 1000)] == [None, 16, 32, 16, 32, None]
        assert [topi.x86.nchwc_out_block(c) for c in (64, 1000)] == [(32, 64), (32, 1024)]
    with tecc.target.Target("llvm"):  # no -mcpu: 16-byte vectors
        assert [topi.x86.nchwc_block(c) for c in (3, 8, 64, 6)] == [None, 4, 4, None]


# ---------------------------------------------------------------------------------------
# numerics: the blocked model against the same model built without the pass
# ---------------------------------------------------------------------------------------
def _small_cnn():
    x = Var("x", TensorType((1, 3, 20, 20)))
    y = call("nn.relu", call("nn.bias_add", call("nn.conv2d", x, Constant(_rand(16, 3, 3, 3)), strides=(2, 2),
                                                 padding=(1, 1)), Constant(_rand(16)), axis=1))
    y = call("nn.max_pool2d", y, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    s = call("nn.relu", call("nn.conv2d", y, Constant(_rand(8, 16, 1, 1))))
    e1 = call("nn.relu", call("nn.conv2d", s, Constant(_rand(16, 8, 1, 1))))
    e3 = call("nn.relu", call("nn.conv2d", s, Constant(_rand(16, 8, 3, 3)), padding=(1, 1)))
    c = call("concatenate", Tuple([e1, e3]), axis=1)
    r = call("add", call("nn.conv2d", c, Constant(_rand(32, 32, 3, 3)), padding=(0, 1, 2, 3), dilation=(1, 2)),
             call("multiply", c, Constant(_rand(1, 32, 1, 1))))
    g = call("nn.global_avg_pool2d", call("clip", r, a_min=-1.0, a_max=1.0))
    d = call("nn.dense", call("reshape", g, newshape=(1, 32)), Constant(_rand(10, 32)))
    return G.Module.from_expr(G.Function([x], Tuple([d, y])))


def _run(mod, disabled=(), x=None):
    from tecc.contrib import graph_executor  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tecc.transform.PassContext(opt_level=3, disabled_pass=list(disabled)):
            factory = build(mod, target="llvm")
    gmod = graph_executor.GraphModule(factory["default"](tecc.cpu(0)))
    gmod.set_input("x", X if x is None else x)
    gmod.run()
    return factory, [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]


X = RNG.standard_normal((1, 3, 20, 20)).astype("float32")


def test_the_blocked_model_matches_the_unaltered_one():
    mod = _small_cnn()
    factory, got = _run(mod)
    _, want = _run(mod, disabled=["AlterOpLayout"])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    graph = factory.get_graph_json()
    assert "contrib_conv2d_NCHWc" in graph
    # the weights were re-laid out at build time: every param of a blocked conv is 6-D
    shapes = [np.asarray(v).shape for v in factory.get_params().values()]
    assert any(len(s) == 6 for s in shapes) and not any(len(s) == 4 and s[2:] == (3, 3) for s in shapes)


def test_padded_channels_stay_finite_and_are_sliced_off():
    """34 output channels under a 4-lane target: 9 blocks of 4, the last two channels
    padded (zero weights and bias).  Consumers that keep them finite stay blocked; a
    division (0 / 0 there) and a concatenate read them back in NCHW, sliced."""
    x = Var("x", TensorType((1, 8, 6, 6)))
    y = call("nn.relu", call("nn.bias_add", call("nn.conv2d", x, Constant(_rand(34, 8, 3, 3)), padding=(1, 1)),
                             Constant(_rand(34)), axis=1))
    z = call("nn.conv2d", call("nn.max_pool2d", y, pool_size=(2, 2), strides=(2, 2)), Constant(_rand(8, 34, 1, 1)))
    q = call("divide", y, Constant(RNG.uniform(1, 2, (1, 34, 1, 1)).astype("float32")))
    c = call("concatenate", Tuple([y, x]), axis=1)
    g = call("nn.global_avg_pool2d", y)
    mod = G.Module.from_expr(G.Function([x], Tuple([z, q, c, g])))
    altered = _alter(_mod([x], mod["main"].body))
    names = [n.op.name for n in G.ir.post_order(altered["main"].body) if isinstance(n, G.Call)]
    assert names.count("nn.contrib_conv2d_NCHWc") == 2 and names.count("strided_slice") == 2
    conv = next(n for n in G.ir.post_order(altered["main"].body)
                if isinstance(n, G.Call) and n.op.name == "nn.contrib_conv2d_NCHWc")
    assert conv.checked_type == TensorType((1, 9, 6, 6, 4))  # 36 channels computed for 34
    assert [f.shape for f in altered["main"].body.checked_type.fields] == [(1, 8, 3, 3), (1, 34, 6, 6),
                                                                            (1, 42, 6, 6), (1, 34, 1, 1)]
    x_value = RNG.standard_normal((1, 8, 6, 6)).astype("float32")
    got = _run(mod, x=x_value)[1]
    want = _run(mod, disabled=["AlterOpLayout"], x=x_value)[1]
    for g_, w_ in zip(got, want):
        assert np.isfinite(g_).all()
        np.testing.assert_allclose(g_, w_, rtol=1e-4, atol=1e-4)


def _conv_ops(mod):
    return [n.op.name for n in G.ir.post_order(mod["main"].body)
            if isinstance(n, G.Call) and "conv2d" in n.op.name]


def test_wide_3x3_stride_1_convolutions_become_winograd():
    """128 channels and more, 3x3, stride 1: Winograd, its weight transformed at
    build time (G g G^T, a constant); a strided one, a 1x1 one and a narrow one stay
    direct.  The model matches the unaltered one."""
    x = Var("x", TensorType((1, 128, 9, 9)))
    w = _rand(144, 128, 3, 3) * 0.05
    y = call("nn.relu", call("nn.bias_add", call("nn.conv2d", x, Constant(w), padding=(1, 1)),
                             Constant(_rand(144)), axis=1))
    z = call("add", call("nn.conv2d", y, Constant(_rand(144, 144, 3, 3) * 0.05), strides=(2, 2), padding=(1, 1)),
             call("nn.conv2d", y, Constant(_rand(144, 144, 1, 1) * 0.05), strides=(2, 2)))
    narrow = call("nn.conv2d", z, Constant(_rand(64, 144, 1, 1) * 0.05))
    out = call("nn.conv2d", narrow, Constant(_rand(64, 64, 3, 3) * 0.05), padding=(1, 1))
    mod = _mod([x], out)
    altered = _alter(mod)
    assert _conv_ops(altered) == ["nn.contrib_conv2d_NCHWc_winograd"] + ["nn.contrib_conv2d_NCHWc"] * 4
    wino = next(n for n in G.ir.post_order(altered["main"].body)
                if isinstance(n, G.Call) and n.op.name == "nn.contrib_conv2d_NCHWc_winograd")
    ib, ob = _blocks(128), _blocks(144)
    assert isinstance(wino.args[1], Constant)
    np.testing.assert_allclose(wino.args[1].data, topi.nn.winograd_weight_nchwc(w, ib, ob), rtol=1e-6)
    assert wino.attrs["kernel_layout"] == f"WINOGRAD4x4OI{ib}i{ob}o"
    value = RNG.standard_normal((1, 128, 9, 9)).astype("float32")
    got = _run(mod, x=value)[1][0]
    want = _run(mod, disabled=["AlterOpLayout"], x=value)[1][0]
    # float32 sums in another order: differences of a few ulps of the largest values
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_winograd_can_be_disabled():
    x = Var("x", TensorType((1, 128, 6, 6)))
    mod = _mod([x], call("nn.conv2d", x, Constant(_rand(128, 128, 3, 3)), padding=(1, 1)))
    with tecc.transform.PassContext(config={"graph.disable_winograd": True}):
        assert _conv_ops(_alter(mod)) == ["nn.contrib_conv2d_NCHWc"]
    with tecc.transform.PassContext(config={"graph.disable_winograd": "yes"}):
        with pytest.raises(tecc.errors.TeccTypeError, match="'graph.disable_winograd' must be a bool"):
            _alter(mod)


def test_winograd_pads_channels_to_whole_blocks():
    """130 output channels in blocks of 4 (a 4-lane target): the transformed weight
    has 33 blocks, the last two channels zero, and the next Winograd layer reads
    them with zero weights."""
    x = Var("x", TensorType((1, 128, 6, 6)))
    y = call("nn.conv2d", x, Constant(_rand(130, 128, 3, 3) * 0.05), padding=(1, 1))
    z = call("nn.conv2d", y, Constant(_rand(128, 130, 3, 3) * 0.05), padding=(1, 1))
    mod = _mod([x], z)
    altered = _alter(mod, "llvm -mcpu=generic")
    convs = [n for n in G.ir.post_order(altered["main"].body)
             if isinstance(n, G.Call) and n.op.name == "nn.contrib_conv2d_NCHWc_winograd"]
    assert len(convs) == 2
    assert convs[0].args[1].data.shape == (4, 4, 33, 32, 4, 4)
    assert not convs[0].args[1].data[:, :, 32, :, :, 2:].any()
    value = RNG.standard_normal((1, 128, 6, 6)).astype("float32")
    want = _run(mod, disabled=["AlterOpLayout"], x=value)[1][0]
    np.testing.assert_allclose(_run(mod, x=value)[1][0], want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def _dense_ops(mod):
    return [n.op.name for n in G.ir.post_order(mod["main"].body)
            if isinstance(n, G.Call) and n.op.name in ("nn.dense", "nn.contrib_dense_pack")]


def test_dense_layers_that_pack_their_weight_get_it_packed_once():
    """From PACK_MIN_BATCH rows on, a dense layer with a constant weight reads it
    packed at build time (NC{nr}n, the panel width of the layer's config); fewer
    rows, a weight that is an input, or panels past N stay nn.dense.  The model
    matches the unaltered one, and its kernels pack nothing."""
    x = Var("x", TensorType((16, 24)))
    w1, w2 = _rand(64, 24), _rand(40, 64)
    y = call("nn.relu", call("nn.bias_add", call("nn.dense", x, Constant(w1)), Constant(_rand(64)), axis=1))
    few = call("nn.dense", call("strided_slice", y, begin=(0,), end=(4,), axes=(0,)), Constant(_rand(8, 64)))
    mod = _mod([x], Tuple([call("nn.dense", y, Constant(w2)), few]))
    with tecc.target.Target("llvm"):
        nr = int(topi.x86.dense(tecc.te.placeholder((16, 24)), tecc.te.placeholder((64, 24))).op.attrs["nr"])
    altered = _alter(mod)
    assert 64 % nr == 0
    ops = _dense_ops(altered)
    assert ops.count("nn.contrib_dense_pack") >= 1 and ops.count("nn.dense") >= 1  # the 4-row one stays
    packed = next(n for n in G.ir.post_order(altered["main"].body)
                  if isinstance(n, G.Call) and n.op.name == "nn.contrib_dense_pack" and n.checked_type.shape[1] == 64)
    assert packed.attrs["weight_layout"] == f"NC{nr}n"
    np.testing.assert_array_equal(packed.args[1].data, w1.reshape(64 // nr, nr, 24).transpose(0, 2, 1))
    value = RNG.standard_normal((16, 24)).astype("float32")
    factory, got = _run(mod, x=value)
    want = _run(mod, disabled=["AlterOpLayout"], x=value)[1]
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-5)
    assert "T_dense_pack_weight" not in factory.get_lib().get_source().split("fused_nn_contrib_dense_pack")[-1]
    # the weight an input of the model: left alone
    wv = Var("w", TensorType((64, 24)))
    assert _dense_ops(_alter(_mod([x, wv], call("nn.dense", x, wv)))) == ["nn.dense"]


# ---------------------------------------------------------------------------------------
# the operators it makes
# ---------------------------------------------------------------------------------------
def test_layout_transform_and_blocked_pooling_operators():
    from ops_run import run_op  # noqa: PLC0415

    a = _rand(1, 16, 6, 6)
    blocked = run_op("layout_transform", [a], dict(src_layout="NCHW", dst_layout="NCHW8c"))
    np.testing.assert_array_equal(blocked, topi.testing.layout_transform_python(a, "NCHW", "NCHW8c"))
    pooled = run_op("nn.max_pool2d", [blocked], dict(pool_size=(2, 2), strides=(2, 2), layout="NCHW8c"))
    want = a.reshape(1, 16, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(topi.testing.layout_transform_python(pooled, "NCHW8c", "NCHW"), want)
    mean = run_op("nn.global_avg_pool2d", [blocked], dict(layout="NCHW8c"))
    np.testing.assert_allclose(topi.testing.layout_transform_python(mean, "NCHW8c", "NCHW"),
                               a.mean(axis=(2, 3), keepdims=True), rtol=1e-5)


def _winograd_call(x, weight_shape, **attrs):
    attrs = dict(dict(data_layout="NCHW4c", kernel_layout="WINOGRAD4x4OI4i4o", out_layout="NCHW4c", padding=(1, 1)),
                 **attrs)
    data = call("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    return call("nn.contrib_conv2d_NCHWc_winograd", data, Constant(_rand(*weight_shape)), **attrs)


@pytest.mark.parametrize("build_call, message", [
    (lambda x: call("layout_transform", x, src_layout="NCHW", dst_layout="NHW8c"),
     "layout_transform: .*'NHW8c' splits 'C' but has no axis 'C'"),
    (lambda x: call("layout_transform", x, src_layout="NCW", dst_layout="NCW4c"),
     "layout_transform: .*'NCW' has 3 axes but the tensor has rank 4"),
    (lambda x: call("nn.max_pool2d", x, layout="NCHW8c"), r"nn.max_pool2d: data must be 5-D"),
    (lambda x: call("nn.max_pool2d", x, layout="NCWH"), r"'layout' = 'NCWH' is not one of 'NCHW', 'NHWC'"),
    (lambda x: call("nn.contrib_conv2d_NCHWc", call("layout_transform", x, src_layout="NCHW",
                                                    dst_layout="NCHW4c"), Constant(_rand(2, 2, 3, 3, 8, 4)),
                    data_layout="NCHW4c", kernel_layout="OIHW8i4o", out_layout="NCHW4c"),
     "kernel_layout 'OIHW8i4o' does not block the channels as data_layout 'NCHW4c'"),
    (lambda x: call("nn.contrib_conv2d_NCHWc", call("layout_transform", x, src_layout="NCHW",
                                                    dst_layout="NCHW4c"), Constant(_rand(2, 3, 3, 3, 4, 4)),
                    data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NCHW4c"),
     "data has 2 input-channel blocks but the weight"),
    (lambda x: call("nn.contrib_conv2d_NCHWc", call("layout_transform", x, src_layout="NCHW",
                                                    dst_layout="NCHW4c"), Constant(_rand(2, 2, 3, 3, 4, 4)),
                    data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NCHW"),
     "the layouts must be data_layout 'NCHW{i}c'"),
    (lambda x: _winograd_call(x, (4, 4, 2, 2, 4, 4), kernel_layout="OIHW4i4o"),
     r"kernel_layout 'WINOGRAD4x4OI\{i\}i\{o\}o'"),
    (lambda x: _winograd_call(x, (4, 4, 2, 2, 4, 4), strides=(2, 2)), r"needs strides \(1, 1\)"),
    (lambda x: _winograd_call(x, (4, 2, 2, 4, 4)), "the transformed weight must be 6-D"),
    (lambda x: _winograd_call(x, (3, 3, 2, 2, 4, 4)), r"the weight must be \[4, 4, O // 4, 2, 4, 4\]"),
    (lambda x: _winograd_call(x, (4, 4, 2, 3, 4, 4)), "do not match"),
    (lambda x: call("nn.contrib_dense_pack", call("reshape", x, newshape=(8, 36)), Constant(_rand(2, 36, 8)),
                    weight_layout="NC4n"),
     r"nn.contrib_dense_pack: weight_layout 'NC4n' must be 'NC\{nr\}n' with nr the packed weight's last "
     r"dimension \(8\)"),
    (lambda x: call("nn.contrib_dense_pack", call("reshape", x, newshape=(8, 36)), Constant(_rand(2, 30, 8)),
                    weight_layout="NC8n"),
     r"nn.contrib_dense_pack: .*disagree on K \(the weight is \[N / nr, K, nr\]\)"),
    (lambda x: call("nn.contrib_dense_pack", call("reshape", x, newshape=(8, 36)), Constant(_rand(36, 16)),
                    weight_layout="NC16n"),
     r"nn.contrib_dense_pack: the packed weight \[N / nr, K, nr\] must be 3-D"),
])
def test_layout_operator_errors(build_call, message):
    x = Var("x", TensorType((1, 8, 6, 6)))
    with pytest.raises(GraphError, match=message):
        _mod([x], build_call(x))


# ---------------------------------------------------------------------------------------
# random small CNNs: blocked against unaltered
# ---------------------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def _cnns(draw):
    """A chain of layers over a (1, c, h, w) input: convolutions of random channel
    counts (whole 4-channel blocks, padded ones, odd ones), kernels, strides and
    paddings, mixed with the consumers AlterOpLayout keeps blocked (bias, relu, clip,
    residual adds, per-channel and scalar products, poolings, channel concats) and
    ones it does not (a division, a reshape, a grouped convolution)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    c, size = draw(st.sampled_from([3, 4, 8])), draw(st.integers(6, 11))
    x = Var("x", TensorType((1, c, size, size)))
    value, shape = x, (1, c, size, size)
    values = [(value, shape)]
    for i in range(draw(st.integers(2, 6))):
        kind = "conv" if i == 0 else draw(st.sampled_from(["conv", "conv", "conv", "relu", "bias", "add", "mul",
                                                           "div", "pool", "concat", "clip", "gconv", "reshape"]))
        n, c, h, w = shape
        if kind == "conv":
            f = draw(st.sampled_from([4, 8, 12, 6, 17, 34]))
            k, s = draw(st.sampled_from([1, 3])), draw(st.sampled_from([1, 2]))
            p = draw(st.sampled_from([0, 1])) if k == 3 else 0
            if (h + 2 * p - k) // s + 1 < 1:
                continue
            weight = Constant(rng.standard_normal((f, c, k, k)).astype("float32") * 0.3)
            value = call("nn.conv2d", value, weight, strides=(s, s), padding=(p, p))
            shape = (n, f, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1)
        elif kind == "relu":
            value = call("nn.relu", value)
        elif kind == "clip":
            value = call("clip", value, a_min=-0.5, a_max=0.5)
        elif kind == "bias":
            value = call("nn.bias_add", value, Constant(rng.standard_normal(c).astype("float32")), axis=1)
        elif kind == "mul":
            factor = rng.standard_normal(draw(st.sampled_from([(1, c, 1, 1), (c, 1, 1), ()]))).astype("float32")
            value = call("multiply", value, Constant(np.asarray(factor, "float32")))
        elif kind == "div":
            value = call("divide", value, Constant(rng.uniform(1, 2, (1, c, 1, 1)).astype("float32")))
        elif kind == "add":
            same = [v for v, s in values if s == shape]
            value = call("add", value, same[draw(st.integers(0, len(same) - 1))])
        elif kind == "pool" and h >= 2 and w >= 2:
            value = call("nn.max_pool2d" if draw(st.booleans()) else "nn.avg_pool2d", value, pool_size=(2, 2),
                         strides=(2, 2))
            shape = (n, c, h // 2, w // 2)
        elif kind == "concat":
            same = [v for v, s in values if s[2:] == shape[2:]]
            other = same[draw(st.integers(0, len(same) - 1))]
            value = call("concatenate", Tuple([value, other]), axis=1)
        elif kind == "gconv" and c % 2 == 0:
            weight = Constant(rng.standard_normal((c, 2, 1, 1)).astype("float32"))
            value = call("nn.conv2d", value, weight, groups=c // 2)
        elif kind == "reshape":
            value = call("reshape", call("reshape", value, newshape=(1, -1)), newshape=shape)
        value = infer_type(G.Module.from_expr(G.Function([x], value)))["main"].body
        shape = tuple(value.checked_type.shape)
        values.append((value, shape))
    head = call("nn.global_avg_pool2d", value) if draw(st.booleans()) else value
    return G.Module.from_expr(G.Function([x], Tuple([head, values[len(values) // 2][0]]))), (1,) + values[0][1][1:]


EXAMPLES = int(os.environ.get("TECC_FUZZ_EXAMPLES", "0"))


@settings(max_examples=EXAMPLES or 25, derandomize=not EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=_cnns())
def test_random_cnns_blocked_match_unaltered(case):
    mod, in_shape = case
    x_value = RNG.standard_normal(in_shape).astype("float32")
    factory, got = _run(mod, x=x_value)
    want = _run(mod, disabled=["AlterOpLayout"], x=x_value)[1]
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_, rtol=1e-4, atol=1e-4)
    ALTERED.append("contrib_conv2d_NCHWc" in factory.get_graph_json())


ALTERED = []


def test_random_cnns_do_run_blocked():
    """The random models above do exercise the pass (most have a blocked convolution)."""
    if not ALTERED:
        test_random_cnns_blocked_match_unaltered()
    assert sum(ALTERED) >= len(ALTERED) // 2, ALTERED


def test_a_packed_dense_weight_is_a_cpu_layout():
    x = Var("x", TensorType((8, 16)))
    mod = _mod([x], call("nn.contrib_dense_pack", x, Constant(_rand(2, 16, 8)), weight_layout="NC8n"))
    with pytest.raises(GraphError, match=r"nn.contrib_dense_pack: a weight packed in NC\{nr\}n panels is a CPU "
                                         r"layout \(AlterOpLayout makes it for CPU targets\); build for llvm"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build(mod, target="cuda")


# ---------------------------------------------------------------------------------------
# the user's layout alterations (TVM's relay.op.register_alter_op_layout)
# ---------------------------------------------------------------------------------------
@pytest.fixture
def own_alterations():
    """The registry as it was, back after the test (registrations are global)."""
    saved = dict(alter.ALTER_FUNCTIONS)
    yield alter.ALTER_FUNCTIONS
    alter.ALTER_FUNCTIONS.clear()
    alter.ALTER_FUNCTIONS.update(saved)


def _conv_model():
    """conv2d of a weight given as an input (no constant: tecc's own rule leaves it),
    plus a constant, as TVM's use_pass_infra tutorial builds it."""
    x = Var("x", TensorType((1, 16, 10, 10)))
    w = Var("w", TensorType((16, 16, 3, 3)))
    c = const(_rand(1, 16, 8, 8))
    return _mod([x, w], call("add", call("nn.conv2d", x, w), c))


def test_a_registered_alteration_blocks_a_convolution_as_tvms_tutorial_does(own_alterations):
    from tecc import relay

    seen = []

    @relay.op.register_alter_op_layout("nn.conv2d", level=101)
    def to_blocks(attrs, inputs, tinfos, out_type):
        seen.append((attrs["data_layout"], [t.shape for t in tinfos], out_type.shape))
        data, weight = inputs
        new_attrs = dict(attrs)
        new_attrs["data_layout"] = "NCHW16c"
        return relay.nn.conv2d(data, weight, **new_attrs)

    mod = _conv_model()
    for target in ("llvm", "cuda"):  # the user's rule applies on every target
        text = str(_alter(mod, target)["main"])
        assert 'nn.contrib_conv2d_NCHWc(' in text and 'dst_layout="NCHW16c"' in text
        assert 'src_layout="NCHW16c", dst_layout="NCHW"' in text  # the output back in NCHW
    assert seen[0] == ("NCHW", [(1, 16, 10, 10), (16, 16, 3, 3)], (1, 16, 8, 8))
    x, w = _rand(1, 16, 10, 10), _rand(16, 16, 3, 3)
    outs = []
    for disabled in ([], ["AlterOpLayout"]):
        with warnings.catch_warnings(), tecc.transform.PassContext(opt_level=3, disabled_pass=disabled):
            warnings.simplefilter("ignore")
            factory = build(mod, target="llvm")
        gm = tecc.contrib.graph_executor.GraphModule(factory["default"](tecc.cpu(0)))
        gm.set_input("x", x)
        gm.set_input("w", w)
        gm.run()
        outs.append(gm.get_output(0).numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)


def test_a_registered_alteration_may_decline_and_a_lower_level_does_not_replace(own_alterations):
    from tecc import relay

    calls = []
    relay.op.register_alter_op_layout("nn.conv2d", lambda *a: calls.append("high"), level=20)
    relay.op.register_alter_op_layout("nn.conv2d", lambda *a: calls.append("low"), level=5)
    mod = _conv_model()
    assert structural_equal(_alter(mod, "cuda")["main"], mod["main"])  # declined (None): left as it was
    assert calls == ["high"]
    with pytest.raises(GraphError, match=r"nn\.conv3x3"):
        relay.op.register_alter_op_layout("nn.conv3x3", lambda *a: None)
