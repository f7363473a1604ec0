"""Shape and dtype rules shared by the operator definitions."""
from __future__ import annotations

from ...runtime import dtypes as _rt_dtypes
from ..ir import GraphError, TensorType, dtype_name


def tensor_arg(op: str, types, i: int = 0) -> TensorType:
    """Operand ``i``'s type, which must be a tensor."""
    ty = types[i]
    if not isinstance(ty, TensorType):
        raise GraphError(f"{op}: operand {i} must be a tensor, got {ty}")
    return ty


def broadcast_shapes(op: str, *shapes) -> tuple:
    """numpy's broadcasting of ``shapes``; a symbolic dimension broadcasts with 1
    and with itself."""
    ndim = max(len(s) for s in shapes)
    out = []
    for axis in range(ndim):
        dims = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise GraphError(f"{op}: shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast "
                             f"(axis {axis - ndim} has sizes {sorted(map(str, dims))})")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def same_dtype(op: str, types) -> str:
    """The operands' common dtype (they must agree: the importer casts first)."""
    dtypes = [t.dtype for t in types]
    if len(set(dtypes)) > 1:
        raise GraphError(f"{op}: operands have different dtypes {dtypes}; cast them to one dtype first")
    return dtypes[0]


# ---------------------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------------------
def tensor_args(op: str, types, count: int) -> list:
    """The types of the first ``count`` operands, each of which must be a tensor."""
    return [tensor_arg(op, types, i) for i in range(count)]


def tuple_arg(op: str, types, i: int = 0) -> list:
    """Operand ``i``'s field types: it must be a tuple of tensors (``concatenate``,
    ``einsum``)."""
    from ..ir import TupleType  # noqa: PLC0415

    ty = types[i]
    if not isinstance(ty, TupleType):
        raise GraphError(f"{op}: operand {i} must be a Tuple of tensors, got {ty}; wrap the tensors in "
                         "tecc.graph.Tuple([...])")
    for k, f in enumerate(ty.fields):
        if not isinstance(f, TensorType):
            raise GraphError(f"{op}: field {k} of the tuple operand is {f}, not a tensor")
    if not ty.fields:
        raise GraphError(f"{op}: the tuple operand is empty; it needs at least one tensor")
    return list(ty.fields)


def as_int(op: str, name: str, value) -> int:
    """Attribute ``name`` as an int (refused when it is not one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise GraphError(f"{op}: attribute {name!r} must be an int, got {value!r}")
    return value


def int_tuple(op: str, name: str, value, lengths, at_least=None) -> tuple:
    """Attribute ``name`` (an int or a list of ints) as a tuple whose length is one
    of ``lengths`` (a single int is repeated to the first of them); each entry at
    least ``at_least`` when given."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * lengths[0]
    if not isinstance(value, tuple) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise GraphError(f"{op}: attribute {name!r} must be an int or a list of ints, got {value!r}")
    if len(value) not in lengths:
        want = " or ".join(str(n) for n in lengths)
        raise GraphError(f"{op}: attribute {name!r} = {list(value)} must have {want} entries")
    if at_least is not None and any(v < at_least for v in value):
        raise GraphError(f"{op}: attribute {name!r} = {list(value)} has an entry below {at_least}")
    return value


def padding_of(op: str, padding, k: int) -> tuple:
    """Relay's padding of ``k`` spatial axes -- one int, ``k`` ints (each axis, both
    sides) or ``2 k`` (the befores, then the afters: ``(top, left, bottom, right)`` in
    2-D) -- as the ``2 k`` ints."""
    pad = int_tuple(op, "padding", padding, (2 * k, 1, k), at_least=0)
    if len(pad) == 1:
        return pad * (2 * k)
    if len(pad) == k:
        return pad + pad
    return pad


def normalize_axis(op: str, axis, ndim: int, name: str = "axis", extra: int = 0) -> int:
    """``axis`` (negative counts from the end) as an index in ``[0, ndim + extra)``;
    out of range is refused."""
    axis = as_int(op, name, axis)
    n = ndim + extra
    if not -n <= axis < n:
        raise GraphError(f"{op}: {name} {axis} is out of range for a tensor of rank {ndim}; use an axis in "
                         f"[{-n}, {n - 1}]")
    return axis + n if axis < 0 else axis


def axis_list(op: str, axis, ndim: int, name: str = "axis") -> list:
    """``axis`` (None, an int or a list of ints) as sorted distinct non-negative
    axes (None: every axis)."""
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, int) and not isinstance(axis, bool):
        axis = (axis,)
    if not isinstance(axis, tuple):
        raise GraphError(f"{op}: attribute {name!r} must be None, an int or a list of ints, got {axis!r}")
    axes = [normalize_axis(op, a, ndim, name) for a in axis]
    if len(set(axes)) != len(axes):
        raise GraphError(f"{op}: {name} {list(axis)} names an axis twice")
    return sorted(axes)


def is_int_dtype(dtype: str) -> bool:
    """An integer tensor type (int4 and the other narrow integers included)."""
    return _rt_dtypes.kind(dtype) in "iu"


def check_dtype(op: str, name: str, dtype) -> str:
    """A dtype attribute in canonical form ("float32"...)."""
    if not isinstance(dtype, str) or not dtype:
        raise GraphError(f"{op}: attribute {name!r} must be a dtype name such as 'float32', got {dtype!r}")
    try:
        return dtype_name(dtype)
    except TypeError:
        raise GraphError(f"{op}: attribute {name!r} = {dtype!r} is not a dtype; use e.g. 'float32' or "
                         "'int64'") from None


def check_choice(op: str, name: str, value, choices) -> str:
    """Attribute ``name``, which must be one of ``choices``."""
    if value not in choices:
        raise GraphError(f"{op}: attribute {name!r} = {value!r} is not one of {list(choices)}")
    return value


# ---------------------------------------------------------------------------------------
# shapes with symbolic dimensions
# ---------------------------------------------------------------------------------------
def is_static(*dims) -> bool:
    """Every dimension is a known int."""
    return all(isinstance(d, int) for d in dims)


def static_dims(op: str, shape, axes, what: str) -> list:
    """The dimensions ``axes`` of ``shape``, which must be known ints (a symbolic
    one is refused, saying how to bind it)."""
    out = []
    for a in axes:
        d = shape[a]
        if not isinstance(d, int):
            raise GraphError(f"{op}: {what} needs dimension {a} of shape {tuple(shape)} to be known, but it is "
                             f"the symbolic {d!r}; bind it with a concrete size (the shape dict of the importer)")
        out.append(d)
    return out


def same_dim(op: str, a, b, what: str) -> None:
    """Two dimensions that must agree (symbolic ones only with the same name)."""
    if a != b:
        raise GraphError(f"{op}: {what} ({a} vs {b})")


def window_out(size, kernel, stride, dilation, pad_before, pad_after, ceil_mode=False):
    """Windows along one axis, as topi's pooling and convolution count them
    (``ceil_mode`` adds ``stride - 1`` of padding after)."""
    extra = stride - 1 if ceil_mode else 0
    n = (size + pad_before + pad_after + extra - ((kernel - 1) * dilation + 1)) // stride + 1
    if ceil_mode and isinstance(n, int) and isinstance(size, int) and (n - 1) * stride >= size + pad_before:
        n -= 1  # a last window starting in the right padding is dropped (ONNX's and PyTorch's rule)
    return n


# ---------------------------------------------------------------------------------------
# lowering
# ---------------------------------------------------------------------------------------
#: the float types whose sums and products the graph computes in float32
HALF_FLOATS = ("float16", "bfloat16")


def accumulate_in_float32(lower, cast_inputs=True):
    """``lower`` of an operator that sums (a product, a reduction, a normalization,
    softmax, an average) whose result, for float16 and bfloat16 outputs, is computed
    in float32 and rounded once at the end -- as cuBLAS, cuDNN, torch and
    onnxruntime compute them: kept in 8 or 11 bits of mantissa, a mean of 768
    bfloat16 values was 23% off.  ``cast_inputs``: the half-width float inputs are
    cast to float32 first (a reduction); without, they stay as they are and only the
    result is float32 (a product's ``out_dtype``: tensor cores take half-width
    operands).  Other dtypes are lowered as they are."""

    def lowered(inputs, attrs, out_type):
        if out_type.dtype not in HALF_FLOATS:
            return lower(inputs, attrs, out_type)
        t = topi()

        def wide(x):
            if isinstance(x, (list, tuple)):  # a tuple operand (einsum's)
                return [wide(f) for f in x]
            return t.cast(x, "float32") if getattr(x, "dtype", None) in HALF_FLOATS else x

        if cast_inputs:
            inputs = [wide(x) for x in inputs]
        return t.cast(lower(inputs, attrs, TensorType(out_type.shape, "float32")), out_type.dtype)

    lowered.__doc__ = lower.__doc__
    return lowered


def topi():
    """tecc's operator library (imported on first use: the compiler loads only when
    a model is built)."""
    from ... import topi as _topi  # noqa: PLC0415

    return _topi


def target_keys() -> tuple:
    """The keys of the current target (``("cpu",)``, ``("cuda", "gpu")``), or
    ``()`` outside any target scope."""
    from ...target import Target  # noqa: PLC0415

    target = Target.current(allow_none=True)
    return tuple(target.keys) if target is not None else ()


def for_target(cpu, gpu, generic):
    """The one of ``cpu``, ``gpu`` and ``generic`` (computes) that fits the current
    target: the tunable CPU or CUDA compute (so tuning records apply and tasks can
    be extracted), else topi's plain one."""
    keys = target_keys()
    if "gpu" in keys or "cuda" in keys:
        return gpu
    if "cpu" in keys:
        return cpu
    return generic


def tuple_inputs(inputs) -> list:
    """The TE tensors of an operator whose one operand is a tuple: the builder
    passes them as a list (``inputs[0]``), or one by one."""
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        return list(inputs[0])
    return list(inputs)


def te_shape(shape, inputs) -> list:
    """``shape`` (ints and symbolic names) with each symbolic name replaced by the
    TE variable of that name found in the shapes of ``inputs``."""
    found = {}
    for t in inputs:
        found.update(_shape_vars(t if isinstance(t, (list, tuple)) else [t]))
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
        elif d in found:
            out.append(found[d])
        else:
            raise GraphError(f"the symbolic dimension {d!r} of the result is not a dimension of any operand; "
                             "bind it with a concrete size")
    return out


def _shape_vars(tensors) -> dict:
    out = {}
    for t in tensors:
        for d in t.shape:
            name = getattr(d, "name", None)
            if isinstance(name, str):
                out[name] = d
    return out
