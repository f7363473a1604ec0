"""NCHW convolutions on tensor cores, as an implicit GEMM (``conv2d_nchw_tensorcore``,
tunable as ``"conv2d_nchw_tensorcore.cuda"``).

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


def _geometry(data, kernel, strides, padding, dilation, what):
    """``(N, CI, H, W, CO, KH, KW, strides, dilations, pad_top_left, OH, OW)`` of a
    convolution with constant shapes, or a TopiError."""
    ds, ks = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(ds) != 4 or len(ks) != 4 or not all(isinstance(d, int) for d in ds + ks):
        raise TopiError(f"{what}: needs 4-D data [N, CI, H, W] and kernel [CO, CI, KH, KW] of constant shapes, got "
                        f"{data.shape} and {kernel.shape}")
    if ks[1] != ds[1]:
        raise TopiError(f"{what}: the kernel has {ks[1]} input channels, the data {ds[1]}; grouped convolutions "
                        "take topi.cuda.group_conv2d_nchw")
    st, dl, before, _, outs = _windows(ds[2:], ks[2:], strides, padding, dilation, "HW", what)
    as_int = [get_const_tuple(x) for x in (st, dl, before, outs)]
    return (*ds, ks[0], ks[2], ks[3], *as_int)


def tensorcore_conv2d_fits(data, kernel, strides, padding, dilation, out_dtype=None) -> bool:
    """Whether :func:`conv2d_nchw_tensorcore` computes this convolution on the
    current target: float16 or bfloat16 data and kernel (one type) of constant
    shapes, a result of their type or float32, ``CO`` and ``CI * KH * KW`` that a
    fragment shape tiles, tensor cores for them on the target's architecture."""
    if half_operands_error("conv2d_nchw", ("data", "kernel"), data, kernel, out_dtype):
        return False
    try:
        n, ci, _, _, co, kh, kw, _, _, _, (oh, ow) = _geometry(data, kernel, strides, padding, dilation, "conv")
    except TopiError:
        return False
    return bool(_shapes_fitting(_rows(n * oh * ow), ci * kh * kw, co)) and _tensor_cores_here(data.dtype)


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
    what = "conv2d_nchw_tensorcore"
    out_dtype = out_dtype or data.dtype
    error = half_operands_error(what, ("data", "kernel"), data, kernel, out_dtype)
    if error:
        raise TopiError(error)
    n, ci, h, w, co, kh, kw, (sh, sw), (dh, dw), (pt, pl), (oh, ow) = _geometry(data, kernel, strides, padding,
                                                                                 dilation, what)
    rows, taps = n * oh * ow, ci * kh * kw
    rows_p = _rows(rows)
    if not _shapes_fitting(rows_p, taps, co):
        raise TopiError(f"{what}: CO = {co} and CI*KH*KW = {taps} are not multiples of a wmma tile (CO of 16, 8 or "
                        "32 and CI*KH*KW of 16); use topi.cuda.conv2d_nchw")
    zero = _op.const(0, data.dtype)

    def pixel(m, k):
        b, rest = m // (oh * ow), m % (oh * ow)
        y, x = rest // ow, rest % ow
        c, tap = k // (kh * kw), k % (kh * kw)
        r, s = tap // kw, tap % kw
        hy, wx = y * sh + r * dh - pt, x * sw + s * dw - pl
        inside = _op.all(m < rows, hy >= 0, hy < h, wx >= 0, wx < w)
        return _op.if_then_else(inside, data[b, c, hy, wx], zero)

    cols = te.compute((rows_p, taps), pixel, name="im2col", tag=tag.INJECTIVE)
    flat = te.compute((co, taps), lambda o, k: kernel[o, k // (kh * kw), k % (kh * kw) // kw, k % kw],
                      name="kernel_flat", tag=tag.INJECTIVE)
    k = te.reduce_axis((0, taps), name="k")
    acc = accumulator_dtype(data.dtype, out_dtype)
    product = te.compute((rows_p, co), lambda m, o: te.sum(cols[m, k].astype(acc) * flat[o, k].astype(acc), axis=k),
                         name="conv_gemm", tag=tag.DENSE, attrs={"transpose_a": False, "transpose_b": True})
    return te.compute((n, co, oh, ow), lambda b, o, y, x: product[(b * oh + y) * ow + x, o].astype(out_dtype),
                      name="conv_nchw", tag=tag.INJECTIVE)


def _template(cfg, outs):
    """The product on tensor cores, the NCHW output (and what is fused after it) its
    own loop nest."""
    return schedule_anchor(outs, (tag.DENSE,), "schedule_conv2d_nchw_tensorcore",
                           lambda s, op, out: _schedule(cfg, s, op.output(0), out),
                           epilogue=schedule_injective_from_existing)


schedule_conv2d_nchw_tensorcore = register_topi_schedule("conv2d_nchw_tensorcore.cuda")(_template)

__all__ = ["conv2d_nchw_tensorcore", "schedule_conv2d_nchw_tensorcore", "tensorcore_conv2d_fits"]
