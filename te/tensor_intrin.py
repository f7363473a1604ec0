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


# ---------------------------------------------------------------------------------------
# matching a tensorized loop nest against an intrinsic (lowering and TVM's test hooks)
# ---------------------------------------------------------------------------------------
def intrinsic_form(body, vmap, reads, intrin, regions, simplify):
    """The expressions ``body`` of a stage as the intrinsic would see them: each root
    variable replaced as ``vmap`` says (the block's origin plus the intrinsic's own
    axis), each read of input ``k`` (``reads[k]``) a read of the intrinsic's
    placeholder ``k`` at the index relative to ``regions[tensor]`` (``(min, extent)``
    per dimension; dimensions of extent 1 dropped), and each reduction over the
    intrinsic's reduction axes.  Equal to ``intrin.op.body`` (after ``simplify``)
    exactly when the block computes what the intrinsic does."""
    from ..tir.functor import IRMutator, substitute  # noqa: PLC0415

    placeholder = dict(zip(reads, intrin.inputs))

    class _ToIntrinsic(IRMutator):
        def visit_ProducerLoad(self, e):
            idx = tuple(self.visit(i) for i in e.indices)
            t = placeholder.get(e.producer)
            if t is None:
                return E.ProducerLoad(e.producer, idx)
            rel = [simplify(i - lo) for i, (lo, ext) in zip(idx, regions[e.producer])
                   if not E.is_const_int(ext, 1)]
            while len(rel) < len(t.shape):  # the intrinsic keeps dimensions of extent 1
                rel.insert(0, const(0, "int32"))
            return E.ProducerLoad(t, tuple(rel))

        def visit_Call(self, e):
            e = self.generic_visit(e)
            if isinstance(e, E.Call) and e.op == "if_then_else":
                return E.Select(*e.args)  # the same value (a guard written either way)
            return e

        def visit_Reduce(self, r):
            r = self.generic_visit(r)
            if isinstance(r, E.Reduce) and len(intrin.op.reduce_axis) == len(r.axis):
                r = E.Reduce(r.combiner, r.source, tuple(intrin.op.reduce_axis), r.condition, r.value_index,
                             r.init)
            return r

    return [simplify(_ToIntrinsic().visit(substitute(b, vmap))) for b in body]


def _tensorized_leaf(stage):
    for k, iv in enumerate(stage.leaf_iter_vars):
        attr = stage.iter_var_attrs.get(iv)
        if attr is not None and getattr(attr, "tensor_intrin", None) is not None:
            return k
    raise TeccTypeError(f"stage {stage.op.name!r} has no tensorized loop (s[T].tensorize(axis, intrin))")


def infer_tensorize_region(stage, dom_map):
    """TVM's ``test.op.InferTensorizeRegion``: for the loops of ``stage`` from its
    tensorized loop inward, the range of each root axis (the outer loops fixed) and
    the region of each input the block reads.  Returns ``(Map IterVar -> Range,
    Map Tensor -> [Range])``."""
    from ..runtime.container import Map  # noqa: PLC0415
    from ..tir.arith import Analyzer, IntervalSet, eval_set  # noqa: PLC0415
    from ..tir.functor import substitute  # noqa: PLC0415
    from .lower import _accesses  # noqa: PLC0415
    from .schedule import pass_up_index  # noqa: PLC0415
    from .tensor import read_tensors  # noqa: PLC0415

    op = stage.op
    p = _tensorized_leaf(stage)
    inner = stage.leaf_iter_vars[p:]
    ana = Analyzer()
    ext = {iv: dom_map[iv].extent for iv in stage.all_iter_vars if iv in dom_map}
    off = pass_up_index(stage, {iv: iv.var for iv in stage.leaf_iter_vars}, ext)
    relax = {iv.var: IntervalSet(const(0, iv.var.dtype), ana.simplify(ext[iv] - 1)) for iv in inner}
    out_dom = Map()
    value = {}
    for iv in list(op.axis) + list(op.reduce_axis):
        base = dom_map[iv].min if iv in dom_map else const(0, iv.var.dtype)
        index = ana.simplify(base + off[iv]) if iv in off else base
        s = eval_set(index, relax, ana)
        lo = ana.simplify(s.min_value)
        out_dom[iv] = E.Range(lo, ana.simplify(s.max_value - lo + 1))
        value[iv.var] = out_dom[iv]
    in_region = Map()
    body = list(op.body)
    doms = {v: IntervalSet(r.min, ana.simplify(r.min + r.extent - 1)) for v, r in value.items()}
    for t in read_tensors(body):
        dims = []
        for d in range(len(t.shape)):
            los, his = [], []
            for idx in _accesses(body, {t}):
                s = eval_set(substitute(idx[d], {}), doms, ana)
                los.append(s.min_value)
                his.append(s.max_value)
            lo, hi = los[0], his[0]
            for a, b in zip(los[1:], his[1:]):
                lo, hi = ana.simplify(E.Min(lo, a)), ana.simplify(E.Max(hi, b))
            dims.append(E.Range(lo, ana.simplify(hi - lo + 1)))
        in_region[t] = dims
    return out_dom, in_region


def match_tensorize_body(stage, out_dom, in_region, intrin):
    """TVM's ``test.op.MatchTensorizeBody``: ``stage``'s expressions over the block
    ``out_dom`` rewritten in the intrinsic's terms (see :func:`intrinsic_form`)."""
    from ..tir.arith import Analyzer  # noqa: PLC0415
    from .tensor import read_tensors  # noqa: PLC0415

    op = stage.op
    ana = Analyzer()
    vmap = {}
    axes = [(op.axis, intrin.op.axis), (op.reduce_axis, intrin.op.reduce_axis)]
    for mine, theirs in axes:
        spanned = [iv for iv in mine if not E.is_const_int(out_dom[iv].extent, 1)]
        for iv in mine:
            vmap[iv.var] = out_dom[iv].min
        for iv, a in zip(spanned, theirs):
            vmap[iv.var] = out_dom[iv].min + a.var
    reads = read_tensors(list(op.body))
    regions = {t: [(r.min, r.extent) for r in in_region[t]] for t in reads}
    return intrinsic_form(list(op.body), vmap, reads, intrin, regions, ana.simplify)


def _register_test_hooks():
    from ..runtime.packed_func import register_func  # noqa: PLC0415

    register_func("test.op.InferTensorizeRegion", infer_tensorize_region, override=True)
    register_func("test.op.MatchTensorizeBody", match_tensorize_body, override=True)


_register_test_hooks()
