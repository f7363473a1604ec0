"""Cropping boxes out of images and resizing each to one size (TVM's
``topi.image.crop_and_resize``; TensorFlow's ``tf.image.crop_and_resize``, the
region-of-interest step of detection models).

Box ``b`` is ``boxes[b] = [y1, x1, y2, x2]``, normalized: 0 and 1 are the first and
last pixel (the *centres* of the corner pixels) of image ``box_indices[b]``; ``y1 >
y2`` flips the crop, coordinates outside ``[0, 1]`` reach past the image.  Output
pixel ``y`` of a crop of ``crop_h`` rows reads the image at the row coordinate

* ``y1 * (H - 1) + y * (y2 - y1) * (H - 1) / (crop_h - 1)`` when ``crop_h > 1``,
* ``(y1 + y2) / 2 * (H - 1)`` when ``crop_h == 1`` (the box's centre, as
  TensorFlow; TVM divides by zero there),

and alike along the columns.  Where a coordinate falls outside ``[0, H - 1]`` (``[0,
W - 1]``) the output is ``extrapolation_value``; elsewhere the *method* reads the
image there:

* ``bilinear``: the 2 x 2 pixels around the point, weighted by the distance;
* ``nearest_neighbor``: the pixel at the coordinates rounded, halves up (away from
  zero, as TensorFlow's ``round``).

The coordinates and the interpolation run in float32 (float64 when the data or the
boxes are float64) and the result is cast to ``out_dtype``.  The compute is one
injective stage, tagged ``injective,crop_and_resize``: it inlines into a consumer
and is scheduled as any injective operator.
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import dtype as _dt
from ...tir import expr as E
from ...tir import op as _op
from .. import tag
from ..transform import _sizes_of
from ..utils import TopiError, get_const_tuple, nchw_xc_layout
from .grid_sample import _let_all, _static

#: the tag of the compute (after ``injective``)
CROP_AND_RESIZE = "crop_and_resize"

METHODS = ("bilinear", "nearest_neighbor")


def _check(data, boxes, box_indices, crop_size, layout, method, out_dtype):
    """``(method, crop sizes)`` of a checked call."""
    for name, t in (("data", data), ("boxes", boxes), ("box_indices", box_indices)):
        if not isinstance(t, te.Tensor):
            raise TeccTypeError(f"crop_and_resize: {name} must be a tensor, got {t!r}")
    what = (f"crop_and_resize(data {data.name!r} {get_const_tuple(data.shape)}, boxes {boxes.name!r} "
            f"{get_const_tuple(boxes.shape)}, box_indices {box_indices.name!r} {get_const_tuple(box_indices.shape)})")
    if not isinstance(layout, str) or layout not in ("NCHW", "NHWC") and not nchw_xc_layout(layout):
        raise TopiError(f"{what}: layout {layout!r} is not supported; use 'NCHW', 'NHWC' or a blocked 'NCHW<x>c' "
                        "such as 'NCHW4c'")
    rank = 5 if nchw_xc_layout(layout) else 4
    if len(data.shape) != rank:
        raise TopiError(f"{what}: data has rank {len(data.shape)} but layout {layout!r} needs rank {rank}")
    if rank == 5:
        block = int(layout[4:-1])
        if _static(data.shape[4]) not in (None, block):
            raise TopiError(f"{what}: the last axis of {layout!r} data holds blocks of {block} channels, but has "
                            f"size {_static(data.shape[4])}")
    if not isinstance(method, str) or method.lower() not in METHODS:
        raise TopiError(f"{what}: method {method!r} is not supported; use one of {', '.join(map(repr, METHODS))}")
    for d, axis in ((data.shape[layout.index("H")], "H"), (data.shape[layout.index("W")], "W")):
        if _static(d) is not None and _static(d) < 1:
            raise TopiError(f"{what}: the images are empty along {axis}")
    if len(boxes.shape) != 2 or _static(boxes.shape[1]) != 4:
        raise TopiError(f"{what}: boxes must be [num_boxes, 4] (y1, x1, y2, x2 of each box), got shape "
                        f"{get_const_tuple(boxes.shape)}")
    if not _dt.is_float(boxes.dtype):
        raise TeccTypeError(f"{what}: boxes must hold floats (normalized coordinates), got {boxes.dtype}")
    if len(box_indices.shape) != 1:
        raise TopiError(f"{what}: box_indices must be 1-D [num_boxes] (the image of each box), got shape "
                        f"{get_const_tuple(box_indices.shape)}")
    if not _dt.is_integer(box_indices.dtype):
        raise TeccTypeError(f"{what}: box_indices must hold integers, got {box_indices.dtype}")
    nb, ni = _static(boxes.shape[0]), _static(box_indices.shape[0])
    if nb is not None and ni is not None and nb != ni:
        raise TopiError(f"{what}: there are {nb} boxes but {ni} box_indices; give the image of each box")
    if isinstance(crop_size, (str, bytes)) or not hasattr(crop_size, "__len__") or len(crop_size) != 2:
        raise TopiError(f"{what}: crop_size must be (crop_height, crop_width), got {crop_size!r}")
    sizes = _sizes_of(crop_size, "crop_size", what)
    if out_dtype is not None and not isinstance(out_dtype, str):
        raise TeccTypeError(f"{what}: out_dtype must be a dtype name such as 'float32', got {out_dtype!r}")
    return method.lower(), sizes


def crop_and_resize(data, boxes, box_indices, crop_size, layout="NCHW", method="bilinear", extrapolation_value=None,
                    out_dtype=None):
    """Crop ``boxes`` out of the images of ``data`` and resize each to ``crop_size``
    (see the module's description for the coordinates and methods).

    Parameters
    ----------
    data : Tensor
        ``[batch, channel, in_height, in_width]`` (``"NCHW"``), ``[batch, in_height,
        in_width, channel]`` (``"NHWC"``) or ``[batch, channel // x, in_height,
        in_width, x]`` (``"NCHW<x>c"``).
    boxes : Tensor
        ``[num_boxes, 4]`` floats: ``y1, x1, y2, x2`` of each box, normalized.
    box_indices : Tensor
        ``[num_boxes]`` integers: the image of each box, in ``[0, batch)`` (not
        checked).
    crop_size : (int, int)
        ``(crop_height, crop_width)``, positive (ints or integer expressions).
    layout : str
    method : str
        ``"bilinear"`` or ``"nearest_neighbor"``.
    extrapolation_value : float, optional
        What an output pixel reading outside its image holds; None is 0 (TensorFlow's
        default).
    out_dtype : str, optional
        The output's dtype (the data's by default; a plain cast, truncating for
        integer types).

    Returns
    -------
    Tensor
        ``[num_boxes, channel, crop_height, crop_width]`` (``"NCHW"``), ``[num_boxes,
        crop_height, crop_width, channel]`` (``"NHWC"``) or ``[num_boxes, channel //
        x, crop_height, crop_width, x]``, named ``crop_and_resize``, tagged
        ``injective,crop_and_resize``.

    Raises
    ------
    TopiError
        For an unknown layout or method, data of the wrong rank, boxes that are not
        ``[num_boxes, 4]``, as many box indices as boxes, or a crop size that is not
        two positive integers.
    TeccTypeError
        For arguments that are not tensors, boxes that are not floats or box
        indices that are not integers.

    Examples
    --------
    >>> images = te.placeholder((2, 32, 32, 3), name="images")
    >>> boxes = te.placeholder((5, 4), name="boxes")
    >>> box_ind = te.placeholder((5,), name="box_ind", dtype="int32")
    >>> crops = topi.image.crop_and_resize(images, boxes, box_ind, (7, 7), layout="NHWC")
    """
    method, (crop_h, crop_w) = _check(data, boxes, box_indices, crop_size, layout, method, out_dtype)
    fd = "float64" if "float64" in (data.dtype, boxes.dtype) else "float32"
    out_dtype = out_dtype or data.dtype
    extrapolation = _op.const(0.0 if extrapolation_value is None else float(extrapolation_value), fd)
    height, width = data.shape[layout.index("H")], data.shape[layout.index("W")]
    num_boxes = box_indices.shape[0]
    if layout == "NHWC":
        out_shape = (num_boxes, crop_h, crop_w, data.shape[3])
    else:
        out_shape = (num_boxes, data.shape[1], crop_h, crop_w) + tuple(data.shape[4:])

    def f(value):
        return _op.cast(fd, value) if isinstance(value, E.PrimExpr) else _op.const(float(value), fd)

    def coordinate(lo, hi, out, size, crop):
        """The image coordinate of output position ``out`` along an axis of ``size``
        pixels cropped from ``lo`` to ``hi`` into ``crop`` positions."""
        last = f(size - 1)
        centre = f(0.5) * (lo + hi) * last
        if _static(crop) == 1:
            return centre
        scale = last * (hi - lo) / f(_op.max(crop - 1, 1) if isinstance(crop, E.PrimExpr) else crop - 1)
        spread = lo * last + scale * f(out)
        return spread if _static(crop) is not None else _op.if_then_else(crop > 1, spread, centre)

    def read(b, c, y, x, block):
        """The image pixel at rows / columns ``y``, ``x`` (clamped into the image)."""
        y = _op.max(_op.min(y, height - 1), 0)
        x = _op.max(_op.min(x, width - 1), 0)
        image = box_indices(b)
        if layout == "NHWC":
            pixel = data(image, y, x, c)
        else:
            pixel = data(image, c, y, x, *block)
        return _op.cast(fd, pixel)

    def body(*i):
        if layout == "NHWC":
            b, y, x, c = i
            block = ()
        else:
            b, c, y, x = i[:4]
            block = i[4:]
        corners = [_op.cast(fd, boxes(b, k)) for k in range(4)]

        def sample(points):
            in_y, in_x = points
            outside = _op.any(in_y < f(0.0), in_y > f(height - 1), in_x < f(0.0), in_x > f(width - 1))
            if method == "nearest_neighbor":
                # inside the image the coordinates are >= 0: floor(v + 0.5) rounds halves up
                value = read(b, c, _op.cast("int32", _op.floor(in_y + f(0.5))),
                             _op.cast("int32", _op.floor(in_x + f(0.5))), block)
                return _op.if_then_else(outside, extrapolation, value)

            def lerp(lows):
                top_y, left_x = lows
                ty, tx = in_y - top_y, in_x - left_x
                r0, c0 = _op.cast("int32", top_y), _op.cast("int32", left_x)
                top_left, top_right = read(b, c, r0, c0, block), read(b, c, r0, c0 + 1, block)
                bottom_left, bottom_right = read(b, c, r0 + 1, c0, block), read(b, c, r0 + 1, c0 + 1, block)
                top = top_left + (top_right - top_left) * tx
                bottom = bottom_left + (bottom_right - bottom_left) * tx
                return _op.if_then_else(outside, extrapolation, top + (bottom - top) * ty)

            return _let_all([_op.floor(in_y), _op.floor(in_x)], ["top_y", "left_x"], lerp)

        points = [coordinate(corners[0], corners[2], y, height, crop_h),
                  coordinate(corners[1], corners[3], x, width, crop_w)]
        return _op.cast(out_dtype, _let_all(points, ["in_y", "in_x"], sample))

    return te.compute(out_shape, body, name="crop_and_resize", tag=tag.compose(tag.INJECTIVE, CROP_AND_RESIZE),
                      attrs={"layout": layout, "method": method})
