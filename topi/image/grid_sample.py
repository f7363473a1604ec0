"""Sampling an image at the points of a grid (TVM's ``topi.image.grid_sample``): what
ONNX's ``GridSample`` and torch's ``F.grid_sample`` lower to; and the grid of affine
transforms (TVM's ``topi.image.affine_grid``, at the end of the module).

``data`` is ``[N, C, H, W]`` (``"NCHW"``) or ``[N, C, D, H, W]`` (``"NCDHW"``);
``grid`` holds one normalized point per output position, its coordinates along the
channel axis in the reverse order of the data's spatial axes: ``[N, 2, Ho, Wo]``
with ``grid[n, 0]`` the x (width) and ``grid[n, 1]`` the y (height) coordinate, or
``[N, 3, Do, Ho, Wo]`` with x, y, z.  The output is ``[N, C, Ho, Wo]`` (``[N, C, Do,
Ho, Wo]``).

A normalized coordinate ``g`` in ``[-1, 1]`` maps to the pixel coordinate ``v`` of an
axis of ``size`` pixels by

* ``align_corners=True``: ``v = (g + 1) / 2 * (size - 1)`` (-1 and 1 are the centres
  of the first and last pixels),
* ``align_corners=False``: ``v = ((g + 1) * size - 1) / 2`` (-1 and 1 are the outer
  edges of those pixels).

The *padding mode* says what is read outside the image, whose extent is ``[0, size -
1]`` (``align_corners``) or ``[-0.5, size - 0.5]``:

* ``zeros``: pixels outside the image read 0;
* ``border``: the coordinate is clamped to ``[0, size - 1]`` (the edge pixels repeat);
* ``reflection``: the coordinate is reflected at the image's extent until it falls
  inside it, then clamped to ``[0, size - 1]``.

and the *method* how the pixels around ``v`` are combined, one axis after the other:

* ``nearest``: the pixel at ``v`` rounded, halves to even (after the padding);
* ``bilinear``: the 2 pixels at ``floor(v)`` and ``floor(v) + 1``, weighted by the
  distance (after the padding);
* ``bicubic`` (2-D only, as in ONNX and PyTorch): the 4 pixels at ``floor(v) - 1`` to
  ``floor(v) + 2``, weighted by Keys' cubic convolution kernel with ``a = -0.75``.
  The padding applies to each of the 4 taps, not to ``v``: ``zeros`` reads 0
  outside, ``border`` clamps the tap's index, ``reflection`` reflects it (as
  PyTorch and onnxruntime do; ONNX's Python reference also clamps ``v`` itself
  when it lies outside the image with ``border``, which moves the taps of points
  within two pixels outside the image).

The interpolation runs in float32 (float64 for float64 data or grids) and the result
is cast to the data's dtype.  The compute is one injective stage, tagged
``injective,grid_sample``: it inlines into a consumer and is scheduled as any
injective operator.
"""
from __future__ import annotations

import itertools

from ... import te
from ...errors import TeccTypeError
from ...tir import expr as E
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, get_const_tuple
from .resize import _cubic_weights

#: the tag of the compute (after ``injective``)
GRID_SAMPLE = "grid_sample"

METHODS = ("nearest", "bilinear", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
#: the layouts, with their number of spatial axes
LAYOUTS = {"NCHW": 2, "NCDHW": 3}
#: the cubic convolution coefficient of ONNX's and PyTorch's bicubic sampling
BICUBIC_ALPHA = -0.75


def _static(d):
    """The int value of dimension ``d``, or None when symbolic."""
    v = get_const_tuple([d])[0]
    return v if isinstance(v, int) else None


class _Axis:
    """What the sampling knows of one spatial axis of the data: its size and the
    float expressions of its bounds."""

    def __init__(self, size, fd, align_corners):
        self.size = size
        self.fd = fd
        self.align_corners = align_corners
        self.last = self.f(size - 1)  # the last pixel's coordinate
        # the image's extent: pixel centres with align_corners, else pixel edges
        self.lo = self.f(0.0) if align_corners else self.f(-0.5)
        self.hi = self.last if align_corners else self.f(size) - self.f(0.5)

    def f(self, value):
        """``value`` (a number or an expression) as a float of the compute's type."""
        return _op.cast(self.fd, value) if isinstance(value, E.PrimExpr) else _op.const(float(value), self.fd)

    def unnormalize(self, g):
        one, two = self.f(1.0), self.f(2.0)
        if self.align_corners:
            return (g + one) * (self.f(self.size - 1) / two)
        return ((g + one) * self.f(self.size) - one) / two

    def clamp(self, v):
        return _op.max(_op.min(v, self.last), self.f(0.0))

    def reflect(self, v):
        """``v`` reflected at the image's extent until it falls inside it."""
        # one pixel with align_corners: an extent of length 0, every point reads that pixel
        if self.align_corners and _static(self.size) == 1:
            return self.f(0.0)
        span = self.hi - self.lo
        d = _op.abs(v - self.lo)
        flips = _op.floor(d / span)
        extra = d - flips * span
        even = flips - _op.floor(flips / self.f(2.0)) * self.f(2.0) == self.f(0.0)
        reflected = _op.if_then_else(even, extra + self.lo, self.hi - extra)
        if self.align_corners and _static(self.size) is None:
            return _op.if_then_else(self.size > 1, reflected, self.f(0.0))
        return reflected

    def inside(self, v):
        """Whether the (whole) pixel coordinate ``v`` is a pixel of the image."""
        return _op.all(v >= self.f(0.0), v <= self.last)

    def index(self, v):
        """The pixel coordinate ``v`` as an index, clamped into the image (a read
        outside it is masked, or has zero weight)."""
        return _op.cast("int32", self.clamp(v))


def _let_all(values, names, body):
    """``body(variables)``, each variable bound to its value by a ``Let``: a value
    read by several taps is computed once (written out, the taps' expressions would
    repeat it, and the bicubic ones grow beyond what lowering simplifies quickly)."""
    if not values:
        return body([])
    var = E.Var(names[0], values[0].dtype)
    return E.Let(var, values[0], _let_all(values[1:], names[1:], lambda rest: body([var] + rest)))


def _check(data, grid, method, layout, padding_mode, align_corners):
    for name, t in (("data", data), ("grid", grid)):
        if not isinstance(t, te.Tensor):
            raise TeccTypeError(f"grid_sample: {name} must be a tensor, got {t!r}")
    what = f"grid_sample(data {data.name!r} {get_const_tuple(data.shape)}, grid {grid.name!r} " \
           f"{get_const_tuple(grid.shape)})"
    if layout not in LAYOUTS:
        raise TopiError(f"{what}: layout {layout!r} is not supported; use one of "
                        f"{', '.join(map(repr, LAYOUTS))}")
    k = LAYOUTS[layout]
    if method not in METHODS:
        raise TopiError(f"{what}: method {method!r} is not supported; use one of {', '.join(map(repr, METHODS))}")
    if method == "bicubic" and k != 2:
        raise TopiError(f"{what}: bicubic sampling is 2-D only (layout 'NCHW'); sample {layout} data with "
                        "'bilinear' or 'nearest'")
    if padding_mode not in PADDING_MODES:
        raise TopiError(f"{what}: padding_mode {padding_mode!r} is not supported; use one of "
                        f"{', '.join(map(repr, PADDING_MODES))}")
    if not isinstance(align_corners, (bool, int)):
        raise TeccTypeError(f"{what}: align_corners must be a bool, got {align_corners!r}")
    if len(data.shape) != k + 2:
        raise TopiError(f"{what}: data has rank {len(data.shape)} but layout {layout!r} needs rank {k + 2}")
    if len(grid.shape) != k + 2:
        dims = ", ".join(a + "o" for a in "DHW"[3 - k:])
        raise TopiError(f"{what}: the grid must be [N, {k}, {dims}] (rank {k + 2}), got rank {len(grid.shape)}; an "
                        f"ONNX or torch grid [N, ..., {k}] goes through a transpose first")
    if _static(grid.shape[1]) != k:
        raise TopiError(f"{what}: axis 1 of the grid holds the {k} coordinates of each point, but has size "
                        f"{get_const_tuple(grid.shape)[1]}; an ONNX or torch grid [N, ..., {k}] goes through a "
                        "transpose first")
    nd, ng = _static(data.shape[0]), _static(grid.shape[0])
    if nd is not None and ng is not None and nd != ng:
        raise TopiError(f"{what}: the data has batch {nd} and the grid {ng}; they must be equal")
    for d in data.shape[2:]:
        if _static(d) is not None and _static(d) < 1:
            raise TopiError(f"{what}: the data is empty along a spatial axis")
    if not grid.dtype.startswith(("float", "bfloat")):
        raise TeccTypeError(f"{what}: the grid must hold floats, got {grid.dtype}")
    return k


def grid_sample(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros", align_corners=True):
    """Sample ``data`` at the normalized points of ``grid`` (see the module's
    description for the coordinates, padding modes and methods).

    Parameters
    ----------
    data : Tensor
        ``[N, C, H, W]`` (``"NCHW"``) or ``[N, C, D, H, W]`` (``"NCDHW"``).
    grid : Tensor
        ``[N, 2, Ho, Wo]`` (x, y) or ``[N, 3, Do, Ho, Wo]`` (x, y, z): normalized
        coordinates, ``-1`` and ``1`` at the image's ends (outside: the padding mode).
    method : str
        ``"nearest"``, ``"bilinear"`` or ``"bicubic"`` (2-D only).
    layout : str
        ``"NCHW"`` or ``"NCDHW"``.
    padding_mode : str
        ``"zeros"``, ``"border"`` or ``"reflection"``.
    align_corners : bool
        Whether -1 and 1 are the centres of the corner pixels (True) or their outer
        corners (False).

    Returns
    -------
    Tensor
        ``[N, C, Ho, Wo]`` (``[N, C, Do, Ho, Wo]``) of the data's dtype, tagged
        ``injective,grid_sample``.

    Raises
    ------
    TopiError
        For an unknown method, layout or padding mode, bicubic in 3-D, or a grid of
        the wrong shape (an ONNX grid ``[N, Ho, Wo, 2]`` needs a transpose to
        ``[N, 2, Ho, Wo]``).

    Examples
    --------
    >>> A = te.placeholder((1, 3, 8, 8), name="A")
    >>> G = te.placeholder((1, 2, 4, 4), name="G")
    >>> B = topi.image.grid_sample(A, G, "bilinear", padding_mode="border", align_corners=False)
    """
    k = _check(data, grid, method, layout, padding_mode, align_corners)
    align_corners = bool(align_corners)
    fd = "float64" if "float64" in (data.dtype, grid.dtype) else "float32"
    axes = [_Axis(size, fd, align_corners) for size in data.shape[2:]]
    out_shape = (data.shape[0], data.shape[1]) + tuple(grid.shape[2:])

    letters = "dhw"[3 - k:]

    def coordinates(n, out):
        """The pixel coordinate of output position ``out`` along each spatial axis
        (the data's order: the grid holds them reversed)."""
        return [axes[a].unnormalize(_op.cast(fd, grid(n, k - 1 - a, *out))) for a in range(k)]

    def read(n, c, indices):
        return _op.cast(fd, data(n, c, *indices))

    def padded(axis, v):
        """The coordinate after the padding of nearest and bilinear sampling."""
        if padding_mode == "reflection":
            v = axis.reflect(v)
        return v if padding_mode == "zeros" else axis.clamp(v)

    def nearest(n, c, out):
        picks = [_op.round(padded(axis, v)) for axis, v in zip(axes, coordinates(n, out))]  # halves to even

        def pick(p):
            value = read(n, c, [axis.index(q) for axis, q in zip(axes, p)])
            if padding_mode != "zeros":
                return value
            inside = _op.all(*[axis.inside(q) for axis, q in zip(axes, p)])
            return _op.if_then_else(inside, value, axes[0].f(0.0))

        return _let_all(picks, [f"{x}_pick" for x in letters], pick)

    def bilinear(n, c, out):
        vs = [padded(axis, v) for axis, v in zip(axes, coordinates(n, out))]

        def from_floor(lows, ts):
            # per axis: [(pixel coordinate, weight)] of its 2 taps
            taps = [[(low, axis.f(1.0) - t), (low + axis.f(1.0), t)] for axis, low, t in zip(axes, lows, ts)]
            total = None
            for combo in itertools.product(*taps):  # the last axis fastest; summed in that order
                weight = combo[0][1]
                for _, w in combo[1:]:
                    weight = weight * w
                term = read(n, c, [axis.index(p) for axis, (p, _) in zip(axes, combo)]) * weight
                # a tap outside the image reads 0 (with border or reflection padding only
                # a tap of weight 0 can be outside)
                inside = _op.all(*[axis.inside(p) for axis, (p, _) in zip(axes, combo)])
                term = _op.if_then_else(inside, term, axes[0].f(0.0))
                total = term if total is None else total + term
            return total

        return _let_all(vs, [f"{x}_coord" for x in letters], lambda vs: _let_all(
            [_op.floor(v) for v in vs], [f"{x}_floor" for x in letters], lambda lows: _let_all(
                [v - low for v, low in zip(vs, lows)], [f"{x}_frac" for x in letters],
                lambda ts: from_floor(lows, ts))))

    def bicubic(n, c, out):
        vs = coordinates(n, out)  # not padded: the padding applies to each tap

        def taps_of(axis, low):
            """``[(index, inside)]`` of the 4 taps of one axis around ``low``."""
            points = [low + axis.f(o) for o in (-1.0, 0.0, 1.0, 2.0)]
            if padding_mode == "reflection":
                points = [_op.trunc(axis.reflect(p)) for p in points]  # an index truncates toward zero
            return [(axis.index(p), axis.inside(p)) for p in points]

        def interpolate(lows, weights, indices):
            (row_weights, col_weights), (row_index, col_index) = weights, indices
            row_inside, col_inside = [[inside for _, inside in taps_of(axis, low)] for axis, low in zip(axes, lows)]
            total = None
            for j in range(4):  # along x in each row, then along y
                row = None
                for i in range(4):
                    value = read(n, c, [row_index[j], col_index[i]])
                    if padding_mode == "zeros":
                        value = _op.if_then_else(_op.all(row_inside[j], col_inside[i]), value, axes[0].f(0.0))
                    term = col_weights[i] * value
                    row = term if row is None else row + term
                term = row_weights[j] * row
                total = term if total is None else total + term
            return total

        def from_floor(vs, lows):
            # each tap's weight and index is read by 4 terms: computed once
            weights = [w for v, low in zip(vs, lows) for w in _cubic_weights(v - low, BICUBIC_ALPHA, fd)]
            indices = [index for axis, low in zip(axes, lows) for index, _ in taps_of(axis, low)]
            weight_names = [f"{x}_weight{j}" for x in letters for j in range(4)]
            index_names = [f"{x}_tap{j}" for x in letters for j in range(4)]
            return _let_all(weights, weight_names, lambda w: _let_all(
                indices, index_names, lambda t: interpolate(lows, (w[:4], w[4:]), (t[:4], t[4:]))))

        return _let_all(vs, [f"{x}_coord" for x in letters], lambda vs: _let_all(
            [_op.floor(v) for v in vs], [f"{x}_floor" for x in letters], lambda lows: from_floor(vs, lows)))

    sample = {"nearest": nearest, "bilinear": bilinear, "bicubic": bicubic}[method]

    def body(n, c, *out):
        return _op.cast(data.dtype, sample(n, c, list(out)))

    return te.compute(out_shape, body, name="grid_sample", tag=tag.compose(tag.INJECTIVE, GRID_SAMPLE),
                      attrs={"method": method, "layout": layout, "padding_mode": padding_mode,
                             "align_corners": int(align_corners)})


#: the tag of :func:`affine_grid`'s compute (after ``injective``)
AFFINE_GRID = "affine_grid"


def affine_grid(data, target_shape):
    """The sampling grid of 2-D affine transforms (TVM's ``topi.image.affine_grid``;
    a spatial transformer's, arXiv:1506.02025): the normalized coordinates ``(x, y)``
    of every pixel of a ``target_shape`` image, -1 and 1 at the centres of its first
    and last pixels (0 along an axis of one pixel), mapped by each transform.

    ``out[n, :, i, j] = data[n] @ (x_j, y_i, 1)`` with ``x_j = -1 + 2 j / (W - 1)``
    and ``y_i = -1 + 2 i / (H - 1)``: the grid :func:`grid_sample` takes (with
    ``align_corners=True``).  The coordinates are computed in float64, the product
    in float32 (float64 for float64 data), cast to the data's dtype.  (ONNX's
    AffineGrid, 3-D and without aligned corners too, is :func:`affine_grid_nd`.)

    Parameters
    ----------
    data : Tensor
        ``[batch, 2, 3]`` floats: the affine matrices.
    target_shape : (int, int)
        ``(H, W)``, positive.

    Returns
    -------
    Tensor
        ``[batch, 2, H, W]`` (x then y on axis 1), named ``affine_grid``, tagged
        ``injective,affine_grid``.

    Raises
    ------
    TopiError
        For data that is not ``[batch, 2, 3]`` or a target shape that is not two
        positive integers; :class:`~tecc.errors.TeccTypeError` for data that is not
        a tensor of floats.

    Examples
    --------
    >>> theta = te.placeholder((4, 2, 3), name="theta")
    >>> grid = topi.image.affine_grid(theta, (16, 32))
    """
    what = _affine_grid_call(data, target_shape)
    if len(data.shape) != 3 or get_const_tuple(data.shape)[1:] != (2, 3):
        raise TopiError(f"{what}: data must be [batch, 2, 3] (one 2 x 3 affine matrix per batch), got shape "
                        f"{get_const_tuple(data.shape)}")
    _affine_grid_dtype(what, data)
    if isinstance(target_shape, (str, bytes)) or not hasattr(target_shape, "__len__") or len(target_shape) != 2:
        raise TopiError(f"{what}: target_shape must be (height, width)")
    return affine_grid_nd(data, target_shape)


def _affine_grid_call(data, target_shape) -> str:
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"affine_grid: data must be a tensor, got {data!r}")
    return f"affine_grid(data {data.name!r} {get_const_tuple(data.shape)}, target_shape {target_shape!r})"


def _affine_grid_dtype(what, data):
    if not data.dtype.startswith(("float", "bfloat")):
        raise TeccTypeError(f"{what}: data must hold floats, got {data.dtype}")


def affine_grid_nd(data, target_shape, align_corners=True):
    """:func:`affine_grid` over 2 or 3 axes (ONNX's ``AffineGrid``): ``data`` is
    ``[batch, k, k + 1]`` for a ``target_shape`` of ``k`` sizes (``(H, W)`` or ``(D,
    H, W)``); the grid ``[batch, k, *target_shape]`` holds x, y(, z) on axis 1, x along
    the last axis.  With ``align_corners`` a coordinate is ``-1 + 2 i / (n - 1)`` (0
    along an axis of one pixel); without, ``(2 i + 1) / n - 1`` (-1 and 1 at the outer
    edges of the first and last pixels).

    Raises
    ------
    TopiError
        For data that is not ``[batch, k, k + 1]``, or a target shape that is not 2
        or 3 positive integers; :class:`~tecc.errors.TeccTypeError` for data that is
        not a tensor of floats.
    """
    what = _affine_grid_call(data, target_shape)
    if isinstance(target_shape, (str, bytes)) or not hasattr(target_shape, "__len__") \
            or len(target_shape) not in (2, 3):
        raise TopiError(f"{what}: target_shape must be (height, width) or (depth, height, width)")
    k = len(target_shape)
    if len(data.shape) != 3 or get_const_tuple(data.shape)[1:] != (k, k + 1):
        raise TopiError(f"{what}: data must be [batch, {k}, {k + 1}] (one {k} x {k + 1} affine matrix per batch), "
                        f"got shape {get_const_tuple(data.shape)}")
    _affine_grid_dtype(what, data)
    sizes = [_static(s) if isinstance(s, E.PrimExpr) else s for s in target_shape]
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in sizes):
        raise TopiError(f"{what}: target_shape must be {'two' if k == 2 else 'three'} positive integers, got "
                        f"{tuple(target_shape)!r}")
    fd = "float64" if data.dtype == "float64" else "float32"
    if align_corners:
        start = [-1.0 if s > 1 else 0.0 for s in sizes]
        step = [2.0 / (s - 1) if s > 1 else 0.0 for s in sizes]
    else:
        start = [1.0 / s - 1.0 for s in sizes]
        step = [2.0 / s for s in sizes]

    def body(n, dim, *pos):
        # data[n, dim] . (x, y(, z), 1): x reads the last axis
        out = None
        for j, a in enumerate(reversed(range(k))):
            coordinate = _op.cast(fd, _op.const(start[a], "float64") + _op.cast("float64", pos[a])
                                  * _op.const(step[a], "float64"))
            term = _op.cast(fd, data(n, dim, j)) * coordinate
            out = term if out is None else out + term
        return _op.cast(data.dtype, out + _op.cast(fd, data(n, dim, k)))

    return te.compute((data.shape[0], k) + tuple(sizes), body, name="affine_grid",
                      tag=tag.compose(tag.INJECTIVE, AFFINE_GRID))
