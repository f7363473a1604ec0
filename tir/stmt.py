"""Statement nodes, buffers and functions of the loop IR."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from .expr import IntImm, PrimExpr, Var
from .keys import GLOBAL_SYMBOL
from .node import Node, ir_node


class Stmt(Node):
    """Base of statements."""

    __slots__ = ()


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Buffer(Node):
    """A region of memory with a dtype, a shape and a storage scope.

    ``data`` is the handle variable that holds the base pointer; ``scope`` is
    ``"global"``, ``"shared"``, ``"local"`` (or ``"warp"``).  Buffers compare by
    identity.  After storage flattening every buffer accessed in the IR is
    one-dimensional.
    """

    name: str
    dtype: str
    shape: tuple
    data: Var
    scope: str = "global"
    strides: tuple = ()
    elem_offset: PrimExpr | None = None
    align: int = 64

    def __repr__(self):
        shp = ", ".join(str(s) for s in self.shape)
        return f"buffer({self.name}, {self.dtype}, [{shp}], {self.scope!r})"

    __str__ = __repr__

    def vload(self, indices):
        return BufferLoad(self, tuple(indices))

    def __getitem__(self, indices):
        from .op import convert
        if not isinstance(indices, tuple):
            indices = (indices,)
        return BufferLoad(self, tuple(convert(i) for i in indices))


def decl_buffer(shape, dtype="float32", name="buffer", scope="global", data=None):
    """Declare a buffer (TVM's ``tir.decl_buffer``)."""
    from .op import convert
    shape = tuple(convert(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if data is None:
        data = Var(name, "handle")
    return Buffer(name, str(dtype), shape, data, scope)


from .expr import BufferLoad  # noqa: E402  (after Buffer for readability)


class ForKind(Enum):
    """How a loop runs: in order, on CPU threads, as SIMD lanes, unrolled, or bound to a GPU index."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "thread_binding"


@ir_node(("value", "body"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@ir_node(("value", "body"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class AttrStmt(Stmt):
    """An annotation on ``body``: ``attr_key`` of ``node`` is ``value``.

    Keys used: ``"thread_extent"`` (node: IterVar), ``"pragma_*"``,
    ``"storage_align"``, ``"double_buffer_scope"``.
    """

    node: object
    attr_key: str
    value: PrimExpr
    body: Stmt


@ir_node(("condition", "body"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class AssertStmt(Stmt):
    condition: PrimExpr
    message: str
    body: Stmt


@ir_node(("value", "indices"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple


@ir_node(("body",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Allocate(Stmt):
    """Allocate ``buffer`` (its shape gives the size) for the duration of ``body``."""

    buffer: Buffer
    body: Stmt


@ir_node(("min", "extent", "body"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: object = None  # IterVar for THREAD_BINDING loops
    annotations: tuple = ()        # ((key, value), ...) e.g. ("pragma_unroll", 1)

    def annotation(self, key, default=None):
        for k, v in self.annotations:
            if k == key:
                return v
        return default


@ir_node(("condition", "body"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class While(Stmt):
    condition: PrimExpr
    body: Stmt


@ir_node(("seq",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class SeqStmt(Stmt):
    seq: tuple

    def __len__(self):
        return len(self.seq)

    def __getitem__(self, i):
        return self.seq[i]


@ir_node(("condition", "then_case", "else_case"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@ir_node(("value",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Evaluate(Stmt):
    value: PrimExpr


def seq(*stmts) -> Stmt:
    """Make a sequence, flattening nested sequences and dropping no-ops."""
    out = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            out.extend(s.seq)
        elif isinstance(s, Evaluate) and isinstance(s.value, IntImm):
            continue
        else:
            out.append(s)
    if not out:
        return Evaluate(IntImm("int32", 0))
    if len(out) == 1:
        return out[0]
    return SeqStmt(tuple(out))


def is_no_op(s: Stmt) -> bool:
    if isinstance(s, Evaluate) and isinstance(s.value, IntImm):
        return True
    if isinstance(s, SeqStmt):
        return all(is_no_op(x) for x in s.seq)
    return False


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class PrimFunc(Node):
    """A function over buffers: ``params`` are the arguments in call order.

    ``buffer_map`` maps each param (a handle :class:`Var`) to its :class:`Buffer`.
    ``attrs`` holds e.g. ``global_symbol``, ``target`` and, once split for a GPU,
    ``launch`` information.
    """

    params: tuple
    body: Stmt
    buffer_map: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    def with_body(self, body):
        return self if body is self.body else replace(self, body=body)

    def with_attr(self, key, value):
        attrs = dict(self.attrs)
        attrs[key] = value
        return replace(self, attrs=attrs)

    @property
    def name(self):
        return self.attrs.get(GLOBAL_SYMBOL, "main")


class IRModule:
    """A set of named :class:`PrimFunc` (what :func:`tecc.lower` returns).

    ``attrs`` holds module facts; ``attrs["tecc.lowered"]`` says how far lowering
    went (see :mod:`tecc.tir.transform.pipeline`).  Passes return a new module (or
    the same object when they change nothing) rather than editing one in place.
    """

    def __init__(self, functions=None, attrs=None):
        self.functions = dict(functions or {})
        self.attrs = dict(attrs or {})

    @staticmethod
    def from_expr(func: "PrimFunc") -> "IRModule":
        """A module holding ``func`` under its name (TVM's ``IRModule.from_expr``)."""
        return IRModule({func.name: func})

    def with_functions(self, functions) -> "IRModule":
        """A new module with these functions (a dict, in order) and the same attrs."""
        return IRModule(functions, self.attrs)

    def with_attr(self, key, value) -> "IRModule":
        """A new module with the same functions and ``attrs[key] = value``."""
        attrs = dict(self.attrs)
        attrs[key] = value
        return IRModule(self.functions, attrs)

    def __getitem__(self, name):
        if name not in self.functions:
            raise KeyError(f"IRModule has no function {name!r}; it has {list(self.functions)}")
        return self.functions[name]

    def __setitem__(self, name, func):
        self.functions[name] = func

    def __contains__(self, name):
        return name in self.functions

    def __iter__(self):
        return iter(self.functions.items())

    def items(self):
        return self.functions.items()

    def __len__(self):
        return len(self.functions)

    def script(self):
        from .printer import to_text
        return "\n".join(to_text(f) for f in self.functions.values())

    def __str__(self):
        return self.script()

    __repr__ = __str__
