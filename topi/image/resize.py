"""Resizing images (TVM's ``topi.image.resize1d`` / ``resize2d``): what ONNX's
``Resize`` lowers to (and with it ``torch.nn.Upsample`` / ``F.interpolate``).

Every output pixel ``x`` along a resized axis is mapped to a coordinate ``in_x`` of
the input by the *coordinate transformation mode* (``I`` the input's size along the
axis, ``O`` the output's):

=========================  ===================================================
mode                       ``in_x``
=========================  ===================================================
``half_pixel``             ``(x + 0.5) * I / O - 0.5``
``pytorch_half_pixel``     as ``half_pixel``, but 0 when ``O == 1``
``align_corners``          ``x * (I - 1) / (O - 1)`` (0 when ``O == 1``)
``asymmetric``             ``x * I / O``
``tf_half_pixel_for_nn``   ``(x + 0.5) * I / O``
``half_pixel_symmetric``   ``I / 2 * (1 - O / L) + (x + 0.5) * I / L - 0.5``
                           (ONNX opset 19; ``half_pixel`` unless ``scales``
                           makes ``L`` differ from ``O``)
``tf_crop_and_resize``     ``start * (I - 1) + x * (end - start) * (I - 1) / (O - 1)``
                           (``(start + end) / 2 * (I - 1)`` when ``O == 1``),
                           with ``start``/``end`` from ``roi``; outputs whose
                           ``in_x`` falls outside ``[0, I - 1]`` are
                           ``extrapolation_value``
=========================  ===================================================

``scales`` (tecc's addition, for ONNX's ``Resize`` given scales): ONNX maps the
coordinates with the *scale*, not with the ratio of the sizes, and the two differ
when ``scale * I`` is not a whole number (a scale of 0.6 on 4 pixels gives 2, a
ratio of 0.5).  Given ``scales``, every formula above reads ``O`` as the real
length ``L = scale * I`` (``I / O`` becomes ``1 / scale``; ``O == 1`` tests
``L == 1``), as ONNX's reference and onnxruntime do; the output still has
``size`` pixels.

then the *method* reads the input around it, indices clamped to the image:

* ``nearest_neighbor``: the pixel at ``in_x`` rounded by ``rounding_method``
  (``round``: half away from zero, ``round_prefer_floor``, ``round_prefer_ceil``,
  ``floor``, ``ceil``; by default ``round`` for ``align_corners``, else ``floor``).
  For every mode but ``tf_crop_and_resize`` the index is computed exactly, in
  integer arithmetic on the fraction ``in_x`` is (no float error can move a whole
  or half coordinate to the neighbouring pixel, as onnxruntime's float32 scale does:
  14 -> 2 pixels, asymmetric, floor, reads its pixels 0 and 6, where ``x * I / O``
  is 7); ``tf_crop_and_resize`` rounds the
  float coordinate, ``floor`` and ``ceil`` with a ``1e-5`` margin as TVM does;
* ``linear``: the two (per axis) pixels around ``in_x``, weighted by the distance;
* ``cubic``: the four pixels around it, weighted by the cubic convolution kernel
  with coefficient ``bicubic_alpha`` (ONNX's ``cubic_coeff_a``; -0.5 in TVM,
  -0.75 in ONNX and PyTorch); with ``bicubic_exclude`` the weights of pixels
  outside the image are dropped and the rest renormalized.

The interpolation runs in float32 (float64 for float64 data) and the result is
cast to ``out_dtype`` (the data's dtype by default; a plain cast, truncating for
integer types, as TVM's).

What depends on one axis only -- the coordinates, each tap's (clamped) input index
and its weight -- is a small stage of its own over that axis's output positions
(``resize_index0_w``, ``resize_weight0_w``..., tagged ``injective,interpolation_table``),
so a CPU schedule computes it once per position instead of once per output
element; a schedule that inlines every injective stage gets back the one-stage
compute.  The output stage is tagged ``injective,resize``: it inlines into a
consumer as any injective operator, and :func:`tecc.topi.schedule` picks the resize
schedules of :mod:`tecc.topi.x86` / :mod:`tecc.topi.cuda` for outputs made of it.
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, get_const_tuple, simplify

#: the tag of the resize computes (the resize schedules look for ``resize``)
RESIZE = "resize"
#: the tag of their per-axis tables (input index and weight of each tap)
TABLE = "interpolation_table"

METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                    "tf_crop_and_resize", "half_pixel_symmetric")
ROUNDING_METHODS = ("round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

#: the layouts each resize supports (the letters of its spatial axes in order)
_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}

#: TVM's margin around floor and ceil of a float coordinate
_EPSILON = 1e-5


def _shape(t):
    return get_const_tuple(t.shape)


def _const(x):
    """The int value of ``x`` when constant, else None."""
    v = get_const_tuple([x])[0]
    return v if isinstance(v, int) else None


def _check_choice(what, arg, value, choices):
    if not isinstance(value, str) or value.lower() not in choices:
        raise TopiError(f"{what}: {arg} {value!r} is not supported; use one of {', '.join(map(repr, choices))}")
    return value.lower()


def _check_numbers(what, arg, values, count):
    """``values`` as a list of ``count`` numbers or expressions."""
    if isinstance(values, (int, float, E.PrimExpr)) and not isinstance(values, bool):
        raise TopiError(f"{what}: {arg} must be a list of {count}, got the single value {values!r}")
    try:
        values = list(values)
    except TypeError:
        raise TeccTypeError(f"{what}: {arg} must be a list of {count} numbers, got {values!r}") from None
    if len(values) != count:
        raise TopiError(f"{what}: {arg} {tuple(values)!r} has {len(values)} entries; it must have {count}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float, E.PrimExpr)):
            raise TeccTypeError(f"{what}: {arg} must be made of numbers or expressions, got {tuple(values)!r}")
    return values


class _Spec:
    """The checked arguments of one resize call."""

    def __init__(self, op, k, data, roi, size, layout, method, mode, rounding, out_dtype, output_shape,
                 scales=None):
        if not isinstance(data, te.Tensor):
            raise TeccTypeError(f"{op}: data must be a tensor, got {data!r}")
        what = f"{op}(data {data.name!r} {_shape(data)})"
        self.what = what
        if layout not in _LAYOUTS[k]:
            raise TopiError(f"{what}: layout {layout!r} is not supported; use one of "
                            f"{', '.join(map(repr, _LAYOUTS[k]))}")
        if len(data.shape) != k + 2:
            raise TopiError(f"{what}: data has rank {len(data.shape)} but layout {layout!r} needs rank {k + 2}")
        self.method = _check_choice(what, "method", method, METHODS)
        self.mode = _check_choice(what, "coordinate_transformation_mode", mode, COORDINATE_MODES)
        if rounding in ("", None):
            rounding = "round" if self.mode == "align_corners" else "floor"
        self.rounding = _check_choice(what, "rounding_method", rounding, ROUNDING_METHODS)
        self.layout = layout
        self.spatial = [layout.index(ch) for ch in layout if ch not in "NC"]
        self.in_sizes = [data.shape[p] for p in self.spatial]
        for ch, s in zip((c for c in layout if c not in "NC"), self.in_sizes):
            if _const(s) is not None and _const(s) < 1:
                raise TopiError(f"{what}: the input is empty along {ch} (size {_const(s)})")
        size = _check_numbers(what, "size", size, k)
        self.out_sizes = []
        for s in size:
            if isinstance(s, float):
                if s != int(s):
                    raise TopiError(f"{what}: size {tuple(size)!r} must be made of whole numbers")
                s = int(s)
            if isinstance(s, E.PrimExpr) and not _dt.is_integer(s.dtype):
                raise TeccTypeError(f"{what}: size {tuple(size)!r} must be made of integers")
            if _const(s) is not None and _const(s) < 1:
                raise TopiError(f"{what}: size {tuple(size)!r} must be positive")
            self.out_sizes.append(simplify(s))
        self.roi = _check_numbers(what, "roi", roi if roi is not None else [0.0] * (2 * k), 2 * k)
        # the real output length of each axis: scale * I when scales are given, else None (the size)
        self.lengths = [None] * k
        if scales is not None:
            scales = _check_numbers(what, "scales", scales, k)
            for a, (sc, s_in) in enumerate(zip(scales, self.in_sizes)):
                if isinstance(sc, E.PrimExpr) or not sc > 0:
                    raise TopiError(f"{what}: scales {tuple(scales)!r} must be positive numbers")
                if _const(s_in) is None:
                    raise TopiError(f"{what}: scales need the input's size along each resized axis known, got "
                                    f"{s_in}")
                self.lengths[a] = float(sc) * _const(s_in)
        if output_shape is None:
            shape = list(data.shape)
            for p, s in zip(self.spatial, self.out_sizes):
                shape[p] = s
        else:
            shape = _check_numbers(what, "output_shape", output_shape, k + 2)
        self.out_shape = tuple(simplify(s) if isinstance(s, E.PrimExpr) else int(s) for s in shape)
        self.out_dtype = out_dtype or data.dtype
        self.float = "float64" if data.dtype == "float64" or self.out_dtype == "float64" else "float32"


def _f(value, dtype):
    return _op.cast(dtype, value) if isinstance(value, E.PrimExpr) else _op.const(float(value), dtype)


def _coordinate(spec, x, axis):
    """The input coordinate (a float expression) of output index ``x`` along the
    ``axis``-th spatial axis."""
    fd = spec.float
    size_in, size_out = spec.in_sizes[axis], spec.out_sizes[axis]
    length = spec.lengths[axis]
    fin = _f(size_in, fd)
    fout = _f(size_out if length is None else length, fd)
    fx = _op.cast(fd, x)
    mode = spec.mode
    if length is None:
        one_out = _const(size_out) == 1
        many_out = _const(size_out) is not None and _const(size_out) > 1
    else:
        one_out, many_out = length == 1.0, length != 1.0

    # O - 1 (or L - 1), kept nonzero when O is symbolic, even in the branch the select does not take
    gaps = fout - _f(1.0, fd) if many_out else _op.max(fout - _f(1.0, fd), _f(1.0, fd))

    def unless_single(value, single):
        """``value``, or ``single`` when the output has one pixel along the axis."""
        if one_out:
            return single
        if many_out:
            return value
        return _op.if_then_else(size_out > 1, value, single)

    if mode == "half_pixel":
        return (fx + _f(0.5, fd)) * (fin / fout) - _f(0.5, fd)
    if mode == "half_pixel_symmetric":
        # the centre of the output's real length L maps to the centre of the input
        offset = fin * _f(0.5, fd) * (_f(1.0, fd) - _f(size_out, fd) / fout)
        return offset + (fx + _f(0.5, fd)) * (fin / fout) - _f(0.5, fd)
    if mode == "pytorch_half_pixel":
        return unless_single((fx + _f(0.5, fd)) * (fin / fout) - _f(0.5, fd), _f(0.0, fd))
    if mode == "tf_half_pixel_for_nn":
        return (fx + _f(0.5, fd)) * (fin / fout)
    if mode == "asymmetric":
        return fx * (fin / fout)
    if mode == "align_corners":
        if one_out:
            return _f(0.0, fd)
        return unless_single(fx * ((fin - _f(1.0, fd)) / gaps), _f(0.0, fd))
    # tf_crop_and_resize
    k = len(spec.spatial)
    start, end = _f(spec.roi[axis], fd), _f(spec.roi[axis + k], fd)
    span = fin - _f(1.0, fd)
    if one_out:
        return _f(0.5, fd) * (start + end) * span
    return unless_single(start * span + fx * (end - start) * span / gaps,
                         _f(0.5, fd) * (start + end) * span)


def _fraction(spec, x, axis):
    """``(num, den)``, integer expressions with ``in_x == num / den`` and
    ``den > 0``; None for ``tf_crop_and_resize`` (a float roi)."""
    size_in, size_out = spec.in_sizes[axis], spec.out_sizes[axis]
    mode = spec.mode
    if mode == "tf_crop_and_resize":
        return None
    length = spec.lengths[axis]
    if length is not None and length != _const(size_out):
        return None  # a scale that is not a ratio of whole sizes: the float coordinate
    wide = _needs_int64(size_in, size_out)
    if wide:
        x, size_in, size_out = (_op.cast("int64", v) if isinstance(v, E.PrimExpr) else v
                                for v in (x, size_in, size_out))
    if mode in ("half_pixel", "half_pixel_symmetric") or (mode == "pytorch_half_pixel" and _const(size_out) is not None
                                                          and _const(size_out) > 1):
        return (2 * x + 1) * size_in - size_out, 2 * size_out
    if mode == "tf_half_pixel_for_nn":
        return (2 * x + 1) * size_in, 2 * size_out
    if mode == "asymmetric":
        return x * size_in, size_out
    if mode == "align_corners" and _const(size_out) is not None:
        if _const(size_out) == 1:
            return 0, 1
        return x * (size_in - 1), size_out - 1
    # pytorch_half_pixel / align_corners with a symbolic output size: O == 1 reads pixel 0
    return None


def _needs_int64(size_in, size_out) -> bool:
    """True unless the sizes are known small enough for ``4 * (2 O + 1) * I`` (the
    largest numerator the rounding forms) to fit in int32."""
    i, o = _const(size_in), _const(size_out)
    if i is None or o is None:
        return False
    return 4 * (2 * o + 1) * (i + 1) >= 2 ** 31


def _round_fraction(num, den, rounding):
    """``in_x = num / den`` (``den > 0``) rounded, exactly."""
    if rounding == "floor":
        return _op.floordiv(num, den)
    if rounding == "ceil":
        return _op.floordiv(num + den - 1, den)
    if rounding == "round_prefer_floor":  # ceil(q - 1/2)
        return _op.floordiv(2 * num + den - 1, 2 * den)
    # round_prefer_ceil, and round (half away from zero): floor(q + 1/2); every mode
    # with a fraction has q > -1/2, where the two agree
    return _op.floordiv(2 * num + den, 2 * den)


def _round_float(v, rounding, fd):
    """The float coordinate ``v`` rounded (TVM's forms), as int32."""
    if rounding == "round":
        r = _op.if_then_else(v >= _f(0.0, fd), _op.floor(v + _f(0.5, fd)), _op.ceil(v - _f(0.5, fd)))
    elif rounding == "round_prefer_floor":
        r = _op.ceil(v - _f(0.5, fd))
    elif rounding == "round_prefer_ceil":
        r = _op.floor(v + _f(0.5, fd))
    elif rounding == "floor":
        r = _op.floor(v + _f(_EPSILON, fd))
    else:
        r = _op.ceil(v - _f(_EPSILON, fd))
    return _op.cast("int32", r)


def _nearest_index(spec, x, axis, coordinate):
    """The (unclamped) input index nearest output index ``x``; ``coordinate()`` the
    float coordinate, for the modes without an exact fraction."""
    frac = _fraction(spec, x, axis)
    if frac is None:
        return _round_float(coordinate(), spec.rounding, spec.float)
    num, den = frac
    index = _round_fraction(num, den, spec.rounding)
    return _op.cast("int32", index) if isinstance(index, E.PrimExpr) and index.dtype == "int64" else index


def _clamp(i, size):
    return _op.max(_op.min(i, size - 1), 0)


def _cubic_weights(t, alpha, fd):
    """The cubic convolution weights of the 4 taps at ``-1, 0, 1, 2`` from
    ``floor(in_x)``, ``t`` the fraction: Keys' kernel with ``a = alpha``."""
    a = _f(alpha, fd)
    one, two, three = _f(1.0, fd), _f(2.0, fd), _f(3.0, fd)
    t2 = t * t
    t3 = t2 * t
    return [
        a * (t3 - two * t2 + t),
        (a + two) * t3 - (a + three) * t2 + one,
        -(a + two) * t3 + (two * a + three) * t2 - a * t,
        a * (t2 - t3),
    ]


def _table(spec, a, name, fn):
    """A 1-D stage over the output's positions along spatial axis ``a``."""
    return te.compute((spec.out_sizes[a],), fn, name=f"resize_{name}", tag=tag.compose(tag.INJECTIVE, TABLE))


def _axis_tables(spec, a, letter, alpha, exclude):
    """``(coord, indices, weights)`` of spatial axis ``a``: the stage of the float
    coordinates (None where nothing needs it), one stage per tap with its input
    index (clamped to the image) and one with its weight (None for nearest)."""
    fd = spec.float
    size_in = spec.in_sizes[a]
    coord = None
    if spec.method != "nearest_neighbor" or _fraction(spec, te.var("x"), a) is None:
        coord = _table(spec, a, f"coord_{letter}", lambda x: _coordinate(spec, x, a))
    if spec.method == "nearest_neighbor":
        def nearest(x):
            return _clamp(_nearest_index(spec, x, a, None if coord is None else lambda: coord[x]), size_in)

        return coord, [_table(spec, a, f"index_{letter}", nearest)], None

    offsets = (0, 1) if spec.method == "linear" else (-1, 0, 1, 2)

    def index_of(o):
        return lambda x: _clamp(_op.cast("int32", _op.floor(coord[x])) + o, size_in)

    def weight_of(j):
        def weight(x):
            t = coord[x] - _op.floor(coord[x])
            if spec.method == "linear":
                return (_f(1.0, fd) - t) if j == 0 else t
            w = _cubic_weights(t, alpha, fd)[j]
            if exclude:  # no weight on taps outside the image (renormalized below)
                tap = _op.cast("int32", _op.floor(coord[x])) + offsets[j]
                w = _op.if_then_else(_op.any(tap < 0, tap >= size_in), _f(0.0, fd), w)
            return w
        return weight

    indices = [_table(spec, a, f"index{j}_{letter}", index_of(o)) for j, o in enumerate(offsets)]
    weights = [_table(spec, a, f"weight{j}_{letter}", weight_of(j)) for j in range(len(offsets))]
    if exclude and spec.method == "cubic":
        raw = weights
        total = _table(spec, a, f"weight_sum_{letter}", lambda x: raw[0][x] + raw[1][x] + raw[2][x] + raw[3][x])

        def normalized(j):
            return lambda x: raw[j][x] / total[x]

        weights = [_table(spec, a, f"weight{j}_normalized_{letter}", normalized(j)) for j in range(4)]
    return coord, indices, weights


def _resize(op, k, data, roi, size, layout, method, coordinate_transformation_mode, rounding_method,
            bicubic_alpha, bicubic_exclude, extrapolation_value, out_dtype, output_shape, scales=None):
    spec = _Spec(op, k, data, roi, size, layout, method, coordinate_transformation_mode, rounding_method,
                 out_dtype, output_shape, scales)
    fd = spec.float
    letters = [ch for ch in layout if ch not in "NC"]
    coords, indices, weights = [], [], []
    for a in range(k):
        c, i, w = _axis_tables(spec, a, letters[a].lower(), bicubic_alpha, bicubic_exclude)
        coords.append(c)
        indices.append(i)
        weights.append(w)

    def body(*idx):
        xs = [idx[p] for p in spec.spatial]

        def read(taps):
            full = list(idx)
            for a, p in enumerate(spec.spatial):
                full[p] = taps[a]
            return _op.cast(fd, data(*full))

        def along(a, taps):
            """The weighted sum over the taps of axes ``a`` on (the last innermost)."""
            if a == k:
                return read(taps)
            total = None
            for j, index in enumerate(indices[a]):
                term = along(a + 1, taps + [index[xs[a]]])
                if weights[a] is not None:
                    term = weights[a][j][xs[a]] * term
                total = term if total is None else total + term
            return total

        value = along(0, [])
        if spec.mode == "tf_crop_and_resize":
            outside = []
            for a in range(k):
                c = coords[a][xs[a]]
                outside += [c < _f(0.0, fd), c > _f(spec.in_sizes[a] - 1, fd)]
            value = _op.if_then_else(_op.any(*outside), _f(extrapolation_value, fd), value)
        return _op.cast(spec.out_dtype, value)

    return te.compute(spec.out_shape, body, name="resize", tag=tag.compose(tag.INJECTIVE, RESIZE),
                      attrs={"layout": layout, "method": spec.method,
                             "coordinate_transformation_mode": spec.mode})


def resize1d(data, roi, size, layout="NCW", method="linear", coordinate_transformation_mode="half_pixel",
             rounding_method="", bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None,
             output_shape=None, scales=None):
    """Resize the width of NCW or NWC ``data`` (see the module's description for
    the modes and methods).

    Parameters
    ----------
    data : Tensor
        ``[batch, channel, in_width]`` (``"NCW"``) or ``[batch, in_width, channel]``
        (``"NWC"``).
    roi : list of 2 floats
        ``[start_w, end_w]``, the region of ``tf_crop_and_resize`` (ignored by the
        other modes).
    size : list of 1 int or expression
        ``[out_width]``.
    layout : str
    method : str
        ``"nearest_neighbor"``, ``"linear"`` or ``"cubic"``.
    coordinate_transformation_mode : str
    rounding_method : str
        For ``nearest_neighbor``; ``""`` picks the mode's default.
    bicubic_alpha : float
    bicubic_exclude : int or bool
    extrapolation_value : float
        What ``tf_crop_and_resize`` writes outside the image.
    out_dtype : str, optional
    output_shape : list, optional
        The whole output shape (by default the data's, the width replaced by
        ``size``).
    scales : list of 1 float, optional
        ONNX's scale of each resized axis: the coordinates use ``1 / scale``
        instead of ``I / O`` (see the module's description); ``size`` still gives
        the output's size.

    Returns
    -------
    Tensor
        Tagged ``injective,resize``.

    Raises
    ------
    TopiError
        For an unknown layout, method, mode or rounding, a ``size`` or ``roi`` of
        the wrong length, a size below 1.
    """
    return _resize("resize1d", 1, data, roi, size, layout, method, coordinate_transformation_mode,
                   rounding_method, bicubic_alpha, bicubic_exclude, extrapolation_value, out_dtype, output_shape,
                   scales)


def resize2d(data, roi, size, layout="NCHW", method="linear", coordinate_transformation_mode="half_pixel",
             rounding_method="", bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None,
             output_shape=None, scales=None):
    """Resize the height and width of NCHW or NHWC ``data`` (see the module's
    description for the modes and methods).

    Parameters
    ----------
    data : Tensor
        ``[batch, channel, in_height, in_width]`` (``"NCHW"``) or ``[batch,
        in_height, in_width, channel]`` (``"NHWC"``).
    roi : list of 4 floats
        ``[start_h, start_w, end_h, end_w]``, the region of ``tf_crop_and_resize``
        (ignored by the other modes).
    size : list of 2 ints or expressions
        ``[out_height, out_width]``.
    layout, method, coordinate_transformation_mode, rounding_method, bicubic_alpha,
    bicubic_exclude, extrapolation_value, out_dtype, output_shape
        As :func:`resize1d`'s.
    scales : list of 2 floats, optional
        ``[scale_h, scale_w]``, as :func:`resize1d`'s.

    Returns
    -------
    Tensor
        ``[batch, channel, out_height, out_width]`` or ``[batch, out_height,
        out_width, channel]``, tagged ``injective,resize``.

    Raises
    ------
    TopiError
        As :func:`resize1d`.

    Examples
    --------
    >>> A = te.placeholder((1, 3, 5, 7), name="A")
    >>> B = topi.image.resize2d(A, [0.0] * 4, (10, 14), method="nearest_neighbor",
    ...                         coordinate_transformation_mode="asymmetric")
    """
    return _resize("resize2d", 2, data, roi, size, layout, method, coordinate_transformation_mode,
                   rounding_method, bicubic_alpha, bicubic_exclude, extrapolation_value, out_dtype, output_shape,
                   scales)


def resize3d(data, roi, size, layout="NCDHW", method="linear", coordinate_transformation_mode="half_pixel",
             rounding_method="", bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None,
             output_shape=None, scales=None):
    """Resize the depth, height and width of NCDHW or NDHWC ``data`` (video and
    volumes; see the module's description for the modes and methods).

    Parameters
    ----------
    data : Tensor
        ``[batch, channel, in_depth, in_height, in_width]`` (``"NCDHW"``) or
        ``[batch, in_depth, in_height, in_width, channel]`` (``"NDHWC"``).
    roi : list of 6 floats
        The three starts, then the three ends, of ``tf_crop_and_resize``'s region.
    size : list of 3 ints or expressions
        ``[out_depth, out_height, out_width]``.
    layout, method, coordinate_transformation_mode, rounding_method, bicubic_alpha,
    bicubic_exclude, extrapolation_value, out_dtype, output_shape
        As :func:`resize1d`'s.
    scales : list of 3 floats, optional
        As :func:`resize1d`'s, per resized axis.

    Returns
    -------
    Tensor
        Tagged ``injective,resize``.
    """
    return _resize("resize3d", 3, data, roi, size, layout, method, coordinate_transformation_mode,
                   rounding_method, bicubic_alpha, bicubic_exclude, extrapolation_value, out_dtype, output_shape,
                   scales)
