"""Operators that move, pick or make data (Relay's ``transform`` family): reshape,
transpose, concatenate, split, strided_slice, take, gather, gather_nd, squeeze,
expand_dims, broadcast_to, tile, cast, where, full / zeros / ones, arange, reverse,
one_hot, trilu, einsum, shape_of and layout_transform.

An operator over a tuple (``concatenate``, ``einsum``) takes one operand, a
:class:`~tecc.graph.ir.Tuple`; its ``lower`` receives that operand's TE tensors as
a list (``inputs[0]``).  Operators with several results (``split``) return a
:class:`~tecc.graph.ir.TupleType` and lower to a list of tensors, one per field.
"""
from __future__ import annotations

import numpy as np

from ...einsum_equation import axis_sizes, parse_equation
from ...runtime import dtypes as _rt_dtypes
from ..ir import GraphError, TensorType, TupleType
from ..op import REQUIRED, OpPattern, register_op
from ._util import (
    accumulate_in_float32, as_int, axis_list, broadcast_shapes, check_choice, check_dtype, int_tuple, is_int_dtype,
    normalize_axis, same_dim, same_dtype, static_dims, te_shape, tensor_arg, tensor_args, topi, tuple_arg, tuple_inputs,
)



def _product(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


# ---------------------------------------------------------------------------------------
# reshape
# ---------------------------------------------------------------------------------------
def reshape_shape(op: str, shape, newshape, allowzero=False) -> tuple:
    """The shape ``newshape`` gives a tensor of ``shape`` under Relay's rules: ``0``
    copies the input's dimension at the same position (unless ``allowzero``), one
    ``-1`` is inferred from the element count.  A symbolic input dimension must be
    copied by a ``0`` at its own position."""
    if isinstance(newshape, int) and not isinstance(newshape, bool):
        newshape = (newshape,)
    if not isinstance(newshape, tuple) or any(isinstance(d, bool) or not isinstance(d, int) for d in newshape):
        raise GraphError(f"{op}: newshape must be a list of ints, got {newshape!r}")
    out, copied = [], set()
    for k, d in enumerate(newshape):
        if d == 0 and not allowzero:
            if k >= len(shape):
                raise GraphError(f"{op}: newshape {list(newshape)} copies dimension {k} (0) but the input has rank "
                                 f"{len(shape)}")
            out.append(shape[k])
            copied.add(k)
        elif d < -1:
            raise GraphError(f"{op}: newshape {list(newshape)} has {d}; tecc takes sizes, 0 (copy) and -1 (infer)")
        else:
            out.append(d)
    symbolic = [k for k, d in enumerate(shape) if not isinstance(d, int)]
    for k in symbolic:
        if k not in copied:
            raise GraphError(f"{op}: the input {tuple(shape)} has the symbolic dimension {shape[k]!r} at {k}, which "
                             "newshape does not copy with a 0 there; bind it with a concrete size")
    holes = [k for k, d in enumerate(out) if d == -1]
    if len(holes) > 1:
        raise GraphError(f"{op}: newshape {list(newshape)} has more than one -1")
    total = _product(d for k, d in enumerate(shape) if k not in symbolic)
    known = _product(d for k, d in enumerate(out) if isinstance(d, int) and d != -1 and k not in symbolic)
    if holes:
        if allowzero and 0 in out:
            raise GraphError(f"{op}: newshape {list(newshape)} has both -1 and a 0 dimension (allowzero)")
        if known == 0 or total % known:
            raise GraphError(f"{op}: cannot reshape {tuple(shape)} ({total} elements) to {list(newshape)}: "
                             f"{total} is not a multiple of {known}")
        out[holes[0]] = total // known
    elif total != known:
        raise GraphError(f"{op}: cannot reshape {tuple(shape)} ({total} elements) to {tuple(out)} ({known} elements)")
    return tuple(out)


def _reshape_infer(types, attrs):
    data = tensor_arg("reshape", types, 0)
    return TensorType(reshape_shape("reshape", data.shape, attrs["newshape"], bool(attrs["allowzero"])), data.dtype)


def _reshape_lower(inputs, attrs, out_type):
    return topi().reshape(inputs[0], te_shape(out_type.shape, inputs), allowzero=True)


register_op("reshape", pattern=OpPattern.INJECTIVE, infer=_reshape_infer, lower=_reshape_lower, num_inputs=1,
            defaults={"newshape": REQUIRED, "allowzero": False},
            doc="the elements in a new shape (0 copies a dimension, -1 is inferred)")


# ---------------------------------------------------------------------------------------
# transpose, squeeze, expand_dims
# ---------------------------------------------------------------------------------------
def transpose_axes(op: str, ndim: int, axes) -> list:
    """``axes`` as a permutation of ``range(ndim)`` (reversed when None or empty)."""
    if axes is None or axes == ():
        return list(range(ndim))[::-1]
    if not isinstance(axes, tuple) or len(axes) != ndim:
        raise GraphError(f"{op}: axes {axes!r} must list all {ndim} axes")
    perm = [normalize_axis(op, a, ndim, "axes entry") for a in axes]
    if sorted(perm) != list(range(ndim)):
        raise GraphError(f"{op}: axes {list(axes)} is not a permutation of 0..{ndim - 1}")
    return perm


def _transpose_infer(types, attrs):
    data = tensor_arg("transpose", types, 0)
    perm = transpose_axes("transpose", data.ndim, attrs["axes"])
    return TensorType([data.shape[a] for a in perm], data.dtype)


def _transpose_lower(inputs, attrs, out_type):
    return topi().transpose(inputs[0], transpose_axes("transpose", len(inputs[0].shape), attrs["axes"]))


register_op("transpose", pattern=OpPattern.INJECTIVE, infer=_transpose_infer, lower=_transpose_lower,
            num_inputs=1, defaults={"axes": None}, doc="axes permuted (reversed by default)")


def _layout_transform_infer(types, attrs):
    from ...errors import TeccError  # noqa: PLC0415

    op = "layout_transform"
    data = tensor_arg(op, types, 0)
    for key in ("src_layout", "dst_layout"):
        if not isinstance(attrs[key], str) or not attrs[key]:
            raise GraphError(f"{op}: attribute {key!r} must be a layout string such as 'NCHW16c', got "
                             f"{attrs[key]!r}")
    static_dims(op, data.shape, range(data.ndim), "a layout transform")
    try:
        shape = topi().layout_transform_shape(data.shape, attrs["src_layout"], attrs["dst_layout"])
    except TeccError as err:
        raise GraphError(f"{op}: {err}") from err
    return TensorType(shape, data.dtype)


def _layout_transform_lower(inputs, attrs, out_type):
    return topi().layout_transform(inputs[0], attrs["src_layout"], attrs["dst_layout"])


register_op("layout_transform", pattern=OpPattern.INJECTIVE, infer=_layout_transform_infer,
            lower=_layout_transform_lower, num_inputs=1, defaults={"src_layout": REQUIRED, "dst_layout": REQUIRED},
            doc="the data re-laid out (NCHW <-> NCHW16c, OIHW -> OIHW8i16o: axes reordered and split)")


def _squeeze_axes(op, shape, axis) -> list:
    if axis is None:
        return [k for k, d in enumerate(shape) if d == 1]
    axes = axis_list(op, axis, len(shape))
    for a in axes:
        if shape[a] != 1:
            raise GraphError(f"{op}: axis {a} of shape {tuple(shape)} has size {shape[a]}, not 1")
    return axes


def _squeeze_infer(types, attrs):
    data = tensor_arg("squeeze", types, 0)
    axes = _squeeze_axes("squeeze", data.shape, attrs["axis"])
    return TensorType([d for k, d in enumerate(data.shape) if k not in axes], data.dtype)


def _squeeze_lower(inputs, attrs, out_type):
    data = inputs[0]
    axes = _squeeze_axes("squeeze", out_type_shape(data), attrs["axis"])
    return topi().squeeze(data, axes)


register_op("squeeze", pattern=OpPattern.INJECTIVE, infer=_squeeze_infer, lower=_squeeze_lower, num_inputs=1,
            defaults={"axis": None}, doc="dimensions of size 1 removed (those of ``axis`` only if given)")


def _expand_dims_infer(types, attrs):
    op = "expand_dims"
    data = tensor_arg(op, types, 0)
    axis = normalize_axis(op, attrs["axis"], data.ndim, extra=1)
    n = as_int(op, "num_newaxis", attrs["num_newaxis"])
    if n < 0:
        raise GraphError(f"{op}: num_newaxis must be >= 0, got {n}")
    return TensorType(data.shape[:axis] + (1,) * n + data.shape[axis:], data.dtype)


def _expand_dims_lower(inputs, attrs, out_type):
    axis = normalize_axis("expand_dims", attrs["axis"], len(inputs[0].shape), extra=1)
    return topi().expand_dims(inputs[0], axis, attrs["num_newaxis"])


register_op("expand_dims", pattern=OpPattern.BROADCAST, infer=_expand_dims_infer, lower=_expand_dims_lower,
            num_inputs=1, defaults={"axis": REQUIRED, "num_newaxis": 1},
            doc="``num_newaxis`` dimensions of size 1 inserted at ``axis``")


# ---------------------------------------------------------------------------------------
# concatenate, split
# ---------------------------------------------------------------------------------------
def _concatenate_infer(types, attrs):
    op = "concatenate"
    fields = tuple_arg(op, types, 0)
    dtype = same_dtype(op, fields)
    ndim = fields[0].ndim
    if ndim == 0:
        raise GraphError(f"{op}: cannot concatenate scalars; expand them to 1-D first")
    for k, f in enumerate(fields):
        if f.ndim != ndim:
            raise GraphError(f"{op}: field {k} has rank {f.ndim} but field 0 has rank {ndim}")
    axis = normalize_axis(op, attrs["axis"], ndim)
    out = list(fields[0].shape)
    for k, f in enumerate(fields[1:], 1):
        for a in range(ndim):
            if a != axis:
                same_dim(op, f.shape[a], out[a], f"field {k} {f.shape} and field 0 {fields[0].shape} differ on "
                         f"axis {a}, which is not the concatenated axis {axis}")
    sizes = static_dims(op, [f.shape[axis] for f in fields], range(len(fields)), f"concatenating along axis {axis}") \
        if any(not isinstance(f.shape[axis], int) for f in fields) else [f.shape[axis] for f in fields]
    out[axis] = sum(sizes)
    return TensorType(out, dtype)


def _concatenate_lower(inputs, attrs, out_type):
    fields = tuple_inputs(inputs)
    axis = normalize_axis("concatenate", attrs["axis"], len(fields[0].shape))
    return topi().concatenate(fields, axis)


register_op("concatenate", pattern=OpPattern.INJECTIVE, infer=_concatenate_infer, lower=_concatenate_lower,
            num_inputs=1, defaults={"axis": 0}, doc="the fields of a tuple joined along ``axis``")


def split_bounds(op: str, size: int, indices_or_sections) -> list:
    """``[(start, stop)]`` of each piece of an axis of ``size`` (numpy's split)."""
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        n = indices_or_sections
        if n < 1:
            raise GraphError(f"{op}: indices_or_sections must be >= 1 sections, got {n}")
        if size % n:
            raise GraphError(f"{op}: an axis of {size} does not split into {n} equal sections; give the split "
                             "indices instead")
        step = size // n
        return [(k * step, (k + 1) * step) for k in range(n)]
    cuts = int_tuple(op, "indices_or_sections", indices_or_sections, (len(indices_or_sections),)) \
        if isinstance(indices_or_sections, tuple) and indices_or_sections else None
    if cuts is None:
        raise GraphError(f"{op}: indices_or_sections must be an int or a non-empty list of ints, got "
                         f"{indices_or_sections!r}")
    points = [0] + [min(max(c + size if c < 0 else c, 0), size) for c in cuts] + [size]
    return [(points[k], max(points[k], points[k + 1])) for k in range(len(points) - 1)]


def _split_infer(types, attrs):
    op = "split"
    data = tensor_arg(op, types, 0)
    axis = normalize_axis(op, attrs["axis"], data.ndim)
    (size,) = static_dims(op, data.shape, [axis], "splitting")
    fields = []
    for start, stop in split_bounds(op, size, attrs["indices_or_sections"]):
        shape = list(data.shape)
        shape[axis] = stop - start
        fields.append(TensorType(shape, data.dtype))
    return TupleType(fields)


def _split_lower(inputs, attrs, out_type):
    t = topi()
    data = inputs[0]
    axis = normalize_axis("split", attrs["axis"], len(data.shape))
    size = int(data.shape[axis])
    outs = []
    for start, stop in split_bounds("split", size, attrs["indices_or_sections"]):
        outs.append(t.strided_slice(data, [start], [stop], [1], axes=[axis]))
    return outs


register_op("split", pattern=OpPattern.INJECTIVE, infer=_split_infer, lower=_split_lower, num_inputs=1,
            defaults={"indices_or_sections": REQUIRED, "axis": 0},
            doc="pieces along ``axis`` (a number of equal sections, or cut indices); a tuple")


# ---------------------------------------------------------------------------------------
# strided_slice
# ---------------------------------------------------------------------------------------
def slice_ranges(op: str, shape, begin, end, strides, axes, slice_mode) -> list:
    """``[(axis, start, stop, step)]`` of each sliced axis, clamped as Python's
    slices are (``start`` and ``stop`` are what ``slice(...).indices`` gives)."""
    check_choice(op, "slice_mode", slice_mode, ("end", "size"))
    ndim = len(shape)
    for name, v in (("begin", begin), ("end", end)):
        if not isinstance(v, tuple) or any(x is not None and (isinstance(x, bool) or not isinstance(x, int))
                                            for x in v):
            raise GraphError(f"{op}: {name} must be a list of ints (or None entries), got {v!r}")
    if axes is None:
        if len(begin) > ndim:
            raise GraphError(f"{op}: begin {list(begin)} has more entries than the input's rank {ndim}")
        axes = tuple(range(len(begin)))
    else:
        axes = tuple(normalize_axis(op, a, ndim, "axes entry") for a in int_tuple(op, "axes", axes, (len(axes),)))
    n = len(axes)
    if strides is None or strides == ():
        strides = (1,) * n
    strides = int_tuple(op, "strides", strides, (n, 1))
    if len(strides) == 1 and n != 1:
        strides = strides * n
    if len(begin) != n or len(end) < n:
        raise GraphError(f"{op}: begin {list(begin)} and end {list(end)} must have one entry per sliced axis ({n})")
    out = []
    for k, axis in enumerate(axes):
        (size,) = static_dims(op, shape, [axis], "slicing")
        step = 1 if slice_mode == "size" else strides[k]
        if step == 0:
            raise GraphError(f"{op}: stride 0 on axis {axis}")
        b, e = begin[k], end[k]
        if slice_mode == "size":
            b = 0 if b is None else b
            e = None if e is None or e < 0 else (b + size if b < 0 else b) + e
        start, stop, step = slice(b, e, step).indices(size)
        out.append((axis, start, stop, step))
    return out


def _strided_slice_infer(types, attrs):
    op = "strided_slice"
    data = tensor_arg(op, types, 0)
    shape = list(data.shape)
    for axis, start, stop, step in slice_ranges(op, data.shape, attrs["begin"], attrs["end"], attrs["strides"],
                                                attrs["axes"], attrs["slice_mode"]):
        shape[axis] = len(range(start, stop, step))
    return TensorType(shape, data.dtype)


def _strided_slice_lower(inputs, attrs, out_type):
    data = inputs[0]
    ranges = slice_ranges("strided_slice", out_type_shape(data), attrs["begin"], attrs["end"], attrs["strides"],
                          attrs["axes"], attrs["slice_mode"])
    t = topi()
    begin, end, strides, axes = [], [], [], []
    for axis, start, stop, step in ranges:
        # the clamped bounds of Python's slices; a backward slice to the very start ends at None
        begin.append(start)
        end.append(None if stop < 0 else stop)
        strides.append(step)
        axes.append(axis)
    return t.strided_slice(data, begin, end, strides, axes=axes)


def out_type_shape(tensor) -> list:
    """A TE tensor's shape with constant dimensions as ints (symbolic ones kept)."""
    return [int(d) if hasattr(d, "value") else (d if isinstance(d, int) else str(d)) for d in tensor.shape]


register_op("strided_slice", pattern=OpPattern.INJECTIVE, infer=_strided_slice_infer, lower=_strided_slice_lower,
            num_inputs=1,
            defaults={"begin": REQUIRED, "end": REQUIRED, "strides": None, "axes": None, "slice_mode": "end"},
            doc="``data[begin:end:strides]`` per axis (numpy's clamping)")


# ---------------------------------------------------------------------------------------
# take, gather, gather_nd
# ---------------------------------------------------------------------------------------
def _index_dtype(op, ty, role="indices"):
    if not is_int_dtype(ty.dtype):
        raise GraphError(f"{op}: {role} must be integers, got {ty.dtype}")


def _take_infer(types, attrs):
    op = "take"
    data, indices = tensor_args(op, types, 2)
    _index_dtype(op, indices)
    check_choice(op, "mode", attrs["mode"], ("clip", "wrap", "fast"))
    batch_dims = as_int(op, "batch_dims", attrs["batch_dims"])
    if batch_dims < 0:
        batch_dims += indices.ndim
    # (a symbolic dimension counts as non-empty)
    picks = _product(d if isinstance(d, int) else 1 for d in indices.shape)
    if attrs["axis"] is None:
        if batch_dims:
            raise GraphError(f"{op}: batch_dims needs an axis")
        if picks and 0 in data.shape:
            raise GraphError(f"{op}: the data (shape {list(data.shape)}) is empty; its {picks} indices pick nothing")
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(op, attrs["axis"], data.ndim)
    if picks and isinstance(data.shape[axis], int) and data.shape[axis] == 0:
        raise GraphError(f"{op}: axis {axis} of the data (shape {list(data.shape)}) is empty; its {picks} indices "
                         "pick nothing")
    if not 0 <= batch_dims <= min(axis, indices.ndim):
        raise GraphError(f"{op}: batch_dims {attrs['batch_dims']} must be in [0, {min(axis, indices.ndim)}]")
    for k in range(batch_dims):
        same_dim(op, data.shape[k], indices.shape[k], f"batch dimension {k} of data and indices differ")
    return TensorType(data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis + 1:], data.dtype)


def _take_lower(inputs, attrs, out_type):
    axis = attrs["axis"]
    if axis is not None:
        axis = normalize_axis("take", axis, len(inputs[0].shape))
    return topi().take(inputs[0], inputs[1], axis, attrs["batch_dims"], attrs["mode"])


register_op("take", pattern=OpPattern.INJECTIVE, infer=_take_infer, lower=_take_lower, num_inputs=2,
            defaults={"axis": None, "batch_dims": 0, "mode": "clip"},
            doc="elements picked along ``axis`` by ``indices`` (ONNX Gather: mode 'wrap' for negative indices)")


def _gather_infer(types, attrs):
    op = "gather"
    data, indices = tensor_args(op, types, 2)
    _index_dtype(op, indices)
    if indices.ndim != data.ndim:
        raise GraphError(f"{op}: indices {indices.shape} must have data's rank {data.ndim}")
    normalize_axis(op, attrs["axis"], data.ndim)
    return TensorType(indices.shape, data.dtype)


def _gather_lower(inputs, attrs, out_type):
    axis = normalize_axis("gather", attrs["axis"], len(inputs[0].shape))
    return topi().gather(inputs[0], axis, inputs[1])


register_op("gather", pattern=OpPattern.INJECTIVE, infer=_gather_infer, lower=_gather_lower, num_inputs=2,
            defaults={"axis": REQUIRED},
            doc="``out[i][j] = data[indices[i][j]][j]`` along ``axis`` (ONNX GatherElements, torch.gather)")


def _gather_nd_infer(types, attrs):
    op = "gather_nd"
    data, indices = tensor_args(op, types, 2)
    _index_dtype(op, indices)
    batch_dims = as_int(op, "batch_dims", attrs["batch_dims"])
    if indices.ndim < 1:
        raise GraphError(f"{op}: indices must have at least 1 dimension (the index tuples along axis 0)")
    (m,) = static_dims(op, indices.shape, [0], "gather_nd")
    if attrs["index_rank"] is not None and attrs["index_rank"] != m:
        raise GraphError(f"{op}: index_rank={attrs['index_rank']} but indices' first dimension is {m}")
    if batch_dims < 0 or batch_dims + m > data.ndim:
        raise GraphError(f"{op}: batch_dims {batch_dims} + index tuples of {m} exceed data's rank {data.ndim}")
    return TensorType(indices.shape[1:] + data.shape[batch_dims + m:], data.dtype)


register_op("gather_nd", pattern=OpPattern.INJECTIVE, infer=_gather_nd_infer,
            lower=lambda inputs, attrs, out_type: topi().gather_nd(inputs[0], inputs[1], attrs["batch_dims"]),
            num_inputs=2, defaults={"batch_dims": 0, "index_rank": None},
            doc="slices picked by index tuples along indices' first axis (Relay's layout)")


# ---------------------------------------------------------------------------------------
# broadcast_to, tile
# ---------------------------------------------------------------------------------------
def _target_shape(op, shape):
    if not isinstance(shape, tuple) or any(isinstance(d, bool) or not isinstance(d, (int, str)) for d in shape):
        raise GraphError(f"{op}: shape must be a list of ints, got {shape!r}")
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise GraphError(f"{op}: shape {list(shape)} has a negative dimension")
    return shape


def _broadcast_to_infer(types, attrs):
    op = "broadcast_to"
    data = tensor_arg(op, types, 0)
    shape = _target_shape(op, attrs["shape"])
    out = broadcast_shapes(op, data.shape, shape)
    if tuple(out) != tuple(shape):
        raise GraphError(f"{op}: {data.shape} does not broadcast to {tuple(shape)} (it gives {out}); use the "
                         "broadcast shape")
    return TensorType(shape, data.dtype)


register_op("broadcast_to", pattern=OpPattern.BROADCAST, infer=_broadcast_to_infer,
            lower=lambda inputs, attrs, out_type: topi().broadcast_to(inputs[0], te_shape(out_type.shape, inputs)),
            num_inputs=1, defaults={"shape": REQUIRED}, doc="numpy's broadcast_to")


def _tile_infer(types, attrs):
    op = "tile"
    data = tensor_arg(op, types, 0)
    reps = attrs["reps"]
    reps = int_tuple(op, "reps", reps, (len(reps) if isinstance(reps, tuple) else 1,), at_least=0)
    n = max(len(reps), data.ndim)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    shape = (1,) * (n - data.ndim) + data.shape
    out = []
    for axis, (d, r) in enumerate(zip(shape, reps)):
        if r != 1 and not isinstance(d, int):
            raise GraphError(f"{op}: repeating the symbolic dimension {d!r} needs its size; bind it")
        out.append(d if r == 1 else d * r)
    return TensorType(out, data.dtype)


register_op("tile", pattern=OpPattern.BROADCAST, infer=_tile_infer,
            lower=lambda inputs, attrs, out_type: topi().tile(inputs[0], tuple(
                attrs["reps"] if isinstance(attrs["reps"], tuple) else (attrs["reps"],))),
            num_inputs=1, defaults={"reps": REQUIRED}, doc="numpy's tile")


# ---------------------------------------------------------------------------------------
# cast, where
# ---------------------------------------------------------------------------------------
def _cast_infer(types, attrs):
    data = tensor_arg("cast", types, 0)
    dtype = check_dtype("cast", "dtype", attrs["dtype"])
    if attrs["saturate"] and not (_rt_dtypes.storage_float(dtype) and _rt_dtypes.storage_float(dtype).signed):
        raise GraphError(f"cast: saturate=True converts to a signed 8- or 4-bit float (float8_e4m3fn, "
                         f"float8_e5m2...), not to {dtype}; leave saturate out")
    return TensorType(data.shape, dtype)


register_op("cast", pattern=OpPattern.ELEMWISE, infer=_cast_infer,
            lower=lambda inputs, attrs, out_type: topi().cast(inputs[0], out_type.dtype,
                                                              saturate=bool(attrs["saturate"])), num_inputs=1,
            defaults={"dtype": REQUIRED, "saturate": False},
            doc="element-wise conversion to ``dtype`` (``saturate``: values past an 8-bit float's range become "
                "its largest, as ONNX's Cast does by default)")


def _reinterpret_infer(types, attrs):
    data = tensor_arg("reinterpret", types, 0)
    dtype = check_dtype("reinterpret", "dtype", attrs["dtype"])
    from ...tir.dtype import parse  # noqa: PLC0415 -- the bits of the narrow types (a 4-bit float: 4)

    if parse(data.dtype).bits != parse(dtype).bits or "bool" in (data.dtype, dtype):
        raise GraphError(f"reinterpret: the bits of a {data.dtype} tensor cannot be read as {dtype}: the two must "
                         "be numeric types of one width (cast a bool instead)")
    return TensorType(data.shape, dtype)


register_op("reinterpret", pattern=OpPattern.ELEMWISE, infer=_reinterpret_infer,
            lower=lambda inputs, attrs, out_type: topi().reinterpret(inputs[0], out_type.dtype), num_inputs=1,
            defaults={"dtype": REQUIRED}, doc="the bits of every element read as ``dtype`` (of the same width)")


def _where_infer(types, attrs):
    op = "where"
    cond, x, y = tensor_args(op, types, 3)
    dtype = same_dtype(op, [x, y])
    return TensorType(broadcast_shapes(op, cond.shape, x.shape, y.shape), dtype)


register_op("where", pattern=OpPattern.BROADCAST, infer=_where_infer,
            lower=lambda inputs, attrs, out_type: topi().where(inputs[0], inputs[1], inputs[2]), num_inputs=3,
            doc="``x`` where ``condition`` is true, else ``y`` (numpy broadcasting)")


# ---------------------------------------------------------------------------------------
# full, zeros, ones, arange, shape_of
# ---------------------------------------------------------------------------------------
def _fill_infer(op, with_value):
    def infer(types, attrs):
        if with_value:
            value = tensor_arg(op, types, 0)
            if value.ndim != 0:
                raise GraphError(f"{op}: fill_value must be a scalar (rank 0), got shape {value.shape}")
        shape = _target_shape(op, attrs["shape"])
        for d in shape:
            if not isinstance(d, int):
                raise GraphError(f"{op}: shape {list(shape)} must be made of ints")
        dtype = attrs["dtype"]
        if with_value and dtype in ("", None):
            dtype = value.dtype
        return TensorType(shape, check_dtype(op, "dtype", dtype))

    return infer


def _fill_lower(value):
    def lower(inputs, attrs, out_type):
        t = topi()
        shape = list(out_type.shape)
        if value is not None:
            return t.full(shape, out_type.dtype, value)
        from ... import te  # noqa: PLC0415
        from ...tir import op as tir_op  # noqa: PLC0415

        scalar = inputs[0]

        def fill(*i):
            v = scalar()
            return v if v.dtype == out_type.dtype else tir_op.cast(out_type.dtype, v)

        return te.compute(shape, fill, name="T_full", tag="elemwise")

    return lower


register_op("full", pattern=OpPattern.ELEMWISE, infer=_fill_infer("full", True), lower=_fill_lower(None),
            num_inputs=1, defaults={"shape": REQUIRED, "dtype": ""},
            doc="a tensor of ``shape`` filled with the scalar operand")
register_op("zeros", pattern=OpPattern.ELEMWISE, infer=_fill_infer("zeros", False), lower=_fill_lower(0),
            num_inputs=0, defaults={"shape": REQUIRED, "dtype": "float32"}, doc="a tensor of zeros")
register_op("ones", pattern=OpPattern.ELEMWISE, infer=_fill_infer("ones", False), lower=_fill_lower(1),
            num_inputs=0, defaults={"shape": REQUIRED, "dtype": "float32"}, doc="a tensor of ones")


def _arange_infer(types, attrs):
    op = "arange"
    for name in ("start", "stop", "step"):
        v = attrs[name]
        if name != "stop" and v is None or v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise GraphError(f"{op}: {name} must be a number, got {v!r}")
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise GraphError(f"{op}: step must not be 0")
    n = max(int(np.ceil((stop - start) / step)), 0)
    return TensorType((n,), check_dtype(op, "dtype", attrs["dtype"]))


def _arange_lower(inputs, attrs, out_type):
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None:
        start, stop = 0, start
    return topi().arange(start, stop, step, out_type.dtype)


register_op("arange", pattern=OpPattern.INJECTIVE, infer=_arange_infer, lower=_arange_lower, num_inputs=0,
            defaults={"start": 0, "stop": None, "step": 1, "dtype": "float32"},
            doc="``start, start + step, ...`` below ``stop`` (numbers known when compiling)")


def _shape_of_infer(types, attrs):
    data = tensor_arg("shape_of", types, 0)
    dtype = check_dtype("shape_of", "dtype", attrs["dtype"])
    if not is_int_dtype(dtype):
        raise GraphError(f"shape_of: dtype must be an integer type, got {dtype}")
    return TensorType((data.ndim,), dtype)


def _shape_of_lower(inputs, attrs, out_type):
    from ... import te  # noqa: PLC0415
    from ...tir import op as tir_op  # noqa: PLC0415

    dims = list(inputs[0].shape)
    dtype = out_type.dtype

    def value(i):
        # a chain of selects over the (possibly symbolic) dimensions
        out = tir_op.cast(dtype, dims[-1]) if dims else tir_op.const(0, dtype)
        for k in range(len(dims) - 2, -1, -1):
            out = tir_op.select(i == k, tir_op.cast(dtype, dims[k]), out)
        return out

    return te.compute((len(dims),), value, name="T_shape_of", tag="injective")


register_op("shape_of", pattern=OpPattern.INJECTIVE, infer=_shape_of_infer, lower=_shape_of_lower, num_inputs=1,
            defaults={"dtype": "int32"}, doc="the shape of the operand as a 1-D tensor")


# ---------------------------------------------------------------------------------------
# reverse, one_hot, trilu
# ---------------------------------------------------------------------------------------
def _reverse_infer(types, attrs):
    data = tensor_arg("reverse", types, 0)
    normalize_axis("reverse", attrs["axis"], data.ndim)
    return data


register_op("reverse", pattern=OpPattern.INJECTIVE, infer=_reverse_infer,
            lower=lambda inputs, attrs, out_type: topi().flip(
                inputs[0], normalize_axis("reverse", attrs["axis"], len(inputs[0].shape))),
            num_inputs=1, defaults={"axis": REQUIRED}, doc="the elements in reverse order along ``axis``")


def _scalar_value(x):
    """A scalar operand in a kernel: a 0-d (or one-element) TE tensor read, or the
    constant the builder inlined."""
    from ... import te  # noqa: PLC0415

    if isinstance(x, te.Tensor):
        return x(*([0] * len(x.shape)))
    return x


def _one_hot_infer(types, attrs):
    op = "one_hot"
    indices, on, off = tensor_args(op, types, 3)
    _index_dtype(op, indices)
    for role, ty in (("on_value", on), ("off_value", off)):
        if ty.ndim != 0:
            raise GraphError(f"{op}: {role} must be a scalar (rank 0), got shape {ty.shape}")
    depth = as_int(op, "depth", attrs["depth"])
    if depth < 1:
        raise GraphError(f"{op}: depth must be >= 1, got {depth}")
    axis = as_int(op, "axis", attrs["axis"])
    if not -1 <= axis <= indices.ndim:
        raise GraphError(f"{op}: axis {axis} is out of range for indices of rank {indices.ndim}; use -1 (last) or "
                         f"0..{indices.ndim}")
    axis = indices.ndim if axis == -1 else axis
    dtype = check_dtype(op, "dtype", attrs["dtype"])
    return TensorType(indices.shape[:axis] + (depth,) + indices.shape[axis:], dtype)


def _one_hot_lower(inputs, attrs, out_type):
    return topi().one_hot(inputs[0], _scalar_value(inputs[1]), _scalar_value(inputs[2]), attrs["depth"],
                          attrs["axis"], out_type.dtype)


register_op("one_hot", pattern=OpPattern.INJECTIVE, infer=_one_hot_infer, lower=_one_hot_lower, num_inputs=3,
            defaults={"depth": REQUIRED, "axis": -1, "dtype": "float32"},
            doc="``on_value`` where a new axis of size ``depth`` at ``axis`` equals the index, ``off_value`` "
                "elsewhere (an index outside [0, depth) gives a row of off_value)")


def _trilu_infer(types, attrs):
    op = "trilu"
    data, k = tensor_args(op, types, 2)
    if data.ndim < 2:
        raise GraphError(f"{op}: data must have rank 2 or more (matrices), got shape {data.shape}")
    _index_dtype(op, k, "k")
    if _product(static_dims(op, k.shape, range(k.ndim), "k")) != 1:
        raise GraphError(f"{op}: k must hold one integer (rank 0 or one element), got shape {k.shape}")
    if not isinstance(attrs["upper"], bool):
        raise GraphError(f"{op}: upper must be a bool, got {attrs['upper']!r}")
    return data


register_op("trilu", pattern=OpPattern.INJECTIVE, infer=_trilu_infer,
            lower=lambda inputs, attrs, out_type: topi().trilu(inputs[0], inputs[1], attrs["upper"]),
            num_inputs=2, defaults={"upper": True},
            doc="the upper (or lower) triangle of the last two axes from diagonal ``k`` (an operand), the rest 0")


# ---------------------------------------------------------------------------------------
# einsum
# ---------------------------------------------------------------------------------------
def _diagonal_terms(terms):
    """The terms with each repeated letter kept once (where it first appears): an
    operand whose term repeats a letter (``"ii"``, ``"bii"``) is read along that
    diagonal first, and the einsum is planned over the diagonal."""
    return ["".join(c for k, c in enumerate(t) if c not in t[:k]) for t in terms]


def _diagonal(x, term, name="T_diagonal"):
    """``x`` read along the diagonals of its repeated letters (a stage of the
    distinct letters' axes, tagged injective: it inlines into what reads it)."""
    from ... import te  # noqa: PLC0415

    letters = _diagonal_terms([term])[0]
    if letters == term:
        return x
    shape = [x.shape[term.index(c)] for c in letters]
    return te.compute(shape, lambda *idx: x[tuple(idx[letters.index(c)] for c in term)], name=name,
                      tag="injective")


def _aligned(terms, output, broadcast):
    """The terms with the ``...`` axes an operand lacks (the leading ones: they are
    right-aligned) named first, as size-1 axes of it, when there are two operands:
    every broadcast axis of a product (the output keeps them all) is then an axis
    both operands have.  Returns ``(terms, added)``: per operand, how many size-1
    axes lead it now."""
    if len(terms) != 2:
        return terms, [0] * len(terms)
    out, added = [], []
    for term in terms:
        missing = [c for c in output if c in broadcast and c not in term]
        out.append("".join(missing) + term)
        added.append(len(missing))
    return out, added


def einsum_plan(op: str, terms, output) -> dict:
    """How an einsum lowers: ``{"kind": "transpose" | "sum" | "matmul", ...}``.

    tecc computes the forms torch emits: one operand transposed and/or summed over
    some axes (the kept axes in their order), or a product of two operands whose
    output is the batch axes (shared by both and kept), then the kept axes of one
    operand, then the kept axes of the other (``"bhid,bhjd->bhij"``, ``"ij,jk->ik"``,
    ``"bij,bkj->bik"``, ``"bij,jk->bik"``, ``"bij,bj->bi"``); the reduced axes are
    those both operands have and the output drops.  Each group of axes becomes one
    axis of a batched matrix product (the kept axes of an operand its rows or
    columns, the reduced ones its inner dimension).  ``terms`` repeat no letter: an
    operand whose term does is read along that diagonal first (:func:`_diagonal`).
    Other forms are refused."""
    form = ",".join(terms) + "->" + output
    for term in terms:
        if len(set(term)) != len(term):  # the caller takes diagonals first (_diagonal_terms)
            raise GraphError(f"{op}: {form!r} repeats an axis within one operand")
    if len(terms) == 1:
        (term,) = terms
        kept = [c for c in term if c in output]
        if len(kept) == len(term):
            return {"kind": "transpose", "axes": [term.index(c) for c in output]}
        if kept != list(output):
            raise GraphError(f"{op}: {form!r} sums some axes and reorders the others; write it as a sum and a "
                             "transpose")
        return {"kind": "sum", "axes": [k for k, c in enumerate(term) if c not in output]}
    if len(terms) != 2:
        raise GraphError(f"{op}: {form!r} has {len(terms)} operands; the einsum operator computes one product of "
                         "two (from_onnx chains longer forms into several: einsum_steps)")
    a, b = terms
    for c in a + b:
        if c not in output and (c not in a or c not in b):
            raise GraphError(f"{op}: {form!r} sums axis {c!r} of one operand alone; sum it first")
    batch = [c for c in output if c in a and c in b]
    rest = [c for c in output if c not in batch]
    swap = bool(rest) and rest[0] in b
    if swap:
        a, b = b, a
    m = [c for c in rest if c in a]
    n = [c for c in rest if c in b]
    if list(output) != batch + m + n:
        raise GraphError(f"{op}: {form!r} is not a (batched) matrix product: the output must be the axes both "
                         "operands keep, then the kept axes of one operand, then those of the other")
    k = [c for c in a if c in b and c not in output]
    return {"kind": "matmul", "swap": swap, "a": [a.index(c) for c in batch + m + k],
            "b": [b.index(c) for c in batch + k + n], "batch": len(batch), "m": len(m), "n": len(n), "k": len(k)}


def einsum_steps(op: str, terms, output) -> list:
    """An einsum of any number of operands as a chain of the forms
    :func:`einsum_plan` computes, one einsum call (one kernel) each:
    ``[(operands, terms, out_term)]``, where an operand is an input's index ``k >= 0``
    or ``-1 - n``, the result of step ``n``.  ``terms`` name each axis once (no
    ``...``, no diagonal).

    Left to right, each operand joins the running result (``"ij,jk,km->im"``: ``ij,jk
    ->ik``, then ``ik,km->im``); an axis no later operand or the output reads is
    summed away, alone first where only one side has it; a last transpose puts the
    axes in the output's order.  One or two operands whose form :func:`einsum_plan`
    computes directly are one step."""
    if len(terms) <= 2:
        try:
            einsum_plan(op, terms, output)
            return [(tuple(range(len(terms))), tuple(terms), output)]
        except GraphError:
            pass  # chained below: sums of one operand's axes first, a transpose last
    steps = []

    def step(sources, step_terms, out):
        steps.append((tuple(sources), tuple(step_terms), out))
        return out, -len(steps)

    current, where = terms[0], 0
    if len(terms) == 1:
        kept = "".join(c for c in current if c in output)
        if kept != current:
            current, where = step([0], [current], kept)
    for k in range(1, len(terms)):
        needed = set(output).union(*terms[k + 1:])
        pair, sources = [current, terms[k]], [where, k]
        for side in (0, 1):
            alone = [c for c in pair[side] if c not in pair[1 - side] and c not in needed]
            if alone:  # summed over one operand only: sum it there first
                kept = "".join(c for c in pair[side] if c not in alone)
                pair[side], sources[side] = step([sources[side]], [pair[side]], kept)
        a, b = pair
        out = "".join([c for c in a if c in b and c in needed] + [c for c in a if c not in b and c in needed]
                      + [c for c in b if c not in a and c in needed])
        current, where = step(sources, pair, out)
    if current != output:
        step([where], [current], output)
    for _, step_terms, out in steps:
        try:
            einsum_plan(op, step_terms, out)
        except GraphError as err:  # pragma: no cover - the chain makes only the planned forms
            form = ",".join(terms) + "->" + output
            raise GraphError(f"{op}: {form!r}: its step {','.join(step_terms)}->{out}: {err}") from None
    return steps


def _einsum_infer(types, attrs):
    op = "einsum"
    fields = tuple_arg(op, types, 0)
    dtype = same_dtype(op, fields)
    equation = attrs["equation"]
    terms, output, broadcast = parse_equation(equation, [ty.ndim for ty in fields], GraphError)
    dims = axis_sizes(equation, terms, [ty.shape for ty in fields], broadcast, lambda a, b: a == b, _is_one,
                      [f"operand {k}" for k in range(len(fields))], GraphError)
    einsum_plan(op, _diagonal_terms(_aligned(terms, output, broadcast)[0]), output)
    return TensorType([dims[c] for c in output], dtype)


def _is_one(d) -> bool:
    return isinstance(d, int) and d == 1


def _permuted(t, x, axes):
    return x if list(axes) == list(range(len(axes))) else t.transpose(x, list(axes))


def _merged(t, x, groups):
    """``x`` reshaped so that each run of ``groups`` (axis counts, in order) is one
    axis, of the product of its sizes (1 for an empty run); ``x`` itself when that
    changes nothing."""
    shape, at = [], 0
    for count in groups:
        size = 1
        for d in x.shape[at:at + count]:
            size = size * d
        shape.append(size)
        at += count
    same = len(shape) == len(x.shape) and all(int(a) == int(b) for a, b in zip(shape, x.shape))
    return x if same else t.reshape(x, shape)


def _einsum_lower(inputs, attrs, out_type):
    t = topi()
    fields = tuple_inputs(inputs)
    terms, output, broadcast = parse_equation(attrs["equation"], [len(f.shape) for f in fields], GraphError)
    terms, added = _aligned(terms, output, broadcast)
    fields = [f if n == 0 else t.reshape(f, [1] * n + list(f.shape)) for f, n in zip(fields, added)]
    fields = [_diagonal(f, term) for f, term in zip(fields, terms)]
    result = _einsum_step(t, fields, _diagonal_terms(terms), output, out_type.dtype)
    shape = [int(d) for d in out_type.shape]
    return result if [int(d) for d in result.shape] == shape else t.reshape(result, shape)


def _einsum_step(t, fields, terms, output, dtype):
    """One or two operands whose ``terms`` :func:`einsum_plan` computes."""
    plan = einsum_plan("einsum", terms, output)
    if plan["kind"] == "transpose":
        return _permuted(t, fields[0], plan["axes"])
    if plan["kind"] == "sum":
        return t.sum(fields[0], tuple(plan["axes"]))
    a, b = (fields[1], fields[0]) if plan["swap"] else (fields[0], fields[1])
    batch, m, n, k = plan["batch"], plan["m"], plan["n"], plan["k"]
    # a: batch + m + k axes as batch + [M, K]; b: batch + k + n axes as batch + [K, N]
    a = _merged(t, _permuted(t, a, plan["a"]), [1] * batch + [m, k])
    b = _merged(t, _permuted(t, b, plan["b"]), [1] * batch + [k, n])
    out = t.matmul_broadcast(a, b, dtype)
    sizes = {}
    for f, term in zip(fields, terms):
        for c, d in zip(term, f.shape):
            if c not in sizes or _is_one(_as_int(sizes[c])):  # a batch axis of 1 broadcasts
                sizes[c] = d
    shape = [sizes[c] for c in output]
    same = len(shape) == len(out.shape) and all(_as_int(x) == _as_int(y) for x, y in zip(shape, out.shape))
    return out if same else t.reshape(out, shape)


def _as_int(d):
    return int(d.value) if hasattr(d, "value") else d


register_op("einsum", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_einsum_infer,
            lower=accumulate_in_float32(_einsum_lower),
            num_inputs=1, defaults={"equation": REQUIRED},
            doc="products of a tuple's tensors summed over the axes the output does not name (the matrix-product, "
                "transpose and sum forms, over diagonals where a term repeats a letter; '...' broadcasts as in "
                "numpy)")
