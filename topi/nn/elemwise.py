"""Element-wise activations (TVM's ``topi.nn.elemwise``: relu, leaky_relu, prelu), the
activations of transformers and mobile CNNs that TVM builds in Relay only (gelu,
hardswish, hardsigmoid, elu, selu, softplus, mish), and tecc's fused epilogues.

Each returns a tensor of the input's shape and dtype tagged ``elemwise`` (``prelu``:
``broadcast``), computed in the input's dtype.
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import dtype as _dt
from ...tir import op as _op
from .. import tag
from ..reduction import normalize_tensor_axis
from ..utils import TopiError, get_const_tuple


def _check_tensor(x, what):
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {x!r}")


def _check_float(x, what):
    _check_tensor(x, what)
    if not _dt.is_float(x.dtype):
        raise TopiError(f"{what}({x.name!r}): expected a float tensor, got dtype {x.dtype}; cast it first")


def _const(v, x):
    return _op.const(v, x.dtype)


def _unary(x, fexpr, name, tag_=tag.ELEMWISE):
    return te.compute(x.shape, lambda *i: fexpr(x(*i)), name=name, tag=tag_)


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
    axis = normalize_tensor_axis(x, axis, "prelu")
    if len(slope.shape) != 1:
        raise TopiError(f"prelu({x.name!r}): slope {slope.name!r} must be 1-D, got shape "
                        f"{get_const_tuple(slope.shape)}")
    n, c = get_const_tuple(slope.shape)[0], get_const_tuple(x.shape)[axis]
    if isinstance(n, int) and isinstance(c, int) and n != c:
        raise TopiError(f"prelu({x.name!r}): slope {slope.name!r} has {n} values but axis {axis} of x "
                        f"{get_const_tuple(x.shape)} has size {c}")

    def f(*i):
        v = x(*i)
        return _op.select(v > _op.const(0, x.dtype), v, v * slope[i[axis]])

    return te.compute(x.shape, f, name="T_prelu", tag=tag.BROADCAST)


def gelu(x, approximate="none"):
    """The Gaussian error linear unit, ``x * Phi(x)`` with ``Phi`` the standard
    normal CDF, as ``torch.nn.functional.gelu`` (TVM has it in Relay only).

    Parameters
    ----------
    x : Tensor
        Of a float dtype.
    approximate : "none" or "tanh"
        ``"none"``: ``0.5 * x * (1 + erf(x / sqrt(2)))`` (ONNX's ``Gelu``, BERT);
        ``"tanh"``: ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))``
        (GPT-2's form).

    Returns
    -------
    Tensor
        tagged ``elemwise``.
    """
    _check_float(x, "gelu")
    if approximate not in ("none", "tanh"):
        raise TopiError(f"gelu({x.name!r}): approximate must be 'none' or 'tanh', got {approximate!r}")
    half, one = _const(0.5, x), _const(1.0, x)
    if approximate == "none":
        def f(v):
            return half * v * (one + _op.erf(v * _const(0.7071067811865476, x)))
    else:
        def f(v):
            inner = _const(0.7978845608028654, x) * (v + _const(0.044715, x) * v * v * v)
            return half * v * (one + _op.tanh(inner))
    return _unary(x, f, "T_gelu")


def hardsigmoid(x, alpha=0.2, beta=0.5):
    """``max(0, min(1, alpha * x + beta))`` element-wise (ONNX's ``HardSigmoid``,
    whose defaults these are; PyTorch's ``hardsigmoid`` is ``alpha=1/6``).

    Returns
    -------
    Tensor
        tagged ``elemwise``.
    """
    _check_float(x, "hardsigmoid")
    return _unary(x, lambda v: _op.max(_op.min(_const(alpha, x) * v + _const(beta, x), _const(1, x)), _const(0, x)),
                  "T_hardsigmoid")


def hardswish(x):
    """``x * relu6(x + 3) / 6`` element-wise (ONNX's ``HardSwish``, PyTorch's
    ``hardswish``; MobileNetV3).

    Returns
    -------
    Tensor
        tagged ``elemwise``.
    """
    _check_float(x, "hardswish")

    def f(v):
        r6 = _op.max(_op.min(v + _const(3, x), _const(6, x)), _const(0, x))
        return v * r6 * _const(1.0 / 6.0, x)

    return _unary(x, f, "T_hardswish")


def elu(x, alpha=1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere (ONNX's ``Elu``).

    Returns
    -------
    Tensor
        tagged ``elemwise``.
    """
    _check_float(x, "elu")
    zero = _const(0, x)
    return _unary(x, lambda v: _op.select(v > zero, v, _const(alpha, x) * (_op.exp(_op.min(v, zero)) - _const(1, x))),
                  "T_elu")


def selu(x, alpha=1.6732632423543772, gamma=1.0507009873554805):
    """``gamma * elu(x, alpha)`` (ONNX's ``Selu``; the defaults are the
    self-normalizing constants).

    Returns
    -------
    Tensor
        tagged ``elemwise``.
    """
    _check_float(x, "selu")
    zero = _const(0, x)

    def f(v):
        neg = _const(alpha, x) * (_op.exp(_op.min(v, zero)) - _const(1, x))
        return _const(gamma, x) * _op.select(v > zero, v, neg)

    return _unary(x, f, "T_selu")


def _softplus_expr(v, beta, x):
    # log(1 + exp(b v)) / b computed without overflow: max(b v, 0) + log1p(exp(-|b v|))
    bv = v * _const(beta, x) if beta != 1 else v
    sp = _op.max(bv, _const(0, x)) + _op.log1p(_op.exp(-_op.abs(bv)))
    return sp * _const(1.0 / beta, x) if beta != 1 else sp


def softplus(x, beta=1.0):
    """``log(1 + exp(beta * x)) / beta`` element-wise (ONNX's ``Softplus`` for
    ``beta=1``), computed without overflow for large ``x``.

    Returns
    -------
    Tensor
        tagged ``elemwise``.
    """
    _check_float(x, "softplus")
    if not beta > 0:
        raise TopiError(f"softplus({x.name!r}): beta must be positive, got {beta}")
    return _unary(x, lambda v: _softplus_expr(v, beta, x), "T_softplus")


def mish(x):
    """``x * tanh(softplus(x))`` element-wise (ONNX's ``Mish``).

    Returns
    -------
    Tensor
        tagged ``elemwise``.
    """
    _check_float(x, "mish")
    return _unary(x, lambda v: v * _op.tanh(_softplus_expr(v, 1.0, x)), "T_mish")


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
