"""Inference simplification: operators whose training behaviour does not apply.

``nn.batch_norm(x, gamma, beta, mean, var)`` becomes ``x * scale + shift`` with
``scale = gamma / sqrt(var + epsilon)`` and ``shift = beta - mean * scale`` (per
channel, expanded to broadcast along the channel axis); its second and third
outputs (the moving statistics) become ``mean`` and ``var`` themselves.  With the
statistics constant, :func:`~.fold_constant.fold_constant` turns ``scale`` and
``shift`` into constants, and :func:`~.fold_scale_axis.fold_scale_axis` folds them
into a preceding conv2d or dense.  ``nn.dropout`` becomes its input.
"""
from __future__ import annotations

import numpy as np

from ..ir import Constant, Module, Tuple, const
from ..op import Op, call, list_ops
from .dead_code import TupleAccessFolder
from .infer_type import infer_type


def _per_channel(vec, axis, ndim):
    """``vec`` (shape ``(C,)``) shaped to broadcast along ``axis`` of a rank-``ndim``
    tensor: ``(C, 1, 1)`` for axis 1 of NCHW."""
    trailing = ndim - 1 - axis
    if trailing == 0:
        return vec
    return call("expand_dims", vec, axis=1, num_newaxis=trailing)


def _batch_norm_parts(node):
    """``(out, mean, var)`` of an inference batch norm as graph values."""
    data, gamma, beta, mean, var = node.args
    attrs = node.attrs
    ty = data.checked_type
    axis = attrs["axis"] % ty.ndim
    eps = const(float(attrs["epsilon"]), ty.dtype)
    inv_std = call("divide", const(1.0, ty.dtype), call("sqrt", call("add", var, eps)))
    scale = call("multiply", gamma, inv_std) if attrs["scale"] else inv_std
    shift = call("negative", call("multiply", mean, scale))
    if attrs["center"]:
        shift = call("add", beta, shift)
    out = call("add", call("multiply", data, _per_channel(scale, axis, ty.ndim)), _per_channel(shift, axis, ty.ndim))
    return out, mean, var


class _Simplify(TupleAccessFolder):
    def visit_Call(self, node):
        new = self.generic_visit(node)
        if not isinstance(new.op, Op) or new.op.name not in ("nn.batch_norm", "nn.dropout"):
            return new
        if new.op.name == "nn.batch_norm":
            return Tuple(_batch_norm_parts(new))
        if new.op.name == "nn.dropout":
            data = new.args[0]
            return Tuple([data, _ones_like(data)])
        return new


def _ones_like(data):
    """Dropout's mask at inference: ones of ``data``'s shape (usually dead at once)."""
    ty = data.checked_type
    if "ones_like" in list_ops():
        return call("ones_like", data)
    return Constant(np.ones(ty.shape, ty.dtype))


def simplify_inference(mod: Module) -> Module:
    """Rewrite batch norm into multiply and add, and remove dropout (see the
    module's docstring).

    Parameters
    ----------
    mod : tecc.graph.Module
        Typed (types are inferred when missing).

    Returns
    -------
    tecc.graph.Module
        The same module when it has neither operator.
    """
    infer_type(mod)
    return mod.map_functions(lambda fn: _Simplify().visit(fn), primitive=True)


__all__ = ["simplify_inference"]
