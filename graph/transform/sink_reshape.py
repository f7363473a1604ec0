"""Reshapes moved below the element-wise operators that follow them.

An ONNX ``MatMul`` of a ``(batch, tokens, features)`` input imports as a reshape to
2-D, a dense and a reshape back, and the bias ``Add`` and activation come after the
reshape back.  Fusion keeps a reshape (injective) out of the dense's kernel, so the
bias, the activation and a residual add ran in a kernel of their own.  This pass
rewrites ``f(reshape(x), y...)`` -- ``f`` element-wise or broadcasting, without an
axis of its own -- into ``reshape(f(x, y'...))`` when every other operand ``y``
reads the same elements either way:

* a scalar, or any operand whose non-1 dimensions lie within trailing axes that the
  reshape leaves as they were (a bias along the last axis): it is used as it is;
* an operand of the result's shape: it is reshaped like ``x`` (a view, see
  :mod:`tecc.graph.memory_plan`) -- a residual added to the projection.

Repeated bottom-up, a reshape sinks through a chain (``add``, ``relu``, ``add``...)
until an operator that is not element-wise; the operators it passed fuse into the
dense's kernel, and the reshape left alone computes nothing.  The result's shape
and values are unchanged.
"""
from __future__ import annotations

import numpy as np

from ..ir import Call, GraphRewriter, Module, TensorType
from ..op import Op, OpPattern, call
from .infer_type import infer_type

#: the attributes an element-wise operator may have and still commute with a reshape
#: (none of them names an axis)
NEUTRAL_ATTRS = frozenset({"dtype", "saturate", "a_min", "a_max", "alpha"})


def _shape(expr):
    """The constant shape of a tensor-typed value, or None (a tuple, a symbolic dimension)."""
    ty = expr.checked_type
    if not isinstance(ty, TensorType) or not all(isinstance(d, (int, np.integer)) for d in ty.shape):
        return None
    return tuple(int(d) for d in ty.shape)


def _is_reshape(expr) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "reshape"


def _commutes(node) -> bool:
    op = node.op
    return (isinstance(op, Op) and op.pattern <= OpPattern.BROADCAST and bool(node.args)
            and set(op.defaults) <= NEUTRAL_ATTRS)


def _kept_trailing(before, after) -> int:
    """How many trailing axes a reshape from ``before`` to ``after`` leaves as they were."""
    k = 0
    while k < min(len(before), len(after)) and before[-1 - k] == after[-1 - k]:
        k += 1
    return k


class _Sink(GraphRewriter):

    def visit_Call(self, node):
        node = self.generic_visit(node)
        if not isinstance(node, Call) or not _commutes(node):
            return node
        out = _shape(node)
        shapes = [_shape(a) for a in node.args]
        moving = [_is_reshape(a) and shape == out for a, shape in zip(node.args, shapes)]
        if out is None or not any(moving):
            return node
        inners = {_shape(a.args[0]) for a, m in zip(node.args, moving) if m}
        if len(inners) != 1 or None in inners:
            return node
        (inner,) = inners
        kept = _kept_trailing(inner, out)
        args = []
        for a, shape, m in zip(node.args, shapes, moving):
            if m:
                args.append(a.args[0])
                continue
            if shape is None:
                return node
            if shape == out:
                args.append(call("reshape", a, newshape=inner))
                continue
            dims = list(shape)
            while dims and dims[0] == 1:  # leading 1s broadcast anywhere
                dims.pop(0)
            if len(dims) > kept:
                return node
            args.append(a)
        return call("reshape", Call(node.op, tuple(args), node.attrs, node.span), newshape=out)


def sink_reshape(mod: Module) -> Module:
    """Move reshapes below the element-wise operators that follow them (see the
    module's docstring).

    Returns
    -------
    tecc.graph.Module
        The same module when no reshape could move.
    """
    infer_type(mod)
    return mod.map_functions(lambda fn: _Sink().visit(fn))


__all__ = ["sink_reshape"]
