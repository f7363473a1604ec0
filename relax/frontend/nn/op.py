"""Operators on traced tensors (Relax's ``nn.op``): each adds a call of a graph
operator (:mod:`tecc.graph.op`) to the function being exported."""
from __future__ import annotations

from ....graph import op as _graph_op
from ....graph.ir import Expr, GraphError, const


class Tensor:
    """A value of the model being traced (a graph expression)."""

    def __init__(self, expr):
        self._expr = expr

    @property
    def expr(self):
        return self._expr

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __mul__(self, other):
        return multiply(self, other)

    def __rmul__(self, other):
        return multiply(other, self)

    def __sub__(self, other):
        return subtract(self, other)

    def __matmul__(self, other):
        return matmul(self, other)

    def __repr__(self):
        return f"nn.Tensor({self._expr.op.name if hasattr(self._expr, 'op') else type(self._expr).__name__})"


def wrap(value, where="nn.op"):
    """``value`` as a :class:`Tensor` (numbers become float32 constants)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, Expr):
        return Tensor(value)
    if isinstance(value, (int, float)):
        return Tensor(const(float(value), "float32"))
    raise GraphError(f"{where}: expected an nn.Tensor, got {type(value).__name__}")


def _call(name, *args, **attrs):
    return Tensor(_graph_op.call(name, *[wrap(a, name).expr for a in args], **attrs))


def add(a, b):
    return _call("add", a, b)


def subtract(a, b):
    return _call("subtract", a, b)


def multiply(a, b):
    return _call("multiply", a, b)


def relu(x):
    return _call("nn.relu", x)


def linear(x, weight):
    """``x @ weight.T`` (weight ``(out, in)``): ``nn.dense``."""
    return _call("nn.dense", x, weight)


def matmul(a, b):
    """``a @ b``."""
    return _call("nn.matmul", a, b)
