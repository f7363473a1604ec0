"""The CPU backend: print lowered PrimFuncs as C, compile them with the system C
compiler and load them as a :class:`~tecc.runtime.CModule`.

``gpu_emu/`` is the other half of this folder: CUDA kernels run on the CPU with CUDA
semantics (and checked there), for machines without a GPU.
"""
from __future__ import annotations

from ..errors import CompileError, TargetError
from ..runtime.module import CModule
from ..runtime.signature import ArgSpec, Signature
from ..target import Target
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.analysis import imported_code, written_params
from ..tir.printer import to_text
from .check import CPUChecker
from .codegen_c import CodeGenC, generate_c
from .compiler import compile_asm, compile_c, object_compiler

__all__ = ["CodeGenC", "generate_c", "compile_asm", "compile_c", "build_c", "signature_of"]


def signature_of(func: S.PrimFunc, written=None) -> Signature:
    """The :class:`~tecc.runtime.Signature` of ``func``'s parameters.

    Buffer shapes keep ints and the names of scalar parameters (symbolic dims); each
    scalar parameter records the first (parameter index, dim) whose extent it is, so
    a caller may leave it out.  ``written`` (parameter indices) defaults to the
    buffers ``func`` stores to.
    """
    written = written_params(func) if written is None else set(written)
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
    bindings = {}
    specs = {}
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
        specs[i] = ArgSpec("buffer", buf.name, buf.dtype, tuple(shape), tuple(text), i in written)
    args = []
    for i, p in enumerate(func.params):
        if i in specs:
            args.append(specs[i])
        else:
            args.append(ArgSpec("scalar", scalar_names[p], p.dtype, binding=bindings.get(p)))
    return Signature(func.name, tuple(args))


def build_c(mod, target="llvm") -> CModule:
    """Compile lowered functions for the CPU into one library.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        Functions after the CPU pipeline (flattened, register slots promoted); each
        becomes an exported C function named by ``attrs["global_symbol"]``.
    target : Target or str
        A CPU target (``"llvm"``, ``"c"``, with optional ``-mcpu``/``-mattr``).

    Returns
    -------
    tecc.runtime.CModule
        Its first function is the entry (``mod(*args)``); ``mod[name]`` is any.
    """
    target = Target.canon(target)
    if "cpu" not in target.keys:
        raise TargetError(f"build_c compiles for CPU targets ('llvm', 'c'), got {str(target)!r}")
    funcs = list(mod.functions.values()) if isinstance(mod, S.IRModule) else [mod]
    names = [f.name for f in funcs]
    if len(set(names)) != len(names):
        raise CompileError(f"two functions share a name in {names}; give each a different name")
    gen = CodeGenC()
    for func in funcs:
        gen.add_function(func)
    source = gen.finish()
    imports = [item for f in funcs for item in imported_code(f.body)]
    lib_path = compile_c(source, target, funcs[0].name, imports=list(dict.fromkeys(imports)))
    signatures = {f.name: signature_of(f) for f in funcs}
    made = []

    def asm() -> str:  # get_source("asm"): compiled on the first request
        if not made:
            made.append(compile_asm(source, target, funcs[0].name))
        return made[0]

    lib = CModule(lib_path, signatures, source, str(target), CPUChecker({f.name: f for f in funcs}), asm=asm)
    lib.object_compiler = object_compiler(source, target, funcs[0].name)  # save("x.o")
    return lib
