"""Hybrid script (TVM's ``te.hybrid``): loop programs written as Python functions.

A function decorated with :func:`script` runs two ways:

* called with numpy arrays (and numbers), it runs as plain Python -- the
  software emulation, where ``output_tensor``/``allocate`` make zero-filled arrays
  and ``parallel``, ``vectorize``, ``unroll``, ``const_range`` and ``bind`` iterate
  like ``range`` (see :mod:`.runtime`);
* called with te tensors (placeholders or other operations' outputs) and
  constants, its Python source is parsed into TIR and the output tensor(s) of a
  :class:`HybridOp` are returned, to schedule and build like any other tensor.

Example::

    @te.hybrid.script
    def outer_product(a, b):
        c = output_tensor((a.shape[0], b.shape[0]), a.dtype)
        for i in range(a.shape[0]):
            for j in range(b.shape[0]):
                c[i, j] = a[i] * b[j]
        return c

    c = outer_product(A, B)                 # A, B: te.placeholder -> a tensor
    s = te.create_schedule(c.op)
    f = tecc.build(s, [A, B, c], "llvm")
    ref = outer_product(a_np, b_np)         # numpy arrays -> a numpy array

:func:`build` prints a scheduled computation back as hybrid script, in a
:class:`HybridModule` that saves, loads and runs like the decorated function.
See :mod:`.parser` for what each Python construct becomes.
"""
from __future__ import annotations

import ast
import functools

import numpy

from ...tir import expr as E
from ...tir import op as T
from ...tir import stmt as S
from ..tensor import Tensor
from .module import HybridModule, build
from .op import HybridOp
from .parser import BufRef, Parser
from .runtime import HYBRID_GLOBALS, emulate
from .utils import HybridScriptError, Source

__all__ = ["HYBRID_GLOBALS", "HybridFunction", "HybridModule", "HybridOp", "HybridScriptError", "build", "script"]


class HybridFunction:
    """A function decorated with :func:`script`: call it with te tensors to get the
    output tensor(s) of a :class:`HybridOp`, or with numpy arrays to run it in
    Python.  ``__wrapped__`` is the undecorated function."""

    def __init__(self, func):
        if not callable(func) or not hasattr(func, "__code__"):
            raise HybridScriptError(f"te.hybrid.script decorates a Python function, got {func!r}")
        functools.update_wrapper(self, func)
        self.func = func
        self._tree = None

    @property
    def __globals__(self):
        return self.func.__globals__

    @property
    def name(self):
        return self.func.__name__

    def __call__(self, *args, **kwargs):
        if _arg_mode(self.name, args) == "te":
            if kwargs:
                raise HybridScriptError(f"hybrid script {self.name!r}: pass its arguments by position")
            return make_op(self._parser(to_parser_args(self._funcdef(), args)))
        return emulate(self.func, args, kwargs)

    def __repr__(self):
        return f"<hybrid script {self.name}>"

    # --------------------------------------------------------------- parsing
    def _funcdef(self):
        if self._tree is None:
            src = Source.of_function(self.func)
            try:
                tree = ast.parse(src.text)
            except SyntaxError as err:  # pragma: no cover - the function compiled once already
                raise HybridScriptError(f"hybrid script {self.name!r}: cannot parse its source ({err})") from None
            fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
            if fdef is None:
                raise HybridScriptError(f"hybrid script {self.name!r}: its source holds no function definition")
            self._tree = (src, fdef)
        return self._tree[1]

    def _env(self, name):
        code = self.func.__code__
        if name in code.co_freevars and self.func.__closure__:
            cell = self.func.__closure__[code.co_freevars.index(name)]
            try:
                return True, cell.cell_contents
            except ValueError:
                return False, None
        g = self.func.__globals__
        if name in g:
            return True, g[name]
        return False, None

    def _parser(self, args):
        fdef = self._funcdef()
        return Parser(self._tree[0], fdef, args, self._env)


def script(pyfunc):
    """Decorate a Python function as a hybrid script (``@te.hybrid.script``).

    Returns
    -------
    HybridFunction
        Called with te tensors (and constants, te variables, tuples of tensors) it
        returns the output tensor(s) of a :class:`HybridOp`; called with numpy arrays
        (and numbers) it runs the function as Python and returns its result.

    Raises
    ------
    HybridScriptError
        When parsing meets Python a hybrid script cannot have, or the arguments mix
        tensors and numpy arrays; the message names the script, file and line.
    """
    return HybridFunction(pyfunc)


# ---------------------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------------------

def _kind(v):
    """"te", "np", "any" (a number or string, fine both ways) or None (unsupported)."""
    if isinstance(v, (Tensor, E.PrimExpr)):
        return "te"
    if isinstance(v, (numpy.ndarray, numpy.generic)):
        return "np"
    if isinstance(v, (bool, int, float, str)):
        return "any"
    if isinstance(v, (tuple, list)):
        kinds = {_kind(x) for x in v}
        if None in kinds:
            return None
        if "te" in kinds and "np" in kinds:
            return None
        return "te" if "te" in kinds else "np" if "np" in kinds else "any"
    return None


def _arg_mode(name, args):
    kinds = [_kind(a) for a in args]
    for k, (a, kind) in enumerate(zip(args, kinds)):
        if kind is None:
            what = type(a).__name__
            hint = " (a tecc array: pass a.numpy() to run in Python)" if hasattr(a, "numpy") else ""
            raise HybridScriptError(
                f"hybrid script {name!r}: argument {k} is a {what}{hint}; call the script with te tensors, "
                f"te variables and constants to build it, or with numpy arrays and numbers to run it in Python")
    if "te" in kinds and "np" in kinds:
        k = kinds.index("np")
        raise HybridScriptError(
            f"hybrid script {name!r}: argument {k} is a numpy array but argument {kinds.index('te')} is a te "
            f"tensor/expression; use tensors (te.placeholder) for all array arguments to build the script, or "
            f"numpy arrays for all to run it in Python")
    return "te" if "te" in kinds else "np"


def to_parser_args(fdef, args):
    """The arguments of a te-mode call as parser values: tensors become declared
    input buffers (one per distinct tensor), numbers constants."""
    names = [p.arg for p in fdef.args.args]
    buffers = {}

    def conv(v, name):
        if isinstance(v, Tensor):
            buf = buffers.get(v)
            if buf is None:
                buf = buffers[v] = S.decl_buffer(v.shape, v.dtype, name=name)
            return BufRef(buf, "input", name, tensor=v)
        if isinstance(v, (tuple, list)):
            return tuple(conv(x, x.name if isinstance(x, Tensor) else name) for x in v)
        if isinstance(v, E.PrimExpr) or isinstance(v, str):
            return v
        if isinstance(v, bool):
            return T.const(v, "bool")
        if isinstance(v, int):
            return T.const(v)
        if isinstance(v, float):
            return T.const(v, "float32")
        raise HybridScriptError(f"argument {name!r}: cannot pass a {type(v).__name__} to a hybrid script")

    return [conv(a, names[k] if k < len(names) else f"arg{k}") for k, a in enumerate(args)]


def make_op(parser):
    """Parse and wrap the statement in a :class:`HybridOp`; its output tensor(s)."""
    body = parser.parse()
    inputs, in_bufs = [], []
    for v in parser.args:
        _collect_inputs(v, inputs, in_bufs)
    outs = [r.buffer for r in parser.returned]
    op = HybridOp(parser.src.func_name, "HybridOp", None, inputs, in_bufs, outs, body)
    tensors = [op.output(i) for i in range(op.num_outputs)]
    return tensors[0] if len(tensors) == 1 else tensors


def _collect_inputs(v, inputs, bufs):
    if isinstance(v, BufRef) and v.tensor is not None:
        if v.tensor not in inputs:
            inputs.append(v.tensor)
            bufs.append(v.buffer)
    elif isinstance(v, tuple):
        for x in v:
            _collect_inputs(x, inputs, bufs)
