"""Declaring computations: placeholder, compute, reduce_axis, var, thread_axis."""
from __future__ import annotations

import inspect

from ..errors import TeccTypeError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import keys
from ..tir.functor import IRMutator, post_order_visit
from ..tir.op import const, convert
from .tensor import ComputeOp, ExternOp, PlaceholderOp, ScanOp, Tensor


def var(name="tindex", dtype="int32"):
    """A symbolic scalar, e.g. a dynamic dimension ``n = te.var("n")``."""
    return E.Var(name, _dt.canonical(dtype))


def size_var(name="size", dtype="int32"):
    """A symbolic size: a variable known to be non-negative."""
    return E.SizeVar(name, _dt.canonical(dtype))


def _shape(shape, what):
    if isinstance(shape, (E.PrimExpr, int)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TeccTypeError(f"{what}: shape must be a tuple of sizes, got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, E.IterVar):
            d = d.var
        if isinstance(d, float):
            # TVM's tutorials write sizes as ``N / bn`` (a Python float in Python 3),
            # which TVM's compute takes as an int; a fraction is a mistake
            if not d.is_integer():
                raise TeccTypeError(f"{what}: dimension {d!r} is not a whole number; sizes must be integers "
                                    "(use // for the division)")
            d = int(d)
        e = convert(d)
        if not _dt.is_integer(e.dtype):
            raise TeccTypeError(f"{what}: dimension `{e}` has dtype {e.dtype}; sizes must be integers")
        if isinstance(e, E.IntImm) and e.value < 0:
            raise TeccTypeError(f"{what}: dimension {e.value} is negative")
        out.append(e)
    return tuple(out)


def placeholder(shape, dtype="float32", name="placeholder"):
    """An input tensor of ``shape`` and ``dtype``."""
    dtype = _dt.canonical(dtype)
    if dtype not in _dt.SUPPORTED:
        raise TeccTypeError(f"placeholder {name!r}: dtype {dtype!r} is not supported; use one of {_dt.SUPPORTED}")
    return PlaceholderOp(name, _shape(shape, f"placeholder {name!r}"), dtype).output(0)


def reduce_axis(dom, name="rv", thread_tag="", span=None):
    """A reduction axis over ``dom`` = ``(min, max_exclusive)`` or a Range."""
    rng = _to_range(dom, f"reduce_axis {name!r}")
    return E.IterVar(rng, E.Var(name, rng.extent.dtype), E.IterVarType.COMM_REDUCE, thread_tag)


def _to_range(dom, what):
    if isinstance(dom, E.Range):
        return dom
    if isinstance(dom, (tuple, list)) and len(dom) == 2:
        lo, hi = convert(dom[0]), convert(dom[1])
        return E.Range(lo, hi if E.is_const_int(lo, 0) else hi - lo)
    if isinstance(dom, (int, E.PrimExpr)):
        return E.Range(const(0, convert(dom).dtype), convert(dom))
    raise TeccTypeError(f"{what}: domain must be (min, max_exclusive) or a Range, got {dom!r}")


def thread_axis(dom=None, tag="", name="", span=None):
    """A GPU thread index axis, e.g. ``te.thread_axis("threadIdx.x")``.

    ``dom`` (optional) fixes its extent: ``te.thread_axis((0, 32), "threadIdx.x")``.
    """
    if isinstance(dom, str):
        tag, dom = dom, None
    if not tag:
        raise TeccTypeError("thread_axis needs a tag such as 'blockIdx.x', 'threadIdx.x' or 'vthread'")
    if not (keys.is_gpu_tag(tag) or tag in ("vthread", "cthread")):
        raise TeccTypeError(f"thread_axis tag {tag!r} is unknown; use blockIdx.x/y/z, threadIdx.x/y/z or vthread")
    rng = _to_range(dom, f"thread_axis {tag!r}") if dom is not None else None
    kind = E.IterVarType.THREAD_INDEX
    return E.IterVar(rng, E.Var(name or tag, "int32"), kind, tag)


def compute(shape, fcompute, name="compute", tag="", attrs=None):
    """Define ``name[i, j, ...] = fcompute(i, j, ...)`` over ``shape``.

    ``fcompute`` returns an expression, a reduction (``te.sum(..., axis=k)``) or a
    tuple/list of them for several outputs (then a tuple of tensors is returned).
    A reduction nested inside a larger expression (``te.sum(...) + b[i]``) is split
    into its own stage ``<name>.red`` automatically.
    """
    from .tag import resolve
    from .tensor_intrin import TensorIntrinCall

    tag = resolve(tag, name)  # the tag of an enclosing te.tag_scope
    shape = _shape(shape, f"compute {name!r}")
    names = _arg_names(fcompute, len(shape), name)
    axis = tuple(E.IterVar(E.Range(const(0, s.dtype), s), E.Var(n, s.dtype), E.IterVarType.DATA_PAR)
                 for n, s in zip(names, shape))
    body = fcompute(*[iv.var for iv in axis])
    if isinstance(body, TensorIntrinCall):
        return _tensor_compute(name, tag, shape, axis, body)
    if len(axis) != len(shape):
        raise TeccTypeError(
            f"compute {name!r}: the shape has {len(shape)} dimension(s) but fcompute takes {len(axis)} argument(s) "
            "(fewer arguments are for a tensor intrinsic computing the inner dimensions)")
    multi = isinstance(body, (tuple, list))
    bodies = list(body) if multi else [body]
    if not bodies:
        raise TeccTypeError(f"compute {name!r}: fcompute returned no values")
    out = []
    for b in bodies:
        if isinstance(b, Tensor):
            raise TeccTypeError(f"compute {name!r}: fcompute returned the tensor {b.name!r}; return an element, "
                                f"e.g. {b.name}[...]")
        try:
            out.append(convert(b))
        except TeccTypeError as err:
            raise TeccTypeError(f"compute {name!r}: {err}") from None
    bodies = out
    reduces = [isinstance(b, E.Reduce) for b in bodies]
    if any(reduces):
        if not all(reduces):
            raise TeccTypeError(f"compute {name!r}: either every output is a reduction or none is")
        first = bodies[0]
        for b in bodies[1:]:
            if b.combiner is not first.combiner or b.axis != first.axis:
                raise TeccTypeError(f"compute {name!r}: all outputs must come from one (tuple) reduction")
        for b in bodies:
            _check_no_nested_reduce(b.source + (b.condition,), name)
    else:
        bodies = [_split_nested_reductions(b, axis, name, i) for i, b in enumerate(bodies)]
    op = ComputeOp(name, tag, _convert_attrs(attrs, name), axis, bodies)
    tensors = tuple(op.output(i) for i in range(len(bodies)))
    return tensors if multi else tensors[0]


def _convert_attrs(attrs, name):
    """A compute's ``attrs`` as TVM stores them: numbers become IR constants (so
    ``op.attrs["n"].value`` reads as in TVM), sequences tuples; strings stay."""
    if attrs is None:
        return None
    if not isinstance(attrs, dict):
        raise TeccTypeError(f"compute {name!r}: attrs must be a dict, got {attrs!r}")

    from ..runtime.container import Array, Map

    def conv(v):
        if isinstance(v, (bool, int, float)):
            return convert(v)
        if isinstance(v, (list, tuple)):
            return Array(conv(x) for x in v)
        return v

    return Map((k, conv(v)) for k, v in attrs.items())


def _arg_names(fcompute, ndim, name):
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [f"i{k}" for k in range(ndim)]
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return [f"i{k}" for k in range(ndim)]
    if len(params) > ndim:
        raise TeccTypeError(
            f"compute {name!r}: the shape has {ndim} dimension(s) but fcompute takes {len(params)} argument(s)")
    return [p.name for p in params]


def _tensor_compute(name, tag, shape, axis, call):
    """The op of ``te.compute(shape, lambda i: intrin(...))``: the arguments' axes are
    loops, the remaining dimensions the intrinsic's output."""
    from .tensor import TensorComputeOp

    intrin = call.intrin
    out = intrin.op.output(0)
    inner = shape[len(axis):]
    if len(inner) > len(out.shape):
        raise TeccTypeError(f"compute {name!r}: the tensor intrinsic {intrin.name!r} makes a tensor of shape "
                            f"{out.shape}, so the compute's shape has at most {len(out.shape)} dimension(s) beyond "
                            f"the {len(axis)} argument(s) of fcompute; it has {len(shape)}")
    full = list(axis) + [E.IterVar(E.Range(const(0, s.dtype), s), E.Var(f"ax{k}", s.dtype), E.IterVarType.OPAQUE)
                         for k, s in enumerate(inner)]
    op = TensorComputeOp(name, tag, full, call.reduce_axis, len(axis), intrin, call.tensors, call.regions,
                         call.scalar_inputs)
    outs = tuple(op.output(i) for i in range(op.num_outputs))
    return outs[0] if len(outs) == 1 else outs


def _check_no_nested_reduce(exprs, name):
    def f(node):
        if isinstance(node, E.Reduce):
            raise TeccTypeError(f"compute {name!r}: a reduction cannot contain another reduction; "
                                "compute the inner one as its own tensor")
    for e in exprs:
        post_order_visit(e, f)


class _LiftReduce(IRMutator):
    """Replace each nested Reduce by a read of a new reduction tensor."""

    def __init__(self, axis, name):
        self.axis = axis
        self.name = name
        self.count = 0

    def visit_Reduce(self, r):
        suffix = "red" if self.count == 0 else f"red{self.count}"
        self.count += 1
        new_axis = tuple(E.IterVar(iv.dom, E.Var(iv.var.name, iv.var.dtype), iv.iter_type) for iv in self.axis)
        from ..tir.functor import substitute
        vmap = {old.var: new.var for old, new in zip(self.axis, new_axis)}
        body = substitute(r, vmap)
        op = ComputeOp(f"{self.name}.{suffix}", "", None, new_axis, [body])
        return op.output(0)[tuple(iv.var for iv in self.axis)]


def _split_nested_reductions(body, axis, name, index):
    found = []
    post_order_visit(body, lambda n: found.append(n) if isinstance(n, E.Reduce) else None)
    if not found:
        return body
    return _LiftReduce(axis, name if index == 0 else f"{name}.v{index}").visit(body)


def _tensor_list(x, what):
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    for t in items:
        if not isinstance(t, Tensor):
            raise TeccTypeError(f"{what} must be tensors, got {t!r}")
    return items


def scan(init, update, state_placeholder, inputs=None, name="scan", tag="", attrs=None):
    """A recurrence along the first dimension (TVM's ``te.scan``).

    ``state_placeholder`` (a ``te.placeholder``) stands for the result while it is
    being computed: ``update`` may read earlier rows of it (``s_state[t - 1, i]``).
    The first ``init.shape[0]`` rows of the result are ``init``; each row ``t``
    after them is ``update[t]``.  Lists of tensors give several outputs (a tuple
    of tensors is returned then).  ``inputs`` (optional) lists the tensors the
    update reads from outside the recurrence.

    Example: a cumulative sum over rows::

        s_state = te.placeholder((m, n))
        s_init = te.compute((1, n), lambda _, i: X[0, i])
        s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
        res = te.scan(s_init, s_update, s_state)
    """
    from ..tir.arith import Analyzer

    multi = isinstance(update, (list, tuple))
    init = _tensor_list(init, f"scan {name!r}: init")
    update = _tensor_list(update, f"scan {name!r}: update")
    state = _tensor_list(state_placeholder, f"scan {name!r}: state_placeholder")
    inputs = _tensor_list(inputs, f"scan {name!r}: inputs") if inputs is not None else []
    if not (len(init) == len(update) == len(state)):
        raise TeccTypeError(f"scan {name!r}: init ({len(init)}), update ({len(update)}) and state_placeholder "
                            f"({len(state)}) must have one tensor per output")
    ana = Analyzer()

    def same(a, b):
        return E.is_const_int(ana.simplify(convert(a) - convert(b)), 0)

    for i, (a, u, st) in enumerate(zip(init, update, state)):
        if not isinstance(st.op, PlaceholderOp):
            raise TeccTypeError(f"scan {name!r}: state_placeholder {st.name!r} must be a te.placeholder")
        if not (a.dtype == u.dtype == st.dtype):
            raise TeccTypeError(f"scan {name!r}: output {i}: init {a.name!r} ({a.dtype}), update {u.name!r} "
                                f"({u.dtype}) and state {st.name!r} ({st.dtype}) must have one dtype")
        if not (len(a.shape) == len(u.shape) == len(st.shape)) or not st.shape:
            raise TeccTypeError(f"scan {name!r}: output {i}: init {a.name!r}, update {u.name!r} and state "
                                f"{st.name!r} must have the same number of dimensions (at least one)")
        for k in range(len(st.shape)):
            if not same(u.shape[k], st.shape[k]):
                raise TeccTypeError(f"scan {name!r}: update {u.name!r} has shape {u.shape} but the state "
                                    f"{st.name!r} has shape {st.shape}; they must match")
            if k and not same(a.shape[k], st.shape[k]):
                raise TeccTypeError(f"scan {name!r}: init {a.name!r} has shape {a.shape}: beyond the first "
                                    f"dimension it must match the state {st.name!r} ({st.shape})")
        if not same(a.shape[0], init[0].shape[0]):
            raise TeccTypeError(f"scan {name!r}: every init must have the same number of rows")
    start = init[0].shape[0]
    extent = ana.simplify(update[0].shape[0] - start)
    axis = E.IterVar(E.Range(start, extent), E.Var(f"{name}.idx", start.dtype), E.IterVarType.ORDERED)
    op = ScanOp(name, tag, attrs, axis, init, update, state, inputs)
    outs = tuple(op.output(i) for i in range(op.num_outputs))
    return outs if multi else outs[0]


def extern(shape, inputs, fcompute, name="extern", dtype=None, in_buffers=None, out_buffers=None, tag="",
           attrs=None):
    """Tensors computed by a TIR statement (TVM's ``te.extern``).

    ``fcompute(ins, outs)`` receives one :class:`~tecc.tir.Buffer` per input and
    per output and returns the statement (or a call expression, e.g.
    ``tir.call_packed(...)``) that fills the outputs -- typically built with
    ``tir.ir_builder``.  ``shape`` is one output's shape or a list of shapes;
    ``dtype`` defaults to the inputs' dtype.  ``in_buffers``/``out_buffers`` give
    the buffers to hand to ``fcompute`` instead of the default compact ones.
    """
    from ..tir import stmt as S

    several = isinstance(shape, (list, tuple)) and bool(shape) and isinstance(shape[0], (list, tuple))
    shapes = [_shape(s, f"extern {name!r}") for s in (shape if several else [shape])]
    inputs = _tensor_list(inputs, f"extern {name!r}: inputs")
    if dtype is None:
        kinds = {t.dtype for t in inputs}
        if len(kinds) != 1:
            raise TeccTypeError(f"extern {name!r}: cannot infer the output dtype from inputs of dtypes "
                                f"{sorted(kinds) or 'none'}; pass dtype=")
        dtype = kinds.pop()
    dtypes = list(dtype) if isinstance(dtype, (list, tuple)) else [dtype] * len(shapes)
    dtypes = [_dt.canonical(d) for d in dtypes]
    if len(dtypes) != len(shapes):
        raise TeccTypeError(f"extern {name!r}: {len(shapes)} output shapes but {len(dtypes)} dtypes")

    def check(bufs, tensors_or_shapes, what):
        bufs = list(bufs) if isinstance(bufs, (list, tuple)) else [bufs]
        if len(bufs) != len(tensors_or_shapes):
            raise TeccTypeError(f"extern {name!r}: {len(bufs)} {what} buffers for {len(tensors_or_shapes)} {what}s")
        for b in bufs:
            if not isinstance(b, S.Buffer):
                raise TeccTypeError(f"extern {name!r}: {what} buffers must be tir.decl_buffer(...), got {b!r}")
        return bufs

    if in_buffers is None:
        in_bufs = [S.decl_buffer(t.shape, t.dtype, name=f"{t.op.name}") for t in inputs]
    else:
        in_bufs = check(in_buffers, inputs, "input")
    if out_buffers is None:
        out_bufs = [S.decl_buffer(s, d, name=name) for s, d in zip(shapes, dtypes)]
    else:
        out_bufs = check(out_buffers, shapes, "output")
    body = fcompute(in_bufs, out_bufs)
    if isinstance(body, E.PrimExpr):
        body = S.Evaluate(body)
    if not isinstance(body, S.Stmt):
        raise TeccTypeError(f"extern {name!r}: fcompute must return a TIR statement (e.g. ib.get()) or a call "
                            f"expression, got {body!r}")
    op = ExternOp(name, tag, attrs, inputs, in_bufs, out_bufs, body)
    outs = [op.output(i) for i in range(op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs
