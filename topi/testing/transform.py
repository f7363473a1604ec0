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


def space_to_depth_python(data, block_size, layout="NCHW", mode="DCR"):
    """Blocks of ``block_size x block_size`` pixels moved into the channels
    (``DCR``: channel ``(by * bs + bx) * C + c``; ``CDR``: ``c * bs * bs + by * bs + bx``)."""
    x = data if layout == "NCHW" else data.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    bs = block_size
    blocks = x.reshape(n, c, h // bs, bs, w // bs, bs)
    y = blocks.transpose((0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4))
    y = y.reshape(n, c * bs * bs, h // bs, w // bs)
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


def strided_set_python(data, v, begin, end, strides):
    """``data`` with ``data[begin[0]:end[0]:strides[0], ...] = v`` (numpy's
    assignment, so ``v`` broadcasts; the axes past the lists' lengths whole), as
    :func:`tecc.topi.strided_set` sets it."""
    strides = [] if strides is None else list(strides)
    index = tuple(slice(begin[k] if k < len(begin) else None, end[k] if k < len(end) else None,
                        strides[k] if k < len(strides) else None) for k in range(data.ndim))
    out = np.array(data, copy=True)
    out[index] = v
    return out


def sparse_to_dense_python(sparse_indices, output_shape, sparse_values, default_value=0):
    """A dense array of ``output_shape`` holding ``default_value``, with
    ``sparse_values[j]`` (or the one value of a rank-0 ``sparse_values``) written
    at each index ``sparse_indices[j]`` (a scalar, a vector of positions along the
    first axis, or rows of leading coordinates); a later index wins over an
    earlier equal one, and an index outside the output is skipped."""
    indices = np.asarray(sparse_indices)
    values = np.asarray(sparse_values)
    rows = indices.reshape(-1, 1) if indices.ndim < 2 else indices
    out = np.full(output_shape, default_value, dtype=values.dtype)
    for j, row in enumerate(rows):
        if all(0 <= int(x) < n for x, n in zip(row, output_shape)):
            out[tuple(int(x) for x in row)] = values if values.ndim == 0 else values[j]
    return out


def matrix_set_diag(input_np, diagonal, k=0, align="RIGHT_LEFT"):
    """``input_np`` with diagonals of its last two axes replaced (TVM's
    ``topi.testing.matrix_set_diag``; TensorFlow's ``matrix_set_diag``).

    ``k`` is one diagonal (an int, or a pair of equal ints): ``diagonal[..., i]``
    goes to ``[..., i, i + k]`` (``k >= 0``) or ``[..., i - k, i]``; or a band
    ``(k0, k1)``: ``diagonal[..., k1 - d, :]`` holds diagonal ``d``, shorter
    diagonals padded on the left ("RIGHT" alignment: the first half of ``align``
    for those above the main one, the second for those below) or the right."""
    out = np.array(input_np, copy=True)
    rows, cols = input_np.shape[-2:]
    ks = list(k) if isinstance(k, (list, tuple)) else [k]
    lo, hi = ks[0], ks[-1]
    for d in range(lo, hi + 1):
        length = min(rows + min(d, 0), cols - max(d, 0))
        values = diagonal if lo == hi else diagonal[..., hi - d, :]
        right = align.split("_")[0 if d >= 0 else 1] == "RIGHT"
        offset = values.shape[-1] - length if right and lo != hi else 0
        for i in range(length):
            r, c = (i, i + d) if d >= 0 else (i - d, i)
            out[..., r, c] = values[..., i + offset]
    return out
