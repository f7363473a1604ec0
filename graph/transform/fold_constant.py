"""Constant folding: compute at build time every value that depends on constants only.

A value is constant when it is a :class:`~tecc.graph.ir.Constant`, or an operator
call, tuple or tuple access whose operands are all constant; ``shape_of`` of a
tensor with a static shape is constant too (a shape subgraph: ``shape_of`` ->
``take`` -> ``concatenate`` ... folds to one array).  The values to replace are the
constant ones that a non-constant node reads (or that ``main`` returns).

They are evaluated the way the model itself will run: all of them together as one
small graph, fused and compiled for ``"llvm"`` by the C backend
(:func:`tecc.graph.build.compile_graph`), then run; so no operator needs a second,
numpy implementation.  The compiled library is cached by the graph's structure
(operators, attributes, shapes, scalar constants): folding the same weight
transform of another model of the same shapes compiles nothing.

On a GPU target, a conversion from an 8-, 4- or 2-bit type (an int4 or float8
weight's dequantization) that feeds a matrix product is left to run: the weights
stay narrow in memory and the product dequantizes them in its own kernel.
"""
from __future__ import annotations

import numpy as np

from ..ir import Call, Constant, Function, Module, TensorType, Tuple, TupleGetItem, TupleType, Var, typed_like
from ...runtime import dtypes as _rt_dtypes
from ..op import Op, OpPattern
from ..ops._util import target_keys
from .fuse_ops import _operands, _rebuild, _scope_nodes
from .infer_type import infer_type

#: operators whose value is never folded (nothing is known of their effects)
NO_FOLD = frozenset()


def _shape_constant(node):
    """``shape_of(x)`` (or ``ndarray_size``) of a statically shaped ``x`` as a
    Constant, else None."""
    if not (isinstance(node, Call) and isinstance(node.op, Op)):
        return None
    name = node.op.name
    if name not in ("shape_of", "ndarray_size"):
        return None
    ty = node.args[0].checked_type
    if not isinstance(ty, TensorType) or not ty.is_static:
        return None
    out = node.checked_type
    value = np.array(ty.shape) if name == "shape_of" else np.array(ty.size)
    return Constant(value.astype(out.dtype).reshape(out.shape))


def _is_foldable_call(node, kept: set) -> bool:
    if not (isinstance(node, Call) and isinstance(node.op, Op)) or node.op.name in NO_FOLD or node in kept:
        return False
    return node.op.pattern != OpPattern.OPAQUE or _is_dropout(node)


def _kept_narrow_casts(nodes) -> set:
    """The casts from a narrow type (:func:`_widens_narrow_weights`) whose every use,
    through element-wise, broadcast and injective operators, ends in an operand of a
    product that fuses its inputs (``fuse_ops``' ``fuse_inputs``: dense, matmul,
    batch_matmul): the dequantizations a GPU kernel runs as it reads the weights.  A
    weight read by anything else (a convolution) is folded: that kernel would read a
    dequantized copy made again at every run."""
    users = {}
    for node in nodes:
        for a in _operands(node):
            users.setdefault(a, []).append(node)
    ends = {}

    def ends_in_product(node) -> bool:
        if node not in ends:
            us = users.get(node, [])
            ends[node] = bool(us) and all(
                isinstance(u, Call) and isinstance(u.op, Op)
                and (u.op.fuse_inputs or (u.op.pattern <= OpPattern.INJECTIVE and ends_in_product(u))) for u in us)
        return ends[node]

    return {n for n in nodes if isinstance(n, Call) and isinstance(n.op, Op) and _widens_narrow_weights(n)
            and ends_in_product(n)}


def _widens_narrow_weights(node) -> bool:
    """A ``cast`` from an 8-, 4- or 2-bit type (float8_e4m3fn, int4...; not bfloat16):
    the start of a weight's dequantization.  On a GPU target it is not folded, so that
    the weights stay narrow in memory and the dequantization runs inside the kernel
    of the product that reads them (``fuse_ops``' input fusion): an int4 weight moves
    a byte per element where its folded float32 would move four."""
    if node.op.name != "cast":
        return False
    ty = node.args[0].checked_type
    return isinstance(ty, TensorType) and is_narrow_weight(ty.dtype)


def is_narrow_weight(dtype: str) -> bool:
    """A type whose weights a GPU build keeps as they are, dequantized in the kernel
    that reads them: the 8-, 4- and 2-bit types (bfloat16 is computed in, not
    dequantized)."""
    return dtype != "bfloat16" and _rt_dtypes.is_narrow(dtype)


def _expands(node) -> bool:
    """An operator call whose result has more elements than its tensor operands
    together (a gather, a broadcast, a tile)."""
    if not (isinstance(node, Call) and isinstance(node.op, Op)):
        return False
    out = node.checked_type
    ins = [a.checked_type for a in node.args if isinstance(a.checked_type, TensorType)]
    return isinstance(out, TensorType) and out.is_static and all(t.is_static for t in ins) \
        and out.size > sum(t.size for t in ins)


def _is_dropout(node) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.dropout"


def _fold_function(fn: Function, keep_narrow: bool) -> Function:
    infer_type(fn)
    nodes = _scope_nodes(fn.body)
    kept = _kept_narrow_casts(nodes) if keep_narrow else set()
    const = {}   # node -> True when its value is known at build time
    new = {}     # node -> the node replacing it
    for node in nodes:
        shape = _shape_constant(node)
        if shape is not None:
            new[node] = shape
            const[node] = True
            continue
        ops = _operands(node)
        if isinstance(node, Constant):
            const[node] = True
        elif isinstance(node, Var):
            const[node] = False
        elif isinstance(node, (Tuple, TupleGetItem)) or _is_foldable_call(node, kept):
            const[node] = all(const[a] for a in ops)
        else:
            const[node] = False
        new[node] = _rebuild(node, [new[a] for a in ops], "fold_constant")

    # the nodes of the narrow weights' dequantizations left to run (keep_narrow): a cast
    # from a narrow type, and the element-wise and injective operators after it, up to
    # the product that reads them
    dequantizing = set(kept)
    for node in nodes:
        if (isinstance(node, Call) and isinstance(node.op, Op) and node.op.pattern <= OpPattern.INJECTIVE
                and any(a in dequantizing for a in _operands(node))):
            dequantizing.add(node)

    def reads(a, node):
        """The values to fold for operand ``a`` of non-constant ``node``: ``a`` itself,
        or, where a dequantization reads an expansion of constants (a per-block scale
        gathered to the weight's shape), the constants it expands (computed in the
        kernel, where a folded expansion would be as large as the weights in float)."""
        if node in dequantizing and _expands(a):
            return [r for b in _operands(a) if const[b] for r in reads(b, node)]
        return [a]

    # the constant values a non-constant node reads, or that the function returns
    frontier = []
    for node in nodes:
        if const[node]:
            continue
        for a in _operands(node):
            if not const[a]:
                continue
            for r in reads(a, node):
                if not isinstance(new[r], Constant) and r not in frontier:
                    frontier.append(r)
    if const[fn.body] and not isinstance(new[fn.body], Constant) and fn.body not in frontier:
        frontier.append(fn.body)
    # a tuple of constants is folded already
    frontier = [n for n in frontier
                if not (isinstance(new[n], Tuple) and all(isinstance(f, Constant) for f in new[n].fields))]

    if frontier:
        values = dict(zip(frontier, _evaluate([new[n] for n in frontier])))
        # rebuild on top of the folded values (constant nodes behind them become unused)
        for node in nodes:
            if node in values:
                new[node] = values[node]
            elif not isinstance(new[node], Constant):
                new[node] = _rebuild(node, [new[a] for a in _operands(node)], "fold_constant")
    body = new[fn.body]
    if body is fn.body:
        return fn
    return typed_like(Function(fn.params, body, fn.ret_type, fn.attrs, fn.span), fn, "fold_constant")


def _evaluate(values) -> list:
    """The values of constant expressions, each a Constant (or a Tuple of them)."""
    from ..build import evaluate_constants  # noqa: PLC0415 -- the builder imports the passes

    fields, layout = [], []
    for v in values:
        infer_type(v)
        ty = v.checked_type
        if isinstance(ty, TupleType):
            layout.append(len(ty.fields))
            fields.extend(TupleGetItem(v, k) for k in range(len(ty.fields)))
        else:
            layout.append(None)
            fields.append(v)
    arrays = evaluate_constants(fields)
    out, k = [], 0
    for n in layout:
        if n is None:
            out.append(Constant(arrays[k]))
            k += 1
        else:
            out.append(Tuple([Constant(a) for a in arrays[k:k + n]]))
            k += n
    return out


def fold_constant(mod: Module) -> Module:
    """Replace every constant value by its computed :class:`~tecc.graph.ir.Constant`
    (see the module's docstring).

    Parameters
    ----------
    mod : tecc.graph.Module

    Returns
    -------
    tecc.graph.Module
        The same module when nothing could be folded.
    """
    infer_type(mod)
    keep_narrow = "gpu" in target_keys()
    return mod.map_functions(lambda fn: _fold_function(fn, keep_narrow))


__all__ = ["NO_FOLD", "fold_constant", "is_narrow_weight"]
