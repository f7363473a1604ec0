"""tecc: a GPU-first tensor-expression kernel compiler.

``import tecc as tvm`` runs classic TVM tensor-expression code::

    from tecc import te
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    f = tecc.build(s, [A, B], target="llvm")
"""
from .errors import (  # noqa: F401
    CompileError, LoweringError, RuntimeArgError, ScheduleError, TargetError, TeccError,
    TeccTypeError, VerifyError,
)
from . import tir  # noqa: F401

__version__ = "0.1.0"
