"""Hand-written CPU schedules shared by the demo, the benchmarks and the tests."""
from __future__ import annotations

from ..errors import ScheduleError
from .. import te


def matmul_packed(n: int, mr: int = 8, nr: int = 32, dtype: str = "float32"):
    """An ``n x n x n`` matmul scheduled like a BLAS kernel.

    B is packed into column panels ``nr`` wide (contiguous along k); an ``mr x nr``
    tile of C is accumulated in a local buffer (``cache_write``) that the C backend
    keeps in registers; k runs innermost over one panel, the tile's rows are unrolled
    and its columns vectorized; panels are spread over the CPU threads.

    Returns
    -------
    (Schedule, [A, B, C])
    """
    if n % mr or n % nr:
        raise ScheduleError(f"matmul_packed: n={n} must be a multiple of mr={mr} and nr={nr}")
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    packedB = te.compute((n // nr, n, nr), lambda jo, kk, ji: B[kk, jo * nr + ji], name="packedB")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * packedB[j // nr, k, j % nr], axis=k), name="C")
    s = te.create_schedule(C.op)
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
    x, _, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    return s, [A, B, C]
