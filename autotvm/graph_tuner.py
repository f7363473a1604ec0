"""TVM's ``autotvm.graph_tuner``: :mod:`tecc.graph.graph_tuner` (model-level, so it
lives beside the model layer, which the tuner does not import)."""
from ..graph.graph_tuner import BaseGraphTuner, DPTuner, PBQPTuner  # noqa: F401

__all__ = ["BaseGraphTuner", "DPTuner", "PBQPTuner"]
