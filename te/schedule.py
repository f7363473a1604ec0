"""Schedules: how to compute.

``s = te.create_schedule(C.op)`` makes one :class:`Stage` per operation;
``s[C]`` returns the stage of ``C``.  Stage primitives (split, fuse, reorder, tile,
vectorize, parallel, unroll, bind, pragma, compute_at, compute_inline, compute_root,
storage_align, double_buffer, and Halide's align_extent) record *relations* between
iteration variables and
attributes of them; nothing is rewritten until :func:`tecc.lower`.  The data-flow
primitives ``cache_read`` and ``cache_write`` add stages and rewrite which tensors
the existing stages read.

Every illegal use raises :class:`~tecc.ScheduleError` naming the stage and axis.
"""
from __future__ import annotations

import copy as _copy
import functools
from dataclasses import dataclass, field
from enum import IntEnum

from ..errors import ScheduleError
from ..tir import expr as E
from ..tir.dtype import is_integer
from ..tir.op import const, convert
from .graph import (  # noqa: F401  (TVM has them in te.schedule)
    CreateAttachPath, CreateReadGraph, PostDFSOrder, ScanFixPointAnalysis, ScanGetBody, post_dfs_order, scan_body,
)
from .tensor import ComputeOp, ExternOp, Operation, PlaceholderOp, ScanOp, Tensor, TensorComputeOp


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
class Singleton:
    """A new loop of extent 1 that maps to no axis (``fuse()`` of no axes, as for a
    rank-0 output)."""

    iter: E.IterVar


@dataclass(eq=False)
class IterVarAttr:
    """What a leaf loop becomes: its kind, GPU binding and pragmas."""

    kind: str | None = None            # None | "vectorize" | "parallel" | "unroll" | "tensorize"
    bind_thread: E.IterVar | None = None
    pragmas: list = field(default_factory=list)
    tensor_intrin: object = None       # the TensorIntrin of a "tensorize" loop
    prefetch: tuple = ()               # ((Tensor, offset), ...) of Stage.prefetch

    # TVM's view of the same facts
    @property
    def iter_type(self):
        """The loop's kind as TVM's IterVar type code (``IterVar.Unrolled``...)."""
        return {"unroll": E.IterVarType.UNROLLED, "vectorize": E.IterVarType.VECTORIZED,
                "parallel": E.IterVarType.PARALLELIZED, "tensorize": E.IterVar.Tensorized}.get(
            self.kind, E.IterVarType.THREAD_INDEX if self.bind_thread is not None else E.IterVarType.DATA_PAR)

    @property
    def pragma_keys(self):
        return [E.StringImm(k) for k, _ in self.pragmas]

    @property
    def pragma_values(self):
        return [v for _, v in self.pragmas]


_SCOPES = ("global", "shared", "local", "warp", "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")


class AttachType(IntEnum):
    """Where a stage is computed (TVM's codes, so ``s[T].attach_type == 2`` reads
    as in TVM)."""

    ROOT = 1             #: its own loop nest at the top of the function (TVM's kGroupRoot)
    INLINE = 2           #: substituted into its consumers
    INLINED_ALREADY = 3  #: TVM's mark after inlining has been done
    SCOPE = 4            #: inside a loop of another stage (compute_at)
    SCAN_UPDATE = 5      #: inside the time loop of a scan (a stage of the scan's update)


def _recorded(name):
    """Record the schedule after primitive ``name`` when the PassContext option
    ``te.keep_schedule_record`` is on (``Schedule.schedule_record`` /
    ``primitive_record``, as in TVM)."""

    def wrap(fn):
        @functools.wraps(fn)
        def primitive(self, *args, **kwargs):
            out = fn(self, *args, **kwargs)
            sch = self if isinstance(self, Schedule) else self.schedule
            if sch is not None and sch._keep_record:
                sch._record(name)
            return out
        return primitive
    return wrap


def _is_reduce(iv):
    return iv.iter_type == E.IterVarType.COMM_REDUCE


def _roots_of(stage, iv):
    """The root axes that loop ``iv`` of ``stage`` is made of."""
    out, stack = [], [iv]
    while stack:
        x = stack.pop()
        for rel in stage.relations:
            if isinstance(rel, Split) and x in (rel.outer, rel.inner):
                stack.append(rel.parent)
                break
            if isinstance(rel, Fuse) and x is rel.fused:
                stack += [rel.outer, rel.inner]
                break
        else:
            out.append(x)
    return out


def _is_reduce_only(stage, iv):
    """True if loop ``iv`` is made of reduction axes only (no fused data axis)."""
    return all(_is_reduce(r) for r in _roots_of(stage, iv))


class Stage:
    """The schedule of one operation."""

    def __init__(self, op, schedule):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        if isinstance(op, (ComputeOp, TensorComputeOp)):
            roots = list(op.axis) + list(op.reduce_axis)
        elif isinstance(op, ScanOp):
            roots = [op.scan_axis] + list(op.spatial_axis_)
        elif isinstance(op, ExternOp):
            roots = list(op.axis)  # a hybrid script's loops (te.extern has none)
        else:
            roots = []
        self.all_iter_vars = list(roots)
        # opaque axes (a scan's spatial axes) are not loops of the stage
        self.leaf_iter_vars = [iv for iv in roots if iv.iter_type != E.IterVarType.OPAQUE]
        self.relations = []
        self.iter_var_attrs = {}
        self.attach_type = AttachType.ROOT
        self.attach_stage = None
        self.attach_ivar = None
        self.store_predicate = None
        self.group = None              # the scan stage whose update this stage belongs to, or the
                                       # StageGroup (s.create_group) it was put in
        self.scope = ""                # storage scope; "" means global
        self.is_output = False
        self.storage_align_ = {}       # root axis index -> (factor, offset)
        self.align_extent_ = {}        # root axis index -> factor (align_extent)
        self.double_buffer_ = False
        self.register_prefetch_ = False
        self.is_cache = False

    # ---------------------------------------------------------------- helpers
    @property
    def name(self):
        return self.op.name

    def __repr__(self):
        return f"stage({self.name}, {type(self.op).__name__})"

    def _err(self, msg):
        return ScheduleError(f"stage {self.name!r}: {msg}")

    @property
    def scan_group(self):
        """The scan stage whose time loop computes this stage, or None (through
        any groups of ``s.create_group`` in between)."""
        g = self.group
        while isinstance(g, StageGroup):
            g = g.group
        return g

    def _leaf_names(self):
        return ", ".join(iv.var.name for iv in self.leaf_iter_vars)

    def _check_compute(self, what, intrinsic_ok=True):
        if isinstance(self.op, TensorComputeOp) and intrinsic_ok:
            return
        if what in ("split", "fuse", "reorder") and isinstance(self.op, ExternOp) and self.op.axis:
            return  # the loops of a hybrid script: lowering applies these to its statement
        if not isinstance(self.op, ComputeOp):
            kind = {PlaceholderOp: "a placeholder (an input)", ScanOp: "a scan (te.scan)",
                    ExternOp: "an extern stage (te.extern)",
                    TensorComputeOp: "computed by a tensor intrinsic (it has no expression)"}.get(
                        type(self.op), type(self.op).__name__)
            if isinstance(self.op, ExternOp) and getattr(self.op, "axis", ()):
                kind = "a hybrid script (te.hybrid)"
            raise self._err(f"{what} applies to computed stages (te.compute); {self.name!r} is {kind}")

    def _check_loops(self, what):
        """Loop primitives apply to te.compute stages and to a scan's time axis."""
        if not isinstance(self.op, ScanOp):
            self._check_compute(what)

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

    def _split_size(self, value, what):
        """A split's factor/nparts: a positive integer, or an integer expression
        (``te.var("s")``: a symbolic tile size, bound when the kernel runs; a tail the
        size does not divide is guarded)."""
        if isinstance(value, E.PrimExpr) and not isinstance(value, E.IntImm):
            if not str(value.dtype).startswith(("int", "uint")):
                raise self._err(f"{what} must be an integer, got `{value}` of type {value.dtype}")
            return value
        return self._positive_int(value, what, self)

    def is_scheduled(self):
        """True once a primitive changed this stage's loops or where it is computed."""
        return bool(self.relations) or self.attach_type not in (AttachType.ROOT, AttachType.SCAN_UPDATE) \
            or self.leaf_iter_vars != [iv for iv in self.all_iter_vars if iv.iter_type != E.IterVarType.OPAQUE]

    # ------------------------------------------------------------- loop shape
    @_recorded("split")
    def split(self, parent, factor=None, nparts=None):
        """Split ``parent`` into ``outer`` and ``inner`` (inner extent ``factor``, or
        outer extent ``nparts``).  Extents that do not divide are guarded."""
        self._check_compute("split")
        parent = self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise self._err(f"split of axis {parent.var.name!r} needs exactly one of factor= or nparts=")
        if factor is not None:
            factor = self._split_size(factor, f"split factor of axis {parent.var.name!r}")
        else:
            nparts = self._split_size(nparts, f"split nparts of axis {parent.var.name!r}")
        name = parent.var.name
        outer = E.IterVar(None, E.Var(f"{name}.outer", parent.var.dtype), parent.iter_type)
        inner = E.IterVar(None, E.Var(f"{name}.inner", parent.var.dtype), parent.iter_type)
        self.relations.append(Split(parent, outer, inner, factor, nparts))
        self.all_iter_vars += [outer, inner]
        k = self.leaf_iter_vars.index(parent)
        self.leaf_iter_vars[k:k + 1] = [outer, inner]
        return outer, inner

    @_recorded("fuse")
    def fuse(self, *args):
        """Fuse consecutive loop axes (outermost first) into one.

        Fusing a reduction axis with a data-parallel one gives a reduction axis.
        ``fuse()`` with no axes adds an outermost loop of extent 1 (useful to split
        or bind the loop nest of a rank-0 output)."""
        self._check_compute("fuse")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            single = E.IterVar(E.Range(const(0), const(1)), E.Var("singleton", "int32"), E.IterVarType.DATA_PAR)
            self.relations.append(Singleton(single))
            self.all_iter_vars.append(single)
            self.leaf_iter_vars.insert(0, single)
            return single
        ivs = [self._check_leaf(iv, "fuse") for iv in args]
        if len(ivs) == 2 and self.leaf_iter_vars.index(ivs[0]) == self.leaf_iter_vars.index(ivs[1]) + 1:
            ivs.reverse()  # (inner, outer) of two adjacent loops: as TVM, fuse them outer first
        if len(ivs) == 1:
            return ivs[0]
        pos = [self.leaf_iter_vars.index(iv) for iv in ivs]
        for a, b, x, y in zip(pos, pos[1:], ivs, ivs[1:]):
            if b != a + 1:
                raise self._err(
                    f"fuse: axes {x.var.name!r} and {y.var.name!r} are not adjacent loops (outer first); "
                    f"reorder them first. Current loop axes: {self._leaf_names()}")
        fused = ivs[0]
        for inner in ivs[1:]:
            name = f"{fused.var.name}.{inner.var.name}.fused"
            kind = max(fused.iter_type, inner.iter_type)  # a reduction part makes a reduction loop
            new = E.IterVar(None, E.Var(name, fused.var.dtype), kind)
            self.relations.append(Fuse(fused, inner, new))
            self.all_iter_vars.append(new)
            k = self.leaf_iter_vars.index(fused)
            self.leaf_iter_vars[k:k + 2] = [new]
            fused = new
        return fused

    @_recorded("reorder")
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

    @_recorded("tensorize")
    def tensorize(self, var, tensor_intrin):
        """Compute the loops from ``var`` inward with ``tensor_intrin``
        (``te.decl_tensor_intrin``): they must compute what the intrinsic's own
        compute describes, on the region they cover."""
        from .tensor_intrin import TensorIntrin
        self._check_compute("tensorize", intrinsic_ok=False)
        if not isinstance(tensor_intrin, TensorIntrin):
            raise self._err(f"tensorize: expected te.decl_tensor_intrin(...), got {tensor_intrin!r}")
        self._annotate(var, "tensorize")
        self._attr(self._as_ivar(var, "tensorize")).tensor_intrin = tensor_intrin

    @_recorded("vectorize")
    def vectorize(self, var):
        """Run axis ``var`` as SIMD lanes (innermost data-parallel loops)."""
        self._annotate(var, "vectorize")

    @_recorded("parallel")
    def parallel(self, var):
        """Run the iterations of axis ``var`` on several CPU threads."""
        self._annotate(var, "parallel")

    @_recorded("unroll")
    def unroll(self, var):
        """Unroll axis ``var`` (fully when its extent is a small constant)."""
        self._annotate(var, "unroll")

    @_recorded("pragma")
    def pragma(self, var, pragma_type, pragma_value=None):
        """Attach pragma ``pragma_type`` (e.g. ``"unroll"``) to loop ``var``."""
        iv = self._check_leaf(var, "pragma")
        if not isinstance(pragma_type, str) or not pragma_type:
            raise self._err(f"pragma on axis {iv.var.name!r}: the pragma type must be a non-empty string")
        if pragma_type in ("vectorize", "unroll", "parallel"):  # TVM's spelling of the loop kinds
            self._annotate(iv, pragma_type)
            return
        if pragma_value is None:
            value = const(1)
        elif isinstance(pragma_value, str):  # e.g. the code of "import_c" / "import_llvm"
            value = E.StringImm(pragma_value)
        else:
            value = convert(pragma_value)
        self._attr(iv).pragmas.append((pragma_type, value))

    @_recorded("prefetch")
    def prefetch(self, tensor, var, offset):
        """Prefetch ``tensor`` ``offset`` iterations of loop ``var`` ahead (TVM's
        primitive): at the top of each iteration of ``var``, the cache lines of
        ``tensor`` that iteration ``var + offset`` will read (over the loops inside
        ``var``) are prefetched.  The address is computed on the flattened tensor, so
        an ``offset`` past ``var``'s extent reaches the next block of memory (the
        next chunk of a reduction, say): a prefetch never faults.  CPU targets emit
        ``__builtin_prefetch``; CUDA targets ignore it."""
        iv = self._check_leaf(var, "prefetch")
        if not isinstance(tensor, Tensor):
            raise self._err(f"prefetch on axis {iv.var.name!r}: the first argument must be a te.Tensor, "
                            f"got {type(tensor).__name__}")
        if tensor not in self.op.input_tensors:
            names = [t.op.name for t in self.op.input_tensors]
            raise self._err(f"prefetch on axis {iv.var.name!r}: stage {self.name!r} does not read tensor "
                            f"{tensor.op.name!r}; it reads {names}")
        off = convert(offset)
        if not isinstance(off, E.PrimExpr) or not is_integer(off.dtype):
            raise self._err(f"prefetch on axis {iv.var.name!r}: the offset must be an integer, got {offset!r}")
        attr = self._attr(iv)
        attr.prefetch = attr.prefetch + ((tensor, off),)

    @_recorded("bind")
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
    @_recorded("compute_at")
    def compute_at(self, parent, scope):
        """Compute this stage inside loop ``scope`` of stage ``parent``."""
        self._check_compute("compute_at")
        if not isinstance(parent, Stage):
            raise self._err(f"compute_at expects a stage (s[T]) as parent, got {parent!r}")
        if parent is self:
            raise self._err("compute_at: a stage cannot be attached to itself")
        if self.is_output:
            raise self._err("compute_at: an output stage must be computed at root")
        self._check_not_scan_part("compute_at")
        iv = parent._check_leaf(scope, f"compute_at({self.name!r})")
        if not self.schedule._reads_transitively(parent.op, self.op):
            raise self._err(
                f"compute_at: stage {parent.name!r} does not consume {self.name!r} (directly or through "
                f"other stages), so there is no loop of it where {self.name!r} would be needed")
        if self.group is not None and parent.group is not self.group:
            if isinstance(self.group, StageGroup):
                raise self._err(
                    f"compute_at: {self.name!r} belongs to {self.group.name!r} (s.create_group); it can only be "
                    f"attached to another stage of that group, and {parent.name!r} is not one -- attach the "
                    f"group instead ({self.group.name}.compute_at(...))")
            raise self._err(
                f"compute_at: {self.name!r} is computed in every step of scan {self.group.name!r}; it can only "
                f"be attached to another stage of that scan's update, and {parent.name!r} is not one")
        self.attach_type = AttachType.SCOPE
        self.attach_stage = parent
        self.attach_ivar = iv

    def _check_not_scan_part(self, what):
        """The init and update tensors of a scan are its storage; they stay where the
        scan puts them."""
        for st in self.schedule.stages:
            if isinstance(st.op, ScanOp):
                for t in st.op.init + st.op.update:
                    if t.op is self.op:
                        part = "init" if t in st.op.init else "update"
                        raise self._err(f"{what}: {self.name!r} is the {part} of scan {st.name!r}, which "
                                        f"computes it into the scan's own result; schedule its loops (split, "
                                        f"bind...) instead")

    @_recorded("compute_inline")
    def compute_inline(self):
        """Substitute this stage's expression into every consumer (no buffer)."""
        self._check_compute("compute_inline", intrinsic_ok=False)
        if self.is_output:
            raise self._err("compute_inline: an output stage cannot be inlined")
        if self.op.reduce_axis:
            raise self._err("compute_inline: a reduction cannot be inlined; compute_at it into its consumer instead")
        if self.op.num_outputs != 1:
            raise self._err("compute_inline: a stage with several outputs cannot be inlined")
        self._check_not_scan_part("compute_inline")
        self.attach_type = AttachType.INLINE
        self.attach_stage = self.attach_ivar = None

    @_recorded("compute_root")
    def compute_root(self):
        """Compute this stage in its own loop nest at the top of the function (for a
        stage of a scan's update: at the top of each step of the scan)."""
        self._check_compute("compute_root")
        self._check_not_scan_part("compute_root")
        self._attach_root()

    def _attach_root(self):
        scan = self.scan_group
        if scan is not None:
            self.attach_type = AttachType.SCAN_UPDATE
            self.attach_stage = scan
            self.attach_ivar = scan.op.scan_axis
        else:
            self.attach_type = AttachType.ROOT
            self.attach_stage = self.attach_ivar = None

    @_recorded("set_store_predicate")
    def set_store_predicate(self, predicate):
        """Store this stage's results only where ``predicate`` holds (e.g. only the
        threads with ``threadIdx.x == 0`` of a stage every thread computes)."""
        from ..tir.op import _as_bool
        self._check_compute("set_store_predicate")
        self.store_predicate = _as_bool(convert(predicate))

    @_recorded("set_scope")
    def set_scope(self, scope):
        """Store this stage's result in memory ``scope`` (global/shared/local)."""
        if scope not in _SCOPES:
            raise self._err(f"unknown storage scope {scope!r}; use one of {_SCOPES}")
        self.scope = scope

    def loop_notes(self, iv) -> list:
        """What the loop of ``iv`` is besides its extent, in words: ``reduce``, its
        thread binding, its kind (``vectorized``...), pragmas and prefetches (how
        ``loop_tree`` and ``tecc.contrib.tedd`` show a loop)."""
        words = []
        if iv.iter_type == E.IterVarType.COMM_REDUCE:
            words.append("reduce")
        attr = self.iter_var_attrs.get(iv)
        if attr is not None:
            if attr.bind_thread is not None:
                words.append(attr.bind_thread.thread_tag or attr.bind_thread.var.name)
            if attr.kind:
                words.append({"vectorize": "vectorized", "unroll": "unrolled"}.get(attr.kind, attr.kind))
            words.extend(f"pragma {k}={v}" for k, v in attr.pragmas)
            words.extend(f"prefetch {t.op.name} +{off}" for t, off in attr.prefetch)
        return words

    @_recorded("storage_align")
    def storage_align(self, axis, factor, offset):
        """Pad the stride of dimension ``axis`` so that ``stride % factor == offset %
        factor`` (an offset of ``factor`` or more counts modulo ``factor``, as in TVM,
        whose schedules write ``storage_align(axis, n - 1, n)`` for a stride of ``n``)."""
        d = self._data_dimension(axis, "storage_align")
        factor = self._positive_int(factor, "storage_align factor", self)
        off = E.const_int_value(offset)
        if off is None or off < 0:
            raise self._err(f"storage_align offset must be a non-negative integer, got {offset!r}")
        self.storage_align_[d] = (factor, off % factor)

    @_recorded("align_extent")
    def align_extent(self, axis, factor):
        """Widen the region of dimension ``axis`` that this stage computes, where it
        is computed inside another stage's loop (``compute_at``), to a whole multiple
        of ``factor`` elements (Halide's ``align_extent``; TVM has no counterpart).

        Bound inference gives an attached stage exactly the region its consumers
        read.  When that region is not a multiple of the stage's own split of the
        axis, the last split iteration is partial: a guard, or a partial vector
        whose accumulators cannot stay in registers.  Widened, every iteration is
        whole; the extra elements are computed, kept in the (larger) buffer and
        never read.  Their indices must be valid for the compute: where the widened
        region would leave the tensor's shape, the usual bound guard keeps them
        out.  A stage computed at root covers its shape and is not widened.
        """
        d = self._data_dimension(axis, "align_extent")
        self.align_extent_[d] = self._positive_int(factor, "align_extent factor", self)

    def _data_dimension(self, axis, what) -> int:
        """The index of ``axis`` among the operation's data-parallel dimensions (a
        primitive ``what`` of the stage's buffer, not of its loops)."""
        self._check_compute(what, intrinsic_ok=False)
        iv = self._as_ivar(axis, what)
        if iv not in self.op.axis:
            raise self._err(f"{what}: {iv.var.name!r} is not a dimension of {self.name!r}; "
                            f"use one of {[x.var.name for x in self.op.axis]}")
        return self.op.axis.index(iv)

    @_recorded("double_buffer")
    def double_buffer(self, register_prefetch=False):
        """Double-buffer this (shared-memory) stage across its attach loop: two
        slots, the next iteration's tile fetched into one while the other is read.

        With ``register_prefetch=True`` (tecc's extension) the prefetch is split
        as CUTLASS's main loops do: each thread loads its share of the next tile
        into registers at the top of the iteration and stores it into the free
        slot at the end, so the loads' latency passes under the iteration's
        computation instead of stalling the stores right behind them.  It applies
        where the fetch is a nest of constant-extent loops around one store (a
        cooperative fetch); any other fetch is prefetched directly.
        """
        self._check_compute("double_buffer")
        if not isinstance(register_prefetch, bool):
            raise self._err(f"double_buffer(register_prefetch=...) takes True or False, got "
                            f"{register_prefetch!r}")
        self.double_buffer_ = True
        self.register_prefetch_ = register_prefetch


# ----------------------------------------------------------------------------
# the schedule
# ----------------------------------------------------------------------------

class StageGroup:
    """Stages that are attached together (TVM's group stage, ``s.create_group``).

    ``group`` is the enclosing group (or scan stage) and ``num_child_stages`` the
    number of stages and groups directly in this one.  ``compute_at`` attaches every
    stage of the group that is computed at the group's root."""

    def __init__(self, schedule, group, name):
        self.schedule = schedule
        self.group = group
        self.name = name
        self.op = None
        self.attach_type = AttachType.ROOT
        self.attach_stage = None
        self.attach_ivar = None

    @property
    def num_child_stages(self) -> int:
        sch = self.schedule
        return sum(1 for x in list(sch.stages) + list(sch.groups) if x.group is self)

    def compute_at(self, parent, scope):
        """Compute the group's stages at loop ``scope`` of stage ``parent``."""
        if self.group is not None and parent.group is not self.group:
            raise ScheduleError(f"{self.name}.compute_at: the group is inside {self.group.name!r}; it can only be "
                                f"attached to a stage of that group, and {parent.name!r} is not one")
        members = [st for st in self.schedule.stages if self._holds(st)]
        if parent in members:
            raise ScheduleError(f"{self.name}.compute_at: {parent.name!r} belongs to the group itself")
        if not any(self.schedule._reads_transitively(parent.op, st.op) for st in members):
            raise ScheduleError(f"{self.name}.compute_at: {parent.name!r} reads none of the group's stages "
                                f"{[st.name for st in members]}")
        self.attach_type = AttachType.SCOPE
        self.attach_stage = parent
        self.attach_ivar = parent._check_leaf(scope, f"{self.name}.compute_at")

    def compute_root(self):
        """Compute the group's stages at the root again (of the scan step, in a scan)."""
        self.attach_type = AttachType.ROOT
        self.attach_stage = self.attach_ivar = None

    def _holds(self, st) -> bool:
        g = st.group
        while isinstance(g, StageGroup):
            if g is self:
                return True
            g = g.group
        return False

    def __repr__(self):
        return f"group({self.name}, {self.num_child_stages} child stages)"


class Schedule:
    """All stages of a computation, in producer-before-consumer order."""

    def __init__(self, outputs):
        from ..tir.transform.pipeline import PassContext

        self.outputs = list(outputs)
        self.stages = []
        self.stage_map = {}
        for op in post_dfs_order(self.outputs):
            st = Stage(op, self)
            self.stages.append(st)
            self.stage_map[op] = st
        for op in self.outputs:
            self.stage_map[op].is_output = True
        self.groups = []
        for st in list(self.stages):
            if isinstance(st.op, ScanOp):
                self._make_scan_group(st)
        cfg = PassContext.current().config
        self._keep_record = bool(cfg.get("te.keep_schedule_record", False))
        self.schedule_record = []
        self.primitive_record = []
        if self._keep_record and self.outputs is not None:
            self._record("vanilla")

    # display ------------------------------------------------------------------
    def __repr__(self):
        return (f"<tecc.te.Schedule outputs=[{', '.join(op.name for op in self.outputs)}], "
                f"{len(self.stages)} stages>")

    def loop_tree(self) -> str:
        """The schedule as text: each stage computed at the top (its loops outermost
        first, with their extents as bound inference gives them, thread bindings and
        annotations), the stages computed inside one of its loops (``compute_at``)
        under that loop, then the inlined stages and the inputs."""
        from .lower import infer_bound

        try:
            bounds = infer_bound(self)
        except Exception:  # noqa: BLE001 -- an unfinished schedule still shows its loops
            bounds = {}
        inside = {}
        for st in self.stages:
            if st.attach_type == AttachType.SCOPE and st.attach_stage is not None:
                inside.setdefault((st.attach_stage, st.attach_ivar), []).append(st)
        lines = []

        def loop_text(st, iv):
            rng = bounds.get(iv)
            extent = "?" if rng is None else str(rng.extent)
            words = st.loop_notes(iv)
            return f"for {iv.var.name} in 0..{extent}" + (f"  [{', '.join(words)}]" if words else "")

        def stage(st, depth):
            what = [type(st.op).__name__, st.scope or "global"]
            if st.is_output:
                what.append("output")
            lines.append("  " * depth + f"{st.name}  ({', '.join(what)})")
            for k, iv in enumerate(st.leaf_iter_vars):
                lines.append("  " * (depth + 1 + k) + loop_text(st, iv))
                for child in inside.get((st, iv), ()):
                    stage(child, depth + 2 + k)

        for st in self.stages:
            if isinstance(st.op, PlaceholderOp) or st.attach_type != AttachType.ROOT:
                continue
            stage(st, 0)
        inlined = [st.name for st in self.stages if st.attach_type in (AttachType.INLINE, AttachType.INLINED_ALREADY)]
        if inlined:
            lines.append(f"inlined: {', '.join(inlined)}")
        other = [f"{st.name} ({st.attach_type.name.lower()})" for st in self.stages
                 if st.attach_type not in (AttachType.ROOT, AttachType.SCOPE, AttachType.INLINE,
                                           AttachType.INLINED_ALREADY) and not isinstance(st.op, PlaceholderOp)]
        if other:
            lines.append(f"elsewhere: {', '.join(other)}")
        inputs = [st.name for st in self.stages if isinstance(st.op, PlaceholderOp)]
        if inputs:
            lines.append(f"inputs: {', '.join(inputs)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from .. import display
        return display.heading_html(repr(self)) + display.pre_html(self.loop_tree())

    def _make_scan_group(self, scan_stage):
        """Mark the stages a scan recomputes in every step (:func:`.graph.scan_body`)
        to be computed inside its time loop."""
        for o in scan_body(scan_stage.op)[:-1]:
            st = self.stage_map.get(o)
            if st is not None and isinstance(o, ComputeOp) and st.scan_group is None:
                st.group = scan_stage
                st._attach_root()

    # --------------------------------------------------------- records
    def _record(self, name):
        self.schedule_record.append(self.copy())
        self.primitive_record.append(name)

    def create_group(self, outputs, inputs, include_inputs=False):
        """Group the stages between ``inputs`` and ``outputs`` (the stages that
        compute ``outputs`` from ``inputs``; with ``include_inputs`` the inputs' stages
        too) so that they can be attached together: ``g.compute_at(s[C], axis)``
        puts every stage of the group that is computed at the group's root there.
        Stages of a group can be attached only to each other.  Groups nest: a group
        whose stages all fall into a new one becomes part of it."""
        outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        stop = {t.op for t in ins}
        members, seen = [], set()

        def walk(op):
            if op in seen:
                return
            seen.add(op)
            if op in stop:
                if include_inputs and op in self.stage_map and not isinstance(op, PlaceholderOp):
                    members.append(self.stage_map[op])
                return
            if isinstance(op, PlaceholderOp):
                raise ScheduleError(f"create_group: {op.name!r} is an input of the computation, not one of the "
                                    f"group's inputs {[t.name for t in ins]}; the group would reach past them")
            members.append(self[op])
            for t in op.input_tensors:
                walk(t.op)

        for t in outs:
            walk(t.op)
        if not members:
            raise ScheduleError("create_group: no stage lies between the inputs and the outputs")

        def chain(x):
            out, g = [], x.group
            while g is not None:
                out.append(g)
                g = g.group if isinstance(g, StageGroup) else None
            return out

        common = chain(members[0])
        for m in members[1:]:
            c = set(chain(m))
            common = [g for g in common if g in c]
        parent = common[0] if common else None
        group = StageGroup(self, parent, f"group{len(self.groups)}")
        for m in members:
            top = m  # the member itself, or the group under ``parent`` that holds it
            while top.group is not parent:
                top = top.group
            top.group = group
        self.groups.append(group)
        return group

    def copy(self):
        """An independent copy of this schedule (its stages and their relations)."""
        new = Schedule.__new__(Schedule)
        new.outputs = list(self.outputs)
        new._keep_record = False
        new.schedule_record, new.primitive_record = [], []
        smap = {}
        for st in self.stages:
            c = _copy.copy(st)
            c.schedule = new
            c.all_iter_vars = list(st.all_iter_vars)
            c.leaf_iter_vars = list(st.leaf_iter_vars)
            c.relations = list(st.relations)
            c.iter_var_attrs = {iv: _copy.copy(a) for iv, a in st.iter_var_attrs.items()}
            c.storage_align_ = dict(st.storage_align_)
            c.align_extent_ = dict(st.align_extent_)
            smap[st] = c
        for g in self.groups:
            smap[g] = _copy.copy(g)
            smap[g].schedule = new
        for c in smap.values():
            c.attach_stage = smap.get(c.attach_stage, c.attach_stage)
            c.group = smap.get(c.group, c.group)
        new.groups = [smap[g] for g in self.groups]
        new.stages = [smap[st] for st in self.stages]
        new.stage_map = {op: smap[st] for op, st in self.stage_map.items()}
        return new

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

    def normalize(self):
        """Re-target every ``compute_at`` whose loop a later split or fuse replaced:
        to the inner loop of the split, to the fused loop (as TVM's normalize does).
        A stage computed at the root of a group (``s.create_group``) that is itself
        attached somewhere is computed there (the innermost attached group decides).
        Lowering calls it; it returns the schedule itself."""
        for st in self.stages:
            if st.attach_type in (AttachType.ROOT, AttachType.SCAN_UPDATE):
                g = st.group
                while isinstance(g, StageGroup) and g.attach_type != AttachType.SCOPE:
                    g = g.group
                if isinstance(g, StageGroup):
                    st.attach_type, st.attach_stage, st.attach_ivar = AttachType.SCOPE, g.attach_stage, g.attach_ivar
        for st in self.stages:
            if st.attach_type != AttachType.SCOPE:
                continue
            parent, iv = st.attach_stage, st.attach_ivar
            while iv not in parent.leaf_iter_vars:
                nxt = None
                for rel in parent.relations:
                    if isinstance(rel, Split) and rel.parent is iv:
                        nxt = rel.inner
                    elif isinstance(rel, Fuse) and iv in (rel.outer, rel.inner):
                        nxt = rel.fused
                if nxt is None:
                    break
                iv = nxt
            st.attach_ivar = iv
        return self

    # ------------------------------------------------------------ data flow
    def _replace_dataflow(self, vmap, skip=()):
        """Make every stage (but ``skip``) read ``vmap[t]`` instead of tensor ``t``;
        ops that change are replaced and their outputs remapped in turn."""
        vmap = dict(vmap)
        for st in self.stages:
            if st in skip:
                continue
            old = st.op
            new = old.replace_inputs(vmap)
            if new is not old:
                st.op = new
                self.stage_map[new] = st
                for i in range(old.num_outputs):
                    vmap[old.output(i)] = new.output(i)
        self.outputs = [self.stage_map[op].op if op in self.stage_map else op for op in self.outputs]

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
        groups = {rs.group for rs in reader_stages}
        if len(groups) == 1 and None not in groups:  # read inside a scan's steps: cached there too
            st.group = groups.pop()
            st._attach_root()
        for rs in reader_stages:
            old = rs.op
            new = old.replace_inputs({cur: cache})
            rs.op = new
            self.stage_map[new] = rs
            self._replace_dataflow({old.output(i): new.output(i) for i in range(old.num_outputs)}, skip={rs, st})
        return cache

    def cache_write(self, tensor, scope):
        """Compute ``tensor`` into a new stage in memory ``scope``; the original stage
        becomes a copy out of it.

        As in TVM, when the stage's loops were already split, fused or reordered, the
        cache is laid out in the order of those loops (its axes are the stage's
        data-parallel loops) and the original stage's loop schedule is reset to its
        plain axes: schedule both stages after cache_write.
        """
        from ..tir.arith import Analyzer
        from ..tir.functor import substitute
        from ..tir.op import if_then_else

        if scope not in _SCOPES:
            raise ScheduleError(f"cache_write of {getattr(tensor, 'name', tensor)!r}: unknown scope {scope!r}; "
                                f"use one of {_SCOPES}")
        tensors = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
        for t in tensors:
            if not isinstance(t, Tensor):
                raise ScheduleError(f"cache_write expects a tensor (or the list of outputs of one operation), got {t!r}")
        st = self[tensors[0]]
        op = st.op
        if isinstance(op, TensorComputeOp):
            return self._cache_write_intrinsic(st, scope, tensor)
        if not isinstance(op, ComputeOp):
            raise ScheduleError(f"cache_write: {st.name!r} is not a te.compute stage; only computed tensors can be cached")
        if len(tensors) != op.num_outputs or any(self[t] is not st for t in tensors):
            raise ScheduleError(f"cache_write of {st.name!r}: pass all {op.num_outputs} outputs of the operation "
                                "together, as a list")
        ana = Analyzer()
        ext = pass_down_extents(st, {iv: iv.dom.extent for iv in op.axis + op.reduce_axis}, ana.simplify)
        leaves = []
        for iv in st.leaf_iter_vars:
            if iv.iter_type == E.IterVarType.COMM_REDUCE:
                if not _is_reduce_only(st, iv):
                    raise ScheduleError(
                        f"cache_write of {st.name!r}: loop {iv.var.name!r} fuses data-parallel and reduction axes; "
                        "the cache is laid out by the data-parallel loops, so call cache_write before that fuse")
                continue
            leaves.append(iv)
        new_axis = tuple(E.IterVar(E.Range(const(0, ext[iv].dtype), ext[iv]), E.Var(iv.var.name + ".c", iv.var.dtype),
                                   E.IterVarType.DATA_PAR) for iv in leaves)
        # the cache computes element (leaf loops) -> the original element (root indices)
        value = pass_up_index(st, {iv: new.var for iv, new in zip(leaves, new_axis)}, ext, ana.simplify)
        vmap = {iv.var: value[iv] for iv in op.axis}
        preds = [E.LT(value[iv], iv.dom.extent) for iv in op.axis
                 if not ana.can_prove(E.LT(value[iv], iv.dom.extent))]
        cache_body = list(substitute(op.body, vmap))
        if preds:
            cond = preds[0]
            for c in preds[1:]:
                cond = E.And(cond, c)
            if isinstance(cache_body[0], E.Reduce):
                r0 = cache_body[0]
                where = cond if E.is_const_int(r0.condition, 1) else E.And(r0.condition, cond)
                cache_body = [E.Reduce(r.combiner, r0.source, r.axis, where, r.value_index, r.init) for r in cache_body]
            else:
                cache_body = [if_then_else(cond, b, const(0, b.dtype)) for b in cache_body]
        reduce_axis = cache_body[0].axis if isinstance(cache_body[0], E.Reduce) else ()
        cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, op.attrs, new_axis, cache_body, reduce_axis)
        # the original element (root indices) -> where the cache holds it
        where = pass_down_index(st, {iv: iv.var for iv in op.axis}, ext, ana.simplify)
        idx = tuple(where[iv] for iv in leaves)
        copy_body = [cache_op.output(i)[idx] for i in range(op.num_outputs)]
        copy_op = ComputeOp(op.name, op.tag, op.attrs, op.axis, copy_body, ())
        cst = Stage(cache_op, self)
        cst.scope = scope
        cst.is_cache = True
        cst.group = st.group
        if st.group is not None:
            cst._attach_root()
        self.stages.insert(self.stages.index(st), cst)
        self.stage_map[cache_op] = cst
        # the original stage now copies out of the cache; its loop schedule starts afresh
        st.op = copy_op
        st.all_iter_vars = list(op.axis)
        st.leaf_iter_vars = list(op.axis)
        st.relations = []
        st.iter_var_attrs = {iv: a for iv, a in st.iter_var_attrs.items() if iv in op.axis}
        self.stage_map[copy_op] = st
        self._replace_dataflow({op.output(i): copy_op.output(i) for i in range(op.num_outputs)}, skip={st, cst})
        outs = tuple(cache_op.output(i) for i in range(op.num_outputs))
        return outs if isinstance(tensor, (list, tuple)) else outs[0]

    def _cache_write_intrinsic(self, st, scope, tensor):
        """cache_write of a stage computed by a tensor intrinsic: the intrinsic writes
        the cache, a plain copy fills the original tensor."""
        from ..tir.functor import substitute

        op = st.op
        if st.relations or st.leaf_iter_vars != [iv for iv in st.all_iter_vars
                                                  if iv.iter_type != E.IterVarType.OPAQUE]:
            raise ScheduleError(f"cache_write of {st.name!r} (a tensor-intrinsic stage) must come before "
                                "split/fuse/reorder on that stage")
        new_axis = tuple(E.IterVar(iv.dom, E.Var(iv.var.name + ".c", iv.var.dtype), iv.iter_type) for iv in op.axis)
        vmap = {old.var: new.var for old, new in zip(op.axis, new_axis)}
        regions = [[E.Range(substitute(r.min, vmap), r.extent) for r in reg] for reg in op.input_regions]
        cache_op = TensorComputeOp(f"{op.name}.{scope}", op.tag, new_axis, op.reduce_axis, op.schedulable_ndim,
                                   op.intrin, op.inputs, regions, op.scalar_inputs)
        # the copy keeps the loop axes (C.op.axis[0] still names them) and gets loops of
        # its own for the intrinsic's dimensions
        copy_axis = tuple(iv if iv.iter_type == E.IterVarType.DATA_PAR else
                          E.IterVar(iv.dom, E.Var(iv.var.name, iv.var.dtype), E.IterVarType.DATA_PAR)
                          for iv in op.axis)
        idx = tuple(iv.var for iv in copy_axis)
        copy_op = ComputeOp(op.name, op.tag, op.attrs, copy_axis,
                            [cache_op.output(i)[idx] for i in range(op.num_outputs)], ())
        cst = Stage(cache_op, self)
        cst.scope = scope
        cst.is_cache = True
        self.stages.insert(self.stages.index(st), cst)
        self.stage_map[cache_op] = cst
        st.op = copy_op
        st.all_iter_vars = list(copy_axis)
        st.leaf_iter_vars = list(copy_axis)
        st.relations = []
        st.iter_var_attrs = {}
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
        data_rels, red_rels = [], []
        for rel in st.relations:
            touched = ([rel.parent] if isinstance(rel, Split) else [rel.outer, rel.inner] if isinstance(rel, Fuse)
                       else [rel.iter])
            kinds = {_is_reduce(iv) for iv in touched}
            if len(kinds) > 1:
                raise st._err("rfactor: a loop fuses data-parallel and reduction axes; rfactor before that fuse")
            (red_rels if kinds.pop() else data_rels).append(rel)
        if not 0 <= factor_axis <= len(op.axis):
            raise st._err(f"rfactor: factor_axis must be in [0, {len(op.axis)}], got {factor_axis}")
        ana = Analyzer()
        ext = pass_down_extents(st, {iv: iv.dom.extent for iv in op.axis + op.reduce_axis}, ana.simplify)
        # the reduction axes related to `axis` through splits/fuses ("touched"); the
        # partial reduction keeps the other root reduction axes as they are (as TVM)
        touched = {axis}
        grew = True
        while grew:
            grew = False
            for rel in red_rels:
                group = [rel.parent, rel.outer, rel.inner] if isinstance(rel, Split) else \
                    [rel.outer, rel.inner, rel.fused] if isinstance(rel, Fuse) else [rel.iter]
                if any(g in touched for g in group) and not all(g in touched for g in group):
                    touched.update(group)
                    grew = True
        leaves = [iv for iv in st.leaf_iter_vars if _is_reduce(iv) and iv in touched]
        new_of = {}
        for iv in leaves:
            if iv is axis:
                new_of[iv] = E.IterVar(E.Range(const(0, ext[iv].dtype), ext[iv]), E.Var(iv.var.name + ".v", iv.var.dtype),
                                       E.IterVarType.DATA_PAR)
            elif iv in op.reduce_axis:
                new_of[iv] = iv
            else:  # a loop of a split/fuse becomes a reduction axis of its own (same variable)
                new_of[iv] = E.IterVar(E.Range(const(0, ext[iv].dtype), ext[iv]), iv.var, E.IterVarType.COMM_REDUCE)
        untouched = [iv for iv in op.reduce_axis if iv not in touched]
        off = pass_up_index(st, {iv: new_of[iv].var for iv in leaves}, ext)
        off.update({iv: iv.var - iv.dom.min for iv in untouched})
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
        rest = tuple(untouched) + tuple(new_of[iv] for iv in leaves if iv is not axis)
        first = op.body[0]
        source = tuple(substitute(x, vmap) for x in first.source)
        where = substitute(first.condition, vmap)
        if cond is not None:
            where = cond if E.is_const_int(where, 1) else E.And(where, cond)
        comb = substitute(first, vmap).combiner  # it may use the data axes (a loop-dependent reducer)
        rf_body = [E.Reduce(comb, source, rest, where, i) for i in range(op.num_outputs)]
        rf_op = ComputeOp(f"{op.name}.rf", op.tag, op.attrs, rf_axis, rf_body, rest)
        # the original stage now reduces the factored dimension
        rk = E.IterVar(E.Range(const(0, ext[axis].dtype), ext[axis]), E.Var(axis.var.name + ".v", axis.var.dtype),
                       E.IterVarType.COMM_REDUCE)
        idx = [iv.var for iv in op.axis]
        idx.insert(factor_axis, rk.var)
        loads = tuple(rf_op.output(i)[tuple(idx)] for i in range(op.num_outputs))
        # the reduction's init= belongs to the final reduction: the partial sums start
        # from the identity, their sum from init
        new_body = [E.Reduce(first.combiner, loads, (rk,), const(True), i, first.init) for i in range(op.num_outputs)]
        new_op = ComputeOp(op.name, op.tag, op.attrs, op.axis, new_body, (rk,))
        rf_stage = Stage(rf_op, self)
        self.stages.insert(self.stages.index(st), rf_stage)
        self.stage_map[rf_op] = rf_stage
        st.op = new_op
        self.stage_map[new_op] = st
        # the stage keeps its data-parallel loops (and their splits); the reduction
        # loops become the one over the factored axis, where the first one was
        first = next((k for k, iv in enumerate(st.leaf_iter_vars) if _is_reduce(iv)), len(st.leaf_iter_vars))
        leaves = [iv for iv in st.leaf_iter_vars if not _is_reduce(iv)]
        leaves.insert(min(first, len(leaves)), rk)
        st.relations = data_rels
        st.all_iter_vars = [iv for iv in st.all_iter_vars if not _is_reduce(iv)] + [rk]
        st.leaf_iter_vars = leaves
        st.iter_var_attrs = {iv: a for iv, a in st.iter_var_attrs.items() if not _is_reduce(iv)}
        self._replace_dataflow({op.output(i): new_op.output(i) for i in range(op.num_outputs)},
                               skip={st, rf_stage})
        outs = tuple(rf_op.output(i) for i in range(op.num_outputs))
        return outs if op.num_outputs > 1 else outs[0]


# ----------------------------------------------------------------------------
# index arithmetic through the relations of a stage (lowering uses these too)
# ----------------------------------------------------------------------------

def pass_down_extents(stage, ext, simplify, prove=None, fixed_extent=()):
    """Extend ``ext`` (IterVar -> extent, given for the roots) to every axis the
    stage's split/fuse/singleton relations derive.

    With ``prove`` (a function telling whether a condition holds), a split's part of
    a given size (the inner axis of ``factor=``, the outer one of ``nparts=``) shrinks
    to the split axis' extent when that is provably smaller -- unless the part is in
    ``fixed_extent`` (it leads to a loop bound to a thread, whose extent the user
    chose), as in TVM's final bound inference.
    """
    def ceil_div(a, b):
        if prove is not None and prove(E.EQ(a % b, const(0, a.dtype))):
            return simplify(a // b)
        return simplify((a + b - 1) // b)

    def sized(iv, e, size):
        if prove is not None and iv not in fixed_extent and prove(E.LT(e, size)):
            return e
        return size

    for rel in stage.relations:
        if isinstance(rel, Split):
            e = ext[rel.parent]
            if rel.factor is not None:
                f = const(rel.factor, e.dtype) if isinstance(rel.factor, int) else rel.factor
                ext[rel.outer] = ceil_div(e, f)
                ext[rel.inner] = sized(rel.inner, e, f)
            else:
                n = const(rel.nparts, e.dtype) if isinstance(rel.nparts, int) else rel.nparts
                ext[rel.outer] = sized(rel.outer, e, n)
                ext[rel.inner] = ceil_div(e, n)
        elif isinstance(rel, Fuse):
            ext[rel.fused] = simplify(ext[rel.outer] * ext[rel.inner])
        else:
            ext[rel.iter] = const(1, "int32")
    return ext


def pass_up_index(stage, value, ext, simplify=lambda e: e):
    """Extend ``value`` (IterVar -> index, given for the leaves) to the axes the
    leaves derive from: the index of each root axis as a function of the loops."""
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            if rel.outer in value and rel.inner in value:
                value[rel.parent] = simplify(value[rel.outer] * ext[rel.inner] + value[rel.inner])
        elif isinstance(rel, Fuse):
            if rel.fused in value:
                e = ext[rel.inner]
                value[rel.outer] = simplify(value[rel.fused] // e)
                value[rel.inner] = simplify(value[rel.fused] % e)
    return value


def pass_down_index(stage, value, ext, simplify=lambda e: e):
    """Extend ``value`` (IterVar -> index, given for the roots) to every derived
    axis: which loop iteration computes a given element."""
    for rel in stage.relations:
        if isinstance(rel, Split):
            if rel.parent in value:
                e = ext[rel.inner]
                value[rel.outer] = simplify(value[rel.parent] // e)
                value[rel.inner] = simplify(value[rel.parent] % e)
        elif isinstance(rel, Fuse):
            if rel.outer in value and rel.inner in value:
                value[rel.fused] = simplify(value[rel.outer] * ext[rel.inner] + value[rel.inner])
        else:
            value[rel.iter] = const(0, "int32")
    return value


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


# ----------------------------------------------------------------------------
# TVM's schedule-level functions (tvm.te.schedule.*)
# ----------------------------------------------------------------------------

def _auto_inline(sch, pred):
    for st in sch.stages:
        if (isinstance(st.op, ComputeOp) and not st.is_output and not st.is_scheduled() and not st.op.reduce_axis
                and st.op.num_outputs == 1 and pred(st.op)):
            try:
                st.compute_inline()
            except ScheduleError:
                continue  # e.g. the init/update of a scan: it stays where it is


def _is_elemwise(op):
    axis = [iv.var for iv in op.axis]
    ok = []

    def visit(node):
        if isinstance(node, E.ProducerLoad):
            ok.append(len(node.indices) == len(axis) and all(a is b for a, b in zip(node.indices, axis)))

    from ..tir.functor import post_order_visit
    for b in op.body:
        post_order_visit(b, visit)
    return all(ok)


def AutoInlineElemWise(sch):  # noqa: N802  (TVM's name)
    """Inline every unscheduled element-wise stage (each read indexed by exactly
    the stage's own axes), outputs excepted."""
    _auto_inline(sch, _is_elemwise)


def AutoInlineBroadcast(sch):  # noqa: N802
    """Inline every unscheduled stage tagged ``"broadcast"`` (as TOPI tags them)."""
    _auto_inline(sch, lambda op: op.tag == "broadcast")


def AutoInlineInjective(sch):  # noqa: N802
    """Inline every unscheduled stage that is not a reduction."""
    _auto_inline(sch, lambda op: True)


def InferBound(sch):  # noqa: N802
    """The range of every iteration variable of every stage, as a
    :class:`~tecc.container.Map` from IterVar to Range."""
    from ..runtime.container import Map
    from .lower import infer_bound
    return Map(infer_bound(sch))


def ScheduleOps(sch, dom_map=None, debug_keep_trivial_loop=False):  # noqa: N802
    """The loop nest of the schedule as one statement (before any pass): the body
    of the function :func:`tecc.lower` would start from, with the placeholders the
    schedule reads and its outputs as buffers.  ``dom_map`` (from
    :func:`InferBound`) is accepted for TVM's signature; bounds are inferred anew."""
    from .lower import default_args, lower_schedule
    return lower_schedule(sch, default_args(sch), "main").body


# TVM's names under te.schedule
from ..tir.expr import IterVar  # noqa: E402,F401
from ..tir.stmt import Buffer  # noqa: E402,F401
