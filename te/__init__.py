"""Tensor expressions: declare *what* to compute (placeholder, compute, reductions)
and *how* (schedules)."""
from ..tir.op import (  # noqa: F401  (TVM exposes these under te too)
    abs, acos, all, any, asin, atan, ceil, const, cos, cosh, erf, exp, exp2, exp10, floor, floordiv,
    floormod, fmod, if_then_else, indexdiv, indexmod, isfinite, isinf, isnan, log, log1p, log2,
    log10, max_value, min_value, nearbyint, popcount, pow, power, round, rsqrt, sigmoid, sin,
    sinh, sqrt, tan, tanh, trunc, truncdiv, truncmod,
)
from .autodiff import gradient  # noqa: F401
from .operation import compute, extern, placeholder, reduce_axis, scan, size_var, thread_axis, var  # noqa: F401
from ..tir.reduction import comm_reducer, max, min, prod, sum  # noqa: F401,A004
from .schedule import AttachType, Schedule, Stage, create_schedule  # noqa: F401
from .tensor import ComputeOp, ExternOp, Operation, PlaceholderOp, ScanOp, Tensor, TensorComputeOp  # noqa: F401
from .tensor_intrin import TensorIntrin, decl_tensor_intrin  # noqa: F401
from .tag import TagScope, tag_scope  # noqa: F401,E402
from . import hybrid  # noqa: F401,E402  (te.hybrid: hybrid script)
from .hybrid import HybridOp  # noqa: F401,E402
