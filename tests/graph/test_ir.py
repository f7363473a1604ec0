"""The graph IR's core: nodes, attributes, the registry's checks, the printer, the
walkers and type inference."""
import numpy as np
import pytest

from tecc import graph as g
from tecc.graph.transform.infer_type import infer_type


def x_var(shape=(2, 3), dtype="float32", name="x"):
    return g.Var(name, g.TensorType(shape, dtype))


def test_nodes_are_immutable_and_compared_by_identity():
    x = x_var()
    a = g.call("add", x, g.const(1.0))
    b = g.call("add", x, g.const(1.0))
    assert a != b and a == a and len({a, b}) == 2
    with pytest.raises(AttributeError, match="immutable"):
        a.args = ()
    with pytest.raises(AttributeError, match="immutable"):
        a.attrs.axis = 1


def test_constant_data_is_a_read_only_copy():
    arr = np.ones((2,), "float32")
    c = g.Constant(arr)
    arr[0] = 5
    assert c.data[0] == 1 and not c.data.flags.writeable
    assert g.const(2.0).data.dtype == np.float32 and g.const(3).data.dtype == np.int64


def test_attrs_are_canonical_hashable_and_read_as_attributes():
    a = g.Attrs({"strides": [1, 2], "axis": np.int64(3)})
    b = g.Attrs({"strides": (1, 2), "axis": 3})
    assert a == b and hash(a) == hash(b)
    assert a.strides == (1, 2) and a["axis"] == 3 and isinstance(a.axis, int)
    assert a.with_(axis=0).axis == 0 and a.axis == 3
    with pytest.raises(AttributeError, match="no 'pad'"):
        a.pad  # noqa: B018


def test_registry_checks_operands_and_attributes():
    x = x_var()
    with pytest.raises(g.GraphError, match=r"no graph operator is registered as 'ad'; did you mean add"):
        g.call("ad", x, x)
    with pytest.raises(g.GraphError, match=r"add takes 2 operand\(s\), got 1"):
        g.call("add", x)
    with pytest.raises(g.GraphError, match=r"add: unknown attribute\(s\) \['axis'\]; it takes no attributes"):
        g.call("add", x, x, axis=1)
    with pytest.raises(g.GraphError, match="operand 1 is a float, not a graph Expr"):
        g.call("add", x, 1.0)
    with pytest.raises(g.GraphError, match="already registered"):
        g.register_op("add", pattern=g.OpPattern.BROADCAST, infer=None, lower=None)


def test_types_and_their_errors():
    t = g.TensorType((1, "n", 3), "float32")
    assert not t.is_static and str(t) == "Tensor[(1, n, 3), float32]"
    assert str(g.TensorType((4,), "int64")) == "Tensor[(4,), int64]"
    assert g.TensorType((2, 3)).nbytes == 24
    with pytest.raises(g.GraphError, match="negative"):
        g.TensorType((2, -1))
    with pytest.raises(g.GraphError, match="an int or a symbolic name"):
        g.TensorType((2.5,))


def test_infer_type_broadcasts_and_names_the_operator_that_does_not_fit():
    x, y = x_var((4, 1, 3)), x_var((5, 1), name="y")
    out = g.call("multiply", g.call("add", x, y), g.const(2.0))
    fn = g.Function([x, y], out)
    infer_type(fn)
    assert out.checked_type == g.TensorType((4, 5, 3))
    bad = g.call("add", x_var((2, 3)), x_var((4, 3), name="z"))
    with pytest.raises(g.GraphError, match=r"add: shapes \(2, 3\), \(4, 3\) do not broadcast"):
        infer_type(bad)
    with pytest.raises(g.GraphError, match="different dtypes"):
        infer_type(g.call("add", x_var(), x_var(dtype="int32", name="i")))
    with pytest.raises(g.GraphError, match="not known yet: run"):
        g.call("nn.relu", x_var()).checked_type  # noqa: B018
    with pytest.raises(g.GraphError, match="input %u has no type"):
        infer_type(g.call("nn.relu", g.Var("u")))


def test_infer_type_types_a_fused_function_from_its_call():
    x = x_var()
    p = g.Var("p0")
    fused = g.Function([p], g.call("nn.relu", g.call("exp", p)), attrs={"Primitive": 1})
    call = g.Call(fused, [x])
    main = g.Function([x], call)
    infer_type(main)
    assert call.checked_type == x.type_annotation and p.checked_type == x.type_annotation
    assert fused.is_primitive


def test_post_order_visit_sees_each_node_once_operands_first_and_survives_deep_chains():
    x = x_var()
    y = g.call("exp", x)
    z = g.call("add", y, y)
    seen = []
    g.post_order_visit(g.Function([x], z), seen.append)
    assert seen.index(x) < seen.index(y) < seen.index(z) and seen.count(y) == 1
    deep = x
    for _ in range(5000):  # deeper than Python's recursion limit
        deep = g.call("nn.relu", deep)
    order = g.topological_order(deep)
    assert len(order) == 5001 and order[0] is x


def test_mutator_returns_the_same_node_when_nothing_changes_and_keeps_sharing():
    x = x_var()
    y = g.call("exp", x)
    fn = g.Function([x], g.call("add", y, y))

    class Nothing(g.ExprMutator):
        pass

    assert Nothing().visit(fn) is fn

    class ExpToSqrt(g.ExprMutator):
        def visit_Call(self, call):
            new = self.generic_visit(call)
            if new.op.name == "exp":
                return g.call("sqrt", *new.args)
            return new

    out = ExpToSqrt().visit(fn)
    assert out is not fn
    add = out.body
    assert add.args[0] is add.args[1] and add.args[0].op.name == "sqrt"


class _WidenX(g.ExprMutator):
    """Replaces the input %x by ``wide`` (a batch of them): everything computed from
    it is rebuilt over operands of a new shape."""

    def __init__(self, wide):
        super().__init__()
        self.wide = wide

    def visit_Var(self, var):
        return self.wide if var.name_hint == "x" else var


def test_a_rebuilt_call_carries_the_type_its_new_operands_give():
    x, b = x_var((2, 3)), x_var((3,), name="b")
    fn = g.Function([x, b], g.call("sum", g.call("add", g.call("exp", x), b), axis=(1,)))
    infer_type(fn)
    wide = x_var((5, 2, 3), name="xw")
    out = _WidenX(wide).visit(fn)
    # re-inferred from the operators' relations over the new operands, not copied from
    # the nodes they replace: exp keeps (5, 2, 3), add broadcasts b, sum drops axis 1
    summed = out.body
    added = summed.args[0]
    assert added.args[0].checked_type == g.TensorType((5, 2, 3))
    assert added.checked_type == g.TensorType((5, 2, 3))
    assert summed.checked_type == g.TensorType((5, 3)) and out.checked_type == g.TensorType((5, 3))
    assert fn.body.checked_type == g.TensorType((2,))  # the old graph keeps its own types
    # nodes a visit_ method builds are typed as well, with everything they built below
    class ExpToSqrtOfAbs(g.ExprMutator):
        def visit_Call(self, call):
            new = self.generic_visit(call)
            return g.call("sqrt", g.call("abs", *new.args)) if new.op.name == "exp" else new

    out = ExpToSqrtOfAbs().visit(fn)
    sqrt = out.body.args[0].args[0]
    assert sqrt.op.name == "sqrt" and sqrt.checked_type == g.TensorType((2, 3))
    assert sqrt.args[0].checked_type == g.TensorType((2, 3))
    assert out.body.checked_type == g.TensorType((2,))


def test_a_rewrite_that_does_not_type_check_fails_where_it_is_made():
    x, b = x_var((2, 3)), x_var((3,), name="b")
    fn = g.Function([x, b], g.call("add", g.call("exp", x), b))
    infer_type(fn)
    with pytest.raises(g.GraphError, match=r"_WidenX rewrote a Call .*add.*broadcast"):
        _WidenX(x_var((2, 4), name="xw")).visit(fn)


def test_an_untyped_graph_stays_untyped_and_an_unchanged_one_is_returned_as_is():
    x = g.Var("x")  # no type: inference would refuse it
    fn = g.Function([x], g.call("add", g.call("exp", x), x))
    out = _WidenX(g.Var("x", g.TensorType((4,)))).visit(fn)
    assert out is not fn and not out.body.has_type
    y = x_var(name="y")
    typed = g.Function([y], g.call("nn.relu", g.call("exp", y)))
    infer_type(typed)
    assert _WidenX(x_var(name="unused")).visit(typed) is typed  # no %x in it: nothing to rebuild


def test_printer_numbers_values_and_shows_types_constants_and_fused_functions():
    x = x_var()
    w = g.Constant(np.ones((3,), "float32"))
    body = g.call("nn.relu", g.call("add", x, w))
    fn = g.Function([x], g.call("multiply", body, g.const(0.5)))
    infer_type(fn)
    text = g.astext(fn, show_types=True)
    assert text.splitlines()[0] == "fn (%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {"
    assert "%0 = add(%x, meta[Constant][0]); /* ty=Tensor[(2, 3), float32] */" in text
    assert "%2 = multiply(%1, 0.5f);" in text and "meta[Constant][0]: Tensor[(3,), float32]" in text
    p = g.Var("p0", g.TensorType((2, 3)))
    fused = g.Function([p], g.call("exp", p), attrs={"Primitive": 1})
    main = g.Function([x], g.Call(fused, [x]))
    text = str(main)
    assert "%0 = fn (%p0: Tensor[(2, 3), float32], Primitive=1) {" in text and "%2 = %0(%x);" in text


def test_module_holds_main_and_prints_like_relay(capsys):
    x = x_var()
    mod = g.Module.from_expr(g.call("exp", x))
    assert list(mod.functions) == ["main"] and mod["main"].params == (x,)
    mod.show()
    assert capsys.readouterr().out.startswith("def @main(%x: Tensor[(2, 3), float32])")
    with pytest.raises(KeyError, match="has no function 'foo'"):
        mod["foo"]  # noqa: B018
    with pytest.raises(g.GraphError, match="not a graph Function"):
        g.Module({"main": x})
    with pytest.raises(g.GraphError, match="used more than once"):
        g.Function([x, x_var()], x)
