"""Expression nodes of the loop IR.

Expressions are immutable.  Python operators build new expressions
(``A[i, k] * B[k, j]``); ``==`` and ``!=`` return lazy objects that act as a
boolean (identity) in ``if`` statements and dictionaries and as an ``EQ``/``NE``
node inside expressions, as in TVM.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from ..errors import TeccTypeError
from . import dtype as _dt
from .node import Node, ir_node

# set by tecc.tir.op once it is imported (it needs these classes first)
_op = None


class PrimExpr(Node):
    """Base of scalar and vector expressions.  Subclasses expose ``dtype``."""

    __slots__ = ()

    # arithmetic --------------------------------------------------------------
    def __add__(self, other):
        if getattr(other, "_tensor_arith", False):
            return NotImplemented  # expression op tensor: the tensor's operator (te)
        return _op.add(self, other)

    def __radd__(self, other):
        return _op.add(other, self)

    def __sub__(self, other):
        if getattr(other, "_tensor_arith", False):
            return NotImplemented  # expression op tensor: the tensor's operator (te)
        return _op.sub(self, other)

    def __rsub__(self, other):
        return _op.sub(other, self)

    def __mul__(self, other):
        if getattr(other, "_tensor_arith", False):
            return NotImplemented  # expression op tensor: the tensor's operator (te)
        return _op.mul(self, other)

    def __rmul__(self, other):
        return _op.mul(other, self)

    def __truediv__(self, other):
        if getattr(other, "_tensor_arith", False):
            return NotImplemented  # expression op tensor: the tensor's operator (te)
        return _op.div(self, other)

    def __rtruediv__(self, other):
        return _op.div(other, self)

    def __floordiv__(self, other):
        if getattr(other, "_tensor_arith", False):
            return NotImplemented  # expression op tensor: the tensor's operator (te)
        return _op.floordiv(self, other)

    def __rfloordiv__(self, other):
        return _op.floordiv(other, self)

    def __mod__(self, other):
        if getattr(other, "_tensor_arith", False):
            return NotImplemented  # expression op tensor: the tensor's operator (te)
        return _op.floormod(self, other)

    def __rmod__(self, other):
        return _op.floormod(other, self)

    def __neg__(self):
        return _op.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _op.abs(self)

    def __pow__(self, other):
        return _op.power(self, other)

    def __rpow__(self, other):
        return _op.power(other, self)

    # bitwise / logical -------------------------------------------------------
    def __and__(self, other):
        return _op.bitwise_and(self, other)

    def __rand__(self, other):
        return _op.bitwise_and(other, self)

    def __or__(self, other):
        return _op.bitwise_or(self, other)

    def __ror__(self, other):
        return _op.bitwise_or(other, self)

    def __xor__(self, other):
        return _op.bitwise_xor(self, other)

    def __rxor__(self, other):
        return _op.bitwise_xor(other, self)

    def __invert__(self):
        return _op.bitwise_not(self)

    def __lshift__(self, other):
        return _op.shift_left(self, other)

    def __rlshift__(self, other):
        return _op.shift_left(other, self)

    def __rshift__(self, other):
        return _op.shift_right(self, other)

    def __rrshift__(self, other):
        return _op.shift_right(other, self)

    # comparison --------------------------------------------------------------
    def __lt__(self, other):
        return _op.lt(self, other)

    def __le__(self, other):
        return _op.le(self, other)

    def __gt__(self, other):
        return _op.gt(self, other)

    def __ge__(self, other):
        return _op.ge(self, other)

    def __eq__(self, other):
        return EqualOp(self, other)

    def __ne__(self, other):
        return NotEqualOp(self, other)

    __hash__ = Node.__hash__  # identity: IR nodes are used as dict keys

    def __bool__(self):
        raise TeccTypeError(
            f"cannot use the symbolic expression `{self}` as a Python bool; "
            "use tir.all/tir.any, tir.if_then_else or tir.Select inside expressions")

    def astype(self, dtype):
        return _op.cast(dtype, self)

    def equal(self, other):
        """The ``EQ`` node ``self == other`` (``==`` itself also compares identity)."""
        return _op.eq(self, other)


def _const_value(x):
    """The value of a constant (an IntImm/FloatImm or a Python number), else None."""
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, (IntImm, FloatImm)):
        return x.value
    return None


class EqualOp:
    """Result of ``a == b``: identity as a bool, an ``EQ`` node in expressions."""

    __slots__ = ("a", "b")
    _node_cls = None  # set below

    def __init__(self, a, b):
        self.a = a
        self.b = b

    def __bool__(self):
        a, b = self.a, self.b
        if a is b:
            return True
        # constants compare by value (``tir.const(10) == 10``), as TVM folds them
        va, vb = _const_value(a), _const_value(b)
        return va is not None and vb is not None and va == vb

    def __nonzero__(self):  # pragma: no cover
        return self.__bool__()

    def asobject(self):
        return _op.eq(self.a, self.b)

    def __repr__(self):
        return repr(self.asobject())

    # let the lazy comparison take part in further expressions
    def __and__(self, other):
        return _op.logical_and(self.asobject(), other)

    def __or__(self, other):
        return _op.logical_or(self.asobject(), other)

    def __invert__(self):
        return _op.logical_not(self.asobject())

    @property
    def dtype(self):
        return "bool"


class NotEqualOp(EqualOp):
    __slots__ = ()

    def __bool__(self):
        return not EqualOp.__bool__(self)

    def asobject(self):
        return _op.ne(self.a, self.b)


# ----------------------------------------------------------------------------
# leaves
# ----------------------------------------------------------------------------

@ir_node()
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IntImm(PrimExpr):
    dtype: str
    value: int

    def __int__(self):
        return int(self.value)

    def __index__(self):
        return int(self.value)

    def __bool__(self):
        return bool(self.value)


@ir_node()
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class FloatImm(PrimExpr):
    dtype: str
    value: float

    def __float__(self):
        return float(self.value)


@ir_node()
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class StringImm(PrimExpr):
    value: str

    @property
    def dtype(self):
        return "handle"


@ir_node()
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Var(PrimExpr):
    """A variable.  Two variables are the same only if they are the same object."""

    name: str
    dtype: str = "int32"

    @property
    def name_hint(self):
        return self.name


@ir_node()
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class SizeVar(Var):
    """A variable known to be non-negative (a symbolic shape)."""


# ----------------------------------------------------------------------------
# binary arithmetic
# ----------------------------------------------------------------------------

_PY_SCALARS = (bool, int, float)


def _lift_pair(node, fa, fb):
    """Node constructors take Python numbers as TVM's do: ``Select(c, 1, 0)``,
    ``Add(x, 1)``; a number next to an expression takes that expression's dtype."""
    a, b = getattr(node, fa), getattr(node, fb)
    if isinstance(a, (EqualOp, NotEqualOp)):  # ``x == y`` written inside a node
        a = a.asobject()
        object.__setattr__(node, fa, a)
    if isinstance(b, (EqualOp, NotEqualOp)):
        b = b.asobject()
        object.__setattr__(node, fb, b)
    if isinstance(a, _PY_SCALARS) or isinstance(b, _PY_SCALARS):
        if isinstance(a, _PY_SCALARS) and isinstance(b, PrimExpr):
            a = _op.const(a, b.dtype)
        elif isinstance(b, _PY_SCALARS) and isinstance(a, PrimExpr):
            b = _op.const(b, a.dtype)
        else:
            a, b = _op.convert(a), _op.convert(b)
        object.__setattr__(node, fa, a)
        object.__setattr__(node, fb, b)


def _lift_binary(self):
    _lift_pair(self, "a", "b")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BinaryOp(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    __post_init__ = _lift_binary

    @property
    def dtype(self):
        return self.a.dtype


def _binop(name):
    cls = type(name, (BinaryOp,), {"__slots__": (), "__doc__": f"``{name}(a, b)``"})
    cls.__module__ = __name__
    return ir_node(("a", "b"))(cls)


Add = _binop("Add")
Sub = _binop("Sub")
Mul = _binop("Mul")
Div = _binop("Div")            #: true division for floats, C (truncating) division for ints
Mod = _binop("Mod")            #: C (truncating) remainder
FloorDiv = _binop("FloorDiv")
FloorMod = _binop("FloorMod")
Min = _binop("Min")
Max = _binop("Max")


# ----------------------------------------------------------------------------
# comparisons and logic (results are bool, with the lanes of the operands)
# ----------------------------------------------------------------------------

@dataclass(frozen=True, eq=False, slots=True, repr=False)
class CmpOp(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    __post_init__ = _lift_binary

    @property
    def dtype(self):
        n = _dt.lanes(self.a.dtype)
        return "bool" if n == 1 else f"boolx{n}"


def _cmpop(name):
    cls = type(name, (CmpOp,), {"__slots__": (), "__doc__": f"``{name}(a, b)``: a comparison, bool-valued"})
    cls.__module__ = __name__
    return ir_node(("a", "b"))(cls)


EQ = _cmpop("EQ")
NE = _cmpop("NE")
LT = _cmpop("LT")
LE = _cmpop("LE")
GT = _cmpop("GT")
GE = _cmpop("GE")


@ir_node(("a", "b"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class And(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    __post_init__ = _lift_binary

    @property
    def dtype(self):
        return self.a.dtype


@ir_node(("a", "b"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Or(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    __post_init__ = _lift_binary

    @property
    def dtype(self):
        return self.a.dtype


@ir_node(("a",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Not(PrimExpr):
    a: PrimExpr

    def __post_init__(self):
        if isinstance(self.a, _PY_SCALARS):
            object.__setattr__(self, "a", _op.const(bool(self.a)))

    @property
    def dtype(self):
        return self.a.dtype


# ----------------------------------------------------------------------------
# other expressions
# ----------------------------------------------------------------------------

@ir_node(("condition", "true_value", "false_value"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Select(PrimExpr):
    """``condition ? true_value : false_value`` -- both sides are evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    def __post_init__(self):
        if isinstance(self.condition, _PY_SCALARS):
            object.__setattr__(self, "condition", _op.const(bool(self.condition)))
        elif isinstance(self.condition, (EqualOp, NotEqualOp)):  # Select(i % 3 == 0, ...)
            object.__setattr__(self, "condition", self.condition.asobject())
        _lift_pair(self, "true_value", "false_value")

    @property
    def dtype(self):
        return self.true_value.dtype


@ir_node(("value",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr

    def __post_init__(self):
        if isinstance(self.value, _PY_SCALARS):
            object.__setattr__(self, "value", _op.convert(self.value))


@ir_node(("base", "stride"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes-1)*stride]``."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int

    def __post_init__(self):
        _lift_pair(self, "base", "stride")

    @property
    def dtype(self):
        return _dt.with_lanes(self.base.dtype, self.lanes)


@ir_node(("value",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Broadcast(PrimExpr):
    value: PrimExpr
    lanes: int

    def __post_init__(self):
        if isinstance(self.value, _PY_SCALARS):
            object.__setattr__(self, "value", _op.convert(self.value))

    @property
    def dtype(self):
        return _dt.with_lanes(self.value.dtype, self.lanes)


@ir_node(("value", "body"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr

    def __post_init__(self):
        if isinstance(self.value, _PY_SCALARS):
            object.__setattr__(self, "value", _op.const(self.value, self.var.dtype))
        if isinstance(self.body, _PY_SCALARS):
            object.__setattr__(self, "body", _op.convert(self.body))

    @property
    def dtype(self):
        return self.body.dtype


class OpName(str):
    """The name of a call's intrinsic (``"exp"``): a string, with TVM's ``op.name``
    (``"tir.exp"``) for code written against TVM (``call.op.name``)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return self if self.startswith("tir.") else "tir." + self


@ir_node(("args",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Call(PrimExpr):
    """A call of a named intrinsic (``exp``, ``if_then_else``, ``likely``, ...).

    The known intrinsics and their meaning are listed in :mod:`tecc.tir.op`.
    """

    dtype: str
    op: str
    args: tuple

    def __post_init__(self):
        if type(self.op) is str:
            object.__setattr__(self, "op", OpName(self.op))


@ir_node(("indices",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BufferLoad(PrimExpr):
    buffer: "Buffer"  # noqa: F821
    indices: tuple

    def __post_init__(self):
        if type(self.indices) is not tuple or not all(isinstance(i, PrimExpr) for i in self.indices):
            object.__setattr__(self, "indices", tuple(_op.convert(i) for i in self.indices))

    @property
    def dtype(self):
        n = 1
        for idx in self.indices:
            n = max(n, _dt.lanes(idx.dtype))
        d = self.buffer.dtype
        return d if n == 1 else _dt.with_lanes(d, n)


@ir_node(("indices",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ProducerLoad(PrimExpr):
    """A read of a tensor-expression tensor, ``T[i, j]``, before lowering."""

    producer: object  # tecc.te.Tensor
    indices: tuple

    @property
    def dtype(self):
        return self.producer.dtype


class IterVarType(IntEnum):
    """The role of an iteration variable (data parallel, reduction, GPU index, ...)."""

    DATA_PAR = 0
    THREAD_INDEX = 1
    COMM_REDUCE = 2
    ORDERED = 3
    OPAQUE = 4
    UNROLLED = 5
    VECTORIZED = 6
    PARALLELIZED = 7


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Range:
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min_value, extent):
        return Range(_op.convert(min_value), _op.convert(extent))

    def __repr__(self):
        return f"range(min={self.min}, ext={self.extent})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IterVar(Node):
    """An iteration variable: a :class:`Var`, its domain, and its role.

    ``iter_type`` says whether it is a data-parallel axis, a reduction axis or a
    thread index; ``thread_tag`` names the hardware index (``"threadIdx.x"``).
    """

    dom: Range | None
    var: Var
    iter_type: IterVarType = IterVarType.DATA_PAR
    thread_tag: str = ""

    # TVM's names of the iteration types (``IterVar.Vectorized``...)
    DataPar = IterVarType.DATA_PAR
    ThreadIndex = IterVarType.THREAD_INDEX
    CommReduce = IterVarType.COMM_REDUCE
    Ordered = IterVarType.ORDERED
    DimInfo = IterVarType.OPAQUE
    Unrolled = IterVarType.UNROLLED
    Vectorized = IterVarType.VECTORIZED
    Parallelized = IterVarType.PARALLELIZED
    Tensorized = 8

    # an IterVar stands for its variable inside expressions
    def _v(self):
        return self.var

    def __add__(self, o):
        return self.var + o

    def __radd__(self, o):
        return o + self.var

    def __sub__(self, o):
        return self.var - o

    def __rsub__(self, o):
        return o - self.var

    def __mul__(self, o):
        return self.var * o

    def __rmul__(self, o):
        return o * self.var

    def __floordiv__(self, o):
        return self.var // o

    def __mod__(self, o):
        return self.var % o

    def __truediv__(self, o):
        return self.var / o

    def __lt__(self, o):
        return self.var < o

    def __le__(self, o):
        return self.var <= o

    def __gt__(self, o):
        return self.var > o

    def __ge__(self, o):
        return self.var >= o

    def __neg__(self):
        return -self.var

    def __rfloordiv__(self, o):
        return o // self.var

    def __rmod__(self, o):
        return o % self.var

    def __rtruediv__(self, o):
        return o / self.var

    def __lshift__(self, o):
        return self.var << o

    def __rlshift__(self, o):
        return o << self.var

    def __rshift__(self, o):
        return self.var >> o

    def __rrshift__(self, o):
        return o >> self.var

    def __and__(self, o):
        return self.var & o

    def __rand__(self, o):
        return o & self.var

    def __or__(self, o):
        return self.var | o

    def __ror__(self, o):
        return o | self.var

    def __xor__(self, o):
        return self.var ^ o

    def __rxor__(self, o):
        return o ^ self.var

    @property
    def name(self):
        return self.var.name

    @property
    def dtype(self):
        return self.var.dtype

    def __repr__(self):
        dom = f"{self.dom.min}, {self.dom.extent}" if self.dom is not None else "?"
        tag = f", {self.thread_tag!r}" if self.thread_tag else ""
        return f"iter_var({self.var.name}, range({dom}){tag})"

    __str__ = __repr__


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class CommReducer(Node):
    """A commutative reducer: ``result = combine(lhs, rhs)`` with an identity.

    ``lhs``/``rhs`` are variables (one per value of a tuple reduction), ``result``
    the combined expressions and ``identity_element`` the start values.
    """

    lhs: tuple
    rhs: tuple
    result: tuple
    identity_element: tuple

    def __repr__(self):
        return (f"comm_reducer(result={list(map(str, self.result))}, lhs={[v.name for v in self.lhs]}, "
                f"rhs={[v.name for v in self.rhs]}, identity={list(map(str, self.identity_element))})")


@ir_node(("source", "condition", "init"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Reduce(PrimExpr):
    """A reduction over ``axis`` of ``source`` (one expression per value).

    Value ``value_index`` of the reduction is this expression's result.
    """

    combiner: CommReducer
    source: tuple
    axis: tuple  # of IterVar
    condition: PrimExpr
    value_index: int
    init: tuple = ()

    @property
    def dtype(self):
        return self.source[self.value_index].dtype


def is_const_int(e, value=None) -> bool:
    """True if ``e`` is an integer constant (equal to ``value`` if given)."""
    if isinstance(e, IntImm):
        return value is None or e.value == value
    return False


def const_int_value(e):
    """The Python int of an integer constant, else ``None``."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, int) and not isinstance(e, bool):
        return e
    return None
