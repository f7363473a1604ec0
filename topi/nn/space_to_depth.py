"""Moving blocks of pixels into channels and back (TVM's ``topi.nn.space_to_depth``
and ``topi.nn.depth_to_space``; ONNX's ``SpaceToDepth`` / ``DepthToSpace``)."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from .. import tag
from ..utils import TopiError, get_const_tuple


def _nchw(data, block_size, layout, what):
    """``(n, c, h, w)`` sizes of ``data`` and a function from NCHW indices to the
    element, for ``layout`` NCHW or NHWC."""
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {data!r}")
    if layout not in ("NCHW", "NHWC"):
        raise TopiError(f"{what}({data.name!r}): layout {layout!r} is not 'NCHW' or 'NHWC'")
    if len(data.shape) != 4:
        raise TopiError(f"{what}({data.name!r} {tuple(data.shape)}): needs a 4-D tensor in layout {layout}")
    if not isinstance(block_size, int) or block_size < 1:
        raise TopiError(f"{what}({data.name!r}): block_size must be a positive int, got {block_size!r}")
    if layout == "NCHW":
        n, c, h, w = data.shape
        return (n, c, h, w), lambda b, ch, y, x: data(b, ch, y, x)
    n, h, w, c = data.shape
    return (n, c, h, w), lambda b, ch, y, x: data(b, y, x, ch)


def _in_layout(layout, n, c, h, w):
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def _nchw_indices(layout, i):
    return i if layout == "NCHW" else (i[0], i[3], i[1], i[2])


def _check_mode(what, data, mode):
    if mode not in ("DCR", "CDR"):
        raise TopiError(f"{what}({data.name!r}): mode {mode!r} is not 'DCR' or 'CDR'")


def space_to_depth(data, block_size, layout="NCHW", mode="DCR"):
    """Each ``block_size x block_size`` block of pixels made channels: output
    channel ``(by * block_size + bx) * C + c`` at ``(y, x)`` is input channel ``c``
    at ``(y * block_size + by, x * block_size + bx)``.

    Parameters
    ----------
    mode : {"DCR", "CDR"}
        How the channels are written: ``DCR`` as above (TensorFlow's and ONNX's
        default); ``CDR`` (ONNX's ``CRD``, PyTorch's ``pixel_unshuffle``) writes
        channel ``c * bs * bs + by * bs + bx``.  Each is the inverse of
        :func:`depth_to_space` in the same mode.

    Returns
    -------
    Tensor
        ``(N, C * block_size**2, H / block_size, W / block_size)`` (in ``layout``).

    Raises
    ------
    TopiError
        When the height or width is not a multiple of ``block_size``, or on a bad
        layout.
    """
    (n, c, h, w), read = _nchw(data, block_size, layout, "space_to_depth")
    _check_mode("space_to_depth", data, mode)
    for name, size in (("height", h), ("width", w)):
        size = get_const_tuple([size])[0]
        if isinstance(size, int) and size % block_size:
            raise TopiError(f"space_to_depth({data.name!r} {tuple(data.shape)}): the {name} {size} is not a multiple "
                            f"of block_size {block_size}")
    bs = block_size

    def f(*i):
        b, ch, y, x = _nchw_indices(layout, i)
        block, cin = (ch // c, ch % c) if mode == "DCR" else (ch % (bs * bs), ch // (bs * bs))
        return read(b, cin, y * bs + block // bs, x * bs + block % bs)

    shape = _in_layout(layout, n, c * bs * bs, h // bs, w // bs)
    return te.compute(shape, f, name="space_to_depth", tag=tag.INJECTIVE)


def depth_to_space(data, block_size, layout="NCHW", mode="DCR"):
    """Channels made ``block_size x block_size`` blocks of pixels (the inverse of
    :func:`space_to_depth` in mode ``"DCR"``).

    Parameters
    ----------
    mode : {"DCR", "CDR"}
        How the channels are read: ``DCR`` (depth-column-row, TensorFlow's and
        ONNX's default) takes channel ``(by * bs + bx) * C_out + c``; ``CDR``
        (PyTorch's ``pixel_shuffle``) takes ``c * bs * bs + by * bs + bx``.

    Raises
    ------
    TopiError
        When the channels are not a multiple of ``block_size ** 2``, or on a bad mode
        or layout.
    """
    (n, c, h, w), read = _nchw(data, block_size, layout, "depth_to_space")
    _check_mode("depth_to_space", data, mode)
    bs = block_size
    channels = get_const_tuple([c])[0]
    if isinstance(channels, int) and channels % (bs * bs):
        raise TopiError(f"depth_to_space({data.name!r} {tuple(data.shape)}): {channels} channels are not a multiple "
                        f"of block_size**2 = {bs * bs}")
    c_out = c // (bs * bs)

    def f(*i):
        b, ch, y, x = _nchw_indices(layout, i)
        by, bx = y % bs, x % bs
        cin = (by * bs + bx) * c_out + ch if mode == "DCR" else ch * (bs * bs) + by * bs + bx
        return read(b, cin, y // bs, x // bs)

    shape = _in_layout(layout, n, c_out, h * bs, w * bs)
    return te.compute(shape, f, name="depth_to_space", tag=tag.INJECTIVE)
