"""Cumulative sums and products along an axis (TVM's ``topi.cumsum``,
``topi.cumprod`` and their common ``scanop``): ONNX's ``CumSum``.

Each is one ``te.extern`` stage.  The CPU statement declared here scans every row
in order (the rows, or blocks of 64 neighbouring rows when the axis is not the
last, spread over the cores); :mod:`.cuda.scan` has the GPU statement.  Under a
current GPU target (``with Target("cuda"):``) the operators here declare the GPU
version.

The accumulator has the output's dtype (``dtype``, by default the input's); a
floating-point result may differ from a sequential sum in the last bits on CUDA,
whose scan adds in a tree order.
"""
from __future__ import annotations

from typing import Callable, Optional

from .. import te, tir
from ..tir import dtype as _dt
from .sort import check_tensor, describe, is_gpu_target, local_scalar, row_layout, static_shape
from .utils import TopiError, normalize_axis, prod

SCAN_TAG = "scan"

#: neighbouring rows one CPU task scans together when the axis is not the last
CPU_ROW_BLOCK = 64


def check_scan_args(data, axis, dtype, what):
    """``(out_shape, outer, n, inner, dtype)`` of a scan of ``data`` along ``axis``
    (``None``: the flattened tensor)."""
    check_tensor(data, what)
    shape = static_shape(data, what)
    if dtype is None:
        dtype = data.dtype
    try:
        dtype = _dt.canonical(dtype)
    except Exception as err:  # an unknown dtype name
        raise TopiError(f"{what}: dtype {dtype!r} is not a dtype") from err
    if dtype == "bool":
        raise TopiError(f"{what}: cannot accumulate in bool; pass dtype='int32' (or another numeric dtype)")
    if axis is None:
        total = prod(shape)
        return (total,), 1, total, 1, dtype
    if not shape:
        raise TopiError(f"{what}: axis {axis} given for a rank-0 tensor; pass axis=None")
    axis = normalize_axis(axis, len(shape), what)
    outer, n, inner = row_layout(shape, axis)
    return tuple(shape), outer, n, inner, dtype


def _cast(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def _cpu_scan_ir(data, out, binop, identity, outer, n, inner, exclusive):
    ib = tir.ir_builder.create()
    d, o_ = ib.buffer_ptr(data), ib.buffer_ptr(out)
    dtype = out.dtype
    ident = tir.const(identity, dtype)
    if inner == 1:
        with ib.for_range(0, outer, name="row", kind="parallel" if outer > 1 else "serial") as r:
            acc = local_scalar(ib, dtype, "acc")
            acc[0] = ident
            with ib.for_range(0, n, name="j") as j:
                x = _cast(d[r * n + j], dtype)
                if exclusive:
                    o_[r * n + j] = acc[0]
                    acc[0] = binop(acc[0], x)
                else:
                    acc[0] = binop(acc[0], x)
                    o_[r * n + j] = acc[0]
        return ib.get()
    block = min(inner, CPU_ROW_BLOCK)
    nblk = (inner + block - 1) // block
    with ib.for_range(0, outer * nblk, name="task", kind="parallel" if outer * nblk > 1 else "serial") as g:
        o = g // nblk
        i0 = (g % nblk) * block

        def at(j, ii):
            return (o * n + j) * inner + i0 + ii

        with ib.for_range(0, block, name="ii") as ii:
            with ib.if_scope(i0 + ii < inner):
                o_[at(0, ii)] = ident if exclusive else binop(ident, _cast(d[at(0, ii)], dtype))
        with ib.for_range(1, n, name="j") as j:
            with ib.for_range(0, block, name="ii") as ii:
                with ib.if_scope(i0 + ii < inner):
                    x = _cast(d[at(j - 1, ii) if exclusive else at(j, ii)], dtype)
                    o_[at(j, ii)] = binop(o_[at(j - 1, ii)], x)
    return ib.get()


def scan_impl(data, binop, identity_value, op_name, axis, dtype, exclusive, gpu):
    """The extern stage of a scan (``gpu``: the GPU statement)."""
    what = f"{op_name}({describe(data) if isinstance(data, te.Tensor) else repr(data)}, axis={axis})"
    out_shape, outer, n, inner, dtype = check_scan_args(data, axis, dtype, what)
    if not callable(binop):
        raise TopiError(f"{what}: binop must be a function of two expressions, got {binop!r}")
    exclusive = bool(exclusive)
    if gpu:
        from .cuda.scan import gpu_scan_ir as make_ir
    else:
        make_ir = _cpu_scan_ir
    return te.extern(
        out_shape, [data],
        lambda ins, outs: make_ir(ins[0], outs[0], binop, identity_value, outer, n, inner, exclusive),
        name=op_name, dtype=dtype, tag=SCAN_TAG)


def scanop(data: te.Tensor, binop: Callable, identity_value, op_name: str, axis: Optional[int] = None,
           dtype: Optional[str] = None, exclusive: Optional[bool] = None) -> te.Tensor:
    """A cumulative ``binop`` along ``axis`` (numpy's ``cumsum``/``cumprod`` axis
    rules).

    Parameters
    ----------
    data : Tensor
        Of static shape.
    binop : callable ``(acc, x) -> expr``
        Associative; ``identity_value`` is its identity.
    identity_value : number
    op_name : str
        The stage's name.
    axis : int, optional
        None (the default) scans the flattened tensor and gives a 1-D result.
    dtype : str, optional
        The output's and the accumulator's dtype (default: ``data``'s).
    exclusive : bool, optional
        Element ``j`` combines the elements before ``j`` only (the first is the
        identity).

    Returns
    -------
    Tensor
        An extern stage tagged ``"scan"``.

    Raises
    ------
    TopiError
        An axis out of range, a bool accumulator, a symbolic shape.
    """
    return scan_impl(data, binop, identity_value, op_name, axis, dtype, exclusive, is_gpu_target())


def cumsum(data: te.Tensor, axis: Optional[int] = None, dtype: Optional[str] = None,
           exclusive: Optional[bool] = None) -> te.Tensor:
    """Cumulative sum along ``axis`` (numpy's ``cumsum``; ONNX ``CumSum``), see
    :func:`scanop`."""
    return scanop(data, lambda a, b: a + b, 0, "cumsum", axis, dtype, exclusive)


def cumprod(data: te.Tensor, axis: Optional[int] = None, dtype: Optional[str] = None,
            exclusive: Optional[bool] = None) -> te.Tensor:
    """Cumulative product along ``axis`` (numpy's ``cumprod``), see :func:`scanop`."""
    return scanop(data, lambda a, b: a * b, 1, "cumprod", axis, dtype, exclusive)
