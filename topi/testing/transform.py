"""Numpy references of the data-movement operators of :mod:`tecc.topi.transform`
and :mod:`tecc.topi.nn` (TVM's names in ``topi.testing``)."""
from __future__ import annotations

import numpy as np


def strided_slice_python(data, begin, end, strides, slice_mode="end", axes=None):
    """``data`` sliced as :func:`tecc.topi.strided_slice` does: numpy's slicing per
    axis (``axes``: the axes the lists apply to; ``slice_mode="size"``: ``end`` holds
    sizes counted from the begin, negative for "to the end", and the strides are
    ignored)."""
    ndim = data.ndim
    axes = list(range(max(len(begin), len(end)))) if axes is None else [a % ndim for a in axes]
    strides = [] if strides is None else list(strides)
    index = [slice(None)] * ndim
    for k, axis in enumerate(axes):
        b = begin[k] if k < len(begin) else None
        e = end[k] if k < len(end) else None
        s = strides[k] if k < len(strides) and slice_mode == "end" else None
        if slice_mode == "size":
            n = data.shape[axis]
            if b is not None and b < 0:
                b = max(b + n, 0)
            e = None if e is None or e < 0 else (b or 0) + e
        index[axis] = slice(b, e, s)
    return data[tuple(index)]


def gather_python(data, axis, indices):
    """``out[i][j][k] = data[i][indices[i][j][k]][k]`` (for ``axis`` 1), negative
    indices counting from the end (ONNX ``GatherElements``)."""
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return np.take_along_axis(data, indices.astype(np.int64), axis=axis)


def gather_nd_python(a_np, indices_np, batch_dims=0):
    """``out[y] = a_np[b..., indices_np[:, y]...]``: TVM's ``gather_nd`` (the index
    tuples along the first axis of ``indices_np``; negative indices count from the
    end)."""
    m = indices_np.shape[0]
    ys = indices_np.shape[1:]
    out = np.zeros(ys + a_np.shape[batch_dims + m:], a_np.dtype)
    for y in np.ndindex(*ys):
        lead = tuple(y[:batch_dims])
        picked = []
        for k in range(m):
            v = int(indices_np[(k,) + y])
            picked.append(v + a_np.shape[batch_dims + k] if v < 0 else v)
        out[y] = a_np[lead + tuple(picked)]
    return out


def one_hot(indices, on_value, off_value, depth, axis, dtype):
    """``on_value`` where the new axis ``axis`` (``-1``: last) equals ``indices``,
    ``off_value`` elsewhere (indices out of ``[0, depth)`` match nothing)."""
    axis = indices.ndim if axis == -1 else axis
    hits = np.expand_dims(indices, axis) == np.arange(depth).reshape(
        [depth if d == axis else 1 for d in range(indices.ndim + 1)])
    return np.where(hits, on_value, off_value).astype(dtype)


def space_to_depth_python(data, block_size, layout="NCHW"):
    """Blocks of ``block_size x block_size`` pixels moved into the channels
    (channel ``(by * bs + bx) * C + c``)."""
    x = data if layout == "NCHW" else data.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    bs = block_size
    y = x.reshape(n, c, h // bs, bs, w // bs, bs).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * bs * bs, h // bs,
                                                                                       w // bs)
    return y if layout == "NCHW" else y.transpose(0, 2, 3, 1)


def depth_to_space_python(data, block_size, mode="DCR", layout="NCHW"):
    """Channels moved into ``block_size x block_size`` blocks of pixels (``DCR``:
    channel ``(by * bs + bx) * C_out + c``; ``CDR``: ``c * bs * bs + by * bs + bx``)."""
    x = data if layout == "NCHW" else data.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    bs = block_size
    if mode == "DCR":
        y = x.reshape(n, bs, bs, c // (bs * bs), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (bs * bs), bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    y = y.reshape(n, c // (bs * bs), h * bs, w * bs)
    return y if layout == "NCHW" else y.transpose(0, 2, 3, 1)


def layout_transform_python(data, src_layout, dst_layout):
    """``data`` rearranged from ``src_layout`` to ``dst_layout`` (upper-case axes and
    lower-case ones split off them, e.g. ``"NCHW"`` -> ``"NCHW4c"``); padded with 0
    where a factor does not divide its axis."""
    def parse(layout):
        out, number = [], ""
        for ch in layout:
            if ch.isdigit():
                number += ch
            else:
                out.append((ch, int(number) if number else None))
                number = ""
        return out

    src, dst = parse(src_layout), parse(dst_layout)
    # unsplit every primal axis: primal letters in src order
    primal = [a for a, f in src if f is None]
    sub = {a.upper(): (k, f) for k, (a, f) in enumerate(src) if f is not None}
    full_shape, perm = [], []
    for k, (a, f) in enumerate(src):
        if f is None:
            perm.append(k)
            if a in sub:
                perm.append(sub[a][0])
            full_shape.append(data.shape[k] * (sub[a][1] if a in sub else 1))
    x = data.transpose(perm).reshape(full_shape)
    # split and reorder into dst
    splits = {a.upper(): f for a, f in dst if f is not None}
    pads = [(0, (-n) % splits[a]) if a in splits else (0, 0) for a, n in zip(primal, full_shape)]
    x = np.pad(x, pads)
    shape, names = [], []
    for a, n in zip(primal, x.shape):
        if a in splits:
            shape += [n // splits[a], splits[a]]
            names += [a, a.lower()]
        else:
            shape.append(n)
            names.append(a)
    x = x.reshape(shape)
    return x.transpose([names.index(a) for a, f in dst])
