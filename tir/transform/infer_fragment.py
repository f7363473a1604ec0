"""Give every tensor-core fragment its wmma shape and layout (TVM's ``InferFragment``).

A buffer of scope ``wmma.matrix_a``, ``wmma.matrix_b`` or ``wmma.accumulator`` is an
array of ``nvcuda::wmma::fragment`` objects: the warp's registers, opaque to element
accesses.  Its C++ type needs the fragment's shape ``m, n, k`` and, for the two input
matrices, the layout of the memory it is loaded from -- facts spread over the calls
that use it (``tvm_fill_fragment``, ``tvm_load_matrix_sync``, ``tvm_mma_sync``,
``tvm_store_matrix_sync``, :mod:`tecc.tir.keys`).  This pass gathers them and writes
them where the printers read them, as TVM does::

    attr [A.wmma.matrix_a] "fragment_shape" = "16, 16, 16"
    attr [A.wmma.matrix_a] "fragment_layout" = "row_major"
    allocate A.wmma.matrix_a: float16[512], wmma.matrix_a

A ``tvm_mma_sync`` ties its four fragments to one shape, so a fragment only ever
used there takes its partners' shape.

It also refuses what would otherwise fail in NVRTC or run wrongly, each with the
kernel and the buffer (named after its stage) and what to do: an element access to a
fragment (its stage was not tensorized), shapes or layouts that disagree, a fragment
in the wrong role (``tvm_mma_sync``'s first operand must be an accumulator...), a
size that is not a whole number of fragments, an element type wmma lacks, a
product of operand types wmma lacks (float16 or bfloat16 operands, both the same;
bfloat16 accumulates in float32), an architecture below sm_70 (sm_80 for
bfloat16), a ``threadIdx.x`` extent that is not whole warps, and a wmma call that
differs between the lanes of a warp (its arguments, or a loop or condition around
it, depend on ``threadIdx.x``).

Runs on kernels, after the last pass that moves statements, before ``verify_gpu``.
"""
from __future__ import annotations

from ...errors import LoweringError
from .. import expr as E
from .. import keys
from .. import stmt as S
from ..analysis.buffers import const_size
from ..analysis.fragments import (
    FRAGMENT_DTYPES, fragment_allocations, fragment_elements, operand_arch, operand_error,
)
from ..analysis.threads import thread_extents
from ..analysis.verify_gpu import arch_number
from ..functor import IRMutator, IRVisitor, collect_vars, post_order_visit


class _Facts:
    """What the calls say of each fragment (data Var -> shape / layout)."""

    def __init__(self, kernel, frags):
        self.kernel = kernel
        self.frags = frags           # data Var -> Buffer
        self.shape = {}
        self.layout = {}
        self.where = {}              # data Var -> the call that fixed its shape (for messages)
        self.ties = []               # the fragments of one tvm_mma_sync

    def fail(self, buf, what) -> None:
        raise LoweringError(f"kernel {self.kernel.name}: tensor-core fragment {buf.name!r} ({buf.scope}): {what}")

    def frag(self, e, call, role):
        buf = self.frags.get(e) if isinstance(e, E.Var) else None
        if buf is None:
            raise LoweringError(f"kernel {self.kernel.name}: {call.op}'s {role} argument {e} is not a buffer of scope "
                                f"{', '.join(keys.WMMA_SCOPES)} allocated in the kernel; cache the tensor into one "
                                "(s.cache_read(T, 'wmma.matrix_a', [...]), s.cache_write(T, 'wmma.accumulator'))")
        return buf

    def note_shape(self, buf, shape, call) -> None:
        have = self.shape.get(buf.data)
        if have is not None and have != shape:
            self.fail(buf, f"used as an {'x'.join(map(str, have))} fragment by `{self.where[buf.data]}` and as an "
                           f"{'x'.join(map(str, shape))} one by `{call}`; one buffer holds fragments of one shape: "
                           "give each shape its own cache stage")
        self.shape[buf.data] = shape
        self.where.setdefault(buf.data, call)

    def note_layout(self, buf, layout, call) -> None:
        have = self.layout.get(buf.data)
        if have is not None and have != layout:
            self.fail(buf, f"loaded {have} and {layout} (`{call}`); a fragment type has one layout")
        self.layout[buf.data] = layout

    def visit(self, node) -> None:
        if isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer.data in self.frags:
            buf = self.frags[node.buffer.data]
            verb = "read" if isinstance(node, E.BufferLoad) else "written"
            self.fail(buf, f"{verb} element by element (`{node}`); fragments live in the registers of a warp and "
                           "only the wmma intrinsics reach them: tensorize the loops of the stage that computes it "
                           "(s[stage].tensorize(axis, intrin) with tvm_load_matrix_sync / tvm_mma_sync / "
                           "tvm_store_matrix_sync)")
        if not isinstance(node, E.Call) or node.op not in keys.WMMA_INTRINSICS:
            return
        a = node.args
        if node.op == keys.WMMA_MMA:
            roles = [(a[0], "d", keys.WMMA_ACCUMULATOR), (a[2], "a", keys.WMMA_MATRIX_A),
                     (a[4], "b", keys.WMMA_MATRIX_B), (a[6], "c", keys.WMMA_ACCUMULATOR)]
            bufs = []
            for e, role, scope in roles:
                buf = self.frag(e, node, role)
                if buf.scope != scope:
                    self.fail(buf, f"passed as tvm_mma_sync's {role} operand, which must be a {scope} fragment")
                bufs.append(buf)
            error = operand_error(bufs[1].dtype, bufs[2].dtype, bufs[0].dtype)
            if error is None and bufs[3].dtype != bufs[0].dtype:
                error = f"it adds a {bufs[3].dtype} accumulator into a {bufs[0].dtype} one; give both one type"
            if error:
                raise LoweringError(f"kernel {self.kernel.name}: `{node}` multiplies {bufs[1].name!r} by "
                                    f"{bufs[2].name!r} into {bufs[0].name!r}: {error}")
            self.ties.append((bufs, node))
            return
        buf = self.frag(a[0], node, "fragment")
        shape = tuple(E.const_int_value(x) for x in a[1:4])
        self.note_shape(buf, shape, node)
        if node.op == keys.WMMA_STORE and buf.scope != keys.WMMA_ACCUMULATOR:
            self.fail(buf, "stored with tvm_store_matrix_sync, which stores accumulators only")
        if node.op == keys.WMMA_FILL and buf.scope != keys.WMMA_ACCUMULATOR:
            self.fail(buf, "filled with tvm_fill_fragment, which fills accumulators only")
        if node.op == keys.WMMA_LOAD and buf.scope != keys.WMMA_ACCUMULATOR:
            self.note_layout(buf, a[7].value, node)

    def settle_ties(self) -> None:
        """Spread shapes through tvm_mma_sync calls until nothing changes."""
        changed = True
        while changed:
            changed = False
            for bufs, call in self.ties:
                known = [self.shape[b.data] for b in bufs if b.data in self.shape]
                if not known:
                    continue
                for b in bufs:
                    changed = changed or b.data not in self.shape
                    self.note_shape(b, known[0], call)  # raises where they disagree


class _LaneUse(IRVisitor):
    """Finds a wmma call whose arguments, or the control flow around it, differ
    between the lanes of a warp (depend on ``threadIdx.x``): every lane must make the
    same call, or the GPU's result is undefined (and the emulator's, which lets lane
    0 act for its warp, would be lane 0's alone)."""

    def __init__(self):
        self.lanes = set()       # threadIdx.x and what is computed from it
        self.divergent = []      # the lane-dependent conditions and loops around the current node
        self.found = None        # (call, why)

    def depends(self, e) -> bool:
        return any(v in self.lanes for v in collect_vars(e))

    def visit_AttrStmt(self, s):
        if s.attr_key == keys.THREAD_EXTENT and getattr(s.node, "thread_tag", "") == "threadIdx.x":
            self.lanes.add(s.node.var)
        self.generic_visit(s)

    def visit_LetStmt(self, s):
        if self.depends(s.value):
            self.lanes.add(s.var)
        self.generic_visit(s)

    def _inside(self, what, lane_dependent, visit):
        if lane_dependent:
            self.divergent.append(what)
        visit()
        if lane_dependent:
            self.divergent.pop()

    def visit_For(self, s):
        self._inside(f"loop {s.loop_var.name}", self.depends(s.min) or self.depends(s.extent),
                     lambda: self.generic_visit(s))

    def visit_IfThenElse(self, s):
        self._inside(f"the condition `{s.condition}`", self.depends(s.condition), lambda: self.generic_visit(s))

    def visit_Call(self, e):
        if e.op in keys.WMMA_INTRINSICS and self.found is None:
            if self.divergent:
                self.found = (e, f"it sits inside {self.divergent[-1]}, which differs between lanes")
            elif any(self.depends(a) for a in e.args):
                self.found = (e, "its arguments differ between lanes")
        self.generic_visit(e)


def _check_warps(kernel, first) -> None:
    """Whole warps along threadIdx.x, and every wmma call the same in all their lanes."""
    x = E.const_int_value(thread_extents(kernel).get("threadIdx.x", E.IntImm("int32", 1)))
    if x is None or x % 32:
        raise LoweringError(f"kernel {kernel.name}: tensor-core fragment {first.name!r} is a warp's, but threadIdx.x "
                            f"has extent {x if x is not None else 'symbolic'}, so warps straddle threadIdx.y; bind "
                            "threadIdx.x to an axis of 32 (or a multiple of 32) elements, the warp's lanes")
    lanes = _LaneUse()
    lanes.visit(kernel.body)
    if lanes.found is not None:
        call, why = lanes.found
        raise LoweringError(f"kernel {kernel.name}: `{call}` depends on threadIdx.x ({why}); the 32 lanes of a warp "
                            "make each wmma call together, with the same arguments: bind the fragment stages' axes "
                            "to threadIdx.y/z (one warp each) and leave threadIdx.x to the lanes")


class _Annotate(IRMutator):
    def __init__(self, facts):
        super().__init__()
        self.facts = facts

    def visit_Allocate(self, s):
        body = self.visit(s.body)
        new = s if body is s.body else S.Allocate(s.buffer, body)
        buf = s.buffer
        if buf.data not in self.facts.frags:
            return new
        if buf.data in self.facts.layout:
            new = S.AttrStmt(buf.data, keys.FRAGMENT_LAYOUT, E.StringImm(self.facts.layout[buf.data]), new)
        shape = self.facts.shape[buf.data]
        return S.AttrStmt(buf.data, keys.FRAGMENT_SHAPE, E.StringImm(", ".join(map(str, shape))), new)


def infer_fragment(kernel: S.PrimFunc, arch: str | None = None) -> S.PrimFunc:
    """Annotate the fragment allocations of ``kernel`` with their shape and layout.

    Parameters
    ----------
    kernel : PrimFunc
        A device function (flattened, thread extents as attributes).
    arch : str, optional
        The ``sm_XX`` it compiles for: below ``sm_70`` a kernel with fragments is
        refused (no tensor cores), below ``sm_80`` one with bfloat16 fragments.

    Returns
    -------
    PrimFunc
        ``kernel`` itself when it has no fragments.

    Raises
    ------
    LoweringError
        For the misuses listed in the module docs.
    """
    frags = {b.data: b for b in fragment_allocations(kernel.body)}
    if not frags:
        return kernel
    first = next(iter(frags.values()))
    number = arch_number(arch) if arch is not None else None
    if number is not None and number < 70:
        raise LoweringError(f"kernel {kernel.name}: fragment {first.name!r} ({first.scope}) needs tensor cores, "
                            f"which {arch} lacks; compile for sm_70 or later (target 'cuda -arch=sm_80')")
    _check_warps(kernel, first)
    facts = _Facts(kernel, frags)
    for buf in frags.values():
        if buf.dtype not in FRAGMENT_DTYPES[buf.scope]:
            facts.fail(buf, f"has element type {buf.dtype}; tecc's wmma fragments hold "
                            f"{' or '.join(FRAGMENT_DTYPES[buf.scope])} ({buf.scope})")
        if buf.scope != keys.WMMA_ACCUMULATOR and number is not None and number < operand_arch(buf.dtype):
            need = operand_arch(buf.dtype)
            facts.fail(buf, f"holds {buf.dtype}, which the tensor cores of {arch} do not take (sm_{need} and "
                            f"later do); compile for sm_{need} (target 'cuda -arch=sm_{need}') or use float16 "
                            "operands")
    post_order_visit(kernel.body, facts.visit)
    facts.settle_ties()
    for buf in frags.values():
        shape = facts.shape.get(buf.data)
        if shape is None:
            facts.fail(buf, "is never filled, loaded or stored, so its fragment shape is unknown; "
                            "fill it (tvm_fill_fragment) or load it (tvm_load_matrix_sync)")
        if buf.scope != keys.WMMA_ACCUMULATOR and buf.data not in facts.layout:
            facts.fail(buf, "is never loaded, so its layout (row_major / col_major) is unknown; load it with "
                            "tvm_load_matrix_sync")
        n = const_size(buf)
        per = fragment_elements(buf.scope, shape)
        if n is None or n % per:
            facts.fail(buf, f"holds {n if n is not None else buf.shape} elements, not a whole number of "
                            f"{'x'.join(map(str, shape))} fragments ({per} elements each); make the cached region "
                            f"a multiple of the fragment")
    return kernel.with_body(_Annotate(facts).visit(kernel.body))


__all__ = ["infer_fragment"]
