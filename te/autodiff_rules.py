"""Derivatives of scalar expressions: the rules behind :func:`tecc.te.gradient`.

:func:`derivative` differentiates one expression with respect to one float
variable.  :mod:`tecc.te.autodiff` turns every read of the tensor being
differentiated into such a variable first, so tensor reads never reach the rules
here: a :class:`~tecc.tir.ProducerLoad` that is left is another tensor, a constant.

One rule per node kind (and one per intrinsic in :data:`CALL_RULES`), each with
its law in a comment.  ``d`` below is the derivative of the (only) argument
``x``, ``y`` the call's own value.  Integer and boolean expressions have no
derivative (zero), as index arithmetic and conditions do not carry gradients.
"""
from __future__ import annotations

import math

from ..errors import TeccError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import op as _op
from ..tir.functor import IRVisitor, substitute


# ---------------------------------------------------------------------------------
# arithmetic that drops the zeros and ones derivatives are full of
# ---------------------------------------------------------------------------------

def is_zero(e) -> bool:
    """True for the constant 0 (integer or float)."""
    return type(e) in (E.IntImm, E.FloatImm) and e.value == 0


def is_one(e) -> bool:
    return type(e) in (E.IntImm, E.FloatImm) and e.dtype != "bool" and e.value == 1


def zero(dtype):
    return _op.const(0, dtype)


def add(a, b):
    """``a + b``; ``0 + b -> b``, ``a + 0 -> a``."""
    a, b = _op.match_types(a, b)
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return _op.add(a, b)


def sub(a, b):
    """``a - b``; ``a - 0 -> a``, ``0 - b -> -b``."""
    a, b = _op.match_types(a, b)
    if is_zero(b):
        return a
    if is_zero(a):
        return neg(b)
    return _op.sub(a, b)


def neg(a):
    """``-a``; ``-(-x) -> x``."""
    if type(a) is E.Sub and is_zero(a.a):
        return a.b
    return _op.neg(a)


def mul(a, b):
    """``a * b``; ``0 * b -> 0``, ``1 * b -> b`` (and mirrored)."""
    a, b = _op.match_types(a, b)
    if is_zero(a) or is_zero(b):
        return zero(a.dtype)
    if is_one(a):
        return b
    if is_one(b):
        return a
    return _op.mul(a, b)


def div(a, b):
    """``a / b``; ``0 / b -> 0``, ``a / 1 -> a``."""
    a, b = _op.match_types(a, b)
    if is_zero(a):
        return zero(a.dtype)
    if is_one(b):
        return a
    return _op.div(a, b)


def select(cond, t, f):
    """``cond ? t : f``; ``c ? 0 : 0 -> 0``."""
    t, f = _op.match_types(t, f)
    if is_zero(t) and is_zero(f):
        return t
    return _op.select(cond, t, f)


def _c(value, like):
    """A float constant of ``like``'s dtype."""
    return _op.const(value, like.dtype)


# ---------------------------------------------------------------------------------
# intrinsics: name -> rule(x args, d derivatives of the args, y the call) -> derivative
# ---------------------------------------------------------------------------------

def _unary(rule):
    return lambda args, ds, y: mul(ds[0], rule(args[0], y)) if not is_zero(ds[0]) else zero(y.dtype)


def _zero_rule(args, ds, y):
    return zero(y.dtype)


def _pow(args, ds, y):
    # (x^b)' = x' * b * x^(b-1) + b' * y * log(x)
    (x, b), (dx, db) = args, ds
    out = zero(y.dtype)
    if not is_zero(dx):
        out = mul(dx, mul(b, _op.power(x, sub(b, _c(1.0, b)))))
    if not is_zero(db):
        out = add(out, mul(db, mul(y, _op.log(x))))
    return out


def _fmod(args, ds, y):
    # fmod(a, b) = a - trunc(a / b) * b  ->  a' - trunc(a / b) * b'
    (a, b), (da, db) = args, ds
    return sub(da, mul(_op.trunc(_op.div(a, b)), db))


def _atan2(args, ds, y):
    # atan2(a, b)' = (b * a' - a * b') / (a^2 + b^2)
    (a, b), (da, db) = args, ds
    return div(sub(mul(b, da), mul(a, db)), _op.add(_op.mul(a, a), _op.mul(b, b)))


def _hypot(args, ds, y):
    # hypot(a, b)' = (a * a' + b * b') / y
    (a, b), (da, db) = args, ds
    return div(add(mul(a, da), mul(b, db)), y)


def _if_then_else(args, ds, y):
    # (c ? t : f)' = c ? t' : f'   (lazy, as the original)
    c, (dt, df) = args[0], ds[1:]
    if is_zero(dt) and is_zero(df):
        return zero(y.dtype)
    return _op.if_then_else(c, dt, df)


def _abs(args, ds, y):
    # |x|' = x' * (x >= 0 ? 1 : -1)
    x = args[0]
    if not _dt.is_float(x.dtype):
        return zero(y.dtype)
    return mul(ds[0], _op.select(_op.ge(x, zero(x.dtype)), _c(1.0, x), _c(-1.0, x)))


_LN2, _LN10 = math.log(2.0), math.log(10.0)

#: the derivative of every differentiable intrinsic
CALL_RULES = {
    "exp": _unary(lambda x, y: y),                                          # exp(x)' = x' * y
    "exp2": _unary(lambda x, y: _op.mul(y, _c(_LN2, x))),                   # 2^x' = x' * y * ln 2
    "exp10": _unary(lambda x, y: _op.mul(y, _c(_LN10, x))),                 # 10^x' = x' * y * ln 10
    "log": _unary(lambda x, y: _op.div(_c(1.0, x), x)),                     # log(x)' = x' / x
    "log2": _unary(lambda x, y: _op.div(_c(1.0, x), _op.mul(x, _c(_LN2, x)))),    # x' / (x ln 2)
    "log10": _unary(lambda x, y: _op.div(_c(1.0, x), _op.mul(x, _c(_LN10, x)))),  # x' / (x ln 10)
    "log1p": _unary(lambda x, y: _op.div(_c(1.0, x), _op.add(x, _c(1.0, x)))),    # x' / (1 + x)
    "sqrt": _unary(lambda x, y: _op.div(_c(0.5, x), y)),                    # sqrt(x)' = x' / (2 y)
    "rsqrt": _unary(lambda x, y: _op.div(_op.mul(y, _c(-0.5, x)), x)),      # x^-1/2' = -x' y / (2x)
    "sigmoid": _unary(lambda x, y: _op.mul(y, _op.sub(_c(1.0, x), y))),     # s' = x' * y * (1 - y)
    "tanh": _unary(lambda x, y: _op.sub(_c(1.0, x), _op.mul(y, y))),        # tanh' = x' * (1 - y^2)
    "sin": _unary(lambda x, y: _op.cos(x)),                                 # sin' = x' cos x
    "cos": _unary(lambda x, y: _op.neg(_op.sin(x))),                        # cos' = -x' sin x
    "tan": _unary(lambda x, y: _op.add(_c(1.0, x), _op.mul(y, y))),         # tan' = x' (1 + y^2)
    "asin": _unary(lambda x, y: _op.rsqrt(_op.sub(_c(1.0, x), _op.mul(x, x)))),   # x' / sqrt(1 - x^2)
    "acos": _unary(lambda x, y: _op.neg(_op.rsqrt(_op.sub(_c(1.0, x), _op.mul(x, x))))),  # -x'/sqrt(1-x^2)
    "atan": _unary(lambda x, y: _op.div(_c(1.0, x), _op.add(_c(1.0, x), _op.mul(x, x)))),  # x'/(1+x^2)
    "sinh": _unary(lambda x, y: _op.cosh(x)),                               # sinh' = x' cosh x
    "cosh": _unary(lambda x, y: _op.sinh(x)),                               # cosh' = x' sinh x
    "erf": _unary(lambda x, y: _op.mul(_c(2.0 / math.sqrt(math.pi), x),     # erf' = x' 2/sqrt(pi) e^-x^2
                                       _op.exp(_op.neg(_op.mul(x, x))))),
    "fabs": _abs,                                                           # |x|' = x' sign(x)
    "abs": _abs,
    "floor": _zero_rule,                                                    # piecewise constant: 0
    "ceil": _zero_rule,
    "trunc": _zero_rule,
    "round": _zero_rule,
    "nearbyint": _zero_rule,
    "pow": _pow,                                                            # (x^b)' (see _pow)
    "fmod": _fmod,                                                          # a' - trunc(a/b) b'
    "atan2": _atan2,                                                        # (b a' - a b') / (a^2+b^2)
    "hypot": _hypot,                                                        # (a a' + b b') / y
    "if_then_else": _if_then_else,                                          # c ? t' : f'
}


class NotDifferentiable(TeccError):
    """An expression has a part tecc cannot differentiate."""


class _Derivative(IRVisitor):
    """``d(expr)/d(var)`` bottom-up (memoized per node)."""

    def __init__(self, var):
        self.var = var
        self.memo = {}

    def visit(self, node):
        hit = self.memo.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        if not _dt.is_float(node.dtype):
            out = zero(node.dtype) if node.dtype != "handle" else _op.const(0, "int32")
        else:
            out = IRVisitor.visit(self, node)
        self.memo[id(node)] = (node, out)
        return out

    def generic_visit(self, node):
        raise NotDifferentiable(f"cannot differentiate `{node}` (a {type(node).__name__})")

    # leaves
    def visit_Var(self, v):
        return _op.const(1.0, v.dtype) if v is self.var else zero(v.dtype)   # dv/dv = 1, du/dv = 0

    def visit_IntImm(self, e):
        return zero(e.dtype)

    def visit_FloatImm(self, e):
        return zero(e.dtype)

    def visit_ProducerLoad(self, e):
        return zero(e.dtype)            # another tensor: a constant here

    def visit_BufferLoad(self, e):
        return zero(e.dtype)

    # arithmetic
    def visit_Add(self, e):
        return add(self.visit(e.a), self.visit(e.b))            # (a + b)' = a' + b'

    def visit_Sub(self, e):
        return sub(self.visit(e.a), self.visit(e.b))            # (a - b)' = a' - b'

    def visit_Mul(self, e):
        da, db = self.visit(e.a), self.visit(e.b)               # (ab)' = a'b + ab'
        return add(mul(da, e.b), mul(e.a, db))

    def visit_Div(self, e):
        da, db = self.visit(e.a), self.visit(e.b)               # (a/b)' = a'/b - a b' / b^2
        return sub(div(da, e.b), div(mul(e.a, db), _op.mul(e.b, e.b)))

    def visit_Mod(self, e):
        da, db = self.visit(e.a), self.visit(e.b)               # (a mod b)' = a' - trunc(a/b) b'
        return sub(da, mul(_op.trunc(_op.div(e.a, e.b)), db))

    def visit_FloorMod(self, e):
        da, db = self.visit(e.a), self.visit(e.b)               # (a - floor(a/b) b)' = a' - floor(a/b) b'
        return sub(da, mul(_op.floor(_op.div(e.a, e.b)), db))

    def visit_FloorDiv(self, e):
        return zero(e.dtype)                                    # floor(a/b): piecewise constant

    def visit_Min(self, e):
        return select(_op.le(e.a, e.b), self.visit(e.a), self.visit(e.b))   # min' = a <= b ? a' : b'

    def visit_Max(self, e):
        return select(_op.ge(e.a, e.b), self.visit(e.a), self.visit(e.b))   # max' = a >= b ? a' : b'

    def visit_Select(self, e):
        return select(e.condition, self.visit(e.true_value), self.visit(e.false_value))  # c ? t' : f'

    def visit_Cast(self, e):
        if not _dt.is_float(e.value.dtype):
            return zero(e.dtype)                                # from an integer: constant
        d = self.visit(e.value)
        return zero(e.dtype) if is_zero(d) else _op.cast(e.dtype, d)   # cast(x)' = cast(x')

    def visit_Let(self, e):
        return self.visit(substitute(e.body, {e.var: e.value}))  # inline, then differentiate

    def visit_Call(self, e):
        rule = CALL_RULES.get(e.op)
        if rule is None:
            raise NotDifferentiable(f"cannot differentiate the intrinsic `{e.op}` in `{e}`")
        args = tuple(a for a in e.args)
        ds = tuple(self.visit(a) if isinstance(a, E.PrimExpr) else None for a in args)
        return rule(args, ds, e)


def derivative(expr, var):
    """``d expr / d var`` for a float variable ``var``.

    Parameters
    ----------
    expr : PrimExpr
        The expression, free of reductions.
    var : Var
        A float variable.

    Returns
    -------
    PrimExpr
        The derivative, of ``expr``'s dtype; the constant 0 where ``expr`` does not
        depend on ``var``.

    Raises
    ------
    NotDifferentiable
        For a node or an intrinsic without a derivative rule (the message names it).
    """
    return _Derivative(var).visit(expr)
