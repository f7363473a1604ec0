"""Well-formedness checks run between passes (behind ``PassOptions.verify``).

:func:`verify_well_formed` raises ``AssertionError`` -- a broken IR is a compiler
bug, not a user mistake -- whose message names the problem and shows the printed
IR of the statement around the bad node.
"""
from __future__ import annotations

from .. import dtype as _dt
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..functor import IRVisitor
from ..printer import to_text

_MAX_CONTEXT_LINES = 40


def _context(stmt) -> str:
    if stmt is None:
        return "<no enclosing statement>"
    lines = to_text(stmt).splitlines()
    if len(lines) > _MAX_CONTEXT_LINES:
        lines = lines[:_MAX_CONTEXT_LINES] + [f"... ({len(lines) - _MAX_CONTEXT_LINES} more lines)"]
    return "\n".join("    " + ln for ln in lines)


class _Verifier(IRVisitor):
    def __init__(self, func, require_flat):
        self.func = func
        self.require_flat = require_flat
        self.defined = set()
        self.stmt_stack = []
        self.errors = []

    # reporting ---------------------------------------------------------------
    def fail(self, message):
        where = self.stmt_stack[-1] if self.stmt_stack else None
        raise AssertionError(
            f"ill-formed TIR in function {self.func.name!r}: {message}\n"
            f"  around:\n{_context(where)}")

    # scopes ------------------------------------------------------------------
    def bind(self, var, what):
        if not isinstance(var, E.Var):
            self.fail(f"{what} binds {var!r}, which is not a Var")
        if var in self.defined:
            self.fail(f"variable {var.name!r} is bound again by a {what} inside its own scope")
        self.defined.add(var)

    def unbind(self, var):
        self.defined.discard(var)

    def check_buffer(self, buf):
        if self.require_flat and len(buf.shape) != 1:
            self.fail(f"buffer {buf.name!r} has {len(buf.shape)} dimensions after flattening")
        if buf.data not in self.defined:
            self.fail(f"buffer {buf.name!r} uses the undefined data variable {buf.data.name!r}")

    # statements --------------------------------------------------------------
    def visit_stmt(self, s):
        self.stmt_stack.append(s)
        try:
            IRVisitor.generic_visit(self, s)
        finally:
            self.stmt_stack.pop()

    def visit_Stmt(self, s):
        self.visit_stmt(s)

    def visit_For(self, s):
        self.stmt_stack.append(s)
        try:
            for e, what in ((s.min, "min"), (s.extent, "extent")):
                if not _dt.is_integer(e.dtype) or _dt.lanes(e.dtype) != 1:
                    self.fail(f"loop {s.loop_var.name!r} has a {what} of dtype {e.dtype}, not a scalar integer")
                self.visit(e)
            if not _dt.is_integer(s.loop_var.dtype):
                self.fail(f"loop variable {s.loop_var.name!r} has dtype {s.loop_var.dtype}")
            self.bind(s.loop_var, "loop")
            self.visit(s.body)
            self.unbind(s.loop_var)
        finally:
            self.stmt_stack.pop()

    def visit_LetStmt(self, s):
        self.stmt_stack.append(s)
        try:
            self.visit(s.value)
            if s.var.dtype != s.value.dtype:
                self.fail(f"let {s.var.name!r} of dtype {s.var.dtype} is given a value of dtype {s.value.dtype}")
            self.bind(s.var, "let")
            self.visit(s.body)
            self.unbind(s.var)
        finally:
            self.stmt_stack.pop()

    def visit_AttrStmt(self, s):
        self.stmt_stack.append(s)
        try:
            self.visit(s.value)
            iv = s.node
            if keys.is_thread_attr(s.attr_key) and isinstance(iv, E.IterVar):
                self.bind(iv.var, "thread_extent attribute")
                self.visit(s.body)
                self.unbind(iv.var)
            else:
                self.visit(s.body)
        finally:
            self.stmt_stack.pop()

    def visit_Allocate(self, s):
        self.stmt_stack.append(s)
        try:
            buf = s.buffer
            for extent in buf.shape:
                self.visit(extent)
            if self.require_flat and len(buf.shape) != 1:
                self.fail(f"allocation of {buf.name!r} has {len(buf.shape)} dimensions after flattening")
            self.bind(buf.data, "allocate")
            self.visit(s.body)
            self.unbind(buf.data)
        finally:
            self.stmt_stack.pop()

    def visit_BufferStore(self, s):
        self.stmt_stack.append(s)
        try:
            self.check_buffer(s.buffer)
            self.check_indices(s.buffer, s.indices)
            self.visit(s.value)
            lanes = max([1] + [_dt.lanes(i.dtype) for i in s.indices])
            want = _dt.with_lanes(s.buffer.dtype, lanes) if lanes > 1 else s.buffer.dtype
            if s.value.dtype != want:
                self.fail(f"store to {s.buffer.name!r} ({s.buffer.dtype}, {lanes} lane(s)) "
                          f"of a value of dtype {s.value.dtype}")
        finally:
            self.stmt_stack.pop()

    def check_indices(self, buf, indices):
        if len(indices) != len(buf.shape):
            self.fail(f"access of {buf.name!r} with {len(indices)} indices; it has {len(buf.shape)} dimensions")
        for i in indices:
            if not _dt.is_integer(i.dtype):
                self.fail(f"index {to_text(i)} of {buf.name!r} has dtype {i.dtype}")
            self.visit(i)

    # expressions -------------------------------------------------------------
    def visit_Var(self, v):
        if v not in self.defined:
            self.fail(f"variable {v.name!r} is used but not defined")

    def visit_Let(self, e):
        self.visit(e.value)
        self.bind(e.var, "let expression")
        self.visit(e.body)
        self.unbind(e.var)

    def visit_BufferLoad(self, e):
        self.check_buffer(e.buffer)
        self.check_indices(e.buffer, e.indices)

    def visit_Reduce(self, e):
        self.fail("a Reduce expression is left in lowered TIR")

    def visit_ProducerLoad(self, e):
        self.fail(f"a tensor read {e.producer.name}[...] is left in lowered TIR")


def verify_well_formed(func: S.PrimFunc, require_flat: bool = False) -> None:
    """Check that ``func`` is well formed; raise ``AssertionError`` if not.

    Checked: every variable used is defined (a parameter, a symbolic shape
    variable of an argument buffer, a loop, let or thread variable, an allocated
    buffer's data); no variable is bound again inside its own scope; loop bounds
    are scalar integers; a stored value has the buffer's dtype (with the lanes of
    the index); and, with ``require_flat``, every accessed buffer is 1-D.

    Parameters
    ----------
    func : PrimFunc
        The function to check.
    require_flat : bool
        Also require every buffer access and allocation to be one-dimensional.
    """
    v = _Verifier(func, require_flat)
    for p in func.params:
        if not isinstance(p, E.Var):
            raise AssertionError(f"parameter {p!r} of {func.name!r} is not a Var")
        v.defined.add(p)
    for p, buf in func.buffer_map.items():
        v.defined.add(buf.data)
        for extent in tuple(buf.shape) + tuple(buf.strides):
            for var in _vars_of(extent):
                v.defined.add(var)
        if buf.elem_offset is not None:
            for var in _vars_of(buf.elem_offset):
                v.defined.add(var)
    v.visit(func.body)


def _vars_of(e):
    from ..functor import collect_vars
    if not isinstance(e, E.PrimExpr):
        return ()
    return collect_vars(e)
