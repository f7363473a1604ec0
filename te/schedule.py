"""Schedules: how to compute.

``s = te.create_schedule(C.op)`` makes one :class:`Stage` per operation;
``s[C]`` returns the stage of ``C``.  Stage primitives (split, fuse, reorder, tile,
vectorize, parallel, unroll, bind, pragma, compute_at, compute_inline, compute_root,
storage_align, double_buffer) record *relations* between iteration variables and
attributes of them; nothing is rewritten until :func:`tecc.lower`.  The data-flow
primitives ``cache_read`` and ``cache_write`` add stages and rewrite which tensors
the existing stages read.

Every illegal use raises :class:`~tecc.ScheduleError` naming the stage and axis.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ScheduleError
from ..tir import expr as E
from ..tir.functor import IRMutator
from ..tir.op import const, convert
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor


# ----------------------------------------------------------------------------
# relations between iteration variables
# ----------------------------------------------------------------------------

@dataclass(eq=False)
class Split:
    """``parent = outer * factor + inner`` (``nparts`` fixes the outer extent instead)."""

    parent: E.IterVar
    outer: E.IterVar
    inner: E.IterVar
    factor: int | None
    nparts: int | None


@dataclass(eq=False)
class Fuse:
    """``fused = outer * extent(inner) + inner``."""

    outer: E.IterVar
    inner: E.IterVar
    fused: E.IterVar


@dataclass(eq=False)
class IterVarAttr:
    """What a leaf loop becomes: its kind, GPU binding and pragmas."""

    kind: str | None = None            # None | "vectorize" | "parallel" | "unroll"
    bind_thread: E.IterVar | None = None
    pragmas: list = field(default_factory=list)


_SCOPES = ("global", "shared", "local", "warp")


def _is_reduce(iv):
    return iv.iter_type == E.IterVarType.COMM_REDUCE


class Stage:
    """The schedule of one operation."""

    def __init__(self, op, schedule):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        if isinstance(op, ComputeOp):
            roots = list(op.axis) + list(op.reduce_axis)
        else:
            roots = []
        self.all_iter_vars = list(roots)
        self.leaf_iter_vars = list(roots)
        self.relations = []
        self.iter_var_attrs = {}
        self.attach_type = "root"      # "root" | "inline" | "scope"
        self.attach_stage = None
        self.attach_ivar = None
        self.scope = ""                # storage scope; "" means global
        self.is_output = False
        self.storage_align_ = {}       # root axis index -> (factor, offset)
        self.double_buffer_ = False
        self.is_cache = False

    # ---------------------------------------------------------------- helpers
    @property
    def name(self):
        return self.op.name

    def __repr__(self):
        return f"stage({self.name}, {type(self.op).__name__})"

    def _err(self, msg):
        return ScheduleError(f"stage {self.name!r}: {msg}")

    def _leaf_names(self):
        return ", ".join(iv.var.name for iv in self.leaf_iter_vars)

    def _check_compute(self, what):
        if not isinstance(self.op, ComputeOp):
            raise self._err(f"{what} applies to computed stages; {self.name!r} is a placeholder (an input)")

    def _as_ivar(self, iv, what):
        if isinstance(iv, E.IterVar):
            return iv
        if isinstance(iv, E.Var):
            for x in self.all_iter_vars:
                if x.var is iv:
                    return x
        raise self._err(f"{what} expects an axis (IterVar) of this stage, got {iv!r}")

    def _check_leaf(self, iv, what):
        if isinstance(self.op, PlaceholderOp):
            raise self._err(f"{what}: {self.name!r} is an input (te.placeholder) and has no loops to schedule; "
                            "schedule the stages computed from it instead")
        iv = self._as_ivar(iv, what)
        if iv in self.leaf_iter_vars:
            return iv
        if iv in self.all_iter_vars:
            repl = self._replacement(iv)
            raise self._err(
                f"{what}: axis {iv.var.name!r} was already replaced by an earlier split/fuse"
                f"{' (by ' + repl + ')' if repl else ''}; use the axes that split/fuse returned. "
                f"Current loop axes: {self._leaf_names()}")
        raise self._err(f"{what}: axis {iv.var.name!r} does not belong to this stage; "
                        f"its loop axes are: {self._leaf_names()}")

    def _replacement(self, iv):
        for r in self.relations:
            if isinstance(r, Split) and r.parent is iv:
                return f"{r.outer.var.name!r} and {r.inner.var.name!r}"
            if isinstance(r, Fuse) and iv in (r.outer, r.inner):
                return f"{r.fused.var.name!r}"
        return ""

    def _attr(self, iv):
        a = self.iter_var_attrs.get(iv)
        if a is None:
            a = self.iter_var_attrs[iv] = IterVarAttr()
        return a

    @staticmethod
    def _positive_int(value, what, stage):
        v = E.const_int_value(value) if isinstance(value, (E.IntImm, int)) else None
        if isinstance(value, bool) or v is None:
            raise stage._err(f"{what} must be a positive integer constant, got {value!r}")
        if v <= 0:
            raise stage._err(f"{what} must be positive, got {v}")
        return v

    # ------------------------------------------------------------- loop shape
    def split(self, parent, factor=None, nparts=None):
        """Split ``parent`` into ``outer`` and ``inner`` (inner extent ``factor``, or
        outer extent ``nparts``).  Extents that do not divide are guarded."""
        self._check_compute("split")
        parent = self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise self._err(f"split of axis {parent.var.name!r} needs exactly one of factor= or nparts=")
        if factor is not None:
            factor = self._positive_int(factor, f"split factor of axis {parent.var.name!r}", self)
        else:
            nparts = self._positive_int(nparts, f"split nparts of axis {parent.var.name!r}", self)
        name = parent.var.name
        outer = E.IterVar(None, E.Var(f"{name}.outer", parent.var.dtype), parent.iter_type)
        inner = E.IterVar(None, E.Var(f"{name}.inner", parent.var.dtype), parent.iter_type)
        self.relations.append(Split(parent, outer, inner, factor, nparts))
        self.all_iter_vars += [outer, inner]
        k = self.leaf_iter_vars.index(parent)
        self.leaf_iter_vars[k:k + 1] = [outer, inner]
        return outer, inner

    def fuse(self, *args):
        """Fuse consecutive loop axes (outermost first) into one."""
        self._check_compute("fuse")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            raise self._err("fuse needs at least one axis")
        ivs = [self._check_leaf(iv, "fuse") for iv in args]
        if len(ivs) == 1:
            return ivs[0]
        pos = [self.leaf_iter_vars.index(iv) for iv in ivs]
        for a, b, x, y in zip(pos, pos[1:], ivs, ivs[1:]):
            if b != a + 1:
                raise self._err(
                    f"fuse: axes {x.var.name!r} and {y.var.name!r} are not adjacent loops (outer first); "
                    f"reorder them first. Current loop axes: {self._leaf_names()}")
        kinds = {_is_reduce(iv) for iv in ivs}
        if len(kinds) > 1:
            raise self._err("fuse: cannot fuse a reduction axis with a data-parallel axis")
        fused = ivs[0]
        for inner in ivs[1:]:
            name = f"{fused.var.name}.{inner.var.name}.fused"
            new = E.IterVar(None, E.Var(name, fused.var.dtype), fused.iter_type)
            self.relations.append(Fuse(fused, inner, new))
            self.all_iter_vars.append(new)
            k = self.leaf_iter_vars.index(fused)
            self.leaf_iter_vars[k:k + 2] = [new]
            fused = new
        return fused

    def reorder(self, *args):
        """Put the given axes in this order, in the loop positions they occupy."""
        self._check_compute("reorder")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        ivs = []
        for iv in args:
            iv = self._check_leaf(iv, "reorder")
            if iv in ivs:
                raise self._err(f"reorder: axis {iv.var.name!r} is given twice")
            ivs.append(iv)
        positions = sorted(self.leaf_iter_vars.index(iv) for iv in ivs)
        for p, iv in zip(positions, ivs):
            self.leaf_iter_vars[p] = iv

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """Split two axes and reorder to ``x_outer, y_outer, x_inner, y_inner``."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    # ------------------------------------------------------- loop annotations
    def _annotate(self, iv, kind):
        iv = self._check_leaf(iv, kind)
        if kind in ("vectorize", "parallel") and _is_reduce(iv):
            raise self._err(f"cannot {kind} reduction axis {iv.var.name!r}: its iterations depend on each other; "
                            f"{kind} a data-parallel axis instead (or rfactor the reduction)")
        attr = self._attr(iv)
        if attr.bind_thread is not None:
            raise self._err(f"cannot {kind} axis {iv.var.name!r}: it is bound to {attr.bind_thread.thread_tag}")
        if attr.kind is not None and attr.kind != kind:
            raise self._err(f"axis {iv.var.name!r} is already marked {attr.kind}; it cannot also be {kind}d")
        attr.kind = kind

    def vectorize(self, var):
        """Run axis ``var`` as SIMD lanes (innermost data-parallel loops)."""
        self._annotate(var, "vectorize")

    def parallel(self, var):
        """Run the iterations of axis ``var`` on several CPU threads."""
        self._annotate(var, "parallel")

    def unroll(self, var):
        """Unroll axis ``var`` (fully when its extent is a small constant)."""
        self._annotate(var, "unroll")

    def pragma(self, var, pragma_type, pragma_value=None):
        """Attach pragma ``pragma_type`` (e.g. ``"unroll"``) to loop ``var``."""
        iv = self._check_leaf(var, "pragma")
        if not isinstance(pragma_type, str) or not pragma_type:
            raise self._err(f"pragma on axis {iv.var.name!r}: the pragma type must be a non-empty string")
        value = convert(pragma_value) if pragma_value is not None else const(1)
        self._attr(iv).pragmas.append((pragma_type, value))

    def bind(self, ivar, thread_ivar):
        """Bind loop axis ``ivar`` to a GPU index (``te.thread_axis("threadIdx.x")``)."""
        iv = self._check_leaf(ivar, "bind")
        if not isinstance(thread_ivar, E.IterVar) or not thread_ivar.thread_tag:
            raise self._err(f"bind of axis {iv.var.name!r}: the target must be te.thread_axis(...), got {thread_ivar!r}")
        attr = self._attr(iv)
        if attr.kind is not None:
            raise self._err(f"bind of axis {iv.var.name!r}: the axis is already marked {attr.kind}")
        if attr.bind_thread is not None and attr.bind_thread is not thread_ivar:
            raise self._err(f"axis {iv.var.name!r} is already bound to {attr.bind_thread.thread_tag}")
        if _is_reduce(iv) and not thread_ivar.thread_tag.startswith("threadIdx"):
            raise self._err(f"reduction axis {iv.var.name!r} can only be bound to a threadIdx axis "
                            f"(a cross-thread reduction), not {thread_ivar.thread_tag}")
        for other, a in self.iter_var_attrs.items():
            if other is not iv and a.bind_thread is not None and a.bind_thread is thread_ivar:
                raise self._err(f"{thread_ivar.thread_tag} is already bound to axis {other.var.name!r} of this "
                                f"stage; bind axis {iv.var.name!r} to another thread axis")
        attr.bind_thread = thread_ivar

    def env_threads(self, threads):  # pragma: no cover - classic API kept for completeness
        raise self._err("env_threads is not supported; bind axes to thread axes instead")

    # ------------------------------------------------------------ attachment
    def compute_at(self, parent, scope):
        """Compute this stage inside loop ``scope`` of stage ``parent``."""
        self._check_compute("compute_at")
        if not isinstance(parent, Stage):
            raise self._err(f"compute_at expects a stage (s[T]) as parent, got {parent!r}")
        if parent is self:
            raise self._err("compute_at: a stage cannot be attached to itself")
        if self.is_output:
            raise self._err("compute_at: an output stage must be computed at root")
        iv = parent._check_leaf(scope, f"compute_at({self.name!r})")
        if not self.schedule._reads_transitively(parent.op, self.op):
            raise self._err(
                f"compute_at: stage {parent.name!r} does not consume {self.name!r} (directly or through "
                f"other stages), so there is no loop of it where {self.name!r} would be needed")
        self.attach_type = "scope"
        self.attach_stage = parent
        self.attach_ivar = iv

    def compute_inline(self):
        """Substitute this stage's expression into every consumer (no buffer)."""
        self._check_compute("compute_inline")
        if self.is_output:
            raise self._err("compute_inline: an output stage cannot be inlined")
        if self.op.reduce_axis:
            raise self._err("compute_inline: a reduction cannot be inlined; compute_at it into its consumer instead")
        if self.op.num_outputs != 1:
            raise self._err("compute_inline: a stage with several outputs cannot be inlined")
        self.attach_type = "inline"
        self.attach_stage = self.attach_ivar = None

    def compute_root(self):
        """Compute this stage in its own loop nest at the top of the function."""
        self._check_compute("compute_root")
        self.attach_type = "root"
        self.attach_stage = self.attach_ivar = None

    def set_scope(self, scope):
        """Store this stage's result in memory ``scope`` (global/shared/local)."""
        if scope not in _SCOPES:
            raise self._err(f"unknown storage scope {scope!r}; use one of {_SCOPES}")
        self.scope = scope

    def storage_align(self, axis, factor, offset):
        """Pad the stride of dimension ``axis`` so that ``stride % factor == offset``."""
        self._check_compute("storage_align")
        iv = self._as_ivar(axis, "storage_align")
        if iv not in self.op.axis:
            raise self._err(f"storage_align: {iv.var.name!r} is not a dimension of {self.name!r}; "
                            f"use one of {[x.var.name for x in self.op.axis]}")
        factor = self._positive_int(factor, "storage_align factor", self)
        off = E.const_int_value(offset)
        if off is None or not 0 <= off < factor:
            raise self._err(f"storage_align offset must be an integer in [0, {factor}), got {offset!r}")
        self.storage_align_[self.op.axis.index(iv)] = (factor, off)

    def double_buffer(self):
        """Double-buffer this (shared-memory) stage across its attach loop."""
        self._check_compute("double_buffer")
        self.double_buffer_ = True


# ----------------------------------------------------------------------------
# the schedule
# ----------------------------------------------------------------------------

class Schedule:
    """All stages of a computation, in producer-before-consumer order."""

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.stages = []
        self.stage_map = {}
        for op in post_dfs_order(self.outputs):
            st = Stage(op, self)
            self.stages.append(st)
            self.stage_map[op] = st
        for op in self.outputs:
            self.stage_map[op].is_output = True

    def __getitem__(self, key):
        op = key.op if isinstance(key, Tensor) else key
        st = self.stage_map.get(op)
        if st is None:
            name = getattr(op, "name", repr(op))
            raise ScheduleError(f"tensor/operation {name!r} is not part of this schedule; "
                                "create_schedule covers the outputs given and everything they read")
        return st

    def __contains__(self, key):
        op = key.op if isinstance(key, Tensor) else key
        return op in self.stage_map

    def __iter__(self):
        return iter(self.stages)

    def stage_of(self, tensor):
        return self[tensor]

    # -------------------------------------------------------------- queries
    def _reads_transitively(self, consumer_op, producer_op):
        target = producer_op
        seen = set()
        stack = [consumer_op]
        while stack:
            op = stack.pop()
            for t in op.input_tensors:
                cur = self.stage_map[t.op].op if t.op in self.stage_map else t.op
                if cur is target or t.op is target:
                    return True
                if id(cur) not in seen:
                    seen.add(id(cur))
                    stack.append(cur)
        return False

    def normalize(self):  # classic API; lowering does what is needed
        return self

    # ------------------------------------------------------------ data flow
    def _replace_dataflow(self, vmap, skip=()):
        """Make every stage (but ``skip``) read ``vmap[t]`` instead of tensor ``t``;
        ops that change are replaced and their outputs remapped in turn."""
        vmap = dict(vmap)
        for st in self.stages:
            if st in skip or not isinstance(st.op, ComputeOp):
                continue
            new_body = _ReplaceTensors(vmap).run(st.op.body)
            if new_body is not None:
                old = st.op
                new = ComputeOp(old.name, old.tag, old.attrs, old.axis, new_body, old.reduce_axis)
                st.op = new
                self.stage_map[new] = st
                for i in range(old.num_outputs):
                    vmap[old.output(i)] = new.output(i)

    def cache_read(self, tensor, scope, readers):
        """Copy ``tensor`` into memory ``scope`` for the given reader stages.

        Returns the new tensor; its stage can be attached with ``compute_at``.
        """
        if scope not in _SCOPES:
            raise ScheduleError(f"cache_read of {tensor.name!r}: unknown scope {scope!r}; use one of {_SCOPES}")
        if not isinstance(tensor, Tensor):
            raise ScheduleError(f"cache_read expects a tensor, got {tensor!r}")
        if isinstance(readers, (Tensor, Operation)):
            readers = [readers]
        src_stage = self[tensor]
        cur = src_stage.op.output(tensor.value_index)
        reader_stages = []
        for r in readers:
            st = self[r]
            if cur not in st.op.input_tensors:
                raise ScheduleError(f"cache_read of {tensor.name!r}: stage {st.name!r} does not read it directly")
            reader_stages.append(st)
        if not reader_stages:
            raise ScheduleError(f"cache_read of {tensor.name!r}: give at least one reader stage")
        shape = cur.shape
        names = [f"ax{i}" for i in range(len(shape))]
        axis = tuple(E.IterVar(E.Range(const(0, s.dtype), s), E.Var(n, s.dtype)) for n, s in zip(names, shape))
        body = cur[tuple(iv.var for iv in axis)] if shape else cur[()]
        cache_op = ComputeOp(f"{cur.name}.{scope}", "", None, axis, [body])
        cache = cache_op.output(0)
        st = Stage(cache_op, self)
        st.scope = scope
        st.is_cache = True
        self.stages.insert(self.stages.index(src_stage) + 1, st)
        self.stage_map[cache_op] = st
        for rs in reader_stages:
            new_body = _ReplaceTensors({cur: cache}).run(rs.op.body)
            old = rs.op
            new = ComputeOp(old.name, old.tag, old.attrs, old.axis, new_body, old.reduce_axis)
            rs.op = new
            self.stage_map[new] = rs
            self._replace_dataflow({old.output(i): new.output(i) for i in range(old.num_outputs)}, skip={rs, st})
        return cache

    def cache_write(self, tensor, scope):
        """Compute ``tensor`` into a new stage in memory ``scope``; the original stage
        becomes a copy out of it.  Must come before other primitives on that stage."""
        if scope not in _SCOPES:
            raise ScheduleError(f"cache_write of {tensor.name!r}: unknown scope {scope!r}; use one of {_SCOPES}")
        tensors = tensor if isinstance(tensor, (list, tuple)) else [tensor]
        st = self[tensors[0]]
        op = st.op
        if not isinstance(op, ComputeOp):
            raise ScheduleError(f"cache_write: {st.name!r} is a placeholder; only computed tensors can be cached")
        if st.relations or st.iter_var_attrs or st.leaf_iter_vars != st.all_iter_vars:
            raise ScheduleError(f"cache_write of {st.name!r} must come before split/fuse/reorder/annotations on "
                                "that stage; create the cache first, then schedule both stages")
        if len(tensors) != op.num_outputs:
            raise ScheduleError(f"cache_write of {st.name!r}: pass all {op.num_outputs} outputs of the operation together")
        new_axis = tuple(E.IterVar(iv.dom, E.Var(iv.var.name + ".c", iv.var.dtype), iv.iter_type) for iv in op.axis)
        vmap = {old.var: new.var for old, new in zip(op.axis, new_axis)}
        from ..tir.functor import substitute
        cache_body = [substitute(b, vmap) for b in op.body]
        cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, op.attrs, new_axis, cache_body, op.reduce_axis)
        idx = tuple(iv.var for iv in op.axis)
        copy_body = [cache_op.output(i)[idx] for i in range(op.num_outputs)]
        copy_op = ComputeOp(op.name, op.tag, op.attrs, op.axis, copy_body, ())
        cst = Stage(cache_op, self)
        cst.scope = scope
        cst.is_cache = True
        self.stages.insert(self.stages.index(st), cst)
        self.stage_map[cache_op] = cst
        # the original stage now copies out of the cache
        st.op = copy_op
        st.all_iter_vars = list(op.axis)
        st.leaf_iter_vars = list(op.axis)
        self.stage_map[copy_op] = st
        self._replace_dataflow({op.output(i): copy_op.output(i) for i in range(op.num_outputs)}, skip={st, cst})
        outs = tuple(cache_op.output(i) for i in range(op.num_outputs))
        return outs if isinstance(tensor, (list, tuple)) else outs[0]

    def rfactor(self, tensor, axis, factor_axis=0):
        """Factor a reduction: partial results over ``axis`` (a reduction loop of the
        stage) become a new tensor with ``axis`` as an extra dimension at position
        ``factor_axis``; the original stage then reduces that dimension.

        Returns the new tensor (a tuple for several outputs).
        """
        from ..tir.arith import Analyzer
        from ..tir.functor import substitute

        st = self[tensor]
        op = st.op
        if not isinstance(op, ComputeOp) or not op.reduce_axis:
            raise ScheduleError(f"rfactor: stage {st.name!r} is not a reduction")
        axis = st._check_leaf(axis, "rfactor")
        if not _is_reduce(axis):
            raise st._err(f"rfactor: axis {axis.var.name!r} is not a reduction axis")
        for rel in st.relations:
            touched = [rel.parent] if isinstance(rel, Split) else [rel.outer, rel.inner]
            if not all(_is_reduce(iv) for iv in touched):
                raise st._err("rfactor must come before split/fuse of the data-parallel axes")
        if not 0 <= factor_axis <= len(op.axis):
            raise st._err(f"rfactor: factor_axis must be in [0, {len(op.axis)}], got {factor_axis}")
        ana = Analyzer()
        # extents of every reduction iteration variable, and each root's index in leaves
        ext = {iv: iv.dom.extent for iv in op.reduce_axis}
        for rel in st.relations:
            if isinstance(rel, Split):
                e = ext[rel.parent]
                if rel.factor is not None:
                    ext[rel.outer] = ana.simplify((e + rel.factor - 1) // rel.factor)
                    ext[rel.inner] = const(rel.factor, e.dtype)
                else:
                    ext[rel.outer] = const(rel.nparts, e.dtype)
                    ext[rel.inner] = ana.simplify((e + rel.nparts - 1) // rel.nparts)
            else:
                ext[rel.fused] = ana.simplify(ext[rel.outer] * ext[rel.inner])
        leaves = [iv for iv in st.leaf_iter_vars if _is_reduce(iv)]
        new_of = {}
        for iv in leaves:
            kind = E.IterVarType.DATA_PAR if iv is axis else E.IterVarType.COMM_REDUCE
            name = iv.var.name + (".v" if iv is axis else "")
            new_of[iv] = E.IterVar(E.Range(const(0, ext[iv].dtype), ext[iv]), E.Var(name, iv.var.dtype), kind)
        off = {iv: new_of[iv].var for iv in leaves}
        for rel in reversed(st.relations):
            if isinstance(rel, Split):
                off[rel.parent] = off[rel.outer] * ext[rel.inner] + off[rel.inner]
            else:
                off[rel.outer] = off[rel.fused] // ext[rel.inner]
                off[rel.inner] = off[rel.fused] % ext[rel.inner]
        vmap, cond = {}, None
        for iv in op.reduce_axis:
            o = ana.simplify(off[iv])
            vmap[iv.var] = ana.simplify(iv.dom.min + o)
            if not ana.can_prove(E.LT(o, iv.dom.extent)):
                c = E.LT(o, iv.dom.extent)
                cond = c if cond is None else E.And(cond, c)
        data_axis = [E.IterVar(iv.dom, E.Var(iv.var.name, iv.var.dtype), E.IterVarType.DATA_PAR) for iv in op.axis]
        vmap.update({old.var: new.var for old, new in zip(op.axis, data_axis)})
        rf_axis = list(data_axis)
        rf_axis.insert(factor_axis, new_of[axis])
        rest = tuple(new_of[iv] for iv in leaves if iv is not axis)
        first = op.body[0]
        source = tuple(substitute(x, vmap) for x in first.source)
        where = substitute(first.condition, vmap)
        if cond is not None:
            where = cond if E.is_const_int(where, 1) else E.And(where, cond)
        rf_body = [E.Reduce(first.combiner, source, rest, where, i) for i in range(op.num_outputs)]
        rf_op = ComputeOp(f"{op.name}.rf", op.tag, op.attrs, rf_axis, rf_body, rest)
        # the original stage now reduces the factored dimension
        rk = E.IterVar(E.Range(const(0, ext[axis].dtype), ext[axis]), E.Var(axis.var.name + ".v", axis.var.dtype),
                       E.IterVarType.COMM_REDUCE)
        idx = [iv.var for iv in op.axis]
        idx.insert(factor_axis, rk.var)
        loads = tuple(rf_op.output(i)[tuple(idx)] for i in range(op.num_outputs))
        new_body = [E.Reduce(first.combiner, loads, (rk,), const(True), i) for i in range(op.num_outputs)]
        new_op = ComputeOp(op.name, op.tag, op.attrs, op.axis, new_body, (rk,))
        rf_stage = Stage(rf_op, self)
        self.stages.insert(self.stages.index(st), rf_stage)
        self.stage_map[rf_op] = rf_stage
        st.op = new_op
        self.stage_map[new_op] = st
        st.relations = []
        st.all_iter_vars = list(op.axis) + [rk]
        st.leaf_iter_vars = list(op.axis) + [rk]
        st.iter_var_attrs = {iv: a for iv, a in st.iter_var_attrs.items() if iv in op.axis}
        self._replace_dataflow({op.output(i): new_op.output(i) for i in range(op.num_outputs)},
                               skip={st, rf_stage})
        outs = tuple(rf_op.output(i) for i in range(op.num_outputs))
        return outs if op.num_outputs > 1 else outs[0]


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


def post_dfs_order(ops):
    """Operations reachable from ``ops``, producers before consumers."""
    order, seen = [], set()

    def visit(op):
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in ops:
        visit(op)
    return order


def create_schedule(ops):
    """Create a schedule for the output operation(s) ``ops``."""
    if not isinstance(ops, (list, tuple)):
        ops = [ops]
    out = []
    for op in ops:
        if isinstance(op, Tensor):
            op = op.op
        if not isinstance(op, Operation):
            raise ScheduleError(f"create_schedule expects operations (e.g. C.op), got {op!r}")
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(f"create_schedule: {op.name!r} is a placeholder; pass the computed output (C.op)")
        out.append(op)
    return Schedule(out)
