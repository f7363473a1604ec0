"""Operators that move data around (TVM's ``topi.transform``): reshape, concatenate,
split, take, expand_dims, squeeze, transpose (tagged :data:`~.tag.INJECTIVE`); and
``tensordot``."""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir import dtype as _dt
from ..tir import op as _op
from ..tir.arith import Analyzer
from . import tag
from .utils import TopiError, get_const_tuple, normalize_axis, prod, ravel_index, simplify, unravel_index


def _check_tensor(x, what):
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {x!r}")


def _static(shape) -> bool:
    return all(isinstance(d, int) for d in get_const_tuple(shape))


def reshape(a, newshape):
    """``a``'s elements, in row-major order, in a tensor of shape ``newshape``.

    Parameters
    ----------
    a : Tensor
    newshape : tuple of int or expression
        One entry may be ``-1`` (inferred from the others) when ``a``'s shape is static.

    Raises
    ------
    TopiError
        When the number of elements differs.
    """
    _check_tensor(a, "reshape")
    what = f"reshape({a.name!r} {tuple(a.shape)}, {tuple(newshape)})"
    shape = [int(d) if isinstance(d, int) else d for d in newshape]
    holes = [k for k, d in enumerate(shape) if isinstance(d, int) and d == -1]
    if len(holes) > 1:
        raise TopiError(f"{what}: at most one dimension may be -1")
    if holes:
        if not _static(a.shape) or not _static([d for d in shape if not (isinstance(d, int) and d == -1)]):
            raise TopiError(f"{what}: -1 needs static shapes; give every dimension")
        known = prod(get_const_tuple(d for k, d in enumerate(shape) if k != holes[0]))
        total = prod(get_const_tuple(a.shape))
        if known == 0 or total % known:
            raise TopiError(f"{what}: {total} elements cannot be arranged with the given dimensions")
        shape[holes[0]] = total // known
    if _static(a.shape) and _static(shape):
        if prod(get_const_tuple(a.shape)) != prod(get_const_tuple(shape)):
            raise TopiError(f"{what}: the shapes hold {prod(get_const_tuple(a.shape))} and "
                            f"{prod(get_const_tuple(shape))} elements; they must hold as many")
    out_shape = tuple(_op.convert(d) for d in shape)

    def f(*i):
        return a(*unravel_index(ravel_index(i, out_shape), a.shape))

    return te.compute(out_shape, f, name="T_reshape", tag=tag.INJECTIVE)


def expand_dims(a, axis, num_newaxis=1):
    """``a`` with ``num_newaxis`` dimensions of size 1 inserted at ``axis``."""
    _check_tensor(a, "expand_dims")
    ndim = len(a.shape)
    if not -ndim - 1 <= axis <= ndim:
        raise TopiError(f"expand_dims({a.name!r}): axis {axis} is out of range for a tensor of rank {ndim}; "
                        f"use an axis in [{-ndim - 1}, {ndim}]")
    axis = axis + ndim + 1 if axis < 0 else axis
    shape = tuple(a.shape[:axis]) + (1,) * num_newaxis + tuple(a.shape[axis:])

    def f(*i):
        return a(*(i[:axis] + i[axis + num_newaxis:]))

    return te.compute(shape, f, name="T_expand_dims", tag=tag.BROADCAST)


def squeeze(a, axis=None):
    """``a`` without its dimensions of size 1 (only those in ``axis`` if given)."""
    _check_tensor(a, "squeeze")
    shape = get_const_tuple(a.shape)
    if axis is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    else:
        axes = [normalize_axis(x, len(shape), f"squeeze({a.name!r})")
                for x in (axis if isinstance(axis, (list, tuple)) else [axis])]
        for x in axes:
            if shape[x] != 1:
                raise TopiError(f"squeeze({a.name!r}): axis {x} has size {shape[x]}, not 1; it cannot be removed")
    keep = [k for k in range(len(shape)) if k not in axes]

    def f(*i):
        idx = [_op.const(0, "int32")] * len(shape)
        for k, v in zip(keep, i):
            idx[k] = v
        return a(*idx)

    return te.compute(tuple(a.shape[k] for k in keep), f, name="T_squeeze", tag=tag.INJECTIVE)


def transpose(a, axes=None):
    """``a`` with its axes permuted (reversed when ``axes`` is None)."""
    _check_tensor(a, "transpose")
    ndim = len(a.shape)
    axes = list(range(ndim))[::-1] if axes is None else [
        normalize_axis(x, ndim, f"transpose({a.name!r})") for x in axes]
    if sorted(axes) != list(range(ndim)):
        raise TopiError(f"transpose({a.name!r}): axes {axes} is not a permutation of 0..{ndim - 1}")

    def f(*i):
        idx = [None] * ndim
        for out_axis, in_axis in enumerate(axes):
            idx[in_axis] = i[out_axis]
        return a(*idx)

    return te.compute(tuple(a.shape[x] for x in axes), f, name="T_transpose", tag=tag.INJECTIVE)


def concatenate(a_tuple, axis=0):
    """The tensors of ``a_tuple`` joined along ``axis`` (equal shapes elsewhere).

    Raises
    ------
    TopiError
        When the ranks differ, or a dimension other than ``axis`` differs.
    """
    tensors = list(a_tuple)
    if not tensors:
        raise TopiError("concatenate: needs at least one tensor")
    for t in tensors:
        _check_tensor(t, "concatenate")
    first = tensors[0]
    ndim = len(first.shape)
    axis = normalize_axis(axis, ndim, f"concatenate along axis {axis}")
    ana = Analyzer()
    for t in tensors[1:]:
        if len(t.shape) != ndim:
            raise TopiError(f"concatenate: {t.name!r} has rank {len(t.shape)} but {first.name!r} has rank {ndim}")
        for k in range(ndim):
            if k != axis and not ana.can_prove_equal(t.shape[k], first.shape[k]):
                raise TopiError(
                    f"concatenate along axis {axis}: {t.name!r} {tuple(t.shape)} and {first.name!r} "
                    f"{tuple(first.shape)} differ at axis {k}; only the concatenated axis may differ")
    offsets = [_op.const(0, "int32")]
    for t in tensors:
        offsets.append(simplify(offsets[-1] + t.shape[axis]))
    out_shape = tuple(first.shape[:axis]) + (offsets[-1],) + tuple(first.shape[axis + 1:])

    def f(*i):
        j = i[axis]

        def read(k):
            return tensors[k](*(i[:axis] + (j - offsets[k],) + i[axis + 1:]))

        value = read(len(tensors) - 1)
        for k in range(len(tensors) - 2, -1, -1):
            value = _op.if_then_else(j < offsets[k + 1], read(k), value)
        return value

    return te.compute(out_shape, f, name="T_concat", tag=tag.INJECTIVE)


def stack(a_tuple, axis=0):
    """The tensors of ``a_tuple`` (one shape) stacked along a new axis ``axis``."""
    tensors = list(a_tuple)
    if not tensors:
        raise TopiError("stack: needs at least one tensor")
    return concatenate([expand_dims(t, axis) for t in tensors], axis)


def split(ary, indices_or_sections, axis=0):
    """``ary`` cut along ``axis`` into pieces: ``indices_or_sections`` equal ones
    (an int that divides the axis) or cut before each of the given indices.

    Returns
    -------
    list of Tensor
    """
    _check_tensor(ary, "split")
    ndim = len(ary.shape)
    axis = normalize_axis(axis, ndim, f"split({ary.name!r})")
    size = get_const_tuple(ary.shape)[axis]
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        sections = indices_or_sections
        if sections <= 0:
            raise TopiError(f"split({ary.name!r}): the number of sections must be positive, got {sections}")
        if isinstance(size, int):
            if size % sections:
                raise TopiError(f"split({ary.name!r}): axis {axis} of size {size} does not divide into "
                                f"{sections} equal sections; pass split indices instead")
            step = size // sections
        else:
            step = simplify(ary.shape[axis] // sections)
        begins = [k * step for k in range(sections)]
        ends = [b + step for b in begins]
    else:
        cuts = list(indices_or_sections)
        if not isinstance(size, int):
            raise TopiError(f"split({ary.name!r}): split indices need a static size along axis {axis}")
        if any(not isinstance(c, int) for c in cuts) or sorted(cuts) != cuts:
            raise TopiError(f"split({ary.name!r}): indices {cuts} must be increasing ints")
        begins = [0] + cuts
        ends = cuts + [size]
    pieces = []
    for b, e in zip(begins, ends):
        extent = simplify(_op.convert(e) - b) if not isinstance(e, int) or not isinstance(b, int) else max(e - b, 0)
        shape = tuple(ary.shape[:axis]) + (extent,) + tuple(ary.shape[axis + 1:])

        def f(*i, b=b):
            return ary(*(i[:axis] + (i[axis] + b,) + i[axis + 1:]))

        pieces.append(te.compute(shape, f, name="T_split", tag=tag.INJECTIVE))
    return pieces


def take(a, indices, axis=None, batch_dims=0, mode="clip"):
    """Elements of ``a`` picked by ``indices`` (numpy's ``take``).

    Parameters
    ----------
    a : Tensor
    indices : Tensor of integers, or an int / expression
    axis : int, optional
        The axis to pick along; None picks from ``a`` flattened.
    batch_dims : int
        The leading dimensions shared by ``a`` and ``indices``.
    mode : {"clip", "wrap", "fast"}
        Out-of-range indices clamped, wrapped around, or not checked ("fast").

    Returns
    -------
    Tensor
        of shape ``a.shape[:axis] + indices.shape[batch_dims:] + a.shape[axis + 1:]``.
    """
    _check_tensor(a, "take")
    if mode not in ("clip", "wrap", "fast"):
        raise TopiError(f"take({a.name!r}): mode {mode!r} is not one of 'clip', 'wrap', 'fast'")
    scalar = not isinstance(indices, te.Tensor)
    if scalar:
        index_expr = _op.convert(indices)
        if not _dt.is_integer(index_expr.dtype):
            raise TeccTypeError(f"take({a.name!r}): the index must be an integer, got dtype {index_expr.dtype}")
        ind_shape = ()
    else:
        if not _dt.is_integer(indices.dtype):
            raise TeccTypeError(f"take({a.name!r}): indices {indices.name!r} must have an integer dtype, "
                                f"got {indices.dtype}")
        ind_shape = tuple(indices.shape)

    def fix(idx, n):
        n = _op.cast(idx.dtype, n)
        if mode == "clip":
            return _op.min(_op.max(idx, _op.const(0, idx.dtype)), n - 1)
        if mode == "wrap":
            return _op.floormod(idx, n)
        return idx

    def read_index(ind):
        return index_expr if scalar else indices(*ind)

    if axis is None:
        if batch_dims:
            raise TopiError(f"take({a.name!r}): batch_dims needs an axis")
        total = prod(a.shape)

        def f(*i):
            flat = fix(read_index(i), total)
            return a(*unravel_index(flat, a.shape))

        return te.compute(ind_shape, f, name="T_take", tag=tag.INJECTIVE)
    ndim = len(a.shape)
    axis = normalize_axis(axis, ndim, f"take({a.name!r})")
    q = len(ind_shape)
    if batch_dims < 0:
        batch_dims += q
    if not 0 <= batch_dims <= min(axis, q):
        raise TopiError(f"take({a.name!r}): batch_dims {batch_dims} must be in [0, min(axis={axis}, rank of "
                        f"indices={q})]")
    out_shape = tuple(a.shape[:axis]) + ind_shape[batch_dims:] + tuple(a.shape[axis + 1:])
    nind = q - batch_dims

    def f(*i):
        ind = i[:batch_dims] + i[axis:axis + nind]
        picked = fix(read_index(ind), a.shape[axis])
        return a(*(i[:axis] + (picked,) + i[axis + nind:]))

    return te.compute(out_shape, f, name="T_take", tag=tag.INJECTIVE)


def tensordot(a, b, axes):
    """The sum of products of ``a`` and ``b`` over pairs of axes (numpy's ``tensordot``).

    Parameters
    ----------
    a, b : Tensor
    axes : int or (list of int, list of int)
        The last ``axes`` axes of ``a`` with the first ``axes`` of ``b``; or the
        axes of ``a`` and of ``b`` to contract, pairwise.

    Returns
    -------
    Tensor
        ``a``'s other axes then ``b``'s, named ``T_tensordot``, tagged ``matmul``.
    """
    _check_tensor(a, "tensordot")
    _check_tensor(b, "tensordot")
    what = f"tensordot({a.name!r}, {b.name!r})"
    if isinstance(axes, int):
        if not 0 <= axes <= min(len(a.shape), len(b.shape)):
            raise TopiError(f"{what}: cannot contract {axes} axes of tensors of rank {len(a.shape)} and "
                            f"{len(b.shape)}")
        a_axes = list(range(len(a.shape) - axes, len(a.shape)))
        b_axes = list(range(axes))
    else:
        a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
        if len(a_axes) != len(b_axes):
            raise TopiError(f"{what}: contracts {len(a_axes)} axes of {a.name!r} with {len(b_axes)} of {b.name!r}; "
                            "give as many of each")
        a_axes = [normalize_axis(x, len(a.shape), what) for x in a_axes]
        b_axes = [normalize_axis(x, len(b.shape), what) for x in b_axes]
    ana = Analyzer()
    for x, y in zip(a_axes, b_axes):
        da, db = a.shape[x], b.shape[y]
        if not ana.can_prove_equal(da, db) and isinstance(getattr(da, "value", None), int) \
                and isinstance(getattr(db, "value", None), int):
            raise TopiError(f"{what}: axis {x} of {a.name!r} has size {da} but axis {y} of {b.name!r} has {db}")
    a_free = [k for k in range(len(a.shape)) if k not in a_axes]
    b_free = [k for k in range(len(b.shape)) if k not in b_axes]
    rvs = [te.reduce_axis((0, a.shape[x]), name=f"k{n}") for n, x in enumerate(a_axes)]
    out_shape = tuple(a.shape[k] for k in a_free) + tuple(b.shape[k] for k in b_free)

    def f(*i):
        ai, bi = [None] * len(a.shape), [None] * len(b.shape)
        for n, k in enumerate(a_free):
            ai[k] = i[n]
        for n, k in enumerate(b_free):
            bi[k] = i[len(a_free) + n]
        for rv, x, y in zip(rvs, a_axes, b_axes):
            ai[x] = bi[y] = rv.var
        value = a(*ai) * b(*bi)
        return te.sum(value, axis=rvs) if rvs else value

    return te.compute(out_shape, f, name="T_tensordot", tag=tag.MATMUL)
