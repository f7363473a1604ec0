"""Print the IR as text that reads like code.

This is what ``print(tecc.lower(s, args, simple_mode=True))`` shows::

    primfn main(A: float32[64, 64], B: float32[64, 64], C: float32[64, 64]) {
      for (i, 0, 64) {
        for (j, 0, 64) {
          C[i*64 + j] = 0f
          for (k, 0, 64) {
            C[i*64 + j] = C[i*64 + j] + A[i*64 + k]*B[k*64 + j]
          }
        }
      }
    }

``//`` and ``%`` are floor division and modulo; ``truncdiv``/``truncmod`` are C's.
Distinct variables that share a name are told apart with a suffix (``i_1``).
"""
from __future__ import annotations

from . import expr as E
from . import keys
from . import stmt as S
from .functor import IRVisitor

# precedence: higher binds tighter
_PREC = {
    E.Or: 1, E.And: 2, E.Not: 3,
    E.EQ: 4, E.NE: 4, E.LT: 4, E.LE: 4, E.GT: 4, E.GE: 4,
    E.Add: 5, E.Sub: 5,
    E.Mul: 6, E.Div: 6, E.FloorDiv: 6, E.FloorMod: 6,
}
_SYM = {
    E.Add: "+", E.Sub: "-", E.Mul: "*", E.Div: "/", E.FloorDiv: "//", E.FloorMod: "%",
    E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=",
    E.And: " && ", E.Or: " || ",
}
_FUNC = {E.Min: "min", E.Max: "max", E.Mod: "truncmod"}


class TIRPrinter(IRVisitor):
    def __init__(self):
        self.names = {}      # Var/Buffer -> printed name
        self.used = {}       # name -> count
        self.lines = []
        self.indent = 0

    # names -------------------------------------------------------------------
    def name_of(self, obj, hint):
        n = self.names.get(obj)
        if n is None:
            hint = hint or "v"
            k = self.used.get(hint, 0)
            n = hint if k == 0 else f"{hint}_{k}"
            while n in self.used and k > 0:
                k += 1
                n = f"{hint}_{k}"
            self.used[hint] = k + 1
            self.used.setdefault(n, 1)
            self.names[obj] = n
        return n

    # expressions ---------------------------------------------------------------
    def expr(self, e, parent_prec=0):
        s, prec = self.visit(e)
        if prec < parent_prec:
            return f"({s})"
        return s

    def visit_IntImm(self, e):
        if e.dtype == "bool":
            return ("True" if e.value else "False"), 10
        if e.dtype == "int32":
            return str(e.value), (10 if e.value >= 0 else 7)
        short = {"int64": "i64", "int8": "i8", "int16": "i16", "uint8": "u8", "uint16": "u16",
                 "uint32": "u32", "uint64": "u64"}.get(e.dtype, e.dtype)
        return f"{e.value}{short}", (10 if e.value >= 0 else 7)

    def visit_FloatImm(self, e):
        v = e.value
        finite = v == v and abs(v) != float("inf")
        text = str(int(v)) if finite and v == int(v) and abs(v) < 1e16 else repr(v)
        suffix = {"float32": "f", "float64": "f64", "float16": "f16", "bfloat16": "bf16"}.get(e.dtype, e.dtype)
        return f"{text}{suffix}", (10 if v >= 0 else 7)

    def visit_StringImm(self, e):
        return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"', 10  # as TVM prints strings

    def visit_Var(self, v):
        return self.name_of(v, v.name), 10

    def visit_BinaryOp(self, e):
        cls = type(e)
        if cls in _FUNC:
            return f"{_FUNC[cls]}({self.expr(e.a)}, {self.expr(e.b)})", 10
        p = _PREC[cls]
        # left-associative: the right side needs parens at equal precedence
        return f"{self.expr(e.a, p)}{_SYM[cls] if cls not in (E.Add, E.Sub) else ' ' + _SYM[cls] + ' '}{self.expr(e.b, p + 1)}", p

    def visit_CmpOp(self, e):
        p = _PREC[type(e)]
        return f"{self.expr(e.a, p + 1)} {_SYM[type(e)]} {self.expr(e.b, p + 1)}", p

    def visit_And(self, e):
        return f"{self.expr(e.a, 2)} && {self.expr(e.b, 3)}", 2

    def visit_Or(self, e):
        return f"{self.expr(e.a, 1)} || {self.expr(e.b, 2)}", 1

    def visit_Not(self, e):
        return f"!{self.expr(e.a, 9)}", 8

    def visit_Select(self, e):
        return f"select({self.expr(e.condition)}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", 10

    def visit_Cast(self, e):
        return f"{e.dtype}({self.expr(e.value)})", 10

    def visit_Ramp(self, e):
        return f"ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", 10

    def visit_Broadcast(self, e):
        return f"broadcast({self.expr(e.value)}, {e.lanes})", 10

    def visit_Let(self, e):
        return f"(let {self.name_of(e.var, e.var.name)} = {self.expr(e.value)} in {self.expr(e.body)})", 10

    def visit_Call(self, e):
        if e.op == keys.REINTERPRET:  # the target type is the point of a bit cast: show it
            return f"reinterpret({e.dtype!r}, {self.expr(e.args[0])})", 10
        if e.op == keys.TYPE_ANNOTATION:  # the type is its whole content
            return f"type_annotation({e.dtype!r})", 10
        return f"{e.op}({', '.join(self.expr(a) for a in e.args)})", 10

    def _indices(self, idx):
        return ", ".join(self.expr(i) for i in idx)

    def visit_BufferLoad(self, e):
        return f"{self.name_of(e.buffer.data, e.buffer.name)}[{self._indices(e.indices)}]", 10

    def visit_ProducerLoad(self, e):
        return f"{e.producer.name}[{self._indices(e.indices)}]", 10

    def visit_Reduce(self, e):
        comb = e.combiner
        src = ", ".join(self.expr(s) for s in e.source)
        axes = ", ".join(self.name_of(iv.var, iv.var.name) for iv in e.axis)
        kind = _reducer_name(comb)
        cond = "" if E.is_const_int(e.condition, 1) else f", where={self.expr(e.condition)}"
        vi = f"[{e.value_index}]" if len(e.source) > 1 else ""
        return f"{kind}({src}, axis=[{axes}]{cond}){vi}", 10

    # statements ----------------------------------------------------------------
    def emit(self, text):
        self.lines.append("  " * self.indent + text)

    def block(self, header, body):
        self.emit(header + " {")
        self.indent += 1
        self.visit(body)
        self.indent -= 1
        self.emit("}")

    def visit_LetStmt(self, s):
        self.emit(f"let {self.name_of(s.var, s.var.name)} = {self.expr(s.value)}")
        self.visit(s.body)

    def visit_AttrStmt(self, s):
        node = s.node
        if isinstance(node, E.IterVar):
            what = node.thread_tag or self.name_of(node.var, node.var.name)
        elif isinstance(node, S.Buffer):
            what = self.name_of(node.data, node.name)
        elif isinstance(node, E.Var):
            what = self.name_of(node, node.name)
        else:
            what = str(node)
        self.emit(f"// attr [{what}] {s.attr_key} = {self.expr(s.value)}")
        self.visit(s.body)

    def visit_AssertStmt(self, s):
        self.emit(f"assert({self.expr(s.condition)}, {s.message!r})")
        self.visit(s.body)

    def visit_BufferStore(self, s):
        self.emit(f"{self.name_of(s.buffer.data, s.buffer.name)}[{self._indices(s.indices)}] = {self.expr(s.value)}")

    def visit_Allocate(self, s):
        b = s.buffer
        shape = ", ".join(self.expr(x) for x in b.shape)
        self.emit(f"allocate {self.name_of(b.data, b.name)}: {b.dtype}[{shape}], {b.scope}")
        self.visit(s.body)

    def visit_For(self, s):
        kind = {S.ForKind.SERIAL: "", S.ForKind.PARALLEL: "parallel ", S.ForKind.VECTORIZED: "vectorized ",
                S.ForKind.UNROLLED: "unrolled ", S.ForKind.THREAD_BINDING: ""}[s.kind]
        var = self.name_of(s.loop_var, s.loop_var.name)
        rng = f"{self.expr(s.min)}, {self.expr(s.extent)}"
        tail = ""
        if s.kind is S.ForKind.THREAD_BINDING and s.thread_binding is not None:
            tail = f" // {s.thread_binding.thread_tag}"
        for k, v in s.annotations:
            tail += f" // {k}={v}"
        self.block(f"{kind}for ({var}, {rng}){tail}", s.body)

    def visit_While(self, s):
        self.block(f"while ({self.expr(s.condition)})", s.body)

    def visit_SeqStmt(self, s):
        for x in s.seq:
            self.visit(x)

    def visit_IfThenElse(self, s):
        self.emit(f"if ({self.expr(s.condition)}) {{")
        self.indent += 1
        self.visit(s.then_case)
        self.indent -= 1
        if s.else_case is not None:
            self.emit("} else {")
            self.indent += 1
            self.visit(s.else_case)
            self.indent -= 1
        self.emit("}")

    def visit_Evaluate(self, s):
        self.emit(self.expr(s.value))

    def print_func(self, f: S.PrimFunc):
        params = []
        for p in f.params:
            b = f.buffer_map.get(p)
            if b is not None:
                shape = ", ".join(self.expr(x) for x in b.shape)
                params.append(f"{self.name_of(b.data, b.name)}: {b.dtype}[{shape}]")
            else:
                params.append(f"{self.name_of(p, p.name)}: {p.dtype}")
        self.emit(f"primfn {f.name}({', '.join(params)}) {{")
        self.indent += 1
        self.visit(f.body)
        self.indent -= 1
        self.emit("}")


def _reducer_name(comb):
    if len(comb.result) == 1:
        r = comb.result[0]
        if isinstance(r, E.Add):
            return "sum"
        if isinstance(r, E.Max):
            return "max"
        if isinstance(r, E.Min):
            return "min"
        if isinstance(r, E.Mul):
            return "prod"
    return "reduce"


def to_text(node) -> str:
    """The text of a function, statement, expression or buffer (see the module docs)."""
    p = TIRPrinter()
    if isinstance(node, S.PrimFunc):
        p.print_func(node)
        return "\n".join(p.lines)
    if isinstance(node, S.Stmt):
        p.visit(node)
        return "\n".join(p.lines)
    if isinstance(node, E.PrimExpr):
        return p.expr(node)
    if isinstance(node, S.Buffer):
        return repr(node)
    return object.__repr__(node)

