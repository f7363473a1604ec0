"""A small reference evaluator of scalar expressions.

It gives the meaning of an expression for concrete variable values, which is what
the simplifier's tests compare against: integers wrap to their dtype, ``//``/``%``
(:class:`FloorDiv`/:class:`FloorMod`) round towards minus infinity and
:class:`Div`/:class:`Mod` on integers truncate as in C.
"""
from __future__ import annotations

import math

from .. import dtype as _dt
from .. import expr as E


class EvalError(ZeroDivisionError):
    """Raised when an expression divides by zero (or reads an unbound variable)."""


def _wrap(value, dtype):
    d = _dt.parse(dtype)
    if d.is_bool:
        return bool(value)
    if d.is_float:
        return float(value)
    bits = d.bits
    value = int(value) & ((1 << bits) - 1)
    if d.is_int and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _binary(cls, a, b, dtype):
    is_float = _dt.is_float(dtype)
    if cls is E.Add:
        return a + b
    if cls is E.Sub:
        return a - b
    if cls is E.Mul:
        return a * b
    if cls is E.Min:
        return min(a, b)
    if cls is E.Max:
        return max(a, b)
    if b == 0:
        raise EvalError(f"division by zero in {cls.__name__}")
    if cls is E.FloorDiv:
        return math.floor(a / b) if is_float else a // b
    if cls is E.FloorMod:
        return a - math.floor(a / b) * b if is_float else a % b
    if cls is E.Div:
        return a / b if is_float else _trunc_div(a, b)
    if cls is E.Mod:
        return math.fmod(a, b) if is_float else a - _trunc_div(a, b) * b
    raise TypeError(f"unknown binary operator {cls.__name__}")


_CMP = {
    E.EQ: lambda a, b: a == b,
    E.NE: lambda a, b: a != b,
    E.LT: lambda a, b: a < b,
    E.LE: lambda a, b: a <= b,
    E.GT: lambda a, b: a > b,
    E.GE: lambda a, b: a >= b,
}

_MATH = {
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos,
    "tanh": math.tanh, "floor": math.floor, "ceil": math.ceil, "fabs": math.fabs,
    "erf": math.erf, "trunc": math.trunc,
}


def evaluate(expr, env=None):
    """Evaluate a scalar expression with Python numbers.

    Parameters
    ----------
    expr : PrimExpr
        The expression.  Supported: constants, variables, arithmetic, comparisons,
        logic, Select, Cast, Let, the calls ``if_then_else``, ``likely``, ``abs``,
        ``min``/``max`` style intrinsics listed in ``_MATH``, and BufferLoad when
        ``env`` maps the buffer to something indexable by a tuple (a numpy array).
    env : dict, optional
        ``Var -> value`` (and ``Buffer -> array``).

    Returns
    -------
    int, float, bool or tuple
        The value, wrapped to the expression's dtype (a tuple of lanes for vectors).

    Raises
    ------
    EvalError
        On division by zero or an unbound variable.
    """
    env = env or {}
    return _Eval(env).run(expr)


class _Eval:
    def __init__(self, env):
        self.env = dict(env)

    def run(self, e):
        cls = type(e)
        if cls is E.IntImm:
            return bool(e.value) if e.dtype == "bool" else e.value
        if cls is E.FloatImm:
            return e.value
        if isinstance(e, E.Var):
            if e not in self.env:
                raise EvalError(f"variable {e.name} has no value")
            return _wrap(self.env[e], e.dtype)
        if isinstance(e, E.BinaryOp):
            a, b = self.run(e.a), self.run(e.b)
            elem = _dt.element(e.dtype)
            if isinstance(a, tuple):  # vectors: lane by lane
                return tuple(_wrap(_binary(cls, x, y, elem), elem) for x, y in zip(a, b))
            return _wrap(_binary(cls, a, b, e.dtype), e.dtype)
        if isinstance(e, E.CmpOp):
            a, b = self.run(e.a), self.run(e.b)
            if isinstance(a, tuple):
                return tuple(bool(_CMP[cls](x, y)) for x, y in zip(a, b))
            return bool(_CMP[cls](a, b))
        if cls is E.Broadcast:
            return (self.run(e.value),) * e.lanes
        if cls is E.Ramp:
            base, stride = self.run(e.base), self.run(e.stride)
            elem = _dt.element(e.dtype)
            return tuple(_wrap(base + k * stride, elem) for k in range(e.lanes))
        if cls is E.And:
            return bool(self.run(e.a)) and bool(self.run(e.b))
        if cls is E.Or:
            return bool(self.run(e.a)) or bool(self.run(e.b))
        if cls is E.Not:
            return not self.run(e.a)
        if cls is E.Select:
            c = self.run(e.condition)
            t, f = self.run(e.true_value), self.run(e.false_value)  # both sides are evaluated
            return t if c else f
        if cls is E.Cast:
            v = self.run(e.value)
            if _dt.is_integer(e.dtype) and isinstance(v, float):
                v = math.trunc(v)
            return _wrap(v, e.dtype)
        if cls is E.Let:
            saved = self.env.get(e.var, _MISSING)
            self.env[e.var] = self.run(e.value)
            try:
                return self.run(e.body)
            finally:
                if saved is _MISSING:
                    del self.env[e.var]
                else:
                    self.env[e.var] = saved
        if cls is E.Call:
            return self.call(e)
        if cls is E.BufferLoad:
            arr = self.env.get(e.buffer)
            if arr is None:
                raise EvalError(f"buffer {e.buffer.name} has no value")
            idx = tuple(int(self.run(i)) for i in e.indices)
            return _wrap(arr[idx].item() if hasattr(arr[idx], "item") else arr[idx], e.dtype)
        raise TypeError(f"evaluate: cannot evaluate a {cls.__name__}")

    def call(self, e):
        op, args = e.op, e.args
        if op == "if_then_else":
            return self.run(args[1]) if self.run(args[0]) else self.run(args[2])
        if op == "likely":
            return self.run(args[0])
        if op == "abs":
            return _wrap(abs(self.run(args[0])), e.dtype)
        if op in _MATH:
            return _wrap(_MATH[op](self.run(args[0])), e.dtype)
        raise TypeError(f"evaluate: unknown intrinsic {op!r}")


_MISSING = object()
