"""Reverse-mode automatic differentiation of tensor expressions: :func:`gradient`.

The adjoint of a tensor is the sum, over the tensors that read it (its
*consumers*), of the consumer's adjoint pulled back through the consumer's
definition; the adjoint of the output is the given ``head``.  Adjoints are built
from the output back to the inputs, each tensor's once.

Pulling an adjoint ``H`` back through one consumer ``C[a] = f(..., X[g(a)], ...)``
never builds the Jacobian ``dC/dX`` (a tensor of ``C.shape + X.shape``): every read
``X[g]`` of the definition gives the sum ``dX[j] += sum over a with g(a) == j of
H[a] * df/dX[g]``, and :mod:`.autodiff_simplify` solves ``g(a) == j`` for ``a``
where it can.  The derivative ``df/dX[g]`` comes from the rules of
:mod:`.autodiff_rules`.  Reductions:

* ``sum``: the reduction axes are summed over like the consumer's own axes;
* ``max``/``min`` (and reducers of the same form): the gradient goes to the element
  that won -- an ``argmax`` tensor (``<C>.argmax``) records which one (the first
  in iteration order on ties);
* any other reducer (products, ``te.comm_reducer`` of your own, tuple reductions):
  the derivative of the combiner ``f(rest, s_k)`` with respect to its element
  ``s_k``, where ``rest`` (the tensor ``<C>.others``) reduces every other element.

Tensors made here are named ``<consumer>.<input>.grad`` (one consumer's part of an
adjoint), ``<input>.grad`` (a sum of several parts, or zeros), ``identity`` (the
default head) and the helpers above.  A real Jacobian is never made, so none is
named after one.
"""
from __future__ import annotations

from ..errors import TeccError, TeccTypeError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import op as _op
from ..tir.arith import Analyzer
from ..tir.arith.linear import Interner
from ..tir.functor import IRMutator, substitute, uses_var
from .autodiff_rules import NotDifferentiable, derivative, is_zero, mul
from .autodiff_simplify import SumTerm, solve
from .operation import compute
from ..tir.reduction import sum as _sum
from .tensor import ComputeOp, Tensor


def gradient(output, inputs, head=None):
    """Reverse-mode automatic differentiation (TVM's ``te.gradient``).

    Parameters
    ----------
    output : Tensor
        The tensor to differentiate, made by ``te.compute`` operations from the
        inputs.
    inputs : Tensor or list of Tensor
        The tensors to differentiate with respect to (placeholders or
        intermediate tensors).
    head : Tensor, optional
        The adjoint of ``output``: a tensor of shape ``prefix + output.shape``.
        The default is the identity of shape ``output.shape + output.shape``, so
        that the results are the Jacobians.  ``topi.full_like(output, 1.0)`` gives
        the gradients of ``sum(output)``.

    Returns
    -------
    list of Tensor
        One tensor per input, of shape ``prefix + input.shape``: the sum over the
        output's points of ``head`` times the output's derivative with respect to
        that input.  An input the output does not depend on gets zeros.

    Raises
    ------
    TeccTypeError
        If ``output``, ``inputs`` or ``head`` are not tensors, or ``head`` does not
        end in the output's shape.
    TeccError
        If an operation between an input and the output cannot be differentiated
        (``te.extern``, ``te.scan``, a tensor intrinsic) or uses an intrinsic with no
        derivative; the message names the tensor.

    Example
    -------
    .. code-block:: python

        x = te.placeholder((32, 3, 28, 28), name="x")
        w = te.placeholder((10, 3, 3, 3), name="w")
        y = topi.nn.conv2d(x, w, 1, 1, 1)
        dx, dw = te.gradient(y, [x, w], topi.full_like(y, 1.0))
    """
    if not isinstance(output, Tensor):
        raise TeccTypeError(f"te.gradient: output must be a tensor, got {output!r}")
    items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for x in items:
        if not isinstance(x, Tensor):
            raise TeccTypeError(f"te.gradient: inputs must be tensors, got {x!r}")
    if head is None:
        head = _identity(output)
    else:
        _check_head(head, output)
    return _Gradient(output, head).run(items)


def _check_head(head, output):
    if not isinstance(head, Tensor):
        raise TeccTypeError(f"te.gradient: head must be a tensor (the adjoint of {output.name!r}), got {head!r}")
    hs, os_ = head.shape, output.shape
    ana = Analyzer()
    ok = len(hs) >= len(os_) and all(
        ana.can_prove_equal(a, b) for a, b in zip(hs[len(hs) - len(os_):], os_))
    if not ok:
        raise TeccTypeError(
            f"te.gradient: head {head.name!r} has shape {tuple(hs)}, which must end in the shape "
            f"{tuple(os_)} of the output {output.name!r} (shape prefix + output.shape)")


def _identity(output):
    """``identity[p, a] = (p == a)``: the head that makes gradients Jacobians."""
    n = output.ndim

    def body(*ax):
        return _op.cast(output.dtype, _op.all(*[_op.eq(ax[d], ax[n + d]) for d in range(n)]))

    return compute(tuple(output.shape) * 2, body, name="identity")


# ---------------------------------------------------------------------------------
# the graph walk
# ---------------------------------------------------------------------------------

class _Gradient:
    def __init__(self, output, head):
        self.output = output
        self.head = head
        self.prefix = tuple(head.shape[:head.ndim - output.ndim])
        self.adjoints = {output: head}
        self.consumers = {}     # Tensor -> [Tensor reading it]
        self.order = []         # every tensor the output depends on, producers first
        self.helpers = {}       # (consumer, kind) -> helper tensors (argmax, others...)
        self.names = {}
        self._walk()

    def _walk(self):
        # depth-first, each tensor placed after everything it reads
        expanded, placed = set(), set()
        stack = [(self.output, False)]
        while stack:
            t, done = stack.pop()
            if done:
                if t not in placed:
                    placed.add(t)
                    self.order.append(t)
                continue
            if t in expanded:
                continue
            expanded.add(t)
            stack.append((t, True))
            for u in t.op.input_tensors:
                readers = self.consumers.setdefault(u, [])
                if t not in readers:
                    readers.append(t)
                if u not in expanded:
                    stack.append((u, False))

    def run(self, inputs):
        return [self.adjoint(x) for x in inputs]

    def adjoint(self, x):
        if x in self.adjoints:
            return self.adjoints[x]
        if x not in self.consumers:
            # the output does not depend on x
            return self._zeros(x)
        needed = {x}
        stack = [x]
        while stack:
            t = stack.pop()
            for c in self.consumers.get(t, ()):
                if c not in needed:
                    needed.add(c)
                    stack.append(c)
        for t in reversed(self.order):
            if t in needed and t not in self.adjoints:
                self.adjoints[t] = self._accumulate(t)
        return self.adjoints[x]

    def _outer(self, x):
        """Variables and ranges of an adjoint of ``x``: the head's prefix, then x's axes."""
        shape = self.prefix + tuple(x.shape)
        names = [f"p{d}" for d in range(len(self.prefix))] + [f"ax{d}" for d in range(x.ndim)]
        vars_ = [E.Var(n, s.dtype) for n, s in zip(names, shape)]
        ranges = {v: E.Range(_op.const(0, s.dtype), s) for v, s in zip(vars_, shape)}
        return shape, vars_, ranges

    def _zeros(self, x):
        shape = self.prefix + tuple(x.shape)
        dtype = self.head.dtype
        return compute(shape, lambda *ax: _op.const(0, dtype), name=f"{x.op.name}.grad")

    def _accumulate(self, x):
        shape, outer, ranges = self._outer(x)
        pvars, jvars = outer[:len(self.prefix)], outer[len(self.prefix):]
        parts = []
        for c in self.consumers[x]:
            for term in self._terms(c, x, self.adjoints[c], pvars, jvars):
                solved = solve(term, ranges)
                if solved is not None:
                    parts.append((c, solved))
        return self._materialize(x, parts, shape, outer)

    # -----------------------------------------------------------------------------
    # building the adjoint tensors
    # -----------------------------------------------------------------------------
    def _name(self, base):
        n = self.names.get(base, 0)
        self.names[base] = n + 1
        return base if n == 0 else f"{base}.{n}"

    def _materialize(self, x, parts, shape, outer):
        exprs, tensors = [], []
        for c, solved in parts:
            if not solved.axes:
                value = solved.value
                cond = solved.outer_cond
                if not (isinstance(cond, E.IntImm) and cond.value):
                    value = _op.if_then_else(cond, value, _op.const(0, value.dtype))
                exprs.append(value)
            else:
                tensors.append(self._reduction(solved, shape, outer, self._name(f"{c.op.name}.{x.op.name}.grad")))
        if not exprs and not tensors:
            return self._zeros(x)
        if not exprs and len(tensors) == 1:
            return tensors[0]

        def body(*ax):
            vm = dict(zip(outer, ax))
            total = None
            for e in exprs:
                e = substitute(e, vm)
                total = e if total is None else _op.add(total, e)
            for t in tensors:
                total = t[ax] if total is None else _op.add(total, t[ax])
            return total

        return compute(shape, body, name=self._name(f"{x.op.name}.grad"))

    @staticmethod
    def _reduction(solved, shape, outer, name):
        def body(*ax):
            vm = dict(zip(outer, ax))
            outer_cond = substitute(solved.outer_cond, vm)
            axes = []
            for n, (v, lo, ext) in enumerate(solved.axes):
                rv = E.Var(v.name, v.dtype)
                ext = substitute(ext, vm)
                if n == 0 and not (isinstance(outer_cond, E.IntImm) and outer_cond.value):
                    # where the outer condition fails, the reduction runs no iteration
                    ext = _op.select(outer_cond, ext, _op.const(0, ext.dtype))
                axes.append(E.IterVar(E.Range(substitute(lo, vm), ext), rv, E.IterVarType.COMM_REDUCE))
                vm[v] = rv
            cond = solved.inner_cond
            value = substitute(solved.value, vm)
            if isinstance(cond, E.IntImm) and cond.value:
                return _sum(value, axis=axes)
            return _sum(value, axis=axes, where=substitute(cond, vm))

        return compute(shape, body, name=name)

    # -----------------------------------------------------------------------------
    # one consumer's terms
    # -----------------------------------------------------------------------------
    def _terms(self, c, x, head, pvars, jvars):
        op = c.op
        if not isinstance(op, ComputeOp):
            what = _NOT_DIFFERENTIABLE.get(type(op).__name__, f"a {type(op).__name__}")
            raise TeccError(
                f"te.gradient: {c.name!r} is computed by {what}, which cannot be differentiated (only te.compute "
                f"can); it lies between {x.name!r} and the output {self.output.name!r}. Differentiate with "
                f"respect to tensors after it, or write it with te.compute")
        body = op.body[c.value_index]
        if not _dt.is_float(body.dtype):
            return []
        try:
            return self._consumer_terms(c, x, head, pvars, jvars)
        except NotDifferentiable as err:
            raise NotDifferentiable(
                f"te.gradient: cannot differentiate {c.name!r} with respect to {x.name!r}: {err}") from None

    def _consumer_terms(self, c, x, head, pvars, jvars):
        op = c.op
        body = op.body[c.value_index]
        amap = {iv.var: E.Var(iv.var.name, iv.var.dtype) for iv in op.axis}
        asv = [(amap[iv.var], iv.dom.min, iv.dom.extent) for iv in op.axis]
        a = tuple(amap[iv.var] for iv in op.axis)
        h = head[tuple(pvars) + a]
        if not isinstance(body, E.Reduce):
            return _read_terms(substitute(body, amap), x, h, asv, [], jvars)

        red = body
        kmap = {iv.var: E.Var(iv.var.name, iv.var.dtype) for iv in red.axis}
        full = {**amap, **kmap}
        ksv = [(kmap[iv.var], substitute(iv.dom.min, amap), substitute(iv.dom.extent, amap)) for iv in red.axis]
        k = [kmap[iv.var] for iv in red.axis]
        src = [substitute(s, full) for s in red.source]
        cond = substitute(red.condition, full)
        init = [substitute(i, amap) for i in red.init]
        kind = _reducer_kind(red.combiner)
        if kind == "sum":
            terms = _read_terms(src[0], x, h, asv + ksv, [cond], jvars)
            if init:
                terms += _read_terms(init[0], x, h, asv, [], jvars)
            return terms
        if kind in ("max", "min"):
            idx = self._arg_extreme(c, red, kind)
            pick = _op.eq(_linear_index(k, [(lo, ext) for _, lo, ext in ksv]), idx[a])
            terms = _read_terms(src[0], x, h, asv + ksv, [cond, pick], jvars)
            if init:
                none = _op.eq(idx[a], _op.const(-1, idx.dtype))
                terms += _read_terms(init[0], x, h, asv, [none], jvars)
            return terms
        # any other reducer: d f(rest, s_k) / d s_k, rest = the reduction of the others
        comb = red.combiner
        for _, lo, ext in ksv:
            if uses_var(lo, lambda v: v in amap.values()) or uses_var(ext, lambda v: v in amap.values()):
                raise NotDifferentiable(
                    f"its reduction (combiner {comb.result}) has an axis whose range depends on an axis of "
                    f"{c.name!r}; only sum, max and min reductions support that")
        others = self._others(c, red)
        rel = tuple(_op.sub(kv, lo) for kv, lo, _ in ksv)
        vmap = {comb.lhs[m]: others[m][a + rel] for m in range(len(src))}
        vmap.update({comb.rhs[m]: src[m] for m in range(len(src))})
        f = substitute(comb.result[red.value_index], vmap)
        terms = _read_terms(f, x, h, asv + ksv, [cond], jvars)
        if init and any(_reads(i, x) for i in init):
            rest = self._plain(c, red)
            vmap = {comb.lhs[m]: init[m] for m in range(len(src))}
            vmap.update({comb.rhs[m]: rest[m][a] for m in range(len(src))})
            f = substitute(comb.result[red.value_index], vmap)
            terms += _read_terms(f, x, h, asv, [], jvars)
        return terms

    # -----------------------------------------------------------------------------
    # helper tensors of reductions
    # -----------------------------------------------------------------------------
    def _arg_extreme(self, c, red, kind):
        """``<C>.arg<kind>[a]``: the linear index of the reduction element that wins
        ``C[a]`` (-1 where the initial value does), the first on ties."""
        key = (c.op, "arg")
        if key in self.helpers:
            return self.helpers[key]
        op = c.op

        def body(*ax):
            amap = {iv.var: v for iv, v in zip(op.axis, ax)}
            axes, kmap = _fresh_reduce_axes(red.axis, amap)
            full = {**amap, **kmap}
            k = [iv.var for iv in axes]
            lin = _linear_index(k, [(iv.dom.min, iv.dom.extent) for iv in axes])
            s = substitute(red.source[0], full)
            it, dt = lin.dtype, s.dtype
            x0, x1, y0, y1 = E.Var("i0", it), E.Var("v0", dt), E.Var("i1", it), E.Var("v1", dt)
            better = _op.gt(y1, x1) if kind == "max" else _op.lt(y1, x1)
            take = _op.logical_or(better, _op.logical_and(_op.eq(y1, x1), _op.lt(y0, x0)))
            comb = E.CommReducer((x0, x1), (y0, y1), (_op.select(take, y0, x0), _op.select(take, y1, x1)),
                                 (_op.const(-1, it), red.combiner.identity_element[0]))
            init = (_op.const(-1, it), substitute(red.init[0], amap)) if red.init else ()
            cond = substitute(red.condition, full)
            return tuple(E.Reduce(comb, (lin, s), tuple(axes), cond, i, init) for i in range(2))

        idx, _ = compute(c.shape, body, name=f"{op.name}.arg{kind}")
        self.helpers[key] = idx
        return idx

    def _others(self, c, red):
        """``<C>.others[a, k]``: the reduction of every element of ``C[a]`` but the
        one at ``k`` (the initial value included); one tensor per reduction value."""
        key = (c.op, "others")
        if key in self.helpers:
            return self.helpers[key]
        op = c.op
        na = len(op.axis)
        shape = tuple(c.shape) + tuple(iv.dom.extent for iv in red.axis)

        def body(*ax):
            amap = {iv.var: v for iv, v in zip(op.axis, ax[:na])}
            axes, kmap = _fresh_reduce_axes(red.axis, amap)
            full = {**amap, **kmap}
            differs = _op.any(*[_op.ne(iv.var, _op.add(kx, iv.dom.min)) for iv, kx in zip(axes, ax[na:])])
            cond = _op.logical_and(substitute(red.condition, full), differs)
            src = tuple(substitute(s, full) for s in red.source)
            init = tuple(substitute(i, amap) for i in red.init)
            return tuple(E.Reduce(red.combiner, src, tuple(axes), cond, i, init) for i in range(len(src)))

        out = compute(shape, body, name=f"{op.name}.others")
        self.helpers[key] = out
        return out

    def _plain(self, c, red):
        """``<C>.noinit[a]``: the reduction without its initial value."""
        key = (c.op, "plain")
        if key in self.helpers:
            return self.helpers[key]
        op = c.op

        def body(*ax):
            amap = {iv.var: v for iv, v in zip(op.axis, ax)}
            axes, kmap = _fresh_reduce_axes(red.axis, amap)
            full = {**amap, **kmap}
            src = tuple(substitute(s, full) for s in red.source)
            cond = substitute(red.condition, full)
            return tuple(E.Reduce(red.combiner, src, tuple(axes), cond, i) for i in range(len(src)))

        out = compute(c.shape, body, name=f"{op.name}.noinit")
        self.helpers[key] = out
        return out


def _fresh_reduce_axes(axis, amap):
    axes, kmap = [], {}
    for iv in axis:
        v = E.Var(iv.var.name, iv.var.dtype)
        axes.append(E.IterVar(E.Range(substitute(iv.dom.min, amap), substitute(iv.dom.extent, amap)), v,
                              E.IterVarType.COMM_REDUCE))
        kmap[iv.var] = v
    return axes, kmap


def _linear_index(k, ranges):
    """Row-major position of the point ``k`` in the box ``ranges`` (``[(min, extent)]``)."""
    lin = None
    for kv, (lo, ext) in zip(k, ranges):
        off = _op.sub(kv, lo) if not E.is_const_int(lo, 0) else kv
        lin = off if lin is None else _op.add(_op.mul(lin, ext), off)
    return lin if lin is not None else _op.const(0, "int32")


#: how errors name the operations te.gradient cannot differentiate through
_NOT_DIFFERENTIABLE = {
    "ExternOp": "te.extern", "ScanOp": "te.scan", "TensorComputeOp": "a tensor intrinsic (tensorize)",
    "HybridOp": "te.hybrid",
}

#: reducers recognized by the form of their combiner ``x (op) y``
_REDUCER_KINDS = {E.Add: "sum", E.Max: "max", E.Min: "min"}


def _reducer_kind(comb):
    """"sum", "max", "min" or "other" from the combiner's form."""
    if len(comb.lhs) != 1:
        return "other"
    x, y, r = comb.lhs[0], comb.rhs[0], comb.result[0]
    kind = _REDUCER_KINDS.get(type(r))
    if kind is not None and ((r.a is x and r.b is y) or (r.a is y and r.b is x)):
        return kind
    return "other"


# ---------------------------------------------------------------------------------
# reads of the tensor being differentiated
# ---------------------------------------------------------------------------------

class _Reads(IRMutator):
    """Replace every read of ``x`` by a variable, one per distinct index tuple."""

    def __init__(self, x):
        self.x = x
        self.keys = Interner()
        self.groups = {}    # key -> (Var, indices)

    def visit_ProducerLoad(self, e):
        idx = tuple(self.visit(i) for i in e.indices)
        if e.producer != self.x:
            if all(a is b for a, b in zip(idx, e.indices)):
                return e
            return E.ProducerLoad(e.producer, idx)
        key = tuple(self.keys.key(i) for i in idx)
        hit = self.groups.get(key)
        if hit is None:
            hit = self.groups[key] = (E.Var(f"{self.x.op.name}.elem{len(self.groups)}", self.x.dtype), idx)
        return hit[0]


def _reads(expr, x) -> bool:
    r = _Reads(x)
    r.visit(expr)
    return bool(r.groups)


def _read_terms(expr, x, head_value, svars, conds, jvars):
    """One :class:`SumTerm` per distinct read ``x[g]`` in ``expr``: ``head_value *
    d expr / d x[g]`` where ``g == j``."""
    if not _dt.is_float(x.dtype):
        return []
    reads = _Reads(x)
    replaced = reads.visit(expr)
    groups = list(reads.groups.values())
    back = {z: E.ProducerLoad(x, idx) for z, idx in groups}
    zs = set(back)
    out = []
    conds = [c for c in conds if not (isinstance(c, E.IntImm) and c.value)]
    for z, idx in groups:
        d = derivative(replaced, z)
        if is_zero(d):
            continue
        for _ in range(len(groups)):   # reads nested in indices of reads
            if not uses_var(d, lambda v: v in zs):
                break
            d = substitute(d, back)
        idx = tuple(_restore(i, back, zs) for i in idx)
        out.append(SumTerm(mul(head_value, d), list(svars), list(conds), list(zip(idx, jvars))))
    return out


def _restore(e, back, zs):
    for _ in range(len(back)):
        if not uses_var(e, lambda v: v in zs):
            break
        e = substitute(e, back)
    return e
