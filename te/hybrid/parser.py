"""Parsing a hybrid script's Python AST into TIR: the statement of a :class:`HybridOp`.

What each Python construct becomes:

* an argument tensor -> a declared input buffer (``tir.decl_buffer``), read with
  ``BufferLoad``; ``output_tensor(shape, dtype)`` -> a declared output buffer, written
  with ``BufferStore``; ``allocate(shape, dtype, scope)`` -> an ``Allocate`` around
  the loop body (or function body) that declares it;
* ``for i in range(n)`` / ``parallel`` / ``vectorize`` / ``unroll`` -> a ``For`` of
  that kind counting from 0 (``range(lo, hi)`` counts ``i' = i - lo``);
  ``const_range`` -> the body repeated for each (constant) value;
* ``for i in bind("threadIdx.x", n)`` -> the GPU index: one ``thread_extent``
  attribute per index around the whole kernel, as TVM's hybrid script does: every
  ``bind`` of one index in a kernel shares it (and its extent), the kernel being
  the function body -- or the body of a loop that allocates a global buffer;
* a name assigned once with a constant -> that constant; once with an expression
  of no loads -> that expression; once with an expression that loads, and read
  only after it in the same block -> a ``LetStmt``; otherwise (assigned more than
  once, ``+=``) -> a one-element ``local`` buffer;
* ``if`` -> ``IfThenElse`` (dropped when the condition is a constant),
  ``x if c else y`` -> ``Select`` (``if_then_else`` where a side loads),
  ``assert c, "msg"`` -> ``AssertStmt``;
* a call of another hybrid script -> its statement inlined, its outputs becoming
  temporaries of this one.

Every construct outside this list raises :class:`HybridScriptError` naming the
script, file and line.
"""
from __future__ import annotations

import ast
import numbers

import numpy

from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import keys
from ...tir import op as T
from ...tir import stmt as S
from ...tir.arith import Analyzer
from ...tir.functor import collect_vars, post_order_visit
from ..tensor import PlaceholderOp, Tensor
from .usage import name_usage
from .utils import HybridScriptError, LOOP_FUNCS


class BufRef:
    """A buffer named in the script: an input, an output, or a temporary;
    ``prefix`` holds the indices of a partial subscript (``a[i]`` of a 2-D ``a``)."""

    __slots__ = ("buffer", "kind", "name", "tensor", "prefix")

    def __init__(self, buffer, kind, name, tensor=None, prefix=()):
        self.buffer = buffer
        self.kind = kind          # "input" | "output" | "temp"
        self.name = name
        self.tensor = tensor
        self.prefix = prefix

    @property
    def ndim(self):
        return len(self.buffer.shape)

    def __repr__(self):
        return f"<{self.kind} buffer {self.name}>"


class _Sym:
    """A name of the script and what it stands for."""

    __slots__ = ("kind", "value", "node")

    def __init__(self, kind, value, node=None):
        self.kind = kind   # "arg" | "loop" | "const" | "let" | "cell" | "buffer"
        self.value = value
        self.node = node


class _Scope:
    """The body of a loop (or of the function): what it allocates and the GPU
    indices bound inside it that are not yet wrapped around a kernel."""

    def __init__(self, node, device):
        self.node = node
        self.allocs = []
        self.binds = []        # tags
        self.names = []
        self.device = device   # inside a bind loop


_BINOPS = {
    ast.Add: T.add, ast.Sub: T.sub, ast.Mult: T.mul, ast.FloorDiv: T.floordiv, ast.Mod: T.floormod,
    ast.BitAnd: T.bitwise_and, ast.BitOr: T.bitwise_or, ast.BitXor: T.bitwise_xor,
    ast.LShift: T.shift_left, ast.RShift: T.shift_right, ast.Pow: T.power,
}
_CMPOPS = {ast.Lt: T.lt, ast.LtE: T.le, ast.Gt: T.gt, ast.GtE: T.ge, ast.Eq: T.eq, ast.NotEq: T.ne}
_CASTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
_MATH = {"sqrt": T.sqrt, "rsqrt": T.rsqrt, "log": T.log, "log2": T.log2, "log10": T.log10, "exp": T.exp,
         "exp2": T.exp2, "tanh": T.tanh, "sin": T.sin, "cos": T.cos, "sigmoid": T.sigmoid,
         "floor": T.floor, "ceil": T.ceil, "round": T.round}
_KIND = {"range": S.ForKind.SERIAL, "parallel": S.ForKind.PARALLEL, "vectorize": S.ForKind.VECTORIZED,
         "unroll": S.ForKind.UNROLLED}
#: every function a script may call, for the error that names an unknown one
KNOWN_CALLS = sorted(set(_MATH) | set(_CASTS) | {
    "power", "popcount", "min", "max", "abs", "len", "ceil_div", "likely", "max_num_threads", "inf", "ninf"})


class Parser:
    """Parse one function definition (``func``, an ``ast.FunctionDef``) of ``source``.

    ``env(name)`` resolves names the function does not define (its closure and
    globals): it returns ``(True, value)`` or ``(False, None)``.  ``args`` are the
    values of its parameters, already in the parser's terms (see ``to_parser_args``).
    """

    def __init__(self, source, func, args, env):
        self.src = source
        self.func = func
        self.args = list(args)
        self.env = env
        self.usage = name_usage(func)
        self.symbols = {}
        self.scopes = []
        self.blocks = []
        self.bind_vars = {}     # tag -> (IterVar, node of the bind)
        self.outputs = []       # BufRef of output_tensor, in order
        self.returned = None
        self.ana = Analyzer()
        self.output_scope = keys.GLOBAL   # "local" for a script inlined into GPU code
        self.alloc_nodes = {}             # Buffer -> the statement that allocates it
        self.cell_device = {}             # one-element buffer -> first assigned in a bind loop
        self.depth = 0                    # how deep in calls of scripts by scripts

    # ------------------------------------------------------------------ errors
    def err(self, node, msg):
        return self.src.error(node, msg)

    # ------------------------------------------------------------------ entry
    def parse(self) -> S.Stmt:
        node = self.func
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or getattr(a, "posonlyargs", []) or a.defaults:
            raise self.err(node, "a hybrid script takes plain positional parameters only (no *args, **kwargs, "
                                 "keyword-only parameters or default values)")
        names = [p.arg for p in a.args]
        if len(names) != len(self.args):
            raise HybridScriptError(
                f"hybrid script {self.src.func_name!r} ({self.src.where(node)}) takes {len(names)} argument(s) "
                f"({', '.join(names)}) but was called with {len(self.args)}")
        scope = _Scope(node, device=False)
        self.scopes.append(scope)
        for n, v in zip(names, self.args):
            self.symbols[n] = _Sym("arg", v, node)
        body = self.block(node.body, top=True)
        if self.returned is None:
            raise self.err(node, "the script returns nothing; end it with `return` of its output tensor(s) "
                                 "(made with output_tensor(shape, dtype))")
        body = self._close_scope(scope, body, function=True)
        self.scopes.pop()
        return body

    # ------------------------------------------------------------------ blocks
    def block(self, stmts, top=False):
        """A statement list; a ``LetStmt`` made by one of them covers the rest."""
        self.blocks.append([])
        out = self._stmts(stmts, top)
        for name in self.blocks.pop():
            self.symbols.pop(name, None)
        return out

    def _stmts(self, stmts, top):
        out = []
        for k, st in enumerate(stmts):
            if self.returned is not None:
                raise self.err(st, "statements after `return` never run; `return` must be the last statement")
            if k == 0 and isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) \
                    and isinstance(st.value.value, str):
                continue  # a docstring
            if isinstance(st, ast.Return):
                if not top:
                    raise self.err(st, "`return` must be the last statement of the script, outside any loop or if")
                self._return(st)
                continue
            r = self.visit_stmt(st)
            if isinstance(r, tuple):  # ("let", var, value)
                _, var, value = r
                rest = self._stmts(stmts[k + 1:], top)
                out.append(S.LetStmt(var, value, rest))
                break
            if r is not None:
                out.append(r)
        return S.seq(*out)

    def visit_stmt(self, st):
        fn = getattr(self, "stmt_" + type(st).__name__, None)
        if fn is None:
            raise self.err(st, _unsupported_stmt(st))
        return fn(st)

    # ------------------------------------------------------------------ names
    def _declare(self, name, sym, scope_level=False):
        self.symbols[name] = sym
        if scope_level:
            self._decl_scope(name).names.append(name)
        else:
            self.blocks[-1].append(name)

    def _decl_scope(self, name):
        """The scope (loop body or function) that owns name ``name``."""
        target = self.usage[name].scope if name in self.usage else None
        for sc in reversed(self.scopes):
            if sc.node is target:
                return sc
        return self.scopes[-1]

    def lookup(self, node):
        name = node.id
        sym = self.symbols.get(name)
        if sym is not None:
            return sym
        u = self.usage.get(name)
        if u is not None and (u.stores or u.loop_target):
            if u.loop_target and not u.stores:
                raise self.err(node, f"loop variable {name!r} is used outside its loop; it exists only inside "
                                     f"the loop's body")
            first = u.stores[0]
            if first is node:
                raise self.err(node, f"{name!r} is read before it is assigned")
            raise self.err(node, f"{name!r} is not defined here: it is assigned at "
                                 f"{self.src.where(first)} in another block or loop (or later); assign it before "
                                 f"this point, in a block that contains this use")
        ok, value = self.env(name)
        if not ok:
            raise self.err(node, f"unknown name {name!r}: it is neither an argument, a variable of the script, "
                                 f"nor a constant captured from the enclosing code")
        return _Sym("const", _capture_value(self, node, value, name), node)

    # ------------------------------------------------------------------ statements
    def stmt_Pass(self, st):
        return None

    def stmt_Expr(self, st):
        v = st.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return None  # a string used as a comment
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
            callee = self._callee(v.func)
            if callee is not None:
                raise self.err(st, f"the result of hybrid script {v.func.id!r} must be assigned: "
                                   f"`out = {v.func.id}(...)`")
        raise self.err(st, "an expression statement has no effect in a hybrid script; assign its value "
                           "(`x = ...` or `out[i] = ...`)")

    def stmt_Assert(self, st):
        cond = self._bool(self.expr(st.test), st.test)
        if st.msg is None:
            msg = f"assertion failed at {self.src.where(st)}"
        else:
            m = self.value(st.msg)
            if not isinstance(m, str):
                raise self.err(st.msg, "the message of an assert must be a string literal")
            msg = m
        if isinstance(cond, E.IntImm) and cond.value:
            return None
        return S.AssertStmt(cond, msg, S.Evaluate(T.const(0)))

    def stmt_If(self, st):
        cond = self._bool(self.expr(st.test), st.test)
        cond = self.ana.simplify(cond) if not isinstance(cond, E.IntImm) else cond
        if isinstance(cond, E.IntImm):
            stmts = st.body if cond.value else st.orelse
            return self.block(stmts) if stmts else None
        then = self.block(st.body)
        other = self.block(st.orelse) if st.orelse else None
        return S.IfThenElse(cond, then, other)

    def stmt_For(self, st):
        if st.orelse:
            raise self.err(st, "`for ... else` is not supported in a hybrid script")
        if not isinstance(st.target, ast.Name):
            raise self.err(st, "the loop variable must be a single name (`for i in range(n)`)")
        it = st.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in LOOP_FUNCS):
            raise self.err(st, f"a loop iterates over {', '.join(f + '(...)' for f in LOOP_FUNCS)}; other "
                               f"iterables (lists, tensors, zip, enumerate...) are not supported")
        if it.keywords:
            raise self.err(st, f"{it.func.id}() takes positional arguments only")
        name = st.target.id
        if name in self.symbols:
            raise self.err(st, f"loop variable {name!r} is already a name of the script (an argument, a "
                               f"variable or an enclosing loop's variable); choose another name")
        kind = it.func.id
        if kind == "bind":
            return self._bind_loop(st, it, name)
        lo, ext = self._range_args(st, it, kind)
        if kind == "const_range":
            lo_v, ext_v = E.const_int_value(self.ana.simplify(lo)), E.const_int_value(self.ana.simplify(ext))
            if lo_v is None or ext_v is None:
                raise self.err(st, f"const_range needs constant bounds (it repeats the body at parse time), "
                                   f"got ({lo}, {lo} + {ext}); use range() for a loop over a symbolic extent")
            bodies = []
            for v in range(lo_v, lo_v + ext_v):
                bodies.append(self._loop_body(st, name, E.IntImm(lo.dtype if _dt.is_integer(lo.dtype)
                                                                   else "int32", v)))
            return S.seq(*bodies)
        dtype = ext.dtype
        var = E.Var(name, dtype)
        index = var if E.is_const_int(lo, 0) else self.ana.simplify(var + lo)
        body = self._loop_body(st, name, index)
        return S.For(var, T.const(0, dtype), ext, _KIND[kind], body)

    def _range_args(self, st, it, kind):
        args = [self.expr(a) for a in it.args]
        if not 1 <= len(args) <= 2:
            raise self.err(st, f"{kind}() takes one argument (extent) or two (begin, end); a step is not "
                               f"supported")
        for a, n in zip(args, it.args):
            if not _dt.is_integer(a.dtype):
                raise self.err(n, f"{kind}() bounds must be integers, got `{a}` of dtype {a.dtype}")
        if len(args) == 1:
            lo, ext = T.const(0, args[0].dtype), args[0]
        else:
            lo, hi = T.match_types(args[0], args[1])
            ext = self.ana.simplify(hi - lo)
            lo = self.ana.simplify(lo)
        return lo, ext

    def _loop_body(self, st, name, index):
        scope = _Scope(st, device=self.scopes[-1].device)
        self.scopes.append(scope)
        self.symbols[name] = _Sym("loop", index, st)
        try:
            body = self.block(st.body)
        finally:
            self.symbols.pop(name, None)
        body = self._close_scope(scope, body)
        self.scopes.pop()
        return body

    def _bind_loop(self, st, it, name):
        if len(it.args) != 2:
            raise self.err(st, "bind takes two arguments: the GPU index and the extent, "
                               "e.g. bind(\"threadIdx.x\", 256)")
        tag = self.value(it.args[0])
        if not isinstance(tag, str) or tag not in keys.GPU_TAGS:
            raise self.err(it.args[0], f"bind's first argument must be one of {', '.join(keys.GPU_TAGS)}, "
                                       f"got {tag!r}")
        ext = self.expr(it.args[1])
        if not _dt.is_integer(ext.dtype):
            raise self.err(it.args[1], f"the extent of bind must be an integer, got `{ext}` ({ext.dtype})")
        ext = self.ana.simplify(T.cast("int32", ext))
        if self._computed_here(ext):
            raise self.err(it.args[1], f"the extent of bind({tag!r}, {ext}) depends on a loop, a variable or "
                                       f"an element computed in the script; the launch extent of {tag} must "
                                       f"follow from the arguments")
        cached = self.bind_vars.get(tag)
        if cached is not None:
            iv, where = cached
            if not self.ana.can_prove(E.EQ(iv.dom.extent, ext)):
                raise self.err(st, f"bind({tag!r}, {ext}) and bind({tag!r}, {iv.dom.extent}) at {where} are in "
                                   f"one kernel, where {tag} has one extent; use the same extent (guard the "
                                   f"extra indices with an if)")
        else:
            iv = E.IterVar(E.Range(T.const(0), ext), E.Var(tag, "int32"), E.IterVarType.THREAD_INDEX, tag)
            self.bind_vars[tag] = (iv, self.src.where(st))
            self.scopes[-1].binds.append(tag)
        scope = _Scope(st, device=True)
        self.scopes.append(scope)
        self.symbols[name] = _Sym("loop", iv.var, st)
        try:
            body = self.block(st.body)
        finally:
            self.symbols.pop(name, None)
        body = self._close_scope(scope, body)
        self.scopes.pop()
        return body

    def _close_scope(self, scope, body, function=False):
        """Allocate the scope's buffers around ``body`` and, where a kernel ends (the
        function, or a scope that allocates global memory), wrap its GPU indices."""
        for name in scope.names:
            self.symbols.pop(name, None)
        glob = [b for b in scope.allocs if b.scope == keys.GLOBAL]
        for buf in reversed([b for b in scope.allocs if b.scope != keys.GLOBAL]):
            body = S.Allocate(buf, body)
        if scope.binds and (glob or function):
            self._check_kernel_allocations(body)
            order = sorted(scope.binds, key=lambda t: keys.GPU_TAGS.index(t), reverse=True)
            for tag in order:
                iv, _ = self.bind_vars.pop(tag)
                body = S.AttrStmt(iv, keys.THREAD_EXTENT, iv.dom.extent, body)
        elif scope.binds:
            self.scopes[-2].binds.extend(scope.binds)
        for buf in reversed(glob):
            body = S.Allocate(buf, body)
        return body

    def _check_kernel_allocations(self, body):
        """A kernel cannot allocate global memory: report an ``allocate()`` of the
        default (global) scope in a loop that ends up inside one."""
        inside = _nodes_of(body, S.Allocate)
        for alloc in inside:
            if alloc.buffer.scope == keys.GLOBAL:
                node = self.alloc_nodes.get(alloc.buffer, self.func)
                raise self.err(node, f"{alloc.buffer.name!r} is allocated in global memory inside a loop of a GPU "
                                     f"kernel (the script binds GPU indices around it); allocate it with scope "
                                     f"\"local\" (one per thread) or \"shared\", or at the top of the script")

    # ------------------------------------------------------------------ assignment
    def stmt_AnnAssign(self, st):
        raise self.err(st, "annotated assignments (`x: int = ...`) are not supported; write `x = ...`")

    def stmt_Assign(self, st):
        if len(st.targets) != 1:
            raise self.err(st, "chained assignment (`a = b = ...`) is not supported; assign one name at a time")
        target = st.targets[0]
        v = st.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
            callee = self._callee(v.func)
            if callee is not None:
                return self._inline_call(st, target, v, callee)
            if v.func.id in ("output_tensor", "allocate") and v.func.id not in self.symbols:
                return self._declare_buffer(st, target, v)
        if isinstance(target, ast.Tuple):
            raise self.err(st, "tuple assignment is only for the outputs of a hybrid script call "
                               "(`b, c = kernel(a)`); assign one name at a time")
        if isinstance(target, ast.Subscript):
            return self._store(target, self.expr(v), st)
        if isinstance(target, ast.Name):
            return self._assign_name(st, target, v)
        raise self.err(st, f"cannot assign to {type(target).__name__}; assign to a name or an element "
                           f"(`x = ...`, `out[i] = ...`)")

    def stmt_AugAssign(self, st):
        op = _BINOPS.get(type(st.op)) if not isinstance(st.op, ast.Div) else _true_div
        if op is None:
            raise self.err(st, f"operator {type(st.op).__name__} is not supported")
        t = st.target
        if isinstance(t, ast.Subscript):
            ref, idx = self._subscript_store(t)
            old = E.BufferLoad(ref.buffer, idx)
            return self._store_to(ref, idx, self._arith(op, old, self.expr(st.value), st), st)
        if isinstance(t, ast.Name):
            sym = self.symbols.get(t.id)
            if sym is None:
                raise self.err(st, f"`{t.id} {_op_text(st.op)}= ...` before {t.id!r} is assigned; assign it "
                                   f"first (e.g. `{t.id} = 0.0`)")
            if sym.kind != "cell":
                raise self.err(st, self._not_assignable(t.id, sym))
            old = E.BufferLoad(sym.value, (T.const(0),))
            return self._store_cell(sym.value, self._arith(op, old, self.expr(st.value), st), st)
        raise self.err(st, "augmented assignment to a name or an element only (`x += 1`, `out[i] += 1`)")

    def _not_assignable(self, name, sym):
        what = {"arg": "an argument", "loop": "a loop variable", "buffer": "a tensor",
                "const": "a constant", "let": "a variable assigned once"}.get(sym.kind, sym.kind)
        if sym.kind == "buffer" or (sym.kind == "arg" and isinstance(sym.value, (BufRef, tuple))):
            return (f"{name!r} is {what}: assign its elements (`{name}[i] = ...`), not the name; to make "
                    f"another tensor use output_tensor() or allocate()")
        return f"{name!r} is {what} and cannot be assigned; use a new variable"

    def _assign_name(self, st, target, vnode):
        name = target.id
        sym = self.symbols.get(name)
        if sym is not None:
            if sym.kind != "cell":
                raise self.err(st, self._not_assignable(name, sym))
            return self._store_cell(sym.value, self.expr(vnode), st)
        u = self.usage[name]
        value = self.value(vnode)
        once = len(u.stores) == 1
        if isinstance(value, (BufRef, tuple, list, str)):
            if not once:
                what = "a tensor" if isinstance(value, BufRef) else f"a {type(value).__name__}"
                raise self.err(st, f"{name!r} is assigned {what} and assigned again; only a number may be "
                                   f"reassigned (tensors come from output_tensor()/allocate() or the arguments)")
            self._declare(name, _Sym("buffer" if isinstance(value, BufRef) else "const", value, st),
                          scope_level=True)
            return None
        value = self._as_expr(value, vnode)
        if once and isinstance(value, (E.IntImm, E.FloatImm)):
            self._declare(name, _Sym("const", value, st), scope_level=True)
            return None
        if once and u.reads_after_first_store_only():
            if not _loads(value):
                self._declare(name, _Sym("const", value, st))
                return None
            var = E.Var(name, value.dtype)
            self._declare(name, _Sym("let", var, st))
            return ("let", var, value)
        # a one-element buffer: assigned again, or read where a let would not reach
        dtype = value.dtype
        scope = self._decl_scope(name)
        buf = S.decl_buffer((1,), dtype, name=name, scope=keys.LOCAL)
        scope.allocs.append(buf)
        self.cell_device[buf] = self.scopes[-1].device
        self._declare(name, _Sym("cell", buf, st), scope_level=True)
        return self._store_cell(buf, value, st)

    def _store_cell(self, buf, value, node):
        if self.scopes[-1].device and not self.cell_device[buf]:
            raise self.err(node, f"{buf.name!r} is assigned inside a bind loop but first assigned outside it: "
                                 f"every GPU thread would update its own copy (Python updates one); assign it "
                                 f"first inside the loop, or keep the value in an allocate()d buffer")
        value = self._as_expr(value, node)
        return S.BufferStore(buf, self._cast_store(buf, value, node), (T.const(0),))

    def _cast_store(self, buf, value, node):
        if _dt.lanes(value.dtype) != 1:
            raise self.err(node, f"cannot store a vector value into {buf.name!r}")
        return T.cast(buf.dtype, value) if value.dtype != buf.dtype else value

    def _store(self, target, value, st):
        ref, idx = self._subscript_store(target)
        return self._store_to(ref, idx, value, st)

    def _store_to(self, ref, idx, value, st):
        if ref.kind == "input":
            t = ref.tensor
            if t is not None and not isinstance(t.op, PlaceholderOp):
                raise self.err(st, f"the script writes its input {ref.name!r}, which stage {t.op.name!r} computes; "
                                   f"inputs computed by other stages are read-only -- copy it into an "
                                   f"output_tensor() or allocate()d buffer and write that")
        if isinstance(value, BufRef):
            raise self.err(st, f"cannot store the tensor {value.name!r} into an element; index it")
        value = self._as_expr(value, st)
        return S.BufferStore(ref.buffer, self._cast_store(ref.buffer, value, st), idx)

    def _declare_buffer(self, st, target, call):
        fname = call.func.id
        if not isinstance(target, ast.Name):
            raise self.err(st, f"assign {fname}(...) to a name: `buf = {fname}(shape, dtype)`")
        name = target.id
        if name in self.symbols or len(self.usage[name].stores) != 1:
            raise self.err(st, f"{name!r} is assigned more than once; a tensor made by {fname}() needs a name "
                               f"of its own")
        if call.keywords and any(k.arg not in ("shape", "dtype", "scope") for k in call.keywords):
            raise self.err(st, f"{fname}() takes shape, dtype{', scope' if fname == 'allocate' else ''}")
        args = list(call.args) + [None] * 3
        kw = {k.arg: k.value for k in call.keywords}
        shape_node = kw.get("shape", args[0])
        dtype_node = kw.get("dtype", args[1])
        scope_node = kw.get("scope", args[2])
        if shape_node is None:
            raise self.err(st, f"{fname}() needs a shape, e.g. {fname}((n, m), \"float32\")")
        shape = self.value(shape_node)
        if isinstance(shape, (E.PrimExpr, numbers.Integral)):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)):
            raise self.err(shape_node, f"the shape of {fname}() must be a tuple of sizes, got {shape!r}")
        dims = []
        for d in shape:
            d = self._as_expr(d, shape_node)
            if not _dt.is_integer(d.dtype):
                raise self.err(shape_node, f"the sizes of {fname}() must be integers, got `{d}` ({d.dtype})")
            dims.append(d)
        dtype = "float32" if dtype_node is None else self.value(dtype_node)
        if not isinstance(dtype, str):
            raise self.err(dtype_node or st, f"the dtype of {fname}() must be a string such as \"float32\"")
        try:
            dtype = _dt.canonical(dtype)
        except Exception as err:  # noqa: BLE001 - reported with the line
            raise self.err(dtype_node, f"unknown dtype {dtype!r} ({err})") from None
        if dtype not in _dt.SUPPORTED:
            raise self.err(dtype_node, f"dtype {dtype!r} is not supported; use one of {_dt.SUPPORTED}")
        if fname == "output_tensor":
            if scope_node is not None:
                raise self.err(st, "output_tensor() takes no storage scope: outputs live in global memory")
            if len(self.scopes) != 1:
                raise self.err(st, "output_tensor() must be called at the top level of the script, outside "
                                   "loops and ifs")
            self._check_shape_known(st, dims)
            buf = S.decl_buffer(tuple(dims), dtype, name=name, scope=self.output_scope)
            ref = BufRef(buf, "output", name)
            self.outputs.append(ref)
            self._declare(name, _Sym("buffer", ref, st), scope_level=True)
            return None
        scope = keys.GLOBAL if scope_node is None else self.value(scope_node)
        if scope not in (keys.GLOBAL, keys.SHARED, keys.LOCAL):
            raise self.err(scope_node, f"the scope of allocate() must be \"global\", \"shared\" or \"local\", "
                                       f"got {scope!r}")
        owner = self._decl_scope(name)
        if scope == keys.GLOBAL and owner.device:
            scope = keys.LOCAL  # one per thread, as each iteration of the bind loop gets its own in Python
        buf = S.decl_buffer(tuple(dims), dtype, name=name, scope=scope)
        owner.allocs.append(buf)
        self.alloc_nodes[buf] = st
        self._declare(name, _Sym("buffer", BufRef(buf, "temp", name), st), scope_level=True)
        return None

    def _check_shape_known(self, node, dims):
        for d in dims:
            if self._computed_here(d):
                raise self.err(node, f"the shape ({', '.join(str(x) for x in dims)}) uses a value computed in "
                                     f"the script; output shapes must follow from the arguments")

    def _computed_here(self, e) -> bool:
        """True if ``e`` loads, or uses a loop or let variable of the script."""
        local = set()
        for sym in self.symbols.values():
            if sym.kind in ("loop", "let") and isinstance(sym.value, E.PrimExpr):
                local |= collect_vars(sym.value)
        return _loads(e) or bool(collect_vars(e) & local)

    def _return(self, st):
        v = st.value
        elts = v.elts if isinstance(v, ast.Tuple) else [v]
        if v is None or not all(isinstance(e, ast.Name) for e in elts):
            raise self.err(st, "return the output tensor(s) by name: `return c` or `return b, c`")
        refs = []
        for e in elts:
            sym = self.symbols.get(e.id) or self.lookup(e)
            ref = sym.value
            if not (sym.kind == "buffer" and isinstance(ref, BufRef)):
                raise self.err(st, f"{e.id!r} is not a tensor made by output_tensor(); return outputs only")
            if ref.kind == "temp":
                if ref.buffer.scope != keys.GLOBAL or self._decl_scope(e.id) is not self.scopes[0]:
                    raise self.err(st, f"{e.id!r} is a temporary; return tensors made by output_tensor() at the "
                                       f"top of the script")
                self.scopes[0].allocs.remove(ref.buffer)
                ref.kind = "output"
                self.outputs.append(ref)
            if any(r is ref for r in refs):
                raise self.err(st, f"{e.id!r} is returned twice")
            refs.append(ref)
        unreturned = [r.name for r in self.outputs if not any(r is x for x in refs)]
        if unreturned:
            raise self.err(st, f"output_tensor {unreturned[0]!r} is never returned; return it, or make it a "
                               f"temporary with allocate()")
        self.returned = refs

    # ------------------------------------------------------------------ nested scripts
    def _callee(self, fnode):
        """The hybrid script a call names, or None."""
        from . import HybridFunction, HybridModule

        if fnode.id in self.symbols:
            return None
        ok, value = self.env(fnode.id)
        if ok and isinstance(value, (HybridFunction, HybridModule)):
            return value
        return None

    def _inline_call(self, st, target, call, callee):
        if call.keywords:
            raise self.err(call, "a call of a hybrid script takes positional arguments only")
        if self.depth >= 16:
            raise self.err(call, "hybrid scripts call each other too deeply (recursion is not supported)")
        targets = target.elts if isinstance(target, ast.Tuple) else [target]
        for t in targets:
            if not isinstance(t, ast.Name):
                raise self.err(st, "the outputs of a hybrid script call must be assigned to names")
            if t.id in self.symbols or len(self.usage[t.id].stores) != 1:
                raise self.err(st, f"{t.id!r} is assigned more than once; the output of a script call needs a "
                                   f"name of its own")
        owner = self._decl_scope(targets[0].id)
        args = [self.value(a) for a in call.args]
        child = callee._parser(args)
        child.depth = self.depth + 1
        child.output_scope = keys.LOCAL if owner.device else keys.GLOBAL
        body = child.parse()
        outs = child.returned
        if len(targets) != len(outs):
            raise self.err(st, f"{call.func.id} returns {len(outs)} tensor(s) but {len(targets)} name(s) "
                               f"receive them")
        for t, ref in zip(targets, outs):
            owner.allocs.append(ref.buffer)
            self.alloc_nodes[ref.buffer] = st
            self._declare(t.id, _Sym("buffer", BufRef(ref.buffer, "temp", t.id), st), scope_level=True)
        return body

    # ------------------------------------------------------------------ expressions
    def expr(self, node) -> E.PrimExpr:
        """``node`` as an expression."""
        return self._as_expr(self.value(node), node)

    def _as_expr(self, v, node):
        if isinstance(v, E.PrimExpr):
            return v
        if isinstance(v, (bool, numpy.bool_)):
            return T.const(bool(v), "bool")
        if isinstance(v, numpy.generic):
            return T.const(v.item(), _dt.canonical(v.dtype))
        if isinstance(v, numbers.Integral):
            return T.const(int(v))
        if isinstance(v, numbers.Real):
            return T.const(float(v), "float32")
        if isinstance(v, BufRef):
            if v.prefix:
                raise self.err(node, f"{v.name!r} is indexed with {len(v.prefix)} of its {v.ndim} indices; "
                                     f"give all of them")
            raise self.err(node, f"the tensor {v.name!r} is used as a value; index it (`{v.name}[i]`)")
        if isinstance(v, (tuple, list)):
            raise self.err(node, "a tuple (or list) is used as a number; index it")
        if isinstance(v, str):
            raise self.err(node, f"the string {v!r} is used as a number")
        raise self.err(node, f"{v!r} cannot be used in an expression")

    def _bool(self, v, node):
        if not _dt.is_bool(v.dtype):
            if _dt.lanes(v.dtype) != 1:
                raise self.err(node, "a condition must be a scalar")
            v = T.ne(v, T.const(0, v.dtype))
        return v

    def value(self, node):
        """``node`` as a parser value: an expression, a buffer, a tuple, a string or
        a Python number."""
        fn = getattr(self, "expr_" + type(node).__name__, None)
        if fn is None:
            raise self.err(node, _unsupported_expr(node))
        return fn(node)

    def expr_Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            return T.const(v, "bool")
        if isinstance(v, int):
            return T.const(v)
        if isinstance(v, float):
            return T.const(v, "float32")
        if isinstance(v, str):
            return v
        raise self.err(node, f"the constant {v!r} is not supported (numbers, True/False and strings are)")

    def expr_Name(self, node):
        sym = self.lookup(node)
        if sym.kind == "cell":
            return E.BufferLoad(sym.value, (T.const(0),))
        return sym.value

    def expr_Tuple(self, node):
        return tuple(self.value(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_Attribute(self, node):
        base = self.value(node.value)
        attr = node.attr
        if isinstance(base, BufRef):
            if attr == "shape":
                return tuple(base.buffer.shape[len(base.prefix):])
            if attr == "dtype":
                return base.buffer.dtype
            if attr == "ndim":
                return T.const(base.ndim - len(base.prefix))
            if attr == "name":
                return base.name
            raise self.err(node, f"tensors have .shape, .dtype and .ndim; .{attr} is not supported")
        if isinstance(base, E.PrimExpr) and attr == "dtype":
            return base.dtype
        raise self.err(node, f"attribute .{attr} of {_describe(base)} is not supported")

    def expr_Subscript(self, node):
        if isinstance(node.ctx, ast.Store):  # pragma: no cover - stores go through _subscript_store
            raise AssertionError("store subscript read as a value")
        base = self.value(node.value)
        idx = self._indices(node)
        if isinstance(base, BufRef):
            ref = self._index_buf(base, idx, node)
            if len(ref.prefix) == ref.ndim:
                return E.BufferLoad(ref.buffer, ref.prefix)
            return ref
        if isinstance(base, (tuple, list)):
            for k in idx:
                kv = E.const_int_value(k) if isinstance(k, E.PrimExpr) else (k if isinstance(k, int) else None)
                if kv is None:
                    raise self.err(node, f"a tuple (an argument list or a captured constant) is indexed with "
                                         f"`{k}`; its index must be a constant (use const_range for the loop)")
                if not isinstance(base, (tuple, list)):
                    raise self.err(node, "too many indices")
                if not -len(base) <= kv < len(base):
                    raise self.err(node, f"index {kv} is out of range for a tuple of {len(base)} elements")
                base = base[kv]
            return _capture_value(self, node, base)
        raise self.err(node, f"cannot index {_describe(base)}")

    def _indices(self, node):
        sl = node.slice
        if isinstance(sl, ast.Slice) or (isinstance(sl, ast.Tuple) and any(isinstance(e, ast.Slice)
                                                                             for e in sl.elts)):
            raise self.err(node, "slices (`a[0:n]`) are not supported; index single elements in a loop")
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        return [self.value(e) for e in elts]

    def _index_buf(self, ref, idx, node):
        out = list(ref.prefix)
        for k in idx:
            k = self._as_expr(k, node)
            if not _dt.is_integer(k.dtype) or _dt.lanes(k.dtype) != 1:
                raise self.err(node, f"the index `{k}` of {ref.name!r} has dtype {k.dtype}; indices must be "
                                     f"integers (cast with int32(...))")
            out.append(k)
        if len(out) > ref.ndim:
            raise self.err(node, f"{ref.name!r} has {ref.ndim} dimension(s) but is indexed with {len(out)}")
        for d, (k, n) in enumerate(zip(out, ref.buffer.shape)):
            kv, nv = E.const_int_value(k), E.const_int_value(n)
            if kv is not None and nv is not None and not 0 <= kv < nv:
                raise self.err(node, f"index {kv} is out of range for dimension {d} of {ref.name!r} "
                                     f"(size {nv})")
        return BufRef(ref.buffer, ref.kind, ref.name, ref.tensor, tuple(out))

    def _subscript_store(self, target):
        base_node, idx_nodes = target, []
        while isinstance(base_node, ast.Subscript):
            idx_nodes.insert(0, base_node)
            base_node = base_node.value
        base = self.value(base_node)
        for sub in idx_nodes:
            idx = self._indices(sub)
            if isinstance(base, BufRef):
                base = self._index_buf(base, idx, sub)
            elif isinstance(base, (tuple, list)) and len(idx) == 1 and E.const_int_value(idx[0]) is not None:
                base = base[E.const_int_value(idx[0])]
            else:
                raise self.err(target, f"cannot assign an element of {_describe(base)}")
        if not isinstance(base, BufRef):
            raise self.err(target, f"cannot assign an element of {_describe(base)}")
        if len(base.prefix) != base.ndim:
            raise self.err(target, f"{base.name!r} has {base.ndim} dimension(s) but the assignment gives "
                                   f"{len(base.prefix)} index(es)")
        return base, base.prefix

    def _arith(self, op, a, b, node):
        try:
            return op(self._as_expr(a, node), self._as_expr(b, node))
        except HybridScriptError:
            raise
        except Exception as err:  # noqa: BLE001 - a TeccTypeError from the operator, with the line
            raise self.err(node, str(err)) from None

    def expr_BinOp(self, node):
        a, b = self.value(node.left), self.value(node.right)
        if isinstance(node.op, ast.Div):
            return self._arith(_true_div, a, b, node)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.err(node, f"operator {type(node.op).__name__} is not supported")
        return self._arith(op, a, b, node)

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            return T.neg(v)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            return T.logical_not(self._bool(v, node))
        if isinstance(node.op, ast.Invert):
            if not _dt.is_integer(v.dtype):
                raise self.err(node, f"~ needs an integer, got {v.dtype}")
            return T.bitwise_not(v)
        raise self.err(node, f"operator {type(node.op).__name__} is not supported")  # pragma: no cover

    def expr_Compare(self, node):
        values = [self.value(node.left)] + [self.value(c) for c in node.comparators]
        conds = []
        for op, a, b in zip(node.ops, values, values[1:]):
            fn = _CMPOPS.get(type(op))
            if fn is None:
                raise self.err(node, f"comparison {type(op).__name__} (is / in) is not supported; use == or !=")
            conds.append(self._arith(fn, a, b, node))
        return T.all(*conds)

    def expr_BoolOp(self, node):
        vals = [self._bool(self.expr(v), v) for v in node.values]
        return T.all(*vals) if isinstance(node.op, ast.And) else T.any(*vals)

    def expr_IfExp(self, node):
        cond = self._bool(self.expr(node.test), node.test)
        if isinstance(cond, E.IntImm):
            return self.value(node.body if cond.value else node.orelse)
        t, f = self.expr(node.body), self.expr(node.orelse)
        if _loads(t) or _loads(f):
            return T.if_then_else(cond, t, f)
        return self._arith(lambda x, y: T.select(cond, x, y), t, f, node)

    def expr_Call(self, node):
        if not isinstance(node.func, ast.Name):
            raise self.err(node, "only calls of plain names are supported (`sqrt(x)`); methods and "
                                 "attributes (`numpy.sqrt`, `a.sum()`) are not")
        name = node.func.id
        if node.keywords and name != "max_num_threads":
            raise self.err(node, f"{name}() takes positional arguments only")
        if name in self.symbols:
            raise self.err(node, f"{name!r} is a variable of the script, not a function")
        if name in LOOP_FUNCS:
            raise self.err(node, f"{name}() is only used as the iterator of a for loop (`for i in {name}(...)`)")
        if name in ("output_tensor", "allocate"):
            raise self.err(node, f"{name}() must be assigned to a name: `buf = {name}(shape, dtype)`")
        handler = getattr(self, "call_" + name, None)
        if handler is None:
            if name in _MATH:
                return self._math(node, name)
            if name in _CASTS:
                return self._cast(node, name)
            if self._callee(node.func) is not None:
                raise self.err(node, f"the call of hybrid script {name!r} must be a statement of its own: "
                                     f"`out = {name}(...)`")
            raise self.err(node, f"calls of {name!r} are not supported in a hybrid script; it may call "
                                 f"{', '.join(KNOWN_CALLS)}, other hybrid scripts, and output_tensor/allocate "
                                 f"and the loop iterators where they belong")
        return handler(node)

    def _nargs(self, node, n, form):
        if len(node.args) not in (n if isinstance(n, tuple) else (n,)):
            raise self.err(node, f"{node.func.id} takes {form}")

    def _math(self, node, name):
        self._nargs(node, 1, "one argument")
        x = self.expr(node.args[0])
        return _MATH[name](x)

    def _cast(self, node, name):
        self._nargs(node, 1, "one argument")
        return T.cast(name, self.expr(node.args[0]))

    def call_power(self, node):
        self._nargs(node, 2, "two arguments (base, exponent)")
        return T.power(self.expr(node.args[0]), self.expr(node.args[1]))

    def call_popcount(self, node):
        self._nargs(node, 1, "one argument")
        x = self.expr(node.args[0])
        if not _dt.is_integer(x.dtype):
            raise self.err(node, f"popcount needs an integer, got {x.dtype}")
        return T.popcount(x)

    def call_abs(self, node):
        self._nargs(node, 1, "one argument")
        return T.abs(self.expr(node.args[0]))

    def _min_max(self, node, fn):
        if len(node.args) < 2:
            raise self.err(node, f"{node.func.id} takes two or more numbers")
        vals = [self.value(a) for a in node.args]
        r = vals[0]
        for v in vals[1:]:
            r = self._arith(fn, r, v, node)
        return r

    def call_min(self, node):
        return self._min_max(node, T.min)

    def call_max(self, node):
        return self._min_max(node, T.max)

    def call_len(self, node):
        self._nargs(node, 1, "one argument")
        v = self.value(node.args[0])
        if isinstance(v, (tuple, list)):
            return T.const(len(v))
        if isinstance(v, BufRef):
            shape = v.buffer.shape[len(v.prefix):]
            if not shape:
                raise self.err(node, f"len() of the scalar {v.name!r}")
            return shape[0]
        raise self.err(node, f"len() of {_describe(v)}; len takes a tensor or a tuple")

    def call_ceil_div(self, node):
        self._nargs(node, 2, "two integers")
        a, b = self.expr(node.args[0]), self.expr(node.args[1])
        if not (_dt.is_integer(a.dtype) and _dt.is_integer(b.dtype)):
            raise self.err(node, "ceil_div takes integers")
        return self._arith(lambda x, y: T.floordiv(x + y - 1, y), a, b, node)

    def call_likely(self, node):
        self._nargs(node, 1, "one condition")
        return T.likely(self._bool(self.expr(node.args[0]), node))

    def call_max_num_threads(self, node):
        from .runtime import target_max_threads
        from ...target import Target

        if len(node.args) > 1:
            raise self.err(node, "max_num_threads takes at most one argument (allow_none)")
        allow_none = True
        if node.args:
            v = self.value(node.args[0])
            allow_none = bool(E.const_int_value(v) if isinstance(v, E.IntImm) else v)
        try:
            return T.const(target_max_threads(Target.current(allow_none)))
        except Exception as err:  # noqa: BLE001 - no target: reported with the line
            raise self.err(node, str(err)) from None

    def _limit(self, node, fn):
        self._nargs(node, 1, "a dtype string")
        dtype = self.value(node.args[0])
        if not isinstance(dtype, str):
            raise self.err(node, f"{node.func.id} takes a dtype string such as \"float32\"")
        return fn(_dt.canonical(dtype))

    def call_inf(self, node):
        return self._limit(node, T.max_value)

    def call_ninf(self, node):
        return self._limit(node, T.min_value)

    def expr_Lambda(self, node):
        raise self.err(node, "lambda functions are not supported in a hybrid script")


def _true_div(a, b):
    """Python's ``/``: true division, in float32 when both sides are integers."""
    a, b = T.match_types(a, b)
    if _dt.is_integer(a.dtype) or _dt.is_bool(a.dtype):
        a, b = T.cast("float32", a), T.cast("float32", b)
    return T.div(a, b)


def _nodes_of(node, cls):
    found = []
    post_order_visit(node, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def _loads(e) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, (E.BufferLoad, E.ProducerLoad)) else None)
    return bool(found)


def _op_text(op):
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}.get(
        type(op), "?")


def _describe(v):
    if isinstance(v, BufRef):
        return f"the tensor {v.name!r}"
    if isinstance(v, (tuple, list)):
        return "a tuple"
    if isinstance(v, str):
        return f"the string {v!r}"
    if isinstance(v, E.PrimExpr):
        return f"the number `{v}`"
    return repr(v)


_STMT_HINTS = {
    "While": "`while` loops are not supported; use a for loop over range(n)",
    "Break": "`break` is not supported; guard the rest of the loop body with an if",
    "Continue": "`continue` is not supported; guard the rest of the loop body with an if",
    "FunctionDef": "functions cannot be defined inside a hybrid script; make it another @hybrid.script",
    "With": "`with` blocks are not supported in a hybrid script",
    "Try": "try/except is not supported in a hybrid script",
    "Raise": "`raise` is not supported in a hybrid script; use assert",
    "Import": "imports are not allowed inside a hybrid script; the functions it may call are built in",
    "ImportFrom": "imports are not allowed inside a hybrid script; the functions it may call are built in",
    "Global": "`global` is not supported in a hybrid script",
    "Nonlocal": "`nonlocal` is not supported in a hybrid script",
    "Delete": "`del` is not supported in a hybrid script",
    "ClassDef": "classes cannot be defined inside a hybrid script",
}


def _unsupported_stmt(st):
    return _STMT_HINTS.get(type(st).__name__, f"the statement {type(st).__name__} is not supported in a hybrid "
                                              "script")


def _unsupported_expr(node):
    kind = type(node).__name__
    hints = {
        "ListComp": "list comprehensions are not supported; write a for loop",
        "GeneratorExp": "generator expressions are not supported; write a for loop",
        "DictComp": "dict comprehensions are not supported",
        "SetComp": "set comprehensions are not supported",
        "Dict": "dicts are not supported in a hybrid script",
        "Set": "sets are not supported in a hybrid script",
        "JoinedStr": "f-strings are not supported in a hybrid script",
        "Starred": "*args unpacking is not supported in a hybrid script",
        "NamedExpr": "the walrus operator := is not supported",
        "Await": "await is not supported",
        "Yield": "yield is not supported",
    }
    return hints.get(kind, f"the expression {kind} is not supported in a hybrid script")


def _capture_value(parser, node, value, name=None):
    """A value captured from the script's closure or globals (or an element of
    one), checked: numbers, strings and tuples of them."""
    what = f"{name!r}" if name else "the element"
    if isinstance(value, (E.IntImm, E.FloatImm, E.Var, BufRef, str)):
        return value
    if isinstance(value, E.PrimExpr):
        return value
    if isinstance(value, (bool, numpy.bool_)):
        return T.const(bool(value), "bool")
    if isinstance(value, numpy.generic) and isinstance(value, (numpy.integer, numpy.floating)):
        return T.const(value.item(), _dt.canonical(value.dtype))
    if isinstance(value, numbers.Integral):
        return T.const(int(value))
    if isinstance(value, numbers.Real):
        return T.const(float(value), "float32")
    if isinstance(value, (tuple, list)):
        return tuple(_capture_value(parser, node, v, name) for v in value)
    if isinstance(value, Tensor):
        raise parser.err(node, f"{what} is the tensor {value.name!r} from the enclosing code; pass tensors to "
                               f"the script as arguments")
    if isinstance(value, numpy.ndarray):
        raise parser.err(node, f"{what} is a numpy array from the enclosing code; pass it as an argument "
                               f"(a te.placeholder) or as a tuple of numbers")
    raise parser.err(node, f"{what} from the enclosing code is a {type(value).__name__}; a hybrid script can "
                           f"only use numbers, strings and tuples of numbers from outside")
