"""Reading a model: loading and checking the file, the importer that walks the
graph (binding input shapes, evaluating shape subgraphs with numpy, calling one
converter per node), :func:`from_onnx` and :func:`supported_ops`."""
from __future__ import annotations

import collections
import functools
import os

import numpy as np

from ...ir import (
    Call, Constant, Function, GraphError, Module, TensorType, Tuple, TupleGetItem, Var, dtype_name, numpy_dtype,
    post_order_visit,
)
from ....errors import TeccError
from ....runtime.dtypes import storage_float
from ....runtime.graph_executor import RANDOM_COUNTER
from ...op import call as graph_call
from ....tir.transform.pipeline import PassContext
from ...transform.fold_constant import is_narrow_weight
from ...transform.infer_type import infer_type
from .common import OnnxImportError, OnnxNode, _FOLD_LIMIT, _np_dtype, _onnx, _prod, all_nodes
from .convert_contrib import CONTRIB_CONVERTERS, CONTRIB_DOMAIN
from .convert_ml import ML_CONVERTERS, ML_DOMAIN, ML_HINTS
from .convert_training import TRAINING_CONVERTERS, TRAINING_DOMAIN
from .converters import _CONVERTERS
from .convert_sequence import OnnxOptional, OnnxSequence, describe, is_container
from .diagnose import converter_failed
from .expand import body_blockers, expand_functions
from .expand import function_ops as _function_ops
from .opsets import imported_opset, read_opset, upgraded


# ---------------------------------------------------------------------------------------
# reading the model
# ---------------------------------------------------------------------------------------
def _converter(node):
    """The converter of an ONNX node (a NodeProto or OnnxNode): the default domain's,
    onnxruntime's contrib operators' (com.microsoft), ONNX's training optimizers'
    (ai.onnx.preview.training) or its classic machine-learning operators'
    (ai.onnx.ml); None when tecc has none."""
    if node.domain in ("", "ai.onnx"):
        return _CONVERTERS.get(node.op_type)
    if node.domain == CONTRIB_DOMAIN:
        return CONTRIB_CONVERTERS.get(node.op_type)
    if node.domain == TRAINING_DOMAIN:
        return TRAINING_CONVERTERS.get(node.op_type)
    if node.domain == ML_DOMAIN:
        return ML_CONVERTERS.get(node.op_type)
    return None


def _load(model):
    """A checked ``ModelProto`` from a ModelProto, a path or serialized bytes."""
    onnx = _onnx()
    from google.protobuf.message import DecodeError  # noqa: PLC0415 -- protobuf comes with onnx

    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise OnnxImportError(f"from_onnx: there is no file {path!r}; give the path of a .onnx file or a "
                                  "loaded onnx.ModelProto")
        try:
            model = onnx.load(path)
        except (DecodeError, ValueError, RuntimeError) as err:
            detail = f" ({err})" if str(err) else ""
            raise OnnxImportError(f"from_onnx: {path!r} is not a readable ONNX model: the file is truncated or "
                                  f"corrupt{detail}; export the model again") from None
        where = repr(path)
    elif isinstance(model, (bytes, bytearray)):
        try:
            model = onnx.load_from_string(bytes(model))
        except (DecodeError, ValueError, RuntimeError) as err:
            detail = f" ({err})" if str(err) else ""
            raise OnnxImportError(f"from_onnx: the bytes given are not a readable ONNX model: they are truncated or "
                                  f"corrupt{detail}") from None
        where = "the model bytes"
    elif isinstance(model, onnx.ModelProto):
        where = "the model"
    else:
        raise OnnxImportError(f"from_onnx takes an onnx.ModelProto or the path of a .onnx file, got "
                              f"{type(model).__name__}")
    model = _with_contrib_opset(model)
    if model.ByteSize() >= (1 << 31) - 1:
        return model  # the checker takes a model this large only by path: the importer's own checks apply
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        if not _valid_once_outputs_typed(onnx, model, err):
            first = str(err).strip().splitlines()[0] if str(err).strip() else "invalid model"
            raise OnnxImportError(f"from_onnx: {where} is not a valid ONNX model ({first}); a truncated or "
                                  "corrupt file reads this way too: export the model again") from None
    return model


def _with_contrib_opset(model):
    """``model``, or a copy importing version 1 of onnxruntime's contrib domain where its
    nodes use that domain without importing it (onnxruntime runs such models, which
    hand-built and older converted models are; the checker refuses them)."""
    uses = any(n.domain == CONTRIB_DOMAIN for n in model.graph.node)
    if not uses or any(o.domain == CONTRIB_DOMAIN for o in model.opset_import):
        return model
    fixed = type(model)()
    fixed.CopyFrom(model)
    entry = fixed.opset_import.add()
    entry.domain, entry.version = CONTRIB_DOMAIN, 1
    return fixed


def _valid_once_outputs_typed(onnx, model, err) -> bool:
    """Whether ``model``, which the checker refused with ``err``, is valid but for graph
    outputs declared without a shape or a type (``make_tensor_value_info(name, type,
    None)``, ``make_empty_tensor_value_info(name)``: onnxruntime runs such models):
    the checker passes a copy whose shapeless outputs declare a shape (an empty one:
    the checker reads no dimension of it) and whose untyped ones a type.  The importer
    infers every type and shape itself and reads none of the outputs'."""
    if not any(f"Field '{field}' of '{owner}' is required but missing" in str(err)
               for field, owner in (("shape", "type"), ("type", "value_info"), ("elem_type", "tensor_type"))):
        return False
    if any(not v.type.tensor_type.HasField("shape") for v in model.graph.input):
        return False  # an input's shape is the user's to give: the checker's message stands
    typed = type(model)()
    typed.CopyFrom(model)
    for v in typed.graph.output:
        if not v.HasField("type"):
            v.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        if v.type.HasField("tensor_type"):
            if not v.type.tensor_type.elem_type:
                v.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            if not v.type.tensor_type.HasField("shape"):
                v.type.tensor_type.shape.SetInParent()
    try:
        onnx.checker.check_model(typed)
    except onnx.checker.ValidationError:
        return False
    return True


def _model_opset(model, opset) -> int:
    """The default-domain opset the model is read with (:func:`.opsets.read_opset`)."""
    return read_opset(model, opset)


# ---------------------------------------------------------------------------------------
# numpy evaluation of operators whose operands are all constants (shape subgraphs)
# ---------------------------------------------------------------------------------------
def _trunc_divide(a, b):
    if a.dtype.kind in "iu":
        q = np.abs(a) // np.abs(b)
        return (q * np.sign(a) * np.sign(b)).astype(a.dtype)
    return np.divide(a, b).astype(a.dtype)


def _cast_array(a, dtype, saturate):
    """The graph op ``cast`` of a constant (numpy's, ml_dtypes' conversion)."""
    if saturate:  # the largest finite value where it is past it, NaN kept
        top = storage_float(dtype).max
        a = a.astype(np.float32) if a.dtype.kind not in "f" or a.dtype.itemsize < 4 else a
        a = np.where(a > top, top, np.where(a < -top, -top, a)).astype(a.dtype)
    return a.astype(numpy_dtype(dtype))


def _strided_slice(a, begin, end, strides=None, **_):
    strides = strides or (1,) * len(begin)
    index = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))
    return a[index]


def _reduce_fn(fn):
    def run(a, axis=None, keepdims=False, **_):
        return np.asarray(fn(a, axis=tuple(axis) if axis is not None else None, keepdims=keepdims))

    return run


#: graph operator -> numpy function of the operands' arrays and the call's attributes
_FOLDERS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": _trunc_divide,
    "floor_mod": lambda a, b: np.mod(a, b),
    "trunc_mod": lambda a, b: np.fmod(a, b),
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "logical_not": np.logical_not,
    "negative": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "sqrt": np.sqrt,
    "nn.relu": lambda a: np.maximum(a, np.zeros((), a.dtype)),
    "expand_dims": lambda a, axis, num_newaxis=1: a.reshape(a.shape[:axis % (a.ndim + 1)] + (1,) * num_newaxis
                                                            + a.shape[axis % (a.ndim + 1):]),
    "cast": lambda a, dtype, saturate=False: _cast_array(a, dtype, saturate),
    "clip": lambda a, a_min, a_max: np.clip(a, a_min, a_max).astype(a.dtype),
    "reshape": lambda a, newshape, **_: a.reshape(newshape),
    "transpose": lambda a, axes=None: np.transpose(a, axes),
    "concatenate": lambda *arrays, axis: np.concatenate(arrays, axis=axis),
    "take": lambda a, idx, axis=None, mode="clip", **_: np.take(a, idx, axis=axis,
                                                                mode="clip" if mode == "fast" else mode),
    "strided_slice": _strided_slice,
    "broadcast_to": lambda a, shape: np.broadcast_to(a, shape),
    "tile": lambda a, reps: np.tile(a, reps),
    "where": np.where,
    "sum": _reduce_fn(np.sum),
    "prod": _reduce_fn(np.prod),
    "max": _reduce_fn(np.max),
    "min": _reduce_fn(np.min),
}


# ---------------------------------------------------------------------------------------
# the importer
# ---------------------------------------------------------------------------------------
#: the largest tensor a model may compute (no machine tecc targets holds more in one
#: buffer; a model asking for more has a size wrong, and folding it would never end)
_TENSOR_BYTES = 1 << 40


def _static_elements(ty):
    """The number of elements of tensor type ``ty``, or None (a tuple, a symbolic shape)."""
    if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
        return None
    return _prod(ty.shape)


class _Importer:
    """Converts one model's graph; converters call back into it (``ctx``) to build
    calls, read shapes and constant values."""

    def __init__(self, model, shape, dtype, opset, freeze_params):
        self.model = model
        self.graph = model.graph
        self.shape_dict = dict(shape or {})
        self.dtype = dtype
        self.opset = _model_opset(model, opset)
        # the opset the model itself imports, where a converter must tell versions the read opset hides
        # apart (Scan-8, read at opset 9, has a batch axis)
        self.own_opset = imported_opset(model) or self.opset
        self.freeze_params = bool(freeze_params)
        self.values = {}        # ONNX value name -> Expr
        self.unavailable = {}   # ONNX value name -> why it cannot be used
        self.init_values = {}   # parameter Var -> numpy array
        self.node = None        # the node being converted (for spans and messages)
        self.row_counts = {}        # ONNX output name -> the graph value counting its rows (NonMaxSuppression)
        self.random_counter = None  # the run counter's input, once a node draws random numbers
        self.random_draws = 0       # draws so far: each draw's salt
        # TVM's "relay.frontend.fill_span": calls carry their node's name unless turned off
        self.fill_span = bool(PassContext.current().config.get("relay.frontend.fill_span", True))

    # --- what converters use ---------------------------------------------------------
    def call(self, name, *args, **attrs):
        """A call of graph operator ``name`` (attributes that are None take the
        operator's default), type-checked now so that an error names the ONNX node;
        computed with numpy when every operand is a constant."""
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self._tensors_only(args)
        expr = self.call_unfolded(name, *args, **attrs)
        if isinstance(expr, Constant):
            return expr  # an empty tensor
        elements = _static_elements(expr.checked_type)
        if elements is not None and elements > _FOLD_LIMIT:
            return expr  # checked before numpy makes it: an Expand or Tile of a constant may be huge
        folded = self._fold(name, args, attrs)
        return expr if folded is None else folded

    def call_unfolded(self, name, *args, **attrs):
        """:meth:`call`, never computed now: the build's constant folding decides, by
        target (a narrow weight's per-block scales, which a GPU kernel gathers)."""
        attrs = {k: v for k, v in attrs.items() if v is not None}
        where = self.node.where if self.node is not None else "from_onnx"
        try:
            expr = graph_call(name, *args, **attrs)
            expr = Call(expr.op, expr.args, expr.attrs, span=self.node.name if self.fill_span and self.node else None)
            infer_type(expr)
        except OnnxImportError:
            raise
        except GraphError as err:
            raise OnnxImportError(f"{where}: {err}") from None
        ty = expr.checked_type
        if isinstance(ty, TensorType) and 0 in ty.shape:
            return self.empty(ty.shape, ty.dtype)
        elements = _static_elements(ty)
        if elements is not None:
            size = elements * numpy_dtype(ty.dtype).itemsize
            if size > _TENSOR_BYTES:
                raise OnnxImportError(f"{where}: its output {name} would be a tensor of shape {list(ty.shape)}: "
                                      f"{size:.3g} bytes, more than the {_TENSOR_BYTES >> 40} TiB tecc compiles for; "
                                      "check the sizes that decide it")
        return expr

    def _fold(self, name, args, attrs):
        fn = _FOLDERS.get(name)
        if fn is None:
            return None
        if name == "cast" and isinstance(args[0], Constant) and is_narrow_weight(args[0].data.dtype.name):
            return None  # a narrow weight's dequantization: the build decides (graph FoldConstant)
        arrays = []
        for a in args:
            if isinstance(a, Tuple) and name == "concatenate":
                if not all(isinstance(f, Constant) for f in a.fields):
                    return None
                arrays.extend(f.data for f in a.fields)
            elif isinstance(a, Constant):
                arrays.append(a.data)
            else:
                return None
        if sum(arr.size for arr in arrays) > _FOLD_LIMIT:
            return None
        try:
            with np.errstate(all="ignore"):
                result = np.asarray(fn(*arrays, **attrs))
        except ValueError:  # numpy's max of an empty set has no identity: the operator's kernel gives it
            return None
        if result.size > _FOLD_LIMIT:
            return None
        return Constant(np.array(result, order="C"))

    def item(self, tup, index: int):
        """Field ``index`` of a tuple value (the field itself for a literal Tuple)."""
        if isinstance(tup, Tuple):
            return tup.fields[index]
        expr = TupleGetItem(tup, index)
        infer_type(expr)
        return expr

    def tuple(self, fields):
        expr = Tuple(fields)
        infer_type(expr)
        return expr

    def _tensors_only(self, args) -> None:
        for a in args:
            if is_container(a):
                self.node.fail(f"an operand is {describe(a)}, where a tensor is needed")

    def type_of(self, expr) -> TensorType:
        self._tensors_only([expr])
        infer_type(expr)
        ty = expr.checked_type
        if not isinstance(ty, TensorType):
            self.node.fail(f"an operand is a {ty}, not a tensor")
        return ty

    def shape(self, expr) -> tuple:
        return self.type_of(expr).shape

    def rank(self, expr) -> int:
        return len(self.shape(expr))

    def dtype_of(self, expr) -> str:
        return self.type_of(expr).dtype

    def random_key(self, seed: int):
        """``(key, salt)`` of a new random draw (:mod:`tecc.graph.ops.random`): the
        key ``[seed, counter]`` with the model's run counter (the graph input
        :data:`~tecc.runtime.graph_executor.RANDOM_COUNTER`, made at the first
        draw), the salt numbering the draws in conversion order (so the draws of
        a Loop's unrolled iterations differ)."""
        if self.random_counter is None:
            self.random_counter = Var(RANDOM_COUNTER, TensorType((), "uint64"))
        self.random_draws += 1
        seed = self.const(np.array([seed], dtype="uint64"), "uint64")
        key = self.call("concatenate", self.tuple([seed, self.reshape(self.random_counter, (1,))]), axis=0)
        return key, self.random_draws

    def counted_rows(self, name: str, count) -> None:
        """ONNX value ``name`` (an output of the node being converted) is padded: its
        first ``count`` rows (an ``int64 [1]`` graph value) are its value.  Only a model
        output can be that -- tecc compiles static shapes, so a node reading it would
        read the padding -- else the node is refused, naming the reader."""
        readers = [proto.name or f"{proto.op_type}_{i}" for i, proto in all_nodes(self.graph) if name in proto.input]
        outputs = {o.name for o in self.graph.output}
        if readers or name not in outputs:
            why = (f"node {readers[0]!r} reads it" if readers else "it is not an output of the model (a subgraph's "
                   "value?)")
            self.node.fail(f"its output {name!r} has as many rows as the data decide, and {why}; tecc compiles "
                           "static shapes, so such a value can only be an output of the model: take what reads it "
                           "out of the model, or run it after tecc's module")
        self.row_counts[name] = count

    def const(self, value, dtype) -> Constant:
        return Constant(np.asarray(value, dtype=dtype))

    def empty(self, shape, dtype) -> Constant:
        """The value of every tensor of ``shape`` with no elements: an empty constant
        (no kernel computes it; a Concat leaves it out)."""
        return Constant(np.zeros(shape, dtype=numpy_dtype(dtype)))

    def is_const(self, expr) -> bool:
        return isinstance(expr, Constant) or (isinstance(expr, Var) and expr in self.init_values)

    def value(self, expr, what: str) -> np.ndarray:
        """The compile-time value of operand ``expr`` (``what`` names it in the error
        when the model computes it at run time)."""
        if isinstance(expr, Constant):
            return expr.data
        if isinstance(expr, Var) and expr in self.init_values:
            return self.init_values[expr]
        names = [name for name, v in self.values.items() if v is expr]
        self.node.fail(f"{what} is computed by the model at run time; tecc needs it known when compiling "
                       "(a constant, an initializer, or a shape computation of static shapes)", operands=names)

    def scalar_value(self, expr, what: str, cast=None, *, default=None, empty_is_absent=False):
        """The compile-time value of the scalar operand ``expr`` (a 0-d or one-element
        tensor) as ``cast`` of it (``int``, ``float``, ``bool``; None: the Python number
        of its own dtype); ``default`` when the operand is absent (``expr`` None) or,
        with ``empty_is_absent``, an empty tensor. Any other number of elements is
        refused naming ``what``."""
        if expr is None:
            return default
        given = np.asarray(self.value(expr, what))
        if given.size == 0 and empty_is_absent:
            return default
        if given.size != 1:
            self.node.fail(f"{what} has shape {list(given.shape)}; it must be a scalar (one value)")
        value = given.reshape(-1)[0]
        return value.item() if cast is None else cast(value)

    def reshape(self, x, newshape):
        newshape = tuple(int(d) for d in newshape)
        if self.shape(x) == newshape:
            return x
        return self.call("reshape", x, newshape=newshape)

    def cast(self, x, dtype, saturate=False):
        """``x`` as ``dtype`` (``saturate``: see the graph op ``cast``)."""
        dtype = dtype_name(dtype)
        if self.dtype_of(x) == dtype:
            return x
        if saturate:
            return self.call("cast", x, dtype=dtype, saturate=True)
        return self.call("cast", x, dtype=dtype)

    def scalar(self, value, like):
        """A scalar constant of ``like``'s dtype."""
        return self.const(value, self.dtype_of(like))

    def optional_input(self, inputs, i):
        return inputs[i] if i < len(inputs) else None

    def subgraph(self, graph, args, label: str = "") -> list:
        """The outputs of ``graph`` -- an attribute of the node being converted (a
        Loop's body, an If's branch) -- with its inputs bound to ``args``, its
        nodes converted here, in a scope of their own that sees the values of the
        scopes around it (ONNX's outer-scope references).  ``label`` names this
        use of it (``"iteration 3"``) in errors of its nodes."""
        node = self.node
        if len(args) != len(graph.input):
            node.fail(f"its subgraph {graph.name!r} takes {len(graph.input)} input(s), {len(args)} given")
        scope = f"{node.name}/{graph.name or 'body'}{f' ({label})' if label else ''}/"
        outer_values, outer_unavailable = self.values, self.unavailable
        self.values = collections.ChainMap({}, outer_values)
        self.unavailable = collections.ChainMap({}, outer_unavailable)
        try:
            for t in graph.initializer:
                self.values[t.name] = Constant(self._tensor_value(t, f"{node.where}: initializer {t.name!r} of "
                                                                     f"its subgraph {graph.name!r}"))
            for info, arg in zip(graph.input, args):
                self.values[info.name] = arg
            for i, proto in enumerate(graph.node):
                self._convert_node(OnnxNode(proto, i, self.opset, scope))
            outs = []
            for info in graph.output:
                self.node = node
                if info.name in self.unavailable:
                    node.fail(f"the output {info.name!r} of its subgraph {graph.name!r} is "
                              f"{self.unavailable[info.name]}")
                if info.name not in self.values:
                    node.fail(f"the output {info.name!r} of its subgraph {graph.name!r} is produced by no node")
                outs.append(self.values[info.name])
            return outs
        finally:
            self.values, self.unavailable, self.node = outer_values, outer_unavailable, node

    # --- the model ---------------------------------------------------------------------
    def _check_supported(self) -> None:
        unsupported = [(i, proto) for i, proto in all_nodes(self.graph) if _converter(proto) is None]
        blockers = body_blockers(self.model, [proto for _, proto in unsupported], _CONVERTERS) if unsupported else []
        missing = []
        for (i, proto), blocked in zip(unsupported, blockers):
            domain = f" (domain {proto.domain!r})" if proto.domain not in ("", "ai.onnx") else ""
            why = f" (its ONNX function body uses {', '.join(blocked)}, which tecc does not convert)" if blocked else ""
            if proto.domain == ML_DOMAIN and proto.op_type in ML_HINTS:
                why = f" ({ML_HINTS[proto.op_type]})"
            missing.append(f"{proto.op_type}{domain} in node {proto.name or f'{proto.op_type}_{i}'!r}{why}")
        if missing:
            kinds = sorted({m.split(" ")[0] for m in missing})
            raise OnnxImportError(f"from_onnx: {len(missing)} node(s) use operators tecc does not support "
                                  f"({', '.join(kinds)}): " + "; ".join(missing)
                                  + ". Supported: tecc.graph.frontend.supported_ops(), and the operators ONNX defines as functions "
                                  "of those (tecc.graph.frontend.function_ops())")

    def _input_vars(self) -> list:
        init_names = {t.name for t in self.graph.initializer}
        model_inputs = [i for i in self.graph.input if i.name not in init_names]
        known = {i.name for i in model_inputs}
        unknown = sorted(set(self.shape_dict) - known)
        if unknown:
            raise OnnxImportError(f"from_onnx: shape names {unknown}, which are not inputs of the model; its inputs "
                                  f"are {sorted(known)}")
        out = []
        for info in model_inputs:
            value, variables = self._input_value(info.name, info.type, self.shape_dict.get(info.name))
            self.values[info.name] = value
            out.extend(variables)
        return out

    def _input_value(self, name, type_proto, given):
        """The value of graph input ``name`` of ONNX type ``type_proto`` and the
        parameters of ``main`` it is made of: a tensor is one Var; a sequence one
        per tensor (``name[i]``, the shapes ``given`` as a list); an optional one
        ``given`` as None is empty."""
        kind = type_proto.WhichOneof("value")
        if kind == "tensor_type":
            var = self._tensor_var(name, type_proto.tensor_type, given)
            return var, [var]
        if kind == "sequence_type":
            elem = type_proto.sequence_type.elem_type
            if elem.WhichOneof("value") != "tensor_type":
                inner = (elem.WhichOneof("value") or "untyped value").replace("_type", "")
                raise OnnxImportError(f"from_onnx: input {name!r} is a sequence of {inner}s; tecc imports sequences "
                                      "of tensors")
            if not isinstance(given, (list, tuple)) or any(not isinstance(g, (list, tuple)) for g in given):
                raise OnnxImportError(f"from_onnx: input {name!r} is a sequence; tecc compiles its length and shapes: "
                                      f"pass shape={{{name!r}: [shape of each tensor, ...]}}")
            items = [self._tensor_var(f"{name}[{i}]", elem.tensor_type, tuple(g), declared=False)
                     for i, g in enumerate(given)]
            dtype = items[0].type_annotation.dtype if items else _np_dtype(elem.tensor_type.elem_type,
                                                                           f"from_onnx: input {name!r}")
            return OnnxSequence(tuple(items), dtype), items
        if kind == "optional_type":
            if name in self.shape_dict and given is None:
                return OnnxOptional(None), []
            value, variables = self._input_value(name, type_proto.optional_type.elem_type, given)
            return OnnxOptional(value), variables
        kind = (kind or "untyped value").replace("_type", "")
        raise OnnxImportError(f"from_onnx: input {name!r} is a {kind}; tecc imports tensors, sequences of tensors "
                              "and optionals of those")

    def _tensor_var(self, name, tt, given, declared=True) -> Var:
        """The Var of a tensor input: its shape ``given`` (bound by the user), else
        the model's (``declared``: the type's shape is that of this input itself,
        not of each tensor of a sequence)."""
        dims = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or f"?{k}")
        if given is not None:
            given = tuple(given)
            if tt.HasField("shape") and len(given) != len(dims):
                raise OnnxImportError(f"from_onnx: shape[{name!r}] = {given} has rank {len(given)} but the "
                                      f"model's input {name!r} has rank {len(dims)} ({tuple(dims)})")
            for k, g in enumerate(given):
                if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 0:
                    raise OnnxImportError(f"from_onnx: shape[{name!r}] = {given}: dimension {k} must be a "
                                          f"non-negative int, got {g!r}")
            dims = [int(g) for g in given]
        elif not tt.HasField("shape"):
            raise OnnxImportError(f"from_onnx: the model does not give the shape of input {name!r}; pass "
                                  f"shape={{{name!r}: (...)}}")
        for k, d in enumerate(dims):
            if not isinstance(d, int):
                label = f"the symbolic dimension {d!r}" if not d.startswith("?") else "an unknown dimension"
                raise OnnxImportError(f"from_onnx: input {name!r} has {label} at axis {k} (shape "
                                      f"{tuple(dims)}); tecc compiles static shapes: bind it with "
                                      f"shape={{{name!r}: (...)}}, e.g. the batch size")
        if declared and isinstance(self.dtype, dict) and name in self.dtype:
            dtype = str(np.dtype(self.dtype[name]))
        elif tt.elem_type:
            dtype = _np_dtype(tt.elem_type, f"from_onnx: input {name!r}")
        else:
            dtype = str(np.dtype(self.dtype if isinstance(self.dtype, str) else "float32"))
        return Var(name, TensorType(tuple(dims), dtype))

    def _tensor_value(self, t, where: str) -> np.ndarray:
        """The value of TensorProto ``t`` (an initializer), checked readable and of a
        dtype tecc compiles."""
        onnx = _onnx()
        try:
            arr = onnx.numpy_helper.to_array(t)
        except (OSError, ValueError) as err:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                raise OnnxImportError(f"{where} keeps its data in an external file that cannot be read "
                                      f"({err}); load the model with onnx.load(path) next to its data") from None
            raise OnnxImportError(f"{where} cannot be read ({err}): the file is truncated or corrupt; "
                                  "export the model again") from None
        _np_dtype(t.data_type, where)
        return np.asarray(arr)

    def _initializers(self) -> list:
        params = []
        for t in self.graph.initializer:
            arr = self._tensor_value(t, f"from_onnx: initializer {t.name!r}")
            if self.freeze_params or arr.dtype.kind in "biu":
                self.values[t.name] = Constant(arr)
            else:
                var = Var(t.name, TensorType(arr.shape, str(arr.dtype)))
                self.values[t.name] = var
                self.init_values[var] = arr
                params.append(var)
        return params

    def _lookup(self, name: str, node: OnnxNode):
        if name in self.values:
            return self.values[name]
        if name in self.unavailable:
            node.fail(f"input {name!r} is {self.unavailable[name]}")
        node.fail(f"input {name!r} is not produced by any node, graph input or initializer before it (a "
                  "truncated or unsorted model?)")

    def _convert_node(self, node: OnnxNode) -> None:
        self.node = node
        inputs = [self._lookup(n, node) if n else None for n in node.inputs]
        try:
            result = _converter(node)(self, node, inputs)
        except TeccError:
            raise
        except (ArithmeticError, AttributeError, LookupError, MemoryError, TypeError, ValueError) as err:
            # a converter that meets a malformed node it does not check for: ONNX's own verdict
            # on the node, or an error naming it as tecc's fault
            raise converter_failed(self, node, inputs, err) from err
        if isinstance(result, (list, tuple)):
            results = list(result)
        else:
            results = [result]
        for i, name in enumerate(node.outputs):
            if not name:
                continue
            if i < len(results) and results[i] is not None:
                self.values[name] = results[i]
            else:
                self.unavailable[name] = (f"output {i} of {node.where}, which tecc does not compute (only inference "
                                          "outputs are supported)")
        self.node = None

    def run(self):
        self._check_supported()
        inputs = self._input_vars()
        param_vars = self._initializers()
        for i, proto in enumerate(self.graph.node):
            self._convert_node(OnnxNode(proto, i, self.opset))
        outputs, names, layouts, counted = [], [], [], []
        for info in self.graph.output:
            if info.name in self.unavailable:
                raise OnnxImportError(f"from_onnx: the model's output {info.name!r} is "
                                      f"{self.unavailable[info.name]}")
            if info.name not in self.values:
                raise OnnxImportError(f"from_onnx: the model's output {info.name!r} is produced by no node")
            layouts.append(_flatten_output(self.values[info.name], info.name, outputs, names))
            if info.name in self.row_counts:
                counted.append((len(outputs) - 1, info.name))
        # the row counts of the outputs that have them, as heads after the outputs (attrs.output_rows pairs
        # them; the executor gives the counted rows and hides the counts)
        rows = []
        for index, name in counted:
            outputs.append(self.row_counts[name])
            names.append(f"{name}:rows")
            rows.append((index, len(outputs) - 1))
        if not outputs:
            raise OnnxImportError("from_onnx: the model has no outputs" if not self.graph.output else
                                  "from_onnx: the model's outputs hold no tensor (empty sequences or optionals)")
        if self.random_counter is not None:
            if any(v.name_hint == RANDOM_COUNTER for v in inputs):
                raise OnnxImportError(f"from_onnx: the model has an input named {RANDOM_COUNTER!r}, the name tecc "
                                      "gives the run counter of its random numbers; rename the input")
            inputs = inputs + [self.random_counter]
        body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
        used = set()

        def mark(node):
            if isinstance(node, Var):
                used.add(node)

        post_order_visit(body, mark)
        kept = [v for v in param_vars if v in used]
        # the model's output names ride on main to the graph JSON (attrs.output_names: a sequence's
        # tensors are "name[i]"); onnx_outputs: how the ONNX outputs are made of main's (the backend
        # groups a sequence's tensors back into a list)
        attrs = {"output_names": names, "onnx_outputs": layouts}
        if rows:
            attrs["output_rows"] = rows
        func = Function(inputs + kept, body, attrs=attrs)
        infer_type(func)
        params = {v.name_hint: self.init_values[v] for v in kept}
        return Module.from_expr(func), params


def _flatten_output(value, name, outputs, names):
    """Append the tensors of model output ``value`` to ``outputs`` (their names to
    ``names``) and return its layout: ``"tensor"``, ``["sequence", n]``, or
    ``["optional", layout]`` (``["optional", None]``: empty)."""
    if isinstance(value, OnnxSequence):
        outputs.extend(value.items)
        names.extend(f"{name}[{i}]" for i in range(len(value)))
        return ["sequence", len(value)]
    if isinstance(value, OnnxOptional):
        return ["optional", None if value.value is None else _flatten_output(value.value, name, outputs, names)]
    outputs.append(value)
    names.append(name)
    return "tensor"


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True):
    """Import an ONNX model (TVM's ``relay.frontend.from_onnx``).

    Parameters
    ----------
    model : onnx.ModelProto, str or os.PathLike
        The model, or the path of a ``.onnx`` file.
    shape : dict of str to tuple of int, optional
        Input name -> shape; binds the dimensions the model leaves symbolic (e.g.
        ``{"input": (1, 3, 224, 224)}``).  Every dimension must end up static.  A
        sequence input takes a list of its tensors' shapes (it becomes the inputs
        ``name[0]``, ``name[1]``...: :mod:`.convert_sequence`); an optional input
        given None is empty.
    dtype : str or dict of str to str
        The dtype of inputs whose element type the model does not give (a dict:
        per input, overriding the model's).
    opset : int, optional
        Read the model as this default-domain opset instead of the one it imports.
        An opset after 21 (or before 9) is read as the nearest of 9..21 when every
        node reads the same there (:mod:`.opsets`: later opsets mostly add element
        types; a model before opset 9 whose nodes read differently at 9 is
        converted up to 9 by onnx's version converter first);
        RMSNormalization-23, RotaryEmbedding-23, Swish-24, TensorScatter-24,
        BitCast-26, CumProd-26 and SpaceToDepth-28 are converted as such, and
        Cast and CastLike up to Cast-28 and CastLike-25 (their round_mode).
    freeze_params : bool
        True: initializers become constants of the graph (``params`` is empty).
        False: floating-point initializers become parameters of ``main``, their
        values returned in ``params`` (bind them with ``build(..., params=params)``).

    Returns
    -------
    mod : tecc.graph.Module
        ``mod["main"]`` is the model, its types inferred.
    params : dict of str to numpy.ndarray
        The values of the parameters of ``main`` that are weights.

    Raises
    ------
    OnnxImportError
        A malformed or truncated file, an opset outside 9..21 that a node would
        read differently at the nearest of them (naming the node), operators tecc does
        not support (all of them listed, with node names), an input dimension left
        symbolic, an attribute or operand tecc cannot honour (naming the node).
    """
    model = expand_functions(upgraded(_load(model), opset), _CONVERTERS)
    return _Importer(model, shape, dtype, opset, freeze_params).run()


def supported_ops() -> list:
    """The ONNX operator types :func:`from_onnx` converts, sorted, then onnxruntime's
    contrib operators it converts, as ``"com.microsoft.<op type>"``, ONNX's
    training optimizers, as ``"ai.onnx.preview.training.<op type>"``, and its
    classic machine-learning operators, as ``"ai.onnx.ml.<op type>"``.  Operators
    ONNX defines as functions of these are imported through that definition too
    (:func:`function_ops`)."""
    return (sorted(_CONVERTERS) + sorted(f"{CONTRIB_DOMAIN}.{op}" for op in CONTRIB_CONVERTERS)
            + sorted(f"{TRAINING_DOMAIN}.{op}" for op in TRAINING_CONVERTERS)
            + sorted(f"{ML_DOMAIN}.{op}" for op in ML_CONVERTERS))


def function_ops() -> list:
    """The ONNX operator types :func:`from_onnx` imports through their ONNX
    function body (:mod:`.expand`), having no converter of their own: Attention,
    SwiGLU... (a node whose body uses an operator tecc does not support is
    reported by name)."""
    return list(_function_ops_once())


@functools.lru_cache(maxsize=None)
def _function_ops_once() -> tuple:
    # walks every ONNX schema: once per process (the converter table is fixed)
    return tuple(_function_ops(_CONVERTERS))
