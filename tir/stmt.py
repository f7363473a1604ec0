"""Statement nodes, buffers and functions of the loop IR."""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from ..errors import TeccTypeError
from . import dtype as _dt
from . import keys
from .expr import Call, IntImm, PrimExpr, Ramp, Var
from .keys import GLOBAL_SYMBOL
from .node import Node, ir_node


class Stmt(Node):
    """Base of statements."""

    __slots__ = ()


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Buffer(Node):
    """A region of memory with a dtype, a shape and a storage scope.

    ``data`` is the handle variable that holds the base pointer; ``scope`` is
    ``"global"``, ``"shared"``, ``"local"`` (or ``"warp"``); TVM's empty scope ``""``
    is stored as ``"global"``.  Element ``A[i, j]`` lives at
    ``data[i * strides[0] + j * strides[1] + elem_offset]``: ``strides`` are explicit
    (possibly symbolic) or, when empty, row-major; ``elem_offset`` is ``None`` or an
    expression (a variable when the buffer stands for any slice of a larger array,
    whose value is then a multiple of ``offset_factor``).  ``align`` is the alignment
    of ``data`` in bytes (TVM's ``data_alignment``).  Buffers compare by identity.
    After storage flattening every buffer accessed in the IR is one-dimensional.

    Make one with :func:`decl_buffer`.
    """

    name: str
    dtype: str
    shape: tuple
    data: Var
    scope: str = "global"
    strides: tuple = ()
    elem_offset: PrimExpr | None = None
    align: int = 64
    offset_factor: int = 1

    #: access masks of :meth:`access_ptr`
    READ = 1
    WRITE = 2

    def __post_init__(self):
        if isinstance(self.shape, list):
            object.__setattr__(self, "shape", tuple(self.shape))
        if isinstance(self.strides, list):
            object.__setattr__(self, "strides", tuple(self.strides))
        if not self.scope:
            object.__setattr__(self, "scope", "global")

    def __repr__(self):
        shp = ", ".join(str(s) for s in self.shape)
        return f"buffer({self.name}, {self.dtype}, [{shp}], {self.scope!r})"

    __str__ = __repr__

    @property
    def data_alignment(self) -> int:
        """The alignment of ``data`` in bytes (TVM's name for :attr:`align`)."""
        return self.align

    # element access ------------------------------------------------------------
    def _indices(self, indices, what):
        from .op import convert
        if not isinstance(indices, (tuple, list)):
            indices = (indices,)
        if any(isinstance(i, slice) for i in indices):
            raise TeccTypeError(f"buffer {self.name!r}: {what} with a slice is not supported; index every "
                                "dimension with an expression (vload/vstore access vectors)")
        indices = tuple(convert(i) for i in indices)
        if len(indices) != len(self.shape):
            raise TeccTypeError(f"buffer {self.name!r} has {len(self.shape)} dimensions {list(self.shape)}, "
                                f"but {what} gives {len(indices)} indices")
        return indices

    def __getitem__(self, indices):
        return BufferLoad(self, self._indices(indices, "indexing"))

    def _vector_indices(self, begin, lanes, what):
        """``begin`` with its last index turned into a ramp of ``lanes`` elements."""
        indices = self._indices(begin, what)
        if lanes == 1:
            return indices
        if not indices:
            raise TeccTypeError(f"buffer {self.name!r} has no dimensions to {what} a vector from")
        return indices[:-1] + (Ramp(indices[-1], IntImm(indices[-1].dtype, 1), lanes),)

    def _lanes_of(self, dtype, what):
        if _dt.element(dtype) != _dt.element(self.dtype):
            raise TeccTypeError(f"buffer {self.name!r} holds {self.dtype}; {what} of {dtype} must use the "
                                f"same element type (cast the value, or declare the buffer as {dtype})")
        own = _dt.lanes(self.dtype)
        if _dt.lanes(dtype) % own:
            raise TeccTypeError(f"buffer {self.name!r} holds {self.dtype}; {what} of {dtype} needs a whole "
                                "number of its elements")
        return _dt.lanes(dtype) // own

    def vload(self, begin, dtype=None):
        """Load ``dtype`` (a vector type loads consecutive elements) from ``begin``.

        Parameters
        ----------
        begin : Expr or tuple of Expr
            The index of the first element, one per dimension.
        dtype : str, optional
            The dtype loaded (default: the buffer's); ``"float32x4"`` from a float32
            buffer loads four elements along the last dimension.
        """
        dtype = dtype or self.dtype
        lanes = self._lanes_of(dtype, "vload")
        return BufferLoad(self, self._vector_indices(begin, lanes, "vload"))

    def vstore(self, begin, value):
        """The statement storing ``value`` (a vector stores consecutive elements) at ``begin``."""
        from .op import convert
        value = convert(value, self.dtype)
        lanes = self._lanes_of(value.dtype, "vstore")
        return BufferStore(self, value, self._vector_indices(begin, lanes, "vstore"))

    # layout ------------------------------------------------------------------------
    def offset_of(self, indices):
        """``[element offset]`` of ``indices`` from ``data`` (a one-element list, as TVM)."""
        from .analysis.buffers import flat_index
        return [flat_index(self, self._indices(indices, "offset_of"))]

    def get_flattened_buffer(self) -> "Buffer":
        """The one-dimensional buffer over the same ``data`` that storage flattening
        accesses this buffer through (``elem_offset`` folds into its indices)."""
        from .analysis.buffers import buffer_size
        return Buffer(self.name, self.dtype, (buffer_size(self),), self.data, self.scope, (), None, self.align,
                      self.offset_factor)

    def access_ptr(self, access_mask, ptr_type="handle", content_lanes=1, offset=0, extent=None):
        """The address of the buffer's first element (plus ``offset`` elements), to hand
        to an external function.

        Parameters
        ----------
        access_mask : str or int
            ``"r"``, ``"w"``, ``"rw"`` or a mask of :attr:`READ` | :attr:`WRITE`: how the
            callee uses the memory.
        ptr_type : str
            The dtype of the resulting expression (``"handle"``).
        content_lanes : int
            Lanes of the vector type the callee sees; ``offset`` and the buffer's
            ``elem_offset`` then count vectors.
        offset : Expr
            Elements from the buffer's first element.
        extent : Expr, optional
            Elements the callee may touch (default: to the end of the buffer).

        Returns
        -------
        Call
            ``tvm_access_ptr(type_annotation(dtype), data, elem_offset + offset, extent,
            mask)``; C and CUDA print it as ``((T*)data + elem_offset + offset)``.
        """
        from .analysis.buffers import buffer_size
        from .op import convert
        mask = _access_mask(self, access_mask)
        offset = convert(offset)
        if not isinstance(content_lanes, int) or content_lanes < 1:
            raise TeccTypeError(f"buffer {self.name!r}: access_ptr content_lanes must be a positive int, "
                                f"got {content_lanes!r}")
        no_offset = isinstance(offset, IntImm) and offset.value == 0
        if extent is None:
            extent = buffer_size(self) if no_offset else buffer_size(self) - offset
        extent = convert(extent)
        start = self.elem_offset
        if isinstance(start, IntImm) and start.value == 0:
            start = None
        if content_lanes > 1:
            start = start // content_lanes if start is not None else None
            extent = extent // content_lanes
        if start is None:
            start = offset
        elif not no_offset:
            start = start + offset
        dtype = _dt.with_lanes(self.dtype, content_lanes) if content_lanes > 1 else self.dtype
        annotation = Call(dtype, keys.TYPE_ANNOTATION, ())
        return Call(ptr_type, keys.ACCESS_PTR, (annotation, self.data, start, extent, IntImm("int32", mask)))


def _access_mask(buf, mask) -> int:
    if isinstance(mask, str):
        bits = 0
        for ch in mask:
            if ch == "r":
                bits |= Buffer.READ
            elif ch == "w":
                bits |= Buffer.WRITE
            else:
                raise TeccTypeError(f"buffer {buf.name!r}: unknown access mask {mask!r}; use 'r', 'w' or 'rw'")
        return bits
    if isinstance(mask, int) and not isinstance(mask, bool) and 0 <= mask <= 3:
        return mask
    raise TeccTypeError(f"buffer {buf.name!r}: unknown access mask {mask!r}; use 'r', 'w', 'rw' or "
                        "Buffer.READ | Buffer.WRITE")


def decl_buffer(shape, dtype=None, name="buffer", data=None, strides=None, elem_offset=None, scope="",
                data_alignment=-1, offset_factor=0, buffer_type="", axis_separators=None, span=None):
    """Declare a buffer (TVM's ``tir.decl_buffer``, same parameters in the same order).

    Parameters
    ----------
    shape : Expr or tuple of Expr
        The extent of each dimension.
    dtype : str, optional
        The element type (default ``"float32"``).
    name : str
        The buffer's name (also the name of its data variable).
    data : Var, optional
        The handle variable holding the base pointer (default: a new one).
    strides : list of Expr, optional
        The distance in elements between neighbours along each dimension; symbolic
        strides are allowed.  Default: row-major.
    elem_offset : Expr, optional
        Where element ``[0, ..., 0]`` lies from ``data``, in elements.
    scope : str
        The memory scope: ``""`` or ``"global"``, ``"shared"``, ``"local"``.
    data_alignment : int
        The alignment of ``data`` in bytes; -1 means the default (64).
    offset_factor : int
        When non-zero and ``elem_offset`` is not given, ``elem_offset`` becomes a
        variable ``<name>_elem_offset`` known to be a multiple of ``offset_factor``:
        the buffer then stands for a slice at any such offset (tensor intrinsics
        bind it to the slice they are applied to; a function parameter's is 0, as
        tecc passes every array by the address of its first element).
    buffer_type : str
        Only ``""`` (``"auto_broadcast"`` is not supported).
    axis_separators : list of int, optional
        Only empty: tecc flattens every buffer to one dimension.
    span : ignored

    Returns
    -------
    Buffer
    """
    from .op import convert
    if isinstance(shape, (list, tuple)):
        shape = tuple(convert(s) for s in shape)
    else:
        shape = (convert(shape),)
    dtype = "float32" if dtype is None else str(dtype)
    if data is not None and not (isinstance(data, Var) and data.dtype == "handle"):
        raise TeccTypeError(
            f"decl_buffer {name!r}: data must be a handle Var (the fourth positional parameter is data, as "
            f"in TVM), got {data!r}; pass the memory scope by keyword: scope='shared'")
    if strides:
        strides = tuple(convert(s) for s in strides)
        if len(strides) != len(shape):
            raise TeccTypeError(f"decl_buffer {name!r}: {len(strides)} strides for {len(shape)} dimensions; "
                                "give one stride per dimension")
    else:
        strides = ()
    if not isinstance(offset_factor, int) or offset_factor < 0:
        raise TeccTypeError(f"decl_buffer {name!r}: offset_factor must be a non-negative int, got {offset_factor!r}")
    if not isinstance(data_alignment, int) or data_alignment == 0 or data_alignment < -1:
        raise TeccTypeError(f"decl_buffer {name!r}: data_alignment must be a positive number of bytes "
                            f"(or -1 for the default), got {data_alignment!r}")
    if buffer_type not in ("", "default"):
        raise TeccTypeError(f"decl_buffer {name!r}: buffer_type {buffer_type!r} is not supported; tecc buffers "
                            "do not broadcast (use te.compute with explicit broadcasting)")
    if axis_separators:
        raise TeccTypeError(f"decl_buffer {name!r}: axis_separators {list(axis_separators)} are not supported; "
                            "tecc flattens every buffer to one dimension")
    if elem_offset is None:
        if offset_factor:
            index_dtype = shape[0].dtype if shape else "int32"
            elem_offset = Var(f"{name}_elem_offset", index_dtype)
        else:
            elem_offset = IntImm("int32", 0)
    else:
        elem_offset = convert(elem_offset)
    if data is None:
        data = Var(name, "handle")
    return Buffer(name, dtype, shape, data, scope or "global", strides, elem_offset,
                  64 if data_alignment == -1 else data_alignment, offset_factor or 1)


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

    def __post_init__(self):
        # TVM's constructor takes Python numbers and lists: ``BufferStore(b, 1.0, [0, 1])``
        if type(self.indices) is not tuple or not all(isinstance(i, PrimExpr) for i in self.indices):
            from .op import convert
            object.__setattr__(self, "indices", tuple(convert(i) for i in self.indices))
        if not isinstance(self.value, PrimExpr):
            from .op import convert
            object.__setattr__(self, "value", convert(self.value, self.buffer.dtype))


@ir_node(("body",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Allocate(Stmt):
    """Allocate ``buffer`` (its shape gives the size) for the duration of ``body``.

    TVM's fields are read-only views of the buffer: ``buffer_var`` (its data),
    ``dtype``, ``extents`` (its shape) and ``condition`` (always true).
    """

    buffer: Buffer
    body: Stmt

    @property
    def buffer_var(self) -> Var:
        return self.buffer.data

    @property
    def dtype(self) -> str:
        return self.buffer.dtype

    @property
    def extents(self) -> tuple:
        return self.buffer.shape

    @property
    def condition(self) -> PrimExpr:
        return IntImm("bool", 1)


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

    def __post_init__(self):
        if (type(self.kind) is ForKind and isinstance(self.min, PrimExpr) and isinstance(self.extent, PrimExpr)
                and type(self.annotations) is tuple and isinstance(self.body, Stmt)):
            return  # the compiler's own constructions: nothing to convert
        if not isinstance(self.body, Stmt) and isinstance(self.thread_binding, Stmt):
            # TVM before v0.8: For(loop_var, min, extent, for_type, device_api, body)
            object.__setattr__(self, "body", self.thread_binding)
            object.__setattr__(self, "thread_binding", None)
        if not isinstance(self.kind, ForKind):
            kind = _OLD_FOR_TYPES.get(self.kind) if isinstance(self.kind, int) else None
            try:
                kind = kind or ForKind(self.kind)
            except ValueError:
                raise TeccTypeError(f"For: loop kind {self.kind!r} is not a ForKind (tir.ForKind.SERIAL, PARALLEL, "
                                    "VECTORIZED, UNROLLED, THREAD_BINDING)") from None
            object.__setattr__(self, "kind", kind)
        for name in ("min", "extent"):  # TVM's constructor takes Python ints
            value = getattr(self, name)
            if not isinstance(value, PrimExpr):
                from .op import convert
                object.__setattr__(self, name, convert(value, self.loop_var.dtype))
        if isinstance(self.annotations, dict):
            object.__setattr__(self, "annotations", tuple(self.annotations.items()))

    def annotation(self, key, default=None):
        for k, v in self.annotations:
            if k == key:
                return v
        return default


#: TVM's ForType before v0.8 (``tir.For.Serial`` ... ``tir.For.Unrolled``: 0 to 3)
_OLD_FOR_TYPES = {0: ForKind.SERIAL, 1: ForKind.PARALLEL, 2: ForKind.VECTORIZED, 3: ForKind.UNROLLED}
For.Serial, For.Parallel, For.Vectorized, For.Unrolled = (ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED,
                                                          ForKind.UNROLLED)


@ir_node(("condition", "body"))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class While(Stmt):
    condition: PrimExpr
    body: Stmt


@ir_node(("seq",))
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class SeqStmt(Stmt):
    seq: tuple

    def __post_init__(self):
        if not isinstance(self.seq, tuple):  # TVM passes a list
            object.__setattr__(self, "seq", tuple(self.seq))

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

    def __post_init__(self):
        if isinstance(self.value, int) and not isinstance(self.value, bool):  # TVM's Evaluate(0)
            object.__setattr__(self, "value", IntImm("int32", self.value))


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


@dataclass(frozen=True, eq=False, slots=True, repr=False, init=False)
class PrimFunc(Node):
    """A function over buffers: ``params`` are the arguments in call order.

    ``buffer_map`` maps each param (a handle :class:`Var`) to its :class:`Buffer`,
    whose ``data`` is that very variable.  ``attrs`` holds e.g. ``global_symbol``, ``target`` and, once split for a GPU,
    ``launch`` information.

    Parameters
    ----------
    params : list of Var or Buffer
        A :class:`Buffer` (or what ``ir_builder`` returns for one) becomes the
        parameter ``buffer.data`` with the buffer in ``buffer_map``.
    body : Stmt
    ret_type : ignored
        TVM's return type (tecc functions return a status code).
    buffer_map : dict, optional
        Param -> Buffer.
    attrs : dict, optional
        Function attributes; ``"global_symbol"`` names the compiled function.
    span : ignored

    ``PrimFunc(params, body, buffer_map, attrs)`` (a dict third) is also accepted.
    """

    params: tuple
    body: Stmt
    buffer_map: dict
    attrs: dict
    ret_type: object

    def __init__(self, params, body, ret_type=None, buffer_map=None, attrs=None, span=None):
        if isinstance(ret_type, dict):  # the older order: PrimFunc(params, body, buffer_map, attrs)
            if attrs is not None:
                raise TeccTypeError("PrimFunc(params, body, buffer_map, attrs) takes no further argument; use "
                                    "TVM's order PrimFunc(params, body, ret_type, buffer_map, attrs)")
            ret_type, buffer_map, attrs = None, ret_type, buffer_map
        if not isinstance(body, Stmt):
            raise TeccTypeError(f"PrimFunc body must be a statement (ir_builder's ib.get()), got "
                                f"{type(body).__name__}")
        bmap = dict(buffer_map or {})
        plist = []
        for i, p in enumerate(params):
            if not isinstance(p, (Buffer, Var)) and hasattr(p, "asobject"):
                p = p.asobject()  # an ir_builder pointer or buffer
            if isinstance(p, Buffer):  # its data variable is the parameter (tecc's convention)
                bmap[p.data] = p
                plist.append(p.data)
            elif isinstance(p, Var):
                plist.append(p)
            else:
                raise TeccTypeError(f"PrimFunc parameter {i} is a {type(p).__name__}; parameters are Vars "
                                    "(scalars or handles) or Buffers (tir.decl_buffer)")
        object.__setattr__(self, "params", tuple(plist))
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "buffer_map", bmap)
        object.__setattr__(self, "attrs", dict(attrs or {}))
        object.__setattr__(self, "ret_type", ret_type)

    def with_body(self, body, span=None):
        """The same function with ``body`` (itself when ``body`` is its body)."""
        return self if body is self.body else replace(self, body=body)

    def with_attr(self, key, value=None):
        """The same function with attribute ``key`` set to ``value``; ``key`` may be a
        dict of several attributes."""
        attrs = dict(self.attrs)
        if isinstance(key, dict):
            attrs.update(key)
        else:
            attrs[key] = value
        return replace(self, attrs=attrs)

    def without_attr(self, key):
        """The same function without attribute ``key``."""
        attrs = {k: v for k, v in self.attrs.items() if k != key}
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
        functions = dict(functions or {})
        for name, func in functions.items():
            if not isinstance(name, str):
                raise TeccTypeError(f"IRModule keys are function names (str), got {name!r}")
            if not isinstance(func, PrimFunc):
                raise TeccTypeError(f"IRModule function {name!r} is a {type(func).__name__}, not a tir.PrimFunc")
        self.functions = functions
        self.attrs = dict(attrs or {})

    @staticmethod
    def from_expr(func: "PrimFunc", functions=None, type_defs=None) -> "IRModule":
        """A module holding ``func`` under its name (TVM's ``IRModule.from_expr``),
        plus ``functions`` (a dict of further functions) if given."""
        # a model function (tecc.graph, Relay's IRModule.from_expr) says how to wrap itself:
        # tir cannot import the model layer, which sits above it
        hook = getattr(type(func), "_ir_module_from_expr", None)
        if hook is not None:
            return hook(func, functions)
        if not isinstance(func, PrimFunc):
            raise TeccTypeError(f"IRModule.from_expr takes a tir.PrimFunc, got {type(func).__name__}")
        funcs = dict(functions or {})
        funcs[func.name] = func
        return IRModule(funcs)

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
        if not isinstance(func, PrimFunc):
            raise TeccTypeError(f"IRModule function {name!r} must be a tir.PrimFunc, got {type(func).__name__}")
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

    def _repr_html_(self) -> str:
        """The text form, highlighted (Jupyter)."""
        from .. import display
        return display.code_html(self.script(), "tir")
