"""Lowering a schedule to a TIR PrimFunc.

Four steps, each a function below:

1. ``_inline``: substitute every ``compute_inline`` stage into its consumers.
2. ``_infer_bounds``: consumers before producers, find the range of every iteration
   variable.  A stage attached with ``compute_at(P, iv)`` must produce the region of
   its output that its consumers read during *one* iteration of ``iv``: the index
   expressions of those reads are evaluated as intervals in which the loop variables
   enclosing the attach point stay fixed (symbolic) and every other loop variable is
   relaxed to its whole range.
3. ``_make_stage``: build each stage's loop nest from its leaf iteration variables
   (split/fuse relations give the root index values), with guards where a split
   does not divide, the reduction's init placed before the first reduction loop, and
   attached stages (with their buffers) inside the loop they are attached to.
4. Assemble the PrimFunc: arguments are buffers, then symbolic shape variables.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.arith import Analyzer, IntervalSet, eval_set
from ..tir import dtype as _dt
from ..tir import keys
from ..tir.functor import IRMutator, collect_vars, post_order_visit, substitute
from ..tir.op import const, likely
from ..tir.transform.lower_thread_allreduce import store_values, thread_allreduce
from .schedule import Fuse, Schedule, Split, _is_reduce
from .tensor import ComputeOp, PlaceholderOp, Tensor, read_tensors

#: memory scopes from widest to narrowest sharing
_SCOPE_RANK = {"global": 0, "shared": 1, "warp": 2, "local": 3}


def _thread_rank(tag):
    """0 for block indices, 1 for thread (and virtual thread) indices."""
    return 0 if tag.startswith("blockIdx") else 1


_KIND = {None: S.ForKind.SERIAL, "vectorize": S.ForKind.VECTORIZED, "parallel": S.ForKind.PARALLEL,
         "unroll": S.ForKind.UNROLLED}


class _Inliner(IRMutator):
    """Replace reads of inlined tensors by their (already inlined) definitions."""

    def __init__(self, bodies):
        self.bodies = bodies  # op -> tuple of exprs, for inlined ops only

    def visit_ProducerLoad(self, e):
        idx = tuple(self.visit(i) for i in e.indices)
        op = e.producer.op
        body = self.bodies.get(op)
        if body is None:
            if all(a is b for a, b in zip(idx, e.indices)):
                return e
            return E.ProducerLoad(e.producer, idx)
        return substitute(body[e.producer.value_index], {iv.var: i for iv, i in zip(op.axis, idx)})

    def visit_Reduce(self, r):
        return self.generic_visit(r)


class _StageInfo:
    def __init__(self, stage, body):
        self.stage = stage
        self.op = stage.op
        self.body = body                # effective body (inlined tensors substituted)
        self.reads = read_tensors(body)
        self.dom = {}                   # IterVar -> Range (root and derived)
        self.region_min = ()            # per output dim: min index this stage's buffer holds
        self.buffers = ()               # one per output
        self.root_value = {}            # root Var -> index expression over leaf vars
        self.children = {}              # leaf IterVar -> [attached _StageInfo]
        self.consumers = []             # _StageInfo reading this stage


class Lowerer:
    def __init__(self, sch: Schedule, args, name):
        self.sch = sch
        self.name = name
        self.args = list(args)
        self.ana = Analyzer()
        self.loop_extent = {}   # leaf Var -> extent expression
        self.info = {}          # Stage -> _StageInfo

    # ------------------------------------------------------------------ driver
    def run(self) -> S.PrimFunc:
        infos = self._inline()
        arg_bufs, params, buffer_map = self._bind_args(infos)
        shape_vars = []
        for t in self.args:
            for d in t.shape:
                for v in sorted(collect_vars(d), key=lambda v: v.name):
                    if v not in shape_vars:
                        shape_vars.append(v)
        for info in infos:
            _check_body(info.op, info.body, set(shape_vars))
        self._check_attachments(infos)
        for info in reversed(infos):
            self._infer_bounds(info)
        for info in infos:
            self._make_buffers(info, arg_bufs)
        body = self._make_root(infos)
        params = params + shape_vars
        return S.PrimFunc(tuple(params), body, buffer_map, {keys.GLOBAL_SYMBOL: self.name})

    # --------------------------------------------------------------- inlining
    def _inline(self):
        bodies = {}
        inliner = _Inliner(bodies)
        order = []
        for st in self.sch.stages:
            if not isinstance(st.op, ComputeOp):
                continue
            body = tuple(inliner.visit(b) for b in st.op.body)
            if st.attach_type == "inline":
                bodies[st.op] = body
            else:
                order.append((st, body))
        # keep only stages that an output needs
        live = {}
        by_op = {st.op: (st, body) for st, body in order}
        stack = [self.sch[o] for o in self.sch.outputs]
        for st in stack:
            if st.attach_type == "inline":
                raise LoweringError(f"stage {st.name!r} is an output and cannot be inlined")
        while stack:
            st = stack.pop()
            if st in live:
                continue
            _, body = by_op[st.op]
            info = live[st] = _StageInfo(st, body)
            for t in info.reads:
                pst = self.sch.stage_map.get(t.op)
                if pst is not None and isinstance(pst.op, ComputeOp) and pst not in live:
                    stack.append(pst)
        infos = [live[st] for st, _ in order if st in live]
        for info in infos:
            self.info[info.stage] = info
        for info in infos:
            for t in info.reads:
                pst = self.sch.stage_map.get(t.op)
                if pst in self.info:
                    self.info[pst].consumers.append(info)
        return infos

    # -------------------------------------------------------------- arguments
    def _bind_args(self, infos):
        arg_bufs = {}      # current op -> tuple of Buffers (by value index)
        params, buffer_map = [], {}
        for t in self.args:
            if not isinstance(t, Tensor):
                raise LoweringError(f"lower/build arguments must be tensors, got {t!r}")
            st = self.sch.stage_map.get(t.op)
            if st is None:
                raise LoweringError(f"argument {t.name!r} is not part of this schedule")
            cur = st.op.output(t.value_index)
            if cur in [b for b in arg_bufs.get(cur.op, {})]:
                raise LoweringError(f"argument {t.name!r} is given twice")
            if isinstance(st.op, ComputeOp) and st.attach_type == "inline":
                raise LoweringError(f"argument {t.name!r} is inlined (compute_inline), so it has no buffer to "
                                    "pass; remove it from the arguments or do not inline it")
            if isinstance(st.op, ComputeOp) and st.attach_type == "scope":
                raise LoweringError(f"argument {t.name!r} is attached with compute_at; a function argument "
                                    "is written whole, so compute it at root")
            data = E.Var(t.name, "handle")
            buf = S.Buffer(t.name, t.dtype, tuple(t.shape), data, "global")
            arg_bufs.setdefault(cur.op, {})[cur] = buf
            params.append(data)
            buffer_map[data] = buf
        for info in infos:
            if info.stage.is_output and info.op not in arg_bufs:
                raise LoweringError(f"output {info.op.name!r} is not in the argument list; add it so the "
                                    "result can be returned")
            for t in info.reads:
                if isinstance(t.op, PlaceholderOp) and t not in arg_bufs.get(t.op, {}):
                    raise LoweringError(f"tensor {t.name!r} is read by stage {info.op.name!r} but is not in the "
                                        "argument list; pass it to lower/build")
        self.arg_bufs = arg_bufs
        return arg_bufs, params, buffer_map

    # ------------------------------------------------------------ attachment
    def _check_attachments(self, infos):
        for st in self.sch.stages:
            if getattr(st, "double_buffer_", False) and st.attach_type != "scope":
                where = "inlined" if st.attach_type == "inline" else "computed at root"
                raise LoweringError(
                    f"stage {st.name!r} is double-buffered (double_buffer) but {where}; double_buffer "
                    "applies to a stage computed (compute_at) directly inside a serial loop, e.g. "
                    "s[AA].compute_at(s[CC], ko) for the outer reduction loop ko of a tiled GEMM")
        for info in infos:
            st = info.stage
            if st.attach_type != "scope":
                continue
            parent = st.attach_stage
            if parent not in self.info:
                why = "inlined" if parent.attach_type == "inline" else "not needed by any output"
                raise LoweringError(f"stage {st.name!r} is attached (compute_at) to stage {parent.name!r}, "
                                    f"which is {why}")
            if st.attach_ivar not in parent.leaf_iter_vars:
                raise LoweringError(
                    f"stage {st.name!r} is attached to axis {st.attach_ivar.var.name!r} of stage {parent.name!r}, "
                    "but a later split/fuse replaced that axis; call compute_at with the new axis")
            self.info[parent].children.setdefault(st.attach_ivar, []).append(info)
            # every consumer must run inside the attach loop
            for c in info.consumers:
                if not self._inside(c.stage, parent, st.attach_ivar):
                    raise LoweringError(
                        f"stage {st.name!r} is computed inside loop {st.attach_ivar.var.name!r} of "
                        f"{parent.name!r}, but stage {c.op.name!r} also reads it outside that loop; "
                        f"compute_at a loop that encloses all its consumers, or compute it at root")

    def _inside(self, stage, parent, ivar):
        """Does ``stage`` run within loop ``ivar`` of ``parent``?"""
        pos = parent.leaf_iter_vars.index(ivar)
        cur = stage
        while True:
            if cur is parent:
                return True
            if cur.attach_type != "scope":
                return False
            if cur.attach_stage is parent:
                return parent.leaf_iter_vars.index(cur.attach_ivar) >= pos
            cur = cur.attach_stage

    def _scope(self, stage):
        """The stage's memory scope; without one set, a stage attached under a loop
        bound to a thread index is ``local`` and one under a block index ``shared``
        (as in TVM), else ``global``."""
        if stage.scope:
            return stage.scope
        rank = -1
        cur = stage
        while cur.attach_type == "scope":
            parent = cur.attach_stage
            pos = parent.leaf_iter_vars.index(cur.attach_ivar)
            for iv in parent.leaf_iter_vars[:pos + 1]:
                attr = parent.iter_var_attrs.get(iv)
                if attr is not None and attr.bind_thread is not None:
                    rank = max(rank, _thread_rank(attr.bind_thread.thread_tag))
            cur = parent
        return {-1: "global", 0: "shared", 1: "local"}[rank]

    def _fixed_vars(self, stage):
        """Loop variables that enclose the attach point of ``stage`` and stay fixed
        for one instance of its buffer.

        A loop bound to a GPU index is relaxed (its whole range is covered) when the
        stage's memory is shared by those threads: a ``shared`` buffer serves every
        thread (and virtual thread) of a block, a ``global`` one every block too.
        """
        rank = _SCOPE_RANK[self._scope(stage)]
        fixed = set()
        cur = stage
        while cur.attach_type == "scope":
            parent = cur.attach_stage
            pos = parent.leaf_iter_vars.index(cur.attach_ivar)
            for iv in parent.leaf_iter_vars[:pos + 1]:
                attr = parent.iter_var_attrs.get(iv)
                tag = attr.bind_thread.thread_tag if attr is not None and attr.bind_thread is not None else ""
                if tag and rank <= _thread_rank(tag):
                    continue
                fixed.add(iv.var)
            cur = parent
        return fixed

    # -------------------------------------------------------- bound inference
    def _relax(self, e, fixed, upper):
        """Bound ``e`` over every loop variable not in ``fixed``; ``upper`` picks the side."""
        for _ in range(16):
            free = [v for v in collect_vars(e) if v in self.loop_extent and v not in fixed]
            if not free:
                return self.ana.simplify(e)
            dom = {v: IntervalSet(const(0, v.dtype), self.loop_extent[v] - 1) for v in free}
            s = eval_set(e, dom)
            e = s.max_value if upper else s.min_value
            if not isinstance(e, E.PrimExpr):
                return None
        return None

    def _infer_bounds(self, info):
        st, op = info.stage, info.op
        ndim = len(op.axis)
        if st.attach_type != "scope":
            for iv in op.axis:
                info.dom[iv] = iv.dom
            info.region_min = tuple(const(0, iv.var.dtype) for iv in op.axis)
        else:
            fixed = self._fixed_vars(st)
            lo = [None] * ndim
            hi = [None] * ndim
            outs = {op.output(i) for i in range(op.num_outputs)}
            for c in info.consumers:
                for idx in _accesses(c.body, outs):
                    for d, e in enumerate(idx):
                        e = substitute(e, c.root_value)
                        s = eval_set(e, {})
                        a = self._relax(s.min_value, fixed, upper=False)
                        b = self._relax(s.max_value, fixed, upper=True)
                        if a is None or b is None:
                            raise LoweringError(
                                f"cannot bound the region of {op.name!r} that {c.op.name!r} reads in dimension {d} "
                                f"(index `{e}`); compute {op.name!r} at root instead")
                        lo[d] = a if lo[d] is None else self.ana.simplify(E.Min(lo[d], a))
                        hi[d] = b if hi[d] is None else self.ana.simplify(E.Max(hi[d], b))
            for d, iv in enumerate(op.axis):
                if lo[d] is None:  # not read at all: the whole axis
                    lo[d], hi[d] = const(0, iv.var.dtype), iv.dom.extent - 1
                ext = self.ana.simplify(hi[d] - lo[d] + 1)
                info.dom[iv] = E.Range(lo[d], ext)
            info.region_min = tuple(lo)
        for iv in op.reduce_axis:
            info.dom[iv] = iv.dom
        self._pass_down(info)
        self._pass_up(info)

    def _pass_down(self, info):
        st, dom = info.stage, info.dom
        for rel in st.relations:
            if isinstance(rel, Split):
                ext = dom[rel.parent].extent
                if rel.factor is not None:
                    f = const(rel.factor, ext.dtype)
                    dom[rel.outer] = E.Range(const(0, ext.dtype), self.ana.simplify((ext + f - 1) // f))
                    dom[rel.inner] = E.Range(const(0, ext.dtype), f)
                else:
                    n = const(rel.nparts, ext.dtype)
                    dom[rel.outer] = E.Range(const(0, ext.dtype), n)
                    dom[rel.inner] = E.Range(const(0, ext.dtype), self.ana.simplify((ext + n - 1) // n))
            elif isinstance(rel, Fuse):
                ext = self.ana.simplify(dom[rel.outer].extent * dom[rel.inner].extent)
                dom[rel.fused] = E.Range(const(0, ext.dtype), ext)
        for iv in st.leaf_iter_vars:
            attr = st.iter_var_attrs.get(iv)
            ext = dom[iv].extent
            if attr is not None and attr.bind_thread is not None and attr.bind_thread.dom is not None:
                tdom = attr.bind_thread.dom.extent
                if not self.ana.can_prove(E.LE(ext, tdom)):
                    raise LoweringError(
                        f"stage {st.name!r}: axis {iv.var.name!r} has extent {ext} but is bound to "
                        f"{attr.bind_thread.thread_tag} of extent {tdom}")
            self.loop_extent[iv.var] = ext
            self.ana.bind(iv.var, E.Range(const(0, ext.dtype), ext))

    def _pass_up(self, info):
        st, dom = info.stage, info.dom
        off = {iv: iv.var for iv in st.leaf_iter_vars}
        for rel in reversed(st.relations):
            if isinstance(rel, Split):
                if rel.outer in off and rel.inner in off:
                    off[rel.parent] = off[rel.outer] * dom[rel.inner].extent + off[rel.inner]
            elif isinstance(rel, Fuse):
                if rel.fused in off:
                    ext = dom[rel.inner].extent
                    off[rel.outer] = off[rel.fused] // ext
                    off[rel.inner] = off[rel.fused] % ext
        roots = list(info.op.axis) + list(info.op.reduce_axis)
        info.offset = {}
        for iv in roots:
            o = self.ana.simplify(off[iv])
            info.offset[iv] = o
            info.root_value[iv.var] = self.ana.simplify(dom[iv].min + o)

    # ----------------------------------------------------------------- buffers
    def _make_buffers(self, info, arg_bufs):
        op, st = info.op, info.stage
        if op in arg_bufs:
            info.buffers = tuple(arg_bufs[op][op.output(i)] if op.output(i) in arg_bufs[op] else None
                                 for i in range(op.num_outputs))
            if any(b is None for b in info.buffers):
                missing = [op.output(i).name for i, b in enumerate(info.buffers) if b is None]
                raise LoweringError(f"outputs {missing} of {op.name!r} must be passed as arguments too")
            return
        shape = []
        for d, iv in enumerate(op.axis):
            ext = info.dom[iv].extent
            if st.attach_type == "scope":
                bound = self._relax(ext, set(), upper=True)
                if bound is None or any(v in self.loop_extent for v in collect_vars(bound)):
                    raise LoweringError(f"cannot find a size for dimension {d} of {op.name!r} (extent `{ext}`)")
                ext = bound
            shape.append(ext)
        strides = ()
        if st.storage_align_:
            strides = _aligned_strides(shape, st.storage_align_, op.name)
        scope = self._scope(st)
        bufs = []
        for i in range(op.num_outputs):
            name = op.name if op.num_outputs == 1 else f"{op.name}.v{i}"
            bufs.append(S.Buffer(name, op.output_dtype(i), tuple(shape), E.Var(name, "handle"), scope, strides))
        info.buffers = tuple(bufs)

    # ------------------------------------------------------------ statements
    def _load_rewriter(self):
        lowerer = self

        class _ToBuffer(IRMutator):
            def visit_ProducerLoad(self, e):
                idx = tuple(self.visit(i) for i in e.indices)
                t = e.producer
                pst = lowerer.sch.stage_map.get(t.op)
                if isinstance(t.op, PlaceholderOp):
                    buf = lowerer.arg_bufs[t.op][t]
                    return E.BufferLoad(buf, idx)
                pinfo = lowerer.info[pst]
                buf = pinfo.buffers[t.value_index]
                idx = tuple(lowerer.ana.simplify(i - m) if not E.is_const_int(m, 0) else i
                            for i, m in zip(idx, pinfo.region_min))
                return E.BufferLoad(buf, idx)

        return _ToBuffer()

    def _guards(self, info, reduce_part):
        """Conditions that keep a stage's root indices inside their ranges."""
        conds = []
        op, st = info.op, info.stage
        roots = list(op.axis) + (list(op.reduce_axis) if reduce_part else [])
        for iv in roots:
            o = info.offset[iv]
            ext = info.dom[iv].extent
            if not self.ana.can_prove(E.LT(o, ext)):
                conds.append(E.LT(o, ext))
        if st.attach_type == "scope":
            # the region a consumer needs may stick out of this tensor's domain
            for iv in op.axis:
                v = info.root_value[iv.var]
                if not self.ana.can_prove(E.GE(v, const(0, v.dtype))):
                    conds.append(E.GE(v, const(0, v.dtype)))
                if not self.ana.can_prove(E.LT(v, iv.dom.extent)):
                    conds.append(E.LT(v, iv.dom.extent))
        return conds

    def _guard(self, conds, body):
        if not conds:
            return body
        c = conds[0]
        for x in conds[1:]:
            c = E.And(c, x)
        return S.IfThenElse(likely(self.ana.simplify(c)), body)

    def _provide(self, info):
        """(init, update) statements of a stage's innermost body."""
        op = info.op
        rw = self._load_rewriter()
        idx = tuple(info.offset[iv] for iv in op.axis)
        bodies = [rw.visit(substitute(b, info.root_value)) for b in info.body]
        if not op.is_reduction:
            stores = [S.BufferStore(buf, b, idx) for buf, b in zip(info.buffers, bodies)]
            return None, self._guard(self._guards(info, False), S.seq(*stores))
        red = bodies[0]
        comb = red.combiner
        n = len(comb.lhs)
        inits = red.init if red.init else comb.identity_element
        init = S.seq(*[S.BufferStore(info.buffers[i], inits[i], idx) for i in range(n)])
        lhs = [E.BufferLoad(info.buffers[i], idx) for i in range(n)]
        vmap = {v: x for v, x in zip(comb.lhs, lhs)}
        vmap.update({v: x for v, x in zip(comb.rhs, red.source)})
        results = [substitute(r, vmap) for r in comb.result]
        if n == 1:
            update = S.BufferStore(info.buffers[0], results[0], idx)
        else:
            tmps = [E.Var(f"{op.name}_v{i}", r.dtype) for i, r in enumerate(results)]
            update = S.seq(*[S.BufferStore(info.buffers[i], tmps[i], idx) for i in range(n)])
            for t, r in reversed(list(zip(tmps, results))):
                update = S.LetStmt(t, r, update)
        if not E.is_const_int(red.condition, 1):
            update = S.IfThenElse(red.condition, update)
        return (self._guard(self._guards(info, False), init),
                self._guard(self._guards(info, True), update))

    def _loop(self, info, iv, body):
        st = info.stage
        attr = st.iter_var_attrs.get(iv)
        ext = info.dom[iv].extent
        zero = const(0, ext.dtype)
        if attr is None:
            return S.For(iv.var, zero, ext, S.ForKind.SERIAL, body)
        ann = tuple(("pragma_" + k, v) for k, v in attr.pragmas)
        if attr.bind_thread is not None:
            t = attr.bind_thread
            tiv = E.IterVar(E.Range(zero, ext), t.var, E.IterVarType.THREAD_INDEX, t.thread_tag)
            return S.For(iv.var, zero, ext, S.ForKind.THREAD_BINDING, body, tiv, ann)
        return S.For(iv.var, zero, ext, _KIND[attr.kind], body, None, ann)

    def _attached(self, info, iv, body):
        for child in reversed(info.children.get(iv, [])):
            body = self._allocate(child, S.seq(self._make_stage(child), body))
            if child.stage.double_buffer_:
                # inject_double_buffer turns this into a two-slot pipeline over the loop
                for buf in child.buffers:
                    body = S.AttrStmt(buf.data, keys.DOUBLE_BUFFER_SCOPE, const(1), body)
        return body

    def _allocate(self, info, body):
        for buf in reversed(info.buffers):
            body = S.Allocate(buf, body)
        return body

    def _thread_reduce_leaves(self, info):
        st = info.stage
        return [iv for iv in st.leaf_iter_vars if _is_reduce(iv) and st.iter_var_attrs.get(iv) is not None
                and st.iter_var_attrs[iv].bind_thread is not None]

    def _make_cross_thread(self, info, rt) -> S.Stmt:
        """A reduction whose axis is bound to threadIdx (an all-reduce over threads).

        Each thread first reduces its share (the serial reduction loops) into a local
        partial; then ``tecc.thread_allreduce`` combines the partials of the ``n``
        threads of a row (the ``lower_thread_allreduce`` pass turns it into warp
        shuffles or a shared-memory tree).  Thread 0 of the row stores the result;
        when the output lives in per-thread (local) memory, every thread of the row
        stores it.
        """
        st, op = info.stage, info.op
        if len(rt) != 1 or not st.iter_var_attrs[rt[0]].bind_thread.thread_tag.startswith("threadIdx"):
            raise LoweringError(f"stage {op.name!r}: a cross-thread reduction binds exactly one reduction axis "
                                "to a threadIdx axis")
        (tiv,) = rt
        n = E.const_int_value(info.dom[tiv].extent)
        if n is None:
            raise LoweringError(f"stage {op.name!r}: the reduction axis bound to a thread needs a constant extent")
        rw = self._load_rewriter()
        idx = tuple(info.offset[iv] for iv in op.axis)
        red = rw.visit(substitute(info.body[0], info.root_value))
        if red.init:
            raise LoweringError(f"stage {op.name!r}: init= is not supported in a cross-thread reduction")
        comb = red.combiner
        sources = red.source
        # rows: other threads of the block that reduce different outputs
        rows = [iv for iv in st.leaf_iter_vars if not _is_reduce(iv) and st.iter_var_attrs.get(iv) is not None
                and st.iter_var_attrs[iv].bind_thread is not None
                and st.iter_var_attrs[iv].bind_thread.thread_tag.startswith("threadIdx")]
        row, nrows = const(0, "int32"), 1
        for iv in rows:
            ext = E.const_int_value(info.dom[iv].extent)
            if ext is None:
                raise LoweringError(f"stage {op.name!r}: thread axis {iv.var.name!r} needs a constant extent")
            row = row * ext + iv.var if nrows > 1 else iv.var
            nrows *= ext
        nv = len(comb.lhs)
        partial = [S.Buffer(f"{op.name}.partial{i}" if nv > 1 else f"{op.name}.partial", x.dtype, (const(1),),
                            E.Var(f"{op.name}.partial", "handle"), "local")
                   for i, x in enumerate(comb.identity_element)]
        zero = const(0, "int32")
        mine = [E.BufferLoad(b, (zero,)) for b in partial]

        def assign(values):
            return store_values(partial, zero, values, op.name)

        # 1. each thread's partial over the serial reduction loops
        vmap = {v: x for v, x in zip(comb.lhs, mine)}
        vmap.update({v: x for v, x in zip(comb.rhs, sources)})
        update = assign([substitute(r, vmap) for r in comb.result])
        if not E.is_const_int(red.condition, 1):
            update = S.IfThenElse(red.condition, update)
        update = self._guard(self._guards(info, True), update)
        serial = [iv for iv in st.leaf_iter_vars if _is_reduce(iv) and iv is not tiv]
        for iv in reversed(serial):
            update = self._loop(info, iv, self._attached(info, iv, update))
        part = S.seq(assign(list(comb.identity_element)), update)
        # 2. combine the partials of the row (every thread takes part: no guards)
        per_thread = any(b.scope in ("local", "warp") for b in info.buffers)
        reduce = thread_allreduce(comb, n, tiv.var, row, nrows, per_thread, partial)
        # 3. store: thread 0 of the row, or every thread when the output is per thread
        store = S.seq(*[S.BufferStore(buf, r, idx) for buf, r in zip(info.buffers, mine)])
        store = self._guard(self._guards(info, False), store)
        if not per_thread:
            store = S.IfThenElse(E.EQ(tiv.var, zero), store)
        body = S.seq(part, reduce, store)
        for b in partial:
            body = S.Allocate(b, body)
        body = self._loop(info, tiv, self._attached(info, tiv, body))
        for iv in reversed([iv for iv in st.leaf_iter_vars if not _is_reduce(iv)]):
            body = self._loop(info, iv, self._attached(info, iv, body))
        return body

    def _make_stage(self, info) -> S.Stmt:
        st, op = info.stage, info.op
        leaves = st.leaf_iter_vars
        if op.is_reduction:
            rt = self._thread_reduce_leaves(info)
            if rt:
                return self._make_cross_thread(info, rt)
        init, update = self._provide(info)
        if init is None:
            body = update
            for iv in reversed(leaves):
                body = self._loop(info, iv, self._attached(info, iv, body))
            return body
        begin = next((k for k, iv in enumerate(leaves) if _is_reduce(iv)), len(leaves))
        common, rest = leaves[:begin], leaves[begin:]
        init_nest = init
        for iv in reversed([iv for iv in rest if not _is_reduce(iv)]):
            init_nest = self._loop(info, iv, init_nest)
        body = update
        for iv in reversed(rest):
            body = self._loop(info, iv, self._attached(info, iv, body))
        body = S.seq(init_nest, body)
        for iv in reversed(common):
            body = self._loop(info, iv, self._attached(info, iv, body))
        return body

    def _make_root(self, infos):
        roots = [i for i in infos if i.stage.attach_type == "root"]
        body = None
        for info in reversed(roots):
            stmt = self._make_stage(info)
            body = stmt if body is None else S.seq(stmt, body)
            if info.op not in self.arg_bufs:
                body = self._allocate(info, body)
        return body if body is not None else S.Evaluate(const(0))


_DIVISIONS = (E.Div, E.Mod, E.FloorDiv, E.FloorMod)


def _check_body(op, body, sizes) -> None:
    """User mistakes in a stage's expression that would reach the compiled code as
    undefined behaviour: a variable nothing binds, an integer division by zero."""
    bound = {iv.var for iv in op.axis} | {iv.var for iv in op.reduce_axis} | sizes
    for expr in body:
        for v in sorted(collect_vars(expr) - bound, key=lambda v: v.name):
            raise LoweringError(
                f"stage {op.name!r} uses {v.name!r}, which none of its loops binds and which is not the size of "
                f"an argument: a te.reduce_axis can only be used inside a reduction (te.sum(A[i, {v.name}], "
                f"axis={v.name})), and a te.var must size an argument tensor")
        found = []
        post_order_visit(expr, lambda n: found.append(n) if (
            isinstance(n, _DIVISIONS) and _dt.is_integer(n.dtype) and E.is_const_int(n.b, 0)) else None)
        if found:
            raise LoweringError(f"stage {op.name!r} divides by the constant 0 in `{found[0]}`: integer division "
                                "by zero is undefined (the program would crash); fix the divisor")


def _accesses(body, tensors):
    """Index tuples of every read of ``tensors`` in ``body``."""
    out = []

    class _Find(IRMutator):
        def visit_ProducerLoad(self, e):
            if e.producer in tensors:
                out.append(e.indices)
            for i in e.indices:
                self.visit(i)
            return e

        def visit_Reduce(self, r):
            return self.generic_visit(r)

    f = _Find()
    for b in body:
        f.visit(b)
    return out


def _aligned_strides(shape, aligns, name):
    strides = [None] * len(shape)
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        if d in aligns:
            factor, offset = aligns[d]
            # pad the stride of dimension d up to the next value == offset (mod factor)
            stride = stride + (factor + offset - stride % factor) % factor
        strides[d] = stride
        ext = E.const_int_value(shape[d])
        if ext is None:
            raise LoweringError(f"storage_align of {name!r} needs constant shapes")
        stride = stride * ext
    return tuple(const(s) for s in strides)


def lower_schedule(sch: Schedule, args, name="main") -> S.PrimFunc:
    """Lower ``sch`` to a PrimFunc taking ``args`` (tensors) in that order."""
    if not isinstance(sch, Schedule):
        raise LoweringError(f"expected a schedule from te.create_schedule, got {sch!r}")
    return Lowerer(sch, args, name).run()
