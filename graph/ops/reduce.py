"""Reductions (Relay's ``sum``, ``mean``, ``max``, ``min``, ``prod``, ``all``,
``any``, ``argmax``, ``argmin``): over ``axis`` (None: every axis), keeping the
reduced axes with size 1 when ``keepdims``, or over every axis *but* ``axis`` when
``exclude``.  float16 and bfloat16 sums, means and products are computed in
float32 (:func:`._util.accumulate_in_float32`)."""
from __future__ import annotations

from ..ir import GraphError, TensorType
from ..op import OpPattern, register_op
from ._util import accumulate_in_float32, axis_list, tensor_arg, topi


def reduce_axes(op: str, ndim: int, attrs) -> list:
    """The reduced axes (sorted, non-negative) of a reduction's attributes."""
    axes = axis_list(op, attrs["axis"], ndim)
    if attrs["exclude"]:
        axes = [a for a in range(ndim) if a not in axes]
    return axes


def _reduce_infer(op, out_dtype=None, numeric=True):
    def infer(types, attrs):
        data = tensor_arg(op, types, 0)
        if numeric and data.dtype == "bool":
            raise GraphError(f"{op}: data is bool; cast it to a number type first")
        axes = reduce_axes(op, data.ndim, attrs)
        if attrs["keepdims"]:
            shape = [1 if a in axes else d for a, d in enumerate(data.shape)]
        else:
            shape = [d for a, d in enumerate(data.shape) if a not in axes]
        return TensorType(shape, out_dtype or data.dtype)

    return infer


def _reduce_lower(fn_name, op):
    def lower(inputs, attrs, out_type):
        data = inputs[0]
        axes = reduce_axes(op, len(data.shape), attrs)
        fn = getattr(topi(), fn_name)
        if fn_name in ("argmax", "argmin"):
            return fn(data, tuple(axes), bool(attrs["keepdims"]), bool(attrs["select_last_index"]))
        return fn(data, tuple(axes), bool(attrs["keepdims"]))

    return lower


_DEFAULTS = {"axis": None, "keepdims": False, "exclude": False}

for _name in ("sum", "mean", "max", "min", "prod"):
    _lower = _reduce_lower(_name, _name)
    register_op(_name, pattern=OpPattern.COMM_REDUCE, infer=_reduce_infer(_name),
                lower=_lower if _name in ("max", "min") else accumulate_in_float32(_lower),
                num_inputs=1, defaults=_DEFAULTS, doc=f"``{_name}`` over ``axis``")

for _name in ("all", "any"):
    register_op(_name, pattern=OpPattern.COMM_REDUCE, infer=_reduce_infer(_name, "bool", numeric=False),
                lower=_reduce_lower(_name, _name), num_inputs=1, defaults=_DEFAULTS,
                doc=f"logical ``{_name}`` over ``axis`` (a bool result)")

for _name in ("argmax", "argmin"):
    register_op(_name, pattern=OpPattern.COMM_REDUCE, infer=_reduce_infer(_name, "int32"),
                lower=_reduce_lower(_name, _name), num_inputs=1,
                defaults=dict(_DEFAULTS, select_last_index=False),
                doc=f"the int32 index of the {_name[3:]}imum over ``axis`` (row-major over several axes)")
