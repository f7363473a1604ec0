"""Helpers shared by topi's computes and schedules (TVM's ``topi.utils``): constant
shapes and integers, simplification, index arithmetic, and what the schedules of
every target share: walks of the operation graph (:func:`traverse_inline`,
:func:`find_anchors`, :func:`find_op`) and loop fusion (:func:`fuse_axes`,
:func:`fuse_rows`)."""
from __future__ import annotations

from .. import te
from ..errors import ScheduleError, TeccError, TeccTypeError
from ..tir import expr as E
from ..tir.arith import Analyzer
from ..tir.op import const, convert
from . import tag


class TopiError(TeccError, ValueError):
    """An operator called with arguments it cannot take: shapes that do not
    broadcast, an axis out of range, a layout it does not know."""


class InvalidShapeError(TopiError):
    """A shape a compute or schedule cannot handle."""


def normalize_axis(axis, ndim: int, what: str) -> int:
    """``axis`` in ``[0, ndim)`` (a negative one counts from the end).

    Raises
    ------
    TopiError
        When ``axis`` is out of range; ``what`` names the operator and tensor.
    """
    if isinstance(axis, E.PrimExpr):
        axis = get_const_int(axis)
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TeccTypeError(f"{what}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise TopiError(f"{what}: axis {axis} is out of range for a tensor of rank {ndim}; "
                        f"use an axis in [{-ndim}, {ndim - 1}]")
    return axis + ndim if axis < 0 else axis


def simplify(expr):
    """``expr`` simplified (an int stays an int)."""
    if isinstance(expr, int):
        return expr
    return Analyzer().simplify(convert(expr))


def get_const_int(expr) -> int:
    """The value of a constant integer expression.

    Raises
    ------
    TeccTypeError
        When ``expr`` is not constant (e.g. a symbolic dimension ``n``).
    """
    if isinstance(expr, int) and not isinstance(expr, bool):
        return expr
    if isinstance(expr, E.IterVar):
        expr = expr.var
    e = simplify(expr)
    if not isinstance(e, E.IntImm):
        raise TeccTypeError(f"expected a constant integer, got `{expr}`; this needs a static size")
    return int(e.value)


def const_int_or(expr, default):
    """The value of a constant integer expression, ``default`` when it is symbolic
    (a tunable knob needs a length even for a dimension ``n``)."""
    value = get_const_tuple([expr])[0]
    return value if isinstance(value, int) else default


def get_const_float(expr) -> float:
    """The value of a constant float (or integer) expression."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return float(expr)
    e = simplify(expr)
    if not isinstance(e, (E.IntImm, E.FloatImm)):
        raise TeccTypeError(f"expected a constant number, got `{expr}`")
    return float(e.value)


def equal_const_int(expr, value) -> bool:
    """True if ``expr`` is a constant integer equal to ``value``."""
    if isinstance(expr, int):
        return expr == value
    if not isinstance(expr, E.PrimExpr):
        return False
    e = simplify(expr)
    return isinstance(e, E.IntImm) and e.value == value


def get_const_tuple(in_tuple) -> tuple:
    """A shape as a tuple of ints; dimensions that are not constant stay
    expressions (``(n, 3)`` for ``te.placeholder((n, 3))``)."""
    out = []
    for x in in_tuple:
        if isinstance(x, E.IterVar):
            x = x.var
        if isinstance(x, int):
            out.append(x)
            continue
        e = simplify(x)
        out.append(int(e.value) if isinstance(e, E.IntImm) else e)
    return tuple(out)


def get_float_tuple(in_tuple) -> tuple:
    """A tuple of constant floats."""
    return tuple(get_const_float(x) for x in in_tuple)


def prod(xs):
    """The product of ``xs`` (numbers or expressions; 1 for none)."""
    result = 1
    for x in xs:
        result = result * x
    return result


def is_empty_shape(shape) -> bool:
    """True if some dimension of ``shape`` is the constant 0."""
    return any(equal_const_int(d, 0) for d in shape)


def ceil_div(a, b):
    """``ceil(a / b)`` for non-negative integers or index expressions."""
    return (a + b - 1) // b


def get_max_power2_factor(n: int, max_value=None) -> int:
    """The largest power of two dividing ``n`` (at most ``max_value``)."""
    x = 1
    while n % (2 * x) == 0 and (max_value is None or 2 * x <= max_value):
        x *= 2
    return x


def ravel_index(indices, shape):
    """The row-major flat index of ``indices`` in ``shape``."""
    idx = None
    for i, (x, d) in enumerate(zip(indices, shape)):
        idx = x if i == 0 else idx * d + x
    return idx if idx is not None else const(0)


def unravel_index(idx, shape) -> list:
    """The indices in ``shape`` (row major) of the flat index ``idx``."""
    out = []
    for d in reversed(shape):
        out.append(idx % d)
        idx = idx // d
    return out[::-1]


def const_vector(vector, name="const_vector"):
    """A 1-D compute holding the constants of a numpy vector (a chain of selects)."""
    import numpy as np

    vector = np.asarray(vector)
    if vector.ndim != 1:
        raise InvalidShapeError(f"const_vector {name!r}: expected a 1-D array, got shape {vector.shape}")
    dtype = str(vector.dtype)

    def select_value(i):
        now = const(0, dtype)
        for k, v in enumerate(vector):
            now = te.if_then_else(i == k, const(v.item(), dtype), now)
        return now

    return te.compute(vector.shape, select_value, name=name)


def layout_axes(layout: str, what: str) -> list:
    """The axes of a layout string, a split axis as one entry:
    ``"NCHW16c" -> ["N", "C", "H", "W", "16c"]``."""
    axes, number = [], ""
    for ch in layout:
        if ch.isdigit():
            number += ch
        elif ch.isalpha():
            if ch.islower() and not number:
                raise TopiError(f"{what}: layout {layout!r}: the split axis {ch!r} needs its factor, e.g. '16{ch}'")
            axes.append(number + ch)
            number = ""
        else:
            raise TopiError(f"{what}: layout {layout!r} has the character {ch!r}; use letters such as 'NCHW'")
    if number:
        raise TopiError(f"{what}: layout {layout!r} ends with a number")
    return axes


def get_shape(src_shape, src_layout, dst_layout):
    """``src_shape`` (in ``src_layout``) rearranged into ``dst_layout``, which names the
    same axes in another order (TVM's ``topi.utils.get_shape``: ``(1, 3, 224, 224)``,
    NCHW -> NHWC gives ``(1, 224, 224, 3)``)."""
    src, dst = layout_axes(str(src_layout), "get_shape"), layout_axes(str(dst_layout), "get_shape")
    if sorted(src) != sorted(dst) or len(set(src)) != len(src):
        raise TopiError(f"get_shape: layouts {src_layout!r} and {dst_layout!r} must name the same axes once each")
    if len(src_shape) != len(src):
        raise TopiError(f"get_shape: shape {tuple(src_shape)} has {len(src_shape)} axes but layout {src_layout!r} "
                        f"has {len(src)}")
    size = dict(zip(src, get_const_tuple(src_shape)))
    return tuple(size[axis] for axis in dst)


def nchw_pack_layout(layout) -> bool:
    """Whether ``layout`` packs both the batch and the channels in blocks after NCHW
    (``"NCHW4n4c"``; TVM's helper)."""
    layout = str(layout)
    return layout.startswith("NCHW") and "n" in layout[4:] and "c" in layout[4:]


def nchw_xc_layout(layout) -> bool:
    """Whether ``layout`` is NCHW with the channels in blocks of a number (``"NCHW8c"``;
    TVM's helper)."""
    layout = str(layout)
    return layout.startswith("NCHW") and layout.endswith("c") and layout[4:-1].isdigit()


def traverse_inline(s, final_op, callback):
    """Walk the stages from ``final_op`` back through the injective ones, inlining
    each injective stage that is not an output of ``s``, and call ``callback(op)``
    on every operation reached, the injective ones included (an injective op after
    the operations it reads).

    This is how a schedule finds its anchor (a convolution, a softmax) under the
    element-wise epilogues that follow it.
    """
    visited = set()
    outputs = set(s.outputs)

    def visit(op):
        if op in visited:
            return
        visited.add(op)
        if tag.is_injective(op.tag):
            if op not in outputs:
                s[op].compute_inline()
            for t in op.input_tensors:
                if isinstance(t.op, te.ComputeOp):
                    visit(t.op)
        callback(op)

    visit(final_op)


def walk_to_reductions(s, final_op) -> tuple:
    """``(reductions, others)``: the reductions (operations with reduction axes)
    that ``final_op`` reads, directly or not, and the other operations on the way
    that are outputs of ``s``.  Every other stage on the way (element-wise and
    injective ones, the stage that picks the index out of an argmax) is inlined.
    """
    reductions, others, visited = [], [], set()
    outputs = set(s.outputs)

    def visit(op):
        if op in visited or not isinstance(op, te.ComputeOp):
            return
        visited.add(op)
        if op.reduce_axis:
            reductions.append(op)
        elif op in outputs:
            others.append(op)
        else:
            s[op].compute_inline()
        for t in op.input_tensors:
            visit(t.op)

    visit(final_op)
    return reductions, others


def find_op(outs, predicate, through=None):
    """The first compute operation, walking back from ``outs`` depth first (each
    operation once), for which ``predicate(op)``; None when there is none.  The walk
    goes on into the inputs of every operation, or, with ``through``, of those for
    which ``through(op)``."""
    seen, todo = set(), [t.op for t in outs]
    while todo:
        op = todo.pop()
        if op in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(op)
        if predicate(op):
            return op
        if through is None or through(op):
            todo.extend(t.op for t in op.input_tensors)
    return None


def find_anchors(s, out, tags, what, kind) -> list:
    """The operations tagged one of ``tags`` that ``out`` is, or reads through
    element-wise and injective stages, in the order :func:`traverse_inline` from
    ``out`` reaches them (producers first); the injective stages on the way that are
    not outputs are inlined.

    Raises
    ------
    ScheduleError
        When there is none: ``"{what}: 'name' (tag 't') is not {kind} nor an
        element-wise op after one"`` (``kind`` is e.g. ``"a softmax"``).
    """
    found = []

    def visit(op):
        if op.tag in tags:
            found.append(op)

    traverse_inline(s, out.op, visit)
    if not found:
        raise ScheduleError(f"{what}: {out.op.name!r} (tag {out.op.tag!r}) is not {kind} nor an element-wise op "
                            "after one")
    return found


def inline_padding(s, op):
    """Inline the padding stages (tagged ``pad``) that ``op`` reads."""
    for t in op.input_tensors:
        if tag.has(t.op.tag, tag.PAD):
            s[t].compute_inline()


def fuse_axes(s, t, axes):
    """The loops ``axes`` of ``t``'s stage fused into one: the loop itself when there
    is one, None when there are none."""
    if not axes:
        return None
    return axes[0] if len(axes) == 1 else s[t].fuse(*axes)


def fuse_all(s, t):
    """The data axes of ``t``'s stage fused into one (:func:`fuse_axes`; None for a
    rank-0 stage)."""
    return fuse_axes(s, t, list(s[t].op.axis))


def fuse_rows(s, t, axis):
    """``(row, j)``: the loop along ``axis`` of ``t``'s stage (``j``) moved innermost
    and every other data axis fused into one loop before it (``row``; None when
    ``axis`` is the only axis)."""
    axes = list(s[t].op.axis)
    axis = axis + len(axes) if axis < 0 else axis
    j = axes[axis]
    rows = [a for k, a in enumerate(axes) if k != axis]
    if rows and axis != len(axes) - 1:
        s[t].reorder(*rows, j)
    return fuse_axes(s, t, rows), j
