"""CUDA kernels for the CPU, TIR to TIR: thread loops split at barriers.

A kernel as the CUDA pipeline leaves it (``thread_extent`` attributes, ``shared``,
``local`` and ``register`` allocations, ``tvm_storage_sync`` barriers) is rewritten
into a function that one CPU thread can run for a whole thread block:

* the ``thread_extent`` attributes are removed; a loop over the blocks (an OpenMP
  loop: blocks are independent) binds ``blockIdx.*`` from the block number;
* a statement region with no barrier becomes ``for (tid over the block) { region }``
  with ``threadIdx.x/y/z`` computed from ``tid`` -- every thread runs the region
  before any thread goes on, which is what a barrier between two regions promises;
* a ``For``/``IfThenElse``/``While`` that holds a barrier must be uniform over the
  threads of a block (its bounds or condition use no thread index and no per-thread
  value); it stays outside the thread loops and its body is split in turn.  A
  barrier under thread-dependent control flow raises :class:`SimError`;
* per-thread state that lives across a barrier gets one slot per thread: a ``local``
  (or ``register``) allocation ``acc[n]`` becomes ``acc[threads, n]`` indexed by
  ``tid``, and a
  ``LetStmt`` whose value is not uniform becomes a per-thread array;
* ``shared`` allocations stay per block (one copy, allocated inside the block loop);
  global buffers are the caller's arrays.

Warp shuffles (``let x = tecc.warp_shuffle_down(v, d)``) are rewritten first, by
:func:`lower_warp_shuffles`, into an exchange through a shared scratch array between
two barriers: every thread writes ``v`` at its linear thread number, then reads the
slot ``d`` above it when that lane is in the same warp (its own otherwise).  Our
kernels run every shuffle uniformly over the block, so a block-wide exchange gives
what each warp's shuffle gives.

The barriers themselves are kept (as block-level statements) so that the checking
interpreter of :mod:`.check` can count barrier epochs; the C printer of
:mod:`.codegen` prints them as comments.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import TeccError
from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import keys
from ...tir import stmt as S
from ...tir.analysis import launch_dims, thread_extents
from ...tir.functor import IRMutator, IRVisitor, collect_vars, post_order_visit
from ...tir.keys import BLOCK_TAGS, THREAD_TAGS, WARP_SHUFFLE_DOWN, WARP_SIZE
from ...tir.printer import to_text
from .wmma import has_wmma, lower_wmma


class SimError(TeccError):
    """A kernel cannot be run with CUDA semantics on the CPU (undefined behaviour on a
    GPU such as a barrier under thread-dependent control flow, a bad launch
    configuration, a failed assertion inside a kernel)."""


def is_barrier(s) -> bool:
    """True if ``s`` is ``Evaluate(tvm_storage_sync(...))`` (``__syncthreads()``)."""
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == keys.STORAGE_SYNC


def _int(value: int) -> E.IntImm:
    return E.IntImm("int32", int(value))


def _mul(a, b):
    """``a * b`` with constants folded."""
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm):
        return E.IntImm(a.dtype, a.value * b.value)
    if E.is_const_int(a, 1):
        return b
    if E.is_const_int(b, 1):
        return a
    return E.Mul(a, b)


@dataclass
class SimKernel:
    """A device function rewritten for block-at-a-time execution.

    Attributes
    ----------
    func : PrimFunc
        The original device function.
    grid, block : tuple of PrimExpr
        ``(x, y, z)`` extents of ``blockIdx`` and ``threadIdx`` (1 where unused), over
        the kernel's scalar parameters.
    bid, tid : Var
        The linear block number (int64, bound by the block loop) and the linear thread
        number inside the block (int32, bound by every thread loop).
    block_body : Stmt
        The body for one block: binds ``blockIdx.*`` from ``bid``, allocates the shared
        buffers, runs the thread loops; barriers are kept as block-level statements.
    expanded : dict
        data Var of a per-thread copy ``[threads, n]`` -> the original local Buffer.
    origin : dict
        rewritten BufferLoad/BufferStore -> the node of the original kernel.
    """

    func: S.PrimFunc
    grid: tuple
    block: tuple
    bid: E.Var
    tid: E.Var
    block_body: S.Stmt
    expanded: dict = field(default_factory=dict)
    origin: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.func.name

    @property
    def threads(self):
        """Threads per block (an expression)."""
        return _mul(_mul(self.block[0], self.block[1]), self.block[2])

    def thread_coords(self, t: int, block_dims) -> tuple:
        """``(x, y, z)`` of linear thread ``t`` for concrete block dimensions."""
        bx, by, _ = block_dims
        return (t % bx, t // bx % by, t // (bx * by))

    def block_coords(self, b: int, grid_dims) -> tuple:
        gx, gy, _ = grid_dims
        return (b % gx, b // gx % gy, b // (gx * gy))

    def sim_func(self) -> S.PrimFunc:
        """The C-printable function: a parallel loop over all blocks of the grid."""
        nblocks = None
        for g in self.grid:
            if isinstance(g, E.IntImm):
                g64 = E.IntImm("int64", g.value)
            else:
                g64 = E.Cast("int64", g) if g.dtype != "int64" else g
            nblocks = g64 if nblocks is None else _mul(nblocks, g64)
        loop = S.For(self.bid, E.IntImm("int64", 0), nblocks, S.ForKind.PARALLEL, self.block_body)
        return S.PrimFunc(self.func.params, loop, dict(self.func.buffer_map),
                          {keys.GLOBAL_SYMBOL: self.func.name})


# ----------------------------------------------------------------------------
# parsing the launch structure
# ----------------------------------------------------------------------------
class _StripThreadAttrs(IRMutator):
    """Remove ``thread_extent`` attributes, noting the variables of each tag."""

    def __init__(self, kernel_name):
        self.kernel_name = kernel_name
        self.vars = {}      # tag -> [Var]

    def visit_AttrStmt(self, s):
        if s.attr_key == keys.VIRTUAL_THREAD:
            raise SimError(f"kernel {self.kernel_name}: virtual threads must be lowered "
                           "(inject_virtual_thread) before the kernel can be simulated")
        if s.attr_key != keys.THREAD_EXTENT:
            return IRMutator.generic_visit(self, s)
        iv = s.node
        tag = getattr(iv, "thread_tag", "")
        if tag not in BLOCK_TAGS + THREAD_TAGS:
            raise SimError(f"kernel {self.kernel_name}: unknown thread tag {tag!r} in a "
                           "thread_extent attribute")
        self.vars.setdefault(tag, [])
        if iv.var not in self.vars[tag]:
            self.vars[tag].append(iv.var)
        return self.visit(s.body)

    def visit_For(self, s):
        if s.kind is S.ForKind.THREAD_BINDING:
            raise SimError(f"kernel {self.kernel_name}: a THREAD_BINDING loop over "
                           f"{s.loop_var.name} reached the simulator; kernels bind threads "
                           "with thread_extent attributes")
        return IRMutator.generic_visit(self, s)


def _contains_sync(stmt, memo) -> bool:
    """True if ``stmt`` holds a barrier or a shared allocation (block-level things)."""
    key = id(stmt)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    found = []

    def visit(node):
        if found:
            return
        if is_barrier(node) or (isinstance(node, S.Allocate) and node.buffer.scope == keys.SHARED):
            found.append(node)

    post_order_visit(stmt, visit)
    memo[key] = (stmt, bool(found))  # keep stmt alive so its id stays unique
    return bool(found)


def _header(s) -> str:
    """One-line description of a statement that holds a barrier."""
    if isinstance(s, S.For):
        return (f"for ({s.loop_var.name}, {to_text(s.min)}, {to_text(s.extent)})")
    if isinstance(s, S.IfThenElse):
        return f"if ({to_text(s.condition)})"
    if isinstance(s, S.While):
        return f"while ({to_text(s.condition)})"
    if isinstance(s, S.Allocate):
        shape = ", ".join(to_text(x) for x in s.buffer.shape)
        return f"allocate {s.buffer.name}[{shape}] ({s.buffer.scope})"
    return to_text(s).splitlines()[0]


# ----------------------------------------------------------------------------
# the split
# ----------------------------------------------------------------------------
class _Uniformity(IRVisitor):
    """Does an expression have one value for all threads of a block?"""

    def __init__(self, uniform_vars):
        self.uniform_vars = uniform_vars
        self.reason = None

    def visit_Var(self, v):
        if self.reason is None and v not in self.uniform_vars:
            self.reason = f"it uses {v.name}, which differs between threads"

    def visit_BufferLoad(self, e):
        if self.reason is None:
            self.reason = f"it reads memory ({e.buffer.name}), a per-thread value"

    def visit_Let(self, e):
        self.visit(e.value)
        self.uniform_vars.add(e.var)
        self.visit(e.body)


class _ThreadPure(IRVisitor):
    """Is an expression a pure function of uniform values and thread indices (so each
    thread can recompute it wherever it is needed)?"""

    def __init__(self, allowed):
        self.allowed = allowed
        self.ok = True

    def visit_Var(self, v):
        if v not in self.allowed:
            self.ok = False

    def visit_BufferLoad(self, e):
        self.ok = False

    def visit_Let(self, e):
        self.visit(e.value)
        self.allowed.add(e.var)
        self.visit(e.body)


class _RegionRewriter(IRMutator):
    """Inside a thread loop: per-thread lets and expanded local buffers -> slots at tid."""

    def __init__(self, splitter):
        self.sp = splitter

    def visit_Var(self, v):
        return self.sp.let_slots.get(v, v)

    def _indices(self, buf, indices):
        new = self.sp.expanded_of.get(buf.data)
        if new is None:
            return buf, indices
        assert len(indices) == 1, f"local buffer {buf.name} must be flattened"
        return new, (self.sp.tid, indices[0])

    def visit_BufferLoad(self, e):
        indices = tuple(self.visit(i) for i in e.indices)
        buf, indices = self._indices(e.buffer, indices)
        if buf is e.buffer and all(a is b for a, b in zip(indices, e.indices)):
            return e
        new = E.BufferLoad(buf, indices)
        self.sp.origin[new] = self.sp.origin.get(e, e)
        return new

    def visit_BufferStore(self, s):
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        buf, indices = self._indices(s.buffer, indices)
        if buf is s.buffer and value is s.value and all(a is b for a, b in zip(indices, s.indices)):
            return s
        new = S.BufferStore(buf, value, indices)
        self.sp.origin[new] = self.sp.origin.get(s, s)
        return new


class _Splitter:
    def __init__(self, func: S.PrimFunc, thread_vars: dict, block: tuple, uniform_vars: set):
        self.name = func.name
        self.thread_vars = thread_vars          # tag -> [Var]
        self.block = block
        self.uniform_vars = uniform_vars
        self.tid = E.Var("tid", "int32")
        self.threads = _mul(_mul(block[0], block[1]), block[2])
        self.let_slots = {}                     # per-thread let Var -> BufferLoad(slot, tid)
        self.remat = {}                         # per-thread pure let Var -> value, in order
        self.expanded_of = {}                   # original data Var -> expanded Buffer
        self.expanded = {}                      # expanded data Var -> original Buffer
        self.origin = {}
        self._memo = {}
        self._rewriter = _RegionRewriter(self)

    # -- helpers -------------------------------------------------------------
    def has_sync(self, s) -> bool:
        return _contains_sync(s, self._memo)

    def require_uniform(self, expr, stmt, what):
        check = _Uniformity(set(self.uniform_vars))
        check.visit(expr)
        if check.reason is not None:
            raise SimError(
                f"kernel {self.name}: barrier inside thread-dependent control flow: undefined "
                f"behaviour on a GPU.\n  statement: {_header(stmt)}\n  its {what} is not the "
                f"same for all threads of a block: {check.reason}.\n  Move the barrier out of "
                "the thread-dependent branch or loop.")

    def is_uniform(self, expr) -> bool:
        check = _Uniformity(set(self.uniform_vars))
        check.visit(expr)
        return check.reason is None

    def thread_index_lets(self, body):
        """Bind the thread index variables used in ``body`` from ``tid``."""
        used = collect_vars(body)
        bx, by, _ = self.block
        lets = []
        for axis, tag in enumerate(THREAD_TAGS):
            for var in self.thread_vars.get(tag, ()):
                if var not in used:
                    continue
                if axis == 0:
                    only_x = E.is_const_int(by, 1) and E.is_const_int(self.block[2], 1)
                    value = self.tid if only_x else E.Mod(self.tid, bx)
                elif axis == 1:
                    value = E.Mod(E.Div(self.tid, bx), by)
                else:
                    value = E.Div(self.tid, _mul(bx, by))
                if var.dtype != "int32":
                    value = E.Cast(var.dtype, value)
                lets.append((var, value))
        for var, value in reversed(lets):
            body = S.LetStmt(var, value, body)
        return body

    def is_thread_pure(self, expr) -> bool:
        allowed = set(self.uniform_vars) | set(self.remat)
        for vars_ in self.thread_vars.values():
            allowed.update(vars_)
        check = _ThreadPure(allowed)
        check.visit(expr)
        return check.ok

    def remat_lets(self, body):
        """Recompute the pure per-thread lets that ``body`` uses (transitively)."""
        if not self.remat:
            return body
        used = collect_vars(body)
        needed = []
        for var, value in reversed(list(self.remat.items())):
            if var in used:
                needed.append((var, value))
                used |= collect_vars(value)
        for var, value in needed:  # innermost (latest defined) first
            body = S.LetStmt(var, value, body)
        return body

    def region(self, stmts) -> S.Stmt:
        """A barrier-free statement list run by every thread: ``for (tid) {...}``."""
        body = self._rewriter.visit(S.seq(*stmts))
        body = self.remat_lets(body)
        body = self.thread_index_lets(body)
        return S.For(self.tid, _int(0), self.threads, S.ForKind.SERIAL, body)

    # -- block level -----------------------------------------------------------
    def block_level(self, s) -> S.Stmt:
        if is_barrier(s):
            scope = s.value.args[0].value if s.value.args else "shared"
            if scope not in ("shared", "warp"):
                raise SimError(f"kernel {self.name}: a {scope!r} barrier ({to_text(s)}) cannot "
                               "be simulated; only block barriers (__syncthreads) are supported")
            return s
        if not self.has_sync(s):
            return self.region([s])
        method = getattr(self, "split_" + type(s).__name__, None)
        if method is None:
            raise SimError(f"kernel {self.name}: cannot split {type(s).__name__} holding a "
                           f"barrier: {_header(s)}")
        return method(s)

    def split_SeqStmt(self, s):
        out, pending = [], []
        for x in s.seq:
            if not is_barrier(x) and not self.has_sync(x):
                pending.append(x)
                continue
            if pending:
                out.append(self.region(pending))
                pending = []
            out.append(self.block_level(x))
        if pending:
            out.append(self.region(pending))
        return S.seq(*out)

    def split_For(self, s):
        self.require_uniform(s.min, s, "start")
        self.require_uniform(s.extent, s, "extent")
        self.uniform_vars.add(s.loop_var)
        kind = s.kind if s.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED) else S.ForKind.SERIAL
        return S.For(s.loop_var, s.min, s.extent, kind, self.block_level(s.body),
                     annotations=s.annotations)

    def split_IfThenElse(self, s):
        self.require_uniform(s.condition, s, "condition")
        else_case = self.block_level(s.else_case) if s.else_case is not None else None
        return S.IfThenElse(s.condition, self.block_level(s.then_case), else_case)

    def split_While(self, s):
        self.require_uniform(s.condition, s, "condition")
        return S.While(s.condition, self.block_level(s.body))

    def split_AttrStmt(self, s):
        return S.AttrStmt(s.node, s.attr_key, s.value, self.block_level(s.body))

    def split_AssertStmt(self, s):
        if self.is_uniform(s.condition):
            return S.AssertStmt(s.condition, s.message, self.block_level(s.body))
        check = self.region([S.AssertStmt(s.condition, s.message, S.Evaluate(_int(0)))])
        return S.seq(check, self.block_level(s.body))

    def split_LetStmt(self, s):
        if self.is_uniform(s.value):
            self.uniform_vars.add(s.var)
            return S.LetStmt(s.var, s.value, self.block_level(s.body))
        if self.is_thread_pure(s.value):
            # an index computed from the thread indices: every region recomputes it
            self.remat[s.var] = s.value
            return self.block_level(s.body)
        # a per-thread value living across a barrier: one slot per thread
        lanes = _dt.lanes(s.var.dtype)
        elem = _dt.element(s.var.dtype)
        slot = S.Buffer(f"{s.var.name}_per_thread", elem, (_mul(self.threads, _int(lanes)),),
                        E.Var(f"{s.var.name}_per_thread", "handle"), "local")
        if lanes == 1:
            index = self.tid
        else:
            index = E.Ramp(E.Mul(self.tid, _int(lanes)), _int(1), lanes)
        # the slot store is rewritten with the lets known so far, then the var maps to it
        fill = self.region([S.BufferStore(slot, s.value, (index,))])
        self.let_slots[s.var] = E.BufferLoad(slot, (index,))
        return S.Allocate(slot, S.seq(fill, self.block_level(s.body)))

    def split_Allocate(self, s):
        buf = s.buffer
        for extent in buf.shape:
            self.require_uniform(extent, s, "size")
        if buf.scope == keys.SHARED:
            return S.Allocate(buf, self.block_level(s.body))
        # a per-thread buffer whose scope spans a barrier: [threads, n]
        size = None
        for extent in buf.shape:
            size = extent if size is None else _mul(size, extent)
        new = S.Buffer(buf.name, buf.dtype, (self.threads, size), E.Var(buf.name, "handle"), "local")
        self.expanded_of[buf.data] = new
        self.expanded[new.data] = buf
        return S.Allocate(new, self.block_level(s.body))


class _DemoteRegisters(IRMutator):
    """Register slots (``promote_local_registers``) back to local arrays of scalars:
    ``r: float32x8 (register)`` becomes ``r[8] (local)``, ``r[0]`` becomes
    ``r[ramp(0, 1, 8)]``.  The splitter and the checker then know one kind of
    per-thread buffer."""

    def __init__(self):
        self.local = {}  # data Var of a register buffer -> its local twin

    def _twin(self, buf):
        twin = self.local.get(buf.data)
        if twin is None:
            lanes = _dt.lanes(buf.dtype)
            twin = S.Buffer(buf.name, _dt.element(buf.dtype), (_int(lanes),), E.Var(buf.name, "handle"),
                            keys.LOCAL)
            self.local[buf.data] = twin
        return twin

    def _index(self, buf):
        lanes = _dt.lanes(buf.dtype)
        return (_int(0),) if lanes == 1 else (E.Ramp(_int(0), _int(1), lanes),)

    def visit_Allocate(self, s):
        if s.buffer.scope != keys.REGISTER:
            return self.generic_visit(s)
        return S.Allocate(self._twin(s.buffer), self.visit(s.body))

    def visit_BufferLoad(self, e):
        if e.buffer.scope != keys.REGISTER:
            return self.generic_visit(e)
        return E.BufferLoad(self._twin(e.buffer), self._index(e.buffer))

    def visit_BufferStore(self, s):
        if s.buffer.scope != keys.REGISTER:
            return self.generic_visit(s)
        return S.BufferStore(self._twin(s.buffer), self.visit(s.value), self._index(s.buffer))


def split_kernel(func: S.PrimFunc) -> SimKernel:
    """Rewrite a device function for block-at-a-time execution.

    Parameters
    ----------
    func : PrimFunc
        A device function per the kernel IR contract (``attrs["tecc.kernel"]``,
        ``thread_extent`` attributes, flattened buffers).

    Returns
    -------
    SimKernel

    Raises
    ------
    SimError
        A barrier (or a shared allocation) under thread-dependent control flow, or a
        launch structure the simulator does not know.
    """
    strip = _StripThreadAttrs(func.name)
    body = _DemoteRegisters().visit(strip.visit(func.body))
    grid, block = launch_dims(thread_extents(func))
    scalar_params = {p for p in func.params if p not in func.buffer_map}
    for ext in grid + block:
        bad = sorted(v.name for v in collect_vars(ext) if v not in scalar_params)
        if bad:
            raise SimError(f"kernel {func.name}: a launch extent ({to_text(ext)}) uses "
                           f"{', '.join(bad)}, which is not a scalar parameter of the kernel")

    bid = E.Var("block_id", "int64")
    uniform = set(scalar_params)
    lets = []
    gx, gy = (E.Cast("int64", g) for g in grid[:2])
    for axis, tag in enumerate(BLOCK_TAGS):
        for var in strip.vars.get(tag, ()):
            uniform.add(var)
            if axis == 0:
                value = E.Mod(bid, gx)
            elif axis == 1:
                value = E.Mod(E.Div(bid, gx), gy)
            else:
                value = E.Div(bid, E.Mul(gx, gy))
            lets.append((var, E.Cast(var.dtype, value)))
    body = lower_warp_shuffles(body, strip.vars, block, func.name)
    if has_wmma(body):
        tid, _ = linear_thread_index(strip.vars, block)
        body = lower_wmma(body, func, E.Mod(tid, _int(WARP_SIZE)), SimError)
    thread_vars = {t: strip.vars[t] for t in THREAD_TAGS if t in strip.vars}
    sp = _Splitter(func, thread_vars, block, uniform)
    block_body = sp.block_level(body)
    for var, value in reversed(lets):
        block_body = S.LetStmt(var, value, block_body)
    return SimKernel(func, grid, block, bid, sp.tid, block_body, sp.expanded, sp.origin)


# ----------------------------------------------------------------------------
# warp shuffles
# ----------------------------------------------------------------------------
def _barrier() -> S.Evaluate:
    return S.Evaluate(E.Call("int32", keys.STORAGE_SYNC, (E.StringImm("shared"),)))


def _is_shuffle(e) -> bool:
    return isinstance(e, E.Call) and e.op == WARP_SHUFFLE_DOWN


class _ShuffleExchange(IRMutator):
    """``let x = warp_shuffle_down(v, d)`` -> an exchange through shared scratch:

    ``scratch[L] = v; barrier; let x = (lane + d < 32 && L + d < threads) ?
    scratch[L + d] : scratch[L]; barrier; ...`` with ``L`` the linear thread number
    and ``lane = L % 32``.  The second barrier lets the next exchange reuse the
    scratch array.  One scratch array per dtype, allocated for the whole kernel.
    """

    def __init__(self, kernel_name, linear_tid, threads):
        self.kernel_name = kernel_name
        self.linear = linear_tid
        self.threads = threads
        self.scratch = {}  # dtype -> shared Buffer

    def _buffer(self, dtype):
        buf = self.scratch.get(dtype)
        if buf is None:
            name = f"tecc_shuffle_{dtype}"
            buf = S.Buffer(name, dtype, (self.threads,), E.Var(name, "handle"), keys.SHARED)
            self.scratch[dtype] = buf
        return buf

    def visit_Call(self, e):
        if _is_shuffle(e):
            raise SimError(f"kernel {self.kernel_name}: a warp shuffle must be the whole value of a "
                           f"let statement (every lane executes it), not part of `{to_text(e)}`")
        return IRMutator.generic_visit(self, e)

    def visit_LetStmt(self, s):
        if not _is_shuffle(s.value):
            return IRMutator.generic_visit(self, s)
        value = self.visit(s.value.args[0])
        delta = self.visit(s.value.args[1])
        body = self.visit(s.body)
        if _dt.lanes(value.dtype) != 1:
            raise SimError(f"kernel {self.kernel_name}: a warp shuffle takes a scalar, got {value.dtype}")
        buf = self._buffer(value.dtype)
        lin = self.linear
        src = E.Add(lin, delta)
        same_warp = E.LT(E.Add(E.Mod(lin, _int(WARP_SIZE)), delta), _int(WARP_SIZE))
        ok = E.And(same_warp, E.LT(src, self.threads))
        read = E.Call(value.dtype, "if_then_else", (ok, E.BufferLoad(buf, (src,)), E.BufferLoad(buf, (lin,))))
        return S.seq(S.BufferStore(buf, value, (lin,)), _barrier(),
                     S.LetStmt(s.var, read, S.seq(_barrier(), body)))


def linear_thread_index(thread_vars: dict, block: tuple) -> tuple:
    """``(tid, threads)``: the linear thread number ``x + X * (y + Y * z)`` over the
    index Vars of ``thread_vars`` (tag -> list of Vars; a Var is added for a tag it
    needs but the body does not use) and the block size ``X * Y * Z``."""
    index = []
    for axis, tag in enumerate(THREAD_TAGS):
        if axis > 0 and E.is_const_int(block[axis], 1):
            index.append(None)
            continue
        vars_ = thread_vars.setdefault(tag, [])
        if not vars_:
            vars_.append(E.Var(tag, "int32"))
        var = vars_[0]
        index.append(var if var.dtype == "int32" else E.Cast("int32", var))
    x, y, z = index
    linear = x
    if y is not None or z is not None:
        yz = y if y is not None else _int(0)
        if z is not None:
            yz = E.Add(yz, _mul(block[1], z))
        linear = E.Add(x, _mul(block[0], yz))
    threads = _mul(_mul(block[0], block[1]), block[2])
    return linear, threads


def lower_warp_shuffles(body: S.Stmt, thread_vars: dict, block: tuple, kernel_name: str = "kernel") -> S.Stmt:
    """Rewrite the warp shuffles of a kernel body as block-wide exchanges.

    Parameters
    ----------
    body : Stmt
        The kernel body without its ``thread_extent`` attributes.
    thread_vars : dict
        Thread tag -> list of its index Vars; a Var is added for a tag the linear
        thread number needs but the body does not use.
    block : tuple of PrimExpr
        The ``threadIdx`` extents ``(x, y, z)``.
    kernel_name : str
        For error messages.

    Returns
    -------
    Stmt
        ``body`` itself when it has no shuffle; otherwise the rewritten body inside
        the allocations of the scratch arrays (scope ``shared``, one slot per thread).
    """
    found = []
    post_order_visit(body, lambda n: found.append(n) if _is_shuffle(n) else None)
    if not found:
        return body
    linear, threads = linear_thread_index(thread_vars, block)
    ex = _ShuffleExchange(kernel_name, linear, threads)
    body = ex.visit(body)
    for buf in ex.scratch.values():
        body = S.Allocate(buf, body)
    return body



