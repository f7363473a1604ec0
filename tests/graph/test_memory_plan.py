"""Storage planning (graph/memory_plan.py): hand-written graphs, a liveness checker
run on them and on random DAGs, in-place reuse and the peak report."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tecc.graph.memory_plan import ALIGN, MemoryPlanError, plan_memory, plan_storage, storage_report


# ---------------------------------------------------------------------------------------
# building graph JSONs by hand
# ---------------------------------------------------------------------------------------
class G:
    """A graph JSON under construction: ``inp``/``op`` return node indices."""

    def __init__(self):
        self.nodes, self.shapes, self.dtypes, self.params = [], [], [], set()

    def inp(self, name, shape, dtype="float32"):
        self.nodes.append({"op": "null", "name": name, "inputs": []})
        self.shapes.append(list(shape))
        self.dtypes.append(dtype)
        return len(self.nodes) - 1

    def op(self, name, inputs, shapes, inplace=-1, dtype="float32", concat=False, reshape=False):
        """A kernel node reading ``inputs`` (node indices, or (node, output) pairs)
        with one output per shape in ``shapes`` (``concat``: output 0 is the inputs
        end to end; ``reshape``: output 0 is the one input's bytes)."""
        refs = [[i, 0, 0] if isinstance(i, int) else [i[0], i[1], 0] for i in inputs]
        self.nodes.append({"op": "tvm_op", "name": name, "inputs": refs,
                           "attrs": {"func_name": name, "num_inputs": str(len(refs)),
                                     "num_outputs": str(len(shapes)), "flatten_data": "0",
                                     "inplace_input": str(inplace)}})
        if concat:
            self.nodes[-1]["attrs"]["concat_contiguous"] = "1"
        if reshape:
            self.nodes[-1]["attrs"]["reshape_only"] = "1"
        for shape in shapes:
            self.shapes.append(list(shape))
            self.dtypes.append(dtype)
        return len(self.nodes) - 1

    def graph(self, heads):
        row = [0]
        for n in self.nodes:
            row.append(row[-1] + (1 if n["op"] == "null" else int(n["attrs"]["num_outputs"])))
        heads = [[h, 0, 0] if isinstance(h, int) else [h[0], h[1], 0] for h in heads]
        return {"nodes": self.nodes, "arg_nodes": [i for i, n in enumerate(self.nodes) if n["op"] == "null"],
                "heads": heads, "node_row_ptr": row,
                "attrs": {"shape": ["list_shape", self.shapes], "dltype": ["list_str", self.dtypes]}}


def nbytes(shape, dtype):
    size = {"float32": 4, "float16": 2, "int64": 8, "int8": 1, "bool": 1}[dtype]
    count = 1
    for s in shape:
        count *= s
    return count * size


def check_plan(graph, sids, offsets=None, nops=()):
    """Assert that no two entries whose lifetimes overlap share bytes of a storage
    (an in-place handover at the last reader excepted, the inputs of a no-op
    concatenation, which must lie end to end inside its output, and the output of a
    no-op reshape, which must be its input: one value, alive as long as either), and
    that inputs, params and heads are never overwritten.  Returns the number of
    storages."""
    nodes, row = graph["nodes"], graph["node_row_ptr"]
    n_entries = row[-1]
    offsets = offsets or [0] * n_entries
    assert len(sids) == n_entries and all(isinstance(s, int) and s >= 0 for s in sids)
    sizes = [nbytes(shape, dtype) for shape, dtype in zip(graph["attrs"]["shape"][1], graph["attrs"]["dltype"][1])]
    views = set()  # (input entry, output entry) of the no-op concatenations
    root = list(range(n_entries))  # a no-op reshape's output is its input's value
    for i in nops:
        if nodes[i]["attrs"].get("reshape_only") == "1":
            (ref,) = nodes[i]["inputs"]
            e = row[ref[0]] + ref[1]
            assert sids[e] == sids[row[i]] and offsets[e] == offsets[row[i]], f"no-op reshape {i} is not a view"
            assert sizes[e] == sizes[row[i]] and row[i] not in {row[h[0]] + h[1] for h in graph["heads"]}
            root[row[i]] = root[e]
            continue
        assert nodes[i]["attrs"].get("concat_contiguous") == "1"
        at = offsets[row[i]]
        for ref in nodes[i]["inputs"]:
            e = row[ref[0]] + ref[1]
            assert sids[e] == sids[row[i]] and offsets[e] == at, f"input entry {e} of no-op {i} is not in place"
            assert offsets[e] % ALIGN == 0
            views.add((e, row[i]))
            at += sizes[e]
        assert at == offsets[row[i]] + sizes[row[i]]
    born, last = [0] * n_entries, [0] * n_entries
    for i, node in enumerate(nodes):
        for e in range(row[i], row[i + 1]):
            born[e] = -1 if node["op"] == "null" else i
            last[e] = born[e]
        for ref in node["inputs"]:
            e = row[ref[0]] + ref[1]
            last[e] = max(last[e], i)
    forever = len(nodes) + 1
    pinned = {row[i] for i in graph["arg_nodes"]} | {row[h[0]] + h[1] for h in graph["heads"]}
    for e in pinned:
        last[e] = forever
    # a value lives from its first entry's birth to its last entry's last read
    for e in range(n_entries):
        r = root[e]
        if r != e:
            last[r] = max(last[r], last[e])
    pinned |= {e for e in range(n_entries) if root[e] in pinned}
    for e in range(n_entries):
        born[e], last[e] = born[root[e]], last[root[e]]
    inplace = set()  # (input entry, output entry) handovers allowed by a node's inplace_input
    for i, node in enumerate(nodes):
        k = int(node.get("attrs", {}).get("inplace_input", -1))
        if k >= 0:
            ref = node["inputs"][k]
            inplace.add((root[row[ref[0]] + ref[1]], row[i]))  # (the value's first entry, the output)
    for a in range(n_entries):
        for b in range(a + 1, n_entries):
            if sids[a] != sids[b] or not (offsets[a] < offsets[b] + sizes[b] and offsets[b] < offsets[a] + sizes[a]):
                continue
            if root[a] == root[b]:  # one value
                continue
            first, second = (a, b) if born[a] <= born[b] else (b, a)
            disjoint = last[first] < born[second]
            handover = (last[first] == born[second] and (root[first], root[second]) in inplace
                        and first not in pinned)
            # a concatenation's input inside it, or inside a no-op reshape of it (one value)
            handover = handover or (last[first] == born[second]
                                    and (root[first], root[second]) in {(root[a], root[b]) for a, b in views})
            assert disjoint or handover, (
                f"entries {first} (live {born[first]}..{last[first]}) and {second} (live {born[second]}.."
                f"{last[second]}) share storage {sids[a]}")
    return len(set(sids))


# ---------------------------------------------------------------------------------------
# hand-written graphs
# ---------------------------------------------------------------------------------------
def test_a_chain_alternates_two_buffers_and_in_place_needs_one():
    for inplace, want in ((-1, 2), (0, 1)):
        g = G()
        x = g.inp("x", (16,))
        a = g.op("a", [x], [(16,)])  # the first reader of the input may not write over it
        b = g.op("b", [a], [(16,)], inplace)
        c = g.op("c", [b], [(16,)], inplace)
        d = g.op("d", [c], [(16,)], inplace)
        e = g.op("e", [d], [(16,)], inplace)
        graph = g.graph([e])
        sids = plan_storage(graph)
        check_plan(graph, sids)
        assert sids[x] not in sids[a:]
        assert len(set(sids[a:])) == want
        assert storage_report(graph, sids)["peak_bytes"] == want * 64


def test_in_place_never_writes_over_an_input_or_param():
    g = G()
    x = g.inp("x", (8,))
    a = g.op("relu", [x], [(8,)], inplace=0)
    graph = g.graph([a])
    sids = plan_storage(graph)
    assert sids[x] != sids[a]


def test_a_diamond_keeps_the_shared_input_alive_until_its_last_reader():
    g = G()
    x = g.inp("x", (32,))
    a = g.op("a", [x], [(32,)])
    b = g.op("b", [a], [(32,)], inplace=0)  # a is read again by d: no in-place here
    c = g.op("c", [a], [(32,)])
    d = g.op("d", [b, c], [(32,)], inplace=0)  # b dies here: in place
    graph = g.graph([d])
    sids = plan_storage(graph)
    check_plan(graph, sids)
    assert sids[b] != sids[a] and sids[c] not in (sids[a], sids[b])
    assert sids[d] == sids[b]
    assert storage_report(graph, sids)["peak_bytes"] == 3 * 128


def test_the_checker_catches_buffers_shared_while_live():
    g = G()
    x = g.inp("x", (32,))
    a = g.op("a", [x], [(32,)])
    b = g.op("b", [a], [(32,)])
    c = g.op("c", [a, b], [(32,)])
    graph = g.graph([c])
    for first, second in ((a, b), (a, c), (x, c)):  # a is read by c; x is an input
        sids = list(range(4))
        sids[second] = sids[first]
        with pytest.raises(AssertionError, match="share storage"):
            check_plan(graph, sids)


def test_a_residual_block_reuses_its_dead_buffers():
    g = G()
    x = g.inp("data", (1, 8, 4, 4))
    w1 = g.inp("w1", (8, 8, 3, 3))
    w2 = g.inp("w2", (8, 8, 3, 3))
    g.params.update({"w1", "w2"})
    c1 = g.op("conv_relu", [x, w1], [(1, 8, 4, 4)])
    c2 = g.op("conv", [c1, w2], [(1, 8, 4, 4)])
    add = g.op("add_relu", [c2, x], [(1, 8, 4, 4)], inplace=0)
    c3 = g.op("conv_relu2", [add, w1], [(1, 8, 4, 4)])
    c4 = g.op("conv2", [c3, w2], [(1, 8, 4, 4)])
    add2 = g.op("add_relu2", [c4, add], [(1, 8, 4, 4)], inplace=0)
    graph = g.graph([add2])
    sids = plan_storage(graph)
    check_plan(graph, sids)
    assert sids[add] == sids[c2] and sids[add2] == sids[c4]
    report = storage_report(graph, sids)
    one = nbytes((1, 8, 4, 4), "float32")
    assert report["total_intermediate_bytes"] == 6 * one
    assert report["peak_bytes"] == 3 * one  # add is live across c3 and c4
    assert report["ratio"] == 0.5
    assert report["input_bytes"] == one + 2 * nbytes((8, 8, 3, 3), "float32")


def test_multiple_outputs_get_separate_buffers_and_heads_are_never_reused():
    g = G()
    x = g.inp("x", (4, 4))
    split = g.op("split", [x], [(4, 2), (4, 2)])  # entries 1 and 2
    a = g.op("a", [(split, 0)], [(4, 2)], inplace=0)
    b = g.op("b", [(split, 1)], [(4, 2)], inplace=0)
    c = g.op("c", [a, b], [(4, 2)])
    d = g.op("d", [c], [(4, 2)])
    graph = g.graph([(split, 1), d, a])  # a head that another node also reads
    sids = plan_storage(graph)
    check_plan(graph, sids)
    row = graph["node_row_ptr"]
    s0, s1 = sids[row[split]], sids[row[split] + 1]
    assert s0 != s1
    assert sids[row[a]] == s0  # split output 0 dies at a: in place
    assert sids[row[b]] != s1  # split output 1 is a head: never taken over
    assert sids[row[d]] not in (s1, sids[row[a]])


def test_an_output_nobody_reads_is_dead_at_once():
    g = G()
    x = g.inp("x", (64,))
    pair = g.op("pair", [x], [(64,), (64,)])  # output 1 is never read
    y = g.op("y", [(pair, 0)], [(64,)])
    graph = g.graph([y])
    sids = plan_storage(graph)
    check_plan(graph, sids)
    row = graph["node_row_ptr"]
    assert sids[row[y]] == sids[row[pair] + 1]


def test_best_fit_then_grow_the_largest_across_dtypes():
    g = G()
    x = g.inp("x", (4,))
    big = g.op("big", [x], [(100,)])  # 400 bytes
    small = g.op("small", [x], [(10,)])  # 40 bytes
    t = g.op("t", [big, small], [(20,)])  # both die: free = {40, 400}
    fit = g.op("fit", [t], [(50,)], dtype="int64")  # 400 bytes: takes big's storage (best fit)
    grow = g.op("grow", [fit], [(30,)])  # free = {40, 80}: 120 bytes grows the largest (t's)
    graph = g.graph([grow])
    sids = plan_storage(graph)
    check_plan(graph, sids)
    assert sids[fit] == sids[big]
    assert sids[grow] == sids[t]
    assert len(set(sids)) == 4  # x, big, small, t
    assert storage_report(graph, sids)["peak_bytes"] == 400 + 40 + 120


def test_storage_report_reads_the_graphs_storage_ids():
    g = G()
    x = g.inp("x", (8,))
    a = g.op("a", [x], [(8,)])
    b = g.op("b", [a], [(8,)])
    graph = g.graph([b])
    graph["attrs"]["storage_id"] = ["list_int", [0, 1, 2]]  # unshared, as written
    report = storage_report(graph)
    assert report["peak_bytes"] == report["total_intermediate_bytes"] == 64
    assert report["num_storages"] == 3 and report["num_entries"] == 3


# ---------------------------------------------------------------------------------------
# concatenations written in place
# ---------------------------------------------------------------------------------------
def fire_module(concat_flag=True, sizes=(64, 64), extra_reader=False, head=False):
    """x -> squeeze -> (e1, e2) -> concat -> next: SqueezeNet's fire module."""
    g = G()
    x = g.inp("x", (1, 256))
    sq = g.op("squeeze", [x], [(1, 16)])
    e1 = g.op("expand1", [sq], [(1, sizes[0])])
    e2 = g.op("expand3", [sq], [(1, sizes[1])])
    cat = g.op("concat", [e1, e2], [(1, sum(sizes))], concat=concat_flag)
    nxt = g.op("next", [cat] + ([e1] if extra_reader else []), [(1, 32)])
    graph = g.graph([cat] if head else [nxt])
    return graph, (x, sq, e1, e2, cat, nxt)


def test_a_concatenation_of_whole_blocks_is_written_in_place_and_runs_no_kernel():
    graph, (x, sq, e1, e2, cat, nxt) = fire_module()
    plan = plan_memory(graph)
    sids, offs = plan.storage_ids, plan.storage_offsets
    assert plan.nop_nodes == [cat]
    check_plan(graph, sids, offs, plan.nop_nodes)
    assert sids[e1] == sids[e2] == sids[cat] and (offs[e1], offs[e2], offs[cat]) == (0, 256, 0)
    assert sids[sq] != sids[cat] and sids[nxt] not in (sids[cat], sids[x])
    plan.apply(graph)
    assert graph["nodes"][cat]["attrs"]["func_name"] == "__nop"
    assert graph["attrs"]["storage_offset"][1] == offs
    report = storage_report(graph)  # reads the ids and offsets back from the graph
    assert report["peak_bytes"] == 512 + 128  # the concatenation (e1, e2 inside); sq's, grown for next
    assert plan_storage(graph) == sids


@pytest.mark.parametrize("case", ["no flag", "misaligned", "read elsewhere", "a head"])
def test_a_concatenation_stays_a_kernel_when_its_inputs_cannot_be_views(case):
    graph, (x, sq, e1, e2, cat, nxt) = fire_module(
        concat_flag=case != "no flag", sizes=(40, 64) if case == "misaligned" else (64, 64),
        extra_reader=case == "read elsewhere", head=case == "a head")
    plan = plan_memory(graph)
    assert plan.nop_nodes == [] and not any(plan.storage_offsets)
    check_plan(graph, plan.storage_ids)
    assert plan.storage_ids[cat] not in (plan.storage_ids[e1], plan.storage_ids[e2])
    plan.apply(graph)
    assert graph["nodes"][cat]["attrs"]["func_name"] == "concat" and "storage_offset" not in graph["attrs"]


def test_inputs_params_and_nested_concatenations_are_not_placed_in_another():
    g = G()
    x = g.inp("x", (16,))
    w = g.inp("w", (16,))
    a = g.op("a", [x], [(16,)])
    b = g.op("b", [x], [(16,)])
    inner = g.op("inner", [a, b], [(32,)], concat=True)
    c = g.op("c", [x], [(16,)])
    outer = g.op("outer", [inner, c], [(48,)], concat=True)  # inner is a no-op: outer stays a kernel
    with_input = g.op("with_input", [outer, w], [(64,)], concat=True)  # w is a param
    graph = g.graph([g.op("last", [with_input], [(8,)])])
    plan = plan_memory(graph)
    assert plan.nop_nodes == [inner]
    check_plan(graph, plan.storage_ids, plan.storage_offsets, plan.nop_nodes)


def test_a_reshape_is_a_view_of_its_input_and_runs_no_kernel():
    g = G()
    x = g.inp("x", (4, 16))
    a = g.op("a", [x], [(4, 16)])
    r = g.op("r", [a], [(64,)], reshape=True)  # a and r: one value in one storage
    b = g.op("b", [a], [(64,)])  # a read after r was made: the storage must stay
    c = g.op("c", [r, b], [(64,)], inplace=0)  # r's last reader, but a...
    d = g.op("d", [c], [(64,)], inplace=0)
    graph = g.graph([d])
    plan = plan_memory(graph)
    sids = plan.storage_ids
    assert plan.nop_nodes == [r]
    assert sids[r] == sids[a] and sids[b] != sids[a]
    assert sids[c] == sids[a]  # ...a died at b, so c takes the storage in place
    check_plan(graph, sids, plan.storage_offsets, plan.nop_nodes)
    assert plan.apply(graph)["nodes"][r]["attrs"]["func_name"] == "__nop"


def test_a_view_of_an_input_is_never_written_in_place_and_a_head_stays_a_copy():
    g = G()
    x = g.inp("x", (64,))
    r = g.op("r", [x], [(8, 8)], reshape=True)  # a view of the user's input
    a = g.op("a", [r], [(8, 8)], inplace=0)  # may not write over it
    h = g.op("h", [a], [(64,)], reshape=True)  # a head: the user reads it after the run
    graph = g.graph([h])
    plan = plan_memory(graph)
    sids = plan.storage_ids
    assert plan.nop_nodes == [r] and sids[r] == sids[x]
    assert sids[a] != sids[x] and sids[h] not in (sids[a], sids[x])
    check_plan(graph, sids, plan.storage_offsets, plan.nop_nodes)


def test_a_reshape_chain_keeps_one_storage_until_its_last_view_dies():
    g = G()
    x = g.inp("x", (16,))
    a = g.op("a", [x], [(16,)])
    r1 = g.op("r1", [a], [(4, 4)], reshape=True)
    r2 = g.op("r2", [r1], [(2, 8)], reshape=True)
    b = g.op("b", [x], [(16,)])  # allocated while a's value lives on as r2: not in its storage
    c = g.op("c", [r2, b], [(16,)])
    graph = g.graph([c])
    plan = plan_memory(graph)
    sids = plan.storage_ids
    assert plan.nop_nodes == [r1, r2] and sids[a] == sids[r1] == sids[r2] != sids[b]
    check_plan(graph, sids, plan.storage_offsets, plan.nop_nodes)


# ---------------------------------------------------------------------------------------
# random DAGs
# ---------------------------------------------------------------------------------------
@st.composite
def random_graphs(draw):
    g = G()
    entries = []  # (node, output, size)
    sizes = st.integers(1, 64) | st.sampled_from([16, 32, 48])  # whole 64-byte blocks too
    for k in range(draw(st.integers(1, 3))):
        size = draw(sizes)
        entries.append((g.inp(f"in{k}", (size,)), 0, size))
    for k in range(draw(st.integers(1, 14))):
        reads = draw(st.lists(st.integers(0, len(entries) - 1), min_size=1, max_size=3))
        inputs = [entries[r] for r in reads]
        n_out = draw(st.integers(1, 2))
        inplace = draw(st.integers(-1, len(inputs) - 1))
        shapes = [(draw(sizes),) for _ in range(n_out)]
        if inplace >= 0:  # an element-wise output 0: the input's shape
            shapes[0] = (inputs[inplace][2],)
        concat = len(entries) > 2 and draw(st.booleans())
        reshape = not concat and draw(st.integers(0, 3)) == 0
        if concat:  # the freshest entries (likely read by nothing else) end to end, whole 64-byte blocks or not
            inputs = entries[-draw(st.integers(2, min(3, len(entries)))):]
            shapes, inplace = [(sum(size for _, _, size in inputs),)], -1
        elif reshape:  # one entry's bytes as another entry (an input, a param or a kernel's output)
            inputs = inputs[:1]
            shapes, inplace = [(inputs[0][2],)], -1
        node = g.op(f"k{k}", [(n, o) for n, o, _ in inputs], shapes, inplace, concat=concat, reshape=reshape)
        entries += [(node, j, shapes[j][0]) for j in range(len(shapes))]
    kernel_entries = [e for e in entries if g.nodes[e[0]]["op"] != "null"]
    heads = draw(st.lists(st.sampled_from(entries), min_size=1, max_size=3, unique=True))
    heads.append(kernel_entries[-1])
    return g.graph(sorted({(n, o) for n, o, _ in heads}))


@settings(max_examples=300, deadline=None)
@given(random_graphs())
def test_random_dags_never_share_a_live_buffer(graph):
    plan = plan_memory(graph)
    sids = plan.storage_ids
    count = check_plan(graph, sids, plan.storage_offsets, plan.nop_nodes)
    report = storage_report(graph, sids, plan.storage_offsets)
    assert count <= graph["node_row_ptr"][-1]
    assert report["peak_bytes"] <= report["total_intermediate_bytes"]


# ---------------------------------------------------------------------------------------
# bad graphs
# ---------------------------------------------------------------------------------------
def test_a_graph_missing_shapes_is_refused():
    g = G()
    x = g.inp("x", (8,))
    graph = g.graph([x])
    del graph["attrs"]["shape"]
    with pytest.raises(MemoryPlanError, match="no attrs.'shape'"):
        plan_storage(graph)


def test_per_entry_lists_must_match_the_entry_count():
    g = G()
    x = g.inp("x", (8,))
    g.op("a", [x], [(8,)])
    graph = g.graph([1])
    graph["attrs"]["dltype"][1].append("float32")
    with pytest.raises(MemoryPlanError, match="dltype has 3 items but the graph has 2 entries"):
        plan_storage(graph)


def test_a_node_reading_a_later_node_is_refused():
    g = G()
    x = g.inp("x", (8,))
    a = g.op("a", [x], [(8,)])
    graph = g.graph([a])
    graph["nodes"][a]["inputs"] = [[a, 0, 0]]
    with pytest.raises(MemoryPlanError, match=r"node 1 \('a'\) refers to entry \[1, 0, 0\].*after their inputs"):
        plan_storage(graph)


def test_a_wrong_node_row_ptr_is_refused():
    g = G()
    x = g.inp("x", (8,))
    g.op("a", [x], [(8,), (8,)])
    graph = g.graph([1])
    graph["node_row_ptr"] = [0, 1, 2]
    with pytest.raises(MemoryPlanError, match=r"node_row_ptr \[0, 1, 2\] disagrees.*\[0, 1, 3\]"):
        plan_storage(graph)


def test_an_unknown_dtype_and_a_bad_inplace_input_are_refused():
    g = G()
    x = g.inp("x", (8,))
    g.op("a", [x], [(8,)], inplace=3)
    graph = g.graph([1])
    with pytest.raises(MemoryPlanError, match=r"node 1 \('a'\) has inplace_input 3 but only 1 inputs"):
        plan_storage(graph)
    graph["nodes"][1]["attrs"]["inplace_input"] = "-1"
    graph["attrs"]["dltype"][1][1] = "complex64"
    with pytest.raises(MemoryPlanError, match="entry 1 has shape .* dtype 'complex64'"):
        plan_storage(graph)
    with pytest.raises(MemoryPlanError, match="expected a graph JSON dict"):
        plan_storage({"heads": []})


def test_a_resnet50_shaped_graph_needs_a_quarter_of_its_intermediates_or_less():
    # the fused kernels of ResNet-50 at batch 1: conv+bn+relu groups, bottlenecks whose
    # last conv is fused with the residual add and relu, a downsampling conv per stage
    g = G()
    x = g.inp("data", (1, 3, 224, 224))
    w = g.inp("weights", (64, 3, 7, 7))  # one stand-in param
    y = g.op("stem", [x, w], [(1, 64, 112, 112)])
    y = g.op("maxpool", [y], [(1, 64, 56, 56)])
    size = 56
    for stage, (blocks, channels) in enumerate(zip((3, 4, 6, 3), (256, 512, 1024, 2048))):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            out = size // stride
            shortcut = y
            if block == 0:
                shortcut = g.op(f"down{stage}", [y, w], [(1, channels, out, out)])
            a = g.op(f"s{stage}b{block}a", [y, w], [(1, channels // 4, size, size)])
            b = g.op(f"s{stage}b{block}b", [a, w], [(1, channels // 4, out, out)])
            y = g.op(f"s{stage}b{block}c", [b, w, shortcut], [(1, channels, out, out)])
            size = out
    y = g.op("pool", [y], [(1, 2048, 1, 1)])
    y = g.op("dense", [y, w], [(1, 1000)])
    y = g.op("softmax", [y], [(1, 1000)], inplace=0)
    graph = g.graph([y])
    sids = plan_storage(graph)
    check_plan(graph, sids)
    report = storage_report(graph, sids)
    assert report["ratio"] <= 0.25, report
