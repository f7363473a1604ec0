"""tecc: a GPU-first tensor-expression kernel compiler.

``import tecc as tvm`` runs classic TVM tensor-expression code::

    import tecc as tvm
    from tecc import te
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], target="llvm")
    f(tvm.nd.array(a), tvm.nd.array(b))
"""
from .errors import (  # noqa: F401
    CompileError, LoweringError, RuntimeArgError, ScheduleError, TargetError, TeccError,
    TeccTypeError, VerifyError,
)
from . import tir  # noqa: F401
from . import te  # noqa: F401
from . import target  # noqa: F401
from . import runtime  # noqa: F401
from .tir import transform  # noqa: F401
from .runtime import Device, cpu, cuda, device, gpu  # noqa: F401
from .runtime import ndarray as nd  # noqa: F401
from .build_module import build, lower  # noqa: F401

__version__ = "0.1.0"
