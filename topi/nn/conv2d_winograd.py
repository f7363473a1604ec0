"""Winograd convolution F(2x2, 3x3) in channel blocks (TVM's
``conv2d_winograd_without_weight_transform``, for the ``NCHW{b}c`` layout).

A 3x3 convolution of stride 1 computes each 2x2 output tile from a 4x4 input tile
with 16 multiplications per input and output channel instead of 36:

    Y = A^T [ (G g G^T) (.) (B^T d B) ] A

``g`` the 3x3 kernel of one (output, input) channel pair, ``d`` the 4x4 input tile
(tiles overlap by 2), ``(.)`` the element-wise product summed over the input
channels.  The kernel's transform ``U = G g G^T`` depends on the weights only: the
graph compiler computes it once at build time (:func:`winograd_weight_nchwc`); the
compute here takes it as its second operand.

The stages, each a loop nest of its own (:mod:`tecc.topi.x86.conv2d_winograd`
schedules them):

* ``Pad``: the input, padded so that whole tiles cover the output;
* ``V[e1, e2, cb, p, ci]`` = ``B^T d B``: the input tiles, transformed, ``p`` the
  tile (image, tile row, tile column), ``cb``/``ci`` the input channel block and lane;
* ``M[e1, e2, kb, p, ko]`` = sum over the input channels of ``V * U``: for each of
  the 16 ``(e1, e2)``, a matrix product of the tiles by the kernel -- the work, done
  as a 1x1 convolution over tiles (register tiles of tiles by a channel block);
* ``Y[n, kb, y, x, ko]`` = ``A^T M A``: the output, tagged
  :data:`CONV2D_WINOGRAD_NCHWC` (the anchor its schedule is found by).

The transforms are written out as sums of the few terms their matrices' rows hold
(the matrices hold 0, 1 and -1; ``x * 0`` is not folded for floats): each term's
offset and sign are selected by the row, and fold to constants once the schedule
unrolls the rows, so the generated code adds and subtracts.  Numerically F(2x2, 3x3) is as accurate as the
direct convolution up to a few units in the last place (its constants are exact in
binary floating point).
"""
from __future__ import annotations

import numpy as np

from ... import te, tir
from ...tir import op as _op
from .conv2d import _const, _shape, blocked_operands, pad_tuple
from .pad import pad
from ..utils import TopiError, simplify

#: the tag of the output stage (the anchor of the schedule)
CONV2D_WINOGRAD_NCHWC = "conv2d_winograd_NCHWc"
#: output tile (m), kernel (r) and input tile (alpha = m + r - 1) sizes of F(2x2, 3x3)
TILE, KERNEL, ALPHA = 2, 3, 4

#: the input transform's B^T: row e of it as its two (input offset, sign) terms
_BT_ROWS = (((0, 1), (2, -1)), ((1, 1), (2, 1)), ((2, 1), (1, -1)), ((1, 1), (3, -1)))
#: the output transform's A^T: row u as its three (tile offset, sign) terms
_AT_ROWS = (((0, 1), (1, 1), (2, 1)), ((1, 1), (2, -1), (3, -1)))
#: the kernel transform's G (4 x 3)
G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def _pick(index, values, dtype):
    """``values[index]`` for a loop variable ``index``: a chain of selections that
    folds to one constant once the schedule unrolls the loop."""
    if all(v == values[0] for v in values):
        return tir.const(values[0], dtype)
    expr = tir.const(values[-1], dtype)
    for r in range(len(values) - 2, -1, -1):
        expr = tir.Select(index == r, tir.const(values[r], dtype), expr)
    return expr


def _row_terms(index, rows, dtype):
    """The terms of row ``index`` of a transform's ``rows`` (every row has as many):
    per term, its offset (an int expression) and its sign (a ``dtype`` expression,
    None where every row's term is positive)."""
    terms = []
    for t in range(len(rows[0])):
        signs = [row[t][1] for row in rows]
        sign = None if all(v == 1 for v in signs) else _pick(index, [float(v) for v in signs], dtype)
        terms.append((_pick(index, [row[t][0] for row in rows], "int32"), sign))
    return terms


def _transform(index1, index2, rows, value, dtype):
    """``sum over the terms (o1, s1) of row index1 and (o2, s2) of row index2 of
    s1 * s2 * value(o1, o2)``: the two-sided transform ``R X R^T`` of a tile, for
    rows ``index1`` and ``index2`` of ``R``."""
    expr = None
    for o1, s1 in _row_terms(index1, rows, dtype):
        for o2, s2 in _row_terms(index2, rows, dtype):
            term = value(o1, o2)
            for sign in (s1, s2):
                if sign is not None:
                    term = term * sign
            expr = term if expr is None else expr + term
    return expr


def winograd_weight_nchwc(weight, ic_bn: int, oc_bn: int, dtype="float32") -> np.ndarray:
    """The transformed kernel ``U = G g G^T`` of an OIHW 3x3 ``weight`` (numpy), laid
    out ``[4, 4, O // oc_bn, I // ic_bn, ic_bn, oc_bn]`` for
    :func:`conv2d_NCHWc_winograd` (computed in float64, returned in ``dtype``).

    Raises
    ------
    TopiError
        If the weight is not 4-D with a 3x3 kernel, or its channels are not whole
        blocks.
    """
    w = np.asarray(weight)
    if w.ndim != 4 or w.shape[2:] != (KERNEL, KERNEL):
        raise TopiError(f"winograd_weight_nchwc: the weight must be OIHW with a 3x3 kernel, got shape {w.shape}")
    out_ch, in_ch = w.shape[:2]
    if out_ch % oc_bn or in_ch % ic_bn:
        raise TopiError(f"winograd_weight_nchwc: weight {w.shape}: {out_ch} output channels in blocks of {oc_bn} "
                        f"and {in_ch} input channels in blocks of {ic_bn} must be whole blocks")
    u = np.einsum("ah,oihw,bw->aboi", G, w.astype("float64"), G)
    u = u.reshape(ALPHA, ALPHA, out_ch // oc_bn, oc_bn, in_ch // ic_bn, ic_bn).transpose(0, 1, 2, 4, 5, 3)
    return np.ascontiguousarray(u.astype(dtype))


def conv2d_NCHWc_winograd(data, kernel, padding, layout, out_layout, out_dtype="float32"):  # noqa: N802
    """A 3x3, stride-1 convolution in channel blocks by Winograd's F(2x2, 3x3).

    Parameters
    ----------
    data : Tensor
        ``[batch, in_channel // ic_bn, in_height, in_width, ic_bn]``
    kernel : Tensor
        The transformed kernel ``[4, 4, num_filter // oc_bn, in_channel // ic_bn,
        ic_bn, oc_bn]`` (:func:`winograd_weight_nchwc` of the OIHW kernel).
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
    layout, out_layout : str
        ``"NCHW{ic_bn}c"`` and ``"NCHW{oc_bn}c"``.
    out_dtype : str

    Returns
    -------
    Tensor
        ``[batch, num_filter // oc_bn, out_height, out_width, oc_bn]``, tagged
        :data:`CONV2D_WINOGRAD_NCHWC`; its stages are named ``Pad``, ``V`` and ``M``
        (see the module's description).
    """
    what, ic_bn, oc_bn = blocked_operands("conv2d_NCHWc_winograd", data, kernel, layout, out_layout)
    if len(kernel.shape) != 6:
        raise TopiError(f"{what}: kernel {kernel.name!r} has shape {_shape(kernel)}; it must be the transformed "
                        f"kernel [4, 4, O // {oc_bn}, C // {ic_bn}, {ic_bn}, {oc_bn}] "
                        "(topi.nn.winograd_weight_nchwc of the OIHW kernel)")
    shape = [_const(d) for d in data.shape]
    kshape = [_const(d) for d in kernel.shape]
    if any(d is None for d in shape + kshape):
        raise TopiError(f"{what}: the Winograd convolution needs constant shapes, got data {_shape(data)} and "
                        f"kernel {_shape(kernel)}")
    batch, ic_chunk, height, width, data_bn = shape
    a1, a2, oc_chunk, kernel_chunk, kernel_ic_bn, kernel_oc_bn = kshape
    if (a1, a2) != (ALPHA, ALPHA) or (kernel_ic_bn, kernel_oc_bn) != (ic_bn, oc_bn) or data_bn != ic_bn:
        raise TopiError(f"{what}: the kernel must be [4, 4, O // {oc_bn}, C // {ic_bn}, {ic_bn}, {oc_bn}] and the "
                        f"data's last axis {ic_bn} (the layouts' blocks), got data {_shape(data)} and kernel "
                        f"{_shape(kernel)}")
    if kernel_chunk != ic_chunk:
        raise TopiError(f"{what}: data {data.name!r} has {ic_chunk} input-channel blocks but the kernel "
                        f"{kernel.name!r} {kernel_chunk}")
    before, after = pad_tuple(padding, (KERNEL, KERNEL), what)
    before = [int(simplify(b)) for b in before]
    after = [int(simplify(a)) for a in after]
    out_h, out_w = height + before[0] + after[0] - KERNEL + 1, width + before[1] + after[1] - KERNEL + 1
    if out_h < 1 or out_w < 1:
        raise TopiError(f"{what}: the 3x3 kernel is larger than the padded input ({height + before[0] + after[0]}"
                        f"x{width + before[1] + after[1]}, padding {padding!r})")
    out_dtype = out_dtype or data.dtype
    tiles_h, tiles_w = -(-out_h // TILE), -(-out_w // TILE)
    tiles = batch * tiles_h * tiles_w
    # pad so that whole tiles cover the output (the last tile's extra rows read zeros)
    padded = pad(data, [0, 0, before[0], before[1], 0],
                 [0, 0, tiles_h * TILE + KERNEL - 1 - height - before[0],
                  tiles_w * TILE + KERNEL - 1 - width - before[1], 0], name="Pad")
    per_image = tiles_h * tiles_w

    def tile_input(cb, p, ci, i, j):
        n, t = p // per_image, p % per_image
        return _op.cast(out_dtype, padded[n, cb, (t // tiles_w) * TILE + i, (t % tiles_w) * TILE + j, ci])

    transformed = te.compute(
        (ALPHA, ALPHA, ic_chunk, tiles, ic_bn),
        lambda e1, e2, cb, p, ci: _transform(e1, e2, _BT_ROWS, lambda i, j: tile_input(cb, p, ci, i, j), out_dtype),
        name="V", tag="winograd_input")
    rc = te.reduce_axis((0, ic_chunk), name="rc")
    ri = te.reduce_axis((0, ic_bn), name="ri")
    product = te.compute(
        (ALPHA, ALPHA, oc_chunk, tiles, oc_bn),
        lambda e1, e2, kb, p, ko: te.sum(transformed[e1, e2, rc, p, ri]
                                         * _op.cast(out_dtype, kernel[e1, e2, kb, rc, ri, ko]), axis=[rc, ri]),
        name="M", tag="winograd_product")

    def output(n, kb, y, x, ko):
        p = n * per_image + (y // TILE) * tiles_w + x // TILE
        return _transform(y % TILE, x % TILE, _AT_ROWS, lambda r1, r2: product[r1, r2, kb, p, ko], out_dtype)

    return te.compute((batch, oc_chunk, out_h, out_w, oc_bn), output, name="Out", tag=CONV2D_WINOGRAD_NCHWC,
                      attrs={"padding": before + after, "data_layout": layout,
                             "kernel_layout": f"WINOGRAD4x4OI{ic_bn}i{oc_bn}o", "out_layout": out_layout})
