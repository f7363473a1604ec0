"""The graph passes, each against the graph expected (built by hand), and the pass
objects over tecc's pass engine."""
import numpy as np
import pytest

import tecc
from tecc import graph as G
from tecc.graph import Constant, TensorType, TupleGetItem, Var, call, const
from tecc.graph.analysis import structural_equal
from tecc.graph.transform import (
    DeadCodeElimination, EliminateCommonSubexpr, FoldConstant, FoldScaleAxis, FuseOps, InferType, Sequential,
    SimplifyInference, dead_code_elimination, eliminate_common_subexpr, fold_constant, fold_scale_axis,
    simplify_inference,
)
from tecc.tir.transform.pipeline import PassConfigError

RNG = np.random.default_rng(7)


def _mod(params, body):
    return G.Module.from_expr(G.Function(params, body))


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ---------------------------------------------------------------------------------------
# structural equality
# ---------------------------------------------------------------------------------------
def test_structural_equal_tells_apart():
    x, y = Var("x", TensorType((4,))), Var("y", TensorType((4,)))
    assert structural_equal(call("add", x, const(1.0)), call("add", x, const(1.0)))
    assert not structural_equal(call("add", x, const(1.0)), call("add", x, const(2.0)))
    assert not structural_equal(call("add", x, y), call("add", y, x))
    assert structural_equal(call("add", x, y), call("add", y, x), map_free_vars=True) is True
    assert not structural_equal(call("sum", x, axis=(0,)), call("sum", x, axis=(0,), keepdims=True))
    shared = call("exp", x)
    assert not structural_equal(call("add", shared, shared), call("add", call("exp", x), call("exp", x)))


# ---------------------------------------------------------------------------------------
# constant folding
# ---------------------------------------------------------------------------------------
def test_fold_constant_computes_weight_transforms():
    x = Var("x", TensorType((2, 3)))
    a, b = _rand(2, 3), _rand(2, 3)
    folded_part = call("multiply", call("exp", Constant(a)), Constant(b))
    mod = _mod([x], call("add", x, folded_part))
    out = fold_constant(mod)
    body = out["main"].body
    expected_value = np.exp(a) * b
    assert structural_equal(body, call("add", out["main"].params[0], body.args[1]))
    assert isinstance(body.args[1], Constant)
    np.testing.assert_allclose(body.args[1].data, expected_value, rtol=1e-5)
    assert fold_constant(out) is out  # nothing left to fold


def test_fold_constant_of_a_shape_subgraph():
    x = Var("x", TensorType((2, 3, 4)))
    shape = call("shape_of", x)
    n = call("take", shape, const(np.array([1, 2], "int32")), axis=0)
    prod = call("prod", n, axis=(0,))
    out = fold_constant(_mod([x], prod))
    assert isinstance(out["main"].body, Constant)
    assert int(out["main"].body.data) == 12


def test_fold_constant_leaves_inputs_alone():
    x = Var("x", TensorType((4,)))
    mod = _mod([x], call("nn.relu", call("add", x, const(1.0))))
    assert fold_constant(mod) is mod


# ---------------------------------------------------------------------------------------
# batch norm: simplify_inference, then fold_scale_axis into the convolution
# ---------------------------------------------------------------------------------------
def _conv_bn(wdata, stats):
    x = Var("data", TensorType((1, 3, 6, 6)))
    conv = call("nn.conv2d", x, Constant(wdata), padding=(1, 1, 1, 1))
    bn = call("nn.batch_norm", conv, *[Constant(s) for s in stats], epsilon=1e-3)
    return x, _mod([x], call("nn.relu", TupleGetItem(bn, 0)))


def test_batch_norm_folds_into_conv_weights():
    w = _rand(4, 3, 3, 3)
    gamma, beta, mean = _rand(4), _rand(4), _rand(4)
    var = RNG.uniform(0.5, 2.0, 4).astype("float32")
    x, mod = _conv_bn(w, (gamma, beta, mean, var))
    simple = simplify_inference(mod)
    assert "batch_norm" not in simple.astext()
    folded = fold_constant(fold_scale_axis(fold_constant(simple)))
    body = folded["main"].body
    # expected: relu(bias_add(conv2d(data, W'), b')) with W' = W * scale, b' = beta - mean * scale
    scale = gamma / np.sqrt(var + 1e-3)
    weight, bias = body.args[0].args[0].args[1], body.args[0].args[1]
    expected = call("nn.relu", call("nn.bias_add", call("nn.conv2d", folded["main"].params[0], weight,
                                                        padding=(1, 1, 1, 1)), bias, axis=1))
    assert structural_equal(body, expected)
    np.testing.assert_allclose(weight.data, w * scale[:, None, None, None], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bias.data, beta - mean * scale, rtol=1e-5, atol=1e-6)


def test_fold_scale_axis_into_dense():
    x = Var("x", TensorType((2, 5)))
    w, s = _rand(3, 5), _rand(3)
    mod = _mod([x], call("multiply", call("nn.dense", x, Constant(w), units=3), Constant(s)))
    out = fold_constant(fold_scale_axis(mod))
    body = out["main"].body
    assert structural_equal(body, call("nn.dense", out["main"].params[0], body.args[1], units=3))
    np.testing.assert_allclose(body.args[1].data, w * s[:, None], rtol=1e-6)


def test_fold_scale_axis_through_a_dense_it_rebuilt():
    # a dense whose operand the pass rewrote (a scaled dense under it) is a new, untyped
    # node: the following per-channel add still becomes its bias (an unrolled RNN's
    # step: dense of a dense, then a constant bias) -- it raised "type not known yet"
    x = Var("x", TensorType((2, 5)))
    w1, s, w2, b = _rand(4, 5), _rand(4), _rand(3, 4), _rand(3)
    inner = call("multiply", call("nn.dense", x, Constant(w1), units=4), Constant(s))
    mod = _mod([x], call("add", call("nn.dense", inner, Constant(w2), units=3), Constant(b)))
    out = fold_constant(fold_scale_axis(mod))
    body = out["main"].body
    assert body.op.name == "nn.bias_add" and body.args[0].op.name == "nn.dense"
    xv = _rand(2, 5)
    want = ((xv @ w1.T) * s) @ w2.T + b
    got = fold_constant(G.Module({"main": G.Function(out["main"].params, body)}))
    from tecc.graph.build import build  # noqa: PLC0415
    import tecc  # noqa: PLC0415
    from tecc.contrib.graph_executor import GraphModule  # noqa: PLC0415
    gm = GraphModule(build(got, "llvm")["default"](tecc.cpu(0)))
    gm.set_input("x", xv)
    gm.run()
    np.testing.assert_allclose(gm.get_output(0).numpy(), want, rtol=1e-5, atol=1e-6)


def test_fold_scale_axis_keeps_a_shared_conv():
    x = Var("data", TensorType((1, 3, 6, 6)))
    conv = call("nn.conv2d", x, Constant(_rand(4, 3, 3, 3)), padding=(1, 1, 1, 1))
    out = G.Tuple([call("multiply", conv, Constant(_rand(4, 1, 1))), conv])
    mod = _mod([x], out)
    assert fold_scale_axis(mod) is mod


def test_dropout_is_removed():
    x = Var("x", TensorType((2, 4)))
    mod = _mod([x], call("nn.relu", TupleGetItem(call("nn.dropout", x, rate=0.3), 0)))
    out = simplify_inference(mod)
    assert structural_equal(out["main"].body, call("nn.relu", out["main"].params[0]))


# ---------------------------------------------------------------------------------------
# dead code and common subexpressions
# ---------------------------------------------------------------------------------------
def test_dead_code_elimination_drops_unused_tuple_fields_and_functions():
    x = Var("x", TensorType((4,)))
    used, unused = call("exp", x), call("log", x)
    mod = _mod([x], call("nn.relu", TupleGetItem(G.Tuple([used, unused]), 0)))
    helper = G.Function([Var("y", TensorType((4,)))], const(1.0))
    mod = G.Module({"main": mod["main"], "helper": helper})
    out = dead_code_elimination(mod)
    assert list(out.functions) == ["main"]
    assert structural_equal(out["main"].body, call("nn.relu", call("exp", out["main"].params[0])))
    assert "log" not in out.astext()
    assert dead_code_elimination(out) is out


def test_common_subexpressions_merge():
    x, y = Var("x", TensorType((4,))), Var("y", TensorType((4,)))
    a1, a2 = call("add", x, y), call("add", x, y)
    other = call("add", y, x)
    mod = _mod([x, y], G.Tuple([call("exp", a1), call("exp", a2), other, call("sum", a1, axis=(0,)),
                                call("sum", a2, axis=(0,), keepdims=True)]))
    out = eliminate_common_subexpr(mod)
    f = out["main"].body.fields
    assert f[0] is f[1]                      # same op, attrs, operands
    assert f[2] is not f[0].args[0]          # different operand order
    assert f[3].args[0] is f[4].args[0]      # operands merged ...
    assert f[3] is not f[4]                  # ... but different attrs stay apart
    assert eliminate_common_subexpr(out) is out
    skip = eliminate_common_subexpr(mod, fskip=lambda c: c.op.name == "add")
    assert skip["main"].body.fields[0].args[0] is not skip["main"].body.fields[1].args[0]


# ---------------------------------------------------------------------------------------
# pass objects over the engine
# ---------------------------------------------------------------------------------------
def _foldable():
    x = Var("x", TensorType((4,)))
    return _mod([x], call("add", x, call("exp", Constant(np.ones(4, "float32")))))


def test_opt_level_gates_passes():
    mod = _foldable()
    with tecc.transform.PassContext(opt_level=1):
        assert FoldConstant()(mod) is mod
    with tecc.transform.PassContext(opt_level=2):
        assert FoldConstant()(mod) is not mod
    with tecc.transform.PassContext(opt_level=1, required_pass=["FoldConstant"]):
        assert FoldConstant()(mod) is not mod
    with tecc.transform.PassContext(opt_level=3, disabled_pass=["fold_constant"]):
        assert FoldConstant()(mod) is mod
    assert FoldConstant().info.name == "FoldConstant"


def test_print_after_marks_unchanged(capsys):
    mod = _foldable()
    seq = Sequential([InferType(), FoldConstant(), DeadCodeElimination(), EliminateCommonSubexpr(),
                      FoldScaleAxis(), SimplifyInference(), FuseOps(fuse_opt_level=2)])
    with tecc.transform.PassContext(opt_level=3, config={"graph.print_after": ["fold_constant", "infer_type",
                                                                                "fuse_ops"]}):
        out = seq(mod)
    text = capsys.readouterr().out
    assert "# after infer_type (unchanged)" in text
    assert "# after fold_constant\n" in text
    assert "# after fuse_ops\n" in text and "Primitive=1" in text
    assert "exp" not in out.astext()


def test_the_generic_sequential_composes_graph_passes_as_tvm_programs_do():
    # tvm.transform.Sequential([relay.transform.FoldConstant(), ...]) of TVM's tutorials
    seq = tecc.transform.Sequential([InferType(), FoldConstant(), FuseOps(fuse_opt_level=2)])
    assert isinstance(seq, Sequential)
    with tecc.transform.PassContext(opt_level=3):
        out = seq(_foldable())
    assert "exp" not in out.astext() and "Primitive=1" in out.astext()
    with pytest.raises(tecc.errors.TeccTypeError,
                       match=r"mixes graph passes and TIR passes \(fold_constant \(graph\), simplify \(tir\)\)"):
        tecc.transform.Sequential([FoldConstant(), tecc.tir.transform.Simplify()])


def test_pass_errors():
    with pytest.raises(PassConfigError, match="unknown graph pass 'fold'"):
        with tecc.transform.PassContext(config={"graph.print_after": ["fold"]}):
            FoldConstant()(_foldable())
    with pytest.raises(tecc.errors.TeccTypeError, match="maps a tecc.graph.Module"):
        FoldConstant()(_foldable()["main"])
    with pytest.raises(tecc.errors.TeccTypeError, match="not a graph pass"):
        Sequential([lambda m: m])
    with pytest.raises(tecc.errors.TeccTypeError, match="graph.timing' must be a bool"):
        with tecc.transform.PassContext(config={"graph.timing": "yes"}):
            InferType()(_foldable())
