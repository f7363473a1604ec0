"""Direct convolutions (TVM's ``topi.nn.conv2d``): one compute, :func:`conv`, for any
data layout made of ``N``, ``C`` and one or two spatial axes, with groups; the
named operators (``conv2d_nchw``, ``conv2d_nhwc``, ``group_conv2d_nchw``,
``conv2d``) call it.  The padded input is a stage of its own (``Pad``, tagged
``injective,pad``) that schedules inline or place; the convolution is tagged with
its kind and layout (``conv2d_nchw``, ``group_conv2d_nchw``, ``conv1d_ncw``...), the
tag the schedules look for.

Attribute errors (a stride below 1, a negative pad, channels that groups do not
divide, a filter that does not fit the padded input...) raise :class:`TopiError`
when the operator is declared, naming the operator, the argument and the shapes.
"""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from ...tir import expr as E
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, equal_const_int, simplify
from .pad import pad

#: the tags of the convolutions (what their schedules look for)
CONV2D_NCHW = tag.CONV2D_NCHW
CONV2D_NHWC = "conv2d_nhwc"
CONV2D_HWCN = "conv2d_hwcn"
GROUP_CONV2D_NCHW = "group_conv2d_nchw"
DEPTHWISE_CONV2D_NCHW = "depthwise_conv2d_nchw"
CONV1D_NCW = "conv1d_ncw"
CONV1D_NWC = "conv1d_nwc"
CONV2D_TRANSPOSE_NCHW = "conv2d_transpose_nchw"
CONV3D_NCDHW = "conv3d_ncdhw"
CONV3D_NDHWC = "conv3d_ndhwc"
GROUP_CONV3D_NCDHW = "group_conv3d_ncdhw"

#: the kernel layout each data layout uses when none is given (TVM's defaults)
DEFAULT_KERNEL_LAYOUT = {"NCHW": "OIHW", "NHWC": "HWIO", "NCW": "OIW", "NWC": "WIO", "NCDHW": "OIDHW",
                         "NDHWC": "DHWIO"}

#: the spatial axes of a convolution with 1, 2 or 3 of them, and the names of their reduction axes
SPATIAL_AXES = {1: "W", 2: "HW", 3: "DHW"}
REDUCE_NAMES = {"D": "rz", "H": "ry", "W": "rx"}


def _shape(t):
    return tuple(int(d.value) if isinstance(d, E.IntImm) else d for d in t.shape)


def describe_call(op, data, kernel, extra=None):
    """``op(data 'A' (1, 3, 8, 8), kernel 'W' (4, 3, 3, 3))``: how error messages name
    the call (the operator, its tensors and their shapes)."""
    parts = []
    for role, t in (("data", data), ("kernel", kernel)):
        if isinstance(t, te.Tensor):
            parts.append(f"{role} {t.name!r} {_shape(t)}")
        else:
            parts.append(f"{role} {t!r}")
    if extra:
        parts.append(extra)
    return f"{op}({', '.join(parts)})"


def _const(x):
    """The int value of ``x`` when it is a constant, else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, E.PrimExpr):
        x = simplify(x)
        if isinstance(x, E.IntImm):
            return int(x.value)
    return None


def check_tensors(what, rank, **tensors):
    """Raise unless every named argument is a tensor of rank ``rank``."""
    for role, x in tensors.items():
        if not isinstance(x, te.Tensor):
            raise TeccTypeError(f"{what}: {role} must be a tensor, got {x!r}")
        if len(x.shape) != rank:
            raise TopiError(f"{what}: {role} {x.name!r} has shape {_shape(x)}; it must be {rank}-D")


def spatial_tuple(value, k, what, arg, at_least):
    """``value`` (an int or a sequence of ``k``) as a tuple of ``k``, each checked
    to be at least ``at_least`` when constant (strides and dilations: 1)."""
    if isinstance(value, (list, tuple)):
        if len(value) != k:
            raise TopiError(f"{what}: {arg} {tuple(value)!r} must be an int or {k} int(s)")
        values = tuple(value)
    else:
        values = (value,) * k
    for v in values:
        c = _const(v)
        if c is not None and c < at_least:
            raise TopiError(f"{what}: {arg} {value!r} must be at least {at_least}")
        if not isinstance(v, (int, E.PrimExpr)) or isinstance(v, bool):
            raise TeccTypeError(f"{what}: {arg} must be made of ints, got {value!r}")
    return values


def pad_tuple(padding, kernel, what):
    """``(before, after)``, each a tuple per spatial axis, of ``padding`` for a
    window of ``kernel`` (dilated) sizes.

    ``padding`` is an int (every side), a sequence of ``k`` (each axis, both
    sides), of ``2 k`` (all befores then all afters: ``(top, left, bottom, right)``
    in 2-D), or ``"SAME"`` / ``"VALID"``.  Negative pads raise."""
    k = len(kernel)
    if isinstance(padding, str):
        if padding == "VALID":
            before, after = (0,) * k, (0,) * k
        elif padding == "SAME":
            before, after = [], []
            for d in kernel:
                c = _const(d)
                if c is None:
                    raise TopiError(f"{what}: padding 'SAME' needs a constant kernel size, got {d}")
                before.append((c - 1) - (c - 1) // 2)
                after.append((c - 1) // 2)
            before, after = tuple(before), tuple(after)
        else:
            raise TopiError(f"{what}: padding {padding!r} is not 'SAME' or 'VALID'")
    elif isinstance(padding, (list, tuple)):
        if len(padding) == k:
            before, after = tuple(padding), tuple(padding)
        elif len(padding) == 2 * k:
            before, after = tuple(padding[:k]), tuple(padding[k:])
        else:
            raise TopiError(f"{what}: padding {tuple(padding)!r} must have {k} or {2 * k} entries")
    elif isinstance(padding, (int, E.PrimExpr)) and not isinstance(padding, bool):
        before, after = (padding,) * k, (padding,) * k
    else:
        raise TeccTypeError(f"{what}: padding must be an int, a tuple or 'SAME'/'VALID', got {padding!r}")
    for p in before + after:
        c = _const(p)
        if c is not None and c < 0:
            raise TopiError(f"{what}: padding {padding!r} is negative; pads must be >= 0")
    return before, after


def _scaled(i, factor):
    """``i * factor`` with a unit factor left out."""
    return i if equal_const_int(factor, 1) else i * factor


def _layout_positions(layout, what, arg, letters):
    """``{letter: position}`` of ``layout``; it must hold exactly ``letters``."""
    if not isinstance(layout, str) or sorted(layout) != sorted(letters) or len(set(layout)) != len(layout):
        raise TopiError(f"{what}: {arg} {layout!r} is not supported; it must order the letters "
                        f"{''.join(sorted(letters))!r} (e.g. {letters!r})")
    return {ch: i for i, ch in enumerate(layout)}


def _windows(sizes, ksizes, stride, padding, dilation, letters, what):
    """``(strides, dilations, pad_before, pad_after, out_sizes)`` of a convolution
    over the spatial axes ``letters`` (their ``sizes``) by a kernel of ``ksizes``;
    a kernel larger than the padded input is refused."""
    k = len(letters)
    strides = spatial_tuple(stride, k, what, "stride", 1)
    dilations = spatial_tuple(dilation, k, what, "dilation", 1)
    dilated = [simplify((kk - 1) * d + 1) for kk, d in zip(ksizes, dilations)]
    before, after = pad_tuple(padding, dilated, what)
    out_sizes = []
    for a, letter in enumerate(letters):
        padded = simplify(sizes[a] + before[a] + after[a])
        pc, kc = _const(padded), _const(dilated[a])
        if pc is not None and kc is not None and kc > pc:
            raise TopiError(f"{what}: the kernel (dilated: {kc} along {letter}) is larger than the padded input "
                            f"({pc} along {letter}, padding {padding!r})")
        out_sizes.append(simplify((padded - dilated[a]) // strides[a] + 1))
    return strides, dilations, before, after, out_sizes


def conv(inp, filt, stride, padding, dilation, groups, data_layout, kernel_layout="", out_dtype=None,
         name="Out", op_tag=None, what=None):
    """Direct convolution in any layout of ``N``, ``C`` and 1, 2 or 3 spatial axes
    (``W``; ``H`` and ``W``; ``D``, ``H`` and ``W``), with groups (TVM's ``topi.nn.conv``).

    Parameters
    ----------
    inp : Tensor
        The data in ``data_layout``.
    filt : Tensor
        The filter in ``kernel_layout``: ``O`` output channels, ``I`` input channels
        per group (``in_channel // groups``) and the spatial axes.
    stride, dilation : int or tuple of int
        Per spatial axis (an int for all).
    padding : int, tuple or "SAME" / "VALID"
        See :func:`pad_tuple`.
    groups : int
        The channels split into this many independent groups.
    data_layout : str
        ``"NCHW"``, ``"NHWC"``, ``"NCW"``, ``"NWC"``, ``"NCDHW"``, ``"NDHWC"``, or
        another order of those letters.
    kernel_layout : str
        ``"OIHW"``... (the default for ``data_layout`` when empty).
    out_dtype : str, optional
        Accumulation and output dtype (``inp``'s by default); each operand is cast
        to it before the product.
    name : str
    op_tag : str, optional
        The convolution's tag (``[group_]conv{k}d_{layout}`` by default).

    Returns
    -------
    Tensor
        In ``data_layout`` with ``O`` channels.
    """
    k = len(data_layout) - 2
    what = what or describe_call(f"conv{k}d_{str(data_layout).lower()}", inp, filt)
    if k not in SPATIAL_AXES:
        raise TopiError(f"{what}: data_layout {data_layout!r} is not supported; use 'NCHW', 'NHWC', 'NCW', 'NWC', "
                        "'NCDHW' or 'NDHWC'")
    spatial = SPATIAL_AXES[k]
    dpos = _layout_positions(data_layout, what, "data_layout", "NC" + spatial)
    kernel_layout = kernel_layout or DEFAULT_KERNEL_LAYOUT.get(data_layout, "OI" + spatial)
    kpos = _layout_positions(kernel_layout, what, "kernel_layout", "OI" + spatial)
    check_tensors(what, k + 2, data=inp, kernel=filt)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise TopiError(f"{what}: groups={groups!r} must be an int >= 1")
    batch, in_channel = inp.shape[dpos["N"]], inp.shape[dpos["C"]]
    num_filter, filter_in = filt.shape[kpos["O"]], filt.shape[kpos["I"]]
    sizes = [inp.shape[dpos[a]] for a in spatial]
    ksizes = [filt.shape[kpos[a]] for a in spatial]
    ci, cik, co = _const(in_channel), _const(filter_in), _const(num_filter)
    if ci is not None and ci % groups:
        raise TopiError(f"{what}: groups={groups} does not divide the {ci} input channels")
    if co is not None and co % groups:
        raise TopiError(f"{what}: groups={groups} does not divide the {co} output channels (filters)")
    if ci is not None and cik is not None and ci != cik * groups:
        if groups == 1:
            raise TopiError(f"{what}: the input has {ci} channels but the filter expects {cik}; the filter must "
                            f"be {kernel_layout} with I = in_channel")
        raise TopiError(f"{what}: the input has {ci} channels but the filter expects {cik} per group x "
                        f"{groups} groups; the filter ({kernel_layout}) must have I = in_channel // groups")
    strides, dilations, before, after, out_sizes = _windows(sizes, ksizes, stride, padding, dilation, spatial,
                                                            what)
    out_dtype = out_dtype or inp.dtype

    pad_before, pad_after = [0] * (k + 2), [0] * (k + 2)
    for a, letter in enumerate(spatial):
        pad_before[dpos[letter]] = before[a]
        pad_after[dpos[letter]] = after[a]
    padded = pad(inp, pad_before, pad_after, name="Pad")

    per_group_in = simplify(in_channel // groups)
    per_group_out = simplify(num_filter // groups)
    rc = te.reduce_axis((0, per_group_in), name="rc")
    rs = [te.reduce_axis((0, kk), name=REDUCE_NAMES[letter]) for kk, letter in zip(ksizes, spatial)]
    # the reduction in the data's order: channels first for NCHW, last for NHWC
    order = sorted([("C", rc)] + list(zip(spatial, rs)), key=lambda p: dpos[p[0]])
    reduce_axes = [r for _, r in order]

    out_shape = [None] * (k + 2)
    out_shape[dpos["N"]] = batch
    out_shape[dpos["C"]] = num_filter
    for a, letter in enumerate(spatial):
        out_shape[dpos[letter]] = out_sizes[a]

    def body(*idx):
        n, f = idx[dpos["N"]], idx[dpos["C"]]
        channel = rc if groups == 1 else f // per_group_out * per_group_in + rc
        di = [None] * (k + 2)
        di[dpos["N"]] = n
        di[dpos["C"]] = channel
        ki = [None] * (k + 2)
        ki[kpos["O"]] = f
        ki[kpos["I"]] = rc
        for a, letter in enumerate(spatial):
            di[dpos[letter]] = _scaled(idx[dpos[letter]], strides[a]) + _scaled(rs[a], dilations[a])
            ki[kpos[letter]] = rs[a]
        return te.sum(_op.cast(out_dtype, padded(*di)) * _op.cast(out_dtype, filt(*ki)), axis=reduce_axes)

    op_tag = op_tag or f"{'group_' if groups > 1 else ''}conv{k}d_{data_layout.lower()}"
    return te.compute(tuple(out_shape), body, name=name, tag=op_tag,
                      attrs={"strides": list(strides), "dilation": list(dilations), "groups": groups,
                             "data_layout": data_layout, "kernel_layout": kernel_layout})


def conv2d_nchw(Input, Filter, stride=1, padding=0, dilation=1, out_dtype=None, name="Out"):
    """Direct convolution of NCHW ``Input`` with an OIHW ``Filter``.

    Parameters
    ----------
    Input : Tensor
        ``[batch, in_channel, in_height, in_width]``
    Filter : Tensor
        ``[num_filter, in_channel, filter_height, filter_width]``
    stride : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
    dilation : int or (int, int)
    out_dtype : str, optional
        The accumulation and output dtype (``Input``'s by default).
    name : str

    Returns
    -------
    Tensor
        ``[batch, num_filter, out_height, out_width]``, tagged ``conv2d_nchw``; the
        padded input is the stage ``Pad`` (tagged ``injective,pad``).
    """
    return conv(Input, Filter, stride, padding, dilation, 1, "NCHW", "OIHW", out_dtype, name, CONV2D_NCHW,
                what=describe_call("conv2d_nchw", Input, Filter))


def conv2d_nhwc(Input, Filter, stride=1, padding=0, dilation=1, out_dtype=None, name="Out"):
    """Direct convolution of NHWC ``Input`` with an HWIO ``Filter``
    (``[filter_height, filter_width, in_channel, num_filter]``).

    Returns
    -------
    Tensor
        ``[batch, out_height, out_width, num_filter]``, tagged ``conv2d_nhwc``.
    """
    return conv(Input, Filter, stride, padding, dilation, 1, "NHWC", "HWIO", out_dtype, name, CONV2D_NHWC,
                what=describe_call("conv2d_nhwc", Input, Filter))


def conv2d_hwcn(Input, Filter, stride=1, padding=0, dilation=1, out_dtype=None, name="Out"):
    """Direct convolution of HWCN ``Input`` (batch innermost) with an HWIO ``Filter``
    (``[filter_height, filter_width, in_channel, num_filter]``).

    Returns
    -------
    Tensor
        ``[out_height, out_width, num_filter, batch]``, tagged ``conv2d_hwcn``.
    """
    return conv(Input, Filter, stride, padding, dilation, 1, "HWCN", "HWIO", out_dtype, name, CONV2D_HWCN,
                what=describe_call("conv2d_hwcn", Input, Filter))


def group_conv2d_nchw(Input, Filter, stride, padding, dilation, groups, out_dtype=None, name="Out"):
    """Grouped convolution of NCHW ``Input`` with an OIHW ``Filter`` of
    ``in_channel // groups`` input channels: output channel ``f`` reads only the
    input channels of its group ``f // (num_filter // groups)``.

    Returns
    -------
    Tensor
        ``[batch, num_filter, out_height, out_width]``, tagged ``group_conv2d_nchw``.
    """
    return conv(Input, Filter, stride, padding, dilation, groups, "NCHW", "OIHW", out_dtype, name,
                GROUP_CONV2D_NCHW, what=describe_call("group_conv2d_nchw", Input, Filter))


def conv2d(input, filter, strides, padding, dilation, data_layout="NCHW",  # noqa: A002  (TVM's names)
           kernel_layout="", out_dtype=None):
    """2-D convolution in ``data_layout`` ``"NCHW"`` (OIHW filter by default) or
    ``"NHWC"`` (HWIO filter by default); ``kernel_layout`` may order ``OIHW``
    otherwise."""
    if data_layout not in ("NCHW", "NHWC"):
        raise TopiError(f"conv2d: data_layout {data_layout!r} is not supported; use 'NCHW' or 'NHWC'")
    return conv(input, filter, strides, padding, dilation, 1, data_layout, kernel_layout, out_dtype,
                op_tag=f"conv2d_{data_layout.lower()}",
                what=describe_call("conv2d", input, filter, f"data_layout={data_layout!r}"))


def pad_nchw(data, pad_width, name="Pad"):
    """``data`` (NCHW) with ``pad_width`` zeros on each side of H and W."""
    return pad(data, (0, 0, pad_width, pad_width), name=name)


# ---------------------------------------------------------------------------------
# conv2d_NCHWc: channels in blocks
# ---------------------------------------------------------------------------------
CONV2D_NCHWC = tag.CONV2D_NCHWC


def nchwc_layout_block(layout):
    """The channel block ``b`` of a layout ``"NCHW{b}c"``, or None for any other
    layout (the graph compiler's operators read their layouts here too)."""
    text = layout if isinstance(layout, str) else ""
    digits = text[4:-1]
    if text.startswith("NCHW") and text.endswith("c") and digits.isdigit() and int(digits) > 0:
        return int(digits)
    return None


def _nchwc_block(layout, what, arg):
    """The channel block ``b`` of ``layout`` ``"NCHW{b}c"``."""
    block = nchwc_layout_block(layout)
    if block is None:
        raise TopiError(f"{what}: {arg} {layout!r} is not a channel-blocked layout; it must be 'NCHW{{b}}c' "
                        "with b the channels per block (e.g. 'NCHW8c')")
    return block


def blocked_operands(name, data, kernel, layout, out_layout) -> tuple:
    """``(what, ic_bn, oc_bn)`` of a channel-blocked convolution ``name``: how its
    errors name the call, and the blocks of ``layout`` and ``out_layout``, after
    checking that both operands are tensors and the data is 5-D."""
    what = describe_call(name, data, kernel, f"layout={layout!r}, out_layout={out_layout!r}")
    for role, x in (("data", data), ("kernel", kernel)):
        if not isinstance(x, te.Tensor):
            raise TeccTypeError(f"{what}: {role} must be a tensor, got {x!r}")
    ic_bn = _nchwc_block(layout, what, "layout")
    oc_bn = _nchwc_block(out_layout, what, "out_layout")
    if len(data.shape) != 5:
        raise TopiError(f"{what}: data {data.name!r} has shape {_shape(data)}; it must be 5-D "
                        f"[N, C // {ic_bn}, H, W, {ic_bn}] (lay NCHW data out with "
                        f"topi.layout_transform(data, 'NCHW', {layout!r}))")
    return what, ic_bn, oc_bn


def conv2d_NCHWc(data, kernel, stride, padding, dilation, layout, out_layout, out_dtype="float32"):  # noqa: N802
    """Convolution with the channels in blocks (TVM's ``topi.nn.conv2d_NCHWc``):
    the input channel ``c`` is block ``c // ic_bn``, lane ``c % ic_bn``.

    Parameters
    ----------
    data : Tensor
        ``[batch, in_channel // ic_bn, in_height, in_width, ic_bn]``
    kernel : Tensor
        ``[num_filter // oc_bn, in_channel // ic_bn, filter_height, filter_width, ic_bn,
        oc_bn]`` (the layout ``"OIHW{ic_bn}i{oc_bn}o"``)
    stride, dilation : int or (int, int)
    padding : int, (int, int), (top, left, bottom, right) or "SAME" / "VALID"
    layout : str
        The data's layout, ``"NCHW{ic_bn}c"``.
    out_layout : str
        The output's layout, ``"NCHW{oc_bn}c"``.
    out_dtype : str
        The accumulation and output dtype.

    Returns
    -------
    Tensor
        ``[batch, num_filter // oc_bn, out_height, out_width, oc_bn]``, tagged
        ``conv2d_NCHWc``; the padded input is the stage ``Pad`` (tagged
        ``injective,pad``).  One group only.
    """
    what, ic_bn, oc_bn = blocked_operands("conv2d_NCHWc", data, kernel, layout, out_layout)
    if len(kernel.shape) != 6:
        raise TopiError(f"{what}: kernel {kernel.name!r} has shape {_shape(kernel)}; it must be 6-D "
                        f"[O // {oc_bn}, C // {ic_bn}, KH, KW, {ic_bn}, {oc_bn}] (lay an OIHW kernel out with "
                        f"topi.layout_transform(kernel, 'OIHW', 'OIHW{ic_bn}i{oc_bn}o'))")
    batch, ic_chunk, in_height, in_width, data_bn = data.shape
    oc_chunk, kernel_chunk, kh, kw, kernel_ic_bn, kernel_oc_bn = kernel.shape
    if _const(data_bn) is not None and _const(data_bn) != ic_bn:
        raise TopiError(f"{what}: data {data.name!r} has {_const(data_bn)} channels per block (its last axis) "
                        f"but layout {layout!r} says {ic_bn}; use layout 'NCHW{_const(data_bn)}c' or re-block "
                        "the data")
    if _const(kernel_ic_bn) is not None and _const(kernel_ic_bn) != ic_bn:
        raise TopiError(f"{what}: kernel {kernel.name!r} has {_const(kernel_ic_bn)} input channels per block "
                        f"(axis 4) but the data has {ic_bn}; lay the kernel out as "
                        f"'OIHW{ic_bn}i{oc_bn}o' (ic_bn = the data's block)")
    if _const(kernel_oc_bn) is not None and _const(kernel_oc_bn) != oc_bn:
        raise TopiError(f"{what}: kernel {kernel.name!r} has {_const(kernel_oc_bn)} output channels per block "
                        f"(axis 5) but out_layout {out_layout!r} says {oc_bn}; use out_layout "
                        f"'NCHW{_const(kernel_oc_bn)}c' or lay the kernel out as 'OIHW{ic_bn}i{oc_bn}o'")
    ck, cd = _const(kernel_chunk), _const(ic_chunk)
    if ck is not None and cd is not None and ck != cd:
        raise TopiError(f"{what}: data {data.name!r} has {cd} input-channel blocks (axis 1) but kernel "
                        f"{kernel.name!r} expects {ck} (its axis 1); both must block the same "
                        f"in_channel by {ic_bn}")
    strides, dilations, before, after, out_sizes = _windows((in_height, in_width), (kh, kw), stride, padding,
                                                            dilation, "HW", what)
    out_dtype = out_dtype or data.dtype
    padded = pad(data, [0, 0, before[0], before[1], 0], [0, 0, after[0], after[1], 0], name="Pad")
    rco = te.reduce_axis((0, ic_chunk), name="rco")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rci = te.reduce_axis((0, ic_bn), name="rci")
    (sh, sw), (dh, dw) = strides, dilations

    def body(n, oco, y, x, oci):
        iy = _scaled(y, sh) + _scaled(ry, dh)
        ix = _scaled(x, sw) + _scaled(rx, dw)
        return te.sum(_op.cast(out_dtype, padded[n, rco, iy, ix, rci])
                      * _op.cast(out_dtype, kernel[oco, rco, ry, rx, rci, oci]), axis=[rco, ry, rx, rci])

    return te.compute((batch, oc_chunk, out_sizes[0], out_sizes[1], oc_bn), body, name="Out", tag=CONV2D_NCHWC,
                      attrs={"strides": list(strides), "dilation": list(dilations), "groups": 1,
                             "data_layout": layout, "kernel_layout": f"OIHW{ic_bn}i{oc_bn}o",
                             "out_layout": out_layout})
