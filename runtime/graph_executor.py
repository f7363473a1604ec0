"""The graph executor: runs a built model, one kernel call per node, on buffers
allocated once.

A model built by the graph layer is three things: a *graph JSON* (TVM's
graph-executor format), a kernel module (a :class:`~tecc.runtime.module.CModule` or
:class:`~tecc.runtime.cuda_module.CUDAModule` with one function per fused kernel) and
its params.  The JSON::

    {"nodes": [{"op": "null", "name": "data", "inputs": []},
               {"op": "null", "name": "p0", "inputs": []},
               {"op": "tvm_op", "name": "fused_dense_relu", "inputs": [[0, 0, 0], [1, 0, 0]],
                "attrs": {"func_name": "fused_dense_relu", "num_inputs": "2", "num_outputs": "1",
                          "flatten_data": "0", "inplace_input": "-1"}}],
     "arg_nodes": [0, 1],            # the "null" nodes: user inputs and params
     "heads": [[2, 0, 0]],           # the model's outputs
     "node_row_ptr": [0, 1, 2, 3],   # entry id of output j of node i: node_row_ptr[i] + j
     "attrs": {"shape": ["list_shape", [...]], "dltype": ["list_str", [...]],
               "storage_id": ["list_int", [...]],    # one per entry
               "storage_offset": ["list_int", [...]]}}  # optional: bytes into the storage

A kernel node calls ``lib[func_name](*inputs, *outputs)``.  Entries with the same
storage id share one buffer, as large as the furthest byte any of them reaches; an
entry starts ``storage_offset`` bytes into it (0 where the list is absent, as in
TVM's format).  A node whose ``func_name`` is ``"__nop"`` (TVM's name) calls
nothing: its output already holds its inputs, which the planner placed inside it
(a concatenation of whole blocks, see :mod:`tecc.graph.memory_plan`); the graph is
refused unless every input of such a node lies inside its output 0.

:class:`GraphExecutor` checks the JSON against the module when it is made, allocates
every storage once, makes every entry a view of its storage, copies the params in
and binds every kernel's arguments; :meth:`GraphExecutor.run` then only calls the
kernels, allocating nothing; :meth:`GraphExecutor.profile` times each kernel call on
its own (a :class:`GraphProfile`, TVM's debug executor's per-node report).
:class:`GraphExecutorFactoryModule` is what building a
model returns (TVM's ``relay.build`` result): ``factory["default"](dev)`` makes an
executor, ``export_library`` writes the single-file artifact of
:mod:`tecc.runtime.artifact`, which :func:`tecc.runtime.load_module` reads back.
:class:`tecc.contrib.graph_executor.GraphModule` is TVM's wrapper around an executor.

Nothing here imports the compiler: an exported model runs with numpy (plus CuPy on a
GPU).
"""
from __future__ import annotations

import io
import json
import math
import os
import zipfile

import numpy as np

from ..errors import FunctionNotFoundError, RuntimeArgError, TeccError, TeccTypeError
from . import dtypes, timing
from .cuda_module import CUDAModule, _GPULauncher
from .device import CPU, CUDA, Device, _cupy, cpu, cuda
from .launch import freeze_plan
from .module import CModule, ProfileResult, raise_failure
from .ndarray import NDArray, dlpack_data, empty


class GraphJSONError(TeccError):
    """A graph JSON that is malformed or disagrees with its kernel module."""


# -------------------------------------------------------------------------------------------
# reading and checking the graph JSON
# -------------------------------------------------------------------------------------------
_REQUIRED_KEYS = ("nodes", "arg_nodes", "heads", "node_row_ptr", "attrs")
_ENTRY_ATTRS = ("shape", "dltype", "storage_id")
#: the func_name of a node that runs no kernel (TVM's)
NOP = "__nop"
#: the user input (uint64, shape ()) a model's random draws read their counter from
#: (:mod:`tecc.graph.ops.random`): the executor sets it to 0, 1, 2... on its runs, so
#: every run draws new numbers, until set_input gives it a value of the user's
RANDOM_COUNTER = "tecc_random_counter"


def calls_kernel(node: dict) -> bool:
    """Whether a node of a graph JSON calls a kernel: a ``tvm_op`` but ``__nop``."""
    return node.get("op") == "tvm_op" and (node.get("attrs") or {}).get("func_name") != NOP


def _as_graph_dict(graph_json) -> dict:
    if isinstance(graph_json, (bytes, bytearray)):
        graph_json = graph_json.decode("utf-8")
    if isinstance(graph_json, str):
        try:
            graph_json = json.loads(graph_json)
        except ValueError as err:
            raise GraphJSONError(f"graph JSON: not valid JSON ({err})") from None
    if not isinstance(graph_json, dict):
        raise GraphJSONError(f"graph JSON: expected a JSON object (str or dict), got {type(graph_json).__name__}")
    return graph_json


class _Node:
    """One checked node: its inputs and outputs as entry ids."""

    __slots__ = ("index", "name", "op", "func_name", "inputs", "outputs", "flatten")

    def __init__(self, index, name, op, func_name, inputs, outputs, flatten):
        self.index = index
        self.name = name
        self.op = op
        self.func_name = func_name
        self.inputs = inputs
        self.outputs = outputs
        self.flatten = flatten

    def where(self) -> str:
        return f"node {self.index} ({self.name!r})"


class GraphSpec:
    """A checked graph JSON: nodes, entries (shape, dtype, storage id), inputs, heads.

    Parameters
    ----------
    graph_json : str or dict
        The graph JSON.
    param_names : iterable of str
        The names of the arg nodes that are params (all others are user inputs).

    Raises
    ------
    GraphJSONError
        If a key is missing, a node or entry is malformed, or the per-entry lists
        disagree with ``node_row_ptr``; the message names the node.
    """

    def __init__(self, graph_json, param_names=()):
        graph = _as_graph_dict(graph_json)
        self.graph = graph
        missing = [k for k in _REQUIRED_KEYS if k not in graph]
        if missing:
            raise GraphJSONError(f"graph JSON lacks the key(s) {', '.join(map(repr, missing))}; a graph JSON "
                                 f"has {', '.join(_REQUIRED_KEYS)} (as graph/build.py writes it)")
        nodes = graph["nodes"]
        if not isinstance(nodes, list) or not nodes:
            raise GraphJSONError("graph JSON: 'nodes' must be a non-empty list")
        self.row_ptr = self._row_ptr(graph, nodes)
        self.num_entries = self.row_ptr[-1]
        lists = self._entry_lists(graph["attrs"])
        self.shapes, self.dtypes, self.storage_ids = [], [], []
        for eid in range(self.num_entries):
            self._read_entry(eid, lists, nodes)
        self.storage_offsets = self._read_offsets(graph["attrs"].get("storage_offset"), nodes)
        self.nodes = [self._read_node(i, node, nodes) for i, node in enumerate(nodes)]
        self.arg_nodes = self._read_arg_nodes(graph["arg_nodes"], nodes)
        self.heads = self._read_heads(graph["heads"])
        self.output_names = self._read_output_names(graph["attrs"].get("output_names"))
        #: head -> the head holding its row count (``attrs.output_rows``); those heads are not outputs
        self.output_rows = self._read_output_rows(graph["attrs"].get("output_rows"))
        counts = set(self.output_rows.values())
        #: the heads the model's outputs are, in order (the row counts' left out)
        self.visible = [k for k in range(len(self.heads)) if k not in counts]
        param_names = set(param_names)
        names = [self.nodes[i].name for i in self.arg_nodes]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise GraphJSONError(f"graph JSON: the arg nodes' names must be unique; {duplicated} occur twice")
        unknown = sorted(param_names - set(names))
        if unknown:
            raise GraphJSONError(f"params {unknown} are not inputs of the graph (its arg nodes are {names}); "
                                 "pass only the params the graph reads")
        #: user inputs then params, each in arg_nodes order: the input index space
        self.input_names = [n for n in names if n not in param_names] + [n for n in names if n in param_names]
        self.num_user_inputs = len(names) - len(param_names)
        self.input_entry = {self.nodes[i].name: self.row_ptr[i] for i in self.arg_nodes}
        self._producer = {eid: node for node in self.nodes if node.op == "tvm_op" for eid in node.outputs}
        self._check_arg_storage()
        self._check_nops()

    # structure ---------------------------------------------------------------------------
    @staticmethod
    def _num_outputs(i, node) -> int:
        if node.get("op") == "null":
            return 1
        value = (node.get("attrs") or {}).get("num_outputs", 1)
        try:
            count = int(value)
        except (TypeError, ValueError):
            count = -1
        if count < 1:
            raise GraphJSONError(f"graph JSON: node {i} ({node.get('name')!r}) has num_outputs {value!r}; it must "
                                 "be a positive integer")
        return count

    def _row_ptr(self, graph, nodes) -> list:
        for i, node in enumerate(nodes):
            if not isinstance(node, dict) or "op" not in node or "name" not in node:
                raise GraphJSONError(f"graph JSON: node {i} must be an object with 'op', 'name' and 'inputs', "
                                     f"got {node!r}")
        given = graph["node_row_ptr"]
        if not isinstance(given, list) or len(given) != len(nodes) + 1:
            raise GraphJSONError(f"graph JSON: node_row_ptr must have {len(nodes) + 1} items (one per node, plus "
                                 f"the entry count), got {given!r}")
        if given[0] != 0:
            raise GraphJSONError(f"graph JSON: node_row_ptr must start at 0, got {given[0]!r}")
        for i, node in enumerate(nodes):
            count = self._num_outputs(i, node)
            if given[i + 1] - given[i] != count:
                raise GraphJSONError(
                    f"graph JSON: node {i} ({node['name']!r}) has {count} output(s), but node_row_ptr gives it "
                    f"{given[i + 1] - given[i]} entries ({given[i]}..{given[i + 1]}); node_row_ptr[i + 1] must "
                    "be node_row_ptr[i] + num_outputs")
        return [int(v) for v in given]

    def _entry_lists(self, attrs) -> dict:
        if not isinstance(attrs, dict):
            raise GraphJSONError("graph JSON: 'attrs' must be an object with shape, dltype and storage_id")
        lists = {}
        for key in _ENTRY_ATTRS:
            if key not in attrs:
                hint = " (plan it with tecc.graph.memory_plan.plan_storage)" if key == "storage_id" else ""
                raise GraphJSONError(f"graph JSON: attrs lacks {key!r}, a list with one item per entry{hint}")
            lists[key] = self._entry_list(key, attrs[key])
        return lists

    def _entry_list(self, key: str, value) -> list:
        """``attrs[key]`` (``["list_xxx", [...]]`` or a bare list), one item per entry."""
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
            value = value[1]
        if not isinstance(value, list) or len(value) != self.num_entries:
            got = len(value) if isinstance(value, list) else type(value).__name__
            raise GraphJSONError(f"graph JSON: attrs.{key} has {got} items, but node_row_ptr says there are "
                                 f"{self.num_entries} entries (one per node output)")
        return value

    def _owner(self, eid: int, nodes) -> str:
        i = max(k for k in range(len(nodes)) if self.row_ptr[k] <= eid)
        return f"node {i} ({nodes[i]['name']!r}) output {eid - self.row_ptr[i]}"

    def _read_entry(self, eid, lists, nodes) -> None:
        shape, dtype, sid = lists["shape"][eid], lists["dltype"][eid], lists["storage_id"][eid]
        where = f"graph JSON: entry {eid} ({self._owner(eid, nodes)})"
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise GraphJSONError(f"{where} has shape {shape!r}; a shape is a list of non-negative integers")
        try:
            dtype = dtypes.canonical(dtype)
        except TeccTypeError as err:
            raise GraphJSONError(f"{where}: {err}") from None
        if not isinstance(sid, int) or sid < 0:
            raise GraphJSONError(f"{where} has storage_id {sid!r}; storage ids are non-negative integers")
        self.shapes.append(tuple(shape))
        self.dtypes.append(dtype)
        self.storage_ids.append(sid)

    def _read_offsets(self, value, nodes) -> list:
        """``attrs.storage_offset``: bytes into its storage where each entry starts
        (all 0 when absent), each a multiple of the entry's element size."""
        if value is None:
            return [0] * self.num_entries
        value = self._entry_list("storage_offset", value)
        for eid, off in enumerate(value):
            size = dtypes.storage(self.dtypes[eid]).itemsize
            if isinstance(off, bool) or not isinstance(off, int) or off < 0 or off % size:
                raise GraphJSONError(f"graph JSON: entry {eid} ({self._owner(eid, nodes)}) has storage_offset "
                                     f"{off!r}; an offset is a non-negative number of bytes, a multiple of the "
                                     f"entry's element size ({size})")
        return list(value)

    def _entry_ref(self, ref, where: str, before: int) -> int:
        ok = isinstance(ref, list) and len(ref) in (2, 3) and all(isinstance(v, int) for v in ref)
        if ok:
            nid, index = ref[0], ref[1]
            ok = 0 <= nid < before and 0 <= index < self.row_ptr[nid + 1] - self.row_ptr[nid]
        if not ok:
            raise GraphJSONError(f"graph JSON: {where} refers to {ref!r}, which is not an output of an earlier "
                                 "node ([node index, output index, 0]; nodes come after their inputs)")
        return self.row_ptr[ref[0]] + ref[1]

    def _read_node(self, i, node, nodes) -> _Node:
        where = f"node {i} ({node['name']!r})"
        op = node["op"]
        inputs = node.get("inputs", [])
        if not isinstance(inputs, list):
            raise GraphJSONError(f"graph JSON: {where}: 'inputs' must be a list of entries")
        ins = [self._entry_ref(ref, f"{where} input {k}", i) for k, ref in enumerate(inputs)]
        outs = list(range(self.row_ptr[i], self.row_ptr[i + 1]))
        if op == "null":
            if ins:
                raise GraphJSONError(f"graph JSON: {where} is an input ('null') node but has inputs")
            return _Node(i, node["name"], op, None, ins, outs, False)
        if op != "tvm_op":
            raise GraphJSONError(f"graph JSON: {where} has op {op!r}; nodes are 'null' (inputs, params) or "
                                 "'tvm_op' (kernel calls)")
        attrs = node.get("attrs")
        if not isinstance(attrs, dict) or not attrs.get("func_name"):
            raise GraphJSONError(f"graph JSON: {where} is a kernel call ('tvm_op') without attrs.func_name")
        if "num_inputs" in attrs and str(attrs["num_inputs"]) != str(len(ins)):
            raise GraphJSONError(f"graph JSON: {where} says num_inputs {attrs['num_inputs']!r} but lists "
                                 f"{len(ins)} inputs")
        flatten = str(attrs.get("flatten_data", "0")) not in ("0", "false", "False")
        return _Node(i, node["name"], op, str(attrs["func_name"]), ins, outs, flatten)

    def _read_arg_nodes(self, arg_nodes, nodes) -> list:
        if not isinstance(arg_nodes, list):
            raise GraphJSONError("graph JSON: 'arg_nodes' must be a list of node indices")
        for a in arg_nodes:
            if not isinstance(a, int) or not 0 <= a < len(nodes) or nodes[a]["op"] != "null":
                raise GraphJSONError(f"graph JSON: arg_nodes lists {a!r}, which is not the index of a 'null' node")
        unlisted = [n.where() for n in self.nodes if n.op == "null" and n.index not in arg_nodes]
        if unlisted:
            raise GraphJSONError(f"graph JSON: {', '.join(unlisted)} is an input ('null') node missing from "
                                 "arg_nodes")
        return list(arg_nodes)

    def _read_heads(self, heads) -> list:
        if not isinstance(heads, list) or not heads:
            raise GraphJSONError("graph JSON: 'heads' must list at least one output entry")
        return [self._entry_ref(h, f"heads[{k}]", len(self.nodes)) for k, h in enumerate(heads)]

    def _read_output_names(self, value) -> list:
        """The heads' names (``attrs.output_names``: the model's output names, which
        an importer keeps), or ``None`` each where the graph has none."""
        if value is None:
            return [None] * len(self.heads)
        if isinstance(value, list) and len(value) == 2 and value[0] == "list_str":
            value = value[1]
        if not (isinstance(value, list) and len(value) == len(self.heads) and all(isinstance(v, str) for v in value)):
            raise GraphJSONError(f"graph JSON: attrs.output_names must list one name per head ({len(self.heads)}), "
                                 f"got {value!r}")
        return list(value)

    def _read_output_rows(self, value) -> dict:
        """``attrs.output_rows``: ``["list_int", [head, count head, ...]]`` pairs, an
        output whose first ``count`` rows (an ``int64 [1]`` head of its own) are its
        value -- the rest padding up to the most the model can give."""
        if value is None:
            return {}
        if isinstance(value, list) and len(value) == 2 and value[0] == "list_int":
            value = value[1]
        if not (isinstance(value, list) and len(value) % 2 == 0 and all(type(v) is int for v in value)):
            raise GraphJSONError(f"graph JSON: attrs.output_rows must be a list of (head, count head) int pairs, got "
                                 f"{value!r}")
        pairs = dict(zip(value[0::2], value[1::2]))
        for head, count in pairs.items():
            for k in (head, count):
                if not 0 <= k < len(self.heads):
                    raise GraphJSONError(f"graph JSON: attrs.output_rows names head {k}; the graph has "
                                         f"{len(self.heads)}")
            e, c = self.heads[head], self.heads[count]
            if head == count or count in pairs or self.dtypes[c] != "int64" or tuple(self.shapes[c]) != (1,) \
                    or not self.shapes[e]:
                raise GraphJSONError(f"graph JSON: attrs.output_rows pairs head {head} (shape {self.shapes[e]}) "
                                     f"with head {count} ({self.dtypes[c]} {self.shapes[c]}); a count is an int64 [1] "
                                     "head of its own, of an output with rows")
        return pairs

    def _check_arg_storage(self) -> None:
        users = {}
        for eid, sid in enumerate(self.storage_ids):
            users.setdefault(sid, []).append(eid)
        for i in self.arg_nodes:
            eid = self.row_ptr[i]
            others = [e for e in users[self.storage_ids[eid]] if e != eid and not self._is_view_of(e, eid)]
            if others:
                raise GraphJSONError(
                    f"graph JSON: input node {i} ({self.nodes[i].name!r}) has storage_id {self.storage_ids[eid]}, "
                    f"shared with entry {others[0]}; inputs and params need a storage of their own (plan with "
                    "tecc.graph.memory_plan.plan_storage)")

    def _is_view_of(self, eid: int, of: int) -> bool:
        """Whether entry ``eid`` is entry ``of``'s bytes under another shape: the output
        of a no-op node whose one input is ``of`` or such a view of it (a reshape that
        computes nothing, tecc.graph.memory_plan), at the same offset."""
        while eid != of:
            node = self._producer.get(eid)
            if node is None or node.func_name != NOP or len(node.inputs) != 1 or node.outputs[0] != eid:
                return False
            src = node.inputs[0]
            if self.storage_offsets[src] != self.storage_offsets[eid] or self.nbytes(src) != self.nbytes(eid):
                return False
            eid = src
        return True

    def _check_nops(self) -> None:
        """A ``__nop`` node computes nothing, so its inputs must already be where its
        output 0 is read: inside it, in the same storage."""
        for node in self.nodes:
            if node.func_name != NOP:
                continue
            out = node.outputs[0]
            lo, hi = self.storage_offsets[out], self.storage_offsets[out] + self.nbytes(out)
            for k, eid in enumerate(node.inputs):
                start = self.storage_offsets[eid]
                if self.storage_ids[eid] != self.storage_ids[out] or not lo <= start <= start + self.nbytes(eid) <= hi:
                    raise GraphJSONError(
                        f"graph JSON: {node.where()} is a no-op ({NOP!r}) but its input {k} (entry {eid}) is not "
                        f"stored inside its output (entry {out}); a no-op node's inputs must be views of its output "
                        "(plan with tecc.graph.memory_plan.plan_memory(graph).apply(graph))")

    # facts ---------------------------------------------------------------------------------
    def nbytes(self, eid: int) -> int:
        return math.prod(self.shapes[eid]) * dtypes.storage(self.dtypes[eid]).itemsize

    def storage_bytes(self) -> dict:
        """Storage id -> bytes (the furthest byte an entry placed in it reaches)."""
        out = {}
        for eid, sid in enumerate(self.storage_ids):
            out[sid] = max(out.get(sid, 0), self.storage_offsets[eid] + self.nbytes(eid))
        return out

    def kernel_nodes(self) -> list:
        """The nodes that call a kernel, in order (``tvm_op`` nodes but ``__nop``)."""
        return [node for node in self.nodes if node.op == "tvm_op" and node.func_name != NOP]

    def unread_inputs(self) -> set:
        """The names of the inputs no node reads and no output is (an input the model
        ignores: torch's exporter folds ``ones_like(x)`` into a constant)."""
        read = {eid for node in self.nodes for eid in node.inputs} | set(self.heads)
        return {n for n, eid in self.input_entry.items() if eid not in read}

    def input_info(self) -> list:
        """``[{"name", "shape", "dtype"}]`` of the user inputs."""
        return [{"name": n, "shape": list(self.shapes[self.input_entry[n]]),
                 "dtype": self.dtypes[self.input_entry[n]]} for n in self.input_names[:self.num_user_inputs]]

    def output_info(self) -> list:
        """``[{"index", "name", "shape", "dtype"}]`` of the model's outputs (no ``name``
        where the graph names none); an output whose rows the model counts at run
        time has ``"max_rows"``, its first dimension in ``shape``."""
        out = []
        for index, k in enumerate(self.visible):
            e = self.heads[k]
            info = {"index": index, "shape": list(self.shapes[e]), "dtype": self.dtypes[e]}
            if self.output_names[k] is not None:
                info = {"index": index, "name": self.output_names[k], **info}
            if k in self.output_rows:
                info["max_rows"] = int(self.shapes[e][0])
            out.append(info)
        return out


# -------------------------------------------------------------------------------------------
# calling kernels with arguments bound once
# -------------------------------------------------------------------------------------------
def _bound_call(lib, func_name: str, args: list, where: str):
    """A function of no arguments that calls ``lib[func_name](*args)``, with the
    arguments checked and converted here, once."""
    try:
        if isinstance(lib, CModule):
            raw, keep = lib._raw(func_name, args)
            cfunc = lib._cfuncs[func_name]
            clib = lib._lib

            def call_c(_keep=keep):
                if cfunc(*raw) != 0:
                    raise_failure(clib, func_name)

            return call_c
        if isinstance(lib, CUDAModule):
            _sig, arrays, values = lib._bind(func_name, args)
            plan, kernels = lib.plans[func_name], lib.kernels
            on_gpu = lib._on_gpu() and all(not isinstance(a, np.ndarray) for a in arrays.values())
            launcher = _GPULauncher(lib) if on_gpu else lib.emulator()
            frozen = None

            def call_cuda():
                # the buffers and scalars never change: the first call resolves the plan
                # (its workspaces allocated, its kernels loaded), later ones only launch
                nonlocal frozen
                if frozen is None:
                    frozen = freeze_plan(plan, kernels, arrays, values, launcher)
                for launch in frozen:
                    launch()

            return call_cuda
        fn = lib.get_function(func_name)
        return lambda: fn(*args)
    except RuntimeArgError as err:
        raise GraphJSONError(f"graph JSON: {where}: the kernel {func_name!r} does not accept the graph's "
                             f"entries: {err}") from None


# -------------------------------------------------------------------------------------------
# values given by the user
# -------------------------------------------------------------------------------------------
def _value_dtype(value):
    """The canonical dtype of an array value, or None when it is not known."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    if isinstance(value, NDArray):
        return value.dtype
    try:
        return dtypes.canonical(np.dtype(str(dtype)))
    except (TypeError, TeccError):
        return str(dtype)


def _foreign_array(value):
    """Another library's array (a torch tensor, say) as numpy's, or cupy's when it
    lives on the GPU, through DLPack without a copy (:func:`.ndarray.dlpack_data`);
    anything else as it is (set_input's checks name what it is not)."""
    if isinstance(value, (np.ndarray, NDArray)) or not hasattr(value, "__dlpack__") \
            or not hasattr(value, "__dlpack_device__"):
        return value
    cupy = _cupy()
    if cupy is not None and isinstance(value, cupy.ndarray):
        return value
    try:
        return dlpack_data(value)[0]
    except TeccError:  # a device tecc does not run on, or a GPU array without cupy
        return value


def _copy_into(dst: NDArray, value, what: str) -> None:
    """Copy ``value`` into ``dst`` after checking its shape and dtype against ``dst``'s."""
    want_shape, want_dtype = dst.shape, dst.dtype
    value = _foreign_array(value)
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        try:  # a list or a scalar: convert to the expected dtype
            value = dtypes.to_storage(value, want_dtype)
        except (TypeError, ValueError) as err:
            raise RuntimeArgError(f"{what}: cannot convert {type(value).__name__} to a {want_dtype} array "
                                  f"({err})") from None
        got_dtype = want_dtype
    else:
        got_dtype = _value_dtype(value)
        # a type numpy lacks travels as its storage (bfloat16's uint16 bits, say), or as
        # ml_dtypes' array of it, moved as that storage
        stored = dtypes.as_storage(value, want_dtype)
        if stored is not None:
            got_dtype, value = want_dtype, stored
    got_shape = tuple(int(s) for s in value.shape)
    if got_shape != want_shape or got_dtype != want_dtype:
        raise RuntimeArgError(f"{what} expects shape {want_shape} and dtype {want_dtype}, got shape {got_shape} "
                              f"and dtype {got_dtype}")
    target = dst._data
    host = isinstance(target, np.ndarray)
    if isinstance(value, NDArray):
        if value.device == dst.device:
            target[...] = value._data  # same memory space: one copy, no staging
            return
        value = value.bits()
    cupy = _cupy() if not isinstance(value, np.ndarray) else None
    on_gpu = cupy is not None and isinstance(value, cupy.ndarray)
    if host:
        np.copyto(target, value.get() if on_gpu else np.asarray(value))
        return
    if on_gpu:
        target[...] = value
    else:
        target.set(np.asarray(value, order="C"))


def save_param_dict(params: dict) -> bytes:
    """Params (name -> numpy array or NDArray) as ``.npz`` bytes, no pickle (what
    :meth:`GraphExecutor.load_params` and ``numpy.load`` read).

    Written member by member rather than with ``numpy.savez``, whose keyword
    arguments cannot hold a param named ``file``.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name, value in params.items():
            arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
            if arr.dtype.hasobject:
                raise TeccError(f"save_param_dict: param {name!r} holds Python objects ({arr.dtype}); params are "
                                "numeric arrays")
            if dtypes.is_narrow(arr.dtype.name):  # ml_dtypes': .npy has no such type (it reads back as void)
                arr = dtypes.as_storage(arr, arr.dtype.name)
            with z.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(arr, order="C"), allow_pickle=False)
    return buf.getvalue()


def load_param_dict(data) -> dict:
    """The params in ``.npz`` bytes (see :func:`save_param_dict`), as numpy arrays."""
    try:
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise TeccError(f"load_params: the bytes are not a .npz of params ({err}); write them with "
                        "tecc.runtime.graph_executor.save_param_dict") from None


# -------------------------------------------------------------------------------------------
# the executor
# -------------------------------------------------------------------------------------------
class GraphExecutor:
    """Runs a graph JSON's kernels on buffers allocated once.

    Parameters
    ----------
    graph_json : str or dict
        The graph (see the module documentation).
    lib : runtime.Module
        The kernel module: a function per ``func_name`` of the graph.
    device : Device, optional
        Where the buffers live and the kernels run: ``cpu(0)`` for a CPU module,
        ``cuda(0)`` for a CUDA one (a GPU, or the CPU emulation without one);
        defaults to the module's device.
    params : dict, optional
        Name -> numpy array (or NDArray): the values of the arg nodes that are
        params, copied in once.

    Raises
    ------
    GraphJSONError
        If the graph JSON is malformed, names a function the module lacks, or its
        entries do not fit a kernel's signature (the message names the node).
    RuntimeArgError
        If a param has the wrong shape or dtype.

    Notes
    -----
    Inputs are indexed user inputs first, then params, each in ``arg_nodes`` order;
    :meth:`get_num_inputs` counts the user inputs.  :meth:`get_output` returns a
    view of the executor's own buffer (the next :meth:`run` overwrites it), as TVM
    does; pass ``out=`` or call ``.numpy()`` to keep a copy.
    """

    #: the functions ``executor[name]`` gives (TVM's graph executor module)
    FUNCTIONS = ("set_input", "run", "get_output", "get_input", "get_num_outputs", "get_num_inputs",
                 "get_input_index", "get_input_info", "load_params", "capture_cuda_graph", "run_cuda_graph")

    def __init__(self, graph_json, lib, device: Device = None, params: dict = None):
        params = dict(params or {})
        self.lib = lib
        self.spec = spec = GraphSpec(graph_json, params)
        self.device = self._pick_device(lib, device)
        self._check_functions()
        # storage: one buffer per storage id, every entry a view of its buffer
        self._storage = {sid: empty((max(nbytes, 1),), "uint8", self.device)
                         for sid, nbytes in sorted(spec.storage_bytes().items())}
        self.entries = [self._view(eid) for eid in range(spec.num_entries)]
        # the user inputs run() refuses to go without: an input no kernel reads may stay unset
        self._unset = set(spec.input_names[:spec.num_user_inputs]) - spec.unread_inputs()
        # the random counter counts runs until the user sets it (then it stays as set)
        self._random_runs = 0 if RANDOM_COUNTER in self._unset else None
        self._unset.discard(RANDOM_COUNTER)
        for name, value in params.items():
            self._set(name, value, "params")
        self._calls = [self._bind(node) for node in spec.kernel_nodes()]
        self._cuda_graph = None  # (stream, graph) once captured

    # construction -----------------------------------------------------------------------------
    @staticmethod
    def _pick_device(lib, device) -> Device:
        want = getattr(lib, "DEVICE_TYPE", CPU)
        if device is None:
            return cpu(0) if want == CPU else cuda(0)
        if isinstance(device, (list, tuple)):
            if len(device) != 1:
                raise TeccError(f"GraphExecutor: got {len(device)} devices; tecc runs a model on one device")
            device = device[0]
        if not isinstance(device, Device):
            raise TeccError(f"GraphExecutor: the device must be a tecc.Device such as tecc.cpu(0) or "
                            f"tecc.cuda(0), got {type(device).__name__}")
        if device.device_type != want:
            kind = getattr(lib, "DEVICE_NAME", "cpu")
            built_for = getattr(lib, "target", "?")
            other = "cuda" if device.device_type == CUDA else "llvm"
            raise TeccError(f"GraphExecutor: the kernels were built for {kind} (target {built_for!r}) but the device "
                            f"is {device}; create the executor with tecc.{kind}(0), or build the model for target "
                            f"{other}")
        if device.device_type == CUDA and device.device_id != 0 and not device.exist:
            raise TeccError(f"GraphExecutor: {device} is not available (no such CUDA GPU); use tecc.cuda(0)")
        return device

    def _check_functions(self) -> None:
        names = getattr(self.lib, "function_names", None)
        for node in self.spec.kernel_nodes():
            known = node.func_name in names if names is not None else self._has_function(node.func_name)
            if not known:
                listed = ", ".join(map(repr, names)) if names is not None else "?"
                raise GraphJSONError(f"graph JSON: {node.where()} calls {node.func_name!r}, which the kernel "
                                     f"module does not have (its functions: {listed}); build the graph and its "
                                     "kernels together")

    def _has_function(self, name: str) -> bool:
        try:
            self.lib.get_function(name)
        except FunctionNotFoundError:
            return False
        return True

    def _view(self, eid: int) -> NDArray:
        spec = self.spec
        base = self._storage[spec.storage_ids[eid]]._data
        np_dtype = dtypes.storage(spec.dtypes[eid])
        start = spec.storage_offsets[eid]
        data = base[start:start + spec.nbytes(eid)].view(np_dtype).reshape(spec.shapes[eid])
        return NDArray(data, spec.dtypes[eid], self.device)

    def _flat(self, arr: NDArray) -> NDArray:
        return NDArray(arr._data.reshape((arr.size,)), arr.dtype, arr.device)

    def _bind(self, node: _Node):
        args = [self.entries[e] for e in node.inputs + node.outputs]
        if node.flatten:
            args = [self._flat(a) for a in args]
        return _bound_call(self.lib, node.func_name, args, node.where())

    # inputs -----------------------------------------------------------------------------------
    def _input_name(self, key) -> str:
        names = self.spec.input_names
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(names):
                raise RuntimeArgError(f"input index {key} is out of range: the model has {len(names)} inputs "
                                      f"(user inputs then params): {names}")
            return names[int(key)]
        if isinstance(key, str):
            if key not in self.spec.input_entry:
                user = names[:self.spec.num_user_inputs]
                raise RuntimeArgError(f"the model has no input {key!r}; its inputs are {user}"
                                      + (f" (and {len(names) - len(user)} params)" if len(names) > len(user) else ""))
            return key
        raise RuntimeArgError(f"an input is named by a str or an int index, got {type(key).__name__}")

    def _set(self, key, value, who: str = "set_input") -> None:
        name = self._input_name(key)
        dst = self.entries[self.spec.input_entry[name]]
        _copy_into(dst, value, f"{who}: input {name!r}")
        self._unset.discard(name)
        if name == RANDOM_COUNTER:
            self._random_runs = None

    def _count_run(self) -> None:
        """Set the random counter to the number of runs so far (when the model draws
        random numbers and the user has not set the counter)."""
        if self._random_runs is not None:
            dst = self.entries[self.spec.input_entry[RANDOM_COUNTER]]
            _copy_into(dst, np.array(self._random_runs, "uint64"), f"run: input {RANDOM_COUNTER!r}")
            self._random_runs += 1

    def set_input(self, key=None, value=None, **params) -> None:
        """Copy values into inputs (or params) of the model.

        Parameters
        ----------
        key : str or int, optional
            An input's name or index.
        value : array-like
            Its value: an NDArray, a numpy (or, on a GPU, cupy) array of the
            input's shape and dtype, or a list of numbers.
        **params
            More inputs by name.

        Raises
        ------
        RuntimeArgError
            For an unknown name (the message lists the inputs) or a value of the
            wrong shape or dtype (the message gives both).
        """
        if key is not None:
            if value is None:
                raise RuntimeArgError(f"set_input({key!r}): no value given; call set_input(name, array)")
            self._set(key, value)
        for name, v in params.items():
            self._set(name, v)

    def get_input(self, key, out=None) -> NDArray:
        """The input (or param) ``key`` (a name or an index): a view of its buffer, or
        a copy in ``out`` when given."""
        arr = self.entries[self.spec.input_entry[self._input_name(key)]]
        return self._copy_out(arr, out, f"get_input({key!r})") if out is not None else arr

    def get_input_index(self, name: str) -> int:
        """The index of input ``name``, or -1 if the model has no such input."""
        try:
            return self.spec.input_names.index(name)
        except ValueError:
            return -1

    def get_num_inputs(self) -> int:
        """The number of user inputs (params not counted)."""
        return self.spec.num_user_inputs

    def get_input_info(self):
        """``(shape_dict, dtype_dict)``: name -> shape tuple and name -> dtype of the
        user inputs (params left out), as TVM's ``get_input_info``."""
        info = self.spec.input_info()
        return ({d["name"]: tuple(d["shape"]) for d in info}, {d["name"]: d["dtype"] for d in info})

    def load_params(self, params_bytes) -> None:
        """Set params from ``.npz`` bytes (:func:`save_param_dict`)."""
        for name, value in load_param_dict(params_bytes).items():
            self._set(name, value, "load_params")

    # running ----------------------------------------------------------------------------------
    def run(self, **inputs) -> None:
        """Run the model: set ``inputs`` (by name) if given, then call every kernel.

        Raises
        ------
        RuntimeArgError
            If a user input was never set.
        """
        if inputs:
            self.set_input(**inputs)
        self._check_inputs_set("run")
        self._count_run()
        for call in self._calls:
            call()

    def _check_inputs_set(self, who: str) -> None:
        if self._unset:
            missing = [n for n in self.spec.input_names if n in self._unset]
            raise RuntimeArgError(f"{who}: input(s) {missing} were never set; call set_input({missing[0]!r}, "
                                  "array) or run(name=array) first")

    # CUDA graphs ------------------------------------------------------------------------------
    def capture_cuda_graph(self) -> None:
        """Record every kernel call of :meth:`run` into one CUDA graph, so that
        :meth:`run_cuda_graph` replays the model with one launch from the host (TVM's
        CUDA graph executor).  The graph reads the executor's buffers, which never
        move: inputs set later (:meth:`set_input` copies into them) are seen by every
        replay.  The model runs once first (loading its kernels).

        Raises
        ------
        TeccError
            Without a GPU (the CPU and the emulator run kernels from the host), or
            when a kernel call could not be captured.
        RuntimeArgError
            If a user input was never set.
        """
        if not self._on_gpu():
            why = ("there is no GPU here, and the CPU emulation runs each kernel from the host"
                   if self.device.device_type == CUDA else f"this executor runs on {self.device}")
            raise TeccError(f"capture_cuda_graph: CUDA graphs need a CUDA GPU ({why}); use run()")
        import cupy  # noqa: PLC0415

        self.run()  # loads every kernel (not capturable) and surfaces a missing input
        cupy.cuda.get_current_stream().synchronize()
        stream = cupy.cuda.Stream(non_blocking=True)  # the legacy default stream cannot be captured
        try:
            with stream:
                stream.begin_capture()
                try:
                    for call in self._calls:
                        call()
                finally:
                    graph = stream.end_capture()
            graph.upload(stream)
            stream.synchronize()
        except Exception as err:  # noqa: BLE001 - say what failed, keep run() usable
            self._cuda_graph = None
            raise TeccError(f"capture_cuda_graph: the model's kernel calls could not be captured into a CUDA "
                            f"graph ({type(err).__name__}: {err}); run() still works") from err
        self._cuda_graph = (stream, graph)

    def run_cuda_graph(self) -> None:
        """Replay the captured model (:meth:`capture_cuda_graph`) on cupy's current
        stream, after the work queued there (:meth:`set_input`'s copies) and before
        what comes next (:meth:`get_output`)."""
        if self._cuda_graph is None:
            raise TeccError("run_cuda_graph: no CUDA graph was captured; call capture_cuda_graph() first")
        self._check_inputs_set("run_cuda_graph")
        self._count_run()  # a copy into the counter's buffer, which the graph reads
        import cupy  # noqa: PLC0415

        self._cuda_graph[1].launch(cupy.cuda.get_current_stream())

    # outputs ----------------------------------------------------------------------------------
    def get_num_outputs(self) -> int:
        """The number of model outputs."""
        return len(self.spec.visible)

    def get_output(self, index: int, out=None):
        """Output ``index``: a view of the executor's buffer (valid until the next
        :meth:`run`), or, with ``out`` (an NDArray or numpy array of its shape and
        dtype), a copy into ``out``, which is returned."""
        spec = self.spec
        n = len(spec.visible)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n:
            raise RuntimeArgError(f"get_output({index!r}): the model has {n} output(s), indices 0..{n - 1}")
        head = spec.visible[int(index)]
        arr = self.entries[spec.heads[head]]
        if head in spec.output_rows:  # the rows the model counted this run
            arr = arr.leading_rows(int(self.entries[spec.heads[spec.output_rows[head]]].numpy().reshape(-1)[0]))
        return self._copy_out(arr, out, f"get_output({index})") if out is not None else arr

    @staticmethod
    def _copy_out(arr: NDArray, out, what: str):
        if isinstance(out, NDArray):
            _copy_into(out, arr, f"{what}: out")
            return out
        if isinstance(out, np.ndarray):
            host = arr.bits()
            # a type numpy lacks: ml_dtypes' array of it, or its storage
            target = dtypes.as_storage(out, arr.dtype) if dtypes.is_narrow(arr.dtype) else out  # typed, or bits
            if target is None or out.shape != host.shape or target.dtype != host.dtype:
                raise RuntimeArgError(f"{what}: out must have shape {arr.shape} and dtype {arr.dtype}, got shape "
                                      f"{out.shape} and dtype {out.dtype}")
            np.copyto(target, host)
            return out
        raise RuntimeArgError(f"{what}: out must be a tecc.nd.NDArray or a numpy array, got {type(out).__name__}")

    # timing -----------------------------------------------------------------------------------
    def _on_gpu(self) -> bool:
        return self.device.device_type == CUDA and self.device.exist

    def time_evaluator(self, func_name: str = "run", dev: Device = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, **_unused):
        """A function timing ``func_name`` (``"run"``), TVM's ``time_evaluator``:
        ``evaluator() -> ProfileResult`` (seconds per run); one warm-up run first.

        On a GPU the time comes from CUDA events around the kernels, elsewhere from
        the wall clock.
        """
        if func_name != "run":
            raise FunctionNotFoundError(f"time_evaluator({func_name!r}): the graph executor times 'run' (or, with "
                                        "benchmark(end_to_end=True), inputs in and outputs out)")
        self._check_timing(dev, number, repeat)

        def evaluator() -> ProfileResult:
            self.run()  # warm-up; surfaces a missing input or a kernel error once
            runner = timing.cuda_events(self.run) if self._on_gpu() else timing.wall_clock(self.run)
            return ProfileResult(timing.sample(runner, number, repeat, min_repeat_ms or 0))

        return evaluator

    def _check_timing(self, dev, number, repeat) -> None:
        if dev is not None and (not isinstance(dev, Device) or dev.device_type != self.device.device_type):
            raise TeccError(f"benchmark: this executor runs on {self.device}, not on {dev!r}")
        if number < 1 or repeat < 1:
            raise TeccError(f"benchmark needs number >= 1 and repeat >= 1, got number={number}, repeat={repeat}")

    def benchmark(self, device: Device = None, func_name: str = "run", repeat: int = 5, number: int = 5,
                  min_repeat_ms=None, end_to_end: bool = False, **kwargs) -> ProfileResult:
        """Time the model (TVM's ``GraphModule.benchmark``).

        Parameters
        ----------
        device : Device, optional
            The executor's device (checked when given).
        func_name : str
            ``"run"``.
        repeat, number : int
            ``repeat`` samples, each the mean of ``number`` runs.
        min_repeat_ms : float, optional
            Grow ``number`` until one sample lasts at least this long.
        end_to_end : bool
            Include copying the inputs in (``kwargs``, or the inputs as they are set
            now) and every output out to host memory (wall clock); otherwise only
            the kernels are timed (CUDA events on a GPU).
        **kwargs
            Inputs by name, set before timing.

        Returns
        -------
        ProfileResult
            ``mean``, ``median``, ``std``, ``min``, ``max`` and ``results``, in seconds.
        """
        if not end_to_end:
            if kwargs:
                self.set_input(**kwargs)
            return self.time_evaluator(func_name, device, number, repeat, min_repeat_ms)()
        self._check_timing(device, number, repeat)
        host_inputs = {name: (v.numpy() if isinstance(v, NDArray) else np.asarray(v)) for name, v in kwargs.items()}
        if not host_inputs:
            self.run()  # every input must be set to be copied in
            host_inputs = {n: self.get_input(n).numpy() for n in self.spec.input_names[:self.spec.num_user_inputs]}

        def end_to_end_run():
            self.set_input(**host_inputs)
            self.run()
            for k in range(len(self.spec.heads)):
                self.entries[self.spec.heads[k]].numpy()

        end_to_end_run()  # warm-up
        return ProfileResult(timing.sample(timing.wall_clock(end_to_end_run), number, repeat, min_repeat_ms or 0))

    # per-kernel profile -----------------------------------------------------------------------
    def profile(self, repeat: int = 5, number: int = 1) -> "GraphProfile":
        """Time every kernel call of the model separately (TVM's debug executor).

        Each of ``repeat`` rounds runs the whole graph ``number`` times, in graph
        order, timing each kernel call on its own, so every kernel sees the caches
        a real :meth:`run` leaves it; a round's time of a kernel is its mean over
        the ``number`` runs.  On a GPU each call is timed with CUDA events (one
        synchronization per call), elsewhere with the wall clock.  One untimed run
        comes first.

        Parameters
        ----------
        repeat : int
            Rounds (samples per kernel).
        number : int
            Runs of the graph per round.

        Returns
        -------
        GraphProfile
            One row per kernel call (node index, node name, function name, output
            shape, samples in seconds), with medians, shares and a printed table.

        Raises
        ------
        TeccError
            If ``repeat`` or ``number`` is below 1.
        RuntimeArgError
            If a user input was never set.
        """
        if isinstance(repeat, bool) or isinstance(number, bool) or int(repeat) < 1 or int(number) < 1:
            raise TeccError(f"profile needs repeat >= 1 and number >= 1, got repeat={repeat!r}, number={number!r}")
        repeat, number = int(repeat), int(number)
        self.run()  # warm-up; surfaces a missing input once
        nodes = self.spec.kernel_nodes()
        runners = [timing.cuda_events(call) if self._on_gpu() else timing.wall_clock(call) for call in self._calls]
        samples = [[] for _ in nodes]
        for _ in range(repeat):
            totals = [0.0] * len(nodes)
            for _ in range(number):
                for k, run_one in enumerate(runners):
                    totals[k] += run_one(1)
            for k, total in enumerate(totals):
                samples[k].append(total / number)
        rows = [NodeTime(node.index, node.name, node.func_name, self.spec.shapes[node.outputs[0]],
                         self.spec.dtypes[node.outputs[0]], tuple(samples[k]))
                for k, node in enumerate(nodes)]
        return GraphProfile(rows)

    # TVM's module surface -------------------------------------------------------------------
    def __getitem__(self, name: str):
        if name not in self.FUNCTIONS:
            raise FunctionNotFoundError(f"the graph executor has no function {name!r}; it has "
                                        f"{', '.join(self.FUNCTIONS)}")
        return getattr(self, name)

    def get_function(self, name: str):
        """``executor[name]``."""
        return self[name]

    @property
    def storage_nbytes(self) -> int:
        """The bytes of every buffer this executor allocated (inputs and params included)."""
        return sum(self.spec.storage_bytes().values())

    @property
    def num_storages(self) -> int:
        return len(self._storage)

    def __repr__(self) -> str:
        kernels = len(self._calls)
        return (f"<tecc.runtime.GraphExecutor {self.get_num_inputs()} input(s), {kernels} kernel call(s), "
                f"{self.get_num_outputs()} output(s) on {self.device}, {self.num_storages} buffers>")


# -------------------------------------------------------------------------------------------
# the per-kernel profile
# -------------------------------------------------------------------------------------------
class NodeTime(ProfileResult):
    """The time of one kernel call of a graph (a row of :class:`GraphProfile`).

    Attributes
    ----------
    index : int
        The node's index in the graph JSON.
    name, func_name : str
        The node's name and the kernel function it calls.
    shape : tuple of int
        The shape of its (first) output.
    dtype : str
        The dtype of its (first) output.
    results : tuple of float
        Seconds per call, one sample per round.
    """

    def __init__(self, index, name, func_name, shape, dtype, results):
        super().__init__(results)  # mean, median, min... as every timing of the runtime
        self.index = index
        self.name = name
        self.func_name = func_name
        self.shape = tuple(shape)
        self.dtype = dtype

    def __repr__(self) -> str:
        return (f"NodeTime(node {self.index} {self.name!r}, {self.func_name!r}, {list(self.shape)}, "
                f"median {self.median * 1e3:.4f} ms)")


class GraphProfile:
    """Per-kernel times of one model (what :meth:`GraphExecutor.profile` returns).

    ``rows`` holds one :class:`NodeTime` per kernel call, in graph order;
    :attr:`total` is the sum of their medians, a row's :meth:`share` its median's
    part of it.  :meth:`by_function` sums the calls of each kernel function;
    :meth:`table` prints the rows, the costliest first; :meth:`as_dicts` gives
    plain data for JSON.
    """

    def __init__(self, rows):
        self.rows = list(rows)

    @property
    def total(self) -> float:
        """Seconds: the sum of every kernel call's median."""
        return float(sum(r.median for r in self.rows))

    def share(self, row: NodeTime) -> float:
        total = self.total
        return row.median / total if total > 0 else 0.0

    def by_function(self) -> list:
        """``[(func_name, calls, seconds)]``: the medians of each kernel function's
        calls summed, the costliest first."""
        sums = {}
        for r in self.rows:
            calls, seconds = sums.get(r.func_name, (0, 0.0))
            sums[r.func_name] = (calls + 1, seconds + r.median)
        return sorted(((f, c, t) for f, (c, t) in sums.items()), key=lambda x: -x[2])

    def as_dicts(self) -> list:
        """One dict per kernel call: ``index``, ``name``, ``func_name``, ``shape``,
        ``dtype``, ``median_s``, ``share``, ``results_s``."""
        return [{"index": r.index, "name": r.name, "func_name": r.func_name, "shape": list(r.shape),
                 "dtype": r.dtype, "median_s": r.median, "share": self.share(r), "results_s": list(r.results)}
                for r in self.rows]

    def table(self, limit: int = None) -> str:
        """The rows as text, the costliest first (``limit`` rows at most)."""
        rows = sorted(self.rows, key=lambda r: -r.median)[:limit]
        width = max([len(r.func_name) for r in rows] + [8])
        lines = [f"{'node':>5}  {'function':<{width}}  {'output':<20}{'ms':>10}{'share':>8}"]
        for r in rows:
            lines.append(f"{r.index:>5}  {r.func_name:<{width}}  {str(list(r.shape)):<20}{r.median * 1e3:>10.3f}"
                         f"{self.share(r):>8.1%}")
        lines.append(f"{'':>5}  {'total':<{width}}  {'':<20}{self.total * 1e3:>10.3f}{'':>8}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<tecc.runtime.GraphProfile {len(self.rows)} kernel call(s), total {self.total * 1e3:.3f} ms>"


# -------------------------------------------------------------------------------------------
# the factory module
# -------------------------------------------------------------------------------------------
class GraphExecutorFactoryModule:
    """A built model: graph JSON, kernel module and params (what ``relay.build`` and
    ``tecc.graph.build`` return).

    Parameters
    ----------
    graph_json : str or dict
        The graph JSON.
    lib : runtime.Module
        The kernel module.
    params : dict
        Name -> numpy array (or NDArray): the params the graph reads.
    module_name : str
        The name that makes executors: ``factory[module_name](dev)``.
    target : str
        The target the kernels were built for (recorded in the artifact).

    Examples
    --------
    >>> factory = relay.build(mod, target="llvm", params=params)
    >>> gmod = graph_executor.GraphModule(factory["default"](tecc.cpu(0)))
    >>> factory.export_library("model.tar")
    >>> again = tecc.runtime.load_module("model.tar")   # a GraphExecutorFactoryModule
    """

    def __init__(self, graph_json, lib, params: dict = None, module_name: str = "default", target: str = "llvm"):
        graph = _as_graph_dict(graph_json)
        self.graph_json = graph_json if isinstance(graph_json, str) else json.dumps(graph)
        self.lib = lib
        self.params = {}
        self.module_name = str(module_name)
        self.target = str(target)
        self.spec = GraphSpec(graph, (params or {}).keys())
        for name, value in (params or {}).items():
            arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
            self.params[str(name)] = np.asarray(arr, order="C")
        self.iter_cnt = 0

    def __getitem__(self, name: str):
        if name != self.module_name:
            raise FunctionNotFoundError(f"this model's executor is made by factory[{self.module_name!r}](dev), "
                                        f"not factory[{name!r}]")
        return self.create

    def create(self, device: Device = None) -> GraphExecutor:
        """A new :class:`GraphExecutor` of this model on ``device`` (buffers of its own,
        params loaded)."""
        return GraphExecutor(self.graph_json, self.lib, device, self.params)

    def get_graph_json(self) -> str:
        return self.graph_json

    get_executor_config = get_graph_json

    def get_lib(self):
        return self.lib

    def get_params(self) -> dict:
        """Name -> :class:`NDArray` (on the CPU) of every param."""
        out = {}
        for name, value in self.params.items():
            dtype = self.spec.dtypes[self.spec.input_entry[name]]
            out[name] = NDArray(value.copy(), dtype, cpu(0))
        return out

    def export_library(self, file_name, *_unused_args, **_unused_kwargs) -> None:
        """Write the model to ONE file (graph, kernels, params, manifest):
        :func:`tecc.runtime.load_module` reads it back with no compiler."""
        from .artifact import write_artifact

        write_artifact(os.fspath(file_name), self)

    def __iter__(self):
        # the old ``graph_json, lib, params = relay.build(...)`` unpacking
        self.iter_cnt = 0
        return self

    def __next__(self):
        items = (self.graph_json, self.lib, self.params)
        if self.iter_cnt >= len(items):
            raise StopIteration
        self.iter_cnt += 1
        return items[self.iter_cnt - 1]

    def __repr__(self) -> str:
        kernels = len(self.spec.kernel_nodes())
        return (f"<tecc.runtime.GraphExecutorFactoryModule {self.module_name!r} target={self.target!r}: "
                f"{kernels} kernel call(s), {len(self.params)} param(s)>")


def create(graph_json_str, libmod, device) -> GraphExecutor:
    """A :class:`GraphExecutor` of ``graph_json_str`` over ``libmod`` on ``device``
    (params are set afterwards with ``set_input`` or ``load_params``)."""
    return GraphExecutor(graph_json_str, libmod, device)


__all__ = ["GraphExecutor", "GraphExecutorFactoryModule", "GraphJSONError", "GraphProfile", "GraphSpec", "NodeTime",
           "create", "load_param_dict", "save_param_dict"]
