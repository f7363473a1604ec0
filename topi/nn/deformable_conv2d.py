"""Deformable 2-D convolution, NCHW (TVM's ``topi.nn.deformable_conv2d_nchw``; Dai et
al., "Deformable Convolutional Networks", arXiv:1703.06211; with the modulation
``mask`` of DCNv2, Zhu et al., arXiv:1811.11168, which ONNX's ``DeformConv`` has).

Each output position moves every tap of its kernel by a learned, fractional offset.
For output pixel ``(y, x)`` and kernel tap ``(i, j)`` of deformable group ``g``, the
input is read at

* ``in_y = y * stride_h - pad_top + i * dilation_h + offset[n, 2 * (g * KH * KW + i * KW + j), y, x]``,
* ``in_x = x * stride_w - pad_left + j * dilation_w + offset[n, 2 * (g * KH * KW + i * KW + j) + 1, y, x]``,

bilinearly: the four pixels around the point, weighted by the distance, those
outside the image reading 0.  A point outside ``[0, H) x [0, W)`` reads 0 (TVM);
with ``partial_edges``, a point less than a pixel outside the image still reads
the edge pixels it overlaps (ONNX's ``DeformConv``, torchvision's
``deform_conv2d``: only points at ``-1`` or beyond, or at ``H`` (``W``) or beyond,
read 0).  The input channels split into ``deformable_groups`` consecutive groups,
each moved by its own offsets (and scaled by its own mask); the convolution itself
may be grouped (``groups``), as :func:`~.conv2d.group_conv2d_nchw`.

Two stages: the samples ``data_deform`` ``[N, C, KH, KW, OH, OW]`` (tagged
``injective,data_deform``; the interpolation runs in float32, float64 for float64
data or offsets, and is stored in the data's dtype, the mask applied), then the
convolution ``deformable_conv2d`` (tagged ``deformable_conv2d_nchw``), a sum over
each group's channels and the kernel's taps in ``out_dtype``.  Its schedules (at
the end of the module, registered for ``"cpu"`` and ``"cuda"``) compute the
samples once, as a stage of their own, and read them from every output channel.
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...te.schedule import AutoInlineInjective
from ...tir import dtype as _dt
from ...tir import op as _op
from .. import tag
from ..generic.default import new_schedule
from ..image.grid_sample import _let_all
from ..schedule_registry import register_schedule
from ..utils import TopiError, find_anchors, fuse_all, get_const_tuple, simplify
from .conv2d import _const, pad_tuple, spatial_tuple

#: the convolution's tag (what its schedules look for)
DEFORMABLE_CONV2D_NCHW = "deformable_conv2d_nchw"
#: the tag of the sampled input (after ``injective``)
DATA_DEFORM = "data_deform"


def _shape(t):
    return get_const_tuple(t.shape)


def _positive_int(value, what, arg):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TopiError(f"{what}: {arg}={value!r} must be an int >= 1")
    return value


def _check_float(t, role, what):
    if not _dt.is_float(t.dtype):
        raise TeccTypeError(f"{what}: {role} {t.name!r} must hold floats, got {t.dtype}")


def _check_map(t, role, what, batch, channels, out_sizes, content):
    """Raise unless the per-position map ``t`` (offsets or mask) is ``[batch,
    channels, OH, OW]`` where its sizes are constants."""
    want = (batch, channels) + tuple(out_sizes)
    for have, need in zip(_shape(t), want):
        h, n = _const(have), _const(need)
        if h is not None and n is not None and h != n:
            raise TopiError(f"{what}: {role} {t.name!r} has shape {_shape(t)} but must be "
                            f"{tuple(get_const_tuple(want))} ({content})")


def deformable_conv2d_nchw(data, offset, kernel, strides, padding, dilation, deformable_groups, groups,
                           out_dtype=None, mask=None, partial_edges=False):
    """Deformable 2-D convolution of NCHW ``data`` by an OIHW ``kernel`` (see the
    module's description for where each tap reads).

    Parameters
    ----------
    data : Tensor
        ``[batch, in_channel, in_height, in_width]``, floats.
    offset : Tensor
        ``[batch, deformable_groups * filter_height * filter_width * 2, out_height,
        out_width]``: for each deformable group and kernel tap (row-major), the
        (y, x) displacement of the tap at each output position.
    kernel : Tensor
        ``[num_filter, in_channel // groups, filter_height, filter_width]``.
    strides, dilation : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
        Where the kernel's first tap sits (``-pad_top``, ``-pad_left``); the pads
        also give the output size, which the offsets must have.
    deformable_groups : int
        The input channels split into this many groups of their own offsets (and
        mask); it divides ``in_channel``.
    groups : int
        The convolution's groups; it divides ``in_channel`` and ``num_filter``.
    out_dtype : str, optional
        The accumulation and output dtype (the data's by default).
    mask : Tensor, optional
        ``[batch, deformable_groups * filter_height * filter_width, out_height,
        out_width]``: each sample multiplied by its tap's value (DCNv2, ONNX's
        ``mask``); None: no modulation.
    partial_edges : bool
        False (TVM): a point outside the image reads 0.  True (ONNX's ``DeformConv``,
        torchvision): a point less than a pixel outside reads the edge pixels it
        overlaps, weighted.

    Returns
    -------
    Tensor
        ``[batch, num_filter, out_height, out_width]`` in ``out_dtype``, named
        ``deformable_conv2d`` and tagged ``deformable_conv2d_nchw``; its first input
        is the samples ``data_deform`` (``[batch, in_channel, filter_height,
        filter_width, out_height, out_width]``, tagged ``injective,data_deform``).

    Raises
    ------
    TopiError
        For tensors that are not 4-D, groups or deformable groups that do not divide
        the channels, a kernel whose input channels are not ``in_channel // groups``,
        offsets or a mask of the wrong shape, bad strides, dilation or padding, or a
        kernel larger than the padded input.
    TeccTypeError
        For arguments that are not tensors, or data, offsets or a mask that are not
        floats.

    Examples
    --------
    >>> data = te.placeholder((1, 8, 14, 14), name="data")
    >>> offset = te.placeholder((1, 2 * 3 * 3 * 2, 14, 14), name="offset")
    >>> kernel = te.placeholder((16, 8, 3, 3), name="kernel")
    >>> out = topi.nn.deformable_conv2d_nchw(data, offset, kernel, 1, 1, 1, 2, 1, "float32")
    """
    roles = [("data", data), ("offset", offset), ("kernel", kernel)] + ([("mask", mask)] if mask is not None else [])
    for role, t in roles:
        if not isinstance(t, te.Tensor):
            raise TeccTypeError(f"deformable_conv2d_nchw: {role} must be a tensor, got {t!r}")
    what = "deformable_conv2d_nchw(" + ", ".join(f"{role} {t.name!r} {_shape(t)}" for role, t in roles) + ")"
    for role, t in roles:
        if len(t.shape) != 4:
            raise TopiError(f"{what}: {role} {t.name!r} has shape {_shape(t)}; it must be 4-D")
    for role, t in roles:
        if role != "kernel":
            _check_float(t, role, what)
    deformable_groups = _positive_int(deformable_groups, what, "deformable_groups")
    groups = _positive_int(groups, what, "groups")
    if out_dtype is not None and not isinstance(out_dtype, str):
        raise TeccTypeError(f"{what}: out_dtype must be a dtype name such as 'float32', got {out_dtype!r}")
    if not isinstance(partial_edges, bool):
        raise TeccTypeError(f"{what}: partial_edges must be True or False, got {partial_edges!r}")

    batch, in_channel, in_height, in_width = data.shape
    num_filter, filter_in, kernel_h, kernel_w = kernel.shape
    kh, kw = _const(kernel_h), _const(kernel_w)
    if kh is None or kw is None:
        raise TopiError(f"{what}: the kernel's height and width must be constants, got {_shape(kernel)}")
    ci, cik, co = _const(in_channel), _const(filter_in), _const(num_filter)
    if ci is not None and ci % deformable_groups:
        raise TopiError(f"{what}: deformable_groups={deformable_groups} does not divide the {ci} input channels")
    if ci is not None and ci % groups:
        raise TopiError(f"{what}: groups={groups} does not divide the {ci} input channels")
    if co is not None and co % groups:
        raise TopiError(f"{what}: groups={groups} does not divide the {co} output channels (filters)")
    if ci is not None and cik is not None and ci != cik * groups:
        raise TopiError(f"{what}: the input has {ci} channels but the kernel expects {cik} per group x {groups} "
                        f"group(s); the kernel must be OIHW with I = in_channel // groups")

    stride_h, stride_w = spatial_tuple(strides, 2, what, "strides", 1)
    dilation_h, dilation_w = spatial_tuple(dilation, 2, what, "dilation", 1)
    dilated = (simplify((kernel_h - 1) * dilation_h + 1), simplify((kernel_w - 1) * dilation_w + 1))
    (pad_top, pad_left), (pad_bottom, pad_right) = pad_tuple(padding, dilated, what)
    out_sizes = []
    for size, before, after, window, stride, axis in ((in_height, pad_top, pad_bottom, dilated[0], stride_h, "H"),
                                                      (in_width, pad_left, pad_right, dilated[1], stride_w, "W")):
        padded = simplify(size + before + after)
        if _const(padded) is not None and _const(window) is not None and _const(window) > _const(padded):
            raise TopiError(f"{what}: the kernel (dilated: {_const(window)} along {axis}) is larger than the padded "
                            f"input ({_const(padded)} along {axis}, padding {padding!r})")
        out_sizes.append(simplify((padded - window) // stride + 1))
    taps = kh * kw
    _check_map(offset, "offset", what, batch, deformable_groups * taps * 2, out_sizes,
               f"a (y, x) pair per deformable group x {kh} x {kw} kernel tap at each of the "
               f"{tuple(get_const_tuple(out_sizes))} output positions")
    if mask is not None:
        _check_map(mask, "mask", what, batch, deformable_groups * taps, out_sizes,
                   f"a value per deformable group x {kh} x {kw} kernel tap at each output position")

    out_dtype = out_dtype or data.dtype
    fd = "float64" if "float64" in (data.dtype, offset.dtype) else "float32"
    per_dgroup = simplify(in_channel // deformable_groups)
    per_group_in = simplify(in_channel // groups)
    per_group_out = simplify(num_filter // groups)
    zero = _op.const(0.0, fd)
    one = _op.const(1.0, fd)
    lowest = _op.const(-1.0 if partial_edges else 0.0, fd)
    height_f, width_f = _op.cast(fd, in_height), _op.cast(fd, in_width)

    def read(n, c, yy, xx):
        """Pixel ``(yy, xx)`` of channel ``c``: 0 outside the image (read clamped)."""
        inside = _op.all(yy >= 0, yy < in_height, xx >= 0, xx < in_width)
        clamped = data(n, c, _op.max(_op.min(yy, in_height - 1), 0), _op.max(_op.min(xx, in_width - 1), 0))
        return _op.if_then_else(inside, _op.cast(fd, clamped), zero)

    def sample(n, c, i, j, y, x):
        g = c // per_dgroup
        tap = g * taps + i * kw + j
        base_y = _op.cast(fd, y * stride_h - pad_top + i * dilation_h)
        base_x = _op.cast(fd, x * stride_w - pad_left + j * dilation_w)
        in_y = base_y + _op.cast(fd, offset(n, tap * 2, y, x))
        in_x = base_x + _op.cast(fd, offset(n, tap * 2 + 1, y, x))

        def bilinear(point):
            py, px = point
            outside = _op.any(py <= lowest if partial_edges else py < lowest, py >= height_f,
                              px <= lowest if partial_edges else px < lowest, px >= width_f)
            # the floors of a point clamped near the image (an index in int32 for any offset)
            floors = [_op.floor(_op.max(_op.min(py, height_f), -one)), _op.floor(_op.max(_op.min(px, width_f), -one))]

            def taps_of(lows):
                low_y, low_x = lows
                ty, tx = py - low_y, px - low_x
                y0, x0 = _op.cast("int32", low_y), _op.cast("int32", low_x)
                top = (one - tx) * read(n, c, y0, x0) + tx * read(n, c, y0, x0 + 1)
                bottom = (one - tx) * read(n, c, y0 + 1, x0) + tx * read(n, c, y0 + 1, x0 + 1)
                value = (one - ty) * top + ty * bottom
                if mask is not None:
                    value = value * _op.cast(fd, mask(n, tap, y, x))
                return _op.if_then_else(outside, zero, value)

            return _let_all(floors, ["low_y", "low_x"], taps_of)

        return _op.cast(data.dtype, _let_all([in_y, in_x], ["in_y", "in_x"], bilinear))

    data_deform = te.compute((batch, in_channel, kernel_h, kernel_w) + tuple(out_sizes), sample, name="data_deform",
                             tag=tag.compose(tag.INJECTIVE, DATA_DEFORM))

    rc = te.reduce_axis((0, per_group_in), name="rc")
    ry = te.reduce_axis((0, kernel_h), name="ry")
    rx = te.reduce_axis((0, kernel_w), name="rx")

    def conv(n, f, y, x):
        channel = rc if groups == 1 else f // per_group_out * per_group_in + rc
        return te.sum(_op.cast(out_dtype, data_deform(n, channel, ry, rx, y, x))
                      * _op.cast(out_dtype, kernel(f, rc, ry, rx)), axis=[rc, ry, rx])

    return te.compute((batch, num_filter) + tuple(out_sizes), conv, name="deformable_conv2d",
                      tag=DEFORMABLE_CONV2D_NCHW,
                      attrs={"strides": [stride_h, stride_w], "dilation": [dilation_h, dilation_w],
                             "padding": [pad_top, pad_left, pad_bottom, pad_right], "groups": groups,
                             "deformable_groups": deformable_groups, "modulated": mask is not None,
                             "partial_edges": partial_edges})


# ---------------------------------------------------------------------------------------
# schedules: the samples a stage of their own (computed once, read by every output
# channel), then the convolution, one output per thread (CUDA) or per vector lane (CPU)
# ---------------------------------------------------------------------------------------
def _parts(outs, what):
    """``(outs, s, conv, samples)`` of a new schedule: the convolution under the
    element-wise stages ending at ``outs[0]`` (those inlined), and its samples."""
    outs, s = new_schedule(outs)
    op = find_anchors(s, outs[0], (DEFORMABLE_CONV2D_NCHW,), what, "a deformable_conv2d_nchw")[0]
    samples = next(t for t in op.input_tensors if tag.has(t.op.tag, DATA_DEFORM))
    return outs, s, op.output(0), samples


def _inline_producers(s):
    """Inline the injective stages the samples and the kernel read (a cast, a pad
    before the operator), once the samples are scheduled."""
    AutoInlineInjective(s)


@register_schedule(DEFORMABLE_CONV2D_NCHW, "cpu")
def schedule_deformable_conv2d_nchw_cpu(outs):
    """The CPU schedule of ``deformable_conv2d_nchw`` (and of element-wise ops after
    it): the samples in parallel over (batch, channel); the convolution in parallel
    over (batch, filter), each plane summed tap by tap along rows of outputs, the
    epilogue in the same loop.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    outs, s, conv, samples = _parts(outs, "schedule_deformable_conv2d_nchw")
    n, c = s[samples].op.axis[:2]
    s[samples].parallel(s[samples].fuse(n, c))
    out = outs[0]
    rc, ry, rx = s[conv].op.reduce_axis
    if out.op is conv.op:
        n, f, y, x = s[conv].op.axis
        plane = s[conv].fuse(n, f)
        s[conv].parallel(plane)
        s[conv].reorder(plane, y, rc, ry, rx, x)
    else:
        axes = list(s[out].op.axis)
        if len(axes) == 4:
            plane = s[out].fuse(axes[0], axes[1])
            s[out].parallel(plane)
            s[conv].compute_at(s[out], plane)
        else:
            s[out].parallel(s[out].fuse(*axes) if len(axes) > 1 else axes[0])
        n, f, y, x = s[conv].op.axis
        s[conv].reorder(n, f, y, rc, ry, rx, x)
    _inline_producers(s)
    return s


@register_schedule(DEFORMABLE_CONV2D_NCHW, "cuda")
def schedule_deformable_conv2d_nchw_cuda(outs):
    """The CUDA schedule of ``deformable_conv2d_nchw`` (and of element-wise ops
    after it): two kernels, the samples a thread each, then the outputs a thread
    each (consecutive threads along a row: the samples and outputs they touch are
    consecutive), each summing its group's channels and taps.

    Parameters
    ----------
    outs : Tensor or list of Tensor

    Returns
    -------
    Schedule
    """
    from ..cuda.utils import bind_blocks_threads, max_threads  # noqa: PLC0415 -- topi.cuda imports topi.nn

    outs, s, conv, samples = _parts(outs, "schedule_deformable_conv2d_nchw")
    num_thread = max_threads(256)
    bind_blocks_threads(s[samples], fuse_all(s, samples), num_thread)
    out = outs[0]
    _, tx = bind_blocks_threads(s[out], fuse_all(s, out), num_thread)
    if out.op is not conv.op:
        s[conv].compute_at(s[out], tx)
    _inline_producers(s)
    return s
