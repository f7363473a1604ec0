"""The operator registry of the graph IR.

An operator is registered once, with everything the compiler needs to know about it:

``name``
    Relay's name (``"nn.conv2d"``, ``"add"``, ``"reshape"``...).
``pattern``
    How it fuses (:class:`OpPattern`, the kinds of the TVM paper).
``infer(arg_types, attrs) -> Type``
    The output type from the operands' types: shape and dtype inference.  Raises
    :class:`~tecc.graph.ir.GraphError` naming the operator and what does not fit.
``lower(inputs, attrs, out_type) -> te.Tensor | list[te.Tensor]``
    The computation, as TE tensors built with topi from TE tensors of the
    operands (``out_type`` is what ``infer`` gave).
``num_inputs``
    The number of operands (``None``: any number, e.g. ``concatenate`` takes a tuple).
``defaults``
    Every attribute the operator takes, with its default (``REQUIRED`` when it has
    none): a call with an unknown attribute is refused, naming the ones it takes.
``inplace``
    The output may reuse operand 0's buffer (element-wise, same shape and dtype).
``fuse_inputs``
    On GPU targets, injective and element-wise producers of its operands (a
    transpose, a slice, a concatenation) may join its kernel: its CUDA schedules compute them inline in
    their shared-memory loads (the matrix products; see :mod:`.transform.fuse_ops`).

:func:`call` builds a :class:`~tecc.graph.ir.Call` of a registered operator by name,
checking the operand count and attributes.
"""
from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass, field

from .ir import Attrs, Call, Expr, GraphError


class OpPattern(enum.IntEnum):
    """How an operator fuses with its neighbours (TVM's ``OpPatternKind``; lower is
    easier to fuse)."""

    ELEMWISE = 0            # out[i] = f(in[i]) for every operand of the output's shape
    BROADCAST = 1           # element-wise with numpy broadcasting
    INJECTIVE = 2           # every output element reads a computed set of inputs (reshape, transpose, concat)
    COMM_REDUCE = 3         # a commutative reduction (sum, max, mean)
    OUT_ELEMWISE_FUSABLE = 4  # complex (conv2d, dense) but element-wise ops after it fuse into its kernel
    TUPLE = 7               # makes or takes apart tuples
    OPAQUE = 8              # fuses with nothing (sort, a data-dependent shape)


#: marks an attribute that has no default: every call must give it
REQUIRED = object()


@dataclass(frozen=True, eq=False)
class Op:
    """A registered operator (see the module's docstring).  Compared by identity;
    ``get_op(name)`` always returns the same object."""

    name: str
    pattern: OpPattern
    infer: object
    lower: object
    num_inputs: int | None = None
    defaults: dict = field(default_factory=dict)
    inplace: bool = False
    doc: str = ""
    fuse_inputs: bool = False

    def __repr__(self):
        return f"Op({self.name})"

    def __str__(self):
        return self.name  # as TVM prints an op (str(call.op) == "nn.conv2d")

    __hash__ = object.__hash__


#: name -> Op
OPS: dict = {}

#: operators whose output is their input's bytes under another shape (row-major): a
#: chain of them is a view, which needs no kernel
RESHAPES = frozenset({"reshape", "squeeze", "expand_dims", "nn.batch_flatten"})


def concat_in_place(out_shape, axis: int) -> bool:
    """Whether a concatenation along ``axis`` into ``out_shape`` is its operands'
    bytes end to end (row-major: every axis before ``axis`` is 1), so that the
    memory planner can have each operand written into its place and call no kernel."""
    axis = axis + len(out_shape) if axis < 0 else axis
    return all(int(d) == 1 for d in out_shape[:axis])


def register_op(name, *, pattern, infer, lower, num_inputs=None, defaults=None, inplace=False, doc="",
                fuse_inputs=False, override=False) -> Op:
    """Register operator ``name`` (see the module's docstring for each argument)
    and return it."""
    if name in OPS and not override:
        raise GraphError(f"operator {name!r} is already registered; pass override=True to replace it")
    if fuse_inputs and OpPattern(pattern) != OpPattern.OUT_ELEMWISE_FUSABLE:
        raise GraphError(f"operator {name!r}: fuse_inputs is for OUT_ELEMWISE_FUSABLE operators (a product whose "
                         f"schedule inlines its operands' producers), not {OpPattern(pattern).name}")
    op = Op(name, OpPattern(pattern), infer, lower, num_inputs, dict(defaults or {}), bool(inplace), doc,
            bool(fuse_inputs))
    OPS[name] = op
    return op


def get_op(name: str) -> Op:
    """The registered operator ``name`` (TVM's ``relay.op.get``)."""
    _load_definitions()
    op = OPS.get(name)
    if op is None:
        close = difflib.get_close_matches(name, list(OPS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise GraphError(f"no graph operator is registered as {name!r}{hint}")
    return op


def list_ops() -> list:
    """The names of every registered operator, sorted."""
    _load_definitions()
    return sorted(OPS)


def normalize_attrs(op: Op, attrs: dict) -> Attrs:
    """``attrs`` completed with ``op``'s defaults; an unknown or missing required
    attribute is refused."""
    attrs = dict(attrs or {})
    unknown = sorted(set(attrs) - set(op.defaults))
    if unknown:
        takes = ", ".join(sorted(op.defaults)) or "no attributes"
        raise GraphError(f"{op.name}: unknown attribute(s) {unknown}; it takes {takes}")
    out = {}
    for key, default in op.defaults.items():
        if key in attrs:
            out[key] = attrs[key]
        elif default is REQUIRED:
            raise GraphError(f"{op.name}: the attribute {key!r} is required")
        else:
            out[key] = default
    return Attrs(out, where=op.name)


def call(name_or_op, *args, **attrs) -> Call:
    """``Call(get_op(name), args, attrs)`` with the operand count and attributes
    checked (the defaults filled in)."""
    op = name_or_op if isinstance(name_or_op, Op) else get_op(name_or_op)
    for i, a in enumerate(args):
        if not isinstance(a, Expr):
            raise GraphError(f"{op.name}: operand {i} is a {type(a).__name__}, not a graph Expr (wrap numbers and "
                             "arrays with tecc.graph.const)")
    if op.num_inputs is not None and len(args) != op.num_inputs:
        raise GraphError(f"{op.name} takes {op.num_inputs} operand(s), got {len(args)}")
    return Call(op, args, normalize_attrs(op, attrs))


_LOADED = [False]


def _load_definitions() -> None:
    """Import the modules that register the operators (once)."""
    if not _LOADED[0]:
        _LOADED[0] = True
        from . import ops  # noqa: F401,PLC0415
