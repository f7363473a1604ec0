"""Relax's frontends: :mod:`.nn` (modules written in Python and exported)."""
from . import nn  # noqa: F401
