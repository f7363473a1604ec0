"""tecc: a GPU-first tensor-expression kernel compiler.

``import tecc as tvm`` runs classic TVM tensor-expression code::

    import tecc as tvm
    from tecc import te
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], target="llvm")
    f(tvm.nd.array(a), tvm.nd.array(b))

Importing ``tecc`` loads only the runtime (devices, arrays, modules); the compiler
(``te``, ``tir``, ``lower``, ``build``...) loads on first use, so a program that only
loads and runs exported modules never imports it.
"""
import importlib

from .errors import (  # noqa: F401
    CompileError, FunctionNotFoundError, KernelError, LoweringError, RuntimeArgError, ScheduleError,
    TargetError, TeccError, TeccTypeError, VerifyError,
)
from . import runtime  # noqa: F401
from .runtime import Device, cpu, cuda, device, gpu  # noqa: F401

#: TVM's name before v0.8 for ``device`` (``tvm.context("cuda", 0)``)
context = device
#: TVM's name for the base class of its errors (``pytest.raises(tvm.TVMError)``): tecc's
TVMError = TeccError
from .runtime import ndarray as nd  # noqa: F401
from .runtime import PackedFunc, get_global_func, list_global_func_names, register_func  # noqa: F401

__version__ = "0.1.0"

#: names loaded on first use: attribute -> (module, attribute in it or None for the module)
_LAZY = {
    "tir": ("tecc.tir", None),
    "te": ("tecc.te", None),
    "target": ("tecc.target", None),
    "transform": ("tecc.transform", None),
    "instrument": ("tecc.instrument", None),
    "ir": ("tecc.ir", None),
    "arith": ("tecc.tir.arith", None),
    "IRModule": ("tecc.tir.stmt", "IRModule"),
    "lower": ("tecc.driver.build_module", "lower"),
    "build": ("tecc.driver.build_module", "build"),
    "driver": ("tecc.driver", None),
    "testing": ("tecc.testing", None),
    "container": ("tecc.runtime.container", None),
    "error": ("tecc.errors", None),
    "_ffi": ("tecc._ffi", None),
    "topi": ("tecc.topi", None),
    "autotvm": ("tecc.autotvm", None),
    "graph": ("tecc.graph", None),
    "relay": ("tecc.relay", None),
    "relax": ("tecc.relax", None),
    "contrib": ("tecc.contrib", None),
    "compile": ("tecc.relax.vm", "compile"),
}


def __getattr__(name):
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'tecc' has no attribute {name!r}")
    module = importlib.import_module(entry[0])
    value = module if entry[1] is None else getattr(module, entry[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
