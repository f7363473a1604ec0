"""What a lowered function does, as numbers: the facts the tuner's cost model learns from.

:func:`extract_features` walks a function once and describes every store
(``BufferStore``, "a statement") by

* the loops around it, outermost first: extent, kind (serial, parallel, vectorized,
  unrolled, blockIdx, threadIdx, vthread), nest level, the product of the extents
  down to and below the loop, and the bytes its accesses touch while the loop runs
  (its working set);
* each buffer it reads or writes: scope (global, shared, local), accesses, bytes,
  distinct bytes, reuse, the stride (in elements) along the innermost loop, the
  vector lanes and ``threadIdx.x``, whether the innermost access is contiguous, whether
  the index is affine in the loop variables, and the distinct bytes touched within one
  run of each enclosing loop (the curve the tuner samples);
* its arithmetic: float and integer operations per execution, executions, flops,
  vector width, unrolled extent, whether a condition guards it;

and the function by its totals: flops, bytes moved per scope, arithmetic intensity,
vector width, parallel extent and, for GPU code, the main kernel's threads per block,
blocks, shared memory per block, local memory per thread and estimated occupancy
(:func:`estimate_occupancy`).

The walk reads any stage of lowering: the function ``te`` lowering makes
(multi-dimensional buffers, every scheduled loop still a loop, GPU indices as
``THREAD_BINDING`` loops, vthreads not injected yet) -- the cheapest form that shows the
whole loop structure, which the tuner uses -- as well as flattened functions and split
kernels (``thread_extent`` attributes, vectorized accesses as ``Ramp`` indices).

Conventions
    * A loop of extent 1 iterates nothing and is left out of the loop lists; a loop of
      symbolic extent is left out too and counted in ``symbolic_loops``.
    * A GPU index bound again inside a loop already bound to it (a cooperative fetch
      into shared memory re-binds ``threadIdx.x``) runs on the same threads: it is a
      level of the statement, but multiplies its executions by 1.
    * Strides are coefficients of the flat element offset; a loop variable under a
      division, a modulo or a product of variables has no stride: ``-1``, and the
      access is not affine.
    * Distinct elements of an access within a loop level are the product of the extents
      of the loops at or inside that level the index depends on (times the vector lanes),
      at most the buffer's size.  Overlapping windows (a convolution's ``h + kh``) are
      over-counted; that is an estimate, as the cache behaviour it stands for.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import TeccTypeError
from .. import dtype as _dt
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..functor import IRVisitor, post_order_visit
from ..op import BINARY_MATH, UNARY_MATH
from .buffers import buffer_strides, const_size
from .fragments import fragment_elements, parse_fragment_shape
from .threads import launch_dims
from .occupancy import (  # noqa: F401 (re-exported: the features' occupancy)
    REGISTERS_PER_THREAD_ESTIMATE, SHARED_RESERVED_PER_BLOCK, Occupancy, SMLimits, estimate_occupancy, sm_limits,
    thread_bytes,
)

#: loop kinds, in the order of the tuner's one-hot columns
LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "blockIdx", "threadIdx", "vthread")
#: memory levels; "register" and "warp" buffers count as "local"
SCOPE_LEVELS = ("global", "shared", "local")

_FOR_KINDS = {
    S.ForKind.SERIAL: "serial",
    S.ForKind.PARALLEL: "parallel",
    S.ForKind.VECTORIZED: "vectorized",
    S.ForKind.UNROLLED: "unrolled",
}
_AUTO_UNROLL = "pragma_auto_unroll_max_step"
_UNROLL_PRAGMA = "pragma_unroll"
_MATH_CALLS = frozenset(UNARY_MATH + BINARY_MATH)
_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)


# ----------------------------------------------------------------------------
# the records
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LoopFeature:
    """One loop around a statement.

    ``nest_level`` counts from 0 at the outermost listed loop; ``topdown`` is the
    product of the executions-factors of the loops down to this one (inclusive),
    ``bottomup`` of this one and those inside it; ``working_set`` is the distinct
    bytes the statement's accesses touch during one run of this loop.
    """

    var: str
    extent: int
    kind: str
    tag: str
    nest_level: int
    topdown: float
    bottomup: float
    working_set: float


@dataclass(frozen=True)
class AccessFeature:
    """One buffer a statement touches (its loads and stores of the buffer together).

    ``count`` is accesses per execution; ``accesses`` all scalar accesses (executions x
    count x lanes); ``bytes`` what they move; ``unique_bytes`` the distinct bytes over
    all loops; ``reuse`` accesses per distinct element.  ``footprint`` holds, per
    enclosing loop (outermost first, as the statement's ``loops``), the distinct bytes
    within one run of that loop.
    """

    buffer: str
    scope: str
    elem_bytes: int
    order: int
    is_write: bool
    count: int
    lanes: int
    accesses: float
    bytes: float
    unique_bytes: float
    reuse: float
    stride_inner: int
    stride_vector: int
    stride_threadx: int
    contiguous: bool
    affine: bool
    footprint: tuple


@dataclass(frozen=True)
class StmtFeature:
    """One store and what surrounds it; ``label`` is the buffer written, with ``#k``
    for its k-th later store (``C``, ``C#1``)."""

    label: str
    loops: tuple
    accesses: tuple
    executions: float
    float_ops: int
    int_ops: int
    flops: float
    bytes: float
    vector_width: int
    unroll_extent: int
    auto_unroll_max_step: int
    parallel_extent: int
    guarded: bool
    kernel: int  # index into FunctionFeatures.kernels, -1 outside GPU code


@dataclass(frozen=True)
class KernelFeature:
    """One GPU kernel: a loop nest under blockIdx/threadIdx bindings."""

    grid: tuple
    block: tuple
    threads_per_block: int
    blocks: int
    shared_bytes: int
    local_bytes: int
    flops: float
    bytes: float


@dataclass(frozen=True)
class FunctionFeatures:
    """Everything :func:`extract_features` found.

    ``bytes_moved`` maps each of :data:`SCOPE_LEVELS` to the bytes all statements move
    at that level; ``alloc_bytes`` the bytes allocated per level (outside GPU kernels:
    a CPU schedule's caches); ``main_kernel`` indexes the kernel with the most flops
    (-1 without GPU code) and ``occupancy`` is its :class:`Occupancy`.
    """

    name: str
    stmts: tuple
    kernels: tuple
    flops: float
    bytes_moved: dict
    arith_intensity: float
    vector_width: int
    parallel_extent: int
    alloc_bytes: dict
    symbolic_loops: int
    arch: str | None
    main_kernel: int = -1
    occupancy: Occupancy | None = None


# ----------------------------------------------------------------------------
# affine forms of indices
# ----------------------------------------------------------------------------
_NO_VARS = frozenset()


def _vars_of(e) -> frozenset:
    found = set()

    def visit(n):
        if isinstance(n, E.Var):
            found.add(n)

    post_order_visit(e, visit)
    return frozenset(found)


def _affine(e, memo):
    """``(coefficients {Var: int}, vars in non-affine positions)`` of an index."""
    hit = memo.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    cls = type(e)
    if cls is E.IntImm:
        out = ({}, _NO_VARS)
    elif isinstance(e, E.Var):
        out = ({e: 1}, _NO_VARS)
    elif cls is E.Add or cls is E.Sub:
        ca, ba = _affine(e.a, memo)
        cb, bb = _affine(e.b, memo)
        sign = 1 if cls is E.Add else -1
        coeffs = dict(ca)
        for v, c in cb.items():
            coeffs[v] = coeffs.get(v, 0) + sign * c
        out = (coeffs, ba | bb)
    elif cls is E.Mul and (type(e.a) is E.IntImm or type(e.b) is E.IntImm):
        const, other = (e.a.value, e.b) if type(e.a) is E.IntImm else (e.b.value, e.a)
        co, bo = _affine(other, memo)
        out = ({v: c * const for v, c in co.items()}, bo)
    elif cls is E.Cast:
        out = _affine(e.value, memo)
    else:
        out = ({}, _vars_of(e))
    memo[id(e)] = (e, out)
    return out


def _flat_layout(buf, indices, memo, strides_memo):
    """``(coefficients, non-affine vars, lanes, lane stride)`` of ``buf[indices]`` as a
    flat element offset (``lane stride`` None when the access is scalar)."""
    strides = strides_memo.get(buf)
    if strides is None:
        strides = strides_memo[buf] = tuple(E.const_int_value(s) for s in buffer_strides(buf))
    if len(indices) == 1 and (len(strides) != 1 or strides[0] is None):
        strides = (1,)  # a flattened access of a buffer still declared with its shape
    coeffs, bad = {}, set()
    lanes, lane_stride = 1, None
    for idx, st in zip(indices, strides):
        if type(idx) is E.Ramp:
            lanes = idx.lanes
            rs = E.const_int_value(idx.stride)
            lane_stride = None if rs is None or st is None else rs * st
            if lane_stride is None:
                lane_stride = -1
            idx = idx.base
        elif type(idx) is E.Broadcast:
            lanes, lane_stride = idx.lanes, 0
            idx = idx.value
        c, b = _affine(idx, memo)
        if st is None:
            bad.update(c)
            bad.update(b)
            continue
        bad.update(b)
        for v, k in c.items():
            coeffs[v] = coeffs.get(v, 0) + k * st
    return coeffs, bad, lanes, lane_stride


# ----------------------------------------------------------------------------
# the walk
# ----------------------------------------------------------------------------
class _Level:
    """A loop around the statement being walked; ``alias`` is the enclosing level
    bound to the same GPU index when this one re-binds it (its ``factor`` is 1 then)."""

    __slots__ = ("var", "extent", "kind", "tag", "factor", "auto_unroll", "alias")

    def __init__(self, var, extent, kind, tag, auto_unroll, alias):
        self.var, self.extent, self.kind, self.tag = var, extent, kind, tag
        self.auto_unroll, self.alias = auto_unroll, alias
        self.factor = 1 if alias is not None else extent


class _Access:
    __slots__ = ("buffer", "order", "is_write", "count", "coeffs", "bad", "lanes", "lane_stride")

    def __init__(self, buffer, order, layout):
        self.buffer, self.order = buffer, order
        self.is_write, self.count = False, 0
        self.coeffs, self.bad, self.lanes, self.lane_stride = layout


class _Stmt:
    __slots__ = ("label", "levels", "accesses", "float_ops", "int_ops", "guarded", "kernel")

    def __init__(self, label, levels, guarded, kernel):
        self.label, self.levels, self.guarded, self.kernel = label, levels, guarded, kernel
        self.accesses = {}
        self.float_ops = self.int_ops = 0


class _Kernel:
    __slots__ = ("extents", "shared", "local", "flops", "bytes")

    def __init__(self):
        self.extents = {}
        self.shared = self.local = 0
        self.flops = self.bytes = 0.0


def _scope_level(scope) -> str:
    if scope in (keys.LOCAL, keys.REGISTER, keys.WARP) or scope in keys.WMMA_SCOPES:
        return "local"
    if scope and scope.startswith(keys.SHARED):
        return "shared"
    return "global"


def _binding_kind(tag: str) -> str:
    if tag.startswith("blockIdx"):
        return "blockIdx"
    if tag.startswith("threadIdx"):
        return "threadIdx"
    if tag.startswith(("vthread", "cthread")):
        return "vthread"
    return "serial"


def _int_annotation(value) -> int:
    if isinstance(value, E.IntImm):
        return int(value.value)
    if isinstance(value, int):
        return int(value)
    return 0


class _FeatureWalk(IRVisitor):
    """One pass over a function: loop stack, kernels, allocations, and per store its
    accesses and arithmetic."""

    def __init__(self):
        self.levels = []
        self.bound = {}        # GPU tag or vthread var -> its binding _Level (None when of extent 1)
        self.kernels = []
        self.kernel = None     # the _Kernel being walked
        self.guards = 0
        self.cur = None
        self.stmts = []
        self.labels = {}
        self.alloc = dict.fromkeys(SCOPE_LEVELS, 0)
        self.symbolic = 0
        self.affine_memo = {}
        self.strides_memo = {}
        self.size_memo = {}
        self.allocated = {}    # data Var -> Buffer of the allocations seen (for access_ptr)
        self.fragment_shape = {}  # fragment data Var -> (m, n, k), from infer_fragment's attributes

    def size_of(self, buf):
        """``const_size(buf)``, once per buffer."""
        if buf not in self.size_memo:
            self.size_memo[buf] = const_size(buf)
        return self.size_memo[buf]

    # -- loops and bindings ------------------------------------------------------
    def _enter(self, var, extent_expr, kind, tag, body, auto_unroll=0):
        extent = E.const_int_value(extent_expr)
        gpu = kind in ("blockIdx", "threadIdx")
        started = False
        if gpu:
            if self.kernel is None:
                self.kernel = _Kernel()
                self.kernels.append(self.kernel)
                started = True
            if extent is not None:
                self.kernel.extents[tag] = max(self.kernel.extents.get(tag, 1), extent)
        key = tag if gpu else (var if kind == "vthread" else None)
        rebound = key is not None and key in self.bound
        pushed = extent is not None and extent != 1
        if extent is None:
            self.symbolic += 1
        level = None
        if pushed:
            level = _Level(var, extent, kind, tag, auto_unroll, self.bound.get(key) if rebound else None)
            if rebound and level.alias is None:  # re-binds an index of extent 1: runs on one thread
                level.factor = 1
            self.levels.append(level)
        if key is not None and not rebound:
            self.bound[key] = level
        self.visit(body)
        if key is not None and not rebound:
            del self.bound[key]
        if pushed:
            self.levels.pop()
        if started:
            self.kernel = None

    def visit_For(self, s):
        if s.kind is S.ForKind.THREAD_BINDING and s.thread_binding is not None:
            tag = s.thread_binding.thread_tag
            kind = _binding_kind(tag)
        else:
            kind = _FOR_KINDS.get(s.kind, "serial")
            tag = ""
            if kind == "serial" and s.annotation(_UNROLL_PRAGMA) is not None:
                kind = "unrolled"
        self._enter(s.loop_var, s.extent, kind, tag, s.body, _int_annotation(s.annotation(_AUTO_UNROLL, 0)))

    def visit_AttrStmt(self, s):
        if s.attr_key == keys.FRAGMENT_SHAPE:
            self.fragment_shape[s.node] = parse_fragment_shape(s.value.value)
        if keys.is_thread_attr(s.attr_key) and isinstance(s.node, E.IterVar):
            tag = s.node.thread_tag or ("vthread" if s.attr_key == keys.VIRTUAL_THREAD else "")
            kind = "vthread" if s.attr_key == keys.VIRTUAL_THREAD else _binding_kind(tag)
            self._enter(s.node.var, s.value, kind, tag, s.body)
        else:
            self.visit(s.body)

    def visit_IfThenElse(self, s):
        self.guards += 1
        self.visit(s.then_case)
        if s.else_case is not None:
            self.visit(s.else_case)
        self.guards -= 1

    def visit_Allocate(self, s):
        buf = s.buffer
        nbytes = thread_bytes(buf) or 0  # (a fragment's per lane)
        level = _scope_level(buf.scope)
        self.allocated[buf.data] = buf
        if self.kernel is not None and level == "shared":
            self.kernel.shared += nbytes
        elif self.kernel is not None and level == "local":
            self.kernel.local += nbytes
        else:
            self.alloc[level] += nbytes
        self.visit(s.body)

    # -- statements ----------------------------------------------------------------
    def visit_BufferStore(self, s):
        name = s.buffer.name
        k = self.labels.get(name, 0)
        self.labels[name] = k + 1
        label = name if k == 0 else f"{name}#{k}"
        kernel = len(self.kernels) - 1 if self.kernel is not None else -1
        st = _Stmt(label, tuple(self.levels), self.guards > 0, kernel)
        outer = self.cur
        self.cur = st
        self._access(s.buffer, s.indices, True)
        self.visit(s.value)
        for idx in s.indices:
            self.visit(idx)
        self.cur = outer
        self.stmts.append(st)

    def visit_BufferLoad(self, e):
        if self.cur is not None:
            self._access(e.buffer, e.indices, False)
        for idx in e.indices:
            self.visit(idx)

    def _access(self, buf, indices, write, count=1):
        st = self.cur
        acc = st.accesses.get(buf.data)
        if acc is None:
            layout = _flat_layout(buf, indices, self.affine_memo, self.strides_memo)
            acc = st.accesses[buf.data] = _Access(buf, len(st.accesses), layout)
        acc.count += count
        acc.is_write = acc.is_write or write

    # -- tensor-core calls: a statement each, per lane (the warp's work over 32) ----
    def visit_Evaluate(self, s):
        call = s.value
        if not (isinstance(call, E.Call) and call.op in keys.WMMA_INTRINSICS):
            return self.visit(call)
        frag = self.allocated.get(call.args[0])
        if frag is None:  # not a fragment allocated here: nothing to describe
            return None
        name = f"{call.op[4:]}({frag.name})"
        k = self.labels.get(name, 0)
        self.labels[name] = k + 1
        kernel = len(self.kernels) - 1 if self.kernel is not None else -1
        st = _Stmt(name if k == 0 else f"{name}#{k}", tuple(self.levels), self.guards > 0, kernel)
        outer = self.cur
        self.cur = st
        a = call.args
        lane = 1 / keys.WARP_SIZE

        if call.op == keys.WMMA_MMA:
            m, n, kk = self.fragment_shape.get(a[0], (16, 16, 16))
            st.float_ops += 2 * m * n * kk * lane
            for var, index, write in ((a[0], a[1], True), (a[2], a[3], False), (a[4], a[5], False),
                                      (a[6], a[7], False)):
                buf = self.allocated.get(var)
                if buf is not None:
                    self._access(buf, (index,), write, fragment_elements(buf.scope, (m, n, kk)) * lane)
        else:
            m, n, kk = (E.const_int_value(x) for x in a[1:4])
            rows_cols = fragment_elements(frag.scope, (m, n, kk))
            self._access(frag, (a[4],), call.op != keys.WMMA_STORE, rows_cols * lane)
            if call.op in (keys.WMMA_LOAD, keys.WMMA_STORE):
                ptr = a[5]
                if isinstance(ptr, E.Call) and ptr.op == keys.ACCESS_PTR:
                    data, offset = ptr.args[1], ptr.args[2]
                    mem = self.allocated.get(data) or S.Buffer(data.name, ptr.args[0].dtype, (ptr.args[3],), data)
                    self._access(mem, (offset,), call.op == keys.WMMA_STORE, rows_cols * lane)
        self.cur = outer
        self.stmts.append(st)
        return None

    def _count_op(self, dtype):
        st = self.cur
        if st is None:
            return
        d = _dt.parse(dtype)
        if d.is_float:
            st.float_ops += d.lanes
        elif d.is_integer:
            st.int_ops += d.lanes

    def visit_BinaryOp(self, e):
        if isinstance(e, _ARITH):
            self._count_op(e.a.dtype)
        self.visit(e.a)
        self.visit(e.b)

    def visit_CmpOp(self, e):
        self._count_op(e.a.dtype)
        self.visit(e.a)
        self.visit(e.b)

    def visit_Call(self, e):
        if e.op in _MATH_CALLS:
            self._count_op(e.dtype)
        for a in e.args:
            if isinstance(a, E.PrimExpr):
                self.visit(a)

    def visit_IntImm(self, e):
        return None

    def visit_FloatImm(self, e):
        return None

    def visit_Var(self, e):
        return None


# ----------------------------------------------------------------------------
# from the walk to the records
# ----------------------------------------------------------------------------
def _stride(var, coeffs, bad) -> int:
    """The coefficient of loop variable ``var`` in an access's flat offset: 0 when there
    is no such loop or the offset does not vary with it, -1 when it is not affine in it."""
    if var is None:
        return 0
    if var in bad:
        return -1
    return coeffs.get(var, 0)


def _finish_stmt(st: _Stmt, kernels, size_of) -> StmtFeature:
    levels = st.levels
    n = len(levels)
    factors = [lv.factor for lv in levels]
    topdown, acc = [], 1.0
    for f in factors:
        acc *= f
        topdown.append(acc)
    executions = acc
    bottomup = [0.0] * n
    acc = 1.0
    for i in range(n - 1, -1, -1):
        acc *= factors[i]
        bottomup[i] = acc

    position = {id(lv): i for i, lv in enumerate(levels)}
    inner = levels[-1].var if levels else None
    vec_var = tx_var = None
    vector_width = unroll = parallel = 1
    auto_unroll = 0
    for lv in levels:
        if lv.kind == "vectorized":
            vector_width *= lv.extent
            vec_var = lv.var
        elif lv.kind == "unrolled":
            unroll *= lv.extent
        elif lv.kind == "parallel":
            parallel *= lv.extent
        elif lv.tag == "threadIdx.x":
            tx_var = lv.var
        auto_unroll = max(auto_unroll, lv.auto_unroll)

    accesses = []
    working = [0.0] * n
    total_bytes = 0.0
    for a in sorted(st.accesses.values(), key=lambda x: x.order):
        buf = a.buffer
        elem_bytes = _dt.parse(buf.dtype).bytes
        lanes = a.lanes
        if lanes > 1:
            vector_width = max(vector_width, lanes)
        size = size_of(buf)
        bad = a.bad
        coeffs = a.coeffs

        if lanes > 1:  # a vector access: its lanes are the innermost, vectorized dimension
            stride_vec = stride_in = a.lane_stride
        else:
            stride_vec = _stride(vec_var, coeffs, bad)
            stride_in = _stride(inner, coeffs, bad)
        # the levels the index varies with; a re-bound GPU index varies with its binding level
        depends = [lv.var in bad or coeffs.get(lv.var, 0) != 0 for lv in levels]
        for j, lv in enumerate(levels):
            if lv.alias is not None and depends[j]:
                depends[position[id(lv.alias)]] = True
        unique = lanes if (lanes == 1 or a.lane_stride != 0) else 1
        footprint = [0.0] * n
        for i in range(n - 1, -1, -1):
            if depends[i]:
                unique *= factors[i]
            footprint[i] = float(min(unique, size) if size is not None else unique)
        distinct = footprint[0] if n else float(min(unique, size) if size is not None else unique)
        scalar_accesses = executions * a.count * lanes
        nbytes = scalar_accesses * elem_bytes
        total_bytes += nbytes
        for i in range(n):
            working[i] += footprint[i] * elem_bytes
        accesses.append(AccessFeature(
            buffer=buf.name, scope=_scope_level(buf.scope), elem_bytes=elem_bytes, order=a.order,
            is_write=a.is_write, count=a.count, lanes=lanes, accesses=scalar_accesses, bytes=nbytes,
            unique_bytes=distinct * elem_bytes, reuse=scalar_accesses / distinct if distinct else 0.0,
            stride_inner=stride_in, stride_vector=stride_vec, stride_threadx=_stride(tx_var, coeffs, bad),
            contiguous=stride_in == 1, affine=not any(lv.var in bad for lv in levels) and a.lane_stride != -1,
            footprint=tuple(f * elem_bytes for f in footprint)))

    loops = tuple(LoopFeature(var=lv.var.name, extent=lv.extent, kind=lv.kind, tag=lv.tag, nest_level=i,
                              topdown=topdown[i], bottomup=bottomup[i], working_set=working[i])
                  for i, lv in enumerate(levels))
    flops = executions * st.float_ops
    if st.kernel >= 0:
        kernels[st.kernel].flops += flops
        kernels[st.kernel].bytes += total_bytes
    return StmtFeature(
        label=st.label, loops=loops, accesses=tuple(accesses), executions=executions, float_ops=st.float_ops,
        int_ops=st.int_ops, flops=flops, bytes=total_bytes, vector_width=vector_width, unroll_extent=unroll,
        auto_unroll_max_step=auto_unroll, parallel_extent=parallel, guarded=st.guarded, kernel=st.kernel)


def _functions(node):
    if isinstance(node, S.IRModule):
        funcs = [f for f in node.functions.values() if not f.attrs.get(keys.HOST)]
        name = next(iter(node.functions)) if len(node) else "main"
        return name, [f.body for f in funcs]
    if isinstance(node, S.PrimFunc):
        return node.name, [node.body]
    if isinstance(node, S.Stmt):
        return "stmt", [node]
    raise TeccTypeError(f"extract_features takes a tir.PrimFunc, an IRModule or a statement, got "
                        f"{type(node).__name__}; lower a schedule first (tecc.lower(s, args))")


def extract_features(node, arch=None) -> FunctionFeatures:
    """Walk ``node`` once and describe its statements, loops, accesses and kernels.

    Parameters
    ----------
    node : PrimFunc, IRModule or Stmt
        A lowered function (any stage: as ``te`` lowering leaves it, flattened, or
        split into host and kernels -- host functions are skipped).
    arch : str, optional
        The GPU architecture whose limits the occupancy estimate uses; ``"sm_80"``
        when None.  Ignored without GPU code.

    Returns
    -------
    FunctionFeatures

    Raises
    ------
    TeccTypeError
        If ``node`` is not IR.
    TargetError
        If ``arch`` is not a known compute capability.
    """
    name, bodies = _functions(node)
    walk = _FeatureWalk()
    for body in bodies:
        walk.visit(body)
    kernels_acc = walk.kernels
    stmts = tuple(_finish_stmt(st, kernels_acc, walk.size_of) for st in walk.stmts)

    kernels = []
    for k in kernels_acc:
        grid, block = launch_dims(k.extents)
        threads = math.prod(block)
        blocks = math.prod(grid)
        kernels.append(KernelFeature(grid=grid, block=block, threads_per_block=threads, blocks=blocks,
                                     shared_bytes=k.shared, local_bytes=k.local, flops=k.flops, bytes=k.bytes))
    flops = sum(st.flops for st in stmts)
    moved = dict.fromkeys(SCOPE_LEVELS, 0.0)
    for st in stmts:
        for a in st.accesses:
            moved[a.scope] += a.bytes
    total = sum(moved.values())
    denominator = moved["global"] or total
    main = -1
    occupancy = None
    if kernels:
        main = max(range(len(kernels)), key=lambda i: (kernels[i].flops, kernels[i].bytes, -i))
        k = kernels[main]
        occupancy = estimate_occupancy(k.threads_per_block, k.shared_bytes, k.local_bytes, arch or "sm_80")
    return FunctionFeatures(
        name=name, stmts=stmts, kernels=tuple(kernels), flops=flops, bytes_moved=moved,
        arith_intensity=flops / denominator if denominator else 0.0,
        vector_width=max((st.vector_width for st in stmts), default=1),
        parallel_extent=max((st.parallel_extent for st in stmts), default=1),
        alloc_bytes=dict(walk.alloc), symbolic_loops=walk.symbolic,
        arch=(occupancy.arch if occupancy is not None else None), main_kernel=main, occupancy=occupancy)


__all__ = [
    "AccessFeature", "FunctionFeatures", "KernelFeature", "LOOP_KINDS", "LoopFeature", "Occupancy",
    "REGISTERS_PER_THREAD_ESTIMATE", "SCOPE_LEVELS", "SHARED_RESERVED_PER_BLOCK", "SMLimits", "StmtFeature",
    "estimate_occupancy", "extract_features", "sm_limits",
]
