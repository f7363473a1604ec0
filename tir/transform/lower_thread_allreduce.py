"""Lower reductions across the threads of a block into warp shuffles or a shared-memory tree.

Lowering a schedule that binds a reduction axis to ``threadIdx`` leaves, where the
threads' partial results meet, the intrinsic::

    attr [comm_reducer(...)] "tecc.thread_allreduce" = 0
        tecc.thread_allreduce(n, t, row, nrows, all_threads, partial0[0], ...)

meaning: the ``n`` threads ``t = 0 .. n-1`` of each of ``nrows`` rows (``row`` is
this thread's row) combine their values ``partial_i[0]`` (local buffers of one
element) with the reducer; afterwards ``partial_i[0]`` holds the row's result in
thread ``t == 0`` -- in every thread of the row when ``all_threads`` is 1.

This pass runs on kernels (after ``split_host_device``, where the launch extents are
known) and replaces the intrinsic by one of:

* **warp shuffles** when ``t`` is ``threadIdx.x``, the block's x extent is ``n`` and
  the warps line up with the rows (``n`` divides or is a multiple of 32, or the block
  has no other thread dimension): each warp reduces its lanes with
  ``warp_shuffle_down`` at offsets 16, 8, 4, 2, 1 (those below ``min(n, 32)``); for
  ``n > 32`` lane 0 of every warp puts its value in a small shared buffer and the
  warps reduce those values with shuffles again.  With ``all_threads`` the result is
  broadcast through shared memory.
* otherwise a **tree through shared memory** (``if (t < step)`` steps); every thread
  of the row (or thread 0) then reads the result back.

Every thread runs the steps (no guards around barriers or shuffles); the barriers
between the steps are placed by ``thread_sync``, which runs next.  The shared
buffers are allocated at the top of the kernel, as ``split_host_device`` does.
"""
from __future__ import annotations

from ...errors import LoweringError
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..analysis.threads import thread_extents, thread_vars
from ..arith import Analyzer
from ..functor import IRMutator, substitute
from ..op import const, if_then_else, warp_shuffle_down


def store_values(buffers, index, values, name: str) -> S.Stmt:
    """``buffers[i][index] = values[i]`` for every i, every value computed before any
    store (a value may read the buffers: ``(x, y) = (y, x)``)."""
    if len(buffers) == 1:
        return S.BufferStore(buffers[0], values[0], (index,))
    tmps = [E.Var(f"{name}_v{i}", v.dtype) for i, v in enumerate(values)]
    body = S.seq(*[S.BufferStore(b, tv, (index,)) for b, tv in zip(buffers, tmps)])
    for tv, v in reversed(list(zip(tmps, values))):
        body = S.LetStmt(tv, v, body)
    return body


def thread_allreduce(combiner, n, t, row, nrows, all_threads, partials) -> S.Stmt:
    """The intrinsic statement described in the module docs (what lowering emits).

    ``partials`` are the local buffers (one element each) holding this thread's values.
    """
    args = (const(n), t, row, const(nrows), const(1 if all_threads else 0))
    args += tuple(E.BufferLoad(b, (const(0),)) for b in partials)
    call = S.Evaluate(E.Call("int32", keys.THREAD_ALLREDUCE, args))
    return S.AttrStmt(combiner, keys.THREAD_ALLREDUCE, const(0), call)


class _AllReduce:
    """The statements of one cross-thread reduction.

    ``t`` is the thread index of the reduction axis (extent ``n``), ``row`` the
    number (``nrows`` of them) of the group of threads that reduces one output.
    """

    def __init__(self, comb, t, n, row, nrows, partial, ana):
        self.comb = comb
        self.partial = partial
        self.nv = len(partial)
        self.name = partial[0].name.rsplit(".partial", 1)[0]
        self.identity = list(comb.identity_element)
        self.dtypes = [b.dtype for b in partial]
        self.t, self.n, self.row, self.nrows = t, n, row, nrows
        self.ana = ana
        self.zero = const(0, "int32")
        self.shared = []  # shared buffers the reduction allocates

    def _name(self, base, i):
        return f"{base}{i}" if self.nv > 1 else base

    def shared_buffers(self, base, size):
        """One shared buffer of ``size`` elements per reduced value."""
        bufs = [S.Buffer(self._name(base, i), dt, (const(size),), E.Var(base, "handle"), keys.SHARED)
                for i, dt in enumerate(self.dtypes)]
        self.shared += bufs
        return bufs

    def mine(self):
        """This thread's partial values."""
        return [E.BufferLoad(b, (self.zero,)) for b in self.partial]

    def combine(self, lhs, rhs):
        vmap = {v: x for v, x in zip(self.comb.lhs, lhs)}
        vmap.update({v: x for v, x in zip(self.comb.rhs, rhs)})
        return [substitute(r, vmap) for r in self.comb.result]

    def assign(self, bufs, index, values):
        return store_values(bufs, index, values, self.name)

    # -- shared-memory tree ------------------------------------------------------
    def tree_reduce(self):
        """``(steps, result)``: the partials combined in a tree in shared memory."""
        n, t = self.n, self.t
        shared = self.shared_buffers("red_buf", self.nrows * n)
        slot = self.ana.simplify(self.row * n + t)
        steps = [self.assign(shared, slot, self.mine())]
        p = 1
        while p < n:
            p *= 2
        step = p // 2
        while step >= 1:
            other = [E.BufferLoad(b, (self.ana.simplify(slot + step),)) for b in shared]
            here = [E.BufferLoad(b, (slot,)) for b in shared]
            cond = E.LT(t, const(step))
            if p != n:  # a thread count that is not a power of two: skip partners past the end
                cond = E.And(cond, E.LT(t + step, const(n)))
            steps.append(S.IfThenElse(cond, self.assign(shared, slot, self.combine(here, other))))
            step //= 2
        result = [E.BufferLoad(b, (self.ana.simplify(self.row * n),)) for b in shared]
        return steps, result

    # -- warp shuffles -------------------------------------------------------------
    def shuffle_steps(self, width, guard):
        """Reduce the partials of ``width`` consecutive lanes into the first with
        shuffles (offsets: the powers of two below ``width``).  With ``guard``, a
        partner past the end of the row (``t + offset >= n``) counts as the identity."""
        p = 1
        while p < width:
            p *= 2
        steps = []
        offset = p // 2
        while offset >= 1:
            got = [E.Var(self._name(f"{self.name}_shfl", i), dt) for i, dt in enumerate(self.dtypes)]
            others = got
            if guard:
                inside = E.LT(self.t + const(offset), const(self.n))
                others = [E.Select(inside, g, idv) for g, idv in zip(got, self.identity)]
            step = self.assign(self.partial, self.zero, self.combine(self.mine(), others))
            # every lane runs the shuffles, before any select uses their values
            for g, b in reversed(list(zip(got, self.partial))):
                step = S.LetStmt(g, warp_shuffle_down(E.BufferLoad(b, (self.zero,)), offset), step)
            steps.append(step)
            offset //= 2
        return steps

    def warp_reduce(self):
        """The steps that combine the partials with warp shuffles; the result is in the
        partials of thread 0 of each row."""
        n, t = self.n, self.t
        # lanes past the row hold no partial when n neither divides nor is divided by 32
        ragged = n % keys.WARP_SIZE != 0 and n & (n - 1) != 0
        steps = self.shuffle_steps(min(n, keys.WARP_SIZE), ragged)
        if n <= keys.WARP_SIZE:
            return steps
        nwarps = -(-n // keys.WARP_SIZE)
        per_warp = self.shared_buffers("red_buf", self.nrows * nwarps)
        lane = self.ana.simplify(E.FloorMod(t, const(keys.WARP_SIZE)))
        warp = self.ana.simplify(E.FloorDiv(t, const(keys.WARP_SIZE)))
        base = self.ana.simplify(self.row * nwarps)
        steps.append(S.IfThenElse(E.EQ(lane, self.zero),
                                  self.assign(per_warp, self.ana.simplify(base + warp), self.mine())))
        # every warp reduces the per-warp values (lanes past them hold the identity)
        loads = [if_then_else(E.LT(lane, const(nwarps)), E.BufferLoad(b, (self.ana.simplify(base + lane),)), idv)
                 for b, idv in zip(per_warp, self.identity)]
        steps.append(self.assign(self.partial, self.zero, loads))
        steps += self.shuffle_steps(nwarps, False)
        return steps

    def lower(self, use_warp: bool, all_threads: bool) -> list:
        """Every step; afterwards the partials hold the result in thread 0 of the row
        (in every thread of it with ``all_threads``)."""
        t, zero = self.t, self.zero
        if use_warp:
            steps = self.warp_reduce()
            if all_threads:
                bcast = self.shared_buffers("red_result", self.nrows)
                steps.append(S.IfThenElse(E.EQ(t, zero), self.assign(bcast, self.row, self.mine())))
                steps.append(self.assign(self.partial, zero, [E.BufferLoad(b, (self.row,)) for b in bcast]))
            return steps
        steps, result = self.tree_reduce()
        read_back = self.assign(self.partial, zero, result)
        steps.append(read_back if all_threads else S.IfThenElse(E.EQ(t, zero), read_back))
        return steps


def _warp_ok(tag, n, extents) -> bool:
    """Can a reduction over ``tag`` of extent ``n`` use warp shuffles in a kernel
    launched with ``extents``?

    The hardware groups a block's threads into warps of 32 consecutive linear thread
    numbers (x fastest).  Shuffles reduce the threads of a row when the axis is
    ``threadIdx.x`` and the block's x extent is ``n`` (the reduction runs unguarded
    and the lane is ``threadIdx.x % 32``), and every warp holds whole rows or lies
    inside one: ``n`` is a multiple of 32, divides 32, or the block has no other
    thread dimension.
    """
    if tag != "threadIdx.x":
        return False
    x = E.const_int_value(extents.get("threadIdx.x"))
    if x is None or x > n:
        return False
    other_dims = False
    for other in ("threadIdx.y", "threadIdx.z"):
        if other in extents:
            ext = E.const_int_value(extents[other])
            other_dims = other_dims or ext is None or ext > 1
    return n % keys.WARP_SIZE == 0 or keys.WARP_SIZE % n == 0 or not other_dims


class _Lower(IRMutator):
    def __init__(self, kernel: S.PrimFunc):
        self.kernel = kernel
        self.extents = thread_extents(kernel)
        self.tags = thread_vars(kernel)
        self.ana = Analyzer()
        for var, tag in self.tags.items():
            ext = self.extents.get(tag)
            if ext is not None:
                self.ana.bind(var, E.Range(const(0, var.dtype), ext), allow_override=True)
        self.shared = []

    def visit_SeqStmt(self, s):
        new = self.generic_visit(s)
        # the steps replacing an intrinsic join the sequence it stood in
        return new if new is s else S.seq(*new.seq)

    def visit_AttrStmt(self, s):
        if s.attr_key != keys.THREAD_ALLREDUCE:
            return self.generic_visit(s)
        call = s.body.value
        n, t, row, nrows, all_threads = call.args[:5]
        partial = [load.buffer for load in call.args[5:]]
        tag = self.tags.get(t)
        if tag is None:
            raise LoweringError(
                f"kernel {self.kernel.name!r}: the thread reduction over {t.name!r} (reducing "
                f"{partial[0].name!r}) is not inside a thread_extent of its thread index; "
                "cross-thread reductions are lowered for CUDA kernels only")
        ar = _AllReduce(s.node, t, n.value, row, nrows.value, partial, self.ana)
        steps = ar.lower(_warp_ok(tag, n.value, self.extents), bool(all_threads.value))
        self.shared += ar.shared
        return S.seq(*steps)


def _allocate_at_top(body, buffers):
    """``body`` with ``buffers`` allocated just inside its ``thread_extent`` attributes."""
    if isinstance(body, S.AttrStmt) and body.attr_key == keys.THREAD_EXTENT:
        return S.AttrStmt(body.node, body.attr_key, body.value, _allocate_at_top(body.body, buffers))
    for buf in reversed(buffers):
        body = S.Allocate(buf, body)
    return body


def _gpu_loop(s) -> bool:
    return (isinstance(s, S.For) and s.kind is S.ForKind.THREAD_BINDING and s.thread_binding is not None
            and keys.is_gpu_tag(s.thread_binding.thread_tag))


def lower_thread_allreduce_unsplit(func: S.PrimFunc) -> S.PrimFunc:
    """:func:`lower_thread_allreduce` of a GPU function not split into kernels yet:
    each outermost nest of loops bound to GPU indices is what will be a kernel, and
    is lowered as one (its shared buffers allocated inside its outermost loop, which
    ``split_host_device`` later moves to the kernel's top)."""

    class _Nests(IRMutator):
        def visit_For(self, s):
            if not _gpu_loop(s):
                return self.generic_visit(s)
            kernel = S.PrimFunc((), s, {}, {keys.GLOBAL_SYMBOL: f"{func.name}(kernel at {s.loop_var.name})"})
            low = _Lower(kernel)
            body = low.visit(s.body)
            if body is s.body:
                return s
            for buf in reversed(low.shared):
                body = S.Allocate(buf, body)
            return S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_binding, s.annotations)

    body = _Nests().visit(func.body)
    return func if body is func.body else func.with_body(body)


def lower_thread_allreduce(kernel: S.PrimFunc) -> S.PrimFunc:
    """Replace every ``tecc.thread_allreduce`` of ``kernel`` (see the module docs);
    returns ``kernel`` itself when it has none."""
    low = _Lower(kernel)
    body = low.visit(kernel.body)
    if body is kernel.body:
        return kernel
    return kernel.with_body(_allocate_at_top(body, low.shared))


__all__ = ["lower_thread_allreduce", "lower_thread_allreduce_unsplit", "store_values", "thread_allreduce"]
