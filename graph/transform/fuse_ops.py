"""Operator fusion: which operators of a model run in one kernel.

The rules are those of the TVM paper, by each operator's :class:`~tecc.graph.op.OpPattern`:

* element-wise and broadcast operators fuse with each other, and into an injective
  or reduction consumer;
* an injective operator (reshape, transpose, concatenate) fuses into its consumer
  when every path to it is injective (a second phase, so that a convolution first
  takes everything it can);
* on GPU targets, a chain of injective and element-wise operators that does more
  than reshape also fuses into the matrix product that reads it (an operator
  registered with ``fuse_inputs``: dense, matmul, batch_matmul), whose CUDA
  schedule computes it inline while filling its shared-memory tiles (a last
  phase, once the injective groups are whole): the head split and merge of
  attention (reshape, transpose, reshape) cost no kernel of their own.  TVM's rules stop
  injective operators there; a kernel launch is what a small model pays for most
  on a GPU, and a tile load through a transposed index costs the product little.
  CPU schedules read their operands in the innermost loops, where an inlined
  transpose costs every iteration, so CPU builds keep TVM's rule (the encoder
  layer of ``benchmarks/models_cpu.py`` built with the GPU rules on the 2-core
  AVX-512 VM, 2026-11-28, 15 interleaved rounds: 12 kernels instead of 15, 0.402
  against 0.385 ms);
* an ``OUT_ELEMWISE_FUSABLE`` operator (conv2d, dense) takes the element-wise chain
  that follows it -- bias, batch-norm scale and shift, activation, residual add --
  when every path from it to the chain's end is element-wise or broadcast;
* ``OPAQUE`` operators (and model inputs, weights and non-scalar constants) fuse
  with nothing;
* a value used by several consumers ends its group, unless every path from it meets
  again inside one group: the group joins the value's *immediate post-dominator*
  (the first node every path from it to the model's output passes through) and
  takes in every node on those paths;
* a group holds at most ``max_depth`` operators.

Each group becomes a :class:`~tecc.graph.ir.Function` with ``attrs["Primitive"] == 1``
(parameters ``p0``, ``p1``... for the values it reads from outside), called from
``main``; the builder turns each into one kernel.  A group's only value used outside
it is its root (the node every other member post-dominates into).
"""
from __future__ import annotations

from ..ir import (
    Call, Constant, Function, GraphError, Module, TensorType, Tuple, TupleGetItem, Var, data_operands, post_order,
    typed_like,
)
from ..op import RESHAPES, Op, OpPattern, concat_in_place
from ..ops._util import target_keys
from .infer_type import infer_type

#: the default cap on the operators of one group (TVM's ``relay.FuseOps.max_depth``)
MAX_FUSED_OPS = 256

#: dtypes of a scalar constant that fuses into its consumer (inlined in the kernel)
_SIMPLE_SCALAR_DTYPES = ("int32", "int64", "float32", "float64", "bool")

ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, OUT_EWISE, TUPLE, OPAQUE = (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.TUPLE,
                                         OpPattern.OPAQUE)


# ---------------------------------------------------------------------------------------
# the forward graph: nodes in operand-first order, each with its consumers
# ---------------------------------------------------------------------------------------
class _ForwardGraph:
    """The nodes of one function body, operands first, with for each node its
    pattern, its consumers (``(consumer index, edge pattern)``) and whether it is
    used outside (the body's value)."""

    def __init__(self, body):
        self.nodes = _scope_nodes(body)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        count = len(self.nodes)
        self.pattern = [OPAQUE] * count
        self.outputs = [[] for _ in range(count)]
        self.extern = [False] * count
        self.extern[self.index[body]] = True
        for i, node in enumerate(self.nodes):
            self._add(i, node)

    def _link(self, producer, consumer_index, edge_pattern):
        self.outputs[self.index[producer]].append((consumer_index, OpPattern(edge_pattern)))

    def _add(self, i, node):
        if isinstance(node, Constant):
            self.pattern[i] = ELEMWISE if _is_scalar_constant(node) else OPAQUE
        elif isinstance(node, Var):
            self.pattern[i] = OPAQUE
        elif isinstance(node, Call) and isinstance(node.op, Op):
            pattern = node.op.pattern
            self.pattern[i] = pattern
            out_ty = node.checked_type
            for a in node.args:
                edge = pattern
                # a broadcast whose operand already has the output's shape is element-wise for it
                if (edge == BROADCAST and isinstance(out_ty, TensorType) and isinstance(a.checked_type, TensorType)
                        and a.checked_type.shape == out_ty.shape):
                    edge = ELEMWISE
                self._link(a, i, edge)
        elif isinstance(node, Call):
            # a call of an already fused function: a kernel of its own
            self.pattern[i] = OPAQUE
            for a in node.args:
                self._link(a, i, OPAQUE)
        elif isinstance(node, Tuple):
            self.pattern[i] = TUPLE
            for f in node.fields:
                if isinstance(f.checked_type, TensorType):
                    self._link(f, i, INJECTIVE)
                else:
                    self.extern[self.index[f]] = True
        elif isinstance(node, TupleGetItem):
            ty = node.tuple_value.checked_type
            if all(isinstance(f, TensorType) for f in ty.fields):
                self.pattern[i] = INJECTIVE
                self._link(node.tuple_value, i, INJECTIVE)
            else:
                self.pattern[i] = OPAQUE
                self.extern[self.index[node.tuple_value]] = True
        else:
            raise GraphError(f"fuse_ops: cannot fuse a {type(node).__name__} inside main; only calls, tuples, "
                             "tuple accesses, inputs and constants")


def _operands(node) -> list:
    return list(data_operands(node))


def _scope_nodes(body) -> list:
    """The nodes of ``body``, operands first (called fused functions not entered)."""
    return post_order(body, data_operands)


# ---------------------------------------------------------------------------------------
# the post-dominator tree
# ---------------------------------------------------------------------------------------
class _PostDominators:
    """For each node: its immediate post-dominator (``parent``, None for the output
    and for nodes used outside), the depth in the tree, and the combined pattern of
    the edges on the way to the parent (``pattern``)."""

    def __init__(self, g: _ForwardGraph):
        count = len(g.nodes)
        self.parent = [None] * count
        self.depth = [1] * count
        self.pattern = [OPAQUE] * count
        for i in reversed(range(count)):
            if g.extern[i] or not g.outputs[i]:
                continue
            pattern = ELEMWISE
            parent = None
            for k, (consumer, edge) in enumerate(g.outputs[i]):
                pattern = max(pattern, edge)
                if k == 0:
                    parent = consumer
                else:
                    parent, pattern = self._meet(parent, consumer, pattern)
            self.parent[i] = parent
            self.pattern[i] = pattern
            self.depth[i] = 1 if parent is None else self.depth[parent] + 1

    def _meet(self, a, b, pattern):
        """The least common ancestor of ``a`` and ``b``, the patterns passed on the
        way combined into ``pattern``."""
        while a != b:
            if a is None or b is None:
                return None, pattern
            if self.depth[a] < self.depth[b]:
                pattern = max(pattern, self.pattern[b])
                b = self.parent[b]
            elif self.depth[b] < self.depth[a]:
                pattern = max(pattern, self.pattern[a])
                a = self.parent[a]
            else:
                pattern = max(pattern, self.pattern[a], self.pattern[b])
                a, b = self.parent[a], self.parent[b]
        return a, pattern


# ---------------------------------------------------------------------------------------
# partitioning into groups (union-find)
# ---------------------------------------------------------------------------------------
class _Partition:
    """Groups of nodes; ``root(i)`` names node ``i``'s group.  A group's pattern is its
    root node's, or ``OUT_ELEMWISE_FUSABLE`` once it holds a conv2d or dense."""

    def __init__(self, g: _ForwardGraph, max_depth: int, fuse_inputs: bool = False):
        self.g = g
        self.max_depth = max_depth
        self.fuse_inputs = fuse_inputs
        count = len(g.nodes)
        self.up = list(range(count))
        self.gpattern = list(g.pattern)
        self.size = [1] * count
        self.has_anchor = [p == OUT_EWISE for p in g.pattern]

    def root(self, i):
        while self.up[i] != i:
            self.up[i] = self.up[self.up[i]]
            i = self.up[i]
        return i

    def _merge(self, child, parent):
        child, parent = self.root(child), self.root(parent)
        if child == parent:
            return
        self.up[child] = parent
        self.size[parent] += self.size[child]
        if self.has_anchor[child]:
            self.has_anchor[parent] = True
            self.gpattern[parent] = max(self.gpattern[child], self.gpattern[parent])

    def _path_nodes(self, src, sink, limit=None):
        """Every node on a path from ``src`` (excluded) to ``sink`` (included); None as
        soon as there are more than ``limit`` of them."""
        seen, stack = set(), [c for c, _ in self.g.outputs[src]]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if limit is not None and len(seen) > limit:
                return None
            if n != sink:
                stack.extend(c for c, _ in self.g.outputs[n])
        return seen

    def _path_ok(self, src, sink, cond) -> bool:
        """``cond(group pattern, is_sink)`` holds for every node on the paths from
        ``src`` to ``sink``."""
        return all(cond(self.gpattern[self.root(n)], n == sink) for n in self._path_nodes(src, sink))

    def _commit(self, src, sink):
        """Put ``src`` and every node between it and ``sink`` into ``sink``'s group."""
        target = self.root(sink)
        for n in {src} | self._path_nodes(src, sink):
            if n != sink:
                self._merge(n, target)

    def _size_with(self, src, sink) -> int:
        """The operators ``sink``'s group would hold after fusing ``src`` into it (or
        ``max_depth + 1`` once that is certain: a path of more nodes than that cannot
        fit, as every node on it counts in some group; a producer whose
        post-dominator is far away is not walked to it)."""
        path = self._path_nodes(src, sink, limit=self.max_depth)
        if path is None:
            return self.max_depth + 1
        target = self.root(sink)
        roots = {self.root(n) for n in {src} | path} - {target}
        return self.size[target] + sum(self.size[r] for r in roots)

    def run(self, dom: _PostDominators, fuse_opt_level: int) -> None:
        if fuse_opt_level <= 0:
            return
        for phase in range(3):
            for i in range(len(self.g.nodes)):
                self._visit(i, dom, phase)
        if self.fuse_inputs:
            # last, once the injective groups are whole (a tuple's producers joined it
            # in phase 2): each joins the product that post-dominates it
            for i in range(len(self.g.nodes)):
                parent = dom.parent[i]
                if (parent is not None and self.gpattern[self.root(i)] <= INJECTIVE
                        and self.root(i) != self.root(parent) and self._size_with(i, parent) <= self.max_depth
                        and self._into_product(i, parent)):
                    self._commit(i, parent)

    def _visit(self, i, dom, phase):
        own = self.gpattern[self.root(i)]
        parent = dom.parent[i]
        if own == OPAQUE or parent is None:
            return
        if self._size_with(i, parent) > self.max_depth:
            return
        parent_root = self.root(parent)
        if phase == 2:
            # an injective producer joins a tuple that has joined an injective consumer
            if own > INJECTIVE or self.gpattern[parent_root] == TUPLE:
                return
            if self.g.pattern[parent] == TUPLE and self.gpattern[parent_root] <= INJECTIVE:
                if self._path_ok(i, parent, lambda k, sink: k <= INJECTIVE):
                    self._commit(i, parent)
            return
        if self.root(i) == parent_root or self.gpattern[parent_root] == TUPLE:
            return  # already together; nothing fuses into a tuple (phase 2 does, once it is used)
        if own == OUT_EWISE:
            # conv2d / dense: takes an element-wise chain that ends at its post-dominator
            if phase == 0 and dom.pattern[i] == ELEMWISE:
                if self._path_ok(i, parent, lambda k, sink: k <= BROADCAST):
                    self._commit(i, parent)
        elif own <= BROADCAST:
            if dom.pattern[i] <= INJECTIVE or dom.pattern[i] == COMM_REDUCE:
                def cond(k, sink):
                    if not sink:
                        return k <= INJECTIVE
                    return k <= INJECTIVE or k in (COMM_REDUCE, OUT_EWISE)

                if self._path_ok(i, parent, cond):
                    self._commit(i, parent)
        elif own in (INJECTIVE, TUPLE):
            if phase == 1 and self._path_ok(i, parent, lambda k, sink: k <= INJECTIVE):
                self._commit(i, parent)
        # a reduction takes element-wise producers (above) but goes into nothing

    def _into_product(self, i, parent) -> bool:
        """Whether node ``i``'s group (injective and element-wise operators) may join
        the product ``parent`` that post-dominates it (GPU targets, see the module's
        docstring): every node between them is injective at most, and the group does
        more than reshape (a chain of reshapes is a view, no kernel, already)."""
        node = self.g.nodes[parent]
        if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.fuse_inputs):
            return False
        if not self._path_ok(i, parent, lambda k, sink: sink or k <= INJECTIVE):
            return False
        group = self.root(i)
        calls = [m for m in (self.g.nodes[n] for n in range(len(self.g.nodes)) if self.root(n) == group)
                 if _is_op_call(m)]
        return not _free_view(calls)


# ---------------------------------------------------------------------------------------
# rebuilding main with one function per group
# ---------------------------------------------------------------------------------------
def _is_scalar_constant(node) -> bool:
    return (isinstance(node, Constant) and node.data.ndim == 0
            and str(node.data.dtype) in _SIMPLE_SCALAR_DTYPES)


def _is_op_call(node) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op)


def _free_view(calls) -> bool:
    """Whether a group of these operator calls costs no kernel as it is: reshapes
    only (a view), or one concatenation whose operands are written into their
    places (see ``graph.build``); fused into a product, it would cost index
    arithmetic on every load instead."""
    if all(c.op.name in RESHAPES for c in calls):
        return True
    if len(calls) == 1 and calls[0].op.name == "concatenate" and isinstance(calls[0].checked_type, TensorType):
        return concat_in_place(calls[0].checked_type.shape, int(calls[0].attrs["axis"]))
    return False


def _rebuild(node, operands, rewriter="fuse_ops"):
    """``node`` over new ``operands``: the same node when none changed, else a new one,
    typed when ``node`` was (:func:`~tecc.graph.ir.typed_like`)."""
    if isinstance(node, Call):
        if all(a is b for a, b in zip(operands, node.args)):
            return node
        return typed_like(Call(node.op, operands, node.attrs, node.span), node, rewriter)
    if isinstance(node, Tuple):
        if all(a is b for a, b in zip(operands, node.fields)):
            return node
        return typed_like(Tuple(operands, node.span), node, rewriter)
    if isinstance(node, TupleGetItem):
        if operands[0] is node.tuple_value:
            return node
        return typed_like(TupleGetItem(operands[0], node.index, node.span), node, rewriter)
    return node


def _fused_body(g, members, root):
    """The primitive Function of one group and the main-level values it reads."""
    params, args, inside = [], [], {}
    outside_param = {}

    def operand(value):
        if value in inside:
            return inside[value]
        if _is_scalar_constant(value):
            return value  # a scalar read by several groups is inlined in each
        if value not in outside_param:
            p = Var(f"p{len(params)}", value.checked_type)
            outside_param[value] = p
            params.append(p)
            args.append(value)
        return outside_param[value]

    for i in members:
        node = g.nodes[i]
        if isinstance(node, (Var, Constant)):
            inside[node] = node  # a scalar constant, inlined
            continue
        if isinstance(node, TupleGetItem) and node.tuple_value not in inside:
            # an item of a tuple made outside the group: the group reads that tensor, not
            # the whole tuple (so that groups reading different items of one split are
            # the same function, compiled once)
            inside[node] = operand(node)
            continue
        inside[node] = _rebuild(node, [operand(a) for a in _operands(node)])
    fn = Function(params, inside[g.nodes[root]], attrs={"Primitive": 1})
    return fn, args


def _fuse_function(func: Function, fuse_opt_level: int, max_depth: int, fuse_inputs: bool) -> Function:
    g = _ForwardGraph(func.body)
    dom = _PostDominators(g)
    part = _Partition(g, max_depth, fuse_inputs)
    part.run(dom, fuse_opt_level)

    members = {}
    for i in range(len(g.nodes)):
        members.setdefault(part.root(i), []).append(i)
    # a group becomes a function when it holds an operator call; its root is the
    # member every other one leads to (the last, in operand-first order)
    fused_roots = {r: max(ms) for r, ms in members.items() if any(_is_op_call(g.nodes[m]) for m in ms)}

    new = {}
    for i, node in enumerate(g.nodes):
        r = part.root(i)
        if r in fused_roots:
            if i != fused_roots[r]:
                continue
            fn, outside = _fused_body(g, members[r], i)
            new[node] = Call(fn, [new[a] if a in new else _rebuild(a, [new[a.tuple_value]]) for a in outside])
            continue
        new[node] = _rebuild(node, [new[a] for a in _operands(node)])
    body = new[func.body]
    if body is func.body:
        return func
    return Function(func.params, body, func.ret_type, func.attrs, func.span)


def fuse_ops(mod: Module, fuse_opt_level: int = 2, max_depth: int = MAX_FUSED_OPS, fuse_inputs=None) -> Module:
    """Group the operators of every function of ``mod`` into fused kernels.

    Parameters
    ----------
    mod : tecc.graph.Module
        A typed or untyped module (types are inferred first).
    fuse_opt_level : int
        0: every operator call is a group of its own; 1 and above: fuse by the rules
        of the module's docstring.
    max_depth : int
        The most operators one group may hold.
    fuse_inputs : bool, optional
        Whether injective and element-wise chains fuse into the matrix products
        that read them (see the module's docstring); by default when the current
        target (``Target.current()``) is a GPU.

    Returns
    -------
    tecc.graph.Module
        ``main`` calls one primitive :class:`~tecc.graph.ir.Function`
        (``attrs["Primitive"] == 1``) per group; the same module when there was no
        operator to fuse.
    """
    if not isinstance(max_depth, int) or max_depth < 1:
        raise GraphError(f"fuse_ops: max_depth must be a positive int, got {max_depth!r}")
    if fuse_inputs is None:
        fuse_inputs = "gpu" in target_keys()
    elif not isinstance(fuse_inputs, bool):
        raise GraphError(f"fuse_ops: fuse_inputs must be True, False or None (by the current target), got "
                         f"{fuse_inputs!r}")
    infer_type(mod)

    def fuse(fn):
        new = _fuse_function(fn, fuse_opt_level, max_depth, fuse_inputs)
        if new is not fn:
            infer_type(new)
        return new

    return mod.map_functions(fuse)


def fused_groups(mod: Module, name: str = "main") -> list:
    """The operator names of each primitive function ``mod[name]`` calls, in call
    order (``[["nn.conv2d", "nn.bias_add", "nn.relu"], ...]``)."""
    groups = []
    for node in _scope_nodes(mod[name].body):
        if isinstance(node, Call) and isinstance(node.op, Function) and node.op.is_primitive:
            ops = [n.op.name for n in _scope_nodes(node.op.body) if _is_op_call(n)]
            groups.append(ops)
    return groups


__all__ = ["MAX_FUSED_OPS", "fuse_ops", "fused_groups"]
