"""A small reference interpreter of TIR, for differential tests of passes.

:func:`run_prim_func` executes a :class:`PrimFunc` on numpy arrays, before or
after flattening: an access ``B[i, j]`` reads element ``i*s0 + j*s1`` of the
flat storage behind ``B.data``, so multi-dimensional and flattened functions
see the same memory.  Vectors (``Ramp``, ``Broadcast``, vector loads) are numpy
arrays.  Every access is bounds-checked, so a pass that drops a needed guard
fails loudly instead of reading garbage.

Semantics: integers are Python ints (no overflow); float values take the
buffer's numpy dtype; ``Div``/``Mod`` on integers truncate, ``FloorDiv``/
``FloorMod`` floor; thread loops and ``thread_extent`` attributes run serially.
It is slow -- meant for tests with small shapes.
"""
from __future__ import annotations

import math

import numpy as np

from ...runtime import dtypes as _rt_dtypes
from .. import dtype as _dt
from .. import expr as E
from .. import stmt as S
from ..functor import IRVisitor
from .. import keys
from .buffers import buffer_size, buffer_strides, is_flat


class InterpError(AssertionError):
    """The interpreted program did something illegal (out of bounds, assert)."""


def numpy_dtype(dtype):
    """The numpy dtype the interpreter computes ``dtype``'s values in (a storage
    float's as float32, a narrow integer's as the byte that holds it)."""
    d = _dt.parse(dtype).element_of()
    if d.is_bool:
        return np.dtype(bool)
    return np.dtype(str(d.value_type()))


def to_value(value, dtype):
    """Give ``value`` the numpy type of ``dtype`` (ints stay Python ints)."""
    d = _dt.parse(dtype)
    if d.lanes > 1:
        return np.asarray(value).astype(numpy_dtype(dtype))
    if d.is_float:
        return numpy_dtype(dtype).type(value)
    if d.is_bool:
        return bool(value)
    return int(value)


def _trunc_div(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        q = np.abs(a) // np.abs(b)
        return np.where((np.asarray(a) >= 0) == (np.asarray(b) >= 0), q, -q)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x).astype(np.asarray(x).dtype),
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "round": np.round, "nearbyint": np.rint, "fabs": np.fabs, "abs": np.abs,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "erf": np.vectorize(math.erf),
}
_BINARY = {
    "pow": np.power, "fmod": np.fmod, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b, "bitwise_xor": lambda a, b: a ^ b,
    "shift_left": lambda a, b: a << b, "shift_right": lambda a, b: a >> b,
}


def _reinterpret(value, src: str, dst: str):
    """The bits of ``value`` (of dtype ``src``) read as ``dst`` (a storage float's
    values are float32 numbers: their bits are the format's encoding of them)."""
    s, d = _dt.parse(src).element_of(), _dt.parse(dst).element_of()
    bits = np.dtype(f"uint{max(8, s.bits)}")
    if s.is_storage_float:
        raw = _rt_dtypes.encode(np.asarray(value, np.float32), str(s)).astype(bits)
    elif s.is_float:
        raw = np.asarray(value, numpy_dtype(src)).view(bits)
    else:  # Python ints: wrap to the width first
        raw = (np.asarray(value).astype(np.int64 if s.is_int else np.uint64) & ((1 << s.bits) - 1)).astype(bits)
    if d.is_storage_float:
        return _rt_dtypes.decode(raw, str(d))
    if d.is_narrow:  # an int4's bits, sign-extended
        half = 1 << (d.bits - 1)
        return ((raw.astype(np.int64) ^ half) - half if d.is_int else raw.astype(np.int64)).astype(numpy_dtype(dst))
    return raw.view(numpy_dtype(dst))


_INT_OPS = {E.Add: "({} + {})", E.Sub: "({} - {})", E.Mul: "({} * {})", E.FloorDiv: "({} // {})",
            E.FloorMod: "({} % {})", E.Min: "min({}, {})", E.Max: "max({}, {})", E.Div: "_tdiv({}, {})",
            E.Mod: "_tmod({}, {})"}


def _is_scalar_int(dtype) -> bool:
    d = _dt.parse(dtype)
    return d.lanes == 1 and d.is_integer


def _int_source(e, names: dict):
    """Python source computing integer expression ``e`` from ``env``, or None when ``e``
    is not plain integer arithmetic over variables and constants."""
    if isinstance(e, E.IntImm) and _is_scalar_int(e.dtype):
        return repr(int(e.value))
    if isinstance(e, E.Var) and _is_scalar_int(e.dtype):
        return f"env[{names.setdefault(e, f'v{len(names)}')}]"
    if isinstance(e, E.Cast) and _is_scalar_int(e.dtype) and _is_scalar_int(e.value.dtype):
        return _int_source(e.value, names)
    pattern = _INT_OPS.get(type(e))
    if pattern is None or not _is_scalar_int(e.dtype):
        return None
    a, b = _int_source(e.a, names), _int_source(e.b, names)
    return None if a is None or b is None else pattern.format(a, b)


def _tmod(a, b):
    return a - _trunc_div(a, b) * b


class Interpreter(IRVisitor):
    """Executes statements; ``env`` maps Var -> value, ``mem`` data Var -> flat array.

    Integer index expressions are compiled once into Python functions (they are most
    of the work of interpreting a kernel); everything else is visited node by node.
    """

    #: id of an expression -> (the expression, its compiled function or None)
    _compiled: dict = {}

    def __init__(self):
        self.env = {}
        self.mem = {}

    def index_value(self, e):
        """The value of index expression ``e`` (compiled when it is integer arithmetic)."""
        hit = Interpreter._compiled.get(id(e))
        if hit is None or hit[0] is not e:
            names = {}
            source = _int_source(e, names)
            fn = None
            if source is not None:
                scope = {name: var for var, name in names.items()}
                scope.update(_tdiv=_trunc_div, _tmod=_tmod)
                fn = eval(f"lambda env: {source}", scope)  # noqa: S307 - source built from IR nodes only
            hit = Interpreter._compiled[id(e)] = (e, fn)  # keeps e alive: its id stays unique
            if len(Interpreter._compiled) > 100000:
                Interpreter._compiled.clear()
        if hit[1] is None:
            return self.visit(e)
        try:
            return hit[1](self.env)
        except (KeyError, ZeroDivisionError):
            return self.visit(e)  # raises the interpreter's own error

    # memory -------------------------------------------------------------------
    def offset(self, buf, indices):
        idx = [self.index_value(i) for i in indices]
        off = idx[0] if is_flat(buf) else self.flat_offset(buf, idx)
        lanes = _dt.lanes(buf.dtype)
        if lanes > 1:
            # a buffer of vectors (a promoted register slot) stores lanes scalars per element
            off = np.arange(lanes) + int(off) * lanes
        return off

    def flat_offset(self, buf, idx):
        """The element offset of the evaluated indices ``idx`` (see
        :func:`~tecc.tir.analysis.buffers.flat_index`)."""
        strides = [self.visit(s) for s in buffer_strides(buf)]
        off = self.visit(buf.elem_offset) if buf.elem_offset is not None else 0
        for i, s in zip(idx, strides):
            off = off + np.asarray(i) * s if isinstance(i, np.ndarray) else off + i * s
        return off

    def storage(self, buf, offset):
        arr = self.mem.get(buf.data)
        if arr is None:
            raise InterpError(f"buffer {buf.name!r} has no storage (data {buf.data.name!r} unbound)")
        o = np.asarray(offset)
        if o.size and (o.min() < 0 or o.max() >= arr.size):
            raise InterpError(f"out-of-bounds access {buf.name}[{offset}] (storage of {arr.size} elements)")
        return arr

    def visit_BufferLoad(self, e):
        off = self.offset(e.buffer, e.indices)
        arr = self.storage(e.buffer, off)
        if isinstance(off, np.ndarray):
            return arr[off.astype(np.int64)].copy()
        return arr[int(off)]

    def visit_BufferStore(self, s):
        off = self.offset(s.buffer, s.indices)
        value = self.visit(s.value)
        arr = self.storage(s.buffer, off)
        if isinstance(off, np.ndarray):
            arr[off.astype(np.int64)] = value
        else:
            arr[int(off)] = value

    # expressions --------------------------------------------------------------
    def visit_IntImm(self, e):
        return bool(e.value) if e.dtype == "bool" else int(e.value)

    def visit_FloatImm(self, e):
        return to_value(e.value, e.dtype)

    def visit_StringImm(self, e):
        return e.value

    def visit_Var(self, v):
        if v not in self.env:
            raise InterpError(f"variable {v.name!r} has no value")
        return self.env[v]

    def visit_BinaryOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        is_float = _dt.is_float(e.dtype)
        cls = type(e)
        if cls is E.Add:
            r = a + b
        elif cls is E.Sub:
            r = a - b
        elif cls is E.Mul:
            r = a * b
        elif cls is E.Min:
            r = np.minimum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else min(a, b)
        elif cls is E.Max:
            r = np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b)
        elif cls is E.Div:
            r = a / b if is_float else _trunc_div(a, b)
        elif cls is E.Mod:
            r = np.fmod(a, b) if is_float else a - _trunc_div(a, b) * b
        elif cls is E.FloorDiv:
            r = np.floor(a / b) if is_float else a // b
        elif cls is E.FloorMod:
            r = a - np.floor(a / b) * b if is_float else a % b
        else:  # pragma: no cover - every BinaryOp is listed above
            raise AssertionError(f"interpreter: unknown binary op {cls.__name__}")
        return to_value(r, e.dtype)

    def visit_CmpOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        r = {E.EQ: lambda: a == b, E.NE: lambda: a != b, E.LT: lambda: a < b, E.LE: lambda: a <= b,
             E.GT: lambda: a > b, E.GE: lambda: a >= b}[type(e)]()
        return r if isinstance(r, np.ndarray) else bool(r)

    def visit_And(self, e):
        a = self.visit(e.a)
        if not isinstance(a, np.ndarray) and not a:
            return False
        b = self.visit(e.b)
        return np.logical_and(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(b)

    def visit_Or(self, e):
        a = self.visit(e.a)
        if not isinstance(a, np.ndarray) and a:
            return True
        b = self.visit(e.b)
        return np.logical_or(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(b)

    def visit_Not(self, e):
        a = self.visit(e.a)
        return np.logical_not(a) if isinstance(a, np.ndarray) else not a

    def visit_Select(self, e):
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if isinstance(c, np.ndarray):
            return to_value(np.where(c, t, f), e.dtype)
        return t if c else f

    def visit_Cast(self, e):
        v = self.visit(e.value)
        d = _dt.parse(e.dtype)
        if d.lanes == 1 and d.is_integer:
            return int(np.trunc(v)) if isinstance(v, (float, np.floating)) else int(v)
        return to_value(v, e.dtype)

    def visit_Ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        return base + stride * np.arange(e.lanes, dtype=np.int64)

    def visit_Broadcast(self, e):
        v = self.visit(e.value)
        return np.full(e.lanes, v, dtype=numpy_dtype(e.dtype))

    def visit_Let(self, e):
        self.env[e.var] = self.visit(e.value)
        try:
            return self.visit(e.body)
        finally:
            del self.env[e.var]

    def visit_Call(self, e):
        op = e.op
        if op == "if_then_else":
            c = self.visit(e.args[0])
            if isinstance(c, np.ndarray):
                return to_value(np.where(c, self.visit(e.args[1]), self.visit(e.args[2])), e.dtype)
            return self.visit(e.args[1]) if c else self.visit(e.args[2])
        if op == "likely":
            return self.visit(e.args[0])
        args = [self.visit(a) for a in e.args]
        if op in _UNARY:
            return to_value(_UNARY[op](args[0]), e.dtype)
        if op in _BINARY:
            return to_value(_BINARY[op](args[0], args[1]), e.dtype)
        if op == "bitwise_not":
            return to_value(~np.asarray(args[0]), e.dtype)
        if op == "popcount":
            return to_value(bin(int(args[0]) & 0xFFFFFFFFFFFFFFFF).count("1"), e.dtype)
        if op == keys.REINTERPRET:
            return to_value(_reinterpret(args[0], e.args[0].dtype, e.dtype), e.dtype)
        raise InterpError(f"interpreter: unsupported call {op!r}")

    # statements ---------------------------------------------------------------
    def visit_For(self, s):
        lo = self.visit(s.min)
        n = self.visit(s.extent)
        for i in range(lo, lo + n):
            self.env[s.loop_var] = i
            self.visit(s.body)
        self.env.pop(s.loop_var, None)

    def visit_LetStmt(self, s):
        self.env[s.var] = self.visit(s.value)
        self.visit(s.body)
        del self.env[s.var]

    def visit_AttrStmt(self, s):
        if keys.is_thread_attr(s.attr_key) and isinstance(s.node, E.IterVar):
            n = self.visit(s.value)
            for i in range(n):
                self.env[s.node.var] = i
                self.visit(s.body)
            self.env.pop(s.node.var, None)
        else:
            self.visit(s.body)

    def visit_AssertStmt(self, s):
        if not self.visit(s.condition):
            raise InterpError(f"assertion failed: {s.message}")
        self.visit(s.body)

    def allocation_size(self, buf) -> int:
        """Scalars an Allocate of ``buf`` holds (its strides count when set; a buffer
        of vectors holds ``lanes`` scalars per element)."""
        return self.visit(buffer_size(buf)) * _dt.lanes(buf.dtype)

    def visit_Allocate(self, s):
        buf = s.buffer
        self.mem[buf.data] = np.zeros(self.allocation_size(buf), dtype=numpy_dtype(buf.dtype))
        self.visit(s.body)
        del self.mem[buf.data]

    def visit_SeqStmt(self, s):
        for x in s.seq:
            self.visit(x)

    def visit_IfThenElse(self, s):
        if self.visit(s.condition):
            self.visit(s.then_case)
        elif s.else_case is not None:
            self.visit(s.else_case)

    def visit_While(self, s):
        while self.visit(s.condition):
            self.visit(s.body)

    def visit_Evaluate(self, s):
        if isinstance(s.value, E.Call) and s.value.op == keys.PREFETCH:
            return  # a cache hint: it reads nothing (its address may lie past the buffer)
        self.visit(s.value)


def run_prim_func(func: S.PrimFunc, *args):
    """Run ``func`` on numpy arrays (modified in place), for tests.

    Parameters
    ----------
    func : PrimFunc
        The function, before or after any pass.
    *args : numpy.ndarray or int
        One value per parameter, in order: an array for a buffer parameter, an int
        for a scalar one.  Trailing scalar parameters that are symbolic shape
        variables may be left out; they are read off the arrays' shapes.

    Raises
    ------
    InterpError
        On an out-of-bounds access, a failed assert or an unsupported node.
    """
    if len(args) > len(func.params):
        raise TypeError(f"{func.name} takes {len(func.params)} arguments, got {len(args)}")
    it = Interpreter()
    for p, a in zip(func.params, args):
        buf = func.buffer_map.get(p)
        if buf is None:
            it.env[p] = a
            continue
        arr = np.asarray(a)
        if not arr.flags.c_contiguous:
            raise TypeError(f"argument {buf.name} must be C-contiguous")
        it.env[p] = p
        it.mem[buf.data] = arr.reshape(-1)  # a view: writes reach the caller's array
        for extent, n in zip(buf.shape, arr.shape):
            if isinstance(extent, E.Var) and extent not in it.env:
                it.env[extent] = int(n)
    for p in func.params[len(args):]:
        if p not in it.env:
            raise TypeError(f"no value for parameter {p.name!r} of {func.name}")
    it.visit(func.body)
