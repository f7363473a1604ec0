"""Type inference: the shape and dtype of every value of a graph.

Each node's type comes from its operands' types: a :class:`~tecc.graph.ir.Var` has
its annotation, a :class:`~tecc.graph.ir.Constant` its array's, a call of an operator
what the operator's ``infer`` says (:mod:`tecc.graph.op`), a call of a fused
:class:`~tecc.graph.ir.Function` its body's type once its parameters take the
arguments' types.  Types are recorded on the nodes (``node.checked_type``); the
graph itself is unchanged, so the pass returns the same function.
"""
from __future__ import annotations

from ..ir import (
    Call, Constant, Function, GraphError, TensorType, Tuple, TupleGetItem, TupleType, Type, Var, data_operands,
    post_order,
)
from ..op import Op


def _describe(call: Call) -> str:
    name = call.op.name if isinstance(call.op, Op) else "a fused function"
    span = f" (node {call.span!r})" if call.span else ""
    return f"{name}{span}"


def _untyped(var: Var, by: str = "") -> GraphError:
    where = f" and {by} cannot tell its shape from its other operands and attributes" if by else ""
    return GraphError(f"input %{var.name_hint} has no type{where}: give it a shape and dtype "
                      "(Var(name, TensorType(shape, dtype)), relay.var(name, shape=...))")


def _axis_len(ty, axis):
    return ty.shape[axis] if -ty.ndim <= axis < ty.ndim else None


def _conv2d_weight(attrs, data):
    channels, kernel = attrs.get("channels"), attrs.get("kernel_size")
    layout = attrs.get("data_layout", "NCHW")
    if channels is None or kernel is None or layout not in ("NCHW", "NHWC") or data.ndim != 4:
        return None
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else tuple(kernel)
    c_in = data.shape[layout.index("C")]
    per_group = c_in // attrs.get("groups", 1)
    dims = {"O": channels, "I": per_group, "H": kh, "W": kw}
    return tuple(dims[k] for k in attrs.get("kernel_layout") or ("OIHW" if layout == "NCHW" else "HWIO"))


#: what an operator tells of its operands from the others (Relay's type relations,
#: run backwards for the cases TVM code relies on: ``relay.var("weight")`` with no
#: shape, given to a convolution with ``channels`` and ``kernel_size``): op name ->
#: f(attrs, data type) -> {operand index: shape}
_OPERAND_SHAPES = {
    "nn.conv2d": lambda attrs, d: {1: _conv2d_weight(attrs, d)},
    "nn.dense": lambda attrs, d: {1: (attrs["units"], d.shape[-1]) if attrs.get("units") is not None else None},
    "nn.bias_add": lambda attrs, d: {1: (_axis_len(d, attrs.get("axis", 1)),)},
    "nn.batch_norm": lambda attrs, d: {k: (_axis_len(d, attrs.get("axis", 1)),) for k in range(1, 5)},
    "nn.layer_norm": lambda attrs, d: {k: (_axis_len(d, attrs.get("axis", -1)),) for k in (1, 2)},
    "nn.instance_norm": lambda attrs, d: {k: (_axis_len(d, attrs.get("axis", 1)),) for k in (1, 2)},
    "nn.prelu": lambda attrs, d: {1: (_axis_len(d, attrs.get("axis", 1)),)},
}


def _type_operands(node: Call) -> None:
    """Give the untyped inputs among ``node``'s operands the types its operator
    implies (:data:`_OPERAND_SHAPES`); each becomes the input's annotation too, as
    Relay's type inference fills a ``relay.var`` declared without one."""
    untyped = [k for k, a in enumerate(node.args) if isinstance(a, Var) and not a.has_type]
    if not untyped:
        return
    name = node.op.name if isinstance(node.op, Op) else None
    rule = _OPERAND_SHAPES.get(name)
    data = node.args[0].checked_type if node.args and node.args[0].has_type else None
    shapes = rule(node.attrs, data) if rule is not None and isinstance(data, TensorType) else {}
    for k in untyped:
        shape = shapes.get(k)
        if shape is None or any(d is None for d in shape):
            raise _untyped(node.args[k], _describe(node))
        ty = TensorType(tuple(shape), data.dtype)
        var = node.args[k]
        object.__setattr__(var, "type_annotation", ty)  # filled once, as Relay's inference does
        var._set_type(ty)


def _infer_node(node) -> Type:
    if isinstance(node, Var):
        if node.type_annotation is None:
            raise _untyped(node)
        return node.type_annotation
    if isinstance(node, Constant):
        return node.tensor_type
    if isinstance(node, Tuple):
        return TupleType([f.checked_type for f in node.fields])
    if isinstance(node, TupleGetItem):
        ty = node.tuple_value.checked_type
        if not isinstance(ty, TupleType):
            raise GraphError(f"TupleGetItem .{node.index} of a value of type {ty}, which is not a tuple")
        if not 0 <= node.index < len(ty.fields):
            raise GraphError(f"TupleGetItem .{node.index} of a tuple of {len(ty.fields)} fields")
        return ty.fields[node.index]
    if isinstance(node, Function):
        return node.body.checked_type
    if isinstance(node, Call):
        arg_types = [a.checked_type for a in node.args]
        if isinstance(node.op, Function):
            fn = node.op
            if len(fn.params) != len(arg_types):
                raise GraphError(f"a call of a function of {len(fn.params)} parameters with {len(arg_types)} "
                                 "arguments")
            for p, t in zip(fn.params, arg_types):
                if p.type_annotation is not None and p.type_annotation != t:
                    raise GraphError(f"parameter %{p.name_hint} of a fused function expects {p.type_annotation}, "
                                     f"got {t}")
            return fn.body.checked_type
        try:
            ty = node.op.infer(arg_types, node.attrs)
        except GraphError as err:
            msg = str(err)
            where = _describe(node)
            raise GraphError(msg if msg.startswith(node.op.name) else f"{where}: {msg}") from None
        assert isinstance(ty, Type), f"{node.op.name}.infer returned {ty!r}"
        return ty
    raise TypeError(f"infer_type: unknown node {type(node).__name__}")


def _scope_operands(node) -> list:
    """What a node of one scope is typed from: a called fused Function is not
    entered (its body is a scope of its own, typed from the call's arguments)."""
    if isinstance(node, Function):
        return [node.body]
    return list(data_operands(node))


def _scope_order(root) -> list:
    """The untyped nodes of one scope, operands first (a typed node was typed with
    everything below it: nothing to walk there)."""
    return post_order(root, _scope_operands, stop=lambda node: node.has_type)


def infer_type(expr):
    """Record the type of every node reachable from ``expr`` (a Function, an
    expression, or a :class:`~tecc.graph.ir.Module`, all of whose functions are
    typed); return ``expr``.  An operator that cannot take its operands raises a
    :class:`~tecc.graph.ir.GraphError` naming it."""
    from ..ir import Module  # noqa: PLC0415

    if isinstance(expr, Module):
        for _, fn in expr.items():
            infer_type(fn)
        return expr
    if isinstance(expr, Function):  # a parameter nothing uses still has its type
        for p in expr.params:
            if not p.has_type and p.type_annotation is not None:
                p._set_type(p.type_annotation)
    for node in _scope_order(expr):
        if node.has_type:
            continue
        if isinstance(node, Var) and node.type_annotation is None:
            continue  # typed by the operator that takes it (_type_operands), or refused there
        if isinstance(node, Call) and isinstance(node.op, Op):
            _type_operands(node)
        if isinstance(node, Call) and isinstance(node.op, Function):
            fn = node.op
            if not fn.body.has_type:
                for p, a in zip(fn.params, node.args):
                    if not p.has_type and p.type_annotation is None:
                        p._set_type(a.checked_type)
                infer_type(fn.body)
            if not fn.has_type:
                fn._set_type(fn.body.checked_type)
        for a in data_operands(node):
            if isinstance(a, Var) and not a.has_type:
                raise _untyped(a, _describe(node) if isinstance(node, Call) else "")
        node._set_type(_infer_node(node))
    if isinstance(expr, Var) and not expr.has_type:
        raise _untyped(expr)
    if isinstance(expr, Function) and isinstance(expr.body, Var) and not expr.body.has_type:
        raise _untyped(expr.body)
    return expr
