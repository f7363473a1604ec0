"""TVM's ``tvm.ir`` names: the IR's containers and comparisons, defined in
:mod:`tecc.tir` (tecc has one IR); this module is the name TVM programs use."""
from .runtime.container import Array, Map
from .tir.expr import PrimExpr, Range
from .tir.node import Node
from .tir.op import register_intrin_lowering, register_op_attr
from .tir.stmt import IRModule, PrimFunc
from .tir.structural import assert_structural_equal, structural_equal, structural_hash
from .te.serialize import load_json, save_json
from . import instrument  # noqa: F401 -- tvm.ir.instrument
import sys as _sys

_sys.modules.setdefault(__name__ + ".instrument", instrument)

#: TVM's base class of IR objects
Object = Node

__all__ = ["Array", "IRModule", "Map", "Node", "Object", "PrimExpr", "PrimFunc", "Range", "assert_structural_equal",
           "instrument", "load_json", "register_intrin_lowering", "register_op_attr", "save_json", "structural_equal",
           "structural_hash"]
