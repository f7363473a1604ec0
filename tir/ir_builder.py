"""Write TIR statements by hand, as Python code (TVM's ``tir.ir_builder``).

An :class:`IRBuilder` keeps a stack of open scopes.  Each ``with`` block
(``for_range``, ``if_scope``, ``new_scope``...) opens one; statements emitted inside
become its body when the block ends.  Indexing a pointer or buffer returned by
``allocate``, ``pointer`` or ``buffer_ptr`` gives a load; assigning to it emits a
store::

    ib = tir.ir_builder.create()
    n = te.var("n")
    A = ib.allocate("float32", n, name="A")
    with ib.for_range(0, n, name="i") as i:
        with ib.if_scope(i % 2 == 0):
            A[i] = A[i] + 1.0
    stmt = ib.get()

A CUDA kernel is written with ``scope_attr(te.thread_axis("threadIdx.x"),
"thread_extent", n)``: the IterVar's variable is the thread index inside the scope.

Choices
-------
* A statement that wraps what follows it (``let``, ``allocate``, ``scope_attr``) is
  emitted as a function of its body; the body is everything emitted after it in the
  same scope.
* Storing a Python number converts it to the pointer's dtype; storing an expression
  of another element type is an error (cast it with ``.astype``).
* A single index into a buffer of several dimensions is a row-major element number,
  split into one index per dimension (as TVM does).
"""
from __future__ import annotations

from ..errors import TeccTypeError
from . import dtype as _dt
from . import expr as E
from . import keys
from . import stmt as S
from .op import convert, likely as _likely, max as _max

#: ``for_range`` kinds -> loop kinds
_FOR_KINDS = {
    "serial": S.ForKind.SERIAL,
    "parallel": S.ForKind.PARALLEL,
    "vectorize": S.ForKind.VECTORIZED,
    "unroll": S.ForKind.UNROLLED,
}


class IRBuilderError(TeccTypeError):
    """The IR builder was used out of order (``else_scope`` after no ``if_scope``,
    ``get`` inside an open scope...)."""


class WithScope:
    """What the scope methods return: ``with`` gives ``value`` and calls ``exit_cb``
    at the end of the block."""

    def __init__(self, value, exit_cb):
        self._value = value
        self._exit_cb = exit_cb

    def __enter__(self):
        return self._value

    def __exit__(self, ptype, value, trace):
        if ptype is None:
            self._exit_cb()


class BufferVar:
    """A buffer (or pointer) of an :class:`IRBuilder`: ``x[i]`` loads, ``x[i] = v``
    stores.  ``asobject()`` is the :class:`~tecc.tir.Buffer`."""

    def __init__(self, builder, buffer, content_type):
        self._builder = builder
        self._buffer = buffer
        self._content_type = content_type

    def asobject(self) -> S.Buffer:
        return self._buffer

    @property
    def buffer(self) -> S.Buffer:
        return self._buffer

    @property
    def data(self) -> E.Var:
        return self._buffer.data

    @property
    def dtype(self) -> str:
        return self._content_type

    @property
    def name(self) -> str:
        return self._buffer.name

    def _normalize_index(self, index):
        if not isinstance(index, (tuple, list)):
            index = (index,)
        index = [convert(i) for i in index]
        shape = self._buffer.shape
        if len(index) == 1 and len(shape) > 1:
            return _unravel(index[0], shape)
        if len(index) != len(shape):
            raise IRBuilderError(f"buffer {self._buffer.name!r} has {len(shape)} dimensions {list(shape)}; "
                                 f"index it with {len(shape)} indices (or one row-major element number), "
                                 f"got {len(index)}")
        return tuple(index)

    def __getitem__(self, index):
        return E.BufferLoad(self._buffer, self._normalize_index(index))

    def __setitem__(self, index, value):
        index = self._normalize_index(index)
        if isinstance(value, BufferVar):
            raise IRBuilderError(f"cannot store the buffer {value.name!r} into {self.name!r}[...]; "
                                 "store one of its elements, e.g. B[i]")
        value = convert(value, self._content_type)
        if _dt.element(value.dtype) != _dt.element(self._content_type):
            raise IRBuilderError(
                f"storing a {value.dtype} value into {self.name!r}, which holds {self._content_type}; "
                f"cast it first: value.astype({_dt.element(self._content_type)!r})")
        self._builder.emit(S.BufferStore(self._buffer, value, index))

    def __repr__(self):
        return f"BufferVar({self._buffer!r})"


def _unravel(flat, shape):
    """Row-major indices of element number ``flat`` of an array of ``shape``."""
    out = []
    rest = flat
    for extent in reversed(shape[1:]):
        extent = convert(extent)
        out.append(rest % extent)
        rest = rest // extent
    out.append(rest)
    return tuple(reversed(out))


def _stmt_of(what, x):
    if isinstance(x, S.Stmt):
        return x
    if isinstance(x, E.PrimExpr):
        return S.Evaluate(x)
    raise IRBuilderError(f"{what} takes a statement or an expression, got {type(x).__name__} {x!r}")


class IRBuilder:
    """Builds a statement from nested ``with`` scopes (see the module docs)."""

    def __init__(self):
        self._seq_stack = [[]]
        self.nidx = 0

    # the scope stack ---------------------------------------------------------------
    def _pop_seq(self):
        """The statement of the innermost scope, closed."""
        items = self._seq_stack.pop()
        body = None
        for item in reversed(items):
            if callable(item):
                body = item(body if body is not None else S.Evaluate(E.IntImm("int32", 0)))
            else:
                body = item if body is None else S.seq(item, body)
        if body is None:
            body = S.Evaluate(E.IntImm("int32", 0))
        return body

    def _open(self):
        self._seq_stack.append([])

    def emit(self, stmt):
        """Append a statement (an expression is evaluated for its effect); a callable
        ``f(body) -> Stmt`` wraps everything emitted after it in this scope."""
        if not callable(stmt) or isinstance(stmt, (S.Stmt, E.PrimExpr)):
            stmt = _stmt_of("emit", stmt)
        self._seq_stack[-1].append(stmt)

    # scopes ------------------------------------------------------------------------
    def scope_attr(self, node, attr_key, value):
        """Annotate what follows with ``AttrStmt(node, attr_key, value)``.

        ``attr_key == "thread_extent"`` with ``node = te.thread_axis("threadIdx.x")``
        runs what follows on ``value`` threads (blocks for ``blockIdx``), the IterVar
        standing for the thread index.
        """
        if isinstance(node, str):
            node = E.StringImm(node)
        elif isinstance(node, BufferVar):
            node = node.asobject()
        if isinstance(value, str):
            value = E.StringImm(value)
        else:
            value = convert(value)
        if keys.is_thread_attr(attr_key):
            if not isinstance(node, E.IterVar) or not node.thread_tag:
                raise IRBuilderError(
                    f"scope_attr(..., {attr_key!r}, ...) binds a thread index: pass a thread axis such as "
                    f"te.thread_axis('threadIdx.x'), got {node!r}")
            if not _dt.is_integer(value.dtype):
                raise IRBuilderError(f"the {attr_key} of {node.thread_tag} must be an integer, got {value!r}")
            if not isinstance(value, E.IntImm):
                value = _max(value, E.IntImm(value.dtype, 1))  # a symbolic extent may be 0
            elif value.value < 1:
                raise IRBuilderError(f"the {attr_key} of {node.thread_tag} must be at least 1, got {value.value}")
        self.emit(lambda body: S.AttrStmt(node, attr_key, value, body))

    def for_range(self, begin, end, name="i", dtype=None, kind="serial"):
        """A loop over ``[begin, end)``; ``with`` gives the loop variable.

        ``name="i"`` picks i, j, k, then i_0, i_1... for successive loops.  ``kind``
        is "serial", "parallel", "vectorize" or "unroll".  ``dtype`` defaults to int64
        when a bound is int64, else int32.
        """
        if kind not in _FOR_KINDS:
            raise IRBuilderError(f"for_range kind {kind!r} is unknown; use one of {list(_FOR_KINDS)}")
        if name == "i":
            name = chr(ord("i") + self.nidx) if self.nidx < 3 else f"i_{self.nidx - 3}"
            self.nidx += 1
        begin, end = convert(begin), convert(end)
        for bound, what in ((begin, "begin"), (end, "end")):
            if not _dt.is_integer(bound.dtype) or _dt.lanes(bound.dtype) != 1:
                raise IRBuilderError(f"for_range {name!r}: {what} must be a scalar integer, got {bound!r} "
                                     f"of dtype {bound.dtype}")
        if dtype is None:
            dtype = "int64" if "int64" in (begin.dtype, end.dtype) else "int32"
        begin, end = _as_index(begin, dtype), _as_index(end, dtype)
        loop_var = E.Var(name, dtype)
        extent = end if E.is_const_int(begin, 0) else end - begin
        self._open()

        def _exit():
            self.emit(S.For(loop_var, begin, extent, _FOR_KINDS[kind], self._pop_seq()))

        return WithScope(loop_var, _exit)

    def while_loop(self, condition):
        """Repeat the block while ``condition`` holds."""
        condition = _condition("while_loop", condition)
        self._open()

        def _exit():
            self.emit(S.While(condition, self._pop_seq()))

        return WithScope(None, _exit)

    def if_scope(self, cond):
        """Run the block when ``cond`` holds (an ``else_scope`` may follow)."""
        cond = _condition("if_scope", cond)
        self._open()

        def _exit():
            self.emit(S.IfThenElse(cond, self._pop_seq(), None))

        return WithScope(None, _exit)

    def else_scope(self):
        """The else branch of the ``if_scope`` just closed."""
        scope = self._seq_stack[-1]
        prev = scope[-1] if scope else None
        if not isinstance(prev, S.IfThenElse) or prev.else_case is not None:
            raise IRBuilderError("else_scope must directly follow an if_scope (without an else) in the same scope")
        scope.pop()
        self._open()

        def _exit():
            self.emit(S.IfThenElse(prev.condition, prev.then_case, self._pop_seq()))

        return WithScope(None, _exit)

    def new_scope(self):
        """A nested scope: it bounds what a ``let``, ``allocate`` or ``scope_attr``
        inside wraps."""
        self._open()

        def _exit():
            self.emit(self._pop_seq())

        return WithScope(None, _exit)

    # definitions -------------------------------------------------------------------
    def let(self, var_name, value):
        """Bind a new variable to ``value`` for what follows; returns the variable."""
        value = convert(value)
        var = E.Var(var_name, value.dtype)
        self.emit(lambda body: S.LetStmt(var, value, body))
        return var

    def allocate(self, dtype, shape, name="buf", axis_separators=None, scope=""):
        """Allocate a buffer for what follows in this scope; returns it (a
        :class:`BufferVar`).  ``scope``: "" (global), "shared", "local"."""
        if not isinstance(shape, (list, tuple)):
            shape = (shape,)
        buf = S.decl_buffer(shape, dtype, name, scope=scope, axis_separators=axis_separators)
        self.emit(lambda body: S.Allocate(buf, body))
        return BufferVar(self, buf, buf.dtype)

    def pointer(self, content_type, name="ptr", scope=""):
        """A pointer to ``content_type`` elements (a buffer of one element, as in TVM):
        pass it to ``tir.PrimFunc`` as a parameter."""
        buf = S.decl_buffer((1,), content_type, name, scope=scope)
        return BufferVar(self, buf, buf.dtype)

    def buffer_ptr(self, buf, shape=None):
        """Index ``buf`` (a :class:`~tecc.tir.Buffer`) through the builder; with
        ``shape``, through a view of that shape over the same memory."""
        if isinstance(buf, BufferVar):
            buf = buf.asobject()
        if not isinstance(buf, S.Buffer):
            raise IRBuilderError(f"buffer_ptr takes a tir.Buffer (tir.decl_buffer, or the buffers te.extern "
                                 f"passes), got {type(buf).__name__}")
        if shape is not None:
            shape = tuple(convert(s) for s in (shape if isinstance(shape, (list, tuple)) else (shape,)))
            buf = S.Buffer(buf.name, buf.dtype, shape, buf.data, buf.scope, (), buf.elem_offset, buf.align,
                           buf.offset_factor)
        return BufferVar(self, buf, buf.dtype)

    def likely(self, expr):
        """``expr`` marked as usually true."""
        return _likely(_condition("likely", expr))

    def get(self):
        """The statement built (call it once, outside every ``with`` block)."""
        if len(self._seq_stack) != 1:
            raise IRBuilderError(f"ib.get() called inside {len(self._seq_stack) - 1} open scope(s); "
                                 "call it after the with blocks end")
        stmt = self._pop_seq()
        self._seq_stack = [[]]
        return stmt


def _as_index(e, dtype):
    if e.dtype == dtype:
        return e
    if isinstance(e, E.IntImm):
        return E.IntImm(dtype, e.value)
    return E.Cast(dtype, e)


def _condition(what, cond):
    cond = convert(cond)
    if not isinstance(cond, E.PrimExpr):
        raise IRBuilderError(f"{what} takes a boolean expression, got {cond!r}")
    return cond


def create() -> IRBuilder:
    """A new :class:`IRBuilder`."""
    return IRBuilder()
