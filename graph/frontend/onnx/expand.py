"""Operators ONNX defines as functions of other operators, imported through that
definition where tecc has no converter of their own.

Many newer operators (Attention, SwiGLU, LinearAttention, CausalConvWithState...)
come with a *function body* in their ONNX schema: the same computation written
with older operators, fixed or built for the node at hand (a context-dependent
function: Attention's depends on its inputs' ranks and attributes).  Before a
model is converted, :func:`expand_functions` replaces each node of the default
domain whose operator has no converter (:data:`.converters._CONVERTERS`) and has
such a body at the model's opset by the body's nodes (ONNX's own inliner, the
node's unset attributes taking the schema's defaults), again for operators in
the bodies, a few levels deep.  A node that cannot be expanded is left as it is:
the importer then lists it among the unsupported operators.
"""
from __future__ import annotations

from .common import _onnx
from .opsets import imported_opset

#: the private domain an expanded node's function lives in until it is inlined
EXPANDED_DOMAIN = "tecc.expanded"
#: operators inside function bodies that are functions themselves, this deep at most
MAX_DEPTH = 4


def _inliner():
    """ONNX's inliner (onnx 1.16 on), or None with an older onnx package: then no
    node is expanded, and those operators are reported as unsupported."""
    try:
        import onnx.inliner  # noqa: PLC0415 -- a submodule onnx does not import itself
    except ImportError:
        return None
    return onnx.inliner


def _schema(op_type: str, opset: int):
    defs = _onnx().defs
    try:
        return defs.get_schema(op_type, opset)
    except defs.SchemaError:
        return None


def _has_body(schema) -> bool:
    return bool(list(getattr(schema, "function_opset_versions", ()))
                or list(getattr(schema, "context_dependent_function_opset_versions", ())))


def _value_types(model) -> dict:
    """Value name -> ``TypeProto`` of every value ONNX's shape inference types."""
    onnx = _onnx()
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 -- untyped values just cannot take a context-dependent body
        inferred = model
    graph = inferred.graph
    types = {v.name: v.type for v in list(graph.input) + list(graph.value_info) + list(graph.output)}
    for init in graph.initializer:
        types.setdefault(init.name, onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims)))
    return types


def _fixed_body(schema, opset: int):
    """The fixed ``FunctionProto`` of ``schema`` that applies at ``opset`` (that of
    the newest version at most ``opset``, unless a context-dependent body is
    newer), or None."""
    fixed = [v for v in schema.function_opset_versions if v <= opset]
    if not fixed or any(max(fixed) < v <= opset for v in schema.context_dependent_function_opset_versions):
        return None
    fn = _onnx().FunctionProto()
    fn.ParseFromString(schema.get_function_with_opset_version(max(fixed)))
    return fn


def _body(schema, node, opset: int, types: dict):
    """The ``FunctionProto`` defining ``node`` at ``opset`` (the body of the newest
    version at most ``opset``), or None."""
    onnx = _onnx()
    fn = _fixed_body(schema, opset)
    context = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if fn is None and context:
        if any(name and name not in types for name in node.input):
            return None  # an input of unknown type: its body cannot be built
        input_types = [types[name].SerializeToString() if name else onnx.TypeProto().SerializeToString()
                       for name in node.input]
        fn = onnx.FunctionProto()
        try:
            fn.ParseFromString(schema.get_context_dependent_function_with_opset_version(
                max(context), node.SerializeToString(), input_types))
        except Exception:  # noqa: BLE001 -- ONNX refuses to build it for this node: leave the node unsupported
            return None
    return fn if fn is not None and len(fn.node) else None


def _blockers(fn, converted, opset: int, depth: int = 0) -> set:
    """The op types of the body ``fn`` that keep it from converting: those of
    another domain, or without a converter and without a body of their own (a
    fixed body checked the same way, a context-dependent one -- which needs the
    types of the values -- taken on trust).  A node whose body has blockers is
    left unexpanded, so that the error names it rather than a node inside."""
    out = set()
    for node in fn.node:
        if node.domain in ("", "ai.onnx") and node.op_type in converted:
            continue
        schema = _schema(node.op_type, opset) if node.domain in ("", "ai.onnx") else None
        if schema is None or not _has_body(schema) or depth + 1 >= MAX_DEPTH:
            out.add(node.op_type)
            continue
        inner = _fixed_body(schema, opset)
        if inner is not None and _blockers(inner, converted, opset, depth + 1):
            out.add(node.op_type)
    return out


def expand_functions(model, converted) -> object:
    """``model`` with every default-domain node whose op type is not in
    ``converted`` and whose ONNX schema defines it as a function replaced by that
    function's nodes (see the module's description); ``model`` itself when there
    is none."""
    onnx = _onnx()
    opset = imported_opset(model)
    inliner = _inliner()
    if opset is None or inliner is None:
        return model
    expanded = model
    for depth in range(MAX_DEPTH):
        todo = [(i, schema) for i, node in enumerate(expanded.graph.node)
                if node.domain in ("", "ai.onnx") and node.op_type not in converted
                and (schema := _schema(node.op_type, opset)) is not None and _has_body(schema)]
        if not todo:
            break
        if expanded is model:
            expanded = onnx.ModelProto()
            expanded.CopyFrom(model)
        types = _value_types(expanded)
        inlined = 0
        for i, schema in todo:
            node = expanded.graph.node[i]
            fn = _body(schema, node, opset, types)
            if fn is None or _blockers(fn, converted, opset, depth):
                continue
            set_attrs = {a.name for a in node.attribute}
            for name, attr in schema.attributes.items():
                if name not in set_attrs and not attr.required and attr.default_value.name:
                    node.attribute.append(attr.default_value)  # the body reads it as an attribute reference
            fn.domain = EXPANDED_DOMAIN
            fn.name = f"{node.op_type}_{depth}_{i}"
            node.domain, node.op_type = EXPANDED_DOMAIN, fn.name
            for imp in fn.opset_import:  # the body's other domains (its default opset is the model's)
                if imp.domain not in ("", "ai.onnx") and all(o.domain != imp.domain for o in expanded.opset_import):
                    expanded.opset_import.append(imp)
            expanded.functions.append(fn)
            inlined += 1
        if not inlined:
            break
        if all(o.domain != EXPANDED_DOMAIN for o in expanded.opset_import):
            expanded.opset_import.append(onnx.helper.make_opsetid(EXPANDED_DOMAIN, 1))
        ours = [(f.domain, f.name) for f in expanded.functions if f.domain == EXPANDED_DOMAIN]
        expanded = inliner.inline_selected_functions(expanded, ours)  # the model's own functions stay
        kept = [o for o in expanded.opset_import if o.domain != EXPANDED_DOMAIN]
        del expanded.opset_import[:]
        expanded.opset_import.extend(kept)
        kept = [f for f in expanded.functions if f.domain != EXPANDED_DOMAIN]
        del expanded.functions[:]
        expanded.functions.extend(kept)
    return expanded


def function_ops(converted) -> list:
    """The default-domain op types, sorted, with no converter in ``converted`` that
    ONNX defines as a function (at the newest opset the onnx package knows) and
    that :func:`expand_functions` may import: a fixed body whose nodes convert, or
    a body built for each node (whose nodes are known only then: such a node that
    cannot be imported is reported by name).  Empty with an onnx package too old
    to inline (before 1.16)."""
    onnx = _onnx()
    if _inliner() is None:
        return []
    latest = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx") and schema.name not in converted:
            if schema.name not in latest or schema.since_version > latest[schema.name].since_version:
                latest[schema.name] = schema
    opset = onnx.defs.onnx_opset_version()
    out = []
    for name, schema in latest.items():
        if not _has_body(schema):
            continue
        fn = _fixed_body(schema, opset)
        if fn is None or not _blockers(fn, converted, opset):  # None: a body built per node
            out.append(name)
    return sorted(out)


def body_blockers(model, nodes, converted) -> list:
    """For each of ``nodes`` of ``model``, the op types, sorted, that keep it from
    being imported through its ONNX function body (:func:`_blockers`); empty where
    its operator has no body to read at the model's opset.  Shape inference runs
    once for them all."""
    opset = imported_opset(model)
    types = None
    out = []
    for node in nodes:
        schema = _schema(node.op_type, opset) if opset is not None and node.domain in ("", "ai.onnx") else None
        if schema is None or not _has_body(schema):
            out.append([])
            continue
        types = _value_types(model) if types is None else types
        fn = _body(schema, node, opset, types)
        out.append(sorted(_blockers(fn, converted, opset)) if fn is not None else [])
    return out
