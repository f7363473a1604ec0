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


def compile_c(source: str, target="c", name: str = "lib", optimize: int = 3) -> str:
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
    key = cache_key(source, " ".join(cc), " ".join(flags), compiler_version(cc))
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)[:48] or "lib"
    lib_path = cache.path(f"{safe}_{key[:32]}", "so")
    if lib_path.exists():
        return str(lib_path)
    src_path = cache.path(f"{safe}_{key[:32]}", "c")
    atomic_write(src_path, source.encode("utf-8"))
    fd, tmp = tempfile.mkstemp(prefix=lib_path.name + ".", suffix=".tmp", dir=lib_path.parent)
    os.close(fd)
    cmd = list(cc) + flags + ["-o", tmp, str(src_path)] + list(LINK_FLAGS)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(describe_failure(source, proc.stderr or proc.stdout, cmd))
        os.replace(tmp, lib_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(lib_path)


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
