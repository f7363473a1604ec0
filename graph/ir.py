"""The model-level IR: a graph of operator calls over tensors (TVM's Relay, kept to
what models need).

Nodes are immutable and compared by identity: a value used twice is the same node
object (a DAG, not a tree), so memo dictionaries keyed by node walk each value once.

=====================  ==================================================================
node                   meaning
=====================  ==================================================================
:class:`Var`           a function parameter (a model input or a weight)
:class:`Constant`      a tensor known at compile time (a numpy array, read-only)
:class:`Call`          an operator (:class:`~tecc.graph.op.Op`) or a :class:`Function`
                       applied to arguments, with its attributes (:class:`Attrs`)
:class:`Tuple`         several values as one (an operator with several outputs returns one)
:class:`TupleGetItem`  field ``index`` of a tuple value
:class:`Function`      parameters and a body; the model itself, or a fused group of
                       operators (``attrs["Primitive"] == 1``) that becomes one kernel
=====================  ==================================================================

Types: :class:`TensorType` (shape and dtype; a dimension is an ``int``, or a ``str``
naming a symbolic dimension) and :class:`TupleType`.  Type inference
(:func:`tecc.graph.transform.infer_type`) fills each node's ``checked_type``.

Walking the graph: :class:`ExprVisitor` and :class:`ExprMutator` dispatch on the node
class (``visit_Call`` ...) through one cached table per visitor class and visit each
node once; the mutator returns the very same node when nothing below it changed,
and keeps a typed graph typed (a node it rebuilds gets the type its new operands
give, :func:`typed_like`).
:func:`post_order_visit` calls a function on every node, operands first.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import TeccError
from ..runtime import dtypes as _rt_dtypes


class GraphError(TeccError):
    """A model graph is malformed or uses something tecc cannot compile (an unknown
    operator, operands of the wrong type, a shape that does not fit)."""


# ---------------------------------------------------------------------------------------
# types
# ---------------------------------------------------------------------------------------
class Type:
    """Base class of the types of graph values."""

    __slots__ = ()


def dtype_name(dtype) -> str:
    """The canonical name of a tensor's ``dtype``: numpy's name (``"float"`` is
    numpy's float64 here, as ``np.dtype`` reads it), or for a type numpy lacks
    (bfloat16, float8_e4m3fn, int4...: an ml_dtypes dtype or its name) that name."""
    if isinstance(dtype, np.dtype):
        name = dtype.name
    elif isinstance(dtype, type):  # a scalar type (np.float32, ml_dtypes.int4)
        name = getattr(dtype, "__name__", "")
    else:
        name = str(dtype)
    if _rt_dtypes.is_narrow(name):
        return _rt_dtypes.canonical(name)
    return str(np.dtype(dtype))


def numpy_dtype(dtype) -> np.dtype:
    """The numpy dtype of a tensor's constants: numpy's, or ml_dtypes' for the types
    numpy lacks (the graph holds bfloat16, float8_e4m3fn, int4... constants as
    ml_dtypes' arrays; ml_dtypes is onnx's dependency, and tecc's)."""
    name = dtype_name(dtype)
    if _rt_dtypes.is_narrow(name):
        import ml_dtypes  # noqa: PLC0415 -- loaded only where a graph holds such a constant

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


class TensorType(Type):
    """A tensor of ``shape`` (a tuple of ``int``, or ``str`` for a symbolic dimension)
    and ``dtype`` (``"float32"``...)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype="float32"):
        dims = []
        for d in shape:
            if isinstance(d, (bool, np.bool_)):
                raise GraphError(f"TensorType: a dimension must be an int or a symbolic name, got {d!r}")
            if isinstance(d, (int, np.integer)):
                if d < 0:
                    raise GraphError(f"TensorType: dimension {int(d)} of shape {tuple(shape)} is negative")
                dims.append(int(d))
            elif isinstance(d, str) and d:
                dims.append(d)
            else:
                raise GraphError(f"TensorType: a dimension must be an int or a symbolic name, got {d!r}")
        object.__setattr__(self, "shape", tuple(dims))
        object.__setattr__(self, "dtype", dtype_name(dtype))

    def __setattr__(self, name, value):
        raise AttributeError("TensorType is immutable")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """Every dimension is a known integer."""
        return all(isinstance(d, int) for d in self.shape)

    @property
    def size(self) -> int:
        """Number of elements (static shapes only)."""
        assert self.is_static, f"{self} has symbolic dimensions"
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        narrow = _rt_dtypes.is_narrow(self.dtype)
        return self.size * (_rt_dtypes.itemsize(self.dtype) if narrow else np.dtype(self.dtype).itemsize)

    def __eq__(self, other):
        return isinstance(other, TensorType) and self.shape == other.shape and self.dtype == other.dtype

    def __hash__(self):
        return hash(("TensorType", self.shape, self.dtype))

    def __str__(self):
        dims = ", ".join(str(d) for d in self.shape)
        if len(self.shape) == 1:
            dims += ","
        return f"Tensor[({dims}), {self.dtype}]"

    __repr__ = __str__


class TupleType(Type):
    """The type of a :class:`Tuple`: one type per field."""

    __slots__ = ("fields",)

    def __init__(self, fields):
        fields = tuple(fields)
        for f in fields:
            if not isinstance(f, Type):
                raise GraphError(f"TupleType: every field must be a Type, got {f!r}")
        object.__setattr__(self, "fields", fields)

    def __setattr__(self, name, value):
        raise AttributeError("TupleType is immutable")

    def __eq__(self, other):
        return isinstance(other, TupleType) and self.fields == other.fields

    def __hash__(self):
        return hash(("TupleType", self.fields))

    def __str__(self):
        return "(" + ", ".join(str(f) for f in self.fields) + ("," if len(self.fields) == 1 else "") + ")"

    __repr__ = __str__


# ---------------------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------------------
def _freeze(value, where):
    """An attribute value in its canonical, hashable form: lists become tuples,
    numpy scalars Python numbers."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v, where) for v in value)
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise GraphError(f"{where}: an attribute must be a scalar, string or list, got an array of shape "
                             f"{value.shape}")
        return tuple(_freeze(v, where) for v in value.tolist()) if value.ndim == 1 else _freeze(value.item(), where)
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise GraphError(f"{where}: an attribute must be a number, string, None or a list of them, got "
                     f"{type(value).__name__} {value!r}")


class Attrs(Mapping):
    """The attributes of a call (``strides``, ``axis`` ...): an immutable mapping
    that also reads as attributes (``call.attrs.strides``), hashable for common
    subexpression elimination."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items=None, where="attrs"):
        frozen = {str(k): _freeze(v, f"{where}[{k!r}]") for k, v in dict(items or {}).items()}
        object.__setattr__(self, "_items", frozen)
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, name, value):
        raise AttributeError("Attrs are immutable; build a new call with different attributes")

    def __getitem__(self, key):
        return self._items[key]

    def __getattr__(self, name):
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(f"these attrs have no {name!r}; they have {sorted(self._items)}") from None

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __hash__(self):
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(sorted(self._items.items()))))
        return self._hash

    def __eq__(self, other):
        return isinstance(other, Attrs) and self._items == other._items

    def with_(self, **changes) -> "Attrs":
        """A copy with some attributes replaced or added."""
        items = dict(self._items)
        items.update(changes)
        return Attrs(items)

    def __repr__(self):
        return "Attrs(" + ", ".join(f"{k}={v!r}" for k, v in self._items.items()) + ")"


EMPTY_ATTRS = Attrs()


# ---------------------------------------------------------------------------------------
# expressions
# ---------------------------------------------------------------------------------------
class Expr:
    """Base class of graph values.  ``checked_type`` is the type inference gave
    (:func:`tecc.graph.transform.infer_type`)."""

    __slots__ = ("_checked_type", "span")
    #: the names of the fields holding operands, in order (for the generic walkers)
    _fields: tuple = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new node instead")

    def _init(self, **fields):
        for k, v in fields.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_checked_type", None)
        if "span" not in fields:
            object.__setattr__(self, "span", None)

    @property
    def checked_type(self) -> Type:
        """The type inference gave this node."""
        if self._checked_type is None:
            raise GraphError(f"the type of this {type(self).__name__} is not known yet: run "
                             "tecc.graph.transform.infer_type (relay.transform.InferType()) first")
        return self._checked_type

    def _set_type(self, ty: Type) -> None:
        """Record the inferred type (type inference only)."""
        object.__setattr__(self, "_checked_type", ty)

    @property
    def has_type(self) -> bool:
        return self._checked_type is not None

    def __str__(self):
        from .printer import astext  # noqa: PLC0415 -- the printer imports this module

        return astext(self)

    def astext(self) -> str:
        return str(self)

    __repr__ = __str__

    # identity semantics: two nodes are the same value only if they are the same object
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


class Var(Expr):
    """A parameter: ``name_hint`` and, for a model input or weight, its type."""

    __slots__ = ("name_hint", "type_annotation")

    def __init__(self, name_hint: str, type_annotation: Type = None):
        if not isinstance(name_hint, str) or not name_hint:
            raise GraphError(f"Var: the name must be a non-empty string, got {name_hint!r}")
        if type_annotation is not None and not isinstance(type_annotation, Type):
            raise GraphError(f"Var {name_hint!r}: type_annotation must be a TensorType or TupleType, got "
                             f"{type(type_annotation).__name__}")
        self._init(name_hint=name_hint, type_annotation=type_annotation)


class Constant(Expr):
    """A tensor known at compile time.  ``data`` is a read-only numpy array (a copy
    of the one given, unless that one was already read-only)."""

    __slots__ = ("data",)

    def __init__(self, data):
        arr = np.asarray(data)
        if arr.dtype == object:
            raise GraphError(f"Constant: data of dtype object cannot be compiled: {data!r}")
        if arr.flags.writeable:
            arr = np.array(arr, copy=True)
            arr.flags.writeable = False
        self._init(data=arr)

    @property
    def tensor_type(self) -> TensorType:
        return TensorType(self.data.shape, str(self.data.dtype))


class Call(Expr):
    """``op(*args, **attrs)``: ``op`` is a registered :class:`~tecc.graph.op.Op` or a
    :class:`Function` (a fused group)."""

    __slots__ = ("op", "args", "attrs")
    _fields = ("args",)

    def __init__(self, op, args, attrs=None, span=None):
        from .op import Op  # noqa: PLC0415 -- op.py imports this module

        if not isinstance(op, (Op, Function)):
            raise GraphError(f"Call: op must be a registered Op or a Function, got {type(op).__name__} {op!r}")
        args = tuple(args)
        for i, a in enumerate(args):
            if not isinstance(a, Expr):
                name = op.name if isinstance(op, Op) else "a function"
                raise GraphError(f"Call of {name}: argument {i} is a {type(a).__name__}, not a graph Expr")
        if not isinstance(attrs, Attrs):
            attrs = Attrs(attrs, where=f"{getattr(op, 'name', 'function')} attrs")
        self._init(op=op, args=args, attrs=attrs, span=span)

    def __getitem__(self, index):
        """Field ``index`` of a call that returns a tuple (``relay.nn.batch_norm(...)[0]``,
        as Relay's ``TupleWrapper``): a :class:`TupleGetItem`."""
        if not isinstance(index, int) or isinstance(index, bool):
            raise GraphError(f"a call's field is chosen by an int index, got {index!r}")
        if self.has_type:
            ty = self.checked_type
            if not isinstance(ty, TupleType):
                raise GraphError(f"the call of {getattr(self.op, 'name', 'a function')} returns one tensor, not a "
                                 f"tuple: it has no field {index}")
            if not -len(ty.fields) <= index < len(ty.fields):
                raise IndexError(f"the call of {getattr(self.op, 'name', 'a function')} returns {len(ty.fields)} "
                                 f"fields; there is no field {index}")
            index %= len(ty.fields)
        return TupleGetItem(self, index)

    def __iter__(self):
        # without this, __getitem__ would make every call an endless iterable
        raise TypeError(f"a call of {getattr(self.op, 'name', 'a function')} is not iterable; take its fields by "
                        "index (call[0])")

    def astuple(self) -> "Call":
        """The call itself (Relay's ``TupleWrapper.astuple``)."""
        return self


class Tuple(Expr):
    """Several values as one."""

    __slots__ = ("fields",)
    _fields = ("fields",)

    def __init__(self, fields, span=None):
        fields = tuple(fields)
        for i, f in enumerate(fields):
            if not isinstance(f, Expr):
                raise GraphError(f"Tuple: field {i} is a {type(f).__name__}, not a graph Expr")
        self._init(fields=fields, span=span)

    def __len__(self):
        return len(self.fields)

    def __getitem__(self, i):
        return self.fields[i]


class TupleGetItem(Expr):
    """Field ``index`` of ``tuple_value``."""

    __slots__ = ("tuple_value", "index")
    _fields = ("tuple_value",)

    def __init__(self, tuple_value, index: int, span=None):
        if not isinstance(tuple_value, Expr):
            raise GraphError(f"TupleGetItem: the tuple is a {type(tuple_value).__name__}, not a graph Expr")
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise GraphError(f"TupleGetItem: index must be an int, got {index!r}")
        self._init(tuple_value=tuple_value, index=int(index), span=span)


class Function(Expr):
    """``fn(params) { body }``.  The model is one; so is each fused group of
    operators (``attrs["Primitive"] == 1``), which becomes one kernel."""

    __slots__ = ("params", "body", "ret_type", "attrs")
    _fields = ("body",)

    def __init__(self, params, body, ret_type=None, attrs=None, span=None):
        params = tuple(params)
        for p in params:
            if not isinstance(p, Var):
                raise GraphError(f"Function: every parameter must be a Var, got {type(p).__name__}")
        names = [p.name_hint for p in params]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise GraphError(f"Function: parameter names {dup} are used more than once; give each input its own "
                             "name")
        if not isinstance(body, Expr):
            raise GraphError(f"Function: the body is a {type(body).__name__}, not a graph Expr")
        if not isinstance(attrs, Attrs):
            attrs = Attrs(attrs, where="function attrs")
        self._init(params=params, body=body, ret_type=ret_type, attrs=attrs, span=span)

    @property
    def is_primitive(self) -> bool:
        """A fused group (one kernel)."""
        return bool(self.attrs.get("Primitive", 0))


def const(value, dtype=None) -> Constant:
    """A :class:`Constant` from a Python number, list or numpy array (TVM's
    ``relay.const``); ``dtype`` defaults to float32 for floats and int64 for ints."""
    arr = np.asarray(value)
    if dtype is None:
        if arr.dtype == np.float64:
            dtype = "float32"
        elif arr.dtype.kind in "iu" and not isinstance(value, np.ndarray):
            dtype = "int64"
        else:
            dtype = arr.dtype
    return Constant(arr.astype(dtype))


# ---------------------------------------------------------------------------------------
# walking the graph
# ---------------------------------------------------------------------------------------
def _table(cls) -> dict:
    table = cls.__dict__.get("_dispatch_table")
    if table is None:
        table = {}
        cls._dispatch_table = table
    return table


def data_operands(expr) -> tuple:
    """The values ``expr`` computes from (not a called Function nor a Function's
    body: the visitors enter those only when their ``visit_<Class>`` does)."""
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, Tuple):
        return expr.fields
    if isinstance(expr, TupleGetItem):
        return (expr.tuple_value,)
    return ()


#: TVM's (Relay's) names of the visit methods, which visitors written for Relay
#: override (``def visit_constant(self, c)``): the same as tecc's ``visit_<Class>``
_TVM_VISIT_NAMES = {"Call": "visit_call", "Constant": "visit_constant", "Var": "visit_var", "Tuple": "visit_tuple",
                    "TupleGetItem": "visit_tuple_getitem", "Function": "visit_function"}


class ExprVisitor:
    """Visits every node reachable from a root once.  The data operands of a node
    (a call's arguments, a tuple's fields) are visited before it; a called Function
    and a Function's body only when ``visit_<Class>`` (or :meth:`generic_visit`)
    visits them.  Override ``visit_Call``, ``visit_Var`` ... (or Relay's
    ``visit_call``, ``visit_var``, ``visit_constant``, ``visit_tuple``,
    ``visit_tuple_getitem``, ``visit_function``); a node class with no method falls
    back along its MRO to :meth:`generic_visit`.  ``self.visit(x)``
    inside a method returns ``x``'s result (computed once, remembered)."""

    def __init__(self):
        self.memo = {}

    def visit(self, expr):
        memo = self.memo
        if expr in memo:
            return memo[expr]
        # A model is a chain of hundreds of calls, deeper than Python's recursion
        # limit: the data operands are visited first, iteratively, so that when a
        # visit_<Class> method visits an operand the result is already in the memo.
        stack = [(expr, False)]
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            if ready:
                memo[node] = self._dispatch(node)
                continue
            stack.append((node, True))
            for operand in reversed(data_operands(node)):
                if operand not in memo:
                    stack.append((operand, False))
        return memo[expr]

    def _dispatch(self, expr):
        table = _table(type(self))
        fn = table.get(type(expr))
        if fn is None:
            fn = table[type(expr)] = self._resolve(type(expr))
        return fn(self, expr)

    def _resolve(self, cls):
        if not (isinstance(cls, type) and issubclass(cls, Expr)):
            raise TypeError(f"{type(self).__name__} cannot visit a {cls.__name__}: not a graph node")
        for base in cls.__mro__:
            for name in ("visit_" + base.__name__, _TVM_VISIT_NAMES.get(base.__name__)):
                fn = getattr(type(self), name, None) if name else None
                if fn is not None:
                    return fn
            if base is Expr:
                break
        return type(self).generic_visit

    def generic_visit(self, expr):
        for name in type(expr)._fields:
            value = getattr(expr, name)
            if isinstance(value, tuple):
                for v in value:
                    self.visit(v)
            else:
                self.visit(value)


def typed_like(new, old, rewriter: str):
    """``new``, built to replace ``old``, typed by inference when ``old`` is typed: the
    type its operands' types give (a call's operator's ``infer`` over the new
    operands), walking only the untyped nodes under it -- those the rewrite built.
    ``new`` is returned as it is when ``old`` is untyped (an untyped graph stays
    untyped).  A value that does not type-check is refused, naming ``rewriter`` (the
    pass that made it) and the operator."""
    if new is old or not old.has_type or not isinstance(new, Expr) or new.has_type:
        return new
    from .transform.infer_type import infer_type  # noqa: PLC0415 -- the passes import this module

    try:
        infer_type(new)
    except GraphError as err:
        raise GraphError(f"{rewriter} rewrote a {type(old).__name__} into a value that does not type-check: "
                         f"{err}") from None
    return new


class ExprMutator(ExprVisitor):
    """Rebuilds the graph bottom-up; a node whose operands did not change is
    returned as is (so ``new is old`` says nothing changed).  Each node is
    rewritten once: a value used twice stays shared.

    A typed graph stays typed: the node that replaces a typed node -- a call
    :meth:`generic_visit` rebuilt over new operands, or whatever a ``visit_<Class>``
    method built -- gets its type at once, inferred from its operands' types (the
    operator's ``infer`` over the new operands, not the old node's type: the
    operands may have changed shape).  So a pass reads ``checked_type`` of anything
    it rewrote without running type inference itself, and a rewrite that does not
    type-check fails where it is made, naming the operator and the mutator.  In an
    untyped graph the rebuilt nodes stay untyped."""

    def _dispatch(self, expr):
        return self._typed_like(super()._dispatch(expr), expr)

    def _typed_like(self, new, old):
        return typed_like(new, old, type(self).__name__)

    def generic_visit(self, expr):
        if isinstance(expr, (Var, Constant)):
            return expr
        if isinstance(expr, Call):
            args = tuple(self.visit(a) for a in expr.args)
            op = self.visit(expr.op) if isinstance(expr.op, Function) else expr.op
            if op is expr.op and all(a is b for a, b in zip(args, expr.args)):
                return expr
            return self._typed_like(Call(op, args, expr.attrs, expr.span), expr)
        if isinstance(expr, Tuple):
            fields = tuple(self.visit(f) for f in expr.fields)
            if all(a is b for a, b in zip(fields, expr.fields)):
                return expr
            return self._typed_like(Tuple(fields, expr.span), expr)
        if isinstance(expr, TupleGetItem):
            value = self.visit(expr.tuple_value)
            if value is expr.tuple_value:
                return expr
            return self._typed_like(TupleGetItem(value, expr.index, expr.span), expr)
        if isinstance(expr, Function):
            body = self.visit(expr.body)
            if body is expr.body:
                return expr
            return self._typed_like(Function(expr.params, body, expr.ret_type, expr.attrs, expr.span), expr)
        raise TypeError(f"{type(self).__name__}: no rule to rebuild a {type(expr).__name__}")


class GraphRewriter(ExprMutator):
    """The :class:`ExprMutator` of the graph passes: a fused (primitive) function
    inside the graph is a kernel already, and is left as it is."""

    def visit_Function(self, fn):
        if fn.is_primitive:
            return fn
        return self.generic_visit(fn)


def post_order(root, operands=None, stop=None, exclude=()) -> list:
    """Every node reachable from ``root`` through ``operands(node)`` (default:
    :func:`children`), each once, operands before the nodes that use them; the one
    walk of the graph layer, iterative because a model is a chain deeper than
    Python's recursion limit.  ``stop(node)`` true: the node is left out with
    everything below it (e.g. already typed); nodes in ``exclude`` are left out too
    (e.g. already printed)."""
    operands = operands or children
    order, seen = [], set(exclude)
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node in seen:
            continue
        if expanded:
            seen.add(node)
            order.append(node)
            continue
        if stop is not None and stop(node):
            seen.add(node)
            continue
        stack.append((node, True))
        for child in reversed(operands(node)):
            if child not in seen:
                stack.append((child, False))
    return order


def post_order_visit(expr, fn) -> None:
    """Call ``fn(node)`` on every node reachable from ``expr`` once, operands
    before the nodes that use them (TVM's ``relay.analysis.post_order_visit``).
    A fused :class:`Function` called by a :class:`Call` is visited (its body
    first) before the call."""
    for node in post_order(expr):
        fn(node)


def children(expr) -> list:
    """The operands of ``expr`` in order (a Call's function first when it calls a
    Function; a Function's parameters, then its body)."""
    if isinstance(expr, Call):
        return ([expr.op] if isinstance(expr.op, Function) else []) + list(expr.args)
    if isinstance(expr, Tuple):
        return list(expr.fields)
    if isinstance(expr, TupleGetItem):
        return [expr.tuple_value]
    if isinstance(expr, Function):
        return list(expr.params) + [expr.body]
    if isinstance(expr, (Var, Constant)):
        return []
    raise TypeError(f"not a graph node: {type(expr).__name__}")


def topological_order(expr) -> list:
    """Every node reachable from ``expr``, operands before users."""
    return post_order(expr)


def free_vars(expr) -> list:
    """The :class:`Var` nodes ``expr`` uses that no enclosing Function inside it
    binds, in order of first use."""
    bound, out = set(), []

    def visit(node):
        if isinstance(node, Function):
            bound.update(node.params)
        elif isinstance(node, Var) and node not in bound and node not in out:
            out.append(node)

    post_order_visit(expr, visit)
    return [v for v in out if v not in bound]


# ---------------------------------------------------------------------------------------
# a module of functions (Relay's IRModule)
# ---------------------------------------------------------------------------------------
class Module:
    """Named graph functions; ``mod["main"]`` is the model.  Passes return a new
    module (or the same one when nothing changed)."""

    def __init__(self, functions=None, attrs=None):
        functions = dict(functions or {})
        for name, fn in functions.items():
            if not isinstance(name, str):
                raise GraphError(f"Module keys are function names (str), got {name!r}")
            if not isinstance(fn, Function):
                raise GraphError(f"Module function {name!r} is a {type(fn).__name__}, not a graph Function")
        self.functions = functions
        self.attrs = dict(attrs or {})

    @staticmethod
    def from_expr(expr, functions=None) -> "Module":
        """A module whose ``main`` is ``expr`` (a Function, or an expression whose
        free variables become the parameters)."""
        if not isinstance(expr, Function):
            if not isinstance(expr, Expr):
                raise GraphError(f"Module.from_expr takes a graph Function or Expr, got {type(expr).__name__}")
            expr = Function(free_vars(expr), expr)
        funcs = dict(functions or {})
        funcs["main"] = expr
        return Module(funcs)

    def __getitem__(self, name):
        if name not in self.functions:
            raise KeyError(f"the module has no function {name!r}; it has {list(self.functions)}")
        return self.functions[name]

    def __setitem__(self, name, fn):
        if not isinstance(fn, Function):
            raise GraphError(f"Module function {name!r} must be a graph Function, got {type(fn).__name__}")
        self.functions[name] = fn

    def __contains__(self, name):
        return name in self.functions

    def __iter__(self):
        return iter(self.functions.items())

    def items(self):
        return self.functions.items()

    def __len__(self):
        return len(self.functions)

    def with_function(self, name, fn) -> "Module":
        """A new module with ``name`` replaced by ``fn`` (the same module when ``fn``
        is already there)."""
        if self.functions.get(name) is fn:
            return self
        funcs = dict(self.functions)
        funcs[name] = fn
        return Module(funcs, self.attrs)

    def map_functions(self, rewrite, primitive=False) -> "Module":
        """The module with each function replaced by ``rewrite(fn)`` (the fused,
        primitive ones left alone unless ``primitive``): the same module when every
        rewrite returned its input.  What a pass over the graph does at the module
        level."""
        out = self
        for name, fn in self.items():
            if fn.is_primitive and not primitive:
                continue
            out = out.with_function(name, rewrite(fn))
        return out

    def astext(self, show_meta_data=True) -> str:
        """The module's text form (:mod:`tecc.graph.printer`).

        Parameters
        ----------
        show_meta_data : bool
            Accepted for TVM's ``mod.astext(show_meta_data=False)``; it changes
            nothing: tecc never prints a constant's values (a scalar prints inline,
            a larger constant as ``meta[Constant][k]`` with only its shape and dtype
            noted after the function).
        """
        from .printer import astext  # noqa: PLC0415

        return "\n".join(f"def @{name}{astext(fn, toplevel=False)}" for name, fn in self.functions.items())

    def show(self) -> None:
        """Print the module (TVM's ``mod.show()``)."""
        print(self.astext())

    def __str__(self):
        return self.astext()

    __repr__ = __str__


def _module_from_expr(expr, functions=None) -> Module:
    return Module.from_expr(expr, functions)


#: tecc.IRModule.from_expr(graph_function) (TVM code's spelling) builds a graph Module
Expr._ir_module_from_expr = staticmethod(_module_from_expr)
