"""Lowering a schedule to a TIR PrimFunc.

Four steps, each a method of :class:`Lowerer` below:

1. ``_collect``: substitute every ``compute_inline`` stage into its consumers and
   keep the stages an output needs.  The init and update tensors of a scan, and its
   state placeholder, are *aliases* of the scan's result: they share its buffer.
2. ``_infer_bounds``: consumers before producers, find the range of every iteration
   variable.  A stage attached with ``compute_at(P, iv)`` (or computed in each step
   of a scan) must produce the region of its output that its consumers read during
   *one* iteration of ``iv``: the index expressions of those reads are evaluated as
   intervals in which the loop variables enclosing the attach point stay fixed
   (symbolic) and every other loop variable is relaxed to its whole range.  A scan
   reads a whole row of its update per step; an extern stage reads its inputs whole.
3. ``_make_stage``: build each stage's loop nest from its leaf iteration variables
   (split/fuse relations give the root index values), each bounds guard placed
   just inside the innermost loop it depends on, the reduction's init placed before
   the first reduction loop, and attached stages (with their buffers) inside the
   loop they are attached to.  A scan is a serial loop over its time axis; an
   extern stage is its statement with its declared buffers bound to the real ones.
4. Assemble the PrimFunc: arguments are buffers (and scalar variables given as
   arguments), then symbolic shape variables.
"""
from __future__ import annotations


from ..errors import LoweringError, warn_user
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import keys
from ..tir import stmt as S
from ..tir.arith import Analyzer, IntervalSet, eval_set
from ..tir.functor import IRMutator, collect_vars, post_order_visit, substitute
from ..tir.op import const, likely
from ..tir.transform.lower_thread_allreduce import store_values, thread_allreduce
from .schedule import AttachType, Fuse, Schedule, Singleton, Split, _is_reduce, pass_down_extents, pass_up_index
from .tensor_intrin import intrinsic_form
from .tensor import ComputeOp, ExternOp, PlaceholderOp, ScanOp, Tensor, TensorComputeOp, read_tensors

#: memory scopes from widest to narrowest sharing
_SCOPE_RANK = {"global": 0, "shared": 1, "warp": 2, "local": 3,
               # tensor-core fragments: a warp's, each thread keeps its own region (as TVM)
               "wmma.matrix_a": 4, "wmma.matrix_b": 4, "wmma.accumulator": 4}

#: attachments that put a stage inside a loop of another stage
_NESTED = (AttachType.SCOPE, AttachType.SCAN_UPDATE)


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


def _reads(op, body):
    """The tensors stage ``op`` reads (``body``: its inlined compute body)."""
    if isinstance(op, ComputeOp):
        return read_tensors(body)
    return list(op.input_tensors)


class _StageInfo:
    def __init__(self, stage, body):
        self.stage = stage
        self.op = stage.op
        self.body = body                # compute: effective body (inlined tensors substituted)
        self.reads = _reads(stage.op, body)
        self.dom = {}                   # IterVar -> Range (root and derived)
        self.region_min = ()            # per output dim: min index this stage's buffer holds
        self.buffers = ()               # one per output
        self.root_value = {}            # root Var -> index expression over leaf vars
        self.offset = {}                # root IterVar -> index relative to the region's min
        self.children = {}              # leaf IterVar -> [attached _StageInfo]
        self.consumers = []             # _StageInfo reading this stage
        self.alias = None               # (scan _StageInfo, output index): outputs live in the scan's buffer
        self.absolute = False           # stores go to absolute indices of a whole buffer
        self.window = None              # per output dim (min, extent) of a per-thread buffer whose
                                        # loops span more than one thread's part (see _thread_window)
        self.window_index = ()          # where such a stage stores, in its window
        self.inner_offsets = {}         # split/fused axis that is neither root nor leaf -> its index

    @property
    def roots(self):
        op = self.op
        if isinstance(op, (ComputeOp, TensorComputeOp)):
            return list(op.axis) + list(op.reduce_axis)
        if isinstance(op, ScanOp):
            return [op.scan_axis] + list(op.spatial_axis_)
        return []


class Lowerer:
    def __init__(self, sch: Schedule, args, name, binds=None, missing_output="warn"):
        self.sch = sch
        self.missing_output = missing_output
        self.name = name
        self.args = list(args) if args is not None else None
        self.binds = dict(binds or {})
        self.ana = Analyzer()
        self.loop_range = {}    # loop Var -> Range it runs over (leaf loops, and the ranges a read covers)
        self.info = {}          # Stage -> _StageInfo
        self.state_alias = {}   # state placeholder tensor -> (scan _StageInfo, output index)
        self.arg_bufs = {}      # op -> {tensor: Buffer} of the arguments
        self.states = set()     # state placeholders of the scans

    # ------------------------------------------------------------------ driver
    def run(self) -> S.PrimFunc:
        infos = self._collect()
        params, buffer_map, scalars = self._bind_args(infos)
        shape_vars = []
        for t in self.args:
            if not isinstance(t, Tensor):
                continue
            for d in t.shape:
                for v in sorted(collect_vars(d), key=lambda v: v.name):
                    if v not in shape_vars and v not in scalars:
                        shape_vars.append(v)
        for info in infos:
            if isinstance(info.op, ComputeOp):
                _check_body(info.op, info.body, set(shape_vars) | set(scalars))
        self._prepare(infos)
        for info in infos:
            self._make_buffers(info)
        for info in infos:
            self._alias_buffers(info)
        body = self._make_root(infos)
        body = self._bind_layouts(body)
        params = params + shape_vars
        return S.PrimFunc(tuple(params), body, buffer_map, {keys.GLOBAL_SYMBOL: self.name})

    def _prepare(self, infos):
        self._assume_positive_shapes(infos)
        self._check_attachments(infos)
        self._set_aliases(infos)
        for info in reversed(infos):
            self._infer_bounds(info)

    def _assume_positive_shapes(self, infos):
        """A variable in a tensor's shape is at least 1 where anything runs (a
        dimension of 0 has no loop iterations to bound): dividing by it is
        monotone, as TVM's bound inference assumes (``(xo*s + xi) // l``)."""
        seen = set()
        for info in infos:
            op = info.op
            for i in range(op.num_outputs):
                for d in op.output_shape(i):
                    for v in collect_vars(d):
                        if v in seen or isinstance(v, E.SizeVar):
                            continue
                        seen.add(v)
                        try:
                            self.ana.bind(v, IntervalSet(const(1, v.dtype), const(_dt.max_value(v.dtype), v.dtype)))
                        except ValueError:
                            pass  # bound already, to what the user said

    def infer_bound(self) -> dict:
        """The range of every iteration variable of every stage (TVM's InferBound)."""
        infos = self._collect()
        self._prepare(infos)
        out = {}
        for st in self.sch.stages:
            info = self.info.get(st)
            if info is not None:
                out.update(info.dom)
                continue
            for iv in st.all_iter_vars:  # inlined or unused stages: their own domains
                if iv.dom is not None:
                    out[iv] = iv.dom
        return out

    # --------------------------------------------------------------- inlining
    def _simplify_inlined(self, op, body) -> tuple:
        """An inlined stage's body simplified once, in its own axes over their
        ranges, before it is substituted into its consumers.  Each layer of
        reshapes and transposes substitutes index expressions into one that uses
        each axis several times (``(i*32 + j)//32 % 128``, ``(i*32 + j) % 32``):
        left unsimplified, a chain of them grows multiplicatively, and the
        simplifier later spends seconds on one kernel (a decoder layer's rotary
        embedding inlined into its attention product).  A consumer reads the stage
        inside its shape (reading outside is a bug of the compute), so the axes'
        ranges hold wherever the body's value is used."""
        ana = Analyzer()
        for iv in op.axis:
            ana.bind(iv.var, iv.dom)
        return tuple(ana.simplify(b) for b in body)

    def _collect(self):
        self.sch.normalize()
        bodies = {}
        inliner = _Inliner(bodies)
        order = []
        for st in self.sch.stages:
            op = st.op
            if isinstance(op, PlaceholderOp):
                continue
            if not isinstance(op, ComputeOp):
                order.append((st, None))
                continue
            body = tuple(inliner.visit(b) for b in op.body)
            if st.attach_type == AttachType.INLINE:
                bodies[op] = self._simplify_inlined(op, body)
            else:
                order.append((st, body))
        # keep only stages that an output needs
        live = {}
        by_op = {st.op: (st, body) for st, body in order}
        stack = [self.sch[o] for o in self.sch.outputs]
        for st in stack:
            if st.attach_type == AttachType.INLINE:
                raise LoweringError(f"stage {st.name!r} is an output and cannot be inlined")
        while stack:
            st = stack.pop()
            if st in live:
                continue
            _, body = by_op[st.op]
            info = live[st] = _StageInfo(st, body)
            for t in info.reads:
                pst = self.sch.stage_map.get(t.op)
                if pst is None or isinstance(pst.op, PlaceholderOp) or pst in live:
                    continue
                if pst.attach_type == AttachType.INLINE:
                    kind = {ScanOp: "scan", TensorComputeOp: "tensor-intrinsic stage"}.get(type(st.op), "extern stage")
                    raise LoweringError(f"stage {pst.name!r} is inlined (compute_inline), but {kind} {st.name!r} "
                                        f"reads it as a whole buffer; do not inline {pst.name!r}")
                stack.append(pst)
        infos = [live[st] for st, _ in order if st in live]
        # a scan's state placeholders stand for its result (no argument)
        self.states = {t for info in infos if isinstance(info.op, ScanOp) for t in info.op.state_placeholder}
        for info in infos:
            self.info[info.stage] = info
        for info in infos:
            for t in info.reads:
                pst = self.sch.stage_map.get(t.op)
                if pst in self.info and info not in self.info[pst].consumers:
                    self.info[pst].consumers.append(info)
        return infos

    # -------------------------------------------------------------- arguments
    def _bind_args(self, infos):
        arg_bufs = {}      # current op -> {tensor: Buffer}
        params, buffer_map, scalars = [], {}, []
        seen = set()
        for t in self.args:
            if isinstance(t, E.Var):
                if t in scalars:
                    raise LoweringError(f"argument {t.name!r} is given twice")
                scalars.append(t)
                params.append(t)
                continue
            if isinstance(t, S.Buffer):
                raise LoweringError(f"argument {t.name!r} is a buffer; pass the tensor and bind it to the buffer "
                                    "with binds={tensor: buffer}")
            if not isinstance(t, Tensor):
                raise LoweringError(f"lower/build arguments must be tensors (or scalar te.var), got {t!r}")
            st = self.sch.stage_map.get(t.op)
            if st is None and not isinstance(t.op, PlaceholderOp):
                raise LoweringError(f"argument {t.name!r} is not part of this schedule (nothing the schedule "
                                    "computes reads it, and it is not an input); pass the tensors of this schedule")
            if st is None:  # an input the computation does not read: an unused parameter, as in TVM
                buf = self.binds.get(t) or S.Buffer(t.name, t.dtype, tuple(t.shape), E.Var(t.name, "handle"), "global")
                if t in seen:
                    raise LoweringError(f"argument {t.name!r} is given twice")
                seen.add(t)
                arg_bufs.setdefault(t.op, {})[t] = buf
                params.append(buf.data)
                buffer_map[buf.data] = buf
                continue
            cur = st.op.output(t.value_index)
            if cur in seen:
                raise LoweringError(f"argument {t.name!r} is given twice")
            seen.add(cur)
            if st.attach_type == AttachType.INLINE and not isinstance(st.op, PlaceholderOp):
                # as in TVM: a parameter the function neither reads nor writes (TVM's
                # schedule-primitives tutorial passes an inlined tensor so)
                warn_user(f"argument {t.name!r} is inlined (compute_inline): {self.name!r} takes its buffer "
                          "but neither reads nor writes it; remove it from the arguments, or do not inline it "
                          "to get its values")
                buf = self.binds.get(t) or S.Buffer(t.name, t.dtype, tuple(t.shape), E.Var(t.name, "handle"),
                                                    "global")
                params.append(buf.data)
                buffer_map[buf.data] = buf
                continue
            buf = self.binds.get(t)
            if buf is None:
                buf = S.Buffer(t.name, t.dtype, tuple(t.shape), E.Var(t.name, "handle"), "global")
            elif not isinstance(buf, S.Buffer):
                raise LoweringError(f"binds[{t.name!r}] must be a tir.decl_buffer(...), got {buf!r}")
            arg_bufs.setdefault(cur.op, {})[cur] = buf
            params.append(buf.data)
            buffer_map[buf.data] = buf
        self.arg_bufs = arg_bufs
        for info in infos:
            if info.stage.is_output and info.op not in arg_bufs:
                msg = (f"output {info.op.name!r} is not in the argument list of {self.name!r}: it would be "
                       "computed into a temporary buffer and lost; add it to the arguments to get the result")
                if self.missing_output == "error" and not info.consumers:
                    raise LoweringError(msg)
                warn_user(msg)
            for t in info.reads:
                if isinstance(t.op, PlaceholderOp) and t not in arg_bufs.get(t.op, {}) and t not in self.states:
                    raise LoweringError(f"tensor {t.name!r} is read by stage {info.op.name!r} but is not in the "
                                        "argument list; pass it to lower/build")
        return params, buffer_map, scalars

    def _bind_layouts(self, body):
        """Buffers bound with ``binds=`` may name their element offset and strides
        with variables: tecc's arrays are compact, so those are the compact values."""
        lets = []
        for t, buf in self.binds.items():
            off = getattr(buf, "elem_offset", None)
            if isinstance(off, E.Var):
                lets.append((off, const(0, off.dtype)))
            strides = tuple(getattr(buf, "strides", ()) or ())
            stride = const(1, "int32")
            for d in range(len(strides) - 1, -1, -1):
                if isinstance(strides[d], E.Var):
                    lets.append((strides[d], _dt_cast(stride, strides[d].dtype)))
                stride = stride * buf.shape[d] if d < len(buf.shape) else stride
        for v, value in reversed(lets):
            body = S.LetStmt(v, self.ana.simplify(value), body)
        return body

    # ------------------------------------------------------------ attachment
    def _check_attachments(self, infos):
        for st in self.sch.stages:
            if getattr(st, "double_buffer_", False) and st.attach_type != AttachType.SCOPE:
                where = "inlined" if st.attach_type == AttachType.INLINE else "computed at root"
                raise LoweringError(
                    f"stage {st.name!r} is double-buffered (double_buffer) but {where}; double_buffer "
                    "applies to a stage computed (compute_at) directly inside a serial loop, e.g. "
                    "s[AA].compute_at(s[CC], ko) for the outer reduction loop ko of a tiled GEMM")
        for info in infos:
            st = info.stage
            if st.attach_type not in _NESTED:
                continue
            parent = st.attach_stage
            if parent not in self.info:
                why = "inlined" if parent.attach_type == AttachType.INLINE else "not needed by any output"
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
            if cur.attach_type not in _NESTED:
                return False
            if cur.attach_stage is parent:
                return parent.leaf_iter_vars.index(cur.attach_ivar) >= pos
            cur = cur.attach_stage

    def _set_aliases(self, infos):
        """A scan's init and update stages compute straight into the scan's buffer,
        and reads of its state placeholder read that buffer."""
        for info in infos:
            op = info.op
            if not isinstance(op, ScanOp):
                continue
            for i in range(op.num_outputs):
                self.state_alias[op.state_placeholder[i]] = (info, i)
                for t in (op.init[i], op.update[i]):
                    pst = self.sch.stage_map.get(t.op)
                    pinfo = self.info.get(pst)
                    if pinfo is None:
                        continue
                    if pinfo.alias is None:
                        pinfo.alias = {}
                    pinfo.alias[t.value_index] = (info, i)
        for info in infos:
            if info.alias is not None and len(info.alias) != info.op.num_outputs:
                raise LoweringError(f"stage {info.op.name!r}: some of its outputs are the init/update of a scan "
                                    "and some are not; give the scan its own te.compute")
            if info.alias is not None and info.op in self.arg_bufs:
                raise LoweringError(f"argument {info.op.name!r} is the init/update of a scan, which computes it "
                                    "into the scan's result; pass the scan's result instead")

    def _scope(self, stage):
        """The stage's memory scope; without one set, a stage attached under a loop
        bound to a thread index is ``local`` and one under a block index ``shared``
        (as in TVM), else ``global``."""
        if stage.scope:
            return stage.scope
        rank = -1
        cur = stage
        while cur.attach_type in _NESTED:
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
        while cur.attach_type in _NESTED:
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
            if not isinstance(e, E.PrimExpr):  # an infinite bound
                return None
            free = [v for v in collect_vars(e) if v in self.loop_range and v not in fixed]
            if not free:
                return self.ana.simplify(e)
            dom = {}
            for v in free:
                r = self.loop_range[v]
                dom[v] = IntervalSet(r.min, self.ana.simplify(r.min + r.extent - 1))
            s = eval_set(e, dom, self.ana)
            e = s.max_value if upper else s.min_value
            if not isinstance(e, E.PrimExpr):
                return None
        return None

    def _full_range_var(self, name, lo, extent):
        """A variable standing for every index in ``[lo, lo + extent)`` of a read."""
        v = E.Var(name, extent.dtype)
        self.loop_range[v] = E.Range(lo, extent)
        return v

    def _consumer_accesses(self, c, outs):
        """Index tuples of the reads of tensors ``outs`` by stage ``c``, over its loops."""
        op = c.op
        if isinstance(op, ComputeOp):
            return [tuple(substitute(e, c.root_value) for e in idx) for idx in _accesses(c.body, outs)]
        out = []
        if isinstance(op, TensorComputeOp):  # the regions the intrinsic is applied to: first and last index
            for t, region in zip(op.inputs, op.input_regions):
                if t not in outs:
                    continue
                first = tuple(substitute(r.min, c.root_value) for r in region)
                last = tuple(self.ana.simplify(substitute(r.min + r.extent - 1, c.root_value)) for r in region)
                out += [first, last]
            return out
        if isinstance(op, ScanOp):
            for i in range(op.num_outputs):
                spatial = tuple(iv.var for iv in op.spatial_axes(i))
                if op.init[i] in outs:  # the init rows, whole
                    z = self._full_range_var("scan.init", const(0, op.scan_axis.dom.min.dtype),
                                             op.init[i].shape[0])
                    out.append((z,) + spatial)
                if op.update[i] in outs:  # one row per step of the scan
                    out.append((op.scan_axis.var,) + spatial)
            return out
        for t in op.input_tensors:  # an extern stage reads its inputs whole
            if t in outs:
                out.append(tuple(self._full_range_var(f"{t.name}.i{d}", const(0, s.dtype), s)
                                 for d, s in enumerate(t.shape)))
        return out

    def _infer_bounds(self, info):
        st, op = info.stage, info.op
        if isinstance(op, ScanOp):
            self._scan_bounds(info)
            return
        if isinstance(op, ExternOp):
            info.region_min = tuple(const(0, s.dtype) for s in op.output_shape(0))
            return
        if st.attach_type not in _NESTED:
            for iv in op.axis:
                info.dom[iv] = iv.dom
            info.region_min = tuple(const(0, iv.var.dtype) for iv in op.axis)
            self._shrink_root(info)
        else:
            fixed = self._fixed_vars(st)
            lo, hi = self._region(info, fixed, per_thread=True)
            own = self._own_thread_vars(st)
            window = None
            lo_vars = set().union(*(collect_vars(x) for x in lo if x is not None))
            if lo_vars & own:
                # the stage binds its own loops to a thread index its region depends
                # on: its loops cover every thread's reads.  Where those are data
                # loops, its buffer holds one thread's part (_thread_window); a
                # cross-thread reduction (a reduction loop bound) has one result that
                # every thread holds
                if lo_vars & self._own_thread_vars(st, data_only=True):
                    window = (lo, hi)
                lo, hi = self._region(info, fixed, per_thread=False)
            for d, iv in enumerate(op.axis):
                if lo[d] is None:  # not read at all: the whole axis
                    lo[d], hi[d] = const(0, iv.var.dtype), iv.dom.extent - 1
                ext = self.ana.simplify(hi[d] - lo[d] + 1)
                align = st.align_extent_.get(d)
                if align is not None and align > 1:  # align_extent: whole multiples of the factor
                    ext = self.ana.simplify(E.FloorDiv(ext + (align - 1), const(align, ext.dtype))
                                            * const(align, ext.dtype))
                info.dom[iv] = E.Range(lo[d], ext)
            info.region_min = tuple(lo)
        for iv in op.reduce_axis:
            info.dom[iv] = iv.dom
        self._derive_loops(info)
        if st.attach_type in _NESTED and window is not None:
            self._thread_window(info, fixed, *window)

    def _thread_window(self, info, fixed, lo, hi):
        """The per-thread part of a stage whose own loops are bound to a thread index
        that its consumers' reads depend on (a ``local`` cache filled by a
        ``threadIdx``-bound loop, as TVM's test_local_stage_predicate2).

        Its loops run over every thread's reads, but each thread keeps only the hull
        of what it reads and writes itself: indices in the buffer are taken from that
        hull's minimum, a function of the thread index, so the buffer is as small as
        TVM's bound inference makes it (97 floats, not 128, in that test).
        """
        st, op = info.stage, info.op
        own = {leaf.var: attr.bind_thread.var for leaf, attr in st.iter_var_attrs.items()
               if attr.bind_thread is not None and leaf in st.leaf_iter_vars}
        win = []
        for d, iv in enumerate(op.axis):
            if lo[d] is None:
                return
            w = substitute(info.root_value[iv.var], own)  # the index this thread writes
            wlo, whi = self._relax(w, fixed, upper=False), self._relax(w, fixed, upper=True)
            if wlo is None or whi is None:
                return
            a = self.ana.simplify(E.Min(lo[d], wlo))
            b = self.ana.simplify(E.Max(hi[d], whi))
            ext = self.ana.simplify(b - a + 1)
            if E.const_int_value(ext) is None:
                return  # no constant size per thread: keep the buffer of every thread's part
            win.append((a, ext, w))
        info.window = tuple((a, ext) for a, ext, _ in win)
        info.region_min = tuple(a for a, _, _ in win)
        info.window_index = tuple(self.ana.simplify(w - a) for a, _, w in win)

    def _shrink_root(self, info):
        """An intermediate stage computed at root covers what its consumers read
        where that is a constant part of a constant dimension (as TVM's bound
        inference: ``T[0:10]`` of a 20-row tensor computes 10 rows)."""
        st, op = info.stage, info.op
        if (st.is_output or op in self.arg_bufs or info.alias is not None or not info.consumers
                or not isinstance(op, ComputeOp) or st.group is not None):
            return
        try:
            lo, hi = self._region(info, set(), per_thread=False)
        except LoweringError:
            return
        for d, iv in enumerate(op.axis):
            full = E.const_int_value(iv.dom.extent)
            a = E.const_int_value(lo[d]) if lo[d] is not None else None
            b = E.const_int_value(hi[d]) if hi[d] is not None else None
            if full is None or a is None or b is None or not (0 <= a <= b < full) or b - a + 1 == full:
                continue
            info.dom[iv] = E.Range(const(a, iv.var.dtype), const(b - a + 1, iv.var.dtype))
        info.region_min = tuple(info.dom[iv].min for iv in op.axis)

    def _region(self, info, fixed, per_thread):
        """Per output dimension, the (min, max) index its consumers read while the
        loops ``fixed`` stay fixed.

        With ``per_thread``, the reads made under a thread index whose threads each
        have their own copy of this stage's memory (``local`` memory and
        ``threadIdx``, ``shared`` and ``blockIdx``) are bounded per thread: that
        index stays fixed too, named by its thread axis (one variable for the whole
        kernel), as TVM's bound inference does.
        """
        op = info.op
        ndim = len(op.axis)
        lo, hi = [None] * ndim, [None] * ndim
        outs = {op.output(i) for i in range(op.num_outputs)}
        rank = _SCOPE_RANK[self._scope(info.stage)]
        for c in info.consumers:
            fix, sub = set(fixed), {}
            if per_thread:
                cur = c.stage
                while cur is not None:
                    for iv, attr in cur.iter_var_attrs.items():
                        t = attr.bind_thread
                        if t is not None and iv.var not in fixed and iv.var in self.loop_range \
                                and keys.is_gpu_tag(t.thread_tag) and rank > _thread_rank(t.thread_tag):
                            sub[iv.var] = t.var
                            fix.add(t.var)
                            self.ana.bind(t.var, self.loop_range[iv.var], allow_override=True)
                    cur = cur.attach_stage if cur.attach_type in _NESTED else None
            for idx in self._consumer_accesses(c, outs):
                for d, e in enumerate(idx):
                    e = self.ana.simplify(substitute(e, sub))  # e.g. (n.outer*128 + n.inner) % 128 -> n.inner
                    s = eval_set(e, {}, self.ana)
                    a = self._relax(s.min_value, fix, upper=False)
                    b = self._relax(s.max_value, fix, upper=True)
                    if a is None or b is None:  # e.g. a division by a symbolic size: bound it as it is
                        a = self._relax(e, fix, upper=False)
                        b = self._relax(e, fix, upper=True)
                    if a is None or b is None:
                        raise LoweringError(
                            f"cannot bound the region of {op.name!r} that {c.op.name!r} reads in dimension {d} "
                            f"(index `{e}`); compute {op.name!r} at root instead")
                    lo[d] = a if lo[d] is None else self.ana.simplify(E.Min(lo[d], a))
                    hi[d] = b if hi[d] is None else self.ana.simplify(E.Max(hi[d], b))
        return lo, hi

    @staticmethod
    def _own_thread_vars(stage, data_only=False):
        """The thread axis variables ``stage`` binds its own loops to (with
        ``data_only``, its data-parallel loops only)."""
        return {a.bind_thread.var for iv, a in stage.iter_var_attrs.items() if a.bind_thread is not None
                and not (data_only and _is_reduce(iv))}

    def _scan_bounds(self, info):
        op = info.op
        if info.stage.attach_type != AttachType.ROOT:
            raise LoweringError(f"scan {op.name!r} must be computed at root")
        info.dom[op.scan_axis] = op.scan_axis.dom
        for iv in op.spatial_axis_:
            info.dom[iv] = iv.dom
            self.loop_range[iv.var] = iv.dom
        self.loop_range[op.scan_axis.var] = op.scan_axis.dom
        self.ana.bind(op.scan_axis.var, op.scan_axis.dom)
        info.region_min = tuple(const(0, s.dtype) for s in op.output_shape(0))
        info.root_value[op.scan_axis.var] = op.scan_axis.var

    def _derive_loops(self, info):
        """Ranges of the derived (split/fuse) loops, and the index of every root axis
        as a function of the leaf loops."""
        st, dom, op = info.stage, info.dom, info.op
        ext = pass_down_extents(st, {iv: dom[iv].extent for iv in op.axis + op.reduce_axis}, self.ana.simplify,
                                self.ana.can_prove, _thread_dominated(st))
        off = pass_up_index(st, {iv: iv.var for iv in st.leaf_iter_vars}, ext)
        # a reduction's extent may be a data axis (te.reduce_axis((0, i))): the
        # extents derived from it are in terms of the loops
        data = {iv.var: self.ana.simplify(dom[iv].min + off[iv]) for iv in op.axis if iv in off}
        data = {v: x for v, x in data.items() if x is not v}
        if data and any(collect_vars(ext[iv]) & set(data) for iv in ext):
            ext = {iv: substitute(x, data) for iv, x in ext.items()}
            off = pass_up_index(st, {iv: iv.var for iv in st.leaf_iter_vars}, ext)
        else:
            data = {}
        for iv in st.all_iter_vars:
            if iv not in dom and iv in ext:
                dom[iv] = E.Range(const(0, ext[iv].dtype), ext[iv])
        for iv in op.reduce_axis:
            if data:
                dom[iv] = E.Range(substitute(dom[iv].min, data), ext[iv])
        for iv in st.leaf_iter_vars:
            attr = st.iter_var_attrs.get(iv)
            e = dom[iv].extent
            if attr is not None and attr.bind_thread is not None and attr.bind_thread.dom is not None:
                tdom = attr.bind_thread.dom.extent
                if not self.ana.can_prove(E.LE(e, tdom)):
                    raise LoweringError(
                        f"stage {st.name!r}: axis {iv.var.name!r} has extent {e} but is bound to "
                        f"{attr.bind_thread.thread_tag} of extent {tdom}")
            self.loop_range[iv.var] = E.Range(const(0, e.dtype), e)
            self.ana.bind(iv.var, E.Range(const(0, e.dtype), e))
        # an axis split and then split again (or fused and split): its own range is a
        # bound too (ci of extent 2 split by 64 must stay below 2, not just its root)
        roots, leaves = set(op.axis) | set(op.reduce_axis), set(st.leaf_iter_vars)
        info.inner_offsets = {iv: self.ana.simplify(off[iv]) for iv in st.all_iter_vars
                              if iv in off and iv in dom and iv not in roots and iv not in leaves}
        info.offset = {}
        extra = [rel.iter for rel in st.relations if isinstance(rel, Singleton)]
        for iv in list(op.axis) + list(op.reduce_axis) + extra:
            # an opaque axis (a tensor intrinsic's own dimension) is covered whole
            o = self.ana.simplify(off[iv]) if iv in off else const(0, iv.var.dtype)
            info.offset[iv] = o
            if iv in dom:
                info.root_value[iv.var] = self.ana.simplify(dom[iv].min + o)

    # ----------------------------------------------------------------- buffers
    def _make_buffers(self, info):
        op, st = info.op, info.stage
        arg_bufs = self.arg_bufs
        if op in arg_bufs:
            info.buffers = tuple(arg_bufs[op][op.output(i)] if op.output(i) in arg_bufs[op] else None
                                 for i in range(op.num_outputs))
            if any(b is None for b in info.buffers):
                missing = [op.output(i).name for i, b in enumerate(info.buffers) if b is None]
                raise LoweringError(f"outputs {missing} of {op.name!r} must be passed as arguments too")
            return
        if info.alias is not None:
            return  # the scan's buffer, once it exists (_alias_buffers)
        if isinstance(op, (ComputeOp, TensorComputeOp)):
            shape = []
            for d, iv in enumerate(op.axis):
                ext = info.dom[iv].extent if info.window is None else info.window[d][1]
                if st.attach_type in _NESTED:
                    bound = self._relax(ext, set(), upper=True)
                    if bound is None or any(v in self.loop_range for v in collect_vars(bound)):
                        raise LoweringError(f"cannot find a size for dimension {d} of {op.name!r} (extent `{ext}`)")
                    ext = bound
                shape.append(ext)
        else:
            shape = None
        strides = ()
        if st.storage_align_:
            strides = _aligned_strides(shape, st.storage_align_, op.name)
        scope = self._scope(st)
        bufs = []
        for i in range(op.num_outputs):
            name = op.name if op.num_outputs == 1 else f"{op.name}.v{i}"
            shp = tuple(shape) if shape is not None else tuple(op.output_shape(i))
            bufs.append(S.Buffer(name, op.output_dtype(i), shp, E.Var(name, "handle"), scope, strides))
        info.buffers = tuple(bufs)

    def _alias_buffers(self, info):
        if info.op in self.arg_bufs and info.stage.attach_type in _NESTED:
            # an argument computed piecewise (compute_at): each piece goes where it
            # belongs in the whole buffer, as TVM does
            info.absolute = True
            info.region_min = tuple(const(0, iv.var.dtype) for iv in info.op.axis)
        if info.alias is None:
            return
        info.absolute = True
        info.buffers = tuple(info.alias[i][0].buffers[info.alias[i][1]] for i in range(info.op.num_outputs))
        # the scan's buffer holds every row: indices are absolute
        info.region_min = tuple(const(0, iv.var.dtype) for iv in info.op.axis)

    def _buffer_of(self, t, reader):
        """The buffer that holds tensor ``t`` whole (for a reader that needs all of it)."""
        if t in self.state_alias:
            scan, i = self.state_alias[t]
            return scan.buffers[i]
        if isinstance(t.op, PlaceholderOp):
            return self.arg_bufs[t.op][t]
        pinfo = self.info[self.sch.stage_map[t.op]]
        if pinfo.stage.attach_type in _NESTED and not pinfo.absolute:
            raise LoweringError(f"stage {pinfo.op.name!r} is attached with compute_at, but {reader!r} reads it "
                                f"as a whole buffer; compute {pinfo.op.name!r} at root")
        return pinfo.buffers[t.value_index]

    # ------------------------------------------------------------ statements
    def _load_rewriter(self):
        lowerer = self

        class _ToBuffer(IRMutator):
            def visit_ProducerLoad(self, e):
                idx = tuple(self.visit(i) for i in e.indices)
                t = e.producer
                if t in lowerer.state_alias:
                    scan, i = lowerer.state_alias[t]
                    return E.BufferLoad(scan.buffers[i], idx)
                if isinstance(t.op, PlaceholderOp):
                    return E.BufferLoad(lowerer.arg_bufs[t.op][t], idx)
                pinfo = lowerer.info[lowerer.sch.stage_map.get(t.op)]
                buf = pinfo.buffers[t.value_index]
                idx = tuple(lowerer.ana.simplify(i - m) if not E.is_const_int(m, 0) else i
                            for i, m in zip(idx, pinfo.region_min))
                return E.BufferLoad(buf, idx)

        return _ToBuffer()

    def _store_index(self, info):
        """Where a stage stores the element of its current loop iteration."""
        op = info.op
        if info.absolute:  # into a whole buffer (the scan's, an argument's)
            return tuple(info.root_value[iv.var] for iv in op.axis)
        if info.window is not None:
            return info.window_index
        return tuple(info.offset[iv] for iv in op.axis)

    def _guards(self, info):
        """Conditions that keep a stage's indices inside their ranges: (those on the
        data-parallel axes, those on the reduction axes)."""
        data, red = [], []
        op, st = info.op, info.stage
        for iv in op.axis:
            o, ext = info.offset[iv], info.dom[iv].extent
            if not self.ana.can_prove(E.LT(o, ext)):
                data.append(E.LT(o, ext))
        for rel in st.relations:  # fuse() of no axes: one iteration, however it was split
            if isinstance(rel, Singleton):
                o = info.offset[rel.iter]
                if not self.ana.can_prove(E.LT(o, const(1, o.dtype))):
                    data.append(E.LT(o, const(1, o.dtype)))
        if st.attach_type in _NESTED:
            # the region a consumer needs may stick out of this tensor's domain
            for iv in op.axis:
                v = info.root_value[iv.var]
                if not self.ana.can_prove(E.GE(v, const(0, v.dtype))):
                    data.append(E.GE(v, const(0, v.dtype)))
                if not self.ana.can_prove(E.LT(v, iv.dom.extent)):
                    data.append(E.LT(v, iv.dom.extent))
        for iv in op.reduce_axis:
            o, ext = info.offset[iv], info.dom[iv].extent
            if not self.ana.can_prove(E.LT(o, ext)):
                red.append(E.LT(o, ext))
        for iv, o in info.inner_offsets.items():
            ext = info.dom[iv].extent
            if not self.ana.can_prove(E.LT(o, ext)):
                (red if _is_reduce(iv) else data).append(E.LT(o, ext))
        return data, red

    def _store_predicate(self, info):
        """The stage's ``set_store_predicate`` condition (a list of at most one), with
        the thread axes it names replaced by the loops bound to them."""
        pred = info.stage.store_predicate
        if pred is None:
            return []
        threads = {}
        cur = info.stage
        while cur is not None:
            for iv, attr in cur.iter_var_attrs.items():
                if attr.bind_thread is not None:
                    threads.setdefault(attr.bind_thread.var, iv.var)
            cur = cur.attach_stage if cur.attach_type in _NESTED else None
        return [substitute(pred, threads)]

    def _guard(self, conds, body):
        if not conds:
            return body
        c = conds[0]
        for x in conds[1:]:
            c = E.And(c, x)
        return S.IfThenElse(likely(self.ana.simplify(c)), body)

    def _nest(self, info, ivs, inner, conds, attach=True):
        """Loops ``ivs`` (outermost first) around ``inner``; each condition of
        ``conds`` guards the body of the innermost of these loops it depends on."""
        pos = {iv.var: k for k, iv in enumerate(ivs)}
        # a guard never wraps a stage attached deeper in this nest: its threads may
        # all be needed there (a cooperative fetch, a barrier)
        floor = max((k for k, iv in enumerate(ivs) if attach and info.children.get(iv)), default=-1)
        levels = {}
        for c in conds:
            used = [pos[v] for v in collect_vars(c) if v in pos]
            levels.setdefault(max(used + [floor]) if used or floor >= 0 else -1, []).append(c)
        body = inner
        for k in range(len(ivs) - 1, -1, -1):
            body = self._guard(levels.get(k, []), body)
            iv = ivs[k]
            if attach:
                body = self._attached(info, iv, body)
            body = self._loop(info, iv, body)
        return self._guard(levels.get(-1, []), body)

    def _reduce_update(self, info, idx):
        """(init, update) statements of a reduction at store index ``idx``."""
        op = info.op
        rw = self._load_rewriter()
        red = rw.visit(substitute(info.body[0], info.root_value))
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
        return init, update

    def _loop(self, info, iv, body):
        st = info.stage
        attr = st.iter_var_attrs.get(iv)
        rng = info.dom[iv] if isinstance(info.op, ScanOp) else None
        ext = info.dom[iv].extent
        zero = const(0, ext.dtype)
        start = rng.min if rng is not None else zero  # a scan's time loop runs over the rows it fills
        if attr is None:
            return S.For(iv.var, start, ext, S.ForKind.SERIAL, body)
        ann = tuple(("pragma_" + k, v) for k, v in attr.pragmas)
        for tensor, offset in reversed(attr.prefetch):
            body = S.AttrStmt(self._prefetched_buffer(st, tensor).data, keys.PREFETCH_SCOPE, offset, body)
        if attr.bind_thread is not None:
            t = attr.bind_thread
            tiv = E.IterVar(E.Range(zero, ext), t.var, E.IterVarType.THREAD_INDEX, t.thread_tag)
            return S.For(iv.var, zero, ext, S.ForKind.THREAD_BINDING, body, tiv, ann)
        return S.For(iv.var, start, ext, _KIND[attr.kind], body, None, ann)

    def _prefetched_buffer(self, stage, t):
        """The buffer tensor ``t`` is read from (for ``stage.prefetch``): a stage
        attached with compute_at is prefetched in its own buffer."""
        if t in self.state_alias or isinstance(t.op, PlaceholderOp):
            return self._buffer_of(t, stage.op.name)
        pinfo = self.info.get(self.sch.stage_map.get(t.op))
        if pinfo is None or not pinfo.buffers:
            raise LoweringError(f"stage {stage.op.name!r}: prefetch of {t.op.name!r}, which is computed inline "
                                "and has no memory to prefetch; prefetch a tensor that is stored")
        return pinfo.buffers[t.value_index]

    def _attached(self, info, iv, body):
        for child in reversed(info.children.get(iv, [])):
            stmt = self._make_stage(child)
            body = stmt if body is None else S.seq(stmt, body)
            if child.alias is None and child.op not in self.arg_bufs:
                body = self._allocate(child, body)
            rng = info.dom.get(iv) if child.stage.double_buffer_ else None
            if child.stage.double_buffer_ and not (rng is not None and E.is_const_int(rng.extent, 1)):
                # inject_double_buffer turns this into a two-slot pipeline over the loop (a loop
                # of one iteration has nothing to overlap: simplify removes it, the stage stays single)
                mode = 2 if child.stage.register_prefetch_ else 1  # 2: prefetch through registers
                for buf in child.buffers:
                    body = S.AttrStmt(buf.data, keys.DOUBLE_BUFFER_SCOPE, const(mode), body)
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
        idx = self._store_index(info)
        red = rw.visit(substitute(info.body[0], info.root_value))
        if red.init:
            raise LoweringError(f"stage {op.name!r}: init= is not supported in a cross-thread reduction")
        comb = red.combiner
        sources = red.source
        # rows: other threads of the block that reduce different outputs
        # rows: the other thread indices of the block, which reduce different outputs
        # -- those of the stages this one is attached in, then its own
        def bound_threads(stage, ivs):
            return [(stage, iv) for iv in ivs if stage.iter_var_attrs.get(iv) is not None
                    and stage.iter_var_attrs[iv].bind_thread is not None
                    and stage.iter_var_attrs[iv].bind_thread.thread_tag.startswith("threadIdx")]

        rows = bound_threads(st, [iv for iv in st.leaf_iter_vars if not _is_reduce(iv)])
        cur = st
        while cur.attach_type in _NESTED:
            parent = cur.attach_stage
            pos = parent.leaf_iter_vars.index(cur.attach_ivar)
            rows = bound_threads(parent, parent.leaf_iter_vars[:pos + 1]) + rows
            cur = parent
        row, nrows = const(0, "int32"), 1
        for owner, iv in rows:
            ext = E.const_int_value(self.info[owner].dom[iv].extent)
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
        data_conds, red_conds = self._guards(info)
        update = self._guard(data_conds + red_conds, update)
        serial = [iv for iv in st.leaf_iter_vars if _is_reduce(iv) and iv is not tiv]
        for iv in reversed(serial):
            update = self._loop(info, iv, self._attached(info, iv, update))
        part = S.seq(assign(list(comb.identity_element)), update)
        # 2. combine the partials of the row (every thread takes part: no guards)
        per_thread = any(b.scope in ("local", "warp") for b in info.buffers)
        reduce = thread_allreduce(comb, n, tiv.var, row, nrows, per_thread, partial)
        # 3. store: thread 0 of the row, or every thread when the output is per thread
        store = S.seq(*[S.BufferStore(buf, r, idx) for buf, r in zip(info.buffers, mine)])
        store = self._guard(data_conds + self._store_predicate(info), store)
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
        op = info.op
        if isinstance(op, ScanOp):
            return self._make_scan(info)
        if isinstance(op, ExternOp):
            return self._make_extern(info)
        if isinstance(op, TensorComputeOp):
            return self._make_tensor_compute(info)
        st = info.stage
        leaves = st.leaf_iter_vars
        tensorized = [k for k, iv in enumerate(leaves) if st.iter_var_attrs.get(iv) is not None
                      and st.iter_var_attrs[iv].kind == "tensorize"]
        if tensorized:
            return self._make_tensorized(info, tensorized[0])
        if op.is_reduction:
            rt = self._thread_reduce_leaves(info)
            if rt:
                return self._make_cross_thread(info, rt)
        idx = self._store_index(info)
        data_conds, red_conds = self._guards(info)
        # the store predicate guards the stores themselves (it may name a thread
        # index of the kernel that no loop of this stage binds)
        pred = self._store_predicate(info)
        if not op.is_reduction:
            rw = self._load_rewriter()
            values = [rw.visit(substitute(b, info.root_value)) for b in info.body]
            stores = S.seq(*[S.BufferStore(buf, v, idx) for buf, v in zip(info.buffers, values)])
            return self._nest(info, leaves, self._guard(pred, stores), data_conds)
        init, update = self._reduce_update(info, idx)
        init, update = self._guard(pred, init), self._guard(pred, update)
        reduce_vars = {iv.var for iv in leaves if _is_reduce(iv)}
        if any(collect_vars(info.offset[iv]) & reduce_vars for iv in op.axis):
            # a loop fuses data-parallel and reduction axes: an element starts from
            # init at its first reduction step (every reduction index at 0)
            first = [E.EQ(info.offset[iv], const(0, info.offset[iv].dtype)) for iv in op.reduce_axis]
            cond = first[0]
            for c in first[1:]:
                cond = E.And(cond, c)
            body = S.seq(S.IfThenElse(self.ana.simplify(cond), init), update)
            return self._nest(info, leaves, body, data_conds + red_conds)
        return self._reduction_nest(info, init, update, data_conds, red_conds)

    def _reduction_nest(self, info, init, update, data_conds, red_conds):
        """The loops of a reduction: ``init`` before the first reduction loop (inside
        the data-parallel loops outside it), ``update`` innermost."""
        leaves = info.stage.leaf_iter_vars
        begin = next((k for k, iv in enumerate(leaves) if _is_reduce(iv)), len(leaves))
        common, rest = leaves[:begin], leaves[begin:]
        common_vars = {iv.var for iv in common}
        own_vars = {iv.var for iv in leaves}
        # guards on the loops common to init and update are placed once, around both
        inner_children = any(info.children.get(iv) for iv in rest)
        shared = [] if inner_children else [c for c in data_conds if (collect_vars(c) & own_vars) <= common_vars]
        init_conds = [c for c in data_conds if not any(c is x for x in shared)]
        init_nest = self._nest(info, [iv for iv in rest if not _is_reduce(iv)], init, init_conds, attach=False)
        update_nest = self._nest(info, rest, update, init_conds + red_conds)
        return self._nest(info, common, S.seq(init_nest, update_nest), shared)

    def _make_tensor_compute(self, info) -> S.Stmt:
        """A stage computed by a tensor intrinsic: its loops around the intrinsic's
        statement, whose buffers are bound to the regions it is applied to."""
        op, intrin = info.op, info.op.intrin
        n_in = len(intrin.inputs)
        bmap, vmap = {}, {}
        for k, (decl, t, region) in enumerate(zip(intrin.buffers[:n_in], op.inputs, op.input_regions)):
            real, base = self._whole_buffer(t, op.name)
            mins = [self.ana.simplify(substitute(r.min, info.root_value) - b) for r, b in zip(region, base)]
            self._bind_view(decl, real, mins, [r.extent for r in region], bmap, vmap,
                            f"tensor intrinsic {intrin.name!r} applied in {op.name!r}: input {k} ({t.name!r})")
        idx = self._store_index(info)
        nloop = op.schedulable_ndim
        for i, decl in enumerate(intrin.buffers[n_in:]):
            mins = list(idx[:nloop]) + [const(0, iv.var.dtype) for iv in op.axis[nloop:]]
            extents = [const(1, iv.var.dtype) for iv in op.axis[:nloop]] + [iv.dom.extent for iv in op.axis[nloop:]]
            self._bind_view(decl, info.buffers[i], mins, extents, bmap, vmap,
                            f"tensor intrinsic {intrin.name!r} applied in {op.name!r}: output {i}")
        vmap.update(zip(intrin.scalar_params, op.scalar_inputs))
        binder = _BindBuffers(bmap, vmap)
        data_conds, red_conds = self._guards(info)
        pred = self._store_predicate(info)
        if not op.reduce_axis:
            return self._nest(info, info.stage.leaf_iter_vars, self._guard(pred, binder.visit(intrin.body)),
                              data_conds)
        if intrin.reduce_init is None or intrin.reduce_update is None:
            raise LoweringError(f"tensor intrinsic {intrin.name!r} is applied over reduction axes in {op.name!r}; "
                                "its fcompute must return (body, reset, update)")
        init = self._guard(pred, binder.visit(intrin.reduce_init))
        update = self._guard(pred, binder.visit(intrin.reduce_update))
        return self._reduction_nest(info, init, update, data_conds, red_conds)

    def _make_tensorized(self, info, p) -> S.Stmt:
        """A stage whose loops from leaf ``p`` inward are computed by a tensor
        intrinsic (``s[T].tensorize``): check that they compute what the intrinsic
        does, bind its buffers to the regions they cover, and loop the rest."""
        st, op = info.stage, info.op
        leaves = st.leaf_iter_vars
        tiv = leaves[p]
        intrin = st.iter_var_attrs[tiv].tensor_intrin
        where = f"stage {op.name!r}, tensorize at {tiv.var.name!r} with {intrin.name!r}"
        outer, inner = leaves[:p], leaves[p:]
        inner_vars = {iv.var for iv in inner}
        for iv in inner:
            if info.children.get(iv):
                raise LoweringError(f"{where}: stage {info.children[iv][0].op.name!r} is attached inside the "
                                    "tensorized loops; attach it outside them")
            attr = st.iter_var_attrs.get(iv)
            if iv is not tiv and attr is not None and (attr.kind or attr.bind_thread is not None):
                raise LoweringError(f"{where}: loop {iv.var.name!r} inside the tensorized loops is annotated; "
                                    "the intrinsic computes those loops")
        fixed = set(self.loop_range) - inner_vars

        def span(e):
            lo = self._relax(e, fixed, upper=False)
            hi = self._relax(e, fixed, upper=True)
            if lo is None or hi is None or collect_vars(lo) & inner_vars:
                raise LoweringError(f"{where}: cannot bound the index `{e}` over the tensorized loops")
            return lo, self.ana.simplify(hi - lo + 1)

        data_conds, red_conds = self._guards(info)
        for c in data_conds + red_conds:
            if collect_vars(c) & inner_vars:
                raise LoweringError(f"{where}: a split inside the tensorized loops does not divide its axis "
                                    f"(guard `{c}`); the intrinsic needs whole blocks -- pick factors that divide")
        out_span = [span(info.root_value[iv.var]) for iv in op.axis]
        red_span = [span(info.root_value[iv.var]) for iv in op.reduce_axis]
        # the stage's axes the intrinsic's axes stand for: those the block spans
        iop = intrin.op
        mapped = [d for d, (_, e) in enumerate(out_span) if not E.is_const_int(e, 1)]
        rmapped = [d for d, (_, e) in enumerate(red_span) if not E.is_const_int(e, 1)]
        if len(mapped) != len(iop.axis) or len(rmapped) != len(iop.reduce_axis):
            raise LoweringError(f"{where}: the tensorized loops span {len(mapped)} output and {len(rmapped)} "
                                f"reduction dimension(s); the intrinsic computes {len(iop.axis)} and "
                                f"{len(iop.reduce_axis)}")
        vmap = {iv.var: lo for iv, (lo, _) in zip(op.axis, out_span)}
        vmap.update({iv.var: lo for iv, (lo, _) in zip(op.reduce_axis, red_span)})
        for d, a in zip(mapped, iop.axis):
            vmap[op.axis[d].var] = out_span[d][0] + a.var
        for d, a in zip(rmapped, iop.reduce_axis):
            vmap[op.reduce_axis[d].var] = red_span[d][0] + a.var
        # the regions of the inputs, in the order both computes read them
        body = [substitute(b, info.root_value) for b in info.body]
        reads = read_tensors(body)
        if len(reads) != len(intrin.inputs):
            raise LoweringError(f"{where}: the loops read {len(reads)} tensor(s), the intrinsic {len(intrin.inputs)}")
        regions = {}
        for t in reads:
            accesses = _accesses(body, {t})
            dims = []
            for d in range(len(t.shape)):
                spans = [span(idx[d]) for idx in accesses]
                lo = spans[0][0]
                hi = self.ana.simplify(spans[0][0] + spans[0][1] - 1)
                for a, e in spans[1:]:
                    lo = self.ana.simplify(E.Min(lo, a))
                    hi = self.ana.simplify(E.Max(hi, a + e - 1))
                dims.append((lo, self.ana.simplify(hi - lo + 1)))
            regions[t] = dims
        self._match_intrinsic(info, intrin, vmap, reads, regions, where)
        # bind the intrinsic's buffers to those regions
        bmap, bvmap = {}, {}
        for k, (decl, t) in enumerate(zip(intrin.buffers, reads)):
            real, base = self._whole_buffer(t, op.name)
            mins = [self.ana.simplify(lo - b) for (lo, _), b in zip(regions[t], base)]
            self._bind_view(decl, real, mins, [e for _, e in regions[t]], bmap, bvmap, f"{where}: input {k}")
        for i, decl in enumerate(intrin.buffers[len(reads):]):
            mins = [self.ana.simplify(lo - m) for (lo, _), m in zip(out_span, info.region_min)]
            self._bind_view(decl, info.buffers[i], mins, [e for _, e in out_span], bmap, bvmap, f"{where}: output {i}")
        binder = _BindBuffers(bmap, bvmap)
        pred = self._store_predicate(info)
        outer_reduce = [iv for iv in outer if _is_reduce(iv)]
        if op.is_reduction and outer_reduce:
            if intrin.reduce_init is None and intrin.reduce_update is None:
                raise LoweringError(f"{where}: reduction loops stay outside the tensorized ones, so the intrinsic "
                                    "must return (body, reset, update) to start and accumulate")
            update = self._guard(pred, binder.visit(intrin.reduce_update))
            init = self._guard(pred, binder.visit(intrin.reduce_init)) if intrin.reduce_init is not None else None
            if init is None:
                # no reset: the first step of the outer reduction runs the whole body
                first = [E.EQ(iv.var, const(0, iv.var.dtype)) for iv in outer_reduce]
                cond = first[0]
                for c in first[1:]:
                    cond = E.And(cond, c)
                stmt = S.IfThenElse(cond, self._guard(pred, binder.visit(intrin.body)), update)
                return self._nest(info, outer, stmt, data_conds + red_conds)
            saved = st.leaf_iter_vars
            try:  # the reduction nest over the outer loops only
                st.leaf_iter_vars = outer
                return self._reduction_nest(info, init, update, data_conds, red_conds)
            finally:
                st.leaf_iter_vars = saved
        return self._nest(info, outer, self._guard(pred, binder.visit(intrin.body)), data_conds + red_conds)

    def _match_intrinsic(self, info, intrin, vmap, reads, regions, where):
        """Raise unless the stage's expression over the tensorized block is the
        intrinsic's own (each read of input ``k`` becoming a read of the intrinsic's
        placeholder ``k`` at the index relative to the region)."""
        from ..tir.structural import structural_equal

        mine = intrinsic_form(info.body, vmap, reads, intrin, regions, self.ana.simplify)
        theirs = [self.ana.simplify(b) for b in intrin.op.body]

        def same(a, b):
            if isinstance(a, E.Reduce) and isinstance(b, E.Reduce):
                ca, cb = a.combiner, b.combiner
                cmap = dict(zip(cb.lhs + cb.rhs, ca.lhs + ca.rhs))
                return (len(a.source) == len(b.source)
                        and all(structural_equal(self.ana.simplify(x), self.ana.simplify(y))
                                for x, y in zip(a.source, b.source))
                        and all(structural_equal(x, substitute(y, cmap)) for x, y in zip(ca.result, cb.result))
                        and all(structural_equal(x, y) for x, y in zip(ca.identity_element, cb.identity_element)))
            return structural_equal(a, b)

        if len(mine) != len(theirs) or not all(same(a, b) for a, b in zip(mine, theirs)):
            raise LoweringError(f"{where}: the tensorized loops compute `{mine[0]}`, which is not what the "
                                f"intrinsic computes (`{theirs[0]}`)")

    def _whole_buffer(self, t, reader):
        """``(buffer, region_min)`` holding tensor ``t`` for a reader of regions of it."""
        if t in self.state_alias or isinstance(t.op, PlaceholderOp):
            buf = self._buffer_of(t, reader)
            return buf, tuple(const(0, s.dtype) for s in buf.shape)
        pinfo = self.info[self.sch.stage_map[t.op]]
        return pinfo.buffers[t.value_index], pinfo.region_min

    def _bind_view(self, decl, real, mins, extents, bmap, vmap, what):
        """Bind the intrinsic's buffer ``decl`` to the region ``mins``/``extents`` of
        ``real``: ``bmap[decl]`` becomes a view of ``real`` (same data, the region's
        offset, ``real``'s strides), ``vmap`` binds ``decl``'s variables."""
        if decl.scope not in ("", "global") and decl.scope != (real.scope or "global"):
            raise LoweringError(f"{what}: the intrinsic needs its buffer {decl.name!r} in {decl.scope!r} memory but "
                                f"{real.name!r} is in {real.scope or 'global'!r}; cache it there (cache_read/"
                                "cache_write) first")
        strides = list(real.strides) if real.strides else _compact_strides(real.shape)
        offset = getattr(real, "elem_offset", None) or const(0, "int32")
        for m, st in zip(mins, strides):
            offset = offset + m * st
        dims = list(zip(range(len(mins)), extents, strides))
        for k in range(len(dims) - 1, -1, -1):  # dimensions of extent 1 fold into the offset
            if len(dims) > len(decl.shape) and E.is_const_int(dims[k][1], 1):
                dims.pop(k)
        if len(dims) != len(decl.shape):
            raise LoweringError(f"{what}: the region has extents {[str(e) for e in extents]} but the intrinsic's "
                                f"buffer {decl.name!r} has shape {[str(x) for x in decl.shape]}")
        for (m, e, st), want in zip(dims, decl.shape):
            if isinstance(want, E.Var):
                vmap[want] = e
            elif not self.ana.can_prove(E.EQ(e, want)):
                raise LoweringError(f"{what}: the region has extents {[str(x) for x in extents]} but the "
                                    f"intrinsic's buffer {decl.name!r} has shape {[str(x) for x in decl.shape]}")
        offset = self.ana.simplify(offset)
        doff = getattr(decl, "elem_offset", None)
        if isinstance(doff, E.Var):
            vmap[doff] = offset
        elif not self.ana.can_prove(E.EQ(offset, doff if doff is not None else const(0, offset.dtype))):
            raise LoweringError(f"{what}: the region starts at element offset {offset} of {real.name!r}, but the "
                                f"intrinsic's buffer {decl.name!r} has a fixed offset; declare it with "
                                "offset_factor (default_buffer_params={'offset_factor': ...}) so it can be bound "
                                "to any region")
        view_strides = tuple(st for _, _, st in dims)
        if decl.strides:
            for want, got in zip(decl.strides, view_strides):
                if isinstance(want, E.Var):
                    vmap[want] = got
                elif not self.ana.can_prove(E.EQ(want, got)):
                    raise LoweringError(f"{what}: the region's strides {[str(x) for x in view_strides]} differ from "
                                        f"the strides of the intrinsic's buffer {decl.name!r}")
        elif not all(self.ana.can_prove(E.EQ(a, b)) or E.is_const_int(e, 1)  # a stride of one element is moot
                     for a, b, (_, e, _) in zip(view_strides, _compact_strides(decl.shape), dims)):
            raise LoweringError(f"{what}: the region of {real.name!r} is not contiguous (strides "
                                f"{[str(x) for x in view_strides]}), but the intrinsic's buffer {decl.name!r} is "
                                "compact; declare it with strides, e.g. strides=[te.var('s'), 1]")
        vmap[decl.data] = real.data
        # element [j0, j1, ...] of the intrinsic's buffer is element mins + (j along the
        # region's dimensions of extent > 1) of the real one
        bmap[decl] = (real, tuple(mins), tuple(d for d, _, _ in dims))

    def _make_scan(self, info) -> S.Stmt:
        """The scan's time loop, with the stages of its update inside."""
        op = info.op
        body = self._attached(info, op.scan_axis, None)
        if body is None:
            body = S.Evaluate(const(0))
        return self._loop(info, op.scan_axis, body)

    def _make_extern(self, info) -> S.Stmt:
        """The extern statement (a hybrid script's with its loop schedule applied), its
        declared buffers bound to the real ones."""
        op = info.op
        body = op.scheduled_body(info.stage)
        bmap, vmap = {}, {}
        pairs = [(decl, self._buffer_of(t, op.name), t.name) for decl, t in zip(op.input_placeholders, op.inputs)]
        pairs += [(decl, buf, buf.name) for decl, buf in zip(op.output_placeholders, info.buffers)]
        for decl, real, what in pairs:
            if len(decl.shape) != len(real.shape):
                raise LoweringError(f"extern {op.name!r}: buffer {decl.name!r} has {len(decl.shape)} dimensions but "
                                    f"tensor {what!r} has {len(real.shape)}")
            for d, (a, b) in enumerate(zip(decl.shape, real.shape)):
                if isinstance(a, E.Var) and a is not b:
                    vmap[a] = b
                elif not self.ana.can_prove(E.EQ(a, b)) and E.const_int_value(a) is not None \
                        and E.const_int_value(b) is not None:
                    raise LoweringError(f"extern {op.name!r}: buffer {decl.name!r} has shape {decl.shape} but tensor "
                                        f"{what!r} has shape {real.shape}")
            off = getattr(decl, "elem_offset", None)
            if isinstance(off, E.Var):
                vmap[off] = getattr(real, "elem_offset", None) or const(0, off.dtype)
            strides = tuple(getattr(decl, "strides", ()) or ())
            if strides:
                stride = const(1, "int32")
                for d in range(len(strides) - 1, -1, -1):
                    if isinstance(strides[d], E.Var):
                        vmap[strides[d]] = stride
                    stride = stride * real.shape[d]
            vmap[decl.data] = real.data
            bmap[decl] = real
        return _BindBuffers(bmap, vmap).visit(body)

    def _make_root(self, infos):
        roots = [i for i in infos if i.stage.attach_type == AttachType.ROOT]
        # a buffer is allocated around the first stage that writes it (a scan's
        # buffer around its init stages too)
        alloc_at = {}
        for k, info in enumerate(roots):
            if info.op in self.arg_bufs:
                continue
            owner = info.alias[0][0] if info.alias is not None else info
            if owner.op in self.arg_bufs:
                continue
            alloc_at.setdefault(owner, k)
        at = {}
        for owner, k in alloc_at.items():
            at.setdefault(k, []).append(owner)
        body = None
        for k in range(len(roots) - 1, -1, -1):
            stmt = self._make_stage(roots[k])
            body = stmt if body is None else S.seq(stmt, body)
            for owner in reversed(at.get(k, [])):
                body = self._allocate(owner, body)
        return body if body is not None else S.Evaluate(const(0))


class _BindBuffers(IRMutator):
    """Replace declared buffers (and their variables) by the ones they stand for.

    ``bmap[decl]`` is the real buffer, or ``(real, mins, dims)`` for a region of it:
    index ``j`` of ``decl`` is index ``mins`` plus ``j`` along ``dims`` of ``real``.
    """

    def __init__(self, bmap, vmap):
        self.bmap = bmap
        self.vmap = vmap

    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def _target(self, buf, idx):
        real = self.bmap.get(buf, buf)
        if not isinstance(real, tuple):
            return real, idx
        real, mins, dims = real
        full = list(mins)
        for d, j in zip(dims, idx):
            full[d] = full[d] + j
        return real, tuple(full)

    def visit_BufferLoad(self, e):
        idx = tuple(self.visit(i) for i in e.indices)
        buf, idx2 = self._target(e.buffer, idx)
        if buf is e.buffer and all(a is b for a, b in zip(idx2, e.indices)):
            return e
        return E.BufferLoad(buf, idx2)

    def visit_BufferStore(self, s):
        value = self.visit(s.value)
        idx = tuple(self.visit(i) for i in s.indices)
        buf, idx2 = self._target(s.buffer, idx)
        if buf is s.buffer and value is s.value and all(a is b for a, b in zip(idx2, s.indices)):
            return s
        return S.BufferStore(buf, value, idx2)

    def visit_Call(self, e):
        args = []
        for a in e.args:
            if isinstance(a, S.Buffer):
                real = self.bmap.get(a, a)
                if isinstance(real, tuple):
                    raise LoweringError(f"the tensor intrinsic passes its buffer {a.name!r} itself to `{e.op}`; "
                                        "pass an address instead (buffer.access_ptr('r'))")
                args.append(real)
            else:
                args.append(self.visit(a))
        if all(a is b for a, b in zip(args, e.args)):
            return e
        return E.Call(e.dtype, e.op, tuple(args))


def _thread_dominated(stage):
    """The axes of ``stage`` with a loop bound to a thread (or vectorized) among the
    loops they split into: their extents are the user's choice."""
    out = {iv for iv, a in stage.iter_var_attrs.items() if a.bind_thread is not None or a.kind == "vectorize"}
    for rel in reversed(stage.relations):
        if isinstance(rel, Split) and (rel.outer in out or rel.inner in out):
            out.add(rel.parent)
        elif isinstance(rel, Fuse) and rel.fused in out:
            out.update((rel.outer, rel.inner))
    return out


_DIVISIONS = (E.Div, E.Mod, E.FloorDiv, E.FloorMod)


def _check_body(op, body, sizes) -> None:
    """User mistakes in a stage's expression that would reach the compiled code as
    undefined behaviour: a variable nothing binds, an integer division by zero."""
    bound = {iv.var for iv in op.axis} | {iv.var for iv in op.reduce_axis} | sizes
    for expr in body:
        lets = []  # variables a Let inside the expression binds
        post_order_visit(expr, lambda n: lets.append(n.var) if isinstance(n, E.Let) else None)
        for v in sorted(collect_vars(expr) - bound - set(lets), key=lambda v: v.name):
            raise LoweringError(
                f"stage {op.name!r} uses {v.name!r}, which none of its loops binds and which is not the size of "
                f"an argument: a te.reduce_axis can only be used inside a reduction (te.sum(A[i, {v.name}], "
                f"axis={v.name})), and a te.var must size an argument tensor or be an argument itself")
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


def _compact_strides(shape):
    strides, st = [], const(1, "int32")
    for d in reversed(shape):
        strides.append(st)
        st = st * d
    return list(reversed(strides))


def _dt_cast(value, dtype):
    from ..tir.op import cast
    return value if value.dtype == dtype else cast(dtype, value)


def lower_schedule(sch: Schedule, args, name="main", binds=None, missing_output="warn") -> S.PrimFunc:
    """Lower ``sch`` to a PrimFunc taking ``args`` (tensors, or scalar variables) in
    that order; ``binds`` maps argument tensors to the buffers (``tir.decl_buffer``)
    they are accessed through.  An output missing from ``args`` is computed into a
    temporary buffer with a warning (``missing_output="warn"``) or is an error
    (``"error"``, what :func:`tecc.build` asks for)."""
    if not isinstance(sch, Schedule):
        raise LoweringError(f"expected a schedule from te.create_schedule, got {sch!r}")
    return Lowerer(sch, args, name, binds, missing_output).run()


def infer_bound(sch: Schedule) -> dict:
    """The range of every iteration variable of the schedule's stages."""
    if not isinstance(sch, Schedule):
        raise LoweringError(f"expected a schedule from te.create_schedule, got {sch!r}")
    return Lowerer(sch, None, "main").infer_bound()


def default_args(sch: Schedule) -> list:
    """The placeholders the schedule reads, then its outputs: the arguments of
    :func:`schedule_ops`, which has none given."""
    args = []
    for st in sch.stages:
        if isinstance(st.op, PlaceholderOp):
            state = any(isinstance(o.op, ScanOp) and st.op in [t.op for t in o.op.state_placeholder]
                        for o in sch.stages)
            if not state:
                args.append(st.op.output(0))
    for op in sch.outputs:
        cur = sch[op].op
        args += [cur.output(i) for i in range(cur.num_outputs) if cur.output(i) not in args]
    return args
