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
from .nn import _conv_operands, _window_attrs, _windows
from ._util import (
    HALF_FLOATS, accumulate_in_float32, as_int, check_choice, check_dtype, same_dim, same_dtype, tensor_args, topi,
)

OP = "nn.deformable_conv2d"

_DEFAULTS = {"strides": (1, 1), "padding": (0, 0), "dilation": (1, 1), "deformable_groups": 1, "groups": 1,
             "channels": None, "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "OIHW",
             "out_layout": "", "out_dtype": "", "partial_edges": False}


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
    # the checks and output size of every convolution: channels, groups and kernel against the weight
    _, _, _, n, o, (kh, kw) = _conv_operands(OP, [types[0], types[2]], attrs, {"NCHW": "OIHW"}, "HW")
    deformable_groups = _groups(attrs, "deformable_groups")
    c = data.shape[1]
    if c % deformable_groups:
        raise GraphError(f"{OP}: {c} input channels are not divisible by deformable_groups={deformable_groups}")
    out = _windows(OP, data, (2, 3), (kh, kw), attrs, what="kernel", sizes_for="the convolution's output size")
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
    strides, dilation, pad = _window_attrs(OP, attrs)
    return t.nn.deformable_conv2d_nchw(data, offset, weight, strides, pad, dilation, attrs["deformable_groups"],
                                       attrs["groups"], out_type.dtype, mask=mask,
                                       partial_edges=attrs["partial_edges"])


register_op(OP, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, infer=_infer, lower=accumulate_in_float32(_lower),
            num_inputs=None, defaults=_DEFAULTS,
            doc="deformable 2-D convolution (NCHW/OIHW; data, offset, weight and an optional DCNv2 mask; grouped, "
                "with deformable groups)")
