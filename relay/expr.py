"""TVM's ``relay.expr``: the node classes of tecc's model graph (:mod:`tecc.graph.ir`)."""
from ..graph.ir import (  # noqa: F401
    Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, const,
)

__all__ = ["Call", "Constant", "Expr", "Function", "Tuple", "TupleGetItem", "Var", "const"]
