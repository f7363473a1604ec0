"""Convolutions on tensor cores, as an implicit GEMM: NCHW data with an OIHW kernel
(``conv2d_nchw_tensorcore``, tunable as ``"conv2d_nchw_tensorcore.cuda"``) and NHWC
data with an HWIO kernel (TVM's ``conv2d_nhwc_tensorcore``).

A float16 (or bfloat16) convolution is the product ``C[m, co] = sum_k A[m, k] * W[co, k]`` over

* ``m`` = the output pixels of the batch, ``(n, oh, ow)`` flattened, padded up to a
  whole number of tiles (rows past the end read zeros and are never stored);
* ``k`` = ``(ci, kh, kw)`` flattened: ``A[m, k]`` is the input pixel the window of
  output ``m`` puts under filter tap ``(ci, kh, kw)`` (zero in the padding), never
  stored -- the shared-memory loads of the product compute it (im2col on the fly);
* ``W[co, k]`` the filter ``[CO, CI, KH, KW]`` read as ``[CO, CI * KH * KW]``.

The product is :mod:`.dense_tensorcore`'s (the same knobs and fallback); the NCHW
output ``out[n, co, oh, ow] = C[(n * OH + oh) * OW + ow, co]`` -- and the element-wise
operations a model fuses after the convolution (bias, batch norm, activation) -- is a
second loop nest of the same function.  It needs ``CO`` a multiple of a fragment's
``n`` and ``CI * KH * KW`` of 16 (ResNet's convolutions after the first);
:func:`tensorcore_conv2d_fits` says when, :func:`tecc.topi.cuda.conv2d_nchw` asks it.

NHWC is the same product with ``k`` = ``(kh, kw, ci)``, so that consecutive ``k`` read
consecutive channels of one input pixel, and the HWIO filter is already ``[K, CO]``:
B is read as it lies, a row-major ``matrix_b`` (without the 32x8x16 fragments, whose
B tiles would be misaligned there); :func:`tensorcore_conv2d_nhwc_fits` and
:func:`tecc.topi.cuda.conv2d_nhwc`.
"""
from __future__ import annotations

from ... import te
from ...tir import op as _op
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import tag
from ..nn.conv2d import _windows
from ..nn.utils import conv2d_workload_args
from ..tunable import schedule_anchor
from ..utils import TopiError, get_const_tuple
from .dense_tensorcore import _schedule, _shapes_fitting, _tensor_cores_here, accumulator_dtype, half_operands_error
from .injective import schedule_injective_from_existing

#: the output pixels are padded to a multiple of this (a 64-row block tile divides them)
ROW_ALIGN = 64


def _rows(m: int) -> int:
    """``m`` output pixels padded: to 16 for a small layer, else to :data:`ROW_ALIGN`."""
    align = ROW_ALIGN if m > ROW_ALIGN else 16
    return -(-m // align) * align


def _geometry(data, kernel, strides, padding, dilation, what, layout="NCHW"):
    """``(N, CI, H, W, CO, KH, KW, strides, dilations, pad_top_left, OH, OW)`` of a
    convolution with constant shapes (data NCHW and kernel OIHW, or ``layout``
    "NHWC": data NHWC and kernel HWIO), or a TopiError."""
    ds, ks = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    names = ("[N, CI, H, W]", "[CO, CI, KH, KW]") if layout == "NCHW" else ("[N, H, W, CI]", "[KH, KW, CI, CO]")
    if len(ds) != 4 or len(ks) != 4 or not all(isinstance(d, int) for d in ds + ks):
        raise TopiError(f"{what}: needs 4-D data {names[0]} and kernel {names[1]} of constant shapes, got "
                        f"{data.shape} and {kernel.shape}")
    if layout == "NHWC":  # as NCHW / OIHW
        ds, ks = (ds[0], ds[3], ds[1], ds[2]), (ks[3], ks[2], ks[0], ks[1])
    if ks[1] != ds[1]:
        raise TopiError(f"{what}: the kernel has {ks[1]} input channels, the data {ds[1]}; grouped convolutions "
                        "take topi.cuda.group_conv2d_nchw")
    st, dl, before, _, outs = _windows(ds[2:], ks[2:], strides, padding, dilation, "HW", what)
    as_int = [get_const_tuple(x) for x in (st, dl, before, outs)]
    return (*ds, ks[0], ks[2], ks[3], *as_int)


#: layout -> (the layout of k in the product, whether B is [K, CO] (read row-major))
_K_ORDER = {"NCHW": ("(ci, kh, kw)", False), "NHWC": ("(kh, kw, ci)", True)}


def _fits(data, kernel, strides, padding, dilation, out_dtype, layout) -> bool:
    if half_operands_error(f"conv2d_{layout.lower()}", ("data", "kernel"), data, kernel, out_dtype):
        return False
    try:
        n, ci, _, _, co, kh, kw, _, _, _, (oh, ow) = _geometry(data, kernel, strides, padding, dilation, "conv",
                                                               layout)
    except TopiError:
        return False
    b_kn = _K_ORDER[layout][1]
    return bool(_shapes_fitting(_rows(n * oh * ow), ci * kh * kw, co, b_kn)) and _tensor_cores_here(data.dtype)


def tensorcore_conv2d_fits(data, kernel, strides, padding, dilation, out_dtype=None) -> bool:
    """Whether :func:`conv2d_nchw_tensorcore` computes this convolution on the
    current target: float16 or bfloat16 data and kernel (one type) of constant
    shapes, a result of their type or float32, ``CO`` and ``CI * KH * KW`` that a
    fragment shape tiles, tensor cores for them on the target's architecture."""
    return _fits(data, kernel, strides, padding, dilation, out_dtype, "NCHW")


def tensorcore_conv2d_nhwc_fits(data, kernel, strides, padding, dilation, out_dtype=None) -> bool:
    """:func:`tensorcore_conv2d_fits` for NHWC data and an HWIO kernel (what
    :func:`tecc.topi.cuda.conv2d_nhwc` asks first)."""
    return _fits(data, kernel, strides, padding, dilation, out_dtype, "NHWC")


def _implicit_gemm(data, kernel, strides, padding, dilation, out_dtype, layout):
    """The product over ``k`` in :data:`_K_ORDER`'s order, and the output in
    ``layout`` read from its rows (see the module docs)."""
    what = f"conv2d_{layout.lower()}_tensorcore"
    out_dtype = out_dtype or data.dtype
    error = half_operands_error(what, ("data", "kernel"), data, kernel, out_dtype)
    if error:
        raise TopiError(error)
    n, ci, h, w, co, kh, kw, (sh, sw), (dh, dw), (pt, pl), (oh, ow) = _geometry(data, kernel, strides, padding,
                                                                                 dilation, what, layout)
    order, b_kn = _K_ORDER[layout]
    rows, taps = n * oh * ow, ci * kh * kw
    rows_p = _rows(rows)
    if not _shapes_fitting(rows_p, taps, co, b_kn):
        tiles = "16 or 32" if b_kn else "16, 8 or 32"
        raise TopiError(f"{what}: CO = {co} and {order} = {taps} taps are not multiples of a wmma tile (CO of "
                        f"{tiles} and the taps of 16); use topi.cuda.conv2d_{layout.lower()}")
    zero = _op.const(0, data.dtype)

    def split_k(k):
        """``(c, r, t)``: the input channel and the filter tap of reduction index ``k``."""
        if layout == "NHWC":
            return k % ci, k // (kw * ci), k // ci % kw
        return k // (kh * kw), k % (kh * kw) // kw, k % kw

    def pixel(m, k):
        b, rest = m // (oh * ow), m % (oh * ow)
        y, x = rest // ow, rest % ow
        c, r, t = split_k(k)
        hy, wx = y * sh + r * dh - pt, x * sw + t * dw - pl
        inside = _op.all(m < rows, hy >= 0, hy < h, wx >= 0, wx < w)
        return _op.if_then_else(inside, data[b, hy, wx, c] if layout == "NHWC" else data[b, c, hy, wx], zero)

    def weight(o, k):
        c, r, t = split_k(k)
        return kernel[r, t, c, o] if layout == "NHWC" else kernel[o, c, r, t]

    cols = te.compute((rows_p, taps), pixel, name="im2col", tag=tag.INJECTIVE)
    if b_kn:  # the HWIO kernel is already the [K, CO] matrix: a row-major matrix_b
        flat = te.compute((taps, co), lambda k, o: weight(o, k), name="kernel_flat", tag=tag.INJECTIVE)
    else:
        flat = te.compute((co, taps), weight, name="kernel_flat", tag=tag.INJECTIVE)
    k = te.reduce_axis((0, taps), name="k")
    acc = accumulator_dtype(data.dtype, out_dtype)
    product = te.compute(
        (rows_p, co), lambda m, o: te.sum(cols[m, k].astype(acc) * (flat[k, o] if b_kn else flat[o, k]).astype(acc),
                                          axis=k),
        name="conv_gemm", tag=tag.DENSE, attrs={"transpose_a": False, "transpose_b": not b_kn})
    if layout == "NHWC":
        return te.compute((n, oh, ow, co), lambda b, y, x, o: product[(b * oh + y) * ow + x, o].astype(out_dtype),
                          name="conv_nhwc", tag=tag.INJECTIVE)
    return te.compute((n, co, oh, ow), lambda b, o, y, x: product[(b * oh + y) * ow + x, o].astype(out_dtype),
                      name="conv_nchw", tag=tag.INJECTIVE)


@register_topi_compute("conv2d_nchw_tensorcore.cuda", canonical=conv2d_workload_args)
def conv2d_nchw_tensorcore(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
    """The implicit-GEMM convolution (see the module docs): float16 or bfloat16
    ``data`` ``[N, CI, H, W]`` and ``kernel`` ``[CO, CI, KH, KW]`` (one type),
    ``out_dtype`` ``"float32"`` or theirs (bfloat16 accumulates in float32, rounded
    once); the arguments of :func:`tecc.topi.nn.conv2d_nchw`.

    Raises
    ------
    TopiError
        For other dtypes or shapes (the fix in the message).
    """
    return _implicit_gemm(data, kernel, strides, padding, dilation, out_dtype, "NCHW")


@register_topi_compute("conv2d_nhwc_tensorcore.cuda", canonical=conv2d_workload_args)
def conv2d_nhwc_tensorcore(cfg, data, kernel, strides, padding, dilation, out_dtype="float32"):
    """The implicit-GEMM convolution of NHWC ``data`` ``[N, H, W, CI]`` with an HWIO
    ``kernel`` ``[KH, KW, CI, CO]`` (TVM's ``conv2d_nhwc_tensorcore`` arguments),
    float16 or bfloat16, on tensor cores.  The product's ``k`` runs over ``(kh, kw,
    ci)``, so the im2col loads read runs of contiguous channels, and the kernel is
    already the ``[K, CO]`` matrix B, read row-major (no 32x8x16 fragments there:
    their B tiles would be misaligned); the NHWC output, with what is fused after
    it, is the product's rows unpadded, a second loop nest.

    Raises
    ------
    TopiError
        For other dtypes, or channel counts no fragment shape tiles (``CO`` a
        multiple of 16 or 32 and ``KH * KW * CI`` of 16).
    """
    return _implicit_gemm(data, kernel, strides, padding, dilation, out_dtype, "NHWC")


def _template_of(layout):
    def template(cfg, outs):
        """The product on tensor cores, the output (and what is fused after it) its
        own loop nest."""
        return schedule_anchor(outs, (tag.DENSE,), f"schedule_conv2d_{layout.lower()}_tensorcore",
                               lambda s, op, out: _schedule(cfg, s, op.output(0), out),
                               epilogue=schedule_injective_from_existing)

    return template


schedule_conv2d_nchw_tensorcore = register_topi_schedule("conv2d_nchw_tensorcore.cuda")(_template_of("NCHW"))
schedule_conv2d_nhwc_tensorcore = register_topi_schedule("conv2d_nhwc_tensorcore.cuda")(_template_of("NHWC"))

__all__ = ["conv2d_nchw_tensorcore", "conv2d_nhwc_tensorcore", "schedule_conv2d_nchw_tensorcore",
           "schedule_conv2d_nhwc_tensorcore", "tensorcore_conv2d_fits", "tensorcore_conv2d_nhwc_fits"]
