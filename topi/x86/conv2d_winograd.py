"""The CPU schedule of the Winograd convolution in channel blocks
(:func:`tecc.topi.nn.conv2d_NCHWc_winograd`), and the tunable task
``"conv2d_NCHWc_winograd.x86"``.

Three parallel loop nests, one per stage of the compute:

* ``V`` (the input tiles transformed): over input-channel blocks and tiles, the 16
  transformed values of a tile unrolled (their selections fold to sums of four
  terms), the block's channels in the vector lanes; the padded input inlined;
* ``M`` (the product): over the 16 ``(e1, e2)`` by output-channel blocks, a register
  tile of ``tile_p`` tiles by one block of channels summed over every input channel
  -- the micro-kernel of the 1x1 channel-blocked convolution: each ``V`` value
  broadcast against the block's kernel vectors, which stay in registers when the
  tile leaves room for them (``tile_p`` = 6 with 16-channel blocks on AVX2: 12
  accumulators, 2 kernel vectors, 1 broadcast);
* the output (``A^T M A``, with the operator's element-wise epilogue -- bias, relu,
  a residual add -- inlined): over images, output blocks and tile rows, a 2x2 tile
  of pixels unrolled, channels in the vector lanes.

Measured on AVX2 (2 cores, 1 thread, 16-channel blocks, 2026-11-28), GFLOP/s
counted as the direct convolution's (2 x 9 multiply-adds per output and input
channel): ResNet-50's 14x14 256->256 layer 151 (direct ``conv2d_NCHWc`` 89,
onnxruntime 98), 28x28 128->128 119 (94, 96), 7x7 512->512 114 (89, 100); the
56x56 64->64 layer 81 (96, 93): there the transformed tiles (3 MB) do not stay in
cache between the stages, and the graph compiler keeps the direct convolution
(:func:`use_winograd`).
"""
from __future__ import annotations

from ...tuner.task.space import InstantiationError, OtherOptionEntity
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn
from ..generic.default import new_schedule, outputs_of
from ..nn.conv2d_winograd import CONV2D_WINOGRAD_NCHWC, KERNEL
from ..nn.utils import padding_workload_args
from ..schedule_registry import register_schedule
from ..tunable import schedule_either
from ..utils import find_anchors, get_const_tuple
from .conv2d import _lanes, _registers
from .injective import schedule_injective_from_existing

#: the fewest input and output channels for which the graph compiler uses Winograd
#: (ResNet-50's 64-channel 56x56 layer ran slower, its 128-channel 28x28 one faster)
MIN_WINOGRAD_CHANNELS = 128
#: on 32-register targets (AVX-512), the most work the 2x2 output tiles may waste:
#: the pixels the tiles cover over the output's pixels.  An odd-sized output
#: computes a partial row and column of tiles in full: 7x7 covers 8x8, 1.31.
#: ResNet-50's 7x7 512->512 layer in the model at batch 1 (2 AVX-512 Xeon cores, 40
#: interleaved rounds of per-kernel profiles, 2026-11-29), ms by Winograd against
#: direct: 1.50 against 1.40 (medians), 1.3 against 1.0 (minima); the direct
#: convolution's register tile there is a whole row (7 pixels by two vectors).  On
#: AVX2 Winograd won the same layer (114 against 89 GFLOP/s, above), where the
#: direct tile of 7 pixels spills, so 16-register targets keep it.  27x27 (1.07) and
#: 13x13 (1.16) outputs stay by Winograd.
MAX_WINOGRAD_WASTE = 1.2


@register_topi_compute("conv2d_NCHWc_winograd.x86", canonical=padding_workload_args(2))
def conv2d_NCHWc_winograd(cfg, data, kernel, padding, layout, out_layout, out_dtype="float32"):  # noqa: N802
    """The Winograd compute (:func:`tecc.topi.nn.conv2d_NCHWc_winograd`) of the
    tunable task ``"conv2d_NCHWc_winograd.x86"``."""
    return nn.conv2d_NCHWc_winograd(data, kernel, padding, layout, out_layout, out_dtype)


def winograd_waste(out_height, out_width) -> float:
    """The pixels F(2x2, 3x3)'s 2x2 tiles cover over an output's pixels."""
    return (-(-out_height // 2) * 2) * (-(-out_width // 2) * 2) / (out_height * out_width)


def use_winograd(in_channels, out_channels, kernel_size, strides, dilation, groups, dtype="float32",
                 out_size=None) -> bool:
    """Whether the graph compiler computes a channel-blocked convolution by
    Winograd on a CPU: a 3x3 kernel, stride and dilation 1, one group, float32, at
    least :data:`MIN_WINOGRAD_CHANNELS` input and output channels, and, on a
    32-register target when the output's ``(height, width)`` is given as
    ``out_size``, tiles that waste at most :data:`MAX_WINOGRAD_WASTE`
    (:func:`winograd_waste`)."""
    if out_size is not None and _registers() >= 32 and winograd_waste(*out_size) > MAX_WINOGRAD_WASTE:
        return False
    return (tuple(kernel_size) == (KERNEL, KERNEL) and tuple(strides) == (1, 1) and tuple(dilation) == (1, 1)
            and groups == 1 and dtype == "float32"
            and min(in_channels, out_channels) >= MIN_WINOGRAD_CHANNELS)


def default_tile_p(oc_bn, dtype="float32") -> int:
    """Tiles per register tile of the product: as many as leave registers for the
    block's kernel vectors and the broadcast value (6 for 16-channel blocks on
    AVX2), at most 12."""
    vectors = -(-oc_bn // _lanes(dtype))
    return max(1, min(12, (_registers() - 1 - vectors) // vectors))


def _stages(out_op):
    """``(M, V, Pad)`` of the Winograd output operation ``out_op``."""
    product = out_op.input_tensors[0]
    transformed = product.op.input_tensors[0]
    return product, transformed, transformed.op.input_tensors[0]


def define_knobs(cfg, anchor):
    """``tile_p``: tiles per register tile of the product (the fallback:
    :func:`default_tile_p`); the flop count is the direct convolution's."""
    product, transformed, _pad = _stages(anchor.op)
    shape = get_const_tuple(anchor.shape)
    tshape = get_const_tuple(transformed.shape)
    if not all(isinstance(d, int) for d in shape + tshape):
        raise InstantiationError(f"conv2d_NCHWc_winograd.x86: {anchor.op.name!r} has the symbolic shape {shape}")
    oc_bn = shape[4]
    most = max(default_tile_p(oc_bn, anchor.dtype), 2)
    cfg.define_knob("tile_p", list(range(2, most + 2)))
    n, oc_chunk, out_h, out_w, _ = shape
    cfg.add_flop(2 * n * oc_chunk * oc_bn * out_h * out_w * tshape[2] * tshape[4] * KERNEL * KERNEL)
    if cfg.is_fallback:
        cfg["tile_p"] = OtherOptionEntity(default_tile_p(oc_bn, anchor.dtype))


def schedule_winograd_from_existing(s, anchor, out, tile_p):
    """Schedule the Winograd convolution whose output stage is ``anchor`` in ``s``,
    with ``out`` its element-wise epilogue's output (``anchor`` itself when there
    is none), ``tile_p`` tiles per register tile (see the module's description).

    Returns
    -------
    Schedule
    """
    product, transformed, padded = _stages(anchor.op)
    if out.op is not anchor.op:
        if anchor.op in s.outputs or get_const_tuple(out.shape) != get_const_tuple(anchor.shape):
            schedule_injective_from_existing(s, out)
            out = anchor
        else:
            s[anchor].compute_inline()
    # the input transform
    s[padded].compute_inline()
    e1, e2, cb, p, ci = s[transformed].op.axis
    s[transformed].reorder(cb, p, e1, e2, ci)
    s[transformed].parallel(s[transformed].fuse(cb, p))
    s[transformed].unroll(e1)
    s[transformed].unroll(e2)
    s[transformed].vectorize(ci)
    # the product: register tiles of tile_p tiles by a channel block
    acc = s.cache_write(product, "local")
    e1, e2, kb, p, ko = s[product].op.axis
    po, pi = s[product].split(p, factor=tile_p)
    s[product].reorder(e1, e2, kb, po, pi, ko)
    s[product].parallel(s[product].fuse(e1, e2, kb))
    s[product].unroll(pi)
    s[product].vectorize(ko)
    s[acc].compute_at(s[product], po)
    a1, a2, akb, ap, ako = s[acc].op.axis
    rc, ri = s[acc].op.reduce_axis
    s[acc].reorder(a1, a2, akb, rc, ri, ap, ako)
    s[acc].unroll(ap)
    s[acc].vectorize(ako)
    # the output transform with the epilogue, a 2x2 tile of pixels at a time
    n, kb, y, x, ko = s[out].op.axis
    yo, yi = s[out].split(y, factor=2)
    xo, xi = s[out].split(x, factor=2)
    s[out].reorder(n, kb, yo, xo, yi, xi, ko)
    s[out].parallel(s[out].fuse(n, kb, yo))
    s[out].unroll(yi)
    s[out].unroll(xi)
    s[out].vectorize(ko)
    return s


def _template(cfg, outs):
    """The ``"conv2d_NCHWc_winograd.x86"`` template."""
    outs, s = new_schedule(outs)
    out = outs[0]
    for op in find_anchors(s, out, (CONV2D_WINOGRAD_NCHWC,), "schedule_conv2d_NCHWc_winograd",
                           "a Winograd convolution"):
        anchor = op.output(0)
        define_knobs(cfg, anchor)
        schedule_winograd_from_existing(s, anchor, out, int(cfg["tile_p"].val))
    return s


_schedule_task = register_topi_schedule("conv2d_NCHWc_winograd.x86")(_template)


@register_schedule(CONV2D_WINOGRAD_NCHWC, "cpu")
def schedule_conv2d_NCHWc_winograd(outs):  # noqa: N802
    """The CPU schedule of ``conv2d_NCHWc_winograd`` (and of element-wise ops after
    it): the tuned config of ``"conv2d_NCHWc_winograd.x86"`` when one is dispatched,
    else the fallback (:func:`define_knobs`).

    Parameters
    ----------
    outs : Tensor or list of Tensor
        The operator's output(s); the first is the final one.

    Returns
    -------
    Schedule
    """
    return schedule_either(outputs_of(outs), "conv2d_NCHWc_winograd.x86", _schedule_task, _template)
