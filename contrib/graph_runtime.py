"""TVM's name before v0.8 for :mod:`tecc.contrib.graph_executor` (``graph_runtime``):
the same ``create`` and ``GraphModule``."""
from .graph_executor import GraphModule, create  # noqa: F401

__all__ = ["GraphModule", "create"]
