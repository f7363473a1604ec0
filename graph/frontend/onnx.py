"""The ONNX importer: an ONNX model to a graph :class:`~tecc.graph.ir.Module` and
its parameters (TVM's ``relay.frontend.from_onnx``).

How a model is read
-------------------
* Inputs become :class:`~tecc.graph.ir.Var` s of static shapes.  A dimension the
  model leaves symbolic (torch's ``dynamic_axes``) must be bound by ``shape``; one
  that is not is refused, naming the input and the dimension.
* Initializers become :class:`~tecc.graph.ir.Constant` s (``freeze_params=True``)
  or parameters of ``main`` listed in the returned ``params`` dict
  (``freeze_params=False``; integer and boolean initializers -- shapes, axes,
  indices -- stay constants either way: they are not weights).
* Each node converts through one table from ONNX op type to a converter function
  (:data:`_CONVERTERS`); each converter handles the differences between opsets
  (axes as an attribute or an input, Softmax's axis semantics before opset 13...).
* Shape subgraphs (``Shape -> Gather -> Concat -> Reshape``...) are evaluated
  while importing: ``Shape`` is read from the inferred static types, and an
  operator all of whose operands are constants is computed with numpy
  (:data:`_FOLDERS`).  Nothing computed from the model's inputs is evaluated.
* Every unsupported operator of a model is reported in one error, with node
  names and op types, before anything is converted.

The converters emit the graph operators by Relay's names and attributes
(``nn.conv2d``, ``nn.dense``, ``reshape``...): see :func:`tecc.graph.list_ops`.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..ir import (
    Call, Constant, Function, GraphError, Module, TensorType, Tuple, TupleGetItem, Var, post_order_visit,
)
from ..op import call as graph_call
from ..transform.infer_type import infer_type

#: the default-domain opsets the converters implement
MIN_OPSET, MAX_OPSET = 9, 21

#: constants larger than this many elements are left to the graph (FoldConstant)
_FOLD_LIMIT = 1 << 24


class OnnxImportError(GraphError):
    """An ONNX model cannot be imported: a malformed file, an unsupported operator
    or opset, an input shape left symbolic, an attribute tecc cannot honour."""


def _onnx():
    try:
        import onnx  # noqa: PLC0415 -- optional until a model is imported
    except ImportError as err:  # pragma: no cover - onnx is a dependency
        raise OnnxImportError("from_onnx needs the onnx package: pip install onnx") from err
    return onnx


# ---------------------------------------------------------------------------------------
# reading the model
# ---------------------------------------------------------------------------------------
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
    if model.ByteSize() >= (1 << 31) - 1:
        return model  # the checker takes a model this large only by path: the importer's own checks apply
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "invalid model"
        raise OnnxImportError(f"from_onnx: {where} is not a valid ONNX model ({first}); a truncated or corrupt "
                              "file reads this way too: export the model again") from None
    return model


def _model_opset(model, opset) -> int:
    """The default-domain opset the model is read with."""
    if opset is None:
        versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
        if not versions:
            raise OnnxImportError("from_onnx: the model imports no version of the default ONNX opset; pass "
                                  "opset=<version>")
        opset = max(versions)
    opset = int(opset)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxImportError(f"from_onnx: the model uses ONNX opset {opset}; tecc imports opsets {MIN_OPSET} to "
                              f"{MAX_OPSET}: convert it first with onnx.version_converter.convert_version(model, "
                              f"{MAX_OPSET if opset > MAX_OPSET else MIN_OPSET})")
    return opset


def _np_dtype(elem_type: int, where: str) -> str:
    onnx = _onnx()
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        raise OnnxImportError(f"{where}: ONNX element type {elem_type} has no tecc dtype") from None
    from ...runtime.dtypes import SUPPORTED  # noqa: PLC0415

    # the dtypes tecc compiles, not numpy's kinds: ml_dtypes' float8 types have kind 'f'
    if dtype.kind not in "biuf" or str(dtype) not in SUPPORTED:
        # bfloat16 compiles, but its numpy type (ml_dtypes') is not one the importer reads tensors of
        takes = [d for d in SUPPORTED if d != "bfloat16"]
        raise OnnxImportError(f"{where}: tensors of dtype {dtype} (ONNX type {elem_type}) are not supported; the "
                              f"importer takes {', '.join(takes)}: Cast the tensor in the model first")
    return str(dtype)


class OnnxNode:
    """One ONNX node as the converters see it: ``op_type``, ``name``, ``inputs`` and
    ``outputs`` (names; ``""`` for an optional one left out), the attributes as
    Python values, and the ``opset`` the model is read with."""

    def __init__(self, proto, index: int, opset: int):
        onnx = _onnx()
        self.op_type = proto.op_type
        self.domain = proto.domain
        self.name = proto.name or f"{proto.op_type}_{index}"
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

    def required(self, key):
        """Attribute ``key``, which the node must set."""
        if key not in self.attrs:
            raise OnnxImportError(f"{self.where}: the attribute {key!r} is required but missing")
        return self.attrs[key]

    def fail(self, message: str):
        """Raise an import error about this node."""
        raise OnnxImportError(f"{self.where}: {message}")


# ---------------------------------------------------------------------------------------
# numpy evaluation of operators whose operands are all constants (shape subgraphs)
# ---------------------------------------------------------------------------------------
def _trunc_divide(a, b):
    if a.dtype.kind in "iu":
        q = np.abs(a) // np.abs(b)
        return (q * np.sign(a) * np.sign(b)).astype(a.dtype)
    return np.divide(a, b).astype(a.dtype)


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
    "cast": lambda a, dtype: a.astype(dtype),
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


# ---------------------------------------------------------------------------------------
# the importer
# ---------------------------------------------------------------------------------------
class _Importer:
    """Converts one model's graph; converters call back into it (``ctx``) to build
    calls, read shapes and constant values."""

    def __init__(self, model, shape, dtype, opset, freeze_params):
        self.model = model
        self.graph = model.graph
        self.shape_dict = dict(shape or {})
        self.dtype = dtype
        self.opset = _model_opset(model, opset)
        self.freeze_params = bool(freeze_params)
        self.values = {}        # ONNX value name -> Expr
        self.unavailable = {}   # ONNX value name -> why it cannot be used
        self.init_values = {}   # parameter Var -> numpy array
        self.node = None        # the node being converted (for spans and messages)

    # --- what converters use ---------------------------------------------------------
    def call(self, name, *args, **attrs):
        """A call of graph operator ``name`` (attributes that are None take the
        operator's default), type-checked now so that an error names the ONNX node;
        computed with numpy when every operand is a constant."""
        attrs = {k: v for k, v in attrs.items() if v is not None}
        folded = self._fold(name, args, attrs)
        if folded is not None:
            return folded
        where = self.node.where if self.node is not None else "from_onnx"
        try:
            expr = graph_call(name, *args, **attrs)
            expr = Call(expr.op, expr.args, expr.attrs, span=self.node.name if self.node is not None else None)
            infer_type(expr)
        except OnnxImportError:
            raise
        except GraphError as err:
            raise OnnxImportError(f"{where}: {err}") from None
        return expr

    def _fold(self, name, args, attrs):
        fn = _FOLDERS.get(name)
        if fn is None:
            return None
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
        with np.errstate(all="ignore"):
            result = np.asarray(fn(*arrays, **attrs))
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

    def type_of(self, expr) -> TensorType:
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

    def const(self, value, dtype) -> Constant:
        return Constant(np.asarray(value, dtype=dtype))

    def is_const(self, expr) -> bool:
        return isinstance(expr, Constant) or (isinstance(expr, Var) and expr in self.init_values)

    def value(self, expr, what: str) -> np.ndarray:
        """The compile-time value of operand ``expr`` (``what`` names it in the error
        when the model computes it at run time)."""
        if isinstance(expr, Constant):
            return expr.data
        if isinstance(expr, Var) and expr in self.init_values:
            return self.init_values[expr]
        self.node.fail(f"{what} is computed by the model at run time; tecc needs it known when compiling "
                       "(a constant, an initializer, or a shape computation of static shapes)")

    def reshape(self, x, newshape):
        newshape = tuple(int(d) for d in newshape)
        if self.shape(x) == newshape:
            return x
        return self.call("reshape", x, newshape=newshape)

    def cast(self, x, dtype):
        if self.dtype_of(x) == str(np.dtype(dtype)):
            return x
        return self.call("cast", x, dtype=str(np.dtype(dtype)))

    def scalar(self, value, like):
        """A scalar constant of ``like``'s dtype."""
        return self.const(value, self.dtype_of(like))

    def optional_input(self, inputs, i):
        return inputs[i] if i < len(inputs) else None

    # --- the model ---------------------------------------------------------------------
    def _check_supported(self) -> None:
        missing = []
        for i, proto in enumerate(self.graph.node):
            if proto.domain not in ("", "ai.onnx") or proto.op_type not in _CONVERTERS:
                domain = f" (domain {proto.domain!r})" if proto.domain not in ("", "ai.onnx") else ""
                missing.append(f"{proto.op_type}{domain} in node {proto.name or f'{proto.op_type}_{i}'!r}")
        if missing:
            kinds = sorted({m.split(" ")[0] for m in missing})
            raise OnnxImportError(f"from_onnx: {len(missing)} node(s) use operators tecc does not support "
                                  f"({', '.join(kinds)}): " + "; ".join(missing)
                                  + ". Supported: tecc.graph.frontend.supported_ops()")

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
            name = info.name
            if not info.type.HasField("tensor_type"):
                raise OnnxImportError(f"from_onnx: input {name!r} is not a tensor; tecc imports tensor inputs only")
            tt = info.type.tensor_type
            dims = []
            for k, d in enumerate(tt.shape.dim):
                if d.HasField("dim_value"):
                    dims.append(int(d.dim_value))
                else:
                    dims.append(d.dim_param or f"?{k}")
            if name in self.shape_dict:
                given = tuple(self.shape_dict[name])
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
            if isinstance(self.dtype, dict) and name in self.dtype:
                dtype = str(np.dtype(self.dtype[name]))
            elif tt.elem_type:
                dtype = _np_dtype(tt.elem_type, f"from_onnx: input {name!r}")
            else:
                dtype = str(np.dtype(self.dtype if isinstance(self.dtype, str) else "float32"))
            var = Var(name, TensorType(tuple(dims), dtype))
            self.values[name] = var
            out.append(var)
        return out

    def _initializers(self) -> list:
        onnx = _onnx()
        params = []
        for t in self.graph.initializer:
            where = f"from_onnx: initializer {t.name!r}"
            if t.data_location == onnx.TensorProto.EXTERNAL:
                try:
                    arr = onnx.numpy_helper.to_array(t)
                except (OSError, ValueError) as err:
                    raise OnnxImportError(f"{where} keeps its data in an external file that cannot be read "
                                          f"({err}); load the model with onnx.load(path) next to its data") from None
            else:
                try:
                    arr = onnx.numpy_helper.to_array(t)
                except ValueError as err:
                    raise OnnxImportError(f"{where} cannot be read ({err}): the file is truncated or corrupt; "
                                          "export the model again") from None
            _np_dtype(t.data_type, where)
            arr = np.asarray(arr)
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
        result = _CONVERTERS[node.op_type](self, node, inputs)
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
        outputs = []
        for info in self.graph.output:
            if info.name in self.unavailable:
                raise OnnxImportError(f"from_onnx: the model's output {info.name!r} is "
                                      f"{self.unavailable[info.name]}")
            if info.name not in self.values:
                raise OnnxImportError(f"from_onnx: the model's output {info.name!r} is produced by no node")
            outputs.append(self.values[info.name])
        if not outputs:
            raise OnnxImportError("from_onnx: the model has no outputs")
        body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
        used = set()

        def mark(node):
            if isinstance(node, Var):
                used.add(node)

        post_order_visit(body, mark)
        kept = [v for v in param_vars if v in used]
        # the model's output names ride on main to the graph JSON (attrs.output_names)
        func = Function(inputs + kept, body, attrs={"output_names": [info.name for info in self.graph.output]})
        infer_type(func)
        params = {v.name_hint: self.init_values[v] for v in kept}
        return Module.from_expr(func), params


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True):
    """Import an ONNX model (TVM's ``relay.frontend.from_onnx``).

    Parameters
    ----------
    model : onnx.ModelProto, str or os.PathLike
        The model, or the path of a ``.onnx`` file.
    shape : dict of str to tuple of int, optional
        Input name -> shape; binds the dimensions the model leaves symbolic (e.g.
        ``{"input": (1, 3, 224, 224)}``).  Every dimension must end up static.
    dtype : str or dict of str to str
        The dtype of inputs whose element type the model does not give (a dict:
        per input, overriding the model's).
    opset : int, optional
        Read the model as this default-domain opset instead of the one it imports.
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
        A malformed or truncated file, an opset outside 9..21, operators tecc does
        not support (all of them listed, with node names), an input dimension left
        symbolic, an attribute or operand tecc cannot honour (naming the node).
    """
    model = _load(model)
    return _Importer(model, shape, dtype, opset, freeze_params).run()


def supported_ops() -> list:
    """The ONNX operator types :func:`from_onnx` converts, sorted."""
    return sorted(_CONVERTERS)


# =======================================================================================
# converters: fn(ctx, node, inputs) -> Expr, or a list of Exprs (one per output)
# =======================================================================================
def _unary(op_name):
    def convert(ctx, node, inputs):
        return ctx.call(op_name, inputs[0])

    return convert


def _binary(op_name):
    def convert(ctx, node, inputs):
        return ctx.call(op_name, inputs[0], inputs[1])

    return convert


def _div(ctx, node, inputs):
    return ctx.call("divide", inputs[0], inputs[1])


def _pow(ctx, node, inputs):
    base, exponent = inputs
    return ctx.call("power", base, ctx.cast(exponent, ctx.dtype_of(base)))


def _mod(ctx, node, inputs):
    if node.attr("fmod", 0):
        return ctx.call("trunc_mod", inputs[0], inputs[1])
    if ctx.dtype_of(inputs[0]).startswith("float"):
        node.fail("fmod=0 on floating-point operands is not defined by ONNX; set fmod=1")
    return ctx.call("floor_mod", inputs[0], inputs[1])


def _variadic(op_name, mean=False):
    def convert(ctx, node, inputs):
        ops = [x for x in inputs if x is not None]
        if not ops:
            node.fail("needs at least one input")
        out = ops[0]
        for x in ops[1:]:
            out = ctx.call(op_name, out, x)
        if mean and len(ops) > 1:
            out = ctx.call("divide", out, ctx.scalar(len(ops), out))
        return out

    return convert


def _identity(ctx, node, inputs):
    return inputs[0]


def _dropout(ctx, node, inputs):
    x = inputs[0]
    training = ctx.optional_input(inputs, 2)
    if training is not None and bool(np.asarray(ctx.value(training, "training_mode")).item()):
        node.fail("training_mode is true; tecc compiles inference, where Dropout passes its input through")
    mask = Constant(np.ones(ctx.shape(x), dtype=bool))
    return [x, mask]


def _cast(ctx, node, inputs):
    return ctx.cast(inputs[0], _np_dtype(node.required("to"), node.where))


def _cast_like(ctx, node, inputs):
    return ctx.cast(inputs[0], ctx.dtype_of(inputs[1]))


def _constant(ctx, node, inputs):
    attrs = node.attrs
    if "value" in attrs:
        arr = np.asarray(attrs["value"])
    elif "value_float" in attrs:
        arr = np.asarray(attrs["value_float"], dtype="float32")
    elif "value_floats" in attrs:
        arr = np.asarray(attrs["value_floats"], dtype="float32")
    elif "value_int" in attrs:
        arr = np.asarray(attrs["value_int"], dtype="int64")
    elif "value_ints" in attrs:
        arr = np.asarray(attrs["value_ints"], dtype="int64")
    else:
        node.fail(f"only tensor, float and int values are supported (it sets {sorted(attrs)})")
    if arr.dtype.kind not in "biuf":
        node.fail(f"a constant of dtype {arr.dtype} is not supported")
    return Constant(arr)


def _constant_of_shape(ctx, node, inputs):
    shape = ctx.value(inputs[0], "the shape (input 0)").astype("int64").reshape(-1)
    value = node.attr("value")
    value = np.zeros((1,), "float32") if value is None else np.asarray(value).reshape(-1)
    if np.any(shape < 0):
        node.fail(f"the shape {tuple(shape)} has a negative dimension")
    return Constant(np.full(tuple(int(d) for d in shape), value[0], dtype=value.dtype))


def _shape(ctx, node, inputs):
    shape = np.asarray(ctx.shape(inputs[0]), dtype="int64")
    rank = len(shape)
    start, end = node.attr("start", 0), node.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return Constant(shape[start:end])


def _size(ctx, node, inputs):
    return Constant(np.asarray(_prod(ctx.shape(inputs[0])), dtype="int64"))


def _range(ctx, node, inputs):
    start, limit, delta = (ctx.value(x, what) for x, what in zip(inputs, ("start", "limit", "delta")))
    if np.asarray(delta).item() == 0:
        node.fail("delta is 0")
    n = max(int(math.ceil((limit.item() - start.item()) / delta.item())), 0)
    return Constant((start.item() + np.arange(n) * delta.item()).astype(start.dtype))


# --- neural-network operators ----------------------------------------------------------
def _auto_pads(node, in_sizes, kernel, strides, dilations):
    """(begins, ends) of the spatial padding, from ``pads`` or ``auto_pad``."""
    n = len(in_sizes)
    auto = node.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto == "NOTSET":
        pads = list(node.attr("pads", [0] * (2 * n)))
        if len(pads) != 2 * n:
            node.fail(f"pads {pads} should have {2 * n} values (begin and end of each spatial axis)")
        return pads[:n], pads[n:]
    if auto == "VALID":
        return [0] * n, [0] * n
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        node.fail(f"auto_pad {auto!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else big)
        ends.append(big if auto == "SAME_UPPER" else small)
    return begins, ends


def _spatial_rank(ctx, node, x, what):
    nsp = ctx.rank(x) - 2
    if nsp not in (1, 2):
        node.fail(f"{what} over {nsp} spatial dimension(s) is not supported; tecc converts the 1-D and 2-D "
                  "(NCW, NCHW) forms")
    return nsp


def _as_2d(ctx, x):
    """An NCW tensor as NC1W."""
    s = ctx.shape(x)
    return ctx.reshape(x, s[:2] + (1,) + s[2:])


def _from_2d(ctx, y):
    s = ctx.shape(y)
    return ctx.reshape(y, s[:2] + s[3:])


def _accumulator(ctx, x):
    """The ``out_dtype`` of a product of ``x`` (MatMul, Gemm, Conv): float32 for
    float16 operands -- the sums are kept in float32 and rounded to float16 once, at
    the end, as onnxruntime and ONNX's reference do -- else None (the operands')."""
    return "float32" if ctx.dtype_of(x) == "float16" else None


def _conv(ctx, node, inputs):
    x, w = inputs[0], inputs[1]
    bias = ctx.optional_input(inputs, 2)
    acc, dtype = _accumulator(ctx, x), ctx.dtype_of(x)
    nsp = _spatial_rank(ctx, node, x, "Conv")
    xs, ws = ctx.shape(x), ctx.shape(w)
    if len(ws) != len(xs):
        node.fail(f"the weight {ws} should have the rank of the data {xs}")
    kernel = list(node.attr("kernel_shape", ws[2:]))
    strides = list(node.attr("strides", [1] * nsp))
    dilations = list(node.attr("dilations", [1] * nsp))
    groups = int(node.attr("group", 1))
    begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
    if nsp == 1:
        x, w = _as_2d(ctx, x), _as_2d(ctx, w)
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        begins, ends = [0] + begins, [0] + ends
    out = ctx.call("nn.conv2d", x, w, strides=tuple(strides), padding=(begins[0], begins[1], ends[0], ends[1]),
                   dilation=tuple(dilations), groups=groups, channels=ws[0], kernel_size=tuple(kernel), out_dtype=acc)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, ctx.cast(bias, ctx.dtype_of(out)), axis=1)
    out = ctx.cast(out, dtype)
    return _from_2d(ctx, out) if nsp == 1 else out


def _conv_transpose(ctx, node, inputs):
    x, w = inputs[0], inputs[1]
    bias = ctx.optional_input(inputs, 2)
    acc, dtype = _accumulator(ctx, x), ctx.dtype_of(x)
    nsp = _spatial_rank(ctx, node, x, "ConvTranspose")
    xs, ws = ctx.shape(x), ctx.shape(w)
    groups = int(node.attr("group", 1))
    kernel = list(node.attr("kernel_shape", ws[2:]))
    strides = list(node.attr("strides", [1] * nsp))
    dilations = list(node.attr("dilations", [1] * nsp))
    out_pad = list(node.attr("output_padding", [0] * nsp))
    output_shape = node.attr("output_shape")
    auto = node.attr("auto_pad", "NOTSET") or "NOTSET"
    if output_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        # the padding that gives the requested output size
        targets = list(output_shape)[-nsp:] if output_shape is not None else [xs[2 + i] * strides[i]
                                                                              for i in range(nsp)]
        begins, ends = [], []
        for i in range(nsp):
            total = strides[i] * (xs[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - targets[i]
            if total < 0:
                node.fail(f"output_shape {tuple(output_shape)} is larger than the transposed convolution gives")
            # the spec puts the larger half first unless auto_pad is SAME_UPPER
            small, big = total // 2, total - total // 2
            upper = auto == "SAME_UPPER"
            begins.append(small if upper else big)
            ends.append(big if upper else small)
    else:
        begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
    if nsp == 1:
        x, w = _as_2d(ctx, x), _as_2d(ctx, w)
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        begins, ends, out_pad = [0] + begins, [0] + ends, [0] + out_pad
    out = ctx.call("nn.conv2d_transpose", x, w, strides=tuple(strides),
                   padding=(begins[0], begins[1], ends[0], ends[1]), dilation=tuple(dilations), groups=groups,
                   channels=ws[1] * groups, kernel_size=tuple(kernel), output_padding=tuple(out_pad),
                   out_dtype=acc)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, ctx.cast(bias, ctx.dtype_of(out)), axis=1)
    out = ctx.cast(out, dtype)
    return _from_2d(ctx, out) if nsp == 1 else out


def _pool(kind):
    def convert(ctx, node, inputs):
        x = inputs[0]
        if kind == "max" and len(node.outputs) > 1 and node.outputs[1]:
            node.fail("the Indices output is not supported; use the pooled values only")
        nsp = _spatial_rank(ctx, node, x, f"{node.op_type}")
        xs = ctx.shape(x)
        kernel = list(node.required("kernel_shape"))
        strides = list(node.attr("strides", [1] * nsp))
        dilations = list(node.attr("dilations", [1] * nsp))
        begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
        ceil_mode = bool(node.attr("ceil_mode", 0))
        if nsp == 1:
            x = _as_2d(ctx, x)
            kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
            begins, ends = [0] + begins, [0] + ends
        common = dict(pool_size=tuple(kernel), strides=tuple(strides), padding=(begins[0], begins[1], ends[0],
                                                                                 ends[1]), ceil_mode=ceil_mode)
        if any(d != 1 for d in dilations):
            common["dilation"] = tuple(dilations)
        if kind == "max":
            out = ctx.call("nn.max_pool2d", x, **common)
        else:
            out = ctx.call("nn.avg_pool2d", x, count_include_pad=bool(node.attr("count_include_pad", 0)), **common)
        return _from_2d(ctx, out) if nsp == 1 else out

    return convert


def _global_pool(kind):
    def convert(ctx, node, inputs):
        x = inputs[0]
        rank = ctx.rank(x)
        if rank < 3:
            node.fail(f"the input has rank {rank}; it needs a batch, a channel and spatial axes")
        if rank == 4:
            return ctx.call(f"nn.global_{kind}_pool2d", x)
        return ctx.call("mean" if kind == "avg" else "max", x, axis=tuple(range(2, rank)), keepdims=True)

    return convert


def _batch_norm(ctx, node, inputs):
    if node.attr("training_mode", 0):
        node.fail("training_mode=1; tecc compiles inference (running statistics)")
    x, scale, bias, mean, var = inputs[:5]
    out = ctx.call("nn.batch_norm", x, scale, bias, mean, var, axis=1, epsilon=float(node.attr("epsilon", 1e-5)))
    return ctx.item(out, 0)


def _instance_norm(ctx, node, inputs):
    x, scale, bias = inputs
    return ctx.call("nn.instance_norm", x, scale, bias, axis=1, epsilon=float(node.attr("epsilon", 1e-5)))


def _layer_norm(ctx, node, inputs):
    x, scale = inputs[0], inputs[1]
    bias = ctx.optional_input(inputs, 2)
    xs = ctx.shape(x)
    rank = len(xs)
    axis = _normalize_axis(node.attr("axis", -1), rank, node)
    eps = float(node.attr("epsilon", 1e-5))
    inner = _prod(xs[axis:])
    if bias is None:
        bias = ctx.const(np.zeros(xs[axis:]), ctx.dtype_of(x))
    scale, bias = ctx.reshape(scale, (inner,)), ctx.reshape(bias, (inner,))
    flat = ctx.reshape(x, xs[:axis] + (inner,))
    out = ctx.call("nn.layer_norm", flat, scale, bias, axis=-1, epsilon=eps)
    return ctx.reshape(out, xs)


def _lrn(ctx, node, inputs):
    return ctx.call("nn.lrn", inputs[0], size=int(node.required("size")), axis=1,
                    alpha=float(node.attr("alpha", 1e-4)), beta=float(node.attr("beta", 0.75)),
                    bias=float(node.attr("bias", 1.0)))


def _leaky_relu(ctx, node, inputs):
    return ctx.call("nn.leaky_relu", inputs[0], alpha=float(node.attr("alpha", 0.01)))


def _prelu(ctx, node, inputs):
    x, slope = inputs
    xs, ss = ctx.shape(x), ctx.shape(slope)
    channels = xs[1] if len(xs) > 1 else None
    per_channel = (channels is not None and _prod(ss) == channels and len(ss) <= len(xs) - 1
                   and (len(ss) == 1 or all(d == 1 for d in ss[1:]) and ss[0] == channels))
    if per_channel:
        return ctx.call("nn.prelu", x, ctx.reshape(slope, (channels,)), axis=1)
    # any other broadcastable slope: relu(x) + slope * min(x, 0)
    zero = ctx.scalar(0, x)
    return ctx.call("add", ctx.call("nn.relu", x), ctx.call("multiply", slope, ctx.call("minimum", x, zero)))


def _clip_between(ctx, x, lo, hi):
    """``x`` clamped to [lo, hi] (constants, either may be None)."""
    if lo is not None and hi is not None:
        return ctx.call("clip", x, a_min=float(lo), a_max=float(hi))
    if lo is not None:
        return ctx.call("maximum", x, ctx.scalar(lo, x))
    if hi is not None:
        return ctx.call("minimum", x, ctx.scalar(hi, x))
    return x


def _clip(ctx, node, inputs):
    x = inputs[0]
    if node.opset < 11:
        return _clip_between(ctx, x, node.attr("min"), node.attr("max"))
    lo, hi = ctx.optional_input(inputs, 1), ctx.optional_input(inputs, 2)
    if (lo is None or ctx.is_const(lo)) and (hi is None or ctx.is_const(hi)):
        lo = None if lo is None else np.asarray(ctx.value(lo, "min")).item()
        hi = None if hi is None else np.asarray(ctx.value(hi, "max")).item()
        return _clip_between(ctx, x, lo, hi)
    # bounds computed at run time: maximum / minimum with the 0-d tensors
    if lo is not None:
        x = ctx.call("maximum", x, lo)
    if hi is not None:
        x = ctx.call("minimum", x, hi)
    return x


def _hard_sigmoid_of(ctx, x, alpha, beta):
    scaled = ctx.call("add", ctx.call("multiply", x, ctx.scalar(alpha, x)), ctx.scalar(beta, x))
    return ctx.call("clip", scaled, a_min=0.0, a_max=1.0)


def _hard_sigmoid(ctx, node, inputs):
    return _hard_sigmoid_of(ctx, inputs[0], float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5)))


def _hard_swish(ctx, node, inputs):
    x = inputs[0]
    return ctx.call("multiply", x, _hard_sigmoid_of(ctx, x, 1.0 / 6.0, 0.5))


def _elu_of(ctx, x, alpha):
    """max(x, 0) + alpha * (exp(min(x, 0)) - 1)."""
    zero, one = ctx.scalar(0, x), ctx.scalar(1, x)
    neg = ctx.call("subtract", ctx.call("exp", ctx.call("minimum", x, zero)), one)
    return ctx.call("add", ctx.call("nn.relu", x), ctx.call("multiply", ctx.scalar(alpha, x), neg))


def _elu(ctx, node, inputs):
    return _elu_of(ctx, inputs[0], float(node.attr("alpha", 1.0)))


def _selu(ctx, node, inputs):
    x = inputs[0]
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    return ctx.call("multiply", ctx.scalar(gamma, x), _elu_of(ctx, x, alpha))


def _softplus_of(ctx, x):
    """log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)): no overflow for large x."""
    tail = ctx.call("exp", ctx.call("negative", ctx.call("abs", x)))
    return ctx.call("add", ctx.call("nn.relu", x), ctx.call("log", ctx.call("add", tail, ctx.scalar(1, x))))


def _softplus(ctx, node, inputs):
    return _softplus_of(ctx, inputs[0])


def _mish(ctx, node, inputs):
    x = inputs[0]
    return ctx.call("multiply", x, ctx.call("tanh", _softplus_of(ctx, x)))


def _celu(ctx, node, inputs):
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) == elu(x / alpha) scaled by alpha on the negative side
    x = inputs[0]
    alpha = float(node.attr("alpha", 1.0))
    if alpha == 0:
        node.fail("alpha is 0; CELU divides by alpha: give a nonzero alpha")
    zero, one = ctx.scalar(0, x), ctx.scalar(1, x)
    scaled = ctx.call("divide", ctx.call("minimum", x, zero), ctx.scalar(alpha, x))
    neg = ctx.call("multiply", ctx.scalar(alpha, x), ctx.call("subtract", ctx.call("exp", scaled), one))
    return ctx.call("add", ctx.call("nn.relu", x), neg)


def _thresholded_relu(ctx, node, inputs):
    x = inputs[0]
    alpha = float(node.attr("alpha", 1.0))
    return ctx.call("where", ctx.call("greater", x, ctx.scalar(alpha, x)), x, ctx.scalar(0, x))


def _softsign(ctx, node, inputs):
    x = inputs[0]
    return ctx.call("divide", x, ctx.call("add", ctx.call("abs", x), ctx.scalar(1, x)))


def _gelu(ctx, node, inputs):
    x = inputs[0]
    half, one = ctx.scalar(0.5, x), ctx.scalar(1, x)
    if node.attr("approximate", "none") == "tanh":
        cube = ctx.call("multiply", ctx.call("multiply", x, x), x)
        inner = ctx.call("add", x, ctx.call("multiply", ctx.scalar(0.044715, x), cube))
        t = ctx.call("tanh", ctx.call("multiply", ctx.scalar(math.sqrt(2 / math.pi), x), inner))
    else:
        t = ctx.call("erf", ctx.call("multiply", x, ctx.scalar(1 / math.sqrt(2), x)))
    return ctx.call("multiply", ctx.call("multiply", half, x), ctx.call("add", one, t))


def _softmax(op_name):
    def convert(ctx, node, inputs):
        x = inputs[0]
        xs = ctx.shape(x)
        rank = len(xs)
        dtype = ctx.dtype_of(x)
        if dtype == "float16":
            x = ctx.cast(x, "float32")  # the exponentials summed in float32, the result rounded once
        if node.opset >= 13:
            out = ctx.call(op_name, x, axis=_normalize_axis(node.attr("axis", -1), rank, node))
        else:
            # before opset 13: the input is read as 2-D [prod(shape[:axis]), prod(shape[axis:])]
            axis = _normalize_axis(node.attr("axis", 1), rank, node)
            if axis == rank - 1:
                out = ctx.call(op_name, x, axis=axis)
            else:
                flat = ctx.reshape(x, (_prod(xs[:axis]), _prod(xs[axis:])))
                out = ctx.reshape(ctx.call(op_name, flat, axis=1), xs)
        return ctx.cast(out, dtype)

    return convert


def _matmul(ctx, node, inputs):
    a, b = inputs
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    if not a_shape or not b_shape:
        node.fail("MatMul of a scalar (rank-0) operand")
    squeeze_m, squeeze_n = len(a_shape) == 1, len(b_shape) == 1
    if squeeze_m:
        a = ctx.reshape(a, (1,) + a_shape)
    if squeeze_n:
        b = ctx.reshape(b, b_shape + (1,))
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        node.fail(f"the operands' shapes {a_shape} and {b_shape} do not multiply (inner sizes {k} and {k2})")
    acc, dtype = _accumulator(ctx, a), ctx.dtype_of(a)
    if len(b_shape) == 2:
        # (..., M, K) x (K, N): one dense over the flattened leading axes
        flat = ctx.reshape(a, (_prod(a_shape[:-1]), k))
        out = ctx.call("nn.dense", flat, ctx.call("transpose", b, axes=(1, 0)), units=n, out_dtype=acc)
        out_shape = a_shape[:-1] + (n,)
        out = ctx.reshape(out, out_shape)
    else:
        try:
            batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
        except ValueError:
            node.fail(f"the batch axes of {a_shape} and {b_shape} do not broadcast")
        nb = _prod(batch)
        if a_shape[:-2] != batch:
            a = ctx.call("broadcast_to", a, shape=batch + (m, k))
        if b_shape[:-2] != batch:
            b = ctx.call("broadcast_to", b, shape=batch + (k, n))
        a3, b3 = ctx.reshape(a, (nb, m, k)), ctx.reshape(b, (nb, k, n))
        out = ctx.call("nn.batch_matmul", a3, b3, transpose_a=False, transpose_b=False, out_dtype=acc)
        out_shape = batch + (m, n)
        out = ctx.reshape(out, out_shape)
    out = ctx.cast(out, dtype)
    if squeeze_m or squeeze_n:
        final = out_shape[:-2] + (() if squeeze_m else (m,)) + (() if squeeze_n else (n,))
        out = ctx.reshape(out, final)
    return out


def _gemm(ctx, node, inputs):
    a, b = inputs[0], inputs[1]
    c = ctx.optional_input(inputs, 2)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if ctx.rank(a) != 2 or ctx.rank(b) != 2:
        node.fail(f"Gemm takes 2-D A and B, got shapes {ctx.shape(a)} and {ctx.shape(b)}")
    if node.attr("transA", 0):
        a = ctx.call("transpose", a, axes=(1, 0))
    if not node.attr("transB", 0):
        b = ctx.call("transpose", b, axes=(1, 0))  # dense takes the weight as (N, K)
    n = ctx.shape(b)[0]
    acc, dtype = _accumulator(ctx, a), ctx.dtype_of(a)
    out = ctx.call("nn.dense", a, b, units=n, out_dtype=acc)
    if alpha != 1.0:
        out = ctx.call("multiply", out, ctx.scalar(alpha, out))
    if c is not None:
        c = ctx.cast(c, ctx.dtype_of(out))
        if beta != 1.0:
            c = ctx.call("multiply", c, ctx.scalar(beta, c))
        cs = ctx.shape(c)
        if cs in ((n,), (1, n)):
            out = ctx.call("nn.bias_add", out, ctx.reshape(c, (n,)), axis=1)
        else:
            out = ctx.call("add", out, c)
    return ctx.cast(out, dtype)


def _einsum(ctx, node, inputs):
    return ctx.call("einsum", ctx.tuple(inputs), equation=str(node.required("equation")))


# --- shape and layout operators -----------------------------------------------------------
def _flatten(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axis = int(node.attr("axis", 1))
    axis = axis + len(xs) if axis < 0 else axis
    if not 0 <= axis <= len(xs):
        node.fail(f"axis {node.attr('axis')} is out of range for rank {len(xs)}")
    return ctx.reshape(x, (_prod(xs[:axis]), _prod(xs[axis:])))


def _reshape(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    target = [int(d) for d in ctx.value(inputs[1], "the shape (input 1)").reshape(-1)]
    allowzero = bool(node.attr("allowzero", 0))
    out, infer_at = [], None
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if i >= len(xs):
                node.fail(f"shape {tuple(target)} copies dimension {i} (0) of an input of rank {len(xs)}")
            out.append(xs[i])
        elif d == -1:
            if infer_at is not None:
                node.fail(f"shape {tuple(target)} has more than one -1")
            infer_at = i
            out.append(1)
        elif d < 0:
            node.fail(f"shape {tuple(target)} has a negative dimension {d}")
        else:
            out.append(d)
    size = _prod(xs)
    if infer_at is not None:
        rest = _prod(out)
        if rest == 0 or size % rest:
            node.fail(f"cannot reshape {xs} into {tuple(target)}")
        out[infer_at] = size // rest
    if _prod(out) != size:
        node.fail(f"cannot reshape {xs} ({size} elements) into {tuple(out)} ({_prod(out)} elements)")
    return ctx.reshape(x, out)


def _transpose(ctx, node, inputs):
    x = inputs[0]
    rank = ctx.rank(x)
    perm = tuple(int(p) for p in node.attr("perm", list(range(rank))[::-1]))
    if sorted(perm) != list(range(rank)):
        node.fail(f"perm {perm} is not a permutation of the {rank} axes")
    if perm == tuple(range(rank)):
        return x
    return ctx.call("transpose", x, axes=perm)


def _concat(ctx, node, inputs):
    parts = [x for x in inputs if x is not None]
    axis = _normalize_axis(node.required("axis"), ctx.rank(parts[0]), node)
    parts = [x for x in parts if ctx.shape(x)[axis] != 0] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    return ctx.call("concatenate", ctx.tuple(parts), axis=axis)


def _split(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axis = _normalize_axis(node.attr("axis", 0), len(xs), node)
    dim = xs[axis]
    if node.opset >= 13:
        given = ctx.optional_input(inputs, 1)
        sizes = None if given is None else [int(s) for s in ctx.value(given, "split (input 1)").reshape(-1)]
    else:
        sizes = node.attr("split")
        sizes = None if sizes is None else [int(s) for s in sizes]
    if sizes is None:
        num = int(node.attr("num_outputs", len(node.outputs)))
        chunk = -(-dim // num)
        sizes = [chunk] * (num - 1) + [dim - chunk * (num - 1)]
    if sum(sizes) != dim or any(s <= 0 for s in sizes):
        node.fail(f"split sizes {sizes} do not divide axis {axis} of size {dim} into non-empty parts")
    if len(sizes) != len(node.outputs):
        node.fail(f"{len(sizes)} split sizes {sizes} for {len(node.outputs)} outputs")
    if len(sizes) == 1:
        return [x]
    if len(set(sizes)) == 1:
        sections = len(sizes)
    else:
        sections = tuple(int(i) for i in np.cumsum(sizes)[:-1])
    out = _split_call(ctx, x, sections, axis, sizes)
    return [ctx.item(out, i) for i in range(len(sizes))]


def _split_call(ctx, x, sections, axis, sizes):
    if isinstance(x, Constant):
        cuts = np.cumsum(sizes)[:-1]
        return Tuple([Constant(np.array(p, order="C")) for p in np.split(x.data, cuts, axis=axis)])
    return ctx.call("split", x, indices_or_sections=sections, axis=axis)


def _slice(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    if node.opset < 10:
        starts, ends = node.required("starts"), node.required("ends")
        axes = node.attr("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = ctx.value(inputs[1], "starts (input 1)").reshape(-1).tolist()
        ends = ctx.value(inputs[2], "ends (input 2)").reshape(-1).tolist()
        axes_in, steps_in = ctx.optional_input(inputs, 3), ctx.optional_input(inputs, 4)
        axes = list(range(len(starts))) if axes_in is None else ctx.value(axes_in, "axes (input 3)").reshape(
            -1).tolist()
        steps = [1] * len(starts) if steps_in is None else ctx.value(steps_in, "steps (input 4)").reshape(-1).tolist()
    if not len(starts) == len(ends) == len(axes) == len(steps):
        node.fail(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    begin, end, stride = [0] * rank, list(xs), [1] * rank
    reversed_axes = {}
    for a, s, e, st in zip(axes, starts, ends, steps):
        a = _normalize_axis(a, rank, node, "axis")
        if int(st) == 0:
            node.fail(f"step 0 on axis {a}")
        start, stop, step = slice(int(s), int(e), int(st)).indices(xs[a])
        count = len(range(start, stop, step))
        if count == 0:
            node.fail(f"the slice of axis {a} ({s}:{e}:{st} of {xs[a]}) is empty; tecc does not compile empty "
                      "tensors")
        if step > 0:
            begin[a], end[a], stride[a] = start, start + (count - 1) * step + 1, step
        else:
            reversed_axes[a] = list(range(start, stop, step))
    out = x
    if begin != [0] * rank or end != list(xs) or stride != [1] * rank:
        out = ctx.call("strided_slice", out, begin=tuple(begin), end=tuple(end), strides=tuple(stride))
    for a, picks in sorted(reversed_axes.items()):
        out = ctx.call("take", out, ctx.const(picks, "int64"), axis=a, mode="clip")
    return out


def _gather(ctx, node, inputs):
    data, idx = inputs
    ds = ctx.shape(data)
    axis = _normalize_axis(node.attr("axis", 0), len(ds), node)
    if ctx.is_const(idx):
        vals = ctx.value(idx, "indices").astype("int64")
        fixed = np.where(vals < 0, vals + ds[axis], vals)
        if np.any((fixed < 0) | (fixed >= ds[axis])):
            node.fail(f"indices {vals.reshape(-1)[:8].tolist()} are out of range for axis {axis} of size {ds[axis]}")
        return ctx.call("take", data, Constant(fixed), axis=axis, mode="clip")
    # indices computed at run time: "wrap" reads a negative index from the end, as ONNX says
    return ctx.call("take", data, idx, axis=axis, mode="wrap")


def _gather_elements(ctx, node, inputs):
    data, idx = inputs
    ds = ctx.shape(data)
    axis = _normalize_axis(node.attr("axis", 0), len(ds), node)
    if ctx.is_const(idx):
        vals = ctx.value(idx, "indices").astype("int64")
        idx = Constant(np.where(vals < 0, vals + ds[axis], vals))
    return ctx.call("gather", data, idx, axis=axis)


def _axes_of(ctx, node, inputs, attr_until):
    """The ``axes`` of Squeeze / Unsqueeze / reductions: an attribute before opset
    ``attr_until``, input 1 from it on (None when not given)."""
    if node.opset < attr_until:
        axes = node.attr("axes")
    else:
        given = ctx.optional_input(inputs, 1)
        axes = None if given is None else ctx.value(given, "axes (input 1)").reshape(-1).tolist()
    return None if axes is None else [int(a) for a in axes]


def _unsqueeze(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axes = _axes_of(ctx, node, inputs, 13)
    if not axes:
        node.fail("axes are required")
    out_rank = len(xs) + len(axes)
    axes = sorted(_normalize_axis(a, out_rank, node, "axes entry") for a in axes)
    if len(set(axes)) != len(axes):
        node.fail(f"axes {axes} repeat an axis")
    dims = iter(xs)
    shape = [1 if i in axes else next(dims) for i in range(out_rank)]
    return ctx.reshape(x, shape)


def _squeeze(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    axes = _axes_of(ctx, node, inputs, 13)
    if axes is None:
        axes = [i for i, d in enumerate(xs) if d == 1]
    axes = {_normalize_axis(a, len(xs), node, "axes entry") for a in axes}
    for a in sorted(axes):
        if xs[a] != 1:
            node.fail(f"axis {a} has size {xs[a]}, not 1: it cannot be squeezed")
    return ctx.reshape(x, [d for i, d in enumerate(xs) if i not in axes])


def _expand(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    target = tuple(int(d) for d in ctx.value(inputs[1], "the shape (input 1)").reshape(-1))
    try:
        out = tuple(np.broadcast_shapes(xs, target))
    except ValueError:
        node.fail(f"the input's shape {xs} does not broadcast to {target}")
    if out == xs:
        return x
    return ctx.call("broadcast_to", x, shape=out)


def _tile(ctx, node, inputs):
    x = inputs[0]
    reps = tuple(int(r) for r in ctx.value(inputs[1], "repeats (input 1)").reshape(-1))
    if len(reps) != ctx.rank(x):
        node.fail(f"repeats {reps} should have one entry per axis of the rank-{ctx.rank(x)} input")
    if all(r == 1 for r in reps):
        return x
    return ctx.call("tile", x, reps=reps)


def _where(ctx, node, inputs):
    cond, x, y = inputs
    return ctx.call("where", ctx.cast(cond, "bool"), x, y)


def _pad(ctx, node, inputs):
    x = inputs[0]
    rank = ctx.rank(x)
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        node.fail(f"mode {mode!r} is not one of constant, reflect, edge")
    if node.opset < 11:
        pads = list(node.attr("pads", node.attr("paddings", [])))
        value = float(node.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = [int(p) for p in ctx.value(inputs[1], "pads (input 1)").reshape(-1)]
        cv = ctx.optional_input(inputs, 2)
        value = 0.0 if cv is None else float(np.asarray(ctx.value(cv, "constant_value (input 2)")).reshape(-1)[0])
        ax = ctx.optional_input(inputs, 3)
        axes = list(range(rank)) if ax is None else [
            _normalize_axis(a, rank, node, "axes entry") for a in ctx.value(ax, "axes (input 3)").reshape(-1)]
    n = len(axes)
    if len(pads) != 2 * n:
        node.fail(f"pads {pads} should have {2 * n} values (begins, then ends)")
    width = [[0, 0] for _ in range(rank)]
    for i, a in enumerate(axes):
        width[a] = [int(pads[i]), int(pads[i + n])]
    if any(p < 0 for w in width for p in w):
        node.fail(f"negative pads {pads} (cropping) are not supported; use Slice")
    if all(p == 0 for w in width for p in w):
        return x
    return ctx.call("nn.pad", x, pad_width=tuple(tuple(w) for w in width), pad_value=value, pad_mode=mode)


# --- reductions ------------------------------------------------------------------------------
def _reduce_axes(ctx, node, inputs, rank):
    """(axis tuple or None for all, keepdims) of a Reduce* node; ``False`` for axis
    means the node is a no-op (noop_with_empty_axes)."""
    attr_until = 13 if node.op_type == "ReduceSum" else 18
    axes = _axes_of(ctx, node, inputs, attr_until)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return False, keepdims
        return None, keepdims
    return tuple(sorted({_normalize_axis(a, rank, node, "axes entry") for a in axes})), keepdims


def _reduce(op_name, pre=None, post=None):
    def convert(ctx, node, inputs):
        x = inputs[0]
        axis, keepdims = _reduce_axes(ctx, node, inputs, ctx.rank(x))
        if axis is False:
            return x
        if op_name in ("max", "min") and ctx.dtype_of(x) == "bool":
            # bool (opset 20): the max / min of 0s and 1s, as bool again
            out = ctx.call(op_name, ctx.cast(x, "uint8"), axis=axis, keepdims=keepdims)
            return ctx.cast(out, "bool")
        if pre == "square":
            x = ctx.call("multiply", x, x)
        elif pre == "abs":
            x = ctx.call("abs", x)
        out = ctx.call(op_name, x, axis=axis, keepdims=keepdims)
        if post == "sqrt":
            out = ctx.call("sqrt", out)
        elif post == "log":
            out = ctx.call("log", out)
        return out

    return convert


def _reduce_log_sum_exp(ctx, node, inputs):
    x = inputs[0]
    axis, keepdims = _reduce_axes(ctx, node, inputs, ctx.rank(x))
    if axis is False:
        return x
    if not ctx.dtype_of(x).startswith(("float", "bfloat")):
        node.fail(f"the input is {ctx.dtype_of(x)}; tecc computes ReduceLogSumExp of floating-point tensors: Cast "
                  "it to float32 first")
    # log(sum(exp(x - m))) + m with m the maximum (no overflow); an m of +-inf (a row of -inf, or empty) is
    # replaced by 0 so that the row gives log(sum(exp(x))) itself (-inf for an empty row)
    m = ctx.call("max", x, axis=axis, keepdims=True)
    m = ctx.call("where", ctx.call("isfinite", m), m, ctx.scalar(0, x))
    total = ctx.call("sum", ctx.call("exp", ctx.call("subtract", x, m)), axis=axis, keepdims=keepdims)
    if not keepdims:
        m = ctx.reshape(m, ctx.shape(total))
    return ctx.call("add", ctx.call("log", total), m)


def _arg(op_name):
    def convert(ctx, node, inputs):
        x = inputs[0]
        axis = _normalize_axis(node.attr("axis", 0), ctx.rank(x), node)
        last = bool(node.attr("select_last_index", 0))
        out = ctx.call(op_name, x, axis=(axis,), keepdims=bool(node.attr("keepdims", 1)),
                       select_last_index=True if last else None)
        return ctx.cast(out, "int64")

    return convert


# --- data movement, scans, sorting, scatters ------------------------------------------------
def _block_size(node):
    bs = node.required("blocksize")
    if int(bs) < 1:
        node.fail(f"blocksize {bs} must be >= 1")
    return int(bs)


def _four_d(ctx, node, x):
    if ctx.rank(x) != 4:
        node.fail(f"the input has shape {ctx.shape(x)}; {node.op_type} takes a 4-D NCHW tensor")


def _depth_to_space(ctx, node, inputs):
    x = inputs[0]
    _four_d(ctx, node, x)
    mode = node.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        node.fail(f"mode {mode!r} is not DCR or CRD")
    return ctx.call("nn.depth_to_space", x, block_size=_block_size(node), mode=mode)


def _space_to_depth(ctx, node, inputs):
    x = inputs[0]
    _four_d(ctx, node, x)
    return ctx.call("nn.space_to_depth", x, block_size=_block_size(node))


def _cumsum(ctx, node, inputs):
    x, axis_in = inputs
    if ctx.rank(x) == 0:
        node.fail("the input is a scalar; CumSum needs an axis")
    axis = np.asarray(ctx.value(axis_in, "axis (input 1)")).reshape(-1)
    if axis.size != 1:
        node.fail(f"axis (input 1) must hold one integer, got {axis.tolist()}")
    axis = _normalize_axis(axis[0], ctx.rank(x), node)
    reverse = bool(node.attr("reverse", 0))
    if reverse:
        x = ctx.call("reverse", x, axis=axis)
    out = ctx.call("cumsum", x, axis=axis, exclusive=bool(node.attr("exclusive", 0)))
    return ctx.call("reverse", out, axis=axis) if reverse else out


def _topk(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    if not xs:
        node.fail("the input is a scalar; TopK needs an axis")
    axis = _normalize_axis(node.attr("axis", -1), len(xs), node)
    if node.opset < 10:
        k = int(node.required("k"))
    else:
        given = np.asarray(ctx.value(inputs[1], "K (input 1)")).reshape(-1)
        if given.size != 1:
            node.fail(f"K (input 1) must hold one integer, got {given.tolist()}")
        k = int(given[0])
    if not 1 <= k <= xs[axis]:
        node.fail(f"K = {k} must be in [1, {xs[axis]}] (the size of axis {axis} of the input {xs}); tecc does not "
                  "compile empty tensors")
    if ctx.dtype_of(x) == "bool":
        node.fail("the input is bool; TopK takes numbers")
    # sorted=0 lets the order be anything: the sorted order is one
    out = ctx.call("topk", x, k=k, axis=axis, ret_type="both", is_ascend=not node.attr("largest", 1),
                   dtype="int64")
    return [ctx.item(out, 0), ctx.item(out, 1)]


def _trilu(ctx, node, inputs):
    x = inputs[0]
    if ctx.rank(x) < 2:
        node.fail(f"the input has shape {ctx.shape(x)}; Trilu takes matrices (rank 2 or more)")
    k = ctx.optional_input(inputs, 1)
    if k is None:
        k = ctx.const(0, "int64")
    elif ctx.is_const(k):
        value = np.asarray(ctx.value(k, "k (input 1)")).reshape(-1)
        if value.size != 1:
            node.fail(f"k (input 1) must hold one integer, got {value.tolist()}")
        k = ctx.const(value[0], "int64")
    return ctx.call("trilu", x, k, upper=bool(node.attr("upper", 1)))


#: ONNX's reduction attribute of the scatters -> tecc's
_SCATTER_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _scatter_reduction(node):
    reduction = node.attr("reduction", "none")
    if reduction not in _SCATTER_REDUCTIONS:
        node.fail(f"reduction {reduction!r} is not one of {', '.join(_SCATTER_REDUCTIONS)}")
    return _SCATTER_REDUCTIONS[reduction]


def _scatter_elements(ctx, node, inputs):
    data, indices, updates = inputs
    axis = _normalize_axis(node.attr("axis", 0), ctx.rank(data), node)
    return ctx.call("scatter_elements", data, indices, ctx.cast(updates, ctx.dtype_of(data)), axis=axis,
                    reduction=_scatter_reduction(node))


def _scatter_nd(ctx, node, inputs):
    data, indices, updates = inputs
    ishape = ctx.shape(indices)
    if not ishape:
        node.fail("indices is a scalar; it needs a last axis holding the index tuples")
    # ONNX keeps the index tuples along the last axis, the graph operator along the first
    rank = len(ishape)
    if rank > 1:
        indices = ctx.call("transpose", indices, axes=(rank - 1,) + tuple(range(rank - 1)))
    return ctx.call("scatter_nd", data, indices, ctx.cast(updates, ctx.dtype_of(data)),
                    mode=_scatter_reduction(node))


def _one_hot(ctx, node, inputs):
    indices, depth, values = inputs
    depth = np.asarray(ctx.value(depth, "depth (input 1)")).reshape(-1)
    if depth.size != 1:
        node.fail(f"depth (input 1) must hold one number, got {depth.tolist()}")
    depth = int(depth[0])
    if depth < 1:
        node.fail(f"depth {depth} must be >= 1")
    vshape = ctx.shape(values)
    if _prod(vshape) != 2 or len(vshape) != 1:
        node.fail(f"values (input 2) must be the 2 numbers [off_value, on_value], got shape {vshape}")
    if ctx.dtype_of(indices) not in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        indices = ctx.cast(indices, "int64")  # ONNX casts non-integer indices to int64
    ndim = ctx.rank(indices)
    axis = int(node.attr("axis", -1))
    if not -ndim - 1 <= axis <= ndim:
        node.fail(f"axis {axis} is out of range for indices of rank {ndim} (valid: {-ndim - 1}..{ndim})")
    axis = axis + ndim + 1 if axis < 0 else axis
    if ctx.dtype_of(indices).startswith("int"):
        # a negative index counts from the end of the depth
        shifted = ctx.call("add", indices, ctx.scalar(depth, indices))
        indices = ctx.call("where", ctx.call("less", indices, ctx.scalar(0, indices)), shifted, indices)
    if ctx.is_const(values):
        off, on = (ctx.const(v, ctx.dtype_of(values)) for v in ctx.value(values, "values (input 2)"))
    else:
        off, on = (ctx.reshape(ctx.call("strided_slice", values, begin=(i,), end=(i + 1,)), ()) for i in (0, 1))
    return ctx.call("one_hot", indices, on, off, depth=depth, axis=axis, dtype=ctx.dtype_of(values))


# --- Resize / Upsample ------------------------------------------------------------------------
#: ONNX's Resize modes -> image.resize2d's methods
_RESIZE_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear", "cubic": "cubic"}
_RESIZE_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                       "tf_half_pixel_for_nn", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_operand(ctx, inputs, i, what):
    """Input ``i`` of a Resize as a flat numpy array; None when it is left out or
    empty (ONNX passes an empty tensor for an unused roi / scales)."""
    x = ctx.optional_input(inputs, i)
    if x is None:
        return None
    if _prod(ctx.shape(x)) == 0:
        return None
    return np.asarray(ctx.value(x, what)).reshape(-1)


def _resize_targets(ctx, node, inputs, xs):
    """``(sizes, scales, from_scales)`` of every axis of a Resize / Upsample: the
    output sizes, the scales the coordinates use, and whether the model gave
    scales (rather than sizes)."""
    rank = len(xs)
    if node.op_type == "Upsample" or node.opset < 11:
        scales = _resize_operand(ctx, inputs, 1, "scales (input 1)")
        sizes, axes, policy = None, None, "stretch"
    else:
        scales = _resize_operand(ctx, inputs, 2, "scales (input 2)")
        sizes = _resize_operand(ctx, inputs, 3, "sizes (input 3)")
        axes = node.attr("axes") if node.opset >= 18 else None
        policy = node.attr("keep_aspect_ratio_policy", "stretch") if node.opset >= 18 else "stretch"
    if (scales is None) == (sizes is None):
        node.fail("give exactly one of scales and sizes (the other empty or left out)")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        node.fail(f"keep_aspect_ratio_policy {policy!r} is not one of stretch, not_larger, not_smaller")
    axes = list(range(rank)) if axes is None else [_normalize_axis(a, rank, node, "axes entry") for a in axes]
    if len(set(axes)) != len(axes):
        node.fail(f"axes {axes} name an axis twice")
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        node.fail(f"{'scales' if scales is not None else 'sizes'} {given.tolist()} should have one entry per axis "
                  f"({len(axes)})")
    out_sizes, out_scales = list(xs), [1.0] * rank
    if scales is not None:
        for a, sc in zip(axes, scales.astype("float64")):
            if not sc > 0:
                node.fail(f"scales {scales.tolist()} must be positive")
            out_scales[a] = float(sc)
            out_sizes[a] = int(math.floor(float(sc) * xs[a]))
            if out_sizes[a] < 1:
                node.fail(f"scale {float(sc)} makes axis {a} (size {xs[a]}) empty; tecc does not compile empty "
                          "tensors")
        return out_sizes, out_scales, True
    sizes = [int(v) for v in sizes]
    if any(v < 1 for v in sizes):
        node.fail(f"sizes {sizes} must be positive")
    if policy == "stretch":
        for a, v in zip(axes, sizes):
            out_sizes[a], out_scales[a] = v, v / xs[a]
        return out_sizes, out_scales, False
    pick = min if policy == "not_larger" else max
    scale = pick(v / xs[a] for a, v in zip(axes, sizes))
    for a in axes:
        out_scales[a] = scale
        out_sizes[a] = int(scale * xs[a] + 0.5)  # ONNX rounds half up here
    return out_sizes, out_scales, True


def _resize(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    legacy = node.op_type == "Upsample" or node.opset < 11  # Upsample-9, Resize-10: asymmetric coordinates
    mode = node.attr("mode", "nearest")
    if mode not in _RESIZE_METHODS or (mode == "bilinear" and not legacy):
        node.fail(f"mode {mode!r} is not one of nearest, linear, cubic")
    if legacy and mode == "cubic":
        node.fail("mode 'cubic' is not defined before opset 11")
    sizes, scales, from_scales = _resize_targets(ctx, node, inputs, xs)
    if rank not in (3, 4):
        node.fail(f"the input has rank {rank}; tecc resizes the 1 or 2 spatial axes of NCW / NCHW (or NHWC) "
                  "tensors")
    changed = [a for a in range(rank) if sizes[a] != xs[a] or scales[a] != 1.0]
    if rank == 4 and all(a in (2, 3) for a in changed):
        layout, spatial = "NCHW", (2, 3)
    elif rank == 4 and all(a in (1, 2) for a in changed):
        layout, spatial = "NHWC", (1, 2)
    elif rank == 3 and all(a == 2 for a in changed):
        layout, spatial = "NCHW", (None, 2)
    else:
        node.fail(f"it resizes axes {changed} of a tensor of shape {xs}; tecc resizes the spatial axes only (the "
                  "last two of NCHW, the middle two of NHWC, the last of NCW)")
    if legacy:
        coordinate, rounding = "asymmetric", None
        if mode == "nearest":
            # onnxruntime's rule before opset 11: truncate when enlarging, round up when shrinking
            down = any(scales[a] < 1 for a in changed)
            up = any(scales[a] > 1 for a in changed)
            if down and up:
                node.fail(f"scales {[scales[a] for a in changed]} enlarge one axis and shrink another; the nearest "
                          "pixel rule of opsets before 11 differs between the two: export at opset 11 or later")
            rounding = "ceil" if down else "floor"
        cubic_a, exclude, extrapolation = -0.75, 0, 0.0
    else:
        coordinate = node.attr("coordinate_transformation_mode", "half_pixel")
        if coordinate not in _RESIZE_COORDINATES or (coordinate == "half_pixel_symmetric" and node.opset < 19):
            node.fail(f"coordinate_transformation_mode {coordinate!r} is not supported; tecc takes "
                      f"{', '.join(_RESIZE_COORDINATES)} (half_pixel_symmetric from opset 19)")
        rounding = node.attr("nearest_mode", "round_prefer_floor") if mode == "nearest" else None
        if rounding is not None and rounding not in _NEAREST_MODES:
            node.fail(f"nearest_mode {rounding!r} is not one of {', '.join(_NEAREST_MODES)}")
        cubic_a = float(node.attr("cubic_coeff_a", -0.75))
        exclude = int(node.attr("exclude_outside", 0)) if mode == "cubic" else 0
        extrapolation = float(node.attr("extrapolation_value", 0.0))
        if node.attr("antialias", 0) and not (mode == "linear" and all(scales[a] >= 1 for a in changed)):
            node.fail("antialias=1 is supported only for linear enlarging (where it changes nothing); export "
                      "with antialias=False")
    roi = None
    if coordinate == "tf_crop_and_resize":
        roi_full = _resize_operand(ctx, inputs, 1, "roi (input 1)")
        if roi_full is None:
            node.fail("coordinate_transformation_mode 'tf_crop_and_resize' needs roi (input 1)")
        axes = node.attr("axes") if node.opset >= 18 else None
        axes = list(range(rank)) if axes is None else [_normalize_axis(a, rank, node, "axes entry") for a in axes]
        if len(roi_full) != 2 * len(axes):
            node.fail(f"roi {roi_full.tolist()} should have 2 entries per axis ({2 * len(axes)})")
        starts, ends = [0.0] * rank, [1.0] * rank
        for i, a in enumerate(axes):
            starts[a], ends[a] = float(roi_full[i]), float(roi_full[i + len(axes)])
        roi = tuple(starts[a] if a is not None else 0.0 for a in spatial) + tuple(
            ends[a] if a is not None else 1.0 for a in spatial)
    out_hw = tuple(sizes[a] if a is not None else 1 for a in spatial)
    # the scales are passed when they map coordinates differently from the sizes' ratio
    use_scales = from_scales and any(scales[a] * xs[a] != sizes[a] for a in spatial if a is not None)
    scale_hw = tuple(scales[a] if a is not None else 1.0 for a in spatial) if use_scales else None
    data = x if rank == 4 else ctx.reshape(x, xs[:2] + (1,) + xs[2:])
    out = ctx.call("image.resize2d", data, size=out_hw, roi=roi, layout=layout, method=_RESIZE_METHODS[mode],
                   coordinate_transformation_mode=coordinate, rounding_method=rounding, cubic_alpha=cubic_a,
                   cubic_exclude=exclude, extrapolation_value=extrapolation, scales=scale_hw)
    return out if rank == 4 else ctx.reshape(out, tuple(sizes))


# --- element tests, bitwise, and small compositions ---------------------------------------
def _is_inf(ctx, node, inputs):
    x = inputs[0]
    neg, pos = bool(node.attr("detect_negative", 1)), bool(node.attr("detect_positive", 1))
    inf = ctx.call("isinf", x)
    if neg and pos:
        return inf
    if not (neg or pos):
        return ctx.call("logical_and", inf, ctx.const(np.zeros((), bool), "bool"))
    side = ctx.call("greater" if pos else "less", x, ctx.scalar(0, x))
    return ctx.call("logical_and", inf, side)


def _bit_shift(ctx, node, inputs):
    direction = node.required("direction")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    if direction not in ("LEFT", "RIGHT"):
        node.fail(f"direction {direction!r} must be 'LEFT' or 'RIGHT'")
    x, shift = inputs
    dtype = ctx.dtype_of(x)
    if not dtype.startswith(("int", "uint")):
        node.fail(f"the input is {dtype}; BitShift shifts integers")
    bits = int(np.dtype(dtype).itemsize * 8)
    # a shift outside [0, bits) shifts every bit out (ONNX; C leaves it undefined): 0, or
    # for a right shift of a negative number, -1
    outside = ctx.call("logical_or", ctx.call("less", shift, ctx.scalar(0, shift)),
                       ctx.call("greater_equal", shift, ctx.scalar(bits, shift)))
    safe = ctx.call("where", outside, ctx.scalar(0, shift), shift)
    shifted = ctx.call("left_shift" if direction == "LEFT" else "right_shift", x, safe)
    fill = ctx.scalar(0, x)
    if direction == "RIGHT" and dtype.startswith("int"):
        fill = ctx.call("where", ctx.call("less", x, ctx.scalar(0, x)), ctx.scalar(-1, x), fill)
    return ctx.call("where", outside, fill, shifted)


def _shrink(ctx, node, inputs):
    # x - bias above lambd, x + bias below -lambd, 0 between
    x = inputs[0]
    bias, lambd = float(node.attr("bias", 0.0)), float(node.attr("lambd", 0.5))
    zero = ctx.scalar(0, x)
    low = ctx.call("where", ctx.call("less", x, ctx.scalar(-lambd, x)), ctx.call("add", x, ctx.scalar(bias, x)),
                   zero)
    return ctx.call("where", ctx.call("greater", x, ctx.scalar(lambd, x)),
                    ctx.call("subtract", x, ctx.scalar(bias, x)), low)


def _hardmax(ctx, node, inputs):
    # 1 at the first maximum along the axis, 0 elsewhere; before opset 13 the input is
    # seen as a 2-D matrix (the axes before ``axis`` by those from it)
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    if node.opset < 13:
        axis = _normalize_axis(node.attr("axis", 1), rank, node)
        flat = ctx.reshape(x, (_prod(xs[:axis]), _prod(xs[axis:])))
        return ctx.reshape(_one_at_max(ctx, flat, 1), xs)
    return _one_at_max(ctx, x, _normalize_axis(node.attr("axis", -1), rank, node))


def _one_at_max(ctx, x, axis):
    xs = ctx.shape(x)
    first = ctx.call("argmax", x, axis=(axis,), keepdims=True)
    positions = ctx.call("arange", start=0, stop=xs[axis], step=1, dtype="int32")
    positions = ctx.reshape(positions, tuple(xs[axis] if d == axis else 1 for d in range(len(xs))))
    return ctx.cast(ctx.call("equal", positions, first), ctx.dtype_of(x))


def _eye_like(ctx, node, inputs):
    x = inputs[0]
    xs = ctx.shape(x)
    if len(xs) != 2:
        node.fail(f"the input has rank {len(xs)}; EyeLike takes a 2-D tensor")
    dtype = node.attr("dtype")
    dtype = ctx.dtype_of(x) if dtype is None else _np_dtype(int(dtype), node.where)
    return ctx.const(np.eye(xs[0], xs[1], k=int(node.attr("k", 0))), dtype)


def _gather_nd(ctx, node, inputs):
    # ONNX keeps the index tuples along indices' last axis, tecc's gather_nd along the first;
    # a negative index counts from the end of its axis
    data, indices = inputs
    ds, ist = ctx.shape(data), ctx.shape(indices)
    batch_dims = int(node.attr("batch_dims", 0))
    if not ist or batch_dims < 0 or batch_dims >= min(len(ds), len(ist)):
        node.fail(f"batch_dims {batch_dims} must be below the ranks of data {len(ds)} and indices {len(ist)}")
    m = ist[-1]
    if batch_dims + m > len(ds):
        node.fail(f"index tuples of {m} after {batch_dims} batch dimension(s) exceed data's rank {len(ds)}")
    indices = ctx.cast(indices, "int64")
    dims = ctx.const(np.asarray(ds[batch_dims:batch_dims + m], dtype=np.int64), "int64")
    wrapped = ctx.call("add", indices, dims)
    indices = ctx.call("where", ctx.call("less", indices, ctx.scalar(0, indices)), wrapped, indices)
    r = len(ist)
    front = ctx.call("transpose", indices, axes=(r - 1,) + tuple(range(r - 1)))
    return ctx.call("gather_nd", data, front, batch_dims=batch_dims)


def _lp_normalization(ctx, node, inputs):
    x = inputs[0]
    axis = _normalize_axis(node.attr("axis", -1), ctx.rank(x), node)
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        node.fail(f"p = {p}; LpNormalization takes p = 1 or 2")
    if p == 1:
        norm = ctx.call("sum", ctx.call("abs", x), axis=(axis,), keepdims=True)
    else:
        norm = ctx.call("sqrt", ctx.call("sum", ctx.call("multiply", x, x), axis=(axis,), keepdims=True))
    # a zero vector stays zero (ONNX), not 0 / 0
    zero = ctx.scalar(0, x)
    is_zero = ctx.call("equal", norm, zero)
    return ctx.call("where", is_zero, zero, ctx.call("divide", x, ctx.call("where", is_zero, ctx.scalar(1, x), norm)))


def _mean_variance_normalization(ctx, node, inputs):
    # (x - mean) / sqrt(variance + 1e-9) over ``axes`` (ONNX's function body)
    x = inputs[0]
    rank = ctx.rank(x)
    axes = tuple(sorted({_normalize_axis(a, rank, node, "axes entry") for a in node.attr("axes", [0, 2, 3])}))
    mean = ctx.call("mean", x, axis=axes, keepdims=True)
    centered = ctx.call("subtract", x, mean)
    var = ctx.call("mean", ctx.call("multiply", centered, centered), axis=axes, keepdims=True)
    return ctx.call("divide", centered, ctx.call("sqrt", ctx.call("add", var, ctx.scalar(1e-9, x))))


def _group_norm(ctx, node, inputs):
    # opset 18: scale and bias per group; opset 21: per channel
    x, scale, bias = inputs
    xs = ctx.shape(x)
    if len(xs) < 3:
        node.fail(f"the input has rank {len(xs)}; it needs a batch, channels and spatial axes")
    groups = int(node.required("num_groups"))
    channels = xs[1]
    if groups < 1 or channels % groups:
        node.fail(f"num_groups {groups} must divide the {channels} channels")
    eps = float(node.attr("epsilon", 1e-5))
    grouped = ctx.reshape(x, (xs[0], groups, _prod(xs[1:]) // groups))
    mean = ctx.call("mean", grouped, axis=(2,), keepdims=True)
    centered = ctx.call("subtract", grouped, mean)
    var = ctx.call("mean", ctx.call("multiply", centered, centered), axis=(2,), keepdims=True)
    normed = ctx.call("divide", centered, ctx.call("sqrt", ctx.call("add", var, ctx.scalar(eps, x))))
    normed = ctx.reshape(normed, xs)
    per = ctx.shape(scale)[0] if ctx.rank(scale) == 1 else None
    if per == groups and groups != channels:
        # a value per group: repeated over the group's channels
        scale, bias = (ctx.reshape(ctx.call("broadcast_to", ctx.reshape(t, (groups, 1)),
                                            shape=(groups, channels // groups)), (channels,)) for t in (scale, bias))
    elif per != channels:
        node.fail(f"scale and bias must hold {channels} (opset 21) or {groups} (opset 18) values, got shape "
                  f"{ctx.shape(scale)}")
    shape = (channels,) + (1,) * (len(xs) - 2)
    return ctx.call("add", ctx.call("multiply", normed, ctx.reshape(scale, shape)), ctx.reshape(bias, shape))


def _lp_pool(ctx, node, inputs):
    # (sum over the window of |x|^p)^(1/p): a pooling of |x|^p that counts the padding, times
    # the window's size
    x = inputs[0]
    p = int(node.attr("p", 2))
    if p < 1:
        node.fail(f"p = {p} must be >= 1")
    nsp = _spatial_rank(ctx, node, x, "LpPool")
    xs = ctx.shape(x)
    kernel = list(node.required("kernel_shape"))
    strides = list(node.attr("strides", [1] * nsp))
    dilations = list(node.attr("dilations", [1] * nsp))
    begins, ends = _auto_pads(node, xs[2:], kernel, strides, dilations)
    powered = ctx.call("abs", x) if p == 1 else ctx.call("power", ctx.call("abs", x), ctx.scalar(p, x))
    if nsp == 1:
        powered = _as_2d(ctx, powered)
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        begins, ends = [0] + begins, [0] + ends
    common = dict(pool_size=tuple(kernel), strides=tuple(strides),
                  padding=(begins[0], begins[1], ends[0], ends[1]), ceil_mode=bool(node.attr("ceil_mode", 0)))
    if any(d != 1 for d in dilations):
        common["dilation"] = tuple(dilations)
    pooled = ctx.call("nn.avg_pool2d", powered, count_include_pad=True, **common)
    summed = ctx.call("multiply", pooled, ctx.scalar(float(_prod(kernel)), x))
    out = summed if p == 1 else ctx.call("power", summed, ctx.scalar(1.0 / p, x))
    return _from_2d(ctx, out) if nsp == 1 else out


def _nll_loss_of(ctx, node, log_prob, target, weight):
    """NegativeLogLikelihoodLoss of ``log_prob`` ``[N, C, d...]`` at the classes
    ``target`` ``[N, d...]``: ``-log_prob[n, target, d...] * weight[target]``, 0 where
    ``target`` is ``ignore_index``, then ``reduction`` ("none", "sum" or "mean": the
    sum over the sum of the weights counted)."""
    ps, ts = ctx.shape(log_prob), ctx.shape(target)
    if len(ps) < 2 or tuple(ts) != (ps[0],) + tuple(ps[2:]):
        node.fail(f"the input has shape {ps} and the target {ts}; the target must be the input's shape without "
                  "its class axis 1")
    reduction = node.attr("reduction", "mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction not in ("none", "sum", "mean"):
        node.fail(f"reduction {reduction!r} must be 'none', 'sum' or 'mean'")
    target = ctx.cast(target, "int64")
    ignore = node.attr("ignore_index")
    valid = None
    if ignore is not None:
        valid = ctx.call("not_equal", target, ctx.scalar(int(ignore), target))
        target = ctx.call("where", valid, target, ctx.scalar(0, target))
    picked = ctx.call("gather", log_prob, ctx.call("expand_dims", target, axis=1), axis=1)
    picked = ctx.call("squeeze", picked, axis=(1,))
    dtype = ctx.dtype_of(log_prob)
    w = ctx.call("take", weight, target, axis=0, mode="clip") if weight is not None else None
    if valid is not None:
        counted = ctx.cast(valid, dtype)
        w = counted if w is None else ctx.call("multiply", w, counted)
    loss = ctx.call("negative", picked if w is None else ctx.call("multiply", picked, w))
    if reduction == "none":
        return loss
    axes = tuple(range(len(ts)))
    total = ctx.call("sum", loss, axis=axes)
    if reduction == "sum":
        return total
    if w is None:
        return ctx.call("divide", total, ctx.scalar(float(_prod(ts)), total))
    return ctx.call("divide", total, ctx.call("sum", w, axis=axes))


def _nll_loss(ctx, node, inputs):
    return _nll_loss_of(ctx, node, inputs[0], inputs[1], ctx.optional_input(inputs, 2))


def _softmax_cross_entropy_loss(ctx, node, inputs):
    # NegativeLogLikelihoodLoss of log_softmax over the classes; output 1 is the log_softmax
    scores = inputs[0]
    log_prob = ctx.call("nn.log_softmax", scores, axis=1)
    loss = _nll_loss_of(ctx, node, log_prob, inputs[1], ctx.optional_input(inputs, 2))
    return [loss, log_prob]


def _window(kind):
    """Hann, Hamming and Blackman windows of ``size`` points (a value known when
    compiling): the output is a constant."""
    def convert(ctx, node, inputs):
        size = np.asarray(ctx.value(inputs[0], "size (input 0)")).reshape(-1)
        if size.size != 1 or int(size[0]) < 1:
            node.fail(f"size (input 0) must be one positive integer, got {size.tolist()}")
        n = int(size[0])
        periodic = bool(node.attr("periodic", 1))
        denom = n if periodic else n - 1
        k = np.arange(n, dtype=np.float64)
        phase = 2 * np.pi * k / denom if denom > 0 else np.zeros(n)
        if kind == "hann":
            w = 0.5 - 0.5 * np.cos(phase)
        elif kind == "hamming":
            w = 25 / 46 - (1 - 25 / 46) * np.cos(phase)
        else:
            w = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
        return ctx.const(w, _np_dtype(int(node.attr("output_datatype", 1)), node.where))

    return convert


def _quant_params(ctx, node, x, scale, zero_point, what):
    """``scale`` and ``zero_point`` shaped to broadcast against ``x`` along ``axis``
    (a scalar: per tensor; 1-D: per axis)."""
    if int(node.attr("block_size", 0)):
        node.fail("blocked quantization (block_size > 0) is not supported; quantize per tensor or per axis")
    rank = ctx.rank(x)
    ss = ctx.shape(scale)
    if len(ss) == 0 or _prod(ss) == 1 and len(ss) <= 1:
        shape = ()
    elif len(ss) == 1:
        axis = _normalize_axis(node.attr("axis", 1), rank, node)
        if ss[0] != ctx.shape(x)[axis]:
            node.fail(f"{what} has {ss[0]} values for axis {axis} of size {ctx.shape(x)[axis]}")
        shape = tuple(ss[0] if d == axis else 1 for d in range(rank))
    else:
        node.fail(f"{what} has shape {ss}; tecc quantizes per tensor (a scalar) or per axis (1-D)")
    scale = ctx.reshape(scale, shape)
    if zero_point is not None:
        zero_point = ctx.reshape(zero_point, shape)
    return scale, zero_point


def _dequantize_linear(ctx, node, inputs):
    x, scale = inputs[0], inputs[1]
    zero_point = ctx.optional_input(inputs, 2)
    scale, zero_point = _quant_params(ctx, node, x, scale, zero_point, "x_scale (input 1)")
    # (x - zero_point) * scale, in float32, then in the scale's type
    xf = ctx.cast(x, "float32")
    if zero_point is not None:
        xf = ctx.call("subtract", xf, ctx.cast(zero_point, "float32"))
    return ctx.cast(ctx.call("multiply", xf, ctx.cast(scale, "float32")), ctx.dtype_of(scale))


_QUANT_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
                 "int32": (-2 ** 31, 2 ** 31 - 1)}


def _quantize_linear(ctx, node, inputs):
    # saturate(round_half_to_even(x / scale) + zero_point) in the zero point's type (uint8
    # without one, or output_dtype)
    x, scale = inputs[0], inputs[1]
    zero_point = ctx.optional_input(inputs, 2)
    scale, zero_point = _quant_params(ctx, node, x, scale, zero_point, "y_scale (input 1)")
    out_dtype = ctx.dtype_of(zero_point) if zero_point is not None else "uint8"
    if node.attr("output_dtype"):
        out_dtype = _np_dtype(int(node.attr("output_dtype")), node.where)
    if out_dtype not in _QUANT_RANGES:
        node.fail(f"quantizing to {out_dtype} is not supported; tecc quantizes to {sorted(_QUANT_RANGES)}")
    lo, hi = _QUANT_RANGES[out_dtype]
    xf = ctx.cast(x, "float32")
    q = ctx.call("round", ctx.call("divide", xf, ctx.cast(scale, "float32")))
    if zero_point is not None:
        q = ctx.call("add", q, ctx.cast(zero_point, "float32"))
    return ctx.cast(ctx.call("clip", q, a_min=float(lo), a_max=float(hi)), out_dtype)


def _center_crop_pad(ctx, node, inputs):
    x, shape_in = inputs
    xs = ctx.shape(x)
    rank = len(xs)
    target = [int(v) for v in np.asarray(ctx.value(shape_in, "shape (input 1)")).reshape(-1)]
    axes = node.attr("axes")
    axes = list(range(rank)) if axes is None else [_normalize_axis(a, rank, node, "axes entry") for a in axes]
    if len(target) != len(axes):
        node.fail(f"shape (input 1) has {len(target)} sizes for {len(axes)} axes")
    begin, end = [0] * rank, list(xs)
    width = [[0, 0] for _ in range(rank)]
    for a, t in zip(axes, target):
        if t < 1:
            node.fail(f"the target size {t} of axis {a} must be positive")
        if t < xs[a]:       # crop, centered (the extra element on the end side)
            begin[a] = (xs[a] - t) // 2
            end[a] = begin[a] + t
        elif t > xs[a]:     # pad with zeros, centered
            width[a] = [(t - xs[a]) // 2, t - xs[a] - (t - xs[a]) // 2]
    out = x
    if begin != [0] * rank or end != list(xs):
        out = ctx.call("strided_slice", out, begin=tuple(begin), end=tuple(end), strides=(1,) * rank)
    if any(w != [0, 0] for w in width):
        out = ctx.call("nn.pad", out, pad_width=tuple(tuple(w) for w in width), pad_value=0.0, pad_mode="constant")
    return out


def _reverse_sequence(ctx, node, inputs):
    # along time_axis, each batch entry's first sequence_lens[b] steps reversed:
    # out[t] = x[lens - 1 - t] for t < lens, else x[t] (the lengths may come at run time)
    x, lens = inputs
    xs = ctx.shape(x)
    rank = len(xs)
    if rank < 2:
        node.fail(f"the input has rank {rank}; it needs a batch and a time axis")
    batch_axis = _normalize_axis(node.attr("batch_axis", 1), rank, node, "batch_axis")
    time_axis = _normalize_axis(node.attr("time_axis", 0), rank, node, "time_axis")
    if batch_axis == time_axis:
        node.fail(f"batch_axis and time_axis are both {batch_axis}")
    lens = ctx.cast(lens, "int64")
    steps = ctx.call("arange", start=0, stop=xs[time_axis], step=1, dtype="int64")
    steps = ctx.reshape(steps, tuple(xs[time_axis] if d == time_axis else 1 for d in range(rank)))
    lens = ctx.reshape(lens, tuple(xs[batch_axis] if d == batch_axis else 1 for d in range(rank)))
    flipped = ctx.call("subtract", ctx.call("subtract", lens, ctx.scalar(1, lens)), steps)
    index = ctx.call("where", ctx.call("less", steps, lens), flipped, steps)
    index = ctx.call("broadcast_to", index, shape=tuple(xs))
    return ctx.call("gather", x, index, axis=time_axis)


def _max_unpool(ctx, node, inputs):
    # zeros of the unpooled shape with x written at the flat positions of indices
    # (MaxPool's Indices output: flattened over the whole tensor)
    x, indices = inputs[0], inputs[1]
    xs = ctx.shape(x)
    nsp = len(xs) - 2
    if nsp < 1:
        node.fail(f"the input has rank {len(xs)}; it needs a batch, a channel and spatial axes")
    kernel = list(node.required("kernel_shape"))
    strides = list(node.attr("strides", [1] * nsp))
    pads = list(node.attr("pads", [0] * (2 * nsp)))
    # the indices count in the default unpooled shape; a larger output_shape pads its end
    shape = tuple(xs[:2]) + tuple((xs[2 + i] - 1) * strides[i] - pads[i] - pads[i + nsp] + kernel[i]
                                  for i in range(nsp))
    zeros = ctx.const(np.zeros((_prod(shape),)), ctx.dtype_of(x))
    flat = ctx.call("scatter_elements", zeros, ctx.reshape(ctx.cast(indices, "int64"), (_prod(xs),)),
                    ctx.reshape(x, (_prod(xs),)), axis=0, reduction="update")
    out = ctx.reshape(flat, shape)
    given = ctx.optional_input(inputs, 2)
    if given is not None:
        want = tuple(int(v) for v in np.asarray(ctx.value(given, "output_shape (input 2)")).reshape(-1))
        if len(want) != len(xs) or want[:2] != shape[:2] or any(w < s for w, s in zip(want, shape)):
            node.fail(f"output_shape {list(want)} must keep the batch and channels and be at least the unpooled "
                      f"shape {list(shape)}")
        if want != shape:
            out = ctx.call("nn.pad", out, pad_width=tuple((0, w - s) for w, s in zip(want, shape)), pad_value=0.0,
                           pad_mode="constant")
    return out


def _affine_grid(ctx, node, inputs):
    # theta [N, k, k+1] applied to the normalized coordinates of every output point
    # ([x, y(, z), 1], x varying fastest): the grid [N, (D,) H, W, k]
    theta, size = inputs
    sizes = [int(v) for v in np.asarray(ctx.value(size, "size (input 1)")).reshape(-1)]
    if len(sizes) not in (4, 5):
        node.fail(f"size {sizes} must be [N, C, H, W] or [N, C, D, H, W]")
    spatial = sizes[2:]
    k = len(spatial)
    ts = ctx.shape(theta)
    if tuple(ts) != (sizes[0], k, k + 1):
        node.fail(f"theta has shape {ts}; for size {sizes} it must be {(sizes[0], k, k + 1)}")
    align = bool(node.attr("align_corners", 0))

    def axis(n):
        if align:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        return (2.0 * np.arange(n) + 1.0) / n - 1.0

    # coordinates in (x, y, z) order, the last spatial axis (x) varying fastest
    mesh = np.meshgrid(*[axis(n) for n in spatial], indexing="ij")
    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(_prod(spatial))], axis=0)  # [k+1, P]
    dtype = ctx.dtype_of(theta)
    base = ctx.call("broadcast_to", ctx.const(base[None], dtype), shape=(sizes[0], k + 1, _prod(spatial)))
    grid = ctx.call("nn.batch_matmul", theta, base, transpose_a=False, transpose_b=False)  # [N, k, P]
    grid = ctx.call("transpose", grid, axes=(0, 2, 1))
    return ctx.reshape(grid, (sizes[0],) + tuple(spatial) + (k,))


def _grid_sample(ctx, node, inputs):
    # x [N, C, (D,) H, W] sampled at grid [N, (Do,) Ho, Wo, k] (x, y(, z) in [-1, 1]): one
    # image.grid_sample, whose grid holds the k coordinates on axis 1
    x, grid = inputs
    xs, gs = ctx.shape(x), ctx.shape(grid)
    k = len(xs) - 2
    if k not in (2, 3) or len(gs) != k + 2 or gs[-1] != k or gs[0] != xs[0]:
        node.fail(f"input {xs} and grid {gs}: tecc samples inputs [N, C, H, W] at grids [N, Ho, Wo, 2] and inputs "
                  "[N, C, D, H, W] at grids [N, Do, Ho, Wo, 3]")
    mode = node.attr("mode", "linear" if node.opset >= 20 else "bilinear")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    method = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)  # opset 20 renamed the modes
    if method not in ("bilinear", "nearest", "bicubic"):
        node.fail(f"mode {mode!r} must be 'linear' ('bilinear' before opset 20), 'nearest' or 'cubic' ('bicubic')")
    if method == "bicubic" and k != 2:
        node.fail("cubic sampling of a 3-D input is not supported; tecc samples 3-D inputs 'linear' or 'nearest'")
    padding = node.attr("padding_mode", "zeros")
    padding = padding.decode() if isinstance(padding, bytes) else str(padding)
    if padding not in ("zeros", "border", "reflection"):
        node.fail(f"padding_mode {padding!r} must be 'zeros', 'border' or 'reflection'")
    points = ctx.call("transpose", grid, axes=(0, k + 1) + tuple(range(1, k + 1)))
    return ctx.call("image.grid_sample", x, points, method=method, layout="NCHW" if k == 2 else "NCDHW",
                    padding_mode=padding, align_corners=bool(node.attr("align_corners", 0)))


def _dft(ctx, node, inputs):
    # the discrete Fourier transform along ``axis`` as products with constant cosine and
    # sine matrices (its length is static); the last axis holds [real] or [real, imag]
    x = inputs[0]
    xs = ctx.shape(x)
    rank = len(xs)
    if rank < 2 or xs[-1] not in (1, 2):
        node.fail(f"the signal has shape {xs}; its last axis must hold 1 (real) or 2 (real, imaginary) values")
    if node.opset >= 20:
        given = ctx.optional_input(inputs, 2)
        axis = -2 if given is None else int(np.asarray(ctx.value(given, "axis (input 2)")).reshape(-1)[0])
    else:
        axis = int(node.attr("axis", 1))
    axis = _normalize_axis(axis, rank, node)
    if axis == rank - 1:
        node.fail("axis is the last axis, which holds the real and imaginary parts")
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    n = xs[axis]
    length = ctx.optional_input(inputs, 1)
    if length is not None:
        want = int(np.asarray(ctx.value(length, "dft_length (input 1)")).reshape(-1)[0])
        if not (inverse and onesided) and want != n:
            node.fail(f"dft_length {want} differs from the signal's {n} samples; pad or slice the signal first")
    complex_in = xs[-1] == 2
    perm = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    moved = ctx.call("transpose", x, axes=tuple(perm)) if perm != list(range(rank)) else x
    outer = tuple(xs[d] for d in perm[:-2])
    flat = ctx.reshape(ctx.cast(moved, "float32"), (_prod(outer), n, xs[-1]))
    real = ctx.reshape(_axis_slice(ctx, flat, 2, 0, 1), (_prod(outer), n))
    imag = ctx.reshape(_axis_slice(ctx, flat, 2, 1, 2), (_prod(outer), n)) if complex_in else None
    if inverse and onesided:
        # irfft: the Hermitian spectrum's missing bins mirror the given ones; a real output
        size = 2 * (n - 1) if length is None else want
        k = np.arange(n)[:, None]
        t = np.arange(size)[None, :]
        weight = np.where((k == 0) | (2 * k == size), 1.0, 2.0) / size
        theta = 2 * np.pi * k * t / size
        cos_m, sin_m = (weight * np.cos(theta)).T, (weight * np.sin(theta)).T  # [size, n]
        out = ctx.call("nn.dense", real, ctx.const(cos_m, "float32"), units=size)
        if imag is not None:
            out = ctx.call("subtract", out, ctx.call("nn.dense", imag, ctx.const(sin_m, "float32"), units=size))
        parts, bins = [out], size
    else:
        bins = n // 2 + 1 if onesided else n
        k = np.arange(bins)[:, None]
        theta = 2 * np.pi * k * np.arange(n)[None, :] / n      # [bins, n]
        sign, scale = (1.0, 1.0 / n) if inverse else (-1.0, 1.0)
        cos_m = ctx.const(scale * np.cos(theta), "float32")
        sin_m = ctx.const(scale * sign * np.sin(theta), "float32")
        # (a + ib)(cos + i sign sin) = (a cos - b sign sin) + i (a sign sin + b cos)
        out_r = ctx.call("nn.dense", real, cos_m, units=bins)
        out_i = ctx.call("nn.dense", real, sin_m, units=bins)
        if imag is not None:
            out_r = ctx.call("subtract", out_r, ctx.call("nn.dense", imag, sin_m, units=bins))
            out_i = ctx.call("add", out_i, ctx.call("nn.dense", imag, cos_m, units=bins))
        parts = [out_r, out_i]
    stacked = ctx.call("concatenate", ctx.tuple([ctx.reshape(p, (_prod(outer), bins, 1)) for p in parts]), axis=2) \
        if len(parts) > 1 else ctx.reshape(parts[0], (_prod(outer), bins, 1))
    out = ctx.reshape(stacked, outer + (bins, len(parts)))
    inv = [0] * rank
    for i, d in enumerate(perm):
        inv[d] = i
    out = ctx.call("transpose", out, axes=tuple(inv)) if perm != list(range(rank)) else out
    return ctx.cast(out, ctx.dtype_of(x))


# --- recurrent layers (RNN, GRU, LSTM), unrolled over their static sequence ----------------
#: activations a recurrent layer may name, as graph ops
_RNN_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "nn.relu"}
#: gates per kind and the default activations (f, g[, h]) of one direction
_RNN_KINDS = {"RNN": (1, ["Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"]), "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"])}


def _recurrent(ctx, node, inputs):
    """RNN, GRU and LSTM (ONNX's gate orders: GRU z, r, h; LSTM i, o, f, c), unrolled
    over the sequence, whose length is static: every step is a dense layer of the
    hidden state and element-wise gates; the input's projection is one dense layer
    over all steps."""
    kind = node.op_type
    gates, default_acts = _RNN_KINDS[kind]
    x, w, r = inputs[0], inputs[1], inputs[2]
    b = ctx.optional_input(inputs, 3)
    seq_lens = ctx.optional_input(inputs, 4)
    h0 = ctx.optional_input(inputs, 5)
    c0 = ctx.optional_input(inputs, 6) if kind == "LSTM" else None
    peep = ctx.optional_input(inputs, 7) if kind == "LSTM" else None
    hidden = int(node.required("hidden_size"))
    direction = node.attr("direction", "forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    if direction not in ("forward", "reverse", "bidirectional"):
        node.fail(f"direction {direction!r} must be 'forward', 'reverse' or 'bidirectional'")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(node.attr("layout", 0))
    if layout == 1:
        x = ctx.call("transpose", x, axes=(1, 0, 2))
    steps, batch, width = ctx.shape(x)
    if seq_lens is not None:
        lens = np.asarray(ctx.value(seq_lens, "sequence_lens (input 4)")).reshape(-1)
        if np.any(lens != steps):
            node.fail(f"sequence_lens {lens.tolist()} differ from the sequence's {steps} steps; tecc runs every "
                      "sequence over all its steps (pad and mask them in the model)")
    names = node.attr("activations")
    names = [a.decode() if isinstance(a, bytes) else str(a) for a in names] if names else default_acts * dirs
    if len(names) != len(default_acts) * dirs:
        node.fail(f"activations {names} should name {len(default_acts) * dirs} functions")
    unknown = [a for a in names if a not in _RNN_ACTIVATIONS]
    if unknown or node.attr("activation_alpha") or node.attr("activation_beta"):
        node.fail(f"activations {unknown or names} with parameters are not supported; tecc takes "
                  f"{sorted(_RNN_ACTIVATIONS)}")
    clip = node.attr("clip")
    linear_before_reset = bool(node.attr("linear_before_reset", 0))
    input_forget = bool(node.attr("input_forget", 0))
    ys, hs, cs = [], [], []
    for d in range(dirs):
        acts = [_RNN_ACTIVATIONS[a] for a in names[d * len(default_acts):(d + 1) * len(default_acts)]]
        wd = ctx.reshape(_axis_slice(ctx, w, 0, d, d + 1), (gates * hidden, width))
        rd = ctx.reshape(_axis_slice(ctx, r, 0, d, d + 1), (gates * hidden, hidden))
        # the input's projection for every step at once, with both biases but the GRU's
        # recurrent bias of the h gate where it is applied after the reset
        xw = ctx.call("nn.dense", ctx.reshape(x, (steps * batch, width)), wd, units=gates * hidden)
        rb = None
        if b is not None:
            bd = ctx.reshape(_axis_slice(ctx, b, 0, d, d + 1), (2 * gates * hidden,))
            wb, rb = _axis_slice(ctx, bd, 0, 0, gates * hidden), _axis_slice(ctx, bd, 0, gates * hidden,
                                                                            2 * gates * hidden)
            if kind == "GRU":
                xw = ctx.call("add", xw, wb)
            else:
                xw = ctx.call("add", xw, ctx.call("add", wb, rb))
        xw = ctx.reshape(xw, (steps, batch, gates * hidden))
        zero = ctx.const(np.zeros((batch, hidden)), ctx.dtype_of(x))
        h = zero if h0 is None else ctx.reshape(_axis_slice(ctx, h0, 0, d, d + 1), (batch, hidden))
        c = None
        if kind == "LSTM":
            c = zero if c0 is None else ctx.reshape(_axis_slice(ctx, c0, 0, d, d + 1), (batch, hidden))
        p = None
        if peep is not None:
            pd = ctx.reshape(_axis_slice(ctx, peep, 0, d, d + 1), (3 * hidden,))
            p = [_axis_slice(ctx, pd, 0, k * hidden, (k + 1) * hidden) for k in range(3)]  # i, o, f

        def act(i, v, clipped=True):
            # clip bounds the gates' inputs (as onnxruntime does; not the cell state an
            # LSTM's h activation reads)
            if clip is not None and clipped:
                v = ctx.call("clip", v, a_min=-float(clip), a_max=float(clip))
            return ctx.call(acts[i], v)

        def gate(v, k):
            return _axis_slice(ctx, v, 1, k * hidden, (k + 1) * hidden)

        order = range(steps - 1, -1, -1) if (direction == "reverse" or d == 1) else range(steps)
        outs = [None] * steps
        # one split, not a slice per step: a step then reads a tensor of its own at no
        # offset, and every step is the same fused function, compiled once
        xsteps = _split_call(ctx, xw, steps, 0, [1] * steps) if steps > 1 else None
        for t in order:
            xt = ctx.reshape(xw if xsteps is None else ctx.item(xsteps, t), (batch, gates * hidden))
            if kind == "RNN":
                h = act(0, ctx.call("add", xt, ctx.call("nn.dense", h, rd, units=hidden)))
            elif kind == "GRU":
                rz = ctx.call("add", _axis_slice(ctx, xt, 1, 0, 2 * hidden),
                              ctx.call("nn.dense", h, _axis_slice(ctx, rd, 0, 0, 2 * hidden), units=2 * hidden))
                if rb is not None:
                    rz = ctx.call("add", rz, _axis_slice(ctx, rb, 0, 0, 2 * hidden))
                z, rr = act(0, gate(rz, 0)), act(0, gate(rz, 1))
                rh = _axis_slice(ctx, rd, 0, 2 * hidden, 3 * hidden)
                rbh = _axis_slice(ctx, rb, 0, 2 * hidden, 3 * hidden) if rb is not None else None
                if linear_before_reset:
                    hr = ctx.call("nn.dense", h, rh, units=hidden)
                    if rbh is not None:
                        hr = ctx.call("add", hr, rbh)
                    hr = ctx.call("multiply", rr, hr)
                else:
                    hr = ctx.call("nn.dense", ctx.call("multiply", rr, h), rh, units=hidden)
                    if rbh is not None:
                        hr = ctx.call("add", hr, rbh)
                cand = act(1, ctx.call("add", gate(xt, 2), hr))
                one = ctx.scalar(1, z)
                h = ctx.call("add", ctx.call("multiply", ctx.call("subtract", one, z), cand),
                             ctx.call("multiply", z, h))
            else:
                pre = ctx.call("add", xt, ctx.call("nn.dense", h, rd, units=gates * hidden))
                pi, po, pf, pc = (gate(pre, k) for k in range(4))
                if p is not None:
                    pi = ctx.call("add", pi, ctx.call("multiply", p[0], c))
                    pf = ctx.call("add", pf, ctx.call("multiply", p[2], c))
                i = act(0, pi)
                f = ctx.call("subtract", ctx.scalar(1, i), i) if input_forget else act(0, pf)
                c = ctx.call("add", ctx.call("multiply", f, c), ctx.call("multiply", i, act(1, pc)))
                if p is not None:
                    po = ctx.call("add", po, ctx.call("multiply", p[1], c))
                h = ctx.call("multiply", act(0, po), act(2, c, clipped=False))
            outs[t] = ctx.reshape(h, (1, 1, batch, hidden))
        ys.append(outs[0] if steps == 1 else ctx.call("concatenate", ctx.tuple(outs), axis=0))
        hs.append(ctx.reshape(h, (1, batch, hidden)))
        if c is not None:
            cs.append(ctx.reshape(c, (1, batch, hidden)))

    def join(parts, axis):
        return parts[0] if len(parts) == 1 else ctx.call("concatenate", ctx.tuple(parts), axis=axis)

    y, yh = join(ys, 1), join(hs, 0)
    yc = join(cs, 0) if cs else None
    if layout == 1:
        y = ctx.call("transpose", y, axes=(2, 0, 1, 3))
        yh = ctx.call("transpose", yh, axes=(1, 0, 2))
        yc = ctx.call("transpose", yc, axes=(1, 0, 2)) if yc is not None else None
    return [y, yh] + ([yc] if kind == "LSTM" else [])


#: ONNX op type -> converter
_CONVERTERS = {
    # element-wise
    "Add": _binary("add"), "Sub": _binary("subtract"), "Mul": _binary("multiply"), "Div": _div, "Pow": _pow,
    "Mod": _mod, "Neg": _unary("negative"), "Abs": _unary("abs"), "Exp": _unary("exp"), "Log": _unary("log"),
    "Sqrt": _unary("sqrt"), "Reciprocal": _unary("reciprocal"), "Floor": _unary("floor"), "Ceil": _unary("ceil"),
    "Round": _unary("round"), "Sign": _unary("sign"), "Sin": _unary("sin"), "Cos": _unary("cos"),
    "Tan": _unary("tan"), "Asin": _unary("asin"), "Acos": _unary("acos"), "Atan": _unary("atan"),
    "Sinh": _unary("sinh"), "Cosh": _unary("cosh"), "Asinh": _unary("asinh"), "Acosh": _unary("acosh"),
    "Atanh": _unary("atanh"),
    "Erf": _unary("erf"), "Sigmoid": _unary("sigmoid"), "Tanh": _unary("tanh"), "Relu": _unary("nn.relu"),
    "Equal": _binary("equal"), "Less": _binary("less"), "LessOrEqual": _binary("less_equal"),
    "Greater": _binary("greater"), "GreaterOrEqual": _binary("greater_equal"), "And": _binary("logical_and"),
    "Or": _binary("logical_or"), "Xor": _binary("logical_xor"), "Not": _unary("logical_not"),
    "Sum": _variadic("add"), "Mean": _variadic("add", mean=True), "Max": _variadic("maximum"),
    "Min": _variadic("minimum"),
    # activations
    "LeakyRelu": _leaky_relu, "PRelu": _prelu, "Gelu": _gelu, "HardSigmoid": _hard_sigmoid, "HardSwish": _hard_swish,
    "Elu": _elu, "Selu": _selu, "Celu": _celu, "ThresholdedRelu": _thresholded_relu, "Mish": _mish,
    "Softplus": _softplus, "Softsign": _softsign, "Clip": _clip,
    "Softmax": _softmax("nn.softmax"), "LogSoftmax": _softmax("nn.log_softmax"),
    # neural network
    "Conv": _conv, "ConvTranspose": _conv_transpose, "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm, "LayerNormalization": _layer_norm, "LRN": _lrn,
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"), "GlobalAveragePool": _global_pool("avg"),
    "GlobalMaxPool": _global_pool("max"), "MatMul": _matmul, "Gemm": _gemm, "Einsum": _einsum, "Dropout": _dropout,
    # shapes and layout
    "Flatten": _flatten, "Reshape": _reshape, "Transpose": _transpose, "Concat": _concat, "Split": _split,
    "Slice": _slice, "Gather": _gather, "GatherElements": _gather_elements, "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze, "Expand": _expand, "Tile": _tile, "Where": _where, "Pad": _pad,
    "Identity": _identity, "Cast": _cast, "CastLike": _cast_like, "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth, "Resize": _resize, "Upsample": _resize, "Trilu": _trilu, "OneHot": _one_hot,
    "ScatterElements": _scatter_elements, "Scatter": _scatter_elements, "ScatterND": _scatter_nd,
    "CumSum": _cumsum, "TopK": _topk,
    "Constant": _constant, "ConstantOfShape": _constant_of_shape, "Shape": _shape, "Size": _size, "Range": _range,
    # reductions
    "ReduceMean": _reduce("mean"), "ReduceSum": _reduce("sum"), "ReduceMax": _reduce("max"),
    "ReduceMin": _reduce("min"), "ReduceProd": _reduce("prod"), "ReduceSumSquare": _reduce("sum", pre="square"),
    "ReduceL1": _reduce("sum", pre="abs"), "ReduceL2": _reduce("sum", pre="square", post="sqrt"),
    "ReduceLogSum": _reduce("sum", post="log"), "ReduceLogSumExp": _reduce_log_sum_exp,
    "ArgMax": _arg("argmax"), "ArgMin": _arg("argmin"),
    # element tests, bitwise, small compositions
    "IsNaN": _unary("isnan"), "IsInf": _is_inf, "BitwiseAnd": _binary("bitwise_and"),
    "BitwiseOr": _binary("bitwise_or"), "BitwiseXor": _binary("bitwise_xor"), "BitwiseNot": _unary("bitwise_not"),
    "BitShift": _bit_shift, "Shrink": _shrink, "Hardmax": _hardmax, "EyeLike": _eye_like, "GatherND": _gather_nd,
    "LpNormalization": _lp_normalization, "MeanVarianceNormalization": _mean_variance_normalization,
    "GroupNormalization": _group_norm, "LpPool": _lp_pool,
    # losses
    "NegativeLogLikelihoodLoss": _nll_loss, "SoftmaxCrossEntropyLoss": _softmax_cross_entropy_loss,
    # windows, quantization, cropping
    "HannWindow": _window("hann"), "HammingWindow": _window("hamming"), "BlackmanWindow": _window("blackman"),
    "DequantizeLinear": _dequantize_linear, "QuantizeLinear": _quantize_linear, "CenterCropPad": _center_crop_pad,
    # recurrent layers
    "RNN": _recurrent, "GRU": _recurrent, "LSTM": _recurrent,
    "ReverseSequence": _reverse_sequence, "MaxUnpool": _max_unpool, "AffineGrid": _affine_grid,
    "GridSample": _grid_sample, "DFT": _dft,
}
