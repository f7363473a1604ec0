"""TVM's ``relay.analysis``: walking a graph (:func:`post_order_visit` calls a
function on every node, operands first) and its free variables."""
from ..graph.ir import free_vars, post_order_visit  # noqa: F401

__all__ = ["free_vars", "post_order_visit"]
