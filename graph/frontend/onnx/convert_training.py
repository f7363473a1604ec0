"""Converters of ONNX's training operators (domain ``ai.onnx.preview.training``):
the optimizers' update steps Adagrad, Adam and Momentum (SGD with momentum, or
Nesterov's).  Each node updates one or more tensors with the same learning rate
``R`` and step count ``T`` (scalars, which may be computed at run time: the step's
``T > 0`` tests become ``where``), element-wise, as ONNX's operator documentation
writes it; a model is one optimizer step, run once per training step by its
caller."""
from __future__ import annotations

import numpy as np

#: the domain of ONNX's training operators
TRAINING_DOMAIN = "ai.onnx.preview.training"


def _groups(node, inputs, per: int):
    """``(R, T, [tensors of group 0], [tensors of group 1], ...)``: the inputs after
    ``R`` and ``T`` are ``per`` lists of equal length (X..., G..., V..., H...)."""
    rest = inputs[2:]
    if len(inputs) < 2 + per or len(rest) % per:
        node.fail(f"it has {len(inputs)} inputs; it takes R, T and then {per} inputs per optimized tensor, "
                  f"{per} groups of equal length")
    n = len(rest) // per
    return inputs[0], inputs[1], [rest[i * n:(i + 1) * n] for i in range(per)]


def _scalar(ctx, x, like):
    """Scalar ``x`` (a graph value) as ``like``'s dtype, reshaped to rank 0."""
    return ctx.reshape(ctx.cast(x, ctx.dtype_of(like)), ())


def _const(ctx, value, like):
    return ctx.const(np.array(value), ctx.dtype_of(like))


def _regularized(ctx, norm, x, g):
    """``norm * x + g``: the gradient with the L2 regularization term's."""
    return g if norm == 0.0 else ctx.call("add", ctx.call("multiply", _const(ctx, norm, x), x), g)


def _adagrad(ctx, node, inputs):
    r, t, (xs, gs, hs) = _groups(node, inputs, 3)
    decay = float(node.attr("decay_factor", 0.0))
    eps = float(node.attr("epsilon", 1e-6))
    norm = float(node.attr("norm_coefficient", 0.0))
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs):
        one = _const(ctx, 1.0, x)
        # the learning rate decayed by the step count: R / (1 + T * decay_factor)
        rate = ctx.call("divide", _scalar(ctx, r, x),
                        ctx.call("add", one, ctx.call("multiply", _scalar(ctx, t, x), _const(ctx, decay, x))))
        g = _regularized(ctx, norm, x, g)
        h2 = ctx.call("add", h, ctx.call("multiply", g, g))
        scale = ctx.call("add", ctx.call("sqrt", h2), _const(ctx, eps, x))
        new_x.append(ctx.call("subtract", x, ctx.call("divide", ctx.call("multiply", rate, g), scale)))
        new_h.append(h2)
    return new_x + new_h


def _adam(ctx, node, inputs):
    r, t, (xs, gs, vs, hs) = _groups(node, inputs, 4)
    alpha = float(node.attr("alpha", 0.9))
    beta = float(node.attr("beta", 0.999))
    eps = float(node.attr("epsilon", 1e-6))
    norm = float(node.attr("norm_coefficient", 0.0))
    post = float(node.attr("norm_coefficient_post", 0.0))
    new_x, new_v, new_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        g = _regularized(ctx, norm, x, g)
        v2 = ctx.call("add", ctx.call("multiply", _const(ctx, alpha, x), v),
                      ctx.call("multiply", _const(ctx, 1.0 - alpha, x), g))
        h2 = ctx.call("add", ctx.call("multiply", _const(ctx, beta, x), h),
                      ctx.call("multiply", _const(ctx, 1.0 - beta, x), ctx.call("multiply", g, g)))
        scale = ctx.call("add", ctx.call("sqrt", h2), _const(ctx, eps, x))
        # bias correction from the first step on: R * sqrt(1 - beta^T) / (1 - alpha^T)
        tf, rate = _scalar(ctx, t, x), _scalar(ctx, r, x)
        one = _const(ctx, 1.0, x)
        corrected = ctx.call("divide", ctx.call("multiply", rate, ctx.call(
            "sqrt", ctx.call("subtract", one, ctx.call("power", _const(ctx, beta, x), tf)))),
            ctx.call("subtract", one, ctx.call("power", _const(ctx, alpha, x), tf)))
        rate = ctx.call("where", ctx.call("greater", tf, _const(ctx, 0.0, x)), corrected, rate)
        stepped = ctx.call("subtract", x, ctx.call("multiply", rate, ctx.call("divide", v2, scale)))
        new_x.append(ctx.call("multiply", _const(ctx, 1.0 - post, x), stepped) if post else stepped)
        new_v.append(v2)
        new_h.append(h2)
    return new_x + new_v + new_h


def _momentum(ctx, node, inputs):
    r, t, (xs, gs, vs) = _groups(node, inputs, 3)
    alpha, beta = float(node.required("alpha")), float(node.required("beta"))
    norm = float(node.required("norm_coefficient"))
    mode = node.required("mode")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("standard", "nesterov"):
        node.fail(f"mode {mode!r} must be 'standard' or 'nesterov'")
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs):
        g = _regularized(ctx, norm, x, g)
        # the gradient's coefficient is 1 at the first step (T = 0), beta after
        tf = _scalar(ctx, t, x)
        coef = ctx.call("where", ctx.call("greater", tf, _const(ctx, 0.0, x)), _const(ctx, beta, x),
                        _const(ctx, 1.0, x))
        v2 = ctx.call("add", ctx.call("multiply", _const(ctx, alpha, x), v), ctx.call("multiply", coef, g))
        step = v2 if mode == "standard" else ctx.call("add", g, ctx.call("multiply", _const(ctx, alpha, x), v2))
        new_x.append(ctx.call("subtract", x, ctx.call("multiply", _scalar(ctx, r, x), step)))
        new_v.append(v2)
    return new_x + new_v


TRAINING_CONVERTERS = {"Adagrad": _adagrad, "Adam": _adam, "Momentum": _momentum}

__all__ = ["TRAINING_CONVERTERS", "TRAINING_DOMAIN"]
