"""A scheduled computation printed back as hybrid script (:func:`build`), and the
module that holds such a script as source text (:class:`HybridModule`)."""
from __future__ import annotations

import ast
import keyword
import re

from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import keys
from ...tir import stmt as S
from ...tir.functor import collect_vars, post_order_visit
from ..tensor import Tensor
from .runtime import HYBRID_GLOBALS
from .utils import HybridScriptError, Source


class HybridModule:
    """A hybrid script held as source text: TVM's ``te.hybrid.HybridModule``.

    Called with numpy arrays it runs the function in Python; called with te
    tensors it parses the source into a :class:`~tecc.te.hybrid.HybridOp`, as a
    decorated script does.  :meth:`save` writes the source to a ``.py`` file and
    :meth:`load` reads one back.

    Parameters
    ----------
    src : str, optional
        The source of one function (``def name(args): ...``).
    name : str, optional
        The module's name (the function's name when omitted).
    """

    def __init__(self, src=None, name=None):
        self.src_ = None
        self.name = name
        self.root_ = None
        self.func_ = None
        self._source = None
        if src is not None:
            self._set_source(src, f"<hybrid module {name or 'source'}>")

    def __call__(self, *args):
        from . import _arg_mode, make_op, to_parser_args

        if self.root_ is None:
            raise HybridScriptError("this HybridModule holds no script yet; load() one or build() it first")
        if _arg_mode(self.name, args) == "te":
            return make_op(self._parser(to_parser_args(self.root_, args)))
        return self.func_(*args)

    def get_source(self):
        """The script's source text."""
        return self.src_

    def save(self, path):
        """Write the source to ``path`` (``.py`` is appended when missing)."""
        if not str(path).endswith(".py"):
            path = str(path) + ".py"
        with open(path, "w") as f:
            f.write(self.src_)

    def load(self, path):
        """Read the script from the Python file ``path`` (one function definition;
        imports and decorators around it are ignored)."""
        with open(path) as f:
            text = f.read()
        self._set_source(text, str(path))

    def _set_source(self, text, filename):
        try:
            tree = ast.parse(text)
        except SyntaxError as err:
            raise HybridScriptError(f"hybrid module {filename}: the source is not valid Python ({err})") from None
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        if len(defs) != 1:
            raise HybridScriptError(f"hybrid module {filename}: the source must define exactly one function, "
                                    f"found {len(defs)}")
        root = defs[0]
        self.src_ = text
        self.root_ = root
        if self.name is None:
            self.name = root.name
        self._source = Source(text, root.name, filename, 1)
        # the Python function, without decorators, with the hybrid names in scope
        plain = ast.FunctionDef(root.name, root.args, root.body, [], root.returns, root.type_comment,
                                **({"type_params": []} if hasattr(root, "type_params") else {}))
        ast.copy_location(plain, root)
        module = ast.fix_missing_locations(ast.Module([plain], []))
        scope = dict(HYBRID_GLOBALS)
        exec(compile(module, filename, "exec"), scope)  # noqa: S102 - the user's own script
        self.func_ = scope[root.name]

    def _parser(self, args):
        from .parser import Parser

        return Parser(self._source, self.root_, args, self._env)

    def _env(self, name):
        return (True, HYBRID_GLOBALS[name]) if name in HYBRID_GLOBALS else (False, None)

    def __repr__(self):
        return f"<hybrid module {self.name}>"


# ---------------------------------------------------------------------------------------
# build: a schedule printed as hybrid script
# ---------------------------------------------------------------------------------------

def build(sch, inputs, outputs, name="hybrid_func"):
    """The scheduled computation as a hybrid script (TVM's ``te.hybrid.build``).

    Parameters
    ----------
    sch : Schedule
    inputs : list of Tensor or Var
        The script's parameters, in order.
    outputs : list of Tensor
        Its outputs (made with ``output_tensor`` inside it and returned).
    name : str
        The function's name.

    Returns
    -------
    HybridModule
        Runs the loop nest of the schedule in Python (numpy arrays) or parses it
        back into an operation (te tensors).
    """
    from ..lower import lower_schedule

    inputs = list(inputs)
    outputs = list(outputs)
    for t in outputs:
        if not isinstance(t, Tensor):
            raise HybridScriptError(f"hybrid.build: the outputs must be tensors, got {t!r}")
    func = lower_schedule(sch, inputs + outputs, name)
    return HybridModule(dump(func, inputs, outputs, name), name)


_RESERVED = set(keyword.kwlist) | set(HYBRID_GLOBALS) | {
    "range", "min", "max", "len", "abs", "True", "False", "None", "print", "int", "float", "bool"}

_CALLS = {"sqrt": "sqrt", "rsqrt": "rsqrt", "log": "log", "log2": "log2", "log10": "log10", "exp": "exp",
          "exp2": "exp2", "tanh": "tanh", "sin": "sin", "cos": "cos", "sigmoid": "sigmoid", "floor": "floor",
          "ceil": "ceil", "round": "round", "pow": "power", "popcount": "popcount", "abs": "abs",
          "likely": "likely"}
# Python's precedence levels (higher binds tighter)
_P_IF, _P_OR, _P_AND, _P_NOT, _P_CMP, _P_BOR, _P_BXOR, _P_BAND, _P_SHIFT, _P_ADD, _P_MUL, _P_UNARY, _P_ATOM = \
    range(1, 14)
_BITS = {"bitwise_or": ("|", _P_BOR), "bitwise_xor": ("^", _P_BXOR), "bitwise_and": ("&", _P_BAND),
         "shift_left": ("<<", _P_SHIFT), "shift_right": (">>", _P_SHIFT)}
_CMP = {E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">="}
_BINARY = {E.Add: ("+", _P_ADD), E.Sub: ("-", _P_ADD), E.Mul: ("*", _P_MUL), E.Div: ("/", _P_MUL),
           E.FloorDiv: ("//", _P_MUL), E.FloorMod: ("%", _P_MUL)}


class _Printer:
    """Prints the statement of a lowered function as hybrid script."""

    def __init__(self):
        self.names = {}     # Var or Buffer data Var -> python name
        self.used = set(_RESERVED)
        self.lines = []
        self.indent = 1

    def fresh(self, hint):
        base = re.sub(r"\W", "_", hint or "v")
        if not base or base[0].isdigit():
            base = "v_" + base
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def name_of(self, var):
        n = self.names.get(var)
        if n is None:
            n = self.names[var] = self.fresh(var.name)
        return n

    def emit(self, text):
        self.lines.append("    " * self.indent + text)

    def block(self, stmt):
        self.indent += 1
        before = len(self.lines)
        self.stmt(stmt)
        if len(self.lines) == before:
            self.emit("pass")
        self.indent -= 1

    # statements -------------------------------------------------------------
    def stmt(self, s):
        fn = getattr(self, "s_" + type(s).__name__, None)
        if fn is None:
            raise HybridScriptError(f"hybrid.build: a {type(s).__name__} statement has no hybrid-script form")
        fn(s)

    def s_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def s_Evaluate(self, s):
        if isinstance(s.value, (E.IntImm, E.FloatImm)):
            return
        raise HybridScriptError(f"hybrid.build: the call `{s.value}` has no hybrid-script form")

    def s_For(self, s):
        var = self.name_of(s.loop_var)
        ext = self.expr(s.extent)
        if s.kind is S.ForKind.THREAD_BINDING:
            it = f'bind("{s.thread_binding.thread_tag}", {ext})'
        else:
            fn = {S.ForKind.SERIAL: "range", S.ForKind.PARALLEL: "parallel", S.ForKind.VECTORIZED: "vectorize",
                  S.ForKind.UNROLLED: "unroll"}[s.kind]
            if E.is_const_int(s.min, 0):
                it = f"{fn}({ext})"
            else:
                lo = self.expr(s.min)
                it = f"{fn}({lo}, {lo} + {ext})"
        self.emit(f"for {var} in {it}:")
        self.block(s.body)

    def s_AttrStmt(self, s):
        if s.attr_key == keys.THREAD_EXTENT and isinstance(s.node, E.IterVar):
            var = self.name_of(s.node.var)
            self.emit(f'for {var} in bind("{s.node.thread_tag}", {self.expr(s.value)}):')
            self.block(s.body)
            return
        self.stmt(s.body)  # other attributes only annotate

    def s_LetStmt(self, s):
        self.emit(f"{self.name_of(s.var)} = {self.expr(s.value)}")
        self.stmt(s.body)

    def s_Allocate(self, s):
        b = s.buffer
        name = self.name_of(b.data)
        shape = self.shape(b.shape)
        self.emit(f'{name} = allocate({shape}, "{b.dtype}", "{b.scope or keys.GLOBAL}")')
        self.stmt(s.body)

    def s_BufferStore(self, s):
        self.emit(f"{self.load_text(s.buffer, s.indices)} = {self.expr(s.value)}")

    def s_IfThenElse(self, s):
        self.emit(f"if {self.expr(s.condition)}:")
        self.block(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.block(s.else_case)

    def s_AssertStmt(self, s):
        msg = s.message.value if isinstance(s.message, E.StringImm) else str(s.message)
        self.emit(f"assert {self.expr(s.condition)}, {msg!r}")
        self.stmt(s.body)

    # expressions ------------------------------------------------------------
    def shape(self, shape):
        items = [self.expr(d) for d in shape]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def load_text(self, buf, indices):
        return f"{self.name_of(buf.data)}[{', '.join(self.expr(i) for i in indices)}]"

    def expr(self, e, prec=0):
        """``e`` as Python text, parenthesized when its operator binds looser than
        ``prec`` (Python's precedence levels, below)."""
        text, own = self._expr(e)
        return f"({text})" if own < prec else text

    def _binary(self, e, op, prec):
        return f"{self.expr(e.a, prec)} {op} {self.expr(e.b, prec + 1)}", prec

    def _expr(self, e):
        for cls, (op, prec) in _BINARY.items():
            if isinstance(e, cls):
                if cls is E.Div and not _dt.is_float(e.dtype):
                    raise HybridScriptError(
                        f"hybrid.build: the truncating integer division `{e}` has no hybrid-script form (hybrid "
                        f"script's // rounds down); use floordiv in the computation")
                return self._binary(e, op, prec)
        for cls, op in _CMP.items():
            if isinstance(e, cls):
                return f"{self.expr(e.a, _P_CMP + 1)} {op} {self.expr(e.b, _P_CMP + 1)}", _P_CMP
        fn = getattr(self, "e_" + type(e).__name__, None)
        if fn is None:
            raise HybridScriptError(f"hybrid.build: the expression `{e}` ({type(e).__name__}) has no "
                                    f"hybrid-script form")
        return fn(e)

    def e_IntImm(self, e):
        if _dt.is_bool(e.dtype):
            return ("True" if e.value else "False"), _P_ATOM
        if e.dtype == "int32":
            return str(e.value), (_P_ATOM if e.value >= 0 else _P_UNARY)
        return f"{e.dtype}({e.value})", _P_ATOM

    def e_FloatImm(self, e):
        v = e.value
        if v != v:
            raise HybridScriptError("hybrid.build: a NaN constant has no hybrid-script form")
        if v in (float("inf"), float("-inf")):
            return f'{"inf" if v > 0 else "ninf"}("{e.dtype}")', _P_ATOM
        if e.dtype == "float32":
            return repr(float(v)), (_P_ATOM if v >= 0 else _P_UNARY)
        return f"{e.dtype}({float(v)!r})", _P_ATOM

    def e_Var(self, e):
        return self.name_of(e), _P_ATOM

    e_SizeVar = e_Var

    def e_BufferLoad(self, e):
        return self.load_text(e.buffer, e.indices), _P_ATOM

    def e_Min(self, e):
        return f"min({self.expr(e.a)}, {self.expr(e.b)})", _P_ATOM

    def e_Max(self, e):
        return f"max({self.expr(e.a)}, {self.expr(e.b)})", _P_ATOM

    def e_And(self, e):
        return f"{self.expr(e.a, _P_AND)} and {self.expr(e.b, _P_AND + 1)}", _P_AND

    def e_Or(self, e):
        return f"{self.expr(e.a, _P_OR)} or {self.expr(e.b, _P_OR + 1)}", _P_OR

    def e_Not(self, e):
        return f"not {self.expr(e.a, _P_NOT)}", _P_NOT

    def _select(self, c, t, f):
        return f"{self.expr(t, _P_IF + 1)} if {self.expr(c, _P_IF + 1)} else {self.expr(f, _P_IF)}", _P_IF

    def e_Select(self, e):
        return self._select(e.condition, e.true_value, e.false_value)

    def e_Cast(self, e):
        if _dt.is_bool(e.dtype):
            return f"{self.expr(e.value, _P_CMP + 1)} != 0", _P_CMP
        if e.dtype not in HYBRID_GLOBALS:
            raise HybridScriptError(f"hybrid.build: a cast to {e.dtype} has no hybrid-script form")
        return f"{e.dtype}({self.expr(e.value)})", _P_ATOM

    def e_Call(self, e):
        if e.op == "if_then_else":
            return self._select(*e.args)
        if e.op in _BITS:
            op, prec = _BITS[e.op]
            return f"{self.expr(e.args[0], prec)} {op} {self.expr(e.args[1], prec + 1)}", prec
        if e.op == "bitwise_not":
            return f"~{self.expr(e.args[0], _P_UNARY)}", _P_UNARY
        name = _CALLS.get(e.op)
        if name is None:
            raise HybridScriptError(f"hybrid.build: the intrinsic {e.op!r} has no hybrid-script form")
        return f"{name}({', '.join(self.expr(a) for a in e.args)})", _P_ATOM


def dump(func, inputs, outputs, name):
    """The source of a hybrid script doing what PrimFunc ``func`` (lowered from a
    schedule with arguments ``inputs + outputs``) does."""
    p = _Printer()
    fname = p.fresh(name)
    params = list(func.params)
    args = inputs + outputs
    by_tensor = {}
    arg_names = []
    for a, param in zip(args, params):
        buf = func.buffer_map.get(param)
        if isinstance(a, Tensor):
            n = p.fresh(a.op.name if a.op.num_outputs == 1 else a.name)
            p.names[buf.data] = n
            by_tensor[a] = buf
        else:
            n = p.name_of(param)
        if a in outputs:
            continue
        arg_names.append(n)
    header = []
    # sizes the arguments do not name: read from an argument's shape
    needed = collect_vars(func.body)
    shapes = [by_tensor[t].shape for t in outputs]
    post_order_visit(func.body, lambda n: shapes.append(n.buffer.shape) if isinstance(n, S.Allocate) else None)
    for shape in shapes:
        for d in shape:
            needed |= collect_vars(d)
    for v in sorted(needed, key=lambda v: v.name):
        if v in p.names or not any(v is x for x in params):
            continue
        for t in inputs:
            if isinstance(t, Tensor):
                shape = by_tensor[t].shape
                k = next((d for d, s in enumerate(shape) if s is v), None)
                if k is not None:
                    header.append(f"{p.name_of(v)} = {p.names[by_tensor[t].data]}.shape[{k}]")
                    break
        else:
            raise HybridScriptError(f"hybrid.build: the size {v.name!r} is not a dimension of an input; pass it "
                                    f"in inputs")
    for t in outputs:
        buf = by_tensor[t]
        header.append(f'{p.names[buf.data]} = output_tensor({p.shape(buf.shape)}, "{buf.dtype}")')
    p.lines = ["    " + h for h in header]
    p.stmt(func.body)
    rets = ", ".join(p.names[by_tensor[t].data] for t in outputs)
    p.emit(f"return {rets}")
    return f"def {fname}({', '.join(arg_names)}):\n" + "\n".join(p.lines) + "\n"

