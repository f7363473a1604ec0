"""Converters of ONNX's random operators -- RandomUniform, RandomNormal, their
``*Like`` forms, Bernoulli, Multinomial -- and of Dropout in training mode, onto
the graph's counter-based draws (:mod:`tecc.graph.ops.random`).

Each node draws from the key ``[seed, run counter]`` with a salt of its own
(:meth:`~.importer._Importer.random_key`): its ``seed`` attribute, or without one
a seed chosen when the model is imported, and the counter the graph executor
advances on every run.  So, as in onnxruntime, every run draws new numbers, and
a node with a seed draws the same sequence of them in every session; the numbers
are not onnxruntime's or numpy's (another generator: Threefry-2x64-20)."""
from __future__ import annotations

import secrets

import numpy as np

from .common import _np_dtype

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _seed(node) -> int:
    """The node's ``seed`` -- a float attribute (the random operators': its float32
    bits) or an int (Dropout's) -- or, without one, a random seed."""
    seed = node.attr("seed", None)
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, (int, np.integer)):
        return int(seed) % (1 << 64)
    return int(np.array(seed, "float32").view("uint32"))


def _float_dtype(node, dtype) -> str:
    if dtype not in _FLOATS:
        node.fail(f"dtype {dtype} must be a floating-point type ({', '.join(_FLOATS)})")
    return dtype


def _uniform(ctx, shape, dtype, node, low=0.0, high=1.0):
    key, salt = ctx.random_key(_seed(node))
    return ctx.call("random.uniform", key, shape=tuple(int(d) for d in shape), dtype=dtype, low=float(low),
                    high=float(high), salt=salt)


def _random(kind, like):
    def convert(ctx, node, inputs):
        if like:
            shape = ctx.shape(inputs[0])
            given = node.attr("dtype", None)
            dtype = ctx.dtype_of(inputs[0]) if given is None else _np_dtype(int(given), node.where)
        else:
            shape = tuple(node.required("shape"))
            dtype = _np_dtype(int(node.attr("dtype", 1)), node.where)
        dtype = _float_dtype(node, dtype)
        if kind == "uniform":
            low, high = float(node.attr("low", 0.0)), float(node.attr("high", 1.0))
            if not low <= high:
                node.fail(f"low {low} is above high {high}")
            return _uniform(ctx, shape, dtype, node, low, high)
        key, salt = ctx.random_key(_seed(node))
        return ctx.call("random.normal", key, shape=tuple(int(d) for d in shape), dtype=dtype,
                        mean=float(node.attr("mean", 0.0)), scale=float(node.attr("scale", 1.0)), salt=salt)

    return convert


def _bernoulli(ctx, node, inputs):
    # 1 where a uniform value in [0, 1) falls below the probability
    p = inputs[0]
    given = node.attr("dtype", None)
    dtype = ctx.dtype_of(p) if given is None else _np_dtype(int(given), node.where)
    draw = _uniform(ctx, ctx.shape(p), "float64" if ctx.dtype_of(p) == "float64" else "float32", node)
    return ctx.cast(ctx.call("less", draw, ctx.cast(p, ctx.dtype_of(draw))), dtype)


def _multinomial(ctx, node, inputs):
    # the input holds unnormalized log-probabilities [batch, classes] (or [classes], as torch's
    # multinomial takes them: the samples are then [sample_size])
    x = inputs[0]
    if ctx.rank(x) not in (1, 2):
        node.fail(f"the input has shape {ctx.shape(x)}; Multinomial takes [batch_size, class_size] (or "
                  "[class_size])")
    flat = ctx.rank(x) == 1
    if flat:
        x = ctx.reshape(x, (1,) + tuple(ctx.shape(x)))
    dtype = _np_dtype(int(node.attr("dtype", 6)), node.where)
    if dtype not in ("int32", "int64"):
        node.fail(f"dtype {dtype} must be int32 or int64")
    samples = int(node.attr("sample_size", 1))
    if samples < 1:
        node.fail(f"sample_size {samples} must be at least 1")
    wide = ctx.cast(x, "float64" if ctx.dtype_of(x) == "float64" else "float32")
    weights = ctx.call("exp", ctx.call("subtract", wide, ctx.call("max", wide, axis=(1,), keepdims=True)))
    key, salt = ctx.random_key(_seed(node))
    out = ctx.call("random.multinomial", key, weights, num_samples=samples, dtype=dtype, salt=salt)
    return ctx.reshape(out, (samples,)) if flat else out


def dropout_training(ctx, node, x, ratio: float):
    """Dropout in training mode: each element kept where a uniform value is at least
    ``ratio``, scaled by ``1 / (1 - ratio)``; ``[output, mask]``."""
    if not 0.0 <= ratio < 1.0:
        node.fail(f"ratio {ratio} must be in [0, 1)")
    dtype = ctx.dtype_of(x)
    if dtype not in _FLOATS:
        node.fail(f"the input is {dtype}; Dropout drops floating-point elements")
    draw = _uniform(ctx, ctx.shape(x), "float64" if dtype == "float64" else "float32", node)
    mask = ctx.call("greater_equal", draw, ctx.const(np.array(ratio), ctx.dtype_of(draw)))
    scale = ctx.const(np.array(1.0 / (1.0 - ratio)), dtype)
    out = ctx.call("multiply", ctx.call("multiply", x, ctx.cast(mask, dtype)), scale)
    return [out, mask]


RANDOM_CONVERTERS = {"RandomUniform": _random("uniform", False), "RandomNormal": _random("normal", False),
                     "RandomUniformLike": _random("uniform", True), "RandomNormalLike": _random("normal", True),
                     "Bernoulli": _bernoulli, "Multinomial": _multinomial}
