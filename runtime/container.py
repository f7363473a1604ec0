"""TVM's container names (``tvm.container.Map`` / ``Array``): tecc returns plain
Python containers, and these are those containers under TVM's names."""
from __future__ import annotations


class Map(dict):
    """A mapping returned by tecc's API (e.g. ``te.schedule.InferBound``): a dict."""

    __slots__ = ()


class Array(tuple):
    """A sequence returned by tecc's API: a tuple."""

    __slots__ = ()


__all__ = ["Array", "Map"]
