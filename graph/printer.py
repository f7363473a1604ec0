"""The text form of the graph IR, in the style of Relay's::

    fn (%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) -> Tensor[(1, 4, 8, 8), float32] {
      %0 = nn.conv2d(%data, %w, padding=(1, 1, 1, 1));
      %1 = nn.relu(%0);
      %1
    }

Every call, tuple and tuple access gets a number (``%0``...), in the order the
values are computed; parameters print by name; a scalar constant prints inline
(``1f``, ``3i64``), a larger one as ``meta[Constant][k]`` with its shape and dtype.
A fused group prints as a function bound to a number, called after it.  Types,
when inferred, are printed after each value as a comment (``/* ty=... */``).
"""
from __future__ import annotations

import numpy as np

from .ir import Call, Constant, Function, Tuple, TupleGetItem, Var, children, post_order

_SUFFIX = {"float32": "f", "float64": "f64", "float16": "f16", "int64": "i64", "int32": "", "bool": ""}


def _scalar(c: Constant) -> str:
    v = c.data.item()
    dtype = str(c.data.dtype)
    if dtype == "bool":
        return "True" if v else "False"
    suffix = _SUFFIX.get(dtype, dtype)
    if isinstance(v, float):
        text = repr(float(np.float32(v))) if dtype == "float32" else repr(v)
        return text + suffix
    return f"{v}{suffix}"


def _attr(v) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


class _Printer:
    def __init__(self, show_types: bool):
        self.show_types = show_types
        self.names = {}
        self.counter = 0
        self.constants = []
        self.lines = []

    def name(self, node) -> str:
        if isinstance(node, Var):
            return f"%{node.name_hint}"
        if isinstance(node, Constant):
            if node.data.ndim == 0:
                return _scalar(node)
            if node not in self.names:
                self.names[node] = f"meta[Constant][{len(self.constants)}]"
                self.constants.append(node)
            return self.names[node]
        return self.names[node]

    def type_note(self, node) -> str:
        if self.show_types and node.has_type:
            return f" /* ty={node.checked_type} */"
        return ""

    def emit(self, indent: str, node) -> None:
        """Lines computing ``node`` and everything it needs, not yet printed."""
        # a fused Function is printed as a whole by define(); what is named is printed already
        order = post_order(node, lambda n: [] if isinstance(n, Function) else children(n), exclude=set(self.names))
        for n in order:
            if isinstance(n, (Var, Constant)):
                continue
            if isinstance(n, Function):
                self.define(indent, n)
                continue
            text = self.expr_text(n)
            ref = f"%{self.counter}"
            self.counter += 1
            self.names[n] = ref
            self.lines.append(f"{indent}{ref} = {text};{self.type_note(n)}")

    def expr_text(self, n) -> str:
        if isinstance(n, Call):
            args = [self.name(a) for a in n.args]
            args += [f"{k}={_attr(v)}" for k, v in n.attrs.items()]
            callee = n.op.name if not isinstance(n.op, Function) else self.name(n.op)
            return f"{callee}(" + ", ".join(args) + ")"
        if isinstance(n, Tuple):
            inner = ", ".join(self.name(f) for f in n.fields)
            return "(" + inner + ("," if len(n.fields) == 1 else "") + ")"
        if isinstance(n, TupleGetItem):
            return f"{self.name(n.tuple_value)}.{n.index}"
        raise TypeError(f"cannot print a {type(n).__name__}")

    def signature(self, fn: Function) -> str:
        params = []
        for p in fn.params:
            ty = p.type_annotation or (p.checked_type if p.has_type else None)
            params.append(f"%{p.name_hint}" + (f": {ty}" if ty is not None else ""))
        attrs = [f"{k}={_attr(v)}" for k, v in fn.attrs.items()]
        head = "fn (" + ", ".join(params + attrs) + ")"
        ret = fn.ret_type or (fn.body.checked_type if fn.body.has_type else None)
        return head + (f" -> {ret}" if ret is not None else "")

    def define(self, indent: str, fn: Function) -> None:
        """A fused function: ``%k = fn (...) { ... };``"""
        ref = f"%{self.counter}"
        self.counter += 1
        self.lines.append(f"{indent}{ref} = {self.signature(fn)} {{")
        self.emit(indent + "  ", fn.body)
        self.lines.append(f"{indent}  {self.name(fn.body)}")
        self.lines.append(f"{indent}}};")
        self.names[fn] = ref

    def function(self, fn: Function) -> str:
        self.lines.append(f"{self.signature(fn)} {{")
        self.emit("  ", fn.body)
        self.lines.append(f"  {self.name(fn.body)}")
        self.lines.append("}")
        return self.finish()

    def finish(self) -> str:
        text = "\n".join(self.lines)
        if self.constants:
            notes = [f"  meta[Constant][{k}]: Tensor[{c.data.shape}, {c.data.dtype}]"
                     for k, c in enumerate(self.constants)]
            text += "\n/* constants:\n" + "\n".join(notes) + "\n*/"
        return text


def astext(expr, show_types: bool = False, toplevel: bool = True) -> str:
    """The text form of a graph expression or function (see the module's
    docstring); ``show_types`` adds each value's inferred type.  ``toplevel=False``
    prints a function without the leading ``fn`` keyword (for ``def @main(...)``)."""
    p = _Printer(show_types)
    if isinstance(expr, Function):
        text = p.function(expr)
        return text if toplevel else text[len("fn "):]
    p.emit("", expr)
    p.lines.append(p.name(expr))
    return p.finish()
