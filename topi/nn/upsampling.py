"""Upsampling (TVM's ``topi.nn.upsampling`` and ``upsampling3d``): a
:func:`~tecc.topi.image.resize2d` (``resize3d``) by scale factors, with ``asymmetric``
coordinates (or ``align_corners``; any of the resize's modes in 3-D)."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import expr as E
from ...tir import op as _op
from ..image.resize import resize2d, resize3d
from ..utils import TopiError, get_const_tuple, simplify

_METHODS = {"nearest_neighbor": "nearest_neighbor", "linear": "linear", "bilinear": "linear", "cubic": "cubic",
            "bicubic": "cubic", "trilinear": "linear", "tricubic": "cubic"}


def _scaled_size(size, scale):
    """``round(size * scale)`` (half to even, as TVM's constant folding): an int
    for a constant ``size``, else an int32 expression (``size * scale`` for a whole
    ``scale``; a float one, which only CPU targets can compute on the host,
    otherwise)."""
    n = get_const_tuple([size])[0]
    if isinstance(n, int):
        return int(round(n * scale))
    if float(scale).is_integer():  # integer arithmetic: a GPU launch plan can hold it
        return simplify(size * int(scale))
    return simplify(_op.cast("int32", _op.nearbyint(_op.cast("float32", size) * _op.const(float(scale), "float32"))))


def _check(op, data, layout, layouts, method, methods, scales) -> str:
    """How errors name the call; raises for a non-tensor, a layout or method not
    supported, a scale that is not a positive number."""
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"{op}: data must be a tensor, got {data!r}")
    what = f"{op}(data {data.name!r} {get_const_tuple(data.shape)})"
    if layout not in layouts:
        raise TopiError(f"{what}: layout {layout!r} is not supported; use {' or '.join(map(repr, layouts))}")
    if not isinstance(method, str) or method.lower() not in _METHODS:
        raise TopiError(f"{what}: method {method!r} is not supported; use {methods}")
    for name, v in scales.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TeccTypeError(f"{what}: {name} must be a number, got {v!r}")
        if not v > 0:
            raise TopiError(f"{what}: {name}={v!r} must be positive")
    return what


def upsampling(data, scale_h, scale_w, layout="NCHW", method="nearest_neighbor", align_corners=False,
               output_shape=None):
    """Upsample the height and width of ``data`` by ``scale_h`` and ``scale_w``.

    Parameters
    ----------
    data : Tensor
        ``[batch, channel, in_height, in_width]`` (``"NCHW"``) or ``[batch,
        in_height, in_width, channel]`` (``"NHWC"``).
    scale_h, scale_w : float
        Positive factors; the output is ``round(in_height * scale_h)`` by
        ``round(in_width * scale_w)``.
    layout : str
    method : str
        ``"nearest_neighbor"``, ``"bilinear"`` or ``"bicubic"`` (``"linear"`` and
        ``"cubic"`` too).
    align_corners : bool
        ``align_corners`` coordinates instead of ``asymmetric`` ones.
    output_shape : list, optional
        The whole output shape, when it is known otherwise (a dynamic shape):
        its height and width are the resize's sizes.

    Returns
    -------
    Tensor
        Tagged ``injective,resize`` (the resize schedules).

    Raises
    ------
    TopiError
        For a layout other than NCHW/NHWC, an unknown method, a scale that is not
        positive.
    """
    what = _check("upsampling", data, layout, ("NCHW", "NHWC"), method, "'nearest_neighbor', 'bilinear' or 'bicubic'",
                  {"scale_h": scale_h, "scale_w": scale_w})
    if len(data.shape) != 4:
        raise TopiError(f"{what}: data has rank {len(data.shape)}; upsampling needs a 4-D {layout} tensor")
    h, w = (2, 3) if layout == "NCHW" else (1, 2)
    if output_shape is not None:
        if len(output_shape) != 4:
            raise TopiError(f"{what}: output_shape {tuple(output_shape)!r} must have 4 entries")
        size = [output_shape[h], output_shape[w]]
        size = [s if isinstance(s, (int, E.PrimExpr)) else int(s) for s in size]
    else:
        size = [_scaled_size(data.shape[h], scale_h), _scaled_size(data.shape[w], scale_w)]
    mode = "align_corners" if align_corners else "asymmetric"
    return resize2d(data, [0.0] * 4, size, layout=layout, method=_METHODS[method.lower()],
                    coordinate_transformation_mode=mode, output_shape=output_shape)


def upsampling3d(data, scale_d, scale_h, scale_w, layout="NCDHW", method="nearest_neighbor",
                 coordinate_transformation_mode="half_pixel", output_shape=None):
    """Upsample the depth, height and width of ``data`` (TVM's ``topi.nn.upsampling3d``):
    ``round(in * scale)`` per axis, through :func:`~tecc.topi.image.resize3d`.

    Parameters
    ----------
    data : Tensor
        NCDHW or NDHWC.
    scale_d, scale_h, scale_w : float
        Positive factors.
    layout : str
    method : str
        ``"nearest_neighbor"``, ``"trilinear"`` or ``"tricubic"``.
    coordinate_transformation_mode : str
        As :func:`~tecc.topi.image.resize3d`'s.
    output_shape : list, optional
        The whole output shape, when it is known otherwise.

    Returns
    -------
    Tensor
        Tagged ``injective,resize``.
    """
    scales = (scale_d, scale_h, scale_w)
    what = _check("upsampling3d", data, layout, ("NCDHW", "NDHWC"), method,
                  "'nearest_neighbor', 'trilinear' or 'tricubic'", dict(zip(("scale_d", "scale_h", "scale_w"), scales)))
    if len(data.shape) != 5:
        raise TopiError(f"{what}: data has rank {len(data.shape)}; upsampling3d needs a 5-D {layout} tensor")
    axes = [layout.index(c) for c in "DHW"]
    if output_shape is not None:
        size = [output_shape[a] for a in axes]
    else:
        size = [_scaled_size(data.shape[a], v) for a, v in zip(axes, scales)]
    return resize3d(data, [0.0] * 6, size, layout=layout, method=_METHODS[method.lower()],
                    coordinate_transformation_mode=coordinate_transformation_mode, output_shape=output_shape)
