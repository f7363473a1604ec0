"""Image operators (Relay's ``image.*``): ``image.resize2d``, what ONNX's
``Resize`` and torch's ``interpolate`` become, ``image.grid_sample``, what ONNX's
``GridSample`` and torch's ``grid_sample`` become, and ``image.affine_grid``, the grid
ONNX's ``AffineGrid`` makes."""
from __future__ import annotations

from ..ir import GraphError, TensorType
from ..op import REQUIRED, OpPattern, register_op
from ._util import check_choice, check_dtype, int_tuple, same_dim, static_dims, tensor_arg, topi

_METHODS = ("nearest_neighbor", "linear", "cubic")
_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
          "tf_crop_and_resize", "half_pixel_symmetric")
_ROUNDING = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


_RESIZE_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _resize_infer(k):
    op = f"image.resize{k}d"
    letters = "DHW"[3 - k:]

    def infer(types, attrs):
        data = tensor_arg(op, types, 0)
        if data.ndim != k + 2:
            raise GraphError(f"{op}: data must be {k + 2}-D, got shape {data.shape}")
        layout = check_choice(op, "layout", attrs["layout"], _RESIZE_LAYOUTS[k])
        check_choice(op, "method", attrs["method"], _METHODS)
        check_choice(op, "coordinate_transformation_mode", attrs["coordinate_transformation_mode"], _MODES)
        check_choice(op, "rounding_method", attrs["rounding_method"], _ROUNDING)
        size = int_tuple(op, "size", attrs["size"], (k,), at_least=1)
        names = ", ".join(f"start_{c}" for c in letters.lower()) + ", " + ", ".join(f"end_{c}" for c in letters.lower())
        roi = attrs["roi"]
        if roi is not None and (not isinstance(roi, tuple) or len(roi) != 2 * k):
            raise GraphError(f"{op}: roi must be None or {2 * k} numbers ({names}), got {roi!r}")
        scales = attrs["scales"]
        if scales is not None:
            if not isinstance(scales, tuple) or len(scales) != k or any(
                    isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 for v in scales):
                raise GraphError(f"{op}: scales must be None or {k} positive numbers "
                                 f"({', '.join(f'scale_{c}' for c in letters.lower())}), got {scales!r}")
        dtype = data.dtype if attrs["out_dtype"] in (None, "") else check_dtype(op, "out_dtype", attrs["out_dtype"])
        shape = list(data.shape)
        axes = [layout.index(c) for c in letters]
        if scales is not None:
            static_dims(op, data.shape, axes, "resizing by scales")
        for a, n in zip(axes, size):
            shape[a] = n
        return TensorType(shape, dtype)

    return infer


def _resize_lower(k):
    op = f"image.resize{k}d"

    def lower(inputs, attrs, out_type):
        roi = attrs["roi"] if attrs["roi"] is not None else (0.0,) * (2 * k)
        out_dtype = None if attrs["out_dtype"] in (None, "") else out_type.dtype
        size = int_tuple(op, "size", attrs["size"], (k,))
        resize = getattr(topi().image, f"resize{k}d")
        return resize(inputs[0], [float(r) for r in roi], list(size), attrs["layout"], attrs["method"],
                      attrs["coordinate_transformation_mode"], attrs["rounding_method"], float(attrs["cubic_alpha"]),
                      int(attrs["cubic_exclude"]), float(attrs["extrapolation_value"]), out_dtype,
                      scales=None if attrs["scales"] is None else [float(v) for v in attrs["scales"]])

    return lower


_resize2d_infer, _resize2d_lower = _resize_infer(2), _resize_lower(2)


def _resize_defaults(layout):
    return {"size": REQUIRED, "roi": None, "layout": layout, "method": "linear",
            "coordinate_transformation_mode": "half_pixel", "rounding_method": "", "cubic_alpha": -0.5,
            "cubic_exclude": 0, "extrapolation_value": 0.0, "out_dtype": None, "scales": None}


register_op("image.resize2d", pattern=OpPattern.INJECTIVE, infer=_resize2d_infer, lower=_resize2d_lower,
            num_inputs=1, defaults=_resize_defaults("NCHW"),
            doc="resizing of the H and W axes (nearest, linear, cubic; ONNX's coordinate modes); ``scales`` "
                "(ONNX's, when the model gives scales) maps the coordinates by the scale instead of the sizes' "
                "ratio")
register_op("image.resize3d", pattern=OpPattern.INJECTIVE, infer=_resize_infer(3), lower=_resize_lower(3),
            num_inputs=1, defaults=_resize_defaults("NCDHW"),
            doc="resizing of the D, H and W axes (video, volumes), as image.resize2d")


# ---------------------------------------------------------------------------------------
# image.grid_sample
# ---------------------------------------------------------------------------------------
_GRID_METHODS = ("nearest", "bilinear", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")
_GRID_LAYOUTS = {"NCHW": 2, "NCDHW": 3}


def _grid_sample_infer(types, attrs):
    op = "image.grid_sample"
    data, grid = tensor_arg(op, types, 0), tensor_arg(op, types, 1)
    layout = check_choice(op, "layout", attrs["layout"], tuple(_GRID_LAYOUTS))
    method = check_choice(op, "method", attrs["method"], _GRID_METHODS)
    check_choice(op, "padding_mode", attrs["padding_mode"], _GRID_PADDINGS)
    if not isinstance(attrs["align_corners"], (bool, int)):
        raise GraphError(f"{op}: align_corners must be a bool, got {attrs['align_corners']!r}")
    k = _GRID_LAYOUTS[layout]
    if method == "bicubic" and k != 2:
        raise GraphError(f"{op}: bicubic sampling is 2-D only (layout NCHW); sample {layout} data with 'bilinear' "
                         "or 'nearest'")
    if data.ndim != k + 2:
        raise GraphError(f"{op}: data must be {k + 2}-D for layout {layout}, got shape {data.shape}")
    if grid.ndim != k + 2 or grid.shape[1] != k:
        dims = ", ".join(a + "o" for a in "DHW"[3 - k:])
        raise GraphError(f"{op}: the grid must be [N, {k}, {dims}] (the {k} coordinates of each point on axis 1), got "
                         f"shape {grid.shape}; an ONNX or torch grid [N, ..., {k}] goes through a transpose first")
    same_dim(op, data.shape[0], grid.shape[0], "the batch of the data and of the grid")
    if not grid.dtype.startswith(("float", "bfloat")):
        raise GraphError(f"{op}: the grid must hold floats, got {grid.dtype}")
    return TensorType(data.shape[:2] + grid.shape[2:], data.dtype)


def _grid_sample_lower(inputs, attrs, out_type):
    return topi().image.grid_sample(inputs[0], inputs[1], attrs["method"], attrs["layout"], attrs["padding_mode"],
                                    bool(attrs["align_corners"]))


register_op("image.grid_sample", pattern=OpPattern.INJECTIVE, infer=_grid_sample_infer, lower=_grid_sample_lower,
            num_inputs=2,
            defaults={"method": "bilinear", "layout": "NCHW", "padding_mode": "zeros", "align_corners": True},
            doc="sampling of the data at the normalized points of a grid [N, 2, Ho, Wo] (x, y; [N, 3, Do, Ho, Wo] "
                "in 3-D): nearest, bilinear or bicubic; zeros, border or reflection padding (ONNX's GridSample, "
                "the grid transposed)")


# ---------------------------------------------------------------------------------------
# image.affine_grid
# ---------------------------------------------------------------------------------------
def _affine_grid_infer(types, attrs):
    op = "image.affine_grid"
    data = tensor_arg(op, types, 0)
    size = attrs["target_shape"]
    k = len(size) if isinstance(size, tuple) else 0
    if k not in (2, 3):
        raise GraphError(f"{op}: target_shape must be (H, W) or (D, H, W), got {size!r}")
    size = int_tuple(op, "target_shape", size, (k,), at_least=1)
    if data.ndim != 3 or tuple(data.shape[1:]) != (k, k + 1):
        raise GraphError(f"{op}: data must be [batch, {k}, {k + 1}] (one affine matrix per batch) for a target shape "
                         f"of {k} axes, got shape {data.shape}")
    if not data.dtype.startswith(("float", "bfloat")):
        raise GraphError(f"{op}: data must hold floats, got {data.dtype}")
    if not isinstance(attrs["align_corners"], (bool, int)):
        raise GraphError(f"{op}: align_corners must be a bool, got {attrs['align_corners']!r}")
    return TensorType((data.shape[0], k) + tuple(size), data.dtype)


register_op("image.affine_grid", pattern=OpPattern.INJECTIVE, infer=_affine_grid_infer,
            lower=lambda inputs, attrs, out_type: topi().image.affine_grid_nd(
                inputs[0], list(attrs["target_shape"]), bool(attrs["align_corners"])),
            num_inputs=1, defaults={"target_shape": REQUIRED, "align_corners": True},
            doc="the grid [N, k, (D,) H, W] of affine matrices [N, k, k + 1] over a target shape (x, y(, z) on axis "
                "1): image.grid_sample's points (ONNX's AffineGrid, transposed)")
