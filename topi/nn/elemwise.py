"""Element-wise activations (TVM's ``topi.nn.elemwise``) and tecc's fused epilogues."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, normalize_axis


def _check_tensor(x, what):
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {x!r}")


def relu(x):
    """``max(x, 0)`` element-wise (tagged ``elemwise``)."""
    _check_tensor(x, "relu")
    return te.compute(x.shape, lambda *i: _op.max(x(*i), _op.const(0, x.dtype)), name="T_relu", tag=tag.ELEMWISE)


def leaky_relu(x, alpha):
    """``x`` where positive, ``alpha * x`` elsewhere (tagged ``elemwise``)."""
    _check_tensor(x, "leaky_relu")

    def f(*i):
        v = x(*i)
        return _op.select(v > _op.const(0, x.dtype), v, v * _op.const(alpha, x.dtype))

    return te.compute(x.shape, f, name="T_leaky_relu", tag=tag.ELEMWISE)


def prelu(x, slope, axis=1):
    """``x`` where positive, ``slope[c] * x`` elsewhere, ``c`` the index along
    ``axis`` (tagged ``broadcast``)."""
    _check_tensor(x, "prelu")
    _check_tensor(slope, "prelu")
    axis = normalize_axis(axis, len(x.shape), f"prelu({x.name!r})")
    if len(slope.shape) != 1:
        raise TopiError(f"prelu: slope {slope.name!r} must be 1-D, got shape {tuple(slope.shape)}")

    def f(*i):
        v = x(*i)
        return _op.select(v > _op.const(0, x.dtype), v, v * slope[i[axis]])

    return te.compute(x.shape, f, name="T_prelu", tag=tag.BROADCAST)


def bias_relu(x, bias, name="D"):
    """``max(x[i, j] + bias[j], 0)`` (a matmul's epilogue)."""
    return te.compute(x.shape, lambda i, j: te.max(x[i, j] + bias[j], _op.const(0, x.dtype)), name=name,
                      tag=tag.INJECTIVE)


def scale_bias_relu_add(x, scale, bias, residual, name="Out"):
    """``relu(x * scale[c] + bias[c]) + residual`` with per-channel (axis 1) ``scale``
    and ``bias``: the stages ``T1`` and ``T2`` are meant to be inlined."""
    t1 = te.compute(x.shape, lambda *i: x(*i) * scale[i[1]] + bias[i[1]], name="T1", tag=tag.INJECTIVE)
    t2 = te.compute(x.shape, lambda *i: te.max(t1(*i), _op.const(0, x.dtype)), name="T2", tag=tag.INJECTIVE)
    return te.compute(x.shape, lambda *i: t2(*i) + residual(*i), name=name, tag=tag.INJECTIVE)
