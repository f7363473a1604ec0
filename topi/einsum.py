"""Einstein summation (TVM's ``topi.einsum``): ``einsum("ij,jk->ik", A, B)``."""
from __future__ import annotations

from .. import te
from ..errors import TeccTypeError
from ..tir.arith import Analyzer
from .utils import TopiError


def _parse(subscripts, n):
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise TopiError(f"einsum {subscripts!r}: '...' (broadcast dimensions) is not supported; name every axis")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != n:
        raise TopiError(f"einsum {subscripts!r}: {len(terms)} operand subscript(s) but {n} tensor(s) given")
    for t in terms + [output]:
        if not all(c.isalpha() for c in t):
            raise TopiError(f"einsum {subscripts!r}: subscripts are letters, got {t!r}")
    if not arrow:  # implicit output: the letters used once, in alphabetical order
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(output)) != len(output):
        raise TopiError(f"einsum {subscripts!r}: the output {output!r} names an axis twice")
    missing = set(output) - set("".join(terms))
    if missing:
        raise TopiError(f"einsum {subscripts!r}: output axes {sorted(missing)} appear in no operand")
    return terms, output


def einsum(subscripts, *operand):
    """Products of the operands' elements summed over the axes the output does not
    name (numpy's ``einsum`` without ``...``).

    Parameters
    ----------
    subscripts : str
        e.g. ``"ij,jk->ik"`` (matmul), ``"ii->i"`` (diagonal), ``"ij->"`` (sum).
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
    terms, output = _parse(subscripts, len(operand))
    dims, ana = {}, Analyzer()
    for term, t in zip(terms, operand):
        if len(term) != len(t.shape):
            raise TopiError(f"einsum {subscripts!r}: {t.name!r} has rank {len(t.shape)} but its subscripts "
                            f"{term!r} name {len(term)} axes")
        for c, d in zip(term, t.shape):
            if c in dims and not ana.can_prove_equal(dims[c], d):
                raise TopiError(f"einsum {subscripts!r}: axis {c!r} has size {dims[c]} in one operand and {d} in "
                                f"{t.name!r}")
            dims.setdefault(c, d)
    summed = [c for c in dict.fromkeys("".join(terms)) if c not in output]
    rvs = {c: te.reduce_axis((0, dims[c]), name=c) for c in summed}

    def f(*i):
        env = dict(zip(output, i))
        env.update({c: rv.var for c, rv in rvs.items()})
        value = None
        for term, t in zip(terms, operand):
            x = t(*[env[c] for c in term])
            value = x if value is None else value * x
        return te.sum(value, axis=list(rvs.values())) if rvs else value

    return te.compute(tuple(dims[c] for c in output), f, name="T_einsum", tag="einsum")
