"""The CPU backend: print a flattened PrimFunc as C, compile it with the system C
compiler and load it as a :class:`~tecc.runtime.Module`."""
from __future__ import annotations

from ..errors import TargetError
from ..target import Target
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import post_order_visit
from ..tir.printer import to_text
from .codegen_c import CodeGenC, generate_c
from .compiler import compile_c, load_library

__all__ = ["CodeGenC", "generate_c", "compile_c", "load_library", "build_c", "arg_specs_of"]


def arg_specs_of(func: S.PrimFunc) -> list:
    """One :class:`~tecc.runtime.ArgSpec` per parameter of ``func``.

    Buffer shapes keep ints and the names of scalar parameters (symbolic dims); each
    scalar parameter records the first (parameter index, dim) whose extent it is.
    """
    from ..runtime.module import ArgSpec

    scalar_names = {}
    taken = set()
    for p in func.params:
        if p not in func.buffer_map:
            name = p.name
            k = 1
            while name in taken:
                name = f"{p.name}_{k}"
                k += 1
            taken.add(name)
            scalar_names[p] = name
    written = set()

    def note(node):
        if isinstance(node, S.BufferStore):
            written.add(node.buffer.data)

    post_order_visit(func.body, note)
    specs = []
    bindings = {}
    for i, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        shape, text = [], []
        for d, extent in enumerate(buf.shape):
            text.append(to_text(extent))
            if isinstance(extent, E.IntImm):
                shape.append(int(extent.value))
            elif isinstance(extent, E.Var) and extent in scalar_names:
                shape.append(scalar_names[extent])
                bindings.setdefault(extent, (i, d))
            else:
                shape.append(None)
        specs.append((i, ArgSpec("buffer", buf.name, buf.dtype, tuple(shape), tuple(text),
                                 buf.data in written or p in written)))
    out = []
    by_index = dict(specs)
    for i, p in enumerate(func.params):
        if i in by_index:
            out.append(by_index[i])
        else:
            out.append(ArgSpec("scalar", scalar_names[p], p.dtype, binding=bindings.get(p)))
    return out


def build_c(func: S.PrimFunc, target="llvm"):
    """Compile a flattened PrimFunc for the CPU.

    Parameters
    ----------
    func : PrimFunc
        Flattened (1-D buffers) per the IR contract; ``attrs["global_symbol"]`` names it.
    target : Target or str
        A CPU target (``"llvm"``, ``"c"``, with optional ``-mcpu``/``-mattr``).

    Returns
    -------
    tecc.runtime.Module
    """
    from ..runtime.module import Module

    target = Target.canon(target)
    if isinstance(func, S.IRModule):
        (func,) = func.functions.values()
    if "cpu" not in target.keys:
        raise TargetError(f"build_c compiles for CPU targets ('llvm', 'c'), got {str(target)!r}")
    source = CodeGenC().generate(func)
    lib_path = compile_c(source, target, func.name)
    return Module(lib_path, func.name, arg_specs_of(func), source, str(target))
