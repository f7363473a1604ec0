"""Building a model: from a graph :class:`~tecc.graph.ir.Module` to kernels and a
graph executor (TVM's ``relay.build``).

:func:`build` does, in order:

1. binds ``params`` (name -> array) as constants of ``main``'s parameters of the same
   names, so the passes can fold them;
2. refuses an input with a symbolic dimension (naming it);
3. runs :data:`~tecc.graph.transform.passes.GRAPH_PIPELINE` under the current
   :class:`~tecc.transform.PassContext` (its opt_level gates each pass; the last,
   ``fuse_ops``, groups the operators into primitive functions);
4. lowers each primitive function to TE -- a placeholder per parameter (named after
   it), each operator's ``lower`` on the TE tensors of its operands -- and schedules
   it with ``topi.schedule(outs, target)`` inside ``with Target(target)``, under the
   current autotvm dispatch context (so ``with autotvm.apply_history_best(log):``
   gives tuned configs).  Identical groups (same operators, attributes, shapes)
   are lowered once and called from every node that needs them;
5. compiles every kernel into ONE module with one ``tecc.build`` call;
6. writes the graph JSON (:mod:`tecc.runtime.graph_executor`): inputs, then params
   (``p0``, ``p1``... for the constants ``main`` still passes to kernels), kernels in
   topological order, heads; :func:`tecc.graph.memory_plan.plan_storage` chooses
   the storage ids.

It returns a :class:`~tecc.runtime.graph_executor.GraphExecutorFactoryModule`.
A reshape-only group is a kernel (a copy) like any other.

:func:`extract_tasks` gives the tunable tasks of a model with how often each occurs;
:func:`compile_graph` is steps 4 to 6 alone (constant folding uses it).
"""
from __future__ import annotations

import contextlib
import json
import re
from collections import OrderedDict

import numpy as np

from ..errors import TeccError
from ..runtime.graph_executor import NOP
from .ir import (
    Call, Constant, Function, GraphError, Module, TensorType, Tuple, TupleGetItem, TupleType, Var, post_order_visit,
)
from .op import RESHAPES, Op, concat_in_place, get_op
from .transform.fuse_ops import _operands, _scope_nodes
from .transform.infer_type import infer_type

#: longest kernel name before it is cut (a hash-free suffix keeps it unique)
MAX_KERNEL_NAME = 80


# ---------------------------------------------------------------------------------------
# preparing the module
# ---------------------------------------------------------------------------------------
def _as_module(mod) -> Module:
    if isinstance(mod, Module):
        return mod
    if isinstance(mod, Function):
        return Module.from_expr(mod)
    raise GraphError(f"build takes a tecc.graph.Module (or a graph Function), got {type(mod).__name__}")


def bind_params(mod: Module, params) -> Module:
    """``mod`` with each parameter of ``main`` named in ``params`` replaced by a
    constant of that value (TVM's ``bind_params_by_name``).

    Raises
    ------
    GraphError
        If a name is not a parameter of main, or the array's shape or dtype differs
        from the parameter's type.
    """
    if not params:
        return mod
    main = mod["main"]
    by_name = {p.name_hint: p for p in main.params}
    binds = {}
    for name, value in params.items():
        if name not in by_name:
            raise GraphError(f"build: params has {name!r}, which is not an input of main (inputs: "
                             f"{sorted(by_name)}); remove it or rename it to the input it sets")
        arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        var = by_name[name]
        ty = var.type_annotation
        if isinstance(ty, TensorType) and (tuple(arr.shape) != ty.shape or str(arr.dtype) != ty.dtype):
            raise GraphError(f"build: param {name!r} is {arr.dtype}{list(arr.shape)} but main's input %{name} is "
                             f"{ty}; give an array of that shape and dtype")
        binds[var] = Constant(arr)
    body = _substitute(main.body, binds)
    new_main = Function([p for p in main.params if p not in binds], body, main.ret_type, main.attrs, main.span)
    return mod.with_function("main", new_main)


def _substitute(body, binds: dict):
    """``body`` with the Vars of ``binds`` replaced."""
    from .transform.fuse_ops import _rebuild  # noqa: PLC0415

    new = {}
    for node in _scope_nodes(body):
        if node in binds:
            new[node] = binds[node]
        else:
            new[node] = _rebuild(node, [new[a] for a in _operands(node)])
    return new[body]


def _check_static(mod: Module) -> None:
    for p in mod["main"].params:
        ty = p.type_annotation
        if ty is None:
            raise GraphError(f"build: input %{p.name_hint} has no type; give it a shape and dtype "
                             "(Var(name, TensorType(shape, dtype)), or the importer's shape dict)")
        if isinstance(ty, TupleType):
            raise GraphError(f"build: input %{p.name_hint} is a tuple ({ty}); give each tensor its own input")
        if not ty.is_static:
            symbolic = [d for d in ty.shape if not isinstance(d, int)]
            raise GraphError(f"build: input %{p.name_hint} has symbolic dimension(s) {symbolic} in its shape "
                             f"{ty.shape}; give it a static shape (e.g. the shape dict of from_onnx: "
                             f"{{'{p.name_hint}': (1, ...)}})")


# ---------------------------------------------------------------------------------------
# lowering one fused function to TE
# ---------------------------------------------------------------------------------------
def _describe(node) -> str:
    if isinstance(node, Call) and isinstance(node.op, Op):
        span = f" (node {node.span!r})" if node.span else ""
        return f"{node.op.name}{span}"
    return type(node).__name__


def _placeholders(param: Var):
    from .. import te  # noqa: PLC0415

    ty = param.checked_type
    if isinstance(ty, TupleType):
        return [te.placeholder(f.shape, dtype=f.dtype, name=f"{param.name_hint}_{k}") for k, f in enumerate(ty.fields)]
    return te.placeholder(ty.shape, dtype=ty.dtype, name=param.name_hint)


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(_flat(v))
        return out
    return [value]


def _check_lowered(node, value) -> None:
    """The TE result of ``node`` has the inferred shape(s) and dtype(s)."""
    from .. import te  # noqa: PLC0415

    ty = node.checked_type
    types = list(ty.fields) if isinstance(ty, TupleType) else [ty]
    got = _flat(value)
    if len(got) != len(types) or not all(isinstance(t, te.Tensor) for t in got):
        raise GraphError(f"{_describe(node)}: its lower() gave {len(got)} value(s) but its type is {ty}; the "
                         "operator definition's lower and infer disagree")
    for t, want in zip(got, types):
        shape = tuple(int(d.value) if hasattr(d, "value") else int(d) for d in t.shape)
        if shape != want.shape or str(t.dtype) != want.dtype:
            raise GraphError(f"{_describe(node)}: its lower() gave {t.dtype}{list(shape)} but its inferred type is "
                             f"{want}; the operator definition's lower and infer disagree")


def _scalar_tensor(value):
    """A 0-d tensor holding the expression ``value``."""
    from .. import te, topi  # noqa: PLC0415

    return te.compute((), lambda: value, name="scalar", tag=topi.tag.ELEMWISE)


def lower_function(fn: Function, target):
    """The TE of one primitive function: ``(schedule, argument tensors)`` (the
    placeholders of its parameters, flattened, then its outputs).  Called inside
    ``with Target(target)``."""
    from .. import te, tir, topi  # noqa: PLC0415

    infer_type(fn)
    env = {}
    inputs = []
    scalars = []  # the 0-d tensors of scalar constants
    for p in fn.params:
        env[p] = _placeholders(p)
        inputs.extend(_flat(env[p]))
    for node in _scope_nodes(fn.body):
        if node in env:
            continue
        if isinstance(node, Var):
            raise GraphError(f"a fused function reads %{node.name_hint}, which is not one of its parameters")
        if isinstance(node, Constant):
            if node.data.ndim != 0:
                raise GraphError(f"a fused function holds a constant of shape {node.data.shape}; only scalars are "
                                 "inlined in a kernel (run fuse_ops on the unfused graph)")
            # a 0-d tensor like any other operand, so that every operator's lowering takes it; inlined
            # below, after the schedule, so the kernel reads the constant itself
            env[node] = _scalar_tensor(tir.const(node.data.item(), str(node.data.dtype)))
            scalars.append(env[node])
        elif isinstance(node, Tuple):
            env[node] = [env[f] for f in node.fields]
        elif isinstance(node, TupleGetItem):
            env[node] = env[node.tuple_value][node.index]
        elif isinstance(node, Call) and isinstance(node.op, Op):
            args = [env[a] for a in node.args]
            try:
                value = node.op.lower(args, node.attrs, node.checked_type)
            except GraphError:
                raise
            except TeccError as err:
                raise GraphError(f"{_describe(node)}: lowering to TE failed: {err}") from err
            _check_lowered(node, value)
            env[node] = value
        else:
            raise GraphError(f"{_describe(node)}: a fused function may hold only operator calls, tuples and "
                             "scalar constants")
    outs = []
    for t in _flat(env[fn.body]):
        # an output that is an input, or listed twice, is copied into a buffer of its own
        if any(t is c for c in scalars):
            raise GraphError("a fused function returns a scalar constant; nothing to compute")
        if isinstance(t.op, te.PlaceholderOp) or any(t is o for o in outs):
            t = topi.identity(t)
        outs.append(t)
    s = topi.schedule(outs, target)
    for c in scalars:
        if c.op in s.stage_map:
            s[c].compute_inline()
    return s, inputs + outs


def _kernel_base_name(fn: Function) -> str:
    """``fused_`` and the group's operators in order; where injective producers
    fused into a product's operands (``Op.fuse_inputs``), the product and what
    follows it lead and the producers' names come after, once each
    (``fused_nn_batch_matmul_multiply_reshape_transpose``)."""
    ops = [n.op for n in _scope_nodes(fn.body) if isinstance(n, Call) and isinstance(n.op, Op)]
    first = next((k for k, op in enumerate(ops) if op.fuse_inputs), 0)
    prologue = []
    for op in ops[:first]:
        if op.name not in prologue:
            prologue.append(op.name)
    names = [op.name.replace(".", "_") for op in ops[first:]] + [n.replace(".", "_") for n in prologue]
    base = "fused_" + "_".join(names)
    base = re.sub(r"[^0-9A-Za-z_]", "_", base)
    return base[:MAX_KERNEL_NAME]


def _group_key(fn: Function) -> str:
    """Equal for groups with the same operators, attributes, shapes and dtypes (and
    scalar constants): they share one kernel."""
    from .printer import astext  # noqa: PLC0415

    return astext(fn, show_types=True)


# ---------------------------------------------------------------------------------------
# the graph JSON
# ---------------------------------------------------------------------------------------
class _GraphWriter:
    """Numbers nodes and entries, and records each kernel call."""

    def __init__(self):
        self.nodes = []
        self.row_ptr = [0]
        self.shapes = []
        self.dtypes = []
        self.arg_nodes = []

    def add_null(self, name: str, ty: TensorType) -> list:
        index = len(self.nodes)
        self.nodes.append({"op": "null", "name": name, "inputs": []})
        self.arg_nodes.append(index)
        self._entries([ty])
        return [[index, 0, 0]]

    def add_kernel(self, name, func_name, inputs, out_types, inplace, concat_contiguous=False,
                   reshape_only=False) -> list:
        index = len(self.nodes)
        attrs = {"func_name": func_name, "num_inputs": str(len(inputs)), "num_outputs": str(len(out_types)),
                 "flatten_data": "0", "inplace_input": str(inplace)}
        if concat_contiguous:
            attrs["concat_contiguous"] = "1"
        if reshape_only:
            attrs["reshape_only"] = "1"
        self.nodes.append({"op": "tvm_op", "name": name, "inputs": inputs, "attrs": attrs})
        self._entries(out_types)
        return [[index, k, 0] for k in range(len(out_types))]

    def _entries(self, types):
        for ty in types:
            self.shapes.append(list(ty.shape))
            self.dtypes.append(ty.dtype)
        self.row_ptr.append(self.row_ptr[-1] + len(types))

    def graph(self, heads) -> dict:
        from .memory_plan import plan_memory  # noqa: PLC0415

        graph = {
            "nodes": self.nodes, "arg_nodes": self.arg_nodes, "heads": heads, "node_row_ptr": self.row_ptr,
            "attrs": {"shape": ["list_shape", self.shapes], "dltype": ["list_str", self.dtypes]},
        }
        return plan_memory(graph).apply(graph)


def _out_types(ty) -> list:
    return list(ty.fields) if isinstance(ty, TupleType) else [ty]


def _inplace_input(fn: Function, arg_types) -> int:
    """The input whose buffer output 0 may take: the group is element-wise or
    broadcast only (every element read before it is written) and input k has the
    output's shape and dtype."""
    from .op import OpPattern  # noqa: PLC0415

    out = fn.body.checked_type
    if not isinstance(out, TensorType):
        return -1
    for node in _scope_nodes(fn.body):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.pattern > OpPattern.BROADCAST:
            return -1
        if isinstance(node, (Tuple, TupleGetItem)):
            return -1
    for k, ty in enumerate(arg_types):
        if ty == out:
            return k
    return -1


def _concat_contiguous(fn: Function) -> bool:
    """Whether the group is one concatenation of its parameters, in order, whose
    output is their bytes end to end (every axis before the concatenated one is 1):
    the memory planner may then write the inputs in place and call no kernel."""
    body = fn.body
    if not (isinstance(body, Call) and isinstance(body.op, Op) and body.op.name == "concatenate"
            and len(body.args) == 1 and isinstance(body.args[0], Tuple)):
        return False
    fields, out = body.args[0].fields, body.checked_type
    if list(fields) != list(fn.params) or not isinstance(out, TensorType):
        return False
    if not all(isinstance(p.checked_type, TensorType) and p.checked_type.dtype == out.dtype for p in fn.params):
        return False
    return concat_in_place(out.shape, int(body.attrs["axis"]))


def _reshape_only(fn: Function) -> bool:
    """Whether the group only reshapes its one parameter (a chain of
    :data:`RESHAPES`): its output is the input's bytes, so the memory planner may
    make it a view and call no kernel (TVM's reshape-only functions)."""
    if len(fn.params) != 1:
        return False
    node = fn.body
    while isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in RESHAPES and len(node.args) == 1:
        node = node.args[0]
    out, inp = fn.body.checked_type, fn.params[0].checked_type
    return (node is fn.params[0] and node is not fn.body and isinstance(out, TensorType)
            and isinstance(inp, TensorType) and out.dtype == inp.dtype)


def compile_graph(mod: Module, target):
    """Steps 4 to 6 of :func:`build` on an already fused module.

    Returns
    -------
    (dict, runtime.Module, dict)
        The graph JSON (as a dict), the kernel module (None when the graph calls
        no kernel: :func:`build` gives such a model copy kernels first), and the
        params (name -> numpy array) the graph reads.
    """
    from ..driver import build_module as driver  # noqa: PLC0415
    from ..runtime.graph_executor import calls_kernel  # noqa: PLC0415
    from ..target import Target  # noqa: PLC0415
    from ..tir.stmt import IRModule  # noqa: PLC0415
    from ..tir.transform.pipeline import LOWERED  # noqa: PLC0415

    tgt = Target.canon(target)
    main = mod["main"]
    infer_type(mod)
    writer = _GraphWriter()
    entries = {}
    for p in main.params:
        entries[p] = writer.add_null(p.name_hint, p.checked_type)
    params = OrderedDict()
    # constants still passed to kernels become params p0, p1...
    taken = {p.name_hint for p in main.params}
    for node in _scope_nodes(main.body):
        if isinstance(node, Constant) and node not in entries:
            name = f"p{len(params)}"
            while name in taken:
                name = "_" + name
            taken.add(name)
            params[name] = np.array(node.data, order="C")
            entries[node] = writer.add_null(name, node.tensor_type)

    kernels = {}        # group key -> func name
    lowered = []        # (func name, IRModule)
    used_names = set()
    kind = None
    for node in _scope_nodes(main.body):
        if node in entries:
            continue
        if isinstance(node, Var):
            raise GraphError(f"build: main reads %{node.name_hint}, which is not one of its inputs")
        if isinstance(node, Tuple):
            entries[node] = [e for f in node.fields for e in entries[f]]
            continue
        if isinstance(node, TupleGetItem):
            entries[node] = [entries[node.tuple_value][node.index]]
            continue
        if not (isinstance(node, Call) and isinstance(node.op, Function) and node.op.is_primitive):
            raise GraphError(f"build: {_describe(node)} in main is not inside a fused function; run fuse_ops "
                             "(do not disable it: every operator runs as a kernel of a fused group)")
        fn = node.op
        key = _group_key(fn)
        if key not in kernels:
            base = _kernel_base_name(fn)
            name, k = base, 1
            while name in used_names:
                name = f"{base}_{k}"
                k += 1
            used_names.add(name)
            with Target(tgt):
                s, args = lower_function(fn, tgt)
                irmod = driver.lower(s, args, name=name)
            kind = irmod.attrs.get(LOWERED)
            kernels[key] = name
            lowered.append(irmod)
        inputs = [e for a in node.args for e in entries[a]]
        arg_types = [a.checked_type for a in node.args]
        entries[node] = writer.add_kernel(kernels[key], kernels[key], inputs, _out_types(fn.body.checked_type),
                                          _inplace_input(fn, arg_types), _concat_contiguous(fn),
                                          _reshape_only(fn))
    heads = entries[main.body]
    graph = writer.graph(heads)
    names = main.attrs.get("output_names")
    if names is not None and len(names) == len(heads):
        graph["attrs"]["output_names"] = ["list_str", [str(n) for n in names]]
    rows = main.attrs.get("output_rows")
    if rows:  # outputs whose first rows are their value, and the heads counting them
        graph["attrs"]["output_rows"] = ["list_int", [int(v) for pair in rows for v in pair]]

    called = {n["attrs"]["func_name"] for n in graph["nodes"] if calls_kernel(n)}
    lowered = [irmod for irmod in lowered if called & set(irmod.functions)]  # not the no-op concatenations
    if lowered:
        funcs = {}
        for irmod in lowered:
            funcs.update(irmod.functions)
        lib = driver.build(IRModule(funcs, {LOWERED: kind}), target=tgt)
    else:
        lib = None
    return graph, lib, dict(params)


# ---------------------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------------------
def build(mod, target="llvm", params=None, mod_name="default"):
    """Compile a model into kernels and a graph executor factory (TVM's ``relay.build``).

    Parameters
    ----------
    mod : tecc.graph.Module or Function
        The model; ``main``'s parameters are its inputs and weights.
    target : str or Target
        ``"llvm"`` (the C backend) or ``"cuda"``.
    params : dict, optional
        Name -> numpy array: weights bound as constants before the passes.
    mod_name : str
        The factory's module name: ``factory[mod_name](dev)`` makes an executor.

    Returns
    -------
    tecc.runtime.graph_executor.GraphExecutorFactoryModule

    Raises
    ------
    GraphError
        For an input with a symbolic dimension (naming it), params that do not
        match main's inputs, or an operator that cannot be compiled (naming it).

    Examples
    --------
    >>> with tecc.transform.PassContext(opt_level=3):
    ...     factory = tecc.graph.build(mod, target="llvm", params=params)
    >>> gmod = tecc.contrib.graph_executor.GraphModule(factory["default"](tecc.cpu(0)))
    """
    from ..runtime.graph_executor import GraphExecutorFactoryModule  # noqa: PLC0415
    from ..target import Target  # noqa: PLC0415
    from .transform.passes import optimize  # noqa: PLC0415

    tgt = Target.canon(target)
    mod = _as_module(mod)
    if "main" not in mod:
        raise GraphError(f"build: the module has no 'main' function (it has {list(mod.functions)})")
    mod = bind_params(mod, params)
    infer_type(mod)
    _check_static(mod)
    with _reference_configs(tgt):
        with Target(tgt):  # target-dependent passes (AlterOpLayout) read it
            mod = optimize(mod)
        if not any(isinstance(node, Call) for node in _scope_nodes(mod["main"].body)):
            mod = _copy_outputs(mod)
        graph, lib, graph_params = compile_graph(mod, tgt)
    target_name = "cuda" if tgt.kind == "cuda" else "llvm"
    return GraphExecutorFactoryModule(json.dumps(graph), lib, graph_params, mod_name, target=target_name)


def _reference_configs(target):
    """The configs the templates get: tecc's reference records for ``target``
    (``autotvm.tophub``) when no dispatch context is in effect, as TVM's relay.build
    applied TopHub's; whatever the caller applied (``apply_history_best``) otherwise."""
    from ..tuner import tophub  # noqa: PLC0415
    from ..tuner.task.dispatcher import DispatchContext, FallbackContext  # noqa: PLC0415

    if isinstance(DispatchContext.current, FallbackContext):
        return tophub.context(target)
    return contextlib.nullcontext()


def _copy_outputs(mod: Module) -> Module:
    """``mod`` with every output of ``main`` copied by a kernel, for a model that
    computes nothing once optimized (its outputs are its inputs or constants: an
    identity, a reshape to the same shape, a slice of everything): its module then
    has kernels like any other, and exports, loads and runs the same way."""
    from .op import call  # noqa: PLC0415
    from ..tir.transform.pipeline import run_passes  # noqa: PLC0415
    from .transform.passes import FuseOps, InferType, graph_pass_options  # noqa: PLC0415

    def copied(expr):
        if isinstance(expr, Tuple):
            return Tuple([copied(f) for f in expr.fields])
        return call("copy", expr)

    main = mod["main"]
    new = Module({**mod.functions, "main": Function(main.params, copied(main.body), None, main.attrs)}, mod.attrs)
    return run_passes(new, [InferType(), FuseOps()], graph_pass_options())


def storage_report(factory) -> dict:
    """:func:`tecc.graph.memory_plan.storage_report` of a built model (peak
    intermediate bytes against the sum of all intermediates)."""
    from .memory_plan import storage_report as report  # noqa: PLC0415

    return report(json.loads(factory.get_graph_json()))


# ---------------------------------------------------------------------------------------
# running a graph plainly (constant folding)
# ---------------------------------------------------------------------------------------
def run_graph(graph: dict, lib, params: dict, inputs: dict = None) -> list:
    """Run a graph JSON's kernels on fresh numpy buffers (no storage sharing) and
    return the heads: the simple interpreter constant folding uses."""
    inputs = dict(inputs or {})
    row = graph["node_row_ptr"]
    shapes = graph["attrs"]["shape"][1]
    dtypes = graph["attrs"]["dltype"][1]
    values = [None] * row[-1]
    for i, node in enumerate(graph["nodes"]):
        if node["op"] == "null":
            name = node["name"]
            source = params if name in params else inputs
            if name not in source:
                raise GraphError(f"run_graph: no value for input {name!r}")
            values[row[i]] = np.array(source[name], order="C")
            continue
        ins = [values[row[n] + k] for n, k, _ in node["inputs"]]
        if node["attrs"]["func_name"] == NOP:
            # the storage plan's no-op (a reshape, a concatenation in place): its output is its
            # inputs' elements laid end to end, which its kernels wrote in place in a planned run
            flat = [np.ascontiguousarray(x).reshape(-1) for x in ins]
            values[row[i]] = (flat[0] if len(flat) == 1 else np.concatenate(flat)).reshape(shapes[row[i]])
            continue
        outs = [np.empty(shapes[e], dtypes[e]) for e in range(row[i], row[i + 1])]
        lib[node["attrs"]["func_name"]](*ins, *outs)
        values[row[i]:row[i + 1]] = outs
    return [values[row[n] + k] for n, k, _ in graph["heads"]]


_CONSTANT_CACHE = {}


def evaluate_constants(values) -> list:
    """The numpy values of constant graph expressions (no free variables), computed
    by compiling them together for ``"llvm"`` and running them; the compiled graph
    is cached by structure."""
    from ..tir.transform.pipeline import PassContext  # noqa: PLC0415
    from .printer import astext  # noqa: PLC0415
    from .transform.fuse_ops import fuse_ops  # noqa: PLC0415

    body = values[0] if len(values) == 1 else Tuple(values)
    mod = Module.from_expr(Function([], body))
    # a fresh context, as TVM's FoldConstant uses: the user's instruments, lowering
    # passes and printing options are about the model, not about this evaluation
    with PassContext(opt_level=2):
        fused = fuse_ops(mod, fuse_opt_level=2)
        key = astext(fused["main"], show_types=True)
        cached = _CONSTANT_CACHE.get(key)
        if cached is None:
            graph, lib, _ = compile_graph(fused, "llvm")
            cached = _CONSTANT_CACHE[key] = (graph, lib)
    graph, lib = cached
    # the params of this instance: its constants, in the order compile_graph names them
    consts = [n for n in _scope_nodes(fused["main"].body) if isinstance(n, Constant)]
    names = [graph["nodes"][k]["name"] for k in graph["arg_nodes"]]
    params = dict(zip(names, (np.array(c.data, order="C") for c in consts)))
    if lib is None:
        heads = [params[graph["nodes"][n]["name"]] for n, _, _ in graph["heads"]]
    else:
        heads = run_graph(graph, lib, params)
    return [np.array(h) for h in heads]


# ---------------------------------------------------------------------------------------
# tuning tasks
# ---------------------------------------------------------------------------------------
def extract_tasks(mod, params=None, target="llvm", ops=None) -> list:
    """The tunable tasks of a model (TVM's ``autotvm.task.extract_from_program``).

    Every fused group is lowered (nothing is compiled) under a dispatch context
    that records each workload a tunable topi compute asks a config for.

    Parameters
    ----------
    mod : tecc.graph.Module or Function
    params : dict, optional
        As for :func:`build` (bound weights fold the way they will in the build).
    target : str or Target
    ops : list of str or Op, optional
        Only the kernels whose fused group holds one of these operators
        (``relay.op.get("nn.conv2d")`` or ``"nn.conv2d"``); all by default.

    Returns
    -------
    list of tecc.autotvm.task.Task
        One per distinct workload, in order of first occurrence; ``task.count`` is
        the number of kernel calls of the model that run it.
    """
    from ..target import Target  # noqa: PLC0415
    from ..tuner.task import DispatchContext, FallbackConfigEntity, FallbackContext, create  # noqa: PLC0415
    from .transform.passes import optimize  # noqa: PLC0415

    tgt = Target.canon(target)
    wanted = None if ops is None else _op_names(ops)
    mod = bind_params(_as_module(mod), params)
    infer_type(mod)
    _check_static(mod)
    with Target(tgt):
        mod = optimize(mod)

    class _Recorder(DispatchContext):
        """Notes each workload asked for and answers as the contexts outside would
        (tuned records shape some layouts), but with a fallback config of its own
        where none has one: the global fallback would say "no tuned config" now,
        during extraction, and stay silent at build time, when it matters."""

        def __init__(self):
            super().__init__()
            self.seen = []
            self.fallbacks = {}

        def query(self, target, workload):
            if workload is not None:
                self.seen.append(workload)
            ctx = self._old_ctx
            while ctx is not None and not isinstance(ctx, FallbackContext):
                cfg = ctx._query_inside(target, workload)
                if cfg is not None:
                    return cfg
                ctx = ctx._old_ctx
            return self.fallbacks.setdefault(repr(workload), FallbackConfigEntity())

    counts = OrderedDict()
    lowered = {}
    for node in _scope_nodes(mod["main"].body):
        if not (isinstance(node, Call) and isinstance(node.op, Function)):
            continue
        if wanted is not None and not wanted & _ops_in(node.op):
            continue
        key = _group_key(node.op)
        if key not in lowered:
            rec = _Recorder()
            with rec, Target(tgt):
                lower_function(node.op, tgt)
            # the compute and the schedule both ask: one workload per distinct query
            lowered[key] = list(OrderedDict.fromkeys(rec.seen))
        for wl in lowered[key]:
            counts[wl] = counts.get(wl, 0) + 1
    tasks = []
    for wl, n in counts.items():
        task = create(wl[0], wl[1:], tgt)
        task.count = n
        tasks.append(task)
    return tasks


def _op_names(ops) -> set:
    if isinstance(ops, (str, Op)):
        ops = [ops]
    names = set()
    for op in ops:
        if isinstance(op, Op):
            names.add(op.name)
        elif isinstance(op, str):
            names.add(get_op(op).name)  # an unknown name is an error that lists the operators
        else:
            raise GraphError(f"extract_tasks: ops= takes operators (relay.op.get('nn.conv2d')) or their names, "
                             f"got {op!r}")
    return names


def _ops_in(fn: Function) -> set:
    """Names of the operators a fused group calls (an altered operator by the name
    of the one it replaced too: ``nn.contrib_conv2d_NCHWc`` is an ``nn.conv2d``)."""
    from .transform.alter_op_layout import ALTERED_FROM  # noqa: PLC0415

    found = set()

    def note(node):
        if isinstance(node, Call) and isinstance(node.op, Op):
            found.add(node.op.name)
            found.add(ALTERED_FROM.get(node.op.name, node.op.name))

    post_order_visit(fn.body, note)
    return found


__all__ = ["bind_params", "build", "compile_graph", "evaluate_constants", "extract_tasks", "lower_function",
           "run_graph", "storage_report"]
