"""Dense layers on tensor cores: ``dense_tensorcore`` and its tunable schedule
(TVM's ``dense_tensorcore.cuda`` template and knobs).

``out[i, j] = sum_k data[i, k] * weight[j, k]`` with float16 operands, accumulated in
float32 (``out_dtype="float32"``) or float16 -- or bfloat16 operands (sm_80 and
later), accumulated in float32 and rounded once to a bfloat16 result -- computed by
wmma fragments:

* a block of ``block_row_warps x block_col_warps`` warps computes a tile of
  ``block_row_warps * warp_row_tiles * m`` rows by ``block_col_warps *
  warp_col_tiles * n`` columns; each warp keeps ``warp_row_tiles x
  warp_col_tiles`` accumulator fragments;
* the reduction goes ``chunk`` fragments of ``k = 16`` at a time: the block's rows
  of ``data`` and of ``weight`` are staged in shared memory (rows padded by
  ``offset`` elements against bank conflicts), every thread loading ``vec``
  elements at a time; each warp loads its fragments from there (``weight`` rows as
  a column-major ``matrix_b``) and multiplies;
* the accumulators go back through shared memory (rows padded by ``offsetCS``),
  from where the block writes the output -- and the element-wise operations fused
  after it (bias, activation) -- ``vec`` elements per thread.

``wmma_m`` picks the fragment shape: ``16x16x16``, ``32x8x16`` or ``8x32x16``.
The shapes must be whole multiples of it (batch of ``m``, ``in_dim`` of 16,
``out_dim`` of ``n``); :func:`dense_tensorcore` refuses others with the fix.
"""
from __future__ import annotations

import itertools

from ... import te
from ...tir import keys
from ...tir import op as _op
from ...tir.analysis.fragments import OPERAND_RULES, operand_arch
from ...tir.analysis.verify_gpu import arch_number
from ...tuner.task.space import OtherOptionEntity
from ...tuner.task.topi_integration import register_topi_compute, register_topi_schedule
from .. import nn, tag
from ..math import cast
from ..tunable import schedule_anchor
from ..utils import TopiError, get_const_tuple
from .dense import FILL_BLOCKS, inline_injective_inputs
from .tensor_intrin import (
    intrin_wmma_gemm, intrin_wmma_load_matrix_A, intrin_wmma_load_matrix_W, intrin_wmma_store_matrix,
)
from .utils import BlockBudget

#: wmma_m -> the fragment shape (m, n, k) for float16 operands (the shapes wmma has)
WMMA_SHAPES = {shape[0]: shape for shape in _op.WMMA_SHAPES}
WARP_SIZE = keys.WARP_SIZE


def _shapes_fitting(batch, in_dim, out_dim, b_kn=False) -> list:
    """The wmma_m values whose fragments tile the product exactly.  With ``b_kn`` (B
    as ``[K, N]``: the B fragments of a k step sit side by side in its rows) not the
    32x8x16 ones: a B fragment starts ``n`` = 8 halves (16 bytes) after its
    neighbour, off wmma's 256-bit alignment."""
    return [m for m, (fm, fn, fk) in WMMA_SHAPES.items()
            if batch % fm == 0 and out_dim % fn == 0 and in_dim % fk == 0 and not (b_kn and fn == 8)]


def half_operands_error(what, names, a, b, out_dtype):
    """Why ``a`` and ``b`` (called ``names``) with ``out_dtype`` are not operands of a
    tensor-core template (``what``) -- float16 or bfloat16 operands, both the same;
    a result of their type or float32 -- or None when they are.  The templates raise
    it; the checks that pick them (``tensorcore_*_fits``) take None as a yes."""
    if a.dtype != b.dtype or a.dtype not in OPERAND_RULES:
        return (f"{what}: {names[0]} and {names[1]} must both be float16 or both bfloat16 (the tensor cores' "
                f"operands here), got {a.dtype} and {b.dtype}; cast them with topi.cast(t, 'float16')")
    if (out_dtype or a.dtype) not in (a.dtype, "float32"):
        return f"{what}: out_dtype must be 'float32' or {a.dtype!r} (the operands' type), got {out_dtype!r}"
    return None


def accumulator_dtype(in_dtype: str, out_dtype: str) -> str:
    """The type a tensor-core product of ``in_dtype`` operands accumulates in for a
    result of ``out_dtype``: that type where wmma has such accumulators (float32;
    float16 for float16 operands, as TVM), else float32 (bfloat16 operands: the
    result is rounded once, as cuBLAS's bfloat16 GEMM does)."""
    return out_dtype if out_dtype in OPERAND_RULES[in_dtype][0] else "float32"


def rounded(product, out_dtype):
    """``product`` as ``out_dtype``: itself, or :func:`tecc.topi.cast` of it (the
    templates' output stage computes it from the staged accumulators)."""
    return product if product.dtype == out_dtype else cast(product, out_dtype)


def tensorcore_dense_fits(data, weight, out_dtype=None) -> bool:
    """Whether :func:`dense_tensorcore` computes this dense layer on the current
    target: float16 or bfloat16 operands of constant shapes that a fragment shape
    tiles, a result of their type or float32, and tensor cores for them on the
    architecture the target builds for (sm_70 and later, sm_80 for bfloat16; the
    emulator's sm_80 without a GPU).  What :func:`tecc.topi.cuda.dense` asks before
    it picks tensor cores, as TVM's CUDA strategy does."""
    if half_operands_error("dense", ("data", "weight"), data, weight, out_dtype):
        return False
    shape = get_const_tuple(data.shape) + get_const_tuple(weight.shape)
    if len(shape) != 4 or not all(isinstance(d, int) for d in shape) or not _shapes_fitting(*shape[:3]):
        return False
    return _tensor_cores_here(data.dtype)


def _tensor_cores_here(dtype="float16") -> bool:
    """Whether the architecture the current target builds for has tensor cores that
    take ``dtype`` operands."""
    return (arch_number(BlockBudget().limits.arch) or 0) >= operand_arch(dtype)


@register_topi_compute("dense_tensorcore.cuda")
def dense_tensorcore(cfg, data, weight, bias=None, out_dtype=None):
    """The dense compute for :func:`schedule_dense_tensorcore`: float16 (or bfloat16,
    on sm_80 and later) ``data`` ``[batch, in_dim]`` and ``weight`` ``[out_dim,
    in_dim]``; ``out_dtype`` ``"float32"`` or the operands' type (the default, as
    TVM).  bfloat16 accumulates in float32, rounded once at the output.

    Raises
    ------
    TopiError
        For other dtypes, or shapes that no wmma fragment shape tiles (a batch a
        multiple of 8, 16 or 32 with ``out_dim`` a multiple of 32, 16 or 8, and
        ``in_dim`` a multiple of 16).
    """
    out_dtype = out_dtype or data.dtype
    error = half_operands_error("dense_tensorcore", ("data", "weight"), data, weight, out_dtype)
    if error:
        raise TopiError(error)
    shape = get_const_tuple(data.shape) + get_const_tuple(weight.shape)
    if len(shape) != 4 or not all(isinstance(d, int) for d in shape):
        raise TopiError(f"dense_tensorcore: needs 2-D operands of constant shape, got data {data.shape} and weight "
                        f"{weight.shape}")
    batch, in_dim, out_dim = shape[0], shape[1], shape[2]
    if not _shapes_fitting(batch, in_dim, out_dim):
        raise TopiError(f"dense_tensorcore: (batch, in_dim, out_dim) = {(batch, in_dim, out_dim)} is not a multiple of "
                        "any wmma tile: (16, 16, 16), (32, 16, 8) or (8, 16, 32); pad the operands (topi.nn.pad) or "
                        "use topi.cuda.dense")
    return rounded(nn.dense(data, weight, bias, accumulator_dtype(data.dtype, out_dtype)), out_dtype)


def _define_knobs(cfg, batch, in_dim, out_dim, b_kn=False, products=1):
    fitting = _shapes_fitting(batch, in_dim, out_dim, b_kn)
    cfg.define_knob("block_row_warps", [1, 2, 4])
    cfg.define_knob("block_col_warps", [1, 2, 4])
    cfg.define_knob("warp_row_tiles", [1, 2, 4])
    cfg.define_knob("warp_col_tiles", [1, 2, 4])
    cfg.define_knob("chunk", [1, 2, 4, 8])
    cfg.define_knob("offset", [0, 8])
    cfg.define_knob("offsetCS", [0, 8])
    cfg.define_knob("vec", [1, 2, 4, 8])
    cfg.define_knob("wmma_m", fitting)
    if cfg.is_fallback:
        _fallback(cfg, batch, in_dim, out_dim, fitting, products)


#: an untuned product's grid has at least this many blocks where its shape allows
#: (about one per SM of an H100); a smaller grid takes smaller tiles
MIN_BLOCKS = FILL_BLOCKS // 2


def _fallback(cfg, batch, in_dim, out_dim, fitting, products=1):
    """Untuned: 16x16x16 fragments where they fit; the largest tile of up to 2x2 warps
    of up to 2x2 fragments (64x64) that divides the shape and still gives
    :data:`MIN_BLOCKS` blocks over the ``products`` of a batch (the one with the most
    blocks when none does); 32 elements of k per step, padded shared rows, 16-byte
    accesses."""
    m = 16 if 16 in fitting else fitting[0]
    fm, fn, _ = WMMA_SHAPES[m]
    tiles = []
    for brw, wrt, bcw, wct in itertools.product((1, 2), repeat=4):
        rows, cols = brw * wrt * fm, bcw * wct * fn
        if batch % rows == 0 and out_dim % cols == 0:
            blocks = products * (batch // rows) * (out_dim // cols)
            # bigger tiles first; of one size, more warps (the work spread wider)
            tiles.append((blocks >= MIN_BLOCKS, rows * cols, brw * bcw, blocks, (brw, wrt, bcw, wct)))
    filling = [t for t in tiles if t[0]]
    best = max(filling) if filling else max(tiles, key=lambda t: (t[3], t[1]))
    brw, wrt, bcw, wct = best[4]
    chunk = 2 if in_dim % 32 == 0 else 1
    for name, value in (("block_row_warps", brw), ("block_col_warps", bcw), ("warp_row_tiles", wrt),
                        ("warp_col_tiles", wct), ("chunk", chunk), ("offset", 8), ("offsetCS", 8), ("vec", 8),
                        ("wmma_m", m)):
        cfg[name] = OtherOptionEntity(value)


def _fits(entity, budget, shape, in_bytes, out_bytes) -> bool:
    """Whether a config's block tiles ``shape`` (batch, in_dim, out_dim) exactly and
    fits ``budget``: its warps, and the shared tiles of both operands plus the
    output staging."""
    fm, fn, fk = WMMA_SHAPES[entity["wmma_m"].val]
    rows = entity["block_row_warps"].val * entity["warp_row_tiles"].val * fm
    cols = entity["block_col_warps"].val * entity["warp_col_tiles"].val * fn
    batch, in_dim, out_dim = shape
    if batch % rows or out_dim % cols or in_dim % (entity["chunk"].val * fk):
        return False
    row_len = entity["chunk"].val * fk + entity["offset"].val
    shared = in_bytes * row_len * (rows + cols) + out_bytes * rows * (cols + entity["offsetCS"].val)
    threads = (WARP_SIZE, entity["block_row_warps"].val, entity["block_col_warps"].val)
    return budget.fits(threads, shared)


def _schedule(cfg, s, C, out):
    """Schedule the product ``C`` (``[M, N]``, or ``[batch, M, N]`` over operands
    ``[batch, M, K]`` and ``[batch, N, K]``) written through ``out`` (see the module
    docs); a batch goes to ``blockIdx.z``."""
    inline_injective_inputs(s, C)  # a fused reshape or transpose of an operand: computed by the shared loads
    A, B = s[C].op.input_tensors
    shape = get_const_tuple(C.shape)
    batch, out_dim = shape[-2], shape[-1]
    in_dim = get_const_tuple(A.shape)[-1]
    nbatch = len(shape) - 2  # leading batch axes (0 or 1)
    b_kn = not C.op.attrs.get("transpose_b", True)
    _define_knobs(cfg, batch, in_dim, out_dim, b_kn, shape[0] if nbatch else 1)
    in_bytes, out_bytes = 2, 4 if C.dtype == "float32" else 2
    budget = BlockBudget()
    cfg.multi_filter(filter=lambda e: _fits(e, budget, (batch, in_dim, out_dim), in_bytes, out_bytes),
                     reason=f"its block tile does not divide (batch, out_dim) = {(batch, out_dim)} or its k step "
                            f"in_dim = {in_dim}, or the block does not fit {budget.limits.arch} (block_row_warps x "
                            "block_col_warps warps, shared tiles of chunk x 16 steps of the block's rows and columns, "
                            "and the staged output)")
    cfg.add_flop(2 * batch * in_dim * out_dim * (shape[0] if nbatch else 1))
    brw, bcw = cfg["block_row_warps"].val, cfg["block_col_warps"].val
    wrt, wct = cfg["warp_row_tiles"].val, cfg["warp_col_tiles"].val
    chunk, offset, offset_cs, vec = cfg["chunk"].val, cfg["offset"].val, cfg["offsetCS"].val, cfg["vec"].val
    fm, fn, fk = WMMA_SHAPES[cfg["wmma_m"].val]

    AS = s.cache_read(A, "shared", [C])
    BS = s.cache_read(B, "shared", [C])
    AF = s.cache_read(AS, "wmma.matrix_a", [C])
    BF = s.cache_read(BS, "wmma.matrix_b", [C])
    CF = s.cache_write(C, "wmma.accumulator")
    CS = s.cache_read(CF, "shared", [C])
    if C.op is not out.op:
        s[C].compute_inline()

    # B as [N, K] (a dense weight, batch_matmul's default): its shared rows are k runs,
    # loaded as a column-major matrix_b; as [K, N] (batch_matmul with transpose_b=False):
    # its rows are n runs, a row-major matrix_b
    as_row = chunk * fk + offset
    bs_row = bcw * wct * fn + offset if b_kn else as_row
    cs_row = bcw * wct * fn + offset_cs
    block_x, block_y = te.thread_axis("blockIdx.x"), te.thread_axis("blockIdx.y")
    thread_x, thread_y, thread_z = (te.thread_axis(f"threadIdx.{a}") for a in "xyz")

    def spread(stage, *axes):
        """The threads of the block over the fused ``axes``, ``vec`` elements each."""
        t = s[stage].fuse(*axes)
        t, vi = s[stage].split(t, factor=vec)
        t, tx = s[stage].split(t, factor=WARP_SIZE)
        t, ty = s[stage].split(t, factor=brw)
        _, tz = s[stage].split(t, factor=bcw)
        s[stage].bind(tx, thread_x)
        s[stage].bind(ty, thread_y)
        s[stage].bind(tz, thread_z)
        s[stage].vectorize(vi)

    # the output: a block per tile (and batch), written from the staged accumulators
    *bz, i, j = s[out].op.axis
    bi, ii = s[out].split(i, factor=brw * wrt * fm)
    bj, jj = s[out].split(j, factor=bcw * wct * fn)
    s[out].reorder(*bz, bi, bj, ii, jj)
    if bz:
        s[out].bind(bz[0], te.thread_axis("blockIdx.z"))
    s[out].bind(bi, block_x)
    s[out].bind(bj, block_y)
    spread(out, ii, jj)

    # the accumulators, staged through shared memory: a warp stores its fragments
    s[CS].compute_at(s[out], bj)
    *_, ci, cj = CS.op.axis
    s[CS].storage_align(ci, cs_row - 1, cs_row)
    ci, cii = s[CS].split(ci, factor=fm)
    cj, cjj = s[CS].split(cj, factor=fn)
    ci, ci_t = s[CS].split(ci, factor=wrt)
    cj, cj_t = s[CS].split(cj, factor=wct)
    s[CS].reorder(ci, cj, ci_t, cj_t, cii, cjj)
    s[CS].bind(ci, thread_y)
    s[CS].bind(cj, thread_z)

    # the warp's product: fragments of C over chunks of k
    s[CF].compute_at(s[CS], cj)
    *_, wi, wj = CF.op.axis
    wi, wii = s[CF].split(wi, factor=fm)
    wj, wjj = s[CF].split(wj, factor=fn)
    (k,) = CF.op.reduce_axis
    k, kk = s[CF].split(k, factor=fk)
    ko, ki = s[CF].split(k, factor=chunk)
    s[CF].reorder(ko, ki, wi, wj, wii, wjj, kk)

    # fragment loads, one k step at a time
    s[AF].compute_at(s[CF], ki)
    *_, ai, ak = AF.op.axis
    ai, aii = s[AF].split(ai, factor=fm)
    ak, akk = s[AF].split(ak, factor=fk)
    s[AF].reorder(ai, ak, aii, akk)
    s[BF].compute_at(s[CF], ki)
    if b_kn:
        *_, bk, bo = BF.op.axis
        bk, bkk = s[BF].split(bk, factor=fk)
        bo, boo = s[BF].split(bo, factor=fn)
        s[BF].reorder(bk, bo, bkk, boo)
        b_tile_axis = bkk
    else:
        *_, bo, bk = BF.op.axis
        bo, boo = s[BF].split(bo, factor=fn)
        bk, bkk = s[BF].split(bk, factor=fk)
        s[BF].reorder(bo, bk, boo, bkk)
        b_tile_axis = boo

    # the shared tiles of both operands, a chunk of k at a time
    for stage, row in ((AS, as_row), (BS, bs_row)):
        s[stage].compute_at(s[CF], ko)
        axes = stage.op.axis
        s[stage].storage_align(axes[-2], row - 1, row)
        spread(stage, *axes)

    shape = (fm, fn, fk)
    a_tile = te.placeholder((fm, fk), name="AL_gemm", dtype=A.dtype)
    b_tile = te.placeholder((fk, fn) if b_kn else (fn, fk), name="BL_gemm", dtype=B.dtype)
    kt = te.reduce_axis((0, fk), name="k_gemm")
    c_tile = te.compute((fm, fn), lambda x, y: te.sum(
        a_tile[x, kt].astype(C.dtype) * (b_tile[kt, y] if b_kn else b_tile[y, kt]).astype(C.dtype), axis=kt),
        name="CL_compute")
    as_stride, cs_stride = [as_row, 1], [cs_row, 1]
    af_stride, bf_stride, cf_stride = [fk, 1], [wct * fn, 1] if b_kn else [fk, 1], [wct * fn, 1]
    s[AF].tensorize(aii, intrin_wmma_load_matrix_A(af_stride, as_stride, shape, "row_major", (fm, fk), (fm, fk),
                                                   A.dtype))
    b_shape = (fk, fn) if b_kn else (fn, fk)
    s[BF].tensorize(b_tile_axis, intrin_wmma_load_matrix_W(bf_stride, [bs_row, 1], shape,
                                                           "row_major" if b_kn else "col_major", b_shape, b_shape,
                                                           B.dtype))
    s[CF].tensorize(wii, intrin_wmma_gemm(a_tile, b_tile, c_tile, af_stride, bf_stride, cf_stride, shape))
    s[CS].tensorize(cii, intrin_wmma_store_matrix(cs_stride, cf_stride, shape, C.dtype, (fm, fn), (fm, fn)))


def _template(cfg, outs):
    """The schedule of a tensor-core dense layer (and of element-wise ops after it)."""
    return schedule_anchor(outs, (tag.DENSE,), "schedule_dense_tensorcore",
                           lambda s, op, out: _schedule(cfg, s, op.output(0), out))


schedule_dense_tensorcore = register_topi_schedule("dense_tensorcore.cuda")(_template)

__all__ = ["WMMA_SHAPES", "accumulator_dtype", "dense_tensorcore", "half_operands_error", "rounded",
           "schedule_dense_tensorcore", "tensorcore_dense_fits"]
