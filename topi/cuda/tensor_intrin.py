"""Tensor-core intrinsics for ``s[T].tensorize`` (TVM's ``topi.cuda.tensor_intrin``
names and signatures).

Each declares, over one wmma tile, what the hardware call computes -- a copy into
or out of a fragment, or ``C += A x B`` -- and emits the call
(:mod:`tecc.tir.keys`: ``tvm_load_matrix_sync``, ``tvm_fill_fragment``,
``tvm_mma_sync``, ``tvm_store_matrix_sync``).  A fragment buffer is a 2-D array of
tiles with the strides given (``[cols, 1]``); the tile whose first element sits at
``elem_offset`` is fragment number ``offset // (rows * cols) + offset % (rows *
cols) // tile_cols`` of it, which numbers the tiles row by row for the layouts the
schedules make (a row of tiles is at most 16 tiles wide).

``shape`` is the wmma shape ``(m, n, k)``: ``(16, 16, 16)``, ``(32, 8, 16)`` or
``(8, 32, 16)`` for float16 operands.
"""
from __future__ import annotations

from ... import te
from ...tir import op as _op
from ...tir.ir_builder import create as _ir_builder
from ...tir.stmt import decl_buffer

#: what tecc's fragments are aligned to, and the granularity of their offsets
_ALIGN = 32
_OFFSET_FACTOR = 8


def _fragment_number(offset, rows, cols):
    """The number of the tile starting at element ``offset`` of a fragment buffer of
    ``rows x cols`` tiles (see the module docs)."""
    size = rows * cols
    return offset // size + offset % size // cols


def _emit(op, *args):
    ib = _ir_builder()
    ib.emit(_op.call_intrin("handle", op, *args))
    return ib.get()


def _copy_intrin(strides_dst, strides_from, A_shape, C_shape, dtype, scope_from, scope_dst, make_call):
    """An intrinsic copying a tile of ``A_shape`` (in ``scope_from``) to ``C_shape``
    (in ``scope_dst``); ``make_call(src_buffer, dst_buffer)`` gives its statement."""
    A = te.placeholder(A_shape, name="A", dtype=dtype)
    BA = decl_buffer(A.shape, A.dtype, scope=scope_from, strides=strides_from, data_alignment=_ALIGN,
                     offset_factor=_OFFSET_FACTOR)
    C = te.compute(C_shape, lambda *i: A(*i), name="C")
    BC = decl_buffer(C.shape, C.dtype, scope=scope_dst, strides=strides_dst, data_alignment=_ALIGN,
                     offset_factor=_OFFSET_FACTOR)

    def intrin_func(ins, outs):
        return make_call(ins[0], outs[0])

    return te.decl_tensor_intrin(C.op, intrin_func, binds={A: BA, C: BC})


def _load_intrin(scope, rows, cols, strides_dst, strides_from, shape, layout, A_shape, C_shape, in_dtype):
    """A load from shared memory into a fragment of ``scope`` whose tiles are ``rows x
    cols`` in the fragment buffer."""
    m, n, k = shape

    def call(src, dst):
        return _emit("tir.tvm_load_matrix_sync", dst.data, m, n, k, _fragment_number(dst.elem_offset, rows, cols),
                     src.access_ptr("r"), strides_from[0], layout)

    return _copy_intrin(strides_dst, strides_from, A_shape, C_shape, in_dtype, "shared", scope, call)


def intrin_wmma_load_matrix_A(strides_dst, strides_from, shape, layout, A_shape, C_shape, in_dtype):
    """Load a tile of matrix A (``m x k``) from shared memory into a ``wmma.matrix_a``
    fragment.  ``layout``: ``"row_major"`` when the tile's rows are ``m``,
    ``"col_major"`` when they are ``k``."""
    m, _, k = shape
    rows, cols = (m, k) if layout == "row_major" else (k, m)
    return _load_intrin("wmma.matrix_a", rows, cols, strides_dst, strides_from, shape, layout, A_shape, C_shape,
                        in_dtype)


def intrin_wmma_load_matrix_W(strides_dst, strides_from, shape, layout, A_shape, C_shape, in_dtype):
    """Load a tile of matrix B (``k x n``) from shared memory into a ``wmma.matrix_b``
    fragment.  ``layout``: ``"row_major"`` when the tile's rows are ``k``,
    ``"col_major"`` when they are ``n`` (a dense layer's weight, ``[out, in]``)."""
    _, n, k = shape
    rows, cols = (k, n) if layout == "row_major" else (n, k)
    return _load_intrin("wmma.matrix_b", rows, cols, strides_dst, strides_from, shape, layout, A_shape, C_shape,
                        in_dtype)


def intrin_wmma_store_matrix(strides_dst, strides_from, shape, out_dtype, A_shape, C_shape):
    """Store a ``wmma.accumulator`` fragment (``m x n``) to shared memory, row-major."""
    m, n, k = shape

    def call(src, dst):
        return _emit("tir.tvm_store_matrix_sync", src.data, m, n, k, _fragment_number(src.elem_offset, m, n),
                     dst.access_ptr("w"), strides_dst[0], "row_major")

    return _copy_intrin(strides_dst, strides_from, A_shape, C_shape, out_dtype, "wmma.accumulator", "shared", call)


def intrin_wmma_gemm(AL_gemm, WL_gemm, CL_compute, strides_A, strides_W, strides_Conv, shape):
    """``C += A x B`` on fragments: ``AL_gemm`` and ``WL_gemm`` the placeholders of
    one tile of each operand, ``CL_compute`` the compute of one output tile over
    them (its reduction over ``k``); the reset fills the accumulator with zeros."""
    m, n, k = shape
    A, B, C = AL_gemm, WL_gemm, CL_compute
    BA = decl_buffer(A.shape, A.dtype, name="BA", scope="wmma.matrix_a", data_alignment=_ALIGN,
                     offset_factor=_OFFSET_FACTOR, strides=strides_A)
    BB = decl_buffer(B.shape, B.dtype, name="BB", scope="wmma.matrix_b", data_alignment=_ALIGN,
                     offset_factor=_OFFSET_FACTOR, strides=strides_W)
    BC = decl_buffer(C.shape, C.dtype, name="BC", scope="wmma.accumulator", data_alignment=_ALIGN,
                     offset_factor=_OFFSET_FACTOR, strides=strides_Conv)
    a_rows, a_cols = A.shape[0].value, A.shape[1].value
    b_rows, b_cols = B.shape[0].value, B.shape[1].value

    def intrin_func(ins, outs):
        fa, fb = ins
        (fc,) = outs
        ia = _fragment_number(fa.elem_offset, a_rows, a_cols)
        ib = _fragment_number(fb.elem_offset, b_rows, b_cols)
        ic = _fragment_number(fc.elem_offset, m, n)
        update = _emit("tir.tvm_mma_sync", fc.data, ic, fa.data, ia, fb.data, ib, fc.data, ic)
        reset = _emit("tir.tvm_fill_fragment", fc.data, m, n, k, ic, 0.0)
        return update, reset, update

    return te.decl_tensor_intrin(C.op, intrin_func, binds={A: BA, B: BB, C: BC})


__all__ = ["intrin_wmma_gemm", "intrin_wmma_load_matrix_A", "intrin_wmma_load_matrix_W", "intrin_wmma_store_matrix"]
