"""The converter of ONNX's ``DeformConv`` (opset 19): the graph op
``nn.deformable_conv2d`` with ONNX's sampling at the image's edges
(``partial_edges``), then the bias.

Inputs ``X`` (``[N, C, H, W]``), ``W`` (``[O, C / group, KH, KW]``), ``offset`` (``[N,
offset_group * KH * KW * 2, OH, OW]``), optional ``B`` (``[O]``) and ``mask`` (``[N,
offset_group * KH * KW, OH, OW]``); attributes ``dilations``, ``group``,
``kernel_shape``, ``offset_group``, ``pads`` (begins then ends) and ``strides``.
tecc converts the 2-D operator only (4-D ``X``).  float16 models accumulate in
float32 and round once, as ``Conv``.
"""
from __future__ import annotations


def _deform_conv(ctx, node, inputs):
    x, w, offset = inputs[0], inputs[1], inputs[2]
    bias, mask = ctx.optional_input(inputs, 3), ctx.optional_input(inputs, 4)
    xs, ws = ctx.shape(x), ctx.shape(w)
    if len(xs) != 4:
        node.fail(f"X has shape {xs} (rank {len(xs)}); tecc converts the 2-D DeformConv only, with X [N, C, H, W]")
    if len(ws) != 4:
        node.fail(f"W has shape {ws}; it must be [O, C / group, KH, KW] for 4-D X")
    kernel = [int(k) for k in node.attr("kernel_shape", ws[2:])]
    if tuple(kernel) != tuple(ws[2:]):
        node.fail(f"kernel_shape {kernel} differs from the kernel of W {tuple(ws[2:])}")
    strides = [int(s) for s in node.attr("strides", [1, 1])]
    dilations = [int(d) for d in node.attr("dilations", [1, 1])]
    pads = [int(p) for p in node.attr("pads", [0, 0, 0, 0])]
    if len(strides) != 2 or len(dilations) != 2 or len(pads) != 4:
        node.fail(f"strides {strides}, dilations {dilations} and pads {pads} must have 2, 2 and 4 values "
                  "(the pads: begins then ends)")
    dtype = ctx.dtype_of(x)
    acc = "float32" if dtype == "float16" else None
    args = [x, offset, w] + ([mask] if mask is not None else [])
    out = ctx.call("nn.deformable_conv2d", *args, strides=tuple(strides), padding=tuple(pads),
                   dilation=tuple(dilations), deformable_groups=int(node.attr("offset_group", 1)),
                   groups=int(node.attr("group", 1)), channels=ws[0], kernel_size=tuple(kernel), out_dtype=acc,
                   partial_edges=True)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, ctx.cast(bias, ctx.dtype_of(out)), axis=1)
    return ctx.cast(out, dtype)
