"""Running a hybrid script as plain Python on numpy arrays (software emulation).

:data:`HYBRID_GLOBALS` gives every name a hybrid script may use beyond Python's
builtins -- the loop iterators (``unroll``, ``parallel``, ``vectorize``,
``const_range``, ``bind``), ``output_tensor`` and ``allocate``, the math
intrinsics and the dtype casts -- as numpy does it.  :func:`emulate` calls the
script's Python function with those names in scope: it runs on a private copy of
the function's globals, so the module that defines the script is never changed.
"""
from __future__ import annotations

import types

import numpy


class bind:  # noqa: N801  (the name a script uses)
    """``for i in bind("threadIdx.x", n)``: in Python, the indices ``0 .. n-1`` in
    order (compiled, each GPU thread or block runs with its own index)."""

    def __init__(self, tag, ext):
        self.tag = tag
        self.ext = ext

    def __iter__(self):
        return iter(range(int(self.ext)))


def allocate(shape, dtype="float32", scope="global"):  # noqa: ARG001  (scope matters compiled only)
    """A zero-filled array of ``shape`` and ``dtype`` (a temporary buffer)."""
    return numpy.zeros(_shape(shape), dtype=dtype)


def output_tensor(shape, dtype="float32"):
    """A zero-filled array of ``shape`` and ``dtype`` (an output of the script)."""
    return numpy.zeros(_shape(shape), dtype=dtype)


def _shape(shape):
    if isinstance(shape, (int, numpy.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def rsqrt(x):
    """``1 / sqrt(x)``."""
    return numpy.ones_like(x) / numpy.sqrt(x)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return 1 / (1 + numpy.exp(-x))


def popcount(x):
    """The number of set bits of an integer."""
    return bin(int(x) & 0xFFFFFFFFFFFFFFFF).count("1")


def ceil_div(a, b):
    """``a`` divided by ``b``, rounded up."""
    return (a + b - 1) // b


def likely(cond):
    """A branch hint: the condition itself."""
    return cond


def max_num_threads(allow_none=True):
    """The most threads per block of the current target (``with Target(...)``)."""
    from ...target import Target  # the target is a fact of the user's scope, read at call time

    return target_max_threads(Target.current(allow_none))


def target_max_threads(target):
    """Threads per block of ``target``: its ``-max_num_threads`` option, 1024 for a
    CUDA GPU, 1 for a CPU."""
    from ...errors import TeccTypeError

    if target is None:
        raise TeccTypeError("max_num_threads() needs a target: call the script inside "
                            "`with tecc.target.Target('cuda'):`")
    value = target.attrs.get("max_num_threads")
    if value is not None:
        return int(value)
    return 1024 if "gpu" in target.keys else 1


def inf(dtype):
    """The largest value of ``dtype`` (``inf`` for floats)."""
    dt = numpy.dtype(dtype)
    return dt.type(numpy.inf) if dt.kind == "f" else numpy.iinfo(dt).max


def ninf(dtype):
    """The smallest value of ``dtype`` (``-inf`` for floats)."""
    dt = numpy.dtype(dtype)
    return dt.type(-numpy.inf) if dt.kind == "f" else numpy.iinfo(dt).min


#: what a hybrid script's names mean when it runs as Python
HYBRID_GLOBALS = {
    "unroll": range,
    "vectorize": range,
    "parallel": range,
    "const_range": range,
    "bind": bind,
    "allocate": allocate,
    "output_tensor": output_tensor,
    "sqrt": numpy.sqrt,
    "rsqrt": rsqrt,
    "log": numpy.log,
    "log2": numpy.log2,
    "log10": numpy.log10,
    "exp": numpy.exp,
    "exp2": numpy.exp2,
    "tanh": numpy.tanh,
    "sin": numpy.sin,
    "cos": numpy.cos,
    "floor": numpy.floor,
    "ceil": numpy.ceil,
    "power": numpy.power,
    "sigmoid": sigmoid,
    "popcount": popcount,
    "round": round,
    "likely": likely,
    "uint8": numpy.uint8,
    "uint16": numpy.uint16,
    "uint32": numpy.uint32,
    "uint64": numpy.uint64,
    "int8": numpy.int8,
    "int16": numpy.int16,
    "int32": numpy.int32,
    "int64": numpy.int64,
    "float16": numpy.float16,
    "float32": numpy.float32,
    "float64": numpy.float64,
    "ceil_div": ceil_div,
    "max_num_threads": max_num_threads,
    "inf": inf,
    "ninf": ninf,
}


def emulate(func, args, kwargs=None):
    """Call ``func`` (a hybrid script's Python function) with :data:`HYBRID_GLOBALS`
    in scope and return what it returns."""
    scope = dict(func.__globals__)
    scope.update(HYBRID_GLOBALS)
    runnable = types.FunctionType(func.__code__, scope, func.__name__, func.__defaults__, func.__closure__)
    runnable.__kwdefaults__ = func.__kwdefaults__
    return runnable(*args, **(kwargs or {}))
