"""Element-wise operators: unary math and binary arithmetic with broadcasting."""
from __future__ import annotations

from ..ir import TensorType
from ..op import REQUIRED, OpPattern, register_op
from ._util import broadcast_shapes, same_dtype, tensor_arg


def _topi():
    from ... import topi  # noqa: PLC0415 -- the compiler loads only when a model is built

    return topi


# ---------------------------------------------------------------------------------------
# binary, broadcasting
# ---------------------------------------------------------------------------------------
def _binary_infer(name, result_dtype=None):
    def infer(types, attrs):
        a, b = tensor_arg(name, types, 0), tensor_arg(name, types, 1)
        dtype = same_dtype(name, [a, b])
        return TensorType(broadcast_shapes(name, a.shape, b.shape), result_dtype or dtype)

    return infer


def _register_binary(name, topi_name, result_dtype=None):
    def lower(inputs, attrs, out_type):
        return getattr(_topi(), topi_name)(inputs[0], inputs[1])

    register_op(name, pattern=OpPattern.BROADCAST, infer=_binary_infer(name, result_dtype), lower=lower,
                num_inputs=2, doc=f"numpy-broadcasting ``{topi_name}``")


for _name, _topi_name in (("add", "add"), ("subtract", "subtract"), ("multiply", "multiply"),
                          ("divide", "divide"), ("power", "power"), ("maximum", "maximum"),
                          ("minimum", "minimum"), ("floor_divide", "floor_divide"), ("floor_mod", "floor_mod"),
                          ("mod", "mod"), ("trunc_mod", "trunc_mod")):
    _register_binary(_name, _topi_name)

# logical operators read non-zero as true and give bool, whatever the operands' dtype (topi's)
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
              "logical_xor"):
    _register_binary(_name, _name, result_dtype="bool")

for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"):
    _register_binary(_name, _name)


# ---------------------------------------------------------------------------------------
# unary, element-wise
# ---------------------------------------------------------------------------------------
def _unary_infer(name):
    def infer(types, attrs):
        return tensor_arg(name, types, 0)

    return infer


def _register_unary(name, fn_path):
    def lower(inputs, attrs, out_type):
        fn = _topi()
        for part in fn_path.split("."):
            fn = getattr(fn, part)
        return fn(inputs[0])

    register_op(name, pattern=OpPattern.ELEMWISE, infer=_unary_infer(name), lower=lower, num_inputs=1,
                inplace=True, doc=f"element-wise ``topi.{fn_path}``")


for _name, _path in (("nn.relu", "nn.relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"), ("exp", "exp"),
                     ("log", "log"), ("sqrt", "sqrt"), ("rsqrt", "rsqrt"), ("abs", "abs"),
                     ("negative", "negative"), ("erf", "erf"), ("floor", "floor"), ("ceil", "ceil"),
                     ("round", "round"), ("sign", "sign"), ("sin", "sin"), ("cos", "cos"),
                     ("reciprocal", "reciprocal"), ("copy", "identity"),
                     ("bitwise_not", "bitwise_not")):
    _register_unary(_name, _path)


# ---------------------------------------------------------------------------------------
# element-wise with attributes
# ---------------------------------------------------------------------------------------
def _clip_infer(types, attrs):
    from ..ir import GraphError  # noqa: PLC0415

    data = tensor_arg("clip", types, 0)
    for name in ("a_min", "a_max"):
        v = attrs[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise GraphError(f"clip: {name} must be a number, got {v!r}")
    if attrs["a_min"] > attrs["a_max"]:
        raise GraphError(f"clip: a_min {attrs['a_min']} is above a_max {attrs['a_max']}")
    return data


def _clip_lower(inputs, attrs, out_type):
    return _topi().clip(inputs[0], attrs["a_min"], attrs["a_max"])


register_op("clip", pattern=OpPattern.ELEMWISE, infer=_clip_infer, lower=_clip_lower, num_inputs=1,
            defaults={"a_min": REQUIRED, "a_max": REQUIRED}, inplace=True,
            doc="values limited to ``[a_min, a_max]``")

# more unary math ONNX models use
for _name, _path in (("trunc", "trunc"), ("tan", "tan"), ("asin", "asin"), ("acos", "acos"), ("atan", "atan"),
                     ("sinh", "sinh"), ("cosh", "cosh"), ("log2", "log2"), ("log10", "log10"),
                     ("asinh", "asinh"), ("acosh", "acosh"), ("atanh", "atanh")):
    _register_unary(_name, _path)


def _bool_infer(name):
    def infer(types, attrs):
        data = tensor_arg(name, types, 0)
        return TensorType(data.shape, "bool")

    return infer


def _register_test(name):
    def lower(inputs, attrs, out_type):
        return getattr(_topi(), name)(inputs[0])

    register_op(name, pattern=OpPattern.ELEMWISE, infer=_bool_infer(name), lower=lower, num_inputs=1,
                doc=f"element-wise ``topi.{name}`` (a bool result)")


for _name in ("isnan", "isinf", "isfinite", "logical_not"):
    _register_test(_name)
