"""What every part of the ONNX importer shares: the opsets it reads, its error,
the node wrapper converters read attributes through, and small axis helpers."""
from __future__ import annotations

import numpy as np

from ...ir import GraphError


#: the default-domain opsets the converters implement
MIN_OPSET, MAX_OPSET = 9, 21
#: operators the converters implement at a version after MAX_OPSET (op type ->
#: that version): a model of a later opset that uses them is read as MAX_OPSET
#: with these at their version (see :mod:`.opsets`)
NEWER_OPS = {"RMSNormalization": 23, "RotaryEmbedding": 23, "Swish": 24, "TensorScatter": 24, "BitCast": 26,
             "CumProd": 26, "SpaceToDepth": 28}

#: operators whose versions after MAX_OPSET the converters read themselves, the
#: attributes those versions added included (Cast-24's round_mode, for the 8-bit
#: exponent type): op type -> the newest version read (a model of a later opset whose
#: node is of at most that version reads as it is)
LATER_VERSIONS = {"Cast": 28, "CastLike": 25}

#: operators the converters implement from a version before MIN_OPSET on, reading
#: the model's own opset (``ctx.own_opset``) to tell the versions apart: a model of
#: an older opset that uses them reads the same at MIN_OPSET (op type -> that version)
OLDER_OPS = {"Scan": 8}

#: constants larger than this many elements are left to the graph (FoldConstant)
_FOLD_LIMIT = 1 << 24


class OnnxImportError(GraphError):
    """An ONNX model cannot be imported: a malformed file, an unsupported operator
    or opset, an input shape left symbolic, an attribute tecc cannot honour.

    ``operands``: for an operand the model computes at run time that tecc needs
    when compiling, the ONNX names of that value (empty otherwise); the ONNX
    backend binds the graph inputs behind them at the first run."""

    operands: tuple = ()
    #: a converter failed with an error of its own on a node ONNX finds valid: a fault
    #: of tecc's, not of the model (:mod:`.diagnose`)
    internal: bool = False


def _onnx():
    try:
        import onnx  # noqa: PLC0415 -- optional until a model is imported
    except ImportError as err:  # pragma: no cover - onnx is a dependency
        raise OnnxImportError("from_onnx needs the onnx package: pip install onnx") from err
    return onnx


def _np_dtype(elem_type: int, where: str) -> str:
    onnx = _onnx()
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        raise OnnxImportError(f"{where}: ONNX element type {elem_type} has no tecc dtype") from None
    from ....runtime.dtypes import SUPPORTED  # noqa: PLC0415

    # the dtypes tecc compiles: the types numpy lacks (bfloat16, float8_e4m3fn, int4...) are
    # ml_dtypes' (kind 'V'), and the graph holds such tensors as ml_dtypes arrays
    if str(dtype) not in SUPPORTED:
        raise OnnxImportError(f"{where}: tensors of dtype {dtype} (ONNX type {elem_type}) are not supported; the "
                              f"importer takes {', '.join(SUPPORTED)}: Cast the tensor in the model first")
    return str(dtype)


def subgraphs(proto):
    """The subgraphs (GraphProto) node ``proto``'s attributes hold: a Loop's body,
    an If's branches."""
    onnx = _onnx()
    for a in proto.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def all_nodes(graph):
    """``(index, NodeProto)`` of every node of ``graph`` and, after each node, of
    the nodes of its subgraphs, at any depth (the index is within its graph)."""
    for i, proto in enumerate(graph.node):
        yield i, proto
        for g in subgraphs(proto):
            yield from all_nodes(g)


class OnnxNode:
    """One ONNX node as the converters see it: ``op_type``, ``name``, ``inputs`` and
    ``outputs`` (names; ``""`` for an optional one left out), the attributes as
    Python values, and the ``opset`` the model is read with."""

    def __init__(self, proto, index: int, opset: int, scope: str = ""):
        onnx = _onnx()
        self.op_type = proto.op_type
        self.domain = proto.domain
        # a node of a subgraph (a Loop's body, an If's branch) is named after it: "<Loop node>/<body>/<node>"
        self.name = scope + (proto.name or f"{proto.op_type}_{index}")
        self.proto = proto
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.opset = opset
        self.attrs = {}
        for a in proto.attribute:
            value = onnx.helper.get_attribute_value(a)
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            elif isinstance(value, onnx.TensorProto):
                value = onnx.numpy_helper.to_array(value)
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode("utf-8", "replace") for v in value]
            self.attrs[a.name] = value

    @property
    def where(self) -> str:
        return f"{self.op_type} node {self.name!r}"

    def attr(self, key, default=None):
        """Attribute ``key``, or ``default`` when the node does not set it."""
        return self.attrs.get(key, default)

    def flag(self, key, default: int) -> bool:
        """The 0-or-1 attribute ``key`` (keepdims, ceil_mode, transA...) as a bool;
        another value is refused (runtimes read one differently: onnxruntime's
        reductions keep dimensions only for 1, its Unique sorts for any value but 0)."""
        value = self.attrs.get(key, default)
        if isinstance(value, (int, np.integer)) and int(value) in (0, 1):
            return bool(value)
        raise OnnxImportError(f"{self.where}: attribute {key!r} is {value!r}; it must be 0 or 1")

    def required(self, key):
        """Attribute ``key``, which the node must set."""
        if key not in self.attrs:
            raise OnnxImportError(f"{self.where}: the attribute {key!r} is required but missing")
        return self.attrs[key]

    def fail(self, message: str, operands=()):
        """Raise an import error about this node; ``operands``: the names of the
        values it needed known when compiling (:attr:`OnnxImportError.operands`)."""
        err = OnnxImportError(f"{self.where}: {message}")
        err.operands = list(operands)
        raise err


def _normalize_axis(axis, rank: int, node: OnnxNode, what: str = "axis") -> int:
    axis = int(axis)
    if not -rank <= axis < rank:
        node.fail(f"{what} {axis} is out of range for a tensor of rank {rank} (valid: {-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _axis_slice(ctx, x, axis, begin, end):
    """``x[..., begin:end, ...]`` along ``axis`` (a strided_slice of the other axes whole)."""
    rank = ctx.rank(x)
    b, e = [0] * rank, list(ctx.shape(x))
    b[axis], e[axis] = begin, end
    return ctx.call("strided_slice", x, begin=tuple(b), end=tuple(e), strides=(1,) * rank)
