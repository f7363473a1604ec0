"""Einstein summation (TVM's ``topi.einsum``): ``einsum("ij,jk->ik", A, B)``."""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir.arith import Analyzer
from ..einsum_equation import axis_sizes, parse_equation
from .utils import TopiError


def einsum(subscripts, *operand):
    """Products of the operands' elements summed over the axes the output does not
    name (numpy's ``einsum``, ``...`` broadcasting as numpy's does).

    Parameters
    ----------
    subscripts : str
        e.g. ``"ij,jk->ik"`` (matmul), ``"ii->i"`` (diagonal), ``"ij->"`` (sum),
        ``"...ij,...jk->...ik"`` (batched, the batch axes broadcast); an axis of size 1
        broadcasts against the same letter's longer axis, as in numpy.
    operand : Tensor
        One per comma-separated term (a single tuple of tensors is accepted too).

    Returns
    -------
    Tensor
        named ``T_einsum``, tagged ``einsum``.
    """
    if len(operand) == 1 and isinstance(operand[0], (tuple, list)):
        operand = tuple(operand[0])
    for t in operand:
        if not isinstance(t, te.Tensor):
            raise TeccTypeError(f"einsum {subscripts!r}: operands must be tensors, got {t!r}")
    terms, output, broadcast = parse_equation(subscripts, [len(t.shape) for t in operand], TopiError)
    ana = Analyzer()
    dims = axis_sizes(subscripts, terms, [t.shape for t in operand], broadcast, ana.can_prove_equal, _is_one,
                      [repr(t.name) for t in operand], TopiError, named_broadcast=True)
    summed = [c for c in dict.fromkeys("".join(terms)) if c not in output]
    rvs = {c: te.reduce_axis((0, dims[c]), name=c) for c in summed}

    def f(*i):
        env = dict(zip(output, i))
        env.update({c: rv.var for c, rv in rvs.items()})
        value = None
        for term, t in zip(terms, operand):
            # an axis of size 1 in this operand, where another's is longer, is read at 0 (broadcast)
            x = t(*[0 if _is_one(d) and not _is_one(dims[c]) else env[c]
                    for c, d in zip(term, t.shape)])
            value = x if value is None else value * x
        return te.sum(value, axis=list(rvs.values())) if rvs else value

    return te.compute(tuple(dims[c] for c in output), f, name="T_einsum", tag="einsum")


def _is_one(d) -> bool:
    return isinstance(d, int) and d == 1 or getattr(d, "value", None) == 1
