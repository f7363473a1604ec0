"""Converters of ONNX sequences and optionals, resolved when importing.

A sequence's length and each of its tensors' shapes are known when compiling
(tecc compiles static shapes), so the importer holds a sequence as a Python
tuple of the graph's tensors (:class:`OnnxSequence`) and an optional as a value
or nothing (:class:`OnnxOptional`): SequenceInsert, SequenceAt, SplitToSequence,
ConcatFromSequence... pick and put tensors when the model is imported, and no
kernel sees a sequence.  Positions must be known when compiling.  A graph input
that is a sequence becomes one input per tensor (``x[0]``, ``x[1]``...: their
shapes given as ``from_onnx(shape={"x": [shape0, shape1, ...]})``), and a graph
output that is a sequence one output per tensor, in order (the ONNX backend gives
them back as a list).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .common import _normalize_axis, _np_dtype


@dataclasses.dataclass(frozen=True)
class OnnxSequence:
    """An ONNX sequence value: its tensors (graph expressions) and their dtype."""

    items: tuple
    dtype: str

    def __len__(self) -> int:
        return len(self.items)


@dataclasses.dataclass(frozen=True)
class OnnxOptional:
    """An ONNX optional value: a tensor or an :class:`OnnxSequence`, or None (empty)."""

    value: object


def is_container(value) -> bool:
    return isinstance(value, (OnnxSequence, OnnxOptional))


def describe(value) -> str:
    """``value``'s kind in words, for errors."""
    if isinstance(value, OnnxSequence):
        return f"a sequence of {len(value)} {value.dtype} tensor(s)"
    if isinstance(value, OnnxOptional):
        return "an empty optional" if value.value is None else "an optional"
    return "a tensor"


def _sequence(node, value, what="input 0") -> OnnxSequence:
    if isinstance(value, OnnxOptional) and isinstance(value.value, OnnxSequence):
        value = value.value
    if not isinstance(value, OnnxSequence):
        node.fail(f"{what} is {describe(value)}; it must be a sequence")
    return value


def _position(ctx, node, pos, length: int, insert: bool) -> int:
    """The compile-time position ``pos`` in a sequence of ``length`` (negative
    counts from the end; an insertion may be at ``length``)."""
    p = ctx.scalar_value(pos, "the position (input 1)", int)
    high = length if insert else length - 1
    if not -length <= p <= high:
        node.fail(f"position {p} is out of range for a sequence of length {length} (valid: {-length}..{high})")
    return p + length if p < 0 else p


def _elem_dtype(ctx, node, seq: OnnxSequence, tensor) -> None:
    dtype = ctx.dtype_of(tensor)
    if dtype != seq.dtype:
        node.fail(f"the tensor is {dtype}; the sequence holds {seq.dtype}")


def _sequence_empty(ctx, node, inputs):
    dtype = node.attr("dtype")
    return OnnxSequence((), _np_dtype(dtype, node.where) if dtype is not None else "float32")


def _sequence_construct(ctx, node, inputs):
    if not inputs:
        node.fail("it has no inputs; ONNX's SequenceConstruct takes at least one tensor")
    dtypes = {ctx.dtype_of(x) for x in inputs}
    if len(dtypes) != 1:
        node.fail(f"its tensors have different dtypes ({sorted(dtypes)}); a sequence holds one")
    return OnnxSequence(tuple(inputs), dtypes.pop())


def _sequence_insert(ctx, node, inputs):
    seq = _sequence(node, inputs[0])
    tensor = inputs[1]
    _elem_dtype(ctx, node, seq, tensor)
    pos = ctx.optional_input(inputs, 2)
    at = len(seq) if pos is None else _position(ctx, node, pos, len(seq), insert=True)
    return OnnxSequence(seq.items[:at] + (tensor,) + seq.items[at:], ctx.dtype_of(tensor))


def _sequence_at(ctx, node, inputs):
    seq = _sequence(node, inputs[0])
    return seq.items[_position(ctx, node, inputs[1], len(seq), insert=False)]


def _sequence_erase(ctx, node, inputs):
    seq = _sequence(node, inputs[0])
    if not seq.items:
        node.fail("the sequence is empty; there is nothing to erase")
    pos = ctx.optional_input(inputs, 1)
    at = len(seq) - 1 if pos is None else _position(ctx, node, pos, len(seq), insert=False)
    return OnnxSequence(seq.items[:at] + seq.items[at + 1:], seq.dtype)


def _sequence_length(ctx, node, inputs):
    return ctx.const(np.array(len(_sequence(node, inputs[0])), np.int64), "int64")


def _split_to_sequence(ctx, node, inputs):
    x = inputs[0]
    shape = ctx.shape(x)
    axis = _normalize_axis(node.attr("axis", 0), len(shape), node)
    split = ctx.optional_input(inputs, 1)
    n = shape[axis]
    if split is None:
        sizes, keep = [1] * n, node.flag("keepdims", 1)
    else:
        given = np.asarray(ctx.value(split, "split (input 1)"))
        keep = True
        if given.ndim == 0:  # one chunk size: the last chunk may be smaller
            step = int(given)
            if step <= 0:
                node.fail(f"split {step} must be positive")
            sizes = [min(step, n - s) for s in range(0, n, step)]
        else:
            sizes = [int(v) for v in given.reshape(-1)]
            if any(v < 0 for v in sizes) or sum(sizes) != n:
                node.fail(f"split {sizes} must be non-negative and sum to the axis' length {n}")
    pieces, start = [], 0
    for size in sizes:
        begin = [0] * len(shape)
        end = list(shape)
        begin[axis], end[axis] = start, start + size
        piece = ctx.call("strided_slice", x, begin=tuple(begin), end=tuple(end), strides=(1,) * len(shape))
        if not keep:
            piece = ctx.reshape(piece, shape[:axis] + shape[axis + 1:])
        pieces.append(piece)
        start += size
    return OnnxSequence(tuple(pieces), ctx.dtype_of(x))


def _concat_from_sequence(ctx, node, inputs):
    seq = _sequence(node, inputs[0])
    if not seq.items:
        node.fail("the sequence is empty; ConcatFromSequence needs at least one tensor")
    new_axis = node.flag("new_axis", 0)
    rank = ctx.rank(seq.items[0])
    axis = _normalize_axis(node.required("axis"), rank + 1 if new_axis else rank, node)
    items = list(seq.items)
    if new_axis:
        items = [ctx.call("expand_dims", x, axis=axis, num_newaxis=1) for x in items]
    if len(items) == 1:
        return items[0]
    return ctx.call("concatenate", ctx.tuple(items), axis=axis)


# --- optionals -----------------------------------------------------------------------------
def _optional(ctx, node, inputs):
    value = ctx.optional_input(inputs, 0)
    return OnnxOptional(value)


def _optional_has_element(ctx, node, inputs):
    value = ctx.optional_input(inputs, 0)
    present = value is not None and not (isinstance(value, OnnxOptional) and value.value is None)
    return ctx.const(np.array(present), "bool")


def _optional_get_element(ctx, node, inputs):
    value = inputs[0]
    if isinstance(value, OnnxOptional):
        if value.value is None:
            node.fail("the optional is empty; there is no element to get")
        return value.value
    return value  # a tensor or sequence given where an optional may be (OptionalGetElement-18)
