"""Neural-network operators (Relay's ``nn.*``): convolutions, dense layers and
matrix products, normalizations, activations with parameters, softmax, pooling,
padding, dropout, flattening, and moving pixel blocks into channels and back.

Names, attributes and defaults follow Relay's.  Each ``lower`` builds the topi
compute for the current target: the tunable CPU or CUDA compute where topi has one
(``conv2d_nchw``, ``dense``, ``batch_matmul``...), so that tuning records apply
and the builder can extract tasks, else topi's plain compute.
"""
from __future__ import annotations

import re

from ..ir import GraphError, TensorType, TupleType
from ..op import REQUIRED, OpPattern, register_op
from ._util import (
    accumulate_in_float32, as_int, check_choice, check_dtype, for_target, int_tuple, is_static, normalize_axis,
    padding_of, same_dim, same_dtype, static_dims, target_keys, tensor_arg, tensor_args, topi, window_out,
)


def _out_dtype(op, attrs, default):
    """The ``out_dtype`` attribute ("" means ``default``)."""
    value = attrs["out_dtype"]
    if value in ("", None):
        return default
    return check_dtype(op, "out_dtype", value)


def _layout_axes(op, layout, allowed, name="layout"):
    """The position of each letter of a supported layout."""
    check_choice(op, name, layout, allowed)
    return {ch: i for i, ch in enumerate(layout)}


def _check_rank(op, ty, rank, role):
    if ty.ndim != rank:
        raise GraphError(f"{op}: {role} must be {rank}-D, got shape {ty.shape}")


# ---------------------------------------------------------------------------------------
# nn.conv2d
# ---------------------------------------------------------------------------------------
_CONV2D_DEFAULTS = {"strides": (1, 1), "padding": (0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
                    "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "",
                    "out_dtype": ""}
_CONV2D_LAYOUTS = {"NCHW": "OIHW", "NHWC": "HWIO"}


def _window_attrs(op, attrs, dims=2):
    """``(strides, dilation, pad)`` of a convolution's or a pooling's attributes over
    ``dims`` spatial axes, checked: strides and dilation at least 1, pad as the
    befores then the afters ((top, left, bottom, right) in 2-D)."""
    return (int_tuple(op, "strides", attrs["strides"], (dims,), at_least=1),
            int_tuple(op, "dilation", attrs["dilation"], (dims,), at_least=1), padding_of(op, attrs["padding"], dims))


def _windows(op, data, axes, kernel, attrs, ceil_mode=False, what="window", sizes_for="the output size"):
    """The output sizes of a window (a convolution's kernel) sliding over the spatial
    axes ``axes`` of ``data``; refused when it does not fit."""
    k = len(axes)
    strides, dilation, pad = _window_attrs(op, attrs, k)
    sizes = static_dims(op, data.shape, axes, sizes_for)
    out = [window_out(n, kk, st, d, pad[i], pad[i + k], ceil_mode)
           for i, (n, kk, st, d) in enumerate(zip(sizes, kernel, strides, dilation))]
    if min(out) < 1:
        padded = tuple(n + pad[i] + pad[i + k] for i, n in enumerate(sizes))
        raise GraphError(f"{op}: the {what} {tuple(kernel)} (dilation {dilation}) does not fit in the padded input "
                         f"{padded}")
    return out


def _conv_out_hw(op, data, axes, kh, kw, attrs):
    """The output height and width of a 2-D convolution of ``data`` (its H and W at
    ``axes``) by a ``kh`` x ``kw`` kernel; refused when the kernel does not fit."""
    oh, ow = _windows(op, data, axes, (kh, kw), attrs, what="kernel", sizes_for="the convolution's output size")
    return oh, ow


def _integer_product(data, weight, attrs) -> bool:
    """Whether a product mixes integer dtypes into an integer ``out_dtype`` (int32
    data times the uint8 or int8 weights of a quantized model, kept that narrow in the
    parameters: the compute widens each operand as it reads it)."""
    out = attrs.get("out_dtype")
    ints = [str(t.dtype).startswith(("int", "uint")) for t in (data, weight)]
    return all(ints) and out not in ("", None) and str(out).startswith("int")


def _conv_operands(op, types, attrs, layouts, spatial):
    """The checks every convolution's type makes (any number of ``spatial`` axes):
    dtypes, ranks, the layouts (``layouts``: data layout -> its kernel layout; groups
    in the first only), groups, channels and kernel sizes against the weight.
    Returns ``(data, weight, data axes, batch, output channels, kernel sizes)``."""
    data, weight = tensor_args(op, types, 2)
    if not _integer_product(data, weight, attrs):
        same_dtype(op, [data, weight])
    _check_rank(op, data, len(spatial) + 2, "data")
    _check_rank(op, weight, len(spatial) + 2, "weight")
    d = _layout_axes(op, attrs["data_layout"], tuple(layouts), "data_layout")
    want_kernel = layouts[attrs["data_layout"]]
    if attrs["kernel_layout"] != want_kernel:
        raise GraphError(f"{op}: data_layout {attrs['data_layout']!r} takes kernel_layout {want_kernel!r}, got "
                         f"{attrs['kernel_layout']!r}; transpose the weight")
    if attrs["out_layout"] not in ("", attrs["data_layout"]):
        raise GraphError(f"{op}: out_layout {attrs['out_layout']!r} differs from data_layout; only the same "
                         "layout is supported")
    k = {ch: i for i, ch in enumerate(want_kernel)}
    groups = as_int(op, "groups", attrs["groups"])
    if groups < 1:
        raise GraphError(f"{op}: groups must be >= 1, got {groups}")
    grouped_layout = next(iter(layouts))
    if groups > 1 and attrs["data_layout"] != grouped_layout:
        raise GraphError(f"{op}: grouped convolution (groups={groups}) is supported in {grouped_layout} only")
    n, c = data.shape[d["N"]], data.shape[d["C"]]
    o, i = weight.shape[k["O"]], weight.shape[k["I"]]
    kernel = tuple(weight.shape[k[x]] for x in spatial)
    if not is_static(c, o, i, *kernel):
        raise GraphError(f"{op}: the channel and kernel sizes must be known; weight {weight.shape}, data {data.shape}")
    if c != i * groups:
        raise GraphError(f"{op}: data has {c} input channels but the weight {weight.shape} with groups={groups} "
                         f"expects {i * groups} ({i} per group); check the weight's layout and groups")
    if o % groups:
        raise GraphError(f"{op}: {o} output channels are not divisible by groups={groups}")
    if attrs["channels"] is not None and attrs["channels"] != o:
        raise GraphError(f"{op}: channels={attrs['channels']} but the weight has {o} output channels")
    if attrs["kernel_size"] is not None and \
            tuple(int_tuple(op, "kernel_size", attrs["kernel_size"], (len(spatial),))) != kernel:
        raise GraphError(f"{op}: kernel_size={list(attrs['kernel_size'])} but the weight's kernel is {kernel}")
    return data, weight, d, n, o, kernel


def _conv_out(attrs, d, n, o, sizes, dtype):
    """The output type of a convolution in its data layout (``sizes``: the spatial
    axes', in the layout's order)."""
    shape = [None] * (len(sizes) + 2)
    shape[d["N"]], shape[d["C"]] = n, o
    for axis, size in zip(sorted(a for ch, a in d.items() if ch not in "NC"), sizes):
        shape[axis] = size
    return TensorType(tuple(shape), dtype)


def _conv2d_infer(types, attrs):
    op = "nn.conv2d"
    data, _, d, n, o, (kh, kw) = _conv_operands(op, types, attrs, _CONV2D_LAYOUTS, "HW")
    oh, ow = _conv_out_hw(op, data, [d["H"], d["W"]], kh, kw, attrs)
    return _conv_out(attrs, d, n, o, (oh, ow), _out_dtype(op, attrs, data.dtype))


def _conv2d_lower(inputs, attrs, out_type):
    t = topi()
    data, weight = inputs
    strides, dilation, pad = _window_attrs("nn.conv2d", attrs)
    groups = attrs["groups"]
    out_dtype = out_type.dtype
    if attrs["data_layout"] == "NHWC":
        compute = for_target(t.x86.conv2d_nhwc, t.cuda.conv2d_nhwc, t.nn.conv2d_nhwc)
        return compute(data, weight, strides, pad, dilation, out_dtype)
    if groups == 1:
        compute = for_target(t.x86.conv2d_nchw, t.cuda.conv2d_nchw, t.nn.conv2d_nchw)
        return compute(data, weight, strides, pad, dilation, out_dtype)
    channels = int(data.shape[1])
    out_channels, per_group = int(weight.shape[0]), int(weight.shape[1])
    if groups == channels and per_group == 1:
        # depthwise: topi's filter is (channels, multiplier, kh, kw); OIHW's (channels * multiplier, 1, kh, kw)
        # holds the same values in the same order
        multiplier = out_channels // channels
        if multiplier != 1:
            weight = t.reshape(weight, (channels, multiplier, int(weight.shape[2]), int(weight.shape[3])))
        compute = for_target(t.x86.depthwise_conv2d_nchw, t.cuda.depthwise_conv2d_nchw,
                              t.nn.depthwise_conv2d_nchw)
        return compute(data, weight, strides, pad, dilation, out_dtype)
    compute = for_target(t.x86.group_conv2d_nchw, t.cuda.group_conv2d_nchw, t.nn.group_conv2d_nchw)
    return compute(data, weight, strides, pad, dilation, groups, out_dtype)


register_op("nn.conv2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_conv2d_infer,
            lower=accumulate_in_float32(_conv2d_lower, cast_inputs=False),
            num_inputs=2, defaults=_CONV2D_DEFAULTS,
            doc="2-D convolution (NCHW/OIHW or NHWC/HWIO; grouped and depthwise in NCHW)")


# ---------------------------------------------------------------------------------------
# nn.contrib_conv2d_NCHWc: the channel-blocked convolution AlterOpLayout makes on CPUs
# ---------------------------------------------------------------------------------------
_OIHWIO = re.compile(r"OIHW(\d+)i(\d+)o")


def _layout_block(layout):
    """The channel block of a layout ``"NCHW{b}c"`` (``None`` for any other)."""
    return topi().nn.nchwc_layout_block(layout)


def _blocked_conv_operands(op, types, attrs, kernel_pattern, kernel_form, weight_role):
    """``(data, weight, ic_bn, oc_bn)`` of a channel-blocked convolution ``op``: two
    tensors of one dtype, 5-D data and a 6-D weight, layouts ``NCHW{i}c``, the
    kernel's ``kernel_form`` (matched by ``kernel_pattern``, its two groups the
    blocks) and ``NCHW{o}c`` blocking the channels alike."""
    data, weight = tensor_args(op, types, 2)
    same_dtype(op, [data, weight])
    _check_rank(op, data, 5, "data")
    _check_rank(op, weight, 6, weight_role)
    ic_bn, oc_bn = _layout_block(attrs["data_layout"]), _layout_block(attrs["out_layout"])
    kernel = kernel_pattern.fullmatch(attrs["kernel_layout"]) if isinstance(attrs["kernel_layout"], str) else None
    if ic_bn is None or oc_bn is None or kernel is None:
        raise GraphError(f"{op}: the layouts must be data_layout 'NCHW{{i}}c', kernel_layout {kernel_form!r} and "
                         f"out_layout 'NCHW{{o}}c', got {attrs['data_layout']!r}, {attrs['kernel_layout']!r}, "
                         f"{attrs['out_layout']!r}")
    if (int(kernel.group(1)), int(kernel.group(2))) != (ic_bn, oc_bn):
        raise GraphError(f"{op}: kernel_layout {attrs['kernel_layout']!r} does not block the channels as "
                         f"data_layout {attrs['data_layout']!r} and out_layout {attrs['out_layout']!r} do")
    return data, weight, ic_bn, oc_bn


def _conv2d_nchwc_infer(types, attrs):
    op = "nn.contrib_conv2d_NCHWc"
    data, weight, ic_bn, oc_bn = _blocked_conv_operands(op, types, attrs, _OIHWIO, "OIHW{i}i{o}o", "weight")
    if as_int(op, "groups", attrs["groups"]) != 1:
        raise GraphError(f"{op}: only groups=1 is supported; keep a grouped convolution in NCHW")
    n, c_chunks, h, w, ic = data.shape
    o_chunks, wc_chunks, kh, kw, wic, woc = weight.shape
    if ic != ic_bn or (wic, woc) != (ic_bn, oc_bn):
        raise GraphError(f"{op}: data {data.shape} and weight {weight.shape} do not have the blocks of their "
                         f"layouts ({ic_bn} input, {oc_bn} output channels per block)")
    if c_chunks != wc_chunks:
        raise GraphError(f"{op}: data has {c_chunks} input-channel blocks but the weight {weight.shape} has "
                         f"{wc_chunks}")
    oh, ow = _conv_out_hw(op, data, [2, 3], kh, kw, attrs)
    return TensorType((n, o_chunks, oh, ow, oc_bn), _out_dtype(op, attrs, data.dtype))


def _conv2d_nchwc_lower(inputs, attrs, out_type):
    t = topi()
    strides, dilation, pad = _window_attrs("nn.contrib_conv2d_NCHWc", attrs)
    compute = for_target(t.x86.conv2d_NCHWc, t.nn.conv2d_NCHWc, t.nn.conv2d_NCHWc)
    return compute(inputs[0], inputs[1], strides, pad, dilation, attrs["data_layout"], attrs["out_layout"],
                   out_type.dtype)


register_op("nn.contrib_conv2d_NCHWc", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_conv2d_nchwc_infer,
            lower=_conv2d_nchwc_lower, num_inputs=2,
            defaults=dict(_CONV2D_DEFAULTS, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c"),
            doc="2-D convolution in channel blocks: data NCHW{i}c, weight OIHW{i}i{o}o, output NCHW{o}c "
                "(what AlterOpLayout makes of nn.conv2d on CPUs)")


# ---------------------------------------------------------------------------------------
# nn.contrib_conv2d_NCHWc_winograd: the Winograd convolution AlterOpLayout makes on CPUs
# ---------------------------------------------------------------------------------------
_WINOGRAD_KERNEL = re.compile(r"WINOGRAD4x4OI(\d+)i(\d+)o")


def _conv2d_nchwc_winograd_infer(types, attrs):
    op = "nn.contrib_conv2d_NCHWc_winograd"
    data, weight, ic_bn, oc_bn = _blocked_conv_operands(op, types, attrs, _WINOGRAD_KERNEL,
                                                        "WINOGRAD4x4OI{i}i{o}o", "the transformed weight")
    strides, dilation, _pad = _window_attrs(op, attrs)
    if tuple(strides) != (1, 1) or tuple(dilation) != (1, 1) or as_int(op, "groups", attrs["groups"]) != 1:
        raise GraphError(f"{op}: Winograd's F(2x2, 3x3) needs strides (1, 1), dilation (1, 1) and groups=1, got "
                         f"strides {strides}, dilation {dilation}, groups {attrs['groups']}")
    n, c_chunks, _h, _w, ic = data.shape
    a1, a2, o_chunks, wc_chunks, wic, woc = weight.shape
    if (a1, a2) != (4, 4) or ic != ic_bn or (wic, woc) != (ic_bn, oc_bn) or c_chunks != wc_chunks:
        raise GraphError(f"{op}: data {data.shape} and the transformed weight {weight.shape} do not match: the "
                         f"weight must be [4, 4, O // {oc_bn}, {c_chunks}, {ic_bn}, {oc_bn}] "
                         "(topi.nn.winograd_weight_nchwc of the OIHW weight)")
    oh, ow = _conv_out_hw(op, data, [2, 3], 3, 3, attrs)
    return TensorType((n, o_chunks, oh, ow, oc_bn), _out_dtype(op, attrs, data.dtype))


def _conv2d_nchwc_winograd_lower(inputs, attrs, out_type):
    t = topi()
    _strides, _dilation, pad = _window_attrs("nn.contrib_conv2d_NCHWc_winograd", attrs)
    compute = for_target(t.x86.conv2d_NCHWc_winograd, t.nn.conv2d_NCHWc_winograd, t.nn.conv2d_NCHWc_winograd)
    return compute(inputs[0], inputs[1], pad, attrs["data_layout"], attrs["out_layout"], out_type.dtype)


register_op("nn.contrib_conv2d_NCHWc_winograd", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
            infer=_conv2d_nchwc_winograd_infer, lower=_conv2d_nchwc_winograd_lower, num_inputs=2,
            defaults=dict(_CONV2D_DEFAULTS, data_layout="NCHW16c", kernel_layout="WINOGRAD4x4OI16i16o",
                          out_layout="NCHW16c"),
            doc="3x3 stride-1 convolution in channel blocks by Winograd's F(2x2, 3x3): data NCHW{i}c, the weight "
                "transformed once (topi.nn.winograd_weight_nchwc), output NCHW{o}c (what AlterOpLayout makes of "
                "nn.conv2d on CPUs where tecc.topi.x86.use_winograd says so)")


# ---------------------------------------------------------------------------------------
# nn.conv3d, nn.max_pool3d, nn.avg_pool3d (video and volumetric models)
# ---------------------------------------------------------------------------------------
_CONV3D_DEFAULTS = {"strides": (1, 1, 1), "padding": (0, 0, 0), "dilation": (1, 1, 1), "groups": 1,
                    "channels": None, "kernel_size": None, "data_layout": "NCDHW", "kernel_layout": "OIDHW",
                    "out_layout": "", "out_dtype": ""}
_CONV3D_LAYOUTS = {"NCDHW": "OIDHW", "NDHWC": "DHWIO"}


def _conv3d_infer(types, attrs):
    op = "nn.conv3d"
    data, _, d, n, o, kernel = _conv_operands(op, types, attrs, _CONV3D_LAYOUTS, "DHW")
    sizes = _windows(op, data, [d["D"], d["H"], d["W"]], kernel, attrs, what="kernel")
    return _conv_out(attrs, d, n, o, sizes, _out_dtype(op, attrs, data.dtype))


def _conv3d_lower(inputs, attrs, out_type):
    t = topi()
    data, weight = inputs
    strides, dilation, pad = _window_attrs("nn.conv3d", attrs, 3)
    if attrs["data_layout"] == "NDHWC":
        compute = for_target(t.x86.conv3d_ndhwc, t.cuda.conv3d_ndhwc, t.nn.conv3d_ndhwc)
        return compute(data, weight, strides, pad, dilation, 1, out_type.dtype)
    compute = for_target(t.x86.conv3d_ncdhw, t.cuda.conv3d_ncdhw, t.nn.conv3d_ncdhw)
    return compute(data, weight, strides, pad, dilation, attrs["groups"], out_type.dtype)


register_op("nn.conv3d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_conv3d_infer,
            lower=accumulate_in_float32(_conv3d_lower, cast_inputs=False), num_inputs=2, defaults=_CONV3D_DEFAULTS,
            doc="3-D convolution (NCDHW/OIDHW, grouped too, or NDHWC/DHWIO)")

_POOL3D_DEFAULTS = {"pool_size": (1, 1, 1), "strides": (1, 1, 1), "dilation": (1, 1, 1), "padding": (0, 0, 0),
                    "layout": "NCDHW", "out_layout": "", "ceil_mode": False}


def _pool3d_infer(op):
    def infer(types, attrs):
        data = tensor_arg(op, types, 0)
        _check_rank(op, data, 5, "data")
        d = _layout_axes(op, attrs["layout"], ("NCDHW", "NDHWC"))
        if attrs["out_layout"] not in ("", attrs["layout"]):
            raise GraphError(f"{op}: out_layout {attrs['out_layout']!r} differs from layout; only the same layout "
                             "is supported")
        kernel = int_tuple(op, "pool_size", attrs["pool_size"], (3,), at_least=1)
        axes = [d["D"], d["H"], d["W"]]
        out = list(data.shape)
        for axis, size in zip(axes, _windows(op, data, axes, kernel, attrs, bool(attrs["ceil_mode"]))):
            out[axis] = size
        return TensorType(out, data.dtype)

    return infer


# ---------------------------------------------------------------------------------------
# nn.conv2d_transpose
# ---------------------------------------------------------------------------------------
_CONV2D_T_DEFAULTS = {"strides": (1, 1), "padding": (0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
                      "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "IOHW", "out_layout": "",
                      "output_padding": (0, 0), "out_dtype": ""}


def _transpose_operands(op, types, attrs, layout):
    """The data and weight of a transposed convolution in ``layout`` (channels first)
    with a weight whose first two axes are I and O, checked."""
    data, weight = tensor_args(op, types, 2)
    same_dtype(op, [data, weight])
    _check_rank(op, data, len(layout), "data")
    _check_rank(op, weight, len(layout), "weight")
    check_choice(op, "data_layout", attrs["data_layout"], (layout,))
    check_choice(op, "kernel_layout", attrs["kernel_layout"], ("IO" + layout[2:],))
    if attrs["out_layout"] not in ("", layout):
        raise GraphError(f"{op}: out_layout {attrs['out_layout']!r} is not supported; use {layout}")
    return data, weight


def _transpose_infer(op, layout, grouped):
    """The type of a transposed convolution in ``layout`` (channels first; ``grouped``:
    groups allowed)."""
    k = len(layout) - 2

    def infer(types, attrs):
        data, weight = _transpose_operands(op, types, attrs, layout)
        strides, dilation, pad = _window_attrs(op, attrs, k)
        out_pad = int_tuple(op, "output_padding", attrs["output_padding"], (k,), at_least=0)
        groups = as_int(op, "groups", attrs["groups"])
        if not grouped and groups != 1:
            raise GraphError(f"{op}: groups={attrs['groups']}; grouped {k}-D transposed convolutions are not "
                             "supported")
        if groups < 1:
            raise GraphError(f"{op}: groups must be >= 1, got {groups}")
        n, c = data.shape[:2]
        i, o_per_group = weight.shape[:2]
        kernel = weight.shape[2:]
        if not is_static(c, i, o_per_group, *kernel):
            raise GraphError(f"{op}: the channel and kernel sizes must be known; weight {weight.shape}")
        same_dim(op, c, i, f"data's channels must equal the weight's first (input-channel) dimension in IO{layout[2:]}")
        if c % groups:
            raise GraphError(f"{op}: {c} input channels are not divisible by groups={groups}")
        if any(p >= st and p >= d for p, st, d in zip(out_pad, strides, dilation)):
            raise GraphError(f"{op}: output_padding {list(out_pad)} must be smaller than the strides {list(strides)} "
                             f"or the dilation {list(dilation)}")
        o = o_per_group * groups
        if attrs["channels"] is not None and attrs["channels"] != o:
            raise GraphError(f"{op}: channels={attrs['channels']} but the weight gives {o} output channels")
        sizes = static_dims(op, data.shape, list(range(2, 2 + k)), "the output size")
        out = [(size - 1) * st - pad[a] - pad[a + k] + d * (kk - 1) + 1 + extra
               for a, (size, st, d, kk, extra) in enumerate(zip(sizes, strides, dilation, kernel, out_pad))]
        if min(out) < 1:
            raise GraphError(f"{op}: the padding {list(pad)} leaves an empty output {tuple(out)}")
        return TensorType((n, o, *out), _out_dtype(op, attrs, data.dtype))

    return infer


def _transpose_arguments(op, inputs, attrs, k):
    """``(data, weight, strides, pad, output_padding)`` of a transposed convolution over
    ``k`` spatial axes, a dilated weight spread out (zeros between its taps)."""
    data, weight = inputs
    strides, dilation, pad = _window_attrs(op, attrs, k)
    if any(d != 1 for d in dilation):
        weight = topi().nn.dilate(weight, (1, 1) + dilation)
    return data, weight, strides, pad, int_tuple(op, "output_padding", attrs["output_padding"], (k,))


def _conv2d_transpose_lower(inputs, attrs, out_type):
    t = topi()
    data, weight, strides, pad, out_pad = _transpose_arguments("nn.conv2d_transpose", inputs, attrs, 2)
    if attrs["groups"] == 1:
        compute = for_target(t.x86.conv2d_transpose_nchw, t.cuda.conv2d_transpose_nchw,
                              t.nn.conv2d_transpose_nchw)
        return compute(data, weight, strides, pad, out_type.dtype, out_pad)
    compute = for_target(t.x86.group_conv2d_transpose_nchw, t.cuda.group_conv2d_transpose_nchw,
                          t.nn.group_conv2d_transpose_nchw)
    return compute(data, weight, strides, pad, out_type.dtype, out_pad, attrs["groups"])


register_op("nn.conv2d_transpose", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
            infer=_transpose_infer("nn.conv2d_transpose", "NCHW", grouped=True),
            lower=accumulate_in_float32(_conv2d_transpose_lower, cast_inputs=False), num_inputs=2,
            defaults=_CONV2D_T_DEFAULTS,
            doc="2-D transposed convolution (NCHW data, IOHW weight)")


_CONV3D_T_DEFAULTS = {"strides": (1, 1, 1), "padding": (0, 0, 0), "dilation": (1, 1, 1), "groups": 1,
                      "channels": None, "kernel_size": None, "data_layout": "NCDHW", "kernel_layout": "IODHW",
                      "out_layout": "", "output_padding": (0, 0, 0), "out_dtype": ""}


def _conv3d_transpose_lower(inputs, attrs, out_type):
    t = topi()
    data, weight, strides, pad, out_pad = _transpose_arguments("nn.conv3d_transpose", inputs, attrs, 3)
    compute = for_target(t.x86.conv3d_transpose_ncdhw, t.cuda.conv3d_transpose_ncdhw, t.nn.conv3d_transpose_ncdhw)
    return compute(data, weight, strides, pad, out_type.dtype, out_pad)


register_op("nn.conv3d_transpose", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
            infer=_transpose_infer("nn.conv3d_transpose", "NCDHW", grouped=False),
            lower=accumulate_in_float32(_conv3d_transpose_lower, cast_inputs=False), num_inputs=2,
            defaults=_CONV3D_T_DEFAULTS, doc="3-D transposed convolution (NCDHW data, IODHW weight)")


# ---------------------------------------------------------------------------------------
# nn.dense, nn.matmul, nn.batch_matmul
# ---------------------------------------------------------------------------------------
def _dense_infer(types, attrs):
    op = "nn.dense"
    data, weight = tensor_args(op, types, 2)
    if not _integer_product(data, weight, attrs):
        same_dtype(op, [data, weight])
    if data.ndim < 1:
        raise GraphError(f"{op}: data must have at least 1 dimension, got a scalar")
    _check_rank(op, weight, 2, "weight (units, in_features)")
    same_dim(op, data.shape[-1], weight.shape[1], f"data {data.shape} and weight {weight.shape} disagree on the "
             "reduced (last) dimension")
    units = attrs["units"]
    if units is not None and units != weight.shape[0]:
        raise GraphError(f"{op}: units={units} but the weight has {weight.shape[0]} rows")
    return TensorType(data.shape[:-1] + (weight.shape[0],), _out_dtype(op, attrs, data.dtype))


def _dense_lower(inputs, attrs, out_type):
    t = topi()
    data, weight = inputs
    if len(data.shape) == 2:
        compute = for_target(t.x86.dense, t.cuda.dense, t.nn.dense)
        return compute(data, weight, None, out_type.dtype)
    # other ranks: the product over the last axis with the leading axes kept (one kernel, no reshape after it)
    return t.matmul_broadcast(data, t.transpose(weight, (1, 0)), out_type.dtype)


register_op("nn.dense", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_dense_infer,
            lower=accumulate_in_float32(_dense_lower, cast_inputs=False),
            num_inputs=2, defaults={"units": None, "out_dtype": ""}, fuse_inputs=True,
            doc="``data @ weight.T`` (weight is (units, in_features))")


_PACKED_WEIGHT = re.compile(r"NC(\d+)n")


def _dense_pack_infer(types, attrs):
    op = "nn.contrib_dense_pack"
    data, weight = tensor_args(op, types, 2)
    same_dtype(op, [data, weight])
    _check_rank(op, data, 2, "data [M, K]")
    _check_rank(op, weight, 3, "the packed weight [N / nr, K, nr]")
    layout = attrs["weight_layout"]
    m = _PACKED_WEIGHT.fullmatch(layout) if isinstance(layout, str) else None
    if m is None or int(m.group(1)) != weight.shape[2]:
        raise GraphError(f"{op}: weight_layout {layout!r} must be 'NC{{nr}}n' with nr the packed weight's last "
                         f"dimension ({weight.shape[2]}): the weight is [N / nr, K, nr]")
    same_dim(op, data.shape[1], weight.shape[1], f"data {data.shape} and the packed weight {weight.shape} disagree "
             "on K (the weight is [N / nr, K, nr])")
    return TensorType((data.shape[0], weight.shape[0] * weight.shape[2]), _out_dtype(op, attrs, data.dtype))


def _dense_pack_lower(inputs, attrs, out_type):
    t = topi()
    if "cpu" not in target_keys():
        raise GraphError("nn.contrib_dense_pack: a weight packed in NC{nr}n panels is a CPU layout "
                         "(AlterOpLayout makes it for CPU targets); build for llvm, or use nn.dense")
    return t.x86.dense_pack_prepacked(inputs[0], inputs[1], None, out_type.dtype)


register_op("nn.contrib_dense_pack", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_dense_pack_infer,
            lower=_dense_pack_lower, num_inputs=2, defaults={"weight_layout": "NC16n", "out_dtype": ""},
            doc="``data @ weight.T`` with the weight packed ahead in column panels, [N / nr, K, nr] (what "
                "AlterOpLayout makes of nn.dense on CPUs where the layer packs its weight)")


def _matmul_infer(types, attrs):
    op = "nn.matmul"
    a, b = tensor_args(op, types, 2)
    same_dtype(op, [a, b])
    _check_rank(op, a, 2, "tensor_a")
    _check_rank(op, b, 2, "tensor_b")
    m, ka = (a.shape[1], a.shape[0]) if attrs["transpose_a"] else a.shape
    kb, n = (b.shape[1], b.shape[0]) if attrs["transpose_b"] else b.shape
    same_dim(op, ka, kb, f"tensor_a {a.shape} and tensor_b {b.shape} disagree on the reduced dimension "
             f"(transpose_a={attrs['transpose_a']}, transpose_b={attrs['transpose_b']})")
    if attrs["units"] is not None and attrs["units"] != n:
        raise GraphError(f"{op}: units={attrs['units']} but the product has {n} columns")
    return TensorType((m, n), _out_dtype(op, attrs, a.dtype))


def _matmul_lower(inputs, attrs, out_type):
    t = topi()
    compute = for_target(t.x86.matmul_default, t.nn.matmul, t.nn.matmul)
    return compute(inputs[0], inputs[1], None, out_type.dtype, bool(attrs["transpose_a"]),
                   bool(attrs["transpose_b"]))


register_op("nn.matmul", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_matmul_infer,
            lower=accumulate_in_float32(_matmul_lower, cast_inputs=False),
            num_inputs=2, defaults={"units": None, "out_dtype": "", "transpose_a": False, "transpose_b": False},
            fuse_inputs=True,
            doc="2-D matrix product with optional transposes")


def _batch_matmul_infer(types, attrs):
    op = "nn.batch_matmul"
    a, b = tensor_args(op, types, 2)
    same_dtype(op, [a, b])
    _check_rank(op, a, 3, "tensor_a")
    _check_rank(op, b, 3, "tensor_b")
    ba, bb = a.shape[0], b.shape[0]
    if ba != bb and ba != 1 and bb != 1:
        raise GraphError(f"{op}: the batch sizes {ba} and {bb} differ and neither is 1")
    batch = bb if ba == 1 else ba
    m, ka = (a.shape[2], a.shape[1]) if attrs["transpose_a"] else (a.shape[1], a.shape[2])
    kb, n = (b.shape[2], b.shape[1]) if attrs["transpose_b"] else (b.shape[1], b.shape[2])
    same_dim(op, ka, kb, f"tensor_a {a.shape} and tensor_b {b.shape} disagree on the reduced dimension "
             f"(transpose_a={attrs['transpose_a']}, transpose_b={attrs['transpose_b']})")
    return TensorType((batch, m, n), _out_dtype(op, attrs, a.dtype))


def _batch_matmul_lower(inputs, attrs, out_type):
    t = topi()
    compute = for_target(t.x86.batch_matmul, t.cuda.batch_matmul, t.nn.batch_matmul)
    return compute(inputs[0], inputs[1], None, out_type.dtype, bool(attrs["transpose_a"]),
                   bool(attrs["transpose_b"]))


register_op("nn.batch_matmul", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_batch_matmul_infer,
            lower=accumulate_in_float32(_batch_matmul_lower, cast_inputs=False), num_inputs=2,
            fuse_inputs=True,
            defaults={"out_dtype": "", "transpose_a": False, "transpose_b": True},
            doc="batched matrix product of 3-D tensors (tensor_b transposed by default, as Relay)")


# ---------------------------------------------------------------------------------------
# per-channel operators: bias_add, prelu, batch_norm, instance_norm, layer_norm, lrn
# ---------------------------------------------------------------------------------------
def _channel_vector(op, data, vec, axis, role):
    """Check that ``vec`` is 1-D with one entry per channel of ``data`` along ``axis``."""
    if vec.ndim != 1:
        raise GraphError(f"{op}: {role} must be 1-D (one value per channel), got shape {vec.shape}")
    same_dim(op, vec.shape[0], data.shape[axis], f"{role} has {vec.shape[0]} entries but data {data.shape} has "
             f"{data.shape[axis]} channels along axis {axis}")


def _bias_add_infer(types, attrs):
    op = "nn.bias_add"
    data, bias = tensor_args(op, types, 2)
    same_dtype(op, [data, bias])
    axis = normalize_axis(op, attrs["axis"], data.ndim)
    _channel_vector(op, data, bias, axis, "bias")
    return data


def _per_channel(t, vec, axis, ndim):
    """``vec`` (1-D) shaped to broadcast along ``axis`` of a rank-``ndim`` tensor."""
    trailing = ndim - axis - 1
    return t.expand_dims(vec, 1, trailing) if trailing else vec


def _bias_add_lower(inputs, attrs, out_type):
    t = topi()
    data, bias = inputs
    axis = normalize_axis("nn.bias_add", attrs["axis"], len(data.shape))
    return t.add(data, _per_channel(t, bias, axis, len(data.shape)))


register_op("nn.bias_add", pattern=OpPattern.BROADCAST, infer=_bias_add_infer, lower=_bias_add_lower,
            num_inputs=2, defaults={"axis": 1}, doc="adds a 1-D bias along ``axis``")


def _prelu_infer(types, attrs):
    op = "nn.prelu"
    data, alpha = tensor_args(op, types, 2)
    same_dtype(op, [data, alpha])
    axis = normalize_axis(op, attrs["axis"], data.ndim)
    _channel_vector(op, data, alpha, axis, "alpha")
    return data


def _prelu_lower(inputs, attrs, out_type):
    axis = normalize_axis("nn.prelu", attrs["axis"], len(inputs[0].shape))
    return topi().nn.prelu(inputs[0], inputs[1], axis)


register_op("nn.prelu", pattern=OpPattern.BROADCAST, infer=_prelu_infer, lower=_prelu_lower, num_inputs=2,
            defaults={"axis": 1}, doc="leaky relu with a slope per channel")


def _leaky_relu_infer(types, attrs):
    data = tensor_arg("nn.leaky_relu", types, 0)
    if not isinstance(attrs["alpha"], (int, float)) or isinstance(attrs["alpha"], bool):
        raise GraphError(f"nn.leaky_relu: alpha must be a number, got {attrs['alpha']!r}")
    return data


register_op("nn.leaky_relu", pattern=OpPattern.ELEMWISE, infer=_leaky_relu_infer,
            lower=lambda inputs, attrs, out_type: topi().nn.leaky_relu(inputs[0], float(attrs["alpha"])),
            num_inputs=1, defaults={"alpha": 0.01}, inplace=True, doc="``x if x > 0 else alpha * x``")


def _norm_attrs_check(op, attrs):
    eps = attrs["epsilon"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps < 0:
        raise GraphError(f"{op}: epsilon must be a non-negative number, got {eps!r}")


_NORM_DEFAULTS = {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True}


def _norm_infer_args(op, types, attrs, roles, min_ndim, too_few, batch_first=False):
    """What every normalization's type inference checks: ``data`` and the vectors
    ``roles`` after it, of one dtype; a valid epsilon; ``data`` of at least
    ``min_ndim`` axes (else ``too_few``, formatted with ``shape``); with
    ``batch_first``, a normalized axis other than the batch axis 0; each vector as
    long as ``data`` along the normalized axis.  Returns ``(args, axis)``."""
    args = tensor_args(op, types, 1 + len(roles))
    data = args[0]
    same_dtype(op, args)
    _norm_attrs_check(op, attrs)
    if data.ndim < min_ndim:
        raise GraphError(f"{op}: {too_few.format(shape=data.shape)}")
    axis = normalize_axis(op, attrs["axis"], data.ndim)
    if batch_first and axis == 0:
        raise GraphError(f"{op}: axis 0 is the batch axis; the channel axis must be another one")
    for role, ty in zip(roles, args[1:]):
        _channel_vector(op, data, ty, axis, role)
    return args, axis


def _batch_norm_infer(types, attrs):
    args, _ = _norm_infer_args("nn.batch_norm", types, attrs, ("gamma", "beta", "moving_mean", "moving_var"), 1,
                               "data is a scalar; it needs a channel axis")
    return TupleType([args[0], args[3], args[4]])


def _batch_norm_lower(inputs, attrs, out_type):
    data, gamma, beta, mean, var = inputs
    axis = normalize_axis("nn.batch_norm", attrs["axis"], len(data.shape))
    return topi().nn.batch_norm(data, gamma, beta, mean, var, axis, float(attrs["epsilon"]),
                                bool(attrs["center"]), bool(attrs["scale"]))


register_op("nn.batch_norm", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_batch_norm_infer,
            lower=_batch_norm_lower, num_inputs=5, defaults=_NORM_DEFAULTS,
            doc="inference batch normalization with the moving statistics; a 3-tuple (out, mean, var) as Relay's")


def _instance_norm_infer(types, attrs):
    args, _ = _norm_infer_args("nn.instance_norm", types, attrs, ("gamma", "beta"), 3,
                               "data must have a batch, a channel and at least one more axis, got {shape}",
                               batch_first=True)
    return args[0]


def _instance_norm_lower(inputs, attrs, out_type):
    data, gamma, beta = inputs
    ndim = len(data.shape)
    axis = normalize_axis("nn.instance_norm", attrs["axis"], ndim)
    # one group per channel: normalized over the other non-batch axes, scaled per channel
    others = [a for a in range(1, ndim) if a != axis]
    return topi().nn.group_norm(data, gamma if attrs["scale"] else None, beta if attrs["center"] else None,
                                int(data.shape[axis]), axis, others, float(attrs["epsilon"]))


register_op("nn.instance_norm", pattern=OpPattern.OPAQUE, infer=_instance_norm_infer,
            lower=accumulate_in_float32(_instance_norm_lower),
            num_inputs=3, defaults=_NORM_DEFAULTS,
            doc="each instance and channel normalized over the other axes, then scaled per channel")


def _layer_norm_infer(types, attrs):
    args, _ = _norm_infer_args("nn.layer_norm", types, attrs, ("gamma", "beta"), 1,
                               "data is a scalar; there is no axis to normalize")
    return args[0]


def _layer_norm_lower(inputs, attrs, out_type):
    data, gamma, beta = inputs
    axis = normalize_axis("nn.layer_norm", attrs["axis"], len(data.shape))
    return topi().nn.layer_norm(data, gamma if attrs["scale"] else None, beta if attrs["center"] else None,
                                axis, float(attrs["epsilon"]))


register_op("nn.layer_norm", pattern=OpPattern.OPAQUE, infer=_layer_norm_infer,
            lower=accumulate_in_float32(_layer_norm_lower),
            num_inputs=3, defaults=dict(_NORM_DEFAULTS, axis=-1),
            doc="normalized over ``axis``, then scaled and shifted along it")


def _lrn_infer(types, attrs):
    op = "nn.lrn"
    data = tensor_arg(op, types, 0)
    normalize_axis(op, attrs["axis"], data.ndim)
    size = as_int(op, "size", attrs["size"])
    if size < 1:
        raise GraphError(f"{op}: size must be >= 1, got {size}")
    for name in ("alpha", "beta", "bias"):
        if isinstance(attrs[name], bool) or not isinstance(attrs[name], (int, float)):
            raise GraphError(f"{op}: {name} must be a number, got {attrs[name]!r}")
    return data


def _lrn_lower(inputs, attrs, out_type):
    axis = normalize_axis("nn.lrn", attrs["axis"], len(inputs[0].shape))
    return topi().nn.lrn(inputs[0], attrs["size"], axis, float(attrs["alpha"]), float(attrs["beta"]),
                         float(attrs["bias"]))


register_op("nn.lrn", pattern=OpPattern.OPAQUE, infer=_lrn_infer, lower=accumulate_in_float32(_lrn_lower),
            num_inputs=1,
            defaults={"size": 5, "axis": 1, "bias": 2.0, "alpha": 1e-5, "beta": 0.75},
            doc="local response normalization across ``size`` channels")


# ---------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------
def _softmax_infer(name):
    def infer(types, attrs):
        data = tensor_arg(name, types, 0)
        if data.ndim < 1:
            raise GraphError(f"{name}: data is a scalar; it needs an axis")
        normalize_axis(name, attrs["axis"], data.ndim)
        return data

    return infer


def _softmax_lower(fn_name):
    def lower(inputs, attrs, out_type):
        axis = normalize_axis(fn_name, attrs["axis"], len(inputs[0].shape))
        return getattr(topi().nn, fn_name)(inputs[0], axis)

    return lower


register_op("nn.softmax", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_softmax_infer("nn.softmax"),
            lower=accumulate_in_float32(_softmax_lower("softmax")), num_inputs=1, defaults={"axis": -1},
            doc="softmax along ``axis``")
register_op("nn.log_softmax", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_softmax_infer("nn.log_softmax"),
            lower=accumulate_in_float32(_softmax_lower("log_softmax")), num_inputs=1, defaults={"axis": -1},
            doc="log of the softmax along ``axis``")


# ---------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------
_POOL_DEFAULTS = {"pool_size": (1, 1), "strides": (1, 1), "dilation": (1, 1), "padding": (0, 0),
                  "layout": "NCHW", "out_layout": "", "ceil_mode": False}


def _pool_layout(op, data, layout):
    """The position of N, C, H and W in a pooling's ``layout``: NCHW, NHWC, or the
    channel blocks NCHW{b}c (5-D) that AlterOpLayout keeps between convolutions."""
    block = _layout_block(layout)
    if block is None:
        if layout not in ("NCHW", "NHWC"):
            raise GraphError(f"{op}: attribute 'layout' = {layout!r} is not one of 'NCHW', 'NHWC' or 'NCHW{{b}}c' "
                             "(channel blocks, e.g. 'NCHW8c')")
        _check_rank(op, data, 4, "data")
        return _layout_axes(op, layout, ("NCHW", "NHWC"))
    _check_rank(op, data, 5, "data")
    if data.shape[4] != block:
        raise GraphError(f"{op}: layout {layout!r} needs {block} channels in the last axis, but data is {data.shape}")
    return {"N": 0, "C": 1, "H": 2, "W": 3}


def _pool_infer(op):
    def infer(types, attrs):
        data = tensor_arg(op, types, 0)
        d = _pool_layout(op, data, attrs["layout"])
        if attrs["out_layout"] not in ("", attrs["layout"]):
            raise GraphError(f"{op}: out_layout {attrs['out_layout']!r} differs from layout; only the same layout "
                             "is supported")
        kernel = int_tuple(op, "pool_size", attrs["pool_size"], (2,), at_least=1)
        strides, dilation, pad = _window_attrs(op, attrs)
        h, w = static_dims(op, data.shape, [d["H"], d["W"]], "the pooled size")
        out = list(data.shape)
        for k, (size, axis) in enumerate(((h, d["H"]), (w, d["W"]))):
            window = (kernel[k] - 1) * dilation[k] + 1
            if size + pad[k] + pad[k + 2] < window:
                raise GraphError(f"{op}: the window {window} does not fit in the padded input "
                                 f"{size + pad[k] + pad[k + 2]} along {attrs['layout'][axis]}")
            out[axis] = window_out(size, kernel[k], strides[k], dilation[k], pad[k], pad[k + 2],
                                   bool(attrs["ceil_mode"]))
        return TensorType(out, data.dtype)

    return infer


def _pool_lower(pool_type, dims=2):
    def lower(inputs, attrs, out_type):
        op = f"nn.{pool_type}_pool{dims}d"
        kernel = int_tuple(op, "pool_size", attrs["pool_size"], (dims,))
        strides, dilation, pad = _window_attrs(op, attrs, dims)
        pool = topi().nn.pool2d if dims == 2 else topi().nn.pool3d
        return pool(inputs[0], kernel, strides, dilation, pad, pool_type, bool(attrs["ceil_mode"]), attrs["layout"],
                    bool(attrs.get("count_include_pad", True)))

    return lower


register_op("nn.max_pool2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_pool_infer("nn.max_pool2d"),
            lower=_pool_lower("max"), num_inputs=1, defaults=_POOL_DEFAULTS, doc="2-D max pooling")
register_op("nn.avg_pool2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_pool_infer("nn.avg_pool2d"),
            lower=accumulate_in_float32(_pool_lower("avg")), num_inputs=1,
            defaults=dict(_POOL_DEFAULTS, count_include_pad=False),
            doc="2-D average pooling")
register_op("nn.max_pool3d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_pool3d_infer("nn.max_pool3d"),
            lower=_pool_lower("max", 3), num_inputs=1, defaults=_POOL3D_DEFAULTS, doc="3-D max pooling")
register_op("nn.avg_pool3d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_pool3d_infer("nn.avg_pool3d"),
            lower=accumulate_in_float32(_pool_lower("avg", 3)), num_inputs=1,
            defaults=dict(_POOL3D_DEFAULTS, count_include_pad=False), doc="3-D average pooling")


def _global_pool_infer(op):
    def infer(types, attrs):
        data = tensor_arg(op, types, 0)
        d = _pool_layout(op, data, attrs["layout"])
        if attrs["out_layout"] not in ("", attrs["layout"]):
            raise GraphError(f"{op}: out_layout {attrs['out_layout']!r} differs from layout; only the same layout "
                             "is supported")
        out = list(data.shape)
        out[d["H"]] = out[d["W"]] = 1
        return TensorType(out, data.dtype)

    return infer


def _global_pool_lower(pool_type):
    def lower(inputs, attrs, out_type):
        return topi().nn.global_pool(inputs[0], pool_type, attrs["layout"])

    return lower


for _kind in ("avg", "max"):
    _lower = _global_pool_lower(_kind)
    register_op(f"nn.global_{_kind}_pool2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                infer=_global_pool_infer(f"nn.global_{_kind}_pool2d"),
                lower=accumulate_in_float32(_lower) if _kind == "avg" else _lower,
                num_inputs=1, defaults={"layout": "NCHW", "out_layout": ""},
                doc=f"{_kind} over the whole of H and W")


# ---------------------------------------------------------------------------------------
# nn.pad, nn.dropout, nn.batch_flatten
# ---------------------------------------------------------------------------------------
def _pad_widths(op, pad_width, ndim):
    """``pad_width`` as ``ndim`` pairs (before, after) of non-negative ints."""
    if not isinstance(pad_width, tuple) or len(pad_width) != ndim:
        raise GraphError(f"nn.pad: pad_width must hold one (before, after) pair per axis ({ndim}), got "
                         f"{pad_width!r}")
    pairs = []
    for axis, pair in enumerate(pad_width):
        pair = int_tuple(op, f"pad_width[{axis}]", pair, (2,), at_least=0)
        pairs.append(pair)
    return pairs


def _pad_infer(types, attrs):
    op = "nn.pad"
    data = tensor_arg(op, types, 0)
    mode = check_choice(op, "pad_mode", attrs["pad_mode"], ("constant", "edge", "reflect"))
    pairs = _pad_widths(op, attrs["pad_width"], data.ndim)
    if isinstance(attrs["pad_value"], bool) or not isinstance(attrs["pad_value"], (int, float)):
        raise GraphError(f"{op}: pad_value must be a number, got {attrs['pad_value']!r}")
    out = []
    for axis, (d, (before, after)) in enumerate(zip(data.shape, pairs)):
        if before == after == 0:
            out.append(d)
            continue
        (d,) = static_dims(op, data.shape, [axis], "padding")
        if mode == "reflect" and max(before, after) >= d:
            raise GraphError(f"{op}: reflect padding of {max(before, after)} along axis {axis} needs more than that "
                             f"many elements, the axis has {d}")
        if mode == "edge" and d == 0:
            raise GraphError(f"{op}: edge padding of the empty axis {axis}")
        out.append(d + before + after)
    return TensorType(out, data.dtype)


def _pad_lower(inputs, attrs, out_type):
    t = topi()
    data = inputs[0]
    before = [p[0] for p in attrs["pad_width"]]
    after = [p[1] for p in attrs["pad_width"]]
    mode = attrs["pad_mode"]
    if mode == "constant":
        return t.nn.pad(data, before, after, float(attrs["pad_value"]))
    if mode == "edge":
        return t.nn.edge_pad(data, before, after)
    return t.nn.mirror_pad(data, before, after, "REFLECT")


register_op("nn.pad", pattern=OpPattern.INJECTIVE, infer=_pad_infer, lower=_pad_lower, num_inputs=1,
            defaults={"pad_width": REQUIRED, "pad_value": 0.0, "pad_mode": "constant"},
            doc="padding per axis ((before, after) pairs): constant, edge or reflect")


def _dropout_infer(types, attrs):
    op = "nn.dropout"
    data = tensor_arg(op, types, 0)
    rate = attrs["rate"]
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
        raise GraphError(f"{op}: rate must be a number in [0, 1), got {rate!r}")
    return TupleType([data, data])


def _dropout_lower(inputs, attrs, out_type):
    # inference: the data unchanged, and a mask of ones
    t = topi()
    data = inputs[0]
    return [t.identity(data), t.full_like(data, 1.0)]


register_op("nn.dropout", pattern=OpPattern.OPAQUE, infer=_dropout_infer, lower=_dropout_lower, num_inputs=1,
            defaults={"rate": 0.5}, doc="inference dropout: (data, mask of ones), a 2-tuple as Relay's")


# ---------------------------------------------------------------------------------------
# depth_to_space, space_to_depth
# ---------------------------------------------------------------------------------------
def _block_infer(op):
    def infer(types, attrs):
        data = tensor_arg(op, types, 0)
        _check_rank(op, data, 4, "data")
        axes = _layout_axes(op, attrs["layout"], ("NCHW", "NHWC"))
        bs = as_int(op, "block_size", attrs["block_size"])
        if bs < 1:
            raise GraphError(f"{op}: block_size must be >= 1, got {bs}")
        c, h, w = static_dims(op, data.shape, [axes["C"], axes["H"], axes["W"]], "moving blocks")
        shape = list(data.shape)
        check_choice(op, "mode", attrs["mode"], ("DCR", "CRD"))
        if op == "nn.depth_to_space":
            if c % (bs * bs):
                raise GraphError(f"{op}: {c} channels are not a multiple of block_size**2 = {bs * bs}")
            shape[axes["C"]], shape[axes["H"]], shape[axes["W"]] = c // (bs * bs), h * bs, w * bs
        else:
            if h % bs or w % bs:
                raise GraphError(f"{op}: height {h} and width {w} must be multiples of block_size {bs}")
            shape[axes["C"]], shape[axes["H"]], shape[axes["W"]] = c * bs * bs, h // bs, w // bs
        return TensorType(shape, data.dtype)

    return infer


def _block_lower(op):
    def lower(inputs, attrs, out_type):
        # topi names ONNX's CRD mode (PyTorch's pixel_shuffle / pixel_unshuffle) "CDR"
        mode = "CDR" if attrs["mode"] == "CRD" else attrs["mode"]
        return getattr(topi().nn, op)(inputs[0], attrs["block_size"], attrs["layout"], mode)

    return lower


register_op("nn.depth_to_space", pattern=OpPattern.INJECTIVE, infer=_block_infer("nn.depth_to_space"),
            lower=_block_lower("depth_to_space"), num_inputs=1,
            defaults={"block_size": REQUIRED, "layout": "NCHW", "mode": "DCR"},
            doc="channels made block_size x block_size blocks of pixels (mode DCR, or CRD: PyTorch's pixel_shuffle)")
register_op("nn.space_to_depth", pattern=OpPattern.INJECTIVE, infer=_block_infer("nn.space_to_depth"),
            lower=_block_lower("space_to_depth"), num_inputs=1,
            defaults={"block_size": REQUIRED, "layout": "NCHW", "mode": "DCR"},
            doc="each block_size x block_size block of pixels made channels (mode DCR, or CRD: PyTorch's "
                "pixel_unshuffle; the inverse of depth_to_space in the same mode)")


def _batch_flatten_infer(types, attrs):
    op = "nn.batch_flatten"
    data = tensor_arg(op, types, 0)
    if data.ndim < 1:
        raise GraphError(f"{op}: data is a scalar; it needs a batch axis")
    rest = static_dims(op, data.shape, range(1, data.ndim), "flattening")
    size = 1
    for d in rest:
        size *= d
    return TensorType((data.shape[0], size), data.dtype)


register_op("nn.batch_flatten", pattern=OpPattern.INJECTIVE, infer=_batch_flatten_infer,
            lower=lambda inputs, attrs, out_type: topi().nn.flatten(inputs[0]), num_inputs=1,
            doc="(batch, everything else)")
