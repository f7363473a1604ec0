"""The graph passes, each against the graph expected (built by hand), and the pass
objects over tecc's pass engine."""
import json

import numpy as np
import pytest

import tecc
from tecc import graph as G
from tecc.graph import Constant, TensorType, TupleGetItem, Var, call, const
from tecc.graph.analysis import structural_equal
from tecc.graph.build import build
from tecc.graph.transform import (
    CombineParallelDense, ConvertLayout, DeadCodeElimination, EliminateCommonSubexpr, FoldConstant, FoldScaleAxis, FuseOps, InferType, Sequential,
    SimplifyInference, dead_code_elimination, eliminate_common_subexpr, fold_constant, fold_scale_axis,
    combine_parallel_dense, simplify_inference,
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


def test_combine_parallel_dense_concatenates_the_weights_and_slices_the_output():
    # q, k, v projections of one input (and a dense of another input, left alone)
    x, y = Var("x", TensorType((2, 3, 5))), Var("y", TensorType((2, 5)))
    wq, wk, wv, wo = _rand(4, 5), _rand(6, 5), _rand(4, 5), _rand(3, 5)
    q, k, v = (call("nn.dense", x, Constant(w), units=w.shape[0]) for w in (wq, wk, wv))
    other = call("nn.dense", y, Constant(wo), units=3)
    mod = _mod([x, y], G.Tuple([q, k, v, other]))
    out = combine_parallel_dense(mod)
    denses = []
    G.post_order_visit(out["main"], lambda n: denses.append(n) if isinstance(n, G.Call) and getattr(
        n.op, "name", "") == "nn.dense" else None)
    assert sorted(d.attrs["units"] for d in denses) == [3, 14]
    combined = next(d for d in denses if d.attrs["units"] == 14)
    np.testing.assert_array_equal(combined.args[1].data, np.concatenate([wq, wk, wv]))
    fields = out["main"].body.fields
    assert [(f.op.name, f.attrs["begin"], f.attrs["end"]) for f in fields[:3]] == [
        ("strided_slice", (0, 0, 0), (2, 3, 4)), ("strided_slice", (0, 0, 4), (2, 3, 10)),
        ("strided_slice", (0, 0, 10), (2, 3, 14))]
    assert fields[3].op.name == "nn.dense" and fields[3].args[1] is other.args[1]  # the other input's: left alone
    single = _mod([y], other)
    assert combine_parallel_dense(single) is single  # one dense: nothing to combine
    # the pass object: opt_level 4 as in TVM; numerically the same model
    with tecc.transform.PassContext(opt_level=3):
        assert CombineParallelDense()(mod) is mod
    from tecc.contrib.graph_executor import GraphModule  # noqa: PLC0415
    from tecc.graph.build import build  # noqa: PLC0415

    xv, yv = _rand(2, 3, 5), _rand(2, 5)
    with tecc.transform.PassContext(opt_level=4):
        gm = GraphModule(build(CombineParallelDense()(mod), "llvm")["default"](tecc.cpu(0)))
    gm.set_input("x", xv)
    gm.set_input("y", yv)
    gm.run()
    for i, want in enumerate([xv @ wq.T, xv @ wk.T, xv @ wv.T, yv @ wo.T]):
        np.testing.assert_allclose(gm.get_output(i).numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(G.GraphError, match=r"CombineParallelDense\(to_batch=True\) is not supported"):
        CombineParallelDense(to_batch=True)
    with pytest.raises(G.GraphError, match=r"min_num_branches must be an int of at least 2, got 1"):
        CombineParallelDense(min_num_branches=1)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
def test_the_pipeline_combines_parallel_dense_on_gpu_targets_only():
    # q, k, v of one input: one dense on cuda at opt_level 3 (unless disabled), three on
    # llvm; the values are the same (the GPU, or the emulator)
    import json  # noqa: PLC0415

    from tecc.contrib.graph_executor import GraphModule  # noqa: PLC0415
    from tecc.graph.build import build  # noqa: PLC0415
    from tecc.runtime.graph_executor import calls_kernel  # noqa: PLC0415

    x = Var("x", TensorType((8, 5)))
    ws = [_rand(4, 5), _rand(6, 5), _rand(4, 5)]
    mod = _mod([x], G.Tuple([call("nn.dense", x, Constant(w), units=w.shape[0]) for w in ws]))
    xv = _rand(8, 5)
    for target, disabled, denses in (("llvm", [], 3), ("cuda", [], 1), ("cuda", ["CombineParallelDense"], 3)):
        with tecc.transform.PassContext(opt_level=3, disabled_pass=disabled):
            factory = build(mod, target, {})
        names = [n["name"] for n in json.loads(factory.get_graph_json())["nodes"] if calls_kernel(n)]
        assert sum("dense" in n for n in names) == denses, (target, disabled, names)
        gm = GraphModule(factory["default"](tecc.cuda(0) if target == "cuda" else tecc.cpu(0)))
        gm.run(x=xv)
        for i, w in enumerate(ws):
            np.testing.assert_allclose(gm.get_output(i).numpy(), xv @ w.T, rtol=1e-5, atol=1e-6)


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


# ---------------------------------------------------------------------------------------
# a chain of passes over the nodes each one rebuilt, typed as they are built (no
# InferType between the passes): a dense, dropout and batch norm, then a dense and a
# bias, as an exported MLP or an unrolled RNN step reads
# ---------------------------------------------------------------------------------------
def _mlp_with_batch_norm():
    x = Var("x", TensorType((2, 5)))
    w1, w2, b = _rand(4, 5), _rand(3, 4), _rand(3)
    gamma, beta, mean = _rand(4), _rand(4), _rand(4)
    var = RNG.uniform(0.5, 2.0, 4).astype("float32")
    h = TupleGetItem(call("nn.dropout", call("nn.dense", x, Constant(w1), units=4), rate=0.5), 0)
    bn = call("nn.batch_norm", h, Constant(gamma), Constant(beta), Constant(mean), Constant(var), axis=1,
              epsilon=0.25)
    y = call("add", call("nn.dense", TupleGetItem(bn, 0), Constant(w2), units=3), Constant(b))
    return _mod([x], y), (w1, w2, b, gamma, beta, mean, var)


_MLP_BEFORE = """\
fn (%x: Tensor[(2, 5), float32]) {
  %0 = nn.dense(%x, meta[Constant][0], units=4, out_dtype="");
  %1 = nn.dropout(%0, rate=0.5);
  %2 = %1.0;
  %3 = nn.batch_norm(%2, meta[Constant][1], meta[Constant][2], meta[Constant][3], meta[Constant][4], axis=1, \
epsilon=0.25, center=True, scale=True);
  %4 = %3.0;
  %5 = nn.dense(%4, meta[Constant][5], units=3, out_dtype="");
  %6 = add(%5, meta[Constant][6]);
  %6
}"""

# simplify_inference: dropout gone, so the batch norm is rebuilt over the dense
# before it; its type (rank, channel count) is what the rewrite into a per-channel
# multiply and add reads -- it ran type inference by hand on the rebuilt call before
_MLP_AFTER_SIMPLIFY = """\
fn (%x: Tensor[(2, 5), float32]) -> Tensor[(2, 3), float32] {
  %0 = nn.dense(%x, meta[Constant][0], units=4, out_dtype=""); /* ty=Tensor[(2, 4), float32] */
  %1 = add(meta[Constant][1], 0.25f); /* ty=Tensor[(4,), float32] */
  %2 = sqrt(%1); /* ty=Tensor[(4,), float32] */
  %3 = divide(1.0f, %2); /* ty=Tensor[(4,), float32] */
  %4 = multiply(meta[Constant][2], %3); /* ty=Tensor[(4,), float32] */
  %5 = multiply(%0, %4); /* ty=Tensor[(2, 4), float32] */
  %6 = multiply(meta[Constant][3], %4); /* ty=Tensor[(4,), float32] */
  %7 = negative(%6); /* ty=Tensor[(4,), float32] */
  %8 = add(meta[Constant][4], %7); /* ty=Tensor[(4,), float32] */
  %9 = add(%5, %8); /* ty=Tensor[(2, 4), float32] */
  %10 = nn.dense(%9, meta[Constant][5], units=3, out_dtype=""); /* ty=Tensor[(2, 3), float32] */
  %11 = add(%10, meta[Constant][6]); /* ty=Tensor[(2, 3), float32] */
  %11
}"""

_MLP_AFTER_FOLD = """\
fn (%x: Tensor[(2, 5), float32]) -> Tensor[(2, 3), float32] {
  %0 = nn.dense(%x, meta[Constant][0], units=4, out_dtype=""); /* ty=Tensor[(2, 4), float32] */
  %1 = multiply(%0, meta[Constant][1]); /* ty=Tensor[(2, 4), float32] */
  %2 = add(%1, meta[Constant][2]); /* ty=Tensor[(2, 4), float32] */
  %3 = nn.dense(%2, meta[Constant][3], units=3, out_dtype=""); /* ty=Tensor[(2, 3), float32] */
  %4 = add(%3, meta[Constant][4]); /* ty=Tensor[(2, 3), float32] */
  %4
}"""

# fold_scale_axis: the scale goes into the first weight and the shift becomes its
# bias, so the second dense is rebuilt over a new operand; the add after it reads the
# rebuilt dense's rank to become its bias -- the pass typed that dense by hand before
_MLP_AFTER_SCALE = """\
fn (%x: Tensor[(2, 5), float32]) -> Tensor[(2, 3), float32] {
  %0 = multiply(meta[Constant][0], meta[Constant][1]); /* ty=Tensor[(4, 5), float32] */
  %1 = nn.dense(%x, %0, units=4, out_dtype=""); /* ty=Tensor[(2, 4), float32] */
  %2 = nn.bias_add(%1, meta[Constant][2], axis=1); /* ty=Tensor[(2, 4), float32] */
  %3 = nn.dense(%2, meta[Constant][3], units=3, out_dtype=""); /* ty=Tensor[(2, 3), float32] */
  %4 = nn.bias_add(%3, meta[Constant][4], axis=1); /* ty=Tensor[(2, 3), float32] */
  %4
}"""

_MLP_AFTER_REFOLD = """\
fn (%x: Tensor[(2, 5), float32]) -> Tensor[(2, 3), float32] {
  %0 = nn.dense(%x, meta[Constant][0], units=4, out_dtype=""); /* ty=Tensor[(2, 4), float32] */
  %1 = nn.bias_add(%0, meta[Constant][1], axis=1); /* ty=Tensor[(2, 4), float32] */
  %2 = nn.dense(%1, meta[Constant][2], units=3, out_dtype=""); /* ty=Tensor[(2, 3), float32] */
  %3 = nn.bias_add(%2, meta[Constant][3], axis=1); /* ty=Tensor[(2, 3), float32] */
  %3
}"""


def _text(mod):
    """``main`` with its types, without the table of constants after it."""
    return G.astext(mod["main"], show_types=True).split("\n/* constants:")[0]


def test_batch_norm_after_dropout_then_dense_folds_pass_by_pass():
    mod, (w1, w2, b, gamma, beta, mean, var) = _mlp_with_batch_norm()
    assert _text(mod) == _MLP_BEFORE
    steps = [(simplify_inference, _MLP_AFTER_SIMPLIFY), (fold_constant, _MLP_AFTER_FOLD),
             (fold_scale_axis, _MLP_AFTER_SCALE), (fold_constant, _MLP_AFTER_REFOLD)]
    for run, expected in steps:
        mod = run(mod)  # the passes alone: no infer_type between them
        assert _text(mod) == expected, run.__name__
    scale = gamma / np.sqrt(var + 0.25)
    consts = [n for n in G.topological_order(mod["main"].body) if isinstance(n, Constant)]
    for got, want in zip(consts, [w1 * scale[:, None], beta - mean * scale, w2, b]):
        np.testing.assert_allclose(got.data, want, rtol=1e-5, atol=1e-6)


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


def test_function_pass_with_a_relay_style_mutator():
    # TVM's pass-infra tutorial: a class under @relay.transform.function_pass whose
    # transform_function runs an ExprMutator overriding Relay's visit_constant
    @G.transform.function_pass(opt_level=1)
    class ScaleConstants:
        def __init__(self, factor):
            self.factor = factor

        def transform_function(self, func, mod, ctx):
            factor = self.factor

            class Replace(G.ExprMutator):
                def visit_constant(self, c):
                    return call("multiply", factor, c)

            return Replace().visit(func)

    x = Var("x", TensorType((3,)))
    mod = InferType()(_mod([x], call("add", x, const(np.float32([1, 2, 3])))))
    p = ScaleConstants(const(np.float32(3)))
    assert p.info.name == "ScaleConstants" and p.info.opt_level == 1
    with tecc.transform.PassContext(opt_level=0):
        assert p(mod) is mod  # below its opt_level
    with tecc.transform.PassContext(opt_level=1):
        out = p(mod)
    assert "multiply" in out.astext() and out["main"].body.checked_type.shape == (3,)
    with tecc.transform.PassContext(opt_level=3):
        lib = build(out, target="llvm")
    ex = lib["default"](tecc.cpu(0))
    ex.set_input("x", np.float32([1, 1, 1]))
    ex.run()
    np.testing.assert_allclose(ex.get_output(0).numpy(), [4, 7, 10])

    @G.transform.function_pass
    def broken(func, mod, ctx):
        return func.body

    with pytest.raises(tecc.errors.TeccTypeError, match="function pass 'broken' returned a Call; it must return a "
                                                        "graph Function"):
        broken(mod)


def test_print_ir_in_graph_and_tir_sequences(capsys):
    seq = tecc.transform.Sequential([InferType(), tecc.transform.PrintIR("folded?"), FoldConstant()])
    assert isinstance(seq, Sequential)
    with tecc.transform.PassContext(opt_level=3):
        out = seq(_foldable())
    text = capsys.readouterr().out
    assert text.startswith("# folded?\n") and "exp" in text and "exp" not in out.astext()
    from tecc import te

    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    tir_mod = tecc.lower(te.create_schedule(B.op), [A, B])
    tir_seq = tecc.transform.Sequential([tecc.transform.PrintIR(), tecc.tir.transform.Simplify()])
    assert tir_seq(tir_mod) is not None and "B[i] = A[i] + 1f" in capsys.readouterr().out


def _count_ops(mod):
    counts = {}

    def note(n):
        if isinstance(n, G.Call) and hasattr(n.op, "name"):
            counts[n.op.name] = counts.get(n.op.name, 0) + 1

    G.post_order_visit(mod["main"].body, note)
    return counts


def _run_llvm(mod, **inputs):
    with tecc.transform.PassContext(opt_level=3):
        lib = build(mod, target="llvm")
    ex = lib["default"](tecc.cpu(0))
    ex.set_input(**inputs)
    ex.run()
    return ex.get_output(0).numpy()


@pytest.mark.parametrize("layouts", [["NHWC", "HWIO"], ["NHWC", "default"]])
def test_convert_layout_keeps_values_converted_between_convolutions(layouts):
    # conv -> bias_add -> relu -> conv -> batch_norm -> residual add -> per-channel multiply ->
    # concatenate with an LRN of the first -> max_pool -> flatten
    x = Var("x", TensorType((1, 4, 9, 9)))
    w1, w2 = Constant(_rand(8, 4, 3, 3)), Constant(_rand(8, 8, 3, 3))
    a = call("nn.relu", call("nn.bias_add", call("nn.conv2d", x, w1, padding=(1, 1)), Constant(_rand(8))))
    bn = call("nn.batch_norm", call("nn.conv2d", a, w2, padding=(1, 1)), *(Constant(np.abs(_rand(8)) + 0.5)
                                                                           for _ in range(4)))
    y = call("add", TupleGetItem(bn, 0), a)
    y = call("multiply", y, Constant(_rand(8, 1, 1)))  # a per-channel scale, moved with the value
    y = call("concatenate", G.Tuple([y, call("nn.lrn", a, size=3)]), axis=1)
    y = call("nn.max_pool2d", call("multiply", y, const(2.0)), pool_size=(2, 2), strides=(2, 2))
    mod = InferType()(_mod([x], call("nn.batch_flatten", y)))
    with tecc.transform.PassContext(opt_level=3):
        out = tecc.transform.Sequential([ConvertLayout({"nn.conv2d": layouts}), FoldConstant()])(mod)
    counts = _count_ops(out)
    assert counts["layout_transform"] == 2  # the input in, the pooled value out: nothing in between
    convs = [n for n in _calls(out) if n.op.name == "nn.conv2d"]
    kernel = "HWIO" if layouts[1] == "default" else layouts[1]
    assert {(c.attrs["data_layout"], c.attrs["kernel_layout"]) for c in convs} == {("NHWC", kernel)}
    data = _rand(1, 4, 9, 9)
    np.testing.assert_allclose(_run_llvm(out, x=data), _run_llvm(mod, x=data), rtol=1e-4, atol=1e-4)
    with tecc.transform.PassContext(opt_level=3):
        assert ConvertLayout({"nn.conv2d": ["NCHW", "OIHW"]})(mod) is mod  # already so
    with tecc.transform.PassContext(opt_level=2):
        assert ConvertLayout({"nn.conv2d": layouts})(mod) is mod  # an opt_level-3 pass


def test_convert_layout_of_an_nhwc_model_to_nchw_with_the_batch_norms_other_fields():
    # the data is transformed from the convolution's own layout (NHWC here, not NCHW);
    # a batch norm's mean and variance outputs are per channel, in no layout
    x = Var("x", TensorType((1, 6, 6, 3)))
    y = call("nn.conv2d", x, Constant(_rand(3, 3, 3, 4)), padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    bn = call("nn.batch_norm", y, *(Constant(np.abs(_rand(4)) + 0.5) for _ in range(4)), axis=3)
    body = G.Tuple([call("nn.relu", TupleGetItem(bn, 0)), call("add", TupleGetItem(bn, 1), TupleGetItem(bn, 2))])
    mod = InferType()(_mod([x], body))
    with tecc.transform.PassContext(opt_level=3):
        out = FoldConstant()(ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod))
    (conv,) = [n for n in _calls(out) if n.op.name == "nn.conv2d"]
    assert (conv.attrs["data_layout"], conv.attrs["kernel_layout"]) == ("NCHW", "OIHW")
    assert _count_ops(out)["layout_transform"] == 2
    data = _rand(1, 6, 6, 3)
    with tecc.transform.PassContext(opt_level=3):
        got, want = (build(m, target="llvm")["default"](tecc.cpu(0)) for m in (out, mod))
    for ex in (got, want):
        ex.set_input(x=data)
        ex.run()
    for k in range(2):
        np.testing.assert_allclose(got.get_output(k).numpy(), want.get_output(k).numpy(), rtol=1e-4, atol=1e-5)


def _calls(mod):
    found = []
    G.post_order_visit(mod["main"].body, lambda n: found.append(n) if isinstance(n, G.Call) else None)
    return found


def test_convert_layout_of_a_resnet_and_its_errors():
    from tecc import relay

    mod, params = relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 40, 40), num_classes=5)
    mod = InferType()(mod)
    mod = G.Module.from_expr(relay.build_module.bind_params_by_name(mod["main"], params))
    with tecc.transform.PassContext(opt_level=3):
        out = tecc.transform.Sequential([FoldConstant(), relay.transform.ConvertLayout({"nn.conv2d": ["NHWC",
                                                                                                        "default"]}),
                                         FoldConstant()])(InferType()(mod))
    assert _count_ops(out)["layout_transform"] == 2 and _count_ops(out)["nn.conv2d"] == 20
    data = RNG.standard_normal((1, 3, 40, 40)).astype("float32")
    np.testing.assert_allclose(_run_llvm(out, data=data), _run_llvm(mod, data=data), rtol=1e-4, atol=1e-5)
    with pytest.raises(G.GraphError, match=r"cannot convert 'nn.dense'; the operators it converts: nn.conv2d"):
        ConvertLayout({"nn.dense": ["NC"]})
    with pytest.raises(G.GraphError, match=r"'nn.conv2d' runs in the data layouts NCHW, NHWC, not 'NCHW4c'"):
        ConvertLayout({"nn.conv2d": ["NCHW4c", "default"]})
    with pytest.raises(G.GraphError, match=r"in data layout 'NHWC' takes kernel layout 'HWIO', not 'OHWI'"):
        ConvertLayout({"nn.conv2d": ["NHWC", "OHWI"]})


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


# ---------------------------------------------------------------------------------------
# SinkReshape
# ---------------------------------------------------------------------------------------
def _projection(x, w):
    """An imported 3-D MatMul: reshape to 2-D, dense, reshape back."""
    flat = call("reshape", x, newshape=(-1, 8))
    return call("reshape", call("nn.dense", flat, Constant(w), units=6), newshape=(1, 4, 6))


def test_sink_reshape_moves_a_bias_an_activation_and_a_residual_next_to_the_dense():
    from tecc.graph.transform import sink_reshape

    x, res = Var("x", TensorType((1, 4, 8))), Var("res", TensorType((1, 4, 6)))
    w, b = _rand(6, 8), _rand(6)
    body = call("add", call("nn.relu", call("add", _projection(x, w), Constant(b))), res)
    out = sink_reshape(_mod([x, res], body))
    px, pres = out["main"].params
    dense = call("nn.dense", call("reshape", px, newshape=(-1, 8)), Constant(w), units=6)
    expected = call("reshape", call("add", call("nn.relu", call("add", dense, Constant(b))),
                                    call("reshape", pres, newshape=(4, 6))), newshape=(1, 4, 6))
    assert structural_equal(out["main"].body, expected), G.astext(out["main"])


@pytest.mark.parametrize("operand, why", [
    (_rand(2, 1, 6), "varies along an axis the reshape makes ((4, 6) -> (2, 2, 6) keeps only the 6)"),
    (_rand(3, 1, 1, 6), "broadcasts the result larger than the reshape's"),
])
def test_sink_reshape_leaves_what_would_read_other_elements(operand, why):
    from tecc.graph.transform import sink_reshape

    x = Var("x", TensorType((1, 4, 8)))
    reshaped = call("reshape", call("nn.dense", call("reshape", x, newshape=(4, 8)), Constant(_rand(6, 8)), units=6),
                    newshape=(2, 2, 6))
    body = call("add", reshaped, Constant(operand))
    assert structural_equal(sink_reshape(_mod([x], body))["main"].body, body), why


def test_sink_reshape_leaves_operators_with_an_axis_and_reshapes_of_two_shapes():
    from tecc.graph.transform import sink_reshape

    a, b = Var("a", TensorType((4, 6))), Var("b", TensorType((24,)))
    two = call("add", call("reshape", a, newshape=(2, 12)), call("reshape", b, newshape=(2, 12)))
    biased = call("nn.bias_add", call("reshape", a, newshape=(2, 2, 6)), Constant(_rand(2)), axis=0)
    for body in (two, biased):
        mod = _mod([a, b], body)
        assert structural_equal(sink_reshape(mod)["main"].body, body)


@pytest.mark.filterwarnings("ignore:no CUDA GPU found")
@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_sink_reshape_keeps_the_values_and_saves_kernels(target):
    """A transformer's feed-forward block as ONNX imports it: the bias, ReLU and the
    residual fuse into the dense's kernels and the reshapes run none."""
    from tecc.graph.build import build
    from tecc.contrib.graph_executor import GraphModule
    from tecc.runtime.graph_executor import calls_kernel

    x = Var("x", TensorType((1, 4, 8)))
    w1, b1, w2, b2 = _rand(6, 8), _rand(6), _rand(8, 6), _rand(8)
    hidden = call("nn.relu", call("add", _projection(x, w1), Constant(b1)))
    flat = call("reshape", hidden, newshape=(-1, 6))
    out = call("add", call("add", call("reshape", call("nn.dense", flat, Constant(w2), units=8),
                                       newshape=(1, 4, 8)), Constant(b2)), x)
    xv = _rand(1, 4, 8)
    want = np.maximum(xv.reshape(4, 8) @ w1.T + b1, 0) @ w2.T + b2 + xv.reshape(4, 8)
    counts = {}
    for disabled in ([], ["SinkReshape"]):
        with tecc.transform.PassContext(opt_level=3, disabled_pass=disabled):
            factory = build(_mod([x], out), target, {})
        kernels = [n["name"] for n in json.loads(factory.get_graph_json())["nodes"] if calls_kernel(n)]
        counts[bool(disabled)] = kernels
        dev = tecc.cuda(0) if target == "cuda" else tecc.cpu(0)
        gmod = GraphModule(factory["default"](dev))
        gmod.run(x=xv)
        np.testing.assert_allclose(gmod.get_output(0).numpy(), want.reshape(1, 4, 8), rtol=1e-4, atol=1e-5)
    # the biases become bias_adds of the denses (FoldScaleAxis); the last reshape is the
    # model's output, which the user reads: a copy
    assert counts[False] == ["fused_nn_dense_nn_bias_add_nn_relu", "fused_nn_dense_nn_bias_add_add",
                             "fused_reshape_2"], counts
    if target == "cuda":  # on a GPU the first dense's epilogue is computed in the second's tile loads
        assert counts[True] == ["fused_nn_dense", "fused_nn_dense_reshape_add_nn_relu", "fused_reshape_add_add"], \
            counts
    else:
        assert counts[True] == ["fused_nn_dense", "fused_reshape_add_nn_relu_reshape", "fused_nn_dense_1",
                                "fused_reshape_add_add"], counts


def test_sink_reshape_leaves_symbolic_shapes_alone():
    from tecc.graph.transform import sink_reshape

    x = Var("x", TensorType(("batch", 4, 6)))
    body = call("nn.relu", call("reshape", x, newshape=(0, 24)))
    mod = _mod([x], body)
    assert structural_equal(sink_reshape(mod)["main"].body, body)


def test_fold_constant_runs_through_the_storage_plan_s_no_op_reshapes():
    # a reshape between two dense layers computes nothing in the planned graph (a "__nop"
    # node, its output a view of its input); constant folding's plain run of that graph
    # called the no-op as a kernel ("module has no function '__nop'")
    a, b, c = _rand(4, 6), _rand(3, 6), _rand(5, 6)
    inner = call("reshape", call("nn.dense", Constant(a), Constant(b)), newshape=(2, 6))
    folded = call("nn.dense", inner, Constant(c))
    x = Var("x", TensorType((2, 5)))
    out = fold_constant(_mod([x], call("add", x, folded)))
    body = out["main"].body
    assert isinstance(body.args[1], Constant)
    np.testing.assert_allclose(body.args[1].data, (a @ b.T).reshape(2, 6) @ c.T, rtol=1e-5)
