"""Random numbers (TVM Relay's ``random.*``, without its key output): ``random.uniform``,
``random.normal`` and ``random.multinomial``, counter-based (:mod:`tecc.topi.random`:
Threefry-2x64-20).

Each takes ``key``, a ``uint64`` tensor ``[seed, counter]``, and a ``salt`` telling
apart the draws that share a key; element ``i`` is a pure function of ``(key, salt,
i)``.  So a draw needs no state in the kernel: the ONNX importer builds each key from
the node's seed and the model's run counter (the graph input
``tecc_random_counter``, which the graph executor sets to 0, 1, 2... on its runs),
and the same counter gives the same numbers on every target.  Uniform and normal
draws are element-wise (:attr:`~tecc.graph.op.OpPattern.INJECTIVE`: they fuse with
what reads them); a multinomial draw sums over a cumulative distribution (an
extern scan): opaque.
"""
from __future__ import annotations

from ..ir import GraphError, TensorType
from ..op import REQUIRED, OpPattern, register_op
from ._util import as_int, check_dtype, is_int_dtype, tensor_arg, topi

#: the dtypes a uniform or normal draw gives
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _key(op, types):
    key = tensor_arg(op, types, 0)
    if key.dtype != "uint64" or tuple(key.shape) != (2,):
        raise GraphError(f"{op}: key must be a uint64 tensor of shape (2,) -- [seed, counter] -- got "
                         f"{key.dtype} {tuple(key.shape)}")
    return key


def _number(op, name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GraphError(f"{op}: {name} must be a number, got {value!r}")
    return float(value)


def _draw_infer(op, params):
    def infer(types, attrs):
        _key(op, types)
        shape = attrs["shape"]
        if not isinstance(shape, (list, tuple)) or any(isinstance(d, bool) or not isinstance(d, int) or d < 0
                                                       for d in shape):
            raise GraphError(f"{op}: shape must be a list of non-negative ints, got {shape!r}")
        shape = tuple(shape)
        dtype = check_dtype(op, "dtype", attrs["dtype"])
        if dtype not in FLOAT_DTYPES:
            raise GraphError(f"{op}: dtype must be one of {', '.join(FLOAT_DTYPES)}, got {dtype}")
        for name in params:
            _number(op, name, attrs[name])
        as_int(op, "salt", attrs["salt"])
        if op == "random.uniform" and not attrs["low"] <= attrs["high"]:
            raise GraphError(f"{op}: low {attrs['low']} is above high {attrs['high']}")
        return TensorType(shape, dtype)

    return infer


def _uniform_lower(inputs, attrs, out_type):
    return topi().random.uniform(inputs[0], float(attrs["low"]), float(attrs["high"]), out_type.shape,
                                 out_type.dtype, int(attrs["salt"]))[1]


def _normal_lower(inputs, attrs, out_type):
    return topi().random.normal(inputs[0], float(attrs["mean"]), float(attrs["scale"]), out_type.shape,
                                out_type.dtype, int(attrs["salt"]))[1]


register_op("random.uniform", pattern=OpPattern.INJECTIVE, infer=_draw_infer("random.uniform", ("low", "high")),
            lower=_uniform_lower, num_inputs=1,
            defaults={"shape": REQUIRED, "dtype": "float32", "low": 0.0, "high": 1.0, "salt": 0},
            doc="values uniform in [low, high) of ``shape``, drawn from key [seed, counter] and salt (Threefry)")
register_op("random.normal", pattern=OpPattern.INJECTIVE, infer=_draw_infer("random.normal", ("mean", "scale")),
            lower=_normal_lower, num_inputs=1,
            defaults={"shape": REQUIRED, "dtype": "float32", "mean": 0.0, "scale": 1.0, "salt": 0},
            doc="normal values of ``mean`` and standard deviation ``scale`` (Box-Muller on Threefry's blocks)")


def _multinomial_infer(types, attrs):
    op = "random.multinomial"
    _key(op, types)
    weights = tensor_arg(op, types, 1)
    if weights.ndim != 2 or not weights.dtype.startswith(("float", "bfloat")):
        raise GraphError(f"{op}: weights must be a [batch, classes] float tensor, got {weights.dtype} "
                         f"{tuple(weights.shape)}")
    samples = as_int(op, "num_samples", attrs["num_samples"])
    if samples < 1:
        raise GraphError(f"{op}: num_samples must be at least 1, got {samples}")
    dtype = check_dtype(op, "dtype", attrs["dtype"])
    if not is_int_dtype(dtype):
        raise GraphError(f"{op}: dtype (of the class indices) must be an integer type, got {dtype}")
    as_int(op, "salt", attrs["salt"])
    return TensorType((weights.shape[0], samples), dtype)


def _multinomial_lower(inputs, attrs, out_type):
    weights = inputs[1]
    if weights.dtype in ("float16", "bfloat16"):
        weights = topi().cast(weights, "float32")
    return topi().random.multinomial(inputs[0], weights, int(attrs["num_samples"]), out_type.dtype,
                                     int(attrs["salt"]))[1]


register_op("random.multinomial", pattern=OpPattern.OPAQUE, infer=_multinomial_infer, lower=_multinomial_lower,
            num_inputs=2, defaults={"num_samples": REQUIRED, "dtype": "int32", "salt": 0},
            doc="``num_samples`` class indices per row of non-negative ``weights`` [batch, classes], each class "
                "drawn with probability weight / row total")
