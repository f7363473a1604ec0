"""TVM's ``tvm.contrib.clang``: code for the ``import_llvm`` pragma.

``create_llvm(code)`` gives what ``s[C].pragma(axis, "import_llvm", ...)`` links into
a CPU module: LLVM IR made by clang where clang is installed (as in TVM), and
otherwise the C/C++ source itself.  tecc's CPU backend is C compiled by the system C
compiler, which compiles that source beside the module (C++ when it has ``extern
"C"``, as TVM's tensorize tutorial writes it) and links it in; LLVM IR is compiled
by clang.  Either way the module calls the same functions.
"""
from __future__ import annotations

import os
import subprocess

from ..cpu_fallback.compiler import find_clang
from ..errors import CompileError, TeccError


def _sources(inputs) -> list:
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    out = []
    for item in items:
        if isinstance(item, os.PathLike) or (isinstance(item, str) and "\n" not in item and os.path.isfile(item)):
            with open(item, encoding="utf-8") as f:
                out.append(f.read())
        elif isinstance(item, str):
            out.append(item)
        else:
            raise TeccError(f"clang.create_llvm: inputs are source code or file names, got {type(item).__name__}")
    return out


def create_llvm(inputs, output=None, options=None, cc=None) -> str:
    """Code for the ``import_llvm`` pragma from C/C++ source (TVM's signature).

    Parameters
    ----------
    inputs : str or list of str
        Source code, or names of source files.
    output : str, optional
        Where the LLVM IR is written when clang made it.
    options : list of str, optional
        More clang options.
    cc : str, optional
        The clang command (default: ``$TECC_CLANG`` or the first clang on the PATH).

    Returns
    -------
    str
        LLVM IR text when clang is installed; otherwise the source, which tecc
        compiles with the system C/C++ compiler when the module is built.
    """
    code = "\n".join(_sources(inputs))
    try:
        clang = cc or find_clang()
    except CompileError:
        return code
    lang = "c++" if 'extern "C"' in code else "c"
    cmd = [clang, "-S", "-emit-llvm", "-O2", "-x", lang, "-", "-o", "-"] + list(options or [])
    proc = subprocess.run(cmd, input=code, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(f"clang.create_llvm: clang failed:\n{proc.stderr.strip()}\ncommand: {' '.join(cmd)}")
    if output is not None:
        with open(output, "w", encoding="utf-8") as f:
            f.write(proc.stdout)
    return proc.stdout


__all__ = ["create_llvm"]
