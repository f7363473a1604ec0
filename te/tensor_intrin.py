"""Tensor intrinsics: a hand-written statement (a call of a vector or matrix
instruction, of an external kernel) that computes a small tensor operation.

``te.decl_tensor_intrin(op, fcompute)`` declares one: ``op`` (a te.compute) says
what it computes, ``fcompute(ins, outs)`` returns the statement that does it on the
buffers ``ins``/``outs`` -- or, for a reduction, ``(body, reset, update)``.  It is
then used as the body of a compute over the outer dimensions::

    vadd = te.decl_tensor_intrin(z.op, intrin_func, default_buffer_params={"offset_factor": 16})
    C = te.compute((m // 16, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]))

which makes a :class:`~tecc.te.tensor.TensorComputeOp`; lowering binds the
intrinsic's buffers to the regions it is applied to (see te/lower.py).
"""
from __future__ import annotations

from ..errors import TeccTypeError
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.op import const, convert
from .tensor import ComputeOp, PlaceholderOp, Tensor, TensorSlice


class TensorIntrin:
    """A declared tensor intrinsic (TVM's ``TensorIntrin``)."""

    def __init__(self, name, op, inputs, buffers, scalar_params, body, reduce_init, reduce_update):
        self.name = name
        self.op = op
        self.inputs = tuple(inputs)
        self.buffers = tuple(buffers)          # one per input, then one per output
        self.scalar_params = tuple(scalar_params)
        self.body = body
        self.reduce_init = reduce_init
        self.reduce_update = reduce_update

    def __repr__(self):
        return f"TensorIntrin({self.name!r})"

    def __call__(self, *args, **kwargs):
        reduce_axis = kwargs.pop("reduce_axis", ())
        scalar_inputs = kwargs.pop("scalar_inputs", ())
        if kwargs:
            raise TeccTypeError(f"tensor intrinsic {self.name!r}: unexpected argument(s) {sorted(kwargs)}; "
                                "it takes the input regions, reduce_axis= and scalar_inputs=")
        if isinstance(reduce_axis, E.IterVar):
            reduce_axis = (reduce_axis,)
        if not isinstance(scalar_inputs, (list, tuple)):
            scalar_inputs = (scalar_inputs,)
        # regions (A[i, 0:16], A[i, j], A) and scalars may come interleaved, as in TVM
        regions = [a for a in args if isinstance(a, (Tensor, TensorSlice, E.ProducerLoad))]
        scalar_inputs = [a for a in args if not isinstance(a, (Tensor, TensorSlice, E.ProducerLoad))] + \
            list(scalar_inputs)
        args = regions
        if len(args) != len(self.inputs):
            raise TeccTypeError(f"tensor intrinsic {self.name!r} takes {len(self.inputs)} input region(s), got "
                                f"{len(args)}")
        if len(scalar_inputs) != len(self.scalar_params):
            raise TeccTypeError(f"tensor intrinsic {self.name!r} has {len(self.scalar_params)} scalar "
                                f"parameter(s); pass as many scalar_inputs=, got {len(scalar_inputs)}")
        tensors, regions = [], []
        for k, arg in enumerate(args):
            t, region = _region(arg, f"tensor intrinsic {self.name!r}, input {k}")
            want = self.inputs[k]
            extents = [r.extent for r in region if not E.is_const_int(r.extent, 1)]
            if t.dtype != want.dtype:
                raise TeccTypeError(f"tensor intrinsic {self.name!r}, input {k}: {t.name!r} is {t.dtype}, the "
                                    f"intrinsic takes {want.dtype}")
            if len(extents) > len(want.shape):
                raise TeccTypeError(
                    f"tensor intrinsic {self.name!r}, input {k}: the region of {t.name!r} has {len(extents)} "
                    f"dimensions of extent > 1 but the intrinsic's input {want.name!r} has shape {want.shape}")
            tensors.append(t)
            regions.append(region)
        for iv in reduce_axis:
            if not isinstance(iv, E.IterVar) or iv.iter_type != E.IterVarType.COMM_REDUCE:
                raise TeccTypeError(f"tensor intrinsic {self.name!r}: reduce_axis must be te.reduce_axis "
                                    f"axes, got {iv!r}")
        if reduce_axis and self.reduce_update is None:
            raise TeccTypeError(f"tensor intrinsic {self.name!r} is applied over reduce_axis, so its fcompute "
                                "must return (body, reset, update)")
        return TensorIntrinCall(self, tensors, regions, tuple(reduce_axis),
                                tuple(convert(x) for x in scalar_inputs))


class TensorIntrinCall:
    """``intrin(regions...)``: what a te.compute returns to apply a tensor intrinsic."""

    def __init__(self, intrin, tensors, regions, reduce_axis, scalar_inputs):
        self.intrin = intrin
        self.tensors = tuple(tensors)
        self.regions = tuple(regions)
        self.reduce_axis = tuple(reduce_axis)
        self.scalar_inputs = tuple(scalar_inputs)


def _region(arg, what):
    """``(tensor, [Range per dimension])`` of an argument ``A[i, 0:16]``."""
    if isinstance(arg, Tensor):
        return arg, [E.Range(const(0, s.dtype), s) for s in arg.shape]
    if isinstance(arg, E.ProducerLoad):  # A[i, j]: the one element
        return arg.producer, [E.Range(i, const(1, i.dtype)) for i in arg.indices]
    if not isinstance(arg, TensorSlice):
        raise TeccTypeError(f"{what}: expected a tensor region such as A[i, 0:16], got {arg!r}")
    t, idx = arg.tensor, list(arg.indices)
    idx += [slice(None)] * (t.ndim - len(idx))
    region = []
    for d, (i, size) in enumerate(zip(idx, t.shape)):
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise TeccTypeError(f"{what}: the slice of dimension {d} of {t.name!r} has a step; use a "
                                    "contiguous range start:stop")
            lo = convert(i.start) if i.start is not None else const(0, size.dtype)
            hi = convert(i.stop) if i.stop is not None else size
            region.append(E.Range(lo, hi - lo if not E.is_const_int(lo, 0) else hi))
        else:
            region.append(E.Range(convert(i.var if isinstance(i, E.IterVar) else i), const(1, size.dtype)))
    return t, region


def decl_tensor_intrin(op, fcompute, name="tensor_intrin", binds=None, scalar_params=None,
                       default_buffer_params=None):
    """Declare a tensor intrinsic (TVM's ``te.decl_tensor_intrin``).

    Parameters
    ----------
    op : ComputeOp
        What the intrinsic computes (``z.op`` of a small ``te.compute``).
    fcompute : callable
        ``fcompute(ins, outs)`` with one :class:`~tecc.tir.Buffer` per input and
        output of ``op``; returns the statement (or call expression) computing the
        outputs, or for a reduction ``(body, reset, update)``: the whole computation,
        the zeroing of the outputs, and the accumulation into them.
    binds : dict, optional
        Tensor -> Buffer for the inputs/outputs that need a particular buffer (a
        scope, strides); the others get ``tir.decl_buffer(shape, dtype, name,
        **default_buffer_params)``.
    scalar_params : list of Var, optional
        Scalars of the statement that each use of the intrinsic provides
        (``scalar_inputs=``).
    default_buffer_params : dict, optional
        Keyword arguments of ``tir.decl_buffer`` for the default buffers, e.g.
        ``{"offset_factor": 16}`` so the intrinsic applies at any offset that is a
        multiple of 16.
    """
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, ComputeOp):
        raise TeccTypeError(f"decl_tensor_intrin {name!r}: op must be the operation of a te.compute "
                            f"(z.op), got {op!r}")
    binds = dict(binds or {})
    params = dict(default_buffer_params or {})
    inputs = []
    for t in op.input_tensors:
        if not isinstance(t.op, PlaceholderOp):
            raise TeccTypeError(f"decl_tensor_intrin {name!r}: input {t.name!r} of {op.name!r} must be a "
                                "te.placeholder")
        inputs.append(t)
    outputs = [op.output(i) for i in range(op.num_outputs)]
    buffers = []
    for t in inputs + outputs:
        buf = binds.get(t)
        if buf is None:
            buf = S.decl_buffer(t.shape, t.dtype, t.op.name, **params)
        elif not isinstance(buf, S.Buffer):
            raise TeccTypeError(f"decl_tensor_intrin {name!r}: binds[{t.name!r}] must be a tir.decl_buffer")
        buffers.append(buf)
    scalar_params = tuple(scalar_params or ())
    if scalar_params:
        result = fcompute(buffers[:len(inputs)], buffers[len(inputs):], list(scalar_params))
    else:
        result = fcompute(buffers[:len(inputs)], buffers[len(inputs):])

    def stmt(x, what):
        if x is None:
            return None
        if isinstance(x, E.PrimExpr):
            return S.Evaluate(x)
        if not isinstance(x, S.Stmt):
            raise TeccTypeError(f"decl_tensor_intrin {name!r}: fcompute's {what} must be a statement or a call "
                                f"expression, got {x!r}")
        return x

    if isinstance(result, (list, tuple)):
        if len(result) != 3:
            raise TeccTypeError(f"decl_tensor_intrin {name!r}: fcompute returns one statement, or three "
                                f"(body, reset, update) for a reduction; got {len(result)}")
        body, reset, update = (stmt(x, w) for x, w in zip(result, ("body", "reset", "update")))
    else:
        body, reset, update = stmt(result, "result"), None, None
    return TensorIntrin(name, op, inputs, buffers, scalar_params, body, reset, update)
