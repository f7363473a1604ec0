"""Max and average pooling over windows (TVM's ``topi.nn.pooling``)."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import dtype as _dt
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, equal_const_int, simplify
from .pad import pad
from .utils import layout_axes

POOL_TYPES = ("max", "avg")


def _scaled(v, factor):
    return v if equal_const_int(factor, 1) else v * factor


def _pool(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad, spatial, what):
    """Pooling over the axes ``spatial`` (letters of ``layout``) of ``data``."""
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"{what}: data must be a tensor, got {data!r}")
    if pool_type not in POOL_TYPES:
        raise TopiError(f"{what}: pool_type {pool_type!r} is not one of {POOL_TYPES}")
    axes = layout_axes(layout, what)
    if len(axes) != len(data.shape):
        raise TopiError(f"{what}: layout {layout!r} has {len(axes)} axes but {data.name!r} has shape "
                        f"{tuple(data.shape)}")
    positions = []
    for letter in spatial:
        if letter not in axes:
            raise TopiError(f"{what}: layout {layout!r} has no axis {letter!r}; pooling needs {''.join(spatial)}")
        positions.append(axes.index(letter))
    k = len(spatial)
    for name, value, count in (("kernel", kernel, k), ("stride", stride, k), ("dilation", dilation, k),
                               ("padding", padding, 2 * k)):
        if len(value) != count:
            raise TopiError(f"{what}: {name} {tuple(value)} must have {count} entries")
    ndim = len(data.shape)
    pad_before = [0] * ndim
    pad_after = [0] * ndim
    extra = [0] * k  # the padding ceil_mode adds after each axis
    out_shape = list(data.shape)
    for a, ax in enumerate(positions):
        if ceil_mode:
            extra[a] = stride[a] - 1
        pad_before[ax] = padding[a]
        pad_after[ax] = padding[a + k] + extra[a]
        window = (kernel[a] - 1) * dilation[a] + 1
        out_shape[ax] = simplify((data.shape[ax] + pad_before[ax] + pad_after[ax] - window) // stride[a] + 1)
    do_pad = not all(equal_const_int(p, 0) for p in pad_before + pad_after)
    rvs = [te.reduce_axis((0, kernel[a]), name=f"rv{a}") for a in range(k)]

    def window_index(i, source):
        idx = list(i)
        for a, ax in enumerate(positions):
            idx[ax] = _scaled(i[ax], stride[a]) + _scaled(rvs[a].var, dilation[a])
        return source(*idx)

    if pool_type == "max":
        source = pad(data, pad_before, pad_after, _op.min_value(data.dtype), name="pad_temp") if do_pad else data
        return te.compute(tuple(out_shape), lambda *i: te.max(window_index(i, source), axis=rvs), name="pool_max",
                          tag=tag.POOL_MAX)
    source = pad(data, pad_before, pad_after, 0, name="pad_temp") if do_pad else data
    pool_sum = te.compute(tuple(out_shape), lambda *i: te.sum(window_index(i, source), axis=rvs), name="pool_sum",
                          tag="pool_sum")

    def count(i):
        """The number of elements averaged by the window of output ``i``."""
        total = _op.const(1, "int32")
        for a, ax in enumerate(positions):
            start = _scaled(i[ax], stride[a]) - padding[a]
            last = start + (kernel[a] - 1) * dilation[a]
            if count_include_pad:
                # the window clipped to the padded input (without ceil_mode's extra)
                last = _op.min(last, data.shape[ax] + padding[a + k] - 1)
                n = (last - start) // dilation[a] + 1
            else:
                # taps before the first real element, skipped; the window clipped to the input
                skip = _op.max((dilation[a] - 1 - start) // dilation[a], 0)
                last = _op.min(last, data.shape[ax] - 1)
                n = (last - (start + skip * dilation[a])) // dilation[a] + 1
            total = total * n
        return _op.max(total, 1)

    def average(*i):
        n = count(i)
        if _dt.is_float(data.dtype):
            n = _op.cast(data.dtype, n)
        return pool_sum(*i) / n

    return te.compute(tuple(out_shape), average, name="pool_avg", tag=tag.ELEMWISE)


def pool1d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCW",
           count_include_pad=True):
    """1-D pooling over the ``W`` axis of ``layout``.

    Parameters
    ----------
    data : Tensor
    kernel, stride, dilation : list of one int
    padding : list of two ints (before, after)
    pool_type : "max" or "avg"
    ceil_mode : bool
        Round the output size up (windows may hang over the end).
    layout : str
        e.g. ``"NCW"`` or ``"NWC"``.
    count_include_pad : bool
        Average over the whole window, padding included (else over the real elements).
    """
    return _pool(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad, ["W"],
                 "pool1d")


def pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCHW",
           count_include_pad=True):
    """2-D pooling over the ``H`` and ``W`` axes of ``layout``.

    Parameters
    ----------
    data : Tensor
    kernel, stride, dilation : list of two ints (height, width)
    padding : list of four ints (top, left, bottom, right)
    pool_type : "max" or "avg"
    ceil_mode : bool
        Round the output size up (windows may hang over the end).
    layout : str
        ``"NCHW"``, ``"NHWC"``, or with a split channel such as ``"NCHW16c"``.
    count_include_pad : bool
        Average over the whole window, padding included (else over the real elements).

    Returns
    -------
    Tensor
        named and tagged ``pool_max``, or ``pool_avg`` (tagged ``elemwise``) reading
        the window sums ``pool_sum``; a padded input is the stage ``pad_temp``.
    """
    return _pool(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad,
                 ["H", "W"], "pool2d")


def pool3d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCDHW",
           count_include_pad=True):
    """3-D pooling over the ``D``, ``H`` and ``W`` axes of ``layout`` (padding: the
    three befores, then the three afters)."""
    return _pool(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad,
                 ["D", "H", "W"], "pool3d")


def global_pool(data, pool_type, layout="NCHW"):
    """Pooling over the whole of ``H`` and ``W``: shape 1 there."""
    axes = layout_axes(layout, "global_pool")
    if "H" not in axes or "W" not in axes:
        raise TopiError(f"global_pool: layout {layout!r} needs axes H and W")
    h, w = axes.index("H"), axes.index("W")
    return pool2d(data, (data.shape[h], data.shape[w]), (1, 1), (1, 1), (0, 0, 0, 0), pool_type, layout=layout)
