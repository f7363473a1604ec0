"""Max and average pooling over windows (TVM's ``topi.nn.pooling``)."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import dtype as _dt
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, equal_const_int, get_const_tuple, layout_axes, simplify
from .pad import pad

POOL_TYPES = ("max", "avg")

#: the tags of the pooling stages schedules look for (besides ``tag.POOL_MAX``)
POOL_SUM = "pool_sum"
ADAPTIVE_POOL_MAX = "adaptive_pool_max"
ADAPTIVE_POOL_SUM = "adaptive_pool_sum"
#: the stages holding a pooling window's reduction
POOL_REDUCTIONS = (tag.POOL_MAX, POOL_SUM, ADAPTIVE_POOL_MAX, ADAPTIVE_POOL_SUM)


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
        for v in get_const_tuple(value):
            if isinstance(v, int) and (v < 0 or v == 0 and name != "padding"):
                need = ">= 0" if name == "padding" else ">= 1"
                raise TopiError(f"{what}({data.name!r} {tuple(data.shape)}): {name} {tuple(get_const_tuple(value))} "
                                f"has the entry {v}; every entry must be {need}")
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
        if ceil_mode:
            # the last window must start inside the input or its left padding (ONNX's and
            # PyTorch's rule): one that would start in the right padding is dropped
            n, size, before = get_const_tuple([out_shape[ax], data.shape[ax], padding[a]])
            if all(isinstance(v, int) for v in (n, size, before)) and (n - 1) * stride[a] >= size + before:
                out_shape[ax] = n - 1
        size, window, pads = get_const_tuple([data.shape[ax], window, padding[a] + padding[a + k]])
        if all(isinstance(v, int) for v in (size, window, pads)) and size + pads < window:
            raise TopiError(
                f"{what}({data.name!r} {tuple(data.shape)}, layout {layout!r}): the window along {spatial[a]} spans "
                f"{window} elements (kernel {kernel[a]}, dilation {dilation[a]}) but the padded input has only "
                f"{size + pads} ({size} + padding {pads}); use a smaller kernel or more padding")
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
                          tag=POOL_SUM)

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


def _adaptive_axes(layout, letters, what, ndim, data):
    axes = layout_axes(layout, what)
    if len(axes) != ndim:
        raise TopiError(f"{what}: layout {layout!r} has {len(axes)} axes but {data.name!r} has shape "
                        f"{tuple(data.shape)}")
    for letter in letters:
        if letter not in axes:
            raise TopiError(f"{what}: layout {layout!r} has no axis {letter!r}; pooling needs {''.join(letters)}")
    return [axes.index(letter) for letter in letters]


def _start_index(o, out_size, in_size):
    """The first input element of output ``o``'s window: ``floor(o * in / out)``."""
    return (o * in_size) // out_size


def _end_index(o, out_size, in_size):
    """One past the last input element of output ``o``'s window:
    ``ceil((o + 1) * in / out)``."""
    return ((o + 1) * in_size + out_size - 1) // out_size


def _adaptive_pool(data, output_size, pool_type, layout, letters, what):
    """Adaptive pooling over the axes ``letters`` of ``layout``."""
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"{what}: data must be a tensor, got {data!r}")
    if pool_type not in POOL_TYPES:
        raise TopiError(f"{what}: pool_type {pool_type!r} is not one of {POOL_TYPES}")
    positions = _adaptive_axes(layout, letters, what, len(data.shape), data)
    if not isinstance(output_size, (list, tuple)):
        output_size = (output_size,)
    if len(output_size) != len(letters):
        raise TopiError(f"{what}({data.name!r} {tuple(data.shape)}): output_size {tuple(output_size)} must have "
                        f"{len(letters)} entries ({''.join(letters)})")
    in_sizes, out_sizes = [], []
    for ax, o in zip(positions, output_size):
        o = data.shape[ax] if o is None else o
        const_o = get_const_tuple([o])[0]
        if isinstance(const_o, int) and const_o < 1:
            raise TopiError(f"{what}({data.name!r} {tuple(data.shape)}): output_size {tuple(output_size)} has the "
                            f"entry {const_o}; every entry must be >= 1")
        in_sizes.append(data.shape[ax])
        out_sizes.append(const_o)
    out_shape = list(data.shape)
    for ax, o in zip(positions, out_sizes):
        out_shape[ax] = o

    def windows(i):
        """The window of output ``i``: its first index and extent per pooled axis."""
        starts, extents = [], []
        for a, ax in enumerate(positions):
            start = _start_index(i[ax], out_sizes[a], in_sizes[a])
            starts.append(start)
            extents.append(simplify(_end_index(i[ax], out_sizes[a], in_sizes[a]) - start))
        return starts, extents

    def reduce_over(i, combine):
        starts, extents = windows(i)
        rvs = [te.reduce_axis((0, e), name=f"rv{a}") for a, e in enumerate(extents)]
        idx = list(i)
        for a, ax in enumerate(positions):
            idx[ax] = starts[a] + rvs[a].var
        return combine(data(*idx), axis=rvs)

    if pool_type == "max":
        return te.compute(tuple(out_shape), lambda *i: reduce_over(i, te.max), name="adaptive_pool_max",
                          tag=ADAPTIVE_POOL_MAX)
    pool_sum = te.compute(tuple(out_shape), lambda *i: reduce_over(i, te.sum), name="adaptive_pool_sum",
                          tag=ADAPTIVE_POOL_SUM)

    def average(*i):
        _, extents = windows(i)
        n = extents[0]
        for e in extents[1:]:
            n = n * e
        if _dt.is_float(data.dtype):
            n = _op.cast(data.dtype, n)
        return pool_sum(*i) / n

    return te.compute(tuple(out_shape), average, name="adaptive_pool_avg", tag=tag.ELEMWISE)


def adaptive_pool(data, output_size, pool_type, layout="NCHW"):
    """Pooling over ``H`` and ``W`` with windows chosen to give ``output_size``:
    output ``o`` of an axis of size ``n`` pools the input elements
    ``floor(o * n / out) .. ceil((o + 1) * n / out) - 1`` (PyTorch's
    ``AdaptiveAvgPool2d``, TVM's ``topi.nn.adaptive_pool``).

    Parameters
    ----------
    data : Tensor
    output_size : (int, int)
        The output's height and width (an entry None keeps the input's size).
    pool_type : "max" or "avg"
    layout : str
        Any layout with ``H`` and ``W`` (``"NCHW"``, ``"NHWC"``, ``"NCHW16c"``...).

    Returns
    -------
    Tensor
        named and tagged ``adaptive_pool_max``; or ``adaptive_pool_avg`` (tagged
        ``elemwise``) reading the window sums ``adaptive_pool_sum``.

    Raises
    ------
    TopiError
        On a bad pool type or layout, or an output size below 1.
    """
    return _adaptive_pool(data, output_size, pool_type, layout, ["H", "W"], "adaptive_pool")


def adaptive_pool1d(data, output_size, pool_type, layout="NCW"):
    """:func:`adaptive_pool` over the ``W`` axis."""
    return _adaptive_pool(data, output_size, pool_type, layout, ["W"], "adaptive_pool1d")


def adaptive_pool3d(data, output_size, pool_type, layout="NCDHW"):
    """:func:`adaptive_pool` over the ``D``, ``H`` and ``W`` axes."""
    return _adaptive_pool(data, output_size, pool_type, layout, ["D", "H", "W"], "adaptive_pool3d")


def global_pool(data, pool_type, layout="NCHW"):
    """Pooling over the whole of ``H`` and ``W`` (size 1 there):
    :func:`adaptive_pool` to ``(1, 1)``, as TVM."""
    return _adaptive_pool(data, (1, 1), pool_type, layout, ["H", "W"], "global_pool")
