"""Layer normalization over any axes (TVM's ``topi.nn.layer_norm``), and the stages
it shares with instance and group normalization.

A normalization is three stages that the schedules find by tag:

==========  ===================  =================================================
stage       tag                  holds
==========  ===================  =================================================
``Sum``     ``layer_norm_sum``   the sum over the normalized axes (one per "row":
                                 the other axes, and the group for group_norm)
``SqSum``   ``layer_norm_sum``   the sum of squares over the same axes
output      ``layer_norm``       ``(x - mean) * rsqrt(var + epsilon) * gamma + beta``
            (``instance_norm``,  with ``mean = Sum / n`` and
            ``group_norm``)      ``var = max(SqSum / n - mean^2, 0)``
==========  ===================  =================================================

The output carries ``attrs["axis"]`` (the normalized axes, non-negative, sorted) and
``attrs["group_size"]``/``attrs["channel_axis"]`` (group_norm: the channels per group
and their axis; 1 and -1 otherwise).  float16 data is summed in float32.
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from ..utils import TopiError, get_const_tuple, normalize_axis
from .dense import check_tensor, describe

#: the tag of the sum and sum-of-squares stages of every normalization
SUM_TAG = "layer_norm_sum"
#: the tags of the normalization outputs (the schedules' anchors)
NORM_TAGS = ("layer_norm", "instance_norm", "group_norm")


def normalized_axes(axis, ndim, what) -> list:
    """``axis`` (an int or a list of them) as sorted, distinct, non-negative axes."""
    if isinstance(axis, (list, tuple)):
        axes = list(axis)
    else:
        axes = [axis]
    if not axes:
        raise TopiError(f"{what}: axis is empty; give the axes to normalize over")
    out = [normalize_axis(a, ndim, what) for a in axes]
    if len(set(out)) != len(out):
        raise TopiError(f"{what}: axis {tuple(axes)} names an axis twice")
    return sorted(out)


def accumulation_dtype(dtype: str) -> str:
    """The dtype the sums are accumulated in: float32 for float16 data."""
    return "float32" if dtype == "float16" else dtype


def check_affine(t, role, data, shape, what):
    """Raise unless ``t`` (gamma or beta; None allowed) is a tensor of ``shape``."""
    if t is None:
        return
    check_tensor(t, role, what)
    want = tuple(get_const_tuple(shape))
    got = tuple(get_const_tuple(t.shape))
    if len(got) != len(want) or any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(got, want)):
        raise TopiError(f"{what}: {describe(t, role)} must have shape {want}, that of the normalized axes of "
                        f"{describe(data, 'data')}")


def normalize(data, gamma, beta, axes, epsilon, name, out_tag, what, group=None):
    """The three stages of a normalization of ``data`` over ``axes``.

    Parameters
    ----------
    axes : list of int
        The normalized axes (sorted, non-negative).
    gamma, beta : callable or None
        ``gamma(indices)``: the scale at the output's ``indices``; None for 1 (0).
    group : (int, int), optional
        ``(channel_axis, group_size)``: the channels along ``channel_axis`` are
        normalized together in groups of ``group_size`` (group_norm).
    """
    if not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool) or epsilon < 0:
        raise TopiError(f"{what}: epsilon must be a non-negative number, got {epsilon!r}")
    ndim = len(data.shape)
    channel, group_size = group if group is not None else (-1, 1)
    acc = accumulation_dtype(data.dtype)
    red = [te.reduce_axis((0, data.shape[a]), name=f"k{a}") for a in axes]
    if group is not None:
        red.insert(0, te.reduce_axis((0, group_size), name="kc"))
    # the sums' shape: the axes kept (a channel axis becomes the group), at least 1-D
    kept = [d for d in range(ndim) if d not in axes]
    row_shape = [data.shape[d] // group_size if d == channel else data.shape[d] for d in kept]
    scalar_row = not row_shape
    if scalar_row:
        row_shape = [1]

    def at(row, reducers):
        idx, it = [], iter(reducers)
        rows = dict(zip(kept, row))
        kc = next(it) if group is not None else None
        for d in range(ndim):
            if d in rows:
                idx.append(rows[d] * group_size + kc if d == channel else rows[d])
            else:
                idx.append(next(it))
        return _cast(data(*idx), acc)

    def total(*row):
        return te.sum(at(row, red), axis=red)

    red2 = [te.reduce_axis((0, r.dom.extent), name=r.var.name + "_") for r in red]

    def squares(*row):
        v = at(row, red2)
        return te.sum(v * v, axis=red2)

    s1 = te.compute(row_shape, total, name="Sum", tag=SUM_TAG)
    s2 = te.compute(row_shape, squares, name="SqSum", tag=SUM_TAG)
    count = group_size
    for a in axes:
        count = count * data.shape[a]
    count = get_const_tuple([count])[0]
    if isinstance(count, int):
        inv_n = _op.const(1.0 / count, acc)
    else:
        inv_n = _op.div(_op.const(1.0, acc), _op.cast(acc, count))

    def norm(*idx):
        row = [0] if scalar_row else [idx[d] // group_size if d == channel else idx[d] for d in kept]
        mean = s1(*row) * inv_n
        var = te.max(s2(*row) * inv_n - mean * mean, _op.const(0.0, acc))
        v = (_cast(data(*idx), acc) - mean) * te.rsqrt(var + _op.const(epsilon, acc))
        if gamma is not None:
            v = v * _cast(gamma(idx), acc)
        if beta is not None:
            v = v + _cast(beta(idx), acc)
        return _cast(v, data.dtype)

    attrs = {"axis": list(axes), "group_size": group_size, "channel_axis": channel}
    return te.compute(data.shape, norm, name=name, tag=out_tag, attrs=attrs)


def _cast(x, dtype):
    return x if x.dtype == dtype else _op.cast(dtype, x)


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, name="Out"):
    """Layer normalization: ``(x - mean) / sqrt(var + epsilon) * gamma + beta``, the
    mean and variance taken over ``axis``.

    Parameters
    ----------
    data : Tensor
        N-D ``(d_0, ..., d_{N-1})``.
    gamma : Tensor or None
        The scale, shaped like the normalized axes: ``(d_{axis_0}, d_{axis_1}, ...)``.
    beta : Tensor or None
        The offset, shaped like ``gamma``.
    axis : int or list of int
        The normalized axes (the last one by default, tecc's earlier form).
    epsilon : float
    name : str

    Returns
    -------
    Tensor
        Shaped like ``data`` (tagged ``layer_norm``; reads the stages ``Sum`` and
        ``SqSum``, tagged ``layer_norm_sum``).

    Raises
    ------
    TopiError
        When an axis is out of range or repeated, or gamma/beta do not have the shape
        of the normalized axes.
    """
    return _normalize_axes(data, gamma, beta, axis, epsilon, name, "layer_norm", "layer_norm")


def _normalize_axes(data, gamma, beta, axis, epsilon, name, out_tag, what):
    check_tensor(data, "data", what)
    if len(data.shape) == 0:
        raise TopiError(f"{what}: data {data.name!r} is a scalar (rank 0); there is no axis to normalize over")
    if isinstance(axis, float):
        raise TeccTypeError(f"{what}: axis must be an int or a list of ints, got {axis!r} (epsilon is the argument "
                            "after axis)")
    axes = normalized_axes(axis, len(data.shape), f"{what}({describe(data, 'data')})")
    shape = [data.shape[a] for a in axes]
    check_affine(gamma, "gamma", data, shape, what)
    check_affine(beta, "beta", data, shape, what)

    def affine(t):
        if t is None:
            return None
        return lambda idx: t(*[idx[a] for a in axes])

    return normalize(data, affine(gamma), affine(beta), axes, epsilon, name, out_tag, what)
