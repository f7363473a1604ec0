"""Operators that move data around (TVM's ``topi.transform``), each one
``te.compute`` tagged injective (or broadcast) that the injective schedules
(:func:`tecc.topi.x86.schedule_injective`, :func:`tecc.topi.cuda.schedule_injective`)
schedule; and ``tensordot``.

=========================  ============================================================
operator                   what
=========================  ============================================================
``reshape``                same elements, new shape (``-1`` inferred, ``0`` copied)
``transpose``, ``flip``    axes permuted / one axis reversed
``expand_dims``            size-1 axes inserted; ``squeeze`` removes them
``concatenate``, ``stack`` tensors joined along an existing / a new axis
``split``                  cut into equal sections or at indices
``strided_slice``          numpy's ``a[b:e:s]`` per axis (negative steps, clamping)
``take``                   numpy's ``take`` (ONNX ``Gather``)
``gather``                 ONNX's ``GatherElements`` (also ``gather_elements``)
``gather_nd``              TVM's ``gather_nd`` (index tuples along the first axis)
``tile``, ``repeat``       numpy's ``tile`` / ``repeat``
``one_hot``, ``arange``    built from indices / a range
``layout_transform``       ``NCHW`` <-> ``NCHW16c`` and other split layouts (``layout_transform_shape``:
                           the shape it gives)
``trilu``                  upper / lower triangle of the last two axes (ONNX ``Trilu``)
``reverse_sequence``       each batch's first ``len[b]`` steps reversed
``sequence_mask``          steps past each batch's length set to a value
``meshgrid``               coordinate grids (``"ij"`` / ``"xy"``)
``strided_set``            numpy's ``a[b:e:s] = v`` (the bounds tensors read at run time)
``matrix_set_diag``        diagonals (or a band) of the last two axes replaced
``sparse_to_dense``        a default value with values written at given indices
``adv_index``              numpy's ``data[i0, i1, ...]`` with index tensors (broadcast)
=========================  ============================================================

Errors (shapes that do not fit, an axis out of range, indices that are not
integers...) raise :class:`~.utils.TopiError` naming the operator, the argument and
the shapes, when the operator is declared.
"""
from __future__ import annotations

import math

from .. import te
from ..errors import TeccTypeError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import op as _op
from ..tir.arith import Analyzer
from . import tag
from .broadcast import _broadcast_index, broadcast_shape
from .utils import TopiError, get_const_tuple, is_empty_shape, normalize_axis, prod, ravel_index, simplify
from .utils import unravel_index as _coordinates  # (``unravel_index`` here is the operator)


class TopiTypeError(TopiError, TeccTypeError):
    """An operator given a tensor of a dtype it cannot take (indices that are not
    integers); both a :class:`~.utils.TopiError` and a ``TypeError``."""


def _check_tensor(x, what):
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {x!r}")


def _static(shape) -> bool:
    return all(isinstance(d, int) for d in get_const_tuple(shape))


def _describe(t) -> str:
    return f"{t.name!r} {tuple(t.shape)}"


def _as_int(x, what):
    """``x`` (a Python, numpy or constant TIR integer) as an int."""
    if isinstance(x, E.IntImm):
        return int(x.value)
    if hasattr(x, "__index__") and not isinstance(x, bool):
        return int(x.__index__())
    raise TopiError(f"{what}: expected a constant integer, got {x!r}")


def _check_integer_indices(indices, what):
    if not _dt.is_integer(indices.dtype):
        raise TopiTypeError(f"{what}: indices {indices.name!r} must have an integer dtype, got {indices.dtype} "
                            f"(indices of shape {tuple(indices.shape)})")


def _sizes_of(values, name, what, minimum=1):
    """The sizes ``values`` (an output shape, a crop size) as ints and integer
    expressions.

    Raises
    ------
    TopiTypeError
        For an entry that is not an integer (or an integer expression).
    TopiError
        For a constant entry below ``minimum``.
    """
    sizes = []
    for d in values:
        if isinstance(d, E.PrimExpr) and not isinstance(d, E.IntImm):
            if not _dt.is_integer(d.dtype):
                raise TopiTypeError(f"{what}: {name} {tuple(values)!r} must be made of integers")
            sizes.append(d)
            continue
        d = d.value if isinstance(d, E.IntImm) else d
        if isinstance(d, bool) or not hasattr(d, "__index__"):
            raise TopiTypeError(f"{what}: {name} {tuple(values)!r} must be made of integers")
        if int(d) < minimum:
            least = "positive" if minimum == 1 else f"at least {minimum}" if minimum else "non-negative"
            raise TopiError(f"{what}: {name} {tuple(values)!r} must be {least}")
        sizes.append(int(d))
    return sizes


def _index32(idx):
    """An index value as int32 (narrower integers widened; int64 narrowed: tensors
    here have fewer than 2**31 elements along an axis)."""
    return idx if idx.dtype == "int32" else _op.cast("int32", idx)


def _from_end(idx, n):
    """``idx + n`` where ``idx`` is negative: ONNX's indices counting from the end."""
    idx = _index32(idx)
    n = _op.cast("int32", n)
    return _op.select(idx < 0, idx + n, idx)


# ---------------------------------------------------------------------------- reshape


def reshape(a, newshape, allowzero=False):
    """``a``'s elements, in row-major order, in a tensor of shape ``newshape``.

    Parameters
    ----------
    a : Tensor
    newshape : tuple of int or expression
        One entry may be ``-1``: the size that makes the element counts equal
        (``a``'s shape must be static).  An entry ``0`` takes ``a``'s size at the
        same position (ONNX ``Reshape`` and TVM's Relay ``reshape``) unless
        ``allowzero``; TVM's ``topi.reshape`` itself takes ``newshape`` literally.
    allowzero : bool
        ONNX's attribute: ``0`` is a dimension of size zero (then ``-1`` may not
        appear).

    Returns
    -------
    Tensor
        named ``T_reshape``, tagged injective.

    Raises
    ------
    TopiError
        When the number of elements differs, or ``-1`` cannot be inferred.
    """
    _check_tensor(a, "reshape")
    what = f"reshape({_describe(a)}, {tuple(newshape)})"
    shape = []
    for k, d in enumerate(newshape):
        d = get_const_tuple([d])[0] if isinstance(d, E.PrimExpr) else d
        if not isinstance(d, E.PrimExpr):
            d = _as_int(d, what)
            if d < -1:
                raise TopiError(f"{what}: dimension {k} is {d}; sizes must be non-negative (or -1: inferred)")
            if d == 0 and not allowzero:
                if k >= len(a.shape):
                    raise TopiError(f"{what}: dimension {k} is 0 (copy the input's size) but the input has rank "
                                    f"{len(a.shape)}")
                d = get_const_tuple([a.shape[k]])[0]
        shape.append(d)
    holes = [k for k, d in enumerate(shape) if isinstance(d, int) and d == -1]
    if len(holes) > 1:
        raise TopiError(f"{what}: at most one dimension may be -1")
    if holes:
        rest = [d for k, d in enumerate(shape) if k != holes[0]]
        if not _static(a.shape) or not _static(rest):
            raise TopiError(f"{what}: -1 needs static shapes; give every dimension")
        known = prod(rest)
        total = prod(get_const_tuple(a.shape))
        if known == 0 or total % known:
            raise TopiError(f"{what}: {total} elements cannot be arranged with the given dimensions "
                            f"(their product is {known})")
        shape[holes[0]] = total // known
    if _static(a.shape) and _static(shape):
        if prod(get_const_tuple(a.shape)) != prod(get_const_tuple(shape)):
            raise TopiError(f"{what}: the shapes hold {prod(get_const_tuple(a.shape))} and "
                            f"{prod(get_const_tuple(shape))} elements; they must hold as many")
    out_shape = tuple(_op.convert(d) for d in shape)
    if is_empty_shape(out_shape) or is_empty_shape(a.shape):  # nothing to read (and no division by 0)
        return te.compute(out_shape, lambda *i: _op.const(0, a.dtype), name="T_reshape", tag=tag.INJECTIVE)

    def f(*i):
        return a(*_coordinates(ravel_index(i, out_shape), a.shape))

    return te.compute(out_shape, f, name="T_reshape", tag=tag.INJECTIVE)


def expand_dims(a, axis, num_newaxis=1):
    """``a`` with ``num_newaxis`` dimensions of size 1 inserted before axis ``axis``
    (in ``[-ndim - 1, ndim]``; a negative one counts from the end of the result)."""
    _check_tensor(a, "expand_dims")
    ndim = len(a.shape)
    axis = _as_int(axis, "expand_dims")
    if not -ndim - 1 <= axis <= ndim:
        raise TopiError(f"expand_dims({_describe(a)}): axis {axis} is out of range for a tensor of rank {ndim}; "
                        f"use an axis in [{-ndim - 1}, {ndim}]")
    if num_newaxis < 0:
        raise TopiError(f"expand_dims({_describe(a)}): num_newaxis is {num_newaxis}; it must be >= 0")
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
        axes = [normalize_axis(x, len(shape), f"squeeze({_describe(a)})")
                for x in (axis if isinstance(axis, (list, tuple)) else [axis])]
        for x in axes:
            if shape[x] != 1:
                raise TopiError(f"squeeze({_describe(a)}): axis {x} has size {shape[x]}, not 1; it cannot be removed")
    keep = [k for k in range(len(shape)) if k not in axes]

    def f(*i):
        idx = [_op.const(0, "int32")] * len(shape)
        for k, v in zip(keep, i):
            idx[k] = v
        return a(*idx)

    return te.compute(tuple(a.shape[k] for k in keep), f, name="T_squeeze", tag=tag.INJECTIVE)


def transpose(a, axes=None):
    """``a`` with its axes permuted: output axis ``k`` is input axis ``axes[k]``
    (negative ones count from the end); reversed when ``axes`` is None or empty."""
    _check_tensor(a, "transpose")
    ndim = len(a.shape)
    what = f"transpose({_describe(a)}, axes={None if axes is None else list(axes)})"
    axes = list(range(ndim))[::-1] if axes is None or len(axes) == 0 else [
        normalize_axis(x, ndim, what) for x in axes]
    if sorted(axes) != list(range(ndim)):
        raise TopiError(f"{what}: axes {axes} is not a permutation of 0..{ndim - 1}")

    def f(*i):
        idx = [None] * ndim
        for out_axis, in_axis in enumerate(axes):
            idx[in_axis] = i[out_axis]
        return a(*idx)

    return te.compute(tuple(a.shape[x] for x in axes), f, name="T_transpose", tag=tag.INJECTIVE)


def flip(a, axis=0):
    """``a`` reversed along ``axis`` (numpy's ``flip``; ONNX's ``ReverseSequence``
    with full lengths)."""
    _check_tensor(a, "flip")
    axis = normalize_axis(axis, len(a.shape), f"flip({_describe(a)})")

    def f(*i):
        idx = list(i)
        idx[axis] = a.shape[axis] - 1 - i[axis]
        return a(*idx)

    return te.compute(a.shape, f, name="T_reverse", tag=tag.INJECTIVE)


# ---------------------------------------------------------------------------- join, cut


def _check_same_shapes(tensors, skip_axis, what):
    first = tensors[0]
    ndim = len(first.shape)
    ana = Analyzer()
    for t in tensors[1:]:
        if len(t.shape) != ndim:
            raise TopiError(f"{what}: {_describe(t)} has rank {len(t.shape)} but {_describe(first)} has rank {ndim}")
        if t.dtype != first.dtype:
            raise TopiError(f"{what}: {_describe(t)} has dtype {t.dtype} but {_describe(first)} has {first.dtype}; "
                            "cast them to one dtype first")
        for k in range(ndim):
            if k != skip_axis and not ana.can_prove_equal(t.shape[k], first.shape[k]):
                hint = "only the concatenated axis may differ" if skip_axis is not None else "they must be equal"
                raise TopiError(f"{what}: {_describe(t)} and {_describe(first)} differ at axis {k}; {hint}")


def _tensor_list(a_tuple, what):
    tensors = [a_tuple] if isinstance(a_tuple, te.Tensor) else list(a_tuple)
    if not tensors:
        raise TopiError(f"{what}: needs at least one tensor")
    for t in tensors:
        _check_tensor(t, what)
    return tensors


def concatenate(a_tuple, axis=0):
    """The tensors of ``a_tuple`` joined along ``axis`` (equal shapes elsewhere).

    Raises
    ------
    TopiError
        When the ranks or dtypes differ, a dimension other than ``axis`` differs, or
        ``axis`` is out of range.
    """
    tensors = _tensor_list(a_tuple, "concatenate")
    first = tensors[0]
    ndim = len(first.shape)
    axis = normalize_axis(axis, ndim, f"concatenate along axis {axis}")
    _check_same_shapes(tensors, axis, f"concatenate along axis {axis}")
    offsets = [_op.const(0, "int32")]
    for t in tensors:
        offsets.append(simplify(offsets[-1] + t.shape[axis]))
    out_shape = tuple(first.shape[:axis]) + (offsets[-1],) + tuple(first.shape[axis + 1:])

    def f(*i):
        j = i[axis]

        def read(k):
            return tensors[k](*(i[:axis] + (j - offsets[k],) + i[axis + 1:]))

        def pick(lo, hi):
            # the tensors lo..hi-1: a balanced tree of selects (log2(n) deep, not n: a
            # recurrent layer's outputs join 64 or more steps)
            if hi - lo == 1:
                return read(lo)
            mid = (lo + hi) // 2
            return _op.if_then_else(j < offsets[mid], pick(lo, mid), pick(mid, hi))

        return pick(0, len(tensors))

    return te.compute(out_shape, f, name="T_concat", tag=tag.INJECTIVE)


def stack(a, axis=0):
    """The tensors of ``a`` (one shape and dtype) stacked along a new axis ``axis``
    (in ``[-ndim - 1, ndim]``)."""
    tensors = _tensor_list(a, "stack")
    first = tensors[0]
    ndim = len(first.shape)
    if not -ndim - 1 <= axis <= ndim:
        raise TopiError(f"stack: axis {axis} is out of range for tensors of rank {ndim}; use an axis in "
                        f"[{-ndim - 1}, {ndim}]")
    axis = axis + ndim + 1 if axis < 0 else axis
    _check_same_shapes(tensors, None, "stack")
    out_shape = tuple(first.shape[:axis]) + (len(tensors),) + tuple(first.shape[axis:])

    def f(*i):
        j = i[axis]
        rest = i[:axis] + i[axis + 1:]
        value = tensors[-1](*rest)
        for k in range(len(tensors) - 2, -1, -1):
            value = _op.if_then_else(j == k, tensors[k](*rest), value)
        return value

    return te.compute(out_shape, f, name="T_stack", tag=tag.INJECTIVE)


def split(ary, indices_or_sections, axis=0):
    """``ary`` cut along ``axis`` into pieces (numpy's ``split``).

    Parameters
    ----------
    ary : Tensor
    indices_or_sections : int or list of int
        An int: that many equal pieces (it must divide the axis).  A list: cut before
        each index (negative ones count from the end; clamped to the axis, so a piece
        may be empty, as in numpy).
    axis : int

    Returns
    -------
    list of Tensor
    """
    _check_tensor(ary, "split")
    ndim = len(ary.shape)
    what = f"split({_describe(ary)}, {indices_or_sections!r}, axis={axis})"
    axis = normalize_axis(axis, ndim, what)
    size = get_const_tuple(ary.shape)[axis]
    if not isinstance(indices_or_sections, (list, tuple)) and not isinstance(indices_or_sections, bool) \
            and hasattr(indices_or_sections, "__index__"):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise TopiError(f"{what}: the number of sections must be positive, got {sections}")
        if isinstance(size, int):
            if size % sections:
                raise TopiError(f"{what}: axis {axis} of size {size} does not divide into "
                                f"{sections} equal sections; pass split indices instead")
            step = size // sections
        else:
            step = simplify(ary.shape[axis] // sections)
        begins = [k * step for k in range(sections)]
        ends = [b + step for b in begins]
    else:
        if not isinstance(size, int):
            raise TopiError(f"{what}: split indices need a static size along axis {axis}")
        cuts = []
        for c in indices_or_sections:
            c = _as_int(c, what)
            cuts.append(min(max(c + size if c < 0 else c, 0), size))
        begins = [0] + cuts
        ends = cuts + [size]
    pieces = []
    for b, e in zip(begins, ends):
        if isinstance(b, int) and isinstance(e, int):
            extent = max(e - b, 0)
        else:
            extent = simplify(_op.convert(e) - b)
        shape = tuple(ary.shape[:axis]) + (extent,) + tuple(ary.shape[axis + 1:])

        def f(*i, b=b):
            return ary(*(i[:axis] + (i[axis] + b,) + i[axis + 1:]))

        pieces.append(te.compute(shape, f, name="T_split", tag=tag.INJECTIVE))
    return pieces


# ---------------------------------------------------------------------------- slicing

def _slice_axis(begin, end, stride, n):
    """``(first, length)`` of ``range(n)[begin:end:stride]`` (numpy's clamping;
    None for an end of the axis)."""
    if stride > 0:
        b = 0 if begin is None else begin
        e = n if end is None else end
        b = min(max(b + n if b < 0 else b, 0), n)
        e = min(max(e + n if e < 0 else e, 0), n)
        return b, max(0, -(-(e - b) // stride))
    b = n - 1 if begin is None else begin
    e = -1 if end is None else (end + n if end < 0 else end)
    b = min(max(b + n if b < 0 else b, -1), n - 1)
    e = min(max(e, -1), n - 1)
    return b, max(0, -(-(b - e) // -stride))


def strided_slice(a, begin, end, strides=None, axes=None, slice_mode="end"):
    """``a[begin[0]:end[0]:strides[0], ...]`` with numpy's rules.

    Parameters
    ----------
    a : Tensor
    begin, end : list of int (or None entries)
        One per axis from the first (missing ones take the whole axis), or one per
        entry of ``axes``.  Negative ones count from the end; out-of-range ones are
        clamped, as in numpy and ONNX ``Slice`` (an empty range gives a size-0 axis).
        None is the end of the axis the step starts from / goes to (numpy's
        ``a[::-1]``).
    strides : list of int, optional
        The steps (1 by default); negative ones walk backwards.
    axes : list of int, optional
        The axes ``begin``, ``end`` and ``strides`` apply to (others are whole).
    slice_mode : {"end", "size"}
        ``"size"``: ``end[k]`` is the number of elements from ``begin[k]`` (all the
        rest when negative) and the strides are ignored.

    Returns
    -------
    Tensor
        named ``T_strided_slice``, tagged injective.

    Raises
    ------
    TopiError
        On a zero step, lists of mismatched lengths, an axis out of range, or a
        sliced axis whose size is not static.
    """
    _check_tensor(a, "strided_slice")
    ndim = len(a.shape)
    if isinstance(begin, te.Tensor) or isinstance(end, te.Tensor) or isinstance(strides, te.Tensor):
        raise TopiError(f"strided_slice({_describe(a)}): begin, end and strides must be lists of constants "
                        "(tensors are not supported)")
    what = f"strided_slice({_describe(a)}, begin={list(begin)}, end={list(end)}, strides={strides})"
    if slice_mode not in ("end", "size"):
        raise TopiError(f"{what}: slice_mode {slice_mode!r} is not 'end' or 'size'")

    def ints(xs, name):
        return [None if x is None else _as_int(x, f"{what}: {name}") for x in xs]

    begin, end = ints(begin, "begin"), ints(end, "end")
    strides = [1] * len(begin) if strides is None or len(strides) == 0 else ints(strides, "strides")
    if axes is None:
        n = max(len(begin), len(end), len(strides))
        if n > ndim:
            raise TopiError(f"{what}: {n} axes sliced but the tensor has rank {ndim}")
        axes = list(range(n))
    else:
        axes = [normalize_axis(x, ndim, what) for x in axes]
        if len(set(axes)) != len(axes):
            raise TopiError(f"{what}: axes {axes} repeat an axis")
        for name, xs in (("begin", begin), ("end", end), ("strides", strides)):
            if len(xs) != len(axes):
                raise TopiError(f"{what}: {name} has {len(xs)} entries for {len(axes)} axes {axes}")
    firsts, steps, out_shape = [0] * ndim, [1] * ndim, list(a.shape)
    shape = get_const_tuple(a.shape)
    for k, x in enumerate(axes):
        b = begin[k] if k < len(begin) else None
        e = end[k] if k < len(end) else None
        s = strides[k] if k < len(strides) and slice_mode == "end" else 1
        if s is None:
            s = 1
        if s == 0:
            raise TopiError(f"{what}: the step along axis {x} is 0; it must be non-zero")
        if slice_mode == "size":
            if b is not None and b < 0 and isinstance(shape[x], int):
                b = max(b + shape[x], 0)  # the size counts from the element begin names
            e = None if e is None or e < 0 else (b or 0) + e
        if b is None and e is None and s == 1:
            continue  # the whole axis (a symbolic size is fine)
        if not isinstance(shape[x], int):
            raise TopiError(f"{what}: axis {x} has the symbolic size {shape[x]}; slicing it needs a static size")
        firsts[x], length = _slice_axis(b, e, s, shape[x])
        steps[x] = s
        out_shape[x] = length

    def f(*i):
        idx = []
        for x in range(ndim):
            v = i[x]
            if steps[x] != 1:
                v = v * steps[x]
            if firsts[x] != 0:
                v = v + firsts[x]
            idx.append(v)
        return a(*idx)

    return te.compute(tuple(out_shape), f, name="T_strided_slice", tag=tag.INJECTIVE)


# ---------------------------------------------------------------------------- gathers


def take(a, indices, axis=None, batch_dims=0, mode="clip"):
    """Elements of ``a`` picked by ``indices`` (numpy's ``take``; ONNX ``Gather``).

    Parameters
    ----------
    a : Tensor
    indices : Tensor of integers, or an int / expression
    axis : int, optional
        The axis to pick along; None picks from ``a`` flattened.
    batch_dims : int
        The leading dimensions shared by ``a`` and ``indices`` (negative: counted
        from the end of ``indices``' rank).
    mode : {"clip", "wrap", "fast"}
        What an index outside ``[0, n)`` reads, as TVM's ``take``: ``"clip"`` clamps
        it into ``[0, n - 1]`` (so ``-1`` reads element 0), ``"wrap"`` takes it
        modulo ``n`` (so ``-1`` reads element ``n - 1``: for indices in
        ``[-n, n)`` this is ONNX ``Gather``'s rule of negative indices counting from
        the end), ``"fast"`` does not check (an index out of range reads out of
        bounds).

    Returns
    -------
    Tensor
        of shape ``a.shape[:axis] + indices.shape[batch_dims:] + a.shape[axis + 1:]``,
        named ``T_take``, tagged injective.

    Raises
    ------
    TopiError
        On an unknown mode, ``batch_dims`` out of range or batch sizes that differ,
        or indices that are not integers (:class:`TopiTypeError`).
    """
    _check_tensor(a, "take")
    what = f"take({_describe(a)}, axis={axis}, batch_dims={batch_dims}, mode={mode!r})"
    if mode not in ("clip", "wrap", "fast"):
        raise TopiError(f"{what}: mode {mode!r} is not one of 'clip', 'wrap', 'fast'")
    scalar = not isinstance(indices, te.Tensor)
    if scalar:
        index_expr = _op.convert(indices)
        if not _dt.is_integer(index_expr.dtype):
            raise TopiTypeError(f"{what}: the index must be an integer, got dtype {index_expr.dtype}")
        ind_shape = ()
    else:
        _check_integer_indices(indices, what)
        ind_shape = tuple(indices.shape)

    def fix(idx, n):
        idx = _index32(idx)
        n = _op.cast("int32", n)
        if mode == "clip":
            return _op.min(_op.max(idx, _op.const(0, "int32")), n - 1)
        if mode == "wrap":
            return _op.floormod(idx, n)
        return idx

    def read_index(ind):
        return index_expr if scalar else indices(*ind)

    if axis is None:
        if batch_dims:
            raise TopiError(f"{what}: batch_dims needs an axis")
        total = prod(a.shape)

        def f(*i):
            flat = fix(read_index(i), total)
            return a(*_coordinates(flat, a.shape))

        return te.compute(ind_shape, f, name="T_take", tag=tag.INJECTIVE)
    ndim = len(a.shape)
    axis = normalize_axis(axis, ndim, what)
    q = len(ind_shape)
    batch_dims = _as_int(batch_dims, what)
    if batch_dims < 0:
        batch_dims += q
    if not 0 <= batch_dims <= min(axis, q):
        raise TopiError(f"{what}: batch_dims {batch_dims} must be in [0, min(axis={axis}, rank of "
                        f"indices={q})]")
    ana = Analyzer()
    for k in range(batch_dims):
        if not ana.can_prove_equal(a.shape[k], ind_shape[k]):
            raise TopiError(f"{what}: batch axis {k} has size {a.shape[k]} in {a.name!r} but {ind_shape[k]} in "
                            f"the indices {ind_shape}; the batch sizes must be equal")
    out_shape = tuple(a.shape[:axis]) + ind_shape[batch_dims:] + tuple(a.shape[axis + 1:])
    nind = q - batch_dims

    def f(*i):
        ind = i[:batch_dims] + i[axis:axis + nind]
        picked = fix(read_index(ind), a.shape[axis])
        return a(*(i[:axis] + (picked,) + i[axis + nind:]))

    return te.compute(out_shape, f, name="T_take", tag=tag.INJECTIVE)


def gather(data, axis, indices):
    """``out[i][j][k] = data[indices[i][j][k]][j][k]`` (for ``axis`` 0; alike for
    the others): ONNX's ``GatherElements`` and ``torch.gather``.

    Parameters
    ----------
    data : Tensor
    axis : int
    indices : Tensor of integers
        Of ``data``'s rank; along the other axes at most ``data``'s sizes.  A
        negative index counts from the end of the axis (ONNX); indices out of
        ``[-n, n)`` are not checked.

    Returns
    -------
    Tensor
        of ``indices``' shape, named ``T_gather``, tagged injective.
    """
    _check_tensor(data, "gather")
    _check_tensor(indices, "gather")
    ndim = len(data.shape)
    what = f"gather({_describe(data)}, axis={axis}, indices {tuple(indices.shape)})"
    if ndim == 0:
        raise TopiError(f"{what}: cannot gather from a rank-0 tensor")
    axis = normalize_axis(axis, ndim, what)
    _check_integer_indices(indices, what)
    if len(indices.shape) != ndim:
        raise TopiError(f"{what}: indices have rank {len(indices.shape)} but data has rank {ndim}; they must be equal")
    for k, (d, i) in enumerate(zip(get_const_tuple(data.shape), get_const_tuple(indices.shape))):
        if k != axis and isinstance(d, int) and isinstance(i, int) and i > d:
            raise TopiError(f"{what}: indices have size {i} along axis {k} but data only {d}")

    def f(*i):
        idx = list(i)
        idx[axis] = _from_end(indices(*i), data.shape[axis])
        return data(*idx)

    return te.compute(indices.shape, f, name="T_gather", tag=tag.INJECTIVE)


def gather_elements(data, indices, axis=0):
    """ONNX's ``GatherElements`` in ONNX's argument order: :func:`gather`."""
    return gather(data, axis, indices)


def gather_nd(a, indices, batch_dims=0):
    """Elements or slices of ``a`` picked by index tuples (TVM's ``gather_nd``).

    Parameters
    ----------
    a : Tensor
    indices : Tensor of integers, of shape ``(M, Y_0, ..., Y_K)``
        ``indices[:, y]`` is the index tuple of output ``y`` into the axes
        ``batch_dims .. batch_dims + M`` of ``a`` (TVM's layout: the tuple along the
        first axis; ONNX's ``GatherND`` has it along the last, transpose first).
        Negative indices count from the end of their axis.
    batch_dims : int
        Leading axes of ``a`` matched with ``Y_0 .. Y_{batch_dims - 1}``.

    Returns
    -------
    Tensor
        of shape ``(Y_0, ..., Y_K) + a.shape[batch_dims + M:]``, named ``T_gather_nd``.
    """
    _check_tensor(a, "gather_nd")
    _check_tensor(indices, "gather_nd")
    what = f"gather_nd({_describe(a)}, indices {tuple(indices.shape)}, batch_dims={batch_dims})"
    _check_integer_indices(indices, what)
    if len(indices.shape) < 1:
        raise TopiError(f"{what}: indices must have at least one axis (the index tuples)")
    m = get_const_tuple(indices.shape)[0]
    if not isinstance(m, int):
        raise TopiError(f"{what}: the first axis of the indices (the tuple length) must be static")
    if batch_dims < 0 or batch_dims + m > len(a.shape) or batch_dims > len(indices.shape) - 1:
        raise TopiError(f"{what}: index tuples of length {m} after {batch_dims} batch axes do not fit a tensor of "
                        f"rank {len(a.shape)}")
    ana = Analyzer()
    for k in range(batch_dims):
        if not ana.can_prove_equal(a.shape[k], indices.shape[1 + k]):
            raise TopiError(f"{what}: batch axis {k} has size {a.shape[k]} in {a.name!r} but {indices.shape[1 + k]} "
                            "in the indices; they must be equal")
    ny = len(indices.shape) - 1
    out_shape = tuple(indices.shape[1:]) + tuple(a.shape[batch_dims + m:])

    def f(*i):
        y = i[:ny]
        idx = list(i[:batch_dims])
        for k in range(m):
            idx.append(_from_end(indices(k, *y), a.shape[batch_dims + k]))
        idx.extend(i[ny:])
        return a(*idx)

    return te.compute(out_shape, f, name="T_gather_nd", tag=tag.INJECTIVE)


# ---------------------------------------------------------------------------- repeat, build


def tile(a, reps):
    """``a`` repeated ``reps[k]`` times along each axis (numpy's ``tile``: the
    shorter of ``a``'s shape and ``reps`` padded with leading 1s)."""
    _check_tensor(a, "tile")
    what = f"tile({_describe(a)}, reps={list(reps)})"
    reps = [_as_int(r, what) for r in reps]
    if any(r < 0 for r in reps):
        raise TopiError(f"{what}: repetitions must be >= 0")
    ndim, rdim = len(a.shape), len(reps)
    tdim = max(ndim, rdim)
    data_shape = [1] * (tdim - ndim) + list(a.shape)
    reps = [1] * (tdim - rdim) + reps
    out_shape = tuple(simplify(_op.convert(d) * r) for d, r in zip(data_shape, reps))
    if is_empty_shape(out_shape):
        return te.compute(out_shape, lambda *i: _op.const(0, a.dtype), name="T_tile", tag=tag.BROADCAST)

    def f(*i):
        return a(*[i[tdim - ndim + k] % a.shape[k] for k in range(ndim)])

    return te.compute(out_shape, f, name="T_tile", tag=tag.BROADCAST)


def repeat(a, repeats, axis):
    """Each element of ``a`` repeated ``repeats`` times along ``axis`` (numpy's
    ``repeat`` with one count)."""
    _check_tensor(a, "repeat")
    what = f"repeat({_describe(a)}, repeats={repeats}, axis={axis})"
    repeats = _as_int(repeats, what)
    if repeats < 1:
        raise TopiError(f"{what}: repeats must be >= 1")
    axis = normalize_axis(axis, len(a.shape), what)
    out_shape = list(a.shape)
    out_shape[axis] = simplify(a.shape[axis] * repeats)

    def f(*i):
        idx = list(i)
        idx[axis] = i[axis] // repeats
        return a(*idx)

    return te.compute(tuple(out_shape), f, name="T_repeat", tag=tag.BROADCAST)


def one_hot(indices, on_value, off_value, depth, axis, dtype):
    """``on_value`` where an axis of size ``depth`` inserted at ``axis`` (``-1``:
    last) equals ``indices``, ``off_value`` elsewhere (TVM's ``one_hot``).

    An index outside ``[0, depth)`` gives a row of ``off_value`` (TVM; ONNX's
    ``OneHot`` counts negative indices from the end: add ``depth`` to them first).
    """
    _check_tensor(indices, "one_hot")
    what = f"one_hot({_describe(indices)}, depth={depth}, axis={axis})"
    _check_integer_indices(indices, what)
    ndim = len(indices.shape)
    depth = _as_int(depth, what)
    if depth < 0:
        raise TopiError(f"{what}: depth must be >= 0")
    axis = _as_int(axis, what)
    if not -1 <= axis <= ndim:
        raise TopiError(f"{what}: axis {axis} is out of range; use an axis in [-1, {ndim}]")
    axis = ndim if axis == -1 else axis
    dtype = _dt.canonical(dtype)
    on, off = _op.cast(dtype, on_value), _op.cast(dtype, off_value)
    out_shape = tuple(indices.shape[:axis]) + (depth,) + tuple(indices.shape[axis:])

    def f(*i):
        idx = _index32(indices(*(i[:axis] + i[axis + 1:])))
        return _op.select(idx == i[axis], on, off)

    return te.compute(out_shape, f, name="T_one_hot", tag=tag.INJECTIVE)


def arange(start, stop=None, step=1, dtype="float32"):
    """``start, start + step, ...`` below ``stop`` (numpy's ``arange``; with one
    argument, ``0 .. start``).

    Returns
    -------
    Tensor
        1-D, of ``ceil((stop - start) / step)`` elements (at least 0).
    """
    if stop is None:
        start, stop = 0, start
    dtype = _dt.canonical(dtype)
    consts = []
    for x in (start, stop, step):
        if isinstance(x, (E.IntImm, E.FloatImm)):
            x = x.value
        consts.append(x if isinstance(x, (int, float)) and not isinstance(x, bool) or hasattr(x, "item") else None)
    if all(c is not None for c in consts):
        start, stop, step = (c.item() if hasattr(c, "item") else c for c in consts)
        if step == 0:
            raise TopiError(f"arange(start={start}, stop={stop}, step=0): the step must be non-zero")
        n = max(0, int(math.ceil((stop - start) / step)))
    else:
        span = _op.cast("float32", _op.convert(stop) - start) / _op.cast("float32", step)
        n = _op.max(_op.cast("int32", _op.ceil(span)), 0)
    is_float = _dt.is_float(dtype)

    def f(i):
        if is_float:
            return _op.cast(dtype, start) + _op.cast(dtype, step) * _op.cast(dtype, i)
        return _op.cast(dtype, _op.convert(start) + _op.convert(step) * i)

    return te.compute((n,), f, name="T_arange", tag=tag.ELEMWISE)


# ---------------------------------------------------------------------------- layouts


def _parse_layout(layout, what):
    """``[(letter, factor or None)]``: ``"NCHW16c"`` -> N, C, H, W, (c, 16)."""
    axes, number = [], ""
    for ch in layout:
        if ch.isdigit():
            number += ch
        elif ch.isalpha():
            if ch.isupper():
                if number:
                    raise TopiError(f"{what}: layout {layout!r}: a factor must precede a lower-case (split) axis")
                axes.append((ch, None))
            else:
                if not number:
                    raise TopiError(f"{what}: layout {layout!r}: the split axis {ch!r} needs its factor, e.g. "
                                    f"'16{ch}'")
                axes.append((ch.upper() + "'", int(number)))
                number = ""
        else:
            raise TopiError(f"{what}: layout {layout!r} has the character {ch!r}; use letters such as 'NCHW16c'")
    if number:
        raise TopiError(f"{what}: layout {layout!r} ends with a number")
    letters = [a for a, _ in axes]
    if len(set(letters)) != len(letters):
        raise TopiError(f"{what}: layout {layout!r} repeats an axis")
    for a, fac in axes:
        if fac is not None and a[0] not in letters:
            raise TopiError(f"{what}: layout {layout!r} splits {a[0]!r} but has no axis {a[0]!r}")
    return axes


def _layout_plan(shape, src_layout, dst_layout, what):
    """The parsed layouts of a layout transform of a tensor of ``shape``, the
    factor of every split axis of each, the unsplit size of every primal axis, and
    the output shape; a layout that does not fit the shape is refused."""
    src, dst = _parse_layout(src_layout, what), _parse_layout(dst_layout, what)
    if len(src) != len(shape):
        raise TopiError(f"{what}: layout {src_layout!r} has {len(src)} axes but the tensor has rank "
                        f"{len(shape)}")
    if sorted(a for a, f in src if f is None) != sorted(a for a, f in dst if f is None):
        raise TopiError(f"{what}: the layouts have different primal axes; only splitting and reordering are allowed")
    src_factor = {a[0]: f for a, f in src if f is not None}
    dst_factor = {a[0]: f for a, f in dst if f is not None}
    full = {}  # the unsplit size of every primal axis
    for k, (a, f) in enumerate(src):
        if f is None:
            full[a] = shape[k] * src_factor[a] if a in src_factor else shape[k]
        elif shape[k] != f:
            raise TopiError(f"{what}: axis {k} ({f}{a[0].lower()}) has size {shape[k]}, not {f}")
    out_shape = []
    for a, f in dst:
        if f is None:
            g = dst_factor.get(a)
            out_shape.append(full[a] if g is None else -(-full[a] // g) if isinstance(full[a], int)
                             else (full[a] + g - 1) // g)
        else:
            out_shape.append(f)
    return src, dst, src_factor, dst_factor, full, tuple(out_shape)


def layout_transform_shape(shape, src_layout, dst_layout):
    """The shape :func:`layout_transform` gives a tensor of ``shape`` (the graph
    compiler's shape inference of its ``layout_transform`` reads it here).

    Raises
    ------
    TopiError
        When a layout is malformed or does not fit ``shape``.
    """
    what = f"layout_transform(shape {tuple(shape)}, {src_layout!r} -> {dst_layout!r})"
    if src_layout == dst_layout:
        return tuple(shape)
    return _layout_plan(tuple(shape), src_layout, dst_layout, what)[-1]


def layout_transform(array, src_layout, dst_layout, schedule_rule="None"):
    """``array`` in ``src_layout`` rearranged into ``dst_layout`` (e.g. ``"NCHW"`` ->
    ``"NCHW16c"``: upper-case axes, and lower-case ones split off them with their
    factor).  Where the factor does not divide the axis, the padded elements are 0.

    Returns
    -------
    Tensor
        named ``T_layout_trans``, tagged injective (``array`` itself when the layouts
        are equal).
    """
    _check_tensor(array, "layout_transform")
    what = f"layout_transform({_describe(array)}, {src_layout!r} -> {dst_layout!r})"
    if src_layout == dst_layout:
        return array
    shape = get_const_tuple(array.shape)
    src, dst, src_factor, dst_factor, full, out_shape = _layout_plan(shape, src_layout, dst_layout, what)
    src_pos = {a: k for k, (a, _) in enumerate(src)}
    dst_pos = {a: k for k, (a, _) in enumerate(dst)}

    def f(*i):
        conds, idx = [], [None] * len(src)
        for a, fac in dst:
            if fac is not None:
                continue
            g = dst_factor.get(a)
            value = i[dst_pos[a]] if g is None else i[dst_pos[a]] * g + i[dst_pos[a + "'"]]
            if g is not None and not (isinstance(full[a], int) and full[a] % g == 0):
                conds.append(value < full[a])
            s = src_factor.get(a)
            if s is None:
                idx[src_pos[a]] = value
            else:
                idx[src_pos[a]] = value // s
                idx[src_pos[a + "'"]] = value % s
        if conds:
            return _op.if_then_else(_op.all(*conds), array(*idx), _op.const(0, array.dtype))
        return array(*idx)

    attrs = {"schedule_rule": schedule_rule, "src_layout": src_layout, "dst_layout": dst_layout}
    return te.compute(tuple(out_shape), f, name="T_layout_trans", tag=tag.INJECTIVE, attrs=attrs)


# ---------------------------------------------------------------------------- tensordot


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


# ---------------------------------------------------------------------------- triangles, sequences, grids


def trilu(data, k, upper):
    """The upper (``upper=True``) or lower triangle of the last two axes of ``data``,
    the rest zero (ONNX ``Trilu``, numpy's ``triu``/``tril``): element ``(r, c)``
    is kept when ``c - r >= k`` (upper) or ``c - r <= k`` (lower).

    Parameters
    ----------
    data : Tensor
        Of rank 2 or more (batches of matrices).
    k : int, expression, or Tensor of one integer
        The diagonal: 0 the main one, positive above it, negative below.  ONNX's
        ``k`` input (a rank-0 or 1-element int64 tensor) is read at run time.
    upper : bool

    Returns
    -------
    Tensor
        ``data``'s shape and dtype, named ``trilu``, tagged injective.
    """
    _check_tensor(data, "trilu")
    what = f"trilu({_describe(data)}, upper={upper})"
    if len(data.shape) < 2:
        raise TopiError(f"{what}: data must have rank 2 or more (matrices), got rank {len(data.shape)}")
    if isinstance(k, te.Tensor):
        if not _dt.is_integer(k.dtype):
            raise TopiTypeError(f"{what}: k {_describe(k)} must be an integer tensor, got dtype {k.dtype}")
        ksize = prod(get_const_tuple(k.shape))
        if ksize != 1:
            raise TopiError(f"{what}: k must hold one integer, got the tensor {_describe(k)}")
        kt = k

        def kval():
            return _op.cast("int32", kt(*([0] * len(kt.shape))))
    else:
        if isinstance(k, E.PrimExpr) and _dt.is_integer(k.dtype):
            kc = _op.cast("int32", k)
        elif hasattr(k, "__index__") and not isinstance(k, (bool, E.PrimExpr)):
            kc = _op.const(int(k.__index__()), "int32")
        else:
            raise TopiError(f"{what}: k must be an integer, an integer expression or a tensor, got {k!r}")

        def kval():
            return kc

    def f(*i):
        r, c = _op.cast("int32", i[-2]), _op.cast("int32", i[-1])
        keep = (c - r >= kval()) if upper else (c - r <= kval())
        return _op.select(keep, data(*i), _op.const(0, data.dtype))

    return te.compute(data.shape, f, name="trilu", tag=tag.INJECTIVE)


def reverse_sequence(a, seq_lengths, seq_axis=1, batch_axis=0):
    """Reverse the first ``seq_lengths[b]`` elements along ``seq_axis`` of each slice
    ``b`` along ``batch_axis`` (ONNX ``ReverseSequence``); the rest stay in place.
    Lengths above the axis size count as the size, below 1 as 1 (as TVM).

    Parameters
    ----------
    a : Tensor
    seq_lengths : Tensor of integers, of shape ``(a.shape[batch_axis],)``
    seq_axis, batch_axis : int
        Different axes of ``a``.

    Returns
    -------
    Tensor
        ``a``'s shape and dtype, named ``T_reverse_sequence``, tagged injective.
    """
    _check_tensor(a, "reverse_sequence")
    _check_tensor(seq_lengths, "reverse_sequence")
    what = (f"reverse_sequence({_describe(a)}, seq_lengths {_describe(seq_lengths)}, seq_axis={seq_axis}, "
            f"batch_axis={batch_axis})")
    ndim = len(a.shape)
    if ndim < 2:
        raise TopiError(f"{what}: a must have rank 2 or more (a batch axis and a sequence axis)")
    seq_axis = normalize_axis(seq_axis, ndim, what)
    batch_axis = normalize_axis(batch_axis, ndim, what)
    if seq_axis == batch_axis:
        raise TopiError(f"{what}: seq_axis and batch_axis must be different axes")
    _check_integer_indices(seq_lengths, what)
    if len(seq_lengths.shape) != 1 or not Analyzer().can_prove_equal(seq_lengths.shape[0], a.shape[batch_axis]):
        raise TopiError(f"{what}: seq_lengths must have shape ({a.shape[batch_axis]},) (the size of the batch axis), "
                        f"got {tuple(seq_lengths.shape)}")
    n = _op.cast("int32", a.shape[seq_axis])

    def f(*i):
        length = _op.cast("int32", seq_lengths(i[batch_axis]))
        length = _op.max(_op.min(length, n), _op.const(1, "int32"))
        s = _op.cast("int32", i[seq_axis])
        idx = list(i)
        idx[seq_axis] = _op.select(s < length, length - 1 - s, s)
        return a(*idx)

    return te.compute(a.shape, f, name="T_reverse_sequence", tag=tag.INJECTIVE)


def sequence_mask(data, valid_length, mask_value=0, axis=0):
    """``data`` with the elements past each sequence's length set to ``mask_value``
    (TVM's ``sequence_mask``; attention masks).

    Parameters
    ----------
    data : Tensor
        ``[MAX_LENGTH, batch, ...]`` (``axis=0``) or ``[batch, MAX_LENGTH, ...]``
        (``axis=1``).
    valid_length : Tensor of integers, of shape ``(batch,)``
    mask_value : float
    axis : int
        0 or 1: the length axis.

    Returns
    -------
    Tensor
        ``data``'s shape and dtype, named ``T_sequence_mask``, tagged injective.
    """
    _check_tensor(data, "sequence_mask")
    _check_tensor(valid_length, "sequence_mask")
    what = (f"sequence_mask({_describe(data)}, valid_length {_describe(valid_length)}, mask_value={mask_value}, "
            f"axis={axis})")
    if len(data.shape) < 2:
        raise TopiError(f"{what}: data must have rank 2 or more, got rank {len(data.shape)}")
    if axis not in (0, 1):
        raise TopiError(f"{what}: axis must be 0 or 1 (the length axis), got {axis}")
    _check_integer_indices(valid_length, what)
    batch_axis = 1 - axis
    if len(valid_length.shape) != 1 or not Analyzer().can_prove_equal(valid_length.shape[0], data.shape[batch_axis]):
        raise TopiError(f"{what}: valid_length must have shape ({data.shape[batch_axis]},) (the batch axis "
                        f"{batch_axis} of data), got {tuple(valid_length.shape)}")

    def f(*i):
        length = _op.cast("int32", valid_length(i[batch_axis]))
        keep = _op.cast("int32", i[axis]) < length
        return _op.select(keep, data(*i), _op.const(mask_value, data.dtype))

    return te.compute(data.shape, f, name="T_sequence_mask", tag=tag.INJECTIVE)


def meshgrid(a_tuple, indexing):
    """Coordinate grids from 1-D (or rank-0) tensors (numpy's ``meshgrid``).

    Parameters
    ----------
    a_tuple : list of Tensor
    indexing : str
        ``"ij"`` (matrix: output axis ``k`` follows input ``k``) or ``"xy"``
        (Cartesian: the first two output axes swapped).

    Returns
    -------
    list of Tensor
        One grid per input, all of the same shape, named ``T_meshgrid``, tagged
        injective.
    """
    tensors = _tensor_list(a_tuple, "meshgrid")
    what = f"meshgrid({[_describe(t) for t in tensors]}, indexing={indexing!r})"
    if indexing not in ("ij", "xy"):
        raise TopiError(f"{what}: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if len(t.shape) > 1:
            raise TopiError(f"{what}: every input must be 1-D (or rank 0), {_describe(t)} is not")
    sizes = [t.shape[0] if len(t.shape) == 1 else 1 for t in tensors]
    out_shape = list(sizes)
    axis_of = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        out_shape[0], out_shape[1] = out_shape[1], out_shape[0]
        axis_of[0], axis_of[1] = 1, 0

    def grid(k):
        t = tensors[k]

        def f(*i):
            return t(i[axis_of[k]]) if len(t.shape) == 1 else t()

        return te.compute(tuple(out_shape), f, name="T_meshgrid", tag=tag.INJECTIVE)

    return [grid(k) for k in range(len(tensors))]


def shape(array, dtype="int32"):
    """The shape of ``array`` as a 1-D tensor of ``dtype`` (TVM's ``topi.shape``; a
    symbolic dimension is read from its variable)."""
    _check_tensor(array, "shape")
    dims = list(array.shape)

    def f(i):
        value = _op.cast(dtype, dims[-1])
        for k in range(len(dims) - 2, -1, -1):
            value = _op.if_then_else(i == k, _op.cast(dtype, dims[k]), value)
        return value

    return te.compute((len(dims),), f, name="T_shape", tag=tag.INJECTIVE)


def ndarray_size(array, dtype="int32"):
    """The number of elements of ``array``, a 0-d tensor of ``dtype`` (TVM's
    ``topi.ndarray_size``)."""
    _check_tensor(array, "ndarray_size")
    count = 1
    for d in array.shape:
        count = count * d
    return te.compute((), lambda: _op.cast(dtype, simplify(count)), name="T_ndarray_size", tag=tag.INJECTIVE)


def expand_like(a, shape_like, axis):
    """``a`` broadcast to ``shape_like``'s shape, its own axes placed at the positions
    ``axis`` does not name (TVM's ``topi.expand_like``: the inverse of summing over
    ``axis``)."""
    _check_tensor(a, "expand_like")
    _check_tensor(shape_like, "expand_like")
    rank = len(shape_like.shape)
    axes = sorted(normalize_axis(x, rank, "expand_like") for x in (axis if isinstance(axis, (list, tuple))
                                                                  else [axis]))
    kept = [k for k in range(rank) if k not in axes]
    what = f"expand_like('{a.name}' {get_const_tuple(a.shape)}, '{shape_like.name}' {get_const_tuple(shape_like.shape)})"
    if len(set(axes)) != len(axes) or len(kept) != len(a.shape):
        raise TopiError(f"{what}: axis {axis!r} must name the {rank - len(a.shape)} axes of shape_like that a lacks")
    for k, d in zip(kept, a.shape):
        if not Analyzer().can_prove_equal(d, shape_like.shape[k]):
            raise TopiError(f"{what}: axis {k} of shape_like has size {shape_like.shape[k]}, a's has {d}")
    return te.compute(tuple(shape_like.shape), lambda *i: a(*[i[k] for k in kept]), name="T_expand_like",
                      tag=tag.BROADCAST)


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in an array of ``shape`` (TVM's
    ``topi.unravel_index``; numpy's): ``shape`` is a 1-D tensor, read at run time;
    ``indices`` a scalar or a 1-D tensor.  Returns ``[len(shape)]`` or ``[len(shape),
    len(indices)]`` of ``shape``'s dtype."""
    _check_tensor(indices, "unravel_index")
    _check_tensor(shape, "unravel_index")
    if len(shape.shape) != 1 or len(indices.shape) > 1:
        raise TopiError(f"unravel_index: shape must be 1-D and indices a scalar or 1-D, got shapes "
                        f"{get_const_tuple(shape.shape)} and {get_const_tuple(indices.shape)}")
    rank = get_const_tuple(shape.shape)[0]
    if not isinstance(rank, int):
        raise TopiError("unravel_index: the shape tensor's length must be known")
    dtype = shape.dtype

    def coordinate(i, flat):
        stride = _op.const(1, dtype)
        value = _op.const(0, dtype)
        for k in range(rank - 1, -1, -1):  # the coordinate of axis k, chosen by i
            value = _op.if_then_else(i == k, (flat // stride) % shape[k], value)
            stride = stride * shape[k]
        return value

    if len(indices.shape) == 0:
        return te.compute((rank,), lambda i: coordinate(i, _op.cast(dtype, indices())), name="T_unravel_index",
                          tag=tag.INJECTIVE)
    return te.compute((rank, indices.shape[0]), lambda i, n: coordinate(i, _op.cast(dtype, indices[n])),
                      name="T_unravel_index", tag=tag.INJECTIVE)


def collapse_sum(data, target_shape):
    """``data`` summed down to ``target_shape``, the shape it was broadcast from (TVM's
    ``topi.collapse_sum``): the leading axes ``target_shape`` lacks, and the axes where
    it has 1 and ``data`` more, are summed."""
    _check_tensor(data, "collapse_sum")
    target = list(target_shape)
    extra = len(data.shape) - len(target)
    what = f"collapse_sum('{data.name}' {get_const_tuple(data.shape)}, {tuple(target)})"
    if extra < 0:
        raise TopiError(f"{what}: the target has more axes than the data")
    summed = {}
    for i, d in enumerate(data.shape):
        j = i - extra
        if j < 0 or (E.is_const_int(target[j], 1) if isinstance(target[j], E.PrimExpr) else target[j] == 1) \
                and not E.is_const_int(d, 1):
            summed[i] = te.reduce_axis((0, d), name=f"k{i}")
        elif not Analyzer().can_prove_equal(d, target[j]):
            raise TopiError(f"{what}: axis {i} of the data ({d}) is neither the target's ({target[j]}) nor summed")

    def f(*t):
        index = [summed[i].var if i in summed else t[i - extra] for i in range(len(data.shape))]
        return te.sum(data(*index), axis=list(summed.values())) if summed else data(*index)

    return te.compute(tuple(target), f, name="T_collapse_sum", tag=tag.COMM_REDUCE if summed else tag.INJECTIVE)


# ---------------------------------------------------------------------------- setting slices and diagonals


def _choose(cond, t, f):
    """``t`` or ``f``: picked here when ``cond`` is a Python bool, else a select."""
    if isinstance(cond, bool):
        return t if cond else f
    return _op.select(cond, t, f)


def _slice_entries(x, ndim, name, what):
    """``(exprs, values)`` of one of :func:`strided_set`'s ``begin``, ``end`` and
    ``strides``: its entries as int32 expressions (a tensor's read at run time), and
    their Python ints when all are constant (else None)."""
    if isinstance(x, te.Tensor):
        if not _dt.is_integer(x.dtype):
            raise TopiTypeError(f"{what}: {name} {_describe(x)} must hold integers, got dtype {x.dtype}")
        if len(x.shape) != 1:
            raise TopiError(f"{what}: {name} must be a 1-D tensor (one entry per axis), got shape {tuple(x.shape)}")
        length = get_const_tuple(x.shape)[0]
        if not isinstance(length, int):
            raise TopiError(f"{what}: {name} must have a static length, got {length}")
        exprs, values = [_index32(x(k)) for k in range(length)], None
    elif isinstance(x, (list, tuple)):
        exprs, values = [], []
        for v in x:
            if isinstance(v, E.PrimExpr) and not isinstance(v, E.IntImm):
                if not _dt.is_integer(v.dtype):
                    raise TopiTypeError(f"{what}: {name} must be made of integers, got {v} of dtype {v.dtype}")
                exprs.append(_index32(v))
                values.append(None)
            else:
                v = _as_int(v, f"{what}: {name}")
                exprs.append(_op.const(v, "int32"))
                values.append(v)
        values = None if None in values else values
    else:
        raise TeccTypeError(f"{what}: {name} must be a 1-D integer tensor or a list of integers, got {x!r}")
    if len(exprs) > ndim:
        raise TopiError(f"{what}: {name} has {len(exprs)} entries but a has rank {ndim}; give at most one per axis")
    return exprs, values


def strided_set(a, v, begin, end, strides=None):
    """``a`` with the slice ``a[begin[0]:end[0]:strides[0], ...]`` replaced by ``v``
    (numpy's ``a[slices] = v``; TVM's ``topi.strided_set``).

    Parameters
    ----------
    a : Tensor
    v : Tensor
        The values, of ``a``'s dtype and of the slice's shape; as in numpy, it may
        have fewer axes (matched from the last) and axes of size 1 (broadcast).
    begin, end : Tensor or list of int
        1-D integer tensors, read at run time (TVM's), or lists of constants: one
        entry per axis from the first, the axes past their length whole.  Negative
        entries count from the end; out-of-range ones are clamped, as numpy does.
    strides : Tensor or list of int, optional
        The steps (1 where missing); a negative one walks backwards from ``begin``.
        A step of 0 read at run time sets nothing along its axis (numpy raises).

    Returns
    -------
    Tensor
        ``a``'s shape and dtype, named ``strided_set``, tagged injective.

    Raises
    ------
    TopiError
        When ``v`` has more axes than ``a``, or (with constant ``begin``, ``end`` and
        ``strides`` and static shapes) ``v``'s shape does not fit the slice; when a
        list has more entries than ``a`` has axes, or a constant step is 0.
    TopiTypeError
        When ``begin``, ``end`` or ``strides`` do not hold integers.

    Notes
    -----
    Where ``v``'s shape cannot be checked against the slice's (the bounds are
    read at run time), a position of the slice past ``v``'s size along an axis
    keeps ``a``'s value instead of reading outside ``v``.
    """
    _check_tensor(a, "strided_set")
    _check_tensor(v, "strided_set")
    ndim = len(a.shape)
    what = f"strided_set({_describe(a)}, v {_describe(v)})"
    if v.dtype != a.dtype:
        raise TopiError(f"{what}: v has dtype {v.dtype} but a has {a.dtype}; cast v to {a.dtype} first")
    if len(v.shape) > ndim:
        raise TopiError(f"{what}: v has rank {len(v.shape)} but a has rank {ndim}; v must fit the slice of a")
    begin, begin_values = _slice_entries(begin, ndim, "begin", what)
    end, end_values = _slice_entries(end, ndim, "end", what)
    if strides is None:
        strides, stride_values = [], []
    else:
        strides, stride_values = _slice_entries(strides, ndim, "strides", what)
    if stride_values is not None and 0 in stride_values:
        raise TopiError(f"{what}: the step along axis {stride_values.index(0)} is 0; it must be non-zero")
    shape = get_const_tuple(a.shape)
    lead = ndim - len(v.shape)
    v_shape = get_const_tuple(v.shape)
    checked = begin_values is not None and end_values is not None and stride_values is not None \
        and _static(a.shape)
    if checked:
        def entry(values, x):
            return values[x] if x < len(values) else None

        for x in range(lead, ndim):
            s = entry(stride_values, x) or 1
            length = _slice_axis(entry(begin_values, x), entry(end_values, x), s, shape[x])[1]
            d = v_shape[x - lead]
            if isinstance(d, int) and d not in (1, length):
                raise TopiError(f"{what}: the slice has {length} element(s) along axis {x} but v has {d}; v must "
                                "have the slice's shape (or 1 there, broadcast)")
            checked = checked and isinstance(d, int)

    def f(*i):
        conds, v_index = [], []
        for x in range(ndim):
            n = _op.cast("int32", a.shape[x])
            s = strides[x] if x < len(strides) else _op.const(1, "int32")
            if x >= len(strides):
                known = 1
            else:
                known = stride_values[x] if stride_values is not None else None
            forward = (known > 0) if known is not None else s > 0

            def bound(entries, k, lo_fwd, hi_fwd, default_fwd, default_back):
                # numpy's start / stop: counted from the end when negative, then clamped
                # to [0, n] walking forward, to [-1, n - 1] walking backward
                if k >= len(entries):
                    return _choose(forward, default_fwd, default_back)
                e = entries[k]
                e = _op.select(e < 0, e + n, e)
                return _choose(forward, _op.min(_op.max(e, lo_fwd), hi_fwd),
                               _op.min(_op.max(e, _op.const(-1, "int32")), n - 1))

            zero = _op.const(0, "int32")
            first = bound(begin, x, zero, n, zero, n - 1)
            stop = bound(end, x, zero, n, n, _op.const(-1, "int32"))
            p = _op.cast("int32", i[x])
            dist = _choose(forward, p - first, first - p)
            step = _op.const(abs(known), "int32") if known is not None else _op.max(_op.abs(s), 1)
            conds += [dist >= 0, _choose(forward, p < stop, p > stop)]
            if known not in (1, -1):
                conds.append(_op.floormod(dist, step) == 0)
            if known is None:
                conds.append(s != 0)
            if x >= lead:
                d = v_shape[x - lead]
                if isinstance(d, int) and d == 1:
                    v_index.append(zero)
                else:
                    k = dist if known in (1, -1) else _op.floordiv(dist, step)
                    if not checked:
                        conds.append(k < _op.cast("int32", v.shape[x - lead]))
                    v_index.append(k)
        return _op.if_then_else(_op.all(*conds), v(*v_index), a(*i))

    return te.compute(a.shape, f, name="strided_set", tag=tag.INJECTIVE)


#: matrix_set_diag's alignments: of the diagonals above the main one, then of those below
DIAGONAL_ALIGNMENTS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def matrix_set_diag(data, diagonal, k=0, align="RIGHT_LEFT"):
    """``data`` with one diagonal, or a band of diagonals, of its last two axes
    replaced by ``diagonal`` (TVM's ``topi.matrix_set_diag``; TensorFlow's
    ``matrix_set_diag``).

    Parameters
    ----------
    data : Tensor
        ``[..., M, N]``: batches of ``M x N`` matrices.
    diagonal : Tensor
        Of ``data``'s dtype.  For one diagonal ``[..., L]``: element ``i`` goes to
        ``[..., i, i + k]`` (``k >= 0``) or ``[..., i - k, i]`` (``k < 0``), ``L``
        the diagonal's length.  For a band ``[..., k1 - k0 + 1, L]``, ``L`` the
        longest diagonal's length: row ``k1 - d`` holds diagonal ``d``.
    k : int or (int, int)
        The diagonal: 0 the main one, positive above it, negative below; or the band
        ``(k0, k1)``, ``k0 <= k1`` (a pair of equal ints is one diagonal).
    align : str
        Where a band's diagonals shorter than ``L`` sit in their row: the part
        before ``_`` for the diagonals above the main one, after it for those
        below; ``"RIGHT"`` pads on the left, ``"LEFT"`` on the right.  One of
        ``"RIGHT_LEFT"`` (LAPACK's packing, the default), ``"LEFT_RIGHT"``,
        ``"LEFT_LEFT"`` and ``"RIGHT_RIGHT"``.

    Returns
    -------
    Tensor
        ``data``'s shape and dtype, named ``T_matrix_set_diag``, tagged injective.

    Raises
    ------
    TopiError
        For ``data`` of rank below 2, dtypes that differ, ``k0 > k1``, a diagonal
        outside the matrices, an unknown ``align``, or a ``diagonal`` whose shape
        is not the one above.
    """
    _check_tensor(data, "matrix_set_diag")
    _check_tensor(diagonal, "matrix_set_diag")
    what = f"matrix_set_diag({_describe(data)}, diagonal {_describe(diagonal)}, k={k!r}, align={align!r})"
    ndim = len(data.shape)
    if ndim < 2:
        raise TopiError(f"{what}: data must have rank 2 or more (matrices), got rank {ndim}")
    if diagonal.dtype != data.dtype:
        raise TopiError(f"{what}: the diagonal has dtype {diagonal.dtype} but data has {data.dtype}; cast the "
                        f"diagonal to {data.dtype} first")
    ks = list(k) if isinstance(k, (list, tuple)) else [k]
    if len(ks) not in (1, 2):
        raise TopiError(f"{what}: k must be an int or a pair (k0, k1), got {len(ks)} values")
    lo, hi = (_as_int(x, f"{what}: k") for x in (ks[0], ks[-1]))
    if lo > hi:
        raise TopiError(f"{what}: the band ({lo}, {hi}) is empty; k[0] must not exceed k[1]")
    if align not in DIAGONAL_ALIGNMENTS:
        raise TopiError(f"{what}: align {align!r} is not one of {', '.join(map(repr, DIAGONAL_ALIGNMENTS))}")
    shape = get_const_tuple(data.shape)
    rows, cols = shape[-2:]
    if isinstance(rows, int) and isinstance(cols, int) and not -rows < lo <= hi < cols:
        raise TopiError(f"{what}: the matrices are {rows} x {cols}, whose diagonals run from {-rows + 1} to "
                        f"{cols - 1}; k must be among them")
    band = lo != hi
    want = list(data.shape[:-2]) + ([hi - lo + 1] if band else [])
    if isinstance(rows, int) and isinstance(cols, int):
        want.append(min(rows + min(hi, 0), cols - max(lo, 0)))
    else:
        want.append(None)  # symbolic: not checked
    if len(diagonal.shape) != len(want):
        raise TopiError(f"{what}: the diagonal must have rank {len(want)} ({'a band' if band else 'one diagonal'} of "
                        f"rank-{ndim} data), got rank {len(diagonal.shape)}")
    ana = Analyzer()
    for axis, (d, w) in enumerate(zip(diagonal.shape, want)):
        if w is not None and not ana.can_prove_equal(d, w) and isinstance(get_const_tuple([d])[0], int) \
                and isinstance(get_const_tuple([w])[0], int):
            shown = tuple("?" if x is None else get_const_tuple([x])[0] for x in want)
            raise TopiError(f"{what}: the diagonal must have shape {shown}, got {get_const_tuple(diagonal.shape)} "
                            f"(axis {axis} differs)")
    super_right, sub_right = (side == "RIGHT" for side in align.split("_"))
    length_of = diagonal.shape[-1]

    def f(*i):
        batch, r, c = i[:-2], i[-2], i[-1]
        d = c - r
        if not band:
            value = diagonal(*batch, r if lo >= 0 else c)
            return _op.if_then_else(d == lo, value, data(*i))
        # diagonal d: its row of the band, and where its values start in that row
        length = _op.min(data.shape[-2] + _op.min(d, 0), data.shape[-1] - _op.max(d, 0))
        pad = length_of - length
        zero = _op.const(0, d.dtype)
        offset = _op.select(d >= 0, pad if super_right else zero, pad if sub_right else zero)
        value = diagonal(*batch, hi - d, _op.select(d >= 0, r, c) + offset)
        return _op.if_then_else(_op.all(d >= lo, d <= hi), value, data(*i))

    return te.compute(data.shape, f, name="T_matrix_set_diag", tag=tag.INJECTIVE)


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0):
    """A dense tensor of ``output_shape`` holding ``default_value``, with
    ``sparse_values[j]`` at each index ``sparse_indices[j]`` (TVM's
    ``topi.sparse_to_dense``; TensorFlow's).

    Parameters
    ----------
    sparse_indices : Tensor of integers
        Rank 0 (one position along the first axis), rank 1 ``[count]`` (positions
        along the first axis) or rank 2 ``[count, r]`` (index tuples of the first
        ``r`` axes).  An index naming fewer axes than the output has sets the
        whole slice it names; an index outside the output sets nothing; of two
        equal indices the later one wins.
    output_shape : list of int or expression
    sparse_values : Tensor
        Rank 0 (one value for every index) or rank 1 ``[count]``; the output's
        dtype.
    default_value : number, expression or Tensor
        The value everywhere else; a tensor of one element (rank 0 in TVM) is read
        at run time.

    Returns
    -------
    Tensor
        named ``T_sparse_to_dense``, tagged injective.

    Raises
    ------
    TopiError
        For indices of rank above 2 or of a symbolic count, index tuples longer
        than the output's rank, values of rank above 1 or of another count, a
        negative or missing ``output_shape``, a ``default_value`` of more than one
        element; :class:`TopiTypeError` for indices that are not integers.
    """
    _check_tensor(sparse_indices, "sparse_to_dense")
    _check_tensor(sparse_values, "sparse_to_dense")
    what = (f"sparse_to_dense(sparse_indices {_describe(sparse_indices)}, output_shape {output_shape!r}, "
            f"sparse_values {_describe(sparse_values)})")
    _check_integer_indices(sparse_indices, what)
    if isinstance(output_shape, te.Tensor) or not isinstance(output_shape, (list, tuple)):
        raise TopiError(f"{what}: output_shape must be a list of sizes (a shape tensor read at run time is not "
                        "supported)")
    shape = _sizes_of(output_shape, "output_shape", what, minimum=0)
    if not shape:
        raise TopiError(f"{what}: output_shape must have at least one axis")
    ind_shape = get_const_tuple(sparse_indices.shape)
    if len(ind_shape) > 2:
        raise TopiError(f"{what}: sparse_indices must have rank 0, 1 or 2, got rank {len(ind_shape)}")
    count = 1 if not ind_shape else ind_shape[0]
    width = ind_shape[1] if len(ind_shape) == 2 else 1
    if not isinstance(count, int) or not isinstance(width, int):
        raise TopiError(f"{what}: the shape of sparse_indices must be static, got {ind_shape}")
    if width > len(shape):
        raise TopiError(f"{what}: index tuples of {width} coordinates do not fit an output of rank {len(shape)}")
    val_shape = get_const_tuple(sparse_values.shape)
    if len(val_shape) > 1:
        raise TopiError(f"{what}: sparse_values must have rank 0 (one value for all) or 1, got rank "
                        f"{len(val_shape)}")
    if val_shape and isinstance(val_shape[0], int) and val_shape[0] != count:
        raise TopiError(f"{what}: there are {count} indices but {val_shape[0]} sparse_values; give one value per "
                        "index (or a rank-0 value for all)")
    dtype = sparse_values.dtype
    if isinstance(default_value, te.Tensor):
        if prod(get_const_tuple(default_value.shape)) != 1:
            raise TopiError(f"{what}: default_value must be one value, got the tensor {_describe(default_value)}")
        fill = _op.cast(dtype, default_value(*([0] * len(default_value.shape))))
    elif isinstance(default_value, E.PrimExpr) or isinstance(default_value, (int, float)) \
            and not isinstance(default_value, bool) or hasattr(default_value, "item"):
        fill = _op.cast(dtype, _op.convert(default_value.item() if hasattr(default_value, "item")
                                           else default_value))
    else:
        raise TeccTypeError(f"{what}: default_value must be a number, an expression or a one-element tensor, "
                            f"got {default_value!r}")

    def coordinate(j, k):
        if len(ind_shape) == 2:
            return sparse_indices(j, k)
        return sparse_indices(j) if ind_shape else sparse_indices()

    def f(*i):
        value = fill
        for j in range(count):  # the later indices outermost: they win
            hit = _op.all(*[_op.cast("int64", coordinate(j, k)) == _op.cast("int64", i[k]) for k in range(width)])
            value = _op.select(hit, sparse_values(j) if val_shape else sparse_values(), value)
        return value

    return te.compute(tuple(shape), f, name="T_sparse_to_dense", tag=tag.INJECTIVE)


def adv_index(data, indices):
    """``data[indices[0], indices[1], ...]`` with numpy's advanced (integer array)
    indexing (TVM's ``topi.adv_index``): the index tensors broadcast together, and
    each element of the broadcast shape picks along the first ``len(indices)`` axes.

    Parameters
    ----------
    data : Tensor
    indices : list of Tensor of integers
        At most ``data``'s rank of them; a negative index counts from the end of
        its axis, indices out of ``[-n, n)`` are not checked.

    Returns
    -------
    Tensor
        of shape ``broadcast(indices' shapes) + data.shape[len(indices):]``, named
        ``advanced_index``, tagged injective.

    Raises
    ------
    TopiError
        For no indices, more of them than ``data`` has axes, or index shapes that
        do not broadcast; :class:`TopiTypeError` for indices that are not integers
        (boolean masks select a number of elements known only at run time: turn
        them into positions first).
    """
    _check_tensor(data, "adv_index")
    tensors = _tensor_list(indices, "adv_index")
    what = f"adv_index({_describe(data)}, indices [{', '.join(_describe(t) for t in tensors)}])"
    for t in tensors:
        _check_integer_indices(t, what)
    ndim = len(data.shape)
    if len(tensors) > ndim:
        raise TopiError(f"{what}: {len(tensors)} index tensors for a tensor of rank {ndim}; give at most one per "
                        "axis")
    picked = tuple(tensors[0].shape)
    for t in tensors[1:]:
        picked = broadcast_shape(picked, t.shape, what)
    out_shape = tuple(picked) + tuple(data.shape[len(tensors):])

    def f(*i):
        lead = i[:len(picked)]
        idx = [_from_end(t(*_broadcast_index(t, picked, lead)), data.shape[k]) for k, t in enumerate(tensors)]
        return data(*idx, *i[len(picked):])

    return te.compute(out_shape, f, name="advanced_index", tag=tag.INJECTIVE)
