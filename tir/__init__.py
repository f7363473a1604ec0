"""tecc's loop IR (TIR): expressions, statements, buffers, functions and passes."""
from . import dtype
from .node import Node
from .expr import (
    Add, And, BinaryOp, Broadcast, Call, Cast, CmpOp, CommReducer, Div, EQ, FloatImm, FloorDiv,
    FloorMod, GE, GT, IntImm, IterVar, IterVarType, LE, LT, Let, Max, Min, Mod, Mul, NE, Not, Or,
    PrimExpr, ProducerLoad, Ramp, Range, Reduce, Select, SizeVar, StringImm, Sub, Var, BufferLoad,
)
from .stmt import (
    Allocate, AssertStmt, AttrStmt, Buffer, Evaluate, For, ForKind, IfThenElse, IRModule, LetStmt,
    PrimFunc, SeqStmt, Stmt, BufferStore, While, decl_buffer, seq,
)
from .op import (
    abs, acos, all, any, asin, atan, atan2, call, cast, ceil, const, convert, cos, cosh, erf, exp,
    exp2, exp10, floor, floordiv, floormod, fmod, if_then_else, indexdiv, indexmod, infinity,
    isfinite, isinf, isnan, likely, log, log1p, log2, log10, max_value, min_value, nearbyint,
    popcount, pow, power, round, rsqrt, sigmoid, sin, sinh, sqrt, tan, tanh, trunc, truncdiv,
    truncmod, select, logical_and, logical_or, logical_not,
    call_extern, call_intrin, call_packed, call_pure_extern, reinterpret, CallEffectKind,
    tvm_fill_fragment, tvm_load_matrix_sync, tvm_mma_sync, tvm_store_matrix_sync,
)
from .op import max as _max, min as _min  # noqa: F401  (te.max/te.min are reducers)
from .functor import IRMutator, IRVisitor, ir_transform, post_order_visit, pre_order_visit, substitute
from .structural import assert_structural_equal, structural_equal, structural_hash
from .printer import to_text
from . import analysis, keys  # noqa: E402  (after the node modules they build on)
from . import ir_builder, stmt_functor  # noqa: E402  (TVM's tir.ir_builder, tir.stmt_functor)
from .reduction import comm_reducer, max, min, sum  # noqa: E402,F401,A004  (TVM's reducers; two expressions: element-wise)

# TVM spells the select node as a function too
Select_ = select
