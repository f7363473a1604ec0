"""Tensors and the operations that produce them.

A :class:`Tensor` is one output of an :class:`Operation`: a :class:`PlaceholderOp`
(an input) or a :class:`ComputeOp` (an element-wise definition, possibly a
reduction).  Reading ``T[i, j]`` inside a compute body gives a
:class:`~tecc.tir.ProducerLoad` expression.
"""
from __future__ import annotations

from ..errors import TeccTypeError
from ..runtime.container import Map
from ..tir import expr as E
from ..tir.functor import IRMutator, post_order_visit
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

    def replace_inputs(self, vmap):
        return self


class ComputeOp(Operation):
    """``T[axis] = body`` for every point of ``axis``.

    ``body`` holds one expression per output; for a reduction every entry is a
    :class:`~tecc.tir.Reduce` and ``reduce_axis`` lists its axes.
    """

    def __init__(self, name, tag, attrs, axis, body, reduce_axis=None):
        self.name = name
        self.tag = tag
        self.attrs = Map(attrs or {})
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

    def replace_inputs(self, vmap):
        """This operation reading ``vmap[t]`` instead of each tensor ``t`` (itself
        when it reads none of them)."""
        new_body = _ReplaceTensors(vmap).run(self.body)
        if new_body is None:
            return self
        return ComputeOp(self.name, self.tag, self.attrs, self.axis, new_body, self.reduce_axis)


class ScanOp(Operation):
    """A recurrence over the first dimension (``te.scan``).

    Output ``i`` holds ``init[i]`` in its first ``init[i].shape[0]`` rows; every
    later row ``t`` is ``update[i][t]``, which may read rows before ``t`` through
    ``state_placeholder[i]``.  ``scan_axis`` runs over the rows the updates fill;
    ``spatial_axis_`` holds one (opaque) axis per further dimension of each output.
    """

    def __init__(self, name, tag, attrs, scan_axis, init, update, state_placeholder, inputs=()):
        self.name = name
        self.tag = tag
        self.attrs = Map(attrs or {})
        self.scan_axis = scan_axis
        self.init = tuple(init)
        self.update = tuple(update)
        self.state_placeholder = tuple(state_placeholder)
        self.inputs = tuple(inputs)
        self.spatial_axis_ = tuple(
            E.IterVar(E.Range(convert(0), u.shape[k]), E.Var(f"{name}.out{i}.i{k}", u.shape[k].dtype),
                      E.IterVarType.OPAQUE)
            for i, u in enumerate(self.update) for k in range(1, len(u.shape)))

    @property
    def num_outputs(self):
        return len(self.update)

    def output_shape(self, index):
        return self.state_placeholder[index].shape

    def output_dtype(self, index):
        return self.update[index].dtype

    @property
    def input_tensors(self):
        return list(self.init) + list(self.update)

    def spatial_axes(self, index):
        """The spatial axes (dimensions 1...) of output ``index``."""
        start = sum(len(u.shape) - 1 for u in self.update[:index])
        return self.spatial_axis_[start:start + len(self.update[index].shape) - 1]

    def replace_inputs(self, vmap):
        init = tuple(vmap.get(t, t) for t in self.init)
        update = tuple(vmap.get(t, t) for t in self.update)
        if all(a is b for a, b in zip(init + update, self.init + self.update)):
            return self
        new = ScanOp.__new__(ScanOp)
        new.__dict__.update(self.__dict__)
        new.init, new.update = init, update
        return new


class TensorComputeOp(Operation):
    """A compute whose innermost dimensions are computed by a tensor intrinsic
    (``te.compute(shape, lambda i: intrin(A[i, 0:16], ...))``, see
    :func:`tecc.te.decl_tensor_intrin`).

    ``axis`` spans every output dimension: the first ``schedulable_ndim`` are loops
    (data parallel), the others (opaque) are the intrinsic's own.  ``inputs`` are
    read through ``input_regions`` (one Range per dimension, in terms of the axes
    and ``reduce_axis``).
    """

    def __init__(self, name, tag, axis, reduce_axis, schedulable_ndim, intrin, inputs, input_regions,
                 scalar_inputs=()):
        self.name = name
        self.tag = tag
        self.attrs = {}
        self.axis = tuple(axis)
        self.reduce_axis = tuple(reduce_axis)
        self.schedulable_ndim = schedulable_ndim
        self.intrin = intrin
        self.inputs = tuple(inputs)
        self.input_regions = tuple(tuple(r) for r in input_regions)
        self.scalar_inputs = tuple(scalar_inputs)

    @property
    def num_outputs(self):
        return len(self.intrin.buffers) - len(self.intrin.inputs)

    def output_shape(self, index):
        return tuple(iv.dom.extent for iv in self.axis)

    def output_dtype(self, index):
        return self.intrin.buffers[len(self.intrin.inputs) + index].dtype

    @property
    def input_tensors(self):
        return list(self.inputs)

    def replace_inputs(self, vmap):
        inputs = tuple(vmap.get(t, t) for t in self.inputs)
        if all(a is b for a, b in zip(inputs, self.inputs)):
            return self
        new = TensorComputeOp.__new__(TensorComputeOp)
        new.__dict__.update(self.__dict__)
        new.inputs = inputs
        return new


class ExternOp(Operation):
    """An operation whose body is a TIR statement (``te.extern``): it reads
    ``inputs`` through the buffers ``input_placeholders`` and writes its outputs
    through ``output_placeholders``.  Lowering binds those buffers to the real ones.
    """

    #: the loops a schedule may transform (a hybrid script's; te.extern has none)
    axis = ()

    def __init__(self, name, tag, attrs, inputs, input_placeholders, output_placeholders, body):
        self.name = name
        self.tag = tag
        self.attrs = Map(attrs or {})
        self.inputs = tuple(inputs)
        self.input_placeholders = tuple(input_placeholders)
        self.output_placeholders = tuple(output_placeholders)
        self.body = body

    def scheduled_body(self, stage):
        """The statement with ``stage``'s loop schedule applied (subclasses whose
        loops are schedulable override it)."""
        return self.body

    @property
    def num_outputs(self):
        return len(self.output_placeholders)

    def output_shape(self, index):
        return self.output_placeholders[index].shape

    def output_dtype(self, index):
        return self.output_placeholders[index].dtype

    @property
    def input_tensors(self):
        return list(self.inputs)

    def replace_inputs(self, vmap):
        inputs = tuple(vmap.get(t, t) for t in self.inputs)
        if all(a is b for a, b in zip(inputs, self.inputs)):
            return self
        return type(self)(self.name, self.tag, self.attrs, inputs, self.input_placeholders,
                          self.output_placeholders, self.body)


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
        if (len(indices) < self.ndim and all(not isinstance(i, slice) for i in indices)) or \
                (len(indices) <= self.ndim and any(isinstance(i, slice) for i in indices)):
            # a partial index, or a region (``A[i, 0:16]``, the argument of a tensor intrinsic)
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

    # arithmetic on whole tensors (``A + B``, ``A * 2``) makes new tensors through
    # the operator library, as in TVM: tecc.topi registers the implementation
    _tensor_arith = True

    def astype(self, dtype):
        """The tensor's elements cast to ``dtype``, a new tensor (TVM's ``Tensor.astype``,
        ``topi.cast``)."""
        return _tensor_arith("cast", self, dtype)

    def __add__(self, other):
        return _tensor_arith("add", self, other)

    def __radd__(self, other):
        return _tensor_arith("add", other, self)

    def __sub__(self, other):
        return _tensor_arith("subtract", self, other)

    def __rsub__(self, other):
        return _tensor_arith("subtract", other, self)

    def __mul__(self, other):
        return _tensor_arith("multiply", self, other)

    def __rmul__(self, other):
        return _tensor_arith("multiply", other, self)

    def __truediv__(self, other):
        return _tensor_arith("divide", self, other)

    def __rtruediv__(self, other):
        return _tensor_arith("divide", other, self)

    def __floordiv__(self, other):
        return _tensor_arith("floor_divide", self, other)

    def __rfloordiv__(self, other):
        return _tensor_arith("floor_divide", other, self)

    def __mod__(self, other):
        return _tensor_arith("floor_mod", self, other)

    def __rmod__(self, other):
        return _tensor_arith("floor_mod", other, self)

    def __neg__(self):
        return _tensor_arith("multiply", self, -1)


#: ``(op name, a, b) -> Tensor``: element-wise arithmetic with broadcasting on
#: tensors; set by :mod:`tecc.topi` when it is imported (te never imports topi)
TENSOR_ARITH = None


def _tensor_arith(name, a, b):
    if TENSOR_ARITH is None:
        t = a if isinstance(a, Tensor) else b
        raise TeccTypeError(
            f"`{name}` of the whole tensor {t.name!r}: arithmetic on tensors is defined by the operator library; "
            f"`from tecc import topi` first -- or, inside te.compute, index the tensor: {t.name}[i]")
    return TENSOR_ARITH(name, a, b)


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


class _ReplaceTensors(IRMutator):
    def __init__(self, vmap):
        self.vmap = vmap

    def visit_ProducerLoad(self, e):
        idx = tuple(self.visit(i) for i in e.indices)
        t = self.vmap.get(e.producer, e.producer)
        if t is e.producer and all(a is b for a, b in zip(idx, e.indices)):
            return e
        return E.ProducerLoad(t, idx)

    def visit_Reduce(self, r):
        return self.generic_visit(r)

    def run(self, bodies):
        new = [self.visit(b) for b in bodies]
        if all(a is b for a, b in zip(new, bodies)):
            return None
        # a tuple reduction must keep sharing one source tuple
        if isinstance(new[0], E.Reduce) and len(new) > 1:
            src = new[0].source
            new = [E.Reduce(r.combiner, src, r.axis, new[0].condition, r.value_index, r.init) for r in new]
        return new
