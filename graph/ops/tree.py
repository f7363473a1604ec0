"""``tree_traverse``: where each row of features ends in each decision tree of an
ensemble (:func:`tecc.topi.tree.tree_traverse`; the trees are tables, operands
of the operator, so a large ensemble is data, not code).  Element-wise in its
output -- each (tree, row) walk reads only its row and the tables --
:attr:`~tecc.graph.op.OpPattern.INJECTIVE`: the gather of the leaves' weights fuses
with it, one kernel (their sum over the trees is a reduction of its own).

Operands: ``data [batch, features]`` (float32 or float64), ``roots [trees]``,
``feature``, ``threshold`` (data's dtype), ``true_next``, ``false_next``, one
entry per node, and optionally ``mode`` (a table of mode codes); without it the
``mode`` attribute is every node's code.  The result is ``int32 [trees, batch]``.
``depth``: the steps each walk takes, at most :data:`tecc.topi.tree.MAX_STEPS`
(its expression nests one level per step); a deeper ensemble is walked on by
``tree_traverse_on`` operators, ``roots`` being the ``[trees, batch]`` entries the
previous walk ended at -- each opaque, a kernel of its own (fused, the walks
would nest into one expression again).
"""
from __future__ import annotations

import functools

from ..ir import GraphError, TensorType
from ..op import REQUIRED, OpPattern, register_op
from ._util import as_int, is_int_dtype, tensor_arg, topi

OP = "tree_traverse"
#: the walk on from a previous walk's end: opaque, so that no kernel holds more than one walk's expression
OP_ON = "tree_traverse_on"
#: the operands, in order (``mode`` optional)
OPERANDS = ("data", "roots", "feature", "threshold", "true_next", "false_next", "mode")


def max_steps() -> int:
    """The most steps one walk takes (:data:`tecc.topi.tree.MAX_STEPS`)."""
    return topi().tree.MAX_STEPS


def _infer(op, types, attrs):
    if len(types) not in (6, 7):
        raise GraphError(f"{op}: takes {', '.join(OPERANDS[:6])} and optionally mode ({len(types)} operands given)")
    ts = {name: tensor_arg(op, types, i) for i, name in enumerate(OPERANDS[:len(types)])}
    data = ts["data"]
    if data.ndim != 2 or data.dtype not in ("float32", "float64"):
        raise GraphError(f"{op}: data must be a float32 or float64 [batch, features] tensor, got {data.dtype} "
                         f"{tuple(data.shape)}")
    roots = ts["roots"]
    if roots.ndim not in (1, 2) or not is_int_dtype(roots.dtype) or roots.ndim == 2 and roots.shape[1] != data.shape[0]:
        raise GraphError(f"{op}: roots must be an integer tensor [trees] or [trees, batch] (where the walks start), "
                         f"got {roots.dtype} {tuple(roots.shape)} for data {tuple(data.shape)}")
    nodes = ts["feature"].shape
    for name in OPERANDS[2:len(types)]:
        t = ts[name]
        if t.ndim != 1 or tuple(t.shape) != tuple(nodes):
            raise GraphError(f"{op}: {name} must be 1-D with one entry per node, like feature {tuple(nodes)}; got "
                             f"{tuple(t.shape)}")
        want_int = name != "threshold"
        if want_int and not is_int_dtype(t.dtype) or not want_int and t.dtype != data.dtype:
            raise GraphError(f"{op}: {name} has dtype {t.dtype}; it must be "
                             f"{'an integer type' if want_int else data.dtype + ' (the data dtype)'}")
    depth = as_int(op, "depth", attrs["depth"])
    steps = max_steps()
    if not 0 <= depth <= steps:
        raise GraphError(f"{op}: depth must be 0..{steps} (the steps of one walk; chain walks for deeper trees), got "
                         f"{depth}")
    modes = topi().tree.MODES
    if len(types) == 6 and attrs["mode"] not in modes:
        raise GraphError(f"{op}: without a mode table, attribute mode must be one of {modes}, got {attrs['mode']!r}")
    return TensorType((roots.shape[0], data.shape[0]), "int32")


def _lower(inputs, attrs, out_type):
    data, roots, feature, threshold, true_next, false_next = inputs[:6]
    mode = inputs[6] if len(inputs) == 7 else int(attrs["mode"])
    return topi().tree.tree_traverse(data, roots, feature, threshold, mode, true_next, false_next,
                                     int(attrs["depth"]))


register_op(OP, pattern=OpPattern.INJECTIVE, infer=functools.partial(_infer, OP), lower=_lower, num_inputs=None,
            defaults={"depth": REQUIRED, "mode": 0},
            doc="the node each row of data [batch, features] reaches in each tree, int32 [trees, batch]: "
                "depth steps from each root through the node tables")
register_op(OP_ON, pattern=OpPattern.OPAQUE, infer=functools.partial(_infer, OP_ON), lower=_lower, num_inputs=None,
            defaults={"depth": REQUIRED, "mode": 0},
            doc="tree_traverse on from where a previous walk ended (roots [trees, batch]), a kernel of its own: "
                "deep trees are walked by a chain of these")
