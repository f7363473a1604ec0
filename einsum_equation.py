"""Einsum equations (``"bij,bjk->bik"``, ``"...ij,...jk"``): the one parser of them.

``tecc.topi.einsum`` (the computation) and the graph's ``einsum`` operator (shape
inference and its lowering to matrix products) both read an equation through
:func:`parse_equation`, and the sizes of its axes through :func:`axis_sizes`.  It lives at the top of the package because both may import
it: it is plain Python, and importing it loads no compiler.
"""
from __future__ import annotations

from .errors import TeccError


def parse_equation(equation, ranks, error=TeccError):
    """``(terms, output, broadcast)`` of an einsum equation over operands of the given
    ``ranks``: one term of letters per operand and the output's letters (implicit
    when there is no ``->``: the ``...`` axes, then the letters used once, sorted, as
    numpy reads it).  A ``...`` stands for the axes a term does not name,
    right-aligned across the operands as numpy broadcasts them; it is written out here
    with letters the equation does not use, returned as ``broadcast`` (a set).  The
    one parser of einsum equations.

    Raises
    ------
    error
        (a :class:`~tecc.errors.TeccError` subclass, the caller's) naming what is
        wrong with the equation (``einsum: ...``).
    """
    count = len(ranks)
    if not isinstance(equation, str) or not equation:
        raise error(f"einsum: equation must be a string such as 'ij,jk->ik', got {equation!r}")
    eq = equation.replace(" ", "")
    lhs, arrow, output = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != count:
        raise error(f"einsum: equation {equation!r} has {len(terms)} operand term(s) but {count} operand(s) "
                    "were given")
    for term in terms + [output]:
        bare = term.replace("...", "", 1)
        if not all(c.isalpha() for c in bare):
            raise error(f"einsum: equation {equation!r} may hold only letters, ',', '->' and one '...' per term")
    used = set(eq)
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    widths = []
    for k, (term, rank) in enumerate(zip(terms, ranks)):
        if "..." in term:
            width = rank - (len(term) - 3)
            if width < 0:
                raise error(f"einsum: operand {k} has rank {rank} but its term {term!r} names {len(term) - 3} "
                            "axes besides '...'")
            widths.append(width)
    if "..." in output and not widths:
        raise error(f"einsum: the output of {equation!r} has '...' but no operand term does")
    ellipsis = spare[:max(widths, default=0)]
    terms = [t.replace("...", "".join(ellipsis[len(ellipsis) - (r - (len(t) - 3)):]))
             if "..." in t else t for t, r in zip(terms, ranks)]
    for k, (term, rank) in enumerate(zip(terms, ranks)):
        if len(term) != rank:
            raise error(f"einsum: operand {k} has rank {rank} but its term {term!r} names {len(term)} axes")
    letters = "".join(terms)
    if arrow:
        if ellipsis and "..." not in output:
            raise error(f"einsum: the output of {equation!r} leaves out the '...' axes; write '...' in it too "
                        "(numpy refuses this form as well)")
        output = output.replace("...", "".join(ellipsis))
    else:
        output = "".join(ellipsis) + "".join(sorted(c for c in set(letters) - set(ellipsis)
                                                    if letters.count(c) == 1))
    for c in output:
        if c not in letters:
            raise error(f"einsum: output axis {c!r} of {equation!r} appears in no operand")
        if output.count(c) > 1:
            raise error(f"einsum: output axis {c!r} of {equation!r} appears twice")
    return terms, output, set(ellipsis)


def axis_sizes(equation, terms, shapes, broadcast, same, is_one, names, error=TeccError,
               named_broadcast=False) -> dict:
    """The size of every letter of ``terms`` (from :func:`parse_equation`) over
    operands of ``shapes``: a letter's sizes must agree across the operands
    (``same(a, b)``, the caller's test: ints, symbolic dimensions...), except that a
    ``...`` axis (a letter of ``broadcast``) of size 1 (``is_one``) broadcasts
    against any size, as numpy's -- and, with ``named_broadcast``, any letter's axis
    of size 1 (numpy's einsum broadcasts those too: ``'ij,ij->i'`` of (1, 3) and (2, 3)).

    Raises
    ------
    error
        naming the letter, both sizes and the operand (``names[k]``).
    """
    dims = {}
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        for c, d in zip(term, shape):
            if c not in dims:
                dims[c] = d
            elif (named_broadcast or c in broadcast) and is_one(dims[c]):
                dims[c] = d  # an axis of size 1 broadcasts
            elif (named_broadcast or c in broadcast) and is_one(d):
                continue
            elif not same(dims[c], d):
                raise error(f"einsum {equation!r}: axis {c!r} has different sizes, {dims[c]} in one operand and {d} "
                            f"in {names[k]}")
    return dims

