"""Scale-axis folding: a per-output-channel scale after a conv2d or dense goes into
its weight.

``multiply(conv2d(x, w), s)`` with ``s`` constant along every axis but the output
channel becomes ``conv2d(x, w * s')`` (``s'`` is ``s`` shaped along the weight's
output-channel axis), and the same through a ``bias_add`` or per-channel ``add``
between them (the bias is scaled too).  A per-channel constant ``add`` after a
conv2d or dense becomes an ``nn.bias_add`` with a 1-D bias, and two biases in a row
become one.  After :func:`~.simplify_inference.simplify_inference`, this is how a
batch norm disappears into the convolution before it; the products of constants it
leaves are folded by :func:`~.fold_constant.fold_constant`.

The rewrite applies when the weight is a constant (so the product folds), the
layouts are NCHW/OIHW (conv2d) or the dense weight is ``(units, in)``, and the
conv2d/dense value has no other user.
"""
from __future__ import annotations

import numpy as np

from ..ir import Call, Constant, GraphRewriter, Module, TensorType, post_order_visit
from ..op import Op, call
from .infer_type import infer_type


def _op_name(node):
    return node.op.name if isinstance(node, Call) and isinstance(node.op, Op) else None


def _channel_axis(anchor):
    """The output-channel axis of a conv2d/dense call's output, or None when the
    layouts are not the ones handled."""
    name = _op_name(anchor)
    if name == "nn.conv2d":
        if anchor.attrs.get("data_layout", "NCHW") == "NCHW" and anchor.attrs.get("kernel_layout", "OIHW") == "OIHW":
            return 1
        return None
    if name == "nn.dense":
        return anchor.checked_type.ndim - 1  # the last axis
    return None


def _per_channel_vector(const, out_ty: TensorType, axis: int):
    """``const``'s values as a 1-D vector along ``axis`` of ``out_ty``, or None when
    it varies along another axis (or would broadcast the output larger)."""
    if not isinstance(const, Constant) or not isinstance(out_ty, TensorType):
        return None
    data = const.data
    if data.ndim > out_ty.ndim or str(data.dtype) != out_ty.dtype:
        return None
    shape = (1,) * (out_ty.ndim - data.ndim) + data.shape
    channels = out_ty.shape[axis]
    for k, d in enumerate(shape):
        if k != axis and d != 1:
            return None
        if k == axis and d not in (1, channels):
            return None
    vec = data.reshape(shape).reshape(-1)
    return np.broadcast_to(vec, (channels,)).copy()


def _weight_scale(anchor, vec):
    """``vec`` shaped to multiply the anchor's weight along its output channels."""
    w = anchor.args[1].checked_type
    return Constant(vec.reshape((vec.shape[0],) + (1,) * (w.ndim - 1)))


class _Fold(GraphRewriter):
    def __init__(self, uses):
        super().__init__()
        self.uses = uses
        self.origin = {}  # rewritten node -> the node of the input graph it stands for

    def visit(self, expr):
        result = super().visit(expr)
        self.origin.setdefault(result, expr)
        return result

    def _single_use(self, node):
        return self.uses.get(self.origin.get(node, node), 0) <= 1

    def _anchor_of(self, value):
        """``(anchor, bias vector or None)`` when ``value`` is a conv2d/dense with a
        constant weight, possibly under one bias_add with a constant bias."""
        bias = None
        if _op_name(value) == "nn.bias_add" and self._single_use(value.args[0]):
            b = value.args[1]
            if not isinstance(b, Constant):
                return None, None
            bias, value = b, value.args[0]
        if _op_name(value) not in ("nn.conv2d", "nn.dense") or not isinstance(value.args[1], Constant):
            return None, None
        if _channel_axis(value) is None:
            return None, None
        return value, bias


    def visit_Call(self, node):
        new = self.generic_visit(node)
        name = _op_name(new)
        if name == "multiply":
            return self._fold_multiply(node, new)
        if name == "add":
            return self._add_to_bias(node, new)
        if name == "nn.bias_add":
            return self._merge_biases(new)
        return new

    def _fold_multiply(self, old, new):
        for k in (0, 1):
            value, scale = new.args[k], new.args[1 - k]
            if not self._single_use(old.args[k]):
                continue
            anchor, bias = self._anchor_of(value)
            if anchor is None:
                continue
            axis = _channel_axis(anchor)
            vec = _per_channel_vector(scale, old.checked_type, axis)
            if vec is None or old.checked_type != old.args[k].checked_type:
                continue
            weight = call("multiply", anchor.args[1], _weight_scale(anchor, vec))
            out = Call(anchor.op, [anchor.args[0], weight], anchor.attrs)
            if bias is not None:
                out = call("nn.bias_add", out, call("multiply", bias, Constant(vec)), axis=axis)
            return out
        return new

    def _add_to_bias(self, old, new):
        for k in (0, 1):
            value, shift = new.args[k], new.args[1 - k]
            if _op_name(value) not in ("nn.conv2d", "nn.dense", "nn.bias_add") or not self._single_use(old.args[k]):
                continue
            anchor = value.args[0] if _op_name(value) == "nn.bias_add" else value
            axis = _channel_axis(anchor) if _op_name(anchor) in ("nn.conv2d", "nn.dense") else None
            if axis is None or old.checked_type != old.args[k].checked_type:
                continue
            vec = _per_channel_vector(shift, old.checked_type, axis)
            if vec is None:
                continue
            return self._merge_biases(call("nn.bias_add", value, Constant(vec), axis=axis))
        return new

    def _merge_biases(self, node):
        inner = node.args[0]
        if (_op_name(inner) == "nn.bias_add" and inner.attrs["axis"] == node.attrs["axis"]
                and self._single_use(inner)):
            return call("nn.bias_add", inner.args[0], call("add", inner.args[1], node.args[1]),
                        axis=node.attrs["axis"])
        return node


def _use_counts(fn) -> dict:
    uses = {}

    def count(node):
        if isinstance(node, Call):
            for a in node.args:
                uses[a] = uses.get(a, 0) + 1
        elif hasattr(node, "fields"):
            for f in node.fields:
                uses[f] = uses.get(f, 0) + 1
        elif hasattr(node, "tuple_value"):
            uses[node.tuple_value] = uses.get(node.tuple_value, 0) + 1

    post_order_visit(fn, count)
    return uses


def fold_scale_axis(mod: Module) -> Module:
    """Fold per-channel scales and shifts after conv2d / dense into its weight and a
    bias (see the module's docstring).

    Parameters
    ----------
    mod : tecc.graph.Module

    Returns
    -------
    tecc.graph.Module
        The same module when nothing folded.
    """
    infer_type(mod)
    return mod.map_functions(lambda fn: _Fold(_use_counts(fn)).visit(fn))


__all__ = ["fold_scale_axis"]
