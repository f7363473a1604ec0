"""The operator definitions: importing this package registers every operator of
the graph IR (:mod:`tecc.graph.op`).  One module per family."""
from . import tensor  # noqa: F401
