"""Operators whose kernels are whole algorithms rather than one expression per
element (Relay's ``algorithm`` and scan/scatter families): ``topk``, ``cumsum``,
``cumprod``, ``scatter_elements``, ``scatter_nd``, and ``det`` (determinants).

Each lowers to one topi ``te.extern`` stage (a sort, a scan, a scatter written with
the IR builder, with a CPU and a GPU statement; an elimination for ``det``), so each is
:attr:`~tecc.graph.op.OpPattern.OPAQUE`: it is a kernel of its own and fuses with
nothing.  Shapes must be static (the extern statements loop over known sizes).
"""
from __future__ import annotations

from ..ir import GraphError, TensorType, TupleType
from ..op import OpPattern, register_op
from ._util import (
    accumulate_in_float32, as_int, check_choice, check_dtype, is_int_dtype, normalize_axis, same_dim, static_dims,
    tensor_args, topi,
)



def _static(op: str, ty, role: str) -> tuple:
    return tuple(static_dims(op, ty.shape, range(ty.ndim), f"{role} of {op}"))


# ---------------------------------------------------------------------------------------
# topk
# ---------------------------------------------------------------------------------------
_RET_TYPES = ("both", "values", "indices")


def _topk_plan(op, data, attrs):
    """``(axis, k)`` of a topk call (``k`` < 1 takes the whole axis, as Relay)."""
    if data.ndim == 0:
        raise GraphError(f"{op}: data is a scalar; it needs an axis to take the top elements along")
    axis = normalize_axis(op, attrs["axis"], data.ndim)
    (n,) = static_dims(op, data.shape, [axis], "taking the top elements")
    k = as_int(op, "k", attrs["k"])
    if k > n:
        raise GraphError(f"{op}: k = {k} is larger than axis {axis} of shape {tuple(data.shape)} ({n} elements)")
    return axis, (n if k < 1 else k)


def _topk_infer(types, attrs):
    op = "topk"
    (data,) = tensor_args(op, types, 1)
    if data.dtype == "bool":
        raise GraphError(f"{op}: data is bool; cast it to a number type first")
    axis, k = _topk_plan(op, data, attrs)
    ret_type = check_choice(op, "ret_type", attrs["ret_type"], _RET_TYPES)
    dtype = check_dtype(op, "dtype", attrs["dtype"])
    if not is_int_dtype(dtype):
        raise GraphError(f"{op}: dtype (of the indices) must be an integer type, got {dtype}")
    shape = list(data.shape)
    shape[axis] = k
    values, indices = TensorType(shape, data.dtype), TensorType(shape, dtype)
    if ret_type == "both":
        return TupleType([values, indices])
    return values if ret_type == "values" else indices


def _topk_lower(inputs, attrs, out_type):
    data = inputs[0]
    axis = normalize_axis("topk", attrs["axis"], len(data.shape))
    dtype = check_dtype("topk", "dtype", attrs["dtype"])
    out = topi().topk(data, int(attrs["k"]), axis, attrs["ret_type"], bool(attrs["is_ascend"]), dtype)
    return list(out) if isinstance(out, (list, tuple)) else out


register_op("topk", pattern=OpPattern.OPAQUE, infer=_topk_infer, lower=_topk_lower, num_inputs=1,
            defaults={"k": 1, "axis": -1, "ret_type": "both", "is_ascend": False, "dtype": "int32"},
            doc="the k largest (smallest with is_ascend) elements along ``axis`` in order, and their positions "
                "(stable: of equal elements the first comes first); ``(values, indices)`` for ret_type 'both'")


# ---------------------------------------------------------------------------------------
# cumsum, cumprod
# ---------------------------------------------------------------------------------------
def _scan_infer(op):
    def infer(types, attrs):
        (data,) = tensor_args(op, types, 1)
        shape = _static(op, data, "data")
        dtype = data.dtype if attrs["dtype"] in (None, "") else check_dtype(op, "dtype", attrs["dtype"])
        if dtype == "bool":
            raise GraphError(f"{op}: cannot accumulate in bool; give dtype='int32' (or another number type)")
        if attrs["axis"] is None:
            total = 1
            for d in shape:
                total *= d
            return TensorType((total,), dtype)
        if data.ndim == 0:
            raise GraphError(f"{op}: axis {attrs['axis']} given for a scalar; leave axis None")
        normalize_axis(op, attrs["axis"], data.ndim)
        return TensorType(shape, dtype)

    return infer


def _scan_lower(fn_name):
    def lower(inputs, attrs, out_type):
        data = inputs[0]
        axis = attrs["axis"]
        if axis is not None:
            axis = normalize_axis(fn_name, axis, len(data.shape))
        return getattr(topi(), fn_name)(data, axis, out_type.dtype, bool(attrs["exclusive"]))

    return lower


for _name, _what in (("cumsum", "sum"), ("cumprod", "product")):
    register_op(_name, pattern=OpPattern.OPAQUE, infer=_scan_infer(_name),
                lower=accumulate_in_float32(_scan_lower(_name)), num_inputs=1,
                defaults={"axis": None, "dtype": None, "exclusive": False},
                doc=f"cumulative {_what} along ``axis`` (None: of the flattened data); ``exclusive`` leaves each "
                    "element out of its own result")


# ---------------------------------------------------------------------------------------
# scatter_elements, scatter_nd
# ---------------------------------------------------------------------------------------
_REDUCTIONS = ("update", "add", "mul", "min", "max")


def _scatter_operands(op, types):
    data, indices, updates = tensor_args(op, types, 3)
    if not is_int_dtype(indices.dtype):
        raise GraphError(f"{op}: indices must be integers, got {indices.dtype}")
    if updates.dtype != data.dtype:
        raise GraphError(f"{op}: updates have dtype {updates.dtype} but data {data.dtype}; cast them to one dtype")
    return data, indices, updates


def _scatter_elements_infer(types, attrs):
    op = "scatter_elements"
    data, indices, updates = _scatter_operands(op, types)
    check_choice(op, "reduction", attrs["reduction"], _REDUCTIONS)
    if data.ndim == 0:
        raise GraphError(f"{op}: cannot scatter into a scalar")
    axis = normalize_axis(op, attrs["axis"], data.ndim)
    dshape, ishape = _static(op, data, "data"), _static(op, indices, "indices")
    if indices.ndim != data.ndim:
        raise GraphError(f"{op}: indices {ishape} must have data's rank {data.ndim} (data {dshape})")
    same_dim(op, tuple(updates.shape), tuple(indices.shape), "updates and indices must have one shape")
    for k, (d, i) in enumerate(zip(dshape, ishape)):
        if k != axis and i > d:
            raise GraphError(f"{op}: indices {ishape} are larger than data {dshape} along axis {k}")
    return data


def _scatter_elements_lower(inputs, attrs, out_type):
    axis = normalize_axis("scatter_elements", attrs["axis"], len(inputs[0].shape))
    return topi().scatter_elements(inputs[0], inputs[1], inputs[2], axis, attrs["reduction"])


register_op("scatter_elements", pattern=OpPattern.OPAQUE, infer=_scatter_elements_infer,
            lower=_scatter_elements_lower, num_inputs=3, defaults={"axis": 0, "reduction": "update"},
            doc="``data`` with ``updates`` written (or combined) at ``indices`` along ``axis`` (ONNX "
                "ScatterElements); updates apply in the row-major order of the indices")


def _scatter_nd_infer(types, attrs):
    op = "scatter_nd"
    data, indices, updates = _scatter_operands(op, types)
    check_choice(op, "mode", attrs["mode"], _REDUCTIONS)
    dshape, ishape = _static(op, data, "data"), _static(op, indices, "indices")
    if indices.ndim < 1:
        raise GraphError(f"{op}: indices must have at least one axis (the index tuples along the first)")
    m = ishape[0]
    if not 1 <= m <= data.ndim:
        raise GraphError(f"{op}: index tuples of length {m} (indices.shape[0]) do not fit data of rank {data.ndim}")
    want = tuple(ishape[1:]) + tuple(dshape[m:])
    same_dim(op, tuple(updates.shape), want, f"updates must have shape indices.shape[1:] + data.shape[{m}:]")
    return data


register_op("scatter_nd", pattern=OpPattern.OPAQUE, infer=_scatter_nd_infer,
            lower=lambda inputs, attrs, out_type: topi().scatter_nd(inputs[0], inputs[1], inputs[2], attrs["mode"]),
            num_inputs=3, defaults={"mode": "update"},
            doc="``data`` with slices written (or combined) at index tuples: Relay's layout, the tuples along "
                "indices' FIRST axis (ONNX ScatterND's are along the last: transpose first)")


# ---------------------------------------------------------------------------------------
# det
# ---------------------------------------------------------------------------------------
def _det_infer(types, attrs):
    op = "det"
    (data,) = tensor_args(op, types, 1)
    shape = _static(op, data, "data")
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise GraphError(f"{op}: data has shape {shape}; it must hold square matrices in its last two axes "
                         "([..., m, m])")
    if data.dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise GraphError(f"{op}: data has dtype {data.dtype}; det takes float16, bfloat16, float32 and float64: "
                         "cast it first")
    return TensorType(shape[:-2], data.dtype)


def _det_lower(inputs, attrs, out_type):
    return topi().det(inputs[0])


register_op("det", pattern=OpPattern.OPAQUE, infer=_det_infer, lower=accumulate_in_float32(_det_lower), num_inputs=1,
            doc="the determinant of each square matrix in the last two axes (numpy's ``linalg.det``): Gaussian "
                "elimination with partial pivoting; float16 and bfloat16 computed in float32")
