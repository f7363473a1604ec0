"""AlterOpLayout for CPUs: convolutions in channel blocks, and the blocked layout kept
between them.

On a CPU target, each ``nn.conv2d`` (NCHW data, OIHW weight, one group, float32, a
constant weight) becomes ``nn.contrib_conv2d_NCHWc``: data ``NCHW{i}c``, weight
``OIHW{i}i{o}o``, output ``NCHW{o}c`` -- the output channels of a block in the
vector lanes, contiguous, so that a register tile is pixels by one block and no lane
is wasted on a small image (TVM's AlterOpLayout with its x86 conv2d_NCHWc). The
weight's ``layout_transform`` is a constant expression: FoldConstant, after this
pass, turns it into the re-laid-out array once at build time.

The value of a convolution stays blocked for every consumer that can take it so:

* element-wise operators of one operand (``nn.relu``, ``clip``, ``sigmoid``...);
* broadcasting binary operators (``add``, ``multiply``...) whose other operand is
  blocked with the same block, a scalar, or a per-channel or full NCHW tensor
  (which is transformed, a constant one at build time);
* ``nn.bias_add`` along the channels (an ``add`` of the blocked bias);
* ``concatenate`` along the channels of values blocked alike (each one's channels
  are whole blocks, so the blocks concatenate);
* max / average pooling and global pooling (the ``NCHW{b}c`` layout);
* another ``nn.conv2d`` that is altered too: its ``i`` is the block it reads, with
  no transform between the two.

A 3x3 stride-1 convolution with many channels (:func:`tecc.topi.x86.use_winograd`)
becomes ``nn.contrib_conv2d_NCHWc_winograd`` instead: Winograd's F(2x2, 3x3) in the
same blocks, its weight transformed here once (``G g G^T``, a constant of shape
``[4, 4, O/o, I/i, i, o]``), 2.25x fewer multiplications than the direct
convolution (:mod:`tecc.topi.nn.conv2d_winograd`); ``PassContext(config=
{"graph.disable_winograd": True})`` keeps them direct.

A dense layer (``nn.dense``: 2-D float32 data, a constant weight) whose topi compute
packs its weight into column panels in every run (:func:`tecc.topi.x86.dense`: from
``PACK_MIN_BATCH`` rows on) becomes ``nn.contrib_dense_pack`` with the weight packed
here, once (``[N / nr, K, nr]``, layout ``NC{nr}n``, ``nr`` the panel width the
layer's config -- tuned or not -- takes): on a 2-core AVX2 machine the packing was
about a sixth of a 128-row layer's time (128 x 256 -> 1024: 0.262 -> 0.212 ms), and
its buffer was allocated in every run.

Every other consumer (a reshape, a dense layer, a grouped convolution, an output of
the model) reads the value through one ``layout_transform`` back to NCHW, made once
per value.  The block sizes are the target's (:func:`tecc.topi.x86.nchwc_block`,
:func:`~tecc.topi.x86.nchwc_out_block`).

Padded channels: a convolution whose output channels are not a whole number of the
preferred blocks (SqueezeNet's 1000) may compute a few more, with zero weights and
zero bias (``layout_transform`` pads with zeros), rather than run in narrower
blocks.  The padded channels stay finite through the operators above that keep them
so (relu, clip, add, multiply, poolings...), and a convolution reading them gives
them zero weights; another consumer -- and ``concatenate``, where they would land
between the fields' channels -- reads the value back in NCHW with them sliced off.
"""
from __future__ import annotations

import numpy as np

from ...errors import TeccTypeError
from ...tir.transform.pipeline import PassContext
from ..ir import Call, Constant, Expr, Function, GraphError, Module, TensorType, Tuple, Var, data_operands
from ..op import Op, OpPattern, call
from ..ops._util import target_keys, topi
from .fuse_ops import _rebuild, _scope_nodes
from .infer_type import infer_type

#: the operator each operator this pass makes stands for (what a user filtering
#: kernels by operator -- ``extract_from_program(..., ops=[conv2d])`` -- names)
ALTERED_FROM = {"nn.contrib_conv2d_NCHWc": "nn.conv2d", "nn.contrib_conv2d_NCHWc_winograd": "nn.conv2d",
                "nn.contrib_dense_pack": "nn.dense"}

#: the poolings that take the NCHW{b}c layout
_POOLS = ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d")


def _op_name(node):
    return node.op.name if isinstance(node, Call) and isinstance(node.op, Op) else None


def _blocked_layout(block: int) -> str:
    return f"NCHW{block}c"


def _block_for(channels: int):
    from ... import topi  # noqa: PLC0415

    return topi.x86.nchwc_block(channels)


def _out_block_for(channels: int):
    from ... import topi  # noqa: PLC0415

    return topi.x86.nchwc_out_block(channels)


def _winograd(attrs, weight_shape, out_shape) -> bool:
    """Whether the blocked convolution of ``attrs``, an OIHW weight of
    ``weight_shape`` and an NCHW output of ``out_shape`` is computed by Winograd
    (:func:`tecc.topi.x86.use_winograd`),
    unless the PassContext's ``"graph.disable_winograd"`` says no."""
    from ... import topi  # noqa: PLC0415

    disabled = PassContext.current().config.get("graph.disable_winograd", False)
    if not isinstance(disabled, bool):
        raise TeccTypeError(f"PassContext config 'graph.disable_winograd' must be a bool, got {disabled!r}")
    if disabled:
        return False

    def pair(v):
        return tuple(v) if isinstance(v, (list, tuple)) else (v, v)

    return topi.x86.use_winograd(weight_shape[1], weight_shape[0], weight_shape[2:], pair(attrs["strides"]),
                                 pair(attrs["dilation"]), attrs["groups"], out_size=tuple(out_shape[2:4]))


def _winograd_weight(weight, ic_bn: int, oc_bn: int):
    """The OIHW ``weight`` transformed for Winograd, its channels padded with zeros to
    whole blocks (as ``layout_transform`` pads them for the direct convolution)."""
    from ... import topi  # noqa: PLC0415

    out_ch, in_ch = weight.shape[:2]
    padded = np.pad(weight, [(0, -out_ch % oc_bn), (0, -in_ch % ic_bn), (0, 0), (0, 0)])
    return topi.nn.winograd_weight_nchwc(padded, ic_bn, oc_bn, str(weight.dtype))


#: unary operators that keep the padded channels of a blocked value finite (their
#: zero weights in the next convolution then add nothing)
_FINITE_UNARY = frozenset({"nn.relu", "clip", "nn.leaky_relu", "sigmoid", "tanh", "negative", "abs"})
#: binary operators that keep them finite (operands transformed into blocks are 0 there)
_FINITE_BINARY = frozenset({"add", "subtract", "multiply", "maximum", "minimum"})


#: op name -> (level, function): the user's layout alterations (TVM's
#: ``relay.op.register_alter_op_layout``), tried before tecc's own rules
ALTER_FUNCTIONS = {}


def register_alter_op_layout(op_name: str, alter=None, level: int = 10):
    """Register ``alter(attrs, inputs, tinfos, out_type)`` as the layout alteration
    of operator ``op_name`` (TVM's ``relay.op.register_alter_op_layout``; a
    decorator without ``alter``).  :func:`alter_op_layout` calls it for every call of
    the operator, on any target, with the call's attributes (a dict), its operands
    (graph values), their types and its type; it returns a new value for the call,
    or None to leave it to tecc.  A convolution it returns in channel blocks
    (``nn.conv2d`` with ``data_layout="NCHW16c"`` and an OIHW weight, as TVM's
    tutorials write it) becomes ``nn.contrib_conv2d_NCHWc``, its operands and its
    value transformed between the layouts as tecc's own blocked convolutions are.
    A registration of a higher ``level`` replaces a lower one."""
    from ..op import get_op  # noqa: PLC0415

    get_op(op_name)  # an unknown operator is an error here, named

    def register(fn):
        if not callable(fn):
            raise TeccTypeError(f"register_alter_op_layout({op_name!r}): give a function (attrs, inputs, tinfos, "
                                f"out_type), got {fn!r}")
        have = ALTER_FUNCTIONS.get(op_name)
        if have is None or level >= have[0]:
            ALTER_FUNCTIONS[op_name] = (level, fn)
        return fn

    return register(alter) if alter is not None else register


class _Alter:
    """One function's rewrite: ``plain[node]`` is the node's value in its own layout,
    ``blocked[node]`` = ``(value, block)`` its value in ``NCHW{block}c``.
    ``defaults``: tecc's own rules apply (CPU targets); the user's always do."""

    def __init__(self, defaults=True):
        self.plain = {}
        self.blocked = {}
        self.transformed = {}  # (node, block) -> its NCHW value transformed into NCHW{block}c
        self.changed = False
        self.defaults = defaults

    # -- the two forms of a value ----------------------------------------------------
    def get_plain(self, node):
        value = self.plain.get(node)
        if value is None:
            blocked, block = self.blocked[node]
            value = call("layout_transform", blocked, src_layout=_blocked_layout(block), dst_layout="NCHW")
            if self.padded(node):
                value = call("strided_slice", value, begin=(0,), end=(node.checked_type.shape[1],), axes=(1,))
            self.plain[node] = value
        return value

    def padded(self, node) -> bool:
        """Whether ``node``'s blocked value has channels padded up to a whole block."""
        have = self.blocked.get(node)
        return have is not None and node.checked_type.shape[1] % have[1] != 0

    def transform(self, node, value, block: int):
        """``value`` (``node``'s value, or its reshape to 4-D) in ``NCHW{block}c``, made
        once per node and block."""
        key = (node, block)
        if key not in self.transformed:
            self.transformed[key] = call("layout_transform", value, src_layout="NCHW",
                                         dst_layout=_blocked_layout(block))
        return self.transformed[key]

    def to_blocked(self, node, block: int, out_shape):
        """``node``'s value in ``NCHW{block}c`` as an operand of a blocked operator of
        4-D output shape ``out_shape``, or None when it does not broadcast there."""
        have = self.blocked.get(node)
        if have is not None:
            return have[0] if have[1] == block else None
        ty = node.checked_type
        if not isinstance(ty, TensorType) or not ty.is_static or ty.ndim > 4:
            return None
        value = self.get_plain(node)
        if ty.size == 1:
            # a scalar broadcasts in any layout
            return value if ty.ndim == 0 else call("reshape", value, newshape=())
        shape = (1,) * (4 - ty.ndim) + tuple(ty.shape)
        channels = out_shape[1]
        if any(d not in (1, o) for d, o in zip(shape, out_shape)):
            return None
        if ty.ndim < 4:
            value = call("reshape", value, newshape=shape)
        if shape[1] == channels:
            return self.transform(node, value, block)
        # one value for all channels: a trailing axis of 1 broadcasts along the block
        return call("reshape", value, newshape=shape + (1,))

    # -- the rules ----------------------------------------------------------------------
    def visit(self, node):
        if isinstance(node, (Var, Constant, Function)):
            self.plain[node] = node
            return
        name = _op_name(node)
        if name in ALTER_FUNCTIONS and self.user_rule(node):
            return
        if not self.defaults:
            self.plain[node] = _rebuild(node, [self.get_plain(a) for a in data_operands(node)], "alter_op_layout")
            return
        if name in _PLAIN_RULES:  # a rule whose result stays in the plain layout
            value = _PLAIN_RULES[name](self, node)
            if value is not None:
                self.plain[node] = value
                self.changed = True
                return
        rule = _RULES.get(name)
        if rule is None and isinstance(node, Call) and isinstance(node.op, Op):
            rule = _generic_rule(node)
        if rule is not None:
            result = rule(self, node)
            if result is not None:
                self.blocked[node] = result
                self.changed = True
                return
        self.plain[node] = _rebuild(node, [self.get_plain(a) for a in data_operands(node)], "alter_op_layout")

    def user_rule(self, node) -> bool:
        """The user's alteration of ``node`` (:func:`register_alter_op_layout`),
        recorded; False when it returned None."""
        inputs = [self.get_plain(a) for a in node.args]
        tinfos = [a.checked_type for a in node.args]
        new = ALTER_FUNCTIONS[_op_name(node)][1](dict(node.attrs), inputs, tinfos, node.checked_type)
        if new is None:
            return False
        if not isinstance(new, Expr):
            raise GraphError(f"the layout alteration registered for {_op_name(node)} returned "
                             f"{type(new).__name__}; return a graph value or None")
        block = _blocked_layout_block(new.attrs.get("data_layout", "")) if _op_name(new) == "nn.conv2d" else None
        if block is not None:
            self.blocked[node] = self.blocked_conv2d(node, new, block)
        else:
            self.plain[node] = infer_type(new)
        self.changed = True
        return True

    def blocked_conv2d(self, node, new, block: int):
        """``(value, out block)`` of the user's ``nn.conv2d`` in ``NCHW{block}c`` over
        ``node``'s NCHW data and OIHW weight: tecc's NCHWc convolution."""
        data, weight = new.args
        attrs = dict(new.attrs)
        out_block = _blocked_layout_block(attrs.get("out_layout") or attrs["data_layout"])
        if attrs["kernel_layout"] != "OIHW" or attrs["groups"] != 1 or out_block is None:
            raise GraphError(f"the layout alteration registered for nn.conv2d returned a convolution with data "
                             f"{attrs['data_layout']}, kernel {attrs['kernel_layout']}, out_layout "
                             f"{attrs.get('out_layout')!r}, groups {attrs['groups']}; tecc blocks an OIHW kernel of "
                             "one group, the output in NCHW{b}c")
        have = self.blocked.get(node.args[0])
        value = have[0] if have is not None and have[1] == block else self.transform(node.args[0], data, block)
        kernel_layout = f"OIHW{block}i{out_block}o"
        w = call("layout_transform", weight, src_layout="OIHW", dst_layout=kernel_layout)
        attrs.update(data_layout=_blocked_layout(block), kernel_layout=kernel_layout,
                     out_layout=_blocked_layout(out_block), out_dtype=attrs.get("out_dtype") or "")
        return call("nn.contrib_conv2d_NCHWc", value, w, **attrs), out_block

    def conv2d(self, node):
        attrs = node.attrs
        data, weight = node.args
        dty, wty, out = data.checked_type, weight.checked_type, node.checked_type
        if (attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW" or attrs["groups"] != 1
                or not isinstance(weight, Constant) or not out.is_static or not dty.is_static
                or {dty.dtype, wty.dtype, out.dtype} != {"float32"}):
            return None
        channels, out_channels = dty.shape[1], out.shape[1]
        blocks = _out_block_for(out_channels)
        if blocks is None:
            return None
        oc_bn = blocks[0]
        have = self.blocked.get(data)
        if have is not None:
            ic_bn = have[1]
            value = have[0]
        else:
            ic_bn = _block_for(channels)
            if ic_bn is None:
                if channels > 16:
                    return None
                ic_bn = channels  # the image's 3 channels: one block
            value = self.transform(data, self.get_plain(data), ic_bn)
        if _winograd(attrs, wty.shape, out.shape):
            # Winograd's F(2x2, 3x3): the weight transformed here, once (its channels padded to whole blocks)
            op, kernel_layout = "nn.contrib_conv2d_NCHWc_winograd", f"WINOGRAD4x4OI{ic_bn}i{oc_bn}o"
            w = Constant(_winograd_weight(weight.data, ic_bn, oc_bn))
        else:
            op, kernel_layout = "nn.contrib_conv2d_NCHWc", f"OIHW{ic_bn}i{oc_bn}o"
            w = call("layout_transform", weight, src_layout="OIHW", dst_layout=kernel_layout)
        new_attrs = dict(attrs)
        new_attrs.update(data_layout=_blocked_layout(ic_bn), kernel_layout=kernel_layout,
                         out_layout=_blocked_layout(oc_bn), out_dtype=out.dtype)
        return call(op, value, w, **new_attrs), oc_bn

    def dense(self, node):
        """``nn.contrib_dense_pack`` of a dense layer whose compute packs its weight
        (see the module docs), or None."""
        from ...topi.x86.dense import packed_panel_width  # noqa: PLC0415

        data, weight = node.args
        dty, wty, out = data.checked_type, weight.checked_type, node.checked_type
        if (not isinstance(weight, Constant) or dty.ndim != 2 or not dty.is_static or not out.is_static
                or {dty.dtype, wty.dtype, out.dtype} != {"float32"}):
            return None
        (M, K), N = dty.shape, wty.shape[0]
        # the panel width the layer's compute packs in under the current target and configs
        nr = packed_panel_width((M, K), (N, K), "float32")
        if nr is None or N % nr:
            return None  # it packs nothing; or panels past N, which the plain layer zero-pads every run
        w = np.ascontiguousarray(weight.data.reshape(N // nr, nr, K).transpose(0, 2, 1))
        return call("nn.contrib_dense_pack", self.get_plain(data), Constant(w), weight_layout=f"NC{nr}n",
                    out_dtype=out.dtype)

    def unary(self, node):
        have = self.blocked.get(node.args[0])
        if have is None or (self.padded(node.args[0]) and node.op.name not in _FINITE_UNARY):
            return None
        return Call(node.op, [have[0]], node.attrs, node.span), have[1]

    def binary(self, node):
        out = node.checked_type
        if not isinstance(out, TensorType) or out.ndim != 4 or not out.is_static:
            return None
        blocks = {self.blocked[a][1] for a in node.args if a in self.blocked}
        if len(blocks) != 1:
            return None
        block = blocks.pop()
        if any(a in self.blocked and tuple(a.checked_type.shape) != tuple(out.shape) for a in node.args):
            return None  # the blocked operand must not be broadcast larger
        if any(self.padded(a) for a in node.args) and node.op.name not in _FINITE_BINARY:
            return None
        args = [self.to_blocked(a, block, out.shape) for a in node.args]
        if any(a is None for a in args):
            return None
        return Call(node.op, args, node.attrs, node.span), block

    def bias_add(self, node):
        data, bias = node.args
        have = self.blocked.get(data)
        if have is None or node.attrs["axis"] not in (1, -3):
            return None
        channels = data.checked_type.shape[1]
        shaped = call("reshape", self.get_plain(bias), newshape=(1, channels, 1, 1))
        blocked_bias = call("layout_transform", shaped, src_layout="NCHW", dst_layout=_blocked_layout(have[1]))
        return call("add", have[0], blocked_bias), have[1]

    def concatenate(self, node):
        fields = node.args[0]
        if not isinstance(fields, Tuple) or node.attrs["axis"] not in (1, -3):
            return None
        blocks = {self.blocked[f][1] if f in self.blocked else None for f in fields.fields}
        if len(blocks) != 1 or None in blocks or any(self.padded(f) for f in fields.fields):
            return None  # padded channels would land between the fields' channels
        block = blocks.pop()
        tup = Tuple([self.blocked[f][0] for f in fields.fields], fields.span)
        return call("concatenate", tup, axis=1), block

    def pool(self, node):
        have = self.blocked.get(node.args[0])
        if have is None or node.attrs["layout"] != "NCHW":
            return None
        attrs = dict(node.attrs)
        attrs.update(layout=_blocked_layout(have[1]), out_layout="")
        return call(node.op, have[0], **attrs), have[1]


def layout_free_arity(node):
    """1 for an element-wise call of one tensor, 2 for a broadcasting call of two,
    None otherwise (an operator whose attributes name an axis or a layout is
    neither): the calls that run in any layout their operands share, which the
    layout passes (this one, ConvertLayout) keep in the layout they found."""
    if any(k in node.attrs for k in ("axis", "axes", "layout", "data_layout")):
        return None
    if node.op.pattern == OpPattern.ELEMWISE and len(node.args) == 1:
        return 1
    if node.op.pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST) and len(node.args) == 2:
        return 2
    return None


def _generic_rule(node):
    """The rule of an operator by its pattern (:func:`layout_free_arity`)."""
    return {1: _Alter.unary, 2: _Alter.binary}.get(layout_free_arity(node))


_RULES = {"nn.conv2d": _Alter.conv2d, "nn.bias_add": _Alter.bias_add, "concatenate": _Alter.concatenate}
_PLAIN_RULES = {"nn.dense": _Alter.dense}
_RULES.update({name: _Alter.pool for name in _POOLS})


def _blocked_layout_block(layout: str):
    """``b`` of a layout ``NCHW{b}c``, else None (topi's parse of it)."""
    return topi().nn.nchwc_layout_block(layout)


def _alter_function(fn: Function, defaults: bool = True) -> Function:
    alter = _Alter(defaults)
    for node in _scope_nodes(fn.body):
        alter.visit(node)
    if not alter.changed:
        return fn
    return Function(fn.params, alter.get_plain(fn.body), fn.ret_type, fn.attrs, fn.span)


def alter_op_layout(mod: Module) -> Module:
    """Run the convolutions of ``mod`` in channel blocks on a CPU target (see the
    module's docstring); the same module on other targets or when no convolution
    qualifies.

    Parameters
    ----------
    mod : tecc.graph.Module

    Returns
    -------
    tecc.graph.Module
    """
    cpu = "cpu" in target_keys()
    if not cpu and not ALTER_FUNCTIONS:
        return mod
    infer_type(mod)
    return mod.map_functions(lambda fn: _alter_function(fn, defaults=cpu))


__all__ = ["ALTER_FUNCTIONS", "alter_op_layout", "register_alter_op_layout"]
