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
    vectorized -- the packed matmul of :mod:`.matmul` -- in cache blocks (a block's
    rows of ``data`` stay in L2 while its panels go through them, each panel in L1
    while the block's row tiles use it), the blocks spread over the cores.

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
from ...tuner.task.space import InstantiationError, SplitEntity
from ...tuner.task.topi_integration import dispatched_config, register_topi_compute, register_topi_schedule
from .. import nn, tag
from ..generic.default import outputs_of
from ..nn.dense import dense_by_batch
from ..schedule_registry import register_schedule
from ..tunable import schedule_anchor, schedule_either
from ..utils import const_int_or, find_op, get_const_int
from .injective import schedule_injective_from_existing
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
    packed = _pack_stage(lambda j, kk: weight[j, kk], weight.shape[0], data.shape[1], weight.dtype, nr)
    return _packed_product(data, packed, weight.shape[0], bias, out_dtype, nr, "T_dense_pack", DENSE_PACK, {})


def dense_pack_prepacked(data, weight, bias=None, out_dtype=None):
    """``dense`` of a weight packed once, ahead of the runs (TVM's
    ``nn.contrib_dense_pack``, weight layout ``NC{nr}n``): ``weight[N / nr, K, nr]``
    is the column-panel layout :func:`dense_pack` builds in every run, here a
    parameter that AlterOpLayout packed when the model was built.  The same product
    and schedule (:func:`schedule_dense`), tuned as -- and with the records of -- the
    plain layer's workload ("dense_pack.x86" with its ``[N, K]`` weight), whose
    config must have panels ``nr`` wide.

    Raises
    ------
    TopiError
        When ``data`` is not 2-D or the weight not 3-D with ``data``'s ``K``.
    """
    from ..utils import TopiError  # noqa: PLC0415

    if len(data.shape) != 2 or len(weight.shape) != 3:
        raise TopiError(f"dense_pack_prepacked: data must be 2-D [M, K] and the weight 3-D [N / nr, K, nr] "
                        f"(layout NC{{nr}}n), got {list(data.shape)} and {list(weight.shape)}")
    panels, K, nr = (const_int_or(d, None) for d in weight.shape)
    M = const_int_or(data.shape[0], None)
    if None in (panels, K, nr, M) or const_int_or(data.shape[1], None) != K:
        raise TopiError(f"dense_pack_prepacked: data {list(data.shape)} and the packed weight {list(weight.shape)} "
                        "must have constant sizes and agree on K (the weight is [N / nr, K, nr])")
    N = panels * nr
    cfg, workload = _plain_layer_config(data, te.placeholder((N, K), weight.dtype, name="weight"), bias, out_dtype)
    _define_tile_knobs(cfg, M, N, K, out_dtype or data.dtype, nr=nr)
    out = _packed_product(data, weight, N, bias, out_dtype, nr, "T_dense_pack", DENSE_PACK, {})
    out.op.attrs["workload"] = workload  # as register_topi_compute records it
    return out


def _plain_layer_config(data, weight, bias, out_dtype) -> tuple:
    """``(cfg, workload)`` of the plain layer ``dense_pack(data, weight, bias,
    out_dtype)`` (``weight`` ``[N, K]``) under the current dispatch context."""
    return dispatched_config("dense_pack.x86", (data, weight, bias, out_dtype))


def packed_panel_width(data_shape, weight_shape, dtype="float32"):
    """The panel width ``nr`` in which :func:`dense` packs the weight of a layer of
    constant ``data_shape`` ``[M, K]`` and ``weight_shape`` ``[N, K]`` (no bias, output
    in ``dtype``) under the current target and configs -- the layout
    :func:`dense_pack_prepacked` reads -- or None when the layer does not pack it
    (fewer than :data:`PACK_MIN_BATCH` rows)."""
    (M, K), N = data_shape, weight_shape[0]
    if M < PACK_MIN_BATCH:
        return None
    cfg, _ = _plain_layer_config(te.placeholder((M, K), dtype, "data"), te.placeholder((N, K), dtype, "weight"),
                                 None, dtype)
    _define_tile_knobs(cfg, M, N, K, dtype)
    return cfg["tile_x"].size[-1]


def _pack_stage(weight_at, N, K, weight_dtype, nr):
    """``T_dense_pack_weight[N / nr, K, nr]``: ``weight_at(j, k)`` in column panels
    ``nr`` wide, zero past ``N`` (each panel's ``K x nr`` slice contiguous, so the
    register tile's loads of it are too)."""
    n = const_int_or(N, None)
    panels = (N + nr - 1) // nr

    def pack(jo, kk, ji):
        j = jo * nr + ji
        if n is not None and n % nr == 0:
            return weight_at(j, kk)
        return te.if_then_else(j < N, weight_at(j, kk), _op.const(0, weight_dtype))

    return te.compute((panels, K, nr), pack, name="T_dense_pack_weight", tag=DENSE_PACK_WEIGHT)


def _packed_product(data, packed, N, bias, out_dtype, nr, name, tag_, attrs):
    """``C[i, j] = sum_k data[i, k] * packed[j // nr, k, j % nr]`` over the ``N``
    columns (``packed``: :func:`_pack_stage`, or a weight packed ahead), then the
    bias stage when given."""
    out_dtype = out_dtype or data.dtype
    M, K = data.shape
    k = te.reduce_axis((0, K), name="k")

    def cast(x):
        return x if x.dtype == out_dtype else _op.cast(out_dtype, x)

    C = te.compute((M, N), lambda i, j: te.sum(cast(data[i, k]) * cast(packed[j // nr, k, j % nr]), axis=k),
                   name=name, tag=tag_, attrs=dict(attrs, nr=nr))
    if bias is None:
        return C
    return te.compute((M, N), lambda i, j: C[i, j] + cast(bias[j]), name="T_add", tag=tag.BROADCAST)


#: the middle factors ``tile_y`` offers: register tiles per cache block (any, the
#: last block may be partial)
BLOCK_TILES = (1, 2, 4, 8, 16, 32)
#: the largest ``tile_k`` inner factor (reduction steps unrolled in the inner loop)
MAX_K_UNROLL = 8
#: the widest register tile ``tile_x`` offers (``nr``), in vectors
MAX_PANEL_VECTORS = 4
#: vector registers an ``mr x nr`` accumulator tile must leave free (for the panel's
#: vector and the broadcast value of ``A``); a larger tile is refused: it would spill
FREE_REGISTERS = 2
#: the split lengths of the knobs (a config of an older template has other ones)
_KNOB_OUTPUTS = {"tile_y": 3, "tile_x": 3, "tile_k": 2}


def _vector_registers(target) -> int:
    """The vector registers of ``target`` (32 with AVX-512, 16 otherwise)."""
    return 32 if Target.canon(target).vector_bytes() >= 64 else 16


def _row_splits(M, max_mr):
    """The ``tile_y`` choices ``[-1, tiles per block, mr]``: every register tile
    height up to ``max_mr`` (a tail allowed: each row of the last tile is tested, a
    branch the predictor gets right, around its vector operations) times the block
    heights of :data:`BLOCK_TILES` up to the first that holds all ``M`` rows."""
    out = []
    for mr in range(1, max(1, min(M, max_mr)) + 1):
        for tiles in BLOCK_TILES:
            if tiles == 1 or tiles // 2 * mr < M:
                out.append([-1, tiles, mr])
    return out


def _panel_filter(N, lanes):
    """The ``tile_x`` choices kept (all factors divide ``N``: a column tail would
    test every lane inside the reduction): ``nr`` at most :data:`MAX_PANEL_VECTORS`
    vectors, and a whole number of vectors when ``N`` has such a divisor."""
    widest = MAX_PANEL_VECTORS * lanes
    whole = any(N % (v * lanes) == 0 for v in range(1, MAX_PANEL_VECTORS + 1))

    def keep(entity):
        nr = entity.size[-1]
        return nr <= widest and (not whole or nr % lanes == 0)
    return keep


def _fallback_tile(M, N, lanes, registers, nr=None):
    """``(mr, nr)`` of the untuned config: ``nr`` (unless given) two vectors when
    they divide ``N`` (else one, three, four; else the largest divisor of ``N`` up to
    two vectors); ``mr`` rows enough for about three quarters of the vector
    registers (AVX2: 6 x 16 floats, 12 of 16 registers; AVX-512: 8 x 32, 16 of 32),
    at most ``M``."""
    budget = 16 if registers >= 32 else 12
    if nr is None:
        nr = next((v * lanes for v in (2, 1, 3, 4) if N % (v * lanes) == 0), None)
    if nr is None:
        nr = _largest_divisor(N, 2 * lanes)
    return max(1, min(M, budget // -(-nr // lanes))), nr


def _define_tile_knobs(cfg, M, N, K, dtype, nr=None):
    """The knobs of the blocked, register-tiled product (:func:`_register_tile`;
    ``dense_pack``, ``batch_matmul`` and ``matmul``), for an ``M x N`` output (per
    batch) reducing ``K``:

    ``tile_y`` ``[row blocks, tiles per block, mr]``
        ``mr``: the register tile's rows (unrolled; one broadcast of ``A`` per row
        and reduction step), at most the vector registers less
        :data:`FREE_REGISTERS`; the middle factor (:data:`BLOCK_TILES`): row tiles
        per cache block, whose rows of ``A`` stay in L2 while the block's panels go
        through them; the outer loop is spread over the cores.  Neither need divide
        ``M``: the rows past it are skipped.
    ``tile_x`` ``[column blocks, panels per block, nr]``
        ``nr``: the register tile's columns, vectorized (``nr / lanes`` vectors; up
        to :data:`MAX_PANEL_VECTORS`), and the width of ``dense_pack``'s weight
        panels; the middle factor: panels per cache block (each panel's ``K x nr``
        slice stays in L1 while the block's row tiles use it); the outer loop is
        spread over the cores with the row blocks.  Every factor divides ``N``.
    ``tile_k`` ``[-1, ku]``
        reduction steps unrolled in the innermost loop (up to :data:`MAX_K_UNROLL`).

    The accumulator is one ``mr x nr`` tile in vector registers; a config whose tile
    needs more than the registers less :data:`FREE_REGISTERS` is refused
    (:func:`_tile_of`).  There is no reduction block: the whole ``K`` runs inside
    one tile, so the accumulator never leaves the registers.  The fallback:
    :func:`_fallback_knobs` (``nr`` given: the panel width the weight was packed
    with)."""
    target = Target.current(allow_none=True) or "llvm"
    lanes = vector_lanes(dtype)
    registers = _vector_registers(target)
    cfg.define_split("tile_y", M, policy="candidate", num_outputs=3,
                     candidate=_row_splits(M, registers - FREE_REGISTERS))
    cfg.define_split("tile_x", N, num_outputs=3, filter=_panel_filter(N, lanes))
    cfg.define_split("tile_k", K, num_outputs=2, max_factor=MAX_K_UNROLL)
    if cfg.is_fallback:
        _fallback_knobs(cfg, M, N, K, lanes, registers, nr)


def _fallback_knobs(cfg, M, N, K, lanes, registers, nr=None):
    """The untuned config: the register tile of :func:`_fallback_tile`, two row
    tiles rather than one tile for the whole output; no cache blocks (one tile per
    block: the tiles are the parallel tasks; on a 2-core AVX2 machine no block
    measured faster at 512^3 and 1024^3, and blocks of 8 x 8 tiles were about 20%
    slower at 64 x 4096 x 1024); ``ku`` the largest divisor of ``K`` up to 4.

    The tasks run a column of tiles after another (:func:`_register_tile` puts the
    column blocks outside the row blocks): a core's consecutive tiles share one
    ``K x nr`` panel of the weight, which stays in L1, while the rows of ``A``
    stay in L2; in row-major order every tile fetched its panel again, from L3
    once the weight outgrew L2.  2 cores, AVX2, medians of 7 interleaved rounds
    (2026-11-28), GFLOP/s, row-major -> column-major (onnxruntime's MatMul):
    128 x 256 x 1024 118 -> 144 (158), 128 x 1024 x 256 102 -> 124 (140), 128 x 256
    x 256 112 -> 136 (136), 512^3 97 -> 176 (156), 64 x 4096 x 1024 82 -> 95 (135),
    1 x 2048 x 1000 52 -> 56 (38)."""
    mr, nr = _fallback_tile(M, N, lanes, registers, nr)
    if -(-N // nr) == 1 and M <= mr:
        mr = max(1, -(-M // 2))
    cfg["tile_y"] = SplitEntity([-1, 1, mr])
    cfg["tile_x"] = SplitEntity([-1, 1, nr])
    cfg["tile_k"] = SplitEntity([-1, _largest_divisor(K, 4)])


def _tile_of(cfg, what, C):
    """``(mr, nr)`` of ``cfg`` for the product ``C``, after checking the knobs'
    shapes.  A tile of more accumulator vectors than the registers less
    :data:`FREE_REGISTERS` is refused (``cfg.raise_error``: the tuner records it
    without compiling; a schedule built outside the tuner stays correct, slower).

    Raises
    ------
    InstantiationError
        When a knob is not a split into as many loops as this template makes (a
        config of an older version of the template, or of another one)."""
    for name, outputs in _KNOB_OUTPUTS.items():
        size = getattr(cfg[name], "size", None) if name in cfg else None
        if size is None or len(size) != outputs:
            got = "missing" if name not in cfg else repr(cfg[name])
            raise InstantiationError(
                f"{what}: knob {name!r} of the config is {got}, not a split into {outputs} loops; the config is of "
                "an older version of this template or of another template: tune the workload again")
    mr, nr = cfg["tile_y"].size[-1], cfg["tile_x"].size[-1]
    lanes = vector_lanes(C.dtype)
    registers = _vector_registers(Target.current(allow_none=True) or "llvm")
    vectors = mr * -(-nr // lanes)
    if vectors > registers - FREE_REGISTERS:
        cfg.raise_error(
            f"{what}: the register tile of {C.op.name!r}, tile_y x tile_x inner factors {mr} x {nr}, needs {vectors} "
            f"vectors of {lanes} {C.dtype}, more than the {registers - FREE_REGISTERS} of the target's {registers} "
            "vector registers it may use: it would spill to memory; take a smaller mr or nr")
    return mr, nr


@register_topi_compute("dense_pack.x86")
def dense_pack(cfg, data, weight, bias=None, out_dtype=None):
    """``dense`` with the weight packed into column panels as wide as the ``tile_x``
    knob's inner factor (:func:`dense_pack_compute`; scheduled by
    :func:`schedule_dense_pack`)."""
    nn.dense(data, weight, bias, out_dtype)  # argument checks first
    M, K = (const_int_or(d, 32) for d in data.shape)
    N = const_int_or(weight.shape[0], 32)
    _define_tile_knobs(cfg, M, N, K, out_dtype or data.dtype)
    return dense_pack_compute(data, weight, bias, out_dtype, cfg["tile_x"].size[-1])


def _pack_template(cfg, outs):
    """The CPU schedule of ``dense_pack`` (and of element-wise ops after it): the
    weight packed in parallel over its panels, then the blocked register tiles of
    :func:`_register_tile`.

    Knobs (:func:`_define_tile_knobs`): ``tile_y`` ``[row blocks, tiles per block,
    mr]``, ``tile_x`` ``[column blocks, panels per block, nr]`` (``nr`` the panel
    width), ``tile_k`` ``[-1, ku]`` (reduction steps unrolled).
    """
    return schedule_anchor(outs, (DENSE_PACK,), "schedule_dense_pack",
                           lambda s, op, out: _schedule_pack(cfg, s, op.output(0), out))


schedule_dense_pack = register_topi_schedule("dense_pack.x86")(_pack_template)


def _schedule_pack(cfg, s, C, out, what="schedule_dense_pack"):
    packs = [t for t in C.op.input_tensors if t.op.tag == DENSE_PACK_WEIGHT]  # none: packed ahead
    M, N = (const_int_or(d, 32) for d in C.shape)
    K = const_int_or(C.op.reduce_axis[0].dom.extent, 32)
    nr = get_const_int(C.op.attrs["nr"])
    # a fallback takes the panel width the compute chose (dense_pack_compute called directly)
    _define_tile_knobs(cfg, M, N, K, C.dtype, nr=nr)
    cfg.add_flop(2 * M * N * K)
    _tile_of(cfg, what, C)
    if cfg["tile_x"].size[-1] != nr:
        operand = "weight" if C.op.tag == DENSE_PACK else "right operand"
        raise ScheduleError(f"{what}: the {operand} was packed {nr} wide but the config's tile_x is "
                            f"{cfg['tile_x'].size}; build the compute and the schedule under the same config")
    _register_tile(cfg, s, C, out)
    for packed in packs:
        jo, _, ji = s[packed].op.axis
        s[packed].parallel(jo)
        s[packed].vectorize(ji)


def _register_tile(cfg, s, C, out):
    """The blocked, register-tiled loop nest of ``out`` (the product ``C``, or an
    element-wise op of it computed from the tile) by the knobs of
    :func:`_define_tile_knobs`::

        parallel for (batch, column block, row block)   # fused, the row blocks inner
          for panel in block         # tile_x middle: the panel's K x nr slice in L1
            for row tile in block    # tile_y middle: the block's rows of A in L2
              acc[mr][nr] = 0        # local: vector registers
              for k / ku, unrolled ku: for mr rows, unrolled: acc[row] += A[row, k] * B[k, nr vector]
              out[mr rows][nr] = epilogue(acc)

    Leading (batch) axes are fused into the parallel loop."""
    if C.op is out.op:
        CC = s.cache_write(C, "local")  # before the output's loops are split
    else:
        CC = C
        s[CC].set_scope("local")
    axes = list(s[out].op.axis)
    batch, y, x = axes[:-2], axes[-2], axes[-1]
    yt, yo, yi = cfg["tile_y"].apply(s, out, y)
    xt, xo, xi = cfg["tile_x"].apply(s, out, x)
    s[out].reorder(*batch, xt, yt, xo, yo, yi, xi)
    tile = s[out].fuse(*batch, xt, yt)  # column blocks outside row blocks: see _fallback_knobs
    s[out].parallel(tile)
    s[CC].compute_at(s[out], yo)
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


def _schedule_product(cfg, s, C, out, what):
    """A matrix product (``matmul``, ``batch_matmul``, ``matmul_broadcast``): blocked
    register tiles vectorized along the columns (:func:`_register_tile`) when the
    right operand's columns are contiguous, dot products vectorized along the
    reduction when its rows are (``transpose_b``) or the output has fewer than 2
    axes."""
    if any(t.op.tag == DENSE_PACK_WEIGHT for t in C.op.input_tensors):  # matmul_default's packed product
        _schedule_pack(cfg, s, C, out, what)
    elif len(C.shape) >= 2 and not _flag(C.op, "transpose_b", False):
        shape = [const_int_or(d, 32) for d in C.shape]
        K = const_int_or(C.op.reduce_axis[0].dom.extent, 32)
        _define_tile_knobs(cfg, shape[-2], shape[-1], K, C.dtype)
        cfg.add_flop(2 * K * math.prod(shape))
        _tile_of(cfg, what, C)
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
    element-wise ops after them): (batch, block) pairs spread over the cores.  For
    ``transpose_b=False``, cache blocks of register tiles vectorized along the
    columns (:func:`_register_tile`; knobs ``tile_y`` ``[row blocks, tiles per
    block, mr]``, ``tile_x`` ``[column blocks, tiles per block, nr]``, ``tile_k``
    ``[-1, ku]``, see :func:`_define_tile_knobs`); for ``transpose_b=True``, dot
    products vectorized along the reduction (:func:`_dot_products`)."""
    return schedule_anchor(outs, (tag.BATCH_MATMUL,), "schedule_batch_matmul",
                           lambda s, op, out: _schedule_product(cfg, s, op.output(0), out, "schedule_batch_matmul"),
                           epilogue=schedule_injective_from_existing)


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
    (scheduled by :func:`schedule_matmul`).

    ``A @ B`` with at least :data:`PACK_MIN_BATCH` rows and constant sizes reads ``B``
    through column panels ``tile_x[-1]`` wide (``T_dense_pack_weight[N / nr, K, nr]``,
    as :func:`dense_pack` packs its weight): unpacked, every reduction step of a
    register tile loads its ``nr`` columns from a row ``N`` floats away, and at
    1024^3 the product ran at 55 GFLOP/s against 143 packed (2-core AVX2 VM, numpy
    151).  Transposed operands, fewer rows (packing would cost as much as the
    product) and symbolic sizes keep the plain compute."""
    plain = nn.matmul(tensor_a, tensor_b, bias, out_dtype, transpose_a, transpose_b)  # the checks first
    sizes = [const_int_or(d, None) for d in (*tensor_a.shape, tensor_b.shape[1])]
    if transpose_a or transpose_b or None in sizes or sizes[0] < PACK_MIN_BATCH:
        return plain
    M, K, N = sizes
    _define_tile_knobs(cfg, M, N, K, out_dtype or tensor_a.dtype)
    nr = cfg["tile_x"].size[-1]
    packed = _pack_stage(lambda j, kk: tensor_b[kk, j], N, K, tensor_b.dtype, nr)
    return _packed_product(tensor_a, packed, N, bias, out_dtype, nr, "C", tag.MATMUL,
                           {"transpose_a": False, "transpose_b": False})


def _matmul_template(cfg, outs):
    """The CPU schedule of ``matmul`` (and of element-wise ops after it, a bias
    included): :func:`_schedule_product` with no batch; the knobs of
    :func:`_batch_matmul_template`."""
    return schedule_anchor(outs, (tag.MATMUL,), "schedule_matmul",
                           lambda s, op, out: _schedule_product(cfg, s, op.output(0), out, "schedule_matmul"),
                           epilogue=schedule_injective_from_existing)


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
