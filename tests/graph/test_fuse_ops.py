"""Operator fusion: the groups fuse_ops makes, by the pattern kinds of the TVM paper."""
import pytest

from tecc import graph as G
from tecc.graph import GraphError, TensorType, TupleGetItem, Var, call, const
from tecc.graph.analysis import structural_equal
from tecc.graph.transform import fuse_ops, fused_groups


def _mod(params, body):
    return G.Module.from_expr(G.Function(params, body))


def _x(name="x", shape=(1, 4, 8, 8)):
    return Var(name, TensorType(shape))


def test_conv_bias_relu_residual_add_is_one_kernel():
    x, w, b = _x(), Var("w", TensorType((4, 4, 3, 3))), Var("b", TensorType((4,)))
    conv = call("nn.conv2d", x, w, padding=(1, 1, 1, 1), channels=4, kernel_size=(3, 3))
    out = call("add", call("nn.relu", call("nn.bias_add", conv, b)), x)
    fused = fuse_ops(_mod([x, w, b], out))
    assert fused_groups(fused) == [["nn.conv2d", "nn.bias_add", "nn.relu", "add"]]


def test_batch_norm_scale_shift_fuse_into_conv():
    x, w = _x(), Var("w", TensorType((4, 4, 3, 3)))
    scale, shift = Var("s", TensorType((4, 1, 1))), Var("t", TensorType((4, 1, 1)))
    conv = call("nn.conv2d", x, w, padding=(1, 1, 1, 1))
    out = call("nn.relu", call("add", call("multiply", conv, scale), shift))
    assert fused_groups(fuse_ops(_mod([x, w, scale, shift], out))) == [
        ["nn.conv2d", "multiply", "add", "nn.relu"]]


def test_diamond_meets_in_one_group():
    x = _x()
    a = call("add", x, const(1.0))
    out = call("add", call("nn.relu", a), call("exp", a))
    fused = fuse_ops(_mod([x], out))
    assert fused_groups(fused) == [["add", "nn.relu", "exp", "add"]]
    # the scalar constant is inlined, the kernel reads x only
    (call_node,) = [n for n in G.topological_order(fused["main"]) if isinstance(n, G.Call)
                    and isinstance(n.op, G.Function)]
    assert call_node.args == (fused["main"].params[0],)


def test_paths_that_do_not_meet_end_the_group():
    x = _x()
    a = call("add", x, x)
    out = G.Tuple([call("nn.relu", a), call("exp", a)])
    fused = fuse_ops(_mod([x], out))
    assert fused_groups(fused) == [["add"], ["nn.relu"], ["exp"]]
    assert isinstance(fused["main"].body, G.Tuple)  # the tuple output stays in main


def test_conv_with_two_consumers_does_not_fuse_forward():
    x, w = _x(), Var("w", TensorType((4, 4, 3, 3)))
    conv = call("nn.conv2d", x, w, padding=(1, 1, 1, 1))
    out = G.Tuple([call("nn.relu", conv), call("sigmoid", conv)])
    groups = fused_groups(fuse_ops(_mod([x, w], out)))
    assert sorted(groups) == [["nn.conv2d"], ["nn.relu"], ["sigmoid"]]


def test_reduction_takes_elementwise_inputs_and_ends_the_group():
    x = _x(shape=(4, 16))
    s = call("sum", call("exp", x), axis=(1,))
    out = call("nn.relu", s)
    groups = fused_groups(fuse_ops(_mod([x], out)))
    assert groups[0] == ["exp", "sum"]
    assert ["nn.relu"] in groups


def test_injective_fuses_into_consumer():
    x = _x(shape=(4, 16))
    t = call("transpose", x, axes=(1, 0))
    out = call("nn.relu", call("exp", t))
    assert fused_groups(fuse_ops(_mod([x], out))) == [["transpose", "exp", "nn.relu"]]


def test_elementwise_does_not_fuse_into_conv_input():
    x, w = _x(), Var("w", TensorType((4, 4, 3, 3)))
    out = call("nn.conv2d", call("nn.relu", x), w, padding=(1, 1, 1, 1))
    assert fused_groups(fuse_ops(_mod([x, w], out))) == [["nn.relu"], ["nn.conv2d"]]


def test_opaque_fuses_with_nothing():
    x = _x(shape=(4, 16))
    g, b = Var("g", TensorType((16,))), Var("b", TensorType((16,)))
    ln = call("nn.layer_norm", call("exp", x), g, b, axis=-1)
    out = call("nn.relu", ln)
    assert fused_groups(fuse_ops(_mod([x, g, b], out))) == [["exp"], ["nn.layer_norm"], ["nn.relu"]]


def test_tuple_output_of_an_operator():
    x = _x(shape=(4, 16))
    parts = call("split", call("exp", x), indices_or_sections=2, axis=1)
    out = G.Tuple([call("nn.relu", TupleGetItem(parts, 0)), call("sigmoid", TupleGetItem(parts, 1))])
    fused = fuse_ops(_mod([x], out))
    groups = fused_groups(fused)
    assert ["exp", "split"] in groups
    assert len(groups) == 3


def test_group_size_cap():
    x = _x(shape=(8,))
    y = x
    for _ in range(5):
        y = call("nn.relu", y)
    assert [len(g) for g in fused_groups(fuse_ops(_mod([x], y), max_depth=2))] == [2, 2, 1]
    with pytest.raises(GraphError, match="max_depth must be a positive int"):
        fuse_ops(_mod([x], y), max_depth=0)


def test_level_zero_fuses_nothing_and_is_structural():
    x = _x(shape=(8,))
    out = call("exp", call("nn.relu", x))
    fused = fuse_ops(_mod([x], out), fuse_opt_level=0)
    assert fused_groups(fused) == [["nn.relu"], ["exp"]]
    # expected by hand: two primitive functions called in a chain
    p0, q0 = Var("p0", TensorType((8,))), Var("p0", TensorType((8,)))
    f1 = G.Function([p0], call("nn.relu", p0), attrs={"Primitive": 1})
    f2 = G.Function([q0], call("exp", q0), attrs={"Primitive": 1})
    main = fused["main"]
    expected = G.Call(f2, [G.Call(f1, [main.params[0]])])
    assert structural_equal(main.body, expected)
    assert not structural_equal(main.body, G.Call(f1, [G.Call(f2, [main.params[0]])]))


def test_fused_module_prints_which_ops_are_in_which_kernel():
    x, w = _x(), Var("w", TensorType((4, 4, 3, 3)))
    out = call("nn.relu", call("nn.conv2d", x, w, padding=(1, 1, 1, 1)))
    text = fuse_ops(_mod([x, w], out)).astext()
    assert "Primitive=1" in text
    lines = text.splitlines()
    fn_line = next(k for k, line in enumerate(lines) if "Primitive=1" in line)
    assert lines[fn_line + 1].strip().startswith("%1 = nn.conv2d(%p0, %p1")
    assert lines[fn_line + 2].strip().startswith("%2 = nn.relu(%1)")
    assert any(line.strip().startswith("%3 = %0(%x, %w)") for line in lines)


def test_unchanged_when_already_fused():
    x = _x(shape=(8,))
    mod = fuse_ops(_mod([x], call("nn.relu", x)))
    assert fuse_ops(mod) is mod


def test_group_reading_an_item_of_an_outside_tuple_takes_the_item():
    # each step of an unrolled recurrent layer reads its own piece of one split: the
    # group's parameter is that piece, not the whole tuple, so every step is the same
    # function (compiled once by graph.build) whichever piece it reads
    x, h = _x(shape=(4, 2, 8)), _x("h", shape=(1, 2, 8))
    parts = call("split", call("exp", x), indices_or_sections=4, axis=0)
    outs = [call("tanh", call("add", TupleGetItem(parts, k), h)) for k in range(4)]
    fused = fuse_ops(_mod([x, h], G.Tuple(outs)))
    steps = [n for n in G.topological_order(fused["main"]) if isinstance(n, G.Call)
             and isinstance(n.op, G.Function) and "tanh" in n.op.astext()]
    assert len(steps) == 4
    piece = TensorType((1, 2, 8))
    for k, step in enumerate(steps):
        assert [p.checked_type for p in step.op.params] == [piece, piece]
        assert isinstance(step.args[0], TupleGetItem) and step.args[0].index == k
        assert structural_equal(step.op, steps[0].op)



# ---------------------------------------------------------------------------------------
# GPU targets: injective chains fuse into the matrix products that read them
# ---------------------------------------------------------------------------------------
def _attention_scores():
    """A head split as attention has it: q = dense(x) -> reshape -> transpose ->
    reshape, scores = batch_matmul(q, k)."""
    x, wq = _x(shape=(16, 32)), Var("wq", TensorType((32, 32)))
    k = Var("k", TensorType((4, 16, 8)))
    q = call("nn.dense", x, wq, units=32)
    heads = call("reshape", call("transpose", call("reshape", q, newshape=(16, 4, 8)), axes=(1, 0, 2)),
                 newshape=(4, 16, 8))
    return _mod([x, wq, k], call("nn.batch_matmul", heads, k))


def test_injective_chain_fuses_into_a_product_on_gpus_only():
    mod = _attention_scores()
    assert fused_groups(fuse_ops(mod, fuse_inputs=True)) == [
        ["nn.dense"], ["reshape", "transpose", "reshape", "nn.batch_matmul"]]
    assert fused_groups(fuse_ops(mod, fuse_inputs=False)) == [
        ["nn.dense"], ["reshape", "transpose", "reshape"], ["nn.batch_matmul"]]
    # by default, by the current target: a GPU's, or no fusion into products
    from tecc.target import Target

    with Target("cuda"):
        assert len(fused_groups(fuse_ops(mod))) == 2
    with Target("llvm"):
        assert len(fused_groups(fuse_ops(mod))) == 3
    assert len(fused_groups(fuse_ops(mod))) == 3
    with pytest.raises(GraphError, match="fuse_inputs must be True, False or None"):
        fuse_ops(mod, fuse_inputs="yes")


def test_views_and_convolutions_keep_their_inputs_apart():
    # a chain of reshapes is a view (no kernel) and stays one
    x, w = _x(shape=(2, 4, 8)), Var("w", TensorType((6, 32)))
    flat = call("reshape", x, newshape=(2, 32))
    assert fused_groups(fuse_ops(_mod([x, w], call("nn.dense", flat, w)), fuse_inputs=True)) == [
        ["reshape"], ["nn.dense"]]
    # a concatenation of whole rows is written in place (no kernel) and stays one; one
    # that interleaves rows is a copy, and fuses
    a, b, w2 = _x("a", shape=(1, 8)), _x("b", shape=(1, 8)), Var("w", TensorType((4, 16)))
    rows = call("concatenate", G.Tuple([a, b]), axis=1)
    assert ["concatenate", "nn.dense"] not in fused_groups(
        fuse_ops(_mod([a, b, w2], call("nn.dense", rows, w2)), fuse_inputs=True))
    a2, b2 = _x("a", shape=(2, 8)), _x("b", shape=(2, 8))
    mixed = call("concatenate", G.Tuple([a2, b2]), axis=1)
    assert fused_groups(fuse_ops(_mod([a2, b2, w2], call("nn.dense", mixed, w2)), fuse_inputs=True)) == [
        ["concatenate", "nn.dense"]]
    # a convolution's schedule reads its input with halos: no injective producer joins it
    x4, w4 = _x(), Var("w", TensorType((4, 4, 3, 3)))
    out = call("nn.conv2d", call("transpose", x4, axes=(0, 1, 3, 2)), w4, padding=(1, 1, 1, 1))
    assert fused_groups(fuse_ops(_mod([x4, w4], out), fuse_inputs=True)) == [["transpose"], ["nn.conv2d"]]


def test_fuse_inputs_is_for_products():
    from tecc.graph.op import OpPattern, register_op

    with pytest.raises(GraphError, match="fuse_inputs is for OUT_ELEMWISE_FUSABLE operators"):
        register_op("test.fuse_inputs_injective", pattern=OpPattern.INJECTIVE, infer=None, lower=None,
                    fuse_inputs=True)
