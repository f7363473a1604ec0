"""Compile C source to a shared library with the system C compiler, with a cache.

Libraries live in the ``c`` namespace of the one compile cache
(:class:`tecc.runtime.cache.DiskCache`), keyed by the sha256 of the source, the full
command line and the first line of ``$CC --version``; a library is compiled to a
temporary file in the cache directory and moved into place with ``os.replace``, so
processes compiling the same source at once never see a half-written file.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile

from .. import config
from ..errors import CompileError
from ..runtime.cache import DiskCache, atomic_write, cache_key
from ..target import Target

#: flags of every compile; ``-march``/``-m...`` from the target and $TECC_CFLAGS follow.
#: GNU C (not ISO C) keeps GCC's -ffp-contract=fast, so ``a*b + c`` becomes one FMA.
BASE_FLAGS = ("-O3", "-std=gnu11", "-shared", "-fPIC", "-fopenmp", "-Wno-psabi")
LINK_FLAGS = ("-lm",)
#: flags of linking objects into a shared library (:func:`link`): the OpenMP runtime the
#: compiled code calls, position independence, and :data:`LINK_FLAGS` after the inputs
SHARED_LINK_FLAGS = ("-shared", "-fPIC", "-fopenmp")

_version_cache: dict = {}
#: compiled libraries (``<name>_<key>.so``) and their sources
cache = DiskCache("c")


def compiler_version(cc: list) -> str:
    """First line of ``cc --version`` (cached per compiler command)."""
    key = tuple(cc)
    if key not in _version_cache:
        try:
            proc = subprocess.run(list(cc) + ["--version"], capture_output=True, text=True, timeout=60)
        except (FileNotFoundError, PermissionError) as err:
            raise CompileError(
                f"C compiler {' '.join(cc)!r} not found ({err}); install gcc or set the CC "
                "environment variable to a C compiler") from None
        lines = (proc.stdout or proc.stderr).strip().splitlines()
        _version_cache[key] = lines[0] if lines else "unknown"
    return _version_cache[key]


def compile_flags(target, optimize: int = 3) -> list:
    """The compiler flags used for ``target`` (without input and output files), at
    optimization level ``optimize`` (``-O3`` unless told)."""
    target = Target.canon(target)
    base = [f"-O{optimize}" if f == "-O3" else f for f in BASE_FLAGS]
    return base + target.cpu_cflags() + config.extra_cflags()


def compile_c(source: str, target="c", name: str = "lib", optimize: int = 3, imports=()) -> str:
    """Compile ``source`` into a shared library and return its path.

    Parameters
    ----------
    source : str
        A complete C translation unit.
    target : Target or str
        A CPU target; ``-mcpu``/``-mattr`` become ``-march``/``-m`` flags.
    name : str
        A readable prefix of the library's file name.
    optimize : int
        The ``-O`` level (part of the cache key).
    imports : sequence of (kind, code)
        More code linked into the library (the ``import_c`` / ``import_llvm``
        pragmas, :func:`tecc.tir.analysis.imported_code`): see :func:`import_language`.

    Returns
    -------
    str
        Path of the ``.so`` in the cache directory (reused when present).

    Raises
    ------
    CompileError
        With the compiler's error lines and the offending source lines.
    """
    cc = _c_compiler()
    flags = compile_flags(target, optimize)
    imports = [(import_language(kind, code), code) for kind, code in imports]
    key = cache_key(source, " ".join(cc), " ".join(flags), compiler_version(cc), *(f"{k}:{c}" for k, c in imports))
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)[:48] or "lib"
    lib_path = cache.path(f"{safe}_{key[:32]}", "so")
    if lib_path.exists():
        return str(lib_path)
    src_path = cache.path(f"{safe}_{key[:32]}", "c")
    atomic_write(src_path, source.encode("utf-8"))
    extra = _imported_inputs(imports, f"{safe}_{key[:32]}", flags)
    return _compile_into(lib_path, source, lambda tmp: list(cc) + flags + ["-o", tmp, str(src_path)] + extra
                         + list(LINK_FLAGS))


def _compile_into(path, source: str, command) -> str:
    """Run ``command(tmp)`` (a compiler writing ``tmp``, a temporary file beside
    ``path``) and move its output to ``path``; nothing is left behind on failure."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    cmd = command(tmp)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(describe_failure(source, proc.stderr or proc.stdout, cmd))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(path)


#: what the first lines of LLVM IR text look like (``clang -S -emit-llvm``'s output)
_LLVM_IR = re.compile(r"^\s*(; ModuleID|source_filename\s*=|target (datalayout|triple)\s*=|define\s)", re.M)


def import_language(kind: str, code: str) -> str:
    """The language of imported ``code``: ``"llvm"`` (LLVM IR text, which needs
    clang), ``"c++"`` (it has ``extern "C"``, as TVM's tutorials write it) or ``"c"``.
    An ``import_llvm`` pragma's value may be C or C++ source: what
    ``tecc.contrib.clang.create_llvm`` returns where no clang is installed."""
    if kind == "llvm" and _LLVM_IR.search(code):
        return "llvm"
    return "c++" if 'extern "C"' in code else "c"


def _imported_inputs(imports, stem: str, flags) -> list:
    """The compiler arguments that add ``imports`` to a library build: C and C++
    files (with ``-x``; C++ with its runtime), LLVM IR compiled to objects by clang.

    As TVM links imported modules (the later one's definitions override), a symbol
    several imports define is taken from the last: the linker keeps the first
    definition it meets, so the imports go to it last-first."""
    args, cxx = [], False
    for k, (lang, code) in reversed(list(enumerate(imports))):
        suffix = {"c": "c", "c++": "cc", "llvm": "ll"}[lang]
        path = cache.path(f"{stem}_import{k}", suffix)
        atomic_write(path, code.encode("utf-8"))
        if lang == "llvm":
            clang = find_clang()
            obj = cache.path(f"{stem}_import{k}", "o")
            cmd = [clang, "-c", "-fPIC", "-O3", "-x", "ir", str(path), "-o", str(obj)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise CompileError(f"clang could not compile the LLVM IR of an import_llvm pragma:\n"
                                   f"{(proc.stderr or proc.stdout).strip()}\ncommand: {shlex.join(cmd)}")
            args += ["-x", "none", str(obj)]
        else:
            cxx = cxx or lang == "c++"
            args += ["-x", lang, str(path)]
    if args:
        args += ["-x", "none"]
    if len(imports) > 1:
        args += ["-Wl,--allow-multiple-definition"]
    if cxx:
        args += ["-lstdc++"]
    return args


def find_clang() -> str:
    """The clang command (``$TECC_CLANG`` or the first ``clang`` / ``clang-N`` on the
    PATH), for LLVM IR given to an ``import_llvm`` pragma.

    Raises
    ------
    CompileError
        When there is none.
    """
    import shutil  # noqa: PLC0415

    wanted = config.CLANG.read().strip()
    names = [wanted] if wanted else ["clang"] + [f"clang-{v}" for v in range(25, 10, -1)]
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    raise CompileError("an import_llvm pragma holds LLVM IR, which tecc's C backend compiles with clang, and no "
                       "clang was found (set TECC_CLANG or install clang); or give the pragma C/C++ source "
                       "(s[C].pragma(axis, 'import_c', code))")


def _c_compiler():
    cc = config.c_compiler()
    if not cc:
        raise CompileError("the CC environment variable is empty; set it to a C compiler such as gcc")
    return cc


def compile_asm(source: str, target="c", name: str = "lib") -> str:
    """The assembly the C compiler makes of ``source`` with the flags of ``target``
    (``-S``; cached like libraries).

    Raises
    ------
    CompileError
        With the compiler's error lines and the offending source lines.
    """
    cc = _c_compiler()
    flags = [f for f in compile_flags(target) if f not in ("-shared", "-fPIC")] + ["-S"]
    key = cache_key(source, " ".join(cc), " ".join(flags), compiler_version(cc), "asm")
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)[:48] or "lib"
    stem = f"{safe}_{key[:32]}"
    text = cache.lookup(stem, "s")
    if text is not None:
        return text.decode("utf-8", "replace")
    src_path = cache.path(stem, "c")
    atomic_write(src_path, source.encode("utf-8"))
    fd, tmp = tempfile.mkstemp(prefix=stem + ".", suffix=".s", dir=src_path.parent)
    os.close(fd)
    cmd = list(cc) + flags + ["-o", tmp, str(src_path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(describe_failure(source, proc.stderr or proc.stdout, cmd))
        with open(tmp, "rb") as f:
            data = f.read()
    finally:
        os.unlink(tmp)
    cache.store(stem, data, "s")
    return data.decode("utf-8", "replace")


def compile_object(source: str, target="c", name: str = "lib") -> str:
    """Compile ``source`` into a position-independent object file (``-c``) with the
    flags of ``target`` and return its path (cached like libraries).

    Link it with :func:`link` (``tecc.contrib.cc.create_shared``), which adds the
    OpenMP runtime the compiled code needs.

    Raises
    ------
    CompileError
        With the compiler's error lines and the offending source lines.
    """
    cc = _c_compiler()
    flags = [f for f in compile_flags(target) if f != "-shared"] + ["-c"]
    key = cache_key(source, " ".join(cc), " ".join(flags), compiler_version(cc), "object")
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)[:48] or "lib"
    stem = f"{safe}_{key[:32]}"
    obj_path = cache.path(stem, "o")
    if obj_path.exists():
        return str(obj_path)
    src_path = cache.path(stem, "c")
    atomic_write(src_path, source.encode("utf-8"))
    return _compile_into(obj_path, source, lambda tmp: list(cc) + flags + ["-o", tmp, str(src_path)])


def object_compiler(source, target="c", name: str = "lib"):
    """The object-file step a built module's ``save`` calls: a function
    ``compile(extra: str) -> path`` that compiles ``source`` followed by ``extra``
    (the module's metadata, as C) with :func:`compile_object`.

    ``source`` is the module's C source, or a function of no arguments returning it
    (made on first use: a CUDA module's emulation source).
    """
    def compile_with(extra: str) -> str:
        text = source() if callable(source) else source
        return compile_object(text + extra, target, name)

    return compile_with


def link(output, objects, options=None, cc=None, shared: bool = True) -> str:
    """Link object files into a shared library (or, with ``shared`` False, an
    executable) at ``output`` with the system C compiler, and return ``output``.

    The link runs into a temporary file beside ``output``, renamed when it
    succeeded, so a failed link leaves no file behind.

    Parameters
    ----------
    output : str
        The file to write (its folder must exist).
    objects : str or list of str
        Object files (``.o``), archives, or C sources, in link order.
    options : list of str, optional
        Extra compiler or linker options, after the inputs (``-L``/``-l``...).
    cc : str or list of str, optional
        The compiler command; the ``CC`` environment variable (else ``cc``) by default.
    shared : bool
        A shared library (:data:`SHARED_LINK_FLAGS`) or an executable (``-fopenmp``).

    Raises
    ------
    CompileError
        With the command and the compiler's message, when an input is missing or
        the link fails.
    """
    what = "create_shared" if shared else "create_executable"
    output = os.fspath(output)
    objects = [os.fspath(objects)] if isinstance(objects, (str, os.PathLike)) else [os.fspath(o) for o in objects]
    if not objects:
        raise CompileError(f"{what}({output!r}): no object files to link; pass a list such as ['myadd.o']")
    missing = [o for o in objects if not os.path.exists(o)]
    if missing:
        raise CompileError(f"{what}({output!r}): no file {missing[0]!r}; write it first (module.save('x.o'))")
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory):
        raise CompileError(f"{what}: cannot write {output!r}: the folder {directory!r} does not exist; "
                           "create it first (os.makedirs)")
    if cc is None:
        cmd = _c_compiler()
    else:
        cmd = shlex.split(cc) if isinstance(cc, str) else list(cc)
    if isinstance(options, str):
        options = shlex.split(options)
    flags = list(SHARED_LINK_FLAGS) if shared else ["-fopenmp"]
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(output) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    full = cmd + flags + ["-o", tmp] + objects + list(options or ()) + list(LINK_FLAGS)
    try:
        try:
            proc = subprocess.run(full, capture_output=True, text=True)
        except (FileNotFoundError, PermissionError) as err:
            raise CompileError(f"{what}: cannot run the C compiler {cmd[0]!r} ({err}); install gcc or pass "
                               "cc='gcc' (or set the CC environment variable)") from None
        if proc.returncode != 0:
            log = (proc.stderr or proc.stdout).strip()
            hint = ""
            if "tecc_module_metadata" in log or "tecc_get_last_error" in log:
                hint = ("\neach object saved from a tecc module carries that module's metadata and runtime "
                        "helpers: link one tecc module per shared library")
            raise CompileError(f"{what}({output!r}) failed:\n  " + "\n  ".join(log.splitlines()[:20]) + hint
                               + "\ncommand: " + " ".join(full))
        os.chmod(tmp, 0o755)  # mkstemp made it private; a linker's output is executable
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return output


_DIAG_RE = re.compile(r":(\d+):(?:(\d+):)?\s*(fatal error|error)")
#: GCC's and Clang's words for a second declaration of a name the headers declared
_CLASH_RE = re.compile(r"(?:conflicting types for|redefinition of|redeclared as different kind of symbol)")
_QUOTED_RE = re.compile(r"[\u2018'`\"](\w+)[\u2019'\"]")


def describe_failure(source: str, log: str, cmd=None) -> str:
    """The message of a failed compile: where an exported function's name is one
    the C library headers already declare (a kernel built with ``name="exp"``), that
    and the fix in one line; otherwise :func:`format_compile_error`."""
    for line in log.splitlines():
        if "error" not in line or not _CLASH_RE.search(line):
            continue
        for name in _QUOTED_RE.findall(line):
            if re.search(r'visibility\("default"\)\)\)[^;{]*\b' + re.escape(name) + r"\s*\(", source):
                headers = ", ".join(re.findall(r"^#include <([^>]+)>", source, re.M)) or "its headers"
                return (f"function name {name!r} is already declared by the C library ({headers}), which the "
                        f"generated C includes; pass another name to build, e.g. name='{name}_kernel'")
    return format_compile_error(source, log, cmd)


def source_excerpts(source: str, log_lines, diag_re, context: int = 3, max_errors: int = 5) -> list:
    """For each line of a compiler log that ``diag_re`` recognises as an error (its
    group 1 is the line number), the offending source line with ``context`` lines
    around it, marked with ``>``; at most ``max_errors`` excerpts."""
    src_lines = source.splitlines()
    out, seen = [], []
    for ln in log_lines:
        m = diag_re.search(ln)
        if m is None:
            continue
        lineno = int(m.group(1))
        if lineno in seen or not (1 <= lineno <= len(src_lines)):
            continue
        seen.append(lineno)
        if len(seen) > max_errors:
            break
        out.append(f"source around line {lineno}:")
        lo, hi = max(1, lineno - context), min(len(src_lines), lineno + context)
        for k in range(lo, hi + 1):
            mark = ">" if k == lineno else " "
            out.append(f"  {mark}{k:5d} | {src_lines[k - 1]}")
    return out


def format_compile_error(source: str, log: str, cmd=None, context: int = 3,
                         max_errors: int = 5) -> str:
    """A readable compile error: the compiler's error lines, then each offending
    source line with ``context`` lines around it (marked with ``>``)."""
    log_lines = [ln for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in log_lines if "error" in ln]
    out = ["C compilation failed:"]
    out += ["  " + ln for ln in (errors or log_lines)[:20]]
    out += source_excerpts(source, log_lines, _DIAG_RE, context, max_errors)
    if cmd is not None:
        out.append("command: " + " ".join(cmd))
    return "\n".join(out)
