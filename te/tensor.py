"""Tensors and the operations that produce them.

A :class:`Tensor` is one output of an :class:`Operation`: a :class:`PlaceholderOp`
(an input) or a :class:`ComputeOp` (an element-wise definition, possibly a
reduction).  Reading ``T[i, j]`` inside a compute body gives a
:class:`~tecc.tir.ProducerLoad` expression.
"""
from __future__ import annotations

from ..errors import TeccTypeError
from ..tir import expr as E
from ..tir.functor import post_order_visit
from ..tir.op import convert


class Operation:
    """Base of operations.  Operations compare and hash by identity."""

    name: str
    tag: str = ""
    attrs: dict

    @property
    def num_outputs(self) -> int:
        return 1

    def output(self, index: int) -> "Tensor":
        if not 0 <= index < self.num_outputs:
            raise IndexError(f"operation {self.name!r} has {self.num_outputs} output(s), asked for {index}")
        return Tensor(self, index)

    @property
    def input_tensors(self) -> list:
        return []

    def output_shape(self, index):
        raise NotImplementedError

    def output_dtype(self, index):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class PlaceholderOp(Operation):
    """An input tensor of the computation."""

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.attrs = {}

    def output_shape(self, index):
        return self.shape

    def output_dtype(self, index):
        return self.dtype


class ComputeOp(Operation):
    """``T[axis] = body`` for every point of ``axis``.

    ``body`` holds one expression per output; for a reduction every entry is a
    :class:`~tecc.tir.Reduce` and ``reduce_axis`` lists its axes.
    """

    def __init__(self, name, tag, attrs, axis, body, reduce_axis=None):
        self.name = name
        self.tag = tag
        self.attrs = dict(attrs or {})
        self.axis = tuple(axis)
        self.body = tuple(body)
        if reduce_axis is None:
            reduce_axis = self.body[0].axis if isinstance(self.body[0], E.Reduce) else ()
        self.reduce_axis = tuple(reduce_axis)
        self._inputs = None

    @property
    def num_outputs(self):
        return len(self.body)

    @property
    def shape(self):
        return tuple(iv.dom.extent for iv in self.axis)

    def output_shape(self, index):
        return self.shape

    def output_dtype(self, index):
        return self.body[index].dtype

    @property
    def input_tensors(self):
        if self._inputs is None:
            self._inputs = read_tensors(self.body)
        return list(self._inputs)

    @property
    def is_reduction(self):
        return isinstance(self.body[0], E.Reduce)


def read_tensors(exprs) -> list:
    """Tensors read by ``exprs`` (in first-read order, without duplicates)."""
    seen = {}

    def f(node):
        if isinstance(node, E.ProducerLoad) and node.producer not in seen:
            seen[node.producer] = None

    for e in exprs:
        post_order_visit(e, f)
    return list(seen)


class Tensor:
    """Output ``value_index`` of operation ``op``.

    ``A[i, j]`` (or ``A(i, j)``, ``A[i][j]``) reads an element inside a compute
    definition.  Two Tensor objects are equal when they name the same output.
    """

    __slots__ = ("op", "value_index")

    def __init__(self, op, value_index=0):
        self.op = op
        self.value_index = value_index

    def __eq__(self, other):
        if isinstance(other, Tensor):
            return self.op is other.op and self.value_index == other.value_index
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash((id(self.op), self.value_index))

    @property
    def shape(self):
        return tuple(self.op.output_shape(self.value_index))

    @property
    def dtype(self):
        return self.op.output_dtype(self.value_index)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def name(self):
        if self.op.num_outputs == 1:
            return self.op.name
        return f"{self.op.name}.v{self.value_index}"

    def __call__(self, *indices):
        return self[indices]

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) < self.ndim and all(not isinstance(i, slice) for i in indices):
            return TensorSlice(self, indices)
        return self._load(indices)

    def _load(self, indices):
        if len(indices) != self.ndim:
            raise TeccTypeError(
                f"tensor {self.name!r} has {self.ndim} dimension(s) but was indexed with {len(indices)} "
                f"index(es): {self.name}[{', '.join(str(i) for i in indices)}]")
        idx = []
        for k, i in enumerate(indices):
            if isinstance(i, slice):
                raise TeccTypeError(f"tensor {self.name!r}: slices are not supported inside compute; index each element")
            e = convert(i)
            if not e.dtype.startswith(("int", "uint")):
                raise TeccTypeError(
                    f"index {k} of tensor {self.name!r} is `{e}` of dtype {e.dtype}; indices must be integers")
            idx.append(e)
        return E.ProducerLoad(self, tuple(idx))

    def __repr__(self):
        shape = ", ".join(str(s) for s in self.shape)
        return f"Tensor(name={self.name}, shape=({shape}), dtype={self.dtype})"

    def __len__(self):
        raise TeccTypeError(f"len() of tensor {self.name!r} is not defined; use .shape")

    def __iter__(self):
        raise TeccTypeError(f"tensor {self.name!r} is not iterable; index it element-wise inside te.compute")

    # a tensor is not an expression: catch the common mistake early
    def _no_arith(self, *_):
        raise TeccTypeError(
            f"tensor {self.name!r} cannot be used directly in arithmetic; index it, e.g. {self.name}[i]")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arith
    __truediv__ = __rtruediv__ = __neg__ = _no_arith


class TensorSlice:
    """A partly indexed tensor: ``A[i]`` of a 2-D tensor, completed by ``[j]``."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor, indices):
        self.tensor = tensor
        self.indices = tuple(indices)

    def __getitem__(self, more):
        if not isinstance(more, tuple):
            more = (more,)
        return self.tensor[self.indices + more]

    def asobject(self):
        return self.tensor._load(self.indices)

    @property
    def dtype(self):
        return self.tensor.dtype
