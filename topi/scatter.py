"""Scatters (TVM's ``topi.scatter_elements``, ``topi.scatter_nd``, and the older
``topi.scatter``): ONNX's ``ScatterElements`` and ``ScatterND``.

Each is one ``te.extern`` stage: a copy of ``data`` into the output, then the
updates applied in order.  The CPU statement is declared here; :mod:`.cuda.scatter`
has the GPU one; under a current GPU target (``with Target("cuda"):``) the
operators here declare the GPU version.

Order of the updates (duplicate indices)
----------------------------------------
The updates are applied **in the row-major order of the indices**, on every
target, so with ``"update"`` the last of several updates of one element wins, and
``"add"``/``"mul"``/``"min"``/``"max"`` fold them in that order: the result is
deterministic and equals the sequential loop of :mod:`.testing.scatter`.  The
parallel statements keep this order by giving each thread (or CPU task) every
update that can reach a given output element:

* ``scatter_elements``: one thread per line of ``indices`` along ``axis`` (a
  line only reaches the output line at the same other coordinates), walking it
  in order;
* ``scatter_nd``: one thread per element of the trailing slice ``X_M..X_{N-1}``,
  walking the index tuples in order (so a scatter of single elements, an empty
  slice, runs on one thread).

Indices
-------
A negative index counts from the end of its axis (ONNX); an index still outside
``[0, n)`` after that drops its update (nothing is written out of bounds).
"""
from __future__ import annotations

from .. import te, tir
from ..tir import dtype as _dt
from .sort import check_tensor, describe, is_gpu_target, static_shape
from .utils import TopiError, normalize_axis, prod, ravel_index, unravel_index

SCATTER_ELEMENTS_TAG = "scatter_elements"
SCATTER_ND_TAG = "scatter_nd"

#: the reductions (``reduction=`` / ``mode=``) and how each combines the output's
#: element ``o`` with an update ``u``
REDUCTIONS = {
    "update": lambda o, u: u,
    "add": lambda o, u: o + u,
    "mul": lambda o, u: o * u,
    "min": lambda o, u: te.min(o, u),
    "max": lambda o, u: te.max(o, u),
}

#: elements one CPU task copies
CPU_COPY_BLOCK = 4096


def _check_reduction(reduction, what, name):
    if reduction not in REDUCTIONS:
        raise TopiError(f"{what}: {name} must be one of {list(REDUCTIONS)}, got {reduction!r}")
    return REDUCTIONS[reduction]


def _check_indices(indices, what):
    if not _dt.is_integer(indices.dtype):
        raise TopiError(f"{what}: indices {describe(indices)} must have an integer dtype, got {indices.dtype}")


def wrap_index(idx, n):
    """``(index, in_range)``: ``idx`` as int32 with a negative one counted from the
    end of an axis of ``n``, and whether it then lies in ``[0, n)``."""
    idx = idx if idx.dtype == "int32" else idx.astype("int32")
    idx = tir.Select(idx < 0, idx + n, idx)
    return idx, tir.all(idx >= 0, idx < n)


def check_scatter_elements(data, indices, updates, axis, reduction):
    """``(axis, combine)`` for :func:`scatter_elements`; raise on bad arguments."""
    for t, name in ((data, "data"), (indices, "indices"), (updates, "updates")):
        check_tensor(t, f"scatter_elements: {name}")
    what = (f"scatter_elements(data {describe(data)}, indices {describe(indices)}, updates {describe(updates)}, "
            f"axis={axis}, reduction={reduction!r})")
    combine = _check_reduction(reduction, what, "reduction")
    dshape, ishape, ushape = (static_shape(t, what) for t in (data, indices, updates))
    _check_indices(indices, what)
    if not dshape:
        raise TopiError(f"{what}: cannot scatter into a rank-0 tensor")
    axis = normalize_axis(axis, len(dshape), what)
    if ishape != ushape:
        raise TopiError(f"{what}: indices have shape {ishape} but updates {ushape}; they must be equal")
    if len(ishape) != len(dshape):
        raise TopiError(f"{what}: indices have rank {len(ishape)} but data rank {len(dshape)}; they must be equal")
    for k, (d, i) in enumerate(zip(dshape, ishape)):
        if k != axis and i > d:
            raise TopiError(f"{what}: indices have size {i} along axis {k} but data only {d}")
    if updates.dtype != data.dtype:
        raise TopiError(f"{what}: updates have dtype {updates.dtype} but data {data.dtype}; they must be equal")
    return axis, combine


def check_scatter_nd(data, indices, updates, mode):
    """``(M, Y, X)`` for :func:`scatter_nd`: the index-tuple length, the number of
    tuples and the size of the slice each update writes; ``combine``."""
    for t, name in ((data, "data"), (indices, "indices"), (updates, "updates")):
        check_tensor(t, f"scatter_nd: {name}")
    what = (f"scatter_nd(data {describe(data)}, indices {describe(indices)}, updates {describe(updates)}, "
            f"mode={mode!r})")
    combine = _check_reduction(mode, what, "mode")
    dshape, ishape, ushape = (static_shape(t, what) for t in (data, indices, updates))
    _check_indices(indices, what)
    if not ishape:
        raise TopiError(f"{what}: indices must have at least one axis (the index tuples, along the first)")
    m = ishape[0]
    if m > len(dshape) or m < 1:
        raise TopiError(f"{what}: index tuples of length {m} (indices.shape[0]) do not fit data of rank {len(dshape)}")
    k = len(ishape) - 1
    want = tuple(ishape[1:]) + tuple(dshape[m:])
    if tuple(ushape) != want:
        raise TopiError(f"{what}: updates must have shape indices.shape[1:] + data.shape[{m}:] = {want}, got "
                        f"{tuple(ushape)}")
    if updates.dtype != data.dtype:
        raise TopiError(f"{what}: updates have dtype {updates.dtype} but data {data.dtype}; they must be equal")
    return m, prod(ishape[1:]) if k else 1, prod(dshape[m:]), combine


def elements_target(dshape, ushape, axis, f, j, idx):
    """The flat output position of update ``(f, j)`` (line ``f`` of the updates
    along ``axis``, element ``j`` of it) going to index ``idx`` along ``axis``."""
    outer_u, inner_u = ushape[:axis], ushape[axis + 1:]
    n_inner_u = prod(inner_u)
    ou, iu = f // n_inner_u, f % n_inner_u
    o_d = ravel_index(unravel_index(ou, outer_u), dshape[:axis]) if outer_u else 0
    i_d = ravel_index(unravel_index(iu, inner_u), dshape[axis + 1:]) if inner_u else 0
    return (o_d * dshape[axis] + idx) * prod(dshape[axis + 1:]) + i_d


def elements_source(ushape, axis, f, j):
    """The flat position of update ``(f, j)`` in ``updates`` (and ``indices``)."""
    n_inner_u = prod(ushape[axis + 1:])
    return ((f // n_inner_u) * ushape[axis] + j) * n_inner_u + f % n_inner_u


def nd_target(dshape, m, ind, y, ny, x, nx):
    """``(flat output position, in_range)`` of slice element ``x`` of tuple ``y``."""
    pos, ok = 0, []
    for k in range(m):
        idx, inr = wrap_index(ind[k * ny + y], dshape[k])
        pos = idx if k == 0 else pos * dshape[k] + idx
        ok.append(inr)
    return pos * nx + x, tir.all(*ok) if len(ok) > 1 else ok[0]


def _cpu_copy(ib, d, o_, total):
    nblk = (total + CPU_COPY_BLOCK - 1) // CPU_COPY_BLOCK
    with ib.for_range(0, nblk, name="blk", kind="parallel" if nblk > 1 else "serial") as b:
        with ib.for_range(0, min(total, CPU_COPY_BLOCK), name="e") as e:
            at = b * CPU_COPY_BLOCK + e
            with ib.if_scope(at < total):
                o_[at] = d[at]


def _cpu_scatter_elements_ir(data, indices, updates, out, axis, combine):
    dshape, ushape = static_shape(data, "scatter"), static_shape(updates, "scatter")
    ib = tir.ir_builder.create()
    d, ind, upd, o_ = (ib.buffer_ptr(b) for b in (data, indices, updates, out))
    _cpu_copy(ib, d, o_, prod(dshape))
    lines = prod(ushape) // ushape[axis] if ushape[axis] else 0
    if lines and ushape[axis]:
        with ib.for_range(0, lines, name="line", kind="parallel" if lines > 1 else "serial") as f:
            scatter_line(ib, dshape, ushape, axis, f, ind, upd, o_, combine)
    return ib.get()


def scatter_line(ib, dshape, ushape, axis, f, ind, upd, o_, combine):
    """The updates of line ``f`` (along ``axis``) of ``scatter_elements``, in order:
    each index wrapped, an update whose index is still out of range dropped (both
    targets' statements)."""
    with ib.for_range(0, ushape[axis], name="j") as j:
        src = elements_source(ushape, axis, f, j)
        idx, ok = wrap_index(ind[src], dshape[axis])
        with ib.if_scope(ok):
            dst = elements_target(dshape, ushape, axis, f, j, idx)
            o_[dst] = combine(o_[dst], upd[src])


def scatter_nd_slice_element(ib, dshape, m, ind, upd, o_, x, nx, ny, combine):
    """Element ``x`` of the trailing slice of every update of ``scatter_nd``, in
    order (both targets' statements)."""
    with ib.for_range(0, ny, name="y") as y:
        dst, ok = nd_target(dshape, m, ind, y, ny, x, nx)
        with ib.if_scope(ok):
            o_[dst] = combine(o_[dst], upd[y * nx + x])


def _cpu_scatter_nd_ir(data, indices, updates, out, m, ny, nx, combine):
    dshape = static_shape(data, "scatter_nd")
    ib = tir.ir_builder.create()
    d, ind, upd, o_ = (ib.buffer_ptr(b) for b in (data, indices, updates, out))
    _cpu_copy(ib, d, o_, prod(dshape))
    if ny and nx:
        with ib.for_range(0, nx, name="x", kind="parallel" if nx >= 64 else "serial") as x:
            scatter_nd_slice_element(ib, dshape, m, ind, upd, o_, x, nx, ny, combine)
    return ib.get()


def scatter_elements_impl(data, indices, updates, axis, reduction, gpu):
    """The extern stage of :func:`scatter_elements` (``gpu``: the GPU statement)."""
    axis, combine = check_scatter_elements(data, indices, updates, axis, reduction)
    if gpu:
        from .cuda.scatter import gpu_scatter_elements_ir as make_ir
    else:
        make_ir = _cpu_scatter_elements_ir
    return te.extern(data.shape, [data, indices, updates],
                     lambda ins, outs: make_ir(ins[0], ins[1], ins[2], outs[0], axis, combine),
                     name="scatter_elements_gpu" if gpu else "scatter_elements_cpu", dtype=data.dtype,
                     tag=SCATTER_ELEMENTS_TAG)


def scatter_nd_impl(data, indices, updates, mode, gpu):
    """The extern stage of :func:`scatter_nd` (``gpu``: the GPU statement)."""
    m, ny, nx, combine = check_scatter_nd(data, indices, updates, mode)
    if gpu:
        from .cuda.scatter import gpu_scatter_nd_ir as make_ir
    else:
        make_ir = _cpu_scatter_nd_ir
    return te.extern(data.shape, [data, indices, updates],
                     lambda ins, outs: make_ir(ins[0], ins[1], ins[2], outs[0], m, ny, nx, combine),
                     name="scatter_nd_gpu" if gpu else "scatter_nd_cpu", dtype=data.dtype, tag=SCATTER_ND_TAG)


def scatter_elements(data, indices, updates, axis=0, reduction="update"):
    """``data`` with ``updates`` scattered along ``axis`` (ONNX ``ScatterElements``,
    ``torch.Tensor.scatter_``)::

        out[indices[i][j]][j] = f(out[indices[i][j]][j], updates[i][j])   # axis 0

    Parameters
    ----------
    data : Tensor
    indices : Tensor of integers
        Of ``data``'s rank, at most ``data``'s sizes along the other axes; negative
        entries count from the end of ``axis``; entries still out of range drop
        their update.
    updates : Tensor
        Of ``indices``' shape and ``data``'s dtype.
    axis : int
    reduction : str
        ``"update"`` (replace), ``"add"``, ``"mul"``, ``"min"`` or ``"max"``.
        Updates apply in the row-major order of ``indices`` (the last duplicate
        wins for ``"update"``) on every target.

    Returns
    -------
    Tensor
        ``data``'s shape and dtype; an extern stage tagged ``"scatter_elements"``.

    Raises
    ------
    TopiError
        An unknown reduction, indices that are not integers or whose shape differs
        from the updates', an axis out of range.
    """
    return scatter_elements_impl(data, indices, updates, axis, reduction, is_gpu_target())


def scatter(data, indices, updates, axis=0):
    """TVM's older ``topi.scatter``: :func:`scatter_elements` with ``"update"``."""
    return scatter_elements(data, indices, updates, axis, "update")


def scatter_nd(data, indices, updates, mode="update"):
    """``data`` with slices replaced by (or combined with) ``updates`` at index
    tuples (ONNX ``ScatterND`` with TVM's layout of the indices)::

        out[indices[0, y], ..., indices[M-1, y], x...] = f(out[...], updates[y, x...])

    Parameters
    ----------
    data : Tensor, of shape ``(X_0, ..., X_{N-1})``
    indices : Tensor of integers, of shape ``(M, Y_0, ..., Y_{K-1})``
        The index tuples along the first axis (TVM's layout; ONNX's has them along
        the last: transpose first); negative entries count from the end.
    updates : Tensor, of shape ``(Y_0, ..., Y_{K-1}, X_M, ..., X_{N-1})``
    mode : str
        ``"update"``, ``"add"``, ``"mul"``, ``"min"`` or ``"max"``; updates apply in
        the row-major order of the tuples.

    Returns
    -------
    Tensor
        ``data``'s shape and dtype; an extern stage tagged ``"scatter_nd"``.
    """
    return scatter_nd_impl(data, indices, updates, mode, is_gpu_target())
