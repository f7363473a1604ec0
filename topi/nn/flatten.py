"""Flattening every axis but the first (TVM's ``topi.nn.flatten``)."""
from __future__ import annotations

from ... import te
from ...errors import TeccTypeError
from .. import tag
from ..utils import TopiError, prod, simplify, unravel_index


def flatten(data):
    """``data`` of shape ``(N, d1, d2, ...)`` as ``(N, d1 * d2 * ...)``.

    Raises
    ------
    TopiError
        When ``data`` has rank 0.
    """
    if not isinstance(data, te.Tensor):
        raise TeccTypeError(f"flatten: expected a tensor, got {data!r}")
    if len(data.shape) < 1:
        raise TopiError(f"flatten({data.name!r} {tuple(data.shape)}): needs a tensor of rank >= 1")
    rest = tuple(data.shape[1:])
    out_shape = (data.shape[0], simplify(prod(rest)) if rest else 1)

    def f(n, j):
        return data(n, *unravel_index(j, rest))

    return te.compute(out_shape, f, name="T_flatten", tag=tag.INJECTIVE)
