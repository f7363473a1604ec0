"""Sorting along an axis (TVM's ``topi.sort``, ``topi.argsort``, ``topi.topk``):
ONNX's ``TopK`` and the sorts torch exports.

Each operator is one ``te.extern`` stage written with ``tir.ir_builder``.  The
declarations here carry the CPU statement: the rows along the axis are spread over
the cores (a ``parallel`` loop) and each row is sorted with a bottom-up merge sort
(``ceil(log2 n)`` passes over a scratch copy).  :mod:`.cuda.sort` has the GPU
statement (a bitonic network: in shared memory, one block per row, for rows of up
to :data:`.cuda.sort.SHARED_SORT_MAX` elements, one launch per network stage over
global memory beyond).  Under a current GPU target (``with Target("cuda"):``) the
operators here declare the GPU version.

Ordering
--------
Every sort here is **stable**: elements that compare equal keep their original
order (the lower index first), ascending and descending alike -- the order of
numpy's ``np.argsort(kind="stable")`` for ascending sorts, and of
``np.argsort(-x, kind="stable")`` for descending ones.  Floating-point NaNs count
as larger than every number (numpy's order: last when ascending, first when
descending) and equal to one another.  Internally both kernels order the pairs
``(key, index)``, a strict total order, so neither depends on the stability of its
network.

Errors (an axis out of range, ``k`` larger than the axis, a ``valid_count`` of the
wrong shape, an unknown ``ret_type``, symbolic shapes) raise
:class:`~.utils.TopiError` when the operator is declared.
"""
from __future__ import annotations

from .. import te, tir
from ..target import Target
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir.functor import post_order_visit
from .utils import TopiError, get_const_tuple, normalize_axis, prod

#: the tags of the stages declared here (the schedule registry matches them)
SORT_TAG = "sort"
ARGSORT_TAG = "argsort"
TOPK_TAG = "topk"

_RET_TYPES = ("both", "values", "indices")


# ---------------------------------------------------------------------------------------
# shared by the CPU and GPU statements
# ---------------------------------------------------------------------------------------

def describe(t) -> str:
    """``'name' (shape)`` of a tensor, for error messages."""
    return f"{t.name!r} {tuple(get_const_tuple(t.shape))}"


def check_tensor(x, what):
    """Raise unless ``x`` is a tensor."""
    if not isinstance(x, te.Tensor):
        raise TopiError(f"{what}: expected a tensor (te.placeholder or an operator's output), got {x!r}")


def static_shape(t, what) -> tuple:
    """``t``'s shape as ints; raise :class:`TopiError` when a dimension is symbolic."""
    shape = get_const_tuple(t.shape)
    if not all(isinstance(d, int) for d in shape):
        raise TopiError(f"{what}: tensor {t.name!r} has the symbolic shape {tuple(t.shape)}; this operator needs "
                        "static shapes")
    return shape


def row_layout(shape, axis):
    """``(outer, n, inner)``: ``shape`` seen as ``outer x n x inner`` with ``n`` the
    size of ``axis``.  Row ``r`` (``0 <= r < outer * inner``) is the fiber along
    ``axis`` at ``o = r // inner``, ``i = r % inner``; its element ``p`` is at flat
    position ``(o * n + p) * inner + i``."""
    return prod(shape[:axis]), shape[axis], prod(shape[axis + 1:])


def is_gpu_target() -> bool:
    """True when the current target is a GPU (the declarations here then give the
    GPU statement)."""
    target = Target.current(allow_none=True)
    return target is not None and "gpu" in target.keys


def is_gpu_body(stmt) -> bool:
    """True if an extern statement launches GPU threads (``thread_extent``)."""
    found = []
    post_order_visit(stmt, lambda n: found.append(1) if isinstance(n, tir.AttrStmt)
                     and n.attr_key == "thread_extent" else None)
    return bool(found)


def key_less(a, b, is_float):
    """``a < b`` for sort keys, NaN above every number."""
    if not is_float:
        return a < b
    return tir.any(a < b, tir.all(tir.isnan(b), tir.Not(tir.isnan(a))))


def key_equal(a, b, is_float):
    """``a == b`` for sort keys, NaNs equal to one another."""
    if not is_float:
        return a == b
    return tir.any(a == b, tir.all(tir.isnan(a), tir.isnan(b)))


def goes_before(ka, ia, kb, ib, limit, ascending, is_float):
    """True when element ``(ka, ia)`` (key, original position) comes before
    ``(kb, ib)`` in the sorted row: positions at or past ``limit`` (padding, or past
    ``valid_count``) come last, in their original order; the others by key, ties by
    position (a strict total order)."""
    va, vb = ia < limit, ib < limit
    by_key = key_less(ka, kb, is_float) if ascending else key_less(kb, ka, is_float)
    valid_first = tir.all(va, tir.any(tir.Not(vb), by_key, tir.all(key_equal(ka, kb, is_float), ia < ib)))
    return tir.any(valid_first, tir.all(tir.Not(va), tir.Not(vb), ia < ib))


def local_scalar(ib, dtype, name):
    """A one-element local buffer (a mutable scalar of the statement)."""
    return ib.allocate(dtype, (1,), name=name, scope="local")


def check_sort_args(data, axis, what):
    """``(shape, axis, outer, n, inner)`` for sorting ``data`` along ``axis``."""
    check_tensor(data, what)
    shape = static_shape(data, what)
    if not shape:
        raise TopiError(f"{what}: cannot sort a rank-0 tensor")
    axis = normalize_axis(axis, len(shape), what)
    if shape[axis] == 0 or any(d == 0 for d in shape):
        raise TopiError(f"{what}: cannot sort the empty tensor {describe(data)}")
    return (shape, axis) + row_layout(shape, axis)


def check_valid_count(valid_count, data, axis, what):
    """Raise unless ``valid_count`` is an integer tensor of ``data``'s shape without
    ``axis`` (one count per row)."""
    check_tensor(valid_count, what)
    want = tuple(d for k, d in enumerate(get_const_tuple(data.shape)) if k != axis)
    got = tuple(get_const_tuple(valid_count.shape))
    if not _dt.is_integer(valid_count.dtype):
        raise TopiError(f"{what}: valid_count {describe(valid_count)} must have an integer dtype, got "
                        f"{valid_count.dtype}")
    if prod(got) != prod(want) or (len(got) != len(want) and got != (prod(want),)):
        raise TopiError(f"{what}: valid_count has shape {got} but data {describe(data)} sorted along axis {axis} "
                        f"has {prod(want)} rows; valid_count must have shape {want}")


def check_topk_args(data, k, axis, ret_type, what):
    """``(shape, axis, outer, n, inner, k)`` for :func:`topk` (``k < 1`` means the
    whole axis, as in TVM)."""
    if ret_type not in _RET_TYPES:
        raise TopiError(f"{what}: ret_type must be one of {list(_RET_TYPES)}, got {ret_type!r}")
    if isinstance(k, te.Tensor):
        raise TopiError(f"{what}: k must be a constant integer here (a tensor k is not supported)")
    if isinstance(k, E.IntImm):
        k = int(k.value)
    if not isinstance(k, int) or isinstance(k, bool):
        raise TopiError(f"{what}: k must be an int, got {k!r}")
    shape, axis, outer, n, inner = check_sort_args(data, axis, what)
    if k > n:
        raise TopiError(f"{what}: k={k} is larger than the size {n} of axis {axis} of {describe(data)}")
    return shape, axis, outer, n, inner, (n if k < 1 else k)


def output_specs(ret_type, data, shape, axis, m, dtype):
    """``(shapes, dtypes, kinds)`` of the outputs: ``kinds`` holds ``"values"``
    and/or ``"indices"``, each ``m`` long along ``axis``."""
    out_shape = tuple(shape[:axis]) + (m,) + tuple(shape[axis + 1:])
    kinds = {"both": ["values", "indices"], "values": ["values"], "indices": ["indices"]}[ret_type]
    dtypes = [data.dtype if kd == "values" else _dt.canonical(dtype) for kd in kinds]
    return [out_shape] * len(kinds), dtypes, kinds


def write_row_outputs(ib, outs, kinds, m, inner, o, i, pos, key, index):
    """Store element ``pos`` (< ``m``) of sorted row ``(o, i)`` into each output."""
    for buf, kind in zip(outs, kinds):
        dst = (o * m + pos) * inner + i
        if kind == "values":
            buf[dst] = key
        else:
            buf[dst] = index.astype(buf.dtype) if buf.dtype != "int32" else index


# ---------------------------------------------------------------------------------------
# the CPU statement: parallel rows, a bottom-up merge sort per row
# ---------------------------------------------------------------------------------------

def _cpu_sort_ir(data, valid, outs, kinds, outer, n, inner, m, ascending):
    """Sort each row of ``data`` (``outer x n x inner``) and store its first ``m``
    elements in ``outs``.  Scratch: two copies of every row's keys and positions;
    pass ``s`` merges runs of ``2**s`` from one copy into the other."""
    ib = tir.ir_builder.create()
    d = ib.buffer_ptr(data)
    vc = ib.buffer_ptr(valid) if valid is not None else None
    outs = [ib.buffer_ptr(b) for b in outs]
    rows, total = outer * inner, outer * n * inner
    is_float = _dt.is_float(data.dtype)
    npass = max(0, (n - 1).bit_length())
    keys = ib.allocate(data.dtype, (2 * total,), name="sort_keys")
    pos = ib.allocate("int32", (2 * total,), name="sort_pos")
    with ib.for_range(0, rows, name="row", kind="parallel" if rows > 1 else "serial") as r:
        o, i = r // inner, r % inner
        if vc is not None:
            limit = ib.let("limit", te.max(te.min(vc[r].astype("int32"), n), 0))
        else:
            limit = n
        with ib.for_range(0, n, name="p") as p:
            keys[r * n + p] = d[(o * n + p) * inner + i]
            pos[r * n + p] = p
        with ib.for_range(0, npass, name="s") as s:
            src = ib.let("src", (s % 2) * total + r * n)
            dst = ib.let("dst", ((s + 1) % 2) * total + r * n)
            width = ib.let("width", tir.const(1, "int32") << s)
            with ib.for_range(0, (n + 2 * width - 1) // (2 * width), name="run") as run:
                lo = ib.let("lo", run * 2 * width)
                mid = ib.let("mid", te.min(lo + width, n))
                hi = ib.let("hi", te.min(lo + 2 * width, n))
                a = local_scalar(ib, "int32", "a")
                b = local_scalar(ib, "int32", "b")
                a[0] = lo
                b[0] = mid
                with ib.for_range(lo, hi, name="q") as q:
                    ia = te.min(a[0], mid - 1)  # clamped: a run that is used up is not read
                    jb = te.min(b[0], hi - 1)
                    take_b = tir.all(b[0] < hi, tir.any(
                        a[0] >= mid,
                        goes_before(keys[src + jb], pos[src + jb], keys[src + ia], pos[src + ia], limit,
                                    ascending, is_float)))
                    with ib.if_scope(take_b):
                        keys[dst + q] = keys[src + jb]
                        pos[dst + q] = pos[src + jb]
                        b[0] = b[0] + 1
                    with ib.else_scope():
                        keys[dst + q] = keys[src + ia]
                        pos[dst + q] = pos[src + ia]
                        a[0] = a[0] + 1
        final = (npass % 2) * total
        with ib.for_range(0, m, name="p") as p:
            write_row_outputs(ib, outs, kinds, m, inner, o, i, p, keys[final + r * n + p], pos[final + r * n + p])
    return ib.get()


def _declare(name, tag, data, valid, axis, m, ascending, ret_type, dtype, gpu):
    what = f"{name}({describe(data)}, axis={axis})"
    shape, axis, outer, n, inner = check_sort_args(data, axis, what)
    shapes, dtypes, kinds = output_specs(ret_type, data, shape, axis, m, dtype)
    inputs = [data] if valid is None else [data, valid]
    if gpu:
        from .cuda.sort import gpu_sort_ir as make_ir
    else:
        make_ir = _cpu_sort_ir

    def body(ins, outs):
        return make_ir(ins[0], ins[1] if valid is not None else None, list(outs), kinds, outer, n, inner, m,
                       bool(ascending))

    res = te.extern(shapes, inputs, body, name=name, dtype=dtypes, tag=tag)
    res = res if isinstance(res, list) else [res]
    return res[0] if len(res) == 1 else res


def sort_impl(data, axis, is_ascend, gpu):
    """The stage of :func:`sort` (``gpu``: the GPU statement)."""
    check_tensor(data, "sort")
    n = check_sort_args(data, axis, f"sort({describe(data)}, axis={axis})")[3]
    return _declare("sort_gpu" if gpu else "sort_cpu", SORT_TAG, data, None, axis, n, is_ascend, "values", "int32",
                    gpu)


def argsort_impl(data, valid_count, axis, is_ascend, dtype, gpu, ret_type="indices"):
    """The stage of :func:`argsort` (``gpu``: the GPU statement)."""
    check_tensor(data, "argsort")
    what = f"argsort({describe(data)}, axis={axis})"
    shape, ax, _, n, _ = check_sort_args(data, axis, what)
    if ret_type not in ("indices", "both"):
        raise TopiError(f"{what}: ret_type must be 'indices' or 'both', got {ret_type!r}")
    if valid_count is not None:
        check_valid_count(valid_count, data, ax, what)
        dtype = "int32"  # as TVM: the valid_count variant gives int32 positions
    return _declare("argsort_gpu" if gpu else "argsort_cpu", ARGSORT_TAG, data, valid_count, axis, n, is_ascend,
                    ret_type, dtype, gpu)


def topk_impl(data, k, axis, ret_type, is_ascend, dtype, gpu):
    """The stage of :func:`topk` (``gpu``: the GPU statement)."""
    check_tensor(data, "topk")
    what = f"topk({describe(data)}, k={k}, axis={axis})"
    _, _, _, _, _, m = check_topk_args(data, k, axis, ret_type, what)
    return _declare("topk_gpu" if gpu else "topk_cpu", TOPK_TAG, data, None, axis, m, is_ascend, ret_type,
                    dtype, gpu)


# ---------------------------------------------------------------------------------------
# the operators
# ---------------------------------------------------------------------------------------

def sort(data, axis=-1, is_ascend=1):
    """``data`` sorted along ``axis`` (stable; NaN largest; see the module docs).

    Parameters
    ----------
    data : Tensor
        Of static shape.
    axis : int
        The axis to sort along (negative counts from the end).
    is_ascend : bool or int
        Ascending (the default) or descending.

    Returns
    -------
    Tensor
        ``data``'s shape and dtype; an extern stage tagged ``"sort"``.

    Raises
    ------
    TopiError
        An axis out of range, an empty or symbolic shape.
    """
    return sort_impl(data, axis, is_ascend, is_gpu_target())


def argsort(data, valid_count=None, axis=-1, is_ascend=1, dtype="float32"):
    """The positions that sort ``data`` along ``axis`` (stable: equal elements in
    their original order; NaN largest).

    Parameters
    ----------
    data : Tensor
    valid_count : Tensor of integers, optional
        One count per row (``data``'s shape without ``axis``): only the first
        ``valid_count`` elements of each row are sorted; the positions past it are
        given in order (``out[..., j] = j``).  The output is then int32 (TVM's
        ``argsort_nms``).
    axis : int
    is_ascend : bool or int
    dtype : str
        The dtype of the positions (TVM's default, float32).

    Returns
    -------
    Tensor
        ``data``'s shape; an extern stage tagged ``"argsort"``.
    """
    return argsort_impl(data, valid_count, axis, is_ascend, dtype, is_gpu_target())


def topk(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int64"):
    """The ``k`` largest (or, with ``is_ascend``, smallest) elements along ``axis``
    and their positions, in sorted order (ONNX's ``TopK``; stable: of equal
    elements the first comes first).

    Parameters
    ----------
    data : Tensor
    k : int
        How many; ``k < 1`` takes the whole axis (as TVM).
    axis : int
    ret_type : str
        ``"both"`` (``[values, indices]``), ``"values"`` or ``"indices"``.
    is_ascend : bool
        Smallest first instead of largest first.
    dtype : str
        The dtype of the indices.

    Returns
    -------
    Tensor or list of Tensor
        Of ``data``'s shape with ``k`` along ``axis``; an extern stage tagged
        ``"topk"``.

    Raises
    ------
    TopiError
        ``k`` larger than the axis, an unknown ``ret_type``, an axis out of range.
    """
    return topk_impl(data, k, axis, ret_type, is_ascend, dtype, is_gpu_target())
