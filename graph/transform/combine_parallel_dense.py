"""Parallel dense layers combined (TVM's ``CombineParallelDense``).

Several ``nn.dense`` calls that read the same input with constant weights of the
same width and dtype -- a transformer's query, key and value projections, a gated
MLP's gate and up projections -- become one ``nn.dense`` whose weight is theirs
concatenated along the units, each former output a ``strided_slice`` of the
combined one along its last axis.  One product of ``sum(units)`` columns keeps both
cores busy with fewer, larger tasks and reads the input once; the slices are
injective and fuse into what reads them.
"""
from __future__ import annotations

import numpy as np

from ..ir import Call, Constant, GraphRewriter, Module, TensorType, post_order_visit
from ..op import Op, call
from .infer_type import infer_type

#: dense calls of one input combined when there are at least this many
MIN_BRANCHES = 2


def _dense_key(node):
    """The grouping key of a combinable dense call -- its input and what the
    combined call must share (width, dtypes) -- or None."""
    if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.dense"):
        return None
    data, weight = node.args[0], node.args[1]
    if not isinstance(weight, Constant) or weight.data.ndim != 2:
        return None
    dty, oty = data.checked_type, node.checked_type
    if not isinstance(dty, TensorType) or not isinstance(oty, TensorType):
        return None
    return (id(data), weight.data.shape[1], str(weight.data.dtype), oty.dtype, node.attrs.get("out_dtype") or "")


class _Combine(GraphRewriter):
    def __init__(self, groups):
        super().__init__()
        self.member = {id(n): (key, i) for key, nodes in groups.items() for i, n in enumerate(nodes)}
        self.groups = groups
        self.combined = {}  # group key -> (combined call, column offsets)


    def _combined(self, key):
        if key not in self.combined:
            nodes = self.groups[key]
            weights = [n.args[1].data for n in nodes]
            offsets = np.cumsum([0] + [w.shape[0] for w in weights]).tolist()
            first = nodes[0]
            fused = call("nn.dense", self.visit(first.args[0]), Constant(np.concatenate(weights, axis=0)),
                         units=offsets[-1], out_dtype=first.attrs.get("out_dtype"))
            self.combined[key] = (fused, offsets)
        return self.combined[key]

    def visit_Call(self, node):
        found = self.member.get(id(node))
        if found is None:
            return self.generic_visit(node)
        key, i = found
        fused, offsets = self._combined(key)
        shape = tuple(int(d) for d in node.checked_type.shape)
        rank = len(shape)
        begin = (0,) * (rank - 1) + (offsets[i],)
        end = shape[:-1] + (offsets[i + 1],)
        return call("strided_slice", fused, begin=begin, end=end, strides=(1,) * rank)


def _groups(fn, min_branches) -> dict:
    """Combinable dense calls of ``fn`` by key, in graph order, keeping the groups of
    at least ``min_branches``."""
    groups = {}

    def visit(node):  # each node once
        key = _dense_key(node)
        if key is not None:
            groups.setdefault(key, []).append(node)

    post_order_visit(fn, visit)
    return {k: v for k, v in groups.items() if len(v) >= min_branches}


def combine_parallel_dense(mod: Module, min_num_branches: int = MIN_BRANCHES) -> Module:
    """Combine the dense calls that share an input (see the module's docstring).

    Parameters
    ----------
    mod : tecc.graph.Module
    min_num_branches : int
        The fewest dense calls of one input that are combined.

    Returns
    -------
    tecc.graph.Module
        The same module when no two dense calls could combine.
    """
    infer_type(mod)

    def run(fn):
        groups = _groups(fn, min_num_branches)
        return _Combine(groups).visit(fn) if groups else fn

    return mod.map_functions(run)


__all__ = ["combine_parallel_dense"]
