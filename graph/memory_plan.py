"""Storage planning of a graph executor: which entries share one buffer.

A built model is a graph JSON (see :mod:`tecc.runtime.graph_executor`): every output
of every node is an *entry* with a shape and dtype, and ``attrs.storage_id`` says which
buffer each entry lives in.  :func:`plan_storage` chooses those ids from liveness, in
node order, as TVM's graph memory planner does:

* every user input and every param (the ``"null"`` nodes) gets a storage of its own,
  never shared, and so does every head (a model output) from the moment it is
  written: nothing written later may overwrite what the user reads back;
* an intermediate entry lives from the node that writes it to the last node that
  reads it; after that its storage returns to a free list;
* a kernel's outputs are allocated *before* its inputs are released, so an output
  never aliases an input -- except in place: when a node says
  ``"inplace_input": "k"`` (an element-wise kernel whose output 0 has input ``k``'s
  shape and dtype and reads each element before writing it) and this node is the
  last reader of input ``k``, which is neither an arg node nor a head, output 0
  takes over input ``k``'s storage;
* a concatenation computes nothing when it can: a node saying
  ``"concat_contiguous": "1"`` (its output 0 is its inputs laid end to end, as a
  concatenation along an axis with nothing but 1s before it is) whose inputs are
  each written by a kernel, read by nothing else, not heads, and start at multiples
  of :data:`ALIGN` bytes gets its output's storage allocated when the first of its
  inputs is written; every input is written straight into its place in it (an
  entry at a ``storage_offset``), and the node becomes a no-op (``"__nop"``).
  SqueezeNet's eight concatenations of channel blocks took 8% of its run;
* a reshape computes nothing: a node saying ``"reshape_only": "1"`` (its output 0
  is its one input's bytes, as a reshape, squeeze, expand_dims or flatten of a
  row-major tensor is) whose output is not a head gets its input's storage and
  offset, and becomes a no-op (TVM's reshape-only functions).  Its input may be a
  user input or a param.  A storage then holds several live entries, and it is free
  again only when the last of them dies; an in-place handover needs the input to
  be the only entry alive in its storage, and never takes a storage that holds an
  input, a param or a head.  The transformer encoder layer had three such copy
  kernels of its 22.

The free-list policy
    Storage is bytes: the executor allocates each storage once, as large as the
    furthest byte an entry placed in it reaches, and every entry is a view at its
    offset (0 but for the inputs of a no-op concatenation, at multiples of
    :data:`ALIGN`), which is aligned for every dtype.  So any dtype may reuse any free storage (as TVM's
    planner does).  A request of ``n`` bytes takes the *smallest* free storage of at
    least ``n`` bytes (best fit); when every free storage is smaller, it takes the
    *largest* free one and grows it to ``n`` bytes (the least extra memory); only
    when the free list is empty is a new storage made.

:func:`storage_report` sums it up: the bytes of the planned intermediate storages
(the peak the executor allocates beyond inputs and params) against the bytes all
intermediates would take unshared.
"""
from __future__ import annotations

import bisect
import math

from ..errors import TeccError
from ..runtime import dtypes
from ..runtime.graph_executor import NOP

#: the alignment (bytes) of an entry placed inside another's storage: a cache line,
#: and more than any vector load of the backends needs
ALIGN = 64


class MemoryPlanError(TeccError):
    """A graph JSON that cannot be planned (missing keys, entries that disagree)."""


# ---------------------------------------------------------------------------------------
# reading the graph
# ---------------------------------------------------------------------------------------
def _attr_list(graph: dict, key: str, count: int) -> list:
    """The per-entry list ``graph["attrs"][key]`` (``["list_xxx", [...]]`` or a bare list)."""
    attrs = graph.get("attrs")
    if not isinstance(attrs, dict) or key not in attrs:
        raise MemoryPlanError(f"plan_storage: the graph JSON has no attrs.{key!r}; the builder must give a "
                              f"{key} per entry")
    value = attrs[key]
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str):
        value = value[1]
    if not isinstance(value, (list, tuple)) or len(value) != count:
        got = len(value) if isinstance(value, (list, tuple)) else type(value).__name__
        raise MemoryPlanError(f"plan_storage: attrs.{key} has {got} items but the graph has {count} entries "
                              "(one per node output)")
    return list(value)


def _num_outputs(node: dict, index: int) -> int:
    if node.get("op") == "null":
        return 1
    try:
        return int(node.get("attrs", {}).get("num_outputs", 1))
    except (TypeError, ValueError):
        raise MemoryPlanError(f"plan_storage: node {index} ({node.get('name')!r}) has a num_outputs that is "
                              "not an integer") from None


def row_ptr(graph: dict) -> list:
    """``node_row_ptr`` of ``graph``: entry id of output ``j`` of node ``i`` is
    ``row_ptr[i] + j`` (computed from ``num_outputs`` when the JSON lacks it)."""
    nodes = _nodes(graph)
    given = graph.get("node_row_ptr")
    computed = [0]
    for i, node in enumerate(nodes):
        computed.append(computed[-1] + _num_outputs(node, i))
    if given is not None and list(given) != computed:
        raise MemoryPlanError(f"plan_storage: node_row_ptr {list(given)} disagrees with the nodes' num_outputs "
                              f"(expected {computed})")
    return computed


def _nodes(graph: dict) -> list:
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise MemoryPlanError("plan_storage: expected a graph JSON dict with a list 'nodes'")
    return graph["nodes"]


def entry_bytes(shape, dtype: str) -> int:
    """Bytes of one entry of ``shape`` and ``dtype``."""
    count = math.prod(int(s) for s in shape)
    return count * dtypes.storage(dtype).itemsize


class _Graph:
    """What planning needs of a graph JSON, checked once."""

    def __init__(self, graph: dict):
        self.nodes = _nodes(graph)
        self.row_ptr = row_ptr(graph)
        self.num_entries = self.row_ptr[-1]
        shapes = _attr_list(graph, "shape", self.num_entries)
        dtype_list = _attr_list(graph, "dltype", self.num_entries)
        self.nbytes = []
        for eid, (shape, dtype) in enumerate(zip(shapes, dtype_list)):
            try:
                self.nbytes.append(entry_bytes(shape, dtype))
            except (TypeError, ValueError, TeccError) as err:
                raise MemoryPlanError(f"plan_storage: entry {eid} has shape {shape!r} and dtype {dtype!r}, which "
                                      f"do not give a size ({err})") from None
        self.arg_entries = {self.entry(i, 0) for i, n in enumerate(self.nodes) if n.get("op") == "null"}
        self.heads = {self._entry_of(h, "heads") for h in graph.get("heads", [])}
        # inputs of each node as entry ids, checked to come from earlier nodes
        self.inputs = []
        for i, node in enumerate(self.nodes):
            ins = [self._entry_of(e, f"node {i} ({node.get('name')!r})", before=i) for e in node.get("inputs", [])]
            self.inputs.append(ins)

    def entry(self, node: int, index: int = 0) -> int:
        return self.row_ptr[node] + index

    def _entry_of(self, ref, where: str, before: int = None) -> int:
        if not isinstance(ref, (list, tuple)) or len(ref) < 2:
            raise MemoryPlanError(f"plan_storage: {where}: {ref!r} is not an entry [node, output, version]")
        node, index = int(ref[0]), int(ref[1])
        limit = len(self.nodes) if before is None else before
        if not 0 <= node < limit or not 0 <= index < self.row_ptr[node + 1] - self.row_ptr[node]:
            order = " (nodes must come after their inputs)" if before is not None else ""
            raise MemoryPlanError(f"plan_storage: {where} refers to entry {list(ref)}, which does not exist{order}")
        return self.entry(node, index)

    def producer(self, eid: int) -> int:
        """The node that writes entry ``eid``."""
        return bisect.bisect_right(self.row_ptr, eid) - 1

    def concat_contiguous(self, i: int) -> bool:
        """Whether node ``i`` says its output 0 is its inputs laid end to end."""
        return str(self.nodes[i].get("attrs", {}).get("concat_contiguous", "0")) == "1"

    def reshape_only(self, i: int) -> bool:
        """Whether node ``i`` says its output 0 is its one input's bytes unchanged."""
        return str(self.nodes[i].get("attrs", {}).get("reshape_only", "0")) == "1"

    def inplace_input(self, i: int) -> int:
        """The input index node ``i`` may write output 0 over, or -1."""
        value = self.nodes[i].get("attrs", {}).get("inplace_input", -1)
        try:
            k = int(value)
        except (TypeError, ValueError):
            raise MemoryPlanError(f"plan_storage: node {i} ({self.nodes[i].get('name')!r}) has inplace_input "
                                  f"{value!r}, which is not an integer") from None
        if k >= len(self.inputs[i]):
            raise MemoryPlanError(f"plan_storage: node {i} ({self.nodes[i].get('name')!r}) has inplace_input {k} "
                                  f"but only {len(self.inputs[i])} inputs")
        return k


# ---------------------------------------------------------------------------------------
# the free list
# ---------------------------------------------------------------------------------------
class _FreeList:
    """Free storages ordered by size: best fit, else grow the largest."""

    def __init__(self):
        self.sizes = []  # storage bytes, parallel to ``ids``, ascending
        self.ids = []

    def release(self, sid: int, size: int) -> None:
        k = bisect.bisect_right(self.sizes, size)
        self.sizes.insert(k, size)
        self.ids.insert(k, sid)

    def take(self, size: int):
        """``(storage id, its size)`` of the storage to reuse for ``size`` bytes, or
        None when nothing is free."""
        if not self.ids:
            return None
        k = bisect.bisect_left(self.sizes, size)
        if k == len(self.ids):
            k -= 1  # nothing large enough: the largest, to be grown
        return self.ids.pop(k), self.sizes.pop(k)


# ---------------------------------------------------------------------------------------
# the planner
# ---------------------------------------------------------------------------------------
class MemoryPlan:
    """What :func:`plan_memory` decides: ``storage_ids`` and ``storage_offsets``
    (bytes) per entry, and ``nop_nodes``, the concatenations and reshapes that
    compute nothing."""

    __slots__ = ("storage_ids", "storage_offsets", "nop_nodes")

    def __init__(self, storage_ids, storage_offsets, nop_nodes):
        self.storage_ids = storage_ids
        self.storage_offsets = storage_offsets
        self.nop_nodes = nop_nodes

    def apply(self, graph: dict) -> dict:
        """Write the plan into ``graph`` (in place; returned): ``attrs.storage_id``,
        ``attrs.storage_offset`` when an offset is not 0, ``"__nop"`` as the
        ``func_name`` of the no-op nodes."""
        graph["attrs"]["storage_id"] = ["list_int", list(self.storage_ids)]
        if any(self.storage_offsets):
            graph["attrs"]["storage_offset"] = ["list_int", list(self.storage_offsets)]
        else:
            graph["attrs"].pop("storage_offset", None)
        for i in self.nop_nodes:
            graph["nodes"][i]["attrs"]["func_name"] = NOP
        return graph


def _concat_groups(g: _Graph, refs: list) -> tuple:
    """``(members, nodes)``: member entry -> (concatenation node, byte offset), and
    the concatenation nodes, of every concatenation whose inputs can be written in
    place (see the module documentation)."""
    members, groups = {}, set()
    for i in range(len(g.nodes)):
        if not g.concat_contiguous(i) or g.row_ptr[i + 1] - g.row_ptr[i] != 1:
            continue
        out, ins = g.entry(i), g.inputs[i]
        if out in g.heads or len(set(ins)) != len(ins) or sum(g.nbytes[e] for e in ins) != g.nbytes[out]:
            continue
        placed, offset = {}, 0
        for eid in ins:
            if (eid in g.arg_entries or eid in g.heads or refs[eid] != 1 or eid in members
                    or offset % ALIGN or g.producer(eid) in groups or g.reshape_only(g.producer(eid))):
                placed = None
                break
            placed[eid] = (i, offset)
            offset += g.nbytes[eid]
        if placed:
            members.update(placed)
            groups.add(i)
    return members, groups


def _reshape_views(g: _Graph, members: dict, concat_nodes: set) -> dict:
    """node -> its input entry, for every reshape-only node whose output can be a
    view of its input (see the module documentation)."""
    views = {}
    for i in range(len(g.nodes)):
        if not g.reshape_only(i) or i in concat_nodes or g.row_ptr[i + 1] - g.row_ptr[i] != 1:
            continue
        if len(g.inputs[i]) != 1:
            continue
        out, (src,) = g.entry(i), g.inputs[i]
        if out in g.heads or out in members or src in members or g.nbytes[src] != g.nbytes[out]:
            continue
        views[i] = src
    return views


def plan_memory(graph: dict) -> MemoryPlan:
    """Storage ids and offsets for every entry of ``graph``, from liveness in node
    order, and the concatenations and reshapes that need no kernel (see the module
    documentation; :func:`plan_storage` is its storage ids alone).

    Parameters
    ----------
    graph : dict
        As for :func:`plan_storage`.

    Returns
    -------
    MemoryPlan

    Raises
    ------
    MemoryPlanError
        If the graph lacks what planning needs or its entries disagree.
    """
    g = _Graph(graph)
    storage = [-1] * g.num_entries
    offsets = [0] * g.num_entries
    sizes = []  # bytes of each storage so far
    free = _FreeList()

    # reads left of each entry; heads are read by the user after the run, so never die
    refs = [0] * g.num_entries
    for ins in g.inputs:
        for eid in ins:
            refs[eid] += 1
    members, nop_set = _concat_groups(g, refs)
    views = _reshape_views(g, members, nop_set)
    group_storage = {}  # no-op concatenation node -> the storage of its output
    # entries alive in each storage (several where an entry is a view of another, or
    # sits in a concatenation's output); a storage is free again when none is left,
    # unless it holds an input, a param or a head (pinned: never reused)
    live = {}
    pinned = set()

    def new_storage(size: int) -> int:
        sizes.append(size)
        return len(sizes) - 1

    def allocate(eid: int) -> int:
        got = free.take(g.nbytes[eid])
        if got is None:
            return new_storage(g.nbytes[eid])
        sid, size = got
        sizes[sid] = max(size, g.nbytes[eid])
        return sid

    def group(node: int) -> int:
        if node not in group_storage:
            group_storage[node] = allocate(g.entry(node))
        return group_storage[node]

    def place(eid: int, sid: int, offset: int = 0) -> None:
        storage[eid], offsets[eid] = sid, offset
        live[sid] = live.get(sid, 0) + 1
        if eid in g.heads or eid in g.arg_entries:
            pinned.add(sid)

    def dies(eid: int) -> None:
        sid = storage[eid]
        live[sid] -= 1
        if live[sid] == 0 and sid not in pinned:
            free.release(sid, sizes[sid])

    for i, node in enumerate(g.nodes):
        if node.get("op") == "null":
            place(g.entry(i), new_storage(g.nbytes[g.entry(i)]))
            continue
        outs = range(g.entry(i), g.row_ptr[i + 1])
        ins = g.inputs[i]
        k = g.inplace_input(i) if g.entry(i) not in members and i not in views else -1
        taken = None  # the input entry whose storage output 0 takes over
        if k >= 0:
            cand = ins[k]
            sid = storage[cand]
            last_reader = refs[cand] == ins.count(cand)
            fits = g.nbytes[g.entry(i)] <= sizes[sid] - offsets[cand]
            # nothing else alive in that storage (a view of the input, say) and not pinned
            if last_reader and fits and live[sid] == 1 and sid not in pinned:
                taken = cand
        for eid in outs:
            if eid == g.entry(i) and taken is not None:
                place(eid, storage[taken], offsets[taken])
            elif eid in members:
                node_c, offset = members[eid]
                place(eid, group(node_c), offset)
            elif i in nop_set:
                place(eid, group(i))
            elif i in views:
                place(eid, storage[views[i]], offsets[views[i]])
            else:
                place(eid, allocate(eid))
        # the inputs this node read last die (their storage is free once nothing in it lives)
        for eid in ins:
            refs[eid] -= 1
            if refs[eid] == 0 and eid not in g.heads and eid not in g.arg_entries:
                dies(eid)
        # an output nobody reads (and not a head) is dead at once
        for eid in outs:
            if refs[eid] == 0 and eid not in g.heads:
                dies(eid)
    return MemoryPlan(storage, offsets, sorted(nop_set | set(views)))


def plan_storage(graph: dict) -> list:
    """A storage id for every entry of ``graph``, from liveness in node order.

    Parameters
    ----------
    graph : dict
        A graph JSON (``nodes``, ``arg_nodes``, ``heads``, ``node_row_ptr`` and
        ``attrs.shape`` / ``attrs.dltype`` per entry).  Nodes must come after the
        nodes they read.  ``attrs.storage_id``, if present, is ignored.

    Returns
    -------
    list of int
        The storage id of each entry (``attrs.storage_id``), numbered from 0 in the
        order storages are first used.

    Raises
    ------
    MemoryPlanError
        If the graph lacks what planning needs or its entries disagree.

    Notes
    -----
    Inputs, params and heads are never shared with anything written after them.
    See the module documentation for the reuse policy and the in-place rule.  A
    graph with ``concat_contiguous`` nodes needs the offsets and no-op nodes of
    :func:`plan_memory` as well: write it with ``plan_memory(graph).apply(graph)``.
    """
    return plan_memory(graph).storage_ids


def storage_report(graph: dict, storage_ids=None, storage_offsets=None) -> dict:
    """The memory a plan needs, against the bytes of all intermediates unshared.

    Parameters
    ----------
    graph : dict
        A graph JSON, as for :func:`plan_storage`.
    storage_ids : list of int, optional
        The plan to report on; defaults to ``attrs.storage_id`` of ``graph`` when it
        has one, else to :func:`plan_memory` of it.
    storage_offsets : list of int, optional
        The entries' byte offsets; defaults to ``attrs.storage_offset`` (0s when
        absent) with ``attrs.storage_id``, else to the plan's.

    Returns
    -------
    dict
        ``peak_bytes``: the bytes of the storages that hold intermediates (every
        entry but user inputs and params; heads count), each as large as the furthest
        byte an entry reaches -- what the executor allocates beyond inputs and params.
        ``total_intermediate_bytes``: the sum of every intermediate entry's bytes.
        ``ratio``: their quotient (0 when there are no intermediates).
        ``input_bytes``: the bytes of user inputs and params.
        ``num_storages`` and ``num_entries``.
    """
    g = _Graph(graph)
    attrs = graph.get("attrs", {})
    if storage_ids is None:
        if "storage_id" in attrs:
            storage_ids = _attr_list(graph, "storage_id", g.num_entries)
            if storage_offsets is None and "storage_offset" in attrs:
                storage_offsets = _attr_list(graph, "storage_offset", g.num_entries)
        else:
            plan = plan_memory(graph)
            storage_ids, storage_offsets = plan.storage_ids, plan.storage_offsets
    if storage_offsets is None:
        storage_offsets = [0] * g.num_entries
    if len(storage_ids) != g.num_entries or len(storage_offsets) != g.num_entries:
        raise MemoryPlanError(f"storage_report: {len(storage_ids)} storage ids and {len(storage_offsets)} offsets "
                              f"for {g.num_entries} entries")
    storage_bytes = {}
    for eid, sid in enumerate(storage_ids):
        if eid not in g.arg_entries:
            storage_bytes[sid] = max(storage_bytes.get(sid, 0), storage_offsets[eid] + g.nbytes[eid])
    total = sum(g.nbytes[eid] for eid in range(g.num_entries) if eid not in g.arg_entries)
    peak = sum(storage_bytes.values())
    return {
        "peak_bytes": peak,
        "total_intermediate_bytes": total,
        "ratio": peak / total if total else 0.0,
        "input_bytes": sum(g.nbytes[eid] for eid in g.arg_entries),
        "num_storages": len(set(storage_ids)),
        "num_entries": g.num_entries,
    }


__all__ = ["ALIGN", "MemoryPlan", "MemoryPlanError", "entry_bytes", "plan_memory", "plan_storage", "row_ptr",
           "storage_report"]
