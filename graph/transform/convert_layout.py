"""ConvertLayout (TVM's ``relay.transform.ConvertLayout``): run each convolution in
the data and kernel layouts the user asks for, and keep its values in that layout
for as long as the operators after it can take them.

``desired_layouts`` maps an operator to ``[data_layout, kernel_layout]``, e.g.
``{"nn.conv2d": ["NHWC", "HWIO"]}``; ``"default"`` as the kernel layout picks the
one the data layout takes (``OIHW`` for ``NCHW``, ``HWIO`` for ``NHWC``: the layouts
tecc's ``nn.conv2d`` computes in).  Blocked layouts are AlterOpLayout's.

A converted convolution reads its data through a ``layout_transform`` into the new
layout (the weight's transform is a constant expression, which FoldConstant turns
into the re-laid-out weight), and its value stays in the new layout through:

* element-wise operators of one operand (``nn.relu``, ``sigmoid``...);
* broadcasting binary operators whose other operand is in the same layout, a
  scalar, or another tensor that broadcasts (a per-channel scale: it is moved too,
  a constant one once, by FoldConstant); a residual ``add`` of two converted values
  stays converted;
* ``nn.bias_add``, ``nn.batch_norm`` and ``nn.lrn`` along the channels (their axis
  moves);
* max / average / global pooling (their ``layout`` attribute changes);
* ``concatenate`` of values converted alike (its axis moves);
* another converted convolution.

Every other consumer, and the function's result, reads the value through one
``layout_transform`` back to the original layout, made once per value; two
transforms that undo each other are never built (a value converted back and
forth is the original).
"""
from __future__ import annotations

from ..ir import Call, Constant, Function, GraphError, Module, Tuple, TupleGetItem, TupleType, Var, data_operands
from ..op import Op, call
from ..ops.nn import _CONV2D_LAYOUTS
from .alter_op_layout import layout_free_arity
from .fuse_ops import _rebuild, _scope_nodes
from .infer_type import infer_type

#: the operators ConvertLayout converts (the layouts each takes: ``_CONV2D_LAYOUTS``)
CONVERTIBLE = ("nn.conv2d",)
_POOLS = ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d")


def _check_desired(desired_layouts) -> dict:
    if not isinstance(desired_layouts, dict) or not desired_layouts:
        raise GraphError("ConvertLayout: desired_layouts must be a dict such as {'nn.conv2d': ['NHWC', 'HWIO']}, "
                         f"got {desired_layouts!r}")
    out = {}
    for op, layouts in desired_layouts.items():
        name = op.name if isinstance(op, Op) else op
        if name not in CONVERTIBLE:
            raise GraphError(f"ConvertLayout: cannot convert {name!r}; the operators it converts: "
                             f"{', '.join(CONVERTIBLE)}")
        if not isinstance(layouts, (list, tuple)) or not 1 <= len(layouts) <= 2:
            raise GraphError(f"ConvertLayout: the layouts of {name!r} are [data_layout, kernel_layout], got "
                             f"{layouts!r}")
        data = layouts[0]
        kernel = layouts[1] if len(layouts) == 2 else "default"
        if data not in _CONV2D_LAYOUTS:
            raise GraphError(f"ConvertLayout: {name!r} runs in the data layouts {', '.join(_CONV2D_LAYOUTS)}, not "
                             f"{data!r} (blocked layouts are AlterOpLayout's)")
        if kernel == "default":
            kernel = _CONV2D_LAYOUTS[data]
        if kernel != _CONV2D_LAYOUTS[data]:
            raise GraphError(f"ConvertLayout: {name!r} in data layout {data!r} takes kernel layout "
                             f"{_CONV2D_LAYOUTS[data]!r}, not {kernel!r}")
        out[name] = (data, kernel)
    return out


class _Convert:
    """One function's rewrite: ``plain[node]`` is the node's value in its original
    layout, ``moved[node]`` = ``(value, layout, original)`` its value in another."""

    def __init__(self, desired):
        self.desired = desired
        self.plain = {}
        self.moved = {}
        self.changed = False

    def get_plain(self, node):
        value = self.plain.get(node)
        if value is None:
            moved, layout, original = self.moved[node]
            if isinstance(node.checked_type, TupleType):  # a batch_norm: its data field back, the rest as is
                fields = len(node.checked_type.fields)
                value = Tuple([_transform(TupleGetItem(moved, 0), layout, original)]
                              + [TupleGetItem(moved, i) for i in range(1, fields)])
            else:
                value = _transform(moved, layout, original)
            self.plain[node] = value
        return value

    def get_in(self, node, layout, original):
        """``node``'s value -- a 4-D one whose own layout is ``original`` -- in
        ``layout``."""
        have = self.moved.get(node)
        if have is not None and have[1] == layout:
            return have[0]
        return _transform(self.get_plain(node), original, layout)

    def visit(self, node):
        if isinstance(node, (Var, Constant, Function)):
            self.plain[node] = node
            return
        name = node.op.name if isinstance(node, Call) and isinstance(node.op, Op) else None
        rule = _RULES.get(name)
        if rule is None and isinstance(node, Call) and isinstance(node.op, Op):
            rule = _generic_rule(node)
        if isinstance(node, TupleGetItem) and node.tuple_value in self.moved:
            if node.index != 0:  # a batch_norm's mean or variance: per channel, in no layout
                self.plain[node] = TupleGetItem(self.moved[node.tuple_value][0], node.index, node.span)
                self.changed = True
                return
            rule = _Convert.first_field
        if rule is not None:
            result = rule(self, node)
            if result is not None:
                self.moved[node] = result
                self.changed = True
                return
        self.plain[node] = _rebuild(node, [self.get_plain(a) for a in data_operands(node)], "convert_layout")

    # -- the rules: each returns (value, layout, original layout) or None -----------------
    def conv2d(self, node):
        want = self.desired.get("nn.conv2d")
        attrs = node.attrs
        if want is None or (attrs["data_layout"], attrs["kernel_layout"]) == want:
            return None
        data_layout, kernel_layout = want
        original = attrs["data_layout"]
        if original not in _CONV2D_LAYOUTS or attrs["out_layout"] not in ("", original):
            return None
        if attrs["groups"] != 1 and data_layout != "NCHW":
            return None  # tecc's grouped (and depthwise) convolution runs in NCHW only: it stays so
        data, weight = node.args
        new_attrs = dict(attrs)
        new_attrs.update(data_layout=data_layout, kernel_layout=kernel_layout, out_layout="")
        w = self.get_plain(weight)
        if attrs["kernel_layout"] != kernel_layout:
            w = call("layout_transform", w, src_layout=attrs["kernel_layout"], dst_layout=kernel_layout)
        return call("nn.conv2d", self.get_in(data, data_layout, original), w, **new_attrs), data_layout, original

    def unary(self, node):
        have = self.moved.get(node.args[0])
        if have is None:
            return None
        return Call(node.op, (have[0],), node.attrs, node.span), have[1], have[2]

    def binary(self, node):
        a, b = node.args
        ha, hb = self.moved.get(a), self.moved.get(b)
        if ha is None and hb is None:
            return None
        have = ha or hb
        operands = []
        for arg, h in ((a, ha), (b, hb)):
            if h is not None:
                if h[1:] != have[1:]:
                    return None
                operands.append(h[0])
            elif arg.checked_type.size == 1 and arg.checked_type.ndim <= 1:
                operands.append(self.get_plain(arg))  # a scalar broadcasts in any layout
            elif arg.checked_type.is_static and arg.checked_type.ndim <= 4:
                # a per-channel (or any broadcasting) operand, made 4-D and moved too (a
                # constant one is folded: FoldConstant after this pass)
                value, ty = self.get_plain(arg), arg.checked_type
                if ty.ndim < 4:
                    value = call("reshape", value, newshape=(1,) * (4 - ty.ndim) + tuple(ty.shape))
                operands.append(_transform(value, have[2], have[1]))
            else:
                return None
        return Call(node.op, tuple(operands), node.attrs, node.span), have[1], have[2]

    def channel_axis(self, node, first_operands=1):
        """A bias_add / batch_norm along the original channel axis, moved."""
        have = self.moved.get(node.args[0])
        if have is None:
            return None
        axis = node.attrs["axis"]
        axis = axis + 4 if axis < 0 else axis
        if have[2][axis] != "C":
            return None
        attrs = dict(node.attrs)
        attrs["axis"] = have[1].index("C")
        rest = tuple(self.get_plain(a) for a in node.args[first_operands:])
        return Call(node.op, (have[0],) + rest, attrs, node.span), have[1], have[2]

    def pool(self, node):
        have = self.moved.get(node.args[0])
        if have is None or node.attrs["layout"] != have[2] or node.attrs.get("out_layout", "") not in ("", have[2]):
            return None
        attrs = dict(node.attrs)
        attrs.update(layout=have[1], out_layout="")
        return Call(node.op, (have[0],), attrs, node.span), have[1], have[2]

    def concatenate(self, node):
        """A concatenation of values all moved alike (SqueezeNet's and Inception's
        branches): along the same letter of the new layout."""
        fields = node.args[0]
        if not isinstance(fields, Tuple) or len(node.args) != 1:
            return None
        have = [self.moved.get(f) for f in fields.fields]
        if any(h is None or h[1:] != have[0][1:] for h in have):
            return None
        layout, original = have[0][1], have[0][2]
        axis = node.attrs["axis"]
        axis = axis + 4 if axis < 0 else axis
        attrs = dict(node.attrs)
        attrs["axis"] = layout.index(original[axis])
        return Call(node.op, (Tuple([h[0] for h in have]),), attrs, node.span), layout, original

    def first_field(self, node):
        value, layout, original = self.moved[node.tuple_value]
        return TupleGetItem(value, 0, node.span), layout, original


def _transform(value, src, dst):
    """``value`` from layout ``src`` to ``dst``; a transform's inverse gives back its
    input instead of a second transform."""
    if src == dst:
        return value
    if (isinstance(value, Call) and getattr(value.op, "name", None) == "layout_transform"
            and value.attrs["src_layout"] == dst and value.attrs["dst_layout"] == src):
        return value.args[0]
    return call("layout_transform", value, src_layout=src, dst_layout=dst)


def _generic_rule(node):
    """The rule of an operator by its pattern (:func:`.alter_op_layout.layout_free_arity`)."""
    return {1: _Convert.unary, 2: _Convert.binary}.get(layout_free_arity(node))


_RULES = {"nn.conv2d": _Convert.conv2d, "nn.bias_add": _Convert.channel_axis,
          "nn.batch_norm": _Convert.channel_axis, "nn.lrn": _Convert.channel_axis,
          "concatenate": _Convert.concatenate}
_RULES.update({name: _Convert.pool for name in _POOLS})


def convert_layout(mod: Module, desired_layouts: dict) -> Module:
    """``mod`` with its convolutions in ``desired_layouts`` (see the module's docs);
    the same module when nothing is converted.

    Raises
    ------
    GraphError
        For an operator it cannot convert, or layouts that are not permutations
        of ``NCHW`` / ``OIHW``.
    """
    desired = _check_desired(desired_layouts)
    infer_type(mod)

    def rewrite(fn):
        conv = _Convert(desired)
        for node in _scope_nodes(fn.body):
            conv.visit(node)
        if not conv.changed:
            return fn
        return Function(fn.params, conv.get_plain(fn.body), fn.ret_type, fn.attrs, fn.span)

    return infer_type(mod.map_functions(rewrite))


__all__ = ["CONVERTIBLE", "convert_layout"]
