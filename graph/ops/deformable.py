"""Deformable convolution (Relay's ``nn.deformable_conv2d``): what ONNX's
``DeformConv`` becomes.

The operands are ``data`` (NCHW), ``offset`` ``[N, deformable_groups * KH * KW * 2,
OH, OW]``, ``weight`` (OIHW) and, beyond Relay, an optional fourth one, the ``mask``
``[N, deformable_groups * KH * KW, OH, OW]`` of DCNv2 (ONNX's ``mask``).  The
attributes are Relay's, plus ``partial_edges``: False (Relay, TVM) reads 0 at a
sampling point outside the image, True (ONNX, torchvision) still reads the edge
pixels of a point less than a pixel outside.  It lowers to
:func:`tecc.topi.nn.deformable_conv2d_nchw`, whose CPU and CUDA schedules the
registry picks; element-wise operators after it fuse into its kernel.
"""
from __future__ import annotations

from ..ir import GraphError, TensorType
from ..op import OpPattern, register_op
from ._util import (
    HALF_FLOATS, accumulate_in_float32, as_int, check_choice, check_dtype, int_tuple, is_static, padding_of, same_dim,
    same_dtype, static_dims, tensor_args, topi, window_out,
)

OP = "nn.deformable_conv2d"

_DEFAULTS = {"strides": (1, 1), "padding": (0, 0), "dilation": (1, 1), "deformable_groups": 1, "groups": 1,
             "channels": None, "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "OIHW",
             "out_layout": "", "out_dtype": "", "partial_edges": False}


def _windows(attrs):
    """``(strides, dilation, pad)``: the pads as (top, left, bottom, right)."""
    return (int_tuple(OP, "strides", attrs["strides"], (2,), at_least=1),
            int_tuple(OP, "dilation", attrs["dilation"], (2,), at_least=1), padding_of(OP, attrs["padding"], 2))


def _groups(attrs, name):
    value = as_int(OP, name, attrs[name])
    if value < 1:
        raise GraphError(f"{OP}: {name} must be >= 1, got {value}")
    return value


def _check_map(ty, role, want, content):
    for have, need in zip(ty.shape, want):
        same_dim(OP, have, need, f"{role} has shape {ty.shape} but must be {tuple(want)} ({content})")


def _infer(types, attrs):
    if len(types) not in (3, 4):
        raise GraphError(f"{OP} takes data, offset, weight and an optional mask (3 or 4 operands), got {len(types)}")
    operands = tensor_args(OP, types, len(types))
    data, offset, weight = operands[:3]
    mask = operands[3] if len(operands) == 4 else None
    check_choice(OP, "data_layout", attrs["data_layout"], ("NCHW",))
    check_choice(OP, "kernel_layout", attrs["kernel_layout"], ("OIHW",))
    check_choice(OP, "out_layout", attrs["out_layout"], ("", "NCHW"))
    for role, ty in zip(("data", "offset", "weight", "mask"), operands):
        if ty.ndim != 4:
            raise GraphError(f"{OP}: {role} must be 4-D, got shape {ty.shape}")
    dtype = same_dtype(OP, operands)
    if not dtype.startswith(("float", "bfloat")):
        raise GraphError(f"{OP}: the operands must hold floats, got {dtype}")
    if not isinstance(attrs["partial_edges"], bool):
        raise GraphError(f"{OP}: partial_edges must be True or False, got {attrs['partial_edges']!r}")
    groups, deformable_groups = _groups(attrs, "groups"), _groups(attrs, "deformable_groups")
    n, c = data.shape[:2]
    o, i, kh, kw = weight.shape
    if not is_static(c, o, i, kh, kw):
        raise GraphError(f"{OP}: the channel and kernel sizes must be known; weight {weight.shape}, data {data.shape}")
    if c != i * groups:
        raise GraphError(f"{OP}: data has {c} input channels but the weight {weight.shape} with groups={groups} "
                         f"expects {i * groups} ({i} per group); check the weight's layout and groups")
    if o % groups:
        raise GraphError(f"{OP}: {o} output channels are not divisible by groups={groups}")
    if c % deformable_groups:
        raise GraphError(f"{OP}: {c} input channels are not divisible by deformable_groups={deformable_groups}")
    if attrs["channels"] is not None and attrs["channels"] != o:
        raise GraphError(f"{OP}: channels={attrs['channels']} but the weight has {o} output channels")
    if attrs["kernel_size"] is not None and tuple(int_tuple(OP, "kernel_size", attrs["kernel_size"], (2,))) != (kh, kw):
        raise GraphError(f"{OP}: kernel_size={list(attrs['kernel_size'])} but the weight's kernel is {(kh, kw)}")
    strides, dilation, pad = _windows(attrs)
    sizes = static_dims(OP, data.shape, (2, 3), "the convolution's output size")
    out = [window_out(size, k, s, d, pad[a], pad[a + 2])
           for a, (size, k, s, d) in enumerate(zip(sizes, (kh, kw), strides, dilation))]
    if min(out) < 1:
        padded = tuple(size + pad[a] + pad[a + 2] for a, size in enumerate(sizes))
        raise GraphError(f"{OP}: the kernel {(kh, kw)} (dilation {dilation}) does not fit in the padded input "
                         f"{padded}")
    taps = deformable_groups * kh * kw
    _check_map(offset, "offset", (n, 2 * taps) + tuple(out),
               "a (y, x) pair per deformable group and kernel tap at each output position")
    if mask is not None:
        _check_map(mask, "mask", (n, taps) + tuple(out), "a value per deformable group and kernel tap at each "
                                                          "output position")
    out_dtype = dtype if attrs["out_dtype"] in ("", None) else check_dtype(OP, "out_dtype", attrs["out_dtype"])
    return TensorType((n, o) + tuple(out), out_dtype)


def _lower(inputs, attrs, out_type):
    t = topi()
    if out_type.dtype == "float32":
        # half-width operands summed in float32 (ONNX's float16 models) are sampled in float32 too
        inputs = [t.cast(x, "float32") if x.dtype in HALF_FLOATS else x for x in inputs]
    data, offset, weight = inputs[:3]
    mask = inputs[3] if len(inputs) > 3 else None
    strides, dilation, pad = _windows(attrs)
    return t.nn.deformable_conv2d_nchw(data, offset, weight, strides, pad, dilation, attrs["deformable_groups"],
                                       attrs["groups"], out_type.dtype, mask=mask,
                                       partial_edges=attrs["partial_edges"])


register_op(OP, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_infer, lower=accumulate_in_float32(_lower),
            num_inputs=None, defaults=_DEFAULTS,
            doc="deformable 2-D convolution (NCHW/OIHW; data, offset, weight and an optional DCNv2 mask; grouped, "
                "with deformable groups)")
