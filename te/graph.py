"""Facts about the graph of operations (TVM's ``te.schedule`` graph functions): who
reads whom, the order producers come in, which stages a scan's time loop computes,
the loops a stage is nested in, and which spatial axes of a scan carry no
dependence between their indices.

``post_dfs_order`` and :func:`scan_body` are what the schedule itself uses; the
TVM-named functions (``CreateReadGraph``, ``PostDFSOrder``, ``ScanGetBody``,
``CreateAttachPath``, ``ScanFixPointAnalysis``) answer with TVM's containers.
"""
from __future__ import annotations

from ..runtime.container import Array, Map
from ..tir import expr as E
from ..tir.functor import IRMutator, collect_vars
from ..tir.op import const
from .tensor import ComputeOp


def post_dfs_order(ops, read_graph=None):
    """Operations reachable from ``ops``, producers before consumers (through
    ``read_graph``, op -> tensors it reads, when given)."""
    order, seen = [], set()

    def inputs(op):
        return read_graph[op] if read_graph is not None and op in read_graph else op.input_tensors

    def visit(op):
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in inputs(op):
            visit(t.op)
        order.append(op)

    for op in ops:
        visit(op)
    return order


def scan_body(scan_op) -> list:
    """The operations a scan recomputes in every step: those on a path from its
    state placeholders (or declared inputs) to its update tensors, the scan
    itself last; producers before consumers."""
    sources = {t.op for t in scan_op.state_placeholder} | {t.op for t in scan_op.inputs}
    reaches = {}

    def visit(op):
        if op in sources:
            return True
        if op not in reaches:
            reaches[op] = False
            reaches[op] = any([visit(t.op) for t in op.input_tensors])
        return reaches[op]

    for t in scan_op.update:
        visit(t.op)
    order = post_dfs_order([t.op for t in scan_op.update])
    return [op for op in order if reaches.get(op)] + [scan_op]


# ---------------------------------------------------------------------------------------
# TVM's names
# ---------------------------------------------------------------------------------------
def CreateReadGraph(roots):  # noqa: N802
    """op -> the tensors it reads, for every operation reachable from ``roots``."""
    return Map({op: Array(op.input_tensors) for op in post_dfs_order(list(roots))})


def PostDFSOrder(roots, g):  # noqa: N802
    """The operations of read graph ``g`` below ``roots``, producers first."""
    return Array(post_dfs_order(list(roots), g))


def ScanGetBody(scan_op):  # noqa: N802
    """The operations a scan recomputes in every step (see :func:`scan_body`)."""
    return Array(scan_body(scan_op))


def CreateAttachPath(sch):  # noqa: N802
    """op -> the loops that enclose its stage, innermost first: from the loop it is
    attached at outward through its parent's loops, then its parent's attachment."""
    from .schedule import AttachType  # noqa: PLC0415

    out = Map()
    for st in sch.stages:
        path, cur = [], st
        while cur.attach_type in (AttachType.SCOPE, AttachType.SCAN_UPDATE):
            parent = cur.attach_stage
            leaves = parent.leaf_iter_vars
            if cur.attach_ivar in leaves:
                k = leaves.index(cur.attach_ivar)
                path.extend(reversed(leaves[:k + 1]))
            else:  # the time axis of a scan, which is not among its (spatial) leaves
                path.append(cur.attach_ivar)
                path.extend(reversed(leaves))
            cur = parent
        out[st.op] = Array(path)
    return out


def ScanFixPointAnalysis(scan_op):  # noqa: N802
    """spatial axis of the scan -> 1 if step ``t`` at index ``i`` of that axis reads
    the previous steps only at the same index ``i`` (the axis can be split or bound
    to threads with no exchange between steps), else 0.

    Each body operation's axes are labelled with the scan dimensions they stand for,
    from the update tensors down through the reads; an axis is a fixed point when
    every read of its state puts exactly that label at that dimension, and the
    label goes nowhere else."""
    n_out = scan_op.num_outputs
    body = scan_body(scan_op)[:-1]
    state_of = {t.op: k for k, t in enumerate(scan_op.state_placeholder)}
    labels = {}          # op -> [set of (output, dim) per axis]
    tainted = set()      # (output, dim) that are not fixed points

    def axis_labels(op):
        if op not in labels:
            labels[op] = [set() for _ in op.axis]
        return labels[op]

    for k in range(n_out):
        upd = scan_op.update[k].op
        for d in range(1, len(upd.axis)):
            axis_labels(upd)[d].add((k, d))
    for op in reversed(body):  # consumers before producers
        if not isinstance(op, ComputeOp):
            continue
        mine = {iv.var: axis_labels(op)[d] for d, iv in enumerate(op.axis)}
        for t, idx in _reads(op):
            target = state_of.get(t.op)
            for r, e in enumerate(idx):
                exact = mine.get(e) if isinstance(e, E.Var) else None
                if target is not None:  # a read of the previous steps
                    if r == 0:
                        continue  # the time index
                    want = (target, r)
                    if exact is None or exact - {want}:
                        tainted.add(want)
                        tainted.update(exact or ())
                    for v in collect_vars(e):
                        if v is not e and v in mine:
                            tainted.update(mine[v])
                elif t.op in labels or t.op in body:
                    if exact is not None:
                        axis_labels(t.op)[r].update(exact)
                    else:
                        for v in collect_vars(e):
                            if v in mine:
                                tainted.update(mine[v])
    out = Map()
    for k in range(n_out):
        for d, iv in enumerate(scan_op.spatial_axes(k), start=1):
            out[iv] = const(0 if (k, d) in tainted else 1, "int32")
    return out


def _reads(op):
    """``(tensor, indices)`` of every read in ``op``'s body."""
    found = []

    class _Find(IRMutator):
        def visit_ProducerLoad(self, e):
            found.append((e.producer, e.indices))
            for i in e.indices:
                self.visit(i)
            return e

        def visit_Reduce(self, r):
            return self.generic_visit(r)

    f = _Find()
    for b in op.body:
        f.visit(b)
    return found


__all__ = ["CreateAttachPath", "CreateReadGraph", "PostDFSOrder", "ScanFixPointAnalysis", "ScanGetBody",
           "post_dfs_order", "scan_body"]
