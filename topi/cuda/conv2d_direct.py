"""The direct-convolution template for CUDA (TVM's ``conv2d_direct`` knobs), shared by
every convolution of :mod:`tecc.topi.nn`: NCHW, NHWC, grouped, depthwise (NCHW and
NHWC), 1-D, 3-D (NCDHW, grouped too, and NDHWC) and transposed (grouped too).

A block computes a tile of the output: ``tile_f`` channels by ``tile_y`` rows by
``tile_x`` columns, each split four ways (block, virtual thread, thread, inner).
Each thread accumulates its inner tile (times the virtual threads) in registers.
The reduction walks chunks of ``tile_rc`` input channels (and, when split, of
kernel rows and columns: ``tile_ry``, ``tile_rx``); for each chunk, the block's
threads copy the input window it needs (the padding computed on the way: no
padded copy in memory) and the matching filter slice into shared memory together,
consecutive threads on consecutive addresses (``vec`` elements each per step: 1, 2
or 4, narrower for a tile whose rows it does not divide), then every thread reads
them from there.  ``auto_unroll_max_step`` and ``unroll_explicit`` unroll the inner
loops.

A 3-D convolution's output depth joins the batch on the blocks' outermost axis (a
block computes one depth plane's tile), and its kernel depth is one more chunked
reduction axis (``tile_rz``, a knob the 3-D tasks alone have; one kernel plane per
chunk by default).

Element-wise stages after the convolution (bias, relu, batch-norm scale and shift,
a residual add, chains of them) are computed as each thread writes its outputs:
one kernel, the convolution's result never in global memory.

Without a tuned config, :func:`fallback` picks the knobs from the shapes: a block
of 64 to 256 threads along the output's columns, rows and channels (a divisor of
each extent when a good one exists, else a partial last tile, so odd and prime
sizes work), a few output channels per thread -- fewer where the grid would have
less than :data:`~tecc.topi.cuda.dense.FILL_BLOCKS` blocks -- and shared tiles well
under 48 KiB.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...tir import dtype as _dt
from ...tuner.task.space import OtherOptionEntity, SplitEntity
from .. import tag
from ..nn.conv2d import (
    CONV1D_NCW, CONV1D_NWC, CONV2D_NCHW, CONV2D_NHWC, CONV2D_TRANSPOSE_NCHW, CONV3D_NCDHW, CONV3D_NDHWC,
    DEPTHWISE_CONV2D_NCHW, GROUP_CONV2D_NCHW, GROUP_CONV3D_NCDHW,
)
from ..nn.conv2d_transpose import CONV3D_TRANSPOSE_NCDHW, GROUP_CONV2D_TRANSPOSE_NCHW
from ..nn.depthwise_conv2d import DEPTHWISE_CONV2D_NHWC
from ..utils import get_const_tuple
from .dense import FILL_BLOCKS, cooperative_fetch, define_fetch_knob, fetch_width_knob, plan_fetches
from .injective import schedule_injective_from_existing
from .utils import MIN_BLOCK_THREADS, BlockBudget, max_threads

#: the output layout of each convolution the template knows
LAYOUTS = {
    CONV2D_NCHW: "NCHW", GROUP_CONV2D_NCHW: "NCHW", DEPTHWISE_CONV2D_NCHW: "NCHW",
    CONV2D_TRANSPOSE_NCHW: "NCHW", CONV2D_NHWC: "NHWC", CONV1D_NCW: "NCW", CONV1D_NWC: "NWC",
    DEPTHWISE_CONV2D_NHWC: "NHWC", GROUP_CONV2D_TRANSPOSE_NCHW: "NCHW", CONV3D_NCDHW: "NCDHW",
    GROUP_CONV3D_NCDHW: "NCDHW", CONV3D_NDHWC: "NDHWC", CONV3D_TRANSPOSE_NCDHW: "NCDHW",
}

#: the transposed convolutions: they step by 1 through their spread input
_TRANSPOSED = (CONV2D_TRANSPOSE_NCHW, GROUP_CONV2D_TRANSPOSE_NCHW, CONV3D_TRANSPOSE_NCDHW)

#: the reduction axes of the computes, by name: channels, kernel depth, rows and columns
_REDUCE_ROLES = {"rc": "rc", "rz": "rz", "ry": "ry", "rx": "rx"}

#: shared memory the fallback stays under (bytes), a quarter of what a block may take
_SHARED_BUDGET = 12 * 1024


def _const(extent, default):
    value = get_const_tuple([extent])[0]
    return value if isinstance(value, int) else default


def _split_size(extent, most):
    """A tile of ``extent`` of at most ``most``: the extent itself when it fits, else
    its largest divisor from ``most / 2`` to ``most`` (no partial tile), else
    ``most`` (a partial last tile)."""
    most = max(1, int(most))
    if extent <= most:
        return extent
    for d in range(most, (most + 1) // 2 - 1, -1):
        if extent % d == 0:
            return d
    return most


class _Roles:
    """Which axis of the output (and of the reduction) plays which role."""

    def __init__(self, conv):
        layout = LAYOUTS.get(conv.op.tag)
        if layout is None:
            raise ScheduleError(f"the direct-convolution template does not know {conv.op.name!r} (tag "
                                f"{conv.op.tag!r}); it schedules {sorted(LAYOUTS)}")
        self.layout = layout
        self.channels_last = layout[-1] == "C"
        self.pos = {{"N": "n", "C": "f", "D": "z", "H": "y", "W": "x"}[ch]: i for i, ch in enumerate(layout)}
        self.reduce = {}
        for r in conv.op.reduce_axis:
            role = _REDUCE_ROLES.get(r.var.name)
            if role is None:
                raise ScheduleError(f"the direct-convolution template: {conv.op.name!r} has the reduction axis "
                                    f"{r.var.name!r}; it expects rc, rz, ry and rx")
            self.reduce[role] = r

    def extents(self, conv):
        """``{role: extent}`` of the output axes and the reduction axes (1 when absent)."""
        shape = get_const_tuple(conv.shape)
        ext = {role: _const(shape[i], 1) for role, i in self.pos.items()}
        ext.setdefault("y", 1)
        ext.setdefault("z", 1)
        for role in ("rc", "rz", "ry", "rx"):
            r = self.reduce.get(role)
            ext[role] = _const(r.dom.extent, 1) if r is not None else 1
        return ext


def define_knobs(cfg, roles, ext):
    """TVM's conv2d_direct knobs: ``tile_f``, ``tile_y``, ``tile_x`` (4-way),
    ``tile_rc``, ``tile_ry``, ``tile_rx`` (2-way), ``auto_unroll_max_step``,
    ``unroll_explicit``; and ``vec``, the width of the cooperative fetches
    (:func:`~tecc.topi.cuda.dense.plan_fetches`)."""
    cfg.define_split("tile_f", ext["f"], num_outputs=4)
    cfg.define_split("tile_y", ext["y"], num_outputs=4)
    cfg.define_split("tile_x", ext["x"], num_outputs=4)
    cfg.define_split("tile_rc", ext["rc"], num_outputs=2)
    cfg.define_split("tile_ry", ext["ry"], num_outputs=2)
    cfg.define_split("tile_rx", ext["rx"], num_outputs=2)
    if "z" in roles.pos:  # 3-D only: the 2-D spaces (and their records) stay as they are
        cfg.define_split("tile_rz", ext["rz"], num_outputs=2)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])
    define_fetch_knob(cfg)


def _blocks(ext, f, y, x) -> int:
    """The blocks of a grid whose block covers ``f`` channels by ``y`` rows by ``x``
    columns of the output."""
    return ext.get("n", 1) * ext.get("z", 1) * -(-ext["f"] // f) * -(-ext["y"] // y) * -(-ext["x"] // x)


def fallback(cfg, roles, ext, stride=(1, 1), dilation=(1, 1), dtype_bytes=4, depthwise=False):
    """Set every knob of a fallback ``cfg`` from the extents (see the module's
    description)."""
    budget = max_threads(256)
    sy, sx = stride
    dy, dx = dilation
    # threads: along the contiguous axis first (columns, or channels when last)
    if roles.channels_last:
        tf = _split_size(ext["f"], 32)
        tx = _split_size(ext["x"], max(1, budget // (4 * tf)))
        ty = _split_size(ext["y"], max(1, budget // (4 * tf * tx)))
        fi = 1
    else:
        tx = _split_size(ext["x"], 16)
        ty = _split_size(ext["y"], max(1, 64 // tx))
        fi = 1 if depthwise else _split_size(ext["f"], 4) if ext["f"] >= 8 else 1
        left = -(-ext["f"] // fi)
        tf = _split_size(left, max(1, min(16, budget // (tx * ty))))
        # fewer channels a thread while the grid would not fill the GPU (ResNet-50's 7x7
        # layers at batch 1: 512 channels in blocks of 4 x 4 were 32 blocks for 132 SMs)
        while fi > 1 and _blocks(ext, tf * fi, ty, tx) < FILL_BLOCKS:
            fi //= 2
    # the reduction: the whole kernel window per chunk, channels while the tiles fit
    rows = (ty - 1) * sy + (ext["ry"] - 1) * dy + 1
    cols = (tx - 1) * sx + (ext["rx"] - 1) * dx + 1
    per_channel = (rows * cols + tf * fi * ext["ry"] * ext["rx"]) * dtype_bytes
    rc = _split_size(ext["rc"], max(1, min(16, _SHARED_BUDGET // max(per_channel, 1))))
    cfg["tile_f"] = SplitEntity([-1, 1, tf, fi])
    cfg["tile_y"] = SplitEntity([-1, 1, ty, 1])
    cfg["tile_x"] = SplitEntity([-1, 1, tx, 1])
    cfg["tile_rc"] = SplitEntity([-1, rc])
    cfg["tile_ry"] = SplitEntity([-1, ext["ry"]])
    cfg["tile_rx"] = SplitEntity([-1, ext["rx"]])
    if "z" in roles.pos:
        cfg["tile_rz"] = SplitEntity([-1, 1])  # one kernel plane per chunk: the shared tiles stay 2-D
    cfg["auto_unroll_max_step"] = OtherOptionEntity(512)
    cfg["unroll_explicit"] = OtherOptionEntity(0)
    cfg["vec"] = OtherOptionEntity(1)


def direct_fits(entity, budget, thread_knobs, out_bytes) -> bool:
    """Whether the knobs of :func:`schedule_direct_cuda` give a block that fits
    ``budget`` (a :class:`~tecc.topi.cuda.utils.BlockBudget`): the threads of the
    split knobs ``thread_knobs`` (``threadIdx.x`` first), and per thread the
    accumulators of their virtual-thread and inner tiles (the shared tiles depend on
    the layout, strides and padding: verify_gpu judges them after lowering)."""
    threads, acc = [], 1
    for knob in thread_knobs:
        _, v, t, i = entity[knob].size
        threads.append(t)
        acc *= v * i
    return budget.fits(threads, 0, out_bytes * acc)


def _window_attrs(conv, roles):
    """``(stride, dilation, depthwise)`` of a convolution compute, as (rows, columns)
    steps through its padded input (a transposed convolution steps by 1 through
    its spread input)."""
    attrs = conv.op.attrs
    k = sum(r in roles.pos for r in ("z", "y", "x"))
    stride = [1] * k
    dilation = [1] * k
    if conv.op.tag not in _TRANSPOSED:
        stride = [_const(v, 1) for v in attrs.get("strides", stride)]
        dilation = [_const(v, 1) for v in attrs.get("dilation", dilation)]
    if k == 1:
        stride, dilation = [1] + stride, [1] + dilation
    stride, dilation = stride[-2:], dilation[-2:]  # a 3-D block's tile is one depth plane
    return tuple(stride), tuple(dilation), conv.op.tag in (DEPTHWISE_CONV2D_NCHW, DEPTHWISE_CONV2D_NHWC)


def _bytes(conv):
    """Bytes of an element of the convolution's inputs."""
    return max(_dt.parse(t.dtype).bytes for t in conv.op.input_tensors)


def _inputs(conv):
    """``(padded data, kernel)`` of a convolution compute."""
    padded = kernel = None
    for t in conv.op.input_tensors:
        if isinstance(t.op, te.ComputeOp) and tag.has(t.op.tag, tag.PAD):
            padded = t
        else:
            kernel = t
    if padded is None or kernel is None:
        raise ScheduleError(f"the direct-convolution template: {conv.op.name!r} does not read a padded input "
                            "(a stage tagged 'injective,pad') and a kernel")
    return padded, kernel


def schedule_direct_cuda(cfg, s, conv, out=None):
    """Schedule the convolution ``conv`` in ``s`` with the knobs of ``cfg`` (set
    from the shapes when ``cfg.is_fallback``); ``out`` is the element-wise
    epilogue's output (``conv`` itself, or None, when there is none).

    Returns
    -------
    Schedule
        ``s``.
    """
    roles = _Roles(conv)
    ext = roles.extents(conv)
    out = conv if out is None else out
    if out.op is not conv.op and (conv.op in s.outputs
                                  or get_const_tuple(out.shape) != get_const_tuple(conv.shape)):
        # the convolution is an output itself (an output stage cannot be computed
        # inside another), or the epilogue reshapes: the epilogue is a kernel of its
        # own after the convolution's
        schedule_injective_from_existing(s, out)
        out = conv
    define_knobs(cfg, roles, ext)
    thread_knobs = [f"tile_{r}" for r in sorted((r for r in ("f", "y", "x") if r in roles.pos),
                                                 key=lambda r: -roles.pos[r])]  # threadIdx.x first
    outputs = 1
    for r in ("f", "y", "x"):
        if r in roles.pos:
            outputs *= ext[r]
    budget = BlockBudget(min_threads=min(MIN_BLOCK_THREADS, outputs))
    cfg.multi_filter(filter=lambda e: direct_fits(e, budget, thread_knobs, _dt.parse(conv.dtype).bytes),
                     reason=f"its block does not fit {budget.limits.arch} (the threads of {', '.join(thread_knobs)}"
                            f"[2], the accumulators of their [1] x [3] tiles per thread) or has fewer than "
                            f"{budget.min_threads} threads")
    if cfg.is_fallback:
        stride, dilation, depthwise = _window_attrs(conv, roles)
        fallback(cfg, roles, ext, stride, dilation, _bytes(conv), depthwise)
    vec = fetch_width_knob(cfg, "the direct-convolution template")

    padded, kernel = _inputs(conv)
    s[padded].compute_inline()
    if isinstance(kernel.op, te.ComputeOp) and tag.is_injective(kernel.op.tag):
        s[kernel].compute_inline()
    if conv.op is out.op:
        OL = s.cache_write(conv, "local")
    else:
        s[conv].set_scope("local")
        OL = conv
    AA = s.cache_read(padded, "shared", [OL])
    WW = s.cache_read(kernel, "shared", [OL])

    # the output: blocks, virtual threads, threads, inner tiles
    axes = list(s[out].op.axis)
    n = axes[roles.pos["n"]]
    if "z" in roles.pos:  # the depth planes join the batch
        s[out].reorder(n, axes[roles.pos["z"]], *[a for i, a in enumerate(axes) if i not in (roles.pos["n"],
                                                                                             roles.pos["z"])])
        n = s[out].fuse(n, axes[roles.pos["z"]])
    kernel_scope, n = s[out].split(n, nparts=1)
    split = {}
    for role, knob in (("f", "tile_f"), ("y", "tile_y"), ("x", "tile_x")):
        if role in roles.pos:
            split[role] = cfg[knob].apply(s, out, axes[roles.pos[role]])
    # threadIdx.x on the contiguous axis: the last of the layout
    order = [r for r in ("n", "f", "y", "x") if r in roles.pos]
    order.sort(key=lambda r: roles.pos[r])
    inner_order = [r for r in order if r != "n"]
    thread_tags = {r: t for r, t in zip(reversed(inner_order), ("threadIdx.x", "threadIdx.y", "threadIdx.z"))}
    block_tags = {r: t for r, t in zip(reversed(inner_order), ("blockIdx.x", "blockIdx.y", "blockIdx.z"))}
    # the batch joins the block axis of the outermost role (blockIdx.z, or .y in 1-D)
    first = inner_order[0]
    s[out].reorder(kernel_scope, n, *[split[r][0] for r in inner_order], *[split[r][1] for r in inner_order],
                   *[split[r][2] for r in inner_order], *[split[r][3] for r in inner_order])
    for r in inner_order:
        b = s[out].fuse(n, split[r][0]) if r == first else split[r][0]
        s[out].bind(b, te.thread_axis(block_tags[r]))
    for r in inner_order:
        s[out].bind(split[r][1], te.thread_axis("vthread", name=f"v{r}"))
    for r in inner_order:
        s[out].bind(split[r][2], te.thread_axis(thread_tags[r]))
    innermost_thread = split[inner_order[-1]][2]
    s[OL].compute_at(s[out], innermost_thread)

    # the reduction: chunks outside, each chunk's taps and the thread's tile inside
    outer, inner = [], []
    for role, knob in (("rc", "tile_rc"), ("rz", "tile_rz"), ("ry", "tile_ry"), ("rx", "tile_rx")):
        r = roles.reduce.get(role)
        if r is None:
            continue
        o, i = cfg[knob].apply(s, OL, r)
        outer.append(o)
        inner.append(i)
    s[OL].reorder(*outer, *inner, *s[OL].op.axis)
    s[AA].compute_at(s[OL], outer[-1])
    s[WW].compute_at(s[OL], outer[-1])

    # cooperative fetching: all the block's threads, consecutive ones on consecutive
    # addresses, ``vec`` elements per thread and step where the tile's rows allow
    threads = {r: cfg[k].size[2] for r, k in (("f", "tile_f"), ("y", "tile_y"), ("x", "tile_x")) if r in split}
    plans = plan_fetches(cfg, s, [AA, WW], vec, "the direct-convolution template")
    for load, (width, axes) in zip((AA, WW), plans):
        fetch_threads = [(te.thread_axis(tag), threads[r])
                         for r, tag in zip(reversed(inner_order), ("threadIdx.x", "threadIdx.y", "threadIdx.z"))]
        cooperative_fetch(s, load, fetch_threads, width, axes)

    s[out].pragma(kernel_scope, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[out].pragma(kernel_scope, "unroll_explicit", cfg["unroll_explicit"].val)
    flop = 2
    for role in ("n", "f", "z", "y", "x", "rc", "rz", "ry", "rx"):
        flop *= ext.get(role, 1)
    cfg.add_flop(flop)
    return s
