"""Fully connected layers and matrix products on CPUs (C with OpenMP and GCC
vectors), with TVM's x86 names.

Two ways to compute ``dense`` (``data @ weight.T``), both tunable:

``dense_nopack`` / ``schedule_dense_nopack`` ("dense_nopack.x86")
    The weight read in place (``[out_dim, in_dim]``, contiguous along the reduction):
    each output is a dot product vectorized along ``in_dim`` (``rfactor`` into one
    vector of partial sums, added up at the end), a few outputs per step sharing the
    loads of ``data``; (row, column) tiles spread over the cores.  Best for a small
    batch, where packing the weight would cost as much as the product.
``dense_pack`` / ``schedule_dense_pack`` ("dense_pack.x86")
    The weight first repacked into column panels ``nr`` wide (``[out_dim / nr,
    in_dim, nr]``, stage ``T_dense_pack_weight``); an ``mr x nr`` tile of the output
    accumulated in registers (a local ``cache_write``), rows unrolled and columns
    vectorized -- the packed matmul of :mod:`.matmul` -- tiles spread over the cores.

:func:`dense` picks one from the batch size; :func:`schedule_dense` schedules the
output of either (or of :func:`tecc.topi.nn.dense`).  Element-wise stages after the
product (bias, activation, residual add) are inlined into the loop that writes the
tile, so the product never goes to memory before them.

:func:`schedule_batch_matmul` and :func:`schedule_matmul` tile ``batch_matmul``,
``matmul_broadcast`` and ``matmul`` the same way, by the layout of the right operand:
columns contiguous -> register tiles vectorized along the columns; rows contiguous
(``transpose_b``) -> dot products vectorized along the reduction.
"""
from __future__ import annotations

import math

from ... import te
from ...errors import ScheduleError
from ...target import Target
from ...tir import op as _op
from ...tuner.task.space import SplitEntity
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn, tag
from ..generic.default import outputs_of
from ..nn.dense import dense_by_batch
from ..schedule_registry import register_schedule
from ..tunable import schedule_anchor, schedule_either
from ..utils import const_int_or, find_op, get_const_int
from .matmul import register_tile
from .utils import vector_lanes

#: the tags of the packed product and of the packed weight
DENSE_PACK = "dense_pack"
DENSE_PACK_WEIGHT = "dense_pack_weight"
#: below this batch, dense() does not pack the weight
PACK_MIN_BATCH = 8


def _dot_tile(M, N, registers=12):
    """``(rows, columns)`` of outputs per step of the dot products: whole divisors
    of ``M`` and ``N``, at most ``registers`` partial-sum vectors, the most
    multiply-adds per vector loaded (``rows * cols / (rows + cols)``)."""
    best, key = (1, 1), None
    for ty in range(1, min(M, 6) + 1):
        if M % ty:
            continue
        for tx in range(1, min(N, 8) + 1):
            if N % tx or ty * tx > registers:
                continue
            k = (ty * tx / (ty + tx), ty * tx)
            if key is None or k > key:
                best, key = (ty, tx), k
    return best


def _largest_divisor(n, limit):
    return max(f for f in range(1, max(1, min(n, limit)) + 1) if n % f == 0)


# ---------------------------------------------------------------------------------------
# dense, weight in place
# ---------------------------------------------------------------------------------------
@register_topi_compute("dense_nopack.x86")
def dense_nopack(cfg, data, weight, bias=None, out_dtype=None):
    """The dense compute of :func:`tecc.topi.nn.dense` (scheduled by
    :func:`schedule_dense_nopack`)."""
    return nn.dense(data, weight, bias, out_dtype)


def _nopack_template(cfg, outs):
    """The CPU schedule of ``dense_nopack`` (and of element-wise ops after it).

    Knobs: ``tile_y`` (rows per tile), ``tile_x`` (columns per tile, unrolled),
    ``tile_k`` (its inner factor: the vector of partial sums along ``in_dim``).
    """
    return schedule_anchor(outs, (tag.DENSE,), "schedule_dense_nopack",
                           lambda s, op, out: _dot_products(cfg, s, op.output(0), out))


schedule_dense_nopack = register_topi_schedule("dense_nopack.x86")(_nopack_template)


def _dot_products(cfg, s, C, out):
    """Each output a dot product along the reduction, vectorized there (``rfactor``
    into ``tile_k``'s inner factor of partial sums), ``tile_x`` columns per step
    unrolled (they share the loads of the left operand); (batch, row, column) tiles
    spread over the cores."""
    (k,) = s[C].op.reduce_axis
    shape = [const_int_or(d, 32) for d in C.shape]
    M, N = (shape[-2] if len(shape) > 1 else 1), (shape[-1] if shape else 1)
    K = const_int_or(k.dom.extent, 32)
    lanes = vector_lanes(C.dtype)
    cfg.add_flop(2 * K * math.prod(shape))
    cfg.define_split("tile_y", M, num_outputs=2, max_factor=8)
    cfg.define_split("tile_x", N, num_outputs=2, max_factor=8)
    cfg.define_split("tile_k", K, num_outputs=2, max_factor=4 * lanes)
    if cfg.is_fallback:
        ty, tx = _dot_tile(M, N)
        cfg["tile_y"] = SplitEntity([-1, ty])
        cfg["tile_x"] = SplitEntity([-1, tx])
        cfg["tile_k"] = SplitEntity([-1, lanes if K % lanes == 0 and K >= lanes else 1])
    kv = cfg["tile_k"].size[-1]
    axes = list(s[out].op.axis)
    if len(axes) >= 2:
        yo, yi = cfg["tile_y"].apply(s, out, axes[-2])
        inner = [yi]
        outer = axes[:-2] + [yo]
    else:
        inner, outer = [], []
    if axes:
        xo, xi = cfg["tile_x"].apply(s, out, axes[-1])
        # columns outside rows: a tile of weight rows stays in cache while every
        # row tile of the (small) left operand goes through it
        outer = outer[:-1] + [xo] + outer[-1:] if inner else outer + [xo]
        s[out].reorder(*outer, *inner, xi)
        tile = s[out].fuse(*outer)
        s[out].parallel(tile)
        s[out].unroll(xi)
    if C.op is not out.op:
        s[C].compute_at(s[out], xi)
    if kv > 1:
        ko, ki = s[C].split(k, factor=kv)
        CF = s.rfactor(C, ki, factor_axis=len(C.shape))  # the partial sums' lanes innermost: contiguous
        cax = list(s[CF].op.axis)
        (kr,) = s[CF].op.reduce_axis
        if axes:
            s[CF].compute_at(s[out], tile)
        s[CF].reorder(kr, *cax)
        for ax in cax[-3:-1]:  # the tile's rows and columns: one register each
            s[CF].unroll(ax)
        s[CF].vectorize(cax[-1])


# ---------------------------------------------------------------------------------------
# dense, weight packed into column panels
# ---------------------------------------------------------------------------------------
def dense_pack_compute(data, weight, bias=None, out_dtype=None, nr=16):
    """``dense`` reading the weight through ``T_dense_pack_weight[N / nr, K, nr]``
    (column panels ``nr`` wide, zero past ``N``): the product ``T_dense_pack``
    (tagged ``dense_pack``, ``attrs["nr"]``), then the bias stage when given."""
    nn.dense(data, weight, bias, out_dtype)  # the checks of topi.nn.dense
    out_dtype = out_dtype or data.dtype
    M, K = data.shape
    N = weight.shape[0]
    n = const_int_or(N, None)
    panels = (N + nr - 1) // nr

    def pack(jo, kk, ji):
        j = jo * nr + ji
        if n is not None and n % nr == 0:
            return weight[j, kk]
        return te.if_then_else(j < N, weight[j, kk], _op.const(0, weight.dtype))

    packed = te.compute((panels, K, nr), pack, name="T_dense_pack_weight", tag=DENSE_PACK_WEIGHT)
    k = te.reduce_axis((0, K), name="k")

    def cast(x):
        return x if x.dtype == out_dtype else _op.cast(out_dtype, x)

    C = te.compute((M, N), lambda i, j: te.sum(cast(data[i, k]) * cast(packed[j // nr, k, j % nr]), axis=k),
                   name="T_dense_pack", tag=DENSE_PACK, attrs={"nr": nr})
    if bias is None:
        return C
    return te.compute((M, N), lambda i, j: C[i, j] + cast(bias[j]), name="T_add", tag=tag.BROADCAST)


def _define_tile_knobs(cfg, M, N, K, dtype):
    """``tile_y`` (``mr``), ``tile_x`` (``nr``), ``tile_k``; the fallback an
    accumulator tile that fits the target's vector registers."""
    mr_fit, nr_fit = register_tile(Target.current(allow_none=True) or "llvm")
    lanes = vector_lanes(dtype)
    cfg.define_split("tile_y", M, num_outputs=2, max_factor=16)
    cfg.define_split("tile_x", N, num_outputs=2, max_factor=64)
    cfg.define_split("tile_k", K, num_outputs=2, max_factor=64)
    if cfg.is_fallback:
        nr = min(nr_fit, -(-N // lanes) * lanes)  # no wider than the columns, rounded to vectors
        cfg["tile_y"] = SplitEntity([-1, min(mr_fit, M)])
        cfg["tile_x"] = SplitEntity([-1, max(1, nr)])
        cfg["tile_k"] = SplitEntity([-1, 1])


@register_topi_compute("dense_pack.x86")
def dense_pack(cfg, data, weight, bias=None, out_dtype=None):
    """``dense`` with the weight packed into column panels as wide as the ``tile_x``
    knob (:func:`dense_pack_compute`; scheduled by :func:`schedule_dense_pack`)."""
    nn.dense(data, weight, bias, out_dtype)  # argument checks first
    M, K = (const_int_or(d, 32) for d in data.shape)
    N = const_int_or(weight.shape[0], 32)
    _define_tile_knobs(cfg, M, N, K, out_dtype or data.dtype)
    return dense_pack_compute(data, weight, bias, out_dtype, cfg["tile_x"].size[-1])


def _pack_template(cfg, outs):
    """The CPU schedule of ``dense_pack`` (and of element-wise ops after it).

    Knobs: ``tile_y`` (``mr``, the register tile's rows, unrolled), ``tile_x``
    (``nr``, its columns: the panel width, vectorized), ``tile_k`` (the reduction's
    inner loop, unrolled).
    """
    return schedule_anchor(outs, (DENSE_PACK,), "schedule_dense_pack",
                           lambda s, op, out: _schedule_pack(cfg, s, op.output(0), out))


schedule_dense_pack = register_topi_schedule("dense_pack.x86")(_pack_template)


def _schedule_pack(cfg, s, C, out):
    (packed,) = [t for t in C.op.input_tensors if t.op.tag == DENSE_PACK_WEIGHT]
    M, N = (const_int_or(d, 32) for d in C.shape)
    K = const_int_or(C.op.reduce_axis[0].dom.extent, 32)
    _define_tile_knobs(cfg, M, N, K, C.dtype)
    cfg.add_flop(2 * M * N * K)
    nr = get_const_int(C.op.attrs["nr"])
    if cfg.is_fallback:  # the panel width the compute chose (dense_pack_compute called directly)
        cfg["tile_x"] = SplitEntity([-1, nr])
    if cfg["tile_x"].size[-1] != nr:
        raise ScheduleError(f"schedule_dense_pack: the weight was packed {nr} wide but the config's tile_x is "
                            f"{cfg['tile_x'].size}; build the compute and the schedule under the same config")
    _register_tile(cfg, s, C, out)
    jo, _, ji = s[packed].op.axis
    s[packed].parallel(jo)
    s[packed].vectorize(ji)


def _register_tile(cfg, s, C, out):
    """An ``mr x nr`` tile of ``out`` per step (``tile_y``, ``tile_x``), the tiles
    spread over the cores, the product accumulated in a local tile (k outside,
    rows unrolled, columns vectorized); leading (batch) axes fused into the
    parallel loop."""
    if C.op is out.op:
        CC = s.cache_write(C, "local")  # before the output's loops are split
    else:
        CC = C
        s[CC].set_scope("local")
    axes = list(s[out].op.axis)
    batch, y, x = axes[:-2], axes[-2], axes[-1]
    yo, yi = cfg["tile_y"].apply(s, out, y)
    xo, xi = cfg["tile_x"].apply(s, out, x)
    s[out].reorder(*batch, xo, yo, yi, xi)
    tile = s[out].fuse(*batch, xo, yo)
    s[out].parallel(tile)
    s[CC].compute_at(s[out], tile)
    cax = list(s[CC].op.axis)
    (k,) = s[CC].op.reduce_axis
    ko, ki = cfg["tile_k"].apply(s, CC, k)
    s[CC].reorder(ko, ki, *cax)
    s[CC].unroll(ki)
    s[CC].unroll(cax[-2])
    s[CC].vectorize(cax[-1])
    s[out].vectorize(xi)
    s[out].unroll(yi)


# ---------------------------------------------------------------------------------------
# batch_matmul, matmul
# ---------------------------------------------------------------------------------------
def _flag(op, name, default):
    v = (op.attrs or {}).get(name)
    return default if v is None else bool(get_const_int(v))


def _schedule_product(cfg, s, C, out):
    """A matrix product (``matmul``, ``batch_matmul``, ``matmul_broadcast``): register
    tiles vectorized along the columns when the right operand's columns are
    contiguous, dot products vectorized along the reduction when its rows are
    (``transpose_b``) or the output has fewer than 2 axes."""
    if len(C.shape) >= 2 and not _flag(C.op, "transpose_b", False):
        shape = [const_int_or(d, 32) for d in C.shape]
        K = const_int_or(C.op.reduce_axis[0].dom.extent, 32)
        _define_tile_knobs(cfg, shape[-2], shape[-1], K, C.dtype)
        cfg.add_flop(2 * K * math.prod(shape))
        _register_tile(cfg, s, C, out)
    else:
        _dot_products(cfg, s, C, out)


@register_topi_compute("batch_matmul.x86")
def batch_matmul(cfg, tensor_a, tensor_b, oshape=None, out_dtype=None, transpose_a=False, transpose_b=True):
    """The compute of :func:`tecc.topi.nn.batch_matmul` (scheduled by
    :func:`schedule_batch_matmul`)."""
    return nn.batch_matmul(tensor_a, tensor_b, oshape, out_dtype, transpose_a, transpose_b)


def _batch_matmul_template(cfg, outs):
    """The CPU schedule of ``batch_matmul`` and ``matmul_broadcast`` (and of
    element-wise ops after them): (batch, tile) pairs spread over the cores; register
    tiles (``tile_y`` x ``tile_x``, ``tile_k`` unrolled) vectorized along the
    columns for ``transpose_b=False``, dot products vectorized along the reduction
    for ``transpose_b=True``."""
    return schedule_anchor(outs, (tag.BATCH_MATMUL,), "schedule_batch_matmul",
                           lambda s, op, out: _schedule_product(cfg, s, op.output(0), out))


_schedule_batch_matmul_task = register_topi_schedule("batch_matmul.x86")(_batch_matmul_template)


@register_schedule(tag.BATCH_MATMUL, "cpu")
def schedule_batch_matmul(outs):
    """The CPU schedule of ``batch_matmul`` / ``matmul_broadcast`` (and of
    element-wise ops after them), tunable as "batch_matmul.x86" (its config found
    through the workload :func:`batch_matmul` records; a fallback config for the
    output of :func:`tecc.topi.nn.batch_matmul`).

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    return schedule_either(outputs_of(outs), "batch_matmul.x86", _schedule_batch_matmul_task,
                           _batch_matmul_template)


@register_topi_compute("matmul.x86")
def matmul_default(cfg, tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False, transpose_b=False):
    """The compute of :func:`tecc.topi.nn.matmul` as the tunable task ``"matmul.x86"``
    (scheduled by :func:`schedule_matmul`)."""
    return nn.matmul(tensor_a, tensor_b, bias, out_dtype, transpose_a, transpose_b)


def _matmul_template(cfg, outs):
    """The CPU schedule of ``matmul`` (and of element-wise ops after it, a bias
    included): :func:`_schedule_product` with no batch; the knobs of
    :func:`_batch_matmul_template`."""
    return schedule_anchor(outs, (tag.MATMUL,), "schedule_matmul",
                           lambda s, op, out: _schedule_product(cfg, s, op.output(0), out))


_schedule_matmul_task = register_topi_schedule("matmul.x86")(_matmul_template)


@register_schedule(tag.MATMUL, "cpu")
def schedule_matmul(outs):
    """The CPU schedule of :func:`tecc.topi.nn.matmul` (and of element-wise ops
    after it, a bias included), as :func:`schedule_batch_matmul` with no batch;
    tunable as ``"matmul.x86"`` (the config found through the workload
    :func:`matmul_default` records; a fallback for a plain ``topi.nn.matmul``)."""
    return schedule_either(outputs_of(outs), "matmul.x86", _schedule_matmul_task, _matmul_template)


# ---------------------------------------------------------------------------------------
# the tecc entry points of dense
# ---------------------------------------------------------------------------------------
def dense(data, weight, bias=None, out_dtype=None):
    """``dense`` for CPUs: :func:`dense_pack` when the batch is at least
    ``PACK_MIN_BATCH`` (packing pays off over the rows), :func:`dense_nopack`
    otherwise, :func:`tecc.topi.nn.dense` for symbolic shapes.  Schedule it with
    :func:`schedule_dense`."""
    return dense_by_batch(data, weight, bias, out_dtype, PACK_MIN_BATCH, dense_pack, dense_nopack)


@register_schedule(tag.DENSE, "cpu")
def schedule_dense(outs):
    """The CPU schedule of a dense layer (and of element-wise ops after it): the
    packed schedule for :func:`dense_pack`, the in-place one for
    :func:`dense_nopack` and :func:`tecc.topi.nn.dense`.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs = outputs_of(outs)
    if _reads_tag(outs, DENSE_PACK):
        return schedule_either(outs, "dense_pack.x86", schedule_dense_pack, _pack_template)
    return schedule_either(outs, "dense_nopack.x86", schedule_dense_nopack, _nopack_template)


def _reads_tag(outs, op_tag) -> bool:
    """True when ``outs`` read (through injective stages) an operation tagged ``op_tag``."""
    return find_op(outs, lambda op: op.tag == op_tag,
                   through=lambda op: tag.is_injective(op.tag) or op is outs[0].op) is not None
