"""The layers the test networks are made of (TVM's ``relay.testing.layers``): an
operator and the parameters it needs, made as :class:`~tecc.graph.Var` nodes of the
right shape and named ``<name>_weight``, ``<name>_bias``, ``<name>_gamma`` ...

A tecc parameter needs its type when it is made (type inference does not guess it
from its use, as Relay's does), so each helper reads the static shape of its input,
typing the graph built so far (:func:`infer_shape`).
"""
from __future__ import annotations

import numpy as np

from ...graph.ir import GraphError, TensorType, Var, const
from .. import nn

#: data layout -> the kernel layout tecc's nn.conv2d takes with it
KERNEL_LAYOUTS = {"NCHW": "OIHW", "NHWC": "HWIO"}


def infer_shape(expr) -> tuple:
    """The static shape of ``expr`` (its graph is typed on the way).

    Raises
    ------
    GraphError
        When ``expr`` is not a tensor of static shape.
    """
    from ...graph.transform.infer_type import infer_type  # noqa: PLC0415 -- loads the passes (and tir)

    ty = infer_type(expr).checked_type
    if not isinstance(ty, TensorType) or not ty.is_static:
        raise GraphError(f"relay.testing.layers: the input of a layer must be a tensor of static shape, got {ty}")
    return ty.shape


def _dtype(expr) -> str:
    return expr.checked_type.dtype


def check_layout(where: str, argument: str, layout, supported) -> str:
    """``layout`` if it is one of ``supported``, else a GraphError naming the
    argument and the layouts that work."""
    if layout not in supported:
        raise GraphError(f"{where}: {argument}={layout!r} is not supported; tecc's graph operators build this "
                         f"network in {' or '.join(repr(s) for s in supported)}")
    return layout


def _positive_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0


def input_shape(where: str, batch_size, image_shape, num_classes=None) -> tuple:
    """``(batch_size,) + image_shape``, checked: positive ints (and a positive
    ``num_classes`` when given); ``where`` names the network in the error."""
    if not _positive_int(batch_size):
        raise GraphError(f"{where}: batch_size must be a positive int, got {batch_size!r}")
    if num_classes is not None and not _positive_int(num_classes):
        raise GraphError(f"{where}: num_classes must be a positive int, got {num_classes!r}")
    if not isinstance(image_shape, (tuple, list)) or len(image_shape) != 3 \
            or not all(_positive_int(d) for d in image_shape):
        raise GraphError(f"{where}: image_shape must be 3 positive ints (one image: channels, height and width in "
                         f"the layout's order), got {image_shape!r}")
    return (int(batch_size),) + tuple(int(d) for d in image_shape)


def conv_kernel_layout(data_layout, is_depthwise=False) -> str:
    """The kernel layout that goes with ``data_layout`` in tecc's ``nn.conv2d``
    (OIHW for NCHW, HWIO for NHWC; a depthwise or other grouped convolution is NCHW
    only).

    Raises
    ------
    GraphError
        For any other layout (or a depthwise NHWC one).
    """
    supported = ("NCHW",) if is_depthwise else tuple(KERNEL_LAYOUTS)
    what = "data_layout of a depthwise (grouped) convolution" if is_depthwise else "data_layout"
    check_layout("conv_kernel_layout", what, data_layout, supported)
    return KERNEL_LAYOUTS[data_layout]


def _pair(value, where):
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return int(value[0]), int(value[1])
    raise GraphError(f"{where}: expected an int or a pair of ints, got {value!r}")


def _need_name(name, layer):
    if not isinstance(name, str) or not name:
        raise GraphError(f"relay.testing.layers.{layer}: give name= (the prefix of the parameters it makes)")
    return name


def conv2d(data, weight=None, name=None, **kwargs):
    """``nn.conv2d`` with a weight ``<name>_weight`` made when none is given.

    Parameters
    ----------
    data : tecc.graph.Expr
    weight : tecc.graph.Expr, optional
    name : str
        The prefix of the weight's name.
    **kwargs
        ``nn.conv2d``'s attributes; ``channels`` and ``kernel_size`` are needed to
        make the weight.  ``kernel_layout`` defaults to the one that goes with
        ``data_layout`` (:func:`conv_kernel_layout`).

    Returns
    -------
    tecc.graph.Call
    """
    data_layout = kwargs.setdefault("data_layout", "NCHW")
    groups = int(kwargs.get("groups", 1))
    if "kernel_layout" not in kwargs:
        kwargs["kernel_layout"] = conv_kernel_layout(data_layout, is_depthwise=groups > 1)
    if weight is None:
        name = _need_name(name, "conv2d")
        if kwargs.get("channels") is None or kwargs.get("kernel_size") is None:
            raise GraphError(f"relay.testing.layers.conv2d {name!r}: give channels= and kernel_size= to make its "
                             "weight, or give weight=")
        check_layout(f"conv2d {name!r}", "data_layout", data_layout, tuple(KERNEL_LAYOUTS))
        if sorted(kwargs["kernel_layout"]) != sorted("OIHW"):
            raise GraphError(f"conv2d {name!r}: kernel_layout={kwargs['kernel_layout']!r} is not an ordering of O, I, "
                             "H and W; give weight= for another layout")
        shape = infer_shape(data)
        in_channels = shape[data_layout.index("C")]
        if in_channels % groups:
            raise GraphError(f"conv2d {name!r}: {in_channels} input channels are not divisible by groups={groups}")
        kh, kw = _pair(kwargs["kernel_size"], f"conv2d {name!r} kernel_size")
        dims = {"O": int(kwargs["channels"]), "I": in_channels // groups, "H": kh, "W": kw}
        weight = Var(f"{name}_weight", TensorType([dims[c] for c in kwargs["kernel_layout"]], _dtype(data)))
    return nn.conv2d(data, weight, **kwargs)


def batch_norm_infer(data, gamma=None, beta=None, moving_mean=None, moving_var=None, name=None, **kwargs):
    """The normalized output of an inference ``nn.batch_norm`` (its field 0), with
    the parameters not given made as ``<name>_gamma``, ``<name>_beta``,
    ``<name>_moving_mean`` and ``<name>_moving_var``.

    With ``scale=False`` the network has no gamma (a constant of ones stands in
    the operand it does not read), with ``center=False`` no beta (zeros).

    Parameters
    ----------
    data : tecc.graph.Expr
    gamma, beta, moving_mean, moving_var : tecc.graph.Expr, optional
    name : str
        The prefix of the parameters' names.
    **kwargs
        ``nn.batch_norm``'s attributes (``axis``, ``epsilon``, ``center``, ``scale``).

    Returns
    -------
    tecc.graph.TupleGetItem
    """
    shape = infer_shape(data)
    axis = int(kwargs.get("axis", 1))
    if not -len(shape) <= axis < len(shape):
        raise GraphError(f"batch_norm_infer: axis={axis} is out of range for data of shape {shape}")
    channels, dtype = shape[axis], _dtype(data)

    def vector(given, role, fill, used=True):
        if given is not None:
            return given
        if not used:
            return const(np.full((channels,), fill, dtype=dtype))
        return Var(f"{_need_name(name, 'batch_norm_infer')}_{role}", TensorType((channels,), dtype))

    gamma = vector(gamma, "gamma", 1.0, used=kwargs.get("scale", True))
    beta = vector(beta, "beta", 0.0, used=kwargs.get("center", True))
    moving_mean = vector(moving_mean, "moving_mean", 0.0)
    moving_var = vector(moving_var, "moving_var", 1.0)
    return nn.batch_norm(data, gamma, beta, moving_mean, moving_var, **kwargs)[0]


def bias_add(data, name, axis=1):
    """``nn.bias_add`` of a bias ``name`` (a Var as long as ``data``'s ``axis``)."""
    shape = infer_shape(data)
    bias = Var(name, TensorType((shape[axis],), _dtype(data)))
    return nn.bias_add(data, bias, axis=axis)


def dense_add_bias(data, weight=None, bias=None, units=None, name=None, **kwargs):
    """``nn.dense`` then ``nn.bias_add``, with the weight ``<name>_weight``
    (``(units, in)``) and bias ``<name>_bias`` made when not given.

    Parameters
    ----------
    data : tecc.graph.Expr
        A 2-D tensor ``(batch, in)``.
    weight, bias : tecc.graph.Expr, optional
    units : int
        The output size (needed to make the weight).
    name : str
    **kwargs
        ``nn.dense``'s other attributes (``out_dtype``).

    Returns
    -------
    tecc.graph.Call
    """
    if weight is None or bias is None:
        name = _need_name(name, "dense_add_bias")
        if units is None:
            raise GraphError(f"relay.testing.layers.dense_add_bias {name!r}: give units= to make its parameters")
        shape = infer_shape(data)
        if len(shape) != 2:
            raise GraphError(f"dense_add_bias {name!r}: data must be 2-D (batch, features), got shape {shape}")
        dtype = _dtype(data)
        if weight is None:
            weight = Var(f"{name}_weight", TensorType((int(units), shape[1]), dtype))
        if bias is None:
            bias = Var(f"{name}_bias", TensorType((int(units),), dtype))
    out = nn.dense(data, weight, units=units, **kwargs)
    return nn.bias_add(out, bias, axis=-1)
