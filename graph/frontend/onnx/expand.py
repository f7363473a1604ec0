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

Besides the default domain, the operators ONNX is still designing
(``ai.onnx.preview``: FlexAttention...) are read the same way, at the version of
that domain the model imports: their bodies are written with default-domain
operators.
"""
from __future__ import annotations

from .common import OnnxImportError, _onnx
from .opsets import imported_opset

#: the private domain an expanded node's function lives in until it is inlined
EXPANDED_DOMAIN = "tecc.expanded"
#: operators inside function bodies that are functions themselves, this deep at most
MAX_DEPTH = 4
#: ONNX's domains whose function bodies are read: the default one, and its preview
#: operators (a spelling of the default domain reads as "")
DOMAINS = ("", "ai.onnx.preview")


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def _opsets(model) -> dict:
    """Domain (of :data:`DOMAINS`) -> the version ``model`` imports: the default
    domain's as the importer reads it (:func:`.opsets.imported_opset`)."""
    out = {"": imported_opset(model)}
    for o in model.opset_import:
        if _domain(o.domain) in DOMAINS and _domain(o.domain):
            out[o.domain] = max(int(o.version), out.get(o.domain, 0))
    return {d: v for d, v in out.items() if v is not None}


def op_label(domain: str, op_type: str) -> str:
    """How the importer names an operator: its op type, prefixed by its domain
    outside the default one (``ai.onnx.preview.FlexAttention``)."""
    return f"{domain}.{op_type}" if _domain(domain) else op_type


def _node_schema(node, opsets: dict, converted):
    """The schema of ``node`` at the version its domain is imported at, when it is
    an operator of :data:`DOMAINS` without a converter in ``converted`` (default
    domain only: other domains' converters are not looked for here) and ONNX
    gives it a body there; else None."""
    domain = _domain(node.domain)
    if domain not in opsets or (not domain and node.op_type in converted):
        return None
    schema = _schema(node.op_type, opsets[domain], domain)
    return schema if schema is not None and _has_body(schema) else None


def _inliner():
    """ONNX's inliner (onnx 1.16 on), or None with an older onnx package: then no
    node is expanded, and those operators are reported as unsupported."""
    try:
        import onnx.inliner  # noqa: PLC0415 -- a submodule onnx does not import itself
    except ImportError:
        return None
    return onnx.inliner


def _schema(op_type: str, opset: int, domain: str = ""):
    defs = _onnx().defs
    try:
        return defs.get_schema(op_type, opset, domain)
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
    """``model`` with every node of :data:`DOMAINS` whose op type has no converter
    in ``converted`` and whose ONNX schema defines it as a function replaced by
    that function's nodes (see the module's description); ``model`` itself when
    there is none."""
    onnx = _onnx()
    opsets = _opsets(model)
    inliner = _inliner()
    if "" not in opsets or inliner is None:
        return model
    expanded = model
    for depth in range(MAX_DEPTH):
        todo = [(i, schema) for i, node in enumerate(expanded.graph.node)
                if (schema := _node_schema(node, opsets, converted)) is not None]
        if not todo:
            break
        if expanded is model:
            expanded = onnx.ModelProto()
            expanded.CopyFrom(model)
        types = _value_types(expanded)
        inlined = []  # the op types expanded at this depth
        for i, schema in todo:
            node = expanded.graph.node[i]
            fn = _body(schema, node, opsets[_domain(node.domain)], types)
            if fn is None or _blockers(fn, converted, opsets[""], depth):
                continue
            for what, given, formal in (("inputs", node.input, fn.input), ("outputs", node.output, fn.output)):
                if len(given) > len(formal):
                    # (a body ONNX builds from the attributes comes out short of them for values it does not take)
                    attrs = ", ".join(a.name for a in node.attribute)
                    raise OnnxImportError(f"{node.op_type} node {node.name or f'{node.op_type}_{i}'!r} has "
                                          f"{len(given)} {what}; ONNX's definition of {node.op_type}"
                                          + (f" for its attributes ({attrs})" if attrs else "")
                                          + f" takes at most {len(formal)}: check the attribute values")
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
            inlined.append(schema.name)
            expanded.functions.append(fn)
        if not inlined:
            break
        if all(o.domain != EXPANDED_DOMAIN for o in expanded.opset_import):
            expanded.opset_import.append(onnx.helper.make_opsetid(EXPANDED_DOMAIN, 1))
        ours = [(f.domain, f.name) for f in expanded.functions if f.domain == EXPANDED_DOMAIN]
        try:
            expanded = inliner.inline_selected_functions(expanded, ours)  # the model's own functions stay
        except RuntimeError as err:  # the inliner's own checks (C++ assertions)
            names = ", ".join(sorted(set(inlined)))
            raise OnnxImportError(f"from_onnx: ONNX's inliner cannot expand {names} into ONNX operators: "
                                  f"{str(err).strip().splitlines()[0] if str(err).strip() else err}") from None
        kept = [o for o in expanded.opset_import if o.domain != EXPANDED_DOMAIN]
        del expanded.opset_import[:]
        expanded.opset_import.extend(kept)
        kept = [f for f in expanded.functions if f.domain != EXPANDED_DOMAIN]
        del expanded.functions[:]
        expanded.functions.extend(kept)
    return expanded


def function_ops(converted) -> list:
    """The operators of :data:`DOMAINS` (named as :func:`op_label` does), sorted,
    with no converter in ``converted`` that ONNX defines as a function (at the
    newest version of their domain the onnx package knows) and that
    :func:`expand_functions` may import: a fixed body whose nodes convert, or a
    body built for each node (whose nodes are known only then: such a node that
    cannot be imported is reported by name).  Empty with an onnx package too old
    to inline (before 1.16)."""
    onnx = _onnx()
    if _inliner() is None:
        return []
    latest = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        domain = _domain(schema.domain)
        if domain in DOMAINS and (domain or schema.name not in converted):
            key = (domain, schema.name)
            if key not in latest or schema.since_version > latest[key].since_version:
                latest[key] = schema
    opset = onnx.defs.onnx_opset_version()
    out = []
    for (domain, name), schema in latest.items():
        if not _has_body(schema):
            continue
        fn = _fixed_body(schema, opset if not domain else schema.since_version)
        if fn is None or not _blockers(fn, converted, opset):  # None: a body built per node
            out.append(op_label(domain, name))
    return sorted(out)


def body_blockers(model, nodes, converted) -> list:
    """For each of ``nodes`` of ``model``, the op types, sorted, that keep it from
    being imported through its ONNX function body (:func:`_blockers`); empty where
    its operator has no body to read at the version of its domain the model
    imports.  Shape inference runs once for them all."""
    opsets = _opsets(model)
    types = None
    out = []
    for node in nodes:
        schema = _node_schema(node, opsets, converted) if "" in opsets else None
        if schema is None:
            out.append([])
            continue
        types = _value_types(model) if types is None else types
        fn = _body(schema, node, opsets[_domain(node.domain)], types)
        out.append(sorted(_blockers(fn, converted, opsets[""])) if fn is not None else [])
    return out
