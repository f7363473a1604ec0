"""tecc's model layer: the graph IR (:mod:`.ir`), its operators (:mod:`.op`), passes
(:mod:`.transform`), the ONNX importer (:mod:`.frontend`) and the builder that turns a
model into kernels and a graph executor (:mod:`.build`).  ``tecc.relay`` and
``tecc.relax`` are TVM's names for the same layer."""
from .ir import (  # noqa: F401
    Attrs, Call, Constant, Expr, ExprMutator, ExprVisitor, Function, GraphError, Module, TensorType, Tuple,
    TupleGetItem, TupleType, Type, Var, const, free_vars, post_order_visit, topological_order,
)
from .op import Op, OpPattern, call, get_op, list_ops, register_op  # noqa: F401
from .printer import astext  # noqa: F401
