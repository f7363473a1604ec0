"""TVM's ``tvm.ir`` names: the IR's containers and comparisons, defined in
:mod:`tecc.tir` (tecc has one IR); this module is the name TVM programs use."""
from .runtime.container import Array, Map
from .tir.expr import PrimExpr, Range
from .tir.node import Node
from .tir.op import register_intrin_lowering, register_op_attr
from .tir.stmt import IRModule, PrimFunc
from .tir import structural as _tir_structural
from .tir.structural import structural_hash
from .te.serialize import load_json, save_json
from . import instrument  # noqa: F401 -- tvm.ir.instrument
import sys as _sys

_sys.modules.setdefault(__name__ + ".instrument", instrument)



def _graph_side(a, b) -> bool:
    from .graph.ir import Expr, Module

    return isinstance(a, (Expr, Module)) or isinstance(b, (Expr, Module))


def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    """Whether two IR objects have the same structure (TVM's ``tvm.ir.structural_equal``):
    model graphs (expressions, modules) by :func:`tecc.graph.analysis.structural_equal`,
    loop IR by :func:`tecc.tir.structural.structural_equal`."""
    if _graph_side(lhs, rhs):
        from .graph.analysis import structural_equal as graph_equal

        return graph_equal(lhs, rhs, map_free_vars)
    return _tir_structural.structural_equal(lhs, rhs, map_free_vars)


def assert_structural_equal(lhs, rhs, map_free_vars: bool = False) -> None:
    """Raise ``AssertionError`` showing both sides if they differ (graphs or loop IR)."""
    if not _graph_side(lhs, rhs):
        _tir_structural.assert_structural_equal(lhs, rhs, map_free_vars)
    elif not structural_equal(lhs, rhs, map_free_vars):
        raise AssertionError(f"graphs differ\n--- left ---\n{lhs}\n--- right ---\n{rhs}")


def __getattr__(name):
    # tvm.ir.op: the graph operators' class (``isinstance(call.op, tvm.ir.op.Op)``), loaded on use
    if name == "op":
        from .graph import op

        return op
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: TVM's base class of IR objects
Object = Node

__all__ = ["Array", "IRModule", "Map", "Node", "Object", "PrimExpr", "PrimFunc", "Range", "assert_structural_equal",
           "instrument", "load_json", "register_intrin_lowering", "register_op_attr", "save_json", "structural_equal",
           "structural_hash"]
