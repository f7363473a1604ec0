"""TVM's container names (``tvm.container.Map`` / ``Array``): tecc returns plain
Python containers, and these are those containers under TVM's names."""
from __future__ import annotations


def _text(v):
    if isinstance(v, str):
        return '"' + v.replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_text(k)}: {_text(x)}" for k, x in v.items()) + "}"
    return str(v)


class Map(dict):
    """A mapping returned by tecc's API (e.g. ``te.schedule.InferBound``, a compute's
    ``attrs``): a dict, printed as TVM prints its maps (``{"k": 1, "v": [1, 2]}``)."""

    __slots__ = ()

    def items(self):
        """The ``(key, value)`` pairs as a list (TVM's ``Map.items()`` is indexable)."""
        return list(super().items())

    def __str__(self):
        return _text(self)


class Array(tuple):
    """A sequence returned by tecc's API: a tuple, printed as ``[a, b]``."""

    __slots__ = ()

    def __str__(self):
        return _text(self)


__all__ = ["Array", "Map"]
