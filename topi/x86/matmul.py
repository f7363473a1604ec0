"""A packed, register-tiled matmul for CPUs (C with OpenMP and GCC vectors)."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...target import Target


def matmul_packed_compute(A, B, nr=32, name="C"):
    """``C = A @ B`` reading B through ``packedB``, B laid out in column panels ``nr``
    wide (contiguous along k): ``packedB[jo, k, ji] = B[k, jo * nr + ji]``."""
    n, K = A.shape
    m = B.shape[1]
    k = te.reduce_axis((0, K), name="k")
    packed = te.compute((m // nr, K, nr), lambda jo, kk, ji: B[kk, jo * nr + ji], name="packedB",
                        tag="matmul_pack")
    return te.compute((n, m), lambda i, j: te.sum(A[i, k] * packed[j // nr, k, j % nr], axis=k), name=name,
                      tag="matmul_packed")


def schedule_matmul_packed(s, C, mr=8, nr=32):
    """A BLAS-like kernel: an ``mr x nr`` tile of C accumulated in a local buffer
    (``cache_write``, kept in registers), k innermost over one panel of packed B, the
    tile's rows unrolled and columns vectorized, panels spread over the CPU threads."""
    (packed,) = [t for t in C.op.input_tensors if t.op.tag == "matmul_pack"]
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nr)
    s[C].reorder(jo, io, ii, ji)
    s[CC].compute_at(s[C], io)
    mc, nc = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    s[CC].reorder(kk, mc, nc)
    s[CC].unroll(mc)
    s[CC].vectorize(nc)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(jo)
    x, _, z = s[packed].op.axis
    s[packed].vectorize(z)
    s[packed].parallel(x)
    return s


def register_tile(target) -> tuple:
    """``(mr, nr)``: an accumulator tile of ``mr`` rows of ``nr`` floats that fits the
    vector registers of ``target`` with room for the loaded values (AVX-512: 32
    registers of 16 floats -> 8 x 32, 16 accumulators; AVX2: 16 registers of 8 ->
    2 x 32; SSE/NEON: 16 of 4 -> 2 x 16).  Measured on 1024^3: on an AVX2 machine
    2 x 32 runs twice as fast as 8 x 32."""
    vector_bytes = Target.canon(target).vector_bytes()
    if vector_bytes >= 64:
        return 8, 32
    if vector_bytes >= 32:
        return 2, 32
    return 2, 16


def matmul_packed(n: int, mr: int = None, nr: int = None, dtype: str = "float32", target="llvm -mcpu=native"):
    """An ``n x n x n`` matmul scheduled like a BLAS kernel
    (:func:`schedule_matmul_packed`), its register tile (``mr x nr``) fitted to the
    target's vector registers unless given (:func:`register_tile`).

    Returns
    -------
    (Schedule, [A, B, C])
    """
    fit_mr, fit_nr = register_tile(target)
    mr = fit_mr if mr is None else mr
    nr = fit_nr if nr is None else nr
    if n % mr or n % nr:
        raise ScheduleError(f"matmul_packed: n={n} must be a multiple of mr={mr} and nr={nr}")
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    C = matmul_packed_compute(A, B, nr)
    s = te.create_schedule(C.op)
    schedule_matmul_packed(s, C, mr, nr)
    return s, [A, B, C]
