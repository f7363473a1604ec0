"""Which default-domain opset a model is read with: the one home of that decision
(:func:`from_onnx <.importer.from_onnx>` and the ``onnx.backend`` Backend both ask
:func:`read_opset`).

The converters implement opsets :data:`~.common.MIN_OPSET` to
:data:`~.common.MAX_OPSET`, and the operators of :data:`~.common.NEWER_OPS` at the
later version given there.  A model of a newer (or older) opset is read as the
nearest implemented one when every node reads the same there:

* an operator whose version is the same at both opsets reads the same;
* an operator of :data:`~.common.NEWER_OPS` is read at its implemented version (a
  version after that one is compared with it as below);
* an operator of :data:`~.common.OLDER_OPS` is read at the model's own version,
  from the one given there on (Scan-8 and its batch axis);
* any other operator whose version differs must set only attributes the older (or
  newer) version has, of the same type, leave unset only attributes that default
  alike, and pass no input that version lacks.  ONNX's opsets 22 to 28 mostly add
  element types (bfloat16, 8-bit and 4-bit floats), which read the same; the
  importer refuses a dtype it does not compile, naming the tensor.

A model of an opset before 9 whose nodes would read differently at 9 is first
moved up to 9 by onnx's version converter (:func:`upgraded`), as ONNX defines
the versions' relation.  Otherwise the model is refused, naming each node, the operator's two versions and
what differs, with the conversion that fixes it.
"""
from __future__ import annotations

from .common import LATER_VERSIONS, MAX_OPSET, MIN_OPSET, NEWER_OPS, OLDER_OPS, OnnxImportError, _onnx, all_nodes


def imported_opset(model):
    """The default-domain opset ``model`` imports (the highest, if it lists
    several), or None."""
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return int(max(versions)) if versions else None


def default_opset(model, who="from_onnx", error=OnnxImportError) -> int:
    """:func:`imported_opset`, which the model must have unless none of its nodes
    is of the default domain (a model of training or contrib operators only: then
    :data:`~.common.MAX_OPSET`, which no node reads)."""
    opset = imported_opset(model)
    if opset is None and not any(n.domain in ("", "ai.onnx") for _, n in all_nodes(model.graph)):
        return MAX_OPSET
    if opset is None:
        raise error(f"{who}: the model imports no version of the default ONNX opset; add one "
                    f"(onnx.helper.make_opsetid('', {MAX_OPSET})) to model.opset_import, or pass opset=<version>")
    return opset


def node_reads_the_same(node, theirs, ours) -> str:
    """Why ``node`` (of operator version ``theirs``, an ``onnx.defs.OpSchema``) would
    mean something else read as version ``ours``; "" when it reads the same: it
    sets only attributes ``ours`` has (of the same type), every attribute it
    leaves unset has the same default in both, and it passes no more inputs than
    ``ours`` takes."""
    set_attrs = {a.name: a for a in node.attribute}
    for name, attr in set_attrs.items():
        if name not in ours.attributes:
            return f"attribute {name!r} does not exist in version {ours.since_version}"
        if int(ours.attributes[name].type) != int(attr.type):
            return f"attribute {name!r} has another type in version {ours.since_version}"
    for name in set(theirs.attributes) | set(ours.attributes):
        if name in set_attrs:
            continue
        a = theirs.attributes.get(name)
        b = ours.attributes.get(name)
        default_a = a.default_value.SerializeToString() if a is not None and not a.required else None
        default_b = b.default_value.SerializeToString() if b is not None and not b.required else None
        if a is not None and b is not None and default_a != default_b:
            return (f"attribute {name!r} defaults differently in versions {theirs.since_version} and "
                    f"{ours.since_version}")
        if a is None and b is not None and b.required:
            return f"attribute {name!r} is required in version {ours.since_version}"
    variadic = ours.inputs and ours.inputs[-1].option == type(ours.inputs[-1].option).Variadic
    if not variadic and len(node.input) > len(ours.inputs):
        return f"it has {len(node.input)} inputs, version {ours.since_version} takes {len(ours.inputs)}"
    return ""


def _implemented_schema(op_type: str, read_as: int):
    """The schema of the version of ``op_type`` the converters implement when the
    model is read as opset ``read_as`` (None: the operator does not exist there)."""
    defs = _onnx().defs
    version = NEWER_OPS.get(op_type)
    try:
        return defs.get_schema(op_type, max(read_as, version) if version else read_as)
    except defs.SchemaError:
        return None


def read_opset(model, opset=None, who="from_onnx", error=OnnxImportError) -> int:
    """The default-domain opset ``model`` is read with (see the module's
    description): ``opset`` (the model's own when None) where the converters
    implement it, else the nearest implemented one if every node reads the same
    there.

    Raises
    ------
    error (OnnxImportError unless given)
        If the model imports no default opset, or a node would read differently
        (naming the node, the operator's two versions and what differs).
    """
    opset = default_opset(model, who, error) if opset is None else int(opset)
    if MIN_OPSET <= opset <= MAX_OPSET and not any(
            node.op_type in NEWER_OPS and node.domain in ("", "ai.onnx") for node in model.graph.node):
        return opset
    read_as = min(max(opset, MIN_OPSET), MAX_OPSET)
    changed = _changed_nodes(model, opset, read_as)
    if changed:
        raise error(f"{who}: the model uses ONNX opset {opset}; tecc implements opsets {MIN_OPSET} to {MAX_OPSET}"
                    f"{_newer_ops_note()}, and reading it as opset {read_as} would change {'; '.join(changed)}; "
                    f"convert the model with onnx.version_converter.convert_version(model, {read_as})")
    return read_as


def upgraded(model, opset=None):
    """``model``, or a copy that onnx's version converter moved up to opset
    :data:`~.common.MIN_OPSET` when the model imports an older default opset
    and some node would read differently there (Upsample-7's ``scales``
    attribute, an input at opset 9).  The converter rewrites such nodes as
    their later versions mean the same (its adapters are ONNX's own); where it
    cannot convert the model, ``model`` is returned unchanged and
    :func:`read_opset` refuses it, naming the nodes.  A model the user reads
    at another ``opset`` than its own is left as it is."""
    own = imported_opset(model)
    if own is None or own >= MIN_OPSET or (opset is not None and int(opset) != own) \
            or not _changed_nodes(model, own, MIN_OPSET):
        return model
    _onnx()
    import onnx.version_converter  # noqa: PLC0415 -- a submodule `import onnx` does not load

    try:
        converted = onnx.version_converter.convert_version(model, MIN_OPSET)
    except (RuntimeError, ValueError, TypeError):  # an operator its adapters do not know: refused below
        return model
    return converted if imported_opset(converted) == MIN_OPSET else model


def _changed_nodes(model, opset: int, read_as: int) -> list:
    """Each default-domain node of ``model`` (of opset ``opset``) that would read
    differently at opset ``read_as``, as words naming the node and what differs."""
    defs = _onnx().defs
    from .converters import _CONVERTERS  # noqa: PLC0415 -- the table imports the converters, which import common

    changed = []
    for i, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in _CONVERTERS:
            continue  # expanded into its ONNX function first (.expand), or listed among the unsupported operators
        try:
            theirs = defs.get_schema(node.op_type, opset)
        except defs.SchemaError:
            if node.op_type in NEWER_OPS:  # converted, but not an operator of the model's opset
                changed.append(f"{node.op_type} node {node.name or f'{node.op_type}_{i}'!r} (the operator exists "
                               f"from opset {NEWER_OPS[node.op_type]} on; the model imports opset {opset})")
            continue  # not an operator of this opset: the importer lists it among the unsupported ones
        where = f"{node.op_type} node {node.name or f'{node.op_type}_{i}'!r}"
        ours = _implemented_schema(node.op_type, read_as)
        if ours is None:
            changed.append(f"{where} (the operator does not exist at opset {read_as})")
            continue
        if theirs.since_version == ours.since_version or theirs.since_version >= OLDER_OPS.get(node.op_type, 1 << 30) \
                or theirs.since_version <= LATER_VERSIONS.get(node.op_type, 0):
            continue  # the same version, or one the converter reads itself (Scan-8, Cast-24)
        why = node_reads_the_same(node, theirs, ours)
        if why:
            changed.append(f"{where} ({node.op_type}-{theirs.since_version} read as {node.op_type}-"
                           f"{ours.since_version}: {why})")
    return changed


def _newer_ops_note() -> str:
    later = {**NEWER_OPS, **LATER_VERSIONS}
    return (" (and " + ", ".join(f"{op}-{v}" for op, v in sorted(later.items())) + ")") if later else ""
