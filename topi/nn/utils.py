"""Helpers of the neural-network operators: padding and window arithmetic."""
from __future__ import annotations

from ..utils import TopiError, get_const_int


def _pair(value, what):
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise TopiError(f"{what}: expected an int or a pair, got {value!r}")
        return tuple(value)
    return (value, value)


def get_pad_tuple(padding, kernel):
    """``(pad_top, pad_left, pad_bottom, pad_right)`` of a 2-D window op.

    Parameters
    ----------
    padding : int, (int, int), (int, int, int, int) or str
        Every side; (height, width); (top, left, bottom, right); ``"VALID"`` (none)
        or ``"SAME"`` (the output keeps the input's size at stride 1).
    kernel : (int, int)
        The window's height and width (dilated), for ``"SAME"``.
    """
    if isinstance(padding, str):
        if padding == "VALID":
            return 0, 0, 0, 0
        if padding == "SAME":
            ph, pw = get_const_int(kernel[0]) - 1, get_const_int(kernel[1]) - 1
            return ph - ph // 2, pw - pw // 2, ph // 2, pw // 2
        raise TopiError(f"padding {padding!r} is not 'SAME' or 'VALID'")
    if isinstance(padding, (list, tuple)):
        if len(padding) == 2:
            return padding[0], padding[1], padding[0], padding[1]
        if len(padding) == 4:
            return tuple(padding)
        raise TopiError(f"padding {padding!r} must have 2 or 4 entries")
    return padding, padding, padding, padding


def get_pad_tuple3d(padding, kernel):
    """``(pad_front, pad_top, pad_left, pad_back, pad_bottom, pad_right)`` of a 3-D window
    op (TVM's): ``padding`` an int, 3 ints (each axis), 6 ints (the befores, then the
    afters), ``"VALID"`` or ``"SAME"`` (the larger half before); ``kernel`` the window's
    depth, height and width (dilated)."""
    from .conv2d import pad_tuple  # noqa: PLC0415 -- conv2d imports this module

    before, after = pad_tuple(padding, tuple(kernel), "get_pad_tuple3d")
    return tuple(before) + tuple(after)


def pair(value, what):
    """``(value, value)`` for an int, the pair itself for a pair (strides, dilations)."""
    return _pair(value, what)


def _canonical_conv_args(args, pairs=(), pad=None) -> tuple:
    """``args`` with the entries at ``pairs`` (strides, dilation, output padding) as
    (height, width) and the one at ``pad`` as (top, left, bottom, right); entries in
    another form (a ``"SAME"`` padding) stay as they are."""
    args = list(args)
    for k in pairs:
        if k < len(args) and isinstance(args[k], int) and not isinstance(args[k], bool):
            args[k] = (args[k], args[k])
    if pad is not None and pad < len(args):
        padding = args[pad]
        if (isinstance(padding, int) and not isinstance(padding, bool)) or (isinstance(padding, tuple)
                                                                             and len(padding) == 2):
            args[pad] = tuple(get_pad_tuple(padding, None))
    return tuple(args)


def conv2d_workload_args(args) -> tuple:
    """The serialized arguments of a 2-D convolution task -- ``(data, kernel,
    strides, padding, dilation, ...)`` -- in the form its workload keeps: strides and
    dilation as (height, width), padding as (top, left, bottom, right), as a model's
    layer records them.  A task created with ``padding=1`` or ``(1, 1)`` then names
    the same workload as the layer, and its tuning records apply to the model.
    Arguments in another form (a ``"SAME"`` padding) stay as they are."""
    return _canonical_conv_args(args, pairs=(2, 4), pad=3)


def conv2d_transpose_workload_args(args) -> tuple:
    """:func:`conv2d_workload_args` for a transposed convolution task -- ``(data,
    kernel, strides, padding, out_dtype, output_padding, ...)``: strides and output
    padding as (height, width), padding as (top, left, bottom, right)."""
    return _canonical_conv_args(args, pairs=(2, 5), pad=3)


def padding_workload_args(index):
    """The canonical form of a task whose only window argument is its padding, at
    ``index`` (the Winograd convolution's ``(data, kernel, padding, ...)``): (top,
    left, bottom, right)."""
    def canonical(args) -> tuple:
        return _canonical_conv_args(args, pad=index)

    return canonical


def window_out_size(size, kernel, stride, dilation, pad_before, pad_after):
    """The number of windows along one axis: ``(size + pads - dilated kernel) //
    stride + 1``."""
    return (size + pad_before + pad_after - ((kernel - 1) * dilation + 1)) // stride + 1
